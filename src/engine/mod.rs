//! The autoscaling engine: pure functions of a snapshot (no I/O), shared by the gRPC expander, the
//! standalone loop and the simulator. `predicates` are the kube-scheduler's filters, `estimator` the
//! binpacking of pending pods onto new nodes of a template, `expander` the choice among scale-up options.

pub mod autoscaler;
pub mod estimator;
pub mod expander;
pub mod predicates;

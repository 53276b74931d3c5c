//! The autoscaling engine: pure functions of a snapshot (no I/O), shared by the gRPC expander, the
//! standalone loop and the simulator.

pub mod expander;

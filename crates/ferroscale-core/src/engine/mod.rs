//! The autoscaling engine: pure functions of a snapshot (no I/O), shared by the gRPC expander, the
//! standalone loop and the simulator. `predicates` are the kube-scheduler's filters, `estimator` the
//! binpacking of pending pods onto new nodes of a template, `expander` the choice among scale-up options,
//! `similar` which groups share one, `autoscaler` one loop (with `scale_up`, `scale_down` and `cleanup`),
//! `utilization`, `drainability` and `limits` upstream's scale-down rules, `reasons` why it decided so,
//! `readiness` what a ready node is (upstream's `GetNodeReadiness`, defined once), `health` upstream's
//! cluster and group health, `status` upstream's status (the conditions of
//! the cluster and its groups), `upstream` upstream's metric label values for the reasons.

pub mod autoscaler;
mod cleanup;
pub mod consolidate;
mod context;
pub mod decisions;
mod disruption;
pub mod drainability;
pub mod equivalence;
pub mod estimator;
pub mod expander;
pub mod health;
pub mod intents;
pub mod ledger;
pub mod limits;
pub mod memory;
mod methods;
mod min_size;
pub mod placement;
pub mod predicates;
pub mod profile;
pub mod readiness;
pub mod reasons;
mod replace;
mod scale_down;
mod scale_up;
pub mod settings;
pub mod similar;
mod soft_taints;
pub mod status;
pub mod taints;
pub mod templates;
pub mod topology;
pub mod upstream;
pub mod utilization;

pub use autoscaler::{run_once, run_once_kept};
pub use context::{template_node, World};
pub use decisions::{
    CancelCapacity, ConsolidationAction, ConsolidationPlan, Decisions, DeleteInstance, Direction,
    Disruption, NewNodes, NoticeDrain, Replacement, ScaleDown, ScaleUp,
};
pub use memory::Memory;
pub use placement::Placement;
pub use settings::Settings;
pub use templates::GroupTemplate;

//! The Kubernetes side: turning Kubernetes objects into the model (`objects`), reading them from YAML
//! as `kubectl get -o yaml` writes them (`documents`), and what `ferroscale run` does live: the watches
//! (`watch`), taints and evictions (`drain`), the status ConfigMap (`status`) and the Lease (`lease`).

pub mod documents;
pub mod drain;
pub mod lease;
pub mod objects;
pub mod status;
pub mod watch;

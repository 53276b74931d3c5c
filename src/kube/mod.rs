//! The Kubernetes side: turning Kubernetes objects into the model (`objects`) and reading them from
//! YAML documents as `kubectl get -o yaml` writes them (`documents`), for the simulator; the live
//! watchers, evictions, events and leases of `ferroscale run` come next.

pub mod documents;
pub mod objects;

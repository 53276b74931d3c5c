//! The dump reader's lean pods and nodes ([`super::lean`]), lent to `run`'s watches
//! (`k8s::watch::converting`), so a watched pod or node is read and turned into the model exactly as a
//! dump's is.

use k8s_openapi::api::core::v1 as core;
use serde::Deserialize;

use super::lean;

/// A pod read with only the fields the model is made of.
#[derive(Deserialize)]
#[serde(transparent)]
pub struct LeanPod(lean::Pod);

impl LeanPod {
    /// The sparse Kubernetes pod the model is converted from, as the dump reader makes it.
    pub fn into_core(self) -> core::Pod {
        self.0.into_core()
    }
}

/// A node read with only the fields the model is made of.
#[derive(Deserialize)]
#[serde(transparent)]
pub struct LeanNode(lean::Node);

impl LeanNode {
    /// The sparse Kubernetes node the model is converted from, as the dump reader makes it.
    pub fn into_core(self) -> core::Node {
        self.0.into_core()
    }
}

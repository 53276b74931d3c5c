//! The descheduler's `DefaultEvictor`: which pods a strategy may propose at all (`filter`), with its
//! arguments as a policy writes them.

use std::fmt;

use serde::Deserialize;

use super::args::{PriorityThreshold, Selector};
use super::View;
use crate::model::workload::Pod;

/// `DefaultEvictor`'s arguments (`pluginConfig` entry `DefaultEvictor`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct EvictorArgs {
    pub node_selector: String,
    pub label_selector: Option<Selector>,
    pub namespace_label_selector: Option<Selector>,
    pub priority_threshold: Option<PriorityThreshold>,
    pub node_fit: bool,
    pub min_replicas: u32,
    /// A Go duration (`5m`).
    pub min_pod_age: Option<String>,
    pub evict_local_storage_pods: bool,
    pub evict_daemon_set_pods: bool,
    pub evict_system_critical_pods: bool,
    pub ignore_pvc_pods: bool,
    pub ignore_pods_without_pdb: bool,
    pub evict_failed_bare_pods: bool,
}

/// Why the evictor keeps a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kept {
    /// A static pod's mirror.
    Mirror,
    /// Owned by a DaemonSet.
    DaemonSet,
    /// Being deleted already.
    Terminating,
    /// Annotated do-not-disrupt.
    DoNotDisrupt,
}

impl fmt::Display for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kept::Mirror => f.write_str("a static pod"),
            Kept::DaemonSet => f.write_str("a DaemonSet pod"),
            Kept::Terminating => f.write_str("already terminating"),
            Kept::DoNotDisrupt => f.write_str("annotated do-not-disrupt"),
        }
    }
}

/// A profile's evictor for one cycle.
pub struct Evictor<'a> {
    pub args: &'a EvictorArgs,
    pub view: &'a View<'a>,
}

impl<'a> Evictor<'a> {
    pub fn new(args: &'a EvictorArgs, view: &'a View<'a>) -> Self {
        Evictor { args, view }
    }

    /// Whether a strategy may propose the pod (the descheduler's `Filter`), else why not.
    pub fn filter(&self, pod: &Pod) -> Result<(), Kept> {
        if pod.meta.do_not_disrupt {
            return Err(Kept::DoNotDisrupt);
        }
        if pod.meta.mirror {
            return Err(Kept::Mirror);
        }
        if pod.meta.deleted.is_some() {
            return Err(Kept::Terminating);
        }
        if pod.meta.controller.as_deref() == Some(crate::model::workload::DAEMON_SET)
            && !self.args.evict_daemon_set_pods
        {
            return Err(Kept::DaemonSet);
        }
        Ok(())
    }
}

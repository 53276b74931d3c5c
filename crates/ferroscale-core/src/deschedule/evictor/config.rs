//! `DefaultEvictor`'s arguments as the descheduler's `DefaultEvictorArgs` (v1alpha2) writes them, their
//! checks (its `ValidateDefaultEvictorArgs`) and the protections they add up to (its
//! `getEffectivePodProtections`: `podProtections`, or the deprecated booleans when it is not used).

use serde::Deserialize;

use crate::deschedule::args::{ArgsError, PriorityThreshold, Problems, Selector};
use crate::deschedule::validate;
use crate::model::duration::secs;
use crate::model::parse_go_duration;
use crate::model::workload::LabelSelector;

/// The priority from which a pod is system-critical (the descheduler's `SystemCriticalPriority`).
pub const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// `DefaultEvictor`'s arguments (`pluginConfig` entry `DefaultEvictor`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct EvictorArgs {
    /// Which nodes `nodeFit` may place a pod on (a label selector string).
    pub node_selector: String,
    pub label_selector: Option<Selector>,
    pub namespace_label_selector: Option<Selector>,
    pub priority_threshold: Option<PriorityThreshold>,
    pub node_fit: bool,
    pub min_replicas: u32,
    /// A Go duration (`5m`).
    pub min_pod_age: Option<String>,
    pub no_eviction_policy: Option<NoEvictionPolicy>,
    pub pod_protections: PodProtections,
    /// Deprecated: `podProtections.defaultDisabled: [PodsWithLocalStorage]`.
    pub evict_local_storage_pods: bool,
    /// Deprecated: `podProtections.defaultDisabled: [DaemonSetPods]`.
    pub evict_daemon_set_pods: bool,
    /// Deprecated: `podProtections.defaultDisabled: [SystemCriticalPods]`.
    pub evict_system_critical_pods: bool,
    /// Deprecated: `podProtections.extraEnabled: [PodsWithPVC]`.
    pub ignore_pvc_pods: bool,
    /// Deprecated: `podProtections.extraEnabled: [PodsWithoutPDB]`.
    #[serde(rename = "ignorePodsWithoutPDB")]
    pub ignore_pods_without_pdb: bool,
    /// Deprecated: `podProtections.defaultDisabled: [FailedBarePods]`.
    pub evict_failed_bare_pods: bool,
}

/// `noEvictionPolicy`: how the `descheduler.alpha.kubernetes.io/prefer-no-eviction` annotation reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum NoEvictionPolicy {
    /// A preference the evictor ignores (the descheduler's default).
    Preferred,
    /// Every annotated pod is kept.
    Mandatory,
}

/// `podProtections`: default protections turned off and extra ones turned on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PodProtections {
    pub extra_enabled: Vec<Protection>,
    pub default_disabled: Vec<Protection>,
    pub config: Option<ProtectionsConfig>,
}

/// `podProtections.config`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProtectionsConfig {
    #[serde(rename = "PodsWithPVC")]
    pub pods_with_pvc: Option<PvcProtection>,
}

/// `podProtections.config.PodsWithPVC`: only claims of these storage classes protect their pods (none
/// listed: every claim does).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct PvcProtection {
    pub protected_storage_classes: Vec<StorageClassName>,
}

/// One `protectedStorageClasses` entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageClassName {
    pub name: String,
}

/// A pod protection by the descheduler's name for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum Protection {
    PodsWithLocalStorage,
    DaemonSetPods,
    SystemCriticalPods,
    FailedBarePods,
    PodsWithPVC,
    PodsWithoutPDB,
    PodsWithResourceClaims,
}

impl Protection {
    /// On unless `defaultDisabled` names them.
    pub const DEFAULT: [Protection; 4] = [
        Protection::PodsWithLocalStorage,
        Protection::SystemCriticalPods,
        Protection::FailedBarePods,
        Protection::DaemonSetPods,
    ];
    /// Off unless `extraEnabled` names them.
    pub const EXTRA: [Protection; 3] = [
        Protection::PodsWithPVC,
        Protection::PodsWithoutPDB,
        Protection::PodsWithResourceClaims,
    ];
}

/// The protections in force, after `podProtections` or the deprecated booleans.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Protections {
    pub local_storage: bool,
    pub daemon_set: bool,
    pub system_critical: bool,
    pub failed_bare: bool,
    pub pvc: bool,
    pub without_pdb: bool,
    pub resource_claims: bool,
}

impl EvictorArgs {
    fn deprecated_set(&self) -> bool {
        self.evict_local_storage_pods
            || self.evict_daemon_set_pods
            || self.evict_system_critical_pods
            || self.ignore_pvc_pods
            || self.evict_failed_bare_pods
            || self.ignore_pods_without_pdb
    }

    fn protections_set(&self) -> bool {
        !self.pod_protections.extra_enabled.is_empty()
            || !self.pod_protections.default_disabled.is_empty()
    }

    /// The protections in force: `podProtections` when it names any, else the deprecated booleans.
    pub fn protections(&self) -> Protections {
        if !self.protections_set() {
            return Protections {
                local_storage: !self.evict_local_storage_pods,
                daemon_set: !self.evict_daemon_set_pods,
                system_critical: !self.evict_system_critical_pods,
                failed_bare: !self.evict_failed_bare_pods,
                pvc: self.ignore_pvc_pods,
                without_pdb: self.ignore_pods_without_pdb,
                resource_claims: false,
            };
        }
        let p = &self.pod_protections;
        let default_on = |x: Protection| !p.default_disabled.contains(&x);
        let extra_on = |x: Protection| p.extra_enabled.contains(&x);
        Protections {
            local_storage: default_on(Protection::PodsWithLocalStorage),
            daemon_set: default_on(Protection::DaemonSetPods),
            system_critical: default_on(Protection::SystemCriticalPods),
            failed_bare: default_on(Protection::FailedBarePods),
            pvc: extra_on(Protection::PodsWithPVC),
            without_pdb: extra_on(Protection::PodsWithoutPDB),
            resource_claims: extra_on(Protection::PodsWithResourceClaims),
        }
    }

    /// The storage classes whose claims protect a pod under `PodsWithPVC` (empty: every claim).
    pub fn protected_storage_classes(&self) -> Vec<&str> {
        let config = self.pod_protections.config.as_ref();
        config
            .and_then(|c| c.pods_with_pvc.as_ref())
            .map(|p| {
                p.protected_storage_classes
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The minimum pod age in seconds, when set.
    pub fn min_pod_age_secs(&self) -> Result<Option<i64>, String> {
        self.min_pod_age
            .as_deref()
            .map(|d| {
                parse_go_duration(d)
                    .map(secs)
                    .map_err(|e| format!("minPodAge: {e}"))
            })
            .transpose()
    }

    /// The nodes `nodeFit` looks at.
    pub fn node_selector(&self) -> Result<LabelSelector, String> {
        LabelSelector::parse(&self.node_selector).map_err(|e| format!("nodeSelector: {e}"))
    }

    /// The descheduler's checks of these arguments (`ValidateDefaultEvictorArgs`).
    pub fn validate(&self) -> Result<(), ArgsError> {
        let mut out = Problems::default();
        if let Some(t) = &self.priority_threshold {
            if t.value.is_some() && !t.name.is_empty() {
                out.add(
                    "priorityThreshold.name",
                    "only one of priorityThreshold's value and name can be set",
                );
            }
            if t.value.is_some_and(|v| v > SYSTEM_CRITICAL_PRIORITY) {
                out.add(
                    "priorityThreshold.value",
                    format!("priority threshold can't be greater than {SYSTEM_CRITICAL_PRIORITY}"),
                );
            }
        }
        if let Err(why) = validate::selector_string(&self.node_selector) {
            out.add("nodeSelector", why);
        }
        for (field, sel) in [
            ("labelSelector", &self.label_selector),
            ("namespaceLabelSelector", &self.namespace_label_selector),
        ] {
            if let Some(s) = sel {
                validate::label_selector(s, field, &mut out);
            }
        }
        if let Some(d) = &self.min_pod_age {
            if let Err(why) = parse_go_duration(d) {
                out.add("minPodAge", why);
            }
        }
        if self.protections_set() {
            self.check_protections(&mut out);
        }
        out.done()
    }

    /// `podProtections`, when it names any: not with the deprecated booleans, each name from its
    /// list and once, storage class names set.
    fn check_protections(&self, out: &mut Problems) {
        if self.deprecated_set() {
            out.add(
                "podProtections",
                "cannot use the deprecated fields (evictLocalStoragePods, evictDaemonSetPods, \
                 evictSystemCriticalPods, ignorePvcPods, evictFailedBarePods, \
                 ignorePodsWithoutPDB) alongside podProtections.extraEnabled or \
                 podProtections.defaultDisabled",
            );
        }
        let p = &self.pod_protections;
        for (field, list, valid) in [
            ("extraEnabled", &p.extra_enabled, &Protection::EXTRA[..]),
            (
                "defaultDisabled",
                &p.default_disabled,
                &Protection::DEFAULT[..],
            ),
        ] {
            for (i, x) in list.iter().enumerate() {
                let at = format!("podProtections.{field}[{i}]");
                if !valid.contains(x) {
                    let names: Vec<String> = valid.iter().map(|v| format!("{v:?}")).collect();
                    out.add(
                        at,
                        format!(
                            "invalid pod protection \"{x:?}\" (valid: {})",
                            names.join(", ")
                        ),
                    );
                } else if list[..i].contains(x) {
                    out.add(at, format!("\"{x:?}\" listed twice"));
                }
            }
        }
        if p.extra_enabled.contains(&Protection::PodsWithPVC) {
            let config = p.config.as_ref().and_then(|c| c.pods_with_pvc.as_ref());
            for (i, c) in config
                .iter()
                .flat_map(|c| &c.protected_storage_classes)
                .enumerate()
            {
                if c.name.is_empty() {
                    out.add(
                        format!(
                            "podProtections.config.PodsWithPVC.protectedStorageClasses[{i}].name"
                        ),
                        "name cannot be empty",
                    );
                }
            }
        }
    }
}

//! The engine's settings from the loop's flags (`run`, `simulate`): ranges checked, files read, each
//! error naming its flag.

use super::flags::{ExpanderFlags, LoopFlags, UPSTREAM};
use super::values::GpuTotal;
use crate::engine::limits::GpuLimit;
use crate::engine::settings::NodeGroupBackoff;
use crate::engine::similar::Balancing;
use crate::engine::taints::TaintConfig;
use crate::engine::Settings;
use crate::error::{Error, Result};
use crate::model::consolidation::{parse_share, Consolidation};
use crate::model::drift::DriftPolicy;
use crate::model::lifecycle::Budget;
use crate::model::OptionValues;

/// `--max-interruptions-per-minute`: a count (`100`) or a share of the cluster's nodes (`10%`), as
/// `--max-disruption`; anything else is refused naming the flag.
fn interruption_cap(text: &str) -> Result<Budget> {
    Budget::parse(text).map_err(|e| Error::config(format!("--max-interruptions-per-minute: {e}")))
}

impl LoopFlags {
    /// The engine's settings, with the expander's chain and tiers; files are read here, errors name the
    /// flag.
    pub fn engine(&self, expander: &ExpanderFlags) -> Result<Settings> {
        for (flag, v) in [
            (
                "scale-down-utilization-threshold",
                self.scale_down_utilization_threshold,
            ),
            (
                "scale-down-gpu-utilization-threshold",
                self.scale_down_gpu_utilization_threshold,
            ),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::config(format!(
                    "--{flag}: must be in [0, 1], got {v}"
                )));
            }
        }
        Ok(Settings {
            scheduler: match &self.scheduler_config_file {
                Some(path) => crate::k8s::scheduler_config::read(path)?,
                None => Default::default(),
            },
            expander: expander.chain()?,
            priorities: expander.priorities()?,
            max_nodes_total: self.max_nodes_total,
            cores_total: (self.cores_total.0, self.cores_total.1),
            memory_total_gib: (self.memory_total.0, self.memory_total.1),
            gpu_total: self.gpu_limits(),
            max_nodes_per_scaleup: self.max_nodes_per_scaleup,
            enforce_node_group_min_size: self.enforce_node_group_min_size,
            max_nodegroup_binpacking_duration: self.max_nodegroup_binpacking_duration.0,
            new_pod_scale_up_delay: self.new_pod_scale_up_delay.0,
            expendable_pods_priority_cutoff: self.expendable_pods_priority_cutoff,
            // Set by the command from its own `--scan-interval` (`run`, `simulate`).
            scan_interval: UPSTREAM.scan_interval,
            node_group_backoff: NodeGroupBackoff {
                initial: self.initial_node_group_backoff_duration.0,
                max: self.max_node_group_backoff_duration.0,
                reset: self.node_group_backoff_reset_timeout.0,
            },
            scale_down_enabled: self.scale_down_enabled,
            scale_down_delay_after_add: self.scale_down_delay_after_add.0,
            scale_down_delay_after_delete: self.scale_down_delay_after_delete.0,
            scale_down_delay_after_failure: self.scale_down_delay_after_failure.0,
            skip_nodes_with_local_storage: self.skip_nodes_with_local_storage,
            ignore_mirror_pods_utilization: self.ignore_mirror_pods_utilization,
            skip_nodes_with_system_pods: self.skip_nodes_with_system_pods,
            skip_nodes_with_custom_controller_pods: self.skip_nodes_with_custom_controller_pods,
            min_replica_count: self.min_replica_count,
            blocking_system_pod_disruption_timeout: self.blocking_system_pod_distruption_timeout.0,
            max_empty_bulk_delete: self.max_empty_bulk_delete,
            daemonset_eviction_for_occupied_nodes: self.daemonset_eviction_for_occupied_nodes,
            daemonset_eviction_for_empty_nodes: self.daemonset_eviction_for_empty_nodes,
            balance_similar_node_groups: self.balance_similar_node_groups,
            balancing: Balancing {
                labels: self.balancing_label.clone(),
                ignore_labels: self.balancing_ignore_label.clone(),
                memory_difference_ratio: self.memory_difference_ratio,
                max_allocatable_difference_ratio: self.max_allocatable_difference_ratio,
                max_free_difference_ratio: self.max_free_difference_ratio,
            },
            ok_total_unready_count: self.ok_total_unready_count,
            max_total_unready_percentage: self.max_total_unready_percentage,
            scale_down_unready_enabled: self.scale_down_unready_enabled,
            max_scale_down_parallelism: self.max_scale_down_parallelism,
            max_drain_parallelism: self.max_drain_parallelism,
            max_evictions_per_loop: self.max_evictions_per_loop,
            force_delete_unregistered_nodes: self.force_delete_unregistered_nodes,
            node_max_lifetime: Some(self.node_max_lifetime.0).filter(|d| !d.is_zero()),
            max_disruption: Budget::parse(&self.max_disruption)
                .map_err(|e| Error::config(format!("--max-disruption: {e}")))?,
            max_interruptions_per_minute: interruption_cap(&self.max_interruptions_per_minute)?,
            consolidation: Consolidation::parse(&self.consolidation)
                .map_err(|e| Error::config(format!("--consolidation: {e}")))?,
            consolidation_min_savings: parse_share(&self.consolidation_min_savings)
                .map_err(|e| Error::config(format!("--consolidation-min-savings: {e}")))?,
            consolidation_min_savings_per_pod: if self.consolidation_min_savings_per_pod.is_finite()
                && self.consolidation_min_savings_per_pod >= 0.0
            {
                self.consolidation_min_savings_per_pod
            } else {
                return Err(Error::config(format!(
                    "--consolidation-min-savings-per-pod: must be a number of dollars of at least 0, got {}",
                    self.consolidation_min_savings_per_pod
                )));
            },
            drift: DriftPolicy::parse(&self.drift)
                .map_err(|e| Error::config(format!("--drift: {e}")))?,
            consolidation_max_candidates: self.consolidation_max_candidates,
            consolidation_max_set: self.consolidation_max_set,
            consolidation_search_time: self.consolidation_search_time.0,
            defaults: OptionValues {
                scale_down_utilization_threshold: self.scale_down_utilization_threshold,
                scale_down_gpu_utilization_threshold: self.scale_down_gpu_utilization_threshold,
                ignore_daemonsets_utilization: self.ignore_daemonsets_utilization,
                scale_down_unneeded_time: self.scale_down_unneeded_time.0,
                scale_down_unready_time: self.scale_down_unready_time.0,
                max_node_provision_time: self.max_node_provision_time.0,
                max_node_startup_time: self.max_node_startup_time.0,
                ..UPSTREAM.defaults.clone()
            },
            taints: TaintConfig {
                startup: self
                    .startup_taint
                    .iter()
                    .chain(&self.ignore_taint)
                    .cloned()
                    .collect(),
                status: self.status_taint.clone(),
            },
            max_bulk_soft_taint_count: self.max_bulk_soft_taint_count,
            max_bulk_soft_taint_time: self.max_bulk_soft_taint_time.0,
            node_deletion_candidate_ttl: self.node_deletion_candidate_ttl.0,
            bypassed_scheduler_names: self
                .bypassed_scheduler_names
                .iter()
                .filter(|n| !n.is_empty())
                .cloned()
                .collect(),
        })
    }

    /// `--gpu-total`'s limits, one per GPU type: a type given twice keeps its last value, as
    /// upstream's resource limiter (a map by type) does.
    fn gpu_limits(&self) -> Vec<GpuLimit> {
        let mut limits: Vec<GpuLimit> = Vec::new();
        for GpuTotal(l) in &self.gpu_total {
            limits.retain(|k| k.gpu_type != l.gpu_type);
            limits.push(l.clone());
        }
        limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_command_line_runs_with_upstreams_defaults() {
        assert_eq!(
            format!("{:?}", super::super::flags::default_engine()),
            format!("{:?}", Settings::upstream())
        );
    }

    #[test]
    fn taint_and_scheduler_flags_reach_the_engine_as_upstream_reads_them() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            run: LoopFlags,
        }
        let cli = <Cli as clap::Parser>::try_parse_from([
            "x",
            "--startup-taint=example.com/cni",
            "--ignore-taint=example.com/agent",
            "--status-taint=example.com/gpu-health",
            "--bypassed-scheduler-names=my-scheduler,other",
        ])
        .unwrap();
        let s = cli
            .run
            .engine(&super::super::defaults::<ExpanderFlags>())
            .unwrap();
        assert_eq!(s.taints.startup, ["example.com/cni", "example.com/agent"]);
        assert_eq!(s.taints.status, ["example.com/gpu-health"]);
        assert_eq!(s.bypassed_scheduler_names, ["my-scheduler", "other"]);
        // Upstream's default, an empty string, bypasses no scheduler.
        let cli =
            <Cli as clap::Parser>::try_parse_from(["x", "--bypassed-scheduler-names="]).unwrap();
        let s = cli
            .run
            .engine(&super::super::defaults::<ExpanderFlags>())
            .unwrap();
        assert!(s.bypassed_scheduler_names.is_empty());
    }

    #[test]
    fn gpu_total_repeats_one_limit_per_type_the_last_kept() {
        #[derive(clap::Parser, Debug)]
        struct Cli {
            #[command(flatten)]
            run: LoopFlags,
        }
        let cli = <Cli as clap::Parser>::try_parse_from([
            "x",
            "--gpu-total=nvidia-tesla-t4:0:8",
            "--gpu-total",
            "nvidia-a10g:1:4",
            "--gpu-total=nvidia-tesla-t4:2:16",
        ])
        .unwrap();
        let s = cli
            .run
            .engine(&super::super::defaults::<ExpanderFlags>())
            .unwrap();
        let limit = |gpu_type: &str, min, max| GpuLimit {
            gpu_type: gpu_type.into(),
            min,
            max,
        };
        assert_eq!(
            s.gpu_total,
            [limit("nvidia-a10g", 1, 4), limit("nvidia-tesla-t4", 2, 16)]
        );
        let bad = <Cli as clap::Parser>::try_parse_from(["x", "--gpu-total=t4:1"]).unwrap_err();
        assert!(bad.to_string().contains("--gpu-total"), "{bad}");
    }

    #[test]
    fn the_interruption_cap_is_a_count_or_a_share_and_a_bad_one_names_its_flag() {
        #[derive(clap::Parser, Debug)]
        struct Cli {
            #[command(flatten)]
            run: LoopFlags,
        }
        let cap = |args: &[&str]| {
            let cli = <Cli as clap::Parser>::try_parse_from(
                std::iter::once("x").chain(args.iter().copied()),
            )
            .unwrap();
            cli.run
                .engine(&super::super::defaults::<ExpanderFlags>())
                .map(|s| s.max_interruptions_per_minute)
        };
        assert_eq!(cap(&[]).unwrap(), Budget::Count(100), "the default");
        assert_eq!(
            cap(&["--max-interruptions-per-minute=10%"]).unwrap(),
            Budget::Percent(10.0)
        );
        assert_eq!(
            cap(&["--max-interruptions-per-minute", "7"]).unwrap(),
            Budget::Count(7)
        );
        for bad in ["ten", "-1", "150%", "", "%", "1.5", "NaN%"] {
            let flag = format!("--max-interruptions-per-minute={bad}");
            let e = cap(&[&flag]).unwrap_err();
            assert!(
                e.to_string().contains("--max-interruptions-per-minute"),
                "{bad:?}: {e}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn no_interruption_cap_makes_the_parser_panic(text in "\\PC{0,24}", n in proptest::prelude::any::<u64>()) {
            let _ = super::interruption_cap(&text);
            let _ = super::interruption_cap(&format!("{n}%"));
            if let Ok(cap) = super::interruption_cap(&format!("{n}")) {
                proptest::prop_assert_eq!(cap.allowed(20), n as usize);
            }
        }
    }
}

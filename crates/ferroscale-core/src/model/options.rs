//! cluster-autoscaler's per-group autoscaling options: the overrides a group sets, the complete values
//! they apply to, and the one place that knows each option's name and type ([`AutoscalingOptions::set`]).

use std::time::Duration;

/// Per-group overrides of cluster-autoscaler's autoscaling options; `None` keeps the client's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AutoscalingOptions {
    pub scale_down_utilization_threshold: Option<f64>,
    pub scale_down_gpu_utilization_threshold: Option<f64>,
    pub scale_down_unneeded_time: Option<Duration>,
    pub scale_down_unready_time: Option<Duration>,
    pub max_node_provision_time: Option<Duration>,
    pub max_node_startup_time: Option<Duration>,
    pub ignore_daemonsets_utilization: Option<bool>,
    pub zero_or_max_node_scaling: Option<bool>,
    pub allow_non_atomic_scale_up_to_max: Option<bool>,
}

/// A complete set of autoscaling option values.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionValues {
    pub scale_down_utilization_threshold: f64,
    pub scale_down_gpu_utilization_threshold: f64,
    pub scale_down_unneeded_time: Duration,
    pub scale_down_unready_time: Duration,
    pub max_node_provision_time: Duration,
    pub max_node_startup_time: Duration,
    pub ignore_daemonsets_utilization: bool,
    pub zero_or_max_node_scaling: bool,
    pub allow_non_atomic_scale_up_to_max: bool,
}

impl OptionValues {
    /// Upstream cluster-autoscaler's flag defaults: the `--scale-down-*` and `--max-node-provision-time`
    /// flags take theirs from here, and so does a CA request that sends none.
    pub const DEFAULT: OptionValues = OptionValues {
        scale_down_utilization_threshold: 0.5,
        scale_down_gpu_utilization_threshold: 0.5,
        scale_down_unneeded_time: Duration::from_secs(600),
        scale_down_unready_time: Duration::from_secs(1200),
        max_node_provision_time: Duration::from_secs(900),
        max_node_startup_time: Duration::from_secs(900),
        ignore_daemonsets_utilization: false,
        zero_or_max_node_scaling: false,
        allow_non_atomic_scale_up_to_max: false,
    };
}

impl Default for OptionValues {
    fn default() -> Self {
        OptionValues::DEFAULT
    }
}

impl AutoscalingOptions {
    /// Sets one option from its name and text: the names as in files (`scaleDownUnneededTime`), in any
    /// case (AWS tags spell them `scaledownunneededtime`); thresholds in [0, 1], durations in Go syntax.
    /// The error says what is wrong with the value, or that the name is unknown.
    pub fn set(&mut self, name: &str, text: &str) -> Result<(), String> {
        let threshold = || {
            text.parse::<f64>()
                .ok()
                .filter(|t| (0.0..=1.0).contains(t))
                .ok_or_else(|| format!("must be a number between 0 and 1, got {text:?}"))
        };
        let duration = || super::parse_go_duration(text);
        let flag = || {
            text.parse::<bool>()
                .map_err(|_| format!("must be true or false, got {text:?}"))
        };
        let is = |n: &str| name.eq_ignore_ascii_case(n);
        if is("scaleDownUtilizationThreshold") {
            self.scale_down_utilization_threshold = Some(threshold()?);
        } else if is("scaleDownGpuUtilizationThreshold") {
            self.scale_down_gpu_utilization_threshold = Some(threshold()?);
        } else if is("scaleDownUnneededTime") {
            self.scale_down_unneeded_time = Some(duration()?);
        } else if is("scaleDownUnreadyTime") {
            self.scale_down_unready_time = Some(duration()?);
        } else if is("maxNodeProvisionTime") {
            self.max_node_provision_time = Some(duration()?);
        } else if is("maxNodeStartupTime") {
            self.max_node_startup_time = Some(duration()?);
        } else if is("ignoreDaemonSetsUtilization") {
            self.ignore_daemonsets_utilization = Some(flag()?);
        } else if is("zeroOrMaxNodeScaling") {
            self.zero_or_max_node_scaling = Some(flag()?);
        } else if is("allowNonAtomicScaleUpToMax") {
            self.allow_non_atomic_scale_up_to_max = Some(flag()?);
        } else {
            return Err(format!("unknown option {name:?}"));
        }
        Ok(())
    }

    /// The group's overrides applied on top of `defaults`.
    pub fn apply_to(&self, defaults: &OptionValues) -> OptionValues {
        OptionValues {
            scale_down_utilization_threshold: self
                .scale_down_utilization_threshold
                .unwrap_or(defaults.scale_down_utilization_threshold),
            scale_down_gpu_utilization_threshold: self
                .scale_down_gpu_utilization_threshold
                .unwrap_or(defaults.scale_down_gpu_utilization_threshold),
            scale_down_unneeded_time: self
                .scale_down_unneeded_time
                .unwrap_or(defaults.scale_down_unneeded_time),
            scale_down_unready_time: self
                .scale_down_unready_time
                .unwrap_or(defaults.scale_down_unready_time),
            max_node_provision_time: self
                .max_node_provision_time
                .unwrap_or(defaults.max_node_provision_time),
            max_node_startup_time: self
                .max_node_startup_time
                .unwrap_or(defaults.max_node_startup_time),
            ignore_daemonsets_utilization: self
                .ignore_daemonsets_utilization
                .unwrap_or(defaults.ignore_daemonsets_utilization),
            zero_or_max_node_scaling: self
                .zero_or_max_node_scaling
                .unwrap_or(defaults.zero_or_max_node_scaling),
            allow_non_atomic_scale_up_to_max: self
                .allow_non_atomic_scale_up_to_max
                .unwrap_or(defaults.allow_non_atomic_scale_up_to_max),
        }
    }
}

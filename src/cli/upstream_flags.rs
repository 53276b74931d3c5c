//! cluster-autoscaler's own command-line flags, so `ferroscale run` accepts a CA command line as it is
//! (the chart passes CA's flags through `extraArgs`): a flag of upstream's that ferroscale does not
//! implement is taken off the command line with its value and named in a warning, instead of ending the
//! process. A flag neither knows is still an error (a typo must not pass silently).
//!
//! The table is transcribed from upstream's `cluster-autoscaler/config/flags/flags.go`, its leader
//! election flags (component-base) and klog's flags: each name with whether it takes a value (Go's `flag`
//! package never reads a separate value for a boolean flag).

use std::ffi::OsString;

/// (flag name, takes a value).
const UPSTREAM: &[(&str, bool)] = &[
    ("add-dir-header", false),
    ("address", true),
    ("alsologtostderr", false),
    ("async-node-groups", false),
    ("aws-use-static-instance-list", false),
    ("balance-similar-node-groups", false),
    ("balancing-ignore-label", true),
    ("balancing-label", true),
    ("blocking-system-pod-distruption-timeout", true),
    ("bulk-mig-instances-listing-enabled", false),
    ("bypassed-scheduler-names", true),
    ("capacity-buffer-controller-enabled", false),
    ("capacity-buffer-pod-injection-enabled", false),
    ("check-capacity-batch-processing", false),
    ("check-capacity-processor-instance", true),
    ("check-capacity-provisioning-request-batch-timebox", true),
    ("check-capacity-provisioning-request-max-batch-size", true),
    ("cloud-config", true),
    ("cloud-provider", true),
    ("cluster-name", true),
    ("cluster-snapshot-parallelism", true),
    ("clusterapi-cloud-config-authoritative", false),
    ("cordon-node-before-terminating", false),
    ("cores-total", true),
    ("daemonset-eviction-for-empty-nodes", false),
    ("daemonset-eviction-for-occupied-nodes", false),
    ("debugging-snapshot-enabled", false),
    ("drain-priority-config", true),
    ("dynamic-node-delete-delay-after-taint-enabled", false),
    ("emit-per-nodegroup-metrics", false),
    ("enable-csi-node-aware-scheduling", false),
    ("enable-dynamic-resource-allocation", false),
    ("enable-proactive-scaleup", false),
    ("enable-provisioning-requests", false),
    ("estimator", true),
    ("expander", true),
    ("expendable-pods-priority-cutoff", true),
    ("feature-gates", true),
    ("force-delete-failed-nodes", false),
    ("force-delete-unregistered-nodes", false),
    ("force-ds", false),
    ("frequent-loops-enabled", false),
    ("gce-concurrent-refreshes", true),
    ("gce-mig-instances-min-refresh-wait-time", true),
    ("grpc-expander-cert", true),
    ("grpc-expander-url", true),
    ("ignore-daemonsets-utilization", false),
    ("ignore-mirror-pods-utilization", false),
    ("ignore-taint", true),
    ("initial-node-group-backoff-duration", true),
    ("kube-api-content-type", true),
    ("kube-client-burst", true),
    ("kube-client-qps", true),
    ("kubeconfig", true),
    ("kubernetes", true),
    ("leader-elect", false),
    ("leader-elect-lease-duration", true),
    ("leader-elect-renew-deadline", true),
    ("leader-elect-resource-lock", true),
    ("leader-elect-resource-name", true),
    ("leader-elect-resource-namespace", true),
    ("leader-elect-retry-period", true),
    ("log-backtrace-at", true),
    ("log-dir", true),
    ("log-file", true),
    ("log-file-max-size", true),
    ("logtostderr", false),
    ("max-allocatable-difference-ratio", true),
    ("max-binpacking-time", true),
    ("max-bulk-soft-taint-count", true),
    ("max-bulk-soft-taint-time", true),
    ("max-drain-parallelism", true),
    ("max-failing-time", true),
    ("max-free-difference-ratio", true),
    ("max-graceful-termination-sec", true),
    ("max-inactivity", true),
    ("max-node-group-backoff-duration", true),
    ("max-node-provision-time", true),
    ("max-nodegroup-binpacking-duration", true),
    ("max-nodes-per-scaleup", true),
    ("max-nodes-total", true),
    ("max-pod-eviction-time", true),
    ("max-scale-down-parallelism", true),
    ("max-total-unready-percentage", true),
    ("memory-difference-ratio", true),
    ("memory-total", true),
    ("min-replica-count", true),
    ("namespace", true),
    ("new-pod-scale-up-delay", true),
    ("node-delete-delay-after-taint", true),
    ("node-deletion-batcher-interval", true),
    ("node-deletion-candidate-ttl", true),
    ("node-deletion-delay-timeout", true),
    ("node-group-auto-discovery", true),
    ("node-group-backoff-reset-timeout", true),
    ("node-info-cache-expire-time", true),
    ("nodes", true),
    ("ok-total-unready-count", true),
    ("one-output", false),
    ("parallel-scale-up", false),
    ("pod-injection-limit", true),
    ("predicate-parallelism", true),
    ("profiling", false),
    ("provisioning-request-initial-backoff-time", true),
    ("provisioning-request-max-backoff-cache-size", true),
    ("provisioning-request-max-backoff-time", true),
    ("record-duplicated-events", false),
    ("regional", false),
    ("scale-down-candidates-pool-min-count", true),
    ("scale-down-candidates-pool-ratio", true),
    ("scale-down-delay-after-add", true),
    ("scale-down-delay-after-delete", true),
    ("scale-down-delay-after-failure", true),
    ("scale-down-delay-type-local", false),
    ("scale-down-enabled", false),
    ("scale-down-gpu-utilization-threshold", true),
    ("scale-down-non-empty-candidates-count", true),
    ("scale-down-simulation-timeout", true),
    ("scale-down-unneeded-time", true),
    ("scale-down-unready-enabled", false),
    ("scale-down-unready-time", true),
    ("scale-down-utilization-threshold", true),
    ("scale-from-unschedulable", false),
    ("scale-up-from-zero", false),
    ("scan-interval", true),
    ("skip-headers", false),
    ("skip-log-headers", false),
    ("skip-nodes-with-custom-controller-pods", false),
    ("skip-nodes-with-local-storage", false),
    ("skip-nodes-with-system-pods", false),
    ("startup-taint", true),
    ("status-config-map-name", true),
    ("status-taint", true),
    ("stderrthreshold", true),
    ("unremovable-node-recheck-timeout", true),
    ("user-agent", true),
    ("v", true),
    ("vmodule", true),
    ("write-status-configmap", false),
];

/// Whether upstream has `--name`, and whether it takes a value.
fn upstream(name: &str) -> Option<bool> {
    UPSTREAM
        .binary_search_by(|(n, _)| n.cmp(&name))
        .ok()
        .map(|i| UPSTREAM[i].1)
}

/// Takes off `args` (those after the `run` command) every flag of upstream's that `known` (ferroscale's
/// own long flag names there) lacks, with its value; returns the remaining arguments and the flags taken
/// off, as written, for the warning.
pub fn strip_unimplemented(
    args: Vec<OsString>,
    known: impl Fn(&str) -> bool,
) -> (Vec<OsString>, Vec<String>) {
    let mut kept = Vec::with_capacity(args.len());
    let mut dropped = Vec::new();
    let mut rest = args.into_iter().peekable();
    while let Some(arg) = rest.next() {
        let text = arg.to_string_lossy().into_owned();
        if text == "--" {
            kept.push(arg);
            kept.extend(rest);
            break;
        }
        let Some(flag) = text.strip_prefix("--").or_else(|| text.strip_prefix('-')) else {
            kept.push(arg);
            continue;
        };
        let (name, inline_value) = match flag.split_once('=') {
            Some((n, _)) => (n, true),
            None => (flag, false),
        };
        match upstream(name) {
            Some(takes_value) if !known(name) => {
                let mut written = text.clone();
                if takes_value && !inline_value {
                    if let Some(v) = rest.next() {
                        written = format!("{written} {}", v.to_string_lossy());
                    }
                }
                dropped.push(written);
            }
            _ => kept.push(arg),
        }
    }
    (kept, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_table_is_sorted_and_has_no_duplicates() {
        assert!(UPSTREAM.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn upstream_flags_ferroscale_lacks_go_with_their_values() {
        let known = |n: &str| n == "scan-interval" || n == "kubeconfig";
        let (kept, dropped) = strip_unimplemented(
            os(&[
                "--scan-interval",
                "10s",
                "--max-bulk-soft-taint-time",
                "5s",
                "--cordon-node-before-terminating",
                "--kubeconfig=/k",
                "--user-agent=ca",
                "--no-such-flag",
                "x",
            ]),
            known,
        );
        assert_eq!(
            kept,
            os(&[
                "--scan-interval",
                "10s",
                "--kubeconfig=/k",
                "--no-such-flag",
                "x"
            ])
        );
        assert_eq!(
            dropped,
            [
                "--max-bulk-soft-taint-time 5s",
                "--cordon-node-before-terminating",
                "--user-agent=ca"
            ]
        );
    }

    #[test]
    fn a_boolean_flag_never_takes_the_next_argument() {
        let (kept, dropped) =
            strip_unimplemented(os(&["--regional", "--dry-run"]), |n| n == "dry-run");
        assert_eq!(
            (kept, dropped),
            (os(&["--dry-run"]), vec!["--regional".into()])
        );
    }
}

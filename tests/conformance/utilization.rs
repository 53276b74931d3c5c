//! `kind: utilization` — cluster-autoscaler's `TestCalculate` (`simulator/utilization/info_test.go`):
//! a node's utilization from the pods on it. `objects` hold the node and its pods (bound by
//! `spec.nodeName` or not: every pod counts as on the node), `ignore_daemonsets` and
//! `ignore_mirror_pods` are `Calculate`'s skip arguments, `now` its time (pods terminating past their
//! grace period do not count). `expect` is the utilization, compared as upstream does (within 1% of
//! it; exactly when it is 0), or `error` when upstream cannot calculate it (a node without allocatable
//! cpu or memory).

use ferroscale::engine::predicates::NodeInfo;
use ferroscale::engine::utilization::{missing_allocatable, utilization, Counted, LeftOut};
use serde::Deserialize;

use super::support;

#[derive(Deserialize)]
struct Case {
    objects: serde_norway::Value,
    #[serde(default)]
    ignore_daemonsets: bool,
    #[serde(default)]
    ignore_mirror_pods: bool,
    #[serde(default = "test_time")]
    now: String,
    expect: Expect,
}

fn test_time() -> String {
    "2020-12-18T17:00:00Z".into()
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Expect {
    #[serde(default)]
    utilization: Option<f64>,
    #[serde(default)]
    error: bool,
}

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
    let case: Case = serde_norway::from_value(case.clone()).map_err(|e| e.to_string())?;
    let now = support::time(&case.now)?;
    let inputs = support::inputs(&support::objects(&case.objects)?)?;
    let [node] = inputs.nodes.as_slice() else {
        return Err("give exactly one node".into());
    };
    let mut info = NodeInfo::new(node.clone());
    for p in &inputs.pods {
        info.add(p.clone());
    }
    if let Some(resource) = missing_allocatable(node) {
        return if case.expect.error {
            Ok(())
        } else {
            Err(format!(
                "no allocatable {resource}, upstream: {:?}",
                case.expect
            ))
        };
    }
    let left_out = LeftOut {
        daemonsets: case.ignore_daemonsets,
        mirror_pods: case.ignore_mirror_pods,
    };
    // Upstream's utilization leaves out pods terminating too long, whatever their priority.
    let counted = Counted {
        cutoff: i32::MIN,
        now,
    };
    let got = utilization(&info, left_out, counted).value;
    match case.expect.utilization {
        _ if case.expect.error => Err(format!("utilization {got}, upstream: an error")),
        Some(want) if want == 0.0 && got == 0.0 => Ok(()),
        Some(want) if want != 0.0 && ((got - want) / want).abs() <= 0.01 => Ok(()),
        want => Err(format!("utilization {got}, upstream: {want:?}")),
    }
}

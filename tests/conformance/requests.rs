//! `kind: requests` — what a pod asks of a node as the scheduler counts it (upstream's
//! `PodInfo.CalculateResource`): containers, init containers and sidecars, pod-level requests,
//! overhead, in-place resize. `pod` is the pod (a Kubernetes Pod, status included); `requests` what it
//! asks (resources left out ask nothing).

use std::collections::BTreeMap;

use ferroscale::model::Resources;
use serde::Deserialize;

use super::support;

#[derive(Deserialize)]
struct Case {
    pod: serde_norway::Value,
    requests: BTreeMap<String, String>,
}

pub fn check(case: &serde_norway::Value) -> Result<(), String> {
    let case: Case = serde_norway::from_value(case.clone()).map_err(|e| e.to_string())?;
    let objects = support::objects(&serde_norway::Value::Sequence(vec![case.pod]))?;
    let inputs = support::inputs(&objects)?;
    let [pod] = inputs.pods.as_slice() else {
        return Err("`pod` is one Pod".into());
    };
    let mut want = Resources::from_quantities(
        "requests",
        case.requests.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .map_err(|e| e.to_string())?;
    want.pods = 1;
    if pod.requests == want {
        Ok(())
    } else {
        Err(format!(
            "counts {:?}, upstream: {:?}",
            pod.requests.to_quantities(),
            want.to_quantities()
        ))
    }
}

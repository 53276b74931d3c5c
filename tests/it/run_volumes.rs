//! `ferroscale run` reads volumes live: a pod whose claim does not exist yet waits without a scale-up and
//! says so; once the claim and its zoned volume arrive through the watches, the group in the volume's
//! zone grows, not the cheaper one elsewhere; the CSINode's attach limit is read too.

use std::time::Duration;

use ferroscale::engine::expander::Strategy;
use ferroscale::time::unix_now as now;
use serde_json::json;

use crate::support::fixtures::kube::pod;
use crate::support::kube_api::{assert_permitted, KubeApi, CLAIMS, CSINODES, NODES, PODS, VOLUMES};
use crate::support::run_harness::{run_settings, Harness};

const ZONED: &str = r#"
nodeGroups:
  - {name: a, minSize: 0, maxSize: 5, targetSize: 0, capacity: {cpu: 4, memory: 16Gi, pods: 20},
     pricePerHour: 0.2, labels: {topology.kubernetes.io/zone: us-east-1a}}
  - {name: b, minSize: 0, maxSize: 5, targetSize: 0, capacity: {cpu: 4, memory: 16Gi, pods: 20},
     pricePerHour: 0.1, labels: {topology.kubernetes.io/zone: us-east-1b}}
"#;

#[tokio::test]
async fn a_pod_waits_for_its_claim_then_scales_up_the_zone_of_its_volume() {
    let api = KubeApi::start().await;
    let mut db = pod("db-0", "1", None, "db");
    db["spec"]["volumes"] =
        json!([{"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}}]);
    api.put(PODS, db);
    let mut settings = ferroscale::cli::flags::default_engine();
    settings.expander = vec![Strategy::Price];
    let mut h = Harness::new(api, ZONED, settings, run_settings()).await;

    let d = h.runner.run_once(now()).await.unwrap();
    assert!(d.scale_up.is_empty(), "{d:?}");
    h.api
        .wait_for("the NotTriggerScaleUp event", |a| {
            !a.events("NotTriggerScaleUp").is_empty()
        })
        .await;
    let not = h.api.events("NotTriggerScaleUp");
    assert!(
        not[0].1.contains("waits for pvc default/data-0: not found"),
        "{not:?}"
    );

    h.api.put(
        VOLUMES,
        json!({
            "metadata": {"name": "pv-0", "labels": {"topology.kubernetes.io/zone": "us-east-1a"}},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-0"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}]}]}}},
        }),
    );
    h.api.put(
        CLAIMS,
        json!({
            "metadata": {"name": "data-0", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv-0",
                "resources": {"requests": {"storage": "10Gi"}}},
            "status": {"phase": "Bound"},
        }),
    );
    for _ in 0..200 {
        if h.watches.claims.state().len() == 1 && h.watches.volumes.state().len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let d = h.runner.run_once(now()).await.unwrap();
    let ups: Vec<(&str, i32)> = d
        .scale_up
        .iter()
        .map(|u| (u.group.as_str(), u.delta))
        .collect();
    assert_eq!(ups, vec![("a", 1)], "{d:?}");
    assert_permitted(&h.api);
}

#[tokio::test]
async fn a_node_at_its_csinode_limit_gets_no_more_volumes() {
    let api = KubeApi::start().await;
    let mut node =
        crate::support::fixtures::kube::node("a-1", "aws:///us-east-1a/i-a", "4", "16Gi");
    node["metadata"]["labels"]["topology.kubernetes.io/zone"] = json!("us-east-1a");
    api.put(NODES, node);
    api.put(
        CSINODES,
        json!({"metadata": {"name": "a-1"}, "spec": {"drivers": [
            {"name": "ebs.csi.aws.com", "nodeID": "i-a", "allocatable": {"count": 1}}]}}),
    );
    for (i, node) in [(0, Some("a-1")), (1, None)] {
        api.put(
            VOLUMES,
            json!({"metadata": {"name": format!("pv-{i}")},
                "spec": {"csi": {"driver": "ebs.csi.aws.com", "volumeHandle": format!("vol-{i}")}}}),
        );
        api.put(
            CLAIMS,
            json!({"metadata": {"name": format!("data-{i}"), "namespace": "default"},
                "spec": {"volumeName": format!("pv-{i}")}, "status": {"phase": "Bound"}}),
        );
        let mut p = pod(&format!("db-{i}"), "500m", node, "db");
        p["spec"]["volumes"] =
            json!([{"name": "data", "persistentVolumeClaim": {"claimName": format!("data-{i}")}}]);
        api.put(PODS, p);
    }
    let groups = ZONED.replace(
        "maxSize: 5, targetSize: 0, capacity: {cpu: 4, memory: 16Gi, pods: 20},\n     pricePerHour: 0.2",
        "maxSize: 5, targetSize: 1, instances: [{id: i-a}], capacity: {cpu: 4, memory: 16Gi, pods: 20},\n     pricePerHour: 0.2",
    );
    let mut h = Harness::new(
        api,
        &groups,
        ferroscale::cli::flags::default_engine(),
        run_settings(),
    )
    .await;
    h.synced(1, 2).await;
    let d = h.runner.run_once(now()).await.unwrap();
    assert_eq!(
        d.scale_up.len(),
        1,
        "the node has cpu but no attachment left: {d:?}"
    );
}

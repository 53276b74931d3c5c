//! `ferroscale run` with `--min-replica-count`: it watches ReplicaSets (only then) and keeps a node whose
//! pods belong to a ReplicaSet with fewer replicas, until the watch brings the scaled-up ReplicaSet.

use std::time::Duration;

use ferroscale::engine::reasons::{Blocker, Unremovable};
use ferroscale::time::unix_now as now;
use serde_json::json;

use crate::support::fixtures::kube::POOL;
use crate::support::kube_api::{assert_permitted, KubeApi, REPLICASETS};
use crate::support::run_harness::{eager, pool, run_settings, Harness};

fn replicaset(replicas: i64) -> serde_json::Value {
    json!({"metadata": {"name": "rs", "namespace": "default"},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}}}}})
}

#[tokio::test]
async fn a_node_whose_pods_belong_to_a_small_replicaset_is_kept_until_it_grows() {
    let api = KubeApi::start().await;
    pool(&api, 2).await;
    api.put(REPLICASETS, replicaset(1));
    let mut settings = eager();
    settings.min_replica_count = 2;
    let mut h = Harness::new(api, POOL, settings, run_settings()).await;
    h.synced(2, 3).await;

    let d = h.runner.run_once(now()).await.unwrap();
    assert!(d.scale_down.is_empty(), "{d:?}");
    let why = d.unremovable.iter().find(|(n, _)| n == "pool-b");
    assert!(
        matches!(
            why,
            Some((_, Unremovable::Blocked(Blocker::MinReplicas { .. })))
        ),
        "{d:?}"
    );

    h.api.put(REPLICASETS, replicaset(3));
    let rs = h.watches.owners.clone().expect("ReplicaSets watched").0;
    for _ in 0..200 {
        if rs.state().iter().any(|r| r.spec.replicas == Some(3)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let d = h.runner.run_once(now()).await.unwrap();
    let removed: Vec<&str> = d.scale_down.iter().map(|s| s.node.as_str()).collect();
    assert_eq!(removed, vec!["pool-b"], "{d:?}");
    assert_permitted(&h.api);
}

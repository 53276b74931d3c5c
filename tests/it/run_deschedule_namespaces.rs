//! The evictor's `namespaceLabelSelector` in `run` and `deschedule`: the Namespaces' labels are
//! listed from the API each cycle (a pod's namespace matching the selector may go; one that does not
//! match is kept), and the request is one the RBAC grants.

use serde_json::json;

use crate::run_deschedule::{cluster, descheduler, indexed, lifetime_policy};
use crate::support::kube_api::NAMESPACES;
use ferroscale::deschedule::args::Selector;
use ferroscale::k8s::DESCHEDULE_PERMISSIONS;
use ferroscale::time::unix_now as now;

fn selecting(team: &str) -> ferroscale::deschedule::Policy {
    let mut policy = lifetime_policy();
    policy.profiles[0].evictor.namespace_label_selector = Some(Selector {
        match_labels: [("team".to_string(), team.to_string())].into(),
        ..Default::default()
    });
    policy
}

#[tokio::test]
async fn namespace_label_selector_reads_the_namespaces_labels_from_the_api() {
    let api = cluster(1).await;
    api.put(
        NAMESPACES,
        json!({"apiVersion": "v1", "kind": "Namespace",
               "metadata": {"name": "default", "labels": {"team": "web"}}}),
    );
    let (_watches, index) = indexed(&api).await;
    // Another team's namespaces only: every pod of `default` is kept.
    let (mut d, _) = descheduler(&api, selecting("data"));
    let done = d.cycle(&index, &Default::default(), now() + 60).await;
    assert!(done.evicted.is_empty(), "{done:?}");
    // The team of `default`: its failed pod and its old pods may go.
    let (mut d, _) = descheduler(&api, selecting("web"));
    let done = d.cycle(&index, &Default::default(), now() + 60).await;
    assert!(!done.evicted.is_empty(), "{done:?} {:?}", api.requests());
    let lists: Vec<String> = api
        .requests()
        .into_iter()
        .filter(|r| r.starts_with("GET /api/v1/namespaces"))
        .collect();
    assert_eq!(lists.len(), 2, "one list per cycle: {lists:?}");
    assert!(DESCHEDULE_PERMISSIONS.contains(&("", "namespaces", "list")));
}

//! The proposals the descheduler's plan declines, on the live cluster (`ferroscale::descheduler::declined`),
//! against the loopback Kubernetes API: a `DeschedulingDeclined` Event on the pod naming the strategy and
//! the reason, written once while the reason stays the same (a steady cluster declines the same proposals
//! every cycle) and again when it changes; none for pods the evictor keeps; the gauge
//! `ferroscale_descheduling_declined_pods` by reason, following the last cycle.

use std::sync::Arc;
use std::time::Duration;

use crate::run_deschedule::{cluster, indexed, policy, settings};
use crate::support::kube_api::KubeApi;
use ferroscale::deschedule::{Blocked, Declined, Kept, Plan, Strategy, Why};
use ferroscale::descheduler::Descheduler;
use ferroscale::engine::predicates::Unfit;
use ferroscale::k8s::events::Events;
use ferroscale::metrics::Metrics;
use ferroscale::model::TaintEffect;
use ferroscale::time::unix_now as now;

/// The event writes (events.k8s.io creates and patches: a repeated event is a patch of its series)
/// the API has seen.
fn event_writes(api: &KubeApi) -> usize {
    api.requests()
        .iter()
        .filter(|r| {
            (r.starts_with("POST ") || r.starts_with("PATCH "))
                && r.contains("/apis/events.k8s.io/")
        })
        .count()
}

/// The sample of `ferroscale_descheduling_declined_pods` for RemoveDuplicates with `reason` (and,
/// for `NoPlace`, a blocking filter), if any.
fn declined_sample(metrics: &Metrics, reason: &str, filter: &str) -> Option<String> {
    let want = format!(
        "ferroscale_descheduling_declined_pods{{strategy=\"RemoveDuplicates\",profile=\"default\",reason=\"{reason}\",filter=\"{filter}\"}} "
    );
    metrics
        .encode()
        .lines()
        .find(|l| l.starts_with(&want))
        .map(|l| l[want.len()..].to_string())
}

#[tokio::test]
async fn a_declined_proposal_gets_one_event_naming_the_strategy_and_reason_until_the_reason_changes(
) {
    let api = cluster(1).await;
    let (_watches, index) = indexed(&api).await;
    let metrics = Arc::new(Metrics::default().with_descheduler());
    let client = api.client();
    let events = Events::start(&client, "test-replica");
    let mut d = Descheduler::new(
        settings(policy(&[Strategy::RemoveDuplicates])),
        client,
        events.clone(),
        metrics.descheduler.clone().unwrap(),
    );
    // RemoveDuplicates proposed web-1 and web-2; the plan declines them.
    let declining = |web_1: Why, web_2: Why| Plan {
        declined: [("web-1", web_1), ("web-2", web_2)]
            .into_iter()
            .map(|(name, why)| Declined {
                pod: index
                    .pods
                    .get(&format!("default/{name}"))
                    .unwrap()
                    .0
                    .clone(),
                node: "pool-b".into(),
                strategy: Strategy::RemoveDuplicates,
                profile: "default".into(),
                why,
            })
            .collect(),
        ..Default::default()
    };
    // web-1's zonal volume keeps it off three nodes, a taint off the fourth.
    let blocked = || {
        let taint = Unfit::Taint {
            key: "dedicated".into(),
            value: "batch".into(),
            effect: TaintEffect::NoSchedule,
        };
        let zone = Unfit::VolumeZone("data-web-1".into());
        Why::NoPlace(Blocked::of([zone.clone(), taint, zone.clone(), zone]))
    };
    let t = now();
    let plan = declining(blocked(), Why::Kept(Kept::DoNotDisrupt));
    let done = d.carry_out(&index, &plan, t).await;
    assert_eq!(done.declined, 2);
    assert!(done.evicted.is_empty());
    assert!(events.flushed(Duration::from_secs(10)).await);
    // web-1's reason, on web-1; nothing on web-2, which the evictor keeps (counted all the same).
    let declined = api.events("DeschedulingDeclined");
    assert_eq!(declined.len(), 1, "{declined:?}");
    let (regarding, note) = &declined[0];
    assert_eq!(regarding, "web-1");
    assert!(
        note.contains("RemoveDuplicates")
            && note.contains("pool-b")
            && note.contains("no other node can take it")
            && note.contains("volume zone conflict: pvc data-web-1 on 3 nodes (VolumeZone)")
            && note.contains("on 1 node (TaintToleration)"),
        "{note}"
    );
    // Counted under each filter that blocked it.
    for filter in ["VolumeZone", "TaintToleration"] {
        let n = declined_sample(&metrics, "NoPlace", filter);
        assert_eq!(n.as_deref(), Some("1"), "{filter}");
    }
    assert_eq!(declined_sample(&metrics, "Kept", "").as_deref(), Some("1"));
    let writes = event_writes(&api);
    assert_eq!(writes, 1);

    // The next cycle declines both again for the same reasons: nothing more is written.
    let plan = declining(blocked(), Why::Kept(Kept::DoNotDisrupt));
    d.carry_out(&index, &plan, t + 300).await;
    assert!(events.flushed(Duration::from_secs(10)).await);
    assert_eq!(event_writes(&api), writes);
    assert_eq!(api.events("DeschedulingDeclined").len(), 1);

    // A new reason is said once more; the gauge follows the last cycle only.
    let budget = Why::Budget {
        pdb: "default/web".into(),
    };
    let plan = declining(budget, Why::Kept(Kept::DoNotDisrupt));
    d.carry_out(&index, &plan, t + 600).await;
    assert!(events.flushed(Duration::from_secs(10)).await);
    let declined = api.events("DeschedulingDeclined");
    assert_eq!(declined.len(), 2, "{declined:?}");
    assert!(
        declined
            .iter()
            .any(|(pod, note)| pod == "web-1" && note.contains("PodDisruptionBudget default/web")),
        "{declined:?}"
    );
    assert_eq!(
        declined_sample(&metrics, "Budget", "").as_deref(),
        Some("1")
    );
    assert_eq!(declined_sample(&metrics, "NoPlace", "VolumeZone"), None);
}

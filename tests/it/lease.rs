//! Leader election on a Lease against the loopback API: of replicas racing for a free Lease exactly one
//! wins; a write from a stale read conflicts and changes nothing; a follower takes over only after the
//! leader stopped renewing for the lease duration; a leader that finds another holder steps down.

use std::sync::Arc;
use std::time::Duration;

use ferroscale::k8s::lease::{Elector, Fence, LeaseSettings, Term};
use serde_json::json;

use crate::support::kube_api::{KubeApi, LEASES};

fn elector(api: &KubeApi, identity: &str, lease_duration: Duration) -> Elector {
    Elector::new(
        api.client(),
        LeaseSettings {
            namespace: "kube-system".into(),
            name: "cluster-autoscaler".into(),
            identity: identity.into(),
            lease_duration,
            renew_deadline: lease_duration / 2,
            retry_period: Duration::from_millis(100),
        },
    )
}

fn holder(api: &KubeApi) -> Option<String> {
    api.get(LEASES, "kube-system", "cluster-autoscaler")
        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(String::from))
}

#[tokio::test]
async fn of_replicas_racing_for_a_free_lease_exactly_one_leads() {
    let api = KubeApi::start().await;
    let electors: Vec<Arc<Elector>> = (0..5)
        .map(|i| {
            Arc::new(elector(
                &api,
                &format!("replica-{i}"),
                Duration::from_secs(15),
            ))
        })
        .collect();
    let won: Vec<bool> = race(&electors).await;
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    let leader = won.iter().position(|w| *w).unwrap();
    assert_eq!(
        holder(&api).as_deref(),
        Some(format!("replica-{leader}").as_str())
    );
    // The next round: the leader renews, the others still follow.
    let again: Vec<bool> = race(&electors).await;
    assert_eq!(again.iter().position(|w| *w), Some(leader));
    assert_eq!(again.iter().filter(|w| **w).count(), 1);
}

/// Every elector tries at once, each on its own task.
async fn race(electors: &[Arc<Elector>]) -> Vec<bool> {
    let handles: Vec<_> = electors
        .iter()
        .map(|e| {
            let e = e.clone();
            tokio::spawn(async move { e.try_acquire_or_renew().await })
        })
        .collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap().unwrap());
    }
    out
}

#[tokio::test]
async fn a_write_from_a_stale_read_conflicts_and_changes_nothing() {
    let api = KubeApi::start().await;
    let a = elector(&api, "a", Duration::from_secs(15));
    assert!(a.try_acquire_or_renew().await.unwrap());
    let stale = a.read().await.unwrap();
    // Meanwhile someone else writes the Lease.
    api.update(
        LEASES,
        "kube-system",
        "cluster-autoscaler",
        json!({"spec": {"holderIdentity": "b"}}),
    );
    assert!(
        !a.write(stale).await.unwrap(),
        "a stale renewal must not win"
    );
    assert_eq!(holder(&api).as_deref(), Some("b"));
    assert!(api.requests().iter().any(|r| r.starts_with(
        "PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/cluster-autoscaler"
    )));
}

#[tokio::test]
async fn a_follower_takes_over_only_after_the_leader_stops_renewing() {
    let api = KubeApi::start().await;
    let a = elector(&api, "a", Duration::from_secs(1));
    let b = elector(&api, "b", Duration::from_secs(1));
    assert!(a.try_acquire_or_renew().await.unwrap());
    assert!(!b.try_acquire_or_renew().await.unwrap());
    // a keeps renewing: b waits however long it tries.
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(a.try_acquire_or_renew().await.unwrap());
        assert!(!b.try_acquire_or_renew().await.unwrap());
    }
    // a stops; a lease duration later, as b measures it, b takes the Lease.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(b.try_acquire_or_renew().await.unwrap());
    let lease = api
        .get(LEASES, "kube-system", "cluster-autoscaler")
        .unwrap();
    assert_eq!(lease["spec"]["holderIdentity"], "b");
    assert_eq!(lease["spec"]["leaseTransitions"], 1);
    assert!(
        !a.try_acquire_or_renew().await.unwrap(),
        "a finds b holding it"
    );
}

#[tokio::test]
async fn a_leader_that_finds_another_holder_steps_down() {
    let api = KubeApi::start().await;
    let a = Arc::new(elector(&api, "a", Duration::from_secs(2)));
    let (tx, mut leading) = tokio::sync::watch::channel(Term::Over);
    let task = tokio::spawn({
        let a = a.clone();
        async move { a.lead(tx).await }
    });
    leading.wait_for(|t| t.leads()).await.unwrap();
    api.update(
        LEASES,
        "kube-system",
        "cluster-autoscaler",
        json!({"spec": {"holderIdentity": "intruder"}}),
    );
    let outcome = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the leader notices within a few retry periods")
        .unwrap();
    let err = outcome.unwrap_err().to_string();
    assert!(err.contains("leadership lost"), "{err}");
    assert_eq!(*leading.borrow(), Term::Over);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leadership_ends_at_the_renew_deadline_not_after_a_retry_sleep() {
    let api = KubeApi::start().await;
    // A retry period close to the renew deadline: a loop that noticed the end only after its sleep
    // would lead for most of another retry period.
    let a = Arc::new(Elector::new(
        api.client(),
        LeaseSettings {
            namespace: "kube-system".into(),
            name: "cluster-autoscaler".into(),
            identity: "a".into(),
            lease_duration: Duration::from_secs(2),
            renew_deadline: Duration::from_secs(1),
            retry_period: Duration::from_millis(800),
        },
    ));
    let (tx, mut term) = tokio::sync::watch::channel(Term::Over);
    let fence = Fence::following(term.clone());
    let task = tokio::spawn({
        let a = a.clone();
        async move { a.lead(tx).await }
    });
    term.wait_for(|t| t.leads()).await.unwrap();
    // Renewals fail at once from now on. Each one that succeeded started before the API received it:
    // a renew deadline after the latest of those, the term is over, whatever the loop is doing.
    let writes = "PUT /apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
    let refused = std::time::Instant::now();
    api.refuse(Some(writes));
    // The Lease's creation is its first renewal.
    let last = [
        writes,
        "POST /apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
    ]
    .iter()
    .filter_map(|w| api.last_received(w, refused))
    .max()
    .expect("the Lease was written");
    tokio::time::sleep_until((last + Duration::from_secs(1)).into()).await;
    assert!(!fence.leads(), "leading past the renew deadline");
    assert!(fence.check("resizing").is_err());
    let outcome = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the elector gives up")
        .unwrap();
    assert!(outcome.unwrap_err().to_string().contains("leadership lost"));
    assert_eq!(*term.borrow(), Term::Over);
}

//! Each rule both ways, and the order between them.

use std::time::Duration;

use super::*;
use crate::fixtures::{pdb, pod, PodBuilder};

const NOW: i64 = 100_000;

/// A pod `<ns>/p` of app `p`, created a minute ago, owned by nothing yet.
fn recent(ns: &str) -> PodBuilder {
    pod(ns, "p").label("app", "p").created(NOW - 60)
}

fn blocked(d: Drain) -> Blocker {
    match d {
        Drain::Block(b) => b,
        other => panic!("not blocked: {other:?}"),
    }
}

#[test]
fn safe_to_evict_wins_over_every_blocking_rule_and_false_blocks() {
    let s = Settings::upstream();
    let mut p = recent("kube-system").build();
    p.meta.local_volumes = thin_vec::thin_vec!["scratch".into()];
    p.meta.safe_to_evict = Some(SafeToEvict::Yes);
    assert_eq!(
        drainability(&p, &[pdb("kube-system", "guard", "p", 0)], &s, NOW),
        Drain::Move
    );
    p.meta.safe_to_evict = Some(SafeToEvict::No);
    p.meta.controller = Some("ReplicaSet".into());
    p.namespace = "a".into();
    p.meta.local_volumes.clear();
    assert!(matches!(
        blocked(drainability(&p, &[], &s, NOW)),
        Blocker::NotSafeToEvict { .. }
    ));
    p.meta.safe_to_evict = Some(SafeToEvict::OnCompletion);
    assert_eq!(drainability(&p, &[], &s, NOW), Drain::Wait);
}

#[test]
fn mirror_daemonset_and_long_terminating_pods_stay() {
    let s = Settings::upstream();
    let mut p = recent("a").build();
    p.meta.mirror = true;
    assert_eq!(drainability(&p, &[], &s, NOW), Drain::Stay);
    let ds = recent("kube-system").controller("DaemonSet").build();
    assert_eq!(drainability(&ds, &[], &s, NOW), Drain::Stay);
    let mut t = recent("a").build();
    t.meta.grace_period = Some(10);
    // Deleted 40s ago: 10s grace + 30s is not past yet; 41s ago it is.
    t.meta.deleted = Some(NOW - 40);
    assert!(matches!(
        blocked(drainability(&t, &[], &s, NOW)),
        Blocker::NotReplicated { owner: None, .. }
    ));
    t.meta.deleted = Some(NOW - 41);
    assert_eq!(drainability(&t, &[], &s, NOW), Drain::Stay);
    t.meta.grace_period = None;
    assert!(!long_terminating(&t, NOW), "30s by default: 41 < 60");
}

#[test]
fn custom_controllers_block_only_with_the_flag() {
    let mut s = Settings::upstream();
    let p = recent("a").controller("Foo").build();
    assert_eq!(
        blocked(drainability(&p, &[], &s, NOW)),
        Blocker::NotReplicated {
            pod: "a/p".into(),
            owner: Some("Foo".into())
        }
    );
    s.skip_nodes_with_custom_controller_pods = false;
    assert_eq!(drainability(&p, &[], &s, NOW), Drain::Move);
    assert!(matches!(
        blocked(drainability(&recent("a").build(), &[], &s, NOW)),
        Blocker::NotReplicated { owner: None, .. }
    ));
}

#[test]
fn min_replica_count_applies_to_known_replica_sets_with_custom_controllers_skipped() {
    let mut s = Settings::upstream();
    s.min_replica_count = 3;
    let mut p = recent("a").controller("ReplicaSet").build();
    assert_eq!(
        drainability(&p, &[], &s, NOW),
        Drain::Move,
        "replicas unknown"
    );
    p.meta.owner_replicas = Some(2);
    assert!(matches!(
        blocked(drainability(&p, &[], &s, NOW)),
        Blocker::MinReplicas {
            replicas: 2,
            min: 3,
            ..
        }
    ));
    p.meta.owner_replicas = Some(3);
    assert_eq!(drainability(&p, &[], &s, NOW), Drain::Move);
    p.meta.owner_replicas = Some(2);
    s.skip_nodes_with_custom_controller_pods = false;
    assert_eq!(drainability(&p, &[], &s, NOW), Drain::Move);
}

#[test]
fn system_pods_block_until_the_timeout_after_their_creation() {
    let mut s = Settings::upstream();
    let mut p = recent("kube-system").controller("ReplicaSet").build();
    p.meta.created = NOW - 3600;
    assert!(matches!(
        blocked(drainability(&p, &[], &s, NOW)),
        Blocker::SystemPodWithoutBudget { .. }
    ));
    p.meta.created = NOW - 3601;
    assert_eq!(drainability(&p, &[], &s, NOW), Drain::Move);
    p.meta.created = 0;
    assert!(
        matches!(drainability(&p, &[], &s, NOW), Drain::Block(_)),
        "no creation time: never"
    );
    // Past the timeout the system rule finds the pod drainable and the rules after it are not asked
    // (upstream: the system rule's drainable status ends the chain).
    p.meta.created = NOW - 7200;
    p.meta.local_volumes = thin_vec::thin_vec!["v".into()];
    assert_eq!(drainability(&p, &[], &s, NOW), Drain::Move);
    p.meta.safe_to_evict = Some(SafeToEvict::No);
    assert_eq!(drainability(&p, &[], &s, NOW), Drain::Move);
    p.meta.safe_to_evict = None;
    s.blocking_system_pod_disruption_timeout = Duration::from_secs(86_400);
    assert!(matches!(
        drainability(&p, &[], &s, NOW),
        Drain::Block(Blocker::SystemPodWithoutBudget { .. })
    ));
    // With a budget it is no system blocker; the budget decides.
    assert_eq!(
        blocked(drainability(
            &p,
            &[pdb("kube-system", "guard", "p", 1)],
            &s,
            NOW
        )),
        Blocker::LocalStorage {
            pod: "kube-system/p".into(),
            volume: "v".into()
        }
    );
    s.skip_nodes_with_system_pods = false;
    s.skip_nodes_with_local_storage = false;
    assert_eq!(drainability(&p, &[], &s, NOW), Drain::Move);
}

#[test]
fn local_volumes_named_safe_do_not_block() {
    let s = Settings::upstream();
    let mut p = recent("a").controller("StatefulSet").build();
    p.meta.local_volumes = thin_vec::thin_vec!["cache".into(), "tmp".into()];
    p.meta.safe_local_volumes = thin_vec::thin_vec!["cache".into()];
    assert_eq!(
        blocked(drainability(&p, &[], &s, NOW)),
        Blocker::LocalStorage {
            pod: "a/p".into(),
            volume: "tmp".into()
        }
    );
    p.meta.safe_local_volumes.push("tmp".into());
    assert_eq!(drainability(&p, &[], &s, NOW), Drain::Move);
}

#[test]
fn any_covering_budget_without_disruptions_blocks() {
    let s = Settings::upstream();
    let p = recent("a").controller("Job").build();
    let mut other = pdb("a", "guard", "p", 0);
    other.name = "second".into();
    assert_eq!(
        drainability(&p, &[pdb("a", "guard", "p", 2)], &s, NOW),
        Drain::Move
    );
    assert_eq!(
        blocked(drainability(
            &p,
            &[pdb("a", "guard", "p", 2), other],
            &s,
            NOW
        )),
        Blocker::Budget {
            pod: "a/p".into(),
            namespace: "a".into(),
            name: "second".into()
        }
    );
    assert_eq!(
        drainability(&p, &[pdb("b", "guard", "p", 0)], &s, NOW),
        Drain::Move,
        "other namespace"
    );
}

mod classes {
    use super::*;
    use crate::engine::drainability::class::classify;
    use proptest::prelude::*;

    prop_compose! {
        fn any_pod()(
            ns in prop_oneof![Just("kube-system"), Just("shop")],
            owner in prop_oneof![
                Just(None),
                Just(Some("ReplicaSet")),
                Just(Some("ReplicationController")),
                Just(Some("Job")),
                Just(Some("DaemonSet")),
                Just(Some("Custom")),
            ],
            replicas in proptest::option::of(0i32..4),
            mirror in any::<bool>(),
            annotated_daemon in any::<bool>(),
            deleted in proptest::option::of(NOW - 200..NOW + 10),
            grace in proptest::option::of(0i64..120),
            safe in prop_oneof![
                Just(None),
                Just(Some(SafeToEvict::Yes)),
                Just(Some(SafeToEvict::No)),
                Just(Some(SafeToEvict::OnCompletion)),
            ],
            local in any::<bool>(),
            local_safe in any::<bool>(),
            created in prop_oneof![Just(0i64), Just(NOW - 60), Just(NOW - 100_000)],
        ) -> Pod {
            let mut p = recent(ns).created(created).build();
            p.meta.controller = owner.map(|o| o.to_string().into());
            p.meta.owner_replicas = replicas;
            p.meta.mirror = mirror;
            p.meta.daemon_set_annotation = annotated_daemon;
            p.meta.deleted = deleted;
            p.meta.grace_period = grace;
            p.meta.safe_to_evict = safe;
            if local {
                p.meta.local_volumes = thin_vec::thin_vec!["scratch".into()];
                if local_safe {
                    p.meta.safe_local_volumes = thin_vec::thin_vec!["scratch".into()];
                }
            }
            p
        }
    }

    proptest! {
        /// A pod's kept class never contradicts the rules: whatever the budgets and the time, a
        /// class that decides gives the rules' answer, and one that leaves the budgets to read moves
        /// when there are none.
        #[test]
        fn a_class_agrees_with_the_rules(
            p in any_pod(),
            flags in any::<(bool, bool, bool)>(),
            min in 0i32..4,
            budget in proptest::option::of(0i32..2),
            later in 0i64..200_000,
        ) {
            let mut s = Settings::upstream();
            s.skip_nodes_with_custom_controller_pods = flags.0;
            s.skip_nodes_with_system_pods = flags.1;
            s.skip_nodes_with_local_storage = flags.2;
            s.min_replica_count = min;
            let pdbs: Vec<Pdb> = budget
                .map(|n| pdb(p.namespace.as_str(), "guard", "p", n))
                .into_iter()
                .collect();
            let class = classify(&p, &rules(&s));
            let now = NOW + later % 3 * later;
            let drain = drainability(&p, &pdbs, &s, now);
            match class {
                Class::Stay => prop_assert_eq!(drain, Drain::Stay),
                Class::Move => prop_assert_eq!(drain, Drain::Move),
                Class::Wait => prop_assert_eq!(drain, Drain::Wait),
                Class::Block => prop_assert!(matches!(drain, Drain::Block(_))),
                Class::Budgets => {
                    let budgets_only = matches!(drain, Drain::Move | Drain::Block(Blocker::Budget { .. }));
                    prop_assert!(budgets_only, "{:?}", drain);
                    prop_assert_eq!(drainability(&p, &[], &s, now), Drain::Move);
                }
                Class::Again => prop_assert!(
                    p.meta.deleted.is_some() || p.namespace == "kube-system"
                ),
            }
        }
    }
}

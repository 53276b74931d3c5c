//! The rest of `TestTopologySpreadConstraint`'s cases (see the parent module), and argument checks.

use super::*;

fn tainted_b(effect: TaintEffect) -> Vec<Node> {
    vec![
        zone_node("n1", "zoneA"),
        test_node("n2", 2000, 3000, 10)
            .label("zone", "zoneB")
            .taint(taint("taint-test", "test", effect))
            .build(),
    ]
}

#[test]
fn two_domains_sizes_2_0_move_1_pod_since_pod_tolerates_the_node_with_taint() {
    let tolerant = G {
        tolerations: vec![toleration("taint-test", "test", TaintEffect::NoSchedule)],
        ..g(1, "n1").spread(zone(1))
    };
    let groups = [tolerant, g(1, "n1").select("zone", "zoneA")];
    let got = balance(
        tainted_b(TaintEffect::NoSchedule),
        &groups,
        default(),
        false,
    );
    assert_eq!(got, ["pod-0"]);
}

/// Also "..., and NodeFit is enabled": `topologyBalanceNodeFit` already keeps it.
#[test]
fn two_domains_sizes_2_0_move_0_pods_since_pod_does_not_tolerate_the_tainted_node() {
    let groups = [
        g(1, "n1").spread(zone(1)),
        g(1, "n1").select("zone", "zoneA"),
    ];
    let nodes = tainted_b(TaintEffect::NoSchedule);
    assert!(balance(nodes.clone(), &groups, default(), false).is_empty());
    assert!(balance(nodes, &groups, default(), true).is_empty());
}

#[test]
fn two_domains_sizes_2_0_move_1_pod_for_node_with_prefer_no_schedule_taint() {
    let groups = [
        g(1, "n1").spread(zone(1)),
        g(1, "n1").select("zone", "zoneA"),
    ];
    let got = balance(
        tainted_b(TaintEffect::PreferNoSchedule),
        &groups,
        default(),
        false,
    );
    assert_eq!(got, ["pod-0"]);
}

fn filtered(op: SelectorOp, value: &str) -> PluginArgs {
    args(|a| {
        a.label_selector = Some(crate::deschedule::args::Selector {
            match_expressions: vec![crate::deschedule::args::Expression {
                key: "foo".into(),
                operator: format!("{op:?}"),
                values: vec![value.into()],
            }],
            ..Default::default()
        })
    })
}

#[test]
fn two_domains_sizes_2_0_move_0_pod_for_node_with_unmatched_label_filtering() {
    let groups = [g(1, "n1").spread(zone(1)), g(1, "n1")];
    assert!(balance(two_zones(), &groups, filtered(SelectorOp::In, "baz"), false).is_empty());
}

#[test]
fn two_domains_sizes_2_0_move_1_pod_for_node_with_matched_label_filtering() {
    let groups = [g(1, "n1").spread(zone(1)), g(1, "n1")];
    let got = balance(two_zones(), &groups, filtered(SelectorOp::In, "bar"), false);
    assert_eq!(got, ["pod-1"]);
}

#[test]
fn two_domains_sizes_2_0_move_1_pod_for_node_with_matched_label_filtering_not_in_op() {
    let groups = [g(1, "n1").spread(zone(1)), g(1, "n1")];
    let got = balance(
        two_zones(),
        &groups,
        filtered(SelectorOp::NotIn, "baz"),
        false,
    );
    assert_eq!(got, ["pod-1"]);
}

/// `matchLabelKeys: [pod-template-hash]`, merged into the selector as the converter does.
fn hashed(hash: &'static str) -> G {
    let mut c = zone(1);
    c.selector
        .match_labels
        .insert("pod-template-hash".into(), hash.into());
    G {
        labels: vec![("foo", "bar"), ("pod-template-hash", hash)],
        ..g(1, "n1").spread(c)
    }
}

#[test]
fn two_domains_sizes_2_0_move_1_pods_given_match_label_keys_on_same_replicaset() {
    let groups = [hashed("foo"), hashed("foo")];
    let got = balance(
        two_zones(),
        &groups,
        filtered(SelectorOp::NotIn, "baz"),
        false,
    );
    assert_eq!(got, ["pod-1"]);
}

#[test]
fn two_domains_sizes_2_0_move_0_pods_given_match_label_keys_on_two_different_replicasets() {
    let groups = [hashed("foo"), hashed("bar")];
    let got = balance(
        two_zones(),
        &groups,
        filtered(SelectorOp::NotIn, "baz"),
        false,
    );
    assert!(got.is_empty());
}

#[test]
fn two_domains_sizes_4_2_max_skew_1_2_pods_in_termination_nothing_should_be_moved() {
    let dying = G {
        deleted: true,
        ..g(2, "n1").spread(zone(1))
    };
    let groups = [
        g(2, "n1").spread(zone(1)),
        dying,
        g(2, "n2").spread(zone(1)),
    ];
    let got = balance(two_zones(), &groups, filtered(SelectorOp::In, "bar"), false);
    assert!(got.is_empty());
}

fn small_a() -> Vec<Node> {
    vec![
        test_node("n1", 250, 2000, 9).label("zone", "zoneA").build(),
        test_node("n2", 1000, 2000, 9)
            .label("zone", "zoneB")
            .build(),
        test_node("n3", 1000, 2000, 9)
            .label("zone", "zoneC")
            .build(),
    ]
}

#[test]
fn three_domains_sizes_2_3_4_node_fit_enabled_not_enough_cpu_on_zone_a_nothing_should_be_moved() {
    let groups = [
        g(2, "n1").spread(zone(1)),
        g(3, "n2").spread(zone(1)),
        g(4, "n3").spread(zone(1)),
    ];
    assert!(balance(small_a(), &groups, default(), true).is_empty());
}

/// The descheduler evicts one "to force scale-up"; ferroscale proposes it (as
/// `topologyBalanceNodeFit: false` asks) but no node takes it now: the scheduler's spread filter keeps
/// it off zoneB and zoneA has no cpu left, so the plan declines it.
#[test]
fn three_domains_sizes_2_3_4_topology_balance_node_fit_false_not_enough_cpu_on_zone_a_1_should_be_moved(
) {
    let groups = [
        g(2, "n1").spread(zone(1)),
        g(3, "n2").spread(zone(1)),
        g(4, "n3").spread(zone(1)),
    ];
    let a = args(|a| a.topology_balance_node_fit = false);
    assert_eq!(balance(small_a(), &groups, a.clone(), false).len(), 1);
    assert!(balance(small_a(), &groups, a, true).is_empty());
}

#[test]
fn three_domains_sizes_1_0_1_1_2_1_node_fit_enabled_not_enough_cpu_on_zone_a_nothing_should_be_moved(
) {
    let nodes = vec![
        test_node("A1", 150, 2000, 9).label("zone", "zoneA").build(),
        test_node("B1", 1000, 2000, 9)
            .label("zone", "zoneB")
            .build(),
        test_node("C1", 1000, 2000, 9)
            .label("zone", "zoneC")
            .build(),
        test_node("A2", 50, 2000, 9).label("zone", "zoneA").build(),
        test_node("B2", 1000, 2000, 9)
            .label("zone", "zoneB")
            .build(),
        test_node("C2", 1000, 2000, 9)
            .label("zone", "zoneC")
            .build(),
    ];
    let groups = [
        g(1, "A1").spread(zone(1)),
        g(1, "B1").spread(zone(1)),
        g(1, "B2").spread(zone(1)),
        g(2, "C1").spread(zone(1)),
        g(1, "C2").spread(zone(1)),
    ];
    assert!(balance(nodes, &groups, default(), true).is_empty());
}

#[test]
fn two_domains_sizes_1_4_2_1_node_fit_enabled_should_move_1() {
    let nodes = vec![
        test_node("A1", 1000, 2000, 9)
            .label("zone", "zoneA")
            .build(),
        test_node("A2", 1000, 2000, 9)
            .label("zone", "zoneA")
            .build(),
        test_node("B1", 1000, 2000, 9)
            .label("zone", "zoneB")
            .build(),
        test_node("B2", 1000, 2000, 9)
            .label("zone", "zoneB")
            .build(),
    ];
    let groups = [
        g(1, "A1").spread(zone(1)),
        g(4, "A2").spread(zone(1)),
        g(2, "B1").spread(zone(1)),
        g(1, "B2").spread(zone(1)),
    ];
    let got = balance(nodes, &groups, default(), true);
    assert_eq!(got, ["pod-4"]);
}

/// Not an upstream case: `ScheduleAnyway` alone leaves `DoNotSchedule` constraints alone; unknown
/// values are refused, naming them.
#[test]
fn schedule_anyway_alone_balances_no_do_not_schedule_constraint() {
    let groups = [g(1, "n1").spread(zone(1)), g(2, "n1"), g(1, "n2")];
    let a = RemovePodsViolatingTopologySpreadConstraintArgs {
        constraints: vec![WhenUnsatisfiable::ScheduleAnyway],
        ..Default::default()
    };
    let p = PluginArgs::RemovePodsViolatingTopologySpreadConstraint(a);
    assert!(balance(two_zones(), &groups, p, false).is_empty());
    let bad = serde_norway::from_str::<RemovePodsViolatingTopologySpreadConstraintArgs>(
        "constraints: [Sometimes]\n",
    );
    assert!(bad.unwrap_err().to_string().contains("Sometimes"));
}

/// Upstream: the plugin's `defaults_test.go` (its five cases): `topologyBalanceNodeFit` defaults to
/// true and `constraints` to `[DoNotSchedule]`; values written are kept.
#[test]
fn defaults_as_the_descheduler() {
    let read = |text: &str| {
        let a: RemovePodsViolatingTopologySpreadConstraintArgs =
            serde_norway::from_str(text).unwrap();
        (a.constraints, a.topology_balance_node_fit)
    };
    use WhenUnsatisfiable::{DoNotSchedule, ScheduleAnyway};
    assert_eq!(read("{}"), (vec![DoNotSchedule], true));
    assert_eq!(
        read("constraints: [DoNotSchedule, ScheduleAnyway]\n"),
        (vec![DoNotSchedule, ScheduleAnyway], true)
    );
    assert_eq!(
        read("namespaces: {include: [default]}\n"),
        (vec![DoNotSchedule], true)
    );
    assert_eq!(
        read("topologyBalanceNodeFit: false\n"),
        (vec![DoNotSchedule], false)
    );
    let (nil, fit) = read("constraints: null\n");
    assert!(nil.is_empty() && fit, "nil: balanced as [DoNotSchedule]");
}

/// Upstream: the plugin's `validation_test.go` (its six cases); an unknown constraint is refused
/// when the arguments are read, naming it.
#[test]
fn validation_as_the_descheduler() {
    let (valid, invalid) = validation_selectors();
    let base = RemovePodsViolatingTopologySpreadConstraintArgs::default;
    let with_ns = |both| RemovePodsViolatingTopologySpreadConstraintArgs {
        namespaces: Some(validation_namespaces(both)),
        ..base()
    };
    assert_eq!(with_ns(false).validate(), Ok(()));
    assert!(with_ns(true)
        .validate()
        .unwrap_err()
        .to_string()
        .contains("namespaces"));
    let with_sel = |s| RemovePodsViolatingTopologySpreadConstraintArgs {
        label_selector: Some(s),
        ..base()
    };
    assert_eq!(with_sel(valid).validate(), Ok(()));
    assert!(with_sel(invalid)
        .validate()
        .unwrap_err()
        .to_string()
        .contains("labelSelector"));
    let both: RemovePodsViolatingTopologySpreadConstraintArgs =
        serde_norway::from_str("constraints: [DoNotSchedule, ScheduleAnyway]\n").unwrap();
    assert_eq!(both.validate(), Ok(()));
    let bad = serde_norway::from_str::<RemovePodsViolatingTopologySpreadConstraintArgs>(
        "constraints: [foo]\n",
    );
    assert!(bad.unwrap_err().to_string().contains("foo"));
}

/// Upstream: `TestSortDomains`, "domain with pods having different selector/affinity" and the
/// evictable pods of "multiple domains with different priorities and selectors" and "single domain
/// with mixed pods" (non-evictable pods never reach the sort here: they are not counted): pods with a
/// node selector or affinity first, then by priority, lower first.
#[test]
fn sort_domains_as_the_descheduler() {
    let p = |name: &str, priority: i32, pinned: bool| {
        let mut b = pod("ns1", name).priority(priority);
        if pinned {
            b = b.with(|p| p.node_affinity = vec![vec![req("a", SelectorOp::Exists, &[])]]);
        }
        Arc::new(b.build())
    };
    let order = |mut pods: Vec<Arc<Pod>>| {
        order_for_eviction(&mut pods);
        pods.iter().map(|p| p.name.clone()).collect::<Vec<_>>()
    };
    let got = order(vec![
        p("pod-with-affinity", 10, true),
        p("pod-no-affinity", 15, false),
    ]);
    assert_eq!(got, ["pod-with-affinity", "pod-no-affinity"]);
    let got = order(vec![
        p("high-priority-affinity", 20, false),
        p("low-priority-no-affinity", 5, false),
    ]);
    assert_eq!(got, ["low-priority-no-affinity", "high-priority-affinity"]);
    let got = order(vec![
        p("evictable-with-affinity", 10, false),
        p("evictable-high-priority", 15, false),
    ]);
    assert_eq!(got, ["evictable-with-affinity", "evictable-high-priority"]);
}

/// Upstream: `TestCheckIdenticalConstraints` (its two cases).
#[test]
fn identical_constraints_as_the_descheduler() {
    let owner = Arc::new(pod("ns1", "p").build());
    let known = Tsc {
        c: zone(2),
        pod: owner.clone(),
        soft: false,
    };
    assert!(
        known.same(&zone(2), false, &owner),
        "new constraint is identical"
    );
    assert!(
        !known.same(&node_key(3), false, &owner),
        "new constraint is different"
    );
    assert!(
        !known.same(&zone(2), true, &owner),
        "whenUnsatisfiable differs"
    );
}

#[test]
fn two_domains_sizes_3_1_max_skew_1_tainted_nodes_nothing_should_be_moved() {
    let host = |name: &str, zone: &str, host: &str| {
        test_node(name, 2000, 3000, 10)
            .label("zone", zone)
            .label("kubernetes.io/hostname", host)
    };
    let nodes = vec![
        host("controlplane1", "zoneA", "cp-1")
            .taint(taint(
                "node-role.kubernetes.io/controlplane",
                "true",
                TaintEffect::NoSchedule,
            ))
            .taint(taint(
                "node-role.kubernetes.io/etcd",
                "true",
                TaintEffect::NoSchedule,
            ))
            .build(),
        host("infraservices1", "zoneA", "infra-1")
            .label("infra_service", "true")
            .taint(taint("infra_service", "", TaintEffect::NoSchedule))
            .build(),
        host("app1", "zoneA", "app-1")
            .label("app_service", "true")
            .build(),
        host("app2", "zoneB", "app-2")
            .label("app_service", "true")
            .build(),
    ];
    let service = |node: &'static str| G {
        labels: vec![("app.kubernetes.io/name", "service")],
        spread: vec![SpreadConstraint {
            max_skew: 1,
            topology_key: "kubernetes.io/hostname".into(),
            selector: selector(&[("app.kubernetes.io/name", "service")]),
            ..Default::default()
        }],
        node_affinity: vec![vec![req("app_service", SelectorOp::Exists, &[])]],
        ..g(2, node)
    };
    let groups = [service("app1"), service("app2")];
    assert!(balance(nodes, &groups, default(), true).is_empty());
}

#[test]
fn three_domains_sizes_2_1_0_with_selectors_max_skew_1_node_affinity_policy_ignore_should_move_1() {
    let arm = |name: &str, zone: &str| {
        test_node(name, 1000, 2000, 9)
            .label("zone", zone)
            .label("kubernetes.io/arch", "arm64")
            .build()
    };
    let nodes = vec![arm("A1", "zoneA"), arm("B1", "zoneB"), arm("C1", "zoneC")];
    let ignoring = SpreadConstraint {
        ignore_node_affinity: true,
        ..zone(1)
    };
    let on = |node: &'static str| {
        g(1, node)
            .spread(ignoring.clone())
            .select("kubernetes.io/arch", "arm64")
    };
    let groups = [on("A1"), on("A1").select("zone", "zoneA"), on("B1")];
    assert_eq!(balance(nodes, &groups, default(), false), ["pod-0"]);
}

proptest::proptest! {
    /// Taking the pods to move while asking only what is needed gives what the descheduler's stable
    /// sort (fitting pods last) then slicing gives.
    #[test]
    fn last_to_move_is_the_stable_sort_then_slice(
        fits in proptest::collection::vec(proptest::bool::ANY, 0..12),
        take in 0usize..13,
    ) {
        let moving = take.min(fits.len());
        let pods: Vec<Arc<Pod>> = (0..fits.len())
            .map(|k| Arc::new(pod("ns1", format!("p{k}")).build()))
            .collect();
        let fit_of = |p: &Pod| fits[p.name[1..].parse::<usize>().unwrap()];
        let mut sorted = pods.clone();
        sorted.sort_by_key(|p| fit_of(p));
        let want_moved = sorted.split_off(sorted.len() - moving);
        let (rest, moved) = last_to_move(pods, moving, &mut |p: &Pod| fit_of(p));
        let key = |v: &[Arc<Pod>]| v.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
        proptest::prop_assert_eq!(key(&moved), key(&want_moved));
        let mut left = key(&rest);
        left.sort();
        let mut want_left = key(&sorted);
        want_left.sort();
        proptest::prop_assert_eq!(left, want_left);
    }
}

/// Not an upstream case, where ferroscale must not do what the descheduler does: the pods to move
/// require pod affinity to a cache that runs only in their crowded zone. The descheduler's node fit
/// does not check pod affinity, so it moves them to zoneB, where they cannot be scheduled. The
/// scheduler's filters keep them.
#[test]
fn pods_bound_by_pod_affinity_to_their_zone_are_not_moved() {
    let cache = pod("ns1", "cache")
        .on("n1")
        .owner("ReplicaSet", "cache")
        .label("app", "cache")
        .build();
    let near_cache = crate::model::workload::PodAffinityTerm {
        selector: selector(&[("app", "cache")]),
        topology_key: "zone".into(),
        ..Default::default()
    };
    let mut pods = create(&[g(4, "n1").spread(zone(1))]);
    for p in &mut pods {
        p.affinity = thin_vec::thin_vec![near_cache.clone()];
    }
    pods.push(cache);
    let p = run(default(), two_zones(), pods, EvictorArgs::default());
    assert!(p.is_empty(), "{:?}", names(&p));
}

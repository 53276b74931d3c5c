//! Cases of the descheduler's `defaultevictor_test.go` (`TestDefaultEvictorPreEvictionFilter`,
//! `TestDefaultEvictorFilter`, `TestGetEffectivePodProtections_TableDriven`,
//! `TestNamespaceLabelSelectorAllOperations`), each named by its test and description, plus
//! ferroscale's own protections.

use super::*;
use crate::deschedule::args::{Expression, PriorityThreshold, Selector};
use crate::deschedule::fixtures::{DeschedulerPod, Fixture};
use crate::deschedule::View;
use crate::fixtures::{labels, no_schedule, node, pdb, pod, resources, PodBuilder};
use crate::model::volumes::{Claim, ClaimState, Wait};
use crate::model::workload::{Node, PodAffinityTerm, PodPhase, Toleration, TolerationValue};
use crate::model::TaintEffect;

mod args;
mod filter;
mod upstream;

const NOW: i64 = 1_700_000_000;
const MIN: i64 = 60;

/// One case: the first pod is the one asked about.
struct Case {
    name: &'static str,
    args: EvictorArgs,
    nodes: Vec<Node>,
    pods: Vec<PodBuilder>,
    fixture: fn(&mut Fixture),
    want: Result<(), Kept>,
}

impl Case {
    fn new(name: &'static str, pods: Vec<PodBuilder>, want: Result<(), Kept>) -> Case {
        Case {
            name,
            args: EvictorArgs::default(),
            nodes: Vec::new(),
            pods,
            fixture: |_| {},
            want,
        }
    }
    fn args(mut self, f: impl FnOnce(&mut EvictorArgs)) -> Case {
        f(&mut self.args);
        self
    }
    fn nodes(mut self, nodes: Vec<Node>) -> Case {
        self.nodes = nodes;
        self
    }
    fn fixture(mut self, f: fn(&mut Fixture)) -> Case {
        self.fixture = f;
        self
    }
}

/// Runs `ask` (filter or pre_evict) on each case's first pod.
fn run(cases: Vec<Case>, ask: fn(&Evictor, &Pod) -> Result<(), Kept>) {
    for c in cases {
        let pods: Vec<Pod> = c.pods.into_iter().map(PodBuilder::build).collect();
        let asked = pods[0].clone();
        let mut f = Fixture::new(c.nodes, pods);
        f.now = NOW;
        (c.fixture)(&mut f);
        let cluster = f.cluster();
        let view = View::new(&cluster);
        let evictor = Evictor::new(&c.args, &view);
        assert_eq!(ask(&evictor, &asked), c.want, "{}", c.name);
    }
}

/// `test.BuildTestNode(name, cpu, mem, pods)`, ready.
fn tn(name: &str, cpu: i64, mem: i64, pods: i64) -> crate::fixtures::NodeBuilder {
    node(name).allocatable(resources(cpu, mem, pods)).ready()
}

/// `test.BuildTestPod(name, cpu, mem, node)` in `default`.
fn tp(name: &str, cpu: i64, mem: i64, on: &str) -> PodBuilder {
    pod("default", name)
        .requests(resources(cpu, mem, 1))
        .on(on)
        .with(|p| p.namespace_labels = labels(&[("kubernetes.io/metadata.name", "default")]).into())
}

/// `buildTestPod(name, node1)` with `test.SetNormalOwnerRef`.
fn owned(name: &str) -> PodBuilder {
    tp(name, 400, 0, "node1").owner("Pod", "")
}

fn evict_annotation(b: PodBuilder) -> PodBuilder {
    b.with(|p| p.meta.evict_annotation = true)
}

fn local_storage(b: PodBuilder) -> PodBuilder {
    b.with(|p| p.meta.local_volumes = thin_vec::thin_vec!["sample".into()])
}

fn claim(key: &str, state: ClaimState) -> Claim {
    Claim {
        key: key.into(),
        state,
        exclusive: false,
        ephemeral: false,
        class: None,
    }
}

/// A claim of `class`, not bound yet: the model knows its class.
fn of_class(key: &str, class: &str) -> Claim {
    Claim {
        class: Some(class.into()),
        ..claim(
            key,
            ClaimState::Delayed {
                class: class.into(),
                allowed: vec![],
                driver: None,
                volumes: None,
            },
        )
    }
}

fn datacenter(b: crate::fixtures::NodeBuilder) -> Node {
    b.label("datacenter", "east").build()
}

fn gpu_taint(b: crate::fixtures::NodeBuilder) -> Node {
    b.taint(no_schedule("hardware", "gpu")).build()
}

fn ns_selector() -> Option<Selector> {
    Some(Selector {
        match_labels: labels(&[("kubernetes.io/metadata.name", "test")]),
        ..Default::default()
    })
}

#[test]
fn default_evictor_pre_eviction_filter() {
    // TestDefaultEvictorPreEvictionFilter
    let fit = |a: &mut EvictorArgs| a.node_fit = true;
    let dc = |b: PodBuilder| b.with(|p| p.node_selector = labels(&[("datacenter", "east")]));
    let cases = vec![
        Case::new(
            "Pod with no tolerations running on normal node, all other nodes tainted",
            vec![owned("p1")],
            Err(Kept::NoOtherNode),
        )
        .args(fit)
        .nodes(vec![
            gpu_taint(tn("node2", 1000, 2000, 13)),
            gpu_taint(tn("node3", 1000, 2000, 13)),
        ]),
        Case::new(
            "Pod with correct tolerations running on normal node, all other nodes tainted",
            vec![owned("p1").with(|p| {
                *p.tolerations = vec![Toleration {
                    key: "hardware".into(),
                    value: Some(TolerationValue::Equal("gpu".into())),
                    effect: Some(TaintEffect::NoSchedule),
                }]
            })],
            Ok(()),
        )
        .args(fit)
        .nodes(vec![
            gpu_taint(tn("node2", 1000, 2000, 13)),
            gpu_taint(tn("node3", 1000, 2000, 13)),
        ]),
        Case::new(
            "Pod with incorrect node selector",
            vec![owned("p1").with(|p| p.node_selector = labels(&[("datacenter", "fail")]))],
            Err(Kept::NoOtherNode),
        )
        .args(fit)
        .nodes(vec![
            datacenter(tn("node2", 1000, 2000, 13)),
            datacenter(tn("node3", 1000, 2000, 13)),
        ]),
        Case::new(
            "Pod with correct node selector",
            vec![dc(owned("p1"))],
            Ok(()),
        )
        .args(fit)
        .nodes(vec![
            datacenter(tn("node2", 1000, 2000, 13)),
            datacenter(tn("node3", 1000, 2000, 13)),
        ]),
        Case::new(
            "Pod with correct node selector, but only available node doesn't have enough CPU",
            vec![dc(tp("p1", 12, 8, "node1").owner("Pod", ""))],
            Err(Kept::NoOtherNode),
        )
        .args(fit)
        .nodes(vec![
            datacenter(tn("node2-TEST", 10, 16, 10)),
            datacenter(tn("node3-TEST", 10, 16, 10)),
        ]),
        Case::new(
            "Pod with correct node selector, and one node has enough memory",
            vec![
                dc(tp("p1", 12, 8, "node1").owner("Pod", "")),
                tp("node2-pod-10GB-mem", 20, 10, "node2").label("test", "true"),
                tp("node3-pod-10GB-mem", 20, 10, "node3").label("test", "true"),
            ],
            Ok(()),
        )
        .args(fit)
        .nodes(vec![
            datacenter(tn("node2", 100, 16, 10)),
            datacenter(tn("node3", 100, 20, 10)),
        ]),
        Case::new(
            "Pod with correct node selector, but both nodes don't have enough memory",
            vec![
                dc(tp("p1", 12, 8, "node1").owner("Pod", "")),
                tp("node2-pod-10GB-mem", 10, 10, "node2").label("test", "true"),
                tp("node3-pod-10GB-mem", 10, 10, "node3").label("test", "true"),
            ],
            Err(Kept::NoOtherNode),
        )
        .args(fit)
        .nodes(vec![
            datacenter(tn("node2", 100, 16, 10)),
            datacenter(tn("node3", 100, 16, 10)),
        ]),
        Case::new(
            "Pod with incorrect node selector, but nodefit false, should still be evicted",
            vec![owned("p1").with(|p| p.node_selector = labels(&[("datacenter", "fail")]))],
            Ok(()),
        )
        .nodes(vec![
            datacenter(tn("node2", 1000, 2000, 13)),
            datacenter(tn("node3", 1000, 2000, 13)),
        ]),
        Case::new(
            "Pod with namespace matched namespace selector, should be evicted",
            vec![dc(owned("p1")).with(|p| {
                p.namespace = "test".into();
                p.namespace_labels = labels(&[("kubernetes.io/metadata.name", "test")]).into();
            })],
            Ok(()),
        )
        .args(|a| {
            a.node_fit = true;
            a.namespace_label_selector = ns_selector();
        })
        .nodes(vec![
            datacenter(tn("node2", 1000, 2000, 13)),
            datacenter(tn("node3", 1000, 2000, 13)),
        ]),
        Case::new(
            "Pod with namespace does not matched namespace selector, should not be evicted",
            vec![owned("p1").with(|p| p.node_selector = labels(&[("datacenter", "fail")]))],
            Err(Kept::NoOtherNode),
        )
        .args(|a| {
            a.node_fit = true;
            a.namespace_label_selector = ns_selector();
        })
        .nodes(vec![
            datacenter(tn("node2", 1000, 2000, 13)),
            datacenter(tn("node3", 1000, 2000, 13)),
        ]),
    ];
    run(cases, |e, p| e.pre_evict(p));
}

#[test]
fn pre_eviction_filter_namespace_only_and_ferroscale_node_rules() {
    let cases = vec![
        // TestDefaultEvictorPreEvictionFilter's last case without nodeFit's verdict: the namespace
        // alone keeps it.
        Case::new(
            "namespace does not match, nodeFit off",
            vec![owned("p1")],
            Err(Kept::Namespace),
        )
        .args(|a| a.namespace_label_selector = ns_selector()),
        // ferroscale: a node being removed, a node not ready and one outside nodeSelector take nothing.
        Case::new(
            "only other nodes: removing, not ready, unselected",
            vec![owned("p1")],
            Err(Kept::NoOtherNode),
        )
        .args(|a| {
            a.node_fit = true;
            a.node_selector = "pool=general".into();
        })
        .nodes(vec![
            tn("going", 1000, 2000, 13).label("pool", "general").build(),
            node("cold")
                .allocatable(resources(1000, 2000, 13))
                .label("pool", "general")
                .build(),
            tn("other", 1000, 2000, 13).label("pool", "batch").build(),
            tn("node1", 1000, 2000, 13).label("pool", "general").build(),
        ])
        .fixture(|f| {
            f.removing.insert("going".into());
        }),
    ];
    run(cases, |e, p| e.pre_evict(p));
}

#[test]
fn node_fit_does_not_count_the_pod_where_it_leaves() {
    // ferroscale: a pod repelling its own kind across a zone may move within that zone, not next to
    // another of its kind.
    let zoned = |name: &str| tn(name, 1000, 2000, 13).label("zone", "a").build();
    let repels = |b: PodBuilder| {
        b.label("app", "x").with(|p| {
            p.anti_affinity = thin_vec::thin_vec![PodAffinityTerm {
                selector: crate::fixtures::selector(&[("app", "x")]),
                namespaces: vec![],
                namespace_selector: None,
                topology_key: "zone".into(),
            }]
        })
    };
    let fit = |a: &mut EvictorArgs| a.node_fit = true;
    let cases = vec![
        Case::new("alone in its zone", vec![repels(owned("p1"))], Ok(()))
            .args(fit)
            .nodes(vec![zoned("node1"), zoned("node2")]),
        Case::new(
            "another of its kind in the zone",
            vec![
                repels(owned("p1")),
                tp("x2", 1, 1, "node3").label("app", "x"),
            ],
            Err(Kept::NoOtherNode),
        )
        .args(fit)
        .nodes(vec![zoned("node1"), zoned("node2"), zoned("node3")]),
    ];
    run(cases, |e, p| e.pre_evict(p));
}

#[test]
fn namespace_label_selector_all_operations() {
    // TestNamespaceLabelSelectorAllOperations: four namespaces, one pod in each; which pass.
    let namespaces: [(&str, &[(&str, &str)]); 4] = [
        ("ns-prod", &[("env", "prod"), ("tier", "frontend")]),
        ("ns-staging", &[("env", "staging"), ("tier", "backend")]),
        ("ns-test", &[("env", "test")]),
        ("ns-nolabels", &[]),
    ];
    let expr = |key: &str, op: &str, values: &[&str]| Expression {
        key: key.into(),
        operator: op.into(),
        values: values.iter().map(|v| v.to_string()).collect(),
    };
    let sel = |ml: &[(&str, &str)], me: Vec<Expression>| Selector {
        match_labels: labels(ml),
        match_expressions: me,
    };
    let cases: Vec<(&str, Selector, &[&str], &[&str])> = vec![
        (
            "MatchLabels and MatchExpressions In",
            sel(
                &[("tier", "frontend")],
                vec![expr("env", "In", &["prod", "staging"])],
            ),
            &["ns-prod"],
            &["ns-staging", "ns-test"],
        ),
        (
            "MatchLabels and MatchExpressions Exists",
            sel(&[("tier", "backend")], vec![expr("env", "Exists", &[])]),
            &["ns-staging"],
            &["ns-prod", "ns-test"],
        ),
        (
            "Exists and In",
            sel(
                &[],
                vec![expr("tier", "Exists", &[]), expr("env", "In", &["staging"])],
            ),
            &["ns-staging"],
            &["ns-prod", "ns-test"],
        ),
        (
            "DoesNotExist",
            sel(&[], vec![expr("tier", "DoesNotExist", &[])]),
            &["ns-test", "ns-nolabels"],
            &["ns-prod", "ns-staging"],
        ),
        (
            "NotIn",
            sel(&[], vec![expr("env", "NotIn", &["prod", "test"])]),
            &["ns-staging"],
            &["ns-prod", "ns-test"],
        ),
    ];
    let mut all = Vec::new();
    for (name, s, pass, fail) in cases {
        for (ns, want) in pass
            .iter()
            .map(|n| (n, Ok(())))
            .chain(fail.iter().map(|n| (n, Err(Kept::Namespace))))
        {
            let ns_labels = namespaces.iter().find(|(n, _)| n == ns).unwrap().1;
            let ns = ns.to_string();
            let s = s.clone();
            let p = tp("pod", 100, 100, "node1")
                .owner("Pod", "")
                .with(move |p| {
                    p.namespace = ns.as_str().into();
                    p.namespace_labels = labels(ns_labels).into();
                });
            all.push(
                Case::new(name, vec![p], want).args(move |a| a.namespace_label_selector = Some(s)),
            );
        }
    }
    run(all, |e, p| e.pre_evict(p));
}

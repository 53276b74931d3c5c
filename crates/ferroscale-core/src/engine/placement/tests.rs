use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::fixtures::{node, pod, resources};
use crate::model::shared::Shared;
use crate::model::workload::HostPort;

/// What a loop built before placements were kept: every pod read, in the world's order.
fn fresh(nodes: &[Node], pods: &[Arc<Pod>], cutoff: i32) -> Placed<'static> {
    let mut infos: Vec<NodeInfo> = nodes.iter().cloned().map(NodeInfo::new).collect();
    let index: foldhash::HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut pending = Vec::new();
    for (k, p) in pods.iter().enumerate() {
        match p.node_name.as_deref() {
            None => pending.push(k),
            Some(n) => {
                if let Some(&i) = index.get(n) {
                    if p.meta.priority >= cutoff {
                        infos[i].add(Arc::clone(p));
                    }
                }
            }
        }
    }
    Placed {
        infos,
        index: Default::default(),
        expendable: Vec::new(),
        pending,
    }
}

/// The expendable pods a fresh build puts back: (node position, pod) in the world's order.
fn fresh_expendable(nodes: &[Node], pods: &[Arc<Pod>], cutoff: i32) -> Vec<(usize, *const Pod)> {
    let index: std::collections::HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    pods.iter()
        .filter(|p| p.meta.priority < cutoff)
        .filter_map(|p| {
            let i = *index.get(p.node_name.as_deref()?)?;
            Some((i, Arc::as_ptr(p)))
        })
        .collect()
}

fn assert_same(kept: &Placement, nodes: &[Node], pods: &[Arc<Pod>], cutoff: i32) {
    assert_placed(kept.placed(nodes), nodes, pods, cutoff);
    assert_placed(Placed::fresh(nodes, pods, cutoff), nodes, pods, cutoff);
}

fn assert_placed(got: Placed, nodes: &[Node], pods: &[Arc<Pod>], cutoff: i32) {
    let want = fresh(nodes, pods, cutoff);
    assert_eq!(got.pending, want.pending);
    assert_eq!(got.infos.len(), want.infos.len());
    for (g, w) in got.infos.iter().zip(&want.infos) {
        assert_eq!(g.node, w.node);
        let ptrs = |i: &NodeInfo| i.pods.iter().map(Arc::as_ptr).collect::<Vec<_>>();
        assert_eq!(ptrs(g), ptrs(w), "pods on {}", g.node.name);
        assert_eq!(g.requested, w.requested, "requests on {}", g.node.name);
        assert_eq!(g.ports, w.ports);
        assert_eq!(g.attached, w.attached);
    }
    let expendable: Vec<(usize, *const Pod)> = got
        .expendable
        .iter()
        .map(|(i, p)| (*i, Arc::as_ptr(p)))
        .collect();
    assert_eq!(expendable, fresh_expendable(nodes, pods, cutoff));
}

/// A change the simulation, the replay or `run`'s index makes to the world's pods.
#[derive(Debug, Clone)]
enum Op {
    /// A new pod at the end (created, or recreated by its controller).
    Push {
        node: Option<u8>,
        priority: bool,
        cpu: u8,
    },
    /// One pod deleted, the others' order kept.
    Remove(usize),
    /// A pod bound, unbound or moved: a new copy in its place.
    Rebind(usize, Option<u8>),
    /// A pod deleted the way a slab deletes: the last one moved into its place.
    SwapRemove(usize),
    /// A pod inserted first (no part of the cluster does this; the placement must still be right).
    Front { node: Option<u8> },
    /// Several loops' worth of changes seen at once, or none.
    Update,
    /// Another expendable cutoff.
    Cutoff(bool),
}

fn op() -> impl Strategy<Value = Op> {
    let node = proptest::option::of(0u8..6);
    prop_oneof![
        4 => (node.clone(), any::<bool>(), 1u8..4)
            .prop_map(|(node, priority, cpu)| Op::Push { node, priority, cpu }),
        2 => any::<usize>().prop_map(Op::Remove),
        3 => (any::<usize>(), node.clone()).prop_map(|(k, n)| Op::Rebind(k, n)),
        1 => any::<usize>().prop_map(Op::SwapRemove),
        1 => node.prop_map(|node| Op::Front { node }),
        3 => Just(Op::Update),
        1 => any::<bool>().prop_map(Op::Cutoff),
    ]
}

fn name(n: u8) -> String {
    format!("node-{n}")
}

fn new_pod(serial: usize, node: Option<u8>, priority: bool, cpu: u8) -> Arc<Pod> {
    let mut b = pod("shop", format!("web-{serial}"))
        .requests(resources(i64::from(cpu) * 100, 1 << 20, 1))
        .priority(if priority { 0 } else { -20 });
    if let Some(n) = node {
        b = b.on(&name(n));
    }
    if serial % 5 == 0 {
        b = b.with(|p| {
            p.host_ports = crate::model::thin_vec![HostPort {
                protocol: "TCP".into(),
                ip: String::new(),
                port: 8080,
            }]
        });
    }
    Arc::new(b.build())
}

proptest! {
    /// Whatever changes in whatever order, the kept placement gives what a fresh build gives: the
    /// same pods on each node in the same order, the same sums, pending and expendable pods.
    #[test]
    fn kept_placement_is_a_fresh_one(
        start in proptest::collection::vec((proptest::option::of(0u8..6), any::<bool>()), 0..12),
        // Nodes 0..4 exist (node 4 twice); pods may also name node 5, which does not.
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let mut nodes: Vec<Node> = (0..5).map(|n| node(name(n)).build()).collect();
        nodes.push(node(name(4)).label("twin", "yes").build());
        let mut pods: Vec<Arc<Pod>> = start
            .iter()
            .enumerate()
            .map(|(k, (n, p))| new_pod(k, *n, *p, 1))
            .collect();
        let mut serial = pods.len();
        let mut cutoff = -10;
        let mut kept = Placement::default();
        kept.update(&pods, cutoff);
        assert_same(&kept, &nodes, &pods, cutoff);
        for op in ops {
            match op {
                Op::Push { node, priority, cpu } => {
                    pods.push(new_pod(serial, node, priority, cpu));
                    serial += 1;
                }
                Op::Remove(k) if !pods.is_empty() => {
                    pods.remove(k % pods.len());
                }
                Op::Rebind(k, n) if !pods.is_empty() => {
                    let k = k % pods.len();
                    Arc::make_mut(&mut pods[k]).node_name = n.map(name);
                }
                Op::SwapRemove(k) if !pods.is_empty() => {
                    pods.swap_remove(k % pods.len());
                }
                Op::Front { node } => {
                    pods.insert(0, new_pod(serial, node, true, 2));
                    serial += 1;
                }
                Op::Cutoff(low) => cutoff = if low { -10 } else { 1 },
                _ => {}
            }
            if matches!(op, Op::Update | Op::Cutoff(_)) {
                kept.update(&pods, cutoff);
                assert_same(&kept, &nodes, &pods, cutoff);
            }
        }
        kept.update(&pods, cutoff);
        assert_same(&kept, &nodes, &pods, cutoff);
    }
}

#[test]
fn a_loop_changes_only_the_nodes_whose_pods_changed() {
    let nodes: Vec<Node> = (0..2).map(|n| node(name(n)).build()).collect();
    let mut pods: Vec<Arc<Pod>> = (0..4)
        .map(|k| new_pod(k, Some(k as u8 % 2), true, 1))
        .collect();
    let mut kept = Placement::default();
    kept.update(&pods, -10);
    let before = kept.placed(&nodes).infos;
    Arc::make_mut(&mut pods[1]).node_name = None;
    kept.update(&pods, -10);
    let after = kept.placed(&nodes);
    // node-0's list is the very same copy; node-1's was summed again without the unbound pod.
    assert!(Shared::same_copy(&before[0].pods, &after.infos[0].pods));
    assert_eq!(after.infos[1].pods.len(), 1);
    assert_eq!(after.pending, vec![1]);
}

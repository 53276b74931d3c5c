//! What keeps a node from consolidation as a Karpenter user expects: the node's own do-not-disrupt
//! annotation, and `after` counted from the last pod added to or removed from the node (an HPA scale-in
//! resets it, as Karpenter's `consolidateAfter` since its issues #7146 and #1019).

use std::sync::Arc;

use super::tests::{app, consolidating, declined, one_node, NOW};
use super::Declined;
use crate::engine::reasons::Unremovable;
use crate::engine::{Memory, Settings};

#[test]
fn a_node_annotated_do_not_disrupt_is_kept_from_consolidation_and_scale_down() {
    let world = one_node(0.5);
    let d = world.run_once(&consolidating(), &mut Memory::default(), NOW);
    assert_eq!(d.consolidations.len(), 1, "the contrast: {d:#?}");

    let mut kept = one_node(0.5);
    kept.nodes[0].do_not_disrupt = true;
    let d = kept.run_once(&consolidating(), &mut Memory::default(), NOW);
    assert!(
        d.consolidations.is_empty() && d.scale_up.is_empty(),
        "{d:#?}"
    );
    assert_eq!(declined(&d, "a-1"), [&Declined::NodeDoNotDisrupt]);
    assert!(
        d.unremovable
            .iter()
            .any(|(n, why)| n == "a-1" && *why == Unremovable::DoNotDisrupt),
        "scale-down keeps it too: {d:#?}"
    );
}

#[test]
fn an_empty_node_annotated_do_not_disrupt_is_not_scaled_down() {
    let mut world = one_node(0.5);
    world.pods.clear();
    let s = Settings {
        scale_down_delay_after_add: std::time::Duration::ZERO,
        ..Settings::upstream()
    };
    let mut memory = Memory::default();
    world.run_once(&s, &mut memory, NOW);
    let d = world.run_once(&s, &mut memory, NOW + 601);
    assert_eq!(d.scale_down.len(), 1, "the contrast: {d:#?}");

    world.nodes[0].do_not_disrupt = true;
    let mut memory = Memory::default();
    world.run_once(&s, &mut memory, NOW);
    let d = world.run_once(&s, &mut memory, NOW + 601);
    assert!(d.scale_down.is_empty(), "{d:#?}");
}

/// A node runs two replicas; the HPA scales in and deletes one. The pods left are old, so a snapshot
/// alone would let the node go at once: the memory saw the removal, and the node waits `after` from it.
#[test]
fn a_pod_removed_restarts_after() {
    let mut world = one_node(0.5);
    world = world.pod(app("web-2", "a-1", 4));
    let mut memory = Memory::default();
    // Seen with both pods (consolidation off: nothing else happens).
    world.run_once(&Settings::upstream(), &mut memory, NOW);
    world.pods.retain(|p| p.name != "web-2");
    let scaled_in = NOW + 10;
    let d = world.run_once(&consolidating(), &mut memory, scaled_in);
    assert!(d.consolidations.is_empty(), "{d:#?}");
    let d = world.run_once(&consolidating(), &mut memory, scaled_in + 599);
    assert!(d.consolidations.is_empty(), "{d:#?}");
    let d = world.run_once(&consolidating(), &mut memory, scaled_in + 600);
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");

    // The contrast: a memory that never saw the second pod knows of no change.
    let d = world.run_once(&consolidating(), &mut Memory::default(), scaled_in);
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
}

/// A pod added (a replacement bound there) restarts it the same way; a memory that knows no change
/// before it started (`run` after a restart) counts from its start.
#[test]
fn a_pod_added_or_a_restart_restarts_after() {
    let mut world = one_node(0.5);
    let mut memory = Memory::default();
    world.run_once(&Settings::upstream(), &mut memory, NOW);
    let mut moved = app("moved", "a-1", 1);
    moved.meta.created = 0;
    world.pods.push(Arc::new(moved));
    world.run_once(&Settings::upstream(), &mut memory, NOW + 10);
    let d = world.run_once(&consolidating(), &mut memory, NOW + 20);
    assert!(d.consolidations.is_empty(), "{d:#?}");

    let mut restarted = Memory {
        pod_changes_known_from: Some(NOW),
        ..Memory::default()
    };
    let d = world.run_once(&consolidating(), &mut restarted, NOW + 20);
    assert!(d.consolidations.is_empty(), "{d:#?}");
    let d = world.run_once(&consolidating(), &mut restarted, NOW + 600);
    assert_eq!(d.consolidations.len(), 1, "{d:#?}");
}

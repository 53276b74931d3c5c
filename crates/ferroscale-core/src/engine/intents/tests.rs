use std::collections::HashMap;

use super::*;
use crate::engine::memory::{Consolidating, Replacing};
use proptest::prelude::*;

const T: i64 = 1_790_000_000;

fn node(name: &str, group: Option<&str>, created: i64, intent: Option<Intent>) -> NodeFacts {
    NodeFacts {
        name: name.into(),
        group: group.map(Into::into),
        created,
        terminating: false,
        intent: intent.map(Ok),
    }
}

fn groups(target: i32) -> HashMap<String, GroupFacts> {
    HashMap::from([(
        "pool".to_string(),
        GroupFacts {
            target_size: target,
        },
    )])
}

/// A memory with one replacement, one two-node consolidation, one emptied node, one notice and one
/// claimed surge.
fn busy_memory() -> Memory {
    let mut m = Memory::default();
    m.replacing.insert(
        "old".into(),
        Replacing {
            group: "pool".into(),
            reason: DisruptionReason::Drift,
            since: T,
        },
    );
    m.consolidating.push(Consolidating {
        nodes: vec!["c2".into(), "c1".into()],
        group: "pool".into(),
        count: 1,
        since: T + 5,
    });
    m.emptying.insert("e".into(), T + 7);
    m.noticed
        .insert("n".into(), (DisruptionReason::ScheduledChange, T + 9));
    m.surge_claimed.insert("new".into(), "gone".into());
    m
}

#[test]
fn an_intent_reads_back_as_written_with_its_time_in_rfc3339() {
    let d = desired(&busy_memory());
    for i in d.values() {
        let text = i.clone().draining(true).encode();
        assert_eq!(Intent::decode(&text).unwrap(), i.clone().draining(true));
    }
    let text = d["old"].encode();
    assert!(text.contains("\"since\":\"2026-09-21T"), "{text}");
    assert!(text.contains("\"action\":\"replacement\""), "{text}");
}

#[test]
fn every_action_under_way_has_its_intent_and_a_notice_outranks_a_plan() {
    let mut m = busy_memory();
    m.noticed
        .insert("c1".into(), (DisruptionReason::SpotInterruption, T));
    let d = desired(&m);
    assert_eq!(d["old"].action, Action::Replacement);
    assert_eq!(d["c2"].action, Action::Consolidation);
    assert_eq!(d["c2"].nodes, vec!["c1".to_string(), "c2".to_string()]);
    assert_eq!(d["c1"].action, Action::Notice);
    assert_eq!(d["e"].action, Action::Descheduled);
    assert_eq!(d["new"].replaces.as_deref(), Some("gone"));
    assert_eq!(d.len(), 6);
}

#[test]
fn a_restart_restores_what_was_under_way() {
    let before = busy_memory();
    let d = desired(&before);
    // The group has its surge node (created after the plans started).
    let mut nodes: Vec<NodeFacts> = d
        .iter()
        .map(|(n, i)| node(n, Some("pool"), T - 100, Some(i.clone())))
        .collect();
    nodes.push(node("surge", Some("pool"), T + 60, None));
    let mut after = Memory::default();
    let out = reconcile(&nodes, &groups(7), &mut after, T + 100);
    assert!(out
        .iter()
        .filter(|r| r.action != Some(Action::Surge))
        .all(|r| r.outcome == Outcome::Resumed && !r.clear && !r.untaint));
    assert_eq!(after.replacing, before.replacing);
    assert_eq!(after.emptying, before.emptying);
    assert_eq!(after.noticed, before.noticed);
    assert_eq!(after.surge_claimed, before.surge_claimed);
    assert_eq!(after.consolidating.len(), 1);
    let mut c = after.consolidating[0].clone();
    c.nodes.sort();
    assert_eq!(
        (c.nodes, c.group, c.count, c.since),
        (vec!["c1".into(), "c2".into()], "pool".into(), 1, T + 5)
    );
}

#[test]
fn a_surge_never_asked_for_is_rolled_back_not_waited_for() {
    let m = busy_memory();
    let d = desired(&m);
    // Three old nodes, the target still three: the process stopped before asking.
    let nodes = vec![
        node("old", Some("pool"), T - 100, Some(d["old"].clone())),
        node("a", Some("pool"), T - 100, None),
        node("b", Some("pool"), T - 100, None),
    ];
    let mut after = Memory::default();
    let out = reconcile(&nodes, &groups(3), &mut after, T + 100);
    assert_eq!(
        out[0].outcome,
        Outcome::RolledBack(RollBack::NoSurge {
            group: "pool".into()
        })
    );
    assert!(out[0].clear && !out[0].untaint);
    assert!(after.replacing.is_empty());
    // Asked for and not registered yet: resumed.
    let mut after = Memory::default();
    let out = reconcile(&nodes, &groups(4), &mut after, T + 100);
    assert_eq!(out[0].outcome, Outcome::Resumed);
    assert!(after.replacing.contains_key("old"));
}

#[test]
fn a_drain_stopped_midway_is_undone_whatever_its_plan() {
    let d = desired(&busy_memory());
    let nodes = vec![
        node(
            "sd",
            Some("pool"),
            T,
            Some(Intent::scale_down("sd", T).draining(false)),
        ),
        node(
            "old",
            Some("pool"),
            T,
            Some(d["old"].clone().draining(false)),
        ),
        node("n", Some("pool"), T, Some(d["n"].clone().draining(true))),
        node("surge", Some("pool"), T + 60, None),
    ];
    let mut after = Memory::default();
    let out = reconcile(&nodes, &groups(4), &mut after, T + 100);
    let sd = &out[0];
    assert_eq!(sd.outcome, Outcome::RolledBack(RollBack::Interrupted));
    assert!(sd.untaint && sd.clear && !sd.uncordon);
    let old = &out[1];
    assert_eq!(old.outcome, Outcome::Resumed);
    assert!(old.untaint && !old.clear);
    let n = &out[2];
    assert_eq!(n.outcome, Outcome::Resumed);
    assert!(n.untaint && n.uncordon);
}

#[test]
fn a_node_whose_delete_was_asked_is_left_to_go() {
    let mut n = node(
        "sd",
        Some("pool"),
        T,
        Some(Intent::scale_down("sd", T).draining(true)),
    );
    n.terminating = true;
    let out = reconcile(&[n], &groups(1), &mut Memory::default(), T + 100);
    assert_eq!(out[0].outcome, Outcome::Finished);
    assert!(!out[0].untaint && !out[0].uncordon && !out[0].clear);
}

#[test]
fn an_involuntary_notice_lapses_and_its_cordon_comes_off() {
    let mut m = Memory::default();
    m.noticed
        .insert("n".into(), (DisruptionReason::SpotInterruption, T));
    let i = desired(&m)["n"].clone().draining(true);
    let nodes = [node("n", Some("pool"), T - 100, Some(i))];
    let out = reconcile(&nodes, &groups(1), &mut Memory::default(), T + 60);
    assert_eq!(out[0].outcome, Outcome::Resumed);
    let mut after = Memory::default();
    let out = reconcile(&nodes, &groups(1), &mut after, T + INVOLUNTARY_LAPSES + 1);
    assert_eq!(out[0].outcome, Outcome::RolledBack(RollBack::NoticeLapsed));
    assert!(out[0].uncordon && out[0].untaint && out[0].clear);
    assert!(after.noticed.is_empty());
}

#[test]
fn a_claim_of_a_replacement_resumed_is_given_up_so_it_claims_again() {
    let mut m = busy_memory();
    m.surge_claimed.insert("new".into(), "old".into());
    let d = desired(&m);
    let nodes = vec![
        node(
            "old",
            Some("pool"),
            T - 100,
            Some(d["old"].clone().draining(false)),
        ),
        node("new", Some("pool"), T + 60, Some(d["new"].clone())),
    ];
    let mut after = Memory::default();
    let out = reconcile(&nodes, &groups(2), &mut after, T + 100);
    let claim = out.iter().find(|r| r.node == "new").unwrap();
    assert!(claim.clear);
    assert!(after.surge_claimed.is_empty());
    assert!(after.replacing.contains_key("old"));
}

#[test]
fn unreadable_and_foreign_group_intents_are_rolled_back() {
    let d = desired(&busy_memory());
    let mut bad = node("x", Some("pool"), T, None);
    bad.intent = Some(Intent::decode("{\"action\": 7}"));
    let nodes = vec![bad, node("old", None, T, Some(d["old"].clone()))];
    let out = reconcile(&nodes, &groups(2), &mut Memory::default(), T);
    assert!(matches!(
        out[0].outcome,
        Outcome::RolledBack(RollBack::Unreadable(_))
    ));
    assert_eq!(out[1].outcome, Outcome::RolledBack(RollBack::GroupGone));
}

#[test]
fn a_deep_or_huge_annotation_is_refused_before_parsing() {
    let deep = "[".repeat(10_000);
    assert!(Intent::decode(&deep).unwrap_err().0.contains("intent"));
    let huge = format!("\"{}\"", "a".repeat(100_000));
    assert!(Intent::decode(&huge).is_err());
}

proptest! {
    /// Whatever an annotation holds, reading it never panics, and what reads back encodes to itself.
    #[test]
    fn decoding_never_panics(text in ".{0,300}") {
        if let Ok(i) = Intent::decode(&text) {
            prop_assert_eq!(Intent::decode(&i.encode()).unwrap(), i);
        }
    }

    /// Mangled real intents never panic either.
    #[test]
    fn decoding_mangled_intents_never_panics(cut in 0usize..400, junk in "[\\[\\]{}\",:0-9a-z]{0,20}") {
        let text = desired(&busy_memory())["c1"].clone().draining(true).encode();
        let cut = cut.min(text.len());
        let mangled = format!("{}{}{}", &text[..cut], junk, &text[cut..]);
        let _ = Intent::decode(&mangled);
    }
}

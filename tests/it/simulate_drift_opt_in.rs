//! Drift replacement is opt-in through `simulate`, as consolidation is: a group that says nothing under
//! the default `--drift Never` keeps its drifted nodes and each loop says which nodes have drifted and
//! why nothing replaces them; a group's `drift: Replace` or the flag (`Settings::drift`) opts in, and a
//! node annotated do-not-disrupt is passed over for the next one.

use crate::simulate_lifecycle::{cluster, node};
use crate::support::simulate_harness::{pacing, sim};
use ferroscale::model::drift::DriftPolicy;
use ferroscale::simulate::LoopReport;

/// Three nodes of `pool` launched from `lt-1:1` while the group launches `lt-1:2`; `extra` in the
/// group's config.
fn groups(extra: &str) -> String {
    format!(
        r#"
nodeGroups:
  - {{name: pool, minSize: 0, maxSize: 6, capacity: {{cpu: 4, memory: 16Gi, pods: 20}},
     revision: "lt-1:2", disruptionBudget: "1", {extra}
     instances: [{{id: i-0, revision: "lt-1:1"}}, {{id: i-1, revision: "lt-1:1"}}, {{id: i-2, revision: "lt-1:1"}}]}}
"#
    )
}

/// The nodes each loop asked a surge for.
fn surged(r: &LoopReport) -> Vec<String> {
    r.replacements
        .iter()
        .flat_map(|x| x.for_nodes.clone())
        .collect()
}

/// (node, reason) of the loop's drifted or expired nodes.
fn due(r: &LoopReport) -> Vec<(String, String)> {
    r.due
        .iter()
        .map(|x| (x.node.clone().unwrap_or_default(), x.reason.clone()))
        .collect()
}

#[test]
fn drifted_nodes_stay_by_default_and_the_loop_says_why() {
    let mut s = sim(&cluster(), &groups(""));
    let settings = ferroscale::cli::flags::default_engine();
    for _ in 0..4 {
        let r = s.step(&settings, &pacing());
        assert!(
            r.replacements.is_empty() && r.scale_up.is_empty() && r.disruptions.is_empty(),
            "{r:#?}"
        );
        let said = due(&r);
        assert_eq!(said.len(), 3, "{r:#?}");
        assert!(
            said.iter()
                .all(|(_, why)| why.contains("group pool does not replace drifted nodes")),
            "{said:?}"
        );
        assert_eq!(r.nodes["pool"], 3);
    }
}

#[test]
fn a_group_or_the_flag_opts_in_and_a_groups_never_wins() {
    let settings = ferroscale::cli::flags::default_engine();
    let mut by_group = sim(&cluster(), &groups("drift: Replace,"));
    let r = by_group.step(&settings, &pacing());
    assert_eq!(surged(&r), ["pool-0"], "oldest first: {r:#?}");
    assert_eq!(due(&r)[0].0, "pool-0");
    assert!(
        due(&r)[0]
            .1
            .starts_with("drift: launched from another revision"),
        "{r:#?}"
    );

    let mut every_group = settings.clone();
    every_group.drift = DriftPolicy::Replace;
    let mut by_flag = sim(&cluster(), &groups(""));
    let r = by_flag.step(&every_group, &pacing());
    assert_eq!(surged(&r), ["pool-0"], "{r:#?}");

    let mut never = sim(&cluster(), &groups("drift: Never,"));
    let r = never.step(&every_group, &pacing());
    assert!(r.replacements.is_empty(), "{r:#?}");

    let bad = ferroscale::cloud::memory::MemoryConfig::parse(&groups("drift: Sometimes,"))
        .and_then(|c| ferroscale::cloud::memory::MemoryCloud::new(&c).map(|_| ()))
        .expect_err("an unknown policy is refused");
    assert!(bad.to_string().contains("drift"), "{bad}");
}

#[test]
fn a_node_annotated_do_not_disrupt_is_passed_over() {
    let mut c = cluster();
    c[0] = node(0, "2026-01-01T00:00:00Z").replace(
        "  name: pool-0\n",
        "  name: pool-0\n  annotations: {karpenter.sh/do-not-disrupt: \"true\"}\n",
    );
    let mut s = sim(&c, &groups("drift: Replace,"));
    let r = s.step(&ferroscale::cli::flags::default_engine(), &pacing());
    assert_eq!(surged(&r), ["pool-1"], "{r:#?}");
    assert!(
        due(&r).contains(&(
            "pool-0".into(),
            "drift due, but the node is annotated do-not-disrupt".into()
        )),
        "{r:#?}"
    );
}

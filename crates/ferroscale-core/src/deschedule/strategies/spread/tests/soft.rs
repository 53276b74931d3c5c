//! Upstream's cases of `ScheduleAnyway` constraints ("(soft constraints)", "(both constraints)"):
//! balanced when `constraints` names `ScheduleAnyway`, left alone by the default `[DoNotSchedule]`.

use super::*;

/// One pod with a soft zone constraint and two without on n1, one on n2: sizes [3, 1].
fn three_one() -> [G; 3] {
    let mut first = g(1, "n1");
    first.soft = vec![zone(1)];
    [first, g(2, "n1"), g(1, "n2")]
}

fn constraints(c: Vec<WhenUnsatisfiable>) -> PluginArgs {
    args(|a| a.constraints = c)
}

#[test]
fn two_domains_sizes_3_1_max_skew_1_move_1_pod_to_achieve_2_2_soft_constraints() {
    use WhenUnsatisfiable::*;
    let both = constraints(vec![DoNotSchedule, ScheduleAnyway]);
    assert_eq!(
        balance(two_zones(), &three_one(), both, false).len(),
        1,
        "both kinds balanced"
    );
    let soft = constraints(vec![ScheduleAnyway]);
    assert_eq!(balance(two_zones(), &three_one(), soft, false).len(), 1);
}

#[test]
fn a_soft_constraint_is_left_alone_by_the_default_constraints() {
    assert!(balance(two_zones(), &three_one(), default(), false).is_empty());
}

#[test]
fn a_soft_and_a_hard_constraint_alike_are_counted_apart() {
    // The hard one is balanced under the default; the soft twin does not double the moves.
    let mut first = g(1, "n1").spread(zone(1));
    first.soft = vec![zone(1)];
    let groups = [first, g(2, "n1"), g(1, "n2")];
    use WhenUnsatisfiable::*;
    let both = constraints(vec![DoNotSchedule, ScheduleAnyway]);
    assert_eq!(balance(two_zones(), &groups, both, false).len(), 1);
}

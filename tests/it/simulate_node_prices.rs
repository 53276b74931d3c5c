//! Each node priced as it is through `simulate`: in a mixed-instances group, a spot node at the spot
//! price and an on-demand node at the on-demand price, not both at the group's blend; consolidation's
//! `savingsPerHour` and the report's cost per hour follow.

use crate::support::fixtures::dump::pod;
use crate::support::simulate_harness::{pacing, sim};
use ferroscale::simulate::Simulation;

/// Group `mixed`: the next node costs the blend ($0.0656/h: 40% on-demand at $0.096, 60% spot at
/// $0.035); `instances` as listed.
fn groups(instances: &str) -> String {
    format!(
        r#"
nodeGroups:
  - {{name: mixed, minSize: 0, maxSize: 4, capacity: {{cpu: 2, memory: 8Gi, pods: 20}},
     pricePerHour: 0.0656, onDemandPricePerHour: 0.096, spotPricePerHour: 0.035,
     disruptionBudget: "100%", consolidation: {{policy: WhenEmptyOrUnderutilized, after: 0s}},
     instances: [{instances}]}}
"#
    )
}

/// Two 2-core nodes with one 500m replica each; `spot_label` on mixed-0 if given.
fn cluster(spot_label: &str) -> Vec<String> {
    let mut c = Vec::new();
    for k in 0..2 {
        let extra = if k == 0 { spot_label } else { "" };
        c.push(format!(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: mixed-{k}\n  creationTimestamp: \"2026-01-01T00:00:00Z\"\n  \
             labels: {{ferroscale.io/node-group: mixed, kubernetes.io/hostname: mixed-{k}{extra}}}\n\
             spec: {{providerID: \"memory:///mixed/i-{k}\"}}\n\
             status:\n  allocatable: {{cpu: \"2\", memory: 8Gi, pods: \"20\"}}\n  conditions: [{{type: Ready, status: \"True\"}}]\n"
        ));
        c.push(pod(
            "shop",
            &format!("web-{k}"),
            "500m",
            "1Gi",
            Some(&format!("mixed-{k}")),
            "",
        ));
    }
    c
}

#[test]
fn spot_and_on_demand_nodes_of_a_mixed_group_are_each_priced_as_they_are() {
    let settings = ferroscale::cli::flags::default_engine();
    // mixed-0 is spot by its node label, mixed-1 on-demand by its instance entry.
    let mut s = sim(
        &cluster(", eks.amazonaws.com/capacityType: SPOT"),
        &groups("{id: i-0}, {id: i-1, lifecycle: on-demand}"),
    );
    // A deletion is held 15 s and validated before it is acted on.
    let first_plan = |s: &mut Simulation| {
        (0..5)
            .map(|_| s.step(&settings, &pacing()))
            .find(|r| !r.consolidations.is_empty())
            .expect("a consolidation")
    };
    let r = first_plan(&mut s);
    assert_eq!(r.consolidations.len(), 1, "{r:#?}");
    let plan = &r.consolidations[0];
    assert_eq!(plan.action, "delete");
    assert_eq!(plan.nodes, ["mixed-1"], "the dearer node goes: {r:#?}");
    assert_eq!(plan.price_per_hour, 0.096);
    assert_eq!(plan.savings_per_hour, 0.096);
    assert_eq!(
        r.cost_per_hour,
        Some(0.035),
        "the spot node is left: {r:#?}"
    );

    // The contrast: the same nodes with no lifecycle known are priced at the group's blend.
    let mut blended = sim(&cluster(""), &groups("{id: i-0}, {id: i-1}"));
    let r = first_plan(&mut blended);
    assert_eq!(r.consolidations.len(), 1, "{r:#?}");
    assert_eq!(r.consolidations[0].nodes, ["mixed-0"], "{r:#?}");
    assert_eq!(r.consolidations[0].savings_per_hour, 0.0656);
    assert_eq!(r.cost_per_hour, Some(0.0656));
}

//! A group's node lifecycle as AWS tells it: the revision new instances launch from (its launch
//! configuration, or its launch template's id and resolved version), each instance's revision, and the
//! group's own maximum node lifetime, disruption budget and window from its tags. A tag that does not
//! parse is logged and ignored, as option tags are.

use std::collections::BTreeMap;

use super::types::AsgInfo;
use crate::model::consolidation::Consolidation;
use crate::model::drift::DriftPolicy;
use crate::model::lifecycle::{Budget, GroupLifecycle, Window};
use crate::model::{parse_go_duration, provider_id};

/// Nodes older than this (a Go duration) are replaced.
pub const MAX_NODE_LIFETIME_TAG: &str = "ferroscale.io/max-node-lifetime";
/// How many of the group's nodes may be out of service at once (`20%` or a count).
pub const DISRUPTION_BUDGET_TAG: &str = "ferroscale.io/disruption-budget";
/// When voluntary disruptions may start (cron, UTC), and for how long (a Go duration).
pub const DISRUPTION_SCHEDULE_TAG: &str = "ferroscale.io/disruption-schedule";
pub const DISRUPTION_DURATION_TAG: &str = "ferroscale.io/disruption-duration";
/// The group's consolidation policy: `WhenEmptyOrUnderutilized` or `WhenEmpty,after=10m`.
pub const CONSOLIDATION_TAG: &str = "ferroscale.io/consolidation";
/// What the group does with drifted nodes: `Replace` or `Never` (overrides `--drift`).
pub const DRIFT_TAG: &str = "ferroscale.io/drift";

/// The revision of a launch configuration.
pub fn configuration_revision(name: &str) -> String {
    format!("lc:{name}")
}

/// The revision of a launch template version.
pub fn template_revision(id: &str, version: i64) -> String {
    format!("lt:{id}:{version}")
}

/// The group's lifecycle from what AWS said of it.
pub fn lifecycle_of(info: &AsgInfo) -> GroupLifecycle {
    let asg = info.name.as_str();
    let tag = |k: &str| info.tags.get(k).map(String::as_str);
    let ignored = |t: &str, value: &str, why: String| {
        tracing::warn!(%asg, tag = t, %value, %why, "lifecycle tag ignored");
    };
    let max_node_lifetime = tag(MAX_NODE_LIFETIME_TAG).and_then(|v| match parse_go_duration(v) {
        Ok(d) => Some(d),
        Err(why) => {
            ignored(MAX_NODE_LIFETIME_TAG, v, why);
            None
        }
    });
    let disruption_budget = tag(DISRUPTION_BUDGET_TAG).and_then(|v| match Budget::parse(v) {
        Ok(b) => Some(b),
        Err(why) => {
            ignored(DISRUPTION_BUDGET_TAG, v, why);
            None
        }
    });
    let disruption_window = match (tag(DISRUPTION_SCHEDULE_TAG), tag(DISRUPTION_DURATION_TAG)) {
        (Some(schedule), Some(duration)) => {
            match parse_go_duration(duration).and_then(|d| Window::parse(schedule, d)) {
                Ok(w) => Some(w),
                Err(why) => {
                    ignored(DISRUPTION_SCHEDULE_TAG, schedule, why);
                    None
                }
            }
        }
        (None, None) => None,
        (Some(v), None) | (None, Some(v)) => {
            ignored(
                DISRUPTION_SCHEDULE_TAG,
                v,
                format!("{DISRUPTION_SCHEDULE_TAG} and {DISRUPTION_DURATION_TAG} go together"),
            );
            None
        }
    };
    let consolidation = tag(CONSOLIDATION_TAG).and_then(|v| match Consolidation::parse(v) {
        Ok(c) => Some(c),
        Err(why) => {
            ignored(CONSOLIDATION_TAG, v, why);
            None
        }
    });
    let drift = tag(DRIFT_TAG).and_then(|v| match DriftPolicy::parse(v) {
        Ok(p) => Some(p),
        Err(why) => {
            ignored(DRIFT_TAG, v, why);
            None
        }
    });
    GroupLifecycle {
        revision: info.revision.clone(),
        also_current: info.override_revisions.clone(),
        instance_revisions: instance_revisions(info),
        max_node_lifetime,
        disruption_budget,
        disruption_window,
        consolidation,
        drift,
    }
}

/// Each instance's revision, by provider id.
pub fn instance_revisions(info: &AsgInfo) -> BTreeMap<String, String> {
    info.instances
        .iter()
        .filter_map(|i| {
            let rev = i.revision.clone()?;
            Some((provider_id::aws(&i.availability_zone, &i.instance_id), rev))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::engine::Settings;
    use crate::model::duration::GO_MAX;
    use crate::model::NodeGroup;

    fn info(tags: &[(&str, &str)]) -> AsgInfo {
        AsgInfo {
            name: "g".into(),
            min_size: 0,
            max_size: 3,
            desired_capacity: 0,
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            availability_zones: Vec::new(),
            instances: Vec::new(),
            instance_types: Vec::new(),
            distribution: None,
            spot_launch: false,
            revision: None,
            override_revisions: Default::default(),
            requirements_floor: None,
        }
    }

    #[test]
    fn a_lifetime_tag_of_0s_is_no_lifetime_as_the_flags_0_and_durations_past_gos_are_ignored() {
        let lifetime = |v: &str| lifecycle_of(&info(&[(MAX_NODE_LIFETIME_TAG, v)]));
        let mut g = NodeGroup::new("g", Default::default(), "aws:///");
        g.lifecycle = lifetime("0s");
        let flag = Settings {
            node_max_lifetime: Some(Duration::from_secs(3600)),
            ..Settings::upstream()
        };
        assert_eq!(flag.lifetime_of(&g), None, "the tag's 0s is none");
        g.lifecycle = lifetime("2562047h47m16.854775807s");
        assert_eq!(flag.lifetime_of(&g), Some(GO_MAX));
        for bad in ["10000000000000000000s", "2562047h47m16.854775808s", "-1h"] {
            assert_eq!(lifetime(bad).max_node_lifetime, None, "{bad}: ignored");
            let window = lifecycle_of(&info(&[
                (DISRUPTION_SCHEDULE_TAG, "0 2 * * *"),
                (DISRUPTION_DURATION_TAG, bad),
            ]));
            assert!(window.disruption_window.is_none(), "{bad}");
            let after = format!("WhenEmpty,after={bad}");
            let c = lifecycle_of(&info(&[(CONSOLIDATION_TAG, &after)]));
            assert_eq!(c.consolidation, None, "{bad}");
        }
    }
}

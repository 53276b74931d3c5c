//! `simulate --events EVENTS.yaml`: a list of `{at: DURATION, event: <an EventBridge event>}`, replayed
//! against the simulation when its virtual clock reaches `at` (since the start). The event is AWS's JSON,
//! written as a YAML mapping or as a JSON string; errors name the entry and the field. An entry
//! `{at: DURATION, neverReady: GROUP}` instead makes the group's nodes that join from then on never become
//! Ready (a broken image or bootstrap), as upstream's unhealthy groups start.

use std::path::Path;

use serde::Deserialize;

use crate::cloud::aws::interruption::events::{decode, Notice};
use crate::error::{Error, Result};
use crate::model::parse_go_duration;

/// Notices due at `at` seconds into the simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduled {
    pub at: i64,
    pub notices: Vec<Notice>,
    /// Groups whose nodes joining from `at` on never become Ready.
    pub never_ready: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
struct Entry {
    at: String,
    #[serde(default)]
    event: Option<serde_json::Value>,
    #[serde(default)]
    never_ready: Option<String>,
}

/// Reads and decodes an events file, sorted by time.
pub fn load_events(path: &Path) -> Result<Vec<Scheduled>> {
    let name = path.display();
    let text = crate::input::read_file(path, &crate::input::EVENTS, "--events")?;
    parse_events(&text).map_err(|e| Error::config(format!("--events {name}: {e}")))
}

/// Decodes the text of an events file.
pub fn parse_events(text: &str) -> std::result::Result<Vec<Scheduled>, String> {
    crate::input::EVENTS
        .check_yaml(text)
        .map_err(|e| e.to_string())?;
    let entries: Vec<Entry> =
        serde_norway::from_str(text).map_err(|e| format!("not a list of {{at, event}}: {e}"))?;
    let mut out = Vec::with_capacity(entries.len());
    for (i, e) in entries.into_iter().enumerate() {
        let at = parse_go_duration(&e.at).map_err(|why| format!("entry {i}: at: {why}"))?;
        let (notices, never_ready) = match (e.event, e.never_ready) {
            (Some(event), None) => {
                let body = match event {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                crate::input::EVENTS
                    .named("an event's JSON")
                    .check_json(&body)
                    .map_err(|why| format!("entry {i}: event: {why}"))?;
                let notices = decode(&body).map_err(|why| format!("entry {i}: event: {why}"))?;
                (notices, Vec::new())
            }
            (None, Some(group)) => (Vec::new(), vec![group]),
            _ => return Err(format!("entry {i}: give either `event` or `neverReady`")),
        };
        out.push(Scheduled {
            at: crate::model::duration::secs(at),
            notices,
            never_ready,
        });
    }
    out.sort_by_key(|s| s.at);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn entries_decode_and_errors_name_the_entry_and_field() {
        let text = r#"
- at: 30s
  event:
    source: aws.ec2
    detail-type: EC2 Spot Instance Interruption Warning
    detail: {instance-id: i-a, instance-action: terminate}
- at: 10s
  event: '{"source":"aws.ec2","detail-type":"EC2 Instance Rebalance Recommendation","detail":{"instance-id":"i-b"}}'
"#;
        let events = parse_events(text).unwrap();
        assert_eq!(
            events.iter().map(|e| e.at).collect::<Vec<_>>(),
            vec![10, 30]
        );
        assert_eq!(events[1].notices[0].instance_id, "i-a");
        let bad_time = "- {at: soon, event: {}}";
        assert!(parse_events(bad_time)
            .unwrap_err()
            .starts_with("entry 0: at:"));
        let bad_event = "- {at: 1m, event: {source: aws.ec2}}";
        assert!(parse_events(bad_event)
            .unwrap_err()
            .starts_with("entry 0: event: malformed event"));
    }

    proptest! {
        #[test]
        fn no_file_makes_it_panic(text in "[ -~\n]{0,300}") {
            let _ = parse_events(&text);
        }
    }

    #[test]
    fn never_ready_entries_name_a_group_and_an_entry_is_one_thing() {
        let events = parse_events("- {at: 1m, neverReady: bad}").unwrap();
        assert_eq!(events[0].at, 60);
        assert_eq!(events[0].never_ready, ["bad"]);
        assert!(events[0].notices.is_empty());
        for bad in ["- {at: 1m}", "- {at: 1m, neverReady: bad, event: {}}"] {
            assert!(
                parse_events(bad)
                    .unwrap_err()
                    .contains("either `event` or `neverReady`"),
                "{bad}"
            );
        }
    }
}

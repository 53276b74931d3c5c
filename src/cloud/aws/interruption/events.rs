//! The EventBridge events an interruption queue carries, in AWS's own formats, decoded into notices
//! about instances: `EC2 Spot Instance Interruption Warning`, `EC2 Instance Rebalance Recommendation`,
//! `EC2 Instance State-change Notification` (stopping, stopped, shutting-down, terminated) and
//! `AWS Health Event` scheduled changes naming instances. Anything else is foreign or malformed, with
//! the field that says so; no input makes the decoder panic (property-tested).

use serde::Deserialize;
use serde_json::Value;

use crate::model::lifecycle::{NoticeKind, ScheduledChange};

/// What one message says about one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The EC2 instance id (`i-…`).
    pub instance_id: String,
    pub kind: NoticeKind,
}

/// Why a message was not a notice ferroscale acts on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Undecodable {
    /// Not an event of this shape at all, or a field missing or of the wrong type.
    #[error("malformed event: {0}")]
    Malformed(String),
    /// A well-formed event of a kind or state ferroscale does not act on.
    #[error("ignored event: {0}")]
    Ignored(String),
    /// An event whose envelope does not hold up: another account or region, too old or from the future,
    /// or `resources` not naming the instance (whoever can send to the queue could have written it).
    #[error("unverified event: {0}")]
    Unverified(String),
}

/// Where the queue's events must come from: the queue's account (from its URL) and region.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    pub account: Option<String>,
    pub region: Option<String>,
}

/// How far ahead of this clock an event's time may be (clock skew).
pub const MAX_AHEAD_SECS: i64 = 5 * 60;

/// The envelope fields that say where and when an event comes from.
#[derive(Deserialize)]
struct Provenance {
    account: Option<String>,
    region: Option<String>,
    time: Option<String>,
    #[serde(default)]
    resources: Vec<String>,
}

/// Checks that an event decoded into `notices` comes from `origin`, is recent at `now` (seconds since
/// the epoch: at most `max_age` seconds old, `--interruption-max-age`, and at most [`MAX_AHEAD_SECS`]
/// ahead), and names in `resources` every instance it is about (an EC2 instance ARN ending in
/// `instance/<id>`, or the bare id as AWS Health writes it). EventBridge fills these fields itself; a
/// message written by hand to the queue has to get all of them right.
pub fn verify(
    body: &str,
    notices: &[Notice],
    origin: &Origin,
    now: i64,
    max_age: i64,
) -> Result<(), Undecodable> {
    let p: Provenance =
        serde_json::from_str(body).map_err(|e| Undecodable::Malformed(format!("envelope: {e}")))?;
    let unverified = |why: String| Err(Undecodable::Unverified(why));
    if let Some(want) = &origin.account {
        if p.account.as_deref() != Some(want.as_str()) {
            return unverified(format!(
                "account {:?}, the queue's is {want}",
                p.account.unwrap_or_default()
            ));
        }
    }
    if let Some(want) = &origin.region {
        if p.region.as_deref() != Some(want.as_str()) {
            return unverified(format!(
                "region {:?}, the queue's is {want}",
                p.region.unwrap_or_default()
            ));
        }
    }
    let Some(time) = p.time.as_deref() else {
        return unverified("no time".into());
    };
    let at = match time.parse::<k8s_openapi::jiff::Timestamp>() {
        Ok(t) => t.as_second(),
        Err(e) => return unverified(format!("time {time:?}: {e}")),
    };
    // A scheduled change stays news until it starts: held for days before its start, a restart
    // receives it again and must not drop it as stale. Every other notice ages from its time.
    let news_until = notices
        .iter()
        .map(|n| match &n.kind {
            NoticeKind::ScheduledChange(c) => c.start.unwrap_or(at).max(at),
            _ => at,
        })
        .min()
        .unwrap_or(at);
    if now.saturating_sub(news_until) > max_age {
        return unverified(format!("time {time} is more than {max_age}s old"));
    }
    if at.saturating_sub(now) > MAX_AHEAD_SECS {
        return unverified(format!("time {time} is in the future"));
    }
    for n in notices {
        let id = n.instance_id.as_str();
        let named = p.resources.iter().any(|r| {
            r == id
                || r.strip_suffix(id)
                    .is_some_and(|head| head.ends_with(":instance/"))
        });
        if !named {
            return unverified(format!("resources do not name instance {id}"));
        }
    }
    Ok(())
}

/// The EventBridge envelope.
#[derive(Deserialize)]
struct Envelope {
    source: String,
    #[serde(rename = "detail-type")]
    detail_type: String,
    detail: Value,
}

/// The instance id in `detail.instance-id`.
fn instance_id(detail: &Value) -> Result<String, Undecodable> {
    match detail.get("instance-id") {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        Some(_) => Err(Undecodable::Malformed(
            "detail.instance-id is not a non-empty string".into(),
        )),
        None => Err(Undecodable::Malformed(
            "detail.instance-id is missing".into(),
        )),
    }
}

/// Decodes one message body into the notices it carries (a Health event may name several instances).
pub fn decode(body: &str) -> Result<Vec<Notice>, Undecodable> {
    let e: Envelope = serde_json::from_str(body)
        .map_err(|err| Undecodable::Malformed(format!("not an EventBridge event: {err}")))?;
    let one = |kind| -> Result<Vec<Notice>, Undecodable> {
        Ok(vec![Notice {
            instance_id: instance_id(&e.detail)?,
            kind,
        }])
    };
    match (e.source.as_str(), e.detail_type.as_str()) {
        ("aws.ec2", "EC2 Spot Instance Interruption Warning") => one(NoticeKind::SpotInterruption),
        ("aws.ec2", "EC2 Instance Rebalance Recommendation") => one(NoticeKind::Rebalance),
        ("aws.ec2", "EC2 Instance State-change Notification") => {
            let state = e
                .detail
                .get("state")
                .and_then(Value::as_str)
                .ok_or_else(|| Undecodable::Malformed("detail.state is missing".into()))?;
            match state {
                "stopping" | "stopped" | "shutting-down" | "terminated" => {
                    one(NoticeKind::StateChange(state.to_string()))
                }
                other => Err(Undecodable::Ignored(format!("instance state {other}"))),
            }
        }
        ("aws.health", "AWS Health Event") => health(&e.detail),
        (source, kind) => Err(Undecodable::Ignored(format!("{source} {kind}"))),
    }
}

/// An AWS Health event: only EC2 scheduled changes, for each affected instance.
fn health(detail: &Value) -> Result<Vec<Notice>, Undecodable> {
    let field = |name: &str| detail.get(name).and_then(Value::as_str);
    if field("service") != Some("EC2") || field("eventTypeCategory") != Some("scheduledChange") {
        return Err(Undecodable::Ignored(format!(
            "health event {} {}",
            field("service").unwrap_or("?"),
            field("eventTypeCategory").unwrap_or("?")
        )));
    }
    let entities = detail
        .get("affectedEntities")
        .and_then(Value::as_array)
        .ok_or_else(|| Undecodable::Malformed("detail.affectedEntities is missing".into()))?;
    let change = ScheduledChange {
        code: field("eventTypeCode").unwrap_or_default().to_string(),
        start: match detail.get("startTime") {
            None | Some(Value::Null) => None,
            Some(Value::String(t)) => Some(health_time(t).ok_or_else(|| {
                Undecodable::Malformed(format!("detail.startTime {t:?} is not a time"))
            })?),
            Some(_) => {
                return Err(Undecodable::Malformed(
                    "detail.startTime is not a string".into(),
                ))
            }
        },
    };
    let notices: Vec<Notice> = entities
        .iter()
        .filter_map(|e| e.get("entityValue").and_then(Value::as_str))
        .filter(|id| id.starts_with("i-"))
        .map(|id| Notice {
            instance_id: id.to_string(),
            kind: NoticeKind::ScheduledChange(change.clone()),
        })
        .collect();
    if notices.is_empty() {
        return Err(Undecodable::Malformed(
            "detail.affectedEntities names no instance".into(),
        ));
    }
    Ok(notices)
}

/// A Health event's time in seconds since the epoch: RFC 2822 as AWS writes `startTime`
/// (`Sat, 05 Dec 2026 03:00:00 GMT`), or RFC 3339.
fn health_time(t: &str) -> Option<i64> {
    use k8s_openapi::jiff;
    jiff::fmt::rfc2822::parse(t)
        .map(|z| z.timestamp())
        .or_else(|_| t.parse::<jiff::Timestamp>())
        .ok()
        .map(|t| t.as_second())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The spot warning exactly as AWS documents it.
    pub const SPOT: &str = r#"{"version":"0","id":"12345678-1234-1234-1234-123456789012","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012","time":"2021-02-17T14:05:57Z","region":"us-east-2","resources":["arn:aws:ec2:us-east-2a:instance/i-1234567890abcdef0"],"detail":{"instance-id":"i-1234567890abcdef0","instance-action":"terminate"}}"#;

    #[test]
    fn each_kind_decodes_and_the_rest_says_why_not() {
        assert_eq!(
            decode(SPOT),
            Ok(vec![Notice {
                instance_id: "i-1234567890abcdef0".into(),
                kind: NoticeKind::SpotInterruption
            }])
        );
        let health = r#"{"version":"0","id":"7fb65329-1628-4cf3-a740-95fg457h1402","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2026-11-24T06:27:57Z","region":"us-east-1","resources":["i-abcd1111","i-abcd2222"],"detail":{"eventArn":"arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/x","service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"scheduledChange","startTime":"Sat, 05 Dec 2026 03:00:00 GMT","eventDescription":[{"language":"en_US","latestDescription":"retirement"}],"affectedEntities":[{"entityValue":"i-abcd1111"},{"entityValue":"i-abcd2222"}]}}"#;
        let notices = decode(health).unwrap();
        assert_eq!(notices.len(), 2);
        let retirement = NoticeKind::ScheduledChange(ScheduledChange {
            code: "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED".into(),
            start: Some(health_time("2026-12-05T03:00:00Z").unwrap()),
        });
        assert!(notices.iter().all(|n| n.kind == retirement), "{notices:?}");
        let bad_start = health.replace("Sat, 05 Dec 2026 03:00:00 GMT", "soon");
        assert_eq!(
            decode(&bad_start),
            Err(Undecodable::Malformed(
                "detail.startTime \"soon\" is not a time".into()
            ))
        );
        let stopping = r#"{"version":"0","id":"7bf73129-1428-4cd3-a780-95db273d1602","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","account":"123456789012","time":"2026-11-24T14:24:22Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1:123456789012:instance/i-abcd1111"],"detail":{"instance-id":"i-abcd1111","state":"stopping"}}"#;
        assert_eq!(
            decode(stopping).unwrap()[0].kind,
            NoticeKind::StateChange("stopping".into())
        );
        let running = SPOT
            .replace(
                "EC2 Spot Instance Interruption Warning",
                "EC2 Instance State-change Notification",
            )
            .replace(r#""instance-action":"terminate""#, r#""state":"running""#);
        assert!(matches!(decode(&running), Err(Undecodable::Ignored(_))));
        let missing = SPOT.replace("instance-id", "instance");
        assert_eq!(
            decode(&missing),
            Err(Undecodable::Malformed(
                "detail.instance-id is missing".into()
            ))
        );
        assert!(matches!(decode("{}"), Err(Undecodable::Malformed(_))));
    }

    #[test]
    fn only_events_of_the_queues_account_and_region_recent_and_naming_the_instance_count() {
        let origin = Origin {
            account: Some("123456789012".into()),
            region: Some("us-east-2".into()),
        };
        let at = |t: &str| {
            t.parse::<k8s_openapi::jiff::Timestamp>()
                .unwrap()
                .as_second()
        };
        let now = at("2021-02-17T14:06:30Z");
        let with = |from: &str, to: &str| SPOT.replace(from, to);
        // AWS's documented sample names the instance as `arn:aws:ec2:<zone>:instance/<id>`.
        let sample = with("\"account\"", "\"account\"");
        let check = |body: &str| verify(body, &decode(body).unwrap(), &origin, now, 300);
        assert_eq!(check(&sample), Ok(()));
        let full_arn = with(
            "arn:aws:ec2:us-east-2a:instance/",
            "arn:aws:ec2:us-east-2:123456789012:instance/",
        );
        assert_eq!(check(&full_arn), Ok(()));
        for (body, why) in [
            (with("123456789012", "999999999999"), "account"),
            (
                with("\"region\":\"us-east-2\"", "\"region\":\"eu-west-1\""),
                "region",
            ),
            (with("2021-02-17T14:05:57Z", "2021-02-17T13:50:00Z"), "old"),
            (
                with("2021-02-17T14:05:57Z", "2021-02-17T14:20:00Z"),
                "future",
            ),
            (with("2021-02-17T14:05:57Z", "yesterday"), "time"),
            (
                with(
                    "instance/i-1234567890abcdef0",
                    "instance/i-0000000000000000",
                ),
                "resources",
            ),
            (
                with(
                    "\"resources\":[",
                    "\"resources\":[\"i-1234567890abcdef0x\",",
                ),
                "ok",
            ),
        ] {
            let got = check(&body);
            if why == "ok" {
                assert_eq!(got, Ok(()), "{body}");
            } else {
                assert!(
                    matches!(&got, Err(Undecodable::Unverified(w)) if w.contains(why)),
                    "{why}: {got:?}"
                );
            }
        }
        // Without a known account (a queue URL that does not show it), the rest is still checked.
        let anywhere = Origin::default();
        let other = with("123456789012", "999999999999");
        assert_eq!(
            verify(&other, &decode(&other).unwrap(), &anywhere, now, 300),
            Ok(())
        );
        // The age limit is the caller's (`--interruption-max-age`): 33 s old passes 60 s, not 30 s.
        assert_eq!(
            verify(SPOT, &decode(SPOT).unwrap(), &origin, now, 60),
            Ok(())
        );
        assert!(matches!(
            verify(SPOT, &decode(SPOT).unwrap(), &origin, now, 30),
            Err(Undecodable::Unverified(w)) if w.contains("more than 30s old")
        ));
    }

    #[test]
    fn a_scheduled_change_stays_news_until_its_start_and_a_warning_ages_from_its_time() {
        let origin = Origin::default();
        let retirement = r#"{"version":"0","id":"7fb65329-1628-4cf3-a740-95fg457h1402","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012","time":"2026-11-24T06:27:57Z","region":"us-east-1","resources":["i-abcd1111"],"detail":{"eventArn":"arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/x","service":"EC2","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"scheduledChange","startTime":"Sat, 05 Dec 2026 03:00:00 GMT","affectedEntities":[{"entityValue":"i-abcd1111"}]}}"#;
        let notices = decode(retirement).unwrap();
        let start = health_time("2026-12-05T03:00:00Z").unwrap();
        // Received again days after it was published (a restart while it was held): still news.
        let days_later = start - 24 * 3600;
        assert_eq!(
            verify(retirement, &notices, &origin, days_later, 300),
            Ok(())
        );
        // Past its start by more than the age limit, it is as stale as any other.
        assert!(matches!(
            verify(retirement, &notices, &origin, start + 301, 300),
            Err(Undecodable::Unverified(w)) if w.contains("old")
        ));
        // A spot warning published as long ago is stale.
        let published = health_time("2026-11-24T06:27:57Z").unwrap();
        let spot = SPOT.replace("2021-02-17T14:05:57Z", "2026-11-24T06:27:57Z");
        assert!(matches!(
            verify(&spot, &decode(&spot).unwrap(), &origin, published + 301, 300),
            Err(Undecodable::Unverified(w)) if w.contains("old")
        ));
    }

    proptest! {
        #[test]
        fn no_verify_input_makes_it_panic(body in ".{0,300}", now in any::<i64>()) {
            let notices = [Notice { instance_id: "i-1".into(), kind: NoticeKind::Rebalance }];
            let _ = verify(&body, &notices, &Origin::default(), now, 300);
        }

        #[test]
        fn no_body_makes_it_panic(body in ".{0,300}") {
            let _ = decode(&body);
        }

        #[test]
        fn no_detail_makes_it_panic(detail in "[ -~]{0,200}", kind in 0usize..5) {
            let kinds = [
                ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
                ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
                ("aws.ec2", "EC2 Instance State-change Notification"),
                ("aws.health", "AWS Health Event"),
                ("aws.s3", "Object Created"),
            ];
            let (source, detail_type) = kinds[kind];
            let body = format!(r#"{{"source":"{source}","detail-type":"{detail_type}","detail":{detail}}}"#);
            let _ = decode(&body);
        }
    }
}

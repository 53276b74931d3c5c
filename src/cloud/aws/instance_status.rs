//! What EC2 says of an instance's fate now, against which interruption notices are checked before any
//! node is marked ([`crate::cloud::Cloud::check_notices`]): a spot warning against the instance's spot
//! request (DescribeSpotInstanceRequests), a state change against its state (DescribeInstances), a
//! scheduled change against its scheduled events (DescribeInstanceStatus). One call per kind of check
//! for a whole received batch. An answer that confirms a notice is kept for
//! [`ttl::NOTICE_CONFIRMED_TTL`] (what it confirms, an instance marked for termination, stopping or due
//! for retirement, does not come back); one that contradicts is never kept, so a genuine notice that
//! follows a forged one is judged on EC2's word at its own time. A rebalance recommendation leaves no
//! trace in any EC2 answer (the spot request stays `fulfilled`): it stands unchecked.

use std::collections::HashMap;

use aws_sdk_ec2::types::Filter;

use super::api::Api;
use super::ttl;
use crate::cloud::Verdict;
use crate::error::Result;
use crate::model::lifecycle::NoticeKind;

/// Most instance ids one call takes (filter values and DescribeInstanceStatus ids).
const IDS_PER_CALL: usize = 100;

/// Spot request status codes of a healthy request: its instance runs undisturbed.
const HEALTHY: [&str; 2] = ["fulfilled", "request-canceled-and-instance-running"];

/// What a notice is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Check {
    SpotRequest,
    State,
    Events,
}

impl Check {
    /// The check of a notice of `kind`, if EC2 can tell anything about it.
    fn of(kind: &NoticeKind) -> Option<Check> {
        match kind {
            NoticeKind::SpotInterruption => Some(Check::SpotRequest),
            NoticeKind::StateChange(_) => Some(Check::State),
            // A reboot-only change moves nothing: not worth a call.
            NoticeKind::ScheduledChange(c) if !c.reboot_only() => Some(Check::Events),
            NoticeKind::ScheduledChange(_) | NoticeKind::Rebalance => None,
        }
    }
}

/// EC2's word on one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Word {
    Confirms,
    Contradicts(String),
}

/// A spot request status code of an instance being (or already) interrupted: `marked-for-termination`,
/// `marked-for-stop`, `marked-for-hibernation`, `instance-terminated-by-price`, `instance-stopped-...`.
fn interrupting(code: &str) -> bool {
    [
        "marked-for-",
        "instance-terminated-",
        "instance-stopped-",
        "instance-hibernated-",
    ]
    .iter()
    .any(|p| code.starts_with(p))
}

/// The confirmations EC2 gave lately, by check and instance id.
pub struct InstanceStatus {
    confirmed: moka::future::Cache<(Check, String), ()>,
}

impl Default for InstanceStatus {
    fn default() -> Self {
        InstanceStatus {
            confirmed: moka::future::Cache::builder()
                .time_to_live(ttl::NOTICE_CONFIRMED_TTL)
                .max_capacity(10_000)
                .build(),
        }
    }
}

impl InstanceStatus {
    /// One verdict per notice (instance id, kind), in order: a call that fails leaves the notices it
    /// was to check unchecked; an instance EC2's answer leaves out is not contradicted.
    pub async fn check(&self, api: &Api, notices: &[(String, NoticeKind)]) -> Vec<Verdict> {
        let mut wanted: HashMap<Check, Vec<String>> = HashMap::new();
        for (id, kind) in notices {
            if let Some(c) = Check::of(kind) {
                if !self.confirmed.contains_key(&(c, id.clone())) {
                    wanted.entry(c).or_default().push(id.clone());
                }
            }
        }
        let mut answers: HashMap<Check, Result<HashMap<String, Word>>> = HashMap::new();
        for (check, mut ids) in wanted {
            ids.sort();
            ids.dedup();
            let answer = match check {
                Check::SpotRequest => spot_requests(api, &ids).await,
                Check::State => states(api, &ids).await,
                Check::Events => events(api, &ids).await,
            };
            if let Ok(words) = &answer {
                for (id, word) in words {
                    if *word == Word::Confirms {
                        self.confirmed.insert((check, id.clone()), ()).await;
                    }
                }
            }
            answers.insert(check, answer);
        }
        notices
            .iter()
            .map(|(id, kind)| {
                let Some(answer) = Check::of(kind).and_then(|c| answers.get(&c)) else {
                    return Verdict::Stands;
                };
                match answer {
                    Err(e) => Verdict::Unchecked(e.to_string()),
                    Ok(words) => match words.get(id) {
                        Some(Word::Contradicts(why)) => Verdict::Contradicted(why.clone()),
                        Some(Word::Confirms) | None => Verdict::Stands,
                    },
                }
            })
            .collect()
    }
}

/// An `instance-id` filter on `ids`.
fn by_instance(ids: &[String]) -> Filter {
    Filter::builder()
        .name("instance-id")
        .set_values(Some(ids.to_vec()))
        .build()
}

/// A spot warning against the instance's spot request: one being interrupted confirms it; none at all
/// (an on-demand instance) or only healthy ones contradict it; any other status says nothing.
async fn spot_requests(api: &Api, ids: &[String]) -> Result<HashMap<String, Word>> {
    let mut codes: HashMap<String, Vec<String>> = HashMap::new();
    for chunk in ids.chunks(IDS_PER_CALL) {
        let mut token = None;
        loop {
            let page = api
                .call(
                    "ec2/DescribeSpotInstanceRequests",
                    api.ec2
                        .describe_spot_instance_requests()
                        .filters(by_instance(chunk))
                        .set_next_token(token.take())
                        .send(),
                )
                .await?;
            for r in page.spot_instance_requests() {
                if let Some(id) = r.instance_id() {
                    let code = r.status().and_then(|s| s.code()).unwrap_or_default();
                    codes
                        .entry(id.to_string())
                        .or_default()
                        .push(code.to_string());
                }
            }
            match page.next_token() {
                Some(t) if !t.is_empty() => token = Some(t.to_string()),
                _ => break,
            }
        }
    }
    Ok(ids
        .iter()
        .filter_map(|id| {
            let word = match codes.get(id) {
                None => Word::Contradicts("EC2 has no spot request for the instance".into()),
                Some(cs) if cs.iter().any(|c| interrupting(c)) => Word::Confirms,
                Some(cs) if cs.iter().all(|c| HEALTHY.contains(&c.as_str())) => {
                    Word::Contradicts(format!("its spot request is {}", cs.join(", ")))
                }
                Some(_) => return None,
            };
            Some((id.clone(), word))
        })
        .collect())
}

/// Every instance of `ids` EC2 describes (DescribeInstances, `IDS_PER_CALL` ids a call, each call
/// paged), handed to `visit`: the one walk of DescribeInstances (notices' states, mixed groups' markets).
pub(super) async fn describe_instances(
    api: &Api,
    ids: &[String],
    mut visit: impl FnMut(&aws_sdk_ec2::types::Instance),
) -> Result<()> {
    for chunk in ids.chunks(IDS_PER_CALL) {
        let mut token = None;
        loop {
            let page = api
                .call(
                    "ec2/DescribeInstances",
                    api.ec2
                        .describe_instances()
                        .filters(by_instance(chunk))
                        .set_next_token(token.take())
                        .send(),
                )
                .await?;
            for i in page.reservations().iter().flat_map(|r| r.instances()) {
                visit(i);
            }
            match page.next_token() {
                Some(t) if !t.is_empty() => token = Some(t.to_string()),
                _ => break,
            }
        }
    }
    Ok(())
}

/// A state change against the instance's state: pending or running contradicts it, any other state
/// (stopping, stopped, shutting-down, terminated) confirms it.
async fn states(api: &Api, ids: &[String]) -> Result<HashMap<String, Word>> {
    let mut out = HashMap::new();
    describe_instances(api, ids, |i| {
        let (Some(id), Some(state)) = (i.instance_id(), i.state().and_then(|s| s.name())) else {
            return;
        };
        let word = match state.as_str() {
            s @ ("pending" | "running") => Word::Contradicts(format!("the instance is {s}")),
            _ => Word::Confirms,
        };
        out.insert(id.to_string(), word);
    })
    .await?;
    Ok(out)
}

/// A scheduled change against the instance's scheduled events: one not completed or canceled confirms
/// it, none contradicts it.
async fn events(api: &Api, ids: &[String]) -> Result<HashMap<String, Word>> {
    let mut out = HashMap::new();
    for chunk in ids.chunks(IDS_PER_CALL) {
        let mut token = None;
        loop {
            let page = api
                .call(
                    "ec2/DescribeInstanceStatus",
                    api.ec2
                        .describe_instance_status()
                        .set_instance_ids(Some(chunk.to_vec()))
                        .include_all_instances(true)
                        .set_next_token(token.take())
                        .send(),
                )
                .await?;
            for s in page.instance_statuses() {
                let Some(id) = s.instance_id() else { continue };
                let live = s.events().iter().any(|e| {
                    !e.description().is_some_and(|d| {
                        d.starts_with("[Completed]") || d.starts_with("[Canceled]")
                    })
                });
                let word = if live {
                    Word::Confirms
                } else {
                    Word::Contradicts("EC2 has no scheduled event for the instance".into())
                };
                out.insert(id.to_string(), word);
            }
            match page.next_token() {
                Some(t) if !t.is_empty() => token = Some(t.to_string()),
                _ => break,
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupted_codes_confirm_and_healthy_ones_do_not() {
        for code in [
            "marked-for-termination",
            "marked-for-stop",
            "marked-for-hibernation",
            "instance-terminated-by-price",
            "instance-stopped-by-price",
        ] {
            assert!(interrupting(code), "{code}");
        }
        for code in HEALTHY.iter().chain(&["pending-evaluation", ""]) {
            assert!(!interrupting(code), "{code}");
        }
    }
}

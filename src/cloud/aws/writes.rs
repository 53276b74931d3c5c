//! IncreaseSize, DeleteNodes and DecreaseTargetSize on Auto Scaling groups. Each write holds its group's
//! lock and computes what it sends from a fresh DescribeAutoScalingGroups of that group, never from the
//! shared snapshot: a snapshot a minute old (or another replica's) would send a lower desired capacity
//! and make AWS terminate running nodes. What AWS accepted is published at once. The caller's
//! [`WriteGuard`] is checked with the lock held immediately before each write call: a write queued
//! behind another starts nothing once its caller's right has ended.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::group::with_sizes;
use super::{ttl, AwsCloud};
use crate::cloud::WriteGuard;
use crate::error::{DomainError, Error, Result, Revoked};
use crate::model::{instance_id, InstanceState, NodeGroup};

impl AwsCloud {
    /// The write lock of a group of the snapshot: an id that names no group allocates nothing.
    fn group_lock(&self, group: &str) -> Result<Arc<tokio::sync::Mutex<()>>> {
        let snapshot = self.state.load();
        snapshot.group(group)?;
        let mut locks = self.group_locks.lock();
        if locks.len() > snapshot.groups().count() {
            // Groups that left the snapshot take their locks with them.
            locks.retain(|id, _| snapshot.group(id).is_ok());
        }
        Ok(locks.entry(group.to_string()).or_default().clone())
    }

    /// The group as AWS holds it now: bounds, desired capacity and instances read afresh (the template
    /// and price as cached). A group AWS no longer lists is dropped and not found.
    async fn fresh_group(&self, group: &str) -> Result<NodeGroup> {
        let cached = self.state.load().group(group)?.clone();
        let raw = self.api.groups_by_name(&[group.to_string()]).await?;
        let Some(mut info) = raw.into_iter().next().map(|r| r.info) else {
            self.state.remove(group);
            return Err(DomainError::GroupNotFound(group.to_string()).into());
        };
        super::refresh::apply_bounds(self, &mut info);
        Ok(with_sizes(&cached, &info))
    }

    /// Whether we terminated this instance in the last [`ttl::TERMINATED_MEMORY`].
    fn terminated(&self, provider_id: &str) -> bool {
        self.terminated.lock().contains_key(provider_id)
    }

    fn remember_terminated(&self, provider_id: &str) {
        let mut t = self.terminated.lock();
        let now = Instant::now();
        t.retain(|_, at| now.duration_since(*at) < ttl::TERMINATED_MEMORY);
        t.insert(provider_id.to_string(), now);
    }
}

/// The write `action` on `group` not started for `why`, after `done` and before `not_done`.
fn not_started(
    group: &str,
    action: &str,
    why: Revoked,
    done: &[String],
    not_done: &[String],
) -> Error {
    Error::NotStarted {
        group: group.to_string(),
        action: action.to_string(),
        why,
        done: done.to_vec(),
        not_done: not_done.to_vec(),
    }
}

const SET_DESIRED: &str = "SetDesiredCapacity";
const TERMINATE: &str = "TerminateInstanceInAutoScalingGroup";

impl AwsCloud {
    /// Publishes the fresh group read for a refused write (it is the newest truth) and returns the error.
    fn refuse<T>(&self, fresh: NodeGroup, e: Error) -> Result<T> {
        self.state.write(fresh);
        Err(e)
    }

    pub(super) async fn write_increase(
        &self,
        group: &str,
        delta: i32,
        guard: &WriteGuard,
    ) -> Result<()> {
        let lock = self.group_lock(group)?;
        let _held = guard
            .lock(&lock)
            .await
            .map_err(|why| not_started(group, SET_DESIRED, why, &[], &[]))?;
        let mut g = self.fresh_group(group).await?;
        let target = match g.plan_increase(delta) {
            Ok(t) => t,
            Err(e) => return self.refuse(g, e.into()),
        };
        if let Err(why) = guard.check() {
            return self.refuse(g, not_started(group, SET_DESIRED, why, &[], &[]));
        }
        if let Err(e) = self.api.set_desired_capacity(group, target).await {
            return self.refuse(g, e);
        }
        self.last_scale_up
            .lock()
            .insert(group.to_string(), SystemTime::now());
        g.target_size = target;
        g.launch_error = None;
        self.state.write(g);
        Ok(())
    }

    pub(super) async fn write_delete(
        &self,
        group: &str,
        provider_ids: &[String],
        guard: &WriteGuard,
    ) -> Result<()> {
        let lock = self.group_lock(group)?;
        let _held = guard
            .lock(&lock)
            .await
            .map_err(|why| not_started(group, TERMINATE, why, &[], provider_ids))?;
        let known = self.state.load().group(group)?.clone();
        let mut g = self.fresh_group(group).await?;
        // Instances the group had, or that we terminated, which AWS no longer lists are already gone (a
        // retry of a call that partly succeeded): nothing is left to do for them.
        let asked: Vec<String> = provider_ids
            .iter()
            .filter(|id| {
                let is = g.instances.iter().any(|i| &i.id == *id);
                let was = known.instances.iter().any(|i| &i.id == *id) || self.terminated(id);
                is || !was
            })
            .cloned()
            .collect();
        if asked.is_empty() {
            self.state.write(g);
            return Ok(());
        }
        let plan = match g.plan_delete(&asked) {
            Ok(p) => p,
            Err(e) => return self.refuse(g, e.into()),
        };
        let mut deleted = Vec::new();
        if !plan.placeholders.is_empty() {
            // Unfulfilled capacity has no instance to terminate: cancel it by lowering the desired
            // capacity, checked against the fresh read above.
            if let Err(why) = guard.check() {
                return self.refuse(g, not_started(group, SET_DESIRED, why, &[], &asked));
            }
            let target = g.target_size - plan.placeholders.len() as i32;
            if let Err(e) = self.api.set_desired_capacity(group, target).await {
                return self.refuse(g, e);
            }
            g.set_target(target);
            deleted.extend(plan.placeholders.iter().cloned());
        }
        for (k, pid) in plan.instances.iter().enumerate() {
            if let Err(why) = guard.check() {
                let e = not_started(group, TERMINATE, why, &deleted, &plan.instances[k..]);
                return self.refuse(g, e);
            }
            if let Err(cause) = self.api.terminate_instance(instance_id(pid)).await {
                // Publish exactly what AWS holds: read it again, else count what it accepted.
                let now = match self.fresh_group(group).await {
                    Ok(fresh) => fresh,
                    Err(_) => g,
                };
                if deleted.is_empty() {
                    return self.refuse(now, cause);
                }
                return self.refuse(
                    now,
                    Error::PartiallyDeleted {
                        group: group.to_string(),
                        deleted,
                        failed: pid.clone(),
                        cause: Box::new(cause),
                        not_attempted: plan.instances[k + 1..].to_vec(),
                    },
                );
            }
            g.target_size -= 1;
            self.remember_terminated(pid);
            if let Some(i) = g.instances.iter_mut().find(|i| &i.id == pid) {
                i.state = InstanceState::Deleting;
            }
            deleted.push(pid.clone());
        }
        self.state.write(g);
        Ok(())
    }

    pub(super) async fn write_decrease(
        &self,
        group: &str,
        delta: i32,
        guard: &WriteGuard,
    ) -> Result<()> {
        let lock = self.group_lock(group)?;
        let _held = guard
            .lock(&lock)
            .await
            .map_err(|why| not_started(group, SET_DESIRED, why, &[], &[]))?;
        let mut g = self.fresh_group(group).await?;
        let target = match g.plan_decrease(delta) {
            Ok(t) => t,
            Err(e) => return self.refuse(g, e.into()),
        };
        if let Err(why) = guard.check() {
            return self.refuse(g, not_started(group, SET_DESIRED, why, &[], &[]));
        }
        if let Err(e) = self.api.set_desired_capacity(group, target).await {
            return self.refuse(g, e);
        }
        g.set_target(target);
        self.state.write(g);
        Ok(())
    }
}

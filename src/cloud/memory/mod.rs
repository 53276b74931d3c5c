//! The embedded in-memory cloud (`--cloud memory --memory-config FILE`): node groups described in YAML,
//! instances created and deleted at once. It makes the real server runnable with no cloud account and is
//! the reference behaviour every other cloud is tested against.
//!
//! Instances get AWS-style provider ids (`aws:///<zone>/i-…`) when the group has a
//! `topology.kubernetes.io/zone` label and `memory:///<group>/i-…` otherwise. A group may set
//! `launchCapacity`: launches beyond it stay unfulfilled and are reported as creating placeholders with an
//! `InsufficientInstanceCapacity` error, as an AWS group out of capacity is.
//!
//! `simulate` drives it too ([`MemoryCloud::for_simulation`]): then instances are named
//! `sim:///<group>/i-sim-<n>`, start creating and run once `--provision-delay` has passed on a virtual
//! clock ([`MemoryCloud::advance_to`]); every resize goes through the same `plan_*` checks.

mod config;
mod prices;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;

pub use config::{GroupConfig, InstanceConfig, MemoryConfig, QuantityText, DEFAULT_MAX_PODS};
pub use prices::{instance_price, InstanceLifecycle};

use super::{Cloud, Readiness, SnapshotCell, WriteGuard};
use crate::error::{Error, Result};
use crate::labels;
use crate::model::{
    provider_id, ErrorClass, Instance, InstanceError, InstanceState, NodeGroup, Snapshot,
};
use crate::pricing::PriceOverrides;

/// The virtual clock of a simulation and the launches not running yet.
struct Lifecycle {
    now: i64,
    /// Seconds from launch to running, for groups not in `delays`.
    delay: i64,
    /// Seconds from launch to running of the groups that have their own.
    delays: BTreeMap<String, i64>,
    /// Instances launched so far (their names count from 1).
    launched: u64,
    /// (running at, group, provider id), in launch order.
    launching: Vec<(i64, String, String)>,
}

/// Mutable bookkeeping behind the published snapshot; only touched with the write lock held.
struct WriteState {
    next_instance: u64,
    /// Instances each group can still launch (`None` = unlimited).
    launch_capacity: BTreeMap<String, Option<i32>>,
    /// Set when `simulate` drives the cloud.
    simulated: Option<Lifecycle>,
}

impl WriteState {
    /// A new instance of `group`: running at once, or (simulating) creating until its delay passed.
    fn launch(&mut self, group: &NodeGroup) -> Instance {
        match &mut self.simulated {
            Some(sim) => {
                sim.launched += 1;
                let id = provider_id::format(
                    provider_id::SIM,
                    &group.id,
                    &format!("i-sim-{}", sim.launched),
                );
                let delay = sim.delays.get(&group.id).copied().unwrap_or(sim.delay);
                sim.launching
                    .push((sim.now + delay, group.id.clone(), id.clone()));
                Instance {
                    id,
                    state: InstanceState::Creating,
                    error: None,
                }
            }
            None => {
                self.next_instance += 1;
                Instance {
                    id: format!("{}i-{:017x}", group.provider_id_prefix, self.next_instance),
                    state: InstanceState::Running,
                    error: None,
                }
            }
        }
    }

    /// Launches instances until `group` has `target` (or capacity runs out, recording the error).
    fn launch_up_to_target(&mut self, group: &mut NodeGroup) {
        let wanted = group.placeholder_count();
        let capacity = self.launch_capacity.get(&group.id).copied().flatten();
        let launch = capacity.map_or(wanted, |c| wanted.min(c.max(0) as usize));
        for _ in 0..launch {
            let instance = self.launch(group);
            // A new instance comes from the group's current revision.
            if let Some(rev) = &group.lifecycle.revision {
                group
                    .lifecycle
                    .instance_revisions
                    .insert(instance.id.clone(), rev.clone());
            }
            group.instances.push(instance);
        }
        if let Some(Some(c)) = self.launch_capacity.get_mut(&group.id) {
            *c -= launch as i32;
        }
        group.launch_error = (launch < wanted).then(|| InstanceError {
            code: "InsufficientInstanceCapacity".into(),
            message: format!(
                "We currently do not have sufficient {} capacity in the Availability Zone you requested.",
                group
                    .template
                    .labels
                    .get(labels::INSTANCE_TYPE)
                    .map(String::as_str)
                    .unwrap_or("instance")
            ),
            class: ErrorClass::OutOfResources,
        });
    }
}

/// The in-memory cloud.
pub struct MemoryCloud {
    snapshot: SnapshotCell,
    writes: Mutex<WriteState>,
}

impl MemoryCloud {
    /// Builds the groups of a config, launching their initial instances.
    pub fn new(config: &MemoryConfig) -> Result<Self> {
        Self::with_prices(config, &PriceOverrides::default())
    }

    /// A cloud whose group prices are the config's `pricePerHour` adjusted by the user's price file (by
    /// the template's instance type, then by group).
    pub fn with_prices(config: &MemoryConfig, overrides: &PriceOverrides) -> Result<Self> {
        let mut state = WriteState {
            next_instance: 0x0f3e_0000_0000,
            launch_capacity: BTreeMap::new(),
            simulated: None,
        };
        let mut groups = Vec::new();
        for (i, g) in config.node_groups.iter().enumerate() {
            let mut group = config::group(i, g, overrides)?;
            state
                .launch_capacity
                .insert(g.name.clone(), g.launch_capacity);
            state.launch_up_to_target(&mut group);
            groups.push(group);
        }
        Ok(MemoryCloud {
            snapshot: SnapshotCell::new(Snapshot::new(groups)),
            writes: Mutex::new(state),
        })
    }

    /// The cloud `simulate` drives: the config's groups with no instances (the simulation adopts its
    /// snapshot's nodes with [`MemoryCloud::adopt`]), on a virtual clock that begins at `now`; launches
    /// run at once until [`MemoryCloud::set_provision_delays`] says otherwise.
    pub fn for_simulation(
        config: &MemoryConfig,
        overrides: &PriceOverrides,
        now: i64,
    ) -> Result<Self> {
        let mut bare = config.clone();
        for g in &mut bare.node_groups {
            g.instances.clear();
            g.target_size = Some(g.min_size.max(0));
            g.launch_capacity = None;
        }
        let cloud = Self::with_prices(&bare, overrides)?;
        {
            let mut state = cloud.writes.lock();
            state.launch_capacity = config
                .node_groups
                .iter()
                .map(|g| (g.name.clone(), g.launch_capacity))
                .collect();
            state.simulated = Some(Lifecycle {
                now,
                delay: 0,
                delays: BTreeMap::new(),
                launched: 0,
                launching: Vec::new(),
            });
        }
        Ok(cloud)
    }

    /// Time from a launch to its instance running, from now on (simulations only): `delay`, or a
    /// group's own in `by_group`.
    pub fn set_provision_delays<'a>(
        &self,
        delay: Duration,
        by_group: impl IntoIterator<Item = (&'a str, Duration)>,
    ) {
        let secs = crate::model::duration::secs;
        let mut state = self.writes.lock();
        if let Some(sim) = &mut state.simulated {
            sim.delay = secs(delay);
            sim.delays.clear();
            sim.delays
                .extend(by_group.into_iter().map(|(g, d)| (g.to_string(), secs(d))));
        }
    }

    /// Gives a group exactly these instances and this target size (a simulation adopting its nodes).
    pub fn adopt(
        &self,
        group: &str,
        instances: Vec<Instance>,
        target: i32,
        revisions: BTreeMap<String, String>,
        prices: BTreeMap<String, f64>,
    ) -> Result<()> {
        self.update(group, (&WriteGuard::always(), "adopt", &[]), |_, g| {
            g.instances = instances;
            g.lifecycle.instance_revisions = revisions;
            g.instance_prices = prices;
            g.set_target(target);
            Ok(())
        })
    }

    /// Moves the virtual clock to `now`: launches whose delay has passed run; returns them, in launch
    /// order, as (group, provider id).
    pub fn advance_to(&self, now: i64) -> Vec<(String, String)> {
        let mut state = self.writes.lock();
        let Some(sim) = &mut state.simulated else {
            return Vec::new();
        };
        sim.now = now;
        let (due, later): (Vec<_>, Vec<_>) =
            sim.launching.drain(..).partition(|(at, _, _)| *at <= now);
        sim.launching = later;
        let mut next = Snapshot::clone(&self.snapshot());
        let mut ran = Vec::new();
        for (_, group, id) in due {
            if let Ok(g) = next.group(&group) {
                let mut g = NodeGroup::clone(g);
                if let Some(i) = g.instances.iter_mut().find(|i| i.id == id) {
                    i.state = InstanceState::Running;
                }
                next.upsert(g);
            }
            ran.push((group, id));
        }
        self.snapshot.store(next);
        ran
    }

    /// IncreaseSize, without the async trait (the memory cloud never waits).
    pub fn increase(&self, group: &str, delta: i32, guard: &WriteGuard) -> Result<()> {
        self.update(group, (guard, "IncreaseSize", &[]), |state, g| {
            g.target_size = g.plan_increase(delta)?;
            state.launch_up_to_target(g);
            Ok(())
        })
    }

    /// DeleteNodes, without the async trait.
    pub fn delete(&self, group: &str, provider_ids: &[String], guard: &WriteGuard) -> Result<()> {
        self.update(group, (guard, "DeleteNodes", provider_ids), |state, g| {
            let plan = g.plan_delete(provider_ids)?;
            g.instances.retain(|i| !plan.instances.contains(&i.id));
            g.set_target(plan.new_target);
            if let Some(sim) = &mut state.simulated {
                sim.launching
                    .retain(|(_, _, id)| !plan.instances.contains(id));
            }
            Ok(())
        })
    }

    /// DecreaseTargetSize, without the async trait.
    pub fn decrease(&self, group: &str, delta: i32, guard: &WriteGuard) -> Result<()> {
        self.update(group, (guard, "DecreaseTargetSize", &[]), |_, g| {
            g.set_target(g.plan_decrease(delta)?);
            Ok(())
        })
    }

    /// Applies `change` to one group under the write lock and publishes the result; nothing is published
    /// when `change` fails, so a refused request leaves no trace. The write (`action`, on `ids`) is not
    /// made once `guard` refuses, checked with the lock held.
    fn update(
        &self,
        group: &str,
        (guard, action, ids): (&WriteGuard, &str, &[String]),
        change: impl FnOnce(&mut WriteState, &mut NodeGroup) -> Result<()>,
    ) -> Result<()> {
        let mut state = self.writes.lock();
        if let Err(why) = guard.check() {
            return Err(Error::NotStarted {
                group: group.to_string(),
                action: action.to_string(),
                why,
                done: Vec::new(),
                not_done: ids.to_vec(),
            });
        }
        let current = self.snapshot();
        let mut g = NodeGroup::clone(current.group(group)?);
        change(&mut state, &mut g)?;
        let mut next = Snapshot::clone(&current);
        next.upsert(g);
        self.snapshot.store(next);
        Ok(())
    }
}

#[async_trait]
impl Cloud for MemoryCloud {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load()
    }

    async fn refresh(&self) -> Result<()> {
        Ok(())
    }

    async fn increase_size(&self, group: &str, delta: i32, guard: &WriteGuard) -> Result<()> {
        self.increase(group, delta, guard)
    }

    async fn delete_nodes(
        &self,
        group: &str,
        provider_ids: &[String],
        guard: &WriteGuard,
    ) -> Result<()> {
        self.delete(group, provider_ids, guard)
    }

    async fn decrease_target_size(
        &self,
        group: &str,
        delta: i32,
        guard: &WriteGuard,
    ) -> Result<()> {
        self.decrease(group, delta, guard)
    }

    fn readiness(&self) -> Readiness {
        let s = self.snapshot();
        Readiness {
            ready: true,
            detail: format!(
                "memory cloud: {} node groups, {} instances",
                s.groups().count(),
                s.instance_count()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = "
nodeGroups:
  - name: general
    minSize: 0
    maxSize: 3
    targetSize: 1
    capacity: {cpu: 4, memory: 16Gi, pods: 58}
    labels: {topology.kubernetes.io/zone: us-east-1a}
";

    #[test]
    fn template_has_well_known_labels_and_reserved_allocatable() {
        let cloud = MemoryCloud::new(&MemoryConfig::parse(ONE).unwrap()).unwrap();
        let s = cloud.snapshot();
        let g = s.group("general").unwrap();
        assert_eq!(g.instances.len(), 1);
        assert!(g.instances[0].id.starts_with("aws:///us-east-1a/i-"));
        let t = &g.template;
        assert_eq!(t.labels["topology.kubernetes.io/region"], "us-east-1");
        assert_eq!(t.labels["kubernetes.io/hostname"], t.name);
        assert_eq!(t.allocatable.cpu_milli, 3920);
        assert_eq!(t.allocatable.memory, 15391 << 20);
    }

    #[test]
    fn config_errors_name_the_field() {
        let err = |yaml: &str| match MemoryConfig::parse(yaml).and_then(|c| MemoryCloud::new(&c)) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted bad config:\n{yaml}"),
        };
        assert!(
            err(&ONE.replace("16Gi", "16Gx")).contains("nodeGroups[0] (general).capacity.memory")
        );
        assert!(err(&ONE.replace("targetSize: 1", "targetSize: 9")).contains("targetSize"));
        assert!(err(&ONE.replace("pods: 58", "pods: 58, bogus: 1Q")).contains("capacity.bogus"));
        assert!(err(&ONE.replace("minSize", "minsize")).contains("minsize"));
        assert!(err(&format!("{ONE}{}", &ONE[12..])).contains("duplicate"));
    }

    #[test]
    fn a_refused_guard_changes_nothing_and_says_what_was_not_done() {
        let cloud = MemoryCloud::new(&MemoryConfig::parse(ONE).unwrap()).unwrap();
        let (guard, caller) = WriteGuard::for_caller(None);
        drop(caller);
        let id = cloud.snapshot().group("general").unwrap().instances[0]
            .id
            .clone();
        let e = cloud
            .delete("general", std::slice::from_ref(&id), &guard)
            .unwrap_err();
        match e {
            Error::NotStarted {
                why,
                done,
                not_done,
                ..
            } => {
                assert_eq!(why, crate::error::Revoked::Cancelled);
                assert!(done.is_empty());
                assert_eq!(not_done, vec![id]);
            }
            other => panic!("{other}"),
        }
        assert!(cloud.increase("general", 1, &guard).is_err());
        let g = cloud.snapshot().group("general").unwrap().clone();
        assert_eq!(
            (g.target_size, g.instances.len()),
            (1, 1),
            "nothing changed"
        );
    }
}

//! Which instance types a group launches: its launch configuration, launch template version or
//! mixed-instances policy, resolved through AWS and cached ([`super::ttl`]: numbered template versions and
//! configurations never change, `$Default`/`$Latest` are re-read every 10 minutes). A group whose launch
//! data cannot be read gets its error alone; the other groups are resolved as usual. An attribute-based
//! policy's types come from its instance requirements ([`super::attribute_types`]).

use std::collections::{BTreeMap, BTreeSet};

use super::api::{Api, LaunchSource, RawGroup};
use super::attribute_types::Resolver;
use super::requirements::{Floor, Requirements};
use super::ttl;
use super::types::LaunchFacts;
use crate::error::Error;

/// Cached launch facts.
pub struct LaunchCache {
    fixed: moka::future::Cache<LaunchSource, LaunchFacts>,
    moving: moka::future::Cache<LaunchSource, LaunchFacts>,
    requirements: Resolver,
}

/// A group's launch resolved: its types, whether it asks for spot, its revision, its requirements' floor.
type Resolved = (Vec<String>, bool, Option<String>, Option<Floor>);

impl Default for LaunchCache {
    fn default() -> Self {
        LaunchCache {
            fixed: moka::future::Cache::builder()
                .time_to_live(ttl::LAUNCH_TEMPLATE_FIXED_VERSION_TTL)
                .build(),
            moving: moka::future::Cache::builder()
                .time_to_live(ttl::LAUNCH_TEMPLATE_MOVING_VERSION_TTL)
                .build(),
            requirements: Resolver::default(),
        }
    }
}

impl LaunchCache {
    /// Fills each group's `instance_types` and `spot_launch`; returns the groups whose launch data could
    /// not be read, with why.
    pub async fn resolve(
        &self,
        api: &Api,
        raw: &mut BTreeMap<String, RawGroup>,
    ) -> BTreeMap<String, Error> {
        let mut failed = BTreeMap::new();
        let configs_error = self.load_configurations(api, raw).await.err();
        for (name, g) in raw.iter_mut() {
            if let (LaunchSource::Configuration(_), Some(e)) = (&g.launch, &configs_error) {
                failed.insert(name.clone(), e.clone());
                continue;
            }
            let resolved = match &g.launch {
                LaunchSource::Mixed {
                    overrides,
                    requirements,
                    template,
                    override_templates,
                } => {
                    match self.override_revisions(api, override_templates).await {
                        Ok(revisions) => g.info.override_revisions = revisions,
                        Err(e) => {
                            failed.insert(name.clone(), e);
                            continue;
                        }
                    }
                    self.mixed(
                        api,
                        name,
                        overrides,
                        requirements.as_deref(),
                        template.as_deref(),
                    )
                    .await
                }
                LaunchSource::Configuration(name) => self.facts(api, &g.launch).await.map(|f| {
                    let rev = super::lifecycle::configuration_revision(name);
                    (
                        f.instance_type.into_iter().collect(),
                        f.spot,
                        Some(rev),
                        None,
                    )
                }),
                other => match self.facts(api, other).await {
                    Ok(f) => self
                        .template_types(api, name, &f, None)
                        .await
                        .map(|(types, floor)| (types, f.spot, f.revision, floor)),
                    Err(e) => Err(e),
                },
            };
            match resolved {
                Ok((types, spot, revision, floor)) => {
                    (g.info.instance_types, g.info.spot_launch, g.info.revision) =
                        (types, spot, revision);
                    g.info.requirements_floor = floor;
                }
                Err(e) => {
                    failed.insert(name.clone(), e);
                }
            }
        }
        failed
    }

    /// A mixed-instances policy: its typed overrides, else its override's instance requirements, else its
    /// template's type or requirements ([`Self::template_types`]). Its InstancesDistribution, not its
    /// template, decides spot or on-demand.
    async fn mixed(
        &self,
        api: &Api,
        group: &str,
        overrides: &[String],
        requirements: Option<&Requirements>,
        template: Option<&LaunchSource>,
    ) -> crate::error::Result<Resolved> {
        let Some(t) = template else {
            return Ok((overrides.to_vec(), false, None, None));
        };
        let f = self.facts(api, t).await?;
        if !overrides.is_empty() {
            return Ok((overrides.to_vec(), false, f.revision, None));
        }
        let (types, floor) = self.template_types(api, group, &f, requirements).await?;
        Ok((types, false, f.revision, floor))
    }

    /// The resolved revisions of the launch templates a mixed-instances policy's overrides name (their
    /// `$Default`/`$Latest` followed as the group's own template's): instances launched from them are
    /// current, not drift.
    async fn override_revisions(
        &self,
        api: &Api,
        templates: &[LaunchSource],
    ) -> crate::error::Result<BTreeSet<String>> {
        let mut out = BTreeSet::new();
        for t in templates {
            out.extend(self.facts(api, t).await?.revision);
        }
        Ok(out)
    }

    /// The type a launch template launches: `overriding` requirements (a policy's override), else its
    /// instance type, else its own requirements. Requirements give the first type EC2 names for them and
    /// the template image's architecture (as upstream), with the requirements' floor.
    async fn template_types(
        &self,
        api: &Api,
        group: &str,
        f: &LaunchFacts,
        overriding: Option<&Requirements>,
    ) -> crate::error::Result<(Vec<String>, Option<Floor>)> {
        let req = match (overriding, &f.instance_type, &f.requirements) {
            (Some(r), _, _) | (None, None, Some(r)) => r,
            (None, t, _) => return Ok((t.iter().cloned().collect(), None)),
        };
        let image = f.image_id.as_deref().ok_or_else(|| Error::GroupData {
            group: group.to_string(),
            reason: "instance requirements, but the launch template names no image".into(),
        })?;
        let types = self.requirements.types(api, group, req, image).await?;
        Ok((
            types.first().cloned().into_iter().collect(),
            Some(req.floor),
        ))
    }

    /// Reads the launch configurations not cached yet, 50 per call.
    async fn load_configurations(
        &self,
        api: &Api,
        raw: &BTreeMap<String, RawGroup>,
    ) -> crate::error::Result<()> {
        let configs: BTreeSet<&String> = raw
            .values()
            .filter_map(|g| match &g.launch {
                LaunchSource::Configuration(n) => Some(n),
                _ => None,
            })
            .collect();
        let mut missing = Vec::new();
        for name in configs {
            let key = LaunchSource::Configuration(name.clone());
            if self.fixed.get(&key).await.is_none() {
                missing.push(name.clone());
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let found = api.launch_configurations(&missing).await?;
        for name in missing {
            let t = found.get(&name).cloned().unwrap_or_default();
            self.fixed
                .insert(LaunchSource::Configuration(name), t)
                .await;
        }
        Ok(())
    }

    async fn facts(&self, api: &Api, source: &LaunchSource) -> crate::error::Result<LaunchFacts> {
        match source {
            LaunchSource::Configuration(_) => Ok(self.fixed.get(source).await.unwrap_or_default()),
            LaunchSource::Template { id, name, version } => {
                let cache = if version.parse::<u64>().is_ok() {
                    &self.fixed
                } else {
                    &self.moving
                };
                if let Some(t) = cache.get(source).await {
                    return Ok(t);
                }
                let t = api
                    .launch_template(id.as_deref(), name.as_deref(), version)
                    .await?;
                cache.insert(source.clone(), t.clone()).await;
                Ok(t)
            }
            LaunchSource::Mixed { .. } | LaunchSource::Unknown => Ok(LaunchFacts::default()),
        }
    }
}

//! `descheduler/v1alpha2`: profiles of plugins enabled at their extension points, each configured
//! by its `pluginConfig` entry, as the descheduler's policy loader and profile builder read them.

use super::check::strategy_args;
use super::evictor_args::{evictor_args, DEFAULT_EVICTOR};
use super::field::{Field, Object, NULL};
use super::{limits, Configured, Draft, DraftProfile, PolicyError, Warning, MAX_PROFILES};
use crate::deschedule::args::Strategy;
use crate::deschedule::strategies::balances;

const TOP: [&str; 11] = [
    "apiVersion",
    "kind",
    "profiles",
    "nodeSelector",
    "maxNoOfPodsToEvictPerNode",
    "maxNoOfPodsToEvictPerNamespace",
    "maxNoOfPodsToEvictTotal",
    "evictionFailureEventNotification",
    "metricsCollector",
    "metricsProviders",
    "gracePeriodSeconds",
];

/// The extension points, as written (the descheduler's JSON names are lower case:
/// `preevictionfilter`, `presort`; its own README writes `preEvictionFilter`, which it ignores).
const POINTS: [&str; 8] = [
    "deschedule",
    "balance",
    "filter",
    "preEvictionFilter",
    "preevictionfilter",
    "preSort",
    "presort",
    "sort",
];

pub(super) fn read(root: &Field) -> Result<(Draft, Vec<Warning>), PolicyError> {
    // v1alpha1's `strategies`, left null by the descheduler's chart when a user unsets its v1alpha1
    // default (its issues #1268, #1383): read as absent, as the descheduler ran such files.
    let mut known = TOP.to_vec();
    known.push("strategies");
    let o = root.object(&known)?;
    let mut draft = Draft::default();
    let mut warnings = Vec::new();
    if let Some(s) = o.opt("strategies") {
        return Err(s.err(
            "a descheduler/v1alpha1 field: a v1alpha2 policy enables plugins in its profiles \
             (null is accepted, as the descheduler's chart leaves it)",
        ));
    }
    if o.map_has("strategies") {
        warnings.push(Warning::new(
            "strategies",
            "null: ignored (a v1alpha1 field the descheduler's chart leaves in v1alpha2 files)",
        ));
    }
    limits(&o, &mut draft.limits)?;
    if let Some(g) = o.opt("gracePeriodSeconds") {
        draft.limits.grace_period_seconds = Some(g.int(0, i64::MAX)?.unsigned_abs());
    }
    if let Some(n) = o.opt("evictionFailureEventNotification") {
        if n.boolean()? {
            warnings.push(Warning::new(
                &n.path,
                "no effect: ferroscale reports every eviction it declines or that fails",
            ));
        }
    }
    metrics(&o, &mut warnings)?;
    // Counted before the profiles' fields are made.
    let count = o.get("profiles").value.as_sequence().map_or(0, Vec::len);
    if count > MAX_PROFILES {
        return Err(PolicyError::field(
            "profiles",
            format!("{count} profiles is over the limit of {MAX_PROFILES}"),
        ));
    }
    let profiles = o.get("profiles").items()?;
    if profiles.is_empty() {
        warnings.push(Warning::new("profiles", "none: nothing is descheduled"));
    }
    let mut names = std::collections::HashSet::new();
    for p in profiles {
        let mut local = Vec::new();
        let name = p
            .object(&["name", "pluginConfig", "plugins"])?
            .get("name")
            .string()?
            .to_string();
        if name.is_empty() {
            return Err(PolicyError::field(p.sub("name"), "a profile needs a name"));
        }
        if !names.insert(name.clone()) {
            return Err(PolicyError::field(
                p.sub("name"),
                format!("profile name {name:?} used twice"),
            ));
        }
        let profile = profile(&p, name.clone(), &mut local).map_err(|e| e.in_profile(&name))?;
        warnings.extend(local.into_iter().map(|mut w| {
            w.profile = Some(name.clone());
            w
        }));
        draft.profiles.push(profile);
    }
    Ok((draft, warnings))
}

fn profile(
    f: &Field,
    name: String,
    warnings: &mut Vec<Warning>,
) -> Result<DraftProfile, PolicyError> {
    let o = f.object(&["name", "pluginConfig", "plugins"])?;
    let mut configs: Vec<(&str, Field)> = Vec::new();
    for c in o.get("pluginConfig").items()? {
        let entry = c.object(&["name", "args"])?;
        let n = entry.get("name");
        let plugin = n.string()?;
        if plugin != DEFAULT_EVICTOR && Strategy::parse(plugin).is_none() {
            return Err(n.err(format!(
                "plugin {plugin:?} in pluginConfig is not one the descheduler has ({})",
                known()
            )));
        }
        if configs.iter().any(|(p, _)| *p == plugin) {
            return Err(n.err(format!("plugin {plugin:?} configured twice")));
        }
        configs.push((plugin, entry.get("args")));
    }
    let config = |plugin: &str| {
        configs
            .iter()
            .find(|(p, _)| *p == plugin)
            .map(|(_, a)| a.clone())
    };

    let plugins = o.get("plugins").object(&POINTS)?;
    for point in ["filter", "preEvictionFilter", "preevictionfilter"] {
        let (enabled, disabled) = set(&plugins, point)?;
        for e in enabled {
            let plugin = e.string()?;
            if plugin != DEFAULT_EVICTOR {
                return Err(e.err(format!(
                    "{plugin:?}: the only {point} plugin is DefaultEvictor (enabled there by default)"
                )));
            }
        }
        if !disabled.is_empty() {
            warnings.push(Warning::new(
                plugins.get(point).sub("disabled"),
                "no effect: the descheduler ignores disabled plugins, and DefaultEvictor always filters",
            ));
        }
    }
    for point in ["preSort", "presort", "sort"] {
        let (enabled, disabled) = set(&plugins, point)?;
        if !enabled.is_empty() || !disabled.is_empty() {
            warnings.push(Warning::new(
                plugins.get(point).path,
                "no effect: the descheduler has no plugin at this extension point",
            ));
        }
    }
    let mut enabled: Vec<(Strategy, String)> = Vec::new();
    for (point, balance) in [("deschedule", false), ("balance", true)] {
        let (on, off) = set(&plugins, point)?;
        for e in on {
            let plugin = e.string()?;
            let Some(s) = Strategy::parse(plugin) else {
                let why = if plugin == DEFAULT_EVICTOR {
                    format!("DefaultEvictor is a filter plugin, not a {point} one")
                } else {
                    format!("unknown plugin {plugin:?} ({})", known())
                };
                return Err(e.err(why));
            };
            if balances(s) != balance {
                let other = if balance { "deschedule" } else { "balance" };
                return Err(e.err(format!(
                    "{plugin} is a {other} plugin: enable it under plugins.{other}"
                )));
            }
            if enabled.iter().any(|(p, _)| *p == s) {
                return Err(e.err(format!("{plugin} enabled twice")));
            }
            enabled.push((s, e.path.clone()));
        }
        if !off.is_empty() {
            warnings.push(Warning::new(
                plugins.get(point).sub("disabled"),
                "no effect: the descheduler runs only the plugins enabled",
            ));
        }
    }

    let evictor = match config(DEFAULT_EVICTOR) {
        Some(args) => Configured {
            args: evictor_args(&args, warnings)?,
            at: args.path.clone(),
            defaults_only: false,
        },
        None => Configured {
            args: evictor_args(&Field::new(&NULL, f.sub("pluginConfig")), warnings)?,
            at: f.sub("pluginConfig"),
            defaults_only: true,
        },
    };
    let mut strategies = Vec::new();
    for (s, at) in &enabled {
        let configured = match config(s.name()) {
            Some(args) => Configured {
                args: strategy_args(*s, &args)?,
                at: args.path.clone(),
                defaults_only: false,
            },
            None => Configured {
                args: strategy_args(*s, &Field::new(&NULL, at.clone())).map_err(|e| {
                    PolicyError::field(
                        at,
                        format!(
                            "{s} has no pluginConfig entry, and its defaults are not enough: {}",
                            e.why()
                        ),
                    )
                })?,
                at: at.clone(),
                defaults_only: true,
            },
        };
        strategies.push((*s, configured));
    }
    for (plugin, args) in &configs {
        let unused = Strategy::parse(plugin).is_some_and(|s| !enabled.iter().any(|(e, _)| *e == s));
        if unused {
            warnings.push(Warning::new(
                args.path.trim_end_matches(".args"),
                format!("{plugin} is configured but not enabled: it does not run"),
            ));
        }
    }
    Ok(DraftProfile {
        name,
        evictor,
        strategies,
    })
}

/// An extension point's `{enabled, disabled}` lists.
fn set<'a>(
    plugins: &Object<'a>,
    point: &str,
) -> Result<(Vec<Field<'a>>, Vec<Field<'a>>), PolicyError> {
    let s = plugins.get(point).object(&["enabled", "disabled"])?;
    let (enabled, disabled) = (s.get("enabled").items()?, s.get("disabled").items()?);
    for f in enabled.iter().chain(&disabled) {
        f.string()?;
    }
    Ok((enabled, disabled))
}

/// The plugins there are, for messages.
fn known() -> String {
    let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
    format!("known: {DEFAULT_EVICTOR}, {}", names.join(", "))
}

/// `metricsCollector` and `metricsProviders`: checked as the descheduler does, then ignored:
/// metrics-server is read whenever a `metricsUtilization` asks, and Prometheus never.
fn metrics(o: &Object, warnings: &mut Vec<Warning>) -> Result<(), PolicyError> {
    let collector = match o.opt("metricsCollector") {
        Some(c) => {
            let c = c.object(&["enabled"])?;
            let on = c
                .opt("enabled")
                .map(|e| e.boolean())
                .transpose()?
                .unwrap_or(false);
            warnings.push(Warning::new("metricsCollector", NOT_NEEDED));
            on
        }
        None => false,
    };
    let mut sources: Vec<String> = Vec::new();
    for p in o.get("metricsProviders").items()? {
        let po = p.object(&["source", "prometheus"])?;
        let source = po
            .opt("source")
            .map(|s| s.string())
            .transpose()?
            .unwrap_or("");
        if sources.iter().any(|s| s == source) {
            return Err(po.get("source").err(format!(
                "metrics provider {source:?} is already configured: each source can be configured once"
            )));
        }
        sources.push(source.to_string());
        match source {
            "KubernetesMetrics" if collector => {
                return Err(po.get("source").err(
                    "not allowed to combine a metrics provider with metricsCollector enabled",
                ))
            }
            "Prometheus" => prometheus(&po.get("prometheus"))?,
            "KubernetesMetrics" | "" => {}
            other => {
                return Err(po.get("source").err(format!(
                    "unknown source {other:?} (known: KubernetesMetrics, Prometheus)"
                )))
            }
        }
        let why = match source {
            "Prometheus" => {
                "ignored: ferroscale does not read Prometheus (a metricsUtilization \
                             with source Prometheus is refused)"
            }
            _ => NOT_NEEDED,
        };
        warnings.push(Warning::new(&p.path, why));
    }
    Ok(())
}

/// Why the metrics-server settings have no effect of their own.
const NOT_NEEDED: &str = "no effect of its own: ferroscale reads metrics.k8s.io whenever a \
                          LowNodeUtilization's metricsUtilization asks";

fn prometheus(f: &Field) -> Result<(), PolicyError> {
    if f.is_null() {
        return Err(f.err("prometheus configuration is required when prometheus source is enabled"));
    }
    let p = f.object(&["url", "authToken"])?;
    let url = p.opt("url").map(|u| u.string()).transpose()?.unwrap_or("");
    if url.is_empty() {
        return Err(p
            .get("url")
            .err("prometheus URL is required when prometheus is enabled"));
    }
    bad_port(url).map_or(Ok(()), |why| Err(p.get("url").err(why)))?;
    if let Some(t) = p.opt("authToken") {
        let t = t.object(&["secretReference"])?;
        let Some(r) = t.opt("secretReference") else {
            return Err(t
                .get("secretReference")
                .err("prometheus authToken secret is expected to be set when authToken field is"));
        };
        let r = r.object(&["namespace", "name"])?;
        for k in ["namespace", "name"] {
            if r.opt(k)
                .map(|v| v.string())
                .transpose()?
                .unwrap_or("")
                .is_empty()
            {
                return Err(r.get(k).err(
                    "prometheus authToken secret reference does not set both namespace and name",
                ));
            }
        }
    }
    Ok(())
}

/// Why a URL's port is not one (`http://example.com:-80`), as Go's `url.Parse` refuses it.
fn bad_port(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let port = match host.rsplit_once(']') {
        Some((_, after)) => after.strip_prefix(':'),
        None => host.rsplit_once(':').map(|(_, p)| p),
    }?;
    (!port.chars().all(|c| c.is_ascii_digit()))
        .then(|| format!("invalid port {:?} after host", format!(":{port}")))
}

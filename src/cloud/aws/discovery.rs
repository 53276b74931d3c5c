//! Which Auto Scaling groups ferroscale manages: upstream CA's `--node-group-auto-discovery` and `--nodes`.

use crate::error::{Error, Result};

/// `asg:tag=KEY[=VALUE],KEY2...`: groups carrying every listed tag (AND), with the value when given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagDiscovery {
    pub tags: Vec<(String, Option<String>)>,
}

impl TagDiscovery {
    /// Parses one `--node-group-auto-discovery` value.
    pub fn parse(spec: &str) -> Result<Self> {
        let bad = |why: &str| {
            Error::config(format!(
                "--node-group-auto-discovery {spec:?}: {why} (expected asg:tag=KEY[=VALUE],KEY2...)"
            ))
        };
        let rest = spec
            .strip_prefix("asg:")
            .ok_or_else(|| bad("only the asg: discoverer is supported"))?;
        let list = rest
            .strip_prefix("tag=")
            .ok_or_else(|| bad("only tag= filters are supported"))?;
        let tags = list
            .split(',')
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
                None => (kv.trim().to_string(), None),
            })
            .collect::<Vec<_>>();
        if tags.iter().any(|(k, _)| k.is_empty()) {
            return Err(bad("empty tag key"));
        }
        Ok(TagDiscovery { tags })
    }

    /// Whether a group's tags satisfy every condition.
    pub fn matches(&self, tags: &std::collections::BTreeMap<String, String>) -> bool {
        self.tags.iter().all(|(k, v)| match (tags.get(k), v) {
            (Some(_), None) => true,
            (Some(have), Some(want)) => have == want,
            (None, _) => false,
        })
    }
}

/// `--nodes MIN:MAX:NAME`: a group managed by name, whose bounds win over the group's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedGroup {
    pub min: i32,
    pub max: i32,
    pub name: String,
}

impl NamedGroup {
    /// Parses one `--nodes` value.
    pub fn parse(spec: &str) -> Result<Self> {
        let bad =
            |why: String| Error::config(format!("--nodes {spec:?}: {why} (expected MIN:MAX:NAME)"));
        let mut parts = spec.splitn(3, ':');
        let (Some(min), Some(max), Some(name)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("three fields needed".into()));
        };
        let min: i32 = min
            .parse()
            .map_err(|_| bad(format!("min {min:?} is not a number")))?;
        let max: i32 = max
            .parse()
            .map_err(|_| bad(format!("max {max:?} is not a number")))?;
        if min < 0 || max < min {
            return Err(bad(format!("need 0 <= min <= max, got {min}:{max}")));
        }
        if name.is_empty() {
            return Err(bad("empty group name".into()));
        }
        Ok(NamedGroup {
            min,
            max,
            name: name.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_upstream_forms() {
        let d = TagDiscovery::parse(
            "asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod=owned",
        )
        .unwrap();
        assert_eq!(
            d.tags,
            vec![
                ("k8s.io/cluster-autoscaler/enabled".into(), None),
                (
                    "k8s.io/cluster-autoscaler/prod".into(),
                    Some("owned".into())
                )
            ]
        );
        let tags = [
            (
                "k8s.io/cluster-autoscaler/enabled".to_string(),
                "true".to_string(),
            ),
            (
                "k8s.io/cluster-autoscaler/prod".to_string(),
                "owned".to_string(),
            ),
        ]
        .into_iter()
        .collect();
        assert!(d.matches(&tags));
        assert!(!TagDiscovery::parse("asg:tag=a,b").unwrap().matches(&tags));
        assert!(TagDiscovery::parse("mig:tag=x").is_err());
        assert!(TagDiscovery::parse("asg:tag=").is_err());
        assert_eq!(
            NamedGroup::parse("1:10:my-asg").unwrap(),
            NamedGroup {
                min: 1,
                max: 10,
                name: "my-asg".into()
            }
        );
        assert!(NamedGroup::parse("5:1:x").is_err());
        assert!(NamedGroup::parse("a:1:x").is_err());
        assert!(NamedGroup::parse("1:2").is_err());
    }
}

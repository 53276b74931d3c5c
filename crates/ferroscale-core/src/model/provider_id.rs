//! Provider ids, a node's `spec.providerID` and an instance's id in CA's protocol:
//! `<scheme>:///<location>/<instance>`, as CA's AWS provider writes them
//! (`aws:///us-east-1a/i-0123456789abcdef0`). The one place that builds and splits them, so the AWS
//! cloud, the memory cloud, the simulator and the loop cannot disagree on the format.

use std::fmt;

use thiserror::Error;

/// The scheme of AWS instances (the location is the availability zone).
pub const AWS: &str = "aws";
/// The scheme of the memory cloud's groups without a zone (the location is the group).
pub const MEMORY: &str = "memory";
/// The scheme of instances the simulator makes up (the location is the group).
pub const SIM: &str = "sim";

/// A provider id split into its parts, borrowed from the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProviderId<'a> {
    pub scheme: &'a str,
    /// The availability zone for AWS; the group for the memory cloud and the simulator.
    pub location: &'a str,
    /// The cloud's own name of the instance (`i-0abc…`).
    pub instance: &'a str,
}

impl fmt::Display for ProviderId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:///{}/{}", self.scheme, self.location, self.instance)
    }
}

/// Text that is not `<scheme>:///<location>/<instance>`; says which part is wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("provider id {id:?}: {reason} (expected <scheme>:///<location>/<instance>)")]
pub struct BadProviderId {
    pub id: String,
    pub reason: &'static str,
}

impl<'a> ProviderId<'a> {
    /// Splits `id`; every part must be there, and the instance has no `/`.
    pub fn parse(id: &'a str) -> Result<Self, BadProviderId> {
        let bad = |reason| BadProviderId {
            id: id.to_string(),
            reason,
        };
        let (scheme, rest) = id.split_once(":///").ok_or_else(|| bad("no \":///\""))?;
        if scheme.is_empty() || scheme.contains('/') {
            return Err(bad("no scheme"));
        }
        let (location, instance) = rest.rsplit_once('/').ok_or_else(|| bad("no location"))?;
        if location.is_empty() {
            return Err(bad("no location"));
        }
        if instance.is_empty() {
            return Err(bad("no instance"));
        }
        Ok(ProviderId {
            scheme,
            location,
            instance,
        })
    }
}

/// The provider id of `instance` at `location` under `scheme`.
pub fn format(scheme: &str, location: &str, instance: &str) -> String {
    ProviderId {
        scheme,
        location,
        instance,
    }
    .to_string()
}

/// The provider id of an EC2 instance: `aws:///<zone>/<instance id>`.
pub fn aws(zone: &str, instance_id: &str) -> String {
    format(AWS, zone, instance_id)
}

/// What every provider id of `location` under `scheme` starts with (a group's
/// [`provider_id_prefix`](super::NodeGroup::provider_id_prefix)); the instance follows.
pub fn prefix(scheme: &str, location: &str) -> String {
    format!("{scheme}:///{location}/")
}

/// The instance id at the end of a provider id (`aws:///us-east-1a/i-0abc` → `i-0abc`), as cloud
/// notices and the cloud's own calls name an instance. Lenient where [`ProviderId::parse`] is strict:
/// text without a `/` is taken as an instance id already.
pub fn instance_id(provider_id: &str) -> &str {
    provider_id.rsplit('/').next().unwrap_or(provider_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_aws_provider_id_is_built_and_split_back() {
        let id = aws("us-east-1a", "i-0123456789abcdef0");
        assert_eq!(id, "aws:///us-east-1a/i-0123456789abcdef0");
        assert_eq!(
            ProviderId::parse(&id),
            Ok(ProviderId {
                scheme: AWS,
                location: "us-east-1a",
                instance: "i-0123456789abcdef0",
            })
        );
        assert_eq!(instance_id(&id), "i-0123456789abcdef0");
        assert!(id.starts_with(&prefix(AWS, "us-east-1a")));
        assert_eq!(format(SIM, "workers", "i-sim-3"), "sim:///workers/i-sim-3");
    }

    #[test]
    fn malformed_provider_ids_say_what_is_missing() {
        for (id, reason) in [
            ("", "no \":///\""),
            ("i-0abc", "no \":///\""),
            ("aws://us-east-1a/i-0abc", "no \":///\""),
            (":///us-east-1a/i-0abc", "no scheme"),
            ("aws:///i-0abc", "no location"),
            ("aws:////i-0abc", "no location"),
            ("aws:///us-east-1a/", "no instance"),
        ] {
            assert_eq!(
                ProviderId::parse(id),
                Err(BadProviderId {
                    id: id.to_string(),
                    reason
                }),
                "{id:?}"
            );
        }
        let err = ProviderId::parse("aws:///z/").unwrap_err().to_string();
        assert!(
            err.contains("\"aws:///z/\"") && err.contains("no instance"),
            "{err}"
        );
    }

    #[test]
    fn instance_ids_are_read_leniently() {
        assert_eq!(instance_id("i-0abc"), "i-0abc");
        assert_eq!(instance_id("aws:///z/"), "");
        assert_eq!(instance_id(""), "");
    }

    proptest! {
        #[test]
        fn parsing_never_panics_and_what_parses_prints_back(s in ".*") {
            if let Ok(p) = ProviderId::parse(&s) {
                prop_assert_eq!(p.to_string(), s.clone());
                prop_assert_eq!(p.instance, instance_id(&s));
            }
        }

        #[test]
        fn formatted_ids_parse_back(
            scheme in "[a-z]{1,8}",
            location in "[a-z0-9-]{1,16}",
            instance in "[a-z0-9-]{1,20}",
        ) {
            let id = format(&scheme, &location, &instance);
            let p = ProviderId::parse(&id).unwrap();
            prop_assert_eq!((p.scheme, p.location, p.instance), (&*scheme, &*location, &*instance));
        }
    }
}

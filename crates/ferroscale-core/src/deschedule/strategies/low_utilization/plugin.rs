//! `LowNodeUtilization` as a [`Plugin`]: its name, extension point, arguments' decoding and
//! v1alpha1 mapping (beside its algorithm, in the parent file).

use serde_norway::Mapping;

use super::{propose, propose_into, LowNodeUtilizationArgs};
use crate::deschedule::args::{ArgsError, Strategy};
use crate::deschedule::policy::decode::{self, copy};
use crate::deschedule::policy::field::Object;
use crate::deschedule::policy::PolicyError;
use crate::deschedule::strategies::Plugin;
use crate::deschedule::view::Verdict;
use crate::deschedule::{Evictor, Proposal, View};

impl Plugin for LowNodeUtilizationArgs {
    const STRATEGY: Strategy = Strategy::LowNodeUtilization;
    const BALANCES: bool = true;
    const FIELDS: &'static [&'static str] = &[
        "useDeviationThresholds",
        "thresholds",
        "targetThresholds",
        "numberOfNodes",
        "metricsUtilization",
        "evictableNamespaces",
        "evictionLimits",
    ];
    const V1ALPHA1_PARAMS: &'static [&'static str] =
        &["namespaces", "nodeResourceUtilizationThresholds"];

    fn decode(o: &Object) -> Result<(), PolicyError> {
        decode::namespaces(o, "evictableNamespaces")?;
        decode::flag(o, "useDeviationThresholds")?;
        decode::thresholds(&o.get("thresholds"))?;
        decode::thresholds(&o.get("targetThresholds"))?;
        decode::number_of_nodes(o)?;
        if let Some(m) = o.opt("metricsUtilization") {
            let m = m.object(&["metricsServer", "source", "prometheus"])?;
            decode::flag(&m, "metricsServer")?;
            if let Some(s) = m.opt("source") {
                s.string()?;
            }
            if let Some(p) = m.opt("prometheus") {
                let p = p.object(&["query"])?;
                if let Some(q) = p.opt("query") {
                    q.string()?;
                }
            }
        }
        if let Some(l) = o.opt("evictionLimits") {
            let l = l.object(&["node"])?;
            if let Some(n) = l.opt("node") {
                n.int(0, u32::MAX.into())?;
            }
        }
        Ok(())
    }

    fn from_v1alpha1(p: &Object, out: &mut Mapping) -> Result<(), PolicyError> {
        copy(out, p, "namespaces", "evictableNamespaces");
        let t = p.get("nodeResourceUtilizationThresholds").object(&[
            "useDeviationThresholds",
            "thresholds",
            "targetThresholds",
            "numberOfNodes",
        ])?;
        for key in [
            "thresholds",
            "numberOfNodes",
            "targetThresholds",
            "useDeviationThresholds",
        ] {
            copy(out, &t, key, key);
        }
        Ok(())
    }

    fn check(&self) -> Result<(), ArgsError> {
        self.validate()
    }

    fn proposals(&self, view: &View, evictor: &Evictor) -> Vec<Proposal> {
        propose(self, view, evictor)
    }

    fn proposals_into(
        &self,
        view: &View,
        evictor: &Evictor,
        sink: &mut dyn FnMut(Proposal) -> Verdict,
    ) {
        propose_into(self, view, evictor, sink)
    }
}

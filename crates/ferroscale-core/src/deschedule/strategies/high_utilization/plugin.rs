//! `HighNodeUtilization` as a [`Plugin`]: its name, extension point, arguments' decoding and
//! v1alpha1 mapping (beside its algorithm, in the parent file).

use serde_norway::Mapping;

use super::{propose, propose_into, HighNodeUtilizationArgs};
use crate::deschedule::args::{ArgsError, Strategy};
use crate::deschedule::policy::decode::{self, copy};
use crate::deschedule::policy::field::Object;
use crate::deschedule::policy::PolicyError;
use crate::deschedule::strategies::Plugin;
use crate::deschedule::view::Verdict;
use crate::deschedule::{Evictor, Proposal, View};

impl Plugin for HighNodeUtilizationArgs {
    const STRATEGY: Strategy = Strategy::HighNodeUtilization;
    const BALANCES: bool = true;
    const FIELDS: &'static [&'static str] = &[
        "thresholds",
        "numberOfNodes",
        "evictionModes",
        "evictableNamespaces",
    ];
    const V1ALPHA1_PARAMS: &'static [&'static str] =
        &["namespaces", "nodeResourceUtilizationThresholds"];

    fn decode(o: &Object) -> Result<(), PolicyError> {
        decode::namespaces(o, "evictableNamespaces")?;
        decode::thresholds(&o.get("thresholds"))?;
        decode::number_of_nodes(o)?;
        for m in o.get("evictionModes").items()? {
            if m.string()? != "OnlyThresholdingResources" {
                return Err(m.err("invalid eviction mode (known: OnlyThresholdingResources)"));
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
        copy(out, &t, "thresholds", "thresholds");
        copy(out, &t, "numberOfNodes", "numberOfNodes");
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

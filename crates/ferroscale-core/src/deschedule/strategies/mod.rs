//! One module per descheduler plugin, each implementing [`Plugin`] for its arguments: its name, its
//! extension point, its arguments' decoding, defaults, checks and v1alpha1 mapping, and the
//! evictions it proposes. Over them all, the one list [`plugins!`] makes [`PluginArgs`] (a strategy
//! with its arguments), [`with_plugin`] and [`propose`]. A strategy only proposes; `plan` decides.

use serde::de::DeserializeOwned;
use serde_norway::Mapping;

use super::args::{ArgsError, Strategy};
use super::policy::field::Object;
use super::policy::PolicyError;
use super::view::Verdict;
use super::{Evictor, Proposal, View};
use failed::RemoveFailedPodsArgs;
use high_utilization::HighNodeUtilizationArgs;
use inter_pod_anti_affinity::RemovePodsViolatingInterPodAntiAffinityArgs;
use lifetime::PodLifeTimeArgs;
use low_utilization::LowNodeUtilizationArgs;
use node_affinity::RemovePodsViolatingNodeAffinityArgs;
use node_taints::RemovePodsViolatingNodeTaintsArgs;
use remove_duplicates::RemoveDuplicatesArgs;
use restarts::RemovePodsHavingTooManyRestartsArgs;
use spread::RemovePodsViolatingTopologySpreadConstraintArgs;

pub mod failed;
pub mod fit;
pub mod high_utilization;
pub mod inter_pod_anti_affinity;
pub mod lifetime;
pub mod low_utilization;
pub mod measured;
pub mod node_affinity;
pub mod node_taints;
pub mod remove_duplicates;
pub mod restarts;
pub mod scope;
pub mod spread;
#[cfg(test)]
pub(crate) mod testkit;
pub mod usage;

/// One descheduler plugin, implemented by its arguments' type in the plugin's own file: everything
/// the policy and the plan need of it, so a new strategy is its file and a line in [`plugins!`]
/// (and its name in [`Strategy`]).
pub(crate) trait Plugin: Sized + Default + DeserializeOwned + Into<PluginArgs> {
    /// Its plugin name.
    const STRATEGY: Strategy;
    /// Whether the descheduler runs it at its `balance` extension point (else `deschedule`).
    const BALANCES: bool;
    /// The fields of its args in the descheduler (`types.go`), besides `apiVersion`/`kind`.
    const FIELDS: &'static [&'static str];
    /// The v1alpha1 `params` it reads (the evictor's `thresholdPriority*` and `nodeFit` aside).
    const V1ALPHA1_PARAMS: &'static [&'static str];
    /// Whether its v1alpha1 `params.nodeFit` goes to its evictor (PodLifeTime's conversion dropped it).
    const V1ALPHA1_NODE_FIT: bool = true;

    /// Its args' shapes decoded on the policy's values (types, enum values), each refusal naming
    /// its field; the known fields are already checked.
    fn decode(args: &Object) -> Result<(), PolicyError>;

    /// The descheduler's defaults (`defaults.go`), applied to the decoded values.
    fn defaults(_args: &mut Mapping) {}

    /// Its v1alpha2 args from its v1alpha1 `params` (`StrategyParamsToPluginArgs`).
    fn from_v1alpha1(params: &Object, out: &mut Mapping) -> Result<(), PolicyError>;

    /// The strategy's own checks of its arguments (its `validation.go`), and a refusal of what
    /// ferroscale does not honour where ignoring it would evict more than the policy asks.
    fn check(&self) -> Result<(), ArgsError>;

    /// The evictions it proposes this cycle, as if the plan made every one.
    fn proposals(&self, view: &View, evictor: &Evictor) -> Vec<Proposal>;

    /// The evictions it proposes, each told to `sink` and answered with what the plan made of
    /// it (by default every one either way; a strategy that goes on to its next candidate when
    /// one is declined overrides it).
    fn proposals_into(
        &self,
        view: &View,
        evictor: &Evictor,
        sink: &mut dyn FnMut(Proposal) -> Verdict,
    ) {
        for p in self.proposals(view, evictor) {
            sink(p);
        }
    }
}

/// Something done with a strategy's [`Plugin`] type, picked by [`with_plugin`] from its name.
pub(crate) trait PluginFn {
    type Out;
    fn call<P: Plugin>(self) -> Self::Out;
}

/// The one list of plugins: each strategy's variant and its args' type.
macro_rules! plugins {
    ($($s:ident => $args:ty,)*) => {
        /// A strategy with its arguments.
        #[derive(Debug, Clone, PartialEq)]
        pub enum PluginArgs {
            $($s($args),)*
        }

        $(impl From<$args> for PluginArgs {
            fn from(a: $args) -> PluginArgs {
                PluginArgs::$s(a)
            }
        })*

        /// `f` done with the plugin type of `s`.
        pub(crate) fn with_plugin<F: PluginFn>(s: Strategy, f: F) -> F::Out {
            match s {
                $(Strategy::$s => f.call::<$args>(),)*
            }
        }

        impl PluginArgs {
            pub fn strategy(&self) -> Strategy {
                match self {
                    $(PluginArgs::$s(_) => Strategy::$s,)*
                }
            }

            /// The strategy's own checks of its arguments (its `validation.go`), and a refusal
            /// of what ferroscale does not honour where ignoring it would evict more than the
            /// policy asks. Every policy goes through it (`Policy::parse`).
            pub fn validate(&self) -> Result<(), ArgsError> {
                match self {
                    $(PluginArgs::$s(a) => a.check(),)*
                }
            }

            fn plugin_proposals(&self, view: &View, evictor: &Evictor) -> Vec<Proposal> {
                match self {
                    $(PluginArgs::$s(a) => a.proposals(view, evictor),)*
                }
            }

            fn plugin_proposals_into(
                &self,
                view: &View,
                evictor: &Evictor,
                sink: &mut dyn FnMut(Proposal) -> Verdict,
            ) {
                match self {
                    $(PluginArgs::$s(a) => a.proposals_into(view, evictor, sink),)*
                }
            }
        }
    };
}

plugins! {
    RemoveDuplicates => RemoveDuplicatesArgs,
    LowNodeUtilization => LowNodeUtilizationArgs,
    HighNodeUtilization => HighNodeUtilizationArgs,
    RemovePodsViolatingInterPodAntiAffinity => RemovePodsViolatingInterPodAntiAffinityArgs,
    RemovePodsViolatingNodeAffinity => RemovePodsViolatingNodeAffinityArgs,
    RemovePodsViolatingNodeTaints => RemovePodsViolatingNodeTaintsArgs,
    RemovePodsViolatingTopologySpreadConstraint => RemovePodsViolatingTopologySpreadConstraintArgs,
    RemovePodsHavingTooManyRestarts => RemovePodsHavingTooManyRestartsArgs,
    PodLifeTime => PodLifeTimeArgs,
    RemoveFailedPods => RemoveFailedPodsArgs,
}

/// Whether the descheduler runs `s` at its `balance` extension point (else `deschedule`).
pub fn balances(s: Strategy) -> bool {
    struct Balances;
    impl PluginFn for Balances {
        type Out = bool;
        fn call<P: Plugin>(self) -> bool {
            P::BALANCES
        }
    }
    with_plugin(s, Balances)
}

impl PluginArgs {
    /// The strategy's arguments read from a policy's `pluginConfig` args, as `policy` decoded and
    /// defaulted them (their shape and the descheduler's defaults are applied there, on the values;
    /// [`PluginArgs::validate`] then checks them).
    pub fn from_value(
        s: Strategy,
        args: serde_norway::Value,
    ) -> Result<PluginArgs, serde_norway::Error> {
        struct Read(serde_norway::Value);
        impl PluginFn for Read {
            type Out = Result<PluginArgs, serde_norway::Error>;
            fn call<P: Plugin>(self) -> Self::Out {
                Ok(serde_norway::from_value::<P>(self.0)?.into())
            }
        }
        with_plugin(s, Read(args))
    }

    /// The args struct's own defaults (tests and callers that build args in code). A policy that
    /// enables a plugin without a `pluginConfig` entry gets the descheduler's defaults instead,
    /// which `policy` applies to the values before `from_value`.
    pub fn default_for(s: Strategy) -> PluginArgs {
        struct Default;
        impl PluginFn for Default {
            type Out = PluginArgs;
            fn call<P: Plugin>(self) -> PluginArgs {
                P::default().into()
            }
        }
        with_plugin(s, Default)
    }
}

/// The evictions a configured strategy proposes this cycle, each told to `sink` as it is made and
/// answered with what the plan made of it: `LowNodeUtilization` and `HighNodeUtilization` go on to
/// their next candidates when one is declined; the others propose every pod they find either way.
pub fn propose_into(
    args: &PluginArgs,
    view: &View,
    evictor: &Evictor,
    sink: &mut dyn FnMut(Proposal) -> Verdict,
) {
    args.plugin_proposals_into(view, evictor, sink)
}

/// The evictions a configured strategy proposes this cycle, as if the plan made every one.
pub fn propose(args: &PluginArgs, view: &View, evictor: &Evictor) -> Vec<Proposal> {
    args.plugin_proposals(view, evictor)
}

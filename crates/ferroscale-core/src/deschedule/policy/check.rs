//! Each strategy's arguments decoded on the policy's own values (known fields, types, the values an
//! enum can hold, each refusal naming its field), with the descheduler's defaults (`defaults.go`):
//! the result is what the strategy's typed arguments are read from. Each strategy's own part is
//! its `Plugin` impl; the plugins' `validation.go` rules are the typed args' `validate`.

use serde_norway::Value;

use super::decode::type_meta;
use super::field::{cleaned, Field};
use super::PolicyError;
use crate::deschedule::args::Strategy;
use crate::deschedule::strategies::{with_plugin, Plugin, PluginFn};

/// A strategy's `pluginConfig` args (null: none given), decoded (known fields, types, the values
/// an enum can hold), with the descheduler's defaults. The plugin's `validation.go` rules are the
/// typed args' `validate`, which every policy then goes through.
pub(super) fn strategy_args(s: Strategy, args: &Field) -> Result<Value, PolicyError> {
    struct Decode<'f, 'a>(&'f Field<'a>);
    impl PluginFn for Decode<'_, '_> {
        type Out = Result<Value, PolicyError>;
        fn call<P: Plugin>(self) -> Self::Out {
            let mut known = P::FIELDS.to_vec();
            known.extend(["apiVersion", "kind"]);
            let o = self.0.object(&known)?;
            type_meta(&o, &format!("{}Args", P::STRATEGY))?;
            P::decode(&o)?;
            let mut out = cleaned(self.0.value);
            P::defaults(&mut out);
            Ok(Value::Mapping(out))
        }
    }
    with_plugin(s, Decode(args))
}

//! ferroscale's core: the model (`model`), the autoscaling engine (`engine`) and price arithmetic
//! (`pricing`), as pure functions of a snapshot, the settings and a clock. No I/O, no clock reads of its
//! own, no protocol or cloud types: the compiler keeps it so, since this crate depends on none of them.
//! Decisions and the reasons behind them are typed; text is only their `Display`.

pub mod backoff;
pub mod bounds;
pub mod clock;
pub mod deschedule;
pub mod engine;
pub mod error;
pub mod labels;
pub mod model;
pub mod pricing;

pub use error::{Error, Result};

#[cfg(test)]
mod fixtures;

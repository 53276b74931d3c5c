//! The checks the descheduler's `Validate…Args` functions share: `namespaces` and `labelSelector`.

use crate::deschedule::args::{Namespaces, Selector};

/// At most one of `namespaces.include` / `namespaces.exclude`, and a `labelSelector` that parses.
pub fn scope(namespaces: &Option<Namespaces>, selector: &Option<Selector>) -> Result<(), String> {
    if let Some(n) = namespaces {
        if !n.include.is_empty() && !n.exclude.is_empty() {
            return Err("namespaces: only one of include and exclude may be set".to_string());
        }
    }
    if let Some(s) = selector {
        s.to_selector().map_err(|e| format!("labelSelector: {e}"))?;
    }
    Ok(())
}

//! The bounds of every local input (policy files, node groups, the priority ConfigMap, the price file,
//! `--events`, `--config`, cluster dumps): its size in bytes and its nesting depth, both checked before
//! the parser runs, so no input can make a parser recurse or allocate without limit. (`libyaml`'s
//! scanner is quadratic in flow nesting: 200 KB of `{a: {a: …` took seconds before `serde_norway`'s own
//! recursion limit of 128 was reached.) The depth is found by a linear pre-scan of the text ([`scan`]):
//! for YAML, block indentation levels and sequence entries plus flow brackets outside quotes, comments
//! and block scalars (an upper bound of the depth the parser sees); for JSON, brackets outside strings.
//! Every refusal names the input and the limit. The table of limits is `docs/reference/limits.md`.

use std::fmt;
use std::io::Read;

mod scan;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_decoders;

/// An input's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// What the input is, for errors: `descheduler policy`, `--price-overrides file`.
    pub input: &'static str,
    /// The most bytes its text may have.
    pub max_bytes: usize,
    /// The deepest its nesting may go (each mapping or sequence inside another is one level).
    pub max_depth: usize,
}

/// The nesting every input but dumps may have: far more than any of them needs (a policy's plugin
/// args are 6 levels deep), far less than the parser's own limit of 128.
pub const DEPTH: usize = 32;

/// A descheduler policy file (`--deschedule-policy`): 256 KiB (the descheduler's own examples are a
/// few hundred bytes; its profiles are also counted, `deschedule::policy::MAX_PROFILES`).
pub const POLICY: Bounds = Bounds {
    input: "descheduler policy",
    max_bytes: 256 << 10,
    max_depth: DEPTH,
};

/// The priority expander's tiers (`--priority-config`, and the ConfigMap's `priorities` key, which a
/// namespace's admin may write): 256 KiB, and at most
/// [`MAX_PRIORITY_PATTERNS`](crate::engine::expander::MAX_PRIORITY_PATTERNS) regexes, counted before
/// any is compiled.
pub const PRIORITIES: Bounds = Bounds {
    input: "priorities",
    max_bytes: 256 << 10,
    max_depth: DEPTH,
};

/// The price file (`--price-overrides`): 1 MiB (an entry per instance type and group).
pub const PRICE_OVERRIDES: Bounds = Bounds {
    input: "price overrides",
    max_bytes: 1 << 20,
    max_depth: DEPTH,
};

/// Why an input is refused before it is parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exceeded {
    /// Its text is longer than its limit.
    Size {
        input: &'static str,
        bytes: u64,
        max: usize,
    },
    /// It nests deeper than its limit, first at `line` (1-based).
    Depth {
        input: &'static str,
        max: usize,
        line: usize,
    },
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exceeded::Size { input, bytes, max } => write!(
                f,
                "{input}: {bytes} bytes is over its size limit of {max} bytes"
            ),
            Exceeded::Depth { input, max, line } => write!(
                f,
                "{input}: line {line} nests deeper than its depth limit of {max} levels"
            ),
        }
    }
}

impl std::error::Error for Exceeded {}

impl From<Exceeded> for crate::Error {
    fn from(e: Exceeded) -> Self {
        crate::Error::Config(e.to_string())
    }
}

impl Bounds {
    /// The same limits for another input name.
    pub const fn named(self, input: &'static str) -> Bounds {
        Bounds { input, ..self }
    }

    /// Refuses `bytes` over the size limit.
    pub fn check_size(&self, bytes: u64) -> Result<(), Exceeded> {
        if bytes > self.max_bytes as u64 {
            return Err(Exceeded::Size {
                input: self.input,
                bytes,
                max: self.max_bytes,
            });
        }
        Ok(())
    }

    /// Refuses YAML (or JSON, which is YAML) text over the size limit or nested deeper than the
    /// depth limit, before any parser sees it.
    pub fn check_yaml(&self, text: &str) -> Result<(), Exceeded> {
        self.check_size(text.len() as u64)?;
        self.depth(scan::yaml_over(text.as_bytes(), self.max_depth))
    }

    /// [`Bounds::check_yaml`] for JSON text (brackets outside strings).
    pub fn check_json(&self, text: &str) -> Result<(), Exceeded> {
        self.check_size(text.len() as u64)?;
        self.depth(scan::json_over(text.as_bytes(), self.max_depth))
    }

    fn depth(&self, over_at: Option<usize>) -> Result<(), Exceeded> {
        match over_at {
            Some(line) => Err(Exceeded::Depth {
                input: self.input,
                max: self.max_depth,
                line,
            }),
            None => Ok(()),
        }
    }

    /// Reads `reader` to its end as UTF-8, never holding more than the size limit (and a byte): a
    /// longer input is refused with an `InvalidData` error whose message is the [`Exceeded`] one.
    /// `known_len` (a file's length, when known) is checked before anything is read.
    pub fn read(&self, reader: impl Read, known_len: Option<u64>) -> std::io::Result<String> {
        let invalid = |e: Exceeded| std::io::Error::new(std::io::ErrorKind::InvalidData, e);
        if let Some(len) = known_len {
            self.check_size(len).map_err(invalid)?;
        }
        let mut text = String::new();
        let cap = self.max_bytes as u64 + 1;
        reader.take(cap).read_to_string(&mut text)?;
        self.check_size(text.len() as u64).map_err(invalid)?;
        Ok(text)
    }
}

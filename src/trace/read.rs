//! Reading a timeline a line at a time: the file is never held whole (a week of a large cluster is
//! gigabytes), each line is held to [`MAX_LINE`] bytes, and every refusal names the line.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;
use k8s_openapi::jiff::Timestamp;
use serde::Deserialize;

use super::{Change, Entry, Kind};
use crate::error::{Error, Result};

/// The longest line read: one object (a node with hundreds of images, a pod with many containers) is
/// far below it.
pub const MAX_LINE: usize = 8 << 20;

/// A line as read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    time: String,
    #[serde(rename = "type")]
    change: Change,
    object: serde_json::Value,
}

/// The entries of a timeline, in order; the first bad line ends it with an error naming the line.
pub struct Reader<R> {
    input: R,
    source: String,
    line: u64,
    last: Option<Timestamp>,
    buf: Vec<u8>,
    failed: bool,
}

/// Opens the timeline at `path` (gzip when its name ends in `.gz`).
pub fn read_file(path: &Path) -> Result<Reader<Box<dyn BufRead + Send>>> {
    let file = File::open(path)
        .map_err(|e| Error::config(format!("cannot read --trace {}: {e}", path.display())))?;
    let input: Box<dyn BufRead + Send> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(BufReader::with_capacity(
            1 << 16,
            MultiGzDecoder::new(BufReader::new(file)),
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 16, file))
    };
    Ok(Reader::new(input, &path.display().to_string()))
}

impl<R: BufRead> Reader<R> {
    /// Reads the timeline in `input`; `source` names it in errors.
    pub fn new(input: R, source: &str) -> Self {
        Reader {
            input,
            source: source.to_string(),
            line: 0,
            last: None,
            buf: Vec::new(),
            failed: false,
        }
    }

    /// The number of the line read last (1 for the first).
    pub fn line(&self) -> u64 {
        self.line
    }

    fn error(&self, what: impl std::fmt::Display) -> Error {
        Error::config(format!("trace {}: line {}: {what}", self.source, self.line))
    }

    /// The next line's bytes (without its newline), `None` at the end.
    fn next_line(&mut self) -> Result<Option<()>> {
        self.buf.clear();
        self.line += 1;
        let read = (&mut self.input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| self.error(e))?;
        if read == 0 {
            return Ok(None);
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
        } else if self.buf.len() > MAX_LINE {
            return Err(self.error(format!("longer than {MAX_LINE} bytes")));
        }
        Ok(Some(()))
    }

    /// Turns the current line into an entry.
    fn entry(&mut self) -> Result<Entry> {
        let line: Line = serde_json::from_slice(&self.buf).map_err(|e| self.error(e))?;
        let time: Timestamp = line
            .time
            .parse()
            .map_err(|e| self.error(format!("time {:?}: {e}", line.time)))?;
        if let Some(last) = self.last.filter(|last| time < *last) {
            return Err(self.error(format!(
                "time {time} is before the line before it ({last}): a timeline is in time order"
            )));
        }
        let kind = match line.object.get("kind").and_then(|k| k.as_str()) {
            Some(name) => Kind::of(name).ok_or_else(|| {
                self.error(format!(
                    "object.kind: unknown kind {name:?} (a timeline holds {})",
                    Kind::ALL.map(Kind::name).join(", ")
                ))
            })?,
            None => return Err(self.error("object.kind: missing")),
        };
        if !line.object["metadata"]["name"].is_string() {
            return Err(self.error("object.metadata.name: missing"));
        }
        self.last = Some(time);
        Ok(Entry {
            time,
            change: line.change,
            kind,
            object: line.object,
        })
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        if self.failed {
            return None;
        }
        loop {
            let read = match self.next_line() {
                Ok(None) => return None,
                // Blank lines (a trailing newline, files joined) are skipped.
                Ok(Some(())) if self.buf.iter().all(u8::is_ascii_whitespace) => continue,
                Ok(Some(())) => self.entry(),
                Err(e) => Err(e),
            };
            self.failed = read.is_err();
            return Some(read);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read(text: &str) -> Vec<Result<Entry>> {
        Reader::new(text.as_bytes(), "t.jsonl").collect()
    }

    const POD: &str = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","namespace":"d"}}"#;

    #[test]
    fn reads_lines_in_order_and_skips_blank_ones() {
        let text = format!(
            "{{\"time\":\"2026-11-20T00:00:00Z\",\"type\":\"ADDED\",\"object\":{POD}}}\n\n{{\"time\":\"2026-11-20T00:00:05.5Z\",\"type\":\"DELETED\",\"object\":{POD}}}\n"
        );
        let entries: Vec<Entry> = read(&text).into_iter().map(Result::unwrap).collect();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].change, Change::Deleted);
        assert_eq!(entries[1].kind, Kind::Pod);
        assert_eq!(entries[1].key(), ("d", "a"));
    }

    #[test]
    fn refuses_a_malformed_line_times_out_of_order_and_unknown_kinds_by_line() {
        let line = |t: &str, obj: &str| {
            format!("{{\"time\":\"{t}\",\"type\":\"ADDED\",\"object\":{obj}}}\n")
        };
        let ok = line("2026-11-20T00:00:10Z", POD);
        let cases = [
            (format!("{ok}{{not json\n"), "line 2:"),
            (
                format!("{ok}{}", line("2026-11-20T00:00:09Z", POD)),
                "line 2: time 2026-11-20T00:00:09Z is before",
            ),
            (
                format!(
                    "{ok}{ok}{}",
                    line(
                        "2026-11-20T00:00:11Z",
                        r#"{"kind":"Secret","metadata":{"name":"s"}}"#
                    )
                ),
                "line 3: object.kind: unknown kind \"Secret\"",
            ),
            (line("yesterday", POD), "line 1: time \"yesterday\""),
            (
                "{\"time\":\"2026-11-20T00:00:00Z\",\"type\":\"ADDED\",\"object\":{},\"extra\":1}\n"
                    .to_string(),
                "line 1: unknown field `extra`",
            ),
        ];
        for (text, want) in cases {
            let got = read(&text);
            let err = got
                .iter()
                .find_map(|r| r.as_ref().err())
                .unwrap_or_else(|| panic!("{text:?} was accepted"))
                .to_string();
            assert!(err.contains(want), "{err:?} should contain {want:?}");
            // Nothing is read past the first bad line.
            assert!(got.last().unwrap().is_err());
        }
    }

    #[test]
    fn refuses_a_line_past_its_limit_without_reading_it_whole() {
        let long = format!(
            "{{\"time\":\"2026-11-20T00:00:00Z\",\"type\":\"ADDED\",\"object\":{{\"x\":\"{}\"}}}}\n",
            "a".repeat(MAX_LINE)
        );
        let got = read(&long);
        assert_eq!(got.len(), 1);
        assert!(got[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("longer than"));
    }

    proptest! {
        #[test]
        fn never_panics_on_any_input(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = Reader::new(&bytes[..], "p").count();
        }

        #[test]
        fn never_panics_on_lines_shaped_like_entries(
            time in "[0-9T:Z-]{0,25}",
            change in "(ADDED|MODIFIED|DELETED|X)",
            kind in "(Pod|Node|Secret|)",
            name in proptest::option::of("[a-z]{0,5}"),
        ) {
            let name = name.map_or("null".to_string(), |n| format!("{n:?}"));
            let text = format!(
                "{{\"time\":{time:?},\"type\":{change:?},\"object\":{{\"kind\":{kind:?},\"metadata\":{{\"name\":{name}}}}}}}\n"
            );
            let _ = Reader::new(text.as_bytes(), "p").count();
        }
    }
}

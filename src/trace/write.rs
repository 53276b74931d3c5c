//! Writing a timeline, a line per entry, gzip when the file name ends in `.gz`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use serde::Serialize;

use super::{Change, Entry};
use crate::error::{Error, Result};

/// A timeline file being written. Entries must come in time order: the reader refuses any other.
pub struct Writer {
    out: Out,
    path: PathBuf,
    lines: u64,
}

enum Out {
    Plain(BufWriter<File>),
    Gzip(GzEncoder<BufWriter<File>>),
}

/// A line as written: the object is borrowed, not copied.
#[derive(Serialize)]
struct Line<'a> {
    time: String,
    #[serde(rename = "type")]
    change: Change,
    object: &'a serde_json::Value,
}

impl Writer {
    /// Creates (or truncates) the file at `path`.
    pub fn create(path: &Path) -> Result<Writer> {
        let file = File::create(path).map_err(|e| io(path, e))?;
        let buffered = BufWriter::with_capacity(1 << 16, file);
        let gzip = path.extension().is_some_and(|e| e == "gz");
        let out = if gzip {
            Out::Gzip(GzEncoder::new(buffered, flate2::Compression::default()))
        } else {
            Out::Plain(buffered)
        };
        Ok(Writer {
            out,
            path: path.to_path_buf(),
            lines: 0,
        })
    }

    /// Appends `entry` as one line.
    pub fn write(&mut self, entry: &Entry) -> Result<()> {
        let line = Line {
            time: entry.time.to_string(),
            change: entry.change,
            object: &entry.object,
        };
        let out: &mut dyn Write = match &mut self.out {
            Out::Plain(w) => w,
            Out::Gzip(w) => w,
        };
        serde_json::to_writer(&mut *out, &line)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .map_err(|e| io(&self.path, e))?;
        self.lines += 1;
        Ok(())
    }

    /// Pushes what is buffered to the file (not the gzip trailer: a gzip file is readable up to its
    /// last flush), so a recording stopped hard keeps what it flushed.
    pub fn flush(&mut self) -> Result<()> {
        let out: &mut dyn Write = match &mut self.out {
            Out::Plain(w) => w,
            Out::Gzip(w) => w,
        };
        out.flush().map_err(|e| io(&self.path, e))
    }

    /// How many lines were written.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Writes the rest and closes the file (the gzip trailer too).
    pub fn finish(self) -> Result<()> {
        let path = self.path;
        match self.out {
            Out::Plain(mut w) => w.flush(),
            Out::Gzip(w) => w.finish().and_then(|mut w| w.flush()),
        }
        .map_err(|e| io(&path, e))
    }
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::config(format!("cannot write {}: {e}", path.display()))
}

//! The one-pass read of a dump file without its whole text in memory: the file is read through a buffer
//! of a few megabytes, and each item of a top-level `List` (what `kubectl get -o json` writes) is parsed
//! where it stands in the buffer, converted (`stream`'s reader, the same as for a whole text) and left
//! behind; the buffer's tail is moved to its start and refilled as items are used up. An item cut off at
//! the buffer's end is parsed again once the buffer holds it whole (the buffer grows when one item is
//! bigger than it).
//!
//! Parsing and converting run on two threads at once: this one parses the text and hands the objects
//! read, a batch at a time, to one that converts them in order (`convert::Converting`), so a dump is
//! read at about the parser's own speed on two cores.
//!
//! Like `stream`, this read names nothing in errors: anything it does not take (a syntax error, an object
//! that does not convert, a dump that is no List) gives None, and the caller reads the whole text the
//! exact way for its error.

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, SyncSender};

use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Deserializer;

use super::convert::Converting;
use super::stream::Batch;
use super::{Kind, Object, Sink};

/// How much of the file is held at once (more only for an item that does not fit).
const CHUNK: usize = 8 << 20;

/// Objects handed to the converting thread at a time, and batches that may wait for it: a few
/// megabytes of objects at most between the two threads.
const BATCH: usize = 256;
const QUEUE: usize = 8;

/// Converts every document of `reader` in one pass; `Ok(None)` when anything is refused.
pub(super) fn read(reader: impl Read) -> io::Result<Option<Converting>> {
    read_sized(reader, CHUNK)
}

/// [`read`] with a buffer of `chunk` bytes to begin with.
pub(super) fn read_sized(reader: impl Read, chunk: usize) -> io::Result<Option<Converting>> {
    let (to, from) = sync_channel::<Vec<Object>>(QUEUE);
    std::thread::scope(|scope| {
        // Stops at the first object it refuses: the channel then closes and the parsing stops too.
        let converting = scope.spawn(move || {
            let mut sink = Converting::default();
            for batch in from {
                for object in batch {
                    sink.add(object).ok()?;
                }
            }
            Some(sink)
        });
        let mut forward = Forward {
            batch: Vec::with_capacity(BATCH),
            to,
        };
        let parsed = parse(reader, chunk, &mut forward).map(|taken| taken && forward.flush());
        drop(forward);
        let converted = converting
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match parsed? {
            true => Ok(converted),
            false => Ok(None),
        }
    })
}

/// Parses every document of `reader` into `forward`; false when anything is refused.
fn parse(reader: impl Read, chunk: usize, forward: &mut Forward) -> io::Result<bool> {
    let mut chunks = Chunks {
        reader,
        buf: vec![0; chunk.max(1)],
        pos: 0,
        end: 0,
        eof: false,
    };
    loop {
        match chunks.skip_blanks()? {
            None => return Ok(true),
            Some(b'{') => {
                if !list(&mut chunks, forward)? {
                    return Ok(false);
                }
            }
            Some(_) => return Ok(false),
        }
    }
}

/// The objects parsed, on their way to the converting thread.
struct Forward {
    batch: Vec<Object>,
    to: SyncSender<Vec<Object>>,
}

impl Forward {
    /// Takes one object; false once the converting thread has stopped (it refused an object).
    fn add(&mut self, object: Object) -> bool {
        self.batch.push(object);
        self.batch.len() < BATCH || self.flush()
    }

    /// Hands the batch over; false once the converting thread has stopped.
    fn flush(&mut self) -> bool {
        if self.batch.is_empty() {
            return true;
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        self.to.send(batch).is_ok()
    }
}

/// Reads the document at the reader (its `{` next) as a List, each item into `sink`; false when it is
/// refused (no List, or anything that does not read or convert).
fn list<R: Read>(chunks: &mut Chunks<R>, sink: &mut Forward) -> io::Result<bool> {
    chunks.pos += 1;
    let (mut list, mut items_read) = (false, false);
    loop {
        match chunks.skip_blanks()? {
            Some(b'}') => {
                chunks.pos += 1;
                return Ok(list);
            }
            Some(b'"') => {}
            _ => return Ok(false),
        }
        let Some(key) = chunks.value::<String>()? else {
            return Ok(false);
        };
        if chunks.skip_blanks()? != Some(b':') {
            return Ok(false);
        }
        chunks.pos += 1;
        match key.as_str() {
            "kind" if !list => {
                let kind = chunks.value::<String>()?;
                if kind.is_none_or(|k| Kind::of(&k, "").ok() != Some(Kind::List)) {
                    return Ok(false);
                }
                list = true;
            }
            "items" if !items_read => {
                if !items(chunks, sink)? {
                    return Ok(false);
                }
                items_read = true;
            }
            _ => {
                if chunks.value::<IgnoredAny>()?.is_none() {
                    return Ok(false);
                }
            }
        }
        match chunks.skip_blanks()? {
            Some(b',') => chunks.pos += 1,
            Some(b'}') => {}
            _ => return Ok(false),
        }
    }
}

/// A List's `items` (null: none), each converted into `sink`; false when refused.
fn items<R: Read>(chunks: &mut Chunks<R>, sink: &mut Forward) -> io::Result<bool> {
    match chunks.skip_blanks()? {
        Some(b'[') => chunks.pos += 1,
        Some(b'n') => return Ok(chunks.value::<()>()?.is_some()),
        _ => return Ok(false),
    }
    if chunks.skip_blanks()? == Some(b']') {
        chunks.pos += 1;
        return Ok(true);
    }
    loop {
        let Some(Batch(objects)) = chunks.value::<Batch>()? else {
            return Ok(false);
        };
        for object in objects {
            if !sink.add(object) {
                return Ok(false);
            }
        }
        match chunks.skip_blanks()? {
            Some(b',') => chunks.pos += 1,
            Some(b']') => {
                chunks.pos += 1;
                return Ok(true);
            }
            _ => return Ok(false),
        }
    }
}

/// The file, read a buffer at a time: `buf[pos..end]` is read and not yet parsed.
struct Chunks<R> {
    reader: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// The reader is used up.
    eof: bool,
}

impl<R: Read> Chunks<R> {
    /// Reads more of the file after what is left unparsed (moved to the buffer's start; the buffer
    /// doubled when it is full of it); false at the file's end.
    fn refill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// The next byte that is no blank (None at the file's end), not consumed.
    fn skip_blanks(&mut self) -> io::Result<Option<u8>> {
        loop {
            while self.pos < self.end {
                let b = self.buf[self.pos];
                if !b.is_ascii_whitespace() {
                    return Ok(Some(b));
                }
                self.pos += 1;
            }
            if !self.refill()? {
                return Ok(None);
            }
        }
    }

    /// The JSON value next, parsed (again, with more of the file, when the buffer ends inside it);
    /// None when it does not read.
    fn value<T: DeserializeOwned>(&mut self) -> io::Result<Option<T>> {
        loop {
            let mut values =
                Deserializer::from_slice(&self.buf[self.pos..self.end]).into_iter::<T>();
            match values.next() {
                Some(Ok(value)) => {
                    self.pos += values.byte_offset();
                    return Ok(Some(value));
                }
                Some(Err(e)) if !e.is_eof() => return Ok(None),
                _ => {
                    if !self.refill()? {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

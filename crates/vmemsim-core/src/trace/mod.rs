//! Trace sources: anything that yields page accesses in chunks.
//!
//! Readers stream with bounded memory (one chunk at a time), so traces larger than memory
//! replay fine. Every reader error names the file and the line or byte offset.

pub mod text;

use crate::access::Access;
use crate::error::{Error, Result};

/// Accesses per chunk handed to the engine.
pub const CHUNK: usize = 1 << 16;

/// A stream of page accesses.
pub trait TraceSource: Send {
    /// Clear `buf` and fill it with the next accesses (at most [`CHUNK`]); an empty `buf` after
    /// `Ok(())` means the trace is over.
    fn next_chunk(&mut self, buf: &mut Vec<Access>) -> Result<()>;
    /// Name for messages (a path, or a generator's description).
    fn name(&self) -> String;
}

/// An in-memory trace.
#[derive(Clone, Debug)]
pub struct VecSource {
    data: std::sync::Arc<Vec<Access>>,
    pos: usize,
    name: String,
}

impl VecSource {
    pub fn new(data: Vec<Access>) -> Self {
        VecSource {
            data: std::sync::Arc::new(data),
            pos: 0,
            name: "<memory>".into(),
        }
    }
    pub fn from_pages(pages: &[u64]) -> Self {
        Self::new(pages.iter().map(|&p| Access::read(p)).collect())
    }
}

impl TraceSource for VecSource {
    fn next_chunk(&mut self, buf: &mut Vec<Access>) -> Result<()> {
        buf.clear();
        let end = (self.pos + CHUNK).min(self.data.len());
        buf.extend_from_slice(&self.data[self.pos..end]);
        self.pos = end;
        Ok(())
    }
    fn name(&self) -> String {
        self.name.clone()
    }
}

/// Read a whole source into memory.
pub fn collect(src: &mut dyn TraceSource) -> Result<Vec<Access>> {
    let mut out = Vec::new();
    let mut buf = Vec::with_capacity(CHUNK);
    loop {
        src.next_chunk(&mut buf)?;
        if buf.is_empty() {
            return Ok(out);
        }
        out.extend_from_slice(&buf);
    }
}

/// Trace file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// One page number or address per line (decimal or 0x-hex), optional R/W column.
    Text,
}

impl TraceFormat {
    pub const ALL: &'static [(TraceFormat, &'static str)] = &[(TraceFormat::Text, "text")];

    pub fn from_name(name: &str) -> Result<TraceFormat> {
        Self::ALL
            .iter()
            .find(|e| e.1 == name)
            .map(|e| e.0)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|e| e.1).collect();
                Error::config(
                    "format",
                    format!("unknown trace format '{name}'; valid: {}", names.join(", ")),
                )
            })
    }

    /// Guess the format of `path` from its first bytes and extension.
    pub fn detect(_path: &str) -> Result<TraceFormat> {
        Ok(TraceFormat::Text)
    }
}

/// Open a trace file; `format` `None` = detect.
pub fn open(path: &str, format: Option<TraceFormat>) -> Result<Box<dyn TraceSource>> {
    let fmt = match format {
        Some(f) => f,
        None => TraceFormat::detect(path)?,
    };
    match fmt {
        TraceFormat::Text => Ok(Box::new(text::TextReader::open(
            path,
            text::TextOptions::default(),
        )?)),
    }
}

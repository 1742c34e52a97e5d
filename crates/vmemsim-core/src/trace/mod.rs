//! Trace sources and sinks: anything that yields page accesses in chunks, the file formats
//! vmemsim reads and writes, and conversion between them.
//!
//! Readers stream with bounded memory (one chunk at a time), so traces larger than memory
//! replay fine. Every reader error is an [`Error::Trace`] naming the file and the line or
//! byte offset; no input makes a reader panic (fuzzed: `fuzz/` and `tests/readers_no_panic.rs`).
//!
//! | format            | module       | reads | writes | what it holds                              |
//! |-------------------|--------------|-------|--------|--------------------------------------------|
//! | `text`            | [`text`]     | yes   | yes    | `PAGE [R|W]` per line, decimal or 0x-hex    |
//! | `csv`             | [`csv`]      | yes   | yes    | delimited columns mapped by [`CsvOptions`]  |
//! | `oracle-general`  | [`oracle`]   | yes   | yes    | libCacheSim's 24-byte binary records        |
//! | `native`          | [`native`]   | yes   | yes    | vmemsim's compressed, checksummed chunks    |
//!
//! Native version 2 ([`recorded`]) is what `vmemsim trace record` writes: per-record thread,
//! count, instruction stamp and file I/O, in the same framing; every reader of `native`
//! reads it as a plain access stream, and [`recorded::RecordedReader`] gives all its fields.
//! [`recorder`] converts the Valgrind recorder's intermediate stream into it, and
//! [`imports`] imports public formats into it: MSR Cambridge / SNIA block I/O CSV (file I/O
//! records) and valgrind lackey `--trace-mem` output (folded access records).
//!
//! Public API used by the CLI and the binding:
//! - [`open`]`(path, format, &ReaderOptions)` → `Box<dyn TraceSource>`; `format` `None` =
//!   [`TraceFormat::detect`] (magic bytes first, then the extension).
//! - [`create`]`(path, format, &TraceMeta)` → `Box<dyn TraceWriter>`; [`convert`] copies a
//!   source into a writer. Write bits are kept by every format except `oracle-general`,
//!   which has no operation field.
//! - [`info::info`] summarises a trace in one streaming pass (counts, footprint, reuse distances).
//! - Generators ([`crate::generate`]) are sources too, usable wherever a trace is.

pub mod csv;
pub mod imports;
pub mod info;
pub mod native;
pub mod oracle;
pub mod recorded;
pub mod recorder;
pub mod text;

use std::collections::BTreeMap;
use std::io::Read;

use serde::{Deserialize, Serialize};

use crate::access::Access;
use crate::error::{Error, Result};

pub use csv::{Column, CsvHeader, CsvOptions};

/// Accesses per chunk handed to the engine.
pub const CHUNK: usize = 1 << 16;

/// A stream of page accesses.
pub trait TraceSource: Send {
    /// Clear `buf` and fill it with the next accesses (at most [`CHUNK`]); an empty `buf` after
    /// `Ok(())` means the trace is over.
    fn next_chunk(&mut self, buf: &mut Vec<Access>) -> Result<()>;
    /// Name for messages (a path, or a generator's description).
    fn name(&self) -> String;
    /// Records read so far, accesses and other records (file I/O) alike, when the format
    /// has records that are not accesses; `None` otherwise.
    fn records(&self) -> Option<u64> {
        None
    }
    /// Bytes per page of the page numbers this source yields, when the source records it
    /// (native traces carry it in their header); `None` = unknown, the caller's default.
    fn page_size(&self) -> Option<u64> {
        None
    }
    /// Number of accesses, when known before reading (generators, native traces whose header
    /// records it); for progress reports only.
    fn len_hint(&self) -> Option<u64> {
        None
    }
    /// [`TraceSource::next_chunk`] with the file I/O records among the chunk's accesses:
    /// `io` is cleared and gets each with the number of `buf`'s accesses before it, in
    /// trace order. Both empty after `Ok(())` means the trace is over (a chunk may hold
    /// file I/O and no access). The default: a source without file I/O.
    fn next_chunk_io(
        &mut self,
        buf: &mut Vec<Access>,
        io: &mut Vec<(u32, recorded::FileIo)>,
    ) -> Result<()> {
        io.clear();
        self.next_chunk(buf)
    }
    /// The files of the source's file I/O records with their sizes
    /// ([`recorded::file_specs`]), found by a pass of their own over the whole source, before
    /// the replay reads it; `None`: a source without file I/O records (the default).
    fn files(&mut self) -> Result<Option<Vec<crate::mm::FileSpec>>> {
        Ok(None)
    }
}

impl<T: TraceSource + ?Sized> TraceSource for Box<T> {
    fn next_chunk(&mut self, buf: &mut Vec<Access>) -> Result<()> {
        (**self).next_chunk(buf)
    }
    fn name(&self) -> String {
        (**self).name()
    }
    fn records(&self) -> Option<u64> {
        (**self).records()
    }
    fn page_size(&self) -> Option<u64> {
        (**self).page_size()
    }
    fn len_hint(&self) -> Option<u64> {
        (**self).len_hint()
    }
    fn next_chunk_io(
        &mut self,
        buf: &mut Vec<Access>,
        io: &mut Vec<(u32, recorded::FileIo)>,
    ) -> Result<()> {
        (**self).next_chunk_io(buf, io)
    }
    fn files(&mut self) -> Result<Option<Vec<crate::mm::FileSpec>>> {
        (**self).files()
    }
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
    /// The same data with another name (for messages and results).
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
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
    fn len_hint(&self) -> Option<u64> {
        Some(self.data.len() as u64)
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// One page number or address per line (decimal or 0x-hex), optional R/W column.
    Text,
    /// Delimited columns; which column holds the page (or address) and the operation is set by
    /// [`CsvOptions`].
    Csv,
    /// libCacheSim's `oracleGeneral` binary: packed little-endian 24-byte records
    /// (u32 time, u64 object id, u32 size, i64 next-access vtime); ids are page numbers.
    OracleGeneral,
    /// vmemsim's own format: a JSON header and LZ4-compressed, CRC-checked chunks of
    /// delta-encoded pages with the write bit; see [`native`].
    Native,
}

impl TraceFormat {
    /// Every format and the name a user gives it.
    pub const ALL: &'static [(TraceFormat, &'static str)] = &[
        (TraceFormat::Text, "text"),
        (TraceFormat::Csv, "csv"),
        (TraceFormat::OracleGeneral, "oracle-general"),
        (TraceFormat::Native, "native"),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|e| e.0 == self)
            .map(|e| e.1)
            .unwrap_or("?")
    }

    /// One line describing the format (for `--help` and `trace formats`).
    pub fn description(self) -> &'static str {
        match self {
            TraceFormat::Text => "one access per line: PAGE [R|W], decimal or 0x-hex",
            TraceFormat::Csv => {
                "delimited columns; page/address and op columns mapped by name or index"
            }
            TraceFormat::OracleGeneral => {
                "libCacheSim oracleGeneral binary (24-byte records, ids as pages, no write bit)"
            }
            TraceFormat::Native => "vmemsim native: JSON header + LZ4 chunks with CRC32 (.vmt)",
        }
    }

    /// Parse a format name; `oracleGeneral` (libCacheSim's spelling) is accepted too.
    pub fn from_name(name: &str) -> Result<TraceFormat> {
        let lower = name.trim().to_ascii_lowercase();
        let lower = match lower.as_str() {
            "oraclegeneral" | "oracle_general" | "oracle" => "oracle-general",
            "vmt" => "native",
            "txt" => "text",
            other => other,
        };
        Self::ALL
            .iter()
            .find(|e| e.1 == lower)
            .map(|e| e.0)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|e| e.1).collect();
                Error::config(
                    "format",
                    format!("unknown trace format '{name}'; valid: {}", names.join(", ")),
                )
            })
    }

    /// Guess the format of `path`: a native trace by its magic bytes, then by extension
    /// (`.vmt` native, `.oracleGeneral` / `.bin` oracle-general, `.csv` csv, anything else
    /// text). Compressed files (zstd, gzip, xz) are refused with a message saying so, since
    /// no reader here decompresses them.
    pub fn detect(path: &str) -> Result<TraceFormat> {
        let mut head = [0u8; 8];
        let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, &e))?;
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(path, &e)),
            }
        }
        let head = &head[..n];
        if head == native::MAGIC {
            return Ok(TraceFormat::Native);
        }
        for (magic, what, tool) in [
            (&[0x28u8, 0xB5, 0x2F, 0xFD][..], "zstd", "zstd -d"),
            (&[0x1F, 0x8B][..], "gzip", "gzip -d"),
            (&[0xFD, b'7', b'z', b'X', b'Z', 0][..], "xz", "xz -d"),
        ] {
            if head.starts_with(magic) {
                return Err(Error::trace(
                    path,
                    "byte 0",
                    format!("{what}-compressed file; decompress it first (`{tool}`)"),
                ));
            }
        }
        let lower = path.to_ascii_lowercase();
        let file = lower.rsplit('/').next().unwrap_or(&lower);
        Ok(if file.ends_with(".vmt") {
            TraceFormat::Native
        } else if file.ends_with(".oraclegeneral") || file.ends_with(".bin") {
            TraceFormat::OracleGeneral
        } else if file.ends_with(".csv") {
            TraceFormat::Csv
        } else {
            TraceFormat::Text
        })
    }
}

/// How to interpret a trace file's values (options that apply to several formats).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReaderOptions {
    /// Bytes per page (a power of two), default 4096. Used to turn addresses into pages and
    /// by [`info::info`] for the footprint; a native trace's header overrides it.
    pub page_size: u64,
    /// Values are byte addresses, shifted right by `log2(page_size)` (text, csv and
    /// oracle-general; native traces always hold page numbers and refuse this).
    pub addresses: bool,
    /// Column mapping of CSV traces.
    pub csv: CsvOptions,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            page_size: 4096,
            addresses: false,
            csv: CsvOptions::default(),
        }
    }
}

impl ReaderOptions {
    /// `log2(page_size)`, or a config error naming `page_size`.
    pub fn page_shift(&self) -> Result<u32> {
        page_shift(self.page_size)
    }
}

pub(crate) fn page_shift(page_size: u64) -> Result<u32> {
    if !page_size.is_power_of_two() || page_size < 2 {
        return Err(Error::config(
            "page_size",
            format!("{page_size} is not a power of two of at least 2"),
        ));
    }
    Ok(page_size.trailing_zeros())
}

/// Open a trace file; `format` `None` = [`TraceFormat::detect`].
pub fn open(
    path: &str,
    format: Option<TraceFormat>,
    opts: &ReaderOptions,
) -> Result<Box<dyn TraceSource>> {
    let fmt = match format {
        Some(f) => f,
        None => TraceFormat::detect(path)?,
    };
    opts.page_shift()?;
    Ok(match fmt {
        TraceFormat::Text => Box::new(text::TextReader::open(
            path,
            text::TextOptions {
                addresses: opts.addresses,
                page_size: opts.page_size,
            },
        )?),
        TraceFormat::Csv => Box::new(csv::CsvReader::open(path, opts)?),
        TraceFormat::OracleGeneral => Box::new(oracle::OracleReader::open(path, opts)?),
        TraceFormat::Native => {
            if opts.addresses {
                return Err(Error::config(
                    "addresses",
                    "native traces hold page numbers; the option does not apply",
                ));
            }
            Box::new(native::NativeReader::open(path)?)
        }
    })
}

/// Metadata a trace carries. The native format stores all of it in its header; the text
/// writer puts it in a leading `#` comment; csv and oracle-general have no place for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TraceMeta {
    /// Bytes per page of the page numbers.
    pub page_size: u64,
    /// What produced the accesses: a command line, a generator spec, a source file.
    pub origin: Option<String>,
    /// The program that wrote the file, e.g. `vmemsim 0.1.0`.
    pub created_by: Option<String>,
    /// Number of accesses, when known before writing (the native trailer always has it).
    pub records: Option<u64>,
    /// Free-form key/values.
    pub extra: BTreeMap<String, String>,
}

impl Default for TraceMeta {
    fn default() -> Self {
        TraceMeta {
            page_size: 4096,
            origin: None,
            created_by: Some(format!("vmemsim {}", env!("CARGO_PKG_VERSION"))),
            records: None,
            extra: BTreeMap::new(),
        }
    }
}

/// A sink of accesses: a trace file being written.
pub trait TraceWriter {
    /// Append accesses.
    fn write(&mut self, accesses: &[Access]) -> Result<()>;
    /// Flush everything (and, for native traces, write the end marker); returns the number of
    /// accesses written. A writer dropped without `finish` leaves a file that readers report
    /// as truncated (native) or incomplete. Calling it twice is an error.
    fn finish(&mut self) -> Result<u64>;
}

/// Create a trace file of `format` at `path`.
pub fn create(path: &str, format: TraceFormat, meta: &TraceMeta) -> Result<Box<dyn TraceWriter>> {
    page_shift(meta.page_size)?;
    Ok(match format {
        TraceFormat::Text => Box::new(text::TextWriter::create(path, meta)?),
        TraceFormat::Csv => Box::new(csv::CsvWriter::create(path)?),
        TraceFormat::OracleGeneral => Box::new(oracle::OracleWriter::create(
            path,
            oracle::OracleWriterOptions {
                obj_size: u32::try_from(meta.page_size).unwrap_or(u32::MAX),
            },
        )?),
        TraceFormat::Native => Box::new(native::NativeWriter::create(path, meta.clone())?),
    })
}

/// Copy every access of `src` into `writer` and finish it; returns the accesses written.
pub fn convert(src: &mut dyn TraceSource, writer: &mut dyn TraceWriter) -> Result<u64> {
    let mut buf = Vec::with_capacity(CHUNK);
    loop {
        src.next_chunk(&mut buf)?;
        if buf.is_empty() {
            break;
        }
        writer.write(&buf)?;
    }
    writer.finish()
}

/// Fill `buf` from `rd` until full or end of file; returns the bytes read.
pub(crate) fn read_full(rd: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match rd.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> String {
        let dir = std::env::temp_dir().join(format!("vmemsim-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name).to_string_lossy().into_owned()
    }

    #[test]
    fn format_names_round_trip() {
        for (f, name) in TraceFormat::ALL {
            assert_eq!(TraceFormat::from_name(name).unwrap(), *f);
            assert_eq!(f.name(), *name);
        }
        assert_eq!(
            TraceFormat::from_name("oracleGeneral").unwrap(),
            TraceFormat::OracleGeneral
        );
        assert_eq!(
            TraceFormat::from_name("parquet").unwrap_err().to_string(),
            "format: unknown trace format 'parquet'; valid: text, csv, oracle-general, native"
        );
    }

    #[test]
    fn detect_by_magic_then_extension() {
        let accesses = vec![Access::read(1), Access::write(2)];
        // A native trace named .txt is still found by its magic bytes.
        let p = tmp("native-named.txt");
        let mut w = create(&p, TraceFormat::Native, &TraceMeta::default()).unwrap();
        w.write(&accesses).unwrap();
        w.finish().unwrap();
        assert_eq!(TraceFormat::detect(&p).unwrap(), TraceFormat::Native);
        let got = collect(&mut *open(&p, None, &ReaderOptions::default()).unwrap()).unwrap();
        assert_eq!(got, accesses);

        for (name, want) in [
            ("a.vmt", TraceFormat::Native),
            ("a.oracleGeneral", TraceFormat::OracleGeneral),
            ("a.oracleGeneral.bin", TraceFormat::OracleGeneral),
            ("A.CSV", TraceFormat::Csv),
            ("a.trace", TraceFormat::Text),
            ("a", TraceFormat::Text),
        ] {
            let p = tmp(name);
            std::fs::write(&p, b"12\n").unwrap();
            assert_eq!(TraceFormat::detect(&p).unwrap(), want, "{name}");
        }
        let p = tmp("z.oracleGeneral.zst");
        std::fs::write(&p, [0x28, 0xB5, 0x2F, 0xFD, 0, 0]).unwrap();
        assert_eq!(
            TraceFormat::detect(&p).unwrap_err().to_string(),
            format!("{p}: byte 0: zstd-compressed file; decompress it first (`zstd -d`)")
        );
        let missing = tmp("does-not-exist");
        assert!(matches!(
            TraceFormat::detect(&missing).unwrap_err().kind(),
            crate::error::ErrorKind::Io { .. }
        ));
    }

    #[test]
    fn convert_between_all_formats_keeps_pages() {
        let accesses: Vec<Access> = (0..1000u64)
            .map(|i| Access {
                page: (i * 7919) % 613,
                write: i % 3 == 0,
                gup: false,
            })
            .collect();
        let meta = TraceMeta::default();
        for (fmt, name) in TraceFormat::ALL {
            let p = tmp(&format!("conv.{name}"));
            let mut w = create(&p, *fmt, &meta).unwrap();
            let n = convert(&mut VecSource::new(accesses.clone()), &mut *w).unwrap();
            assert_eq!(n, 1000);
            // The CSV writer puts the operation in column 2.
            let opts = ReaderOptions {
                csv: CsvOptions::parse("op=2").unwrap(),
                ..Default::default()
            };
            let got = collect(&mut *open(&p, Some(*fmt), &opts).unwrap()).unwrap();
            assert_eq!(got.len(), accesses.len(), "{name}");
            if *fmt == TraceFormat::OracleGeneral {
                // No operation field: every access reads back as a read.
                let pages: Vec<u64> = accesses.iter().map(|a| a.page).collect();
                assert!(got.iter().zip(&pages).all(|(a, &p)| *a == Access::read(p)));
            } else {
                assert!(got == accesses, "{name}: accesses differ");
            }
        }
    }

    #[test]
    fn native_refuses_addresses_option() {
        let p = tmp("addr.vmt");
        let mut w = create(&p, TraceFormat::Native, &TraceMeta::default()).unwrap();
        w.finish().unwrap();
        let opts = ReaderOptions {
            addresses: true,
            ..Default::default()
        };
        let e = open(&p, None, &opts).err().unwrap();
        assert_eq!(
            e.to_string(),
            "addresses: native traces hold page numbers; the option does not apply"
        );
        let bad = ReaderOptions {
            page_size: 3000,
            ..Default::default()
        };
        assert_eq!(
            open(&p, None, &bad).err().unwrap().to_string(),
            "page_size: 3000 is not a power of two of at least 2"
        );
    }
}

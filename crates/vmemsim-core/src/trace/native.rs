//! vmemsim's native trace format (`.vmt`): compact, streamable, self-describing, checked.
//!
//! # Layout (all integers little-endian)
//!
//! ```text
//! header   magic     8 bytes   89 56 4D 54 0D 0A 1A 0A  ("\x89VMT\r\n\x1a\n", PNG-style: a
//!                              high byte and CR/LF so text-mode transfers are caught)
//!          version   u32       1
//!          meta_len  u32       length of the JSON that follows, at most 1 MiB
//!          meta      meta_len  UTF-8 JSON of `TraceMeta` (page_size, origin, created_by,
//!                              records if known, extra key/values)
//!          hcrc      u32       CRC-32 (IEEE) of version, meta_len and meta
//! chunk*   comp_len  u32       payload bytes stored in the file
//!          raw_len   u32       payload bytes once decompressed (at most 10 per record)
//!          n         u32       records in the chunk, 1 ..= 65536
//!          crc       u32       CRC-32 of the stored payload
//!          payload   comp_len  LZ4 block of the raw payload if comp_len < raw_len,
//!                              the raw payload itself if comp_len == raw_len
//! end      0xFFFFFFFF u32      end marker (where a chunk's comp_len would be)
//!          records   u64       total records
//!          chunks    u64       total chunks
//!          tcrc      u32       CRC-32 of records and chunks
//!          (end of file: trailing bytes are an error)
//! ```
//!
//! # Raw payload
//!
//! Chunks are independent: each starts from page 0. Each record is the wrapping difference to
//! the previous page, zigzag-encoded, shifted left once with the write bit in bit 0: a value
//! `v`. The payload is two streams, in the manner of Stream VByte (Lemire, Kurz, Rupp,
//! "Stream VByte: faster byte-oriented integer compression", IPL 2018):
//!
//! ```text
//! control  ceil(n/2) bytes   one 4-bit code per record, low nibble first (a trailing unused
//!                            nibble is 0): 0..=8 = v takes that many little-endian bytes
//!                            (0 = v is 0: the same page read again); 9 / 10 = escape, a read /
//!                            write of the absolute page in 8 bytes (deltas whose zigzag code
//!                            needs 64 bits); 11..=15 invalid
//! data     the records' bytes back to back
//! ```
//!
//! Because lengths come from the control stream, not from the data, the position of record
//! i + 1 does not wait for record i's bytes to be loaded: a record decodes with one unaligned
//! 8-byte load and a mask, and the only loop-carried work is two additions. That is what lets
//! reading run several times faster than simulation (measured by `benches/trace.rs` and
//! `examples/trace_speed.rs`). LZ4 then removes the redundancy of sequential or repetitive
//! traces (a sequential scan costs well under a byte per access).
//!
//! # Errors
//!
//! Every defect is an [`Error::Trace`] naming the file and `byte N` or `byte N (chunk K)` (the
//! offset of the chunk's header, chunks counted from 0): wrong magic, unsupported version,
//! header or chunk CRC mismatch, lengths out of bounds, undecodable LZ4 or records, a file
//! that ends before the end marker ("truncated"), a trailer that disagrees with what was read,
//! bytes after the end marker.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};

use super::{read_full, TraceMeta, TraceSource, TraceWriter, CHUNK};
use crate::access::Access;
use crate::error::{Error, Result};

/// The first eight bytes of every native trace.
pub const MAGIC: [u8; 8] = [0x89, b'V', b'M', b'T', b'\r', b'\n', 0x1A, b'\n'];
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// Most records in one chunk (equal to [`CHUNK`], so one chunk fills one engine batch).
pub const MAX_CHUNK_RECORDS: u32 = CHUNK as u32;
const MAX_META: u32 = 1 << 20;
/// A record takes at most 8 data bytes.
const MAX_RECORD_BYTES: u32 = 8;
/// The version of recorded traces ([`super::recorded`]): the same framing, a richer payload.
pub const VERSION_RECORDED: u32 = 2;
/// Largest raw payload of a version-2 chunk (its writer flushes well before).
pub(crate) const MAX_RAW_V2: u32 = 64 << 20;
const END: u32 = 0xFFFF_FFFF;
/// Slack after a decoded payload so that an 8-byte load at its last byte stays inside the
/// buffer.
pub(crate) const PAD: usize = 8;
/// Zigzag codes below this leave room for the write bit in 64 bits.
const SHORT_LIMIT: u64 = 1 << 63;
/// Control codes of the escape form.
const ESC_READ: u8 = 9;
const ESC_WRITE: u8 = 10;
/// Mask of the low `c` bytes, for control codes 0..=8.
const MASKS: [u64; 9] = [
    0,
    0xFF,
    0xFFFF,
    0xFF_FFFF,
    0xFFFF_FFFF,
    0xFF_FFFF_FFFF,
    0xFFFF_FFFF_FFFF,
    0xFF_FFFF_FFFF_FFFF,
    u64::MAX,
];

/// Control bytes of a chunk of `n` records.
#[inline]
pub(crate) fn control_len(n: usize) -> usize {
    n.div_ceil(2)
}

/// Writes a native trace. Accesses are buffered into chunks of `MAX_CHUNK_RECORDS`;
/// [`TraceWriter::finish`] writes the last chunk and the end marker.
pub struct NativeWriter<W: Write = BufWriter<File>> {
    name: String,
    out: Option<W>,
    pending: Vec<Access>,
    raw: Vec<u8>,
    comp: Vec<u8>,
    records: u64,
    chunks: u64,
    finished: bool,
}

impl NativeWriter<BufWriter<File>> {
    /// Create (or truncate) `path` and write the header.
    pub fn create(path: &str, meta: TraceMeta) -> Result<Self> {
        let f = File::create(path).map_err(|e| Error::io(path, &e))?;
        Self::new(path, BufWriter::with_capacity(1 << 20, f), meta)
    }
}

impl<W: Write> NativeWriter<W> {
    /// Write the header of a trace to `out`; `name` is used in error messages.
    pub fn new(name: &str, mut out: W, meta: TraceMeta) -> Result<Self> {
        write_header(name, &mut out, &meta, VERSION)?;
        Ok(NativeWriter {
            name: name.to_string(),
            out: Some(out),
            pending: Vec::with_capacity(MAX_CHUNK_RECORDS as usize),
            raw: Vec::new(),
            comp: Vec::new(),
            records: 0,
            chunks: 0,
            finished: false,
        })
    }

    /// Append one access.
    #[inline]
    pub fn push(&mut self, a: Access) -> Result<()> {
        self.pending.push(a);
        if self.pending.len() == MAX_CHUNK_RECORDS as usize {
            self.flush_chunk()?;
        }
        Ok(())
    }

    fn flush_chunk(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        encode_chunk(&self.pending, &mut self.raw);
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::config("writer", "trace writer already finished"))?;
        let n = self.pending.len() as u32;
        write_chunk(&self.name, out, &self.raw, n, &mut self.comp)?;
        self.records += self.pending.len() as u64;
        self.chunks += 1;
        self.pending.clear();
        Ok(())
    }

    /// Finish (if not done yet) and give back the sink.
    pub fn into_inner(mut self) -> Result<W> {
        if !self.finished {
            self.finish()?;
        }
        self.out
            .take()
            .ok_or_else(|| Error::config("writer", "trace writer has no sink"))
    }
}

impl<W: Write> TraceWriter for NativeWriter<W> {
    fn write(&mut self, accesses: &[Access]) -> Result<()> {
        if self.finished {
            return Err(Error::config("writer", "trace writer already finished"));
        }
        for a in accesses {
            self.push(*a)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<u64> {
        if self.finished {
            return Err(Error::config("writer", "trace writer already finished"));
        }
        self.flush_chunk()?;
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::config("writer", "trace writer has no sink"))?;
        write_trailer(&self.name, out, self.records, self.chunks)?;
        self.finished = true;
        Ok(self.records)
    }
}

/// Write the header (magic, `version`, metadata JSON, CRC); shared by [`NativeWriter`] and the
/// version-2 writer of [`super::recorded`].
pub(crate) fn write_header<W: Write>(
    name: &str,
    out: &mut W,
    meta: &TraceMeta,
    version: u32,
) -> Result<()> {
    super::page_shift(meta.page_size)?;
    let json = serde_json::to_vec(meta)
        .map_err(|e| Error::config("meta", format!("cannot encode trace metadata: {e}")))?;
    if json.len() > MAX_META as usize {
        return Err(Error::config(
            "meta",
            format!(
                "trace metadata is {} bytes; at most {MAX_META} fit the header",
                json.len()
            ),
        ));
    }
    let mut head = Vec::with_capacity(16 + json.len() + 4);
    head.extend_from_slice(&MAGIC);
    head.extend_from_slice(&version.to_le_bytes());
    head.extend_from_slice(&(json.len() as u32).to_le_bytes());
    head.extend_from_slice(&json);
    let crc = crc32fast::hash(&head[8..]);
    head.extend_from_slice(&crc.to_le_bytes());
    out.write_all(&head).map_err(|e| Error::io(name, &e))
}

/// Write one chunk of `n` records whose raw payload is `raw`: LZ4 when that is smaller, the
/// raw bytes otherwise. `comp` is scratch space.
pub(crate) fn write_chunk<W: Write>(
    name: &str,
    out: &mut W,
    raw: &[u8],
    n: u32,
    comp: &mut Vec<u8>,
) -> Result<()> {
    let raw_len = raw.len();
    comp.resize(lz4_flex::block::get_maximum_output_size(raw_len), 0);
    let stored: &[u8] = match lz4_flex::block::compress_into(raw, comp) {
        Ok(k) if k < raw_len => &comp[..k],
        _ => raw,
    };
    let mut h = [0u8; 16];
    h[0..4].copy_from_slice(&(stored.len() as u32).to_le_bytes());
    h[4..8].copy_from_slice(&(raw_len as u32).to_le_bytes());
    h[8..12].copy_from_slice(&n.to_le_bytes());
    h[12..16].copy_from_slice(&crc32fast::hash(stored).to_le_bytes());
    out.write_all(&h)
        .and_then(|_| out.write_all(stored))
        .map_err(|e| Error::io(name, &e))
}

/// Write the end marker and flush.
pub(crate) fn write_trailer<W: Write>(
    name: &str,
    out: &mut W,
    records: u64,
    chunks: u64,
) -> Result<()> {
    let mut t = [0u8; 24];
    t[0..4].copy_from_slice(&END.to_le_bytes());
    t[4..12].copy_from_slice(&records.to_le_bytes());
    t[12..20].copy_from_slice(&chunks.to_le_bytes());
    let crc = crc32fast::hash(&t[4..20]);
    t[20..24].copy_from_slice(&crc.to_le_bytes());
    out.write_all(&t)
        .and_then(|_| out.flush())
        .map_err(|e| Error::io(name, &e))
}

/// Encode one chunk's records into `raw` (cleared first): control nibbles, then data.
fn encode_chunk(accesses: &[Access], raw: &mut Vec<u8>) {
    raw.clear();
    encode_pages(accesses, raw);
}

/// Append the control nibbles and data of `accesses` to `raw` (the v1 payload; the page
/// stream of a v2 payload).
pub(crate) fn encode_pages(accesses: &[Access], raw: &mut Vec<u8>) {
    let base = raw.len();
    let ctrl = control_len(accesses.len());
    raw.resize(base + ctrl, 0);
    raw.reserve(accesses.len() * 4);
    let mut prev = 0u64;
    for (i, a) in accesses.iter().enumerate() {
        let d = a.page.wrapping_sub(prev) as i64;
        let zz = ((d << 1) ^ (d >> 63)) as u64;
        let code = if zz < SHORT_LIMIT {
            let v = (zz << 1) | a.write as u64;
            let len = (64 - v.leading_zeros()).div_ceil(8) as usize;
            raw.extend_from_slice(&v.to_le_bytes()[..len]);
            len as u8
        } else {
            raw.extend_from_slice(&a.page.to_le_bytes());
            if a.write {
                ESC_WRITE
            } else {
                ESC_READ
            }
        };
        raw[base + (i >> 1)] |= code << ((i & 1) * 4);
        prev = a.page;
    }
}

/// Decode `n` records of `raw[..raw_len]` (which has at least [`PAD`] bytes after `raw_len`)
/// onto the end of `out`. Errors are messages; the caller adds the location.
pub(crate) fn decode_chunk(
    raw: &[u8],
    raw_len: usize,
    n: usize,
    out: &mut Vec<Access>,
) -> std::result::Result<(), String> {
    let ctrl_len = control_len(n);
    if raw.len() < raw_len + PAD || ctrl_len > raw_len {
        return Err(format!(
            "corrupt chunk: {n} records need {ctrl_len} control bytes, the payload has {raw_len}"
        ));
    }
    let (ctrl, data) = raw.split_at(ctrl_len);
    let data_len = raw_len - ctrl_len;
    if n % 2 == 1 && ctrl[ctrl_len - 1] >> 4 != 0 {
        return Err("corrupt chunk: the unused last control nibble is not 0".into());
    }
    let start = out.len();
    out.resize(start + n, Access::default());
    let mut pos = 0usize;
    let mut prev = 0u64;
    for (i, slot) in out[start..].iter_mut().enumerate() {
        let code = (ctrl.get(i >> 1).copied().unwrap_or(0) >> ((i & 1) * 4)) & 15;
        let Some(bytes) = data.get(pos..pos + 8) else {
            return Err(format!(
                "corrupt chunk: record {i} starts past the end of the payload"
            ));
        };
        let word = u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
        if let Some(&mask) = MASKS.get(code as usize) {
            let v = word & mask;
            pos += code as usize;
            let zz = v >> 1;
            let d = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
            prev = prev.wrapping_add(d as u64);
            *slot = Access {
                page: prev,
                write: v & 1 != 0,
                gup: false,
            };
        } else if code == ESC_READ || code == ESC_WRITE {
            prev = word;
            pos += 8;
            *slot = Access {
                page: prev,
                write: code == ESC_WRITE,
                gup: false,
            };
        } else {
            return Err(format!(
                "corrupt chunk: record {i} has control code {code} (valid: 0..=10)"
            ));
        }
    }
    if pos != data_len {
        out.truncate(start);
        return Err(format!(
            "corrupt chunk: {n} records use {pos} data bytes but the payload has {data_len}"
        ));
    }
    Ok(())
}

/// Reads a native trace chunk by chunk (memory: one chunk).
pub struct NativeReader {
    path: String,
    rd: Box<dyn Read + Send>,
    meta: TraceMeta,
    /// Byte offset of the next unread byte.
    offset: u64,
    chunk: u64,
    records: u64,
    comp: Vec<u8>,
    raw: Vec<u8>,
    done: bool,
    version: u32,
    /// Scratch space of the file-I/O path of a version-2 trace
    /// ([`TraceSource::next_chunk_io`]).
    io_scratch: Option<Box<super::recorded::IoScratch>>,
}

/// Where [`NativeReader::read_payload`] left a chunk's decompressed payload.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Payload {
    /// Byte offset of the chunk's header.
    pub at: u64,
    /// Records the header declares.
    pub n: usize,
    /// Payload bytes (followed by at least [`PAD`] zero-or-stale bytes in the buffer).
    pub raw_len: usize,
    /// The payload was stored uncompressed and lies in the compressed-bytes buffer.
    in_comp: bool,
}

impl NativeReader {
    /// Open `path` and read its header.
    pub fn open(path: &str) -> Result<Self> {
        let f = File::open(path).map_err(|e| Error::io(path, &e))?;
        Self::from_reader(path, Box::new(BufReader::with_capacity(1 << 18, f)))
    }

    /// Read a native trace from any byte stream; `path` names it in messages.
    pub fn from_reader(path: &str, rd: Box<dyn Read + Send>) -> Result<Self> {
        let mut r = NativeReader {
            path: path.to_string(),
            rd,
            meta: TraceMeta::default(),
            offset: 0,
            chunk: 0,
            records: 0,
            comp: Vec::new(),
            raw: Vec::new(),
            done: false,
            version: VERSION,
            io_scratch: None,
        };
        r.read_header()?;
        Ok(r)
    }

    /// The metadata from the header.
    pub fn meta(&self) -> &TraceMeta {
        &self.meta
    }

    /// The file's format version: 1 (pages and write bits) or [`VERSION_RECORDED`].
    pub fn version(&self) -> u32 {
        self.version
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    fn err(&self, at: u64, msg: impl Into<String>) -> Error {
        Error::trace(&self.path, format!("byte {at}"), msg)
    }

    pub(crate) fn chunk_err(&self, at: u64, msg: impl Into<String>) -> Error {
        Error::trace(&self.path, format!("byte {at} (chunk {})", self.chunk), msg)
    }

    /// Read exactly `buf.len()` bytes; returns how many were there (less = end of file).
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize> {
        let at = self.offset;
        let n = read_full(&mut self.rd, buf)
            .map_err(|e| Error::trace(&self.path, format!("byte {at}"), e.to_string()))?;
        self.offset += n as u64;
        Ok(n)
    }

    fn read_header(&mut self) -> Result<()> {
        let mut magic = [0u8; 8];
        let n = self.fill(&mut magic)?;
        if magic[..n] != MAGIC[..n] || n == 0 {
            return Err(self.err(0, "not a vmemsim native trace (wrong magic bytes)"));
        }
        if n < 8 {
            return Err(self.err(0, "truncated: the file ends inside the header"));
        }
        let mut fixed = [0u8; 8];
        if self.fill(&mut fixed)? < 8 {
            return Err(self.err(8, "truncated: the file ends inside the header"));
        }
        let version = u32::from_le_bytes(fixed[0..4].try_into().unwrap_or_default());
        let meta_len = u32::from_le_bytes(fixed[4..8].try_into().unwrap_or_default());
        if version != VERSION && version != VERSION_RECORDED {
            return Err(self.err(
                8,
                format!("format version {version} is not supported (this build reads {VERSION} and {VERSION_RECORDED})"),
            ));
        }
        self.version = version;
        if meta_len > MAX_META {
            return Err(self.err(
                12,
                format!("header metadata of {meta_len} bytes exceeds the {MAX_META}-byte limit"),
            ));
        }
        let mut meta = vec![0u8; meta_len as usize + 4];
        if self.fill(&mut meta)? < meta.len() {
            return Err(self.err(16, "truncated: the file ends inside the header"));
        }
        let stored = u32::from_le_bytes(meta[meta_len as usize..].try_into().unwrap_or_default());
        let mut h = crc32fast::Hasher::new();
        h.update(&fixed);
        h.update(&meta[..meta_len as usize]);
        let computed = h.finalize();
        if stored != computed {
            return Err(self.err(
                16 + meta_len as u64,
                format!(
                    "corrupt header: CRC32 mismatch (stored {stored:#010x}, computed {computed:#010x})"
                ),
            ));
        }
        self.meta = serde_json::from_slice(&meta[..meta_len as usize])
            .map_err(|e| self.err(16, format!("header metadata is not valid JSON: {e}")))?;
        super::page_shift(self.meta.page_size).map_err(|_| {
            self.err(
                16,
                format!(
                    "header page_size {} is not a power of two",
                    self.meta.page_size
                ),
            )
        })?;
        Ok(())
    }

    fn read_trailer(&mut self, at: u64) -> Result<()> {
        let mut t = [0u8; 20];
        if self.fill(&mut t)? < 20 {
            return Err(self.err(at, "truncated: the file ends inside the end marker"));
        }
        let records = u64::from_le_bytes(t[0..8].try_into().unwrap_or_default());
        let chunks = u64::from_le_bytes(t[8..16].try_into().unwrap_or_default());
        let stored = u32::from_le_bytes(t[16..20].try_into().unwrap_or_default());
        let computed = crc32fast::hash(&t[0..16]);
        if stored != computed {
            return Err(self.err(
                at,
                format!(
                    "corrupt end marker: CRC32 mismatch (stored {stored:#010x}, computed {computed:#010x})"
                ),
            ));
        }
        if records != self.records || chunks != self.chunk {
            return Err(self.err(
                at,
                format!(
                    "corrupt end marker: it counts {records} records in {chunks} chunks, the file has {} in {}",
                    self.records, self.chunk
                ),
            ));
        }
        let mut extra = [0u8; 1];
        let after = self.offset;
        if self.fill(&mut extra)? != 0 {
            return Err(self.err(after, "unexpected bytes after the end marker"));
        }
        Ok(())
    }
}

impl NativeReader {
    /// Read the next chunk's header and payload, check its CRC and decompress it; `None` at
    /// the end marker (whose counts are checked against what was read). The caller decodes
    /// the payload ([`Self::payload`]) and then calls [`Self::commit`].
    pub(crate) fn read_payload(&mut self) -> Result<Option<Payload>> {
        if self.done {
            return Ok(None);
        }
        let at = self.offset;
        let mut h = [0u8; 16];
        let got = self.fill(&mut h[..4])?;
        if got == 0 {
            return Err(self.chunk_err(
                at,
                format!(
                    "truncated: no end marker after {} chunks (was the writer interrupted?)",
                    self.chunk
                ),
            ));
        }
        if got < 4 {
            return Err(self.chunk_err(at, "truncated: the file ends inside a chunk header"));
        }
        let comp_len = u32::from_le_bytes(h[0..4].try_into().unwrap_or_default());
        if comp_len == END {
            self.read_trailer(at)?;
            self.done = true;
            return Ok(None);
        }
        if self.fill(&mut h[4..])? < 12 {
            return Err(self.chunk_err(at, "truncated: the file ends inside a chunk header"));
        }
        let raw_len = u32::from_le_bytes(h[4..8].try_into().unwrap_or_default());
        let n = u32::from_le_bytes(h[8..12].try_into().unwrap_or_default());
        let crc = u32::from_le_bytes(h[12..16].try_into().unwrap_or_default());
        if n == 0 || n > MAX_CHUNK_RECORDS {
            return Err(self.chunk_err(
                at,
                format!("corrupt chunk header: {n} records (must be 1..={MAX_CHUNK_RECORDS})"),
            ));
        }
        let (min_raw, max_raw) = if self.version == VERSION {
            let min = control_len(n as usize) as u32;
            (min, min + n * MAX_RECORD_BYTES)
        } else {
            (super::recorded::PAYLOAD_HEAD as u32, MAX_RAW_V2)
        };
        if raw_len < min_raw || raw_len > max_raw || comp_len > raw_len {
            return Err(self.chunk_err(
                at,
                format!(
                    "corrupt chunk header: {n} records cannot take {raw_len} bytes stored in {comp_len}"
                ),
            ));
        }
        let mut comp = std::mem::take(&mut self.comp);
        comp.resize(comp_len as usize, 0);
        let got = self.fill(&mut comp)?;
        if got < comp_len as usize {
            self.comp = comp;
            return Err(self.chunk_err(
                at,
                format!("truncated: the chunk payload has {got} of its {comp_len} bytes"),
            ));
        }
        let computed = crc32fast::hash(&comp);
        if computed != crc {
            self.comp = comp;
            return Err(self.chunk_err(
                at,
                format!(
                    "corrupt chunk: CRC32 mismatch (stored {crc:#010x}, computed {computed:#010x})"
                ),
            ));
        }
        let raw_len = raw_len as usize;
        let payload = Payload {
            at,
            n: n as usize,
            raw_len,
            in_comp: comp_len as usize == raw_len,
        };
        if payload.in_comp {
            comp.resize(raw_len + PAD, 0);
            self.comp = comp;
            return Ok(Some(payload));
        }
        let mut raw = std::mem::take(&mut self.raw);
        raw.resize(raw_len + PAD, 0);
        let r = match lz4_flex::block::decompress_into(&comp, &mut raw[..raw_len]) {
            Ok(k) if k == raw_len => Ok(()),
            Ok(k) => Err(format!(
                "corrupt chunk: LZ4 payload decompresses to {k} bytes, the header says {raw_len}"
            )),
            Err(e) => Err(format!(
                "corrupt chunk: LZ4 payload does not decompress ({e})"
            )),
        };
        self.raw = raw;
        self.comp = comp;
        r.map_err(|msg| self.chunk_err(at, msg))?;
        Ok(Some(payload))
    }

    /// The bytes of a payload [`Self::read_payload`] returned: `raw_len` of them, then
    /// [`PAD`] more.
    pub(crate) fn payload(&self, p: &Payload) -> &[u8] {
        if p.in_comp {
            &self.comp
        } else {
            &self.raw
        }
    }

    /// Count a decoded chunk.
    pub(crate) fn commit(&mut self, p: &Payload) {
        self.records += p.n as u64;
        self.chunk += 1;
    }
}

impl TraceSource for NativeReader {
    fn next_chunk(&mut self, buf: &mut Vec<Access>) -> Result<()> {
        buf.clear();
        // A version-2 chunk may hold only file I/O records: read on until accesses or the end.
        while buf.is_empty() {
            let Some(p) = self.read_payload()? else {
                return Ok(());
            };
            let raw = self.payload(&p);
            let result = if self.version == VERSION {
                decode_chunk(raw, p.raw_len, p.n, buf)
            } else {
                super::recorded::decode_pages_only(raw, p.raw_len, p.n, buf)
            };
            if let Err(msg) = result {
                buf.clear();
                return Err(self.chunk_err(p.at, msg));
            }
            self.commit(&p);
        }
        Ok(())
    }

    fn next_chunk_io(
        &mut self,
        buf: &mut Vec<Access>,
        io: &mut Vec<(u32, super::recorded::FileIo)>,
    ) -> Result<()> {
        if self.version == VERSION {
            io.clear();
            return self.next_chunk(buf);
        }
        buf.clear();
        io.clear();
        let mut s = self.io_scratch.take().unwrap_or_default();
        let r = (|| {
            // A chunk may hold only file-table entries: read on until a record to replay.
            while buf.is_empty() && io.is_empty() {
                let Some(p) = self.read_payload()? else {
                    return Ok(());
                };
                let raw = self.payload(&p);
                if let Err(msg) =
                    super::recorded::decode_with_io(raw, p.raw_len, p.n, &mut s, buf, io)
                {
                    buf.clear();
                    io.clear();
                    return Err(self.chunk_err(p.at, msg));
                }
                self.commit(&p);
            }
            Ok(())
        })();
        self.io_scratch = Some(s);
        r
    }

    fn files(&mut self) -> Result<Option<Vec<crate::mm::FileSpec>>> {
        if self.version == VERSION {
            return Ok(None);
        }
        super::recorded::file_specs(&self.path).map(Some)
    }

    fn records(&self) -> Option<u64> {
        Some(self.records)
    }

    fn name(&self) -> String {
        self.path.clone()
    }

    fn page_size(&self) -> Option<u64> {
        Some(self.meta.page_size)
    }

    fn len_hint(&self) -> Option<u64> {
        self.meta.records
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::collect;

    fn write_mem(accesses: &[Access], meta: TraceMeta) -> Vec<u8> {
        let mut w = NativeWriter::new("mem", Vec::new(), meta).unwrap();
        w.write(accesses).unwrap();
        w.into_inner().unwrap()
    }

    fn read_mem(bytes: &[u8]) -> Result<Vec<Access>> {
        let mut r =
            NativeReader::from_reader("t.vmt", Box::new(std::io::Cursor::new(bytes.to_vec())))?;
        collect(&mut r)
    }

    fn sample() -> Vec<Access> {
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut v = Vec::new();
        for i in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let page = match i % 5 {
                0 => i,                     // sequential-ish
                1 => x % 1000,              // small deltas
                2 => x,                     // full 64-bit values (escape form)
                3 => u64::MAX - (x % 3),    // wrap-around deltas
                _ => (x >> 20) % (1 << 40), // mid-size deltas
            };
            v.push(Access {
                page,
                write: x & 1 == 1,
                gup: false,
            });
        }
        v
    }

    #[test]
    fn round_trip_all_delta_sizes() {
        let v = sample();
        let meta = TraceMeta {
            origin: Some("unit test".into()),
            records: Some(v.len() as u64),
            ..TraceMeta::default()
        };
        let bytes = write_mem(&v, meta.clone());
        let mut r =
            NativeReader::from_reader("t.vmt", Box::new(std::io::Cursor::new(bytes))).unwrap();
        assert_eq!(r.meta(), &meta);
        assert_eq!(collect(&mut r).unwrap(), v);
        // Every varint length 1..=8 and the escape form round-trip, at both write bits.
        let mut edge = vec![];
        let mut page = 0u64;
        for bits in 0..64u32 {
            for delta in [(1u64 << bits) - 1, 1u64 << bits] {
                page = page.wrapping_add(delta);
                edge.push(Access::read(page));
                page = page.wrapping_sub(delta.wrapping_mul(2));
                edge.push(Access::write(page));
            }
        }
        assert_eq!(
            read_mem(&write_mem(&edge, TraceMeta::default())).unwrap(),
            edge
        );
    }

    #[test]
    fn encoding_by_hand() {
        // Page 1 then page 0: deltas +1 and -1 → zigzag 2 and 1 → with the write bit
        // v = 4 (read) and 3 (write): one data byte each; control nibbles 1, 1.
        let mut raw = Vec::new();
        encode_chunk(&[Access::read(1), Access::write(0)], &mut raw);
        assert_eq!(raw, vec![0x11, 0x04, 0x03]);
        // Delta +64: zigzag 128, v = 256 → two bytes 00 01.
        encode_chunk(&[Access::read(64)], &mut raw);
        assert_eq!(raw, vec![0x02, 0x00, 0x01]);
        // The same page again: v = 0, no data byte, code 0.
        encode_chunk(&[Access::read(5), Access::read(5)], &mut raw);
        assert_eq!(raw, vec![0x01, 0x14]);
        // Delta 2^60 (write): zigzag 2^61, v = 2^62 + 1 → eight bytes.
        encode_chunk(&[Access::write(1 << 60)], &mut raw);
        assert_eq!(raw, vec![0x08, 1, 0, 0, 0, 0, 0, 0, 0x40]);
        // Delta 2^62: zigzag 2^63 leaves no room for the write bit → escape (read), absolute page.
        encode_chunk(&[Access::read(1 << 62)], &mut raw);
        assert_eq!(raw, vec![0x09, 0, 0, 0, 0, 0, 0, 0, 0x40]);
    }

    #[test]
    fn empty_trace_and_sequential_compresses() {
        assert_eq!(
            read_mem(&write_mem(&[], TraceMeta::default())).unwrap(),
            vec![]
        );
        let seq: Vec<Access> = (0..100_000).map(Access::read).collect();
        let bytes = write_mem(&seq, TraceMeta::default());
        // One byte per record before LZ4; the repeated byte compresses to almost nothing.
        assert!(bytes.len() < 2_000, "{} bytes", bytes.len());
        assert_eq!(read_mem(&bytes).unwrap(), seq);
    }

    #[test]
    fn error_wrong_magic() {
        let e = read_mem(b"1\n2\n3\n4\n5\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.vmt: byte 0: not a vmemsim native trace (wrong magic bytes)"
        );
        let e = read_mem(b"").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.vmt: byte 0: not a vmemsim native trace (wrong magic bytes)"
        );
    }

    fn header_len(bytes: &[u8]) -> usize {
        16 + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize + 4
    }

    #[test]
    fn error_truncated() {
        let v: Vec<Access> = (0..70_000).map(|i| Access::read(i * 3)).collect();
        let bytes = write_mem(&v, TraceMeta::default());
        let h = header_len(&bytes);
        // Cut off the end marker: the file ends exactly after the last chunk.
        let cut = &bytes[..bytes.len() - 24];
        assert_eq!(
            read_mem(cut).unwrap_err().to_string(),
            format!(
                "t.vmt: byte {} (chunk 2): truncated: no end marker after 2 chunks (was the writer interrupted?)",
                bytes.len() - 24
            )
        );
        // Cut inside the first chunk's payload.
        let cut = &bytes[..h + 16 + 10];
        let comp_len = u32::from_le_bytes(bytes[h..h + 4].try_into().unwrap());
        assert_eq!(
            read_mem(cut).unwrap_err().to_string(),
            format!("t.vmt: byte {h} (chunk 0): truncated: the chunk payload has 10 of its {comp_len} bytes")
        );
        // Cut inside a chunk header.
        let cut = &bytes[..h + 6];
        assert_eq!(
            read_mem(cut).unwrap_err().to_string(),
            format!("t.vmt: byte {h} (chunk 0): truncated: the file ends inside a chunk header")
        );
        // Cut inside the header, and inside the end marker.
        assert_eq!(
            read_mem(&bytes[..h - 2]).unwrap_err().to_string(),
            "t.vmt: byte 16: truncated: the file ends inside the header"
        );
        let at = bytes.len() - 24;
        assert_eq!(
            read_mem(&bytes[..bytes.len() - 3]).unwrap_err().to_string(),
            format!("t.vmt: byte {at}: truncated: the file ends inside the end marker")
        );
    }

    #[test]
    fn error_corrupt_chunk_crc() {
        let v: Vec<Access> = (0..1000).map(|i| Access::read(i * i)).collect();
        let mut bytes = write_mem(&v, TraceMeta::default());
        let h = header_len(&bytes);
        let stored = u32::from_le_bytes(bytes[h + 12..h + 16].try_into().unwrap());
        bytes[h + 16 + 5] ^= 0x40;
        let comp_len = u32::from_le_bytes(bytes[h..h + 4].try_into().unwrap()) as usize;
        let computed = crc32fast::hash(&bytes[h + 16..h + 16 + comp_len]);
        assert_eq!(
            read_mem(&bytes).unwrap_err().to_string(),
            format!("t.vmt: byte {h} (chunk 0): corrupt chunk: CRC32 mismatch (stored {stored:#010x}, computed {computed:#010x})")
        );
    }

    #[test]
    fn error_header_fields() {
        let bytes = write_mem(&[Access::read(5)], TraceMeta::default());
        let mut b = bytes.clone();
        b[8] = 9;
        assert_eq!(
            read_mem(&b).unwrap_err().to_string(),
            "t.vmt: byte 8: format version 9 is not supported (this build reads 1 and 2)"
        );
        let mut b = bytes.clone();
        b[17] ^= 1; // inside the JSON
        assert!(read_mem(&b)
            .unwrap_err()
            .to_string()
            .contains("corrupt header: CRC32 mismatch"));
        // Trailing garbage after the end marker.
        let mut b = bytes.clone();
        b.push(0);
        assert_eq!(
            read_mem(&b).unwrap_err().to_string(),
            format!(
                "t.vmt: byte {}: unexpected bytes after the end marker",
                bytes.len()
            )
        );
        // An end marker that miscounts (with a valid CRC) is caught.
        let mut b = bytes.clone();
        let t = b.len() - 20;
        b[t..t + 8].copy_from_slice(&7u64.to_le_bytes());
        let crc = crc32fast::hash(&b[t..t + 16]);
        b[t + 16..t + 20].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(
            read_mem(&b).unwrap_err().to_string(),
            format!("t.vmt: byte {}: corrupt end marker: it counts 7 records in 1 chunks, the file has 1 in 1", t - 4)
        );
    }

    /// A file whose single chunk is `payload` stored raw (with a correct CRC) claiming `n`
    /// records; returns it and the chunk's offset.
    fn with_raw_chunk(payload: &[u8], n: u32) -> (Vec<u8>, usize) {
        let mut bytes = write_mem(&[], TraceMeta::default());
        bytes.truncate(bytes.len() - 24);
        let at = bytes.len();
        let len = payload.len() as u32;
        for x in [len, len, n, crc32fast::hash(payload)] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        bytes.extend_from_slice(payload);
        (bytes, at)
    }

    #[test]
    fn error_bad_record_with_valid_crc() {
        // The checksum passes; the decoder must catch these.
        let (b, at) = with_raw_chunk(&[0x0B, 0, 0], 1);
        assert_eq!(
            read_mem(&b).unwrap_err().to_string(),
            format!("t.vmt: byte {at} (chunk 0): corrupt chunk: record 0 has control code 11 (valid: 0..=10)")
        );
        // Code 8 promises eight data bytes; the payload has two.
        let (b, at) = with_raw_chunk(&[0x08, 1, 2], 1);
        assert_eq!(
            read_mem(&b).unwrap_err().to_string(),
            format!("t.vmt: byte {at} (chunk 0): corrupt chunk: 1 records use 8 data bytes but the payload has 2")
        );
        let (b, at) = with_raw_chunk(&[0x21, 1, 2, 3], 1);
        assert_eq!(
            read_mem(&b).unwrap_err().to_string(),
            format!("t.vmt: byte {at} (chunk 0): corrupt chunk: the unused last control nibble is not 0")
        );
        // A record count the payload cannot hold is refused from the header alone.
        let (b, at) = with_raw_chunk(&[0x11], 3);
        assert_eq!(
            read_mem(&b).unwrap_err().to_string(),
            format!("t.vmt: byte {at} (chunk 0): corrupt chunk header: 3 records cannot take 1 bytes stored in 1")
        );
    }
}

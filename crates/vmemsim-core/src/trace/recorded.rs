//! Recorded traces: version 2 of the native format (`.vmt`), written by `vmemsim trace
//! record` ([`super::recorder`]) and readable wherever a native trace is.
//!
//! A recorded trace keeps, per record, what a page-access recorder sees of a real program:
//! the thread, how many consecutive accesses the record folds, an instruction-count stamp,
//! read / write / instruction fetch, and the file I/O system calls with the files they name.
//!
//! # Layout
//!
//! Header, chunk framing, end marker and every check are those of version 1 ([`super::native`]):
//! the header's version field is 2, a chunk header's `n` counts all records of the chunk
//! (accesses and events), `raw_len` is at most 64 MiB, and the end marker counts all records.
//! Only the raw payload differs. All integers little-endian; `LEB128` = unsigned LEB128.
//!
//! ```text
//! head     n_acc      u32   access records in the chunk
//!          n_ev       u32   event records (file table entries and file I/O); n_acc + n_ev = n
//!          page_len   u32   bytes of each of the four access streams that follow
//!          thread_len u32
//!          count_len  u32
//!          stamp_len  u32
//! pages    page_len   the version-1 payload of the n_acc (page, write) pairs: control nibbles
//!                     then data, delta-coded from page 0 (see [`super::native`])
//! threads  thread_len LEB128 per access record: tid << 1 | ifetch
//! counts   count_len  LEB128 per access record: count - 1
//! stamps   stamp_len  LEB128 per access record: zigzag(stamp - previous stamp), the previous
//!                     stamp being 0 at the start of the chunk
//! events   the rest   n_ev events, each LEB128 fields starting with `pos` (the number of this
//!                     chunk's access records that come before it; non-decreasing) and `kind`:
//!            kind 0   file-table entry: id, path_len, then path_len bytes of path (UTF-8;
//!                     other bytes are replaced when read)
//!            kind 1..=11 file I/O (1 read, 2 write, 3 pread64, 4 pwrite64, 5 mmap, 6 fsync,
//!                     7 fadvise64, 8 ftruncate, 9 a read and 10 a write of a file open with
//!                     O_DIRECT, 11 unlink): tid, stamp, file id, offset, length, addr (see
//!                     [`FileIo`] for what each holds per call)
//! ```
//!
//! Each stream is consumed exactly (leftover bytes, a short stream, an unknown event kind, an
//! I/O record naming a file not yet in the table, a write that is also an instruction fetch,
//! are all errors naming the file and the chunk's byte offset).
//!
//! # What a record means
//!
//! - An access record: `count` (≥ 1) consecutive accesses by thread `tid` to page `page`,
//!   the first at stamp `stamp`; `write` = at least one of them wrote; `ifetch` = they were
//!   instruction fetches (never also a write). The recorder's stamp is the number of guest
//!   instructions executed by all threads of the process before the first access (Valgrind
//!   runs one thread at a time), so stamps of one process's data records never decrease;
//!   fetch records (`--ifetch`) are folded apart from data and may be out of stamp order by
//!   one run. A forked child's count goes on from its parent's at the fork, so stamps of
//!   different processes are not comparable. Thread ids are those of
//!   [`super::recorder::TID_DOC`] (distinct across processes).
//! - A file I/O record: a successful system call on a regular file: `offset` and `len` in
//!   bytes (for `read`/`write` the file position before the call and the bytes transferred;
//!   for `mmap` the mapped file range, and `addr` the mapping's start address, its low 12
//!   bits the flags of [`mmap_flags`] (0 in traces of recorders before them); 0 otherwise).
//! - A file-table entry gives a file id its path; it precedes the first record using the id.
//!
//! # How the existing commands see it
//!
//! As a [`TraceSource`](super::TraceSource) (`replay`, `mrc`, `trace info`, `trace convert`)
//! a recorded trace is one access per access record in recorded order: consecutive accesses
//! to one page by one thread collapse into one reference (they cannot change any policy's
//! decision except a frequency count), instruction fetches are reads, and events are skipped.
//! Only the page stream is decoded on that path, so it reads as fast as version 1. `replay`
//! also takes the file I/O records in their places ([`super::TraceSource::next_chunk_io`],
//! which decodes in full only chunks holding events) and the files' sizes from a pass of
//! their own ([`file_specs`]), and serves them through the page cache
//! ([`crate::engine::Machine::file_io`]).
//! [`RecordedReader`] gives everything: access records with tid, count and stamp, and the
//! events in their place. Converting a recorded trace to another format keeps that same
//! access stream.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};

use super::native::{self, NativeReader, PAD, VERSION, VERSION_RECORDED};
use super::{TraceMeta, TraceWriter, CHUNK};
use crate::access::Access;
use crate::error::{Error, Result};

/// Bytes of a v2 payload's fixed head.
pub(crate) const PAYLOAD_HEAD: usize = 24;
/// The writer starts a new chunk once the event stream passes this many bytes.
const EVENT_FLUSH: usize = 1 << 20;
/// Longest path a file-table entry may hold.
pub const MAX_PATH: usize = 1 << 16;

/// One access record of a recorded trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Recorded {
    pub page: u64,
    /// At least one of the folded accesses wrote.
    pub write: bool,
    /// The accesses were instruction fetches.
    pub ifetch: bool,
    /// Thread id: the recorder's ([`super::recorder::TID_DOC`]: 1 = the recorded command's main
    /// thread; pid × 1000 + thread number in forked and exec'd processes).
    pub tid: u32,
    /// Consecutive accesses folded into the record, at least 1.
    pub count: u64,
    /// Guest instructions executed before the first of them (all threads).
    pub stamp: u64,
}

impl Recorded {
    /// The access a plain [`super::TraceSource`] yields for this record.
    pub fn access(&self) -> Access {
        Access {
            page: self.page,
            write: self.write,
            gup: false,
        }
    }
}

/// The system call of a file I/O record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileOp {
    Read = 1,
    Write = 2,
    Pread = 3,
    Pwrite = 4,
    Mmap = 5,
    /// `fsync` or `fdatasync` (offset and length 0: the whole file).
    Fsync = 6,
    /// `fadvise64`: the advice (`POSIX_FADV_*`, 0..=5) in `addr`.
    Fadvise = 7,
    /// `ftruncate`: the new size in `len` (offset 0).
    Ftruncate = 8,
    /// A read (any of read, pread64, readv, preadv...) of a file open with `O_DIRECT`: at
    /// `offset` (the file position for the calls that use it), into the user buffer at
    /// `addr` (the first iovec's for the vectored calls).
    DirectRead = 9,
    /// A write of a file open with `O_DIRECT`, as [`FileOp::DirectRead`].
    DirectWrite = 10,
    /// The file is gone: its last name was removed (`unlink`, `unlinkat`) and no file
    /// descriptor of the program is open on it any more (the record comes at the `close` of
    /// the last one when the file was still open). Offset, length and addr 0. The kernel
    /// frees its pages then (`iput_final` → `evict` → `truncate_inode_pages_final`: dirty
    /// pages are dropped unwritten).
    Unlink = 11,
}

/// The flags of a [`FileOp::Mmap`] record, in the low bits of its page-aligned `addr`
/// (recorders from the one that added them on; older records have 0 there: flags unknown).
pub mod mmap_flags {
    /// The record carries the flags below.
    pub const KNOWN: u64 = 1;
    /// `MAP_SHARED` (else `MAP_PRIVATE`).
    pub const SHARED: u64 = 2;
    /// `PROT_WRITE`.
    pub const WRITE: u64 = 4;
    /// The bits of `addr` that hold flags.
    pub const MASK: u64 = 0xfff;
}

/// `POSIX_FADV_*` (include/uapi/linux/fadvise.h), the advice of a [`FileOp::Fadvise`].
pub mod fadv {
    pub const NORMAL: u64 = 0;
    pub const RANDOM: u64 = 1;
    pub const SEQUENTIAL: u64 = 2;
    pub const WILLNEED: u64 = 3;
    pub const DONTNEED: u64 = 4;
    pub const NOREUSE: u64 = 5;
}

impl FileOp {
    pub const ALL: [FileOp; 11] = [
        FileOp::Read,
        FileOp::Write,
        FileOp::Pread,
        FileOp::Pwrite,
        FileOp::Mmap,
        FileOp::Fsync,
        FileOp::Fadvise,
        FileOp::Ftruncate,
        FileOp::DirectRead,
        FileOp::DirectWrite,
        FileOp::Unlink,
    ];

    pub fn from_code(code: u64) -> Option<FileOp> {
        Self::ALL.iter().copied().find(|op| *op as u64 == code)
    }

    /// The system call's name.
    pub fn name(self) -> &'static str {
        match self {
            FileOp::Read => "read",
            FileOp::Write => "write",
            FileOp::Pread => "pread64",
            FileOp::Pwrite => "pwrite64",
            FileOp::Mmap => "mmap",
            FileOp::Fsync => "fsync",
            FileOp::Fadvise => "fadvise64",
            FileOp::Ftruncate => "ftruncate",
            FileOp::DirectRead => "read_direct",
            FileOp::DirectWrite => "write_direct",
            FileOp::Unlink => "unlink",
        }
    }
}

/// A file I/O record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileIo {
    pub op: FileOp,
    pub tid: u32,
    pub stamp: u64,
    /// Id in the file table.
    pub file: u32,
    /// Byte offset in the file (0 for fsync and ftruncate).
    pub offset: u64,
    /// Bytes transferred or mapped; fadvise64's length (0: to the end of the file);
    /// ftruncate's new size; 0 for fsync.
    pub len: u64,
    /// Start address of an mmap (its low bits the [`mmap_flags`]), of the user buffer of an
    /// `O_DIRECT` read or write,
    /// fadvise64's advice ([`fadv`]); 0 for the other calls.
    pub addr: u64,
}

/// One record of a recorded trace, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Access(Recorded),
    /// A file-table entry.
    File {
        id: u32,
        path: String,
    },
    Io(FileIo),
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    if v < 0x80 {
        out.push(v as u8);
        return;
    }
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(d: i64) -> u64 {
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// A cursor over one stream of a payload; errors are messages naming the stream.
struct Stream<'a> {
    buf: &'a [u8],
    pos: usize,
    name: &'static str,
}

impl<'a> Stream<'a> {
    fn varint(&mut self) -> std::result::Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(format!(
                    "corrupt chunk: the {} stream ends inside a value",
                    self.name
                ));
            };
            self.pos += 1;
            if shift == 63 && b > 1 {
                break;
            }
            v |= ((b & 0x7F) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!(
            "corrupt chunk: a value in the {} stream exceeds 64 bits",
            self.name
        ))
    }

    fn u32(&mut self, what: &str) -> std::result::Result<u32, String> {
        let v = self.varint()?;
        u32::try_from(v).map_err(|_| format!("corrupt chunk: {what} {v} exceeds 32 bits"))
    }

    fn bytes(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(format!(
                "corrupt chunk: the {} stream ends inside a path",
                self.name
            ));
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn done(&self) -> std::result::Result<(), String> {
        if self.pos != self.buf.len() {
            return Err(format!(
                "corrupt chunk: the {} stream has {} bytes left over",
                self.name,
                self.buf.len() - self.pos
            ));
        }
        Ok(())
    }
}

/// The head of a v2 payload, checked against the chunk header's `n` and `raw_len`.
struct Head {
    n_acc: usize,
    n_ev: usize,
    /// Offsets of the pages, threads, counts, stamps and events streams, and the end.
    bounds: [usize; 6],
}

fn parse_head(raw: &[u8], raw_len: usize, n: usize) -> std::result::Result<Head, String> {
    if raw_len < PAYLOAD_HEAD || raw.len() < raw_len {
        return Err(format!(
            "corrupt chunk: a {raw_len}-byte payload is shorter than its {PAYLOAD_HEAD}-byte head"
        ));
    }
    let f = |i: usize| u32::from_le_bytes(raw[i * 4..i * 4 + 4].try_into().unwrap_or_default());
    let (n_acc, n_ev) = (f(0) as usize, f(1) as usize);
    if n_acc + n_ev != n {
        return Err(format!(
            "corrupt chunk: {n_acc} access records and {n_ev} events do not make the header's {n}"
        ));
    }
    let mut bounds = [PAYLOAD_HEAD; 6];
    for i in 0..4 {
        bounds[i + 1] = bounds[i] + f(2 + i) as usize;
    }
    if bounds[4] > raw_len {
        return Err(format!(
            "corrupt chunk: stream lengths add up to {} bytes, past the {raw_len}-byte payload",
            bounds[4]
        ));
    }
    bounds[5] = raw_len;
    Ok(Head {
        n_acc,
        n_ev,
        bounds,
    })
}

/// Decode only the (page, write) pairs of a v2 payload onto `out` (the plain
/// [`super::TraceSource`] path). `raw` has [`PAD`] bytes after `raw_len`.
pub(crate) fn decode_pages_only(
    raw: &[u8],
    raw_len: usize,
    n: usize,
    out: &mut Vec<Access>,
) -> std::result::Result<(), String> {
    let h = parse_head(raw, raw_len, n)?;
    let b = h.bounds;
    native::decode_chunk(&raw[b[0]..], b[1] - b[0], h.n_acc, out)
}

/// Decode a whole v2 payload onto `out` in file order; `files` gains the chunk's file-table
/// entries. `pages` is scratch space.
fn decode_full(
    raw: &[u8],
    raw_len: usize,
    n: usize,
    files: &mut BTreeMap<u32, String>,
    pages: &mut Vec<Access>,
    out: &mut Vec<Event>,
) -> std::result::Result<(), String> {
    let h = parse_head(raw, raw_len, n)?;
    let b = h.bounds;
    pages.clear();
    native::decode_chunk(&raw[b[0]..], b[1] - b[0], h.n_acc, pages)?;
    let stream = |i: usize, name| Stream {
        buf: &raw[b[i]..b[i + 1]],
        pos: 0,
        name,
    };
    let (mut threads, mut counts, mut stamps, mut events) = (
        stream(1, "threads"),
        stream(2, "counts"),
        stream(3, "stamps"),
        stream(4, "events"),
    );
    let mut stamp = 0u64;
    // Position of the next unread event (events at position i come before access record i).
    let mut next = if h.n_ev > 0 {
        Some(events.varint()?)
    } else {
        None
    };
    let mut emitted = 0usize;
    // One step past the last access record, for the events placed after it.
    #[allow(clippy::needless_range_loop)]
    for i in 0..=h.n_acc {
        while next == Some(i as u64) {
            out.push(read_event(&mut events, files)?);
            emitted += 1;
            next = if emitted < h.n_ev {
                let p = events.varint()?;
                if p < i as u64 {
                    return Err(format!(
                        "corrupt chunk: event positions decrease ({i} then {p})"
                    ));
                }
                Some(p)
            } else {
                None
            };
        }
        if i == h.n_acc {
            break;
        }
        let tk = threads.varint()?;
        let tid = u32::try_from(tk >> 1)
            .map_err(|_| format!("corrupt chunk: thread id {} exceeds 32 bits", tk >> 1))?;
        let count = counts
            .varint()?
            .checked_add(1)
            .ok_or("corrupt chunk: a count exceeds 64 bits")?;
        stamp = stamp.wrapping_add(unzigzag(stamps.varint()?) as u64);
        let a = pages[i];
        let ifetch = tk & 1 == 1;
        if ifetch && a.write {
            return Err(format!(
                "corrupt chunk: access record {i} is both a write and an instruction fetch"
            ));
        }
        out.push(Event::Access(Recorded {
            page: a.page,
            write: a.write,
            ifetch,
            tid,
            count,
            stamp,
        }));
    }
    if let Some(p) = next {
        return Err(format!(
            "corrupt chunk: an event placed after access record {p} of {}",
            h.n_acc
        ));
    }
    threads.done()?;
    counts.done()?;
    stamps.done()?;
    events.done()
}

fn read_event(
    events: &mut Stream<'_>,
    files: &mut BTreeMap<u32, String>,
) -> std::result::Result<Event, String> {
    let kind = events.varint()?;
    if kind == 0 {
        let id = events.u32("file id")?;
        let len = events.varint()?;
        if len > MAX_PATH as u64 {
            return Err(format!(
                "corrupt chunk: a {len}-byte path (at most {MAX_PATH})"
            ));
        }
        let path = String::from_utf8_lossy(events.bytes(len as usize)?).into_owned();
        files.insert(id, path.clone());
        return Ok(Event::File { id, path });
    }
    let op = FileOp::from_code(kind).ok_or_else(|| {
        format!(
            "corrupt chunk: unknown event kind {kind} (valid: 0..={})",
            FileOp::ALL.len()
        )
    })?;
    let tid = events.u32("thread id")?;
    let stamp = events.varint()?;
    let file = events.u32("file id")?;
    if !files.contains_key(&file) {
        return Err(format!(
            "corrupt chunk: a {} record names file {file}, not in the file table",
            op.name()
        ));
    }
    Ok(Event::Io(FileIo {
        op,
        tid,
        stamp,
        file,
        offset: events.varint()?,
        len: events.varint()?,
        addr: events.varint()?,
    }))
}

/// The records of one chunk being built: the page stream's accesses and the other streams
/// already LEB128-encoded.
#[derive(Default)]
struct ChunkBufs {
    pages: Vec<Access>,
    threads: Vec<u8>,
    counts: Vec<u8>,
    stamps: Vec<u8>,
    events: Vec<u8>,
    n_ev: usize,
}

impl ChunkBufs {
    fn n(&self) -> usize {
        self.pages.len() + self.n_ev
    }

    fn clear(&mut self) {
        self.pages.clear();
        self.threads.clear();
        self.counts.clear();
        self.stamps.clear();
        self.events.clear();
        self.n_ev = 0;
    }
}

/// The back half of a writer: encodes the page stream, assembles the payload, compresses
/// and writes chunks, then the end marker.
struct ChunkSink<W> {
    name: String,
    out: W,
    raw: Vec<u8>,
    comp: Vec<u8>,
    records: u64,
    chunks: u64,
}

impl<W: Write> ChunkSink<W> {
    fn write_chunk(&mut self, c: &ChunkBufs) -> Result<()> {
        let n = c.n();
        if n == 0 {
            return Ok(());
        }
        let raw = &mut self.raw;
        raw.clear();
        raw.extend_from_slice(&(c.pages.len() as u32).to_le_bytes());
        raw.extend_from_slice(&(c.n_ev as u32).to_le_bytes());
        raw.resize(PAYLOAD_HEAD, 0);
        native::encode_pages(&c.pages, raw);
        let page_len = raw.len() - PAYLOAD_HEAD;
        for (i, len) in [page_len, c.threads.len(), c.counts.len(), c.stamps.len()]
            .into_iter()
            .enumerate()
        {
            raw[8 + 4 * i..12 + 4 * i].copy_from_slice(&(len as u32).to_le_bytes());
        }
        raw.extend_from_slice(&c.threads);
        raw.extend_from_slice(&c.counts);
        raw.extend_from_slice(&c.stamps);
        raw.extend_from_slice(&c.events);
        native::write_chunk(&self.name, &mut self.out, raw, n as u32, &mut self.comp)?;
        self.records += n as u64;
        self.chunks += 1;
        Ok(())
    }
}

/// Where full chunks go: written in this thread, or handed to a worker thread (which sends
/// the emptied buffers back for reuse).
enum Sink<W> {
    Inline(ChunkSink<W>),
    Worker {
        tx: std::sync::mpsc::SyncSender<ChunkBufs>,
        back: std::sync::mpsc::Receiver<ChunkBufs>,
        handle: std::thread::JoinHandle<Result<ChunkSink<W>>>,
    },
    /// Between states, and after a worker failed.
    Gone,
}

/// Writes a recorded (version-2) trace. Records are buffered into chunks of at most
/// [`CHUNK`] records; [`TraceWriter::finish`] writes the last chunk and the end marker.
/// [`RecordedWriter::with_worker`] moves compression and writing to a second thread.
pub struct RecordedWriter<W: Write = BufWriter<File>> {
    bufs: ChunkBufs,
    sink: Sink<W>,
    name: String,
    prev_stamp: u64,
    files: std::collections::HashSet<u32>,
    finished: bool,
}

impl RecordedWriter<BufWriter<File>> {
    /// Create (or truncate) `path` and write the header.
    pub fn create(path: &str, meta: TraceMeta) -> Result<Self> {
        let f = File::create(path).map_err(|e| Error::io(path, &e))?;
        Self::new(path, BufWriter::with_capacity(1 << 20, f), meta)
    }
}

impl<W: Write + Send + 'static> RecordedWriter<W> {
    /// Encode, compress and write chunks in a worker thread while the caller adds records
    /// (the recorder's converter: parsing and compressing then run on two cores). Output is
    /// byte-for-byte the same.
    pub fn with_worker(mut self) -> Result<Self> {
        let Sink::Inline(mut sink) = std::mem::replace(&mut self.sink, Sink::Gone) else {
            return Err(Error::config(
                "writer",
                "the trace writer already has a worker",
            ));
        };
        let (tx, rx) = std::sync::mpsc::sync_channel::<ChunkBufs>(2);
        let (back_tx, back) = std::sync::mpsc::channel::<ChunkBufs>();
        let handle = std::thread::Builder::new()
            .name("vmemsim-trace-writer".into())
            .spawn(move || {
                for mut c in rx {
                    sink.write_chunk(&c)?;
                    c.clear();
                    let _ = back_tx.send(c);
                }
                Ok(sink)
            })
            .map_err(|e| Error::io(&self.name, &e))?;
        self.sink = Sink::Worker { tx, back, handle };
        Ok(self)
    }
}

impl<W: Write> RecordedWriter<W> {
    /// Write the header of a recorded trace to `out`; `name` is used in error messages.
    pub fn new(name: &str, mut out: W, meta: TraceMeta) -> Result<Self> {
        native::write_header(name, &mut out, &meta, VERSION_RECORDED)?;
        Ok(RecordedWriter {
            bufs: ChunkBufs {
                pages: Vec::with_capacity(CHUNK),
                ..ChunkBufs::default()
            },
            sink: Sink::Inline(ChunkSink {
                name: name.to_string(),
                out,
                raw: Vec::new(),
                comp: Vec::new(),
                records: 0,
                chunks: 0,
            }),
            name: name.to_string(),
            prev_stamp: 0,
            files: Default::default(),
            finished: false,
        })
    }

    fn check_open(&self) -> Result<()> {
        if self.finished {
            return Err(Error::config("writer", "trace writer already finished"));
        }
        Ok(())
    }

    fn after_push(&mut self) -> Result<()> {
        if self.bufs.n() == CHUNK || self.bufs.events.len() >= EVENT_FLUSH {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Append an access record.
    pub fn access(&mut self, r: Recorded) -> Result<()> {
        self.check_open()?;
        if r.count == 0 {
            return Err(Error::config(
                "record",
                "an access record needs a count of at least 1",
            ));
        }
        if r.write && r.ifetch {
            return Err(Error::config(
                "record",
                "an access record cannot be both a write and an instruction fetch",
            ));
        }
        self.push_access(r.page, r.write, r.ifetch, r.tid, r.count, r.stamp)
    }

    /// [`Self::access`] for callers that guarantee `count >= 1` and not both `write` and
    /// `ifetch`, on an unfinished writer (the recorder's converter).
    #[inline]
    pub(crate) fn push_access(
        &mut self,
        page: u64,
        write: bool,
        ifetch: bool,
        tid: u32,
        count: u64,
        stamp: u64,
    ) -> Result<()> {
        debug_assert!(count >= 1 && !(write && ifetch) && !self.finished);
        let b = &mut self.bufs;
        b.pages.push(Access {
            page,
            write,
            gup: false,
        });
        put_varint(&mut b.threads, (tid as u64) << 1 | ifetch as u64);
        put_varint(&mut b.counts, count - 1);
        put_varint(
            &mut b.stamps,
            zigzag(stamp.wrapping_sub(self.prev_stamp) as i64),
        );
        self.prev_stamp = stamp;
        if b.n() >= CHUNK {
            self.flush_chunk()?;
        }
        Ok(())
    }

    /// Give file `id` its path (once per id; before the first I/O record naming it).
    pub fn file(&mut self, id: u32, path: &str) -> Result<()> {
        self.check_open()?;
        if path.len() > MAX_PATH {
            return Err(Error::config(
                "record",
                format!("a {}-byte path (at most {MAX_PATH})", path.len()),
            ));
        }
        if !self.files.insert(id) {
            return Err(Error::config(
                "record",
                format!("file id {id} is already in the file table"),
            ));
        }
        let b = &mut self.bufs;
        put_varint(&mut b.events, b.pages.len() as u64);
        put_varint(&mut b.events, 0);
        put_varint(&mut b.events, id as u64);
        put_varint(&mut b.events, path.len() as u64);
        b.events.extend_from_slice(path.as_bytes());
        b.n_ev += 1;
        self.after_push()
    }

    /// Append a file I/O record (its file must be in the table).
    pub fn io(&mut self, r: FileIo) -> Result<()> {
        self.check_open()?;
        if !self.files.contains(&r.file) {
            return Err(Error::config(
                "record",
                format!("file id {} is not in the file table", r.file),
            ));
        }
        let b = &mut self.bufs;
        put_varint(&mut b.events, b.pages.len() as u64);
        for v in [
            r.op as u64,
            r.tid as u64,
            r.stamp,
            r.file as u64,
            r.offset,
            r.len,
            r.addr,
        ] {
            put_varint(&mut b.events, v);
        }
        b.n_ev += 1;
        self.after_push()
    }

    /// The worker's result once it has stopped (it stops early only on an error).
    fn worker_error(&mut self) -> Error {
        match std::mem::replace(&mut self.sink, Sink::Gone) {
            Sink::Worker { handle, .. } => match handle.join() {
                Ok(Err(e)) => e,
                Ok(Ok(_)) => Error::config("writer", "the trace writer's worker stopped"),
                Err(_) => Error::config("writer", "the trace writer's worker panicked"),
            },
            _ => Error::config("writer", "the trace writer failed earlier"),
        }
    }

    fn flush_chunk(&mut self) -> Result<()> {
        if self.bufs.n() == 0 {
            return Ok(());
        }
        self.prev_stamp = 0;
        match &mut self.sink {
            Sink::Inline(sink) => {
                sink.write_chunk(&self.bufs)?;
                self.bufs.clear();
                Ok(())
            }
            Sink::Worker { tx, back, .. } => {
                let spare = back.try_recv().unwrap_or_else(|_| ChunkBufs {
                    pages: Vec::with_capacity(CHUNK),
                    ..ChunkBufs::default()
                });
                let full = std::mem::replace(&mut self.bufs, spare);
                if tx.send(full).is_err() {
                    return Err(self.worker_error());
                }
                Ok(())
            }
            Sink::Gone => Err(Error::config("writer", "the trace writer failed earlier")),
        }
    }

    /// Stop the worker (if any) and give back the chunk sink.
    fn join(&mut self) -> Result<&mut ChunkSink<W>> {
        if let Sink::Worker { .. } = self.sink {
            let Sink::Worker { tx, handle, .. } = std::mem::replace(&mut self.sink, Sink::Gone)
            else {
                unreachable!("matched above")
            };
            drop(tx);
            let sink = match handle.join() {
                Ok(r) => r?,
                Err(_) => {
                    return Err(Error::config(
                        "writer",
                        "the trace writer's worker panicked",
                    ))
                }
            };
            self.sink = Sink::Inline(sink);
        }
        match &mut self.sink {
            Sink::Inline(sink) => Ok(sink),
            _ => Err(Error::config("writer", "the trace writer failed earlier")),
        }
    }

    /// Finish (if not done yet) and give back the sink.
    pub fn into_inner(mut self) -> Result<W> {
        if !self.finished {
            TraceWriter::finish(&mut self)?;
        }
        match std::mem::replace(&mut self.sink, Sink::Gone) {
            Sink::Inline(sink) => Ok(sink.out),
            _ => Err(Error::config("writer", "trace writer has no sink")),
        }
    }
}

impl<W: Write> TraceWriter for RecordedWriter<W> {
    /// Plain accesses become records of thread 0, count 1, stamp 0.
    fn write(&mut self, accesses: &[Access]) -> Result<()> {
        for a in accesses {
            self.access(Recorded {
                page: a.page,
                write: a.write,
                count: 1,
                ..Recorded::default()
            })?;
        }
        Ok(())
    }

    /// Returns the number of records of every kind.
    fn finish(&mut self) -> Result<u64> {
        self.check_open()?;
        self.flush_chunk()?;
        let sink = self.join()?;
        native::write_trailer(&sink.name, &mut sink.out, sink.records, sink.chunks)?;
        let records = sink.records;
        self.finished = true;
        Ok(records)
    }
}

/// Reads a native trace of either version with every field: version-1 files read as access
/// records of thread 0, count 1, stamp 0, with no events.
pub struct RecordedReader {
    inner: NativeReader,
    files: BTreeMap<u32, String>,
    pages: Vec<Access>,
}

impl RecordedReader {
    pub fn open(path: &str) -> Result<Self> {
        Ok(Self::new(NativeReader::open(path)?))
    }

    /// Read from any byte stream; `path` names it in messages.
    pub fn from_reader(path: &str, rd: Box<dyn Read + Send>) -> Result<Self> {
        Ok(Self::new(NativeReader::from_reader(path, rd)?))
    }

    fn new(inner: NativeReader) -> Self {
        RecordedReader {
            inner,
            files: BTreeMap::new(),
            pages: Vec::new(),
        }
    }

    pub fn meta(&self) -> &TraceMeta {
        self.inner.meta()
    }

    /// 1 or 2.
    pub fn version(&self) -> u32 {
        self.inner.version()
    }

    pub fn path(&self) -> &str {
        self.inner.path()
    }

    /// The file table read so far (id → path).
    pub fn files(&self) -> &BTreeMap<u32, String> {
        &self.files
    }

    /// Clear `out` and fill it with the next chunk's records in file order; empty = the end.
    pub fn next_events(&mut self, out: &mut Vec<Event>) -> Result<()> {
        out.clear();
        while out.is_empty() {
            let Some(p) = self.inner.read_payload()? else {
                return Ok(());
            };
            let raw = self.inner.payload(&p);
            let r = if self.inner.version() == VERSION {
                self.pages.clear();
                native::decode_chunk(raw, p.raw_len, p.n, &mut self.pages).map(|()| {
                    out.extend(self.pages.iter().map(|a| {
                        Event::Access(Recorded {
                            page: a.page,
                            write: a.write,
                            count: 1,
                            ..Recorded::default()
                        })
                    }))
                })
            } else {
                decode_full(raw, p.raw_len, p.n, &mut self.files, &mut self.pages, out)
            };
            if let Err(msg) = r {
                out.clear();
                return Err(self.inner.chunk_err(p.at, msg));
            }
            self.inner.commit(&p);
        }
        Ok(())
    }

    /// Every record of the rest of the trace (for tests and small traces).
    pub fn collect(&mut self) -> Result<Vec<Event>> {
        let mut all = Vec::new();
        let mut buf = Vec::new();
        loop {
            self.next_events(&mut buf)?;
            if buf.is_empty() {
                return Ok(all);
            }
            all.append(&mut buf);
        }
    }
}

/// Scratch space of [`decode_with_io`], kept by the reader between chunks.
#[derive(Debug, Default)]
pub(crate) struct IoScratch {
    files: BTreeMap<u32, String>,
    pages: Vec<Access>,
    events: Vec<Event>,
}

/// Decode a v2 payload onto `buf` (the plain access stream, as [`decode_pages_only`] gives
/// it) and `io` (its file I/O records, each with the number of `buf`'s accesses before it).
/// A payload without events takes the pages-only path.
pub(crate) fn decode_with_io(
    raw: &[u8],
    raw_len: usize,
    n: usize,
    s: &mut IoScratch,
    buf: &mut Vec<Access>,
    io: &mut Vec<(u32, FileIo)>,
) -> std::result::Result<(), String> {
    let h = parse_head(raw, raw_len, n)?;
    if h.n_ev == 0 {
        return decode_pages_only(raw, raw_len, n, buf);
    }
    s.events.clear();
    decode_full(raw, raw_len, n, &mut s.files, &mut s.pages, &mut s.events)?;
    for e in s.events.drain(..) {
        match e {
            Event::Access(r) => buf.push(r.access()),
            Event::Io(x) => io.push((buf.len() as u32, x)),
            Event::File { .. } => {}
        }
    }
    Ok(())
}

/// The files of the recorded trace at `path` as a replay declares them
/// ([`crate::mm::FileSpec`]), in the order of their ids: every file of the file table, its
/// extent the end of the furthest byte a `read`, `write`, `pread64` or `pwrite64` record
/// touches, its size at the start (`i_size`) the end of the furthest byte read beyond what
/// the trace had written to the file before the read (a read returns only bytes the file
/// has: those were there from the start). `mmap` records change neither. A pass of its own
/// over the trace: chunks without events are decompressed but not decoded. Errors: those of
/// reading the trace, a record whose range ends past 2^64.
pub fn file_specs(path: &str) -> Result<Vec<crate::mm::FileSpec>> {
    let mut rd = NativeReader::open(path)?;
    // id → (initial size, bytes written so far reach, extent)
    let mut sizes: BTreeMap<u32, (u64, u64, u64)> = BTreeMap::new();
    let (mut files, mut pages, mut events) = (BTreeMap::new(), Vec::new(), Vec::new());
    while let Some(p) = rd.read_payload()? {
        let raw = rd.payload(&p);
        events.clear();
        let r = parse_head(raw, p.raw_len, p.n).and_then(|h| {
            if h.n_ev == 0 {
                Ok(())
            } else {
                decode_full(raw, p.raw_len, p.n, &mut files, &mut pages, &mut events)
            }
        });
        if let Err(msg) = r {
            return Err(rd.chunk_err(p.at, msg));
        }
        rd.commit(&p);
        for e in &events {
            match e {
                Event::File { id, .. } => {
                    sizes.entry(*id).or_default();
                }
                // (fadvise64's length may reach past 2^64, as the kernel allows: it names a
                // range, not bytes that exist)
                Event::Io(x) if matches!(x.op, FileOp::Fsync | FileOp::Fadvise) => {
                    sizes.entry(x.file).or_default();
                }
                Event::Io(x) => {
                    let end = x.offset.checked_add(x.len).ok_or_else(|| {
                        Error::trace(
                            path,
                            "",
                            format!(
                                "a {} record of file {} at offset {} of {} bytes ends past 2^64",
                                x.op.name(),
                                x.file,
                                x.offset,
                                x.len
                            ),
                        )
                    })?;
                    let (init, written, extent) = sizes.entry(x.file).or_default();
                    match x.op {
                        FileOp::Read | FileOp::Pread | FileOp::DirectRead => {
                            if end > *written {
                                *init = (*init).max(end);
                            }
                            *extent = (*extent).max(end);
                        }
                        FileOp::Write | FileOp::Pwrite | FileOp::DirectWrite => {
                            *written = (*written).max(end);
                            *extent = (*extent).max(end);
                        }
                        // The size is what it sets: bytes below it exist from here on.
                        FileOp::Ftruncate => {
                            *written = x.len;
                            *extent = (*extent).max(x.len);
                        }
                        // Gone: nothing of it is left for a later record to find.
                        FileOp::Unlink => *written = 0,
                        FileOp::Mmap | FileOp::Fsync | FileOp::Fadvise => {}
                    }
                }
                Event::Access(_) => {}
            }
        }
    }
    Ok(sizes
        .into_iter()
        .map(|(id, (initial_size, _, extent))| crate::mm::FileSpec {
            id,
            initial_size,
            extent,
        })
        .collect())
}

// `PAD` is part of the contract of `decode_pages_only` (the page stream is decoded in place).
const _: () = assert!(PAD == 8);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::collect;

    fn write_mem(events: &[Event]) -> Vec<u8> {
        let mut w = RecordedWriter::new("mem", Vec::new(), TraceMeta::default()).unwrap();
        for e in events {
            match e {
                Event::Access(r) => w.access(*r).unwrap(),
                Event::File { id, path } => w.file(*id, path).unwrap(),
                Event::Io(io) => w.io(*io).unwrap(),
            }
        }
        w.into_inner().unwrap()
    }

    fn reader(bytes: &[u8]) -> Result<RecordedReader> {
        RecordedReader::from_reader("r.vmt", Box::new(std::io::Cursor::new(bytes.to_vec())))
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<Event>> {
        reader(bytes)?.collect()
    }

    fn plain(bytes: &[u8]) -> Result<Vec<Access>> {
        let mut r =
            NativeReader::from_reader("r.vmt", Box::new(std::io::Cursor::new(bytes.to_vec())))?;
        collect(&mut r)
    }

    /// A mixed sequence: two threads, counts, stamps going back now and then, fetches, files
    /// and I/O in between, with a stretch of events alone, long enough for three chunks.
    fn sample() -> Vec<Event> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut v = vec![Event::File {
            id: 1,
            path: "/etc/hostname".into(),
        }];
        let mut stamp = 0u64;
        for i in 0..150_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            stamp = if i % 1000 == 7 {
                stamp.saturating_sub(5)
            } else {
                stamp + x % 50
            };
            let ifetch = i % 11 == 0;
            v.push(Event::Access(Recorded {
                page: if i % 3 == 0 { x } else { i / 4 },
                write: !ifetch && x & 4 != 0,
                ifetch,
                tid: 1 + (i / 5000 % 3) as u32,
                count: 1 + (x >> 40) % 300,
                stamp,
            }));
            if i % 9001 == 0 {
                v.push(Event::Io(FileIo {
                    op: FileOp::ALL[(i % 5) as usize],
                    tid: 1,
                    stamp,
                    file: 1,
                    offset: i * 4096,
                    len: x % 100_000,
                    addr: if i % 5 == 4 { 0x7f00_0000_0000 } else { 0 },
                }));
            }
            if i == 100_000 {
                // A run of events alone, longer than a chunk: a chunk without accesses.
                v.push(Event::File {
                    id: 7,
                    path: "données/ü.bin".into(),
                });
                for k in 0..70_000u64 {
                    v.push(Event::Io(FileIo {
                        op: FileOp::Pread,
                        tid: 2,
                        stamp,
                        file: 7,
                        offset: k,
                        len: 1,
                        addr: 0,
                    }));
                }
            }
        }
        v
    }

    #[test]
    fn round_trip_every_field() {
        let v = sample();
        let bytes = write_mem(&v);
        let mut r = reader(&bytes).unwrap();
        assert_eq!(r.version(), 2);
        assert_eq!(r.collect().unwrap(), v);
        assert_eq!(
            r.files()
                .iter()
                .map(|(k, v)| (*k, v.as_str()))
                .collect::<Vec<_>>(),
            vec![(1, "/etc/hostname"), (7, "données/ü.bin")]
        );
        // The plain path yields one access per access record, events skipped, even across the
        // chunk holding only events.
        let want: Vec<Access> = v
            .iter()
            .filter_map(|e| match e {
                Event::Access(r) => Some(r.access()),
                _ => None,
            })
            .collect();
        assert_eq!(plain(&bytes).unwrap(), want);
        assert_eq!(want.len(), 150_000);
    }

    #[test]
    fn worker_writes_the_same_bytes() {
        let v = sample();
        let inline = write_mem(&v);
        let mut w = RecordedWriter::new("mem", Vec::new(), TraceMeta::default())
            .unwrap()
            .with_worker()
            .unwrap();
        for e in &v {
            match e {
                Event::Access(r) => w.access(*r).unwrap(),
                Event::File { id, path } => w.file(*id, path).unwrap(),
                Event::Io(io) => w.io(*io).unwrap(),
            }
        }
        assert!(w.into_inner().unwrap() == inline);

        // A sink that fails: the worker's error comes back from a later call or finish.
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                if self.0 < b.len() {
                    return Err(std::io::Error::other("disk full"));
                }
                self.0 -= b.len();
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut w = RecordedWriter::new("full", Full(100_000), TraceMeta::default())
            .unwrap()
            .with_worker()
            .unwrap();
        let mut err = None;
        for e in &v {
            if let Event::Access(r) = e {
                if let Err(e) = w.access(*r) {
                    err = Some(e);
                    break;
                }
            }
        }
        let e = match err {
            Some(e) => e,
            None => TraceWriter::finish(&mut w).unwrap_err(),
        };
        assert_eq!(e.to_string(), "full: disk full");
    }

    #[test]
    fn payload_by_hand() {
        // One chunk: file 3 "/a", access page 1 (thread 1, count 2, stamp 5), a read of
        // file 3 (offset 4096, 10 bytes, stamp 6), a write to page 0 (thread 2, count 1,
        // stamp 4).
        let ev = vec![
            Event::File {
                id: 3,
                path: "/a".into(),
            },
            Event::Access(Recorded {
                page: 1,
                tid: 1,
                count: 2,
                stamp: 5,
                ..Default::default()
            }),
            Event::Io(FileIo {
                op: FileOp::Read,
                tid: 1,
                stamp: 6,
                file: 3,
                offset: 4096,
                len: 10,
                addr: 0,
            }),
            Event::Access(Recorded {
                page: 0,
                write: true,
                tid: 2,
                count: 1,
                stamp: 4,
                ..Default::default()
            }),
        ];
        let bytes = write_mem(&ev);
        let h = 16 + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize + 4;
        // Chunk header: 4 records; the payload LZ4-compressed when that is smaller.
        let comp_len = u32::from_le_bytes(bytes[h..h + 4].try_into().unwrap()) as usize;
        let raw_len = u32::from_le_bytes(bytes[h + 4..h + 8].try_into().unwrap()) as usize;
        assert_eq!(
            u32::from_le_bytes(bytes[h + 8..h + 12].try_into().unwrap()),
            4
        );
        let stored = &bytes[h + 16..h + 16 + comp_len];
        let payload = if comp_len < raw_len {
            lz4_flex::block::decompress(stored, raw_len).unwrap()
        } else {
            stored.to_vec()
        };
        #[rustfmt::skip]
        let want: Vec<u8> = [
            &[2u8, 0, 0, 0, 2, 0, 0, 0][..],   // n_acc 2, n_ev 2
            &[3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0], // stream lengths
            // pages: control nibbles 1,1; +1 read → zz 2 → v 4; -1 write → zz 1 → v 3
            &[0x11, 0x04, 0x03],
            &[2, 4],  // threads: 1<<1, 2<<1
            &[1, 0],  // counts - 1
            &[10, 1], // stamps: zigzag(+5) = 10, zigzag(-1) = 1
            // events: pos 0 kind 0 id 3 len 2 "/a"; pos 1 kind 1 tid 1 stamp 6 file 3
            // offset 4096 (LEB128 80 20) len 10 addr 0
            &[0, 0, 3, 2, b'/', b'a', 1, 1, 1, 6, 3, 0x80, 0x20, 10, 0],
        ]
        .concat();
        assert_eq!(payload, want);
        assert_eq!(read_all(&bytes).unwrap(), ev);
    }

    #[test]
    fn version_1_reads_as_records() {
        let v1 = vec![Access::read(4), Access::write(9)];
        let mut w = native::NativeWriter::new("v1", Vec::new(), TraceMeta::default()).unwrap();
        w.write(&v1).unwrap();
        let bytes = w.into_inner().unwrap();
        let mut r = reader(&bytes).unwrap();
        assert_eq!(r.version(), 1);
        let rec = |page, write| {
            Event::Access(Recorded {
                page,
                write,
                count: 1,
                ..Default::default()
            })
        };
        assert_eq!(r.collect().unwrap(), vec![rec(4, false), rec(9, true)]);
    }

    #[test]
    fn writer_refuses_bad_records() {
        let mut w = RecordedWriter::new("w", Vec::new(), TraceMeta::default()).unwrap();
        let e = w
            .access(Recorded {
                page: 1,
                count: 0,
                ..Default::default()
            })
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "record: an access record needs a count of at least 1"
        );
        let io = FileIo {
            op: FileOp::Write,
            tid: 1,
            stamp: 0,
            file: 9,
            offset: 0,
            len: 1,
            addr: 0,
        };
        assert_eq!(
            w.io(io).unwrap_err().to_string(),
            "record: file id 9 is not in the file table"
        );
        w.file(9, "/x").unwrap();
        assert_eq!(
            w.file(9, "/y").unwrap_err().to_string(),
            "record: file id 9 is already in the file table"
        );
        w.io(io).unwrap();
        TraceWriter::finish(&mut w).unwrap();
        assert!(w.access(Recorded::default()).is_err());
    }

    /// The bytes of a v2 file whose single chunk is `payload` stored raw with a valid CRC and
    /// `n` records, and the chunk's offset.
    fn with_payload(payload: &[u8], n: u32) -> (Vec<u8>, usize) {
        let mut bytes = write_mem(&[]);
        bytes.truncate(bytes.len() - 24);
        let at = bytes.len();
        let len = payload.len() as u32;
        for x in [len, len, n, crc32fast::hash(payload)] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        bytes.extend_from_slice(payload);
        // End marker counting the chunk.
        let mut t = vec![];
        t.extend_from_slice(&(n as u64).to_le_bytes());
        t.extend_from_slice(&1u64.to_le_bytes());
        let crc = crc32fast::hash(&t);
        bytes.extend_from_slice(&0xFFFF_FFFFu32.to_le_bytes());
        bytes.extend_from_slice(&t);
        bytes.extend_from_slice(&crc.to_le_bytes());
        (bytes, at)
    }

    fn head(n_acc: u32, n_ev: u32, lens: [u32; 4]) -> Vec<u8> {
        let mut v = vec![];
        for x in [n_acc, n_ev, lens[0], lens[1], lens[2], lens[3]] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v
    }

    #[test]
    fn corrupt_payloads_name_the_chunk() {
        let err = |payload: Vec<u8>, n: u32| {
            let (b, at) = with_payload(&payload, n);
            let e = read_all(&b).unwrap_err().to_string();
            let prefix = format!("r.vmt: byte {at} (chunk 0): ");
            assert!(e.starts_with(&prefix), "{e}");
            e[prefix.len()..].to_string()
        };
        // The counts do not add up to the chunk header's n.
        assert_eq!(
            err([head(1, 0, [2, 1, 1, 1]), vec![1, 2, 2, 0, 0]].concat(), 2),
            "corrupt chunk: 1 access records and 0 events do not make the header's 2"
        );
        // Stream lengths past the payload.
        assert_eq!(
            err([head(1, 0, [2, 1, 1, 9]), vec![1, 2, 2, 0, 0]].concat(), 1),
            "corrupt chunk: stream lengths add up to 37 bytes, past the 29-byte payload"
        );
        // An unknown event kind.
        assert_eq!(
            err([head(0, 1, [0, 0, 0, 0]), vec![0, 12]].concat(), 1),
            "corrupt chunk: unknown event kind 12 (valid: 0..=11)"
        );
        // An I/O record naming a file never defined.
        assert_eq!(
            err(
                [head(0, 1, [0, 0, 0, 0]), vec![0, 2, 1, 0, 4, 0, 0, 0]].concat(),
                1
            ),
            "corrupt chunk: a write record names file 4, not in the file table"
        );
        // A write that is also a fetch: page 1 write (v = 5), thread 1 | ifetch.
        assert_eq!(
            err([head(1, 0, [2, 1, 1, 1]), vec![1, 5, 3, 0, 0]].concat(), 1),
            "corrupt chunk: access record 0 is both a write and an instruction fetch"
        );
        // A leftover byte in the counts stream.
        assert_eq!(
            err(
                [head(1, 0, [2, 1, 2, 1]), vec![1, 4, 2, 0, 0, 0]].concat(),
                1
            ),
            "corrupt chunk: the counts stream has 1 bytes left over"
        );
        // A value cut short, and one longer than 64 bits.
        assert_eq!(
            err(
                [head(1, 0, [2, 1, 1, 1]), vec![1, 4, 0x82, 0, 0]].concat(),
                1
            ),
            "corrupt chunk: the threads stream ends inside a value"
        );
        let mut huge = vec![0xFF; 10];
        huge.push(0);
        assert_eq!(
            err(
                [head(1, 0, [2, 11, 1, 1]), vec![1, 4], huge, vec![0, 0]].concat(),
                1
            ),
            "corrupt chunk: a value in the threads stream exceeds 64 bits"
        );
        // An event placed after the last access record.
        assert_eq!(
            err(
                [
                    head(1, 1, [2, 1, 1, 1]),
                    vec![1, 4, 2, 0, 0],
                    vec![5, 0, 1, 0]
                ]
                .concat(),
                2
            ),
            "corrupt chunk: an event placed after access record 5 of 1"
        );
    }

    #[test]
    fn corrupt_file_names_byte_offset() {
        let bytes = write_mem(&sample()[..1000]);
        let h = 16 + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize + 4;
        let mut b = bytes.clone();
        b[h + 40] ^= 0x10;
        let e = read_all(&b).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "r.vmt: byte {h} (chunk 0): corrupt chunk: CRC32 mismatch"
            )),
            "{e}"
        );
        // The plain reader reports the same.
        assert_eq!(plain(&b).unwrap_err().to_string(), e);
        let cut = &bytes[..bytes.len() - 24];
        assert_eq!(
            read_all(cut).unwrap_err().to_string(),
            format!("r.vmt: byte {} (chunk 1): truncated: no end marker after 1 chunks (was the writer interrupted?)", bytes.len() - 24)
        );
        // A v2 chunk header cannot claim more than 64 MiB of payload.
        let mut b = bytes.clone();
        b[h + 4..h + 8].copy_from_slice(&(65u32 << 20).to_le_bytes());
        assert!(read_all(&b)
            .unwrap_err()
            .to_string()
            .contains("corrupt chunk header: 1"));
    }
}

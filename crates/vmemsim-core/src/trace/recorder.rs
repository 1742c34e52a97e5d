//! The recorder's intermediate stream: what the `vmrec` Valgrind tool
//! (`python/vmemsim/recorder/vmrec.c`) writes, and its conversion into a recorded trace
//! ([`super::recorded`]).
//!
//! The tool runs inside the recorded program's process with no C library, so it writes the
//! simplest thing that is cheap to produce: fixed 8-byte words in 1 MiB `write()`s to a pipe
//! (a FIFO made by `vmemsim trace record`); this side reads the pipe while the program runs
//! (on another core) and writes the compressed, checked v2 trace. Nothing is stored twice.
//!
//! # Layout (little-endian u64 words)
//!
//! ```text
//! header   "VMRECRAW" (8 bytes), version (1), page_size, flags (bit 0: instruction fetches)
//! record   w0 = kind | thread << 8 | x << 32 (kind 8 bits, thread 24 bits, x 32 bits),
//!          then words by kind:
//!   kind 1 / 2 / 3  a read / write / fetch run: x = count; stamp, page
//!   kind 4          file I/O: x = op (1..=5 as in FileOp); stamp, file, offset, len, addr
//!   kind 5          file-table entry: x = path length; file id, then the path padded with
//!                   zero bytes to whole words
//!   kind 6          end: x = 0; access records sent, I/O records sent (checked here)
//! ```
//!
//! A stream that ends without its end record (the program was killed, the tool crashed) is an
//! error naming the byte offset; the trace written so far is still finished, so what was
//! recorded stays readable, and the error says it is incomplete.

use std::io::{Read, Write};

use super::recorded::{FileIo, FileOp, Recorded, RecordedWriter};
use super::TraceWriter;
use crate::error::{Error, Result};

/// First eight bytes of the intermediate stream.
pub const RAW_MAGIC: &[u8; 8] = b"VMRECRAW";
pub const RAW_VERSION: u64 = 1;

/// What a conversion saw.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecordStats {
    /// Access records (runs) written.
    pub records: u64,
    /// Accesses they fold (the sum of counts).
    pub accesses: u64,
    pub reads: u64,
    pub writes: u64,
    pub ifetches: u64,
    pub io_records: u64,
    pub files: u64,
    /// Distinct thread ids seen.
    pub threads: u64,
    /// Largest stamp seen (guest instructions).
    pub instructions: u64,
    /// Bytes of the intermediate stream.
    pub raw_bytes: u64,
    /// The stream ended with its end record (false: the program or tool died first).
    pub complete: bool,
}

/// The header of an intermediate stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawHeader {
    pub page_size: u64,
    pub ifetch: bool,
}

/// The stream as words, read in large blocks (a pipe gives at most its buffer per read).
struct Words<R: Read> {
    rd: R,
    name: String,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
}

impl<R: Read> Words<R> {
    fn new(rd: R, name: &str) -> Self {
        Words {
            rd,
            name: name.to_string(),
            buf: vec![0; 1 << 22],
            pos: 0,
            len: 0,
            base: 0,
            eof: false,
        }
    }

    /// Stream offset of the next unread byte.
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn err(&self, at: u64, msg: impl Into<String>) -> Error {
        Error::trace(&self.name, format!("byte {at}"), msg)
    }

    /// Move the unread bytes to the front and read until a word is there or the stream ends.
    #[cold]
    fn refill(&mut self) -> Result<()> {
        self.buf.copy_within(self.pos..self.len, 0);
        self.base += self.pos as u64;
        self.len -= self.pos;
        self.pos = 0;
        while self.len < 8 && !self.eof {
            match self.rd.read(&mut self.buf[self.len..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.err(self.base + self.len as u64, e.to_string())),
            }
        }
        Ok(())
    }

    /// The next word; `None` at a clean end of stream (on a word boundary).
    #[inline]
    fn next(&mut self) -> Result<Option<u64>> {
        if self.len - self.pos < 8 {
            self.refill()?;
            match self.len - self.pos {
                0 => return Ok(None),
                1..=7 => {
                    return Err(self.err(self.offset(), "truncated: the stream ends inside a word"))
                }
                _ => {}
            }
        }
        let b: [u8; 8] = self.buf[self.pos..self.pos + 8]
            .try_into()
            .unwrap_or_default();
        self.pos += 8;
        Ok(Some(u64::from_le_bytes(b)))
    }

    /// The next three words when the buffer holds them (no refill), without consuming them.
    #[inline]
    fn peek3(&self) -> Option<[u64; 3]> {
        let s = self.buf[..self.len].get(self.pos..self.pos + 24)?;
        let w = |i: usize| u64::from_le_bytes(s[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        Some([w(0), w(1), w(2)])
    }

    #[inline]
    fn need(&mut self, at: u64) -> Result<u64> {
        self.next()?
            .ok_or_else(|| self.err(at, "truncated: the stream ends inside a record"))
    }
}

/// Open the recorder's FIFO (or a file) for [`convert_stream`]; on Linux a pipe's buffer is
/// raised to 1 MiB (the tool's block size) so that a block moves in one read.
pub fn open_stream(path: &str) -> Result<std::fs::File> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, &e))?;
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::io::AsRawFd;
        // Best effort: F_SETPIPE_SZ fails on regular files and above the system's limit.
        // SAFETY: fcntl on a descriptor this function owns, with an integer argument.
        unsafe {
            libc::fcntl(f.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20);
        }
    }
    Ok(f)
}

fn add_kinds(st: &mut RecordStats, by_kind: &[u64; 4]) {
    st.reads += by_kind[1];
    st.writes += by_kind[2];
    st.ifetches += by_kind[3];
    st.accesses += by_kind[1] + by_kind[2] + by_kind[3];
}

/// Read the header of an intermediate stream.
fn read_header<R: Read>(w: &mut Words<R>) -> Result<RawHeader> {
    let magic = w.next()?.map(u64::to_le_bytes);
    if magic.as_ref() != Some(RAW_MAGIC) {
        return Err(w.err(0, "not a vmrec recorder stream (wrong magic bytes)"));
    }
    let version = w.need(8)?;
    if version != RAW_VERSION {
        return Err(w.err(
            8,
            format!("recorder stream version {version} is not supported (this build reads {RAW_VERSION})"),
        ));
    }
    let page_size = w.need(16)?;
    super::page_shift(page_size)
        .map_err(|_| w.err(16, format!("page size {page_size} is not a power of two")))?;
    let flags = w.need(24)?;
    Ok(RawHeader {
        page_size,
        ifetch: flags & 1 != 0,
    })
}

/// Read the header of the stream `rd` (named `name` in messages) and give it to `make`,
/// which creates the writer (so the trace's header can carry the page size); then convert
/// every record. Stops at the end record; a stream cut short still finishes the trace and
/// returns stats with `complete: false`, and an error only for malformed data.
pub fn convert_stream<R: Read, W: Write>(
    rd: R,
    name: &str,
    make: impl FnOnce(RawHeader) -> Result<RecordedWriter<W>>,
) -> Result<(RecordStats, RecordedWriter<W>)> {
    let mut w = Words::new(rd, name);
    let head = read_header(&mut w)?;
    let mut out = make(head)?;
    let mut st = RecordStats::default();
    let mut tids = std::collections::HashSet::new();
    let mut last_tid = u32::MAX;
    // Accesses by kind (1 read, 2 write, 3 fetch) on the fast path.
    let mut by_kind = [0u64; 4];
    let mut path_buf = Vec::new();
    let bad = |out: &mut RecordedWriter<W>, e: Error| -> Error {
        // Keep what was recorded readable before reporting.
        let _ = out.finish();
        e
    };
    loop {
        // Fast path: access records already in the buffer (almost all of a stream).
        while let Some([w0, stamp, page]) = w.peek3() {
            let kind = w0 & 0xFF;
            let x = w0 >> 32;
            if !(1..=3).contains(&kind) || x == 0 {
                break;
            }
            w.pos += 24;
            let tid = ((w0 >> 8) & 0xFF_FFFF) as u32;
            if tid != last_tid {
                last_tid = tid;
                if tids.insert(tid) {
                    st.threads += 1;
                }
            }
            st.records += 1;
            by_kind[kind as usize] += x;
            st.instructions = st.instructions.max(stamp);
            out.push_access(page, kind == 2, kind == 3, tid, x, stamp)?;
        }
        let at = w.offset();
        let Some(w0) = w.next()? else {
            out.finish()?;
            st.raw_bytes = w.offset();
            add_kinds(&mut st, &by_kind);
            return Ok((st, out));
        };
        let kind = w0 & 0xFF;
        let tid = ((w0 >> 8) & 0xFF_FFFF) as u32;
        let x = w0 >> 32;
        match kind {
            1..=3 => {
                let stamp = w.need(at)?;
                let page = w.need(at)?;
                if x == 0 {
                    return Err(bad(
                        &mut out,
                        w.err(at, "corrupt record: an access run of count 0"),
                    ));
                }
                if tid != last_tid {
                    last_tid = tid;
                    if tids.insert(tid) {
                        st.threads += 1;
                    }
                }
                st.records += 1;
                st.accesses += x;
                match kind {
                    1 => st.reads += x,
                    2 => st.writes += x,
                    _ => st.ifetches += x,
                }
                st.instructions = st.instructions.max(stamp);
                out.access(Recorded {
                    page,
                    write: kind == 2,
                    ifetch: kind == 3,
                    tid,
                    count: x,
                    stamp,
                })?;
            }
            4 => {
                let mut f = [0u64; 5];
                for v in f.iter_mut() {
                    *v = w.need(at)?;
                }
                let Some(op) = FileOp::from_code(x) else {
                    return Err(bad(
                        &mut out,
                        w.err(at, format!("corrupt record: unknown file operation {x}")),
                    ));
                };
                let file = u32::try_from(f[1]).unwrap_or(u32::MAX);
                st.io_records += 1;
                st.instructions = st.instructions.max(f[0]);
                out.io(FileIo {
                    op,
                    tid,
                    stamp: f[0],
                    file,
                    offset: f[2],
                    len: f[3],
                    addr: f[4],
                })
                .map_err(|e| bad(&mut out, w.err(at, format!("corrupt record: {e}"))))?;
            }
            5 => {
                let id = w.need(at)?;
                if x > super::recorded::MAX_PATH as u64 {
                    return Err(bad(
                        &mut out,
                        w.err(at, format!("corrupt record: a {x}-byte path")),
                    ));
                }
                path_buf.clear();
                for _ in 0..x.div_ceil(8) {
                    path_buf.extend_from_slice(&w.need(at)?.to_le_bytes());
                }
                path_buf.truncate(x as usize);
                let path = String::from_utf8_lossy(&path_buf).into_owned();
                st.files += 1;
                out.file(u32::try_from(id).unwrap_or(u32::MAX), &path)
                    .map_err(|e| bad(&mut out, w.err(at, format!("corrupt record: {e}"))))?;
            }
            6 => {
                let records = w.need(at)?;
                let io = w.need(at)?;
                if records != st.records || io != st.io_records {
                    return Err(bad(&mut out, w.err(
                        at,
                        format!(
                            "corrupt end record: the tool sent {records} access and {io} I/O records, {} and {} arrived",
                            st.records, st.io_records
                        ),
                    )));
                }
                if w.next()?.is_some() {
                    return Err(bad(
                        &mut out,
                        w.err(w.offset() - 8, "unexpected words after the end record"),
                    ));
                }
                st.complete = true;
                st.raw_bytes = w.offset();
                add_kinds(&mut st, &by_kind);
                out.finish()?;
                return Ok((st, out));
            }
            _ => {
                return Err(bad(
                    &mut out,
                    w.err(at, format!("corrupt record: unknown kind {kind}")),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::recorded::{Event, RecordedReader};
    use crate::trace::TraceMeta;

    fn stream(words: &[u64]) -> Vec<u8> {
        let mut b = RAW_MAGIC.to_vec();
        for w in [RAW_VERSION, 4096, 0].iter().chain(words) {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b
    }

    fn w0(kind: u64, tid: u64, x: u64) -> u64 {
        kind | tid << 8 | x << 32
    }

    fn convert(raw: &[u8]) -> Result<(RecordStats, Vec<Event>)> {
        let (st, w) = convert_stream(raw, "raw", |h| {
            assert_eq!(h.page_size, 4096);
            RecordedWriter::new("out", Vec::new(), TraceMeta::default())
        })?;
        let bytes = w.into_inner()?;
        let ev =
            RecordedReader::from_reader("out", Box::new(std::io::Cursor::new(bytes)))?.collect()?;
        Ok((st, ev))
    }

    #[test]
    fn converts_every_kind() {
        let path = b"/tmp/f.dat\0\0\0\0\0\0";
        let mut words = vec![
            w0(1, 1, 3),
            10,
            0x5000, // 3 reads of page 0x5000 by thread 1 at stamp 10
            w0(5, 1, 10),
            2, // file 2 = "/tmp/f.dat"
        ];
        words.push(u64::from_le_bytes(path[0..8].try_into().unwrap()));
        words.push(u64::from_le_bytes(path[8..16].try_into().unwrap()));
        words.extend([
            w0(4, 1, 3),
            20,
            2,
            8192,
            4096,
            0, // pread64 of 4096 bytes at 8192
            w0(2, 2, 1),
            25,
            0x5001, // a write by thread 2
            w0(3, 2, 7),
            26,
            0x400, // 7 fetches
            w0(6, 0, 0),
            3,
            1,
        ]);
        let (st, ev) = convert(&stream(&words)).unwrap();
        assert_eq!(
            st,
            RecordStats {
                records: 3,
                accesses: 11,
                reads: 3,
                writes: 1,
                ifetches: 7,
                io_records: 1,
                files: 1,
                threads: 2,
                instructions: 26,
                raw_bytes: 32 + 8 * words.len() as u64,
                complete: true,
            }
        );
        assert_eq!(
            ev,
            vec![
                Event::Access(Recorded {
                    page: 0x5000,
                    tid: 1,
                    count: 3,
                    stamp: 10,
                    ..Default::default()
                }),
                Event::File {
                    id: 2,
                    path: "/tmp/f.dat".into()
                },
                Event::Io(FileIo {
                    op: FileOp::Pread,
                    tid: 1,
                    stamp: 20,
                    file: 2,
                    offset: 8192,
                    len: 4096,
                    addr: 0
                }),
                Event::Access(Recorded {
                    page: 0x5001,
                    write: true,
                    tid: 2,
                    count: 1,
                    stamp: 25,
                    ..Default::default()
                }),
                Event::Access(Recorded {
                    page: 0x400,
                    ifetch: true,
                    tid: 2,
                    count: 7,
                    stamp: 26,
                    ..Default::default()
                }),
            ]
        );
    }

    #[test]
    fn cut_short_keeps_what_was_recorded() {
        let (st, ev) = convert(&stream(&[w0(1, 1, 1), 0, 9])).unwrap();
        assert!(!st.complete);
        assert_eq!(ev.len(), 1);
        // Cut inside a record, and inside a word: errors naming the byte offset.
        let e = convert(&stream(&[w0(1, 1, 1), 0])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "raw: byte 32: truncated: the stream ends inside a record"
        );
        let mut b = stream(&[w0(1, 1, 1), 0, 9]);
        b.pop();
        assert_eq!(
            convert(&b).unwrap_err().to_string(),
            "raw: byte 48: truncated: the stream ends inside a word"
        );
    }

    #[test]
    fn malformed_streams_are_errors() {
        let e = |words: &[u64]| convert(&stream(words)).unwrap_err().to_string();
        assert_eq!(
            e(&[w0(9, 1, 1)]),
            "raw: byte 32: corrupt record: unknown kind 9"
        );
        assert_eq!(
            e(&[w0(1, 1, 1), 0, 0, w0(1, 1, 0), 0, 0]),
            "raw: byte 56: corrupt record: an access run of count 0"
        );
        assert_eq!(
            e(&[w0(4, 1, 1), 0, 3, 0, 1, 0]),
            "raw: byte 32: corrupt record: record: file id 3 is not in the file table"
        );
        assert_eq!(
            e(&[w0(6, 0, 0), 1, 0]),
            "raw: byte 32: corrupt end record: the tool sent 1 access and 0 I/O records, 0 and 0 arrived"
        );
        assert_eq!(
            convert(b"VMRECRAX").unwrap_err().to_string(),
            "raw: byte 0: not a vmrec recorder stream (wrong magic bytes)"
        );
        let mut b = stream(&[]);
        b[8] = 2;
        assert_eq!(
            convert(&b).unwrap_err().to_string(),
            "raw: byte 8: recorder stream version 2 is not supported (this build reads 1)"
        );
    }
}

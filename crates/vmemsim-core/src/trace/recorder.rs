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
//! header   "VMRECRAW" (8 bytes), version (2), page_size, flags (bit 0: instruction fetches)
//! record   w0 = kind | thread << 8 | x << 32 (kind 8 bits, thread 24 bits, x 32 bits),
//!          then words by kind:
//!   kind 1 / 2 / 3  a read / write / fetch run: x = count; stamp, page
//!   kind 4          file I/O: x = op (1..=11 as in FileOp); stamp, file, offset, len, addr
//!   kind 5          file-table entry: x = path length; file id, then the path padded with
//!                   zero bytes to whole words
//!   kind 6          end of a process's records: x = 0; access records sent, I/O records sent
//!                   since its start (checked here)
//!   kind 7          process: x = flags (bit 0: start); pid, parent pid
//! ```
//!
//! # Processes
//!
//! Every block the tool writes (up to 1 MiB, under an exclusive `flock` on the stream, so
//! blocks of different processes never interleave) starts with a process record; the records
//! after it, up to the next process record, are that process's. A process's first block has
//! the start flag. A forked child (Valgrind runs the same tool instance on in it) reopens
//! the stream and starts with its own start record, with its own thread numbers (1 = the
//! forking thread) and end record, and inherits its parent's file ids; the parent flushes
//! its buffer before the fork, so nothing is sent twice. A program exec'd under Valgrind's
//! `--trace-children=yes` is a fresh tool instance: its first block repeats the stream header
//! (checked equal to the first), then starts its process (same pid; the pre-exec instance
//! sent its end record before `execve`, and starts again if `execve` fails).
//!
//! The trace's thread ids ([`TID_DOC`]): a thread of the recorded command's process (the
//! first process of the stream) keeps its thread number as tid, so a single-process
//! recording reads as before; a thread of any other process with pid P gets P × 1000 + its
//! thread number (the pre-exec and exec'd instances of one pid share tids, as they share the
//! kernel thread); a tid already taken, or a thread number past 999, gets the next tid from
//! [`FALLBACK_TID`] up. File ids, per process in the stream, are numbered anew in the trace
//! in order of their file-table entries (one file opened by two processes after a fork can
//! have two ids, with the same path).
//!
//! The stream ends when every process has closed it; it is complete when every process that
//! started sent its end record. A stream cut short (a program killed, the tool crashed)
//! still gives a finished trace of what was recorded, with `complete: false`; a process
//! killed in the middle of writing a block leaves a corrupt stream (an error naming the byte
//! offset, after finishing the trace so far).

use std::collections::HashMap;
use std::io::{Read, Write};

use super::recorded::{FileIo, FileOp, Recorded, RecordedWriter};
use super::TraceWriter;
use crate::error::{Error, Result};

/// First eight bytes of the intermediate stream.
pub const RAW_MAGIC: &[u8; 8] = b"VMRECRAW";
pub const RAW_VERSION: u64 = 2;
/// Kind of the process record that starts every block.
const K_PROC: u64 = 7;

/// One recorded process as the converter follows it: a run of blocks from one tool instance
/// between its start and its end record.
struct Proc {
    pid: u32,
    /// Between the start and the end record.
    live: bool,
    /// Access and I/O records received since the start (checked against the end record).
    acc: u64,
    io: u64,
    /// The tool's file ids in this process → the trace's.
    files: HashMap<u32, u32>,
}

/// First trace tid handed out when a process's preferred tid ([`TID_DOC`]) is taken or past
/// 32 bits (above `pid_max` (2^22) × 1000).
pub const FALLBACK_TID: u32 = 4_200_000_000;

/// How the trace's thread ids are made (also written into the trace's header as `tid`).
pub const TID_DOC: &str = "the thread number (1 = main thread, then in order of first run) in the \
recorded command's process; pid * 1000 + thread number in any other process (forked or exec'd \
child); from 4200000000 up where that is taken or the number passes 999";

/// Maps (process, the tool's thread number) to the trace's thread ids ([`TID_DOC`]).
#[derive(Default)]
struct Tids {
    root: Option<u32>,
    of: HashMap<(u32, u32), u32>,
    taken: std::collections::HashSet<u32>,
    next_fallback: u32,
}

impl Tids {
    fn get(&mut self, pid: u32, t: u32) -> u32 {
        if let Some(&tid) = self.of.get(&(pid, t)) {
            return tid;
        }
        let want = if self.root == Some(pid) {
            Some(t)
        } else if t < 1000 {
            u32::try_from(pid as u64 * 1000 + t as u64).ok()
        } else {
            None
        };
        let tid = match want {
            Some(x) if x < FALLBACK_TID && !self.taken.contains(&x) => x,
            _ => {
                let mut x = self.next_fallback.max(FALLBACK_TID);
                while self.taken.contains(&x) {
                    x = x.wrapping_add(1).max(FALLBACK_TID);
                }
                self.next_fallback = x.wrapping_add(1);
                x
            }
        };
        self.taken.insert(tid);
        self.of.insert((pid, t), tid);
        tid
    }
}

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
    /// Distinct processes (pids) recorded: the command's, forked children (an exec'd program
    /// is the same process).
    pub processes: u64,
    /// Largest stamp seen (guest instructions).
    pub instructions: u64,
    /// Bytes of the intermediate stream.
    pub raw_bytes: u64,
    /// Every process's records ended with its end record (false: a program or the tool died
    /// first).
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
    read_header_rest(w, 0)
}

/// The header's words after its magic bytes (which were at byte `at`).
fn read_header_rest<R: Read>(w: &mut Words<R>, at: u64) -> Result<RawHeader> {
    let version = w.need(at + 8)?;
    if version != RAW_VERSION {
        return Err(w.err(
            at + 8,
            format!("recorder stream version {version} is not supported (this build reads {RAW_VERSION})"),
        ));
    }
    let page_size = w.need(at + 16)?;
    super::page_shift(page_size).map_err(|_| {
        w.err(
            at + 16,
            format!("page size {page_size} is not a power of two"),
        )
    })?;
    let flags = w.need(at + 24)?;
    Ok(RawHeader {
        page_size,
        ifetch: flags & 1 != 0,
    })
}

/// Read the header of the stream `rd` (named `name` in messages) and give it to `make`,
/// which creates the writer (so the trace's header can carry the page size); then convert
/// every record of every process until the stream ends (every writer closed it). A stream
/// cut short still finishes the trace and returns stats with `complete: false`, and an error
/// only for malformed data.
pub fn convert_stream<R: Read, W: Write>(
    rd: R,
    name: &str,
    make: impl FnOnce(RawHeader) -> Result<RecordedWriter<W>>,
) -> Result<(RecordStats, RecordedWriter<W>)> {
    let mut w = Words::new(rd, name);
    let head = read_header(&mut w)?;
    let mut out = make(head)?;
    let mut st = RecordStats::default();
    let mut tids = Tids::default();
    let mut procs: Vec<Proc> = Vec::new();
    // The latest instance of each pid (an exec'd program follows its pre-exec instance).
    let mut by_pid: HashMap<u32, usize> = HashMap::new();
    // The process whose block is being read.
    let mut cur: Option<usize> = None;
    let mut next_file = 1u32;
    // The last raw thread number seen in this block and its trace tid.
    let (mut last_raw, mut last_tid) = (u32::MAX, 0u32);
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
        if let Some(ci) = cur {
            let pid = procs[ci].pid;
            while let Some([w0, stamp, page]) = w.peek3() {
                let kind = w0 & 0xFF;
                let x = w0 >> 32;
                if !(1..=3).contains(&kind) || x == 0 {
                    break;
                }
                w.pos += 24;
                let raw = ((w0 >> 8) & 0xFF_FFFF) as u32;
                if raw != last_raw {
                    last_raw = raw;
                    last_tid = tids.get(pid, raw);
                }
                st.records += 1;
                procs[ci].acc += 1;
                by_kind[kind as usize] += x;
                st.instructions = st.instructions.max(stamp);
                out.push_access(page, kind == 2, kind == 3, last_tid, x, stamp)?;
            }
        }
        let at = w.offset();
        let Some(w0) = w.next()? else {
            out.finish()?;
            st.raw_bytes = w.offset();
            st.threads = tids.of.len() as u64;
            st.processes = by_pid.len() as u64;
            st.complete = !procs.is_empty() && procs.iter().all(|p| !p.live);
            add_kinds(&mut st, &by_kind);
            return Ok((st, out));
        };
        let kind = w0 & 0xFF;
        let raw_tid = ((w0 >> 8) & 0xFF_FFFF) as u32;
        let x = w0 >> 32;
        if w0.to_le_bytes() == *RAW_MAGIC {
            // A program exec'd under --trace-children: a new tool instance, same stream.
            let h = read_header_rest(&mut w, at).map_err(|e| bad(&mut out, e))?;
            if h != head {
                return Err(bad(
                    &mut out,
                    w.err(
                        at,
                        "a child's stream header differs from the first (page size or fetches)",
                    ),
                ));
            }
            continue;
        }
        if kind == K_PROC {
            let pid = w.need(at)?;
            let ppid = w.need(at)?;
            let (Ok(pid), Ok(ppid)) = (u32::try_from(pid), u32::try_from(ppid)) else {
                return Err(bad(
                    &mut out,
                    w.err(at, "corrupt record: a process id past 32 bits"),
                ));
            };
            last_raw = u32::MAX;
            let live = by_pid.get(&pid).copied().filter(|&i| procs[i].live);
            if x & 1 == 1 {
                if live.is_some() {
                    return Err(bad(
                        &mut out,
                        w.err(at, format!("corrupt record: process {pid} starts twice")),
                    ));
                }
                tids.root.get_or_insert(pid);
                // A forked child inherits its parent's open files (and their ids).
                let files = by_pid
                    .get(&ppid)
                    .map(|&i| procs[i].files.clone())
                    .unwrap_or_default();
                by_pid.insert(pid, procs.len());
                cur = Some(procs.len());
                procs.push(Proc {
                    pid,
                    live: true,
                    acc: 0,
                    io: 0,
                    files,
                });
            } else {
                let Some(i) = live else {
                    return Err(bad(
                        &mut out,
                        w.err(
                            at,
                            format!(
                                "corrupt record: records of process {pid}, which has not started"
                            ),
                        ),
                    ));
                };
                cur = Some(i);
            }
            continue;
        }
        let Some(ci) = cur else {
            return Err(bad(
                &mut out,
                w.err(
                    at,
                    format!("corrupt record: a record of kind {kind} outside any process's block"),
                ),
            ));
        };
        let pid = procs[ci].pid;
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
                if raw_tid != last_raw {
                    last_raw = raw_tid;
                    last_tid = tids.get(pid, raw_tid);
                }
                st.records += 1;
                procs[ci].acc += 1;
                by_kind[kind as usize] += x;
                st.instructions = st.instructions.max(stamp);
                out.access(Recorded {
                    page,
                    write: kind == 2,
                    ifetch: kind == 3,
                    tid: last_tid,
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
                let raw_file = u32::try_from(f[1]).unwrap_or(u32::MAX);
                let Some(&file) = procs[ci].files.get(&raw_file) else {
                    return Err(bad(
                        &mut out,
                        w.err(at, format!("corrupt record: file id {raw_file} is not in process {pid}'s file table")),
                    ));
                };
                st.io_records += 1;
                procs[ci].io += 1;
                st.instructions = st.instructions.max(f[0]);
                out.io(FileIo {
                    op,
                    tid: tids.get(pid, raw_tid),
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
                let Ok(id) = u32::try_from(id) else {
                    return Err(bad(
                        &mut out,
                        w.err(at, format!("corrupt record: file id {id} past 32 bits")),
                    ));
                };
                // Ids are the tool's per process (a child numbers files opened after a fork
                // on from its parent's count): the trace numbers every entry anew.
                let file = next_file;
                next_file = next_file.wrapping_add(1);
                procs[ci].files.insert(id, file);
                st.files += 1;
                out.file(file, &path)
                    .map_err(|e| bad(&mut out, w.err(at, format!("corrupt record: {e}"))))?;
            }
            6 => {
                let records = w.need(at)?;
                let io = w.need(at)?;
                let p = &mut procs[ci];
                if records != p.acc || io != p.io {
                    let (acc, pio) = (p.acc, p.io);
                    return Err(bad(&mut out, w.err(
                        at,
                        format!(
                            "corrupt end record: process {pid} sent {records} access and {io} I/O records, {acc} and {pio} arrived"
                        ),
                    )));
                }
                p.live = false;
                cur = None;
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

    /// A stream header, then the start of process 100 (parent 1), then `words`.
    fn stream(words: &[u64]) -> Vec<u8> {
        raw(&[&[PROC_START, 100, 1], words].concat())
    }

    /// A stream header then `words`.
    fn raw(words: &[u64]) -> Vec<u8> {
        let mut b = RAW_MAGIC.to_vec();
        for w in [RAW_VERSION, 4096, 0].iter().chain(words) {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b
    }

    const PROC_START: u64 = K_PROC | 1 << 32;
    const PROC_MORE: u64 = K_PROC;

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
                processes: 1,
                instructions: 26,
                raw_bytes: 56 + 8 * words.len() as u64,
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
                // The tool's id 2 is the trace's first file-table entry: id 1.
                Event::File {
                    id: 1,
                    path: "/tmp/f.dat".into()
                },
                Event::Io(FileIo {
                    op: FileOp::Pread,
                    tid: 1,
                    stamp: 20,
                    file: 1,
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
            "raw: byte 56: truncated: the stream ends inside a record"
        );
        let mut b = stream(&[w0(1, 1, 1), 0, 9]);
        b.pop();
        assert_eq!(
            convert(&b).unwrap_err().to_string(),
            "raw: byte 72: truncated: the stream ends inside a word"
        );
    }

    #[test]
    fn malformed_streams_are_errors() {
        let e = |words: &[u64]| convert(&stream(words)).unwrap_err().to_string();
        assert_eq!(
            e(&[w0(9, 1, 1)]),
            "raw: byte 56: corrupt record: unknown kind 9"
        );
        assert_eq!(
            e(&[w0(1, 1, 1), 0, 0, w0(1, 1, 0), 0, 0]),
            "raw: byte 80: corrupt record: an access run of count 0"
        );
        assert_eq!(
            e(&[w0(4, 1, 1), 0, 3, 0, 1, 0]),
            "raw: byte 56: corrupt record: file id 3 is not in process 100's file table"
        );
        assert_eq!(
            e(&[w0(6, 0, 0), 1, 0]),
            "raw: byte 56: corrupt end record: process 100 sent 1 access and 0 I/O records, 0 and 0 arrived"
        );
        assert_eq!(
            convert(b"VMRECRAX").unwrap_err().to_string(),
            "raw: byte 0: not a vmrec recorder stream (wrong magic bytes)"
        );
        let mut b = stream(&[]);
        b[8] = 3;
        assert_eq!(
            convert(&b).unwrap_err().to_string(),
            "raw: byte 8: recorder stream version 3 is not supported (this build reads 2)"
        );
    }

    /// A forked child's blocks between its parent's: per-process thread numbers, file ids
    /// and end records; tids as TID_DOC says.
    #[test]
    fn processes_get_their_own_tids_and_files() {
        let pa = b"/a\0\0\0\0\0\0";
        let pb = b"/b\0\0\0\0\0\0";
        let word = |p: &[u8; 8]| u64::from_le_bytes(*p);
        let words = [
            PROC_START,
            100,
            1,
            w0(1, 1, 2),
            5,
            0x10, // root thread 1: tid 1
            w0(5, 1, 2),
            1,
            word(pa), // root's file 1 = /a
            PROC_START,
            4242,
            100, // forked child 4242
            w0(2, 1, 1),
            9,
            0x20, // child thread 1: tid 4242001
            w0(4, 1, 1),
            9,
            1,
            0,
            10,
            0, // child reads its inherited file 1 (/a)
            w0(5, 1, 2),
            2,
            word(pb), // child's file 2 = /b: trace file 2
            PROC_MORE,
            100,
            1,
            w0(5, 2, 2),
            2,
            word(pb), // root's own file 2 (also /b): trace file 3
            w0(4, 2, 2),
            11,
            2,
            0,
            5,
            0, // root thread 2 writes it: tid 2, file 3
            w0(6, 0, 0),
            1,
            1, // root ends: 1 access, 1 I/O record
            PROC_MORE,
            4242,
            100,
            w0(1, 1000, 1),
            12,
            0x30, // child's thread 1000: a fallback tid
            w0(4, 1, 1),
            13,
            2,
            0,
            3,
            0, // child's file 2 is trace file 2
            w0(6, 0, 0),
            2,
            2,
        ];
        let (st, ev) = convert(&raw(&words)).unwrap();
        assert!(st.complete);
        assert_eq!(
            (st.processes, st.threads, st.files, st.records),
            (2, 4, 3, 3)
        );
        let acc: Vec<(u32, u64)> = ev
            .iter()
            .filter_map(|e| match e {
                Event::Access(r) => Some((r.tid, r.page)),
                _ => None,
            })
            .collect();
        assert_eq!(acc, [(1, 0x10), (4_242_001, 0x20), (FALLBACK_TID, 0x30)]);
        let io: Vec<(u32, u32, u64)> = ev
            .iter()
            .filter_map(|e| match e {
                Event::Io(f) => Some((f.tid, f.file, f.len)),
                _ => None,
            })
            .collect();
        assert_eq!(io, [(4_242_001, 1, 10), (2, 3, 5), (4_242_001, 2, 3)]);
        let files: Vec<(u32, String)> = ev
            .iter()
            .filter_map(|e| match e {
                Event::File { id, path } => Some((*id, path.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            files,
            [(1, "/a".to_string()), (2, "/b".into()), (3, "/b".into())]
        );
    }

    /// An exec'd program: the header again, then the same pid starts anew and keeps its tids.
    #[test]
    fn exec_restarts_a_process_with_its_tids() {
        let mut words = vec![
            PROC_START,
            100,
            1,
            PROC_START,
            7,
            100, // child 7
            w0(1, 1, 1),
            0,
            0x1, // tid 7001
            w0(6, 0, 0),
            1,
            0, // ends before execve
        ];
        words.push(u64::from_le_bytes(*RAW_MAGIC));
        words.extend([RAW_VERSION, 4096, 0]);
        words.extend([
            PROC_START,
            7,
            100,
            w0(1, 1, 1),
            0,
            0x2, // the exec'd program's main thread: tid 7001 again
            w0(1, 2, 1),
            0,
            0x3, // its second thread: 7002
            w0(6, 0, 0),
            2,
            0,
        ]);
        // The root never ends: incomplete, but everything is there.
        let (st, ev) = convert(&raw(&words)).unwrap();
        assert!(!st.complete);
        assert_eq!((st.processes, st.threads), (2, 2));
        let tids: Vec<u32> = ev
            .iter()
            .filter_map(|e| match e {
                Event::Access(r) => Some(r.tid),
                _ => None,
            })
            .collect();
        assert_eq!(tids, [7001, 7001, 7002]);
        // A header that differs is an error.
        let mut bad = vec![PROC_START, 100, 1, u64::from_le_bytes(*RAW_MAGIC)];
        bad.extend([RAW_VERSION, 8192, 0]);
        assert_eq!(
            convert(&raw(&bad)).unwrap_err().to_string(),
            "raw: byte 56: a child's stream header differs from the first (page size or fetches)"
        );
    }

    #[test]
    fn process_records_are_checked() {
        let e = |words: &[u64]| convert(&raw(words)).unwrap_err().to_string();
        assert_eq!(
            e(&[w0(1, 1, 1), 0, 0]),
            "raw: byte 32: corrupt record: a record of kind 1 outside any process's block"
        );
        assert_eq!(
            e(&[PROC_START, 5, 1, PROC_START, 5, 1]),
            "raw: byte 56: corrupt record: process 5 starts twice"
        );
        assert_eq!(
            e(&[PROC_START, 5, 1, PROC_MORE, 6, 1]),
            "raw: byte 56: corrupt record: records of process 6, which has not started"
        );
        // After its end record a process needs a new start.
        assert_eq!(
            e(&[PROC_START, 5, 1, w0(6, 0, 0), 0, 0, w0(1, 1, 1), 0, 0]),
            "raw: byte 80: corrupt record: a record of kind 1 outside any process's block"
        );
        assert_eq!(
            e(&[PROC_START, 5, 1, w0(6, 0, 0), 0, 0, PROC_MORE, 5, 1]),
            "raw: byte 80: corrupt record: records of process 5, which has not started"
        );
        assert_eq!(
            e(&[PROC_START, 1 << 32, 1]),
            "raw: byte 32: corrupt record: a process id past 32 bits"
        );
    }
}

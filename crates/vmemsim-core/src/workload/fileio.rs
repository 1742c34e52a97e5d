//! File workloads: programs whose memory is mostly the page cache, as building blocks and as
//! the single-VM benchmarks of seed 003 (Cacol, §5, Table 1: `dd`, `gzip`, kernbench, a
//! database-like reader). Each thread calls `read`/`write`/`pread64`/`pwrite64`/`fsync` on
//! files ([`Op::File`], served by the page cache of the kernel it runs under, natively or in
//! a guest) and touches its own buffer, as the copy to or from user memory does.
//!
//! ```text
//! dd-like:bytes=256MiB,bs=1MiB,op=read|write,passes=1,fsync=0,warm=0,alloc=0
//! fileio:bytes=256MiB,files=1,bs=16KiB,pattern=seq|rand,op=read|write|rw,ops=N,threads=1,
//!        fsync_every=0,write_share=0.3,compute_ns=0,seed=S
//! gzip-like:bytes=64MiB,bs=32KiB,ratio=0.35,ns_per_kib=25000
//! ```
//!
//! - `dd-like`: `dd if=FILE of=/dev/null bs=BS` (`op=read`), a sequential reader of a file of
//!   `bytes` that exists at the start, `passes` times from its start; or `dd if=/dev/zero
//!   of=FILE bs=BS` (`op=write`) writing a new file, with `conv=fsync` when `fsync=1`. One
//!   thread; each call copies `bs` bytes to or from its buffer. Two optional phases of
//!   anonymous memory around it (VSwapper's §3.1 benchmark, seed 004): `warm=BYTES` first
//!   writes that much anonymous memory in page order and `munmap`s it, so that the memory
//!   the file's page cache then takes has been used before (a guest whose free memory the
//!   host has swapped out); `alloc=BYTES` after the last pass allocates and writes that
//!   much in page order (Fig. 10's process that "allocates and sequentially accesses
//!   200MB", here in the same process: copy-on-write sharing with a parent is left out
//!   anyway). Both write [`ANON_WRITE_NS`] of CPU per page. `passes=0` reads nothing (the
//!   phases alone: the prefix that a run with passes can be compared against).
//! - `fileio`: sysbench's `fileio` test: `files` files of `bytes / files` each (existing),
//!   `threads` threads each making `ops` calls of `bs` bytes, sequential (each thread its own
//!   cursor over all the files, starting at its share) or random (file and block uniform);
//!   `op=rw` writes with probability `write_share`; `fsync_every=K`: an `fsync` of the
//!   file after each K-th write of a thread. A database-like random reader is
//!   `fileio:pattern=rand,op=read,bs=8KiB`.
//! - `gzip-like`: `gzip -c FILE > FILE.gz`: reads its input (`bytes`, existing) sequentially
//!   in `bs` chunks, compresses (`ns_per_kib` of CPU per KiB, 25 µs: gzip -6 at ~40 MB/s, an
//!   estimate), touching its 64 KiB sliding window and, per KiB, 8 entries of its 128 KiB
//!   hash chains (the `head`/`prev` arrays of deflate: 32 K entries of 2 bytes each, twice),
//!   and appends `ratio` of each chunk to a new output file.
//!
//! Memory: each thread's buffer (`bs`) and gzip's tables are anonymous pages of process 0
//! from page 0 up. [`Workload::footprint_pages`] counts them and the files' pages (what the
//! workload can have in memory: its buffers and the page cache of its data), so a memory
//! size given as a percentage is of the data set.
//!
//! Left out: the file system's metadata (inodes, directories, extents), `open`/`close`, the
//! `stat`s of real programs, `O_DIRECT` (the recorded traces carry it), `mmap` of files.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::common::{pages_of, push_file_op, stream, Emitter, CHUNK_OPS, PAGE_BYTES};
use super::params::{fmt_size, Params};
use super::{bad_tid, Op, Workload};
use crate::error::Result;
use crate::mm::FileSpec;
use crate::trace::recorded::{FileIo, FileOp};

const TAG: u64 = 0x4649_4C45;

/// Which program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Dd,
    Fileio,
    Gzip,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Read,
    Write,
    Rw,
}

const MODES: &[&str] = &["read", "write", "rw"];

/// gzip's sliding window (`WSIZE` × 2) and hash chains (`head` + `prev`, 2 × 64 KiB).
const GZIP_WINDOW: u64 = 64 << 10;
const GZIP_HASH: u64 = 128 << 10;
/// Hash-chain entries visited per KiB of input (an estimate: deflate's `longest_match`
/// follows up to `max_chain` = 128 at level 6, most of them in cache; 8 distinct lines).
const GZIP_PROBES_PER_KIB: u64 = 8;
/// `dd-like`'s `warm` and `alloc` phases: CPU per page written (4 KiB of stores at ~10 GB/s,
/// stress-vm's `write_ns` estimate).
const ANON_WRITE_NS: u64 = 400;

struct Thread {
    rng: Xoshiro256PlusPlus,
    em: Emitter,
    /// Calls made.
    done: u64,
    /// Sequential cursor: byte position over all files (`fileio`), or in the file (`dd`,
    /// `gzip`'s input).
    pos: u64,
    /// gzip: the output's size; writes since the last fsync (`fileio`).
    out: u64,
    writes: u64,
    finished: bool,
    /// The file records of the ops last handed out.
    ios: Vec<FileIo>,
    /// `dd-like`: pages of the `warm` phase written (then one more step: its `munmap`), and
    /// of the `alloc` phase.
    warmed: u64,
    allocated: u64,
    /// `dd-like`: the passes are over (the `fsync`, if any, handed out).
    read_done: bool,
}

/// A file workload (see the module docs).
pub struct FileWorkload {
    kind: Kind,
    mode: Mode,
    bytes: u64,
    files: u64,
    bs: u64,
    passes: u64,
    random: bool,
    ops: u64,
    threads: usize,
    fsync: bool,
    fsync_every: u64,
    write_share: f64,
    compute_ns: u64,
    ratio: f64,
    ns_per_kib: u64,
    /// `dd-like`'s anonymous phases, pages (module docs).
    warm: u64,
    alloc: u64,
    seed: u64,
    state: Vec<Thread>,
}

impl FileWorkload {
    pub(crate) fn parse(kind: &str, text: &str, run_seed: u64) -> Result<FileWorkload> {
        let keys: &[&str] = match kind {
            "dd-like" => &[
                "bytes", "bs", "op", "passes", "fsync", "warm", "alloc", "seed",
            ],
            "gzip-like" => &["bytes", "bs", "ratio", "ns_per_kib", "seed"],
            _ => &[
                "bytes",
                "files",
                "bs",
                "pattern",
                "op",
                "ops",
                "threads",
                "fsync_every",
                "write_share",
                "compute_ns",
                "seed",
            ],
        };
        let p = Params::parse(kind, text, keys)?;
        let k = match kind {
            "dd-like" => Kind::Dd,
            "gzip-like" => Kind::Gzip,
            _ => Kind::Fileio,
        };
        let default_bytes = if k == Kind::Gzip { 64 << 20 } else { 256 << 20 };
        let bytes = p.size("bytes")?.unwrap_or(default_bytes);
        let default_bs = match k {
            Kind::Dd => 1 << 20,
            Kind::Gzip => 32 << 10,
            Kind::Fileio => 16 << 10,
        };
        let bs = p.size("bs")?.unwrap_or(default_bs);
        if bs == 0 || bs > 0x7fff_f000 {
            // `MAX_RW_COUNT`: the most one read or write moves.
            return Err(p.err("bs", "must be 1 byte to 2 GiB - 4 KiB (MAX_RW_COUNT)"));
        }
        if bytes < bs {
            return Err(p.err("bytes", format!("{bytes} bytes is less than one block")));
        }
        if bytes > 1 << 42 {
            return Err(p.err("bytes", "at most 4 TiB"));
        }
        let files = p.u64_in("files", 1, 1, 1 << 16)?;
        if bytes / files < bs {
            return Err(p.err("files", "each file must hold at least one block"));
        }
        let mode = match k {
            Kind::Gzip => Mode::Rw,
            Kind::Dd => [Mode::Read, Mode::Write][p.choice("op", 0, &MODES[..2])?],
            Kind::Fileio => [Mode::Read, Mode::Write, Mode::Rw][p.choice("op", 0, MODES)?],
        };
        let threads = p.u64_in("threads", 1, 1, 256)? as usize;
        let per_file = bytes / files;
        let ops = p.u64_in("ops", (per_file / bs).max(1) * files, 1, 1 << 40)?;
        let w = FileWorkload {
            kind: k,
            mode,
            bytes,
            files,
            bs,
            passes: p.u64_in("passes", 1, 0, 1 << 20)?,
            random: p.choice("pattern", 0, &["seq", "rand"])? == 1,
            ops,
            threads,
            fsync: p.choice("fsync", 0, &["0", "1"])? == 1,
            fsync_every: p.u64_in("fsync_every", 0, 0, 1 << 40)?,
            write_share: p.f64_in("write_share", 0.3, 0.0, 1.0)?,
            compute_ns: p.u64_in("compute_ns", 0, 0, 1 << 32)?,
            ratio: p.f64_in("ratio", 0.35, 0.01, 1.0)?,
            ns_per_kib: p.u64_in("ns_per_kib", 25_000, 0, 1 << 32)?,
            warm: pages_of(anon_size(&p, "warm")?),
            alloc: pages_of(anon_size(&p, "alloc")?),
            seed: p.seed(run_seed)?,
            state: Vec::new(),
        };
        Ok(w.reset())
    }

    fn reset(mut self) -> Self {
        self.state = (0..self.threads)
            .map(|t| Thread {
                rng: stream(self.seed, TAG, t as u64),
                em: Emitter::default(),
                done: 0,
                pos: if self.kind == Kind::Fileio {
                    self.bytes / self.threads as u64 * t as u64 / self.bs * self.bs
                } else {
                    0
                },
                out: 0,
                writes: 0,
                finished: false,
                ios: Vec::new(),
                warmed: 0,
                allocated: 0,
                read_done: false,
            })
            .collect();
        self
    }

    fn per_file(&self) -> u64 {
        self.bytes / self.files
    }

    /// Thread `t`'s buffer, the first page.
    fn buffer(&self, t: usize) -> u64 {
        t as u64 * pages_of(self.bs)
    }

    /// gzip's window and hash tables, after the buffers; `dd-like`'s `warm` and `alloc`
    /// regions (one after the other: `mmap` after a `munmap` need not return the same
    /// address, and two regions keep the phases apart in the page numbers).
    fn tables(&self) -> u64 {
        self.threads as u64 * pages_of(self.bs)
    }

    fn kind_name(&self) -> &'static str {
        match self.kind {
            Kind::Dd => "dd-like",
            Kind::Fileio => "fileio",
            Kind::Gzip => "gzip-like",
        }
    }
}

/// `dd-like`'s `warm` or `alloc` size in bytes (0 by default; at most 1 TiB).
fn anon_size(p: &Params, key: &str) -> Result<u64> {
    let v = p.size(key)?.unwrap_or(0);
    if v > 1 << 40 {
        return Err(p.err(key, "at most 1 TiB"));
    }
    Ok(v)
}

/// Append a file op with its record to thread `st`'s buffer.
fn file(st: &mut Thread, buf: &mut Vec<Op>, op: FileOp, file: u32, offset: u64, len: u64) {
    st.em.flush(buf);
    st.em.split();
    push_file_op(buf, &mut st.ios, op, file, offset, len);
}

impl Workload for FileWorkload {
    fn name(&self) -> String {
        let common = format!("bytes={},bs={}", fmt_size(self.bytes), fmt_size(self.bs));
        match self.kind {
            Kind::Dd => {
                let anon = |k: &str, pages: u64| {
                    if pages == 0 {
                        String::new()
                    } else {
                        format!(",{k}={}", fmt_size(pages * PAGE_BYTES))
                    }
                };
                format!(
                    "dd-like:{common},op={},passes={},fsync={}{}{},seed={}",
                    MODES[self.mode as usize],
                    self.passes,
                    self.fsync as u8,
                    anon("warm", self.warm),
                    anon("alloc", self.alloc),
                    self.seed
                )
            }
            Kind::Gzip => format!(
                "gzip-like:{common},ratio={},ns_per_kib={},seed={}",
                self.ratio, self.ns_per_kib, self.seed
            ),
            Kind::Fileio => format!(
                "fileio:{common},files={},pattern={},op={},ops={},threads={},fsync_every={},write_share={},compute_ns={},seed={}",
                self.files,
                if self.random { "rand" } else { "seq" },
                MODES[self.mode as usize],
                self.ops,
                self.threads,
                self.fsync_every,
                self.write_share,
                self.compute_ns,
                self.seed
            ),
        }
    }

    fn threads(&self) -> usize {
        self.threads
    }

    fn footprint_pages(&self) -> u64 {
        let files = pages_of(self.per_file()) * self.files;
        let out = if self.kind == Kind::Gzip {
            pages_of((self.bytes as f64 * self.ratio).ceil() as u64 + self.bs)
                + pages_of(GZIP_WINDOW + GZIP_HASH)
        } else {
            0
        };
        // `warm` is unmapped before the reads; `alloc` is written after them.
        self.tables() + files + out + self.warm.max(self.alloc)
    }

    fn files(&self) -> Vec<FileSpec> {
        match self.kind {
            Kind::Dd => vec![FileSpec {
                id: 0,
                initial_size: if self.mode == Mode::Read {
                    self.bytes
                } else {
                    0
                },
                extent: self.bytes,
            }],
            Kind::Gzip => vec![
                FileSpec {
                    id: 0,
                    initial_size: self.bytes,
                    extent: self.bytes,
                },
                FileSpec {
                    id: 1,
                    initial_size: 0,
                    // Each chunk's output rounded up to a byte: at most `ratio × bytes` plus
                    // one byte per chunk.
                    extent: (self.bytes as f64 * self.ratio).ceil() as u64
                        + self.bytes.div_ceil(self.bs),
                },
            ],
            Kind::Fileio => (0..self.files as u32)
                .map(|id| FileSpec {
                    id,
                    initial_size: self.per_file(),
                    extent: self.per_file(),
                })
                .collect(),
        }
    }

    fn file_io(&self, tid: usize, slot: u32) -> Option<&FileIo> {
        self.state.get(tid)?.ios.get(slot as usize)
    }

    fn next_ops(&mut self, tid: usize, buf: &mut Vec<Op>) -> Result<()> {
        if tid >= self.threads {
            return Err(bad_tid(self.kind_name(), tid, self.threads));
        }
        let buffer = self.buffer(tid);
        let tables = self.tables();
        let (bs, per_file, files) = (self.bs, self.per_file(), self.files);
        let bs_pages = pages_of(bs);
        let st = &mut self.state[tid];
        st.ios.clear();
        if st.finished {
            return Ok(());
        }
        let start = buf.len();
        while buf.len() - start < CHUNK_OPS {
            match self.kind {
                Kind::Dd => {
                    let total = self.bytes.div_ceil(bs) * self.passes;
                    // The `warm` region, then (after the reads) the `alloc` region.
                    let (warm_at, alloc_at) = (tables, tables + self.warm);
                    if st.warmed < self.warm {
                        st.em.access(buf, warm_at + st.warmed, true);
                        st.em.compute(ANON_WRITE_NS);
                        st.warmed += 1;
                        if st.warmed == self.warm {
                            st.em.flush(buf);
                            st.em.split();
                            buf.push(Op::Unmap {
                                start: warm_at,
                                // (at most 2^28 pages: `warm` is at most 1 TiB)
                                pages: self.warm as u32,
                            });
                        }
                        continue;
                    }
                    if st.done == total {
                        if !st.read_done {
                            st.read_done = true;
                            if self.mode == Mode::Write && self.fsync {
                                file(st, buf, FileOp::Fsync, 0, 0, 0);
                            }
                            continue;
                        }
                        if st.allocated < self.alloc {
                            st.em.access(buf, alloc_at + st.allocated, true);
                            st.em.compute(ANON_WRITE_NS);
                            st.allocated += 1;
                            continue;
                        }
                        st.em.flush(buf);
                        st.finished = true;
                        break;
                    }
                    let at = (st.done % self.bytes.div_ceil(bs)) * bs;
                    let len = bs.min(self.bytes - at);
                    if self.mode == Mode::Read {
                        file(st, buf, FileOp::Read, 0, at, len);
                        for p in 0..pages_of(len) {
                            st.em.access(buf, buffer + p, true);
                        }
                    } else {
                        for p in 0..pages_of(len) {
                            st.em.access(buf, buffer + p, false);
                        }
                        file(st, buf, FileOp::Write, 0, at, len);
                    }
                    st.done += 1;
                }
                Kind::Gzip => {
                    if st.pos >= self.bytes {
                        st.em.flush(buf);
                        st.finished = true;
                        break;
                    }
                    let len = bs.min(self.bytes - st.pos);
                    file(st, buf, FileOp::Read, 0, st.pos, len);
                    let kib = len.div_ceil(1024);
                    let window = pages_of(GZIP_WINDOW);
                    let hash = pages_of(GZIP_HASH);
                    for k in 0..kib {
                        // The input byte's place in the buffer, then the window it slides
                        // into, then the hash chains' probes.
                        st.em.access(buf, buffer + (k * 1024) / PAGE_BYTES, false);
                        let w = ((st.pos + k * 1024) % GZIP_WINDOW) / PAGE_BYTES;
                        st.em.access(buf, tables + w, true);
                        for _ in 0..GZIP_PROBES_PER_KIB {
                            let h = st.rng.gen_range(0..hash);
                            st.em.access(buf, tables + window + h, true);
                        }
                        st.em.compute(self.ns_per_kib);
                    }
                    let out = ((st.pos + len) as f64 * self.ratio).ceil() as u64;
                    if out > st.out {
                        for p in 0..pages_of(out - st.out).min(bs_pages) {
                            st.em.access(buf, buffer + p, false);
                        }
                        file(st, buf, FileOp::Write, 1, st.out, out - st.out);
                        st.out = out;
                    }
                    st.pos += len;
                }
                Kind::Fileio => {
                    let mine =
                        crate::workload::common::split(self.ops, self.threads as u64, tid as u64);
                    if st.done == mine.1 - mine.0 {
                        st.em.flush(buf);
                        st.finished = true;
                        break;
                    }
                    let blocks_per_file = per_file / bs;
                    let (f, at) = if self.random {
                        let f = st.rng.gen_range(0..files);
                        (f, st.rng.gen_range(0..blocks_per_file) * bs)
                    } else {
                        let total = blocks_per_file * files;
                        let b = (st.pos / bs) % total;
                        st.pos = (b + 1) * bs;
                        (b / blocks_per_file, (b % blocks_per_file) * bs)
                    };
                    let write = match self.mode {
                        Mode::Read => false,
                        Mode::Write => true,
                        Mode::Rw => st.rng.gen_bool(self.write_share),
                    };
                    if write {
                        for p in 0..bs_pages {
                            st.em.access(buf, buffer + p, false);
                        }
                        file(st, buf, FileOp::Pwrite, f as u32, at, bs);
                        st.writes += 1;
                        if self.fsync_every > 0 && st.writes.is_multiple_of(self.fsync_every) {
                            file(st, buf, FileOp::Fsync, f as u32, 0, 0);
                        }
                    } else {
                        file(st, buf, FileOp::Pread, f as u32, at, bs);
                        for p in 0..bs_pages {
                            st.em.access(buf, buffer + p, true);
                        }
                    }
                    st.em.compute(self.compute_ns);
                    st.done += 1;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::parse;

    /// The file records of thread 0's whole stream, in order.
    fn records(w: &mut dyn Workload) -> Vec<FileIo> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            w.next_ops(0, &mut buf).unwrap();
            if buf.is_empty() {
                return out;
            }
            for op in &buf {
                if let Op::File { slot } = op {
                    out.push(*w.file_io(0, *slot).unwrap());
                }
            }
        }
    }

    #[test]
    fn dd_reads_the_file_in_blocks_and_writes_with_fsync() {
        // 10 KiB in 4 KiB blocks: reads at 0, 4096 and 8192 (the last of 2048 bytes).
        let mut w = parse("dd-like:bytes=10KiB,bs=4KiB", 0).unwrap();
        let r = records(w.as_mut());
        let got: Vec<(FileOp, u64, u64)> = r.iter().map(|x| (x.op, x.offset, x.len)).collect();
        assert_eq!(
            got,
            [
                (FileOp::Read, 0, 4096),
                (FileOp::Read, 4096, 4096),
                (FileOp::Read, 8192, 2048)
            ]
        );
        assert_eq!(w.files()[0].initial_size, 10 << 10);
        // Buffer (1 page) and the file's 3 pages.
        assert_eq!(w.footprint_pages(), 4);
        let mut w = parse("dd-like:bytes=8KiB,bs=4KiB,op=write,fsync=1", 0).unwrap();
        let r = records(w.as_mut());
        let ops: Vec<FileOp> = r.iter().map(|x| x.op).collect();
        assert_eq!(ops, [FileOp::Write, FileOp::Write, FileOp::Fsync]);
        assert_eq!(w.files()[0].initial_size, 0);
        assert_eq!(
            w.name(),
            "dd-like:bytes=8KiB,bs=4KiB,op=write,passes=1,fsync=1,seed=0"
        );
    }

    #[test]
    fn dd_warms_memory_before_and_allocates_after_its_reads() {
        // 8 KiB in 4 KiB blocks, warm=12KiB, alloc=8KiB: pages 1..4 written, unmapped, the
        // two reads (each followed by the buffer, page 0), then pages 4 and 5 written.
        let mut w = parse("dd-like:bytes=8KiB,bs=4KiB,warm=12KiB,alloc=8KiB", 0).unwrap();
        let mut ops: Vec<Op> = Vec::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            w.next_ops(0, &mut buf).unwrap();
            if buf.is_empty() {
                break;
            }
            ops.extend(buf.iter().filter(|o| !matches!(o, Op::Compute { .. })));
        }
        let acc = |page, write| Op::Access { page, write };
        assert_eq!(
            ops,
            [
                acc(1, true),
                acc(2, true),
                acc(3, true),
                Op::Unmap { start: 1, pages: 3 },
                Op::File { slot: 0 },
                acc(0, true),
                Op::File { slot: 1 },
                acc(0, true),
                acc(4, true),
                acc(5, true),
            ]
        );
        // Buffer, file, and the larger of the two regions.
        assert_eq!(w.footprint_pages(), 1 + 2 + 3);
        assert_eq!(
            w.name(),
            "dd-like:bytes=8KiB,bs=4KiB,op=read,passes=1,fsync=0,warm=12KiB,alloc=8KiB,seed=0"
        );
        // passes=0: the warm phase alone, the prefix of the run above.
        let mut w = parse("dd-like:bytes=8KiB,bs=4KiB,passes=0,warm=12KiB", 0).unwrap();
        assert!(records(w.as_mut()).is_empty());
        let e = parse("dd-like:warm=2TiB", 0).err().unwrap().to_string();
        assert!(e.starts_with("dd-like.warm:"), "{e}");
    }

    #[test]
    fn fileio_random_reads_stay_in_their_files_and_blocks() {
        let mut w = parse("fileio:bytes=1MiB,files=4,bs=8KiB,pattern=rand,ops=500", 3).unwrap();
        let r = records(w.as_mut());
        assert_eq!(r.len(), 500);
        for x in &r {
            assert_eq!(x.op, FileOp::Pread);
            assert!(x.file < 4);
            assert_eq!(x.offset % 8192, 0);
            assert!(x.offset + x.len <= 256 << 10);
        }
        // Every file is read (500 draws of 4).
        let mut seen = [false; 4];
        r.iter().for_each(|x| seen[x.file as usize] = true);
        assert_eq!(seen, [true; 4]);
    }

    #[test]
    fn fileio_sequential_goes_through_the_files_in_order() {
        // 2 files of 16 KiB, 8 KiB blocks: (0, 0), (0, 8K), (1, 0), (1, 8K), then again.
        let mut w = parse("fileio:bytes=32KiB,files=2,bs=8KiB,ops=6", 0).unwrap();
        let r = records(w.as_mut());
        let got: Vec<(u32, u64)> = r.iter().map(|x| (x.file, x.offset)).collect();
        assert_eq!(
            got,
            [(0, 0), (0, 8192), (1, 0), (1, 8192), (0, 0), (0, 8192)]
        );
    }

    #[test]
    fn gzip_writes_its_ratio_of_the_input() {
        // 100 KiB in 32 KiB chunks at ratio 0.5: the output grows to 50 KiB in 4 writes.
        let mut w = parse("gzip-like:bytes=100KiB,bs=32KiB,ratio=0.5", 0).unwrap();
        let r = records(w.as_mut());
        let written: u64 = r
            .iter()
            .filter(|x| x.op == FileOp::Write)
            .map(|x| x.len)
            .sum();
        assert_eq!(written, 50 << 10);
        let read: u64 = r
            .iter()
            .filter(|x| x.op == FileOp::Read)
            .map(|x| x.len)
            .sum();
        assert_eq!(read, 100 << 10);
        assert!(r
            .iter()
            .all(|x| x.offset + x.len <= w.files()[x.file as usize].extent));
    }

    #[test]
    fn bad_keys_are_named() {
        let e = parse("dd-like:bs=0", 0).err().unwrap().to_string();
        assert!(e.starts_with("dd-like.bs:"), "{e}");
        let e = parse("fileio:bytes=8KiB,files=4,bs=4KiB", 0)
            .err()
            .unwrap()
            .to_string();
        assert!(e.starts_with("fileio.files:"), "{e}");
        let e = parse("gzip-like:op=read", 0).err().unwrap().to_string();
        assert!(e.starts_with("gzip-like.op:"), "{e}");
    }
}

//! `trace`: a trace file (recorded, imported or generated) replayed on the timed machine.
//!
//! ```text
//! trace:path=FILE[,format=text|csv|oracle-general|native][,page_size=4096][,addresses=0|1]
//!      [,compute_ns=0][,class=numeric][,threads=1][,seed=S]
//! ```
//!
//! - `path` (required): the trace file, relative to the working directory. A path holding a
//!   comma or a parenthesis cannot be given (they separate the spec's keys).
//! - `format`: as `vmemsim replay --format`; by default detected from the file
//!   ([`TraceFormat::detect`]: magic bytes, then the extension). CSV traces are read with the
//!   default column mapping (the page in column 1, no operation column: every access a
//!   read); convert other layouts first with `vmemsim trace convert`.
//! - `page_size` (4096) and `addresses` (0): with `addresses=1` the values are byte
//!   addresses, turned into page numbers with `page_size` (text, csv, oracle-general; a
//!   native trace holds page numbers and refuses it). Whatever the trace's page size, its
//!   page numbers are simulated as the machine's 4 KiB pages.
//! - `compute_ns` (0): CPU time after each access, one [`Op::Compute`] of exactly that many
//!   ns (at most `u32::MAX`).
//! - `class` (`numeric`): the content class of every page (`zero`, `text`, `numeric`,
//!   `random`, `sparse`), for zram.
//! - `threads` (1, at most 64): the trace's accesses are dealt out in blocks of
//!   [`BLOCK`] accesses, block `k` (accesses `k × BLOCK .. (k + 1) × BLOCK` in trace order)
//!   to thread `k mod threads`; each thread keeps its blocks' order. Every thread streams
//!   the file with a reader of its own and skips the other threads' blocks, so the file is
//!   read `threads` times. Threads run concurrently on the machine, so with more than one
//!   the machine sees the accesses in another order than the trace's.
//! - `seed`: unused (the stream is the trace's); kept for the common grammar and recorded
//!   in the canonical spec.
//!
//! Each access of the trace is one [`Op::Access`], in order: unlike the models, references
//! repeated to one page are not merged, so the machine's access count is the trace's. Page
//! numbers may be anywhere in 64 bits, but a process addresses 2^36 pages (48 bits, 4-level
//! page tables): a trace with page numbers beyond that (object ids, kernel addresses) has
//! its 1 GiB regions (2^18 pages) numbered densely in the order they first appear in the
//! file, which keeps every page distinct and the layout inside each region (its page-table
//! leaves, what MG-LRU's walks and look-around see); a trace within 48 bits runs at its own
//! page numbers.
//!
//! The file is read once when the workload is built: every reader error shows then, and
//! [`Workload::footprint_pages`] is the exact number of distinct pages (what `--frames 50%`
//! refers to). That pass keeps one entry per distinct page; a trace of more than
//! [`MAX_PAGES`] distinct pages (the largest memory the machine simulates) is refused when
//! counting reaches that, before the set grows further. An empty trace is refused. While
//! running, each thread holds one chunk of the file ([`crate::trace::CHUNK`] accesses).

use super::common::CHUNK_OPS;
use super::params::Params;
use super::{bad_tid, Op, Workload};
use crate::access::Access;
use crate::device::ContentClass;
use crate::error::{Error, ErrorKind, Result};
use crate::trace::recorded::FileIo;
use crate::trace::{self, ReaderOptions, TraceFormat, TraceSource};

const KEYS: &[&str] = &[
    "path",
    "format",
    "page_size",
    "addresses",
    "compute_ns",
    "class",
    "threads",
    "seed",
];

/// Accesses dealt to one thread at a time when `threads` > 1.
pub const BLOCK: u64 = 4096;

/// Most distinct pages a trace workload may touch: the largest memory simulated.
pub const MAX_PAGES: u64 = crate::engine::MAX_FRAMES as u64;

const MAX_THREADS: u64 = 64;

struct ThreadState {
    /// Opened at the thread's first poll.
    src: Option<Box<dyn TraceSource>>,
    chunk: Vec<Access>,
    /// The chunk's file I/O records, each with the number of the chunk's accesses before it,
    /// and the next one to hand out.
    io: Vec<(u32, FileIo)>,
    io_pos: usize,
    /// The records of the ops last handed out ([`Op::File`]'s slots).
    ios: Vec<FileIo>,
    pos: usize,
    /// Index in the trace of `chunk[pos]`.
    index: u64,
    done: bool,
}

/// The `trace` workload (see the module docs).
pub struct TraceWorkload {
    path: String,
    format: TraceFormat,
    opts: ReaderOptions,
    compute_ns: u32,
    class: ContentClass,
    threads: usize,
    seed: u64,
    footprint: u64,
    accesses: u64,
    state: Vec<ThreadState>,
    /// Dense region numbers, when the trace's pages go beyond a process's address space.
    regions: Option<Regions>,
    /// The files of the trace's file I/O records (recorded programs, MSR imports).
    files: Vec<crate::mm::FileSpec>,
}

/// `e` as an error of the spec's key `k` (a reader's own key, e.g. `format`, is replaced).
fn rekey(p: &Params, k: &str, e: Error) -> Error {
    match e.into_kind() {
        ErrorKind::Config { msg, .. } => p.err(k, msg),
        other => p.err(k, Error::from(other).to_string()),
    }
}

/// Distinct pages and accesses of `src`, refusing more than `max_pages` distinct pages.
/// (Not [`crate::replay::count_distinct`]: this one stops at a limit and counts accesses.)
/// Also the trace's 1 GiB regions in order of first appearance, when some page lies beyond
/// a process's address space (see the module docs).
fn count_pages(src: &mut dyn TraceSource, max_pages: u64) -> Result<(u64, u64, Option<Regions>)> {
    let mut seen: std::collections::HashSet<
        u64,
        std::hash::BuildHasherDefault<crate::util::PageHasher>,
    > = Default::default();
    let mut regions = Regions::default();
    let mut beyond = false;
    let mut buf = Vec::with_capacity(trace::CHUNK);
    let mut accesses = 0u64;
    loop {
        src.next_chunk(&mut buf)?;
        if buf.is_empty() {
            return Ok((seen.len() as u64, accesses, beyond.then_some(regions)));
        }
        accesses += buf.len() as u64;
        for a in &buf {
            beyond |= a.page >= crate::vm::machine::VA_PAGES;
            let n = regions.len() as u64;
            regions.entry(a.page >> REGION_BITS).or_insert(n);
            if seen.insert(a.page) && seen.len() as u64 > max_pages {
                return Err(Error::config(
                    "",
                    format!(
                        "more than {max_pages} distinct pages, the largest footprint a trace \
                         workload may have (the timed machine's largest memory)"
                    ),
                ));
            }
        }
    }
}

/// log2 of the pages in a 1 GiB region.
const REGION_BITS: u32 = 18;

/// 1 GiB region of the trace → its dense number.
type Regions = std::collections::HashMap<u64, u64>;

impl TraceWorkload {
    pub(crate) fn parse(text: &str, run_seed: u64) -> Result<TraceWorkload> {
        Self::parse_limited(text, run_seed, MAX_PAGES)
    }

    fn parse_limited(text: &str, run_seed: u64, max_pages: u64) -> Result<TraceWorkload> {
        let p = Params::parse("trace", text, KEYS)?;
        let path = p
            .get("path")
            .ok_or_else(|| {
                p.err(
                    "path",
                    "missing: give path=FILE (a text, csv, oracle-general or native trace)",
                )
            })?
            .to_string();
        let page_size = p.u64_in("page_size", 4096, 2, 1 << 40)?;
        if !page_size.is_power_of_two() {
            return Err(p.err("page_size", format!("{page_size} is not a power of two")));
        }
        let addresses = p.choice("addresses", 0, &["0", "1"])? == 1;
        let compute_ns = p.u64_in("compute_ns", 0, 0, u32::MAX as u64)? as u32;
        let class = ContentClass::ALL[p.choice("class", 2, ContentClass::NAMES)?];
        let threads = p.u64_in("threads", 1, 1, MAX_THREADS)? as usize;
        let seed = p.seed(run_seed)?;
        let format = match p.get("format") {
            Some(f) => TraceFormat::from_name(f).map_err(|e| rekey(&p, "format", e))?,
            None => TraceFormat::detect(&path).map_err(|e| rekey(&p, "path", e))?,
        };
        if addresses && format == TraceFormat::Native {
            return Err(p.err(
                "addresses",
                "native traces hold page numbers; addresses=1 does not apply",
            ));
        }
        let opts = ReaderOptions {
            page_size,
            addresses,
            ..ReaderOptions::default()
        };
        let mut src = trace::open(&path, Some(format), &opts).map_err(|e| rekey(&p, "path", e))?;
        let files = src
            .files()
            .map_err(|e| rekey(&p, "path", e))?
            .unwrap_or_default();
        if !files.is_empty() && threads > 1 {
            return Err(p.err(
                "threads",
                "a trace with file I/O records runs as one thread (its records are in the \
                 program's order)",
            ));
        }
        let mut src = if files.is_empty() {
            src
        } else {
            // (`files` read the source to its end)
            trace::open(&path, Some(format), &opts).map_err(|e| rekey(&p, "path", e))?
        };
        let (footprint, accesses, regions) =
            count_pages(&mut *src, max_pages).map_err(|e| match e.kind() {
                ErrorKind::Config { msg, .. } => p.err("path", format!("{path}: {msg}")),
                _ => p.err("path", e.to_string()),
            })?;
        if accesses == 0 && files.is_empty() {
            return Err(p.err("path", format!("{path}: the trace holds no accesses")));
        }
        // Thread 0 goes on with a fresh reader of its own when first polled.
        drop(src);
        let state = (0..threads)
            .map(|_| ThreadState {
                src: None,
                chunk: Vec::new(),
                io: Vec::new(),
                io_pos: 0,
                ios: Vec::new(),
                pos: 0,
                index: 0,
                done: false,
            })
            .collect();
        Ok(TraceWorkload {
            path,
            format,
            opts,
            compute_ns,
            class,
            threads,
            seed,
            footprint,
            accesses,
            state,
            regions,
            files,
        })
    }

    /// Accesses in the trace (all threads together).
    pub fn accesses(&self) -> u64 {
        self.accesses
    }

    fn read_err(&self, e: Error) -> Error {
        match e.kind() {
            ErrorKind::Config { msg, .. } => {
                Error::config("trace.path", format!("{}: {msg}", self.path))
            }
            _ => Error::config("trace.path", e.to_string()),
        }
    }
}

impl Workload for TraceWorkload {
    fn name(&self) -> String {
        format!(
            "trace:path={},format={},page_size={},addresses={},compute_ns={},class={},threads={},seed={}",
            self.path,
            self.format.name(),
            self.opts.page_size,
            self.opts.addresses as u8,
            self.compute_ns,
            self.class.name(),
            self.threads,
            self.seed
        )
    }

    fn threads(&self) -> usize {
        self.threads
    }

    fn footprint_pages(&self) -> u64 {
        self.footprint
    }

    fn content_class(&self, _pid: u32, _page: u64) -> ContentClass {
        self.class
    }

    fn files(&self) -> Vec<crate::mm::FileSpec> {
        self.files.clone()
    }

    fn file_io(&self, tid: usize, slot: u32) -> Option<&FileIo> {
        self.state.get(tid)?.ios.get(slot as usize)
    }

    fn next_ops(&mut self, tid: usize, buf: &mut Vec<Op>) -> Result<()> {
        if tid >= self.threads {
            return Err(bad_tid("trace", tid, self.threads));
        }
        if self.state[tid].done {
            return Ok(());
        }
        if self.state[tid].src.is_none() {
            let src = trace::open(&self.path, Some(self.format), &self.opts)
                .map_err(|e| self.read_err(e))?;
            self.state[tid].src = Some(src);
        }
        let (n, compute_ns) = (self.threads as u64, self.compute_ns);
        let has_io = !self.files.is_empty();
        self.state[tid].ios.clear();
        let start = buf.len();
        while buf.len() - start < CHUNK_OPS {
            let st = &mut self.state[tid];
            // The file I/O records before the next access (or after the chunk's last one).
            while st.io_pos < st.io.len() && st.io[st.io_pos].0 as usize <= st.pos {
                let mut io = st.io[st.io_pos].1;
                // The timed machine's pages are not the trace's addresses: an `O_DIRECT`
                // buffer is not pinned (as `get_user_pages` is not carried here).
                io.addr = if io.op == crate::trace::recorded::FileOp::Fadvise {
                    io.addr
                } else {
                    0
                };
                buf.push(Op::File {
                    slot: st.ios.len() as u32,
                });
                st.ios.push(io);
                st.io_pos += 1;
            }
            if st.pos == st.chunk.len() {
                let src = st.src.as_mut().expect("opened above");
                let r = if has_io {
                    src.next_chunk_io(&mut st.chunk, &mut st.io)
                } else {
                    src.next_chunk(&mut st.chunk)
                };
                if let Err(e) = r {
                    return Err(self.read_err(e));
                }
                st.pos = 0;
                st.io_pos = 0;
                if st.chunk.is_empty() && !st.io.is_empty() {
                    continue;
                }
                if st.chunk.is_empty() {
                    st.done = true;
                    st.src = None;
                    st.chunk = Vec::new();
                    break;
                }
            }
            // The accesses of this chunk up to the end of the current block.
            let in_block = BLOCK - st.index % BLOCK;
            let left = (st.chunk.len() - st.pos) as u64;
            let run = in_block.min(left) as usize;
            let mine = n == 1 || (st.index / BLOCK) % n == tid as u64;
            if !mine {
                st.pos += run;
                st.index += run as u64;
                continue;
            }
            // As many as fit in this call's share of ops (at least one).
            let per = if compute_ns > 0 { 2 } else { 1 };
            let room = (CHUNK_OPS - (buf.len() - start)).div_ceil(per);
            let mut take = run.min(room.max(1));
            if let Some(&(at, _)) = st.io.get(st.io_pos) {
                // Up to the next file I/O record.
                take = take.min((at as usize).saturating_sub(st.pos).max(1));
            }
            for a in &st.chunk[st.pos..st.pos + take] {
                let page = match &self.regions {
                    None => a.page,
                    Some(r) => {
                        (r[&(a.page >> REGION_BITS)] << REGION_BITS)
                            | (a.page & ((1 << REGION_BITS) - 1))
                    }
                };
                buf.push(Op::Access {
                    page,
                    write: a.write,
                });
                if compute_ns > 0 {
                    buf.push(Op::Compute { ns: compute_ns });
                }
            }
            st.pos += take;
            st.index += take as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::trace::{create, TraceMeta};
    use crate::workload::parse;

    fn tmp(name: &str, text: &str) -> String {
        let dir =
            std::env::temp_dir().join(format!("vmemsim-workload-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name).to_string_lossy().into_owned();
        std::fs::write(&p, text).unwrap();
        p
    }

    /// `(page, write)` of each access op, in order.
    fn acc(ops: &[Op]) -> Vec<(u64, bool)> {
        ops.iter()
            .filter_map(|o| match o {
                Op::Access { page, write } => Some((*page, *write)),
                _ => None,
            })
            .collect()
    }

    const SMALL: &str = "# a hand-written trace\n5\n0x10 W\n5\n7 R\n7\n0x7fff12345 W\n16\n5 W\n";
    /// The accesses of SMALL, written out by hand: 8 accesses, distinct pages
    /// {5, 0x10, 7, 0x7fff12345} (16 is 0x10).
    const SMALL_ACCESSES: [(u64, bool); 8] = [
        (5, false),
        (16, true),
        (5, false),
        (7, false),
        (7, false),
        (0x7fff12345, true),
        (16, false),
        (5, true),
    ];

    #[test]
    fn ops_are_the_accesses_in_order_and_footprint_is_exact() {
        let path = tmp("small.txt", SMALL);
        let mut w = parse(&format!("trace:path={path}"), 9).unwrap();
        assert_eq!(w.threads(), 1);
        assert_eq!(w.footprint_pages(), 4);
        assert_eq!(w.content_class(0, 5), ContentClass::Numeric);
        let s = drain(w.as_mut(), Order::RoundRobin);
        let want: Vec<Op> = SMALL_ACCESSES
            .iter()
            .map(|&(page, write)| Op::Access { page, write })
            .collect();
        // No compute, no merging of the repeated reads of page 7.
        assert_eq!(s, vec![want]);
        assert_eq!(
            w.name(),
            format!("trace:path={path},format=text,page_size=4096,addresses=0,compute_ns=0,class=numeric,threads=1,seed=9")
        );
    }

    #[test]
    fn compute_follows_each_access() {
        let path = tmp("compute.txt", SMALL);
        let mut w = parse(&format!("trace:path={path},compute_ns=250,class=text"), 0).unwrap();
        assert_eq!(w.content_class(0, 0x7fff12345), ContentClass::Text);
        let s = drain(w.as_mut(), Order::RoundRobin);
        let mut want = Vec::new();
        for &(page, write) in &SMALL_ACCESSES {
            want.push(Op::Access { page, write });
            want.push(Op::Compute { ns: 250 });
        }
        assert_eq!(s, vec![want]);
        assert_eq!(compute_ns(&s[0]), 250 * 8);
    }

    #[test]
    fn name_round_trips() {
        let path = tmp("rt.trace", SMALL);
        let a = parse(&format!("TRACE:path={path},class=zero,seed=4"), 0).unwrap();
        let name = a.name();
        assert_eq!(
            name,
            format!("trace:path={path},format=text,page_size=4096,addresses=0,compute_ns=0,class=zero,threads=1,seed=4")
        );
        let mut b = parse(&name, 77).unwrap();
        assert_eq!(b.name(), name);
        assert_eq!(b.footprint_pages(), 4);
        let mut a = parse(&name, 1).unwrap();
        assert_eq!(
            drain(a.as_mut(), Order::RoundRobin),
            drain(b.as_mut(), Order::RoundRobin)
        );
    }

    #[test]
    fn large_trace_streams_in_chunks_and_threads_get_their_blocks() {
        // 20,000 accesses: page i % 3000, every 7th a write, with 0x-hex and decimal lines.
        let n = 20_000u64;
        let all: Vec<(u64, bool)> = (0..n).map(|i| (i % 3000, i % 7 == 0)).collect();
        let mut text = String::new();
        for (i, (p, w)) in all.iter().enumerate() {
            let page = if i % 2 == 0 {
                format!("{p}")
            } else {
                format!("{p:#x}")
            };
            text.push_str(&page);
            text.push_str(if *w { " W\n" } else { "\n" });
        }
        let path = tmp("big.txt", &text);
        // One thread: every access in order, in calls of at most CHUNK_OPS ops.
        let mut w = parse(&format!("trace:path={path}"), 0).unwrap();
        assert_eq!(w.footprint_pages(), 3000);
        let mut buf = Vec::new();
        let mut got = Vec::new();
        loop {
            buf.clear();
            w.next_ops(0, &mut buf).unwrap();
            if buf.is_empty() {
                break;
            }
            assert!(buf.len() <= CHUNK_OPS);
            got.extend_from_slice(&buf);
        }
        assert_eq!(acc(&got), all);
        // Three threads: accesses [k*4096, (k+1)*4096) go to thread k % 3.
        let spec = format!("trace:path={path},threads=3,compute_ns=1");
        let w = parse(&spec, 0).unwrap();
        assert_eq!(w.threads(), 3);
        assert_eq!(w.footprint_pages(), 3000);
        for order in [Order::RoundRobin, Order::ReverseSerial, Order::Shuffled(5)] {
            let mut w = parse(&spec, 0).unwrap();
            let s = drain(w.as_mut(), order);
            for (t, st) in s.iter().enumerate() {
                let want: Vec<(u64, bool)> = all
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| (*i as u64 / 4096) % 3 == t as u64)
                    .map(|(_, a)| *a)
                    .collect();
                assert_eq!(acc(st), want, "thread {t}, {order:?}");
                assert_eq!(compute_ns(st), want.len() as u64);
            }
        }
    }

    #[test]
    fn other_formats_and_addresses() {
        // The same accesses as a native trace (format detected) and as byte addresses.
        let native = tmp("small.vmt", "");
        let mut wr = create(&native, TraceFormat::Native, &TraceMeta::default()).unwrap();
        let accesses: Vec<Access> = SMALL_ACCESSES
            .iter()
            .map(|&(page, write)| Access {
                page,
                write,
                gup: false,
            })
            .collect();
        wr.write(&accesses).unwrap();
        wr.finish().unwrap();
        let mut w = parse(&format!("trace:path={native}"), 0).unwrap();
        assert!(w.name().contains(",format=native,"), "{}", w.name());
        assert_eq!(w.footprint_pages(), 4);
        assert_eq!(
            acc(&drain(w.as_mut(), Order::RoundRobin)[0]),
            SMALL_ACCESSES
        );
        // Addresses 0x5000, 0x5fff (page 5), 0x10000 (page 16) with 4 KiB pages; with 8 KiB
        // pages 0x5000 and 0x5fff are page 2 and 0x10000 page 8.
        let path = tmp("addr.txt", "0x5000\n0x5fff W\n0x10000\n");
        let mut w = parse(&format!("trace:path={path},addresses=1"), 0).unwrap();
        assert_eq!(w.footprint_pages(), 2);
        assert_eq!(
            acc(&drain(w.as_mut(), Order::RoundRobin)[0]),
            vec![(5, false), (5, true), (16, false)]
        );
        let mut w = parse(&format!("trace:path={path},addresses=1,page_size=8192"), 0).unwrap();
        assert_eq!(
            acc(&drain(w.as_mut(), Order::RoundRobin)[0]),
            vec![(2, false), (2, true), (8, false)]
        );
        assert!(w.name().contains(",page_size=8192,addresses=1,"));
    }

    #[test]
    fn runs_on_the_timed_machine_with_sparse_and_huge_page_numbers() {
        use crate::engine::MachineConfig;
        use crate::policy::{PolicyKind, PolicyOptions};
        use crate::timed::{run, TimedConfig, TimedSpec};
        // 40 distinct pages: 20 near the top of a 48-bit user address space (0x7fff_f000_0000
        // bytes = page 0x7_ffff_0000) and 20 ids far beyond 2^36 (as object-id traces have),
        // each touched twice: 80 accesses, the second round all hits when everything fits.
        let pages: Vec<u64> = (0..20u64)
            .map(|i| 0x7_ffff_0000 + 3 * i)
            .chain((0..20u64).map(|i| 0xdead_beef_0000_0000 + (i << 20)))
            .collect();
        let mut text = String::new();
        for round in 0..2 {
            for p in &pages {
                text.push_str(&format!("{p:#x}{}\n", if round == 0 { " W" } else { "" }));
            }
        }
        let path = tmp("sparse.txt", &text);
        let spec = |frames: u32| TimedSpec {
            policy: PolicyKind::from_name("clock-lru").unwrap(),
            machine: MachineConfig::new(frames),
            options: PolicyOptions::new(1),
            timed: TimedConfig::default(),
        };
        let mut w = parse(&format!("trace:path={path}"), 0).unwrap();
        assert_eq!(w.footprint_pages(), 40);
        let r = run(&spec(1000), &mut *w, None).unwrap();
        assert_eq!(r.footprint_pages, 40);
        assert_eq!((r.stats.accesses, r.stats.writes), (80, 40));
        assert_eq!((r.stats.first_touch, r.stats.faults), (40, 40));
        assert_eq!(r.stats.major_faults, 0);
        // Under pressure (16 frames for 40 pages) the second round swaps pages back in.
        let mut w = parse(&format!("trace:path={path}"), 0).unwrap();
        let r = run(&spec(16), &mut *w, None).unwrap();
        assert_eq!((r.stats.accesses, r.stats.first_touch), (80, 40));
        assert!(r.stats.major_faults > 0, "{:?}", r.stats);
    }

    #[test]
    fn errors_name_the_key() {
        let good = tmp("good.txt", SMALL);
        let bad_line = tmp("bad.txt", "1\n2\nbanana\n");
        let empty = tmp("empty.txt", "# nothing\n");
        let missing = std::env::temp_dir()
            .join("vmemsim-workload-trace-does-not-exist.txt")
            .to_string_lossy()
            .into_owned();
        let e = |s: &str| parse(s, 0).err().unwrap().to_string();
        assert_eq!(
            e("trace"),
            "trace.path: missing: give path=FILE (a text, csv, oracle-general or native trace)"
        );
        assert!(
            e(&format!("trace:path={missing}")).starts_with(&format!("trace.path: {missing}: "))
        );
        assert!(e(&format!("trace:path={missing},format=text")).starts_with("trace.path: "));
        let b = e(&format!("trace:path={bad_line}"));
        assert!(
            b.starts_with(&format!("trace.path: {bad_line}: line 3")),
            "{b}"
        );
        assert_eq!(
            e(&format!("trace:path={empty}")),
            format!("trace.path: {empty}: the trace holds no accesses")
        );
        assert_eq!(
            e(&format!("trace:path={good},format=parquet")),
            "trace.format: unknown trace format 'parquet'; valid: text, csv, oracle-general, native"
        );
        assert_eq!(
            e(&format!("trace:path={good},speed=2")),
            "trace.speed: unknown key for trace (valid: path, format, page_size, addresses, compute_ns, class, threads, seed)"
        );
        assert_eq!(
            e(&format!("trace:path={good},class=blue")),
            "trace.class: 'blue' is not one of zero, text, numeric, random, sparse"
        );
        assert_eq!(
            e(&format!("trace:path={good},page_size=3000")),
            "trace.page_size: 3000 is not a power of two"
        );
        assert_eq!(
            e(&format!("trace:path={good},addresses=yes")),
            "trace.addresses: 'yes' is not one of 0, 1"
        );
        assert_eq!(
            e(&format!("trace:path={good},threads=0")),
            "trace.threads: 0 is outside [1, 64]"
        );
        assert_eq!(
            e(&format!("trace:path={good},compute_ns=5000000000")),
            "trace.compute_ns: 5000000000 is outside [0, 4294967295]"
        );
        assert_eq!(
            e(&format!("trace:path={good},format=native,addresses=1")),
            "trace.addresses: native traces hold page numbers; addresses=1 does not apply"
        );
        // Too many distinct pages: refused once counting passes the limit (3 here).
        let msg = TraceWorkload::parse_limited(&format!("path={good}"), 0, 3)
            .err()
            .unwrap()
            .to_string();
        assert!(
            msg.starts_with(&format!("trace.path: {good}: more than 3 distinct pages")),
            "{msg}"
        );
        assert!(TraceWorkload::parse_limited(&format!("path={good}"), 0, 4).is_ok());
        let mut w = parse(&format!("trace:path={good}"), 0).unwrap();
        assert_eq!(
            w.next_ops(1, &mut Vec::new()).err().unwrap().to_string(),
            "workload.tid: trace: thread 1 does not exist (threads: 1)"
        );
    }
}

//! `mapreduce-like`: the word count of Metis, MIT's MapReduce library for multicores (seed
//! 004, VSwapper §5.2, Fig. 14: "the word-count application, which uses a 300MB file holding
//! 1M keys. The memory consumption of Metis is large, as it holds large tables in memory,
//! amounting to roughly 1GB"; each guest has 2 vCPUs and 2 GB, and the guests start the
//! benchmark ten seconds apart).
//!
//! ```text
//! mapreduce-like:bytes=300MiB,threads=2,keys=1000000,zipf=1,table_bytes=1GiB,bs=1MiB,
//!                word_bytes=6,words_per_access=16,map_ns=50,reduce_ns=100,merge_ns=50,
//!                start_ns=0,seed=S
//! ```
//!
//! # The model
//!
//! `threads` workers, one stream (vCPU) each, all in process 0. Every stream first idles
//! until `start_ns` (`Op::Arrive { at_ns: start_ns }`, its first op: idle time, not CPU
//! work), so that guests started one after another are one spec each with its own
//! `start_ns`. Then:
//!
//! 1. Table: Metis sizes its per-worker hash tables up front from a sample of the input;
//!    worker `t` writes its table's pages (`table_bytes / threads`, rounded up to pages) once
//!    in order, [`INIT_NS`] each, which makes the table resident as the paper reports.
//! 2. Map: worker `t` reads its share of the input file (bytes `split(bytes, threads, t)`,
//!    word boundaries ignored) with `read()` calls of `bs` bytes into its buffer (Metis can
//!    also `mmap` the input; `read` is chosen here so that the input goes through the page
//!    cache as file I/O), then tokenises it page by page: the buffer page read, `map_ns` of
//!    CPU per word, and one insert into the table per `words_per_access` words. A word is
//!    `word_bytes` bytes (with its separator): the input holds `floor(bytes / word_bytes)`
//!    words, word `i` ending at byte `(i + 1) × word_bytes`, and an insert is made at every
//!    word whose global index is a multiple of `words_per_access` (`floor(words /
//!    words_per_access)` inserts in all). An insert draws a key from a Zipf distribution of
//!    skew `zipf` over `keys` keys and writes the page of the worker's table that holds the
//!    key's bucket (a hash of the key, the same in every worker's table). One insert stands
//!    for `words_per_access` words, so that the op count per input page stays bounded
//!    (`4096 / (word_bytes × words_per_access)`, 42 with the defaults).
//! 3. Barrier. Reduce: worker `r` owns the `r`-th share of the buckets (table pages
//!    `split(table_pages, threads, r)`) and reads them, bucket page by bucket page, from every
//!    worker's table (Metis's reduce partitions are columns of the map workers' tables), so
//!    each table page is read once. It emits its share of the keys, `split(keys, threads,
//!    r)` (key, count) pairs of [`PAIR_BYTES`], in order into the results array (its
//!    partition of one array of `keys` pairs), `reduce_ns` of CPU per pair, spread over its
//!    bucket pages.
//! 4. Merge: Metis's merge sort of the reduced pairs, `ceil(log2 threads)` passes with a
//!    barrier between them; in pass `p` (from 1) worker `t` with `t mod 2^p = 0` merges
//!    partitions `t .. t + 2^p` (the others wait): a sequential read of their pairs in one
//!    array and a sequential write of them in the other (the results array and a second
//!    array of the same size, alternately), `merge_ns` of CPU per pair.
//!
//! Memory: each worker's buffer (`bs`), then the workers' tables, the results array and the
//! merge array (only with a merge pass), anonymous pages of process 0 from page 0 up.
//! [`Workload::footprint_pages`] counts the pages touched: buffers (each the largest read
//! of its worker), tables, the arrays, and the input file's pages.
//!
//! # Runtime of a delayed start
//!
//! `start_ns` is counted from the start of the run: the result's runtime is `start_ns` plus
//! the benchmark's own time (the streams idle until then; with a balloon manager or other
//! VMs their memory may be taken meanwhile). The benchmark's own runtime is the run's (or,
//! among several VMs, that VM's) `runtime_ns − start_ns`.
//!
//! # Estimates and left out
//!
//! `word_bytes` 6 (English text: ~4.7 letters and a separator), `zipf` 1.0, `map_ns` 50
//! (tokenising, hashing and a table insert per word), `reduce_ns` 100, `merge_ns` 50 per
//! pair, and the table's size (the paper's ~1 GB over all workers, which includes Metis's
//! preallocated rows and per-key value arrays) are estimates. Left out: the input split at
//! word boundaries, Metis's sampling pass, the per-key value lists' growth (word count
//! combines into one count per key), keys absent from a worker's table (every worker's
//! table is written whole), the reduce's exact share of keys (each worker emits an equal
//! share), the final output, Metis's own threads' stacks; content classes (all numeric).

use rand_xoshiro::Xoshiro256PlusPlus;

use super::common::{
    derive, pages_of, push_file_op, split, stream, Emitter, CHUNK_OPS, PAGE_BYTES,
};
use super::params::{fmt_size, Params};
use super::{bad_tid, Op, Workload};
use crate::error::Result;
use crate::generate::Zipf;
use crate::mm::FileSpec;
use crate::trace::recorded::{FileIo, FileOp};

const TAG: u64 = 0x4D45_5449;
const TAG_KEY: u64 = 0x4D45_544B;
const KEYS: &[&str] = &[
    "bytes",
    "threads",
    "keys",
    "zipf",
    "table_bytes",
    "bs",
    "word_bytes",
    "words_per_access",
    "map_ns",
    "reduce_ns",
    "merge_ns",
    "start_ns",
    "seed",
];

/// Bytes of a reduced (key, count) pair: a key pointer and a count.
pub const PAIR_BYTES: u64 = 16;
/// CPU per table page written when the table is set up (4 KiB of stores, as `dd-like`'s
/// `ANON_WRITE_NS`).
pub const INIT_NS: u64 = 400;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Arrive,
    Init,
    Map,
    Reduce,
    /// Merge pass (from 1).
    Merge(u32),
    Done,
}

struct Worker {
    em: Emitter,
    rng: Xoshiro256PlusPlus,
    phase: Phase,
    /// Position in the phase: table page (init), bucket page (reduce), byte (map: the
    /// current read's start; merge: the next byte of the range).
    i: u64,
    /// Map: the current read's page being tokenised (`None`: the read is still to make).
    page: Option<u64>,
    /// Reduce: pairs emitted so far.
    emitted: u64,
    ios: Vec<FileIo>,
}

/// The Metis word-count model (module docs).
pub struct MapreduceLike {
    bytes: u64,
    threads: u64,
    keys: u64,
    zipf_s: f64,
    table_bytes: u64,
    bs: u64,
    word_bytes: u64,
    words_per_access: u64,
    map_ns: u64,
    reduce_ns: u64,
    merge_ns: u64,
    start_ns: u64,
    seed: u64,
    zipf: Zipf,
    state: Vec<Worker>,
}

impl MapreduceLike {
    pub(crate) fn parse(text: &str, run_seed: u64) -> Result<MapreduceLike> {
        let p = Params::parse("mapreduce-like", text, KEYS)?;
        let bytes = p.size("bytes")?.unwrap_or(300 << 20);
        if bytes == 0 || bytes > 1 << 42 {
            return Err(p.err("bytes", "must be 1 byte to 4 TiB"));
        }
        let threads = p.u64_in("threads", 2, 1, 256)?;
        let keys = p.u64_in("keys", 1_000_000, 1, 1 << 32)?;
        let table_bytes = p.size("table_bytes")?.unwrap_or(1 << 30);
        if table_bytes == 0 || table_bytes > 1 << 42 {
            return Err(p.err("table_bytes", "must be 1 byte to 4 TiB"));
        }
        let bs = p.size("bs")?.unwrap_or(1 << 20);
        if bs == 0 || bs > 0x7fff_f000 {
            return Err(p.err("bs", "must be 1 byte to 2 GiB - 4 KiB (MAX_RW_COUNT)"));
        }
        let zipf_s = p.f64_in("zipf", 1.0, 0.0, 5.0)?;
        let w = MapreduceLike {
            bytes,
            threads,
            keys,
            zipf_s,
            table_bytes,
            bs,
            word_bytes: p.u64_in("word_bytes", 6, 1, 1 << 20)?,
            words_per_access: p.u64_in("words_per_access", 16, 1, 1 << 32)?,
            map_ns: p.u64_in("map_ns", 50, 0, 1 << 32)?,
            reduce_ns: p.u64_in("reduce_ns", 100, 0, 1 << 32)?,
            merge_ns: p.u64_in("merge_ns", 50, 0, 1 << 32)?,
            start_ns: p.u64_in("start_ns", 0, 0, 1 << 50)?,
            seed: p.seed(run_seed)?,
            zipf: Zipf::new(keys, zipf_s),
            state: Vec::new(),
        };
        Ok(w.reset())
    }

    fn reset(mut self) -> Self {
        self.state = (0..self.threads)
            .map(|t| Worker {
                em: Emitter::default(),
                rng: stream(self.seed, TAG, t),
                phase: Phase::Arrive,
                i: 0,
                page: None,
                emitted: 0,
                ios: Vec::new(),
            })
            .collect();
        self
    }

    /// Pages of each worker's table.
    pub fn table_pages(&self) -> u64 {
        pages_of(self.table_bytes.div_ceil(self.threads))
    }

    /// Merge passes: `ceil(log2 threads)`.
    pub fn merge_passes(&self) -> u32 {
        self.threads.next_power_of_two().trailing_zeros()
    }

    /// Words in the input up to byte `x`, and inserts made for them.
    fn words(&self, x: u64) -> u64 {
        x / self.word_bytes
    }
    fn inserts(&self, x: u64) -> u64 {
        self.words(x) / self.words_per_access
    }

    /// First pages: worker `t`'s buffer, the tables, the results array, the merge array.
    fn buffer(&self, t: u64) -> u64 {
        t * pages_of(self.bs)
    }
    fn table(&self, t: u64) -> u64 {
        self.threads * pages_of(self.bs) + t * self.table_pages()
    }
    fn results(&self) -> u64 {
        self.table(self.threads)
    }
    fn array_pages(&self) -> u64 {
        pages_of(self.keys * PAIR_BYTES)
    }
    fn merge_array(&self) -> u64 {
        self.results() + self.array_pages()
    }
}

impl Workload for MapreduceLike {
    fn name(&self) -> String {
        format!(
            "mapreduce-like:bytes={},threads={},keys={},zipf={},table_bytes={},bs={},word_bytes={},words_per_access={},map_ns={},reduce_ns={},merge_ns={},start_ns={},seed={}",
            fmt_size(self.bytes),
            self.threads,
            self.keys,
            self.zipf_s,
            fmt_size(self.table_bytes),
            fmt_size(self.bs),
            self.word_bytes,
            self.words_per_access,
            self.map_ns,
            self.reduce_ns,
            self.merge_ns,
            self.start_ns,
            self.seed
        )
    }

    fn threads(&self) -> usize {
        self.threads as usize
    }

    fn footprint_pages(&self) -> u64 {
        let buffers: u64 = (0..self.threads)
            .map(|t| {
                let (lo, hi) = split(self.bytes, self.threads, t);
                pages_of(self.bs.min(hi - lo))
            })
            .sum();
        let arrays = self.array_pages() * if self.merge_passes() > 0 { 2 } else { 1 };
        buffers + self.threads * self.table_pages() + arrays + pages_of(self.bytes)
    }

    fn files(&self) -> Vec<FileSpec> {
        vec![FileSpec {
            id: 0,
            initial_size: self.bytes,
            extent: self.bytes,
        }]
    }

    fn file_io(&self, tid: usize, slot: u32) -> Option<&FileIo> {
        self.state.get(tid)?.ios.get(slot as usize)
    }

    fn next_ops(&mut self, tid: usize, buf: &mut Vec<Op>) -> Result<()> {
        if tid >= self.threads as usize {
            return Err(bad_tid("mapreduce-like", tid, self.threads as usize));
        }
        let t = tid as u64;
        self.state[tid].ios.clear();
        let start = buf.len();
        let tp = self.table_pages();
        let my_table = self.table(t);
        let (lo, hi) = split(self.bytes, self.threads, t);
        while buf.len() - start < CHUNK_OPS {
            let phase = self.state[tid].phase;
            match phase {
                Phase::Done => break,
                Phase::Arrive => {
                    let w = &mut self.state[tid];
                    w.em.split();
                    buf.push(Op::Arrive {
                        at_ns: self.start_ns,
                    });
                    w.phase = Phase::Init;
                    w.i = 0;
                }
                Phase::Init => {
                    let w = &mut self.state[tid];
                    if w.i == tp {
                        w.phase = Phase::Map;
                        w.i = lo;
                        w.page = None;
                        continue;
                    }
                    w.em.access(buf, my_table + w.i, true);
                    w.em.compute(INIT_NS);
                    w.i += 1;
                }
                Phase::Map => {
                    let at = self.state[tid].i;
                    if at >= hi {
                        let w = &mut self.state[tid];
                        w.em.barrier(buf);
                        w.phase = Phase::Reduce;
                        w.i = 0;
                        w.emitted = 0;
                        continue;
                    }
                    let len = self.bs.min(hi - at);
                    let buffer = self.buffer(t);
                    let Some(j) = self.state[tid].page else {
                        let w = &mut self.state[tid];
                        w.em.flush(buf);
                        w.em.split();
                        push_file_op(buf, &mut w.ios, FileOp::Read, 0, at, len);
                        for p in 0..pages_of(len) {
                            w.em.access(buf, buffer + p, true);
                        }
                        w.page = Some(0);
                        continue;
                    };
                    // Tokenise page j of the read: bytes [x, y) of the file.
                    let x = at + j * PAGE_BYTES;
                    let y = (x + PAGE_BYTES).min(at + len);
                    let words = self.words(y) - self.words(x);
                    let inserts = self.inserts(y) - self.inserts(x);
                    let w = &mut self.state[tid];
                    w.em.access(buf, buffer + j, false);
                    for _ in 0..inserts {
                        let key = self.zipf.sample(&mut w.rng) - 1;
                        let page = derive(self.seed, TAG_KEY, key) % tp;
                        // Each insert is its own burst (one op per `words_per_access` words).
                        w.em.split();
                        w.em.access(buf, my_table + page, true);
                    }
                    w.em.compute(words * self.map_ns);
                    if y == at + len {
                        w.i = y;
                        w.page = None;
                    } else {
                        w.page = Some(j + 1);
                    }
                }
                Phase::Reduce => {
                    let (plo, phi) = split(tp, self.threads, t);
                    let (k0, k1) = split(self.keys, self.threads, t);
                    let steps = (phi - plo).max(1);
                    let i = self.state[tid].i;
                    if i == steps {
                        let merge = self.merge_passes() > 0;
                        let w = &mut self.state[tid];
                        w.phase = if merge {
                            w.em.barrier(buf);
                            Phase::Merge(1)
                        } else {
                            w.em.flush(buf);
                            Phase::Done
                        };
                        w.i = 0;
                        continue;
                    }
                    let tables: Vec<u64> = (0..self.threads).map(|s| self.table(s)).collect();
                    let results = self.results() * PAGE_BYTES;
                    let w = &mut self.state[tid];
                    if phi > plo {
                        for base in tables {
                            w.em.access(buf, base + plo + i, false);
                        }
                    }
                    let upto = k0 + ((k1 - k0) as u128 * (i + 1) as u128 / steps as u128) as u64;
                    let from = k0 + w.emitted;
                    w.em.range(
                        buf,
                        results + from * PAIR_BYTES,
                        (upto - from) * PAIR_BYTES,
                        true,
                    );
                    w.em.compute((upto - from) * self.reduce_ns);
                    w.emitted = upto - k0;
                    w.i += 1;
                }
                Phase::Merge(p) => {
                    let g = 1u64 << p;
                    let last = p == self.merge_passes();
                    let next = |w: &mut Worker, buf: &mut Vec<Op>| {
                        if last {
                            w.em.flush(buf);
                            w.phase = Phase::Done;
                        } else {
                            w.em.barrier(buf);
                            w.phase = Phase::Merge(p + 1);
                        }
                        w.i = 0;
                    };
                    if !t.is_multiple_of(g) {
                        next(&mut self.state[tid], buf);
                        continue;
                    }
                    let end = (t + g).min(self.threads) - 1;
                    let b0 = split(self.keys, self.threads, t).0 * PAIR_BYTES;
                    let b1 = split(self.keys, self.threads, end).1 * PAIR_BYTES;
                    let (a, b) = (self.results() * PAGE_BYTES, self.merge_array() * PAGE_BYTES);
                    let (src, dst) = if p % 2 == 1 { (a, b) } else { (b, a) };
                    let w = &mut self.state[tid];
                    let x = b0.max(w.i);
                    if x >= b1 {
                        next(w, buf);
                        continue;
                    }
                    // Up to the next page boundary of the range.
                    let y = ((x / PAGE_BYTES + 1) * PAGE_BYTES).min(b1);
                    w.em.range(buf, src + x, y - x, false);
                    w.em.range(buf, dst + x, y - x, true);
                    w.em.compute((y - x) / PAIR_BYTES * self.merge_ns);
                    w.i = y;
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

    use crate::vm::workloads::testutil::drain_with_files as drain;

    fn compute(s: &[Op]) -> u64 {
        s.iter()
            .map(|o| match o {
                Op::Compute { ns } => *ns as u64,
                _ => 0,
            })
            .sum()
    }

    /// The accesses of a stream's phase `k` (0: before the first barrier, ...).
    fn accesses(s: &[Op], k: usize) -> Vec<(u64, bool)> {
        s.split(|o| *o == Op::Barrier)
            .nth(k)
            .unwrap_or(&[])
            .iter()
            .filter_map(|o| match o {
                Op::Access { page, write } => Some((*page, *write)),
                _ => None,
            })
            .collect()
    }

    const SPEC: &str = "mapreduce-like:bytes=64KiB,threads=2,keys=100,table_bytes=64KiB,bs=16KiB,word_bytes=8,words_per_access=4,map_ns=10,reduce_ns=100,merge_ns=50,start_ns=5000000";

    #[test]
    fn map_reduce_and_merge_by_hand() {
        // Layout: buffers of 4 pages (0..8), tables of pages_of(32 KiB) = 8 pages (8..16 and
        // 16..24), the results array (pages_of(100 × 16) = 1: page 24), the merge array (25).
        let mut w = parse(SPEC, 0).unwrap();
        assert_eq!(
            w.name(),
            "mapreduce-like:bytes=64KiB,threads=2,keys=100,zipf=1,table_bytes=64KiB,bs=16KiB,word_bytes=8,words_per_access=4,map_ns=10,reduce_ns=100,merge_ns=50,start_ns=5000000,seed=0"
        );
        let (ops, ios) = drain(w.as_mut());
        for (t, s) in ops.iter().enumerate() {
            // Every stream starts by idling until start_ns, and has two barriers.
            assert_eq!(s[0], Op::Arrive { at_ns: 5_000_000 }, "worker {t}");
            assert_eq!(s.iter().filter(|o| **o == Op::Barrier).count(), 2);
            let table = 8 + 8 * t as u64;
            let map = accesses(s, 0);
            // The table set up: its 8 pages written in order.
            let init: Vec<(u64, bool)> = (table..table + 8).map(|p| (p, true)).collect();
            assert_eq!(map[..8], init[..]);
            // 32 KiB of 8-byte words: 4096 words, an insert per 4: 1024 table writes, all
            // in the worker's own table; the rest are its buffer's pages.
            let inserts = map[8..].iter().filter(|a| a.0 >= 8).count();
            assert_eq!(inserts, 1024, "worker {t}");
            assert!(map[8..]
                .iter()
                .all(|&(p, wr)| (p >= table && p < table + 8 && wr) || p < 8));
        }
        // Reads of 16 KiB: worker 0 the first half of the file, worker 1 the second.
        let reads =
            |t: usize| -> Vec<(u64, u64)> { ios[t].iter().map(|x| (x.offset, x.len)).collect() };
        assert_eq!(reads(0), [(0, 16384), (16384, 16384)]);
        assert_eq!(reads(1), [(32768, 16384), (49152, 16384)]);
        // Reduce: worker 0 reads bucket pages 0..4 of both tables, worker 1 pages 4..8:
        // every table page once; each writes its 50 pairs (800 bytes) into page 24.
        let r0 = accesses(&ops[0], 1);
        let r1 = accesses(&ops[1], 1);
        let reads0: Vec<u64> = r0.iter().filter(|a| !a.1).map(|a| a.0).collect();
        let reads1: Vec<u64> = r1.iter().filter(|a| !a.1).map(|a| a.0).collect();
        assert_eq!(reads0, [8, 16, 9, 17, 10, 18, 11, 19]);
        assert_eq!(reads1, [12, 20, 13, 21, 14, 22, 15, 23]);
        assert!(r0.iter().chain(&r1).filter(|a| a.1).all(|a| a.0 == 24));
        // One merge pass (ceil(log2 2)): worker 0 reads the results, writes the merge array.
        assert_eq!(accesses(&ops[0], 2), [(24, false), (25, true)]);
        assert!(accesses(&ops[1], 2).is_empty());
        // CPU: 16 table pages × 400, 8192 words × 10, 100 pairs × 100 reduced and × 50
        // merged.
        let cpu: u64 = ops.iter().map(|s| compute(s)).sum();
        assert_eq!(cpu, 16 * 400 + 8192 * 10 + 100 * 100 + 100 * 50);
        // Buffers 8, tables 16, the two arrays 2, the input's 16 pages.
        assert_eq!(w.footprint_pages(), 8 + 16 + 2 + 16);
        assert_eq!(w.files()[0].initial_size, 64 << 10);
    }

    #[test]
    fn inserts_telescope_over_workers_and_merge_passes_follow_log2() {
        // 100,000 bytes of 6-byte words (16,666) with an insert per 16: 1,041 in all,
        // however the bytes are split (3 workers: 33,333, 33,333 and 33,334 bytes).
        let mut w = parse(
            "mapreduce-like:bytes=100000,threads=3,keys=50,table_bytes=48KiB,bs=8KiB",
            0,
        )
        .unwrap();
        let (ops, _) = drain(w.as_mut());
        let tables = 3 * 2; // buffers: 3 × 2 pages; tables of 4 pages from page 6
        let inserts: usize = ops
            .iter()
            .map(|s| {
                accesses(s, 0)
                    .iter()
                    .skip(4)
                    .filter(|a| a.0 >= tables)
                    .count()
            })
            .sum();
        assert_eq!(inserts, 1_041);
        // ceil(log2 3) = 2 passes: 3 barriers each; in pass 2 worker 0 merges all 50 pairs
        // (800 bytes) back from the merge array (page 19) into the results (page 18).
        assert!(ops
            .iter()
            .all(|s| s.iter().filter(|o| **o == Op::Barrier).count() == 3));
        assert_eq!(accesses(&ops[0], 3), [(19, false), (18, true)]);
        // One worker: no merge, no merge array.
        let w1 = parse(
            "mapreduce-like:bytes=64KiB,threads=1,keys=100,table_bytes=64KiB,bs=16KiB",
            0,
        )
        .unwrap();
        assert_eq!(w1.footprint_pages(), 4 + 16 + 1 + 16);
    }

    #[test]
    fn bad_keys_are_named() {
        for (spec, key) in [
            ("mapreduce-like:threads=0", "mapreduce-like.threads:"),
            ("mapreduce-like:maps=2", "mapreduce-like.maps:"),
            ("mapreduce-like:zipf=x", "mapreduce-like.zipf:"),
            (
                "mapreduce-like:table_bytes=1GB",
                "mapreduce-like.table_bytes:",
            ),
            ("mapreduce-like:start_ns=-1", "mapreduce-like.start_ns:"),
            ("mapreduce-like:keys=0", "mapreduce-like.keys:"),
        ] {
            let e = parse(spec, 0).err().unwrap().to_string();
            assert!(e.starts_with(key), "{spec}: {e}");
        }
    }

    #[test]
    fn a_delayed_start_idles_then_runs_the_same_benchmark() {
        // Two vCPUs, 1 MiB of words into 4 MiB of tables, in a guest with room for it. The
        // run started 10 ms late idles 10 ms on each vCPU first and then does the same work:
        // its runtime is at least 10 ms plus each worker's own CPU, and, in a VM alone with
        // memory for the whole run, exactly 10 ms more than the run started at 0.
        use crate::vm::{run, Paging, VmConfig};
        let spec = "mapreduce-like:bytes=1MiB,threads=2,keys=1000,table_bytes=4MiB,bs=64KiB";
        let go = |start: u64| {
            let mut w =
                crate::vm::workloads::parse(&format!("{spec},start_ns={start}"), 3).unwrap();
            let fp = w.footprint_pages() as u32;
            let c = VmConfig::new(Paging::Tdp, fp + 512, 2 * fp + 1024);
            run(&c, w.as_mut()).unwrap()
        };
        let (r0, r1) = (go(0), go(10_000_000));
        // CPU: 1024 table pages (512 a worker) × 400, 1 MiB / 6 = 174,762 words × 50, 1000 pairs × 100
        // reduced and × 50 merged; a worker maps half the words.
        let cpu = 1024 * 400 + 174_762 * 50 + 1000 * 100 + 1000 * 50;
        assert_eq!(r0.time.compute_ns, cpu);
        assert_eq!(r1.time.compute_ns, cpu);
        assert!(r1.runtime_ns >= 10_000_000 + 512 * 400 + 87_381 * 50);
        assert!(r1.time.idle_ns >= r0.time.idle_ns + 2 * 10_000_000);
        assert_eq!(r1.runtime_ns, r0.runtime_ns + 10_000_000);
    }
}

//! Workload models: seeded generators of the multi-threaded page-access streams of one
//! process (one address space of 4 KiB pages shared by all its threads), for the timing
//! engine. They model the three workloads of the MG-LRU characterization (seed 001, §IV:
//! TPC-H on Spark-SQL with 12 threads, GAP PageRank with 12 threads, YCSB A/B/C on memcached
//! with its 4 server threads, footprints of 12–16 GiB) and let users compose their own.
//!
//! # Ops
//!
//! A thread's stream is a sequence of [`Op`]s: `Access` (a burst of references to one page;
//! consecutive references to the same page are merged), `Compute` (CPU time between
//! accesses; the models' per-row, per-edge and per-request costs are estimates, listed with
//! each model), `RequestBegin`/`RequestEnd` around each key-value request (its latency is
//! measured between them) and `Barrier` (wait for every thread of the workload). Programs
//! with several processes or open-loop arrivals (the models of [`crate::vm::workloads`])
//! also emit `Spawn`, `Switch`, `Exit`, `Unmap` and `Arrive`.
//!
//! One [`Workload`] interface serves every model, and every model runs on the one machine
//! natively (`vmemsim run`, a thread per stream on host CPUs) or in a VM (`vmemsim vm`, a
//! vCPU per stream): the machine ([`crate::vm::machine`]) executes the same ops either way.
//!
//! # Determinism
//!
//! A workload is a pure function of (spec, seed). Each thread draws from its own random
//! stream derived from the seed and its thread id; anything shared (table layouts, the
//! graph, the hash of each key) is fixed up front from the seed or computed from it on
//! demand, so a thread's ops do not depend on the order in which threads are polled.
//! Generating keeps per-thread state only; no model materialises its stream.
//!
//! # Spec grammar
//!
//! ```text
//! spec   := kind [ ':' params ]            tpch-like, pagerank, ycsb-a, ycsb-b, ycsb-c, trace
//!         | 'custom' ':' '(' gen ')' ( '+' '(' gen ')' )* [ ',' params ]
//! params := key '=' value ( ',' key '=' value )*
//! ```
//!
//! Numbers are decimal (underscores allowed, `1e6` accepted where exact); sizes take `KiB`,
//! `MiB`, `GiB` or `TiB`. Every kind takes `seed` (default: the run's seed). Unknown,
//! repeated or malformed keys are errors naming the key as `kind.key`. [`Workload::name`]
//! returns the canonical spec with every key resolved, which re-runs the same streams.
//!
//! | kind        | keys (default)                                                            |
//! |-------------|---------------------------------------------------------------------------|
//! | `tpch-like` | `footprint` (128MiB) or `sf`; `threads` (12), `queries` (1/3/6/12/14/18), |
//! |             | `rounds` (1), `batch` (10000), `scan_ns` (300), `row_ns` (40), `load_ns` (5000) |
//! | `pagerank`  | `scale` (19) or `footprint`; `edge_factor` (16), `iterations` (5),        |
//! |             | `threads` (12), `chunk` (0 = contiguous blocks), `edge_ns` (5), `vertex_ns` (10) |
//! | `ycsb-a/b/c`| `footprint` (128MiB) or `records`; `requests` (10 × records), `threads` (4), |
//! |             | `readproportion` (0.5 / 0.95 / 1), `zipfian` (0.99), `fieldcount` (10),   |
//! |             | `fieldlength` (100), `fieldlengthdistribution` (constant), `parse_ns` (2000), `reply_ns` (3000) |
//! | `custom`    | `threads` (1), `split` (partition), `compute_ns` (0), `class` (numeric), `repeat` (1) |
//! | `trace`     | `path` (required), `format` (detected), `page_size` (4096), `addresses` (0), |
//! |             | `compute_ns` (0), `class` (numeric), `threads` (1: blocks of 4096 accesses dealt round-robin) |
//! | `dd-like`   | `bytes` (256MiB), `bs` (1MiB), `op` (read), `passes` (1), `fsync` (0)     |
//! | `fileio`    | `bytes` (256MiB), `files` (1), `bs` (16KiB), `pattern` (seq), `op` (read), `ops` (one pass), |
//! |             | `threads` (1), `fsync_every` (0), `write_share` (0.3), `compute_ns` (0)   |
//! | `gzip-like` | `bytes` (64MiB), `bs` (32KiB), `ratio` (0.35), `ns_per_kib` (25000)       |
//! | `pbzip2-like` | `bytes` (512MiB), `bs` (900000), `threads` (8), `vcpus` (1), `ratio` (0.2), `ns_per_kib` (100000) |
//! | `mapreduce-like` | `bytes` (300MiB), `threads` (2), `keys` (1000000), `zipf` (1), `table_bytes` (1GiB), `bs` (1MiB), |
//! |             | `word_bytes` (6), `words_per_access` (16), `map_ns` (50), `reduce_ns` (100), `merge_ns` (50), `start_ns` (0) |
//!
//! The models, their layouts and what they leave out are documented in [`tpch`],
//! [`pagerank`], [`ycsb`], [`custom`], [`fileio`], [`pbzip2`] (VSwapper's §5.1 pbzip2) and
//! [`mapreduce`] (VSwapper's §5.2 Metis word count); [`trace`] replays a trace file (text, csv,
//! oracle-general or native) as the workload, one `Access` per access of the file.
//!
//! ## Composing a workload
//!
//! `custom` runs phases one after the other, with a barrier between phases; each phase is a
//! generator spec of [`crate::generate`] (`uniform`, `zipf`, `scan`, `loop`, `hotcold`, `mix`,
//! `seq`, each with its `n`) that every thread runs with its own seed. With `split=partition`
//! thread `t` works on its own copy of the phase's page range, shifted by `t` times the
//! range's extent; with `split=shared` all threads work on the same pages. For example, four
//! threads that each load their 16 MiB partition, then read it with Zipf popularity while
//! updating 30% of what they touch, with 200 ns of work per access:
//!
//! ```text
//! custom:(scan:pages=4096,write=1)+(zipf:pages=4096,alpha=0.9,n=200000,write=0.3),threads=4,compute_ns=200
//! ```

pub mod common;
pub mod custom;
pub mod fileio;
pub mod mapreduce;
pub mod pagerank;
pub(crate) mod params;
pub mod pbzip2;
pub mod tpch;
pub mod trace;
pub mod ycsb;

use crate::device::ContentClass;
use crate::error::{Error, Result};

/// One step of a thread's stream.
///
/// Addresses are 4 KiB page numbers of the process the thread runs at that moment (set by
/// [`Op::Switch`]; every thread starts in process 0). The process models use one process
/// and page numbers from 0 up; the guest program models use the x86-64 user layout (see
/// [`crate::vm::workloads`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A burst of references to one 4 KiB page.
    Access { page: u64, write: bool },
    /// CPU work without new page references.
    Compute { ns: u32 },
    /// A key-value request starts ([`REQ_READ`], [`REQ_UPDATE`], [`REQ_INSERT`]).
    RequestBegin { kind: u8 },
    /// ...and ends: its latency is measured between the two.
    RequestEnd,
    /// Wait until every thread of the workload reaches it.
    Barrier,
    /// Open-loop arrival: the next request of this stream arrives at simulated time `at_ns`,
    /// counted from the stream's last `Barrier` (or the start of the run), so that a load
    /// phase before the barrier does not delay the arrivals. A thread that reaches this op
    /// earlier idles until then; one that reaches it later has a backlog, and the request's
    /// latency, measured from `at_ns` to its `RequestEnd`, includes the wait.
    Arrive { at_ns: u64 },
    /// Create process `pid` (`fork`): a new address space, empty (copy-on-write sharing with
    /// the parent is left out; a forked child that touches memory faults it in anew).
    Spawn { pid: u32 },
    /// Run process `pid` on this thread's CPU from here on: a context switch with a CR3 load
    /// (`switch_mm_irqs_off`; with PCID the TLB entries of `pid` survive).
    Switch { pid: u32 },
    /// Process `pid` exits (`exit_mmap`): its pages and page tables are freed, its PCID's TLB
    /// entries die.
    Exit { pid: u32 },
    /// `munmap` of `pages` pages from `start` in the current process (`u32`, so that an op
    /// stays 16 bytes: op buffers are the engine's largest stream of memory traffic): the
    /// pages are freed and
    /// the TLB entries shot down (`flush_tlb_mm_range`: INVLPG per page up to
    /// `tlb_single_page_flush_ceiling` = 33 pages, a full flush beyond), empty page-table pages
    /// freed (`free_pgtables`).
    Unmap { start: u64, pages: u32 },
    /// A file I/O call (`read`, `pwrite64`, `fsync`, ...) through the page cache: the
    /// record is [`Workload::file_io`]`(thread, slot)`, valid until the thread's next
    /// [`Workload::next_ops`] (kept beside the ops so that an op stays 16 bytes).
    File { slot: u32 },
}

impl Op {
    /// A process or arrival event: it ends merging of references (the same page number in
    /// another process, or after an unmap, is another page).
    pub fn is_event(&self) -> bool {
        matches!(
            self,
            Op::Arrive { .. }
                | Op::Spawn { .. }
                | Op::Switch { .. }
                | Op::Exit { .. }
                | Op::Unmap { .. }
        )
    }
}

/// Request kinds of `RequestBegin`.
pub const REQ_READ: u8 = 0;
pub const REQ_UPDATE: u8 = 1;
pub const REQ_INSERT: u8 = 2;

/// A seeded generator of per-thread op streams: one process's threads (the process models)
/// or a guest program's processes placed on vCPUs (the models of [`crate::vm::workloads`]).
pub trait Workload: Send {
    /// Canonical spec including the seed, to re-run.
    fn name(&self) -> String;
    /// Streams the workload drives (0..threads): threads natively, vCPUs in a VM.
    fn threads(&self) -> usize;
    /// Distinct pages the workload touches (exact for the built-in models; an upper bound
    /// for `custom`; for programs whose processes come and go, the peak of (process, page)
    /// pairs live at once): sizes memory for `50%`-style settings.
    fn footprint_pages(&self) -> u64;
    /// How well page `page` of process `pid` compresses (zram's compressed sizes). Default:
    /// numeric data, for models without a content model.
    fn content_class(&self, _pid: u32, _page: u64) -> ContentClass {
        ContentClass::Numeric
    }
    /// Append thread `tid`'s next ops to `buf` (the caller clears it); appending nothing
    /// means the thread is finished. Ops come in chunks of a few thousand.
    fn next_ops(&mut self, tid: usize, buf: &mut Vec<Op>) -> Result<()>;
    /// The files the workload's [`Op::File`] records use, declared before the run (their
    /// sizes at the start and the furthest byte any record reaches). Default: none.
    fn files(&self) -> Vec<crate::mm::FileSpec> {
        Vec::new()
    }
    /// The file I/O record of thread `tid`'s [`Op::File`] `slot` in the ops the last
    /// [`Workload::next_ops`] gave it. Default: none (a workload without file I/O).
    fn file_io(&self, _tid: usize, _slot: u32) -> Option<&crate::trace::recorded::FileIo> {
        None
    }
}

/// Every workload kind with a one-line description (for help texts).
pub const KINDS: &[(&str, &str)] = &[
    ("tpch-like", "Spark-SQL-style query stages over column tables: scans, hash joins, shuffles, aggregations"),
    ("pagerank", "GAP pull PageRank on an RMAT graph in CSR, iterations separated by barriers"),
    ("ycsb-a", "memcached-like slab KV store, zipfian 0.99 keys, 50% reads / 50% updates"),
    ("ycsb-b", "as ycsb-a with 95% reads / 5% updates"),
    ("ycsb-c", "as ycsb-a with reads only"),
    ("custom", "phases of generator specs run by every thread: custom:(spec)+(spec),threads=N"),
    ("trace", "a trace file replayed as one thread's accesses: trace:path=FILE"),
    ("dd-like", "dd: a sequential read (or write) of a file in large blocks"),
    ("fileio", "sysbench fileio: sequential or random reads/writes of files, several threads"),
    ("gzip-like", "gzip: a file read in chunks, compressed, the output appended to a new file"),
    ("pbzip2-like", "pbzip2: a file read in 900 kB blocks, each bzip2-compressed by one of N threads, written in order"),
    ("mapreduce-like", "Metis word count: workers read a file into per-worker hash tables, reduce, merge sort"),
];

/// Parse a workload spec (grammar in the module docs) with `seed` as the run's seed.
pub fn parse(spec: &str, seed: u64) -> Result<Box<dyn Workload>> {
    let spec = spec.trim();
    let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let kind = kind.trim().to_ascii_lowercase();
    match kind.as_str() {
        "tpch-like" => Ok(Box::new(tpch::TpchLike::parse(rest, seed)?)),
        "pagerank" => Ok(Box::new(pagerank::PageRank::parse(rest, seed)?)),
        "ycsb-a" | "ycsb-b" | "ycsb-c" => Ok(Box::new(ycsb::Ycsb::parse(&kind, rest, seed)?)),
        "custom" => Ok(Box::new(custom::Custom::parse(rest, seed)?)),
        "trace" => Ok(Box::new(trace::TraceWorkload::parse(rest, seed)?)),
        "dd-like" | "fileio" | "gzip-like" => {
            Ok(Box::new(fileio::FileWorkload::parse(&kind, rest, seed)?))
        }
        "pbzip2-like" => Ok(Box::new(pbzip2::Pbzip2Like::parse(rest, seed)?)),
        "mapreduce-like" => Ok(Box::new(mapreduce::MapreduceLike::parse(rest, seed)?)),
        _ => {
            let names: Vec<&str> = KINDS.iter().map(|k| k.0).collect();
            Err(Error::config(
                "workload",
                format!("unknown workload '{kind}'; valid: {}", names.join(", ")),
            ))
        }
    }
}

/// The error for a thread id out of range.
pub(crate) fn bad_tid(name: &str, tid: usize, threads: usize) -> Error {
    Error::config(
        "workload.tid",
        format!("{name}: thread {tid} does not exist (threads: {threads})"),
    )
}

#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_op_is_16_bytes() {
        // A page number and a tag: the op buffers every thread fills and the engine reads are
        // the simulator's largest stream of memory traffic (24-byte ops cost the timed
        // benchmark's small runs about 200 more page faults each).
        assert_eq!(std::mem::size_of::<Op>(), 16);
    }

    #[test]
    fn parse_dispatches_and_names_unknown_kinds() {
        let e = parse("graph500:scale=3", 0).err().unwrap().to_string();
        assert_eq!(
            e,
            "workload: unknown workload 'graph500'; valid: tpch-like, pagerank, ycsb-a, ycsb-b, ycsb-c, custom, trace, dd-like, fileio, gzip-like, pbzip2-like, mapreduce-like"
        );
        for (spec, threads) in [
            ("tpch-like:footprint=2MiB", 12),
            ("pagerank:scale=10", 12),
            ("ycsb-a:records=100,requests=10", 4),
            ("YCSB-C:records=100,requests=10", 4),
            ("custom:(scan:pages=8)", 1),
        ] {
            let mut w = parse(spec, 1).unwrap();
            assert_eq!(w.threads(), threads, "{spec}");
            let mut buf = Vec::new();
            assert!(
                w.next_ops(threads, &mut buf).is_err(),
                "{spec}: tid out of range"
            );
            w.next_ops(0, &mut buf).unwrap();
            assert!(!buf.is_empty(), "{spec}");
        }
        assert_eq!(
            parse("pagerank:scale=10", 0)
                .unwrap()
                .next_ops(12, &mut Vec::new())
                .err()
                .unwrap()
                .to_string(),
            "workload.tid: pagerank: thread 12 does not exist (threads: 12)"
        );
    }
}

//! Guest workload generators: seeded models of the programs the KVM experiments run inside a
//! VM (seed 000 used `stress-ng --vm` and `redis-benchmark`; the nested-paging talk of seed
//! 002 used kernbench and LMBench), as per-vCPU streams of [`Op`]s.
//!
//! # Spec grammar
//!
//! The grammar, number and size syntax and error style are those of
//! [`crate::workload::parse`]:
//!
//! ```text
//! spec   := kind [ ':' params ]       stress-vm, redis-like, kernbench-like, lmbench-like, jvm-like, trace
//! params := key '=' value ( ',' key '=' value )*
//! ```
//!
//! Every kind takes `seed` (default: the run's seed). Unknown, repeated or malformed keys are
//! errors naming the key as `kind.key`; [`Workload::name`] returns the canonical spec
//! with every key resolved, which re-runs the same streams.
//!
//! | kind             | keys (default)                                                        |
//! |------------------|-----------------------------------------------------------------------|
//! | `stress-vm`      | `vcpus` (4), `bytes` (256MiB over all workers), `rounds` (4), `method` (all), `read` (1), `write_ns` (400), `read_ns` (200), `hang_ns` (0) |
//! | `redis-like`     | `rps` (10000), `arrivals` (poisson), `vcpus` (1), `keys` (100000), `value_bytes` (1000), `get` (0.9), `dist` (zipfian), `zipf` (0.99), `requests` (100000) or `duration_s`, `start_ns` (0), `parse_ns` (3000), `reply_ns` (4000) |
//! | `kernbench-like` | `jobs` (64), `parallel` (4), `text_bytes` (8MiB), `data_bytes` (1MiB), `heap_bytes` (24MiB), `stack_bytes` (128KiB), `job_ns` (40000000), `reuse` (4) |
//! | `lmbench-like`   | `bench` (lat_mem_rd): `size`, `stride`, `order`, `passes` / `size`, `order`, `iterations` / `procs`, `size`, `rounds`, `hop_ns` |
//! | `jvm-like`       | `heap_bytes` (128MiB), `live_bytes` (32MiB), `alloc_bytes` (3GiB), `survive` (0.1), `perm_bytes` (40MiB), `code_bytes` (8MiB), `jvm_text_bytes` (12MiB), `stack_bytes` (1MiB), `old_refs` (4), `hot` (0.1), `hot_share` (0.9), `alloc_ns_per_kib` (4000), `scan_ns_per_page` (1000), `copy_ns_per_kib` (1000), `jar_bytes` (0), `vcpus` (1) |
//! | `trace`          | `path` (required), `vcpus` (1), `ns_per_insn` (0.3): a recorded program, see [`trace`] |
//! | `pbzip2-like`    | `bytes` (512MiB), `bs` (900000), `threads` (8), `vcpus` (1), `ratio` (0.2), `ns_per_kib` (100000): see [`crate::workload::pbzip2`] |
//! | `mapreduce-like` | `bytes` (300MiB), `threads` (2, one vCPU each), `keys` (1000000), `zipf` (1), `table_bytes` (1GiB), `bs` (1MiB), `word_bytes` (6), `words_per_access` (16), `map_ns` (50), `reduce_ns` (100), `merge_ns` (50), `start_ns` (0): see [`crate::workload::mapreduce`] |
//!
//! Each model's layout, costs and what it leaves out are documented in [`stress_vm`],
//! [`redis`], [`kernbench`], [`lmbench`] and [`jvm`].
//!
//! # Processes and addresses
//!
//! Pages are guest-virtual 4 KiB page numbers of the process a vCPU runs (every vCPU starts
//! in process 0, the program that starts the others: the stress-ng parent, make, the
//! benchmark harness). They follow the x86-64 user layout of a non-randomised (`setarch -R`)
//! process, so guest page tables have the shape of a real process's (separate subtrees for
//! text, heap, mmap area and stack): PIE text from [`TEXT_BASE`] (`ELF_ET_DYN_BASE`,
//! 0x5555_5555_4000), data and the `brk` heap after it, `mmap` regions top-down below
//! [`MMAP_BASE`] (0x7fff_f7ff_f000), the stack from [`STACK_TOP`] down (the page below
//! `TASK_SIZE` 0x7fff_ffff_f000).
//!
//! A process created by a stream is created by that stream ([`Op::Spawn`] then
//! [`Op::Switch`]); at its end the stream switches back to process 0 and then emits
//! [`Op::Exit`] (the parent reaps it), so no vCPU ever runs a process that has exited.
//! Pids are unique over the whole run.
//!
//! [`Workload::footprint_pages`] counts (process, page) pairs that are live at once at
//! most: for workloads whose processes all live to the end it is the number of distinct
//! pages touched; for `kernbench-like`, whose jobs come and go, it is the peak (`parallel`
//! jobs at a time), since that is what guest memory must hold; the total over all jobs is
//! [`kernbench::KernbenchLike::touched_pages`].
//!
//! # Determinism
//!
//! A workload is a pure function of (spec, seed). Each vCPU draws from its own random stream
//! derived from the seed and its index ([`crate::workload::common::stream`]), and vCPUs share
//! nothing that changes, so a vCPU's ops do not depend on the order in which vCPUs are polled.
//! References to one page in a row are merged and compute time is batched as in
//! [`crate::workload::common::Emitter`].

pub mod jvm;
pub mod kernbench;
pub mod lmbench;
pub mod redis;
pub mod stress_vm;
pub mod trace;

use crate::error::{Error, Result};
use crate::workload::common::Emitter;
use crate::workload::{Op, Workload};

/// Every guest workload kind with a one-line description (for help texts).
pub const KINDS: &[(&str, &str)] = &[
    ("stress-vm", "stress-ng --vm: N workers each mmap a region, write and read every page, munmap, repeat"),
    ("redis-like", "single-threaded key-value server driven open-loop at `rps` requests/s, GET/SET on a dict"),
    ("kernbench-like", "make -j N of cc1-like jobs: process spawn, text reads, heap growth, compute, exit"),
    ("lmbench-like", "LMBench lat_mem_rd (strided reads), lat_pagefault (first-touch faults), lat_ctx (token passing)"),
    ("jvm-like", "a HotSpot JVM with the Serial generational collector: eden reused cyclically, minor copying and full mark-compact collections"),
    ("trace", "a recorded real program (native trace, path=FILE) as one guest process, threads spread over vcpus"),
    ("tpch-like", "the process model of `vmemsim run` as one guest process, a vCPU per thread"),
    ("pagerank", "the process model of `vmemsim run` as one guest process, a vCPU per thread"),
    ("ycsb-a", "the process model of `vmemsim run` as one guest process, a vCPU per thread"),
    ("ycsb-b", "the process model of `vmemsim run` as one guest process, a vCPU per thread"),
    ("ycsb-c", "the process model of `vmemsim run` as one guest process, a vCPU per thread"),
    ("custom", "the process model of `vmemsim run` as one guest process, a vCPU per thread"),
    ("dd-like", "dd: a sequential read (or write) of a file on the guest's virtual disk"),
    ("fileio", "sysbench fileio on the guest's virtual disk; a database-like reader with pattern=rand"),
    ("gzip-like", "gzip: a file read in chunks, compressed, the output appended to a new file"),
    ("pbzip2-like", "pbzip2: 900 kB blocks bzip2-compressed by N threads dealt onto `vcpus` vCPUs, written in order"),
    ("mapreduce-like", "Metis word count: map into per-worker hash tables (~1 GB), reduce, merge; start_ns delays the start"),
];

/// Parse a guest workload spec (grammar in the module docs) with `seed` as the run's seed.
pub fn parse(spec: &str, seed: u64) -> Result<Box<dyn Workload>> {
    let spec = spec.trim();
    let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let kind = kind.trim().to_ascii_lowercase();
    match kind.as_str() {
        "stress-vm" => Ok(Box::new(stress_vm::StressVm::parse(rest, seed)?)),
        "redis-like" => Ok(Box::new(redis::RedisLike::parse(rest, seed)?)),
        "kernbench-like" => Ok(Box::new(kernbench::KernbenchLike::parse(rest, seed)?)),
        "lmbench-like" => Ok(Box::new(lmbench::LmbenchLike::parse(rest, seed)?)),
        "jvm-like" => Ok(Box::new(jvm::JvmLike::parse(rest, seed)?)),
        "trace" => Ok(Box::new(trace::TraceGuest::parse(rest, seed)?)),
        "tpch-like" | "pagerank" | "ycsb-a" | "ycsb-b" | "ycsb-c" | "custom" | "dd-like"
        | "fileio" | "gzip-like" | "pbzip2-like" | "mapreduce-like" => {
            crate::workload::parse(spec, seed)
        }
        _ => {
            let names: Vec<&str> = KINDS.iter().map(|k| k.0).collect();
            Err(Error::config(
                "workload",
                format!(
                    "unknown guest workload '{kind}'; valid: {}",
                    names.join(", ")
                ),
            ))
        }
    }
}

/// Page number of the first text page of a PIE executable without ASLR (`ELF_ET_DYN_BASE`
/// on x86-64: `2 * TASK_SIZE / 3` rounded, 0x5555_5555_4000).
pub const TEXT_BASE: u64 = 0x5555_5555_4000 >> 12;
/// Page number just above the `mmap` area (`mmap_base` without ASLR: `TASK_SIZE` minus the
/// stack gap), from which mappings are placed top-down.
pub const MMAP_BASE: u64 = 0x7fff_f7ff_f000 >> 12;
/// Page number of the highest stack page (the page below `TASK_SIZE`, 0x7fff_ffff_f000).
pub const STACK_TOP: u64 = (0x7fff_ffff_f000 >> 12) - 1;

/// The pages of a small process image that a program touches when it starts: text read,
/// data written, stack pages written top-down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Image {
    pub text: u64,
    pub data: u64,
    pub stack: u64,
}

impl Image {
    pub fn pages(&self) -> u64 {
        self.text + self.data + self.stack
    }
    /// First page of the `brk` heap (right after data).
    pub fn heap_base(&self) -> u64 {
        TEXT_BASE + self.text + self.data
    }
    pub fn touch(&self, em: &mut GuestEmitter, buf: &mut Vec<Op>) {
        for p in 0..self.text {
            em.access(buf, TEXT_BASE + p, false);
        }
        for p in 0..self.data {
            em.access(buf, TEXT_BASE + self.text + p, true);
        }
        for p in 0..self.stack {
            em.access(buf, STACK_TOP - p, true);
        }
    }
}

/// [`Emitter`] for guest streams: plain ops are merged and batched as in the process
/// workloads; a process event ([`Op::Spawn`], `Switch`, `Exit`, `Unmap`, `Arrive`)
/// first hands out pending compute and then breaks merging (the same page number in another
/// process, or after an unmap, is another page).
#[derive(Debug, Default)]
pub(crate) struct GuestEmitter {
    em: Emitter,
}

impl GuestEmitter {
    #[inline]
    pub fn access(&mut self, buf: &mut Vec<Op>, page: u64, write: bool) {
        self.em.access(buf, page, write);
    }
    /// Every page overlapping bytes `[addr, addr + len)`, in order.
    pub fn range(&mut self, buf: &mut Vec<Op>, addr: u64, len: u64, write: bool) {
        self.em.range(buf, addr, len, write);
    }
    #[inline]
    pub fn compute(&mut self, ns: u64) {
        self.em.compute(ns);
    }
    /// Hand out pending compute time now.
    pub fn flush(&mut self, buf: &mut Vec<Op>) {
        self.em.flush(buf);
    }
    pub fn begin(&mut self, buf: &mut Vec<Op>, kind: u8) {
        self.em.begin(buf, kind);
    }
    pub fn end(&mut self, buf: &mut Vec<Op>) {
        self.em.end(buf);
    }
    pub fn barrier(&mut self, buf: &mut Vec<Op>) {
        self.em.barrier(buf);
    }
    /// End the current burst (the next reference is a new `Access` even to the same page).
    pub fn split(&mut self) {
        self.em.split();
    }
    /// A process or arrival event ([`Op::is_event`]).
    pub fn event(&mut self, buf: &mut Vec<Op>, op: Op) {
        debug_assert!(op.is_event());
        self.flush(buf);
        self.em = Emitter::default();
        buf.push(op);
    }
}

/// The error for a vCPU index out of range.
pub(crate) fn bad_vcpu(name: &str, v: usize, vcpus: usize) -> Error {
    Error::config(
        "workload.vcpu",
        format!("{name}: vCPU {v} does not exist (vcpus: {vcpus})"),
    )
}

#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn parse_dispatches_and_names_unknown_kinds() {
        let e = parse("stress-ng:vm=4", 0).err().unwrap().to_string();
        assert_eq!(
            e,
            "workload: unknown guest workload 'stress-ng'; valid: stress-vm, redis-like, kernbench-like, lmbench-like, jvm-like, trace, tpch-like, pagerank, ycsb-a, ycsb-b, ycsb-c, custom, dd-like, fileio, gzip-like, pbzip2-like, mapreduce-like"
        );
        for (spec, vcpus) in [
            ("stress-vm:bytes=64KiB,rounds=1", 4),
            ("redis-like:keys=100,requests=10", 1),
            (
                "kernbench-like:jobs=2,parallel=2,heap_bytes=64KiB,text_bytes=64KiB",
                2,
            ),
            ("lmbench-like:size=64KiB", 1),
            ("LMBENCH-LIKE:bench=lat_ctx,rounds=2", 1),
            (
                "jvm-like:heap_bytes=3MiB,live_bytes=256KiB,alloc_bytes=2MiB,perm_bytes=64KiB",
                1,
            ),
        ] {
            let mut w = parse(spec, 1).unwrap();
            assert_eq!(w.threads(), vcpus, "{spec}");
            let mut buf = Vec::new();
            assert_eq!(
                w.next_ops(vcpus, &mut buf).err().unwrap().to_string(),
                format!(
                    "workload.vcpu: {}: vCPU {vcpus} does not exist (vcpus: {vcpus})",
                    w.name().split(':').next().unwrap()
                ),
                "{spec}"
            );
            w.next_ops(0, &mut buf).unwrap();
            assert!(!buf.is_empty(), "{spec}");
            // The canonical name parses and names itself.
            let again = parse(&w.name(), 99).unwrap();
            assert_eq!(again.name(), w.name());
        }
    }

    #[test]
    fn emitter_breaks_merging_at_events() {
        let mut em = GuestEmitter::default();
        let mut b = Vec::new();
        em.access(&mut b, 7, true);
        em.access(&mut b, 7, true); // merged
        em.compute(300);
        em.event(&mut b, Op::Spawn { pid: 1 });
        em.event(&mut b, Op::Switch { pid: 1 });
        em.access(&mut b, 7, true); // another process's page 7
        em.compute(2000);
        em.event(&mut b, Op::Unmap { start: 7, pages: 1 });
        let a = |page, write| Op::Access { page, write };
        assert_eq!(
            b,
            vec![
                a(7, true),
                Op::Compute { ns: 300 },
                Op::Spawn { pid: 1 },
                Op::Switch { pid: 1 },
                a(7, true),
                Op::Compute { ns: 2000 },
                Op::Unmap { start: 7, pages: 1 },
            ]
        );
        let c = census(&[b]);
        assert_eq!(c.distinct, 2); // (0, 7) and (1, 7)
    }

    #[test]
    fn layout_constants() {
        // 0x5555_5555_4000 / 4096 and the stack page below 2^47 - 4096.
        assert_eq!(TEXT_BASE, 0x5_5555_5554);
        assert_eq!(STACK_TOP, 0x7_ffff_fffe);
        assert_eq!(MMAP_BASE, 0x7_ffff_7fff);
        let img = Image {
            text: 2,
            data: 1,
            stack: 2,
        };
        let mut em = GuestEmitter::default();
        let mut b = Vec::new();
        img.touch(&mut em, &mut b);
        let c = census(&[b]);
        assert_eq!((c.distinct, c.reads, c.writes), (5, 2, 3));
        assert_eq!(img.heap_base(), TEXT_BASE + 3);
    }

    #[test]
    fn process_models_run_in_a_guest_with_their_own_streams() {
        // Every process model parses as a guest workload whose vCPU streams are the model's
        // thread streams, op for op, with its name, thread count and footprint.
        for spec in [
            "tpch-like:footprint=2MiB,threads=2",
            "pagerank:scale=8,threads=3",
            "ycsb-b:records=200,requests=500",
            "custom:(zipf:pages=64,n=300,write=0.5),threads=2",
        ] {
            let mut g = parse(spec, 7).unwrap();
            let mut p = crate::workload::parse(spec, 7).unwrap();
            assert_eq!(g.name(), p.name(), "{spec}");
            assert_eq!(g.threads(), p.threads(), "{spec}");
            assert_eq!(g.footprint_pages(), p.footprint_pages(), "{spec}");
            for t in 0..p.threads() {
                loop {
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    g.next_ops(t, &mut a).unwrap();
                    p.next_ops(t, &mut b).unwrap();
                    assert_eq!(a, b, "{spec} thread {t}");
                    if a.is_empty() {
                        break;
                    }
                }
            }
            assert!(g.next_ops(p.threads(), &mut Vec::new()).is_err(), "{spec}");
        }
    }
}

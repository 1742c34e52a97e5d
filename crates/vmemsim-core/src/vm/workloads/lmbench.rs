//! `lmbench-like`: three LMBench 3 microbenchmarks (the nested-paging talk of seed 002
//! measured LMBench slowdowns under nested paging), chosen by `bench=`. All run on one vCPU;
//! each starts with the benchmark process's own image (process 0: 2 text pages read, 1 data
//! page and 1 stack page written). Measured iterations are wrapped in `RequestBegin`
//! (`REQ_READ`) / `RequestEnd`, so the VM layer's request latencies are the benchmark's
//! timings; warm-up work comes before a `Barrier`.
//!
//! # `lat_mem_rd` (memory read latency; keys `size` 8MiB, `stride` 64, `order` seq, `passes` 2)
//!
//! LMBench's `lat_mem_rd len stride` builds a pointer chain through a buffer of `len` bytes,
//! one pointer every `stride` bytes in address order (`stride_initialize`: element `i` points
//! to `i + stride`, the last back to 0; the default stride is 512 / sizeof(char *) = 64 bytes),
//! then times dependent loads along it. The model allocates the buffer in the mmap area,
//! writes the chain (one write per page, merged, before the barrier), then makes `passes`
//! timed passes, each one request, with every load its own `Access` (reads; not merged, since
//! each load is what the benchmark times). `order=random` visits the pages that hold
//! elements in a seeded random order, fixed for the run, and the elements within a page in
//! address order (as LMBench's `-t` "thrash" chains defeat prefetching and the TLB). The
//! user sweeps sizes and strides with several specs, as `lat_mem_rd` does in one run.
//!
//! # `lat_pagefault` (page-fault latency; keys `size` 16MiB, `order` random, `iterations` 4)
//!
//! LMBench's `lat_pagefault file` maps the file, reads one word of every page in the order of
//! a permutation made once (`initialize`), then `munmap`s and `mmap`s it again, so every read
//! is a fault. The model: a region of `size` in the mmap area (the same address after every
//! `munmap`); per iteration a request reading each page once in the permutation's order
//! (`order=seq`: address order), then `Unmap` of the whole region.
//!
//! # `lat_ctx` (context switch; keys `procs` 2, `size` 0, `rounds` 1000, `hop_ns` 2000)
//!
//! LMBench's `lat_ctx -s size procs` connects `procs` processes in a ring of pipes and passes
//! a token around; each process, on receiving it, sums its `size` KiB array (its cache
//! footprint) and writes the token to the next. The model: process 0 spawns processes
//! `1..=procs`; each, when created, writes its image and array; then one warm-up round and a
//! barrier, and `rounds` timed rounds (each one request) in which the token visits processes
//! 1, 2, …, `procs`: `Switch`, `hop_ns` of compute for the pipe `read` and `write` system
//! calls, its text page read, its stack page written, its array read (200 ns per page).
//! At the end: `Switch` to process 0 and `Exit` of each.
//!
//! # Left out
//!
//! Loop overheads LMBench subtracts (the model has none to subtract), the file and page
//! cache behind `lat_pagefault` (a first touch of the region is the fault), cache-line
//! effects inside a page, the pipes' kernel buffers, the scheduler's wake-up path and
//! LMBench's repetition and median logic (`TRIES`, `benchmp`).

use rand::seq::SliceRandom;

use super::{bad_vcpu, GuestEmitter, Image, MMAP_BASE, STACK_TOP, TEXT_BASE};
use crate::error::Result;
use crate::workload::common::{pages_of, stream, CHUNK_OPS, PAGE_BYTES};
use crate::workload::params::{fmt_size, Params};
use crate::workload::REQ_READ;
use crate::workload::{Op, Workload};

const KEYS: &[&str] = &[
    "bench",
    "size",
    "stride",
    "order",
    "passes",
    "iterations",
    "procs",
    "rounds",
    "hop_ns",
    "seed",
];
const BENCHES: &[&str] = &["lat_mem_rd", "lat_pagefault", "lat_ctx"];
/// Keys each bench takes (besides `bench` and `seed`).
const BENCH_KEYS: [&[&str]; 3] = [
    &["size", "stride", "order", "passes"],
    &["size", "order", "iterations"],
    &["procs", "size", "rounds", "hop_ns"],
];
const ORDERS: &[&str] = &["seq", "random"];

const IMAGE: Image = Image {
    text: 2,
    data: 1,
    stack: 1,
};
/// CPU per page of `lat_ctx`'s array sum (4 KiB of loads at ~20 GB/s).
const SUM_PAGE_NS: u64 = 200;
const TAG_ORDER: u64 = 0x4C4D;

#[derive(Clone, Debug)]
enum Bench {
    MemRd {
        size: u64,
        stride: u64,
        random: bool,
        passes: u64,
    },
    PageFault {
        size: u64,
        random: bool,
        iterations: u64,
    },
    Ctx {
        procs: u64,
        size: u64,
        rounds: u64,
        hop_ns: u64,
    },
}

#[derive(Clone, Copy, Debug)]
enum Stage {
    Start,
    /// lat_mem_rd: chain writes, group `g`.
    Init {
        g: u64,
    },
    /// A timed pass / iteration / round `k` (lat_ctx: round 0 is the warm-up), position `i`.
    Timed {
        k: u64,
        i: u64,
    },
    /// lat_ctx: create process `p`.
    Spawn {
        p: u64,
    },
    End,
    Done,
}

/// The LMBench models (see the module docs).
pub struct LmbenchLike {
    bench: Bench,
    seed: u64,
    /// Visiting order of the groups (pages holding elements; lat_pagefault: pages), empty
    /// for address order.
    order: Vec<u32>,
    stage: Stage,
    em: GuestEmitter,
}

impl LmbenchLike {
    pub(crate) fn parse(text: &str, run_seed: u64) -> Result<LmbenchLike> {
        let p = Params::parse("lmbench-like", text, KEYS)?;
        let b = p.choice("bench", 0, BENCHES)?;
        for k in KEYS {
            if p.has(k) && !matches!(*k, "bench" | "seed") && !BENCH_KEYS[b].contains(k) {
                return Err(p.err(
                    k,
                    format!(
                        "not a key of bench={} (valid: {})",
                        BENCHES[b],
                        BENCH_KEYS[b].join(", ")
                    ),
                ));
            }
        }
        let size = |default: u64, min: u64| -> Result<u64> {
            let s = p.size("size")?.unwrap_or(default);
            if s < min || s > 1 << 40 {
                return Err(p.err(
                    "size",
                    format!("{} is outside [{}, 1TiB]", fmt_size(s), fmt_size(min)),
                ));
            }
            Ok(s)
        };
        let bench = match b {
            0 => Bench::MemRd {
                size: size(8 << 20, 8)?,
                stride: p.u64_in("stride", 64, 8, 1 << 30)?,
                random: p.choice("order", 0, ORDERS)? == 1,
                passes: p.u64_in("passes", 2, 1, 1 << 20)?,
            },
            1 => Bench::PageFault {
                size: size(16 << 20, 4096)?,
                random: p.choice("order", 1, ORDERS)? == 1,
                iterations: p.u64_in("iterations", 4, 1, 1 << 20)?,
            },
            _ => Bench::Ctx {
                procs: p.u64_in("procs", 2, 2, 4096)?,
                size: size(0, 0)?,
                rounds: p.u64_in("rounds", 1000, 1, 1 << 32)?,
                hop_ns: p.u64_in("hop_ns", 2000, 0, 1 << 32)?,
            },
        };
        let mut w = LmbenchLike {
            bench,
            seed: p.seed(run_seed)?,
            order: Vec::new(),
            stage: Stage::Start,
            em: GuestEmitter::default(),
        };
        let random = match w.bench {
            Bench::MemRd { random, .. } | Bench::PageFault { random, .. } => random,
            Bench::Ctx { .. } => false,
        };
        if random {
            let g = w.groups();
            if g > u32::MAX as u64 {
                return Err(p.err("size", "too many pages for order=random"));
            }
            w.order = (0..g as u32).collect();
            w.order.shuffle(&mut stream(w.seed, TAG_ORDER, 0));
        }
        Ok(w)
    }

    /// lat_mem_rd: the chain's elements (`ceil(size / stride)`).
    fn elements(&self) -> u64 {
        match self.bench {
            Bench::MemRd { size, stride, .. } => size.div_ceil(stride),
            _ => 0,
        }
    }

    /// Groups visited in order: pages holding elements (lat_mem_rd), pages (lat_pagefault).
    fn groups(&self) -> u64 {
        match self.bench {
            Bench::MemRd { stride, .. } => {
                let n = self.elements();
                if stride >= PAGE_BYTES {
                    n
                } else {
                    (n - 1) * stride / PAGE_BYTES + 1
                }
            }
            Bench::PageFault { size, .. } => pages_of(size),
            Bench::Ctx { .. } => 0,
        }
    }

    /// lat_mem_rd: elements `[lo, hi)` of group `g`.
    fn group_elements(&self, g: u64) -> (u64, u64) {
        let Bench::MemRd { stride, .. } = self.bench else {
            return (0, 0);
        };
        if stride >= PAGE_BYTES {
            (g, g + 1)
        } else {
            let n = self.elements();
            let lo = (g * PAGE_BYTES).div_ceil(stride);
            let hi = ((g + 1) * PAGE_BYTES).div_ceil(stride).min(n);
            (lo, hi)
        }
    }

    /// First page of the buffer or mapped region.
    fn region(&self) -> u64 {
        match self.bench {
            Bench::MemRd { size, .. } | Bench::PageFault { size, .. } => MMAP_BASE - pages_of(size),
            Bench::Ctx { .. } => 0,
        }
    }

    fn visit(&self, i: u64) -> u64 {
        if self.order.is_empty() {
            i
        } else {
            self.order[i as usize] as u64
        }
    }

    /// Pages of each lat_ctx process: its image and its array.
    fn ctx_pages(&self) -> u64 {
        match self.bench {
            Bench::Ctx { size, .. } => IMAGE.pages() + pages_of(size),
            _ => 0,
        }
    }

    fn step(&mut self, buf: &mut Vec<Op>) {
        let mut em = std::mem::take(&mut self.em);
        self.stage = self.next_stage(&mut em, buf);
        self.em = em;
    }

    /// Emit the current stage's ops; returns the next stage.
    fn next_stage(&self, em: &mut GuestEmitter, buf: &mut Vec<Op>) -> Stage {
        match (self.stage, self.bench.clone()) {
            (Stage::Start, b) => {
                IMAGE.touch(em, buf);
                match b {
                    Bench::MemRd { .. } => Stage::Init { g: 0 },
                    Bench::PageFault { .. } => {
                        em.barrier(buf);
                        Stage::Timed { k: 0, i: 0 }
                    }
                    Bench::Ctx { .. } => Stage::Spawn { p: 1 },
                }
            }
            (Stage::Init { g }, Bench::MemRd { stride, .. }) => {
                let (lo, hi) = self.group_elements(g);
                let base = self.region() * PAGE_BYTES;
                for e in lo..hi {
                    em.access(buf, (base + e * stride) / PAGE_BYTES, true);
                }
                if g + 1 < self.groups() {
                    Stage::Init { g: g + 1 }
                } else {
                    em.barrier(buf);
                    Stage::Timed { k: 0, i: 0 }
                }
            }
            (Stage::Timed { k, i }, Bench::MemRd { stride, passes, .. }) => {
                if i == 0 {
                    em.begin(buf, REQ_READ);
                }
                let (lo, hi) = self.group_elements(self.visit(i));
                let base = self.region() * PAGE_BYTES;
                for e in lo..hi {
                    let page = (base + e * stride) / PAGE_BYTES;
                    buf.push(Op::Access { page, write: false });
                }
                if i + 1 < self.groups() {
                    Stage::Timed { k, i: i + 1 }
                } else {
                    em.end(buf);
                    if k + 1 < passes {
                        Stage::Timed { k: k + 1, i: 0 }
                    } else {
                        Stage::Done
                    }
                }
            }
            (Stage::Timed { k, i }, Bench::PageFault { iterations, .. }) => {
                if i == 0 {
                    em.begin(buf, REQ_READ);
                }
                em.access(buf, self.region() + self.visit(i), false);
                if i + 1 < self.groups() {
                    Stage::Timed { k, i: i + 1 }
                } else {
                    em.end(buf);
                    // (at most 2^28 pages: `size` is at most 1 TiB)
                    let (start, pages) = (self.region(), self.groups() as u32);
                    em.event(buf, Op::Unmap { start, pages });
                    if k + 1 < iterations {
                        Stage::Timed { k: k + 1, i: 0 }
                    } else {
                        Stage::Done
                    }
                }
            }
            (Stage::Spawn { p }, Bench::Ctx { procs, size, .. }) => {
                let pid = p as u32;
                em.event(buf, Op::Spawn { pid });
                em.event(buf, Op::Switch { pid });
                IMAGE.touch(em, buf);
                for q in 0..pages_of(size) {
                    em.access(buf, IMAGE.heap_base() + q, true);
                }
                if p < procs {
                    Stage::Spawn { p: p + 1 }
                } else {
                    Stage::Timed { k: 0, i: 0 }
                }
            }
            (
                Stage::Timed { k, i },
                Bench::Ctx {
                    procs,
                    size,
                    rounds,
                    hop_ns,
                },
            ) => {
                if i == 0 && k > 0 {
                    em.begin(buf, REQ_READ);
                }
                let pid = i as u32 + 1;
                em.event(buf, Op::Switch { pid });
                em.compute(hop_ns);
                em.access(buf, TEXT_BASE, false);
                em.access(buf, STACK_TOP, true);
                for q in 0..pages_of(size) {
                    em.compute(SUM_PAGE_NS);
                    em.access(buf, IMAGE.heap_base() + q, false);
                }
                if i + 1 < procs {
                    Stage::Timed { k, i: i + 1 }
                } else {
                    if k == 0 {
                        em.barrier(buf);
                    } else {
                        em.end(buf);
                    }
                    if k < rounds {
                        Stage::Timed { k: k + 1, i: 0 }
                    } else {
                        Stage::End
                    }
                }
            }
            (Stage::End, Bench::Ctx { procs, .. }) => {
                em.event(buf, Op::Switch { pid: 0 });
                for pid in 1..=procs as u32 {
                    em.event(buf, Op::Exit { pid });
                }
                Stage::Done
            }
            (Stage::Done, _) => Stage::Done,
            // Stages of another bench never occur (each bench starts at its own stage).
            _ => Stage::Done,
        }
    }
}

impl Workload for LmbenchLike {
    fn name(&self) -> String {
        let o = |r: bool| ORDERS[r as usize];
        let params = match self.bench {
            Bench::MemRd {
                size,
                stride,
                random,
                passes,
            } => format!(
                "bench=lat_mem_rd,size={},stride={stride},order={},passes={passes}",
                fmt_size(size),
                o(random)
            ),
            Bench::PageFault {
                size,
                random,
                iterations,
            } => format!(
                "bench=lat_pagefault,size={},order={},iterations={iterations}",
                fmt_size(size),
                o(random)
            ),
            Bench::Ctx {
                procs,
                size,
                rounds,
                hop_ns,
            } => format!(
                "bench=lat_ctx,procs={procs},size={},rounds={rounds},hop_ns={hop_ns}",
                fmt_size(size)
            ),
        };
        format!("lmbench-like:{params},seed={}", self.seed)
    }

    fn threads(&self) -> usize {
        1
    }

    fn footprint_pages(&self) -> u64 {
        IMAGE.pages()
            + match self.bench {
                Bench::MemRd { .. } | Bench::PageFault { .. } => self.groups(),
                Bench::Ctx { procs, .. } => procs * self.ctx_pages(),
            }
    }

    fn next_ops(&mut self, v: usize, buf: &mut Vec<Op>) -> Result<()> {
        if v >= 1 {
            return Err(bad_vcpu("lmbench-like", v, 1));
        }
        let start = buf.len();
        while buf.len() - start < CHUNK_OPS && !matches!(self.stage, Stage::Done) {
            self.step(buf);
        }
        if matches!(self.stage, Stage::Done) {
            self.em.flush(buf);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::vm::workloads::parse;

    /// Pages read inside requests, in order, relative to the first page of `region`.
    fn timed_reads(s: &[Op], region: u64) -> Vec<Vec<u64>> {
        let mut out = Vec::new();
        for op in s {
            match *op {
                Op::RequestBegin { .. } => out.push(Vec::new()),
                Op::Access { page, write: false } if page >= region => {
                    out.last_mut().unwrap().push(page - region)
                }
                _ => {}
            }
        }
        out
    }

    #[test]
    fn lat_mem_rd_chain() {
        // 64 KiB at 64 bytes: 1024 loads per pass over 16 pages; the chain written first.
        let (w, s) = run("lmbench-like:size=64KiB", 1);
        let c = census(&s);
        assert_eq!(w.footprint_pages(), 4 + 16);
        assert_eq!(c.distinct, 20);
        assert_eq!((c.requests[0], c.barriers), (2, 1));
        assert_eq!(c.reads, 2 + 2 * 1024);
        assert_eq!(c.writes, 2 + 16);
        let base = MMAP_BASE - 16;
        let passes = timed_reads(&s[0], base);
        assert_eq!(passes.len(), 2);
        let want: Vec<u64> = (0..1024).map(|e| e * 64 / 4096).collect();
        assert_eq!(passes[0], want);
        assert_eq!(passes[1], want);
        // Default: 8 MiB, 64-byte stride, two passes of 131072 loads over 2048 pages.
        let d = LmbenchLike::parse("", 0).unwrap();
        assert_eq!((d.footprint_pages(), d.elements()), (4 + 2048, 131072));
        // A stride past a page: elements 0, 5000, ..., 65000 (14 of them) on pages
        // 0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 12, 13, 14, 15.
        let (w, s) = run("lmbench-like:size=64KiB,stride=5000,passes=1", 1);
        assert_eq!(w.footprint_pages(), 4 + 14);
        assert_eq!(
            timed_reads(&s[0], base)[0],
            vec![0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 12, 13, 14, 15]
        );
        // A stride that does not divide the page: 86 elements, 43 on each of 2 pages.
        let (_, s) = run("lmbench-like:size=8KiB,stride=96,passes=1", 1);
        let p = &timed_reads(&s[0], MMAP_BASE - 2)[0];
        assert_eq!(p.len(), 86);
        assert_eq!(p.iter().filter(|&&x| x == 0).count(), 43);
        // Random page order: the same permutation in every pass, elements in address
        // order within a page; seeds change it.
        let spec = "lmbench-like:size=64KiB,order=random";
        let (w, s) = run(spec, 2);
        let r = timed_reads(&s[0], base);
        assert_eq!(r[0], r[1]);
        assert_ne!(r[0], want);
        let mut pages: Vec<u64> = r[0].chunks(64).map(|c| c[0]).collect();
        assert!(r[0].chunks(64).all(|c| c.iter().all(|&x| x == c[0])));
        pages.sort_unstable();
        assert_eq!(pages, (0..16).collect::<Vec<_>>());
        let (_, s3) = run(spec, 3);
        assert_ne!(s3, s);
        let (_, again) = run(&w.name(), 0);
        assert_eq!(again, s);
        assert_eq!(
            w.name(),
            "lmbench-like:bench=lat_mem_rd,size=64KiB,stride=64,order=random,passes=2,seed=2"
        );
    }

    #[test]
    fn lat_pagefault_iterations() {
        let (w, s) = run(
            "lmbench-like:bench=lat_pagefault,size=64KiB,iterations=3",
            4,
        );
        let c = census(&s);
        assert_eq!(w.footprint_pages(), 4 + 16);
        assert_eq!(c.distinct, 20);
        assert_eq!((c.unmaps, c.unmapped_pages, c.requests[0]), (3, 48, 3));
        assert_eq!(c.reads, 2 + 48);
        assert!(s[0].contains(&Op::Unmap {
            start: MMAP_BASE - 16,
            pages: 16
        }));
        let r = timed_reads(&s[0], MMAP_BASE - 16);
        // One permutation, made once, read in every iteration.
        assert_eq!(r.len(), 3);
        assert_eq!((&r[0], &r[1]), (&r[1], &r[2]));
        let mut sorted = r[0].clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..16).collect::<Vec<_>>());
        assert_ne!(r[0], sorted);
        assert_eq!(
            w.name(),
            "lmbench-like:bench=lat_pagefault,size=64KiB,order=random,iterations=3,seed=4"
        );
    }

    #[test]
    fn lat_ctx_ring() {
        let (w, s) = run("lmbench-like:bench=lat_ctx,procs=3,size=8KiB,rounds=10", 1);
        let c = census(&s);
        assert_eq!((c.spawns, c.exits), (3, 3));
        // 3 at creation, 3 per round over 1 warm-up and 10 timed rounds, 1 back to 0.
        assert_eq!(c.switches, 3 + 3 * 11 + 1);
        assert_eq!((c.requests[0], c.barriers), (10, 1));
        // Per hop: 2000 ns of pipe calls and 2 pages summed at 200 ns.
        assert_eq!(c.compute_ns, 33 * 2400);
        assert_eq!(w.footprint_pages(), 4 + 3 * (4 + 2));
        assert_eq!(c.distinct, w.footprint_pages());
        // Token order within a timed round: 1, 2, 3.
        let first = s[0]
            .iter()
            .position(|o| matches!(o, Op::RequestBegin { .. }))
            .unwrap();
        let order: Vec<u32> = s[0][first..]
            .iter()
            .take_while(|o| !matches!(o, Op::RequestEnd))
            .filter_map(|o| match o {
                Op::Switch { pid } => Some(*pid),
                _ => None,
            })
            .collect();
        assert_eq!(order, vec![1, 2, 3]);
        // Defaults: 2 processes, no array, 1000 rounds.
        assert_eq!(
            parse("lmbench-like:bench=lat_ctx", 0).unwrap().name(),
            "lmbench-like:bench=lat_ctx,procs=2,size=0,rounds=1000,hop_ns=2000,seed=0"
        );
    }

    #[test]
    fn spec_errors_name_the_key() {
        let e = |s: &str| parse(s, 0).err().unwrap().to_string();
        assert_eq!(
            e("lmbench-like:bench=lat_ctx,stride=64"),
            "lmbench-like.stride: not a key of bench=lat_ctx (valid: procs, size, rounds, hop_ns)"
        );
        assert_eq!(
            e("lmbench-like:bench=lat_foo"),
            "lmbench-like.bench: 'lat_foo' is not one of lat_mem_rd, lat_pagefault, lat_ctx"
        );
        assert_eq!(
            e("lmbench-like:bench=lat_ctx,procs=1"),
            "lmbench-like.procs: 1 is outside [2, 4096]"
        );
        assert_eq!(
            e("lmbench-like:bench=lat_pagefault,size=1KiB"),
            "lmbench-like.size: 1KiB is outside [4KiB, 1TiB]"
        );
        assert_eq!(
            e("lmbench-like:stride=4"),
            "lmbench-like.stride: 4 is outside [8, 1073741824]"
        );
    }
}

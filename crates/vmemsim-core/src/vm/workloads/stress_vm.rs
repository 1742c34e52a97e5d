//! `stress-vm`: the `stress-ng --vm N` fault storm (seed 000 counted its page faults under
//! FIFO and clock shadow-page eviction: 117,375 → 112,016).
//!
//! # What stress-ng does (stress-vm.c)
//!
//! `--vm N` forks N workers. `--vm-bytes` (default `DEFAULT_VM_BYTES` = 256 MiB) is the total
//! over the workers: each takes `vm_bytes / num_instances`, at least `MIN_VM_BYTES` (4 KiB),
//! rounded down to whole pages. A worker loops: `mmap` an anonymous private region of that
//! size (unless `--vm-keep`, off by default), run the `--vm-method` over it (default `all`:
//! each call runs the next of about 30 methods — walking ones/zeros, increments, prime strides,
//! random set/sum, ...; most write a pattern over the whole buffer and read it back to
//! check), sleep `--vm-hang` seconds (default 0: `sched_yield`), `munmap` the region.
//!
//! # The model
//!
//! Worker `v` runs on vCPU `v` as process `v + 1`: `Spawn`, `Switch`, the worker's own small
//! image (4 text pages read, 1 data page and 1 stack page written), then `rounds` times: a
//! region of `pages = bytes / vcpus / 4096` pages placed top-down below the mmap base (the
//! same address every round, as `mmap` returns after the previous `munmap`), a write pass
//! over every page (first touch: a fault per page), a read pass over every page (`read=1`),
//! `hang_ns` of idle compute, `Unmap` of the region. Then `Switch` back to process 0 and
//! `Exit`. `method`: `seq` passes go through the pages in address order; `rand` passes in a
//! fresh seeded random order per round (stress-ng's random methods); `all` alternates, even
//! rounds `seq` and odd rounds `rand`.
//!
//! Costs (estimates): `write_ns` = 400 ns of CPU per page of the write pass (4 KiB of stores
//! at ~10 GB/s), `read_ns` = 200 ns per page of the read pass.
//!
//! Footprint: `vcpus × (pages + 6)` pages, exact.
//!
//! # Left out
//!
//! Per-byte patterns and repeated passes within a method (only the page-level order of one
//! write and one read pass is kept); random methods' repeated hits to a page (a permutation
//! touches each page once per pass); stress-ng's parent process, its shared bit-error page,
//! `madvise` hints, `--vm-populate`, `--vm-keep`, the worker's run time limit (`rounds`
//! replaces `--timeout`), and copy-on-write sharing with the parent.

use rand::seq::SliceRandom;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{bad_vcpu, GuestEmitter, Image, MMAP_BASE};
use crate::error::Result;
use crate::workload::common::{stream, CHUNK_OPS, PAGE_BYTES};
use crate::workload::params::{fmt_size, Params};
use crate::workload::{Op, Workload};

const KEYS: &[&str] = &[
    "vcpus", "bytes", "rounds", "method", "read", "write_ns", "read_ns", "hang_ns", "seed",
];
const METHODS: &[&str] = &["all", "seq", "rand"];

/// stress-ng's `DEFAULT_VM_BYTES`.
const DEFAULT_BYTES: u64 = 256 << 20;
/// stress-ng's `MIN_VM_BYTES`.
const MIN_BYTES: u64 = 4096;
/// A worker's own pages besides its region.
const IMAGE: Image = Image {
    text: 4,
    data: 1,
    stack: 1,
};
const TAG_WORKER: u64 = 0x5356;

#[derive(Clone, Debug)]
struct Config {
    vcpus: usize,
    bytes: u64,
    rounds: u64,
    method: usize,
    read: bool,
    write_ns: u64,
    read_ns: u64,
    hang_ns: u64,
    seed: u64,
}

#[derive(Clone, Copy, Debug)]
enum Stage {
    Start,
    Pass { round: u64, read: bool, i: u64 },
    End,
    Done,
}

#[derive(Debug)]
struct Worker {
    rng: Xoshiro256PlusPlus,
    stage: Stage,
    em: GuestEmitter,
    /// This round's page order when it is random.
    order: Vec<u32>,
}

/// The `stress-ng --vm` model (see the module docs).
pub struct StressVm {
    cfg: Config,
    /// Pages of each worker's region.
    pages: u64,
    workers: Vec<Worker>,
}

impl StressVm {
    pub(crate) fn parse(text: &str, run_seed: u64) -> Result<StressVm> {
        let p = Params::parse("stress-vm", text, KEYS)?;
        let bytes = p.size("bytes")?.unwrap_or(DEFAULT_BYTES);
        if bytes == 0 || bytes > 1 << 40 {
            return Err(p.err("bytes", format!("{bytes} is outside [1, 1TiB]")));
        }
        let cfg = Config {
            vcpus: p.u64_in("vcpus", 4, 1, 1024)? as usize,
            bytes,
            rounds: p.u64_in("rounds", 4, 1, 1 << 32)?,
            method: p.choice("method", 0, METHODS)?,
            read: p.u64_in("read", 1, 0, 1)? == 1,
            write_ns: p.u64_in("write_ns", 400, 0, 1 << 32)?,
            read_ns: p.u64_in("read_ns", 200, 0, 1 << 32)?,
            hang_ns: p.u64_in("hang_ns", 0, 0, 1 << 40)?,
            seed: p.seed(run_seed)?,
        };
        let per = (cfg.bytes / cfg.vcpus as u64).max(MIN_BYTES);
        let pages = per / PAGE_BYTES;
        let workers = (0..cfg.vcpus)
            .map(|v| Worker {
                rng: stream(cfg.seed, TAG_WORKER, v as u64),
                stage: Stage::Start,
                em: GuestEmitter::default(),
                order: Vec::new(),
            })
            .collect();
        Ok(StressVm {
            cfg,
            pages,
            workers,
        })
    }

    /// Pages of each worker's region.
    pub fn region_pages(&self) -> u64 {
        self.pages
    }

    fn region_start(&self) -> u64 {
        MMAP_BASE - self.pages
    }

    fn random_round(&self, round: u64) -> bool {
        match self.cfg.method {
            0 => round % 2 == 1,
            1 => false,
            _ => true,
        }
    }

    /// Start pass `(round, read)`: draw its order if random.
    fn start_pass(&self, w: &mut Worker, round: u64, read: bool) {
        if !read && self.random_round(round) {
            w.order.clear();
            w.order.extend(0..self.pages as u32);
            w.order.shuffle(&mut w.rng);
        }
        w.stage = Stage::Pass { round, read, i: 0 };
    }

    fn step(&self, w: &mut Worker, v: usize, buf: &mut Vec<Op>) {
        let pid = v as u32 + 1;
        match w.stage {
            Stage::Start => {
                w.em.event(buf, Op::Spawn { pid });
                w.em.event(buf, Op::Switch { pid });
                IMAGE.touch(&mut w.em, buf);
                self.start_pass(w, 0, false);
            }
            Stage::Pass { round, read, i } => {
                if i < self.pages {
                    let off = if self.random_round(round) {
                        w.order[i as usize] as u64
                    } else {
                        i
                    };
                    w.em.compute(if read {
                        self.cfg.read_ns
                    } else {
                        self.cfg.write_ns
                    });
                    w.em.access(buf, self.region_start() + off, !read);
                    w.stage = Stage::Pass {
                        round,
                        read,
                        i: i + 1,
                    };
                } else if !read && self.cfg.read {
                    self.start_pass(w, round, true);
                } else {
                    w.em.compute(self.cfg.hang_ns);
                    w.em.event(
                        buf,
                        Op::Unmap {
                            start: self.region_start(),
                            // (at most 2^28 pages: `bytes` is at most 1 TiB)
                            pages: self.pages as u32,
                        },
                    );
                    if round + 1 < self.cfg.rounds {
                        self.start_pass(w, round + 1, false);
                    } else {
                        w.stage = Stage::End;
                    }
                }
            }
            Stage::End => {
                w.em.event(buf, Op::Switch { pid: 0 });
                w.em.event(buf, Op::Exit { pid });
                w.stage = Stage::Done;
            }
            Stage::Done => {}
        }
    }
}

impl Workload for StressVm {
    fn name(&self) -> String {
        let c = &self.cfg;
        format!(
            "stress-vm:vcpus={},bytes={},rounds={},method={},read={},write_ns={},read_ns={},hang_ns={},seed={}",
            c.vcpus,
            fmt_size(c.bytes),
            c.rounds,
            METHODS[c.method],
            c.read as u8,
            c.write_ns,
            c.read_ns,
            c.hang_ns,
            c.seed
        )
    }

    fn threads(&self) -> usize {
        self.cfg.vcpus
    }

    fn footprint_pages(&self) -> u64 {
        self.cfg.vcpus as u64 * (self.pages + IMAGE.pages())
    }

    fn next_ops(&mut self, v: usize, buf: &mut Vec<Op>) -> Result<()> {
        if v >= self.cfg.vcpus {
            return Err(bad_vcpu("stress-vm", v, self.cfg.vcpus));
        }
        let mut w = std::mem::replace(
            &mut self.workers[v],
            Worker {
                rng: stream(0, 0, 0),
                stage: Stage::Done,
                em: GuestEmitter::default(),
                order: Vec::new(),
            },
        );
        let start = buf.len();
        while buf.len() - start < CHUNK_OPS && !matches!(w.stage, Stage::Done) {
            self.step(&mut w, v, buf);
        }
        self.workers[v] = w;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::vm::workloads::parse;
    use crate::workload::Op;

    #[test]
    fn op_mix_and_footprint() {
        // 1 MiB over 4 workers: 64 pages each; 3 rounds of a write and a read pass.
        let (w, s) = run("stress-vm:bytes=1MiB,rounds=3", 1);
        let c = census(&s);
        assert_eq!(c.spawns, 4);
        assert_eq!(c.exits, 4);
        assert_eq!(c.switches, 8); // to the worker, back to 0
        assert_eq!(c.unmaps, 12);
        assert_eq!(c.unmapped_pages, 12 * 64);
        // Per worker: 3 × 64 region writes + 2 image writes; 3 × 64 reads + 4 text reads.
        assert_eq!(c.writes, 4 * (3 * 64 + 2));
        assert_eq!(c.reads, 4 * (3 * 64 + 4));
        assert_eq!(w.footprint_pages(), 4 * (64 + 6));
        assert_eq!(c.distinct, w.footprint_pages());
        assert!(!c.per_pid.contains_key(&0), "process 0 touches nothing");
        // CPU: 3 × 64 × (400 + 200) ns per worker.
        assert_eq!(c.compute_ns, 4 * 3 * 64 * 600);
        // Each round: the region is written in full before it is unmapped.
        let worker: &Vec<Op> = &s[2];
        let first_unmap = worker
            .iter()
            .position(|o| matches!(o, Op::Unmap { .. }))
            .unwrap();
        let writes_before = worker[..first_unmap]
            .iter()
            .filter(|o| matches!(o, Op::Access { write: true, .. }))
            .count();
        assert_eq!(writes_before, 64 + 2);
        assert_eq!(
            worker[first_unmap],
            Op::Unmap {
                start: MMAP_BASE - 64,
                pages: 64
            }
        );
    }

    #[test]
    fn stress_ng_sizes() {
        // Default: 256 MiB over 4 workers = 64 MiB = 16384 pages each.
        let w = StressVm::parse("", 0).unwrap();
        assert_eq!(w.region_pages(), 16384);
        assert_eq!(w.footprint_pages(), 4 * (16384 + 6));
        // Rounded down to whole pages; at least MIN_VM_BYTES.
        assert_eq!(
            StressVm::parse("bytes=40000,vcpus=2", 0)
                .unwrap()
                .region_pages(),
            4
        );
        assert_eq!(
            StressVm::parse("bytes=100,vcpus=8", 0)
                .unwrap()
                .region_pages(),
            1
        );
    }

    #[test]
    fn orders_and_determinism() {
        let spec = "stress-vm:bytes=512KiB,rounds=2,vcpus=2,read=0";
        let (w, a) = run(spec, 3);
        let mut again = parse(spec, 3).unwrap();
        assert_eq!(drain(again.as_mut(), Order::ReverseSerial), a);
        let (_, b) = run(spec, 4);
        assert_ne!(a, b);
        let (_, c) = run(&w.name(), 77);
        assert_eq!(c, a);
        assert_eq!(
            w.name(),
            "stress-vm:vcpus=2,bytes=512KiB,rounds=2,method=all,read=0,write_ns=400,read_ns=200,hang_ns=0,seed=3"
        );
        // Round 0 sequential, round 1 a permutation of the same 64 pages.
        let base = MMAP_BASE - 64;
        let pages: Vec<u64> = a[0]
            .iter()
            .filter_map(|o| match o {
                Op::Access { page, write: true } if (base..MMAP_BASE).contains(page) => Some(*page),
                _ => None,
            })
            .collect();
        assert_eq!(pages.len(), 128);
        assert_eq!(pages[..64], (base..MMAP_BASE).collect::<Vec<_>>()[..]);
        assert_ne!(pages[64..], pages[..64]);
        let mut r1 = pages[64..].to_vec();
        r1.sort_unstable();
        assert_eq!(r1, pages[..64]);
        // method=seq has no randomness: seeds do not matter.
        let (_, s1) = run("stress-vm:bytes=64KiB,rounds=2,method=seq", 1);
        let (_, s2) = run("stress-vm:bytes=64KiB,rounds=2,method=seq", 2);
        assert_eq!(s1, s2);
    }

    #[test]
    fn spec_errors_name_the_key() {
        let e = |s: &str| parse(s, 0).err().unwrap().to_string();
        assert_eq!(
            e("stress-vm:method=walk"),
            "stress-vm.method: 'walk' is not one of all, seq, rand"
        );
        assert_eq!(
            e("stress-vm:vcpus=0"),
            "stress-vm.vcpus: 0 is outside [1, 1024]"
        );
        assert_eq!(
            e("stress-vm:bytes=0"),
            "stress-vm.bytes: 0 is outside [1, 1TiB]"
        );
        assert_eq!(e("stress-vm:read=2"), "stress-vm.read: 2 is outside [0, 1]");
        assert!(e("stress-vm:vm-bytes=1MiB")
            .starts_with("stress-vm.vm-bytes: unknown key for stress-vm (valid: vcpus, bytes,"));
        assert_eq!(
            e("stress-vm:rounds=2,rounds=3"),
            "stress-vm.rounds: given twice"
        );
    }
}

//! `kernbench-like`: a kernel build, `make -j N` of many short compiler processes (the
//! nested-paging talk of seed 002 used kernbench, which times `make -j` of the Linux kernel:
//! fork/exec/exit churn, page-table creation and teardown, CR3 switches).
//!
//! # The model
//!
//! Process 0 is `make`. Job `j` (0-based) runs on vCPU `j mod parallel` (a static
//! assignment: `make` hands jobs to whichever slot frees first, which depends on timing the
//! generator does not know) as process `j + 1`, one process standing for the gcc driver,
//! `cc1` and `as` of one translation unit. Per job, on its vCPU: `make` writes its job table
//! (one of 4 heap pages, `j mod 4`), then `Spawn`, `Switch`, the job's body, `Switch` back to
//! `make`, `Exit`. Before its first job, vCPU 0 touches `make`'s own image (16 text pages
//! read, 4 data pages written, 2 stack pages written).
//!
//! The body of a job is `steps = heap pages` steps (the compiler's memory grows as it
//! parses and optimises; GCC's garbage-collected heap is mmap'd pages and obstacks, here one
//! region growing up from the end of data). Step `i`: `job_ns / steps` of compute (split so
//! the job's total is exactly `job_ns`), the next slice of text read (the text pages are
//! read in order over the job, each once: the compiler's passes run one after another), one
//! more text page read uniformly among those already reached (hot code re-executed), the
//! next slice of stack pages written (the stack deepens over the job), heap page `i` written
//! (first touch of new memory), then `reuse` accesses to heap pages uniform in `[0, i]`, one
//! in three a write (GC marking and tree updates). All data pages are written at the start
//! (relocations, `.data`, `.bss`). Each job draws from its own random stream, so job `j`'s
//! ops do not depend on the others.
//!
//! Sizes and costs (estimates, keys): a `cc1` run of a kernel source file takes 10–100 ms
//! and touches tens of MiB: `job_ns` = 40 ms, `text_bytes` = 8 MiB of `cc1`'s ~25 MiB text,
//! `data_bytes` = 1 MiB, `heap_bytes` = 24 MiB, `stack_bytes` = 128 KiB; `jobs` = 64 (a full
//! kernel build has ~2,000–3,000), `parallel` = 4.
//!
//! Footprint: [`Workload::footprint_pages`] is the peak of live pages, `make`'s plus
//! `min(parallel, jobs)` jobs' (text + data + heap + stack) pages; all jobs together touch
//! [`KernbenchLike::touched_pages`].
//!
//! # The source tree (`sources=1`)
//!
//! With `sources=1` the build reads its tree from files (seed 003 ran kernbench in a VM
//! whose disk image holds the kernel's source; its page cache and the host's are what the
//! experiment measures): `headers` header files of `header_bytes` each (ids `0..headers`),
//! one source file of `source_bytes` per job and one object file per job, written. Job `j`,
//! after its data pages: reads its source (one `read` of the whole file, as `cc1` reads a
//! file it has `stat`ed) and `headers_per_job` headers, the `common_headers` first (headers
//! `0..common_headers`: every translation unit includes the same core headers, e.g.
//! `linux/kernel.h` and what it pulls in) and the rest drawn uniformly from the others with
//! the job's stream (distinct draws are not enforced: a header included twice is read
//! twice, as an include guard still opens it); each read copies into the job's first heap
//! pages. At its end, before exiting, the job writes its object file (`object_bytes`). A
//! kernel tree: ~25,000 headers (most jobs touch 200–600), sources of 5–50 KiB, objects of
//! 10–100 KiB; the defaults are a smaller tree in proportion: 2,000 headers of 8 KiB, 200
//! per job of which 100 common, sources of 24 KiB, objects of 48 KiB (estimates).
//!
//! # Left out
//!
//! Text and libraries shared between the compiler processes (page cache, shared mappings):
//! each process touches its own copy, per [`Op::Spawn`]; the separate driver, `cc1` and
//! `as` processes and the shell (one process per job); the file system's metadata (`stat`,
//! directory lookups, `make`'s dependency checks); variation of job sizes; `make`'s dynamic
//! job slots; freeing of heap memory before exit.

use rand::Rng;

use super::{bad_vcpu, GuestEmitter, Image, STACK_TOP, TEXT_BASE};
use crate::error::Result;
use crate::trace::recorded::{FileIo, FileOp};
use crate::workload::common::{pages_of, split, stream, CHUNK_OPS};
use crate::workload::params::{fmt_size, Params};
use crate::workload::{Op, Workload};

const KEYS: &[&str] = &[
    "jobs",
    "parallel",
    "text_bytes",
    "data_bytes",
    "heap_bytes",
    "stack_bytes",
    "job_ns",
    "reuse",
    "sources",
    "headers",
    "header_bytes",
    "common_headers",
    "headers_per_job",
    "source_bytes",
    "object_bytes",
    "seed",
];
/// `make`'s own pages.
const MAKE: Image = Image {
    text: 16,
    data: 4,
    stack: 2,
};
/// Heap pages of `make`'s job table.
const MAKE_JOB_PAGES: u64 = 4;
const TAG_JOB: u64 = 0x4B42;
/// Most files the source tree may have (`sources=1`).
const MAX_FILES: u64 = 1 << 20;

#[derive(Clone, Debug)]
struct Config {
    jobs: u64,
    parallel: usize,
    text_bytes: u64,
    data_bytes: u64,
    heap_bytes: u64,
    stack_bytes: u64,
    job_ns: u64,
    reuse: u64,
    /// The source tree on files (`sources=1`), see the module docs.
    sources: bool,
    headers: u64,
    header_bytes: u64,
    common_headers: u64,
    headers_per_job: u64,
    source_bytes: u64,
    object_bytes: u64,
    seed: u64,
}

#[derive(Clone, Copy, Debug)]
enum Stage {
    /// Before job `j` starts (on this vCPU).
    Next {
        j: u64,
    },
    /// Step `i` of job `j`.
    Step {
        j: u64,
        i: u64,
    },
    Done,
}

#[derive(Debug)]
struct Slot {
    stage: Stage,
    em: GuestEmitter,
    rng: rand_xoshiro::Xoshiro256PlusPlus,
    /// The file records of the ops last handed out ([`Op::File`]'s slots).
    ios: Vec<FileIo>,
}

/// The kernbench model (see the module docs).
pub struct KernbenchLike {
    cfg: Config,
    image: Image,
    heap: u64,
    slots: Vec<Slot>,
}

impl KernbenchLike {
    pub(crate) fn parse(text: &str, run_seed: u64) -> Result<KernbenchLike> {
        let p = Params::parse("kernbench-like", text, KEYS)?;
        let size = |k: &str, default: u64, min: u64| -> Result<u64> {
            let b = p.size(k)?.unwrap_or(default);
            if b < min || b > 1 << 40 {
                return Err(p.err(
                    k,
                    format!("{} is outside [{}, 1TiB]", fmt_size(b), fmt_size(min)),
                ));
            }
            Ok(b)
        };
        let cfg = Config {
            jobs: p.u64_in("jobs", 64, 1, 1 << 24)?,
            parallel: p.u64_in("parallel", 4, 1, 1024)? as usize,
            text_bytes: size("text_bytes", 8 << 20, 4096)?,
            data_bytes: size("data_bytes", 1 << 20, 0)?,
            heap_bytes: size("heap_bytes", 24 << 20, 4096)?,
            stack_bytes: size("stack_bytes", 128 << 10, 4096)?,
            job_ns: p.u64_in("job_ns", 40_000_000, 0, 1 << 40)?,
            reuse: p.u64_in("reuse", 4, 0, 1024)?,
            sources: p.choice("sources", 0, &["0", "1"])? == 1,
            headers: p.u64_in("headers", 2000, 1, 1 << 20)?,
            header_bytes: size("header_bytes", 8 << 10, 1)?,
            common_headers: p.u64_in("common_headers", 100, 0, 1 << 20)?,
            headers_per_job: p.u64_in("headers_per_job", 200, 0, 1 << 20)?,
            source_bytes: size("source_bytes", 24 << 10, 1)?,
            object_bytes: size("object_bytes", 48 << 10, 1)?,
            seed: p.seed(run_seed)?,
        };
        if cfg.common_headers > cfg.headers.min(cfg.headers_per_job) {
            return Err(p.err("common_headers", "at most headers and headers_per_job"));
        }
        // Each file is an address space of the page cache (~200 bytes of state besides its
        // pages): a million files at most.
        if cfg.sources && cfg.headers + 2 * cfg.jobs > MAX_FILES {
            return Err(p.err(
                "jobs",
                format!(
                    "with sources=1 the tree has headers + 2 × jobs files, {} here: at most {MAX_FILES}",
                    cfg.headers + 2 * cfg.jobs
                ),
            ));
        }
        let image = Image {
            text: pages_of(cfg.text_bytes),
            data: pages_of(cfg.data_bytes),
            stack: pages_of(cfg.stack_bytes),
        };
        let slots = (0..cfg.parallel)
            .map(|v| Slot {
                stage: if (v as u64) < cfg.jobs {
                    Stage::Next { j: v as u64 }
                } else {
                    Stage::Done
                },
                em: GuestEmitter::default(),
                rng: stream(0, 0, 0),
                ios: Vec::new(),
            })
            .collect();
        Ok(KernbenchLike {
            heap: image.heap_base(),
            image,
            slots,
            cfg,
        })
    }

    /// Pages one job touches.
    pub fn job_pages(&self) -> u64 {
        self.image.pages() + self.steps()
    }

    /// `make`'s pages touched over the run.
    fn make_pages(&self) -> u64 {
        MAKE.pages() + self.cfg.jobs.min(MAKE_JOB_PAGES)
    }

    /// (pid, page) pairs touched over the whole run (every job's pages and `make`'s).
    pub fn touched_pages(&self) -> u64 {
        self.make_pages() + self.cfg.jobs * self.job_pages()
    }

    fn steps(&self) -> u64 {
        pages_of(self.cfg.heap_bytes)
    }

    fn step(&self, s: &mut Slot, v: usize, buf: &mut Vec<Op>) {
        let t = self.cfg.parallel as u64;
        match s.stage {
            Stage::Next { j } => {
                if j < t && v == 0 {
                    MAKE.touch(&mut s.em, buf);
                }
                s.em.access(buf, MAKE.heap_base() + j % MAKE_JOB_PAGES, true);
                let pid = j as u32 + 1;
                s.em.event(buf, Op::Spawn { pid });
                s.em.event(buf, Op::Switch { pid });
                s.rng = stream(self.cfg.seed, TAG_JOB, j);
                for p in 0..self.image.data {
                    s.em.access(buf, TEXT_BASE + self.image.text + p, true);
                }
                if self.cfg.sources {
                    let c = &self.cfg;
                    self.read_file(s, buf, c.headers + j, c.source_bytes);
                    for h in 0..c.headers_per_job {
                        let id = if h < c.common_headers {
                            h
                        } else {
                            s.rng
                                .gen_range(c.common_headers..c.headers.max(c.common_headers + 1))
                                .min(c.headers - 1)
                        };
                        self.read_file(s, buf, id, c.header_bytes);
                    }
                }
                s.stage = Stage::Step { j, i: 0 };
            }
            Stage::Step { j, i } => {
                let steps = self.steps();
                if i == steps {
                    let pid = j as u32 + 1;
                    if self.cfg.sources {
                        let c = &self.cfg;
                        for p in 0..pages_of(c.object_bytes).min(steps) {
                            s.em.access(buf, self.heap + p, false);
                        }
                        self.file_op(
                            s,
                            buf,
                            FileOp::Write,
                            c.headers + c.jobs + j,
                            c.object_bytes,
                        );
                    }
                    s.em.event(buf, Op::Switch { pid: 0 });
                    s.em.event(buf, Op::Exit { pid });
                    s.stage = if j + t < self.cfg.jobs {
                        Stage::Next { j: j + t }
                    } else {
                        s.em.flush(buf);
                        Stage::Done
                    };
                    return;
                }
                let (lo, hi) = split(self.cfg.job_ns, steps, i);
                s.em.compute(hi - lo);
                let (tlo, thi) = split(self.image.text, steps, i);
                for p in tlo..thi {
                    s.em.access(buf, TEXT_BASE + p, false);
                }
                let hot = s.rng.gen_range(0..thi.max(1));
                s.em.access(buf, TEXT_BASE + hot, false);
                let (slo, shi) = split(self.image.stack, steps, i);
                for p in slo..shi {
                    s.em.access(buf, STACK_TOP - p, true);
                }
                s.em.access(buf, self.heap + i, true);
                for _ in 0..self.cfg.reuse {
                    let p = s.rng.gen_range(0..=i);
                    let write = s.rng.gen_range(0..3) == 0;
                    s.em.access(buf, self.heap + p, write);
                }
                s.stage = Stage::Step { j, i: i + 1 };
            }
            Stage::Done => {}
        }
    }
}

impl KernbenchLike {
    /// A file op of the job on `s`'s vCPU: `op` of `len` bytes from the start of file `id`.
    fn file_op(&self, s: &mut Slot, buf: &mut Vec<Op>, op: FileOp, id: u64, len: u64) {
        s.em.flush(buf);
        s.em.split();
        crate::workload::common::push_file_op(buf, &mut s.ios, op, id as u32, 0, len);
    }

    /// Read file `id` whole into the job's first heap pages.
    fn read_file(&self, s: &mut Slot, buf: &mut Vec<Op>, id: u64, len: u64) {
        self.file_op(s, buf, FileOp::Read, id, len);
        for p in 0..pages_of(len).min(self.steps()) {
            s.em.access(buf, self.heap + p, true);
        }
    }
}

impl Workload for KernbenchLike {
    fn name(&self) -> String {
        let c = &self.cfg;
        format!(
            "kernbench-like:jobs={},parallel={},text_bytes={},data_bytes={},heap_bytes={},stack_bytes={},job_ns={},reuse={},seed={}",
            c.jobs,
            c.parallel,
            fmt_size(c.text_bytes),
            fmt_size(c.data_bytes),
            fmt_size(c.heap_bytes),
            fmt_size(c.stack_bytes),
            c.job_ns,
            c.reuse,
            c.seed
        ) + &if c.sources {
            format!(
                ",sources=1,headers={},header_bytes={},common_headers={},headers_per_job={},source_bytes={},object_bytes={}",
                c.headers,
                fmt_size(c.header_bytes),
                c.common_headers,
                c.headers_per_job,
                fmt_size(c.source_bytes),
                fmt_size(c.object_bytes)
            )
        } else {
            String::new()
        }
    }

    fn threads(&self) -> usize {
        self.cfg.parallel
    }

    fn footprint_pages(&self) -> u64 {
        self.make_pages() + self.cfg.jobs.min(self.cfg.parallel as u64) * self.job_pages()
    }

    fn files(&self) -> Vec<crate::mm::FileSpec> {
        let c = &self.cfg;
        if !c.sources {
            return Vec::new();
        }
        let file = |id: u64, size: u64, exists: bool| crate::mm::FileSpec {
            id: id as u32,
            initial_size: if exists { size } else { 0 },
            extent: size,
        };
        (0..c.headers)
            .map(|h| file(h, c.header_bytes, true))
            .chain((0..c.jobs).map(|j| file(c.headers + j, c.source_bytes, true)))
            .chain((0..c.jobs).map(|j| file(c.headers + c.jobs + j, c.object_bytes, false)))
            .collect()
    }

    fn file_io(&self, tid: usize, slot: u32) -> Option<&FileIo> {
        self.slots.get(tid)?.ios.get(slot as usize)
    }

    fn next_ops(&mut self, v: usize, buf: &mut Vec<Op>) -> Result<()> {
        if v >= self.cfg.parallel {
            return Err(bad_vcpu("kernbench-like", v, self.cfg.parallel));
        }
        let mut s = std::mem::replace(
            &mut self.slots[v],
            Slot {
                stage: Stage::Done,
                em: GuestEmitter::default(),
                rng: stream(0, 0, 0),
                ios: Vec::new(),
            },
        );
        s.ios.clear();
        let start = buf.len();
        while buf.len() - start < CHUNK_OPS && !matches!(s.stage, Stage::Done) {
            self.step(&mut s, v, buf);
        }
        self.slots[v] = s;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::vm::workloads::parse;

    const SMALL: &str = "kernbench-like:jobs=10,parallel=3,text_bytes=40KiB,data_bytes=8KiB,heap_bytes=64KiB,stack_bytes=12KiB,job_ns=1000000";

    #[test]
    fn process_churn_and_footprint() {
        let (w, s) = run(SMALL, 1);
        let c = census(&s);
        // 10 jobs: a Spawn, two Switches (in and back to make) and an Exit each.
        assert_eq!((c.spawns, c.exits, c.switches, c.unmaps), (10, 10, 20, 0));
        // Jobs 0, 3, 6, 9 on vCPU 0; 1, 4, 7 on vCPU 1; 2, 5, 8 on vCPU 2.
        let spawned: Vec<u32> = s[1]
            .iter()
            .filter_map(|o| match o {
                Op::Spawn { pid } => Some(*pid),
                _ => None,
            })
            .collect();
        assert_eq!(spawned, vec![2, 5, 8]);
        // A job: 10 text + 2 data + 16 heap + 3 stack = 31 pages.
        let k = KernbenchLike::parse(SMALL.split_once(':').unwrap().1, 1).unwrap();
        assert_eq!(k.job_pages(), 31);
        for pid in 1..=10u32 {
            assert_eq!(c.per_pid[&pid].len(), 31, "pid {pid}");
        }
        // make: 22 image pages and its 4 job-table pages.
        assert_eq!(c.per_pid[&0].len(), 26);
        assert_eq!(c.distinct, 26 + 10 * 31);
        assert_eq!(k.touched_pages(), c.distinct);
        // At most 3 jobs live at once.
        assert_eq!(w.footprint_pages(), 26 + 3 * 31);
        // CPU: exactly job_ns per job.
        assert_eq!(c.compute_ns, 10 * 1_000_000);
        // Heap accesses of the jobs: per step the new page (a write) and 4 reuses, one in
        // three a write; merging a reuse into the access before it (same page) only lowers
        // the counts, so 10 × 16 × 5 = 800 is an upper bound; a reuse repeats the page
        // before it with probability E[1/(i+1)] = H(16)/16 = 0.211, so at most ~135 of the
        // 640 merge (sd ~12): more than 620 remain. The reuses' write share stays near 1/3
        // (binomial sd 0.019 over 640 reuses).
        let (mut hr, mut hw) = (0u64, 0u64);
        for st in &s {
            let mut cur = 0;
            for op in st {
                match *op {
                    Op::Switch { pid } => cur = pid,
                    Op::Access { page, write }
                        if cur != 0 && (k.heap..k.heap + 16).contains(&page) =>
                    {
                        if write {
                            hw += 1
                        } else {
                            hr += 1
                        }
                    }
                    _ => {}
                }
            }
        }
        assert!(hr + hw <= 800 && hr + hw > 620, "{hr} + {hw}");
        assert!(hw >= 160);
        let share = (hw - 160) as f64 / (hr + hw - 160) as f64;
        assert!((share - 1.0 / 3.0).abs() < 0.1, "{share}");
    }

    #[test]
    fn defaults_and_determinism() {
        let w = KernbenchLike::parse("", 0).unwrap();
        // 2048 text + 256 data + 6144 heap + 32 stack pages.
        assert_eq!(w.job_pages(), 8480);
        assert_eq!(w.footprint_pages(), 26 + 4 * 8480);
        assert_eq!(w.touched_pages(), 26 + 64 * 8480);
        let (w, a) = run(SMALL, 5);
        let mut again = parse(SMALL, 5).unwrap();
        assert_eq!(drain(again.as_mut(), Order::ReverseSerial), a);
        let (_, b) = run(SMALL, 6);
        assert_ne!(a, b);
        assert_eq!(
            w.name(),
            "kernbench-like:jobs=10,parallel=3,text_bytes=40KiB,data_bytes=8KiB,heap_bytes=64KiB,stack_bytes=12KiB,job_ns=1000000,reuse=4,seed=5"
        );
        let (_, c) = run(&w.name(), 0);
        assert_eq!(c, a);
        // More vCPUs than jobs: the idle vCPUs produce nothing.
        let (_, s) = run("kernbench-like:jobs=1,parallel=2,heap_bytes=8KiB", 1);
        assert!(s[1].is_empty());
        assert_eq!(census(&s).spawns, 1);
    }

    #[test]
    fn the_source_tree_is_read_and_objects_written() {
        // 3 jobs on 2 vCPUs, 10 headers of 4 KiB of which 2 common, 4 headers a job: each
        // job reads its source (file 10 + j) and headers 0, 1 and two drawn from 2..10,
        // then writes its object (file 13 + j): 5 reads and 1 write a job.
        let spec = "kernbench-like:jobs=3,parallel=2,heap_bytes=64KiB,text_bytes=16KiB,\
                    job_ns=1000,sources=1,headers=10,header_bytes=4KiB,common_headers=2,\
                    headers_per_job=4,source_bytes=8KiB,object_bytes=12KiB";
        let mut w = parse(spec, 3).unwrap();
        let files = w.files();
        assert_eq!(files.len(), 10 + 3 + 3);
        assert_eq!((files[12].id, files[12].initial_size), (12, 8 << 10));
        assert_eq!(
            (files[15].id, files[15].initial_size, files[15].extent),
            (15, 0, 12 << 10)
        );
        let mut per_vcpu = Vec::new();
        for v in 0..2 {
            let mut recs = Vec::new();
            let mut buf = Vec::new();
            loop {
                buf.clear();
                w.next_ops(v, &mut buf).unwrap();
                if buf.is_empty() {
                    break;
                }
                for op in &buf {
                    if let Op::File { slot } = op {
                        recs.push(*w.file_io(v, *slot).unwrap());
                    }
                }
            }
            per_vcpu.push(recs);
        }
        // vCPU 0 runs jobs 0 and 2, vCPU 1 job 1.
        assert_eq!((per_vcpu[0].len(), per_vcpu[1].len()), (12, 6));
        let job1 = &per_vcpu[1];
        assert_eq!(
            (job1[0].op, job1[0].file, job1[0].len),
            (FileOp::Read, 11, 8 << 10)
        );
        assert_eq!((job1[1].file, job1[2].file), (0, 1));
        assert!(job1[3..5].iter().all(|r| (2..10).contains(&r.file)));
        assert_eq!(
            (job1[5].op, job1[5].file, job1[5].len),
            (FileOp::Write, 14, 12 << 10)
        );
        assert!(w.name().contains(",sources=1,headers=10,"));
        // Without sources the stream and the name are as before.
        assert!(!parse(SMALL, 1).unwrap().name().contains("sources"));
        assert!(parse(SMALL, 1).unwrap().files().is_empty());
    }

    #[test]
    fn spec_errors_name_the_key() {
        let e = |s: &str| parse(s, 0).err().unwrap().to_string();
        assert_eq!(
            e("kernbench-like:heap_bytes=0"),
            "kernbench-like.heap_bytes: 0 is outside [4KiB, 1TiB]"
        );
        assert_eq!(
            e("kernbench-like:jobs=0"),
            "kernbench-like.jobs: 0 is outside [1, 16777216]"
        );
        assert!(e("kernbench-like:jobs=1000000,sources=1")
            .starts_with("kernbench-like.jobs: with sources=1 the tree has headers + 2 × jobs files, 2002000 here"));
        assert!(e("kernbench-like:j=8")
            .starts_with("kernbench-like.j: unknown key for kernbench-like (valid: jobs,"));
    }
}

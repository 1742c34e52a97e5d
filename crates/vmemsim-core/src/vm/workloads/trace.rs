//! `trace`: a recorded real program run inside the VM. The trace is a native trace file
//! (version 1 or 2: `vmemsim trace record`, `vmemsim workloads record`, `trace convert`, a
//! shipped trace under `traces/`), replayed as guest-virtual page accesses of one guest
//! process.
//!
//! Keys: `path` (required; relative to the working directory), `vcpus` (1), `ns_per_insn`
//! (0.3: about one instruction per cycle at 3.3 GHz; kept to the picosecond), `seed` (unused: the stream is the
//! trace's; kept for the common grammar).
//!
//! # What a record becomes
//!
//! - An access record is one [`Op::Access`] of its page (reads and instruction fetches as
//!   reads, a write if any folded access wrote). The record's further same-page accesses
//!   (`count` − 1) hit the TLB and touch no memory manager; they are not replayed one by one.
//! - The instructions executed since the previous record (the difference of the records'
//!   global instruction stamps, version 2) become [`Op::Compute`] of `ns_per_insn` each,
//!   charged to the vCPU of the record's thread: the recorder serialises threads, so the
//!   instructions before a record were run by its thread, except around a thread switch.
//!   Version-1 traces have no stamps: no compute.
//! - Threads (the recorder's thread ids, in order of first appearance) are spread over
//!   `vcpus` vCPUs round-robin. The recorded command's own threads (tids below 1,000) run in
//!   guest process 0; a forked child's threads (tid = pid × 1,000 + thread, see
//!   docs/recording.md) run in a guest process of their own, created at the start of
//!   vCPU 0's stream, and a vCPU switches process (a CR3 load) when its next record is
//!   another process's. Tids the recorder gave from 4,200,000,000 up (a reused pid) count
//!   as one process each. Copy-on-write sharing between a parent and its child is left out
//!   of the VM layer, so a child's pages are its own.
//! - A file I/O record (`read`, `pwrite64`, `fsync`, `fadvise64`, `O_DIRECT` ...) is an
//!   [`Op::File`] of its thread's vCPU, served by the guest's page cache and its virtual
//!   disk; an `O_DIRECT` buffer is not pinned (`get_user_pages` is not carried on the timed
//!   path), and `mmap` records stay skipped (`file_mmaps_skipped`).
//!
//! The trace is read twice: once when the workload is built (its distinct (process, page)
//! pairs are the footprint that percentages of guest memory refer to), then streamed while
//! it runs.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::error::{Error, Result};
use crate::trace::recorded::{Event, RecordedReader};
use crate::workload::params::Params;

use super::super::machine::VA_PAGES;
use crate::workload::{Op, Workload};

const KEYS: &[&str] = &["path", "vcpus", "ns_per_insn", "seed"];
/// Ops handed out per `next_ops` call at most.
const CHUNK: usize = 4096;

/// A recorded trace as a guest workload (see the module docs).
pub struct TraceGuest {
    path: String,
    vcpus: usize,
    ns_per_insn: f64,
    seed: u64,
    footprint: u64,
    reader: RecordedReader,
    events: Vec<Event>,
    next: usize,
    done: bool,
    queues: Vec<VecDeque<Op>>,
    /// Recorder thread id → vCPU.
    threads: HashMap<u32, usize>,
    /// Recorder process key → guest pid (the recorded command itself is pid 0).
    procs: HashMap<u64, u32>,
    /// The guest pid each vCPU runs, and whether vCPU 0 has created the processes.
    running: Vec<u32>,
    spawned: bool,
    last_stamp: u64,
    /// `ns_per_insn` in ps, and the ps not yet emitted (so that short gaps add up exactly).
    ps_per_insn: u64,
    carry_ps: u64,
    /// The files of the file I/O records; per vCPU, the records of its queued file ops (in
    /// queue order) and of the ops last handed out (the slots of [`Op::File`]).
    files: Vec<crate::mm::FileSpec>,
    pending_ios: Vec<VecDeque<crate::trace::recorded::FileIo>>,
    ios: Vec<Vec<crate::trace::recorded::FileIo>>,
}

fn open(p: &Params, path: &str) -> Result<RecordedReader> {
    let r = RecordedReader::open(path).map_err(|e| p.err("path", e.to_string()))?;
    let ps = r.meta().page_size;
    if ps != 4096 {
        return Err(p.err(
            "path",
            format!("{path}: pages of {ps} bytes; a guest trace needs 4 KiB pages"),
        ));
    }
    Ok(r)
}

/// The process of a recorder thread id: 0 for the recorded command's own threads (tids
/// below 1,000), the pid for a forked child's (pid × 1,000 + thread), the tid itself for the
/// recorder's fallback ids (from 4,200,000,000).
fn process_of(tid: u32) -> u64 {
    match tid {
        0..=999 => 0,
        4_200_000_000.. => tid as u64,
        _ => (tid / 1000) as u64,
    }
}

impl TraceGuest {
    pub(crate) fn parse(text: &str, run_seed: u64) -> Result<TraceGuest> {
        let p = Params::parse("trace", text, KEYS)?;
        let path = p
            .get("path")
            .ok_or_else(|| p.err("path", "missing: give path=FILE (a native trace)"))?
            .to_string();
        let vcpus = p.u64_in("vcpus", 1, 1, 1024)? as usize;
        let ns_per_insn = p.f64_in("ns_per_insn", 0.3, 0.0, 1e6)?;
        let seed = p.seed(run_seed)?;
        // First pass: the footprint, the pages' range and the processes.
        let mut r = open(&p, &path)?;
        let mut pages = HashSet::new();
        let mut procs: HashMap<u64, u32> = HashMap::from([(0, 0)]);
        let mut buf = Vec::new();
        loop {
            r.next_events(&mut buf)
                .map_err(|e| p.err("path", e.to_string()))?;
            if buf.is_empty() {
                break;
            }
            for e in &buf {
                if let Event::Access(a) = e {
                    if a.page >= VA_PAGES {
                        return Err(p.err(
                            "path",
                            format!(
                                "{path}: page {:#x} is beyond a 48-bit address space",
                                a.page
                            ),
                        ));
                    }
                    let n = procs.len() as u32;
                    let pid = *procs.entry(process_of(a.tid)).or_insert(n);
                    pages.insert((pid, a.page));
                }
            }
        }
        let files = crate::trace::open(
            &path,
            Some(crate::trace::TraceFormat::Native),
            &Default::default(),
        )
        .and_then(|mut src| src.files())
        .map_err(|e| p.err("path", e.to_string()))?
        .unwrap_or_default();
        Ok(TraceGuest {
            files,
            pending_ios: vec![VecDeque::new(); vcpus],
            ios: vec![Vec::new(); vcpus],
            reader: open(&p, &path)?,
            path,
            vcpus,
            ns_per_insn,
            seed,
            footprint: pages.len() as u64,
            events: Vec::new(),
            next: 0,
            done: false,
            queues: vec![VecDeque::new(); vcpus],
            threads: HashMap::new(),
            procs,
            running: vec![0; vcpus],
            spawned: false,
            last_stamp: 0,
            ps_per_insn: (ns_per_insn * 1000.0).round() as u64,
            carry_ps: 0,
        })
    }

    /// Route the next record to its vCPU's queue; false at the end of the trace.
    fn pull(&mut self) -> Result<bool> {
        if self.next == self.events.len() {
            if self.done {
                return Ok(false);
            }
            self.reader
                .next_events(&mut self.events)
                .map_err(|e| Error::config("trace.path", format!("{}: {e}", self.path)))?;
            self.next = 0;
            if self.events.is_empty() {
                self.done = true;
                return Ok(false);
            }
        }
        let e = &self.events[self.next];
        self.next += 1;
        if let Event::Io(io) = e {
            let n = self.threads.len();
            let v = *self.threads.entry(io.tid).or_insert(n % self.vcpus);
            let pid = self.procs.get(&process_of(io.tid)).copied().unwrap_or(0);
            let q = &mut self.queues[v];
            if self.running[v] != pid {
                self.running[v] = pid;
                q.push_back(Op::Switch { pid });
            }
            let mut io = *io;
            if io.op != crate::trace::recorded::FileOp::Fadvise {
                io.addr = 0;
            }
            q.push_back(Op::File { slot: 0 });
            self.pending_ios[v].push_back(io);
            return Ok(true);
        }
        let Event::Access(a) = e else {
            return Ok(true);
        };
        let n = self.threads.len();
        let v = *self.threads.entry(a.tid).or_insert(n % self.vcpus);
        let pid = self.procs[&process_of(a.tid)];
        let q = &mut self.queues[v];
        if self.running[v] != pid {
            self.running[v] = pid;
            q.push_back(Op::Switch { pid });
        }
        if a.stamp > self.last_stamp {
            self.carry_ps = self
                .carry_ps
                .saturating_add((a.stamp - self.last_stamp).saturating_mul(self.ps_per_insn));
            self.last_stamp = a.stamp;
            while self.carry_ps >= 1000 {
                let ns = (self.carry_ps / 1000).min(u32::MAX as u64) as u32;
                q.push_back(Op::Compute { ns });
                self.carry_ps -= ns as u64 * 1000;
            }
        }
        q.push_back(Op::Access {
            page: a.page,
            write: a.write,
        });
        Ok(true)
    }
}

impl Workload for TraceGuest {
    fn name(&self) -> String {
        format!(
            "trace:path={},vcpus={},ns_per_insn={},seed={}",
            self.path, self.vcpus, self.ns_per_insn, self.seed
        )
    }

    fn threads(&self) -> usize {
        self.vcpus
    }

    fn footprint_pages(&self) -> u64 {
        self.footprint
    }

    fn next_ops(&mut self, v: usize, buf: &mut Vec<Op>) -> Result<()> {
        if v >= self.vcpus {
            return Err(super::bad_vcpu("trace", v, self.vcpus));
        }
        if !self.spawned {
            // Every process exists before any vCPU's stream switches to it: vCPU 0's first
            // ops create them (the runner polls vCPU 0 first).
            self.spawned = true;
            let mut pids: Vec<u32> = self.procs.values().copied().filter(|&p| p != 0).collect();
            pids.sort_unstable_by(|a, b| b.cmp(a));
            for pid in pids {
                self.queues[0].push_front(Op::Spawn { pid });
            }
        }
        while self.queues[v].is_empty() {
            if !self.pull()? {
                break;
            }
        }
        let q = &mut self.queues[v];
        let n = q.len().min(CHUNK);
        let (ios, pending) = (&mut self.ios[v], &mut self.pending_ios[v]);
        ios.clear();
        buf.extend(q.drain(..n).map(|op| match op {
            Op::File { .. } => {
                ios.extend(pending.pop_front());
                Op::File {
                    slot: ios.len() as u32 - 1,
                }
            }
            op => op,
        }));
        Ok(())
    }

    fn files(&self) -> Vec<crate::mm::FileSpec> {
        self.files.clone()
    }

    fn file_io(&self, tid: usize, slot: u32) -> Option<&crate::trace::recorded::FileIo> {
        self.ios.get(tid)?.get(slot as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::recorded::{Recorded, RecordedWriter};
    use crate::trace::TraceMeta;

    /// Thread 1 writes pages 0x1000..0x1010 (16 records, 1,000 instructions apart), thread 2
    /// reads pages 0x2000..0x2008 interleaved after each of thread 1's first 8 (500
    /// instructions after it); a file table entry in between.
    fn trace_file(name: &str) -> String {
        let path = std::env::temp_dir().join(format!(
            "vmemsim-guest-trace-{}-{name}.vmt",
            std::process::id()
        ));
        let path = path.to_str().unwrap().to_string();
        let meta = TraceMeta {
            page_size: 4096,
            ..TraceMeta::default()
        };
        let mut w = RecordedWriter::create(&path, meta).unwrap();
        w.file(1, "/etc/hosts").unwrap();
        for i in 0..16u64 {
            w.access(Recorded {
                page: 0x1000 + i,
                write: true,
                tid: 1,
                count: 3,
                stamp: 1_000 * (i + 1),
                ..Recorded::default()
            })
            .unwrap();
            if i < 8 {
                w.access(Recorded {
                    page: 0x2000 + i,
                    tid: 2,
                    count: 1,
                    stamp: 1_000 * (i + 1) + 500,
                    ..Recorded::default()
                })
                .unwrap();
            }
        }
        w.into_inner().unwrap();
        path
    }

    fn drain(w: &mut TraceGuest, v: usize) -> Vec<Op> {
        let mut all = Vec::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            w.next_ops(v, &mut buf).unwrap();
            if buf.is_empty() {
                return all;
            }
            all.extend_from_slice(&buf);
        }
    }

    #[test]
    fn records_become_accesses_and_compute_per_thread() {
        let path = trace_file("two");
        let mut w = TraceGuest::parse(&format!("path={path},vcpus=2,ns_per_insn=0.5"), 0).unwrap();
        assert_eq!(w.footprint_pages(), 24);
        assert_eq!(w.threads(), 2);
        let v0 = drain(&mut w, 0);
        let v1 = drain(&mut w, 1);
        let pages = |ops: &[Op]| -> Vec<(u64, bool)> {
            ops.iter()
                .filter_map(|o| match o {
                    Op::Access { page, write } => Some((*page, *write)),
                    _ => None,
                })
                .collect()
        };
        let ns = |ops: &[Op]| -> u64 {
            ops.iter()
                .map(|o| match o {
                    Op::Compute { ns } => *ns as u64,
                    _ => 0,
                })
                .sum()
        };
        // Thread 1 (first seen) on vCPU 0, thread 2 on vCPU 1, each in recorded order.
        let want0: Vec<(u64, bool)> = (0..16).map(|i| (0x1000 + i, true)).collect();
        let want1: Vec<(u64, bool)> = (0..8).map(|i| (0x2000 + i, false)).collect();
        assert_eq!(pages(&v0), want0);
        assert_eq!(pages(&v1), want1);
        // Instructions between records, at 0.5 ns each, charged to the next record's thread:
        // thread 1's first record follows 1,000 instructions, its next 8 follow thread 2's
        // records by 500 each, its last 7 follow its own by 1,000; thread 2's 8 records
        // follow thread 1's by 500 each. Total 16,000 instructions = the last stamp.
        assert_eq!(ns(&v0), (1_000 + 8 * 500 + 7 * 1_000) / 2);
        assert_eq!(ns(&v1), 8 * 500 / 2);
        assert!(w.name().starts_with(&format!("trace:path={path},vcpus=2")));
        std::fs::remove_file(&path).ok();
    }

    #[test]
    fn a_trace_runs_in_a_vm_and_bad_specs_name_the_key() {
        let path = trace_file("vm");
        let mut w = super::super::parse(&format!("trace:path={path}"), 0).unwrap();
        let mut cfg = crate::vm::VmConfig::new(crate::vm::Paging::Tdp, 64, 256);
        cfg.costs.access_ns = 0;
        let r = crate::vm::run(&cfg, w.as_mut()).unwrap();
        // Each of the 24 pages is accessed once: one guest fault (first touch) each, and the
        // guest's manager sees each access once (every one misses the TLB); compute is the
        // last stamp, 16,000 instructions, × 0.3 ns.
        assert_eq!(r.stats.first_touch, 24);
        assert_eq!(r.stats.accesses, 24);
        assert_eq!(r.time.compute_ns, 4_800);
        std::fs::remove_file(&path).ok();
        for (spec, key) in [
            ("trace", "trace.path"),
            ("trace:path=/nonexistent.vmt", "trace.path"),
            ("trace:path=x,vcpus=0", "trace.vcpus"),
            ("trace:path=x,speed=2", "trace.speed"),
        ] {
            let e = super::super::parse(spec, 0).err().unwrap().to_string();
            assert!(e.contains(key), "{spec}: {e}");
        }
    }
}

#[cfg(test)]
mod fork_tests {
    use super::*;
    use crate::trace::recorded::{Recorded, RecordedWriter};
    use crate::trace::TraceMeta;

    #[test]
    fn a_forked_child_runs_in_a_guest_process_of_its_own() {
        // The parent (tid 1) writes pages 0x10..0x14, its child pid 4242 (tid 4242001)
        // writes the same virtual pages 0x10..0x14 (its own copies) and 0x20, then the parent
        // reads 0x10 again. Guest: process 1 is created first, the vCPU switches to it for
        // the child's records and back to 0; 4 + 5 distinct (process, page) pairs.
        let path =
            std::env::temp_dir().join(format!("vmemsim-guest-fork-{}.vmt", std::process::id()));
        let path = path.to_str().unwrap().to_string();
        let meta = TraceMeta {
            page_size: 4096,
            ..TraceMeta::default()
        };
        let mut w = RecordedWriter::create(&path, meta).unwrap();
        let rec = |page, tid, write| Recorded {
            page,
            write,
            tid,
            count: 1,
            ..Recorded::default()
        };
        for p in 0x10..0x14 {
            w.access(rec(p, 1, true)).unwrap();
        }
        for p in (0x10..0x14).chain([0x20]) {
            w.access(rec(p, 4_242_001, true)).unwrap();
        }
        w.access(rec(0x10, 1, false)).unwrap();
        w.into_inner().unwrap();
        let mut g = TraceGuest::parse(&format!("path={path}"), 0).unwrap();
        assert_eq!(g.footprint_pages(), 9);
        let mut buf = Vec::new();
        let mut all = Vec::new();
        loop {
            buf.clear();
            g.next_ops(0, &mut buf).unwrap();
            if buf.is_empty() {
                break;
            }
            all.extend_from_slice(&buf);
        }
        let acc = |page, write| Op::Access { page, write };
        let mut want = vec![Op::Spawn { pid: 1 }];
        want.extend((0x10..0x14).map(|p| acc(p, true)));
        want.push(Op::Switch { pid: 1 });
        want.extend((0x10..0x14).chain([0x20]).map(|p| acc(p, true)));
        want.push(Op::Switch { pid: 0 });
        want.push(acc(0x10, false));
        assert_eq!(all, want);
        // In a VM: 9 guest first touches, no error for the process switches.
        let mut g = TraceGuest::parse(&format!("path={path}"), 0).unwrap();
        let cfg = crate::vm::VmConfig::new(crate::vm::Paging::Tdp, 64, 256);
        let r = crate::vm::run(&cfg, &mut g).unwrap();
        assert_eq!(r.stats.first_touch, 9);
        assert_eq!(r.processes_created, 2);
        std::fs::remove_file(&path).ok();
    }
}

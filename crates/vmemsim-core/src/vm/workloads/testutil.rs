//! Helpers for the guest workload tests: drain every vCPU under several polling orders, and
//! count what the streams do, following each vCPU's current process.
#![allow(clippy::needless_range_loop)]

use std::collections::{HashMap, HashSet};

use crate::workload::{Op, Workload};

#[derive(Clone, Copy, Debug)]
pub enum Order {
    /// One chunk per vCPU in turn.
    RoundRobin,
    /// Each vCPU to the end, last vCPU first.
    ReverseSerial,
}

/// Parse `spec` and drain every vCPU's stream round-robin.
pub fn run(spec: &str, seed: u64) -> (Box<dyn Workload>, Vec<Vec<Op>>) {
    let mut w = crate::vm::workloads::parse(spec, seed).unwrap();
    let s = drain(w.as_mut(), Order::RoundRobin);
    (w, s)
}

/// Every vCPU's full stream, polling in `order`.
pub fn drain(w: &mut dyn Workload, order: Order) -> Vec<Vec<Op>> {
    let n = w.threads();
    let mut out: Vec<Vec<Op>> = vec![Vec::new(); n];
    let mut buf = Vec::new();
    let mut poll = |w: &mut dyn Workload, v: usize, out: &mut Vec<Vec<Op>>| -> bool {
        buf.clear();
        w.next_ops(v, &mut buf).unwrap();
        out[v].extend_from_slice(&buf);
        buf.is_empty()
    };
    match order {
        Order::RoundRobin => {
            let mut done = vec![false; n];
            while done.iter().any(|d| !d) {
                for v in 0..n {
                    if !done[v] {
                        done[v] = poll(w, v, &mut out);
                    }
                }
            }
        }
        Order::ReverseSerial => {
            for v in (0..n).rev() {
                while !poll(w, v, &mut out) {}
            }
        }
    }
    for v in 0..n {
        buf.clear();
        w.next_ops(v, &mut buf).unwrap();
        assert!(buf.is_empty(), "vCPU {v} produced ops after finishing");
    }
    out
}

/// Every stream's ops and the file records of its [`Op::File`]s, polling round-robin (the
/// records are valid only until the stream's next poll, so they are copied as they come).
pub fn drain_with_files(
    w: &mut dyn Workload,
) -> (Vec<Vec<Op>>, Vec<Vec<crate::trace::recorded::FileIo>>) {
    let n = w.threads();
    let (mut ops, mut ios) = (vec![Vec::new(); n], vec![Vec::new(); n]);
    let mut done = vec![false; n];
    let mut buf = Vec::new();
    while done.iter().any(|d| !d) {
        for v in 0..n {
            if done[v] {
                continue;
            }
            buf.clear();
            w.next_ops(v, &mut buf).unwrap();
            done[v] = buf.is_empty();
            for op in &buf {
                if let Op::File { slot } = op {
                    ios[v].push(*w.file_io(v, *slot).unwrap());
                }
            }
            ops[v].extend_from_slice(&buf);
        }
    }
    (ops, ios)
}

/// What the streams did, with every access attributed to the process its vCPU ran.
#[derive(Debug, Default)]
pub struct Census {
    /// Distinct (pid, page) pairs.
    pub distinct: u64,
    /// Distinct pages per pid.
    pub per_pid: HashMap<u32, HashSet<u64>>,
    pub reads: u64,
    pub writes: u64,
    pub spawns: u64,
    pub exits: u64,
    pub switches: u64,
    pub unmaps: u64,
    pub unmapped_pages: u64,
    pub barriers: u64,
    /// `RequestBegin`s by kind.
    pub requests: [u64; 3],
    pub compute_ns: u64,
    /// Each stream's `Arrive` times, in stream order.
    pub arrivals: Vec<Vec<u64>>,
    /// File I/O calls.
    pub file_ops: u64,
}

/// Count `streams`, checking the process rules of the module docs: a pid is spawned once,
/// switched to only while alive, exits only while not running on its own vCPU; requests do
/// not nest; every `RequestBegin` of an open-loop stream follows an `Arrive`.
pub fn census(streams: &[Vec<Op>]) -> Census {
    let mut c = Census::default();
    let mut spawned: HashSet<u32> = HashSet::new();
    let mut exited: HashSet<u32> = HashSet::new();
    for (v, s) in streams.iter().enumerate() {
        let mut cur = 0u32;
        let mut open = false;
        let mut arrived = false;
        let mut arr = Vec::new();
        for op in s {
            match *op {
                Op::Access { page, write } => {
                    assert!(!exited.contains(&cur), "vCPU {v} runs exited pid {cur}");
                    c.per_pid.entry(cur).or_default().insert(page);
                    if write {
                        c.writes += 1;
                    } else {
                        c.reads += 1;
                    }
                }
                Op::Compute { ns } => c.compute_ns += ns as u64,
                Op::RequestBegin { kind } => {
                    assert!(!open, "vCPU {v}: nested request");
                    open = true;
                    c.requests[kind as usize] += 1;
                    if !arr.is_empty() {
                        assert!(arrived, "vCPU {v}: request without Arrive");
                    }
                    arrived = false;
                }
                Op::RequestEnd => {
                    assert!(open, "vCPU {v}: end without begin");
                    open = false;
                }
                Op::Barrier => {
                    assert!(!open, "vCPU {v}: barrier inside a request");
                    c.barriers += 1;
                }
                Op::Spawn { pid } => {
                    assert!(pid != 0 && spawned.insert(pid), "pid {pid} spawned twice");
                    c.spawns += 1;
                }
                Op::Switch { pid } => {
                    assert!(pid == 0 || spawned.contains(&pid), "switch to unborn {pid}");
                    assert!(!exited.contains(&pid), "switch to exited {pid}");
                    cur = pid;
                    c.switches += 1;
                }
                Op::Exit { pid } => {
                    assert!(
                        spawned.contains(&pid) && exited.insert(pid),
                        "exit of {pid}"
                    );
                    assert_ne!(pid, cur, "vCPU {v} exits the process it runs");
                    c.exits += 1;
                }
                Op::Unmap { pages, .. } => {
                    c.unmaps += 1;
                    c.unmapped_pages += pages as u64;
                }
                Op::Arrive { at_ns } => {
                    assert!(!open && !arrived, "vCPU {v}: Arrive inside a request");
                    arrived = true;
                    arr.push(at_ns);
                }
                Op::File { .. } => c.file_ops += 1,
            }
        }
        assert!(!open, "vCPU {v}: stream ends inside a request");
        c.arrivals.push(arr);
    }
    c.distinct = c.per_pid.values().map(|s| s.len() as u64).sum();
    c
}

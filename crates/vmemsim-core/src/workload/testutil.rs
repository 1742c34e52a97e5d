//! Helpers for the workload tests: drain every thread under several polling orders.
#![allow(clippy::needless_range_loop)]

use super::{Op, Workload};

#[derive(Clone, Copy, Debug)]
pub enum Order {
    /// One chunk per thread in turn.
    RoundRobin,
    /// Each thread to the end, last thread first.
    ReverseSerial,
    /// A seeded pseudo-random choice of thread for each chunk.
    Shuffled(u64),
}

/// Every thread's full stream, polling threads in `order`.
pub fn drain(w: &mut dyn Workload, order: Order) -> Vec<Vec<Op>> {
    let n = w.threads();
    let mut out: Vec<Vec<Op>> = vec![Vec::new(); n];
    let mut done = vec![false; n];
    let mut buf = Vec::new();
    let mut poll = |w: &mut dyn Workload, t: usize, out: &mut Vec<Vec<Op>>| -> bool {
        buf.clear();
        w.next_ops(t, &mut buf).unwrap();
        out[t].extend_from_slice(&buf);
        buf.is_empty()
    };
    match order {
        Order::RoundRobin => {
            while done.iter().any(|d| !d) {
                for t in 0..n {
                    if !done[t] {
                        done[t] = poll(w, t, &mut out);
                    }
                }
            }
        }
        Order::ReverseSerial => {
            for t in (0..n).rev() {
                while !poll(w, t, &mut out) {}
            }
        }
        Order::Shuffled(seed) => {
            let mut x = seed | 1;
            while done.iter().any(|d| !d) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let t = (x % n as u64) as usize;
                if !done[t] {
                    done[t] = poll(w, t, &mut out);
                }
            }
        }
    }
    // Once finished, a thread stays finished.
    for t in 0..n {
        buf.clear();
        w.next_ops(t, &mut buf).unwrap();
        assert!(buf.is_empty(), "thread {t} produced ops after finishing");
    }
    out
}

/// Distinct pages referenced by all threads.
pub fn distinct_pages(streams: &[Vec<Op>]) -> u64 {
    let mut pages: Vec<u64> = streams
        .iter()
        .flatten()
        .filter_map(|op| match op {
            Op::Access { page, .. } => Some(*page),
            _ => None,
        })
        .collect();
    pages.sort_unstable();
    pages.dedup();
    pages.len() as u64
}

pub fn barriers(stream: &[Op]) -> usize {
    stream.iter().filter(|o| matches!(o, Op::Barrier)).count()
}

/// The ops of `stream` between barrier `k - 1` and barrier `k` (phase `k`, from 0).
pub fn phase(stream: &[Op], k: usize) -> &[Op] {
    let mut start = 0;
    let mut seen = 0;
    for (i, op) in stream.iter().enumerate() {
        if matches!(op, Op::Barrier) {
            if seen == k {
                return &stream[start..i];
            }
            seen += 1;
            start = i + 1;
        }
    }
    assert_eq!(seen, k, "no phase {k}");
    &stream[start..]
}

pub fn accesses(ops: &[Op]) -> usize {
    ops.iter()
        .filter(|o| matches!(o, Op::Access { .. }))
        .count()
}

pub fn compute_ns(ops: &[Op]) -> u64 {
    ops.iter()
        .map(|o| match o {
            Op::Compute { ns } => *ns as u64,
            _ => 0,
        })
        .sum()
}

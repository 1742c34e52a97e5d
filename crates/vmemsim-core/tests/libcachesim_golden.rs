//! Differential test against libCacheSim (the `libcachesim` PyPI binding of its C code).
//!
//! `tests/data/libcachesim_golden.json` holds four seeded page traces of 3,000 accesses
//! (uniform over 200 pages, zipf 0.8 over 500, zipf 1.2 over 1,000, and alternating cyclic
//! scans of 120 pages with a zipf working set) and libCacheSim's miss counts for each demand
//! policy at 20, 37, 64, 100 and 150 frames, computed by `tests/gen_libcachesim_golden.py`
//! (object size 1, cache size in objects, one `get` per access, misses = gets that return
//! false). The traces are stored in full, so this test needs neither Python nor a generator.
//!
//! Agreement required:
//! - fifo, lru, clock (libCacheSim `Clock`, n-bit-counter 1, init-freq 0), opt (`Belady`):
//!   exactly, as the brief demands.
//! - arc: exactly. Our ARC and libCacheSim's `ARC.c` both implement FAST'03 Fig. 4 with a
//!   real-valued p and run Case IV's ghost bookkeeping only when full, so they agree miss for
//!   miss (this was checked, not assumed: every case below is equal).
//! - lfu: exactly. Same tie-break as libCacheSim's `LFU.c` (least recently arrived at the
//!   lowest frequency).
//! - s3fifo: exactly from 20 frames on. vmemsim follows libCacheSim's `S3FIFO.c` where it
//!   departs from the paper's pseudocode (one victim per miss; evict M when M is over its
//!   share or S is empty; warm-up inserts to M once S is full; promoted pages enter M with
//!   a cleared counter), see `policy/s3fifo.rs`. Below 20 frames libCacheSim's small queue
//!   holds ≤ 1 object and it admits nothing, so no comparison is made there.
//! - sieve, 2q, mq: exactly (libCacheSim `Sieve`, `TwoQ`, `MQ` with their defaults).
//! - slru: exactly once `cooled_out_hits` is added to vmemsim's faults: libCacheSim's `SLRU.c`
//!   evicts from inside a hit (`SLRU_cool(.., 0)` calls `SLRU_evict`) when segment 0 holds
//!   more than ⌊c/4⌋ pages, which a demand pager cannot do; vmemsim keeps those pages, set
//!   aside, and counts hits on them (see `policy/slru.rs`).
//! - lru-k (libCacheSim `LRUK`, k = 2): exactly; both keep no history for evicted pages and
//!   evict pages with fewer than K references first, oldest insertion first (`lru_k.rs`).
//! - w-tinylfu (libCacheSim `WTinyLFU`, SLRU main, window 0.01): exactly once vmemsim's
//!   `zombie_hits` counter is added to its faults, and only where the window holds at least
//!   one page (≥ 100 frames; below, libCacheSim admits nothing). libCacheSim can free several
//!   pages on one miss (and one on a hit); vmemsim frees one frame per miss and holds the
//!   others as "zombies" freed by the next misses; a zombie referenced first is a hit here
//!   and a miss there, which `zombie_hits` counts (`w_tinylfu.rs`). The sketch is
//!   libCacheSim's own (XXH64-based counting Bloom filter), reproduced bit for bit.
//!   Cases the golden file does not hold (sizes the generator skips) are not compared.
//! - lirs: exactly while no resident HIR page outside the stack S is hit (counter
//!   `hir_hits_outside_stack` = 0), else within 1%: there libCacheSim's `hit_RD_HIRinQ`
//!   demotes an LIR object and evicts from Q on a hit, which the paper does not do and a demand
//!   pager cannot (see `policy/lirs.rs`; tests/test_libcachesim_diff.py proves it is the whole
//!   difference with a model of LIRS.c).
//! - clock-pro: not compared. libCacheSim 0.3.5's `ClockPro_can_insert` admits nothing once the
//!   cold objects reach their target and its eviction never runs, so its count is that of a
//!   cache pinning the first ⌊init_ratio_cold · c⌋ distinct objects; this test checks the golden
//!   count against exactly that.

use serde::Deserialize;
use std::collections::BTreeMap;

use vmemsim_core::engine::MachineConfig;
use vmemsim_core::policy::{PolicyKind, PolicyOptions};
use vmemsim_core::replay::{replay, ReplaySpec};
use vmemsim_core::trace::VecSource;

#[derive(Deserialize)]
struct Golden {
    exact: Vec<String>,
    /// libCacheSim's class per policy: part of the golden file, read by people, not here.
    #[allow(dead_code)]
    libcachesim_classes: BTreeMap<String, String>,
    traces: BTreeMap<String, Vec<u64>>,
    results: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    trace: String,
    policy: String,
    frames: u32,
    misses: u64,
}

fn run(policy: &str, pages: &[u64], frames: u32) -> vmemsim_core::replay::ReplayResult {
    let spec = ReplaySpec {
        policy: PolicyKind::from_name(policy).unwrap(),
        machine: MachineConfig::new(frames),
        options: PolicyOptions::new(0),
        sample_every: 0,
        warmup: 0,
    };
    replay(&mut VecSource::from_pages(pages), &spec, None).unwrap()
}

/// vmemsim's faults, plus the hits it counts on pages libCacheSim had already evicted from
/// inside an earlier hit or miss (slru: `cooled_out_hits`, `SLRU_cool(.., 0)` calls
/// `SLRU_evict` from `SLRU_find`; w-tinylfu: `zombie_hits`), which a demand pager cannot do.
fn faults(policy: &str, pages: &[u64], frames: u32) -> u64 {
    let r = run(policy, pages, frames);
    let missed_by_libcachesim = match policy {
        "slru" => r.policy_counters["cooled_out_hits"],
        "w-tinylfu" => r.policy_counters["zombie_hits"],
        _ => 0,
    };
    r.stats.faults + missed_by_libcachesim
}

/// Misses of a cache that admits the first `room` distinct pages and never evicts (what
/// libCacheSim 0.3.5's ClockPro does with objects of size 1, init-ratio-cold = 1).
fn pinned_first(pages: &[u64], room: usize) -> u64 {
    let mut held = std::collections::HashSet::new();
    let mut misses = 0;
    for &p in pages {
        if !held.contains(&p) {
            misses += 1;
            if held.len() < room {
                held.insert(p);
            }
        }
    }
    misses
}

/// A difference from libCacheSim explained in the module comment, or `None` when the case
/// must be exact.
fn explained(c: &Case, pages: &[u64]) -> Option<Result<(), String>> {
    let at = || format!("{} {} frames {}", c.policy, c.trace, c.frames);
    match c.policy.as_str() {
        "lirs" => {
            let r = run("lirs", pages, c.frames);
            let outside = r.policy_counters["hir_hits_outside_stack"];
            let ours = r.stats.faults;
            if outside == 0 || ours == c.misses {
                return None;
            }
            let ok = ours.abs_diff(c.misses) as f64 <= 0.01 * c.misses as f64;
            Some(if ok {
                Ok(())
            } else {
                Err(format!("{}: vmemsim {ours} libCacheSim {}", at(), c.misses))
            })
        }
        "clock-pro" => {
            let pinned = pinned_first(pages, c.frames as usize);
            Some(if pinned == c.misses {
                Ok(())
            } else {
                Err(format!(
                    "{}: libCacheSim {} but pinning gives {pinned}",
                    at(),
                    c.misses
                ))
            })
        }
        _ => None,
    }
}

/// The committed golden file, or another one of the same shape named by
/// `VMEMSIM_LIBCACHESIM_GOLDEN` (e.g. the larger traces: `gen_libcachesim_golden.py --big`).
fn golden() -> Golden {
    let path = std::env::var("VMEMSIM_LIBCACHESIM_GOLDEN").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/libcachesim_golden.json"
        )
        .to_string()
    });
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

#[test]
fn miss_counts_equal_libcachesim() {
    let g = golden();
    for p in ["fifo", "lru", "clock", "opt"] {
        assert!(
            g.exact.iter().any(|e| e == p),
            "golden file lists {p} as exact"
        );
    }
    let mut report = Vec::new();
    let mut per_policy: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
    for c in &g.results {
        match explained(c, &g.traces[&c.trace]) {
            Some(Ok(())) => continue,
            Some(Err(e)) => {
                report.push(e);
                continue;
            }
            None => {}
        }
        let ours = faults(&c.policy, &g.traces[&c.trace], c.frames);
        let e = per_policy.entry(c.policy.as_str()).or_default();
        e.1 += 1;
        if ours == c.misses {
            e.0 += 1;
        } else {
            report.push(format!(
                "{} {} frames {}: vmemsim {} libCacheSim {}",
                c.policy, c.trace, c.frames, ours, c.misses
            ));
        }
    }
    eprintln!("exact agreement per policy: {per_policy:?}");
    assert!(report.is_empty(), "differences:\n{}", report.join("\n"));
    // Every policy the golden file names was compared; clock-pro (and lirs, where its cases
    // all differ for the explained reason) only through `explained`.
    for c in &g.results {
        let p = c.policy.as_str();
        assert!(
            per_policy.contains_key(p) || p == "clock-pro" || p == "lirs",
            "{p} was not compared"
        );
    }
}

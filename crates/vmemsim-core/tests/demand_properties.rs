//! Properties of the demand policies on random page sequences (proptest):
//! - OPT is never worse than any policy (Belady's optimality);
//! - LRU and OPT are stack algorithms (Mattson et al. 1970): faults never increase with memory;
//! - every policy, with every invariant checked after every access, never breaks one, and its
//!   fault count lies between the number of distinct pages and the number of accesses (equal
//!   to the distinct pages once memory holds them all).

use proptest::prelude::*;

use vmemsim_core::engine::MachineConfig;
use vmemsim_core::policy::registry::PolicyKind;
use vmemsim_core::policy::PolicyOptions;
use vmemsim_core::replay::{replay, ReplaySpec};
use vmemsim_core::trace::VecSource;
use vmemsim_core::Access;

const DEMAND: [&str; 16] = [
    "fifo",
    "lru",
    "opt",
    "clock",
    "arc",
    "s3fifo",
    "lfu",
    "random",
    "sieve",
    "slru",
    "2q",
    "mq",
    "lru-k",
    "w-tinylfu",
    "lirs",
    "clock-pro",
];

fn run(policy: &str, trace: &[Access], frames: u32, seed: u64, check: bool) -> u64 {
    let spec = ReplaySpec {
        policy: PolicyKind::from_name(policy).unwrap(),
        machine: MachineConfig {
            check_invariants: check,
            ..MachineConfig::new(frames)
        },
        options: PolicyOptions::new(seed),
        sample_every: 0,
        warmup: 0,
    };
    replay(&mut VecSource::new(trace.to_vec()), &spec, None)
        .unwrap()
        .stats
        .faults
}

/// Skewed random traces: a mix of a small hot set and a wider cold range, so that hits,
/// ghost hits and reinsertion all happen at small memory sizes.
fn trace_strategy() -> impl Strategy<Value = Vec<Access>> {
    let access = (0u64..40, any::<bool>(), 0u8..4).prop_map(|(p, w, hot)| {
        let page = if hot == 0 { p } else { p % 6 };
        Access {
            page: page * 3 + 5,
            write: w,
            gup: false,
        }
    });
    prop::collection::vec(access, 1..250)
}

fn distinct(trace: &[Access]) -> u64 {
    let mut p: Vec<u64> = trace.iter().map(|a| a.page).collect();
    p.sort_unstable();
    p.dedup();
    p.len() as u64
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn opt_is_never_worse(trace in trace_strategy(), frames in 1u32..14, seed in any::<u64>()) {
        let opt = run("opt", &trace, frames, seed, false);
        for p in DEMAND {
            let f = run(p, &trace, frames, seed, false);
            prop_assert!(opt <= f, "opt {} > {} {}", opt, p, f);
        }
    }

    #[test]
    fn stack_algorithms_have_inclusion(trace in trace_strategy()) {
        for p in ["lru", "opt"] {
            let mut last = u64::MAX;
            for frames in 1u32..16 {
                let f = run(p, &trace, frames, 0, false);
                prop_assert!(f <= last, "{} faults rose to {} at {} frames", p, f, frames);
                last = f;
            }
        }
    }

    #[test]
    fn invariants_hold_after_every_access(
        trace in trace_strategy(),
        frames in 1u32..14,
        seed in any::<u64>(),
    ) {
        let d = distinct(&trace);
        for p in DEMAND {
            // check_invariants: Machine::validate (memory + policy) after every access.
            let f = run(p, &trace, frames, seed, true);
            prop_assert!(f >= d && f <= trace.len() as u64, "{}: {} faults", p, f);
            if d <= frames as u64 {
                prop_assert_eq!(f, d, "{} with room for every page", p);
            }
        }
    }
}

#[test]
fn s3fifo_knobs_keep_invariants() {
    // Non-default shapes: a large small queue, no ghost, promotion after one hit.
    let trace: Vec<Access> = (0..3000u64)
        .map(|i| Access::read((i * 2654435761) % 97 % (1 + i % 41)))
        .collect();
    for (k, v) in [
        ("small_size_ratio", "0.5"),
        ("ghost_size_ratio", "0"),
        ("move_to_main_threshold", "1"),
        ("small_size_ratio", "0"),
    ] {
        let spec = ReplaySpec {
            policy: PolicyKind::S3Fifo,
            machine: MachineConfig {
                check_invariants: true,
                ..MachineConfig::new(16)
            },
            options: PolicyOptions::new(0).with(k, v),
            sample_every: 0,
            warmup: 0,
        };
        let r = replay(&mut VecSource::new(trace.clone()), &spec, None).unwrap();
        assert!(r.stats.faults >= 41 && r.stats.faults < 3000, "{k}={v}");
    }
}

#[test]
fn slru_2q_mq_knobs_keep_invariants() {
    // Non-default shapes: uneven and many segments (S0 overfull, pages cooled out), a tiny
    // or huge A1in and no A1out, one queue or many with expiry every few accesses.
    let trace: Vec<Access> = (0..3000u64)
        .map(|i| Access::read((i * 2654435761) % 97 % (1 + i % 41)))
        .collect();
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("slru", &[("n_seg", "1")]),
        ("slru", &[("n_seg", "3")]),
        ("slru", &[("n_seg", "16")]),
        ("slru", &[("seg_size", "5:1:1")]),
        ("2q", &[("ain_size_ratio", "0"), ("aout_size_ratio", "0")]),
        ("2q", &[("ain_size_ratio", "0.9"), ("aout_size_ratio", "3")]),
        ("mq", &[("n_queue", "1")]),
        (
            "mq",
            &[
                ("n_queue", "64"),
                ("lifetime", "2"),
                ("qout_size_ratio", "0.1"),
            ],
        ),
    ];
    for (policy, kv) in cases {
        for frames in [1, 7, 17] {
            let mut options = PolicyOptions::new(0);
            for (k, v) in kv.iter() {
                options.set(k, v);
            }
            let spec = ReplaySpec {
                policy: PolicyKind::from_name(policy).unwrap(),
                machine: MachineConfig {
                    check_invariants: true,
                    ..MachineConfig::new(frames)
                },
                options,
                sample_every: 0,
                warmup: 0,
            };
            let r = replay(&mut VecSource::new(trace.clone()), &spec, None).unwrap();
            assert!(
                r.stats.faults >= 41 && r.stats.faults < 3000,
                "{policy} {kv:?} at {frames} frames"
            );
        }
    }
}

#[test]
fn lru_k_and_w_tinylfu_knobs_keep_invariants() {
    // Non-default shapes: LRU-1 and LRU-3, a retained history table (the paper's RIP) of
    // several sizes, and W-TinyLFU windows from none to half of memory with a fast reset.
    let trace: Vec<Access> = (0..3000u64)
        .map(|i| Access::read((i * 2654435761) % 97 % (1 + i % 41)))
        .collect();
    let cases: [(PolicyKind, &[(&str, &str)]); 8] = [
        (PolicyKind::LruK, &[("k", "1")]),
        (PolicyKind::LruK, &[("k", "3")]),
        (PolicyKind::LruK, &[("retained", "1")]),
        (PolicyKind::LruK, &[("k", "3"), ("retained", "40")]),
        (PolicyKind::WTinyLfu, &[("window_size", "0")]),
        (PolicyKind::WTinyLfu, &[("window_size", "0.5")]),
        (
            PolicyKind::WTinyLfu,
            &[("window_size", "0.2"), ("sample_factor", "1")],
        ),
        (PolicyKind::WTinyLfu, &[("sketch_error", "0.3")]),
    ];
    for (kind, kv) in cases {
        for frames in [1, 3, 16] {
            let mut options = PolicyOptions::new(0);
            for (k, v) in kv {
                options.set(k, v);
            }
            let spec = ReplaySpec {
                policy: kind,
                machine: MachineConfig {
                    check_invariants: true,
                    ..MachineConfig::new(frames)
                },
                options,
                sample_every: 0,
                warmup: 0,
            };
            let r = replay(&mut VecSource::new(trace.clone()), &spec, None).unwrap();
            assert!(
                r.stats.faults >= 41 && r.stats.faults <= 3000,
                "{kind:?} {kv:?} {frames} frames: {}",
                r.stats.faults
            );
        }
    }
}

#[test]
fn lirs_and_clock_pro_knobs_keep_invariants() {
    let trace: Vec<Access> = (0..3000u64)
        .map(|i| Access::read((i * 2654435761) % 97 % (1 + i % 41)))
        .collect();
    for (policy, k, v) in [
        ("lirs", "hir_ratio", "0.3"),
        ("lirs", "hir_ratio", "0"),
        ("lirs", "stack_ratio", "1"),
        ("lirs", "stack_ratio", "8"),
        ("clock-pro", "init_cold_ratio", "0"),
        ("clock-pro", "init_cold_ratio", "0.5"),
        ("clock-pro", "nonresident_ratio", "0"),
        ("clock-pro", "nonresident_ratio", "3"),
    ] {
        let spec = ReplaySpec {
            policy: PolicyKind::from_name(policy).unwrap(),
            machine: MachineConfig {
                check_invariants: true,
                ..MachineConfig::new(16)
            },
            options: PolicyOptions::new(0).with(k, v),
            sample_every: 0,
            warmup: 0,
        };
        let r = replay(&mut VecSource::new(trace.clone()), &spec, None).unwrap();
        assert!(
            r.stats.faults >= 41 && r.stats.faults < 3000,
            "{policy} {k}={v}"
        );
    }
}

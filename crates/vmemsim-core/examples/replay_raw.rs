//! Replay a raw little-endian u64 page-number file through one policy and print throughput.
//! For profiling the hot path: `cargo run --profile profiling --example replay_raw -- FILE POLICY FRAMES`.
use std::time::Instant;
use vmemsim_core::engine::MachineConfig;
use vmemsim_core::policy::{PolicyKind, PolicyOptions};
use vmemsim_core::replay::{replay, ReplaySpec};
use vmemsim_core::trace::VecSource;
use vmemsim_core::Access;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: replay_raw FILE POLICY FRAMES");
        std::process::exit(2);
    }
    let bytes = std::fs::read(&args[1]).expect("read trace");
    let trace: Vec<Access> = bytes
        .chunks_exact(8)
        .map(|c| Access::read(u64::from_le_bytes(c.try_into().unwrap())))
        .collect();
    let spec = ReplaySpec {
        policy: PolicyKind::from_name(&args[2]).expect("policy"),
        machine: MachineConfig::new(args[3].parse().expect("frames")),
        options: PolicyOptions::new(1),
        sample_every: 0,
        warmup: 0,
    };
    let t = Instant::now();
    let r = replay(&mut VecSource::new(trace), &spec, None).expect("replay");
    let dt = t.elapsed().as_secs_f64();
    println!(
        "{} {:.2} M/s faults={} major={}",
        r.policy,
        r.stats.accesses as f64 / dt / 1e6,
        r.stats.faults,
        r.stats.major_faults
    );
}

//! Criterion benchmark of the replay hot path on a zipf-like trace.
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use vmemsim_core::engine::MachineConfig;
use vmemsim_core::policy::{PolicyKind, PolicyOptions};
use vmemsim_core::replay::{replay, ReplaySpec};
use vmemsim_core::trace::VecSource;
use vmemsim_core::Access;

fn zipfish(n: usize, pages: u64) -> Vec<Access> {
    // Deterministic skewed stream: page = pages * u^3 for a xorshift u in [0,1).
    let mut x = 0x9E3779B97F4A7C15u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            Access::read((u * u * u * pages as f64) as u64)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let trace = zipfish(1_000_000, 100_000);
    let mut g = c.benchmark_group("replay");
    g.throughput(Throughput::Elements(trace.len() as u64));
    for (kind, name, _) in PolicyKind::ALL {
        if *name == "opt" {
            continue;
        }
        g.bench_function(*name, |b| {
            b.iter(|| {
                let spec = ReplaySpec {
                    policy: *kind,
                    machine: MachineConfig::new(10_000),
                    options: PolicyOptions::new(1),
                    sample_every: 0,
                    warmup: 0,
                };
                replay(&mut VecSource::new(trace.clone()), &spec, None).unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

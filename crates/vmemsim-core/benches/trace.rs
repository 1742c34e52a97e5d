//! Criterion benchmarks of trace decoding, generation and stack-distance analysis.
//!
//! The native reader must decode far faster than the engine simulates (target: over 200 M
//! accesses/s on one core); `native_decode/*` measures it on in-memory files so that disk
//! speed does not enter. Run: `cargo bench -p vmemsim-core --bench trace`.
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::io::Cursor;
use vmemsim_core::generate;
use vmemsim_core::mrc;
use vmemsim_core::trace::native::{NativeReader, NativeWriter};
use vmemsim_core::trace::oracle::OracleReader;
use vmemsim_core::trace::{collect, ReaderOptions, TraceMeta, TraceSource, TraceWriter, VecSource};
use vmemsim_core::Access;

fn native_bytes(v: &[Access]) -> Vec<u8> {
    let mut w = NativeWriter::new("bench", Vec::new(), TraceMeta::default()).unwrap();
    w.write(v).unwrap();
    w.into_inner().unwrap()
}

/// Read every chunk, touching each access so the work cannot be skipped.
fn drain(src: &mut dyn TraceSource) -> u64 {
    let mut buf = Vec::with_capacity(1 << 16);
    let mut sum = 0u64;
    loop {
        src.next_chunk(&mut buf).unwrap();
        if buf.is_empty() {
            return sum;
        }
        for a in &buf {
            sum = sum.wrapping_add(a.page ^ a.write as u64);
        }
    }
}

fn bench(c: &mut Criterion) {
    let n = 4_000_000u64;
    let zipf = collect(
        &mut generate::open(&format!("zipf:pages=100000,alpha=0.9,n={n},write=0.3"), 1).unwrap(),
    )
    .unwrap();
    let wide =
        collect(&mut generate::open(&format!("uniform:pages=1000000000000,n={n}"), 1).unwrap())
            .unwrap();
    let scan =
        collect(&mut generate::open(&format!("loop:pages=1000000,n={n}"), 1).unwrap()).unwrap();

    let mut g = c.benchmark_group("native_decode");
    g.throughput(Throughput::Elements(n));
    for (name, v) in [
        ("zipf_100k_pages", &zipf),
        ("uniform_2^40_pages", &wide),
        ("loop", &scan),
    ] {
        let bytes = native_bytes(v);
        eprintln!("{name}: {:.2} bytes/access", bytes.len() as f64 / n as f64);
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut r =
                    NativeReader::from_reader("bench", Box::new(Cursor::new(bytes.clone())))
                        .unwrap();
                drain(&mut r)
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("other");
    g.throughput(Throughput::Elements(n));
    g.sample_size(10);
    g.bench_function("native_encode_zipf", |b| {
        b.iter(|| native_bytes(&zipf).len())
    });
    let mut og = Vec::with_capacity(n as usize * 24);
    for (i, a) in zipf.iter().enumerate() {
        og.extend_from_slice(&(i as u32).to_le_bytes());
        og.extend_from_slice(&a.page.to_le_bytes());
        og.extend_from_slice(&4096u32.to_le_bytes());
        og.extend_from_slice(&(-1i64).to_le_bytes());
    }
    g.bench_function("oracle_decode_zipf", |b| {
        b.iter(|| {
            let mut r = OracleReader::from_reader(
                "bench",
                Box::new(Cursor::new(og.clone())),
                &ReaderOptions::default(),
            )
            .unwrap();
            drain(&mut r)
        })
    });
    g.bench_function("generate_zipf", |b| {
        b.iter(|| {
            drain(&mut generate::open(&format!("zipf:pages=100000,alpha=0.9,n={n}"), 1).unwrap())
        })
    });
    g.bench_function("stack_distance_zipf", |b| {
        b.iter(|| {
            mrc::lru_histogram(&mut VecSource::new(zipf.clone()))
                .unwrap()
                .cold
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

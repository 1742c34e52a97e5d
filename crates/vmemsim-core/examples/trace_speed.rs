//! Quick throughput check of trace decoding, generation and stack distances, timed in this
//! thread's CPU time (from /proc/thread-self/schedstat) so that other load on a shared
//! machine matters less than with wall-clock benchmarks. For careful numbers use
//! `cargo bench --bench trace`. Run: `cargo run --release --example trace_speed [accesses]`.
use std::io::Cursor;
use vmemsim_core::generate;
use vmemsim_core::mrc;
use vmemsim_core::trace::native::{NativeReader, NativeWriter};
use vmemsim_core::trace::{collect, TraceMeta, TraceSource, TraceWriter, VecSource};
use vmemsim_core::Access;

fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

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

/// Best of `reps` runs, in M accesses per CPU-second.
fn rate(n: u64, reps: usize, mut f: impl FnMut() -> u64) -> f64 {
    let mut best = f64::MAX;
    let mut sink = 0u64;
    for _ in 0..reps {
        let t = cpu_ns();
        sink ^= f();
        best = best.min((cpu_ns() - t) as f64);
    }
    std::hint::black_box(sink);
    n as f64 / best * 1e3
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(4_000_000);
    let traces = [
        (
            "zipf 100k pages, 30% writes",
            format!("zipf:pages=100000,alpha=0.9,n={n},write=0.3"),
        ),
        (
            "uniform over 2^40 pages",
            format!("uniform:pages=1099511627776,n={n}"),
        ),
        ("loop over 1M pages", format!("loop:pages=1000000,n={n}")),
    ];
    for (name, spec) in &traces {
        let v: Vec<Access> = collect(&mut generate::open(spec, 1).unwrap()).unwrap();
        let mut w = NativeWriter::new("speed", Vec::new(), TraceMeta::default()).unwrap();
        w.write(&v).unwrap();
        // Leaked so that each run reads the same bytes without copying them first.
        let bytes: &'static [u8] = Box::leak(w.into_inner().unwrap().into_boxed_slice());
        let dec = rate(n, 15, || {
            let mut r = NativeReader::from_reader("speed", Box::new(Cursor::new(bytes))).unwrap();
            drain(&mut r)
        });
        let enc = rate(n, 3, || {
            let mut w = NativeWriter::new("speed", Vec::new(), TraceMeta::default()).unwrap();
            w.write(&v).unwrap();
            w.into_inner().unwrap().len() as u64
        });
        println!(
            "{name:32} {:5.2} B/access  native decode {dec:7.1} M/s  encode {enc:6.1} M/s",
            bytes.len() as f64 / n as f64
        );
    }
    let gen = rate(n, 3, || {
        drain(&mut generate::open(&traces[0].1, 1).unwrap())
    });
    let uni = rate(n, 3, || {
        drain(&mut generate::open(&format!("uniform:pages=100000,n={n}"), 1).unwrap())
    });
    println!("generate zipf {gen:.1} M/s, uniform {uni:.1} M/s");
    zipf_parts(n);
    let z: Vec<Access> = collect(&mut generate::open(&traces[0].1, 1).unwrap()).unwrap();
    let sd = rate(n, 2, || {
        mrc::lru_histogram(&mut VecSource::new(z.clone()))
            .unwrap()
            .cold
    });
    println!("stack distances (zipf 100k pages) {sd:.1} M/s");
}
#[allow(dead_code)]
fn zipf_parts(n: u64) {
    for spec in [
        format!("zipf:pages=100000,alpha=0.9,n={n},shuffle=false"),
        format!("zipf:pages=100000,alpha=0.9,n={n}"),
        format!("zipf:pages=100000,alpha=0.5,n={n},shuffle=false"),
        format!("zipf:pages=100000,alpha=1.2,n={n},shuffle=false"),
        format!("hotcold:pages=100000,n={n}"),
    ] {
        let r = rate(n, 3, || drain(&mut generate::open(&spec, 1).unwrap()));
        println!("{spec}: {r:.1} M/s");
    }
}

//! Convert a saved recorder stream (`valgrind --tool=vmrec --out=FILE ...`) and report the
//! conversion's speed: `cargo run --release --example record_convert -- RAW OUT.vmt [--inline]`
//! (`--inline`: compress in the parsing thread, no worker).
use std::time::Instant;

use vmemsim_core::trace::recorded::RecordedWriter;
use vmemsim_core::trace::recorder::{convert_stream, open_stream};
use vmemsim_core::trace::TraceMeta;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (raw, out) = (&args[1], &args[2]);
    let worker = args.get(3).map(String::as_str) != Some("--inline");
    let t0 = Instant::now();
    let (st, _) = convert_stream(open_stream(raw)?, raw, |h| {
        RecordedWriter::create(
            out,
            TraceMeta {
                page_size: h.page_size,
                ..TraceMeta::default()
            },
        )
        .and_then(|w| if worker { w.with_worker() } else { Ok(w) })
    })?;
    let dt = t0.elapsed().as_secs_f64();
    let size = std::fs::metadata(out)?.len();
    println!(
        "{} records ({} accesses) in {dt:.3} s: {:.1} M records/s; {} raw bytes -> {size} bytes ({:.0} per M accesses)",
        st.records,
        st.accesses,
        st.records as f64 / dt / 1e6,
        st.raw_bytes,
        size as f64 / (st.accesses as f64 / 1e6)
    );
    Ok(())
}

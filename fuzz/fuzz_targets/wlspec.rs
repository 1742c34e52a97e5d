//! Timed workload specs (`tpch-like`, `pagerank`, `ycsb-a/b/c`, `custom`, `trace`) on arbitrary
//! text. A spec that parses names itself canonically: that name parses to a workload of the
//! same name, threads and footprint, and thread 0's first chunk of ops is drawn. Specs that
//! would size large tables are skipped (see `common/bounds.rs`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use vmemsim_core::workload;

#[path = "common/bounds.rs"]
mod bounds;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if !bounds::cheap(s) {
        return;
    }
    let Ok(mut w) = workload::parse(s, 7) else {
        return;
    };
    let name = w.name();
    let again = workload::parse(&name, 99).expect("a workload's canonical name parses");
    assert_eq!(again.name(), name);
    assert_eq!(again.threads(), w.threads());
    assert_eq!(again.footprint_pages(), w.footprint_pages());
    let mut buf = Vec::new();
    let _ = w.next_ops(0, &mut buf);
});

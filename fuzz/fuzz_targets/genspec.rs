//! Generator spec and CSV option parsers on arbitrary text; specs that parse are built and
//! their first chunk drawn (lengths are capped by the spec's own n).
#![no_main]
use libfuzzer_sys::fuzz_target;
use vmemsim_core::generate::GenSpec;
use vmemsim_core::trace::{CsvOptions, TraceSource};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = CsvOptions::parse(s);
    if let Ok(spec) = GenSpec::parse(s) {
        assert_eq!(GenSpec::parse(&spec.to_string()).ok(), Some(spec.clone()));
        if let Ok(mut g) = spec.build(1) {
            let mut buf = Vec::new();
            let _ = g.next_chunk(&mut buf);
        }
    }
});

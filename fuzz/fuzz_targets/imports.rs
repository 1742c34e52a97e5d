//! Trace imports on arbitrary bytes: MSR Cambridge / SNIA block I/O CSV and Valgrind lackey
//! output. The first byte picks the format, lackey's `ifetch` and the page size. Whatever an
//! import accepts it writes as a recorded trace, which must then read back without error.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;
use vmemsim_core::trace::imports::{import_lackey, import_msr, ImportOptions};
use vmemsim_core::trace::recorded::{RecordedReader, RecordedWriter};
use vmemsim_core::trace::{TraceMeta, TraceWriter};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let shift = 2 * ((pick >> 4) & 7).max(1); // pages of 2^2 .. 2^14 bytes
    let opts = ImportOptions {
        page_size: 1 << shift,
        ifetch: pick & 2 != 0,
    };
    let Ok(mut w) = RecordedWriter::new("out", Vec::new(), TraceMeta::default()) else {
        return;
    };
    let mut rd = Cursor::new(rest);
    let stats = if pick & 1 == 0 {
        import_msr("fuzz", &mut rd, &mut w)
    } else {
        import_lackey("fuzz", &mut rd, &opts, &mut w)
    };
    if stats.is_ok() {
        let bytes = w.into_inner().expect("an import's trace finishes");
        let mut r = RecordedReader::from_reader("out", Box::new(Cursor::new(bytes)))
            .expect("an import's trace has a valid header");
        r.collect().expect("an import's trace reads back");
    } else {
        let _ = w.finish();
    }
});

//! Native trace reader on arbitrary bytes. Inputs starting with the magic bytes go straight
//! to the header parser; others get a valid header prepended so the chunk decoder is reached.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;
use std::sync::OnceLock;
use vmemsim_core::trace::native::{NativeReader, NativeWriter, MAGIC};
use vmemsim_core::trace::{collect, TraceMeta};

/// A valid header of an empty trace, without its end marker (written once, not per input).
fn header() -> &'static [u8] {
    static HEADER: OnceLock<Vec<u8>> = OnceLock::new();
    HEADER.get_or_init(|| {
        let mut b = NativeWriter::new("f", Vec::new(), TraceMeta::default())
            .and_then(|w| w.into_inner())
            .unwrap_or_default();
        b.truncate(b.len().saturating_sub(24)); // drop the end marker
        b
    })
}

fuzz_target!(|data: &[u8]| {
    let bytes = if data.starts_with(&MAGIC) {
        data.to_vec()
    } else {
        [header(), data].concat()
    };
    if let Ok(mut r) = NativeReader::from_reader("fuzz", Box::new(Cursor::new(bytes))) {
        let _ = collect(&mut r);
    }
});

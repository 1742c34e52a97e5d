//! Native trace reader on arbitrary bytes. Inputs starting with the magic bytes go straight
//! to the header parser; others get a valid header prepended so the chunk decoder is reached.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;
use vmemsim_core::trace::native::{NativeReader, NativeWriter, MAGIC};
use vmemsim_core::trace::{collect, TraceMeta};

fuzz_target!(|data: &[u8]| {
    let bytes = if data.starts_with(&MAGIC) {
        data.to_vec()
    } else {
        let mut b = NativeWriter::new("f", Vec::new(), TraceMeta::default())
            .and_then(|w| w.into_inner())
            .unwrap_or_default();
        b.truncate(b.len().saturating_sub(24)); // drop the end marker, append the input
        b.extend_from_slice(data);
        b
    };
    if let Ok(mut r) = NativeReader::from_reader("fuzz", Box::new(Cursor::new(bytes))) {
        let _ = collect(&mut r);
    }
});

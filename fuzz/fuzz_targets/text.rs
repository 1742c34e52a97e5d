//! Text trace reader on arbitrary bytes, as page numbers and as addresses.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;
use vmemsim_core::trace::collect;
use vmemsim_core::trace::text::{TextOptions, TextReader};

fuzz_target!(|data: &[u8]| {
    for addresses in [false, true] {
        let opts = TextOptions {
            addresses,
            page_size: 4096,
        };
        if let Ok(mut r) =
            TextReader::from_reader("fuzz", Box::new(Cursor::new(data.to_vec())), opts)
        {
            let _ = collect(&mut r);
        }
    }
});

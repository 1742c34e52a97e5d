//! libCacheSim oracleGeneral reader on arbitrary bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;
use vmemsim_core::trace::oracle::OracleReader;
use vmemsim_core::trace::{collect, ReaderOptions};

fuzz_target!(|data: &[u8]| {
    for addresses in [false, true] {
        let opts = ReaderOptions {
            addresses,
            ..Default::default()
        };
        if let Ok(mut r) =
            OracleReader::from_reader("fuzz", Box::new(Cursor::new(data.to_vec())), &opts)
        {
            let _ = collect(&mut r);
        }
    }
});

//! CSV trace reader on arbitrary bytes. The first byte picks a column mapping.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;
use vmemsim_core::trace::csv::CsvReader;
use vmemsim_core::trace::{collect, CsvOptions, ReaderOptions};

const MAPPINGS: [&str; 6] = [
    "",
    "column=2,op=3",
    "column=addr,op=type",
    "header=no,delimiter=tab",
    "column=1,header=yes,delimiter=semicolon",
    "page=3,op=1,delimiter=space",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(csv) = CsvOptions::parse(MAPPINGS[pick as usize % MAPPINGS.len()]) else {
        return;
    };
    let opts = ReaderOptions {
        csv,
        addresses: pick & 0x80 != 0,
        ..Default::default()
    };
    if let Ok(mut r) = CsvReader::from_reader("fuzz", Box::new(Cursor::new(rest.to_vec())), &opts) {
        let _ = collect(&mut r);
    }
});

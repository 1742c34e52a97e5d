//! Recorded (native version 2) trace reader on arbitrary bytes. Inputs starting with the magic
//! bytes go straight to the header parser; others get a valid version-2 header prepended so the
//! chunk decoder (access, file-table and file I/O records) is reached. A trace that reads
//! back completely is written again and must read back to the same records.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Cursor;
use std::sync::OnceLock;
use vmemsim_core::trace::native::MAGIC;
use vmemsim_core::trace::recorded::{Event, RecordedReader, RecordedWriter};
use vmemsim_core::trace::{TraceMeta, TraceWriter};

fn read(bytes: Vec<u8>) -> Option<Vec<Event>> {
    RecordedReader::from_reader("fuzz", Box::new(Cursor::new(bytes)))
        .ok()?
        .collect()
        .ok()
}

/// Write `events` as a new recorded trace; `None` when the writer refuses one of them.
fn rewrite(events: &[Event]) -> Option<Vec<u8>> {
    let mut w = RecordedWriter::new("again", Vec::new(), TraceMeta::default()).ok()?;
    for e in events {
        match e {
            Event::Access(r) => w.access(*r).ok()?,
            Event::File { id, path } => w.file(*id, path).ok()?,
            Event::Io(io) => w.io(*io).ok()?,
        }
    }
    w.finish().ok()?;
    w.into_inner().ok()
}

/// A valid version-2 header of an empty trace, without its end marker (written once).
fn header() -> &'static [u8] {
    static HEADER: OnceLock<Vec<u8>> = OnceLock::new();
    HEADER.get_or_init(|| {
        let mut b = RecordedWriter::new("f", Vec::new(), TraceMeta::default())
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
    if let Some(events) = read(bytes) {
        if let Some(again) = rewrite(&events) {
            assert_eq!(read(again).as_ref(), Some(&events));
        }
    }
});

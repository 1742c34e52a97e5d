//! Every reader and spec parser, fed arbitrary bytes, returns Ok or Err and never panics.
//! (The cargo-fuzz targets in `fuzz/` do the same for longer.)
use proptest::prelude::*;
use std::io::Cursor;
use vmemsim_core::generate::GenSpec;
use vmemsim_core::trace::csv::CsvReader;
use vmemsim_core::trace::imports::{import_lackey, import_msr, ImportOptions};
use vmemsim_core::trace::native::{NativeReader, NativeWriter, MAGIC};
use vmemsim_core::trace::oracle::OracleReader;
use vmemsim_core::trace::recorded::{Event, RecordedReader, RecordedWriter};
use vmemsim_core::trace::text::{TextOptions, TextReader};
use vmemsim_core::trace::{
    collect, CsvOptions, ReaderOptions, TraceMeta, TraceSource, TraceWriter,
};
use vmemsim_core::Access;

/// Drain a source; errors are fine, and after an error we stop as a caller would.
fn drain(src: Result<impl TraceSource, vmemsim_core::Error>) {
    if let Ok(mut s) = src {
        let _ = collect(&mut s);
    }
}

fn all_readers(bytes: &[u8]) {
    drain(NativeReader::from_reader(
        "f",
        Box::new(Cursor::new(bytes.to_vec())),
    ));
    drain(OracleReader::from_reader(
        "f",
        Box::new(Cursor::new(bytes.to_vec())),
        &ReaderOptions::default(),
    ));
    let addr = ReaderOptions {
        addresses: true,
        ..Default::default()
    };
    drain(OracleReader::from_reader(
        "f",
        Box::new(Cursor::new(bytes.to_vec())),
        &addr,
    ));
    drain(TextReader::from_reader(
        "f",
        Box::new(Cursor::new(bytes.to_vec())),
        TextOptions::default(),
    ));
    for spec in [
        "",
        "column=2,op=3",
        "column=addr,op=type",
        "header=no,delimiter=tab",
        "column=1,header=yes",
    ] {
        let opts = ReaderOptions {
            csv: CsvOptions::parse(spec).unwrap(),
            ..Default::default()
        };
        drain(CsvReader::from_reader(
            "f",
            Box::new(Cursor::new(bytes.to_vec())),
            &opts,
        ));
    }
}

/// A native file holding one stored-raw chunk with `payload`, claiming `n` records, with a
/// correct CRC, so that the record decoder (not the checksum) sees arbitrary data.
fn native_with_chunk(payload: &[u8], n: u32, finish: bool) -> Vec<u8> {
    let mut bytes = NativeWriter::new("f", Vec::new(), TraceMeta::default())
        .unwrap()
        .into_inner()
        .unwrap();
    let trailer = bytes.split_off(bytes.len() - 24);
    let len = payload.len() as u32;
    for x in [len, len, n, crc32fast::hash(payload)] {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    bytes.extend_from_slice(payload);
    if finish {
        bytes.extend_from_slice(&trailer);
    }
    bytes
}

/// The same for a recorded (version-2) file, read both as a plain source and with every field.
fn recorded_with_chunk(payload: &[u8], n: u32) -> Vec<u8> {
    let mut b = RecordedWriter::new("f", Vec::new(), TraceMeta::default())
        .unwrap()
        .into_inner()
        .unwrap();
    b.truncate(b.len() - 24);
    let len = payload.len() as u32;
    for x in [len, len, n, crc32fast::hash(payload)] {
        b.extend_from_slice(&x.to_le_bytes());
    }
    b.extend_from_slice(payload);
    b
}

fn drain_recorded(b: &[u8]) {
    drain(NativeReader::from_reader(
        "f",
        Box::new(Cursor::new(b.to_vec())),
    ));
    if let Ok(mut r) = RecordedReader::from_reader("f", Box::new(Cursor::new(b.to_vec()))) {
        let _ = r.collect();
    }
}

/// Import `bytes` as MSR (`lackey == false`) or lackey text; an import that succeeds wrote a
/// recorded trace that reads back.
fn import(bytes: &[u8], lackey: bool, opts: &ImportOptions) -> Result<(), TestCaseError> {
    let mut w = RecordedWriter::new("out", Vec::new(), TraceMeta::default()).unwrap();
    let mut rd = Cursor::new(bytes);
    let r = if lackey {
        import_lackey("in", &mut rd, opts, &mut w)
    } else {
        import_msr("in", &mut rd, &mut w)
    };
    if r.is_ok() {
        let out = w.into_inner().unwrap();
        let mut rr = RecordedReader::from_reader("out", Box::new(Cursor::new(out))).unwrap();
        prop_assert!(rr.collect().is_ok());
    }
    Ok(())
}

/// The writer accepts every one of `events` (valid records), and what it writes reads back as
/// written.
fn rewrite_round_trip(events: &[Event]) {
    let mut w = RecordedWriter::new("again", Vec::new(), TraceMeta::default()).unwrap();
    for e in events {
        let r = match e {
            Event::Access(r) => w.access(*r),
            Event::File { id, path } => w.file(*id, path),
            Event::Io(io) => w.io(*io),
        };
        if let Err(err) = r {
            panic!("{e:?}: {err}");
        }
    }
    let b = w.into_inner().unwrap();
    let back = RecordedReader::from_reader("again", Box::new(Cursor::new(b)))
        .unwrap()
        .collect()
        .unwrap();
    assert_eq!(back, events);
}

/// Found by the `imports` fuzz target: MSR rows whose sizes each fit but add up past 2^64
/// overflowed the import's byte count (a panic in debug builds). Now an error naming the line.
#[test]
fn msr_sizes_adding_up_past_2_64_are_an_error() {
    let rows = b"0,hm,1,Read,0,10000000000000000000,0\n1,hm,1,Read,0,10000000000000000000,0\n";
    let mut w = RecordedWriter::new("out", Vec::new(), TraceMeta::default()).unwrap();
    let e = import_msr("in.csv", &mut Cursor::new(&rows[..]), &mut w)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("in.csv") && e.contains("line 2") && e.contains("past 2^64 bytes"),
        "{e}"
    );
}

/// Found by the `wlspec` fuzz target: a `tpch-like` footprint of 6.7 EB was accepted as
/// sf=4903580000, but its canonical spec `sf=4903580000` is refused (sf is at most 100000).
/// The footprint is now refused with the sf it needs.
#[test]
fn tpch_footprint_needing_sf_past_its_range_is_an_error() {
    let e = vmemsim_core::workload::parse("tpch-like:footprint=6414502410020MiB,threads=4", 1)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with("tpch-like.footprint: ") && e.contains("sf is at most 100000"),
        "{e}"
    );
}

/// Found by the `wlspec` fuzz target: a `custom` phase whose references all go to one page
/// merged into a single burst, so `next_ops` drew the whole phase (here 10^16 references)
/// before handing out an op. Each call now draws a bounded number of references and hands
/// out the burst split at that point.
#[test]
fn custom_phase_on_one_page_hands_out_ops_in_bounded_time() {
    use vmemsim_core::workload::{self, Op};
    for spec in [
        "custom:(scan:pages=1,n=1e16)",
        "custom:(zipf:pages=4096,alpha=29,n=11111111111111111),threads=8,compute_ns=200",
    ] {
        let mut w = workload::parse(spec, 1).unwrap();
        for _ in 0..3 {
            let mut buf = Vec::new();
            w.next_ops(0, &mut buf).unwrap();
            let accesses: Vec<&Op> = buf
                .iter()
                .filter(|o| matches!(o, Op::Access { .. }))
                .collect();
            assert!(!accesses.is_empty(), "{spec}: a call handed out no access");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_import_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600), lackey: bool, ifetch: bool) {
        import(&bytes, lackey, &ImportOptions { page_size: 4096, ifetch })?;
    }

    #[test]
    fn msr_like_rows(rows in proptest::collection::vec(
        "(Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime|#.*|-?[0-9]{1,20},[a-z]{0,3},-?[0-9]{1,3},(Read|Write|read|WRITE|Flush),-?[0-9]{1,20},-?[0-9]{1,20},[0-9]{1,6}(,1)?|)", 0..8)) {
        import(rows.join("\n").as_bytes(), false, &ImportOptions::default())?;
    }

    #[test]
    fn lackey_like_lines(lines in proptest::collection::vec(
        "(I  |  ?[LSM] |==|--| X )(0x)?[0-9a-f]{0,17},[0-9]{0,4}", 0..10), ifetch: bool, shift in 2u32..16) {
        import(lines.join("\n").as_bytes(), true, &ImportOptions { page_size: 1 << shift, ifetch })?;
    }

    #[test]
    fn recorded_round_trip(recs in proptest::collection::vec((0u8..3, any::<u64>(), 0u32..4, 1u64..5, 0u64..1000, any::<usize>()), 0..40)) {
        // Valid access, file-table and file I/O records with assorted fields (I/O only on
        // files declared before it) read back as written.
        use vmemsim_core::trace::recorded::{FileIo, FileOp, Recorded};
        let (mut stamp, mut files) = (0, Vec::new());
        let mut events = Vec::new();
        for &(kind, x, tid, count, dt, pick) in &recs {
            stamp += dt;
            events.push(match kind {
                0 => Event::Access(Recorded {
                    page: x >> (x % 64),
                    write: x & 1 == 1,
                    ifetch: x & 3 == 2,
                    tid,
                    count,
                    stamp,
                }),
                2 if !files.is_empty() => Event::Io(FileIo {
                    op: FileOp::ALL[(x % 5) as usize],
                    tid,
                    stamp,
                    file: files[pick % files.len()],
                    offset: x >> 20,
                    len: count * 4096,
                    addr: if x % 5 == 4 { x >> 12 << 12 } else { 0 },
                }),
                _ => {
                    let id = (pick % 1000) as u32 * 40 + files.len() as u32;
                    files.push(id);
                    Event::File { id, path: format!("f{}", x % 7) }
                }
            });
        }
        rewrite_round_trip(&events);
    }

    #[test]
    fn arbitrary_recorded_payload(head in proptest::collection::vec(0u32..40, 6), rest in proptest::collection::vec(any::<u8>(), 0..300), n in 0u32..50) {
        // A plausible head (small counts and lengths) so that the stream decoders are reached.
        let mut p = Vec::new();
        for x in head {
            p.extend_from_slice(&x.to_le_bytes());
        }
        p.extend_from_slice(&rest);
        drain_recorded(&recorded_with_chunk(&p, n));
    }

    #[test]
    fn arbitrary_recorder_stream(words in proptest::collection::vec((0u64..9, any::<u64>()), 0..60), start: bool) {
        use vmemsim_core::trace::recorder::{RAW_MAGIC, RAW_VERSION};
        let mut b = RAW_MAGIC.to_vec();
        // Most cases open a process's block (kind 7, start flag) so that records are reached.
        let open: &[u64] = if start { &[7 | 1 << 32, 100, 1] } else { &[] };
        for w in [RAW_VERSION, 4096, 0].into_iter().chain(open.iter().copied()).chain(words.iter().map(|(k, x)| k | x << 8)) {
            b.extend_from_slice(&w.to_le_bytes());
        }
        let _ = vmemsim_core::trace::recorder::convert_stream(&b[..], "raw", |_| {
            RecordedWriter::new("out", Vec::new(), TraceMeta::default())
        });
    }

    #[test]
    fn arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        all_readers(&bytes);
    }

    #[test]
    fn arbitrary_bytes_after_native_magic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&bytes);
        all_readers(&b);
    }

    #[test]
    fn arbitrary_chunk_payload(payload in proptest::collection::vec(any::<u8>(), 0..600), n in 0u32..1200, finish: bool) {
        let b = native_with_chunk(&payload, n, finish);
        drain(NativeReader::from_reader("f", Box::new(Cursor::new(b))));
    }

    #[test]
    fn mutated_native_file(pages in proptest::collection::vec(any::<u64>(), 0..300), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4), cut in any::<usize>()) {
        let v: Vec<Access> = pages.iter().map(|&p| Access { page: p, write: p & 1 == 1, gup: false }).collect();
        let mut w = NativeWriter::new("f", Vec::new(), TraceMeta::default()).unwrap();
        w.write(&v).unwrap();
        let mut b = w.into_inner().unwrap();
        // The intact file reads back exactly.
        let back = collect(&mut NativeReader::from_reader("f", Box::new(Cursor::new(b.clone()))).unwrap()).unwrap();
        prop_assert_eq!(back, v);
        for (at, x) in flips {
            let i = at % b.len();
            b[i] ^= x | 1;
        }
        b.truncate(cut % (b.len() + 1));
        drain(NativeReader::from_reader("f", Box::new(Cursor::new(b))));
    }

    #[test]
    fn arbitrary_specs(s in "\\PC{0,80}") {
        let _ = GenSpec::parse(&s);
        let _ = CsvOptions::parse(&s);
    }

    #[test]
    fn spec_like_strings(s in concat!(
        "(zipf|scan|uniform|hotcold|loop):pages=[0-9]{1,4}(,n=[0-9]{1,3})?(,alpha=[0-2]\\.[0-9])?(,write=0\\.[0-9])?",
        "|mix:\\((zipf|uniform|loop):pages=[0-9]{1,3}\\)\\*[0-9](\\+\\((scan|hotcold):pages=[0-9]{1,3}\\))?,n=[0-9]{1,3}",
        "|seq:\\(scan:pages=[0-9]{1,3}\\)\\+\\(uniform:pages=[0-9]{1,3},n=[0-9]{1,3}\\)",
        "|(zipf|mix|seq|scan|uniform)[:(),=+*a-z0-9._ -]{0,60}"
    )) {
        if let Ok(spec) = GenSpec::parse(&s) {
            // Anything that parses builds, and its canonical form parses to the same spec.
            prop_assert_eq!(GenSpec::parse(&spec.to_string()).unwrap(), spec.clone());
            if let Ok(mut g) = spec.build(1) {
                let mut buf = Vec::new();
                g.next_chunk(&mut buf).unwrap();
            }
        }
    }
}

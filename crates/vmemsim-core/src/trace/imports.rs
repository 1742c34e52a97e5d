//! Imports of public trace formats into a recorded trace (native version 2, [`super::recorded`]).
//!
//! These formats hold more (or other) than a plain access stream, so they are not readers
//! ([`super::TraceSource`]): an import writes a `.vmt` file once, and everything reads that.
//!
//! | format   | input                                             | becomes                       |
//! |----------|---------------------------------------------------|-------------------------------|
//! | `msr`    | block I/O CSV, MSR Cambridge / SNIA layout        | file I/O records, one file per (host, disk) |
//! | `lackey` | `valgrind --tool=lackey --trace-mem=yes` output   | access records folded per page |
//!
//! A name ending in `.gz` (or a file starting with gzip's magic bytes) is read through
//! `gzip -dc`, so no decompressor is linked in; the error names the file if `gzip` is missing
//! or fails.
//!
//! # `msr`: block I/O traces
//!
//! One request per row: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`
//! (the MSR Cambridge traces, SNIA IOTTA set 388), e.g. `128166372003061629,hm,1,Read,
//! 3154325504,4096,30399`. `Timestamp` is a Windows filetime (100 ns ticks), `Type` is
//! `Read` or `Write` (any case), `Offset` and `Size` are bytes, `ResponseTime` (100 ns ticks)
//! is checked to be an integer and not kept. A first row whose first field is `Timestamp`
//! is a header and skipped; blank lines and lines starting with `#` are skipped.
//!
//! Each (host, disk) becomes a file of the file table, in the order first seen: ids 0, 1, ...,
//! path `HOST/DISK` (e.g. `hm/1`). Each row becomes a file I/O record: `pread64` for a read,
//! `pwrite64` for a write (positioned I/O: the offset is the row's), `offset` and `len` the
//! row's bytes (the page-cache layers split them into pages), `addr` 0, thread 0 (a block
//! trace has no threads; the file id tells the disks apart), and stamp = (Timestamp − the
//! first row's Timestamp) × 100, nanoseconds since the first request. Rows stay in file order;
//! time may go backwards (the MSR files are sorted, other captures need not be): such a row
//! keeps its own time, counted in [`ImportStats::out_of_order`], and one earlier than the first
//! row is stamped 0. A row of size 0 is kept (a record of length 0). Errors: a row without
//! exactly 7 fields, a field that is not an integer, a negative offset or size, an unknown
//! type, an offset + size past 2^64, sizes of all rows adding up past 2^64; each names the
//! file and the line.
//!
//! The trace has no access records: as a plain access stream (`trace info`) it is empty;
//! `replay` serves its I/O records through the page cache, and
//! [`super::recorded::RecordedReader`] gives them.
//!
//! # `lackey`: Valgrind's example tool
//!
//! Lines `I  ADDR,SIZE` (instruction fetch), ` L ADDR,SIZE` (load), ` S ADDR,SIZE` (store),
//! ` M ADDR,SIZE` (modify: a load and a store of the same data), ADDR in hex (an optional
//! `0x`), SIZE decimal. Lines starting with `==` or `--` (Valgrind's own messages) and blank
//! lines are skipped; any other line is an error naming the line.
//!
//! All accesses are of one thread, id 1 (lackey does not say which thread ran; the recorder
//! numbers the main thread 1). An access counts for the page of its first byte (as the
//! recorder does for accesses straddling a page boundary). Data accesses fold as the
//! recorder folds them: consecutive data accesses to one page are one record, its `count`
//! the accesses (`L` and `S` count 1, `M` counts 2: a load and a store), `write` = an `S` or
//! `M` among them. With `ifetch`, `I` lines become fetch records folded apart from data (a
//! fetch run ends only when a fetch goes to another page, so fetch records may come after
//! data records with later stamps, as in the recorder); without it they are skipped, but
//! still counted for stamps. A record's stamp is the number of `I` lines before its first
//! access (for a load, its own instruction included: lackey prints the `I` line first).
//!
//! Recorded traces of other threads, of file I/O, of the kernel: none (lackey does not see
//! them).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};

use super::recorded::{FileIo, FileOp, Recorded, RecordedWriter};
use super::{page_shift, TraceMeta, TraceWriter};
use crate::error::{Error, Result};

/// Formats an import reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImportFormat {
    /// Block I/O CSV in the MSR Cambridge / SNIA layout.
    Msr,
    /// `valgrind --tool=lackey --trace-mem=yes` text output.
    Lackey,
}

impl ImportFormat {
    pub const ALL: &'static [(ImportFormat, &'static str)] =
        &[(ImportFormat::Msr, "msr"), (ImportFormat::Lackey, "lackey")];

    pub fn name(self) -> &'static str {
        match self {
            ImportFormat::Msr => "msr",
            ImportFormat::Lackey => "lackey",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            ImportFormat::Msr => {
                "block I/O CSV (MSR Cambridge / SNIA: timestamp, host, disk, type, offset, size, \
                 response time) to file I/O records"
            }
            ImportFormat::Lackey => {
                "valgrind lackey --trace-mem=yes output to access records folded per page"
            }
        }
    }

    /// The import format called `name` (any case; `snia` is `msr`), or `None`.
    pub fn from_name(name: &str) -> Option<ImportFormat> {
        match name.trim().to_ascii_lowercase().as_str() {
            "msr" | "snia" => Some(ImportFormat::Msr),
            "lackey" => Some(ImportFormat::Lackey),
            _ => None,
        }
    }
}

/// Options of an import.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImportOptions {
    /// Bytes per page (a power of two): lackey addresses are divided by it; recorded in the
    /// header either way.
    pub page_size: u64,
    /// Lackey: keep instruction fetches (`I` lines) as fetch records.
    pub ifetch: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            page_size: 4096,
            ifetch: false,
        }
    }
}

/// What an import wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportStats {
    /// Input lines read (skipped ones included).
    pub lines: u64,
    /// Access records written.
    pub records: u64,
    /// Accesses they fold (the sum of counts).
    pub accesses: u64,
    /// Accesses that read (`L`, and the load of `M`).
    pub reads: u64,
    /// Accesses that wrote (`S`, and the store of `M`).
    pub writes: u64,
    pub ifetches: u64,
    /// File I/O records written.
    pub io_records: u64,
    /// File-table entries.
    pub files: u64,
    /// Bytes the I/O records name.
    pub io_bytes: u64,
    /// msr: rows with a timestamp before the previous row's.
    pub out_of_order: u64,
    /// lackey: instruction lines (`I`), kept or not; msr: the last stamp (ns).
    pub instructions: u64,
}

/// Import `path` (in `format`) into a new recorded trace at `out`.
pub fn import(
    path: &str,
    format: ImportFormat,
    opts: &ImportOptions,
    out: &str,
) -> Result<ImportStats> {
    page_shift(opts.page_size)?;
    if opts.ifetch && format != ImportFormat::Lackey {
        return Err(Error::config(
            "ifetch",
            format!(
                "instruction fetches are only in lackey traces, not {}",
                format.name()
            ),
        ));
    }
    let mut input = Input::open(path)?;
    let mut meta = TraceMeta {
        page_size: opts.page_size,
        origin: Some(format!("{}:{path}", format.name())),
        ..TraceMeta::default()
    };
    meta.extra.insert("import".into(), format.name().into());
    let stamp = match format {
        ImportFormat::Msr => "ns since the first request (MSR timestamp, 100 ns ticks)",
        ImportFormat::Lackey => "instructions (lackey I lines) before the record",
    };
    meta.extra.insert("stamp".into(), stamp.into());
    if format == ImportFormat::Lackey {
        meta.extra.insert(
            "ifetch".into(),
            if opts.ifetch { "yes" } else { "no" }.into(),
        );
    }
    let mut w = RecordedWriter::create(out, meta)?;
    let st = match format {
        ImportFormat::Msr => import_msr(path, &mut input.rd, &mut w),
        ImportFormat::Lackey => import_lackey(path, &mut input.rd, opts, &mut w),
    };
    // A decompressor that failed explains a short or empty input better than the parser.
    input.finish(path)?;
    let st = st?;
    w.finish()?;
    Ok(st)
}

/// The input file, through `gzip -dc` when compressed.
struct Input {
    rd: Box<dyn BufRead>,
    child: Option<Child>,
}

impl Input {
    fn open(path: &str) -> Result<Input> {
        let mut f = File::open(path).map_err(|e| Error::io(path, &e))?;
        let mut magic = [0u8; 2];
        let n = super::read_full(&mut f, &mut magic).map_err(|e| Error::io(path, &e))?;
        let gz = path.to_ascii_lowercase().ends_with(".gz") || (n == 2 && magic == [0x1F, 0x8B]);
        if !gz {
            drop(f);
            let f = File::open(path).map_err(|e| Error::io(path, &e))?;
            return Ok(Input {
                rd: Box::new(BufReader::with_capacity(1 << 20, f)),
                child: None,
            });
        }
        let mut child = Command::new("gzip")
            .arg("-dc")
            .arg("--")
            .arg(path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                Error::trace(
                    path,
                    "byte 0",
                    format!("gzip-compressed; could not run `gzip -dc` ({e})"),
                )
            })?;
        let out = child.stdout.take().ok_or_else(|| {
            Error::trace(path, "byte 0", "gzip-compressed; `gzip -dc` gave no output")
        })?;
        Ok(Input {
            rd: Box::new(BufReader::with_capacity(1 << 20, out)),
            child: Some(child),
        })
    }

    /// Wait for the decompressor; its failure is an error naming the file.
    fn finish(&mut self, path: &str) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        // Drain what the parser did not read (after an error), so that gzip ends normally.
        let _ = std::io::copy(&mut self.rd, &mut std::io::sink());
        self.rd = Box::new(std::io::empty());
        let status = child.wait().map_err(|e| Error::io(path, &e))?;
        if status.success() {
            return Ok(());
        }
        let mut msg = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut msg);
        }
        Err(Error::trace(
            path,
            "byte 0",
            format!(
                "`gzip -dc` failed ({status}): {}",
                msg.lines().next().unwrap_or("").trim()
            ),
        ))
    }
}

/// Read lines into `buf` (without the line end); `Ok(false)` at the end.
fn next_line(rd: &mut dyn BufRead, buf: &mut Vec<u8>, path: &str, line: u64) -> Result<bool> {
    buf.clear();
    let n = rd
        .read_until(b'\n', buf)
        .map_err(|e| Error::trace(path, format!("line {line}"), e.to_string()))?;
    if n == 0 {
        return Ok(false);
    }
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    Ok(true)
}

fn trim(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end.max(start)]
}

fn show(s: &[u8]) -> String {
    let s = String::from_utf8_lossy(s);
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(60).collect::<String>())
    } else {
        s.into_owned()
    }
}

fn parse_int(field: &[u8]) -> Option<i128> {
    let f = trim(field);
    let (neg, digits) = match f.first() {
        Some(b'-') => (true, &f[1..]),
        Some(b'+') => (false, &f[1..]),
        _ => (false, f),
    };
    if digits.is_empty() || digits.len() > 30 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: i128 = 0;
    for &d in digits {
        v = v * 10 + (d - b'0') as i128;
    }
    Some(if neg { -v } else { v })
}

/// Import MSR Cambridge / SNIA block I/O rows from `rd` into `w` (see the module docs);
/// `path` names the input in errors. The writer is not finished.
pub fn import_msr<W: Write>(
    path: &str,
    rd: &mut dyn BufRead,
    w: &mut RecordedWriter<W>,
) -> Result<ImportStats> {
    const NAMES: [&str; 7] = [
        "Timestamp",
        "Hostname",
        "DiskNumber",
        "Type",
        "Offset",
        "Size",
        "ResponseTime",
    ];
    let mut st = ImportStats::default();
    let mut disks: std::collections::HashMap<(Vec<u8>, Vec<u8>), u32> = Default::default();
    let mut buf = Vec::new();
    let mut first_ts: Option<i128> = None;
    let mut prev_ts: i128 = 0;
    while next_line(rd, &mut buf, path, st.lines + 1)? {
        st.lines += 1;
        let at = format!("line {}", st.lines);
        let line = trim(&buf);
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let mut fields: [&[u8]; 7] = [&[]; 7];
        let mut n = 0;
        for f in line.split(|&c| c == b',') {
            if n < 7 {
                fields[n] = trim(f);
            }
            n += 1;
        }
        if n != 7 {
            return Err(Error::trace(
                path,
                at,
                format!(
                    "{n} fields, expected 7 ({}): '{}'",
                    NAMES.join(","),
                    show(line)
                ),
            ));
        }
        if first_ts.is_none() && fields[0].eq_ignore_ascii_case(b"timestamp") {
            continue;
        }
        let int = |i: usize| {
            parse_int(fields[i]).ok_or_else(|| {
                Error::trace(
                    path,
                    at.clone(),
                    format!("{}: '{}' is not an integer", NAMES[i], show(fields[i])),
                )
            })
        };
        let ts = int(0)?;
        let (offset, size) = (int(4)?, int(5)?);
        int(6)?;
        for (i, v) in [(4, offset), (5, size)] {
            if v < 0 {
                return Err(Error::trace(
                    path,
                    at,
                    format!("{}: {v} is negative", NAMES[i]),
                ));
            }
        }
        let op = if fields[3].eq_ignore_ascii_case(b"read") {
            FileOp::Pread
        } else if fields[3].eq_ignore_ascii_case(b"write") {
            FileOp::Pwrite
        } else {
            return Err(Error::trace(
                path,
                at,
                format!("Type: '{}' is neither Read nor Write", show(fields[3])),
            ));
        };
        if offset + size > u64::MAX as i128 {
            return Err(Error::trace(
                path,
                at,
                format!("Offset {offset} + Size {size} passes 2^64 bytes"),
            ));
        }
        let io_bytes = st.io_bytes.checked_add(size as u64).ok_or_else(|| {
            Error::trace(
                path,
                at.clone(),
                format!("Size {size}: the rows' sizes add up past 2^64 bytes"),
            )
        })?;
        if fields[1].is_empty() || fields[2].is_empty() {
            return Err(Error::trace(
                path,
                at,
                "Hostname and DiskNumber must not be empty",
            ));
        }
        let t0 = *first_ts.get_or_insert(ts);
        if ts < prev_ts {
            st.out_of_order += 1;
        }
        prev_ts = ts;
        let ticks = (ts - t0).max(0);
        let stamp = u64::try_from(ticks.saturating_mul(100)).map_err(|_| {
            Error::trace(
                path,
                at.clone(),
                format!("Timestamp {ts} is too far from the first"),
            )
        })?;
        let key = (fields[1].to_vec(), fields[2].to_vec());
        let file = match disks.get(&key) {
            Some(&id) => id,
            None => {
                let id = disks.len() as u32;
                let name = format!(
                    "{}/{}",
                    String::from_utf8_lossy(fields[1]),
                    String::from_utf8_lossy(fields[2])
                );
                w.file(id, &name)?;
                disks.insert(key, id);
                st.files += 1;
                id
            }
        };
        w.io(FileIo {
            op,
            tid: 0,
            stamp,
            file,
            offset: offset as u64,
            len: size as u64,
            addr: 0,
        })?;
        st.io_records += 1;
        st.io_bytes = io_bytes;
        st.instructions = st.instructions.max(stamp);
    }
    Ok(st)
}

/// A run of accesses being folded.
#[derive(Clone, Copy)]
struct Run {
    page: u64,
    write: bool,
    count: u64,
    stamp: u64,
}

/// Thread id of every lackey record.
pub const LACKEY_TID: u32 = 1;

fn flush_run<W: Write>(
    run: &mut Option<Run>,
    ifetch: bool,
    w: &mut RecordedWriter<W>,
    st: &mut ImportStats,
) -> Result<()> {
    if let Some(r) = run.take() {
        w.access(Recorded {
            page: r.page,
            write: r.write,
            ifetch,
            tid: LACKEY_TID,
            count: r.count,
            stamp: r.stamp,
        })?;
        st.records += 1;
    }
    Ok(())
}

fn parse_hex(s: &[u8]) -> Option<u64> {
    let s = s
        .strip_prefix(b"0x")
        .or_else(|| s.strip_prefix(b"0X"))
        .unwrap_or(s);
    if s.is_empty() || s.len() > 16 {
        return None;
    }
    let mut v = 0u64;
    for &c in s {
        v = v << 4 | (c as char).to_digit(16)? as u64;
    }
    Some(v)
}

/// Import lackey `--trace-mem=yes` lines from `rd` into `w` (see the module docs); `path`
/// names the input in errors. The writer is not finished.
pub fn import_lackey<W: Write>(
    path: &str,
    rd: &mut dyn BufRead,
    opts: &ImportOptions,
    w: &mut RecordedWriter<W>,
) -> Result<ImportStats> {
    let shift = page_shift(opts.page_size)?;
    let mut st = ImportStats::default();
    let mut buf = Vec::new();
    let (mut data, mut fetch): (Option<Run>, Option<Run>) = (None, None);
    while next_line(rd, &mut buf, path, st.lines + 1)? {
        st.lines += 1;
        let raw = buf.as_slice();
        if raw.starts_with(b"==") || raw.starts_with(b"--") {
            continue;
        }
        let line = trim(raw);
        if line.is_empty() {
            continue;
        }
        let bad = |what: &str| {
            Error::trace(
                path,
                format!("line {}", st.lines),
                format!("{what}: '{}'", show(line)),
            )
        };
        let kind = line[0];
        if !matches!(kind, b'I' | b'L' | b'S' | b'M') || line.len() < 2 || line[1] != b' ' {
            return Err(bad(
                "not a lackey --trace-mem line (I, L, S or M, then ADDR,SIZE)",
            ));
        }
        let rest = trim(&line[1..]);
        let comma = rest
            .iter()
            .position(|&c| c == b',')
            .ok_or_else(|| bad("expected ADDR,SIZE"))?;
        let addr = parse_hex(trim(&rest[..comma])).ok_or_else(|| bad("address is not hex"))?;
        match parse_int(&rest[comma + 1..]) {
            Some(s) if s > 0 => {}
            _ => return Err(bad("size is not a positive integer")),
        }
        let page = addr >> shift;
        if kind == b'I' {
            // The instruction's stamp: the instructions before it.
            let stamp = st.instructions;
            st.instructions += 1;
            if !opts.ifetch {
                continue;
            }
            st.ifetches += 1;
            st.accesses += 1;
            match &mut fetch {
                Some(r) if r.page == page => r.count += 1,
                _ => {
                    flush_run(&mut fetch, true, w, &mut st)?;
                    fetch = Some(Run {
                        page,
                        write: false,
                        count: 1,
                        stamp,
                    });
                }
            }
            continue;
        }
        let (n, write) = match kind {
            b'L' => {
                st.reads += 1;
                (1, false)
            }
            b'S' => {
                st.writes += 1;
                (1, true)
            }
            _ => {
                st.reads += 1;
                st.writes += 1;
                (2, true)
            }
        };
        st.accesses += n;
        match &mut data {
            Some(r) if r.page == page => {
                r.count += n;
                r.write |= write;
            }
            _ => {
                flush_run(&mut data, false, w, &mut st)?;
                data = Some(Run {
                    page,
                    write,
                    count: n,
                    stamp: st.instructions,
                });
            }
        }
    }
    flush_run(&mut data, false, w, &mut st)?;
    flush_run(&mut fetch, true, w, &mut st)?;
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::recorded::{Event, RecordedReader};

    fn tmp(name: &str) -> String {
        let dir = std::env::temp_dir().join(format!("vmemsim-import-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name).to_string_lossy().into_owned()
    }

    fn import_str(
        name: &str,
        text: &str,
        format: ImportFormat,
        opts: &ImportOptions,
    ) -> Result<(ImportStats, Vec<Event>)> {
        let p = tmp(name);
        std::fs::write(&p, text).unwrap();
        let out = tmp(&format!("{name}.vmt"));
        let st = import(&p, format, opts, &out)?;
        let mut rd = RecordedReader::open(&out).unwrap();
        assert_eq!(rd.version(), 2);
        assert_eq!(rd.meta().extra.get("import").unwrap(), format.name());
        Ok((st, rd.collect().unwrap()))
    }

    fn io(op: FileOp, stamp: u64, file: u32, offset: u64, len: u64) -> Event {
        Event::Io(FileIo {
            op,
            tid: 0,
            stamp,
            file,
            offset,
            len,
            addr: 0,
        })
    }

    const MSR: &str = "\
Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime
128166372003061629,hm,1,Read,3154325504,4096,30399
128166372016382155,hm,1,Write,3154325504,8192,1000

128166372016382156,src2,0,write,0,512,5
128166372010000000,hm,0,Read,12288,65536,77
128166372020000000,hm,1,Read,4096,0,1
";

    #[test]
    fn msr_rows_become_file_io() {
        let (st, ev) =
            import_str("a.csv", MSR, ImportFormat::Msr, &ImportOptions::default()).unwrap();
        // Stamps: (ts - 128166372003061629) * 100 ns, by hand:
        // 16382155 - 3061629 = 13320526 ticks; +1 = 13320527; 10000000 - 3061629 = 6938371;
        // 20000000 - 3061629 = 16938371.
        let want = vec![
            Event::File {
                id: 0,
                path: "hm/1".into(),
            },
            io(FileOp::Pread, 0, 0, 3154325504, 4096),
            io(FileOp::Pwrite, 1_332_052_600, 0, 3154325504, 8192),
            Event::File {
                id: 1,
                path: "src2/0".into(),
            },
            io(FileOp::Pwrite, 1_332_052_700, 1, 0, 512),
            Event::File {
                id: 2,
                path: "hm/0".into(),
            },
            io(FileOp::Pread, 693_837_100, 2, 12288, 65536),
            io(FileOp::Pread, 1_693_837_100, 0, 4096, 0),
        ];
        assert_eq!(ev, want);
        assert_eq!(st.lines, 7);
        assert_eq!(st.io_records, 5);
        assert_eq!(st.files, 3);
        assert_eq!(st.io_bytes, 4096 + 8192 + 512 + 65536);
        // Row 5 goes back in time.
        assert_eq!(st.out_of_order, 1);
        assert_eq!(st.records, 0);
    }

    #[test]
    fn msr_earlier_than_first_is_stamp_zero() {
        let text = "100,h,0,Read,0,4096,1\n90,h,0,Read,4096,4096,1\n";
        let (st, ev) = import_str(
            "early.csv",
            text,
            ImportFormat::Msr,
            &ImportOptions::default(),
        )
        .unwrap();
        assert_eq!(ev[2], io(FileOp::Pread, 0, 0, 4096, 4096));
        assert_eq!(st.out_of_order, 1);
    }

    #[test]
    fn msr_errors_name_file_and_line() {
        let cases = [
            (
                "1,h,0,Read,0,4096\n",
                "line 1: 6 fields, expected 7 (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime): '1,h,0,Read,0,4096'",
            ),
            (
                "1,h,0,Read,0,4096,1\n2,h,0,Trim,0,4096,1\n",
                "line 2: Type: 'Trim' is neither Read nor Write",
            ),
            (
                "1,h,0,Read,0,4096,1\n\n3,h,0,Read,0,-4096,1\n",
                "line 3: Size: -4096 is negative",
            ),
            (
                "1,h,0,Read,-1,4096,1\n",
                "line 1: Offset: -1 is negative",
            ),
            (
                "x1,h,0,Read,0,4096,1\n",
                "line 1: Timestamp: 'x1' is not an integer",
            ),
            (
                "1,h,0,Read,0,4096,fast\n",
                "line 1: ResponseTime: 'fast' is not an integer",
            ),
            (
                "1,h,0,Read,18446744073709551615,1,1\n",
                "line 1: Offset 18446744073709551615 + Size 1 passes 2^64 bytes",
            ),
        ];
        for (i, (text, msg)) in cases.iter().enumerate() {
            let name = format!("bad{i}.csv");
            let e =
                import_str(&name, text, ImportFormat::Msr, &ImportOptions::default()).unwrap_err();
            assert_eq!(e.to_string(), format!("{}: {msg}", tmp(&name)), "case {i}");
        }
    }

    #[test]
    fn msr_gzip_input() {
        let p = tmp("g.csv");
        std::fs::write(&p, MSR).unwrap();
        let ok = Command::new("gzip").arg("-kf").arg(&p).status();
        if !matches!(ok, Ok(s) if s.success()) {
            eprintln!("gzip not available; skipping the gzip import test");
            return;
        }
        let out = tmp("g.vmt");
        let st = import(
            &format!("{p}.gz"),
            ImportFormat::Msr,
            &ImportOptions::default(),
            &out,
        )
        .unwrap();
        assert_eq!((st.io_records, st.files), (5, 3));
        // A corrupt .gz is an error naming the file.
        let bad = tmp("bad.csv.gz");
        std::fs::write(&bad, b"not gzip at all").unwrap();
        let e = import(&bad, ImportFormat::Msr, &ImportOptions::default(), &out).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("{bad}: byte 0: `gzip -dc` failed")),
            "{e}"
        );
    }

    fn acc(page: u64, write: bool, ifetch: bool, count: u64, stamp: u64) -> Event {
        Event::Access(Recorded {
            page,
            write,
            ifetch,
            tid: LACKEY_TID,
            count,
            stamp,
        })
    }

    // Page size 4096: 0x04222cac is page 0x4222, 0x0421f8a8 page 0x421f, 0xbef2c3a8 page 0xbef2c.
    const LACKEY: &str = "\
==1234== Lackey, an example Valgrind tool
==1234== Command: ./a.out
==1234==
I  04222cac,3
 L 04222cb0,4
 L 04222000,8
I  04222caf,2
 S bef2c3a8,4
 M 0421f8a8,4
I  04223000,5
 M 0421f000,4
 L 0421fffc,8
I  04222cb4,3
 S 0421f8a8,4
--1234-- a core message
==1234== ERROR SUMMARY: 0 errors
";

    #[test]
    fn lackey_folds_per_page() {
        let (st, ev) = import_str(
            "l.txt",
            LACKEY,
            ImportFormat::Lackey,
            &ImportOptions::default(),
        )
        .unwrap();
        // Data runs: page 0x4222 (2 loads, after 1 instruction), 0xbef2c (store, after 2),
        // 0x421f (M, M, L, S = 2 + 2 + 1 + 1 accesses, writes; first after 2 instructions).
        let want = vec![
            acc(0x4222, false, false, 2, 1),
            acc(0xbef2c, true, false, 1, 2),
            acc(0x421f, true, false, 6, 2),
        ];
        assert_eq!(ev, want);
        assert_eq!(st.lines, 16);
        assert_eq!((st.records, st.accesses), (3, 9));
        assert_eq!((st.reads, st.writes, st.ifetches), (5, 4, 0));
        assert_eq!(st.instructions, 4);
    }

    #[test]
    fn lackey_ifetch_folds_apart() {
        let opts = ImportOptions {
            ifetch: true,
            ..Default::default()
        };
        let (st, ev) = import_str("li.txt", LACKEY, ImportFormat::Lackey, &opts).unwrap();
        // Fetch runs: 0x4222 (I at stamps 0, 1), 0x4223 (stamp 2), 0x4222 (stamp 3). A fetch
        // record is written when the next fetch leaves its page, data ones likewise.
        let want = vec![
            acc(0x4222, false, false, 2, 1),
            acc(0xbef2c, true, false, 1, 2),
            acc(0x4222, false, true, 2, 0),
            acc(0x4223, false, true, 1, 2),
            acc(0x421f, true, false, 6, 2),
            acc(0x4222, false, true, 1, 3),
        ];
        assert_eq!(ev, want);
        assert_eq!((st.records, st.accesses, st.ifetches), (6, 13, 4));
    }

    #[test]
    fn lackey_page_size_and_plain_read() {
        let opts = ImportOptions {
            page_size: 1 << 16,
            ..Default::default()
        };
        // 64 KiB pages: 0x04222cb0 and 0x04222000 are page 0x422, 0x0421f8a8 page 0x421.
        let (_, ev) = import_str("l64.txt", LACKEY, ImportFormat::Lackey, &opts).unwrap();
        let want = vec![
            acc(0x422, false, false, 2, 1),
            acc(0xbef2, true, false, 1, 2),
            acc(0x421, true, false, 6, 2),
        ];
        assert_eq!(ev, want);
        // As a plain access stream: one access per record.
        let out = tmp("l64.txt.vmt");
        let got = crate::trace::collect(
            &mut *crate::trace::open(&out, None, &Default::default()).unwrap(),
        )
        .unwrap();
        assert_eq!(
            got,
            vec![
                crate::access::Access::read(0x422),
                crate::access::Access::write(0xbef2),
                crate::access::Access::write(0x421),
            ]
        );
    }

    #[test]
    fn lackey_errors_name_the_line() {
        let cases = [
            (
                "I  04222cac,3\nhello world\n",
                "line 2: not a lackey --trace-mem line (I, L, S or M, then ADDR,SIZE): 'hello world'",
            ),
            (" L 04222cac\n", "line 1: expected ADDR,SIZE: 'L 04222cac'"),
            (
                "==1== x\n L 0422zcac,4\n",
                "line 2: address is not hex: 'L 0422zcac,4'",
            ),
            (" S 1000,0\n", "line 1: size is not a positive integer: 'S 1000,0'"),
            (" X 1000,4\n", "line 1: not a lackey --trace-mem line (I, L, S or M, then ADDR,SIZE): 'X 1000,4'"),
        ];
        for (i, (text, msg)) in cases.iter().enumerate() {
            let name = format!("badl{i}.txt");
            let e = import_str(&name, text, ImportFormat::Lackey, &ImportOptions::default())
                .unwrap_err();
            assert_eq!(e.to_string(), format!("{}: {msg}", tmp(&name)), "case {i}");
        }
    }

    #[test]
    fn options_are_checked() {
        let p = tmp("o.csv");
        std::fs::write(&p, "1,h,0,Read,0,1,1\n").unwrap();
        let out = tmp("o.vmt");
        let e = import(
            &p,
            ImportFormat::Msr,
            &ImportOptions {
                ifetch: true,
                ..Default::default()
            },
            &out,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "ifetch: instruction fetches are only in lackey traces, not msr"
        );
        let e = import(
            &p,
            ImportFormat::Lackey,
            &ImportOptions {
                page_size: 1000,
                ..Default::default()
            },
            &out,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "page_size: 1000 is not a power of two of at least 2"
        );
        assert_eq!(ImportFormat::from_name("SNIA"), Some(ImportFormat::Msr));
        assert_eq!(
            ImportFormat::from_name("Lackey"),
            Some(ImportFormat::Lackey)
        );
        assert_eq!(ImportFormat::from_name("csv"), None);
    }
}

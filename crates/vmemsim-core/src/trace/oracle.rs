//! libCacheSim's `oracleGeneral` binary trace: packed little-endian 24-byte records
//!
//! ```text
//! offset 0  u32  clock_time
//!        4  u64  obj_id
//!       12  u32  obj_size
//!       16  i64  next_access_vtime
//! ```
//!
//! as declared in libCacheSim `traceReader/customizedReader/oracle/oracleGeneralBin.h`. The
//! reader takes `obj_id` as the page number (or, with `addresses`, as a byte address shifted by
//! the page size) and ignores the other fields; there is no operation field, so every access is
//! a read. A file whose length is not a multiple of 24 ends in a partial record: an error
//! naming the record's byte offset.
//!
//! The writer feeds libCacheSim from vmemsim traces. `next_access_vtime` follows libCacheSim's
//! converter (`traceConv`'s `convert_to_oracleGeneral`): the 1-based position in the trace of
//! the next request to the same object, `-1` when there is none. `clock_time` is the 0-based
//! access index (saturating at `u32::MAX`) and `obj_size` the page size, so a libCacheSim
//! cache of `frames * page_size` bytes holds `frames` pages. Computing the next access needs
//! the future: records are written with `-1`, then [`TraceWriter::finish`] walks the file
//! backwards in blocks, keeping the last-seen position of every page (memory: one entry per
//! distinct page, not per access), and patches the field in place.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};

use super::{read_full, ReaderOptions, TraceSource, TraceWriter, CHUNK};
use crate::access::Access;
use crate::error::{Error, Result};

/// Bytes per record.
pub const RECORD: usize = 24;

/// Reads an oracleGeneral file a chunk at a time.
pub struct OracleReader {
    path: String,
    rd: Box<dyn Read + Send>,
    buf: Vec<u8>,
    offset: u64,
    shift: u32,
    done: bool,
}

impl OracleReader {
    pub fn open(path: &str, opts: &ReaderOptions) -> Result<Self> {
        let f = File::open(path).map_err(|e| Error::io(path, &e))?;
        Self::from_reader(path, Box::new(f), opts)
    }

    /// Read records from any byte stream; `path` names it in messages.
    pub fn from_reader(path: &str, rd: Box<dyn Read + Send>, opts: &ReaderOptions) -> Result<Self> {
        let shift = if opts.addresses {
            opts.page_shift()?
        } else {
            0
        };
        Ok(OracleReader {
            path: path.to_string(),
            rd,
            buf: vec![0u8; RECORD * CHUNK],
            offset: 0,
            shift,
            done: false,
        })
    }
}

impl TraceSource for OracleReader {
    fn next_chunk(&mut self, out: &mut Vec<Access>) -> Result<()> {
        out.clear();
        if self.done {
            return Ok(());
        }
        let got = read_full(&mut self.rd, &mut self.buf).map_err(|e| {
            Error::trace(&self.path, format!("byte {}", self.offset), e.to_string())
        })?;
        let whole = got / RECORD;
        let partial = got % RECORD;
        if partial != 0 {
            let at = self.offset + (whole * RECORD) as u64;
            self.done = true;
            return Err(Error::trace(
                &self.path,
                format!("byte {at}"),
                format!("truncated record: {partial} of {RECORD} bytes"),
            ));
        }
        if got < self.buf.len() {
            self.done = true;
        }
        out.extend(self.buf[..whole * RECORD].chunks_exact(RECORD).map(|r| {
            let id = u64::from_le_bytes(r[4..12].try_into().unwrap_or_default());
            Access::read(id >> self.shift)
        }));
        self.offset += got as u64;
        Ok(())
    }

    fn name(&self) -> String {
        self.path.clone()
    }
}

/// Options of [`OracleWriter`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OracleWriterOptions {
    /// Value of every record's `obj_size` (bytes per page).
    pub obj_size: u32,
}

impl Default for OracleWriterOptions {
    fn default() -> Self {
        OracleWriterOptions { obj_size: 4096 }
    }
}

/// Writes an oracleGeneral file with correct `next_access_vtime` (see the module docs).
pub struct OracleWriter {
    path: String,
    out: Option<BufWriter<File>>,
    opts: OracleWriterOptions,
    records: u64,
    finished: bool,
}

impl OracleWriter {
    pub fn create(path: &str, opts: OracleWriterOptions) -> Result<Self> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(path, &e))?;
        Ok(OracleWriter {
            path: path.to_string(),
            out: Some(BufWriter::with_capacity(1 << 20, f)),
            opts,
            records: 0,
            finished: false,
        })
    }

    /// The backward pass: fill in `next_access_vtime` of every record.
    fn patch_next_access(&mut self, mut f: File) -> Result<()> {
        let io = |e: std::io::Error| Error::io(&self.path, &e);
        let n = self.records;
        let block = CHUNK as u64;
        let mut buf = vec![0u8; CHUNK * RECORD];
        // page → 1-based position of its next access (the latest one seen walking backwards)
        let mut next: HashMap<u64, i64> = HashMap::new();
        let mut end = n;
        while end > 0 {
            let start = end.saturating_sub(block);
            let len = ((end - start) as usize) * RECORD;
            f.seek(SeekFrom::Start(start * RECORD as u64)).map_err(io)?;
            f.read_exact(&mut buf[..len]).map_err(io)?;
            for i in (0..(end - start) as usize).rev() {
                let r = &mut buf[i * RECORD..(i + 1) * RECORD];
                let id = u64::from_le_bytes(r[4..12].try_into().unwrap_or_default());
                let pos = (start + i as u64 + 1) as i64;
                let nv = next.insert(id, pos).unwrap_or(-1);
                r[16..24].copy_from_slice(&nv.to_le_bytes());
            }
            f.seek(SeekFrom::Start(start * RECORD as u64)).map_err(io)?;
            f.write_all(&buf[..len]).map_err(io)?;
            end = start;
        }
        f.flush().map_err(io)?;
        Ok(())
    }
}

impl TraceWriter for OracleWriter {
    fn write(&mut self, accesses: &[Access]) -> Result<()> {
        let out = match (&mut self.out, self.finished) {
            (Some(o), false) => o,
            _ => return Err(Error::config("writer", "trace writer already finished")),
        };
        let mut rec = [0u8; RECORD];
        rec[12..16].copy_from_slice(&self.opts.obj_size.to_le_bytes());
        rec[16..24].copy_from_slice(&(-1i64).to_le_bytes());
        for a in accesses {
            let t = u32::try_from(self.records).unwrap_or(u32::MAX);
            rec[0..4].copy_from_slice(&t.to_le_bytes());
            rec[4..12].copy_from_slice(&a.page.to_le_bytes());
            out.write_all(&rec).map_err(|e| Error::io(&self.path, &e))?;
            self.records += 1;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<u64> {
        let out = match (self.out.take(), self.finished) {
            (Some(o), false) => o,
            _ => return Err(Error::config("writer", "trace writer already finished")),
        };
        let f = out
            .into_inner()
            .map_err(|e| Error::io(&self.path, e.error()))?;
        self.patch_next_access(f)?;
        self.finished = true;
        Ok(self.records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::collect;

    fn tmp(name: &str) -> String {
        let dir = std::env::temp_dir().join(format!("vmemsim-oracle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name).to_string_lossy().into_owned()
    }

    fn record(time: u32, id: u64, size: u32, next: i64) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&time.to_le_bytes());
        r.extend_from_slice(&id.to_le_bytes());
        r.extend_from_slice(&size.to_le_bytes());
        r.extend_from_slice(&next.to_le_bytes());
        r
    }

    fn read(bytes: Vec<u8>, opts: &ReaderOptions) -> Result<Vec<Access>> {
        let mut r = OracleReader::from_reader(
            "t.oracleGeneral",
            Box::new(std::io::Cursor::new(bytes)),
            opts,
        )?;
        collect(&mut r)
    }

    #[test]
    fn reads_ids_as_pages() {
        let mut b = record(0, 7, 4096, 3);
        b.extend(record(1, 1 << 40, 4096, -1));
        b.extend(record(2, 7, 0, -1));
        let got = read(b.clone(), &ReaderOptions::default()).unwrap();
        assert_eq!(
            got,
            vec![Access::read(7), Access::read(1 << 40), Access::read(7)]
        );
        let opts = ReaderOptions {
            addresses: true,
            ..Default::default()
        };
        let got = read(b, &opts).unwrap();
        assert_eq!(
            got,
            vec![Access::read(0), Access::read(1 << 28), Access::read(0)]
        );
    }

    #[test]
    fn partial_record_names_offset() {
        let mut b = record(0, 1, 1, -1);
        b.extend(record(1, 2, 1, -1));
        b.extend_from_slice(&[1, 2, 3, 4, 5]);
        assert_eq!(
            read(b, &ReaderOptions::default()).unwrap_err().to_string(),
            "t.oracleGeneral: byte 48: truncated record: 5 of 24 bytes"
        );
    }

    #[test]
    fn partial_record_after_many_chunks() {
        // The partial record sits beyond the first read block: the offset still counts from 0.
        let n = CHUNK + 3;
        let mut b = Vec::with_capacity(n * RECORD + 7);
        for i in 0..n {
            b.extend(record(i as u32, i as u64, 1, -1));
        }
        b.extend_from_slice(&[0; 7]);
        let e = read(b, &ReaderOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "t.oracleGeneral: byte {}: truncated record: 7 of 24 bytes",
                n * RECORD
            )
        );
    }

    #[test]
    fn writer_next_access_by_hand() {
        // Pages 1 2 1 3 2 (positions 1..5): page 1 at 1 is next seen at 3, page 2 at 2 at 5,
        // the rest never again (-1), as libCacheSim's traceConv writes them.
        let p = tmp("hand.oracleGeneral");
        let mut w = OracleWriter::create(&p, OracleWriterOptions::default()).unwrap();
        w.write(&[1, 2, 1, 3, 2].map(Access::read)).unwrap();
        assert_eq!(w.finish().unwrap(), 5);
        let bytes = std::fs::read(&p).unwrap();
        let mut want = Vec::new();
        for (t, (id, next)) in [(1, 3), (2, 5), (1, -1), (3, -1), (2, -1)]
            .iter()
            .enumerate()
        {
            want.extend(record(t as u32, *id, 4096, *next));
        }
        assert_eq!(bytes, want);
        assert!(w.finish().is_err());
    }

    #[test]
    fn writer_next_access_across_blocks() {
        // Reuse distances that straddle the writer's backward blocks: page i % 70000 over
        // 200000 accesses, so access k is next used at k + 70000 (1-based: k + 70001).
        let p = tmp("blocks.oracleGeneral");
        let mut w = OracleWriter::create(&p, OracleWriterOptions { obj_size: 1 }).unwrap();
        let v: Vec<Access> = (0..200_000u64).map(|i| Access::read(i % 70_000)).collect();
        for c in v.chunks(12345) {
            w.write(c).unwrap();
        }
        w.finish().unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(bytes.len(), 200_000 * RECORD);
        for (k, r) in bytes.chunks_exact(RECORD).enumerate() {
            let next = i64::from_le_bytes(r[16..24].try_into().unwrap());
            let want = if k + 70_000 < 200_000 {
                (k + 70_001) as i64
            } else {
                -1
            };
            assert_eq!(next, want, "record {k}");
        }
    }
}

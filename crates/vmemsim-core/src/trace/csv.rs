//! Delimited-text (CSV) traces with a column mapping.
//!
//! [`CsvOptions`] says which column holds the page (or, with [`ReaderOptions::addresses`], the
//! byte address), which optional column holds the operation, whether the first line is a
//! header, and the delimiter. Columns are named by header name or by 1-based index (as
//! libCacheSim's `obj-id-col=2`). Fields may be double-quoted (`"12"`, with `""` for a quote).
//! Blank lines and lines starting with `#` are skipped.
//!
//! Operations: `r`, `read`, `get`, `load`, `0` are reads; `w`, `write`, `set`, `put`, `store`,
//! `update`, `1` are writes (any case). Anything else is an error naming line and column, as is
//! a row without the mapped column, a header without a named column, or a non-numeric page.
//!
//! The writer emits `page,op` with a header line, which the reader recognises when no
//! mapping is given (see [`CsvOptions::mapped`]).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::ops::Range;

use super::text::parse_number;
use super::{ReaderOptions, TraceSource, TraceWriter, CHUNK};
use crate::access::Access;
use crate::error::{Error, Result};

/// A column, by header name or by 0-based index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Column {
    Index(usize),
    Name(String),
}

impl Column {
    /// `"3"` → the third column (1-based, `Index(2)`); anything else is a header name.
    pub fn parse(key: &str, s: &str) -> Result<Column> {
        let s = s.trim();
        if s.is_empty() {
            return Err(Error::config(key, "empty column"));
        }
        if s.bytes().all(|b| b.is_ascii_digit()) {
            let n: usize = s
                .parse()
                .map_err(|_| Error::config(key, format!("column {s} is too large")))?;
            if n == 0 {
                return Err(Error::config(key, "columns are numbered from 1"));
            }
            return Ok(Column::Index(n - 1));
        }
        Ok(Column::Name(s.to_string()))
    }
}

impl std::fmt::Display for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Column::Index(i) => write!(f, "{}", i + 1),
            Column::Name(n) => write!(f, "'{n}'"),
        }
    }
}

/// Whether the first line is a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsvHeader {
    /// A header when a column is named, or when the first line's page field is not a number.
    Auto,
    Present,
    Absent,
}

/// Column mapping of a CSV trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvOptions {
    /// The column holding the page number (or address). Default: the first.
    pub column: Column,
    /// The column holding the operation; `None` = every access is a read.
    pub op: Option<Column>,
    pub header: CsvHeader,
    pub delimiter: u8,
    /// Whether `column` or `op` was given. Without a mapping, a header naming its columns as
    /// vmemsim writes them (`page,op`) or with common names ([`PAGE_NAMES`], [`OP_NAMES`])
    /// is followed; any other header with several columns gets a note on stderr saying which
    /// column was used.
    pub mapped: bool,
}

/// Header names taken as the page column when no mapping is given (any case).
pub const PAGE_NAMES: &[&str] = &["page", "vpn", "page_number", "obj_id", "obj", "object"];
/// Header names taken as the operation column when no mapping is given (any case).
pub const OP_NAMES: &[&str] = &["op", "operation", "rw", "type"];

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            column: Column::Index(0),
            op: None,
            header: CsvHeader::Auto,
            delimiter: b',',
            mapped: false,
        }
    }
}

impl CsvOptions {
    /// Parse `key=value` pairs separated by commas: `column` (or `page`, `address`: the page
    /// column, a name or 1-based index), `op` (the operation column), `header`
    /// (`auto`/`yes`/`no`), `delimiter` (`comma`, `tab`, `semicolon`, `space`, `pipe`, or one
    /// character other than a comma). Unknown keys are errors naming the key (as `csv.KEY`).
    /// Example: `column=addr,op=type,header=yes,delimiter=tab`.
    pub fn parse(spec: &str) -> Result<CsvOptions> {
        let mut o = CsvOptions::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| Error::config(format!("csv.{part}"), "expected key=value"))?;
            let (k, v) = (k.trim(), v.trim());
            let key = format!("csv.{k}");
            match k {
                "column" | "page" | "address" | "col" => {
                    o.column = Column::parse(&key, v)?;
                    o.mapped = true;
                }
                "op" => {
                    o.op = Some(Column::parse(&key, v)?);
                    o.mapped = true;
                }
                "header" => {
                    o.header = match v.to_ascii_lowercase().as_str() {
                        "auto" => CsvHeader::Auto,
                        "yes" | "true" | "1" | "on" => CsvHeader::Present,
                        "no" | "false" | "0" | "off" => CsvHeader::Absent,
                        _ => {
                            return Err(Error::config(
                                key,
                                format!("expected auto, yes or no, got '{v}'"),
                            ))
                        }
                    }
                }
                "delimiter" | "delim" | "sep" => {
                    o.delimiter = match v.to_ascii_lowercase().as_str() {
                        "comma" => b',',
                        "tab" | "\\t" => b'\t',
                        "semicolon" => b';',
                        "space" => b' ',
                        "pipe" => b'|',
                        _ if v.len() == 1 && v.as_bytes()[0] != b'"' => v.as_bytes()[0],
                        _ => {
                            return Err(Error::config(
                                key,
                                format!(
                                    "'{v}' is not one character or comma/tab/semicolon/space/pipe"
                                ),
                            ))
                        }
                    }
                }
                _ => {
                    return Err(Error::config(
                        key,
                        "unknown CSV option (valid: column, op, header, delimiter)",
                    ))
                }
            }
        }
        Ok(o)
    }
}

/// Split `line` into fields, as byte ranges of `line` (quoted fields without their quotes).
/// Err = message.
fn split_fields(
    line: &str,
    delim: u8,
    out: &mut Vec<Range<usize>>,
) -> std::result::Result<(), String> {
    out.clear();
    let b = line.as_bytes();
    let blank = |c: u8| c == b' ' && delim != b' ';
    let mut i = 0;
    loop {
        while i < b.len() && blank(b[i]) {
            i += 1;
        }
        if i < b.len() && b[i] == b'"' {
            let start = i + 1;
            let mut j = start;
            loop {
                if j >= b.len() {
                    return Err(format!("field {} has an unterminated quote", out.len() + 1));
                }
                if b[j] == b'"' {
                    if j + 1 < b.len() && b[j + 1] == b'"' {
                        j += 2;
                        continue;
                    }
                    break;
                }
                j += 1;
            }
            out.push(start..j);
            i = j + 1;
            while i < b.len() && blank(b[i]) {
                i += 1;
            }
            if i >= b.len() {
                return Ok(());
            }
            if b[i] != delim {
                return Err(format!(
                    "field {} has text after its closing quote",
                    out.len()
                ));
            }
            i += 1;
        } else {
            let start = i;
            while i < b.len() && b[i] != delim {
                i += 1;
            }
            let mut end = i;
            while end > start && blank(b[end - 1]) {
                end -= 1;
            }
            out.push(start..end);
            if i >= b.len() {
                return Ok(());
            }
            i += 1;
        }
    }
}

fn parse_op(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "r" | "read" | "get" | "load" | "0" => Some(false),
        "w" | "write" | "set" | "put" | "store" | "update" | "1" => Some(true),
        _ => None,
    }
}

/// Streams a CSV trace.
pub struct CsvReader {
    path: String,
    rd: Box<dyn BufRead + Send>,
    line_no: u64,
    line: String,
    /// The current line without its surrounding blanks.
    text: Range<usize>,
    fields: Vec<Range<usize>>,
    /// The first line was data, read while looking for the header; parse it first.
    pending: bool,
    col: usize,
    op: Option<usize>,
    delim: u8,
    shift: u32,
}

impl CsvReader {
    pub fn open(path: &str, opts: &ReaderOptions) -> Result<Self> {
        let f = File::open(path).map_err(|e| Error::io(path, &e))?;
        Self::from_reader(path, Box::new(BufReader::with_capacity(1 << 20, f)), opts)
    }

    /// Read CSV from any buffered stream; `path` names it in messages. The header (if any)
    /// is read here, so a missing named column is reported before any access is.
    pub fn from_reader(
        path: &str,
        rd: Box<dyn BufRead + Send>,
        opts: &ReaderOptions,
    ) -> Result<Self> {
        let shift = if opts.addresses {
            opts.page_shift()?
        } else {
            0
        };
        let c = &opts.csv;
        let mut r = CsvReader {
            path: path.to_string(),
            rd,
            line_no: 0,
            line: String::new(),
            text: 0..0,
            fields: Vec::new(),
            pending: false,
            col: 0,
            op: None,
            delim: c.delimiter,
            shift,
        };
        let named = matches!(c.column, Column::Name(_)) || matches!(c.op, Some(Column::Name(_)));
        if c.header == CsvHeader::Absent && named {
            return Err(Error::config(
                "csv.header",
                "columns are named but the trace has no header; name them by number",
            ));
        }
        if !r.next_line()? {
            return Ok(r); // empty trace
        }
        let line = &r.line[r.text.clone()];
        let mut ranges = Vec::new();
        split_fields(line, r.delim, &mut ranges)
            .map_err(|m| Error::trace(path, format!("line {}", r.line_no), m))?;
        let fields: Vec<&str> = ranges.iter().map(|x| &line[x.clone()]).collect();
        let is_header = match c.header {
            CsvHeader::Present => true,
            CsvHeader::Absent => false,
            CsvHeader::Auto => {
                named
                    || match &c.column {
                        Column::Index(i) => match fields.get(*i) {
                            Some(f) => parse_number(f).is_none(),
                            None => true,
                        },
                        Column::Name(_) => true,
                    }
            }
        };
        let resolve = |col: &Column, role: &str| -> Result<usize> {
            match col {
                Column::Index(i) => Ok(*i),
                Column::Name(n) => fields
                    .iter()
                    .position(|f| f == n)
                    .or_else(|| fields.iter().position(|f| f.eq_ignore_ascii_case(n)))
                    .ok_or_else(|| {
                        Error::trace(
                            path,
                            format!("line {}", r.line_no),
                            format!(
                                "{role} column '{n}' is not in the header (columns: {})",
                                fields.join(", ")
                            ),
                        )
                    }),
            }
        };
        let mut col = resolve(&c.column, "page")?;
        let mut op = c.op.as_ref().map(|o| resolve(o, "op")).transpose()?;
        if !c.mapped && is_header {
            let find = |names: &[&str]| {
                fields
                    .iter()
                    .position(|f| names.iter().any(|n| f.trim().eq_ignore_ascii_case(n)))
            };
            op = find(OP_NAMES);
            match find(PAGE_NAMES) {
                Some(p) => col = p,
                None if fields.len() > 1 => eprintln!(
                    "vmemsim: note: {path}: no CSV mapping given and no page column recognised \
                     in the header ({}): pages from column 1 '{}', {}; give the mapping \
                     explicitly (--csv column=NAME,op=NAME)",
                    fields.join(", "),
                    fields[0],
                    match op {
                        Some(o) => format!("operations from column {} '{}'", o + 1, fields[o]),
                        None => "every access a read".to_string(),
                    }
                ),
                None => {}
            }
        }
        r.col = col;
        r.op = op;
        r.pending = !is_header;
        Ok(r)
    }

    /// Read the next line that is not blank or a comment into `line`/`text`; false at the end.
    fn next_line(&mut self) -> Result<bool> {
        loop {
            self.line.clear();
            let n = self.rd.read_line(&mut self.line).map_err(|e| {
                Error::trace(
                    &self.path,
                    format!("line {}", self.line_no + 1),
                    e.to_string(),
                )
            })?;
            if n == 0 {
                return Ok(false);
            }
            self.line_no += 1;
            let t = self.line.trim();
            if !t.is_empty() && !t.starts_with('#') {
                let start = t.as_ptr() as usize - self.line.as_ptr() as usize;
                self.text = start..start + t.len();
                return Ok(true);
            }
        }
    }

    /// Parse the current line.
    fn parse_row(&mut self) -> Result<Access> {
        let at = || format!("line {}", self.line_no);
        let line = &self.line[self.text.clone()];
        let mut fields = std::mem::take(&mut self.fields);
        let r = (|| {
            split_fields(line, self.delim, &mut fields)
                .map_err(|m| Error::trace(&self.path, at(), m))?;
            let get = |i: usize, role: &str| {
                fields.get(i).map(|x| &line[x.clone()]).ok_or_else(|| {
                    Error::trace(
                        &self.path,
                        at(),
                        format!(
                            "the {role} column ({}) is missing: the row has {} fields",
                            i + 1,
                            fields.len()
                        ),
                    )
                })
            };
            let tok = get(self.col, "page")?;
            let v = parse_number(tok).ok_or_else(|| {
                Error::trace(
                    &self.path,
                    at(),
                    format!(
                        "column {}: '{tok}' is not a decimal or 0x-hex number",
                        self.col + 1
                    ),
                )
            })?;
            let write = match self.op {
                None => false,
                Some(i) => {
                    let op = get(i, "op")?;
                    parse_op(op).ok_or_else(|| {
                        Error::trace(
                            &self.path,
                            at(),
                            format!("column {}: '{op}' is not a read or write (R, W, read, write, get, set, 0, 1)", i + 1),
                        )
                    })?
                }
            };
            Ok(Access {
                page: v >> self.shift,
                write,
                gup: false,
            })
        })();
        self.fields = fields;
        r
    }
}

impl TraceSource for CsvReader {
    fn next_chunk(&mut self, buf: &mut Vec<Access>) -> Result<()> {
        buf.clear();
        if std::mem::take(&mut self.pending) {
            buf.push(self.parse_row()?);
        }
        while buf.len() < CHUNK && self.next_line()? {
            buf.push(self.parse_row()?);
        }
        Ok(())
    }
    fn name(&self) -> String {
        self.path.clone()
    }
}

/// Writes `page,op` rows under a header.
pub struct CsvWriter {
    path: String,
    out: Option<BufWriter<File>>,
    records: u64,
}

impl CsvWriter {
    pub fn create(path: &str) -> Result<Self> {
        let f = File::create(path).map_err(|e| Error::io(path, &e))?;
        let mut out = BufWriter::with_capacity(1 << 20, f);
        out.write_all(b"page,op\n")
            .map_err(|e| Error::io(path, &e))?;
        Ok(CsvWriter {
            path: path.to_string(),
            out: Some(out),
            records: 0,
        })
    }
}

impl TraceWriter for CsvWriter {
    fn write(&mut self, accesses: &[Access]) -> Result<()> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::config("writer", "trace writer already finished"))?;
        for a in accesses {
            writeln!(out, "{},{}", a.page, if a.write { 'W' } else { 'R' })
                .map_err(|e| Error::io(&self.path, &e))?;
        }
        self.records += accesses.len() as u64;
        Ok(())
    }
    fn finish(&mut self) -> Result<u64> {
        let mut out = self
            .out
            .take()
            .ok_or_else(|| Error::config("writer", "trace writer already finished"))?;
        out.flush().map_err(|e| Error::io(&self.path, &e))?;
        Ok(self.records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::collect;

    fn read(s: &str, csv: &str) -> Result<Vec<Access>> {
        let opts = ReaderOptions {
            csv: CsvOptions::parse(csv)?,
            ..Default::default()
        };
        let mut r = CsvReader::from_reader(
            "t.csv",
            Box::new(std::io::Cursor::new(s.to_string())),
            &opts,
        )?;
        collect(&mut r)
    }

    #[test]
    fn its_own_header_is_recognised_without_a_mapping() {
        // `trace convert` writes `page,op`; read back with no --csv mapping, the writes stay
        // writes (they were all read as reads before, and swap-outs dropped accordingly).
        let w = |p: u64| Access {
            page: p,
            write: true,
            gup: false,
        };
        let r = |p: u64| Access {
            page: p,
            write: false,
            gup: false,
        };
        assert_eq!(read("page,op\n5,W\n6,R\n", "").unwrap(), vec![w(5), r(6)]);
        // Common names in other orders and cases are followed too.
        assert_eq!(
            read("Type,Time,obj_id\nset,1,7\nget,2,8\n", "").unwrap(),
            vec![w(7), r(8)]
        );
        // Unrecognised names: the first column, every access a read (and a note on stderr).
        assert_eq!(read("a,b\n3,W\n", "").unwrap(), vec![r(3)]);
        // A mapping given explicitly wins over recognition.
        assert_eq!(read("page,op\n5,W\n", "column=1").unwrap(), vec![r(5)]);
    }

    #[test]
    fn header_names_and_indexes() {
        let s = "time,addr,type\n1,0x10,W\n2,17,r\n\n# comment\n3,\"5\",get\n";
        let want = vec![Access::write(16), Access::read(17), Access::read(5)];
        assert_eq!(read(s, "column=addr,op=type").unwrap(), want);
        // Same by 1-based index, header detected because 'addr' is not a number.
        assert_eq!(read(s, "column=2,op=3").unwrap(), want);
        // Without a header, by index.
        assert_eq!(
            read("1;0x10;W\n2;17;R\n", "page=2,op=3,delimiter=semicolon").unwrap(),
            vec![Access::write(16), Access::read(17)]
        );
    }

    #[test]
    fn addresses_shift_by_page_size() {
        let opts = ReaderOptions {
            addresses: true,
            page_size: 4096,
            csv: CsvOptions::parse("column=2").unwrap(),
        };
        let mut r = CsvReader::from_reader(
            "t.csv",
            Box::new(std::io::Cursor::new(
                "a,b\n0,4095\n0,4096\n0,0x7fff0000\n".to_string(),
            )),
            &opts,
        )
        .unwrap();
        assert_eq!(
            collect(&mut r).unwrap(),
            vec![Access::read(0), Access::read(1), Access::read(0x7fff0)]
        );
    }

    #[test]
    fn missing_mapped_column() {
        assert_eq!(
            read("time,obj\n1,2\n", "column=addr")
                .unwrap_err()
                .to_string(),
            "t.csv: line 1: page column 'addr' is not in the header (columns: time, obj)"
        );
        assert_eq!(
            read("1,2,R\n3,4\n", "column=2,op=3")
                .unwrap_err()
                .to_string(),
            "t.csv: line 2: the op column (3) is missing: the row has 2 fields"
        );
        assert_eq!(
            read("a,b\n1\n", "column=2,header=yes")
                .unwrap_err()
                .to_string(),
            "t.csv: line 2: the page column (2) is missing: the row has 1 fields"
        );
    }

    #[test]
    fn bad_values_and_options() {
        assert_eq!(
            read("1,x1\n", "column=2,header=no")
                .unwrap_err()
                .to_string(),
            "t.csv: line 1: column 2: 'x1' is not a decimal or 0x-hex number"
        );
        assert_eq!(
            read("1,2,delete\n", "column=2,op=3").unwrap_err().to_string(),
            "t.csv: line 1: column 3: 'delete' is not a read or write (R, W, read, write, get, set, 0, 1)"
        );
        assert_eq!(
            read("\"1,2\n", "").unwrap_err().to_string(),
            "t.csv: line 1: field 1 has an unterminated quote"
        );
        assert_eq!(
            CsvOptions::parse("colum=2").unwrap_err().to_string(),
            "csv.colum: unknown CSV option (valid: column, op, header, delimiter)"
        );
        assert_eq!(
            CsvOptions::parse("op=0").unwrap_err().to_string(),
            "csv.op: columns are numbered from 1"
        );
        assert_eq!(
            read("1,2\n", "column=b,header=no").unwrap_err().to_string(),
            "csv.header: columns are named but the trace has no header; name them by number"
        );
    }

    #[test]
    fn quoted_fields() {
        let fields = |line: &str, d: u8| -> Vec<String> {
            let mut f = Vec::new();
            split_fields(line, d, &mut f).unwrap();
            f.into_iter().map(|r| line[r].to_string()).collect()
        };
        assert_eq!(
            fields(r#""a ""q"" b", 7 ,"8""#, b','),
            vec![r#"a ""q"" b"#, "7", "8"]
        );
        assert_eq!(fields("1\t\t3", b'\t'), vec!["1", "", "3"]);
    }
}

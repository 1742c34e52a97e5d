//! Plain text traces: one access per line, `PAGE [R|W]`, the page as decimal or 0x-hex.
//! Blank lines and lines starting with `#` are skipped. With `addresses = true`, values are
//! byte addresses and are shifted by the page size.
//!
//! [`TextWriter`] writes the same format, the trace metadata in a leading `# vmemsim trace:`
//! comment (JSON) that the reader skips.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};

use super::{TraceMeta, TraceSource, TraceWriter, CHUNK};
use crate::access::Access;
use crate::error::{Error, Result};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextOptions {
    /// Values are byte addresses (divided by `page_size`), not page numbers.
    pub addresses: bool,
    pub page_size: u64,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            addresses: false,
            page_size: 4096,
        }
    }
}

pub struct TextReader {
    path: String,
    rd: Box<dyn BufRead + Send>,
    line_no: u64,
    line: String,
    shift: u32,
    opts: TextOptions,
}

impl TextReader {
    pub fn open(path: &str, opts: TextOptions) -> Result<Self> {
        let f = File::open(path).map_err(|e| Error::io(path, &e))?;
        Self::from_reader(path, Box::new(BufReader::with_capacity(1 << 20, f)), opts)
    }

    pub fn from_reader(path: &str, rd: Box<dyn BufRead + Send>, opts: TextOptions) -> Result<Self> {
        let shift = super::page_shift(opts.page_size)?;
        Ok(TextReader {
            path: path.to_string(),
            rd,
            line_no: 0,
            line: String::new(),
            shift,
            opts,
        })
    }

    fn parse_line(&self, s: &str) -> Result<Option<Access>> {
        let s = s.trim();
        if s.is_empty() || s.starts_with('#') {
            return Ok(None);
        }
        let mut it = s
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|t| !t.is_empty());
        let tok = it.next().unwrap_or("");
        let v = parse_number(tok).ok_or_else(|| {
            Error::trace(
                &self.path,
                format!("line {}", self.line_no),
                format!("'{tok}' is not a decimal or 0x-hex number"),
            )
        })?;
        let write = match it.next() {
            None => false,
            Some(op) => match op {
                "R" | "r" | "read" | "READ" | "0" => false,
                "W" | "w" | "write" | "WRITE" | "1" => true,
                _ => {
                    return Err(Error::trace(
                        &self.path,
                        format!("line {}", self.line_no),
                        format!("'{op}' is not R or W"),
                    ))
                }
            },
        };
        let page = if self.opts.addresses {
            v >> self.shift
        } else {
            v
        };
        Ok(Some(Access {
            page,
            write,
            gup: false,
        }))
    }
}

/// Parse a decimal or 0x-prefixed hexadecimal u64.
pub fn parse_number(tok: &str) -> Option<u64> {
    if let Some(h) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        tok.parse().ok()
    }
}

impl TraceSource for TextReader {
    fn next_chunk(&mut self, buf: &mut Vec<Access>) -> Result<()> {
        buf.clear();
        while buf.len() < CHUNK {
            self.line.clear();
            let n = self.rd.read_line(&mut self.line).map_err(|e| {
                Error::trace(
                    &self.path,
                    format!("line {}", self.line_no + 1),
                    e.to_string(),
                )
            })?;
            if n == 0 {
                break;
            }
            self.line_no += 1;
            let line = std::mem::take(&mut self.line);
            let r = self.parse_line(&line);
            self.line = line;
            if let Some(a) = r? {
                buf.push(a);
            }
        }
        Ok(())
    }
    fn name(&self) -> String {
        self.path.clone()
    }
}

/// Writes `PAGE` or `PAGE W` lines (decimal).
pub struct TextWriter {
    path: String,
    out: Option<BufWriter<File>>,
    records: u64,
}

impl TextWriter {
    pub fn create(path: &str, meta: &TraceMeta) -> Result<Self> {
        let f = File::create(path).map_err(|e| Error::io(path, &e))?;
        let mut out = BufWriter::with_capacity(1 << 20, f);
        let json = serde_json::to_string(meta)
            .map_err(|e| Error::config("meta", format!("cannot encode trace metadata: {e}")))?;
        writeln!(out, "# vmemsim trace: {json}").map_err(|e| Error::io(path, &e))?;
        Ok(TextWriter {
            path: path.to_string(),
            out: Some(out),
            records: 0,
        })
    }
}

impl TraceWriter for TextWriter {
    fn write(&mut self, accesses: &[Access]) -> Result<()> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| Error::config("writer", "trace writer already finished"))?;
        for a in accesses {
            if a.write {
                writeln!(out, "{} W", a.page)
            } else {
                writeln!(out, "{}", a.page)
            }
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

    fn read(s: &str) -> Result<Vec<Access>> {
        let mut r = TextReader::from_reader(
            "t.txt",
            Box::new(std::io::Cursor::new(s.to_string())),
            TextOptions::default(),
        )?;
        crate::trace::collect(&mut r)
    }

    #[test]
    fn parses_dec_hex_rw() {
        let v = read("# c\n1\n0x10 W\n\n7 r\n").unwrap();
        assert_eq!(v, vec![Access::read(1), Access::write(16), Access::read(7)]);
    }

    #[test]
    fn addresses_shift_by_page_size() {
        let mut r = TextReader::from_reader(
            "t.txt",
            Box::new(std::io::Cursor::new("4095\n0x1000 W\n8192,r\n".to_string())),
            TextOptions {
                addresses: true,
                page_size: 4096,
            },
        )
        .unwrap();
        let v = crate::trace::collect(&mut r).unwrap();
        assert_eq!(v, vec![Access::read(0), Access::write(1), Access::read(2)]);
        let e = TextReader::from_reader(
            "t.txt",
            Box::new(std::io::Cursor::new(String::new())),
            TextOptions {
                addresses: true,
                page_size: 1000,
            },
        )
        .err()
        .unwrap();
        assert_eq!(
            e.to_string(),
            "page_size: 1000 is not a power of two of at least 2"
        );
    }

    #[test]
    fn bad_line_names_line() {
        let e = read("1\n2\nabc\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "t.txt: line 3: 'abc' is not a decimal or 0x-hex number"
        );
        let e = read("1 X\n").unwrap_err();
        assert_eq!(e.to_string(), "t.txt: line 1: 'X' is not R or W");
    }
}

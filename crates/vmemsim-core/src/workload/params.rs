//! `key=value` parameters of a workload spec, checked against the kind's list of keys.
//!
//! Errors name the key as `kind.key`, as [`crate::generate`] does: unknown keys (with the
//! valid ones listed), keys given twice, values that do not parse.

use crate::error::{Error, Result};

pub(crate) struct Params {
    kind: String,
    kv: Vec<(String, String)>,
}

/// Split `text` at commas that are not inside parentheses.
pub(crate) fn split_top(text: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut from) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&text[from..i]);
                from = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&text[from..]);
    out
}

impl Params {
    /// Parse `k=v,k=v` (empty text = no keys) and check each key against `allowed`.
    pub(crate) fn parse(kind: &str, text: &str, allowed: &[&str]) -> Result<Params> {
        let mut kv: Vec<(String, String)> = Vec::new();
        if !text.trim().is_empty() {
            for item in split_top(text, ',') {
                let Some((k, v)) = item.split_once('=') else {
                    return Err(Error::config(
                        kind,
                        format!("'{}' is not key=value", item.trim()),
                    ));
                };
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                let key = format!("{kind}.{k}");
                if !allowed.contains(&k.as_str()) {
                    return Err(Error::config(
                        key,
                        format!("unknown key for {kind} (valid: {})", allowed.join(", ")),
                    ));
                }
                if kv.iter().any(|(seen, _)| *seen == k) {
                    return Err(Error::config(key, "given twice"));
                }
                if v.is_empty() {
                    return Err(Error::config(key, "has no value"));
                }
                kv.push((k, v.to_string()));
            }
        }
        Ok(Params {
            kind: kind.to_string(),
            kv,
        })
    }

    pub(crate) fn key(&self, k: &str) -> String {
        format!("{}.{k}", self.kind)
    }

    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.kv
            .iter()
            .find(|(x, _)| x == k)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn has(&self, k: &str) -> bool {
        self.get(k).is_some()
    }

    /// Error naming `k`.
    pub(crate) fn err(&self, k: &str, msg: impl Into<String>) -> Error {
        Error::config(self.key(k), msg)
    }

    /// A whole number in `[min, max]`.
    pub(crate) fn u64_in(&self, k: &str, default: u64, min: u64, max: u64) -> Result<u64> {
        let Some(v) = self.get(k) else {
            return Ok(default);
        };
        let n = parse_u64(v).ok_or_else(|| self.err(k, format!("'{v}' is not a whole number")))?;
        if n < min || n > max {
            return Err(self.err(k, format!("{n} is outside [{min}, {max}]")));
        }
        Ok(n)
    }

    /// A real number in `[min, max]`.
    pub(crate) fn f64_in(&self, k: &str, default: f64, min: f64, max: f64) -> Result<f64> {
        let Some(v) = self.get(k) else {
            return Ok(default);
        };
        let x = parse_f64(v).ok_or_else(|| self.err(k, format!("'{v}' is not a number")))?;
        if !(x >= min && x <= max) {
            return Err(self.err(k, format!("{v} is outside [{min}, {max}]")));
        }
        Ok(x)
    }

    /// A size in bytes: a number with an optional `KiB`, `MiB`, `GiB` or `TiB` suffix.
    pub(crate) fn size(&self, k: &str) -> Result<Option<u64>> {
        let Some(v) = self.get(k) else {
            return Ok(None);
        };
        parse_size(v).map(Some).ok_or_else(|| {
            self.err(
                k,
                format!("'{v}' is not a size (bytes, or a number with KiB, MiB, GiB or TiB)"),
            )
        })
    }

    /// One of `options`; returns its index.
    pub(crate) fn choice(&self, k: &str, default: usize, options: &[&str]) -> Result<usize> {
        let Some(v) = self.get(k) else {
            return Ok(default);
        };
        let v = v.to_ascii_lowercase();
        options
            .iter()
            .position(|o| *o == v)
            .ok_or_else(|| self.err(k, format!("'{v}' is not one of {}", options.join(", "))))
    }

    /// The run's seed unless the spec gives `seed`.
    pub(crate) fn seed(&self, run_seed: u64) -> Result<u64> {
        self.u64_in("seed", run_seed, 0, u64::MAX)
    }
}

pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    let t = s.replace('_', "");
    if let Ok(v) = t.parse::<u64>() {
        return Some(v);
    }
    let f: f64 = t.parse().ok()?;
    (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= 9.007_199_254_740_992e15)
        .then_some(f as u64)
}

pub(crate) fn parse_f64(s: &str) -> Option<f64> {
    s.replace('_', "")
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
}

pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let t = s.trim();
    let (num, mult) = [
        ("KiB", 1u64 << 10),
        ("MiB", 1 << 20),
        ("GiB", 1 << 30),
        ("TiB", 1 << 40),
    ]
    .iter()
    .find_map(|(suf, m)| t.strip_suffix(suf).map(|n| (n.trim(), *m)))
    .unwrap_or((t, 1));
    if let Some(n) = parse_u64(num) {
        return n.checked_mul(mult);
    }
    let x = parse_f64(num)?;
    let b = x * mult as f64;
    (x >= 0.0 && b < 1.8e19 && b.fract() == 0.0).then_some(b as u64)
}

/// Bytes as the shortest exact `KiB`/`MiB`/`GiB` string (for canonical specs).
pub(crate) fn fmt_size(bytes: u64) -> String {
    for (suf, m) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= m && bytes / m * m == bytes {
            return format!("{}{suf}", bytes / m);
        }
    }
    bytes.to_string()
}

//! Errors are values: every bad input names the file and the offset/line, or the key.
use std::fmt;

/// What went wrong ([`Error::kind`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// A trace could not be read: `path` and `location` ("line 12", "byte 4096", "chunk 3") name where.
    Trace {
        path: String,
        location: String,
        msg: String,
    },
    /// A configuration value is wrong: `key` names it.
    Config { key: String, msg: String },
    /// An operating-system I/O error on `path`.
    Io { path: String, msg: String },
}

/// An error: its [`ErrorKind`] boxed, so that a `Result<()>` is one machine word. The
/// simulator's hot paths (an access through the TLB, a fault, a policy's shrink) return
/// `Result`s through several calls; with the 72-byte kind inline, every level copied it.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorKind>);

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl From<ErrorKind> for Error {
    fn from(k: ErrorKind) -> Self {
        Error(Box::new(k))
    }
}

impl Error {
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }
    pub fn into_kind(self) -> ErrorKind {
        *self.0
    }
    pub fn trace(
        path: impl Into<String>,
        location: impl Into<String>,
        msg: impl Into<String>,
    ) -> Self {
        ErrorKind::Trace {
            path: path.into(),
            location: location.into(),
            msg: msg.into(),
        }
        .into()
    }
    pub fn config(key: impl Into<String>, msg: impl Into<String>) -> Self {
        ErrorKind::Config {
            key: key.into(),
            msg: msg.into(),
        }
        .into()
    }
    pub fn io(path: impl Into<String>, err: &std::io::Error) -> Self {
        ErrorKind::Io {
            path: path.into(),
            msg: err.to_string(),
        }
        .into()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            ErrorKind::Trace {
                path,
                location,
                msg,
            } if location.is_empty() => write!(f, "{path}: {msg}"),
            ErrorKind::Trace {
                path,
                location,
                msg,
            } => write!(f, "{path}: {location}: {msg}"),
            ErrorKind::Config { key, msg } => write!(f, "{key}: {msg}"),
            ErrorKind::Io { path, msg } => write!(f, "{path}: {msg}"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// The one "did you mean" of vmemsim's messages (the CLI, Python and TOML front ends call
/// this too): `" (did you mean 'lru'?)"` for the option nearest to `word` by optimal string
/// alignment distance (edits, adjacent swaps counting one), ignoring case, when that
/// distance is at most a third of `word`'s length (at least 1); `""` otherwise. Ties go to
/// the earlier option.
pub fn did_you_mean<S: AsRef<str>>(word: &str, options: &[S]) -> String {
    let w: Vec<char> = word.to_lowercase().chars().collect();
    let limit = (w.len() / 3).max(1);
    let mut best: Option<(usize, &str)> = None;
    for o in options {
        let o = o.as_ref();
        let c: Vec<char> = o.to_lowercase().chars().collect();
        let d = osa_distance(&w, &c);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, o));
        }
    }
    match best {
        Some((d, o)) if d > 0 || o != word => format!(" (did you mean '{o}'?)"),
        _ => String::new(),
    }
}

fn osa_distance(a: &[char], b: &[char]) -> usize {
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[n][m]
}

#[cfg(test)]
mod hint_tests {
    use super::did_you_mean;

    #[test]
    fn did_you_mean_picks_the_nearest_within_a_third() {
        let pol = ["fifo", "lru", "clock", "clock-lru", "mglru"];
        assert_eq!(did_you_mean("lur", &pol), " (did you mean 'lru'?)"); // one swap
        assert_eq!(did_you_mean("LRU", &pol), " (did you mean 'lru'?)"); // case
        assert_eq!(did_you_mean("clok", &pol), " (did you mean 'clock'?)");
        assert_eq!(did_you_mean("mglr", &pol), " (did you mean 'mglru'?)");
        assert_eq!(did_you_mean("xyz", &pol), ""); // 3 edits from anything, limit 1
        assert_eq!(
            did_you_mean("--polcy", &["--policy", "--frames"]),
            " (did you mean '--policy'?)"
        );
        assert_eq!(did_you_mean("lru", &pol), ""); // an exact name needs no hint
    }
}

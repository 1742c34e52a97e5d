//! Errors are values: every bad input names the file and the offset/line, or the key.
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
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

impl Error {
    pub fn trace(
        path: impl Into<String>,
        location: impl Into<String>,
        msg: impl Into<String>,
    ) -> Self {
        Error::Trace {
            path: path.into(),
            location: location.into(),
            msg: msg.into(),
        }
    }
    pub fn config(key: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Config {
            key: key.into(),
            msg: msg.into(),
        }
    }
    pub fn io(path: impl Into<String>, err: &std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            msg: err.to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Trace {
                path,
                location,
                msg,
            } if location.is_empty() => write!(f, "{path}: {msg}"),
            Error::Trace {
                path,
                location,
                msg,
            } => write!(f, "{path}: {location}: {msg}"),
            Error::Config { key, msg } => write!(f, "{key}: {msg}"),
            Error::Io { path, msg } => write!(f, "{path}: {msg}"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

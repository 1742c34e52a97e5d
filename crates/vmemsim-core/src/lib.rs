//! vmemsim-core: a simulator of memory management on native and virtualized hosts.
//!
//! Layers (see `DESIGN.md` in the project's shared notes): traces and generators feed accesses
//! to an [`engine::Machine`], which models page tables, frames, swap and the fault / reclaim
//! loop of Linux, and asks a [`policy::Policy`] for its decisions. This crate is pure Rust;
//! the Python binding lives in `crates/vmemsim-py`.

pub mod access;
pub mod device;
pub mod engine;
pub mod error;
pub mod generate;
pub mod hint;
pub mod kvm;
pub mod mm;
pub mod mrc;
pub mod policy;
pub mod replay;
pub mod sched;
pub mod timed;
pub mod trace;
pub mod translate;
pub mod util;
pub mod vm;
pub mod watermarks;
pub mod workload;

pub use access::Access;
pub use error::{Error, ErrorKind, Result};

//! Workload models (the generators land from the `workload` branch; this file holds only the
//! interface the timing engine is written against, identical to that branch's).

use crate::device::ContentClass;
use crate::error::Result;

/// One step of a thread's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A burst of references to one 4 KiB page.
    Access { page: u64, write: bool },
    /// CPU work without new page references.
    Compute { ns: u32 },
    /// A key-value request starts ([`REQ_READ`], [`REQ_UPDATE`], [`REQ_INSERT`]).
    RequestBegin { kind: u8 },
    /// ...and ends: its latency is measured between the two.
    RequestEnd,
    /// Wait until every thread of the workload reaches it.
    Barrier,
}

/// Request kinds of `RequestBegin`.
pub const REQ_READ: u8 = 0;
pub const REQ_UPDATE: u8 = 1;
pub const REQ_INSERT: u8 = 2;

/// A seeded generator of per-thread op streams for one process.
pub trait Workload: Send {
    /// Canonical spec including the seed, to re-run.
    fn name(&self) -> String;
    fn threads(&self) -> usize;
    /// Distinct pages the workload touches (exact for the built-in models; an upper bound
    /// for `custom`).
    fn footprint_pages(&self) -> u64;
    /// How well a page's content compresses (for zram).
    fn content_class(&self, page: u64) -> ContentClass;
    /// Append thread `tid`'s next ops to `buf` (the caller clears it); appending nothing
    /// means the thread is finished. Ops come in chunks of a few thousand.
    fn next_ops(&mut self, tid: usize, buf: &mut Vec<Op>) -> Result<()>;
}

//! Pieces shared by the workload models: the address-space layout with a content class per
//! region, the op emitter that merges repeated references and batches compute time, and the
//! derivation of independent random streams from the run's seed.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::Op;
use crate::device::ContentClass;
use crate::util::mix64;

/// Bytes per page of the simulated address space.
pub const PAGE_BYTES: u64 = 4096;

/// A thread's `next_ops` returns once its buffer holds at least this many ops (a unit of work
/// in progress may add a few more).
pub const CHUNK_OPS: usize = 4096;

/// Compute time is accumulated and handed out as one `Compute` op, before the next access,
/// once it reaches this many nanoseconds (and always before a barrier, a request boundary
/// and the end of a stream), so short per-row costs do not double the number of ops while
/// their sum and their place between accesses are kept to within this quantum.
pub const COMPUTE_QUANTUM_NS: u64 = 1000;

/// Pages spanned by `bytes` bytes (rounded up).
pub fn pages_of(bytes: u64) -> u64 {
    bytes.div_ceil(PAGE_BYTES)
}

/// One named, page-aligned range of the address space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub name: String,
    pub start: u64,
    pub pages: u64,
    pub class: ContentClass,
}

/// Regions laid out one after the other from page 0 (a bump allocator of pages).
#[derive(Clone, Debug, Default)]
pub struct Layout {
    regions: Vec<Region>,
    next: u64,
}

impl Layout {
    /// An empty layout whose first region starts at `page`.
    pub fn at(page: u64) -> Layout {
        Layout {
            regions: Vec::new(),
            next: page,
        }
    }
    /// Allocate `bytes` (rounded up to whole pages); returns the first page.
    pub fn alloc(&mut self, name: impl Into<String>, bytes: u64, class: ContentClass) -> u64 {
        let start = self.next;
        let pages = pages_of(bytes);
        if pages > 0 {
            self.regions.push(Region {
                name: name.into(),
                start,
                pages,
                class,
            });
        }
        self.next += pages;
        start
    }
    /// First page not yet allocated.
    pub fn end(&self) -> u64 {
        self.next
    }
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }
    /// The class of the region holding `page`; `Zero` outside every region.
    pub fn class_of(&self, page: u64) -> ContentClass {
        let i = self.regions.partition_point(|r| r.start + r.pages <= page);
        match self.regions.get(i) {
            Some(r) if r.start <= page => r.class,
            _ => ContentClass::Zero,
        }
    }
}

/// Appends ops to a thread's buffer: merges a reference to the page just referenced (a read
/// after a read or a write of it, a write after a write: one burst on one page is one
/// `Access`), and batches compute time (see [`COMPUTE_QUANTUM_NS`]).
#[derive(Clone, Debug, Default)]
pub struct Emitter {
    last: Option<(u64, bool)>,
    pending_ns: u64,
}

impl Emitter {
    #[inline]
    pub fn access(&mut self, buf: &mut Vec<Op>, page: u64, write: bool) {
        if let Some((p, w)) = self.last {
            if p == page && (w || !write) {
                return;
            }
        }
        if self.pending_ns >= COMPUTE_QUANTUM_NS {
            self.flush(buf);
        }
        buf.push(Op::Access { page, write });
        self.last = Some((page, write));
    }
    /// Every page overlapping bytes `[addr, addr + len)`, in order.
    #[inline]
    pub fn range(&mut self, buf: &mut Vec<Op>, addr: u64, len: u64, write: bool) {
        if len == 0 {
            return;
        }
        for p in addr / PAGE_BYTES..=(addr + len - 1) / PAGE_BYTES {
            self.access(buf, p, write);
        }
    }
    #[inline]
    pub fn compute(&mut self, ns: u64) {
        self.pending_ns += ns;
    }
    /// End the current burst: the next reference is a new `Access` even if it is to the same
    /// page.
    pub fn split(&mut self) {
        self.last = None;
    }
    /// Hand out all pending compute time now.
    pub fn flush(&mut self, buf: &mut Vec<Op>) {
        while self.pending_ns > 0 {
            let ns = self.pending_ns.min(u32::MAX as u64);
            buf.push(Op::Compute { ns: ns as u32 });
            self.pending_ns -= ns;
        }
    }
    pub fn barrier(&mut self, buf: &mut Vec<Op>) {
        self.flush(buf);
        buf.push(Op::Barrier);
        self.last = None;
    }
    pub fn begin(&mut self, buf: &mut Vec<Op>, kind: u8) {
        self.flush(buf);
        buf.push(Op::RequestBegin { kind });
        self.last = None;
    }
    pub fn end(&mut self, buf: &mut Vec<Op>) {
        self.flush(buf);
        buf.push(Op::RequestEnd);
        self.last = None;
    }
}

/// Append an [`Op::File`] of thread 0's call `op` of `len` bytes at `offset` of file `file`
/// to `buf`, its record to `ios` (the op's slot is the record's index there): the models'
/// file I/O ([`super::Workload::file_io`]).
pub fn push_file_op(
    buf: &mut Vec<Op>,
    ios: &mut Vec<crate::trace::recorded::FileIo>,
    op: crate::trace::recorded::FileOp,
    file: u32,
    offset: u64,
    len: u64,
) {
    buf.push(Op::File {
        slot: ios.len() as u32,
    });
    ios.push(crate::trace::recorded::FileIo {
        op,
        tid: 0,
        stamp: 0,
        file,
        offset,
        len,
        addr: 0,
    });
}

/// An independent stream for (`seed`, `tag`, `index`): every thread, vertex or table draws
/// from its own, so no stream depends on the order in which others are consumed.
pub fn stream(seed: u64, tag: u64, index: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(derive(seed, tag, index))
}

/// A 64-bit value for (`seed`, `tag`, `index`) (SplitMix64 mixing).
#[inline]
pub fn derive(seed: u64, tag: u64, index: u64) -> u64 {
    mix64(seed ^ mix64(tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ mix64(index)))
}

/// `floor(k * frac)` — the rows among the first `k` that pass a filter of selectivity `frac`
/// when passing rows are spread evenly (row `k` passes iff this grows from `k` to `k + 1`).
/// Summed over any split of the rows it telescopes, so per-thread totals are known up front.
#[inline]
pub fn passed(k: u64, frac: f64) -> u64 {
    (k as f64 * frac).floor() as u64
}

/// `[lo, hi)` of part `i` when `n` items are split into `parts` nearly equal parts.
#[inline]
pub fn split(n: u64, parts: u64, i: u64) -> (u64, u64) {
    let lo = (n as u128 * i as u128 / parts as u128) as u64;
    let hi = (n as u128 * (i + 1) as u128 / parts as u128) as u64;
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_classes_and_alignment() {
        let mut l = Layout::default();
        assert_eq!(l.alloc("a", 1, ContentClass::Text), 0);
        assert_eq!(l.alloc("empty", 0, ContentClass::Random), 1);
        assert_eq!(l.alloc("b", 4097, ContentClass::Numeric), 1);
        assert_eq!(l.end(), 3);
        assert_eq!(l.class_of(0), ContentClass::Text);
        assert_eq!(l.class_of(1), ContentClass::Numeric);
        assert_eq!(l.class_of(2), ContentClass::Numeric);
        assert_eq!(l.class_of(3), ContentClass::Zero);
        assert_eq!(l.regions().len(), 2);
    }

    #[test]
    fn emitter_merges_and_batches() {
        let mut e = Emitter::default();
        let mut b = Vec::new();
        e.access(&mut b, 5, false);
        e.access(&mut b, 5, false); // same burst
        e.access(&mut b, 5, true); // a write after a read is new
        e.access(&mut b, 5, false); // a read after a write is not
        e.compute(600);
        e.access(&mut b, 6, false); // 600 ns < quantum: stays pending
        e.compute(600);
        e.access(&mut b, 7, false); // 1200 ns: handed out first
        e.range(&mut b, 4095 + 7 * 4096, 2, true); // spans pages 7 and 8
        e.barrier(&mut b);
        assert_eq!(
            b,
            vec![
                Op::Access {
                    page: 5,
                    write: false
                },
                Op::Access {
                    page: 5,
                    write: true
                },
                Op::Access {
                    page: 6,
                    write: false
                },
                Op::Compute { ns: 1200 },
                Op::Access {
                    page: 7,
                    write: false
                },
                Op::Access {
                    page: 7,
                    write: true
                },
                Op::Access {
                    page: 8,
                    write: true
                },
                Op::Barrier,
            ]
        );
    }

    #[test]
    fn passed_telescopes() {
        let f = 0.37;
        let direct = passed(1000, f);
        let mut sum = 0;
        for k in 0..1000 {
            sum += passed(k + 1, f) - passed(k, f);
        }
        assert_eq!(direct, 370);
        assert_eq!(sum, direct);
        assert_eq!(split(10, 3, 0), (0, 3));
        assert_eq!(split(10, 3, 2), (6, 10));
    }
}

//! Test helper for the by-hand examples in the policy modules: replay a short trace on a
//! machine that validates every invariant after every access, and report each access as a
//! hit (`H`) or a miss (`M`) so a test can compare with the sequence worked out in its comment.

use super::Policy;
use crate::engine::{Machine, MachineConfig};
use crate::mm::PTE_PRESENT;
use crate::Access;

/// `pages` replayed on `frames` frames: one `H`/`M` per access, and the machine afterwards.
pub(crate) fn replay<P: Policy>(p: P, frames: u32, pages: &[u64]) -> (String, Machine<P>) {
    let cfg = MachineConfig {
        check_invariants: true,
        ..MachineConfig::new(frames)
    };
    let mut m = Machine::new(&cfg, p).unwrap();
    let mut seq = String::with_capacity(pages.len());
    for &page in pages {
        let before = m.stats.faults;
        m.access(Access::read(page), u64::MAX);
        seq.push(if m.stats.faults > before { 'M' } else { 'H' });
    }
    (seq, m)
}

/// The pages of `pages` resident in `m`, sorted.
pub(crate) fn resident<P: Policy>(m: &Machine<P>, pages: &[u64]) -> Vec<u64> {
    let mut r: Vec<u64> = pages
        .iter()
        .copied()
        .filter(|&p| m.mm.pt.pte(p) & PTE_PRESENT != 0)
        .collect();
    r.sort_unstable();
    r.dedup();
    r
}

/// The frame holding resident page `page`.
pub(crate) fn frame_of<P: Policy>(m: &Machine<P>, page: u64) -> crate::mm::FrameId {
    let pte = m.mm.pt.pte(page);
    assert!(pte & PTE_PRESENT != 0, "page {page} is not resident");
    crate::mm::pte_frame(pte)
}

//! Address translation: radix page tables, TLBs, page-walk caches, a nested TLB and the
//! native, shadow and nested (two-dimensional) page walks of x86-64.
//!
//! What it models (seed 002, the AMD nested-paging talk at KVM Forum 2008, and the SDM):
//!
//! - [`radix::RadixTable`]: a 4- or 5-level x86-64 radix table with leaves at 4K, 2M or 1G.
//!   The same structure serves as a native process table, a guest table (its tables live in
//!   guest-physical memory), a host/nested (EPT/NPT) table and a shadow table. Walkers see a
//!   table only through the [`radix::Walkable`] trait, so another table model (e.g. the KVM
//!   shadow-page pool) can be walked too.
//! - [`tlb::Tlb`]: one TLB level, a set-associative array per page size, LRU within a set,
//!   entries tagged by PCID and VPID, with global entries.
//! - [`mmu::Mmu`]: one logical CPU's translation hardware: L1 dTLB, L1 iTLB, unified L2 TLB,
//!   page-walk caches for the upper levels (PML5/PML4/PDPT/PD entries, physically tagged as in
//!   AMD's PWC), a nested TLB (guest-physical → host-physical, skipping a nested walk), and a
//!   small set-associative cache of the page-table lines the walks read ([`cache::PtCache`]),
//!   so a walk costs cycles. Translation modes: native, shadow (a 1D walk of the shadow
//!   table under the guest's VPID) and TDP (the 2D walk: (g+1)(h+1)−1 references with the
//!   caches off). Flushes follow the SDM: MOV to CR3 with and without PCID, INVLPG, VM
//!   entry/exit with and without VPID, INVVPID/INVEPT-like flushes.
//!
//! Wiring (for the VM layer): one [`Mmu`] per logical CPU. Call [`Mmu::vm_entry`]`(vpid,
//! guest_pcid)` before a vCPU's accesses and [`Mmu::vm_exit`]`(host_pcid)` after; translate
//! each access with [`Tables::Tdp`] (guest and host tables), [`Tables::Shadow`] (the shadow
//! table) or [`Tables::Native`]; charge [`Translation::cycles`] (or [`Fault::cycles`]). On a
//! fault nothing is filled: serve it (guest #PF, EPT violation / NPF, shadow-page fault) and
//! translate again. Guest CR3 writes, INVLPG and KVM's remote flushes map to
//! [`Mmu::load_cr3`], [`Mmu::invlpg`], [`Mmu::flush_vpid`] / [`Mmu::flush_nested`]. Guest
//! page-table pages come from the `alloc` callback of [`RadixTable::map`] (guest frames) and
//! go back through [`RadixTable::unmap`]'s `freed`. Any table model can be walked by
//! implementing [`Walkable`].
//!
//! Left out (named where it matters): the hardware's shared 4K/2M array of the L2 TLB (we
//! keep one array per size), Intel's virtually-tagged paging-structure caches that skip levels
//! (we model AMD's physically tagged PWC, which saves latency but not the reference's
//! position in the walk), the dirty-bit assist on a write hit to a clean TLB entry,
//! speculative walks, and data-line pollution of the page-table cache unless the caller
//! feeds data lines through [`mmu::Mmu::data_access`].

pub mod cache;
pub mod mmu;
pub mod radix;
pub mod set_assoc;
pub mod tlb;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use mmu::{
    AccessKind, Fault, FaultKind, Mmu, Tables, TlbLevel, TranslateConfig, TranslateStats,
    Translation, WalkBreakdown, WalkGrid,
};
pub use radix::{RadixTable, WalkEnd, WalkPath, Walkable};
pub use set_assoc::Geometry;
pub use tlb::{Tlb, TlbGeometry};

/// A page size of x86-64 paging.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PageSize {
    #[serde(rename = "4k")]
    K4,
    #[serde(rename = "2m")]
    M2,
    #[serde(rename = "1g")]
    G1,
}

impl PageSize {
    pub const ALL: [PageSize; 3] = [PageSize::K4, PageSize::M2, PageSize::G1];

    #[inline]
    pub const fn shift(self) -> u32 {
        match self {
            PageSize::K4 => 12,
            PageSize::M2 => 21,
            PageSize::G1 => 30,
        }
    }
    #[inline]
    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }
    /// The page-table level whose entry maps a page of this size (1 = PTE, 2 = PDE, 3 = PDPTE).
    #[inline]
    pub const fn leaf_level(self) -> u8 {
        match self {
            PageSize::K4 => 1,
            PageSize::M2 => 2,
            PageSize::G1 => 3,
        }
    }
    /// The page size a leaf at `level` maps (levels 1..=3).
    #[inline]
    pub const fn from_level(level: u8) -> Option<PageSize> {
        match level {
            1 => Some(PageSize::K4),
            2 => Some(PageSize::M2),
            3 => Some(PageSize::G1),
            _ => None,
        }
    }
    #[inline]
    pub(crate) const fn index(self) -> usize {
        self as usize
    }
}

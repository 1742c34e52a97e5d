//! KVM's x86 shadow MMU: shadow pages, the shadow page fault, write protection of guest page
//! tables (emulation, write flooding, unsync/resync), and the capped pool of shadow pages with
//! its FIFO recycling (Linux 6.8, arch/x86/kvm/mmu/mmu.c and paging_tmpl.h) or the
//! second-chance clock of seed 000 (the `aaron-ang/kvm` fork's `kvm_mmu_clock_zap_pages`).
//!
//! The VM layer drives a [`ShadowMmu`] per VM:
//! - on a TLB miss, [`ShadowMmu::translate`] walks the shadow tables as the hardware would,
//!   setting accessed/dirty bits; a miss there is a shadow page fault:
//!   [`ShadowMmu::page_fault`] (`kvm_mmu_page_fault`), which may ask for emulation
//!   ([`ShadowMmu::emulate_write`]);
//! - guest stores to guest page-table pages go through [`ShadowMmu::guest_pt_write`];
//! - guest CR3 loads, INVLPG and TLB flushes: [`ShadowMmu::set_cr3`], [`ShadowMmu::invlpg`],
//!   [`ShadowMmu::flush_tlb_guest`];
//! - the host: [`ShadowMmu::unmap_gfn`] and [`ShadowMmu::age_gfn`] (MMU notifiers),
//!   [`ShadowMmu::shrink`] (the `mmu_shrinker`), [`ShadowMmu::change_mmu_pages`].
//!
//! Every operation records its work per KVM function in a [`Profile`] and counts KVM's
//! statistics in [`KvmStats`]. After an operation, [`ShadowMmu::take_remote_flush`] says
//! whether KVM flushed the vCPUs' TLBs (`kvm_flush_remote_tlbs`); the VM layer applies it to its
//! TLB model.
//!
//! Left out: 32-bit and PAE guests (roles' `quadrant`, `has_4_byte_gpte`), nested guests, SMM,
//! MMIO SPTE caching, dirty logging, NX huge pages, the TDP MMU (TDP has no pool cap and is
//! modelled by the translation layer), `kvm_zap_obsolete_pages` / memslot generation changes,
//! concurrency (one MMU lock holder at a time; `mmu_sync_children` never yields).

pub mod guest;
pub mod mmu;
pub mod page;
pub mod stats;
#[cfg(test)]
mod tests;

pub use guest::{pages_per_entry, pt_index, GuestMemory, GuestPte, HandGuest};
pub use mmu::{GuestStore, PfOutcome, PtWrite, ShadowMmu, ShadowWalk};
pub use page::{Role, ShadowPage};
pub use stats::{KvmFn, KvmStats, Profile, Work, WORK_KINDS};

use crate::error::{Error, Result};

/// `KVM_MIN_FREE_MMU_PAGES` (arch/x86/include/asm/kvm_host.h).
pub const KVM_MIN_FREE_MMU_PAGES: u64 = 5;
/// `KVM_REFILL_PAGES`.
pub const KVM_REFILL_PAGES: u64 = 25;
/// `KVM_MIN_ALLOC_MMU_PAGES`.
pub const KVM_MIN_ALLOC_MMU_PAGES: u64 = 64;
/// `KVM_MEMSLOT_PAGES_TO_MMU_PAGES_RATIO`: the default pool is 1/50 (2%) of guest pages.
pub const KVM_MEMSLOT_PAGES_TO_MMU_PAGES_RATIO: u64 = 50;
/// `KVM_MMU_HASH_SHIFT`: 4096 hash buckets.
pub const KVM_MMU_HASH_SHIFT: u32 = 12;
/// `PTE_PREFETCH_NUM`.
pub const PTE_PREFETCH_NUM: usize = 8;
/// `KVM_MMU_NUM_PREV_ROOTS`: cached roots per vCPU besides the current one.
pub const KVM_MMU_NUM_PREV_ROOTS: usize = 3;
/// Smallest pool this model accepts: a 5-level fault needs up to 4 new pages plus a root.
pub const MIN_POOL_PAGES: u64 = 8;
/// Largest pool accepted (the shadow pages' arrays stay far from u32 indices).
pub const MAX_POOL_PAGES: u64 = u32::MAX as u64 / 1024;

/// The pool size KVM picks when userspace does not set one (`kvm_arch_commit_memory_region`):
/// guest pages / 50, at least 64. A 4 GiB guest (1,048,576 pages) gets 20,971.
pub fn default_mmu_pages(guest_pages: u64) -> u64 {
    (guest_pages / KVM_MEMSLOT_PAGES_TO_MMU_PAGES_RATIO).max(KVM_MIN_ALLOC_MMU_PAGES)
}

/// How the clock harvests hardware accessed bits (the fork's `kvm.lru_age`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Harvest {
    /// Reference bits only (`lru_age=0`).
    #[default]
    None,
    /// Test and clear the A bits of the page's own leaf SPTEs, up to 512 (`lru_age=1`).
    Leaf,
    /// Test and clear the A bit of the parent SPTEs that point at the page (`lru_age=2`).
    Parent,
}

/// Which pages `kvm_mmu_zap_oldest_mmu_pages` recycles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Eviction {
    /// Upstream: from the tail of the creation-ordered `active_mmu_pages`, skipping roots.
    #[default]
    Fifo,
    /// Seed 000: a persistent hand over the same list, oldest to newest, wrapping; a set
    /// reference bit (or harvested A bit) buys a second chance; at most two laps.
    Clock { harvest: Harvest },
}

impl Eviction {
    /// The names [`Eviction::parse`] accepts.
    pub const NAMES: &'static [&'static str] = &["fifo", "clock", "clock-leaf", "clock-parent"];

    /// Parse `fifo`, `clock`, `clock-leaf`, `clock-parent` (the `key` names the config key in
    /// errors).
    pub fn parse(key: &str, s: &str) -> Result<Eviction> {
        match s {
            "fifo" => Ok(Eviction::Fifo),
            "clock" => Ok(Eviction::Clock {
                harvest: Harvest::None,
            }),
            "clock-leaf" => Ok(Eviction::Clock {
                harvest: Harvest::Leaf,
            }),
            "clock-parent" => Ok(Eviction::Clock {
                harvest: Harvest::Parent,
            }),
            _ => Err(Error::config(
                key,
                format!(
                    "unknown shadow-page eviction {s:?} (fifo, clock, clock-leaf, clock-parent)"
                ),
            )),
        }
    }
}

/// Configuration of one VM's shadow MMU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShadowMmuConfig {
    /// Guest memory in 4 KiB pages (the memslot); gfns at or above are MMIO.
    pub guest_pages: u64,
    /// `n_max_mmu_pages`; `None` = [`default_mmu_pages`]. Values below 64 are what
    /// `KVM_SET_NR_MMU_PAGES` refuses but the seed-000 fork's `kvm.min_alloc_pages` pins (it ran
    /// with 32); this model accepts down to [`MIN_POOL_PAGES`].
    pub n_max_mmu_pages: Option<u64>,
    /// Guest paging levels, 4 or 5 (the shadow root has the same level).
    pub levels: u8,
    pub vcpus: usize,
    pub eviction: Eviction,
    /// CR4.PCIDE in the guest: CR3 loads carry a PCID and may skip the flush (bit 63).
    pub pcide: bool,
    /// `FNAME(pte_prefetch)` on every 4 KiB fill (KVM always does it; off only for experiments).
    pub prefetch: bool,
}

impl Default for ShadowMmuConfig {
    fn default() -> Self {
        ShadowMmuConfig {
            guest_pages: 1 << 18,
            n_max_mmu_pages: None,
            levels: 4,
            vcpus: 1,
            eviction: Eviction::Fifo,
            pcide: false,
            prefetch: true,
        }
    }
}

impl ShadowMmuConfig {
    pub fn validate(&self) -> Result<()> {
        if self.guest_pages == 0 || self.guest_pages > 1 << 40 {
            return Err(Error::config(
                "kvm.guest_pages",
                format!("{} is not in 1..=2^40", self.guest_pages),
            ));
        }
        if self.levels != 4 && self.levels != 5 {
            return Err(Error::config(
                "kvm.levels",
                format!("{} guest paging levels; 4 or 5 are modelled", self.levels),
            ));
        }
        if self.vcpus == 0 || self.vcpus > 4096 {
            return Err(Error::config(
                "kvm.vcpus",
                format!("{} is not in 1..=4096", self.vcpus),
            ));
        }
        if let Some(n) = self.n_max_mmu_pages {
            if !(MIN_POOL_PAGES..=MAX_POOL_PAGES).contains(&n) {
                return Err(Error::config(
                    "kvm.n_max_mmu_pages",
                    format!("{n} is not in {MIN_POOL_PAGES}..={MAX_POOL_PAGES}"),
                ));
            }
        }
        Ok(())
    }
    /// The pool size in effect.
    pub fn n_max(&self) -> u64 {
        self.n_max_mmu_pages
            .unwrap_or_else(|| default_mmu_pages(self.guest_pages))
    }
}

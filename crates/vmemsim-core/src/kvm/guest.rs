//! What the shadow MMU needs from the guest and the host: guest page-table entries and the host
//! backing of guest frames.
//!
//! KVM reads guest PTEs through the host virtual address of guest memory
//! (`FNAME(walk_addr_generic)`, `kvm_vcpu_read_guest_atomic`) and makes guest frames present
//! on the host through `kvm_mmu_faultin_pfn` / `__gfn_to_pfn_memslot`. The VM layer implements
//! [`GuestMemory`] over its own guest page tables and host region; [`HandGuest`] is a small
//! hand-built implementation for tests and examples.

use std::collections::HashMap;

/// One x86-64 guest page-table entry in its architectural encoding (SDM vol. 3, 4.5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GuestPte(pub u64);

impl GuestPte {
    pub const PRESENT: u64 = 1 << 0;
    pub const WRITABLE: u64 = 1 << 1;
    pub const USER: u64 = 1 << 2;
    pub const ACCESSED: u64 = 1 << 5;
    pub const DIRTY: u64 = 1 << 6;
    /// PS: a leaf at level 2 (2 MiB) or 3 (1 GiB).
    pub const LARGE: u64 = 1 << 7;
    pub const NX: u64 = 1 << 63;
    const ADDR: u64 = 0x000f_ffff_ffff_f000;

    /// An entry pointing at `gfn` (a next-level table, or a data frame for a leaf) with `flags`.
    pub fn new(gfn: u64, flags: u64) -> Self {
        GuestPte(((gfn << 12) & Self::ADDR) | flags)
    }
    /// A present, writable, user entry pointing at the table `gfn` (accessed already set, as a
    /// guest kernel's upper-level entries usually are once walked).
    pub fn table(gfn: u64) -> Self {
        Self::new(
            gfn,
            Self::PRESENT | Self::WRITABLE | Self::USER | Self::ACCESSED,
        )
    }
    pub fn present(self) -> bool {
        self.0 & Self::PRESENT != 0
    }
    pub fn writable(self) -> bool {
        self.0 & Self::WRITABLE != 0
    }
    pub fn user(self) -> bool {
        self.0 & Self::USER != 0
    }
    pub fn accessed(self) -> bool {
        self.0 & Self::ACCESSED != 0
    }
    pub fn dirty(self) -> bool {
        self.0 & Self::DIRTY != 0
    }
    pub fn large(self) -> bool {
        self.0 & Self::LARGE != 0
    }
    pub fn nx(self) -> bool {
        self.0 & Self::NX != 0
    }
    /// The frame number the entry points at (`gpte_to_gfn`).
    pub fn gfn(self) -> u64 {
        (self.0 & Self::ADDR) >> 12
    }
}

/// Guest page tables and host backing, as the shadow MMU sees them.
///
/// Every method is a fault-path operation (never called on a TLB hit).
pub trait GuestMemory {
    /// Read the guest PTE at `index` (0..512) of the guest page-table page `table_gfn`.
    fn read_gpte(&self, table_gfn: u64, index: usize) -> GuestPte;
    /// Store a guest PTE. Used by `FNAME(update_accessed_dirty_bits)` (KVM sets the guest's
    /// A/D bits through the host mapping, which the write protection does not see) and by the
    /// guest's own page-table stores modelled in [`super::ShadowMmu::guest_pt_write`].
    fn write_gpte(&mut self, table_gfn: u64, index: usize, pte: GuestPte);
    /// `kvm_mmu_faultin_pfn`: make the host page backing `gfn` present (a host fault, swap-in,
    /// ... are the implementor's to model and time). Returns the host mapping level of that
    /// backing: 1 = 4 KiB, 2 = 2 MiB (THP), 3 = 1 GiB (hugetlbfs), which caps the shadow leaf
    /// (`host_pfn_mapping_level`).
    fn faultin_pfn(&mut self, gfn: u64, write: bool) -> u8;
    /// `gfn_to_pfn_memslot_atomic` for prefetch: whether the host page of `gfn` is present
    /// right now without sleeping. A prefetch stops at the first `false`.
    fn host_present(&self, gfn: u64) -> bool;
}

/// A hand-built guest: page-table pages as sparse maps, every host page present at a fixed
/// host level. For tests, examples and small experiments; counts writes and host faults.
#[derive(Clone, Debug, Default)]
pub struct HandGuest {
    tables: HashMap<u64, Box<[GuestPte; 512]>>,
    /// Host mapping level returned by `faultin_pfn` (1 unless a test sets it).
    pub host_level: u8,
    /// gfns whose host page is absent (swapped out): prefetch stops at them.
    pub host_absent: std::collections::HashSet<u64>,
    pub writes: u64,
    pub faultins: u64,
}

impl HandGuest {
    pub fn new() -> Self {
        HandGuest {
            host_level: 1,
            ..Default::default()
        }
    }
    /// Set entry `index` of table `table_gfn` (creating the table page if needed).
    pub fn set(&mut self, table_gfn: u64, index: usize, pte: GuestPte) {
        self.tables
            .entry(table_gfn)
            .or_insert_with(|| Box::new([GuestPte(0); 512]))[index] = pte;
    }
    pub fn get(&self, table_gfn: u64, index: usize) -> GuestPte {
        self.tables
            .get(&table_gfn)
            .map(|t| t[index])
            .unwrap_or_default()
    }
    /// Map the 4 KiB page at `gva` to `gfn` with leaf `flags`, through a 4- or 5-level table
    /// rooted at `root`; intermediate tables come from `tables` (one gfn per level below the
    /// root, highest level first) and are linked only where the entry is not present yet.
    pub fn map_4k(
        &mut self,
        levels: u8,
        root: u64,
        tables: &[u64],
        gva: u64,
        gfn: u64,
        flags: u64,
    ) {
        let mut table = root;
        for (k, level) in (2..=levels).rev().enumerate() {
            let idx = pt_index(gva, level);
            let e = self.get(table, idx);
            let next = if e.present() {
                e.gfn()
            } else {
                self.set(table, idx, GuestPte::table(tables[k]));
                tables[k]
            };
            table = next;
        }
        self.set(table, pt_index(gva, 1), GuestPte::new(gfn, flags));
    }
}

impl GuestMemory for HandGuest {
    fn read_gpte(&self, table_gfn: u64, index: usize) -> GuestPte {
        self.get(table_gfn, index)
    }
    fn write_gpte(&mut self, table_gfn: u64, index: usize, pte: GuestPte) {
        self.writes += 1;
        self.set(table_gfn, index, pte);
    }
    fn faultin_pfn(&mut self, _gfn: u64, _write: bool) -> u8 {
        self.faultins += 1;
        self.host_level
    }
    fn host_present(&self, gfn: u64) -> bool {
        !self.host_absent.contains(&gfn)
    }
}

/// Index of `gva` in a page table of `level` (1 = PTE ... 5 = PML5): `PT_INDEX`.
#[inline]
pub fn pt_index(gva: u64, level: u8) -> usize {
    ((gva >> (12 + 9 * (level as u32 - 1))) & 511) as usize
}

/// Pages (4 KiB) spanned by one entry at `level`: 1, 512, 512².
#[inline]
pub fn pages_per_entry(level: u8) -> u64 {
    1u64 << (9 * (level as u32 - 1))
}

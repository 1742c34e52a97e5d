//! A shadow page (`struct kvm_mmu_page`, arch/x86/kvm/mmu/mmu_internal.h), its role and the
//! encoding of its SPTEs.

use crate::policy::list::List;

/// SPTEs per shadow page (`SPTE_ENT_PER_PAGE`).
pub const SPTE_PER_PAGE: usize = 512;

/// Access bits (`ACC_EXEC_MASK`, `ACC_WRITE_MASK`, `ACC_USER_MASK`).
pub const ACC_EXEC: u8 = 1;
pub const ACC_WRITE: u8 = 2;
pub const ACC_USER: u8 = 4;
pub const ACC_ALL: u8 = 7;

/// The part of `union kvm_mmu_page_role` this model uses: level, direct, access.
///
/// Left out (always one value here): `has_4_byte_gpte` and `quadrant` (32-bit guests),
/// `efer_nx`, `cr0_wp`, `smap_andnot_wp`, `smep_andnot_wp` (one paging mode per VM),
/// `ad_disabled` (A/D bits always on), `guest_mode` (no nested guests), `passthrough`,
/// `smm`. `invalid` is kept on the page ([`ShadowPage::invalid`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Role {
    /// 1 = maps 4 KiB pages ... 5 = PML5.
    pub level: u8,
    /// A direct page maps a contiguous gfn range (a guest large page split into host 4 KiB
    /// entries); it shadows no guest table and is never write-protected or unsync.
    pub direct: bool,
    /// Guest access allowed through this page (the AND of the upper guest entries).
    pub access: u8,
}

impl Role {
    #[inline]
    pub fn word(self) -> u32 {
        self.level as u32 | (self.direct as u32) << 4 | (self.access as u32) << 5
    }
}

// SPTE encoding. A leaf's target is a gfn (KVM stores the host pfn; the host frame behind a
// gfn is the VM layer's business); a non-leaf's target is the child's shadow-page id.
pub const SPTE_PRESENT: u64 = 1 << 0;
pub const SPTE_WRITABLE: u64 = 1 << 1;
pub const SPTE_USER: u64 = 1 << 2;
pub const SPTE_EXEC: u64 = 1 << 3;
pub const SPTE_ACCESSED: u64 = 1 << 5;
pub const SPTE_DIRTY: u64 = 1 << 6;
/// A last-level entry (a 4 KiB entry, or PS=1 at level 2/3).
pub const SPTE_LEAF: u64 = 1 << 7;
const TARGET_SHIFT: u32 = 12;

#[inline]
pub fn spte_present(s: u64) -> bool {
    s & SPTE_PRESENT != 0
}
#[inline]
pub fn spte_leaf(s: u64) -> bool {
    s & SPTE_LEAF != 0
}
#[inline]
pub fn spte_target(s: u64) -> u64 {
    s >> TARGET_SHIFT
}
#[inline]
pub fn make_leaf(gfn: u64, access: u8, writable: bool, accessed: bool) -> u64 {
    let mut s = SPTE_PRESENT | SPTE_LEAF | gfn << TARGET_SHIFT;
    if access & ACC_USER != 0 {
        s |= SPTE_USER;
    }
    if access & ACC_EXEC != 0 {
        s |= SPTE_EXEC;
    }
    if writable {
        // make_spte sets the dirty bit with the writable one (`spte_shadow_dirty_mask`).
        s |= SPTE_WRITABLE | SPTE_DIRTY;
    }
    if accessed {
        s |= SPTE_ACCESSED;
    }
    s
}
/// `make_nonleaf_spte`: upper entries always allow everything; A is left to the hardware.
#[inline]
pub fn make_nonleaf(child: u32) -> u64 {
    SPTE_PRESENT | SPTE_WRITABLE | SPTE_USER | SPTE_EXEC | (child as u64) << TARGET_SHIFT
}
/// Access bits a leaf SPTE grants (for `kvm_mmu_page_get_access` comparisons).
#[inline]
pub fn spte_access(s: u64) -> u8 {
    let mut a = 0;
    if s & SPTE_WRITABLE != 0 {
        a |= ACC_WRITE;
    }
    if s & SPTE_USER != 0 {
        a |= ACC_USER;
    }
    if s & SPTE_EXEC != 0 {
        a |= ACC_EXEC;
    }
    a
}

/// One shadow page: a host page-table page of 512 SPTEs (the SPTEs themselves live in the
/// MMU's flat array at `id * 512`).
#[derive(Clone, Debug)]
pub struct ShadowPage {
    pub gfn: u64,
    pub role: Role,
    /// Slot in use (false on the free list).
    pub live: bool,
    /// Zapped while still a root (`role.invalid`): off the hash and the active list, still
    /// counted in the pool until its last root reference goes.
    pub invalid: bool,
    /// vCPU root references, current and cached (`root_count`).
    pub root_count: u32,
    /// Guest writes may have changed the shadowed table since the last sync (`unsync`).
    pub unsync: bool,
    /// Number of set bits in `unsync_child_bitmap` (`unsync_children`).
    pub unsync_children: u16,
    pub unsync_child_bitmap: [u64; 8],
    /// `write_flooding_count`.
    pub write_flooding_count: u8,
    /// Clock reference bit (seed 000's `lru_ref`).
    pub referenced: bool,
    /// Next page in the same hash bucket.
    pub hash_next: u32,
    /// Parent SPTEs (`parent_ptes`), as SPTE slot ids on the MMU's shared link slab.
    pub parents: List,
    /// Present leaf SPTEs (for statistics and `validate`).
    pub n_leaves: u16,
}

impl ShadowPage {
    pub fn new(gfn: u64, role: Role) -> Self {
        ShadowPage {
            gfn,
            role,
            live: true,
            invalid: false,
            root_count: 0,
            unsync: false,
            unsync_children: 0,
            unsync_child_bitmap: [0; 8],
            write_flooding_count: 0,
            referenced: false,
            hash_next: u32::MAX,
            parents: List::default(),
            n_leaves: 0,
        }
    }
    /// `sp_has_gptes`: the page shadows a guest page table.
    #[inline]
    pub fn has_gptes(&self) -> bool {
        !self.role.direct
    }
    #[inline]
    pub fn test_child_bit(&self, i: usize) -> bool {
        self.unsync_child_bitmap[i / 64] & (1 << (i % 64)) != 0
    }
    #[inline]
    pub fn set_child_bit(&mut self, i: usize) -> bool {
        let was = self.test_child_bit(i);
        self.unsync_child_bitmap[i / 64] |= 1 << (i % 64);
        was
    }
    /// `clear_unsync_child_bit`.
    #[inline]
    pub fn clear_child_bit(&mut self, i: usize) {
        if self.test_child_bit(i) {
            self.unsync_child_bitmap[i / 64] &= !(1 << (i % 64));
            self.unsync_children -= 1;
        }
    }
}

//! The shadow MMU of one VM (`struct kvm_arch` MMU state plus each vCPU's `struct kvm_mmu`).
//!
//! Layout: shadow pages in a slab (`sps`, ids reused through a free stack); their SPTEs in one
//! flat array (`spt[id * 512 + i]`, the "slot" of an SPTE); one link slab over slots holds both
//! the rmaps (leaf SPTEs per gfn, `rmap_add`) and each page's `parent_ptes` (a slot is a leaf
//! or a non-leaf, never both); `active_mmu_pages` is an index-linked list over page ids, head =
//! newest; `mmu_page_hash` is 4096 singly linked buckets keyed by `hash_64(gfn, 12)`.
//!
//! The guest kernel's own mapping of its page-table pages (the direct map through which it
//! stores PTEs) is not walked: [`ShadowMmu::guest_pt_write`] models its SPTE as one
//! write-protected-or-not bit per gfn (`kmap_ro`), set by `kvm_mmu_slot_gfn_write_protect` and
//! cleared when a write fault makes it writable again.

use super::guest::{pages_per_entry, pt_index, GuestMemory, GuestPte};
use super::page::*;
use super::stats::{KvmFn, KvmStats, Profile, Work};
use super::{
    Eviction, Harvest, ShadowMmuConfig, KVM_MIN_FREE_MMU_PAGES, KVM_MMU_HASH_SHIFT,
    KVM_MMU_NUM_PREV_ROOTS, KVM_REFILL_PAGES, PTE_PREFETCH_NUM,
};
use crate::error::Result;
use crate::policy::list::{Links, List, NIL};

/// Result of a hardware walk of the shadow tables ([`ShadowMmu::translate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShadowWalk {
    /// Translated: the guest frame, the level of the leaf (1 = 4 KiB, 2 = 2 MiB, 3 = 1 GiB),
    /// whether the SPTE allows writes, and the shadow entries read (= levels walked).
    Hit {
        gfn: u64,
        level: u8,
        writable: bool,
        refs: u8,
    },
    /// A shadow page fault (#PF exit): call [`ShadowMmu::page_fault`].
    Fault { refs: u8 },
    /// The vCPU has no valid root (first run, or its root was zapped): call
    /// [`ShadowMmu::reload`] (`kvm_mmu_reload` at VM entry), then walk again.
    NoRoot,
}

/// What a shadow page fault ended in (`RET_PF_*` of `kvm_mmu_do_page_fault`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PfOutcome {
    /// An SPTE was installed (`RET_PF_FIXED`); the access can be retried.
    Fixed,
    /// The SPTE was already as needed (`RET_PF_SPURIOUS`), e.g. a stale TLB entry.
    Spurious,
    /// The guest's own tables do not allow the access: a #PF is injected into the guest
    /// (`kvm_inject_emulated_page_fault`); the guest OS must handle it.
    GuestFault,
    /// A write to a write-protected guest page-table page (`RET_PF_EMULATE`): the VM layer
    /// calls [`ShadowMmu::emulate_write`] with what the instruction stores.
    Emulate { gfn: u64 },
    /// The gfn is outside guest memory (MMIO, emulated by userspace).
    Mmio { gfn: u64 },
    /// No shadow page could be freed (`make_mmu_pages_available` returned -ENOSPC; KVM_RUN
    /// fails). Only possible when roots fill the pool.
    NoSpace,
}

/// What an emulated store writes (`x86_emulate_instruction` after `RET_PF_EMULATE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestStore {
    /// A page-table-writing instruction storing a PTE (`x86_page_table_writing_insn`): the
    /// store is emulated and reported to `kvm_mmu_track_write`.
    Pte { index: usize, pte: GuestPte },
    /// Any other store (the page is being reused as data): `retry_instruction` unprotects the
    /// page (`kvm_mmu_unprotect_page` zaps its shadow pages) and the guest re-executes.
    Data,
}

/// How a guest store to one of its page-table pages was handled ([`ShadowMmu::guest_pt_write`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PtWrite {
    /// The guest's mapping of the page was writable: no exit.
    Direct,
    /// One #PF exit fixed by making the mapping writable; the page's level-1 shadow pages, if
    /// any, are marked unsync (`mmu_try_to_unsync_pages`); the store then went through.
    Unsynced,
    /// One #PF exit and the store emulated (`kvm_mmu_track_write`).
    Emulated,
    /// A data store to a tracked page: one exit unprotected it, a second fixed the mapping.
    Unprotected,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RootInfo {
    sp: u32,
    /// (root gfn, PCID): `root.pgd`.
    pgd: (u64, u16),
}

const NO_ROOT: RootInfo = RootInfo {
    sp: NIL,
    pgd: (u64::MAX, 0),
};

#[derive(Clone, Debug)]
struct VcpuMmu {
    root: RootInfo,
    prev: [RootInfo; KVM_MMU_NUM_PREV_ROOTS],
    /// Guest CR3: (root gfn, PCID); `None` before the first load.
    cr3: Option<(u64, u16)>,
}

/// `struct guest_walker`: the guest walk of one address.
#[derive(Clone, Copy, Debug, Default)]
struct Walker {
    level: u8,
    table_gfn: [u64; 5],
    pt_access: [u8; 5],
    pte_access: u8,
    gfn: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ret {
    Fixed,
    Spurious,
    Emulate,
}

/// The shadow MMU of one VM. See the module docs of [`crate::kvm`].
#[derive(Clone, Debug)]
pub struct ShadowMmu {
    cfg: ShadowMmuConfig,
    n_max: u64,
    n_used: u64,
    sps: Vec<ShadowPage>,
    free_ids: Vec<u32>,
    spt: Vec<u64>,
    slot_links: Links,
    active: List,
    active_links: Links,
    /// Clock hand: the next page to examine (NIL = start from the tail).
    hand: u32,
    buckets: Vec<u32>,
    rmap: Vec<List>,
    /// `gfn_write_track`: upper-level shadow pages of each gfn.
    write_track: Vec<u16>,
    /// `disallow_lpage` per 2 MiB and per 1 GiB region.
    lpage_2m: Vec<u32>,
    lpage_1g: Vec<u32>,
    /// The guest kernel's mapping of each gfn is write-protected (bitset).
    kmap_ro: Vec<u64>,
    indirect_shadow_pages: u64,
    vcpus: Vec<VcpuMmu>,
    stats: KvmStats,
    prof: Profile,
    remote_flush: bool,
    obsolete_roots: bool,
}

#[inline]
fn hash_bucket(gfn: u64) -> usize {
    // hash_64(gfn, KVM_MMU_HASH_SHIFT) with GOLDEN_RATIO_64 (include/linux/hash.h).
    (gfn.wrapping_mul(0x61C8_8646_80B5_83EB) >> (64 - KVM_MMU_HASH_SHIFT)) as usize
}

/// `FNAME(gpte_access)`.
#[inline]
fn gpte_access(pte: GuestPte) -> u8 {
    let mut a = 0;
    if !pte.nx() {
        a |= ACC_EXEC;
    }
    if pte.writable() {
        a |= ACC_WRITE;
    }
    if pte.user() {
        a |= ACC_USER;
    }
    a
}

/// `FNAME(protect_clean_gpte)`: a clean guest PTE maps read-only so the first write faults
/// and KVM can set the guest's dirty bit.
#[inline]
fn protect_clean(access: u8, pte: GuestPte) -> u8 {
    if pte.dirty() {
        access
    } else {
        access & !ACC_WRITE
    }
}

impl ShadowMmu {
    pub fn new(cfg: ShadowMmuConfig) -> Result<Self> {
        cfg.validate()?;
        let g = cfg.guest_pages as usize;
        let mmu = ShadowMmu {
            n_max: cfg.n_max(),
            n_used: 0,
            sps: Vec::new(),
            free_ids: Vec::new(),
            spt: Vec::new(),
            slot_links: Links::new(0),
            active: List::default(),
            active_links: Links::new(0),
            hand: NIL,
            buckets: vec![NIL; 1 << KVM_MMU_HASH_SHIFT],
            rmap: vec![List::default(); g],
            write_track: vec![0; g],
            lpage_2m: vec![0; g.div_ceil(512)],
            lpage_1g: vec![0; g.div_ceil(512 * 512)],
            kmap_ro: vec![0; g.div_ceil(64)],
            indirect_shadow_pages: 0,
            vcpus: vec![
                VcpuMmu {
                    root: NO_ROOT,
                    prev: [NO_ROOT; KVM_MMU_NUM_PREV_ROOTS],
                    cr3: None,
                };
                cfg.vcpus
            ],
            stats: KvmStats::default(),
            prof: Profile::default(),
            remote_flush: false,
            obsolete_roots: false,
            cfg,
        };
        Ok(mmu)
    }

    // ----- read-only views -----

    pub fn config(&self) -> &ShadowMmuConfig {
        &self.cfg
    }
    pub fn stats(&self) -> &KvmStats {
        &self.stats
    }
    pub fn profile(&self) -> &Profile {
        &self.prof
    }
    /// `n_used_mmu_pages`.
    pub fn n_used(&self) -> u64 {
        self.n_used
    }
    /// `n_max_mmu_pages`.
    pub fn n_max(&self) -> u64 {
        self.n_max
    }
    /// Pages on `active_mmu_pages` (all counted pages except zapped roots still referenced).
    pub fn n_active(&self) -> u64 {
        self.active.len as u64
    }
    /// Pages on the active list, oldest first (creation order).
    pub fn active_oldest_first(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.active.iter(&self.active_links).collect();
        v.reverse();
        v
    }
    pub fn page(&self, id: u32) -> Option<&ShadowPage> {
        self.sps.get(id as usize).filter(|s| s.live)
    }
    /// The live, valid shadow page for (gfn, role), without side effects.
    pub fn lookup(&self, gfn: u64, role: Role) -> Option<u32> {
        let mut cur = self.buckets[hash_bucket(gfn)];
        while cur != NIL {
            let sp = &self.sps[cur as usize];
            if sp.gfn == gfn && sp.role == role && !sp.invalid {
                return Some(cur);
            }
            cur = sp.hash_next;
        }
        None
    }
    /// The SPTE at `index` of page `id`, raw (see [`super::page`] for the encoding).
    pub fn spte(&self, id: u32, index: usize) -> u64 {
        self.spt[id as usize * SPTE_PER_PAGE + index]
    }
    /// The current root page of `vcpu`, if any.
    pub fn root(&self, vcpu: usize) -> Option<u32> {
        let r = self.vcpus[vcpu].root.sp;
        (r != NIL).then_some(r)
    }
    /// Whether the guest frame `gfn` is write-tracked (shadowed by an upper-level page).
    pub fn write_tracked(&self, gfn: u64) -> bool {
        self.write_track.get(gfn as usize).is_some_and(|&c| c > 0)
    }
    /// Leaf SPTEs mapping `gfn` (4 KiB mappings; large ones are keyed by their base gfn).
    pub fn rmap_len(&self, gfn: u64) -> u32 {
        self.rmap.get(gfn as usize).map_or(0, |l| l.len)
    }
    /// Whether KVM flushed remote TLBs since the last call; clears the flag. The VM layer
    /// flushes its TLB model (all vCPUs) when this is true.
    pub fn take_remote_flush(&mut self) -> bool {
        std::mem::take(&mut self.remote_flush)
    }

    // ----- hardware -----

    /// The hardware walk of the shadow tables on a TLB miss (no exit): sets the accessed bit
    /// of every entry used and the dirty bit of the leaf on writes. Allocation-free.
    pub fn translate(&mut self, vcpu: usize, gva: u64, write: bool, user: bool) -> ShadowWalk {
        let mut id = self.vcpus[vcpu].root.sp;
        if id == NIL {
            return ShadowWalk::NoRoot;
        }
        let mut level = self.cfg.levels;
        let mut refs = 0u8;
        loop {
            let slot = id as usize * SPTE_PER_PAGE + pt_index(gva, level);
            let s = self.spt[slot];
            refs += 1;
            if !spte_present(s) {
                return ShadowWalk::Fault { refs };
            }
            if spte_leaf(s) {
                let writable = s & SPTE_WRITABLE != 0;
                if (write && !writable) || (user && s & SPTE_USER == 0) {
                    return ShadowWalk::Fault { refs };
                }
                self.spt[slot] |= SPTE_ACCESSED | if write { SPTE_DIRTY } else { 0 };
                let off = (gva >> 12) & (pages_per_entry(level) - 1);
                return ShadowWalk::Hit {
                    gfn: spte_target(s) + off,
                    level,
                    writable,
                    refs,
                };
            }
            self.spt[slot] |= SPTE_ACCESSED;
            id = spte_target(s) as u32;
            level -= 1;
        }
    }

    // ----- vCPU events -----

    /// `kvm_mmu_reload` at VM entry: free roots zapped meanwhile, allocate a root for the
    /// current CR3 if there is none (`mmu_alloc_shadow_roots`) and sync it (`kvm_mmu_load`).
    /// Returns false only when the pool is full of roots (-ENOSPC) or CR3 was never loaded.
    pub fn reload<G: GuestMemory>(&mut self, g: &mut G, vcpu: usize) -> bool {
        self.free_obsolete_roots();
        if self.vcpus[vcpu].root.sp != NIL {
            return true;
        }
        let Some(cr3) = self.vcpus[vcpu].cr3 else {
            return false;
        };
        self.prof.enter(KvmFn::MmuAllocShadowRoots);
        let ok = self.make_mmu_pages_available();
        if ok {
            let role = Role {
                level: self.cfg.levels,
                direct: false,
                access: ACC_ALL,
            };
            let id = self.get_shadow_page(g, cr3.0, role);
            self.sps[id as usize].root_count += 1;
            self.vcpus[vcpu].root = RootInfo { sp: id, pgd: cr3 };
        }
        self.prof.leave();
        if ok {
            self.sync_roots(g, vcpu);
        }
        self.finish();
        ok
    }

    /// A guest `MOV CR3` (`kvm_set_cr3` → `kvm_mmu_new_pgd` → `fast_pgd_switch`, then
    /// `kvm_invalidate_pcid`): switch to a cached root if one matches, else drop the oldest
    /// cached root; unless PCIDE and the no-flush bit, sync the new root's unsync pages.
    /// The new root is allocated by the next [`Self::reload`] if it was not cached.
    pub fn set_cr3<G: GuestMemory>(
        &mut self,
        g: &mut G,
        vcpu: usize,
        root_gfn: u64,
        pcid: u16,
        noflush: bool,
    ) {
        self.prof.enter(KvmFn::KvmSetCr3);
        self.stats.cr3_loads += 1;
        let pcid = if self.cfg.pcide { pcid } else { 0 };
        let pgd = (root_gfn, pcid);
        if self.vcpus[vcpu].cr3 != Some(pgd) {
            self.new_pgd(vcpu, pgd);
            self.vcpus[vcpu].cr3 = Some(pgd);
        }
        if !(self.cfg.pcide && noflush) {
            // kvm_invalidate_pcid: the active PCID is the one just loaded, so
            // KVM_REQ_MMU_SYNC; with PCIDE, also free cached roots of that PCID.
            if self.cfg.pcide {
                for i in 0..KVM_MMU_NUM_PREV_ROOTS {
                    let r = self.vcpus[vcpu].prev[i];
                    if r.sp != NIL && r.pgd.1 == pcid {
                        self.free_root(vcpu, Some(i));
                    }
                }
            }
            if self.vcpus[vcpu].root.sp != NIL {
                self.sync_roots(g, vcpu);
            }
        }
        self.prof.leave();
        self.finish();
        if self.vcpus[vcpu].root.sp == NIL {
            self.reload(g, vcpu);
        }
    }

    /// A guest TLB flush exit (`kvm_vcpu_flush_tlb_guest`: INVPCID all, CR4.PGE toggle, ...):
    /// sync the current root and free cached roots that have unsync pages.
    pub fn flush_tlb_guest<G: GuestMemory>(&mut self, g: &mut G, vcpu: usize) {
        self.prof.enter(KvmFn::KvmVcpuFlushTlbGuest);
        self.stats.tlb_flush += 1;
        self.sync_roots(g, vcpu);
        // kvm_mmu_sync_prev_roots: sync cached roots by freeing them.
        for i in 0..KVM_MMU_NUM_PREV_ROOTS {
            let r = self.vcpus[vcpu].prev[i].sp;
            if r != NIL && self.is_unsync_root(r) {
                self.free_root(vcpu, Some(i));
            }
        }
        self.prof.leave();
        self.finish();
    }

    /// A guest INVLPG (`kvm_mmu_invlpg` → `__kvm_mmu_invalidate_addr`): for every root, walk
    /// the shadow path of `gva` and resync the one SPTE in each unsync page on it.
    pub fn invlpg<G: GuestMemory>(&mut self, g: &mut G, vcpu: usize, gva: u64) {
        self.prof.enter(KvmFn::KvmMmuInvlpg);
        self.stats.invlpg += 1;
        let mut roots = [NIL; 1 + KVM_MMU_NUM_PREV_ROOTS];
        roots[0] = self.vcpus[vcpu].root.sp;
        for i in 0..KVM_MMU_NUM_PREV_ROOTS {
            roots[1 + i] = self.vcpus[vcpu].prev[i].sp;
        }
        for root in roots {
            if root == NIL {
                continue;
            }
            let mut id = root;
            let mut level = self.cfg.levels;
            loop {
                let i = pt_index(gva, level);
                let slot = id as usize * SPTE_PER_PAGE + i;
                self.prof.add(Work::Sptes, 1);
                if self.sps[id as usize].unsync {
                    let r = self.sync_spte(g, id, i);
                    if r != 0 {
                        self.flush_remote();
                    }
                }
                if self.sps[id as usize].unsync_children == 0 {
                    break;
                }
                let s = self.spt[slot];
                if !spte_present(s) || spte_leaf(s) || level == 1 {
                    break;
                }
                id = spte_target(s) as u32;
                level -= 1;
            }
        }
        self.prof.leave();
        self.finish();
    }

    /// A shadow page fault on `gva` (`kvm_mmu_page_fault` → `paging64_page_fault`): walk the
    /// guest tables, find or create the shadow pages of the path, install the leaf, prefetch
    /// neighbours. Call after [`Self::translate`] returned [`ShadowWalk::Fault`].
    pub fn page_fault<G: GuestMemory>(
        &mut self,
        g: &mut G,
        vcpu: usize,
        gva: u64,
        write: bool,
        user: bool,
    ) -> PfOutcome {
        if self.vcpus[vcpu].root.sp == NIL && !self.reload(g, vcpu) {
            return PfOutcome::NoSpace;
        }
        self.prof.enter(KvmFn::KvmMmuPageFault);
        self.stats.pf_taken += 1;
        self.prof.enter(KvmFn::Paging64PageFault);
        let out = self.paging64_page_fault(g, vcpu, gva, write, user);
        self.prof.leave();
        match out {
            PfOutcome::Fixed => self.stats.pf_fixed += 1,
            PfOutcome::Spurious => self.stats.pf_spurious += 1,
            PfOutcome::Emulate { .. } | PfOutcome::Mmio { .. } => self.stats.pf_emulate += 1,
            PfOutcome::GuestFault => self.stats.pf_guest += 1,
            PfOutcome::NoSpace => {}
        }
        self.prof.leave();
        self.finish();
        out
    }

    fn paging64_page_fault<G: GuestMemory>(
        &mut self,
        g: &mut G,
        vcpu: usize,
        gva: u64,
        write: bool,
        user: bool,
    ) -> PfOutcome {
        let Some(w) = self.walk_addr(g, vcpu, gva, write, user) else {
            return PfOutcome::GuestFault;
        };
        if w.gfn >= self.cfg.guest_pages {
            return PfOutcome::Mmio { gfn: w.gfn };
        }
        // page_fault_handle_page_track: a write through a present SPTE to a write-tracked gfn.
        let present = self.shadow_leaf_present(vcpu, gva);
        if present && write && self.write_tracked(w.gfn) {
            self.clear_flood_on_path(vcpu, gva);
            return PfOutcome::Emulate { gfn: w.gfn };
        }
        self.prof.enter(KvmFn::KvmMmuFaultinPfn);
        let host_level = g.faultin_pfn(w.gfn, write).clamp(1, 3);
        self.prof.leave();
        if !self.make_mmu_pages_available() {
            return PfOutcome::NoSpace;
        }
        match self.fetch(g, vcpu, gva, &w, write, host_level) {
            Ret::Fixed => PfOutcome::Fixed,
            Ret::Spurious => PfOutcome::Spurious,
            Ret::Emulate => PfOutcome::Emulate { gfn: w.gfn },
        }
    }

    /// Finish a [`PfOutcome::Emulate`] (`x86_emulate_instruction`): a PTE store is written
    /// to guest memory and reported to `kvm_mmu_track_write`; a data store unprotects the page
    /// (`retry_instruction`), after which the guest retries its access.
    pub fn emulate_write<G: GuestMemory>(
        &mut self,
        g: &mut G,
        vcpu: usize,
        gfn: u64,
        store: GuestStore,
    ) {
        // An entry index is taken modulo 512 (a page holds 512 PTEs).
        let store = match store {
            GuestStore::Pte { index, pte } => GuestStore::Pte {
                index: index % SPTE_PER_PAGE,
                pte,
            },
            GuestStore::Data => GuestStore::Data,
        };
        self.prof.enter(KvmFn::X86EmulateInstruction);
        match store {
            GuestStore::Pte { index, pte } => {
                g.write_gpte(gfn, index, pte);
                self.prof.add(Work::GptesWritten, 1);
                self.track_write(g, vcpu, gfn, index, pte);
            }
            GuestStore::Data => {
                self.unprotect_page(gfn);
            }
        }
        self.prof.leave();
        self.finish();
    }

    /// A guest store of `pte` into entry `index` (mod 512) of its page-table page `gfn`, through the
    /// guest kernel's mapping of that page (see the module docs):
    /// - mapping writable (the page is not shadowed, or its shadow pages are unsync): the
    ///   store just happens;
    /// - the page is write-tracked (shadowed by an upper-level page): a #PF exit, emulated
    ///   (`kvm_mmu_track_write`) for a PTE store; for a data store (`pte_update` false) the
    ///   page is unprotected and the retried store faults once more to map it writable;
    /// - otherwise (only level-1 shadow pages): a #PF exit whose fix makes the mapping writable
    ///   and marks those pages unsync (`mmu_try_to_unsync_pages`).
    pub fn guest_pt_write<G: GuestMemory>(
        &mut self,
        g: &mut G,
        vcpu: usize,
        gfn: u64,
        index: usize,
        pte: GuestPte,
        pte_update: bool,
    ) -> PtWrite {
        let index = index % SPTE_PER_PAGE;
        if gfn >= self.cfg.guest_pages || !self.kmap_is_ro(gfn) {
            g.write_gpte(gfn, index, pte);
            return PtWrite::Direct;
        }
        let out;
        self.prof.enter(KvmFn::KvmMmuPageFault);
        self.stats.pf_taken += 1;
        self.prof.enter(KvmFn::Paging64PageFault);
        if self.write_tracked(gfn) {
            self.stats.pf_emulate += 1;
            self.prof.leave();
            if pte_update {
                self.emulate_write(g, vcpu, gfn, GuestStore::Pte { index, pte });
                out = PtWrite::Emulated;
            } else {
                self.emulate_write(g, vcpu, gfn, GuestStore::Data);
                self.prof.leave();
                // The retried store faults again; the page has no shadow pages left.
                self.prof.enter(KvmFn::KvmMmuPageFault);
                self.stats.pf_taken += 1;
                self.prof.enter(KvmFn::Paging64PageFault);
                self.kmap_fix(gfn);
                self.prof.leave();
                g.write_gpte(gfn, index, pte);
                out = PtWrite::Unprotected;
            }
        } else {
            self.kmap_fix(gfn);
            self.prof.leave();
            g.write_gpte(gfn, index, pte);
            out = PtWrite::Unsynced;
        }
        self.prof.leave();
        self.finish();
        out
    }

    /// The write fault on the guest kernel's mapping of `gfn`: `make_mmu_pages_available`,
    /// then `mmu_set_spte` → `make_spte` → `mmu_try_to_unsync_pages`.
    fn kmap_fix(&mut self, gfn: u64) {
        self.make_mmu_pages_available();
        self.prof.enter(KvmFn::MmuSetSpte);
        if self.try_to_unsync(gfn, true, false) {
            self.kmap_ro[gfn as usize / 64] &= !(1 << (gfn % 64));
            self.stats.pf_fixed += 1;
        } else {
            self.stats.pf_emulate += 1;
        }
        self.prof.leave();
    }

    fn kmap_is_ro(&self, gfn: u64) -> bool {
        self.kmap_ro[gfn as usize / 64] & (1 << (gfn % 64)) != 0
    }

    // ----- host events -----

    /// MMU-notifier unmap of one guest frame (`kvm_unmap_gfn_range` → `kvm_zap_rmap`), when
    /// the host reclaims or migrates the page backing it. Returns the SPTEs dropped.
    pub fn unmap_gfn(&mut self, gfn: u64) -> u32 {
        self.unmap_gfn_range(gfn, 1)
    }

    /// MMU-notifier unmap of `count` guest frames from `start` (`kvm_unmap_gfn_range` over a
    /// host large page: one notifier call, each frame's rmaps zapped). Returns the SPTEs
    /// dropped.
    pub fn unmap_gfn_range(&mut self, start: u64, count: u64) -> u32 {
        let end = start.saturating_add(count).min(self.cfg.guest_pages);
        if start >= end {
            return 0;
        }
        self.prof.enter(KvmFn::KvmUnmapGfnRange);
        let mut n = 0;
        // The large entries' rmaps already visited (by base frame, per level).
        let mut seen = [u64::MAX; 4];
        for gfn in start..end {
            for level in 1..=3u8 {
                let base = gfn & !(pages_per_entry(level) - 1);
                if level > 1 {
                    if seen[level as usize] == base {
                        continue;
                    }
                    seen[level as usize] = base;
                }
                let mut s = self.rmap[base as usize].head;
                while s != NIL {
                    let next = self.slot_links.next(s);
                    self.prof.add(Work::Sptes, 1);
                    if self.sps[s as usize / SPTE_PER_PAGE].role.level == level {
                        self.drop_spte(s as usize);
                        n += 1;
                    }
                    s = next;
                }
            }
        }
        if n > 0 {
            self.flush_remote();
        }
        self.prof.leave();
        self.finish();
        n
    }

    /// MMU-notifier aging (`kvm_age_gfn`): test and clear the accessed bits of the leaf SPTEs
    /// mapping `gfn`. Returns whether any was set.
    pub fn age_gfn(&mut self, gfn: u64) -> bool {
        if gfn >= self.cfg.guest_pages {
            return false;
        }
        self.prof.enter(KvmFn::KvmAgeGfn);
        let mut young = false;
        for level in 1..=3u8 {
            let base = gfn & !(pages_per_entry(level) - 1);
            let mut s = self.rmap[base as usize].head;
            while s != NIL {
                self.prof.add(Work::Sptes, 1);
                if self.sps[s as usize / SPTE_PER_PAGE].role.level == level
                    && self.spt[s as usize] & SPTE_ACCESSED != 0
                {
                    self.spt[s as usize] &= !SPTE_ACCESSED;
                    young = true;
                }
                s = self.slot_links.next(s);
            }
        }
        self.prof.leave();
        young
    }

    /// The host shrinker (`mmu_shrink_scan`): zap up to `nr` pages. Returns pages freed.
    pub fn shrink(&mut self, nr: u64) -> u64 {
        self.prof.enter(KvmFn::MmuShrinkScan);
        let n = if self.n_used > 0 {
            self.zap_oldest(nr)
        } else {
            0
        };
        self.prof.leave();
        self.finish();
        n
    }

    /// `KVM_SET_NR_MMU_PAGES` / `kvm_mmu_change_mmu_pages`: zap down to `goal` if needed.
    pub fn change_mmu_pages(&mut self, goal: u64) -> Result<()> {
        if goal < super::MIN_POOL_PAGES {
            return Err(crate::error::Error::config(
                "kvm.n_max_mmu_pages",
                format!("{goal} is below {}", super::MIN_POOL_PAGES),
            ));
        }
        self.prof.enter(KvmFn::KvmMmuChangeMmuPages);
        let mut goal = goal;
        if self.n_used > goal {
            self.zap_oldest(self.n_used - goal);
            goal = self.n_used.max(goal);
        }
        self.n_max = goal;
        self.prof.leave();
        self.finish();
        Ok(())
    }

    // ----- pool -----

    fn available(&self) -> u64 {
        self.n_max.saturating_sub(self.n_used)
    }

    /// `make_mmu_pages_available`: fewer than 5 free → zap until 25 are free. False when not
    /// even one page is free afterwards.
    fn make_mmu_pages_available(&mut self) -> bool {
        let avail = self.available();
        if avail >= KVM_MIN_FREE_MMU_PAGES {
            return true;
        }
        self.prof.enter(KvmFn::MakeMmuPagesAvailable);
        self.zap_oldest(KVM_REFILL_PAGES - avail);
        self.prof.leave();
        self.available() > 0
    }

    /// `kvm_mmu_zap_oldest_mmu_pages`, FIFO or clock. Returns pages zapped (including unsync
    /// children zapped with them), added to `mmu_recycled`.
    fn zap_oldest(&mut self, nr_to_zap: u64) -> u64 {
        if self.active.is_empty() || nr_to_zap == 0 {
            return 0;
        }
        self.prof.enter(KvmFn::KvmMmuZapOldestMmuPages);
        let total = match self.cfg.eviction {
            Eviction::Fifo => self.zap_fifo(nr_to_zap),
            Eviction::Clock { harvest } => self.zap_clock(nr_to_zap, harvest),
        };
        self.stats.mmu_recycled += total;
        self.prof.leave();
        total
    }

    fn zap_fifo(&mut self, nr_to_zap: u64) -> u64 {
        let mut total = 0;
        let mut cur = self.active.tail;
        while cur != NIL {
            let prev = self.active_links.prev(cur);
            self.prof.add(Work::HandSteps, 1);
            if self.sps[cur as usize].root_count > 0 {
                cur = prev;
                continue;
            }
            let (n, unstable) = self.prepare_zap(cur);
            total += n;
            if total >= nr_to_zap {
                break;
            }
            cur = if unstable { self.active.tail } else { prev };
        }
        total
    }

    /// Seed 000's second chance: the hand goes from the oldest page toward the newest and
    /// wraps; a set reference bit is cleared and the page skipped; with harvesting, set
    /// accessed bits are cleared and the page skipped; the first page with neither is zapped.
    /// At most two laps (2 × list length steps).
    fn zap_clock(&mut self, nr_to_zap: u64, harvest: Harvest) -> u64 {
        let mut total = 0;
        let max_steps = 2 * self.active.len as u64;
        let mut steps = 0;
        let mut cleared_a = false;
        while total < nr_to_zap && steps < max_steps && !self.active.is_empty() {
            if self.hand == NIL {
                self.hand = self.active.tail;
            }
            let sp = self.hand;
            self.hand = self.active_links.prev(sp);
            steps += 1;
            self.stats.lru_hand_steps += 1;
            self.prof.add(Work::HandSteps, 1);
            let p = &mut self.sps[sp as usize];
            if p.root_count > 0 {
                continue;
            }
            if p.referenced {
                p.referenced = false;
                self.stats.lru_ref_skips += 1;
                continue;
            }
            if harvest != Harvest::None && self.test_clear_young(sp, harvest) {
                self.stats.lru_age_skips += 1;
                cleared_a = true;
                continue;
            }
            let (n, _) = self.prepare_zap(sp);
            total += n;
        }
        if cleared_a && total == 0 {
            self.stats.lru_age_flushes += 1;
            self.flush_remote();
        }
        total
    }

    /// Test and clear the hardware accessed bits the clock harvests for page `id`.
    fn test_clear_young(&mut self, id: u32, harvest: Harvest) -> bool {
        let mut young = false;
        match harvest {
            Harvest::None => {}
            Harvest::Leaf => {
                let base = id as usize * SPTE_PER_PAGE;
                for s in &mut self.spt[base..base + SPTE_PER_PAGE] {
                    if spte_present(*s) && spte_leaf(*s) {
                        self.stats.lru_age_sptes += 1;
                        if *s & SPTE_ACCESSED != 0 {
                            *s &= !SPTE_ACCESSED;
                            young = true;
                        }
                    }
                }
                self.prof.add(Work::Sptes, SPTE_PER_PAGE as u64);
            }
            Harvest::Parent => {
                let mut p = self.sps[id as usize].parents.head;
                while p != NIL {
                    self.stats.lru_age_sptes += 1;
                    self.prof.add(Work::Sptes, 1);
                    if self.spt[p as usize] & SPTE_ACCESSED != 0 {
                        self.spt[p as usize] &= !SPTE_ACCESSED;
                        young = true;
                    }
                    p = self.slot_links.next(p);
                }
            }
        }
        young
    }

    // ----- shadow pages -----

    /// `__kvm_mmu_get_shadow_page`: find (`kvm_mmu_find_shadow_page`) or create
    /// (`kvm_mmu_alloc_shadow_page`). Sets the clock reference bit either way.
    fn get_shadow_page<G: GuestMemory>(&mut self, g: &mut G, gfn: u64, role: Role) -> u32 {
        self.prof.enter(KvmFn::KvmMmuGetShadowPage);
        let id = match self.find_shadow_page(g, gfn, role) {
            Some(id) => id,
            None => self.alloc_shadow_page(gfn, role),
        };
        self.sps[id as usize].referenced = true;
        self.prof.leave();
        id
    }

    fn find_shadow_page<G: GuestMemory>(&mut self, g: &mut G, gfn: u64, role: Role) -> Option<u32> {
        let mut cur = self.buckets[hash_bucket(gfn)];
        let mut collisions = 0u64;
        let mut found = None;
        while cur != NIL {
            self.prof.add(Work::HashProbes, 1);
            let next = self.sps[cur as usize].hash_next;
            let sp = &self.sps[cur as usize];
            if sp.gfn != gfn {
                collisions += 1;
                cur = next;
                continue;
            }
            if sp.role != role {
                // A new upper-level page for this gfn: unsync pages of it must go, because
                // the gfn is about to be write-protected.
                if role.level > 1 && sp.unsync {
                    self.prepare_zap(cur);
                }
                cur = next;
                continue;
            }
            if !sp.role.direct {
                if sp.unsync && self.sync_page(g, cur) {
                    self.flush_remote();
                }
                self.sps[cur as usize].write_flooding_count = 0;
            }
            found = Some(cur);
            break;
        }
        if found.is_none() {
            self.stats.mmu_cache_miss += 1;
        }
        self.stats.max_mmu_page_hash_collisions =
            self.stats.max_mmu_page_hash_collisions.max(collisions);
        found
    }

    fn alloc_shadow_page(&mut self, gfn: u64, role: Role) -> u32 {
        self.prof.enter(KvmFn::KvmMmuAllocShadowPage);
        self.prof.add(Work::PagesAllocated, 1);
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.sps[id as usize] = ShadowPage::new(gfn, role);
                id
            }
            None => {
                let id = self.sps.len() as u32;
                self.sps.push(ShadowPage::new(gfn, role));
                self.spt.resize(self.sps.len() * SPTE_PER_PAGE, 0);
                self.slot_links.ensure(self.spt.len());
                self.active_links.ensure(self.sps.len());
                id
            }
        };
        self.active.push_head(&mut self.active_links, id);
        self.n_used += 1;
        self.stats.mmu_pages = self.n_used;
        let b = hash_bucket(gfn);
        self.sps[id as usize].hash_next = self.buckets[b];
        self.buckets[b] = id;
        if !role.direct {
            self.account_shadowed(id);
        }
        self.prof.leave();
        id
    }

    /// `account_shadowed`: write-protect the shadowed guest table (upper levels through the
    /// write tracker) and forbid large mappings over it.
    fn account_shadowed(&mut self, id: u32) {
        self.indirect_shadow_pages += 1;
        let (gfn, level) = (self.sps[id as usize].gfn, self.sps[id as usize].role.level);
        if gfn >= self.cfg.guest_pages {
            return;
        }
        self.lpage_2m[gfn as usize / 512] += 1;
        self.lpage_1g[gfn as usize / (512 * 512)] += 1;
        if level > 1 {
            self.write_track[gfn as usize] += 1;
        }
        if self.write_protect_gfn(gfn) {
            self.flush_remote();
        }
    }

    fn unaccount_shadowed(&mut self, id: u32) {
        self.indirect_shadow_pages -= 1;
        let (gfn, level) = (self.sps[id as usize].gfn, self.sps[id as usize].role.level);
        if gfn >= self.cfg.guest_pages {
            return;
        }
        self.lpage_2m[gfn as usize / 512] -= 1;
        self.lpage_1g[gfn as usize / (512 * 512)] -= 1;
        if level > 1 {
            self.write_track[gfn as usize] -= 1;
        }
    }

    /// `kvm_mmu_slot_gfn_write_protect`: clear W in every leaf SPTE mapping `gfn` (and in the
    /// guest kernel's mapping of it). Returns whether anything changed.
    fn write_protect_gfn(&mut self, gfn: u64) -> bool {
        if gfn >= self.cfg.guest_pages {
            return false;
        }
        self.prof.enter(KvmFn::KvmMmuWriteProtectGfn);
        let mut changed = false;
        for level in 1..=3u8 {
            let base = gfn & !(pages_per_entry(level) - 1);
            let mut s = self.rmap[base as usize].head;
            while s != NIL {
                self.prof.add(Work::Sptes, 1);
                if self.sps[s as usize / SPTE_PER_PAGE].role.level == level
                    && self.spt[s as usize] & SPTE_WRITABLE != 0
                {
                    self.spt[s as usize] &= !SPTE_WRITABLE;
                    changed = true;
                }
                s = self.slot_links.next(s);
            }
        }
        if !self.kmap_is_ro(gfn) {
            self.kmap_ro[gfn as usize / 64] |= 1 << (gfn % 64);
            changed = true;
        }
        self.prof.leave();
        changed
    }

    /// `__kvm_mmu_prepare_zap_page` (+ the commit): zap unsync children, drop leaf SPTEs,
    /// unlink non-leaf children (they stay, orphaned) and parents; free the page unless a vCPU
    /// still holds it as a root. Returns (pages zapped, list unstable).
    fn prepare_zap(&mut self, id: u32) -> (u64, bool) {
        self.prof.enter(KvmFn::KvmMmuPrepareZapPage);
        self.stats.mmu_shadow_zapped += 1;
        let mut nr = self.zap_unsync_children(id);
        // kvm_mmu_page_unlink_children
        let base = id as usize * SPTE_PER_PAGE;
        self.prof.add(Work::Sptes, SPTE_PER_PAGE as u64);
        for slot in base..base + SPTE_PER_PAGE {
            self.zap_pte(slot);
        }
        // kvm_mmu_unlink_parents
        loop {
            let p = self.sps[id as usize].parents.head;
            if p == NIL {
                break;
            }
            self.drop_parent_pte(id, p as usize);
        }
        let unstable = nr > 0;
        let sp = &self.sps[id as usize];
        let was_invalid = sp.invalid;
        if !was_invalid && sp.has_gptes() {
            self.unaccount_shadowed(id);
        }
        if self.sps[id as usize].unsync {
            self.unlink_unsync(id);
        }
        if !was_invalid {
            self.active_remove(id);
            self.hash_remove(id);
        }
        self.sps[id as usize].invalid = true;
        if self.sps[id as usize].root_count == 0 {
            nr += 1;
            let sp = &mut self.sps[id as usize];
            sp.live = false;
            self.free_ids.push(id);
            self.n_used -= 1;
            self.stats.mmu_pages = self.n_used;
            self.prof.add(Work::PagesFreed, 1);
        } else {
            // KVM_REQ_MMU_FREE_OBSOLETE_ROOTS
            self.obsolete_roots = true;
        }
        self.flush_remote();
        self.prof.leave();
        (nr, unstable)
    }

    /// `mmu_zap_unsync_children`.
    fn zap_unsync_children(&mut self, id: u32) -> u64 {
        if self.sps[id as usize].role.level == 1 {
            return 0;
        }
        let mut zapped = 0;
        let mut pages = Vec::new();
        loop {
            pages.clear();
            self.unsync_walk(id, &mut pages);
            if pages.is_empty() {
                break;
            }
            for &c in &pages {
                if self.sps[c as usize].live && !self.sps[c as usize].invalid {
                    self.prepare_zap(c);
                    zapped += 1;
                }
            }
        }
        zapped
    }

    /// `__mmu_unsync_walk`: collect the unsync level-1 pages below `id`, clearing stale bits.
    /// Returns how many were found below `id`.
    fn unsync_walk(&mut self, id: u32, out: &mut Vec<u32>) -> usize {
        let mut found = 0;
        if self.sps[id as usize].unsync_children == 0 {
            return 0;
        }
        for w in 0..8 {
            let mut bits = self.sps[id as usize].unsync_child_bitmap[w];
            while bits != 0 {
                let i = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                self.prof.add(Work::Sptes, 1);
                let s = self.spt[id as usize * SPTE_PER_PAGE + i];
                if !spte_present(s) || spte_leaf(s) {
                    self.sps[id as usize].clear_child_bit(i);
                    continue;
                }
                let c = spte_target(s) as u32;
                if self.sps[c as usize].unsync_children > 0 {
                    let n = self.unsync_walk(c, out);
                    if n == 0 {
                        self.sps[id as usize].clear_child_bit(i);
                    }
                    found += n;
                } else if self.sps[c as usize].unsync {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                    found += 1;
                } else {
                    self.sps[id as usize].clear_child_bit(i);
                }
            }
        }
        found
    }

    /// `mmu_sync_children`: write-protect and resync every unsync page below `id`.
    fn sync_children<G: GuestMemory>(&mut self, g: &mut G, id: u32) {
        self.prof.enter(KvmFn::MmuSyncChildren);
        let mut pages = Vec::new();
        loop {
            pages.clear();
            self.unsync_walk(id, &mut pages);
            if pages.is_empty() {
                break;
            }
            let mut protected = false;
            for &c in &pages {
                let gfn = self.sps[c as usize].gfn;
                protected |= self.write_protect_gfn(gfn);
            }
            if protected {
                self.flush_remote();
            }
            let mut flush = false;
            for &c in &pages {
                self.unlink_unsync(c);
                flush |= self.sync_page(g, c);
            }
            if flush {
                self.flush_remote();
            }
        }
        self.prof.leave();
    }

    fn is_unsync_root(&self, id: u32) -> bool {
        let sp = &self.sps[id as usize];
        sp.unsync || sp.unsync_children > 0
    }

    /// `kvm_mmu_sync_roots` for the current root.
    fn sync_roots<G: GuestMemory>(&mut self, g: &mut G, vcpu: usize) {
        let root = self.vcpus[vcpu].root.sp;
        if root == NIL || !self.is_unsync_root(root) {
            return;
        }
        self.prof.enter(KvmFn::KvmMmuSyncRoots);
        self.sync_children(g, root);
        self.prof.leave();
    }

    /// `kvm_sync_page`: re-read the guest table behind an unsync page and fix its SPTEs.
    /// Returns whether a TLB flush is needed. (Never fails here: `kvm_sync_page_check` always
    /// passes with one paging mode per VM.)
    fn sync_page<G: GuestMemory>(&mut self, g: &mut G, id: u32) -> bool {
        self.prof.enter(KvmFn::KvmSyncPage);
        self.stats.sync_pages += 1;
        let mut flush = false;
        self.prof.add(Work::Sptes, SPTE_PER_PAGE as u64);
        for i in 0..SPTE_PER_PAGE {
            if self.spt[id as usize * SPTE_PER_PAGE + i] != 0 {
                flush |= self.sync_spte(g, id, i) != 0;
            }
        }
        self.prof.leave();
        flush
    }

    /// `FNAME(sync_spte)`: 1 if the SPTE was dropped or changed.
    fn sync_spte<G: GuestMemory>(&mut self, g: &mut G, id: u32, i: usize) -> i32 {
        let slot = id as usize * SPTE_PER_PAGE + i;
        let old = self.spt[slot];
        if !spte_present(old) {
            return 0;
        }
        let sp_gfn = self.sps[id as usize].gfn;
        let gpte = g.read_gpte(sp_gfn, i);
        self.prof.add(Work::GptesRead, 1);
        if !gpte.present() || !gpte.accessed() {
            self.drop_spte(slot);
            return 1;
        }
        let gfn = gpte.gfn();
        let access = protect_clean(self.sps[id as usize].role.access & gpte_access(gpte), gpte);
        if gfn != spte_target(old) || gfn >= self.cfg.guest_pages {
            self.drop_spte(slot);
            return 1;
        }
        if shadowed_access(old) == access {
            return 0;
        }
        let (_, new) = self.make_spte(access, gfn, old, true, false);
        let new = (new & !SPTE_ACCESSED) | (old & SPTE_ACCESSED);
        self.spt[slot] = new;
        1
    }

    fn unlink_unsync(&mut self, id: u32) {
        self.sps[id as usize].unsync = false;
        self.stats.mmu_unsync -= 1;
    }

    /// `mmu_try_to_unsync_pages`: true if `gfn` may be mapped writable (its level-1 shadow
    /// pages, if any, are now unsync), false if the SPTE must stay read-only.
    fn try_to_unsync(&mut self, gfn: u64, can_unsync: bool, prefetch: bool) -> bool {
        if self.write_tracked(gfn) {
            return false;
        }
        let mut cur = self.buckets[hash_bucket(gfn)];
        while cur != NIL {
            self.prof.add(Work::HashProbes, 1);
            let next = self.sps[cur as usize].hash_next;
            let sp = &self.sps[cur as usize];
            if sp.gfn == gfn && sp.has_gptes() && !sp.invalid {
                if !can_unsync {
                    return false;
                }
                if !sp.unsync {
                    if prefetch {
                        return false;
                    }
                    // kvm_unsync_page
                    self.sps[cur as usize].unsync = true;
                    self.stats.mmu_unsync += 1;
                    self.stats.unsync_events += 1;
                    self.mark_parents_unsync(cur);
                }
            }
            cur = next;
        }
        true
    }

    fn mark_parents_unsync(&mut self, id: u32) {
        let mut p = self.sps[id as usize].parents.head;
        while p != NIL {
            let next = self.slot_links.next(p);
            self.mark_unsync(p as usize);
            p = next;
        }
    }

    /// `mark_unsync`: flag the parent entry `slot` as leading to unsync pages.
    fn mark_unsync(&mut self, slot: usize) {
        let id = (slot / SPTE_PER_PAGE) as u32;
        let sp = &mut self.sps[id as usize];
        if sp.set_child_bit(slot % SPTE_PER_PAGE) {
            return;
        }
        sp.unsync_children += 1;
        if sp.unsync_children > 1 {
            return;
        }
        self.mark_parents_unsync(id);
    }

    fn hash_remove(&mut self, id: u32) {
        let b = hash_bucket(self.sps[id as usize].gfn);
        let next = self.sps[id as usize].hash_next;
        if self.buckets[b] == id {
            self.buckets[b] = next;
            return;
        }
        let mut cur = self.buckets[b];
        while cur != NIL {
            let n = self.sps[cur as usize].hash_next;
            if n == id {
                self.sps[cur as usize].hash_next = next;
                return;
            }
            cur = n;
        }
    }

    /// Remove from `active_mmu_pages`, moving the clock hand off the page first (the fork's
    /// `kvm_mmu_clock_hand_unlink`).
    fn active_remove(&mut self, id: u32) {
        if self.hand == id {
            self.hand = self.active_links.prev(id);
        }
        self.active.remove(&mut self.active_links, id);
    }

    // ----- SPTEs -----

    /// `mmu_page_zap_pte`: drop a leaf, or unlink a child page (leaving it orphaned).
    fn zap_pte(&mut self, slot: usize) {
        let s = self.spt[slot];
        if !spte_present(s) {
            return;
        }
        if spte_leaf(s) {
            self.drop_spte(slot);
        } else {
            self.drop_parent_pte(spte_target(s) as u32, slot);
        }
    }

    /// `drop_spte` of a leaf: clear it and remove it from its gfn's rmap.
    fn drop_spte(&mut self, slot: usize) {
        let s = self.spt[slot];
        if !spte_present(s) {
            return;
        }
        debug_assert!(spte_leaf(s));
        let gfn = spte_target(s);
        self.rmap[gfn as usize].remove(&mut self.slot_links, slot as u32);
        self.sps[slot / SPTE_PER_PAGE].n_leaves -= 1;
        self.spt[slot] = 0;
        self.remote_flush = true;
    }

    /// `drop_parent_pte`.
    fn drop_parent_pte(&mut self, child: u32, slot: usize) {
        self.sps[child as usize]
            .parents
            .remove(&mut self.slot_links, slot as u32);
        self.spt[slot] = 0;
    }

    /// `link_shadow_page`.
    fn link_shadow_page(&mut self, slot: usize, child: u32) {
        if spte_present(self.spt[slot]) {
            // drop_large_spte
            self.drop_spte(slot);
        }
        self.spt[slot] = make_nonleaf(child);
        self.sps[child as usize]
            .parents
            .push_head(&mut self.slot_links, slot as u32);
        let c = &self.sps[child as usize];
        if c.unsync || c.unsync_children > 0 {
            self.mark_unsync(slot);
        }
    }

    /// `make_spte` for a leaf: returns (write-protected, SPTE). The shadowed access is kept in
    /// the SPTE (`kvm_mmu_page_set_access`), the W bit only if the unsync rules allow it.
    fn make_spte(
        &mut self,
        access: u8,
        gfn: u64,
        old: u64,
        prefetch: bool,
        can_unsync: bool,
    ) -> (bool, u64) {
        let mut writable = access & ACC_WRITE != 0;
        let mut wrprot = false;
        if writable
            && !(spte_present(old) && old & SPTE_WRITABLE != 0)
            && !self.try_to_unsync(gfn, can_unsync, prefetch)
        {
            wrprot = true;
            writable = false;
        }
        (
            wrprot,
            make_leaf(gfn, access, writable, !prefetch) | (access as u64) << ACCESS_SHIFT,
        )
    }

    /// `mmu_set_spte`: install a leaf at `slot`. `fault` is `Some(write)` for the faulting
    /// entry, `None` for a prefetch.
    fn mmu_set_spte(&mut self, slot: usize, access: u8, gfn: u64, fault: Option<bool>) -> Ret {
        self.prof.enter(KvmFn::MmuSetSpte);
        self.prof.add(Work::Sptes, 1);
        let id = slot / SPTE_PER_PAGE;
        let level = self.sps[id].role.level;
        let prefetch = fault.is_none();
        let write_fault = fault == Some(true);
        let mut was_rmapped = false;
        let old = self.spt[slot];
        if spte_present(old) {
            if level > 1 && !spte_leaf(old) {
                self.drop_parent_pte(spte_target(old) as u32, slot);
                self.remote_flush = true;
            } else if spte_target(old) != gfn {
                self.drop_spte(slot);
            } else {
                was_rmapped = true;
            }
        }
        let old = self.spt[slot];
        let (wrprot, new) = self.make_spte(access, gfn, old, prefetch, true);
        let mut ret = Ret::Fixed;
        if new == old {
            ret = Ret::Spurious;
        } else {
            if spte_present(old) && old & SPTE_WRITABLE != 0 && new & SPTE_WRITABLE == 0 {
                self.remote_flush = true;
            }
            self.spt[slot] = new;
        }
        if wrprot && write_fault {
            ret = Ret::Emulate;
        }
        if !was_rmapped {
            self.rmap[gfn as usize].push_head(&mut self.slot_links, slot as u32);
            self.sps[id].n_leaves += 1;
        }
        if !prefetch {
            // Seed 000: "marking on fill".
            self.sps[id].referenced = true;
        }
        self.prof.leave();
        ret
    }

    // ----- the fault path -----

    /// `FNAME(walk_addr_generic)`; `None` = a guest page fault.
    fn walk_addr<G: GuestMemory>(
        &mut self,
        g: &mut G,
        vcpu: usize,
        gva: u64,
        write: bool,
        user: bool,
    ) -> Option<Walker> {
        self.prof.enter(KvmFn::Paging64WalkAddr);
        let r = self.walk_addr_inner(g, vcpu, gva, write, user);
        self.prof.leave();
        r
    }

    fn walk_addr_inner<G: GuestMemory>(
        &mut self,
        g: &mut G,
        vcpu: usize,
        gva: u64,
        write: bool,
        user: bool,
    ) -> Option<Walker> {
        let mut w = Walker::default();
        let mut table = self.vcpus[vcpu].cr3?.0;
        let mut pt_access = ACC_ALL;
        let mut all_accessed = true;
        let mut ptes = [GuestPte(0); 5];
        let mut level = self.cfg.levels;
        let leaf = loop {
            if table >= self.cfg.guest_pages {
                return None;
            }
            let idx = pt_index(gva, level);
            w.table_gfn[level as usize - 1] = table;
            w.pt_access[level as usize - 1] = pt_access;
            let pte = g.read_gpte(table, idx);
            self.prof.add(Work::GptesRead, 1);
            if !pte.present() {
                return None;
            }
            ptes[level as usize - 1] = pte;
            all_accessed &= pte.accessed();
            pt_access &= gpte_access(pte);
            if level == 1 || (level <= 3 && pte.large()) {
                break pte;
            }
            table = pte.gfn();
            level -= 1;
        };
        w.level = level;
        w.pte_access = pt_access;
        if (write && pt_access & ACC_WRITE == 0) || (user && pt_access & ACC_USER == 0) {
            return None;
        }
        let span = pages_per_entry(level);
        w.gfn = (leaf.gfn() & !(span - 1)) + ((gva >> 12) & (span - 1));
        let ad_ok = all_accessed && (!write || leaf.dirty());
        if !write {
            w.pte_access = protect_clean(w.pte_access, leaf);
        }
        if !ad_ok {
            // FNAME(update_accessed_dirty_bits), through the host mapping (not trapped).
            for l in (level..=self.cfg.levels).rev() {
                let mut pte = ptes[l as usize - 1];
                let mut new = pte.0 | GuestPte::ACCESSED;
                if l == level && write {
                    new |= GuestPte::DIRTY;
                }
                if new != pte.0 {
                    pte.0 = new;
                    g.write_gpte(w.table_gfn[l as usize - 1], pt_index(gva, l), pte);
                    self.prof.add(Work::GptesWritten, 1);
                }
            }
        }
        Some(w)
    }

    fn shadow_leaf_present(&self, vcpu: usize, gva: u64) -> bool {
        let mut id = self.vcpus[vcpu].root.sp;
        let mut level = self.cfg.levels;
        while id != NIL {
            let s = self.spt[id as usize * SPTE_PER_PAGE + pt_index(gva, level)];
            if !spte_present(s) {
                return false;
            }
            if spte_leaf(s) {
                return true;
            }
            id = spte_target(s) as u32;
            level -= 1;
        }
        false
    }

    /// `shadow_page_table_clear_flood`.
    fn clear_flood_on_path(&mut self, vcpu: usize, gva: u64) {
        let mut id = self.vcpus[vcpu].root.sp;
        let mut level = self.cfg.levels;
        while id != NIL {
            self.sps[id as usize].write_flooding_count = 0;
            let s = self.spt[id as usize * SPTE_PER_PAGE + pt_index(gva, level)];
            if !spte_present(s) || spte_leaf(s) {
                break;
            }
            id = spte_target(s) as u32;
            level -= 1;
        }
    }

    /// The largest level at which `gfn` may be mapped (`kvm_mmu_max_mapping_level` with the
    /// memslot's `disallow_lpage` counts).
    fn max_mapping_level(&self, gfn: u64, max: u8) -> u8 {
        let mut level = max.min(3);
        while level > 1 {
            let base = gfn & !(pages_per_entry(level) - 1);
            let fits = base + pages_per_entry(level) <= self.cfg.guest_pages;
            let clear = match level {
                2 => self.lpage_2m[gfn as usize / 512] == 0,
                _ => self.lpage_1g[gfn as usize / (512 * 512)] == 0,
            };
            if fits && clear {
                break;
            }
            level -= 1;
        }
        level
    }

    /// `FNAME(fetch)`.
    fn fetch<G: GuestMemory>(
        &mut self,
        g: &mut G,
        vcpu: usize,
        gva: u64,
        w: &Walker,
        write: bool,
        host_level: u8,
    ) -> Ret {
        self.prof.enter(KvmFn::Paging64Fetch);
        let mut id = self.vcpus[vcpu].root.sp;
        let mut level = self.cfg.levels;
        // Indirect levels: one shadow page per guest table on the path.
        loop {
            self.sps[id as usize].write_flooding_count = 0;
            if level == w.level {
                break;
            }
            let slot = id as usize * SPTE_PER_PAGE + pt_index(gva, level);
            self.prof.add(Work::Sptes, 1);
            let s = self.spt[slot];
            let child = if spte_present(s) && !spte_leaf(s) {
                spte_target(s) as u32
            } else {
                let role = Role {
                    level: level - 1,
                    direct: false,
                    access: w.pt_access[level as usize - 2],
                };
                let c = self.get_shadow_page(g, w.table_gfn[level as usize - 2], role);
                if self.sps[c as usize].unsync_children > 0 {
                    self.sync_children(g, c);
                }
                self.link_shadow_page(slot, c);
                c
            };
            id = child;
            level -= 1;
        }
        // kvm_mmu_hugepage_adjust
        let goal = if w.level > 1 {
            self.max_mapping_level(w.gfn, w.level.min(host_level))
        } else {
            1
        };
        // Direct levels: a guest large page mapped with smaller host entries.
        while level > goal {
            let slot = id as usize * SPTE_PER_PAGE + pt_index(gva, level);
            self.prof.add(Work::Sptes, 1);
            let s = self.spt[slot];
            // validate_direct_spte
            if spte_present(s)
                && !spte_leaf(s)
                && self.sps[spte_target(s) as usize].role.access != w.pte_access
            {
                self.drop_parent_pte(spte_target(s) as u32, slot);
                self.remote_flush = true;
            }
            let s = self.spt[slot];
            let child = if spte_present(s) && !spte_leaf(s) {
                spte_target(s) as u32
            } else {
                let base_gfn = w.gfn & !(pages_per_entry(level) - 1);
                let role = Role {
                    level: level - 1,
                    direct: true,
                    access: w.pte_access,
                };
                let c = self.get_shadow_page(g, base_gfn, role);
                self.link_shadow_page(slot, c);
                c
            };
            id = child;
            level -= 1;
        }
        let slot = id as usize * SPTE_PER_PAGE + pt_index(gva, level);
        let base_gfn = w.gfn & !(pages_per_entry(level) - 1);
        let ret = self.mmu_set_spte(slot, w.pte_access, base_gfn, Some(write));
        if ret != Ret::Spurious && level == 1 && self.cfg.prefetch {
            self.pte_prefetch(g, slot);
        }
        self.prof.leave();
        ret
    }

    /// `FNAME(pte_prefetch)` (and `__direct_pte_prefetch` for direct pages): fill the
    /// non-present entries of the aligned group of 8 around the faulting one from accessed
    /// guest PTEs whose host page is present; stop at the first that cannot be prefetched.
    fn pte_prefetch<G: GuestMemory>(&mut self, g: &mut G, fault_slot: usize) {
        let id = fault_slot / SPTE_PER_PAGE;
        if self.sps[id].role.level > 1 {
            return;
        }
        self.prof.enter(KvmFn::Paging64PtePrefetch);
        let first = fault_slot & !(PTE_PREFETCH_NUM - 1);
        let direct = self.sps[id].role.direct;
        if !direct {
            self.prof.add(Work::GptesRead, PTE_PREFETCH_NUM as u64);
        }
        for slot in first..first + PTE_PREFETCH_NUM {
            if slot == fault_slot || spte_present(self.spt[slot]) {
                continue;
            }
            let i = slot % SPTE_PER_PAGE;
            let (gfn, access) = if direct {
                (self.sps[id].gfn + i as u64, self.sps[id].role.access)
            } else {
                let gpte = g.read_gpte(self.sps[id].gfn, i);
                if !gpte.present() || !gpte.accessed() {
                    break;
                }
                (
                    gpte.gfn(),
                    protect_clean(self.sps[id].role.access & gpte_access(gpte), gpte),
                )
            };
            if gfn >= self.cfg.guest_pages || !g.host_present(gfn) {
                break;
            }
            self.mmu_set_spte(slot, access, gfn, None);
            self.stats.prefetched += 1;
        }
        self.prof.leave();
    }

    // ----- write tracking -----

    /// `kvm_mmu_track_write`: an emulated store of `new` into entry `index` of guest table
    /// `gfn`. Each shadow page of the gfn either counts a flooding write (levels > 1; the
    /// third in a row zaps it) or has the written entry zapped.
    fn track_write<G: GuestMemory>(
        &mut self,
        _g: &mut G,
        _vcpu: usize,
        gfn: u64,
        index: usize,
        new: GuestPte,
    ) {
        if self.indirect_shadow_pages == 0 {
            return;
        }
        self.prof.enter(KvmFn::KvmMmuTrackWrite);
        self.stats.mmu_pte_write += 1;
        let mut pages = Vec::new();
        let mut cur = self.buckets[hash_bucket(gfn)];
        while cur != NIL {
            self.prof.add(Work::HashProbes, 1);
            let sp = &self.sps[cur as usize];
            if sp.gfn == gfn && sp.has_gptes() && !sp.invalid {
                pages.push(cur);
            }
            cur = sp.hash_next;
        }
        let mut flush = false;
        for id in pages {
            let sp = &mut self.sps[id as usize];
            if !sp.live || sp.invalid {
                continue;
            }
            // detect_write_flooding (level-1 pages can go unsync instead)
            if sp.role.level > 1 {
                sp.write_flooding_count = sp.write_flooding_count.saturating_add(1);
                if sp.write_flooding_count >= 3 {
                    self.prepare_zap(id);
                    self.stats.mmu_flooded += 1;
                    continue;
                }
            }
            let slot = id as usize * SPTE_PER_PAGE + index;
            let present = spte_present(self.spt[slot]);
            self.prof.add(Work::Sptes, 1);
            self.zap_pte(slot);
            if new.0 != 0 && self.sps[id as usize].role.level > 1 {
                self.stats.mmu_pde_zapped += 1;
            }
            flush |= present;
        }
        if flush {
            self.flush_remote();
        }
        self.prof.leave();
    }

    /// `kvm_mmu_unprotect_page`: zap every shadow page of `gfn`.
    fn unprotect_page(&mut self, gfn: u64) -> bool {
        self.prof.enter(KvmFn::KvmMmuUnprotectPage);
        let mut any = false;
        loop {
            let mut cur = self.buckets[hash_bucket(gfn)];
            let mut victim = NIL;
            while cur != NIL {
                self.prof.add(Work::HashProbes, 1);
                let sp = &self.sps[cur as usize];
                if sp.gfn == gfn && sp.has_gptes() && !sp.invalid {
                    victim = cur;
                    break;
                }
                cur = sp.hash_next;
            }
            if victim == NIL {
                break;
            }
            self.prepare_zap(victim);
            any = true;
        }
        self.prof.leave();
        any
    }

    // ----- roots -----

    /// `kvm_mmu_new_pgd` → `fast_pgd_switch`.
    fn new_pgd(&mut self, vcpu: usize, pgd: (u64, u16)) {
        self.prof.enter(KvmFn::KvmMmuNewPgd);
        let usable = |s: &Self, r: RootInfo| {
            r.sp != NIL
                && r.pgd == pgd
                && !s.sps[r.sp as usize].invalid
                && s.sps[r.sp as usize].role.level == s.cfg.levels
        };
        let found = if self.vcpus[vcpu].root.sp != NIL {
            // cached_root_find_and_keep_current: rotate through the cache.
            let mut hit = usable(self, self.vcpus[vcpu].root);
            let mut i = 0;
            while !hit && i < KVM_MMU_NUM_PREV_ROOTS {
                let v = &mut self.vcpus[vcpu];
                std::mem::swap(&mut v.root, &mut v.prev[i]);
                hit = usable(self, self.vcpus[vcpu].root);
                i += 1;
            }
            if !hit {
                self.free_root(vcpu, None);
            }
            hit
        } else {
            // cached_root_find_without_current
            let mut hit = false;
            for i in 0..KVM_MMU_NUM_PREV_ROOTS {
                if usable(self, self.vcpus[vcpu].prev[i]) {
                    let v = &mut self.vcpus[vcpu];
                    v.root = v.prev[i];
                    for j in i..KVM_MMU_NUM_PREV_ROOTS - 1 {
                        v.prev[j] = v.prev[j + 1];
                    }
                    v.prev[KVM_MMU_NUM_PREV_ROOTS - 1] = NO_ROOT;
                    hit = true;
                    break;
                }
            }
            hit
        };
        if found {
            self.stats.cr3_cached_root_hits += 1;
            let r = self.vcpus[vcpu].root.sp;
            self.sps[r as usize].write_flooding_count = 0;
        }
        self.prof.leave();
    }

    /// `mmu_free_root_page` of the current root (`None`) or cached root `Some(i)`.
    fn free_root(&mut self, vcpu: usize, which: Option<usize>) {
        let r = match which {
            None => std::mem::replace(&mut self.vcpus[vcpu].root, NO_ROOT),
            Some(i) => std::mem::replace(&mut self.vcpus[vcpu].prev[i], NO_ROOT),
        };
        if r.sp == NIL {
            return;
        }
        self.prof.enter(KvmFn::KvmMmuFreeRoots);
        let sp = &mut self.sps[r.sp as usize];
        sp.root_count -= 1;
        if sp.root_count == 0 && sp.invalid {
            self.prepare_zap(r.sp);
        }
        self.prof.leave();
    }

    /// `kvm_mmu_free_obsolete_roots` on every vCPU.
    fn free_obsolete_roots(&mut self) {
        if !std::mem::take(&mut self.obsolete_roots) {
            return;
        }
        for v in 0..self.vcpus.len() {
            if self.vcpus[v].root.sp != NIL && self.sps[self.vcpus[v].root.sp as usize].invalid {
                self.free_root(v, None);
            }
            for i in 0..KVM_MMU_NUM_PREV_ROOTS {
                let r = self.vcpus[v].prev[i].sp;
                if r != NIL && self.sps[r as usize].invalid {
                    self.free_root(v, Some(i));
                }
            }
        }
    }

    fn flush_remote(&mut self) {
        self.prof.enter(KvmFn::KvmFlushRemoteTlbs);
        self.stats.remote_tlb_flush += 1;
        self.remote_flush = true;
        self.prof.leave();
    }

    /// End of a public operation: the requests KVM would serve at the next VM entry.
    fn finish(&mut self) {
        if self.prof.depth() == 0 {
            self.free_obsolete_roots();
        }
    }

    // ----- invariants -----

    /// Recount every invariant: pool accounting, list/hash membership, parent links vs
    /// non-leaf SPTEs, rmaps vs leaf SPTEs, unsync bookkeeping, write tracking, root counts.
    pub fn validate(&self) -> std::result::Result<(), String> {
        let live: Vec<u32> = (0..self.sps.len() as u32)
            .filter(|&i| self.sps[i as usize].live)
            .collect();
        if live.len() as u64 != self.n_used {
            return Err(format!(
                "n_used {} but {} live pages",
                self.n_used,
                live.len()
            ));
        }
        let on_active: std::collections::HashSet<u32> =
            self.active.iter(&self.active_links).collect();
        if on_active.len() != self.active.len as usize {
            return Err("active list length mismatch".into());
        }
        let mut unsync = 0;
        let mut track = vec![0u16; self.write_track.len()];
        let mut indirect = 0;
        let mut leaves_per_gfn: std::collections::HashMap<u64, u32> = Default::default();
        let mut root_refs: std::collections::HashMap<u32, u32> = Default::default();
        for v in &self.vcpus {
            for r in std::iter::once(&v.root).chain(v.prev.iter()) {
                if r.sp != NIL {
                    *root_refs.entry(r.sp).or_default() += 1;
                }
            }
        }
        for &id in &live {
            let sp = &self.sps[id as usize];
            if sp.invalid == on_active.contains(&id) {
                return Err(format!("page {id}: invalid={} but on list", sp.invalid));
            }
            if sp.invalid && sp.root_count == 0 {
                return Err(format!("page {id}: invalid, no root refs, still live"));
            }
            if !sp.invalid && self.lookup(sp.gfn, sp.role) != Some(id) {
                return Err(format!("page {id}: not found in hash"));
            }
            if sp.root_count != root_refs.get(&id).copied().unwrap_or(0) {
                return Err(format!("page {id}: root_count {}", sp.root_count));
            }
            if sp.unsync {
                unsync += 1;
                if sp.role.level != 1 || sp.role.direct {
                    return Err(format!("page {id}: unsync at level {}", sp.role.level));
                }
            }
            if !sp.invalid && sp.has_gptes() {
                indirect += 1;
                if sp.role.level > 1 && (sp.gfn as usize) < track.len() {
                    track[sp.gfn as usize] += 1;
                }
            }
            let bits: u32 = sp.unsync_child_bitmap.iter().map(|w| w.count_ones()).sum();
            if bits != sp.unsync_children as u32 {
                return Err(format!(
                    "page {id}: unsync_children {} bits {bits}",
                    sp.unsync_children
                ));
            }
            // parents point at this page
            let mut n_par = 0;
            for p in sp.parents.iter(&self.slot_links) {
                let s = self.spt[p as usize];
                if !spte_present(s) || spte_leaf(s) || spte_target(s) as u32 != id {
                    return Err(format!("page {id}: parent slot {p} does not point here"));
                }
                if self.sps[p as usize / SPTE_PER_PAGE].role.level != sp.role.level + 1 {
                    return Err(format!("page {id}: parent at wrong level"));
                }
                n_par += 1;
            }
            let mut n_leaves = 0;
            for i in 0..SPTE_PER_PAGE {
                let s = self.spt[id as usize * SPTE_PER_PAGE + i];
                if !spte_present(s) {
                    continue;
                }
                if spte_leaf(s) {
                    n_leaves += 1;
                    *leaves_per_gfn.entry(spte_target(s)).or_default() += 1;
                } else {
                    let c = spte_target(s) as u32;
                    if !self.sps.get(c as usize).is_some_and(|c| c.live) {
                        return Err(format!("page {id}[{i}] points at dead page {c}"));
                    }
                    if sp.role.level == 1 {
                        return Err(format!("page {id}: non-leaf at level 1"));
                    }
                }
            }
            if n_leaves != sp.n_leaves {
                return Err(format!(
                    "page {id}: n_leaves {} counted {n_leaves}",
                    sp.n_leaves
                ));
            }
            let _ = n_par;
        }
        for (gfn, n) in leaves_per_gfn {
            if self.rmap[gfn as usize].len != n {
                return Err(format!(
                    "gfn {gfn}: rmap {} leaves {n}",
                    self.rmap[gfn as usize].len
                ));
            }
        }
        if unsync != self.stats.mmu_unsync {
            return Err(format!(
                "mmu_unsync {} counted {unsync}",
                self.stats.mmu_unsync
            ));
        }
        if indirect != self.indirect_shadow_pages {
            return Err(format!(
                "indirect_shadow_pages {} counted {indirect}",
                self.indirect_shadow_pages
            ));
        }
        if track != self.write_track {
            return Err("write_track counts differ from upper-level pages".into());
        }
        if self.hand != NIL && !on_active.contains(&self.hand) {
            return Err("clock hand off the list".into());
        }
        Ok(())
    }
}

const ACCESS_SHIFT: u32 = 8;

/// The guest access recorded with a leaf (`kvm_mmu_page_get_access`).
#[inline]
fn shadowed_access(s: u64) -> u8 {
    ((s >> ACCESS_SHIFT) & 7) as u8
}

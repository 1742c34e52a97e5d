//! KVM's statistics and a per-handler work profile.
//!
//! Counter names are KVM's (`struct kvm_vm_stat`, `struct kvm_vcpu_stat` in
//! arch/x86/include/asm/kvm_host.h, plus the seed-000 fork's `lru_*` stats). The profile
//! records, per call stack of modelled KVM functions, how many calls and how many elementary
//! operations of each [`Work`] kind were done; the timing layer turns those into time and
//! writes folded stacks for flame graphs.

use std::collections::HashMap;

/// Counters named as KVM's statistics. All cumulative unless marked "gauge".
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct KvmStats {
    /// Shadow page faults taken (`pf_taken`, counted in `kvm_mmu_do_page_fault`).
    pub pf_taken: u64,
    /// Faults fixed by installing an SPTE (`pf_fixed`).
    pub pf_fixed: u64,
    /// Faults that needed instruction emulation (`pf_emulate`).
    pub pf_emulate: u64,
    /// Faults whose SPTE was already what the fault asked for (`pf_spurious`).
    pub pf_spurious: u64,
    /// Faults reflected to the guest as a guest #PF (`kvm_inject_emulated_page_fault`).
    pub pf_guest: u64,
    /// Shadow pages zapped by any path (`mmu_shadow_zapped`).
    pub mmu_shadow_zapped: u64,
    /// Pages freed by `kvm_mmu_zap_oldest_mmu_pages` (`mmu_recycled`).
    pub mmu_recycled: u64,
    /// Emulated guest writes to write-tracked page-table pages (`mmu_pte_write`).
    pub mmu_pte_write: u64,
    /// Shadow pages zapped for write flooding (`mmu_flooded`).
    pub mmu_flooded: u64,
    /// Emulated writes that zapped an upper-level entry with a non-zero new value
    /// (`mmu_pde_zapped`).
    pub mmu_pde_zapped: u64,
    /// Gauge: shadow pages currently unsync (`mmu_unsync`, incremented in `kvm_unsync_page`,
    /// decremented in `kvm_unlink_unsync_page`).
    pub mmu_unsync: u64,
    /// Cumulative count of `kvm_unsync_page` calls (not a KVM stat; KVM's is the gauge above).
    pub unsync_events: u64,
    /// `kvm_sync_page` calls.
    pub sync_pages: u64,
    /// Hash lookups that found no shadow page (`mmu_cache_miss`).
    pub mmu_cache_miss: u64,
    /// Longest hash chain walked (`max_mmu_page_hash_collisions`).
    pub max_mmu_page_hash_collisions: u64,
    /// Gauge: shadow pages accounted to the pool (`mmu_pages` / `n_used_mmu_pages`).
    pub mmu_pages: u64,
    /// SPTEs installed by `FNAME(pte_prefetch)`.
    pub prefetched: u64,
    /// `kvm_flush_remote_tlbs` calls (`remote_tlb_flush`).
    pub remote_tlb_flush: u64,
    /// Guest TLB flushes handled (`tlb_flush`, `kvm_vcpu_flush_tlb_guest`).
    pub tlb_flush: u64,
    /// `kvm_mmu_invlpg` calls (`invlpg`).
    pub invlpg: u64,
    /// CR3 loads handled (`kvm_set_cr3`).
    pub cr3_loads: u64,
    /// CR3 loads that reused a cached root (`fast_pgd_switch` hit).
    pub cr3_cached_root_hits: u64,
    /// Clock: hand steps (`lru_hand_steps` in the seed-000 fork).
    pub lru_hand_steps: u64,
    /// Clock: pages skipped because their reference bit was set (`lru_ref_skips`).
    pub lru_ref_skips: u64,
    /// Clock: SPTEs whose accessed bit was examined (`lru_age_sptes`).
    pub lru_age_sptes: u64,
    /// Clock: pages skipped because a harvested accessed bit was set (`lru_age_skips`).
    pub lru_age_skips: u64,
    /// Clock: sweeps that cleared accessed bits but zapped nothing, then flushed
    /// (`lru_age_flushes`).
    pub lru_age_flushes: u64,
}

impl KvmStats {
    /// Add another VM's counters (gauges add up over VMs; the longest hash chain is a max).
    pub fn add(&mut self, o: &KvmStats) {
        crate::util::add_fields!(self, o;
            pf_taken, pf_fixed, pf_emulate, pf_spurious, pf_guest, mmu_shadow_zapped,
            mmu_recycled, mmu_pte_write, mmu_flooded, mmu_pde_zapped, mmu_unsync,
            unsync_events, sync_pages, mmu_cache_miss, mmu_pages, prefetched,
            remote_tlb_flush, tlb_flush, invlpg, cr3_loads, cr3_cached_root_hits,
            lru_hand_steps, lru_ref_skips, lru_age_sptes, lru_age_skips, lru_age_flushes;
            max: max_mmu_page_hash_collisions);
    }
}

/// KVM functions whose work is recorded, named as in Linux 6.8 (`paging64_*` is the
/// `FNAME()` expansion of paging_tmpl.h for 64-bit guests).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum KvmFn {
    KvmMmuPageFault = 1,
    Paging64PageFault,
    Paging64WalkAddr,
    KvmMmuFaultinPfn,
    MakeMmuPagesAvailable,
    KvmMmuZapOldestMmuPages,
    KvmMmuPrepareZapPage,
    Paging64Fetch,
    KvmMmuGetShadowPage,
    KvmMmuAllocShadowPage,
    MmuSetSpte,
    Paging64PtePrefetch,
    KvmSyncPage,
    MmuSyncChildren,
    KvmMmuSyncRoots,
    X86EmulateInstruction,
    KvmMmuTrackWrite,
    KvmMmuUnprotectPage,
    KvmMmuInvlpg,
    KvmSetCr3,
    KvmMmuNewPgd,
    MmuAllocShadowRoots,
    KvmMmuFreeRoots,
    KvmVcpuFlushTlbGuest,
    KvmUnmapGfnRange,
    KvmAgeGfn,
    MmuShrinkScan,
    KvmMmuChangeMmuPages,
    KvmFlushRemoteTlbs,
    KvmMmuWriteProtectGfn,
}

impl KvmFn {
    pub const COUNT: usize = 30;
    pub fn name(self) -> &'static str {
        use KvmFn::*;
        match self {
            KvmMmuPageFault => "kvm_mmu_page_fault",
            Paging64PageFault => "paging64_page_fault",
            Paging64WalkAddr => "paging64_walk_addr_generic",
            KvmMmuFaultinPfn => "kvm_mmu_faultin_pfn",
            MakeMmuPagesAvailable => "make_mmu_pages_available",
            KvmMmuZapOldestMmuPages => "kvm_mmu_zap_oldest_mmu_pages",
            KvmMmuPrepareZapPage => "__kvm_mmu_prepare_zap_page",
            Paging64Fetch => "paging64_fetch",
            KvmMmuGetShadowPage => "__kvm_mmu_get_shadow_page",
            KvmMmuAllocShadowPage => "kvm_mmu_alloc_shadow_page",
            MmuSetSpte => "mmu_set_spte",
            Paging64PtePrefetch => "paging64_pte_prefetch",
            KvmSyncPage => "kvm_sync_page",
            MmuSyncChildren => "mmu_sync_children",
            KvmMmuSyncRoots => "kvm_mmu_sync_roots",
            X86EmulateInstruction => "x86_emulate_instruction",
            KvmMmuTrackWrite => "kvm_mmu_track_write",
            KvmMmuUnprotectPage => "kvm_mmu_unprotect_page",
            KvmMmuInvlpg => "kvm_mmu_invlpg",
            KvmSetCr3 => "kvm_set_cr3",
            KvmMmuNewPgd => "kvm_mmu_new_pgd",
            MmuAllocShadowRoots => "mmu_alloc_shadow_roots",
            KvmMmuFreeRoots => "kvm_mmu_free_roots",
            KvmVcpuFlushTlbGuest => "kvm_vcpu_flush_tlb_guest",
            KvmUnmapGfnRange => "kvm_unmap_gfn_range",
            KvmAgeGfn => "kvm_age_gfn",
            MmuShrinkScan => "mmu_shrink_scan",
            KvmMmuChangeMmuPages => "kvm_mmu_change_mmu_pages",
            KvmFlushRemoteTlbs => "kvm_flush_remote_tlbs",
            KvmMmuWriteProtectGfn => "kvm_mmu_slot_gfn_write_protect",
        }
    }
    fn from_u8(x: u8) -> Option<KvmFn> {
        use KvmFn::*;
        const ALL: [KvmFn; 30] = [
            KvmMmuPageFault,
            Paging64PageFault,
            Paging64WalkAddr,
            KvmMmuFaultinPfn,
            MakeMmuPagesAvailable,
            KvmMmuZapOldestMmuPages,
            KvmMmuPrepareZapPage,
            Paging64Fetch,
            KvmMmuGetShadowPage,
            KvmMmuAllocShadowPage,
            MmuSetSpte,
            Paging64PtePrefetch,
            KvmSyncPage,
            MmuSyncChildren,
            KvmMmuSyncRoots,
            X86EmulateInstruction,
            KvmMmuTrackWrite,
            KvmMmuUnprotectPage,
            KvmMmuInvlpg,
            KvmSetCr3,
            KvmMmuNewPgd,
            MmuAllocShadowRoots,
            KvmMmuFreeRoots,
            KvmVcpuFlushTlbGuest,
            KvmUnmapGfnRange,
            KvmAgeGfn,
            MmuShrinkScan,
            KvmMmuChangeMmuPages,
            KvmFlushRemoteTlbs,
            KvmMmuWriteProtectGfn,
        ];
        ALL.get((x as usize).wrapping_sub(1)).copied()
    }
}

/// Kinds of elementary work a handler does; the timing layer prices each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Work {
    /// Entries into the function (its fixed cost).
    Calls = 0,
    /// Guest PTEs read (walks, prefetch reads, sync).
    GptesRead,
    /// Guest PTEs written (A/D updates, emulated stores).
    GptesWritten,
    /// SPTEs read or written (installs, zaps, scans of a page's 512 entries).
    Sptes,
    /// Shadow-page hash chain entries visited.
    HashProbes,
    /// Shadow pages allocated.
    PagesAllocated,
    /// Shadow pages freed.
    PagesFreed,
    /// Clock hand steps.
    HandSteps,
}

impl Work {
    /// Every kind, in index order.
    pub const ALL: [Work; WORK_KINDS] = [
        Work::Calls,
        Work::GptesRead,
        Work::GptesWritten,
        Work::Sptes,
        Work::HashProbes,
        Work::PagesAllocated,
        Work::PagesFreed,
        Work::HandSteps,
    ];
}

pub const WORK_KINDS: usize = 8;
const MAX_DEPTH: usize = 12;

/// Work per call stack. Stacks are packed 5 bits per frame into a `u64` key; frames past
/// depth 12 are folded into the 12th.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    map: HashMap<u64, [u64; WORK_KINDS]>,
    frames: Vec<(u64, [u64; WORK_KINDS])>,
}

impl Profile {
    /// Enter `f` (called by the model at the top of each modelled function).
    pub(crate) fn enter(&mut self, f: KvmFn) {
        let key = match self.frames.last() {
            Some((k, _)) if self.frames.len() >= MAX_DEPTH => *k,
            Some((k, _)) => (*k << 5) | f as u64,
            None => f as u64,
        };
        let mut w = [0u64; WORK_KINDS];
        w[Work::Calls as usize] = 1;
        self.frames.push((key, w));
    }
    /// Leave the innermost function, folding its work into the profile.
    pub(crate) fn leave(&mut self) {
        if let Some((key, w)) = self.frames.pop() {
            let e = self.map.entry(key).or_insert([0; WORK_KINDS]);
            for (a, b) in e.iter_mut().zip(w.iter()) {
                *a += b;
            }
        }
    }
    /// Charge `n` units of `kind` to the innermost function.
    #[inline]
    pub(crate) fn add(&mut self, kind: Work, n: u64) {
        if let Some((_, w)) = self.frames.last_mut() {
            w[kind as usize] += n;
        }
    }
    pub(crate) fn depth(&self) -> usize {
        self.frames.len()
    }
    /// Self work per stack, as (`"outer;inner;..."`, counts by [`Work`] index), sorted by
    /// stack name so output is deterministic.
    pub fn stacks(&self) -> Vec<(String, [u64; WORK_KINDS])> {
        let mut v: Vec<(String, [u64; WORK_KINDS])> =
            self.map.iter().map(|(&k, w)| (stack_name(k), *w)).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
    /// Total of one kind of work over all stacks.
    pub fn total(&self, kind: Work) -> u64 {
        self.map.values().map(|w| w[kind as usize]).sum()
    }
    /// Calls of function `f` anywhere in a stack (as the innermost frame).
    pub fn calls(&self, f: KvmFn) -> u64 {
        self.map
            .iter()
            .filter(|(&k, _)| (k & 31) as u8 == f as u8)
            .map(|(_, w)| w[Work::Calls as usize])
            .sum()
    }
    /// Folded stacks (`a;b;c weight`) with each stack's weight = Σ work × `price` per kind;
    /// the format flamegraph.pl and inferno read.
    pub fn folded(&self, price: &[f64; WORK_KINDS]) -> String {
        let mut out = String::new();
        for (name, w) in self.stacks() {
            let weight: f64 = w.iter().zip(price.iter()).map(|(a, p)| *a as f64 * p).sum();
            let weight = weight.round() as u64;
            if weight > 0 {
                out.push_str(&format!("{name} {weight}\n"));
            }
        }
        out
    }
}

fn stack_name(mut key: u64) -> String {
    let mut names = Vec::new();
    while key != 0 {
        if let Some(f) = KvmFn::from_u8((key & 31) as u8) {
            names.push(f.name());
        }
        key >>= 5;
    }
    names.reverse();
    names.join(";")
}

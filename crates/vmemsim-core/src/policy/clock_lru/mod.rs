//! `clock-lru`: Linux 6.8's classic two-list LRU, the reclaim used when MG-LRU is disabled
//! (`mm/vmscan.c`, `mm/swap.c`, `mm/workingset.c`).
//!
//! Four lists in one links slab, indexed as the kernel's `enum lru_list`: inactive anon, active
//! anon, inactive file, active file. Per frame, the folio flags the algorithm reads:
//! `PG_lru`, `PG_active`, `PG_referenced`, `PG_workingset`.
//!
//! What it models, function by function:
//! - Adding pages (`folio_add_lru` → `lru_add_fn` → `lruvec_add_folio`): to the head of the list
//!   `folio_lru_list` picks. In 6.8 with MG-LRU off a new anonymous page from
//!   `do_anonymous_page` (`folio_add_lru_vma`) starts **inactive**, like page cache: since
//!   5.9 (commit b518154e59aa, "protect the workingset on anonymous LRU") nothing sets
//!   `PG_active` on a fresh anon folio; `folio_add_lru` only does so when MG-LRU is on. Swap-ins
//!   and swap readahead (`__read_swap_cache_async`) and file refaults go through
//!   `workingset_refault` first, which may activate them. (Kernels before 5.9 put new anon
//!   pages on the active list; the project's KERNEL-FACTS note says so, 6.8's code does not.)
//! - The reclaim pass (`shrink_node` → `prepare_scan_control` + `shrink_lruvec`):
//!   `get_scan_count` splits `size >> priority` of each list by scan balance (SCAN_EQUAL at
//!   priority 0, SCAN_ANON when file is tiny, SCAN_FILE in cache-trim mode or without swap,
//!   else SCAN_FRACT from swappiness and the anon/file costs); lists are visited in batches of
//!   `SWAP_CLUSTER_MAX`; kswapd (and direct reclaim below `DEF_PRIORITY`) stop once
//!   `nr_to_reclaim` pages are freed, trimming the other type's scan proportionally; at the end
//!   the active anon list is aged by one batch if `inactive_is_low`.
//! - `shrink_active_list`: every folio leaving the tail of an active list is deactivated
//!   (`PG_workingset` set) even if its PTE was young; the young bit is cleared by the rmap walk.
//!   The one exception, referenced executable file folios, cannot occur: the memory model has
//!   no `VM_EXEC` mappings.
//! - `shrink_inactive_list` → `shrink_folio_list` → `folio_check_references`: young PTE → set
//!   `PG_referenced`, activate if it was already set (second trip), else keep (back to the
//!   head of the inactive list); not young → reclaim, except a folio that was referenced, is
//!   file-backed and dirty (`FOLIOREF_RECLAIM_CLEAN`) which is kept. `referenced_ptes > 1`
//!   cannot occur: a frame has one mapping.
//! - `inactive_is_low`: `gb = (inactive + active) >> 18` pages; ratio `int_sqrt(10 gb)` or 1.
//! - `prepare_scan_control`: `may_deactivate` per type (new refault activations since the last
//!   snapshot, or inactive low), `cache_trim_mode`, `file_is_tiny`.
//! - `lru_note_cost` (Linux 6.8: 1 page of I/O = `SWAP_CLUSTER_MAX` rotations; 6.1: pages of
//!   I/O alone, no rotations; decay by half once the
//!   costs exceed a quarter of the LRU) from `shrink_inactive_list` (pages written out and
//!   pages not reclaimed) and from workingset restores (`lru_note_cost_refault`).
//! - Refault distance (`workingset_eviction`, `workingset_refault`, `workingset_test_recent`):
//!   a `nonresident_age` counter that ages on every eviction and every activation; on refault
//!   the folio is activated when `age - eviction ≤ workingset size` (active file + [anon:
//!   inactive file] + active anon + [file: inactive anon], swap being always available here);
//!   a folio that had `PG_workingset` when evicted is a *restore*.
//!
//! Departures and omissions (each a place where the kernel has more):
//! - A dirty page-cache folio is marked `PG_reclaim` and activated (`NR_VMSCAN_IMMEDIATE`),
//!   left to the flusher, unless kswapd meets it again, marked, under `PGDAT_DIRTY`, which
//!   kswapd sets when every file folio of its pass was dirty and unqueued; a batch of dirty
//!   folios only wakes the flusher (module `engine::pagecache`). The kernel unmaps a mapped
//!   one first; here it stays mapped.
//! - No per-CPU `folio_batch` delay on LRU insertion (`lru_add_drain`), no memcg, one node and
//!   one zone, no THP, no mlock / unevictable list, no `too_many_isolated` throttling, no
//!   `force_deactivate` retry of `do_try_to_free_pages`.
//! - The refault-count snapshot (`snapshot_refaults`) is taken at the end of every pass; the
//!   kernel takes it at the end of a whole reclaim run, which in the untimed engine is the
//!   same since no fault happens between the passes of one run.
//! - The rmap checks of an isolated batch are done together before its folios are sorted
//!   (same answers, as each PTE is independent; it lets their cache misses overlap).
//! - `can_age_anon_pages` and the swap check of `workingset_test_recent` read `sc.may_swap` /
//!   assume swap space, since the engine's swap area never fills.

use super::list::{Links, List};
use super::swap_plug::SwapWrites;
use super::{
    Family, Insert, KernelVersion, Policy, ReclaimReason, ScanControl, Touch, WritebackDone,
};
use crate::engine::{DEF_PRIORITY, SWAP_CLUSTER_MAX};
use crate::mm::frames::{F_PAGECACHE, F_READAHEAD};
use crate::mm::{FrameId, Mm, NO_SLOT};
use crate::watermarks::int_sqrt;

#[cfg(test)]
mod tests;

/// `enum lru_list`: the list index is `2 * file + active`.
pub const LRU_INACTIVE_ANON: usize = 0;
pub const LRU_ACTIVE_ANON: usize = 1;
pub const LRU_INACTIVE_FILE: usize = 2;
pub const LRU_ACTIVE_FILE: usize = 3;

/// `PG_active`; also the low bit of the list index.
const PG_ACTIVE: u8 = 1 << 0;
/// `folio_is_file_lru`; also the high bit of the list index.
const FILE: u8 = 1 << 1;
/// `PG_lru`: on one of the four lists.
const PG_LRU: u8 = 1 << 2;
const PG_REFERENCED: u8 = 1 << 3;
const PG_WORKINGSET: u8 = 1 << 4;
/// An anonymous frame of the engine that holds a named page ([`Policy::set_file_lru`]): on
/// the file lists, as the kernel's page-cache page of a private file mapping is.
const NAMED: u8 = 1 << 5;
const LRU_MASK: u8 = PG_ACTIVE | FILE;

/// Shadow entry layout (`pack_shadow`): bit 0 marks a shadow (0 = none), bit 1 is
/// `PG_workingset`, the rest the eviction timestamp, truncated like `EVICTION_MASK`.
const SHADOW_VALID: u32 = 1;
const SHADOW_WORKINGSET: u32 = 2;
const EVICTION_SHIFT: u32 = 2;
const EVICTION_MASK: u64 = (1 << (32 - EVICTION_SHIFT)) - 1;

/// Pages per GiB.
const GB_SHIFT: u32 = 30 - 12;

/// `inactive_is_low`'s target active:inactive ratio for a type with `pages` on its two lists.
pub fn inactive_ratio(pages: u64) -> u64 {
    let gb = pages >> GB_SHIFT;
    if gb > 0 {
        int_sqrt(10 * gb)
    } else {
        1
    }
}

/// `enum folio_references`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FolioRef {
    Reclaim,
    ReclaimClean,
    Keep,
    Activate,
}

/// `enum scan_balance`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScanBalance {
    Equal,
    Fract,
    Anon,
    File,
}

/// What `prepare_scan_control` decides for one pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ScanPlan {
    /// `sc->may_deactivate`, indexed by type (0 anon, 1 file).
    may_deactivate: [bool; 2],
    cache_trim_mode: bool,
    file_is_tiny: bool,
}

#[derive(Clone, Debug, Default)]
struct Counters {
    pgactivate: u64,
    pgdeactivate: u64,
    pgrefill: u64,
    pgscan: [u64; 2],
    pgsteal: [u64; 2],
    /// `reclaim_stat.nr_ref_keep`: inactive folios seen young once, rotated for another trip.
    nr_ref_keep: u64,
    /// Folios `shrink_folio_list` kept because `pageout` left them under writeback
    /// (asynchronous swap device); freed by a later scan.
    nr_writeback_keep: u64,
    /// Folios `shrink_folio_list` found under writeback and activated (timed runs).
    nr_writeback_activate: u64,
    /// Folios kept because their read was in flight (locked).
    nr_locked_keep: u64,
    /// `NR_VMSCAN_IMMEDIATE` (`nr_vmscan_immediate_reclaim`): dirty page-cache folios
    /// marked `PG_reclaim` and activated instead of written.
    nr_vmscan_immediate_reclaim: u64,
    workingset_activate: [u64; 2],
    workingset_restore: [u64; 2],
}

/// The classic two-list LRU of one lruvec.
#[derive(Debug)]
pub struct ClockLru {
    links: Links,
    lists: [List; 4],
    flags: Vec<u8>,
    /// Shadow computed when a frame was reclaimed, handed to the engine by [`Policy::shadow`].
    victim_shadow: Vec<u32>,
    /// `lruvec->nonresident_age`.
    nonresident_age: u64,
    /// `lruvec->anon_cost`, `lruvec->file_cost`.
    cost: [u64; 2],
    /// `lruvec->refaults[]`: `workingset_activate` at the end of the last pass.
    refaults_snapshot: [u64; 2],
    /// Isolated folios of one batch (`isolate_lru_folios`' private list).
    batch: Vec<FrameId>,
    /// The pass's swap writes in the block layer's plug ([`ScanControl::swap_plug`]), and
    /// scratch for the folios whose writes complete.
    writes: SwapWrites,
    rotate: Vec<FrameId>,
    /// The zones' first frames (`set_zones`), lowest first; empty on a machine with one.
    zone_start: Vec<FrameId>,
    /// This pass's `sc->reclaim_idx` when below the highest zone: `isolate_lru_folios`
    /// skips the folios of the zones above it.
    reclaim_idx: Option<usize>,
    /// `!sc->may_writepage` for this pass (kswapd reclaiming a watermark boost).
    writepage_off: bool,
    /// Folios skipped per zone this pass (`PGSCAN_SKIP`), and those of the inactive lists,
    /// which `pgscan` counts.
    skipped: [u64; crate::policy::MAX_ZONES],
    skipped_inactive: u64,
    /// Skipped folios of one isolation, in the order met.
    skip_list: Vec<FrameId>,
    /// The kernel version of the last reclaim pass ([`ScanControl::kernel`]), for
    /// `lru_note_cost`, whose cost differs (a refault's comes after a reclaim pass).
    kernel: KernelVersion,
    c: Counters,
}

impl ClockLru {
    pub fn new(frames: u32) -> Self {
        ClockLru {
            links: Links::new(frames as usize),
            lists: [List::default(); 4],
            flags: vec![0; frames as usize],
            victim_shadow: vec![0; frames as usize],
            nonresident_age: 0,
            cost: [0; 2],
            refaults_snapshot: [0; 2],
            batch: Vec::with_capacity(SWAP_CLUSTER_MAX as usize),
            writes: SwapWrites::default(),
            rotate: Vec::new(),
            zone_start: Vec::new(),
            reclaim_idx: None,
            writepage_off: false,
            skipped: [0; crate::policy::MAX_ZONES],
            skipped_inactive: 0,
            skip_list: Vec::new(),
            kernel: KernelVersion::V6_8,
            c: Counters::default(),
        }
    }

    #[inline]
    fn len(&self, lru: usize) -> u64 {
        self.lists[lru].len as u64
    }

    fn lru_size(&self) -> u64 {
        (0..4).map(|l| self.len(l)).sum()
    }

    /// `lruvec_add_folio`: to the head of the list its flags name.
    #[inline]
    fn add_folio(&mut self, f: FrameId, flags: u8) {
        self.flags[f as usize] = flags | PG_LRU;
        self.lists[(flags & LRU_MASK) as usize].push_head(&mut self.links, f);
    }

    /// `isolate_lru_folios`: take up to `n` (at most one batch) folios from the tail of `lru`
    /// into `self.batch`. Returns (folios taken, folios looked at). Under a `reclaim_idx`
    /// below the highest zone, a folio of a zone above is skipped without counting towards
    /// `n`, and the skipped ones go back to the head of the list in the order met
    /// (`list_splice(&folios_skipped, src)`: ahead of the rest, oldest nearest the tail);
    /// one call can pass over the whole list's ineligible folios. Linux 6.1 and 6.8.
    fn isolate(&mut self, n: u64, lru: usize) -> (u64, u64) {
        debug_assert!(n <= SWAP_CLUSTER_MAX as u64);
        self.batch.clear();
        let n = n.min(SWAP_CLUSTER_MAX as u64);
        let Some(idx) = self.reclaim_idx else {
            for _ in 0..n {
                let Some(f) = self.lists[lru].pop_tail(&mut self.links) else {
                    break;
                };
                self.flags[f as usize] &= !PG_LRU;
                self.batch.push(f);
            }
            let k = self.batch.len() as u64;
            return (k, k);
        };
        let mut total = 0u64;
        while (self.batch.len() as u64) < n {
            let Some(f) = self.lists[lru].pop_tail(&mut self.links) else {
                break;
            };
            total += 1;
            let z = crate::mm::frames::zone_of(&self.zone_start, f);
            if z > idx {
                self.skipped[z] += 1;
                self.skip_list.push(f);
                continue;
            }
            self.flags[f as usize] &= !PG_LRU;
            self.batch.push(f);
        }
        for i in 0..self.skip_list.len() {
            let f = self.skip_list[i];
            self.lists[lru].push_head(&mut self.links, f);
        }
        self.skip_list.clear();
        (self.batch.len() as u64, total)
    }

    /// `lruvec_lru_size(lruvec, lru, sc->reclaim_idx)`: the folios on `lru` of the zones
    /// reclaim may take from.
    fn eligible_len(&self, lru: usize) -> u64 {
        let Some(idx) = self.reclaim_idx else {
            return self.len(lru);
        };
        let end = self.zone_start[idx + 1] as usize;
        self.flags[..end]
            .iter()
            .filter(|&&fl| fl & PG_LRU != 0 && (fl & LRU_MASK) as usize == lru)
            .count() as u64
    }

    /// `inactive_is_low` for type `file` (0 anon, 1 file).
    fn inactive_is_low(&self, file: usize) -> bool {
        let inactive = self.len(2 * file);
        let active = self.len(2 * file + 1);
        inactive * inactive_ratio(inactive + active) < active
    }

    /// `lru_note_cost` (mm/swap.c). Linux 6.8: `nr_io * SWAP_CLUSTER_MAX + nr_rotated`, fed
    /// by `shrink_inactive_list` (pages written, pages taken but not reclaimed), by
    /// `shrink_active_list`'s rotations (executable file folios: none here) and by
    /// `lru_note_cost_refault` (a restore: one I/O). Linux 6.1: pages of I/O alone
    /// (`lru_note_cost(lruvec, file, nr_pages)`: `shrink_inactive_list`'s `nr_pageout` and
    /// `lru_note_cost_folio` on a restore), no rotation term (docs/kernel-6.1-vs-6.8.md,
    /// B1). Both decay by half once the costs exceed a quarter of the LRU pages.
    fn lru_note_cost(&mut self, file: usize, nr_io: u64, nr_rotated: u64) {
        self.cost[file] += match self.kernel {
            KernelVersion::V6_1 => nr_io,
            KernelVersion::V6_8 => nr_io * SWAP_CLUSTER_MAX as u64 + nr_rotated,
        };
        if self.cost[0] + self.cost[1] > self.lru_size() / 4 {
            self.cost[0] /= 2;
            self.cost[1] /= 2;
        }
    }

    /// `workingset_eviction`: the shadow for a folio leaving now; ages the clock by one.
    fn workingset_eviction(&mut self, flags: u8) -> u32 {
        let eviction = (self.nonresident_age & EVICTION_MASK) as u32;
        self.nonresident_age += 1;
        let ws = if flags & PG_WORKINGSET != 0 {
            SHADOW_WORKINGSET
        } else {
            0
        };
        (eviction << EVICTION_SHIFT) | ws | SHADOW_VALID
    }

    /// `workingset_refault` + `workingset_test_recent`: the flags a refaulting folio of type
    /// `file` starts with (`PG_active`, maybe `PG_workingset`).
    fn workingset_refault(&mut self, shadow: u32, file: usize) -> u8 {
        if shadow & SHADOW_VALID == 0 {
            return 0;
        }
        let eviction = (shadow >> EVICTION_SHIFT) as u64;
        let refault_distance = self.nonresident_age.wrapping_sub(eviction) & EVICTION_MASK;
        let mut workingset_size = self.len(LRU_ACTIVE_FILE);
        if file == 0 {
            workingset_size += self.len(LRU_INACTIVE_FILE);
        }
        // Swap space is always available in this memory model.
        workingset_size += self.len(LRU_ACTIVE_ANON);
        if file == 1 {
            workingset_size += self.len(LRU_INACTIVE_ANON);
        }
        if refault_distance > workingset_size {
            return 0;
        }
        self.nonresident_age += 1;
        self.c.workingset_activate[file] += 1;
        if shadow & SHADOW_WORKINGSET != 0 {
            self.lru_note_cost(file, 1, 0);
            self.c.workingset_restore[file] += 1;
            return PG_ACTIVE | PG_WORKINGSET;
        }
        PG_ACTIVE
    }

    /// `prepare_scan_control` for one pass.
    fn prepare_scan_control(&self, mm: &Mm, sc: &ScanControl) -> ScanPlan {
        let mut plan = ScanPlan::default();
        for file in 0..2 {
            plan.may_deactivate[file] = self.c.workingset_activate[file]
                != self.refaults_snapshot[file]
                || self.inactive_is_low(file);
        }
        let prio = sc.priority as u32;
        plan.cache_trim_mode = self.len(LRU_INACTIVE_FILE) >> prio != 0 && !plan.may_deactivate[1];
        let file = self.len(LRU_INACTIVE_FILE) + self.len(LRU_ACTIVE_FILE);
        let free = mm.frames.n_free() as u64;
        plan.file_is_tiny = file + free <= sc.high_wmark as u64
            && !plan.may_deactivate[0]
            && self.len(LRU_INACTIVE_ANON) >> prio != 0;
        plan
    }

    /// `get_scan_count`: how many folios of each list this pass scans.
    fn get_scan_count(&self, sc: &ScanControl, plan: &ScanPlan) -> [u64; 4] {
        let swappiness = sc.swappiness.min(200) as u64;
        let mut fraction = [0u64; 2];
        let balance = if !sc.may_swap {
            ScanBalance::File
        } else if sc.priority == 0 && swappiness != 0 {
            ScanBalance::Equal
        } else if plan.file_is_tiny {
            ScanBalance::Anon
        } else if plan.cache_trim_mode {
            ScanBalance::File
        } else {
            let total = self.cost[0] + self.cost[1];
            let anon_cost = total + self.cost[0];
            let file_cost = total + self.cost[1];
            let total = anon_cost + file_cost;
            fraction[0] = swappiness * (total + 1) / (anon_cost + 1);
            fraction[1] = (200 - swappiness) * (total + 1) / (file_cost + 1);
            ScanBalance::Fract
        };
        let denominator = (fraction[0] + fraction[1]) as u128;
        let mut nr = [0u64; 4];
        for (lru, n) in nr.iter_mut().enumerate() {
            let file = lru / 2;
            let scan = self.eligible_len(lru) >> sc.priority;
            *n = match balance {
                ScanBalance::Equal => scan,
                ScanBalance::Fract => (scan as u128 * fraction[file] as u128 / denominator) as u64,
                ScanBalance::Anon => scan * (file == 0) as u64,
                ScanBalance::File => scan * (file == 1) as u64,
            };
        }
        nr
    }

    /// `folio_check_references` for an isolated inactive folio.
    /// `referenced_ptes` is the rmap walk's answer (`folio_referenced`), taken beforehand.
    fn folio_check_references(&mut self, f: FrameId, referenced_ptes: bool) -> FolioRef {
        let fl = &mut self.flags[f as usize];
        let referenced_folio = *fl & PG_REFERENCED != 0;
        *fl &= !PG_REFERENCED;
        if referenced_ptes {
            // The instantiating fault left the PTE young: look twice before activating.
            *fl |= PG_REFERENCED;
            return if referenced_folio {
                FolioRef::Activate
            } else {
                FolioRef::Keep
            };
        }
        if referenced_folio && *fl & FILE != 0 {
            return FolioRef::ReclaimClean;
        }
        FolioRef::Reclaim
    }

    /// `shrink_inactive_list` → `shrink_folio_list` → `move_folios_to_lru`. Returns pages
    /// reclaimed (pushed onto `victims`).
    fn shrink_inactive_list(
        &mut self,
        n: u64,
        lru: usize,
        mm: &mut Mm,
        sc: &mut ScanControl,
        victims: &mut Vec<FrameId>,
    ) -> u64 {
        let file = lru / 2;
        let (nr_scanned, looked) = self.isolate(n, lru);
        // `pgscan` counts the skipped folios too; `sc->nr_scanned` (counted in
        // `shrink_folio_list`) only those taken.
        self.c.pgscan[file] += looked;
        self.skipped_inactive += looked - nr_scanned;
        if nr_scanned == 0 {
            return 0;
        }
        sc.nr_scanned += nr_scanned;
        let mut batch = std::mem::take(&mut self.batch);
        if mm.io_lock.is_some() || mm.wb.is_some() {
            // `shrink_folio_list`: a folio whose read is still in flight is locked;
            // `folio_trylock` fails before anything else is looked at (its accessed bits
            // too) and it is kept, back to the inactive head by `move_folios_to_lru`.
            // One whose swap write is in flight (timed runs) is under writeback: cases 1 and
            // 2 of the writeback test (kswapd with `PGDAT_WRITEBACK`: `nr_immediate`;
            // otherwise `PG_reclaim` set, `nr_writeback`) both `goto activate_locked`,
            // before `folio_check_references`: to the active list's head, `PGACTIVATE`, its
            // accessed bits not looked at (`folio_free_swap` fails under writeback). Linux
            // 6.1 and 6.8.
            // (`sc->nr`: case 1 when kswapd finds `PGDAT_WRITEBACK` set, else case 2)
            let immediate = sc.reason == ReclaimReason::Kswapd
                && mm.wb.as_ref().is_some_and(|w| w.pgdat_writeback);
            let mut found = 0u64;
            batch.retain(|&f| {
                if mm.io_locked(f) {
                    let fl = self.flags[f as usize];
                    self.add_folio(f, fl);
                    self.c.nr_locked_keep += 1;
                    false
                } else if mm.under_writeback(f) {
                    let fl = self.flags[f as usize];
                    self.add_folio(f, fl | PG_ACTIVE);
                    self.c.nr_writeback_activate += 1;
                    self.c.pgactivate += 1;
                    // (`move_folios_to_lru`: an active folio ages the non-resident clock)
                    self.nonresident_age += 1;
                    found += 1;
                    false
                } else {
                    true
                }
            });
            if let Some(w) = mm.wb.as_mut() {
                w.nr_taken += nr_scanned;
                if immediate {
                    w.nr_immediate += found;
                } else {
                    w.nr_writeback += found;
                }
            }
        }
        if file == 1 {
            // `folio_check_dirty_writeback` of each folio taken: dirty and not under
            // writeback (page-cache folios are never held under writeback here).
            let unqueued = batch.iter().filter(|&&f| mm.page_cache_dirty(f)).count() as u64;
            let d = &mut mm.vmscan_dirty;
            d.nr_file_taken += nr_scanned;
            d.nr_unqueued_dirty += unqueued;
            // `shrink_inactive_list`: "Nudge the flusher threads in case they are asleep".
            if unqueued == nr_scanned {
                d.wake_flusher = true;
            }
        }
        let young = rmap_young(mm, &batch);
        let (mut nr_reclaimed, mut nr_pageout, mut nr_activated) = (0u64, 0u64, 0u64);
        let victims_before = victims.len();
        for (i, &f) in batch.iter().enumerate() {
            // A folio written earlier in this pass, whose write completed and which
            // `folio_rotate_reclaimable` moved to this list's tail (`plug_write`): clean and
            // unmapped in the kernel, so no reference keeps it; `__remove_mapping` frees it.
            if self.writes.is_rotated(f) {
                let fl = self.flags[f as usize];
                self.victim_shadow[f as usize] = self.workingset_eviction(fl);
                self.flags[f as usize] = 0;
                self.writes.freed(f);
                nr_reclaimed += 1;
                continue;
            }
            let references = self.folio_check_references(f, young[i]);
            let fl = self.flags[f as usize];
            // `shrink_folio_list`'s dirty test for a page-cache folio reclaim would free
            // (Linux 6.1 and 6.8): only kswapd writes file folios, and only one it meets a
            // second time (`PG_reclaim` set) while the node is `PGDAT_DIRTY`; any other is
            // marked `PG_reclaim` (`NR_VMSCAN_IMMEDIATE`) and activated, left to the flusher,
            // whose write moves it to the inactive tail (`folio_rotate_reclaimable`). A
            // mapped one was unmapped first (`try_to_unmap`): the engine does it after the
            // pass (`VmscanDirty::unmap`).
            // (`PG_reclaim` is `PG_readahead`'s bit: `F_READAHEAD` on a page-cache frame.)
            if file == 1
                && fl & NAMED == 0
                && matches!(references, FolioRef::Reclaim | FolioRef::ReclaimClean)
                && mm.frames.flags(f) & F_PAGECACHE != 0
                && mm.is_dirty(f)
                && !(sc.reason == ReclaimReason::Kswapd
                    && mm.frames.flags(f) & F_READAHEAD != 0
                    && mm.vmscan_dirty.pgdat_dirty)
            {
                mm.frames.set_flags(f, F_READAHEAD);
                if mm.frames.is_mapped(f) {
                    mm.vmscan_dirty.unmap.push(f);
                }
                self.c.nr_vmscan_immediate_reclaim += 1;
                self.add_folio(f, fl | PG_ACTIVE);
                nr_activated += 1;
                continue;
            }
            match references {
                FolioRef::ReclaimClean if mm.is_dirty(f) => {
                    // Referenced dirty file folio: `keep_locked`, back to the inactive head.
                    self.add_folio(f, fl);
                }
                FolioRef::Activate => {
                    // `activate_locked`; put back on the active list by `move_folios_to_lru`.
                    // A swap-cache folio gives up its slot when swap is half full.
                    if file == 0 {
                        mm.free_swap_if_full(f);
                    }
                    self.add_folio(f, fl | PG_ACTIVE);
                    nr_activated += 1;
                }
                FolioRef::Keep => {
                    self.add_folio(f, fl);
                    self.c.nr_ref_keep += 1;
                }
                FolioRef::Reclaim | FolioRef::ReclaimClean => {
                    // `pageout` writes a dirty page, or an anon page without a swap copy.
                    // (a named page is an unwritten copy of its block: dropped, not written)
                    let written = if file == 0 {
                        mm.swap_out_writes(f)
                    } else {
                        fl & NAMED == 0 && mm.is_dirty(f)
                    };
                    if written && self.writepage_off {
                        // `if (!sc->may_writepage) goto keep_locked;`
                        self.add_folio(f, fl);
                        continue;
                    }
                    nr_pageout += written as u64;
                    if written && file == 0 && sc.writeback_async {
                        // Still under writeback after `pageout`: `keep`, not reclaimed. The
                        // engine writes it and puts it back (`Insert::Rotate`), flags kept.
                        self.victim_shadow[f as usize] = fl as u32;
                        self.flags[f as usize] = 0;
                        victims.push(f);
                        self.c.nr_writeback_keep += 1;
                        if sc.swap_plug {
                            self.plug_write(mm, f, sc.swap_max_pages);
                        }
                        continue;
                    }
                    // `__remove_mapping` stores the shadow as the folio leaves.
                    self.victim_shadow[f as usize] = self.workingset_eviction(fl);
                    self.flags[f as usize] = 0;
                    victims.push(f);
                    nr_reclaimed += 1;
                }
            }
        }
        self.batch = batch;
        // The writes of this batch that a flush dispatched complete after
        // `move_folios_to_lru` put the batch back: rotated to the tail now.
        // (timed runs: the batch took its time, and the writes that completed meanwhile are
        // rotated)
        mm.reclaim_time(nr_scanned, &victims[victims_before..]);
        let mut rotate = std::mem::take(&mut self.rotate);
        self.writes.end_batch(mm, &mut rotate);
        for f in rotate.drain(..) {
            self.rotate_written(f);
        }
        self.rotate = rotate;
        crate::policy::end_writebacks_in_pass(self, mm);
        // `move_folios_to_lru` ages the non-resident clock for each folio put back active,
        // after the whole batch was processed.
        self.nonresident_age += nr_activated;
        self.c.pgactivate += nr_activated;
        self.c.pgsteal[file] += nr_reclaimed;
        self.lru_note_cost(file, nr_pageout, nr_scanned - nr_reclaimed);
        nr_reclaimed
    }

    /// `pageout` of an anonymous folio under the plug ([`SwapWrites::write`]); the writes
    /// that complete now are rotated.
    fn plug_write(&mut self, mm: &mut Mm, f: FrameId, max_pages: u32) {
        let mut rotate = std::mem::take(&mut self.rotate);
        self.writes.write(mm, f, max_pages, &mut rotate);
        for g in rotate.drain(..) {
            self.rotate_written(g);
        }
        self.rotate = rotate;
    }

    /// `folio_end_writeback` → `folio_rotate_reclaimable` → `lru_move_tail_fn`: inactive, at
    /// the tail, with the reference flags it was isolated with, as [`Insert::Rotate`] does
    /// after the pass.
    fn rotate_written(&mut self, f: FrameId) {
        let kept = std::mem::replace(&mut self.victim_shadow[f as usize], 0) as u8;
        let fl = (kept & !(PG_ACTIVE | PG_LRU | LRU_MASK)) | PG_LRU;
        self.flags[f as usize] = fl;
        self.lists[(fl & LRU_MASK) as usize].push_tail(&mut self.links, f);
        self.writes.rotated(f);
    }

    /// `shrink_active_list`: deactivate up to `n` folios from the tail of active list `lru`.
    fn shrink_active_list(&mut self, n: u64, lru: usize, mm: &mut Mm) {
        let (nr_scanned, looked) = self.isolate(n, lru);
        self.c.pgrefill += looked;
        let batch = std::mem::take(&mut self.batch);
        // `folio_referenced` clears the young bits; its answer matters only for executable
        // file folios, which do not exist here.
        rmap_young(mm, &batch);
        for &f in &batch {
            let fl = (self.flags[f as usize] & !PG_ACTIVE) | PG_WORKINGSET;
            self.add_folio(f, fl);
        }
        self.c.pgdeactivate += nr_scanned;
        self.batch = batch;
    }

    /// `shrink_list`.
    fn shrink_list(
        &mut self,
        lru: usize,
        n: u64,
        plan: &ScanPlan,
        mm: &mut Mm,
        sc: &mut ScanControl,
        victims: &mut Vec<FrameId>,
    ) -> u64 {
        if lru & 1 == 1 {
            if plan.may_deactivate[lru / 2] {
                self.shrink_active_list(n, lru, mm);
            }
            return 0;
        }
        self.shrink_inactive_list(n, lru, mm, sc, victims)
    }

    /// `shrink_lruvec` for one pass at `sc.priority`.
    fn shrink_lruvec(
        &mut self,
        plan: &ScanPlan,
        mm: &mut Mm,
        sc: &mut ScanControl,
        victims: &mut Vec<FrameId>,
    ) {
        let mut nr = self.get_scan_count(sc, plan);
        let targets = nr;
        let nr_to_reclaim = sc.nr_to_reclaim as u64;
        let proportional_reclaim =
            sc.reason == ReclaimReason::Direct && sc.priority == DEF_PRIORITY;
        let mut nr_reclaimed = 0u64;
        while nr[LRU_INACTIVE_ANON] != 0 || nr[LRU_ACTIVE_FILE] != 0 || nr[LRU_INACTIVE_FILE] != 0 {
            #[allow(clippy::needless_range_loop)] // `for_each_evictable_lru`
            for lru in 0..4 {
                if nr[lru] != 0 {
                    let n = nr[lru].min(SWAP_CLUSTER_MAX as u64);
                    nr[lru] -= n;
                    nr_reclaimed += self.shrink_list(lru, n, plan, mm, sc, victims);
                }
            }
            if nr_reclaimed < nr_to_reclaim || proportional_reclaim {
                continue;
            }
            // Enough reclaimed: stop the type with less left to scan and trim the other to
            // the share of its target the stopped one reached.
            let nr_file = nr[LRU_INACTIVE_FILE] + nr[LRU_ACTIVE_FILE];
            let nr_anon = nr[LRU_INACTIVE_ANON] + nr[LRU_ACTIVE_ANON];
            if nr_file == 0 || nr_anon == 0 {
                break;
            }
            let (stop, percentage) = if nr_file > nr_anon {
                let target = targets[LRU_INACTIVE_ANON] + targets[LRU_ACTIVE_ANON] + 1;
                (LRU_INACTIVE_ANON, nr_anon * 100 / target)
            } else {
                let target = targets[LRU_INACTIVE_FILE] + targets[LRU_ACTIVE_FILE] + 1;
                (LRU_INACTIVE_FILE, nr_file * 100 / target)
            };
            nr[stop] = 0;
            nr[stop + 1] = 0;
            let other = LRU_INACTIVE_FILE - stop;
            for lru in [other, other + 1] {
                let scanned = targets[lru] - nr[lru];
                nr[lru] = targets[lru] * (100 - percentage) / 100;
                nr[lru] -= nr[lru].min(scanned);
            }
        }
        // Rebalance the anon lists even if anon was not scanned (`can_age_anon_pages`).
        if sc.may_swap && self.inactive_is_low(0) {
            self.shrink_active_list(SWAP_CLUSTER_MAX as u64, LRU_ACTIVE_ANON, mm);
        }
    }
}

/// The rmap checks of one isolated batch (at most `SWAP_CLUSTER_MAX` folios), done together
/// before the batch is sorted: each test-and-clears one PTE, independent of the others, so
/// the cache misses of the batch overlap instead of queueing behind each decision.
#[inline]
fn rmap_young(mm: &mut Mm, batch: &[FrameId]) -> [bool; SWAP_CLUSTER_MAX as usize] {
    let mut young = [false; SWAP_CLUSTER_MAX as usize];
    mm.test_and_clear_young_batch(batch, &mut young);
    young
}

impl Policy for ClockLru {
    fn name(&self) -> &'static str {
        "clock-lru"
    }
    fn family(&self) -> Family {
        Family::Kernel
    }
    /// Hits are invisible to the kernel: the MMU sets the PTE young bit, nothing else.
    #[inline]
    fn on_hit(&mut self, _f: FrameId, _t: Touch) {}

    /// `folio_mark_accessed` (mm/swap.c, the same in 6.1 and 6.8) without MG-LRU: an
    /// unreferenced folio becomes referenced; a referenced inactive one is activated
    /// (`folio_activate` → `folio_activate_fn`: to the head of its active list, PGACTIVATE),
    /// loses `PG_referenced`, and ages the non-resident clock (`workingset_activation` →
    /// `workingset_age_nonresident`). Left out: the kernel queues the move in a per-CPU
    /// batch (`cpu_fbatches.activate`, 15 folios) and makes it at the batch's drain; here it
    /// is made at once.
    fn mark_accessed(&mut self, _mm: &Mm, f: FrameId, _t: Touch) {
        let fl = self.flags[f as usize];
        if fl & PG_REFERENCED == 0 {
            self.flags[f as usize] = fl | PG_REFERENCED;
        } else if fl & PG_ACTIVE == 0 {
            if fl & PG_LRU != 0 {
                self.lists[(fl & LRU_MASK) as usize].remove(&mut self.links, f);
                self.add_folio(f, (fl & !(PG_LRU | PG_REFERENCED)) | PG_ACTIVE);
                self.c.pgactivate += 1;
            } else {
                // `__lru_cache_activate_folio`: not on a list (isolated); it goes back active.
                self.flags[f as usize] = (fl & !PG_REFERENCED) | PG_ACTIVE;
            }
            self.nonresident_age += 1;
        }
    }

    fn on_insert(&mut self, mm: &Mm, f: FrameId, _t: Touch, how: Insert) {
        // (a named frame: `set_file_lru` before a refault's insertion, or kept through an
        // isolation; every other frame comes in with its flags 0)
        let named = self.flags[f as usize] & NAMED;
        let file = (!mm.frames.is_anon(f) || named != 0) as usize;
        let mut fl = if file == 1 { FILE | named } else { 0 };
        match how {
            // `move_folios_to_lru`: a kept folio goes back to the inactive list's head.
            Insert::FirstTouch | Insert::Putback => {}
            Insert::Rotate => {
                // `lru_move_tail_fn`: inactive (PG_active cleared), at the tail, with the
                // reference flags it was isolated with (held in `victim_shadow`).
                let kept = std::mem::replace(&mut self.victim_shadow[f as usize], 0) as u8;
                let fl = (kept & !(PG_ACTIVE | PG_LRU | LRU_MASK)) | (fl & LRU_MASK) | PG_LRU;
                self.flags[f as usize] = fl;
                self.lists[(fl & LRU_MASK) as usize].push_tail(&mut self.links, f);
                return;
            }
            Insert::Writeback => {
                // `keep` → `move_folios_to_lru`: the inactive list's head, with the
                // reference flags it was isolated with.
                let kept = std::mem::replace(&mut self.victim_shadow[f as usize], 0) as u8;
                let fl = (kept & !(PG_ACTIVE | PG_LRU | LRU_MASK)) | (fl & LRU_MASK);
                self.add_folio(f, fl);
                return;
            }
            Insert::Refault { shadow } => fl |= self.workingset_refault(shadow, file),
            Insert::Readahead => {
                // `__read_swap_cache_async` checks the slot's shadow for readahead pages too.
                let slot = mm.frames.slot(f);
                if slot != NO_SLOT {
                    fl |= self.workingset_refault(mm.swap.shadow(slot), file);
                }
            }
        }
        self.add_folio(f, fl);
    }

    fn evict(&mut self, _mm: &mut Mm) -> Option<FrameId> {
        None
    }

    /// The lists stay per node; the zones only decide which folios a pass under a
    /// `reclaim_idx` below the highest zone skips.
    fn set_zones(&mut self, zone_start: &[FrameId]) {
        self.zone_start = zone_start.to_vec();
    }

    /// One `shrink_node` pass: (`kswapd_age_node`), `prepare_scan_control`, `shrink_lruvec`.
    fn shrink(&mut self, mm: &mut Mm, sc: &mut ScanControl, victims: &mut Vec<FrameId>) {
        self.kernel = sc.kernel;
        if let Some(z) = sc.zones.as_ref() {
            self.reclaim_idx = z.reclaim_idx.map(|i| i as usize);
            self.writepage_off = z.writepage_off;
        }
        // `kswapd_age_node`: before each of its passes kswapd ages the anon lists.
        if sc.reason == ReclaimReason::Kswapd && sc.may_swap && self.inactive_is_low(0) {
            self.shrink_active_list(SWAP_CLUSTER_MAX as u64, LRU_ACTIVE_ANON, mm);
        }
        debug_assert!(
            self.writes.is_empty(),
            "the engine asked for every write of the last pass"
        );
        // `shrink_node` starts each pass with a clear `sc->nr`.
        mm.vmscan_dirty.nr_unqueued_dirty = 0;
        mm.vmscan_dirty.nr_file_taken = 0;
        let plan = self.prepare_scan_control(mm, sc);
        self.shrink_lruvec(&plan, mm, sc, victims);
        // `shrink_node`, kswapd only: "Allow kswapd to start writing pages during reclaim"
        // when every file folio the pass took was dirty and not queued for writeback (also
        // when it took none: 0 == 0, as in the kernel). Linux 6.1 and 6.8.
        if sc.reason == ReclaimReason::Kswapd
            && mm.vmscan_dirty.nr_unqueued_dirty == mm.vmscan_dirty.nr_file_taken
        {
            mm.vmscan_dirty.pgdat_dirty = true;
        }
        if let Some(z) = sc.zones.as_mut() {
            for (a, b) in z.skipped.iter_mut().zip(self.skipped) {
                *a += b;
            }
            z.skipped_scanned += self.skipped_inactive;
        }
        self.skipped = [0; crate::policy::MAX_ZONES];
        self.skipped_inactive = 0;
        self.reclaim_idx = None;
        self.writepage_off = false;
        // blk_finish_plug: the writes still plugged complete after the pass (`Pending`).
        self.writes.end_pass();
    }

    /// `lru_move_tail_fn`: off its list, `PG_active` cleared, at the inactive list's tail.
    fn rotate_reclaimable(&mut self, _mm: &Mm, f: FrameId) -> bool {
        let fl = self.flags[f as usize];
        if fl & PG_LRU == 0 {
            return false;
        }
        self.lists[(fl & LRU_MASK) as usize].remove(&mut self.links, f);
        let fl = fl & !PG_ACTIVE;
        self.flags[f as usize] = fl;
        self.lists[(fl & LRU_MASK) as usize].push_tail(&mut self.links, f);
        true
    }

    fn writeback_done(&mut self, f: FrameId) -> WritebackDone {
        self.writes.done(f)
    }

    /// `snapshot_refaults`, at the end of `balance_pgdat` and of `do_try_to_free_pages`.
    fn reclaim_done(&mut self, _reason: ReclaimReason) {
        self.refaults_snapshot = self.c.workingset_activate;
    }

    fn shadow(&mut self, _mm: &Mm, f: FrameId) -> u32 {
        std::mem::replace(&mut self.victim_shadow[f as usize], 0)
    }

    /// `f` leaves its list and enters the inactive list of the other type at its head, a
    /// new folio (`folio_add_lru`: the page-cache page the Mapper maps, or the anonymous
    /// copy of `do_wp_page`), its reference bits cleared. A frame off the lists (isolated,
    /// or not yet inserted) only takes the type, for its putback or insertion.
    fn set_file_lru(&mut self, mm: &Mm, f: FrameId, file: bool) {
        if !mm.frames.is_anon(f) {
            return;
        }
        let fl = self.flags[f as usize];
        if (fl & NAMED != 0) == file {
            return;
        }
        let ty = if file { FILE | NAMED } else { 0 };
        if fl & PG_LRU != 0 {
            self.lists[(fl & LRU_MASK) as usize].remove(&mut self.links, f);
            self.add_folio(f, ty);
        } else {
            self.flags[f as usize] = (fl & !(FILE | NAMED)) | ty;
        }
    }

    fn on_remove(&mut self, f: FrameId) {
        let fl = self.flags[f as usize];
        if fl & PG_LRU != 0 {
            self.lists[(fl & LRU_MASK) as usize].remove(&mut self.links, f);
        }
        self.flags[f as usize] = 0;
    }

    fn validate(&self, mm: &Mm) -> Result<(), String> {
        const NAMES: [&str; 4] = [
            "inactive_anon",
            "active_anon",
            "inactive_file",
            "active_file",
        ];
        for (lru, name) in NAMES.iter().enumerate() {
            self.lists[lru].validate(&self.links, name)?;
            for f in self.lists[lru].iter(&self.links) {
                let fl = self.flags[f as usize];
                if fl & PG_LRU == 0 || (fl & LRU_MASK) as usize != lru {
                    return Err(format!(
                        "clock-lru: frame {f} on {name} but its flags are {fl:#x}"
                    ));
                }
                if (fl & FILE != 0) == (mm.frames.is_anon(f) && fl & NAMED == 0) {
                    return Err(format!(
                        "clock-lru: frame {f} on {name} but the frame's anon flag disagrees"
                    ));
                }
            }
        }
        let on_lru = self.flags.iter().filter(|&&fl| fl & PG_LRU != 0).count() as u64;
        if on_lru != self.lru_size() {
            return Err(format!(
                "clock-lru: {on_lru} frames flagged PG_lru but the lists hold {}",
                self.lru_size()
            ));
        }
        if let Some(f) = self
            .flags
            .iter()
            .position(|&fl| fl & PG_LRU == 0 && fl != 0)
        {
            return Err(format!(
                "clock-lru: frame {f} off the lists keeps flags {:#x}",
                self.flags[f]
            ));
        }
        super::registry::check_holds_exactly(
            mm,
            (0..4).flat_map(|l| self.lists[l].iter(&self.links)),
            "clock-lru",
        )
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.c;
        vec![
            ("pgactivate", c.pgactivate),
            ("nr_vmscan_immediate_reclaim", c.nr_vmscan_immediate_reclaim),
            ("pgdeactivate", c.pgdeactivate),
            ("pgrefill", c.pgrefill),
            ("pgscan_anon", c.pgscan[0]),
            ("pgscan_file", c.pgscan[1]),
            ("pgsteal_anon", c.pgsteal[0]),
            ("pgsteal_file", c.pgsteal[1]),
            ("nr_ref_keep", c.nr_ref_keep),
            ("nr_writeback_keep", c.nr_writeback_keep),
            ("nr_writeback_activate", c.nr_writeback_activate),
            ("nr_locked_keep", c.nr_locked_keep),
            ("workingset_activate_anon", c.workingset_activate[0]),
            ("workingset_activate_file", c.workingset_activate[1]),
            ("workingset_restore_anon", c.workingset_restore[0]),
            ("workingset_restore_file", c.workingset_restore[1]),
            ("nr_inactive_anon", self.len(LRU_INACTIVE_ANON)),
            ("nr_active_anon", self.len(LRU_ACTIVE_ANON)),
            ("nr_inactive_file", self.len(LRU_INACTIVE_FILE)),
            ("nr_active_file", self.len(LRU_ACTIVE_FILE)),
        ]
    }
}

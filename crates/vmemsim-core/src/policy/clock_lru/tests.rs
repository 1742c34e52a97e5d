//! Tests of `clock-lru` against the rules of Linux 6.8's `mm/vmscan.c` and `mm/workingset.c`.
//! Expected values are worked out by hand from those rules in the comments beside them.

use super::*;
use crate::access::Access;
use crate::engine::{Machine, MachineConfig};
use crate::mm::frames::{F_ANON, F_MAPPED};
use crate::mm::{make_present, Vma, VmaKind, PTE_ACCESSED};
use crate::watermarks::Watermarks;

/// A memory with the policy attached, driven by hand: faults, MMU accesses, reclaim calls.
struct Rig {
    mm: Mm,
    p: ClockLru,
}

impl Rig {
    fn new(frames: u32) -> Self {
        Rig {
            mm: Mm::new(frames),
            p: ClockLru::new(frames),
        }
    }

    /// A first-touch fault of `vpn` (anonymous unless `file`): the PTE is made young.
    fn fault(&mut self, vpn: u64, file: bool) -> FrameId {
        let f = self
            .mm
            .alloc_frame(vpn, if file { 0 } else { F_ANON })
            .unwrap();
        *self.mm.pt.pte_mut(vpn) = make_present(f) | PTE_ACCESSED;
        self.mm.frames.set_flags(f, F_MAPPED);
        let t = Touch {
            t: 0,
            next_use: u64::MAX,
            vpn,
            write: false,
        };
        self.p.on_insert(&self.mm, f, t, Insert::FirstTouch);
        f
    }

    /// The MMU sets the accessed bit of a resident page.
    fn touch(&mut self, vpn: u64) {
        *self.mm.pt.walk(vpn) |= PTE_ACCESSED;
    }

    /// Reclaim as the engine does: take victims and free their frames, returning the victims'
    /// page numbers and shadows.
    fn free_victims(&mut self, victims: &[FrameId]) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        for &f in victims {
            let s = self.p.shadow(&self.mm, f);
            let vpn = self.mm.owner(f);
            *self.mm.pt.pte_mut(vpn) = 0;
            self.mm.frames.release(f);
            out.push((vpn, s));
        }
        out
    }

    fn shrink_inactive(&mut self, n: u64, lru: usize) -> Vec<(u64, u32)> {
        let mut sc = sc(0, ReclaimReason::Kswapd, 32);
        let mut victims = Vec::new();
        self.p
            .shrink_inactive_list(n, lru, &mut self.mm, &mut sc, &mut victims);
        self.free_victims(&victims)
    }

    fn shrink(&mut self, sc: &mut ScanControl) -> Vec<(u64, u32)> {
        let mut victims = Vec::new();
        self.p.shrink(&mut self.mm, sc, &mut victims);
        self.free_victims(&victims)
    }

    /// Page numbers on list `lru`, head (newest) first.
    fn list(&self, lru: usize) -> Vec<u64> {
        self.p.lists[lru]
            .iter(&self.p.links)
            .map(|f| self.mm.owner(f))
            .collect()
    }

    fn flags_of(&self, vpn: u64) -> u8 {
        let f = pte_frame(self.mm.pt.pte(vpn));
        self.p.flags[f as usize]
    }

    fn refault(&mut self, vpn: u64, shadow: u32) -> FrameId {
        let f = self.mm.alloc_frame(vpn, F_ANON).unwrap();
        *self.mm.pt.pte_mut(vpn) = make_present(f) | PTE_ACCESSED;
        self.mm.frames.set_flags(f, F_MAPPED);
        let t = Touch {
            t: 0,
            next_use: u64::MAX,
            vpn,
            write: false,
        };
        self.p.on_insert(&self.mm, f, t, Insert::Refault { shadow });
        f
    }

    fn check(&self) {
        self.mm.validate().unwrap();
        self.p.validate(&self.mm).unwrap();
    }
}

use crate::mm::pte_frame;

impl ClockLru {
    /// Inactive anon list as page numbers, head first.
    fn list_vpns_for_test(&self, mm: &Mm) -> Vec<u64> {
        self.lists[LRU_INACTIVE_ANON]
            .iter(&self.links)
            .map(|f| mm.owner(f))
            .collect()
    }
}

fn sc(priority: u8, reason: ReclaimReason, nr: u32) -> ScanControl {
    ScanControl {
        nr_to_reclaim: nr,
        priority,
        reason,
        nr_scanned: 0,
        swappiness: 60,
        may_swap: true,
        high_wmark: 0,
        writeback_async: false,
        swap_plug: false,
        swap_max_pages: 128,
        low_wmark: 0,
        nr_free: 0,
        kernel: crate::policy::KernelVersion::V6_8,
        nr_reclaimed: 0,
        zones: Default::default(),
    }
}

fn counter(p: &ClockLru, name: &str) -> u64 {
    p.counters()
        .into_iter()
        .find(|c| c.0 == name)
        .unwrap_or_else(|| panic!("no counter {name}"))
        .1
}

#[test]
fn mapped_page_needs_young_on_two_scans_to_activate() {
    let mut r = Rig::new(8);
    r.fault(1, false);
    r.fault(2, false);
    assert_eq!(
        r.list(LRU_INACTIVE_ANON),
        vec![2, 1],
        "new anon pages start inactive"
    );
    // First trip: both PTEs are young from their faults → PG_referenced, kept (rotated).
    assert!(r.shrink_inactive(2, LRU_INACTIVE_ANON).is_empty());
    assert_eq!(r.list(LRU_INACTIVE_ANON), vec![2, 1]);
    assert_eq!(r.p.c.nr_ref_keep, 2);
    assert_eq!(r.p.c.pgactivate, 0);
    assert!(!r.mm.is_young(pte_frame(r.mm.pt.pte(1))), "rmap cleared it");
    assert_ne!(r.flags_of(1) & PG_REFERENCED, 0);
    // Page 1 is used again; page 2 is not.
    r.touch(1);
    let gone = r.shrink_inactive(2, LRU_INACTIVE_ANON);
    // Page 1: young + referenced → activated. Page 2: not young → reclaimed; it was
    // referenced but is anon (FOLIOREF_RECLAIM, not RECLAIM_CLEAN).
    assert_eq!(gone.iter().map(|v| v.0).collect::<Vec<_>>(), vec![2]);
    assert_eq!(r.list(LRU_ACTIVE_ANON), vec![1]);
    assert!(r.list(LRU_INACTIVE_ANON).is_empty());
    assert_eq!(r.p.c.pgactivate, 1);
    // The activated folio keeps PG_referenced ("recently deactivated but used folios are
    // quickly recovered").
    assert_eq!(r.flags_of(1), PG_LRU | PG_ACTIVE | PG_REFERENCED);
    // Page 2 left with the clock at 0 (no workingset bit); then the clock aged by one for the
    // eviction and one for the activation put back by move_folios_to_lru.
    assert_eq!(gone[0].1, SHADOW_VALID);
    assert_eq!(r.p.nonresident_age, 2);
    r.check();
}

#[test]
fn page_untouched_since_fault_is_reclaimed_first() {
    let mut r = Rig::new(8);
    for v in [10, 11, 12] {
        r.fault(v, false);
    }
    // priority 0: SCAN_EQUAL, the whole inactive anon list in one batch.
    let mut s = sc(0, ReclaimReason::Kswapd, 1);
    assert!(r.shrink(&mut s).is_empty(), "all young from their faults");
    assert_eq!(s.nr_scanned, 3);
    r.touch(10);
    r.touch(12);
    let mut s = sc(0, ReclaimReason::Kswapd, 1);
    let gone = r.shrink(&mut s);
    assert_eq!(gone.iter().map(|v| v.0).collect::<Vec<_>>(), vec![11]);
    // 10 then 12 were activated, each to the head of active anon. That left inactive anon
    // empty and active 2: inactive_is_low (0·1 < 2), so the end of shrink_lruvec deactivated
    // one batch from the active tail: 10 then 12, each to the head of inactive, marked
    // workingset and still referenced.
    assert!(r.list(LRU_ACTIVE_ANON).is_empty());
    assert_eq!(r.list(LRU_INACTIVE_ANON), vec![12, 10]);
    assert_eq!(r.flags_of(10), PG_LRU | PG_REFERENCED | PG_WORKINGSET);
    assert_eq!(counter(&r.p, "pgactivate"), 2);
    assert_eq!(counter(&r.p, "pgdeactivate"), 2);
    assert_eq!(counter(&r.p, "pgsteal_anon"), 1);
    assert_eq!(counter(&r.p, "pgscan_anon"), 6);
    r.check();
}

#[test]
fn deactivation_takes_the_tail_even_if_young() {
    let mut r = Rig::new(8);
    for v in [1, 2, 3] {
        r.fault(v, false);
    }
    r.shrink_inactive(3, LRU_INACTIVE_ANON);
    for v in [1, 2, 3] {
        r.touch(v);
    }
    r.shrink_inactive(3, LRU_INACTIVE_ANON);
    assert_eq!(r.list(LRU_ACTIVE_ANON), vec![3, 2, 1]);
    r.touch(1);
    r.p.shrink_active_list(2, LRU_ACTIVE_ANON, &mut r.mm);
    // 1 and 2 leave the tail; 1 despite its young PTE, which the rmap walk cleared.
    assert_eq!(r.list(LRU_ACTIVE_ANON), vec![3]);
    assert_eq!(r.list(LRU_INACTIVE_ANON), vec![2, 1]);
    assert!(!r.mm.is_young(pte_frame(r.mm.pt.pte(1))));
    for v in [1, 2] {
        assert_eq!(
            r.flags_of(v),
            PG_LRU | PG_REFERENCED | PG_WORKINGSET,
            "page {v}"
        );
    }
    assert_eq!((r.p.c.pgdeactivate, r.p.c.pgrefill), (2, 2));
    // A deactivated page used once more goes straight back: PG_referenced survived.
    r.touch(1);
    assert!(r.shrink_inactive(1, LRU_INACTIVE_ANON).is_empty());
    assert_eq!(r.list(LRU_ACTIVE_ANON), vec![1, 3]);
    r.check();
}

#[test]
fn inactive_ratio_table_of_the_kernel_comment() {
    const GB: u64 = 1 << 18;
    assert_eq!(inactive_ratio(GB - 1), 1);
    assert_eq!(inactive_ratio(GB), 3);
    assert_eq!(inactive_ratio(10 * GB), 10);
    assert_eq!(inactive_ratio(100 * GB), 31);
    assert_eq!(inactive_ratio(1024 * GB), 101);
    assert_eq!(inactive_ratio(10 * 1024 * GB), 320);
}

#[test]
fn inactive_is_low_boundaries() {
    let mut p = ClockLru::new(1);
    let set = |p: &mut ClockLru, ia: u64, aa: u64| {
        p.lists[LRU_INACTIVE_ANON].len = ia as u32;
        p.lists[LRU_ACTIVE_ANON].len = aa as u32;
        p.inactive_is_low(0)
    };
    // Small: ratio 1.
    assert!(set(&mut p, 3, 4));
    assert!(!set(&mut p, 4, 4));
    // 100 GiB of anon: ratio 31; 819200 * 31 = 25395200.
    let total = 100u64 << 18;
    assert!(!set(&mut p, 819_200, total - 819_200));
    assert!(set(&mut p, 819_199, total - 819_199));
    // 1 GiB: ratio 3; 65536 * 3 = 196608 = active.
    assert!(!set(&mut p, 65_536, (1 << 18) - 65_536));
    assert!(set(&mut p, 65_535, (1 << 18) - 65_535));
}

/// Evict page 100 with four active anon pages resident, then `others` more pages, then fault
/// page 100 back. Returns whether it came back active.
fn refault_after(others: u64) -> bool {
    let mut r = Rig::new(32);
    for v in 0..4 {
        let f = r.fault(v, false);
        r.p.lists[LRU_INACTIVE_ANON].remove(&mut r.p.links, f);
        r.p.add_folio(f, PG_ACTIVE);
    }
    r.fault(100, false);
    for v in 0..others {
        r.fault(200 + v, false);
    }
    // Make every inactive page reclaimable on sight: not young, not referenced.
    for v in std::iter::once(100).chain(200..200 + others) {
        r.mm.test_and_clear_young(pte_frame(r.mm.pt.pte(v)));
    }
    let gone = r.shrink_inactive(32, LRU_INACTIVE_ANON);
    assert_eq!(gone.len() as u64, 1 + others);
    assert_eq!(gone[0].0, 100, "the oldest goes first");
    // Page 100 left at clock 0; the clock is now 1 + others.
    assert_eq!(r.p.nonresident_age, 1 + others);
    r.refault(100, gone[0].1);
    r.check();
    r.flags_of(100) & PG_ACTIVE != 0
}

#[test]
fn refault_distance_against_workingset_size() {
    // Anon refault with swap: workingset = active file (0) + inactive file (0) + active anon
    // (4). Distance = 1 + others.
    assert!(refault_after(3), "distance 4 <= 4");
    assert!(!refault_after(4), "distance 5 > 4");
}

#[test]
fn readahead_page_checks_its_slot_shadow() {
    use crate::mm::frames::F_SWAPCACHE;
    let mut r = Rig::new(8);
    let f = r.fault(1, false);
    r.p.lists[LRU_INACTIVE_ANON].remove(&mut r.p.links, f);
    r.p.add_folio(f, PG_ACTIVE);
    // Two swapped-out pages read ahead into the swap cache (unmapped): one evicted at clock 0
    // (distance 0 <= 1 active anon page: activated), one with no shadow (inactive).
    for (vpn, shadow) in [(50u64, SHADOW_VALID), (51, 0)] {
        let slot = r.mm.alloc_swap_slot(vpn);
        r.mm.swap.set_shadow(slot, shadow);
        let f = r.mm.alloc_frame(vpn, F_ANON | F_SWAPCACHE).unwrap();
        r.mm.frames.set_slot(f, slot);
        r.mm.swap.set_cached_frame(slot, f);
        let t = Touch {
            t: 0,
            next_use: u64::MAX,
            vpn,
            write: false,
        };
        r.p.on_insert(&r.mm, f, t, Insert::Readahead);
    }
    assert_eq!(r.list(LRU_ACTIVE_ANON), vec![50, 1]);
    assert_eq!(r.list(LRU_INACTIVE_ANON), vec![51]);
    assert_eq!(counter(&r.p, "workingset_activate_anon"), 1);
    // Unmapped, so never young: the next scan reclaims it at once.
    assert_eq!(r.shrink_inactive(1, LRU_INACTIVE_ANON).len(), 1);
}

#[test]
fn workingset_restore_costs_one_io() {
    let mut r = Rig::new(16);
    for v in 0..5 {
        r.fault(v, false);
    }
    // Make page 0 active, then deactivate it: it gains PG_workingset.
    let f0 = pte_frame(r.mm.pt.pte(0));
    r.p.lists[LRU_INACTIVE_ANON].remove(&mut r.p.links, f0);
    r.p.add_folio(f0, PG_ACTIVE);
    for v in 1..5 {
        let f = pte_frame(r.mm.pt.pte(v));
        r.p.lists[LRU_INACTIVE_ANON].remove(&mut r.p.links, f);
        r.p.add_folio(f, PG_ACTIVE);
    }
    // Active (head→tail): 4 3 2 1 0. Deactivate the tail page 0.
    r.p.shrink_active_list(1, LRU_ACTIVE_ANON, &mut r.mm);
    assert_eq!(r.flags_of(0), PG_LRU | PG_WORKINGSET);
    let gone = r.shrink_inactive(1, LRU_INACTIVE_ANON);
    assert_eq!(gone[0].0, 0);
    assert_eq!(gone[0].1, SHADOW_VALID | SHADOW_WORKINGSET);
    // Reclaim cost: one page written (no swap slot yet) = 32, over an LRU of 4 pages:
    // 32 > 4/4 → halved to 16.
    assert_eq!(r.p.cost, [16, 0]);
    // Refault at distance 1 <= 4 active anon: activated, and a restore (it was workingset):
    // lru_note_cost_refault adds 32 → 48 > 4/4 → 24.
    r.refault(0, gone[0].1);
    assert_eq!(r.flags_of(0), PG_LRU | PG_ACTIVE | PG_WORKINGSET);
    assert_eq!(r.p.cost, [24, 0]);
    assert_eq!(counter(&r.p, "workingset_activate_anon"), 1);
    assert_eq!(counter(&r.p, "workingset_restore_anon"), 1);
    r.check();
}

#[test]
fn scan_count_balances() {
    let mut p = ClockLru::new(1);
    let lens = [40u32, 0, 20, 8];
    for (l, &n) in lens.iter().enumerate() {
        p.lists[l].len = n;
    }
    let plan = ScanPlan::default();
    // SCAN_FRACT with no cost recorded: ap = 60·1/1 = 60, fp = 140·1/1 = 140.
    // priority 1: IA 20·60/200 = 6; IF 10·140/200 = 7; AF 4·140/200 = 2.8 → 2.
    let s = sc(1, ReclaimReason::Kswapd, 32);
    assert_eq!(p.get_scan_count(&s, &plan), [6, 0, 7, 2]);
    // Costs anon 100, file 20: total 120; anon 220, file 140; total 360.
    // ap = 60·361/221 = 98; fp = 140·361/141 = 358; denominator 456.
    // IA 20·98/456 = 4; IF 10·358/456 = 7; AF 4·358/456 = 3.
    p.cost = [100, 20];
    assert_eq!(p.get_scan_count(&s, &plan), [4, 0, 7, 3]);
    // priority 0 with swappiness: SCAN_EQUAL, whole lists.
    assert_eq!(
        p.get_scan_count(&sc(0, ReclaimReason::Kswapd, 32), &plan),
        [40, 0, 20, 8]
    );
    // swappiness 0 at priority 0 stays SCAN_FRACT: ap = 0.
    let mut s0 = sc(0, ReclaimReason::Kswapd, 32);
    s0.swappiness = 0;
    assert_eq!(p.get_scan_count(&s0, &plan), [0, 0, 20, 8]);
    // file_is_tiny → SCAN_ANON; cache_trim_mode → SCAN_FILE; no swap → SCAN_FILE.
    let tiny = ScanPlan {
        file_is_tiny: true,
        ..plan
    };
    assert_eq!(p.get_scan_count(&s, &tiny), [20, 0, 0, 0]);
    let trim = ScanPlan {
        cache_trim_mode: true,
        ..plan
    };
    assert_eq!(p.get_scan_count(&s, &trim), [0, 0, 10, 4]);
    let mut noswap = s.clone();
    noswap.may_swap = false;
    assert_eq!(p.get_scan_count(&noswap, &tiny), [0, 0, 10, 4]);
}

/// Linux 6.1's `lru_note_cost` (mm/swap.c): pages of I/O alone, no rotation term and no
/// `SWAP_CLUSTER_MAX` weight; the same decay. With 400 pages: 2 I/Os + 5 rotations cost 2;
/// 99 file I/Os make 101 > 100: both halved, [1, 49]. The restore of `workingset_refault`
/// (`lru_note_cost_folio`) costs its one page: in [`workingset_restore_costs_one_io`]'s
/// setting, the write of one page costs 1 (1 ≤ 4 / 4, kept) and the restore 1 more (2 > 1:
/// halved to 1).
#[test]
fn lru_note_cost_of_linux_6_1_counts_pages_of_io() {
    let mut p = ClockLru::new(1);
    p.kernel = KernelVersion::V6_1;
    p.lists[LRU_INACTIVE_ANON].len = 400;
    p.lru_note_cost(0, 2, 5);
    assert_eq!(p.cost, [2, 0]);
    p.lru_note_cost(1, 99, 0);
    assert_eq!(p.cost, [1, 49]);

    let mut r = Rig::new(16);
    r.p.kernel = KernelVersion::V6_1;
    for v in 0..5 {
        r.fault(v, false);
    }
    for v in 0..5 {
        let f = pte_frame(r.mm.pt.pte(v));
        r.p.lists[LRU_INACTIVE_ANON].remove(&mut r.p.links, f);
        r.p.add_folio(f, PG_ACTIVE);
    }
    r.p.shrink_active_list(1, LRU_ACTIVE_ANON, &mut r.mm);
    let gone = r.shrink_inactive(1, LRU_INACTIVE_ANON);
    assert_eq!(r.p.cost, [1, 0]);
    r.refault(0, gone[0].1);
    assert_eq!(r.flags_of(0), PG_LRU | PG_ACTIVE | PG_WORKINGSET);
    assert_eq!(r.p.cost, [1, 0]);
    r.check();
}

#[test]
fn lru_note_cost_decays() {
    let mut p = ClockLru::new(1);
    p.lists[LRU_INACTIVE_ANON].len = 400;
    // 2 I/Os + 5 rotations = 69 ≤ 100: kept.
    p.lru_note_cost(0, 2, 5);
    assert_eq!(p.cost, [69, 0]);
    // + 32 file → 101 > 100: both halved.
    p.lru_note_cost(1, 1, 0);
    assert_eq!(p.cost, [34, 16]);
}

#[test]
fn refault_activation_allows_deactivation_until_snapshot() {
    let mut r = Rig::new(16);
    for v in 0..6 {
        r.fault(v, false);
    }
    // Inactive 6, active 0: not low, no refaults → the active list is left alone.
    let s = sc(3, ReclaimReason::Kswapd, 32);
    assert!(!r.p.prepare_scan_control(&r.mm, &s).may_deactivate[0]);
    // A refault activation (distance 0 ≤ anything) flips it until the reclaim run
    // snapshots: `snapshot_refaults` runs at the end of `balance_pgdat` and of
    // `do_try_to_free_pages` (mm/vmscan.c, 6.1 and 6.8), not after each `shrink_node` pass,
    // so every pass of the run still deactivates.
    r.p.c.workingset_activate[0] += 1;
    assert!(r.p.prepare_scan_control(&r.mm, &s).may_deactivate[0]);
    let mut s2 = s.clone();
    r.shrink(&mut s2);
    assert!(r.p.prepare_scan_control(&r.mm, &s).may_deactivate[0]);
    r.p.reclaim_done(ReclaimReason::Kswapd);
    assert!(!r.p.prepare_scan_control(&r.mm, &s).may_deactivate[0]);
}

#[test]
fn kswapd_stops_early_and_trims_the_other_type() {
    let mut r = Rig::new(400);
    for v in 0..200 {
        r.fault(v, false);
    }
    for v in 1000..1100 {
        r.fault(v, true);
    }
    for v in (0..200).chain(1000..1100) {
        r.mm.test_and_clear_young(pte_frame(r.mm.pt.pte(v)));
    }
    // priority 0: SCAN_EQUAL, targets [200, 0, 100, 0]. Round 1 reclaims 32 anon + 32 file
    // = 64 ≥ 32. Left: anon 168, file 68; file is smaller: percentage = 68·100/101 = 67;
    // anon target becomes 200·33/100 = 66 less the 32 scanned = 34. Round 2: 32 anon.
    // Then nothing left of file → stop.
    let mut s = sc(0, ReclaimReason::Kswapd, 32);
    let gone = r.shrink(&mut s);
    assert_eq!(gone.len(), 96);
    assert_eq!(counter(&r.p, "pgsteal_anon"), 64);
    assert_eq!(counter(&r.p, "pgsteal_file"), 32);
    assert_eq!(s.nr_scanned, 96);
    r.check();
}

#[test]
fn referenced_dirty_file_page_is_kept_once() {
    let mut r = Rig::new(4);
    r.fault(7, true);
    *r.mm.pt.walk(7) |= crate::mm::PTE_DIRTY;
    // Trip 1: young → referenced, kept. Trip 2: not young but referenced file and dirty →
    // FOLIOREF_RECLAIM_CLEAN on a dirty page: kept (not counted as a reference keep).
    assert!(r.shrink_inactive(1, LRU_INACTIVE_FILE).is_empty());
    assert!(r.shrink_inactive(1, LRU_INACTIVE_FILE).is_empty());
    assert_eq!(r.p.c.nr_ref_keep, 1);
    assert_eq!(r.flags_of(7), PG_LRU | FILE);
    // Trip 3: unreferenced → reclaimed (written back by the engine).
    assert_eq!(r.shrink_inactive(1, LRU_INACTIVE_FILE).len(), 1);
    // lru_note_cost: a rotation for each keep, each halved at once over an LRU of one page
    // (1 > 1/4 → 0); then one I/O for the write: 32 > 0/4 → 16.
    assert_eq!(r.p.cost, [0, 16]);
    r.check();
}

/// kswapd runs while free <= high (`pgdat_balanced` wants free > high), so with high 0 it
/// stops as soon as one frame is free.
fn tiny_machine() -> MachineConfig {
    MachineConfig {
        page_cluster: Some(0),
        watermarks: Some(Watermarks {
            min: 0,
            low: 0,
            high: 0,
        }),
        check_invariants: true,
        // A synchronous swap device (zram): a victim is freed in the pass that picks it,
        // as the hand traces below assume. Asynchronous writes: see
        // `async_swap_writes_keep_the_victim_until_a_second_scan`.
        swap_sync_io: true,
        ..MachineConfig::new(6)
    }
}

/// Hand trace on a 6-frame machine: hot pages 1 and 2 touched between cold pages 101..109.
/// kswapd asks for max(high, 32) = 32 pages a pass, so every pass raises its priority, and it
/// stops after priority 1; direct reclaim (free = 0 = min) then runs `do_try_to_free_pages`:
/// passes from priority 12 down until they have reclaimed `nr_to_reclaim` = 32 in all, which
/// six frames never reach, so every stall runs all 13 passes, priority 0 included (SCAN_EQUAL:
/// every inactive page). With lists this short, pages kept by kswapd are reached again by
/// direct reclaim with no access in between, so each stall empties memory, hot pages too.
#[test]
fn replay_tiny_hand_trace() {
    let trace = [
        1, 2, 101, 102, 103, 104, 1, 2, 105, 1, 2, 106, 1, 2, 107, 1, 2, 108, 1, 2, 109,
    ];
    let spec = ReplaySpec {
        policy: PolicyKind::ClockLru,
        machine: tiny_machine(),
        options: PolicyOptions::new(1),
        sample_every: 0,
        warmup: 0,
    };
    let res = replay(&mut VecSource::from_pages(&trace), &spec, None).unwrap();
    let mut m = Machine::new(&tiny_machine(), ClockLru::new(6)).unwrap();
    for &p in &trace {
        m.access(Access::read(p), u64::MAX);
    }
    assert_eq!(res.stats, m.stats);
    // Inactive anon, head first, after the fill: 104 103 102 101 2 1, all young.
    // Access 9 (105), free 0: kswapd. Priorities 12..3 scan 6 >> p = 0; p=2 (SCAN_ANON: file
    // is tiny, file + free = 0 ≤ high) keeps 1; p=1 keeps 2, 101, 102 (young: PG_referenced
    // set, back to the head); give up. List: 102 101 2 1 104 103.
    // Direct reclaim, one `do_try_to_free_pages` (allocstall 1): p=12..3 scan nothing; p=2
    // keeps 103; p=1 scans 104 (young, kept), 1, 2 (referenced, not young: reclaimed,
    // shadows 0 and 1): 2 < 32, so on (the old rule stopped here, free > min). p=0: free is 2
    // > high, so file is no longer tiny; priority 0 is SCAN_EQUAL: all 4 left (101, 102, 103,
    // 104, each referenced and no longer young) are reclaimed, shadows 2..5. 6 < 32 after
    // priority 0: the call ends with memory empty (free 6); 105 is mapped.
    // Accesses 10, 11: 1 and 2 refault at distances 6 and 5 > workingset 0 → inactive.
    // Accesses 12, 15, 18 map 106, 107, 108 into the free frames (free 3 → 0), no reclaim.
    // Access 21 (109): inactive 108 107 106 2 1 105, all young. kswapd p=2 keeps 105, p=1
    // keeps 1, 2, 106. Direct (allocstall 2): p=2 keeps 107; p=1 keeps 108 and reclaims 105
    // and 1; p=0 reclaims 2, 106, 107, 108: memory empty again, shadows 6..11, 109 mapped.
    // 1 and 2 are written again: their refaults came through the synchronous device's path
    // (`do_swap_page` skipping the swap cache), which freed their slots, so 12 swap-outs for
    // 12 evictions.
    let s = &m.stats;
    assert_eq!((s.faults, s.minor_faults, s.major_faults), (13, 11, 2));
    assert_eq!((s.evictions, s.pswpout, s.pswpin), (12, 12, 2));
    assert_eq!(
        (s.pgscan_kswapd, s.pgsteal_kswapd, s.kswapd_wakeups),
        (8, 0, 2)
    );
    // Per stall: 1 + 3 + 4 scanned, 2 + 4 reclaimed.
    assert_eq!(
        (s.pgscan_direct, s.pgsteal_direct, s.allocstall),
        (16, 12, 2)
    );
    let pc = &res.policy_counters;
    assert_eq!(pc["nr_ref_keep"], 12);
    assert_eq!(pc["pgscan_anon"], 24);
    assert_eq!(pc["pgsteal_anon"], 12);
    assert_eq!(pc["pgactivate"], 0);
    assert_eq!(pc["pgrefill"], 0);
    assert_eq!(pc["workingset_activate_anon"], 0);
    assert_eq!(pc["nr_inactive_anon"], 1);
    let p = &m.policy;
    assert_eq!(p.list_vpns_for_test(&m.mm), vec![109]);
    assert_eq!(p.nonresident_age, 12);
    // anon cost pass by pass (lru size after the pass in brackets, halved when over size/4):
    // kswapd 1 [6]; +3 = 4 → 2 [6]; direct +1 = 3 → 1 [6]; +2·32+1 = 66 → 33 [4];
    // +4·32 = 161 → 80 [0]; kswapd +1 = 81 → 40 [6]; +3 = 43 → 21 [6]; direct +1 = 22 → 11
    // [6]; +2·32+1 = 76 → 38 [4]; +4·32 = 166 → 83 [0].
    assert_eq!(p.cost, [83, 0]);
}

/// Hot set + scan on 64 frames: after a warm-up the 8 hot pages sit on the active list; then
/// with no refault and inactive (≥ 64 − 8 − 8 free) never below active, nothing deactivates
/// them, and each cold page is kept once (young from its fault) and reclaimed on its second
/// trip without ever being activated.
#[test]
fn replay_hot_set_survives_a_scan() {
    const HOT: u64 = 8;
    let cfg = MachineConfig {
        page_cluster: Some(0),
        watermarks: Some(Watermarks {
            min: 0,
            low: 0,
            high: 8,
        }),
        check_invariants: true,
        ..MachineConfig::new(64)
    };
    let round = |cold: u64| (0..HOT).chain(std::iter::once(1000 + cold));
    let mut m = Machine::new(&cfg, ClockLru::new(64)).unwrap();
    let warm = 400;
    for c in 0..warm {
        for p in round(c) {
            m.access(Access::read(p), u64::MAX);
        }
    }
    let hot_active = |m: &Machine<ClockLru>| {
        (0..HOT).all(|v| {
            let pte = m.mm.pt.pte(v);
            pte & crate::mm::PTE_PRESENT != 0
                && m.policy.flags[pte_frame(pte) as usize] & PG_ACTIVE != 0
        })
    };
    assert!(hot_active(&m), "warm-up activated the hot set");
    assert_eq!(m.policy.c.workingset_activate, m.policy.refaults_snapshot);
    let (s0, c0) = (m.stats.clone(), m.policy.c.clone());
    let measured = 1000;
    for c in warm..warm + measured {
        for p in round(c) {
            m.access(Access::read(p), u64::MAX);
        }
    }
    let s = &m.stats;
    assert_eq!(s.faults - s0.faults, measured, "only the cold pages fault");
    assert_eq!(s.major_faults, s0.major_faults);
    let c = &m.policy.c;
    assert_eq!(c.pgactivate, c0.pgactivate);
    assert_eq!(c.pgdeactivate, c0.pgdeactivate);
    assert_eq!(c.pgrefill, c0.pgrefill, "the active list was never scanned");
    assert!(s.evictions >= s0.evictions + measured - 64);
    assert!(hot_active(&m));
}

/// swappiness 0 on 8 frames, watermarks 0/0/0: 7 anon pages, 1 file page, then anon 8 and 9.
/// Each fault at free 0 wakes kswapd (free <= low) before direct reclaim (free <= min).
#[test]
fn swappiness_zero_takes_file_then_anon_once_file_is_tiny() {
    let cfg = MachineConfig {
        page_cluster: Some(0),
        watermarks: Some(Watermarks {
            min: 0,
            low: 0,
            high: 0,
        }),
        swappiness: 0,
        check_invariants: true,
        swap_sync_io: true, // victims freed in the pass that picks them
        ..MachineConfig::new(8)
    };
    let mut m = Machine::new(&cfg, ClockLru::new(8)).unwrap();
    m.mm.vmas.add(file_vma()).unwrap();
    for p in [1, 2, 3, 4, 5, 6, 7, 100, 8] {
        m.access(Access::read(p), u64::MAX);
    }
    // Page 8: kswapd (priorities 12..1) scans nothing: SCAN_FRACT with swappiness 0 gives
    // anon nothing and file is 1 >> p = 0. Direct reclaim: file 1 >> p = 0 until priority 0,
    // where cache-trim mode scans it: young, kept. The retried cascade reaches it again at
    // priority 0: referenced, not young, clean → reclaimed.
    assert_eq!(m.stats.evictions, 1);
    assert_eq!(m.stats.pgscan_kswapd, 0);
    assert_eq!(counter(&m.policy, "pgsteal_file"), 1);
    assert_eq!(counter(&m.policy, "nr_ref_keep"), 1);
    m.access(Access::read(9), u64::MAX);
    // Page 9: no file left, so file + free (0) <= high (0): file is tiny, SCAN_ANON once
    // 8 >> p > 0. kswapd: p=3 keeps 1, p=2 keeps 2 and 3, p=1 keeps 4..7 (all young from
    // their faults), then gives up; inactive anon is now, head first, 7 6 5 4 3 2 1 8.
    // Direct reclaim: p=3 scans 8 (young: kept, to the head); p=2 scans 1 and 2, referenced
    // but no longer young: reclaimed (written to swap), and free 2 > min ends it.
    assert_eq!((m.stats.evictions, m.stats.pswpout), (3, 2));
    assert_eq!((m.stats.pgscan_kswapd, m.stats.pgsteal_kswapd), (7, 0));
    assert_eq!(counter(&m.policy, "pgsteal_anon"), 2);
    assert_eq!(counter(&m.policy, "nr_ref_keep"), 1 + 7 + 1);
    assert_eq!(
        m.policy.list_vpns_for_test(&m.mm),
        vec![9, 8, 7, 6, 5, 4, 3]
    );
}

#[test]
fn registered_as_kernel_policy() {
    let k = PolicyKind::from_name("clock-lru").unwrap();
    assert_eq!(k.name(), "clock-lru");
    let p = ClockLru::new(4);
    assert_eq!(p.family(), Family::Kernel);
}

use crate::policy::{PolicyKind, PolicyOptions};
use crate::replay::{replay, ReplaySpec};
use crate::trace::VecSource;

fn file_vma() -> Vma {
    Vma {
        start: 64,
        end: 128,
        kind: VmaKind::File { file: 1 },
        seq_or_rand_hint: false,
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Random traces over anon and file pages, random watermarks, swappiness and readahead:
    /// every invariant holds after every access.
    #[test]
    fn random_traces_keep_invariants(
        frames in 8u32..48,
        wm in (0u32..3, 0u32..3, 0u32..4),
        swappiness in 0u32..=200,
        page_cluster in 0u8..3,
        trace in proptest::collection::vec((0u64..160, proptest::bool::ANY), 1..600),
    ) {
        let min = wm.0;
        let low = min + wm.1;
        let high = (low + wm.2).min(frames / 2);
        let cfg = MachineConfig {
            page_cluster: Some(page_cluster),
            watermarks: Some(Watermarks { min: min.min(high), low: low.min(high), high }),
            swappiness,
            check_invariants: true,
            ..MachineConfig::new(frames)
        };
        let mut m = Machine::new(&cfg, ClockLru::new(frames)).unwrap();
        m.mm.vmas.add(file_vma()).unwrap();
        for (page, write) in trace {
            let a = if write { Access::write(page) } else { Access::read(page) };
            m.access(a, u64::MAX);
        }
        m.validate().unwrap();
    }
}

/// A measurement, not a check (throughput depends on the machine): release-mode replay of
/// 10M accesses of a skewed stream (page = 1M · u^k for
/// uniform u) over 1M pages with 100K frames (10%). Run with
/// `cargo test --release -p vmemsim-core clock_lru_speed -- --ignored --nocapture`.
/// `VMEMSIM_SPEED_SKEW` sets k (default 3, as in `benches/replay.rs`).
#[test]
#[ignore]
fn clock_lru_speed() {
    const N: usize = 10_000_000;
    const PAGES: f64 = 1_000_000.0;
    let k: i32 = std::env::var("VMEMSIM_SPEED_SKEW")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let trace: Vec<Access> = (0..N)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            Access::read((u.powi(k) * PAGES) as u64)
        })
        .collect();
    let only_clock = std::env::var("VMEMSIM_SPEED_ONLY_CLOCK").is_ok();
    for (policy, page_cluster) in [
        (PolicyKind::ClockLru, Some(0)),
        (PolicyKind::ClockLru, None),
        (PolicyKind::Lru, None),
        (PolicyKind::Fifo, None),
    ] {
        if only_clock && (policy != PolicyKind::ClockLru || page_cluster.is_none()) {
            continue;
        }
        let spec = ReplaySpec {
            policy,
            machine: MachineConfig {
                page_cluster,
                ..MachineConfig::new(100_000)
            },
            options: PolicyOptions::new(1),
            sample_every: 0,
            warmup: 0,
        };
        let t = std::time::Instant::now();
        let r = replay(&mut VecSource::new(trace.clone()), &spec, None).unwrap();
        let secs = t.elapsed().as_secs_f64();
        let rate = N as f64 / secs / 1e6;
        eprintln!(
            "{} page_cluster {}: {rate:.2} M accesses/s; faults {:.2}%, evictions {}, \
             scanned {}",
            policy.name(),
            r.page_cluster,
            100.0 * r.stats.faults as f64 / N as f64,
            r.stats.evictions,
            r.stats.pgscan_kswapd + r.stats.pgscan_direct,
        );
    }
}

/// 4 frames, watermarks 0/0/0, no readahead, an asynchronous swap device: pages 1..4
/// written, their accessed bits then cleared (inactive anon, head first: 4, 3, 2, 1).
fn four_written_pages() -> Machine<ClockLru> {
    let cfg = MachineConfig {
        page_cluster: Some(0),
        watermarks: Some(Watermarks {
            min: 0,
            low: 0,
            high: 0,
        }),
        check_invariants: true,
        ..MachineConfig::new(4)
    };
    assert!(!cfg.swap_sync_io);
    let mut m = Machine::new(&cfg, ClockLru::new(4)).unwrap();
    for p in 1..=4 {
        m.access(Access::write(p), u64::MAX);
    }
    for p in 1..=4u64 {
        *m.mm.pt.walk(p) &= !PTE_ACCESSED;
    }
    m
}

/// An asynchronous swap device (a disk): `shrink_folio_list` keeps a folio that `pageout`
/// left under writeback, `folio_rotate_reclaimable` moves it to the inactive tail when the
/// write completes, and the next scan frees it without writing (Linux 6.1 and 6.8 alike).
/// 4 frames, watermarks 0/0/0, no file pages: pages 1..4 written, their accessed bits then
/// cleared; page 5's fault finds free 0 = low and runs kswapd (32 pages a pass, priority
/// falling after each pass that frees nothing or scans fewer than 32).
/// - p 12..3: 4 >> p = 0 pages scanned.
/// - p 2: one page, the tail, 1: not young, not referenced → reclaim; no slot, so written:
///   kept (pswpout 1), rotated to the tail. Nothing freed.
/// - p 1: two pages from the tail: 1, clean in the swap cache and unmapped → freed without a
///   write; 2 → written and kept (pswpout 2). free = 1 > high: kswapd stops.
///
/// Then 2 is read: a minor fault from the swap cache, no I/O.
#[test]
fn async_swap_writes_keep_the_victim_until_a_second_scan() {
    let mut m = four_written_pages();
    m.access(Access::write(5), u64::MAX);
    let s = &m.stats;
    assert_eq!((s.pswpout, s.evictions), (2, 1));
    assert_eq!((s.pgscan_kswapd, s.pgsteal_kswapd), (1 + 2, 1));
    assert_eq!((s.pgscan_direct, s.allocstall, s.kswapd_wakeups), (0, 0, 1));
    assert_eq!(counter(&m.policy, "nr_writeback_keep"), 2);
    assert_eq!(counter(&m.policy, "pgsteal_anon"), 1);
    // Inactive anon, head first: 5 (new), 4, 3, and 2 rotated to the tail.
    assert_eq!(m.policy.list_vpns_for_test(&m.mm), vec![5, 4, 3, 2]);
    m.access(Access::read(2), u64::MAX);
    let s = &m.stats;
    assert_eq!((s.faults, s.minor_faults, s.major_faults), (6, 6, 0));
    assert_eq!((s.swapcache_hits, s.pswpin), (1, 0));
    // Not a readahead hit: 2 was never read ahead (`PG_readahead` unset), so the next
    // readahead window does not widen for it.
    assert_eq!(s.swap_ra_hit, 0);
}

/// A write sink that completes every swap write `delay` ns after the pass submits it.
#[derive(Debug)]
struct DelaySink(u64);

impl crate::mm::WriteSink for DelaySink {
    fn flush(&mut self, mm: &mut Mm) {
        let mut io = Vec::new();
        mm.swap.device.take_writes(&mut io);
        for x in io {
            if let crate::mm::SwapIo::Write { slot } = x {
                mm.set_write_done(slot, 1, mm.now + self.0);
            }
        }
    }
}

/// A timed run's swap writes hold their folios until the device completes them
/// (`Machine::set_write_sink`), and direct reclaim that frees nothing by priority 1 sleeps a
/// jiffy (`consider_reclaim_throttle`). Linux 6.1 and 6.8. 4 frames, watermarks 0/0/0,
/// kswapd deferred (it does not run), writes completing 1 µs after each pass; pages 1..4
/// written, their accessed bits cleared (inactive list, head first: 4, 3, 2, 1). Page 5's
/// fault at time 0 reclaims directly (32 pages wanted):
/// - p 12..3: 4 >> p = 0 pages scanned.
/// - p 2: the tail, 1: not young, no slot → written, under writeback: `keep`, back to the
///   head (1, 4, 3, 2). Freed 0.
/// - p 1: 2 and 3 from the tail: written and kept the same way (3, 2, 1, 4). Freed 0, so
///   `consider_reclaim_throttle`: 3 pages under writeback, 2 × 3 > 4 reclaimable → a jiffy's
///   sleep (now 4 ms); the three writes completed at 1 µs: each rotated to the tail.
/// - p 0: all 4 from the tail: 1, 2, 3 clean in the swap cache → freed without writing; 4 →
///   written and kept.
///
/// Without the sink (an untimed replay) each write completes as its pass ends: at p 1 the
/// tail is 1, already rotated and freed.
#[test]
fn timed_swap_writes_hold_their_folios_until_the_device_completes_them() {
    let mut m = four_written_pages();
    m.set_defer_kswapd(true);
    m.set_write_sink(Box::new(DelaySink(1_000)), 0, 0);
    m.access(Access::write(5), u64::MAX);
    let s = &m.stats;
    assert_eq!(
        (s.allocstall, s.pgscan_direct, s.pgsteal_direct),
        (1, 1 + 2 + 4, 3)
    );
    assert_eq!((s.pswpout, s.pgrotated, s.evictions), (4, 3, 3));
    // The cost table's `reclaim_page_ns` is paid at each write (1 at p 2, 2 at p 1, 4 at
    // p 0), not again for 1, 2 and 3 freed clean and unmapped at p 0.
    assert_eq!(s.reclaim_work_direct, 4);
    assert_eq!((s.reclaim_throttled, s.reclaim_throttle_ns), (1, 4_000_000));
    assert_eq!(m.mm.now, 4_000_000);
    assert_eq!(counter(&m.policy, "nr_writeback_keep"), 4);
    // 4 is still under writeback (until 4 ms + 1 µs); 5 came in at the head.
    assert_eq!(m.policy.list_vpns_for_test(&m.mm), vec![5, 4]);
    let f4 = crate::mm::pte_frame(m.mm.pt.pte(5));
    assert!(!m.mm.under_writeback(f4));
    let slot4 = crate::mm::pte_payload(m.mm.pt.pte(4)) as u32;
    let f4 = m.mm.swap.cached_frame(slot4);
    assert!(m.mm.under_writeback(f4));
    m.mm.now = 4_001_000;
    assert!(!m.mm.under_writeback(f4));
}

/// `reclaim_throttle(.., VMSCAN_THROTTLE_WRITEBACK)` for one task (Linux 6.1 and 6.8): it
/// wakes when more than 32 pages have finished writeback since it went to sleep
/// (`__acct_reclaim_writeback`: `nr_written > SWAP_CLUSTER_MAX * nr_throttled`), or after
/// `HZ / 10`. 40 writes completing at 1, 2, .., 40 µs: the 33rd at 33 µs. With 32 in flight
/// no wake-up comes before 100 ms; a write already complete by `now` does not count.
#[test]
fn writeback_throttle_wakes_after_thirty_three_completions_or_100_ms() {
    let mut w = crate::mm::Writeback::new(64);
    for f in 0..40u32 {
        w.start(f);
        let t = (f as u64 + 1) * 1_000;
        w.until[f as usize] = t;
        w.done.push(std::cmp::Reverse((t, f)));
    }
    assert_eq!(w.throttle_until(0), 33_000);
    // From 8 µs on, 32 are still in flight (9..40 µs).
    assert_eq!(w.throttle_until(8_000), 8_000 + 100_000_000);
    // One before: 33 in flight, the last at 40 µs.
    assert_eq!(w.throttle_until(7_000), 40_000);
}

/// A folio found under writeback by a scan is activated (`shrink_folio_list`'s writeback
/// test, case 2: `goto activate_locked`, before `folio_check_references`, so its accessed
/// bit stays), and `lru_move_tail_fn` puts it back at the inactive tail, `PG_active` cleared,
/// when its write completes. Linux 6.1 and 6.8. Pages 1..4 faulted (inactive, head first 4,
/// 3, 2, 1), bits cleared but 1's; 1 and 2 under writeback until 100, now 50. Shrinking the
/// inactive list takes 1, 2, 3, 4 from the tail: 1 and 2 activated (active head first 2, 1;
/// `PGACTIVATE` 2), 3 and 4 freed. Then 1's write completes: inactive [1], active [2].
#[test]
fn a_folio_under_writeback_is_activated_then_rotated_when_its_write_completes() {
    let mut r = Rig::new(4);
    let fs: Vec<FrameId> = (1..=4).map(|p| r.fault(p, false)).collect();
    for p in 2..=4u64 {
        *r.mm.pt.walk(p) &= !PTE_ACCESSED;
    }
    let mut w = crate::mm::Writeback::new(4);
    for &f in &fs[..2] {
        w.start(f);
    }
    r.mm.wb = Some(w);
    for &f in &fs[..2] {
        r.mm.wb.as_mut().unwrap().until[f as usize] = 100;
    }
    r.mm.now = 50;
    let freed = r.shrink_inactive(32, LRU_INACTIVE_ANON);
    assert_eq!(freed.iter().map(|x| x.0).collect::<Vec<_>>(), vec![3, 4]);
    // kswapd without `PGDAT_WRITEBACK`: case 2 for both (`sc->nr.writeback` 2 of 4 taken).
    let w = r.mm.wb.as_ref().unwrap();
    assert_eq!((w.nr_taken, w.nr_writeback, w.nr_immediate), (4, 2, 0));
    assert_eq!(counter(&r.p, "nr_writeback_activate"), 2);
    assert_eq!(counter(&r.p, "pgactivate"), 2);
    assert_eq!(r.list(LRU_ACTIVE_ANON), vec![2, 1]);
    assert!(r.list(LRU_INACTIVE_ANON).is_empty());
    assert_ne!(
        r.mm.pt.pte(1) & PTE_ACCESSED,
        0,
        "1's accessed bit not looked at"
    );
    assert!(r.p.rotate_reclaimable(&r.mm, fs[0]));
    assert_eq!(r.list(LRU_INACTIVE_ANON), vec![1]);
    assert_eq!(r.list(LRU_ACTIVE_ANON), vec![2]);
    assert_eq!(r.flags_of(1) & PG_ACTIVE, 0);
    // (the frames were put under writeback by hand, outside the swap cache the engine's
    // invariant wants them in)
    r.mm.wb = None;
    r.check();
}

/// A write that completes while a pass runs ends its writeback between the pass's batches
/// (`end_swap_bio_write` → `folio_end_writeback` comes from the completion interrupt):
/// `folio_rotate_reclaimable` moves its folio to the inactive tail, where the pass's next
/// batch (`shrink_lruvec` calls `shrink_inactive_list` 32 pages at a time) takes it. Linux
/// 6.1 and 6.8. 96 pages faulted, bits cleared (inactive, head first 96..1); 95 and 96 in
/// the swap cache, clean, written by an earlier pass, their writes completing at 300 ns;
/// each page scanned takes 10 ns and each victim 0, from time 0. Batch 1 takes 1..32 from
/// the tail and ends at 320 ns, after both completions: 95, then 96, go to the tail. Batch 2
/// takes 96, 95 and 33..62; without the completions between batches it would take 33..64.
#[test]
fn a_write_completing_during_a_pass_is_rotated_for_its_next_batch() {
    let mut r = Rig::new(96);
    let fs: Vec<FrameId> = (1..=96).map(|p| r.fault(p, false)).collect();
    for p in 1..=96u64 {
        *r.mm.pt.walk(p) &= !PTE_ACCESSED;
    }
    let mut w = crate::mm::Writeback::new(96);
    w.scan_ns = 10;
    for &f in &fs[94..] {
        r.mm.frames.set_flags(f, crate::mm::frames::F_SWAPCACHE);
        w.start(f);
        w.until[f as usize] = 300;
        w.done.push(std::cmp::Reverse((300, f)));
    }
    r.mm.wb = Some(w);
    let first = r.shrink_inactive(32, LRU_INACTIVE_ANON);
    assert_eq!(
        first.iter().map(|x| x.0).collect::<Vec<_>>(),
        (1..=32).collect::<Vec<_>>()
    );
    assert_eq!(r.mm.now, 320);
    assert_eq!(r.mm.wb.as_ref().unwrap().rotated, 2);
    assert_eq!(r.list(LRU_INACTIVE_ANON)[62..], [95, 96]);
    let second = r.shrink_inactive(32, LRU_INACTIVE_ANON);
    let mut want = vec![96, 95];
    want.extend(33..=62);
    assert_eq!(second.iter().map(|x| x.0).collect::<Vec<_>>(), want);
    assert_eq!(
        r.list(LRU_INACTIVE_ANON),
        (63..=94).rev().collect::<Vec<_>>()
    );
}

/// A folio whose swap read is in flight is locked: `shrink_folio_list`'s `folio_trylock`
/// fails first, so it is kept (back to the inactive head) without its accessed bits being
/// looked at. 4 frames, watermarks 0/0/0, a synchronous device (writes complete at once);
/// pages 1..4 written and their accessed bits cleared; page 1 (the inactive tail) locked
/// until 100. Page 5's fault at time 50 runs kswapd:
/// - p 12..3: nothing scanned.
/// - p 2: one page, 1: locked → kept, to the inactive head (1, 4, 3, 2). Nothing freed.
/// - p 1: two pages from the tail, 2 and 3: not young, not referenced, no slot → written
///   and freed. free = 2 > high: kswapd stops.
///
/// At time 100 (the read done) page 1 is the one freed at p 2, alone.
#[test]
fn a_folio_under_read_is_kept_by_reclaim_until_the_read_completes() {
    for (now, scanned, freed) in [(50, 3, 2), (100, 1, 1)] {
        let cfg = MachineConfig {
            page_cluster: Some(0),
            watermarks: Some(Watermarks {
                min: 0,
                low: 0,
                high: 0,
            }),
            swap_sync_io: true,
            check_invariants: true,
            ..MachineConfig::new(4)
        };
        let mut m = Machine::new(&cfg, ClockLru::new(4)).unwrap();
        for p in 1..=4 {
            m.access(Access::write(p), u64::MAX);
        }
        for p in 1..=4u64 {
            *m.mm.pt.walk(p) &= !PTE_ACCESSED;
        }
        let f = crate::mm::pte_frame(m.mm.pt.pte(1)) as usize;
        let mut lock = vec![0u64; 4];
        lock[f] = 100;
        m.mm.io_lock = Some(lock);
        m.mm.now = now;
        m.access(Access::write(5), u64::MAX);
        let s = &m.stats;
        assert_eq!(
            (s.pgscan_kswapd, s.pgsteal_kswapd),
            (scanned, freed),
            "now {now}"
        );
        if now == 50 {
            assert_eq!(counter(&m.policy, "nr_locked_keep"), 1);
            assert_eq!(m.policy.list_vpns_for_test(&m.mm), vec![5, 1, 4]);
        } else {
            assert_eq!(counter(&m.policy, "nr_locked_keep"), 0);
        }
    }
}

/// A machine of `frames` frames for page-cache tests: watermarks 0 (kswapd runs when an
/// allocation finds no free frame), readahead off (each read of a page not cached reads it
/// alone: `page_cache_sync_ra` → `force_page_cache_ra` of 1 page), one file 0 of 100 pages.
fn page_cache_machine(frames: u32) -> Machine<ClockLru> {
    let p = ClockLru::new(frames);
    crate::engine::pc_machine(p, frames, 0, Default::default(), (100, 100))
}

fn pread(m: &mut Machine<ClockLru>, offset: u64, len: u64) {
    use crate::trace::recorded::FileOp;
    m.file_io(&crate::engine::file_record(FileOp::Pread, offset, len))
        .unwrap();
}

/// The clock-lru flags of file 0's page `index`.
fn file_page_flags(m: &Machine<ClockLru>, index: u64) -> u8 {
    let e = m.mm.pt.pte(m.mm.cache.file(0).base + index);
    assert!(e & crate::mm::PTE_PRESENT != 0, "page {index} not cached");
    m.policy.flags[pte_frame(e) as usize]
}

/// `folio_mark_accessed`'s two touches for an unmapped page-cache page: the first read sets
/// `PG_referenced` (the page joined the inactive file list, `filemap_add_folio` →
/// `folio_add_lru`), the second activates it (to the head of the active file list,
/// PGACTIVATE, referenced cleared). `filemap_read` marks the first page of a read only when
/// the read does not start in the page where the previous read ended (`pos_same_folio`),
/// so small reads walking through one page touch it once.
#[test]
fn two_touch_activation_of_a_page_cache_page() {
    let mut m = page_cache_machine(64);
    pread(&mut m, 0, 100); // page 0: added inactive, first touch → referenced
    assert_eq!(
        file_page_flags(&m, 0) & (PG_ACTIVE | PG_REFERENCED | FILE),
        PG_REFERENCED | FILE
    );
    pread(&mut m, 100, 100); // starts in page 0, where the last read ended: no touch
    pread(&mut m, 200, 3896); // the same
    assert_eq!(
        file_page_flags(&m, 0) & (PG_ACTIVE | PG_REFERENCED),
        PG_REFERENCED
    );
    assert_eq!(counter(&m.policy, "pgactivate"), 0);
    pread(&mut m, 5 * 4096, 10); // elsewhere: page 5 referenced
    pread(&mut m, 0, 10); // page 0 again, second touch → active
    assert_eq!(
        file_page_flags(&m, 0) & (PG_ACTIVE | PG_REFERENCED),
        PG_ACTIVE
    );
    assert_eq!(counter(&m.policy, "pgactivate"), 1);
    assert_eq!(counter(&m.policy, "nr_active_file"), 1);
    assert_eq!(counter(&m.policy, "nr_inactive_file"), 1);
    // `workingset_activation` aged the non-resident clock once.
    assert_eq!(m.policy.nonresident_age, 1);
    // A read spanning pages 5..7 touches page 5 a second time (activated) and 6 once.
    pread(&mut m, 5 * 4096, 8192);
    assert_eq!(
        file_page_flags(&m, 5) & (PG_ACTIVE | PG_REFERENCED),
        PG_ACTIVE
    );
    assert_eq!(
        file_page_flags(&m, 6) & (PG_ACTIVE | PG_REFERENCED),
        PG_REFERENCED
    );
    m.validate().unwrap();
}

/// Read pages 50 and 51 twice each (both activated: the non-resident clock at 2), then pages
/// 0..6 (memory of 8 frames full: 2 active, 6 inactive file pages, all referenced), then
/// `others` more pages, then page 0 again. Returns whether page 0 came back active.
///
/// Each read of a new page finds no free frame: kswapd passes at priorities 12..3 scan
/// `6 >> p` = 0; at 2, cache-trim mode (inactive file `6 >> 2` = 1 ≠ 0, no refault
/// activations, inactive not low: 6 ≥ 2) scans 1 page of inactive file from the tail, the
/// oldest read, referenced but clean (`FOLIOREF_RECLAIM_CLEAN`): reclaimed, its shadow the
/// clock before the eviction, which ages it by one. Page 0 leaves for page 6 at clock 2
/// (clock 3), each of the `others` pages evicts one more, and the refault of page 0 first
/// takes its frame (one more eviction: `filemap_alloc_folio` before `filemap_add_folio` →
/// `workingset_refault`): clock 4 + others, refault distance 2 + others. A file page's
/// workingset (`workingset_test_recent`, swap available) is active file + active anon +
/// inactive anon = 2 + 0 + 0: activated when 2 + others ≤ 2.
fn file_refault_after(others: u64) -> bool {
    let mut m = page_cache_machine(8);
    for p in [50, 51, 50, 51] {
        pread(&mut m, p * 4096, 4096);
    }
    assert_eq!(counter(&m.policy, "nr_active_file"), 2);
    assert_eq!(m.policy.nonresident_age, 2);
    for p in 0..6 {
        pread(&mut m, p * 4096, 4096);
    }
    assert_eq!(m.mm.frames.n_free(), 0);
    pread(&mut m, 6 * 4096, 4096);
    assert_eq!(m.policy.nonresident_age, 3, "page 0 evicted");
    for p in 7..7 + others {
        pread(&mut m, p * 4096, 4096);
    }
    pread(&mut m, 0, 4096);
    assert_eq!(m.stats.workingset_refault_file, 1);
    let active = file_page_flags(&m, 0) & PG_ACTIVE != 0;
    // An activating refault ages the clock once more (`workingset_age_nonresident`).
    assert_eq!(m.policy.nonresident_age, 4 + others + active as u64);
    assert_eq!(
        counter(&m.policy, "workingset_activate_file"),
        active as u64
    );
    m.validate().unwrap();
    active
}

#[test]
fn file_refault_distance_against_workingset_size() {
    assert!(file_refault_after(0), "distance 2 <= workingset 2");
    assert!(!file_refault_after(1), "distance 3 > workingset 2");
}

/// A write that adds a page whose entry holds a shadow is no refault: `generic_perform_write`
/// → `write_begin` → `__filemap_get_folio(FGP_WRITEBEGIN)` allocates with `__GFP_WRITE`
/// (`FGP_WRITE`), and `filemap_add_folio` calls `workingset_refault` only without it. Page 0
/// is evicted as in `file_refault_after` (clock 3 after it); a whole-page write of page 0
/// takes a frame (one more eviction, clock 4), reads nothing, counts no refault and
/// activates nothing: page 0 joins the inactive list, dirty.
#[test]
fn a_write_over_a_shadow_is_no_refault() {
    use crate::trace::recorded::{FileIo, FileOp};
    let mut m = page_cache_machine(8);
    for p in [50, 51, 50, 51] {
        pread(&mut m, p * 4096, 4096);
    }
    for p in 0..7 {
        pread(&mut m, p * 4096, 4096);
    }
    assert_eq!(m.policy.nonresident_age, 3, "page 0 evicted");
    let reads = m.stats.pgpgin;
    m.file_io(&FileIo {
        op: FileOp::Pwrite,
        tid: 1,
        stamp: 0,
        file: 0,
        offset: 0,
        len: 4096,
        addr: 0,
    })
    .unwrap();
    assert_eq!(m.stats.workingset_refault_file, 0);
    assert_eq!(counter(&m.policy, "workingset_activate_file"), 0);
    assert_eq!(m.policy.nonresident_age, 4);
    assert_eq!(m.stats.pgpgin, reads);
    assert_eq!(m.stats.nr_dirty, 1);
    assert_eq!(file_page_flags(&m, 0) & PG_ACTIVE, 0);
    m.validate().unwrap();
}

/// Reclaim's swap writes through the block layer's plug (`swap_plug`, Linux 6.1 and 6.8; the
/// same rules as MG-LRU's): 100 unreferenced anonymous pages on the inactive list, tail first
/// 0..99, each batch of 32 written by `pageout` to consecutive fresh slots, on a device whose
/// requests hold 40 pages. Batch 1 writes 0..31 into one request. In batch 2, pages 32..39
/// fill it; page 40's bio starts a new request, and since the full one is over 128 KiB
/// `blk_add_rq_to_plug` flushes the plug: pages 0..31 (put back by batch 1) are rotated to
/// the tail at once, 32..39 when batch 2 ends. Batch 3 takes the tail first, 39 down to 8,
/// and frees them without writing; 0..7 stay rotated on the list, 40..63 wait in the plug.
#[test]
fn plugged_swap_writes_complete_within_the_pass() {
    let mut r = Rig::new(200);
    for v in 0..100 {
        r.fault(v, false);
        *r.mm.pt.pte_mut(v) &= !PTE_ACCESSED;
    }
    let mut sc = ScanControl {
        writeback_async: true,
        swap_plug: true,
        swap_max_pages: 40,
        ..sc(0, ReclaimReason::Kswapd, 32)
    };
    let mut victims = Vec::new();
    let mut reclaimed = Vec::new();
    for _ in 0..3 {
        reclaimed.push(r.p.shrink_inactive_list(
            32,
            LRU_INACTIVE_ANON,
            &mut r.mm,
            &mut sc,
            &mut victims,
        ));
    }
    assert_eq!(reclaimed, vec![0, 0, 32]);
    assert_eq!(victims, (0..64).collect::<Vec<u32>>());
    let base = r.mm.frames.slot(0);
    for f in 0..64u32 {
        assert_eq!(r.mm.frames.slot(f), base + f, "page {f}");
    }
    let list = r.list(LRU_INACTIVE_ANON);
    assert_eq!(list.len(), 36 + 8);
    assert_eq!(&list[36..], &(0..8).collect::<Vec<u64>>()[..]);
    assert_eq!(counter(&r.p, "pgsteal_anon"), 32);
    for f in 0..64u32 {
        let want = match f {
            0..=7 => WritebackDone::Rotated,
            8..=39 => WritebackDone::Freed,
            _ => WritebackDone::Pending,
        };
        assert_eq!(r.p.writeback_done(f), want, "page {f}");
    }
    assert_eq!(r.p.writeback_done(70), WritebackDone::Untracked);
}

/// `isolate_lru_folios` under a `sc->reclaim_idx` below the highest zone (kswapd balancing a
/// boosted ZONE_DMA; Linux 6.1 and 6.8): ZONE_DMA32's folios are skipped without counting
/// towards the batch, counted in `PGSCAN_SKIP` and in pgscan, and spliced back at the list's
/// head in the order met. Frames 0..4 are ZONE_DMA, 4..8 ZONE_DMA32; faulted 4..8 first
/// (oldest, at the tail), then 0..4.
#[test]
fn isolation_below_the_highest_zone_skips_the_zones_above() {
    let mut r = Rig::new(8);
    r.p.set_zones(&[0, 4]);
    let mut frames = Vec::new();
    for vpn in 0..8 {
        frames.push(r.fault(vpn, false));
    }
    // The rig's frames are handed out lowest first: vpn v in frame v, each faulted to the
    // head, so 0 is at the tail. Move DMA32's to the tail, 7 first: from the tail the list is
    // 4, 5, 6, 7, 0, 1, 2, 3.
    for f in (4..8).rev() {
        r.p.lists[LRU_INACTIVE_ANON].remove(&mut r.p.links, f);
        r.p.lists[LRU_INACTIVE_ANON].push_tail(&mut r.p.links, f);
    }
    r.p.reclaim_idx = Some(0);
    let (taken, looked) = r.p.isolate(2, LRU_INACTIVE_ANON);
    // From the tail: 4, 5, 6, 7 (DMA32, skipped), then 0 and 1 taken.
    assert_eq!((taken, looked), (2, 6));
    assert_eq!(r.p.batch, vec![0, 1]);
    assert_eq!(r.p.skipped, [0, 4, 0, 0]);
    // Back at the head in the order met (`list_move` to `folios_skipped`'s head, then
    // `list_splice` to the list's head), so their order is kept and they are now younger
    // than 2 and 3: from the tail, 2, 3, 4, 5, 6, 7.
    let mut from_tail = Vec::new();
    while let Some(f) = r.p.lists[LRU_INACTIVE_ANON].pop_tail(&mut r.p.links) {
        from_tail.push(f);
    }
    assert_eq!(from_tail, vec![2, 3, 4, 5, 6, 7]);
    assert_eq!(frames, (0..8).collect::<Vec<_>>());
}

//! Tests of the shadow MMU against hand-built guest tables. Expected values are worked out by
//! hand from the rules of Linux 6.8 (quoted in each test), not taken from the model's output.

use super::*;

/// Guest layout used throughout: 4-level tables, root table gfn 1, one PDPT (gfn 2) and one
/// page directory (gfn 3); the page table of 2 MiB region `k` is gfn 16 + k; page `p` of
/// region `k` is at gva `k << 21 | p << 12` and maps data gfn 4096 + 512k + p.
const ROOT: u64 = 1;
const PDPT: u64 = 2;
const PD: u64 = 3;
const LEAF: u64 =
    GuestPte::PRESENT | GuestPte::WRITABLE | GuestPte::USER | GuestPte::ACCESSED | GuestPte::DIRTY;

fn pt(k: u64) -> u64 {
    16 + k
}
fn gva(k: u64, p: u64) -> u64 {
    (k << 21) | (p << 12)
}
fn data(k: u64, p: u64) -> u64 {
    4096 + 512 * k + p
}
fn map(g: &mut HandGuest, k: u64, p: u64) {
    g.map_4k(4, ROOT, &[PDPT, PD, pt(k)], gva(k, p), data(k, p), LEAF);
}
fn role(level: u8) -> Role {
    Role {
        level,
        direct: false,
        access: page::ACC_ALL,
    }
}

fn mmu(n_max: u64, eviction: Eviction) -> ShadowMmu {
    ShadowMmu::new(ShadowMmuConfig {
        guest_pages: 1 << 16,
        n_max_mmu_pages: Some(n_max),
        levels: 4,
        vcpus: 1,
        eviction,
        pcide: false,
        prefetch: true,
    })
    .unwrap()
}

/// Boot: load CR3 (allocates the root).
fn boot(m: &mut ShadowMmu, g: &mut HandGuest) {
    m.set_cr3(g, 0, ROOT, 0, false);
    assert!(m.root(0).is_some());
    m.validate().unwrap();
}

/// One guest access the way the VM layer drives it: walk the shadow tables, fault until it
/// translates. Returns the page-fault outcomes seen.
fn touch(m: &mut ShadowMmu, g: &mut HandGuest, a: u64, write: bool) -> Vec<PfOutcome> {
    let mut outs = Vec::new();
    for _ in 0..4 {
        match m.translate(0, a, write, true) {
            ShadowWalk::Hit { .. } => break,
            ShadowWalk::NoRoot => assert!(m.reload(g, 0)),
            ShadowWalk::Fault { .. } => {
                let o = m.page_fault(g, 0, a, write, true);
                outs.push(o);
                if o != PfOutcome::Fixed && o != PfOutcome::Spurious {
                    break;
                }
            }
        }
        m.validate().unwrap();
    }
    outs
}

#[test]
fn default_pool_size_is_two_percent_with_a_floor_of_64() {
    // 4 GiB guest: 1,048,576 / 50 = 20,971 (KERNEL-FACTS); 1,000 pages: 20 → 64.
    assert_eq!(default_mmu_pages(1 << 20), 20_971);
    assert_eq!(default_mmu_pages(1000), 64);
    assert_eq!(default_mmu_pages(3200), 64);
    assert_eq!(default_mmu_pages(3250), 65);
    let c = ShadowMmuConfig {
        guest_pages: 1 << 20,
        ..Default::default()
    };
    assert_eq!(c.n_max(), 20_971);
}

#[test]
fn bad_config_is_an_error_naming_the_key() {
    let c = ShadowMmuConfig {
        levels: 3,
        ..Default::default()
    };
    match ShadowMmu::new(c).map_err(crate::Error::into_kind) {
        Err(crate::ErrorKind::Config { key, .. }) => assert_eq!(key, "kvm.levels"),
        other => panic!("{other:?}"),
    }
    let c = ShadowMmuConfig {
        n_max_mmu_pages: Some(4),
        ..Default::default()
    };
    assert!(
        matches!(ShadowMmu::new(c).map_err(crate::Error::into_kind), Err(crate::ErrorKind::Config { key, .. }) if key == "kvm.n_max_mmu_pages")
    );
    assert!(Eviction::parse("kvm.eviction", "lru").is_err());
    assert_eq!(
        Eviction::parse("k", "clock-parent").unwrap(),
        Eviction::Clock {
            harvest: Harvest::Parent
        }
    );
}

#[test]
fn first_fault_builds_one_shadow_page_per_guest_table() {
    let mut g = HandGuest::new();
    map(&mut g, 0, 0);
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    assert_eq!(m.n_used(), 1); // the root, shadowing gfn 1
    assert_eq!(
        touch(&mut m, &mut g, gva(0, 0), false),
        vec![PfOutcome::Fixed]
    );
    // root + PDPT + PD + PT = 4 pages, each keyed by its guest table's gfn and level.
    assert_eq!(m.n_used(), 4);
    for (gfn, level) in [(ROOT, 4), (PDPT, 3), (PD, 2), (pt(0), 1)] {
        assert!(
            m.lookup(gfn, role(level)).is_some(),
            "gfn {gfn} level {level}"
        );
    }
    let s = m.stats();
    assert_eq!((s.pf_taken, s.pf_fixed, s.pf_emulate), (1, 1, 0));
    // Four hash misses: the root at CR3 load, then three on the fault.
    assert_eq!(s.mmu_cache_miss, 4);
    // Upper-level tables are write-tracked; the level-1 table is only write-protected.
    assert!(m.write_tracked(ROOT) && m.write_tracked(PDPT) && m.write_tracked(PD));
    assert!(!m.write_tracked(pt(0)));
    // The hardware walk now hits, 4 shadow entries read; the guest frame is data(0,0).
    match m.translate(0, gva(0, 0), false, true) {
        ShadowWalk::Hit {
            gfn, level, refs, ..
        } => {
            assert_eq!((gfn, level, refs), (data(0, 0), 1, 4))
        }
        w => panic!("{w:?}"),
    }
}

#[test]
fn unmapped_address_is_a_guest_fault() {
    let mut g = HandGuest::new();
    map(&mut g, 0, 0);
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    assert_eq!(
        touch(&mut m, &mut g, gva(0, 1), false),
        vec![PfOutcome::GuestFault]
    );
    assert_eq!(m.stats().pf_guest, 1);
    assert_eq!(m.stats().pf_fixed, 0);
}

#[test]
fn prefetch_fills_at_most_the_other_seven_of_the_aligned_group() {
    // Pages 8..=20 of region 0 mapped; a fault on page 11 prefetches 8,9,10,12,13,14,15
    // (the aligned group 8..16 minus the faulting entry) and nothing outside it.
    let mut g = HandGuest::new();
    for p in 8..=20 {
        map(&mut g, 0, p);
    }
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    touch(&mut m, &mut g, gva(0, 11), false);
    assert_eq!(m.stats().prefetched, 7);
    let l1 = m.lookup(pt(0), role(1)).unwrap();
    for p in 0..32usize {
        let present = m.spte(l1, p) & page::SPTE_PRESENT != 0;
        assert_eq!(present, (8..16).contains(&p), "entry {p}");
    }
    // Prefetched entries are not accessed; the faulting one is (make_spte, prefetch=false).
    assert_eq!(m.spte(l1, 11) & page::SPTE_ACCESSED, page::SPTE_ACCESSED);
    assert_eq!(m.spte(l1, 12) & page::SPTE_ACCESSED, 0);
    // Faulting on an already-prefetched page costs no fault.
    let before = m.stats().pf_taken;
    assert!(touch(&mut m, &mut g, gva(0, 13), false).is_empty());
    assert_eq!(m.stats().pf_taken, before);
}

#[test]
fn prefetch_stops_at_the_first_unusable_guest_entry() {
    // Group 0..8: pages 0, 1, 3, 4 mapped (2 is not present); 5 mapped but not accessed.
    // A fault on 4 prefetches 0, 1, then stops at 2: 2 entries.
    let mut g = HandGuest::new();
    for p in [0, 1, 3, 4] {
        map(&mut g, 0, p);
    }
    g.map_4k(
        4,
        ROOT,
        &[PDPT, PD, pt(0)],
        gva(0, 5),
        data(0, 5),
        LEAF & !GuestPte::ACCESSED,
    );
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    touch(&mut m, &mut g, gva(0, 4), false);
    assert_eq!(m.stats().prefetched, 2);
    // A fault on 6 (mapped now) stops at 2 again, then fills nothing more: 0, 1 and 4 are
    // already present and are skipped, 2 breaks the loop.
    map(&mut g, 0, 6);
    touch(&mut m, &mut g, gva(0, 6), false);
    assert_eq!(m.stats().prefetched, 2);
    // The host drops data(0, 0) (absent now) and KVM unmaps it: entry 0 is not present. A
    // fault on 3 tries entry 0 first; its host page is absent (gfn_to_pfn_memslot_atomic
    // fails), so the loop stops there: still 2 in all.
    g.host_absent.insert(data(0, 0));
    m.unmap_gfn(data(0, 0));
    touch(&mut m, &mut g, gva(0, 3), false);
    let l1 = m.lookup(pt(0), role(1)).unwrap();
    assert_eq!(m.spte(l1, 0), 0);
    assert_eq!(m.stats().prefetched, 2);
}

/// Pool of 40 pages; region k's page table gets its own level-1 shadow page, so after the
/// first fault the pool holds root, PDPT, PD and one page per region touched.
fn fill(m: &mut ShadowMmu, g: &mut HandGuest, regions: u64) {
    for k in 0..regions {
        map(g, k, 0);
        touch(m, g, gva(k, 0), false);
        assert!(m.n_used() <= m.n_max(), "over cap after region {k}");
    }
}

#[test]
fn fifo_refill_rule_zaps_oldest_non_roots_and_orphans_stay_counted() {
    let mut g = HandGuest::new();
    let mut m = mmu(40, Eviction::Fifo);
    boot(&mut m, &mut g);
    // Regions 0..33: used = 3 + 33 = 36, 4 free; no zap yet (checked with >= 5 free before
    // each fault: before region k's fault, used = 3 + k (k >= 1) so free = 37 - k >= 5 for
    // k <= 32).
    fill(&mut m, &mut g, 33);
    assert_eq!(m.n_used(), 36);
    assert_eq!(m.stats().mmu_recycled, 0);
    let order = m.active_oldest_first();
    let root = m.root(0).unwrap();
    assert_eq!(order[0], root);
    // Region 33's fault: 4 free < KVM_MIN_FREE_MMU_PAGES → zap KVM_REFILL_PAGES - 4 = 21 from
    // the tail, skipping the root: PDPT, PD, then the page tables of regions 0..=18.
    map(&mut g, 33, 0);
    let pt19 = m.lookup(pt(19), role(1)).unwrap();
    touch(&mut m, &mut g, gva(33, 0), false);
    let s = m.stats();
    assert_eq!(s.mmu_recycled, 21);
    assert_eq!(s.mmu_shadow_zapped, 21);
    for k in 0..=18 {
        assert!(m.lookup(pt(k), role(1)).is_none(), "region {k} survived");
    }
    // The page tables of regions 19..=32 were children of the zapped PD: unlinked, orphaned,
    // still in the hash and still counted. Then the fault re-created PDPT, PD and region 33's
    // page table: used = 36 - 21 + 3 = 18.
    assert_eq!(m.n_used(), 18);
    let p = m.page(pt19).unwrap();
    assert!(p.parents.is_empty(), "orphan has a parent");
    assert_eq!(m.lookup(pt(19), role(1)), Some(pt19));
    assert!(m.lookup(PD, role(2)).is_some());
    assert!(m.root(0).is_some());
    m.validate().unwrap();
}

#[test]
fn pool_never_exceeds_its_cap_fifo_and_clock() {
    for ev in [
        Eviction::Fifo,
        Eviction::Clock {
            harvest: Harvest::None,
        },
        Eviction::Clock {
            harvest: Harvest::Leaf,
        },
        Eviction::Clock {
            harvest: Harvest::Parent,
        },
    ] {
        let mut g = HandGuest::new();
        let mut m = mmu(32, ev);
        boot(&mut m, &mut g);
        for k in 0..200u64 {
            map(&mut g, k, 0);
        }
        let mut x = 12345u64;
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = x % 200;
            touch(&mut m, &mut g, gva(k, 0), x & 1 == 0);
            assert!(m.n_used() <= 32, "{ev:?}: {} used", m.n_used());
        }
        assert!(m.stats().mmu_recycled > 0);
    }
}

#[test]
fn clock_gives_a_second_chance_and_stops_within_two_laps() {
    let mut g = HandGuest::new();
    let mut m = mmu(
        64,
        Eviction::Clock {
            harvest: Harvest::None,
        },
    );
    boot(&mut m, &mut g);
    fill(&mut m, &mut g, 3);
    // List oldest first: root, PDPT, PD, PT0, PT1, PT2 (L = 6); every page was looked up or
    // created, so every reference bit is set.
    assert_eq!(m.n_active(), 6);
    let pdpt = m.lookup(PDPT, role(3)).unwrap();
    // shrink(1): root skipped (1 step), 5 bits cleared (steps 2..6), wrap to the root (7),
    // PDPT now clear → zapped (8).
    assert_eq!(m.shrink(1), 1);
    assert_eq!(m.stats().lru_hand_steps, 8);
    assert_eq!(m.stats().lru_ref_skips, 5);
    assert!(m.page(pdpt).is_none());
    // A fault in region 0 rebuilds PDPT (new, referenced), finds the orphaned PD in the hash
    // (lookup → referenced) and fills PT0's entry 1 (fill → referenced); PT1 and PT2 stay
    // clear. The hand is on PD: PD cleared, PT0 cleared, PT1 zapped: 3 steps.
    map(&mut g, 0, 1);
    touch(&mut m, &mut g, gva(0, 1), false);
    let pt1 = m.lookup(pt(1), role(1)).unwrap();
    assert_eq!(m.shrink(1), 1);
    assert_eq!(m.stats().lru_hand_steps, 11);
    assert!(m.page(pt1).is_none());
    assert!(m.lookup(pt(0), role(1)).is_some());
    // Two-lap bound. List now: root, PD, PT0, PT2, PDPT' (L = 5); bits: PDPT' set, the rest
    // clear; the hand is on PT2. shrink(1000): PT2 zapped (1), PDPT' cleared (2), root (3),
    // PD zapped (4), PT0 zapped (5), PDPT' zapped (6), then only the root is left and the
    // sweep steps on it until 2 × L = 10 steps.
    let len = m.n_active();
    assert_eq!(len, 5);
    let steps0 = m.stats().lru_hand_steps;
    let zapped = m.shrink(1000);
    assert_eq!(m.stats().lru_hand_steps - steps0, 2 * len);
    assert_eq!(zapped, len - 1);
    assert_eq!(m.n_active(), 1);
    m.validate().unwrap();
}

#[test]
fn clock_leaf_harvest_skips_pages_with_accessed_leaves() {
    let mut g = HandGuest::new();
    let mut m = mmu(
        64,
        Eviction::Clock {
            harvest: Harvest::Leaf,
        },
    );
    boot(&mut m, &mut g);
    fill(&mut m, &mut g, 2); // root, PDPT, PD, PT0, PT1; one accessed leaf in each PT
                             // shrink(1): lap 1 clears 4 reference bits (steps 1..5), wraps (6), PDPT has no leaves →
                             // zapped (7).
    assert_eq!(m.shrink(1), 1);
    assert_eq!(m.stats().lru_hand_steps, 7);
    // shrink(1): PD clear, no leaves → zapped (1 step).
    assert_eq!(m.shrink(1), 1);
    assert_eq!(m.stats().lru_hand_steps, 8);
    // shrink(1): PT0 has an accessed leaf → cleared, skipped; PT1 the same; root; PT0 now
    // clear → zapped. 4 steps, 2 age skips, 3 leaf SPTEs examined.
    assert_eq!(m.shrink(1), 1);
    let s = m.stats();
    assert_eq!(s.lru_hand_steps, 12);
    assert_eq!(s.lru_age_skips, 2);
    assert_eq!(s.lru_age_sptes, 3);
    assert!(m.lookup(pt(0), role(1)).is_none());
    assert!(m.lookup(pt(1), role(1)).is_some());
}

#[test]
fn clock_parent_harvest_uses_the_hardware_walks() {
    let mut g = HandGuest::new();
    let mut m = mmu(
        64,
        Eviction::Clock {
            harvest: Harvest::Parent,
        },
    );
    boot(&mut m, &mut g);
    fill(&mut m, &mut g, 2);
    let pt0 = m.lookup(pt(0), role(1)).unwrap();
    let pt1 = m.lookup(pt(1), role(1)).unwrap();
    // The hardware walks after the faults set the A bit of every non-leaf entry used: the
    // parent entries of PDPT, PD, PT0 and PT1 are all accessed. List: root, PDPT, PD, PT0,
    // PT1 (L = 5, bound 10 steps). Lap 1: root skipped, 4 reference bits cleared (5 steps);
    // lap 2: root, then PDPT, PD, PT0, PT1 each skipped for an accessed parent entry, which is
    // cleared (10 steps). Nothing zapped within two laps; bits were cleared, so KVM flushes
    // the TLBs to let the hardware set them again (`lru_age_flushes`).
    m.take_remote_flush();
    assert_eq!(m.shrink(1), 0);
    let s = m.stats();
    assert_eq!(
        (s.lru_hand_steps, s.lru_ref_skips, s.lru_age_skips),
        (10, 4, 4)
    );
    assert_eq!((s.lru_age_sptes, s.lru_age_flushes), (4, 1));
    assert!(m.take_remote_flush());
    // The hand wrapped; next sweep: root, then PDPT (nothing set) is zapped: 2 steps.
    assert_eq!(m.shrink(1), 1);
    assert_eq!(m.stats().lru_hand_steps, 12);
    assert!(m.lookup(PDPT, role(3)).is_none());
    // PD lost its parent. A walk in region 1 faults at the root; the fault creates a PDPT,
    // finds the orphaned PD in the hash and relinks it, reaches PT1 through the PD's intact
    // entry, and finds the leaf already there (RET_PF_SPURIOUS).
    assert_eq!(
        touch(&mut m, &mut g, gva(1, 0), false),
        vec![PfOutcome::Spurious]
    );
    touch(&mut m, &mut g, gva(1, 0), false);
    assert!(m.page(pt0).is_some() && m.page(pt1).is_some());
    m.validate().unwrap();
}

#[test]
fn write_to_level1_table_unsyncs_and_cr3_load_resyncs() {
    let mut g = HandGuest::new();
    map(&mut g, 0, 0);
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    touch(&mut m, &mut g, gva(0, 0), false);
    let pt0 = m.lookup(pt(0), role(1)).unwrap();
    let pd = m.lookup(PD, role(2)).unwrap();
    let pf0 = m.stats().pf_taken;
    // The guest repoints page 0 to gfn 7000: its mapping of the level-1 table is
    // write-protected (account_shadowed), the table is not write-tracked, so the write fault
    // makes the mapping writable and marks the page unsync (mmu_try_to_unsync_pages).
    let new = GuestPte::new(7000, LEAF);
    assert_eq!(
        m.guest_pt_write(&mut g, 0, pt(0), 0, new, true),
        PtWrite::Unsynced
    );
    assert_eq!(m.stats().pf_taken, pf0 + 1);
    assert_eq!(m.stats().mmu_unsync, 1);
    assert!(m.page(pt0).unwrap().unsync);
    // kvm_unsync_page → kvm_mmu_mark_parents_unsync: the PD's entry 0 is flagged, up to the
    // root.
    assert_eq!(m.page(pd).unwrap().unsync_children, 1);
    assert_eq!(m.page(m.root(0).unwrap()).unwrap().unsync_children, 1);
    // Further writes go straight through.
    assert_eq!(
        m.guest_pt_write(&mut g, 0, pt(0), 0, new, true),
        PtWrite::Direct
    );
    assert_eq!(m.stats().pf_taken, pf0 + 1);
    // The stale SPTE still maps the old frame until the guest flushes.
    assert!(
        matches!(m.translate(0, gva(0, 0), false, true), ShadowWalk::Hit { gfn, .. } if gfn == data(0, 0))
    );
    // MOV CR3 (same value, PCID off) → KVM_REQ_MMU_SYNC → kvm_sync_page: the gfn changed, so
    // the SPTE is dropped; the page is write-protected and in sync again.
    m.set_cr3(&mut g, 0, ROOT, 0, false);
    assert_eq!(m.stats().sync_pages, 1);
    assert_eq!(m.stats().mmu_unsync, 0);
    assert_eq!(m.page(pd).unwrap().unsync_children, 0);
    assert_eq!(
        touch(&mut m, &mut g, gva(0, 0), false),
        vec![PfOutcome::Fixed]
    );
    assert!(matches!(
        m.translate(0, gva(0, 0), false, true),
        ShadowWalk::Hit { gfn: 7000, .. }
    ));
    // Write-protected again: the next store exits again.
    assert_eq!(
        m.guest_pt_write(&mut g, 0, pt(0), 1, new, true),
        PtWrite::Unsynced
    );
    m.validate().unwrap();
}

#[test]
fn invlpg_resyncs_only_the_entry_on_the_path() {
    let mut g = HandGuest::new();
    map(&mut g, 0, 0);
    map(&mut g, 0, 1);
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    touch(&mut m, &mut g, gva(0, 0), false); // page 1 prefetched
    let pt0 = m.lookup(pt(0), role(1)).unwrap();
    m.guest_pt_write(&mut g, 0, pt(0), 0, GuestPte::new(7000, LEAF), true);
    m.guest_pt_write(&mut g, 0, pt(0), 1, GuestPte::new(7001, LEAF), true);
    // INVLPG of page 0 syncs entry 0 only (__kvm_mmu_invalidate_addr); the page stays unsync.
    m.invlpg(&mut g, 0, gva(0, 0));
    assert_eq!(m.spte(pt0, 0), 0);
    assert_ne!(m.spte(pt0, 1), 0);
    assert!(m.page(pt0).unwrap().unsync);
    assert_eq!(m.stats().invlpg, 1);
    assert_eq!(m.stats().sync_pages, 0);
    // A guest TLB flush syncs the whole page.
    m.flush_tlb_guest(&mut g, 0);
    assert_eq!(m.spte(pt0, 1), 0);
    assert!(!m.page(pt0).unwrap().unsync);
    m.validate().unwrap();
}

#[test]
fn write_to_upper_level_table_is_emulated_and_flooding_zaps_after_three() {
    let mut g = HandGuest::new();
    map(&mut g, 0, 0);
    map(&mut g, 1, 0);
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    touch(&mut m, &mut g, gva(0, 0), false);
    touch(&mut m, &mut g, gva(1, 0), false);
    let pd = m.lookup(PD, role(2)).unwrap();
    let pt1 = m.lookup(pt(1), role(1)).unwrap();
    let s0 = m.stats().clone();
    // Store into the PD entry of region 1 (same value): write-tracked → emulated
    // (pf_emulate), kvm_mmu_track_write zaps the written SPTE, which unlinks PT1 (orphaned).
    let e1 = g.get(PD, 1);
    assert_eq!(
        m.guest_pt_write(&mut g, 0, PD, 1, e1, true),
        PtWrite::Emulated
    );
    let s = m.stats();
    assert_eq!(s.pf_taken - s0.pf_taken, 1);
    assert_eq!(s.pf_emulate - s0.pf_emulate, 1);
    assert_eq!(s.mmu_pte_write - s0.mmu_pte_write, 1);
    assert_eq!(s.mmu_pde_zapped - s0.mmu_pde_zapped, 1);
    assert_eq!(m.spte(pd, 1), 0);
    assert!(m.page(pt1).unwrap().parents.is_empty());
    assert_eq!(m.page(pd).unwrap().write_flooding_count, 1);
    // Second write: count 2. A fault through the PD resets it (FNAME(fetch) clears the count
    // of every page on the path).
    m.guest_pt_write(&mut g, 0, PD, 1, e1, true);
    assert_eq!(m.page(pd).unwrap().write_flooding_count, 2);
    touch(&mut m, &mut g, gva(1, 0), false);
    assert_eq!(m.page(pd).unwrap().write_flooding_count, 0);
    // Three writes in a row: the third zaps the PD (detect_write_flooding, count >= 3).
    m.guest_pt_write(&mut g, 0, PD, 1, e1, true);
    m.guest_pt_write(&mut g, 0, PD, 1, e1, true);
    assert_eq!(m.stats().mmu_flooded, 0);
    m.guest_pt_write(&mut g, 0, PD, 1, e1, true);
    assert_eq!(m.stats().mmu_flooded, 1);
    assert!(m.lookup(PD, role(2)).is_none());
    assert!(!m.write_tracked(PD));
    // With the PD unshadowed its mapping is still write-protected (protection is not undone
    // on zap), so the next store faults once and is fixed writable.
    assert_eq!(
        m.guest_pt_write(&mut g, 0, PD, 2, GuestPte(0), true),
        PtWrite::Unsynced
    );
    assert_eq!(
        m.guest_pt_write(&mut g, 0, PD, 2, GuestPte(0), true),
        PtWrite::Direct
    );
    m.validate().unwrap();
}

#[test]
fn data_store_to_a_tracked_page_unprotects_it() {
    let mut g = HandGuest::new();
    map(&mut g, 0, 0);
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    touch(&mut m, &mut g, gva(0, 0), false);
    let s0 = m.stats().clone();
    // A non-page-table instruction writes the PD (the guest reuses it): retry_instruction →
    // kvm_mmu_unprotect_page zaps the PD's shadow page; the retried store faults once more.
    assert_eq!(
        m.guest_pt_write(&mut g, 0, PD, 5, GuestPte(0), false),
        PtWrite::Unprotected
    );
    let s = m.stats();
    assert_eq!(s.pf_taken - s0.pf_taken, 2);
    assert_eq!(s.pf_emulate - s0.pf_emulate, 1);
    assert_eq!(s.pf_fixed - s0.pf_fixed, 1);
    assert_eq!(s.mmu_shadow_zapped - s0.mmu_shadow_zapped, 1);
    assert!(m.lookup(PD, role(2)).is_none());
    m.validate().unwrap();
}

#[test]
fn clean_guest_pte_maps_read_only_until_written() {
    let mut g = HandGuest::new();
    g.map_4k(
        4,
        ROOT,
        &[PDPT, PD, pt(0)],
        gva(0, 0),
        data(0, 0),
        LEAF & !GuestPte::DIRTY,
    );
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    touch(&mut m, &mut g, gva(0, 0), false);
    // FNAME(protect_clean_gpte): read fault on a clean PTE → read-only SPTE.
    assert!(matches!(
        m.translate(0, gva(0, 0), false, true),
        ShadowWalk::Hit {
            writable: false,
            ..
        }
    ));
    // A write faults once more; the walk sets the guest's dirty bit and the SPTE is writable.
    assert_eq!(
        touch(&mut m, &mut g, gva(0, 0), true),
        vec![PfOutcome::Fixed]
    );
    assert!(g.get(pt(0), 0).dirty());
    assert!(matches!(
        m.translate(0, gva(0, 0), true, true),
        ShadowWalk::Hit { writable: true, .. }
    ));
    assert_eq!(m.stats().pf_fixed, 2);
}

#[test]
fn guest_large_page_on_small_host_pages_uses_a_direct_page() {
    // A 2 MiB guest page at region 1 (gfn 4096 + 512 ... aligned: data frames 8192..8704).
    let mut g = HandGuest::new();
    g.set(ROOT, 0, GuestPte::table(PDPT));
    g.set(PDPT, 0, GuestPte::table(PD));
    g.set(PD, 1, GuestPte::new(8192, LEAF | GuestPte::LARGE));
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    touch(&mut m, &mut g, gva(1, 5), false);
    // root, PDPT, PD indirect + one direct level-1 page for gfns 8192..8704.
    assert_eq!(m.n_used(), 4);
    let d = m
        .lookup(
            8192,
            Role {
                level: 1,
                direct: true,
                access: page::ACC_ALL,
            },
        )
        .unwrap();
    assert!(!m.write_tracked(8192));
    assert!(matches!(
        m.translate(0, gva(1, 5), false, true),
        ShadowWalk::Hit {
            gfn: 8197,
            level: 1,
            ..
        }
    ));
    // __direct_pte_prefetch: the other 7 of the group.
    assert_eq!(m.stats().prefetched, 7);
    assert_ne!(m.spte(d, 0), 0);
    // With 2 MiB host backing the leaf is a 2 MiB SPTE in the PD page (no direct page).
    let mut g2 = g.clone();
    g2.host_level = 2;
    let mut m2 = mmu(64, Eviction::Fifo);
    boot(&mut m2, &mut g2);
    touch(&mut m2, &mut g2, gva(1, 5), false);
    assert_eq!(m2.n_used(), 3);
    assert!(matches!(
        m2.translate(0, gva(1, 7), false, true),
        ShadowWalk::Hit {
            gfn: 8199,
            level: 2,
            refs: 3,
            ..
        }
    ));
    // But not over a region holding a shadowed guest table (disallow_lpage): region 0 holds
    // gfns 1..3, so a 2 MiB guest page backed by region 0's frames is split.
    g2.set(PD, 2, GuestPte::new(0, LEAF | GuestPte::LARGE));
    touch(&mut m2, &mut g2, gva(2, 0), false);
    assert!(matches!(
        m2.translate(0, gva(2, 0), false, true),
        ShadowWalk::Hit {
            gfn: 0,
            level: 1,
            ..
        }
    ));
    m2.validate().unwrap();
}

#[test]
fn cr3_switch_reuses_cached_roots_and_roots_are_never_recycled() {
    let mut g = HandGuest::new();
    map(&mut g, 0, 0);
    // A second address space rooted at gfn 5 sharing the PDPT.
    g.set(5, 0, GuestPte::table(PDPT));
    let mut m = mmu(40, Eviction::Fifo);
    boot(&mut m, &mut g);
    let r1 = m.root(0).unwrap();
    m.set_cr3(&mut g, 0, 5, 0, false);
    let r2 = m.root(0).unwrap();
    assert_ne!(r1, r2);
    m.set_cr3(&mut g, 0, ROOT, 0, false);
    assert_eq!(m.root(0), Some(r1));
    assert_eq!(m.stats().cr3_cached_root_hits, 1);
    // Both roots are held (current + cached) and survive recycling of everything else.
    fill(&mut m, &mut g, 3);
    m.shrink(1000);
    assert!(m.page(r1).is_some() && m.page(r2).is_some());
    assert_eq!(m.n_used(), 2);
    m.validate().unwrap();
}

#[test]
fn host_unmap_and_aging_go_through_the_rmap() {
    let mut g = HandGuest::new();
    map(&mut g, 0, 0);
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    touch(&mut m, &mut g, gva(0, 0), false);
    assert_eq!(m.rmap_len(data(0, 0)), 1);
    assert!(m.age_gfn(data(0, 0))); // accessed by the faulting fill
    assert!(!m.age_gfn(data(0, 0))); // cleared
    touch(&mut m, &mut g, gva(0, 0), false); // TLB miss walk sets A again
    assert!(m.age_gfn(data(0, 0)));
    assert_eq!(m.unmap_gfn(data(0, 0)), 1);
    assert_eq!(m.rmap_len(data(0, 0)), 0);
    assert!(m.take_remote_flush());
    assert!(matches!(
        m.translate(0, gva(0, 0), false, true),
        ShadowWalk::Fault { .. }
    ));
    m.validate().unwrap();
}

#[test]
fn change_mmu_pages_shrinks_the_pool() {
    let mut g = HandGuest::new();
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    fill(&mut m, &mut g, 20); // 23 pages
    assert_eq!(m.n_used(), 23);
    m.change_mmu_pages(10).unwrap();
    // Zap 13 from the tail (PDPT, PD, PT0..PT10): 10 left, the new cap.
    assert_eq!(m.n_used(), 10);
    assert_eq!(m.n_max(), 10);
    assert!(m.change_mmu_pages(2).is_err());
}

#[test]
fn profile_names_kvm_functions() {
    let mut g = HandGuest::new();
    map(&mut g, 0, 0);
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    touch(&mut m, &mut g, gva(0, 0), false);
    let stacks: Vec<String> = m.profile().stacks().into_iter().map(|s| s.0).collect();
    assert!(stacks.contains(
        &"kvm_mmu_page_fault;paging64_page_fault;paging64_fetch;mmu_set_spte".to_string()
    ));
    assert!(stacks.contains(
        &"kvm_mmu_page_fault;paging64_page_fault;paging64_walk_addr_generic".to_string()
    ));
    assert_eq!(m.profile().calls(KvmFn::KvmMmuPageFault), 1);
    // Priced by calls only, the outer frame's self weight is its one call.
    let folded = m
        .profile()
        .folded(&[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    assert!(folded.lines().any(|l| l == "kvm_mmu_page_fault 1"));
}

/// A random mix of every operation, checked with `validate` after each; two runs with the same
/// seed give the same statistics and profile.
fn random_run(seed: u64, ev: Eviction) -> (KvmStats, Vec<(String, [u64; WORK_KINDS])>) {
    let mut g = HandGuest::new();
    let mut m = mmu(24, ev);
    boot(&mut m, &mut g);
    for k in 0..64u64 {
        for p in 0..4 {
            map(&mut g, k, p * 3);
        }
    }
    let mut x = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..2000 {
        let r = next();
        let k = r % 64;
        let p = (r >> 8) % 4 * 3;
        match (r >> 16) % 16 {
            0 => {
                let e = GuestPte::new(data(k, p + 1), LEAF);
                m.guest_pt_write(&mut g, 0, pt(k), p as usize + 1, e, true);
            }
            1 => {
                let e = g.get(PD, k as usize);
                m.guest_pt_write(&mut g, 0, PD, k as usize, e, (r >> 24) & 3 != 0);
            }
            2 => m.flush_tlb_guest(&mut g, 0),
            3 => m.invlpg(&mut g, 0, gva(k, p)),
            4 => m.set_cr3(&mut g, 0, ROOT, 0, false),
            5 => {
                m.unmap_gfn(data(k, p));
            }
            6 => {
                m.shrink(3);
            }
            _ => {
                touch(&mut m, &mut g, gva(k, p), (r >> 20) & 1 == 1);
            }
        }
        m.validate().unwrap();
        assert!(m.n_used() <= 24);
    }
    (m.stats().clone(), m.profile().stacks())
}

#[test]
fn random_operations_keep_invariants_and_are_deterministic() {
    for ev in [
        Eviction::Fifo,
        Eviction::Clock {
            harvest: Harvest::Leaf,
        },
        Eviction::Clock {
            harvest: Harvest::Parent,
        },
    ] {
        let a = random_run(7, ev);
        let b = random_run(7, ev);
        assert_eq!(a, b);
        assert!(a.0.pf_taken > 0 && a.0.mmu_recycled > 0);
    }
}

#[test]
fn guest_write_through_a_user_mapping_of_a_table_emulates_or_unsyncs() {
    let mut g = HandGuest::new();
    map(&mut g, 0, 0);
    // Region 5 page 0 maps the PD itself; region 6 page 0 maps PT0.
    g.map_4k(4, ROOT, &[PDPT, PD, pt(5)], gva(5, 0), PD, LEAF);
    g.map_4k(4, ROOT, &[PDPT, PD, pt(6)], gva(6, 0), pt(0), LEAF);
    let mut m = mmu(64, Eviction::Fifo);
    boot(&mut m, &mut g);
    touch(&mut m, &mut g, gva(0, 0), false);
    let pd = m.lookup(PD, role(2)).unwrap();
    let pt0 = m.lookup(pt(0), role(1)).unwrap();
    // Write to the PD page through region 5: no SPTE yet, so FNAME(fetch) installs one;
    // make_spte finds the gfn write-tracked (mmu_try_to_unsync_pages → -EPERM), maps it
    // read-only, and the write fault becomes RET_PF_EMULATE.
    assert_eq!(
        touch(&mut m, &mut g, gva(5, 0), true),
        vec![PfOutcome::Emulate { gfn: PD }]
    );
    assert_eq!((m.stats().pf_taken, m.stats().pf_emulate), (2, 1));
    assert!(matches!(
        m.translate(0, gva(5, 0), false, true),
        ShadowWalk::Hit {
            gfn: PD,
            writable: false,
            ..
        }
    ));
    let e0 = g.get(PD, 0);
    m.emulate_write(&mut g, 0, PD, GuestStore::Pte { index: 0, pte: e0 });
    assert_eq!(m.stats().mmu_pte_write, 1);
    assert_eq!(m.page(pd).unwrap().write_flooding_count, 1);
    assert!(m.page(pt0).unwrap().parents.is_empty()); // PD[0] zapped: PT0 orphaned
                                                      // Second write: the SPTE is present and read-only → page_fault_handle_page_track →
                                                      // emulate at once; shadow_page_table_clear_flood clears the counts on region 5's path,
                                                      // which runs through the PD itself.
    assert_eq!(
        touch(&mut m, &mut g, gva(5, 0), true),
        vec![PfOutcome::Emulate { gfn: PD }]
    );
    assert_eq!((m.stats().pf_taken, m.stats().pf_emulate), (3, 2));
    assert_eq!(m.page(pd).unwrap().write_flooding_count, 0);
    // Write to PT0 through region 6: a level-1 table, not write-tracked → its shadow page goes
    // unsync and the SPTE is writable (RET_PF_FIXED).
    assert_eq!(
        touch(&mut m, &mut g, gva(6, 0), true),
        vec![PfOutcome::Fixed]
    );
    assert!(m.page(pt0).unwrap().unsync);
    assert_eq!(m.stats().mmu_unsync, 1);
    m.validate().unwrap();
}

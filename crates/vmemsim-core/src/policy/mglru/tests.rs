//! Tests of MG-LRU against rules read from Linux 6.8 (expected values worked out by hand from
//! the kernel functions named in each test, not taken from this code's output).

use super::*;
use crate::access::Access;
use crate::engine::{Machine, MachineConfig};
use crate::mm::frames::{F_ANON, F_MAPPED};
use crate::mm::{make_present, Vma, VmaKind, PTE_ACCESSED};
use crate::policy::{Insert, PolicyKind, ReclaimReason, ScanControl, Touch};
use crate::replay::{replay, ReplaySpec};
use crate::trace::VecSource;

/// A machine big enough (4096 frames: kswapd wakes at 160 free) that nothing is reclaimed
/// unless a test calls the policy itself.
fn machine(preset: Preset) -> Machine<MgLru> {
    machine_with(preset, PolicyOptions::new(7), 4096)
}

fn machine_with(preset: Preset, opts: PolicyOptions, frames: u32) -> Machine<MgLru> {
    let p = MgLru::new(frames, &opts, preset).unwrap();
    let cfg = MachineConfig {
        check_invariants: true,
        ..MachineConfig::new(frames)
    };
    Machine::new(&cfg, p).unwrap()
}

fn touch(m: &mut Machine<MgLru>, pages: impl IntoIterator<Item = u64>) {
    for p in pages {
        m.access(Access::read(p), u64::MAX);
    }
}

fn mk_sc(reason: ReclaimReason, priority: u8) -> ScanControl {
    ScanControl {
        nr_to_reclaim: 32,
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

fn age(m: &mut Machine<MgLru>) {
    assert!(m.policy.try_to_inc_max_seq(&mut m.mm, true));
    m.validate().unwrap();
}

/// Free victims as the engine's `reclaim_frame` does (swap entry or file shadow in the PTE),
/// so that the memory invariants hold again after a hand-driven shrink.
fn free_victims(m: &mut Machine<MgLru>, victims: &[FrameId]) {
    for &f in victims {
        let s = m.policy.shadow(&m.mm, f);
        let vpn = m.mm.owner(f);
        if m.mm.frames.is_anon(f) {
            let slot = m.mm.alloc_swap_slot(vpn);
            m.mm.swap.set_shadow(slot, s);
            *m.mm.pt.pte_mut(vpn) =
                crate::mm::PTE_SWAP | ((slot as u64) << crate::mm::PTE_PAYLOAD_SHIFT);
        } else {
            *m.mm.pt.pte_mut(vpn) =
                crate::mm::PTE_FILE_GONE | ((s as u64) << crate::mm::PTE_PAYLOAD_SHIFT);
        }
        m.mm.frames.release(f);
    }
    m.validate().unwrap();
}

fn seq(m: &Machine<MgLru>, page: u64) -> u64 {
    let pte = m.mm.pt.pte(page);
    m.policy.seq_of_frame(crate::mm::pte_frame(pte)).unwrap()
}

/// Frames are handed out from frame 0 upwards, so after touching pages 0..n in order,
/// frame i holds page i. Checked here once so the tests below can name frames by page.
#[test]
fn frames_follow_pages_in_these_tests() {
    let mut m = machine(Preset::Default);
    touch(&mut m, 0..100);
    for p in 0..100 {
        assert_eq!(crate::mm::pte_frame(m.mm.pt.pte(p)), p as u32);
    }
}

#[test]
fn initial_state_and_fault_placement() {
    // lru_gen_init_lruvec: max_seq = MIN_NR_GENS + 1 = 3, min_seq = 0 → 4 generations.
    let mut m = machine(Preset::Default);
    assert_eq!((m.policy.max_seq(), m.policy.min_seq(ANON)), (3, 0));
    touch(&mut m, 0..10);
    // Faulted folios are active (folio_add_lru in a fault) → youngest generation, head.
    assert_eq!(
        m.policy.list_of_seq(3, ANON),
        (0..10).rev().collect::<Vec<u32>>()
    );
    assert_eq!(m.policy.nr_pages_of_seq(3, ANON), 10);
}

#[test]
fn placement_without_recency_follows_lru_gen_add_folio() {
    let mut m = machine(Preset::Default);
    m.mm.vmas
        .add(Vma {
            start: 1000,
            end: 2000,
            kind: VmaKind::Anon,
            seq_or_rand_hint: true,
        })
        .unwrap();
    m.mm.vmas
        .add(Vma {
            start: 3000,
            end: 3100,
            kind: VmaKind::File { file: 1 },
            seq_or_rand_hint: true,
        })
        .unwrap();
    m.mm.vmas
        .add(Vma {
            start: 4000,
            end: 4100,
            kind: VmaKind::File { file: 2 },
            seq_or_rand_hint: false,
        })
        .unwrap();
    touch(&mut m, [5, 1500, 3050, 4050]);
    // max_seq 3, min_seq 0. No VMA → anon with recency → max_seq.
    assert_eq!(seq(&m, 5), 3);
    // VM_RAND_READ anon, not in the swap cache → max_seq - 1.
    assert_eq!(seq(&m, 1500), 2);
    // VM_RAND_READ file: min_seq + 2 >= max_seq? 2 >= 3 no → min_seq + 1.
    assert_eq!(seq(&m, 3050), 1);
    // File with recency, faulted → active → max_seq.
    assert_eq!(seq(&m, 4050), 3);
    assert_eq!(m.policy.ty(crate::mm::pte_frame(m.mm.pt.pte(4050))), FILE);
}

/// Put an anon page into the swap cache by hand, as swap readahead does.
fn readahead_frame(mm: &mut Mm, vpn: u64, shadow: u32) -> FrameId {
    let f = mm.alloc_frame(vpn, F_ANON | F_SWAPCACHE).unwrap();
    let slot = mm.alloc_swap_slot(vpn);
    mm.frames.set_slot(f, slot);
    mm.swap.set_cached_frame(slot, f);
    mm.swap.set_shadow(slot, shadow);
    f
}

fn tch(vpn: u64) -> Touch {
    Touch {
        t: 0,
        next_use: u64::MAX,
        vpn,
        write: false,
    }
}

#[test]
fn readahead_placement_and_refault() {
    let opts = PolicyOptions::new(1);
    let mut p = MgLru::new(64, &opts, Preset::Default).unwrap();
    let mut mm = Mm::new(64);
    // Readahead happens inside the fault (lru_gen_in_fault) → active → max_seq 3. Its shadow
    // (min_seq 0, refs 0) matches min_seq[anon] = 0 → recent; in a fault the tier is restored
    // to refs = LRU_REFS_MASK + workingset = 4 (tier 3).
    let f = readahead_frame(&mut mm, 7, pack_shadow(0, 0));
    p.on_insert(&mm, f, tch(7), Insert::Readahead);
    assert_eq!(p.seq_of_frame(f), Some(3));
    assert_eq!((p.refs(f), tier_from_refs(p.refs(f))), (4, 3));
    assert_eq!((p.stats.refaults, p.stats.refaults_recent), (1, 1));
    assert_eq!(p.pid.refaulted[ANON][0], 1);
    // Without recency (VM_RAND_READ): not active; anon in the swap cache →
    // min_seq + 2 >= max_seq? 0 + 2 >= 3 no → min_seq + 1 = 1; tier not restored.
    mm.vmas
        .add(Vma {
            start: 100,
            end: 200,
            kind: VmaKind::Anon,
            seq_or_rand_hint: true,
        })
        .unwrap();
    let g = readahead_frame(&mut mm, 150, pack_shadow(0, 0));
    p.on_insert(&mm, g, tch(150), Insert::Readahead);
    assert_eq!(p.seq_of_frame(g), Some(1));
    assert_eq!(p.refs(g), 0);
    // A shadow from another min_seq is a refault but not a recent one.
    let h = readahead_frame(&mut mm, 8, pack_shadow(5, 0));
    p.on_insert(&mm, h, tch(8), Insert::Readahead);
    assert_eq!((p.stats.refaults, p.stats.refaults_recent), (3, 2));
    assert_eq!(p.refs(h), 0);
}

#[test]
fn shadow_round_trip() {
    // refs 0..4 → token refs - 1 (floored at 0) + workingset = refs != 0; refault refs = both.
    for refs in 0..=4u32 {
        for seq in [0u64, 1, 12345, SHADOW_SEQ_MASK] {
            let (s, low, ws) = unpack_shadow(pack_shadow(seq, refs));
            assert_eq!(s, seq);
            assert_eq!(low + ws as u32, refs, "refs {refs}");
        }
    }
    // Truncated like EVICTION_MASK: seq 2^29 looks like seq 0.
    assert_eq!(unpack_shadow(pack_shadow(1 << 29, 0)).0, 0);
}

#[test]
fn refault_in_same_min_seq_is_recent() {
    let opts = PolicyOptions::new(1);
    let mut p = MgLru::new(64, &opts, Preset::Default).unwrap();
    let mut mm = Mm::new(64);
    let mk = |mm: &mut Mm, vpn: u64| {
        let f = mm.alloc_frame(vpn, F_ANON | F_MAPPED).unwrap();
        *mm.pt.pte_mut(vpn) = make_present(f) | PTE_ACCESSED;
        f
    };
    let a = mk(&mut mm, 1);
    p.on_insert(
        &mm,
        a,
        tch(1),
        Insert::Refault {
            shadow: pack_shadow(0, 0),
        },
    );
    let b = mk(&mut mm, 2);
    p.on_insert(
        &mm,
        b,
        tch(2),
        Insert::Refault {
            shadow: pack_shadow(1, 0),
        },
    );
    // Only the shadow from min_seq[anon] = 0 is recent.
    assert_eq!(p.stats.refaults_recent, 1);
    assert_eq!(p.refs(a), 4);
    assert_eq!(p.refs(b), 0);
    p.validate(&mm).unwrap();
}

#[test]
fn touched_page_moves_to_the_walks_youngest_generation() {
    let mut m = machine(Preset::Default);
    touch(&mut m, 0..100);
    // First walk (forced): clears 100 young PTEs; they are already in max_seq 3, so no
    // promotion. inc_max_seq: 4 generations already → min_seq 0 → 1, max_seq → 4.
    age(&mut m);
    let s = m.policy.stats().clone();
    assert_eq!((s.walk_young, s.promoted_walk, s.walk_ptes), (100, 0, 512));
    assert_eq!((m.policy.max_seq(), m.policy.min_seq(ANON)), (4, 1));
    assert_eq!(m.mm.pt.pte(50) & PTE_ACCESSED, 0);
    touch(&mut m, 0..10);
    // Second walk, at max_seq 4: the 10 touched pages go to generation 4, which becomes
    // max_seq - 1 once the walk opens generation 5; the others stay in 3.
    age(&mut m);
    assert_eq!(m.policy.max_seq(), 5);
    assert_eq!(m.policy.stats().promoted_walk, 10);
    for p in 0..10 {
        assert_eq!(seq(&m, p), 4, "page {p}");
    }
    for p in 10..100 {
        assert_eq!(seq(&m, p), 3, "page {p}");
    }
    assert_eq!(m.policy.nr_pages_of_seq(4, ANON), 10);
    assert_eq!(m.policy.nr_pages_of_seq(3, ANON), 90);
    // The walk only rewrote the generation in the flags (folio_update_gen): the folios
    // still sit on generation 3's list until eviction sorts them.
    assert!(m.policy.list_of_seq(4, ANON).is_empty());
    assert_eq!(m.policy.list_of_seq(3, ANON).len(), 100);
}

/// Pages 0..100 touched, aged, pages 0..10 touched again, aged: min_seq 2, max_seq 5,
/// pages 0..10 in generation 4 (by flag), 10..100 in generation 3.
fn two_aged(preset: Preset) -> Machine<MgLru> {
    let mut m = machine(preset);
    touch(&mut m, 0..100);
    age(&mut m);
    touch(&mut m, 0..10);
    age(&mut m);
    assert_eq!(
        (
            m.policy.max_seq(),
            m.policy.min_seq(ANON),
            m.policy.min_seq(FILE)
        ),
        (5, 2, 2)
    );
    m
}

#[test]
fn untouched_pages_are_evicted_before_touched_ones() {
    let mut m = two_aged(Preset::Default);
    let mut sc = mk_sc(ReclaimReason::Direct, 1);
    let mut victims = Vec::new();
    m.policy.shrink(&mut m.mm, &mut sc, &mut victims);
    // try_to_shrink_lruvec: nr_to_scan = 100 >> 1 = 50. First evict_folios: generation 2
    // is empty for both types → nothing isolated; try_to_inc_min_seq → min_seq 3 (scanned 1).
    // Second: file has nothing; anon generation 3 from the tail: pages 0..9 carry generation
    // 4 and are sorted onto its list, pages 10..73 are isolated (64 = MIN_LRU_BATCH), none
    // young → all reclaimed. Scanned 1 + 74 >= 50 → stop.
    assert_eq!(victims, (10..74).collect::<Vec<u32>>());
    assert_eq!(sc.nr_scanned, 64);
    assert_eq!(m.policy.min_seq(ANON), 3);
    assert_eq!(m.policy.stats().sorted_promoted, 10);
    assert_eq!(m.policy.stats().evicted_tier, [64, 0, 0, 0]);
    // Sorted folios went to the head of generation 4's list in scan order (0 first).
    assert_eq!(
        m.policy.list_of_seq(4, ANON),
        (0..10).rev().collect::<Vec<u32>>()
    );
    assert_eq!(
        m.policy.list_of_seq(3, ANON),
        (74..100).rev().collect::<Vec<u32>>()
    );
    // Every victim's shadow records min_seq 3 and tier 0.
    for &v in &victims {
        assert_eq!(unpack_shadow(m.policy.shadow(&m.mm, v)), (3, 0, false));
    }
    free_victims(&mut m, &victims);
    // The next reclaim continues with the rest of generation 3: 74..99 are 26 folios, then
    // generation 3 is empty, min_seq → 4 and only 2 generations remain → stop.
    let mut sc = mk_sc(ReclaimReason::Direct, 1);
    let mut victims = Vec::new();
    m.policy.shrink(&mut m.mm, &mut sc, &mut victims);
    assert_eq!(victims, (74..100).collect::<Vec<u32>>());
    assert_eq!(m.policy.min_seq(ANON), 4);
    free_victims(&mut m, &victims);
}

fn rmap_case(reason: ReclaimReason) -> (Machine<MgLru>, Vec<u32>) {
    let mut m = two_aged(Preset::Default);
    touch(&mut m, [70, 71, 80]);
    let mut sc = mk_sc(reason, 1);
    let mut victims = Vec::new();
    m.policy.shrink(&mut m.mm, &mut sc, &mut victims);
    free_victims(&mut m, &victims);
    (m, victims)
}

#[test]
fn rmap_young_is_kept_and_looks_around() {
    for reason in [ReclaimReason::Kswapd, ReclaimReason::Direct] {
        let (m, victims) = rmap_case(reason);
        // Isolated 10..73 as before, processed in that order. Page 70 is young: look-around
        // over [70-32, 70+32) = [38, 102) clears 70, 71 and 80. 70 goes back to the youngest
        // generation (5); 71, isolated in the same batch and not yet processed, gets
        // PG_referenced, so shrink_folio_list keeps it ("folio_update_gen() tried to promote
        // this page?") and it goes back to generation 5 after 70; 80 (still on generation
        // 3's list) is promoted to generation 5.
        let want: Vec<u32> = (10..74).filter(|&p| p != 70 && p != 71).collect();
        assert_eq!(victims, want, "{reason:?}");
        let s = m.policy.stats();
        assert_eq!(
            (
                s.promoted_rmap,
                s.kept_referenced,
                s.lookarounds,
                s.lookaround_ptes,
                s.lookaround_young
            ),
            (1, 1, 1, 64, 3)
        );
        assert_eq!(s.promoted_lookaround, 1);
        assert_eq!((seq(&m, 70), seq(&m, 71), seq(&m, 80)), (5, 5, 5));
        assert_eq!(m.policy.nr_pages_of_seq(5, ANON), 3);
        assert_eq!(m.mm.pt.pte(80) & PTE_ACCESSED, 0);
        // kswapd owns an mm_walk: look-around only rewrites the flag; direct reclaim
        // activates (moves) the folio at once. Put-back folios enter at the head.
        let youngest = m.policy.list_of_seq(5, ANON);
        match reason {
            ReclaimReason::Kswapd => assert_eq!(youngest, vec![71, 70]),
            ReclaimReason::Direct => assert_eq!(youngest, vec![71, 70, 80]),
        }
        // 3 young of 64 < one per cache line: the PMD is not fed to the Bloom filter
        // (filter[5] was reset by the second walk and nothing reached it).
        assert!(!m.policy.bloom.test(5, 0));
    }
}

#[test]
fn lookaround_off_keeps_neighbours_young() {
    let opts = PolicyOptions::new(7).with("lookaround", "off");
    let mut m = machine_with(Preset::Default, opts, 4096);
    touch(&mut m, 0..100);
    age(&mut m);
    touch(&mut m, 0..10);
    age(&mut m);
    touch(&mut m, [70, 71, 80]);
    let mut sc = mk_sc(ReclaimReason::Direct, 1);
    let mut victims = Vec::new();
    m.policy.shrink(&mut m.mm, &mut sc, &mut victims);
    // 70 and 71 are both found young by their own rmap check; 80 is untouched.
    let want: Vec<u32> = (10..74).filter(|&p| p != 70 && p != 71).collect();
    assert_eq!(victims, want);
    free_victims(&mut m, &victims);
    assert_eq!(m.policy.stats().lookarounds, 0);
    assert_ne!(m.mm.pt.pte(80) & PTE_ACCESSED, 0);
}

#[test]
fn eviction_needs_more_than_min_nr_gens() {
    let mut m = machine(Preset::Default);
    touch(&mut m, 0..100);
    let mut sc = mk_sc(ReclaimReason::Direct, 1);
    let mut victims = Vec::new();
    // 4 generations, all pages in 3; generation 0 is empty → min_seq advances to 2, leaving
    // MIN_NR_GENS generations → evict_folios reports nothing.
    assert_eq!(
        m.policy
            .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims),
        0
    );
    assert_eq!((m.policy.min_seq(ANON), m.policy.nr_gens(ANON)), (2, 2));
    assert_eq!(
        m.policy
            .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims),
        0
    );
    // At DEF_PRIORITY the aging path is skipped: shrink does nothing at all.
    let mut sc12 = ScanControl {
        priority: crate::engine::DEF_PRIORITY,
        ..sc.clone()
    };
    m.policy.shrink(&mut m.mm, &mut sc12, &mut victims);
    assert_eq!(m.policy.max_seq(), 3);
    // One aging: generations 2 (empty), 3 (all), 4 → the oldest is empty, min_seq moves to
    // 3 and only two remain again.
    age(&mut m);
    assert_eq!(
        m.policy
            .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims),
        0
    );
    assert!(victims.is_empty());
    // A second aging makes generation 3 the oldest of three: 64 isolated and reclaimed.
    age(&mut m);
    let scanned = m
        .policy
        .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims);
    assert_eq!(scanned, 64);
    assert_eq!(victims, (0..64).collect::<Vec<u32>>());
    free_victims(&mut m, &victims);
}

/// 6.8's `should_abort_scan` compares `sc->nr_reclaimed` with `nr_to_reclaim`, and in direct
/// reclaim `sc->nr_reclaimed` is the whole `do_try_to_free_pages` call's: what earlier
/// priorities' passes reclaimed counts. By hand: 100 pages in generation 3, three agings
/// (walk 1 clears their young bits; agings 1-3 retire the empty generations 0-2), so four
/// generations (3 with all 100, 4-6 empty): `should_run_aging` never ages with four, and
/// `nr_to_scan` at priority 0 is 100. The first `evict_folios` batch isolates and reclaims
/// pages 0..63 (64 scanned < 100, so `should_abort_scan` is asked). With nr_to_reclaim 100
/// and 36 reclaimed by the call's earlier passes, 36 + 64 ≥ 100: stop after 64. With 35,
/// 99 < 100: a second batch takes 64..99 (generation 3 empties, min_seq moves: 36 + 1
/// scanned, 101 ≥ 100) and the pass ends with all 100.
#[test]
fn direct_reclaims_should_abort_scan_counts_the_calls_earlier_passes() {
    for (earlier, want) in [(36u64, 64u32), (35, 100)] {
        let mut m = machine(Preset::Default);
        touch(&mut m, 0..100);
        for _ in 0..3 {
            age(&mut m);
        }
        assert_eq!((m.policy.min_seq(ANON), m.policy.nr_gens(ANON)), (3, 4));
        assert_eq!(m.policy.nr_pages_of_seq(3, ANON), 100);
        let mut sc = ScanControl {
            nr_to_reclaim: 100,
            nr_reclaimed: earlier,
            ..mk_sc(ReclaimReason::Direct, 0)
        };
        let mut victims = Vec::new();
        m.policy.shrink_lruvec(&mut m.mm, &mut sc, &mut victims);
        assert_eq!(
            victims,
            (0..want).collect::<Vec<u32>>(),
            "earlier {earlier}"
        );
        assert_eq!(
            sc.nr_reclaimed, earlier,
            "the engine counts the frames it frees"
        );
        free_victims(&mut m, &victims);
    }
}

#[test]
fn generations_never_exceed_max_gens() {
    // Aging by hand (as a forced aging would) with pages in generation 3: each inc_max_seq at
    // 4 generations must first retire the oldest. Agings 1-3 retire empty generations 0-2;
    // aging 4 moves the 100 folios of generation 3 into 4 (folio_inc_gen).
    let mut m = machine(Preset::Default);
    touch(&mut m, 0..100);
    for k in 1..=4 {
        age(&mut m);
        assert_eq!(m.policy.nr_gens(ANON), 4, "aging {k}");
        assert_eq!(m.policy.min_seq(ANON), k);
    }
    assert_eq!(m.policy.stats().forced_inc_gen, 100);
    assert_eq!(m.policy.nr_pages_of_seq(4, ANON), 100);
    // Gen-14 keeps every generation: 4 + 4 after four agings, nothing moved.
    let mut g = machine(Preset::Gen14);
    touch(&mut g, 0..100);
    for _ in 0..4 {
        age(&mut g);
    }
    assert_eq!(
        (
            g.policy.nr_gens(ANON),
            g.policy.min_seq(ANON),
            g.policy.stats().forced_inc_gen
        ),
        (8, 0, 0)
    );
}

#[test]
fn anon_generations_pile_up_without_swap_capped_by_max_gens() {
    // swappiness 0: anon cannot be evicted, min_seq[anon] never advances by eviction; each
    // aging adds a generation until max_gens, then inc_min_seq retires the oldest without
    // moving its folios (anon !can_swap). Drive aging through shrink.
    for (preset, cap) in [(Preset::Default, 4u64), (Preset::Gen14, 9)] {
        let mut m = machine(preset);
        m.mm.vmas
            .add(Vma {
                start: 10_000,
                end: 20_000,
                kind: VmaKind::File { file: 1 },
                seq_or_rand_hint: false,
            })
            .unwrap();
        touch(&mut m, 0..50);
        touch(&mut m, 10_000..10_200);
        let mut victims = Vec::new();
        let mut file_only = true;
        for _ in 0..5 {
            let mut s = mk_sc(ReclaimReason::Direct, 1);
            s.swappiness = 0;
            let before = victims.len();
            m.policy.shrink(&mut m.mm, &mut s, &mut victims);
            let new = victims[before..].to_vec();
            file_only &= new.iter().all(|&f| !m.mm.frames.is_anon(f));
            free_victims(&mut m, &new);
        }
        assert!(m.policy.nr_gens(ANON) <= cap.min(m.policy.config().max_gens as u64));
        assert!(file_only && victims.len() >= 64, "{}", victims.len());
        if preset == Preset::Gen14 {
            assert!(m.policy.nr_gens(ANON) > 4, "{}", m.policy.nr_gens(ANON));
        }
    }
}

#[test]
fn should_run_aging_by_hand() {
    let mut p = MgLru::new(64, &PolicyOptions::new(0), Preset::Default).unwrap();
    let set = |p: &mut MgLru, seq: u64, n: u64| {
        let g = p.gen_of_seq(seq);
        p.nr_pages[lidx(g, ANON)] = n;
    };
    // min_seq 0, max_seq 3: four generations → never age; nr_to_scan = 100 >> 2.
    set(&mut p, 3, 100);
    assert_eq!(p.should_run_aging(true, 2), (false, 25));
    // Three generations (min 1, max 3): young = seq 3, old = seq 1.
    p.min_seq = [1, 1];
    set(&mut p, 3, 40);
    set(&mut p, 2, 35);
    set(&mut p, 1, 25);
    // 40 * 2 > 100? no; 25 * 4 < 100? no → no aging.
    assert_eq!(p.should_run_aging(true, 0), (false, 100));
    // old 24 of 99: 96 < 99 → age.
    set(&mut p, 1, 24);
    assert_eq!(p.should_run_aging(true, 0), (true, 99));
    // young 51 of 110: 102 > 110? no; old 24*4 = 96 < 110 → age. young 60 of 100 → age.
    set(&mut p, 1, 25);
    set(&mut p, 3, 50);
    set(&mut p, 2, 25);
    assert_eq!(p.should_run_aging(true, 0), (false, 100));
    set(&mut p, 3, 51);
    assert_eq!(p.should_run_aging(true, 1), (true, 50));
    // Two generations: out of cold folios → age, nothing to scan.
    p.min_seq = [2, 2];
    assert_eq!(p.should_run_aging(true, 0), (true, 0));
    // Without swap only file counts: min_seq[file] 1 → three file generations, none filled.
    p.min_seq = [0, 1];
    assert_eq!(p.should_run_aging(false, 0), (false, 0));
}

#[test]
fn bloom_admission_is_one_young_pte_per_cache_line() {
    let mut m = machine(Preset::Default);
    touch(&mut m, 0..512);
    age(&mut m); // forced first walk, max_seq 3 → 4; 512 young → PMD 0 into filter[4]
    assert!(m.policy.bloom.test(4, 0));
    touch(&mut m, 0..64);
    age(&mut m); // filter[4] passes; 64 young × 8 = 512 ≥ 512 → admitted to filter[5]
    assert!(m.policy.bloom.test(5, 0));
    assert_eq!(m.policy.stats().walk_pmds_added, 2);
    touch(&mut m, 0..63);
    age(&mut m); // filter[5] passes; 63 × 8 = 504 < 512 → not admitted to filter[6]
    assert!(!m.policy.bloom.test(6, 0));
    assert_eq!(m.policy.stats().walk_pmds_added, 2);
    assert_eq!(m.policy.stats().walk_pmds_scanned, 3);
    // Fourth walk tests filter[6]: the PMD is skipped, so a page touched now stays young.
    touch(&mut m, [100]);
    age(&mut m);
    assert_eq!(m.policy.stats().walk_pmds_scanned, 3);
    assert_ne!(m.mm.pt.pte(100) & PTE_ACCESSED, 0);
    // Scan-All ignores the filter.
    let mut a = machine(Preset::ScanAll);
    touch(&mut a, 0..512);
    age(&mut a);
    touch(&mut a, 0..63);
    age(&mut a);
    touch(&mut a, [100]);
    age(&mut a);
    assert_eq!(a.policy.stats().walk_pmds_scanned, 3);
    assert_eq!(a.mm.pt.pte(100) & PTE_ACCESSED, 0);
}

#[test]
fn nonleaf_pmd_young_bit_gates_the_walk() {
    let mut m = machine(Preset::ScanAll);
    touch(&mut m, 0..10);
    touch(&mut m, 512..522);
    age(&mut m);
    assert_eq!(m.policy.stats().walk_pmds_scanned, 2);
    // Only PMD 1 is accessed again: PMD 0's non-leaf accessed bit is clear → skipped.
    touch(&mut m, [515]);
    age(&mut m);
    let s = m.policy.stats();
    assert_eq!((s.walk_pmds, s.walk_pmds_scanned), (4, 3));
    // With enabled = 0x3 both PMDs are scanned.
    let opts = PolicyOptions::new(7).with("enabled", "0x3");
    let mut m = machine_with(Preset::ScanAll, opts, 4096);
    touch(&mut m, 0..10);
    touch(&mut m, 512..522);
    age(&mut m);
    touch(&mut m, [515]);
    age(&mut m);
    assert_eq!(m.policy.stats().walk_pmds_scanned, 4);
}

#[test]
fn scan_rand_walks_about_half_the_pmds() {
    let mut m = machine(Preset::ScanRand);
    // 7 PMDs × 1 page; the forced first walk takes all, later walks flip coins.
    let pages: Vec<u64> = (0..7).map(|i| i * 512).collect();
    touch(&mut m, pages.iter().copied());
    age(&mut m);
    assert_eq!(m.policy.stats().walk_pmds_scanned, 7);
    for _ in 0..200 {
        touch(&mut m, pages.iter().copied());
        age(&mut m);
    }
    let scanned = m.policy.stats().walk_pmds_scanned - 7;
    // 1400 Bernoulli(0.5) trials: mean 700, sd ≈ 18.7; ±5 sd.
    assert!((607..=793).contains(&scanned), "{scanned}");
    // Same seed, same choices.
    let mut m2 = machine(Preset::ScanRand);
    touch(&mut m2, pages.iter().copied());
    age(&mut m2);
    for _ in 0..200 {
        touch(&mut m2, pages.iter().copied());
        age(&mut m2);
    }
    assert_eq!(m2.policy.stats().walk_pmds_scanned - 7, scanned);
}

fn zipfish(n: usize, pages: u64, seed: u64) -> Vec<Access> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            let p = (u * u * u * pages as f64) as u64;
            if x & 7 == 0 {
                Access::write(p)
            } else {
                Access::read(p)
            }
        })
        .collect()
}

fn run(
    name: &str,
    trace: &[Access],
    frames: u32,
    opts: PolicyOptions,
) -> crate::replay::ReplayResult {
    let spec = ReplaySpec {
        policy: PolicyKind::from_name(name).unwrap(),
        machine: MachineConfig {
            check_invariants: false,
            ..MachineConfig::new(frames)
        },
        options: opts,
        sample_every: 0,
        warmup: 0,
    };
    replay(&mut VecSource::new(trace.to_vec()), &spec, None).unwrap()
}

#[test]
fn scan_none_never_walks_page_tables() {
    let trace = zipfish(30_000, 3000, 11);
    let r = run("mglru-scan-none", &trace, 600, PolicyOptions::new(3));
    let c = &r.policy_counters;
    assert!(r.stats.evictions > 0);
    assert!(c["gens_created"] > 0);
    for k in [
        "aging_walks",
        "walk_pmds",
        "walk_ptes",
        "walk_young",
        "promoted_walk",
    ] {
        assert_eq!(c[k], 0, "{k}");
    }
    assert!(c["lookarounds"] > 0 && c["promoted_rmap"] > 0);
    // enabled without 0x2 is the same as scan=none.
    let r2 = run(
        "mglru",
        &trace,
        600,
        PolicyOptions::new(3).with("enabled", "0x5"),
    );
    assert_eq!(r2.policy_counters["aging_walks"], 0);
    assert_eq!(r2.stats.faults, r.stats.faults);
}

#[test]
fn presets_and_options() {
    let opts = PolicyOptions::new(0);
    assert_eq!(
        MgLruConfig::from_options(Preset::Gen14, &opts)
            .unwrap()
            .max_gens,
        16384
    );
    assert_eq!(
        MgLruConfig::from_options(Preset::ScanRand, &opts)
            .unwrap()
            .scan,
        ScanMode::Rand
    );
    let names: Vec<&str> = PolicyKind::ALL
        .iter()
        .filter(|e| matches!(e.0, PolicyKind::MgLru(_)))
        .map(|e| e.1)
        .collect();
    assert_eq!(
        names,
        [
            "mglru",
            "mglru-gen14",
            "mglru-scan-all",
            "mglru-scan-none",
            "mglru-scan-rand"
        ]
    );
    for (kind, name, _) in PolicyKind::ALL {
        if let PolicyKind::MgLru(p) = kind {
            assert_eq!(p.name(), *name);
        }
    }
    let o = PolicyOptions::new(0)
        .with("scan", "rand")
        .with("scan_rand_p", "0.25")
        .with("max_gens", "8");
    let c = MgLruConfig::from_options(Preset::Default, &o).unwrap();
    assert_eq!(
        (c.scan, c.scan_rand_p, c.max_gens),
        (ScanMode::Rand, 0.25, 8)
    );
    o.check_all_used().unwrap();
    let err = |k: &str, v: &str| {
        MgLruConfig::from_options(Preset::Default, &PolicyOptions::new(0).with(k, v))
            .unwrap_err()
            .to_string()
    };
    assert!(err("min_ttl_ms", "1000").starts_with("option min_ttl_ms: 1000"));
    assert!(err("scan", "sometimes").starts_with("option scan:"));
    assert!(err("max_gens", "3").starts_with("option max_gens:"));
    assert!(err("scan_rand_p", "1.5").starts_with("option scan_rand_p:"));
    assert!(err("enabled", "0x6").starts_with("option enabled:"));
    assert!(err("lookaround", "maybe").starts_with("option lookaround:"));
    // Unknown keys are reported by the registry after the build.
    let spec = ReplaySpec {
        policy: PolicyKind::from_name("mglru").unwrap(),
        machine: MachineConfig::new(100),
        options: PolicyOptions::new(0).with("gens", "5"),
        sample_every: 0,
        warmup: 0,
    };
    let e = replay(&mut VecSource::from_pages(&[1]), &spec, None).unwrap_err();
    assert_eq!(e.to_string(), "option gens: unknown option for this policy");
}

#[test]
fn replay_counters_agree_with_the_engine() {
    let trace = zipfish(40_000, 4000, 5);
    for (kind, name, _) in PolicyKind::ALL {
        if !matches!(kind, PolicyKind::MgLru(_)) {
            continue;
        }
        let r = run(name, &trace, 800, PolicyOptions::new(9));
        let c = &r.policy_counters;
        let evicted: u64 = (0..4).map(|t| c[&format!("evicted_tier{t}")]).sum();
        assert_eq!(evicted, r.stats.evictions, "{name}");
        assert_eq!(
            c["refaults"],
            r.stats.major_faults + r.stats.swap_ra,
            "{name}"
        );
        assert!(
            c["max_nr_gens"] <= 4,
            "{name}: swap on keeps ≤ 4 generations"
        );
        assert!(r.stats.pgscan_direct + r.stats.pgscan_kswapd >= r.stats.evictions);
    }
}

mod props {
    use super::*;
    use proptest::prelude::prop;
    use proptest::prelude::*;

    fn preset_of(i: usize) -> Preset {
        [
            Preset::Default,
            Preset::Gen14,
            Preset::ScanAll,
            Preset::ScanNone,
            Preset::ScanRand,
        ][i]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn invariants_hold_on_random_traces(
            frames in 8u32..160,
            span in 16u64..1500,
            swappiness in prop::sample::select(vec![1u32, 60, 140, 200]),
            file_vma in any::<bool>(),
            hint in any::<bool>(),
            seed in any::<u64>(),
            raw in prop::collection::vec((any::<u64>(), any::<bool>()), 50..400),
        ) {
            // Every preset on the same trace.
            for preset in 0..5 {
                let p = MgLru::new(frames, &PolicyOptions::new(seed), preset_of(preset)).unwrap();
                let cfg = MachineConfig {
                    check_invariants: true,
                    swappiness,
                    ..MachineConfig::new(frames)
                };
                let mut m = Machine::new(&cfg, p).unwrap();
                if file_vma {
                    m.mm.vmas.add(Vma { start: span / 2, end: span, kind: VmaKind::File { file: 1 }, seq_or_rand_hint: false }).unwrap();
                }
                if hint {
                    m.mm.vmas.add(Vma { start: span + 100, end: span + 700, kind: VmaKind::Anon, seq_or_rand_hint: true }).unwrap();
                }
                for &(x, w) in &raw {
                    // Mix of dense and sparse pages across several PMDs.
                    let page = if x & 1 == 0 { (x >> 1) % span } else { span + 100 + (x >> 1) % 600 };
                    m.access(Access { page, write: w, gup: false }, u64::MAX);
                }
                let c: std::collections::HashMap<_, _> = m.policy.counters().into_iter().collect();
                let evicted: u64 = ["evicted_tier0", "evicted_tier1", "evicted_tier2", "evicted_tier3"].iter().map(|k| c[k]).sum();
                prop_assert_eq!(evicted, m.stats.evictions);
                prop_assert!(m.policy.nr_gens(ANON) <= m.policy.config().max_gens as u64);
                if preset_of(preset) == Preset::ScanNone {
                    prop_assert_eq!(c["aging_walks"], 0);
                }
            }
        }
    }
}

/// Zipf(alpha) over `pages` ranks by inverse CDF, ranks scattered over the address space by
/// an odd multiplier modulo 2^k (a bijection), so hot pages share no page-table locality.
fn zipf_scattered(n: usize, k: u32, alpha: f64, seed: u64) -> Vec<Access> {
    let pages = 1usize << k;
    let mut cdf = Vec::with_capacity(pages);
    let mut sum = 0.0;
    for r in 1..=pages {
        sum += 1.0 / (r as f64).powf(alpha);
        cdf.push(sum);
    }
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = (x >> 11) as f64 / (1u64 << 53) as f64 * sum;
            let rank = cdf.partition_point(|&c| c < u).min(pages - 1) as u64;
            let page = rank.wrapping_mul(0x9E37_79B1) & (pages as u64 - 1);
            if x & 7 == 0 {
                Access::write(page)
            } else {
                Access::read(page)
            }
        })
        .collect()
}

/// Release-mode speed check: `cargo test --release -p vmemsim-core --lib mglru_speed --
/// --ignored --nocapture` (`VMEMSIM_SPEED_POLICIES=mglru,lru` to choose). 10M accesses over
/// 2^20 pages with 2^20 / 10 frames, two streams: the replay bench's `u^3` stream (85% of
/// accesses fault whatever the policy), Zipf(1.0) with scattered ranks, and the first stream
/// folded onto 90k pages (fits in memory: the hit path after warm-up).
#[test]
#[ignore]
fn mglru_speed() {
    let names = std::env::var("VMEMSIM_SPEED_POLICIES").unwrap_or_else(|_| {
        "mglru,mglru-scan-all,mglru-scan-none,mglru-scan-rand,mglru-gen14,lru,fifo".into()
    });
    let fits: Vec<Access> = zipfish(10_000_000, 1 << 20, 0x9E37_79B9_7F4A_7C15)
        .into_iter()
        .map(|a| Access {
            page: a.page % 90_000,
            ..a
        })
        .collect();
    let streams = [
        ("u^3", zipfish(10_000_000, 1 << 20, 0x9E37_79B9_7F4A_7C15)),
        (
            "zipf1.0",
            zipf_scattered(10_000_000, 20, 1.0, 0x9E37_79B9_7F4A_7C15),
        ),
        ("fits", fits),
    ];
    for (sname, trace) in &streams {
        for name in names.split(',') {
            let t0 = std::time::Instant::now();
            let r = run(name, trace, (1 << 20) / 10, PolicyOptions::new(1));
            let dt = t0.elapsed().as_secs_f64();
            let c = |k: &str| r.policy_counters.get(k).copied().unwrap_or(0);
            println!(
                "{sname} {name}: {:.2} M accesses/s ({:.1}% faults, {} walks, {} gens)",
                trace.len() as f64 / dt / 1e6,
                100.0 * r.stats.faults as f64 / trace.len() as f64,
                c("aging_walks"),
                c("gens_created")
            );
        }
    }
}

/// The engine's part of a victim's swap-out: a slot, a swap PTE, unmapped; then either kept
/// in the swap cache and put back on the lists as `keep` says, or freed.
fn swap_out(m: &mut Machine<MgLru>, f: FrameId, keep: Option<Insert>) {
    use crate::mm::frames::F_SWAPCACHE;
    let vpn = m.mm.owner(f);
    let slot = m.mm.alloc_swap_slot(vpn);
    *m.mm.pt.pte_mut(vpn) = crate::mm::PTE_SWAP | ((slot as u64) << crate::mm::PTE_PAYLOAD_SHIFT);
    m.mm.frames.clear_flags(f, F_MAPPED);
    match keep {
        Some(how) => {
            m.mm.frames.set_flags(f, F_SWAPCACHE);
            m.mm.frames.set_slot(f, slot);
            m.mm.swap.set_cached_frame(slot, f);
            let t = Touch {
                t: 0,
                next_use: u64::MAX,
                vpn,
                write: false,
            };
            m.policy.on_insert(&m.mm, f, t, how);
        }
        None => {
            let _ = m.policy.shadow(&m.mm, f);
            m.mm.frames.release(f);
        }
    }
}

/// 100 pages touched; as in `eviction_needs_more_than_min_nr_gens`, after two aging steps
/// generation 3 is the oldest of three and one batch on an asynchronous device isolates pages
/// 0..63, none young, all dirty anon pages without a slot: `pageout` leaves each under
/// writeback and `shrink_folio_list` keeps it (the victims, for the engine to write).
fn sixty_four_kept_for_writeback() -> (Machine<MgLru>, ScanControl, Vec<FrameId>) {
    let mut m = machine(Preset::Default);
    touch(&mut m, 0..100);
    let mut sc = ScanControl {
        writeback_async: true,
        swap_plug: false,
        swap_max_pages: 128,
        ..mk_sc(ReclaimReason::Direct, 1)
    };
    let mut victims = Vec::new();
    for _ in 0..2 {
        assert_eq!(
            m.policy
                .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims),
            0
        );
        age(&mut m);
    }
    m.policy.nr_reclaimed = 0;
    let scanned = m
        .policy
        .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims);
    assert_eq!(scanned, 64);
    assert_eq!(victims, (0..64).collect::<Vec<u32>>());
    (m, sc, victims)
}

/// `shrink_folio_list` with an asynchronous swap device (Linux 6.1/6.8): a folio `pageout`
/// leaves under writeback is kept (`goto keep`), `evict_folios` puts it back without
/// `lru_gen_eviction`, and when the write completes `folio_rotate_reclaimable` →
/// `lruvec_add_folio_tail` → `lru_gen_add_folio(.., reclaiming = true)` puts it at the tail of
/// the oldest generation (in the swap cache, PG_reclaim cleared); the next `evict_folios`
/// isolates it first and frees it without writing.
#[test]
fn async_writeback_keeps_then_rotates_to_the_oldest_tail() {
    use crate::mm::frames::F_SWAPCACHE;
    let (mut m, mut sc, mut victims) = sixty_four_kept_for_writeback();
    // Kept, not reclaimed: nothing evicted (no lru_gen_eviction), 64 kept for writeback.
    let evicted = |m: &Machine<MgLru>| m.policy.stats().evicted_tier.iter().sum::<u64>();
    assert_eq!(m.policy.nr_reclaimed, 0);
    assert_eq!(evicted(&m), 0);
    assert_eq!(m.policy.stats().writeback_keep, 64);
    // The engine's part: write, unmap into the swap cache, rotate (in victim order).
    for &f in &victims {
        swap_out(&mut m, f, Some(Insert::Rotate));
    }
    m.validate().unwrap();
    // All 64 back in the oldest generation (seq 3), beside the 36 never isolated.
    for p in [0, 63, 64, 99] {
        assert_eq!(m.policy.seq_of_frame(p as u32), Some(3), "page {p}");
    }
    // The next batch takes the tail first: the rotated pages, last rotated first (63..0);
    // clean copies in the swap cache, unmapped, so freed without a write.
    victims.clear();
    let scanned = m
        .policy
        .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims);
    assert_eq!(scanned, 64);
    assert_eq!(victims, (0..64).rev().collect::<Vec<u32>>());
    assert_eq!(m.policy.nr_reclaimed, 64);
    assert_eq!(evicted(&m), 64);
    assert_eq!(m.policy.stats().writeback_keep, 64);
    for &f in &victims {
        assert!(!m.mm.swap_out_writes(f));
        let _ = m.policy.shadow(&m.mm, f);
        let slot = m.mm.frames.slot(f);
        m.mm.swap.set_cached_frame(slot, crate::mm::NO_FRAME);
        m.mm.frames.clear_flags(f, F_SWAPCACHE);
        m.mm.frames.set_slot(f, crate::mm::NO_SLOT);
        m.mm.frames.release(f);
    }
    m.validate().unwrap();
}

/// A timed run's swap writes take time (`Machine::set_write_sink`; Linux 6.1 and 6.8). The
/// set-up of `async_writeback_keeps_then_rotates_to_the_oldest_tail`: pages 0..63 written
/// and kept, seq 3 the oldest of three (3, 4, 5).
/// - Put back while still under writeback (`Insert::Writeback`): `lru_gen_add_folio` sees
///   `PG_reclaim` under writeback, so `max_seq - 1` = 4; pages 64..99 stay in 3.
/// - Rotated instead to the oldest tail but still under writeback (until 100, now 50), the
///   next `evict_folios` meets them first: `sort_folio`'s "waiting for writeback" moves each
///   to `min_seq + 1` = 4 (see the steps in the test).
/// - Their writes complete (now 100) in order 0..63: `folio_rotate_reclaimable` puts each at
///   the tail of the oldest generation, so a later batch takes 63, 62, .., 0 and frees them
///   unwritten.
#[test]
fn timed_writeback_holds_folios_in_sort_folio_until_the_write_completes() {
    for how in [Insert::Writeback, Insert::Rotate] {
        let (mut m, mut sc, mut victims) = sixty_four_kept_for_writeback();
        let mut w = crate::mm::Writeback::new(m.mm.frames.len());
        for &f in &victims {
            swap_out(&mut m, f, Some(how));
            w.start(f);
            w.until[f as usize] = 100;
        }
        m.mm.wb = Some(w);
        m.mm.now = 50;
        m.validate().unwrap();
        if how == Insert::Writeback {
            for p in [0, 63] {
                assert_eq!(m.policy.seq_of_frame(p), Some(4), "page {p}");
            }
            for p in [64, 99] {
                assert_eq!(m.policy.seq_of_frame(p), Some(3), "page {p}");
            }
            continue;
        }
        victims.clear();
        let scanned = m
            .policy
            .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims);
        // 64 sorted, then 64..99 isolated (`MAX_LRU_BATCH` is 4096), not young: written and
        // kept. Seq 3 is then empty: min_seq moves to 4, two generations are left, and
        // `evict_folios` reports nothing scanned.
        assert_eq!(m.policy.stats().sorted_writeback, 64);
        assert_eq!(victims, (64..100).collect::<Vec<u32>>());
        assert_eq!((scanned, m.policy.min_seq[0]), (0, 4));
        for p in [0, 63] {
            assert_eq!(m.policy.seq_of_frame(p), Some(4), "page {p}");
        }
        for &f in &victims {
            swap_out(&mut m, f, Some(Insert::Writeback));
        }
        // Their writes complete (now 100): each to the tail of the oldest generation, 4.
        m.mm.now = 100;
        for f in 0..64u32 {
            assert!(!m.mm.under_writeback(f));
            assert!(m.policy.rotate_reclaimable(&m.mm, f));
        }
        m.validate().unwrap();
        // A new generation (6) lets eviction scan seq 4 again: the tail first, 63..0, clean
        // copies in the swap cache, freed unwritten (64 = `MIN_LRU_BATCH` ends the batch).
        age(&mut m);
        victims.clear();
        m.policy.nr_reclaimed = 0;
        m.policy
            .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims);
        assert_eq!(victims, (0..64).rev().collect::<Vec<u32>>());
        assert_eq!(m.policy.nr_reclaimed, 64);
    }
}

/// Linux 6.1's `get_nr_to_scan` (mm/vmscan.c, 6.1): with aging needed, kswapd below the
/// default priority leaves it to `lru_gen_age_node` and evicts nothing; direct reclaim ages
/// and evicts `total >> priority`; at the default priority aging is skipped and, with only
/// `MIN_NR_GENS` generations, nothing is scanned.
#[test]
fn linux_6_1_get_nr_to_scan() {
    let mut m = machine(Preset::Default);
    touch(&mut m, 0..100);
    // Generations 0-2 empty, 100 pages in 3: moving min_seq to 2 leaves two generations,
    // so aging is needed; total = 100.
    assert!(m.policy.try_to_inc_min_seq(true));
    assert_eq!((m.policy.min_seq(ANON), m.policy.max_seq()), (2, 3));
    assert_eq!(m.policy.should_run_aging_61(true, 5), (true, 100 >> 5));
    let mut need = false;
    assert_eq!(
        m.policy
            .get_nr_to_scan_61(&mut m.mm, 12, true, false, &mut need),
        0
    );
    assert!(need);
    assert_eq!(
        m.policy
            .get_nr_to_scan_61(&mut m.mm, 5, true, true, &mut need),
        0
    );
    assert_eq!(m.policy.max_seq(), 3, "kswapd does not age here");
    assert_eq!(
        m.policy
            .get_nr_to_scan_61(&mut m.mm, 5, true, false, &mut need),
        3
    );
    assert_eq!(m.policy.max_seq(), 4, "direct reclaim aged");
}

/// Linux 6.1's `should_abort_scan`, case by case.
#[test]
fn linux_6_1_should_abort_scan() {
    let m = machine(Preset::Default);
    let mut p = m.policy;
    let base = ScanControl {
        nr_to_reclaim: 32,
        high_wmark: 100,
        low_wmark: 60,
        kernel: crate::policy::KernelVersion::V6_1,
        ..mk_sc(ReclaimReason::Kswapd, 10)
    };
    let seq = p.max_seq();
    // kswapd goes on until this pass has reclaimed nr_to_reclaim ...
    p.nr_reclaimed = 10;
    assert!(!p.should_abort_scan_61(
        &mut ScanControl {
            nr_free: 500,
            ..base.clone()
        },
        seq,
        true,
        true
    ));
    // ... then at priorities 12 and 11 regardless ...
    p.nr_reclaimed = 40;
    let at11 = ScanControl {
        priority: 11,
        nr_free: 500,
        ..base.clone()
    };
    assert!(!p.should_abort_scan_61(&mut at11.clone(), seq, true, true));
    // ... then stops once free (50 + 40 reclaimed = 90, then 70 + 40 = 110) reaches high (100).
    assert!(!p.should_abort_scan_61(
        &mut ScanControl {
            nr_free: 50,
            ..base.clone()
        },
        seq,
        true,
        true
    ));
    assert!(p.should_abort_scan_61(
        &mut ScanControl {
            nr_free: 70,
            ..base.clone()
        },
        seq,
        true,
        true
    ));
    // Direct reclaim: stops after aging twice in the call ...
    let direct = ScanControl {
        reason: ReclaimReason::Direct,
        ..base.clone()
    };
    p.nr_reclaimed = 0;
    assert!(p.should_abort_scan_61(&mut direct.clone(), seq - 2, false, false));
    // ... or with enough reclaimed and anon in the last batch ...
    p.nr_reclaimed = 32;
    assert!(p.should_abort_scan_61(
        &mut ScanControl {
            priority: 12,
            ..direct.clone()
        },
        seq,
        false,
        true
    ));
    assert!(!p.should_abort_scan_61(
        &mut ScanControl {
            priority: 12,
            ..direct.clone()
        },
        seq,
        false,
        false
    ));
    // ... else, below priority 11, once free reaches the low watermark (30 + 32 ≥ 60).
    assert!(p.should_abort_scan_61(
        &mut ScanControl {
            nr_free: 30,
            ..direct.clone()
        },
        seq,
        false,
        false
    ));
    assert!(!p.should_abort_scan_61(
        &mut ScanControl {
            nr_free: 20,
            ..direct.clone()
        },
        seq,
        false,
        false
    ));
    // The watermark stop adds MIN_LRU_BATCH to sc->nr_reclaimed: 10 from earlier passes of
    // the `do_try_to_free_pages` call + 64 = 74 ≥ 32, which ends the call's priority cascade.
    let mut at_low = ScanControl {
        nr_free: 30,
        nr_reclaimed: 10,
        ..direct.clone()
    };
    assert!(p.should_abort_scan_61(&mut at_low, seq, false, false));
    assert_eq!(at_low.nr_reclaimed, 74);
    // sc->nr_reclaimed counts the call's earlier passes: 20 of them + 12 in this pass = 32
    // reaches nr_to_reclaim (with anon in the last batch) at priority 12; 19 + 12 does not.
    p.nr_reclaimed = 12;
    for (earlier, stop) in [(20, true), (19, false)] {
        let mut sc = ScanControl {
            priority: 12,
            nr_reclaimed: earlier,
            ..direct.clone()
        };
        assert_eq!(p.should_abort_scan_61(&mut sc, seq, false, true), stop);
        assert_eq!(sc.nr_reclaimed, earlier, "no credit above priority 11");
    }
}

/// Linux 6.1's `lru_gen_age_node`: kswapd's first pass of a `balance_pgdat` run does not age
/// (`memcgs_need_aging` starts clear and is set); a later pass ages when `should_run_aging`
/// says so; a new run starts clear again.
#[test]
fn linux_6_1_kswapd_ages_from_its_second_pass() {
    let mut m = machine(Preset::Default);
    touch(&mut m, 0..100);
    assert!(m.policy.try_to_inc_min_seq(true)); // two generations: aging needed
    let mut sc = ScanControl {
        kernel: crate::policy::KernelVersion::V6_1,
        nr_free: 1000,
        ..mk_sc(ReclaimReason::Kswapd, 5)
    };
    let mut victims = Vec::new();
    m.policy
        .shrink_lruvec_61(&mut m.mm, &mut sc, 60, &mut victims);
    assert_eq!(m.policy.max_seq(), 3);
    assert!(m.policy.memcgs_need_aging && victims.is_empty());
    m.policy
        .shrink_lruvec_61(&mut m.mm, &mut sc, 60, &mut victims);
    assert_eq!(m.policy.max_seq(), 4);
    m.policy.reclaim_done(ReclaimReason::Kswapd);
    assert!(!m.policy.memcgs_need_aging);
    free_victims(&mut m, &victims);
}

#[test]
fn mark_accessed_counts_up_the_tier_as_folio_inc_refs() {
    // `folio_inc_refs` then `folio_lru_refs` (refs bits + PG_workingset), by hand: the
    // first mark sets PG_referenced (refs 0), the second PG_workingset (1), the next three
    // count the 2-bit field up to 3 (2, 3, 4), and it saturates there.
    let mut m = machine(Preset::Default);
    touch(&mut m, [0]);
    let f = crate::mm::pte_frame(m.mm.pt.pte(0));
    let mut refs = Vec::new();
    for _ in 0..6 {
        m.policy.mark_accessed(&m.mm, f, Touch::default());
        refs.push(m.policy.refs(f));
    }
    assert_eq!(refs, [0, 1, 2, 3, 4, 4]);
    assert_ne!(m.policy.fs[f as usize].fl & F_REFERENCED, 0);
}

#[test]
fn refault_is_recent_when_the_shadow_is_from_min_seq() {
    // A fresh lruvec has min_seq 0 for both types (max_seq 3): a shadow packed at seq 0 is
    // recent (with any refs), one packed at seq 1 or 2 is not.
    let m = machine(Preset::Default);
    assert_eq!(m.policy.min_seq(ANON), 0);
    assert!(m.policy.refault_is_recent(pack_shadow(0, 0), false));
    assert!(m.policy.refault_is_recent(pack_shadow(0, 3), false));
    assert!(!m.policy.refault_is_recent(pack_shadow(1, 0), false));
    assert!(!m.policy.refault_is_recent(pack_shadow(2, 1), true));
}

/// A folio whose swap read is still in flight is locked: `sort_folio`'s "waiting for
/// writeback" case (Linux 6.1 and 6.8) moves it, without isolating it, to the next
/// generation (`folio_inc_gen`: refs cleared) at its head (`list_move`). The same pass as
/// `rmap_young_is_kept_and_looks_around` with page 20 locked until 100: at time 50, 20 is
/// sorted into seq 4 (min_seq 3 + 1), not scanned for reclaim, so the batch of 64 isolated
/// folios reaches one page further (74); at time 100 the read has completed and 20 is
/// reclaimed as before.
#[test]
fn a_folio_under_read_is_sorted_into_the_next_generation() {
    for (now, locked) in [(50, true), (100, false)] {
        let mut m = two_aged(Preset::Default);
        touch(&mut m, [70, 71, 80]);
        let f = crate::mm::pte_frame(m.mm.pt.pte(20)) as usize;
        let mut lock = vec![0u64; m.mm.frames.len() as usize];
        lock[f] = 100;
        m.mm.io_lock = Some(lock);
        m.mm.now = now;
        let mut sc = mk_sc(ReclaimReason::Kswapd, 1);
        let mut victims = Vec::new();
        m.policy.shrink(&mut m.mm, &mut sc, &mut victims);
        free_victims(&mut m, &victims);
        let end = if locked { 75 } else { 74 };
        let want: Vec<u32> = (10..end)
            .filter(|&p| p != 70 && p != 71 && !(locked && p == 20))
            .collect();
        assert_eq!(victims, want, "now {now}");
        assert_eq!(m.policy.stats().sorted_locked, locked as u64);
        assert_eq!(m.policy.stats().kept_locked, 0);
        if locked {
            assert_eq!(seq(&m, 20), 4);
            assert_eq!(m.policy.list_of_seq(4, ANON)[0], 20);
        }
    }
}

/// A swap-out the device refused (zram's -ENOMEM), Linux 6.8: `__end_swap_bio_write`
/// re-dirties the folio, `shrink_folio_list` keeps it, and `evict_folios`' putback loop sets
/// `PG_active` on a dirty rejected folio ("don't add rejected folios to the oldest
/// generation"), so `lru_gen_add_folio(.., reclaiming = false)` puts it in the youngest
/// generation, at its head, with its refs flags cleared: the next batches take the other
/// old pages, not it.
#[test]
fn a_refused_swap_out_goes_back_to_the_youngest_generation() {
    let mut m = machine(Preset::Default);
    touch(&mut m, 0..100);
    let mut sc = mk_sc(ReclaimReason::Direct, 1);
    let mut victims = Vec::new();
    // As in `async_writeback_keeps_then_rotates_to_the_oldest_tail`: the third batch
    // isolates pages 0..63 of the oldest generation (seq 3); the youngest is seq 5.
    for _ in 0..2 {
        m.policy
            .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims);
        age(&mut m);
    }
    let scanned = m
        .policy
        .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims);
    assert_eq!(scanned, 64);
    assert_eq!(victims, (0..64).collect::<Vec<u32>>());
    assert_eq!(m.policy.max_seq, 5);
    // Page 0's write fails: unmapped into the swap cache and put back. The rest are freed.
    for &f in &victims {
        swap_out(&mut m, f, (f == 0).then_some(Insert::Putback));
    }
    m.validate().unwrap();
    assert_eq!(m.policy.seq_of_frame(0), Some(5));
    // The next batch takes what is left of the old pages (64..99), not page 0.
    victims.clear();
    m.policy
        .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims);
    assert!(!victims.is_empty());
    assert!(!victims.contains(&0), "{victims:?}");
}

/// `scan_folios` with two zones (`lrugen->folios[gen][type][zone]`): the oldest generation's
/// lists are taken from `sc->reclaim_idx` (the highest zone) down, so ZONE_DMA32's folios go
/// first whatever their age; `try_to_inc_min_seq` waits for every zone's list to be empty.
/// Eight anonymous folios in the oldest generation of a machine of two zones (frames 0..4:
/// zone 0, DMA; 4..8: zone 1, DMA32), page v in frame v, added at the head in frame order:
/// frame 0 at the tail.
fn two_zones_oldest_gen() -> (MgLru, Mm) {
    let cfg = MgLruConfig::preset(Preset::Default);
    let mut p = MgLru::with_config(8, cfg, Preset::Default, 1);
    p.set_zones(&[0, 4]);
    let mut mm = Mm::new(8);
    let oldest = p.gen_of_seq(p.min_seq(ANON));
    for v in 0..8u64 {
        let f = mm.alloc_frame(v, F_ANON).unwrap();
        assert_eq!(f, v as u32);
        p.add_folio(f, oldest, false);
    }
    (p, mm)
}

#[test]
fn scan_folios_takes_the_highest_zone_first() {
    let (mut p, mut mm) = two_zones_oldest_gen();
    assert_eq!(p.list_of_seq(0, ANON), vec![7, 6, 5, 4, 3, 2, 1, 0]);
    let mut sc = mk_sc(ReclaimReason::Direct, 1);
    let mut victims = Vec::new();
    p.evict_folios(&mut mm, &mut sc, 200, false, &mut victims);
    // One zone would take the tail first: 0, 1, ..., 7. Two zones: DMA32's list from its
    // tail (4..8), then DMA's (0..4). None is mapped, so all are reclaimed.
    assert_eq!(victims, vec![4, 5, 6, 7, 0, 1, 2, 3]);
    assert_eq!(sc.nr_scanned, 8);

    // min_seq stays while any zone's list of the oldest generation holds a folio.
    let mut p = MgLru::with_config(8, MgLruConfig::preset(Preset::Default), Preset::Default, 1);
    p.set_zones(&[0, 4]);
    let mut mm = Mm::new(8);
    let f = mm.alloc_frame(0, F_ANON).unwrap();
    p.add_folio(f, p.gen_of_seq(0), false);
    assert!(!p.try_to_inc_min_seq(true));
    assert_eq!(p.min_seq(ANON), 0);
    p.del_folio(0);
    // Every zone empty: generations 0 and 1 are passed, down to MIN_NR_GENS (max_seq 3).
    assert!(p.try_to_inc_min_seq(true));
    assert_eq!(p.min_seq(ANON), 2);
}

/// Reclaim's swap writes under the block layer's plug (`swap_plug`, Linux 6.1 and 6.8):
/// 600 clean never-swapped pages in the oldest generation, isolated 64 per `evict_folios`
/// (pages 0..63, 64..127, ... tail first, none young), each written by `pageout` to the next
/// slot of a fresh swap area's first cluster, so every bio back-merges into one request. The
/// request holds at most 254 pages (virtio-blk's `max_segments`); page 254's bio starts a new
/// one, and since the plugged request is over 128 KiB (`BLK_PLUG_FLUSH_SIZE`)
/// `blk_add_rq_to_plug` first flushes the plug: pages 0..253 are dispatched during the fourth
/// batch. Pages 0..191, put back by batches 1-3, are rotated at once to the oldest
/// generation's tail (`folio_rotate_reclaimable`); 192..253, still isolated, when the
/// fourth batch ends. The fifth batch takes the tail first, last rotated first: 253 down to
/// 190, clean and unmapped, freed (64 reclaimed, no new write). Pages 254 and 255 wait in the
/// plug for `blk_finish_plug`, their writes completing after the pass.
#[test]
fn plugged_swap_writes_complete_within_the_pass() {
    use crate::mm::frames::F_SWAPCACHE;
    use crate::policy::WritebackDone;
    let mut m = machine(Preset::Default);
    touch(&mut m, 0..600);
    let mut sc = ScanControl {
        writeback_async: true,
        swap_plug: true,
        swap_max_pages: 254,
        ..mk_sc(ReclaimReason::Direct, 1)
    };
    let mut victims = Vec::new();
    for _ in 0..2 {
        assert_eq!(
            m.policy
                .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims),
            0
        );
        age(&mut m);
    }
    m.policy.nr_reclaimed = 0;
    for batch in 0..4u32 {
        assert_eq!(
            m.policy
                .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims),
            64
        );
        assert_eq!(victims.len(), 64 * (batch as usize + 1));
    }
    assert_eq!(victims, (0..256).collect::<Vec<u32>>());
    assert_eq!(m.policy.nr_reclaimed, 0);
    // add_to_swap gave them one cluster's slots in order.
    let base = m.mm.frames.slot(0);
    for f in 0..256u32 {
        assert_eq!(m.mm.frames.slot(f), base + f, "page {f}");
    }
    // 0..253 back in the oldest generation (seq 3), beside 256..599 never isolated.
    for p in [0u32, 191, 192, 253, 256, 599] {
        assert_eq!(m.policy.seq_of_frame(p), Some(3), "page {p}");
    }
    for p in [254u32, 255] {
        assert_eq!(
            m.policy.seq_of_frame(p),
            None,
            "page {p} is under writeback, off the lists"
        );
    }
    let before = victims.len();
    assert_eq!(
        m.policy
            .evict_folios(&mut m.mm, &mut sc, 60, false, &mut victims),
        64
    );
    assert_eq!(victims.len(), before, "freed pages were victims already");
    assert_eq!(m.policy.nr_reclaimed, 64);
    assert_eq!(m.policy.stats().evicted_tier.iter().sum::<u64>(), 64);
    assert_eq!(m.policy.stats().writeback_keep, 256);
    // What the engine is told, page by page.
    for f in 0..256u32 {
        let want = match f {
            0..=189 => WritebackDone::Rotated,
            190..=253 => WritebackDone::Freed,
            _ => WritebackDone::Pending,
        };
        assert_eq!(m.policy.writeback_done(f), want, "page {f}");
    }
    assert_eq!(m.policy.writeback_done(300), WritebackDone::Untracked);
    // The engine's part (as `reclaim_frame` does it): a swap PTE for all; the rotated ones
    // stay in the swap cache where the policy put them; the freed ones go; the pending ones
    // are put back with `Insert::Rotate`.
    for f in 0..256u32 {
        let vpn = m.mm.owner(f);
        let slot = m.mm.frames.slot(f);
        *m.mm.pt.pte_mut(vpn) =
            crate::mm::PTE_SWAP | ((slot as u64) << crate::mm::PTE_PAYLOAD_SHIFT);
        m.mm.frames.clear_flags(f, F_MAPPED);
        if (190..=253).contains(&f) {
            let _ = m.policy.shadow(&m.mm, f);
            m.mm.frames.set_slot(f, crate::mm::NO_SLOT);
            m.mm.frames.release(f);
            continue;
        }
        m.mm.frames.set_flags(f, F_SWAPCACHE);
        m.mm.swap.set_cached_frame(slot, f);
        if f >= 254 {
            let t = Touch {
                t: 0,
                next_use: u64::MAX,
                vpn,
                write: false,
            };
            m.policy.on_insert(&m.mm, f, t, Insert::Rotate);
        }
    }
    m.validate().unwrap();
}

/// kswapd balancing a boosted ZONE_DMA (`sc->reclaim_idx` = 0; Linux 6.1 and 6.8
/// `scan_folios`, `sort_folio`): the zones are walked from `reclaim_idx` down, then from the
/// highest down to the one above it, so ZONE_DMA's list first; ZONE_DMA32's folios are
/// "ineligible" and `sort_folio` moves them to the next generation's tail
/// (`folio_inc_gen`), counted as sorted, not isolated. Under 6.1's boosted pass
/// (`!sc->may_writepage`), `isolate_folio` refuses an anonymous folio without a swap copy:
/// it stays on its list, counted in `PGSCAN_SKIP`.
#[test]
fn a_pass_below_the_highest_zone_sorts_the_zones_above() {
    let (mut p, mut mm) = two_zones_oldest_gen();
    p.reclaim_idx = Some(0);
    let mut sc = mk_sc(ReclaimReason::Kswapd, 1);
    let mut victims = Vec::new();
    p.evict_folios(&mut mm, &mut sc, 200, true, &mut victims);
    // DMA's four are taken; DMA32's four sorted to generation min_seq + 1, each to its tail.
    assert_eq!(victims, vec![0, 1, 2, 3]);
    assert_eq!(p.stats.sorted_ineligible, 4);
    assert_eq!(p.list_of_seq(1, ANON), vec![4, 5, 6, 7]); // head to tail: 7 is met first next
    assert_eq!(sc.nr_scanned, 4);

    // 6.1, boosted: the same walk, but DMA's folios have no swap copy and may not be
    // written: refused (skipped), back on the list in their order; nothing isolated.
    let (mut p, mut mm) = two_zones_oldest_gen();
    p.reclaim_idx = Some(0);
    p.writepage_off = true;
    let mut sc = mk_sc(ReclaimReason::Kswapd, 1);
    let mut victims = Vec::new();
    p.evict_folios(&mut mm, &mut sc, 1, true, &mut victims);
    assert!(victims.is_empty());
    assert_eq!(p.skipped[0], 4);
    assert_eq!(p.stats.sorted_ineligible, 4);
    assert_eq!(p.list_of_seq(0, ANON), vec![3, 2, 1, 0]);
}

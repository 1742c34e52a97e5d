//! MG-LRU with page-cache (file) folios, against rules read from Linux 6.8: `lru_gen_add_folio`
//! (include/linux/mm_inline.h), `folio_mark_accessed` → `folio_inc_refs` (mm/swap.c),
//! `sort_folio`, `isolate_folios`, `get_type_to_scan`, `evict_folios`, `try_to_inc_min_seq`
//! (mm/vmscan.c), `lru_gen_eviction`, `lru_gen_test_recent`, `lru_gen_refault`
//! (mm/workingset.c). Expected values are worked out by hand in the comments, not taken from
//! this code's output.

use super::pid::tier_from_refs;
use super::*;
use crate::access::Access;
use crate::engine::{Machine, MachineConfig, DEF_PRIORITY};
use crate::mm::{pte_frame, FileSpec, PTE_PRESENT};
use crate::policy::{KernelVersion, ReclaimReason, ScanControl};
use crate::trace::recorded::FileOp;

/// `frames` frames, all watermarks 0 (kswapd runs only when an allocation finds no free
/// frame), a synchronous swap device, no readahead (`read_ahead_kb` 0: a read of one page
/// reads that page only, `force_page_cache_ra`), one file 0 of `pages` pages.
fn pc_machine(frames: u32, pages: u64) -> Machine<MgLru> {
    pc_machine_of(frames, pages, KernelVersion::V6_8)
}

/// [`pc_machine`] modelling `kernel` (the policy learns it from its first reclaim pass;
/// these tests call `evict_folios` themselves, so it is set here too).
fn pc_machine_of(frames: u32, pages: u64, kernel: KernelVersion) -> Machine<MgLru> {
    let p = MgLru::new(frames, &PolicyOptions::new(3), Preset::Default).unwrap();
    let mut m = crate::engine::pc_machine(p, frames, 0, kernel, (pages, pages));
    m.policy.kernel = kernel;
    m
}

fn file_op(m: &mut Machine<MgLru>, op: FileOp, offset: u64, len: u64) {
    m.file_io(&crate::engine::file_record(op, offset, len))
        .unwrap();
}

/// `pread64` of the whole page `index` of file 0.
fn read_page(m: &mut Machine<MgLru>, index: u64) {
    file_op(m, FileOp::Pread, index * 4096, 4096);
}

/// The frame caching page `index` of file 0.
fn pc_frame(m: &Machine<MgLru>, index: u64) -> FrameId {
    let e = m.mm.pt.pte(m.mm.cache.file(0).base + index);
    assert!(e & PTE_PRESENT != 0, "file page {index} not cached");
    pte_frame(e)
}

fn pc_seq(m: &Machine<MgLru>, index: u64) -> u64 {
    m.policy.seq_of_frame(pc_frame(m, index)).unwrap()
}

/// (PG_referenced, PG_workingset, refs counter, tier) of file page `index`.
fn refs_of(m: &Machine<MgLru>, index: u64) -> (bool, bool, u8, usize) {
    let f = pc_frame(m, index);
    let fl = m.policy.fs[f as usize].fl;
    (
        fl & F_REFERENCED != 0,
        fl & F_WORKINGSET != 0,
        fl & F_REFS,
        tier_from_refs(m.policy.refs(f)),
    )
}

fn counter(m: &Machine<MgLru>, name: &str) -> u64 {
    m.policy
        .counters()
        .into_iter()
        .find(|c| c.0 == name)
        .unwrap_or_else(|| panic!("no counter {name}"))
        .1
}

fn kswapd_sc() -> ScanControl {
    ScanControl {
        nr_to_reclaim: 32,
        priority: DEF_PRIORITY,
        reason: ReclaimReason::Kswapd,
        nr_scanned: 0,
        swappiness: 60,
        may_swap: true,
        high_wmark: 0,
        writeback_async: false,
        swap_plug: false,
        swap_max_pages: 128,
        low_wmark: 0,
        nr_free: 0,
        kernel: KernelVersion::V6_8,
        nr_reclaimed: 0,
        zones: Default::default(),
    }
}

/// One `evict_folios` batch by kswapd at swappiness 60; its victims are freed as the engine
/// frees them (`reclaim_frame`: shadows into the file's entries, swap for anon). Returns
/// (scanned, victims).
fn evict_batch(m: &mut Machine<MgLru>) -> (u64, Vec<FrameId>) {
    let mut sc = kswapd_sc();
    let mut victims = Vec::new();
    let scanned = m
        .policy
        .evict_folios(&mut m.mm, &mut sc, 60, true, &mut victims);
    for &f in &victims {
        assert!(m.reclaim_frame(f));
    }
    m.validate().unwrap();
    (scanned, victims)
}

fn age(m: &mut Machine<MgLru>) {
    assert!(m.policy.try_to_inc_max_seq(&mut m.mm, true));
    m.validate().unwrap();
}

/// Advance both `min_seq` over the empty generations of a fresh lruvec: `try_to_inc_min_seq`
/// moves each type while `min_seq + MIN_NR_GENS <= max_seq` and its oldest list is empty:
/// 0 → 1 → 2 (2 + 2 > 3 stops it). Then max_seq 3, min_seq [2, 2]: 2 generations.
fn to_two_gens(m: &mut Machine<MgLru>) {
    assert!(m.policy.try_to_inc_min_seq(true));
    assert_eq!((m.policy.max_seq, m.policy.min_seq), (3, [2, 2]));
}

/// `lru_gen_add_folio` for a page-cache folio: `filemap_read` / `generic_perform_write` add it
/// outside a fault (`lru_gen_in_fault()` false, so `folio_add_lru` leaves it inactive); it is
/// file type (not the "anon not in the swap cache → max_seq - 1" case) and not reclaiming, so
/// it goes to `min_seq[FILE] + 1`, or to `min_seq[FILE]` while `min_seq + MIN_NR_GENS >=
/// max_seq` (at most 3 generations). An anonymous page faulted in is active: `max_seq`.
#[test]
fn where_a_new_page_cache_folio_lands() {
    let mut m = pc_machine(4096, 64);
    // lru_gen_init_lruvec: max_seq 3, min_seq [0, 0]; 0 + 2 < 3 → min_seq + 1 = 1.
    read_page(&mut m, 0);
    assert_eq!(pc_seq(&m, 0), 1);
    let f = pc_frame(&m, 0);
    assert_eq!(m.policy.ty(f), FILE);
    assert!(!m.mm.frames.is_mapped(f));
    assert_eq!(m.policy.list_of_seq(1, FILE), vec![f]);
    // A write of a page not cached: write_begin adds it the same way (dirty).
    file_op(&mut m, FileOp::Pwrite, 4096, 4096);
    assert_eq!(pc_seq(&m, 1), 1);
    assert_eq!(m.policy.list_of_seq(1, FILE), vec![pc_frame(&m, 1), f]);
    // An anonymous page faulted in: active, the youngest generation.
    m.access(Access::read(7), u64::MAX);
    let a = pte_frame(m.mm.pt.pte(7));
    assert_eq!((m.policy.ty(a), m.policy.seq_of_frame(a)), (ANON, Some(3)));

    let mut m = pc_machine(4096, 64);
    to_two_gens(&mut m);
    // 2 + 2 >= 3: the oldest generation, min_seq 2.
    read_page(&mut m, 0);
    assert_eq!(pc_seq(&m, 0), 2);
    // Aging: max_seq 4 (3 generations); 2 + 2 >= 4: still min_seq.
    age(&mut m);
    read_page(&mut m, 1);
    assert_eq!(pc_seq(&m, 1), 2);
    // max_seq 5 (4 generations): 2 + 2 < 5 → min_seq + 1 = 3.
    age(&mut m);
    read_page(&mut m, 2);
    assert_eq!(pc_seq(&m, 2), 3);
    // The aging walks never met the page-cache folios (unmapped, no page table of the mm
    // holds them): page 0 stayed in generation 2, and no PTE was walked at all (the machine
    // has no user page).
    assert_eq!(pc_seq(&m, 0), 2);
    assert_eq!(m.policy.stats.walk_ptes, 0);
    assert_eq!(m.policy.stats.walk_pmds, 0);
    m.validate().unwrap();
}

/// `folio_mark_accessed` with MG-LRU on is `folio_inc_refs`: the 1st access sets
/// PG_referenced, the 2nd PG_workingset, later ones count up `LRU_REFS_MASK` (2 bits,
/// saturating at 3). `folio_lru_refs` = counter + workingset; tier =
/// `lru_tier_from_refs(refs)` = order_base_2(refs + 1). The folio stays in its generation.
/// `filemap_read` marks the first page of a read only if the read does not start in the page
/// where the previous read ended (`pos_same_folio`), so page 0's reads alternate with reads
/// of page 1.
#[test]
fn repeated_reads_raise_the_tier() {
    let mut m = pc_machine(4096, 64);
    read_page(&mut m, 0);
    // 1 mark: referenced only, refs 0, tier 0.
    assert_eq!(refs_of(&m, 0), (true, false, 0, 0));
    // A read starting in page 0, where the last read ended (byte 4095): not marked again.
    file_op(&mut m, FileOp::Pread, 100, 100);
    assert_eq!(refs_of(&m, 0), (true, false, 0, 0));
    // (referenced, workingset, counter, tier) after marks 2..6:
    // 2: workingset, refs 1 → tier 1; 3: counter 1, refs 2 → tier 2; 4: counter 2, refs 3 →
    // tier 2 (order_base_2(4) = 2); 5: counter 3, refs 4 → tier 3; 6: saturated, the same.
    let expect = [
        (true, true, 0, 1),
        (true, true, 1, 2),
        (true, true, 2, 2),
        (true, true, 3, 3),
        (true, true, 3, 3),
    ];
    for e in expect {
        read_page(&mut m, 1);
        read_page(&mut m, 0);
        assert_eq!(refs_of(&m, 0), e);
        assert_eq!(pc_seq(&m, 0), 1, "folio_inc_refs does not move the folio");
    }
    m.validate().unwrap();
}

/// Reads giving page 0 one mark (tier 0), page 1 two (refs 1, tier 1), pages 2 and 3 six
/// (refs 4, tier 3), all in the oldest generation of 3 (max_seq 4, min_seq 2). Marks:
/// sequence 0,1,2,3,1,2,3,2,3,2,3,2,3,2,3 (each read starts in a page other than the one
/// the previous ended in, so each marks its page).
fn protected_setup() -> Machine<MgLru> {
    let mut m = pc_machine(4096, 64);
    to_two_gens(&mut m);
    for p in [0, 1, 2, 3, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3] {
        read_page(&mut m, p);
    }
    age(&mut m);
    assert_eq!(m.policy.min_seq[FILE], 2);
    for p in 0..4 {
        assert_eq!(pc_seq(&m, p), 2);
    }
    assert_eq!(
        (0..4).map(|p| refs_of(&m, p).3).collect::<Vec<_>>(),
        [0, 1, 3, 3]
    );
    m
}

/// `sort_folio`'s protection of a file folio: "protected" when `tier > tier_idx ||
/// refs == BIT(LRU_REFS_WIDTH)`: `folio_inc_gen` (refs and flags cleared) to min_seq + 1,
/// `list_move_tail`, `protected[type][tier - 1]` counted. The rest are isolated
/// (`isolate_folio`) and, unmapped and clean, reclaimed (`lru_gen_eviction`).
#[test]
fn sort_folio_protects_file_folios_of_a_protected_tier() {
    // PID history making file tier 1 refault more than tier 0: `isolate_folios` at
    // swappiness 60 → `get_type_to_scan`: sp = anon tier 0 (0 refaults, gain 60), pv = file
    // tier 0 (10 refaults < MIN_LRU_BATCH: positive) → file. Then file tier 1 against sp:
    // 500 refaults ≥ 64 and 500 × (0 + 64) × 60 = 1,920,000 > (0 + 1) × 1000 × 140 =
    // 140,000: not positive → tier_idx 0. Folios of tiers 1 and 3 are protected.
    let mut m = protected_setup();
    m.policy.pid.refaulted[FILE][0] = 10;
    m.policy.pid.evicted[FILE][0] = 1000;
    m.policy.pid.refaulted[FILE][1] = 500;
    m.policy.pid.evicted[FILE][1] = 1000;
    assert_eq!(m.policy.pid.type_to_scan(60), (FILE, 0));
    let fr: Vec<FrameId> = (0..4).map(|p| pc_frame(&m, p)).collect();
    let (scanned, victims) = evict_batch(&mut m);
    // The tail of generation 2's file list is page 0 (added first). Page 0: tier 0 →
    // isolated, reclaimed. Pages 1, 2, 3: protected, moved in order to the tail of
    // generation 3, refs cleared; protected[file] = [1 (tier 1), 0, 2 (tier 3)].
    assert_eq!(victims, vec![fr[0]]);
    assert_eq!(m.policy.list_of_seq(3, FILE), vec![fr[1], fr[2], fr[3]]);
    for p in 1..4 {
        assert_eq!(refs_of(&m, p), (false, false, 0, 0));
    }
    assert_eq!(m.policy.stats.protected_tier, [0, 1, 0, 2]);
    // Generation 2 is now empty for both types: `try_to_inc_min_seq` moves min_seq to 3
    // (3 + 2 > 4 stops it); anon is then down to MIN_NR_GENS generations, so
    // `evict_folios` reports 0 scanned (the caller must age before evicting more).
    assert_eq!(m.policy.min_seq, [3, 3]);
    assert_eq!(scanned, 0);
    // Moving min_seq[file] folded the generation's counters into the averages
    // (`reset_ctrl_pos(.., carryover)`: (avg + evicted + protected) / 2): tier 0 (0 + 1000 +
    // 1 evicted) / 2 = 500, tier 1 (0 + 1000 + 1 protected) / 2 = 500, tier 3 (0 + 0 + 2) / 2
    // = 1; the current counters are cleared.
    assert_eq!(m.policy.pid.avg_total[FILE], [500, 500, 0, 1]);
    assert_eq!(m.policy.pid.protected[FILE], [0, 0, 0]);
    assert_eq!(counter(&m, "pgscan_file"), 1);
    assert_eq!(counter(&m, "pgsteal_file"), 1);
    assert_eq!(counter(&m, "pgscan_anon"), 0);
    // 6.8 counts no vmstat for a protection.
    assert_eq!(counter(&m, "workingset_activate_file"), 0);
    assert_eq!(m.stats.file_writebacks, 0, "clean: freed without I/O");
    assert_eq!(m.stats.nr_file_pages, 3);

    // Without history, every tier passes (fewer than MIN_LRU_BATCH refaults): tier_idx 3.
    // Page 1 (tier 1) is isolated now; pages 2 and 3 (refs 4 = BIT(LRU_REFS_WIDTH)) are
    // still protected. Linux 6.1 counts each protection as WORKINGSET_ACTIVATE (sort_folio).
    let mut m = protected_setup();
    m.policy.kernel = KernelVersion::V6_1;
    let fr: Vec<FrameId> = (0..4).map(|p| pc_frame(&m, p)).collect();
    let (_, victims) = evict_batch(&mut m);
    assert_eq!(victims, vec![fr[0], fr[1]]);
    assert_eq!(m.policy.list_of_seq(3, FILE), vec![fr[2], fr[3]]);
    assert_eq!(counter(&m, "workingset_activate_file"), 2);
    assert_eq!(counter(&m, "pgsteal_file"), 2);
}

/// Ten anonymous pages (faulted: youngest, seq 3) and ten page-cache pages (seq 1), aged
/// three times: each aging finds 4 generations and moves both types' oldest up
/// (`inc_min_seq`, `folio_inc_gen` to the tail of the next) — min_seq [1,1] / max 4,
/// [2,2] / 5, [3,3] / 6. The first walk cleared the anon pages' accessed bits (their
/// generation was already the youngest); no walk found them young again. Both types' folios
/// are now in generation 3, the oldest.
fn two_types_setup() -> Machine<MgLru> {
    let mut m = pc_machine(4096, 64);
    for p in 0..10 {
        m.access(Access::read(p), u64::MAX);
        read_page(&mut m, p);
    }
    for _ in 0..3 {
        age(&mut m);
    }
    assert_eq!((m.policy.max_seq, m.policy.min_seq), (6, [3, 3]));
    assert_eq!(m.policy.nr_pages_of_seq(3, ANON), 10);
    assert_eq!(m.policy.nr_pages_of_seq(3, FILE), 10);
    m
}

/// The PID controller's choice of type (`get_type_to_scan`, swappiness 60: gains 60 for
/// anon, 140 for file), on a hand case each way.
#[test]
fn pid_controller_chooses_file_or_anon() {
    // Anon refaults 200 of 1000, file 10 of 1000: pv = file has < MIN_LRU_BATCH refaults,
    // positive → file. Its tiers 1..3 (no refaults) all pass: tier_idx 3. The ten file
    // folios (tier 0: refs cleared by folio_inc_gen) are isolated and reclaimed.
    let mut m = two_types_setup();
    m.policy.pid.refaulted[ANON][0] = 200;
    m.policy.pid.evicted[ANON][0] = 1000;
    m.policy.pid.refaulted[FILE][0] = 10;
    m.policy.pid.evicted[FILE][0] = 1000;
    let (_, victims) = evict_batch(&mut m);
    assert_eq!(victims.len(), 10);
    assert!(victims.iter().all(|&f| !m.mm.frames.is_anon(f)));
    assert_eq!(
        (counter(&m, "pgscan_file"), counter(&m, "pgscan_anon")),
        (10, 0)
    );
    assert_eq!(m.stats.pswpout, 0);

    // Anon refaults 10 of 1000, file 300 of 1000: 300 ≥ 64 and 300 × (1000 + 64) × 60 =
    // 19,152,000 > (10 + 1) × 1000 × 140 = 1,540,000: not positive → anon. The ten anon
    // folios are isolated; rmap finds them old (accessed bits cleared by the first walk):
    // all swapped out.
    let mut m = two_types_setup();
    m.policy.pid.refaulted[ANON][0] = 10;
    m.policy.pid.evicted[ANON][0] = 1000;
    m.policy.pid.refaulted[FILE][0] = 300;
    m.policy.pid.evicted[FILE][0] = 1000;
    let (_, victims) = evict_batch(&mut m);
    assert_eq!(victims.len(), 10);
    assert!(victims
        .iter()
        .all(|&f| m.mm.frames.is_anon(f) || !m.mm.frames.in_use(f)));
    assert_eq!(
        (counter(&m, "pgscan_file"), counter(&m, "pgscan_anon")),
        (0, 10)
    );
    assert_eq!(m.stats.pswpout, 10);
    assert_eq!(counter(&m, "pgsteal_file"), 0);
}

/// A file refault's shadow (`lru_gen_eviction`: min_seq[file] and refs at eviction;
/// `lru_gen_refault`): every refault counts `workingset_refault_file` (6.8); a recent one
/// (shadow seq = current min_seq[file]) counts `refaulted[file][tier]` and
/// `workingset_activate_file`; one whose refs were ≥ 3 also `workingset_restore_file` and
/// comes back with refs 4 (LRU_REFS_MASK | PG_workingset). Not in a fault: a refs-0 refault
/// is not restored. Linux 6.1 (docs/kernel-6.1-vs-6.8.md, A1 and A2): `lru_gen_refault`
/// counts `workingset_refault_file` only for a recent refault and never
/// `workingset_activate_file` (its `sort_folio` counts that at protections, none here).
#[test]
fn file_refault_activate_and_restore() {
    file_refault_case(KernelVersion::V6_8);
    file_refault_case(KernelVersion::V6_1);
}

fn file_refault_case(kernel: KernelVersion) {
    let v68 = kernel == KernelVersion::V6_8;
    let mut m = pc_machine_of(4096, 128, kernel);
    to_two_gens(&mut m);
    // Page 0 once (refs 0); pages 1 and 2 four times each, alternating (referenced,
    // workingset, counter 2: refs 3, tier 2); pages 3..=69 once. All in generation 2
    // (2 generations: min_seq), page 0 at the tail.
    read_page(&mut m, 0);
    for _ in 0..4 {
        read_page(&mut m, 1);
        read_page(&mut m, 2);
    }
    for p in 3..70 {
        read_page(&mut m, p);
    }
    assert_eq!(refs_of(&m, 1), (true, true, 2, 2));
    age(&mut m); // max_seq 4, min_seq [2, 2]
                 // One batch, tier_idx 3 (no history): pages 0..=63 isolated from the tail (page 1: tier
                 // 2 ≤ 3 and refs 3 ≠ 4), the batch full at MIN_LRU_BATCH = 64; pages 64..=69 stay, so
                 // min_seq[file] stays 2. All 64 reclaimed: shadows (seq 2, refs 0) for page 0, (seq 2,
                 // refs 3) for pages 1 and 2.
    let (_, victims) = evict_batch(&mut m);
    assert_eq!(victims.len(), 64);
    assert_eq!(m.policy.min_seq[FILE], 2);
    assert_eq!(m.policy.pid.evicted[FILE], [62, 0, 2, 0]);
    // Refault of page 0: recent, tier 0; no restore (refs 0, not in a fault).
    read_page(&mut m, 0);
    assert_eq!(m.stats.workingset_refault_file, 1);
    assert_eq!(m.policy.pid.refaulted[FILE], [1, 0, 0, 0]);
    assert_eq!(counter(&m, "workingset_activate_file"), v68 as u64);
    assert_eq!(counter(&m, "workingset_restore_file"), 0);
    // Not active: 3 generations (2 + 2 >= 4) → min_seq; the read marked it referenced.
    assert_eq!(pc_seq(&m, 0), 2);
    assert_eq!(refs_of(&m, 0), (true, false, 0, 0));
    // Refault of page 1: recent, refs = (3 - 1) + workingset = 3, tier 2; refs ≥ 3:
    // restored (counter 3 + workingset), then the read sets PG_referenced: refs 4, tier 3.
    read_page(&mut m, 1);
    assert_eq!(m.stats.workingset_refault_file, 2);
    assert_eq!(m.policy.pid.refaulted[FILE], [1, 0, 1, 0]);
    assert_eq!(counter(&m, "workingset_activate_file"), 2 * v68 as u64);
    assert_eq!(counter(&m, "workingset_restore_file"), 1);
    assert_eq!(refs_of(&m, 1), (true, true, 3, 3));
    // Two agings: max_seq 5 (4 generations), then 6 after `inc_min_seq`: min_seq[file] 3.
    // Page 2's shadow (seq 2) is no longer recent: counted as a refault only (6.8), not at
    // all (6.1).
    age(&mut m);
    age(&mut m);
    assert_eq!(m.policy.min_seq[FILE], 3);
    read_page(&mut m, 2);
    assert_eq!(m.stats.workingset_refault_file, if v68 { 3 } else { 2 });
    assert_eq!(counter(&m, "workingset_activate_file"), 2 * v68 as u64);
    assert_eq!(counter(&m, "workingset_restore_file"), 1);
    assert_eq!(m.stats.workingset_refault_anon, 0);
    m.validate().unwrap();
}

/// A randomized mix of anonymous reads and writes with file reads and writes (random and
/// sequential, readahead on) in memory that forces reclaim of both types: after every
/// operation, each frame is on exactly one generation list of its own type, sizes match the
/// flags, the page cache's entries match its frames (`Machine::validate`, which
/// `check_invariants` also runs). The run is deterministic.
#[test]
fn randomized_file_and_anon_ops_keep_the_invariants() {
    use rand::{Rng, SeedableRng};
    let run = |seed: u64| {
        let cfg = MachineConfig {
            swap_sync_io: true,
            check_invariants: true,
            ..MachineConfig::new(192)
        };
        let p = MgLru::new(192, &PolicyOptions::new(seed), Preset::Default).unwrap();
        let mut m = Machine::new(&cfg, p).unwrap();
        m.add_file(FileSpec {
            id: 0,
            initial_size: 400 * 4096,
            extent: 800 * 4096,
        })
        .unwrap();
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut seq_pos = 0u64;
        for step in 0..6000 {
            match rng.gen_range(0..10) {
                0..=3 => {
                    let p = rng.gen_range(0..300u64);
                    if rng.gen_bool(0.3) {
                        m.access(Access::write(p), u64::MAX);
                    } else {
                        m.access(Access::read(p), u64::MAX);
                    }
                }
                4..=5 => {
                    let off = rng.gen_range(0..400 * 4096u64);
                    let len = rng.gen_range(1..5 * 4096u64);
                    file_op(&mut m, FileOp::Pread, off, len);
                }
                6 => {
                    let off = rng.gen_range(0..700 * 4096u64);
                    let len = rng.gen_range(1..3 * 4096u64);
                    file_op(&mut m, FileOp::Pwrite, off, len);
                }
                _ => {
                    file_op(&mut m, FileOp::Pread, seq_pos, 4096);
                    seq_pos = (seq_pos + 4096) % (400 * 4096);
                }
            }
            if step % 500 == 0 {
                m.validate().unwrap();
            }
        }
        m.validate().unwrap();
        (format!("{:?}", m.stats), m.policy.counters())
    };
    let (stats, counters) = run(11);
    let get = |n: &str| counters.iter().find(|c| c.0 == n).unwrap().1;
    assert!(
        get("pgsteal_file") > 0 && get("pgscan_anon") > 0,
        "{counters:?}"
    );
    assert!(get("workingset_activate_file") > 0, "{counters:?}");
    assert_eq!(run(11), (stats, counters));
}

/// Clean and dirty page-cache folios at reclaim (Linux 6.1 and 6.8). Pages 0 and 1 wholly
/// written (dirty; a write reads nothing and marks nothing accessed: refs 0), page 2 read
/// (clean, 4 KiB of pgpgin), all in the oldest of 3 generations. `sort_folio` moves the
/// dirty ones to the next generation with `PG_reclaim` ("waiting for writeback": `type ==
/// LRU_GEN_FILE && folio_test_dirty`), which `NR_VMSCAN_IMMEDIATE` does not count; the
/// batch isolates page 2 alone, old by rmap, freed without I/O. An `fsync` writes the two
/// (8 KiB of pgpgout); `folio_end_writeback` finds `PG_reclaim` on each and rotates it to
/// the tail of the oldest generation (`pgrotated` 2), where the batch after the next aging
/// frees both without a write.
#[test]
fn clean_file_folio_freed_without_io_dirty_one_left_to_the_flusher() {
    let mut m = pc_machine(4096, 64);
    to_two_gens(&mut m);
    file_op(&mut m, FileOp::Pwrite, 0, 8192);
    read_page(&mut m, 2);
    assert_eq!((m.stats.nr_dirty, m.stats.pgpgin), (2, 4));
    assert_eq!(refs_of(&m, 0), (false, false, 0, 0));
    age(&mut m);
    let (_, victims) = evict_batch(&mut m);
    assert_eq!(victims.len(), 1);
    assert_eq!((m.stats.file_writebacks, m.stats.pgpgout), (0, 0));
    assert_eq!((m.stats.nr_dirty, m.stats.nr_file_pages), (2, 2));
    assert_eq!(
        (
            counter(&m, "sorted_dirty"),
            counter(&m, "nr_vmscan_immediate_reclaim")
        ),
        (2, 0)
    );
    file_op(&mut m, FileOp::Fsync, 0, 0);
    assert_eq!(
        (m.stats.file_writebacks, m.stats.pgpgout, m.stats.pgrotated),
        (2, 8, 2)
    );
    // The first batch emptied the oldest generation (min_seq[file] 2 → 3 of max_seq 4):
    // with `MIN_NR_GENS` left, `scan_folios` waits for aging.
    age(&mut m);
    let (_, victims) = evict_batch(&mut m);
    assert_eq!(victims.len(), 2);
    assert_eq!(
        (m.stats.nr_dirty, m.stats.nr_file_pages, m.stats.pgpgout),
        (0, 0, 8)
    );
    assert_eq!(counter(&m, "pgsteal_file"), 3);
    assert_eq!(m.stats.nr_vmscan_write, 0);
}

//! The watermark boost (Linux 6.1 and 6.8, mm/page_alloc.c `steal_suitable_fallback` →
//! `boost_watermark`, `rmqueue`'s `wakeup_kswapd(zone, 0, 0, zone_idx(zone))`; mm/vmscan.c
//! `balance_pgdat`, `isolate_lru_folios`), worked by hand on a machine whose ZONE_DMA has
//! its free lists by migratetype.

use super::*;
use crate::access::Access;
use crate::mm::buddy::{PageTypes, MOVABLE, NR_ORDERS, UNMOVABLE};
use crate::policy::clock_lru::ClockLru;

/// ZONE_DMA: five pageblocks, one unmovable with a free chunk of order 7 (128 pages), four
/// movable with chunks of order 10 and 9 and 9 (2,048 pages): 2,176 frames, watermarks
/// 10/12/14, no reserve. ZONE_DMA32: 1,000 frames without migratetypes, 20/30/40.
fn boost_machine(factor: u32, defer_kswapd: bool) -> Machine<ClockLru> {
    let mut free = [[0; NR_ORDERS]; 3];
    free[UNMOVABLE][7] = 1;
    free[MOVABLE][9] = 2;
    free[MOVABLE][10] = 1;
    let cfg = MachineConfig {
        page_cluster: Some(0),
        defer_kswapd,
        swap_sync_io: true,
        check_invariants: true,
        watermark_boost_factor: factor,
        zones: vec![
            ZoneConfig {
                name: "DMA".into(),
                frames: 2_176,
                watermarks: Some([10, 12, 14]),
                lowmem_reserve: Some(0),
                pagetypes: Some(PageTypes {
                    blocks: [1, 4, 0],
                    free,
                }),
            },
            ZoneConfig {
                name: "DMA32".into(),
                frames: 1_000,
                watermarks: Some([20, 30, 40]),
                lowmem_reserve: None,
                pagetypes: None,
            },
        ],
        ..MachineConfig::new(3_176)
    };
    Machine::new(&cfg, ClockLru::new(3_176)).unwrap()
}

fn write(m: &mut Machine<ClockLru>, pages: std::ops::Range<u64>) {
    for p in pages {
        m.access(Access::write(p), u64::MAX);
    }
}

fn free(m: &Machine<ClockLru>) -> (u32, u32) {
    (m.mm.frames.n_free_zone(0), m.mm.frames.n_free_zone(1))
}

fn clear_young(m: &mut Machine<ClockLru>) {
    for f in 0..3_176 {
        if m.mm.frames.in_use(f) {
            m.mm.test_and_clear_young(f);
        }
    }
}

/// Fill DMA32 to its low watermark (970 pages), then ZONE_DMA's 2,048 movable pages, then
/// one more page: the fallback.
fn fill_to_the_fallback(m: &mut Machine<ClockLru>) {
    // DMA32 while its free pages exceed low (30): 970 pages. Then ZONE_DMA while above its
    // low watermark (12): its 2,048 movable pages, with no fallback.
    write(m, 0..970);
    write(m, 970..3_018);
    assert_eq!(free(m), (128, 30));
    assert_eq!((m.stats.extfrag, m.stats.watermark_boosts), (0, 0));
    // The next takes the unmovable block's order-7 chunk (`__rmqueue_fallback`): smaller
    // than a pageblock, so `boost_watermark`: + 512, capped at max(512, 14 × 1.5) = 512.
    write(m, 3_018..3_019);
    assert_eq!((m.stats.extfrag, m.stats.watermark_boosts), (1, 1));
    assert_eq!(m.boost[0], 512);
    assert_eq!(free(m), (127, 30));
}

#[test]
fn a_fallback_boosts_its_zone_and_kswapd_reclaims_there_alone() {
    let mut m = boost_machine(15_000, false);
    fill_to_the_fallback(&mut m);
    assert_eq!(m.stats.kswapd_wakeups, 0);
    clear_young(&mut m);
    // The next allocation first wakes kswapd for ZONE_DMA (`rmqueue`'s wake; 127 free ≤
    // high 14 + boost 512), which runs at once here. ZONE_DMA is not balanced, so the boost
    // is dropped and kswapd reclaims normally up to ZONE_DMA (`sc.reclaim_idx` = 0) until
    // DMA's free pages exceed high + boost (526): every page freed is DMA's, every DMA32
    // folio met is skipped (`pgskip_dma32`) and counted in pgscan; then the boost comes
    // off, and the allocation takes ZONE_DMA (DMA32 is at its low watermark).
    write(&mut m, 3_019..3_020);
    assert_eq!(
        (m.stats.kswapd_wakeups, m.stats.kswapd_boosted_runs),
        (1, 1)
    );
    let (dma, dma32) = free(&m);
    assert!(dma + 1 > 526, "DMA free {dma}");
    // (the first pass's swap-outs' xarray nodes take their slab from DMA32, DMA being
    // under its boosted min: an order-0 slab page, DMA32 having no migratetypes here; the
    // later passes' slabs come from DMA, above its low by then)
    assert_eq!(dma32, 29);
    assert!(m.stats.nr_slab_reclaimable > 1);
    // (a few freed pages sit on DMA's per-CPU lists, out of its free count: while kswapd
    // runs they hold at most min(batch 1 << 2, high 12) - 1 = 3)
    let pcp = m.mm.frames.buddy(0).unwrap().pcp_pages();
    assert!(pcp <= 3, "{pcp}");
    // (and the slab pages DMA gave: all but the one from DMA32)
    let slab_from_dma = m.stats.nr_slab_reclaimable - 1;
    assert_eq!(
        m.stats.pgsteal_kswapd,
        (dma + pcp + 1 - 127) as u64 + slab_from_dma
    );
    assert_eq!(m.stats.pgskip_zone[0], 0);
    assert!(m.stats.pgskip_zone[1] > 0);
    assert_eq!(
        m.stats.pgscan_kswapd,
        m.stats.pgsteal_kswapd + m.stats.pgskip_zone[1]
    );
    assert_eq!(m.boost, [0; crate::policy::MAX_ZONES]);
    m.validate().unwrap();
}

#[test]
fn a_deferred_kswapd_takes_its_zone_at_the_wake() {
    // Deferred kswapd (the timing engine's): the boost's wake for ZONE_DMA starts a run for
    // ZONE_DMA at once (`balance_pgdat` with its boost to reclaim); the same allocation's wake
    // for every zone (no zone above low: DMA 127 ≤ 12 + 512) comes while kswapd is awake and
    // is for its next run. The run for ZONE_DMA frees DMA's pages only; the next, for every
    // zone, finds the node balanced at ZONE_DMA (free > high 14, DMA32 not needed) and is
    // not started.
    let mut m = boost_machine(15_000, true);
    fill_to_the_fallback(&mut m);
    clear_young(&mut m);
    write(&mut m, 3_019..3_020);
    assert!(m.kswapd_awake());
    assert_eq!(m.stats.kswapd_boosted_runs, 1);
    assert_eq!(free(&m), (127, 29));
    while m.kswapd_step() {}
    assert_eq!(m.stats.kswapd_boosted_runs, 1);
    let (dma, dma32) = free(&m);
    assert!(dma > 526, "DMA free {dma}");
    // (the run's first pass's xarray nodes' slab page from DMA32, as above)
    assert_eq!(dma32, 28);
    assert!(m.stats.pgskip_zone[1] > 0);
    assert_eq!(m.boost, [0; crate::policy::MAX_ZONES]);
    m.validate().unwrap();
}

#[test]
fn watermark_boost_factor_zero_falls_back_without_boosting() {
    let mut m = boost_machine(0, true);
    write(&mut m, 0..3_020);
    assert_eq!((m.stats.extfrag, m.stats.watermark_boosts), (1, 0));
    assert_eq!(m.boost[0], 0);
    // 127 free in DMA > low 12: the allocation took DMA, kswapd sleeps.
    assert_eq!(free(&m), (126, 30));
    assert!(!m.kswapd_awake());
}

#[test]
fn pagetypes_errors_name_the_zone() {
    let mut free = [[0; NR_ORDERS]; 3];
    free[UNMOVABLE][9] = 1;
    let pt = PageTypes {
        blocks: [0, 1, 0],
        free,
    };
    let cfg = MachineConfig {
        zones: vec![
            ZoneConfig {
                name: "DMA".into(),
                frames: 600,
                watermarks: None,
                lowmem_reserve: None,
                pagetypes: Some(pt.clone()),
            },
            ZoneConfig {
                name: "DMA32".into(),
                frames: 1_000,
                watermarks: None,
                lowmem_reserve: None,
                pagetypes: None,
            },
        ],
        ..MachineConfig::new(1_600)
    };
    let e = Machine::new(&cfg, ClockLru::new(1_600))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("zones[0] (DMA).pagetypes") && e.contains("600 free pages do not fit"),
        "{e}"
    );
    let one = MachineConfig {
        zones: vec![ZoneConfig {
            name: "DMA".into(),
            frames: 1_600,
            watermarks: None,
            lowmem_reserve: None,
            pagetypes: Some(pt),
        }],
        ..MachineConfig::new(1_600)
    };
    let e = Machine::new(&one, ClockLru::new(1_600))
        .unwrap_err()
        .to_string();
    assert!(e.contains("two or more"), "{e}");
}

/// One file I/O record of file 0.
fn file_op(m: &mut Machine<ClockLru>, op: crate::trace::recorded::FileOp, offset: u64, len: u64) {
    m.file_io(&file_record(op, offset, len)).unwrap();
}

/// The page cache's buffer heads (fs/buffer.c `create_page_buffers`, one `buffer_head` per
/// 4 KiB page written, 39 to an order-0 slab page of `bh_cachep`; `try_to_free_buffers` /
/// `block_invalidate_folio` when the page goes; an empty slab page is freed) and the file's
/// xarray nodes (`radix_tree_node_cachep`, 14 to an order-1 slab). On [`boost_machine`] (a
/// zone with migratetypes, so the machine keeps them): 100 pages written whole are 100
/// buffer heads in 3 slab pages (pages 0-38, 39-77, 78-99: 39 + 39 + 22), and indices 0-99
/// need two leaves and a root over them, 3 nodes in one slab (of order 0, 7 objects, `s->min`:
/// the slab comes from DMA32, which has no migratetypes here and hands out single pages):
/// 4 pages held off the free lists. `ftruncate` to 61 pages drops pages 61-99: the second
/// buffer-head slab keeps 22 objects (39-60), the third is empty and freed; indices 0-60
/// fit one leaf, which is then the root (`xas_shrink`): 1 node, its slab kept. 2 + 1 pages.
/// Pages 61-99 written again: 17 buffer heads go into the second slab's room (to 39), 22
/// into a new page, and the two nodes come back into the node slab: 3 + 1 again.
#[test]
fn buffer_heads_fill_slab_pages_of_39_and_free_the_empty_ones() {
    use crate::trace::recorded::FileOp;
    let mut m = boost_machine(0, false);
    m.add_file(crate::mm::FileSpec {
        id: 0,
        initial_size: 0,
        extent: 100 * 4096,
    })
    .unwrap();
    let held = m.mm.frames.n_held();
    file_op(&mut m, FileOp::Pwrite, 0, 100 * 4096);
    assert_eq!(m.slabs.xa_nodes.slab_objects(), [3]);
    assert_eq!(m.stats.nr_slab_reclaimable, 3 + 1);
    assert_eq!(m.mm.frames.n_held() - held, 3 + 1);
    file_op(&mut m, FileOp::Ftruncate, 0, 61 * 4096);
    assert_eq!(m.stats.nr_file_pages, 61);
    assert_eq!(m.slabs.xa_nodes.slab_objects(), [1]);
    assert_eq!(m.stats.nr_slab_reclaimable, 2 + 1);
    assert_eq!(m.mm.frames.n_held() - held, 2 + 1);
    file_op(&mut m, FileOp::Pwrite, 61 * 4096, 39 * 4096);
    assert_eq!(m.stats.nr_slab_reclaimable, 3 + 1);
    assert_eq!(m.slabs.bh.slab_objects(), [39, 39, 22]);
    assert_eq!(m.slabs.xa_nodes.slab_objects(), [3]);
    m.validate().unwrap();
}

/// A machine without migratetypes keeps no buffer heads: the same writes take no slab.
#[test]
fn buffer_heads_need_the_zones_migratetypes() {
    use crate::trace::recorded::FileOp;
    let cfg = MachineConfig::new(1_000);
    let mut m = Machine::new(&cfg, ClockLru::new(1_000)).unwrap();
    m.add_file(crate::mm::FileSpec {
        id: 0,
        initial_size: 0,
        extent: 100 * 4096,
    })
    .unwrap();
    file_op(&mut m, FileOp::Pwrite, 0, 100 * 4096);
    assert_eq!((m.stats.nr_slab_reclaimable, m.mm.frames.n_held()), (0, 0));
}

/// The swap cache's xarray nodes (mm/swap_state.c `add_to_swap_cache`, one xarray per
/// 16,384 slots indexed by the full offset, lib/xarray.c's node rules): after a run that
/// swaps, the machine holds exactly the nodes the slots in use need, counted here from the
/// slots alone: per address space, a leaf per 64-slot range in use, and for a space whose
/// largest offset in use is 64 or more a node per 4,096-slot range, and for one whose
/// largest is 4,096 or more a root over them (no space here reaches 262,144).
#[test]
fn the_swap_caches_xarray_nodes_follow_the_slots_in_use() {
    let mut m = boost_machine(15_000, false);
    write(&mut m, 0..4_000);
    // Some swapped pages come back and free their slots (write faults: `folio_free_swap`).
    write(&mut m, 0..300);
    write(&mut m, 4_000..4_001);
    assert!(m.stats.pswpout > 800, "{}", m.stats.pswpout);
    let used: Vec<u64> = (0..m.mm.swap.n_slots())
        .filter(|&s| m.mm.swap.owner(s).is_some())
        .map(|s| s as u64)
        .collect();
    assert_eq!(used.len() as u32, m.mm.swap.n_used());
    let mut want = 0usize;
    let spaces: std::collections::BTreeSet<u64> = used.iter().map(|s| s >> 14).collect();
    for sp in spaces {
        let mine: Vec<u64> = used.iter().copied().filter(|s| s >> 14 == sp).collect();
        let max = *mine.iter().max().unwrap();
        let distinct = |shift: u32| {
            mine.iter()
                .map(|s| s >> shift)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        };
        if mine.len() == 1 && max == 0 {
            continue;
        }
        want += distinct(6);
        if max >= 64 {
            want += distinct(12);
        }
        if max >= 4_096 {
            want += 1;
        }
    }
    assert!(want > 10, "{want}");
    assert_eq!(m.slabs.xa_nodes.objects(), want);
    assert_eq!(
        m.stats.nr_slab_reclaimable,
        m.slabs.xa_nodes.pages() + m.slabs.bh.pages()
    );
    m.validate().unwrap();
}

/// `zone_batchsize` and `zone_highsize` (Linux 6.1), by hand: the 160 MiB guest's ZONE_DMA32
/// (16,162 frames: 15 >> 2 = 3, 3 + 1 = 4, 4 - 1 = 3; high its low watermark, 332) and
/// ZONE_DMA (3,808: 3 >> 2 = 0, so 1, 1 + 0 = 1, 1 - 1 = 0, at least 1; high 60); a large
/// zone (200,000: 195 >> 2 = 48, 48 + 24 = 72, 64 - 1 = 63) whose low watermark is below
/// four batches (high 4 × 63 = 252).
#[test]
fn per_cpu_batch_and_high_follow_zone_batchsize_and_zone_highsize() {
    assert_eq!(super::pcp_batch_high(16_162, 332), (3, 332));
    assert_eq!(super::pcp_batch_high(3_808, 60), (1, 60));
    assert_eq!(super::pcp_batch_high(200_000, 100), (63, 252));
    assert_eq!(super::pcp_batch_high(2_000_000, 5_000), (63, 5_000));
}

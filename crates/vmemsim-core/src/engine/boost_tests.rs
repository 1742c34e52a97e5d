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
fn boost_machine(factor: u32) -> Machine<ClockLru> {
    let mut free = [[0; NR_ORDERS]; 3];
    free[UNMOVABLE][7] = 1;
    free[MOVABLE][9] = 2;
    free[MOVABLE][10] = 1;
    let cfg = MachineConfig {
        page_cluster: Some(0),
        defer_kswapd: true,
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

#[test]
fn a_fallback_boosts_its_zone_and_kswapd_reclaims_there_alone() {
    let mut m = boost_machine(15_000);
    // DMA32 while its free pages exceed low (30): 970 pages. Then ZONE_DMA while above its
    // low watermark (12): its 2,048 movable pages, with no fallback.
    write(&mut m, 0..970);
    write(&mut m, 970..3_018);
    assert_eq!(free(&m), (128, 30));
    assert_eq!((m.stats.extfrag, m.stats.watermark_boosts), (0, 0));
    // The next takes the unmovable block's order-7 chunk (`__rmqueue_fallback`): smaller
    // than a pageblock, so `boost_watermark`: + 512, capped at max(512, 14 × 1.5) = 512.
    write(&mut m, 3_018..3_019);
    assert_eq!((m.stats.extfrag, m.stats.watermark_boosts), (1, 1));
    assert_eq!(m.boost[0], 512);
    assert!(!m.kswapd_awake());
    // The next allocation wakes kswapd for ZONE_DMA (127 free ≤ high 14 + boost 512), and
    // finds no zone above low (DMA32: 30; DMA: 127 ≤ 12 + 512): the min retry takes DMA32.
    write(&mut m, 3_019..3_020);
    assert!(m.kswapd_awake());
    assert_eq!(m.stats.kswapd_boosted_runs, 1);
    assert_eq!(free(&m), (127, 29));
    for f in 0..3_176 {
        if m.mm.frames.in_use(f) {
            m.mm.test_and_clear_young(f);
        }
    }
    let dma32_used = 1_000 - 29;
    while m.kswapd_step() {}
    // ZONE_DMA was not balanced, so the boost was dropped and kswapd reclaimed normally up
    // to ZONE_DMA (`sc.reclaim_idx` = 0) until DMA's free pages exceeded high + boost
    // (526): every page freed is DMA's, every DMA32 folio met was skipped (`pgskip_dma32`)
    // and counted in pgscan; then the boost came off.
    let (dma, dma32) = free(&m);
    assert!(dma > 526, "DMA free {dma}");
    assert_eq!(1_000 - dma32, dma32_used);
    assert_eq!(m.stats.pgsteal_kswapd, (dma - 127) as u64);
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
fn watermark_boost_factor_zero_falls_back_without_boosting() {
    let mut m = boost_machine(0);
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

//! A machine with two zones (`MachineConfig::zones`): the page allocator's zonelist fallback
//! and kswapd's balance test, worked by hand from Linux 6.1/6.8 mm/page_alloc.c
//! (`get_page_from_freelist`, `zone_watermark_fast`, `__alloc_pages_slowpath`) and
//! mm/vmscan.c (`pgdat_balanced`, `kswapd_shrink_node`).

use super::*;
use crate::access::Access;
use crate::policy::clock_lru::ClockLru;

/// ZONE_DMA of 100 frames (watermarks 4/5/6, `lowmem_reserve` 10 against DMA32 allocations)
/// and ZONE_DMA32 of 200 (20/30/40); kswapd deferred so that only the tests run it.
fn two_zone_machine() -> Machine<ClockLru> {
    let cfg = MachineConfig {
        page_cluster: Some(0),
        defer_kswapd: true,
        swap_sync_io: true,
        check_invariants: true,
        zones: vec![
            ZoneConfig {
                name: "DMA".into(),
                frames: 100,
                watermarks: Some([4, 5, 6]),
                lowmem_reserve: Some(10),
                pagetypes: None,
            },
            ZoneConfig {
                name: "DMA32".into(),
                frames: 200,
                watermarks: Some([20, 30, 40]),
                lowmem_reserve: None,
                pagetypes: None,
            },
        ],
        ..MachineConfig::new(300)
    };
    Machine::new(&cfg, ClockLru::new(300)).unwrap()
}

fn touch(m: &mut Machine<ClockLru>, pages: std::ops::Range<u64>) {
    for p in pages {
        m.access(Access::read(p), u64::MAX);
    }
}

fn free(m: &Machine<ClockLru>) -> (u32, u32) {
    (m.mm.frames.n_free_zone(0), m.mm.frames.n_free_zone(1))
}

#[test]
fn allocations_fall_back_from_dma32_to_dma_by_watermark_and_reserve() {
    let mut m = two_zone_machine();
    assert_eq!(
        m.watermarks(),
        Watermarks {
            min: 24,
            low: 35,
            high: 46
        }
    );
    // The fast path (ALLOC_WMARK_LOW) takes DMA32 while its free pages exceed low (30):
    // 200 − 30 = 170 pages.
    touch(&mut m, 0..170);
    assert_eq!(
        (m.stats.pgalloc_zone.clone(), free(&m)),
        (vec![0, 170], (100, 30))
    );
    // Then ZONE_DMA while its free pages exceed low + lowmem_reserve = 15: 85 pages. No zone
    // was below its mark, so kswapd sleeps.
    touch(&mut m, 170..255);
    assert_eq!(
        (m.stats.pgalloc_zone.clone(), free(&m)),
        (vec![85, 170], (15, 30))
    );
    assert!(!m.kswapd_awake());
    // The next allocation finds no zone above low: kswapd is woken and the retry at min
    // takes DMA32 (30 > 20).
    touch(&mut m, 255..256);
    assert!(m.kswapd_awake());
    assert_eq!(
        (m.stats.pgalloc_zone.clone(), free(&m)),
        (vec![85, 171], (15, 29))
    );
    // At min, DMA32 gives 9 more (29..21), then DMA one (15 > min 4 + 10), then nothing is
    // above min: direct reclaim.
    touch(&mut m, 256..265);
    assert_eq!(
        (m.stats.pgalloc_zone.clone(), free(&m)),
        (vec![85, 180], (15, 20))
    );
    touch(&mut m, 265..266);
    assert_eq!(
        (m.stats.pgalloc_zone.clone(), free(&m)),
        (vec![86, 180], (14, 20))
    );
    assert_eq!(m.stats.allocstall, 0);
    touch(&mut m, 266..267);
    assert_eq!(m.stats.allocstall, 1);
    m.validate().unwrap();
}

#[test]
fn kswapd_stops_once_one_zone_is_balanced() {
    let mut m = two_zone_machine();
    touch(&mut m, 0..256);
    assert_eq!(free(&m), (15, 29));
    assert!(m.kswapd_awake());
    // kswapd_shrink_node asks for max(6, 32) + max(40, 32) = 72 pages a pass.
    assert_eq!(m.kswapd_nr_to_reclaim(1), 72);
    // Nothing referenced since the faults: every page can go at its first scan.
    for f in 0..300 {
        if m.mm.frames.in_use(f) {
            m.mm.test_and_clear_young(f);
        }
    }
    while m.kswapd_step() {}
    // pgdat_balanced: DMA32 above its high watermark is enough; ZONE_DMA stays at 15, below
    // its high + reserve (16), and its pages (the 85 youngest) were not reclaimed: the
    // inactive list's tail holds the oldest pages, all in DMA32.
    let (dma, dma32) = free(&m);
    assert_eq!(dma, 15);
    assert!(dma32 > 40, "DMA32 free {dma32}");
    assert_eq!(m.stats.pgsteal_kswapd, (dma32 - 29) as u64);
    assert!(!m.kswapd_awake());
    m.validate().unwrap();
}

#[test]
fn one_zone_config_is_the_single_zone_machine_and_bad_zones_are_named() {
    let p = || ClockLru::new(300);
    let bad = |zones: Vec<ZoneConfig>, wm: Option<Watermarks>| {
        let cfg = MachineConfig {
            zones,
            watermarks: wm,
            ..MachineConfig::new(300)
        };
        Machine::new(&cfg, p()).unwrap_err().to_string()
    };
    let z = |name: &str, frames: u32, wm: Option<[u32; 3]>, r: Option<u32>| ZoneConfig {
        name: name.into(),
        frames,
        watermarks: wm,
        lowmem_reserve: r,
        pagetypes: None,
    };
    assert!(bad(
        vec![z("DMA", 100, None, None), z("DMA32", 100, None, None)],
        None
    )
    .contains("the zones' frames sum to 200, the machine has 300"));
    assert!(bad(
        vec![
            z("DMA", 100, None, None),
            z("DMA32", 200, Some([5, 3, 9]), None)
        ],
        None
    )
    .starts_with("zones[1] (DMA32).watermarks: must satisfy min <= low <= high"));
    assert!(bad(
        vec![z("DMA", 100, None, None), z("DMA32", 200, None, Some(3))],
        None
    )
    .contains("the highest zone keeps no lowmem_reserve"));
    assert!(bad(
        vec![z("DMA", 100, None, None), z("DMA32", 200, None, None)],
        Some(Watermarks {
            min: 1,
            low: 2,
            high: 3
        })
    )
    .starts_with("watermarks: give each zone its watermarks"));
    assert!(bad(
        vec![z("DMA", 0, None, None), z("DMA32", 300, None, None)],
        None
    )
    .starts_with("zones[0] (DMA): a zone needs at least 1 frame"));
    // Derived: 300 frames → min_free_kbytes = int_sqrt(1,200 × 16) = 138 → 34 pages;
    // DMA 34 × 100 / 300 = 11, delta max(2, 0) = 2; DMA32 22, delta 5; reserve 200/256 = 0.
    let cfg = MachineConfig {
        zones: vec![z("DMA", 100, None, None), z("DMA32", 200, None, None)],
        ..MachineConfig::new(300)
    };
    let m = Machine::new(&cfg, p()).unwrap();
    assert_eq!(
        m.zones(),
        &[
            (
                Watermarks {
                    min: 11,
                    low: 13,
                    high: 15
                },
                0
            ),
            (
                Watermarks {
                    min: 22,
                    low: 27,
                    high: 32
                },
                0
            )
        ]
    );
}

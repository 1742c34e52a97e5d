//! Tests of the translation structures. Expected values come from the formula of seed 002 /
//! KERNEL-FACTS ((g+1)(h+1) − 1; 1D = g), from the SDM's flush rules, and from hand
//! computation over small hand-built layouts (worked out in the comments).

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::cache::CacheLevel;
use super::radix::{PTE_G, PTE_W};
use super::set_assoc::asid;
use super::*;

const GIB: u64 = 1 << 30;
/// Guest page tables live at guest-physical 1 GiB onwards, data at 8 GiB onwards.
const GUEST_PT_BASE: u64 = GIB;
const GUEST_DATA: u64 = 8 * GIB;
/// Host maps gPA x to hPA x + 64 GiB; host tables live at 1 TiB onwards.
const HOST_OFFSET: u64 = 64 * GIB;
const HOST_PT_BASE: u64 = 1 << 40;

struct Bump(u64);
impl Bump {
    fn at(addr: u64) -> Self {
        Bump(addr >> 12)
    }
    fn next(&mut self) -> Option<u64> {
        self.0 += 1;
        Some(self.0 - 1)
    }
}

/// A guest table rooted at GUEST_PT_BASE and a host table rooted at HOST_PT_BASE.
struct Vm {
    guest: RadixTable,
    host: RadixTable,
    galloc: Bump,
    halloc: Bump,
    hsize: PageSize,
}

impl Vm {
    fn new(glevels: u8, hlevels: u8, hsize: PageSize) -> Vm {
        let mut galloc = Bump::at(GUEST_PT_BASE);
        let mut halloc = Bump::at(HOST_PT_BASE);
        let groot = galloc.next().unwrap();
        let hroot = halloc.next().unwrap();
        let mut vm = Vm {
            guest: RadixTable::new(glevels, groot).unwrap(),
            host: RadixTable::new(hlevels, hroot).unwrap(),
            galloc,
            halloc,
            hsize,
        };
        vm.cover(groot << 12);
        vm
    }

    /// Makes the host map the `hsize` page holding `gpa` (gPA + HOST_OFFSET), writable.
    fn cover(&mut self, gpa: u64) {
        if self.host.lookup(gpa).is_some() {
            return;
        }
        let base = gpa & !(self.hsize.bytes() - 1);
        let mut a = || self.halloc.next();
        self.host
            .map(base, base + HOST_OFFSET, self.hsize, PTE_W, &mut a)
            .unwrap();
    }

    /// Guest maps `gva` → `gpa` with a `gsize` page; the host covers the new guest tables
    /// and the data page.
    fn map(&mut self, gva: u64, gpa: u64, gsize: PageSize, flags: u64) {
        let before = self.galloc.0;
        let mut a = || self.galloc.next();
        self.guest.map(gva, gpa, gsize, flags, &mut a).unwrap();
        for f in before..self.galloc.0 {
            self.cover(f << 12);
        }
        // Only the first 2 MiB of the guest page are backed (what the tests touch).
        let mut off = 0;
        while off < gsize.bytes().min(2 << 20) {
            self.cover(gpa + off);
            off += self.hsize.bytes();
        }
    }

    fn tables(&mut self) -> Tables<'_> {
        Tables::Tdp {
            guest: &mut self.guest,
            host: &mut self.host,
        }
    }
}

fn off_cfg() -> TranslateConfig {
    TranslateConfig::default().caches_off()
}

/// Levels walked for a leaf of `size` in a table of `levels`: levels − 1 for 2M, − 2 for 1G.
fn walked(levels: u8, size: PageSize) -> u64 {
    (levels - (size.leaf_level() - 1)) as u64
}

#[test]
fn two_d_walk_refs_with_caches_off_are_g1_h1_minus_1() {
    // Anchors quoted in KERNEL-FACTS / the issue (seed 002): 4K/4K 4-level = 24, 2M host =
    // 19, 2M both = 15, 1G both = 8, 5-level 4K/4K = 35, 4-level guest on 5-level host = 29.
    let anchors = [
        (4, 4, PageSize::K4, PageSize::K4, 24),
        (4, 4, PageSize::K4, PageSize::M2, 19),
        (4, 4, PageSize::M2, PageSize::M2, 15),
        (4, 4, PageSize::G1, PageSize::G1, 8),
        (5, 5, PageSize::K4, PageSize::K4, 35),
        (4, 5, PageSize::K4, PageSize::K4, 29),
    ];
    let mut seen = 0;
    for gl in [4u8, 5] {
        for hl in [4u8, 5] {
            for gs in PageSize::ALL {
                for hs in PageSize::ALL {
                    let g = walked(gl, gs);
                    let h = walked(hl, hs);
                    let want = (g + 1) * (h + 1) - 1;
                    if let Some(a) = anchors
                        .iter()
                        .find(|a| (a.0, a.1, a.2, a.3) == (gl, hl, gs, hs))
                    {
                        assert_eq!(want, a.4);
                        seen += 1;
                    }
                    for (cfg, exact) in [(off_cfg(), true), (TranslateConfig::default(), false)] {
                        let mut vm = Vm::new(gl, hl, hs);
                        let mut mmu = Mmu::new(&cfg).unwrap();
                        // Eight pages far apart (different guest PD/PDPT entries): every access
                        // is a TLB miss.
                        let walks = 8u64;
                        for i in 0..walks {
                            let gva = (i * 3 + 1) << 30 | (i * 5) << 21;
                            let gva = gva & !(gs.bytes() - 1);
                            let gpa = GUEST_DATA + i * GIB;
                            vm.map(gva, gpa, gs, PTE_W);
                        }
                        for i in 0..walks {
                            let gva = ((i * 3 + 1) << 30 | (i * 5) << 21) & !(gs.bytes() - 1);
                            let before = mmu.stats().walk_refs;
                            let t = mmu
                                .translate(vm.tables(), gva + 0x123, AccessKind::Read)
                                .unwrap();
                            assert_eq!(t.pa, GUEST_DATA + i * GIB + HOST_OFFSET + 0x123);
                            assert_eq!(t.size, gs.min(hs));
                            let refs = mmu.stats().walk_refs - before;
                            if exact {
                                assert_eq!(refs, want, "{gl}/{hl} levels, {gs:?}/{hs:?}");
                            } else {
                                assert!(refs <= want, "{gl}/{hl} {gs:?}/{hs:?}: {refs} > {want}");
                            }
                        }
                        assert_eq!(mmu.stats().walks, walks);
                        mmu.validate().unwrap();
                        vm.guest.validate().unwrap();
                        vm.host.validate().unwrap();
                    }
                }
            }
        }
    }
    assert_eq!(seen, anchors.len());
}

#[test]
fn native_and_shadow_walks_read_g_entries() {
    for levels in [4u8, 5] {
        for size in PageSize::ALL {
            let g = walked(levels, size);
            let mut alloc = Bump::at(HOST_PT_BASE);
            let root = alloc.next().unwrap();
            let mut pt = RadixTable::new(levels, root).unwrap();
            let mut a = || alloc.next();
            for i in 0..4u64 {
                pt.map(i << 39, (i + 1) * GIB, size, 0, &mut a).unwrap();
            }
            for shadow in [false, true] {
                let mut mmu = Mmu::new(&off_cfg()).unwrap();
                if shadow {
                    mmu.vm_entry(3, 0).unwrap();
                }
                for i in 0..4u64 {
                    let tables = if shadow {
                        Tables::Shadow(&mut pt)
                    } else {
                        Tables::Native(&mut pt)
                    };
                    let t = mmu.translate(tables, (i << 39) + 8, AccessKind::Read);
                    assert_eq!(t.unwrap().pa, (i + 1) * GIB + 8);
                }
                assert_eq!(mmu.stats().walk_refs, 4 * g);
                assert_eq!(mmu.stats().nested_refs, 0);
                mmu.validate().unwrap();
            }
        }
    }
}

#[test]
fn tlb_set_and_way_arithmetic_and_lru_order() {
    // 4 sets × 2 ways of 4K entries: page numbers 0, 4, 8 share set 0 (n % 4); 5 is in set 1.
    let g = TlbGeometry {
        k4: Geometry::new(4, 2),
        m2: Geometry::new(2, 1),
        g1: Geometry::NONE,
    };
    let mut t = Tlb::new(&g, "t").unwrap();
    let a = asid(0, 1);
    let page = |n: u64| n << 12;
    t.insert(page(0), 0x1000, PageSize::K4, a, true, false);
    t.insert(page(4), 0x2000, PageSize::K4, a, true, false);
    t.insert(page(5), 0x3000, PageSize::K4, a, true, false);
    assert_eq!(t.array(PageSize::K4).set_contents(0), vec![(4, a), (0, a)]);
    assert_eq!(t.array(PageSize::K4).set_contents(1), vec![(5, a)]);
    // Touch 0, then fill 8: set 0's least recently used way (page 4) goes.
    assert!(t.lookup(page(0), a).is_some());
    t.insert(page(8), 0x4000, PageSize::K4, a, true, false);
    assert_eq!(t.array(PageSize::K4).set_contents(0), vec![(8, a), (0, a)]);
    assert!(t.lookup(page(4), a).is_none());
    assert_eq!(
        t.lookup(page(8) + 0x10, a)
            .unwrap()
            .translate(page(8) + 0x10),
        0x4010
    );
    // 0x1234 % 4 = 0: set 0 again; evicts 0 (8 was used more recently).
    t.insert(page(0x1234), 0x5000, PageSize::K4, a, true, false);
    assert_eq!(
        t.array(PageSize::K4).set_contents(0),
        vec![(0x1234, a), (8, a)]
    );
    // A 2M page at 6 MiB has 2M-number 3, set 3 % 2 = 1; 4 MiB (number 2) is set 0.
    t.insert(3 << 21, 0x4000_0000, PageSize::M2, a, true, false);
    assert_eq!(t.array(PageSize::M2).set_contents(1), vec![(3, a)]);
    let h = t.lookup((3 << 21) + 0x1_2345, a).unwrap();
    assert_eq!(
        (h.size, h.translate((3 << 21) + 0x1_2345)),
        (PageSize::M2, 0x4001_2345)
    );
    // No 1G array: a 1G page is cached as its 2M piece.
    assert_eq!(
        t.insert(
            GIB + (5 << 21),
            2 * GIB + (5 << 21),
            PageSize::G1,
            a,
            true,
            false
        ),
        Some(PageSize::M2)
    );
    // Other address spaces do not hit.
    assert!(t.lookup(page(8), asid(0, 2)).is_none());
    assert!(t.lookup(page(8), asid(1, 1)).is_none());
    t.validate("t").unwrap();
    // A bad geometry is an error naming its key.
    let bad = TlbGeometry {
        k4: Geometry::new(3, 2),
        ..g
    };
    match Tlb::new(&bad, "translate.l1d").map_err(crate::Error::into_kind) {
        Err(crate::ErrorKind::Config { key, .. }) => assert_eq!(key, "translate.l1d.4k"),
        other => panic!("{other:?}"),
    }
}

/// A native table with a 4K page at 0 and 4 KiB (non-global), a global 4K page at 2 MiB and a
/// 2M page at 1 GiB.
fn native_table() -> RadixTable {
    let mut alloc = Bump::at(HOST_PT_BASE);
    let root = alloc.next().unwrap();
    let mut pt = RadixTable::new(4, root).unwrap();
    let mut a = || alloc.next();
    pt.map(0, 0x10_0000, PageSize::K4, PTE_W, &mut a).unwrap();
    pt.map(0x1000, 0x11_0000, PageSize::K4, PTE_W, &mut a)
        .unwrap();
    pt.map(0x20_0000, 0x12_0000, PageSize::K4, PTE_W | PTE_G, &mut a)
        .unwrap();
    pt.map(GIB, 4 * GIB, PageSize::M2, PTE_W, &mut a).unwrap();
    pt
}

fn level(mmu: &mut Mmu, pt: &mut RadixTable, va: u64) -> TlbLevel {
    mmu.translate(Tables::Native(pt), va, AccessKind::Read)
        .unwrap()
        .level
}

#[test]
fn cr3_load_without_pcid_flushes_non_global_entries() {
    let mut pt = native_table();
    let cfg = TranslateConfig {
        pcid: false,
        ..TranslateConfig::default()
    };
    let mut mmu = Mmu::new(&cfg).unwrap();
    assert_eq!(level(&mut mmu, &mut pt, 0), TlbLevel::Walk);
    assert_eq!(level(&mut mmu, &mut pt, 0x20_0000), TlbLevel::Walk);
    assert_eq!(level(&mut mmu, &mut pt, 0), TlbLevel::L1);
    // PCID off: the PCID is ignored (0) and the no-flush bit does not keep entries.
    mmu.load_cr3(7, true);
    assert_eq!(mmu.context(), (0, 0));
    assert_eq!(
        mmu.stats().entries_flushed,
        2,
        "the 4K entry in L1 and in L2"
    );
    assert_eq!(
        level(&mut mmu, &mut pt, 0x20_0000),
        TlbLevel::L1,
        "global kept"
    );
    assert_eq!(level(&mut mmu, &mut pt, 0), TlbLevel::Walk);
    mmu.validate().unwrap();
}

#[test]
fn cr3_load_with_pcid_flushes_only_that_pcid_unless_bit_63() {
    let mut pt = native_table();
    let mut mmu = Mmu::new(&TranslateConfig::default()).unwrap();
    mmu.load_cr3(1, false);
    assert_eq!(level(&mut mmu, &mut pt, 0), TlbLevel::Walk);
    // Switch to PCID 2 with a flush of PCID 2: PCID 1's entry stays.
    mmu.load_cr3(2, false);
    assert_eq!(mmu.stats().entries_flushed, 0);
    assert_eq!(
        level(&mut mmu, &mut pt, 0),
        TlbLevel::Walk,
        "PCID 2 has none"
    );
    mmu.load_cr3(1, true);
    assert_eq!(
        level(&mut mmu, &mut pt, 0),
        TlbLevel::L1,
        "PCID 1's entry kept"
    );
    mmu.load_cr3(1, false);
    assert_eq!(mmu.stats().entries_flushed, 2);
    assert_eq!(level(&mut mmu, &mut pt, 0), TlbLevel::Walk);
    assert_eq!((mmu.stats().cr3_flushes, mmu.stats().cr3_noflush), (3, 1));
    mmu.validate().unwrap();
}

#[test]
fn invlpg_drops_one_address_of_every_size_globals_included() {
    let mut pt = native_table();
    let mut mmu = Mmu::new(&TranslateConfig::default()).unwrap();
    for va in [0, 0x1000, 0x20_0000, GIB + 0x5000] {
        assert_eq!(level(&mut mmu, &mut pt, va), TlbLevel::Walk);
    }
    // INVLPG of an address inside the 2M page drops that 2M entry (L1 and L2) only.
    mmu.invlpg(GIB + 0x1_0000);
    assert_eq!(mmu.stats().entries_flushed, 2);
    assert_eq!(level(&mut mmu, &mut pt, GIB + 0x5000), TlbLevel::Walk);
    assert_eq!(level(&mut mmu, &mut pt, 0x1000), TlbLevel::L1);
    mmu.invlpg(0x20_0000);
    assert_eq!(
        level(&mut mmu, &mut pt, 0x20_0000),
        TlbLevel::Walk,
        "global dropped"
    );
    assert_eq!(level(&mut mmu, &mut pt, 0), TlbLevel::L1);
    mmu.validate().unwrap();
}

#[test]
fn vm_entry_and_exit_flush_without_vpid_only() {
    for vpid_on in [false, true] {
        let cfg = TranslateConfig {
            vpid: vpid_on,
            ..TranslateConfig::default()
        };
        let mut vm = Vm::new(4, 4, PageSize::K4);
        vm.map(0x40_0000, GUEST_DATA, PageSize::K4, PTE_W);
        let mut host = native_table();
        let mut mmu = Mmu::new(&cfg).unwrap();
        assert_eq!(level(&mut mmu, &mut host, 0), TlbLevel::Walk);
        mmu.vm_entry(5, 0).unwrap();
        let t = mmu.translate(vm.tables(), 0x40_0000, AccessKind::Read);
        assert_eq!(t.unwrap().level, TlbLevel::Walk);
        mmu.vm_exit(0);
        let host_again = level(&mut mmu, &mut host, 0);
        mmu.vm_entry(5, 0).unwrap();
        let t = mmu.translate(vm.tables(), 0x40_0000, AccessKind::Read);
        if vpid_on {
            assert_eq!(host_again, TlbLevel::L1);
            assert_eq!(t.unwrap().level, TlbLevel::L1);
            assert_eq!(mmu.stats().entries_flushed, 0);
        } else {
            assert_eq!(host_again, TlbLevel::Walk);
            assert_eq!(t.unwrap().level, TlbLevel::Walk);
            assert_eq!(
                (mmu.stats().vm_entry_flushes, mmu.stats().vm_exit_flushes),
                (2, 1)
            );
            // The nested TLB (guest-physical mappings) survives: the second guest walk
            // skipped all five nested walks, reading only the 4 guest entries.
            assert_eq!(mmu.stats().ntlb_hits, 5);
        }
        mmu.validate().unwrap();
    }
    let mut mmu = Mmu::new(&TranslateConfig::default()).unwrap();
    assert!(mmu.vm_entry(0, 0).is_err());
}

#[test]
fn flush_vpid_and_nested_flush_their_vm_only() {
    let mut vm = Vm::new(4, 4, PageSize::K4);
    vm.map(0, GUEST_DATA, PageSize::K4, PTE_W);
    let mut mmu = Mmu::new(&TranslateConfig::default()).unwrap();
    for vpid in [1, 2] {
        mmu.vm_entry(vpid, 0).unwrap();
        mmu.translate(vm.tables(), 0, AccessKind::Read).unwrap();
        mmu.vm_exit(0);
    }
    mmu.flush_vpid(1);
    mmu.vm_entry(2, 0).unwrap();
    let t = mmu.translate(vm.tables(), 0, AccessKind::Read).unwrap();
    assert_eq!(t.level, TlbLevel::L1);
    mmu.vm_exit(0);
    mmu.vm_entry(1, 0).unwrap();
    let t = mmu.translate(vm.tables(), 0, AccessKind::Read).unwrap();
    assert_eq!(t.level, TlbLevel::Walk);
    assert_eq!(mmu.ntlb().valid_entries(), 10, "5 gPAs for each of 2 VPIDs");
    mmu.flush_nested(1);
    assert_eq!(mmu.ntlb().valid_entries(), 5);
    mmu.flush_all();
    assert_eq!(mmu.ntlb().valid_entries() + mmu.l2().valid_entries(), 0);
    mmu.validate().unwrap();
}

#[test]
fn splintering_keeps_the_smaller_page() {
    let cases = [
        (PageSize::M2, PageSize::K4, PageSize::K4, 1),
        (PageSize::K4, PageSize::M2, PageSize::K4, 0),
        (PageSize::M2, PageSize::M2, PageSize::M2, 0),
        (PageSize::G1, PageSize::M2, PageSize::M2, 1),
        (PageSize::G1, PageSize::G1, PageSize::G1, 0),
    ];
    for (gs, hs, want, splinters) in cases {
        let mut vm = Vm::new(4, 4, hs);
        vm.map(GIB, GUEST_DATA, gs, PTE_W);
        let mut mmu = Mmu::new(&TranslateConfig::default()).unwrap();
        let t = mmu
            .translate(vm.tables(), GIB + 0x456, AccessKind::Write)
            .unwrap();
        assert_eq!((t.size, t.pa), (want, GUEST_DATA + HOST_OFFSET + 0x456));
        assert_eq!(mmu.stats().splintered, splinters, "{gs:?} on {hs:?}");
        if gs == PageSize::K4 {
            continue;
        }
        // Another address in the guest page, outside the first 4K: a hit only if the TLB
        // entry covers it.
        let t = mmu
            .translate(vm.tables(), GIB + 0x10_0000, AccessKind::Read)
            .unwrap();
        let hit = t.level == TlbLevel::L1;
        assert_eq!(hit, want != PageSize::K4, "{gs:?} on {hs:?}");
    }
}

#[test]
fn faults_name_the_dimension_and_level() {
    let mut mmu = Mmu::new(&off_cfg()).unwrap();
    let mut vm = Vm::new(4, 4, PageSize::K4);
    vm.map(0, GUEST_DATA, PageSize::K4, 0);
    vm.cover(GUEST_DATA + 0x1000); // keeps the host PT of the data page when it is unmapped
                                   // Nothing mapped under PML4 slot 1: the guest root entry is not present. The walk read
                                   // one guest entry after a 4-reference nested walk of the root's gPA: 5 references.
    let f = mmu
        .translate(vm.tables(), 1 << 39, AccessKind::Read)
        .unwrap_err();
    assert_eq!(f.kind, FaultKind::NotPresent { level: 4 });
    assert_eq!(mmu.stats().walk_refs, 5);
    // A write to the read-only guest page: the guest #PF after the 4 guest rows (20 refs).
    let f = mmu
        .translate(vm.tables(), 0, AccessKind::Write)
        .unwrap_err();
    assert_eq!(f.kind, FaultKind::Protection);
    assert_eq!(mmu.stats().walk_refs, 25);
    // The host drops the data page: an EPT violation at the host's level 1 (24 refs).
    let mut freed = |_| {};
    vm.host.unmap(GUEST_DATA, &mut freed).unwrap();
    let f = mmu.translate(vm.tables(), 0, AccessKind::Read).unwrap_err();
    assert_eq!(
        f.kind,
        FaultKind::Nested {
            gpa: GUEST_DATA,
            level: 1
        }
    );
    assert_eq!(mmu.stats().walk_refs, 49);
    // The host maps it read-only: reads work, writes fault in the nested dimension.
    let mut a = || vm.halloc.next();
    vm.host
        .map(
            GUEST_DATA,
            GUEST_DATA + HOST_OFFSET,
            PageSize::K4,
            0,
            &mut a,
        )
        .unwrap();
    vm.guest.set_writable(0, true).unwrap();
    mmu.translate(vm.tables(), 0, AccessKind::Read).unwrap();
    let f = mmu
        .translate(vm.tables(), 0, AccessKind::Write)
        .unwrap_err();
    assert_eq!(f.kind, FaultKind::NestedProtection { gpa: GUEST_DATA });
    let s = mmu.stats();
    assert_eq!(
        (s.faults_not_present, s.faults_protection, s.faults_nested),
        (1, 1, 2)
    );
    mmu.validate().unwrap();
}

#[test]
fn walk_cycles_follow_the_cache_latencies() {
    // Native 4-level, PWC on, caches cold. Walk of 0: PML4E, PDPTE, PDE miss the PWC and
    // every entry is in a different line: 4 memory reads at 200 cycles + the L2 TLB lookup
    // (9) = 809. Walk of 4 KiB: the three upper entries hit the PWC (3 × 2) and the PTE is
    // in the line just read, an L1 hit (5): 9 + 6 + 5 = 20.
    let mut pt = native_table();
    let mut mmu = Mmu::new(&TranslateConfig::default()).unwrap();
    let c = |m: &mut Mmu, pt: &mut RadixTable, va| {
        m.translate(Tables::Native(pt), va, AccessKind::Read)
            .unwrap()
            .cycles
    };
    assert_eq!(c(&mut mmu, &mut pt, 0), 809);
    assert_eq!(c(&mut mmu, &mut pt, 0x1000), 20);
    assert_eq!(c(&mut mmu, &mut pt, 0x1000), 0, "L1 TLB hit");
    let s = mmu.stats();
    assert_eq!(s.refs_served, [1, 0, 0, 4]);
    assert_eq!(s.pwc_hits[2..5], [1, 1, 1]);
    // A cache level config: a one-level hierarchy serves the second PTE read at its latency.
    let cfg = TranslateConfig {
        cache: super::cache::PtCacheConfig {
            levels: vec![CacheLevel {
                sets: 1,
                ways: 2,
                hit_cycles: 3,
            }],
            memory_cycles: 100,
        },
        ..TranslateConfig::default()
    };
    let mut mmu = Mmu::new(&cfg).unwrap();
    assert_eq!(c(&mut mmu, &mut pt, 0), 9 + 400);
    assert_eq!(c(&mut mmu, &mut pt, 0x1000), 9 + 6 + 3);
}

#[test]
fn walk_grid_classifies_cells_as_in_the_talk() {
    // Two 2D walks (4-level, 4K/4K, NTLB off, PWCs large enough to keep everything) of gVA 0
    // and 4 KiB. Layout: guest tables G0..G3 at gPA 1 GiB + k·4K; data at 8 GiB and 8 GiB +
    // 4K; host 4K pages.
    // Walk 1: row gL4 misses nL4, nL3, nL2 (host PML4[0], PDPT[1], PD[0]); rows gL3, gL2, gL1
    // hit those three; every row reads its nL1 (level 1, never cached); guest entries at
    // levels 4, 3, 2 miss, gL1 is level 1; the final row hits nL4 (PML4[0] again), misses
    // PDPT[8] and PD[0] of the 8 GiB region. Refs 5+2+2+2+3 = 14, PWC hits 10.
    // Walk 2: every upper entry hits (gVA 4K shares all guest tables; data 8 GiB + 4K shares
    // the host PD); the 5 nL1 and gL1 are read: 6 refs, 18 hits.
    let big = Geometry::new(1, 64);
    let mut cfg = TranslateConfig::default();
    cfg.ntlb.enabled = false;
    cfg.pwc = super::mmu::PwcConfig {
        enabled: true,
        pml5: big,
        pml4: big,
        pdpt: big,
        pd: big,
        hit_cycles: 2,
    };
    let mut vm = Vm::new(4, 4, PageSize::K4);
    vm.map(0, GUEST_DATA, PageSize::K4, PTE_W);
    vm.map(0x1000, GUEST_DATA + 0x1000, PageSize::K4, PTE_W);
    let mut mmu = Mmu::new(&cfg).unwrap();
    mmu.translate(vm.tables(), 0, AccessKind::Read).unwrap();
    assert_eq!(mmu.stats().walk_refs, 14);
    mmu.translate(vm.tables(), 0x1000, AccessKind::Read)
        .unwrap();
    assert_eq!(mmu.stats().walk_refs, 20);
    assert_eq!(mmu.stats().pwc_hits.iter().sum::<u64>(), 28);
    // Per cell (2 lookups each): hit (2/2) = rows 3, 2, 1 × host levels 4, 3, 2, and the
    // final row's nL4: 10. Miss (0/2) = the nL1 column (5) and gL1's entry: 6. Mixed (1/2):
    // row 4's nL4, nL3, nL2 and guest entry, rows 3 and 2's guest entries, the final row's
    // nL3, nL2: 8, one miss each.
    let b = mmu.grid().classify(0.9, 0.1);
    assert_eq!(
        b,
        WalkBreakdown {
            hit_cells: 10,
            mixed_cells: 8,
            miss_cells: 6,
            hit_cell_misses: 0,
            mixed_cell_misses: 8,
            miss_cell_misses: 12,
        }
    );
    mmu.validate().unwrap();
}

#[test]
fn radix_map_unmap_frees_tables_and_tracks_accessed_bits() {
    let mut alloc = Bump::at(0x1000);
    let root = alloc.next().unwrap();
    let mut pt = RadixTable::new(4, root).unwrap();
    let mut a = || alloc.next();
    pt.map(0x7000_0000, 0x5000, PageSize::K4, PTE_W, &mut a)
        .unwrap();
    assert_eq!(pt.tables(), 4);
    // A 2M page over the PT table that holds the 4K page, and a 4K page under a 2M page, are
    // errors; so is misalignment and an address past 48 bits.
    let mut a = || alloc.next();
    assert!(pt
        .map(0x7000_0000, 0x20_0000, PageSize::M2, 0, &mut a)
        .is_err());
    pt.map(0x8000_0000, 0x40_0000, PageSize::M2, 0, &mut a)
        .unwrap();
    assert!(pt
        .map(0x8000_1000, 0x1000, PageSize::K4, 0, &mut a)
        .is_err());
    assert!(pt.map(0x1000, 0x1001, PageSize::K4, 0, &mut a).is_err());
    assert!(pt.map(1 << 48, 0, PageSize::K4, 0, &mut a).is_err());
    assert!(RadixTable::new(3, 0).is_err());
    assert_eq!(
        pt.lookup(0x8001_2345),
        Some((0x41_2345, PageSize::M2, radix::PTE_P | radix::PTE_PS))
    );
    // Walk sets A; test-and-clear reports and clears it.
    let mut path = WalkPath::default();
    assert!(matches!(
        pt.walk(0x7000_0123, true, &mut path),
        WalkEnd::Leaf {
            base: 0x5000,
            size: PageSize::K4,
            ..
        }
    ));
    // Root at frame 1, then PDPT 2, PD 3, PT 4; indices of 0x7000_0123: PML4 0, PDPT 1,
    // PD 384 (0x380 & 511), PT 0; entries are 8 bytes.
    assert_eq!(path.entries(), &[0x1000, 0x2008, 0x3000 + 384 * 8, 0x4000]);
    let (_, _, bits) = pt.lookup(0x7000_0000).unwrap();
    assert_eq!(
        bits & (radix::PTE_A | radix::PTE_D),
        radix::PTE_A | radix::PTE_D
    );
    assert_eq!(pt.test_and_clear_young(0x7000_0000), Some(true));
    assert_eq!(pt.test_and_clear_young(0x7000_0000), Some(false));
    pt.validate().unwrap();
    // 0x7000_0000 and 0x8000_0000 are in entries 1 and 2 of the same PDPT: unmapping the 4K
    // page frees its PT and PD only.
    let mut freed = Vec::new();
    let mut f = |fr| freed.push(fr);
    assert_eq!(pt.unmap(0x7000_0000, &mut f), Some((0x5000, PageSize::K4)));
    assert_eq!(pt.unmap(0x7000_0000, &mut f), None);
    assert_eq!(freed.len(), 2);
    assert_eq!(pt.tables(), 3);
    pt.validate().unwrap();
    let mut freed2 = 0;
    assert!(pt.unmap(0x8000_0000, &mut |_| freed2 += 1).is_some());
    assert_eq!((freed2, pt.tables()), (2, 1));
    pt.validate().unwrap();
}

/// A pseudo-random mix of accesses, writes, fetches, CR3 switches, INVLPGs and VM
/// entries/exits; returns the stats. Every translation is checked against the page tables.
fn random_run(seed: u64) -> (TranslateStats, WalkGrid) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut vm = Vm::new(4, 4, PageSize::M2);
    let pages = 512u64;
    for i in 0..pages {
        let size = if i % 64 == 0 {
            PageSize::M2
        } else {
            PageSize::K4
        };
        let gva = if size == PageSize::M2 {
            (1 << 32) + i * (2 << 20)
        } else {
            i << 12
        };
        vm.map(gva, GUEST_DATA + i * (2 << 20), size, PTE_W);
    }
    let mut native = native_table();
    let cfg = TranslateConfig {
        l1d: TlbGeometry {
            k4: Geometry::new(4, 2),
            m2: Geometry::new(2, 2),
            g1: Geometry::NONE,
        },
        l2: TlbGeometry {
            k4: Geometry::new(16, 4),
            m2: Geometry::new(4, 2),
            g1: Geometry::new(1, 2),
        },
        ..TranslateConfig::default()
    };
    let mut mmu = Mmu::new(&cfg).unwrap();
    mmu.vm_entry(1, 0).unwrap();
    let mut in_guest = true;
    for step in 0..3000 {
        let r: usize = rng.gen_range(0..100);
        if r < 2 {
            mmu.load_cr3(rng.gen_range(0..4), rng.gen_bool(0.5));
        } else if r < 3 {
            mmu.invlpg(rng.gen_range(0..pages) << 12);
        } else if r < 5 {
            if in_guest {
                mmu.vm_exit(0);
            } else {
                mmu.vm_entry(1, 0).unwrap();
            }
            in_guest = !in_guest;
        } else {
            let i = rng.gen_range(0..pages);
            let kind = [AccessKind::Read, AccessKind::Write, AccessKind::Fetch][r % 3];
            if in_guest {
                let gva = if i % 64 == 0 {
                    (1 << 32) + i * (2 << 20) + rng.gen_range(0..(2 << 20))
                } else {
                    (i << 12) + rng.gen_range(0..4096)
                };
                let t = mmu.translate(vm.tables(), gva, kind).unwrap();
                let (gpa, _, _) = vm.guest.lookup(gva).unwrap();
                let (hpa, _, _) = vm.host.lookup(gpa).unwrap();
                assert_eq!(t.pa, hpa, "step {step}");
            } else {
                let va = [0u64, 0x1000, 0x20_0000, GIB + 0x77][i as usize % 4];
                let t = mmu
                    .translate(Tables::Native(&mut native), va, kind)
                    .unwrap();
                assert_eq!(t.pa, native.lookup(va).unwrap().0, "step {step}");
            }
        }
        if step % 97 == 0 {
            mmu.validate().unwrap();
        }
    }
    mmu.validate().unwrap();
    (mmu.stats().clone(), mmu.grid().clone())
}

#[test]
fn random_sequences_are_correct_and_deterministic() {
    let a = random_run(11);
    let b = random_run(11);
    assert_eq!(a, b);
    let c = random_run(12);
    assert_ne!(a.0, c.0);
    assert!(a.0.walks > 0 && a.0.l1d_hits > 0 && a.0.l2_hits > 0 && a.0.ntlb_hits > 0);
}

#[test]
fn config_round_trips_and_rejects_unknown_keys() {
    let mut cfg = TranslateConfig::default();
    cfg.l2.m2 = Geometry::new(32, 4);
    cfg.vpid = false;
    let text = serde_json::to_string(&cfg).unwrap();
    let back: TranslateConfig = serde_json::from_str(&text).unwrap();
    assert_eq!(back, cfg);
    let partial: TranslateConfig = serde_json::from_str(r#"{"pcid": false}"#).unwrap();
    assert_eq!(
        partial,
        TranslateConfig {
            pcid: false,
            ..TranslateConfig::default()
        }
    );
    let err =
        serde_json::from_str::<TranslateConfig>(r#"{"pwc": {"pdd": {"sets": 1, "ways": 1}}}"#)
            .unwrap_err();
    assert!(err.to_string().contains("pdd"), "{err}");
    let bad = TranslateConfig {
        pwc: super::mmu::PwcConfig {
            pd: Geometry::new(8, 0),
            ..Default::default()
        },
        ..TranslateConfig::default()
    };
    match Mmu::new(&bad).map_err(crate::Error::into_kind) {
        Err(crate::ErrorKind::Config { key, .. }) => assert_eq!(key, "translate.pwc.pd"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn large_page_leaves_are_not_held_by_the_pwc() {
    // A 2M page walked twice (PCID 1, then PCID 2 without a flush, so the TLB misses and the
    // PWC keeps its entries): the second walk hits the PML4E and PDPTE in the PWC and reads
    // the leaf PDE again (SDM 4.10.3.1: PDE caches hold PDEs with PS = 0 only): 3 + 1 refs.
    let mut pt = native_table();
    let mut mmu = Mmu::new(&TranslateConfig::default()).unwrap();
    mmu.load_cr3(1, true);
    assert_eq!(level(&mut mmu, &mut pt, GIB), TlbLevel::Walk);
    mmu.load_cr3(2, true);
    assert_eq!(level(&mut mmu, &mut pt, GIB), TlbLevel::Walk);
    assert_eq!(mmu.stats().walk_refs, 4);
    assert_eq!(mmu.stats().pwc_hits, [0, 0, 0, 1, 1, 0]);
    mmu.validate().unwrap();
}

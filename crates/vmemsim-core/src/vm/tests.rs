//! The VM layer on scripted guests whose counts are worked out by hand.

use super::*;
use crate::error::Result;
use crate::policy::PolicyOptions;
use crate::translate::{PageSize, TranslateConfig};
use crate::workload::{Op, Workload};

fn cfg(paging: Paging, guest_frames: u32, host_frames: u32, tc: TranslateConfig) -> VmConfig {
    // The policies' seed as these tests were written with (1; `VmConfig::new` uses 0).
    let mut c = VmConfig::new(paging, guest_frames, host_frames);
    c.translate = tc;
    c.guest_options = PolicyOptions::new(1);
    c.host_options = PolicyOptions::new(1);
    c
}

/// Each vCPU's whole stream, given at once (also the balloon's tests' workload).
pub(super) struct Script(Vec<Vec<Op>>, Vec<bool>);

impl Script {
    pub(super) fn new(v: Vec<Vec<Op>>) -> Script {
        let n = v.len();
        Script(v, vec![false; n])
    }
}

impl Workload for Script {
    fn name(&self) -> String {
        "script".into()
    }
    fn threads(&self) -> usize {
        self.0.len()
    }
    fn footprint_pages(&self) -> u64 {
        0
    }
    fn next_ops(&mut self, v: usize, buf: &mut Vec<Op>) -> Result<()> {
        if !std::mem::replace(&mut self.1[v], true) {
            buf.extend_from_slice(&self.0[v]);
        }
        Ok(())
    }
}

fn acc(page: u64, write: bool) -> Op {
    Op::Access { page, write }
}

/// Pass 2 of a loop over `pages` pages (more than the TLBs hold, so every access misses
/// them): walks and walk references of that pass alone.
fn second_pass(paging: Paging, pages: u64) -> (u64, u64, RunResult) {
    let c = cfg(
        paging,
        8_192,
        16_384,
        TranslateConfig::default().caches_off(),
    );
    let mut vm = Vm::new(&c, 1).unwrap();
    for p in 0..pages {
        vm.access(0, p * 7, true).unwrap();
    }
    let a = vm.result();
    for p in 0..pages {
        vm.access(0, p * 7, false).unwrap();
    }
    let b = vm.result();
    vm.validate().unwrap();
    (
        b.translate.walks - a.translate.walks,
        b.translate.walk_refs - a.translate.walk_refs,
        b,
    )
}

#[test]
fn a_nested_walk_reads_24_entries_and_a_native_one_4() {
    // 4-level guest and host tables, 4 KiB pages, every translation cache off (TLBs on):
    // (4 + 1)(4 + 1) − 1 = 24 references per TLB miss under TDP, 4 natively (seed 002).
    // 4,096 pages cycled in order miss the 64 + 1,536-entry TLBs every time.
    let (walks, refs, r) = second_pass(Paging::Tdp, 4_096);
    assert_eq!(walks, 4_096);
    assert_eq!(refs, 24 * 4_096);
    // Nothing was reclaimed: no guest or host major faults, and each of the 4,096 data pages
    // plus the guest page-table pages (1 root + 1 PUD + 1 PMD + 4096·7/512 ≈ 56 PT pages)
    // took exactly one EPT violation when first met.
    assert_eq!((r.stats.major_faults, r.host_stats.major_faults), (0, 0));
    let pt = r.pt_pages_peak;
    assert!((3 + 56..=3 + 57).contains(&pt), "{pt}");
    assert_eq!(r.ept_violations, 4_096 + pt);
    // With the walk caches off every one of the 24 cells of the 2D grid (5 rows: guest
    // levels 4..1 and the final gPA; 5 columns: host levels 4..1 and the guest entry itself,
    // less the data access) is a PWC "miss" cell.
    let b = r.walk_breakdown;
    assert_eq!((b.hit_cells, b.mixed_cells, b.miss_cells), (0, 0, 24));
    assert_eq!(
        b.miss_cell_misses,
        r.walk_grid
            .cells
            .iter()
            .flatten()
            .map(|c| c.lookups)
            .sum::<u64>()
    );
    let (walks, refs, r) = second_pass(Paging::Native, 4_096);
    assert_eq!((walks, refs), (4_096, 4 * 4_096));
    assert_eq!(r.ept_violations, 0);
    // Shadow paging walks the shadow table: g = 4 references, as natively (seed 002).
    let (walks, refs, r) = second_pass(Paging::Shadow, 4_096);
    assert_eq!((walks, refs), (4_096, 4 * 4_096));
    assert_eq!(r.ept_violations, 0);
}

#[test]
fn shadow_paging_faults_once_per_page_and_keeps_its_pool_capped() {
    // 4,096 pages written once, then read again, one process, no reclaim. Pass 1: every
    // page's first access is a guest page fault, which exits to KVM to be injected (4,096
    // exits), then finds no shadow leaf: one shadow page fault each, except where the
    // prefetch of up to 7 aligned neighbours (PTE_PREFETCH_NUM) filled it first (here it
    // cannot: the neighbours are not mapped by the guest yet), so 8,192 #PF exits;
    // the guest's own stores into its page tables (one per new leaf, one per new table) trap
    // while the page is shadowed. Pass 2 (all shadow entries in place; KVM's default pool,
    // (8,192 + 96 page-table gfns) / 50 = 165 pages, holds the 8 leaf + 3 upper shadow
    // pages): no exit at all.
    let c = cfg(Paging::Shadow, 8_192, 16_384, TranslateConfig::default());
    let mut vm = Vm::new(&c, 1).unwrap();
    for p in 0..4_096 {
        vm.access(0, p, true).unwrap();
    }
    let a = vm.result();
    assert_eq!(a.exits_pf, 2 * 4_096);
    for p in 0..4_096 {
        vm.access(0, p, false).unwrap();
    }
    let b = vm.result();
    assert_eq!(b.exits_pf, a.exits_pf);
    assert_eq!(b.exits, a.exits);
    let k = vm.kvm().unwrap();
    assert!(k.n_used() <= k.n_max());
    vm.check_mirror().unwrap();
    vm.validate().unwrap();

    // With a pool of 8 shadow pages (fewer than the 8 leaf tables plus roots and upper
    // levels), pages are recycled and pass 2 faults again; the pool never exceeds 8.
    for eviction in [
        crate::kvm::Eviction::Fifo,
        crate::kvm::Eviction::Clock {
            harvest: crate::kvm::Harvest::None,
        },
    ] {
        let mut c = cfg(Paging::Shadow, 8_192, 16_384, TranslateConfig::default());
        c.mmu_pages = Some(8);
        c.eviction = eviction;
        let mut vm = Vm::new(&c, 1).unwrap();
        for pass in 0..2 {
            for p in 0..4_096 {
                vm.access(0, p, pass == 0).unwrap();
            }
        }
        let r = vm.result();
        let ks = r.kvm.as_ref().unwrap();
        assert!(ks.mmu_recycled > 0, "{eviction:?}");
        let k = vm.kvm().unwrap();
        assert!(k.n_used() <= 8);
        vm.check_mirror().unwrap();
        vm.validate().unwrap();
    }
}

#[test]
fn shadow_paging_sees_host_reclaim_through_the_mmu_notifier() {
    // As the TDP test above: the host (300 frames) reclaims guest memory (400 pages); under
    // shadow paging the MMU notifier drops the shadow entries of reclaimed gfns, so pass 2
    // takes shadow page faults for them and host major faults.
    let c = cfg(Paging::Shadow, 512, 300, TranslateConfig::default());
    let mut vm = Vm::new(&c, 1).unwrap();
    for p in 0..400 {
        vm.access(0, p, true).unwrap();
    }
    let a = vm.result();
    for p in 0..400 {
        vm.access(0, p, false).unwrap();
    }
    let b = vm.result();
    assert_eq!(b.stats.faults, a.stats.faults);
    assert!(
        b.exits_pf - a.exits_pf >= 100 / 8,
        "{}",
        b.exits_pf - a.exits_pf
    );
    assert!(b.host_stats.major_faults > a.host_stats.major_faults);
    vm.check_mirror().unwrap();
    vm.validate().unwrap();
}

#[test]
fn guest_reclaim_takes_the_page_out_of_the_hardware_table() {
    // 64 guest frames, one process writes 200 pages, then reads page 0 again: reclaim has
    // swapped page 0 out, so the read is a guest major fault and the process table maps page
    // 0 to the frame the guest gave it now, not the old one (a stale entry would make the
    // walk return the old gfn).
    let c = cfg(Paging::Tdp, 64, 4_096, TranslateConfig::default());
    let mut vm = Vm::new(&c, 1).unwrap();
    for p in 0..200 {
        vm.access(0, p, true).unwrap();
    }
    let before = vm.result().stats.major_faults;
    vm.access(0, 0, false).unwrap();
    let r = vm.result();
    assert_eq!(r.stats.major_faults, before + 1);
    assert!(r.shootdown_pages > 0);
    vm.check_mirror().unwrap();
    vm.validate().unwrap();
}

#[test]
fn host_reclaim_of_guest_memory_is_seen_as_ept_violations() {
    // The guest has 512 frames (its watermarks keep about 50 free, so 400 pages fit); the
    // host gives the VM 300. Two passes over 400 pages: the second finds the guest's pages
    // resident (no guest faults) but the host has reclaimed at least 100 of them (400 pages
    // and the guest's page tables in fewer than 300 frames): each access to one is an EPT
    // violation and a host major fault.
    let c = cfg(Paging::Tdp, 512, 300, TranslateConfig::default());
    let mut vm = Vm::new(&c, 1).unwrap();
    for p in 0..400 {
        vm.access(0, p, true).unwrap();
    }
    let a = vm.result();
    for p in 0..400 {
        vm.access(0, p, false).unwrap();
    }
    let b = vm.result();
    assert_eq!(b.stats.faults, a.stats.faults, "the guest itself has room");
    let violations = b.ept_violations - a.ept_violations;
    assert!(violations >= 100, "{violations}");
    assert!(b.host_stats.major_faults > a.host_stats.major_faults);
    assert!(b.nested_flushes > 0);
    vm.check_mirror().unwrap();
    vm.validate().unwrap();
}

#[test]
fn processes_switch_unmap_and_exit() {
    // vCPU 0: process 0 touches pages 0..40; spawn 1, switch to it, touch 0..10, unmap 0..5
    // (5 ≤ 33 pages: INVLPG each), switch back to 0 (process 0's TLB entries are intact: no
    // flush), then process 1 exits and gives back its frames and page-table pages.
    let mut ops: Vec<Op> = (0..40).map(|p| acc(p, true)).collect();
    ops.push(Op::Spawn { pid: 1 });
    ops.push(Op::Switch { pid: 1 });
    ops.extend((0..10).map(|p| acc(p, true)));
    ops.push(Op::Unmap { start: 0, pages: 5 });
    ops.push(Op::Switch { pid: 0 });
    ops.push(Op::Exit { pid: 1 });
    let c = cfg(Paging::Tdp, 1_024, 4_096, TranslateConfig::default());
    let mut vm = Vm::new(&c, 1).unwrap();
    for &op in &ops {
        vm.op(0, op).unwrap();
    }
    let r = vm.result();
    assert_eq!((r.processes_created, r.processes_exited), (2, 1));
    assert_eq!(r.cr3_loads, 2);
    // Switching to the new process 1 flushes its PCID (a fresh address space); back to 0
    // does not.
    assert_eq!(r.cr3_flushes, 1);
    assert_eq!(r.pages_unmapped, 5);
    assert_eq!(r.shootdown_pages, 5);
    // 40 pages of process 0 remain; process 1's 10 are gone.
    assert_eq!(vm.guest_resident(), 40);
    // Process 1's tables (root, PUD, PMD, PTE page) went back: only process 0's 4 remain.
    assert_eq!(vm.pt_pages_in_use(), 4);
    vm.check_mirror().unwrap();
    vm.validate().unwrap();
    // A process that does not exist is an error naming it.
    let e = vm.op(0, Op::Switch { pid: 7 }).unwrap_err().to_string();
    assert!(e.contains("process 7"), "{e}");
}

#[test]
fn runs_are_deterministic() {
    let mk = || {
        let mut x = 12345u64;
        let ops: Vec<Op> = (0..5_000)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                acc((x >> 33) % 700, x & 1 == 0)
            })
            .collect();
        Script::new(vec![ops.clone(), ops])
    };
    let c = cfg(Paging::Tdp, 400, 300, TranslateConfig::default());
    let a = run(&c, &mut mk()).unwrap();
    let b = run(&c, &mut mk()).unwrap();
    assert_eq!(a, b);
    assert!(a.stats.major_faults > 0 && a.host_stats.major_faults > 0);
}

#[test]
fn sparse_addresses_of_a_real_layout_fold_into_the_guest_manager() {
    // Text near 0x5555_5555_4000, the mmap area and the stack near the top of the 48-bit
    // space: three GiB-regions, each its own slot; the hardware table keeps the real
    // addresses (4 levels walked to each, 3 distinct upper paths).
    let c = cfg(
        Paging::Tdp,
        1_024,
        4_096,
        TranslateConfig::default().caches_off(),
    );
    let mut vm = Vm::new(&c, 1).unwrap();
    let pages = [0x5_5555_5554u64, 0x7_ffff_7fffu64, 0x7_ffff_fffeu64];
    for &p in &pages {
        vm.access(0, p, true).unwrap();
    }
    assert_eq!(vm.guest_resident(), 3);
    vm.check_mirror().unwrap();
    vm.validate().unwrap();
    // Beyond 48 bits: an error naming the page.
    let e = vm.access(0, 1 << 36, false).unwrap_err().to_string();
    assert!(e.contains("48-bit"), "{e}");
}

#[test]
fn every_guest_workload_runs_under_every_paging() {
    // Small instances of the guest workload models, each under native, TDP and shadow
    // paging, with memory pressure in the guest and the host: every run completes with the
    // tables in step, and the same first touches in all three (what the guest program
    // touches does not depend on translation; what its reclaim sees does, through which
    // references miss the TLB).
    let specs = [
        "stress-vm:vcpus=2,bytes=4MiB,rounds=2",
        "redis-like:keys=2000,requests=4000,value_bytes=200",
        "kernbench-like:jobs=6,parallel=2,text_bytes=1MiB,data_bytes=256KiB,heap_bytes=2MiB",
        "lmbench-like:bench=lat_pagefault,size=2MiB,iterations=2",
        "jvm-like:heap_bytes=3MiB,live_bytes=256KiB,alloc_bytes=8MiB,perm_bytes=256KiB,\
         code_bytes=64KiB,jvm_text_bytes=256KiB,stack_bytes=64KiB",
    ];
    for spec in specs {
        let mut guest_faults = Vec::new();
        for paging in [Paging::Native, Paging::Tdp, Paging::Shadow] {
            let mut wl = super::workloads::parse(spec, 3).unwrap();
            let fp = wl.footprint_pages().max(64) as u32;
            let mut c = cfg(
                paging,
                fp * 3 / 4 + 64,
                fp / 2 + 256,
                TranslateConfig::default(),
            );
            c.pt_pages = 2_048;
            let r = run(&c, wl.as_mut()).unwrap_or_else(|e| panic!("{spec} {paging:?}: {e}"));
            assert!(r.translate.accesses > 0, "{spec}");
            guest_faults.push(r.stats.first_touch);
        }
        assert!(
            guest_faults.windows(2).all(|w| w[0] == w[1]),
            "{spec}: {guest_faults:?}"
        );
    }
}

#[test]
fn open_loop_requests_wait_for_their_arrival_and_queue_behind_earlier_ones() {
    // One vCPU: a request arrives at 1,000 ns and computes 500 ns (latency 500); the next
    // arrives at 1,200 ns but the vCPU is busy until 1,500: it starts late and ends at
    // 2,000, latency 800 from its arrival. Idle 1,000 ns, compute 1,000 ns, runtime 2,000.
    let ops = vec![
        Op::Arrive { at_ns: 1_000 },
        Op::RequestBegin { kind: 0 },
        Op::Compute { ns: 500 },
        Op::RequestEnd,
        Op::Arrive { at_ns: 1_200 },
        Op::RequestBegin { kind: 0 },
        Op::Compute { ns: 500 },
        Op::RequestEnd,
    ];
    let c = cfg(Paging::Native, 64, 64, TranslateConfig::default());
    let r = run(&c, &mut Script::new(vec![ops])).unwrap();
    assert_eq!(r.runtime_ns, 2_000);
    assert_eq!((r.time.idle_ns, r.time.compute_ns), (1_000, 1_000));
    let l = &r.latency["all"];
    assert_eq!((l.count, l.min, l.max), (2, 500, 800));
}

#[test]
fn event_costs_add_up() {
    // Ten first touches under TDP with the default costs: ten guest minor faults (1 µs
    // each), each gfn's first host touch a host minor fault (1 µs) and an EPT violation, an
    // exit of 667 ns; the guest page-table pages add their own host faults and exits.
    let ops: Vec<Op> = (0..10).map(|p| acc(p, true)).collect();
    let c = cfg(Paging::Tdp, 1_024, 4_096, TranslateConfig::default());
    let r = run(&c, &mut Script::new(vec![ops])).unwrap();
    assert_eq!(r.stats.minor_faults, 10);
    assert_eq!(r.time.guest_fault_ns, 10 * 1_000);
    assert_eq!(r.time.host_fault_ns, r.host_stats.minor_faults * 1_000);
    assert_eq!(r.time.exit_ns, r.exits * 667);
    assert_eq!(r.exits, r.ept_violations);
    let t = &r.time;
    let sum = t.translation_ns
        + t.guest_fault_ns
        + t.host_fault_ns
        + t.exit_ns
        + t.kvm_ns
        + t.tlb_flush_ns
        + t.reclaim_ns
        + t.compute_ns
        + t.idle_ns;
    assert_eq!(r.runtime_ns, sum);
}

/// TLBs of one entry per page size (L1 and L2): accesses cycling over a few pages of
/// different TLB sets miss every time.
fn tiny_tlbs() -> TranslateConfig {
    use crate::translate::{Geometry, TlbGeometry};
    let one = TlbGeometry {
        k4: Geometry::new(1, 1),
        m2: Geometry::new(1, 1),
        g1: Geometry::new(1, 1),
    };
    let mut tc = TranslateConfig::default().caches_off();
    tc.l1d = one;
    tc.l2 = one;
    tc
}

/// References per TLB miss of pass 2 over pages `0, stride, 2·stride, …` (`n` of them),
/// with the given levels and page sizes, every translation cache off.
fn refs_per_miss(
    paging: Paging,
    levels: (u8, u8),
    sizes: (PageSize, PageSize),
    n: u64,
    stride: u64,
) -> (u64, u64, RunResult) {
    let gunit = sizes.0.bytes() >> 12;
    let hunit = sizes.1.bytes() >> 12;
    // Guest memory for n guest pages (whole large pages), the host for all of it plus the
    // page-table pages (whole host pages).
    // Twice what the pages need: the zone watermarks keep some memory free.
    let g = (2 * (n * stride).div_ceil(gunit) * gunit).max(2 * gunit) as u32;
    let h = (2 * (g as u64 + g as u64 / 256 + 64).div_ceil(hunit) * hunit) as u32;
    let mut c = cfg(paging, g, h, tiny_tlbs());
    c.guest_levels = levels.0;
    c.host_levels = levels.1;
    c.guest_page = sizes.0;
    c.host_page = sizes.1;
    let mut vm = Vm::new(&c, 1).unwrap();
    for p in 0..n {
        vm.access(0, p * stride, true).unwrap();
    }
    let a = vm.result();
    for p in 0..n {
        vm.access(0, p * stride, false).unwrap();
    }
    let b = vm.result();
    vm.check_mirror().unwrap();
    vm.validate().unwrap();
    (
        b.translate.walks - a.translate.walks,
        b.translate.walk_refs - a.translate.walk_refs,
        b,
    )
}

#[test]
fn large_pages_remove_rows_and_columns_of_the_nested_walk() {
    use PageSize::*;
    // (g + 1)(h + 1) − 1 with g, h the levels walked in each dimension (seed 002's talk):
    // 4K/4K 24; a 2 MiB host page removes a column (19), a 2 MiB guest page a row (19),
    // both 15, 1 GiB pages in both 8; 5-level guest tables 29 on 4-level EPT, 35 on
    // 5-level. Four pages 2 MiB apart (or 1 GiB apart for 1 GiB guest pages), each its own
    // TLB entry in a one-entry TLB: every access of pass 2 misses.
    type Case = ((u8, u8), (PageSize, PageSize), u64, u64);
    let cases: [Case; 8] = [
        ((4, 4), (K4, K4), 512, 24),
        ((4, 4), (K4, M2), 512, 19),
        ((4, 4), (M2, K4), 512, 19),
        ((4, 4), (M2, M2), 512, 15),
        ((4, 4), (G1, G1), 1 << 18, 8),
        ((4, 4), (M2, G1), 512, 11),
        ((5, 4), (K4, K4), 512, 29),
        ((5, 5), (K4, K4), 512, 35),
    ];
    for (levels, sizes, stride, want) in cases {
        let n = if sizes.0 == G1 { 2 } else { 4 };
        let (walks, refs, r) = refs_per_miss(Paging::Tdp, levels, sizes, n, stride);
        assert_eq!(walks, n, "{levels:?} {sizes:?}");
        assert_eq!(
            refs,
            want * n,
            "{levels:?} {sizes:?}: {refs} refs in {walks} walks"
        );
        assert_eq!(r.guest_page, Some(sizes.0));
        assert_eq!(r.host_page, Some(sizes.1));
    }
    // Natively a 2 MiB page is a 3-level walk, a 1 GiB page a 2-level one.
    for (size, stride, want) in [(K4, 512, 4), (M2, 512, 3), (G1, 1 << 18, 2)] {
        let n = if size == G1 { 2 } else { 4 };
        let (walks, refs, _) = refs_per_miss(Paging::Native, (4, 4), (size, K4), n, stride);
        assert_eq!((walks, refs), (n, want * n), "{size:?}");
    }
    // Under shadow paging a guest 2 MiB page on 2 MiB host pages is one 2 MiB SPTE: 3
    // references; on 4 KiB host pages KVM splinters it under a direct shadow page: 4.
    for (host, want) in [(M2, 3), (K4, 4)] {
        let (walks, refs, r) = refs_per_miss(Paging::Shadow, (4, 4), (M2, host), 4, 512);
        assert_eq!((walks, refs), (4, want * 4), "{host:?}");
        assert_eq!(r.stats.faults, 4);
    }
}

#[test]
fn a_guest_large_page_on_small_host_pages_is_splintered_in_the_tlb() {
    // One process writes the 512 4 KiB pages of one guest 2 MiB page with the default TLBs.
    // Walks (faulting ones included): the first access walks into the guest's not-present
    // entry (a guest fault, which maps the 2 MiB page and has the host back its first 4 KiB
    // piece), walks again into the host's missing pages of the guest's page tables (root,
    // PUD and PMD tables), and once more to the end.
    // - On 2 MiB host pages the three table pages share one host page: 3 walks, and the TLB
    //   then holds one 2 MiB entry, so the other 511 accesses hit it. EPT violations: the
    //   data's and the tables' 2 MiB pages.
    // - On 4 KiB host pages each table page is its own EPT violation (walks 2 to 4, then 5
    //   succeeds), and the TLB caches 4 KiB pieces: each of the other 511 pieces misses,
    //   walks into an EPT violation and walks again. 5 + 2 × 511 walks; EPT violations 512
    //   for the data plus 3; the guest still takes one fault.
    for (host, walks, ept) in [(PageSize::M2, 3, 2), (PageSize::K4, 5 + 2 * 511, 512 + 3)] {
        let mut c = cfg(Paging::Tdp, 8 * 512, 16 * 512, TranslateConfig::default());
        c.guest_page = PageSize::M2;
        c.host_page = host;
        let mut vm = Vm::new(&c, 1).unwrap();
        for p in 0..512 {
            vm.op(0, acc(p, true)).unwrap();
        }
        let r = vm.result();
        assert_eq!(r.translate.walks, walks, "{host:?}");
        assert_eq!(r.stats.faults, 1, "{host:?}");
        assert_eq!(r.stats.first_touch, 1, "{host:?}");
        assert_eq!(r.ept_violations, ept, "{host:?}");
        vm.check_mirror().unwrap();
        vm.validate().unwrap();
        // The time of the guest's one fault: 1 µs plus clearing 511 more 4 KiB pieces at
        // 300 ns each = 154,300 ns. The host's: two 2 MiB first touches the same, or 515
        // 4 KiB ones at 1 µs.
        assert_eq!(r.time.guest_fault_ns, 1_000 + 511 * 300, "{host:?}");
        let host_ns = match host {
            PageSize::M2 => 2 * (1_000 + 511 * 300),
            _ => (512 + 3) * 1_000,
        };
        assert_eq!(r.time.host_fault_ns, host_ns, "{host:?}");
    }
}

#[test]
fn guest_2m_pages_are_reclaimed_and_swapped_whole() {
    // 8 guest 2 MiB frames, one process writes 12 pieces of 2 MiB, then reads the first
    // again: the guest reclaims whole 2 MiB pages, so the read is a major fault that brings
    // back all 512 pieces (one fault, not 512) and the table maps a 2 MiB page again.
    let mut c = cfg(Paging::Tdp, 8 * 512, 16 * 512, TranslateConfig::default());
    c.guest_page = PageSize::M2;
    c.host_page = PageSize::M2;
    let mut vm = Vm::new(&c, 1).unwrap();
    for p in 0..12 * 512 {
        vm.op(0, acc(p, true)).unwrap();
    }
    let a = vm.result();
    assert_eq!(a.stats.first_touch, 12);
    assert!(a.stats.evictions >= 4, "{}", a.stats.evictions);
    for p in 0..512 {
        vm.op(0, acc(p, false)).unwrap();
    }
    let b = vm.result();
    assert_eq!(b.stats.major_faults - a.stats.major_faults, 1);
    assert_eq!(b.stats.faults - a.stats.faults, 1);
    // A 2 MiB swap-in: 100 µs plus 511 × 1 µs.
    assert_eq!(
        b.time.guest_fault_ns - a.time.guest_fault_ns,
        100_000 + 511 * 1_000
    );
    vm.check_mirror().unwrap();
    vm.validate().unwrap();
}

#[test]
fn a_munmap_of_large_pages_flushes_per_large_page() {
    // Two 2 MiB pages mapped and unmapped (1,024 4 KiB pages, far above the 33-page
    // ceiling, but 2 pages of the mapping's size): two INVLPGs, no full flush.
    let mut c = cfg(Paging::Tdp, 4 * 512, 8 * 512, TranslateConfig::default());
    c.guest_page = PageSize::M2;
    c.host_page = PageSize::M2;
    let mut vm = Vm::new(&c, 1).unwrap();
    for p in 0..1024 {
        vm.access(0, p, true).unwrap();
    }
    vm.op(
        0,
        Op::Unmap {
            start: 0,
            pages: 1024,
        },
    )
    .unwrap();
    let r = vm.result();
    assert_eq!(r.shootdown_pages, 2);
    assert_eq!(r.cr3_flushes, 0);
    assert_eq!(r.pages_unmapped, 2);
    vm.validate().unwrap();
}

#[test]
fn large_page_configurations_that_cannot_work_are_errors() {
    // Guest memory not a whole number of 2 MiB pages.
    let mut c = cfg(Paging::Tdp, 1000, 4096, TranslateConfig::default());
    c.guest_page = PageSize::M2;
    let e = Vm::new(&c, 1).err().unwrap().to_string();
    assert!(e.contains("vm.guest_frames") && e.contains("M2"), "{e}");
    // 1 GiB pages are hugetlbfs: reclaiming one is an error naming the key.
    let g = 2 << 18;
    let mut c = cfg(Paging::Tdp, g, 4 << 18, TranslateConfig::default());
    c.guest_page = PageSize::G1;
    c.host_page = PageSize::G1;
    let mut vm = Vm::new(&c, 1).unwrap();
    let mut err = None;
    for p in 0..6u64 {
        if let Err(e) = vm.access(0, p << 18, true) {
            err = Some(e.to_string());
            break;
        }
    }
    let e = err.expect("three 1 GiB pages do not fit in two");
    assert!(
        e.contains("vm.guest_page") && e.contains("hugetlbfs"),
        "{e}"
    );
}

#[test]
fn kvm_shrinker_scans_as_do_shrink_slab() {
    let mut plan = Vec::new();
    // A 4 GiB guest's default pool, 20,971 shadow pages, at DEF_PRIORITY (12): delta =
    // (20,971 >> 12) · 4 / 20 = 5 · 4 / 20 = 1, and the deferred work counts >> 12: the
    // total stays far below a batch of 128 and below 20,971, so nothing is ever scanned and
    // the deferred work grows by one a call.
    let mut d = 0;
    for i in 1..=1000 {
        d = shrink_slab_plan(20_971, d, 12, 20, 128, &mut plan);
        assert!(plan.is_empty());
        assert_eq!(d, i);
    }
    // At priority 0: delta = 20,971 · 4 / 20 = 4,194 = 32 · 128 + 98: 32 batches, 98 deferred;
    // then 98 + 4,194 = 4,292 = 33 · 128 + 68.
    let d = shrink_slab_plan(20_971, 0, 0, 20, 128, &mut plan);
    assert_eq!((plan.len(), plan[0], d), (32, 128, 98));
    let d = shrink_slab_plan(20_971, d, 0, 20, 128, &mut plan);
    assert_eq!((plan.len(), d), (33, 68));
    // A pool of 100 at priority 0: delta 20 a call, deferred (20, 40, 60, 80) until the
    // total (80 + 20 at the fifth call) reaches all 100 objects: one scan of 100, nothing
    // deferred.
    let mut d = 0;
    for _ in 0..4 {
        d = shrink_slab_plan(100, d, 0, 20, 128, &mut plan);
        assert!(plan.is_empty());
    }
    assert_eq!(d, 80);
    let d = shrink_slab_plan(100, d, 0, 20, 128, &mut plan);
    assert_eq!((plan.as_slice(), d), (&[100u64][..], 0));
    // Nothing to free: nothing scanned, the deferred work kept.
    assert_eq!(shrink_slab_plan(0, 7, 0, 20, 128, &mut plan), 7);
    assert!(plan.is_empty());
}

#[test]
fn vms_on_one_host_share_its_memory_and_see_each_others_reclaim() {
    // Two VMs of 512 guest frames each (plus 512/256 + 64 = 66 page-table pages each, so VM
    // 1's memory is host pages 578..1156) on a host of 700 frames: VM 0 writes 400 pages,
    // then VM 1 writes 400. The host cannot hold 808 pages (data and tables), so VM 1's
    // faults reclaim host pages, the oldest first: all of them VM 0's. VM 0's EPT (or shadow
    // MMU) must lose those entries before VM 0 runs again (an entry to a reclaimed page would
    // let its walks use a frame that now holds VM 1's data: `check_mirror` would fail), and
    // VM 0's second pass takes an EPT violation (a host fault) for every page it lost.
    for paging in [Paging::Tdp, Paging::Shadow] {
        let c = cfg(paging, 512, 700, TranslateConfig::default());
        let host = host_for(&[&c, &c]).unwrap();
        let mut a = Vm::on_host(&c, 1, Some((host.clone(), 0))).unwrap();
        let mut b = Vm::on_host(&c, 1, Some((host.clone(), 1))).unwrap();
        for p in 0..400 {
            a.op(0, acc(p, true)).unwrap();
        }
        let a1 = a.result();
        assert_eq!(a1.host_stats.evictions, 0, "{paging:?}");
        for p in 0..400 {
            b.op(0, acc(p, true)).unwrap();
        }
        let present = |lo: u64, hi: u64| {
            let sh = host.borrow();
            (lo..hi)
                .filter(|&k| sh.machine().mm.pt.pte(k) & crate::mm::PTE_PRESENT != 0)
                .count() as u64
        };
        // Pages host reclaim unmapped from VM 0: freed ones, and ones written to swap and
        // kept in the swap cache while the write was in flight (`Insert::Rotate`); every one
        // a swap entry now.
        let swapped = |lo: u64, hi: u64| {
            let sh = host.borrow();
            (lo..hi)
                .filter(|&k| sh.machine().mm.pt.pte(k) & crate::mm::PTE_SWAP != 0)
                .count() as u64
        };
        let taken = swapped(0, 578);
        assert!(
            taken >= host.borrow().machine().stats.evictions,
            "{paging:?}"
        );
        assert!(taken >= 100, "{paging:?}: {taken}");
        // 400 data pages and 4 page-table pages (root, PUD, PMD, one PTE table) per VM.
        assert_eq!(present(0, 578), 404 - taken, "{paging:?}");
        assert_eq!(present(578, 1156), 404, "{paging:?}");
        a.op(0, Op::Barrier).unwrap();
        a.check_mirror().unwrap();
        for p in 0..400 {
            a.op(0, acc(p, false)).unwrap();
        }
        let a2 = a.result();
        assert!(
            a2.host_stats.faults - a1.host_stats.faults - 404 >= taken,
            "{paging:?}"
        );
        if paging == Paging::Tdp {
            assert!(a2.ept_violations - a1.ept_violations >= taken, "{paging:?}");
        }
        // The guest saw none of it: no new guest faults.
        assert_eq!(a2.stats.faults, a1.stats.faults, "{paging:?}");
        for vm in [&mut a, &mut b] {
            vm.op(0, Op::Barrier).unwrap();
            vm.check_mirror().unwrap();
            vm.validate().unwrap();
        }
    }
}

#[test]
fn vms_with_room_on_the_host_run_as_they_would_alone() {
    // Two workloads in two VMs on a host with room for both: each VM's counts are those of
    // its own run alone, and the merged result sums them.
    let spec = [
        "stress-vm:vcpus=2,bytes=4MiB,rounds=2",
        "kernbench-like:jobs=4,parallel=2",
    ];
    let mut c = cfg(Paging::Tdp, 4_096, 4_096 + 96, TranslateConfig::default());
    let alone: Vec<RunResult> = spec
        .iter()
        .map(|s| {
            let mut w = crate::vm::workloads::parse(s, 7).unwrap();
            run(&c, w.as_mut()).unwrap()
        })
        .collect();
    c.host.frames = 2 * (4_096 + 96);
    let cfgs = [c.clone(), c.clone()];
    let mut wls: Vec<Box<dyn Workload>> = spec
        .iter()
        .map(|s| crate::vm::workloads::parse(s, 7).unwrap())
        .collect();
    let m = run_many(&cfgs, &mut wls).unwrap();
    assert_eq!(m.per_vm.len(), 2);
    for (one, shared) in alone.iter().zip(&m.per_vm) {
        assert_eq!(one.stats, shared.stats);
        assert_eq!(one.translate, shared.translate);
        assert_eq!(one.ept_violations, shared.ept_violations);
        assert_eq!(one.runtime_ns, shared.runtime_ns);
    }
    assert_eq!(
        m.stats.accesses,
        alone[0].stats.accesses + alone[1].stats.accesses
    );
    assert_eq!(
        m.ept_violations,
        alone[0].ept_violations + alone[1].ept_violations
    );
    assert_eq!(m.runtime_ns, alone[0].runtime_ns.max(alone[1].runtime_ns));
    assert_eq!(m.vcpu_ns.len(), 4);
    assert_eq!(
        m.host_stats.first_touch,
        alone[0].host_stats.first_touch + alone[1].host_stats.first_touch
    );
    assert_eq!(
        m.workload,
        format!("{} + {}", alone[0].workload, alone[1].workload)
    );
}

#[test]
fn vms_sharing_a_disk_queue_their_swap_requests_together() {
    // Two VMs, one vCPU each, write 200 pages into 64 guest frames and read them back: the
    // guests swap to a one-channel disk (100 µs per request). On disks of their own a VM's
    // requests wait only behind its own; on one shared disk they wait behind the other VM's
    // too, so the queueing grows. Each VM's guest_device counts its own requests, and the
    // merged result's counts are the disk's.
    let mut ops: Vec<Op> = (0..200).map(|p| acc(p, true)).collect();
    ops.extend((0..200).map(|p| acc(p, false)));
    let mut c = cfg(Paging::Tdp, 64, 4_096, TranslateConfig::default());
    c.guest_swap = Some(
        crate::device::DeviceSpec::parse(
            "ssd:read_latency_us=100,write_latency_us=100,qd=1,submit_us=0",
        )
        .unwrap(),
    );
    let run_two = |c: &VmConfig| {
        let mut wls: Vec<Box<dyn Workload>> = (0..2)
            .map(|_| -> Box<dyn Workload> { Box::new(Script::new(vec![ops.clone()])) })
            .collect();
        run_many(&[c.clone(), c.clone()], &mut wls).unwrap()
    };
    let apart = run_two(&c);
    c.shared_disk = true;
    let shared = run_two(&c);
    let delay = |r: &RunResult| r.device_stats.as_ref().unwrap().queue_delay_total_ns;
    for r in [&apart, &shared] {
        let mut sum = r.per_vm[0].device_stats.clone().unwrap();
        sum.add(r.per_vm[1].device_stats.as_ref().unwrap());
        assert_eq!(Some(sum), r.device_stats);
        assert!(r.stats.pswpin > 0);
    }
    assert!(
        delay(&shared) > delay(&apart),
        "{} {}",
        delay(&shared),
        delay(&apart)
    );
    // zram is memory of each guest; native paging has no host; a disk needs a device.
    let bad = |c: &VmConfig| {
        let mut wls: Vec<Box<dyn Workload>> = vec![Box::new(Script::new(vec![vec![acc(0, true)]]))];
        run_many(std::slice::from_ref(c), &mut wls)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let mut z = c.clone();
    z.guest_swap = Some(crate::device::DeviceSpec::parse("zram").unwrap());
    assert!(
        bad(&z).starts_with("vm.shared_disk: zram is memory"),
        "{}",
        bad(&z)
    );
    let mut n = c.clone();
    n.paging = Paging::Native;
    assert!(
        bad(&n).starts_with("vm.shared_disk: needs a host"),
        "{}",
        bad(&n)
    );
    let mut none = c.clone();
    none.guest_swap = None;
    assert!(
        bad(&none).starts_with("vm.shared_disk: needs a guest swap"),
        "{}",
        bad(&none)
    );
}

#[test]
fn a_timed_host_swap_device_makes_the_faulting_access_wait_for_its_read() {
    // The host (300 frames, no swap readahead) swaps guest memory to a device with a 100 µs
    // read latency, 4,096 MB/s (1 µs per 4 KiB page), no submission cost and room for 1,024
    // requests (so the write-backs never delay the read). After 400 pages written, page 0
    // is swapped out on the host; reading it again is one host major fault: its CPU work
    // (`major_fault_ns`, 3 µs) plus the read, 100 µs + 1 µs, waited for by the vCPU.
    let mut c = cfg(Paging::Tdp, 512, 300, TranslateConfig::default());
    c.host.page_cluster = Some(0);
    c.host_swap = Some(
        crate::device::DeviceSpec::parse(
            "nvme:read_latency_us=100,write_latency_us=5,bw_mbps=4096,qd=1024,submit_us=0",
        )
        .unwrap(),
    );
    let mut vm = Vm::new(&c, 1).unwrap();
    for p in 0..400 {
        vm.op(0, acc(p, true)).unwrap();
    }
    let a = vm.result();
    assert!(a.host_stats.pswpout > 0);
    vm.op(0, acc(0, false)).unwrap();
    let b = vm.result();
    assert_eq!(b.host_stats.major_faults - a.host_stats.major_faults, 1);
    assert_eq!(b.host_stats.minor_faults - a.host_stats.minor_faults, 0);
    assert_eq!(
        b.time.host_fault_ns - a.time.host_fault_ns,
        3_000 + 100_000 + 1_000
    );
    let d = b.host_device_stats.unwrap();
    assert_eq!(d.pages_written, b.host_stats.pswpout);
    assert_eq!(d.pages_read, b.host_stats.pswpin);
    // The same run with the flat cost instead: 100 µs per major fault.
    c.host_swap = None;
    let mut vm = Vm::new(&c, 1).unwrap();
    for p in 0..400 {
        vm.op(0, acc(p, true)).unwrap();
    }
    let a = vm.result();
    vm.op(0, acc(0, false)).unwrap();
    let b = vm.result();
    assert_eq!(b.time.host_fault_ns - a.time.host_fault_ns, 100_000);
    assert!(b.host_device_stats.is_none());
}

#[test]
fn the_guests_reclaim_costs_its_vcpus_and_the_hosts_kswapd_does_not() {
    // 64 guest frames, 200 pages written: the guest reclaims (its kswapd, on its vCPU):
    // 300 ns per page scanned, 2 µs per page unmapped and written. The host (plenty of
    // memory) does not.
    let ops: Vec<Op> = (0..200).map(|p| acc(p, true)).collect();
    let c = cfg(Paging::Tdp, 64, 4_096, TranslateConfig::default());
    let r = run(&c, &mut Script::new(vec![ops])).unwrap();
    let g = &r.stats;
    let (scanned, stolen) = (
        g.pgscan_kswapd + g.pgscan_direct,
        g.pgsteal_kswapd + g.pgsteal_direct,
    );
    assert!(stolen >= 200 - 64, "{stolen}");
    assert_eq!(r.host_stats.pgscan_kswapd + r.host_stats.pgscan_direct, 0);
    // Every page is written once (none has a swap copy yet) and pays the 2 µs at its write,
    // those its write still held past their pass too; freed later, clean and unmapped, they
    // pay only their scan.
    assert_eq!(g.reclaim_work_kswapd + g.reclaim_work_direct, g.pswpout);
    assert!(g.pswpout >= stolen);
    assert_eq!(r.time.reclaim_ns, scanned * 300 + g.pswpout * 2_000);
    // Host pressure with kswapd keeping up costs the vCPUs nothing: kswapd, on a CPU of its
    // own, reclaims a page in at most 2.3 µs of scanning and reclaiming (at most a few
    // pages scanned per page reclaimed here) while the vCPU computes 50 µs between writes.
    let ops: Vec<Op> = (0..400)
        .flat_map(|p| [acc(p, true), Op::Compute { ns: 50_000 }])
        .collect();
    let c = cfg(Paging::Tdp, 512, 300, TranslateConfig::default());
    let r = run(&c, &mut Script::new(vec![ops])).unwrap();
    assert!(r.host_stats.pgsteal_kswapd > 0 && r.host_stats.pgscan_direct == 0);
    assert_eq!(r.time.reclaim_ns, 0);
    // Without the compute the vCPU takes a new host page every ~2.8 µs (guest and host
    // minor faults of 1 µs, an EPT-violation exit of 667 ns, the access's 100 ns), faster
    // than kswapd reclaims one (2 µs plus 300 ns per page scanned): kswapd falls behind and
    // the vCPU's allocations reclaim directly, on the vCPU's time.
    let ops: Vec<Op> = (0..400).map(|p| acc(p, true)).collect();
    let r = run(&c, &mut Script::new(vec![ops])).unwrap();
    let h = &r.host_stats;
    assert!(h.pgsteal_kswapd > 0 && h.pgscan_direct > 0, "{h:?}");
    assert_eq!(
        r.time.reclaim_ns,
        h.pgscan_direct * 300 + h.reclaim_work_direct * 2_000
    );
}

#[test]
fn an_mglru_guests_aging_costs_its_vcpus() {
    // As above with MG-LRU in the guest: its reclaim also walks page tables and looks
    // around, at 5 ns per PTE, 20 ns per PMD entry and 5 ns per look-around PTE, the timing
    // engine's costs; all of it runs on the vCPU.
    let mut c = cfg(Paging::Tdp, 64, 4_096, TranslateConfig::default());
    c.guest_policy = crate::policy::PolicyKind::from_name("mglru").unwrap();
    let mut vm = Vm::new(&c, 1).unwrap();
    for p in 0..300 {
        vm.op(0, acc(p, true)).unwrap();
    }
    for p in (0..300).rev() {
        vm.op(0, acc(p, false)).unwrap();
    }
    let r = vm.result();
    let g = &r.stats;
    let (scanned, stolen) = (
        g.pgscan_kswapd + g.pgscan_direct,
        g.pgsteal_kswapd + g.pgsteal_direct,
    );
    let w = vm.guest_scan_work();
    assert!(w.walk_ptes + w.lookaround_ptes > 0, "{w:?}");
    assert_eq!(
        r.time.reclaim_ns,
        scanned * 300 + stolen * 2_000 + w.walk_ptes * 5 + w.walk_pmds * 20 + w.lookaround_ptes * 5
    );
}

fn compute(ms: u32) -> Op {
    Op::Compute { ns: ms * 1_000_000 }
}

#[test]
fn vcpus_share_host_cpus_in_slices_and_wait_as_steal_time() {
    // Two VMs of one vCPU each, ten 1 ms computations each, on one host CPU with a 3 ms
    // slice: VM 0 runs 0-3, 6-9, 12-15, 18-19 ms, VM 1 3-6, 9-12, 15-18, 19-20 ms (the
    // least CPU time first, ties to the first VM). VM 0 ends at 19 ms after 9 ms of steal
    // time, VM 1 at 20 ms after 10 ms. On two CPUs each runs alone: 10 ms, no steal.
    let mut c = cfg(Paging::Tdp, 64, 256, TranslateConfig::default());
    c.costs.context_switch_ns = 0; // switches aside
    let cfgs = [c.clone(), c.clone()];
    let wl = || -> Vec<Box<dyn Workload>> {
        (0..2)
            .map(|_| Box::new(Script::new(vec![vec![compute(1); 10]])) as Box<dyn Workload>)
            .collect()
    };
    let one = HostCpus {
        cpus: 1,
        slice_ns: Some(3_000_000),
    };
    let r = run_many_with(&cfgs, &mut wl(), Some(one)).unwrap();
    let ends: Vec<u64> = r.per_vm.iter().map(|v| v.runtime_ns).collect();
    let steal: Vec<u64> = r.per_vm.iter().map(|v| v.time.steal_ns).collect();
    assert_eq!(ends, [19_000_000, 20_000_000]);
    assert_eq!(steal, [9_000_000, 10_000_000]);
    assert_eq!(r.runtime_ns, 20_000_000);
    let two = HostCpus {
        cpus: 2,
        slice_ns: Some(3_000_000),
    };
    let r = run_many_with(&cfgs, &mut wl(), Some(two)).unwrap();
    assert_eq!(r.runtime_ns, 10_000_000);
    assert_eq!(r.time.steal_ns, 0);
}

#[test]
fn an_idle_vcpu_gives_its_cpu_back_and_preempts_when_its_request_arrives() {
    // VM 0's request arrives at 5 ms and takes 1 ms of CPU; VM 1 computes ten 1 ms steps.
    // One CPU, 3 ms slices: VM 0 idles at once (the CPU goes to VM 1: 0-3 ms, then a slice
    // from 3 ms), and its arrival at 5 ms preempts VM 1 (no CPU time so far against VM 1's
    // 5 ms): the request runs 5-6 ms, latency 1 ms, no steal; VM 1 waits 5-6 ms and ends at
    // 11 ms.
    let mut c = cfg(Paging::Tdp, 64, 256, TranslateConfig::default());
    c.costs.context_switch_ns = 0; // switches aside
    let cfgs = [c.clone(), c.clone()];
    let req = vec![
        Op::Arrive { at_ns: 5_000_000 },
        Op::RequestBegin { kind: 0 },
        compute(1),
        Op::RequestEnd,
    ];
    let mut wls: Vec<Box<dyn Workload>> = vec![
        Box::new(Script::new(vec![req])),
        Box::new(Script::new(vec![vec![compute(1); 10]])),
    ];
    let hc = HostCpus {
        cpus: 1,
        slice_ns: Some(3_000_000),
    };
    let r = run_many_with(&cfgs, &mut wls, Some(hc)).unwrap();
    let (a, b) = (&r.per_vm[0], &r.per_vm[1]);
    assert_eq!(a.runtime_ns, 6_000_000);
    assert_eq!(a.time.idle_ns, 5_000_000);
    assert_eq!(a.time.steal_ns, 0);
    let l = &a.latency["all"];
    assert_eq!((l.count, l.max), (1, 1_000_000));
    assert_eq!(b.runtime_ns, 11_000_000);
    assert_eq!(b.time.steal_ns, 1_000_000);
}

/// One single-vCPU VM running `ops` on `cpus` host CPUs with 3 ms slices.
fn one_vcpu_on_host_cpus(c: &VmConfig, ops: &[Op], cpus: u32) -> RunResult {
    let mut wls: Vec<Box<dyn Workload>> = vec![Box::new(Script::new(vec![ops.to_vec()]))];
    let hc = HostCpus {
        cpus,
        slice_ns: Some(3_000_000),
    };
    run_many_with(std::slice::from_ref(c), &mut wls, Some(hc)).unwrap()
}

#[test]
fn the_hosts_kswapd_takes_cpu_time_from_the_vcpus_it_shares_a_cpu_with() {
    // One vCPU writes 400 pages (the host, 300 frames, reclaims with kswapd, a thread of the
    // engine woken at the low watermark), then computes for 100 ms in 1 ms steps, on one
    // host CPU with 3 ms slices. kswapd's CPU time is its passes' work (300 ns per page
    // scanned, 2 µs per page unmapped and written or freed: `reclaim_work_*`); on one CPU,
    // where the vCPU never halts (flat fault costs, no device), the vCPU waits (steal)
    // exactly that long and the run is the vCPU's own time plus kswapd's. On two CPUs
    // kswapd runs beside the vCPU: no steal, and the run is the vCPU's own time (kswapd's
    // timing now differs, so the counters may too).
    let mut ops: Vec<Op> = (0..400).map(|p| acc(p, true)).collect();
    ops.extend(std::iter::repeat_n(compute(1), 100));
    let mut c = cfg(Paging::Tdp, 512, 300, TranslateConfig::default());
    c.costs.context_switch_ns = 0; // switches aside
    let run_on = |cpus| one_vcpu_on_host_cpus(&c, &ops, cpus);
    let r = run_on(1);
    let want = r.host_stats.pgscan_kswapd * 300 + r.host_stats.reclaim_work_kswapd * 2_000;
    assert!(r.host_stats.pgsteal_kswapd > 0);
    assert_eq!(r.host_kswapd_ns, want);
    assert_eq!(r.time.steal_ns, want);
    let own = |r: &RunResult| {
        let t = &r.time;
        t.translation_ns
            + t.guest_fault_ns
            + t.host_fault_ns
            + t.exit_ns
            + t.reclaim_ns
            + t.compute_ns
    };
    assert_eq!(r.runtime_ns, own(&r) + want);
    let r2 = run_on(2);
    assert!(r2.host_stats.pgsteal_kswapd > 0);
    assert_eq!(
        r2.host_kswapd_ns,
        r2.host_stats.pgscan_kswapd * 300 + r2.host_stats.reclaim_work_kswapd * 2_000
    );
    assert_eq!(r2.time.steal_ns, 0);
    assert_eq!(r2.runtime_ns, own(&r2));
}

#[test]
fn the_guests_kswapd_and_the_hosts_compete_with_the_vcpu_for_one_host_cpu() {
    // One vCPU writes 600 pages into a guest of 400 frames (its kswapd, a thread on the
    // vCPU, reclaims) backed by a host of 300 frames (whose kswapd reclaims too), then
    // computes for 100 ms. Every cost is zero but compute and reclaim's: 300 ns per page
    // scanned, 2 µs per page unmapped and written or freed (`reclaim_work_*`). On one host
    // CPU the three share it and nothing ever idles, so the run takes exactly the compute,
    // the guest's reclaim (its kswapd's and its direct reclaim, on the vCPU), the host's
    // direct reclaim (on the vCPU) and the host kswapd's reclaim, and the vCPU waits
    // (steal) exactly the host kswapd's time. On two host CPUs the host's kswapd runs
    // beside the vCPU: no steal, and the run takes the compute and the reclaim on the vCPU
    // alone (the host kswapd's timing differs, so the counters may too).
    // The guest's watermarks (400 frames: min_free_kbytes = int_sqrt(1,600 · 16) = 160, so
    // min 40, low 50, high 60) leave high − min = 20 < SWAP_CLUSTER_MAX: a direct reclaim,
    // one `do_try_to_free_pages` that goes on down the priorities until it has reclaimed 32,
    // lifts free memory from ≤ 40 to ≥ 72 > high. The guest's kswapd, woken at 50 by an
    // earlier allocation of the same step, then finds the guest balanced when it runs
    // (`balance_pgdat` → `pgdat_balanced`): no pass, no work, and with these costs no time,
    // so its time is still exactly its passes' work.
    let mut ops: Vec<Op> = (0..600).map(|p| acc(p, true)).collect();
    ops.extend(std::iter::repeat_n(compute(1), 100));
    let mut c = cfg(Paging::Tdp, 400, 300, TranslateConfig::default());
    c.costs = Costs {
        cpu_ghz: 1e12,
        access_ns: 0,
        minor_fault_ns: 0,
        guest_major_fault_ns: 0,
        host_minor_fault_ns: 0,
        host_major_fault_ns: 0,
        exit_ns: 0,
        kvm_work_ns: [0.0; crate::kvm::WORK_KINDS],
        invlpg_ns: 0,
        cr3_ns: 0,
        clear_page_ns: 0,
        swap_page_ns: 0,
        context_switch_ns: 0,
        ..Costs::default()
    };
    let run_on = |cpus| one_vcpu_on_host_cpus(&c, &ops, cpus);
    let r = run_on(1);
    let (g, h) = (&r.stats, &r.host_stats);
    let guest_kswapd = g.pgscan_kswapd * 300 + g.reclaim_work_kswapd * 2_000;
    let guest_direct = g.pgscan_direct * 300 + g.reclaim_work_direct * 2_000;
    let host_kswapd = h.pgscan_kswapd * 300 + h.reclaim_work_kswapd * 2_000;
    let host_direct = h.pgscan_direct * 300 + h.reclaim_work_direct * 2_000;
    assert!(g.pgsteal_kswapd > 0 && h.pgsteal_kswapd > 0, "{g:?} {h:?}");
    assert!(
        g.allocstall > 0 && g.pgsteal_direct >= 32 * g.allocstall,
        "{g:?}"
    );
    assert_eq!(r.guest_kswapd_ns, guest_kswapd);
    assert_eq!(r.host_kswapd_ns, host_kswapd);
    assert_eq!(r.time.reclaim_ns, guest_kswapd + guest_direct + host_direct);
    assert_eq!(r.time.steal_ns, host_kswapd);
    assert_eq!(
        r.runtime_ns,
        100_000_000 + guest_kswapd + guest_direct + host_direct + host_kswapd
    );
    let r2 = run_on(2);
    let (g, h) = (&r2.stats, &r2.host_stats);
    let guest = (g.pgscan_kswapd + g.pgscan_direct) * 300
        + (g.reclaim_work_kswapd + g.reclaim_work_direct) * 2_000;
    let host_direct = h.pgscan_direct * 300 + h.reclaim_work_direct * 2_000;
    assert_eq!(
        r2.host_kswapd_ns,
        h.pgscan_kswapd * 300 + h.reclaim_work_kswapd * 2_000
    );
    assert_eq!(r2.time.steal_ns, 0);
    assert_eq!(r2.runtime_ns, 100_000_000 + guest + host_direct);
}

#[test]
fn a_vcpu_waking_after_a_long_sleep_keeps_only_two_slices_of_credit() {
    // VM 0 sleeps until a request at 20 ms that takes ten 1 ms steps; VM 1 computes thirty
    // 1 ms steps. One CPU, 3 ms slices. VM 1 runs 0-20 ms (its last slice cut at 20 ms by
    // VM 0's wake-up). VM 0 rejoins with 20 − 2·3 = 14 ms of CPU time, not 0, so it runs
    // 20-23 and 23-26 (17, 20 ms), wins the tie at 26-29 (23 ms), then VM 1 runs 29-32 and
    // VM 0 finishes 32-33: latency 13 ms (10 ms if it kept all its credit). VM 1 waits 9 + 1
    // ms and ends at 40 ms.
    let mut c = cfg(Paging::Tdp, 64, 256, TranslateConfig::default());
    c.costs.context_switch_ns = 0; // switches aside
    let cfgs = [c.clone(), c.clone()];
    let mut req = vec![
        Op::Arrive { at_ns: 20_000_000 },
        Op::RequestBegin { kind: 0 },
    ];
    req.extend(std::iter::repeat_n(compute(1), 10));
    req.push(Op::RequestEnd);
    let mut wls: Vec<Box<dyn Workload>> = vec![
        Box::new(Script::new(vec![req])),
        Box::new(Script::new(vec![vec![compute(1); 30]])),
    ];
    let hc = HostCpus {
        cpus: 1,
        slice_ns: Some(3_000_000),
    };
    let r = run_many_with(&cfgs, &mut wls, Some(hc)).unwrap();
    let (a, b) = (&r.per_vm[0], &r.per_vm[1]);
    assert_eq!(a.latency["all"].max, 13_000_000);
    assert_eq!(a.runtime_ns, 33_000_000);
    assert_eq!(b.runtime_ns, 40_000_000);
    assert_eq!(b.time.steal_ns, 10_000_000);
}

#[test]
fn a_shadow_pool_too_small_for_the_roots_is_an_error_naming_mmu_pages() {
    // Three vCPUs switching among three processes keep up to 1 + 3 cached roots each, more
    // than a pool of 9 shadow pages can hold besides the levels below: KVM's -ENOSPC.
    let mut c = cfg(Paging::Shadow, 4_096, 8_192, TranslateConfig::default());
    c.mmu_pages = Some(9);
    c.pt_pages = 1_000;
    let mut streams = Vec::new();
    for v in 0..3u32 {
        let mut s = Vec::new();
        for p in 1..=3u32 {
            let pid = v * 3 + p;
            s.push(Op::Spawn { pid });
            s.push(Op::Switch { pid });
            for page in 0..64 {
                s.push(acc(page * 512, true));
            }
        }
        streams.push(s);
    }
    let e = run(&c, &mut Script::new(streams))
        .err()
        .map(|e| e.to_string());
    let e = e.expect("a pool of 9 cannot serve three vCPUs' roots");
    assert!(e.contains("vm.mmu_pages") && e.contains("all roots"), "{e}");
}

#[test]
fn a_reclaim_batch_flushes_the_tlbs_of_a_process_running_on_other_cpus() {
    // Native, 64 frames, one process writing 200 pages: reclaim unmaps pages of it.
    // Alone on its CPU, each unmapped page is flushed where it is (`ptep_clear_flush`:
    // INVLPG), once per page reclaimed.
    let c = cfg(Paging::Native, 64, 0, TranslateConfig::default());
    let mut vm = Vm::new(&c, 1).unwrap();
    for p in 0..200 {
        vm.op(0, acc(p, true)).unwrap();
    }
    let r = vm.result();
    assert!(r.stats.evictions > 0);
    assert_eq!(r.shootdown_pages, r.stats.evictions);
    assert_eq!(r.reclaim_flushes, 0);
    // The same process also runs on a second CPU, which has page 500 in its TLB: the flush
    // is deferred to the batch's end and is a full flush of the process's entries on both
    // CPUs (`arch_tlbbatch_flush`), so no page is INVLPG'd, flushes come in pairs, and the
    // second CPU's next access to page 500 walks the table again.
    let mut vm = Vm::new(&c, 2).unwrap();
    vm.op(1, acc(500, false)).unwrap();
    let walks = vm.result().translate.walks;
    vm.op(1, acc(500, false)).unwrap();
    assert_eq!(vm.result().translate.walks, walks, "a TLB hit");
    for p in 0..200 {
        vm.op(0, acc(p, true)).unwrap();
    }
    let r = vm.result();
    assert!(r.stats.evictions > 0);
    assert_eq!(r.shootdown_pages, 0);
    assert!(
        r.reclaim_flushes > 0 && r.reclaim_flushes.is_multiple_of(2),
        "{}",
        r.reclaim_flushes
    );
    let walks = r.translate.walks;
    vm.op(1, acc(500, false)).unwrap();
    assert!(vm.result().translate.walks > walks);
    vm.validate().unwrap();
}

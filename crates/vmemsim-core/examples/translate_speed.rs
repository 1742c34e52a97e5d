//! Throughput of address translation (`vmemsim_core::translate`): simulated accesses per
//! CPU-second for a TLB-hit-dominated and a TLB-hostile access stream, under native, shadow
//! and nested (TDP) translation, with 4K and 2M host pages for TDP. Timed in this thread's CPU
//! time (/proc/thread-self/schedstat) so other load on a shared machine matters less.
//! Run: `cargo run --release -p vmemsim-core --example translate_speed [accesses [filter]]`
//! (`filter`: run only the lines whose label contains it, e.g. `tdp-K4-hostile`).
use vmemsim_core::translate::radix::PTE_W;
use vmemsim_core::translate::{
    AccessKind, Mmu, PageSize, RadixTable, Tables, TranslateConfig, Translation,
};

fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

const GIB: u64 = 1 << 30;
/// Guest-virtual region: 1 GiB of 4K pages (262,144 pages).
const REGION: u64 = GIB;
const GUEST_PT: u64 = GIB; // guest page tables at gPA 1 GiB
const GUEST_DATA: u64 = 8 * GIB; // guest data at gPA 8 GiB
const HOST_OFFSET: u64 = 64 * GIB; // gPA x -> hPA x + 64 GiB
const HOST_PT: u64 = 1 << 40; // host / shadow / native tables at hPA 1 TiB

struct Setup {
    guest: RadixTable,
    host: RadixTable,
    /// gVA -> hPA composed: the shadow table of the guest (and the native table).
    shadow: RadixTable,
}

fn build(host_size: PageSize) -> Setup {
    let mut g = GUEST_PT >> 12;
    let mut h = HOST_PT >> 12;
    let mut s = (HOST_PT >> 12) + (1 << 20);
    let mut guest = RadixTable::new(4, g).unwrap();
    g += 1;
    let mut host = RadixTable::new(4, h).unwrap();
    h += 1;
    let mut shadow = RadixTable::new(4, s).unwrap();
    s += 1;
    let mut ga = || {
        g += 1;
        Some(g - 1)
    };
    for va in (0..REGION).step_by(4096) {
        guest
            .map(va, GUEST_DATA + va, PageSize::K4, PTE_W, &mut ga)
            .unwrap();
    }
    let mut ha = || {
        h += 1;
        Some(h - 1)
    };
    // The host backs the guest's tables and data.
    let pt_end = g << 12;
    for (lo, hi) in [(GUEST_PT, pt_end), (GUEST_DATA, GUEST_DATA + REGION)] {
        let mut a = lo & !(host_size.bytes() - 1);
        while a < hi {
            host.map(a, a + HOST_OFFSET, host_size, PTE_W, &mut ha)
                .unwrap();
            a += host_size.bytes();
        }
    }
    let mut sa = || {
        s += 1;
        Some(s - 1)
    };
    for va in (0..REGION).step_by(4096) {
        shadow
            .map(
                va,
                GUEST_DATA + va + HOST_OFFSET,
                PageSize::K4,
                PTE_W,
                &mut sa,
            )
            .unwrap();
    }
    Setup {
        guest,
        host,
        shadow,
    }
}

/// Addresses: `pages` distinct 4K pages `stride` pages apart, random order and offsets.
fn stream(n: usize, pages: u64, stride: u64, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let p = (x >> 20) % pages;
            ((p * stride) << 12) | (x & 0xff8)
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Native,
    Shadow,
    Tdp,
}

fn run(mmu: &mut Mmu, st: &mut Setup, mode: Mode, addrs: &[u64]) -> (u64, u64) {
    let mut sink = 0u64;
    let t0 = cpu_ns();
    for (i, &va) in addrs.iter().enumerate() {
        let kind = if i & 7 == 0 {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        let tables = match mode {
            Mode::Native => Tables::Native(&mut st.shadow),
            Mode::Shadow => Tables::Shadow(&mut st.shadow),
            Mode::Tdp => Tables::Tdp {
                guest: &mut st.guest,
                host: &mut st.host,
            },
        };
        let t: Translation = mmu.translate(tables, va, kind).unwrap();
        sink = sink.wrapping_add(t.pa);
    }
    (cpu_ns() - t0, sink)
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(4_000_000);
    let filter = std::env::args().nth(2).unwrap_or_default();
    // 48 neighbouring pages: 3 per set of the 16-set L1 dTLB, all held.
    let friendly = stream(n, 48, 1, 0x9e3779b97f4a7c15);
    // Every page of the 1 GiB region (262,144 pages, far beyond the 1,536-entry L2 TLB).
    let hostile = stream(n, REGION >> 12, 1, 0x2545f4914f6cdd1d);
    for host_size in [PageSize::K4, PageSize::M2] {
        let mut st = build(host_size);
        if host_size == PageSize::K4 {
            let bytes = st.guest.memory_bytes() + st.host.memory_bytes();
            println!(
                "memory: guest+host tables {:.1} B per guest 4K page; shadow {:.1} B",
                bytes as f64 / (REGION >> 12) as f64,
                st.shadow.memory_bytes() as f64 / (REGION >> 12) as f64
            );
        }
        for mode in [Mode::Native, Mode::Shadow, Mode::Tdp] {
            if mode != Mode::Tdp && host_size != PageSize::K4 {
                continue;
            }
            for (wname, addrs) in [("TLB-friendly", &friendly), ("TLB-hostile", &hostile)] {
                let mode_name = match mode {
                    Mode::Native => "native",
                    Mode::Shadow => "shadow",
                    Mode::Tdp => "tdp",
                };
                let label = format!("{mode_name}-{host_size:?}-{wname}");
                if !label.contains(&filter) {
                    continue;
                }
                let mut mmu = Mmu::new(&TranslateConfig::default()).unwrap();
                if mode != Mode::Native {
                    mmu.vm_entry(1, 0).unwrap();
                }
                // Warm-up pass, then best of 3 measured passes.
                run(&mut mmu, &mut st, mode, &addrs[..n / 4]);
                mmu.reset_stats();
                let mut best = u64::MAX;
                let mut sink = 0;
                for _ in 0..3 {
                    let (ns, s) = run(&mut mmu, &mut st, mode, addrs);
                    best = best.min(ns);
                    sink ^= s;
                }
                std::hint::black_box(sink);
                let s = mmu.stats();
                let hits = (s.l1d_hits + s.l2_hits) as f64 / s.accesses as f64;
                println!(
                    "{mode_name:6} host {:?} {wname:13} {:7.1} M acc/s  TLB hit {:5.1}%  refs/miss {:5.2}  walk cycles/miss {:6.1}",
                    host_size,
                    n as f64 / best as f64 * 1e3,
                    hits * 100.0,
                    s.refs_per_walk(),
                    if s.walks == 0 { 0.0 } else { s.walk_cycles as f64 / s.walks as f64 },
                );
                if s.walks > 0 && mode == Mode::Tdp {
                    let b = mmu.grid().classify(0.9, 0.1);
                    let pwc_h: u64 = s.pwc_hits.iter().sum();
                    let pwc_m: u64 = s.pwc_misses.iter().sum();
                    println!(
                        "       NTLB hit {:5.1}%  PWC hit {:5.1}%  grid cells hit/mixed/miss {}/{}/{} holding {:.0}%/{:.0}%/{:.0}% of PWC misses",
                        100.0 * s.ntlb_hits as f64 / (s.ntlb_hits + s.ntlb_misses).max(1) as f64,
                        100.0 * pwc_h as f64 / (pwc_h + pwc_m).max(1) as f64,
                        b.hit_cells, b.mixed_cells, b.miss_cells,
                        100.0 * b.hit_cell_misses as f64 / s.walk_refs as f64,
                        100.0 * b.mixed_cell_misses as f64 / s.walk_refs as f64,
                        100.0 * b.miss_cell_misses as f64 / s.walk_refs as f64,
                    );
                }
            }
        }
    }
}

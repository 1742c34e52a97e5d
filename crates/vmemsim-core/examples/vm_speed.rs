//! Simulated guest accesses per second of a VM run (TLB-friendly and TLB-hostile
//! lat_mem_rd under native, tdp and shadow paging), without Python in the way; for
//! `valgrind --tool=callgrind` comparisons of the VM layer's hot path.
//!
//!     cargo run --release -p vmemsim-core --example vm_speed [friendly|hostile] [native|tdp|shadow]

use std::time::Instant;

use vmemsim_core::vm::{self, Paging, VmConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let case = args.get(1).map_or("friendly", |s| s.as_str());
    let pagings: Vec<&str> = match args.get(2) {
        Some(p) => vec![p.as_str()],
        None => vec!["native", "tdp", "shadow"],
    };
    let spec = match case {
        "hostile" => "lmbench-like:bench=lat_mem_rd,size=256MiB,stride=4096,passes=4",
        _ => "lmbench-like:bench=lat_mem_rd,size=128KiB,stride=64,passes=400",
    };
    for p in pagings {
        let mut wl = vm::workloads::parse(spec, 0).expect("spec");
        let g = (wl.footprint_pages() * 2) as u32;
        let pt = g / 256 + 64;
        let mut cfg = VmConfig::new(Paging::parse(p).expect("paging"), g, (g + pt) * 3 / 2);
        cfg.pt_pages = pt;
        let t = Instant::now();
        let r = vm::run(&cfg, wl.as_mut()).expect("run");
        let s = t.elapsed().as_secs_f64();
        let n = r.translate.accesses;
        println!(
            "{case} {p}: {n} accesses in {s:.3} s = {:.2} M/s",
            n as f64 / s / 1e6
        );
    }
}

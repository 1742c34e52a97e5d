//! Randomized op sequences over the VM layer's configurations: after every few ops each VM's
//! invariants (`validate`) and the agreement of its tables (`check_mirror`: process tables ↔
//! guest manager, EPT ↔ host manager, shadow leaves ↔ host backing) must hold. Seeded and
//! deterministic. Errors that are configuration limits (memory or page-table pages too small
//! for what the random program touches, hugetlbfs pages reclaimed) end a case; any other
//! error, a panic or a broken invariant fails the test. `STRESS_SEED=7` or `=0..1500` runs
//! other seeds; `STRESS_TRACE=1` prints every op, the limits hit and what the cases exercised.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::machine::{host_for, Paging, Vm, VmConfig};
use crate::engine::MachineConfig;
use crate::error::Error;
use crate::kvm::{Eviction, Harvest};
use crate::policy::{PolicyKind, PolicyOptions};
use crate::translate::{PageSize, TranslateConfig};
use crate::workload::Op;

/// Whether `e` says a configured size was too small for the program (legitimate).
fn is_limit(e: &Error) -> bool {
    let s = e.to_string();
    s.contains("out of memory")
        || s.contains("hugetlbfs")
        || s.contains("page-table pages ran out")
        || s.contains("no frame for a level")
}

struct Case {
    paging: Paging,
    gpage: PageSize,
    hpage: PageSize,
    vms: usize,
    vcpus: usize,
    cfg: VmConfig,
}

fn random_case(rng: &mut Xoshiro256PlusPlus) -> Case {
    let paging = [Paging::Native, Paging::Tdp, Paging::Shadow][rng.gen_range(0..3)];
    let gpage = [PageSize::K4, PageSize::M2][rng.gen_range(0..2)];
    // 1 GiB host pages (hugetlbfs) now and then: never reclaimed, so the host has room.
    let hpage = [
        PageSize::K4,
        PageSize::M2,
        PageSize::K4,
        PageSize::M2,
        PageSize::G1,
    ][rng.gen_range(0..5)];
    let gunit = (gpage.bytes() >> 12) as u32;
    let hunit = (hpage.bytes() >> 12) as u32;
    let vms = if paging == Paging::Native {
        1
    } else {
        rng.gen_range(1..=2)
    };
    // Guest memory: a few large pages, or a few hundred 4 KiB pages (pressure either way for
    // the regions below, which span up to ~6 MiB each).
    let guest_frames = if gunit > 1 {
        gunit * rng.gen_range(3..=6)
    } else {
        rng.gen_range(48..=1024)
    };
    // Guest page-table pages: the default (which the random program may exhaust, a limit)
    // or plenty.
    let pt_pages = if rng.gen_bool(0.3) { 0 } else { 400 };
    let pt = if pt_pages == 0 {
        guest_frames / 256 + 64
    } else {
        pt_pages
    };
    // Host memory: from less than one VM's memory to room for all.
    let need = vms as u32 * (guest_frames + pt).div_ceil(hunit) * hunit;
    let host_frames = if hunit >= 1 << 18 {
        hunit * (need / hunit + rng.gen_range(0..2))
    } else if hunit > 1 {
        let units = need / hunit;
        hunit * rng.gen_range(3.min(units).max(2)..=units + 1)
    } else {
        rng.gen_range((need / 4).max(64)..=need + 64)
    };
    let policies = ["clock-lru", "mglru", "lru"];
    let gpol = policies[rng.gen_range(0..policies.len())];
    let hpol = policies[rng.gen_range(0..policies.len())];
    let eviction = [
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
    ][rng.gen_range(0..4)];
    let vcpus = rng.gen_range(1..=3);
    let tc = TranslateConfig {
        pcid: rng.gen_bool(0.5),
        ..TranslateConfig::default()
    };
    let cfg = VmConfig {
        paging,
        guest: MachineConfig::new(guest_frames),
        guest_policy: PolicyKind::from_name(gpol).unwrap(),
        guest_options: PolicyOptions::new(rng.gen()),
        host: MachineConfig::new(host_frames),
        host_policy: PolicyKind::from_name(hpol).unwrap(),
        host_options: PolicyOptions::new(rng.gen()),
        translate: tc,
        guest_levels: [4, 4, 5][rng.gen_range(0..3)],
        host_levels: [4, 4, 5][rng.gen_range(0..3)],
        pt_pages,
        eviction,
        // At least the roots each vCPU may pin (its own and 3 cached) and one fault's chain
        // below a root: a smaller pool can legitimately end in -ENOSPC.
        mmu_pages: Some(rng.gen_range((4 * vcpus as u64 + 3).max(8)..=64)),
        guest_page: gpage,
        host_page: hpage,
        host_swap: rng
            .gen_bool(0.3)
            .then(|| crate::device::DeviceSpec::parse("nvme").unwrap()),
        guest_swap: rng
            .gen_bool(0.2)
            .then(|| crate::device::DeviceSpec::parse("zram").unwrap()),
        shared_disk: false,
        charge_device_ram: false,
        tlb: true,
        costs: Default::default(),
        file_device: None,
        cache_mode: Default::default(),
        balloon: None,
        mom: None,
        guest_swapoff: false,
        qemu_text_pages: 0,
        vswapper: crate::vm::machine::VSwapper::Off,
    };
    Case {
        paging,
        gpage,
        hpage,
        vms,
        vcpus,
        cfg,
    }
}

/// One VM's program state: which pids live, which each vCPU runs.
struct Prog {
    live: Vec<bool>,
    running: Vec<u32>,
}

/// Region bases (4 KiB page numbers): low, just below a 1 GiB boundary (a region crossing
/// into the next slot), and a high one.
const REGIONS: [u64; 4] = [0, (1 << 18) - 700, 5 << 18, (1 << 35) + 12_345];

fn random_op(rng: &mut Xoshiro256PlusPlus, p: &mut Prog, v: usize) -> Op {
    let r = rng.gen_range(0..100);
    if r < 80 {
        let base = REGIONS[rng.gen_range(0..REGIONS.len())];
        // Mostly a hot few pages, sometimes anywhere in ~6 MiB.
        let off = if rng.gen_bool(0.6) {
            rng.gen_range(0..64)
        } else {
            rng.gen_range(0..1_536)
        };
        return Op::Access {
            page: base + off,
            write: rng.gen_bool(0.5),
        };
    }
    if r < 85 {
        // munmap: 2 MiB aligned or not, short or long (beyond the single-page flush ceiling).
        let base = REGIONS[rng.gen_range(0..REGIONS.len())];
        let start = if rng.gen_bool(0.5) {
            base + 512 * rng.gen_range(0..3)
        } else {
            base + rng.gen_range(0..1_536)
        };
        let pages = if rng.gen_bool(0.5) {
            rng.gen_range(1..40)
        } else {
            rng.gen_range(1..1_200)
        };
        return Op::Unmap { start, pages };
    }
    if r < 90 {
        let pid = rng.gen_range(0..6u32);
        if p.live[pid as usize] {
            p.running[v] = pid;
            return Op::Switch { pid };
        }
        p.live[pid as usize] = true;
        return Op::Spawn { pid };
    }
    if r < 94 {
        // Exit a process no vCPU runs (an exiting process runs nowhere once it is gone).
        let pid = rng.gen_range(0..6u32);
        if p.live[pid as usize] && !p.running.contains(&pid) {
            p.live[pid as usize] = false;
            return Op::Exit { pid };
        }
        return Op::Compute { ns: 10 };
    }
    if r < 97 {
        return Op::Barrier;
    }
    Op::Compute {
        ns: rng.gen_range(1..1000),
    }
}

/// What the cases exercised: guest and host evictions, shadow pages zapped by the pool cap
/// and by KVM's shrinker, host reclaim that took another VM's pages.
#[derive(Default, Debug)]
struct Seen {
    guest_evictions: u64,
    host_evictions: u64,
    shadow_zapped: u64,
    shrink_zapped: u64,
    nested_flushes: u64,
    shared_host_reclaim: u64,
}

fn check(vms: &mut [Vm], what: &str) {
    for (i, vm) in vms.iter_mut().enumerate() {
        // A barrier applies the host unmaps other VMs' reclaim left for this one.
        vm.op(0, Op::Barrier)
            .unwrap_or_else(|e| panic!("{what} vm {i}: barrier: {e}"));
        vm.validate()
            .unwrap_or_else(|e| panic!("{what} vm {i}: validate: {e}"));
        vm.check_mirror()
            .unwrap_or_else(|e| panic!("{what} vm {i}: mirror: {e}"));
    }
}

fn note(vms: &[Vm], seen: &mut Seen) {
    for vm in vms {
        let r = vm.result();
        seen.guest_evictions += r.stats.evictions;
        seen.shadow_zapped += r.kvm.as_ref().map_or(0, |k| k.mmu_recycled);
        seen.shrink_zapped += r.mmu_shrink_zapped;
        seen.nested_flushes += r.nested_flushes;
    }
    let h = vms[0].result().host_stats.evictions;
    seen.host_evictions += h;
    if vms.len() > 1 {
        seen.shared_host_reclaim += h;
    }
}

/// Runs case `seed`: returns the ops run and whether it ended at a configuration limit.
fn run_case(seed: u64, ops: usize, seen: &mut Seen) -> (usize, bool) {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let c = random_case(&mut rng);
    let what = format!(
        "seed {seed}: {:?} guest {:?} host {:?} vms {} vcpus {} guest_frames {} host_frames {} \
         mmu_pages {:?} {:?} host_swap {} guest_swap {}",
        c.paging,
        c.gpage,
        c.hpage,
        c.vms,
        c.vcpus,
        c.cfg.guest.frames,
        c.cfg.host.frames,
        c.cfg.mmu_pages,
        c.cfg.eviction,
        c.cfg.host_swap.is_some(),
        c.cfg.guest_swap.is_some(),
    );
    let mut vms: Vec<Vm> = if c.paging == Paging::Native {
        vec![Vm::new(&c.cfg, c.vcpus).unwrap_or_else(|e| panic!("{what}: {e}"))]
    } else {
        let refs: Vec<&VmConfig> = (0..c.vms).map(|_| &c.cfg).collect();
        let host = host_for(&refs).unwrap_or_else(|e| panic!("{what}: {e}"));
        (0..c.vms)
            .map(|i| {
                Vm::on_host(&c.cfg, c.vcpus, Some((host.clone(), i)))
                    .unwrap_or_else(|e| panic!("{what}: {e}"))
            })
            .collect()
    };
    let mut progs: Vec<Prog> = (0..c.vms)
        .map(|_| {
            let mut live = vec![false; 6];
            live[0] = true;
            Prog {
                live,
                running: vec![0; c.vcpus],
            }
        })
        .collect();
    for n in 0..ops {
        let i = rng.gen_range(0..vms.len());
        let v = rng.gen_range(0..c.vcpus);
        let op = random_op(&mut rng, &mut progs[i], v);
        if std::env::var("STRESS_TRACE").is_ok() {
            eprintln!("op {n}: vm {i} vcpu {v} {op:?}");
        }
        if let Err(e) = vms[i].op(v, op) {
            assert!(
                is_limit(&e),
                "{what}: op {n} {op:?} of vm {i} vcpu {v}: {e}"
            );
            if std::env::var("STRESS_TRACE").is_ok() {
                eprintln!("LIMIT {what}: op {n}: {e}");
            }
            note(&vms, seen);
            return (n, true);
        }
        if n % 16 == 15 {
            check(&mut vms, &format!("{what}: after op {n}"));
        }
    }
    check(&mut vms, &format!("{what}: at the end"));
    note(&vms, seen);
    (ops, false)
}

const OPS: usize = 1_000;

#[test]
fn random_op_sequences_keep_every_table_in_step() {
    let mut ran = 0;
    let mut limited = 0;
    let mut by_paging = [0usize; 3];
    let mut seen = Seen::default();
    let seeds = match std::env::var("STRESS_SEED") {
        Ok(s) => match s.split_once("..") {
            Some((a, b)) => a.parse().unwrap()..b.parse().unwrap(),
            None => s.parse().unwrap()..s.parse::<u64>().unwrap() + 1,
        },
        Err(_) => 0..120u64,
    };
    for seed in seeds {
        let (n, limit) = run_case(seed, OPS, &mut seen);
        if std::env::var("STRESS_TRACE").is_ok() {
            eprintln!("CASE {seed}: {n} {limit}");
        }
        ran += n;
        limited += limit as usize;
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        by_paging[random_case(&mut rng).paging as usize] += n;
    }
    if std::env::var("STRESS_TRACE").is_ok() {
        eprintln!("{seen:?} {by_paging:?}");
    }
    // Most cases run long enough to mean something, and every mechanism was exercised.
    assert!(
        ran > 120 * OPS / 2,
        "only {ran} ops ran ({limited} cases hit a limit)"
    );
    assert!(by_paging.iter().all(|&n| n > 1_000), "{by_paging:?}");
    assert!(
        seen.guest_evictions > 0 && seen.host_evictions > 0,
        "{seen:?}"
    );
    assert!(seen.shadow_zapped > 0 && seen.shrink_zapped > 0, "{seen:?}");
    assert!(
        seen.nested_flushes > 0 && seen.shared_host_reclaim > 0,
        "{seen:?}"
    );
}

#[test]
fn an_access_by_a_vcpu_whose_process_exited_is_an_error_not_a_panic() {
    for paging in [Paging::Native, Paging::Tdp, Paging::Shadow] {
        let c = crate::vm::VmConfig::new(crate::vm::Paging::Tdp, 1_024, 4_096);
        let c = VmConfig { paging, ..c };
        let mut vm = Vm::new(&c, 2).unwrap();
        vm.op(0, Op::Spawn { pid: 1 }).unwrap();
        vm.op(1, Op::Switch { pid: 1 }).unwrap();
        vm.op(
            1,
            Op::Access {
                page: 3,
                write: true,
            },
        )
        .unwrap();
        vm.op(0, Op::Exit { pid: 1 }).unwrap();
        let e = vm
            .op(
                1,
                Op::Access {
                    page: 3,
                    write: true,
                },
            )
            .unwrap_err();
        assert!(e.to_string().contains("process 1"), "{paging:?}: {e}");
    }
}

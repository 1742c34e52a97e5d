//! One VM on one host: guest programs' accesses go through the guest OS's memory
//! manager (a [`Machine`] over guest frames, with its own reclaim policy and guest swap), the
//! translation hardware of each vCPU ([`Mmu`]: TLBs, walk caches, the page-table line cache)
//! walking the guest's page tables and, under nested paging, the host's EPT/NPT, and the
//! host's memory manager (a second [`Machine`], over host frames) that backs guest memory as
//! QEMU's anonymous mapping: guest-physical page `gfn` is host-virtual page `gfn` of the
//! QEMU process.
//!
//! # Layout
//!
//! - Guest-physical memory: gfns `0..guest_frames` are the frames the guest's memory manager
//!   hands to processes (frame id = gfn); gfns `guest_frames..guest_frames + pt_pages` hold
//!   the guest's page-table pages (kernel memory: never reclaimed by the guest, but host
//!   memory like any other gfn, so the host may swap them out and a walk then takes an EPT
//!   violation).
//! - Guest processes: each has a 48-bit virtual address space. The guest manager has one page
//!   table for all of them, so the 1 GiB regions processes use are given dense slots in it in
//!   order of first use (pid `p`'s page `v` is page `slot(p, v >> 18) << 18 | (v & 0x3ffff)`;
//!   2 MiB groups, which MG-LRU's walks and Bloom filter work on, stay intact); its
//!   hardware-walked table is a [`RadixTable`] per process (gVA → gPA) kept in step with the
//!   manager: mapped when the manager maps a page, unmapped when reclaim unmaps one
//!   ([`Machine::unmap_log`]), with the TLB shootdown Linux does (`flush_tlb_page` on the
//!   vCPUs running that process; others flush that PCID when they next switch to it, as
//!   `switch_mm_irqs_off` does when the mm's `tlb_gen` moved).
//! - Host: EPT/NPT as a [`RadixTable`] (gPA → hPA), mapped when the host maps a gfn and
//!   unmapped when host reclaim takes the page (the MMU notifier → `kvm_unmap_gfn_range` →
//!   `kvm_flush_remote_tlbs`: an INVEPT of the VM on every vCPU). The EPT's own table pages
//!   are host kernel memory outside the host's frames.
//!
//! # What an access does
//!
//! The guest manager serves the access first (a guest page fault if the page was not
//! mapped: minor, or major from guest swap), then the host serves the gfn (an EPT violation
//! when the EPT had no entry: the host page was never touched or was reclaimed), then the
//! vCPU's MMU translates the address: a TLB hit, or a walk whose references and cycles are
//! counted; a walk that reaches a guest page-table page the host has reclaimed stops with a
//! nested fault, which the host serves (one more EPT violation) before the walk is retried.
//! Serving faults before the walk, not after a failed one, counts the same faults and walks;
//! it leaves out the partial walk a real fault costs.
//!
//! # Shadow paging
//!
//! Under `shadow`, KVM's shadow MMU ([`ShadowMmu`]) builds the tables the hardware walks
//! (gVA → host page) from the guest's tables, which it reads through guest memory
//! ([`GuestMemory`] over the process tables), and its pool of shadow pages is capped and
//! recycled (`fifo` as upstream, `clock` as seed 000). The VM layer turns guest events into
//! KVM's exits: every entry the guest kernel writes into its page tables (a mapping made at
//! a guest fault, one removed by guest reclaim, munmap or exit) is a store into a page-table
//! page ([`ShadowMmu::guest_pt_write`]: direct, unsync or emulated); a walk that finds no
//! shadow entry is a shadow page fault ([`ShadowMmu::page_fault`]); guest CR3 loads and
//! INVLPGs exit ([`ShadowMmu::set_cr3`], [`ShadowMmu::invlpg`]); host reclaim of guest memory
//! goes through the MMU notifier ([`ShadowMmu::unmap_gfn`]); KVM's remote TLB flushes flush
//! every vCPU's TLB. The shadow leaf records the guest frame; the walk's cost is counted in
//! the vCPU's MMU with entry addresses placed per shadow table.
//!
//! # Time
//!
//! Every VM run is a run of the one engine of time ([`crate::sched`]), whose threads are the
//! vCPUs and the host's kswapd, on host CPUs: one each without `HostCpus`, else shared
//! ([`run_many_with`]; waiting for a CPU is steal time). Each vCPU keeps its clock, which
//! the engine moves; every op advances it by its cost ([`Costs`], documented defaults): the
//! translation's cycles (TLB hit latency or the walk's, from the page-table line cache),
//! guest and host faults, VM exits, the work KVM's handlers did (priced per unit of work, the
//! same prices that weigh the flame graph), INVLPGs and CR3 loads, reclaim (the guest's
//! direct reclaim and the host's, on the faulting vCPU), and the program's own CPU work
//! (`Compute`). The guest's kswapd is a thread of the guest, which shares the VM's vCPUs
//! with the streams (a small fair scheduler per VM, see `VmExec`): it can fall behind the
//! allocations, which then reclaim directly. The host's kswapd's CPU work is that of the
//! reclaim it did (inline, when the host needed it), run as a thread. A vCPU waiting for a
//! swap read or idle until an open-loop arrival halts and gives its host CPU back, unless
//! the guest's kswapd has work. Open-loop arrivals (`Arrive`, counted from the vCPU's last
//! barrier, so after a load phase) leave a vCPU idle until the request arrives; a
//! request's latency runs from its arrival (or its start, without one) to its end, so it
//! includes queueing behind earlier requests. A `Barrier` waits in simulated time for the
//! VM's other vCPUs. The vCPUs' ops interleave in simulated-time order at the engine's
//! 2 µs steps. Runtime is when the last vCPU finished.
//!
//! # Large pages
//!
//! `guest_page` and `host_page` (4 KiB, 2 MiB, 1 GiB) set the page size of each dimension,
//! for all of a run's memory, as when THP is `always` and every fault finds a free huge page
//! (`do_huge_pmd_anonymous_page`), or when memory is hugetlbfs. Each memory manager then
//! works in its own page size: its frames, its pages, its reclaim and swap are large pages
//! (a 2 MiB page is reclaimed and swapped whole, as `add_to_swap` does for a THP when swap
//! has a free cluster), and each mapping is one entry at level 2 or 3: a guest process's
//! table maps its 2 MiB or 1 GiB pages, the EPT maps the host's, and KVM's shadow MMU maps
//! a guest large page with one large SPTE when the host page is at least as large
//! (`kvm_mmu_max_mapping_level` with `host_pfn_mapping_level`) and splinters it into
//! smaller SPTEs under a direct shadow page otherwise; a guest large page on smaller host
//! pages is splintered in the TLB too (the TLB caches the smaller of the two sizes). 1 GiB
//! pages are hugetlbfs pages, which Linux never reclaims: a run whose manager would reclaim
//! one ends with an error. A first-touch fault on a large page also clears it (`clear_page_ns`
//! per 4 KiB beyond the first) and a swap-in reads all of it (`swap_page_ns` per further 4 KiB).
//! Watermarks are computed on the manager's count of large pages.
//!
//! Left out: mixed page sizes in one run (THP's fallback to 4 KiB pages when no huge page
//! is free, khugepaged's collapse, a THP split on partial munmap — a munmap frees every
//! large page it touches), and Linux 6.8's 4 KiB swap-in of a swapped-out THP. (KVM's
//! `lpage_info` rule, no large SPTE over a shadowed guest page table, is modelled, but guest
//! page tables live outside the data frames here, so it only bites at their boundary.)
//!
//! # Swap devices
//!
//! Without a device, a major fault costs a flat `guest_major_fault_ns` / `host_major_fault_ns`.
//! With `guest_swap` / `host_swap` (a [`crate::device`] spec: `ssd`, `nvme`, `zram`,
//! `remote`), each memory manager's swap I/O goes to that device at the simulated time of the
//! op that caused it, as in the timing engine: a major fault costs the minor fault's kernel
//! path plus the wait for its read (queueing behind other requests on the device's channels
//! included), reclaim's write-backs are asynchronous but occupy the device and hold their
//! pages under writeback until they complete (`Machine::set_write_sink`), and zram's
//! compression and decompression are CPU time of the vCPU that caused them. The host's
//! device is shared by all the VMs on it. Left out: zram's pool is not charged against the
//! host's memory (as under a memory cgroup limit), pages compress as `Numeric` data, and
//! vCPUs, whose clocks run apart between chunks, may submit out of time order (a lagging
//! vCPU's request can queue behind one submitted at a later time).
//!
//! # Several VMs
//!
//! VMs on one host ([`run_many`], [`host_for`], [`Vm::on_host`]) share the host's memory
//! manager ([`HostShared`]): each VM's guest memory is a range of host pages, so one VM's
//! faults reclaim another's pages (the oldest first, whoever owns them), and the owner
//! applies those unmaps to its EPT or shadow MMU before its next op. KVM's shrinker counts
//! every VM's shadow pages and zaps in one VM per call, rotating. Each VM has its own vCPUs,
//! each on a host CPU of its own.
//!
//! # Left out (for now)
//!
//! Without [`HostCpus`], host threads take no vCPU time (the host's kswapd runs beside
//! them); with it, the vCPUs and the host's kswapd share host CPUs (see [`run_many_with`]).
//! Used directly ([`Vm::op`]), without the engine, a VM runs the guest's kswapd inline in
//! the allocation that woke it. Also left out: copy-on-write between processes, and free
//! page reporting (pages the guest frees stay backed on the host). Ballooning is
//! `ballooning.rs`'s (with `--balloon`).
//!
//! # Files
//!
//! A workload's file I/O goes through the page cache of its kernel with a disk in time
//! (`files`: natively a block device, in a VM a virtio-blk disk served by QEMU from the
//! image on the host, through the host's page cache by [`CacheMode`]).

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::access::Access;
use crate::device::ContentClass;
use crate::engine::{Machine, MachineConfig, Stats};
use crate::error::{Error, Result};
use crate::kvm::{
    Eviction, GuestMemory, GuestPte, GuestStore, PfOutcome, PtWrite, ShadowMmu, ShadowMmuConfig,
    ShadowWalk,
};
use crate::mm::PTE_PRESENT;
use crate::policy::{BoxedPolicy, Boxer, PolicyKind, PolicyOptions};
use crate::sched::{Exec, Sched, SchedConfig, Step};
use crate::translate::radix::{PTE_A, PTE_D, PTE_W};
use crate::translate::{
    AccessKind, FaultKind, Mmu, PageSize, RadixTable, Tables, TranslateConfig, TranslateStats,
    WalkEnd, WalkPath, Walkable,
};
use crate::workload::{Op, Workload};

// One file per part of the VM (each child adds its own `impl Vm`): the data types (`config`),
// construction (`build`), the host's side (`host`), KVM's shadow-paging glue (`shadow`),
// translation and TLB flushes (`translate`), processes and ops (`process`), time, swap
// devices and kswapd passes (`cost`), results and checks (`result`), the engine's threads
// (`threads`) and several VMs' merged results (`merge`).
mod ballooning;
mod build;
mod config;
mod cost;
mod files;
mod host;
mod mapper;
mod merge;
mod pathologies;
mod preventer;
mod process;
mod result;
mod run_config;
mod shadow;
mod threads;
mod translate;

pub use ballooning::{BalloonConfig, BalloonDecision, BalloonPoint, BalloonResult};
pub use config::{CacheMode, Costs, Paging, RunResult, VmConfig, VmTime};
pub use cost::Classes;
pub use host::{host_for, HostShared};
pub use mapper::VSwapper;
pub use pathologies::SwapPathologies;
pub use run_config::{parse_page_size, VmRun, VmRunConfig};
pub use shadow::{shrink_slab_plan, MMU_SHRINKER_SEEKS, SHRINK_BATCH};
pub use threads::EngineOpts;

use ballooning::BalloonDev;
use build::{pt_pages_of, unit_marks, units};
use cost::{SharedDisk, SwapDev, Work};
use host::{hugetlb_reclaimed, HostSide};
use merge::merge_results;
use pathologies::HostTouch;
use result::by_kind;
use shadow::ShadowWalker;
use threads::{schedule, EngineOut};
use translate::unkey_in;

/// Pages per region (1 GiB) folded into the guest manager's page table.
pub const REGION_SHIFT: u32 = 18;
/// Guest-virtual pages of a process (48-bit addresses).
pub const VA_PAGES: u64 = 1 << 36;
/// Most process ids a VM may use.
pub const MAX_PIDS: u32 = 1 << 18;
/// Most 1 GiB regions all processes may touch.
const MAX_REGIONS: usize = 1 << (36 - REGION_SHIFT);
const REGION_MASK: u64 = (1 << REGION_SHIFT) - 1;

/// PWC hit ratios that make a walk-grid cell "hit" and "miss" in [`RunResult::walk_breakdown`].
pub const WALK_HIT_AT_LEAST: f64 = 0.9;
pub const WALK_MISS_AT_MOST: f64 = 0.1;
/// `tlb_single_page_flush_ceiling`: munmaps of more pages flush the whole address space.
pub const TLB_SINGLE_PAGE_FLUSH_CEILING: u64 = 33;

struct Vcpu {
    /// Its TLBs and page-walk caches (`None`: natively without the TLB model).
    mmu: Option<Mmu>,
    pid: u32,
    clock: u64,
    /// The clock at the vCPU's last barrier: arrivals count from it.
    epoch: u64,
    arrival: Option<u64>,
    req_start: Option<u64>,
    /// The `tlb_gen` of each process this vCPU's TLB has seen (flush on switch if behind).
    seen_gen: Vec<u64>,
    /// Of the clock's advance since [`Vm::take_io_wait`], the time spent waiting for swap
    /// reads (the vCPU halts meanwhile: its host CPU is free).
    io_wait: u64,
    /// The request in progress's kind ([`crate::workload::REQ_READ`], ...).
    req_kind: u8,
    /// Accesses made and major faults taken (its stream's, on either side).
    accesses: u64,
    writes: u64,
    major_faults: u64,
}

impl Vcpu {
    /// Its MMU, on the paths that translate (guests, or natively with the TLB model).
    fn mmu(&mut self) -> &mut Mmu {
        self.mmu
            .as_mut()
            .expect("translation is modelled on this path")
    }
}

/// A VM and its host, driven op by op.
pub struct Vm {
    paging: Paging,
    guest: Machine<BoxedPolicy>,
    host: Option<HostSide>,
    kvm: Option<ShadowMmu>,
    procs: Vec<Option<RadixTable>>,
    /// Per process: guest-virtual pages first touched (to free at exit), and its `tlb_gen`.
    touched: Vec<Vec<u64>>,
    tlb_gen: Vec<u64>,
    pt_free: Vec<u64>,
    pt_base: u64,
    pt_total: u64,
    /// The process owning each guest page-table page (`u32::MAX`: free).
    pt_owner: Vec<u32>,
    vcpus: Vec<Vcpu>,
    r: RunResult,
    guest_frames: u32,
    /// log2 of 4 KiB pages per guest page: the guest manager's pages are guest pages.
    gshift: u32,
    levels: u8,
    /// Scratch: host unmaps, and processes whose table logs need draining.
    host_unmaps: Vec<u64>,
    /// Scratch: (pid, va) of the pages a reclaim unmapped.
    unmapped: Vec<(u32, u64)>,
    log_buf: Vec<(u64, u16)>,
    /// (pid, 1 GiB region) → dense slot in the guest manager's page table, and back.
    regions: std::collections::HashMap<u64, u32>,
    region_back: Vec<u64>,
    /// The last region each vCPU used (region key, slot): most accesses skip the hash.
    region_cache: Vec<(u64, u32)>,
    costs: Costs,
    /// The guest's timed swap device, if any, and whether the host has one.
    guest_dev: Option<cost::SharedSwapDev>,
    host_dev: bool,
    /// The access in progress: translation cycles at its start, and the counters before its
    /// slow path (see `mark`).
    op_c0: u64,
    snap: Option<Work>,
    /// Other VMs run on this VM's host.
    shares_host: bool,
    /// Scratch: KVM's shrinker's batches to zap in this VM.
    shrink_plan: Vec<u64>,
    /// Translation cycles so far (all vCPUs), and KVM's priced work already charged.
    tcycles: u64,
    kvm_charged: f64,
    /// Request latency per request kind, indexed by kind (all kinds:
    /// [`Vm::latency_histogram`]; by kind: `Vm::hists_by_kind`).
    hists: Vec<crate::timed::hist::Histogram>,
    /// Whether translation is modelled ([`VmConfig::tlb`]), and without it the work counters
    /// as of the last access's end when nothing else has changed them since (accesses that
    /// do not fault change none: they need no snapshot).
    tlb: bool,
    last_work: Work,
    last_valid: bool,
    /// Of CPU time: reclaim on the vCPUs, its aging and rmap parts (any thread), the swap
    /// devices' CPU time (any thread).
    cpu: crate::timed::CpuTimes,
    /// The guest's (native: the machine's) swap device's memory is taken from its frames
    /// ([`VmConfig::charge_device_ram`]); frames kswapd's running pass has reclaimed but not
    /// yet freed (native: see `VmExec`); the most frames the device's pool held.
    pool_charged: bool,
    kswapd_hold: u32,
    /// The pool's frames as of the last reservation.
    pool_seen: u32,
    device_frames_peak: u64,
    /// The workload has files ([`Vm::add_files`]), and in a VM its virtual disk's log.
    has_files: bool,
    virtio: Option<std::rc::Rc<std::cell::RefCell<files::VirtioLog>>>,
    file_layout: Option<files::Layout>,
    /// With a virtual disk: the image block each guest frame holds unchanged (module
    /// `pathologies`), shared with the disk and the host.
    image_blocks: Option<std::rc::Rc<std::cell::RefCell<pathologies::ImageBlocks>>>,
    /// The virtio-balloon device, if the VM has one ([`VmConfig::balloon`]).
    balloon: Option<ballooning::BalloonDev>,
    /// The host's balloon manager's settings ([`VmConfig::mom`]; the first VM's count).
    mom: Option<crate::vm::balloon::MomConfig>,
}

fn pcid(pid: u32) -> u16 {
    // PCID 0 is the host's/kernel's; processes take 1.. (4095 at most: wraps, as Linux
    // recycles its 6 dynamic ASIDs; a model detail that only matters beyond 4095 pids).
    (pid % 4095 + 1) as u16
}

const VPID: u16 = 1;
const HOST_PCID: u16 = 0;
const FREE_PT: u32 = u32::MAX;

/// Run a guest workload to its end on a new VM: the vCPUs' streams interleaved chunk by
/// chunk (the order of accesses between vCPUs is round-robin by chunk; each vCPU keeps its own clock).
pub fn run(cfg: &VmConfig, wl: &mut dyn Workload) -> Result<RunResult> {
    let hc = HostCpus::own(wl.threads());
    run_with(cfg, wl, hc, EngineOpts::default())
}

/// One VM (or, with native paging, the machine alone) on `hc` with the engine's `opts`.
pub fn run_with(
    cfg: &VmConfig,
    wl: &mut dyn Workload,
    hc: HostCpus,
    opts: EngineOpts<'_>,
) -> Result<RunResult> {
    let mut vm = Vm::new(cfg, wl.threads())?;
    vm.add_files(&wl.files(), cfg)?;
    let cpus = hc.cpus;
    let out = schedule(std::slice::from_mut(&mut vm), &mut [&mut *wl], hc, opts)?;
    vm.settle_files();
    let mut r = vm.result();
    describe(&mut r, cfg, &*wl, cpus);
    out.fill(&mut r);
    Ok(r)
}

/// What was run, into its result: the workload, the seed and policy options, the footprint,
/// the host CPUs, the swap device of the workload's kernel, whether TLBs were modelled, the
/// version; and the program's accesses as the workload kernel's `accesses` (natively and in
/// a VM alike).
fn describe(r: &mut RunResult, cfg: &VmConfig, wl: &dyn Workload, cpus: u32) {
    // The program's accesses: with TLBs, the memory manager sees only those that walk the
    // page table (a TLB hit sets no accessed bit), so its own count is smaller.
    let st = &mut r.stats;
    st.accesses = r.threads.iter().map(|t| t.accesses).sum();
    st.writes = r.threads.iter().map(|t| t.writes).sum();
    st.reads = st.accesses - st.writes;
    r.vmstat = crate::timed::vmstat(&r.stats);
    r.version = crate::replay::VERSION.to_string();
    r.workload = wl.name();
    r.seed = cfg.guest_options.seed;
    r.options = cfg
        .guest_options
        .keys()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    r.footprint_pages = wl.footprint_pages();
    r.cpus = cpus;
    r.device = cfg
        .guest_swap
        .as_ref()
        .map(|d| d.to_string())
        .unwrap_or_default();
    r.tlb = cfg.tlb;
}

/// Run several VMs, each with its workload, on one host: their guest memory shares the host's
/// memory manager (its frames, reclaim and swap: the first config's `host`, `host_policy`,
/// `host_page`), so one VM's pressure reclaims another's pages. Each VM keeps its own guest
/// OS, translation, vCPUs and (shadow paging) KVM MMU; all vCPUs run round-robin chunk by
/// chunk, each on a host CPU of its own. Returns the merged result with each VM's in
/// [`RunResult::per_vm`].
pub fn run_many(cfgs: &[VmConfig], wls: &mut [Box<dyn Workload>]) -> Result<RunResult> {
    run_many_with(cfgs, wls, None)
}

/// The host CPUs the vCPUs share (see [`run_many_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostCpus {
    pub cpus: u32,
    /// Time slice (`None`: EEVDF's base slice for `cpus`, [`crate::timed::default_slice_ns`]).
    pub slice_ns: Option<u64>,
}

impl HostCpus {
    /// A host CPU for each of `vcpus` vCPUs and one for the host's kswapd: no thread ever
    /// waits for a CPU.
    pub fn own(vcpus: usize) -> HostCpus {
        HostCpus {
            cpus: (vcpus + 1).min(4096) as u32,
            slice_ns: None,
        }
    }
}

/// [`run_many`], with the vCPUs of all VMs sharing `cpus` host CPUs when given (else each
/// on a CPU of its own). The vCPUs and the host's kswapd are threads of the one engine of
/// time, [`crate::sched`], whose scheduler follows Linux 6.8's fair class (the least CPU
/// time runs next, EEVDF's base slice, bounded lag and wake-up preemption on wake-up, a
/// context switch of `costs.context_switch_ns` when a CPU changes thread). A vCPU gives its
/// CPU back while it idles for an open-loop arrival and while it waits for a swap read
/// (the guest halts); a runnable vCPU waiting for a CPU is stolen time (`time.steal_ns`):
/// its requests' latency grows by it. The host's kswapd shares the CPUs: woken by a guest
/// page's allocation at the host's low watermark, it runs `balance_pgdat` passes from the
/// end of the engine step that woke it (`HostShared::kswapd_pass`; their reclaim is its CPU
/// time, `host_kswapd_ns`), and the vCPUs reclaim directly when it falls behind. Left out: other
/// host threads. Inside each VM the guest's kswapd shares the vCPUs with the streams (see
/// `VmExec`); a vCPU runs its stream's processes as the stream switches them.
pub fn run_many_with(
    cfgs: &[VmConfig],
    wls: &mut [Box<dyn Workload>],
    cpus: Option<HostCpus>,
) -> Result<RunResult> {
    run_many_opts(cfgs, wls, cpus, EngineOpts::default())
}

/// [`run_many_with`] with the engine's options (a time series of samples).
pub fn run_many_opts(
    cfgs: &[VmConfig],
    wls: &mut [Box<dyn Workload>],
    cpus: Option<HostCpus>,
    opts: EngineOpts<'_>,
) -> Result<RunResult> {
    if cfgs.is_empty() || cfgs.len() != wls.len() {
        return Err(Error::config(
            "vm",
            format!("{} configurations for {} workloads", cfgs.len(), wls.len()),
        ));
    }
    if cfgs.len() == 1 {
        let hc = cpus.unwrap_or_else(|| HostCpus::own(wls[0].threads()));
        return run_with(&cfgs[0], wls[0].as_mut(), hc, opts);
    }
    if cfgs.len() > 1 && cfgs.iter().any(|c| c.paging == Paging::Native) {
        return Err(Error::config(
            "vm.count",
            "native paging runs no VM: several VMs need tdp or shadow",
        ));
    }
    let refs: Vec<&VmConfig> = cfgs.iter().collect();
    let host = match cfgs[0].paging {
        Paging::Native => None,
        _ => Some(host_for(&refs)?),
    };
    let mut vms = Vec::with_capacity(cfgs.len());
    for (i, (c, w)) in cfgs.iter().zip(wls.iter()).enumerate() {
        let mut vm = Vm::on_host(c, w.threads(), host.as_ref().map(|h| (h.clone(), i)))?;
        vm.add_files(&w.files(), c)?;
        vms.push(vm);
    }
    let n_vcpus = wls.iter().map(|w| w.threads()).sum();
    let hc = cpus.unwrap_or_else(|| HostCpus::own(n_vcpus));
    let n_cpus = hc.cpus;
    let mut refs: Vec<&mut dyn Workload> = wls
        .iter_mut()
        .map(|w| -> &mut dyn Workload { &mut **w })
        .collect();
    let out = schedule(&mut vms, &mut refs, hc, opts)?;
    let host = host.expect("several VMs have a host");
    let mut per = Vec::with_capacity(vms.len());
    let mut hists: BTreeMap<u8, crate::timed::hist::Histogram> = BTreeMap::new();
    for ((vm, w), c) in vms.iter_mut().zip(wls.iter()).zip(cfgs) {
        vm.sync_host_unmaps();
        vm.settle_files();
        let mut r = vm.result();
        describe(&mut r, c, w.as_ref(), n_cpus);
        for (k, h) in vm.hists_by_kind() {
            hists.entry(k).or_default().merge(&h);
        }
        per.push(r);
    }
    let mut merged = merge_results(&per);
    let sh = host.borrow();
    // The host is shared: its counters and its swap device's are the host's own, not a sum
    // of each VM's view of them.
    merged.host_stats = sh.m.stats.clone();
    merged.host_vmstat = crate::timed::vmstat(&merged.host_stats);
    merged.host_device_stats = sh.dev.as_ref().map(|d| d.borrow().stats());
    merged.host_file_device_stats = sh.m.file_device_stats();
    // (host-wide: each VM's result has the same)
    merged.cacol = per[0].cacol.clone();
    merged.host_frames = per[0].host_frames;
    (merged.latency, merged.latency_buckets) = by_kind(&hists);
    merged.per_vm = per;
    out.fill(&mut merged);
    Ok(merged)
}

impl EngineOut {
    /// The engine's own measurements into a run's result.
    fn fill(self, r: &mut RunResult) {
        r.host_kswapd_ns = self.kswapd_ns;
        r.cpu.kswapd_ns = self.kswapd_ns;
        r.cpu.kswapd_runs = self.kswapd_runs;
        r.cpu.context_switches = self.context_switches;
        r.slice_ns = self.slice_ns;
        r.series = self.series;
        r.mom = self.mom;
    }
}

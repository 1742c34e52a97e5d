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
//! the engine moves; every op advances it by its cost ([`VmCosts`], documented defaults): the
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
//! included), reclaim's write-backs are asynchronous but occupy the device, and zram's
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
//! the allocation that woke it. Also left out: copy-on-write between processes, guest page cache and file I/O, and ballooning or free
//! page reporting (pages the guest frees stay backed on the host).

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

/// Pages per region (1 GiB) folded into the guest manager's page table.
pub const REGION_SHIFT: u32 = 18;
/// Guest-virtual pages of a process (48-bit addresses).
pub const VA_PAGES: u64 = 1 << 36;
/// Most process ids a VM may use.
pub const MAX_PIDS: u32 = 1 << 18;
/// Most 1 GiB regions all processes may touch.
const MAX_REGIONS: usize = 1 << (36 - REGION_SHIFT);
const REGION_MASK: u64 = (1 << REGION_SHIFT) - 1;
/// `do_shrink_slab` for one shrinker at one reclaim priority: `freeable` objects
/// (`count_objects`), `deferred` work carried from earlier calls (`nr_deferred`), `seeks`
/// (the cost of recreating an object; KVM's `mmu_shrinker` has `DEFAULT_SEEKS * 10` = 20),
/// `batch` (`SHRINK_BATCH` = 128). Returns the `nr_to_scan` of each `scan_objects` call to
/// make and the new deferred count. As Linux 6.8 (`mm/shrinker.c`): delta = (freeable >>
/// priority) · 4 / seeks; the total is (deferred >> priority) + delta, at most twice
/// `freeable`; scan in batches while the total is at least a batch or all of `freeable`;
/// defer deferred + delta − scanned, at most twice `freeable`.
pub fn shrink_slab_plan(
    freeable: u64,
    deferred: u64,
    priority: u32,
    seeks: u64,
    batch: u64,
    out: &mut Vec<u64>,
) -> u64 {
    out.clear();
    if freeable == 0 {
        return deferred;
    }
    let delta = (freeable >> priority) * 4 / seeks;
    let mut total = ((deferred >> priority) + delta).min(2 * freeable);
    let mut scanned = 0;
    while total >= batch || total >= freeable {
        let n = total.min(batch);
        out.push(n);
        scanned += n;
        total -= n;
    }
    (deferred + delta).saturating_sub(scanned).min(2 * freeable)
}

/// KVM's `mmu_shrinker.seeks` and the shrinkers' `SHRINK_BATCH`.
pub const MMU_SHRINKER_SEEKS: u64 = 20;
pub const SHRINK_BATCH: u64 = 128;

/// PWC hit ratios that make a walk-grid cell "hit" and "miss" in [`VmResult::walk_breakdown`].
pub const WALK_HIT_AT_LEAST: f64 = 0.9;
pub const WALK_MISS_AT_MOST: f64 = 0.1;
/// `tlb_single_page_flush_ceiling`: munmaps of more pages flush the whole address space.
pub const TLB_SINGLE_PAGE_FLUSH_CEILING: u64 = 33;

/// How guest addresses are translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Paging {
    /// No VM: the programs run on the host directly (the guest manager is the host's).
    Native,
    /// Nested paging (EPT/NPT): 2D walks of the guest's and the host's tables.
    Tdp,
    /// Shadow paging: KVM's shadow tables, walked in one dimension.
    Shadow,
}

impl Paging {
    pub fn parse(s: &str) -> Result<Paging> {
        match s {
            "native" => Ok(Paging::Native),
            "tdp" | "ept" | "npt" => Ok(Paging::Tdp),
            "shadow" => Ok(Paging::Shadow),
            _ => Err(Error::config(
                "vm.paging",
                format!("unknown paging {s:?} (native, tdp, shadow)"),
            )),
        }
    }
}

/// Everything a VM run needs besides the workload.
#[derive(Clone, Debug)]
pub struct VmConfig {
    pub paging: Paging,
    /// The guest OS's memory manager: `frames` = guest memory for processes, in pages.
    pub guest: MachineConfig,
    pub guest_policy: PolicyKind,
    pub guest_options: PolicyOptions,
    /// The host's (tdp only): `frames` = host memory available to the VM, in pages.
    pub host: MachineConfig,
    pub host_policy: PolicyKind,
    pub host_options: PolicyOptions,
    pub translate: TranslateConfig,
    /// Guest (and native) page-table levels, 4 or 5.
    pub guest_levels: u8,
    /// EPT/NPT levels, 4 or 5.
    pub host_levels: u8,
    /// Guest page-table pages available (kernel memory beyond the guest's frames); 0 = one per
    /// 256 guest frames plus 64.
    pub pt_pages: u32,
    /// Shadow paging: how KVM recycles shadow pages, and `n_max_mmu_pages` (`None`: KVM's
    /// default, 2% of guest pages, at least 64).
    pub eviction: Eviction,
    pub mmu_pages: Option<u64>,
    /// The page size the guest maps its processes' memory with (4 KiB; 2 MiB as THP
    /// everywhere; 1 GiB as hugetlbfs, never reclaimed) and the one the host backs guest
    /// memory with (QEMU's mapping on THP or hugetlbfs; tdp and shadow only). See the
    /// module docs' "Large pages".
    pub guest_page: PageSize,
    pub host_page: PageSize,
    /// Swap devices with timing (`crate::device`: ssd, nvme, zram, remote) for the host's
    /// swap of guest memory and the guest's own swap. `None`: a major fault costs the flat
    /// `host_major_fault_ns` / `guest_major_fault_ns`. See the module docs' "Swap devices".
    pub host_swap: Option<crate::device::DeviceSpec>,
    pub guest_swap: Option<crate::device::DeviceSpec>,
    /// Whether the guest's swap device's own memory (zram's compressed pool) is taken from
    /// the guest's frames, as it is on a machine whose RAM is those frames (`zs_malloc`
    /// allocates from it). Native runs (`vmemsim run`) charge it unless the frames are a
    /// memory cgroup's limit (zsmalloc memory is not memcg-accounted). Default false: the
    /// VM layer has kept the pool outside guest memory so far.
    pub charge_device_ram: bool,
    /// Model address translation: the vCPUs' (natively: the CPUs') TLBs, page-walk caches
    /// and walks. Only native paging may leave it out (`false`): then every access reaches
    /// the memory manager and sets the accessed bit, as if each walked the page table, and
    /// costs `access_ns` alone; no TLB is kept or flushed. That is the timing engine's model
    /// of old and what `vmemsim run` does unless asked for TLBs (`--tlb`): several times
    /// faster, and under memory pressure, where reclaim's batched flushes empty the TLBs
    /// often, close to the TLB model's counts (docs/models.md).
    pub tlb: bool,
    pub costs: VmCosts,
}

impl VmConfig {
    /// A VM of `guest_frames` guest frames on a host of `host_frames`, with the defaults a
    /// user gets from `vmemsim vm`: clock-lru on both sides (seed 0), the default translation
    /// hardware and costs, 4-level tables, 4 KiB pages, page-table pages by the default rule,
    /// KVM's default pool recycled FIFO, flat swap costs.
    pub fn new(paging: Paging, guest_frames: u32, host_frames: u32) -> VmConfig {
        let clock = PolicyKind::from_name("clock-lru").expect("clock-lru is registered");
        VmConfig {
            paging,
            guest: MachineConfig::new(guest_frames),
            guest_policy: clock,
            guest_options: PolicyOptions::new(0),
            host: MachineConfig::new(host_frames),
            host_policy: clock,
            host_options: PolicyOptions::new(0),
            translate: TranslateConfig::default(),
            guest_levels: 4,
            host_levels: 4,
            pt_pages: 0,
            eviction: Eviction::Fifo,
            mmu_pages: None,
            guest_page: PageSize::K4,
            host_page: PageSize::K4,
            host_swap: None,
            guest_swap: None,
            charge_device_ram: false,
            tlb: true,
            costs: VmCosts::default(),
        }
    }
}

/// What a VM run counted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VmResult {
    pub paging: Option<Paging>,
    pub workload: String,
    pub guest_policy: String,
    pub host_policy: String,
    pub guest_frames: u32,
    pub host_frames: u32,
    /// Page sizes of the guest's mappings and of the host's backing.
    pub guest_page: Option<PageSize>,
    pub host_page: Option<PageSize>,
    /// The swap devices' counters (requests, queueing, busy time), when timed devices are set.
    pub guest_device: Option<crate::device::DeviceStats>,
    pub host_device: Option<crate::device::DeviceStats>,
    /// Guest memory manager's counters (its faults are guest page faults).
    pub guest: Stats,
    /// Host memory manager's counters (tdp; its faults on guest memory are EPT violations).
    pub host: Stats,
    /// The vCPUs' translation hardware, summed.
    pub translate: TranslateStats,
    /// The 2D walk grid of seed 002 (lookups and PWC hits per cell, NTLB skips per row),
    /// summed over vCPUs, and its cells classified by PWC hit ratio: "hit" ≥ 90%, "miss"
    /// ≤ 10%, "mixed" between (the talk gives no thresholds; these are ours), with the PWC
    /// misses each class accounts for.
    pub walk_grid: crate::translate::WalkGrid,
    pub walk_breakdown: crate::translate::WalkBreakdown,
    /// EPT violations / NPFs: the host had no entry for a gfn (data or guest page table).
    pub ept_violations: u64,
    /// Of those, for a guest page-table page met by a walk.
    pub ept_violations_pt: u64,
    /// VM exits: EPT violations (tdp); shadow page faults, guest page-table writes that
    /// trap, CR3 loads and INVLPGs (shadow).
    pub exits: u64,
    /// Shadow paging: exits by reason, and KVM's counters.
    pub exits_pf: u64,
    pub exits_pt_write: u64,
    pub exits_cr3: u64,
    pub exits_invlpg: u64,
    pub kvm: Option<crate::kvm::KvmStats>,
    /// Guest CR3 loads (process switches) and how many flushed the TLB.
    pub cr3_loads: u64,
    pub cr3_flushes: u64,
    /// TLB shootdowns: pages invalidated with INVLPG on running vCPUs, and deferred flushes.
    pub shootdown_pages: u64,
    pub deferred_flushes: u64,
    /// Full flushes of a process's TLB entries on a vCPU (natively: a CPU) running it, after
    /// a reclaim batch unmapped its pages (`try_to_unmap_flush` → `arch_tlbbatch_flush`).
    #[serde(default)]
    pub reclaim_flushes: u64,
    /// INVEPT-like flushes after host reclaim unmapped guest memory.
    pub nested_flushes: u64,
    /// CPU time of the host's kswapd (on the vCPUs' host CPUs with `HostCpus`, else on one
    /// of its own).
    pub host_kswapd_ns: u64,
    /// CPU time of the guest's kswapd, a thread on the guest's vCPUs (part of
    /// `time.reclaim_ns`).
    #[serde(default)]
    pub guest_kswapd_ns: u64,
    /// Shadow paging: calls of KVM's shrinker (`mmu_shrink_scan`, which zaps the oldest
    /// shadow pages) by host reclaim passes through `do_shrink_slab`, and the shadow pages
    /// they zapped.
    pub mmu_shrink_scans: u64,
    pub mmu_shrink_zapped: u64,
    pub processes_created: u64,
    pub processes_exited: u64,
    pub pages_unmapped: u64,
    /// Most guest page-table pages in use.
    pub pt_pages_peak: u64,
    /// Simulated time: when the last vCPU finished, and each vCPU's clock.
    pub runtime_ns: u64,
    pub vcpu_ns: Vec<u64>,
    /// Where the vCPUs' time went (ns, summed over vCPUs).
    pub time: VmTime,
    /// Request latency (arrival or start to end), when the workload has requests.
    pub latency: Option<crate::timed::hist::Summary>,
    /// `(highest equivalent value ns, count)`: the latency histogram.
    pub latency_buckets: Vec<(u64, u64)>,
    /// Request latency per request kind (`read`, `update`, `insert`, `all`), and the
    /// histograms, when the workload's requests have kinds (as `vmemsim run` reports them).
    #[serde(default)]
    pub latency_by_kind: BTreeMap<String, crate::timed::hist::Summary>,
    #[serde(default)]
    pub latency_by_kind_buckets: BTreeMap<String, Vec<(u64, u64)>>,
    /// Where CPU time went, in the timing engine's categories: the vCPUs' (native: the
    /// application threads') CPU time, their waits for swap reads, for a CPU and at
    /// barriers; the reclaim on them (`direct_reclaim_ns`: in a VM the guest's, its kswapd's
    /// included, and the host's direct reclaim); the host's (native: the machine's) kswapd;
    /// aging and rmap scanning of all reclaim the vCPUs and the native kswapd did; the swap
    /// devices' CPU time; context switches.
    #[serde(default)]
    pub cpu: crate::timed::CpuTimes,
    /// Per vCPU (native: per thread): CPU time, swap-read waits, when it finished, its
    /// accesses and major faults.
    #[serde(default)]
    pub threads: Vec<crate::timed::ThreadTimes>,
    /// The time slice of the engine's scheduler.
    #[serde(default)]
    pub slice_ns: u64,
    /// Most frames the guest's swap device held (zram's pool).
    #[serde(default)]
    pub device_frames_peak: u64,
    /// The guest (native: the machine's) policy's own counters.
    #[serde(default)]
    pub policy_counters: BTreeMap<String, u64>,
    /// Samples of the guest's (native: the machine's) counters every `sample_every_ns` of
    /// simulated time ([`EngineOpts`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<crate::timed::Sample>,
    /// KVM's handler work as folded stacks weighted in ns (`flamegraph.pl` / inferno
    /// input), shadow paging only; with several VMs each stack starts with `vmN`.
    pub kvm_folded: String,
    /// Several VMs on one host ([`run_many`]): each VM's own result (its `host` is the shared
    /// host's). The fields above are then the sums over the VMs (counters, time categories,
    /// guest memory), the latest vCPU clock (`runtime_ns`), all vCPUs' clocks, all requests'
    /// latency, and the shared host's counters and memory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_vm: Vec<VmResult>,
}

/// Where simulated time went, in ns summed over vCPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VmTime {
    pub translation_ns: u64,
    pub guest_fault_ns: u64,
    pub host_fault_ns: u64,
    pub exit_ns: u64,
    pub kvm_ns: u64,
    pub tlb_flush_ns: u64,
    /// Reclaim's work on the vCPUs: all of the guest's (its kswapd is a thread on its
    /// vCPUs: `guest_kswapd_ns`) and the host's direct reclaim.
    pub reclaim_ns: u64,
    pub compute_ns: u64,
    pub idle_ns: u64,
    /// Runnable but waiting for a host CPU (with `HostCpus`: steal time, as the guest's
    /// `steal` in /proc/stat counts it).
    pub steal_ns: u64,
}

/// Costs of the VM's events. Defaults are estimates unless a source is named.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VmCosts {
    /// Converts translation cycles to ns (3 GHz).
    pub cpu_ghz: f64,
    /// CPU time of an access besides its translation.
    pub access_ns: u64,
    /// A guest minor fault (first touch, swap-cache hit): ~1 µs (KERNEL-FACTS).
    pub guest_minor_fault_ns: u64,
    /// A guest major fault without a timed swap device: a swap-in from the guest's virtual
    /// disk (estimate: 100 µs, an NVMe read plus virtio overhead).
    pub guest_major_fault_ns: u64,
    /// A host fault on guest memory, minor and major (estimates as for the guest).
    pub host_minor_fault_ns: u64,
    pub host_major_fault_ns: u64,
    /// A major fault's CPU work besides the device when a timed swap device serves it, on
    /// either side (`do_swap_page`: swap-cache lookup, allocation, readahead set-up,
    /// mapping): the timing engine's estimate, 3 µs (see `timed::Costs`).
    pub major_fault_ns: u64,
    /// Waking the native machine's kswapd (`wakeup_kswapd`, charged to the waker): the
    /// timing engine's estimate, 1 µs.
    pub wakeup_ns: u64,
    /// A VM exit and re-entry, without the handler's work: 1,300–2,600 cycles measured on
    /// SVM (KERNEL-FACTS); 2,000 cycles at 3 GHz.
    pub exit_ns: u64,
    /// KVM handler work per unit of each [`crate::kvm::Work`] kind: call, guest PTE read,
    /// guest PTE written, SPTE, hash probe, shadow page allocated, freed, clock hand step.
    pub kvm_work_ns: [f64; crate::kvm::WORK_KINDS],
    /// An INVLPG and a CR3 load (the refills they cause are counted as walks).
    pub invlpg_ns: u64,
    pub cr3_ns: u64,
    /// Clearing one more 4 KiB of a large page at its first-touch fault (`clear_huge_page`):
    /// 300 ns per 4 KiB, ~13.6 GB/s (estimate).
    pub clear_page_ns: u64,
    /// Reading or writing one more 4 KiB of a large page at a swap-in (estimate: 1 µs, a
    /// sequential NVMe transfer at ~4 GB/s).
    pub swap_page_ns: u64,
    /// Reclaim's work per page scanned and per page reclaimed: the timing engine's estimates
    /// (`scan_page_ns` 300, `reclaim_page_ns` 2,000; see `timed::Costs`).
    pub scan_page_ns: u64,
    pub reclaim_page_ns: u64,
    /// MG-LRU aging's work per PTE and per PMD entry its page-table walks visit and per PTE
    /// look-around reads ([`crate::policy::ScanWork`]): the timing engine's estimates
    /// (5, 20 and 5 ns; see `timed::Costs`). Charged for the guest's policy.
    pub walk_pte_ns: u64,
    pub walk_pmd_ns: u64,
    pub lookaround_pte_ns: u64,
    /// A host CPU changing thread (with `HostCpus`): the timing engine's estimate, 1.5 µs
    /// (see `timed::Costs`).
    pub context_switch_ns: u64,
}

impl VmCosts {
    /// Values that would make time meaningless: `cpu_ghz` must be a positive, finite clock
    /// rate (it divides cycle counts), each `kvm_work_ns` finite and not negative.
    pub fn check(&self) -> Result<()> {
        if !(self.cpu_ghz.is_finite() && self.cpu_ghz > 0.0) {
            return Err(Error::config(
                "costs.cpu_ghz",
                format!("{} is not a clock rate in GHz (above 0)", self.cpu_ghz),
            ));
        }
        if let Some(w) = self
            .kvm_work_ns
            .iter()
            .find(|w| !(w.is_finite() && **w >= 0.0))
        {
            return Err(Error::config(
                "costs.kvm_work_ns",
                format!("{w} is not a time in ns (0 or more)"),
            ));
        }
        Ok(())
    }
}

impl Default for VmCosts {
    fn default() -> Self {
        VmCosts {
            cpu_ghz: 3.0,
            access_ns: 1,
            guest_minor_fault_ns: 1_000,
            guest_major_fault_ns: 100_000,
            host_minor_fault_ns: 1_000,
            host_major_fault_ns: 100_000,
            major_fault_ns: 3_000,
            wakeup_ns: 1_000,
            exit_ns: 667,
            kvm_work_ns: [40.0, 20.0, 20.0, 5.0, 10.0, 150.0, 100.0, 3.0],
            invlpg_ns: 100,
            cr3_ns: 50,
            clear_page_ns: 300,
            swap_page_ns: 1_000,
            scan_page_ns: 300,
            reclaim_page_ns: 2_000,
            walk_pte_ns: 5,
            walk_pmd_ns: 20,
            lookaround_pte_ns: 5,
            context_switch_ns: 1_500,
        }
    }
}

/// The counters an op's cost is computed from ([`Vm::charge`] takes two snapshots' difference).
#[derive(Clone, Copy, Debug, Default)]
struct Work {
    /// Translation cycles.
    tcycles: u64,
    guest_minor: u64,
    guest_major: u64,
    host_minor: u64,
    host_major: u64,
    exits: u64,
    shootdown_pages: u64,
    cr3_loads: u64,
    reclaim_flushes: u64,
    guest_first_touch: u64,
    host_first_touch: u64,
    /// The guest's pages scanned and stolen (kswapd's and direct reclaim's).
    guest_scanned: u64,
    guest_stolen: u64,
    /// The host's direct reclaim (on the faulting vCPU); its kswapd's is charged elsewhere.
    host_scanned_direct: u64,
    host_stolen_direct: u64,
    /// The guest policy's page-table scanning (MG-LRU aging).
    guest_scan: crate::policy::ScanWork,
}

impl VmResult {
    /// Memory references per TLB miss (walk references / walks).
    pub fn refs_per_walk(&self) -> f64 {
        if self.translate.walks == 0 {
            0.0
        } else {
            self.translate.walk_refs as f64 / self.translate.walks as f64
        }
    }
}

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

/// A timed swap device fed with a memory manager's logged swap I/O (as the timing engine's
/// `do_io`): each request is submitted at the simulated time of the op that caused it.
impl Vcpu {
    /// Its MMU, on the paths that translate (guests, or natively with the TLB model).
    fn mmu(&mut self) -> &mut Mmu {
        self.mmu
            .as_mut()
            .expect("translation is modelled on this path")
    }
}

struct SwapDev {
    dev: Box<dyn crate::device::SwapDevice>,
    /// 4 KiB pages per swap slot (a large page is swapped whole).
    per_slot: u32,
    io: Vec<crate::mm::SwapIo>,
    classes: Vec<crate::device::ContentClass>,
}

impl SwapDev {
    fn new(spec: &crate::device::DeviceSpec, shift: u32) -> Result<SwapDev> {
        Ok(SwapDev {
            dev: crate::device::build(spec)?,
            per_slot: 1 << shift,
            io: Vec::new(),
            classes: Vec::new(),
        })
    }

    /// Submit what `m` logged at `now`: the submitting CPU's time (zram's compression and
    /// decompression, a block device's submission path) and when the last read completes
    /// (0: no read). A page's content is `class(key, i)` for the `i`th 4 KiB of `m`'s page
    /// `key` (a slot no page owns any more: `Random`).
    fn run(
        &mut self,
        m: &mut Machine<BoxedPolicy>,
        now: u64,
        class: &dyn Fn(u64, u32) -> ContentClass,
    ) -> (u64, u64) {
        use crate::device::IoKind;
        use crate::mm::SwapIo;
        if !m.mm.swap.device.has_log() {
            return (0, 0);
        }
        m.mm.swap.device.take_log(&mut self.io);
        let mut cpu = 0u64;
        let mut done = 0u64;
        for &x in &self.io {
            let t = now + cpu;
            let (kind, slot, n) = match x {
                SwapIo::Read { slot, n } => (IoKind::Read, slot, n),
                SwapIo::Write { slot } => (IoKind::Write, slot, 1),
                SwapIo::Discard { slot } => {
                    self.dev
                        .discard(slot as u64 * self.per_slot as u64, self.per_slot);
                    continue;
                }
            };
            self.classes.clear();
            if !self.dev.reads_content() {
                // (a block device only counts the pages)
                let pages = n as usize * self.per_slot as usize;
                self.classes.resize(pages, ContentClass::Random);
            } else {
                for s in slot..slot + n {
                    match m.mm.swap.owner(s) {
                        Some(pte) => {
                            let key = m.mm.pt.vpn_of(pte);
                            self.classes
                                .extend((0..self.per_slot).map(|i| class(key, i)));
                        }
                        None => self
                            .classes
                            .extend((0..self.per_slot).map(|_| ContentClass::Random)),
                    }
                }
            }
            let c = self
                .dev
                .submit(t, kind, slot as u64 * self.per_slot as u64, &self.classes);
            cpu += c.cpu_ns;
            if kind == IoKind::Read {
                done = done.max(c.done_at);
                // The pages stay locked (unreclaimable) until the read completes.
                m.mm.lock_for_read(slot, n, c.done_at);
            }
        }
        (cpu, done)
    }
}

/// The host's memory manager, shared by the VMs on it: each VM's guest memory is a range of
/// host pages (QEMU's anonymous mapping of that VM), VM `i`'s from `bases[i]` on. Reclaim
/// while one VM runs may take another's pages; those wait in `pending` until that VM runs
/// again (it applies them to its EPT or shadow MMU before its next access: no VM runs while
/// another one's op is simulated). KVM's shrinker counts the shadow pages of every VM and
/// zaps in one VM per call, rotating (`mmu_shrink_scan` moves the VM it shrank to the tail
/// of `vm_list`).
pub struct HostShared {
    m: Machine<BoxedPolicy>,
    /// The host's timed swap device, if any.
    dev: Option<SwapDev>,
    bases: Vec<u64>,
    /// Per VM: its host pages (relative to its base) reclaimed and not yet applied.
    pending: Vec<Vec<u64>>,
    /// Per VM: batches KVM's shrinker is to zap in it, not yet applied.
    pending_zap: Vec<Vec<u64>>,
    /// Per VM: its shadow pages in use, as of its last op (`count_objects` sums them).
    n_used: Vec<u64>,
    shrink_deferred: u64,
    next_shrink: usize,
    scratch: Vec<u64>,
    passes: Vec<u8>,
}

impl HostShared {
    /// Route the host's reclaim unmaps to the VMs owning the pages, and run KVM's shrinker for
    /// each reclaim pass.
    fn distribute(&mut self) {
        let mut log = std::mem::take(&mut self.scratch);
        log.clear();
        if let Some(l) = self.m.unmap_log.as_mut() {
            log.append(l);
        }
        for &key in &log {
            let owner = self.bases.partition_point(|&b| b <= key) - 1;
            self.pending[owner].push(key - self.bases[owner]);
        }
        self.scratch = log;
        let mut passes = std::mem::take(&mut self.passes);
        passes.clear();
        if let Some(l) = self.m.shrink_log.as_mut() {
            passes.append(l);
        }
        let mut plan = Vec::new();
        for &priority in &passes {
            let freeable: u64 = self.n_used.iter().sum();
            self.shrink_deferred = shrink_slab_plan(
                freeable,
                self.shrink_deferred,
                priority as u32,
                MMU_SHRINKER_SEEKS,
                SHRINK_BATCH,
                &mut plan,
            );
            for &n in &plan {
                let k = self.n_used.len();
                let Some(vm) = (0..k)
                    .map(|d| (self.next_shrink + d) % k)
                    .find(|&v| self.n_used[v] > 0)
                else {
                    break;
                };
                self.pending_zap[vm].push(n);
                self.n_used[vm] = self.n_used[vm].saturating_sub(n);
                self.next_shrink = (vm + 1) % k;
            }
        }
        self.passes = passes;
    }

    /// The host's memory manager (its counters, its invariants).
    pub fn machine(&self) -> &Machine<BoxedPolicy> {
        &self.m
    }
}

/// One VM's side of the host: its range of the shared host memory and, under TDP, its EPT.
struct HostSide {
    shared: std::rc::Rc<std::cell::RefCell<HostShared>>,
    vm: usize,
    /// The host page backing the VM's gfn 0.
    base: u64,
    ept: Option<RadixTable>,
    /// Next EPT table frame (host kernel memory beyond host RAM).
    ept_next_frame: u64,
    /// log2 of 4 KiB pages per host page: host page `base + (gfn >> shift)` backs guest
    /// frame `gfn`.
    shift: u32,
}

/// Error when a memory manager reclaimed a 1 GiB page: those are hugetlbfs pages, which
/// Linux never reclaims (`key` is `vm.guest_page` or `vm.host_page`).
fn hugetlb_reclaimed(key: &str, side: &str) -> Error {
    Error::config(
        key,
        format!(
            "1 GiB pages are hugetlbfs pages, which Linux never reclaims, but the {side} ran \
             out of them: give the {side} memory for the whole footprint, or use 2m pages"
        ),
    )
}

impl HostSide {
    /// The host serves guest page `gfn` (and the EPT maps it). Returns whether the host had
    /// no mapping for it (an EPT violation under TDP; a host fault under shadow paging).
    fn touch(&mut self, gfn: u64, write: bool) -> Result<bool> {
        let rel = gfn >> self.shift;
        let key = self.base + rel;
        let mut sh = self.shared.borrow_mut();
        let absent = match &self.ept {
            Some(ept) => ept.lookup(gfn << 12).is_none(),
            None => sh.m.mm.pt.pte(key) & PTE_PRESENT == 0,
        };
        let evictions = sh.m.stats.evictions;
        sh.m.access(
            Access {
                page: key,
                write,
                gup: false,
            },
            u64::MAX,
        );
        if let Some(t) = sh.m.out_of_memory() {
            return Err(Error::config(
                "vm.host_frames",
                format!("host out of memory at its access {t}: give the host more frames"),
            ));
        }
        if self.shift == 18 && sh.m.stats.evictions != evictions {
            return Err(hugetlb_reclaimed("vm.host_page", "host"));
        }
        let pte = sh.m.mm.pt.pte(key);
        if pte & PTE_PRESENT == 0 {
            return Err(Error::config(
                "vm.host_frames",
                format!("gfn {gfn} not present on the host after its fault"),
            ));
        }
        sh.distribute();
        drop(sh);
        if let Some(ept) = self.ept.as_mut() {
            let base = (rel << self.shift) << 12;
            let hpa = ((crate::mm::pte_frame(pte) as u64) << self.shift) << 12;
            let size = PageSize::ALL[(self.shift / 9) as usize];
            let next = &mut self.ept_next_frame;
            let mut alloc = || {
                let f = *next;
                *next += 1;
                Some(f)
            };
            let mapped = ept.lookup(base).map(|(pa, _, _)| pa);
            if mapped != Some(hpa) {
                if mapped.is_some() {
                    ept.unmap(base, &mut |_| {});
                }
                ept.map(base, hpa, size, PTE_W, &mut alloc)?;
            }
        }
        Ok(absent)
    }

    /// The VM's host pages (`gfn >> shift`) host reclaim unmapped since the last call (the
    /// EPT entries are dropped here), and the shrinker's batches to zap.
    fn take_unmaps(&mut self, out: &mut Vec<u64>, zaps: &mut Vec<u64>) {
        out.clear();
        zaps.clear();
        {
            let mut sh = self.shared.borrow_mut();
            out.append(&mut sh.pending[self.vm]);
            zaps.append(&mut sh.pending_zap[self.vm]);
        }
        if let Some(ept) = self.ept.as_mut() {
            for &rel in out.iter() {
                ept.unmap((rel << self.shift) << 12, &mut |_| {});
            }
        }
    }

    fn present(&self, gfn: u64) -> bool {
        self.shared
            .borrow()
            .m
            .mm
            .pt
            .pte(self.base + (gfn >> self.shift))
            & PTE_PRESENT
            != 0
    }
}

/// The guest as KVM sees it: its page tables through guest memory, and the host backing.
struct GuestView<'a> {
    procs: &'a mut [Option<RadixTable>],
    pt_owner: &'a [u32],
    pt_base: u64,
    host: &'a mut HostSide,
    err: Option<Error>,
}

impl GuestView<'_> {
    fn table(&self, gfn: u64) -> Option<&RadixTable> {
        let pid = *self.pt_owner.get(gfn.checked_sub(self.pt_base)? as usize)?;
        self.procs.get(pid as usize)?.as_ref()
    }
}

impl GuestMemory for GuestView<'_> {
    fn read_gpte(&self, table_gfn: u64, index: usize) -> GuestPte {
        GuestPte(
            self.table(table_gfn)
                .and_then(|t| t.entry_arch(table_gfn, index))
                .unwrap_or(0),
        )
    }
    fn write_gpte(&mut self, table_gfn: u64, index: usize, pte: GuestPte) {
        // KVM writes only the accessed and dirty bits; the guest's own stores were applied
        // by the guest before the VM layer reported them.
        let Some(off) = table_gfn.checked_sub(self.pt_base) else {
            return;
        };
        let Some(&pid) = self.pt_owner.get(off as usize) else {
            return;
        };
        if let Some(Some(t)) = self.procs.get_mut(pid as usize) {
            t.set_ad(table_gfn, index, pte.0 & (PTE_A | PTE_D));
        }
    }
    fn faultin_pfn(&mut self, gfn: u64, write: bool) -> u8 {
        if let Err(e) = self.host.touch(gfn, write) {
            self.err.get_or_insert(e);
        }
        // `host_pfn_mapping_level`: the level the host maps the page at.
        1 + (self.host.shift / 9) as u8
    }
    fn host_present(&self, gfn: u64) -> bool {
        self.host.present(gfn)
    }
}

/// The shadow tables as the hardware walker sees them.
struct ShadowWalker<'a> {
    kvm: &'a mut ShadowMmu,
    vcpu: usize,
    levels: u8,
    /// The walk found no root: the VM layer reloads it (`kvm_mmu_reload`).
    no_root: bool,
}

/// Where the shadow tables' entries are placed in the page-table line cache: each shadow
/// table of a level gets its own 4 KiB page, keyed by the address bits above it.
const SHADOW_PT_BASE: u64 = 1 << 50;

impl Walkable for ShadowWalker<'_> {
    fn levels(&self) -> u8 {
        self.levels
    }
    fn walk(&mut self, va: u64, write: bool, path: &mut WalkPath) -> WalkEnd {
        let out = self.kvm.translate(self.vcpu, va, write, true);
        let refs = match out {
            ShadowWalk::Hit { refs, .. } | ShadowWalk::Fault { refs } => refs,
            ShadowWalk::NoRoot => 0,
        };
        path.len = refs.min(5);
        for i in 0..path.len as usize {
            let level = (self.levels - i as u8) as u32;
            let table = va >> (12 + 9 * level);
            let idx = (va >> (12 + 9 * (level - 1))) & 511;
            path.entry_pa[i] = SHADOW_PT_BASE + (((level as u64) << 40) | (table << 12)) + idx * 8;
        }
        match out {
            ShadowWalk::Hit {
                gfn,
                level,
                writable,
                ..
            } => WalkEnd::Leaf {
                base: (gfn << 12)
                    & !(PageSize::from_level(level).unwrap_or(PageSize::K4).bytes() - 1),
                size: PageSize::from_level(level).unwrap_or(PageSize::K4),
                writable,
                global: false,
            },
            ShadowWalk::Fault { refs } => WalkEnd::NotPresent {
                level: self.levels + 1 - refs.max(1),
            },
            ShadowWalk::NoRoot => {
                self.no_root = true;
                WalkEnd::NotPresent { level: self.levels }
            }
        }
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
    r: VmResult,
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
    costs: VmCosts,
    /// The guest's timed swap device, if any, and whether the host has one.
    guest_dev: Option<SwapDev>,
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
    /// Request latency per request kind (all kinds: [`Vm::latency_histogram`]).
    hists: BTreeMap<u8, crate::timed::hist::Histogram>,
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
}

/// (pid, first vpn) of a guest manager page number, given the regions' keys by slot.
fn unkey_in(region_back: &[u64], gshift: u32, key: u64) -> (u32, u64) {
    let per = REGION_SHIFT - gshift;
    let rk = region_back[(key >> per) as usize];
    let pid = (rk >> REGION_SHIFT) as u32;
    let vpn = ((rk & REGION_MASK) << REGION_SHIFT) | ((key & ((1 << per) - 1)) << gshift);
    (pid, vpn)
}

/// How a page's content compresses, by (pid, vpn): [`Workload::content_class`].
pub type Classes<'a> = &'a dyn Fn(u32, u64) -> ContentClass;

/// Every page as numeric data (what a VM used directly, without its workload, assumes).
fn numeric(_pid: u32, _vpn: u64) -> ContentClass {
    ContentClass::Numeric
}

type ByKind = BTreeMap<String, crate::timed::hist::Summary>;
type ByKindBuckets = BTreeMap<String, Vec<(u64, u64)>>;

/// Latency summaries and histograms per request kind, with `all` when any.
fn by_kind(hists: &BTreeMap<u8, crate::timed::hist::Histogram>) -> (ByKind, ByKindBuckets) {
    let mut latency = BTreeMap::new();
    let mut buckets = BTreeMap::new();
    let mut all = crate::timed::hist::Histogram::new();
    for (k, h) in hists {
        let name = match *k {
            crate::workload::REQ_READ => "read".to_string(),
            crate::workload::REQ_UPDATE => "update".to_string(),
            crate::workload::REQ_INSERT => "insert".to_string(),
            other => format!("kind{other}"),
        };
        latency.insert(name.clone(), h.summary());
        buckets.insert(name, h.buckets());
        all.merge(h);
    }
    if all.count() > 0 {
        latency.insert("all".into(), all.summary());
        buckets.insert("all".into(), all.buckets());
    }
    (latency, buckets)
}

fn pcid(pid: u32) -> u16 {
    // PCID 0 is the host's/kernel's; processes take 1.. (4095 at most: wraps, as Linux
    // recycles its 6 dynamic ASIDs; a model detail that only matters beyond 4095 pids).
    (pid % 4095 + 1) as u16
}

const VPID: u16 = 1;
const HOST_PCID: u16 = 0;
const FREE_PT: u32 = u32::MAX;

/// Frames of a memory manager of `2^shift`-page pages: `frames` must be a whole number of
/// them.
fn units(key: &str, frames: u32, shift: u32, what: &str) -> Result<u32> {
    if frames == 0 || !frames.is_multiple_of(1 << shift) {
        return Err(Error::config(
            key,
            format!(
                "{what} of {frames} 4 KiB frames is not a whole number of {:?} pages \
                 ({} frames each)",
                PageSize::ALL[(shift / 9) as usize],
                1u64 << shift
            ),
        ));
    }
    Ok(frames >> shift)
}

/// Zone watermarks are 4 KiB page counts: a manager of large pages reclaims when its free
/// large pages hold fewer 4 KiB pages than the watermark. hugetlbfs pages (1 GiB) are a pool
/// outside the zones' watermarks.
fn unit_marks(c: &MachineConfig, shift: u32) -> Option<crate::watermarks::Watermarks> {
    if shift == 0 {
        return c.watermarks;
    }
    let w = c
        .watermarks
        .unwrap_or_else(|| crate::watermarks::Watermarks::derive(c.frames));
    let units = c.frames >> shift;
    let conv = |x: u32| {
        if shift >= 18 {
            0
        } else {
            x.div_ceil(1 << shift).min(units.saturating_sub(1) / 2)
        }
    };
    Some(crate::watermarks::Watermarks {
        min: conv(w.min),
        low: conv(w.low),
        high: conv(w.high),
    })
}

/// Guest page-table pages of a VM (kernel memory beyond its frames).
fn pt_pages_of(cfg: &VmConfig) -> u64 {
    if cfg.pt_pages == 0 {
        cfg.guest.frames as u64 / 256 + 64
    } else {
        cfg.pt_pages as u64
    }
}

/// The host of `cfgs` (one per VM; the host's memory, policy and page size are the first
/// one's): its memory manager, with each VM's guest memory and page tables as a range of
/// host pages.
pub fn host_for(cfgs: &[&VmConfig]) -> Result<std::rc::Rc<std::cell::RefCell<HostShared>>> {
    let cfg = cfgs
        .first()
        .ok_or_else(|| Error::config("vm", "no VM to host"))?;
    let hshift = cfg.host_page.shift() - 12;
    for c in cfgs {
        if c.host_page != cfg.host_page {
            return Err(Error::config(
                "vm.host_page",
                "the VMs on one host must use the same host page size",
            ));
        }
    }
    let mut host_cfg = cfg.host.clone();
    host_cfg.frames = units("vm.host_frames", cfg.host.frames, hshift, "host memory")?;
    host_cfg.watermarks = unit_marks(&cfg.host, hshift);
    // zram is SWP_SYNCHRONOUS_IO: swap-ins skip the swap cache and readahead (`do_swap_page`).
    host_cfg.swap_sync_io |= cfg.host_swap.as_ref().is_some_and(|d| d.kind() == "zram");
    let p = cfg
        .host_policy
        .build(host_cfg.frames, &cfg.host_options, Boxer)?;
    let mut m = Machine::new(&host_cfg, p)?;
    m.unmap_log = Some(Vec::new());
    if cfgs.iter().any(|c| c.paging == Paging::Shadow) {
        m.shrink_log = Some(Vec::new());
    }
    let mut bases = Vec::with_capacity(cfgs.len());
    let mut next = 0u64;
    for c in cfgs {
        bases.push(next);
        next += (c.guest.frames as u64 + pt_pages_of(c)).div_ceil(1 << hshift);
    }
    let n = cfgs.len();
    Ok(std::rc::Rc::new(std::cell::RefCell::new(HostShared {
        dev: match &cfg.host_swap {
            Some(spec) => {
                m.mm.swap.device.log_on = true;
                Some(SwapDev::new(spec, hshift)?)
            }
            None => None,
        },
        m,
        bases,
        pending: vec![Vec::new(); n],
        pending_zap: vec![Vec::new(); n],
        n_used: vec![0; n],
        shrink_deferred: 0,
        next_shrink: 0,
        scratch: Vec::new(),
        passes: Vec::new(),
    })))
}

impl Vm {
    pub fn new(cfg: &VmConfig, vcpus: usize) -> Result<Vm> {
        let host = match cfg.paging {
            Paging::Native => None,
            _ => Some((host_for(&[cfg])?, 0)),
        };
        Vm::on_host(cfg, vcpus, host)
    }

    /// A VM on a host shared with other VMs (`host`: the host and this VM's index in it, as
    /// [`host_for`] built it); `None` for native paging.
    pub fn on_host(
        cfg: &VmConfig,
        vcpus: usize,
        host: Option<(std::rc::Rc<std::cell::RefCell<HostShared>>, usize)>,
    ) -> Result<Vm> {
        if vcpus == 0 {
            return Err(Error::config("vm.vcpus", "must be at least 1"));
        }
        cfg.costs.check()?;
        if !cfg.tlb && cfg.paging != Paging::Native {
            return Err(Error::config(
                "vm.tlb",
                "only native paging can leave address translation out",
            ));
        }
        if (cfg.paging == Paging::Native) != host.is_none() {
            return Err(Error::config(
                "vm.paging",
                "a native run has no host; a VM needs one",
            ));
        }
        let gshift = cfg.guest_page.shift() - 12;
        let hshift = cfg.host_page.shift() - 12;
        let mut guest_cfg = cfg.guest.clone();
        guest_cfg.frames = units("vm.guest_frames", cfg.guest.frames, gshift, "guest memory")?;
        guest_cfg.watermarks = unit_marks(&cfg.guest, gshift);
        guest_cfg.swap_sync_io |= cfg.guest_swap.as_ref().is_some_and(|d| d.kind() == "zram");
        let guest_policy = cfg
            .guest_policy
            .build(guest_cfg.frames, &cfg.guest_options, Boxer)?;
        let mut guest = Machine::new(&guest_cfg, guest_policy)?;
        // Without translation no hardware table maps a page: reclaim's unmaps need no sync.
        guest.unmap_log = cfg.tlb.then(Vec::new);
        guest.mm.swap.device.log_on = cfg.guest_swap.is_some();
        let guest_frames = cfg.guest.frames;
        let pt_pages = pt_pages_of(cfg);
        let pt_base = guest_frames as u64;
        let mut pt_free: Vec<u64> = (pt_base..pt_base + pt_pages).rev().collect();
        let mut pt_owner = vec![FREE_PT; pt_pages as usize];
        let host = match host {
            None => None,
            Some((shared, vm)) => {
                let base = *shared.borrow().bases.get(vm).ok_or_else(|| {
                    Error::config("vm", format!("VM {vm} is not one of its host's"))
                })?;
                // EPT tables live beyond host RAM, each VM's in a range of its own.
                let root = cfg.host.frames as u64 + ((vm as u64) << 24);
                let ept = if cfg.paging == Paging::Tdp {
                    Some(RadixTable::new(cfg.host_levels, root)?)
                } else {
                    None
                };
                Some(HostSide {
                    shared,
                    vm,
                    base,
                    ept,
                    ept_next_frame: root + 1,
                    shift: hshift,
                })
            }
        };
        let host_dev = host
            .as_ref()
            .is_some_and(|h| h.shared.borrow().dev.is_some());
        let shares_host = host
            .as_ref()
            .is_some_and(|h| h.shared.borrow().bases.len() > 1);
        let kvm = if cfg.paging == Paging::Shadow {
            Some(ShadowMmu::new(ShadowMmuConfig {
                guest_pages: pt_base + pt_pages,
                n_max_mmu_pages: cfg.mmu_pages,
                levels: cfg.guest_levels,
                vcpus,
                eviction: cfg.eviction,
                pcide: cfg.translate.pcid,
                prefetch: true,
            })?)
        } else {
            None
        };
        let root = pt_free
            .pop()
            .ok_or_else(|| Error::config("vm.pt_pages", "no page for process 0's table"))?;
        pt_owner[(root - pt_base) as usize] = 0;
        let mut t0 = RadixTable::new(cfg.guest_levels, root)?;
        if kvm.is_some() {
            t0.log = Some(Vec::new());
        }
        let mut v = Vec::with_capacity(vcpus);
        for _ in 0..vcpus {
            // Natively without the TLB model no CPU translates: no TLB to fill or flush.
            let mmu = if cfg.tlb || cfg.paging != Paging::Native {
                let mut mmu = Mmu::new(&cfg.translate)?;
                if cfg.paging == Paging::Native {
                    mmu.load_cr3(pcid(0), true);
                } else {
                    mmu.vm_entry(VPID, pcid(0))?;
                }
                Some(mmu)
            } else {
                None
            };
            v.push(Vcpu {
                mmu,
                pid: 0,
                clock: 0,
                epoch: 0,
                arrival: None,
                req_start: None,
                seen_gen: vec![0],
                io_wait: 0,
                req_kind: 0,
                accesses: 0,
                writes: 0,
                major_faults: 0,
            });
        }
        let r = VmResult {
            paging: Some(cfg.paging),
            guest_policy: cfg.guest_policy.name().to_string(),
            host_policy: match cfg.paging {
                Paging::Native => String::new(),
                _ => cfg.host_policy.name().to_string(),
            },
            guest_frames,
            host_frames: if cfg.paging == Paging::Native {
                0
            } else {
                cfg.host.frames
            },
            guest_page: Some(cfg.guest_page),
            host_page: (cfg.paging != Paging::Native).then_some(cfg.host_page),
            processes_created: 1,
            ..VmResult::default()
        };
        let mut vm = Vm {
            paging: cfg.paging,
            guest,
            host,
            kvm,
            procs: vec![Some(t0)],
            touched: vec![Vec::new()],
            tlb_gen: vec![0],
            pt_free,
            pt_base,
            pt_total: pt_pages,
            pt_owner,
            vcpus: v,
            r,
            guest_frames,
            gshift,
            levels: cfg.guest_levels,
            host_unmaps: Vec::new(),
            unmapped: Vec::new(),
            log_buf: Vec::new(),
            regions: std::collections::HashMap::new(),
            region_back: Vec::new(),
            region_cache: vec![(u64::MAX, 0); vcpus],
            costs: cfg.costs.clone(),
            shrink_plan: Vec::new(),
            op_c0: 0,
            snap: None,
            shares_host,
            host_dev,
            guest_dev: match &cfg.guest_swap {
                Some(spec) => Some(SwapDev::new(spec, gshift)?),
                None => None,
            },
            tcycles: 0,
            kvm_charged: 0.0,
            hists: BTreeMap::new(),
            cpu: crate::timed::CpuTimes::default(),
            tlb: cfg.tlb,
            last_work: Work::default(),
            last_valid: false,
            pool_charged: cfg.charge_device_ram
                && cfg.guest_swap.as_ref().is_some_and(|d| d.kind() == "zram"),
            kswapd_hold: 0,
            pool_seen: 0,
            device_frames_peak: 0,
        };
        for c in 0..vcpus {
            vm.kvm_cr3(c, 0, true, false)?;
        }
        Ok(vm)
    }

    /// The guest manager's page number for page `vpn` of `pid`, giving its region a slot if
    /// it has none (`v` is the vCPU whose cache to use).
    #[inline]
    fn key(&mut self, v: usize, pid: u32, vpn: u64) -> Result<u64> {
        let rk = ((pid as u64) << REGION_SHIFT) | (vpn >> REGION_SHIFT);
        let (ck, cs) = self.region_cache[v];
        let slot = if ck == rk {
            cs
        } else {
            self.region_slot(v, rk)?
        };
        Ok(((slot as u64) << (REGION_SHIFT - self.gshift)) | ((vpn & REGION_MASK) >> self.gshift))
    }

    /// The slot of region `rk`, given one if it has none, cached for vCPU `v`.
    #[cold]
    #[inline(never)]
    fn region_slot(&mut self, v: usize, rk: u64) -> Result<u32> {
        let slot = match self.regions.get(&rk) {
            Some(&s) => s,
            None => {
                if self.region_back.len() >= MAX_REGIONS {
                    return Err(Error::config(
                        "workload",
                        format!(
                            "more than {MAX_REGIONS} GiB-regions of guest address space in use"
                        ),
                    ));
                }
                let s = self.region_back.len() as u32;
                self.region_back.push(rk);
                self.regions.insert(rk, s);
                s
            }
        };
        self.region_cache[v] = (rk, slot);
        Ok(slot)
    }

    /// The guest manager's page number for `vpn` of `pid` if its region has a slot.
    fn key_if_any(&self, pid: u32, vpn: u64) -> Option<u64> {
        let rk = ((pid as u64) << REGION_SHIFT) | (vpn >> REGION_SHIFT);
        let slot = *self.regions.get(&rk)?;
        Some(((slot as u64) << (REGION_SHIFT - self.gshift)) | ((vpn & REGION_MASK) >> self.gshift))
    }

    /// (pid, first vpn) of a guest manager page number.
    fn unkey(&self, key: u64) -> (u32, u64) {
        unkey_in(&self.region_back, self.gshift, key)
    }

    fn proc_table(&mut self, pid: u32) -> Result<&mut RadixTable> {
        self.procs
            .get_mut(pid as usize)
            .and_then(|p| p.as_mut())
            .ok_or_else(|| Error::config("workload", format!("process {pid} does not exist")))
    }

    /// Natively, page-table pages come from the machine's memory as a mapping needs them
    /// (`__pte_alloc` and the levels above): there is no guest budget of them, so the pool
    /// grows, 64 pages at a time, whenever fewer than a mapping may need (one per level)
    /// are free. Like a guest's, they are not charged to the frames.
    fn grow_native_pt(&mut self) {
        if self.paging != Paging::Native || self.pt_free.len() > self.levels as usize {
            return;
        }
        let end = self.pt_base + self.pt_total;
        self.pt_free.extend((end..end + 64).rev());
        self.pt_owner.extend(std::iter::repeat_n(FREE_PT, 64));
        self.pt_total += 64;
    }

    fn note_pt_peak(&mut self) {
        let used = self.pt_total - self.pt_free.len() as u64;
        self.r.pt_pages_peak = self.r.pt_pages_peak.max(used);
    }

    /// Run `f` with KVM and its view of the guest; then apply KVM's remote TLB flush.
    fn with_kvm<T>(
        &mut self,
        f: impl FnOnce(&mut ShadowMmu, &mut GuestView<'_>) -> T,
    ) -> Result<Option<T>> {
        let (Some(kvm), Some(host)) = (self.kvm.as_mut(), self.host.as_mut()) else {
            return Ok(None);
        };
        let mut view = GuestView {
            procs: &mut self.procs,
            pt_owner: &self.pt_owner,
            pt_base: self.pt_base,
            host,
            err: None,
        };
        let out = f(kvm, &mut view);
        if let Some(e) = view.err.take() {
            return Err(e);
        }
        if kvm.take_remote_flush() {
            for v in &mut self.vcpus {
                if let Some(m) = v.mmu.as_mut() {
                    m.flush_vpid(VPID);
                }
            }
        }
        self.sync_host_unmaps();
        Ok(Some(out))
    }

    /// Shadow paging: the guest's stores into its page-table pages since the last call, as
    /// KVM sees them (direct, unsync or emulated).
    fn report_pt_writes(&mut self, v: usize, pid: u32) -> Result<()> {
        if self.kvm.is_none() {
            return Ok(());
        }
        let mut buf = std::mem::take(&mut self.log_buf);
        buf.clear();
        if let Some(Some(t)) = self.procs.get_mut(pid as usize) {
            if let Some(log) = t.log.as_mut() {
                buf.append(log);
            }
        }
        let mut stored = u64::MAX;
        for &(gfn, idx) in &buf {
            // The guest's store goes to host memory: the host backs the table page (under
            // TDP the walks that read it do the same).
            if gfn != stored {
                stored = gfn;
                self.host_touch(gfn, true)?;
            }
            let pte = self.procs[pid as usize]
                .as_ref()
                .and_then(|t| t.entry_arch(gfn, idx as usize))
                .unwrap_or(0);
            let w = self
                .with_kvm(|k, g| k.guest_pt_write(g, v, gfn, idx as usize, GuestPte(pte), true))?;
            match w {
                Some(PtWrite::Direct) | None => {}
                Some(PtWrite::Unsynced) | Some(PtWrite::Emulated) => {
                    self.r.exits += 1;
                    self.r.exits_pt_write += 1;
                }
                Some(PtWrite::Unprotected) => {
                    self.r.exits += 2;
                    self.r.exits_pt_write += 2;
                }
            }
        }
        self.log_buf = buf;
        Ok(())
    }

    /// Shadow paging: a guest CR3 load exits to KVM.
    fn kvm_cr3(&mut self, v: usize, pid: u32, noflush: bool, count: bool) -> Result<()> {
        if self.kvm.is_none() {
            return Ok(());
        }
        let root = self.procs[pid as usize]
            .as_ref()
            .map(|t| t.root_frame())
            .ok_or_else(|| Error::config("workload", format!("process {pid} does not exist")))?;
        let p = pcid(pid);
        self.with_kvm(|k, g| k.set_cr3(g, v, root, p, noflush))?;
        if count {
            self.r.exits += 1;
            self.r.exits_cr3 += 1;
        }
        Ok(())
    }

    /// Apply the guest manager's (natively: the machine's) reclaim unmaps: the process
    /// tables and the TLBs. `reclaimer` is the vCPU (natively: the thread's) whose reclaim
    /// unmapped them, `None` for the native kswapd (a CPU that runs no process).
    ///
    /// `shrink_folio_list` unmaps with `TTU_BATCH_FLUSH` (Linux 6.8 mm/vmscan.c): when the
    /// process runs on a CPU other than the reclaimer's (`arch_tlbbatch_should_defer`), the
    /// flush is deferred and `try_to_unmap_flush` ends the batch with one full flush of the
    /// process's entries on every CPU it runs on (`arch_tlbbatch_flush`: TLB_FLUSH_ALL, a
    /// CR3 reload of its PCID; under shadow paging a CR3 exit). Otherwise each page is
    /// flushed where it is (`ptep_clear_flush`: INVLPG). Either way a CPU that does not run
    /// the process now flushes when it switches to it (`inc_mm_tlb_gen`). Left out: one
    /// flush per batch of 32 pages (one per reclaim pass or fault here: the TLBs end in the
    /// same state, fewer flushes are charged) and the IPIs' cost to the remote CPUs.
    fn sync_guest_unmaps(&mut self, reclaimer: Option<usize>) -> Result<()> {
        let Some(mut log) = self.guest.unmap_log.take() else {
            return Ok(());
        };
        let v = reclaimer.unwrap_or(0);
        let mut out = Ok(());
        let mut pages = std::mem::take(&mut self.unmapped);
        pages.clear();
        for &key in &log {
            let (pid, vpn) = self.unkey(key);
            let va = vpn << 12;
            let free = &mut self.pt_free;
            let owner = &mut self.pt_owner;
            let base = self.pt_base;
            if let Some(Some(t)) = self.procs.get_mut(pid as usize) {
                t.unmap(va, &mut |f| {
                    free.push(f);
                    owner[(f - base) as usize] = FREE_PT;
                });
            }
            if out.is_ok() {
                out = self.report_pt_writes(v, pid);
            }
            pages.push((pid, va));
        }
        log.clear();
        self.guest.unmap_log = Some(log);
        pages.sort_unstable_by_key(|&(pid, _)| pid);
        let mut i = 0;
        while i < pages.len() && out.is_ok() {
            let pid = pages[i].0;
            let n = pages[i..].iter().take_while(|p| p.0 == pid).count();
            let defer = self
                .vcpus
                .iter()
                .enumerate()
                .any(|(c, vc)| vc.pid == pid && Some(c) != reclaimer);
            if defer {
                out = self.batch_flush(pid);
            } else {
                for &(_, va) in &pages[i..i + n] {
                    if out.is_ok() {
                        out = self.shootdown(pid, va);
                    }
                }
            }
            i += n;
        }
        self.unmapped = pages;
        out
    }

    /// `arch_tlbbatch_flush`: every vCPU running `pid` flushes its entries (a CR3 reload of
    /// the current PCID, which exits to KVM under shadow paging); the others flush when they
    /// next switch to it.
    fn batch_flush(&mut self, pid: u32) -> Result<()> {
        self.tlb_gen[pid as usize] += 1;
        let g = self.tlb_gen[pid as usize];
        for c in 0..self.vcpus.len() {
            if self.vcpus[c].pid != pid {
                continue;
            }
            let vc = &mut self.vcpus[c];
            if let Some(m) = vc.mmu.as_mut() {
                m.load_cr3(pcid(pid), false);
            }
            vc.seen_gen[pid as usize] = g;
            self.r.reclaim_flushes += 1;
            self.kvm_cr3(c, pid, false, true)?;
        }
        Ok(())
    }

    /// `flush_tlb_page`: INVLPG on vCPUs running `pid` (each exits to KVM under shadow
    /// paging); the others flush that PCID when they next switch to it.
    fn shootdown(&mut self, pid: u32, va: u64) -> Result<()> {
        self.tlb_gen[pid as usize] += 1;
        let g = self.tlb_gen[pid as usize];
        for c in 0..self.vcpus.len() {
            if self.vcpus[c].pid != pid {
                continue;
            }
            if let Some(m) = self.vcpus[c].mmu.as_mut() {
                m.invlpg(va);
            }
            self.vcpus[c].seen_gen[pid as usize] = g;
            self.r.shootdown_pages += 1;
            if self.kvm.is_some() {
                self.with_kvm(|k, gv| k.invlpg(gv, c, va))?;
                self.r.exits += 1;
                self.r.exits_invlpg += 1;
            }
        }
        Ok(())
    }

    /// Apply the host's reclaim unmaps: EPT entries (INVEPT on every vCPU) or, under shadow
    /// paging, the MMU notifier into KVM.
    fn sync_host_unmaps(&mut self) {
        let Some(host) = self.host.as_mut() else {
            return;
        };
        {
            let sh = host.shared.borrow();
            if sh.pending[host.vm].is_empty() && sh.pending_zap[host.vm].is_empty() {
                return;
            }
        }
        let mut gfns = std::mem::take(&mut self.host_unmaps);
        let mut zaps = std::mem::take(&mut self.shrink_plan);
        host.take_unmaps(&mut gfns, &mut zaps);
        if !gfns.is_empty() {
            match self.paging {
                Paging::Tdp => {
                    for v in &mut self.vcpus {
                        if let Some(m) = v.mmu.as_mut() {
                            m.flush_nested(VPID);
                        }
                    }
                    self.r.nested_flushes += 1;
                }
                Paging::Shadow => {
                    if let Some(k) = self.kvm.as_mut() {
                        for &rel in &gfns {
                            k.unmap_gfn_range(rel << host.shift, 1 << host.shift);
                        }
                    }
                }
                Paging::Native => {}
            }
        }
        if let Some(k) = self.kvm.as_mut() {
            // KVM's shrinker, run by host reclaim passes (`HostShared::distribute`).
            for &n in &zaps {
                self.r.mmu_shrink_scans += 1;
                self.r.mmu_shrink_zapped += k.shrink(n);
            }
            if k.take_remote_flush() {
                for v in &mut self.vcpus {
                    if let Some(m) = v.mmu.as_mut() {
                        m.flush_vpid(VPID);
                    }
                }
            }
        }
        gfns.clear();
        self.host_unmaps = gfns;
        self.shrink_plan = zaps;
    }

    /// The host serves `gfn` (counting an EPT violation when the EPT had no entry).
    fn host_touch(&mut self, gfn: u64, write: bool) -> Result<bool> {
        let Some(host) = self.host.as_mut() else {
            return Ok(false);
        };
        // The op's time, as `serve` set it for the guest (every host touch follows it).
        host.shared.borrow_mut().m.mm.now = self.guest.mm.now;
        let absent = host.touch(gfn, write)?;
        self.sync_host_unmaps();
        if absent && self.paging == Paging::Tdp {
            self.r.ept_violations += 1;
            self.r.exits += 1;
        }
        Ok(absent)
    }

    /// The vCPU's MMU translates `va` through the tables of the paging mode. `None`: the
    /// shadow walk found no root and KVM reloaded it; translate again.
    fn hw_translate(
        &mut self,
        v: usize,
        pid: u32,
        va: u64,
        kind: AccessKind,
    ) -> Result<Option<std::result::Result<crate::translate::Translation, crate::translate::Fault>>>
    {
        let out = self.hw_translate_raw(v, pid, va, kind)?;
        if let Some(r) = &out {
            self.tcycles += match r {
                Ok(t) => t.cycles as u64,
                Err(f) => f.cycles as u64,
            };
        }
        Ok(out)
    }

    fn hw_translate_raw(
        &mut self,
        v: usize,
        pid: u32,
        va: u64,
        kind: AccessKind,
    ) -> Result<Option<std::result::Result<crate::translate::Translation, crate::translate::Fault>>>
    {
        let vc = &mut self.vcpus[v];
        Ok(Some(match self.paging {
            Paging::Native => {
                let t = self.procs[pid as usize].as_mut().expect("process exists");
                vc.mmu().translate(Tables::Native(t), va, kind)
            }
            Paging::Tdp => {
                let t = self.procs[pid as usize].as_mut().expect("process exists");
                let ept = self
                    .host
                    .as_mut()
                    .and_then(|h| h.ept.as_mut())
                    .expect("tdp has an EPT");
                vc.mmu().translate(
                    Tables::Tdp {
                        guest: t,
                        host: ept,
                    },
                    va,
                    kind,
                )
            }
            Paging::Shadow => {
                let mut w = ShadowWalker {
                    kvm: self.kvm.as_mut().expect("shadow has KVM"),
                    vcpu: v,
                    levels: self.levels,
                    no_root: false,
                };
                let out = vc.mmu().translate(Tables::Shadow(&mut w), va, kind);
                if w.no_root {
                    self.mark();
                    self.with_kvm(|k, g| k.reload(g, v))?;
                    return Ok(None);
                }
                out
            }
        }))
    }

    /// What follows the guest manager's handling of a reference to `vpn` of `pid` (`first`
    /// and `evictions`: its counters before): an out-of-memory end, a reclaimed 1 GiB page
    /// (hugetlb pages are never reclaimed), the page's first touch noted for `Exit`.
    fn after_guest_access(&mut self, pid: u32, vpn: u64, first: u64, evictions: u64) -> Result<()> {
        if let Some(t) = self.guest.out_of_memory() {
            return Err(self.out_of_memory(t));
        }
        if self.gshift == 18 && self.guest.stats.evictions != evictions {
            return Err(hugetlb_reclaimed("vm.guest_page", "guest"));
        }
        if self.guest.stats.first_touch != first {
            let base_vpn = vpn & !((1u64 << self.gshift) - 1);
            self.touched[pid as usize].push(base_vpn);
        }
        Ok(())
    }

    /// The memory managers serve a reference that missed the TLB: the guest's (a guest page
    /// fault if the page is not mapped; else its accessed and dirty bits, which the walk
    /// sets) and, under TDP, the host's for the gfn. The process table and the EPT follow.
    fn serve(&mut self, v: usize, pid: u32, vpn: u64, write: bool) -> Result<()> {
        let key = self.key(v, pid, vpn)?;
        let first = self.guest.stats.first_touch;
        let evictions = self.guest.stats.evictions;
        self.guest.mm.now = self.vcpus[v].clock;
        self.guest.access(
            Access {
                page: key,
                write,
                gup: false,
            },
            u64::MAX,
        );
        self.after_guest_access(pid, vpn, first, evictions)?;
        if !self.tlb {
            // No hardware table to keep in step, no TLB to flush.
            return Ok(());
        }
        self.sync_guest_unmaps(Some(v))?;
        let unit = 1u64 << self.gshift;
        let base_vpn = vpn & !(unit - 1);
        let pte = self.guest.mm.pt.pte(key);
        let base_gfn = (crate::mm::pte_frame(pte) as u64) << self.gshift;
        let gfn = base_gfn | (vpn & (unit - 1));
        let va = base_vpn << 12;
        let size = PageSize::ALL[(self.gshift / 9) as usize];
        // Keep the process's hardware table in step with the manager.
        let mapped = self.proc_table(pid)?.lookup(va).map(|(pa, _, _)| pa);
        if mapped != Some(base_gfn << 12) {
            self.grow_native_pt();
            let t = self.procs[pid as usize].as_mut().expect("checked above");
            if mapped.is_some() {
                t.unmap(va, &mut |_| {});
            }
            let free = &mut self.pt_free;
            let owner = &mut self.pt_owner;
            let base = self.pt_base;
            t.map(va, base_gfn << 12, size, PTE_W, &mut || {
                let f = free.pop()?;
                owner[(f - base) as usize] = pid;
                Some(f)
            })
            .map_err(|_| {
                Error::config(
                    "vm.pt_pages",
                    "the guest's page-table pages ran out; give more (pt_pages)",
                )
            })?;
            self.note_pt_peak();
            self.report_pt_writes(v, pid)?;
        }
        // The host sees the reference too: its accessed bit is the EPT's (TDP) or the shadow
        // entry's (shadow), set by the same walk.
        if self.paging != Paging::Native {
            self.host_touch(gfn, write)?;
        }
        Ok(())
    }

    /// Why vCPU `v` cannot access page `vpn` of process `pid`: beyond the address space, or
    /// in a process that has exited (a workload that exits a process a vCPU still runs and
    /// then accesses memory from it; the walk would find no table: an error, not a panic).
    #[cold]
    #[inline(never)]
    fn bad_access(&self, v: usize, pid: u32, vpn: u64) -> Error {
        if vpn >= VA_PAGES {
            Error::config(
                "workload",
                format!("guest page {vpn:#x} beyond the 48-bit address space of a process"),
            )
        } else {
            Error::config(
                "workload",
                format!("vCPU {v} accesses memory of process {pid}, which has exited"),
            )
        }
    }

    /// One access of vCPU `v` to page `vpn` of its current process. The TLB is looked up
    /// first: a hit touches neither memory manager (as on x86, where the accessed bit is set
    /// only when a walk fills the TLB, and Linux clears it without a flush); a walk lets both
    /// managers see the reference; a fault is served by them (and by KVM) and the access
    /// retried.
    pub fn access(&mut self, v: usize, vpn: u64, write: bool) -> Result<()> {
        let pid = self.vcpus[v].pid;
        if vpn >= VA_PAGES || !matches!(self.procs.get(pid as usize), Some(Some(_))) {
            return Err(self.bad_access(v, pid, vpn));
        }
        let va = vpn << 12;
        let kind = if write {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        if let Some(Ok(t)) = self.hw_translate(v, pid, va, kind)? {
            if t.level != crate::translate::TlbLevel::Walk {
                return Ok(());
            }
            self.mark();
            return self.serve(v, pid, vpn, write);
        }
        self.mark();
        let guest_faults = self.guest.stats.faults;
        self.serve(v, pid, vpn, write)?;
        if self.paging == Paging::Shadow && self.guest.stats.faults != guest_faults {
            // Shadow paging intercepts every #PF: the guest's own fault exited first, and KVM
            // injected it (`pf_guest`) before the guest's handler ran.
            self.r.exits += 1;
            self.r.exits_pf += 1;
        }
        for _retry in 0..64 {
            let Some(out) = self.hw_translate(v, pid, va, kind)? else {
                continue;
            };
            let f = match out {
                Ok(_) => return Ok(()),
                Err(f) => f,
            };
            match (self.paging, f.kind) {
                (Paging::Tdp, FaultKind::Nested { gpa, .. }) => {
                    // A guest page-table page the host does not map now.
                    self.host_touch(gpa >> 12, true)?;
                    self.r.ept_violations_pt += 1;
                    let vc = &mut self.vcpus[v];
                    vc.mmu().vm_exit(HOST_PCID);
                    vc.mmu().vm_entry(VPID, pcid(pid))?;
                }
                (Paging::Shadow, FaultKind::NotPresent { .. } | FaultKind::Protection) => {
                    // A shadow page fault: exit to `kvm_mmu_page_fault`.
                    self.r.exits += 1;
                    self.r.exits_pf += 1;
                    let o = self
                        .with_kvm(|k, g| k.page_fault(g, v, va, write, true))?
                        .expect("shadow has KVM");
                    match o {
                        PfOutcome::Fixed | PfOutcome::Spurious => {}
                        PfOutcome::Emulate { gfn } => {
                            self.with_kvm(|k, g| k.emulate_write(g, v, gfn, GuestStore::Data))?;
                        }
                        PfOutcome::NoSpace => {
                            // `make_mmu_pages_available` found nothing to zap (every page
                            // in use is a root): KVM's page fault returns -ENOSPC.
                            let (used, max) = self
                                .kvm
                                .as_ref()
                                .map_or((0, 0), |k| (k.n_used(), k.n_max()));
                            return Err(Error::config(
                                "vm.mmu_pages",
                                format!(
                                    "the shadow-page pool ({max} pages, {used} in use, all \
                                     roots) has no page to recycle for page {vpn} of process \
                                     {pid}: give at least 4 pages per vCPU (its root and the \
                                     cached ones) plus the levels below"
                                ),
                            ));
                        }
                        other => {
                            return Err(Error::config(
                                "vm",
                                format!(
                                    "shadow page fault on page {vpn} of process {pid} ended in {other:?}"
                                ),
                            ))
                        }
                    }
                    let vc = &mut self.vcpus[v];
                    vc.mmu().vm_exit(HOST_PCID);
                    vc.mmu().vm_entry(VPID, pcid(pid))?;
                }
                (_, other) => {
                    return Err(Error::config(
                        "vm",
                        format!(
                            "translation of page {vpn} of process {pid} failed after its fault was served: {other:?}"
                        ),
                    ))
                }
            }
        }
        Err(Error::config(
            "vm",
            format!("translation of page {vpn} of process {pid} kept faulting"),
        ))
    }

    fn switch(&mut self, v: usize, pid: u32) -> Result<()> {
        self.proc_table(pid)?;
        let g = self.tlb_gen[pid as usize];
        let vc = &mut self.vcpus[v];
        let noflush = vc.seen_gen[pid as usize] == g;
        if let Some(m) = vc.mmu.as_mut() {
            m.load_cr3(pcid(pid), noflush);
        }
        vc.seen_gen[pid as usize] = g;
        vc.pid = pid;
        self.r.cr3_loads += 1;
        if !noflush {
            self.r.cr3_flushes += 1;
            self.r.deferred_flushes += 1;
        }
        self.kvm_cr3(v, pid, noflush, true)
    }

    fn spawn(&mut self, pid: u32) -> Result<()> {
        if pid >= MAX_PIDS {
            return Err(Error::config(
                "workload",
                format!("process id {pid} beyond the VM's {MAX_PIDS}"),
            ));
        }
        let i = pid as usize;
        if i >= self.procs.len() {
            self.procs.resize_with(i + 1, || None);
            self.touched.resize_with(i + 1, Vec::new);
            self.tlb_gen.resize(i + 1, 0);
            for v in &mut self.vcpus {
                v.seen_gen.resize(i + 1, 0);
            }
        }
        if self.procs[i].is_some() {
            return Err(Error::config(
                "workload",
                format!("process {pid} created twice"),
            ));
        }
        self.grow_native_pt();
        let root = self.pt_free.pop().ok_or_else(|| {
            Error::config(
                "vm.pt_pages",
                "the guest's page-table pages ran out at a fork",
            )
        })?;
        self.pt_owner[(root - self.pt_base) as usize] = pid;
        let mut t = RadixTable::new(self.levels, root)?;
        if self.kvm.is_some() {
            t.log = Some(Vec::new());
        }
        self.procs[i] = Some(t);
        // A fresh address space: TLBs must not keep a previous owner's entries of this PCID.
        self.tlb_gen[i] += 1;
        self.r.processes_created += 1;
        self.note_pt_peak();
        Ok(())
    }

    /// munmap of `pages` pages from `start`. With large guest pages every large page the
    /// range touches goes whole (Linux would split a THP and free the range's part; a
    /// hugetlbfs range must be aligned).
    fn unmap_range(&mut self, v: usize, pid: u32, start: u64, pages: u64) -> Result<()> {
        let unit = 1u64 << self.gshift;
        let end = start.saturating_add(pages).min(VA_PAGES);
        let start = start & !(unit - 1);
        let n = (end.saturating_sub(start)).div_ceil(unit);
        for vpn in (start..end).step_by(unit as usize) {
            if let Some(key) = self.key_if_any(pid, vpn) {
                self.guest.unmap_page(key);
            }
            let free = &mut self.pt_free;
            let owner = &mut self.pt_owner;
            let base = self.pt_base;
            if let Some(Some(t)) = self.procs.get_mut(pid as usize) {
                let gone = t.unmap(vpn << 12, &mut |f| {
                    free.push(f);
                    owner[(f - base) as usize] = FREE_PT;
                });
                if gone.is_some() {
                    self.r.pages_unmapped += 1;
                }
            }
        }
        self.report_pt_writes(v, pid)?;
        // `flush_tlb_mm_range`: one INVLPG per page (of the mapping's size, `stride_shift`)
        // up to the ceiling, else the whole address space.
        if n <= TLB_SINGLE_PAGE_FLUSH_CEILING {
            for vpn in (start..end).step_by(unit as usize) {
                self.shootdown(pid, vpn << 12)?;
            }
        } else {
            self.tlb_gen[pid as usize] += 1;
            let g = self.tlb_gen[pid as usize];
            for c in 0..self.vcpus.len() {
                if self.vcpus[c].pid == pid {
                    if let Some(m) = self.vcpus[c].mmu.as_mut() {
                        m.load_cr3(pcid(pid), false);
                    }
                    self.vcpus[c].seen_gen[pid as usize] = g;
                    self.r.cr3_flushes += 1;
                    if self.kvm.is_some() {
                        // A full flush: KVM syncs the roots (`kvm_vcpu_flush_tlb_guest`).
                        self.with_kvm(|k, gv| k.flush_tlb_guest(gv, c))?;
                        self.r.exits += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// `exit_mmap`: the process's pages are freed and its page-table entries cleared
    /// (`zap_pte_range`), each clear a store into a page-table page that KVM sees under
    /// shadow paging (direct, unsync, emulated; repeated stores flood and zap the shadow
    /// page, as they do in KVM), then its page-table pages are freed (`free_pgtables`).
    fn exit(&mut self, v: usize, pid: u32) -> Result<()> {
        self.proc_table(pid)?;
        let pages = std::mem::take(&mut self.touched[pid as usize]);
        for &vpn in &pages {
            if let Some(key) = self.key_if_any(pid, vpn) {
                self.guest.unmap_page(key);
            }
            let free = &mut self.pt_free;
            let owner = &mut self.pt_owner;
            let base = self.pt_base;
            if let Some(Some(t)) = self.procs.get_mut(pid as usize) {
                t.unmap(vpn << 12, &mut |f| {
                    free.push(f);
                    owner[(f - base) as usize] = FREE_PT;
                });
            }
        }
        self.report_pt_writes(v, pid)?;
        let t = self.procs[pid as usize].take().expect("checked");
        for f in t.table_frames() {
            let gfn = f;
            self.pt_free.push(gfn);
            self.pt_owner[(gfn - self.pt_base) as usize] = FREE_PT;
        }
        self.tlb_gen[pid as usize] += 1;
        self.r.processes_exited += 1;
        Ok(())
    }

    /// Run one op of vCPU `v`, advancing its clock by what the op cost (see the module docs'
    /// "Time").
    pub fn op(&mut self, v: usize, op: Op) -> Result<()> {
        self.op_with(v, op, &numeric)
    }

    /// Ops that touch no memory and no other vCPU (compute, arrival, request boundaries):
    /// applied to vCPU `v`'s clock and counters; false for any other op.
    #[inline(always)]
    pub(super) fn plain_op(&mut self, v: usize, op: Op) -> bool {
        let vc = &mut self.vcpus[v];
        match op {
            Op::Compute { ns } => {
                vc.clock += ns as u64;
                self.r.time.compute_ns += ns as u64;
            }
            Op::Arrive { at_ns } => {
                let at_ns = vc.epoch.saturating_add(at_ns);
                if vc.clock < at_ns {
                    self.r.time.idle_ns += at_ns - vc.clock;
                    vc.clock = at_ns;
                }
                vc.arrival = Some(at_ns);
            }
            Op::RequestBegin { kind } => {
                vc.req_start = Some(vc.arrival.take().unwrap_or(vc.clock));
                vc.req_kind = kind;
            }
            Op::RequestEnd => {
                if let Some(t0) = vc.req_start.take() {
                    self.hists
                        .entry(vc.req_kind)
                        .or_default()
                        .record(vc.clock - t0);
                }
            }
            _ => return false,
        }
        true
    }

    /// [`Vm::op`], with the content of each page (how it compresses in zram) given by
    /// `cls(pid, vpn)` ([`Workload::content_class`]).
    pub fn op_with(&mut self, v: usize, op: Op, cls: Classes<'_>) -> Result<()> {
        // Host reclaim while another VM ran may have taken this VM's pages (alone on its
        // host, a VM applies its unmaps right after each host touch).
        if self.shares_host {
            self.sync_host_unmaps();
        }
        if self.plain_op(v, op) {
            return Ok(());
        }
        if op == Op::Barrier {
            let latest = self.vcpus.iter().map(|c| c.clock).max().unwrap_or(0);
            let vc = &mut self.vcpus[v];
            self.r.time.idle_ns += latest - vc.clock;
            vc.clock = latest;
            vc.epoch = latest;
            return Ok(());
        }
        if let Op::Access { page, write } = op {
            if !self.tlb {
                return self.access_untranslated(v, page, write, cls);
            }
            // Most accesses hit the TLB and change nothing but the translation cycles: the
            // other counters are snapshotted only once the access takes the slow path
            // (`mark`), where they have not changed yet.
            self.op_c0 = self.tcycles;
            self.snap = None;
            self.vcpus[v].accesses += 1;
            self.vcpus[v].writes += write as u64;
            let out = self.access(v, page, write);
            match self.snap.take() {
                None => {
                    let c = &self.costs;
                    // Rounded to the nearest ns (half up; the cycles are never negative).
                    let ns =
                        ((self.tcycles - self.op_c0) as f64 / c.cpu_ghz + 0.5) as u64 + c.access_ns;
                    self.r.time.translation_ns += ns;
                    self.vcpus[v].clock += ns;
                }
                Some(before) => {
                    let after = self.work_snapshot();
                    self.charge(v, &before, &after, true, cls);
                }
            }
            return out;
        }
        self.last_valid = false;
        let before = self.work_snapshot();
        let out = match op {
            Op::Spawn { pid } => self.spawn(pid),
            Op::Switch { pid } => self.switch(v, pid),
            Op::Exit { pid } => self.exit(v, pid),
            Op::Unmap { start, pages } => {
                let pid = self.vcpus[v].pid;
                self.unmap_range(v, pid, start, pages)
            }
            _ => Ok(()),
        };
        let after = self.work_snapshot();
        self.charge(v, &before, &after, matches!(op, Op::Access { .. }), cls);
        out
    }

    /// An access without address translation ([`VmConfig::tlb`] false): the memory manager
    /// sees it; a hit costs `access_ns`, a fault what [`Vm::charge`] says.
    #[inline(always)]
    fn access_untranslated(
        &mut self,
        v: usize,
        vpn: u64,
        write: bool,
        cls: Classes<'_>,
    ) -> Result<()> {
        let vc = &mut self.vcpus[v];
        vc.accesses += 1;
        vc.writes += write as u64;
        let pid = vc.pid;
        if vpn >= VA_PAGES || !matches!(self.procs.get(pid as usize), Some(Some(_))) {
            return Err(self.bad_access(v, pid, vpn));
        }
        if !self.last_valid {
            self.take_last_work();
        }
        // The manager's part of `serve` (no hardware table, no host): a hit changes none of
        // the counters `after_guest_access` and `charge` look at.
        let key = self.key(v, pid, vpn)?;
        let g = &mut self.guest;
        let (faults, first, evictions) = (g.stats.faults, g.stats.first_touch, g.stats.evictions);
        g.mm.now = self.vcpus[v].clock;
        g.access(
            Access {
                page: key,
                write,
                gup: false,
            },
            u64::MAX,
        );
        if g.stats.faults == faults {
            let ns = self.costs.access_ns;
            self.r.time.translation_ns += ns;
            self.vcpus[v].clock += ns;
            return Ok(());
        }
        self.untranslated_fault(v, pid, vpn, (first, evictions), cls)
    }

    /// The rest of an untranslated access that faulted: its checks and its cost.
    #[inline(never)]
    fn untranslated_fault(
        &mut self,
        v: usize,
        pid: u32,
        vpn: u64,
        (first, evictions): (u64, u64),
        cls: Classes<'_>,
    ) -> Result<()> {
        let out = self.after_guest_access(pid, vpn, first, evictions);
        let before = self.last_work;
        let after = self.work_snapshot();
        self.charge(v, &before, &after, true, cls);
        self.last_work = after;
        out
    }

    #[cold]
    #[inline(never)]
    fn take_last_work(&mut self) {
        self.last_work = self.work_snapshot();
        self.last_valid = true;
    }

    /// Snapshot the counters an op's cost is computed from, once per access, before its
    /// slow path changes any of them (translation cycles as at the op's start).
    fn mark(&mut self) {
        if self.snap.is_none() {
            let mut s = self.work_snapshot();
            s.tcycles = self.op_c0;
            self.snap = Some(s);
        }
    }

    fn work_snapshot(&self) -> Work {
        let shared = self.host.as_ref().map(|h| h.shared.borrow());
        let h = shared.as_ref().map(|s| &s.m.stats);
        let g = &self.guest.stats;
        Work {
            tcycles: self.tcycles,
            guest_minor: g.minor_faults,
            guest_major: g.major_faults,
            host_minor: h.map_or(0, |s| s.minor_faults),
            host_major: h.map_or(0, |s| s.major_faults),
            exits: self.r.exits,
            shootdown_pages: self.r.shootdown_pages,
            cr3_loads: self.r.cr3_loads,
            reclaim_flushes: self.r.reclaim_flushes,
            guest_first_touch: g.first_touch,
            host_first_touch: h.map_or(0, |s| s.first_touch),
            guest_scanned: g.pgscan_direct + g.pgscan_kswapd,
            guest_stolen: g.pgsteal_direct + g.pgsteal_kswapd,
            host_scanned_direct: h.map_or(0, |s| s.pgscan_direct),
            host_stolen_direct: h.map_or(0, |s| s.pgsteal_direct),
            guest_scan: self.guest.policy.scan_work(),
        }
    }

    /// Advance vCPU `v`'s clock by what the op cost.
    fn charge(&mut self, v: usize, a: &Work, b: &Work, access: bool, cls: Classes<'_>) {
        let c = &self.costs;
        let translation = ((b.tcycles - a.tcycles) as f64 / c.cpu_ghz).round() as u64
            + if access { c.access_ns } else { 0 };
        // A large page's fault clears (first touch) or reads (swap-in) all of it.
        let gx = (1u64 << self.gshift) - 1;
        let hx = self.host.as_ref().map_or(0, |h| (1u64 << h.shift) - 1);
        // With a timed swap device a major fault costs its CPU work (`major_fault_ns`) here;
        // the device's time is added by `device_io`.
        let (gmaj, gswap) = if self.guest_dev.is_some() {
            (c.major_fault_ns, 0)
        } else {
            (c.guest_major_fault_ns, c.swap_page_ns)
        };
        let (hmaj, hswap) = if self.host_dev {
            (c.major_fault_ns, 0)
        } else {
            (c.host_major_fault_ns, c.swap_page_ns)
        };
        let (g_minor, g_major) = (b.guest_minor - a.guest_minor, b.guest_major - a.guest_major);
        let (h_minor, h_major) = (b.host_minor - a.host_minor, b.host_major - a.host_major);
        let guest = g_minor * c.guest_minor_fault_ns
            + g_major * gmaj
            + gx * ((b.guest_first_touch - a.guest_first_touch) * c.clear_page_ns
                + g_major * gswap);
        let host = h_minor * c.host_minor_fault_ns
            + h_major * hmaj
            + hx * ((b.host_first_touch - a.host_first_touch) * c.clear_page_ns + h_major * hswap);
        // The guest's reclaim, kswapd's included, runs on the guest's vCPUs (it has no other
        // CPUs; charged to the vCPU whose allocation needed it); the host's direct reclaim on
        // the faulting vCPU, the host's kswapd on a host CPU of its own, at no cost to the
        // vCPUs (no CPU contention in the VM layer). The guest's MG-LRU aging (page-table
        // walks, look-around) is the guest's reclaim work too, at the timing engine's costs.
        let scanned =
            (b.guest_scanned - a.guest_scanned) + (b.host_scanned_direct - a.host_scanned_direct);
        let stolen =
            (b.guest_stolen - a.guest_stolen) + (b.host_stolen_direct - a.host_stolen_direct);
        let aging = b.guest_scan.since(&a.guest_scan).cost_ns(
            c.walk_pte_ns,
            c.walk_pmd_ns,
            c.lookaround_pte_ns,
        );
        let rmap = scanned * c.scan_page_ns;
        let reclaim = rmap + stolen * c.reclaim_page_ns + aging;
        self.cpu.direct_reclaim_ns += reclaim;
        self.cpu.aging_ns += aging;
        self.cpu.rmap_scan_ns += rmap;
        self.vcpus[v].major_faults += g_major + h_major;
        let n_exits = b.exits - a.exits;
        let exits = n_exits * c.exit_ns;
        let flush = (b.shootdown_pages - a.shootdown_pages) * c.invlpg_ns
            + (b.cr3_loads - a.cr3_loads + b.reclaim_flushes - a.reclaim_flushes) * c.cr3_ns;
        let mut kvm = 0;
        if let Some(k) = &self.kvm {
            if n_exits > 0 || h_major > 0 || h_minor > 0 {
                // KVM's shrinker counts the VM's shadow pages (they change only in exits
                // and host faults).
                if let Some(h) = &self.host {
                    h.shared.borrow_mut().n_used[h.vm] = k.n_used();
                }
                let p = k.profile();
                let total: f64 = crate::kvm::Work::ALL
                    .iter()
                    .map(|&w| p.total(w) as f64 * self.costs.kvm_work_ns[w as usize])
                    .sum();
                kvm = (total - self.kvm_charged).max(0.0).round() as u64;
                self.kvm_charged = total;
            }
        }
        let t = &mut self.r.time;
        t.translation_ns += translation;
        t.guest_fault_ns += guest;
        t.host_fault_ns += host;
        t.exit_ns += exits;
        t.kvm_ns += kvm;
        t.tlb_flush_ns += flush;
        t.reclaim_ns += reclaim;
        self.vcpus[v].clock += translation + guest + host + exits + kvm + flush + reclaim;
        if self.host_dev || self.guest_dev.is_some() {
            self.device_io(v, cls);
        }
    }

    /// Hand the swap I/O the op caused to the timed devices at the vCPU's clock: their CPU
    /// time (zram) and the wait for the last read to complete (the faulting access waits;
    /// writes are asynchronous, as `swap_writepage`'s) go to the vCPU, as guest or host fault
    /// time.
    fn device_io(&mut self, v: usize, cls: Classes<'_>) {
        let now = self.vcpus[v].clock;
        let (gcpu, gdone, hcpu, hdone) = self.submit_io(now, cls);
        let t = now + gcpu + hcpu;
        let gwait = gdone.saturating_sub(t);
        let hwait = hdone.saturating_sub(t.max(gdone));
        let tm = &mut self.r.time;
        tm.guest_fault_ns += gcpu + gwait;
        tm.host_fault_ns += hcpu + hwait;
        let vc = &mut self.vcpus[v];
        vc.clock = t + gwait + hwait;
        vc.io_wait += gwait + hwait;
    }

    /// Submit the swap I/O the guest's and the host's managers logged, from `now`: the
    /// guest device's CPU time and last read's completion (0: none), then the host's.
    fn submit_io(&mut self, now: u64, cls: Classes<'_>) -> (u64, u64, u64, u64) {
        let (gcpu, gdone) = match self.guest_dev.as_mut() {
            Some(d) => {
                let (back, gshift) = (&self.region_back, self.gshift);
                let page_class = |key: u64, i: u32| {
                    let (pid, vpn) = unkey_in(back, gshift, key);
                    cls(pid, vpn + i as u64)
                };
                let out = d.run(&mut self.guest, now, &page_class);
                let pages = d.dev.ram_bytes().div_ceil(4096);
                self.device_frames_peak = self.device_frames_peak.max(pages);
                out
            }
            None => (0, 0),
        };
        let (hcpu, hdone) = match self.host.as_ref() {
            Some(h) => {
                let mut sh = h.shared.borrow_mut();
                let sh = &mut *sh;
                match sh.dev.as_mut() {
                    Some(d) => d.run(&mut sh.m, now + gcpu, &|_, _| ContentClass::Numeric),
                    None => (0, 0),
                }
            }
            None => (0, 0),
        };
        self.cpu.device_ns += gcpu + hcpu;
        if self.pool_charged {
            self.set_reservation();
        }
        (gcpu, gdone, hcpu, hdone)
    }

    /// Frames held back from the guest's (native: the machine's) free list: its swap
    /// device's pool when charged (it is memory), and what kswapd's running pass has not yet
    /// finished freeing.
    fn set_reservation(&mut self) {
        let pool = match (&self.guest_dev, self.pool_charged) {
            (Some(d), true) => d.dev.ram_bytes().div_ceil(4096).min(u32::MAX as u64) as u32,
            _ => 0,
        };
        let n = pool.saturating_add(self.kswapd_hold);
        if n > 0 || self.guest.mm.frames.reserved() > 0 {
            // The pool's growth is zs_malloc's allocation, which wakes kswapd below the low
            // watermark (GFP_NOIO includes __GFP_KSWAPD_RECLAIM); kswapd's own reclaimed
            // frames, freed over its pass, are no allocation and wake nobody.
            if pool > self.pool_seen {
                self.guest.set_kernel_pages(n);
            } else {
                self.guest.hold_kernel_pages(n);
            }
            self.pool_seen = pool;
        }
    }

    /// Tell the guest's manager what its zram pool may still take during the next step: its
    /// allocations (`zs_malloc`, made from reclaim, which runs with PF_MEMALLOC) may take
    /// every free frame, and a stored page takes, by estimate, the pool's present bytes per
    /// stored page (a whole page before anything is stored). The pool's real size is charged
    /// after the I/O ([`Machine::set_kernel_pages`]); a swap-out that would not fit fails
    /// (see `Machine`'s failed swap-out). Only with a charged pool.
    pub fn set_write_room(&mut self) {
        let Some(d) = self.guest_dev.as_ref().filter(|_| self.pool_charged) else {
            return;
        };
        let st = d.dev.stats();
        let per_page = st
            .ram_bytes
            .checked_div(st.pages_stored)
            .map_or(4096, |b| b.clamp(1, 4096));
        self.guest.mm.swap.pool = Some(crate::mm::PoolCharge {
            per_page,
            pending: 0,
        });
    }

    /// Native paging: one `balance_pgdat` pass of the machine's kswapd, a thread of its own
    /// on the CPUs, from `now`: its reclaim (pages scanned and reclaimed, MG-LRU's aging),
    /// its TLB shootdowns and its swap writes' submission (zram's compression) are its CPU
    /// time. Returns whether it has more to do, the pass's CPU time and the pages it
    /// reclaimed (the caller frees them over that time: [`Vm::hold_kswapd_frames`]).
    pub fn native_kswapd_step(&mut self, now: u64, cls: Classes<'_>) -> Result<(bool, u64, u64)> {
        self.last_valid = false;
        let a = self.work_snapshot();
        self.guest.mm.now = now;
        let more = self.guest.kswapd_step();
        self.sync_guest_unmaps(None)?;
        let b = self.work_snapshot();
        let c = &self.costs;
        let rmap = (b.guest_scanned - a.guest_scanned) * c.scan_page_ns;
        let aging = b.guest_scan.since(&a.guest_scan).cost_ns(
            c.walk_pte_ns,
            c.walk_pmd_ns,
            c.lookaround_pte_ns,
        );
        let stolen = b.guest_stolen - a.guest_stolen;
        let flush = (b.shootdown_pages - a.shootdown_pages) * c.invlpg_ns
            + (b.reclaim_flushes - a.reclaim_flushes) * c.cr3_ns;
        let work = rmap + aging + stolen * c.reclaim_page_ns + flush;
        self.cpu.aging_ns += aging;
        self.cpu.rmap_scan_ns += rmap;
        let mut clock = now + work.max(1);
        let (gcpu, ..) = self.submit_io(clock, cls);
        clock += gcpu;
        Ok((more || self.guest.kswapd_awake(), clock - now, stolen))
    }

    /// Hold back `n` more (or, negative, give back) frames that kswapd has reclaimed but not
    /// yet freed.
    pub fn hold_kswapd_frames(&mut self, n: i64) {
        self.kswapd_hold = (self.kswapd_hold as i64 + n).clamp(0, u32::MAX as i64) as u32;
        self.set_reservation();
    }

    /// The time vCPU `v` has waited for swap reads since the last call (part of its clock's
    /// advance): the engine lets its host CPU go meanwhile.
    pub fn take_io_wait(&mut self, v: usize) -> u64 {
        std::mem::take(&mut self.vcpus[v].io_wait)
    }

    /// vCPU `v` leaves a barrier at `now`, when the last of its VM's vCPUs reached it (the
    /// engine's barrier; [`Vm::op`]'s `Barrier` does the same from the vCPUs' clocks).
    pub fn barrier_release(&mut self, v: usize, now: u64) {
        let vc = &mut self.vcpus[v];
        if now > vc.clock {
            self.r.time.idle_ns += now - vc.clock;
            vc.clock = now;
        }
        vc.epoch = vc.clock;
    }

    /// The counters so far.
    pub fn result(&self) -> VmResult {
        let mut r = self.r.clone();
        r.guest = self.guest.stats.clone();
        if let Some(h) = &self.host {
            r.host = h.shared.borrow().m.stats.clone();
        }
        let mut t = TranslateStats::default();
        for v in &self.vcpus {
            if let Some(m) = &v.mmu {
                t.add(m.stats());
            }
        }
        r.translate = t;
        let mut g = crate::translate::WalkGrid::default();
        for vg in self
            .vcpus
            .iter()
            .filter_map(|v| v.mmu.as_ref())
            .map(|m| m.grid())
        {
            for (row, vrow) in g.cells.iter_mut().zip(vg.cells.iter()) {
                for (c, vc) in row.iter_mut().zip(vrow.iter()) {
                    c.lookups += vc.lookups;
                    c.pwc_hits += vc.pwc_hits;
                }
            }
            for (s, vs) in g.ntlb_skips.iter_mut().zip(vg.ntlb_skips.iter()) {
                *s += vs;
            }
        }
        r.walk_breakdown = g.classify(WALK_HIT_AT_LEAST, WALK_MISS_AT_MOST);
        r.walk_grid = g;
        r.kvm = self.kvm.as_ref().map(|k| k.stats().clone());
        r.guest_device = self.guest_dev.as_ref().map(|d| d.dev.stats());
        r.host_device = self
            .host
            .as_ref()
            .and_then(|h| h.shared.borrow().dev.as_ref().map(|d| d.dev.stats()));
        r.vcpu_ns = self.vcpus.iter().map(|c| c.clock).collect();
        r.runtime_ns = r.vcpu_ns.iter().copied().max().unwrap_or(0);
        let all = self.latency_histogram();
        if all.count() > 0 {
            r.latency = Some(all.summary());
            r.latency_buckets = all.buckets();
        }
        (r.latency_by_kind, r.latency_by_kind_buckets) = by_kind(&self.hists);
        let c = &mut r.cpu;
        c.direct_reclaim_ns = self.cpu.direct_reclaim_ns;
        c.aging_ns = self.cpu.aging_ns;
        c.rmap_scan_ns = self.cpu.rmap_scan_ns;
        c.device_ns = self.cpu.device_ns;
        c.app_ns = self.cpu.app_ns;
        c.io_wait_ns = self.cpu.io_wait_ns;
        c.runqueue_wait_ns = self.cpu.runqueue_wait_ns;
        c.barrier_wait_ns = self.cpu.barrier_wait_ns;
        r.device_frames_peak = self.device_frames_peak;
        r.policy_counters = self
            .guest
            .policy
            .counters()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        if let Some(k) = &self.kvm {
            r.kvm_folded = k.profile().folded(&self.costs.kvm_work_ns);
        }
        r
    }

    /// The error Linux's OOM kill stands for: the guest's (native: the machine's) manager
    /// ran out of memory at its access `t`.
    fn out_of_memory(&self, t: u64) -> Error {
        let m = &self.guest;
        let failed = m.stats.swap_write_errors;
        if self.paging != Paging::Native {
            return Error::config(
                "vm.guest_frames",
                format!("guest out of memory at its access {t}: give the guest more frames"),
            );
        }
        let msg = if failed > 0 {
            format!(
                "out of memory at access {t}: zram's compressed pool ({} of {} frames) left no memory for the swap-outs that would free more ({failed} failed writes, zram's failed_writes; Linux would OOM-kill here); give more frames, or keep the pool out of the capacity (a memory cgroup limit: machine.cgroup = true, `vmemsim run --cgroup`, vmemsim.run(cgroup=True))",
                m.mm.frames.reserved(),
                m.mm.frames.len()
            )
        } else {
            format!(
                "out of memory at access {t}: {} could reclaim nothing with {} frames (Linux would OOM-kill here); give more frames",
                m.policy.name(),
                m.mm.frames.len()
            )
        };
        Error::config("frames", msg)
    }

    /// vCPU `v`'s clock (simulated ns).
    pub fn clock(&self, v: usize) -> u64 {
        self.vcpus[v].clock
    }

    /// When an open-loop arrival `at_ns` of vCPU `v`'s stream arrives (counted from its last
    /// barrier, as [`Op::Arrive`]).
    pub fn arrival_at(&self, v: usize, at_ns: u64) -> u64 {
        self.vcpus[v].epoch.saturating_add(at_ns)
    }

    /// Run the guest's kswapd as a thread on the vCPUs (the engine does: see `VmExec` in `vm/machine/threads.rs`),
    /// not inline in the allocation that wakes it.
    pub fn defer_guest_kswapd(&mut self) {
        self.guest.set_defer_kswapd(true);
    }

    /// Whether the guest's kswapd is awake (deferred mode).
    pub fn guest_kswapd_awake(&self) -> bool {
        self.guest.kswapd_awake()
    }

    /// One `balance_pgdat` pass of the guest's kswapd on vCPU `v`: its reclaim work (pages
    /// scanned and reclaimed, MG-LRU's aging) advances the vCPU's clock as reclaim time, its
    /// unmaps shoot down TLB entries (and reach KVM's shadow MMU), its swap writes go to the
    /// guest's device. Returns whether kswapd has more to do.
    pub fn guest_kswapd_step(&mut self, v: usize, cls: Classes<'_>) -> Result<bool> {
        self.last_valid = false;
        let before = self.work_snapshot();
        self.guest.mm.now = self.vcpus[v].clock;
        let more = self.guest.kswapd_step();
        self.sync_guest_unmaps(Some(v))?;
        let after = self.work_snapshot();
        self.charge(v, &before, &after, false, cls);
        Ok(more)
    }

    /// vCPU `v` will idle until its next request arrives at `at` (absolute): recorded for
    /// the request's latency; the clock moves when it resumes ([`Vm::idle_until`]).
    pub fn arrive_later(&mut self, v: usize, at: u64) {
        self.vcpus[v].arrival = Some(at);
    }

    /// vCPU `v` was idle (halted) until `t`.
    pub fn idle_until(&mut self, v: usize, t: u64) {
        let vc = &mut self.vcpus[v];
        if t > vc.clock {
            self.r.time.idle_ns += t - vc.clock;
            vc.clock = t;
        }
    }

    /// vCPU `v` waited (halted) for a swap read until `t`, time its fault already counted.
    fn waited_until(&mut self, v: usize, t: u64) {
        let vc = &mut self.vcpus[v];
        vc.clock = vc.clock.max(t);
    }

    /// vCPU `v`, runnable since its clock, gets a host CPU at `t`: the wait is steal time.
    pub fn steal_until(&mut self, v: usize, t: u64) {
        let vc = &mut self.vcpus[v];
        if t > vc.clock {
            self.r.time.steal_ns += t - vc.clock;
            vc.clock = t;
        }
    }

    /// Request latencies so far.
    pub fn latency_histogram(&self) -> crate::timed::hist::Histogram {
        let mut all = crate::timed::hist::Histogram::new();
        for h in self.hists.values() {
            all.merge(h);
        }
        all
    }

    /// vCPU `v` (native: a thread), in its op's allocation, wakes the sleeping kswapd
    /// (`wakeup_kswapd`): it pays `wakeup_ns` (overlapping its op's wait for a swap read, if
    /// any). Returns when kswapd wakes: a wake-up later, from the end of that work.
    pub fn pay_wakeup(&mut self, v: usize) -> u64 {
        let w = self.costs.wakeup_ns;
        let vc = &mut self.vcpus[v];
        let done = vc.clock - vc.io_wait + w;
        let used = vc.io_wait.min(w);
        vc.io_wait -= used;
        vc.clock += w - used;
        self.r.time.guest_fault_ns += w - used;
        done + w
    }

    /// Guest frames holding pages now (mapped or in the guest's swap cache).
    /// The guest policy's page-table scanning so far (MG-LRU aging; zero for others).
    pub fn guest_scan_work(&self) -> crate::policy::ScanWork {
        self.guest.policy.scan_work()
    }

    pub fn guest_resident(&self) -> u32 {
        self.guest.mm.frames.len() - self.guest.mm.frames.n_unused()
    }

    /// Guest page-table pages in use.
    pub fn pt_pages_in_use(&self) -> u64 {
        self.pt_total - self.pt_free.len() as u64
    }

    /// The shadow MMU (shadow paging), for its counters, profile and pool.
    pub fn kvm(&self) -> Option<&ShadowMmu> {
        self.kvm.as_ref()
    }

    /// Every process table maps exactly what the guest manager has mapped (for tests: it
    /// visits every page each process has touched), and the EPT what the host has.
    pub fn check_mirror(&self) -> std::result::Result<(), String> {
        for (pid, t) in self.procs.iter().enumerate() {
            let Some(t) = t else { continue };
            for &vpn in &self.touched[pid] {
                let Some(key) = self.key_if_any(pid as u32, vpn) else {
                    continue;
                };
                let pte = self.guest.mm.pt.pte(key);
                let want = (pte & PTE_PRESENT != 0)
                    .then(|| (crate::mm::pte_frame(pte) as u64) << (12 + self.gshift));
                let got = t.lookup(vpn << 12).map(|(pa, _, _)| pa);
                if want != got {
                    return Err(format!(
                        "process {pid} page {vpn}: the guest maps {want:?}, its table {got:?}"
                    ));
                }
            }
        }
        if let Some(HostSide {
            shared,
            base,
            ept: Some(ept),
            shift,
            ..
        }) = &self.host
        {
            let sh = shared.borrow();
            for gfn in 0..self.guest_frames as u64 + self.pt_total {
                let Some((pa, _, _)) = ept.lookup(gfn << 12) else {
                    continue;
                };
                let pte = sh.m.mm.pt.pte(base + (gfn >> shift));
                let want = (((crate::mm::pte_frame(pte) as u64) << shift)
                    | (gfn & ((1 << shift) - 1)))
                    << 12;
                if pte & PTE_PRESENT == 0 || want != pa {
                    return Err(format!("EPT maps gfn {gfn} to {pa:#x}, the host does not"));
                }
            }
        }
        // Shadow paging: every leaf SPTE (its gfn's rmap) maps a gfn the host backs (the MMU
        // notifier zapped the others).
        if let (Some(k), Some(h)) = (&self.kvm, &self.host) {
            for gfn in 0..self.guest_frames as u64 + self.pt_total {
                if k.rmap_len(gfn) > 0 && !h.present(gfn) {
                    return Err(format!(
                        "a shadow leaf maps gfn {gfn}, which the host does not back"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every invariant of both memory managers and of the shadow MMU.
    pub fn validate(&self) -> std::result::Result<(), String> {
        self.guest.validate()?;
        if let Some(h) = &self.host {
            h.shared.borrow().m.validate()?;
        }
        if let Some(k) = &self.kvm {
            k.validate()?;
        }
        Ok(())
    }
}

/// Run a guest workload to its end on a new VM: the vCPUs' streams interleaved chunk by
/// chunk (the order of accesses between vCPUs is round-robin by chunk; each vCPU keeps its own clock).
pub fn run(cfg: &VmConfig, wl: &mut dyn Workload) -> Result<VmResult> {
    let hc = HostCpus::own(wl.threads());
    run_with(cfg, wl, hc, EngineOpts::default())
}

/// One VM (or, with native paging, the machine alone) on `hc` with the engine's `opts`.
pub fn run_with(
    cfg: &VmConfig,
    wl: &mut dyn Workload,
    hc: HostCpus,
    opts: EngineOpts<'_>,
) -> Result<VmResult> {
    let mut vm = Vm::new(cfg, wl.threads())?;
    let out = schedule(std::slice::from_mut(&mut vm), &mut [wl], hc, opts)?;
    let mut r = vm.result();
    r.workload = wl.name();
    out.fill(&mut r);
    Ok(r)
}

/// Run several VMs, each with its workload, on one host: their guest memory shares the host's
/// memory manager (its frames, reclaim and swap: the first config's `host`, `host_policy`,
/// `host_page`), so one VM's pressure reclaims another's pages. Each VM keeps its own guest
/// OS, translation, vCPUs and (shadow paging) KVM MMU; all vCPUs run round-robin chunk by
/// chunk, each on a host CPU of its own. Returns the merged result with each VM's in
/// [`VmResult::per_vm`].
pub fn run_many(cfgs: &[VmConfig], wls: &mut [Box<dyn Workload>]) -> Result<VmResult> {
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
/// its requests' latency grows by it. The host's kswapd shares the CPUs: the CPU work of
/// the reclaim it did (inline, when the host needed it) becomes runnable at the end of the
/// engine step that woke it and runs like any thread (`host_kswapd_ns`). Left out: other
/// host threads. Inside each VM the guest's kswapd shares the vCPUs with the streams (see
/// `VmExec`); a vCPU runs its stream's processes as the stream switches them.
pub fn run_many_with(
    cfgs: &[VmConfig],
    wls: &mut [Box<dyn Workload>],
    cpus: Option<HostCpus>,
) -> Result<VmResult> {
    if cfgs.is_empty() || cfgs.len() != wls.len() {
        return Err(Error::config(
            "vm",
            format!("{} configurations for {} workloads", cfgs.len(), wls.len()),
        ));
    }
    if cfgs.len() == 1 {
        let hc = cpus.unwrap_or_else(|| HostCpus::own(wls[0].threads()));
        return run_with(&cfgs[0], wls[0].as_mut(), hc, EngineOpts::default());
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
        vms.push(Vm::on_host(
            c,
            w.threads(),
            host.as_ref().map(|h| (h.clone(), i)),
        )?);
    }
    let n_vcpus = wls.iter().map(|w| w.threads()).sum();
    let hc = cpus.unwrap_or_else(|| HostCpus::own(n_vcpus));
    let mut refs: Vec<&mut dyn Workload> = wls
        .iter_mut()
        .map(|w| -> &mut dyn Workload { &mut **w })
        .collect();
    let out = schedule(&mut vms, &mut refs, hc, EngineOpts::default())?;
    let host = host.expect("several VMs have a host");
    let mut per = Vec::with_capacity(vms.len());
    let mut hist = crate::timed::hist::Histogram::new();
    let mut hists: BTreeMap<u8, crate::timed::hist::Histogram> = BTreeMap::new();
    for (vm, w) in vms.iter_mut().zip(wls.iter()) {
        vm.sync_host_unmaps();
        let mut r = vm.result();
        r.workload = w.name();
        hist.merge(&vm.latency_histogram());
        for (k, h) in &vm.hists {
            hists.entry(*k).or_default().merge(h);
        }
        per.push(r);
    }
    let mut merged = merge_results(&per);
    let sh = host.borrow();
    merged.host = sh.m.stats.clone();
    merged.host_frames = per[0].host_frames;
    if hist.count() > 0 {
        merged.latency = Some(hist.summary());
        merged.latency_buckets = hist.buckets();
    }
    (merged.latency_by_kind, merged.latency_by_kind_buckets) = by_kind(&hists);
    merged.per_vm = per;
    out.fill(&mut merged);
    Ok(merged)
}

mod merge;
mod threads;

use merge::merge_results;
pub use threads::EngineOpts;
use threads::{schedule, EngineOut};

impl EngineOut {
    /// The engine's own measurements into a run's result.
    fn fill(self, r: &mut VmResult) {
        r.host_kswapd_ns = self.kswapd_ns;
        r.cpu.kswapd_ns = self.kswapd_ns;
        r.cpu.kswapd_runs = self.kswapd_runs;
        r.cpu.context_switches = self.context_switches;
        r.slice_ns = self.slice_ns;
        r.series = self.series;
    }
}

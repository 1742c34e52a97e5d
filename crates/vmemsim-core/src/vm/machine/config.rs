//! The machine's data types: how a run is set up ([`Paging`], [`VmConfig`], the one cost
//! table [`Costs`] with its documented defaults) and what it counted ([`RunResult`],
//! [`VmTime`]).
//! No kernel code is modelled here; the costs price the kernel and KVM paths named on each
//! field (`do_swap_page`, `clear_huge_page`, `wakeup_kswapd`, a VM exit and re-entry, KVM's
//! handler work).

use super::*;

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
    /// The names [`Paging::parse`] accepts (`ept` and `npt` are `tdp`).
    pub const NAMES: &'static [&'static str] = &["native", "tdp", "ept", "npt", "shadow"];

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

/// How QEMU opens a VM's disk image (`-drive cache=`, QEMU's `bdrv_parse_cache_mode`): whether
/// the host's page cache holds the image's pages, and when a write counts as done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// QEMU's default: reads and writes through the host's page cache (`cache.direct=off`);
    /// a write is done once in the host's cache (dirty), the guest's flush (`fsync` in the
    /// guest: a virtio `VIRTIO_BLK_T_FLUSH`) is the image's `fdatasync`.
    #[default]
    Writeback,
    /// `O_DIRECT` (`cache.direct=on`): the host caches nothing of the image; every read and
    /// write is a request on the host's disk.
    None,
    /// Through the host's page cache, each write written to the disk before it completes
    /// (`O_DSYNC`).
    Writethrough,
    /// `O_DIRECT` and `O_DSYNC`: as `none` here (the disks modelled have no volatile write
    /// cache for the `O_DSYNC` to flush).
    Directsync,
    /// The host's page cache of the images managed by Cacol (seed 003, §4.2;
    /// [`crate::mm::cacol`]): a page is kept from its second request, per-VM frequency
    /// order with decay, per-VM low watermarks, reclaim from the least recently used VM
    /// first. Otherwise as `writeback`.
    Cacol,
}

impl CacheMode {
    /// The names [`CacheMode::parse`] accepts.
    pub const NAMES: &'static [&'static str] =
        &["writeback", "none", "writethrough", "directsync", "cacol"];

    pub fn parse(s: &str) -> Result<CacheMode> {
        match s {
            "writeback" => Ok(CacheMode::Writeback),
            "none" => Ok(CacheMode::None),
            "writethrough" => Ok(CacheMode::Writethrough),
            "directsync" => Ok(CacheMode::Directsync),
            "cacol" => Ok(CacheMode::Cacol),
            _ => Err(Error::config(
                "cache_mode",
                format!("unknown cache mode {s:?} ({})", CacheMode::NAMES.join(", ")),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CacheMode::Writeback => "writeback",
            CacheMode::None => "none",
            CacheMode::Writethrough => "writethrough",
            CacheMode::Directsync => "directsync",
            CacheMode::Cacol => "cacol",
        }
    }

    /// Whether the image's pages go through the host's page cache.
    pub fn host_cached(self) -> bool {
        matches!(
            self,
            CacheMode::Writeback | CacheMode::Writethrough | CacheMode::Cacol
        )
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
    /// Swap devices with timing (`crate::device`: ssd, nvme, zram, remote, hdd) for the host's
    /// swap of guest memory and the guest's own swap. `None`: a major fault costs the flat
    /// `host_major_fault_ns` / `guest_major_fault_ns`. See the module docs' "Swap devices".
    pub host_swap: Option<crate::device::DeviceSpec>,
    pub guest_swap: Option<crate::device::DeviceSpec>,
    /// The guests' swap devices are one block device of the host (their virtual disks are
    /// files on one host disk), with the host's swap when `host_swap` is the same device:
    /// requests of all of them queue together on its channels. Each VM's `device_stats`
    /// counts its own requests (queue delays included), the host's `host_device_stats` its own.
    /// Needs a host (tdp or shadow paging) and a block `guest_swap` (zram is memory of the
    /// guest). Default false: each is a device of its own.
    pub shared_disk: bool,
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
    pub costs: Costs,
    /// The block device the files live on ([`crate::device`]: `hdd`, `ssd`, `nvme`, ...):
    /// natively the machine's disk, in a VM the host's disk that holds the VMs' disk images.
    /// Used only by workloads with file I/O ([`Op::File`]); `None`: the default `ssd`.
    pub file_device: Option<crate::device::DeviceSpec>,
    /// In a VM: how QEMU opens the disk image (the host's page cache or not).
    pub cache_mode: CacheMode,
    /// A virtio-balloon device in the guest (tdp or shadow paging, 4 KiB pages on both
    /// sides; see `vm/machine/ballooning.rs`); `None`: none, as without `-device
    /// virtio-balloon`.
    pub balloon: Option<BalloonConfig>,
    /// The host runs MOM's balloon policy over its VMs' balloons ([`crate::vm::balloon`]);
    /// the first VM's setting is the host's. `None`: no manager.
    pub mom: Option<crate::vm::balloon::MomConfig>,
    /// The guest has no swap space (`swapoff`): its reclaim takes file pages only, and
    /// anonymous memory in use cannot be reclaimed.
    pub guest_swapoff: bool,
    /// QEMU's own code as named pages of the host (VSwapper §3, false page anonymity): this
    /// many pages of `qemu-system-x86_64`'s text, file-backed on the host and resident from
    /// the start, which QEMU runs through for every virtio-blk request of a guest; their
    /// refaults are the VM's `swap_pathologies.hypervisor_code_faults`. 0 (the default):
    /// not modelled. The first VM's count is the host's (one binary in the host's page
    /// cache). See `vm/machine/pathologies.rs` for the size to give.
    pub qemu_text_pages: u32,
    /// VSwapper (§4) on this VM: `Off` (the default), the Swap Mapper (§4.1, module
    /// `mapper`), the False Reads Preventer (§4.2, module `preventer`), or both (`Both`,
    /// named `vswapper`). Needs 4 KiB host pages.
    pub vswapper: super::VSwapper,
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
            shared_disk: false,
            charge_device_ram: false,
            tlb: true,
            costs: Costs::default(),
            file_device: None,
            cache_mode: CacheMode::Writeback,
            balloon: None,
            mom: None,
            guest_swapoff: false,
            qemu_text_pages: 0,
            vswapper: super::VSwapper::Off,
        }
    }
}

/// What a run counted: the one result type of the one machine, for a native run (`vmemsim
/// run`, [`crate::timed::run`]; no guest: `paging` is native and the host fields are empty)
/// and for VMs (`vmemsim vm`, [`run_many`]). The same thing has the same name in both:
/// `runtime_ns`, `cpu` (CPU time by category), `threads`, `stats` / `vmstat` (the counters of
/// the kernel the workload runs under: the machine's natively, the guest's in a VM),
/// `host_stats` / `host_vmstat` (the host's, in a VM), `device_stats` / `host_device_stats`
/// (their swap devices), `latency` / `latency_buckets` (per request kind, with `all`),
/// `policy_counters`, `series`, `translate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The vmemsim version that ran it ([`crate::replay::VERSION`]).
    #[serde(default)]
    pub version: String,
    /// The workload spec as run (several VMs: joined with " + ").
    pub workload: String,
    /// The run's seed (several VMs: the first VM's; VM `i` ran with `seed + i`).
    #[serde(default)]
    pub seed: u64,
    /// `native`, `tdp` or `shadow`.
    pub paging: Option<Paging>,
    /// The policy of the kernel the workload runs under (natively the machine's, in a VM the
    /// guest's), and the host's (VMs only).
    #[serde(alias = "guest_policy")]
    pub policy: String,
    pub host_policy: String,
    /// Policy options given (`key=value`), when any.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// Frames of the workload's kernel (natively the machine's memory, in a VM the guest's;
    /// summed over VMs) and of the host (VMs only).
    #[serde(alias = "guest_frames")]
    pub frames: u32,
    pub host_frames: u32,
    /// Pages the workloads touch (their footprint, summed over VMs).
    #[serde(default)]
    pub footprint_pages: u64,
    /// Host CPUs the threads ran on (VMs without shared host CPUs: one per vCPU and one for
    /// the host's kswapd).
    #[serde(default)]
    pub cpus: u32,
    /// The swap device of the workload's kernel (`ssd`, `zram:...`), empty for a VM's flat
    /// major-fault cost.
    #[serde(default)]
    pub device: String,
    /// Whether the CPUs' TLBs and page walks were modelled.
    #[serde(default)]
    pub tlb: bool,
    /// Page sizes of the guest's mappings and of the host's backing.
    pub guest_page: Option<PageSize>,
    pub host_page: Option<PageSize>,
    /// The swap devices' counters (requests, queueing, busy time): the workload kernel's
    /// device and the host's, when timed devices are set.
    #[serde(alias = "guest_device")]
    pub device_stats: Option<crate::device::DeviceStats>,
    #[serde(alias = "host_device")]
    pub host_device_stats: Option<crate::device::DeviceStats>,
    /// With file I/O: the device the workload's files are on (natively the file disk; in a
    /// VM its virtual disk, whose requests' service is the host's handling), and the host's
    /// disk holding the VMs' images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_device_stats: Option<crate::device::DeviceStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_file_device_stats: Option<crate::device::DeviceStats>,
    /// With file I/O in a VM: the guest's page-cache pages whose image page the host's page
    /// cache holds too (double caching), at the end of the run, and the host's page-cache
    /// pages of the VM's image.
    #[serde(default)]
    pub double_cached_pages: u64,
    #[serde(default)]
    pub host_image_pages: u64,
    /// In a VM: the pathologies of uncooperative host swapping (VSwapper §3) the host's
    /// swapping of this VM's memory showed (silent swap writes, stale and false swap reads,
    /// sequence of the image blocks in swap, swap readahead's use; module `pathologies`).
    #[serde(default)]
    pub swap_pathologies: super::SwapPathologies,
    /// With `cache_mode = cacol`: what Cacol did on the host (pages bypassed, hits,
    /// admitted; reclaim's pages scanned, decremented, evicted, evicted dirty; calls that
    /// found every VM at its low watermark).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cacol: BTreeMap<String, u64>,
    /// The counters of the workload's kernel (natively the machine's; in a VM the guest's,
    /// whose faults are guest page faults), and the same under their `/proc/vmstat` names.
    #[serde(alias = "guest")]
    pub stats: Stats,
    #[serde(default)]
    pub vmstat: BTreeMap<String, u64>,
    /// The host's counters in a VM (tdp and shadow; its faults on guest memory are EPT
    /// violations), and under their `/proc/vmstat` names.
    #[serde(alias = "host")]
    pub host_stats: Stats,
    #[serde(default)]
    pub host_vmstat: BTreeMap<String, u64>,
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
    /// Request latency (from its arrival, or its start for closed-loop requests, to its
    /// end) per request kind (`read`, `update`, `insert`, `kindN`) and `all`, when the
    /// workload has requests; `latency_buckets` holds the histograms as `(highest equivalent
    /// value ns, count)`.
    #[serde(default)]
    pub latency: BTreeMap<String, crate::timed::hist::Summary>,
    #[serde(default)]
    pub latency_buckets: BTreeMap<String, Vec<(u64, u64)>>,
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
    /// The VM's virtio-balloon device, if it has one: what it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balloon: Option<BalloonResult>,
    /// The host's balloon manager (MOM), if it ran: its samples, evaluations, evaluations
    /// under pressure and targets set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mom: Option<crate::vm::balloon::ManagerCounters>,
    /// Several VMs on one host ([`run_many`]): each VM's own result (its `host` is the shared
    /// host's). The fields above are then the sums over the VMs (counters, time categories,
    /// guest memory), the latest vCPU clock (`runtime_ns`), all vCPUs' clocks, all requests'
    /// latency, and the shared host's counters and memory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_vm: Vec<RunResult>,
}

impl RunResult {
    /// Memory references per TLB miss (walk references / walks).
    pub fn refs_per_walk(&self) -> f64 {
        if self.translate.walks == 0 {
            0.0
        } else {
            self.translate.walk_refs as f64 / self.translate.walks as f64
        }
    }
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
    /// File I/O calls' CPU time (`syscall_ns`, `copy_page_ns`, `pagecache_add_ns`, the
    /// devices' submission time) and their waits for the file device.
    #[serde(default)]
    pub file_cpu_ns: u64,
    #[serde(default)]
    pub file_wait_ns: u64,
    /// The balloon driver's guest CPU time on the vCPUs (its rounds' kworker, and the
    /// OOM notifier's deflations with their wait for QEMU); the reclaim its allocations
    /// ran is in `reclaim_ns`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub balloon_ns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The one machine's cost table: CPU time of each event, native and virtualization costs
/// together, in nanoseconds (`cpu_ghz` in GHz). The same table prices `vmemsim run` and
/// `vmemsim vm`; a cost that only a VM has (a VM exit, KVM's handler work, a host fault on
/// guest memory) is simply not incurred by a native run. Set from the CLI with
/// `--cost KEY=NS`, from Python with `costs={...}`, in a sweep as `machine.costs.KEY`.
/// Defaults are estimates unless a source is named.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Costs {
    /// Converts the TLB model's translation cycles (page walks) to ns: 3 GHz (estimate).
    pub cpu_ghz: f64,
    /// An access to a mapped page: its data reference, besides any translation (one
    /// `Access` op; a workload's work between references is its `Compute`). Estimate:
    /// 100 ns, a reference that misses the CPU caches (lmbench's `lat_mem_rd` past the last
    /// level cache). Data caches are not modelled, so a workload whose references hit them
    /// is charged a DRAM miss each; set a smaller `access_ns` for it.
    pub access_ns: u64,
    /// A minor fault of the kernel that runs the workload, natively or in the guest (first
    /// touch of anonymous memory, swap-cache hit): ~1 µs (KERNEL-FACTS.md, "minor fault ≈
    /// 1 µs"). Its old name in a VM's table, `guest_minor_fault_ns`, is still read.
    #[serde(alias = "guest_minor_fault_ns")]
    pub minor_fault_ns: u64,
    /// A major fault's CPU work besides the device when a timed swap device serves it, on
    /// either side (`do_swap_page`: swap-cache lookup, allocation, readahead set-up,
    /// mapping). Estimate: 3 µs.
    pub major_fault_ns: u64,
    /// A guest major fault when the guest has no timed swap device: a swap-in from its
    /// virtual disk, device included (estimate: 100 µs, an NVMe read plus virtio overhead).
    pub guest_major_fault_ns: u64,
    /// A host fault on guest memory, minor and major (the major one without a timed host
    /// swap device, device included); estimates as for the guest.
    pub host_minor_fault_ns: u64,
    pub host_major_fault_ns: u64,
    /// Each page scanned by reclaim (`isolate_lru_folios` + `folio_referenced`'s rmap walk).
    /// Estimate: 300 ns (an anon rmap walk touches the anon_vma, the VMA and the PTE: a few
    /// cache misses).
    pub scan_page_ns: u64,
    /// Each page reclaimed (`shrink_folio_list`: unmap, TLB flush, add to swap cache,
    /// `__remove_mapping`, free). Estimate: 2 µs. Charged at the visit that does the work
    /// (`Mm::reclaim_work`): a page written and kept under writeback pays it at its write,
    /// and only its scan when a later visit frees it.
    pub reclaim_page_ns: u64,
    /// Each PTE read by an MG-LRU aging walk (`walk_pte_range`): a sequential read and, when
    /// young, a test-and-clear. Estimate: 5 ns.
    pub walk_pte_ns: u64,
    /// Each PMD entry visited by an aging walk (`walk_pmd_range`, Bloom filter test).
    /// Estimate: 20 ns.
    pub walk_pmd_ns: u64,
    /// Each PTE read by look-around (`lru_gen_look_around`). Estimate: 5 ns.
    pub lookaround_pte_ns: u64,
    /// A CPU changing thread: ~1.5 µs (a commonly measured Linux figure with cache effects;
    /// estimate).
    pub context_switch_ns: u64,
    /// Waking kswapd (`wakeup_kswapd`, charged to the waker). Estimate: 1 µs.
    pub wakeup_ns: u64,
    /// An INVLPG (a TLB shootdown's flush of one page) and a CR3 load; the refills they
    /// cause are counted as walks. Estimates: 100 and 50 ns.
    pub invlpg_ns: u64,
    pub cr3_ns: u64,
    /// A VM exit and re-entry, without the handler's work: 1,300–2,600 cycles measured on
    /// SVM (KERNEL-FACTS); 2,000 cycles at 3 GHz.
    pub exit_ns: u64,
    /// KVM handler work per unit of each [`crate::kvm::Work`] kind: call, guest PTE read,
    /// guest PTE written, SPTE, hash probe, shadow page allocated, freed, clock hand step
    /// (estimates).
    pub kvm_work_ns: [f64; crate::kvm::WORK_KINDS],
    /// Clearing one more 4 KiB of a large page at its first-touch fault (`clear_huge_page`):
    /// 300 ns per 4 KiB, ~13.6 GB/s (estimate).
    pub clear_page_ns: u64,
    /// Reading or writing one more 4 KiB of a large page at a swap-in (estimate: 1 µs, a
    /// sequential NVMe transfer at ~4 GB/s).
    pub swap_page_ns: u64,
    /// A file I/O system call's own path (`read`, `write`, `fsync`, ...: entry, `fdget`, the
    /// VFS and the file system's checks), besides copying and I/O. Estimate: 300 ns
    /// (lmbench's `lat_syscall read` of one byte is 0.1–0.3 µs on current x86).
    pub syscall_ns: u64,
    /// Copying one 4 KiB page between the page cache and user memory (`copy_page_to_iter`).
    /// Estimate: 400 ns, ~10 GB/s for `rep movsb` out of the CPU's caches.
    pub copy_page_ns: u64,
    /// Each page a file read brings into the page cache, besides the device: allocation,
    /// `filemap_add_folio`, the LRU, the bio's set-up. Estimate: 500 ns.
    pub pagecache_add_ns: u64,
    /// A virtio-blk request of a guest, besides the host's I/O: the guest's kick (a VM exit)
    /// and QEMU's handling until the completion interrupt. Estimate: 10 µs.
    pub virtio_blk_ns: u64,
}

impl Costs {
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

impl Default for Costs {
    fn default() -> Self {
        Costs {
            cpu_ghz: 3.0,
            access_ns: 100,
            minor_fault_ns: 1_000,
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
            syscall_ns: 300,
            copy_page_ns: 400,
            pagecache_add_ns: 500,
            virtio_blk_ns: 10_000,
        }
    }
}

//! The timing engine: a discrete-event clock in nanoseconds, application threads and kswapd
//! competing for host CPUs, and swap devices with latency and queues.
//!
//! One [`crate::engine::Machine`] holds memory and the policy, as for a plain replay. Around it:
//!
//! - **Threads.** Each thread of the [`crate::workload::Workload`] runs its op stream; kswapd is a thread too,
//!   woken when an allocation finds free memory at `low` (`wakeup_kswapd`) and running one
//!   `balance_pgdat` pass per step (`Machine::kswapd_step`) until the node is balanced.
//!   Direct reclaim runs inside the faulting thread, on its CPU time.
//! - **CPUs.** `cpus` CPUs shared by the application threads and kswapd in the one engine of
//!   time, [`crate::sched`]: the fair scheduler of Linux 6.8 as modelled there (the least
//!   CPU time runs next, EEVDF's base slice for `cpus`, bounded lag and wake-up preemption
//!   for threads that wake, a context switch charged when a CPU changes thread). All
//!   threads run at nice 0, as in the paper's set-up.
//! - **Costs.** Every event costs simulated CPU time, from [`Costs`]: an access to a mapped
//!   page, a minor fault, a major fault's handling (plus blocking on the device until the
//!   read completes), each page scanned by reclaim (isolation and the rmap walk of
//!   `folio_referenced`), each page reclaimed (unmap, TLB flush, swap-cache add, free), each
//!   PTE and PMD entry visited by MG-LRU's aging walks and look-around, and the device's own
//!   CPU time (zram compresses on the reclaiming thread and decompresses on the faulting
//!   one). The work is read from counter deltas around each step, so the policies need no
//!   timing code.
//! - **Devices.** Swap I/O goes to a [`crate::device`] model at the simulated time; a fault
//!   waits for its read (the readahead window comes in the same request). Writes are
//!   asynchronous: they occupy the device (delaying reads), and the written page stays
//!   under writeback, unfreeable, until the device completes the write; direct reclaim that
//!   finds nothing else sleeps for them (`Machine::set_write_sink`, docs/models.md).
//!   zram's compressed pool is held back from free memory ([`crate::engine::Machine::set_kernel_pages`]).
//!
//! Because scanning costs CPU time on the same CPUs, slower swap (threads blocked on I/O)
//! leaves kswapd and aging more CPU relative to the application, and faster swap less: the
//! effect the MG-LRU characterization (seed 001, §V-D) reports can emerge rather than be
//! written in.
//!
//! A page whose swap read is in flight is locked until the read completes: reclaim keeps it
//! (`shrink_folio_list`'s `folio_trylock`), see [`crate::mm::Mm::io_lock`].
//!
//! The machine is the one machine of [`crate::vm`] with native paging ([`run`],
//! [`TimedSpec::machine_config`]); `vmemsim vm W --paging native` is the same run as
//! `vmemsim run W --tlb`. By default an access sets the accessed bit and costs `access_ns`
//! ([`TimedConfig::tlb`] false: no translation modelled). With `tlb`, every access goes
//! through the CPU's TLBs and, on a miss, a page walk ([`crate::translate`]), and costs the
//! walk's cycles plus `access_ns`; a TLB hit sets no accessed bit, so reclaim sees only the
//! accesses that walked the page table (x86's `ptep_clear_flush_young` does not flush the
//! TLB), and reclaim's batched flushes empty the TLBs of the CPUs a process runs on.
//!
//! Left out: waiting on the page lock (another thread touching a page whose read is in
//! flight does not wait for it), data caches (an access's data reference costs `access_ns`), interrupts.
//!
//! The front ends (`vmemsim run`, `vmemsim.run`, a sweep's timed runs) describe a run with
//! [`RunConfig`], its settings and their defaults declared once; [`RunConfig::build`] makes
//! the [`TimedSpec`] and the workload.

pub mod hist;
pub(crate) mod run_config;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::device::DeviceSpec;
use crate::engine::{MachineConfig, Stats};
use crate::error::{Error, Result};
use crate::policy::{PolicyKind, PolicyOptions};
use crate::translate::TranslateConfig;
pub use crate::vm::machine::Costs;
use crate::vm::machine::{EngineOpts, HostCpus, Paging, RunResult, VmConfig};
pub use run_config::{RunConfig, TimedRun};

/// The timed part of a run's configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimedConfig {
    /// Host CPUs. Default 6: the paper's Intel Core i7-8700 has 6 cores (§IV).
    pub cpus: u32,
    /// Time slice; `None`: EEVDF's scaled base slice for `cpus` (see the module docs).
    pub slice_ns: Option<u64>,
    pub costs: Costs,
    /// The swap device (`ssd`, `nvme`, `zram`, `remote` with their parameters).
    pub device: DeviceSpec,
    /// Whether the swap device's own memory (zram's compressed pool) is taken from the
    /// machine's frames. True models a machine whose RAM is `frames`. False models a memory
    /// cgroup limited to `frames` on a larger host: zsmalloc allocates without
    /// `__GFP_ACCOUNT` (`zram_write_page` → `zs_malloc`), so the pool is not charged to the
    /// cgroup.
    pub charge_device_ram: bool,
    /// Simulated time between samples of the counters (0: no time series).
    pub sample_every_ns: u64,
    /// How much CPU time one scheduling step runs before other CPUs' events are looked at:
    /// the interleaving granularity of threads on different CPUs (not a model parameter;
    /// smaller is finer and slower). Default 2 µs.
    pub step_ns: u64,
    /// Model the CPUs' TLBs and page walks (`--tlb`): see [`VmConfig::tlb`]. Default false:
    /// every access sets the accessed bit and costs `access_ns`.
    pub tlb: bool,
    /// With `tlb`: the CPUs' TLBs, page-walk caches and caches of page-table entries
    /// ([`crate::translate`]); an access that misses the TLB walks the page table.
    pub translate: TranslateConfig,
    /// The disk of the workload's files ([`VmConfig::file_device`]; `None`: a default `ssd`).
    pub file_device: Option<DeviceSpec>,
}

impl Default for TimedConfig {
    fn default() -> Self {
        TimedConfig {
            cpus: 6,
            slice_ns: None,
            costs: Costs::default(),
            device: DeviceSpec::defaults("ssd").expect("ssd is a device kind"),
            charge_device_ram: true,
            sample_every_ns: 0,
            step_ns: 2_000,
            tlb: false,
            translate: TranslateConfig::default(),
            file_device: None,
        }
    }
}

pub use crate::sched::default_slice_ns;

/// Where CPU time went, summed over threads (ns).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    /// Application threads' CPU time, everything included.
    pub app_ns: u64,
    /// Of which: direct reclaim (scanning and reclaiming in the faulting thread).
    pub direct_reclaim_ns: u64,
    /// Application threads blocked on swap reads.
    pub io_wait_ns: u64,
    /// Application threads runnable but waiting for a CPU.
    pub runqueue_wait_ns: u64,
    /// Application threads waiting at barriers.
    pub barrier_wait_ns: u64,
    /// kswapd's CPU time.
    pub kswapd_ns: u64,
    /// Of all reclaim (kswapd and direct): the MG-LRU aging walks and look-around.
    pub aging_ns: u64,
    /// Of all reclaim: the rmap scanning of pages (`pgscan_*` × scan cost).
    pub rmap_scan_ns: u64,
    /// The device's CPU time (zram compression and decompression), on whichever thread.
    pub device_ns: u64,
    /// Context switches.
    pub context_switches: u64,
    /// Times kswapd was scheduled to run.
    pub kswapd_runs: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadTimes {
    pub cpu_ns: u64,
    pub io_wait_ns: u64,
    pub finish_ns: u64,
    /// The thread's accesses (of which writes) and major faults.
    pub accesses: u64,
    #[serde(default)]
    pub writes: u64,
    pub major_faults: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub time_ns: u64,
    pub stats: Stats,
    pub kswapd_ns: u64,
    /// With file I/O in VMs: each VM's page caches (double caching over time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caches: Vec<CacheSample>,
}

/// One VM's page caches at a sample: the guest's page-cache pages, the host's pages of its
/// disk image, and the guest's pages the host caches too (double caching); and the
/// pathologies of the host's swapping of the VM's memory so far (VSwapper §3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheSample {
    pub guest_file_pages: u64,
    pub host_image_pages: u64,
    pub double_cached: u64,
    /// With Cacol: each VM's low watermark (the same for all), pages.
    #[serde(default)]
    pub cacol_watermark: u64,
    #[serde(default)]
    pub swap_pathologies: crate::vm::SwapPathologies,
}

/// The `/proc/vmstat` view of the counters.
pub fn vmstat(s: &Stats) -> BTreeMap<String, u64> {
    [
        ("pgfault", s.pgfault),
        ("pgmajfault", s.major_faults),
        ("pswpin", s.pswpin),
        ("pswpout", s.pswpout),
        ("pgscan_kswapd", s.pgscan_kswapd),
        ("pgscan_direct", s.pgscan_direct),
        ("pgsteal_kswapd", s.pgsteal_kswapd),
        ("pgsteal_direct", s.pgsteal_direct),
        ("pgrotated", s.pgrotated),
        ("workingset_refault_anon", s.workingset_refault_anon),
        ("workingset_refault_file", s.workingset_refault_file),
        ("allocstall", s.allocstall),
        ("pageoutrun", s.kswapd_wakeups),
        ("swap_ra", s.swap_ra),
        ("swap_ra_hit", s.swap_ra_hit),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// What to run.
pub struct TimedSpec {
    pub policy: PolicyKind,
    pub machine: MachineConfig,
    pub options: PolicyOptions,
    pub timed: TimedConfig,
}

/// The guest models that also run natively, as programs on the machine (their processes,
/// `munmap`s and open-loop arrivals included): `stress-vm`, `redis-like`, `kernbench-like`,
/// `lmbench-like`, `jvm-like`.
pub const GUEST_KINDS: &[&str] = &[
    "stress-vm",
    "redis-like",
    "kernbench-like",
    "lmbench-like",
    "jvm-like",
];

/// Parse a workload for a native run: a process model of [`crate::workload`] (one
/// process, a thread per stream) or one of [`GUEST_KINDS`] (a thread per vCPU stream).
pub fn parse_workload(spec: &str, seed: u64) -> Result<Box<dyn crate::workload::Workload>> {
    let kind = spec
        .trim()
        .split(':')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if GUEST_KINDS.contains(&kind.as_str()) {
        return crate::vm::workloads::parse(spec, seed);
    }
    crate::workload::parse(spec, seed)
}

/// Run `workload` on the machine of `spec`: the one machine of [`crate::vm`] with native
/// paging (no guest; the workload's streams are its CPUs' threads, its kswapd a kernel
/// thread on them), so `vmemsim run W` and `vmemsim vm W --paging native` are one run.
/// `progress(now_ns)` is called now and then.
pub fn run(
    spec: &TimedSpec,
    wl: &mut dyn crate::workload::Workload,
    progress: Option<&mut dyn FnMut(u64)>,
) -> Result<RunResult> {
    let workload = wl;
    if spec.timed.cpus == 0 || spec.timed.cpus > crate::sched::MAX_CPUS {
        return Err(Error::config(
            "cpus",
            format!(
                "must be 1..={}, got {}",
                crate::sched::MAX_CPUS,
                spec.timed.cpus
            ),
        ));
    }
    if spec.timed.step_ns == 0 {
        return Err(Error::config("step_ns", "must be at least 1"));
    }
    if workload.threads() == 0 {
        return Err(Error::config("workload", "has no threads"));
    }
    let cfg = spec.machine_config();
    let wl = workload;
    let hc = HostCpus {
        cpus: spec.timed.cpus,
        slice_ns: spec.timed.slice_ns,
    };
    let opts = EngineOpts {
        step_ns: spec.timed.step_ns,
        sample_every_ns: spec.timed.sample_every_ns,
        progress,
    };
    // The machine always has its swap device (`guest_swap`), so `device_stats` is set.
    crate::vm::machine::run_with(&cfg, wl, hc, opts)
}

impl TimedSpec {
    /// The one machine's configuration of this run: native paging, the machine's memory
    /// manager and policy, its swap device, its TLBs and its costs.
    pub fn machine_config(&self) -> VmConfig {
        let mut c = VmConfig::new(Paging::Native, self.machine.frames, 0);
        c.guest = self.machine.clone();
        c.guest_policy = self.policy;
        c.guest_options = self.options.clone();
        c.translate = self.timed.translate.clone();
        c.tlb = self.timed.tlb;
        c.guest_swap = Some(self.timed.device);
        c.charge_device_ram = self.timed.charge_device_ram;
        c.costs = self.timed.costs.clone();
        c.file_device = self.timed.file_device;
        c
    }
}

#[cfg(test)]
mod tests;

//! The timing engine: a discrete-event clock in nanoseconds, application threads and kswapd
//! competing for host CPUs, and swap devices with latency and queues.
//!
//! One [`Machine`] holds memory and the policy, as for a plain replay. Around it:
//!
//! - **Threads.** Each thread of the [`Workload`] runs its op stream; kswapd is a thread too,
//!   woken when an allocation finds free memory at `low` (`wakeup_kswapd`) and running one
//!   `balance_pgdat` pass per step ([`Machine::kswapd_step`]) until the node is balanced.
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
//!   asynchronous: they occupy the device (delaying reads) but the frame is freed at once.
//!   zram's compressed pool is held back from free memory ([`Machine::set_kernel_pages`]).
//!
//! Because scanning costs CPU time on the same CPUs, slower swap (threads blocked on I/O)
//! leaves kswapd and aging more CPU relative to the application, and faster swap less: the
//! effect the MG-LRU characterization (seed 001, §V-D) reports can emerge rather than be
//! written in.
//!
//! A page whose swap read is in flight is locked until the read completes: reclaim keeps it
//! (`shrink_folio_list`'s `folio_trylock`), see [`crate::mm::Mm::io_lock`].
//!
//! Left out: waiting on the page lock (another thread touching a page whose read is in
//! flight does not wait for it), writeback completion before a page can be freed, file I/O timing, CPU caches
//! and TLBs (an access has one cost), interrupts.

pub mod hist;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::access::Access;
use crate::device::{self, ContentClass, DeviceSpec, DeviceStats, IoKind, SwapDevice};
use crate::engine::{Machine, MachineConfig, Stats, SWAP_CLUSTER_MAX};
use crate::error::{Error, Result};
use crate::mm::SwapIo;
use crate::policy::registry::PolicyVisitor;
use crate::policy::{Policy, PolicyKind, PolicyOptions, ScanWork};
use crate::sched::{Exec, Sched, SchedConfig, State, Step};
use crate::workload::{Op, Workload};
use hist::{Histogram, Summary};

/// CPU time of each event, in nanoseconds. Defaults are starting points, each with its
/// source or marked as an estimate; every one is a configuration value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Costs {
    /// An access to a mapped page (one `Access` op: a burst of references to one page; the
    /// work inside the page is the workload's `Compute`). Estimate: a DRAM miss, ~100 ns.
    pub access_ns: u64,
    /// A minor fault (first touch of anonymous memory, swap-cache hit): ~1 µs
    /// (KERNEL-FACTS.md, "minor fault ≈ 1 µs").
    pub minor_fault_ns: u64,
    /// A major fault's CPU work besides the device (`do_swap_page`: swap-cache lookup,
    /// allocation, readahead set-up, mapping). Estimate: 3 µs.
    pub major_fault_ns: u64,
    /// Each page scanned by reclaim (`isolate_lru_folios` + `folio_referenced`'s rmap walk).
    /// Estimate: 300 ns (an anon rmap walk touches the anon_vma, the VMA and the PTE: a few
    /// cache misses).
    pub scan_page_ns: u64,
    /// Each page reclaimed (`shrink_folio_list`: unmap, TLB flush, add to swap cache,
    /// `__remove_mapping`, free). Estimate: 2 µs.
    pub reclaim_page_ns: u64,
    /// Each PTE read by an MG-LRU aging walk (`walk_pte_range`): a sequential read and, when
    /// young, a test-and-clear. Estimate: 5 ns.
    pub walk_pte_ns: u64,
    /// Each PMD entry visited by an aging walk (`walk_pmd_range`, Bloom filter test).
    /// Estimate: 20 ns.
    pub walk_pmd_ns: u64,
    /// Each PTE read by look-around (`lru_gen_look_around`). Estimate: 5 ns.
    pub lookaround_pte_ns: u64,
    /// A context switch when a CPU changes thread. ~1.5 µs (a commonly measured Linux
    /// figure with cache effects; estimate).
    pub context_switch_ns: u64,
    /// Waking kswapd (`wakeup_kswapd`, charged to the waker). Estimate: 1 µs.
    pub wakeup_ns: u64,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            access_ns: 100,
            minor_fault_ns: 1_000,
            major_fault_ns: 3_000,
            scan_page_ns: 300,
            reclaim_page_ns: 2_000,
            walk_pte_ns: 5,
            walk_pmd_ns: 20,
            lookaround_pte_ns: 5,
            context_switch_ns: 1_500,
            wakeup_ns: 1_000,
        }
    }
}

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
        }
    }
}

pub use crate::sched::default_slice_ns;

/// What a timed run produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimedResult {
    pub version: String,
    pub policy: String,
    pub workload: String,
    pub seed: u64,
    pub frames: u32,
    pub footprint_pages: u64,
    pub cpus: u32,
    pub slice_ns: u64,
    pub device: String,
    pub options: BTreeMap<String, String>,
    /// When the last application thread finished.
    pub runtime_ns: u64,
    pub stats: Stats,
    /// The counters under their `/proc/vmstat` names.
    pub vmstat: BTreeMap<String, u64>,
    pub cpu: CpuTimes,
    pub threads: Vec<ThreadTimes>,
    pub device_stats: DeviceStats,
    /// Largest number of frames held by the swap device (zram's pool).
    pub device_frames_peak: u64,
    /// Request latency per kind (`read`, `update`, `insert`, `all`), when the workload has
    /// requests.
    pub latency: BTreeMap<String, Summary>,
    /// `(highest equivalent value ns, count)` per kind: the histograms themselves.
    pub latency_buckets: BTreeMap<String, Vec<(u64, u64)>>,
    pub policy_counters: BTreeMap<String, u64>,
    /// Samples every `sample_every_ns`: the simulated time and the counters then.
    pub series: Vec<Sample>,
}

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
    pub accesses: u64,
    pub major_faults: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub time_ns: u64,
    pub stats: Stats,
    pub kswapd_ns: u64,
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

/// Run `workload` on the machine of `spec`. `progress(now_ns)` is called now and then.
pub fn run(
    spec: &TimedSpec,
    workload: Box<dyn Workload>,
    progress: Option<&mut dyn FnMut(u64)>,
) -> Result<TimedResult> {
    if spec.timed.cpus == 0 || spec.timed.cpus > 4096 {
        return Err(Error::config(
            "cpus",
            format!("must be 1..=4096, got {}", spec.timed.cpus),
        ));
    }
    if spec.timed.step_ns == 0 {
        return Err(Error::config("step_ns", "must be at least 1"));
    }
    if workload.threads() == 0 {
        return Err(Error::config("workload", "has no threads"));
    }
    let device = device::build(&spec.timed.device)?;
    let mut machine = spec.machine.clone();
    machine.defer_kswapd = true;
    // zram sets SWP_SYNCHRONOUS_IO (`zram_add`: QUEUE_FLAG_SYNCHRONOUS → swapon).
    machine.swap_sync_io = spec.timed.device.kind() == "zram";
    let v = Visit {
        machine,
        timed: spec.timed.clone(),
        workload,
        device,
        progress,
    };
    let out = spec.policy.build(spec.machine.frames, &spec.options, v)??;
    Ok(TimedResult {
        policy: spec.policy.name().to_string(),
        seed: spec.options.seed,
        options: spec
            .options
            .keys()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        ..out
    })
}

struct Visit<'a> {
    machine: MachineConfig,
    timed: TimedConfig,
    workload: Box<dyn Workload>,
    device: Box<dyn SwapDevice>,
    progress: Option<&'a mut dyn FnMut(u64)>,
}

impl PolicyVisitor for Visit<'_> {
    type Out = Result<TimedResult>;
    fn visit<P: Policy>(self, p: P) -> Self::Out {
        let m = Machine::new(&self.machine, p)?;
        let mut sched = Sched::new(SchedConfig::new(
            self.timed.cpus,
            self.timed.slice_ns,
            self.timed.costs.context_switch_ns,
        )?);
        for _ in 0..self.workload.threads() {
            sched.spawn(true, 0);
        }
        let mut sim = Sim::new(m, self.timed, self.workload, self.device);
        sched.spawn(false, 0); // kswapd
        sched.hook_at = sim.next_sample;
        sched.run(&mut sim, self.progress)?;
        if sim.cfg.sample_every_ns > 0 {
            sim.sample(sched.end_ns, sched.threads[sim.kswapd].cpu_ns);
        }
        Ok(sim.result(&sched))
    }
}

/// An application thread's op stream and counters (its scheduling state is the engine's).
struct Thread {
    buf: Vec<Op>,
    pos: usize,
    req: Option<(u8, u64)>,
    accesses: u64,
    major_faults: u64,
}

/// The native machine's side of the engine ([`crate::sched`]): what its threads do.
struct Sim<P: Policy> {
    m: Machine<P>,
    cfg: TimedConfig,
    wl: Box<dyn Workload>,
    dev: Box<dyn SwapDevice>,
    threads: Vec<Thread>,
    /// The engine's index of kswapd (after the application threads).
    kswapd: usize,
    io: Vec<SwapIo>,
    classes: Vec<ContentClass>,
    cpu: CpuTimes,
    hist: BTreeMap<u8, Histogram>,
    device_frames_peak: u64,
    /// Whether the device's pool is memory charged to the machine (zram with
    /// `charge_device_ram`): then its swap-outs can fail for want of memory.
    pool_charged: bool,
    /// Frames kswapd's current step has reclaimed but not yet, by the simulated clock,
    /// finished freeing: held back from the free list until their timer fires.
    kswapd_hold: u32,
    /// When kswapd's last step ends: a wakeup cannot start it earlier.
    kswapd_busy_until: u64,
    series: Vec<Sample>,
    next_sample: u64,
    /// The work counters after the last fault or kswapd step: hits change none of them, so
    /// this is the "before" of the next fault without reading them on every access.
    last: Work,
}

/// Counters whose deltas are charged as reclaim work.
#[derive(Clone, Copy, Default)]
struct Work {
    scanned: u64,
    stolen: u64,
    scan: ScanWork,
    minor: u64,
    major: u64,
}

impl<P: Policy> Sim<P> {
    fn new(
        mut m: Machine<P>,
        cfg: TimedConfig,
        wl: Box<dyn Workload>,
        dev: Box<dyn SwapDevice>,
    ) -> Self {
        m.mm.swap.device.log_on = true;
        let n_app = wl.threads();
        let threads = (0..n_app)
            .map(|_| Thread {
                buf: Vec::new(),
                pos: 0,
                req: None,
                accesses: 0,
                major_faults: 0,
            })
            .collect();
        let next_sample = if cfg.sample_every_ns > 0 {
            cfg.sample_every_ns
        } else {
            u64::MAX
        };
        Sim {
            m,
            wl,
            dev,
            kswapd: n_app,
            threads,
            io: Vec::new(),
            classes: Vec::new(),
            cpu: CpuTimes::default(),
            hist: BTreeMap::new(),
            device_frames_peak: 0,
            pool_charged: cfg.charge_device_ram && cfg.device.kind() == "zram",
            kswapd_hold: 0,
            kswapd_busy_until: 0,
            series: Vec::new(),
            next_sample,
            cfg,
            last: Work::default(),
        }
    }

    fn work(&self) -> Work {
        let s = &self.m.stats;
        Work {
            scanned: s.pgscan_kswapd + s.pgscan_direct,
            stolen: s.pgsteal_kswapd + s.pgsteal_direct,
            scan: self.m.policy.scan_work(),
            minor: s.minor_faults,
            major: s.major_faults,
        }
    }

    /// CPU time of the reclaim done between `a` and `b`, with its aging and rmap parts.
    fn reclaim_cost(&self, a: &Work, b: &Work) -> (u64, u64, u64) {
        let c = &self.cfg.costs;
        let rmap = (b.scanned - a.scanned) * c.scan_page_ns;
        let aging =
            b.scan
                .since(&a.scan)
                .cost_ns(c.walk_pte_ns, c.walk_pmd_ns, c.lookaround_pte_ns);
        let steal = (b.stolen - a.stolen) * c.reclaim_page_ns;
        (rmap + aging + steal, aging, rmap)
    }

    /// Tell the machine what zram's pool may still take during this step: its allocations
    /// (`zs_malloc`, made from reclaim, which runs with PF_MEMALLOC) may take every free
    /// frame, and a stored page takes, by estimate, the pool's present bytes per
    /// stored page (a whole page before anything is stored). The pool's real size is charged
    /// at the end of the step ([`Machine::set_kernel_pages`]); a swap-out that would not fit
    /// fails (see `Machine`'s failed swap-out).
    fn set_write_room(&mut self) {
        let st = self.dev.stats();
        let per_page = st
            .ram_bytes
            .checked_div(st.pages_stored)
            .map_or(4096, |b| b.clamp(1, 4096));
        self.m.mm.swap.pool = Some(crate::mm::PoolCharge {
            per_page,
            pending: 0,
        });
    }

    /// Hand the logged swap I/O to the device at time `now`. Returns the CPU time charged to
    /// the submitting thread and the completion time of the last read (0 if none).
    fn do_io(&mut self, now: u64) -> (u64, u64) {
        if !self.m.mm.swap.device.has_log() {
            return (0, 0);
        }
        let mut io = std::mem::take(&mut self.io);
        self.m.mm.swap.device.take_log(&mut io);
        let mut cpu = 0u64;
        let mut read_done = 0u64;
        for &x in &io {
            let t = now + cpu;
            match x {
                SwapIo::Read { slot, n } => {
                    self.classes.clear();
                    for s in slot..slot + n {
                        let c = self.slot_class(s);
                        self.classes.push(c);
                    }
                    let c = self.dev.submit(t, IoKind::Read, slot as u64, &self.classes);
                    cpu += c.cpu_ns;
                    read_done = read_done.max(c.done_at);
                    self.m.mm.lock_for_read(slot, n, c.done_at);
                }
                SwapIo::Write { slot } => {
                    self.classes.clear();
                    let c = self.slot_class(slot);
                    self.classes.push(c);
                    let c = self
                        .dev
                        .submit(t, IoKind::Write, slot as u64, &self.classes);
                    cpu += c.cpu_ns;
                }
                SwapIo::Discard { slot } => self.dev.discard(slot as u64, 1),
            }
        }
        self.io = io;
        self.cpu.device_ns += cpu;
        let pages = self.dev.ram_bytes().div_ceil(4096);
        self.device_frames_peak = self.device_frames_peak.max(pages);
        self.set_reservation();
        (cpu, read_done)
    }

    /// Frames held back from the free list: zram's pool when it is charged to the machine
    /// (it is memory), and what kswapd's running step has not yet finished freeing.
    fn set_reservation(&mut self) {
        let pool = if self.cfg.charge_device_ram {
            self.dev.ram_bytes().div_ceil(4096).min(u32::MAX as u64) as u32
        } else {
            0
        };
        let n = pool.saturating_add(self.kswapd_hold);
        if n > 0 || self.m.mm.frames.reserved() > 0 {
            self.m.set_kernel_pages(n);
        }
    }

    fn slot_class(&self, slot: u32) -> ContentClass {
        match self.m.mm.swap.owner(slot) {
            Some(pte) => self.wl.content_class(self.m.mm.pt.vpn_of(pte)),
            None => ContentClass::Random,
        }
    }

    fn sample(&mut self, t: u64, kswapd_ns: u64) {
        self.series.push(Sample {
            time_ns: t,
            stats: self.m.stats.clone(),
            kswapd_ns,
        });
    }

    /// Run application thread `t` for up to one step from `now`.
    fn step_app(&mut self, s: &mut Sched, t: usize, now: u64) -> Result<Step> {
        let end = now + self.cfg.step_ns;
        let mut clock = now;
        let costs = self.cfg.costs.clone();
        loop {
            if self.threads[t].pos == self.threads[t].buf.len() {
                let mut buf = std::mem::take(&mut self.threads[t].buf);
                buf.clear();
                self.wl.next_ops(t, &mut buf)?;
                let th = &mut self.threads[t];
                th.buf = buf;
                th.pos = 0;
                if th.buf.is_empty() {
                    return Ok(Step::Done(clock));
                }
            }
            // (checked after the refill, so a thread that has just run out finishes now)
            if clock >= end {
                return Ok(Step::Ran(clock));
            }
            let op = self.threads[t].buf[self.threads[t].pos];
            self.threads[t].pos += 1;
            match op {
                Op::Access { page, write } => {
                    let faults = self.m.stats.faults;
                    self.m.mm.now = clock;
                    self.m.access(
                        Access {
                            page,
                            write,
                            gup: false,
                        },
                        u64::MAX,
                    );
                    self.threads[t].accesses += 1;
                    clock += costs.access_ns;
                    if self.m.stats.faults != faults {
                        let a = self.last;
                        let b = self.work();
                        self.last = b;
                        clock += (b.minor - a.minor) * costs.minor_fault_ns;
                        let majors = b.major - a.major;
                        clock += majors * costs.major_fault_ns;
                        self.threads[t].major_faults += majors;
                        let (reclaim, aging, rmap) = self.reclaim_cost(&a, &b);
                        clock += reclaim;
                        self.cpu.direct_reclaim_ns += reclaim;
                        self.cpu.aging_ns += aging;
                        self.cpu.rmap_scan_ns += rmap;
                        let (dev_cpu, read_done) = self.do_io(clock);
                        clock += dev_cpu;
                        if self.m.kswapd_awake() && s.threads[self.kswapd].state == State::Sleeping
                        {
                            clock += costs.wakeup_ns;
                            // A wakeup during its last step's simulated time takes effect
                            // when it ends.
                            let at = (clock + costs.wakeup_ns).max(self.kswapd_busy_until);
                            s.wake(self.kswapd, at);
                        }
                        if read_done > clock {
                            // Block until the read is there; the CPU goes to the next thread.
                            return Ok(Step::Block {
                                at: clock,
                                until: read_done,
                            });
                        }
                    }
                }
                Op::Compute { ns } => clock += ns as u64,
                Op::RequestBegin { kind } => self.threads[t].req = Some((kind, clock)),
                Op::RequestEnd => {
                    if let Some((k, start)) = self.threads[t].req.take() {
                        self.hist.entry(k).or_default().record(clock - start);
                    }
                }
                Op::Barrier => return Ok(Step::Barrier(clock)),
            }
        }
    }

    /// kswapd runs one `balance_pgdat` pass per step.
    fn step_kswapd(&mut self, s: &mut Sched, now: u64) -> Result<Step> {
        let a = self.last;
        self.m.mm.now = now;
        let more = self.m.kswapd_step();
        let b = self.work();
        self.last = b;
        let (reclaim, aging, rmap) = self.reclaim_cost(&a, &b);
        self.cpu.aging_ns += aging;
        self.cpu.rmap_scan_ns += rmap;
        let mut clock = now + reclaim.max(1);
        let (dev_cpu, _) = self.do_io(clock);
        clock += dev_cpu;
        self.kswapd_busy_until = clock;
        // The machine freed the step's pages at once; kswapd frees them over the step's
        // simulated time, in `shrink_folio_list` batches of SWAP_CLUSTER_MAX: hold them back
        // and give each batch to the free list when kswapd's clock reaches it.
        let freed = (b.stolen - a.stolen).min(u32::MAX as u64) as u32;
        if freed > 0 {
            let batches = freed.div_ceil(SWAP_CLUSTER_MAX) as u64;
            self.kswapd_hold += freed;
            self.set_reservation();
            let mut left = freed;
            for i in 1..=batches {
                let n = left.min(SWAP_CLUSTER_MAX);
                left -= n;
                s.timer(now + (clock - now) * i / batches, n);
            }
        }
        if more || self.m.kswapd_awake() {
            Ok(Step::Ran(clock))
        } else {
            Ok(Step::Sleep {
                at: clock,
                until: None,
            })
        }
    }

    /// The CPU times the engine kept per thread, summed as [`CpuTimes`].
    fn fill_cpu_times(&mut self, s: &Sched) {
        let c = &mut self.cpu;
        for th in s.threads.iter().filter(|t| t.app) {
            c.app_ns += th.cpu_ns;
            c.io_wait_ns += th.blocked_ns;
            c.runqueue_wait_ns += th.runq_wait_ns;
            c.barrier_wait_ns += th.barrier_wait_ns;
        }
        let k = &s.threads[self.kswapd];
        c.kswapd_ns = k.cpu_ns;
        c.kswapd_runs = k.runs;
        c.context_switches = s.context_switches;
    }

    fn result(mut self, s: &Sched) -> TimedResult {
        self.fill_cpu_times(s);
        let mut latency = BTreeMap::new();
        let mut buckets = BTreeMap::new();
        let mut all = Histogram::new();
        for (k, h) in &self.hist {
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
        let stats = self.m.stats.clone();
        TimedResult {
            version: crate::replay::VERSION.to_string(),
            policy: String::new(),
            workload: self.wl.name(),
            seed: 0,
            frames: self.m.mm.frames.len(),
            footprint_pages: self.wl.footprint_pages(),
            cpus: self.cfg.cpus,
            slice_ns: s.cfg.slice_ns,
            device: self.cfg.device.to_string(),
            options: BTreeMap::new(),
            runtime_ns: s.end_ns,
            vmstat: vmstat(&stats),
            stats,
            cpu: self.cpu,
            threads: self
                .threads
                .iter()
                .zip(&s.threads)
                .map(|(t, st)| ThreadTimes {
                    cpu_ns: st.cpu_ns,
                    io_wait_ns: st.blocked_ns,
                    finish_ns: st.finish_ns,
                    accesses: t.accesses,
                    major_faults: t.major_faults,
                })
                .collect(),
            device_stats: self.dev.stats(),
            device_frames_peak: self.device_frames_peak,
            latency,
            latency_buckets: buckets,
            policy_counters: self
                .m
                .policy
                .counters()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            series: self.series,
        }
    }
}

impl<P: Policy> Exec for Sim<P> {
    fn step(&mut self, s: &mut Sched, t: usize, c: usize, now: u64) -> Result<Step> {
        // Swap slots come from this CPU's cluster (`percpu_cluster`).
        self.m.mm.swap.set_cpu(c);
        if self.pool_charged {
            self.set_write_room();
        }
        let out = if t == self.kswapd {
            self.step_kswapd(s, now)
        } else {
            self.step_app(s, t, now)
        }?;
        self.check_oom()?;
        Ok(out)
    }

    /// kswapd has finished freeing `token` more of the frames its step reclaimed.
    fn timer(&mut self, _s: &mut Sched, token: u32, _now: u64) -> Result<()> {
        self.kswapd_hold = self.kswapd_hold.saturating_sub(token);
        self.set_reservation();
        Ok(())
    }

    fn before(&mut self, s: &mut Sched, now: u64) -> Result<()> {
        while now >= self.next_sample {
            if self.series.len() as u64 >= crate::replay::MAX_SAMPLES {
                return Err(Error::config(
                    "sample_every_ns",
                    format!(
                        "{} ns gives more than {} samples by simulated time {} ns; sample less often (0 = no series)",
                        self.cfg.sample_every_ns,
                        crate::replay::MAX_SAMPLES,
                        self.next_sample
                    ),
                ));
            }
            self.sample(self.next_sample, s.threads[self.kswapd].cpu_ns);
            self.next_sample += self.cfg.sample_every_ns;
        }
        s.hook_at = self.next_sample;
        Ok(())
    }
}

impl<P: Policy> Sim<P> {
    /// Memory ran out in the step just run (only a step touches memory): the error Linux's
    /// OOM kill stands for.
    fn check_oom(&self) -> Result<()> {
        let Some(oom) = self.m.out_of_memory() else {
            return Ok(());
        };
        let failed = self.m.stats.swap_write_errors;
        let msg = if failed > 0 {
            format!(
                "out of memory at access {oom}: zram's compressed pool ({} of {} frames) left no memory for the swap-outs that would free more ({failed} failed writes, zram's failed_writes; Linux would OOM-kill here); give more frames, or keep the pool out of the capacity (a memory cgroup limit: machine.cgroup = true, `vmemsim run --cgroup`, vmemsim.run(cgroup=True))",
                self.m.mm.frames.reserved(),
                self.m.mm.frames.len()
            )
        } else {
            format!(
                "out of memory at access {oom}: {} could reclaim nothing with {} frames (Linux would OOM-kill here); give more frames",
                self.m.policy.name(),
                self.m.mm.frames.len()
            )
        };
        Err(Error::config("frames", msg))
    }
}

#[cfg(test)]
mod tests;

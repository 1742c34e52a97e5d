//! The VM layer's side of memory ballooning: the guest's virtio-balloon driver
//! ([`BalloonDriver`], Linux 6.8 `drivers/virtio/virtio_balloon.c`) run in time on the VM's
//! vCPUs, with its allocations and frees made by the guest's memory manager and QEMU's
//! discards (QEMU 7.2+ `hw/virtio/virtio-balloon.c`) made by the host's. The driver and the
//! manager themselves are pure structures in [`crate::vm::balloon`]; this file owns their
//! loop.
//!
//! # What a round does
//!
//! - *The kworker* (`update_balloon_size_func` on `system_freezable_wq`): each round runs on
//!   the first of the VM's vCPUs the engine schedules at or after the round is due (a
//!   work item runs where it was queued: any vCPU); when none of them is running, a halted
//!   one is woken for it at that time (as for the guest's kswapd). Its guest CPU (the driver's per-page
//!   and kick costs, [`BalloonCosts`], plus the guest reclaim its allocations ran) advances
//!   that vCPU's clock, as a kernel thread that preempts the stream would; the wait for
//!   QEMU (`tell_host`, the host's per-page `madvise`) and `fill_balloon`'s `msleep(200)`
//!   after a failed allocation leave the vCPU to its stream and delay the next round only.
//! - *Inflate* (`fill_balloon`): up to 256 allocations with the guest's allocator
//!   ([`Machine::alloc_noretry`]: `balloon_page_alloc`'s `__GFP_NORETRY`, so kswapd is woken
//!   and one direct reclaim runs when free memory is at the min watermark, exactly as for any
//!   allocation, and the first allocation that still fails ends the round: "Out of puff").
//!   The pages are held off the LRU lists, neither free nor reclaimable. QEMU's
//!   `balloon_inflate_page` → `ram_block_discard_range` (`MADV_DONTNEED`) then drops the
//!   host's backing of each reported gfn: its host frame is freed, or its host swap slot if
//!   the host had swapped it out; the EPT entry goes with it (the MMU notifier →
//!   `kvm_unmap_gfn_range`, one INVEPT per round) or, under shadow paging, the shadow
//!   entries (`kvm_unmap_gfn_range` into KVM's shadow MMU).
//! - *Deflate* (`leak_balloon`): the host is told first (QEMU's `balloon_deflate_page` only
//!   advises `MADV_WILLNEED`: nothing is mapped), then the pages go back to the guest's free
//!   list; a deflated page has no host backing until the guest touches it again (an EPT
//!   violation or host fault, charged as any).
//! - *Deflate on OOM* (`virtio_balloon_oom_notify`, only with `deflate_on_oom`, QEMU's
//!   `deflate-on-oom=on`; QEMU's default is off): the guest allocator's `out_of_memory`
//!   calls the notifier ([`crate::engine::OomNotifier`]) before it would kill; 256 pages
//!   go back and the allocation retries. The round's guest and host time is the faulting
//!   vCPU's (the faulting task runs the notifier and waits for QEMU), charged when its step
//!   ends.
//! - *OOM kill*: a guest with a balloon device whose memory runs out with nothing to
//!   reclaim and nothing the notifier could give back kills the workload: the VM's run ends
//!   there, recorded in [`BalloonResult::oom_kill_ns`], not as an error (without a balloon
//!   device the run still ends with the error that asks for more guest memory).
//!
//! Left out: the guest's fair scheduler does not account the kworker's CPU time against the
//! stream's (the guest's kswapd is accounted); QEMU's CPU time is not charged to a host CPU; a host swap
//! slot freed by a discard is not discarded on a timed host swap device; the killed
//! workload's memory is not freed (`oom_reaper`): the VM's run ends at the kill.

use std::cell::RefCell;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::*;
use crate::mm::FrameId;
use crate::vm::balloon::{
    BalloonDriver, BalloonDriverConfig, BalloonManager, Decision, Direction, GuestCounters,
    GuestSample, HostSample, NextRound, Round,
};

/// A VM's virtio-balloon device (`-device virtio-balloon`): the driver's negotiated
/// features and costs, and the balloon's size at boot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BalloonConfig {
    /// `deflate_on_oom` (off by default, as QEMU's `deflate-on-oom`) and the round costs.
    pub driver: BalloonDriverConfig,
    /// Pages the balloon is to hold from time 0 (QEMU's `balloon` monitor command, or
    /// libvirt's `setMemory`, at boot): `num_pages`. 0: an empty balloon.
    pub size_pages: u64,
    /// Later targets set by the host at given times (`(time_ns, num_pages)`, as `virsh
    /// setmem` calls), in time order; each notifies the driver (`virtballoon_changed`).
    pub script: Vec<(u64, u64)>,
}

/// One target the balloon manager set for a VM, as the VM saw it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalloonDecision {
    /// The evaluation's time, ns.
    pub time_ns: u64,
    /// The host was under pressure (MOM's shrink rule) or not (grow).
    pub shrink: bool,
    /// MOM's memory target (KiB) and the balloon size QEMU makes of it (pages).
    pub target_kib: u64,
    pub target_pages: u64,
    /// Pages in the balloon when the target was set (the lag: the next evaluation starts
    /// from `actual`, not from the target).
    pub actual_pages: u64,
}

/// The balloon at one of the manager's samples (every `sample_interval_ns`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalloonPoint {
    pub time_ns: u64,
    pub target_pages: u64,
    pub actual_pages: u64,
    /// The guest's free pages as its stats reported them.
    pub free_pages: u64,
}

/// What a VM's balloon did in a run ([`RunResult::balloon`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalloonResult {
    /// `num_pages` (the host's target) and `actual` (pages in the balloon) at the end.
    pub target_pages: u64,
    pub actual_pages: u64,
    /// Pages inflated and deflated (OOM deflations included in `deflated`, and counted in
    /// `oom_deflated`).
    pub inflated: u64,
    pub deflated: u64,
    pub oom_deflated: u64,
    /// Rounds of the work item (OOM deflations included) and failed allocations ("Out of
    /// puff!").
    pub rounds: u64,
    pub out_of_puff: u64,
    /// The host frames and host swap slots freed by discarding inflated pages (pages the
    /// host had never backed free nothing).
    pub host_frames_released: u64,
    pub host_swap_released: u64,
    /// The driver's guest CPU time (its rounds', the OOM deflations' and, with MOM, the
    /// stats replies'; the reclaim its allocations ran is in `time.reclaim_ns`), QEMU's
    /// time it waited for, and its out-of-puff sleeps, ns.
    pub guest_ns: u64,
    pub host_ns: u64,
    pub sleep_ns: u64,
    /// When the last round ended (its QEMU wait and sleep included), ns.
    pub last_round_end_ns: u64,
    /// The guest OOM-killed the workload at this time (ns): the VM's run ended there.
    pub oom_killed: bool,
    pub oom_kill_ns: Option<u64>,
    /// The balloon manager's targets for this VM (with `mom`), in time order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<BalloonDecision>,
    /// The balloon at each of the manager's samples (with `mom`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<BalloonPoint>,
}

/// The driver as both the VM and the guest's OOM notifier reach it.
#[derive(Debug)]
struct DriverCell {
    drv: BalloonDriver,
    /// OOM deflations done by the notifier, not yet charged to a vCPU.
    oom_rounds: Vec<Round>,
}

/// The guest's OOM notifier: `virtio_balloon_oom_notify`.
#[derive(Debug)]
struct OomDeflate(Rc<RefCell<DriverCell>>);

impl crate::engine::OomNotifier for OomDeflate {
    fn notify(&mut self) -> Vec<FrameId> {
        let mut c = self.0.borrow_mut();
        let r = c.drv.oom_notify();
        let pfns = r.pfns.clone();
        if !pfns.is_empty() {
            c.oom_rounds.push(r);
        }
        pfns
    }
}

/// A VM's balloon device in a run.
pub(super) struct BalloonDev {
    cell: Rc<RefCell<DriverCell>>,
    /// When the work item's next round may start: the end of the last one (its wait for
    /// QEMU and its sleep included).
    next_at: u64,
    /// The host's scripted targets not yet set.
    script: std::collections::VecDeque<(u64, u64)>,
    res: BalloonResult,
}

impl BalloonDev {
    /// The device of a guest of `guest_frames` 4 KiB pages; with deflate-on-OOM the
    /// guest's OOM notifier is registered (`virtballoon_probe`).
    pub(super) fn new(
        cfg: &BalloonConfig,
        guest_frames: u32,
        guest: &mut Machine<BoxedPolicy>,
    ) -> Result<BalloonDev> {
        for &(_, pages) in std::iter::once(&(0, cfg.size_pages)).chain(&cfg.script) {
            if pages > guest_frames as u64 {
                return Err(Error::config(
                    "balloon_size_mib",
                    format!(
                        "{pages} pages is more than the guest's {guest_frames} pages of memory"
                    ),
                ));
            }
        }
        if cfg.script.windows(2).any(|w| w[0].0 > w[1].0) {
            return Err(Error::config(
                "balloon.script",
                "targets must be in time order",
            ));
        }
        let mut drv = BalloonDriver::new(guest_frames as u64, cfg.driver.clone());
        if cfg.size_pages > 0 {
            drv.set_target(cfg.size_pages);
        }
        let cell = Rc::new(RefCell::new(DriverCell {
            drv,
            oom_rounds: Vec::new(),
        }));
        if cfg.driver.deflate_on_oom {
            guest.set_oom_notifier(Box::new(OomDeflate(cell.clone())));
        }
        Ok(BalloonDev {
            cell,
            next_at: 0,
            script: cfg.script.iter().copied().collect(),
            res: BalloonResult::default(),
        })
    }
}

impl Vm {
    /// Set the scripted targets due at `now`; returns when the next one is (`u64::MAX`:
    /// none).
    pub(super) fn balloon_script(&mut self, now: u64) -> u64 {
        let Some(b) = self.balloon.as_mut() else {
            return u64::MAX;
        };
        while let Some(&(t, pages)) = b.script.front() {
            if t > now {
                return t;
            }
            b.script.pop_front();
            b.cell.borrow_mut().drv.set_target(pages);
        }
        u64::MAX
    }

    /// The guest's counters as `update_balloon_stats` reads them. `si_mem_available` is
    /// taken as free pages plus the page cache (its reserve and half-of-cache terms left
    /// out).
    fn balloon_counters(&self) -> GuestCounters {
        let st = &self.guest.stats;
        let free = self.guest.mm.frames.n_free() as u64;
        GuestCounters {
            totalram_pages: self.guest_frames as u64,
            free_pages: free,
            available_pages: free + st.nr_file_pages,
            file_pages: st.nr_file_pages,
            pswpin: st.pswpin,
            pswpout: st.pswpout,
            pgmajfault: st.major_faults,
            pgfault: st.pgfault,
        }
    }

    /// The host's stats request at `now` (QEMU's `guest-stats-polling-interval` timer, at
    /// the manager's sample interval): the guest answers at once (`stats_handle_request`).
    /// Its guest time (`stats_ns` + `kick_ns`, 15 µs by default every 5 s) is counted in
    /// [`BalloonResult::guest_ns`] but charged to no vCPU (left out: a vCPU whose stream
    /// has ended would otherwise run on). Returns MOM's view of the guest and records a
    /// [`BalloonPoint`].
    pub(super) fn balloon_sample(&mut self, now: u64) -> Option<GuestSample> {
        let counters = self.balloon_counters();
        let b = self.balloon.as_mut()?;
        let mut c = b.cell.borrow_mut();
        let (stats, ns) = c.drv.stats_request(&counters);
        b.res.guest_ns += ns;
        b.res.samples.push(BalloonPoint {
            time_ns: now,
            target_pages: c.drv.target(),
            actual_pages: c.drv.actual(),
            free_pages: stats.free_bytes / 4096,
        });
        Some(c.drv.guest_sample(0))
    }

    /// MOM's view of the guest between stats requests (its last stats).
    fn balloon_view(&self) -> GuestSample {
        let b = self.balloon.as_ref().expect("MOM's VMs have balloons");
        let view = b.cell.borrow().drv.guest_sample(0);
        view
    }

    /// The manager's decision for this VM at `now`: the driver's new target.
    pub(super) fn balloon_decide(&mut self, now: u64, d: &Decision) {
        let Some(b) = self.balloon.as_mut() else {
            return;
        };
        let actual = b.cell.borrow().drv.actual();
        b.res.decisions.push(BalloonDecision {
            time_ns: now,
            shrink: d.direction == Direction::Shrink,
            target_kib: d.target_kib,
            target_pages: d.balloon_pages,
            actual_pages: actual,
        });
        b.cell.borrow_mut().drv.set_target(d.balloon_pages);
    }

    /// Whether the VM's balloon has a round due at `now` (the work item is queued and the
    /// last round is over), and the workload has not been killed.
    pub(super) fn balloon_due(&self, now: u64) -> bool {
        self.balloon.as_ref().is_some_and(|b| {
            b.res.oom_kill_ns.is_none() && b.next_at <= now && b.cell.borrow().drv.work_queued()
        })
    }

    /// When the balloon's next round is due (`None`: no work queued, or the workload was
    /// killed).
    pub(super) fn balloon_next_due(&self) -> Option<u64> {
        let b = self.balloon.as_ref()?;
        (b.res.oom_kill_ns.is_none() && b.cell.borrow().drv.work_queued()).then_some(b.next_at)
    }

    /// The guest OOM-killed the workload (the VM's vCPUs have nothing left to run).
    pub(super) fn oom_killed(&self) -> bool {
        self.balloon
            .as_ref()
            .is_some_and(|b| b.res.oom_kill_ns.is_some())
    }

    /// An error in a vCPU's op: with a balloon device, a guest out of memory is the OOM
    /// killer's kill of the workload at vCPU `v`'s clock (true: recorded, the VM's run
    /// ends); otherwise the error stands.
    pub(super) fn oom_kill(&mut self, v: usize) -> bool {
        let now = self.vcpus[v].clock;
        let oom = self.guest.out_of_memory().is_some();
        match self.balloon.as_mut() {
            Some(b) if oom => {
                b.res.oom_killed = true;
                b.res.oom_kill_ns.get_or_insert(now);
                true
            }
            _ => false,
        }
    }

    /// One round of the balloon's work item on vCPU `v` (see the module docs).
    pub(super) fn balloon_round(&mut self, v: usize, cls: Classes<'_>) -> Result<()> {
        let Some(b) = self.balloon.as_ref() else {
            return Ok(());
        };
        let cell = b.cell.clone();
        self.last_valid = false;
        let before = self.work_snapshot();
        self.guest.mm.now = self.vcpus[v].clock;
        let next = cell.borrow().drv.next_round();
        let round = match next {
            NextRound::Idle => {
                cell.borrow_mut().drv.finish_idle();
                return Ok(());
            }
            NextRound::Inflate { pages } => {
                let mut got = Vec::with_capacity(pages as usize);
                let mut failed = false;
                for _ in 0..pages {
                    match self.guest.alloc_noretry() {
                        Some(f) => got.push(f),
                        None => {
                            failed = true;
                            break;
                        }
                    }
                }
                cell.borrow_mut().drv.inflate(&got, failed)
            }
            NextRound::Deflate { .. } => {
                // The host is told first (`VIRTIO_BALLOON_F_MUST_TELL_HOST`), then
                // `release_pages_balloon`.
                let r = cell.borrow_mut().drv.deflate();
                for &f in &r.pfns {
                    self.guest.free_held_frame(f);
                }
                r
            }
        };
        // The allocations' reclaim: its unmaps, its time and swap writes, on this vCPU.
        self.sync_guest_unmaps(Some(v))?;
        let after = self.work_snapshot();
        self.charge(v, &before, &after, false, cls);
        if round.kind == crate::vm::balloon::RoundKind::Inflate {
            self.host_discard(&round.pfns);
        }
        let vc = &mut self.vcpus[v];
        vc.clock += round.guest_ns;
        let end = vc.clock + round.host_ns + round.sleep_ns;
        self.r.time.balloon_ns += round.guest_ns;
        let b = self.balloon.as_mut().expect("checked above");
        b.next_at = end;
        b.res.last_round_end_ns = end;
        b.res.guest_ns += round.guest_ns;
        b.res.host_ns += round.host_ns;
        b.res.sleep_ns += round.sleep_ns;
        Ok(())
    }

    /// QEMU's `ram_block_discard_range` of each inflated gfn: the host frees the frame or
    /// the swap slot backing it, and the EPT or shadow entries go (one flush per round).
    fn host_discard(&mut self, gfns: &[FrameId]) {
        let Some(host) = self.host.as_ref() else {
            return;
        };
        let (mut frames, mut slots) = (0, 0);
        {
            let mut sh = host.shared.borrow_mut();
            for &g in gfns {
                match sh.discard(host.vm, host.base, g as u64) {
                    Some(true) => frames += 1,
                    Some(false) => slots += 1,
                    None => {}
                }
            }
        }
        self.sync_host_unmaps();
        let b = self.balloon.as_mut().expect("a VM with a balloon");
        b.res.host_frames_released += frames;
        b.res.host_swap_released += slots;
    }

    /// Charge the OOM deflations the guest's notifier made since the last call to vCPU
    /// `v`, whose allocation ran them: the driver's guest time and the wait for QEMU.
    pub(super) fn balloon_charge_oom(&mut self, v: usize) {
        let Some(b) = self.balloon.as_mut() else {
            return;
        };
        let rounds = std::mem::take(&mut b.cell.borrow_mut().oom_rounds);
        for r in rounds {
            let d = r.guest_ns + r.host_ns;
            self.vcpus[v].clock += d;
            self.r.time.balloon_ns += d;
            b.res.guest_ns += r.guest_ns;
            b.res.host_ns += r.host_ns;
        }
    }

    /// The balloon's counters into a result.
    pub(super) fn balloon_result(&self) -> Option<BalloonResult> {
        let b = self.balloon.as_ref()?;
        let c = b.cell.borrow();
        let k = c.drv.counters();
        Some(BalloonResult {
            target_pages: c.drv.target(),
            actual_pages: c.drv.actual(),
            inflated: k.inflated,
            deflated: k.deflated,
            oom_deflated: k.oom_deflated,
            rounds: k.rounds,
            out_of_puff: k.out_of_puff,
            ..b.res.clone()
        })
    }

    /// The balloon's invariants: the driver's, and the guest holds exactly its pages.
    pub(super) fn balloon_validate(&self) -> std::result::Result<(), String> {
        let Some(b) = self.balloon.as_ref() else {
            return Ok(());
        };
        let c = b.cell.borrow();
        c.drv.validate()?;
        let held = self.guest.mm.frames.n_held() as u64;
        if held != c.drv.actual() {
            return Err(format!(
                "the guest holds {held} frames off its lists, the balloon {}",
                c.drv.actual()
            ));
        }
        Ok(())
    }
}

impl HostShared {
    /// `ram_block_discard_range` of VM `vm`'s gfn `gfn` (its host memory from `base`):
    /// `Some(true)` when a host frame was freed, `Some(false)` a swap slot, `None` when the
    /// host held nothing for it. The EPT entry, if any, is dropped with the VM's next
    /// `sync_host_unmaps`.
    pub(super) fn discard(&mut self, vm: usize, base: u64, gfn: u64) -> Option<bool> {
        let key = base + gfn;
        let pte = self.m.mm.pt.pte(key);
        let present = pte & PTE_PRESENT != 0;
        let swapped = pte & crate::mm::PTE_SWAP != 0;
        self.m.unmap_page(key);
        if present {
            self.pending[vm].push(gfn);
            Some(true)
        } else if swapped {
            Some(false)
        } else {
            None
        }
    }
}

/// MOM as a host thread of the engine: [`BalloonManager::poll`] at its
/// [`BalloonManager::next_event`] times on the engine's clock, with the host's free memory
/// (MemFree + Buffers + Cached: the host's free pages and its page cache) and each guest's
/// stats, requested at each sample; its targets go to the drivers at the evaluation's time
/// (MOM's own CPU time and libvirt's latency left out, as `vm::balloon` says).
pub(super) struct MomThread {
    mgr: BalloonManager,
}

impl MomThread {
    /// The manager of `vms` (the first VM's `mom` is the host's); every VM needs a balloon.
    pub(super) fn new(vms: &[Vm]) -> Result<Option<MomThread>> {
        let Some(cfg) = vms[0].mom.clone() else {
            return Ok(None);
        };
        if vms.iter().any(|vm| vm.balloon.is_none()) {
            return Err(Error::config(
                "mom",
                "MOM manages balloons: every VM needs a balloon device (balloon = true)",
            ));
        }
        let mgr = BalloonManager::new(vms.len(), cfg).map_err(mom_config_error)?;
        Ok(Some(MomThread { mgr }))
    }

    pub(super) fn next_event(&self) -> u64 {
        self.mgr.next_event()
    }

    pub(super) fn counters(&self) -> crate::vm::balloon::ManagerCounters {
        *self.mgr.counters()
    }

    /// Every event due at `now`.
    pub(super) fn poll(&mut self, vms: &mut [Vm], now: u64) {
        while self.mgr.next_event() <= now {
            let sampling = now >= self.sample_due();
            let guests: Vec<GuestSample> = vms
                .iter_mut()
                .map(|vm| {
                    if sampling {
                        vm.balloon_sample(now)
                    } else {
                        None
                    }
                    .unwrap_or_else(|| vm.balloon_view())
                })
                .collect();
            let host = {
                let h = vms[0].host.as_ref().expect("a VM has a host");
                let sh = h.shared.borrow();
                let m = &sh.m;
                HostSample {
                    mem_total_kib: m.mm.frames.len() as u64 * crate::vm::balloon::PAGE_KIB,
                    mem_free_kib: m.mm.frames.n_free() as u64 * crate::vm::balloon::PAGE_KIB,
                    buffers_kib: 0,
                    cached_kib: m.stats.nr_file_pages * crate::vm::balloon::PAGE_KIB,
                }
            };
            for d in self.mgr.poll(now, &host, &guests) {
                vms[d.vm].balloon_decide(now, &d);
            }
        }
    }

    /// When the manager next samples (its sample is due at or before its evaluation).
    fn sample_due(&self) -> u64 {
        self.mgr.next_sample()
    }
}

/// [`crate::vm::balloon::MomConfig::check`]'s message (`mom.history: ...`) as an error naming the
/// front ends' key (`mom_config.history`).
pub(super) fn mom_config_error(e: String) -> Error {
    match e.split_once(": ") {
        Some((k, m)) => Error::config(k.replacen("mom", "mom_config", 1), m),
        None => Error::config("mom_config", e),
    }
}

#[cfg(test)]
mod tests {
    //! The balloon through the VM layer, on scripted guests; every expected value is worked
    //! out by hand from the driver's rules and [`BalloonCosts`]' defaults (250 ns per page
    //! allocated, 10 µs per kick, 1.5 µs of QEMU per page inflated).
    use super::*;
    use crate::vm::balloon::{BalloonCosts, OUT_OF_PUFF_SLEEP_NS};
    use crate::watermarks::Watermarks;
    use crate::workload::{Op, Workload};

    /// Each vCPU's whole stream, given at once.
    use crate::vm::tests::Script;

    fn script(ops: Vec<Op>) -> Script {
        Script::new(vec![ops])
    }

    fn compute(n: usize) -> Vec<Op> {
        vec![Op::Compute { ns: 1_000 }; n]
    }

    fn touch(pages: std::ops::Range<u64>) -> Vec<Op> {
        pages.map(|page| Op::Access { page, write: true }).collect()
    }

    /// A TDP VM of `guest` frames (watermarks min 8, low 16, high 24) on a host of `host`,
    /// with a balloon of `size` pages at boot.
    fn cfg(guest: u32, host: u32, size: u64, deflate_on_oom: bool) -> VmConfig {
        let mut c = VmConfig::new(Paging::Tdp, guest, host);
        c.guest.watermarks = Some(Watermarks {
            min: 8,
            low: 16,
            high: 24,
        });
        c.balloon = Some(BalloonConfig {
            driver: BalloonDriverConfig {
                deflate_on_oom,
                costs: BalloonCosts::default(),
            },
            size_pages: size,
            script: Vec::new(),
        });
        c
    }

    /// Run `wl` on `vm` in the engine (one vCPU on a host CPU of its own).
    fn run(vm: &mut Vm, wl: &mut Script) -> RunResult {
        let hc = HostCpus::own(wl.threads());
        let out = schedule(
            std::slice::from_mut(vm),
            &mut [wl as &mut dyn Workload],
            hc,
            EngineOpts::default(),
        )
        .unwrap();
        let mut r = vm.result();
        out.fill(&mut r);
        vm.validate().unwrap();
        vm.check_mirror().unwrap();
        r
    }

    fn host_free(vm: &Vm) -> u32 {
        vm.host
            .as_ref()
            .unwrap()
            .shared
            .borrow()
            .m
            .mm
            .frames
            .n_free()
    }

    /// Write `pages` pages and unmap them (directly, before the engine runs): their guest
    /// frames are free again and on top of the free list, and each is still backed by a
    /// host frame (pages the guest frees stay backed).
    fn warm_up(vm: &mut Vm, pages: u64) {
        for op in touch(0..pages) {
            vm.op(0, op).unwrap();
        }
        vm.op(
            0,
            Op::Unmap {
                start: 0,
                pages: pages as u32,
            },
        )
        .unwrap();
    }

    #[test]
    fn an_idle_guest_inflates_in_rounds_of_256_and_the_host_frees_each_backed_page() {
        // 1,000 pages in an idle guest with 4,096 − 8 free pages: ⌈1000/256⌉ = 4 rounds of
        // 256, 256, 256, 232 pages, no reclaim. Round of n pages: guest n·250 + 10,000 ns,
        // QEMU n·1,500 ns. Rounds 1-3: 74,000 + 384,000 = 458,000 ns each; round 4: 68,000
        // + 348,000 = 416,000 ns. Guest time 3·74,000 + 68,000 = 290,000 ns, QEMU's
        // 1,000·1,500 = 1,500,000 ns. The stream's steps are 2 µs of compute, so each round
        // starts exactly when the last one ended: the last ends 3·458,000 + 416,000 =
        // 1,790,000 ns after the first starts.
        // The same under shadow paging (the discards reach KVM's shadow MMU: check_mirror).
        for paging in [Paging::Tdp, Paging::Shadow] {
            let mut c = cfg(4_096, 8_192, 1_000, false);
            c.paging = paging;
            let mut vm = Vm::new(&c, 1).unwrap();
            warm_up(&mut vm, 2_000);
            let start = vm.clock(0);
            let free0 = host_free(&vm);
            let stolen0 = vm.guest.stats.pgsteal_direct + vm.guest.stats.pgsteal_kswapd;
            let r = run(&mut vm, &mut script(compute(3_000)));
            let b = r.balloon.as_ref().unwrap();
            assert_eq!(
                (b.target_pages, b.actual_pages, b.inflated, b.rounds),
                (1_000, 1_000, 1_000, 4)
            );
            assert_eq!((b.out_of_puff, b.deflated, b.oom_killed), (0, 0, false));
            assert_eq!((b.guest_ns, b.host_ns, b.sleep_ns), (290_000, 1_500_000, 0));
            assert_eq!(b.last_round_end_ns - start, 1_790_000);
            assert_eq!(r.time.balloon_ns, 290_000);
            // Each ballooned page was one the warm-up had written and freed: backed.
            assert_eq!((b.host_frames_released, b.host_swap_released), (1_000, 0));
            assert_eq!(host_free(&vm), free0 + 1_000);
            assert_eq!(vm.guest.mm.frames.n_held(), 1_000);
            assert_eq!(
                vm.guest.stats.pgsteal_direct + vm.guest.stats.pgsteal_kswapd,
                stolen0
            );
            // The vCPU ran its 3 ms of compute and the kworker's 290 µs.
            assert_eq!(vm.clock(0) - start, 3_000_000 + 290_000);
        }
    }

    #[test]
    fn the_rounds_run_on_a_halted_vcpu_on_time() {
        // The same 1,000 pages while the stream idles 5 ms for a request's arrival: the
        // vCPU is halted, and is woken for each round when it is due, so the rounds end at
        // 1,790,000 ns as on a busy vCPU; the request then arrives at 5 ms.
        let mut vm = Vm::new(&cfg(4_096, 8_192, 1_000, false), 1).unwrap();
        let ops = vec![
            Op::Arrive { at_ns: 5_000_000 },
            Op::RequestBegin { kind: 0 },
            Op::Compute { ns: 1_000 },
            Op::RequestEnd,
        ];
        let r = run(&mut vm, &mut script(ops));
        let b = r.balloon.as_ref().unwrap();
        assert_eq!((b.actual_pages, b.rounds), (1_000, 4));
        assert_eq!(b.last_round_end_ns, 1_790_000);
        assert_eq!(vm.clock(0), 5_001_000);
    }

    #[test]
    fn an_inflate_into_a_full_guest_reclaims_one_page_per_balloon_page() {
        // A demand guest policy (LRU: no watermarks) whose 1,024 frames all hold dirty
        // pages: each of the 300 balloon allocations evicts one page (a swap write) and
        // takes its frame, which the host backed: 300 evictions, 300 swap-outs, 300 host
        // frames freed, in 2 rounds (256 + 44).
        let mut c = cfg(1_024, 4_096, 300, false);
        c.guest_policy = crate::policy::PolicyKind::from_name("lru").unwrap();
        let mut vm = Vm::new(&c, 1).unwrap();
        for op in touch(0..1_024) {
            vm.op(0, op).unwrap();
        }
        assert_eq!(vm.guest.mm.frames.n_free(), 0);
        let (ev0, out0) = (vm.guest.stats.evictions, vm.guest.stats.pswpout);
        let free0 = host_free(&vm);
        let r = run(&mut vm, &mut script(compute(2_000)));
        let b = r.balloon.as_ref().unwrap();
        assert_eq!((b.actual_pages, b.rounds, b.out_of_puff), (300, 2, 0));
        assert_eq!(vm.guest.stats.evictions - ev0, 300);
        assert_eq!(vm.guest.stats.pswpout - out0, 300);
        assert_eq!(b.host_frames_released, 300);
        assert_eq!(host_free(&vm), free0 + 300);
    }

    #[test]
    fn an_inflate_below_the_min_watermark_runs_direct_reclaim_in_the_guest() {
        // clock-lru, 1,024 frames, 1,000 written (dirty): 24 free. The first round's
        // allocations take 24 − 8 = 16 pages down to min; the 17th reclaims directly once:
        // its victims are dirty anonymous pages, which reclaim writes to swap and cannot
        // free in the same pass (the write completes later), so the allocation still finds
        // free ≤ min and fails (`__GFP_NORETRY`): out of puff, 16 pages, 200 ms of sleep.
        // The later rounds find the written pages clean and reclaim them. The guest's swap
        // device takes requests of 1,024 pages, so a pass's writes (to fresh, consecutive
        // slots; at most the 1,000 dirty pages) merge into one request that the plug holds
        // until the pass ends;
        // with smaller requests the plug would dispatch the first full one mid-pass, and the
        // pass would free its pages (`policy::swap_plug`).
        let mut c = cfg(1_024, 4_096, 256, false);
        c.guest.swap_max_pages = Some(1_024);
        let mut vm = Vm::new(&c, 1).unwrap();
        for op in touch(0..1_000) {
            vm.op(0, op).unwrap();
        }
        let st0 = vm.guest.stats.clone();
        let short = run(&mut vm, &mut script(compute(100)));
        let b = short.balloon.as_ref().unwrap();
        assert_eq!((b.actual_pages, b.rounds, b.out_of_puff), (16, 1, 1));
        assert_eq!(b.sleep_ns, OUT_OF_PUFF_SLEEP_NS);
        assert_eq!(vm.guest.stats.allocstall - st0.allocstall, 1);
        assert_eq!(vm.guest.stats.pgsteal_direct - st0.pgsteal_direct, 0);
        assert!(vm.guest.stats.pswpout > st0.pswpout);
        // Let it run a second: the balloon fills, the guest having reclaimed what it took.
        let r = run(
            &mut vm,
            &mut script(vec![Op::Compute { ns: 1_000_000 }; 1_000]),
        );
        let b = r.balloon.as_ref().unwrap();
        assert_eq!(b.actual_pages, 256);
        let st = &vm.guest.stats;
        let stolen =
            st.pgsteal_direct + st.pgsteal_kswapd - st0.pgsteal_direct - st0.pgsteal_kswapd;
        // The guest's frames: the 1,000 pages less those reclaimed, the free ones and the
        // balloon's add up to its 1,024.
        let f = &vm.guest.mm.frames;
        assert_eq!(
            1_000 - stolen + f.n_unused() as u64 + f.n_held() as u64,
            1_024,
            "{stolen} stolen, {} free",
            f.n_unused()
        );
        assert!(stolen >= 256 - 24 + 8, "{stolen}");
        assert!(st.pswpout - st0.pswpout >= stolen);
    }

    #[test]
    fn deflated_pages_have_no_host_backing_until_the_guest_touches_them() {
        // 512 backed pages inflated at boot; the host sets the target to 0 2 ms later:
        // 2 deflate rounds put them back on top of the guest's free list, unbacked (the host
        // freed them at the inflate and QEMU's deflate maps nothing). Then the stream
        // writes 512 new pages: each takes one of them, and the host backs each again with
        // an EPT violation.
        let mut c = cfg(4_096, 8_192, 512, false);
        let mut probe = Vm::new(&c, 1).unwrap();
        warm_up(&mut probe, 1_000);
        c.balloon.as_mut().unwrap().script = vec![(probe.clock(0) + 2_000_000, 0)];
        let mut vm = Vm::new(&c, 1).unwrap();
        warm_up(&mut vm, 1_000);
        let free0 = host_free(&vm);
        let backed = |vm: &Vm| -> Vec<bool> {
            (0..4_096u64)
                .map(|g| vm.host.as_ref().unwrap().present(g))
                .collect()
        };
        let before = backed(&vm);
        let r = run(&mut vm, &mut script(compute(4_000)));
        let b = r.balloon.as_ref().unwrap();
        assert_eq!(
            (b.inflated, b.deflated, b.actual_pages, b.rounds),
            (512, 512, 0, 4)
        );
        assert_eq!((b.target_pages, b.host_frames_released), (0, 512));
        assert_eq!(vm.guest.mm.frames.n_held(), 0);
        assert_eq!(host_free(&vm), free0 + 512);
        let after = backed(&vm);
        let gone: Vec<usize> = (0..4_096).filter(|&g| before[g] && !after[g]).collect();
        assert_eq!(gone.len(), 512);
        let ept0 = vm.r.ept_violations;
        run(&mut vm, &mut script(touch(1 << 20..(1 << 20) + 512)));
        assert_eq!(vm.r.ept_violations - ept0, 512);
        assert_eq!(host_free(&vm), free0);
        let again = backed(&vm);
        assert!(gone.iter().all(|&g| again[g]));
    }

    #[test]
    fn over_inflation_without_deflate_on_oom_kills_the_workload() {
        // No guest swap, 1,024 frames, a balloon of all of them at boot: rounds of 256, 256,
        // 256 and, at free = min = 8, a fourth that gets 248 and is out of puff (1,016 held).
        // The stream computes 2 ms, then writes 20 pages: 8 from the reserve below min, the
        // 9th finds no free page and nothing to reclaim: the OOM kill.
        let mut c = cfg(1_024, 4_096, 1_024, false);
        c.guest_swapoff = true;
        let mut vm = Vm::new(&c, 1).unwrap();
        let mut ops = compute(2_000);
        ops.extend(touch(0..20));
        ops.extend(compute(10));
        let r = run(&mut vm, &mut script(ops));
        let b = r.balloon.as_ref().unwrap();
        assert_eq!(
            (b.inflated, b.actual_pages, b.out_of_puff),
            (1_016, 1_016, 1)
        );
        assert!(b.oom_killed);
        // The stream's 2 ms of compute and the kworker's 3·74,000 + 72,000 ns came first,
        // then 8 faults of a few µs each.
        let kill = b.oom_kill_ns.unwrap();
        assert!(
            (2_294_000..2_294_000 + 8 * 10_000).contains(&kill),
            "{kill}"
        );
        // (the 9th page's fault, which the kill ended, counted its first touch)
        assert_eq!(vm.guest.stats.first_touch, 9);
        assert_eq!(vm.guest_resident(), 8);
        assert_eq!((b.deflated, b.oom_deflated), (0, 0));
    }

    #[test]
    fn with_deflate_on_oom_the_guest_takes_256_pages_back_and_goes_on() {
        // As above with deflate-on-OOM: the 9th page's OOM deflates 256 pages (one more
        // round, 256·150 + 10,000 ns guest and 256·500 ns QEMU on the faulting vCPU) and
        // the 20 writes complete.
        let mut c = cfg(1_024, 4_096, 1_024, true);
        c.guest_swapoff = true;
        let mut vm = Vm::new(&c, 1).unwrap();
        let mut ops = compute(2_000);
        ops.extend(touch(0..20));
        ops.extend(compute(10));
        let r = run(&mut vm, &mut script(ops));
        let b = r.balloon.as_ref().unwrap();
        assert!(!b.oom_killed);
        assert_eq!((b.inflated, b.oom_deflated, b.deflated), (1_016, 256, 256));
        assert_eq!((b.actual_pages, b.rounds, b.out_of_puff), (760, 5, 1));
        assert_eq!(vm.guest.stats.first_touch, 20);
        // Guest: 3·74,000 + (248·250 + 10,000) + (256·150 + 10,000); QEMU: 1,016·1,500 +
        // 256·500.
        assert_eq!(b.guest_ns, 222_000 + 72_000 + 48_400);
        assert_eq!(b.host_ns, 1_524_000 + 128_000);
    }

    #[test]
    fn mom_grows_a_guest_with_free_host_memory_by_its_rules() {
        // MOM (defaults) over one guest of 4,096 pages (16,384 KiB) with 3,000 pages in use
        // and a balloon of 1,024 at boot, on a host with plenty free (> 20%: grow).
        // Samples at 0, 5, 10, 15, 20 s; evaluations at 10 and 20 s. At 0 the balloon is
        // still empty: cur 16,384 KiB, unused 1,096 pages = 4,384 KiB; at 5 and 10 s it
        // holds 1,024: cur 12,288, unused 72 pages = 288.
        // 10 s: used = avg cur − avg unused = (16,384 + 2·12,288)/3 − (4,384 + 2·288)/3 =
        //   12,000; floor = 12,000 + 0.20·12,288 = 14,457.6 > 1.05·12,288 = 12,902.4:
        //   target 14,457 KiB, balloon (16,384 − 14,457)/4 = 481 pages (543 deflated).
        // 15, 20 s: cur (4,096 − 481)·4 = 14,460, unused (72 + 543)·4 = 2,460; 20 s:
        //   used = 69,880/5 − 9,880/5 = 12,000; floor = 12,000 + 2,892 = 14,892 <
        //   1.05·14,460 = 15,183: target 15,183 KiB, balloon 1,201/4 = 300 pages.
        let mut c = cfg(4_096, 10_000, 1_024, false);
        c.mom = Some(crate::vm::balloon::MomConfig::default());
        let mut vm = Vm::new(&c, 1).unwrap();
        for op in touch(0..3_000) {
            vm.op(0, op).unwrap();
        }
        let r = run(
            &mut vm,
            &mut script(vec![Op::Compute { ns: 1_000_000 }; 21_000]),
        );
        let b = r.balloon.as_ref().unwrap();
        let got: Vec<(bool, u64, u64, u64)> = b
            .decisions
            .iter()
            .map(|d| (d.shrink, d.target_kib, d.target_pages, d.actual_pages))
            .collect();
        assert_eq!(
            got,
            [(false, 14_457, 481, 1_024), (false, 15_183, 300, 481)]
        );
        // MOM's thread wakes on time (an engine timer), whatever the vCPUs do.
        let t: Vec<u64> = b.decisions.iter().map(|d| d.time_ns).collect();
        assert_eq!(t, [10_000_000_000, 20_000_000_000]);
        let t: Vec<u64> = b.samples.iter().map(|s| s.time_ns).collect();
        assert_eq!(t, [0, 5, 10, 15, 20].map(|s| s * 1_000_000_000));
        assert_eq!((b.target_pages, b.actual_pages), (300, 300));
        let m = r.mom.unwrap();
        assert_eq!(
            (m.samples, m.evaluations, m.pressure, m.decisions),
            (5, 2, 0, 2)
        );
        let free: Vec<u64> = b.samples.iter().map(|s| s.free_pages).collect();
        assert_eq!(free, [1_096, 72, 72, 615, 615]);
    }

    #[test]
    fn mom_shrinks_under_host_pressure_then_grows_as_the_balloon_frees_host_memory() {
        // One guest of 4,096 pages: 3,000 written, the first 1,000 unmapped again (free in
        // the guest, still backed on the host, on top of the free list); 2,000 in use =
        // 8,000 KiB. Host of 3,600 pages backing 3,000 data pages and the guest's 9
        // page-table pages (root, PUD, PMD, 6 PTE pages): 591 free (16.4%, under 20%).
        // 10 s: 3 samples of 591 free: host_free = 591/3,600; shrink with guest_free =
        //   0.20·host_free/0.20 = 0.16417; floor = 8,000 + 0.16417·16,384 = 10,689.7 <
        //   0.95·16,384 = 15,564.8: target 15,564 KiB, balloon 820/4 = 205 pages, each
        //   backed: host free 796.
        // 20 s: host avg (3·591 + 2·796)/5 = 673 (18.69%): shrink; used = (3·16,384 +
        //   2·15,564)/5 − (3·8,384 + 2·7,564)/5 = 8,000; floor = 8,000 + 0.18694·15,564 =
        //   10,909.6 < 0.95·15,564 = 14,785.8: target 14,785 KiB, balloon 1,599/4 = 399:
        //   194 more, host free 990.
        // 30 s: host avg (3·591 + 2·796 + 2·990)/7 = 763.6 (21.2%): grow; used = 8,000;
        //   floor = 8,000 + 0.20·14,788 = 10,957.6 < 1.05·14,788 = 15,527.4: target
        //   15,527 KiB, balloon 857/4 = 214 pages (185 deflated; the host frees nothing).
        let mut c = cfg(4_096, 3_600, 0, false);
        c.mom = Some(crate::vm::balloon::MomConfig::default());
        let mut vm = Vm::new(&c, 1).unwrap();
        for op in touch(0..3_000) {
            vm.op(0, op).unwrap();
        }
        vm.op(
            0,
            Op::Unmap {
                start: 0,
                pages: 1_000,
            },
        )
        .unwrap();
        assert_eq!(host_free(&vm), 591);
        let r = run(
            &mut vm,
            &mut script(vec![Op::Compute { ns: 1_000_000 }; 31_000]),
        );
        let b = r.balloon.as_ref().unwrap();
        let got: Vec<(bool, u64, u64, u64)> = b
            .decisions
            .iter()
            .map(|d| (d.shrink, d.target_kib, d.target_pages, d.actual_pages))
            .collect();
        assert_eq!(
            got,
            [
                (true, 15_564, 205, 0),
                (true, 14_785, 399, 205),
                (false, 15_527, 214, 399)
            ]
        );
        assert_eq!(
            (b.inflated, b.deflated, b.host_frames_released),
            (399, 185, 399)
        );
        let t: Vec<u64> = b.decisions.iter().map(|d| d.time_ns).collect();
        assert_eq!(t, [10, 20, 30].map(|s| s * 1_000_000_000));
        assert_eq!(host_free(&vm), 990);
        let m = r.mom.unwrap();
        assert_eq!(
            (m.samples, m.evaluations, m.pressure, m.decisions),
            (7, 3, 2, 3)
        );
    }
}

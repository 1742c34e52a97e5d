//! The VM layer's threads in the one engine of time ([`crate::sched`]): vCPUs, the guest's
//! kswapd on them (a small fair scheduler per VM), and the host's kswapd.

use super::*;
use crate::sched::State;

/// Why a vCPU's stream is not running: it waits for a swap read, or idles until its next
/// request arrives (both until the given time). Meanwhile the vCPU halts, unless the
/// guest's kswapd runs on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    Io(u64),
    Arrival(u64),
}

/// What a vCPU runs in the guest: its stream (the guest program the stream models) or the
/// guest's kswapd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GuestTask {
    Stream,
    Kswapd,
}

/// One vCPU as the guest's scheduler sees it.
#[derive(Clone, Debug)]
struct VcpuSched {
    vm: usize,
    v: usize,
    buf: Vec<Op>,
    pos: usize,
    held: Option<Held>,
    /// The stream's virtual runtime in the guest (its CPU time on the vCPU).
    vruntime: u64,
    cur: GuestTask,
    slice_used: u64,
}

/// The guest's kswapd as its scheduler sees it.
#[derive(Clone, Debug, Default)]
struct GuestKswapd {
    /// The engine thread (vCPU) it runs on.
    on: Option<usize>,
    vruntime: u64,
    /// Awake as of the last look (to place it and preempt once per wakeup).
    awake: bool,
    /// Its CPU time on the vCPUs.
    cpu_ns: u64,
}

/// The VMs' side of the engine ([`crate::sched`]): each vCPU is a thread running its
/// stream's ops through its VM, or the guest's kswapd; the host's kswapd is a kernel thread
/// whose CPU work is the reclaim the host did in kswapd's name (see [`run_many_with`]).
///
/// Inside a VM, a small fair scheduler (the guest's, the same rules as the engine's: least
/// CPU time, bounded lag, wake-up preemption, EEVDF's base slice for the VM's vCPU count)
/// shares each vCPU between the stream placed on it and the guest's one kswapd thread, which
/// runs on one vCPU at a time. A kswapd woken while a vCPU is halted (its stream waiting for
/// a swap read or idle until a request) runs there, as `select_task_rq_fair` prefers an
/// idle CPU; otherwise it preempts the stream of the vCPU whose allocation woke it when it
/// has less CPU time. Left out: guest kswapd's frames reaching the free list over its
/// step's time (freed at once), the guest's other kernel threads.
struct VmExec<'a, 'b> {
    vms: &'a mut [Vm],
    wls: &'a mut [&'b mut dyn Workload],
    /// Per engine thread (vCPUs first).
    vcpus: Vec<VcpuSched>,
    /// Per VM: its guest kswapd, its guest time slice, its vCPUs' engine threads.
    gk: Vec<GuestKswapd>,
    gslice: Vec<u64>,
    threads_of: Vec<Vec<usize>>,
    kswapd: usize,
    /// Whether the engine's kswapd thread is awake (woken and not yet gone back to sleep).
    k_awake: bool,
    k_busy_until: u64,
    step_ns: u64,
    /// Native paging: the machine's own kswapd is the engine's kernel thread `kswapd`, which
    /// runs its `balance_pgdat` passes as the timing engine always has (see
    /// [`Vm::native_kswapd_step`]); the VM's guest scheduler is not used.
    native: bool,
    /// Counters sampled every `sample_every_ns` (0: none) of simulated time.
    sample_every_ns: u64,
    next_sample: u64,
    series: Vec<crate::timed::Sample>,
    /// The host's balloon manager, a host thread polled at its times, and the next
    /// scripted balloon target of any VM (`u64::MAX`: none).
    mom: Option<super::ballooning::MomThread>,
    next_script: u64,
    /// The time of the engine timer armed for the next balloon event (`u64::MAX`: none),
    /// so that it happens on time while every vCPU sleeps.
    host_timer: u64,
}

/// The engine timer's token of the balloon events (scripted targets, MOM, a round due in a
/// VM whose vCPUs all halt): the timer only makes an event at their time, whose
/// [`Exec::before`] handles them.
const HOST_HOOK: u32 = u32::MAX;

impl VmExec<'_, '_> {
    /// After a vCPU's step: an allocation in it that found the host's free pages at the low
    /// watermark woke the host's kswapd (`wakeup_kswapd`); the engine's kswapd thread, asleep,
    /// becomes runnable at the step's end.
    fn note_kswapd(&mut self, s: &mut Sched, at: u64) {
        if self.k_awake {
            return;
        }
        let awake = self.vms[0]
            .host
            .as_ref()
            .is_some_and(|h| h.shared.borrow().kswapd_awake());
        if awake {
            self.k_awake = true;
            s.wake(self.kswapd, at.max(self.k_busy_until));
        }
    }

    /// One pass of the host's kswapd from `now` ([`HostShared::kswapd_pass`]); every VM then
    /// applies the unmaps it made (EPT entries and INVEPT, or the MMU notifier into KVM's
    /// shadow MMU) before its vCPUs run again.
    fn step_host_kswapd(&mut self, now: u64) -> Result<Step> {
        let pass = match self.vms[0].host.as_ref() {
            Some(h) => Some(h.shared.borrow_mut().kswapd_pass(now, &self.vms[0].costs)),
            None => None,
        };
        let (more, ran) = pass.unwrap_or((false, 0));
        for vm in self.vms.iter_mut() {
            vm.sync_host_unmaps();
        }
        let clock = now + ran;
        self.k_busy_until = clock;
        Ok(if more {
            Step::Ran(clock)
        } else {
            self.k_awake = false;
            Step::Sleep {
                at: clock,
                until: None,
            }
        })
    }

    /// After a step of VM `i`: a guest kswapd that has just woken is placed (at most two
    /// slices of credit against the VM's streams) and, if a vCPU of the VM is halted, that
    /// vCPU is woken at `at` to run it.
    fn note_guest_kswapd(&mut self, s: &mut Sched, i: usize, at: u64) {
        let awake = self.vms[i].guest_kswapd_awake();
        let g = &mut self.gk[i];
        if awake == g.awake {
            return;
        }
        g.awake = awake;
        if !awake {
            return;
        }
        let floor = self.threads_of[i]
            .iter()
            .map(|&t| self.vcpus[t].vruntime)
            .min()
            .unwrap_or(0)
            .saturating_sub(2 * self.gslice[i]);
        g.vruntime = g.vruntime.max(floor);
        if g.on.is_none() {
            if let Some(&u) = self.threads_of[i]
                .iter()
                .find(|&&u| self.vcpus[u].held.is_some())
            {
                s.kick(u, at);
            }
        }
    }

    /// What vCPU thread `t` runs in the guest now.
    fn guest_pick(&mut self, t: usize) -> GuestTask {
        let i = self.vcpus[t].vm;
        let awake = self.vms[i].guest_kswapd_awake();
        let g = &self.gk[i];
        let vc = &self.vcpus[t];
        if !awake || g.on.is_some_and(|u| u != t) {
            return GuestTask::Stream;
        }
        if vc.held.is_some() || g.on == Some(t) && vc.slice_used < self.gslice[i] {
            return GuestTask::Kswapd;
        }
        // The pick at a slice's end or at the wake-up: the least CPU time (kswapd wins ties:
        // it was woken and placed behind the stream).
        if g.vruntime <= vc.vruntime
            && (vc.cur == GuestTask::Kswapd || vc.slice_used >= self.gslice[i] || g.on.is_none())
        {
            GuestTask::Kswapd
        } else {
            GuestTask::Stream
        }
    }

    /// A vCPU's step in a VM (native threads: [`VmExec::step_native_vcpu`]).
    fn step_vcpu(&mut self, s: &mut Sched, t: usize, now: u64) -> Result<Step> {
        let (i, v) = (self.vcpus[t].vm, self.vcpus[t].v);
        // A vCPU that was halted resumes its clock where the halt ended; one that was
        // runnable and waiting for a host CPU until now had steal time.
        match self.vcpus[t].held {
            Some(Held::Io(u)) => self.vms[i].waited_until(v, now.min(u)),
            Some(Held::Arrival(u)) => self.vms[i].idle_until(v, now.min(u)),
            None => {}
        }
        self.vms[i].steal_until(v, now);
        if self.vms[i].oom_killed() {
            // The guest OOM-killed the workload: nothing is left to run on its vCPUs.
            self.vcpus[t].held = None;
            return Ok(Step::Done(self.vms[i].clock(v)));
        }
        if self.vms[i].balloon_due(self.vms[i].clock(v)) {
            // The balloon's work item runs on this vCPU (see `vm/machine/ballooning.rs`).
            let wl = &*self.wls[i];
            self.vms[i].balloon_round(v, &|pid, vpn| wl.content_class(pid, vpn))?;
            let at = self.vms[i].clock(v);
            self.note_kswapd(s, at);
            self.note_guest_kswapd(s, i, at);
            // The next round's time, for a vCPU to be woken then if all halt.
            s.hook_at = self.hook_at();
            self.arm_host_timer(s);
            return Ok(Step::Ran(at));
        }
        let task = self.guest_pick(t);
        if task != self.vcpus[t].cur {
            self.vcpus[t].cur = task;
            self.vcpus[t].slice_used = 0;
        }
        let c0 = self.vms[i].clock(v);
        let out = match task {
            GuestTask::Kswapd => {
                self.gk[i].on = Some(t);
                let end = c0.saturating_add(self.step_ns);
                let mut more = true;
                let wl = &*self.wls[i];
                let cls = |pid, vpn| wl.content_class(pid, vpn);
                while more && self.vms[i].clock(v) < end {
                    more = self.vms[i].guest_kswapd_step(v, &cls)?;
                }
                if more && self.vms[i].clock(v) == c0 {
                    // A pass that cost nothing (zero costs) still takes the CPU for a moment,
                    // so that a kswapd that stays awake lets time move. One that goes back to
                    // sleep takes what its work cost: with zero costs, nothing when it found
                    // the guest balanced at once (`balance_pgdat` → `pgdat_balanced`), which
                    // it does when a direct reclaim ran before it and `do_try_to_free_pages`
                    // freed more than high − min. (The host's kswapd has the same rule,
                    // `HostShared::kswapd_pass`.)
                    self.vms[i].vcpus[v].clock += 1;
                }
                let c1 = self.vms[i].clock(v);
                let g = &mut self.gk[i];
                g.vruntime += c1 - c0;
                g.cpu_ns += c1 - c0;
                if !more {
                    g.on = None;
                    g.awake = false;
                }
                // The stream, if it waits, goes on waiting (the vCPU halts once kswapd
                // sleeps); a wait that has ended lets it run at the next step.
                match (more, self.vcpus[t].held) {
                    (false, Some(Held::Io(u))) if u > c1 => Step::Block { at: c1, until: u },
                    (false, Some(Held::Arrival(u))) if u > c1 => Step::Sleep {
                        at: c1,
                        until: Some(u),
                    },
                    _ => Step::Ran(c1),
                }
            }
            GuestTask::Stream => {
                match self.vcpus[t].held.take() {
                    Some(Held::Io(u)) if u > c0 => {
                        // Woken before its read completed (to run kswapd, now gone).
                        self.vcpus[t].held = Some(Held::Io(u));
                        return Ok(Step::Block { at: c0, until: u });
                    }
                    Some(Held::Arrival(u)) if u > c0 => {
                        self.vcpus[t].held = Some(Held::Arrival(u));
                        return Ok(Step::Sleep {
                            at: c0,
                            until: Some(u),
                        });
                    }
                    Some(Held::Io(u)) => self.vms[i].waited_until(v, u),
                    Some(Held::Arrival(u)) => self.vms[i].idle_until(v, u),
                    None => {}
                }
                let c0 = self.vms[i].clock(v);
                let vc = &mut self.vcpus[t];
                // The host's kswapd is woken after the step (`note_kswapd`), not by its ops.
                let out = match Self::run_ops(
                    &mut self.vms[i],
                    &mut *self.wls[i],
                    (&mut vc.buf, &mut vc.pos),
                    v,
                    self.step_ns,
                    &mut None,
                    &mut |_| None,
                ) {
                    Ok(out) => out,
                    // A guest with a balloon device kills the workload when out of memory.
                    Err(e) if !self.vms[i].oom_kill(v) => return Err(e),
                    Err(_) => Ran::Done,
                };
                let vm = &mut self.vms[i];
                vm.balloon_charge_oom(v);
                let out = out.into_step(vm, v, &mut vc.held);
                let c1 = vm.clock(v);
                vc.vruntime += c1 - c0;
                out
            }
        };
        let at = match out {
            Step::Block { at, .. } | Step::Sleep { at, .. } => at,
            Step::Ran(a) | Step::Barrier(a) | Step::Done(a) => a,
        };
        self.vcpus[t].slice_used += at - c0;
        self.note_kswapd(s, at);
        self.note_guest_kswapd(s, i, at);
        // A stream about to halt keeps its vCPU if the guest's kswapd has work and no vCPU.
        if let Step::Block { .. } | Step::Sleep { .. } = out {
            if self.vms[i].guest_kswapd_awake() && self.gk[i].on.is_none() {
                return Ok(Step::Ran(at));
            }
        }
        Ok(out)
    }

    /// Native paging: [`VmExec::step_vcpu`] of a thread, whose CPU runs its stream alone
    /// (there is no guest scheduler, nor a guest kswapd to share it with).
    fn step_native_vcpu(&mut self, s: &mut Sched, t: usize, now: u64) -> Result<Step> {
        let vc = &mut self.vcpus[t];
        let v = vc.v;
        let vm = &mut self.vms[0];
        // A thread that was blocked resumes its clock where the wait ended; one that was
        // runnable and waiting for a CPU until now had steal time.
        match vc.held {
            Some(Held::Io(u)) => vm.waited_until(v, now.min(u)),
            Some(Held::Arrival(u)) => vm.idle_until(v, now.min(u)),
            None => {}
        }
        vm.steal_until(v, now);
        let c0 = vm.clock(v);
        match vc.held.take() {
            Some(Held::Io(u)) if u > c0 => {
                vc.held = Some(Held::Io(u));
                return Ok(Step::Block { at: c0, until: u });
            }
            Some(Held::Arrival(u)) if u > c0 => {
                vc.held = Some(Held::Arrival(u));
                return Ok(Step::Sleep {
                    at: c0,
                    until: Some(u),
                });
            }
            Some(Held::Io(u)) => vm.waited_until(v, u),
            Some(Held::Arrival(u)) => vm.idle_until(v, u),
            None => {}
        }
        loop {
            // The first allocation of the step that wakes the sleeping kswapd pays
            // `wakeup_ns` and wakes it (`wakeup_kswapd`); once a wake-up is queued, later
            // allocations find it off its wait queue and pay nothing (`Sched::wakeable`).
            let mut wake = s.wakeable(self.kswapd).then_some(None);
            let step_ns = self.step_ns;
            let out = Self::run_ops(
                vm,
                &mut *self.wls[0],
                (&mut vc.buf, &mut vc.pos),
                v,
                step_ns,
                &mut wake,
                &mut |at| s.may_go_on(t, now, at).then(|| at.saturating_add(step_ns)),
            )?;
            if let Some(Some(at)) = wake {
                s.wake(self.kswapd, at.max(self.k_busy_until));
            }
            // A step that ran its time and would be followed at once by the thread's next
            // step on this CPU, with nothing in between (`Sched::may_go_on`), goes on as
            // that step: what it does first is the write room (the thread's clock is the
            // step's start, so no steal time; it holds nothing).
            if let Ran::On = out {
                if s.may_go_on(t, now, vm.clock(v)) {
                    vm.set_write_room();
                    continue;
                }
            }
            return Ok(out.into_step(vm, v, &mut vc.held));
        }
    }

    /// vCPU `v` of `vm` runs its stream's ops from its clock for about `step_ns`.
    /// With `wake` = `Some(None)` (native paging, kswapd asleep), the first op that wakes
    /// kswapd pays `wakeup_ns` and leaves in `wake` when kswapd wakes. Ops that reach the
    /// step's end may go on as the next step when `go_on(clock)` gives its end (the
    /// engine's: see [`crate::sched::Sched::may_go_on`]), unless a wake-up of kswapd is
    /// still to be queued (the engine does that between steps).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn run_ops(
        vm: &mut Vm,
        wl: &mut dyn Workload,
        (buf, pos): (&mut Vec<Op>, &mut usize),
        v: usize,
        step_ns: u64,
        wake: &mut Option<Option<u64>>,
        go_on: &mut dyn FnMut(u64) -> Option<u64>,
    ) -> Result<Ran> {
        let mut end = vm.vcpus[v].clock.saturating_add(step_ns);
        let mut step_over = false;
        loop {
            if *pos == buf.len() {
                buf.clear();
                *pos = 0;
                wl.next_ops(v, buf)?;
                if buf.is_empty() {
                    return Ok(Ran::Done);
                }
            }
            // (checked after the refill, so a stream that has just run out ends now)
            if step_over {
                return Ok(Ran::On);
            }
            let wl: &dyn Workload = &*wl;
            let cls = |pid, vpn| wl.content_class(pid, vpn);
            // Without translation or a shared host, runs of accesses go to
            // `Vm::run_untranslated` when a hit needs none of the checks after each op below.
            let untranslated = !vm.tlb && !vm.shares_host;
            while let Some(&op) = buf.get(*pos) {
                // Accesses and compute first, as tests rather than a jump table (the branch
                // is predictable; an indirect jump over the op kinds is not).
                if untranslated
                    && matches!(
                        op,
                        Op::Access { .. }
                            | Op::Compute { .. }
                            | Op::RequestBegin { .. }
                            | Op::RequestEnd
                    )
                    && vm.vcpus[v].io_wait == 0
                    && !(*wake == Some(None) && vm.guest_kswapd_awake())
                {
                    *pos += vm.run_untranslated(v, &buf[*pos..], end, &cls)?;
                } else if vm.tlb && matches!(op, Op::Access { .. }) {
                    // A run of accesses through the TLB model, ending where one of the
                    // checks below has something to do.
                    *pos += vm.run_translated(v, &buf[*pos..], end, *wake == Some(None), &cls)?;
                } else {
                    *pos += 1;
                    if let Op::Access { page, write } = op {
                        vm.access_op(v, page, write, &cls)?;
                    } else if let Op::Compute { ns } = op {
                        let vc = &mut vm.vcpus[v];
                        vc.clock += ns as u64;
                        vm.r.time.compute_ns += ns as u64;
                    } else if matches!(op, Op::RequestBegin { .. } | Op::RequestEnd) {
                        vm.plain_op(v, op);
                    } else if let Some(r) = Self::other_op(vm, wl, v, op)? {
                        return Ok(r);
                    }
                }
                if *wake == Some(None) && vm.guest_kswapd_awake() {
                    *wake = Some(Some(vm.pay_wakeup(v)));
                }
                let vc = &mut vm.vcpus[v];
                if vc.clock >= end || vc.io_wait > 0 {
                    if vc.io_wait > 0 {
                        let w = std::mem::take(&mut vc.io_wait);
                        return Ok(Ran::Io {
                            at: vc.clock - w,
                            until: vc.clock,
                        });
                    }
                    // The step's time is up: it may go on as the next step (after what
                    // that does first) unless a wake-up of kswapd is still to be queued.
                    if !matches!(*wake, Some(Some(_))) {
                        if let Some(e) = go_on(vc.clock) {
                            vm.set_write_room();
                            end = e;
                            continue;
                        }
                    }
                    step_over = true;
                    break;
                }
            }
        }
    }
}

impl VmExec<'_, '_> {
    /// The ops of a stream other than accesses and compute (kept out of `run_ops`' loop so
    /// that its test for those two stays two branches): `Some` when the run of ops ends.
    #[inline(never)]
    fn other_op(vm: &mut Vm, wl: &dyn Workload, v: usize, op: Op) -> Result<Option<Ran>> {
        match op {
            Op::Arrive { at_ns } => {
                let c0 = vm.vcpus[v].clock;
                let at = vm.arrival_at(v, at_ns);
                if at > c0 {
                    // Nothing to do until the request arrives: the CPU is free now.
                    vm.arrive_later(v, at);
                    return Ok(Some(Ran::Arrival { at: c0, until: at }));
                }
                vm.op(v, op)?;
            }
            Op::Barrier => return Ok(Some(Ran::Barrier)),
            Op::File { slot } => {
                let Some(io) = wl.file_io(v, slot) else {
                    return Err(Error::config(
                        "workload",
                        format!("{}: a file op (slot {slot}) without its record", wl.name()),
                    ));
                };
                let io = *io;
                vm.file_op(v, &io, &|pid, vpn| wl.content_class(pid, vpn))?;
            }
            // Request boundaries touch no memory: without `op_with`'s dispatch.
            Op::RequestBegin { .. } | Op::RequestEnd => {
                vm.plain_op(v, op);
            }
            _ => vm.op_with(v, op, &|pid, vpn| wl.content_class(pid, vpn))?,
        }
        Ok(None)
    }
}

/// How a stream's run of ops ended.
enum Ran {
    On,
    Io { at: u64, until: u64 },
    Arrival { at: u64, until: u64 },
    Barrier,
    Done,
}

impl Ran {
    /// The engine's step for how vCPU `v`'s ops ended; a wait for a read or an arrival is
    /// kept in `held`.
    #[inline(always)]
    fn into_step(self, vm: &mut Vm, v: usize, held: &mut Option<Held>) -> Step {
        match self {
            Ran::On => Step::Ran(vm.clock(v)),
            Ran::Io { at, until } => {
                // The clock went on to the read's completion; it waits at `at`.
                vm.vcpus[v].clock = at;
                *held = Some(Held::Io(until));
                Step::Block { at, until }
            }
            Ran::Arrival { at, until } => {
                *held = Some(Held::Arrival(until));
                Step::Sleep {
                    at,
                    until: Some(until),
                }
            }
            Ran::Barrier => Step::Barrier(vm.clock(v)),
            Ran::Done => Step::Done(vm.clock(v)),
        }
    }
}

impl Exec for VmExec<'_, '_> {
    fn step(&mut self, s: &mut Sched, t: usize, cpu: usize, now: u64) -> Result<Step> {
        if self.native {
            // Swap slots come from this CPU's cluster (`percpu_cluster`).
            self.vms[0].guest.mm.swap.set_cpu(cpu);
            self.vms[0].set_write_room();
            if t == self.kswapd {
                return self.step_native_kswapd(s, now);
            }
            return self.step_native_vcpu(s, t, now);
        }
        if t != self.kswapd {
            return self.step_vcpu(s, t, now);
        }
        self.step_host_kswapd(now)
    }

    fn barrier_done(&mut self, t: usize, now: u64) {
        if let Some(vc) = self.vcpus.get(t) {
            self.vms[vc.vm].barrier_release(vc.v, now);
        }
    }

    /// Native kswapd has finished freeing `token` more of the frames its pass reclaimed (or
    /// the host's balloon events are due: [`HOST_HOOK`], handled by `before`).
    fn timer(&mut self, _s: &mut Sched, token: u32, _now: u64) -> Result<()> {
        if token == HOST_HOOK {
            return Ok(());
        }
        self.vms[0].hold_kswapd_frames(-(token as i64));
        Ok(())
    }

    fn before(&mut self, s: &mut Sched, now: u64) -> Result<()> {
        while now >= self.next_sample {
            self.sample(s, self.next_sample)?;
            self.next_sample += self.sample_every_ns;
        }
        // The host's side of ballooning: scripted targets (`virsh setmem`), then MOM.
        if now >= self.next_script {
            self.next_script = self
                .vms
                .iter_mut()
                .map(|vm| vm.balloon_script(now))
                .min()
                .unwrap_or(u64::MAX);
        }
        if let Some(m) = self.mom.as_mut() {
            m.poll(self.vms, now);
        }
        self.kick_for_balloon(s, now);
        s.hook_at = self.hook_at();
        self.arm_host_timer(s);
        Ok(())
    }
}

impl VmExec<'_, '_> {
    /// When [`Exec::before`] is next due: a sample or a balloon event.
    fn hook_at(&self) -> u64 {
        self.next_sample.min(self.host_events_at())
    }

    /// When the next balloon event is due (`u64::MAX`: none): the host's (a scripted
    /// target, MOM's sample or policy) or a VM's next round.
    fn host_events_at(&self) -> u64 {
        let mom = self.mom.as_ref().map_or(u64::MAX, |m| m.next_event());
        let rounds = self
            .vms
            .iter()
            .filter_map(|vm| vm.balloon_next_due())
            .min()
            .unwrap_or(u64::MAX);
        self.next_script.min(mom).min(rounds)
    }

    /// Arm the engine's timer at the next balloon event, once per event time (never in
    /// the past).
    fn arm_host_timer(&mut self, s: &mut Sched) {
        let at = self.host_events_at();
        if at != u64::MAX && at != self.host_timer {
            self.host_timer = at;
            s.timer(at.max(s.now), HOST_HOOK);
        }
    }

    /// A VM whose balloon round is due at `now` and none of whose vCPUs is running or
    /// runnable: its first halted vCPU is woken to run the round (the work item runs on an
    /// otherwise idle vCPU; a running one picks the round up at its next step).
    fn kick_for_balloon(&mut self, s: &mut Sched, now: u64) {
        for (i, vm) in self.vms.iter().enumerate() {
            if !vm.balloon_due(now) {
                continue;
            }
            let ts = &self.threads_of[i];
            let state = |t: usize| s.threads[t].state;
            if ts
                .iter()
                .any(|&t| matches!(state(t), State::Runnable | State::Running))
            {
                continue;
            }
            if let Some(&t) = ts
                .iter()
                .find(|&&t| matches!(state(t), State::Blocked | State::Sleeping))
            {
                s.kick(t, now);
            }
        }
    }

    /// Native paging: kswapd runs one `balance_pgdat` pass per step. The machine freed the
    /// pass's pages at once; kswapd frees them over the pass's simulated time, in
    /// `shrink_folio_list` batches of SWAP_CLUSTER_MAX: they are held back and each batch
    /// given to the free list when kswapd's clock reaches it.
    fn step_native_kswapd(&mut self, s: &mut Sched, now: u64) -> Result<Step> {
        let wl = &*self.wls[0];
        let (more, ran, freed, throttle) =
            self.vms[0].native_kswapd_step(now, &|pid, vpn| wl.content_class(pid, vpn))?;
        let clock = now + ran;
        self.k_busy_until = clock;
        let freed = freed.min(u32::MAX as u64) as u32;
        if freed > 0 {
            let batches = freed.div_ceil(crate::engine::SWAP_CLUSTER_MAX) as u64;
            self.vms[0].hold_kswapd_frames(freed as i64);
            let mut left = freed;
            for i in 1..=batches {
                let n = left.min(crate::engine::SWAP_CLUSTER_MAX);
                left -= n;
                s.timer(now + ran * i / batches, n);
            }
        }
        Ok(if more {
            match throttle {
                // `reclaim_throttle(.., VMSCAN_THROTTLE_WRITEBACK)`: off the CPU until then.
                Some(until) if until > clock => Step::Block { at: clock, until },
                _ => Step::Ran(clock),
            }
        } else {
            Step::Sleep {
                at: clock,
                until: None,
            }
        })
    }

    /// Record the first VM's manager's counters as of `t`.
    fn sample(&mut self, s: &Sched, t: u64) -> Result<()> {
        if self.series.len() as u64 >= crate::replay::MAX_SAMPLES {
            return Err(Error::config(
                "sample_every_ns",
                format!(
                    "{} ns gives more than {} samples by simulated time {t} ns; sample less often (0 = no series)",
                    self.sample_every_ns,
                    crate::replay::MAX_SAMPLES,
                ),
            ));
        }
        let caches = if self.vms.iter().any(|vm| vm.has_files && vm.host.is_some()) {
            self.vms
                .iter()
                .map(|vm| {
                    let (double_cached, host_image_pages) = vm.double_cached();
                    crate::timed::CacheSample {
                        guest_file_pages: vm.guest.stats.nr_file_pages,
                        host_image_pages,
                        double_cached,
                        cacol_watermark: vm.cacol_watermark(),
                        swap_pathologies: vm.swap_pathologies(),
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        self.series.push(crate::timed::Sample {
            time_ns: t,
            stats: self.vms[0].guest.stats.clone(),
            kswapd_ns: s.threads[self.kswapd].cpu_ns,
            caches,
        });
        Ok(())
    }
}

/// How the engine runs (not model parameters but the run's own settings).
pub struct EngineOpts<'p> {
    /// How much CPU time one scheduling step runs before other CPUs' events are looked at
    /// ([`crate::timed::TimedConfig::step_ns`]).
    pub step_ns: u64,
    /// Simulated time between samples of the first VM's counters (0: none).
    pub sample_every_ns: u64,
    /// Called now and then with the simulated time.
    pub progress: Option<&'p mut dyn FnMut(u64)>,
}

impl Default for EngineOpts<'_> {
    fn default() -> Self {
        EngineOpts {
            step_ns: crate::timed::TimedConfig::default().step_ns,
            sample_every_ns: 0,
            progress: None,
        }
    }
}

/// What the engine measured beyond each VM's own counters.
pub(super) struct EngineOut {
    /// The host's kswapd (native: the machine's): its CPU time and the times it was
    /// scheduled.
    pub kswapd_ns: u64,
    pub kswapd_runs: u64,
    pub context_switches: u64,
    pub slice_ns: u64,
    pub series: Vec<crate::timed::Sample>,
    /// The balloon manager's counters, if it ran.
    pub mom: Option<crate::vm::balloon::ManagerCounters>,
}

/// Run all VMs' vCPUs on `hc.cpus` host CPUs with the host's kswapd (see
/// [`run_many_with`]). Each VM's result gets its threads' times; the rest is returned.
pub(super) fn schedule(
    vms: &mut [Vm],
    wls: &mut [&mut dyn Workload],
    hc: HostCpus,
    opts: EngineOpts<'_>,
) -> Result<EngineOut> {
    if opts.step_ns == 0 {
        return Err(Error::config("step_ns", "must be at least 1"));
    }
    let cfg =
        SchedConfig::new(hc.cpus, hc.slice_ns, vms[0].costs.context_switch_ns).map_err(|_| {
            Error::config(
                "vm.host_cpus",
                format!("must be 1..={}, got {}", crate::sched::MAX_CPUS, hc.cpus),
            )
        })?;
    let mut s = Sched::new(cfg);
    let mut vcpus = Vec::new();
    let mut threads_of = vec![Vec::new(); wls.len()];
    for (i, w) in wls.iter().enumerate() {
        for v in 0..w.threads() {
            threads_of[i].push(s.spawn(true, i));
            vcpus.push(VcpuSched {
                vm: i,
                v,
                // Room for a chunk of ops (`next_ops` appends about `CHUNK_OPS`) and the
                // record that ends it, so that the buffer does not grow by copying, and under
                // malloc's mmap threshold (128 KiB: 16-byte ops), so that a run reuses the
                // heap's memory instead of faulting in fresh pages.
                buf: Vec::with_capacity(crate::workload::common::CHUNK_OPS * 5 / 4),
                pos: 0,
                held: None,
                vruntime: 0,
                cur: GuestTask::Stream,
                slice_used: 0,
            });
        }
    }
    for vm in vms.iter_mut() {
        vm.defer_guest_kswapd();
    }
    if let Some(h) = vms[0].host.as_ref() {
        h.shared.borrow_mut().defer_kswapd();
    }
    let native = vms.len() == 1 && vms[0].paging == Paging::Native;
    if native {
        // The machine's kswapd is the engine's thread: it can sleep in `reclaim_throttle`.
        vms[0].guest.enable_kswapd_throttle();
    }
    let kswapd = s.spawn(false, 0);
    let next_sample = if opts.sample_every_ns > 0 {
        opts.sample_every_ns
    } else {
        u64::MAX
    };
    let mom = super::ballooning::MomThread::new(vms)?;
    let next_script = vms
        .iter_mut()
        .map(|vm| vm.balloon_script(0))
        .min()
        .unwrap_or(u64::MAX);
    let mut x = VmExec {
        vcpus,
        gk: vec![GuestKswapd::default(); vms.len()],
        gslice: wls
            .iter()
            .map(|w| crate::sched::default_slice_ns(w.threads() as u32))
            .collect(),
        threads_of,
        vms,
        wls,
        kswapd,
        k_awake: false,
        k_busy_until: 0,
        step_ns: opts.step_ns,
        native,
        sample_every_ns: opts.sample_every_ns,
        next_sample,
        series: Vec::new(),
        mom,
        next_script,
        host_timer: u64::MAX,
    };
    s.hook_at = x.hook_at();
    x.arm_host_timer(&mut s);
    s.run(&mut x, opts.progress)?;
    if x.sample_every_ns > 0 {
        x.sample(&s, s.end_ns)?;
    }
    for (i, (vm, g)) in x.vms.iter_mut().zip(&x.gk).enumerate() {
        vm.r.guest_kswapd_ns = g.cpu_ns;
        let c = &mut vm.cpu;
        vm.r.threads.clear();
        for (&t, vc) in x.threads_of[i].iter().zip(&vm.vcpus) {
            let th = &s.threads[t];
            c.app_ns += th.cpu_ns;
            c.io_wait_ns += th.blocked_ns;
            c.runqueue_wait_ns += th.runq_wait_ns;
            c.barrier_wait_ns += th.barrier_wait_ns;
            vm.r.threads.push(crate::timed::ThreadTimes {
                cpu_ns: th.cpu_ns,
                io_wait_ns: th.blocked_ns,
                finish_ns: th.finish_ns,
                accesses: vc.accesses,
                writes: vc.writes,
                major_faults: vc.major_faults,
            });
        }
    }
    let k = &s.threads[kswapd];
    Ok(EngineOut {
        kswapd_ns: k.cpu_ns,
        kswapd_runs: k.runs,
        context_switches: s.context_switches,
        slice_ns: s.cfg.slice_ns,
        series: std::mem::take(&mut x.series),
        mom: x.mom.as_ref().map(|m| m.counters()),
    })
}

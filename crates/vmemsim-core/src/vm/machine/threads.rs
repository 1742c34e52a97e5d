//! The VM layer's threads in the one engine of time ([`crate::sched`]): vCPUs, the guest's
//! kswapd on them (a small fair scheduler per VM), and the host's kswapd.

use super::*;

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
    buf: Vec<GuestOp>,
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
    wls: &'a mut [&'b mut dyn GuestWorkload],
    /// Per engine thread (vCPUs first).
    vcpus: Vec<VcpuSched>,
    /// Per VM: its guest kswapd, its guest time slice, its vCPUs' engine threads.
    gk: Vec<GuestKswapd>,
    gslice: Vec<u64>,
    threads_of: Vec<Vec<usize>>,
    kswapd: usize,
    /// The host kswapd's work as of the last look, and what it has not yet run.
    k_seen: u64,
    k_backlog: u64,
    k_busy_until: u64,
    step_ns: u64,
}

impl VmExec<'_, '_> {
    /// The host kswapd's work so far, in ns: pages scanned and stolen, and (MG-LRU) the host
    /// policy's page-table walks and look-around (left out: aging that the host's direct
    /// reclaim does itself).
    fn kswapd_work(vms: &[Vm]) -> u64 {
        let c = &vms[0].costs;
        vms[0].host.as_ref().map_or(0, |h| {
            let sh = h.shared.borrow();
            let st = &sh.m.stats;
            let w = sh.m.policy.scan_work();
            st.pgscan_kswapd * c.scan_page_ns
                + w.cost_ns(c.walk_pte_ns, c.walk_pmd_ns, c.lookaround_pte_ns)
                + st.pgsteal_kswapd * c.reclaim_page_ns
        })
    }

    /// The host's reclaim happens inline, when its memory manager needs it; what kswapd did
    /// of it during a vCPU's step becomes kswapd's backlog, runnable from the step's end.
    fn note_kswapd(&mut self, s: &mut Sched, at: u64) {
        let now = Self::kswapd_work(self.vms);
        if now > self.k_seen {
            self.k_backlog += now - self.k_seen;
            self.k_seen = now;
            s.wake(self.kswapd, at.max(self.k_busy_until));
        }
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
                while more && self.vms[i].clock(v) < end {
                    more = self.vms[i].guest_kswapd_step(v)?;
                }
                if self.vms[i].clock(v) == c0 {
                    // A pass that cost nothing (zero costs) still takes the CPU for a moment.
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
                let out = Self::run_ops(
                    &mut self.vms[i],
                    &mut *self.wls[i],
                    (&mut vc.buf, &mut vc.pos),
                    v,
                    self.step_ns,
                )?;
                let vm = &mut self.vms[i];
                let out = match out {
                    Ran::On => Step::Ran(vm.clock(v)),
                    Ran::Io { at, until } => {
                        // The clock went on to the read's completion; it waits at `at`.
                        vm.vcpus[v].clock = at;
                        vc.held = Some(Held::Io(until));
                        Step::Block { at, until }
                    }
                    Ran::Arrival { at, until } => {
                        vc.held = Some(Held::Arrival(until));
                        Step::Sleep {
                            at,
                            until: Some(until),
                        }
                    }
                    Ran::Barrier => Step::Barrier(vm.clock(v)),
                    Ran::Done => Step::Done(vm.clock(v)),
                };
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

    /// vCPU `v` of `vm` runs its stream's ops from its clock for about `step_ns`.
    fn run_ops(
        vm: &mut Vm,
        wl: &mut dyn GuestWorkload,
        (buf, pos): (&mut Vec<GuestOp>, &mut usize),
        v: usize,
        step_ns: u64,
    ) -> Result<Ran> {
        let end = vm.vcpus[v].clock.saturating_add(step_ns);
        loop {
            if *pos == buf.len() {
                buf.clear();
                *pos = 0;
                wl.next_ops(v, buf)?;
                if buf.is_empty() {
                    return Ok(Ran::Done);
                }
            }
            for &op in &buf[*pos..] {
                *pos += 1;
                match op {
                    GuestOp::Arrive { at_ns } => {
                        let c0 = vm.vcpus[v].clock;
                        let at = vm.arrival_at(v, at_ns);
                        if at > c0 {
                            // Nothing to do until the request arrives: the CPU is free now.
                            vm.arrive_later(v, at);
                            return Ok(Ran::Arrival { at: c0, until: at });
                        }
                        vm.op(v, op)?;
                    }
                    GuestOp::Op(Op::Barrier) => return Ok(Ran::Barrier),
                    _ => vm.op(v, op)?,
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
                    return Ok(Ran::On);
                }
            }
        }
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

impl Exec for VmExec<'_, '_> {
    fn step(&mut self, s: &mut Sched, t: usize, _cpu: usize, now: u64) -> Result<Step> {
        if t != self.kswapd {
            return self.step_vcpu(s, t, now);
        }
        let run = self.k_backlog.min(self.step_ns);
        self.k_backlog -= run;
        self.k_busy_until = now + run;
        Ok(if self.k_backlog > 0 {
            Step::Ran(now + run)
        } else {
            Step::Sleep {
                at: now + run,
                until: None,
            }
        })
    }

    fn barrier_done(&mut self, t: usize, now: u64) {
        if let Some(vc) = self.vcpus.get(t) {
            self.vms[vc.vm].barrier_release(vc.v, now);
        }
    }
}

/// Run all VMs' vCPUs on `hc.cpus` host CPUs with the host's kswapd (see
/// [`run_many_with`]). Returns the CPU time the host's kswapd ran.
pub(super) fn schedule(
    vms: &mut [Vm],
    wls: &mut [&mut dyn GuestWorkload],
    hc: HostCpus,
) -> Result<u64> {
    let cfg = SchedConfig::new(hc.cpus, hc.slice_ns, vms[0].costs.context_switch_ns)
        .map_err(|_| Error::config("vm.host_cpus", format!("must be 1..=4096, got {}", hc.cpus)))?;
    let mut s = Sched::new(cfg);
    let mut vcpus = Vec::new();
    let mut threads_of = vec![Vec::new(); wls.len()];
    for (i, w) in wls.iter().enumerate() {
        for v in 0..w.vcpus() {
            threads_of[i].push(s.spawn(true, i));
            vcpus.push(VcpuSched {
                vm: i,
                v,
                buf: Vec::new(),
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
    let kswapd = s.spawn(false, 0);
    let k_seen = VmExec::kswapd_work(vms);
    let mut x = VmExec {
        vcpus,
        gk: vec![GuestKswapd::default(); vms.len()],
        gslice: wls
            .iter()
            .map(|w| crate::sched::default_slice_ns(w.vcpus() as u32))
            .collect(),
        threads_of,
        vms,
        wls,
        kswapd,
        k_seen,
        k_backlog: 0,
        k_busy_until: 0,
        step_ns: crate::timed::TimedConfig::default().step_ns,
    };
    s.run(&mut x, None)?;
    for (vm, g) in x.vms.iter_mut().zip(&x.gk) {
        vm.r.guest_kswapd_ns = g.cpu_ns;
    }
    Ok(s.threads[kswapd].cpu_ns)
}

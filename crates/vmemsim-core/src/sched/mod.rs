//! The one engine of time: threads on host CPUs in simulated nanoseconds.
//!
//! Every timed run — a native run of application threads ([`crate::timed`]) and a run of
//! VMs whose vCPUs share host CPUs ([`crate::vm::run_many_with`]) — runs its threads here:
//! application threads or vCPUs, and kernel threads (kswapd). What a thread does when it
//! runs is its [`Exec`]'s business; this module decides who runs where and when, from one
//! event queue, and keeps each thread's accounting (CPU time, run-queue wait, blocked time,
//! barrier wait).
//!
//! # The scheduler
//!
//! It follows Linux 6.8's fair class (EEVDF, `kernel/sched/fair.c`), all threads at nice 0
//! (equal weights, so virtual runtime is CPU time):
//!
//! - **Pick.** A free CPU takes the runnable thread with the least virtual runtime
//!   (`pick_eevdf` among eligible entities; with equal weights and equal slices the
//!   earliest-deadline eligible entity is the one that has run least), ties to the lowest
//!   thread index.
//! - **Slice.** A thread runs until it blocks, sleeps or finishes, or has used a time slice;
//!   then the pick is made again (it may pick the same thread, which then switches nothing).
//!   The slice is EEVDF's base slice, `sysctl_sched_base_slice` = 0.75 ms scaled by
//!   `1 + ilog2(min(cpus, 8))` (`get_update_sysctl_factor`, SCHED_TUNABLESCALING_LOG):
//!   [`default_slice_ns`].
//! - **Bounded lag.** A thread that wakes from a block or a sleep rejoins with at most two
//!   slices of credit: its virtual runtime is raised to the least virtual runtime of the
//!   threads running or waiting, minus two slices (`place_entity` with `vlag` clamped by
//!   `limit_lag`, whose bound is `2 * se->slice`).
//! - **Wake-up preemption.** A woken thread that finds no free CPU preempts the running
//!   thread with the most virtual runtime if its own is less (`check_preempt_wakeup_fair`:
//!   the running entity is no longer eligible against the woken one, RUN_TO_PARITY
//!   notwithstanding), at the end of that thread's current step.
//! - **Placement.** A thread that becomes runnable goes to the CPU it ran on last if that
//!   one is idle (`select_idle_sibling` prefers the previous CPU), else to an idle CPU.
//! - **Context switch.** A CPU that starts a thread other than the one it ran last charges
//!   the thread `context_switch_ns` (a CPU's first thread is in place at the start).
//!
//! Left out: per-CPU run queues and load balancing (one global queue, as if balancing were
//! perfect), weights and nice levels, EEVDF's virtual deadlines beyond the least-runtime
//! pick, SMT, migration costs, interrupts.
//!
//! # Steps
//!
//! [`Exec::step`] runs a thread from `now` for about `step_ns` of its own time and says how
//! it stopped ([`Step`]); the work of a step is done at once, at the event of its start,
//! and the CPU is busy until its end. The step is the granularity at which threads on
//! different CPUs interleave and at which a wake-up preempts (not a model parameter;
//! smaller is finer and slower).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::error::{Error, Result};

/// EEVDF's base slice in Linux 6.8: `sysctl_sched_base_slice` = 0.75 ms, scaled by
/// `1 + ilog2(min(cpus, 8))` (`SCHED_TUNABLESCALING_LOG`, `get_update_sysctl_factor`).
pub fn default_slice_ns(cpus: u32) -> u64 {
    let n = cpus.clamp(1, 8);
    750_000 * (1 + (31 - n.leading_zeros()) as u64)
}

/// Most CPUs (host CPUs, a native run's CPUs) a run may have.
pub const MAX_CPUS: u32 = 4096;

/// The CPUs and the scheduler's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedConfig {
    pub cpus: u32,
    pub slice_ns: u64,
    pub context_switch_ns: u64,
}

impl SchedConfig {
    /// `cpus` CPUs with EEVDF's base slice for them unless `slice_ns` is given.
    pub fn new(cpus: u32, slice_ns: Option<u64>, context_switch_ns: u64) -> Result<SchedConfig> {
        if cpus == 0 || cpus > MAX_CPUS {
            return Err(Error::config(
                "cpus",
                format!("must be 1..={MAX_CPUS}, got {cpus}"),
            ));
        }
        Ok(SchedConfig {
            cpus,
            slice_ns: slice_ns.unwrap_or_else(|| default_slice_ns(cpus)).max(1),
            context_switch_ns,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Runnable,
    Running,
    /// Waiting for an event with a known time (an I/O completion): a `Wake` is queued.
    Blocked,
    /// At a barrier of its group.
    Barrier,
    /// Idle until woken ([`Sched::wake`]) or until a time given by its step.
    Sleeping,
    Done,
}

/// One thread and its accounting.
#[derive(Clone, Debug)]
pub struct Thread {
    /// An application thread or vCPU: the run ends when every one is done. Kernel threads
    /// (kswapd) are not.
    pub app: bool,
    /// Barrier group (a native run's threads; one VM's vCPUs).
    pub group: usize,
    pub state: State,
    /// When it last became runnable, blocked, sleeping or reached a barrier.
    pub since: u64,
    /// Virtual runtime: CPU time received, raised by lag placement on wake-up.
    pub vruntime: u64,
    slice_used: u64,
    preempt: bool,
    wake_queued: bool,
    /// CPU time, context switches included.
    pub cpu_ns: u64,
    /// Runnable but waiting for a CPU.
    pub runq_wait_ns: u64,
    /// Blocked (I/O).
    pub blocked_ns: u64,
    pub barrier_wait_ns: u64,
    /// Times a CPU started it.
    pub runs: u64,
    pub finish_ns: u64,
}

/// How a step ended. Times are the thread's clock when it stopped running (≥ the step's
/// start); the CPU time of the step is that minus the start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Ran until then and can go on.
    Ran(u64),
    /// Ran until `at`, then waits for something that completes at `until` (the CPU is
    /// free meanwhile).
    Block { at: u64, until: u64 },
    /// Ran until `at`, then idles until `until` or, without one, until [`Sched::wake`].
    Sleep { at: u64, until: Option<u64> },
    /// Ran until then and waits for the rest of its group.
    Barrier(u64),
    /// Ran until then and has nothing more to do.
    Done(u64),
}

/// What the threads do.
pub trait Exec {
    /// Run thread `t` on CPU `cpu` from `now` for about one step.
    fn step(&mut self, s: &mut Sched, t: usize, cpu: usize, now: u64) -> Result<Step>;
    /// A timer set with [`Sched::timer`] fired.
    fn timer(&mut self, _s: &mut Sched, _token: u32, _now: u64) -> Result<()> {
        Ok(())
    }
    /// Called before the first event at or after [`Sched::hook_at`] is handled (e.g. to
    /// take samples up to it; the hook moves `hook_at` on).
    fn before(&mut self, _s: &mut Sched, _now: u64) -> Result<()> {
        Ok(())
    }
    /// Thread `t` leaves its barrier at `now`.
    fn barrier_done(&mut self, _t: usize, _now: u64) {}
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Cpu(u32),
    Wake(u32),
    Timer(u32),
}

#[derive(Clone, Copy, Debug, Default)]
struct Cpu {
    running: Option<usize>,
    last: Option<usize>,
    /// The end of the running thread's current step.
    busy_until: u64,
}

/// The threads, the CPUs and the event queue.
pub struct Sched {
    pub cfg: SchedConfig,
    pub threads: Vec<Thread>,
    cpus: Vec<Cpu>,
    runq: Vec<usize>,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    /// An event earlier than every queued one (a CPU's next step, most of the time): handled
    /// next without going through the heap.
    next: Option<(u64, u64, Ev)>,
    seq: u64,
    live_app: usize,
    /// Per group: threads not done, and threads at the barrier.
    groups: Vec<(usize, usize)>,
    pub context_switches: u64,
    /// The time of the event being handled.
    pub now: u64,
    /// When the last application thread finished.
    pub end_ns: u64,
    /// When [`Exec::before`] is to be called next (`u64::MAX`: never).
    pub hook_at: u64,
    /// The first event time at which `run`'s progress callback is due (`u64::MAX`: none).
    report_due: u64,
}

impl Sched {
    pub fn new(cfg: SchedConfig) -> Sched {
        Sched {
            cfg,
            threads: Vec::new(),
            cpus: vec![Cpu::default(); cfg.cpus as usize],
            runq: Vec::new(),
            events: BinaryHeap::new(),
            next: None,
            seq: 0,
            live_app: 0,
            groups: Vec::new(),
            context_switches: 0,
            now: 0,
            end_ns: 0,
            hook_at: u64::MAX,
            report_due: u64::MAX,
        }
    }

    /// Add a thread: an application thread (runnable at 0) or a kernel thread (sleeping
    /// until woken). Returns its index.
    pub fn spawn(&mut self, app: bool, group: usize) -> usize {
        let t = self.threads.len();
        self.threads.push(Thread {
            app,
            group,
            state: if app {
                State::Runnable
            } else {
                State::Sleeping
            },
            since: 0,
            vruntime: 0,
            slice_used: 0,
            preempt: false,
            wake_queued: false,
            cpu_ns: 0,
            runq_wait_ns: 0,
            blocked_ns: 0,
            barrier_wait_ns: 0,
            runs: 0,
            finish_ns: 0,
        });
        if app {
            if self.groups.len() <= group {
                self.groups.resize(group + 1, (0, 0));
            }
            self.groups[group].0 += 1;
            self.live_app += 1;
            self.runq.push(t);
        }
        t
    }

    fn push(&mut self, t: u64, ev: Ev) {
        if self.next.is_some_and(|(t0, _, _)| t < t0) {
            // (not reached today: the kept step is the last event its handler queues)
            let n = self.next.take().expect("checked");
            self.events.push(Reverse(n));
        }
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, ev)));
    }

    /// [`Sched::push`] of a CPU's next step, the last event its handler queues: kept out of
    /// the heap when it comes strictly before every queued event (ties go by sequence, and
    /// every queued event has an earlier one), so the order is the heap's.
    fn push_next_step(&mut self, t: u64, ev: Ev) {
        if self.next.is_none() && self.events.peek().is_none_or(|Reverse((t0, _, _))| *t0 > t) {
            self.seq += 1;
            self.next = Some((t, self.seq, ev));
        } else {
            self.push(t, ev);
        }
    }

    /// Wake a sleeping thread at `at` (a kernel thread woken by an allocation). Nothing if
    /// it is not sleeping or a wake-up is already queued.
    pub fn wake(&mut self, t: usize, at: u64) {
        let th = &mut self.threads[t];
        if th.state == State::Sleeping && !th.wake_queued {
            th.wake_queued = true;
            self.push(at, Ev::Wake(t as u32));
        }
    }

    /// Whether thread `t` sleeps with no wake-up queued: a waker would find it on its wait
    /// queue. `wakeup_kswapd` (mm/vmscan.c, 6.8) returns at once when
    /// `!waitqueue_active(&pgdat->kswapd_wait)`: kswapd is running, or an earlier wake-up
    /// has already taken it off the queue (`autoremove_wake_function`), so only the first
    /// waker pays for the wake-up.
    pub fn wakeable(&self, t: usize) -> bool {
        let th = &self.threads[t];
        th.state == State::Sleeping && !th.wake_queued
    }

    /// Wake a blocked or sleeping thread at `at` even if a wake-up is queued for later (the
    /// thread has something to do before what it waits for): its step decides.
    pub fn kick(&mut self, t: usize, at: u64) {
        if matches!(self.threads[t].state, State::Blocked | State::Sleeping) {
            self.threads[t].wake_queued = true;
            self.push(at, Ev::Wake(t as u32));
        }
    }

    /// Call [`Exec::timer`] with `token` at `at`.
    pub fn timer(&mut self, at: u64, token: u32) {
        self.push(at, Ev::Timer(token));
    }

    /// Application threads not done yet.
    pub fn live_app(&self) -> usize {
        self.live_app
    }

    /// Run until every application thread is done. `progress(now)` is called every 50 ms of
    /// simulated time.
    pub fn run(
        &mut self,
        exec: &mut dyn Exec,
        mut progress: Option<&mut dyn FnMut(u64)>,
    ) -> Result<()> {
        self.dispatch(0);
        const REPORT_EVERY_NS: u64 = 50_000_000;
        self.report_due = if progress.is_some() {
            REPORT_EVERY_NS
        } else {
            u64::MAX
        };
        while let Some((now, _, ev)) = self
            .next
            .take()
            .or_else(|| self.events.pop().map(|Reverse(e)| e))
        {
            self.now = now;
            if now >= self.hook_at {
                exec.before(self, now)?;
            }
            match ev {
                Ev::Cpu(c) => self.step_cpu(exec, c as usize, now)?,
                Ev::Wake(t) => {
                    let t = t as usize;
                    self.threads[t].wake_queued = false;
                    if matches!(self.threads[t].state, State::Blocked | State::Sleeping) {
                        self.make_runnable(t, now, true);
                    }
                }
                Ev::Timer(tok) => exec.timer(self, tok, now)?,
            }
            if self.live_app == 0 {
                break;
            }
            if let Some(cb) = progress.as_mut() {
                if now >= self.report_due {
                    self.report_due = now + REPORT_EVERY_NS;
                    cb(now);
                }
            }
        }
        if self.live_app > 0 {
            return Err(Error::config(
                "workload",
                "threads stopped with nothing left to run (a barrier that not every thread reaches?)",
            ));
        }
        Ok(())
    }

    /// Whether running thread `t`, whose step began at `now` and has run until `at`, may
    /// go on in the same step as if a next step began at `at`: that step would be the next
    /// event (every queued one is later, so no other CPU, wake-up or timer comes first), no
    /// hook or progress report falls due at it, and its slice is not over (so no pick is
    /// made). Such a step would start with the same thread on the same CPU at its own clock,
    /// and its CPU time adds up the same: the caller does what that step would do first and
    /// goes on.
    pub fn may_go_on(&self, t: usize, now: u64, at: u64) -> bool {
        self.next.is_none()
            && self
                .events
                .peek()
                .is_none_or(|Reverse((t0, _, _))| *t0 > at)
            && at < self.hook_at
            && at < self.report_due
            && !self.threads[t].preempt
            && self.threads[t].slice_used + (at - now) < self.cfg.slice_ns
    }

    /// The least virtual runtime among threads running or waiting for a CPU, but `t`.
    fn min_vruntime(&self, t: usize) -> Option<u64> {
        let running = self.cpus.iter().filter_map(|c| c.running);
        self.runq
            .iter()
            .copied()
            .chain(running)
            .filter(|&u| u != t)
            .map(|u| self.threads[u].vruntime)
            .min()
    }

    fn make_runnable(&mut self, t: usize, now: u64, woken: bool) {
        if woken {
            let floor = self
                .min_vruntime(t)
                .map_or(0, |m| m.saturating_sub(2 * self.cfg.slice_ns));
            let th = &mut self.threads[t];
            if th.state == State::Blocked {
                th.blocked_ns += now.saturating_sub(th.since);
            }
            th.vruntime = th.vruntime.max(floor);
        }
        let th = &mut self.threads[t];
        th.state = State::Runnable;
        th.since = now;
        self.runq.push(t);
        self.dispatch(now);
        if woken && self.threads[t].state == State::Runnable {
            self.check_preempt(t, now);
        }
    }

    /// `check_preempt_wakeup_fair`: the running thread with the most virtual runtime (as of
    /// `now`) yields at the end of its step if `t` has less.
    fn check_preempt(&mut self, t: usize, now: u64) {
        let mine = self.threads[t].vruntime;
        let victim = self
            .cpus
            .iter()
            .filter_map(|c| {
                let r = c.running?;
                let th = &self.threads[r];
                let v = th.vruntime.saturating_sub(c.busy_until.saturating_sub(now));
                Some((v, r))
            })
            .max();
        if let Some((v, r)) = victim {
            if mine < v {
                self.threads[r].preempt = true;
            }
        }
    }

    /// The runnable thread to run next.
    fn pick(&mut self) -> Option<usize> {
        let (i, _) = self
            .runq
            .iter()
            .enumerate()
            .min_by_key(|(_, &t)| (self.threads[t].vruntime, t))?;
        Some(self.runq.swap_remove(i))
    }

    /// Whether a runnable thread comes before running thread `t` in the pick.
    fn someone_before(&self, t: usize) -> bool {
        let key = (self.threads[t].vruntime, t);
        self.runq
            .iter()
            .any(|&u| (self.threads[u].vruntime, u) < key)
    }

    /// Give idle CPUs the threads waiting for one. A thread goes back to the CPU it ran on
    /// last if that one is idle (`select_idle_sibling` prefers the previous CPU), else to
    /// an idle CPU that has run nothing yet, else to the first idle one.
    fn dispatch(&mut self, now: u64) {
        while !self.runq.is_empty() {
            let idle = |c: &Cpu| c.running.is_none();
            let Some(first) = self.cpus.iter().position(idle) else {
                return;
            };
            let t = self.pick().expect("non-empty");
            let c = self
                .cpus
                .iter()
                .position(|c| idle(c) && c.last == Some(t))
                .or_else(|| self.cpus.iter().position(|c| idle(c) && c.last.is_none()))
                .unwrap_or(first);
            self.start_on(c, t, now);
        }
    }

    fn start_on(&mut self, c: usize, t: usize, now: u64) {
        // A CPU that has run nothing yet starts its first thread in place (the run begins
        // with the threads on their CPUs).
        let cs = match self.cpus[c].last {
            Some(u) if u != t => {
                self.context_switches += 1;
                self.cfg.context_switch_ns
            }
            _ => 0,
        };
        let th = &mut self.threads[t];
        // A thread preempted at the end of a step became runnable at that step's end, which
        // may be later than `now` on this CPU's clock: it cannot run in its own past, so the
        // CPU waits for it.
        let start = now.max(th.since);
        th.runq_wait_ns += start - th.since;
        th.state = State::Running;
        th.slice_used = cs;
        th.cpu_ns += cs;
        th.vruntime += cs;
        th.preempt = false;
        th.runs += 1;
        self.cpus[c] = Cpu {
            running: Some(t),
            last: Some(t),
            busy_until: start + cs,
        };
        self.push(start + cs, Ev::Cpu(c as u32));
    }

    /// CPU `c` stops running its thread at `now`: the next waiting thread gets it.
    fn release_cpu(&mut self, c: usize, now: u64) {
        self.cpus[c].running = None;
        if let Some(t) = self.pick() {
            self.start_on(c, t, now);
        }
    }

    fn charge(&mut self, t: usize, ns: u64) {
        let th = &mut self.threads[t];
        th.cpu_ns += ns;
        th.vruntime += ns;
        th.slice_used += ns;
    }

    fn step_cpu(&mut self, exec: &mut dyn Exec, c: usize, now: u64) -> Result<()> {
        let Some(t) = self.cpus[c].running else {
            return Ok(());
        };
        // At the end of a slice, or when a wake-up asked, the pick is made again; a thread
        // that would pick itself just goes on.
        let th = &mut self.threads[t];
        let slice_over = th.slice_used >= self.cfg.slice_ns;
        if slice_over {
            th.slice_used = 0;
        }
        let preempt = std::mem::take(&mut th.preempt);
        if (preempt || slice_over) && self.someone_before(t) {
            let th = &mut self.threads[t];
            th.state = State::Runnable;
            th.since = now;
            self.runq.push(t);
            self.release_cpu(c, now);
            return Ok(());
        }
        let out = exec.step(self, t, c, now)?;
        let at = match out {
            Step::Ran(a)
            | Step::Block { at: a, .. }
            | Step::Sleep { at: a, .. }
            | Step::Barrier(a)
            | Step::Done(a) => a,
        };
        debug_assert!(at >= now, "a step ends before it starts");
        let at = at.max(now);
        self.charge(t, at - now);
        match out {
            Step::Ran(_) => {
                self.cpus[c].busy_until = at;
                self.push_next_step(at, Ev::Cpu(c as u32));
            }
            Step::Block { until, .. } => {
                let th = &mut self.threads[t];
                th.state = State::Blocked;
                th.since = at;
                th.wake_queued = true;
                self.push(until.max(at), Ev::Wake(t as u32));
                self.release_cpu(c, at);
            }
            Step::Sleep { until, .. } => {
                let th = &mut self.threads[t];
                th.state = State::Sleeping;
                th.since = at;
                if let Some(u) = until {
                    th.wake_queued = true;
                    self.push(u.max(at), Ev::Wake(t as u32));
                }
                self.release_cpu(c, at);
            }
            Step::Barrier(_) => {
                let th = &mut self.threads[t];
                th.state = State::Barrier;
                th.since = at;
                let g = th.group;
                self.groups[g].1 += 1;
                self.release_cpu(c, at);
                self.release_barrier_if_complete(exec, g, at);
            }
            Step::Done(_) => {
                let th = &mut self.threads[t];
                th.state = State::Done;
                th.finish_ns = at;
                if th.app {
                    let g = th.group;
                    self.live_app -= 1;
                    self.groups[g].0 -= 1;
                    self.end_ns = self.end_ns.max(at);
                    self.release_cpu(c, at);
                    self.release_barrier_if_complete(exec, g, at);
                } else {
                    self.release_cpu(c, at);
                }
            }
        }
        Ok(())
    }

    fn release_barrier_if_complete(&mut self, exec: &mut dyn Exec, g: usize, now: u64) {
        let (live, at) = self.groups[g];
        if at == 0 || at < live {
            return;
        }
        self.groups[g].1 = 0;
        for t in 0..self.threads.len() {
            let th = &mut self.threads[t];
            if th.group == g && th.state == State::Barrier {
                th.barrier_wait_ns += now - th.since;
                exec.barrier_done(t, now);
                self.make_runnable(t, now, false);
            }
        }
    }
}

#[cfg(test)]
mod tests;

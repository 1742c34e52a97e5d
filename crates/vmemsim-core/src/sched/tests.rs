//! The scheduler on scripted threads whose times are worked out by hand. These are the
//! scheduling cases of the timing engine's and the VM layer's suites, asked of the one
//! engine directly.

use super::*;

#[derive(Clone, Copy, Debug)]
enum A {
    /// Run this long (one step).
    Run(u64),
    /// Sleep until this absolute time (an open-loop arrival).
    SleepUntil(u64),
    /// Block for this long (an I/O).
    Block(u64),
    Barrier,
}

/// Threads that do what their scripts say; records when each action started.
struct Script {
    scripts: Vec<Vec<A>>,
    pos: Vec<usize>,
    started: Vec<Vec<u64>>,
}

impl Script {
    fn new(scripts: Vec<Vec<A>>) -> (Script, Sched) {
        Self::with(scripts, 1, 3_000_000, 0)
    }
    fn with(scripts: Vec<Vec<A>>, cpus: u32, slice: u64, cs: u64) -> (Script, Sched) {
        let mut s = Sched::new(SchedConfig::new(cpus, Some(slice), cs).unwrap());
        for _ in &scripts {
            s.spawn(true, 0);
        }
        let n = scripts.len();
        (
            Script {
                scripts,
                pos: vec![0; n],
                started: vec![Vec::new(); n],
            },
            s,
        )
    }
}

impl Exec for Script {
    fn step(&mut self, _s: &mut Sched, t: usize, _c: usize, now: u64) -> Result<Step> {
        let Some(&a) = self.scripts[t].get(self.pos[t]) else {
            return Ok(Step::Done(now));
        };
        self.pos[t] += 1;
        self.started[t].push(now);
        let last = self.pos[t] == self.scripts[t].len();
        Ok(match a {
            A::Run(ns) if last => Step::Done(now + ns),
            A::Run(ns) => Step::Ran(now + ns),
            A::SleepUntil(at) => Step::Sleep {
                at: now,
                until: Some(at),
            },
            A::Block(ns) => Step::Block {
                at: now,
                until: now + ns,
            },
            A::Barrier => Step::Barrier(now),
        })
    }
}

const MS: u64 = 1_000_000;

fn ms(n: usize) -> Vec<A> {
    vec![A::Run(MS); n]
}

#[test]
fn time_slices_share_one_cpu() {
    // (The timing engine's case.) Two threads of 3 ms on one CPU with 1 ms slices: A 0-1,
    // B 1-2, A 2-3, B 3-4, A 4-5 (done), B 5-6 (done). A waited 2 ms, B 3 ms.
    let (mut x, mut s) = Script::with(vec![ms(3), ms(3)], 1, MS, 0);
    s.run(&mut x, None).unwrap();
    assert_eq!(s.end_ns, 6 * MS);
    assert_eq!(s.threads[0].finish_ns, 5 * MS);
    assert_eq!(s.threads[1].finish_ns, 6 * MS);
    assert_eq!(s.threads[0].runq_wait_ns, 2 * MS);
    assert_eq!(s.threads[1].runq_wait_ns, 3 * MS);
    // Two CPUs: no waiting.
    let (mut x, mut s) = Script::with(vec![ms(3), ms(3)], 2, MS, 0);
    s.run(&mut x, None).unwrap();
    assert_eq!(s.end_ns, 3 * MS);
    assert_eq!(s.threads[0].runq_wait_ns + s.threads[1].runq_wait_ns, 0);
}

#[test]
fn slices_go_to_the_least_cpu_time_with_ties_to_the_first() {
    // (The VM layer's case.) Two threads of ten 1 ms steps on one CPU, 3 ms slices: 0 runs
    // 0-3, 6-9, 12-15, 18-19, thread 1 3-6, 9-12, 15-18, 19-20. Thread 0 ends at 19 ms
    // after 9 ms of waiting, thread 1 at 20 ms after 10 ms.
    let (mut x, mut s) = Script::new(vec![ms(10), ms(10)]);
    s.run(&mut x, None).unwrap();
    let fin: Vec<u64> = s.threads.iter().map(|t| t.finish_ns).collect();
    let wait: Vec<u64> = s.threads.iter().map(|t| t.runq_wait_ns).collect();
    assert_eq!(fin, [19 * MS, 20 * MS]);
    assert_eq!(wait, [9 * MS, 10 * MS]);
    assert_eq!(x.started[0][..4], [0, MS, 2 * MS, 6 * MS]);
}

#[test]
fn barriers_wait_for_the_slowest_thread() {
    let (mut x, mut s) = Script::with(
        vec![
            vec![A::Run(1_000), A::Barrier, A::Run(1_000)],
            vec![A::Run(5_000), A::Barrier, A::Run(1_000)],
        ],
        2,
        MS,
        0,
    );
    s.run(&mut x, None).unwrap();
    assert_eq!(s.end_ns, 6_000);
    assert_eq!(s.threads[0].finish_ns, 6_000);
    assert_eq!(s.threads[0].barrier_wait_ns, 4_000);
    assert_eq!(s.threads[1].barrier_wait_ns, 0);
}

#[test]
fn a_sleeper_gives_its_cpu_back_and_preempts_when_it_wakes() {
    // (The VM layer's case.) Thread 0 sleeps until 5 ms, then runs 1 ms; thread 1 runs ten
    // 1 ms steps. One CPU, 3 ms slices: thread 1 runs from 0 (thread 0 idles at once); at 5
    // ms thread 0 wakes with no CPU time against thread 1's 5 ms and preempts it at the end
    // of its step: thread 0 runs 5-6 ms, thread 1 waits 5-6 and ends at 11 ms.
    let (mut x, mut s) = Script::new(vec![vec![A::SleepUntil(5 * MS), A::Run(MS)], ms(10)]);
    s.run(&mut x, None).unwrap();
    assert_eq!(x.started[0], [0, 5 * MS]);
    assert_eq!(s.threads[0].finish_ns, 6 * MS);
    assert_eq!(s.threads[0].runq_wait_ns, 0);
    assert_eq!(s.threads[1].finish_ns, 11 * MS);
    assert_eq!(s.threads[1].runq_wait_ns, MS);
}

#[test]
fn a_thread_waking_after_a_long_sleep_keeps_only_two_slices_of_credit() {
    // (The VM layer's case.) Thread 0 sleeps until 20 ms, then runs ten 1 ms steps; thread
    // 1 runs thirty. One CPU, 3 ms slices. Thread 1 runs 0-20 ms; thread 0 rejoins with
    // 20 − 2·3 = 14 ms of virtual runtime, not 0, preempts, runs 20-23 and 23-26 (17, 20
    // ms), wins the tie at 26-29 (23 ms), then thread 1 runs 29-32 and thread 0 finishes
    // 32-33. Thread 1 waits 9 + 1 ms and ends at 40 ms.
    let mut a = vec![A::SleepUntil(20 * MS)];
    a.extend(ms(10));
    let (mut x, mut s) = Script::new(vec![a, ms(30)]);
    s.run(&mut x, None).unwrap();
    assert_eq!(s.threads[0].finish_ns, 33 * MS);
    assert_eq!(s.threads[1].finish_ns, 40 * MS);
    assert_eq!(s.threads[1].runq_wait_ns, 10 * MS);
}

#[test]
fn a_blocked_thread_frees_its_cpu_and_counts_the_wait() {
    // Thread 0: 1 ms, a 4 ms read, 1 ms. Thread 1: four 1 ms steps. One CPU, 3 ms slices:
    // 0 runs 0-1 and blocks until 5; thread 1 runs 1-5 (done at 5); thread 0 runs 5-6.
    let (mut x, mut s) = Script::new(vec![vec![A::Run(MS), A::Block(4 * MS), A::Run(MS)], ms(4)]);
    s.run(&mut x, None).unwrap();
    assert_eq!(s.threads[0].blocked_ns, 4 * MS);
    assert_eq!(s.threads[0].finish_ns, 6 * MS);
    assert_eq!(s.threads[1].finish_ns, 5 * MS);
    assert_eq!(s.threads[0].cpu_ns, 2 * MS);
}

#[test]
fn a_context_switch_is_charged_only_when_the_cpu_changes_thread() {
    // Two threads of 2 ms on one CPU, 1 ms slices, 10 µs per switch; thread 0 is in place
    // at the start: 0 runs [0, 1), 1 [1, 2.01), 0 [2.01, 3.02), 1 [3.02, 4.03): three
    // switches. Alone, a thread pays none however many slices it uses.
    let us = 1_000;
    let (mut x, mut s) = Script::with(vec![ms(2), ms(2)], 1, MS, 10 * us);
    s.run(&mut x, None).unwrap();
    assert_eq!(s.context_switches, 3);
    assert_eq!(s.end_ns, 4 * MS + 30 * us);
    assert_eq!(s.threads[0].cpu_ns, 2 * MS + 10 * us);
    assert_eq!(s.threads[1].cpu_ns, 2 * MS + 20 * us);
    let (mut x, mut s) = Script::with(vec![ms(5)], 1, MS, 10 * us);
    s.run(&mut x, None).unwrap();
    assert_eq!(s.context_switches, 0);
    assert_eq!(s.end_ns, 5 * MS);
}

#[test]
fn default_slice_follows_eevdf_scaling() {
    assert_eq!(default_slice_ns(1), 750_000);
    assert_eq!(default_slice_ns(2), 1_500_000);
    assert_eq!(default_slice_ns(6), 2_250_000); // 1 + ilog2(6) = 3
    assert_eq!(default_slice_ns(64), 3_000_000); // capped at 8 CPUs
}

#[test]
fn a_barrier_completes_when_the_others_finish_instead() {
    // Thread 1 finishes without reaching the barrier: thread 0 goes on when it does.
    let (mut x, mut s) = Script::with(
        vec![vec![A::Barrier, A::Run(MS)], vec![A::Run(2 * MS)]],
        2,
        MS,
        0,
    );
    s.run(&mut x, None).unwrap();
    assert_eq!(s.threads[0].barrier_wait_ns, 2 * MS);
    assert_eq!(s.end_ns, 3 * MS);
}

#[test]
fn a_thread_count_of_cpus_outside_1_to_4096_is_refused() {
    for n in [0, 4097] {
        let e = SchedConfig::new(n, None, 0).unwrap_err().to_string();
        assert!(e.contains("cpus"), "{e}");
    }
}

#[test]
fn a_wake_up_queued_for_the_same_time_comes_before_the_cpus_next_step() {
    // One CPU, 3 ms slices. B (thread 0) runs first and blocks at 0 for 1 ms; A runs 0-1.
    // At 1 ms B's wake-up (queued at 0) is handled before A's next step (queued at 1 ms):
    // B, with less CPU time, preempts A at the end of its step, runs 1-2 and is done; A runs
    // 2-3 and 3-4. (A CPU's next step skips the event heap only when it comes strictly
    // before every queued event.)
    let (mut x, mut s) = Script::new(vec![vec![A::Block(MS), A::Run(MS)], ms(3)]);
    s.run(&mut x, None).unwrap();
    assert_eq!(x.started[0], vec![0, MS]);
    assert_eq!(x.started[1], vec![0, 2 * MS, 3 * MS]);
    assert_eq!(s.end_ns, 4 * MS);
}

/// Asks `may_go_on` of its one thread's first step at 0 for each of `ats`, after queueing
/// a timer at 500 ns; the thread is then done.
struct GoOnProbe {
    ats: Vec<u64>,
    answers: Vec<bool>,
}

impl Exec for GoOnProbe {
    fn step(&mut self, s: &mut Sched, t: usize, _c: usize, now: u64) -> Result<Step> {
        s.timer(500, 0);
        self.answers = self.ats.iter().map(|&at| s.may_go_on(t, now, at)).collect();
        Ok(Step::Done(now))
    }
}

#[test]
fn a_step_may_go_on_only_until_the_next_event_hook_or_slice_end() {
    // (slice, hook): a queued event at 500 ns stops it at 500 (a tie goes to the queued
    // event); a slice of 400 ns at 400; a hook due at 300 ns at 300.
    for (slice, hook, last) in [
        (1_000, u64::MAX, 499),
        (400, u64::MAX, 399),
        (1_000, 300, 299),
    ] {
        let mut s = Sched::new(SchedConfig::new(1, Some(slice), 0).unwrap());
        s.spawn(true, 0);
        s.hook_at = hook;
        let mut x = GoOnProbe {
            ats: vec![100, last, last + 1],
            answers: Vec::new(),
        };
        s.run(&mut x, None).unwrap();
        assert_eq!(
            x.answers,
            vec![true, true, false],
            "slice {slice}, hook {hook}"
        );
    }
}

//! The timing engine on scripted workloads whose times are worked out by hand.

use super::*;

/// [`super::run`] of a boxed workload.
fn run(
    spec: &TimedSpec,
    mut w: Box<dyn Workload>,
    progress: Option<&mut dyn FnMut(u64)>,
) -> Result<RunResult> {
    super::run(spec, &mut *w, progress)
}
use crate::device::ContentClass;
use crate::policy::PolicyOptions;
use crate::workload::{Op, Workload, REQ_READ};

/// Each thread's whole stream, given at once.
struct Script {
    threads: Vec<Vec<Op>>,
    given: Vec<bool>,
    class: ContentClass,
}

impl Script {
    fn new(threads: Vec<Vec<Op>>) -> Box<Self> {
        Self::with_class(threads, ContentClass::Random)
    }
    fn with_class(threads: Vec<Vec<Op>>, class: ContentClass) -> Box<Self> {
        let n = threads.len();
        Box::new(Script {
            threads,
            given: vec![false; n],
            class,
        })
    }
}

impl Workload for Script {
    fn name(&self) -> String {
        "script".into()
    }
    fn threads(&self) -> usize {
        self.threads.len()
    }
    fn footprint_pages(&self) -> u64 {
        0
    }
    fn content_class(&self, _pid: u32, _page: u64) -> ContentClass {
        self.class
    }
    fn next_ops(&mut self, tid: usize, buf: &mut Vec<Op>) -> crate::error::Result<()> {
        if !std::mem::replace(&mut self.given[tid], true) {
            buf.extend_from_slice(&self.threads[tid]);
        }
        Ok(())
    }
}

fn zero_costs() -> Costs {
    Costs {
        access_ns: 0,
        minor_fault_ns: 0,
        major_fault_ns: 0,
        scan_page_ns: 0,
        reclaim_page_ns: 0,
        walk_pte_ns: 0,
        walk_pmd_ns: 0,
        lookaround_pte_ns: 0,
        context_switch_ns: 0,
        wakeup_ns: 0,
        invlpg_ns: 0,
        cr3_ns: 0,
        cpu_ghz: 3.0,
        guest_major_fault_ns: 0,
        host_minor_fault_ns: 0,
        host_major_fault_ns: 0,
        exit_ns: 0,
        kvm_work_ns: [0.0; crate::kvm::WORK_KINDS],
        clear_page_ns: 0,
        swap_page_ns: 0,
        syscall_ns: 0,
        copy_page_ns: 0,
        pagecache_add_ns: 0,
        virtio_blk_ns: 0,
    }
}

fn spec(policy: &str, frames: u32, cpus: u32, costs: Costs, device: &str) -> TimedSpec {
    TimedSpec {
        policy: PolicyKind::from_name(policy).unwrap(),
        machine: MachineConfig::new(frames),
        options: PolicyOptions::new(1),
        timed: TimedConfig {
            cpus,
            slice_ns: None,
            costs,
            device: DeviceSpec::parse(device).unwrap(),
            charge_device_ram: true,
            sample_every_ns: 0,
            step_ns: 2_000,
            tlb: false,
            translate: Default::default(),
            file_device: None,
        },
    }
}

fn acc(page: u64) -> Op {
    Op::Access { page, write: false }
}

#[test]
fn costs_add_up_on_one_thread() {
    let costs = Costs {
        access_ns: 100,
        minor_fault_ns: 1_000,
        context_switch_ns: 1_500,
        ..zero_costs()
    };
    let w = Script::new(vec![vec![acc(1), Op::Compute { ns: 500 }, acc(1)]]);
    let r = run(&spec("fifo", 4, 1, costs, "ssd"), w, None).unwrap();
    // access 100 + first-touch minor fault 1000 + 500 + hit 100 (the thread is in place on
    // its CPU at the start: no switch).
    assert_eq!(r.runtime_ns, 1_700);
    assert_eq!(r.threads[0].cpu_ns, 1_700);
    assert_eq!(r.cpu.context_switches, 0);
    assert_eq!((r.stats.faults, r.stats.minor_faults), (1, 1));
    assert_eq!(r.vmstat["pgfault"], 1);
}

#[test]
fn a_major_fault_waits_for_its_read_behind_queued_writes() {
    // One frame, FIFO: p1 is written out when p2 arrives, p2 when p1 comes back, and p1 is
    // read. The SSD has one channel and serves 10 µs + 4096 B at 4096 MB/s = 11 µs per page:
    // write p1 0..11 µs, write p2 11..22 µs, read p1 22..33 µs; then 1 µs of compute.
    let w = Script::new(vec![vec![
        acc(1),
        acc(2),
        acc(1),
        Op::Compute { ns: 1_000 },
    ]]);
    let dev = "ssd:latency_us=10,bw_mbps=4096,qd=1,submit_us=0";
    let r = run(&spec("fifo", 1, 1, zero_costs(), dev), w, None).unwrap();
    assert_eq!(r.runtime_ns, 34_000);
    assert_eq!(r.cpu.io_wait_ns, 33_000);
    assert_eq!(r.threads[0].cpu_ns, 1_000);
    assert_eq!(
        (r.stats.major_faults, r.stats.pswpin, r.stats.pswpout),
        (1, 1, 2)
    );
    assert_eq!(r.device_stats.as_ref().unwrap().read_requests, 1);
    // With two channels the read overlaps the first write: write p2 0..11, read 0..11.
    let w = Script::new(vec![vec![
        acc(1),
        acc(2),
        acc(1),
        Op::Compute { ns: 1_000 },
    ]]);
    let dev = "ssd:latency_us=10,bw_mbps=4096,qd=2,submit_us=0";
    let r = run(&spec("fifo", 1, 1, zero_costs(), dev), w, None).unwrap();
    assert_eq!(r.runtime_ns, 23_000); // read waits for a channel until 11 µs, done at 22 µs
}

#[test]
fn zram_charges_cpu_to_the_faulting_thread() {
    // zram: write 35 µs on the thread that reclaims, read 20 µs on the one that faults, no
    // blocking beyond that (done_at = now + cpu).
    let ops = vec![acc(1), acc(2), acc(1)];
    let w = Script::with_class(vec![ops.clone()], ContentClass::Text);
    // One frame: a pool charged to it would have no room, so it is not charged here.
    let mut s = spec("fifo", 1, 1, zero_costs(), "zram");
    s.timed.charge_device_ram = false;
    let r = run(&s, w, None).unwrap();
    // Two writes (35 µs each) and one decompressing read (20 µs).
    assert_eq!(r.cpu.device_ns, 90_000);
    assert_eq!(r.runtime_ns, 90_000);
    assert_eq!(r.cpu.io_wait_ns, 0);
    // Incompressible pages are stored whole: reading one back is a 1 µs copy, not a
    // decompression (the device model's estimate).
    let r = run(&s, Script::new(vec![ops]), None).unwrap();
    assert_eq!(r.cpu.device_ns, 71_000);
}

fn compute_thread(n: usize, ns: u32) -> Vec<Op> {
    vec![Op::Compute { ns }; n]
}

#[test]
fn time_slices_share_one_cpu() {
    // Two threads of 3 ms each on one CPU with 1 ms slices: A 0-1, B 1-2, A 2-3, B 3-4,
    // A 4-5 (done), B 5-6 (done). A waited 2 ms in the run queue, B 3 ms.
    let mut s = spec("fifo", 4, 1, zero_costs(), "ssd");
    s.timed.slice_ns = Some(1_000_000);
    let w = Script::new(vec![
        compute_thread(3_000, 1_000),
        compute_thread(3_000, 1_000),
    ]);
    let r = run(&s, w, None).unwrap();
    assert_eq!(r.runtime_ns, 6_000_000);
    assert_eq!(r.threads[0].finish_ns, 5_000_000);
    assert_eq!(r.threads[1].finish_ns, 6_000_000);
    assert_eq!(r.cpu.runqueue_wait_ns, 5_000_000);
    // Two CPUs: no waiting.
    let mut s = spec("fifo", 4, 2, zero_costs(), "ssd");
    s.timed.slice_ns = Some(1_000_000);
    let w = Script::new(vec![
        compute_thread(3_000, 1_000),
        compute_thread(3_000, 1_000),
    ]);
    let r = run(&s, w, None).unwrap();
    assert_eq!(r.runtime_ns, 3_000_000);
    assert_eq!(r.cpu.runqueue_wait_ns, 0);
}

#[test]
fn barriers_wait_for_the_slowest_thread() {
    let w = Script::new(vec![
        vec![
            Op::Compute { ns: 1_000 },
            Op::Barrier,
            Op::Compute { ns: 1_000 },
        ],
        vec![
            Op::Compute { ns: 5_000 },
            Op::Barrier,
            Op::Compute { ns: 1_000 },
        ],
    ]);
    let r = run(&spec("fifo", 4, 2, zero_costs(), "ssd"), w, None).unwrap();
    assert_eq!(r.runtime_ns, 6_000);
    assert_eq!(r.threads[0].finish_ns, 6_000);
    assert_eq!(r.cpu.barrier_wait_ns, 4_000);
}

#[test]
fn request_latency_is_recorded() {
    let mut ops = Vec::new();
    for i in 0..100u32 {
        ops.push(Op::RequestBegin { kind: REQ_READ });
        ops.push(Op::Compute { ns: 1_000 + i });
        ops.push(Op::RequestEnd);
    }
    let r = run(
        &spec("fifo", 4, 1, zero_costs(), "ssd"),
        Script::new(vec![ops]),
        None,
    )
    .unwrap();
    let l = &r.latency["read"];
    assert_eq!((l.count, l.min, l.max), (100, 1_000, 1_099));
    assert_eq!(l.p50, 1_049); // rank 50 of 1000..=1099
    assert_eq!(r.latency["all"].count, 100);
}

/// A thread streaming over `pages` pages `rounds` times, writing each.
fn loop_thread(pages: u64, rounds: usize, compute: u32) -> Vec<Op> {
    let mut v = Vec::new();
    for _ in 0..rounds {
        for p in 0..pages {
            v.push(Op::Access {
                page: p,
                write: true,
            });
            v.push(Op::Compute { ns: compute });
        }
    }
    v
}

#[test]
fn kswapd_runs_as_a_thread_and_counters_agree() {
    let w = Script::with_class(vec![loop_thread(3_000, 3, 200)], ContentClass::Text);
    let mut s = spec("clock-lru", 1_000, 2, Costs::default(), "zram");
    s.timed.charge_device_ram = false;
    let r = run(&s, w, None).unwrap();
    let v = &r.vmstat;
    assert!(r.cpu.kswapd_ns > 0 && r.cpu.kswapd_runs > 0);
    assert!(v["pgscan_kswapd"] > 0);
    assert!(v["pgsteal_kswapd"] <= v["pgscan_kswapd"]);
    assert!(v["pgsteal_direct"] <= v["pgscan_direct"]);
    assert!(v["pgmajfault"] <= v["pswpin"]);
    assert_eq!(r.stats.accesses, 9_000);
    // zram's pool took frames: incompressible pages are stored whole.
    assert!(r.device_frames_peak > 0);
    // Same run, same result.
    let again = run(
        &s,
        Script::with_class(vec![loop_thread(3_000, 3, 200)], ContentClass::Text),
        None,
    )
    .unwrap();
    assert_eq!(r, again);
}

#[test]
fn costlier_scanning_leaves_kswapd_behind() {
    // One application thread and kswapd on two CPUs, NVMe swap. When each scanned page
    // costs more CPU, kswapd frees memory more slowly relative to the application: a smaller
    // share of reclaim is kswapd's, and more allocations stall in direct reclaim.
    let run_with = |scan_ns: u64| {
        let costs = Costs {
            scan_page_ns: scan_ns,
            ..Costs::default()
        };
        let s = spec("clock-lru", 2_000, 2, costs, "nvme");
        let w = Script::with_class(vec![loop_thread(6_000, 3, 100)], ContentClass::Text);
        run(&s, w, None).unwrap()
    };
    let share = |r: &RunResult| {
        r.stats.pgsteal_kswapd as f64 / (r.stats.pgsteal_kswapd + r.stats.pgsteal_direct) as f64
    };
    let cheap = run_with(100);
    let dear = run_with(20_000);
    assert!(dear.cpu.kswapd_ns > cheap.cpu.kswapd_ns);
    assert!(
        share(&dear) < share(&cheap),
        "{} vs {}",
        share(&dear),
        share(&cheap)
    );
    assert!(
        dear.stats.allocstall > cheap.stats.allocstall,
        "allocstall: cheap {} dear {}",
        cheap.stats.allocstall,
        dear.stats.allocstall
    );
    assert!(dear.runtime_ns > cheap.runtime_ns);
}

#[test]
fn bad_configs_are_errors() {
    let mut s = spec("fifo", 4, 1, zero_costs(), "ssd");
    s.timed.cpus = 0;
    let e = run(&s, Script::new(vec![vec![]]), None).unwrap_err();
    assert!(e.to_string().contains("cpus"));
    let s = spec("fifo", 4, 1, zero_costs(), "ssd");
    let e = run(&s, Script::new(vec![]), None).unwrap_err();
    assert!(e.to_string().contains("no threads"));
}

#[test]
fn zram_swap_in_frees_the_slot_so_the_page_is_written_again() {
    // One frame, FIFO, p1 p2 p1 p2. Block device: p1 comes back into the swap cache and
    // keeps its slot, so evicting it again (clean) needs no write: 2 writes. zram
    // (SWP_SYNCHRONOUS_IO): the slot is freed at swap-in, so p1 is written again: 3 writes,
    // and both swap-ins discard their slot.
    let ops = vec![acc(1), acc(2), acc(1), acc(2)];
    let mut s = spec("fifo", 1, 1, zero_costs(), "zram");
    s.timed.charge_device_ram = false;
    let z = run(&s, Script::new(vec![ops.clone()]), None).unwrap();
    assert_eq!((z.stats.pswpout, z.stats.pswpin), (3, 2));
    assert_eq!(z.device_stats.as_ref().unwrap().pages_discarded, 2);
    let n = run(
        &spec("fifo", 1, 1, zero_costs(), "nvme"),
        Script::new(vec![ops]),
        None,
    )
    .unwrap();
    assert_eq!((n.stats.pswpout, n.stats.pswpin), (2, 2));
}

#[test]
fn an_uncharged_zram_pool_leaves_the_frames_to_the_workload() {
    // Incompressible pages cost zram a whole frame each (ZRAM_HUGE): charged to the
    // machine, every swap-out frees one frame and the pool takes one, until nothing is
    // free, zs_malloc fails and the allocation runs out of retries (Linux: OOM kill). In a
    // memory cgroup the pool is not charged and the run completes.
    // Touch 3,000 pages once, then loop three times over the last 1,500: they fit in 2,000
    // frames.
    let mut ops: Vec<Op> = (0..3_000)
        .map(|p| Op::Access {
            page: p,
            write: true,
        })
        .collect();
    for _ in 0..3 {
        ops.extend((1_500..3_000).map(acc));
    }
    let mut s = spec("clock-lru", 2_000, 2, Costs::default(), "zram");
    let charged = run(&s, Script::new(vec![ops.clone()]), None).unwrap_err();
    let msg = charged.to_string();
    assert!(
        msg.contains("out of memory") && msg.contains("zram"),
        "{msg}"
    );
    assert!(msg.contains("failed writes"), "{msg}");
    s.timed.charge_device_ram = false;
    let cgroup = run(&s, Script::new(vec![ops]), None).unwrap();
    assert_eq!(cgroup.stats.swap_write_errors, 0);
    // 1,000+ pages went to zram once; the loop over the last 1,500 fits.
    assert!(
        cgroup.stats.major_faults < 100,
        "{}",
        cgroup.stats.major_faults
    );
}

#[test]
fn a_charged_zram_pool_never_holds_more_than_the_free_memory() {
    // Compressible pages (Text, ratio 3 by default: 1,366 bytes, zsmalloc's 1,376-byte
    // class with the handle) written once over 3,000 pages into 2,000 frames. Charged, the
    // pool's frames come out of the 2,000: at the end, resident pages + pool frames fit.
    let ops: Vec<Op> = (0..3_000)
        .map(|p| Op::Access {
            page: p,
            write: true,
        })
        .collect();
    let s = spec("clock-lru", 2_000, 2, Costs::default(), "zram");
    let r = run(&s, Script::with_class(vec![ops], ContentClass::Text), None).unwrap();
    let stored = r.device_stats.as_ref().unwrap().pages_stored;
    let pool_frames = r.device_stats.as_ref().unwrap().ram_bytes.div_ceil(4096);
    assert!(stored > 1_000, "{stored}");
    assert!(
        (3_000 - stored) + pool_frames <= 2_000,
        "resident {} + pool {pool_frames} > 2000",
        3_000 - stored
    );
    assert!(r.device_frames_peak <= 2_000);
    // Each stored page takes 1,376 of 4,096 bytes of the pool, so with `free` frames free at
    // the end, (3,000 - stored) + stored x 1,376/4,096 + free = 2,000: stored = (1,000 +
    // free) / 0.664. kswapd leaves between the min (89) and the high (133) watermark free
    // (`Watermarks::derive(2000)`): 1,640..1,707 swap-outs, give or take a page's rounding
    // of the pool and the batches kswapd has not yet freed.
    assert!((1_630..=1_720).contains(&stored), "{stored}");
}

#[test]
fn kswapd_is_one_thread_and_frees_over_its_own_time() {
    // YCSB-A's four server threads fault continuously with zram at 50%: each kswapd step
    // compresses hundreds of pages at 35 µs, and the servers wake kswapd again while its last
    // step's time runs. One kswapd thread cannot spend more CPU time than the run lasts, plus
    // the step it may still be in when the last server ends (at most max(high watermark, 32)
    // pages x 35 µs plus scan costs, under 30 ms here).
    let w = crate::workload::parse("ycsb-a:footprint=16MiB", 1).unwrap();
    let frames = (w.footprint_pages() / 2) as u32;
    let mut s = spec("clock-lru", frames, 6, Costs::default(), "zram");
    s.timed.charge_device_ram = false;
    let r = run(&s, w, None).unwrap();
    assert!(r.vmstat["pgsteal_kswapd"] > 1_000, "{:?}", r.vmstat);
    assert!(
        r.cpu.kswapd_ns <= r.runtime_ns + 30_000_000,
        "kswapd {} ns in a {} ns run",
        r.cpu.kswapd_ns,
        r.runtime_ns
    );
}

#[test]
fn a_sampling_interval_that_would_exceed_the_sample_cap_is_refused() {
    // 1 ns samples over 2 ms of simulated time would be 2,000,000 samples: the run stops with
    // an error naming sample_every_ns once the cap (1,000,000, as replay's) is reached,
    // instead of growing without bound. 1,000 ns samples over the same run are 2,001.
    let w = || Script::new(vec![vec![acc(1), Op::Compute { ns: 2_000_000 }, acc(1)]]);
    let mut s = spec("fifo", 4, 1, zero_costs(), "ssd");
    s.timed.sample_every_ns = 1;
    let e = run(&s, w(), None).unwrap_err().to_string();
    assert!(
        e.contains("sample_every_ns") && e.contains("1000000 samples"),
        "{e}"
    );
    s.timed.sample_every_ns = 1_000;
    let r = run(&s, w(), None).unwrap();
    assert_eq!(r.series.len(), 2_001);
}

#[test]
fn only_the_allocation_that_finds_kswapd_asleep_pays_its_wake_up() {
    // wakeup_kswapd (mm/vmscan.c) returns at once unless kswapd sleeps on its wait queue:
    // once a wake-up is queued (or kswapd runs), later allocations pay nothing. Every cost
    // but `wakeup_ns` and the reclaim of a page is zero and the swap device takes no CPU, so
    // the application thread's CPU time is its direct reclaim plus 1 µs per wake-up it paid,
    // and each of kswapd's runs began with one wake-up (on its own CPU it is never
    // preempted: a run ends when it sleeps). kswapd's passes take 20 µs a page, so the
    // thread goes on allocating below the low watermark while a wake-up waits for the
    // pass to end.
    let costs = Costs {
        wakeup_ns: 1_000,
        reclaim_page_ns: 20_000,
        ..zero_costs()
    };
    let w = Script::new(vec![loop_thread(400, 4, 100)]);
    let s = spec(
        "clock-lru",
        100,
        2,
        costs,
        "ssd:latency_us=10,bw_mbps=4096,qd=1,submit_us=0",
    );
    let r = run(&s, w, None).unwrap();
    assert!(r.cpu.kswapd_runs > 5, "{:?}", r.cpu);
    // (a run that follows kswapd's sleep in `reclaim_throttle`, not a wake-up, pays none)
    assert_eq!(
        r.threads[0].cpu_ns,
        1_000 * (r.cpu.kswapd_runs - r.stats.kswapd_throttled)
            + r.cpu.direct_reclaim_ns
            + 100 * 1_600
    );
}

#[test]
fn swap_on_a_disk_takes_consecutive_slots_and_seeks_back_for_a_read() {
    // One frame, FIFO, every cost zero: pages 0..3 are swapped out as 1, 2 and 3 arrive and
    // page 3 as 0 comes back, all at time 0. Swap on `hdd` is rotational: the slots come from
    // the rotational allocator in order, 1 to 4 (slot 0 is mkswap's header). The disk turns
    // at 6,000 rpm (10 ms), every seek takes 3 ms and a page 1 µs: the first write seeks
    // from 0 to 1 and waits half a turn (3 + 5 + 0.001 ms), the next three follow on the
    // platter without a seek or a wait (1 µs each, done at 8.004 ms), and the read of slot 1
    // seeks back: 8.004 + 3 + 5 + 0.001 = 16.005 ms, when the thread has its page.
    let w = || Script::new(vec![vec![acc(0), acc(1), acc(2), acc(3), acc(0)]]);
    // No drive buffer (`cache=0`): a write is done when on the platter.
    let dev = "hdd:size=64MiB,rpm=6000,seek_us=3000,min_seek_us=3000,bw_mbps=4096,submit_us=0";
    let r = run(
        &spec("fifo", 1, 1, zero_costs(), &format!("{dev},cache=0")),
        w(),
        None,
    )
    .unwrap();
    assert_eq!(r.runtime_ns, 16_005_000);
    let d = r.device_stats.as_ref().unwrap();
    assert_eq!((d.write_requests, d.read_requests), (4, 1));
    assert_eq!(d.service_total_ns, 8_004_000 + 8_001_000);
    // The writes queued behind each other: 8.001, 8.002 and 8.003 ms; the read 8.004 ms.
    assert_eq!(
        d.queue_delay_total_ns,
        8_001_000 + 8_002_000 + 8_003_000 + 8_004_000
    );
    // With the drive's buffer (64 MiB, the default): each write is done once in the buffer
    // (1 µs: the transfer is never slower than the media's), and the read goes before the
    // held writes, from the head at 0: 3 + 5 + 0.001 ms, the only time the head was busy;
    // nothing waited.
    let r = run(&spec("fifo", 1, 1, zero_costs(), dev), w(), None).unwrap();
    assert_eq!(r.runtime_ns, 8_001_000);
    let d = r.device_stats.as_ref().unwrap();
    assert_eq!((d.write_requests, d.read_requests), (4, 1));
    assert_eq!((d.service_total_ns, d.busy_ns), (8_001_000, 8_001_000));
    assert_eq!(d.queue_delay_total_ns, 0);
}

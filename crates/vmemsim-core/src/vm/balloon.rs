//! Memory ballooning (seed 004, the VSwapper paper, §2.1–2.3 and §5.2): the guest's
//! virtio-balloon driver ([`BalloonDriver`]) and a host-side balloon manager that follows
//! MOM, oVirt's Memory Overcommitment Manager ([`BalloonManager`]), the manager the paper
//! runs in its dynamic MapReduce experiment (§5.2, Fig. 14: "memory ballooning responds to
//! guest memory needs belatedly").
//!
//! Both are pure structures: no clock, no frames, no reclaim. The VM layer owns the loop: it
//! runs the driver's rounds on a guest vCPU (the kernel runs them on a kworker), does the
//! guest allocations and frees they ask for with the guest's own allocator and reclaim, has
//! the host release or re-back the reported pages, calls the manager at
//! [`BalloonManager::next_event`] with the host's and the guests' memory figures, and hands
//! the manager's targets to the drivers: `vm/machine/ballooning.rs` does (`--balloon`,
//! `--mom`).
//!
//! # The driver: Linux 6.8 `drivers/virtio/virtio_balloon.c` and `mm/balloon_compaction.c`
//!
//! - *Target* ([`BalloonDriver::set_target`]): QEMU writes `num_pages` into the device's
//!   config space (`virtio_balloon_to_target`: `(ram_size − target) >> 12`, a target above
//!   the RAM size clamped to it, a target of 0 ignored: [`balloon_pages_for`]) and notifies;
//!   the guest's `virtballoon_changed` queues `update_balloon_size_work`. Every notification
//!   queues the work, whether or not the value changed.
//! - *Rounds* ([`BalloonDriver::next_round`], [`BalloonDriver::inflate`],
//!   [`BalloonDriver::deflate`]): `update_balloon_size_func` reads `towards_target` (target −
//!   `num_pages`) and runs one `fill_balloon` (diff > 0) or `leak_balloon` (diff < 0) of at
//!   most [`VIRTIO_BALLOON_ARRAY_PFNS_MAX`] = 256 pages, writes `actual`
//!   (`update_balloon_size`), and queues itself again while the diff it read is not used up.
//!   So N pages take ⌈N / 256⌉ rounds back to back.
//! - *Inflate* (`fill_balloon`): one `balloon_page_alloc` per page, `GFP_HIGHUSER_MOVABLE |
//!   __GFP_NOMEMALLOC | __GFP_NORETRY | __GFP_NOWARN` ([`BALLOON_GFP`]: the allocator may
//!   reclaim and compact once, never retries, never OOM-kills, never dips into reserves).
//!   At the first failure ("Out of puff!") the driver sleeps [`OUT_OF_PUFF_SLEEP_NS`]
//!   (`msleep(200)`), then still reports what it got and queues the work again. The pages
//!   are pushed on a local list and popped into the balloon, so the round's PFN array is in
//!   the reverse of allocation order; `tell_host` kicks the inflate queue and waits for
//!   QEMU's ack. QEMU (`virtio_balloon_handle_output` → `balloon_inflate_page` →
//!   `ram_block_discard_range`) drops each page's backing with `MADV_DONTNEED`: the VM
//!   layer frees the host frame (or swap slot) behind each reported PFN.
//! - *Deflate* (`leak_balloon`): up to 256 pages, no more than the balloon holds,
//!   dequeued from the balloon's list head (`balloon_page_list_dequeue`). Each inflate
//!   round enqueues its PFN array's pages one by one at the head (`balloon_page_enqueue` is
//!   a `list_add`), so read from the head a round's pages are in allocation order: the
//!   balloon is a stack of rounds, the last
//!   round's pages leave first, and within a round the page allocated first leaves first.
//!   Deflate's PFN array is in dequeue order. The host is told *before* the pages go
//!   back to the guest (the order `VIRTIO_BALLOON_F_MUST_TELL_HOST` requires; 6.8 always
//!   uses it), then `release_pages_balloon` frees them. QEMU's `balloon_deflate_page` only
//!   advises `MADV_WILLNEED`: a deflated page has no host frame until the guest touches it
//!   (a host fault the engine charges, not this module).
//! - *Managed pages*: without `VIRTIO_BALLOON_F_DEFLATE_ON_OOM` every ballooned page is taken
//!   out of the guest's managed pages (`adjust_managed_page_count(page, -1)`: `MemTotal`
//!   shrinks); with it they stay counted ([`BalloonDriver::managed_pages_removed`]).
//! - *Deflate on OOM* ([`BalloonDriver::oom_notify`]): with the feature, the OOM notifier
//!   `virtio_balloon_oom_notify` leaks [`VIRTIO_BALLOON_OOM_NR_PAGES`] = 256 pages (one
//!   `leak_balloon`, so fewer if the balloon holds fewer) and writes `actual`, and
//!   `out_of_memory` kills nothing if any page came back. It leaves the target alone and
//!   queues no work: the balloon is re-inflated by the next round only if one was queued
//!   already or the host notifies again. The notifier runs only for a global OOM, never
//!   from the balloon's own `__GFP_NORETRY` allocations.
//! - *Stats* ([`BalloonDriver::stats_request`]): the host returns the stats buffer
//!   (`stats_request`), the guest's `update_balloon_stats` fills it and kicks: swap in/out
//!   (bytes, from `PSWPIN`/`PSWPOUT`), major faults, "minor" faults (the kernel sends
//!   `PGFAULT`, every fault, under the `MINFLT` tag), free, total, available
//!   (`si_mem_available`) and caches (`NR_FILE_PAGES`), in bytes. The hugetlb counters are
//!   left out. The host reads whatever the guest reported last.
//!
//! Left out: balloon compaction (`virtballoon_migratepage`: a ballooned page moved by the
//! guest's compaction costs an inflate and a deflate of one page; the engine has no
//! compaction), free page hinting and free page reporting (other features of the same
//! device, off by default in QEMU), the 64 KiB-page conversion (`VIRTIO_BALLOON_PAGES_PER_PAGE`
//! is 1 on x86), device reset and freezing.
//!
//! ## A round's time (the VM layer charges it; [`BalloonCosts`], estimates)
//!
//! - guest CPU (the kworker on a vCPU): [`BalloonCosts::alloc_page_ns`] per page inflated
//!   (`balloon_page_alloc`'s fast path, `balloon_page_enqueue`, `set_page_pfns`; the
//!   allocation's reclaim, if any, is the engine's), [`BalloonCosts::free_page_ns`] per page
//!   deflated, and [`BalloonCosts::kick_ns`] per round that reports pages (the virtqueue
//!   add, the kick's exit to QEMU, the used-buffer interrupt and the kworker's wake-up);
//! - host CPU (QEMU's thread, while the kworker waits in `tell_host`):
//!   [`BalloonCosts::host_inflate_page_ns`] per page (one `madvise(MADV_DONTNEED)` of 4 KiB:
//!   a system call, a PTE zap, a TLB flush, a free) and
//!   [`BalloonCosts::host_deflate_page_ns`] per page deflated (`MADV_WILLNEED`);
//! - a failed round sleeps [`OUT_OF_PUFF_SLEEP_NS`] (no CPU) before it reports.
//!
//! With the defaults a round of 256 pages that needs no reclaim takes 10 µs plus
//! 256 × (0.25 + 1.5) µs, ≈ 0.46 ms: ~2 GiB/s. The paper gives no per-page rate ("the process of
//! transferring memory pages from one VM to another is slow", §2.3, citing its ref. 31); the
//! slowness it measures is the manager's: targets move at most 5 % of the guest's memory
//! per 10 s policy period (below), i.e. 10 MB/s for its 2 GB guests, and only after the
//! host's averaged free memory has dropped below the threshold.
//!
//! # The manager: MOM's `doc/balloon.rules` (oVirt/mom e0f3d3b, 2013-11-26, unchanged since)
//!
//! MOM's defaults (`doc/mom-balloon.conf`): host and guest monitors sample every 5 s
//! ([`MomConfig::sample_interval_ns`]) and keep the last 10 samples
//! ([`MomConfig::history`]); the policy engine sleeps 10 s, then evaluates
//! ([`MomConfig::policy_interval_ns`]); the Balloon controller hands each target to libvirt
//! (`setMemory`), which QEMU turns into `num_pages`. Quantities are in KiB as MOM's are.
//!
//! - Host sample (`Collectors/HostMemory.py`): `mem_free` = MemFree + Buffers + Cached,
//!   `mem_available` = MemTotal ([`HostSample`]).
//! - Guest sample (`GuestBalloon`, `GuestMemory` via libvirt): `balloon_max` = the guest's
//!   RAM, `balloon_cur` = its RAM less the balloon's `actual` (not the target: a slow balloon
//!   shows), `balloon_min` = `<memtune><min_guarantee>` (0 when absent), `mem_unused` = the
//!   guest's last reported free memory ([`GuestSample`]). A guest whose stats have not
//!   arrived yet gives no sample and is left out of the policy until it has one.
//! - `StatAvg` is the mean over the kept samples; `guest.balloon_cur` alone is the latest.
//! - Policy: `host_free_percent = StatAvg(mem_free) / mem_available`. Below
//!   `pressure_threshold` (0.20) every guest is shrunk, otherwise every guest is grown:
//!   - shrink: `guest_free_percent` = host_free − 0.05 when host_free ≤ `pressure_critical`
//!     (0.05: negative, to force the guest to swap), else `min_guest_free_percent` (0.20) ×
//!     host_free / 0.20; `used = StatAvg(balloon_cur) − StatAvg(mem_unused)`;
//!     `floor = max(balloon_min, used + guest_free_percent × cur)`; `size = max(cur × (1 −
//!     max_balloon_change_percent), floor)` (0.05); set if `size ≤ cur` and the change is
//!     more than `min_balloon_change_percent` (0.0025) of `cur`;
//!   - grow (only if `cur < balloon_max`): `floor = max(balloon_min, used +
//!     min_guest_free_percent × cur)`; `size = min(max(cur × 1.05, floor), balloon_max)`;
//!     set if the change is big enough.
//!   - The controller passes `int(target)`: truncated to whole KiB.
//!
//! Choices where MOM is silent or this model differs:
//! 1. MOM's monitors and policy are separate threads with their own phases; here they share
//!    one clock: samples at 0, 5, 10 … s, evaluations at 10, 20 … s, and at a time both are
//!    due the sample is taken first. A late [`BalloonManager::poll`] schedules the next event
//!    one interval after it (MOM sleeps its interval after each pass).
//! 2. Averages use true division (Python 3, MOM's current code); the Python 2 MOM of the
//!    paper's time divided integer sums of KiB, a difference below 1 KiB.
//! 3. The guest stats' freshness is the VM layer's: it should request them (QEMU's
//!    `guest-stats-polling-interval`) at the sample interval, so that a sample is at most
//!    one interval old, as with libvirt's `<stats period='5'/>`.
//! 4. MOM's other rules files (KSM, CPU tune, QoS) and the RPC, plotting and guest-agent
//!    paths are left out.
//! 5. MOM's own CPU time (a Python daemon waking every 5 s) and the latency of libvirt's
//!    `setMemory` are not modelled: a decision reaches the driver at the evaluation's time.
//! 6. MOM's constants are a [`MomConfig`] (serde, unknown keys rejected) for sensitivity
//!    studies; the defaults are the file's.
//!
//! # The lag (the paper's "belatedly", §2.3 and §5.2)
//!
//! Host pressure is seen through a 10-sample average, so a sudden drop of free memory moves
//! the average by a tenth per sample; the first evaluation comes up to 10 s after it; each
//! evaluation moves a target by at most 5 % of the guest's current memory (shrinking), and
//! the next evaluation starts from the balloon's `actual`, not its target. The test
//! `manager_lag_on_a_scripted_run` counts the polls.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::mm::FrameId;

/// The most PFNs one `fill_balloon` or `leak_balloon` moves (`VIRTIO_BALLOON_ARRAY_PFNS_MAX`,
/// the size of the driver's PFN array).
pub const VIRTIO_BALLOON_ARRAY_PFNS_MAX: u64 = 256;

/// Pages the OOM notifier deflates per call (`VIRTIO_BALLOON_OOM_NR_PAGES`, 4 KiB pages).
pub const VIRTIO_BALLOON_OOM_NR_PAGES: u64 = 256;

/// `fill_balloon`'s sleep after a failed allocation: `msleep(200)`, "at least 1/5 of a
/// second before retry".
pub const OUT_OF_PUFF_SLEEP_NS: u64 = 200_000_000;

/// KiB per balloon page (`VIRTIO_BALLOON_PFN_SHIFT` = 12).
pub const PAGE_KIB: u64 = 4;

/// How a guest allocation may behave, as the engine's allocator should read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocFlags {
    /// Movable, highmem-capable user page (`GFP_HIGHUSER_MOVABLE`).
    pub movable: bool,
    /// Wakes kswapd when below the low watermark (`__GFP_KSWAPD_RECLAIM`, in `GFP_USER`).
    pub kswapd: bool,
    /// May run direct reclaim and compaction (`__GFP_DIRECT_RECLAIM`, in `GFP_USER`).
    pub direct_reclaim: bool,
    /// Reclaim may start I/O and enter the file system (`__GFP_IO | __GFP_FS`): swap-out
    /// and writeback are allowed.
    pub io: bool,
    /// Retries after a reclaim pass that did not help (`__GFP_NORETRY` clears it).
    pub retry: bool,
    /// May invoke the OOM killer when reclaim fails (`__GFP_NORETRY` forbids it).
    pub oom: bool,
    /// May use the memory reserves below the min watermark (`__GFP_NOMEMALLOC` forbids it).
    pub reserves: bool,
}

/// `balloon_page_alloc`'s flags (`mm/balloon_compaction.c`, with
/// `CONFIG_BALLOON_COMPACTION`): `GFP_HIGHUSER_MOVABLE | __GFP_NOMEMALLOC | __GFP_NORETRY |
/// __GFP_NOWARN` (`GFP_HIGHUSER_MOVABLE` = `GFP_USER | __GFP_HIGHMEM | __GFP_MOVABLE`,
/// `GFP_USER` = `__GFP_RECLAIM | __GFP_IO | __GFP_FS | __GFP_HARDWALL`): wakes kswapd, one
/// direct reclaim (and compaction) attempt, then failure; never an OOM kill, never the
/// reserves.
pub const BALLOON_GFP: AllocFlags = AllocFlags {
    movable: true,
    kswapd: true,
    direct_reclaim: true,
    io: true,
    retry: false,
    oom: false,
    reserves: false,
};

/// What a round costs (see the module docs; all estimates, in ns).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BalloonCosts {
    /// Guest CPU per page inflated, besides any reclaim: the page allocator's fast path,
    /// `balloon_page_enqueue`, `set_page_pfns`. Estimate: 250 ns.
    pub alloc_page_ns: u64,
    /// Guest CPU per page deflated: `balloon_page_dequeue`, `put_page` to the free lists.
    /// Estimate: 150 ns.
    pub free_page_ns: u64,
    /// Guest CPU per `tell_host` or stats report: virtqueue add, the kick (a VM exit to
    /// QEMU's ioeventfd), the used-buffer interrupt and the kworker's wake-up. Estimate:
    /// 10 µs, as the crate's `virtio_blk_ns`.
    pub kick_ns: u64,
    /// Host CPU (QEMU) per page inflated: `balloon_inflate_page` → `ram_block_discard_range`,
    /// one `madvise(MADV_DONTNEED)` of 4 KiB (syscall, PTE zap, TLB flush, free). Estimate:
    /// 1.5 µs.
    pub host_inflate_page_ns: u64,
    /// Host CPU per page deflated: `balloon_deflate_page`, one `madvise(MADV_WILLNEED)`.
    /// Estimate: 500 ns.
    pub host_deflate_page_ns: u64,
    /// Guest CPU of `update_balloon_stats` (summing the per-CPU event counters,
    /// `si_meminfo`, `si_mem_available`), besides its kick. Estimate: 5 µs.
    pub stats_ns: u64,
}

impl Default for BalloonCosts {
    fn default() -> Self {
        BalloonCosts {
            alloc_page_ns: 250,
            free_page_ns: 150,
            kick_ns: 10_000,
            host_inflate_page_ns: 1_500,
            host_deflate_page_ns: 500,
            stats_ns: 5_000,
        }
    }
}

/// `virtio_balloon_to_target` (QEMU `hw/virtio/virtio-balloon.c`): the balloon size in 4 KiB
/// pages for a guest of `ram_kib` asked (by libvirt's `setMemory`) to run in `target_kib`.
/// A target above the RAM is clamped to it (balloon 0); a target of 0 is ignored by QEMU
/// (`None`: no notification). Rounds down.
pub fn balloon_pages_for(ram_kib: u64, target_kib: u64) -> Option<u64> {
    if target_kib == 0 {
        return None;
    }
    Some((ram_kib - target_kib.min(ram_kib)) / PAGE_KIB)
}

/// What the next round of the balloon's work item will do ([`BalloonDriver::next_round`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextRound {
    /// No work queued, or the balloon is at its target (the work item ends).
    Idle,
    /// `fill_balloon`: allocate up to this many guest pages with [`BALLOON_GFP`], one at a
    /// time, stopping at the first failure; then call [`BalloonDriver::inflate`].
    Inflate { pages: u64 },
    /// `leak_balloon`: [`BalloonDriver::deflate`] returns this many pages.
    Deflate { pages: u64 },
}

/// Which driver path made a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundKind {
    Inflate,
    Deflate,
    /// `virtio_balloon_oom_notify`'s `leak_balloon`.
    OomDeflate,
}

/// One round, as it happened: the pages reported to the host and what it cost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round {
    pub kind: RoundKind,
    /// The PFN array told to the host, in the driver's order. Inflate: the host releases
    /// each page's backing (`MADV_DONTNEED`). Deflate: the VM layer frees each page to the
    /// guest's allocator, after the host was told.
    pub pfns: Vec<FrameId>,
    /// An allocation failed ("Out of puff!"): the round slept before reporting.
    pub out_of_puff: bool,
    /// The work item queued itself again (the diff it read is not used up): the next
    /// round runs as soon as the kworker runs again.
    pub requeued: bool,
    /// Guest CPU of the kworker (allocations or frees, the kick), besides reclaim.
    pub guest_ns: u64,
    /// Host CPU of QEMU's handling of the PFN array; the kworker waits meanwhile.
    pub host_ns: u64,
    /// `msleep(200)` after a failed allocation (no CPU).
    pub sleep_ns: u64,
}

impl Round {
    /// The round's duration on the kworker besides the guest allocator's reclaim:
    /// `guest_ns + host_ns + sleep_ns`.
    pub fn duration_ns(&self) -> u64 {
        self.guest_ns + self.host_ns + self.sleep_ns
    }
}

/// The guest counters `update_balloon_stats` reads, as the VM layer keeps them (pages and
/// event counts since boot).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuestCounters {
    /// The guest's managed RAM pages *without* the balloon's `adjust_managed_page_count`
    /// (the driver applies it).
    pub totalram_pages: u64,
    /// Free pages (`si_meminfo`'s `freeram`); ballooned pages are allocated, not free.
    pub free_pages: u64,
    /// `si_mem_available`.
    pub available_pages: u64,
    /// `NR_FILE_PAGES`.
    pub file_pages: u64,
    pub pswpin: u64,
    pub pswpout: u64,
    pub pgmajfault: u64,
    /// `PGFAULT`: every fault, major ones included.
    pub pgfault: u64,
}

/// One stats buffer as the guest sends it (`struct virtio_balloon_stat` tags), in bytes
/// where the kernel sends bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BalloonStats {
    /// `VIRTIO_BALLOON_S_SWAP_IN` / `_SWAP_OUT`: `PSWPIN` / `PSWPOUT` × 4 KiB.
    pub swap_in_bytes: u64,
    pub swap_out_bytes: u64,
    /// `VIRTIO_BALLOON_S_MAJFLT`: `PGMAJFAULT`.
    pub major_faults: u64,
    /// `VIRTIO_BALLOON_S_MINFLT`: `PGFAULT` (all faults).
    pub minor_faults: u64,
    /// `VIRTIO_BALLOON_S_MEMFREE`, `_MEMTOT`, `_AVAIL`, `_CACHES`.
    pub free_bytes: u64,
    pub total_bytes: u64,
    pub available_bytes: u64,
    pub caches_bytes: u64,
}

/// The driver's event counts since boot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverCounters {
    /// Pages inflated and deflated (`BALLOON_INFLATE` / `BALLOON_DEFLATE` vm events), OOM
    /// deflations included in `deflated` and also counted in `oom_deflated`.
    pub inflated: u64,
    pub deflated: u64,
    pub oom_deflated: u64,
    /// Rounds that ran (`Idle` ones not counted) and failed allocations.
    pub rounds: u64,
    pub out_of_puff: u64,
    /// `tell_host` calls and stats reports.
    pub kicks: u64,
    pub stats_reports: u64,
    /// Host notifications (`virtballoon_changed`).
    pub config_changes: u64,
}

/// Options of the virtio-balloon device negotiated with the guest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BalloonDriverConfig {
    /// `VIRTIO_BALLOON_F_DEFLATE_ON_OOM` (QEMU `-device virtio-balloon,deflate-on-oom=on`;
    /// off by default).
    pub deflate_on_oom: bool,
    pub costs: BalloonCosts,
}

/// The guest side of virtio-balloon (Linux 6.8 `virtio_balloon.c`; see the module docs).
#[derive(Clone, Debug)]
pub struct BalloonDriver {
    cfg: BalloonDriverConfig,
    /// Guest RAM in 4 KiB pages (QEMU's `vm_ram_size >> 12`).
    guest_pages: u64,
    /// The config space's `num_pages`, as the host last wrote it.
    target: u64,
    /// `vb_dev_info->pages`: the last element is the list head (the next to leave). Its
    /// length is `num_pages` (`actual`).
    pages: Vec<FrameId>,
    /// `update_balloon_size_work` is queued.
    queued: bool,
    /// The stats buffer the guest sent last.
    last_stats: Option<BalloonStats>,
    counters: DriverCounters,
}

impl BalloonDriver {
    /// A driver for a guest of `guest_pages` 4 KiB pages, balloon empty, target 0.
    pub fn new(guest_pages: u64, cfg: BalloonDriverConfig) -> Self {
        BalloonDriver {
            cfg,
            guest_pages,
            target: 0,
            pages: Vec::new(),
            queued: false,
            last_stats: None,
            counters: DriverCounters::default(),
        }
    }

    pub fn config(&self) -> &BalloonDriverConfig {
        &self.cfg
    }

    pub fn guest_pages(&self) -> u64 {
        self.guest_pages
    }

    /// The host's target in pages (config `num_pages`).
    pub fn target(&self) -> u64 {
        self.target
    }

    /// Pages in the balloon now (`num_pages`, the config's `actual` after each round).
    pub fn actual(&self) -> u64 {
        self.pages.len() as u64
    }

    /// The ballooned PFNs; the last element is the list head, the next page to leave.
    pub fn pages(&self) -> &[FrameId] {
        &self.pages
    }

    /// Pages the balloon has taken out of the guest's managed pages: all of them without
    /// deflate-on-OOM, none with it (`adjust_managed_page_count`).
    pub fn managed_pages_removed(&self) -> u64 {
        if self.cfg.deflate_on_oom {
            0
        } else {
            self.actual()
        }
    }

    pub fn counters(&self) -> &DriverCounters {
        &self.counters
    }

    /// The host writes `num_pages` (use [`balloon_pages_for`] to get it from a memory
    /// target) and notifies: `virtballoon_changed` queues the work item. A target above the
    /// guest's RAM is clamped to it (QEMU clamps the memory target the same way).
    pub fn set_target(&mut self, num_pages: u64) {
        self.target = num_pages.min(self.guest_pages);
        self.queued = true;
        self.counters.config_changes += 1;
    }

    /// `towards_target`: target − `num_pages` (positive: inflate).
    pub fn towards_target(&self) -> i64 {
        self.target as i64 - self.actual() as i64
    }

    /// The work item is queued (a round is due).
    pub fn work_queued(&self) -> bool {
        self.queued
    }

    /// What the next round does (read-only). `Idle` when no work is queued or the balloon
    /// is at its target; the VM layer then calls [`BalloonDriver::finish_idle`].
    pub fn next_round(&self) -> NextRound {
        if !self.queued {
            return NextRound::Idle;
        }
        let diff = self.towards_target();
        if diff > 0 {
            NextRound::Inflate {
                pages: (diff as u64).min(VIRTIO_BALLOON_ARRAY_PFNS_MAX),
            }
        } else if diff < 0 {
            NextRound::Deflate {
                pages: diff.unsigned_abs().min(VIRTIO_BALLOON_ARRAY_PFNS_MAX),
            }
        } else {
            NextRound::Idle
        }
    }

    /// The work item ran and found nothing to do (`diff == 0`): it ends
    /// (`end_update_balloon_size`).
    pub fn finish_idle(&mut self) {
        debug_assert_eq!(self.next_round(), NextRound::Idle);
        self.queued = false;
    }

    /// Finish a `fill_balloon` round: the VM layer allocated `allocated` (in allocation
    /// order) with [`BALLOON_GFP`] and, if `failed`, the next allocation failed and it
    /// stopped. Panics if the round was not an inflate of at least `allocated.len()` pages
    /// (with `failed`, fewer) or a page is in the balloon already (caller bugs).
    pub fn inflate(&mut self, allocated: &[FrameId], failed: bool) -> Round {
        let NextRound::Inflate { pages } = self.next_round() else {
            panic!(
                "balloon: inflate() when the next round is {:?}",
                self.next_round()
            );
        };
        let n = allocated.len() as u64;
        assert!(
            n <= pages && (failed || n == pages),
            "balloon: {n} pages allocated (failed: {failed}) for a round of {pages}"
        );
        let diff = self.towards_target();
        // balloon_page_push onto a local list, balloon_page_pop into the balloon: the PFN
        // array and the balloon's list both see the pages last-allocated first.
        let mut pfns = Vec::with_capacity(allocated.len());
        for &pfn in allocated.iter().rev() {
            self.pages.push(pfn);
            pfns.push(pfn);
        }
        let c = &self.cfg.costs;
        let told = n > 0;
        let round = Round {
            kind: RoundKind::Inflate,
            out_of_puff: failed,
            requeued: diff - n as i64 != 0,
            guest_ns: n * c.alloc_page_ns + if told { c.kick_ns } else { 0 },
            host_ns: n * c.host_inflate_page_ns,
            sleep_ns: if failed { OUT_OF_PUFF_SLEEP_NS } else { 0 },
            pfns,
        };
        self.counters.inflated += n;
        self.counters.rounds += 1;
        self.counters.out_of_puff += failed as u64;
        self.counters.kicks += told as u64;
        self.queued = round.requeued;
        round
    }

    /// [`BalloonDriver::next_round`] and its completion in one call: `alloc` is the guest's
    /// allocation with [`BALLOON_GFP`] (`None`: failed). `None` if the round was idle (the
    /// work item ended).
    pub fn run_round(&mut self, mut alloc: impl FnMut() -> Option<FrameId>) -> Option<Round> {
        match self.next_round() {
            NextRound::Idle => {
                self.finish_idle();
                None
            }
            NextRound::Inflate { pages } => {
                let mut got = Vec::with_capacity(pages as usize);
                let mut failed = false;
                for _ in 0..pages {
                    match alloc() {
                        Some(pfn) => got.push(pfn),
                        None => {
                            failed = true;
                            break;
                        }
                    }
                }
                Some(self.inflate(&got, failed))
            }
            NextRound::Deflate { .. } => Some(self.deflate()),
        }
    }

    /// A `leak_balloon` round: the pages leave the balloon, the host is told, and the VM
    /// layer frees [`Round::pfns`] to the guest's allocator. Panics if the next round is
    /// not a deflate (a caller bug).
    pub fn deflate(&mut self) -> Round {
        let NextRound::Deflate { pages } = self.next_round() else {
            panic!(
                "balloon: deflate() when the next round is {:?}",
                self.next_round()
            );
        };
        let diff = self.towards_target();
        let mut round = self.leak(pages, RoundKind::Deflate);
        round.requeued = diff + round.pfns.len() as i64 != 0;
        self.queued = round.requeued;
        round
    }

    /// `virtio_balloon_oom_notify`, called by the guest's `out_of_memory` before it picks a
    /// victim: with deflate-on-OOM, one `leak_balloon` of [`VIRTIO_BALLOON_OOM_NR_PAGES`];
    /// the VM layer frees [`Round::pfns`] and, if there are any, kills nothing. Without the
    /// feature the notifier is not registered: an empty round that costs nothing. The target
    /// and the work item are left as they are.
    pub fn oom_notify(&mut self) -> Round {
        if !self.cfg.deflate_on_oom {
            return Round {
                kind: RoundKind::OomDeflate,
                pfns: Vec::new(),
                out_of_puff: false,
                requeued: self.queued,
                guest_ns: 0,
                host_ns: 0,
                sleep_ns: 0,
            };
        }
        let mut round = self.leak(VIRTIO_BALLOON_OOM_NR_PAGES, RoundKind::OomDeflate);
        self.counters.oom_deflated += round.pfns.len() as u64;
        round.requeued = self.queued;
        round
    }

    /// `leak_balloon(num)`: at most 256 pages and no more than the balloon holds, from the
    /// list head; the host is told if any.
    fn leak(&mut self, num: u64, kind: RoundKind) -> Round {
        let n = num.min(VIRTIO_BALLOON_ARRAY_PFNS_MAX).min(self.actual()) as usize;
        let pfns: Vec<FrameId> = self.pages.drain(self.pages.len() - n..).rev().collect();
        let c = &self.cfg.costs;
        let n = n as u64;
        let told = n > 0;
        self.counters.deflated += n;
        self.counters.rounds += 1;
        self.counters.kicks += told as u64;
        Round {
            kind,
            pfns,
            out_of_puff: false,
            requeued: false,
            guest_ns: n * c.free_page_ns + if told { c.kick_ns } else { 0 },
            host_ns: n * c.host_deflate_page_ns,
            sleep_ns: 0,
        }
    }

    /// The host asks for stats (`stats_request` → `stats_handle_request` →
    /// `update_balloon_stats`): the guest fills the buffer from its counters and kicks.
    /// Returns the buffer (kept as [`BalloonDriver::last_stats`]) and the guest CPU it cost
    /// (`stats_ns + kick_ns`).
    pub fn stats_request(&mut self, guest: &GuestCounters) -> (BalloonStats, u64) {
        let b = PAGE_KIB * 1024;
        let total = guest
            .totalram_pages
            .saturating_sub(self.managed_pages_removed());
        let s = BalloonStats {
            swap_in_bytes: guest.pswpin * b,
            swap_out_bytes: guest.pswpout * b,
            major_faults: guest.pgmajfault,
            minor_faults: guest.pgfault,
            free_bytes: guest.free_pages * b,
            total_bytes: total * b,
            available_bytes: guest.available_pages * b,
            caches_bytes: guest.file_pages * b,
        };
        self.last_stats = Some(s);
        self.counters.stats_reports += 1;
        self.counters.kicks += 1;
        (s, self.cfg.costs.stats_ns + self.cfg.costs.kick_ns)
    }

    /// The stats the guest reported last (what QEMU, libvirt and MOM read), if any.
    pub fn last_stats(&self) -> Option<&BalloonStats> {
        self.last_stats.as_ref()
    }

    /// The guest as MOM's monitors see it through libvirt: RAM, RAM less the balloon's
    /// `actual`, `balloon_min_kib` (`min_guarantee`) and the last reported free memory.
    pub fn guest_sample(&self, balloon_min_kib: u64) -> GuestSample {
        GuestSample {
            balloon_max_kib: self.guest_pages * PAGE_KIB,
            balloon_cur_kib: (self.guest_pages - self.actual()) * PAGE_KIB,
            balloon_min_kib,
            mem_unused_kib: self.last_stats.map(|s| s.free_bytes / 1024),
        }
    }

    /// Recount the invariants: the balloon never holds more than the guest's RAM, its PFNs
    /// are distinct guest pages, the target is within the RAM, the counters add up.
    pub fn validate(&self) -> Result<(), String> {
        if self.actual() > self.guest_pages {
            return Err(format!(
                "balloon holds {} pages of a {}-page guest",
                self.actual(),
                self.guest_pages
            ));
        }
        if self.target > self.guest_pages {
            return Err(format!(
                "balloon target {} above the guest's {} pages",
                self.target, self.guest_pages
            ));
        }
        let mut seen = self.pages.clone();
        seen.sort_unstable();
        if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("balloon holds PFN {} twice", w[0]));
        }
        if let Some(&p) = seen.last() {
            if p as u64 >= self.guest_pages {
                return Err(format!(
                    "balloon holds PFN {p}, outside a {}-page guest",
                    self.guest_pages
                ));
            }
        }
        let c = &self.counters;
        if c.inflated - c.deflated != self.actual() {
            return Err(format!(
                "inflated {} − deflated {} ≠ {} pages held",
                c.inflated,
                c.deflated,
                self.actual()
            ));
        }
        Ok(())
    }
}

/// MOM's tunables (`doc/mom-balloon.conf` and the constants of `doc/balloon.rules`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct MomConfig {
    /// `host-monitor-interval` and `guest-monitor-interval`: 5 s.
    pub sample_interval_ns: u64,
    /// `policy-engine-interval`: 10 s (the engine sleeps first: first evaluation at 10 s).
    pub policy_interval_ns: u64,
    /// `sample-history-length`: 10 samples averaged by `StatAvg`.
    pub history: usize,
    /// Host free fraction below which guests are shrunk: 0.20.
    pub pressure_threshold: f64,
    /// Host free fraction at or below which pressure is critical: 0.05.
    pub pressure_critical: f64,
    /// Free fraction an unconstrained guest keeps: 0.20.
    pub min_guest_free_percent: f64,
    /// Largest change per evaluation, a fraction of the guest's current memory: 0.05.
    pub max_balloon_change_percent: f64,
    /// Smallest change worth a balloon operation, a fraction of current memory: 0.0025.
    pub min_balloon_change_percent: f64,
}

impl Default for MomConfig {
    fn default() -> Self {
        MomConfig {
            sample_interval_ns: 5_000_000_000,
            policy_interval_ns: 10_000_000_000,
            history: 10,
            pressure_threshold: 0.20,
            pressure_critical: 0.05,
            min_guest_free_percent: 0.20,
            max_balloon_change_percent: 0.05,
            min_balloon_change_percent: 0.0025,
        }
    }
}

impl MomConfig {
    /// Errors name the key: intervals of 0, an empty history, fractions outside [0, 1],
    /// a critical level above the threshold.
    pub fn check(&self) -> Result<(), String> {
        if self.sample_interval_ns == 0 || self.policy_interval_ns == 0 {
            return Err("mom: sample_interval_ns and policy_interval_ns must be above 0".into());
        }
        if self.history == 0 {
            return Err("mom.history: at least one sample".into());
        }
        for (k, v) in [
            ("pressure_threshold", self.pressure_threshold),
            ("pressure_critical", self.pressure_critical),
            ("min_guest_free_percent", self.min_guest_free_percent),
            (
                "max_balloon_change_percent",
                self.max_balloon_change_percent,
            ),
            (
                "min_balloon_change_percent",
                self.min_balloon_change_percent,
            ),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("mom.{k}: {v} is not a fraction in [0, 1]"));
            }
        }
        if self.pressure_critical > self.pressure_threshold || self.pressure_threshold == 0.0 {
            return Err(format!(
                "mom.pressure_critical ({}) must not exceed pressure_threshold ({}), which must be above 0",
                self.pressure_critical, self.pressure_threshold
            ));
        }
        Ok(())
    }
}

/// The host's `/proc/meminfo` fields MOM's `HostMemory` collector reads, in KiB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostSample {
    pub mem_total_kib: u64,
    pub mem_free_kib: u64,
    pub buffers_kib: u64,
    pub cached_kib: u64,
}

/// One guest as MOM samples it through libvirt, in KiB ([`BalloonDriver::guest_sample`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuestSample {
    /// The guest's RAM (`balloon_max`).
    pub balloon_max_kib: u64,
    /// RAM less the balloon's `actual` (`balloon_cur`).
    pub balloon_cur_kib: u64,
    /// `min_guarantee` (`balloon_min`), 0 when not set.
    pub balloon_min_kib: u64,
    /// The guest's last reported free memory (`mem_unused`); `None` before its first stats.
    pub mem_unused_kib: Option<u64>,
}

/// Shrink or grow, as MOM's main script chose for this evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Shrink,
    Grow,
}

/// A target the manager sets for one guest (the Balloon controller's `setVmBalloonTarget`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub vm: usize,
    pub direction: Direction,
    /// The guest's memory target, `int(balloon_size)` in KiB.
    pub target_kib: u64,
    /// The balloon size QEMU derives from it ([`balloon_pages_for`]), for
    /// [`BalloonDriver::set_target`].
    pub balloon_pages: u64,
}

/// The manager's event counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManagerCounters {
    pub samples: u64,
    pub evaluations: u64,
    /// Evaluations that found the host under pressure (shrink).
    pub pressure: u64,
    pub decisions: u64,
}

#[derive(Clone, Copy, Debug)]
struct GuestRow {
    cur: f64,
    unused: f64,
}

#[derive(Clone, Debug, Default)]
struct GuestHistory {
    rows: VecDeque<GuestRow>,
    latest: Option<GuestSample>,
}

/// A MOM-like balloon manager: samples, averages and the `balloon.rules` policy (see the
/// module docs). Guests are `0..n`.
#[derive(Clone, Debug)]
pub struct BalloonManager {
    cfg: MomConfig,
    next_sample: u64,
    next_policy: u64,
    /// Host rows: `mem_free` (MemFree + Buffers + Cached), KiB.
    host_free: VecDeque<f64>,
    host_total: u64,
    guests: Vec<GuestHistory>,
    counters: ManagerCounters,
}

impl BalloonManager {
    /// A manager of `n_guests` guests starting at time 0 (first sample at 0, first
    /// evaluation at `policy_interval_ns`). Errors: a bad config ([`MomConfig::check`]).
    pub fn new(n_guests: usize, cfg: MomConfig) -> Result<Self, String> {
        cfg.check()?;
        Ok(BalloonManager {
            next_sample: 0,
            next_policy: cfg.policy_interval_ns,
            cfg,
            host_free: VecDeque::new(),
            host_total: 0,
            guests: vec![GuestHistory::default(); n_guests],
            counters: ManagerCounters::default(),
        })
    }

    pub fn config(&self) -> &MomConfig {
        &self.cfg
    }

    pub fn n_guests(&self) -> usize {
        self.guests.len()
    }

    pub fn counters(&self) -> &ManagerCounters {
        &self.counters
    }

    /// When the manager next samples, in ns.
    pub fn next_sample(&self) -> u64 {
        self.next_sample
    }

    /// When the manager next wants to run (a sample, an evaluation or both), in ns.
    pub fn next_event(&self) -> u64 {
        self.next_sample.min(self.next_policy)
    }

    /// The manager's thread at `now`: take a sample if one is due (host and every guest;
    /// `guests[v]` is guest `v`), then evaluate the policy if due. Returns the targets set
    /// (none between evaluations). Panics if `guests.len()` is not the number of guests.
    pub fn poll(&mut self, now: u64, host: &HostSample, guests: &[GuestSample]) -> Vec<Decision> {
        assert_eq!(guests.len(), self.guests.len(), "mom: one sample per guest");
        if now >= self.next_sample {
            self.sample(host, guests);
            self.next_sample = now + self.cfg.sample_interval_ns;
        }
        if now >= self.next_policy {
            self.next_policy = now + self.cfg.policy_interval_ns;
            let d = self.evaluate();
            self.counters.evaluations += 1;
            self.counters.pressure += self.under_pressure().unwrap_or(false) as u64;
            self.counters.decisions += d.len() as u64;
            return d;
        }
        Vec::new()
    }

    fn sample(&mut self, host: &HostSample, guests: &[GuestSample]) {
        let hist = self.cfg.history;
        self.counters.samples += 1;
        self.host_total = host.mem_total_kib;
        self.host_free
            .push_back((host.mem_free_kib + host.buffers_kib + host.cached_kib) as f64);
        while self.host_free.len() > hist {
            self.host_free.pop_front();
        }
        for (g, s) in self.guests.iter_mut().zip(guests) {
            // A guest without stats yet gives no row (MOM's monitor is not ready).
            let Some(unused) = s.mem_unused_kib else {
                continue;
            };
            g.latest = Some(*s);
            g.rows.push_back(GuestRow {
                cur: s.balloon_cur_kib as f64,
                unused: unused as f64,
            });
            while g.rows.len() > hist {
                g.rows.pop_front();
            }
        }
    }

    /// `host_free_percent`: `StatAvg(mem_free) / mem_available`; `None` before the first
    /// sample.
    pub fn host_free_percent(&self) -> Option<f64> {
        if self.host_free.is_empty() || self.host_total == 0 {
            return None;
        }
        let avg = self.host_free.iter().sum::<f64>() / self.host_free.len() as f64;
        Some(avg / self.host_total as f64)
    }

    /// The host is below `pressure_threshold` (the policy shrinks guests).
    pub fn under_pressure(&self) -> Option<bool> {
        self.host_free_percent()
            .map(|h| h < self.cfg.pressure_threshold)
    }

    /// What an evaluation now would decide (read-only): MOM's main script over every guest
    /// with at least one sample.
    pub fn evaluate(&self) -> Vec<Decision> {
        let Some(host_free) = self.host_free_percent() else {
            return Vec::new();
        };
        let c = &self.cfg;
        let shrink = host_free < c.pressure_threshold;
        let mut out = Vec::new();
        for (vm, g) in self.guests.iter().enumerate() {
            let Some(s) = g.latest else { continue };
            let n = g.rows.len() as f64;
            let used = g.rows.iter().map(|r| r.cur).sum::<f64>() / n
                - g.rows.iter().map(|r| r.unused).sum::<f64>() / n;
            let cur = s.balloon_cur_kib as f64;
            let max = s.balloon_max_kib as f64;
            let min = s.balloon_min_kib as f64;
            let big_enough = |size: f64| (size - cur).abs() > c.min_balloon_change_percent * cur;
            let size = if shrink {
                let guest_free = if host_free <= c.pressure_critical {
                    -0.05 + host_free
                } else {
                    c.min_guest_free_percent * (host_free / c.pressure_threshold)
                };
                let floor = min.max(used + guest_free * cur);
                let size = (cur * (1.0 - c.max_balloon_change_percent)).max(floor);
                (size <= cur && big_enough(size)).then_some(size)
            } else if cur < max {
                let floor = min.max(used + c.min_guest_free_percent * cur);
                let size = (cur * (1.0 + c.max_balloon_change_percent))
                    .max(floor)
                    .min(max);
                big_enough(size).then_some(size)
            } else {
                None
            };
            let Some(size) = size else { continue };
            // The controller's int(): truncation; a negative size (not reachable with
            // balloon_min ≥ 0 and the 5 % step) would be clamped to 0 and ignored by QEMU.
            let target_kib = size.max(0.0) as u64;
            let Some(balloon_pages) = balloon_pages_for(s.balloon_max_kib, target_kib) else {
                continue;
            };
            out.push(Decision {
                vm,
                direction: if shrink {
                    Direction::Shrink
                } else {
                    Direction::Grow
                },
                target_kib,
                balloon_pages,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// A guest allocator for the tests: hands out PFNs from `next` up, fails when `fail_at`
    /// is reached (the count of allocations before the failure).
    struct Alloc {
        next: FrameId,
        left: Option<u64>,
    }

    impl Alloc {
        fn new(first: FrameId) -> Self {
            Alloc {
                next: first,
                left: None,
            }
        }
        fn get(&mut self) -> Option<FrameId> {
            if let Some(l) = self.left.as_mut() {
                if *l == 0 {
                    return None;
                }
                *l -= 1;
            }
            self.next += 1;
            Some(self.next - 1)
        }
    }

    fn driver(pages: u64, deflate_on_oom: bool) -> BalloonDriver {
        BalloonDriver::new(
            pages,
            BalloonDriverConfig {
                deflate_on_oom,
                costs: BalloonCosts::default(),
            },
        )
    }

    /// Run rounds until the work item ends; returns the rounds.
    fn run_all(d: &mut BalloonDriver, a: &mut Alloc) -> Vec<Round> {
        let mut rounds = Vec::new();
        while let Some(r) = d.run_round(|| a.get()) {
            rounds.push(r);
            d.validate().unwrap();
            assert!(rounds.len() < 10_000);
        }
        rounds
    }

    /// `fill_balloon` moves at most 256 PFNs per round, and `update_balloon_size_func`
    /// requeues while the diff is not used up: 1000 pages = ⌈1000 / 256⌉ = 4 rounds of
    /// 256, 256, 256 and 232, 1000 PFNs reported in all. Each round's array is in reverse
    /// allocation order (push onto a local list, pop into the balloon). Costs by hand with
    /// the defaults: a full round is 256 × 250 + 10,000 = 74,000 ns of guest CPU and
    /// 256 × 1,500 = 384,000 ns of host CPU.
    #[test]
    fn inflate_takes_ceil_n_over_256_rounds() {
        let mut d = driver(4096, false);
        let mut a = Alloc::new(100);
        d.set_target(1000);
        assert_eq!(d.next_round(), NextRound::Inflate { pages: 256 });
        let rounds = run_all(&mut d, &mut a);
        let sizes: Vec<usize> = rounds.iter().map(|r| r.pfns.len()).collect();
        assert_eq!(sizes, [256, 256, 256, 232]);
        assert_eq!(
            rounds.iter().map(|r| r.requeued).collect::<Vec<_>>(),
            [true, true, true, false]
        );
        let reported: HashSet<FrameId> = rounds.iter().flat_map(|r| r.pfns.clone()).collect();
        assert_eq!(reported.len(), 1000);
        assert_eq!(reported, (100..1100).collect());
        assert_eq!(rounds[0].pfns[0], 355);
        assert_eq!(rounds[0].pfns[255], 100);
        assert_eq!((rounds[0].guest_ns, rounds[0].host_ns), (74_000, 384_000));
        assert_eq!(rounds[0].duration_ns(), 458_000);
        assert_eq!(rounds[3].guest_ns, 232 * 250 + 10_000);
        assert_eq!(
            (d.actual(), d.towards_target(), d.work_queued()),
            (1000, 0, false)
        );
        assert_eq!(d.managed_pages_removed(), 1000);
        let c = d.counters();
        assert_eq!(
            (c.inflated, c.rounds, c.kicks, c.out_of_puff),
            (1000, 4, 4, 0)
        );
        // A target above the RAM is clamped to it.
        d.set_target(1 << 40);
        assert_eq!(d.target(), 4096);
    }

    /// `fill_balloon` stops at the first failed `balloon_page_alloc`, sleeps 200 ms
    /// ("Out of puff!"), reports what it got and requeues the work. Target 600, the guest
    /// can give 300 pages: round 1 gets 256 (no failure), round 2 gets 44 and fails on the
    /// 45th: 44 reported, 200 ms slept, requeued. Round 3 fails at once: nothing reported,
    /// no kick (`if (vb->num_pfns != 0) tell_host`), 200 ms, requeued. When memory is back
    /// the retry fills the remaining 300 = 256 + 44.
    #[test]
    fn failed_allocation_stops_the_round_and_delays_the_retry() {
        let mut d = driver(4096, false);
        let mut a = Alloc::new(0);
        a.left = Some(300);
        d.set_target(600);
        let r1 = d.run_round(|| a.get()).unwrap();
        assert_eq!(
            (r1.pfns.len(), r1.out_of_puff, r1.sleep_ns),
            (256, false, 0)
        );
        let r2 = d.run_round(|| a.get()).unwrap();
        assert_eq!(r2.pfns.len(), 44);
        assert!(r2.out_of_puff && r2.requeued);
        assert_eq!(r2.sleep_ns, OUT_OF_PUFF_SLEEP_NS);
        assert_eq!(
            r2.duration_ns(),
            44 * 250 + 10_000 + 44 * 1_500 + 200_000_000
        );
        let r3 = d.run_round(|| a.get()).unwrap();
        assert!(r3.pfns.is_empty() && r3.out_of_puff && r3.requeued);
        assert_eq!((r3.guest_ns, r3.host_ns, r3.sleep_ns), (0, 0, 200_000_000));
        assert_eq!((d.actual(), d.towards_target()), (300, 300));
        assert_eq!(d.counters().kicks, 2);
        a.left = None;
        let rest = run_all(&mut d, &mut a);
        assert_eq!(
            rest.iter().map(|r| r.pfns.len()).collect::<Vec<_>>(),
            [256, 44]
        );
        assert_eq!((d.actual(), d.counters().out_of_puff), (600, 2));
        d.validate().unwrap();
    }

    /// `leak_balloon`: 256 per round, from the list head. 600 pages in, allocated as PFNs
    /// 0..600 in three rounds (0..256, 256..512, 512..600). `fill_balloon` pushes each
    /// allocation on a local list (head = allocated last) and pops them into the balloon
    /// with `list_add`, so each round's first allocation ends at the head: the list reads
    /// 512..600, 256..512, 0..256 from the head. Target 100: 500 = 256 + 244 pages out:
    /// round 1 takes 512..600 (88) and 256..424 (168), round 2 takes 424..512 (88) and
    /// 0..156 (156); 156..256 stay, the head at 156. Costs: 256 × 150 + 10,000 guest,
    /// 256 × 500 host.
    #[test]
    fn deflate_returns_pages_from_the_list_head() {
        let mut d = driver(4096, false);
        let mut a = Alloc::new(0);
        d.set_target(600);
        run_all(&mut d, &mut a);
        d.set_target(100);
        assert_eq!(d.next_round(), NextRound::Deflate { pages: 256 });
        let r1 = d.deflate();
        assert_eq!(r1.kind, RoundKind::Deflate);
        let want: Vec<FrameId> = (512..600).chain(256..424).collect();
        assert_eq!(r1.pfns, want);
        assert!(r1.requeued);
        assert_eq!((r1.guest_ns, r1.host_ns), (256 * 150 + 10_000, 256 * 500));
        let r2 = d.deflate();
        let want: Vec<FrameId> = (424..512).chain(0..156).collect();
        assert_eq!(r2.pfns, want);
        assert!(!r2.requeued && !d.work_queued());
        assert_eq!(d.pages(), (156..256).rev().collect::<Vec<FrameId>>());
        assert_eq!(d.counters().deflated, 500);
        d.validate().unwrap();
    }

    /// `virtio_balloon_oom_notify`: `leak_balloon(vb, VIRTIO_BALLOON_OOM_NR_PAGES)` = 256
    /// pages per call, fewer when the balloon holds fewer (300 → 256, then 44, then none;
    /// the list reads 256..300, 0..256 from the head, so the first call starts at 256);
    /// the target stays and no work is queued, so the balloon stays small until the host
    /// notifies again. Without the feature the notifier is absent: nothing comes back.
    /// With it the ballooned pages stay in the managed count (`MemTotal` unchanged).
    #[test]
    fn deflate_on_oom_returns_its_pages() {
        let mut d = driver(4096, true);
        let mut a = Alloc::new(0);
        d.set_target(300);
        run_all(&mut d, &mut a);
        assert_eq!(d.managed_pages_removed(), 0);
        let r = d.oom_notify();
        assert_eq!(
            (r.kind, r.pfns.len(), r.requeued),
            (RoundKind::OomDeflate, 256, false)
        );
        assert_eq!(r.pfns[0], 256);
        assert_eq!(r.pfns[44], 0);
        assert_eq!(d.oom_notify().pfns.len(), 44);
        assert!(d.oom_notify().pfns.is_empty());
        assert_eq!((d.actual(), d.target(), d.work_queued()), (0, 300, false));
        assert_eq!(d.counters().oom_deflated, 300);
        // The host's next notification re-inflates.
        d.set_target(300);
        assert_eq!(d.next_round(), NextRound::Inflate { pages: 256 });
        d.validate().unwrap();

        let mut d = driver(4096, false);
        d.set_target(300);
        run_all(&mut d, &mut a);
        let r = d.oom_notify();
        assert!(r.pfns.is_empty());
        assert_eq!(r.duration_ns(), 0);
        assert_eq!(d.actual(), 300);
    }

    /// `update_balloon_stats`: swap in/out × 4096 bytes, PGMAJFAULT, PGFAULT as "minor",
    /// free, total (less the balloon without deflate-on-OOM), available, caches in bytes.
    #[test]
    fn stats_report() {
        let mut d = driver(1000, false);
        let mut a = Alloc::new(0);
        d.set_target(100);
        run_all(&mut d, &mut a);
        assert_eq!(d.guest_sample(0).mem_unused_kib, None);
        let g = GuestCounters {
            totalram_pages: 1000,
            free_pages: 200,
            available_pages: 500,
            file_pages: 250,
            pswpin: 3,
            pswpout: 7,
            pgmajfault: 11,
            pgfault: 13,
        };
        let (s, ns) = d.stats_request(&g);
        assert_eq!(ns, 15_000);
        assert_eq!(
            s,
            BalloonStats {
                swap_in_bytes: 3 * 4096,
                swap_out_bytes: 7 * 4096,
                major_faults: 11,
                minor_faults: 13,
                free_bytes: 200 * 4096,
                total_bytes: 900 * 4096,
                available_bytes: 500 * 4096,
                caches_bytes: 250 * 4096,
            }
        );
        assert_eq!(
            d.guest_sample(0),
            GuestSample {
                balloon_max_kib: 4000,
                balloon_cur_kib: 3600,
                balloon_min_kib: 0,
                mem_unused_kib: Some(800),
            }
        );
    }

    /// QEMU's `virtio_balloon_to_target`: (RAM − target) >> 12, clamped, 0 ignored.
    #[test]
    fn qemu_target_conversion() {
        assert_eq!(balloon_pages_for(1_000_000, 950_000), Some(12_500));
        assert_eq!(balloon_pages_for(1_000_000, 890_250), Some(27_437));
        assert_eq!(balloon_pages_for(1_000_000, 2_000_000), Some(0));
        assert_eq!(balloon_pages_for(1_000_000, 0), None);
    }

    fn host(total: u64, free: u64) -> HostSample {
        HostSample {
            mem_total_kib: total,
            mem_free_kib: free,
            buffers_kib: 0,
            cached_kib: 0,
        }
    }

    /// MOM's balloon.rules on a scripted run, by hand. Host: 10,000,000 KiB, free 10 %
    /// (under the 0.20 threshold, above the 0.05 critical level) from t = 0: guest_free =
    /// 0.20 × 0.10 / 0.20 = 0.10. One guest of 1,000,000 KiB (250,000 pages) that uses
    /// 800,000 KiB whatever its balloon (mem_unused = cur − 800,000, so StatAvg(cur) −
    /// StatAvg(mem_unused) = 800,000). The driver reaches each target before the next sample
    /// (rounds take ~0.5 ms). Polls every 5 s; evaluations at 10, 20, 30, 40 s:
    /// - t = 10: cur 1,000,000; floor 800,000 + 0.10 × 1,000,000 = 900,000; 5 % step
    ///   950,000 ≥ floor → target 950,000 (12,500 pages);
    /// - t = 20: cur 950,000; floor 895,000; step 902,500 → 902,500 (24,375 pages);
    /// - t = 30: cur 902,500; floor 890,250 > step 857,375 → 890,250 (27,437 pages: cur
    ///   becomes 222,563 × 4 = 890,252 KiB);
    /// - t = 40: cur 890,252; floor 889,025.2; change 1,226.8 ≤ 0.0025 × 890,252 =
    ///   2,225.63 → no change, and none after.
    ///
    /// So the lag: pressure at t = 0, first decision at the 3rd poll (10 s), final size at
    /// the 7th poll (30 s), 3 evaluations. Then the host recovers to 50 % free at t = 60:
    /// the 10-sample average crosses 20 % only when enough new samples are in: samples at
    /// 60, 65 … each 5,000,000 against 1,000,000: after k new ones the average of the last
    /// 10 is (k × 5 + (10 − k) × 1) / 10 × 10^6, ≥ 2,000,000 from k = 3 (t = 70 s), the
    /// evaluation at 70 s grows: floor 800,000 + 0.20 × 890,252 = 978,050.4 > 1.05 × cur
    /// 934,764.6 → target 978,050 (5,487 pages); at 80 s cur 978,052: floor 995,610.4,
    /// step 1,026,954.6, capped at 1,000,000 → 1,000,000 (0 pages).
    #[test]
    fn manager_lag_on_a_scripted_run() {
        let mut m = BalloonManager::new(1, MomConfig::default()).unwrap();
        let mut d = driver(250_000, false);
        let mut a = Alloc::new(0);
        let s = 5_000_000_000u64;
        let mut log = Vec::new();
        for k in 0..=18u64 {
            let now = k * s;
            assert_eq!(m.next_event(), now);
            let free = if now < 60 * 1_000_000_000 {
                1_000_000
            } else {
                5_000_000
            };
            let cur_pages = 250_000 - d.actual();
            d.stats_request(&GuestCounters {
                totalram_pages: 250_000,
                free_pages: cur_pages - 200_000,
                ..Default::default()
            });
            for dec in m.poll(now, &host(10_000_000, free), &[d.guest_sample(0)]) {
                log.push((k, dec.direction, dec.target_kib, dec.balloon_pages));
                d.set_target(dec.balloon_pages);
                run_all(&mut d, &mut a);
            }
        }
        use Direction::*;
        assert_eq!(
            log,
            [
                (2, Shrink, 950_000, 12_500),
                (4, Shrink, 902_500, 24_375),
                (6, Shrink, 890_250, 27_437),
                (14, Grow, 978_050, 5_487),
                (16, Grow, 1_000_000, 0),
            ]
        );
        assert_eq!(d.actual(), 0);
        let c = m.counters();
        assert_eq!(
            (c.samples, c.evaluations, c.pressure, c.decisions),
            (19, 9, 6, 5)
        );
    }

    /// Critical pressure (host free ≤ 5 %): guest_free = host_free − 0.05, negative, so the
    /// floor drops below the guest's use and only the 5 % step limits the shrink. Host
    /// free 4 %: guest_free ≈ −0.01; a guest of 1,000,000 KiB using 900,000 (100,000
    /// free): floor max(0, 900,000 − 10,000) = 890,000 < step 950,000 → 950,000. A
    /// `min_guarantee` of 990,000 KiB raises the floor to 990,000 → 990,000. Under normal
    /// pressure (host 10 %) the same guest's floor is 900,000 + 0.10 × 1,000,000 =
    /// 1,000,000 = cur: no change, no target.
    #[test]
    fn manager_critical_pressure_and_min_guarantee() {
        let g = |min| GuestSample {
            balloon_max_kib: 1_000_000,
            balloon_cur_kib: 1_000_000,
            balloon_min_kib: min,
            mem_unused_kib: Some(100_000),
        };
        let mut m = BalloonManager::new(2, MomConfig::default()).unwrap();
        m.poll(0, &host(10_000_000, 400_000), &[g(0), g(990_000)]);
        let d = m.poll(
            10_000_000_000,
            &host(10_000_000, 400_000),
            &[g(0), g(990_000)],
        );
        assert_eq!(
            d.iter().map(|d| (d.vm, d.target_kib)).collect::<Vec<_>>(),
            [(0, 950_000), (1, 990_000)]
        );
        let mut m = BalloonManager::new(1, MomConfig::default()).unwrap();
        m.poll(0, &host(10_000_000, 1_000_000), &[g(0)]);
        assert!(m
            .poll(10_000_000_000, &host(10_000_000, 1_000_000), &[g(0)])
            .is_empty());
        // No stats yet: the guest is left out.
        let mut m = BalloonManager::new(1, MomConfig::default()).unwrap();
        let none = GuestSample {
            mem_unused_kib: None,
            ..g(0)
        };
        m.poll(0, &host(10_000_000, 400_000), &[none]);
        assert!(m
            .poll(10_000_000_000, &host(10_000_000, 400_000), &[none])
            .is_empty());
        assert!(MomConfig {
            history: 0,
            ..MomConfig::default()
        }
        .check()
        .is_err());
    }

    /// MOM steps from the balloon's `actual`, not from the target it set: when the guest
    /// cannot inflate (every allocation fails), `balloon_cur` stays at 1,000,000 KiB and
    /// each evaluation asks for the same 5 % step again, 950,000 KiB (host free 10 %, guest
    /// using 500,000 KiB: floor 600,000, below the step). Once the balloon has caught up,
    /// the next step is from 950,000: 902,500.
    #[test]
    fn manager_steps_from_actual_not_target() {
        let mut m = BalloonManager::new(1, MomConfig::default()).unwrap();
        let mut d = driver(250_000, false);
        let h = host(10_000_000, 1_000_000);
        let stats = |d: &mut BalloonDriver| {
            let cur = 250_000 - d.actual();
            d.stats_request(&GuestCounters {
                totalram_pages: 250_000,
                free_pages: cur - 125_000,
                ..Default::default()
            });
        };
        let mut targets = Vec::new();
        let mut a = Alloc::new(0);
        for k in 0..=8u64 {
            stats(&mut d);
            for dec in m.poll(k * 5_000_000_000, &h, &[d.guest_sample(0)]) {
                targets.push((k, dec.target_kib));
                d.set_target(dec.balloon_pages);
                // Out of puff: the round gets nothing (the guest cannot allocate) until k = 6.
                if k < 6 {
                    let r = d.run_round(|| None).unwrap();
                    assert!(r.out_of_puff && r.requeued);
                } else {
                    run_all(&mut d, &mut a);
                }
            }
        }
        assert_eq!(
            targets,
            [(2, 950_000), (4, 950_000), (6, 950_000), (8, 902_500)]
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Random targets, rounds with random allocation failures, OOM notifications and
        /// manager polls over random host and guest figures: after every step the driver's
        /// `validate` holds (the balloon never holds more than the guest's RAM, distinct
        /// PFNs, counters add up); a round never moves more than 256 pages; an inflate
        /// never overshoots the target nor a deflate undershoots it; every PFN given back
        /// was in the balloon; and every manager target lies within [balloon_min,
        /// balloon_max], a shrink at or below cur and at least trunc(0.95 × cur), a grow
        /// at or above cur.
        #[test]
        fn random_sequences_keep_invariants(
            oom in proptest::bool::ANY,
            ops in proptest::collection::vec((0u8..5, 0u64..3000, 0u64..600), 1..200),
        ) {
            let guest = 2048u64;
            let mut d = driver(guest, oom);
            let mut m = BalloonManager::new(1, MomConfig::default()).unwrap();
            let mut free: Vec<FrameId> = (0..guest as FrameId).rev().collect();
            let mut now = 0u64;
            for (kind, x, y) in ops {
                match kind {
                    0 => d.set_target(x),
                    1 | 2 => {
                        let before = d.towards_target();
                        let mut budget = y;
                        let held: HashSet<FrameId> = d.pages().iter().copied().collect();
                        if let Some(r) = d.run_round(|| {
                            if budget == 0 { return None; }
                            budget -= 1;
                            free.pop()
                        }) {
                            proptest::prop_assert!(r.pfns.len() as u64 <= VIRTIO_BALLOON_ARRAY_PFNS_MAX);
                            if before > 0 {
                                proptest::prop_assert!(d.towards_target() >= 0);
                            } else {
                                proptest::prop_assert!(d.towards_target() <= 0);
                                for p in &r.pfns {
                                    proptest::prop_assert!(held.contains(p));
                                }
                                free.extend(r.pfns.iter().copied());
                            }
                        }
                    }
                    3 => {
                        let r = d.oom_notify();
                        proptest::prop_assert!(r.pfns.len() as u64 <= VIRTIO_BALLOON_OOM_NR_PAGES);
                        proptest::prop_assert!(oom || r.pfns.is_empty());
                        free.extend(r.pfns.iter().copied());
                    }
                    _ => {
                        let cur = guest - d.actual();
                        d.stats_request(&GuestCounters {
                            totalram_pages: guest,
                            free_pages: y.min(cur),
                            ..Default::default()
                        });
                        let min = (x % 5) * 1000;
                        let s = d.guest_sample(min);
                        let h = host(100_000, x * 30);
                        for dec in m.poll(now, &h, &[s]) {
                            let t = dec.target_kib;
                            let cur = s.balloon_cur_kib;
                            proptest::prop_assert!(t <= s.balloon_max_kib && t >= min);
                            match dec.direction {
                                Direction::Shrink => proptest::prop_assert!(
                                    t <= cur && t >= (cur as f64 * 0.95) as u64
                                ),
                                Direction::Grow => proptest::prop_assert!(t >= cur),
                            }
                            d.set_target(dec.balloon_pages);
                        }
                        now += 5_000_000_000;
                    }
                }
                d.validate().map_err(proptest::test_runner::TestCaseError::fail)?;
                proptest::prop_assert_eq!(d.actual() + free.len() as u64, guest);
            }
        }
    }
}

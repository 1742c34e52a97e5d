//! The fault / reclaim loop of a native machine (one address space, one zone).
//!
//! Every access walks the page table and sets the PTE accessed bit (and dirty bit on a
//! write), as the MMU does. A non-present PTE is a page fault:
//! - an all-zero PTE is a first touch: a minor fault for anonymous memory, a major fault
//!   (read from the file) for a file mapping;
//! - a swap entry whose slot is in the swap cache (readahead) is mapped without I/O;
//! - otherwise a major fault reads the page back (`do_swap_page`), with swap readahead:
//!   of the virtual pages around the fault on a non-rotational device
//!   (`swap_vma_readahead`), of the aligned `2^page_cluster` slot window on a rotational one
//!   (`swap_cluster_readahead`); none on zram (`SWP_SYNCHRONOUS_IO`).
//!
//! Frames come from the free list. Demand policies give one victim when it is empty.
//! Kernel policies are driven by watermarks as `__alloc_pages` does: an allocation that finds
//! free ≤ low wakes kswapd, which reclaims in `SWAP_CLUSTER_MAX` batches until free > high
//! (`balance_pgdat`); an allocation at free ≤ min does direct reclaim first
//! (`__alloc_pages_direct_reclaim` → `do_try_to_free_pages`: passes from `DEF_PRIORITY` down
//! until they have reclaimed `SWAP_CLUSTER_MAX` pages in all or priority 0 is done, whatever
//! the watermark). This untimed engine runs kswapd to completion when woken;
//! with the timing engine it becomes a thread competing for CPUs.
//!
//! A victim (`shrink_folio_list` → `pageout`): a dirty or slot-less anonymous page is written
//! to a swap slot; a clean one still in the swap cache is dropped; its PTE becomes a swap entry.
//! A file page is written back if dirty and its PTE keeps the workingset shadow.
//!
//! File I/O records (`read`, `write`, `pread64`, `pwrite64`) go through the page cache
//! ([`Machine::file_io`], the child module `pagecache`).
//!
//! Left out here: timing, THP, mlock, OOM kill.

use serde::{Deserialize, Serialize};

use crate::access::Access;
use crate::mm::frames::{
    F_ANON, F_CACOL, F_DIRTY, F_MAPPED, F_PAGECACHE, F_READAHEAD, F_SWAPCACHE,
};
use crate::mm::*;
use crate::policy::swap_plug::BLK_MAX_SEGMENTS;
use crate::policy::{
    Family, Insert, KernelVersion, Policy, ReclaimReason, ScanControl, Touch, WritebackDone,
};
use crate::watermarks::Watermarks;

mod filemap;
mod pagecache;
#[cfg(test)]
pub(crate) use pagecache::replay_tests::{tmp as pc_tmp, write_trace as pc_write_trace};
#[cfg(test)]
pub(crate) use pagecache::testutil::{pc_machine, record as file_record};
pub use pagecache::{get_init_ra_size, get_next_ra_size, FileBackend, FileWork, IO_PAGES};

/// `SWAP_CLUSTER_MAX`: the reclaim batch.
pub const SWAP_CLUSTER_MAX: u32 = 32;
/// Largest memory simulated: 2^28 frames (1 TiB), about 7 GB of simulator state.
pub const MAX_FRAMES: u32 = 1 << 28;

/// `DEF_PRIORITY`.
pub const DEF_PRIORITY: u8 = 12;
/// `MAX_RECLAIM_RETRIES`: reclaim cascades an allocation tries before giving up.
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// Configuration of the memory model for one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineConfig {
    /// Physical frames (4 KiB pages) of memory.
    pub frames: u32,
    /// `vm.page-cluster`: swap readahead of 2^n pages; 0 = off. `None` = 3 for kernel policies
    /// (Linux's default), 0 for demand policies (textbook definitions).
    pub page_cluster: Option<u8>,
    /// Zone watermarks for kernel policies; `None` = derived from `frames` as Linux does.
    pub watermarks: Option<Watermarks>,
    /// `vm.swappiness` (0..=200), default 60.
    pub swappiness: u32,
    /// Run every invariant checker after every access (slow; for tests).
    pub check_invariants: bool,
    /// kswapd does not run inline when woken: the timing engine (`crate::timed`) runs it as a
    /// thread, one [`Machine::kswapd_step`] at a time.
    #[serde(default)]
    pub defer_kswapd: bool,
    /// The swap device does synchronous I/O (`SWP_SYNCHRONOUS_IO`, set by zram): a major
    /// fault on a page with one swap reference skips the swap cache and readahead, reads
    /// just that page and frees its slot at once (`do_swap_page` in 6.8), so the device keeps
    /// no copy of a page that is back in memory.
    #[serde(default)]
    pub swap_sync_io: bool,
    /// Which Linux version's reclaim rules the kernel policies follow where 6.1 and 6.8
    /// differ ([`KernelVersion`]); default 6.8.
    #[serde(default)]
    pub kernel: KernelVersion,
    /// The swap device is zram and its compressed pool is memory of this machine (untimed
    /// replays; the timing engine charges its own zram device instead). Implies
    /// `swap_sync_io`. Every swap-out stores the page in a [`crate::device::zram::Zram`]
    /// (`zram_write_page` → `zs_malloc`), every freed slot releases it (`zram_slot_free_notify`),
    /// and the pool's pages are held back from the free list as zsmalloc's are taken from the
    /// buddy allocator. `None`: the device's memory is not modelled.
    #[serde(default)]
    pub zram_pool: Option<ZramPool>,
    /// The swap device is rotational (a hard disk, or QEMU's virtio-blk, which is never
    /// `QUEUE_FLAG_NONROT`) with this many usable slots (mkswap's `last_page`): slots are
    /// allocated as `scan_swap_map_slots` does without `cluster_info`, through the swap slots
    /// cache ([`crate::mm::rotational`]). `None`: a non-rotational device.
    #[serde(default)]
    pub swap_rotational: Option<u32>,
    /// The swap device's largest request, in pages, for the plug that reclaim's swap writes
    /// go through ([`crate::policy::swap_plug`]): the device's `max_pages`. `None`: the block
    /// layer's default `max_segments`, `BLK_MAX_SEGMENTS` (128), one page a segment.
    #[serde(default)]
    pub swap_max_pages: Option<u32>,
    /// The file device's `read_ahead_kb` (`bdi->ra_pages` × 4): the largest readahead
    /// window of the page cache's reads; 0 = none. Linux's default is 128
    /// (`VM_READAHEAD_PAGES`).
    #[serde(default = "default_read_ahead_kb")]
    pub read_ahead_kb: u32,
    /// `vm.dirty_ratio` and `vm.dirty_background_ratio`: the dirty page-cache pages, in
    /// percent of dirtyable memory, above which writers are throttled and above which the
    /// flusher writes in the background (`domain_dirty_limits`; Linux's defaults 20 and 10).
    #[serde(default = "default_dirty_ratio")]
    pub dirty_ratio: u32,
    #[serde(default = "default_dirty_background_ratio")]
    pub dirty_background_ratio: u32,
    /// The node's zones, lowest first (ZONE_DMA, ZONE_DMA32, ZONE_NORMAL): their frames sum
    /// to `frames`, and `watermarks` is then not given (each zone has its own). Empty: one
    /// zone of `frames` frames. See [`ZoneConfig`] for what several zones change.
    #[serde(default)]
    pub zones: Vec<ZoneConfig>,
    /// `vm.watermark_boost_factor`: how far a fallback between migratetypes raises a zone's
    /// watermarks, in 1/10,000 of its high watermark (at least a pageblock, 512 pages);
    /// Linux's default is 15,000, 0 turns boosting off. Only zones given their pagetypes
    /// ([`ZoneConfig::pagetypes`]) can fall back, so only they boost.
    #[serde(default = "default_watermark_boost_factor")]
    pub watermark_boost_factor: u32,
}

/// `vm.watermark_boost_factor`'s default (mm/page_alloc.c, 6.1 and 6.8).
pub const DEFAULT_WATERMARK_BOOST_FACTOR: u32 = 15_000;
pub fn default_watermark_boost_factor() -> u32 {
    DEFAULT_WATERMARK_BOOST_FACTOR
}

/// One zone of a machine with several ([`MachineConfig::zones`]). The frames are split into
/// consecutive ranges, lowest zone first, and the kernel policies' machine follows Linux 6.1
/// and 6.8 (mm/page_alloc.c, mm/vmscan.c) where zones matter:
/// - the page allocator (`get_page_from_freelist`) takes the first zone of the zonelist,
///   highest first, whose free pages exceed its low watermark plus its `lowmem_reserve`;
///   when none does it wakes kswapd and tries again against the min watermarks, then
///   reclaims directly;
/// - kswapd (`balance_pgdat`) reclaims `Σ max(high, SWAP_CLUSTER_MAX)` pages a pass
///   (`kswapd_shrink_node`) and stops when any zone is above its high watermark plus its
///   reserve (`pgdat_balanced`);
/// - MG-LRU keeps a list per generation, type and zone (`lrugen->folios[gen][type][zone]`)
///   and `scan_folios` takes the oldest generation's lists highest zone first, stopping at
///   `MIN_LRU_BATCH` isolated folios; `try_to_inc_min_seq` needs every zone's list empty;
/// - the zone tests of 6.1 MG-LRU's `should_abort_scan` are per zone.
///
/// - with the zones' free lists by migratetype ([`ZoneConfig::pagetypes`]), the buddy
///   allocator's fallback between migratetypes ([`crate::mm::buddy`]) and the watermark boost
///   it sets off: `boost_watermark` raises the zone's watermarks by a pageblock (at most
///   `watermark_boost_factor` / 10,000 of its high watermark), `rmqueue` wakes kswapd for
///   that zone (`wakeup_kswapd(zone, 0, 0, zone_idx(zone))`), and `balance_pgdat` reclaims
///   up to it (`sc->reclaim_idx`: the classic LRU skips the folios of the zones above,
///   MG-LRU moves them to the next generation) without writing or swapping while the node is
///   balanced, then takes the boost off.
///
/// Left out: several nodes, `ALLOC_NOFRAGMENT`, and what [`crate::mm::buddy`] leaves out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZoneConfig {
    // The documentation is the help of the setting (`zones` of a replay and a timed run).
    /// The zone's name as /proc/zoneinfo prints it (DMA, DMA32, Normal), for messages.
    #[serde(default)]
    pub name: String,
    /// Frames of the zone; the zones' frames sum to the machine's.
    pub frames: u32,
    /// [min, low, high] watermarks of the zone in pages (unset: derived from the zones'
    /// frames as Linux does).
    #[serde(default)]
    pub watermarks: Option<[u32; 3]>,
    /// Pages the zone keeps free against allocations that may use the highest zone,
    /// lowmem_reserve (unset: derived from the zones above it as Linux does; 0 for the
    /// highest zone).
    #[serde(default)]
    pub lowmem_reserve: Option<u32>,
    /// The zone's free lists and pageblocks by migratetype as `/proc/pagetypeinfo` prints
    /// them (unset: no migratetypes, so no fallback and no watermark boost in this zone).
    #[serde(default)]
    pub pagetypes: Option<crate::mm::buddy::PageTypes>,
}

fn default_dirty_ratio() -> u32 {
    20
}
fn default_dirty_background_ratio() -> u32 {
    10
}

/// `VM_READAHEAD_PAGES` in KiB.
pub const DEFAULT_READ_AHEAD_KB: u32 = 128;
fn default_read_ahead_kb() -> u32 {
    DEFAULT_READ_AHEAD_KB
}

/// What decides the size of zram's pool in an untimed run: the content class of the pages
/// swapped out (one for the whole trace: a trace carries no data) and the device parameters
/// (compression ratios, disk size).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ZramPool {
    pub class: crate::device::ContentClass,
    pub params: crate::device::ZramParams,
}

impl MachineConfig {
    pub fn new(frames: u32) -> Self {
        MachineConfig {
            frames,
            page_cluster: None,
            watermarks: None,
            swappiness: 60,
            check_invariants: false,
            defer_kswapd: false,
            swap_sync_io: false,
            kernel: KernelVersion::V6_8,
            zram_pool: None,
            swap_rotational: None,
            swap_max_pages: None,
            read_ahead_kb: DEFAULT_READ_AHEAD_KB,
            dirty_ratio: 20,
            dirty_background_ratio: 10,
            zones: Vec::new(),
            watermark_boost_factor: DEFAULT_WATERMARK_BOOST_FACTOR,
        }
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Counters of a run, named as in `/proc/vmstat` where one exists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    pub accesses: u64,
    pub reads: u64,
    pub writes: u64,
    /// Every miss (page not mapped), cold misses included.
    pub faults: u64,
    /// Every fault the kernel takes (`/proc/vmstat`'s `pgfault`, counted in
    /// `handle_mm_fault`): the misses, plus the write-protect faults of writes to a page
    /// mapped read-only (`do_wp_page`): an anonymous page is mapped writable only by a write
    /// fault (a read fault maps the zero page on first touch, or a swapped-in page
    /// read-only), so a load then a store to a page that is not present are two faults.
    #[serde(default)]
    pub pgfault: u64,
    /// Faults served without I/O: first touch of anonymous memory, swap-cache hits.
    pub minor_faults: u64,
    /// Faults that read from swap or a file (`pgmajfault`).
    pub major_faults: u64,
    /// First touches (cold misses).
    pub first_touch: u64,
    /// Faults on a page found in the swap cache (readahead hits).
    pub swapcache_hits: u64,
    pub pswpin: u64,
    pub pswpout: u64,
    /// Pages read by swap readahead beyond the faulting one.
    pub swap_ra: u64,
    /// Readahead pages later faulted on (`swap_ra_hit`).
    pub swap_ra_hit: u64,
    pub file_reads: u64,
    pub file_writebacks: u64,
    pub workingset_refault_anon: u64,
    pub workingset_refault_file: u64,
    /// Pages freed by reclaim (all evictions).
    pub evictions: u64,
    pub pgscan_kswapd: u64,
    pub pgscan_direct: u64,
    pub pgsteal_kswapd: u64,
    pub pgsteal_direct: u64,
    pub kswapd_wakeups: u64,
    /// Allocations that had to reclaim directly (`allocstall`).
    pub allocstall: u64,
    /// Most pages ever resident at once.
    pub peak_resident: u64,
    /// Folios a completed swap write moved to the tail of their list (`PGROTATED`:
    /// `folio_end_writeback` → `folio_rotate_reclaimable` → `lru_move_tail_fn`, Linux 6.1 and
    /// 6.8, both LRUs): one per asynchronous write here ([`Insert::Rotate`]).
    #[serde(default)]
    pub pgrotated: u64,
    /// Direct reclaim's sleeps in `reclaim_throttle(.., VMSCAN_THROTTLE_NOPROGRESS)` (timed
    /// runs with an asynchronous swap device: see [`Machine::set_write_sink`]), and the
    /// simulated time they took.
    #[serde(default)]
    pub reclaim_throttled: u64,
    #[serde(default)]
    pub reclaim_throttle_ns: u64,
    /// kswapd's sleeps in `reclaim_throttle(.., VMSCAN_THROTTLE_WRITEBACK)` (classic LRU, timed
    /// runs, native kswapd) and the simulated time they took.
    #[serde(default)]
    pub kswapd_throttled: u64,
    #[serde(default)]
    pub kswapd_throttle_ns: u64,
    /// Pages allocated from each zone, lowest first (`pgalloc_dma`, `pgalloc_dma32`, ...),
    /// on a machine with several zones ([`MachineConfig::zones`]); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pgalloc_zone: Vec<u64>,
    /// Pages reclaim passed over for being above its zone (`pgskip_dma`, `pgskip_dma32`,
    /// ...: `isolate_lru_folios` and MG-LRU's `scan_folios` under a `sc->reclaim_idx` below
    /// the highest zone, which kswapd has when a boosted zone woke it), per zone as
    /// `pgalloc_zone`; empty when none was skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pgskip_zone: Vec<u64>,
    /// [`Stats::watermark_boosts`] per zone, as `pgalloc_zone`; empty when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub watermark_boosts_zone: Vec<u64>,
    /// Allocations that fell back to another migratetype's free list
    /// (`trace_mm_page_alloc_extfrag`), on a machine whose zones have their pagetypes
    /// ([`ZoneConfig::pagetypes`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub extfrag: u64,
    /// Of those, the ones that boosted their zone's watermarks (`boost_watermark`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub watermark_boosts: u64,
    /// kswapd runs (`balance_pgdat`) that began with a boosted zone: each ends by waking
    /// kcompactd (`compact_daemon_wake` counts those that found work).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kswapd_boosted_runs: u64,
    /// Swap-outs the device failed (zram with no memory left for its pool: zram's
    /// `failed_writes`); the page stays in memory, in the swap cache, dirty.
    pub swap_write_errors: u64,
    /// Most bytes zram's pool ever took (`mm_stat`'s `mem_used_max`: whole pages), when the
    /// run models it ([`MachineConfig::zram_pool`]); 0 otherwise.
    #[serde(default)]
    pub zram_mem_used_max: u64,
    /// Pages pinned by `get_user_pages` ([`Access::gup`]).
    #[serde(default)]
    pub gup_pages: u64,
    /// Of those, pages its slow path took (`__get_user_pages` after the lockless walk stopped
    /// at a page not present or not writable): faulted in or made writable if need be, then
    /// marked accessed (`FOLL_TOUCH` → `mark_page_accessed`).
    #[serde(default)]
    pub gup_touched: u64,
    /// File I/O records replayed through the page cache (`read`, `write`, `pread64`,
    /// `pwrite64`).
    #[serde(default)]
    pub file_io: u64,
    /// `mmap` records of files not modelled: a machine without file mappings
    /// ([`Machine::enable_file_mmap`]: the VM layer's guests), a trace whose page size is not
    /// 4 KiB, a range outside user addresses.
    #[serde(default)]
    pub file_mmaps_skipped: u64,
    /// `mmap` records of files served: file mappings through the page cache
    /// (`engine::filemap`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub file_mmaps: u64,
    /// Page-cache pages mapped by a file mapping now (`nr_mapped`, meminfo's `Mapped`); a
    /// gauge.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nr_mapped: u64,
    /// KiB read from devices (`pgpgin`: `submit_bio` counts the sectors of every read,
    /// swap-ins and file reads alike; `/proc/vmstat` shows them halved, in KiB).
    #[serde(default)]
    pub pgpgin: u64,
    /// KiB written to devices (`pgpgout`: swap-outs and file writebacks).
    #[serde(default)]
    pub pgpgout: u64,
    /// Pages of files in memory now (`nr_file_pages`: the page cache and file mappings); a
    /// gauge, kept by a warm-up's reset.
    #[serde(default)]
    pub nr_file_pages: u64,
    /// Dirty page-cache pages now (`nr_dirty`); a gauge, kept by a warm-up's reset.
    #[serde(default)]
    pub nr_dirty: u64,
    /// Page-cache pages under writeback now (`nr_writeback`: written, the write not yet
    /// complete; timed runs only); a gauge.
    #[serde(default)]
    pub nr_writeback: u64,
    /// Pages the flusher wrote: in the background (dirty pages above
    /// `dirty_background_ratio`) and periodically (dirty for longer than
    /// `dirty_expire_centisecs`, timed runs); writers' waits in `balance_dirty_pages` above
    /// `dirty_ratio` (timed runs).
    #[serde(default)]
    pub wb_background: u64,
    #[serde(default)]
    pub wb_periodic: u64,
    #[serde(default)]
    pub dirty_throttled: u64,
    /// Pages the flusher wrote because reclaim woke it (`WB_REASON_VMSCAN`: every folio a
    /// classic LRU batch took was dirty).
    #[serde(default)]
    pub wb_vmscan: u64,
    /// Pages reclaim itself wrote (`NR_VMSCAN_WRITE`, counted in `pageout`): swap-outs, and
    /// dirty file pages (classic LRU's kswapd under `PGDAT_DIRTY`).
    #[serde(default)]
    pub nr_vmscan_write: u64,
    /// Pages of reclaimable slab the machine models: the buffer heads' (`nr_slab_reclaimable`
    /// counts them in pages, as /proc/vmstat does).
    #[serde(default)]
    pub nr_slab_reclaimable: u64,
    /// Victims for which reclaim did the work the cost table's `reclaim_page_ns` stands for
    /// ([`Mm::reclaim_work`]: all but a clean, already unmapped swap-cache folio, whose
    /// unmapping and write an earlier visit did), by kswapd and by direct reclaim: what the
    /// timing engine charges the reclaiming thread for, as it moves a pass's time on.
    #[serde(default)]
    pub reclaim_work_kswapd: u64,
    #[serde(default)]
    pub reclaim_work_direct: u64,
}

impl Stats {
    /// Add another memory manager's counters (several VMs' guests summed; peaks add up too,
    /// as the memory of separate machines does).
    pub fn add(&mut self, o: &Stats) {
        crate::util::add_fields!(self, o;
            accesses, reads, writes, faults, pgfault, minor_faults, major_faults, first_touch,
            swapcache_hits, pswpin, pswpout, swap_ra, swap_ra_hit, file_reads, file_writebacks,
            workingset_refault_anon, workingset_refault_file, evictions, pgscan_kswapd,
            pgscan_direct, pgsteal_kswapd, pgsteal_direct, kswapd_wakeups, allocstall,
            peak_resident, pgrotated, swap_write_errors, zram_mem_used_max, gup_pages,
            gup_touched, file_io, file_mmaps_skipped, file_mmaps, nr_mapped, pgpgin, pgpgout,
            nr_file_pages, nr_dirty, nr_writeback, wb_background, wb_periodic, dirty_throttled,
            wb_vmscan, nr_vmscan_write, nr_slab_reclaimable, reclaim_work_kswapd,
            reclaim_work_direct, extfrag, watermark_boosts, kswapd_boosted_runs, reclaim_throttled,
            reclaim_throttle_ns, kswapd_throttled, kswapd_throttle_ns);
        for (mine, theirs) in [
            (&mut self.pgalloc_zone, &o.pgalloc_zone),
            (&mut self.pgskip_zone, &o.pgskip_zone),
            (&mut self.watermark_boosts_zone, &o.watermark_boosts_zone),
        ] {
            if mine.len() < theirs.len() {
                mine.resize(theirs.len(), 0);
            }
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
    }
}

/// A zone's per-CPU lists' `(batch, high)` for one CPU (Linux 6.1 `zone_batchsize` and
/// `zone_highsize`, the same in 6.8 but for its auto-tuned `high`, left out): batch is
/// `min(managed >> 10, 256) / 4` (at least 1) brought to `2^n - 1` below its 1.5 times; high
/// the zone's low watermark (split over the node's one CPU), at least 4 batches. `managed`:
/// the zone's frames here.
fn pcp_batch_high(managed: u32, low: u32) -> (u32, u32) {
    let b = ((managed >> 10).min(256) / 4).max(1);
    let batch = ((1u32 << (b + b / 2).ilog2()) - 1).max(1);
    (batch, low.max(batch * 4))
}

/// An xarray of the machine whose nodes are modelled: a swap address space (by number:
/// `swapper_spaces[type][offset >> SWAP_ADDRESS_SPACE_SHIFT]`) or a file's `i_pages`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Xa {
    Swap(u32),
    File(u32),
}

/// `SWAP_ADDRESS_SPACE_SHIFT` (mm/swap.h, Linux 6.1 and 6.8): 16,384 slots per swap
/// `address_space`, whose xarray is indexed by the full offset.
const SWAP_ADDRESS_SPACE_SHIFT: u32 = 14;

/// The kernel's reclaimable slab memory ([`crate::mm::slab`]): the buffer heads of the
/// page cache's written pages, the page cache's and the swap cache's xarray nodes, and
/// the xarrays' shapes. Kept only on machines with buddy allocators.
#[derive(Debug, Default)]
struct KernelSlabs {
    bh: crate::mm::slab::SlabCache<FrameId>,
    xa_nodes: crate::mm::slab::SlabCache<(Xa, crate::mm::slab::XaNode)>,
    xas: std::collections::HashMap<Xa, crate::mm::slab::XaShape>,
}

/// An OOM notifier (`register_oom_notifier`, Linux 6.8 `mm/oom_kill.c`): `out_of_memory`
/// calls it before choosing a victim; frames it returns (taken with
/// [`Machine::alloc_noretry`]) go back to the free list and nothing is killed. The one user is
/// virtio-balloon's deflate-on-OOM (`virtio_balloon_oom_notify`).
pub trait OomNotifier: std::fmt::Debug {
    fn notify(&mut self) -> Vec<FrameId>;
}

pub use crate::mm::WriteSink;

/// One jiffy of Debian's kernels (`CONFIG_HZ_250`): `reclaim_throttle`'s NOPROGRESS timeout.
pub const JIFFY_NS: u64 = 4_000_000;

/// One page's swap traffic, logged in [`Machine::swap_log`] where the kernel does it. `vpn`
/// is the machine's page number (for a host, QEMU's page of a VM's guest memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwapEvent {
    /// Reclaim wrote the page to `slot` (`pageout` → `swap_writepage`; a clean page that
    /// keeps its swap copy is freed without one, and is not logged).
    Out { vpn: u64, slot: u32 },
    /// A major fault read the page from `slot` (`do_swap_page` → `swap_read_folio`).
    In { vpn: u64, slot: u32 },
    /// Swap readahead read the page into the swap cache (`PG_readahead` set).
    ReadAhead { vpn: u64 },
    /// A fault found the page read ahead in the swap cache (`swap_cache_get_folio`
    /// test-and-clears `PG_readahead`: a readahead hit).
    ReadAheadHit { vpn: u64 },
    /// Reclaim dropped a named page ([`Machine::named`]) without writing it
    /// (`__remove_mapping` of a clean file page).
    Discard { vpn: u64 },
    /// A major fault read a dropped named page back from its file (`filemap_fault`).
    NamedIn { vpn: u64 },
}

/// One simulated machine running one policy.
#[derive(Debug)]
pub struct Machine<P: Policy> {
    pub mm: Mm,
    pub policy: P,
    pub stats: Stats,
    family: Family,
    page_cluster: u8,
    /// The node's watermarks: the zones' sums when there are several.
    wmark: Watermarks,
    /// The zones' watermarks and reserves, lowest first (one entry: `wmark`, reserve 0).
    zones: Vec<(Watermarks, u32)>,
    swappiness: u32,
    check: bool,
    t: u64,
    /// The `get_user_pages` call in progress: the time of its last page (`u64::MAX`: none)
    /// and whether its lockless walk has stopped (the rest of the range takes the slow path).
    gup_last_t: u64,
    gup_slow: bool,
    victims: Vec<FrameId>,
    /// Ids at or above `VPN_LIMIT` (object ids, not addresses) mapped to dense page numbers.
    remap: crate::util::PageMap<u64>,
    ra: ReadaheadState,
    /// VMA-based swap readahead (`swap_use_vma_readahead`: every swap device non-rotational
    /// and asynchronous here), with each VMA's state by its start (`u64::MAX`: the implicit
    /// anonymous VMA of pages no declared VMA covers).
    vma_ra: Option<VmaRa>,
    /// Address spaces of a machine whose page numbers stand for several processes (the VM
    /// layer's: a guest's processes' GiB regions, each a block of page numbers; the host's
    /// VMs, each QEMU's guest memory): the first page number of each range and its process,
    /// by start. A page no declared VMA covers has its process's implicit anonymous VMA,
    /// whose readahead state is its own (`vma->swap_readahead_info` is per VMA, so
    /// processes do not share one); left out, a process's several anonymous VMAs (one per
    /// process here). Empty: one address space.
    address_spaces: Vec<(u64, u32)>,
    oom_at: Option<u64>,
    /// The OOM notifiers' chain (`register_oom_notifier`): asked for frames before the
    /// allocation fails ([`OomNotifier`]).
    oom_notifier: Option<Box<dyn OomNotifier>>,
    /// No swap space (`swapoff`, `total_swap_pages` 0): reclaim may not take anonymous pages
    /// (`sc->may_swap` false, as `can_reclaim_anon_pages`).
    swap_off: bool,
    defer_kswapd: bool,
    swap_sync_io: bool,
    /// [`MachineConfig::swap_max_pages`], resolved.
    swap_max_pages: u32,
    kernel: KernelVersion,
    /// kswapd has been woken (free fell to `low`) and has not yet balanced the node.
    kswapd_awake: bool,
    /// The priority of kswapd's current `balance_pgdat` (deferred mode).
    kswapd_priority: u8,
    /// Each zone's `watermark_boost`, added to its three watermarks (`wmark_pages`).
    boost: [u32; crate::policy::MAX_ZONES],
    /// Each zone's largest boost (`boost_watermark`'s `max_boost`); 0: the zone does not boost.
    max_boost: [u32; crate::policy::MAX_ZONES],
    /// `pgdat->kswapd_highest_zoneidx`: the highest zone a wake asked kswapd to balance up
    /// to since its current run began (`None`: `MAX_NR_ZONES`, no wake).
    kswapd_highest: Option<usize>,
    /// A boosted zone's wake, done at the next allocation (`rmqueue` wakes kswapd after it
    /// has taken its page: here the page's fault is then finished first).
    boost_wake: Option<usize>,
    /// kswapd's current `balance_pgdat` (deferred mode).
    balance: Option<Balance>,
    /// Each zone's buddy fallbacks already counted in `extfrag`.
    fallbacks_seen: [u64; crate::policy::MAX_ZONES],
    /// The kernel's reclaimable slabs ([`KernelSlabs`]); kept only with buddy allocators.
    slabs: KernelSlabs,
    /// Scratch for [`Machine::xa_changed`].
    xa_scratch: Vec<crate::mm::slab::XaNode>,
    /// `PF_MEMALLOC`: the kernel allocates for reclaim, within it (the swap cache's xarray
    /// nodes of a pass's swap-outs): no kswapd wake of its own.
    pf_memalloc: bool,
    /// When set, the page numbers whose mapping reclaim removed (`try_to_unmap`), for a layer
    /// above that mirrors the page tables (the VM layer's TLBs and hardware tables).
    pub unmap_log: Option<Vec<u64>>,
    /// When set, the priority of every reclaim pass (`shrink_node`), for a layer above whose
    /// shrinkers `shrink_slab` would call in that pass (the VM layer's KVM MMU shrinker).
    pub shrink_log: Option<Vec<u8>>,
    /// When set, every page's swap traffic ([`SwapEvent`]) in order, for a layer above that
    /// attributes it (the VM layer: a host's swap I/O of each VM's guest memory).
    pub swap_log: Option<Vec<SwapEvent>>,
    /// When set, the anonymous pages (by page number) the layer above says hold an
    /// unchanged copy of a file block: a private file mapping (`mmap` with `MAP_PRIVATE`)
    /// not yet copied on write (VSwapper's Swap Mapper, the VM layer's `vswapper`). Reclaim
    /// drops such a page without a swap write (`__remove_mapping` of a clean page; its swap
    /// copy, if any, is freed) and leaves [`PTE_NAMED_GONE`] with its shadow; a fault on it
    /// is a major fault that reads the block from the file (`filemap_fault`), logged as
    /// [`SwapEvent::NamedIn`] for the layer above to time. The layer above removes a page
    /// when it is written (`do_wp_page`'s copy makes it anonymous). Change it with
    /// [`Machine::set_named`], which moves the page to the file LRU lists of a policy that
    /// has them ([`Policy::set_file_lru`]), where the kernel keeps a file page.
    pub named: Option<std::collections::HashSet<u64>>,
    /// zram's pool charged to this machine ([`MachineConfig::zram_pool`]).
    zram: Option<Box<ZramState>>,
    /// [`MachineConfig::read_ahead_kb`].
    read_ahead_kb: u32,
    /// [`MachineConfig::dirty_ratio`], [`MachineConfig::dirty_background_ratio`].
    dirty_ratio: u32,
    dirty_background_ratio: u32,
    /// log2 of the trace's page size: user addresses of file I/O records (an `O_DIRECT`
    /// buffer) to page numbers ([`Machine::set_user_page_size`]).
    user_page_shift: u32,
    /// Direct I/O's odd sectors not yet counted in `pgpgin` / `pgpgout` (KiB: sectors / 2).
    dio_sectors: [u64; 2],
    /// Timed runs: the device behind the files and the file I/O not yet handed to it (see
    /// [`pagecache::FileTime`]).
    file_time: Option<Box<pagecache::FileTime>>,
    /// A host whose VM disk images Cacol caches ([`Machine::enable_cacol`]).
    cacol: Option<Box<pagecache::CacolHost>>,
    /// `mmap` records of files make file mappings ([`Machine::enable_file_mmap`]).
    file_mmap: bool,
    /// With a write sink: kswapd's last pass ended in `reclaim_throttle(..,
    /// VMSCAN_THROTTLE_WRITEBACK)`, sleeping until then ([`Machine::take_kswapd_throttle`]).
    kswapd_throttle: Option<u64>,
    /// Whether kswapd is a thread that can sleep in `reclaim_throttle` (the timed native
    /// machine's; [`Machine::enable_kswapd_throttle`]).
    kswapd_sleeps: bool,
}

/// The zram device of an untimed run with its pool charged to memory.
/// One `balance_pgdat` of kswapd (Linux 6.1 and 6.8, mm/vmscan.c) while it runs.
#[derive(Clone, Copy, Debug)]
struct Balance {
    /// `highest_zoneidx`: the zones it balances and may reclaim from (`sc.reclaim_idx`).
    highest: usize,
    /// `nr_boost_reclaim`: the boost left to reclaim; 0 once the node was found unbalanced.
    nr_boost_reclaim: u64,
    /// `zone_boosts`: each zone's boost when the run began, taken off at its end.
    zone_boosts: [u32; crate::policy::MAX_ZONES],
    boosted: bool,
    priority: u8,
}

#[derive(Debug)]
struct ZramState {
    dev: crate::device::zram::Zram,
    class: crate::device::ContentClass,
    /// The swap I/O log drained into `dev`, kept to reuse its buffer.
    io: Vec<SwapIo>,
}

/// State of `swapin_nr_pages` (mm/swap_state.c): readahead hits since the last fault, the
/// previous faulting offset and the last window. The hit counter starts at 4
/// (`swapin_readahead_hits = ATOMIC_INIT(4)`), so a first fault reads a full window.
#[derive(Clone, Copy, Debug)]
pub struct ReadaheadState {
    pub hits: u32,
    pub prev_offset: u32,
    pub last_pages: u32,
}

impl Default for ReadaheadState {
    fn default() -> Self {
        ReadaheadState {
            hits: 4,
            prev_offset: 0,
            last_pages: 0,
        }
    }
}

/// `__swapin_nr_pages` (mm/swap_state.c, the same in 6.1 and 6.8): the readahead window
/// grows with readahead hits (hits + 2, rounded up to a power of two ≥ 4, capped at
/// `max_pages`), is a single page when there were no hits and `offset` is not next to
/// `prev_offset`, and never shrinks faster than by half (`prev_win / 2`, applied after the
/// cap). Offsets are swap slots (cluster readahead) or virtual pages (VMA readahead).
pub fn swapin_window(
    prev_offset: u64,
    offset: u64,
    hits: u32,
    max_pages: u32,
    prev_win: u32,
) -> u32 {
    let mut pages = hits + 2;
    if pages == 2 {
        if offset != prev_offset.wrapping_add(1) && offset != prev_offset.wrapping_sub(1) {
            pages = 1;
        }
    } else {
        let mut roundup = 4;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    pages.min(max_pages).max(prev_win / 2)
}

/// `swapin_nr_pages`: the cluster readahead's window from the global state (the hit counter
/// is taken and reset, `prev_offset` moves only on a fault with no hits).
pub fn swapin_nr_pages(ra: &mut ReadaheadState, offset: u32, max_pages: u32) -> u32 {
    if max_pages <= 1 {
        return 1;
    }
    let hits = std::mem::take(&mut ra.hits);
    let pages = swapin_window(
        ra.prev_offset as u64,
        offset as u64,
        hits,
        max_pages,
        ra.last_pages,
    );
    if hits == 0 {
        ra.prev_offset = offset;
    }
    ra.last_pages = pages;
    pages
}

/// A VMA's `swap_readahead_info` (VMA-based swap readahead): the last faulting or hit page,
/// the last window and the readahead hits since. A VMA that has none reads as page 0,
/// window 0, 4 hits (`GET_SWAP_RA_VAL`: `info ?: 4`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmaReadahead {
    pub page: u64,
    pub win: u32,
    pub hits: u32,
}

/// The VMA-readahead states of a machine: the first address space's implicit anonymous
/// VMA's, found without a lookup, and every other VMA's by its key (`vma_readahead_state`;
/// a map, as a run may have thousands of processes or VMAs).
#[derive(Clone, Debug, Default)]
struct VmaRa {
    first: VmaReadahead,
    others: std::collections::HashMap<u64, VmaReadahead>,
}

impl Default for VmaReadahead {
    fn default() -> Self {
        VmaReadahead {
            page: 0,
            win: 0,
            hits: 4,
        }
    }
}

/// `SWAP_RA_HITS_MAX`: the hit count's 6 bits.
const SWAP_RA_HITS_MAX: u32 = 63;
/// `SWAP_RA_ORDER_CEILING`: VMA readahead reads at most 2^5 pages.
const SWAP_RA_ORDER_CEILING: u8 = 5;

/// Dense page numbers given to trace ids that do not fit a 48-bit address space start here.
pub const REMAP_BASE: u64 = 3 << 34;

impl<P: Policy> Machine<P> {
    pub fn new(cfg: &MachineConfig, policy: P) -> Result<Self, crate::Error> {
        if cfg.frames == 0 {
            return Err(crate::Error::config("frames", "must be at least 1"));
        }
        if cfg.frames >= u32::MAX / 2 {
            return Err(crate::Error::config(
                "frames",
                format!("{} frames is beyond what can be simulated", cfg.frames),
            ));
        }
        let family = policy.family();
        let zones = Self::zone_setup(cfg, family)?;
        let wmark = match (family, cfg.watermarks) {
            (Family::Kernel, None) if zones.len() > 1 => Watermarks {
                min: zones.iter().map(|z| z.0.min).sum(),
                low: zones.iter().map(|z| z.0.low).sum(),
                high: zones.iter().map(|z| z.0.high).sum(),
            },
            (Family::Demand, _) => Watermarks {
                min: 0,
                low: 0,
                high: 0,
            },
            (Family::Kernel, Some(w)) => w,
            (Family::Kernel, None) => Watermarks::derive(cfg.frames),
        };
        if family == Family::Kernel {
            wmark
                .validate(cfg.frames)
                .map_err(|m| crate::Error::config("watermarks", m))?;
        } else if let Some(w) = cfg.watermarks {
            // Demand policies evict on demand and do not use them, but nonsense given
            // explicitly is still an error rather than silently accepted.
            w.validate(cfg.frames)
                .map_err(|m| crate::Error::config("watermarks", m))?;
        }
        if cfg.swappiness > 200 {
            return Err(crate::Error::config(
                "swappiness",
                format!("must be 0..=200, got {}", cfg.swappiness),
            ));
        }
        let page_cluster = cfg
            .page_cluster
            .unwrap_or(if family == Family::Kernel { 3 } else { 0 });
        if page_cluster > 10 {
            return Err(crate::Error::config(
                "page_cluster",
                format!("must be 0..=10, got {page_cluster}"),
            ));
        }
        let zram = match cfg.zram_pool {
            None => None,
            Some(z) => {
                z.params.check()?;
                Some(Box::new(ZramState {
                    dev: crate::device::zram::Zram::new(&z.params),
                    class: z.class,
                    io: Vec::new(),
                }))
            }
        };
        let mut mm = Mm::new(cfg.frames);
        let mut max_boost = [0u32; crate::policy::MAX_ZONES];
        let mut has_pagetypes = false;
        if cfg.zones.len() > 1 {
            let sizes: Vec<u32> = cfg.zones.iter().map(|z| z.frames).collect();
            mm.frames = crate::mm::frames::Frames::with_zones(&sizes);
            for (i, z) in cfg.zones.iter().enumerate() {
                let Some(pt) = &z.pagetypes else { continue };
                let name = if z.name.is_empty() {
                    format!("zones[{i}].pagetypes")
                } else {
                    format!("zones[{i}] ({}).pagetypes", z.name)
                };
                if family != Family::Kernel {
                    return Err(crate::Error::config(
                        name,
                        "migratetypes and watermark boosting need a kernel policy",
                    ));
                }
                mm.frames
                    .set_pagetypes(i, pt)
                    .map_err(|m| crate::Error::config(&name, m))?;
                // The swap cache's xarray nodes follow the slots ([`Machine::sync_swap_xa`]).
                mm.swap.log_slots();
                has_pagetypes = true;
                // `boost_watermark`: not in a zone under four pageblocks (its managed pages:
                // here its frames); `max_boost` = high × factor / 10,000, at least a pageblock,
                // none while that is 0.
                let pb = crate::mm::buddy::PAGEBLOCK_PAGES;
                let high = zones[i].0.high as u64;
                let mb = high * cfg.watermark_boost_factor as u64 / 10_000;
                if cfg.watermark_boost_factor > 0 && z.frames >= 4 * pb && mb > 0 {
                    max_boost[i] = (mb as u32).max(pb);
                }
            }
        } else if cfg.zones.iter().any(|z| z.pagetypes.is_some()) {
            return Err(crate::Error::config(
                "zones[0].pagetypes",
                "migratetypes need the machine's zones (two or more)",
            ));
        }
        if has_pagetypes {
            mm.frames
                .set_pcp(|i| pcp_batch_high(cfg.zones[i].frames, zones[i].0.low));
        }
        mm.swap.device.log_on = zram.is_some();
        if let Some(n) = cfg.swap_rotational {
            if zram.is_some() || cfg.swap_sync_io {
                return Err(crate::Error::config(
                    "swap",
                    "a rotational disk is not zram: give one or the other",
                ));
            }
            if n == 0 || n > MAX_FRAMES {
                return Err(crate::Error::config(
                    "swap.size",
                    format!("{n} slots: must be 1..={MAX_FRAMES}"),
                ));
            }
            mm.swap.set_rotational(n);
        }
        let mut policy = policy;
        if mm.frames.n_zones() > 1 {
            policy.set_zones(mm.frames.zone_starts());
        }
        Ok(Machine {
            mm,
            policy,
            stats: Stats::default(),
            family,
            page_cluster,
            wmark,
            zones: if zones.len() > 1 {
                zones
            } else {
                vec![(wmark, 0)]
            },
            swappiness: cfg.swappiness,
            check: cfg.check_invariants,
            t: 0,
            gup_last_t: u64::MAX,
            gup_slow: false,
            victims: Vec::with_capacity(SWAP_CLUSTER_MAX as usize * 4),
            remap: Default::default(),
            address_spaces: Vec::new(),
            ra: ReadaheadState::default(),
            vma_ra: (cfg.swap_rotational.is_none() && !cfg.swap_sync_io && cfg.zram_pool.is_none())
                .then(VmaRa::default),
            oom_at: None,
            oom_notifier: None,
            kswapd_throttle: None,
            kswapd_sleeps: false,
            swap_off: false,
            unmap_log: None,
            swap_log: None,
            named: None,
            shrink_log: None,
            defer_kswapd: cfg.defer_kswapd,
            swap_sync_io: cfg.swap_sync_io || cfg.zram_pool.is_some(),
            swap_max_pages: cfg.swap_max_pages.unwrap_or(BLK_MAX_SEGMENTS).max(1),
            kernel: cfg.kernel,
            kswapd_awake: false,
            kswapd_priority: DEF_PRIORITY,
            boost: [0; crate::policy::MAX_ZONES],
            max_boost,
            kswapd_highest: None,
            boost_wake: None,
            balance: None,
            fallbacks_seen: [0; crate::policy::MAX_ZONES],
            slabs: KernelSlabs::default(),
            xa_scratch: Vec::new(),
            pf_memalloc: false,
            zram,
            read_ahead_kb: cfg.read_ahead_kb,
            dirty_ratio: cfg.dirty_ratio,
            dirty_background_ratio: cfg.dirty_background_ratio,
            user_page_shift: 12,
            dio_sectors: [0, 0],
            file_time: None,
            cacol: None,
            file_mmap: false,
        })
    }

    /// The page size of the trace's user addresses (its access records' pages), for the
    /// buffers of `O_DIRECT` file I/O records (default 4096). Errors: not a power of two.
    pub fn set_user_page_size(&mut self, page_size: u64) -> Result<(), crate::Error> {
        self.user_page_shift = crate::trace::page_shift(page_size)?;
        Ok(())
    }

    /// The zones of `cfg` with their watermarks and reserves (empty for one zone), checked.
    fn zone_setup(
        cfg: &MachineConfig,
        family: Family,
    ) -> Result<Vec<(Watermarks, u32)>, crate::Error> {
        let zs = &cfg.zones;
        if zs.len() <= 1 {
            if let Some(z) = zs.first() {
                if z.frames != cfg.frames {
                    return Err(crate::Error::config(
                        "zones",
                        format!(
                            "one zone of {} frames in a machine of {}",
                            z.frames, cfg.frames
                        ),
                    ));
                }
            }
            return Ok(Vec::new());
        }
        if zs.len() > crate::policy::MAX_ZONES {
            return Err(crate::Error::config(
                "zones",
                format!("{} zones: at most {}", zs.len(), crate::policy::MAX_ZONES),
            ));
        }
        if cfg.watermarks.is_some() {
            return Err(crate::Error::config(
                "watermarks",
                "give each zone its watermarks (zones[i].watermarks), not the machine",
            ));
        }
        let total: u64 = zs.iter().map(|z| z.frames as u64).sum();
        if total != cfg.frames as u64 {
            return Err(crate::Error::config(
                "zones",
                format!(
                    "the zones' frames sum to {total}, the machine has {}",
                    cfg.frames
                ),
            ));
        }
        let sizes: Vec<u32> = zs.iter().map(|z| z.frames).collect();
        let derived = Watermarks::derive_zones(&sizes);
        let reserves = crate::watermarks::lowmem_reserves(&sizes);
        let mut out = Vec::with_capacity(zs.len());
        for (i, z) in zs.iter().enumerate() {
            let name = if z.name.is_empty() {
                format!("zones[{i}]")
            } else {
                format!("zones[{i}] ({})", z.name)
            };
            if z.frames == 0 {
                return Err(crate::Error::config(&name, "a zone needs at least 1 frame"));
            }
            let w = z
                .watermarks
                .map(|[min, low, high]| Watermarks { min, low, high })
                .unwrap_or(derived[i]);
            let reserve = z.lowmem_reserve.unwrap_or(reserves[i]);
            if i + 1 == zs.len() && reserve != 0 {
                return Err(crate::Error::config(
                    &name,
                    format!(
                        "the highest zone keeps no lowmem_reserve against itself, got {reserve}"
                    ),
                ));
            }
            if (family == Family::Kernel || z.watermarks.is_some())
                && !(w.min <= w.low && w.low <= w.high)
            {
                return Err(crate::Error::config(
                    format!("{name}.watermarks"),
                    format!(
                        "must satisfy min <= low <= high, got min {}, low {}, high {}",
                        w.min, w.low, w.high
                    ),
                ));
            }
            out.push((w, reserve));
        }
        if family == Family::Kernel {
            // The top zone must be able to go above its high watermark.
            let (top, _) = out[out.len() - 1];
            if top.high >= zs[zs.len() - 1].frames {
                return Err(crate::Error::config(
                    "zones",
                    format!(
                        "the highest zone's high watermark {} must be below its {} frames",
                        top.high,
                        zs[zs.len() - 1].frames
                    ),
                ));
            }
        }
        Ok(out)
    }

    pub fn watermarks(&self) -> Watermarks {
        self.wmark
    }

    /// The zones' watermarks and `lowmem_reserve`s, lowest first (one entry on a machine
    /// with one zone).
    pub fn zones(&self) -> &[(Watermarks, u32)] {
        &self.zones
    }

    /// `get_page_from_freelist`'s zone choice for a `GFP_HIGHUSER_MOVABLE` page: the first
    /// zone of the zonelist (highest first) whose free pages exceed the watermark `mark`
    /// picks plus the zone's `lowmem_reserve` (`zone_watermark_fast`).
    #[inline]
    fn zone_fit(&self, mark: impl Fn(&Watermarks) -> u32) -> Option<usize> {
        if self.zones.len() == 1 {
            return (self.mm.frames.n_free() > mark(&self.wmark)).then_some(0);
        }
        (0..self.zones.len()).rev().find(|&z| {
            let (w, reserve) = &self.zones[z];
            self.mm.frames.n_free_zone(z) > mark(w) + reserve + self.boost[z]
        })
    }

    /// The zone of a swap readahead page, which only takes free memory above `min` (kernel
    /// policies: readahead never reclaims here): the zone the allocator's fast path would
    /// take, else the one its min-watermark retry would. Demand policies: the highest zone
    /// with a free frame.
    fn ra_zone(&self) -> Option<usize> {
        if self.family == Family::Kernel {
            return self
                .zone_fit(|w| w.low)
                .or_else(|| self.zone_fit(|w| w.min));
        }
        (0..self.zones.len())
            .rev()
            .find(|&z| self.mm.frames.n_free_zone(z) > 0)
    }

    /// A frame of zone `z`, counted in `pgalloc_<zone>` on a machine with several zones.
    #[inline]
    fn take_frame(&mut self, z: usize, idx: PteIndex, flags: u8) -> Option<FrameId> {
        let f = self.mm.frames.alloc_in(z, idx, flags)?;
        if self.zones.len() > 1 {
            self.count_pgalloc(z);
            self.fallback_done(z);
        }
        Some(f)
    }

    /// `pgalloc_<zone>` on a machine with several zones.
    #[inline]
    fn count_pgalloc(&mut self, z: usize) {
        if self.stats.pgalloc_zone.len() < self.zones.len() {
            self.stats.pgalloc_zone.resize(self.zones.len(), 0);
        }
        self.stats.pgalloc_zone[z] += 1;
    }

    /// `1 << order` pages for the kernel's own use, of migratetype `mt` (Linux 6.1 and 6.8
    /// `get_page_from_freelist`): from the first zone above its low watermark, else
    /// (kswapd woken) above its min; under min, from any zone with a free frame (left out:
    /// the direct reclaim `GFP_NOFS` would do for it, and `__zone_watermark_ok`'s check
    /// for a free chunk of the order). Its fallback to another migratetype's pageblock
    /// steals and boosts the zone as a page fault's does (`steal_suitable_fallback` →
    /// `boost_watermark`). Within reclaim ([`Machine::pf_memalloc`]) it wakes no kswapd: the
    /// boost's wake waits for the next allocation, and reclaim itself sees the boosted
    /// watermarks. The first frame, or None when the zone has no such chunk.
    fn alloc_kernel_pages(&mut self, mt: usize, order: usize) -> Option<FrameId> {
        if !self.pf_memalloc {
            self.boost_wakeup();
        }
        let z = match self.zone_fit(|w| w.low) {
            Some(z) => z,
            None => {
                if !self.pf_memalloc {
                    self.wakeup_kswapd();
                }
                self.zone_fit(|w| w.min).or_else(|| {
                    (0..self.zones.len())
                        .rev()
                        .find(|&z| self.mm.frames.n_free_zone(z) > 0)
                })?
            }
        };
        let f = self.mm.frames.take_order_in_type(z, mt, order)?;
        if self.zones.len() > 1 {
            for _ in 0..1 << order {
                self.count_pgalloc(z);
            }
        }
        self.fallback_done(z);
        Some(f)
    }

    /// A new object of a reclaimable slab cache (`kmem_cache_alloc` → SLUB's
    /// `allocate_slab` when no slab has room: a `MIGRATE_RECLAIMABLE` chunk of the cache's
    /// order, else of order 0, `s->min`), counted in `nr_slab_reclaimable`. False when no
    /// memory could be had for it (the object is then left out).
    fn slab_alloc<K: std::hash::Hash + Eq + Copy>(
        &mut self,
        cache: fn(&mut KernelSlabs) -> &mut crate::mm::slab::SlabCache<K>,
        key: K,
        order: u8,
        per_slab: &[u32],
    ) -> bool {
        let c = cache(&mut self.slabs);
        if c.contains(key) || c.place(key) {
            return true;
        }
        let rec = crate::mm::buddy::RECLAIMABLE;
        let (page, order) = match self.alloc_kernel_pages(rec, order as usize) {
            Some(p) => (p, order),
            None if order > 0 => match self.alloc_kernel_pages(rec, 0) {
                Some(p) => (p, 0),
                None => return false,
            },
            None => return false,
        };
        self.stats.nr_slab_reclaimable += 1 << order;
        cache(&mut self.slabs).add_slab(page, order, per_slab[order as usize], key);
        true
    }

    /// Free a reclaimable slab object; its slab, left empty, goes back to the buddy
    /// allocator (`discard_slab`).
    fn slab_free<K: std::hash::Hash + Eq + Copy>(
        &mut self,
        cache: fn(&mut KernelSlabs) -> &mut crate::mm::slab::SlabCache<K>,
        key: K,
    ) {
        let Some((first, order)) = cache(&mut self.slabs).remove(key) else {
            return;
        };
        self.mm.frames.give_back_order(first, order as usize);
        self.stats.nr_slab_reclaimable -= 1 << order;
    }

    /// Page-cache frame `f` gets a buffer head (fs/buffer.c, Linux 6.1 and 6.8: a write's
    /// `block_write_begin` → `create_page_buffers` → `alloc_page_buffers`, one `buffer_head`
    /// per 4 KiB block, from `bh_cachep`, a `SLAB_RECLAIM_ACCOUNT` cache of order-0 slabs:
    /// [`crate::mm::slab`]). Only on a machine with buddy allocators (the zones'
    /// migratetypes: `vmemsim validate`'s), where the slab's pageblock fallbacks and boosts
    /// exist. Block devices and buffer-head file systems (ext4) have them; iomap ones (XFS)
    /// do not.
    pub(crate) fn attach_buffers(&mut self, f: FrameId) {
        if self.mm.frames.has_buddies() {
            let per = [crate::mm::slab::BH_PER_SLAB];
            self.slab_alloc(|s| &mut s.bh, f, 0, &per);
        }
    }

    /// Page-cache frame `f` leaves the cache: its buffer head goes (`try_to_free_buffers`
    /// at reclaim, `block_invalidate_folio` at truncation).
    pub(crate) fn detach_buffers(&mut self, f: FrameId) {
        if self.mm.frames.has_buddies() {
            self.slab_free(|s| &mut s.bh, f);
        }
    }

    /// An entry appears at `index` of xarray `xa` where there was none (`xas_store` of a
    /// page into an empty slot: `__filemap_add_folio`, `add_to_swap_cache`), or goes
    /// (`remove`: `xas_store(NULL)`, `page_cache_delete`, `clear_shadow_from_swap_cache`):
    /// the xarray nodes that come or go as `radix_tree_node_cachep` objects
    /// ([`crate::mm::slab`]). Only on machines with buddy allocators.
    fn xa_changed(&mut self, xa: Xa, index: u64, remove: bool) {
        let mut nodes = std::mem::take(&mut self.xa_scratch);
        let shape = self.slabs.xas.entry(xa).or_default();
        if remove {
            shape.remove(index, &mut nodes);
        } else {
            shape.insert(index, &mut nodes);
        }
        if shape.is_empty() {
            self.slabs.xas.remove(&xa);
        }
        for &n in &nodes {
            if remove {
                self.slab_free(|s| &mut s.xa_nodes, (xa, n));
            } else {
                let per = crate::mm::slab::XA_NODES_PER_SLAB;
                let order = crate::mm::slab::XA_NODE_SLAB_ORDER;
                self.slab_alloc(|s| &mut s.xa_nodes, (xa, n), order, &per);
            }
        }
        nodes.clear();
        self.xa_scratch = nodes;
    }

    /// The swap slots taken and freed since the last call ([`crate::mm::swap::Swap`]'s
    /// log): their swap-cache entries (a page or, once reclaimed, its shadow) come and go
    /// with the slot, and with them the swap cache's xarray nodes. Taken at the end of each
    /// reclaim pass (the kernel allocates the nodes in `add_to_swap_cache`, within the pass:
    /// `PF_MEMALLOC`) and when the machine next allocates (the slots freed meanwhile).
    fn sync_swap_xa(&mut self) {
        let Some(mut log) = self.mm.swap.take_slot_log() else {
            return;
        };
        for &(slot, taken) in &log {
            let xa = Xa::Swap(slot >> SWAP_ADDRESS_SPACE_SHIFT);
            self.xa_changed(xa, slot as u64, !taken);
        }
        log.clear();
        self.mm.swap.put_slot_log(log);
    }

    /// After an allocation from zone `z`: its fallbacks between migratetypes, each of which
    /// boosts the zone (`steal_suitable_fallback` → `boost_watermark`: + a pageblock, at
    /// most `max_boost`) and asks for kswapd (`ZONE_BOOSTED_WATERMARK`, which `rmqueue`
    /// turns into `wakeup_kswapd(zone, 0, 0, zone_idx(zone))`; done at the next allocation).
    #[inline]
    fn fallback_done(&mut self, z: usize) {
        let Some(b) = self.mm.frames.buddy_mut(z) else {
            return;
        };
        let n = b.take_boosts();
        let total = b.fallbacks;
        if total != self.fallbacks_seen[z] {
            self.stats.extfrag += total - self.fallbacks_seen[z];
            self.fallbacks_seen[z] = total;
        }
        if n == 0 || self.max_boost[z] == 0 {
            return;
        }
        self.stats.watermark_boosts += n as u64;
        if self.stats.watermark_boosts_zone.len() < self.zones.len() {
            self.stats.watermark_boosts_zone.resize(self.zones.len(), 0);
        }
        self.stats.watermark_boosts_zone[z] += n as u64;
        let pb = crate::mm::buddy::PAGEBLOCK_PAGES;
        self.boost[z] = (self.boost[z] + n * pb).min(self.max_boost[z]);
        self.boost_wake = Some(self.boost_wake.map_or(z, |w| w.max(z)));
    }

    /// The wake a boost asked for, if any (at the start of an allocation).
    #[inline]
    fn boost_wakeup(&mut self) {
        if let Some(z) = self.boost_wake.take() {
            self.wakeup_kswapd_zone(z);
        }
    }

    /// `pgdat_balanced(pgdat, 0, highest)`: some zone up to `highest` is above its high
    /// watermark plus its boost plus its `lowmem_reserve` against `highest`
    /// (`zone_watermark_ok_safe`: none against itself; the lower zones' reserve is the one
    /// given, against the highest zone).
    fn pgdat_balanced_at(&self, highest: usize) -> bool {
        if self.zones.len() == 1 {
            return self.zone_fit(|w| w.high).is_some();
        }
        (0..=highest).any(|z| {
            let (w, reserve) = &self.zones[z];
            let reserve = if z == highest { 0 } else { *reserve };
            self.mm.frames.n_free_zone(z) > w.high + self.boost[z] + reserve
        })
    }

    /// The highest zone: what a page fault's allocation asks kswapd for
    /// (`ac->highest_zoneidx` of `GFP_HIGHUSER_MOVABLE`).
    fn top_zone(&self) -> usize {
        self.zones.len() - 1
    }

    /// `pgdat_watermark_boosted`: a zone up to `highest` has a boost.
    fn pgdat_watermark_boosted(&self, highest: usize) -> bool {
        self.boost[..=highest.min(self.zones.len() - 1)]
            .iter()
            .any(|&b| b > 0)
    }

    /// kswapd's pass size (`kswapd_shrink_node`): Σ max(high + boost, `SWAP_CLUSTER_MAX`)
    /// over the zones it may reclaim from (up to `highest`).
    fn kswapd_nr_to_reclaim(&self, highest: usize) -> u32 {
        self.zones[..=highest]
            .iter()
            .enumerate()
            .map(|(z, (w, _))| (w.high + self.boost[z]).max(SWAP_CLUSTER_MAX))
            .sum()
    }

    /// The zones as reclaim reads them (`None` on a machine with one zone).
    fn zone_marks(&self) -> Option<Box<crate::policy::ZoneMarks>> {
        if self.zones.len() <= 1 {
            return None;
        }
        let mut m = crate::policy::ZoneMarks {
            n: self.zones.len() as u8,
            ..Default::default()
        };
        for (i, (w, reserve)) in self.zones.iter().enumerate() {
            let b = self.boost[i];
            m.z[i] = crate::policy::ZoneMark {
                free: self.mm.frames.n_free_zone(i) as u64,
                min: w.min + b,
                low: w.low + b,
                high: w.high + b,
                reserve: *reserve,
            };
        }
        Some(Box::new(m))
    }

    /// `totalreserve_pages` (`calculate_totalreserve_pages`): per zone its high watermark
    /// plus its largest `lowmem_reserve`, at most its frames.
    pub(crate) fn totalreserve_pages(&self) -> u64 {
        if self.zones.len() == 1 {
            return self.wmark.high as u64;
        }
        let starts = self.mm.frames.zone_starts();
        self.zones
            .iter()
            .enumerate()
            .map(|(i, (w, r))| {
                let end = starts.get(i + 1).copied().unwrap_or(self.mm.frames.len());
                ((w.high + r) as u64).min((end - starts[i]) as u64)
            })
            .sum()
    }
    pub fn page_cluster(&self) -> u8 {
        self.page_cluster
    }

    /// Serve one access. `next_use` is the index of the next access to the same page (for OPT),
    /// `u64::MAX` when unknown or none.
    ///
    /// An access by `get_user_pages` ([`Access::gup`]) follows `internal_get_user_pages_fast`
    /// (mm/gup.c, the same in 6.1 and 6.8), a run of consecutive ones being one call: the
    /// lockless walk (`lockless_pages_from_mm` → `gup_pte_range`) pins pages that are present
    /// (and writable, for `FOLL_WRITE`: an anonymous PTE is writable once written, as
    /// `do_anonymous_page` and `do_wp_page` make it dirty with it; `do_swap_page` on a read
    /// fault maps it read-only) and changes nothing else: no accessed bit, no reference. At
    /// the first page it cannot take, the rest of the range goes to `__get_user_pages` with
    /// `FOLL_TOUCH`: each page not present is faulted in (`faultin_page`, a write fault for
    /// `FOLL_WRITE`), one mapped read-only is made writable (`do_wp_page`, which leaves the
    /// PTE young), and every page of that rest, present ones too, is marked accessed
    /// (`follow_page_pte` → `mark_page_accessed`, [`Policy::mark_accessed`]). Left out: the
    /// device's writes set no accessed bit, and none is modelled.
    #[inline(always)]
    pub fn access(&mut self, a: Access, next_use: u64) {
        if a.gup {
            return self.gup_access(a, next_use);
        }
        let mut vpn = a.page;
        if vpn >= VPN_LIMIT {
            vpn = self.remap_id(vpn);
        }
        let touch = Touch {
            t: self.t,
            next_use,
            vpn,
            write: a.write,
        };
        self.t += 1;
        self.stats.accesses += 1;
        if a.write {
            self.stats.writes += 1;
        } else {
            self.stats.reads += 1;
        }
        let idx = self.mm.pt.walk_index(vpn);
        let pte = self.mm.pt.at(idx);
        if *pte & PTE_PRESENT != 0 {
            // A store to a page mapped read-only (clean) is a write-protect fault.
            let wp = a.write & (*pte & PTE_DIRTY == 0);
            self.stats.pgfault += wp as u64;
            if wp && self.mm.frames.flags(pte_frame(*pte)) & F_PAGECACHE != 0 {
                // A page-cache page a file mapping maps read-only (`do_wp_page`).
                self.file_wp_fault(touch, idx);
                return self.checked(touch);
            }
            let pte = self.mm.pt.at(idx);
            *pte |= PTE_ACCESSED | if a.write { PTE_DIRTY } else { 0 };
            // (kernel policies learn of hits only from the accessed bit: their `on_hit` is
            // empty by contract, and not called through a `dyn Policy`)
            if self.family == Family::Demand {
                self.policy.on_hit(pte_frame(*pte), touch);
            }
        } else {
            self.fault(touch, idx);
        }
        self.checked(touch)
    }

    #[inline(always)]
    fn checked(&self, touch: Touch) {
        if self.check {
            self.validate()
                .unwrap_or_else(|e| panic!("invariant broken after access {}: {e}", touch.t));
        }
    }

    /// One page of a `get_user_pages` call (see [`Machine::access`]).
    #[cold]
    #[inline(never)]
    fn gup_access(&mut self, a: Access, next_use: u64) {
        let mut vpn = a.page;
        if vpn >= VPN_LIMIT {
            vpn = self.remap_id(vpn);
        }
        let touch = Touch {
            t: self.t,
            next_use,
            vpn,
            write: a.write,
        };
        if self.gup_last_t == u64::MAX || self.gup_last_t.wrapping_add(1) != self.t {
            // A new call: its lockless walk starts at this page.
            self.gup_slow = false;
        }
        self.gup_last_t = self.t;
        self.t += 1;
        self.stats.accesses += 1;
        if a.write {
            self.stats.writes += 1;
        } else {
            self.stats.reads += 1;
        }
        self.stats.gup_pages += 1;
        let idx = self.mm.pt.walk_index(vpn);
        let pte = *self.mm.pt.at(idx);
        let present = pte & PTE_PRESENT != 0;
        // `gup_pte_range`: `pte_access_permitted(pte, FOLL_WRITE)`.
        let pinnable = present && (!a.write || pte & PTE_DIRTY != 0);
        if !self.gup_slow && pinnable {
            return;
        }
        self.gup_slow = true;
        self.stats.gup_touched += 1;
        if !present {
            // `faultin_page` → `handle_mm_fault`.
            self.fault(touch, idx);
        } else if !pinnable && self.mm.frames.flags(pte_frame(pte)) & F_PAGECACHE != 0 {
            // A file mapping's read-only page-cache page (`do_wp_page`, `engine::filemap`).
            self.stats.pgfault += 1;
            self.file_wp_fault(touch, idx);
        } else if !pinnable {
            // `faultin_page` with FAULT_FLAG_WRITE on a read-only PTE: `do_wp_page` reuses
            // the exclusive anonymous page, PTE young and dirty, slot kept.
            *self.mm.pt.at(idx) |= PTE_ACCESSED | PTE_DIRTY;
            self.stats.pgfault += 1;
            self.policy.on_hit(pte_frame(pte), touch);
        }
        let pte = *self.mm.pt.at(idx);
        if pte & PTE_PRESENT != 0 {
            // `follow_page_pte` with FOLL_TOUCH: `mark_page_accessed`.
            self.policy.mark_accessed(&self.mm, pte_frame(pte), touch);
        }
        if self.check {
            self.validate()
                .unwrap_or_else(|e| panic!("invariant broken after access {}: {e}", touch.t));
        }
    }

    /// Serve a slice of accesses, prefetching the PTEs (`PTE_AHEAD` accesses ahead) and the
    /// policy's per-frame data (`POLICY_AHEAD` ahead) of what follows, so the memory-bound
    /// walk and list updates overlap. Same results as calling [`Machine::access`] in order.
    pub fn access_all(&mut self, accesses: &[Access]) {
        const PTE_AHEAD: usize = 16;
        const POLICY_AHEAD: usize = 6;
        let n = accesses.len();
        for i in 0..n {
            if i + PTE_AHEAD < n {
                if let Some(idx) = self.mm.pt.peek_index(accesses[i + PTE_AHEAD].page) {
                    self.mm.pt.prefetch(idx);
                }
            }
            if i + POLICY_AHEAD < n {
                if let Some(idx) = self.mm.pt.peek_index(accesses[i + POLICY_AHEAD].page) {
                    let pte = self.mm.pt.get(idx);
                    if pte & PTE_PRESENT != 0 {
                        self.policy.prefetch(pte_frame(pte));
                    } else if pte & PTE_SWAP != 0 {
                        self.mm.swap.prefetch(pte_payload(pte) as u32);
                    }
                }
            }
            self.access(accesses[i], u64::MAX);
        }
    }

    #[cold]
    fn remap_id(&mut self, id: u64) -> u64 {
        let n = self.remap.len() as u64;
        *self.remap.entry(id).or_insert(REMAP_BASE + n)
    }

    #[inline(never)]
    fn fault(&mut self, touch: Touch, idx: PteIndex) {
        self.fault_page(touch, idx);
        if self.zram.is_some() {
            // Slots the fault freed (a swap-in of zram frees its slot) release their objects.
            self.zram_sync();
        }
    }

    /// Hand the swap I/O logged since the last call to the zram device, in order, and hold
    /// its pool's pages back from the free list (`zs_malloc` takes whole pages for its
    /// zspages; freeing objects gives pages back). Returns the pages that did not fit in free
    /// memory (0 when the pool fits).
    fn zram_sync(&mut self) -> u32 {
        use crate::device::{IoKind, SwapDevice};
        let Some(z) = self.zram.as_mut() else {
            return 0;
        };
        if self.mm.swap.device.has_log() {
            self.mm.swap.device.take_log(&mut z.io);
            for &io in &z.io {
                match io {
                    // `zram_write_page`: the page's content decides its compressed length.
                    SwapIo::Write { slot } => {
                        z.dev.submit(0, IoKind::Write, slot as u64, &[z.class]);
                    }
                    SwapIo::Discard { slot } => z.dev.discard(slot as u64, 1),
                    // Reads leave the pool as it is.
                    SwapIo::Read { .. } => {}
                }
            }
        }
        let pages = z.dev.ram_bytes().div_ceil(4096);
        self.stats.zram_mem_used_max = self.stats.zram_mem_used_max.max(pages * 4096);
        self.mm
            .frames
            .set_reserved(pages.min(u32::MAX as u64) as u32)
    }

    fn fault_page(&mut self, touch: Touch, idx: PteIndex) {
        let vpn = touch.vpn;
        self.stats.faults += 1;
        self.stats.pgfault += 1;
        let old = *self.mm.pt.at(idx);
        if old == 0 && !self.mm.maps.is_empty() {
            if let Some(&map) = self.mm.maps.find(vpn) {
                if self.filemap_do_fault(touch, idx, map) {
                    return;
                }
            }
        }
        let anon = matches!(self.mm.vmas.kind(vpn), VmaKind::Anon);
        let dirty = if touch.write { PTE_DIRTY } else { 0 };

        if old & PTE_SWAP != 0 {
            let slot = pte_payload(old) as u32;
            let cached = self.mm.swap.cached_frame(slot);
            if cached != NO_FRAME {
                // Swap-cache hit: the page was read ahead, or is still in the swap cache after
                // a swap-out (kept under writeback, or its write failed); map it without I/O.
                // `swap_cache_get_folio`: only a page read ahead (`PG_readahead`, cleared
                // here) is a readahead hit and widens the next window.
                self.stats.minor_faults += 1;
                self.stats.swapcache_hits += 1;
                let readahead = self.mm.frames.flags(cached) & F_READAHEAD != 0;
                if readahead {
                    self.mm.frames.clear_flags(cached, F_READAHEAD);
                    self.stats.swap_ra_hit += 1;
                    self.log_swap(SwapEvent::ReadAheadHit { vpn });
                }
                if self.vma_ra.is_some() {
                    // Every hit moves the VMA's readahead address to this page; a readahead
                    // hit also counts toward its next window.
                    let r = self.vma_readahead_state(vpn);
                    r.page = vpn;
                    r.hits = (r.hits + readahead as u32).min(SWAP_RA_HITS_MAX);
                } else if readahead {
                    self.ra.hits += 1;
                }
                *self.mm.pt.at(idx) = make_present(cached) | PTE_ACCESSED | dirty;
                self.mm.frames.set_flags(cached, F_MAPPED);
                // `should_try_to_free_swap` → `folio_free_swap`, which keeps the slot of a
                // folio under writeback (timed runs: writes completed by now are ended
                // first, as they were in time).
                if self.mm.wb.is_some() {
                    self.end_writebacks();
                }
                if (touch.write || self.mm.swap.vm_swap_full()) && !self.mm.under_writeback(cached)
                {
                    self.drop_swap_slot(cached);
                }
                self.policy.on_hit(cached, touch);
                self.update_peak();
                return;
            }
            self.stats.major_faults += 1;
            let shadow = self.mm.swap.shadow(slot);
            let Some(f) = self.alloc_frame(touch, idx, F_ANON) else {
                return;
            };
            self.count_refault(shadow, false);
            self.log_swap(SwapEvent::In { vpn, slot });
            if self.swap_sync_io {
                // `do_swap_page`, SWP_SYNCHRONOUS_IO with a swap count of 1: read the page
                // into a new folio outside the swap cache, then `swap_free` the entry. The
                // page must be written out again when it is next reclaimed.
                self.mm.swap.device.submit(SwapIo::Read { slot, n: 1 });
                self.stats.pswpin += 1;
                self.stats.pgpgin += 4;
                self.mm.swap.free(slot);
                *self.mm.pt.at(idx) = make_present(f) | PTE_ACCESSED | dirty;
                self.mm.frames.set_flags(f, F_MAPPED);
            } else {
                self.mm.frames.set_flags(f, F_SWAPCACHE);
                self.mm.frames.set_slot(f, slot);
                self.mm.swap.set_cached_frame(slot, f);
                let n_read = 1 + if self.vma_ra.is_some() {
                    self.swap_vma_readahead(vpn, slot)
                } else {
                    self.swap_readahead(slot)
                };
                self.stats.pswpin += n_read as u64;
                self.stats.pgpgin += 4 * n_read as u64;
                *self.mm.pt.at(idx) = make_present(f) | PTE_ACCESSED | dirty;
                self.mm.frames.set_flags(f, F_MAPPED);
                // `do_swap_page` → `should_try_to_free_swap`: a write fault frees the slot,
                // and so does any fault while swap is more than half full (`vm_swap_full`,
                // via `mem_cgroup_swap_full`); a read fault otherwise leaves the page in the
                // swap cache with its slot, to be written back there when it is dirtied.
                if touch.write || self.mm.swap.vm_swap_full() {
                    self.drop_swap_slot(f);
                }
            }
            self.policy
                .on_insert(&self.mm, f, touch, Insert::Refault { shadow });
        } else if old & PTE_NAMED_GONE != 0 {
            // A named page reclaim dropped (`Machine::named`): `filemap_fault` reads its
            // block from the file; the page stays a private, unwritten copy (anonymous here).
            self.stats.major_faults += 1;
            self.stats.file_reads += 1;
            self.stats.pgpgin += 4;
            let shadow = pte_payload(old) as u32;
            let Some(f) = self.alloc_frame(touch, idx, F_ANON) else {
                return;
            };
            self.count_refault(shadow, true);
            self.log_swap(SwapEvent::NamedIn { vpn });
            *self.mm.pt.at(idx) = make_present(f) | PTE_ACCESSED | dirty;
            self.mm.frames.set_flags(f, F_MAPPED);
            // (the page-cache page `filemap_fault` read: a file page for the LRU lists,
            // unless the layer above has since had it written: its anonymous copy)
            if self.named.as_ref().is_some_and(|n| n.contains(&vpn)) {
                self.policy.set_file_lru(&self.mm, f, true);
            }
            self.policy
                .on_insert(&self.mm, f, touch, Insert::Refault { shadow });
        } else if old & PTE_FILE_GONE != 0 {
            self.stats.major_faults += 1;
            self.stats.file_reads += 1;
            self.stats.pgpgin += 4;
            let shadow = pte_payload(old) as u32;
            let Some(f) = self.alloc_frame(touch, idx, 0) else {
                return;
            };
            self.stats.nr_file_pages += 1;
            self.count_refault(shadow, true);
            *self.mm.pt.at(idx) = make_present(f) | PTE_ACCESSED | dirty;
            self.mm.frames.set_flags(f, F_MAPPED);
            self.policy
                .on_insert(&self.mm, f, touch, Insert::Refault { shadow });
        } else {
            self.stats.first_touch += 1;
            if anon {
                self.stats.minor_faults += 1;
            } else {
                self.stats.major_faults += 1;
                self.stats.file_reads += 1;
                self.stats.pgpgin += 4;
            }
            let Some(f) = self.alloc_frame(touch, idx, if anon { F_ANON } else { 0 }) else {
                return;
            };
            self.stats.nr_file_pages += !anon as u64;
            *self.mm.pt.at(idx) = make_present(f) | PTE_ACCESSED | dirty;
            self.mm.frames.set_flags(f, F_MAPPED);
            self.policy
                .on_insert(&self.mm, f, touch, Insert::FirstTouch);
        }
        self.update_peak();
    }

    /// `workingset_refault` (mm/workingset.c), called for every page read in from swap (the
    /// faulting one and readahead's, in `__read_swap_cache_async`, or `do_swap_page` on a
    /// synchronous device) or a file, with its shadow: counts `workingset_refault_anon` /
    /// `_file`. Linux 6.8 counts every such refault; 6.1's MG-LRU (`lru_gen_refault`) only
    /// those whose shadow is from the current `min_seq` ([`Policy::refault_is_recent`]).
    #[inline]
    fn count_refault(&mut self, shadow: u32, file: bool) {
        if self.kernel == KernelVersion::V6_1 && !self.policy.refault_is_recent(shadow, file) {
            return;
        }
        if file {
            self.stats.workingset_refault_file += 1;
        } else {
            self.stats.workingset_refault_anon += 1;
        }
    }

    #[inline]
    fn update_peak(&mut self) {
        let resident = (self.mm.frames.len() - self.mm.frames.n_free()) as u64;
        if resident > self.stats.peak_resident {
            self.stats.peak_resident = resident;
        }
    }

    /// Forget the swap copy of a page that is about to be dirtied (`folio_free_swap`).
    fn drop_swap_slot(&mut self, f: FrameId) {
        let slot = self.mm.frames.slot(f);
        if slot != NO_SLOT {
            self.mm.swap.free(slot);
            self.mm.frames.set_slot(f, NO_SLOT);
            self.mm.frames.clear_flags(f, F_SWAPCACHE);
        }
    }

    /// Read the other slots of the swap readahead window into the swap cache
    /// (`swap_cluster_readahead`): the aligned window of [`swapin_nr_pages`] slots around the
    /// faulting one. Only free frames are used (above `min` for kernel policies): readahead
    /// never reclaims here. The kernel takes this path when a swap device is rotational
    /// (`swap_use_vma_readahead` is false while `nr_rotate_swap` > 0); on non-rotational ones
    /// it reads ahead by virtual address instead ([`Machine::swap_vma_readahead`]).
    fn swap_readahead(&mut self, slot: u32) -> u32 {
        let pages = swapin_nr_pages(&mut self.ra, slot, 1 << self.page_cluster);
        if pages <= 1 {
            self.mm.swap.device.submit(SwapIo::Read { slot, n: 1 });
            return 0;
        }
        let start = slot & !(pages - 1);
        let end = (start + pages).min(self.mm.swap.n_slots());
        let mut n = 0;
        for s in start..end {
            if s == slot {
                continue;
            }
            let Some(zone) = self.ra_zone() else {
                continue;
            };
            let Some(pidx) = self.mm.swap.owner(s) else {
                continue;
            };
            if self.mm.swap.cached_frame(s) != NO_FRAME {
                continue;
            }
            let owner = self.mm.pt.vpn_of(pidx);
            let Some(f) = self.take_frame(zone, pidx, F_ANON | F_SWAPCACHE | F_READAHEAD) else {
                break;
            };
            self.mm.frames.set_slot(f, s);
            self.mm.swap.set_cached_frame(s, f);
            let touch = Touch {
                t: self.t,
                next_use: u64::MAX,
                vpn: owner,
                write: false,
            };
            self.count_refault(self.mm.swap.shadow(s), false);
            self.policy.on_insert(&self.mm, f, touch, Insert::Readahead);
            self.log_swap(SwapEvent::ReadAhead { vpn: owner });
            n += 1;
        }
        self.mm.swap.device.submit(SwapIo::Read {
            slot: start,
            n: end - start,
        });
        self.stats.swap_ra += n as u64;
        n
    }

    /// Page numbers from `start` (up to the next range's start) belong to address space
    /// `owner` (see `address_spaces`; the VM layer calls this as it places a process's
    /// region or a VM's memory).
    pub fn set_address_space(&mut self, start: u64, owner: u32) {
        let i = self.address_spaces.partition_point(|&(s, _)| s < start);
        if self.address_spaces.get(i).is_some_and(|&(s, _)| s == start) {
            self.address_spaces[i].1 = owner;
        } else {
            self.address_spaces.insert(i, (start, owner));
        }
    }

    /// The key of the implicit anonymous VMA of `vpn`'s address space: `u64::MAX` for the
    /// first (or only) one, a key no VMA start can be for the others.
    fn implicit_vma(&self, vpn: u64) -> u64 {
        let i = self.address_spaces.partition_point(|&(s, _)| s <= vpn);
        match i.checked_sub(1).map(|i| self.address_spaces[i].1) {
            Some(o) if o != 0 => (1 << 63) | o as u64,
            _ => u64::MAX,
        }
    }

    /// The readahead state of the VMA holding `vpn` (created as a fresh VMA's). The implicit
    /// anonymous VMA's of the first address space is found without a lookup.
    fn vma_readahead_state(&mut self, vpn: u64) -> &mut VmaReadahead {
        let implicit = self.implicit_vma(vpn);
        let key = if self.mm.vmas.is_empty() {
            implicit
        } else {
            self.mm.vmas.find(vpn).map_or(implicit, |v| v.start)
        };
        let ra = self.vma_ra.get_or_insert_with(VmaRa::default);
        if key == u64::MAX {
            return &mut ra.first;
        }
        ra.others.entry(key).or_default()
    }

    /// VMA-based swap readahead (`swap_vma_readahead` with `swap_ra_info`, Linux 6.1 and 6.8):
    /// the window is sized by [`swapin_window`] from the VMA's last fault or hit page, its last
    /// window and its readahead hits (reset here), at most 2^min(page-cluster, 5) pages, and
    /// placed around the faulting virtual page: forward after a fault on the next page,
    /// backward after one on the previous page, else with (win - 1) / 2 pages before it;
    /// then clamped to the VMA and to the fault's page table (2 MiB). Every swapped-out page of
    /// the window not already in the swap cache is read into it (`PG_readahead` on all but the
    /// faulting one), in address order, reads of consecutive slots merged into one request
    /// (the block plug): the window is virtual, the slots anywhere.
    /// Only free frames are used (above `min` for kernel policies), as in the cluster path.
    /// Returns the pages read besides the faulting one.
    fn swap_vma_readahead(&mut self, vpn: u64, slot: u32) -> u32 {
        let max_win = 1u32 << self.page_cluster.min(SWAP_RA_ORDER_CEILING);
        if max_win == 1 {
            self.mm.swap.device.submit(SwapIo::Read { slot, n: 1 });
            return 0; // the VMA's state is not updated
        }
        let (vm_start, vm_end) = if self.mm.vmas.is_empty() {
            (0, u64::MAX)
        } else {
            self.mm
                .vmas
                .find(vpn)
                .map_or((0, u64::MAX), |v| (v.start, v.end))
        };
        let r = self.vma_readahead_state(vpn);
        let prev = *r;
        let win = swapin_window(prev.page, vpn, prev.hits, max_win, prev.win);
        *r = VmaReadahead {
            page: vpn,
            win,
            hits: 0,
        };
        if win == 1 {
            self.mm.swap.device.submit(SwapIo::Read { slot, n: 1 });
            return 0;
        }
        let w = win as u64;
        let (lpfn, rpfn) = if vpn == prev.page.wrapping_add(1) {
            (vpn, vpn + w)
        } else if prev.page == vpn.wrapping_add(1) {
            ((vpn + 1).saturating_sub(w), vpn + 1)
        } else {
            let left = (w - 1) / 2;
            (vpn.saturating_sub(left), vpn + w - left)
        };
        let pmd = vpn & !511;
        let start = lpfn.max(vm_start).max(pmd);
        let end = rpfn.min(vm_end).min(pmd + 512);
        // The reads go out in address order under one block plug, where the block layer
        // merges those of consecutive slots into one request.
        let mut run: Option<(u32, u32)> = None;
        let mut n = 0;
        let mut full = false;
        for v in start..end {
            let s = if v == vpn {
                slot
            } else {
                if full {
                    continue;
                }
                let Some(zone) = self.ra_zone() else {
                    continue;
                };
                let Some(pidx) = self.mm.pt.find_index(v) else {
                    continue;
                };
                let pte = self.mm.pt.get(pidx);
                if pte & PTE_SWAP == 0 {
                    continue;
                }
                let s = pte_payload(pte) as u32;
                if self.mm.swap.cached_frame(s) != NO_FRAME {
                    continue;
                }
                let Some(f) = self.take_frame(zone, pidx, F_ANON | F_SWAPCACHE | F_READAHEAD)
                else {
                    full = true;
                    continue;
                };
                self.mm.frames.set_slot(f, s);
                self.mm.swap.set_cached_frame(s, f);
                let touch = Touch {
                    t: self.t,
                    next_use: u64::MAX,
                    vpn: v,
                    write: false,
                };
                self.count_refault(self.mm.swap.shadow(s), false);
                self.policy.on_insert(&self.mm, f, touch, Insert::Readahead);
                self.log_swap(SwapEvent::ReadAhead { vpn: v });
                n += 1;
                s
            };
            run = match run {
                Some((first, len)) if first.wrapping_add(len) == s => Some((first, len + 1)),
                Some((first, len)) => {
                    self.mm.swap.device.submit(SwapIo::Read {
                        slot: first,
                        n: len,
                    });
                    Some((s, 1))
                }
                None => Some((s, 1)),
            };
        }
        if let Some((first, len)) = run {
            self.mm.swap.device.submit(SwapIo::Read {
                slot: first,
                n: len,
            });
        }
        self.stats.swap_ra += n as u64;
        n
    }

    /// Take a free frame for the faulting page, reclaiming first as the policy's family requires.
    /// The policy hears of the miss ([`Policy::on_miss`]) before it may be asked for a victim.
    /// `None` when nothing can be reclaimed (where the kernel would OOM-kill): the run stops
    /// with an error (see [`Machine::out_of_memory`]).
    fn alloc_frame(&mut self, touch: Touch, idx: PteIndex, flags: u8) -> Option<FrameId> {
        self.policy.on_miss(touch);
        match self.family {
            Family::Demand => {
                // One eviction frees one frame, unless zram's pool takes it: the pool's pages
                // are reserved first, then the page gets what is left.
                loop {
                    if self.zram.is_some() {
                        self.zram_sync();
                    }
                    if self.mm.frames.n_free() > 0 {
                        break;
                    }
                    let Some(v) = self.policy.evict(&mut self.mm) else {
                        if self.notify_oom() {
                            continue;
                        }
                        self.oom_at = Some(touch.t);
                        return None;
                    };
                    if !self.reclaim_frame(v) {
                        // Its swap-out failed (no memory for zram's pool): nothing to free.
                        self.oom_at = Some(touch.t);
                        return None;
                    }
                    // Speed only, while the program runs on to its next misses: the PTE of
                    // the next victim (its record was fetched one eviction ago) and the
                    // record and links of the one after.
                    if let Some(next) = self.policy.victim_hint(0) {
                        self.mm.pt.prefetch(self.mm.frames.pte(next));
                    }
                    if let Some(after) = self.policy.victim_hint(1) {
                        self.mm.frames.prefetch(after);
                        self.policy.prefetch_victim(after);
                    }
                }
            }
            Family::Kernel => {
                self.sync_swap_xa();
                self.boost_wakeup();
                // The fast path: a zone above its low watermark (plus reserve); when none
                // is, `__alloc_pages_slowpath` wakes kswapd and retries against min.
                if let Some(z) = self.zone_fit(|w| w.low) {
                    return self.take_frame(z, idx, flags);
                }
                self.wakeup_kswapd();
                // The allocation fails while free ≤ min (`__zone_watermark_ok` at
                // ALLOC_WMARK_MIN): `__alloc_pages_direct_reclaim` → `try_to_free_pages` →
                // `do_try_to_free_pages`, one call (one `allocstall`) per failed try. A call
                // runs `shrink_zones` (here one node: `shrink_node`) at sc->priority =
                // DEF_PRIORITY, then 11, ... until `sc->nr_reclaimed`, summed over its passes,
                // reaches `nr_to_reclaim` (SWAP_CLUSTER_MAX) or the pass at priority 0 is
                // done: it never looks at the watermark, so it does not stop once free > min.
                // (6.1's MG-LRU `should_abort_scan` adds MIN_LRU_BATCH to sc->nr_reclaimed
                // when free memory reaches the low watermark, which ends the call too.)
                // `__alloc_pages_slowpath` then retries the allocation, and while it still
                // fails, reclaims again (`should_reclaim_retry`); after MAX_RECLAIM_RETRIES
                // calls in a row that freed nothing, the OOM killer.
                let mut retries = 0;
                let mut reclaimed_directly = false;
                let mut zone = self.zone_fit(|w| w.min);
                while zone.is_none() {
                    if reclaimed_directly {
                        self.policy.reclaim_done(ReclaimReason::Direct);
                    }
                    self.stats.allocstall += 1;
                    reclaimed_directly = true;
                    let mut got = 0u64; // sc->nr_reclaimed
                    for priority in (0..=DEF_PRIORITY).rev() {
                        got = self
                            .shrink(ReclaimReason::Direct, SWAP_CLUSTER_MAX, priority, got)
                            .2;
                        if got >= SWAP_CLUSTER_MAX as u64 {
                            break;
                        }
                        if priority == 1 && got == 0 {
                            self.throttle_noprogress();
                        }
                    }
                    zone = self.zone_fit(|w| w.min);
                    if zone.is_none() && got > 0 && self.mm.frames.has_buddies() {
                        // `__alloc_pages_direct_reclaim`: an allocation that still fails
                        // after reclaim made progress drains the per-CPU lists
                        // (`drain_all_pages`) and tries again.
                        self.mm.frames.drain_pcp();
                        zone = self.zone_fit(|w| w.min);
                    }
                    if got > 0 {
                        retries = 0;
                        continue;
                    }
                    if zone.is_none() && self.mm.frames.n_free() > 0 {
                        // Below min but nothing reclaimable: use the reserve (no OOM kill
                        // here), from the highest zone that has a page.
                        zone = (0..self.zones.len())
                            .rev()
                            .find(|&z| self.mm.frames.n_free_zone(z) > 0);
                        break;
                    }
                    retries += 1;
                    if retries >= MAX_RECLAIM_RETRIES {
                        // `__alloc_pages_may_oom` → `out_of_memory`: the notifiers first;
                        // if one freed pages, no kill and the allocation retries from
                        // scratch (`no_progress_loops = 0`).
                        if self.notify_oom() {
                            retries = 0;
                            continue;
                        }
                        self.policy.reclaim_done(ReclaimReason::Direct);
                        self.oom_at = Some(touch.t);
                        return None;
                    }
                }
                if reclaimed_directly {
                    self.policy.reclaim_done(ReclaimReason::Direct);
                }
                return self.take_frame(zone?, idx, flags);
            }
        }
        self.mm.frames.alloc(idx, flags)
    }

    /// `consider_reclaim_throttle` after direct reclaim's pass at priority 1 freed nothing
    /// (Linux 6.1 and 6.8): `reclaim_throttle(pgdat, VMSCAN_THROTTLE_NOPROGRESS)` sleeps a
    /// jiffy unless `skip_throttle_noprogress` (pages waiting to be written, `2 *
    /// NR_ZONE_WRITE_PENDING`, at most the reclaimable ones: here the swap writes in flight
    /// against the frames in use). Only with a write sink, where time passes in the machine
    /// ([`Machine::set_write_sink`]); the writes that completed meanwhile are then rotated.
    fn throttle_noprogress(&mut self) {
        let Some(w) = self.mm.wb.as_ref() else {
            return;
        };
        let f = &self.mm.frames;
        let reclaimable = (f.len() - f.n_free() - f.reserved()) as u64;
        if 2 * w.n <= reclaimable {
            return;
        }
        self.mm.now += JIFFY_NS;
        self.stats.reclaim_throttled += 1;
        self.stats.reclaim_throttle_ns += JIFFY_NS;
        self.end_writebacks();
    }

    /// Classic LRU's `shrink_node` after a kswapd pass (Linux 6.1 and 6.8; MG-LRU's
    /// `lru_gen_shrink_node` returns before it): when every folio the pass took was under
    /// writeback (`sc->nr.writeback == sc->nr.taken`), `PGDAT_WRITEBACK` is set, and a pass
    /// that met folios marked for immediate reclaim under it (`sc->nr.immediate`) ends in
    /// `reclaim_throttle(pgdat, VMSCAN_THROTTLE_WRITEBACK)`: kswapd sleeps until 32 more
    /// pages have finished writeback or 100 ms have passed ([`crate::mm::Writeback::throttle_until`]).
    fn kswapd_writeback_throttle(&mut self) {
        let now = self.mm.now;
        let Some(w) = self.mm.wb.as_mut() else {
            return;
        };
        if w.nr_writeback > 0 && w.nr_writeback == w.nr_taken {
            w.pgdat_writeback = true;
        }
        if w.nr_immediate > 0 && self.kswapd_sleeps {
            let until = w.throttle_until(now);
            self.kswapd_throttle = Some(until);
            self.stats.kswapd_throttled += 1;
            self.stats.kswapd_throttle_ns += until - now;
        }
    }

    /// kswapd is a thread of the timing engine that sleeps when `reclaim_throttle` says so
    /// ([`Machine::take_kswapd_throttle`]); without it (a guest's or a host's kswapd in a VM
    /// run) the throttle is left out.
    pub fn enable_kswapd_throttle(&mut self) {
        self.kswapd_sleeps = true;
    }

    /// Whether kswapd's last pass ended throttled on writeback, and until when (taken once).
    pub fn take_kswapd_throttle(&mut self) -> Option<u64> {
        self.kswapd_throttle.take()
    }

    /// `out_of_memory`'s `blocking_notifier_call_chain(&oom_notify_list)`: the frames the
    /// notifier gave back go to the free list. Whether any did.
    fn notify_oom(&mut self) -> bool {
        let Some(n) = self.oom_notifier.as_mut() else {
            return false;
        };
        let freed = n.notify();
        for &f in &freed {
            self.mm.frames.give_back(f);
        }
        !freed.is_empty()
    }

    /// Register the OOM notifier (one: the chain of a kernel with one balloon device).
    pub fn set_oom_notifier(&mut self, n: Box<dyn OomNotifier>) {
        self.oom_notifier = Some(n);
    }

    /// Timed runs: hold every swap write in flight until the device completes it, as the
    /// kernel does (Linux 6.1 and 6.8). Without a sink (untimed replays) a write completes
    /// within the pass that issued it or as it ends ([`crate::policy::swap_plug`],
    /// `Insert::Rotate`). With one, on a kernel policy and an asynchronous device (not zram):
    ///
    /// - time passes during reclaim: each batch (`shrink_folio_list` call) moves `mm.now` on
    ///   by its work, `scan_ns` per page scanned and `reclaim_ns` per victim unmapped,
    ///   written or freed ([`Mm::reclaim_work`]: a written folio pays at its write, not again
    ///   when a later batch frees it; the costs the layer above charges the reclaiming thread
    ///   for it afterwards, [`Mm::reclaim_time`], `Stats::reclaim_work_*`);
    /// - the writes go to `sink` when the block layer's plug dispatches them: a flush during
    ///   the pass ([`crate::policy::swap_plug::SwapPlug`]) or `blk_finish_plug` as the pass
    ///   ends, at `mm.now`; the device answers when each completes;
    /// - a batch's end rotates the folios whose writes have completed by then (as the untimed
    ///   plug does at once); a written folio whose write is still in flight when the pass
    ///   ends goes back on its list under writeback ([`Insert::Writeback`]);
    /// - a scan that meets a folio under writeback does not free it (classic LRU activates
    ///   it, MG-LRU's `sort_folio` moves it to the next generation);
    /// - when its write completes, `folio_end_writeback` → `folio_rotate_reclaimable` moves
    ///   it to its list's tail ([`Policy::rotate_reclaimable`]; processed between a pass's
    ///   batches, [`crate::policy::end_writebacks_in_pass`], before the next pass and at a
    ///   swap-cache fault, [`Machine::end_writebacks`]), and the next scan frees it;
    /// - direct reclaim that freed nothing by priority 1 while writes are pending sleeps a
    ///   jiffy (`consider_reclaim_throttle` → `reclaim_throttle(.., NOPROGRESS)`, unless
    ///   `skip_throttle_noprogress`: pages under writeback at most half the reclaimable
    ///   ones), `mm.now` moving on by [`JIFFY_NS`] ([`Stats::reclaim_throttle_ns`], time the
    ///   layer above adds to the allocating thread's clock).
    ///
    /// - classic LRU's kswapd may end a pass in `reclaim_throttle(..,
    ///   VMSCAN_THROTTLE_WRITEBACK)` (`Machine::kswapd_writeback_throttle`), a sleep the
    ///   timing engine gives a native kswapd ([`Machine::enable_kswapd_throttle`]).
    ///
    /// Left out: that sleep for a guest's or the host's kswapd, an early wake-up of a
    /// throttled reclaimer by another's progress, MG-LRU's aging walks' time within a pass, and MG-LRU's
    /// `evict_folios` retry of a folio whose write completed before its batch's putback.
    pub fn set_write_sink(&mut self, sink: Box<dyn WriteSink>, scan_ns: u64, reclaim_ns: u64) {
        if self.family != Family::Kernel || self.swap_sync_io {
            return;
        }
        let mut w = crate::mm::Writeback::new(self.mm.frames.len());
        w.sink = Some(sink);
        w.scan_ns = scan_ns;
        w.reclaim_ns = reclaim_ns;
        self.mm.wb = Some(w);
        self.mm.swap.device.log_on = true;
    }

    /// `folio_end_writeback` for every swap write completed by `mm.now`: a folio that is on
    /// its list, not locked and not dirty (`folio_rotate_reclaimable`) moves to the tail
    /// (`PGROTATED`).
    pub fn end_writebacks(&mut self) {
        while let Some((f, ok)) = self.mm.next_written_back() {
            if ok && self.policy.rotate_reclaimable(&self.mm, f) {
                self.stats.pgrotated += 1;
            }
        }
    }

    /// Run without swap space: reclaim takes only file pages, and a guest whose memory is
    /// all anonymous and in use runs out of memory.
    pub fn set_swap_off(&mut self, off: bool) {
        self.swap_off = off;
    }

    /// One page for a kernel user that keeps it off the LRU lists, allocated as
    /// `balloon_page_alloc` does (Linux 6.8 `mm/balloon_compaction.c`: `GFP_HIGHUSER_MOVABLE
    /// | __GFP_NOMEMALLOC | __GFP_NORETRY`): kswapd is woken at the low watermark; below
    /// min, one direct reclaim call (`__alloc_pages_direct_reclaim`, the same priority
    /// cascade as a fault's), then, still at or below min, failure: no retry
    /// (`__GFP_NORETRY`), no OOM kill, no reserves (`__GFP_NOMEMALLOC`). The direct
    /// compaction attempt that precedes the failure is left out (no compaction here). Under
    /// a demand policy (no watermarks), one eviction when no frame is free. The frame is
    /// taken off the free list ([`crate::mm::Frames::take`]) until
    /// [`Machine::free_held_frame`].
    pub fn alloc_noretry(&mut self) -> Option<FrameId> {
        match self.family {
            Family::Demand => {
                if self.zram.is_some() {
                    self.zram_sync();
                }
                if self.mm.frames.n_free() == 0 {
                    let v = self.policy.evict(&mut self.mm)?;
                    if !self.reclaim_frame(v) {
                        return None;
                    }
                }
            }
            Family::Kernel => {
                self.boost_wakeup();
                // The zone as `get_page_from_freelist` picks it (one zone: free > low, else
                // kswapd woken and free > min).
                let zone = match self.zone_fit(|w| w.low) {
                    Some(z) => z,
                    None => {
                        self.wakeup_kswapd();
                        match self.zone_fit(|w| w.min) {
                            Some(z) => z,
                            None => {
                                self.stats.allocstall += 1;
                                let mut got = 0u64;
                                for priority in (0..=DEF_PRIORITY).rev() {
                                    got = self
                                        .shrink(
                                            ReclaimReason::Direct,
                                            SWAP_CLUSTER_MAX,
                                            priority,
                                            got,
                                        )
                                        .2;
                                    if got >= SWAP_CLUSTER_MAX as u64 {
                                        break;
                                    }
                                }
                                self.policy.reclaim_done(ReclaimReason::Direct);
                                self.zone_fit(|w| w.min)?
                            }
                        }
                    }
                };
                let f = self.mm.frames.take_in(zone);
                if self.zones.len() > 1 {
                    self.fallback_done(zone);
                }
                return f;
            }
        }
        self.mm.frames.take()
    }

    /// Give a frame [`Machine::alloc_noretry`] took back to the free list (`put_page` of a
    /// deflated balloon page).
    pub fn free_held_frame(&mut self, f: FrameId) {
        self.mm.frames.give_back(f);
    }

    /// The access at which memory ran out with nothing reclaimable, if it did. Accesses after
    /// it are not meaningful; the replay driver turns this into an error.
    pub fn out_of_memory(&self) -> Option<u64> {
        self.oom_at
    }

    /// kswapd's `balance_pgdat` (Linux 6.1 and 6.8, mm/vmscan.c) for the zones up to
    /// `highest`, run to its end. Each pass asks for Σ max(high + boost,
    /// `SWAP_CLUSTER_MAX`) pages (`kswapd_shrink_node`); the priority rises (its value falls)
    /// after a pass that scanned fewer pages than that or freed none, and kswapd gives up
    /// after a pass at priority 1: it never scans at priority 0 (`while (sc.priority >= 1)`),
    /// which is left to direct reclaim. A boosted run ([`Machine::balance_step`]) reclaims
    /// the boost without writing or swapping while the node is balanced.
    fn kswapd(&mut self, highest: usize) {
        self.stats.kswapd_wakeups += 1;
        let mut b = self.balance_begin(highest);
        while self.balance_step(&mut b) {}
        self.balance_end(&b);
        self.policy.reclaim_done(ReclaimReason::Kswapd);
    }

    /// `balance_pgdat`'s start: the boosts of the zones up to `highest` (`zone_boosts`,
    /// `nr_boost_reclaim`).
    fn balance_begin(&mut self, highest: usize) -> Balance {
        let mut zone_boosts = [0u32; crate::policy::MAX_ZONES];
        let highest = highest.min(self.zones.len() - 1);
        zone_boosts[..=highest].copy_from_slice(&self.boost[..=highest]);
        let nr: u64 = zone_boosts.iter().map(|&b| b as u64).sum();
        if nr > 0 {
            self.stats.kswapd_boosted_runs += 1;
        }
        // `set_reclaim_active`: the zones' per-CPU lists hold fewer pages while kswapd runs.
        self.mm.frames.set_reclaim_active(Some(highest));
        Balance {
            highest,
            nr_boost_reclaim: nr,
            zone_boosts,
            boosted: nr > 0,
            priority: DEF_PRIORITY,
        }
    }

    /// One turn of `balance_pgdat`'s loop; false when the run ends. A node found
    /// unbalanced drops the boost and restarts at `DEF_PRIORITY` (`goto restart`); an
    /// unboosted run ends once the node is balanced. While boosting, the pass may neither
    /// write nor swap (`sc.may_writepage = sc.may_swap = !nr_boost_reclaim`; writing comes
    /// back below `DEF_PRIORITY - 2`, which a boosted run never goes below), and a pass that
    /// frees nothing ends it.
    fn balance_step(&mut self, b: &mut Balance) -> bool {
        let balanced = self.pgdat_balanced_at(b.highest);
        if !balanced && b.nr_boost_reclaim > 0 {
            b.nr_boost_reclaim = 0;
            b.priority = DEF_PRIORITY;
        }
        if b.nr_boost_reclaim == 0 && balanced {
            return false;
        }
        let boosting = b.nr_boost_reclaim > 0;
        let mut raise = !(boosting && b.priority == DEF_PRIORITY - 2);
        let may_writepage = !boosting || b.priority < DEF_PRIORITY - 2;
        let nr = self.kswapd_nr_to_reclaim(b.highest);
        let (got, scanned, _) = self.shrink_in(
            ReclaimReason::Kswapd,
            nr,
            b.priority,
            0,
            Some((b.highest, !boosting, may_writepage)),
        );
        if scanned >= nr as u64 {
            raise = false;
        }
        b.nr_boost_reclaim -= b.nr_boost_reclaim.min(got as u64);
        if b.nr_boost_reclaim > 0 && got == 0 {
            return false;
        }
        if raise || got == 0 {
            if b.priority == 1 {
                return false;
            }
            b.priority -= 1;
        }
        true
    }

    /// `balance_pgdat`'s end: a boosted run takes the boosts it began with off its zones
    /// (and would wake kcompactd: compaction is not modelled).
    fn balance_end(&mut self, b: &Balance) {
        self.mm.frames.set_reclaim_active(None);
        if b.boosted {
            for z in 0..=b.highest {
                self.boost[z] -= self.boost[z].min(b.zone_boosts[z]);
            }
        }
    }

    /// Hold `n` frames back for the kernel (zram's compressed pool, counted against RAM as
    /// zsmalloc's pages are). When that leaves free memory at or below `low`, kswapd is woken
    /// (deferred mode) or run (inline mode). Returns the frames that did not fit: memory is
    /// then briefly overcommitted until reclaim frees frames and the caller asks again.
    pub fn set_kernel_pages(&mut self, n: u32) -> u32 {
        let short = self.mm.frames.set_reserved(n);
        if self.family == Family::Kernel && self.zone_fit(|w| w.low).is_none() {
            self.wakeup_kswapd();
        }
        short
    }

    /// [`Machine::set_kernel_pages`] for pages whose holding is no allocation (frames
    /// reclaim has taken but not yet, by the simulated clock, put on the free list): the
    /// same reservation without a kswapd wakeup, which only an allocation makes.
    pub fn hold_kernel_pages(&mut self, n: u32) -> u32 {
        self.mm.frames.set_reserved(n)
    }

    /// `wakeup_kswapd` from an allocation's slow path: for every zone (the highest).
    fn wakeup_kswapd(&mut self) {
        let top = self.top_zone();
        self.wakeup_kswapd_zone(top);
    }

    /// `wakeup_kswapd(zone, .., highest_zoneidx)`: record the highest zone asked for
    /// (`kswapd_highest_zoneidx`), then, unless kswapd is awake or the node is balanced up
    /// to that zone with no boost there, run kswapd to completion (inline mode) or mark it
    /// awake for the timing engine to schedule (deferred mode).
    fn wakeup_kswapd_zone(&mut self, z: usize) {
        self.kswapd_highest = Some(self.kswapd_highest.map_or(z, |h| h.max(z)));
        if self.defer_kswapd && self.kswapd_awake {
            return;
        }
        if self.pgdat_balanced_at(z) && !self.pgdat_watermark_boosted(z) {
            return;
        }
        let h = self.kswapd_highest.take().unwrap_or(z);
        if !self.defer_kswapd {
            self.kswapd(h);
        } else {
            // kswapd reads `kswapd_highest_zoneidx` and the boosts when it runs. A kswapd
            // woken after a long sleep runs at once in Linux (CFS's wakeup preemption: its
            // vruntime is far behind the waker's), before the waker allocates again; the
            // timing engine does not preempt, so kswapd takes them here, at the wake, and a
            // later wake while it runs is for its next run.
            self.stats.kswapd_wakeups += 1;
            self.kswapd_awake = true;
            self.kswapd_priority = DEF_PRIORITY;
            self.balance = Some(self.balance_begin(h));
        }
    }

    /// Run kswapd as a thread of the timing engine (deferred: [`Machine::kswapd_step`]) or
    /// inline when woken.
    pub fn set_defer_kswapd(&mut self, on: bool) {
        self.defer_kswapd = on;
    }

    /// Whether kswapd is awake (deferred mode): woken by an allocation at `low`, until a
    /// [`Machine::kswapd_step`] finds the node balanced or gives up.
    pub fn kswapd_awake(&self) -> bool {
        self.kswapd_awake
    }

    /// One pass of kswapd's `balance_pgdat` loop (deferred mode): the same pass and priority
    /// rules as the inline `Machine::kswapd`, one `shrink` at a time so that the timing engine
    /// can charge each pass's work to the kswapd thread. Returns true while kswapd has more to
    /// do; false when free > high (balanced) or after a fruitless pass at priority 1 (kswapd
    /// then sleeps until the next wakeup).
    pub fn kswapd_step(&mut self) -> bool {
        if !self.kswapd_awake {
            return false;
        }
        let mut b = match self.balance {
            Some(b) => b,
            None => self.balance_begin(self.top_zone()),
        };
        // A pass that balanced the node (with no boost left to reclaim) ends the run now, as
        // the loop's next test would, so that the timing engine charges no empty step.
        let more = self.balance_step(&mut b)
            && !(b.nr_boost_reclaim == 0 && self.pgdat_balanced_at(b.highest));
        self.kswapd_priority = b.priority;
        if more {
            self.balance = Some(b);
            return true;
        }
        self.balance_end(&b);
        self.balance = None;
        // `kswapd()`: a wake during the run asked for a zone; unless the node is balanced
        // there (`prepare_kswapd_sleep`), another run; otherwise kswapd sleeps.
        if let Some(h) = self.kswapd_highest.take() {
            if !self.pgdat_balanced_at(h) || self.pgdat_watermark_boosted(h) {
                // The next run's first pass, now.
                self.balance = Some(self.balance_begin(h));
                return self.kswapd_step();
            }
        }
        self.kswapd_awake = false;
        // `prepare_kswapd_sleep` → `clear_pgdat_congested`: balanced, `PGDAT_WRITEBACK` and
        // `PGDAT_DIRTY` go.
        if let Some(w) = self.mm.wb.as_mut() {
            w.pgdat_writeback = false;
        }
        self.mm.vmscan_dirty.pgdat_dirty = false;
        self.policy.reclaim_done(ReclaimReason::Kswapd);
        false
    }

    /// One reclaim pass (`shrink_node`): ask the policy for victims and free them.
    /// `nr_reclaimed` is sc->nr_reclaimed when the pass starts (what the earlier passes of
    /// the same `do_try_to_free_pages` call freed; 0 for kswapd). Returns pages freed, pages
    /// scanned, and sc->nr_reclaimed after the pass (`nr_reclaimed` + the pages freed + any
    /// credit the policy added).
    fn shrink(
        &mut self,
        reason: ReclaimReason,
        nr: u32,
        priority: u8,
        nr_reclaimed: u64,
    ) -> (u32, u64, u64) {
        self.shrink_in(reason, nr, priority, nr_reclaimed, None)
    }

    /// [`Machine::shrink`] for kswapd's `balance_pgdat`: `Some((reclaim_idx, may_swap,
    /// may_writepage))` limits it to the zones up to `reclaim_idx` and, while boosting, keeps
    /// it from swapping and writing.
    fn shrink_in(
        &mut self,
        reason: ReclaimReason,
        nr: u32,
        priority: u8,
        nr_reclaimed: u64,
        limits: Option<(usize, bool, bool)>,
    ) -> (u32, u64, u64) {
        if let Some(log) = self.shrink_log.as_mut() {
            log.push(priority);
        }
        self.end_writebacks();
        if let Some(w) = self.mm.wb.as_mut() {
            (w.nr_taken, w.nr_writeback, w.nr_immediate) = (0, 0, 0);
        }
        // Cacol's pages first (seed 003 §4.2: on memory pressure Cacol reclaims from the
        // images' cache, then the ordinary LRU takes the rest).
        let by_cacol = self.cacol_shrink(nr);
        if by_cacol >= nr {
            let (steal, work) = match reason {
                ReclaimReason::Kswapd => (
                    &mut self.stats.pgsteal_kswapd,
                    &mut self.stats.reclaim_work_kswapd,
                ),
                ReclaimReason::Direct => (
                    &mut self.stats.pgsteal_direct,
                    &mut self.stats.reclaim_work_direct,
                ),
            };
            *steal += by_cacol as u64;
            *work += by_cacol as u64;
            return (by_cacol, 0, nr_reclaimed + by_cacol as u64);
        }
        let nr = nr - by_cacol;
        let nr_reclaimed = nr_reclaimed + by_cacol as u64;
        let mut sc = ScanControl {
            nr_to_reclaim: nr,
            priority,
            reason,
            nr_scanned: 0,
            swappiness: self.swappiness,
            may_swap: !self.swap_off,
            // `high_wmark_pages` and `low_wmark_pages` include the boost.
            high_wmark: self.wmark.high + self.boost.iter().sum::<u32>(),
            writeback_async: !self.swap_sync_io,
            // Not while any page is named (VSwapper's Mapper): reclaim drops a named page
            // without a write, which the policy, writing through the plug, cannot see.
            swap_plug: self.family == Family::Kernel
                && !self.swap_sync_io
                && self.named.as_ref().is_none_or(|n| n.is_empty()),
            swap_max_pages: self.swap_max_pages,
            low_wmark: self.wmark.low + self.boost.iter().sum::<u32>(),
            nr_free: self.mm.frames.n_free() as u64,
            kernel: self.kernel,
            nr_reclaimed,
            zones: self.zone_marks(),
        };
        if let (Some((idx, may_swap, may_writepage)), Some(z)) = (limits, sc.zones.as_mut()) {
            if idx + 1 < self.zones.len() {
                z.reclaim_idx = Some(idx as u8);
            }
            z.writepage_off = !may_writepage;
            sc.may_swap &= may_swap;
            // A boosted pass may not swap: the anonymous pages' unmapping and writing wait.
        }
        let mut victims = std::mem::take(&mut self.victims);
        victims.clear();
        self.policy.shrink(&mut self.mm, &mut sc, &mut victims);
        if let Some(w) = self.mm.wb.as_mut() {
            self.stats.pgrotated += std::mem::take(&mut w.rotated);
        }
        // The mapped dirty page-cache folios the pass kept for the flusher, unmapped
        // (`try_to_unmap` before `shrink_folio_list`'s dirty test; Linux 6.1 and 6.8).
        let unmap = std::mem::take(&mut self.mm.vmscan_dirty.unmap);
        for &f in &unmap {
            if self.mm.frames.in_use(f)
                && self.mm.frames.is_mapped(f)
                && self.mm.frames.flags(f) & F_PAGECACHE != 0
            {
                self.pc_unmap(f, false);
            }
        }
        let mut n = 0u32;
        let mut work = by_cacol as u64;
        for &v in &victims {
            work += self.mm.reclaim_work(v) as u64;
            n += self.reclaim_frame(v) as u32;
        }
        self.victims = victims;
        // The pass's swap-outs' xarray nodes, allocated within it (`add_to_swap_cache`).
        let outer = std::mem::replace(&mut self.pf_memalloc, true);
        self.sync_swap_xa();
        self.pf_memalloc = outer;
        // The writes still plugged go to the device as the pass ends (`blk_finish_plug`).
        self.mm.submit_writes();
        if std::mem::take(&mut self.mm.vmscan_dirty.wake_flusher) {
            self.wakeup_flusher_vmscan();
        }
        if reason == ReclaimReason::Kswapd {
            self.kswapd_writeback_throttle();
        }
        if let Some(z) = sc.zones.as_ref() {
            if z.skipped.iter().any(|&k| k > 0) {
                let n = self.zones.len();
                if self.stats.pgskip_zone.len() < n {
                    self.stats.pgskip_zone.resize(n, 0);
                }
                for (a, &k) in self.stats.pgskip_zone.iter_mut().zip(&z.skipped) {
                    *a += k;
                }
            }
        }
        let stolen = n + by_cacol;
        let skipped = sc.zones.as_ref().map_or(0, |z| z.skipped_scanned);
        match reason {
            ReclaimReason::Kswapd => {
                self.stats.pgscan_kswapd += sc.nr_scanned + skipped;
                self.stats.pgsteal_kswapd += stolen as u64;
                self.stats.reclaim_work_kswapd += work;
            }
            ReclaimReason::Direct => {
                self.stats.pgscan_direct += sc.nr_scanned + skipped;
                self.stats.pgsteal_direct += stolen as u64;
                self.stats.reclaim_work_direct += work;
            }
        }
        (stolen, sc.nr_scanned, sc.nr_reclaimed + n as u64)
    }

    /// [`MachineConfig::read_ahead_kb`]: the file device's largest readahead.
    pub fn read_ahead_kb(&self) -> u32 {
        self.read_ahead_kb
    }

    /// Page `vpn` becomes a named page (`on`: [`Machine::named`]) or stops being one; a
    /// resident anonymous page moves to the other type's LRU lists
    /// ([`Policy::set_file_lru`]). No-op without `named`.
    pub fn set_named(&mut self, vpn: u64, on: bool) {
        let Some(n) = self.named.as_mut() else {
            return;
        };
        // (a page named already may have come back as a new anonymous frame, the Mapper's
        // remapping of a page reclaim dropped: its type is set whatever the set said)
        if on {
            n.insert(vpn);
        } else {
            n.remove(&vpn);
        }
        let pte = self.mm.pt.pte(vpn);
        if pte & PTE_PRESENT != 0 {
            let f = pte_frame(pte);
            self.policy.set_file_lru(&self.mm, f, on);
        }
    }

    /// Unmap a victim, write it out if needed, keep its shadow, free its frame (`pageout`,
    /// `__remove_mapping`). The policy has already forgotten it. Returns false when the page
    /// could not be freed (its swap-out failed) and went back to the policy.
    pub(crate) fn reclaim_frame(&mut self, f: FrameId) -> bool {
        debug_assert!(self.mm.frames.in_use(f));
        if self.mm.frames.flags(f) & (F_PAGECACHE | F_MAPPED) == F_PAGECACHE | F_MAPPED {
            // `try_to_unmap` of a page-cache page a file mapping maps: its PTE goes (empty:
            // the next access faults through the mapping), its rmap is the xarray entry
            // again, and it is dropped as an unmapped one.
            self.pc_unmap(f, false);
        }
        let pidx = self.mm.frames.pte(f);
        let dirty = self.mm.is_dirty(f);
        let mapped = self.mm.frames.is_mapped(f);
        let vpn = self.mm.pt.vpn_of(pidx);
        if self.mm.frames.is_anon(f) && self.named.as_ref().is_some_and(|n| n.contains(&vpn)) {
            // A named page (`Machine::named`): dropped as a clean file page
            // (`__remove_mapping`), no swap write; its swap copy, if any, is freed.
            let shadow = self.policy.shadow(&self.mm, f);
            self.stats.evictions += 1;
            self.drop_swap_slot(f);
            if mapped {
                self.log_unmap(pidx);
            }
            *self.mm.pt.at(pidx) = PTE_NAMED_GONE | ((shadow as u64) << PTE_PAYLOAD_SHIFT);
            self.log_swap(SwapEvent::Discard { vpn });
        } else if self.mm.frames.is_anon(f) {
            // A victim the policy sent through the swap plug has its slot already and is
            // written whatever its dirty bit says (`add_to_swap` dirtied it).
            let wb = self.policy.writeback_done(f);
            // (timed runs: a write a plug flush handed to the device during the pass)
            let dispatched = self
                .mm
                .wb
                .as_mut()
                .is_some_and(|w| std::mem::take(&mut w.dispatched[f as usize]));
            let mut slot = self.mm.frames.slot(f);
            let write = slot == NO_SLOT || dirty || wb != WritebackDone::Untracked;
            if slot == NO_SLOT {
                slot = self.mm.swap.alloc(pidx);
            }
            if write {
                // `swap_writepage` counts the swap-out before the device has answered;
                // `pageout`, `NR_VMSCAN_WRITE`.
                self.stats.pswpout += 1;
                self.stats.nr_vmscan_write += 1;
                self.stats.pgpgout += 4;
                if let Some(pool) = self.mm.swap.pool {
                    // Reclaim runs with PF_MEMALLOC (kswapd, and direct reclaim in
                    // `__perform_reclaim`), so the pool's allocations ignore the watermarks
                    // (`__gfp_pfmemalloc_flags` → ALLOC_NO_WATERMARKS): every free frame.
                    let free = self.mm.frames.n_free() as u64 * 4096;
                    if pool.pending + pool.per_page > free {
                        self.stats.swap_write_errors += 1;
                        let _ = self.policy.shadow(&self.mm, f); // not evicted: no shadow kept
                        self.keep_in_swap_cache(
                            f,
                            slot,
                            pidx,
                            dirty,
                            mapped,
                            Some(Insert::Putback),
                        );
                        return false;
                    }
                    if let Some(p) = self.mm.swap.pool.as_mut() {
                        p.pending += p.per_page;
                    }
                }
                if !dispatched {
                    self.mm.swap.device.submit(SwapIo::Write { slot });
                }
                if self.zram.is_some() && self.zram_sync() > 0 && self.family == Family::Kernel {
                    // `zs_malloc` found no free page for the object (reclaim allocates with
                    // PF_MEMALLOC, below every watermark, so only an empty free list stops
                    // it): `zram_write_page` fails with -ENOMEM, the slot keeps no data, and
                    // the page stays in the swap cache, dirty. (Demand policies keep no free
                    // reserve: their pool takes the frames the next evictions free.)
                    if let Some(z) = self.zram.as_mut() {
                        use crate::device::SwapDevice;
                        z.dev.discard(slot as u64, 1);
                    }
                    self.zram_sync();
                    self.stats.swap_write_errors += 1;
                    let _ = self.policy.shadow(&self.mm, f);
                    self.keep_in_swap_cache(f, slot, pidx, dirty, mapped, Some(Insert::Putback));
                    return false;
                }
                self.log_swap(SwapEvent::Out {
                    vpn: self.mm.pt.vpn_of(pidx),
                    slot,
                });
                if self.family == Family::Kernel && !self.swap_sync_io {
                    // An asynchronous device: `pageout` returns with the folio under
                    // writeback and `shrink_folio_list` keeps it (the policy was told:
                    // `ScanControl::writeback_async`); a later scan frees it. Unless the
                    // write completed within the pass (`WritebackDone`).
                    match wb {
                        WritebackDone::Freed => self.stats.pgrotated += 1,
                        WritebackDone::Rotated => {
                            self.stats.pgrotated += 1;
                            self.keep_in_swap_cache(f, slot, pidx, false, mapped, None);
                            return false;
                        }
                        WritebackDone::Untracked | WritebackDone::Pending
                            if self.mm.wb.is_some() =>
                        {
                            // Under writeback until the device completes the write (one a
                            // plug flush dispatched during the pass is in flight already).
                            if let Some(w) = self.mm.wb.as_mut() {
                                if !dispatched {
                                    w.start(f);
                                }
                            }
                            self.keep_in_swap_cache(
                                f,
                                slot,
                                pidx,
                                false,
                                mapped,
                                Some(Insert::Writeback),
                            );
                            return false;
                        }
                        WritebackDone::Untracked | WritebackDone::Pending => {
                            self.keep_in_swap_cache(
                                f,
                                slot,
                                pidx,
                                false,
                                mapped,
                                Some(Insert::Rotate),
                            );
                            return false;
                        }
                    }
                }
            }
            let shadow = self.policy.shadow(&self.mm, f);
            self.stats.evictions += 1;
            self.mm.swap.set_cached_frame(slot, NO_FRAME);
            self.mm.swap.set_shadow(slot, shadow);
            if mapped {
                *self.mm.pt.at(pidx) = PTE_SWAP | ((slot as u64) << PTE_PAYLOAD_SHIFT);
                self.log_unmap(pidx);
            }
        } else {
            let shadow = self.policy.shadow(&self.mm, f);
            if mapped {
                self.log_unmap(pidx);
            }
            self.stats.evictions += 1;
            if dirty {
                // `pageout`: kswapd's write of a dirty file folio it met again with
                // `PG_reclaim` under `PGDAT_DIRTY` (the policy's `shrink_folio_list`
                // activates any other), or a policy without that rule (module `pagecache`).
                self.stats.file_writebacks += 1;
                self.stats.nr_vmscan_write += 1;
                self.stats.pgpgout += 4;
                if self.mm.frames.flags(f) & F_PAGECACHE != 0 {
                    self.pc_log_write(f);
                }
            }
            self.stats.nr_file_pages -= 1;
            if self.mm.frames.flags(f) & F_PAGECACHE != 0 {
                self.pc_release(f, dirty);
            }
            *self.mm.pt.at(pidx) = PTE_FILE_GONE | ((shadow as u64) << PTE_PAYLOAD_SHIFT);
        }
        self.mm.frames.clear_flags(f, F_DIRTY);
        self.mm.frames.release(f);
        true
    }

    #[inline]
    fn log_swap(&mut self, e: SwapEvent) {
        if let Some(log) = self.swap_log.as_mut() {
            log.push(e);
        }
    }

    #[inline]
    fn log_unmap(&mut self, pidx: PteIndex) {
        if let Some(log) = self.unmap_log.as_mut() {
            log.push(self.mm.pt.vpn_of(pidx));
        }
    }

    /// `zap_pte_range` for one page (munmap, process exit): drop whatever `vpn` holds — a
    /// frame (taken off the policy's lists and freed, with its swap slot if it has one), a swap
    /// entry (the slot freed, and a swap-cache copy with it), or a dropped file page's shadow
    /// — and leave the PTE empty. Returns whether a frame was freed. Not logged in
    /// [`Machine::unmap_log`]: the caller unmapped it.
    pub fn unmap_page(&mut self, vpn: u64) -> bool {
        // The full lookup: `peek_index` only knows leaves in the walk cache, and a page whose
        // leaf had left it stayed mapped (a munmap or exit that freed nothing).
        let Some(idx) = self.mm.pt.find_index(vpn) else {
            return false;
        };
        let pte = self.mm.pt.get(idx);
        if pte != 0 && self.mm.frames.has_buddies() {
            if let Some((i, index)) = self.mm.cache.page_of(vpn) {
                // A page-cache entry (a page or a shadow) goes: `page_cache_delete`,
                // `clear_shadow_entry`.
                let id = self.mm.cache.file(i).id;
                self.xa_changed(Xa::File(id), index, true);
            }
        }
        let mut freed = false;
        if pte & PTE_PRESENT != 0
            && self.mm.frames.flags(pte_frame(pte)) & (F_PAGECACHE | F_MAPPED)
                == F_PAGECACHE | F_MAPPED
            && self.mm.frames.pte(pte_frame(pte)) == idx
        {
            // A file mapping's PTE of a page-cache page: the mapping goes, the page stays
            // cached.
            self.pc_unmap(pte_frame(pte), true);
            return false;
        }
        if pte & PTE_PRESENT != 0 {
            let f = pte_frame(pte);
            if self.mm.frames.flags(f) & F_CACOL != 0 {
                // A disk image's page Cacol holds: off the policy's lists, in Cacol's.
                if let (Some((i, index)), Some(h)) =
                    (self.mm.cache.page_of(vpn), self.cacol.as_mut())
                {
                    let vm = self.mm.cache.file(i).id as usize;
                    h.c.remove(vm, index);
                }
                self.mm.frames.clear_flags(f, F_CACOL);
            } else {
                self.policy.on_remove(f);
            }
            self.stats.nr_file_pages -= !self.mm.frames.is_anon(f) as u64;
            self.drop_swap_slot(f);
            self.mm.frames.clear_flags(f, F_DIRTY);
            if let Some(w) = self.mm.wb.as_mut() {
                w.clear(f);
            }
            self.mm.frames.release(f);
            freed = true;
        } else if pte & PTE_SWAP != 0 {
            let slot = pte_payload(pte) as u32;
            let cached = self.mm.swap.cached_frame(slot);
            if cached != NO_FRAME {
                self.policy.on_remove(cached);
                self.mm.frames.clear_flags(cached, F_DIRTY);
                self.mm.frames.set_slot(cached, NO_SLOT);
                self.mm.frames.clear_flags(cached, F_SWAPCACHE);
                if let Some(w) = self.mm.wb.as_mut() {
                    w.clear(cached);
                }
                self.mm.frames.release(cached);
                self.mm.swap.set_cached_frame(slot, NO_FRAME);
                freed = true;
            }
            self.mm.swap.free(slot);
        }
        *self.mm.pt.at(idx) = 0;
        freed
    }

    /// A victim that stays in memory: unmapped (its PTE a swap entry), in the swap cache at
    /// `slot`, back on the policy's lists as `how` says. Two cases:
    ///
    /// - `Insert::Putback`: a swap-out the device refused (zram: `zs_malloc` found no memory
    ///   for the compressed page, `zram_write_page` → -ENOMEM). As in Linux, `add_to_swap` and
    ///   `try_to_unmap` have already happened; `__end_swap_bio_write` marks it dirty again and
    ///   clears `PG_reclaim`, and `shrink_folio_list` keeps it (`keep` → `move_folios_to_lru`).
    ///   The next access is a minor fault from the swap cache; the next reclaim tries the write
    ///   again. When nothing else can be freed, the allocation's retries run out and the run
    ///   ends out of memory, as the kernel's OOM killer would end it. Left out: the
    ///   ratelimited "Write-error on swap-device" message and zram's second `zs_malloc`
    ///   attempt with direct reclaim, which in an anonymous-only machine cannot free memory
    ///   (GFP_NOIO forbids swap-out).
    /// - `Insert::Rotate`: a write to an asynchronous device (`shrink_folio_list` keeps a folio
    ///   that `pageout` left under writeback, `evict_folios`/`shrink_inactive_list` put it
    ///   back). The write is taken to complete by the end of the reclaim pass:
    ///   `folio_end_writeback` → `folio_rotate_reclaimable` puts the now clean folio at the
    ///   tail of its list, and a later scan frees it without writing, so such a page is
    ///   scanned twice (pgscan) and stolen once (pgsteal). An access before that finds it in
    ///   the swap cache (a minor fault). Left out: the time the write takes (a slow device
    ///   leaves the folio at the head of its list, `lru_gen_add_folio`'s `max_seq - 1` for
    ///   MG-LRU, until it completes: the timed machine has it, `Insert::Writeback` and
    ///   [`Machine::set_write_sink`]), MG-LRU's `evict_folios` retry of a folio whose write
    ///   completed before the batch was put back (freed then, not scanned again; FINDINGS.md
    ///   of experiments/kernel-validation), and file pages (written back at once here). Each
    ///   rotation counts `PGROTATED` (`Stats::pgrotated`).
    fn keep_in_swap_cache(
        &mut self,
        f: FrameId,
        slot: u32,
        pidx: PteIndex,
        dirty: bool,
        mapped: bool,
        how: Option<Insert>,
    ) {
        if dirty {
            self.mm.frames.set_flags(f, F_DIRTY);
        } else {
            self.mm.frames.clear_flags(f, F_DIRTY);
        }
        if mapped {
            *self.mm.pt.at(pidx) = PTE_SWAP | ((slot as u64) << PTE_PAYLOAD_SHIFT);
            self.mm.frames.clear_flags(f, F_MAPPED);
            self.log_unmap(pidx);
        }
        self.mm.frames.set_flags(f, F_SWAPCACHE);
        self.mm.frames.set_slot(f, slot);
        self.mm.swap.set_cached_frame(slot, f);
        let touch = Touch {
            t: self.t,
            next_use: u64::MAX,
            vpn: self.mm.pt.vpn_of(pidx),
            write: false,
        };
        // `None`: the policy holds it already (its write completed during the pass).
        let Some(how) = how else {
            return;
        };
        if how == Insert::Rotate {
            self.stats.pgrotated += 1;
        }
        self.policy.on_insert(&self.mm, f, touch, how);
    }

    /// Every invariant of memory and policy.
    pub fn validate(&self) -> Result<(), String> {
        self.mm.validate()?;
        self.policy.validate(&self.mm)?;
        Ok(())
    }
}

#[cfg(test)]
mod boost_tests;
#[cfg(test)]
mod zone_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readahead_window_follows_swapin_nr_pages() {
        // Worked by hand from `__swapin_nr_pages` with page-cluster 3 (max 8 pages).
        // A fresh state holds 4 hits: 4 + 2 = 6, rounded up to 8.
        assert_eq!(swapin_nr_pages(&mut ReadaheadState::default(), 100, 8), 8);
        let mut ra = ReadaheadState {
            hits: 0,
            ..ReadaheadState::default()
        };
        assert_eq!(swapin_nr_pages(&mut ra, 100, 8), 1); // no hits, not next to 0
        assert_eq!(swapin_nr_pages(&mut ra, 101, 8), 2); // no hits, next to 100
        ra.hits = 3; // 3 + 2 = 5, rounded up to 8
        assert_eq!(swapin_nr_pages(&mut ra, 50, 8), 8);
        assert_eq!(ra.prev_offset, 101); // kept: there were hits
        assert_eq!(swapin_nr_pages(&mut ra, 300, 8), 4); // would be 1; halves from 8 at most
        assert_eq!(swapin_nr_pages(&mut ra, 7, 8), 2);
        assert_eq!(swapin_nr_pages(&mut ra, 9, 8), 1);
        ra.hits = 1; // 3 → 4
        assert_eq!(swapin_nr_pages(&mut ra, 9, 8), 4);
        assert_eq!(swapin_nr_pages(&mut ra, 9, 1), 1); // page-cluster 0: off
    }

    #[test]
    fn unmap_page_frees_a_page_whose_leaf_left_the_walk_cache() {
        // The page table's walk cache is direct-mapped by 2 MiB group (4,096 slots): pages 5
        // and 5 + 4,096·512 share a slot, so touching the second evicts the first's leaf.
        // unmap_page must still find page 5's PTE, free its frame and clear it.
        let p = crate::policy::PolicyKind::from_name("clock-lru")
            .unwrap()
            .build(
                8,
                &crate::policy::PolicyOptions::new(1),
                crate::policy::Boxer,
            )
            .unwrap();
        let mut m = Machine::new(&MachineConfig::new(8), p).unwrap();
        let far = 5 + 4_096 * 512;
        m.access(
            Access {
                page: 5,
                write: true,
                gup: false,
            },
            u64::MAX,
        );
        m.access(
            Access {
                page: far,
                write: true,
                gup: false,
            },
            u64::MAX,
        );
        assert!(m.mm.pt.peek_index(5).is_none());
        assert!(m.unmap_page(5));
        assert_eq!(m.mm.pt.pte(5), 0);
        assert_eq!(m.mm.frames.len() - m.mm.frames.n_unused(), 1);
        m.validate().unwrap();
    }

    /// One direct reclaim runs `do_try_to_free_pages`' cascade (mm/vmscan.c): `shrink_node`
    /// at priority 12, 11, ... until the passes have reclaimed `nr_to_reclaim` =
    /// SWAP_CLUSTER_MAX = 32 in all, past the pass that lifted free memory above min.
    /// Worked by hand for the classic LRU (`get_scan_count`, `shrink_lruvec`):
    /// 8,196 frames, min 4, low 100, high 200, kswapd deferred (never run here), zram-like
    /// synchronous swap (a victim is freed in its pass). 8,192 pages are read once (free 4)
    /// and their young bits cleared: the inactive anon list holds 8,192 pages, none
    /// referenced, none young, the first read at the tail. Reading one more page finds free 4
    /// ≤ min: one stall. Every pass has no file pages and free ≤ high, so `file_is_tiny`
    /// (SCAN_ANON): it scans inactive anon >> priority pages from the tail and reclaims all:
    ///   p=12: 8,192 >> 12 = 2 (free 6: the old rule stopped here, above min)
    ///   p=11: 8,190 >> 11 = 3   (5 in all)
    ///   p=10: 8,187 >> 10 = 7   (12)
    ///   p=9:  8,180 >> 9 = 15   (27)
    ///   p=8:  8,165 >> 8 = 31   (58 ≥ 32: the call ends)
    /// The allocation then takes one of the 62 free frames.
    #[test]
    fn direct_reclaim_runs_the_priority_cascade_to_nr_to_reclaim() {
        use crate::policy::clock_lru::ClockLru;
        let cfg = MachineConfig {
            page_cluster: Some(0),
            watermarks: Some(Watermarks {
                min: 4,
                low: 100,
                high: 200,
            }),
            defer_kswapd: true,
            swap_sync_io: true,
            check_invariants: false,
            ..MachineConfig::new(8_196)
        };
        let mut m = Machine::new(&cfg, ClockLru::new(8_196)).unwrap();
        for p in 0..8_192 {
            m.access(Access::read(p), u64::MAX);
        }
        assert_eq!(m.mm.frames.n_free(), 4);
        assert_eq!(m.stats.allocstall, 0);
        for f in 0..8_196 {
            if m.mm.frames.in_use(f) {
                m.mm.test_and_clear_young(f);
            }
        }
        m.shrink_log = Some(Vec::new());
        m.access(Access::read(1 << 20), u64::MAX);
        assert_eq!(m.shrink_log.as_deref(), Some(&[12, 11, 10, 9, 8][..]));
        let s = &m.stats;
        assert_eq!(s.allocstall, 1);
        assert_eq!((s.pgscan_direct, s.pgsteal_direct), (58, 58));
        assert_eq!((s.pgscan_kswapd, s.pgsteal_kswapd), (0, 0));
        assert_eq!((s.evictions, s.pswpout), (58, 58));
        assert_eq!(m.mm.frames.n_free(), 61);
        // The oldest 58 pages went, in order.
        assert!((0..58).all(|p| m.mm.pt.pte(p) & PTE_PRESENT == 0));
        assert!((58..8_192).all(|p| m.mm.pt.pte(p) & PTE_PRESENT != 0));
        m.validate().unwrap();
    }

    /// `PGROTATED` (`lru_move_tail_fn`, called by `folio_rotate_reclaimable` when a write
    /// with `PG_reclaim` completes and the folio is back on its LRU): on an asynchronous
    /// device the engine completes each reclaim write after its pass, once the folio is back
    /// (`Insert::Rotate`), so every page written is rotated once: pgrotated = pswpout, for
    /// both LRUs. zram's write completes inside `swap_writepage`, while the folio is still
    /// isolated (`folio_test_lru` false): nothing is rotated. (The kernel's disk runs rotate
    /// 81-99% of their writes: FINDINGS.md, "MG-LRU's pgscan on the disk rows".)
    #[test]
    fn every_asynchronous_write_is_rotated_once() {
        use crate::policy::clock_lru::ClockLru;
        use crate::policy::mglru::{MgLru, Preset};
        use crate::policy::registry::PolicyOptions;
        for sync in [false, true] {
            for mglru in [false, true] {
                let cfg = MachineConfig {
                    page_cluster: Some(0),
                    swap_sync_io: sync,
                    ..MachineConfig::new(256)
                };
                let p: Box<dyn Policy> = if mglru {
                    Box::new(MgLru::new(256, &PolicyOptions::new(1), Preset::Default).unwrap())
                } else {
                    Box::new(ClockLru::new(256))
                };
                let mut m = Machine::new(&cfg, p).unwrap();
                for round in 0..3 {
                    for p in 0..1_024 {
                        m.access(Access::write(p), u64::MAX);
                    }
                    m.validate()
                        .unwrap_or_else(|e| panic!("round {round}: {e}"));
                }
                let s = &m.stats;
                assert!(
                    s.pswpout > 1_000,
                    "sync {sync} mglru {mglru}: {}",
                    s.pswpout
                );
                let want = if sync { 0 } else { s.pswpout };
                assert_eq!(s.pgrotated, want, "sync {sync} mglru {mglru}");
            }
        }
    }

    fn gup_call(m: &mut Machine<Box<dyn Policy>>, pages: &[u64]) {
        for &p in pages {
            m.access(Access::gup(p, true), u64::MAX);
        }
    }

    fn counter(m: &Machine<Box<dyn Policy>>, name: &str) -> u64 {
        m.policy
            .counters()
            .into_iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v)
            .unwrap()
    }

    #[test]
    fn gup_takes_the_slow_path_from_the_first_page_it_cannot_pin() {
        // Classic LRU, memory to spare; worked by hand from `internal_get_user_pages_fast`
        // and `folio_mark_accessed`:
        //   gup W 0 1 2   nothing present: all three faulted in and marked (PG_referenced)
        //   R 0 1 2       the CPU reads them
        //   gup W 0 1 2   all present and writable: the lockless walk pins them, no mark
        //   unmap 1
        //   gup W 0 1 2   0 pinned; 1 faulted in and marked; 2, present, marked a second
        //                 time: PG_referenced was set, so it is activated (PGACTIVATE 1)
        //   R 9           another access ends the call
        //   gup W 0 1 2   all present and writable again: no mark
        let p = crate::policy::PolicyKind::from_name("clock-lru")
            .unwrap()
            .build(
                64,
                &crate::policy::PolicyOptions::new(1),
                crate::policy::Boxer,
            )
            .unwrap();
        let mut cfg = MachineConfig::new(64);
        cfg.check_invariants = true;
        let mut m = Machine::new(&cfg, p).unwrap();
        gup_call(&mut m, &[0, 1, 2]);
        assert_eq!((m.stats.gup_pages, m.stats.gup_touched), (3, 3));
        assert_eq!(m.stats.faults, 3);
        assert_eq!(counter(&m, "pgactivate"), 0);
        for p in 0..3 {
            m.access(Access::read(p), u64::MAX);
        }
        gup_call(&mut m, &[0, 1, 2]);
        assert_eq!((m.stats.gup_pages, m.stats.gup_touched), (6, 3));
        assert!(m.unmap_page(1));
        gup_call(&mut m, &[0, 1, 2]);
        assert_eq!((m.stats.gup_pages, m.stats.gup_touched), (9, 5));
        assert_eq!(m.stats.faults, 4);
        assert_eq!(counter(&m, "pgactivate"), 1);
        m.access(Access::read(9), u64::MAX);
        gup_call(&mut m, &[0, 1, 2]);
        assert_eq!((m.stats.gup_pages, m.stats.gup_touched), (12, 5));
        assert_eq!(counter(&m, "pgactivate"), 1);
        assert_eq!(m.stats.accesses, 16); // 4 calls of 3, 3 reads and R 9
    }

    #[test]
    fn gup_for_write_makes_a_read_only_swapped_in_page_writable() {
        // LRU with 2 frames, 8 swap slots: W0 W1 W2 swaps 0 out; R0 reads it back (and
        // swaps 1 out), mapped read-only with its slot kept (`do_swap_page` on a read
        // fault). A FOLL_WRITE pin cannot take it locklessly: `do_wp_page` makes it
        // writable and dirty, and it is marked. Pinned again (after R0 ends the call), it
        // is taken locklessly.
        let mut cfg = MachineConfig::new(2);
        cfg.swap_rotational = Some(8);
        let p = crate::policy::PolicyKind::from_name("lru")
            .unwrap()
            .build(
                2,
                &crate::policy::PolicyOptions::new(1),
                crate::policy::Boxer,
            )
            .unwrap();
        let mut m = Machine::new(&cfg, p).unwrap();
        for a in [
            Access::write(0),
            Access::write(1),
            Access::write(2),
            Access::read(0),
        ] {
            m.access(a, u64::MAX);
        }
        assert_eq!(m.mm.pt.pte(0) & PTE_DIRTY, 0);
        gup_call(&mut m, &[0]);
        assert_eq!((m.stats.gup_pages, m.stats.gup_touched), (1, 1));
        assert_ne!(m.mm.pt.pte(0) & PTE_DIRTY, 0);
        m.access(Access::read(0), u64::MAX);
        gup_call(&mut m, &[0]);
        assert_eq!((m.stats.gup_pages, m.stats.gup_touched), (2, 1));
        assert_eq!(m.stats.faults, 4);
        m.validate().unwrap();
    }

    use crate::device::SwapDevice;

    fn zram_machine(
        policy: &str,
        frames: u32,
        class: crate::device::ContentClass,
    ) -> Machine<Box<dyn Policy>> {
        let p = crate::policy::PolicyKind::from_name(policy)
            .unwrap()
            .build(
                frames,
                &crate::policy::PolicyOptions::new(1),
                crate::policy::Boxer,
            )
            .unwrap();
        let mut cfg = MachineConfig::new(frames);
        cfg.zram_pool = Some(ZramPool {
            class,
            params: crate::device::ZramParams::default(),
        });
        cfg.check_invariants = true;
        Machine::new(&cfg, p).unwrap()
    }

    #[test]
    fn zram_pool_takes_its_pages_from_the_frames() {
        // By hand: a sparse page compresses to 41 bytes (LZO-RLE); zs_malloc adds its 8-byte
        // handle (49) and rounds up to the 64-byte class, plus the 8-byte zs_handle slab
        // object: 72 bytes per stored page. FIFO on 200 frames writing pages 0..999 once:
        // at the end resident R and pool P fill the frames, P = ceil((1000 - R) * 72 / 4096).
        // R = 186 gives 814 stored, 58,608 bytes, 15 pages: 201 > 200. R = 185 gives 815
        // stored, 58,680 bytes, 15 pages: 200. So 815 swap-outs and a 15-page pool.
        let mut m = zram_machine("fifo", 200, crate::device::ContentClass::Sparse);
        for p in 0..1000 {
            m.access(Access::write(p), u64::MAX);
        }
        assert_eq!(m.stats.pswpout, 815);
        assert_eq!(m.mm.frames.reserved(), 15);
        assert_eq!(m.stats.zram_mem_used_max, 15 * 4096);
        assert_eq!(m.stats.swap_write_errors, 0);
        // Reading the 815 back frees their slots (a zram swap-in frees its slot at once) and
        // with them the pool; what is swapped out instead is stored again.
        for p in 0..1000 {
            m.access(Access::read(p), u64::MAX);
        }
        let stored = m.zram.as_ref().unwrap().dev.stats().pages_stored;
        assert_eq!(m.mm.frames.reserved() as u64, (stored * 72).div_ceil(4096));
        // Same-filled pages take no pool at all: a plain FIFO's 800 swap-outs.
        let mut z = zram_machine("fifo", 200, crate::device::ContentClass::Zero);
        for p in 0..1000 {
            z.access(Access::write(p), u64::MAX);
        }
        assert_eq!((z.stats.pswpout, z.stats.zram_mem_used_max), (800, 0));
    }

    #[test]
    fn zram_pool_is_charged_under_kernel_reclaim() {
        // Kernel policies reclaim to the watermarks: whatever the pool holds, resident pages
        // plus pool pages never exceed the frames, and the pool's peak is its stored pages'
        // 72 bytes each, rounded up to pages.
        let mut m = zram_machine("clock-lru", 2_000, crate::device::ContentClass::Sparse);
        let mut peak = 0;
        for i in 0..30_000u64 {
            m.access(Access::write((i * 7_919) % 6_000), u64::MAX);
            let stored = m.zram.as_ref().unwrap().dev.stats().pages_stored;
            peak = peak.max((stored * 72).div_ceil(4096));
            let resident = (m.mm.frames.len() - m.mm.frames.n_unused()) as u64;
            assert!(resident + m.mm.frames.reserved() as u64 <= 2_000);
            assert_eq!(m.mm.frames.reserved() as u64, (stored * 72).div_ceil(4096));
        }
        assert_eq!(m.stats.zram_mem_used_max, peak * 4096);
        assert!(
            peak > 60,
            "6,000 pages on 2,000 frames store ~4,000: {peak}"
        );
    }

    /// clock-lru on 1,000 frames, watermarks 10/20/200, page-cluster 3 (VMA readahead of at
    /// most 8 pages).
    /// `swap_rotational`: on a rotational disk of that many slots (cluster readahead).
    fn readahead_machine(
        check_invariants: bool,
        swap_rotational: Option<u32>,
    ) -> Machine<crate::policy::BoxedPolicy> {
        let mut cfg = MachineConfig::new(1_000);
        cfg.page_cluster = Some(3);
        cfg.watermarks = Some(Watermarks {
            min: 10,
            low: 20,
            high: 200,
        });
        cfg.check_invariants = check_invariants;
        cfg.swap_rotational = swap_rotational;
        let p = crate::policy::PolicyKind::from_name("clock-lru")
            .unwrap()
            .build(
                1_000,
                &crate::policy::PolicyOptions::new(1),
                crate::policy::Boxer,
            )
            .unwrap();
        Machine::new(&cfg, p).unwrap()
    }

    #[test]
    fn each_address_space_has_its_own_readahead_state() {
        // Two processes (pages 0..1023 and 1024..2047, as the VM layer's keys give them) each
        // read their swapped-out pages in order, their faults interleaved. `swap_readahead_info`
        // is per VMA: with an implicit VMA each, every process's faults are next to its own
        // last fault and its window opens; with one shared state, consecutive faults are a
        // thousand pages apart and each is read alone.
        let run = |spaces: bool| {
            let mut m = readahead_machine(false, None);
            if spaces {
                m.set_address_space(0, 0);
                m.set_address_space(1_024, 1);
            }
            for v in 0..3_000 {
                m.access(Access::write(v), u64::MAX);
            }
            let before = m.stats.clone();
            for i in 0..64 {
                m.access(Access::read(300 + i), u64::MAX);
                m.access(Access::read(1_324 + i), u64::MAX);
            }
            (
                m.stats.major_faults - before.major_faults,
                m.stats.swap_ra - before.swap_ra,
            )
        };
        let (shared_faults, _) = run(false);
        // Own, by hand, for each process (page-cluster 3: windows of at most 8): the fault on
        // 300 finds a fresh VMA (4 hits: 4 + 2 → 8, not next to page 0: [297, 305), 7 read
        // ahead), 301..=304 hit, the fault on 305 is next to the last hit 304 with 4 hits
        // (→ 8, forward: [305, 313)), and so on: faults on 300, 305, 313, ..., 361 for pages
        // 300..=363, 9 faults and 7 pages read ahead with each.
        assert_eq!(run(true), (18, 126));
        // Shared, the processes' faults are a thousand pages apart: only hits open the
        // window, and each process's hits count against the other's faults.
        assert!(shared_faults > 18, "{shared_faults}");
    }

    #[test]
    fn vma_readahead_reads_the_virtual_neighbours() {
        // clock-lru on 1,000 frames (watermarks 10/20/200) writes pages 0..1999 once: the
        // oldest go to swap first, so pages 97..=107 are swapped out and 20-200 frames free.
        // By hand from `swap_ra_info`/`swap_vma_readahead` (page-cluster 3, max window 8):
        let mut m = readahead_machine(true, None);
        for v in 0..2_000 {
            m.access(Access::write(v), u64::MAX);
        }
        let before = m.stats.clone();
        // Fault on 100: a fresh VMA holds page 0, window 0, 4 hits: 4 + 2 → 8 pages, not next
        // to page 0, so 3 before and 4 after: [97, 105); 7 pages read ahead, 8 reads in all.
        m.access(Access::read(100), u64::MAX);
        assert_eq!(m.stats.major_faults - before.major_faults, 1);
        assert_eq!(m.stats.swap_ra - before.swap_ra, 7);
        assert_eq!(m.stats.pswpin - before.pswpin, 8);
        // 101 was read ahead: a minor fault and a readahead hit (the VMA: page 101, 1 hit).
        m.access(Access::read(101), u64::MAX);
        assert_eq!(m.stats.major_faults - before.major_faults, 1);
        assert_eq!(m.stats.swap_ra_hit - before.swap_ra_hit, 1);
        // 105 is outside: 1 hit + 2 = 3 → 4, floor 8 / 2 = 4: a window of 4; 105 is not
        // next to 101, so 1 before and 2 after: [104, 108). 104 is in the swap cache
        // already: 106 and 107 are read ahead.
        m.access(Access::read(105), u64::MAX);
        assert_eq!(m.stats.major_faults - before.major_faults, 2);
        assert_eq!(m.stats.swap_ra - before.swap_ra, 9);
        assert_eq!(m.stats.pswpin - before.pswpin, 11);
        // `workingset_refault` runs for every page read in, read ahead or faulted on.
        assert_eq!(
            m.stats.workingset_refault_anon - before.workingset_refault_anon,
            11
        );
        // A rotational disk of the same machine reads the slot window instead (cluster
        // readahead), never the VMA's: its first fault also reads 8 (the global hit counter
        // starts at 4), the aligned slots around 100's.
        let mut h = readahead_machine(true, Some(100_000));
        assert!(h.vma_ra.is_none());
        for v in 0..2_000 {
            h.access(Access::write(v), u64::MAX);
        }
        let before = h.stats.pswpin;
        h.access(Access::read(100), u64::MAX);
        assert_eq!(h.stats.pswpin - before, 8);
    }

    #[test]
    fn pgfault_counts_write_protect_faults() {
        // LRU with 2 frames, 8 swap slots; by hand from `handle_mm_fault`'s PGFAULT:
        //   R0   first touch (the zero page)                     pgfault 1
        //   W0   store to a page mapped read-only: do_wp_page    2
        //   W0   hit, writable                                   2
        //   W1   write fault, mapped writable                    3
        //   W2   write fault (0 swapped out)                     4
        //   R0   read fault: swapped in read-only (1 out)        5
        //   W0   do_wp_page                                      6
        //   R0   hit                                             6
        let mut cfg = MachineConfig::new(2);
        cfg.swap_rotational = Some(8);
        let p = crate::policy::PolicyKind::from_name("lru")
            .unwrap()
            .build(
                2,
                &crate::policy::PolicyOptions::new(1),
                crate::policy::Boxer,
            )
            .unwrap();
        let mut m = Machine::new(&cfg, p).unwrap();
        let mut got = Vec::new();
        for a in [
            Access::read(0),
            Access::write(0),
            Access::write(0),
            Access::write(1),
            Access::write(2),
            Access::read(0),
            Access::write(0),
            Access::read(0),
        ] {
            m.access(a, u64::MAX);
            got.push(m.stats.pgfault);
        }
        assert_eq!(got, [1, 2, 2, 3, 4, 5, 6, 6]);
        assert_eq!(m.stats.faults, 4);
    }

    /// `do_swap_page` → `should_try_to_free_swap` (mm/memory.c, 6.1 and 6.8): a read fault
    /// leaves the page in the swap cache with its slot (a later clean eviction writes
    /// nothing and reuses the slot), a write fault frees the slot, and so does any fault
    /// while the device is more than half full (`vm_swap_full` via `mem_cgroup_swap_full`).
    #[test]
    fn swap_in_keeps_its_slot_unless_written_or_swap_is_half_full() {
        // LRU with 2 frames on a rotational device of `last_page` slots (too small for the
        // slots cache, which needs 5 × 64 free slots: slots are taken one by one, first
        // 1, then 2, ...). Worked by hand:
        //   W0 W1       two first touches fill memory
        //   W2          evicts 0 (LRU): written to slot 1                 pswpout 1
        //   X0          evicts 1: written to slot 2; 0 read from slot 1    pswpout 2
        //   W2          hit
        //   R1          evicts 0, then reads 1 from slot 2
        // With X0 a read and 8 slots (2 used, 6 free: not full), 0 keeps slot 1 and is
        // clean, so its second eviction writes nothing: pswpout 2. With X0 a write, or with
        // 3 slots (1 free: 1 × 2 < 3, full), the swap-in freed slot 1 and the page is
        // written again: pswpout 3.
        let run = |x0_write: bool, last_page: u32| {
            let mut cfg = MachineConfig::new(2);
            cfg.swap_rotational = Some(last_page);
            let p = crate::policy::PolicyKind::from_name("lru")
                .unwrap()
                .build(
                    2,
                    &crate::policy::PolicyOptions::new(1),
                    crate::policy::Boxer,
                )
                .unwrap();
            let mut m = Machine::new(&cfg, p).unwrap();
            let x0 = if x0_write {
                Access::write(0)
            } else {
                Access::read(0)
            };
            for a in [
                Access::write(0),
                Access::write(1),
                Access::write(2),
                x0,
                Access::write(2),
                Access::read(1),
            ] {
                m.access(a, u64::MAX);
            }
            m.validate().unwrap();
            (
                m.stats.major_faults,
                m.stats.pswpin,
                m.stats.pswpout,
                m.mm.swap.n_used(),
            )
        };
        // Slots in use at the end: 0's (swapped out) and 1's (in the swap cache).
        assert_eq!(run(false, 8), (2, 2, 2, 2));
        // The write fault freed slot 1; 0's second swap-out takes a slot again.
        assert_eq!(run(true, 8), (2, 2, 3, 2));
        // Read fault, but swap more than half full: the slot is freed all the same, and
        // 1's swap-in (1 free slot of 3 after 0's new swap-out) frees its slot too.
        assert_eq!(run(false, 3), (2, 2, 3, 1));
    }
}

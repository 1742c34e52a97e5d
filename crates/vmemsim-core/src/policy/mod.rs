//! Page replacement policies behind one trait.
//!
//! The engine ([`crate::engine`]) owns the fault / reclaim loop: it walks page tables, sets
//! accessed and dirty bits, allocates frames, writes victims to swap and maps pages. A policy
//! owns only its decisions: where a new page goes, and which pages leave.
//!
//! Two families share the trait:
//! - **Demand** policies (textbook and libCacheSim style) see every hit through [`Policy::on_hit`]
//!   and give one victim per miss through [`Policy::evict`] once memory is full.
//! - **Kernel** policies (Linux's `clock-lru` and `mglru`) never see hits: the hardware only sets
//!   the PTE accessed bit, which they sample with rmap checks and page-table walks through the
//!   [`Mm`] handed to them. The engine asks them for batches of victims through
//!   [`Policy::shrink`] when free frames fall below the zone watermarks.
//!
//! Adding a policy touches its own file and one variant of [`registry::PolicyKind`].

pub mod arc;
#[cfg(test)]
mod by_hand;
pub mod clock;
pub mod clock_lru;
pub mod clock_pro;
pub mod fifo;
pub mod ghost;
pub mod lfu;
pub mod lirs;
pub mod list;
pub mod lru;
pub mod lru_k;
pub mod mglru;
pub mod mq;
pub mod opt;
pub mod random;
pub mod registry;
pub mod s3fifo;
pub mod sieve;
pub mod sketch;
pub mod slru;
pub mod swap_plug;
pub mod twoq;
pub mod w_tinylfu;

pub use registry::{PolicyKind, PolicyOptions};

use crate::mm::{FrameId, Mm};

/// What the engine tells a policy about the access being served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Touch {
    /// Index of the access in the trace (logical time, 0-based).
    pub t: u64,
    /// Index of the next access to the same page, `u64::MAX` if none; only filled for
    /// policies whose [`Policy::needs_future`] is true, else `u64::MAX`.
    pub next_use: u64,
    pub vpn: u64,
    pub write: bool,
}

/// How a page came to occupy a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Insert {
    /// First touch of a page never seen before (minor fault for anonymous memory).
    FirstTouch,
    /// The page was evicted earlier and faulted back in (a major fault). `shadow` is the value
    /// the policy returned from [`Policy::shadow`] when the page left (`workingset_eviction`).
    Refault { shadow: u32 },
    /// Read into the swap cache by readahead around another page's major fault; not mapped.
    Readahead,
    /// Chosen by reclaim but not freed (its swap-out failed): back on the lists as
    /// `move_folios_to_lru` puts a kept folio back (classic: not active, `keep`; MG-LRU:
    /// `evict_folios` marks a dirty rejected folio active, so the youngest generation). The
    /// page is in the swap cache, unmapped.
    Putback,
    /// Chosen by reclaim, written to an asynchronous swap device and kept while the write
    /// was in flight (`shrink_folio_list`: `pageout` → `PAGE_SUCCESS`, folio under writeback →
    /// `keep`); the write has since completed, and `folio_end_writeback` →
    /// `folio_rotate_reclaimable` → `lru_move_tail_fn` moved it, inactive, to the tail of its
    /// list (MG-LRU: the oldest generation's tail, `lru_gen_add_folio(.., reclaiming = true)`
    /// with `PG_reclaim` already cleared), first in line for the next scan, which frees it
    /// without writing. The page is in the swap cache, unmapped, clean; its reference flags
    /// are those it had when it was isolated.
    Rotate,
    /// Chosen by reclaim, written to an asynchronous swap device, and still under writeback
    /// when the pass ends (timed runs, [`crate::mm::Writeback`]): `shrink_folio_list` kept it
    /// (`pageout` → `PAGE_SUCCESS`, under writeback → `keep`) with `PG_reclaim` set, and the
    /// pass puts it back as `move_folios_to_lru` does: classic LRU, the inactive list's
    /// head; MG-LRU, `evict_folios` leaves a folio with `PG_reclaim` under writeback as it
    /// is ("restore LRU_REFS_FLAGS cleared by isolate_folio()": `PG_referenced` again if
    /// `PG_workingset`), and `lru_gen_add_folio` puts it at the head of `max_seq - 1`. The
    /// page is in the swap cache, unmapped, clean; its reference flags are those it had when
    /// it was isolated. When the write completes, [`Policy::rotate_reclaimable`].
    Writeback,
}

/// What became of a victim the policy sent to be written to an asynchronous swap device,
/// when its write completed during the reclaim pass that chose it ([`Policy::writeback_done`];
/// the block layer's plug, `blk_add_rq_to_plug`, dispatched it before the pass ended).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WritebackDone {
    /// Not a victim the policy tracks: the engine decides as before (written and kept under
    /// writeback if the device is asynchronous, then [`Insert::Rotate`]).
    Untracked,
    /// Written; the write completes after the pass (`blk_finish_plug`): kept, then put back
    /// with [`Insert::Rotate`].
    Pending,
    /// Written, and the write completed while the folio was back on its list:
    /// `folio_end_writeback` → `folio_rotate_reclaimable` already moved it to the tail of
    /// the oldest generation (the policy holds it; `pgrotated`). The engine writes and unmaps
    /// it and keeps it in the swap cache without putting it back.
    Rotated,
    /// Written, rotated, and freed by a later scan of the same pass (`pgrotated`). The
    /// policy counted it reclaimed and computed its shadow; the engine writes and frees it.
    Freed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Demand,
    Kernel,
}

/// Who is reclaiming (the kernel's `current_is_kswapd()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReclaimReason {
    Kswapd,
    Direct,
}

/// Which Linux version's reclaim rules a kernel policy follows where the versions differ
/// (docs/kernel-6.1-vs-6.8.md). The models follow 6.8; `V6_1` switches the differences
/// modelled so far (MG-LRU: kswapd's separate aging pass, `get_nr_to_scan` and
/// `should_abort_scan`, no `set_initial_priority`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum KernelVersion {
    #[serde(rename = "6.1")]
    V6_1,
    #[default]
    #[serde(rename = "6.8")]
    V6_8,
}

impl KernelVersion {
    pub const NAMES: &'static [&'static str] = &["6.1", "6.8"];

    pub fn from_name(s: &str) -> Option<Self> {
        match s.trim() {
            "6.1" => Some(KernelVersion::V6_1),
            "6.8" => Some(KernelVersion::V6_8),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            KernelVersion::V6_1 => "6.1",
            KernelVersion::V6_8 => "6.8",
        }
    }
}

/// The most zones a machine has (ZONE_DMA, ZONE_DMA32, ZONE_NORMAL, ZONE_MOVABLE).
pub const MAX_ZONES: usize = 4;

/// One zone as reclaim reads it (`struct zone`): its free pages, watermarks and the
/// `lowmem_reserve` it keeps against allocations that may use the machine's highest zone
/// (every page the engine allocates is `GFP_HIGHUSER_MOVABLE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneMark {
    pub free: u64,
    pub min: u32,
    pub low: u32,
    pub high: u32,
    pub reserve: u32,
}

/// The zones of a machine with several, lowest first; `n` = 0 on a machine with one zone,
/// which [`ScanControl::nr_free`], `low_wmark` and `high_wmark` describe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneMarks {
    pub n: u8,
    pub z: [ZoneMark; MAX_ZONES],
    /// `sc->reclaim_idx` when below the highest zone (kswapd balancing a boosted zone): the
    /// folios of the zones above are not reclaimed (`None`: every zone may be).
    pub reclaim_idx: Option<u8>,
    /// `!sc->may_writepage`: kswapd reclaiming a watermark boost may not write (nor swap).
    pub writepage_off: bool,
    /// Pages each zone's folios were passed over for `reclaim_idx` (`PGSCAN_SKIP`), which
    /// the policy adds to.
    pub skipped: [u64; MAX_ZONES],
    /// Of those, the pages `pgscan` counts (the classic LRU's inactive lists': its
    /// `isolate_lru_folios` counts every folio it looks at; `sc.nr_scanned` only those taken).
    pub skipped_scanned: u64,
}

impl ZoneMarks {
    /// Whether a folio of zone `zone` may be reclaimed in this pass.
    #[inline]
    pub fn eligible(&self, zone: usize) -> bool {
        self.reclaim_idx.is_none_or(|i| zone <= i as usize)
    }
}

impl ZoneMarks {
    pub fn zones(&self) -> &[ZoneMark] {
        &self.z[..self.n as usize]
    }
}

/// One reclaim pass, as the kernel's `struct scan_control`.
#[derive(Clone, Debug)]
pub struct ScanControl {
    /// Pages wanted (`SWAP_CLUSTER_MAX` = 32 for direct reclaim).
    pub nr_to_reclaim: u32,
    /// `DEF_PRIORITY` (12) down to 0; the pass scans about `lru_size >> priority` pages.
    pub priority: u8,
    pub reason: ReclaimReason,
    /// Pages the policy scanned (`pgscan_*`); the policy adds to it.
    pub nr_scanned: u64,
    /// swappiness, 0..=200 (`vm.swappiness`).
    pub swappiness: u32,
    /// Whether anonymous pages may be reclaimed (swap space exists).
    pub may_swap: bool,
    /// The zone's high watermark in pages (`high_wmark_pages`), read by the classic LRU's
    /// `prepare_scan_control` (its `file_is_tiny` test).
    pub high_wmark: u32,
    /// The swap device completes writes asynchronously (a disk; not zram, whose writes are
    /// synchronous). Then `shrink_folio_list` finds a folio that `pageout` wrote still under
    /// writeback and keeps it: a kernel policy still hands such a victim
    /// ([`crate::mm::Mm::swap_out_writes`]) to the engine, which writes and unmaps it and puts
    /// it back with [`Insert::Rotate`], but counts it neither reclaimed nor evicted (no
    /// `workingset_eviction`, no shadow).
    pub writeback_async: bool,
    /// The swap writes of this pass go through the block layer's plug as the kernel's do
    /// (reclaim runs under `blk_start_plug`; see [`crate::policy::mglru`]'s `SwapPlug`), so
    /// the policy itself gives each written folio its swap slot (`add_to_swap`, in
    /// `shrink_folio_list` order, as the engine would have) and tells the engine, through
    /// [`Policy::writeback_done`], which writes completed during the pass. Set by the engine
    /// with [`ScanControl::writeback_async`], except while a host's memory has named pages
    /// (VSwapper's Mapper: it drops those without a write, which the policy cannot see).
    pub swap_plug: bool,
    /// The swap device's largest request in pages ([`crate::engine::MachineConfig::swap_max_pages`]),
    /// up to which the plug merges contiguous writes.
    pub swap_max_pages: u32,
    /// The zone's low watermark in pages (6.1 MG-LRU's `should_abort_scan` for direct reclaim).
    pub low_wmark: u32,
    /// Free pages when the pass starts and as victims are taken (the policy does not free:
    /// 6.1 MG-LRU's `should_abort_scan` compares the free pages the engine will have).
    pub nr_free: u64,
    /// Which kernel version's rules apply where they differ.
    pub kernel: KernelVersion,
    /// `sc->nr_reclaimed` when the pass starts: what the earlier passes of the same direct
    /// reclaim call (`do_try_to_free_pages`, which runs `shrink_zones` from `DEF_PRIORITY`
    /// down until `nr_reclaimed >= nr_to_reclaim`) freed; 0 for kswapd, whose MG-LRU passes
    /// count from 0 (`lru_gen_shrink_node` in 6.8). MG-LRU's `should_abort_scan` compares
    /// this plus the pass's own reclaim with `nr_to_reclaim` (the classic LRU's
    /// `shrink_lruvec` counts its pass alone). A policy never adds its victims here (the
    /// engine counts the frames it frees), only 6.1's `MIN_LRU_BATCH` credit.
    pub nr_reclaimed: u64,
    /// The zones of a machine with several (`high_wmark` and `low_wmark` are then their
    /// sums, `nr_free` the node's free pages); `None` with one zone (kept out of line so
    /// that a one-zone machine's reclaim passes do not copy it).
    pub zones: Option<Box<ZoneMarks>>,
}

/// A replacement policy. See the module documentation for the two families' contracts.
pub trait Policy: 'static {
    /// The registered name (as given to `--policy`).
    fn name(&self) -> &'static str;
    fn family(&self) -> Family;
    /// True for offline policies (OPT) that need [`Touch::next_use`].
    fn needs_future(&self) -> bool {
        false
    }
    /// Whether the policy models the file pages of the page cache of `read`/`write`
    /// ([`crate::engine::Machine::file_io`]); a replay with file I/O under one that does not
    /// is an error naming it.
    fn models_page_cache(&self) -> bool {
        true
    }
    /// The machine's zones, by the first frame of each, lowest first: called once, on a
    /// machine with several, before any page is inserted. A policy that keeps its lists per
    /// zone (MG-LRU's `lrugen->folios[gen][type][zone]`) splits them; the default ignores
    /// zones (the classic LRU's lists are per node).
    fn set_zones(&mut self, _zone_start: &[FrameId]) {}
    /// A resident page was accessed. Demand policies update recency/frequency here; kernel
    /// policies must leave it empty (they learn only from accessed bits and faults; the engine
    /// does not call it for them).
    /// Fires on the hot path: no allocation, O(1).
    fn on_hit(&mut self, f: FrameId, touch: Touch);
    /// The kernel marked the page in frame `f` accessed without the CPU touching it
    /// (`folio_mark_accessed`, mm/swap.c: `get_user_pages` with `FOLL_TOUCH` does, and so
    /// do reads through a file descriptor). Kernel policies follow `folio_mark_accessed`; to
    /// a demand policy it is a hit (the default).
    fn mark_accessed(&mut self, _mm: &Mm, f: FrameId, touch: Touch) {
        self.on_hit(f, touch)
    }
    /// Whether a refault with `shadow` (from [`Policy::shadow`]) is recent by the policy's
    /// own measure: Linux 6.1's MG-LRU counts `workingset_refault_*` only then (its shadow's
    /// generation is the current `min_seq`, as `lru_gen_refault` checks). Default: yes.
    fn refault_is_recent(&self, _shadow: u32, _file: bool) -> bool {
        true
    }
    /// A hint that frame `f` will probably be hit soon: a policy may prefetch the per-frame
    /// data its `on_hit` touches. Simulator speed only; must not change any state.
    #[inline]
    fn prefetch(&self, _f: FrameId) {}
    /// The frame [`Policy::evict`] would most likely choose `k` evictions from now (`k` = 0:
    /// the next one), without changing anything (libCacheSim's `to_evict`). The engine
    /// prefetches victims' data between misses; a wrong or missing hint costs speed only.
    #[inline]
    fn victim_hint(&self, _k: usize) -> Option<FrameId> {
        None
    }
    /// Prefetch what evicting `f` will touch (speed only); by default what a hit would.
    #[inline]
    fn prefetch_victim(&self, f: FrameId) {
        self.prefetch(f);
    }
    /// The page of `touch` missed and a frame is about to be allocated for it: called before
    /// any [`Policy::evict`] / [`Policy::shrink`] this miss causes, then [`Policy::on_insert`]
    /// follows for the same page. Policies whose victim depends on the incoming page (ARC's
    /// ghost hits adapt `p` before REPLACE; S3-FIFO drops a ghost entry before evicting, as
    /// libCacheSim's `find` does) look it up here; others ignore it. Not called for readahead.
    /// Fires on misses only: a hash lookup is allowed, allocation is not.
    fn on_miss(&mut self, _touch: Touch) {}
    /// A page now occupies frame `f` (mapped after a fault, or readahead into the swap cache).
    fn on_insert(&mut self, mm: &Mm, f: FrameId, touch: Touch, how: Insert);
    /// Demand family: choose one victim among the frames this policy holds and forget it.
    /// Kernel policies may return `None` (the engine only calls [`Policy::shrink`] on them).
    fn evict(&mut self, mm: &mut Mm) -> Option<FrameId>;
    /// Kernel family: isolate about `sc.nr_to_reclaim` victims into `victims`, forgetting them
    /// (a pass may overshoot by up to a batch per list, as `shrink_lruvec` does).
    /// The engine unmaps, writes back and frees them. May clear accessed bits through `mm`
    /// but must not map, unmap or free frames. The default takes demand victims one by one.
    fn shrink(&mut self, mm: &mut Mm, sc: &mut ScanControl, victims: &mut Vec<FrameId>) {
        while (victims.len() as u32) < sc.nr_to_reclaim {
            sc.nr_scanned += 1;
            match self.evict(mm) {
                Some(f) => victims.push(f),
                None => break,
            }
        }
    }
    /// Kernel family: a reclaim run ended — kswapd's `balance_pgdat`, or one
    /// `do_try_to_free_pages` cascade of direct reclaim down the priorities. The kernel
    /// calls `snapshot_refaults` there (not after each `shrink_node` pass), so the classic
    /// LRU's "refaults since the last snapshot" test in `prepare_scan_count` stays true for
    /// every pass of a run that started after refaults.
    fn reclaim_done(&mut self, _reason: ReclaimReason) {}
    /// The workingset shadow to store for a victim about to leave (`workingset_eviction`);
    /// given back in [`Insert::Refault`]. Called by the engine just before the frame is freed.
    fn shadow(&mut self, _mm: &Mm, _f: FrameId) -> u32 {
        0
    }
    /// Frame `f` left for a reason other than this policy's own eviction (e.g. unmap).
    fn on_remove(&mut self, f: FrameId);
    /// What became of victim `f`'s swap write during the pass that chose it
    /// ([`ScanControl::swap_plug`]); asked once per anonymous victim, by the engine, when it
    /// reclaims it. Forgets the answer.
    fn writeback_done(&mut self, _f: FrameId) -> WritebackDone {
        WritebackDone::Untracked
    }
    /// Anonymous frame `f` now holds a named page, an unwritten private mapping of a file
    /// block (`file`), or holds one no longer (written: anonymous again): the engine's
    /// [`crate::engine::Machine::named`], VSwapper's Swap Mapper. In the kernel these are
    /// different folios (the page-cache page the mapping maps; the anonymous copy
    /// `do_wp_page` makes), so a policy with anonymous and file lists moves the frame to
    /// the other type's list as a new folio (`folio_add_lru`). Called on a frame on the
    /// policy's lists, or before [`Policy::on_insert`] of a frame that comes in named (a
    /// named page's refault). Default: nothing (a policy without the two types).
    fn set_file_lru(&mut self, _mm: &Mm, _f: FrameId, _file: bool) {}
    /// The swap write of folio `f`, on the policy's lists since reclaim kept it under
    /// writeback ([`Insert::Writeback`]), completed (timed runs, [`crate::mm::Writeback`]):
    /// `folio_end_writeback` clears `PG_reclaim` and calls `folio_rotate_reclaimable` →
    /// `lru_move_tail_fn`, which clears `PG_active` and adds the folio at its list's tail
    /// (`lruvec_add_folio_tail`; MG-LRU: `lru_gen_add_folio(.., reclaiming = true)`, the
    /// oldest generation). The engine has checked the rest of `folio_rotate_reclaimable`'s
    /// test (not locked, not dirty). Returns whether it moved (`PGROTATED`). Linux 6.1 and
    /// 6.8, mm/filemap.c and mm/swap.c. Default: nothing (a policy without such lists).
    fn rotate_reclaimable(&mut self, _mm: &Mm, _f: FrameId) -> bool {
        false
    }
    /// Recount every invariant (each held frame on exactly one list, bounds); test builds use it.
    fn validate(&self, mm: &Mm) -> Result<(), String>;
    /// Policy-specific counters (name, value) reported with the results.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// Page-table scanning done so far (cumulative), for the timing engine to charge as CPU
    /// time: entries visited by aging walks and look-around. Pages scanned through the
    /// reverse map are counted by the engine (`pgscan_*`), not here.
    fn scan_work(&self) -> ScanWork {
        ScanWork::default()
    }
}

/// Timed runs, between a reclaim pass's batches: the swap writes that completed meanwhile,
/// earlier passes' too, end their writeback (`end_swap_bio_write` → `folio_end_writeback`,
/// from the device's completion interrupt, which comes while reclaim runs), and
/// `folio_rotate_reclaimable` moves each folio on a list to the tail (`lru_move_tail_fn`),
/// where the pass's next batches find it. Linux 6.1 and 6.8. The pass's own plugged writes
/// are [`swap_plug::SwapWrites::end_batch`]'s, asked first. Left out: the per-CPU
/// `lru_rotate` folio batch, which moves them up to 15 at a time.
pub(crate) fn end_writebacks_in_pass<P: Policy + ?Sized>(p: &mut P, mm: &mut Mm) {
    while let Some((f, ok)) = mm.next_written_back() {
        if ok && p.rotate_reclaimable(mm, f) {
            if let Some(w) = mm.wb.as_mut() {
                w.rotated += 1;
            }
        }
    }
}

/// Cumulative page-table scanning of a policy ([`Policy::scan_work`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanWork {
    /// PTEs read by aging walks (`walk_pte_range`).
    pub walk_ptes: u64,
    /// PMD entries visited by aging walks (`walk_pmd_range`), including those skipped by the
    /// Bloom filter or the non-leaf accessed bit.
    pub walk_pmds: u64,
    /// PTEs read by look-around around an rmap hit (`lru_gen_look_around`).
    pub lookaround_ptes: u64,
}

impl ScanWork {
    /// The CPU time of this much scanning at `walk_pte_ns` per walked PTE, `walk_pmd_ns` per
    /// walked PMD entry and `lookaround_pte_ns` per look-around PTE (the timing engine's
    /// and the VM layer's costs of MG-LRU aging).
    pub fn cost_ns(&self, walk_pte_ns: u64, walk_pmd_ns: u64, lookaround_pte_ns: u64) -> u64 {
        self.walk_ptes * walk_pte_ns
            + self.walk_pmds * walk_pmd_ns
            + self.lookaround_ptes * lookaround_pte_ns
    }

    /// The scanning done since `earlier` (both cumulative).
    pub fn since(&self, earlier: &ScanWork) -> ScanWork {
        ScanWork {
            walk_ptes: self.walk_ptes - earlier.walk_ptes,
            walk_pmds: self.walk_pmds - earlier.walk_pmds,
            lookaround_ptes: self.lookaround_ptes - earlier.lookaround_ptes,
        }
    }
}

/// A policy chosen at run time (the VM layer holds a guest and a host policy of any kinds
/// without compiling every pair): forwards every call.
pub type BoxedPolicy = Box<dyn Policy>;

impl Policy for BoxedPolicy {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn family(&self) -> Family {
        (**self).family()
    }
    fn needs_future(&self) -> bool {
        (**self).needs_future()
    }
    fn models_page_cache(&self) -> bool {
        (**self).models_page_cache()
    }
    fn set_zones(&mut self, zone_start: &[FrameId]) {
        (**self).set_zones(zone_start)
    }
    #[inline]
    fn on_hit(&mut self, f: FrameId, touch: Touch) {
        (**self).on_hit(f, touch)
    }
    fn mark_accessed(&mut self, mm: &Mm, f: FrameId, touch: Touch) {
        (**self).mark_accessed(mm, f, touch)
    }
    fn refault_is_recent(&self, shadow: u32, file: bool) -> bool {
        (**self).refault_is_recent(shadow, file)
    }
    fn prefetch(&self, f: FrameId) {
        (**self).prefetch(f)
    }
    fn victim_hint(&self, k: usize) -> Option<FrameId> {
        (**self).victim_hint(k)
    }
    fn prefetch_victim(&self, f: FrameId) {
        (**self).prefetch_victim(f)
    }
    fn on_miss(&mut self, touch: Touch) {
        (**self).on_miss(touch)
    }
    fn on_insert(&mut self, mm: &Mm, f: FrameId, touch: Touch, how: Insert) {
        (**self).on_insert(mm, f, touch, how)
    }
    fn evict(&mut self, mm: &mut Mm) -> Option<FrameId> {
        (**self).evict(mm)
    }
    fn shrink(&mut self, mm: &mut Mm, sc: &mut ScanControl, victims: &mut Vec<FrameId>) {
        (**self).shrink(mm, sc, victims)
    }
    fn reclaim_done(&mut self, reason: ReclaimReason) {
        (**self).reclaim_done(reason)
    }
    fn shadow(&mut self, mm: &Mm, f: FrameId) -> u32 {
        (**self).shadow(mm, f)
    }
    fn on_remove(&mut self, f: FrameId) {
        (**self).on_remove(f)
    }
    fn writeback_done(&mut self, f: FrameId) -> WritebackDone {
        (**self).writeback_done(f)
    }
    fn set_file_lru(&mut self, mm: &Mm, f: FrameId, file: bool) {
        (**self).set_file_lru(mm, f, file)
    }
    fn rotate_reclaimable(&mut self, mm: &Mm, f: FrameId) -> bool {
        (**self).rotate_reclaimable(mm, f)
    }
    fn validate(&self, mm: &Mm) -> Result<(), String> {
        (**self).validate(mm)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        (**self).counters()
    }
    fn scan_work(&self) -> ScanWork {
        (**self).scan_work()
    }
}

/// Builds a [`BoxedPolicy`] through [`registry::PolicyKind::build`].
pub struct Boxer;

impl registry::PolicyVisitor for Boxer {
    type Out = BoxedPolicy;
    fn visit<P: Policy>(self, p: P) -> BoxedPolicy {
        Box::new(p)
    }
}

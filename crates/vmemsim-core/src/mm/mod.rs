//! Memory model of one native process: address space (radix page tables + VMAs), physical
//! frames with a reverse map, swap slots and the swap cache.
//!
//! The guest and host layers of DESIGN.md reuse these pieces: a guest is another `Mm` whose
//! frames are guest-physical pages. The page cache of unmapped file I/O keeps its entries in
//! the same page table, in a range of page numbers of its own ([`pagecache`]). Left out here:
//! shared pages (one mapping per frame), huge pages, mlock.

pub mod buddy;
pub mod cacol;
pub mod frames;
pub mod pagecache;
pub mod pagetable;
pub mod rotational;
pub mod slab;
pub mod swap;
pub mod vma;

pub use frames::{FrameId, Frames, NO_FRAME};
pub use pagecache::{FileSpec, PageCache};
pub use pagetable::*;
pub use swap::{CountingDevice, PoolCharge, Swap, SwapDevice, SwapIo, NO_SLOT};
pub use vma::{Vma, VmaKind, Vmas};

/// The swap writes in flight of a timed run (`PG_writeback`). A frame whose folio `pageout`
/// wrote stays allocated until the write completes: reclaim cannot free it meanwhile
/// (`shrink_folio_list` keeps a folio under writeback, `sort_folio` moves it on a
/// generation), and at completion `folio_end_writeback` → `folio_rotate_reclaimable` moves it
/// to the tail of its list for the next scan to free (Linux 6.1 and 6.8, `mm/filemap.c`,
/// `mm/swap.c`).
#[derive(Debug, Default)]
pub struct Writeback {
    /// Per frame, when its write completes: `u64::MAX` while the write waits in the
    /// plug (issued, not yet submitted to the device), 0 when none is in flight.
    pub until: Vec<u64>,
    /// The completions not yet processed, earliest first: (time, frame). An entry is
    /// current while `until[frame]` still equals its time.
    pub done: std::collections::BinaryHeap<std::cmp::Reverse<(u64, FrameId)>>,
    /// Frames whose write is in flight or whose completion is not yet processed.
    pub n: u64,
    /// Per frame: its write was handed to the device by a plug flush during the pass that
    /// wrote it ([`Mm::dispatch_write`]), so the engine does not submit it again.
    pub dispatched: Vec<bool>,
    /// Where the writes go ([`WriteSink`]).
    pub sink: Option<Box<dyn WriteSink>>,
    /// The simulated time a reclaim pass takes per page scanned and per page reclaimed:
    /// each batch moves [`Mm::now`] on by its work ([`Mm::reclaim_time`]).
    pub scan_ns: u64,
    pub reclaim_ns: u64,
    /// `PGDAT_WRITEBACK`: kswapd's last pass found only folios under writeback among those
    /// it took (classic LRU's `shrink_node`); cleared when kswapd goes to sleep balanced
    /// (`prepare_kswapd_sleep` → `clear_pgdat_congested`).
    pub pgdat_writeback: bool,
    /// The current reclaim pass's `sc->nr`: folios taken, found under writeback (case 2 of
    /// `shrink_folio_list`'s writeback test) and marked for immediate reclaim (case 1:
    /// kswapd with `PGDAT_WRITEBACK`). Classic LRU counts them.
    pub nr_taken: u64,
    pub nr_writeback: u64,
    pub nr_immediate: u64,
    /// Folios a policy rotated within a pass as their writes completed
    /// ([`crate::policy::end_writebacks_in_pass`]); the engine counts them in `pgrotated`.
    pub rotated: u64,
}

/// Reclaim meeting dirty page-cache folios (Linux 6.1 and 6.8, mm/vmscan.c): the node's
/// `PGDAT_DIRTY` flag and the current pass's counts behind it and behind the flusher's
/// wake-up. Classic LRU's `shrink_folio_list` counts and sets them; MG-LRU's `sort_folio`
/// moves dirty file folios on before `shrink_folio_list` sees them, and
/// `lru_gen_shrink_node` returns before `shrink_node` looks at the counts.
#[derive(Debug, Default)]
pub struct VmscanDirty {
    /// `PGDAT_DIRTY`: kswapd's last pass found only dirty, not yet queued folios among the
    /// file folios it took (`sc->nr.unqueued_dirty == sc->nr.file_taken`, `shrink_node`),
    /// so kswapd may write a dirty file folio it meets a second time (`PG_reclaim` set)
    /// itself (`pageout`). Cleared when kswapd goes to sleep balanced
    /// (`clear_pgdat_congested`).
    pub pgdat_dirty: bool,
    /// The current pass's `sc->nr.unqueued_dirty` and `sc->nr.file_taken`.
    pub nr_unqueued_dirty: u64,
    pub nr_file_taken: u64,
    /// `shrink_inactive_list` found every folio it took dirty and not queued for writeback
    /// (`stat.nr_unqueued_dirty == nr_taken`): `wakeup_flusher_threads(WB_REASON_VMSCAN)`,
    /// which the engine does after the pass (the flusher writes every dirty page).
    pub wake_flusher: bool,
    /// Mapped dirty page-cache folios `shrink_folio_list` kept for the flusher: it unmapped
    /// them first (`try_to_unmap`, before its dirty test), which the engine does after the
    /// pass. They stay cached; the next access through the mapping is a minor fault.
    pub unmap: Vec<crate::mm::FrameId>,
}

/// Where a timed run's swap writes go when the block layer's plug dispatches them (a flush
/// when it is full, `blk_add_rq_to_plug`, or `blk_finish_plug` at the end of the pass): the
/// device answers when each write completes ([`crate::engine::Machine::set_write_sink`]).
pub trait WriteSink: std::fmt::Debug {
    /// Submit the writes (and discards) in `mm`'s swap log
    /// ([`CountingDevice::take_writes`]) at `mm.now`, and set each one's completion time
    /// ([`Mm::set_write_done`]).
    fn flush(&mut self, mm: &mut Mm);
}

impl Writeback {
    pub fn new(n_frames: u32) -> Writeback {
        Writeback {
            until: vec![0; n_frames as usize],
            done: Default::default(),
            n: 0,
            dispatched: vec![false; n_frames as usize],
            sink: None,
            scan_ns: 0,
            reclaim_ns: 0,
            pgdat_writeback: false,
            nr_taken: 0,
            nr_writeback: 0,
            nr_immediate: 0,
            rotated: 0,
        }
    }

    /// `reclaim_throttle(pgdat, VMSCAN_THROTTLE_WRITEBACK)` from `now` for one throttled task
    /// (Linux 6.1 and 6.8): it sleeps until `SWAP_CLUSTER_MAX` (32) more pages have finished
    /// writeback (`__acct_reclaim_writeback` wakes it once `nr_written` exceeds 32 times the
    /// tasks throttled) or `HZ / 10` (100 ms) has passed. Returns when it wakes.
    pub fn throttle_until(&self, now: u64) -> u64 {
        let timeout = now + 100_000_000;
        let mut t: Vec<u64> = self
            .done
            .iter()
            .map(|r| r.0)
            .filter(|&(t, f)| self.until[f as usize] == t && t > now)
            .map(|(t, _)| t)
            .collect();
        if t.len() <= 32 {
            return timeout;
        }
        let (_, &mut nth, _) = t.select_nth_unstable(32);
        nth.min(timeout)
    }

    /// `pageout` → `swap_writepage`: frame `f`'s write is issued (`folio_start_writeback`);
    /// its completion time is set when the plug submits it ([`Mm::set_write_done`]).
    pub fn start(&mut self, f: FrameId) {
        let t = &mut self.until[f as usize];
        if *t == 0 {
            self.n += 1;
        }
        *t = u64::MAX;
    }

    /// Frame `f` is freed (a process exit or munmap dropped its page): whatever write it had
    /// in flight no longer holds it.
    pub fn clear(&mut self, f: FrameId) {
        if let Some(t) = self.until.get_mut(f as usize) {
            if *t != 0 {
                self.n -= 1;
                *t = 0;
            }
        }
    }

    /// The next frame whose write has completed by `now`, taken off the writeback state.
    pub fn pop_done(&mut self, now: u64) -> Option<FrameId> {
        while let Some(&std::cmp::Reverse((t, f))) = self.done.peek() {
            if t > now {
                return None;
            }
            self.done.pop();
            if self.until[f as usize] == t {
                self.until[f as usize] = 0;
                self.n -= 1;
                return Some(f);
            }
        }
        None
    }
}

/// The memory of one machine as the reclaim code sees it.
#[derive(Debug)]
pub struct Mm {
    pub pt: PageTable,
    pub vmas: Vmas,
    pub frames: Frames,
    pub swap: Swap,
    /// The files of unmapped file I/O and their readahead states (their pages' entries are
    /// in `pt`).
    pub cache: PageCache,
    /// The file mappings (recorded `mmap`s of files) whose pages are the page cache's.
    pub maps: pagecache::FileMaps,
    /// Timed runs: per frame, when the swap read filling it completes (the folio stays
    /// locked until then: `swap_read_folio` → `end_swap_bio_read` → `folio_unlock`), and the
    /// simulated time of the work in progress. `None` in untimed runs, where reads complete
    /// at once.
    pub io_lock: Option<Vec<u64>>,
    pub now: u64,
    /// Timed runs with an asynchronous swap device: the swap writes in flight
    /// ([`Writeback`]). `None` elsewhere, where a write completes by the end of the reclaim
    /// pass that issued it.
    pub wb: Option<Writeback>,
    /// `current->in_lru_fault` (`lru_gen_enter_fault`): a fault of a file mapping is in
    /// progress, so the page-cache folios it adds (its readahead's) are added by
    /// `folio_add_lru` under `lru_gen_in_fault()`.
    pub in_lru_fault: bool,
    /// Reclaim's view of dirty page-cache folios ([`VmscanDirty`]).
    pub vmscan_dirty: VmscanDirty,
}

impl Mm {
    pub fn new(n_frames: u32) -> Self {
        Mm {
            pt: PageTable::new(),
            vmas: Vmas::default(),
            frames: Frames::new(n_frames),
            swap: Swap::default(),
            cache: PageCache::default(),
            maps: pagecache::FileMaps::default(),
            io_lock: None,
            now: 0,
            wb: None,
            in_lru_fault: false,
            vmscan_dirty: VmscanDirty::default(),
        }
    }

    /// Whether frame `f`'s read is still in flight at `now`: reclaim cannot take its folio
    /// lock (`shrink_folio_list`: `folio_trylock` fails → `keep`).
    #[inline]
    pub fn io_locked(&self, f: FrameId) -> bool {
        self.io_lock
            .as_ref()
            .is_some_and(|l| l.get(f as usize).is_some_and(|&t| t > self.now))
    }

    /// Whether frame `f` is under writeback at `now` (`folio_test_writeback`): its swap write
    /// was issued and has not completed ([`Writeback`]).
    #[inline]
    pub fn under_writeback(&self, f: FrameId) -> bool {
        self.wb
            .as_ref()
            .is_some_and(|w| w.until.get(f as usize).is_some_and(|&t| t > self.now))
    }

    /// The writes to swap slots `slot..slot + n` (in the swap cache of the frames that issued
    /// them) complete at `done` (`end_swap_bio_write` → `folio_end_writeback`).
    pub fn set_write_done(&mut self, slot: u32, n: u32, done: u64) {
        let Some(w) = self.wb.as_mut() else {
            return;
        };
        for s in slot..slot.saturating_add(n) {
            let f = self.swap.cached_frame(s);
            if f != NO_FRAME && w.until.get(f as usize) == Some(&u64::MAX) {
                w.until[f as usize] = done;
                w.done.push(std::cmp::Reverse((done, f)));
            }
        }
    }

    /// Timed runs: a plug flush dispatches the write of frame `f` (in the swap cache at its
    /// slot) now; [`Mm::submit_writes`] hands it to the device.
    pub fn dispatch_write(&mut self, f: FrameId) {
        let slot = self.frames.slot(f);
        if let Some(w) = self.wb.as_mut() {
            w.start(f);
            w.dispatched[f as usize] = true;
            self.swap.device.submit(SwapIo::Write { slot });
            // (in the swap cache from now: `add_to_swap` ran before `pageout`; the engine
            // records the rest after the pass)
            self.swap.set_cached_frame(slot, f);
        }
    }

    /// Timed runs: the writes logged so far go to the device at `now` ([`WriteSink`]).
    pub fn submit_writes(&mut self) {
        let Some(mut s) = self.wb.as_mut().and_then(|w| w.sink.take()) else {
            return;
        };
        if self.swap.device.has_log() {
            s.flush(self);
        }
        if let Some(w) = self.wb.as_mut() {
            w.sink = Some(s);
        }
    }

    /// Timed runs: a reclaim batch that scanned `scanned` pages and took `victims` as
    /// victims took its time; `now` moves on by it (the costs the layer above charges the
    /// reclaiming thread afterwards: `reclaim_page_ns` for each victim that
    /// [`Mm::reclaim_work`] says does the work, so a folio written and kept under writeback
    /// costs it at its write, and costs only its scan when a later batch frees it).
    #[inline]
    pub fn reclaim_time(&mut self, scanned: u64, victims: &[FrameId]) {
        if let Some(w) = self.wb.as_ref() {
            let work = victims.iter().filter(|&&f| self.reclaim_work(f)).count() as u64;
            self.now += scanned * w.scan_ns + work * w.reclaim_ns;
        }
    }

    /// Timed runs: `folio_end_writeback` of the next swap write completed by `now`, if any:
    /// its frame, and whether `folio_rotate_reclaimable` may move it (in use, in the swap
    /// cache, clean, not locked; whether it is on a list is the policy's to say).
    pub fn next_written_back(&mut self) -> Option<(FrameId, bool)> {
        let now = self.now;
        let f = self.wb.as_mut()?.pop_done(now)?;
        let fl = self.frames.flags(f);
        let ok = fl & frames::F_IN_USE != 0
            && fl & (frames::F_SWAPCACHE | frames::F_DIRTY) == frames::F_SWAPCACHE
            && !self.io_locked(f);
        Some((f, ok))
    }

    /// The frames caching swap slots `slot..slot + n` are being read until `until`.
    pub fn lock_for_read(&mut self, slot: u32, n: u32, until: u64) {
        let n_frames = self.frames.len() as usize;
        let lock = self.io_lock.get_or_insert_with(|| vec![0; n_frames]);
        for s in slot..slot.saturating_add(n) {
            let f = self.swap.cached_frame(s);
            if let Some(t) = lock.get_mut(f as usize) {
                *t = until;
            }
        }
    }

    /// Take a free frame for `vpn` with its rmap pointing at `vpn`'s PTE (tables allocated as
    /// needed). The caller maps it.
    pub fn alloc_frame(&mut self, vpn: u64, flags: u8) -> Option<FrameId> {
        let idx = self.pt.pte_index(vpn);
        self.frames.alloc(idx, flags)
    }

    /// Virtual page held by frame `f` (its rmap).
    #[inline]
    pub fn owner(&self, f: FrameId) -> u64 {
        self.pt.vpn_of(self.frames.pte(f))
    }

    /// The file position and page index of page-cache frame `f`: through its xarray entry
    /// (its rmap) or, while a file mapping maps it, through the mapping of its PTE.
    pub fn pc_page(&self, f: FrameId) -> Option<(usize, u64)> {
        let vpn = self.owner(f);
        if self.frames.is_mapped(f) {
            let m = self.maps.find(vpn)?;
            Some((m.file, m.index(vpn)))
        } else {
            self.cache.page_of(vpn)
        }
    }

    /// The global index of the xarray entry of page `index` of file `i`, if its leaf exists.
    pub fn pc_entry_index(&self, i: usize, index: u64) -> Option<PteIndex> {
        let vpn = self.cache.file(i).base + index;
        self.pt.peek_index(vpn).or_else(|| self.pt.find_index(vpn))
    }

    /// Take a swap slot for the page `vpn`.
    pub fn alloc_swap_slot(&mut self, vpn: u64) -> u32 {
        let idx = self.pt.pte_index(vpn);
        self.swap.alloc(idx)
    }

    /// rmap check of one frame, as `folio_referenced` → `folio_referenced_one` →
    /// `ptep_clear_flush_young`: returns whether the mapping PTE was young, and clears it.
    /// An unmapped frame (swap cache, readahead) has no PTE and is never young.
    #[inline]
    pub fn test_and_clear_young(&mut self, f: FrameId) -> bool {
        if !self.frames.is_mapped(f) {
            return false;
        }
        let pte = self.pt.at(self.frames.pte(f));
        let young = *pte & PTE_ACCESSED != 0;
        *pte &= !PTE_ACCESSED;
        young
    }

    /// rmap checks of a batch of frames (`folio_referenced` on each), writing whether each was
    /// young into `young`. Same result as [`Mm::test_and_clear_young`] on each in order; the
    /// loads of the batch are prefetched first so their cache misses overlap.
    pub fn test_and_clear_young_batch(&mut self, batch: &[FrameId], young: &mut [bool]) {
        self.prefetch_rmap(batch);
        for (y, &f) in young.iter_mut().zip(batch) {
            *y = self.test_and_clear_young(f);
        }
    }

    /// Prefetch the frame records and PTEs of a batch about to get rmap checks (speed only).
    pub fn prefetch_rmap(&self, batch: &[FrameId]) {
        for &f in batch {
            self.frames.prefetch(f);
        }
        for &f in batch {
            if self.frames.is_mapped(f) {
                self.pt.prefetch(self.frames.pte(f));
            }
        }
    }

    /// Whether the frame's PTE is young, without clearing it.
    #[inline]
    pub fn is_young(&self, f: FrameId) -> bool {
        self.frames.is_mapped(f) && self.pt.get(self.frames.pte(f)) & PTE_ACCESSED != 0
    }

    /// Whether the frame holds data not yet on its backing store (PTE dirty bit or `PG_dirty`).
    pub fn is_dirty(&self, f: FrameId) -> bool {
        if self.frames.flags(f) & frames::F_DIRTY != 0 {
            return true;
        }
        self.frames.is_mapped(f) && self.pt.get(self.frames.pte(f)) & PTE_DIRTY != 0
    }

    /// `folio_test_dirty` of a page-cache folio: its `PG_dirty`, which a write sets (a file
    /// mapping's dirty PTE is not the folio's flag until the page is cleaned or unmapped).
    pub fn page_cache_dirty(&self, f: FrameId) -> bool {
        let both = frames::F_PAGECACHE | frames::F_DIRTY;
        self.frames.flags(f) & both == both
    }

    /// Whether reclaiming anonymous frame `f` writes it to swap (`pageout`): it has no swap
    /// slot yet, or its data changed since its swap copy was made. Policies and the engine
    /// ask the same question of the same state, so they agree on which victims are written.
    pub fn swap_out_writes(&self, f: FrameId) -> bool {
        self.frames.is_anon(f) && (self.frames.slot(f) == NO_SLOT || self.is_dirty(f))
    }

    /// Whether reclaim taking frame `f` as a victim does the work the cost table's
    /// `reclaim_page_ns` stands for at this visit (`shrink_folio_list`: `try_to_unmap`,
    /// `add_to_swap` and `pageout`, or `__remove_mapping` of a page-cache folio): every
    /// victim but an anonymous folio already unmapped and clean in the swap cache, whose
    /// unmapping and write an earlier visit did (a written folio freed once its writeback
    /// ended, a swap-cache page readahead brought in). Asked of the victims before the
    /// engine unmaps them.
    pub fn reclaim_work(&self, f: FrameId) -> bool {
        !self.frames.is_anon(f) || self.frames.is_mapped(f) || self.swap_out_writes(f)
    }

    /// `folio_free_swap` (mm/swapfile.c) where `shrink_folio_list`'s `activate_locked` calls
    /// it for a folio in the swap cache while swap is more than half full
    /// (`mem_cgroup_swap_full` → `vm_swap_full`): a mapped anonymous frame gives up its
    /// slot and becomes dirty (it has no swap copy, so its next reclaim writes it). A frame
    /// whose PTE is a swap entry (`folio_swapped`) or that is under writeback (unmapped here)
    /// keeps it. Returns whether the slot was freed.
    pub fn free_swap_if_full(&mut self, f: FrameId) -> bool {
        let slot = self.frames.slot(f);
        if slot == NO_SLOT
            || !self.frames.is_anon(f)
            || !self.frames.is_mapped(f)
            || !self.swap.vm_swap_full()
        {
            return false;
        }
        self.swap.free(slot);
        self.frames.set_slot(f, NO_SLOT);
        self.frames.clear_flags(f, frames::F_SWAPCACHE);
        true
    }

    /// Recount every invariant of the frame table, page table and swap map.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.frames.len();
        if let Some(w) = self.wb.as_ref() {
            let mut k = 0u64;
            for (f, &t) in w.until.iter().enumerate() {
                if t == 0 {
                    continue;
                }
                k += 1;
                let fl = self.frames.flags(f as FrameId);
                if fl & frames::F_IN_USE == 0 || fl & frames::F_SWAPCACHE == 0 {
                    return Err(format!(
                        "frame {f} under writeback (until {t}) is not a swap-cache page"
                    ));
                }
            }
            if k != w.n {
                return Err(format!("{k} frames under writeback, counted {}", w.n));
            }
        }
        let mut used = 0u32;
        let mut cached = vec![0u64; self.cache.files().len()];
        let mut dirty_n = vec![0u64; self.cache.files().len()];
        for f in 0..n {
            if !self.frames.in_use(f) {
                continue;
            }
            used += 1;
            let vpn = self.owner(f);
            let pte = self.pt.pte(vpn);
            if self.pt.vpn_of(self.frames.pte(f)) != vpn {
                return Err(format!(
                    "frame {f}: rmap PTE index does not point at vpn {vpn:#x}"
                ));
            }
            let pagecache = self.frames.flags(f) & frames::F_PAGECACHE != 0;
            if self.frames.is_mapped(f) && (pte & PTE_PRESENT == 0 || pte_frame(pte) != f) {
                return Err(format!(
                    "frame {f} mapped at vpn {vpn:#x} but PTE is {pte:#x}"
                ));
            }
            if pagecache {
                let mapped = self.frames.is_mapped(f);
                if mapped {
                    // Mapped by a file mapping: its xarray entry holds it, and a dirty PTE
                    // has a dirty page (`do_shared_fault`, `wp_page_shared`).
                    let Some(m) = self.maps.find(vpn) else {
                        return Err(format!(
                            "page-cache frame {f} mapped at vpn {vpn:#x}, in no file mapping"
                        ));
                    };
                    let e = self
                        .pc_entry_index(m.file, m.index(vpn))
                        .map_or(0, |x| self.pt.get(x));
                    if e & PTE_PRESENT == 0 || pte_frame(e) != f {
                        return Err(format!(
                            "frame {f} mapped at vpn {vpn:#x}: its xarray entry is {e:#x}"
                        ));
                    }
                    if pte & PTE_DIRTY != 0
                        && (!m.shared || self.frames.flags(f) & frames::F_DIRTY == 0)
                    {
                        return Err(format!(
                            "page-cache frame {f} at vpn {vpn:#x}: dirty PTE, but a private \
                             mapping or a clean page"
                        ));
                    }
                } else if pte & PTE_PRESENT == 0 || pte_frame(pte) != f {
                    return Err(format!(
                        "frame {f} in the page cache at page {vpn:#x} but its entry is {pte:#x}"
                    ));
                }
                if self.frames.is_anon(f) || self.frames.slot(f) != NO_SLOT {
                    return Err(format!(
                        "frame {f} in the page cache but anonymous or in the swap cache"
                    ));
                }
                match self.pc_page(f) {
                    Some((i, index)) if index < self.cache.file(i).size_pages() => {
                        cached[i] += 1;
                        let dirty = self.frames.flags(f) & frames::F_DIRTY != 0;
                        if dirty != self.cache.file(i).dirty.contains(&index) {
                            return Err(format!(
                                "page {index} of file {}: dirty {dirty}, but its dirty tag says \
                                 otherwise",
                                self.cache.file(i).id
                            ));
                        }
                        dirty_n[i] += dirty as u64;
                    }
                    Some((i, index)) => {
                        let file = self.cache.file(i);
                        return Err(format!(
                            "frame {f} caches page {index} of file {} beyond its size {}",
                            file.id, file.i_size
                        ));
                    }
                    None => {
                        return Err(format!(
                            "frame {f} in the page cache at page {vpn:#x}, which is no file's"
                        ))
                    }
                }
            } else if !self.frames.is_mapped(f) && self.frames.flags(f) & frames::F_SWAPCACHE == 0 {
                return Err(format!(
                    "frame {f} in use, unmapped and not in the swap cache"
                ));
            }
            let slot = self.frames.slot(f);
            if slot != NO_SLOT && self.swap.cached_frame(slot) != f {
                return Err(format!(
                    "frame {f} says slot {slot} but the swap cache says otherwise"
                ));
            }
        }
        if used + self.frames.n_unused() + self.frames.n_held() != n {
            return Err(format!(
                "frame accounting: {used} used + {} free + {} held != {n}",
                self.frames.n_unused(),
                self.frames.n_held()
            ));
        }
        for (i, (file, &n)) in self.cache.files().iter().zip(&cached).enumerate() {
            if file.dirty.len() as u64 != dirty_n[i] {
                return Err(format!(
                    "file {}: {} pages tagged dirty but {} dirty frames",
                    file.id,
                    file.dirty.len(),
                    dirty_n[i]
                ));
            }
            if file.nrpages != n {
                return Err(format!(
                    "file {}: nrpages {} but {n} frames cache its pages",
                    file.id, file.nrpages
                ));
            }
            if n > file.size_pages() {
                return Err(format!(
                    "file {}: {n} pages cached, more than its {} pages",
                    file.id,
                    file.size_pages()
                ));
            }
        }
        self.frames.validate_free_list()?;
        self.swap.validate()?;
        Ok(())
    }
}

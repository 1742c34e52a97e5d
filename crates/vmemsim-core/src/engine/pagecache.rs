//! File I/O through the page cache (Linux 6.8, order-0 folios as on ext4 and block devices),
//! untimed: each `read`/`pread64` and `write`/`pwrite64` record of a trace goes through the
//! machine's page cache ([`crate::mm::pagecache`]) as the kernel's buffered I/O does.
//!
//! - Reads follow `filemap_read` → `filemap_get_pages`: the present pages from the read's
//!   position (`filemap_get_read_batch`: up to `PAGEVEC_SIZE` = 15, stopping at a missing
//!   page or shadow entry and after a page marked `PG_readahead`); none present →
//!   `page_cache_sync_readahead` → `page_cache_sync_ra`; still none → `filemap_create_folio`
//!   reads the one page; the batch's last page marked `PG_readahead` →
//!   `filemap_readahead` → `page_cache_async_ra` (clears the mark). Each page copied is
//!   marked accessed (`folio_mark_accessed`, [`Policy::mark_accessed`]), but the first one
//!   of a read that starts in the page where the previous read of the file ended
//!   (`pos_same_folio(ki_pos, last_pos - 1)`); `prev_pos` is the end of the last copy.
//! - Readahead follows mm/readahead.c: `ondemand_readahead` (start of file, the expected
//!   index, a marked page without valid state via `page_cache_next_miss`, an oversize read,
//!   a sequential miss from `prev_pos`, `try_context_readahead` via `count_history_pages`,
//!   else a small random read of just the request), windows from `get_init_ra_size` and
//!   `get_next_ra_size`, the merge of the next window when the read would hit its own marker,
//!   `page_cache_ra_order`'s fallback (no large folios) `do_page_cache_ra` (clipped to
//!   `i_size`) → `page_cache_ra_unbounded` (present pages skipped, `PG_readahead` set on the
//!   new page `nr_to_read - lookahead_size` from the start). `ra_pages` is `read_ahead_kb /
//!   4` ([`MachineConfig::read_ahead_kb`], default 128 KiB: `VM_READAHEAD_PAGES`); `read_ahead_kb
//!   = 0` makes every read a forced readahead of one page (`force_page_cache_ra`). The device's
//!   `io_pages` is [`IO_PAGES`].
//! - Writes follow `generic_perform_write`, a page at a time: `write_begin` finds the page or
//!   adds a new one without readahead (`__filemap_get_folio(FGP_WRITEBEGIN)`); a page not
//!   cached that the write covers only in part is read first when it holds data of the file
//!   (it starts below `i_size`: ext4's `ext4_block_write_begin` reads a partly written block
//!   that is not new, and zeroes a new one); a page wholly written is not. `write_end` marks
//!   it dirty (`folio_mark_dirty`: `nr_dirty`) and extends `i_size`. A write does not mark
//!   the page accessed (`FGP_WRITEBEGIN` has no `FGP_ACCESSED`).
//! - A new page (`filemap_add_folio`) whose entry holds a shadow is a refault
//!   (`workingset_refault`: `workingset_refault_file`, and the policy's refault-distance
//!   decision, [`Insert::Refault`]), except one a write adds (`__GFP_WRITE`: "folios getting
//!   rewritten" are not activated); it joins the LRU through the policy's `on_insert`.
//! - Reclaim of a page-cache page (`__remove_mapping`) leaves the policy's shadow in its
//!   entry. A dirty one is left to the flusher (Linux 6.1 and 6.8): classic LRU's
//!   `shrink_folio_list` marks it `PG_reclaim` and activates it (`nr_vmscan_immediate_reclaim`)
//!   unless kswapd meets it again, marked, while the node is `PGDAT_DIRTY`, when kswapd
//!   writes it itself (`pageout`, `nr_vmscan_write`, [`crate::mm::VmscanDirty`]); MG-LRU's
//!   `sort_folio` moves it to the next generation with `PG_reclaim`. A classic batch whose
//!   every folio was dirty wakes the flusher (`wakeup_flusher_threads(WB_REASON_VMSCAN)`:
//!   every dirty page written, `wb_vmscan`). When the flusher writes a `PG_reclaim` folio,
//!   `folio_end_writeback` moves it to its list's tail (`folio_rotate_reclaimable`,
//!   `pgrotated`). `PG_reclaim` and `PG_readahead` are one bit in the kernel, and here
//!   ([`crate::mm::frames::F_READAHEAD`]): a readahead mark a write found rotates the page
//!   too, and a marked dirty page read starts an async readahead, as in the kernel. A
//!   policy without the two LRU types (the textbook ones) still has its dirty victims
//!   written at reclaim.
//! - Dirty limits (mm/page-writeback.c): after each page a write dirties,
//!   `balance_dirty_pages` computes `global_dirtyable_memory` and `domain_dirty_limits`
//!   ([`Machine::dirty_limits`]); above the background threshold the flusher writes the
//!   files in the order they were dirtied, each in index order from where its last pass
//!   stopped (`range_cyclic`, `writeback_index`), a `MIN_WRITEBACK_PAGES` chunk at a time,
//!   down to the threshold (`wb_writeback`, `wb_over_bg_thresh`); in time,
//!   a writer whose dirty and writeback pages exceed the limit sleeps until writes complete,
//!   and every `dirty_writeback_centisecs` the files dirty for longer than
//!   `dirty_expire_centisecs` are written (`wb_check_old_data_flush`). Counters
//!   `wb_background`, `wb_periodic`, `dirty_throttled`, `nr_writeback`.
//!
//! Counters (`/proc/vmstat` names): `pgpgin`/`pgpgout` in KiB as `submit_bio` counts them
//! (swap I/O included: it goes through `submit_bio` too), `nr_file_pages`, `nr_dirty`,
//! `workingset_refault_file`; the classic LRU and MG-LRU count `pgscan_file`, `pgsteal_file`
//! and `workingset_activate_file` (MG-LRU's rules for page-cache folios: module
//! `policy::mglru`), `nr_vmscan_immediate_reclaim`, `nr_vmscan_write`, `pgrotated`,
//! `wb_vmscan`.
//!
//! # Time
//!
//! In a timed run the machine has a [`FileBackend`] ([`Machine::set_file_backend`]: the
//! native machine's file disk, a guest's virtual disk) and the I/O takes time on it, at the
//! machine's clock (`mm.now`, which the caller sets before a record):
//! - reads: each run of consecutive new pages `page_cache_ra_unbounded` adds is one request
//!   (`read_pages` → the file system's `readahead`: one bio over contiguous blocks), as is
//!   each single page `filemap_create_folio` and a partial write's `write_begin` read; the
//!   new pages stay locked until the request completes (`folio_unlock` in the bio's end
//!   I/O), so reclaim cannot take them ([`crate::mm::Mm::io_locked`]);
//! - `filemap_read` waits for each page it copies that is still locked
//!   (`filemap_update_page` → `folio_put_wait_locked`), and a partial write for the page it
//!   read: the machine's clock moves to the completion. The async readahead a read starts
//!   is submitted before it copies, and only a later read waits for it;
//! - writes (reclaim's `pageout` of a dirty page, `fsync`, `fadvise(DONTNEED)`'s
//!   `WB_SYNC_NONE` writeback, direct I/O's flush) are queued and handed to the device in
//!   runs of consecutive pages of one file, one request each (the plug's merging); reclaim's
//!   and fadvise's are asynchronous (the caller flushes them after the record or the op,
//!   [`Machine::flush_file_writes`]), `fsync`'s and direct I/O's are waited for
//!   (`filemap_write_and_wait_range`);
//! - `O_DIRECT` reads and writes are one request per record, waited for.
//!
//! The CPU time of the calls (the syscall, copying each page) is the caller's to charge, from
//! [`Machine::take_file_work`].
//!
//! `mmap` records of files map the page cache's pages (in a replay: module `engine::filemap`,
//! Linux 6.8's `do_read_fault` with fault-around, `filemap_fault` with the mmap readahead,
//! `do_shared_fault`, `do_cow_fault`; reclaim unmaps a mapped page first, `try_to_unmap`);
//! a machine that does not enable them ([`Machine::enable_file_mmap`]: the VM layer's
//! guests) counts them in `file_mmaps_skipped`.
//!
//! Left out: the per-CPU LRU batches, large folios, `balance_dirty_pages`' proportional pauses between the freerun
//! ceiling and the limit (`pos_ratio`, the dirty rate limit: a writer is free or held at the
//! limit), the flusher's timer as a thread of its own (its periodic pass runs at the first
//! file I/O record after its time), the submission order inside one
//! long read (all of a read's requests are submitted at its start, where the kernel submits
//! the next batch's readahead after copying the previous one).

use super::*;
use crate::access::Access;
use crate::mm::frames::{F_CACOL, F_PAGECACHE};
use crate::mm::pagecache::FileRaState;
use crate::trace::recorded::{FileIo, FileOp};

/// `BIO_MAX_VECS`: the most pages one bio (and so one `pin_user_pages_fast` call of a
/// direct I/O) takes.
const BIO_MAX_VECS: u64 = 256;
/// `PAGEVEC_SIZE`: the most folios `filemap_get_read_batch` returns at once.
const PAGEVEC_SIZE: usize = 15;
/// The device's `bdi->io_pages` (its `max_sectors_kb` in pages): 1280 KiB, 6.8's
/// `BLK_DEF_MAX_SECTORS_CAP` of 2560 sectors, for a device whose hardware allows it. It
/// widens readahead only for reads larger than `ra_pages`.
pub const IO_PAGES: u64 = 320;

/// The device behind a machine's files in a timed run: the native machine's file disk, a
/// guest's virtual disk (the VM layer's). Files are the ids [`Machine::add_file`] declared.
pub trait FileBackend {
    /// One request for `pages` pages from page `index` of file `file`, submitted at `now`;
    /// a read's `frames` are the frames it fills (a write's: empty).
    fn submit(
        &mut self,
        now: u64,
        file: u32,
        index: u64,
        pages: u64,
        write: bool,
        frames: &[FrameId],
    ) -> crate::device::IoCompletion;
    /// A cache flush (`REQ_PREFLUSH`, as `fsync` ends with `blkdev_issue_flush`) submitted at
    /// `now`: when it completes. Default: at once (no volatile write cache).
    fn flush(&mut self, now: u64) -> u64 {
        now
    }
    /// A file of `pages` pages is placed after the others on the device.
    fn add_file(&mut self, _file: u32, _pages: u64) {}
    /// Page-cache frame `frame` stops holding its page as the device has it: it was dirtied
    /// (`folio_mark_dirty`) or left the cache (`filemap_remove_folio`: reclaim, truncation,
    /// `fadvise`, direct I/O's invalidation). Called once per change, before the frame is
    /// freed. Default: nothing (the VM layer's virtual disk forgets the frame's image block).
    fn page_changed(&mut self, _frame: FrameId) {}
    /// The page cache's frame `frame` was just written (`folio_mark_dirty` after the copy
    /// into it). Called once per clean → dirty change, after `page_changed`. Default:
    /// nothing (the VM layer's virtual disk breaks the Swap Mapper's association).
    fn page_written(&mut self, _frame: FrameId) {}
    /// The page cache copied between frame `frame` and user memory: `copy_page_to_iter`
    /// (a read) reads it, `copy_page_from_iter_atomic` (a write) writes it, overwriting it
    /// `whole` when the copy covers the page or the page is new and not read first (the
    /// rest zeroed, `folio_zero_segments`). Called once per page copied, in order, after
    /// any read of the page was submitted. Default: nothing (the VM layer's virtual disk
    /// has the host back the guest frame the copy touches).
    fn page_copied(&mut self, _frame: FrameId, _write: bool, _whole: bool) {}
    /// The device's counters.
    fn stats(&self) -> crate::device::DeviceStats;
}

/// The CPU work of file I/O since [`Machine::take_file_work`] last took it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileWork {
    /// Pages copied between the page cache and user memory (`copy_page_to_iter`,
    /// `copy_page_from_iter_atomic`).
    pub pages_copied: u64,
    /// The submitting CPU's time in the device (`IoCompletion::cpu_ns`).
    pub submit_ns: u64,
    /// Of the clock's advance, the time spent waiting for the device.
    pub wait_ns: u64,
}

/// A timed machine's file device and what it has not yet been handed.
pub(super) struct FileTime {
    dev: Box<dyn FileBackend>,
    /// Writes queued: (file position, page index), in order.
    writes: Vec<(usize, u64)>,
    work: FileWork,
    /// Page-cache writes in flight: (completion, pages), in submission order
    /// (`nr_writeback`: `PG_writeback` until `folio_end_writeback`).
    in_flight: std::collections::VecDeque<(u64, u64)>,
    /// When the flusher next runs its periodic writeback (`wb_workfn` every
    /// `dirty_writeback_centisecs`).
    next_periodic: u64,
}

/// `dirty_expire_centisecs` (30 s) and `dirty_writeback_centisecs` (5 s), Linux's defaults:
/// the flusher wakes every 5 s and writes the files dirty for longer than 30 s.
pub const DIRTY_EXPIRE_NS: u64 = 30_000_000_000;
pub const DIRTY_WRITEBACK_NS: u64 = 5_000_000_000;
/// `MIN_WRITEBACK_PAGES` (4 MiB): the background flusher writes at least this much of a file
/// before it looks at the dirty limits again (`writeback_chunk_size`).
const MIN_WRITEBACK_PAGES: u64 = 1024;

impl std::fmt::Debug for FileTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileTime")
            .field("writes", &self.writes)
            .field("work", &self.work)
            .finish_non_exhaustive()
    }
}

/// A host whose VMs' disk images Cacol caches (seed 003 §4.2; the structure is
/// [`crate::mm::cacol`]): image `v` is file id `v`, VM `v`'s disk. Its pages are page-cache
/// frames flagged `F_CACOL`, off the policy's lists; reclaim takes from Cacol first
/// ([`Machine::enable_cacol`]).
#[derive(Debug)]
pub(super) struct CacolHost {
    pub(super) c: crate::mm::cacol::Cacol,
    /// Requests so far: the stamp of recency (the VMs' clocks run apart between the
    /// engine's steps; a count is monotonic).
    seq: u64,
    out: Vec<crate::mm::cacol::Evicted>,
    pub(super) counters: CacolCounters,
}

/// What Cacol did, summed over the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacolCounters {
    /// Pages requested: served from the disk without being kept (first requests), found
    /// cached, admitted.
    pub bypassed: u64,
    pub hits: u64,
    pub inserted: u64,
    /// Reclaim: pages the hand looked at, put back with their count decreased, evicted
    /// (of which dirty, written first); calls that found every VM at its watermark.
    pub scanned: u64,
    pub decremented: u64,
    pub evicted: u64,
    pub evicted_dirty: u64,
    pub at_watermarks: u64,
}

/// `get_init_ra_size`: the first window for a request of `size` pages.
pub fn get_init_ra_size(size: u64, max: u64) -> u64 {
    let newsize = size.max(1).next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// `get_next_ra_size`: the window after one of `cur` pages.
pub fn get_next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

impl<P: Policy> Machine<P> {
    /// Declare a file of the run (before its first I/O record). Errors: a policy that does
    /// not model file pages of the page cache ([`Policy::models_page_cache`]), a file
    /// declared twice, files too large for the page cache's range.
    pub fn add_file(&mut self, spec: FileSpec) -> Result<(), crate::Error> {
        if !self.policy.models_page_cache() {
            return Err(crate::Error::config(
                "policy",
                format!(
                    "{} does not model the page cache's file pages yet, and the trace has \
                     file I/O records (read, write, pread64, pwrite64): replay it with \
                     clock-lru, mglru or a demand policy other than opt",
                    self.policy.name()
                ),
            ));
        }
        self.mm
            .cache
            .add(spec)
            .map_err(|m| crate::Error::config("files", m))?;
        Ok(())
    }

    /// Give the machine's files a device with time (see the module docs' "Time"): reads and
    /// writes are requests on it at the machine's clock, `mm.now`.
    pub fn set_file_backend(&mut self, dev: Box<dyn FileBackend>) {
        let n = self.mm.frames.len() as usize;
        self.mm.io_lock.get_or_insert_with(|| vec![0; n]);
        self.file_time = Some(Box::new(FileTime {
            dev,
            writes: Vec::new(),
            work: FileWork::default(),
            in_flight: Default::default(),
            next_periodic: DIRTY_WRITEBACK_NS,
        }));
    }

    /// Let Cacol cache the disk images of `n_vms` VMs (file ids `0..n_vms`, declared with
    /// [`Machine::add_file`]), served by [`Machine::cacol_io`]. Errors: a demand policy (Cacol
    /// takes the images' pages off a kernel policy's LRU), no VM.
    pub fn enable_cacol(&mut self, n_vms: usize) -> Result<(), crate::Error> {
        if self.family != Family::Kernel {
            return Err(crate::Error::config(
                "cache_mode",
                format!(
                    "cacol runs beside the host's kernel reclaim (clock-lru, mglru), not {}",
                    self.policy.name()
                ),
            ));
        }
        if n_vms == 0 {
            return Err(crate::Error::config("cache_mode", "cacol needs a VM"));
        }
        self.cacol = Some(Box::new(CacolHost {
            c: crate::mm::cacol::Cacol::new(n_vms),
            seq: 0,
            out: Vec::new(),
            counters: CacolCounters::default(),
        }));
        Ok(())
    }

    /// Cacol's counters and each VM's cached pages and low watermark now (`None` without
    /// Cacol).
    pub fn cacol_state(&self) -> Option<(CacolCounters, Vec<(u64, u64)>)> {
        let h = self.cacol.as_ref()?;
        let available = self.mm.frames.n_free() as u64 + h.c.total_cached();
        let wm = h.c.low_watermark(available);
        Some((
            h.counters,
            (0..h.c.n_vms()).map(|v| (h.c.cached(v), wm)).collect(),
        ))
    }

    /// Reclaim up to `nr` pages from Cacol's cache (none without Cacol): the frames freed.
    /// The memory its fairness rule splits is the free frames plus the frames Cacol holds.
    pub(super) fn cacol_shrink(&mut self, nr: u32) -> u32 {
        let Some(h) = self.cacol.as_mut() else {
            return 0;
        };
        let available = self.mm.frames.n_free() as u64 + h.c.total_cached();
        let mut out = std::mem::take(&mut h.out);
        out.clear();
        let st = h.c.reclaim(nr as u64, available, &mut out);
        let cn = &mut h.counters;
        cn.scanned += st.scanned;
        cn.decremented += st.decremented;
        cn.evicted += st.evicted;
        cn.at_watermarks += st.at_watermarks as u64;
        for e in &out {
            let f = e.frame;
            let dirty = self.mm.frames.flags(f) & F_DIRTY != 0;
            if dirty {
                // Written before it is freed (its write queued for the device).
                self.stats.file_writebacks += 1;
                self.stats.pgpgout += 4;
                self.pc_log_write(f);
                if let Some(h) = self.cacol.as_mut() {
                    h.counters.evicted_dirty += 1;
                }
            }
            let idx = self.mm.frames.pte(f);
            self.pc_release(f, dirty);
            self.stats.nr_file_pages -= 1;
            self.stats.evictions += 1;
            // No shadow: Cacol's own table remembers the page.
            *self.mm.pt.at(idx) = 0;
            self.mm.frames.clear_flags(f, F_DIRTY | F_CACOL);
            self.mm.frames.release(f);
        }
        let n = out.len() as u32;
        if let Some(h) = self.cacol.as_mut() {
            h.out = out;
        }
        n
    }

    /// QEMU's `preadv`/`pwritev` of `[offset, offset + len)` of VM `vm`'s image (file id
    /// `vm`) on a host with Cacol, page by page as Cacol decides ([`crate::mm::cacol::Admit`]):
    /// a first request is served from the disk without being kept (as `O_DIRECT`); a page
    /// requested before is kept, read from the disk if it is not cached (a write fills it:
    /// dirty, written when evicted or at `fsync`). Reads of the pages not cached go to the
    /// disk in runs of consecutive pages, one request each, submitted after the call's
    /// allocations; a write of pages not kept is one request per run, waited for. The
    /// clock moves to the last completion. No readahead: Cacol keeps only pages requested
    /// (a page read ahead was never requested, and its first request would bypass the cache
    /// anyway). Errors: no Cacol, an undeclared image.
    pub fn cacol_io(
        &mut self,
        vm: usize,
        write: bool,
        offset: u64,
        len: u64,
    ) -> Result<(), crate::Error> {
        if self.cacol.is_none() {
            return Err(crate::Error::config("cache_mode", "cacol is not enabled"));
        }
        let Some(i) = self.mm.cache.find(vm as u32) else {
            return Err(crate::Error::config(
                "files",
                format!("the disk image of VM {vm} was not declared"),
            ));
        };
        if len == 0 {
            return Ok(());
        }
        self.stats.file_io += 1;
        self.retire_writeback();
        self.periodic_writeback();
        let (first, last) = (offset >> 12, (offset + len - 1) >> 12);
        // Pages to read from the disk (with the frame that keeps each, if any), pages to
        // write to it directly.
        let mut reads: Vec<(u64, Option<FrameId>)> = Vec::new();
        let mut direct_writes: Vec<u64> = Vec::new();
        for index in first..=last {
            let h = self.cacol.as_mut().expect("checked");
            h.seq += 1;
            let seq = h.seq;
            match h.c.request(vm, index, seq) {
                crate::mm::cacol::Admit::Bypass => {
                    h.counters.bypassed += 1;
                    if write {
                        direct_writes.push(index);
                    } else {
                        reads.push((index, None));
                    }
                }
                crate::mm::cacol::Admit::Hit(f) => {
                    h.counters.hits += 1;
                    if write {
                        self.pc_set_dirty(i, index, f);
                    }
                }
                crate::mm::cacol::Admit::Insert => {
                    h.counters.inserted += 1;
                    let touch = self.pc_touch(i, index, write);
                    let idx = self.mm.pt.pte_index(touch.vpn);
                    let Some(f) = self.alloc_frame(touch, idx, F_PAGECACHE | F_CACOL) else {
                        return Ok(());
                    };
                    *self.mm.pt.at(idx) = make_present(f);
                    self.mm.cache.file_mut(i).nrpages += 1;
                    self.stats.nr_file_pages += 1;
                    self.update_peak();
                    if let Some(h) = self.cacol.as_mut() {
                        h.c.insert(vm, index, f);
                    }
                    if write {
                        self.pc_set_dirty(i, index, f);
                    } else {
                        reads.push((index, Some(f)));
                    }
                }
            }
        }
        // The reads, in runs; a frame reclaim took back meanwhile is read all the same (the
        // data still has to come from the disk) but no longer locked.
        let mut k = 0;
        let mut done = self.mm.now;
        while k < reads.len() {
            let start = reads[k].0;
            let mut n = 1;
            while reads.get(k + n).is_some_and(|r| r.0 == start + n as u64) {
                n += 1;
            }
            self.pc_count_read(n as u64);
            let mut frames: Vec<FrameId> = Vec::new();
            for &(index, f) in &reads[k..k + n] {
                if let Some(f) = f {
                    if self.pc_frame(i, index) == Some(f) {
                        frames.push(f);
                    }
                }
            }
            if let Some(t) = self.file_time.as_mut() {
                let c = t
                    .dev
                    .submit(self.mm.now, vm as u32, start, n as u64, false, &[]);
                t.work.submit_ns += c.cpu_ns;
                done = done.max(c.done_at);
                if let Some(lock) = self.mm.io_lock.as_mut() {
                    for &f in &frames {
                        lock[f as usize] = c.done_at;
                    }
                }
            }
            k += n;
        }
        let mut k = 0;
        while k < direct_writes.len() {
            let start = direct_writes[k];
            let mut n = 1;
            while direct_writes.get(k + n) == Some(&(start + n as u64)) {
                n += 1;
            }
            self.stats.pgpgout += 4 * n as u64;
            if let Some(t) = self.file_time.as_mut() {
                let c = t
                    .dev
                    .submit(self.mm.now, vm as u32, start, n as u64, true, &[]);
                t.work.submit_ns += c.cpu_ns;
                done = done.max(c.done_at);
            }
            k += n;
        }
        self.note_file_wait(done);
        // Reclaim's writes during the call go to the disk now, not waited for.
        self.pc_flush_writes(false);
        if write {
            self.balance_dirty_pages();
        }
        if self.check {
            self.validate().map_err(|e| {
                crate::Error::config("check_invariants", format!("after Cacol's I/O: {e}"))
            })?;
        }
        Ok(())
    }

    /// Mark page `index` of file `i` (frame `f`) dirty, as `write_end` does.
    pub(super) fn pc_set_dirty(&mut self, i: usize, index: u64, f: FrameId) {
        if self.mm.frames.flags(f) & F_DIRTY == 0 {
            self.mm.frames.set_flags(f, F_DIRTY);
            if let Some(t) = self.file_time.as_mut() {
                t.dev.page_changed(f);
                t.dev.page_written(f);
            }
            let now = self.mm.now;
            let file = self.mm.cache.file_mut(i);
            if file.dirty.is_empty() {
                // `__mark_inode_dirty`: the inode's first dirty page.
                file.dirtied_when = now;
            }
            file.dirty.insert(index);
            self.stats.nr_dirty += 1;
        }
    }

    /// Whether the machine's files have a device in time.
    pub fn has_file_backend(&self) -> bool {
        self.file_time.is_some()
    }

    /// Tell the file device that file `id` of `pages` pages follows the others on it.
    pub fn file_backend_add(&mut self, id: u32, pages: u64) {
        if let Some(t) = self.file_time.as_mut() {
            t.dev.add_file(id, pages);
        }
    }

    /// The file device's counters.
    pub fn file_device_stats(&self) -> Option<crate::device::DeviceStats> {
        self.file_time.as_ref().map(|t| t.dev.stats())
    }

    /// A cache flush of the file device at `now` (`fsync`'s `blkdev_issue_flush`): when it
    /// completes (`now` without a device).
    pub fn flush_file_device(&mut self, now: u64) -> u64 {
        match self.file_time.as_mut() {
            Some(t) => t.dev.flush(now),
            None => now,
        }
    }

    /// The caller waited for the file device until `done`: the clock moves there.
    pub fn note_file_wait(&mut self, done: u64) {
        if let Some(t) = self.file_time.as_mut() {
            if done > self.mm.now {
                t.work.wait_ns += done - self.mm.now;
                self.mm.now = done;
            }
        }
    }

    /// Whether page `index` of the file at position `i` is cached.
    pub fn file_page_cached(&self, i: usize, index: u64) -> bool {
        self.pc_frame(i, index).is_some()
    }

    /// The frame caching page `index` of file `id`, if one does.
    pub fn file_page_frame(&self, id: u32, index: u64) -> Option<FrameId> {
        self.pc_frame(self.mm.cache.find(id)?, index)
    }

    /// The file I/O's CPU work and waits since the last call (zero without a backend).
    pub fn take_file_work(&mut self) -> FileWork {
        match self.file_time.as_mut() {
            Some(t) => std::mem::take(&mut t.work),
            None => FileWork::default(),
        }
    }

    /// Hand the queued file writes to the device at the clock, without waiting for them
    /// (reclaim's `pageout`: the folio is under writeback and the reclaimer goes on).
    pub fn flush_file_writes(&mut self) {
        self.pc_flush_writes(false);
    }

    /// One read request of `frames`, new pages `first..` of file `i`: they stay locked until
    /// it completes. Untimed: nothing.
    pub(super) fn pc_submit_read(&mut self, i: usize, first: u64, frames: &[FrameId]) {
        let Some(t) = self.file_time.as_mut() else {
            return;
        };
        if frames.is_empty() {
            return;
        }
        let id = self.mm.cache.file(i).id;
        let now = self.mm.now;
        let c = t
            .dev
            .submit(now, id, first, frames.len() as u64, false, frames);
        t.work.submit_ns += c.cpu_ns;
        if let Some(lock) = self.mm.io_lock.as_mut() {
            for &f in frames {
                lock[f as usize] = c.done_at;
            }
        }
    }

    /// Wait for frame `f`'s read, if it is in flight: the clock moves to its completion.
    #[inline]
    pub(super) fn pc_wait(&mut self, f: FrameId) {
        let Some(t) = self.file_time.as_mut() else {
            return;
        };
        let until = self.mm.io_lock.as_ref().map_or(0, |l| l[f as usize]);
        if until > self.mm.now {
            t.work.wait_ns += until - self.mm.now;
            self.mm.now = until;
        }
    }

    /// Queue the write of dirty page-cache frame `f` (reclaim's `pageout`). Untimed: nothing.
    pub(super) fn pc_log_write(&mut self, f: FrameId) {
        if self.file_time.is_none() {
            return;
        }
        if let Some((i, index)) = self.mm.cache.page_of(self.mm.owner(f)) {
            if let Some(t) = self.file_time.as_mut() {
                t.writes.push((i, index));
            }
        }
    }

    /// Hand the queued writes to the device at the clock, one request per run of
    /// consecutive pages of one file; with `wait`, the clock moves to the last one's
    /// completion.
    fn pc_flush_writes(&mut self, wait: bool) {
        let Some(t) = self.file_time.as_mut() else {
            return;
        };
        if t.writes.is_empty() {
            return;
        }
        let now = self.mm.now;
        let mut done = now;
        let mut k = 0;
        while k < t.writes.len() {
            let (i, first) = t.writes[k];
            let mut n = 1;
            while t.writes.get(k + n as usize) == Some(&(i, first + n)) {
                n += 1;
            }
            let id = self.mm.cache.file(i).id;
            let c = t.dev.submit(now, id, first, n, true, &[]);
            t.work.submit_ns += c.cpu_ns;
            done = done.max(c.done_at);
            t.in_flight.push_back((c.done_at, n));
            self.stats.nr_writeback += n;
            k += n as usize;
        }
        t.writes.clear();
        if wait && done > self.mm.now {
            t.work.wait_ns += done - self.mm.now;
            self.mm.now = done;
        }
    }

    /// The clock moves to `now` (if later) and the writes complete by then leave writeback:
    /// the end of a timed run.
    pub fn settle_file_io(&mut self, now: u64) {
        self.mm.now = self.mm.now.max(now);
        self.retire_writeback();
    }

    /// Writes whose completion time has passed leave writeback (`folio_end_writeback`).
    fn retire_writeback(&mut self) {
        let Some(t) = self.file_time.as_mut() else {
            return;
        };
        let now = self.mm.now;
        let mut done = 0;
        t.in_flight.retain(|&(at, n)| {
            if at <= now {
                done += n;
                false
            } else {
                true
            }
        });
        self.stats.nr_writeback -= done;
    }

    /// The dirty limits, `(bg_thresh, thresh)` in pages: `global_dirtyable_memory` (free
    /// pages less `totalreserve_pages` (each zone's high watermark plus its largest reserve), plus the
    /// file LRUs' pages, plus 1) times `dirty_background_ratio` and `dirty_ratio`, in
    /// per-`PAGE_SIZE` precision as `domain_dirty_limits` computes them; a background
    /// threshold not below the limit is half of it.
    pub fn dirty_limits(&self) -> (u64, u64) {
        let free = self.mm.frames.n_free() as u64;
        let reserve = self.totalreserve_pages();
        let avail = free - free.min(reserve) + self.stats.nr_file_pages + 1;
        let ratio = self.dirty_ratio as u64 * 4096 / 100;
        let bg_ratio = self.dirty_background_ratio as u64 * 4096 / 100;
        let thresh = ratio * avail / 4096;
        let mut bg = bg_ratio * avail / 4096;
        if bg >= thresh {
            bg = thresh / 2;
        }
        (bg, thresh)
    }

    /// `balance_dirty_pages` after a write dirtied a page: above the background threshold
    /// the flusher writes in the background (`wb_start_background_writeback` →
    /// `wb_writeback` with `for_background`: the files in the order they were dirtied, each
    /// file's dirty pages in index order from its `writeback_index` (`range_cyclic`), at
    /// least `MIN_WRITEBACK_PAGES` of a file before
    /// `wb_over_bg_thresh` is checked again, until the dirty pages are at most the
    /// background threshold); in a timed run, with the dirty pages and those under writeback
    /// above the limit, the writer sleeps until enough writes complete (the kernel's
    /// proportional pauses between the freerun ceiling and the limit, `pos_ratio` and the
    /// dirty rate limit, are left out: a writer is either free or held at the limit).
    pub(super) fn balance_dirty_pages(&mut self) {
        self.retire_writeback();
        let (bg, thresh) = self.dirty_limits();
        if self.stats.nr_dirty > bg {
            self.stats.wb_background += self.background_writeback(bg);
        }
        let Some(t) = self.file_time.as_mut() else {
            return;
        };
        let mut throttled = false;
        while self.stats.nr_dirty + self.stats.nr_writeback > thresh {
            let Some((at, n)) = t.in_flight.pop_front() else {
                break;
            };
            if at > self.mm.now {
                t.work.wait_ns += at - self.mm.now;
                self.mm.now = at;
            }
            self.stats.nr_writeback -= n;
            throttled = true;
        }
        if throttled {
            self.stats.dirty_throttled += 1;
        }
    }

    /// `wakeup_flusher_threads(WB_REASON_VMSCAN)` (classic LRU's `shrink_inactive_list`
    /// took only dirty, unqueued file folios): `wb_start_writeback` → `wb_check_start_all`
    /// writes as many pages as are dirty (`get_nr_dirty_pages`, `WB_SYNC_NONE`), the files
    /// in the order they were dirtied, as the background pass does, down to none. Linux
    /// 6.1 and 6.8 (fs/fs-writeback.c). Counted in `wb_vmscan`.
    pub(super) fn wakeup_flusher_vmscan(&mut self) {
        self.stats.wb_vmscan += self.background_writeback(0);
    }

    /// The background flusher's pass down to `bg` dirty pages (see `balance_dirty_pages`):
    /// the pages it wrote.
    fn background_writeback(&mut self, bg: u64) -> u64 {
        let mut written = 0;
        let mut files: Vec<(u64, usize)> = (0..self.mm.cache.files().len())
            .filter(|&i| !self.mm.cache.file(i).dirty.is_empty())
            .map(|i| (self.mm.cache.file(i).dirtied_when, i))
            .collect();
        files.sort_unstable();
        'files: for (_, i) in files {
            loop {
                // `write_cache_pages` with `range_cyclic` (Linux 6.1 and 6.8,
                // mm/page-writeback.c): from `writeback_index` towards the end of the file,
                // `nr_to_write` pages; one that stops on its count leaves `writeback_index`
                // at the last page written, one that reaches the end without it at 0.
                let file = self.mm.cache.file(i);
                if file.dirty.is_empty() {
                    break;
                }
                let chunk: Vec<u64> = file
                    .dirty
                    .range(file.writeback_index..)
                    .take(MIN_WRITEBACK_PAGES as usize)
                    .copied()
                    .collect();
                let next = match chunk.last() {
                    Some(&last) if chunk.len() == MIN_WRITEBACK_PAGES as usize => last,
                    _ => 0,
                };
                self.mm.cache.file_mut(i).writeback_index = next;
                for index in chunk {
                    written += self.pc_writeback(i, index) as u64;
                }
                if self.stats.nr_dirty <= bg {
                    break 'files;
                }
            }
        }
        self.pc_flush_writes(false);
        written
    }

    /// The flusher's periodic writeback (timed runs): every `dirty_writeback_centisecs`, the
    /// files dirtied more than `dirty_expire_centisecs` ago are written
    /// (`wb_check_old_data_flush` → `wb_writeback` with `older_than_this`), at the first
    /// file I/O record at or after its time (the flusher's timer is not a thread of its own
    /// here: a run whose records stop leaves its files dirty).
    fn periodic_writeback(&mut self) {
        let Some(t) = self.file_time.as_mut() else {
            return;
        };
        let now = self.mm.now;
        if now < t.next_periodic {
            return;
        }
        t.next_periodic = now + DIRTY_WRITEBACK_NS;
        let old: Vec<usize> = (0..self.mm.cache.files().len())
            .filter(|&i| {
                let f = self.mm.cache.file(i);
                !f.dirty.is_empty() && f.dirtied_when + DIRTY_EXPIRE_NS <= now
            })
            .collect();
        for i in old {
            let pages: Vec<u64> = self.mm.cache.file(i).dirty.iter().copied().collect();
            for index in pages {
                if self.pc_writeback(i, index) {
                    self.stats.wb_periodic += 1;
                }
            }
        }
        self.pc_flush_writes(false);
    }

    /// Serve one file I/O record. Errors: a file not declared, a range past 2^64 or past the
    /// file's declared extent.
    pub fn file_io(&mut self, io: &FileIo) -> Result<(), crate::Error> {
        let Some(i) = self.mm.cache.find(io.file) else {
            return Err(crate::Error::config(
                "files",
                format!(
                    "{} of file {}, which was not declared",
                    io.op.name(),
                    io.file
                ),
            ));
        };
        // The byte after the range the record reaches (fsync and fadvise64 name ranges that
        // need not exist: none).
        let end = match io.op {
            // (an mmap's range is clipped to the file's room, `engine::filemap`)
            FileOp::Fsync | FileOp::Fadvise | FileOp::Unlink | FileOp::Mmap => Some(0),
            FileOp::Ftruncate => Some(io.len),
            _ => io.offset.checked_add(io.len),
        };
        let Some(end) = end else {
            return Err(crate::Error::config(
                "files",
                format!(
                    "{} of file {} at offset {} of {} bytes ends past 2^64",
                    io.op.name(),
                    io.file,
                    io.offset,
                    io.len
                ),
            ));
        };
        self.retire_writeback();
        self.periodic_writeback();
        let reserved = self.mm.cache.file(i).reserved;
        if end.div_ceil(4096) > reserved {
            return Err(crate::Error::config(
                "files",
                format!(
                    "{} of file {} ends at byte {end}, past the extent declared for it",
                    io.op.name(),
                    io.file
                ),
            ));
        }
        match io.op {
            FileOp::Read | FileOp::Pread => {
                self.stats.file_io += 1;
                self.filemap_read(i, io.offset, io.len);
            }
            FileOp::Write | FileOp::Pwrite => {
                self.stats.file_io += 1;
                self.generic_perform_write(i, io.offset, io.len);
            }
            FileOp::Mmap => self.mmap_record(i, io),
            FileOp::Fsync => {
                self.stats.file_io += 1;
                // `file_write_and_wait_range` over the whole file (WB_SYNC_ALL).
                self.pc_writeback_range(i, 0, u64::MAX, None);
                self.pc_flush_writes(true);
            }
            FileOp::Fadvise => {
                self.stats.file_io += 1;
                self.generic_fadvise(i, io.offset, io.len, io.addr);
            }
            FileOp::Ftruncate => {
                self.stats.file_io += 1;
                self.truncate_setsize(i, io.len);
            }
            FileOp::Unlink => {
                // `iput_final` → `evict` → `truncate_inode_pages_final`: every page and
                // shadow of the file goes, dirty pages unwritten (`folio_cancel_dirty`).
                // Left out: the wait for pages under writeback (`folio_wait_writeback`).
                self.stats.file_io += 1;
                self.truncate_setsize(i, 0);
            }
            FileOp::DirectRead | FileOp::DirectWrite => {
                self.stats.file_io += 1;
                self.direct_io(i, io);
            }
        }
        // Reclaim's writes during the record go to the device now, not waited for.
        self.pc_flush_writes(false);
        if self.check {
            self.validate().map_err(|e| {
                crate::Error::config("check_invariants", format!("after file I/O: {e}"))
            })?;
        }
        Ok(())
    }

    /// `ra->ra_pages` of file `i`: the device's (`read_ahead_kb / 4`) unless `fadvise64`
    /// changed it.
    #[inline]
    pub(super) fn ra_pages(&self, i: usize) -> u64 {
        self.mm
            .cache
            .file(i)
            .ra_pages
            .unwrap_or(self.read_ahead_kb as u64 / 4)
    }

    #[inline]
    fn pc_touch(&self, i: usize, index: u64, write: bool) -> Touch {
        Touch {
            t: self.t,
            next_use: u64::MAX,
            vpn: self.mm.cache.file(i).base + index,
            write,
        }
    }

    /// The frame caching page `index` of file `i`, if one does (`xa_load` finding a folio).
    #[inline]
    pub(super) fn pc_frame(&self, i: usize, index: u64) -> Option<FrameId> {
        let file = self.mm.cache.file(i);
        if index >= file.reserved {
            return None;
        }
        let vpn = file.base + index;
        let pt = &self.mm.pt;
        let e = pt.get(pt.peek_index(vpn).or_else(|| pt.find_index(vpn))?);
        (e & PTE_PRESENT != 0).then(|| pte_frame(e))
    }

    /// `filemap_add_folio` + `folio_add_lru`: a new frame for page `index` of file `i`
    /// (allocated as every allocation is, reclaim included), a refault when its entry holds
    /// a shadow. The caller reads it if need be. `None`: out of memory.
    pub(super) fn pc_add_folio(&mut self, i: usize, index: u64, write: bool) -> Option<FrameId> {
        let touch = self.pc_touch(i, index, write);
        let idx = self.mm.pt.pte_index(touch.vpn);
        let f = self.alloc_frame(touch, idx, F_PAGECACHE)?;
        let old = self.mm.pt.get(idx);
        debug_assert!(old & PTE_PRESENT == 0);
        *self.mm.pt.at(idx) = make_present(f);
        if old == 0 && self.mm.frames.has_buddies() {
            // A new entry in the file's xarray (a shadow's slot has its nodes already).
            let id = self.mm.cache.file(i).id;
            self.xa_changed(super::Xa::File(id), index, false);
        }
        self.mm.cache.file_mut(i).nrpages += 1;
        self.stats.nr_file_pages += 1;
        // `filemap_add_folio` calls `workingset_refault` for a shadow unless the allocation
        // is `__GFP_WRITE`, which `__filemap_get_folio` adds for `FGP_WRITE`: a page added
        // by a write (`FGP_WRITEBEGIN`) is no refault, and its shadow is simply replaced.
        let how = if old & PTE_FILE_GONE != 0 && !write {
            let shadow = pte_payload(old) as u32;
            self.count_refault(shadow, true);
            Insert::Refault { shadow }
        } else {
            Insert::FirstTouch
        };
        self.policy.on_insert(&self.mm, f, touch, how);
        self.update_peak();
        Some(f)
    }

    /// Pages read from a file's device.
    #[inline]
    pub(super) fn pc_count_read(&mut self, n: u64) {
        self.stats.file_reads += n;
        self.stats.pgpgin += 4 * n;
    }

    /// `page_cache_ra_unbounded`: read the pages of `[index, index + nr)` not cached, marking
    /// the one `nr - lookahead` from the start `PG_readahead` if it is new.
    fn page_cache_ra_unbounded(&mut self, i: usize, index: u64, nr: u64, lookahead: u64) {
        let mark = nr.checked_sub(lookahead);
        let mut n_read = 0;
        // The run of new pages not yet submitted (`read_pages` at a present page and at the
        // end), from page `run_start`.
        let mut run: Vec<FrameId> = Vec::new();
        let mut run_start = index;
        for k in 0..nr {
            if self.pc_frame(i, index + k).is_some() {
                self.pc_submit_read(i, run_start, &run);
                run.clear();
                continue;
            }
            let Some(f) = self.pc_add_folio(i, index + k, false) else {
                break;
            };
            if Some(k) == mark {
                self.mm.frames.set_flags(f, F_READAHEAD);
            }
            if run.is_empty() {
                run_start = index + k;
            }
            if self.file_time.is_some() {
                run.push(f);
            }
            n_read += 1;
        }
        self.pc_submit_read(i, run_start, &run);
        self.pc_count_read(n_read);
    }

    /// `do_page_cache_ra`: [`Self::page_cache_ra_unbounded`] clipped to the page holding the
    /// file's last byte.
    pub(super) fn do_page_cache_ra(&mut self, i: usize, index: u64, nr: u64, lookahead: u64) {
        let isize = self.mm.cache.file(i).i_size;
        if isize == 0 {
            return;
        }
        let end_index = (isize - 1) >> 12;
        if index > end_index {
            return;
        }
        let nr = nr.min(end_index - index + 1);
        self.page_cache_ra_unbounded(i, index, nr, lookahead);
    }

    /// `force_page_cache_ra` (`read_ahead_kb` = 0: one page at a time).
    fn force_page_cache_ra(&mut self, i: usize, mut index: u64, nr: u64) {
        let max_pages = IO_PAGES.max(self.ra_pages(i));
        let mut nr = nr.min(max_pages);
        while nr > 0 {
            let chunk = nr.min(512);
            self.do_page_cache_ra(i, index, chunk, 0);
            index += chunk;
            nr -= chunk;
        }
    }

    /// `page_cache_next_miss` as in 6.8: the first index of `[index, index + max)` not
    /// cached; `index + max - 1` when every one is.
    fn page_cache_next_miss(&mut self, i: usize, index: u64, max: u64) -> u64 {
        for k in 0..max {
            if self.pc_frame(i, index + k).is_none() {
                return index + k;
            }
        }
        index + max.saturating_sub(1)
    }

    /// `page_cache_prev_miss`: the highest index of `[index - max + 1, index]` not cached,
    /// going down from `index` (`u64::MAX` below page 0); `index - max + 1` when every one is.
    fn page_cache_prev_miss(&mut self, i: usize, index: u64, max: u64) -> u64 {
        for k in 0..max {
            let Some(x) = index.checked_sub(k) else {
                return u64::MAX;
            };
            if self.pc_frame(i, x).is_none() {
                return x;
            }
        }
        index - max.saturating_sub(1)
    }

    /// `try_context_readahead` (with `count_history_pages`): a window from the pages cached
    /// just before `index`, when there are more of them than the request.
    fn try_context_readahead(&mut self, i: usize, index: u64, req_size: u64, max: u64) -> bool {
        let head = self.page_cache_prev_miss(i, index.wrapping_sub(1), max);
        let mut size = index.wrapping_sub(1).wrapping_sub(head);
        if size <= req_size {
            return false;
        }
        if size >= index {
            size *= 2;
        }
        let ra = &mut self.mm.cache.file_mut(i).ra;
        ra.start = index;
        ra.size = (size + req_size).min(max);
        ra.async_size = 1;
        true
    }

    /// `ondemand_readahead` for a read of `req_size` pages at `index`; `marked`: called for a
    /// page marked `PG_readahead` (`page_cache_async_ra`), else a miss
    /// (`page_cache_sync_ra`).
    fn ondemand_readahead(&mut self, i: usize, index: u64, marked: bool, req_size: u64) {
        let mut max_pages = self.ra_pages(i);
        if req_size > max_pages && IO_PAGES > max_pages {
            max_pages = req_size.min(IO_PAGES);
        }
        let ra = self.mm.cache.file(i).ra;
        let initial = |ra: &mut FileRaState| {
            ra.start = index;
            ra.size = get_init_ra_size(req_size, max_pages);
            ra.async_size = if ra.size > req_size {
                ra.size - req_size
            } else {
                ra.size
            };
        };
        let mut new = ra;
        'decide: {
            if index == 0 {
                initial(&mut new);
                break 'decide;
            }
            // Order-0 folios: `round_down(.., 1)` changes nothing.
            let expected = ra.start.wrapping_add(ra.size).wrapping_sub(ra.async_size);
            if index == expected || index == ra.start.wrapping_add(ra.size) {
                new.start = ra.start.wrapping_add(ra.size);
                new.size = get_next_ra_size(ra.size, max_pages);
                new.async_size = new.size;
                break 'decide;
            }
            if marked {
                let start = self.page_cache_next_miss(i, index + 1, max_pages);
                if start == 0 || start - index > max_pages {
                    return;
                }
                new.start = start;
                new.size = get_next_ra_size(start - index + req_size, max_pages);
                new.async_size = new.size;
                break 'decide;
            }
            if req_size > max_pages {
                initial(&mut new);
                break 'decide;
            }
            let prev_index = (ra.prev_pos as u64) >> 12;
            if index.wrapping_sub(prev_index) <= 1 {
                initial(&mut new);
                break 'decide;
            }
            if self.try_context_readahead(i, index, req_size, max_pages) {
                new = self.mm.cache.file(i).ra;
                break 'decide;
            }
            // A small random read: read just it, the state untouched.
            self.do_page_cache_ra(i, index, req_size, 0);
            return;
        }
        // readit: would this read hit the marker it sets? Then merge the next window in.
        if index == new.start && new.size == new.async_size {
            let add = get_next_ra_size(new.size, max_pages);
            if new.size + add <= max_pages {
                new.async_size = add;
                new.size += add;
            } else {
                new.size = max_pages;
                new.async_size = max_pages >> 1;
            }
        }
        self.mm.cache.file_mut(i).ra = new;
        // `page_cache_ra_order` without large folios falls back to this.
        self.do_page_cache_ra(i, new.start, new.size, new.async_size);
    }

    /// `page_cache_sync_ra`.
    fn page_cache_sync_ra(&mut self, i: usize, index: u64, req_count: u64) {
        if self.ra_pages(i) == 0 {
            self.force_page_cache_ra(i, index, 1);
            return;
        }
        // "be dumb": `FMODE_RANDOM` reads just the request.
        if self.mm.cache.file(i).random {
            self.force_page_cache_ra(i, index, req_count);
            return;
        }
        self.ondemand_readahead(i, index, false, req_count);
    }

    /// `page_cache_async_ra` for the marked page `f` at `index`.
    pub(super) fn page_cache_async_ra(&mut self, i: usize, f: FrameId, index: u64, req_count: u64) {
        if self.ra_pages(i) == 0 {
            return;
        }
        self.mm.frames.clear_flags(f, F_READAHEAD);
        self.ondemand_readahead(i, index, true, req_count);
    }

    /// `filemap_get_read_batch`: the cached pages from `index` to at most `max`, stopping at
    /// the first missing one, after one marked `PG_readahead`, or at `PAGEVEC_SIZE`.
    fn filemap_get_read_batch(&mut self, i: usize, index: u64, max: u64, batch: &mut Vec<u64>) {
        batch.clear();
        let mut x = index;
        while x <= max {
            let Some(f) = self.pc_frame(i, x) else {
                break;
            };
            batch.push(x);
            if batch.len() == PAGEVEC_SIZE || self.mm.frames.flags(f) & F_READAHEAD != 0 {
                break;
            }
            x += 1;
        }
    }

    /// `filemap_read` of `len` bytes at `offset` (`read`, `pread64`).
    fn filemap_read(&mut self, i: usize, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        let mut pos = offset;
        let mut last_pos = self.mm.cache.file(i).ra.prev_pos;
        let mut batch = Vec::with_capacity(PAGEVEC_SIZE);
        let end = offset + len;
        loop {
            let isize = self.mm.cache.file(i).i_size;
            if pos >= isize {
                break;
            }
            // `filemap_get_pages`.
            let index = pos >> 12;
            let last_index = end.div_ceil(4096);
            self.filemap_get_read_batch(i, index, last_index - 1, &mut batch);
            if batch.is_empty() {
                self.page_cache_sync_ra(i, index, last_index - index);
                self.filemap_get_read_batch(i, index, last_index - 1, &mut batch);
            }
            if batch.is_empty() {
                // `filemap_create_folio`.
                let Some(f) = self.pc_add_folio(i, index, false) else {
                    return;
                };
                self.pc_submit_read(i, index, &[f]);
                self.pc_count_read(1);
                batch.push(index);
            }
            let last = *batch.last().unwrap_or(&index);
            if let Some(f) = self.pc_frame(i, last) {
                if self.mm.frames.flags(f) & F_READAHEAD != 0 {
                    self.page_cache_async_ra(i, f, last, last_index - last);
                }
            }
            let end_offset = isize.min(end);
            for (k, &x) in batch.iter().enumerate() {
                // The batch's folios are held (`folio_try_get`): reclaim during the readahead
                // above cannot free them. Here it could: such a page is read again.
                let f = match self.pc_frame(i, x) {
                    Some(f) => f,
                    None => match self.pc_add_folio(i, x, false) {
                        Some(f) => {
                            self.pc_submit_read(i, x, &[f]);
                            self.pc_count_read(1);
                            f
                        }
                        None => return,
                    },
                };
                self.pc_wait(f);
                let same_folio = k == 0 && (pos as i64) >> 12 == (last_pos - 1) >> 12;
                if !same_folio {
                    let touch = self.pc_touch(i, x, false);
                    self.policy.mark_accessed(&self.mm, f, touch);
                }
                let bytes = (end_offset - pos).min(4096 - (pos & 4095));
                pos += bytes;
                last_pos = pos as i64;
                self.pc_copied(f, false, false);
            }
            if pos >= end || pos >= isize {
                break;
            }
        }
        self.mm.cache.file_mut(i).ra.prev_pos = last_pos;
    }

    /// `generic_perform_write` of `len` bytes at `offset` (`write`, `pwrite64`).
    fn generic_perform_write(&mut self, i: usize, offset: u64, len: u64) {
        let mut pos = offset;
        let end = offset + len;
        while pos < end {
            let index = pos >> 12;
            let bytes = (4096 - (pos & 4095)).min(end - pos);
            // (`whole`: the copy leaves none of the frame's old bytes)
            let (f, whole) = match self.pc_frame(i, index) {
                Some(f) => (f, bytes == 4096),
                None => {
                    let Some(f) = self.pc_add_folio(i, index, true) else {
                        return;
                    };
                    if bytes < 4096 && index << 12 < self.mm.cache.file(i).i_size {
                        self.pc_submit_read(i, index, &[f]);
                        self.pc_count_read(1);
                        self.pc_wait(f);
                        (f, false)
                    } else {
                        (f, true)
                    }
                }
            };
            // `block_write_begin` → `create_page_buffers`
            self.attach_buffers(f);
            if self.mm.frames.flags(f) & F_DIRTY == 0 {
                self.pc_set_dirty(i, index, f);
            }
            pos += bytes;
            self.pc_copied(f, true, whole);
            self.balance_dirty_pages();
            let file = self.mm.cache.file_mut(i);
            file.i_size = file.i_size.max(pos);
        }
    }

    /// Write page `index` of file `i` if it is cached and dirty (`folio_clear_dirty_for_io`
    /// → `writepage`, counted by `submit_bio`); it stays cached, clean. Whether it was
    /// written.
    fn pc_writeback(&mut self, i: usize, index: u64) -> bool {
        let Some(f) = self.pc_frame(i, index) else {
            return false;
        };
        if self.mm.frames.flags(f) & F_DIRTY == 0 {
            return false;
        }
        self.mm.frames.clear_flags(f, F_DIRTY);
        if self.mm.frames.is_mapped(f) {
            // `folio_mkclean`: a file mapping's PTE is cleaned and write-protected.
            *self.mm.pt.at(self.mm.frames.pte(f)) &= !PTE_DIRTY;
        }
        // `folio_end_writeback` (taken as done once submitted): a folio reclaim marked
        // `PG_reclaim` (classic LRU's `shrink_folio_list`, MG-LRU's `sort_folio`) loses the
        // flag and `folio_rotate_reclaimable` moves it to its list's tail (`PGROTATED`), to
        // be freed by the next scan. The flag is `PG_readahead`'s bit, so a readahead mark
        // that a write found is taken the same way, as in the kernel.
        if self.mm.frames.flags(f) & F_READAHEAD != 0 {
            self.mm.frames.clear_flags(f, F_READAHEAD);
            if self.policy.rotate_reclaimable(&self.mm, f) {
                self.stats.pgrotated += 1;
            }
        }
        self.mm.cache.file_mut(i).dirty.remove(&index);
        self.stats.nr_dirty -= 1;
        self.stats.file_writebacks += 1;
        self.stats.pgpgout += 4;
        if let Some(t) = self.file_time.as_mut() {
            t.writes.push((i, index));
        }
        true
    }

    /// Page-cache frame `f` copied to user memory, or from it (`write`, overwriting the
    /// frame `whole` or not): timed, the copy's CPU time is the caller's, and the device
    /// is told which frame the copy touched ([`FileBackend::page_copied`]).
    #[inline]
    fn pc_copied(&mut self, f: FrameId, write: bool, whole: bool) {
        if let Some(t) = self.file_time.as_mut() {
            t.work.pages_copied += 1;
            t.dev.page_copied(f, write, whole);
        }
    }

    /// `__filemap_fdatawrite_range` (and `filemap_write_and_wait_range`) over pages `first`
    /// ..= `last` of file `i`: every dirty cached page is written. The pages written are
    /// added to `written` when given, in order. Visits the file's dirty tag
    /// (`PAGECACHE_TAG_DIRTY`, as `write_cache_pages` does), not every page of the range.
    fn pc_writeback_range(
        &mut self,
        i: usize,
        first: u64,
        last: u64,
        mut written: Option<&mut Vec<u64>>,
    ) {
        if first > last {
            return;
        }
        let tagged: Vec<u64> = self
            .mm
            .cache
            .file(i)
            .dirty
            .range(first..=last)
            .copied()
            .collect();
        for index in tagged {
            if self.pc_writeback(i, index) {
                if let Some(w) = written.as_mut() {
                    w.push(index);
                }
            }
        }
    }

    /// Drop page `index` of file `i` from the page cache, a cached page (its frame freed,
    /// off the policy's lists, a dirty one's data dropped: `folio_cancel_dirty`) or a
    /// shadow entry alike (`filemap_remove_folio` and `clear_shadow_entry`, which leave no
    /// shadow: the page is not evicted, it is gone). Whether a frame was freed.
    fn pc_delete(&mut self, i: usize, index: u64) -> bool {
        if let Some(f) = self.pc_frame(i, index) {
            if self.mm.frames.is_mapped(f) {
                // `unmap_mapping_range` / `unmap_mapping_folio` first.
                self.pc_unmap(f, true);
            }
            let dirty = self.mm.frames.flags(f) & F_DIRTY != 0;
            self.pc_release(f, dirty);
        }
        // (`zap_pte_range`'s drop of what the entry holds, shadows included)
        self.unmap_page(self.mm.cache.file(i).base + index)
    }

    /// `truncate_setsize`: the new `i_size`, then `truncate_pagecache` →
    /// `truncate_inode_pages_range` from the first page wholly beyond it: cached pages
    /// (dirty ones without being written) and shadow entries go; a partial last page stays
    /// (its tail zeroed, `truncate_inode_partial_folio`).
    fn truncate_setsize(&mut self, i: usize, size: u64) {
        // (no entry lies at or beyond the old size's pages: neither pages, `Mm::validate`,
        // nor shadows, which only cached pages leave)
        let old_pages = self.mm.cache.file(i).size_pages();
        self.mm.cache.file_mut(i).i_size = size;
        for index in size.div_ceil(4096)..old_pages {
            self.pc_delete(i, index);
        }
    }

    /// `generic_fadvise` (mm/fadvise.c) of `[offset, offset + len)` (len 0: to the end).
    fn generic_fadvise(&mut self, i: usize, offset: u64, len: u64, advice: u64) {
        use crate::trace::recorded::fadv;
        const LLONG_MAX: u64 = i64::MAX as u64;
        let endbyte = offset.wrapping_add(len);
        let endbyte = if len == 0 || endbyte < len {
            LLONG_MAX
        } else {
            endbyte - 1
        };
        let device_ra = self.read_ahead_kb as u64 / 4;
        match advice {
            fadv::NORMAL => {
                let file = self.mm.cache.file_mut(i);
                file.ra_pages = None;
                file.random = false;
            }
            fadv::RANDOM => self.mm.cache.file_mut(i).random = true,
            fadv::SEQUENTIAL => {
                let file = self.mm.cache.file_mut(i);
                file.ra_pages = Some(device_ra * 2);
                file.random = false;
            }
            fadv::WILLNEED => {
                // First and last partial page.
                let start = offset >> 12;
                let end = endbyte >> 12;
                let nr = (end - start).saturating_add(1);
                self.force_page_cache_ra(i, start, nr);
            }
            fadv::DONTNEED => {
                // Writeback started (WB_SYNC_NONE) on the dirty pages of the range: they are
                // under writeback, not evictable by the invalidation that follows.
                let mut busy = Vec::new();
                self.pc_writeback_range(i, offset >> 12, endbyte >> 12, Some(&mut busy));
                self.pc_flush_writes(false);
                // First and last full page; the last one too when the range ends on a page
                // boundary or at the file's last byte.
                let start = offset.div_ceil(4096);
                let mut end = endbyte >> 12;
                let isize = self.mm.cache.file(i).i_size;
                if endbyte & 4095 != 4095 && endbyte != isize.wrapping_sub(1) {
                    if end == 0 {
                        return;
                    }
                    end -= 1;
                }
                // `mapping_try_invalidate`: clean pages and shadow entries go; pages under
                // writeback stay (the kernel then deactivates them, `deactivate_file_folio`:
                // left out, the policies have no such call).
                // (no entry lies beyond the file's last page)
                let Some(last) = self.mm.cache.file(i).size_pages().checked_sub(1) else {
                    return;
                };
                let end = end.min(last);
                let mut k = 0;
                for index in start..=end {
                    while k < busy.len() && busy[k] < index {
                        k += 1;
                    }
                    if k < busy.len() && busy[k] == index {
                        continue;
                    }
                    // `mapping_evict_folio` keeps a mapped folio.
                    if self
                        .pc_frame(i, index)
                        .is_some_and(|f| self.mm.frames.is_mapped(f))
                    {
                        continue;
                    }
                    self.pc_delete(i, index);
                }
            }
            // NOREUSE (`FMODE_NOREUSE`) changes nothing the model follows.
            _ => {}
        }
    }

    /// A read or write of a file open with `O_DIRECT` (ext4's `iomap_dio_rw`): the cached
    /// pages of its range are written first (`kiocb_write_and_wait`); a write then
    /// invalidates them (`kiocb_invalidate_pages` → `invalidate_inode_pages2_range`, shadow
    /// entries included); the user buffer is pinned (`bio_iov_iter_get_pages` →
    /// `pin_user_pages_fast`, one call per bio of up to `BIO_MAX_VECS` = 256 pages,
    /// `FOLL_WRITE` for a read: [`Machine::access`] of `get_user_pages` accesses); the
    /// device transfers the bytes (`submit_bio`: `pgpgin`/`pgpgout` in sectors, shown in
    /// KiB). A write past `i_size` extends it. Nothing is cached.
    fn direct_io(&mut self, i: usize, io: &FileIo) {
        if io.len == 0 {
            return;
        }
        let read = io.op == FileOp::DirectRead;
        let (first, last) = (io.offset >> 12, (io.offset + io.len - 1) >> 12);
        self.pc_writeback_range(i, first, last, None);
        self.pc_flush_writes(true);
        if !read {
            let last = last.min(self.mm.cache.file(i).reserved.saturating_sub(1));
            for index in first..=last {
                self.pc_delete(i, index);
            }
        }
        if io.addr != 0 {
            let shift = self.user_page_shift;
            let (p0, p1) = (io.addr >> shift, (io.addr + io.len - 1) >> shift);
            let mut p = p0;
            while p <= p1 {
                // A new call (`pin_user_pages_fast`) per bio.
                self.gup_last_t = u64::MAX;
                for q in p..=p1.min(p + BIO_MAX_VECS - 1) {
                    self.gup_access(Access::gup(q, read), u64::MAX);
                }
                p += BIO_MAX_VECS;
            }
        }
        if let Some(t) = self.file_time.as_mut() {
            // The transfer: one request over the pages the range covers, waited for.
            let now = self.mm.now;
            let id = self.mm.cache.file(i).id;
            let c = t.dev.submit(now, id, first, last - first + 1, !read, &[]);
            t.work.submit_ns += c.cpu_ns;
            if c.done_at > now {
                t.work.wait_ns += c.done_at - now;
                self.mm.now = c.done_at;
            }
        }
        let sectors = io.len.div_ceil(512);
        if read {
            self.dio_sectors[0] += sectors;
            self.stats.pgpgin += self.dio_sectors[0] / 2;
            self.dio_sectors[0] %= 2;
        } else {
            self.dio_sectors[1] += sectors;
            self.stats.pgpgout += self.dio_sectors[1] / 2;
            self.dio_sectors[1] %= 2;
            let file = self.mm.cache.file_mut(i);
            file.i_size = file.i_size.max(io.offset + io.len);
        }
    }

    /// A page-cache frame leaves (reclaim): the file's count and the gauges.
    pub(super) fn pc_release(&mut self, f: FrameId, dirty: bool) {
        debug_assert!(
            !self.mm.frames.is_mapped(f),
            "a mapped page-cache frame released"
        );
        self.detach_buffers(f);
        if let Some(t) = self.file_time.as_mut() {
            t.dev.page_changed(f);
        }
        let vpn = self.mm.owner(f);
        if let Some((i, index)) = self.mm.cache.page_of(vpn) {
            let file = self.mm.cache.file_mut(i);
            file.nrpages -= 1;
            if dirty {
                file.dirty.remove(&index);
            }
        }
        if dirty {
            self.stats.nr_dirty -= 1;
        }
        self.mm.frames.clear_flags(f, F_PAGECACHE | F_READAHEAD);
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::*;
    use crate::policy::KernelVersion;

    /// A machine for page-cache tests: watermarks all 0 (kswapd runs when an allocation finds
    /// no free frame), a synchronous swap device, invariants checked after every step,
    /// readahead of `read_ahead_kb` (0: each read of a page not cached reads it alone),
    /// `kernel`'s rules, one file 0 of `pages` pages that may grow to `extent` pages. The
    /// dirty limits are 100% and 99% of dirtyable memory, so the background flusher stays out
    /// of these few-frame machines' tests of other rules (the flusher's own tests set them).
    pub(crate) fn pc_machine<P: Policy>(
        policy: P,
        frames: u32,
        read_ahead_kb: u32,
        kernel: KernelVersion,
        (pages, extent): (u64, u64),
    ) -> Machine<P> {
        let cfg = MachineConfig {
            kernel,
            watermarks: Some(Watermarks {
                min: 0,
                low: 0,
                high: 0,
            }),
            swap_sync_io: true,
            check_invariants: true,
            read_ahead_kb,
            dirty_ratio: 100,
            dirty_background_ratio: 99,
            ..MachineConfig::new(frames)
        };
        let mut m = Machine::new(&cfg, policy).unwrap();
        m.add_file(FileSpec {
            id: 0,
            initial_size: pages * 4096,
            extent: extent * 4096,
        })
        .unwrap();
        m
    }

    /// A file I/O record `op` of file 0, `len` bytes from `offset`.
    pub(crate) fn record(op: FileOp, offset: u64, len: u64) -> FileIo {
        record_at(op, 0, offset, len, 0)
    }

    /// A file I/O record `op` of thread 1: file `file`, `len` bytes from `offset`, `addr`.
    pub(crate) fn record_at(op: FileOp, file: u32, offset: u64, len: u64, addr: u64) -> FileIo {
        FileIo {
            op,
            tid: 1,
            stamp: 0,
            file,
            offset,
            len,
            addr,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Expected values are worked out by hand from Linux 6.8's rules in the comments beside
    //! them.
    use super::*;
    use crate::access::Access;
    use crate::mm::pagecache::FILE_BASE;
    use crate::policy::clock_lru::ClockLru;
    use crate::policy::lru::Lru;

    fn io(op: FileOp, file: u32, offset: u64, len: u64) -> FileIo {
        super::testutil::record_at(op, file, offset, len, 0)
    }

    /// A machine of `frames` frames whose watermarks are all 0 (kswapd runs when an
    /// allocation finds no free frame), a synchronous swap device, readahead of
    /// `read_ahead_kb`, one file 0 of `pages` pages.
    fn machine(frames: u32, read_ahead_kb: u32, pages: u64) -> Machine<ClockLru> {
        machine_growing(frames, read_ahead_kb, pages, pages)
    }

    /// [`machine`] whose file may grow to `extent` pages.
    pub(super) fn machine_growing(
        frames: u32,
        read_ahead_kb: u32,
        pages: u64,
        extent: u64,
    ) -> Machine<ClockLru> {
        let p = ClockLru::new(frames);
        super::testutil::pc_machine(
            p,
            frames,
            read_ahead_kb,
            Default::default(),
            (pages, extent),
        )
    }

    pub(super) fn cached(m: &Machine<ClockLru>) -> Vec<u64> {
        (0..m.mm.cache.file(0).reserved)
            .filter(|&x| m.pc_frame(0, x).is_some())
            .collect()
    }

    fn marked(m: &Machine<ClockLru>) -> Vec<u64> {
        (0..m.mm.cache.file(0).reserved)
            .filter(|&x| {
                m.pc_frame(0, x)
                    .is_some_and(|f| m.mm.frames.flags(f) & F_READAHEAD != 0)
            })
            .collect()
    }

    #[test]
    fn window_sizes_of_the_kernel_comment() {
        // "for 128k (32 page) max ra: 1-2 page = 16k, 3-4 page 32k, 5-8 page = 64k, > 8 page
        // = 128k initial".
        let init: Vec<u64> = [1, 2, 3, 4, 5, 8, 9, 32, 100]
            .iter()
            .map(|&n| get_init_ra_size(n, 32))
            .collect();
        assert_eq!(init, [4, 4, 8, 8, 16, 16, 32, 32, 32]);
        // Ramp-up: ×4 below max/16 = 2, ×2 up to max/2 = 16, then max.
        let next: Vec<u64> = [1, 2, 4, 8, 16, 17, 32]
            .iter()
            .map(|&n| get_next_ra_size(n, 32))
            .collect();
        assert_eq!(next, [4, 4, 8, 16, 32, 32, 32]);
    }

    /// A sequential reader of 4 KiB reads with `read_ahead_kb` = 128 (ra_pages 32).
    /// Read of page 0: no page cached → `page_cache_sync_ra` → `ondemand_readahead` at index
    /// 0: initial window start 0, size `get_init_ra_size(1, 32)` = 4, async_size 4 − 1 = 3;
    /// not merged (size ≠ async_size); pages 0..4 read, `PG_readahead` on page 4 − 3 = 1.
    /// Read of page 1: marked → `page_cache_async_ra`: index 1 = start + size − async_size
    /// → start 4, size `get_next_ra_size(4)` = 8, async 8: pages 4..12, page 4 marked.
    /// Page 4: start 12, size 16: pages 12..28, mark 12. Page 12: start 28, size 32: pages
    /// 28..60, mark 28. Page 28: start 60, size 32 (max): pages 60..92, mark 60.
    #[test]
    fn sequential_reader_readahead_windows() {
        let mut m = machine(1024, 128, 256);
        // (page read, pages cached after it, marked pages after it)
        let expect: [(u64, u64, &[u64]); 9] = [
            (0, 4, &[1]),
            (1, 12, &[4]),
            (2, 12, &[4]),
            (3, 12, &[4]),
            (4, 28, &[12]),
            (11, 28, &[12]),
            (12, 60, &[28]),
            (28, 92, &[60]),
            (60, 124, &[92]),
        ];
        let mut next = 0;
        for (page, n_cached, marks) in expect {
            while next <= page {
                m.file_io(&io(FileOp::Read, 0, next * 4096, 4096)).unwrap();
                next += 1;
            }
            assert_eq!(
                cached(&m),
                (0..n_cached).collect::<Vec<_>>(),
                "after page {page}"
            );
            assert_eq!(marked(&m), marks, "after page {page}");
            // Nothing reclaimed: every page read once, 4 KiB each in pgpgin.
            assert_eq!(m.stats.file_reads, n_cached);
            assert_eq!(m.stats.pgpgin, 4 * n_cached);
            assert_eq!(m.stats.nr_file_pages, n_cached);
        }
        let ra = m.mm.cache.file(0).ra;
        assert_eq!((ra.start, ra.size, ra.async_size), (92, 32, 32));
        assert_eq!(ra.prev_pos, 61 * 4096);
    }

    /// The end of the file stops readahead (`do_page_cache_ra` clips to the page holding
    /// the last byte): a 3-page file read from page 0 caches pages 0..3, not 0..4. The
    /// window of 4 clipped to 3 keeps its lookahead of 3, so `i == nr_to_read -
    /// lookahead_size` = 0 marks page 0, the page being read: the same read's batch ends at
    /// that marker and runs `page_cache_async_ra`, which clears it; at index 0 the window is
    /// the initial one again, all cached, so nothing more is read and no marker is left.
    #[test]
    fn readahead_stops_at_the_end_of_the_file() {
        let mut m = machine(64, 128, 3);
        m.file_io(&io(FileOp::Read, 0, 0, 100)).unwrap();
        assert_eq!(cached(&m), [0, 1, 2]);
        assert_eq!(marked(&m), Vec::<u64>::new());
        assert_eq!(m.stats.pgpgin, 12);
    }

    /// One 256 KiB read (64 pages) at the start of a file, `read_ahead_kb` 128 (ra_pages 32):
    /// oversize, so `max_pages` = min(64, io_pages 320) = 64. Index 0 → initial window
    /// `get_init_ra_size(64, 64)` = 64, async_size 64 (size is not above the request); the
    /// read would hit its own marker (index = start, size = async_size), so the next window
    /// is merged: 64 + `get_next_ra_size(64, 64)` = 128 > 64 → size 64, async 32. Pages 0..64
    /// read, page 64 − 32 = 32 marked. The copy goes in batches of `PAGEVEC_SIZE` 15: 0..15,
    /// 15..30, then 30..33 ending at the marker → `page_cache_async_ra(32, 64 − 32 = 32)`:
    /// 32 is not oversize (max 32); index 32 = start + size − async_size → start 64, size
    /// `get_next_ra_size(64, 32)` = 32, async 32: pages 64..96, page 64 marked.
    #[test]
    fn oversize_read_merges_and_batches() {
        let mut m = machine(1024, 128, 200);
        m.file_io(&io(FileOp::Read, 0, 0, 64 * 4096)).unwrap();
        assert_eq!(cached(&m), (0..96).collect::<Vec<_>>());
        assert_eq!(marked(&m), [64]);
        let ra = m.mm.cache.file(0).ra;
        assert_eq!((ra.start, ra.size, ra.async_size), (64, 32, 32));
        assert_eq!(ra.prev_pos, 64 * 4096);
        // Every page copied is marked accessed once: 64 referenced, none active.
        let c: std::collections::BTreeMap<_, _> = m.policy.counters().into_iter().collect();
        assert_eq!((c["pgactivate"], c["nr_inactive_file"]), (0, 96));
        // With readahead off, the same read reads its 64 pages and no more
        // (`force_page_cache_ra` of 1 page for each batch that finds none cached).
        let mut m = machine(1024, 0, 200);
        m.file_io(&io(FileOp::Read, 0, 0, 64 * 4096)).unwrap();
        assert_eq!(cached(&m), (0..64).collect::<Vec<_>>());
        assert_eq!(marked(&m), Vec::<u64>::new());
    }

    /// A random 4 KiB read in the middle of a file with nothing cached and a reader elsewhere:
    /// not index 0, not the expected index, no marker, not oversize, not sequential to
    /// `prev_pos` (page 0's read ended at 4096: prev index 1, index 50), no history pages
    /// before it: `do_page_cache_ra(index, 1, 0)` reads just the page, state untouched.
    #[test]
    fn random_read_reads_just_its_page() {
        let mut m = machine(64, 128, 100);
        m.file_io(&io(FileOp::Read, 0, 0, 4096)).unwrap();
        let before = m.mm.cache.file(0).ra;
        m.file_io(&io(FileOp::Pread, 0, 50 * 4096, 4096)).unwrap();
        assert_eq!(cached(&m), [0, 1, 2, 3, 50]);
        let after = m.mm.cache.file(0).ra;
        assert_eq!((after.start, after.size), (before.start, before.size));
        assert_eq!(after.prev_pos, 51 * 4096);
    }

    /// Writes: a partial write of a page not cached that holds file data (below `i_size`)
    /// reads it first; a partial write past `i_size` and a whole-page write do not. Each
    /// page written is dirty once (`nr_dirty`), and `i_size` grows to the last byte.
    #[test]
    fn partial_writes_read_the_page_first() {
        let mut m = machine(64, 128, 2);
        // File of 2 pages (8192 bytes), declared to reach 3 pages.
        m.mm.cache.file_mut(0).reserved = 512;
        m.file_io(&io(FileOp::Pwrite, 0, 100, 100)).unwrap(); // page 0: part, in the file
        assert_eq!((m.stats.pgpgin, m.stats.nr_dirty), (4, 1));
        m.file_io(&io(FileOp::Pwrite, 0, 4096, 4096)).unwrap(); // page 1: whole
        assert_eq!((m.stats.pgpgin, m.stats.nr_dirty), (4, 2));
        m.file_io(&io(FileOp::Pwrite, 0, 8192, 10)).unwrap(); // page 2: part, past i_size
        assert_eq!((m.stats.pgpgin, m.stats.nr_dirty), (4, 3));
        m.file_io(&io(FileOp::Write, 0, 150, 10)).unwrap(); // page 0 again: cached, dirty
        assert_eq!((m.stats.pgpgin, m.stats.nr_dirty), (4, 3));
        assert_eq!(m.mm.cache.file(0).i_size, 8202);
        // Writes mark nothing accessed: `FGP_WRITEBEGIN` has no `FGP_ACCESSED`.
        assert_eq!(m.policy.counters()[0], ("pgactivate", 0));
        assert_eq!(m.stats.file_io, 4);
    }

    /// Four frames, readahead off, all cached: page 0 written whole (dirty), pages 1, 2, 3
    /// read (clean, referenced).
    fn four_frames_page_0_dirty() -> Machine<ClockLru> {
        let mut m = machine(4, 0, 16);
        m.file_io(&io(FileOp::Pwrite, 0, 0, 4096)).unwrap();
        for p in 1..4 {
            m.file_io(&io(FileOp::Pread, 0, p * 4096, 4096)).unwrap();
        }
        m
    }

    /// Reclaim of a clean page costs no I/O; a dirty one is left to the flusher (Linux 6.1
    /// and 6.8 `shrink_folio_list`, `shrink_inactive_list`, `folio_end_writeback`). Four
    /// frames, readahead off (each read reads its page alone: `force_page_cache_ra` of 1
    /// page). Page 0 written whole (dirty, no read, not referenced: writes do not mark
    /// accessed), pages 1, 2, 3 read (clean, `PG_referenced` from the read's
    /// `folio_mark_accessed`). Reading page 4 finds no free frame: kswapd (low = high = 0)
    /// passes at priorities 12..3 scan `4 >> p` = 0 pages; at 2 the inactive file list's
    /// `4 >> 2` = 1 page (cache-trim mode: `SCAN_FILE`) is taken from the tail: page 0, not
    /// young, not referenced (`FOLIOREF_RECLAIM`), dirty, and kswapd meets it for the first
    /// time: `PG_reclaim` set, activated (`nr_vmscan_immediate_reclaim` 1, `pgactivate` 1),
    /// nothing reclaimed. Every folio the batch took was dirty and unqueued (1 of 1): the
    /// flusher is woken and writes it (pgpgout 4, `wb_vmscan` 1); its `folio_end_writeback`
    /// finds `PG_reclaim` and rotates it to the inactive tail (`pgrotated` 1). The pass at
    /// priority 1 takes `4 >> 1` = 2 pages from the tail: page 0, now clean, and page 1,
    /// referenced but clean (`FOLIOREF_RECLAIM_CLEAN`): both freed without a write
    /// (`nr_vmscan_write` 0). Reading page 5 then finds a free frame.
    #[test]
    fn clean_page_dropped_dirty_page_left_to_the_flusher() {
        let mut m = four_frames_page_0_dirty();
        assert_eq!(
            (m.stats.pgpgin, m.stats.pgpgout, m.stats.nr_dirty),
            (12, 0, 1)
        );
        m.file_io(&io(FileOp::Pread, 0, 4 * 4096, 4096)).unwrap();
        assert_eq!(cached(&m), [2, 3, 4]);
        assert_eq!(
            (m.stats.pgpgout, m.stats.file_writebacks, m.stats.nr_dirty),
            (4, 1, 0)
        );
        assert_eq!(
            (
                m.stats.wb_vmscan,
                m.stats.pgrotated,
                m.stats.nr_vmscan_write
            ),
            (1, 1, 0)
        );
        m.file_io(&io(FileOp::Pread, 0, 5 * 4096, 4096)).unwrap();
        assert_eq!(cached(&m), [2, 3, 4, 5]);
        assert_eq!((m.stats.pgpgout, m.stats.file_writebacks), (4, 1));
        assert_eq!(m.stats.pgpgin, 20);
        let c: std::collections::BTreeMap<_, _> = m.policy.counters().into_iter().collect();
        assert_eq!((c["pgscan_file"], c["pgsteal_file"]), (3, 2));
        assert_eq!((c["nr_vmscan_immediate_reclaim"], c["pgactivate"]), (1, 1));
        // Both evicted pages left shadows in their entries.
        for p in [0, 1] {
            let e = m.mm.pt.pte(m.mm.cache.file(0).base + p);
            assert!(e & PTE_FILE_GONE != 0 && e & PTE_PRESENT == 0);
        }
    }

    /// kswapd writes a dirty file folio itself only when it meets it again with `PG_reclaim`
    /// while the node is `PGDAT_DIRTY` (Linux 6.1 and 6.8 `shrink_folio_list`). The machine
    /// of [`clean_page_dropped_dirty_page_left_to_the_flusher`], with page 0 (dirty) already
    /// marked `PG_reclaim` and the node flagged: kswapd's pass at priority 2 takes page 0,
    /// not referenced (`FOLIOREF_RECLAIM`), and `pageout` writes it (`nr_vmscan_write` 1,
    /// pgpgout 4) and frees it; nothing is marked or activated. The batch's one folio was
    /// dirty and unqueued, so the flusher is woken too, and finds nothing dirty.
    #[test]
    fn kswapd_writes_a_dirty_file_folio_it_meets_again_under_pgdat_dirty() {
        let mut m = four_frames_page_0_dirty();
        let f0 = m.pc_frame(0, 0).unwrap();
        m.mm.frames.set_flags(f0, F_READAHEAD);
        m.mm.vmscan_dirty.pgdat_dirty = true;
        m.file_io(&io(FileOp::Pread, 0, 4 * 4096, 4096)).unwrap();
        assert_eq!(cached(&m), [1, 2, 3, 4]);
        assert_eq!(
            (
                m.stats.nr_vmscan_write,
                m.stats.file_writebacks,
                m.stats.pgpgout
            ),
            (1, 1, 4)
        );
        assert_eq!(
            (m.stats.wb_vmscan, m.stats.pgrotated, m.stats.nr_dirty),
            (0, 0, 0)
        );
        let c: std::collections::BTreeMap<_, _> = m.policy.counters().into_iter().collect();
        assert_eq!((c["nr_vmscan_immediate_reclaim"], c["pgactivate"]), (0, 0));
        assert_eq!((c["pgscan_file"], c["pgsteal_file"]), (1, 1));
    }

    #[test]
    fn bad_records_are_errors() {
        let mut m = machine(16, 128, 4);
        let e = m.file_io(&io(FileOp::Read, 7, 0, 1)).unwrap_err();
        assert!(e.to_string().contains("file 7"), "{e}");
        let e = m.file_io(&io(FileOp::Read, 0, u64::MAX, 2)).unwrap_err();
        assert!(e.to_string().contains("2^64"), "{e}");
        let e = m.file_io(&io(FileOp::Write, 0, 512 * 4096, 1)).unwrap_err();
        assert!(e.to_string().contains("extent"), "{e}");
        // opt does not model file pages (its future covers page accesses only): a clear
        // error, not a wrong answer.
        let cfg = MachineConfig::new(64);
        let p = crate::policy::opt::Opt::new(64);
        let mut m = Machine::new(&cfg, p).unwrap();
        let e = m
            .add_file(FileSpec {
                id: 0,
                initial_size: 1,
                extent: 1,
            })
            .unwrap_err();
        assert!(e.to_string().contains("page cache"), "{e}");
    }

    /// Gauges and invariants: every page-cache frame's entry points back at it, no file
    /// caches a page beyond its size, `nrpages`, `nr_file_pages` and `nr_dirty` agree with the
    /// frames (and, through the policies' `validate`, each file page is on exactly one list).
    fn check_gauges<P: Policy>(m: &Machine<P>) {
        m.validate().unwrap();
        let (mut file, mut dirty) = (0, 0);
        for f in 0..m.mm.frames.len() {
            if m.mm.frames.in_use(f) && !m.mm.frames.is_anon(f) {
                file += 1;
                let fl = m.mm.frames.flags(f);
                dirty += (fl & F_PAGECACHE != 0 && fl & F_DIRTY != 0) as u64;
            }
        }
        assert_eq!((m.stats.nr_file_pages, m.stats.nr_dirty), (file, dirty));
        // `nr_mapped`: the page-cache frames a file mapping maps.
        let mapped = (0..m.mm.frames.len())
            .filter(|&f| {
                m.mm.frames.in_use(f)
                    && m.mm.frames.flags(f) & (F_PAGECACHE | F_MAPPED) == F_PAGECACHE | F_MAPPED
            })
            .count() as u64;
        assert_eq!(m.stats.nr_mapped, mapped);
    }

    /// The body of `random_file_io_keeps_invariants`.
    fn run_random_ops(frames: u32, ra_kb: u32, ops: &[(u8, u32, u64, u64, u64)]) {
        use crate::policy::mglru::{MgLru, Preset};
        use crate::policy::PolicyOptions;
        use crate::trace::recorded::{fadv, mmap_flags};
        let cfg = MachineConfig {
            watermarks: Some(Watermarks {
                min: 0,
                low: 1,
                high: 2,
            }),
            check_invariants: true,
            read_ahead_kb: ra_kb,
            ..MachineConfig::new(frames)
        };
        let policies: Vec<Box<dyn Policy>> = vec![
            Box::new(ClockLru::new(frames)),
            Box::new(Lru::new(frames)),
            Box::new(MgLru::new(frames, &PolicyOptions::new(3), Preset::Default).unwrap()),
            Box::new(MgLru::new(frames, &PolicyOptions::new(3), Preset::Default).unwrap()),
        ];
        let mut ms: Vec<Machine<Box<dyn Policy>>> = policies
            .into_iter()
            .map(|p| Machine::new(&cfg, p).unwrap())
            .collect();
        // The last MG-LRU without swap: its aging walks take the file mappings alone (and
        // anonymous memory that fills the machine is out of memory: the machine stops
        // serving, its invariants still checked).
        ms[3].set_swap_off(true);
        for m in &mut ms {
            for id in 0..3 {
                let spec = FileSpec {
                    id,
                    initial_size: 20 * 4096,
                    extent: 48 * 4096,
                };
                m.add_file(spec).unwrap();
            }
            m.enable_file_mmap();
        }
        for &(kind, file, offset, len, page) in ops {
            let map_base = 1000 + 64 * file as u64;
            for m in &mut ms {
                let x = match kind {
                    0 => Some(io(FileOp::Read, file, offset, len)),
                    1 => Some(io(FileOp::Pwrite, file, offset, len)),
                    2 => Some(io(FileOp::Pread, file, offset, len)),
                    4 => {
                        // A mapping of up to 7 pages from page `offset / 4096 % 24`, at user
                        // page `map_base + page % 8`; shared when `page` is odd.
                        let flags = mmap_flags::KNOWN | ((page & 1) * mmap_flags::SHARED);
                        let mut x = io(FileOp::Mmap, file, offset & !4095 & 0x17fff, len + 4096);
                        x.addr = (map_base + page % 8) << 12 | flags;
                        Some(x)
                    }
                    7 => {
                        m.munmap(map_base + page % 32, map_base + page % 32 + len / 4096);
                        None
                    }
                    8 => {
                        let mut x = io(FileOp::Fadvise, file, 0, 0);
                        x.addr = fadv::DONTNEED;
                        Some(x)
                    }
                    9 if page < 5 => Some(io(FileOp::Ftruncate, file, 0, offset)),
                    5 => {
                        m.access(Access::read(map_base + page), u64::MAX);
                        None
                    }
                    6 => {
                        m.access(Access::write(map_base + page), u64::MAX);
                        None
                    }
                    _ => {
                        m.access(Access::write(page), u64::MAX);
                        None
                    }
                };
                if let Some(x) = x {
                    m.file_io(&x).unwrap();
                }
                check_gauges(m);
                for f in m.mm.cache.files() {
                    assert!(f.nrpages <= f.size_pages());
                    assert!(f.base >= FILE_BASE);
                }
            }
        }
    }

    #[test]
    fn random_ops_regression_mmap_over_a_mapping() {
        run_random_ops(
            8,
            16,
            &[
                (4, 1, 114688, 16385, 8),
                (5, 0, 0, 0, 1),
                (5, 0, 0, 0, 0),
                (5, 1, 0, 0, 1),
                (4, 1, 65536, 20481, 18),
                (5, 1, 0, 0, 8),
            ],
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(40))]
        /// Random reads and writes of three files mixed with anonymous accesses, and file
        /// mappings (`mmap` records, shared or private, at user pages 1000 + 64 × file; reads
        /// and writes of their pages; `munmap`; `fadvise(DONTNEED)`; `ftruncate`), on small
        /// machines with random readahead, under clock-lru and a demand policy (lru): every
        /// invariant holds after every step (every cached page on one list, a mapped page in
        /// the cache and its entry holding it, the gauges).
        #[test]
        fn random_file_io_keeps_invariants(
            frames in 8u32..40,
            ra_kb in proptest::sample::select(vec![0u32, 4, 16, 128]),
            ops in proptest::collection::vec(
                (0u8..10, 0u32..3, 0u64..40 * 4096, 0u64..6 * 4096, 0u64..50), 1..200),
        ) {
            run_random_ops(frames, ra_kb, &ops);
        }
    }
}

#[cfg(test)]
pub(crate) mod replay_tests {
    //! A recorded trace with file I/O replayed end to end (`replay::replay`).
    use crate::engine::MachineConfig;
    use crate::policy::{PolicyKind, PolicyOptions};
    use crate::replay::{replay, ReplaySpec};
    use crate::trace::recorded::{FileIo, FileOp, Recorded, RecordedWriter};
    use crate::trace::{TraceMeta, TraceWriter};

    pub(crate) fn tmp(name: &str) -> String {
        let dir = std::env::temp_dir().join(format!("vmemsim-pagecache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name).to_string_lossy().into_owned()
    }

    /// Anonymous pages 1, 2, 3, then a file of 64 KiB read whole in 4 KiB reads, one
    /// anonymous access between reads, then 8 KiB written at its end (an append: the file
    /// grows to 72 KiB).
    pub(crate) fn write_trace(path: &str) {
        let mut w = RecordedWriter::create(path, TraceMeta::default()).unwrap();
        let acc = |page| Recorded {
            page,
            write: true,
            tid: 1,
            count: 1,
            ..Recorded::default()
        };
        for p in 1..4 {
            w.access(acc(p)).unwrap();
        }
        w.file(0, "/data/f").unwrap();
        let io = |op, offset, len| FileIo {
            op,
            tid: 1,
            stamp: 0,
            file: 0,
            offset,
            len,
            addr: 0,
        };
        for k in 0..16 {
            w.io(io(FileOp::Read, k * 4096, 4096)).unwrap();
            w.access(acc(1 + k % 3)).unwrap();
        }
        w.io(io(FileOp::Write, 65536, 8192)).unwrap();
        w.finish().unwrap();
    }

    #[test]
    fn recorded_file_io_goes_through_the_page_cache() {
        let path = tmp("seq.vmt");
        write_trace(&path);
        // The trace replayed under `policy` in 1,024 frames.
        let replay_under = |policy: &str, check: bool| {
            let mut src = crate::trace::open(&path, None, &Default::default()).unwrap();
            let spec = ReplaySpec::new(
                PolicyKind::from_name(policy).unwrap(),
                MachineConfig {
                    check_invariants: check,
                    ..MachineConfig::new(1024)
                },
                PolicyOptions::new(1),
            );
            replay(&mut src, &spec, None)
        };
        let r = replay_under("clock-lru", true).unwrap();
        // 16 pages of a 16-page file read with readahead (windows 0..4, 4..12, 12..16
        // clipped at the end of the file, as in `sequential_reader_readahead_windows`):
        // each page read once, 64 KiB in pgpgin. The append writes two whole pages: no read,
        // both dirty.
        assert_eq!(r.stats.accesses, 19);
        assert_eq!(r.stats.file_io, 17);
        assert_eq!((r.stats.file_reads, r.stats.pgpgin), (16, 64));
        assert_eq!((r.stats.nr_file_pages, r.stats.nr_dirty), (18, 2));
        assert_eq!(r.stats.pgpgout, 0);
        // Under mglru: the same page-cache reads and writes (nothing is reclaimed in 1024
        // frames, so the policy decides nothing here).
        let r = replay_under("mglru", true).unwrap();
        assert_eq!((r.stats.file_reads, r.stats.pgpgin), (16, 64));
        assert_eq!((r.stats.nr_file_pages, r.stats.nr_dirty), (18, 2));
        // Under opt: an error naming what is not modelled, before anything runs.
        let e = replay_under("opt", false).unwrap_err().to_string();
        assert!(e.contains("opt") && e.contains("page cache"), "{e}");
        // Under a demand policy (file pages are pages): the same page-cache reads.
        let r = replay_under("lru", false).unwrap();
        assert_eq!((r.stats.file_reads, r.stats.nr_file_pages), (16, 18));
        let _ = std::fs::remove_file(&path);
    }

    /// A trace with file I/O whose page numbers reach the page cache's range is an error
    /// naming the page, not a silent alias of a file page.
    #[test]
    fn pages_in_the_file_range_are_an_error() {
        let path = tmp("alias.vmt");
        let mut w = RecordedWriter::create(&path, TraceMeta::default()).unwrap();
        w.file(0, "f").unwrap();
        w.io(FileIo {
            op: FileOp::Read,
            tid: 1,
            stamp: 0,
            file: 0,
            offset: 0,
            len: 4096,
            addr: 0,
        })
        .unwrap();
        w.access(Recorded {
            page: crate::mm::pagecache::FILE_BASE,
            count: 1,
            ..Recorded::default()
        })
        .unwrap();
        w.finish().unwrap();
        let mut src = crate::trace::open(&path, None, &Default::default()).unwrap();
        let spec = ReplaySpec::new(
            PolicyKind::from_name("lru").unwrap(),
            MachineConfig::new(64),
            PolicyOptions::new(1),
        );
        let e = replay(&mut src, &spec, None).unwrap_err().to_string();
        assert!(e.contains("0x800000000") && e.contains("page cache"), "{e}");
        let _ = std::fs::remove_file(&path);
    }
}

#[cfg(test)]
mod sync_tests {
    //! fsync, fadvise64, ftruncate and `O_DIRECT` I/O, expected values by hand from Linux
    //! 6.8's mm/fadvise.c, mm/truncate.c, mm/filemap.c and fs/iomap/direct-io.c (comments).
    use super::*;
    use crate::trace::recorded::fadv;

    fn io(op: FileOp, offset: u64, len: u64, addr: u64) -> FileIo {
        super::testutil::record_at(op, 0, offset, len, addr)
    }

    use super::tests::{cached, machine_growing as machine};

    #[test]
    fn fsync_writes_the_dirty_pages_and_keeps_them() {
        let mut m = machine(16, 0, 8, 8);
        // Three whole pages written: cached, dirty, nothing read (`generic_perform_write`).
        m.file_io(&io(FileOp::Pwrite, 0, 3 * 4096, 0)).unwrap();
        assert_eq!(
            (m.stats.nr_dirty, m.stats.pgpgout, m.stats.pgpgin),
            (3, 0, 0)
        );
        m.file_io(&io(FileOp::Fsync, 0, 0, 0)).unwrap();
        // Each written (4 KiB of pgpgout), clean, still cached.
        assert_eq!(
            (m.stats.nr_dirty, m.stats.pgpgout, m.stats.file_writebacks),
            (0, 12, 3)
        );
        assert_eq!(cached(&m), [0, 1, 2]);
        m.file_io(&io(FileOp::Fsync, 0, 0, 0)).unwrap();
        assert_eq!(m.stats.pgpgout, 12);
    }

    #[test]
    fn fadvise_dontneed_drops_whole_clean_pages_and_spares_those_it_writes() {
        // read_ahead_kb 0: each read reads exactly its pages.
        let mut m = machine(16, 0, 8, 8);
        m.file_io(&io(FileOp::Pread, 0, 5 * 4096, 0)).unwrap();
        m.file_io(&io(FileOp::Pwrite, 2 * 4096, 4096, 0)).unwrap();
        assert_eq!((cached(&m), m.stats.nr_dirty), (vec![0, 1, 2, 3, 4], 1));
        // [4096, 4096 + 8292): endbyte 12387 (inclusive). Writeback of pages 1..=3 writes the
        // dirty page 2 (pgpgout 4; under writeback). Full pages: start ⌈4096/4096⌉ = 1, end
        // 12387 >> 12 = 3, less one as 12387 is neither a page's last byte nor i_size − 1:
        // pages 1..=2, of which 2 is under writeback: only page 1 goes.
        m.file_io(&io(FileOp::Fadvise, 4096, 8292, fadv::DONTNEED))
            .unwrap();
        assert_eq!(cached(&m), [0, 2, 3, 4]);
        assert_eq!(
            (m.stats.nr_dirty, m.stats.pgpgout, m.stats.nr_file_pages),
            (0, 4, 4)
        );
        // Length 0: to LLONG_MAX, whose low 12 bits are all ones: every page, now clean.
        m.file_io(&io(FileOp::Fadvise, 0, 0, fadv::DONTNEED))
            .unwrap();
        assert!(cached(&m).is_empty());
        assert_eq!((m.stats.nr_file_pages, m.mm.cache.file(0).nrpages), (0, 0));
        // A range inside page 0 only: no full page (end_index 0, less one: none).
        m.file_io(&io(FileOp::Pread, 0, 4096, 0)).unwrap();
        m.file_io(&io(FileOp::Fadvise, 0, 100, fadv::DONTNEED))
            .unwrap();
        assert_eq!(cached(&m), [0]);
    }

    #[test]
    fn fadvise_willneed_random_and_sequential_set_readahead() {
        // WILLNEED of [0, 3 × 4096): `force_page_cache_readahead` of pages 0..=2, no mark.
        let mut m = machine(256, 128, 128, 128);
        m.file_io(&io(FileOp::Fadvise, 0, 3 * 4096, fadv::WILLNEED))
            .unwrap();
        assert_eq!((cached(&m), m.stats.pgpgin), (vec![0, 1, 2], 12));
        // A 17-page read at 0 of a fresh file: `get_init_ra_size(17, 32)`: 32 ≤ 32/4? no →
        // the max, 32 pages; with SEQUENTIAL ra_pages is 64: 32 ≤ 64/4 → 64 pages; with
        // RANDOM, `page_cache_sync_ra` forces the request only: 17 pages.
        for (advice, pages) in [
            (None, 32),
            (Some(fadv::SEQUENTIAL), 64),
            (Some(fadv::RANDOM), 17),
        ] {
            let mut m = machine(256, 128, 128, 128);
            if let Some(a) = advice {
                m.file_io(&io(FileOp::Fadvise, 0, 0, a)).unwrap();
            }
            m.file_io(&io(FileOp::Pread, 0, 17 * 4096, 0)).unwrap();
            assert_eq!(cached(&m).len(), pages, "{advice:?}");
        }
    }

    #[test]
    fn ftruncate_drops_pages_and_shadows_beyond_the_size() {
        let mut m = machine(16, 0, 8, 8);
        m.file_io(&io(FileOp::Pread, 0, 8 * 4096, 0)).unwrap();
        m.file_io(&io(FileOp::Pwrite, 6 * 4096, 4096, 0)).unwrap();
        // 10,000 bytes: pages from ⌈10000 / 4096⌉ = 3 go, the dirty page 6 unwritten; page 2
        // (partial) stays.
        m.file_io(&io(FileOp::Ftruncate, 0, 10_000, 0)).unwrap();
        assert_eq!(cached(&m), [0, 1, 2]);
        assert_eq!(
            (m.stats.nr_dirty, m.stats.pgpgout, m.stats.nr_file_pages),
            (0, 0, 3)
        );
        assert_eq!(m.mm.cache.file(0).i_size, 10_000);
        // A read past the size reads nothing.
        m.file_io(&io(FileOp::Pread, 5 * 4096, 4096, 0)).unwrap();
        assert_eq!(cached(&m), [0, 1, 2]);

        // Shadows go too. 4 frames, 8 pages read: the first ones are evicted, leaving shadows;
        // reading page 0 again would be a refault. After truncating to 0 and growing back it is
        // a new page.
        let mut m = machine(4, 0, 8, 8);
        m.file_io(&io(FileOp::Pread, 0, 8 * 4096, 0)).unwrap();
        assert!(m.pc_frame(0, 0).is_none());
        let refaults = m.stats.workingset_refault_file;
        m.file_io(&io(FileOp::Ftruncate, 0, 0, 0)).unwrap();
        assert!(cached(&m).is_empty());
        m.file_io(&io(FileOp::Ftruncate, 0, 8 * 4096, 0)).unwrap();
        m.file_io(&io(FileOp::Pread, 0, 4096, 0)).unwrap();
        assert_eq!(m.stats.workingset_refault_file, refaults);
        assert_eq!(cached(&m), [0]);
    }

    #[test]
    fn unlink_frees_every_page_dirty_ones_unwritten() {
        // 8 pages read, pages 2 and 5 rewritten (dirty): 8 cached, 2 dirty, nothing out.
        let mut m = machine(16, 0, 8, 8);
        m.file_io(&io(FileOp::Pread, 0, 8 * 4096, 0)).unwrap();
        m.file_io(&io(FileOp::Pwrite, 2 * 4096, 4096, 0)).unwrap();
        m.file_io(&io(FileOp::Pwrite, 5 * 4096, 4096, 0)).unwrap();
        assert_eq!(
            (m.stats.nr_file_pages, m.stats.nr_dirty, m.stats.pgpgout),
            (8, 2, 0)
        );
        let free = m.mm.frames.n_free();
        // truncate_inode_pages_final: all 8 frames free again, the 2 dirty pages dropped
        // without a write (pgpgout stays 0), the file's size 0.
        m.file_io(&io(FileOp::Unlink, 0, 0, 0)).unwrap();
        assert!(cached(&m).is_empty());
        assert_eq!(
            (m.stats.nr_file_pages, m.stats.nr_dirty, m.stats.pgpgout),
            (0, 0, 0)
        );
        assert_eq!(m.mm.frames.n_free(), free + 8);
        assert_eq!(m.mm.cache.file(0).i_size, 0);
        m.validate().unwrap();
    }

    #[test]
    fn direct_io_bypasses_the_cache_and_pins_its_buffer() {
        let mut m = machine(32, 0, 8, 16);
        m.file_io(&io(FileOp::Pread, 0, 4 * 4096, 0)).unwrap();
        m.file_io(&io(FileOp::Pwrite, 4096, 4096, 0)).unwrap();
        let (pgpgin, reads) = (m.stats.pgpgin, m.stats.file_reads);
        // An O_DIRECT read of pages 0..=1 into a buffer at page 16: the dirty page 1 is written
        // first (`kiocb_write_and_wait`: pgpgout 4), both stay cached; the buffer's pages 16
        // and 17, not present, are pinned through the slow path (faulted in: 2 gup pages, 2
        // touched); the device reads 16 sectors: 8 KiB of pgpgin; no page-cache read.
        m.file_io(&io(FileOp::DirectRead, 0, 8192, 16 << 12))
            .unwrap();
        assert_eq!(m.stats.pgpgout, 4);
        assert_eq!(m.stats.pgpgin - pgpgin, 8);
        assert_eq!(m.stats.file_reads, reads);
        assert_eq!((m.stats.gup_pages, m.stats.gup_touched), (2, 2));
        assert_eq!(cached(&m), [0, 1, 2, 3]);
        // An O_DIRECT write of pages 1..=2 from the same buffer: nothing dirty; pages 1 and 2
        // invalidated; the buffer, present now, pinned by the lockless walk (nothing
        // touched); 16 sectors out: pgpgout 4 + 8.
        m.file_io(&io(FileOp::DirectWrite, 4096, 8192, 16 << 12))
            .unwrap();
        assert_eq!(cached(&m), [0, 3]);
        assert_eq!((m.stats.gup_pages, m.stats.gup_touched), (4, 2));
        assert_eq!(m.stats.pgpgout, 12);
        // A write past the end extends i_size; single sectors are counted in pairs (KiB).
        m.file_io(&io(FileOp::DirectWrite, 10 * 4096, 512, 0))
            .unwrap();
        assert_eq!(m.mm.cache.file(0).i_size, 10 * 4096 + 512);
        assert_eq!(m.stats.pgpgout, 12);
        m.file_io(&io(FileOp::DirectWrite, 11 * 4096, 512, 0))
            .unwrap();
        assert_eq!(m.stats.pgpgout, 13);
    }
}

#[cfg(test)]
mod flusher_tests {
    //! The dirty limits and the background flusher (mm/page-writeback.c, 6.8), by hand.
    use super::*;
    use crate::policy::clock_lru::ClockLru;

    /// A `clock-lru` machine of `frames` frames and watermarks `(min, low, high)` with one
    /// file of `initial` pages that may grow to `extent` pages.
    fn machine(
        frames: u32,
        (min, low, high): (u32, u32, u32),
        initial: u64,
        extent: u64,
    ) -> Machine<ClockLru> {
        let cfg = MachineConfig {
            watermarks: Some(Watermarks { min, low, high }),
            check_invariants: true,
            ..MachineConfig::new(frames)
        };
        let mut m = Machine::new(&cfg, ClockLru::new(frames)).unwrap();
        m.add_file(FileSpec {
            id: 0,
            initial_size: initial * 4096,
            extent: extent * 4096,
        })
        .unwrap();
        m
    }

    fn write_page(m: &mut Machine<ClockLru>, index: u64) {
        m.file_io(&super::testutil::record(FileOp::Pwrite, index * 4096, 4096))
            .unwrap();
    }

    /// The flusher's background passes are cyclic (`write_cache_pages` with `range_cyclic`:
    /// from `mapping->writeback_index`, left at the last page written when a pass stops on
    /// its `nr_to_write`). 25,000 frames, watermarks 0: `global_dirtyable_memory` = 25,001
    /// at every step, so bg_thresh = 409 × 25,001 / 4,096 = 2,496. Pages 0..=2,496 written:
    /// the 2,497th dirty page starts a pass, which writes the chunk of `MIN_WRITEBACK_PAGES`
    /// from index 0 (pages 0..=1,023) and stops at 1,473 dirty, `writeback_index` 1,023.
    /// Pages 0..=1,023 written again: the 1,024th makes 2,497 dirty; this pass starts at
    /// 1,023 and writes pages 1,023..=2,046, leaving 0..=1,022 and 2,047..=2,496 dirty
    /// (1,023 + 450 = 1,473), `writeback_index` 2,046. (A pass from index 0 would have
    /// written 0..=1,023 again.)
    #[test]
    fn background_writeback_goes_on_from_where_it_stopped() {
        let mut m = machine(25_000, (0, 0, 0), 0, 2_497);
        assert_eq!(m.dirty_limits().0, 2_496);
        for k in 0..2_497 {
            write_page(&mut m, k);
        }
        assert_eq!((m.stats.nr_dirty, m.stats.wb_background), (1_473, 1_024));
        assert_eq!(m.mm.cache.file(0).writeback_index, 1_023);
        for k in 0..1_024 {
            write_page(&mut m, k);
        }
        assert_eq!((m.stats.nr_dirty, m.stats.wb_background), (1_473, 2_048));
        assert_eq!(m.mm.cache.file(0).writeback_index, 2_046);
        let dirty: Vec<u64> = m.mm.cache.file(0).dirty.iter().copied().collect();
        let want: Vec<u64> = (0..1_023).chain(2_047..2_497).collect();
        assert_eq!(dirty, want);
    }

    #[test]
    fn background_writeback_starts_above_the_background_threshold() {
        // 1,000 frames, watermarks 0 (`totalreserve_pages` 0), the default ratios 20 and 10.
        // After k whole pages written, free = 1000 - k and the file LRUs hold k pages:
        // `global_dirtyable_memory` = 1000 - k + k + 1 = 1001 at every step; thresh =
        // (20 × 4096 / 100 = 819) × 1001 / 4096 = 200, bg_thresh = (409 × 1001) / 4096 = 99.
        // The 100th dirty page exceeds 99: the flusher writes the file's dirty pages, a chunk
        // of at most 1,024 (all 100), and stops at 0 ≤ 99; again at the 200th page. 250 pages:
        // 200 written in the background (800 KiB of pgpgout), 50 still dirty. Untimed: no
        // page is under writeback and no writer waits.
        let mut m = machine(1000, (0, 0, 0), 0, 250);
        assert_eq!(m.dirty_limits(), (99, 200));
        for k in 0..99 {
            write_page(&mut m, k);
        }
        assert_eq!((m.stats.nr_dirty, m.stats.wb_background), (99, 0));
        write_page(&mut m, 99);
        assert_eq!((m.stats.nr_dirty, m.stats.wb_background), (0, 100));
        for k in 100..250 {
            write_page(&mut m, k);
        }
        assert_eq!((m.stats.nr_dirty, m.stats.wb_background), (50, 200));
        assert_eq!(m.stats.pgpgout, 800);
        assert_eq!((m.stats.nr_writeback, m.stats.dirty_throttled), (0, 0));
        // The high watermark is `totalreserve_pages`: with high = 100 and 500 frames free,
        // 400 + 250 + 1 = 651 dirtyable pages: thresh 819 × 651 / 4096 = 130, bg 65.
        let mut m = machine(750, (50, 75, 100), 250, 250);
        m.file_io(&FileIo {
            op: FileOp::Read,
            tid: 1,
            stamp: 0,
            file: 0,
            offset: 0,
            len: 250 * 4096,
            addr: 0,
        })
        .unwrap();
        assert_eq!(m.mm.frames.n_free(), 500);
        assert_eq!(m.dirty_limits(), (65, 130));
    }
}

//! File mappings through the page cache (Linux 6.8, x86-64, order-0 folios): a recorded
//! `mmap` of a file ([`FileOp::Mmap`]) maps the file's pages at the recorded user pages, and
//! the program's accesses to them are served from the page cache ([`super::pagecache`]).
//!
//! - A mapping ([`FileMap`]) is `MAP_SHARED` or `MAP_PRIVATE` as the record says (the
//!   recorder packs the flags into the low bits of the page-aligned address,
//!   [`crate::trace::recorded::mmap_flags`]; a record without them, from an older recorder,
//!   is taken as `MAP_PRIVATE`, the loader's and most readers' choice). A new mapping first
//!   removes whatever the range held (`mmap` over an old mapping, `MAP_FIXED`, or an
//!   address reused after a `munmap` the recorder does not record): [`Machine::munmap`].
//! - The recorder does not record the file's size: a mapping is taken to show that the file
//!   reaches the end of the mapped range (a page of a mapping past the end of its file is
//!   `SIGBUS` on access, which a recorded program did not take), so `i_size` grows to it, up
//!   to the pages the replay reserved for the file (its read and write records' extent,
//!   rounded up to 2 MiB). A page past `i_size` or that room stays anonymous
//!   (`filemap_fault` would return `VM_FAULT_SIGBUS`).
//! - A fault on a page of a mapping whose PTE is empty is `do_fault` (mm/memory.c): a read
//!   is `do_read_fault`, a write to a shared mapping `do_shared_fault`, a write to a private
//!   one `do_cow_fault`.
//! - `do_read_fault` first calls `do_fault_around`: the window of `fault_around_bytes` (64
//!   KiB, [`FAULT_AROUND_PAGES`]) aligned in the page table, clamped to the mapping and the
//!   PTE table; `filemap_map_pages` maps each page of it that is cached, not locked by a read
//!   in flight (timed runs), not marked `PG_readahead`, below `i_size`, whose PTE is empty;
//!   each page it finds (mapped or not) takes one off `mmap_miss`. The pages are not marked
//!   accessed (no `folio_mark_accessed`), but their PTEs are young: x86's `vm_page_prot` has
//!   `_PAGE_ACCESSED` (`PAGE_READONLY`, `PAGE_SHARED`, `PAGE_COPY`) and
//!   `arch_wants_old_prefaulted_pte` is false there (`set_pte_range`). The fault is done if
//!   the faulting page was mapped (a minor fault).
//! - Else `filemap_fault`: a cached page is mapped after `do_async_mmap_readahead`
//!   (`mmap_miss` down by one; a page marked `PG_readahead` starts `page_cache_async_ra`
//!   with `ra_pages` as the request, having dropped the mmap lock first, so the fault is
//!   retried as below), a minor fault; a page not cached is a major fault
//!   (`PGMAJFAULT`, [`Stats::major_faults`]) with `do_sync_mmap_readahead`: no readahead
//!   when `ra_pages` is 0; `mmap_miss` up by one (up to `MMAP_LOTSAMISS * 10`), none when
//!   above `MMAP_LOTSAMISS` (100); else the read-around window `ra->start = max(0, pgoff -
//!   ra_pages / 2)`, `ra->size = ra_pages`, `ra->async_size = ra_pages / 4`, read by
//!   `page_cache_ra_order` → `do_page_cache_ra` (clipped to `i_size`; the page `size -
//!   async_size` from the start marked `PG_readahead`). The page still missing is read alone
//!   (`__filemap_get_folio(FGP_CREAT)` → `filemap_read_folio`). Having dropped the mmap lock
//!   for the I/O, the fault returns `VM_FAULT_RETRY` and runs again with
//!   `FAULT_FLAG_TRIED`: fault-around again (now mapping the pages just read), then, if the
//!   faulting page is still not mapped (it is the marked one), `filemap_fault` finds it
//!   without async readahead. `pgfault` counts such a fault once in Linux 6.8
//!   (`mm_account_fault` skips the attempt that returned `VM_FAULT_RETRY`) and twice in 6.1
//!   (`handle_mm_fault` counts `PGFAULT` on entry, every attempt): `MachineConfig::kernel`.
//! - `do_shared_fault`: `filemap_fault` as above (no fault-around), the page mapped writable
//!   and dirty, `fault_dirty_shared_page` → `folio_mark_dirty` (`nr_dirty`, the dirty tag)
//!   and `balance_dirty_pages`. A store to a shared page mapped read-only (clean) is
//!   `do_wp_page` → `wp_page_shared`, the same dirtying. Writeback of the page
//!   (`folio_clear_dirty_for_io` → `folio_mkclean`) cleans and write-protects the PTE, so
//!   the next store faults and dirties it again.
//! - `do_cow_fault`: a new anonymous page (allocated first, `folio_prealloc`), the file page
//!   through `filemap_fault`, copied; the anonymous page is mapped, dirty; the page-cache
//!   page stays clean and unmapped. A store to a private mapping's read-only page-cache page
//!   is `wp_page_copy`: the same copy, the page-cache page unmapped.
//! - Reclaim of a mapped page-cache page (`try_to_unmap`) empties its PTE and drops it as
//!   an unmapped one (its shadow in the xarray entry), so the next access is a fault through
//!   the mapping, a refault. The LRUs see a mapped file page through its PTE's accessed bit
//!   (`folio_referenced`), as the policies do for any mapped page.
//! - `munmap` ([`Machine::munmap`]; `zap_pte_range`) drops the mappings' PTEs: a page-cache
//!   page stays cached (marked accessed if its PTE was young and the mapping has recency:
//!   `folio_mark_accessed`), an anonymous copy is freed. `fadvise(DONTNEED)` leaves mapped
//!   pages (`mapping_evict_folio`: `folio_mapped`); truncation, unlink and a direct write's
//!   invalidation unmap them first.
//!
//! Counters: `pgfault`, `pgmajfault` ([`Stats::major_faults`]), [`Stats::nr_mapped`]
//! (`NR_FILE_MAPPED`, meminfo's `Mapped`), [`Stats::file_mmaps`].
//!
//! Left out: a page mapped by two mappings at once (one PTE per page: a fault of a second
//! mapping moves the page to it), `madvise` (`VM_RAND_READ`, `VM_SEQ_READ`: not recorded),
//! `munmap`, `mprotect` and anonymous `mmap` records (not recorded: a loader's anonymous
//! overlay of a library's bss on its file mapping stays a file mapping), large folios and
//! `filemap_map_pmd`, `VM_EXEC` (the classic LRU's activation of referenced executable
//! pages), the machines of the VM layer and the timed machine (their `mmap` records stay
//! skipped: no device time for a fault's reads). A mapping is no VMA of
//! [`crate::mm::Vmas`]: MG-LRU's aging walk takes its PTEs with the anonymous gap around
//! it, and without swap (when the gaps are skipped) takes the mappings alone, as the kernel
//! walks file VMAs; look-around's span is the implicit VMA's, not the mapping's.

use super::*;
use crate::mm::pagecache::FileMap;
use crate::trace::recorded::{mmap_flags, FileIo};

/// `fault_around_bytes` (64 KiB) in pages: `fault_around_pages`.
pub const FAULT_AROUND_PAGES: u64 = 16;
/// `MMAP_LOTSAMISS` (mm/filemap.c).
const MMAP_LOTSAMISS: u32 = 100;
/// `PTRS_PER_PTE`.
const PTRS_PER_PTE: u64 = 512;

impl<P: Policy> Machine<P> {
    /// Serve `mmap` records of files as file mappings through the page cache (a replay's
    /// machine); without this they are counted in [`Stats::file_mmaps_skipped`].
    pub fn enable_file_mmap(&mut self) {
        self.file_mmap = true;
    }

    /// An `mmap` record of file `i` (see the module docs).
    pub(super) fn mmap_record(&mut self, i: usize, io: &FileIo) {
        let start = (io.addr & !mmap_flags::MASK) >> 12;
        let pages = io.len.div_ceil(4096);
        let end = start.saturating_add(pages);
        if !self.file_mmap
            || self.user_page_shift != 12
            || pages == 0
            || io.offset & 4095 != 0
            || end > crate::mm::pagecache::FILE_BASE
        {
            self.stats.file_mmaps_skipped += 1;
            return;
        }
        let shared = io.addr & mmap_flags::KNOWN != 0 && io.addr & mmap_flags::SHARED != 0;
        self.munmap(start, end);
        let pgoff = io.offset >> 12;
        let file = self.mm.cache.file_mut(i);
        let room = file.reserved * 4096;
        file.i_size = file.i_size.max((pgoff * 4096 + io.len).min(room));
        self.mm.maps.insert(FileMap {
            start,
            end,
            file: i,
            pgoff,
            shared,
        });
        self.stats.file_mmaps += 1;
    }

    /// `munmap` of user pages `start..end` (`zap_pte_range`): every page mapped there is
    /// unmapped (a page-cache page stays cached, an anonymous page or swap entry is freed,
    /// [`Machine::unmap_page`]) and the file mappings lose the range.
    pub fn munmap(&mut self, start: u64, end: u64) {
        let mut vpn = start;
        while vpn < end {
            if self.mm.pt.find_leaf(vpn).is_none() {
                // No PTE table: nothing mapped up to the next one.
                vpn = (vpn / PTRS_PER_PTE + 1) * PTRS_PER_PTE;
                continue;
            }
            self.unmap_page(vpn);
            vpn += 1;
        }
        self.mm.maps.remove(start, end);
    }

    /// Unmap page-cache frame `f` from the file mapping's PTE that maps it: the PTE is
    /// emptied, the rmap points at the xarray entry again. `zap` (`zap_pte_range`: munmap,
    /// truncation): a young PTE marks the page accessed (`folio_mark_accessed`, the mapping
    /// having recency); reclaim's `try_to_unmap` and a copy-on-write do not.
    pub(super) fn pc_unmap(&mut self, f: FrameId, zap: bool) {
        debug_assert!(self.mm.frames.is_mapped(f));
        let pidx = self.mm.frames.pte(f);
        let vpn = self.mm.pt.vpn_of(pidx);
        let Some((i, index)) = self.mm.pc_page(f) else {
            debug_assert!(false, "mapped page-cache frame {f} in no mapping");
            return;
        };
        let pte = self.mm.pt.get(pidx);
        *self.mm.pt.at(pidx) = 0;
        self.log_unmap(pidx);
        let e = self.mm.cache.file(i).base + index;
        let e = self.mm.pt.pte_index(e);
        self.mm.frames.set_pte(f, e);
        self.mm.frames.clear_flags(f, F_MAPPED);
        self.stats.nr_mapped -= 1;
        if zap && pte & PTE_ACCESSED != 0 {
            let touch = Touch {
                t: self.t,
                next_use: u64::MAX,
                vpn,
                write: false,
            };
            self.policy.mark_accessed(&self.mm, f, touch);
        }
    }

    /// Map page-cache frame `f` at user PTE `idx` (`set_pte_range`): young, dirty for a
    /// write. A frame another mapping maps moves here (one PTE per page).
    fn pc_map(&mut self, f: FrameId, idx: PteIndex, write: bool) {
        if self.mm.frames.is_mapped(f) {
            self.pc_unmap(f, false);
        }
        *self.mm.pt.at(idx) = make_present(f) | PTE_ACCESSED | if write { PTE_DIRTY } else { 0 };
        self.mm.frames.set_pte(f, idx);
        self.mm.frames.set_flags(f, F_MAPPED);
        self.stats.nr_mapped += 1;
    }

    /// `do_fault` on user page `touch.vpn` of mapping `map`, its PTE `idx` empty. False: the
    /// page is past the file's size (or the room reserved for it), left to the anonymous
    /// path.
    pub(super) fn filemap_do_fault(&mut self, touch: Touch, idx: PteIndex, map: FileMap) -> bool {
        let i = map.file;
        let index = map.index(touch.vpn);
        let file = self.mm.cache.file(i);
        if index >= file.size_pages() || index >= file.reserved {
            return false;
        }
        // `handle_mm_fault` → `lru_gen_enter_fault`: the mapping has recency (no
        // `VM_SEQ_READ`/`VM_RAND_READ`: not recorded), so the folios this fault adds to the
        // LRU (its readahead's) are added in a fault; `lru_gen_exit_fault` at its end.
        self.mm.in_lru_fault = true;
        if !touch.write {
            self.do_read_fault(touch, idx, &map, index);
        } else if map.shared {
            self.do_shared_fault(touch, idx, &map, index);
        } else {
            self.do_cow_fault(touch, idx, &map, index);
        }
        self.mm.in_lru_fault = false;
        if self.family == Family::Demand {
            // Demand policies learn of uses from their calls, not the accessed bit.
            let pte = self.mm.pt.get(idx);
            if pte & PTE_PRESENT != 0 {
                self.policy.on_hit(pte_frame(pte), touch);
            }
        }
        self.update_peak();
        true
    }

    /// `do_read_fault`.
    fn do_read_fault(&mut self, touch: Touch, idx: PteIndex, map: &FileMap, index: u64) {
        if self.do_fault_around(touch.vpn, map, index) {
            self.stats.minor_faults += 1;
            return;
        }
        let Some((f, major, retry)) = self.filemap_fault(map.file, index, false) else {
            return;
        };
        if !major {
            self.stats.minor_faults += 1;
        }
        if !retry {
            self.pc_map(f, idx, false);
            return;
        }
        // VM_FAULT_RETRY: the fault again, FAULT_FLAG_TRIED.
        self.count_retried_fault();
        if self.do_fault_around(touch.vpn, map, index) {
            return;
        }
        if let Some((f, _, _)) = self.filemap_fault(map.file, index, true) {
            self.pc_map(f, idx, false);
        }
    }

    /// The retried attempt of a fault that returned `VM_FAULT_RETRY`: Linux 6.1 counts
    /// `PGFAULT` at the top of `handle_mm_fault`, once per attempt; 6.8 counts it in
    /// `mm_account_fault`, which skips the attempt that returned `VM_FAULT_RETRY`, so once per
    /// fault.
    fn count_retried_fault(&mut self) {
        if self.kernel == KernelVersion::V6_1 {
            self.stats.pgfault += 1;
        }
    }

    /// `do_shared_fault`.
    fn do_shared_fault(&mut self, touch: Touch, idx: PteIndex, map: &FileMap, index: u64) {
        let Some((mut f, major, retry)) = self.filemap_fault(map.file, index, false) else {
            return;
        };
        if !major {
            self.stats.minor_faults += 1;
        }
        if retry {
            // The retried attempt finds the page (read again if reclaim took it meanwhile).
            self.count_retried_fault();
            let Some((g, _, _)) = self.filemap_fault(map.file, index, true) else {
                return;
            };
            f = g;
        }
        let _ = touch;
        self.pc_map(f, idx, true);
        // `fault_dirty_shared_page`.
        self.pc_set_dirty(map.file, index, f);
        self.balance_dirty_pages();
    }

    /// `do_cow_fault`: the anonymous copy mapped at `idx`.
    fn do_cow_fault(&mut self, touch: Touch, idx: PteIndex, map: &FileMap, index: u64) {
        let Some(anon) = self.alloc_frame(touch, idx, F_ANON) else {
            return;
        };
        // `filemap_fault` (and its retry) only reads the page: it is copied, never mapped.
        if let Some((_, major, retry)) = self.filemap_fault(map.file, index, false) {
            if !major {
                self.stats.minor_faults += 1;
            }
            if retry {
                self.count_retried_fault();
                let _ = self.filemap_fault(map.file, index, true);
            }
        }
        *self.mm.pt.at(idx) = make_present(anon) | PTE_ACCESSED | PTE_DIRTY;
        self.mm.frames.set_flags(anon, F_MAPPED);
        self.policy
            .on_insert(&self.mm, anon, touch, Insert::FirstTouch);
    }

    /// A store to user PTE `idx`, present and clean, mapping a page-cache page
    /// (`do_wp_page`): `wp_page_shared` dirties it, `wp_page_copy` replaces it with an
    /// anonymous copy. `pgfault` was counted by the caller.
    pub(super) fn file_wp_fault(&mut self, touch: Touch, idx: PteIndex) {
        let f = pte_frame(self.mm.pt.get(idx));
        let Some(&map) = self.mm.maps.find(touch.vpn) else {
            debug_assert!(false, "page-cache page mapped outside the file mappings");
            return;
        };
        if map.shared {
            *self.mm.pt.at(idx) |= PTE_ACCESSED | PTE_DIRTY;
            self.pc_set_dirty(map.file, map.index(touch.vpn), f);
            self.balance_dirty_pages();
            return;
        }
        self.pc_unmap(f, false);
        let Some(anon) = self.alloc_frame(touch, idx, F_ANON) else {
            return;
        };
        *self.mm.pt.at(idx) = make_present(anon) | PTE_ACCESSED | PTE_DIRTY;
        self.mm.frames.set_flags(anon, F_MAPPED);
        self.policy
            .on_insert(&self.mm, anon, touch, Insert::FirstTouch);
        self.update_peak();
    }

    /// `filemap_fault` for page `index` of file `i` (below `i_size`); `tried`:
    /// `FAULT_FLAG_TRIED` (no async readahead). The page, whether the fault was major (the
    /// page was not cached: `PGMAJFAULT`), and whether it dropped the mmap lock for I/O and
    /// so returns `VM_FAULT_RETRY` (`fpin`): every major fault (`do_sync_mmap_readahead`'s
    /// read-around, or `filemap_read_folio` of the page alone), and a cached page marked
    /// `PG_readahead` that starts async readahead (`do_async_mmap_readahead` →
    /// `maybe_unlock_mmap_for_io`, whether or not the window reads anything). `None`: out
    /// of memory.
    fn filemap_fault(
        &mut self,
        i: usize,
        index: u64,
        tried: bool,
    ) -> Option<(FrameId, bool, bool)> {
        if let Some(f) = self.pc_frame(i, index) {
            let retry = !tried && self.do_async_mmap_readahead(i, f, index);
            // The fault holds the folio (`filemap_get_folio` takes a reference): reclaim
            // during the async readahead cannot free it. Here it could: such a page is read
            // again.
            let f = match self.pc_frame(i, index) {
                Some(f) => f,
                None => {
                    let f = self.pc_add_folio(i, index, false)?;
                    self.pc_submit_read(i, index, &[f]);
                    self.pc_count_read(1);
                    f
                }
            };
            // `lock_folio_maybe_drop_mmap`: a read in flight is waited for. (It drops the
            // mmap lock to wait, a retry too: left out, as the untimed replay has no read
            // in flight.)
            self.pc_wait(f);
            return Some((f, false, retry));
        }
        self.stats.major_faults += 1;
        self.do_sync_mmap_readahead(i, index);
        let f = match self.pc_frame(i, index) {
            Some(f) => f,
            None => {
                // `__filemap_get_folio(FGP_CREAT)` → `filemap_read_folio`.
                let f = self.pc_add_folio(i, index, false)?;
                self.pc_submit_read(i, index, &[f]);
                self.pc_count_read(1);
                f
            }
        };
        self.pc_wait(f);
        Some((f, true, true))
    }

    /// `do_sync_mmap_readahead` (no `VM_HUGEPAGE`, `VM_RAND_READ` or `VM_SEQ_READ`).
    fn do_sync_mmap_readahead(&mut self, i: usize, index: u64) {
        let ra_pages = self.ra_pages(i);
        if ra_pages == 0 {
            return;
        }
        let ra = &mut self.mm.cache.file_mut(i).ra;
        if ra.mmap_miss < MMAP_LOTSAMISS * 10 {
            ra.mmap_miss += 1;
        }
        if ra.mmap_miss > MMAP_LOTSAMISS {
            return;
        }
        ra.start = index.saturating_sub(ra_pages / 2);
        ra.size = ra_pages;
        ra.async_size = ra_pages / 4;
        let (start, size, async_size) = (ra.start, ra.size, ra.async_size);
        // `page_cache_ra_order` without large folios: `do_page_cache_ra`.
        self.do_page_cache_ra(i, start, size, async_size);
    }

    /// `do_async_mmap_readahead` on cached page `f` at `index`.
    fn do_async_mmap_readahead(&mut self, i: usize, f: FrameId, index: u64) -> bool {
        let ra_pages = self.ra_pages(i);
        if ra_pages == 0 {
            return false;
        }
        let ra = &mut self.mm.cache.file_mut(i).ra;
        ra.mmap_miss = ra.mmap_miss.saturating_sub(1);
        if self.mm.frames.flags(f) & F_READAHEAD != 0 {
            self.page_cache_async_ra(i, f, index, ra_pages);
            return true;
        }
        false
    }

    /// `do_fault_around` → `filemap_map_pages` for a fault on user page `vpn`, page `index`
    /// of `map`'s file. Whether the faulting page was mapped (`VM_FAULT_NOPAGE`).
    fn do_fault_around(&mut self, vpn: u64, map: &FileMap, index: u64) -> bool {
        let nr = FAULT_AROUND_PAGES;
        let pte_off = vpn % PTRS_PER_PTE;
        let vma_off = vpn - map.start;
        let from = (pte_off & !(nr - 1)).max(pte_off - pte_off.min(vma_off));
        let to = (from + nr)
            .min(PTRS_PER_PTE)
            .min(pte_off + (map.end - map.start) - vma_off)
            - 1;
        let (first, last) = (index + from - pte_off, index + to - pte_off);
        let i = map.file;
        let max_idx = self.mm.cache.file(i).size_pages();
        let mut found = 0u32;
        let mut hit = false;
        for x in first..=last {
            // `next_uptodate_folio`.
            let Some(f) = self.pc_frame(i, x) else {
                continue;
            };
            if self.mm.io_locked(f) || self.mm.frames.flags(f) & F_READAHEAD != 0 || x >= max_idx {
                continue;
            }
            // `filemap_map_order0_folio`.
            found += 1;
            let uidx = self.mm.pt.pte_index(vpn - index + x);
            if self.mm.pt.get(uidx) != 0 {
                continue;
            }
            self.pc_map(f, uidx, false);
            hit |= x == index;
        }
        let ra = &mut self.mm.cache.file_mut(i).ra;
        ra.mmap_miss = ra.mmap_miss.saturating_sub(found);
        hit
    }
}

#[cfg(test)]
mod tests {
    //! Expected values are worked out by hand from Linux 6.8's rules (mm/memory.c
    //! `do_fault_around`, `do_read_fault`, `do_shared_fault`, `do_cow_fault`; mm/filemap.c
    //! `filemap_fault`, `filemap_map_pages`, `do_sync_mmap_readahead`,
    //! `do_async_mmap_readahead`; mm/readahead.c) in the comments beside them.
    use super::*;
    use crate::access::Access;
    use crate::policy::clock_lru::ClockLru;
    use crate::trace::recorded::FileOp;

    /// The mapping's first user page: a multiple of 512, so user page `START + k` has PTE
    /// offset `k` in its table.
    const START: u64 = 0x1000;

    fn machine(frames: u32, read_ahead_kb: u32, pages: u64) -> Machine<ClockLru> {
        let mut m = super::super::pagecache::testutil::pc_machine(
            ClockLru::new(frames),
            frames,
            read_ahead_kb,
            Default::default(),
            (pages, pages),
        );
        m.enable_file_mmap();
        m
    }

    fn mmap(m: &mut Machine<ClockLru>, pages: u64, shared: bool) {
        let flags = mmap_flags::KNOWN | if shared { mmap_flags::SHARED } else { 0 };
        m.file_io(&FileIo {
            op: FileOp::Mmap,
            tid: 1,
            stamp: 0,
            file: 0,
            offset: 0,
            len: pages * 4096,
            addr: START << 12 | flags,
        })
        .unwrap();
    }

    fn fsync(m: &mut Machine<ClockLru>) {
        m.file_io(&FileIo {
            op: FileOp::Fsync,
            tid: 1,
            stamp: 0,
            file: 0,
            offset: 0,
            len: 0,
            addr: 0,
        })
        .unwrap();
    }

    /// A `pread` of file 0.
    fn pread(m: &mut Machine<ClockLru>, offset: u64, len: u64) {
        let r = super::super::pagecache::testutil::record(FileOp::Pread, offset, len);
        m.file_io(&r).unwrap();
    }

    fn read(m: &mut Machine<ClockLru>, k: u64) {
        m.access(Access::read(START + k), u64::MAX);
    }

    fn write(m: &mut Machine<ClockLru>, k: u64) {
        m.access(Access::write(START + k), u64::MAX);
    }

    fn anon_frames(m: &Machine<ClockLru>) -> u64 {
        (0..m.mm.frames.len())
            .filter(|&f| m.mm.frames.in_use(f) && m.mm.frames.is_anon(f))
            .count() as u64
    }

    #[test]
    fn first_fault_reads_around_and_the_retry_maps_the_file() {
        // An 8-page file, read_ahead_kb 128: ra_pages 32. Fault on page 0:
        // `do_fault_around` over [0, 7] (16 aligned, clamped to the 8-page mapping) finds
        // nothing cached; `filemap_fault` misses: PGMAJFAULT, `do_sync_mmap_readahead`
        // (mmap_miss 1): start max(0, 0 - 16) = 0, size 32, async 8; `do_page_cache_ra`
        // clips to 8 pages and marks page 8 - 8 = 0 PG_readahead. The retry's fault-around
        // maps pages 1..7 (page 0 is marked), `filemap_fault` then maps page 0. Pages 1..7
        // are then hits: one fault in all.
        let mut m = machine(64, 128, 8);
        mmap(&mut m, 8, false);
        assert_eq!(m.stats.file_mmaps, 1);
        assert_eq!(m.stats.file_mmaps_skipped, 0);
        for k in 0..8 {
            read(&mut m, k);
        }
        assert_eq!(
            (m.stats.pgfault, m.stats.major_faults, m.stats.minor_faults),
            (1, 1, 0)
        );
        assert_eq!((m.stats.file_reads, m.stats.pgpgin), (8, 32));
        assert_eq!((m.stats.nr_mapped, m.stats.nr_file_pages), (8, 8));
        // 8 pages found by the retry's fault-around: mmap_miss 1 - 7 → 0.
        assert_eq!(m.mm.cache.file(0).ra.mmap_miss, 0);
        assert_eq!(anon_frames(&m), 0);
    }

    #[test]
    fn sequential_faults_of_a_64_page_file() {
        // ra_pages 32. Page 0: major, reads [0, 32) marking 24 (32 - 8); the retry maps
        // [0, 16). Page 16: fault-around [16, 32) maps all but the marked 24 (a minor
        // fault). Page 24: fault-around maps nothing; `filemap_fault` finds 24, marked:
        // `page_cache_async_ra` → `ondemand_readahead`: index 24 = start + size - async
        // (0 + 32 - 8): next window start 32, size `get_next_ra_size(32, 32)` = 32, async
        // 32: reads [32, 64) marking 32 (minor fault). Page 32: marked again: the window
        // after, [64, 96), is past the file: nothing read (minor). Page 48: fault-around
        // maps [48, 64) (minor). 5 faults, 1 major, 64 pages read.
        let mut m = machine(100, 128, 64);
        mmap(&mut m, 64, true);
        let mut faults_at = Vec::new();
        for k in 0..64 {
            let before = m.stats.pgfault;
            read(&mut m, k);
            if m.stats.pgfault > before {
                faults_at.push(k);
            }
        }
        assert_eq!(faults_at, [0, 16, 24, 32, 48]);
        assert_eq!((m.stats.major_faults, m.stats.minor_faults), (1, 4));
        assert_eq!(m.stats.file_reads, 64);
        assert_eq!(m.stats.nr_mapped, 64);
        let ra = m.mm.cache.file(0).ra;
        assert_eq!((ra.start, ra.size, ra.async_size), (64, 32, 32));
    }

    #[test]
    fn an_async_readahead_retries_the_fault_and_61_counts_both_attempts() {
        // read_ahead_kb 32: ra_pages 8. Page 0: major, read-around [max(0, 0 - 4), +8) =
        // [0, 8), async_size 2, page 6 marked; the retry's fault-around [0, 16) maps 0..7
        // but the marked 6. Page 6: fault-around maps nothing new; `filemap_fault` finds 6
        // marked: `do_async_mmap_readahead` drops the mmap lock and `ondemand_readahead`
        // (6 = start + size - async_size) reads the next window, start 8, size
        // `get_next_ra_size(8, 8)` = 8, async 8: [8, 16), page 8 marked. The fault is
        // retried (`fpin`): fault-around [0, 16) now maps 6 and 9..15 (8 is marked): 15
        // pages mapped. Pages 7 and 9..15 then fault no more; 8 does (marked, past the
        // 16-page file: nothing read, retried). Faults: 0, 6, 8, each retried: `pgfault` 3
        // under Linux 6.8, 6 under 6.1.
        for (kernel, pgfault) in [(KernelVersion::V6_8, 3), (KernelVersion::V6_1, 6)] {
            let mut m = machine(100, 32, 16);
            m.kernel = kernel;
            mmap(&mut m, 16, true);
            read(&mut m, 0);
            read(&mut m, 6);
            assert_eq!(m.stats.nr_mapped, 15);
            assert_eq!(m.stats.file_reads, 16);
            let before = m.stats.pgfault;
            for k in (7..16).filter(|&k| k != 8) {
                read(&mut m, k);
            }
            assert_eq!(
                m.stats.pgfault, before,
                "pages 7 and 9..15 were mapped by the retry"
            );
            read(&mut m, 8);
            assert_eq!((m.stats.pgfault, m.stats.major_faults), (pgfault, 1));
            assert_eq!(m.stats.nr_mapped, 16);
        }
    }

    #[test]
    fn fault_around_stops_at_the_page_table_and_the_mapping() {
        // The 8 pages cached first (read_ahead_kb 0: each page read alone, none marked), then
        // mapped from user page START - 4 (PTE offset 508). Page 0's fault: `from_pte` =
        // max(ALIGN_DOWN(508, 16), 508 - min(508, 0)) = 508, `to_pte` = min(508 + 16, 512,
        // 508 + 8 - 0) - 1 = 511: pages 0..3. Page 4's (offset 0, 4 into the mapping):
        // from max(0, 0 - min(0, 4)) = 0, to min(16, 512, 0 + 8 - 4) - 1 = 3: pages 4..7.
        // Two minor faults.
        let mut m = machine(64, 0, 8);
        m.file_io(&FileIo {
            op: FileOp::Pread,
            tid: 1,
            stamp: 0,
            file: 0,
            offset: 0,
            len: 8 * 4096,
            addr: 0,
        })
        .unwrap();
        assert_eq!(m.mm.cache.file(0).nrpages, 8);
        m.file_io(&FileIo {
            op: FileOp::Mmap,
            tid: 1,
            stamp: 0,
            file: 0,
            offset: 0,
            len: 8 * 4096,
            addr: (START - 4) << 12 | mmap_flags::KNOWN,
        })
        .unwrap();
        let mut faults_at = Vec::new();
        for k in 0..8 {
            let before = m.stats.pgfault;
            m.access(Access::read(START - 4 + k), u64::MAX);
            if m.stats.pgfault > before {
                faults_at.push(k);
            }
        }
        assert_eq!(faults_at, [0, 4]);
        assert_eq!((m.stats.major_faults, m.stats.minor_faults), (0, 2));
        assert_eq!(m.stats.nr_mapped, 8);
    }

    #[test]
    fn no_readahead_reads_each_faulting_page() {
        // read_ahead_kb 0: `do_sync_mmap_readahead` returns at once; each fault reads its
        // page alone (`filemap_read_folio`) and the retry's fault-around maps it: 4 major
        // faults for 4 pages.
        let mut m = machine(16, 0, 4);
        mmap(&mut m, 4, false);
        for k in 0..4 {
            read(&mut m, k);
        }
        assert_eq!((m.stats.pgfault, m.stats.major_faults), (4, 4));
        assert_eq!((m.stats.file_reads, m.stats.nr_mapped), (4, 4));
    }

    #[test]
    fn shared_write_dirties_the_page_and_fsync_writes_just_it() {
        let mut m = machine(64, 128, 8);
        mmap(&mut m, 8, true);
        read(&mut m, 0);
        // A store to page 3, mapped clean by fault-around: `wp_page_shared` dirties it.
        write(&mut m, 3);
        assert_eq!((m.stats.pgfault, m.stats.nr_dirty), (2, 1));
        assert_eq!(
            m.mm.cache.file(0).dirty.iter().copied().collect::<Vec<_>>(),
            [3]
        );
        // The PTE is dirty now: another store is no fault.
        write(&mut m, 3);
        assert_eq!(m.stats.pgfault, 2);
        fsync(&mut m);
        assert_eq!(
            (m.stats.file_writebacks, m.stats.pgpgout, m.stats.nr_dirty),
            (1, 4, 0)
        );
        // `folio_mkclean` write-protected it: the next store faults and dirties it again.
        write(&mut m, 3);
        assert_eq!((m.stats.pgfault, m.stats.nr_dirty), (3, 1));
        assert_eq!(m.stats.nr_mapped, 8);
    }

    /// `shrink_folio_list` (Linux 6.1 and 6.8) unmaps a mapped folio (`try_to_unmap`) before
    /// its dirty test, so a dirty page-cache folio it leaves to the flusher stays cached but
    /// unmapped. Page 0 written through a shared mapping (mapped, dirty, its PTE's accessed
    /// bit then cleared, never `PG_referenced`), page 1 read by `pread` (clean, unmapped,
    /// `PG_referenced`). A kswapd pass at priority 0 takes both from the inactive list: page
    /// 0 is `FOLIOREF_RECLAIM` and dirty: unmapped, marked `PG_reclaim` and activated; page 1
    /// is `FOLIOREF_RECLAIM_CLEAN` and freed. The batch was not all dirty: no flusher. Page 0
    /// is still cached and dirty, mapped nowhere; the next load through the mapping is a
    /// minor fault.
    #[test]
    fn reclaim_unmaps_a_dirty_mapped_page_it_leaves_to_the_flusher() {
        let mut m = machine(8, 0, 8);
        mmap(&mut m, 8, true);
        write(&mut m, 0);
        pread(&mut m, 4096, 4096);
        let f0 = m.pc_frame(0, 0).unwrap();
        m.mm.test_and_clear_young(f0);
        assert_eq!((m.stats.nr_mapped, m.stats.nr_dirty), (1, 1));
        let faults = (m.stats.pgfault, m.stats.major_faults);
        m.shrink(crate::policy::ReclaimReason::Kswapd, 32, 0, 0);
        assert_eq!(m.pc_frame(0, 0), Some(f0));
        assert!(m.pc_frame(0, 1).is_none());
        assert_eq!((m.stats.nr_mapped, m.stats.nr_dirty), (0, 1));
        assert!(!m.mm.frames.is_mapped(f0));
        assert_eq!(m.stats.wb_vmscan, 0);
        let c: std::collections::BTreeMap<_, _> = m.policy.counters().into_iter().collect();
        assert_eq!(c["nr_vmscan_immediate_reclaim"], 1);
        read(&mut m, 0);
        assert_eq!(
            (m.stats.pgfault, m.stats.major_faults),
            (faults.0 + 1, faults.1)
        );
        assert_eq!(m.stats.nr_mapped, 1);
        m.validate().unwrap();
    }

    #[test]
    fn shared_write_fault_maps_only_its_page() {
        // `do_shared_fault` has no fault-around: the write fault on page 5 reads the file
        // (major: window start max(0, 5 - 16) = 0, clipped to 8 pages) and maps page 5
        // alone, dirty.
        let mut m = machine(64, 128, 8);
        mmap(&mut m, 8, true);
        write(&mut m, 5);
        assert_eq!((m.stats.pgfault, m.stats.major_faults), (1, 1));
        assert_eq!(
            (m.stats.file_reads, m.stats.nr_mapped, m.stats.nr_dirty),
            (8, 1, 1)
        );
    }

    #[test]
    fn private_write_copies_and_leaves_the_cache_clean() {
        let mut m = machine(64, 128, 8);
        mmap(&mut m, 8, false);
        // `do_cow_fault` on page 2: an anonymous page, the file read (major, 8 pages), the
        // copy mapped; no page-cache page mapped or dirtied.
        write(&mut m, 2);
        assert_eq!((m.stats.pgfault, m.stats.major_faults), (1, 1));
        assert_eq!((m.stats.nr_mapped, m.stats.nr_dirty), (0, 0));
        assert_eq!((anon_frames(&m), m.stats.nr_file_pages), (1, 8));
        // A read of page 1: fault-around maps 1, 3..7 (0 is marked PG_readahead, 2 holds
        // the copy): a minor fault.
        read(&mut m, 1);
        assert_eq!((m.stats.pgfault, m.stats.minor_faults), (2, 1));
        assert_eq!(m.stats.nr_mapped, 6);
        // A store to page 1: `wp_page_copy`: a second anonymous page, page 1 unmapped.
        write(&mut m, 1);
        assert_eq!(m.stats.pgfault, 3);
        assert_eq!(
            (anon_frames(&m), m.stats.nr_mapped, m.stats.nr_dirty),
            (2, 5, 0)
        );
        fsync(&mut m);
        assert_eq!(m.stats.file_writebacks, 0);
    }

    #[test]
    fn reclaim_unmaps_a_mapped_page_and_the_next_access_refaults() {
        // 4 frames, no readahead: pages 0..3 mapped fill memory; page 4's fault reclaims
        // (direct reclaim with watermarks 0: its first pass finds the PTEs young and keeps
        // the pages, setting PG_referenced; the next, at a higher priority, takes them,
        // clean: `FOLIOREF_RECLAIM_CLEAN`). Each taken page is unmapped (`try_to_unmap`:
        // its PTE emptied) and leaves its shadow in the xarray entry.
        let mut m = machine(4, 0, 8);
        mmap(&mut m, 8, false);
        for k in 0..4 {
            read(&mut m, k);
        }
        assert_eq!((m.stats.nr_mapped, m.stats.major_faults), (4, 4));
        read(&mut m, 4);
        let gone: Vec<u64> = (0..4).filter(|&k| m.pc_frame(0, k).is_none()).collect();
        // The classic LRU judges a mapped file page by its PTE (`folio_referenced`): each of
        // the 4 is first found young (the fault left its PTE young; the fault did not mark
        // the folio accessed): PG_referenced set, kept (`nr_ref_keep`), not activated; then
        // old with PG_referenced on a clean file folio: reclaimed. 8 scans, 4 steals; the
        // priority cascade of the one allocation takes all 4.
        let c: std::collections::BTreeMap<_, _> = m.policy.counters().into_iter().collect();
        assert_eq!(
            (
                c["pgscan_file"],
                c["nr_ref_keep"],
                c["pgsteal_file"],
                c["pgactivate"]
            ),
            (8, 4, 4, 0)
        );
        assert_eq!(gone, [0, 1, 2, 3]);
        assert_eq!(m.stats.evictions, 4);
        assert_eq!(m.stats.nr_mapped, 1);
        for &k in &gone {
            assert_eq!(m.mm.pt.pte(START + k), 0);
            let e = m.mm.pt.pte(m.mm.cache.file(0).base + k);
            assert!(e & PTE_FILE_GONE != 0);
        }
        let k = gone[0];
        // The next access is a refault: a major fault that finds the shadow.
        let majors = m.stats.major_faults;
        read(&mut m, k);
        assert_eq!(m.stats.major_faults, majors + 1);
        assert_eq!(m.stats.workingset_refault_file, 1);
        assert!(m.pc_frame(0, k).is_some());
    }

    #[test]
    fn munmap_keeps_the_pages_cached() {
        let mut m = machine(64, 128, 8);
        mmap(&mut m, 8, true);
        read(&mut m, 0);
        m.munmap(START, START + 8);
        assert_eq!((m.stats.nr_mapped, m.stats.nr_file_pages), (0, 8));
        assert_eq!(m.mm.cache.file(0).nrpages, 8);
        assert!(m.mm.maps.is_empty());
        // An access there now is anonymous memory.
        read(&mut m, 1);
        assert_eq!(anon_frames(&m), 1);
        // Mapped again (over the anonymous page, which goes): all 8 pages from the cache
        // in one minor fault (fault-around maps 1..7, `filemap_fault` finds the marked 0;
        // its async readahead finds everything cached).
        mmap(&mut m, 8, true);
        assert_eq!(anon_frames(&m), 0);
        let majors = m.stats.major_faults;
        for k in 0..8 {
            read(&mut m, k);
        }
        assert_eq!(m.stats.major_faults, majors);
        assert_eq!((m.stats.nr_mapped, m.stats.file_reads), (8, 8));
    }

    #[test]
    fn fadvise_dontneed_spares_mapped_pages() {
        let mut m = machine(64, 128, 8);
        mmap(&mut m, 4, false);
        read(&mut m, 0);
        // Pages 0..3 mapped, 4..7 cached only.
        m.file_io(&FileIo {
            op: FileOp::Fadvise,
            tid: 1,
            stamp: 0,
            file: 0,
            offset: 0,
            len: 0,
            addr: crate::trace::recorded::fadv::DONTNEED,
        })
        .unwrap();
        assert_eq!(m.mm.cache.file(0).nrpages, 4);
        assert_eq!(m.stats.nr_mapped, 4);
    }

    #[test]
    fn mmap_without_file_mmap_is_skipped() {
        let mut m = machine(64, 128, 8);
        m.file_mmap = false;
        mmap(&mut m, 8, false);
        assert_eq!((m.stats.file_mmaps, m.stats.file_mmaps_skipped), (0, 1));
        assert!(m.mm.maps.is_empty());
    }
}

#[cfg(test)]
mod replay_tests {
    //! A recorded trace with a file `mmap` replayed end to end (`replay::replay`).
    use super::super::pagecache::replay_tests::tmp;
    use crate::engine::MachineConfig;
    use crate::policy::{PolicyKind, PolicyOptions};
    use crate::replay::{replay, ReplaySpec};
    use crate::trace::recorded::{mmap_flags, FileOp, Recorded, RecordedWriter};
    use crate::trace::{TraceMeta, TraceWriter};

    #[test]
    fn a_recorded_shared_mapping_is_served_by_the_page_cache() {
        let path = tmp("mmap.vmt");
        let mut w = RecordedWriter::create(&path, TraceMeta::default()).unwrap();
        let acc = |page, write| Recorded {
            page,
            write,
            tid: 1,
            count: 1,
            ..Recorded::default()
        };
        let io =
            |op, offset, len, addr| super::pagecache::testutil::record_at(op, 0, offset, len, addr);
        w.file(0, "/data/m").unwrap();
        w.io(io(FileOp::Read, 0, 4096, 0)).unwrap();
        let flags = mmap_flags::KNOWN | mmap_flags::SHARED;
        w.io(io(FileOp::Mmap, 0, 8 * 4096, 0x1000 << 12 | flags))
            .unwrap();
        for k in 0..8 {
            w.access(acc(0x1000 + k, false)).unwrap();
        }
        w.access(acc(0x1003, true)).unwrap();
        w.io(io(FileOp::Fsync, 0, 0, 0)).unwrap();
        w.finish().unwrap();
        let mut src = crate::trace::open(&path, None, &Default::default()).unwrap();
        let spec = ReplaySpec::new(
            PolicyKind::from_name("clock-lru").unwrap(),
            MachineConfig {
                check_invariants: true,
                ..MachineConfig::new(1024)
            },
            PolicyOptions::new(1),
        );
        let r = replay(&mut src, &spec, None).unwrap();
        // The read of page 0 (i_size 4096 from the trace's reads: readahead's 4-page window
        // clipped to 1 page). The mapping grows i_size to its 8 pages. Page 0's fault:
        // fault-around over [0, 8) maps the cached page 0, a minor fault. Page 1's: a
        // major fault, read-around [max(0, 1 - 16), +32) clipped to 8 pages reads 1..7
        // (page 0, present, takes no PG_readahead mark), the retry's fault-around maps
        // them. The store to page 3 (mapped clean): `wp_page_shared` dirties it; fsync
        // writes it alone.
        assert_eq!((r.stats.file_mmaps, r.stats.file_mmaps_skipped), (1, 0));
        assert_eq!((r.stats.pgfault, r.stats.major_faults), (3, 1));
        assert_eq!((r.stats.file_reads, r.stats.pgpgin), (8, 32));
        assert_eq!((r.stats.nr_mapped, r.stats.nr_file_pages), (8, 8));
        assert_eq!(
            (r.stats.file_writebacks, r.stats.pgpgout, r.stats.nr_dirty),
            (1, 4, 0)
        );
        let _ = std::fs::remove_file(&path);
    }
}

#[cfg(test)]
mod mglru_tests {
    use super::*;
    use crate::access::Access;
    use crate::policy::mglru::{MgLru, Preset};
    use crate::policy::PolicyOptions;
    use crate::trace::recorded::FileOp;

    /// MG-LRU reaches a mapped page-cache folio through its PTE: 8 frames, no readahead,
    /// pages 0..7 of a mapping faulted in one at a time fill memory (each PTE young, no
    /// folio marked accessed); page 8's fault evicts. Each folio was added by its fault
    /// (`folio_add_lru` under `lru_gen_in_fault()`: `PG_active`), so all 8 are in the
    /// youngest generation, `max_seq` 3, and the older ones are empty. Eviction finds no
    /// file folio below it: `min_seq` advances to `max_seq - MIN_NR_GENS + 1`, and aging's
    /// page-table walk (`walk_pte_range`) clears the 8 young PTEs and moves the folios to the
    /// new `max_seq` 4. The next aging finds the PTEs old and moves nothing; `min_seq`
    /// reaches their generation, whose folios the rmap finds old: all 8 evicted (unmapped
    /// first), none promoted by the rmap or kept, page 8 mapped.
    #[test]
    fn mglru_sees_a_mapped_file_folio_through_its_pte() {
        let frames = 8;
        let mut m = super::super::pagecache::testutil::pc_machine(
            MgLru::new(frames, &PolicyOptions::new(1), Preset::Default).unwrap(),
            frames,
            0,
            Default::default(),
            (16, 16),
        );
        m.enable_file_mmap();
        m.file_io(&FileIo {
            op: FileOp::Mmap,
            tid: 1,
            stamp: 0,
            file: 0,
            offset: 0,
            len: 16 * 4096,
            addr: 0x1000 << 12 | mmap_flags::KNOWN,
        })
        .unwrap();
        for k in 0..9 {
            m.access(Access::read(0x1000 + k), u64::MAX);
        }
        let gone: Vec<u64> = (0..9).filter(|&k| m.pc_frame(0, k).is_none()).collect();
        assert_eq!(gone, [0, 1, 2, 3, 4, 5, 6, 7]);
        let c: std::collections::BTreeMap<_, _> = m.policy.counters().into_iter().collect();
        assert_eq!(
            (
                c["promoted_rmap"],
                c["lookaround_young"],
                c["kept_referenced"],
                c["pgsteal_file"]
            ),
            (0, 0, 0, 8)
        );
        assert_eq!((m.stats.evictions, m.stats.nr_mapped), (8, 1));
        for k in 0..8 {
            assert_eq!(m.mm.pt.pte(0x1000 + k), 0);
        }
    }
}

//! The block layer's plug as reclaim's swap writes meet it (Linux 6.1 and 6.8 alike).
//!
//! Reclaim runs under a plug: `lru_gen_shrink_lruvec` (6.1; `lru_gen_shrink_node` in 6.8)
//! and the classic `shrink_lruvec` call `blk_start_plug` before their scan loop and
//! `blk_finish_plug` after it. `shrink_folio_list` → `pageout` → `swap_writepage` →
//! `__swap_writepage` submits one bio per folio (`submit_bio`; a block device's swap area,
//! not a swap file). `blk_mq_submit_bio` first tries `blk_attempt_plug_merge`: the bio joins
//! the request added last to the plug when it continues it (a back merge: its sector is the
//! request's end) or precedes it (a front merge), while the request stays within the queue's
//! limits (`ll_back_merge_fn` / `ll_front_merge_fn`: one segment per page here, since the
//! folios' frames are not contiguous). Otherwise a new request is added
//! (`blk_add_rq_to_plug`), and before that the plug is flushed — its requests dispatched to
//! the device — when it already holds `BLK_MAX_REQUEST_COUNT` (32) requests or its last
//! request has reached `BLK_PLUG_FLUSH_SIZE` (128 KiB). `blk_finish_plug` flushes the rest.
//!
//! A flush is where the writes in it start; when they complete, and what `folio_end_writeback`
//! then does to each folio, is the caller's (MG-LRU: `evict.rs`, `plug_write`). Used by
//! MG-LRU; the classic LRU's writes are not plugged yet. Left out: a flush by `cond_resched` → `schedule` →
//! `blk_flush_plug` (only when kswapd is preempted, which the untimed model never is), the
//! I/O scheduler's own merging after dispatch, and writes to a swap file.

use crate::mm::{FrameId, Mm, NO_SLOT};
use crate::policy::WritebackDone;

/// `BLK_MAX_REQUEST_COUNT` (include/linux/blkdev.h): `blk_plug_max_rq_count` with one queue.
pub const BLK_MAX_REQUEST_COUNT: u32 = 32;
/// `BLK_PLUG_FLUSH_SIZE` (128 KiB), in 4 KiB pages.
pub const BLK_PLUG_FLUSH_PAGES: u32 = 32;
/// `BLK_MAX_SEGMENTS`: a queue's default `max_segments`, so the most pages one request holds
/// on a device whose driver sets no other limit (one page a segment: the folios' frames are
/// not contiguous). A device's own is its `max_pages` ([`crate::device::DeviceSpec`]): a SATA
/// disk's 168, NVMe's 128; a virtio-blk disk under QEMU has 254 (`seg_max`, the virtqueue's
/// size 256 less 2, which `virtblk_probe` makes `max_segments`).
pub const BLK_MAX_SEGMENTS: u32 = 128;

/// One reclaim pass's plug: the requests not yet dispatched and the folios in them.
#[derive(Clone, Debug, Default)]
pub struct SwapPlug {
    /// Folios whose write is in the plug, each with the caller's batch number at the write.
    pending: Vec<(FrameId, u32)>,
    /// The last request: its first and last swap slot and its size in pages.
    first: u32,
    last: u32,
    pages: u32,
    /// Requests in the plug (`plug->rq_count`).
    rq_count: u32,
}

impl SwapPlug {
    /// Submit the write of `f` to swap slot `slot` during batch `batch`, on a device whose
    /// requests hold at most `max_pages` pages. The folios of the requests dispatched by a
    /// flush this submission caused (not `f`: it goes into the new request) are appended to
    /// `dispatched`.
    pub fn submit(
        &mut self,
        f: FrameId,
        slot: u32,
        batch: u32,
        max_pages: u32,
        dispatched: &mut Vec<(FrameId, u32)>,
    ) {
        let merges = self.rq_count > 0
            && self.pages < max_pages
            && (slot == self.last.wrapping_add(1) || slot.wrapping_add(1) == self.first);
        if merges {
            if slot == self.last.wrapping_add(1) {
                self.last = slot;
            } else {
                self.first = slot;
            }
            self.pages += 1;
        } else {
            if self.rq_count >= BLK_MAX_REQUEST_COUNT
                || (self.rq_count > 0 && self.pages >= BLK_PLUG_FLUSH_PAGES)
            {
                self.flush(dispatched);
            }
            self.rq_count += 1;
            self.first = slot;
            self.last = slot;
            self.pages = 1;
        }
        self.pending.push((f, batch));
    }

    /// `blk_mq_flush_plug_list`: dispatch every request; their folios go to `dispatched`.
    pub fn flush(&mut self, dispatched: &mut Vec<(FrameId, u32)>) {
        dispatched.append(&mut self.pending);
        self.rq_count = 0;
        self.pages = 0;
    }

    /// Whether no write waits in the plug.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

/// A kernel policy's swap writes of one reclaim pass under the plug, and what became of them
/// until the engine asks ([`crate::policy::Policy::writeback_done`]). The policy moves the
/// folios; this keeps the plug, the batches (`shrink_folio_list` calls) and the answers.
///
/// A write the plug dispatches completes, in this model, after the putback loop of the batch
/// that dispatched it: a folio put back by an earlier batch is rotated at once, one of the
/// current batch when the batch ends ([`SwapWrites::end_batch`]); the writes still plugged
/// when the pass ends complete after it (`Pending`). The kernel's completions come when the
/// device answers: one before the putback loop finds its folio still isolated (MG-LRU's
/// `evict_folios` then retries it at once, "retry folios that may have missed
/// folio_rotate_reclaimable()"). The model has no device time to tell the two apart and
/// takes the later completion, which the kernel's own counters show is the common one in the
/// validation matrix: `pgrotated` is 83-99% of `pswpout` there. Left out: the retry.
///
/// Timed runs ([`Mm::wb`]) have the device's time instead: a flush hands its writes to the
/// device at the simulated time of the pass ([`Mm::dispatch_write`], [`Mm::submit_writes`];
/// each batch moves the time on by its work, [`Mm::reclaim_time`]), and each batch's end
/// rotates the dispatched folios whose writes have completed by then; the others stay under
/// writeback past the pass (`Pending`), as the writes still plugged at its end do.
#[derive(Clone, Debug, Default)]
pub struct SwapWrites {
    plug: SwapPlug,
    /// Each frame's answer (`WB_*`), grown to the highest frame written; `live` of them set.
    wb: Vec<u8>,
    live: usize,
    batch: u32,
    late: Vec<FrameId>,
    dispatched: Vec<(FrameId, u32)>,
    /// Timed runs: dispatched writes not yet seen complete.
    inflight: Vec<FrameId>,
}

const WB_NONE: u8 = 0;
const WB_PENDING: u8 = 1;
const WB_ROTATED: u8 = 2;
const WB_FREED: u8 = 3;

impl SwapWrites {
    fn set(&mut self, f: FrameId, v: u8) {
        let i = f as usize;
        if i >= self.wb.len() {
            self.wb.resize(i + 1, WB_NONE);
        }
        self.live += (self.wb[i] == WB_NONE) as usize;
        self.wb[i] = v;
    }

    /// `pageout` of anonymous folio `f` under the plug: `add_to_swap` gives it a slot if it
    /// has none (the engine writes it there after the pass; in `shrink_folio_list` order, as
    /// the engine would have), its bio goes into the plug on a device of `max_pages`-page
    /// requests. The folios whose writes complete now (put back by earlier batches) are
    /// appended to `rotate`: the caller moves each to its list's tail and calls
    /// [`SwapWrites::rotated`].
    pub fn write(&mut self, mm: &mut Mm, f: FrameId, max_pages: u32, rotate: &mut Vec<FrameId>) {
        let mut slot = mm.frames.slot(f);
        if slot == NO_SLOT {
            slot = mm.swap.alloc(mm.frames.pte(f));
            mm.frames.set_slot(f, slot);
        }
        self.set(f, WB_PENDING);
        let mut dispatched = std::mem::take(&mut self.dispatched);
        self.plug
            .submit(f, slot, self.batch, max_pages, &mut dispatched);
        if mm.wb.is_some() && !dispatched.is_empty() {
            // Timed: to the device now; rotated at a batch's end once complete.
            for &(g, _) in &dispatched {
                mm.dispatch_write(g);
                self.inflight.push(g);
            }
            dispatched.clear();
            mm.submit_writes();
        }
        for (g, batch) in dispatched.drain(..) {
            if batch == self.batch {
                self.late.push(g);
            } else {
                rotate.push(g);
            }
        }
        self.dispatched = dispatched;
    }

    /// The batch is back on the lists (`move_folios_to_lru`): its writes that a flush
    /// dispatched complete now; they are appended to `rotate`.
    /// Timed runs: those whose write has completed by `mm.now` (their writeback ended
    /// here, [`crate::mm::Writeback::clear`]).
    pub fn end_batch(&mut self, mm: &mut Mm, rotate: &mut Vec<FrameId>) {
        rotate.append(&mut self.late);
        if !self.inflight.is_empty() {
            self.inflight.retain(|&g| {
                if mm.under_writeback(g) {
                    return true;
                }
                if let Some(w) = mm.wb.as_mut() {
                    w.clear(g);
                }
                rotate.push(g);
                false
            });
        }
        self.batch = self.batch.wrapping_add(1);
    }

    /// `folio_rotate_reclaimable` moved `f` to its list's tail.
    pub fn rotated(&mut self, f: FrameId) {
        self.set(f, WB_ROTATED);
    }

    /// Whether `f` was written and rotated in this pass (clean and unmapped in the kernel:
    /// no reference keeps it, `__remove_mapping` frees it).
    #[inline]
    pub fn is_rotated(&self, f: FrameId) -> bool {
        self.live != 0 && self.wb.get(f as usize) == Some(&WB_ROTATED)
    }

    /// A rotated folio freed by a later batch of the pass.
    pub fn freed(&mut self, f: FrameId) {
        self.set(f, WB_FREED);
    }

    /// `blk_finish_plug` at the end of the pass: the writes still plugged complete after it.
    pub fn end_pass(&mut self) {
        self.dispatched.clear();
        self.plug.flush(&mut self.dispatched);
        self.dispatched.clear();
        self.late.clear();
        self.inflight.clear();
    }

    /// What became of `f`'s write, forgotten once asked.
    pub fn done(&mut self, f: FrameId) -> WritebackDone {
        if self.live == 0 {
            return WritebackDone::Untracked;
        }
        let Some(v) = self.wb.get_mut(f as usize) else {
            return WritebackDone::Untracked;
        };
        let was = std::mem::replace(v, WB_NONE);
        self.live -= (was != WB_NONE) as usize;
        match was {
            WB_PENDING => WritebackDone::Pending,
            WB_ROTATED => WritebackDone::Rotated,
            WB_FREED => WritebackDone::Freed,
            _ => WritebackDone::Untracked,
        }
    }

    /// Whether every write of the last pass was asked for.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Contiguous slots merge into one request until it holds the device's 254 pages (a
    /// virtio-blk disk); the next
    /// write starts a new request, and since the last one is over 128 KiB the plug is flushed
    /// first: pages 0..254 are dispatched when page 254 is written, not before.
    #[test]
    fn a_full_request_is_dispatched_when_the_next_one_starts() {
        let mut p = SwapPlug::default();
        let mut d = Vec::new();
        for s in 0..254u32 {
            p.submit(s, 1000 + s, 0, 254, &mut d);
        }
        assert!(d.is_empty());
        p.submit(254, 1254, 0, 254, &mut d);
        assert_eq!(d.len(), 254);
        assert_eq!(d[253], (253, 0));
        p.flush(&mut d);
        assert_eq!(d.len(), 255);
        assert!(p.is_empty());
    }

    /// A write that continues neither end of the last request starts a new one; the plug is
    /// flushed before it only once the last request reached 32 pages: 31 contiguous pages,
    /// then a jump, stay plugged; 32 contiguous pages then a jump are dispatched. A front
    /// merge (the slot just below the request) counts as contiguous.
    #[test]
    fn a_jump_flushes_after_128_kib() {
        let mut p = SwapPlug::default();
        let mut d = Vec::new();
        for s in 0..31u32 {
            p.submit(s, 100 + s, 0, 254, &mut d);
        }
        p.submit(31, 500, 1, 254, &mut d); // new request, last had 31 pages: no flush
        assert!(d.is_empty());
        p.submit(32, 499, 1, 254, &mut d); // front merge into [500]
        for s in 0..30u32 {
            p.submit(33 + s, 501 + s, 1, 254, &mut d); // back merges: [499, 530], 32 pages
        }
        assert!(d.is_empty());
        p.submit(63, 9000, 2, 254, &mut d);
        assert_eq!(d.len(), 63);
        assert_eq!(d[31], (31, 1));
    }

    /// With every write in a request of its own (scattered slots, one page each), the plug
    /// holds 32 requests; the 33rd write flushes them.
    #[test]
    fn thirty_two_single_page_requests_fill_the_plug() {
        let mut p = SwapPlug::default();
        let mut d = Vec::new();
        for s in 0..32u32 {
            p.submit(s, s * 10, 0, 128, &mut d);
        }
        assert!(d.is_empty());
        p.submit(32, 320, 0, 128, &mut d);
        assert_eq!(d.len(), 32);
    }
}

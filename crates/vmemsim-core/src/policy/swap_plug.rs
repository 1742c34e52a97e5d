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

use crate::mm::FrameId;

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

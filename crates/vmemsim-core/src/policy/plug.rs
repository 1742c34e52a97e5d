//! The block layer's per-task plug as a reclaimer's swap writes meet it (block/blk-mq.c
//! `blk_mq_submit_bio` → `blk_attempt_plug_merge` / `blk_add_rq_to_plug`, block/blk.h; the
//! same in Linux 6.1 and 6.8), for MG-LRU's `evict_folios`: a write still held in the plug
//! when `evict_folios` looks at its folio again is under writeback, and the folio goes back
//! to the lists (`folio_rotate_reclaimable` moves it to the oldest generation's tail when the
//! write completes, and a later `scan_folios` isolates it again, counted in pgscan again); a
//! write the plug has already sent to the device is taken to have completed by then (the
//! engine's devices take no time in an untimed run), so the folio is clean and unmapped and
//! `evict_folios` retries it at once ("retry folios that may have missed
//! folio_rotate_reclaimable()"): freed, counted in pgsteal but not in pgscan again.
//!
//! The plug lives for one reclaim pass: `lru_gen_shrink_lruvec` (6.1) and
//! `lru_gen_shrink_node` (6.8) call `blk_start_plug` first and `blk_finish_plug` last (which
//! sends whatever is left, after the last `evict_folios` has put its folios back). A swap
//! write is one bio of one page at its slot's sectors (`swap_writepage` → `__swap_writepage`;
//! one extent: the slot's sector follows from the slot). Left out: the flush when the
//! reclaimer sleeps (`sched_submit_work`), multiple queues (`BLK_MAX_REQUEST_COUNT * 2`), the
//! scheduler's own merges (they change what the device is sent, not when).

/// `BLK_MAX_REQUEST_COUNT`: the plug is flushed before a new request when it holds this many.
pub const BLK_MAX_REQUEST_COUNT: u32 = 32;
/// `BLK_PLUG_FLUSH_SIZE` (128 KiB) in pages: the plug is flushed before a new request when
/// the last request is at least this large.
pub const BLK_PLUG_FLUSH_PAGES: u32 = 32;

/// One reclaim pass's plug: the requests it holds and which writes it has sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plug {
    /// Requests held (`plug->rq_count`); 0 after a flush.
    rq_count: u32,
    /// The last request added (`rq_list_peek(&plug->mq_list)`): first slot and pages.
    last_start: u32,
    last_pages: u32,
    /// Writes submitted in this pass.
    submitted: u64,
    /// Writes sent to the device: a flush sends every held request, so the first
    /// `dispatched` writes of the pass.
    dispatched: u64,
    /// Since the plug was made (not reset by `start`): requests made and flushes before
    /// the end of a pass.
    pub total_requests: u64,
    pub total_flushes: u64,
}

impl Plug {
    /// `blk_start_plug`: an empty plug at the start of a reclaim pass.
    pub fn start(&mut self) {
        *self = Plug {
            total_requests: self.total_requests,
            total_flushes: self.total_flushes,
            ..Plug::default()
        };
    }

    /// One page written to `slot` (`submit_bio`): `blk_attempt_plug_merge` merges it into the
    /// last request when it continues that request at either end
    /// (`blk_try_merge`: back or front merge) and the request has room for it (`max_pages`,
    /// the queue's `max_segments` / `max_sectors` in pages; at least 1); otherwise a new
    /// request, which `blk_add_rq_to_plug` adds after flushing the plug (sending every held
    /// request) when it already holds `BLK_MAX_REQUEST_COUNT` requests or its last request is
    /// at least `BLK_PLUG_FLUSH_SIZE`. Returns the write's index in the pass (0, 1, ...).
    pub fn submit(&mut self, slot: u32, max_pages: u32) -> u64 {
        let i = self.submitted;
        self.submitted += 1;
        if self.rq_count > 0 && self.last_pages < max_pages.max(1) {
            if slot == self.last_start.wrapping_add(self.last_pages) {
                self.last_pages += 1;
                return i;
            }
            if slot.wrapping_add(1) == self.last_start {
                self.last_start = slot;
                self.last_pages += 1;
                return i;
            }
        }
        if self.rq_count >= BLK_MAX_REQUEST_COUNT || self.last_pages >= BLK_PLUG_FLUSH_PAGES {
            // blk_mq_flush_plug_list: every write submitted before this one is sent.
            self.dispatched = i;
            self.rq_count = 0;
            self.total_flushes += 1;
        }
        self.rq_count += 1;
        self.total_requests += 1;
        self.last_start = slot;
        self.last_pages = 1;
        i
    }

    /// Whether write `i` of this pass has left the plug (sent to the device).
    pub fn dispatched(&self, i: u64) -> bool {
        i < self.dispatched
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Contiguous slots merge (back merge) until the request holds `max_pages`; the next write
    /// starts a request, and since the last one is ≥ 128 KiB (32 pages) the plug is flushed
    /// first: writes 0..40 are sent, write 40 and later are held. By hand from
    /// `blk_add_rq_to_plug`: max_pages 40 ≥ 32, so the flush comes at the 41st write.
    #[test]
    fn a_full_request_then_a_new_one_flushes_the_plug() {
        let mut p = Plug::default();
        p.start();
        for s in 100..140 {
            p.submit(s, 40);
        }
        assert!(!p.dispatched(0), "one request of 40 pages, held");
        assert_eq!(p.submit(140, 40), 40);
        assert!(p.dispatched(39) && !p.dispatched(40));
        // The new request grows from 140; nothing else is sent until it is full.
        for s in 141..150 {
            p.submit(s, 40);
        }
        assert!(!p.dispatched(40));
    }

    /// Scattered slots make one-page requests: a request under 32 pages never triggers the
    /// size rule, so the plug is flushed when it already holds `BLK_MAX_REQUEST_COUNT` = 32
    /// requests: the 33rd write sends the first 32. A front merge (slot just below the last
    /// request) extends it as a back merge does.
    #[test]
    fn thirty_two_small_requests_flush_the_plug() {
        let mut p = Plug::default();
        for k in 0..32u32 {
            p.submit(10 * k, 168);
        }
        assert!(!p.dispatched(0));
        p.submit(1000, 168); // write 32, request 33
        assert!(p.dispatched(31) && !p.dispatched(32));
        p.submit(999, 168); // front merge into [1000]
        p.submit(1001, 168); // back merge into [999, 1000]
        assert_eq!((p.rq_count, p.last_start, p.last_pages), (1, 999, 3));
        // max_pages 1 (no merging): every write is a request.
        let mut q = Plug::default();
        for s in 0..33 {
            q.submit(s, 1);
        }
        assert!(q.dispatched(31) && !q.dispatched(32));
    }

    /// `blk_start_plug` at the start of each pass: nothing carried over.
    #[test]
    fn a_new_pass_starts_an_empty_plug() {
        let mut p = Plug::default();
        for s in 0..40 {
            p.submit(s, 32);
        }
        assert!(p.dispatched(31));
        p.start();
        assert_eq!(
            (p.rq_count, p.last_pages, p.submitted, p.dispatched),
            (0, 0, 0, 0)
        );
        assert_eq!((p.total_requests, p.total_flushes), (2, 1), "totals kept");
        assert_eq!(p.submit(7, 32), 0);
        assert!(!p.dispatched(0));
    }
}

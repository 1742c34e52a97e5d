//! Cacol's host page-cache manager for VM disk images (seed 003, the Cacol paper: §4.2
//! "Implementation", and §5 with Fig. 7 and Table 2 for the two-VM fairness run): which
//! pages of a disk image the host keeps when QEMU reads or writes them on a guest's behalf,
//! and which it gives back, VM by VM, under memory pressure. Cacol's aim is less double
//! caching: a page the guest reads once is in the guest's page cache already, so the host
//! keeps only pages the guest asks for again.
//!
//! A pure data structure: VMs `0..n`, each with one disk image, the pages of those images the
//! host caches and the frames holding them. The caller (the host's page cache) does the I/O,
//! allocates and frees the frames and decides when to reclaim; this module answers "keep this
//! page?" ([`Cacol::request`]) and "which pages go?" ([`Cacol::reclaim`]).
//!
//! # The paper's rules and where each lives
//!
//! - *Identification* (§4.2): Cacol finds a VM by its disk image's inode, registered when the
//!   VM starts. Here the caller names the VM; VM `v` is image `v`.
//! - *Tracking access* (§4.2): a hash table in the image's `address_space`, page index →
//!   number of accesses, which lives as long as the image is open. QEMU keeps its disk open
//!   while it runs, so here the table lives the whole run and is never reset, not even when a
//!   page leaves the cache ([`Cacol::remove`], eviction). On a request the count decides:
//!   0 → the page is served but not kept ([`Admit::Bypass`]: the caller reads it from disk as
//!   `O_DIRECT` would); 1 or more → the page is kept ([`Admit::Hit`] if it is cached,
//!   [`Admit::Insert`] if not, and the caller then gives it a frame with [`Cacol::insert`]).
//!   The count goes up by one in every case (the paper says "updated to 1" for the first
//!   access and leaves the increment of later ones implicit: an access count that did not
//!   grow with accesses could not order pages by frequency).
//! - *LFU management* (§4.2), per VM ("LFU management of the cache is divided and managed on
//!   per VM basis"): see the next section.
//! - *Fairness* (§4.2): half of the memory left to the page cache is shared equally among the
//!   VMs as per-VM low watermarks ([`Cacol::low_watermark`]); Cacol never reclaims a VM's
//!   pages below its watermark.
//! - *Reclaim* (§4.2): leave out the VMs at or below their watermark, take the least recently
//!   used of the others (the one whose most recently requested page is the oldest), evict
//!   from it until enough is freed or it reaches its watermark, then the next one. When
//!   every VM is at its watermark nothing is reclaimed ([`ReclaimStats::at_watermarks`]) and
//!   the caller reclaims from its ordinary LRU. Fig. 7 shows the result with two VMs: the
//!   idle-looking kernbench VM is reclaimed first until it "hits this watermark, and then
//!   pages from dd start being reclaimed".
//!
//! # The ordering: a frequency clock (GCLOCK), not a sorted list
//!
//! The paper orders each VM's pages "by LFU", and adds that "during scan to evict pages from
//! cache, if a scanned page cannot be evicted due to its elevated count, Cacol decreases its
//! access count and puts it back in the cache. Thus, after a finite numbers of scan, it will
//! be finally evicted." The decrement is there for a page "accessed a lot of time during a
//! short period, and then is never accessed again".
//!
//! A scan in strict count order cannot do that: it meets the lowest counts first, evicts
//! them, and never reaches the hot-then-cold page while pages with lower counts keep
//! arriving; decrementing only the page at the front of a count-ordered list ages nothing
//! but the coldest pages. For the decrement to matter the scan must pass over pages in an
//! order other than their counts. So each VM's pages are on one queue in the order they
//! were admitted or put back, and reclaim runs a clock over it (Generalized CLOCK,
//! Effelsberg & Härder, "Principles of database buffer management", TODS 1984):
//!
//! - the hand is at the queue's oldest page; a page whose count is at most
//!   [`EVICT_THRESHOLD`] is evicted; a page with a higher count ("elevated") has its count
//!   decreased by one and goes to the back of the queue ("puts it back in the cache");
//! - a request for a cached page raises its count and does not move it (O(1), as a clock's
//!   hit sets a bit and moves nothing).
//!
//! Every sentence holds: frequency decides how long a page stays (it survives one pass of
//! the hand for each access above the threshold, as a clock's reference bit approximates
//! LRU with one pass per reference); a page that cannot be evicted because of its count is
//! decremented and put back; a page not requested again is evicted after at most
//! `count − EVICT_THRESHOLD` passes. The decremented count is the same count that decides
//! admission (the paper has one count per page); with the threshold at 2 the hand never
//! takes it below 2, so a decrement never turns a later admission into a bypass.
//!
//! Cost: each decrement undoes one earlier increment, and every increment is a request, so
//! a reclaim's scanning is paid for by the requests before it: O(1) amortized per request
//! and per eviction, although one eviction can pass over many pages (a VM whose pages all
//! have high counts). A hash lookup per request (the paper's hash table) and per page
//! scanned. The queues are the crate's index-linked lists ([`crate::policy::list`]) over a
//! slab of cached pages, so a hit, an insertion, a removal and a requeue are O(1).
//!
//! # What the paper leaves open, and what was chosen
//!
//! 1. **The eviction threshold** is [`EVICT_THRESHOLD`] = 2: "elevated" means more accesses
//!    than admission takes. Every cached page has had at least two requests (the first was
//!    bypassed, the second admitted it), so a page requested only those two times is evicted
//!    at the hand's first visit, and every further request buys one more pass. A threshold
//!    of 1 would give every page a second pass whether or not it was requested after its
//!    admission, and the first decrement would bring a cached page to the count of a page
//!    seen once; at 2 the table never says "seen once" of a page that was cached. An evicted
//!    page keeps its count (at least 2), so its next request admits it again (the paper: a
//!    count of "1 or more" means the page "has already been accessed in the past").
//!    [`Cacol::with_threshold`] takes another threshold (at least 1, so that no cached
//!    page's count reaches 0) for sensitivity studies.
//! 2. **The decrement** is by one per pass ("decreases its access count", no amount given).
//! 3. **"The remaining free memory"** that the fairness rule splits is the caller's
//!    `available_frames` at the time of the reclaim. The intended value is the host's free
//!    frames plus the frames Cacol holds: the memory the VMs' page cache could have, what the
//!    paper calls "the page cache available" ("4 VM running on the same host would have
//!    12.5% of the page cache available exclusively to them"). Free frames alone would not
//!    do: at reclaim time they are near the kernel's low watermark, so the guarantee would
//!    shrink to nothing exactly when it is needed, whereas Fig. 7 shows it as a steady share
//!    of the host cache. A VM's low watermark is `available_frames / (2 n)` for `n` VMs,
//!    rounded down so that the watermarks never add up to more than half.
//! 4. **"Reached its watermark"**: a VM with `cached ≤ watermark` is left out; reclaim from a
//!    VM stops when `cached == watermark`.
//! 5. **Least recently used VM**: a VM's recency is the stamp (`now`) of its most recent
//!    request of any kind, bypassed ones included (each is an access the hash table counts).
//!    A VM never requested from is the least recent; ties go to the lower VM number, so a
//!    run is deterministic. The order is taken once per [`Cacol::reclaim`] call (eviction
//!    does not change recency).
//! 6. **Where the hand starts**: at the queue's oldest page; new pages join behind the hand
//!    (the back of the queue), as a clock inserts at the hand's position.
//! 7. **Invalidation** ([`Cacol::remove`]: guest discard, truncation, a write that bypasses
//!    the cache) drops the page but keeps its count: the table belongs to the open image,
//!    not to the cached page.
//! 8. **A request whose page cannot get a frame**: the caller does not call
//!    [`Cacol::insert`]; the count has still grown, and the next request answers
//!    [`Admit::Insert`] again.
//!
//! # Left out
//!
//! The page cache outside disk images (the first half of the free memory, "usable page
//! cache for all process", is the host's ordinary LRU, which the caller runs); dirty pages
//! and writeback (an evicted page's frame is handed back, and the caller writes it back if
//! it is dirty); readahead (the caller requests each page it reads); the runtime switch of
//! policy (§4.2 "Runtime management"); the `O_DIRECT`-like read itself; a limit on the
//! hash tables' size (the paper's grow with every page ever requested, and so do these).

use super::FrameId;
use crate::policy::list::{Links, List, NIL};
use crate::util::PageMap;

/// The highest access count at which the clock evicts a page (see the module docs, choice 1).
pub const EVICT_THRESHOLD: u32 = 2;

/// What [`Cacol::request`] decided for a requested page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// First request of the page: served without being kept (read from disk, as `O_DIRECT`).
    Bypass,
    /// The page is cached, in this frame.
    Hit(FrameId),
    /// The page was requested before and is not cached: the caller gives it a frame and calls
    /// [`Cacol::insert`].
    Insert,
}

/// A page the clock evicted: the caller frees its frame (after writing it back if dirty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Evicted {
    pub vm: usize,
    pub index: u64,
    pub frame: FrameId,
}

/// What one [`Cacol::reclaim`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReclaimStats {
    /// Pages the hand looked at (`decremented + evicted`).
    pub scanned: u64,
    /// Pages whose count was above the threshold: decreased by one and put back.
    pub decremented: u64,
    pub evicted: u64,
    /// Fewer than `nr_to_reclaim` pages were evicted because every VM is at or below its low
    /// watermark: the caller reclaims the rest from its ordinary LRU.
    pub at_watermarks: bool,
}

/// One image's hash-table entry: its access count and, while the page is cached, its slot.
#[derive(Clone, Copy, Debug)]
struct Entry {
    count: u32,
    /// The page's node in the slab, `NIL` while it is not cached.
    slot: u32,
}

/// A cached page.
#[derive(Clone, Copy, Debug)]
struct Node {
    index: u64,
    frame: FrameId,
    vm: u32,
}

/// One VM: its image's hash table, its clock queue (head = most recently admitted or put
/// back, tail = the hand) and the stamp of its most recent request.
#[derive(Clone, Debug)]
struct Vm {
    table: PageMap<Entry>,
    queue: List,
    last: Option<u64>,
}

/// Cacol's state for every VM of a host.
#[derive(Clone, Debug)]
pub struct Cacol {
    threshold: u32,
    vms: Vec<Vm>,
    /// Cached pages, indexed by slot; `links` chains them into the VMs' queues.
    nodes: Vec<Node>,
    links: Links,
    free_slots: Vec<u32>,
    /// The highest `now` seen (stamps must not go back).
    now: u64,
}

impl Cacol {
    /// `n_vms` VMs (at least one), each with an empty table and cache, and the paper's
    /// threshold [`EVICT_THRESHOLD`].
    pub fn new(n_vms: usize) -> Self {
        assert!(n_vms > 0, "Cacol needs at least one VM");
        Cacol {
            threshold: EVICT_THRESHOLD,
            vms: vec![
                Vm {
                    table: PageMap::default(),
                    queue: List::default(),
                    last: None,
                };
                n_vms
            ],
            nodes: Vec::new(),
            links: Links::new(0),
            free_slots: Vec::new(),
            now: 0,
        }
    }

    /// As [`Cacol::new`] with another eviction threshold. Errors: no VM, a threshold of 0
    /// (the hand could take a cached page's count to 0, the count of a page never seen).
    pub fn with_threshold(n_vms: usize, threshold: u32) -> Result<Self, String> {
        if n_vms == 0 {
            return Err("cacol: at least one VM is needed".into());
        }
        if threshold == 0 {
            return Err("cacol: the eviction threshold must be at least 1".into());
        }
        Ok(Cacol {
            threshold,
            ..Cacol::new(n_vms)
        })
    }

    pub fn n_vms(&self) -> usize {
        self.vms.len()
    }

    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    /// QEMU looks up page `index` of VM `vm`'s image in the host page cache (a guest read or
    /// write through its virtual disk) at stamp `now` (non-decreasing: the caller's operation
    /// sequence or simulated time). Raises the page's count and the VM's recency.
    pub fn request(&mut self, vm: usize, index: u64, now: u64) -> Admit {
        debug_assert!(now >= self.now, "cacol: stamp {now} before {}", self.now);
        self.now = self.now.max(now);
        let v = &mut self.vms[vm];
        v.last = Some(now);
        let e = v.table.entry(index).or_insert(Entry {
            count: 0,
            slot: NIL,
        });
        let before = e.count;
        e.count = e.count.saturating_add(1);
        if before == 0 {
            Admit::Bypass
        } else if e.slot != NIL {
            Admit::Hit(self.nodes[e.slot as usize].frame)
        } else {
            Admit::Insert
        }
    }

    /// The caller put page `index` of `vm`'s image in `frame` after [`Admit::Insert`]: the
    /// page joins the back of its VM's queue. Panics if the page is cached already or was not
    /// requested twice (a caller bug).
    pub fn insert(&mut self, vm: usize, index: u64, frame: FrameId) {
        let v = &mut self.vms[vm];
        let e = v
            .table
            .get_mut(&index)
            .unwrap_or_else(|| panic!("cacol: insert of page {index} of VM {vm}, never requested"));
        assert!(
            e.slot == NIL && e.count >= 2,
            "cacol: insert of page {index} of VM {vm}: cached already or requested only once"
        );
        let node = Node {
            index,
            frame,
            vm: vm as u32,
        };
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.nodes[s as usize] = node;
                s
            }
            None => {
                self.nodes.push(node);
                self.links.ensure(self.nodes.len());
                self.nodes.len() as u32 - 1
            }
        };
        e.slot = slot;
        v.queue.push_head(&mut self.links, slot);
    }

    /// Drop page `index` of `vm`'s image from the cache (invalidation: a guest discard or
    /// truncation, a write that bypasses the cache), keeping its count. Returns its frame, for
    /// the caller to free, if it was cached.
    pub fn remove(&mut self, vm: usize, index: u64) -> Option<FrameId> {
        let v = &mut self.vms[vm];
        let e = v.table.get_mut(&index)?;
        if e.slot == NIL {
            return None;
        }
        let slot = std::mem::replace(&mut e.slot, NIL);
        v.queue.remove(&mut self.links, slot);
        self.free_slots.push(slot);
        Some(self.nodes[slot as usize].frame)
    }

    /// The page's access count (0 for a page never requested).
    pub fn count(&self, vm: usize, index: u64) -> u32 {
        self.vms[vm].table.get(&index).map_or(0, |e| e.count)
    }

    /// The frame caching the page, if it is cached.
    pub fn frame(&self, vm: usize, index: u64) -> Option<FrameId> {
        let e = self.vms[vm].table.get(&index)?;
        (e.slot != NIL).then(|| self.nodes[e.slot as usize].frame)
    }

    pub fn contains(&self, vm: usize, index: u64) -> bool {
        self.frame(vm, index).is_some()
    }

    /// Pages of `vm`'s image cached now.
    pub fn cached(&self, vm: usize) -> u64 {
        self.vms[vm].queue.len as u64
    }

    /// Pages cached now, all VMs.
    pub fn total_cached(&self) -> u64 {
        (self.nodes.len() - self.free_slots.len()) as u64
    }

    /// Pages of `vm`'s image in its hash table (every page ever requested).
    pub fn tracked(&self, vm: usize) -> usize {
        self.vms[vm].table.len()
    }

    /// The stamp of `vm`'s most recent request (`None` before its first).
    pub fn last_request(&self, vm: usize) -> Option<u64> {
        self.vms[vm].last
    }

    /// Each VM's low watermark when `available_frames` are left to the page cache (the
    /// host's free frames plus the frames Cacol holds, module docs choice 3): half of them
    /// shared equally, `available_frames / (2 n)` rounded down.
    pub fn low_watermark(&self, available_frames: u64) -> u64 {
        available_frames / (2 * self.vms.len() as u64)
    }

    /// Pages reclaim may take from `vm` now: its cached pages above its low watermark.
    pub fn reclaimable(&self, vm: usize, available_frames: u64) -> u64 {
        self.cached(vm)
            .saturating_sub(self.low_watermark(available_frames))
    }

    /// Reclaim up to `nr_to_reclaim` pages with `available_frames` left to the page cache:
    /// from the least recently used VM above its low watermark until it reaches it, then the
    /// next, each by its clock. The evicted pages are appended to `out`, in eviction order.
    pub fn reclaim(
        &mut self,
        nr_to_reclaim: u64,
        available_frames: u64,
        out: &mut Vec<Evicted>,
    ) -> ReclaimStats {
        let mut stats = ReclaimStats::default();
        if nr_to_reclaim == 0 {
            return stats;
        }
        let wm = self.low_watermark(available_frames);
        let mut order: Vec<usize> = (0..self.vms.len())
            .filter(|&v| self.cached(v) > wm)
            .collect();
        order.sort_by_key(|&v| (self.vms[v].last, v));
        for v in order {
            while stats.evicted < nr_to_reclaim && self.cached(v) > wm {
                out.push(self.evict_one(v, &mut stats));
            }
            if stats.evicted == nr_to_reclaim {
                break;
            }
        }
        stats.at_watermarks = stats.evicted < nr_to_reclaim;
        stats
    }

    /// Run `vm`'s clock until it evicts one page (the queue is not empty): a page at or below
    /// the threshold goes, one above has its count decreased and goes to the back.
    fn evict_one(&mut self, vm: usize, stats: &mut ReclaimStats) -> Evicted {
        let v = &mut self.vms[vm];
        loop {
            let slot = v.queue.tail;
            let node = self.nodes[slot as usize];
            let e = v
                .table
                .get_mut(&node.index)
                .expect("cacol: a cached page has a table entry");
            stats.scanned += 1;
            if e.count > self.threshold {
                e.count -= 1;
                stats.decremented += 1;
                v.queue.move_to_head(&mut self.links, slot);
            } else {
                e.slot = NIL;
                v.queue.remove(&mut self.links, slot);
                self.free_slots.push(slot);
                stats.evicted += 1;
                return Evicted {
                    vm,
                    index: node.index,
                    frame: node.frame,
                };
            }
        }
    }

    /// Recount every invariant: each cached page on exactly one queue, its own VM's, with its
    /// table entry pointing back at it and a count of at least `min(2, threshold)` (admitted
    /// at 2 or more, never decremented below the threshold); every table entry counts at
    /// least one request; the slab's used and free slots add up.
    pub fn validate(&self) -> Result<(), String> {
        let floor = self.threshold.min(2);
        let mut on_queue = vec![false; self.nodes.len()];
        for (vm, v) in self.vms.iter().enumerate() {
            v.queue.validate(&self.links, &format!("cacol VM {vm}"))?;
            for slot in v.queue.iter(&self.links) {
                let seen = on_queue
                    .get_mut(slot as usize)
                    .ok_or_else(|| format!("cacol VM {vm}: slot {slot} beyond the slab"))?;
                if std::mem::replace(seen, true) {
                    return Err(format!("cacol: slot {slot} on two queues"));
                }
                let node = self.nodes[slot as usize];
                if node.vm as usize != vm {
                    return Err(format!(
                        "cacol: page {} of VM {} on VM {vm}'s queue",
                        node.index, node.vm
                    ));
                }
                match v.table.get(&node.index) {
                    Some(e) if e.slot == slot && e.count >= floor => {}
                    Some(e) => {
                        return Err(format!(
                            "cacol VM {vm}: page {} cached in slot {slot}, but its entry says \
                             slot {} count {} (at least {floor} expected)",
                            node.index, e.slot as i64, e.count
                        ))
                    }
                    None => {
                        return Err(format!(
                            "cacol VM {vm}: page {} cached but not in the table",
                            node.index
                        ))
                    }
                }
            }
            let mut cached = 0usize;
            for (&index, e) in &v.table {
                if e.count == 0 {
                    return Err(format!("cacol VM {vm}: page {index} tracked with count 0"));
                }
                cached += (e.slot != NIL) as usize;
            }
            if cached != v.queue.len as usize {
                return Err(format!(
                    "cacol VM {vm}: {cached} table entries say cached, {} pages on the queue",
                    v.queue.len
                ));
            }
        }
        for &slot in &self.free_slots {
            match on_queue.get_mut(slot as usize) {
                Some(seen) if !*seen => *seen = true,
                _ => {
                    return Err(format!(
                        "cacol: free slot {slot} in use, twice free or out of the slab"
                    ))
                }
            }
        }
        if let Some(lost) = on_queue.iter().position(|&s| !s) {
            return Err(format!("cacol: slot {lost} neither on a queue nor free"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Request page `index` of `vm` and, on `Insert`, give it frame `frame`.
    fn access(c: &mut Cacol, vm: usize, index: u64, now: u64, frame: FrameId) -> Admit {
        let a = c.request(vm, index, now);
        if a == Admit::Insert {
            c.insert(vm, index, frame);
        }
        a
    }

    /// §4.2 "Tracking access": count 0 → served, not kept; 1 or more → kept. Each VM's image
    /// has its own table.
    #[test]
    fn admission_from_the_second_request() {
        let mut c = Cacol::new(2);
        assert_eq!(c.request(0, 5, 1), Admit::Bypass);
        assert_eq!((c.count(0, 5), c.contains(0, 5)), (1, false));
        assert_eq!(c.request(0, 5, 2), Admit::Insert);
        c.insert(0, 5, 70);
        assert_eq!((c.count(0, 5), c.frame(0, 5)), (2, Some(70)));
        // The same index of the other VM's image is another page: its first request.
        assert_eq!(c.request(1, 5, 3), Admit::Bypass);
        assert_eq!((c.count(1, 5), c.cached(1)), (1, 0));
        c.validate().unwrap();
    }

    /// Every request adds one, hit or not; a page given no frame after `Insert` is asked for
    /// again; invalidation and eviction keep the count, so the next request admits at once.
    #[test]
    fn hit_and_insert_counts() {
        let mut c = Cacol::new(1);
        assert_eq!(c.request(0, 9, 1), Admit::Bypass); // count 1
        assert_eq!(c.request(0, 9, 2), Admit::Insert); // count 2, no frame given
        assert_eq!(c.request(0, 9, 3), Admit::Insert); // count 3
        c.insert(0, 9, 4);
        assert_eq!(c.request(0, 9, 4), Admit::Hit(4)); // count 4
        assert_eq!(c.request(0, 9, 5), Admit::Hit(4)); // count 5
        assert_eq!(c.count(0, 9), 5);
        assert_eq!(c.remove(0, 9), Some(4));
        assert_eq!(c.remove(0, 9), None);
        assert_eq!((c.count(0, 9), c.cached(0)), (5, 0));
        assert_eq!(c.request(0, 9, 6), Admit::Insert); // count 6, admitted again at once
        c.insert(0, 9, 8);
        // Evicted by the clock: 6 > 2 → 5, 4, 3, 2 (four decrements), then 2 ≤ 2 → evicted.
        let mut out = Vec::new();
        let s = c.reclaim(1, 0, &mut out);
        assert_eq!((s.scanned, s.decremented, s.evicted), (5, 4, 1));
        assert_eq!(
            out,
            [Evicted {
                vm: 0,
                index: 9,
                frame: 8
            }]
        );
        assert_eq!(c.count(0, 9), 2);
        assert_eq!(c.request(0, 9, 7), Admit::Insert); // count 3
        c.validate().unwrap();
    }

    /// §4.2 "LFU management": a page cannot be evicted for its elevated count → decremented and
    /// put back; after finitely many scans it goes. Page 1 is requested ten times (count 10),
    /// page 2 twice (count 2); the queue, hand first, is [1, 2].
    #[test]
    fn decrement_and_requeue_then_evict() {
        let mut c = Cacol::new(1);
        let mut now = 0;
        for _ in 0..10 {
            now += 1;
            access(&mut c, 0, 1, now, 100);
        }
        for _ in 0..2 {
            now += 1;
            access(&mut c, 0, 2, now, 200);
        }
        assert_eq!((c.count(0, 1), c.count(0, 2)), (10, 2));
        let mut out = Vec::new();
        // Watermark 0 (nothing available). Page 1: 10 > 2 → 9, to the back: [2, 1]. Page 2:
        // 2 ≤ 2 → evicted. Scanned 2, decremented 1.
        let s = c.reclaim(1, 0, &mut out);
        assert_eq!(
            s,
            ReclaimStats {
                scanned: 2,
                decremented: 1,
                evicted: 1,
                at_watermarks: false
            }
        );
        assert_eq!(
            out,
            [Evicted {
                vm: 0,
                index: 2,
                frame: 200
            }]
        );
        assert_eq!((c.count(0, 1), c.count(0, 2)), (9, 2));
        // Page 1 alone: 9 → 8 → … → 2 (seven decrements), then evicted at 2.
        out.clear();
        let s = c.reclaim(1, 0, &mut out);
        assert_eq!((s.scanned, s.decremented, s.evicted), (8, 7, 1));
        assert_eq!(
            out,
            [Evicted {
                vm: 0,
                index: 1,
                frame: 100
            }]
        );
        assert_eq!(c.cached(0), 0);
        c.validate().unwrap();
    }

    /// The paper's motivating case: page A is hot once (five requests) and never again, while
    /// new pages P1, P2, … each requested twice keep arriving into a cache held at two pages
    /// (one page reclaimed after each insertion past two). Under a strict LFU order A (count
    /// 5) would outlive every newcomer (count 2) forever; with the clock it is decremented each
    /// time the hand passes it and goes at P8. By hand, queue written hand first:
    /// P1: [A5 P1]. P2: [A5 P1 P2] → A→4 [P1 P2 A4], P1 out. P3: [P2 A4 P3] → P2 out.
    /// P4: [A4 P3 P4] → A→3, P3 out. P5: P4 out. P6: [A3 P5 P6] → A→2, P5 out. P7: P6 out.
    /// P8: [A2 P7 P8] → A (2 ≤ 2) out.
    #[test]
    fn hot_then_cold_page_is_aged_out() {
        let mut c = Cacol::new(1);
        let mut now = 0;
        for _ in 0..5 {
            now += 1;
            access(&mut c, 0, 0, now, 1000);
        }
        let mut victims = Vec::new();
        let mut decremented = 0;
        for p in 1..=8u64 {
            for _ in 0..2 {
                now += 1;
                access(&mut c, 0, p, now, p as FrameId);
            }
            if c.cached(0) > 2 {
                let mut out = Vec::new();
                let s = c.reclaim(1, 0, &mut out);
                decremented += s.decremented;
                victims.extend(out.iter().map(|e| e.index));
            }
            c.validate().unwrap();
        }
        assert_eq!(victims, [1, 2, 3, 4, 5, 6, 0]);
        assert_eq!(decremented, 3);
        assert_eq!(
            (c.contains(0, 7), c.contains(0, 8), c.count(0, 0)),
            (true, true, 2)
        );
    }

    /// §4.2 "Fairness": half of the available memory shared equally as low watermarks.
    /// 1000 frames: 2 VMs → 1000 / 2 / 2 = 250 (25%); 4 VMs → 1000 / 2 / 4 = 125 (12.5%, the
    /// paper's example); 1001 frames and 4 VMs → 125.125 rounded down to 125.
    #[test]
    fn watermark_split() {
        assert_eq!(Cacol::new(2).low_watermark(1000), 250);
        assert_eq!(Cacol::new(4).low_watermark(1000), 125);
        assert_eq!(Cacol::new(4).low_watermark(1001), 125);
        assert_eq!(Cacol::new(1).low_watermark(1000), 500);
        assert_eq!(Cacol::new(3).low_watermark(0), 0);
    }

    /// Fill `vm` with `n` pages (indices `base..base + n`), each requested twice (count 2),
    /// frames numbered like the indices.
    fn fill(c: &mut Cacol, vm: usize, base: u64, n: u64, now: &mut u64) {
        for i in base..base + n {
            for _ in 0..2 {
                *now += 1;
                access(c, vm, i, *now, i as FrameId);
            }
        }
    }

    /// §4.2 reclaim: the least recently used VM above its watermark first, down to its
    /// watermark, then the next; nothing once all are at their watermarks. 40 frames
    /// available, 2 VMs → watermark 10 each. VM 1 holds 15 pages and is filled first, VM 0
    /// holds 14 and is filled last (most recent). Asking for 8: VM 1 gives 5 (15 → 10), its
    /// five oldest pages (all counts 2, no decrement), then VM 0 gives 3 (14 → 11).
    #[test]
    fn reclaim_lru_vm_down_to_its_watermark_then_the_next() {
        let mut c = Cacol::new(2);
        let mut now = 0;
        fill(&mut c, 1, 100, 15, &mut now);
        fill(&mut c, 0, 0, 14, &mut now);
        assert_eq!(c.low_watermark(40), 10);
        let mut out = Vec::new();
        let s = c.reclaim(8, 40, &mut out);
        assert_eq!(
            s,
            ReclaimStats {
                scanned: 8,
                decremented: 0,
                evicted: 8,
                at_watermarks: false
            }
        );
        let got: Vec<(usize, u64)> = out.iter().map(|e| (e.vm, e.index)).collect();
        assert_eq!(
            got,
            [
                (1, 100),
                (1, 101),
                (1, 102),
                (1, 103),
                (1, 104),
                (0, 0),
                (0, 1),
                (0, 2)
            ]
        );
        assert_eq!((c.cached(0), c.cached(1)), (11, 10));
        // Asking for 10 more: VM 1 is at its watermark and left out; VM 0 gives 1 (11 → 10);
        // then every VM is at its watermark.
        out.clear();
        let s = c.reclaim(10, 40, &mut out);
        assert_eq!(
            s,
            ReclaimStats {
                scanned: 1,
                decremented: 0,
                evicted: 1,
                at_watermarks: true
            }
        );
        assert_eq!(
            out,
            [Evicted {
                vm: 0,
                index: 3,
                frame: 3
            }]
        );
        // Nothing left to reclaim: nothing scanned.
        out.clear();
        let s = c.reclaim(5, 40, &mut out);
        assert_eq!(
            s,
            ReclaimStats {
                scanned: 0,
                decremented: 0,
                evicted: 0,
                at_watermarks: true
            }
        );
        assert!(out.is_empty());
        c.validate().unwrap();
    }

    /// Recency is the VM's most recent request of any kind: a bypassed first request of a new
    /// page makes VM 1 the more recent, so VM 0 goes first. A VM at or below its watermark is
    /// left out even when it is the least recent: VM 2 (never requested, nothing cached).
    /// 60 frames, 3 VMs → watermark 10. VM 0: 12 pages (stamps 1–24), VM 1: 12 pages (stamps
    /// 25–48), then VM 1 requests page 999 (stamp 49, bypassed) and VM 0 nothing. Asking for
    /// 3: VM 0 gives 2 (12 → 10), VM 1 gives 1.
    #[test]
    fn recency_counts_bypassed_requests_and_skips_vms_at_their_watermark() {
        let mut c = Cacol::new(3);
        let mut now = 0;
        fill(&mut c, 0, 0, 12, &mut now);
        fill(&mut c, 1, 0, 12, &mut now);
        assert_eq!(c.request(1, 999, 49), Admit::Bypass);
        assert_eq!(
            (c.last_request(0), c.last_request(1), c.last_request(2)),
            (Some(24), Some(49), None)
        );
        let mut out = Vec::new();
        let s = c.reclaim(3, 60, &mut out);
        assert_eq!((s.evicted, s.at_watermarks), (3, false));
        let got: Vec<(usize, u64)> = out.iter().map(|e| (e.vm, e.index)).collect();
        assert_eq!(got, [(0, 0), (0, 1), (1, 0)]);
        // Now VM 0 is the more recent: it requests again.
        now = 50;
        access(&mut c, 0, 5, now, 5); // hit
        out.clear();
        c.reclaim(1, 60, &mut out);
        assert_eq!(
            out,
            [Evicted {
                vm: 1,
                index: 1,
                frame: 1
            }]
        );
        c.validate().unwrap();
    }

    #[test]
    fn threshold_must_be_positive() {
        assert!(Cacol::with_threshold(2, 0).is_err());
        assert!(Cacol::with_threshold(0, 2).is_err());
        // Threshold 1: a page admitted at count 2 survives one pass (2 → 1), then goes.
        let mut c = Cacol::with_threshold(1, 1).unwrap();
        access(&mut c, 0, 3, 1, 30);
        access(&mut c, 0, 3, 2, 30);
        let mut out = Vec::new();
        let s = c.reclaim(1, 0, &mut out);
        assert_eq!((s.scanned, s.decremented, s.evicted), (2, 1, 1));
        assert_eq!(c.count(0, 3), 1);
        assert_eq!(c.request(0, 3, 3), Admit::Insert);
        c.validate().unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Random requests (with and without a frame given), invalidations and reclaims over 3
        /// VMs and 12 pages each: `validate` holds after every step; every count is the
        /// page's requests less the clock's decrements; reclaim hands back exactly the frames
        /// given, never takes a VM below its watermark, goes through the VMs least recent
        /// first, and stops short only when every VM is at its watermark.
        #[test]
        fn random_sequences_keep_invariants(
            threshold in 1u32..4,
            ops in proptest::collection::vec((0u8..6, 0usize..3, 0u64..12, 0u64..8, 0u64..40), 1..300),
        ) {
            let mut c = Cacol::with_threshold(3, threshold).unwrap();
            let mut held: HashMap<(usize, u64), FrameId> = HashMap::new();
            let (mut requests, mut decrements) = (0u64, 0u64);
            let mut next_frame: FrameId = 0;
            for (now, (kind, vm, index, nr, avail)) in ops.into_iter().enumerate() {
                let now = now as u64;
                match kind {
                    0..=2 => {
                        requests += 1;
                        let before = c.count(vm, index);
                        match c.request(vm, index, now) {
                            Admit::Bypass => proptest::prop_assert_eq!(before, 0),
                            Admit::Hit(f) => proptest::prop_assert_eq!(held.get(&(vm, index)), Some(&f)),
                            Admit::Insert => {
                                proptest::prop_assert!(before >= 1 && !held.contains_key(&(vm, index)));
                                // kind 2: the caller found no frame.
                                if kind != 2 {
                                    c.insert(vm, index, next_frame);
                                    held.insert((vm, index), next_frame);
                                    next_frame += 1;
                                }
                            }
                        }
                    }
                    3 => {
                        proptest::prop_assert_eq!(c.remove(vm, index), held.remove(&(vm, index)));
                    }
                    _ => {
                        let before: Vec<u64> = (0..3).map(|v| c.cached(v)).collect();
                        let wm = c.low_watermark(avail);
                        let mut out = Vec::new();
                        let s = c.reclaim(nr, avail, &mut out);
                        decrements += s.decremented;
                        proptest::prop_assert_eq!(s.scanned, s.decremented + s.evicted);
                        proptest::prop_assert_eq!(s.evicted, out.len() as u64);
                        proptest::prop_assert!(s.evicted <= nr);
                        for e in &out {
                            proptest::prop_assert_eq!(held.remove(&(e.vm, e.index)), Some(e.frame));
                        }
                        let key = |v: usize| (c.last_request(v), v);
                        for w in out.windows(2) {
                            proptest::prop_assert!(key(w[0].vm) <= key(w[1].vm));
                        }
                        for (v, &was) in before.iter().enumerate() {
                            let after = c.cached(v);
                            proptest::prop_assert!(after >= wm.min(was));
                            // A VM less recent than the last one reclaimed from is spent.
                            if let Some(last) = out.last() {
                                if key(v) < key(last.vm) {
                                    proptest::prop_assert!(after <= wm);
                                }
                            }
                            if s.at_watermarks {
                                proptest::prop_assert!(after <= wm);
                            }
                        }
                        proptest::prop_assert_eq!(s.at_watermarks, nr > 0 && s.evicted < nr);
                    }
                }
                c.validate().map_err(proptest::test_runner::TestCaseError::fail)?;
                let counts: u64 = (0..3)
                    .flat_map(|v| (0..12).map(move |i| (v, i)))
                    .map(|(v, i)| c.count(v, i) as u64)
                    .sum();
                proptest::prop_assert_eq!(counts, requests - decrements);
                proptest::prop_assert_eq!(c.total_cached(), held.len() as u64);
            }
        }
    }
}

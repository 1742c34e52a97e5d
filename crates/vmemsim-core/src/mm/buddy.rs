//! A zone's buddy allocator with migratetypes, as Linux 6.1 and 6.8 run it for order-0
//! movable allocations and the kernel's order-0 and order-1 slab pages (mm/page_alloc.c):
//! free chunks of order 0..=10 on per-order,
//! per-migratetype lists, pageblocks of 512 pages (`pageblock_order` 9 on x86-64) that each
//! have a migratetype, and the fallback that steals from another migratetype's lists when
//! the wanted one is empty. A fallback from a chunk smaller than a pageblock is what boosts
//! the zone's watermarks (`boost_watermark`); the engine does the boost
//! ([`Buddy::take_boosts`]).
//!
//! What follows the kernel:
//! - `__rmqueue_smallest`: the first chunk (`list_first_entry`) of the lowest order with one
//!   on the wanted list; `expand` gives the lowest page and puts the upper halves back on
//!   that list.
//! - `__rmqueue_fallback` (no `ALLOC_NOFRAGMENT`): the largest order, down to the wanted one, whose free
//!   list of a fallback type (`fallbacks[]`: movable → reclaimable, unmovable) is not empty;
//!   a movable allocation that may not steal the whole block (`can_steal_fallback`: order
//!   below `pageblock_order / 2`) takes the smallest such chunk instead (`find_smallest`).
//!   Then `steal_suitable_fallback`: a chunk of a pageblock or more changes its blocks'
//!   type (`change_pageblock_range`, no boost); a smaller one boosts, and when it may steal
//!   the whole block, `move_freepages_block` moves the block's free chunks to the movable
//!   lists and the block becomes movable when its free pages plus its movable pages in use
//!   are at least half of it; otherwise only the chunk moves (`move_to_free_list`).
//!   `__rmqueue` then retries.
//! - `__free_one_page`: the page goes to the list of its pageblock's migratetype, merging
//!   with its free buddy while there is one (every migratetype here merges with every
//!   other), at the list's tail when the buddy of the merged chunk's parent is free
//!   (`buddy_merge_likely`), at its head otherwise.
//!
//! - The per-CPU lists (`per_cpu_pages`, Linux 6.1, one CPU) when the zone has them
//!   ([`Buddy::set_pcp`]): `rmqueue_pcplist` (a list refilled by `rmqueue_bulk`),
//!   `free_unref_page_commit`, `nr_pcp_high` (`ZONE_RECLAIM_ACTIVE`), `nr_pcp_free` and
//!   `free_pcppages_bulk`. Their pages are out of [`Buddy::n_free`], as out of
//!   `NR_FREE_PAGES`.
//!
//! Left out: 6.8's auto-tuned per-CPU `high`, the kernel's allocations other than its
//! reclaimable slab (page tables,
//! unmovable slab, bios: what they held before the phase stays held, and they never fall
//! back),
//! `ALLOC_NOFRAGMENT` (a zone above ZONE_DMA32 first tries the other zones before
//! fragmenting a pageblock), MIGRATE_HIGHATOMIC, CMA and isolation, compaction.

use serde::{Deserialize, Serialize};

/// `pageblock_order` (x86-64 with 4 KiB pages: `HUGETLB_PAGE_ORDER`, 9).
pub const PAGEBLOCK_ORDER: u32 = 9;
/// Pages per pageblock.
pub const PAGEBLOCK_PAGES: u32 = 1 << PAGEBLOCK_ORDER;
/// Orders 0..=10 (`MAX_ORDER` 11 in Linux 6.1; 6.8 calls the largest order `MAX_PAGE_ORDER`, 10).
pub const NR_ORDERS: usize = 11;
/// `MIGRATE_UNMOVABLE`, `MIGRATE_MOVABLE`, `MIGRATE_RECLAIMABLE`: the kernel's order.
pub const UNMOVABLE: usize = 0;
pub const MOVABLE: usize = 1;
pub const RECLAIMABLE: usize = 2;
pub const MIGRATE_TYPES: usize = 3;
const NAMES: [&str; MIGRATE_TYPES] = ["unmovable", "movable", "reclaimable"];
/// `fallbacks[]` (mm/page_alloc.c, 6.1 and 6.8).
const FALLBACKS: [[usize; 2]; MIGRATE_TYPES] = [
    [RECLAIMABLE, MOVABLE],
    [RECLAIMABLE, UNMOVABLE],
    [UNMOVABLE, MOVABLE],
];

const NIL: u32 = u32::MAX;
/// The largest zone modelled, in pages (256 GiB): its per-page arrays take 14 bytes a page.
const MAX_SPAN: u64 = 1 << 26;
const NOT_FREE: u8 = u8::MAX;

/// A zone's free lists and pageblocks as `/proc/pagetypeinfo` prints them: `blocks[t]`
/// pageblocks of migratetype `t` ("Number of blocks type") and `free[t][o]` free chunks of
/// order `o` on type `t`'s lists ("Free pages count per migrate type at order"), types in
/// the kernel's order: unmovable, movable, reclaimable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PageTypes {
    pub blocks: [u32; MIGRATE_TYPES],
    pub free: [[u32; NR_ORDERS]; MIGRATE_TYPES],
}

impl PageTypes {
    /// Free pages on type `t`'s lists.
    pub fn free_pages(&self, t: usize) -> u64 {
        self.free[t]
            .iter()
            .enumerate()
            .map(|(o, &n)| (n as u64) << o)
            .sum()
    }
}

/// What one allocation's fallback did (`trace_mm_page_alloc_extfrag`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fallback {
    /// The order of the chunk taken from the other type's list.
    pub order: u8,
    /// The type whose list it came from.
    pub from: u8,
    /// Whether its pageblock changed type (`change_ownership`).
    pub claimed: bool,
}

#[derive(Clone, Debug)]
pub struct Buddy {
    block_mt: Vec<u8>,
    /// Per pfn: the order of the free chunk it heads, or `NOT_FREE`.
    order_of: Vec<u8>,
    /// Per free head: the list it is on.
    list_of: Vec<u8>,
    next: Vec<u32>,
    prev: Vec<u32>,
    head: [[u32; NR_ORDERS]; MIGRATE_TYPES],
    tail: [[u32; NR_ORDERS]; MIGRATE_TYPES],
    nr_free: u32,
    /// Pages on each type's lists.
    list_pages: [u32; MIGRATE_TYPES],
    /// The zone's frames (the pages that can be free) by index, and back.
    pfn_of: Vec<u32>,
    frame_of: Vec<u32>,
    /// Frames in use per pageblock (movable pages: `move_freepages_block`'s `movable_pages`).
    used: Vec<u16>,
    /// Fallbacks from a chunk below a pageblock since the last [`Buddy::take_boosts`].
    boosts: u32,
    /// Every fallback, for the counters.
    pub fallbacks: u64,
    pub last_fallback: Option<Fallback>,
    /// The per-CPU page lists, when the zone has them ([`Buddy::set_pcp`]).
    pcp: Option<Box<Pcp>>,
}

/// Orders with per-CPU lists: 0..=`PAGE_ALLOC_COSTLY_ORDER` (3).
pub const PCP_ORDERS: usize = 4;

/// A zone's `per_cpu_pages` for its one CPU (Linux 6.1, mm/page_alloc.c): chunks of order
/// 0..=3 per migratetype, pfns, the list's head first; `count` pages in all.
#[derive(Clone, Debug)]
struct Pcp {
    lists: [[std::collections::VecDeque<u32>; PCP_ORDERS]; MIGRATE_TYPES],
    count: u32,
    batch: u32,
    high: u32,
    free_factor: u32,
    reclaim_active: bool,
}

impl Buddy {
    /// The zone laid out from `pt`, then brought to `frames` free pages: the pageblocks
    /// unmovable first, then reclaimable, then movable; each chunk below a pageblock in the
    /// lower half of a region twice its size whose upper half is held, so that no two free
    /// buddies are left unmerged, as in the kernel; the pages no chunk covers are held (the
    /// kernel's own and other users'). `/proc/pagetypeinfo` is read a moment before the
    /// zone's free pages are: when it shows more free pages than `frames`, the excess is
    /// allocated as movable pages (`__rmqueue`, falling back if it must) and held; when
    /// fewer, held pages are freed (`__free_one_page`), those of movable pageblocks first,
    /// lowest first.
    /// The zone's frames are then its free pages in pfn order. Errors name what does not fit.
    pub fn from_pagetypes(pt: &PageTypes, frames: u32) -> Result<Buddy, String> {
        let chunks = pt.free;
        // What the zone spans, checked before anything is allocated for it.
        let nb: u64 = pt.blocks.iter().map(|&b| b as u64).sum();
        if nb == 0 {
            return Err("no pageblocks".into());
        }
        if nb * PAGEBLOCK_PAGES as u64 > MAX_SPAN {
            return Err(format!(
                "{nb} pageblocks: a zone of at most {} pageblocks (256 GiB) is modelled",
                MAX_SPAN / PAGEBLOCK_PAGES as u64
            ));
        }
        let listed: u64 = (0..MIGRATE_TYPES).map(|t| pt.free_pages(t)).sum();
        if listed > nb * PAGEBLOCK_PAGES as u64 {
            return Err(format!(
                "{listed} free pages on the lists, more than the {nb} pageblocks hold"
            ));
        }
        // Pageblocks: unmovable, then reclaimable, then movable.
        let mut block_mt: Vec<u8> = Vec::new();
        for t in [UNMOVABLE, RECLAIMABLE, MOVABLE] {
            block_mt.extend(std::iter::repeat_n(t as u8, pt.blocks[t] as usize));
        }
        let placed = layout(&block_mt, &chunks)?;
        let span = block_mt.len() * PAGEBLOCK_PAGES as usize;
        let n_pt: u64 = (0..MIGRATE_TYPES).map(|t| pt.free_pages(t)).sum();
        if frames as u64 > span as u64 {
            return Err(format!(
                "{frames} free pages do not fit in the zone's {} pageblocks",
                block_mt.len()
            ));
        }
        let mut b = Buddy {
            block_mt,
            order_of: vec![NOT_FREE; span],
            list_of: vec![0; span],
            next: vec![NIL; span],
            prev: vec![NIL; span],
            head: [[NIL; NR_ORDERS]; MIGRATE_TYPES],
            tail: [[NIL; NR_ORDERS]; MIGRATE_TYPES],
            nr_free: 0,
            list_pages: [0; MIGRATE_TYPES],
            pfn_of: Vec::with_capacity(frames as usize),
            frame_of: vec![NIL; span],
            used: vec![0; span / PAGEBLOCK_PAGES as usize],
            boosts: 0,
            fallbacks: 0,
            last_fallback: None,
            pcp: None,
        };
        for (t, o, pfn) in placed {
            b.add(pfn, o, t, true);
        }
        if n_pt > frames as u64 {
            for _ in 0..n_pt - frames as u64 {
                b.alloc_pfn(MOVABLE, 0).expect("free pages left");
            }
        } else if n_pt < frames as u64 {
            let mut need = frames as u64 - n_pt;
            let mut held = vec![true; span];
            for p in 0..span {
                let o = b.order_of[p];
                if o != NOT_FREE {
                    held[p..p + (1 << o)].fill(false);
                }
            }
            // Movable pageblocks' held pages first, then the others'.
            for movable in [true, false] {
                for p in 0..span as u32 {
                    if need == 0 {
                        break;
                    }
                    let blk = (p / PAGEBLOCK_PAGES) as usize;
                    if held[p as usize] && (b.block_mt[blk] as usize == MOVABLE) == movable {
                        held[p as usize] = false;
                        b.free_pfn(p);
                        need -= 1;
                    }
                }
            }
            debug_assert_eq!(need, 0, "frames <= span was checked");
        }
        b.fallbacks = 0;
        b.boosts = 0;
        b.last_fallback = None;
        let mut p = 0usize;
        while p < span {
            let o = b.order_of[p];
            if o == NOT_FREE {
                p += 1;
                continue;
            }
            for q in p..p + (1 << o) {
                b.frame_of[q] = b.pfn_of.len() as u32;
                b.pfn_of.push(q as u32);
            }
            p += 1 << o;
        }
        debug_assert_eq!(b.pfn_of.len(), frames as usize);
        Ok(b)
    }

    pub fn n_free(&self) -> u32 {
        self.nr_free
    }
    /// Free pages on migratetype `t`'s lists.
    pub fn list_pages(&self, t: usize) -> u32 {
        self.list_pages[t]
    }
    /// Pageblocks of each migratetype.
    pub fn blocks(&self) -> [u32; MIGRATE_TYPES] {
        let mut n = [0; MIGRATE_TYPES];
        for &t in &self.block_mt {
            n[t as usize] += 1;
        }
        n
    }
    /// Free chunks per type and order (`/proc/pagetypeinfo`'s first table).
    pub fn pagetypes(&self) -> PageTypes {
        let mut free = [[0u32; NR_ORDERS]; MIGRATE_TYPES];
        for (p, &o) in self.order_of.iter().enumerate() {
            if o != NOT_FREE {
                free[self.list_of[p] as usize][o as usize] += 1;
            }
        }
        PageTypes {
            blocks: self.blocks(),
            free,
        }
    }
    /// Fallbacks that boosted the zone since the last call.
    pub fn take_boosts(&mut self) -> u32 {
        std::mem::take(&mut self.boosts)
    }

    fn add(&mut self, pfn: u32, order: usize, t: usize, to_tail: bool) {
        let p = pfn as usize;
        self.order_of[p] = order as u8;
        self.list_of[p] = t as u8;
        if to_tail {
            let old = self.tail[t][order];
            self.prev[p] = old;
            self.next[p] = NIL;
            if old == NIL {
                self.head[t][order] = pfn;
            } else {
                self.next[old as usize] = pfn;
            }
            self.tail[t][order] = pfn;
        } else {
            let old = self.head[t][order];
            self.next[p] = old;
            self.prev[p] = NIL;
            if old == NIL {
                self.tail[t][order] = pfn;
            } else {
                self.prev[old as usize] = pfn;
            }
            self.head[t][order] = pfn;
        }
        self.nr_free += 1 << order;
        self.list_pages[t] += 1 << order;
    }

    fn del(&mut self, pfn: u32) -> (usize, usize) {
        let p = pfn as usize;
        let (o, t) = (self.order_of[p] as usize, self.list_of[p] as usize);
        let (n, pr) = (self.next[p], self.prev[p]);
        if pr == NIL {
            self.head[t][o] = n;
        } else {
            self.next[pr as usize] = n;
        }
        if n == NIL {
            self.tail[t][o] = pr;
        } else {
            self.prev[n as usize] = pr;
        }
        self.order_of[p] = NOT_FREE;
        self.nr_free -= 1 << o;
        self.list_pages[t] -= 1 << o;
        (o, t)
    }

    /// `move_to_free_list`: to the tail of type `t`'s list of its order.
    fn move_to(&mut self, pfn: u32, t: usize) {
        let (o, _) = self.del(pfn);
        self.add(pfn, o, t, true);
    }

    /// `__rmqueue_smallest`: the first chunk of the lowest order at least `order` on type
    /// `t`'s lists.
    fn smallest(&mut self, t: usize, order: usize) -> Option<u32> {
        let o = (order..NR_ORDERS).find(|&o| self.head[t][o] != NIL)?;
        let pfn = self.head[t][o];
        self.del(pfn);
        // `expand`: the upper halves back on the list, largest first.
        for h in (order..o).rev() {
            self.add(pfn + (1 << h), h, t, false);
        }
        Some(pfn)
    }

    /// The first fallback type with a chunk of order `o` (`find_suitable_fallback`).
    fn suitable(&self, o: usize, t: usize) -> Option<usize> {
        FALLBACKS[t]
            .iter()
            .copied()
            .find(|&f| self.head[f][o] != NIL)
    }

    /// `can_steal_fallback`.
    fn can_steal(o: usize, t: usize) -> bool {
        o >= PAGEBLOCK_ORDER as usize / 2 || t != MOVABLE
    }

    /// `__rmqueue_fallback` for an allocation of type `t` and `order` (`min_order`: no
    /// `ALLOC_NOFRAGMENT`); whether it moved a chunk.
    fn fallback(&mut self, t: usize, order: usize) -> bool {
        let mut found = None;
        for o in (order..NR_ORDERS).rev() {
            let Some(f) = self.suitable(o, t) else {
                continue;
            };
            let mut pick = (o, f, Self::can_steal(o, t));
            if !pick.2 && t == MOVABLE && o > order {
                // find_smallest
                let o2 = (order..NR_ORDERS)
                    .find(|&o2| self.suitable(o2, t).is_some())
                    .expect("order o has one");
                let f2 = self.suitable(o2, t).expect("found");
                pick = (o2, f2, Self::can_steal(o2, t));
            }
            found = Some(pick);
            break;
        }
        let Some((o, f, whole_block)) = found else {
            return false;
        };
        let pfn = self.head[f][o];
        self.fallbacks += 1;
        let blk = (pfn / PAGEBLOCK_PAGES) as usize;
        let mut claimed = false;
        if o >= PAGEBLOCK_ORDER as usize {
            // change_pageblock_range
            for b in blk..blk + (1 << (o - PAGEBLOCK_ORDER as usize)) {
                self.block_mt[b] = t as u8;
            }
            claimed = true;
            self.move_to(pfn, t);
        } else {
            self.boosts += 1;
            let mut single = !whole_block;
            if whole_block {
                // move_freepages_block
                let start = blk as u32 * PAGEBLOCK_PAGES;
                let mut free_pages = 0u32;
                let mut p = start;
                while p < start + PAGEBLOCK_PAGES {
                    let po = self.order_of[p as usize];
                    if po == NOT_FREE {
                        p += 1;
                        continue;
                    }
                    self.move_to(p, t);
                    free_pages += 1 << po;
                    p += 1 << po;
                }
                let movable_pages = self.used[blk] as u32;
                let alike = if t == MOVABLE {
                    movable_pages
                } else if self.block_mt[blk] as usize == MOVABLE {
                    PAGEBLOCK_PAGES - (free_pages + movable_pages)
                } else {
                    0
                };
                if free_pages == 0 {
                    single = true;
                } else if free_pages + alike >= PAGEBLOCK_PAGES / 2 {
                    self.block_mt[blk] = t as u8;
                    claimed = true;
                }
            }
            if single {
                self.move_to(pfn, t);
            }
        }
        self.last_fallback = Some(Fallback {
            order: o as u8,
            from: f as u8,
            claimed,
        });
        true
    }

    /// An order-0 page of type `t` (`__rmqueue`): the zone-local frame index, or `None`
    /// when the zone has no free page at all.
    pub fn alloc(&mut self, t: usize) -> Option<u32> {
        self.alloc_order(t, 0)
    }

    /// A chunk of `1 << order` pages of type `t` (`__rmqueue`): the zone-local frame index of
    /// its first page (its pages are consecutive frames), or `None` when the zone has no free
    /// chunk of that order or more on any list. Each page is given back on its own
    /// ([`Buddy::free`]); they merge again as the kernel's `__free_one_page` of the chunk
    /// would.
    pub fn alloc_order(&mut self, t: usize, order: usize) -> Option<u32> {
        let pfn = if self.pcp.is_some() && order < PCP_ORDERS {
            self.pcp_alloc(t, order)?
        } else {
            self.alloc_pfn(t, order)?
        };
        self.used[(pfn / PAGEBLOCK_PAGES) as usize] += 1 << order;
        let f = self.frame_of[pfn as usize];
        debug_assert_ne!(f, NIL, "a held page was free");
        debug_assert!((1..1u32 << order).all(|k| self.frame_of[(pfn + k) as usize] == f + k));
        Some(f)
    }

    fn alloc_pfn(&mut self, t: usize, order: usize) -> Option<u32> {
        loop {
            if let Some(pfn) = self.smallest(t, order) {
                return Some(pfn);
            }
            if !self.fallback(t, order) {
                return None;
            }
        }
    }

    /// Free the page of frame index `i`: onto the per-CPU lists when the zone has them
    /// ([`Buddy::set_pcp`]), else `__free_one_page` with its pageblock's migratetype.
    pub fn free(&mut self, i: u32) {
        self.free_order(i, 0);
    }

    /// Free the chunk of `1 << order` frames from frame index `i`, as
    /// [`Buddy::alloc_order`] gave it.
    pub fn free_order(&mut self, i: u32, order: usize) {
        let pfn = self.pfn_of[i as usize];
        let blk = (pfn / PAGEBLOCK_PAGES) as usize;
        debug_assert!(self.used[blk] >= 1 << order);
        self.used[blk] -= 1 << order;
        let t = self.block_mt[blk] as usize;
        if self.pcp.is_some() && order < PCP_ORDERS {
            self.pcp_free(pfn, order, t);
        } else {
            self.free_chunk(pfn, order, t);
        }
    }

    fn free_pfn(&mut self, pfn: u32) {
        let t = self.block_mt[(pfn / PAGEBLOCK_PAGES) as usize] as usize;
        self.free_chunk(pfn, 0, t);
    }

    /// `__free_one_page` of a chunk of `order` onto type `t`'s lists.
    fn free_chunk(&mut self, pfn: u32, order: usize, t: usize) {
        let mut pfn = pfn;
        let span = self.order_of.len() as u32;
        let mut o = order;
        let mut buddy = pfn ^ (1 << o);
        while o < NR_ORDERS - 1 {
            buddy = pfn ^ (1 << o);
            if buddy >= span || self.order_of[buddy as usize] as usize != o {
                break;
            }
            self.del(buddy);
            pfn &= buddy;
            o += 1;
        }
        // buddy_merge_likely
        let to_tail = o < NR_ORDERS - 2 && {
            let higher = buddy & pfn;
            let hb = higher ^ (2 << o);
            hb < span && self.order_of[hb as usize] as usize == o + 1
        };
        self.add(pfn, o, t, to_tail);
    }

    /// Give the zone per-CPU page lists (one CPU) of `batch` and `high`
    /// (`zone_set_pageset_high_and_batch`), empty; before any allocation.
    pub fn set_pcp(&mut self, batch: u32, high: u32) {
        self.pcp = Some(Box::new(Pcp {
            lists: Default::default(),
            count: 0,
            batch: batch.max(1),
            high,
            free_factor: 0,
            reclaim_active: false,
        }));
    }

    /// `ZONE_RECLAIM_ACTIVE`: set while kswapd balances the node for this zone
    /// (`set_reclaim_active` / `clear_reclaim_active` in `balance_pgdat`).
    pub fn set_reclaim_active(&mut self, on: bool) {
        if let Some(p) = self.pcp.as_mut() {
            p.reclaim_active = on;
        }
    }

    /// Pages on the per-CPU lists (not free: `NR_FREE_PAGES` leaves them out).
    pub fn pcp_pages(&self) -> u32 {
        self.pcp.as_ref().map_or(0, |p| p.count)
    }

    /// `drain_all_pages` (one CPU): every page on the per-CPU lists back to the buddy lists.
    pub fn drain_pcp(&mut self) {
        let n = self.pcp_pages();
        if n > 0 {
            self.free_pcppages_bulk(n, 0);
        }
    }

    /// `rmqueue_pcplist` → `__rmqueue_pcplist`: the head of the per-CPU list of (`t`,
    /// `order`), refilled when empty by `rmqueue_bulk` with `batch` chunks (`max(batch >>
    /// order, 2)` when batch > 1), each taken by `__rmqueue` (falling back if it must) and
    /// added at the list's tail.
    fn pcp_alloc(&mut self, t: usize, order: usize) -> Option<u32> {
        let p = self.pcp.as_mut().expect("per-CPU lists");
        p.free_factor >>= 1;
        if p.lists[t][order].is_empty() {
            let batch = if p.batch > 1 {
                (p.batch >> order).max(2)
            } else {
                p.batch
            };
            for _ in 0..batch {
                let Some(pfn) = self.alloc_pfn(t, order) else {
                    break;
                };
                let p = self.pcp.as_mut().expect("per-CPU lists");
                p.lists[t][order].push_back(pfn);
                p.count += 1 << order;
            }
        }
        let p = self.pcp.as_mut().expect("per-CPU lists");
        let pfn = p.lists[t][order].pop_front()?;
        p.count -= 1 << order;
        Some(pfn)
    }

    /// `free_unref_page_commit` (Linux 6.1): the chunk to the head of the per-CPU list of its
    /// pageblock's migratetype; past `nr_pcp_high` (`high`, or `min(batch << 2, high)` while
    /// reclaim is active; 0 when a high-order page is freed after frees without an
    /// allocation: `free_high`), `free_pcppages_bulk` of `nr_pcp_free` pages, starting with
    /// this list.
    fn pcp_free(&mut self, pfn: u32, order: usize, t: usize) {
        let p = self.pcp.as_mut().expect("per-CPU lists");
        p.lists[t][order].push_front(pfn);
        p.count += 1 << order;
        let free_high = p.free_factor > 0 && order > 0;
        let high = if free_high {
            0
        } else if p.reclaim_active {
            (p.batch << 2).min(p.high)
        } else {
            p.high
        };
        if p.count < high {
            return;
        }
        // nr_pcp_free
        let n = if free_high {
            p.count
        } else if high < p.batch {
            1
        } else {
            let (min, max) = (p.batch, high - p.batch);
            let b = p.batch.checked_shl(p.free_factor).unwrap_or(u32::MAX);
            if b < max {
                p.free_factor += 1;
            }
            b.clamp(min, max.max(min))
        };
        self.free_pcppages_bulk(n, order * MIGRATE_TYPES + t);
    }

    /// `free_pcppages_bulk`: `count` pages (at most all) from the per-CPU lists to the buddy
    /// lists, the lists taken round-robin in `pindex` order (`MIGRATE_PCPTYPES * order +
    /// migratetype`) from `first`, each emptied from its tail before the next is taken.
    fn free_pcppages_bulk(&mut self, count: u32, first: usize) {
        let nl = PCP_ORDERS * MIGRATE_TYPES;
        let mut count = count.min(self.pcp_pages()) as i64;
        let mut pindex = first + nl - 1;
        while count > 0 {
            let (order, t) = loop {
                pindex = (pindex + 1) % nl;
                let (o, t) = (pindex / MIGRATE_TYPES, pindex % MIGRATE_TYPES);
                if !self.pcp.as_ref().expect("per-CPU lists").lists[t][o].is_empty() {
                    break (o, t);
                }
            };
            loop {
                let p = self.pcp.as_mut().expect("per-CPU lists");
                let Some(pfn) = p.lists[t][order].pop_back() else {
                    break;
                };
                p.count -= 1 << order;
                count -= 1 << order;
                // (the migratetype the page had when it was freed: `get_pcppage_migratetype`)
                self.free_chunk(pfn, order, t);
                if count <= 0 {
                    break;
                }
            }
        }
    }

    /// Check the lists against the pfns (tests and `check_invariants`).
    pub fn validate(&self) -> Result<(), String> {
        let mut n = 0u32;
        let mut pages = [0u32; MIGRATE_TYPES];
        for (t, pages) in pages.iter_mut().enumerate() {
            for o in 0..NR_ORDERS {
                let mut p = self.head[t][o];
                let mut prev = NIL;
                while p != NIL {
                    if self.order_of[p as usize] as usize != o
                        || self.list_of[p as usize] as usize != t
                    {
                        return Err(format!("pfn {p} on list ({t}, {o}) is not such a head"));
                    }
                    if self.prev[p as usize] != prev {
                        return Err(format!("pfn {p}: broken prev link"));
                    }
                    if !p.is_multiple_of(1 << o) {
                        return Err(format!("pfn {p} heads an unaligned chunk of order {o}"));
                    }
                    n += 1 << o;
                    *pages += 1 << o;
                    prev = p;
                    p = self.next[p as usize];
                }
            }
        }
        if n != self.nr_free || pages != self.list_pages {
            return Err(format!(
                "free count {} but the lists hold {n}",
                self.nr_free
            ));
        }
        Ok(())
    }
}

/// Where the free chunks `chunks[t][o]` lie in a zone of pageblocks `block_mt`: (list type,
/// order, first pfn) of each. `/proc/pagetypeinfo` gives counts, not places, so this picks
/// places the kernel could have left: chunks naturally aligned, no two overlapping, no two
/// free buddies of one order unmerged; each in a pageblock of its list's type where one has
/// room (a chunk can sit in a block of another type after a fallback moved it), largest
/// first, lowest pfn first. A chunk with no such place is split in two halves (the pages
/// and their list stay), down to single pages, which may then sit beside a free buddy.
fn layout(
    block_mt: &[u8],
    chunks: &[[u32; NR_ORDERS]; MIGRATE_TYPES],
) -> Result<Vec<(usize, usize, u32)>, String> {
    let nb = block_mt.len();
    let span = nb * PAGEBLOCK_PAGES as usize;
    let mut used = vec![false; span];
    let mut head = vec![NOT_FREE; span];
    let mut out = Vec::new();
    // Chunks to place, largest first: (order, type, count).
    let mut todo = [[0u32; MIGRATE_TYPES]; NR_ORDERS];
    for (t, row) in chunks.iter().enumerate() {
        for (o, &n) in row.iter().enumerate() {
            todo[o][t] = n;
        }
    }
    for o in (0..NR_ORDERS).rev() {
        let size = 1usize << o;
        for t in [UNMOVABLE, RECLAIMABLE, MOVABLE] {
            for _ in 0..todo[o][t] {
                // Blocks of the list's type first, then the others.
                let fits = |x: usize, used: &[bool], head: &[u8], strict: bool| {
                    x + size <= span
                        && !used[x..x + size].iter().any(|&u| u)
                        && (!strict || o == NR_ORDERS - 1 || {
                            // (the largest order has no buddy to merge with)
                            let bud = x ^ size;
                            bud >= span || head[bud] as usize != o
                        })
                };
                let own = |x: usize| block_mt[x / PAGEBLOCK_PAGES as usize] as usize == t;
                let mut spot = None;
                'find: for pass in 0..2 {
                    let mut x = 0;
                    while x < span {
                        if (pass == 0) == own(x) && fits(x, &used, &head, true) {
                            spot = Some(x);
                            break 'find;
                        }
                        x += size;
                    }
                }
                if spot.is_none() && o == 0 {
                    spot = (0..span).find(|&x| !used[x]);
                }
                match spot {
                    Some(x) => {
                        used[x..x + size].fill(true);
                        head[x] = o as u8;
                        out.push((t, o, x as u32));
                    }
                    None if o > 0 => todo[o - 1][t] += 2,
                    None => return Err(format!("{} free pages do not fit", NAMES[t])),
                }
            }
        }
    }
    out.sort_by_key(|&(_, _, p)| p);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ZONE_DMA of the 160 MiB guest (Linux 6.1, /proc/pagetypeinfo just before the phase):
    /// one unmovable block with chunks of order 5, 6 and 7 (224 pages), seven movable blocks
    /// with one chunk of order 9 and three of order 10 (3,584 pages).
    fn dma() -> PageTypes {
        let mut free = [[0; NR_ORDERS]; MIGRATE_TYPES];
        free[UNMOVABLE][5] = 1;
        free[UNMOVABLE][6] = 1;
        free[UNMOVABLE][7] = 1;
        free[MOVABLE][9] = 1;
        free[MOVABLE][10] = 3;
        PageTypes {
            blocks: [1, 7, 0],
            free,
        }
    }

    /// An order-1 `MIGRATE_RECLAIMABLE` allocation (a slab of `radix_tree_node_cachep`) in
    /// ZONE_DMA, which has no reclaimable list: `__rmqueue_fallback` from order 10 down to 1
    /// finds a movable order-10 chunk first (`fallbacks[MIGRATE_RECLAIMABLE]` is unmovable,
    /// movable; the unmovable lists have nothing above order 7); a chunk of a pageblock or
    /// more changes its two blocks' type (`change_pageblock_range`, no boost) and moves to
    /// the reclaimable list; `__rmqueue_smallest` then splits it down to order 1, its upper
    /// halves (orders 9 to 1) left on the reclaimable lists. The two pages given back merge
    /// into the order-10 chunk again, on the (now reclaimable) blocks' list.
    #[test]
    fn an_order_1_reclaimable_allocation_claims_a_movable_chunk() {
        let mut b = Buddy::from_pagetypes(&dma(), 3_808).unwrap();
        let f = b.alloc_order(RECLAIMABLE, 1).unwrap();
        b.validate().unwrap();
        let pt = b.pagetypes();
        assert_eq!(pt.blocks, [1, 5, 2]);
        assert_eq!(pt.free[RECLAIMABLE], [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]);
        assert_eq!(pt.free[MOVABLE], [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!((b.n_free(), b.fallbacks, b.take_boosts()), (3_806, 1, 0));
        assert!(b.last_fallback.unwrap().claimed);
        b.free(f);
        b.free(f + 1);
        b.validate().unwrap();
        let pt = b.pagetypes();
        assert_eq!(pt.free[RECLAIMABLE][10], 1);
        assert_eq!(b.n_free(), 3_808);
    }

    /// The per-CPU lists (Linux 6.1 `rmqueue_pcplist`, `free_unref_page_commit`,
    /// `nr_pcp_free`, `free_pcppages_bulk`), batch 3, high 20, by hand: the first movable
    /// allocation refills the movable list with 3 pages (`rmqueue_bulk`) and takes the first,
    /// so 3 pages leave the free count and 2 wait on the list; a page freed goes onto the
    /// list, not the free lists. Draining puts every page back: the zone is as it began. Then
    /// 12 pages allocated (4 refills) and freed while kswapd runs (`ZONE_RECLAIM_ACTIVE`: high
    /// min(3 << 2, 20) = 12): the 12th free reaches it and `nr_pcp_free` frees batch << 0 =
    /// 3 (between batch and high − batch), leaving 9.
    #[test]
    fn the_per_cpu_lists_hold_freed_pages_and_refill_in_batches() {
        let mut b = Buddy::from_pagetypes(&dma(), 3_808).unwrap();
        b.set_pcp(3, 20);
        let f = b.alloc(MOVABLE).unwrap();
        assert_eq!((b.n_free(), b.pcp_pages()), (3_805, 2));
        b.free(f);
        assert_eq!((b.n_free(), b.pcp_pages()), (3_805, 3));
        b.drain_pcp();
        assert_eq!((b.n_free(), b.pcp_pages()), (3_808, 0));
        b.validate().unwrap();
        assert_eq!(b.pagetypes(), dma());
        let got: Vec<u32> = (0..12).map(|_| b.alloc(MOVABLE).unwrap()).collect();
        assert_eq!((b.n_free(), b.pcp_pages()), (3_796, 0));
        b.set_reclaim_active(true);
        for (k, &f) in got.iter().enumerate() {
            b.free(f);
            if k < 11 {
                assert_eq!(b.pcp_pages(), k as u32 + 1);
            }
        }
        assert_eq!((b.n_free(), b.pcp_pages()), (3_799, 9));
        b.validate().unwrap();
    }

    #[test]
    fn the_layout_keeps_the_kernels_lists() {
        let b = Buddy::from_pagetypes(&dma(), 3_808).unwrap();
        b.validate().unwrap();
        assert_eq!(b.pagetypes(), dma());
        assert_eq!(b.n_free(), 3_808);
        assert_eq!(b.list_pages(UNMOVABLE), 224);
    }

    #[test]
    fn the_free_pages_are_brought_to_the_zones_by_allocating_or_freeing() {
        // 3,800 frames, 8 fewer than the lists hold: 8 movable pages allocated from the
        // smallest movable chunk, the order-9 block (`expand`: its upper halves stay free:
        // orders 3, 4, 5, 6, 7 and 8).
        let b = Buddy::from_pagetypes(&dma(), 3_800).unwrap();
        b.validate().unwrap();
        let pt = b.pagetypes();
        assert_eq!(pt.free[MOVABLE], [0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 3]);
        assert_eq!(pt.free[UNMOVABLE], dma().free[UNMOVABLE]);
        assert_eq!((b.n_free(), b.fallbacks), (3_800, 0));
        // 3,810 frames, 2 more: the movable blocks 1 (order 9) and 2-3, 4-5, 6-7 (order 10)
        // are wholly free, so the unmovable block's lowest held pages are freed: 224 and 225,
        // which merge into an order-1 chunk on the unmovable list. More than the zone spans
        // is an error.
        let b = Buddy::from_pagetypes(&dma(), 3_810).unwrap();
        b.validate().unwrap();
        assert_eq!(
            b.pagetypes().free[UNMOVABLE],
            [0, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0]
        );
        assert!(Buddy::from_pagetypes(&dma(), 4_097).is_err());
        // Down to 200: the 3,584 movable pages go first, then the fallback takes the
        // unmovable block's chunks to the movable lists (order 7 >= 4: the whole block's
        // free pages; 224 < 256, so the block stays unmovable) and 24 more go, from the
        // smallest, the order-5 chunk, whose last 8 pages are left as an order-3 chunk.
        let b = Buddy::from_pagetypes(&dma(), 200).unwrap();
        let pt = b.pagetypes();
        assert_eq!(pt.free[MOVABLE], [0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0]);
        assert_eq!(pt.free[UNMOVABLE], [0; NR_ORDERS]);
        assert_eq!(pt.blocks, [1, 7, 0]);
        assert_eq!(b.n_free(), 200);
    }

    #[test]
    fn impossible_tables_are_errors_before_anything_is_allocated() {
        let mut pt = dma();
        pt.blocks = [0; MIGRATE_TYPES];
        assert_eq!(Buddy::from_pagetypes(&pt, 10).unwrap_err(), "no pageblocks");
        let mut pt = dma();
        pt.blocks = [u32::MAX, u32::MAX, u32::MAX];
        assert!(Buddy::from_pagetypes(&pt, 10)
            .unwrap_err()
            .contains("at most 131072 pageblocks"));
        // 3 x 1024 + 512 + 224 free pages, but only 4 pageblocks (2,048 pages).
        let mut pt = dma();
        pt.blocks = [1, 3, 0];
        assert!(Buddy::from_pagetypes(&pt, 10)
            .unwrap_err()
            .contains("3808 free pages on the lists, more than the 4 pageblocks hold"));
        let mut pt = dma();
        pt.free[RECLAIMABLE][10] = u32::MAX;
        assert!(Buddy::from_pagetypes(&pt, 10).is_err());
    }

    #[test]
    fn fallback_below_a_pageblock_boosts_and_steals_the_block_when_large_enough() {
        let mut b = Buddy::from_pagetypes(&dma(), 3_808).unwrap();
        // The 3,584 movable pages go first, with no fallback.
        for _ in 0..3_584 {
            b.alloc(MOVABLE).unwrap();
        }
        assert_eq!((b.fallbacks, b.take_boosts()), (0, 0));
        assert_eq!(b.list_pages(MOVABLE), 0);
        // The next falls back to the unmovable list's largest chunk, order 7 (>= 4: the
        // whole block may be stolen): one boost, the block's 224 free pages move to the
        // movable lists, and with 0 movable pages in use 224 < 256 keeps the block unmovable.
        b.alloc(MOVABLE).unwrap();
        assert_eq!(b.take_boosts(), 1);
        assert_eq!(
            b.last_fallback,
            Some(Fallback {
                order: 7,
                from: UNMOVABLE as u8,
                claimed: false
            })
        );
        assert_eq!(b.blocks(), [1, 7, 0]);
        assert_eq!((b.list_pages(MOVABLE), b.list_pages(UNMOVABLE)), (223, 0));
        b.validate().unwrap();
        // The other 223 come without a fallback; then the zone is empty.
        for _ in 0..223 {
            b.alloc(MOVABLE).unwrap();
        }
        assert_eq!(b.fallbacks, 1);
        assert_eq!(b.alloc(MOVABLE), None);
    }

    #[test]
    fn a_page_freed_in_an_unmovable_block_goes_to_the_unmovable_list() {
        let mut b = Buddy::from_pagetypes(&dma(), 3_808).unwrap();
        let mut got = Vec::new();
        for _ in 0..3_808 {
            got.push(b.alloc(MOVABLE).unwrap());
        }
        // Frames are numbered by pfn: the unmovable block's 224 free pages were frames 0..224.
        b.free(got.iter().copied().find(|&f| f == 5).unwrap());
        assert_eq!((b.list_pages(UNMOVABLE), b.list_pages(MOVABLE)), (1, 0));
        // A movable allocation now falls back to it: order 0 < 4, so no whole-block steal
        // (find_smallest), a boost, and the page moves alone.
        assert_eq!(b.alloc(MOVABLE), Some(5));
        assert_eq!(b.take_boosts(), 2);
        assert_eq!(
            b.last_fallback,
            Some(Fallback {
                order: 0,
                from: UNMOVABLE as u8,
                claimed: false
            })
        );
    }

    #[test]
    fn freed_buddies_merge_back_to_a_pageblock() {
        let mut b = Buddy::from_pagetypes(&dma(), 3_808).unwrap();
        // The first movable chunk of the lowest order is the order-9 block: its 512 pages.
        let got: Vec<u32> = (0..512).map(|_| b.alloc(MOVABLE).unwrap()).collect();
        assert_eq!(b.pagetypes().free[MOVABLE][9], 0);
        for f in got.into_iter().rev() {
            b.free(f);
        }
        b.validate().unwrap();
        assert_eq!(b.pagetypes(), dma());
    }
}

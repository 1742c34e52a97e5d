//! A zone's buddy allocator with migratetypes, as Linux 6.1 and 6.8 run it for order-0
//! movable allocations (mm/page_alloc.c): free chunks of order 0..=10 on per-order,
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
//! - `__rmqueue_fallback` (order 0, no `ALLOC_NOFRAGMENT`): the largest order whose free
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
//! Left out: the per-CPU page lists (`pcp`: order-0 pages are allocated and freed straight
//! from and to the buddy lists here, and no free page sits on a per-CPU list out of
//! `NR_FREE_PAGES`), the kernel's own allocations (slab, page tables, the swap cache's
//! xarray nodes: their pages stay held from the start, and they never fall back),
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
        };
        for (t, o, pfn) in placed {
            b.add(pfn, o, t, true);
        }
        if n_pt > frames as u64 {
            for _ in 0..n_pt - frames as u64 {
                b.alloc_pfn(MOVABLE).expect("free pages left");
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

    /// `__rmqueue_smallest` for order 0.
    fn smallest(&mut self, t: usize) -> Option<u32> {
        let o = (0..NR_ORDERS).find(|&o| self.head[t][o] != NIL)?;
        let pfn = self.head[t][o];
        self.del(pfn);
        // `expand`: the upper halves back on the list, largest first.
        for h in (0..o).rev() {
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

    /// `__rmqueue_fallback` for an order-0 allocation of type `t`; whether it moved a chunk.
    fn fallback(&mut self, t: usize) -> bool {
        let mut found = None;
        for o in (0..NR_ORDERS).rev() {
            let Some(f) = self.suitable(o, t) else {
                continue;
            };
            let mut pick = (o, f, Self::can_steal(o, t));
            if !pick.2 && t == MOVABLE && o > 0 {
                // find_smallest
                let o2 = (0..NR_ORDERS)
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
        let pfn = self.alloc_pfn(t)?;
        self.used[(pfn / PAGEBLOCK_PAGES) as usize] += 1;
        let f = self.frame_of[pfn as usize];
        debug_assert_ne!(f, NIL, "a held page was free");
        Some(f)
    }

    fn alloc_pfn(&mut self, t: usize) -> Option<u32> {
        loop {
            if let Some(pfn) = self.smallest(t) {
                return Some(pfn);
            }
            if !self.fallback(t) {
                return None;
            }
        }
    }

    /// Free the page of frame index `i` (`__free_one_page`, its pageblock's migratetype).
    pub fn free(&mut self, i: u32) {
        let pfn = self.pfn_of[i as usize];
        let blk = (pfn / PAGEBLOCK_PAGES) as usize;
        debug_assert!(self.used[blk] > 0);
        self.used[blk] -= 1;
        self.free_pfn(pfn);
    }

    fn free_pfn(&mut self, pfn: u32) {
        let mut pfn = pfn;
        let blk = (pfn / PAGEBLOCK_PAGES) as usize;
        let t = self.block_mt[blk] as usize;
        let span = self.order_of.len() as u32;
        let mut o = 0usize;
        let mut buddy = pfn ^ 1;
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

//! Physical frames (`struct page`/folio of order 0) with their reverse map and flags.

use super::swap::NO_SLOT;

pub type FrameId = u32;
pub const NO_FRAME: FrameId = u32::MAX;

/// Frame holds an anonymous page (else a file page).
pub const F_ANON: u8 = 1 << 0;
/// A PTE maps the frame.
pub const F_MAPPED: u8 = 1 << 1;
/// `PG_dirty`: data newer than the backing store (set when a dirty PTE is unmapped or harvested).
pub const F_DIRTY: u8 = 1 << 2;
/// In the swap cache (has a swap slot whose copy matches while clean).
pub const F_SWAPCACHE: u8 = 1 << 3;
/// `PG_readahead` on a swap-cache page: read by swap readahead and not yet faulted on.
/// `swap_cache_get_folio` test-and-clears it: only such a hit is a readahead hit (`SWAP_RA_HIT`,
/// `swapin_readahead_hits`), which widens the next readahead window.
pub const F_READAHEAD: u8 = 1 << 4;
/// In the page cache ([`super::pagecache`]): the rmap points at the file page's xarray
/// entry, or, while a file mapping maps it (`F_MAPPED` too), at that mapping's PTE (the
/// entry is then found through the mapping, [`super::Mm::pc_page`]). With it, `F_DIRTY` is
/// the folio's `PG_dirty` (written by `write()`, counted in `nr_dirty`) and `F_READAHEAD` its
/// `PG_readahead` (the async readahead marker of `page_cache_ra_unbounded`).
pub const F_PAGECACHE: u8 = 1 << 5;
/// A page-cache frame Cacol manages ([`super::cacol`]: a VM disk image's page on a host
/// whose images Cacol caches): on none of the policy's lists.
pub const F_CACOL: u8 = 1 << 6;
pub const F_IN_USE: u8 = 1 << 7;

/// One frame's record, kept together so a reclaim decision touches one cache line.
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// Global index of the PTE that maps (or will map) the frame's page: the rmap (the
    /// virtual page is `PageTable::vpn_of(pte)`, see `Mm::owner`).
    pte: u32,
    /// Swap slot while in the swap cache.
    slot: u32,
    flags: u8,
}

const FREE: Frame = Frame {
    pte: u32::MAX,
    slot: NO_SLOT,
    flags: 0,
};

#[derive(Clone, Debug)]
pub struct Frames {
    frames: Vec<Frame>,
    /// Free frames of each zone, lowest zone first (one list when the machine has one
    /// zone): `zone->free_area`, order 0 only.
    free: Vec<Vec<FrameId>>,
    /// First frame of each zone, lowest first (`zone_start[0]` = 0): the zones are
    /// consecutive frame ranges, as `zone_start_pfn`/`spanned_pages` make them.
    zone_start: Vec<FrameId>,
    /// Per zone, its buddy allocator with migratetypes ([`super::buddy`]) when the zone was
    /// given its free lists (`/proc/pagetypeinfo`); its frames are then allocated there and
    /// its entry of `free` stays empty.
    buddies: Vec<Option<Box<super::buddy::Buddy>>>,
    /// Free frames held back for the kernel's own use (zram's compressed pool): they count
    /// as used in [`Frames::n_free`] and are never handed out. They are charged to the
    /// highest zone first (zsmalloc allocates with `__GFP_HIGHMEM | __GFP_MOVABLE`).
    reserved: u32,
    /// Frames taken off the free list with [`Frames::take`] and not yet given back: in no
    /// page's use, on no list (a balloon's pages).
    held: u32,
}

impl Frames {
    pub fn new(n: u32) -> Self {
        Self::with_zones(&[n])
    }

    /// Frames split into zones of `sizes` frames, lowest zone first (ZONE_DMA, ZONE_DMA32,
    /// ...). Each zone's free list hands out its lowest frame first.
    pub fn with_zones(sizes: &[u32]) -> Self {
        assert!(!sizes.is_empty(), "a machine has at least one zone");
        let n: u32 = sizes.iter().sum();
        let mut free = Vec::with_capacity(sizes.len());
        let mut zone_start = Vec::with_capacity(sizes.len());
        let mut at = 0u32;
        for &z in sizes {
            zone_start.push(at);
            // Popped from the end: the zone's first frame first.
            free.push((at..at + z).rev().collect());
            at += z;
        }
        Frames {
            frames: crate::hint::huge_vec(n as usize, FREE),
            free,
            buddies: vec![None; sizes.len()],
            zone_start,
            reserved: 0,
            held: 0,
        }
    }
    #[inline]
    pub fn len(&self) -> u32 {
        self.frames.len() as u32
    }
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }
    /// Number of zones.
    #[inline]
    pub fn n_zones(&self) -> usize {
        self.zone_start.len()
    }
    /// First frame of each zone, lowest first.
    pub fn zone_starts(&self) -> &[FrameId] {
        &self.zone_start
    }
    /// The zone frame `f` belongs to (`folio_zonenum`).
    #[inline]
    pub fn zone_of(&self, f: FrameId) -> usize {
        zone_of(&self.zone_start, f)
    }
    #[inline]
    fn n_listed(&self) -> u32 {
        (0..self.free.len()).map(|z| self.listed_in(z)).sum()
    }
    /// Free frames of zone `z` on its list or in its buddy allocator.
    #[inline]
    fn listed_in(&self, z: usize) -> u32 {
        match &self.buddies[z] {
            Some(b) => b.n_free(),
            None => self.free[z].len() as u32,
        }
    }
    /// Give zone `z` a buddy allocator with migratetypes laid out from `pt`
    /// ([`super::buddy::Buddy::from_pagetypes`]); before any frame is allocated.
    pub fn set_pagetypes(&mut self, z: usize, pt: &super::buddy::PageTypes) -> Result<(), String> {
        let n = self.free[z].len() as u32;
        debug_assert!(self.frames.iter().all(|f| f.flags & F_IN_USE == 0));
        let b = super::buddy::Buddy::from_pagetypes(pt, n)?;
        self.free[z].clear();
        self.buddies[z] = Some(Box::new(b));
        Ok(())
    }
    /// Zone `z`'s buddy allocator, if it has one.
    pub fn buddy(&self, z: usize) -> Option<&super::buddy::Buddy> {
        self.buddies[z].as_deref()
    }
    pub fn buddy_mut(&mut self, z: usize) -> Option<&mut super::buddy::Buddy> {
        self.buddies[z].as_deref_mut()
    }
    /// Pop a free frame of zone `z`: its buddy allocator's movable page, or its list's last.
    #[inline]
    fn pop(&mut self, z: usize) -> Option<FrameId> {
        match &mut self.buddies[z] {
            Some(b) => b
                .alloc(super::buddy::MOVABLE)
                .map(|i| self.zone_start[z] + i),
            None => self.free[z].pop(),
        }
    }
    #[inline]
    fn push(&mut self, z: usize, f: FrameId) {
        match &mut self.buddies[z] {
            Some(b) => b.free(f - self.zone_start[z]),
            None => self.free[z].push(f),
        }
    }
    /// Frames free for pages: the free lists less the reserved ones.
    #[inline]
    pub fn n_free(&self) -> u32 {
        if self.free.len() == 1 {
            return (self.free[0].len() as u32).saturating_sub(self.reserved);
        }
        self.n_listed().saturating_sub(self.reserved)
    }
    /// Free frames of zone `z` (`zone_page_state(zone, NR_FREE_PAGES)`), less the reserved
    /// frames charged to it (highest zone first).
    pub fn n_free_zone(&self, z: usize) -> u32 {
        let mut left = self.reserved;
        for i in (0..self.free.len()).rev() {
            let here = self.listed_in(i);
            let charged = left.min(here);
            if i == z {
                return here - charged;
            }
            left -= charged;
        }
        0
    }
    /// Frames in no use: on the free lists, reserved ones included, or on a buddy
    /// allocator's per-CPU lists (for invariant checks).
    pub fn n_unused(&self) -> u32 {
        self.n_listed()
            + self
                .buddies
                .iter()
                .flatten()
                .map(|b| b.pcp_pages())
                .sum::<u32>()
    }

    /// Give every zone with a buddy allocator per-CPU page lists; `batch_high(z)` gives
    /// zone `z`'s `(batch, high)`.
    pub fn set_pcp(&mut self, batch_high: impl Fn(usize) -> (u32, u32)) {
        for (z, b) in self.buddies.iter_mut().enumerate() {
            if let Some(b) = b.as_deref_mut() {
                let (batch, high) = batch_high(z);
                b.set_pcp(batch, high);
            }
        }
    }

    /// `ZONE_RECLAIM_ACTIVE` on the zones up to `top` (off on all with `None`).
    pub fn set_reclaim_active(&mut self, top: Option<usize>) {
        for (z, b) in self.buddies.iter_mut().enumerate() {
            if let Some(b) = b.as_deref_mut() {
                b.set_reclaim_active(top.is_some_and(|t| z <= t));
            }
        }
    }

    /// `drain_all_pages`: every zone's per-CPU pages back to its free lists.
    pub fn drain_pcp(&mut self) {
        for b in self.buddies.iter_mut().flatten() {
            b.drain_pcp();
        }
    }
    /// Frames reserved now.
    pub fn reserved(&self) -> u32 {
        self.reserved
    }
    /// Hold `n` free frames back (at most the whole free list; what does not fit yet is
    /// returned and can be asked for again once reclaim has freed frames).
    pub fn set_reserved(&mut self, n: u32) -> u32 {
        let fit = n.min(self.n_listed());
        self.reserved = fit;
        n - fit
    }
    /// Frames held by [`Frames::take`] now.
    pub fn n_held(&self) -> u32 {
        self.held
    }
    /// Take a free frame for no page (the reserved frames are left alone), from the highest
    /// zone that has one: it is neither free nor in use until [`Frames::give_back`]. Models a
    /// kernel allocation that leaves the page off the LRU lists (`balloon_page_alloc`).
    pub fn take(&mut self) -> Option<FrameId> {
        let z = (0..self.free.len())
            .rev()
            .find(|&z| self.n_free_zone(z) > 0)?;
        self.take_in(z)
    }
    /// [`Frames::take`] from zone `z`, if it has a frame that is not reserved.
    pub fn take_in(&mut self, z: usize) -> Option<FrameId> {
        if self.n_free_zone(z) == 0 {
            return None;
        }
        let f = self.pop(z)?;
        self.held += 1;
        Some(f)
    }
    /// [`Frames::take_in`] of a page of migratetype `mt` from zone `z`'s buddy allocator (a
    /// kernel allocation that is not movable: a slab page of a `SLAB_RECLAIM_ACCOUNT` cache
    /// is `MIGRATE_RECLAIMABLE`); a zone without one pops its list.
    pub fn take_in_type(&mut self, z: usize, mt: usize) -> Option<FrameId> {
        self.take_order_in_type(z, mt, 0)
    }
    /// [`Frames::take_in_type`] of `1 << order` consecutive frames (an order-`order` chunk of
    /// the buddy allocator): the first, or `None` when zone `z` has fewer free frames than
    /// that or no buddy allocator with such a chunk. Each frame is given back on its own.
    pub fn take_order_in_type(&mut self, z: usize, mt: usize, order: usize) -> Option<FrameId> {
        if self.n_free_zone(z) < 1 << order {
            return None;
        }
        let f = match &mut self.buddies[z] {
            Some(b) => b.alloc_order(mt, order).map(|i| self.zone_start[z] + i)?,
            None if order == 0 => self.free[z].pop()?,
            None => return None,
        };
        self.held += 1 << order;
        Some(f)
    }
    /// Whether the zones keep buddy allocators (free lists per migratetype).
    pub fn has_buddies(&self) -> bool {
        self.buddies.iter().any(|b| b.is_some())
    }
    /// Put the `1 << order` frames from `f` that [`Frames::take_order_in_type`] took back
    /// (a buddy allocator frees them as one chunk).
    pub fn give_back_order(&mut self, f: FrameId, order: usize) {
        let z = self.zone_of(f);
        match self.buddies[z].as_deref_mut() {
            Some(b) => {
                debug_assert!(self.held >= 1 << order);
                self.held -= 1 << order;
                b.free_order(f - self.zone_start[z], order);
            }
            None => {
                for k in 0..1u32 << order {
                    self.give_back(f + k);
                }
            }
        }
    }

    /// Put a frame [`Frames::take`] took back on its zone's free list.
    pub fn give_back(&mut self, f: FrameId) {
        debug_assert!(self.held > 0 && !self.in_use(f));
        self.held -= 1;
        let z = self.zone_of(f);
        self.push(z, f);
    }
    /// Take a free frame for the page whose PTE has global index `pte`: from the highest
    /// zone that has one (the zonelist's order, without watermarks: the kernel policies'
    /// machine chooses the zone itself, [`Frames::alloc_in`]).
    #[inline]
    pub fn alloc(&mut self, pte: u32, flags: u8) -> Option<FrameId> {
        if self.free.len() == 1 {
            return self.alloc_in(0, pte, flags);
        }
        let z = (0..self.free.len())
            .rev()
            .find(|&z| self.n_free_zone(z) > 0)?;
        self.alloc_in(z, pte, flags)
    }
    /// Take a free frame of zone `z`, if it has one that is not reserved.
    #[inline]
    pub fn alloc_in(&mut self, z: usize, pte: u32, flags: u8) -> Option<FrameId> {
        if self.free.len() == 1 {
            if self.free[0].len() as u32 <= self.reserved {
                return None;
            }
        } else if self.n_free_zone(z) == 0 {
            return None;
        }
        let f = self.pop(z)?;
        self.frames[f as usize] = Frame {
            pte,
            slot: NO_SLOT,
            flags: flags | F_IN_USE,
        };
        Some(f)
    }
    #[inline]
    pub fn release(&mut self, f: FrameId) {
        debug_assert!(self.in_use(f));
        self.frames[f as usize] = FREE;
        let z = self.zone_of(f);
        self.push(z, f);
    }
    /// Prefetch a frame's record (simulator speed only).
    #[inline]
    pub fn prefetch(&self, f: FrameId) {
        crate::hint::prefetch(self.frames.as_ptr().wrapping_add(f as usize));
    }
    /// Global index of the PTE of the frame's page (see `PageTable::at`).
    #[inline]
    pub fn pte(&self, f: FrameId) -> u32 {
        self.frames[f as usize].pte
    }
    /// Point frame `f`'s rmap at PTE `pte` (a page-cache frame mapped by a file mapping:
    /// its user PTE while mapped, its xarray entry again once unmapped).
    #[inline]
    pub fn set_pte(&mut self, f: FrameId, pte: u32) {
        self.frames[f as usize].pte = pte;
    }
    #[inline]
    pub fn flags(&self, f: FrameId) -> u8 {
        self.frames[f as usize].flags
    }
    #[inline]
    pub fn set_flags(&mut self, f: FrameId, set: u8) {
        self.frames[f as usize].flags |= set;
    }
    #[inline]
    pub fn clear_flags(&mut self, f: FrameId, clear: u8) {
        self.frames[f as usize].flags &= !clear;
    }
    #[inline]
    pub fn in_use(&self, f: FrameId) -> bool {
        self.flags(f) & F_IN_USE != 0
    }
    #[inline]
    pub fn is_mapped(&self, f: FrameId) -> bool {
        self.flags(f) & F_MAPPED != 0
    }
    #[inline]
    pub fn is_anon(&self, f: FrameId) -> bool {
        self.flags(f) & F_ANON != 0
    }
    #[inline]
    pub fn slot(&self, f: FrameId) -> u32 {
        self.frames[f as usize].slot
    }
    #[inline]
    pub fn set_slot(&mut self, f: FrameId, slot: u32) {
        self.frames[f as usize].slot = slot;
    }

    pub(crate) fn validate_free_list(&self) -> Result<(), String> {
        let mut seen = vec![false; self.frames.len()];
        for (z, &f) in self
            .free
            .iter()
            .enumerate()
            .flat_map(|(z, l)| l.iter().map(move |f| (z, f)))
        {
            if self.zone_of(f) != z {
                return Err(format!(
                    "frame {f} on zone {z}'s free list but in zone {}",
                    self.zone_of(f)
                ));
            }
            if self.in_use(f) {
                return Err(format!("frame {f} on the free list but in use"));
            }
            if std::mem::replace(&mut seen[f as usize], true) {
                return Err(format!("frame {f} twice on the free list"));
            }
        }
        for (z, b) in self.buddies.iter().enumerate() {
            if let Some(b) = b {
                b.validate()
                    .map_err(|e| format!("zone {z}'s buddy allocator: {e}"))?;
            }
        }
        Ok(())
    }
}

/// The zone of frame `f` given the zones' first frames (lowest first).
#[inline]
pub fn zone_of(zone_start: &[FrameId], f: FrameId) -> usize {
    match zone_start.len() {
        1 => 0,
        2 => (f >= zone_start[1]) as usize,
        _ => zone_start.partition_point(|&s| s <= f) - 1,
    }
}

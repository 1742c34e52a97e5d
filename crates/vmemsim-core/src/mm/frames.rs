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
/// In the page cache of unmapped file I/O ([`super::pagecache`]): the rmap points at the
/// file page's xarray entry, not a PTE, and the frame is never mapped. With it, `F_DIRTY` is
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
    free: Vec<FrameId>,
    /// Free frames held back for the kernel's own use (zram's compressed pool): they count
    /// as used in [`Frames::n_free`] and are never handed out.
    reserved: u32,
    /// Frames taken off the free list with [`Frames::take`] and not yet given back: in no
    /// page's use, on no list (a balloon's pages).
    held: u32,
}

impl Frames {
    pub fn new(n: u32) -> Self {
        Frames {
            frames: crate::hint::huge_vec(n as usize, FREE),
            // Popped from the end: frame 0 first.
            free: (0..n).rev().collect(),
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
    /// Frames free for pages: the free list less the reserved ones.
    #[inline]
    pub fn n_free(&self) -> u32 {
        (self.free.len() as u32).saturating_sub(self.reserved)
    }
    /// Frames on the free list, reserved ones included (for invariant checks).
    pub fn n_unused(&self) -> u32 {
        self.free.len() as u32
    }
    /// Frames reserved now.
    pub fn reserved(&self) -> u32 {
        self.reserved
    }
    /// Hold `n` free frames back (at most the whole free list; what does not fit yet is
    /// returned and can be asked for again once reclaim has freed frames).
    pub fn set_reserved(&mut self, n: u32) -> u32 {
        let fit = n.min(self.free.len() as u32);
        self.reserved = fit;
        n - fit
    }
    /// Frames held by [`Frames::take`] now.
    pub fn n_held(&self) -> u32 {
        self.held
    }
    /// Take a free frame for no page (the reserved frames are left alone): it is neither
    /// free nor in use until [`Frames::give_back`]. Models a kernel allocation that leaves
    /// the page off the LRU lists (`balloon_page_alloc`).
    pub fn take(&mut self) -> Option<FrameId> {
        if self.free.len() as u32 <= self.reserved {
            return None;
        }
        let f = self.free.pop()?;
        self.held += 1;
        Some(f)
    }
    /// Put a frame [`Frames::take`] took back on the free list.
    pub fn give_back(&mut self, f: FrameId) {
        debug_assert!(self.held > 0 && !self.in_use(f));
        self.held -= 1;
        self.free.push(f);
    }
    /// Take a free frame for the page whose PTE has global index `pte`.
    #[inline]
    pub fn alloc(&mut self, pte: u32, flags: u8) -> Option<FrameId> {
        if self.free.len() as u32 <= self.reserved {
            return None;
        }
        let f = self.free.pop()?;
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
        self.free.push(f);
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
        for &f in &self.free {
            if self.in_use(f) {
                return Err(format!("frame {f} on the free list but in use"));
            }
            if std::mem::replace(&mut seen[f as usize], true) {
                return Err(format!("frame {f} twice on the free list"));
            }
        }
        Ok(())
    }
}

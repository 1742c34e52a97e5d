//! Swap slots, the swap cache, and the swap-device interface.
//!
//! Slot allocation sweeps a cursor forward through the swap map and takes the next free slot,
//! so pages reclaimed together get neighbouring slots, as the kernel's per-CPU cluster
//! allocation (`scan_swap_map_slots`) does for one reclaimer. Left out: per-CPU clusters and
//! discard; the timed device models come with the timing engine.

use super::frames::{FrameId, NO_FRAME};

pub const NO_SLOT: u32 = u32::MAX;
const NO_OWNER: u32 = u32::MAX;

/// One I/O the memory model asks a swap device to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwapIo {
    /// Read `n` consecutive slots starting at `slot` (a fault plus its readahead window).
    Read { slot: u32, n: u32 },
    /// Write one page out to `slot`.
    Write { slot: u32 },
    /// The slot was freed (`swap_entry_free`): a device may drop what it stored there (zram
    /// frees the compressed copy, `zram_slot_free_notify`).
    Discard { slot: u32 },
}

/// A swap device: receives the I/O the memory model issues. Timing models implement it later;
/// here it counts.
pub trait SwapDevice: std::fmt::Debug {
    fn submit(&mut self, io: SwapIo);
}

/// Counts pages read and written (`pswpin` / `pswpout`) and the requests that carried them.
/// With `log` on, it also keeps every I/O in order until [`CountingDevice::take_log`]: the
/// timing engine hands them to a timed device model (`crate::device`) at the simulated time.
#[derive(Clone, Debug, Default)]
pub struct CountingDevice {
    pub pages_read: u64,
    pub pages_written: u64,
    pub read_requests: u64,
    pub log_on: bool,
    log: Vec<SwapIo>,
}

impl CountingDevice {
    /// The I/Os submitted since the last call, oldest first (empty unless `log_on`).
    pub fn take_log(&mut self, out: &mut Vec<SwapIo>) {
        out.clear();
        std::mem::swap(out, &mut self.log);
    }
    pub fn has_log(&self) -> bool {
        !self.log.is_empty()
    }
}

impl SwapDevice for CountingDevice {
    fn submit(&mut self, io: SwapIo) {
        match io {
            SwapIo::Read { n, .. } => {
                self.pages_read += n as u64;
                self.read_requests += 1;
            }
            SwapIo::Write { .. } => self.pages_written += 1,
            SwapIo::Discard { .. } => {}
        }
        if self.log_on {
            self.log.push(io);
        }
    }
}

/// One swap slot's record (owner, swap-cache frame, workingset shadow) in one place.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// Global PTE index of the page whose data the slot holds (see `PageTable::vpn_of`),
    /// `NO_OWNER` when free.
    owner: u32,
    /// Frame holding the slot's page in the swap cache, if any.
    cache: FrameId,
    /// Workingset shadow stored at eviction (`workingset_eviction`), read on refault.
    shadow: u32,
}

const FREE: Slot = Slot {
    owner: NO_OWNER,
    cache: NO_FRAME,
    shadow: 0,
};

#[derive(Debug, Default)]
pub struct Swap {
    slots: Vec<Slot>,
    cursor: u32,
    n_used: u32,
    pub device: CountingDevice,
}

impl Swap {
    /// Take a free slot for the page whose PTE has global index `owner`.
    pub fn alloc(&mut self, owner: u32) -> u32 {
        if self.n_used as usize == self.slots.len() {
            let s = self.slots.len() as u32;
            let grow = (self.slots.len() / 4).max(1024);
            crate::hint::huge_extend(&mut self.slots, grow, FREE);
            self.cursor = s;
        }
        let n = self.slots.len() as u32;
        while self.slots[self.cursor as usize].owner != NO_OWNER {
            self.cursor = if self.cursor + 1 == n {
                0
            } else {
                self.cursor + 1
            };
        }
        let s = self.cursor;
        self.slots[s as usize].owner = owner;
        self.n_used += 1;
        s
    }
    pub fn free(&mut self, slot: u32) {
        debug_assert_ne!(self.slots[slot as usize].owner, NO_OWNER);
        self.slots[slot as usize] = FREE;
        self.n_used -= 1;
        self.device.submit(SwapIo::Discard { slot });
    }
    /// Prefetch a slot's record (simulator speed only).
    #[inline]
    pub fn prefetch(&self, slot: u32) {
        crate::hint::prefetch(self.slots.as_ptr().wrapping_add(slot as usize));
    }
    #[inline]
    /// Global PTE index of the slot's page, if the slot is in use.
    pub fn owner(&self, slot: u32) -> Option<u32> {
        self.slots
            .get(slot as usize)
            .map(|s| s.owner)
            .filter(|&o| o != NO_OWNER)
    }
    #[inline]
    pub fn cached_frame(&self, slot: u32) -> FrameId {
        self.slots.get(slot as usize).map_or(NO_FRAME, |s| s.cache)
    }
    #[inline]
    pub fn set_cached_frame(&mut self, slot: u32, f: FrameId) {
        self.slots[slot as usize].cache = f;
    }
    #[inline]
    pub fn shadow(&self, slot: u32) -> u32 {
        self.slots[slot as usize].shadow
    }
    #[inline]
    pub fn set_shadow(&mut self, slot: u32, s: u32) {
        self.slots[slot as usize].shadow = s;
    }
    pub fn n_slots(&self) -> u32 {
        self.slots.len() as u32
    }
    pub fn n_used(&self) -> u32 {
        self.n_used
    }
    pub(crate) fn validate(&self) -> Result<(), String> {
        let used = self.slots.iter().filter(|s| s.owner != NO_OWNER).count() as u32;
        if used != self.n_used {
            return Err(format!(
                "swap map: {used} slots owned but n_used = {}",
                self.n_used
            ));
        }
        for (i, s) in self.slots.iter().enumerate() {
            if s.cache != NO_FRAME && s.owner == NO_OWNER {
                return Err(format!("free slot {i} has swap-cache frame {}", s.cache));
            }
        }
        Ok(())
    }
}

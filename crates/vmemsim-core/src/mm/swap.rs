//! Swap slots, the swap cache, and the swap-device interface.
//!
//! Slot allocation follows the kernel's for a non-rotational device (`scan_swap_map_slots`,
//! `scan_swap_map_try_ssd_cluster`, mm/swapfile.c in 6.8): the swap map is cut into clusters
//! of `SWAPFILE_CLUSTER` = 512 slots (`HPAGE_PMD_NR` with `CONFIG_THP_SWAP`, which x86-64
//! selects by default and Debian's kernels have; 256 without it); each CPU allocates forward inside its own current
//! cluster and, when that is used up, takes the first wholly free cluster from the free list
//! (a cluster whose last slot is freed goes back to the tail of the list). So each reclaimer's
//! pages get neighbouring slots, even when several CPUs reclaim at once, and swap readahead
//! finds the pages evicted together. With no free cluster left, a linear scan takes the next
//! free slot anywhere (the kernel's fallback). The swap space grows by whole clusters when
//! full (the model has no swap size limit). Left out: the per-CPU swap slots cache
//! (`swap_slots.c`, batches of 64), discard of free clusters.
//!
//! A rotational device (a hard disk; QEMU's virtio-blk) allocates as [`super::rotational`]
//! describes instead ([`Swap::set_rotational`]).

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
    /// The writes and discards submitted since the last call, oldest first, leaving the reads
    /// in the log (the plug of a reclaim pass is flushed as the pass ends, `blk_finish_plug`;
    /// a fault's read is submitted with the fault).
    pub fn take_writes(&mut self, out: &mut Vec<SwapIo>) {
        out.clear();
        self.log.retain(|&io| {
            let w = !matches!(io, SwapIo::Read { .. });
            if w {
                out.push(io);
            }
            !w
        });
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

/// `SWAPFILE_CLUSTER`: slots per swap cluster, `HPAGE_PMD_NR` with `CONFIG_THP_SWAP`
/// (mm/swapfile.c; x86-64 selects `ARCH_WANTS_THP_SWAP`, Debian's 6.1 config has it).
pub const SWAPFILE_CLUSTER: u32 = 512;
/// CPUs with their own current cluster (more are folded onto these).
const MAX_CPUS: usize = 4096;

#[derive(Debug, Default)]
pub struct Swap {
    slots: Vec<Slot>,
    /// Slots in use per cluster (`cluster_info` counts).
    used: Vec<u16>,
    /// Wholly free clusters, oldest first (`si->free_clusters`).
    free_clusters: std::collections::VecDeque<u32>,
    /// Each CPU's current cluster and next offset in it (`percpu_cluster`); `NO_SLOT` = none.
    percpu: Vec<(u32, u32)>,
    /// The CPU allocating now (set by the timing engine; 0 otherwise).
    cpu: usize,
    /// Where the fallback scan goes on from (`si->cluster_next`).
    cursor: u32,
    n_used: u32,
    pub device: CountingDevice,
    /// The device's pool is memory (zram charged to RAM; `None`: no limit). When it can get no
    /// more pages, `zs_malloc` fails, `zram_write_page` returns -ENOMEM and the write fails.
    /// Set by the timing engine; plain replays leave it `None`.
    pub pool: Option<PoolCharge>,
    /// The device is rotational: slots come from [`super::rotational::Rotational`].
    rot: Option<Box<super::rotational::Rotational>>,
    /// When kept ([`Swap::log_slots`]): each slot taken (true) or freed (false), in order.
    slot_log: Option<Vec<(u32, bool)>>,
}

/// What the engine needs to know to refuse a swap-out the device's pool has no memory for.
#[derive(Clone, Copy, Debug, Default)]
pub struct PoolCharge {
    /// Bytes of pool memory one more stored page takes, by estimate.
    pub per_page: u64,
    /// Bytes the pool has grown by since its frames were last taken from the free list.
    pub pending: u64,
}

impl Swap {
    /// The CPU whose per-CPU cluster the next allocations use.
    pub fn set_cpu(&mut self, cpu: usize) {
        self.cpu = cpu % MAX_CPUS;
    }

    /// Add whole free clusters at the end of the swap map.
    fn grow(&mut self) {
        let n = self.slots.len() as u32;
        let add = ((n / 4).max(4 * SWAPFILE_CLUSTER)).div_ceil(SWAPFILE_CLUSTER) * SWAPFILE_CLUSTER;
        crate::hint::huge_extend(&mut self.slots, add as usize, FREE);
        let first = n / SWAPFILE_CLUSTER;
        let last = (n + add) / SWAPFILE_CLUSTER;
        self.used.resize(last as usize, 0);
        self.free_clusters.extend(first..last);
    }

    /// Keep a log of the slots taken and freed, for the swap cache's xarray nodes (the
    /// machine's slab model).
    pub fn log_slots(&mut self) {
        self.slot_log.get_or_insert_with(Vec::new);
    }

    /// The log since the last call, if one is kept and has entries.
    pub fn take_slot_log(&mut self) -> Option<Vec<(u32, bool)>> {
        let log = self.slot_log.as_mut()?;
        if log.is_empty() {
            return None;
        }
        Some(std::mem::take(log))
    }

    /// Give a drained log's allocation back (dropped if entries came meanwhile).
    pub fn put_slot_log(&mut self, v: Vec<(u32, bool)>) {
        if let Some(log) = self.slot_log.as_mut() {
            if log.is_empty() {
                *log = v;
            }
        }
    }

    fn take(&mut self, s: u32, owner: u32) -> u32 {
        debug_assert_eq!(self.slots[s as usize].owner, NO_OWNER);
        if let Some(log) = self.slot_log.as_mut() {
            log.push((s, true));
        }
        self.slots[s as usize].owner = owner;
        self.used[(s / SWAPFILE_CLUSTER) as usize] += 1;
        self.n_used += 1;
        s
    }

    /// Make the device rotational with `last_page` usable slots (1..=last_page; slot 0 is
    /// the header). Only before the first allocation.
    pub fn set_rotational(&mut self, last_page: u32) {
        assert_eq!(self.n_used, 0, "set_rotational after allocations");
        let r = super::rotational::Rotational::new(last_page);
        self.fit_rotational(r.len());
        self.rot = Some(Box::new(r));
    }

    /// Size the slot records to the rotational device's `n` slots.
    fn fit_rotational(&mut self, n: u32) {
        if (self.slots.len() as u32) < n {
            let add = n as usize - self.slots.len();
            crate::hint::huge_extend(&mut self.slots, add, FREE);
            self.used
                .resize((n as usize).div_ceil(SWAPFILE_CLUSTER as usize), 0);
        }
    }

    /// Take a free slot for the page whose PTE has global index `owner`.
    pub fn alloc(&mut self, owner: u32) -> u32 {
        if let Some(r) = self.rot.as_mut() {
            let s = match r.alloc() {
                Some(s) => s,
                None => {
                    r.grow(super::rotational::CLUSTER);
                    let n = r.len();
                    let s = r.alloc().expect("a grown device has a free slot");
                    self.fit_rotational(n);
                    s
                }
            };
            return self.take(s, owner);
        }
        if self.n_used as usize == self.slots.len() {
            self.grow();
        }
        if self.percpu.len() <= self.cpu {
            self.percpu.resize(self.cpu + 1, (NO_SLOT, 0));
        }
        // The CPU's own cluster: the next free slot at or after its offset.
        let (c, mut off) = self.percpu[self.cpu];
        if c != NO_SLOT {
            let base = c * SWAPFILE_CLUSTER;
            while off < SWAPFILE_CLUSTER {
                if self.slots[(base + off) as usize].owner == NO_OWNER {
                    self.percpu[self.cpu] = (c, off + 1);
                    return self.take(base + off, owner);
                }
                off += 1;
            }
            self.percpu[self.cpu] = (NO_SLOT, 0);
        }
        // A new wholly free cluster (one may have been taken by another CPU meanwhile).
        while let Some(c) = self.free_clusters.pop_front() {
            if self.used[c as usize] == 0 && !self.percpu.iter().any(|&(p, _)| p == c) {
                self.percpu[self.cpu] = (c, 1);
                return self.take(c * SWAPFILE_CLUSTER, owner);
            }
        }
        // No free cluster: the next free slot anywhere.
        let n = self.slots.len() as u32;
        while self.slots[self.cursor as usize].owner != NO_OWNER {
            self.cursor = if self.cursor + 1 == n {
                0
            } else {
                self.cursor + 1
            };
        }
        let s = self.cursor;
        self.take(s, owner)
    }

    pub fn free(&mut self, slot: u32) {
        debug_assert_ne!(self.slots[slot as usize].owner, NO_OWNER);
        if let Some(log) = self.slot_log.as_mut() {
            log.push((slot, false));
        }
        self.slots[slot as usize] = FREE;
        self.n_used -= 1;
        let c = slot / SWAPFILE_CLUSTER;
        self.used[c as usize] -= 1;
        if let Some(r) = self.rot.as_mut() {
            r.free(slot);
            self.device.submit(SwapIo::Discard { slot });
            return;
        }
        if self.used[c as usize] == 0 && !self.percpu.iter().any(|&(p, _)| p == c) {
            // `free_cluster`: back to the tail of the free list.
            self.free_clusters.push_back(c);
        }
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
    /// `vm_swap_full`: more than half of a sized (rotational) device's slots are taken. A
    /// device without a size (`disk`, which grows as needed) is never full.
    pub fn vm_swap_full(&self) -> bool {
        self.rot.as_ref().is_some_and(|r| r.vm_swap_full())
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
        for (c, chunk) in self.slots.chunks(SWAPFILE_CLUSTER as usize).enumerate() {
            let n = chunk.iter().filter(|s| s.owner != NO_OWNER).count();
            if self.used.get(c).copied().unwrap_or(0) as usize != n {
                return Err(format!(
                    "swap cluster {c}: {n} slots owned, count says {:?}",
                    self.used.get(c)
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod cluster_tests {
    use super::*;

    const C: u32 = SWAPFILE_CLUSTER;

    #[test]
    fn one_cpu_fills_its_cluster_then_takes_the_next_free_one() {
        let mut s = Swap::default();
        let got: Vec<u32> = (0..C + 44).map(|i| s.alloc(i)).collect();
        assert_eq!(got, (0..C + 44).collect::<Vec<u32>>());
        // The first growth makes 4 clusters; cluster 0 freed goes to the tail.
        for slot in 0..C {
            s.free(slot);
        }
        for i in C + 44..2 * C {
            s.alloc(i); // the rest of cluster 1
        }
        assert_eq!(s.alloc(9_999), 2 * C); // cluster 2, the head of the list, not cluster 0
        s.validate().unwrap();
    }

    #[test]
    fn each_cpu_allocates_in_its_own_cluster() {
        let mut s = Swap::default();
        let mut got = Vec::new();
        for i in 0..4 {
            s.set_cpu(i % 2);
            got.push(s.alloc(i as u32));
        }
        assert_eq!(got, vec![0, C, 1, C + 1]);
        s.validate().unwrap();
    }

    #[test]
    fn with_no_free_cluster_any_free_slot_is_taken() {
        let mut s = Swap::default();
        for i in 0..4 * C {
            s.alloc(i);
        }
        s.free(5);
        // Cluster 0 is partly used, so not free; the CPU's cluster (3) is full.
        assert_eq!(s.alloc(7_777), 5);
        // Full again: the map grows by whole clusters, and the next slot opens a new one.
        assert_eq!(s.alloc(8_888), 4 * C);
        assert_eq!(s.n_slots() % SWAPFILE_CLUSTER, 0);
        s.validate().unwrap();
    }
}

//! Swap slot allocation on a rotational device, as Linux 6.1 and 6.8 do it (the same code in
//! both): `swapon` leaves `si->cluster_info` unset when the block device is not
//! `QUEUE_FLAG_NONROT` (a hard disk; also QEMU's virtio-blk, which never sets the flag), so
//! `scan_swap_map_slots` (mm/swapfile.c) runs its plain path: one global cursor
//! (`si->cluster_next`) moving forward through runs of `SWAPFILE_CLUSTER` slots, a new run
//! found by a linear search from `lowest_bit` for 512 consecutive free slots (not aligned),
//! holes filled first-fit when there is none; `latency_ration` cuts batches short. Slots come
//! through the per-CPU swap slots cache (mm/swap_slots.c): `get_swap_pages` reserves up to
//! `SWAP_BATCH` = 64 at a time, handed out in order; freed slots wait in `slots_ret` and are
//! released 64 at a time when the 65th arrives (`free_swap_slot` → `swapcache_free_entries`),
//! so a freed slot is not reused at once. The cache is active above 5 × 64 free slots per CPU
//! and off below 2 × 64 (`check_cache_active`); one CPU is modelled.
//!
//! Slot 0 is the swap header (`SWAP_MAP_BAD`); usable slots are 1..=`last_page`.
//! `SWAPFILE_CLUSTER` is `HPAGE_PMD_NR` = 512 with `CONFIG_THP_SWAP` (Debian's x86-64
//! kernels), else 256; 512 here.
//!
//! Left out: what happens when swap is more than half full (`vm_swap_full`: the allocator's
//! `__try_to_reclaim_swap(TTRS_ANYWAY)` of swap-cache pages and taking slots that only the
//! swap cache holds); a device with no free slot grows by one cluster instead of failing
//! the swap-out (the model has no swap exhaustion). The rules were checked against a real
//! Debian 6.1 kernel (slots read from /proc/self/pagemap): the same slot for every one of
//! ~48,000 swap-outs.

use std::collections::VecDeque;

/// `SWAPFILE_CLUSTER` (with `CONFIG_THP_SWAP`: 512).
pub use super::swap::SWAPFILE_CLUSTER as CLUSTER;
/// `LATENCY_LIMIT`.
const LATENCY_LIMIT: i32 = 256;
/// `SWAP_BATCH` = `SWAP_SLOTS_CACHE_SIZE`.
const BATCH: u32 = 64;

#[derive(Clone, Debug)]
pub struct Rotational {
    /// `swap_map[off] != 0`: in use, reserved in the slots cache or waiting in `slots_ret`.
    used: Vec<bool>,
    /// `si->pages`: usable slots (the header excluded).
    pages: u32,
    lowest_bit: u32,
    highest_bit: u32,
    cluster_next: u32,
    /// `si->cluster_nr` (unsigned: the post-decrement of 0 wraps).
    cluster_nr: u32,
    inuse: u32,
    /// `nr_swap_pages`: free slots not reserved by a batch being scanned.
    nr_swap_pages: i64,
    /// `swap_slot_cache_active`.
    active: bool,
    /// The slots cache's reserved slots, handed out in order.
    cache: VecDeque<u32>,
    /// `slots_ret`: freed slots not yet released.
    ret: Vec<u32>,
}

impl Rotational {
    /// A freshly `mkswap`ed and `swapon`ed device of `last_page` usable slots
    /// (`read_swap_header`: `lowest_bit = 1`, `cluster_next = 1`, `cluster_nr = 0`).
    pub fn new(last_page: u32) -> Rotational {
        let last_page = last_page.max(1);
        let mut used = vec![false; last_page as usize + 1];
        used[0] = true;
        Rotational {
            used,
            pages: last_page,
            lowest_bit: 1,
            highest_bit: last_page,
            cluster_next: 1,
            cluster_nr: 0,
            inuse: 0,
            nr_swap_pages: last_page as i64,
            active: false,
            cache: VecDeque::new(),
            ret: Vec::new(),
        }
    }

    /// Slots of the device, the header included.
    pub fn len(&self) -> u32 {
        self.used.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// `swap_range_alloc` for one slot.
    fn range_alloc(&mut self, off: u32) {
        if off == self.lowest_bit {
            self.lowest_bit += 1;
        }
        if off == self.highest_bit {
            self.highest_bit -= 1;
        }
        self.inuse += 1;
        if self.inuse == self.pages {
            self.lowest_bit = self.len();
            self.highest_bit = 0;
        }
    }

    /// `swap_entry_free` → `swap_range_free` for one slot.
    fn entry_free(&mut self, off: u32) {
        debug_assert!(self.used[off as usize]);
        self.used[off as usize] = false;
        self.lowest_bit = self.lowest_bit.min(off);
        self.highest_bit = self.highest_bit.max(off);
        self.nr_swap_pages += 1;
        self.inuse -= 1;
    }

    fn is_used(&self, off: u32) -> bool {
        self.used.get(off as usize).copied().unwrap_or(true)
    }

    /// `scan_swap_map_slots` without `cluster_info`, for up to `nr` slots.
    fn scan(&mut self, nr: u32, out: &mut Vec<u32>) {
        let mut lr = LATENCY_LIMIT;
        let mut scanned_many = false;
        let mut scan_base = self.cluster_next;
        let mut offset = scan_base;
        let was = self.cluster_nr;
        self.cluster_nr = self.cluster_nr.wrapping_sub(1);
        if was == 0 {
            if self.pages - self.inuse < CLUSTER {
                self.cluster_nr = CLUSTER - 1;
            } else {
                // Look for 512 consecutive free slots from lowest_bit.
                scan_base = self.lowest_bit;
                offset = scan_base;
                let mut last = offset + CLUSTER - 1;
                let mut found = false;
                while last <= self.highest_bit {
                    if self.is_used(offset) {
                        last = offset + CLUSTER;
                    } else if offset == last {
                        offset -= CLUSTER - 1;
                        self.cluster_next = offset;
                        self.cluster_nr = CLUSTER - 1;
                        found = true;
                        break;
                    }
                    lr -= 1;
                    if lr < 0 {
                        lr = LATENCY_LIMIT;
                    }
                    offset += 1;
                }
                if !found {
                    offset = scan_base;
                    self.cluster_nr = CLUSTER - 1;
                }
            }
        }
        let n0 = out.len();
        let mut checks = true;
        loop {
            if checks {
                if self.highest_bit == 0 {
                    return; // no_page: cluster_next unchanged
                }
                if offset > self.highest_bit {
                    scan_base = self.lowest_bit;
                    offset = scan_base;
                }
                if self.is_used(offset) {
                    if out.len() == n0 {
                        checks = false;
                        continue;
                    }
                    self.cluster_next = offset + 1;
                    return;
                }
                self.used[offset as usize] = true;
                self.range_alloc(offset);
                out.push(offset);
                if (out.len() - n0) as u32 == nr || offset >= self.highest_bit {
                    self.cluster_next = offset + 1;
                    return;
                }
                lr -= 1;
                if lr < 0 {
                    self.cluster_next = offset + 1;
                    return;
                }
                if self.cluster_nr != 0 {
                    offset += 1;
                    if !self.is_used(offset) {
                        self.cluster_nr -= 1;
                        continue;
                    }
                }
                if !scanned_many {
                    let limit = if offset < scan_base {
                        scan_base
                    } else {
                        self.highest_bit
                    };
                    let mut hit = false;
                    while offset <= limit {
                        lr -= 1;
                        if lr <= 0 {
                            break;
                        }
                        if !self.is_used(offset) {
                            hit = true;
                            break;
                        }
                        offset += 1;
                    }
                    if hit {
                        continue;
                    }
                }
                self.cluster_next = offset + 1;
                return;
            } else {
                // scan: the next free slot after offset, wrapping to lowest_bit.
                let found = self
                    .first_free(offset + 1, self.highest_bit + 1, &mut lr, &mut scanned_many)
                    .or_else(|| {
                        let lo = self.lowest_bit;
                        self.first_free(lo, scan_base, &mut lr, &mut scanned_many)
                    });
                match found {
                    Some(o) => offset = o,
                    None => return, // no_page
                }
                checks = true;
            }
        }
    }

    /// The scan loops of `scan_swap_map_slots`: the first free slot in `from..to`, each step
    /// counting down `latency_ration` (a wrap marks `scanned_many`).
    fn first_free(&self, from: u32, to: u32, lr: &mut i32, scanned_many: &mut bool) -> Option<u32> {
        for off in from..to {
            *lr -= 1;
            if *lr < 0 {
                *lr = LATENCY_LIMIT;
                *scanned_many = true;
            }
            if !self.is_used(off) {
                return Some(off);
            }
        }
        None
    }

    /// `get_swap_pages(n_goal)` on this one device.
    fn get_swap_pages(&mut self, n_goal: u32, out: &mut Vec<u32>) {
        if self.nr_swap_pages <= 0 {
            return;
        }
        let n = (n_goal.min(BATCH) as i64).min(self.nr_swap_pages) as u32;
        self.nr_swap_pages -= n as i64;
        let before = out.len();
        if self.highest_bit != 0 {
            self.scan(n, out);
        }
        self.nr_swap_pages += (n as usize - (out.len() - before)) as i64;
    }

    /// `__drain_swap_slots_cache`: give back the reserved and the pending slots.
    fn drain(&mut self) {
        while let Some(s) = self.cache.pop_front() {
            self.entry_free(s);
        }
        for s in std::mem::take(&mut self.ret) {
            self.entry_free(s);
        }
    }

    /// `check_cache_active` with one CPU.
    fn check_cache_active(&mut self) -> bool {
        if !self.active {
            if self.nr_swap_pages > 5 * BATCH as i64 {
                self.active = true;
            }
            return self.active;
        }
        if self.nr_swap_pages < 2 * BATCH as i64 {
            self.active = false;
            self.drain();
        }
        self.active
    }

    /// `vm_swap_full` (include/linux/swap.h): fewer than half the device's slots are free
    /// (`nr_swap_pages * 2 < total_swap_pages`; slots reserved in the slots cache or waiting
    /// in `slots_ret` count as used, as `nr_swap_pages` counts them).
    pub fn vm_swap_full(&self) -> bool {
        self.nr_swap_pages * 2 < self.pages as i64
    }

    /// `folio_alloc_swap`: a slot for one page, `None` when the device is full.
    pub fn alloc(&mut self) -> Option<u32> {
        let mut got = Vec::new();
        if self.check_cache_active() {
            if self.cache.is_empty() {
                self.get_swap_pages(BATCH, &mut got);
                self.cache.extend(got.drain(..));
            }
            if let Some(s) = self.cache.pop_front() {
                return Some(s);
            }
        }
        self.get_swap_pages(1, &mut got);
        got.first().copied()
    }

    /// `free_swap_slot`: the slot's last reference is gone.
    pub fn free(&mut self, off: u32) {
        if self.active {
            if self.ret.len() as u32 >= BATCH {
                for s in std::mem::take(&mut self.ret) {
                    self.entry_free(s);
                }
            }
            self.ret.push(off);
        } else {
            self.entry_free(off);
        }
    }

    /// Add `n` free slots at the end (a full device grows instead of failing the swap-out).
    pub fn grow(&mut self, n: u32) {
        let old = self.len();
        self.used.resize((old + n) as usize, false);
        self.pages += n;
        self.nr_swap_pages += n as i64;
        self.lowest_bit = self.lowest_bit.min(old);
        self.highest_bit = old + n - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(r: &mut Rotational, n: usize) -> Vec<u32> {
        (0..n).map(|_| r.alloc().unwrap()).collect()
    }

    #[test]
    fn every_slot_is_the_one_a_real_kernel_gave() {
        // A Debian 6.1.172 kernel under QEMU (1 vCPU, 64 MiB swap on virtio-blk: last_page
        // 16,383) ran tests/data/swap-slots-rotational-init.c: 6,000 pages paged out one at a
        // time (MADV_PAGEOUT), then random page-outs, read and write swap-ins, MADV_DONTNEED
        // and touches; each page-out printed the slot /proc/self/pagemap gave it ("P page
        // slot"). A read swap-in keeps the slot in the swap cache (a later page-out reuses it);
        // a write swap-in and MADV_DONTNEED free it. Swap never gets half full here.
        let log = include_str!("../../tests/data/swap-slots-rotational-6.1.log");
        let mut r = Rotational::new(16_383);
        let mut slot: std::collections::HashMap<u64, u32> = Default::default();
        let (mut outs, mut wrong) = (0, Vec::new());
        for line in log.lines().skip_while(|l| *l != "@@begin").skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 2 {
                continue;
            }
            let page: u64 = f[1].parse().unwrap();
            match f[0] {
                "P" => {
                    let got = *slot.entry(page).or_insert_with(|| r.alloc().unwrap());
                    let want: u32 = f[2].parse().unwrap();
                    outs += 1;
                    if got != want && wrong.len() < 5 {
                        wrong.push((outs, page, want, got));
                    }
                }
                "W" | "D" => {
                    if let Some(s) = slot.remove(&page) {
                        r.free(s);
                    }
                }
                _ => {} // R keeps the slot; T touches a page that has none
            }
        }
        assert_eq!(outs, 9_610);
        assert!(
            wrong.is_empty(),
            "(page-out #, page, kernel slot, model slot): {wrong:?}"
        );
    }

    #[test]
    fn a_fresh_device_first_hands_out_three_slots() {
        // By hand: the search for 512 free slots from lowest_bit 1 finds 1..=512 after 511
        // steps that each decrement latency_ration (256 → -1 wraps to 256 once, then 254
        // more: 2 left). Each slot taken decrements it and the batch ends below 0: slots 1, 2
        // and 3 (the kernel's first batch of 3), then batches of 64 from slot 4.
        let mut r = Rotational::new(16_383);
        assert_eq!(take(&mut r, 3), vec![1, 2, 3]);
        assert_eq!(take(&mut r, 64), (4..68).collect::<Vec<_>>());
    }

    #[test]
    fn freed_slots_wait_for_64_more_before_reuse() {
        // Free slots 1..=64 (held in slots_ret), then the 65th free releases them; the cursor
        // still moves forward, so they are reused only when the search comes back to them.
        let mut r = Rotational::new(2_047);
        let a = take(&mut r, 200);
        for &s in &a[..64] {
            r.free(s);
        }
        assert!(
            (1..=64).all(|s| r.used[s as usize]),
            "pending, not yet free"
        );
        r.free(a[64]);
        assert!((1..=64).all(|s| !r.used[s as usize]));
        assert!(r.used[a[64] as usize]);
        assert_eq!(r.lowest_bit, 1);
    }
}

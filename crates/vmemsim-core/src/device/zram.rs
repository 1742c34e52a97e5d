//! zram: a RAM block device storing compressed pages, modelled on Linux 6.8
//! `drivers/block/zram/zram_drv.c` and its allocator `mm/zsmalloc.c`.
//!
//! Synchronous and CPU-bound: a request is done when the submitting thread has compressed
//! (write) or decompressed (read) its pages, `done_at = now + cpu_ns`, with no queue. Per page:
//! - write (`zram_write_page`): a same-filled page (`ContentClass::Zero`; `page_same_filled`)
//!   stores no data, only the fill value (`ZRAM_SAME`), costing `same_us`. Any other page is
//!   compressed (`write_us`); a compressed length of at least `huge_class_size` is stored as
//!   the whole 4096-byte page (`ZRAM_HUGE`). The slot's previous content is freed first
//!   (`zram_free_page`).
//! - read (`zram_read_from_zspool`): decided by what the slot holds — same-filled or never
//!   written: a fill (`same_us`); huge: a 4 KiB copy (`copy_us`); else decompression
//!   (`read_us`). The caller's content classes are not consulted for reads.
//! - discard (`zram_slot_free_notify` → `zram_free_page`): releases the slot's object.
//!
//! Compressed length per class: `ceil(4096 / ratio)` for `Text` and `Numeric` (ratios are
//! parameters, see [`super::ZramParams`]), 4096 for `Random`, none for `Zero`, 41 bytes for
//! `Sparse` (LZO-RLE's output, [`super::SPARSE_COMPRESSED_BYTES`]).
//!
//! Memory (`ram_bytes`): each stored object takes the zsmalloc size class that `zs_malloc`
//! picks for its length plus the in-object handle (`size += ZS_HANDLE_SIZE`), plus the 8-byte
//! handle itself from the `zs_handle` slab cache. The class table follows `zs_create_pool` for
//! x86-64 with 4 KiB pages and `CONFIG_ZSMALLOC_CHAIN_SIZE = 8` (the 6.8 default): classes of
//! 32 + 16·i bytes, a class merged into the next larger one when both have the same pages per
//! zspage and objects per zspage, and `huge_class_size` = 3625 bytes. Left out: partly filled
//! zspages (zram's `mem_used_total` counts whole zspages, so real usage is somewhat higher
//! until compaction), the per-slot table (16 bytes × disksize / 4096, allocated once when
//! the disk size is set, not counted here), `mem_limit`, writeback to a backing device,
//! recompression, and multiple compression streams' contention.

use super::{
    us_to_ns, ContentClass, DeviceStats, IoCompletion, IoKind, SwapDevice, ZramParams, PAGE_BYTES,
};

const ZS_MIN_ALLOC_SIZE: u32 = 32;
const ZS_SIZE_CLASS_DELTA: u32 = 16;
const ZS_MAX_ALLOC_SIZE: u32 = PAGE_BYTES as u32;
/// `DIV_ROUND_UP(ZS_MAX_ALLOC_SIZE - ZS_MIN_ALLOC_SIZE, ZS_SIZE_CLASS_DELTA) + 1`
const ZS_SIZE_CLASSES: usize =
    ((ZS_MAX_ALLOC_SIZE - ZS_MIN_ALLOC_SIZE).div_ceil(ZS_SIZE_CLASS_DELTA) + 1) as usize;
const ZS_MAX_PAGES_PER_ZSPAGE: u32 = 8;
const ZS_HANDLE_SIZE: u32 = 8;

/// Slot states in the slot table: the compressed length (1..=4096; 4096 = huge) or these.
const EMPTY: u16 = 0;
const SAME: u16 = u16::MAX;
const HUGE: u16 = PAGE_BYTES as u16;

/// zsmalloc's size classes as `zs_create_pool` builds them.
#[derive(Clone, Debug)]
pub struct SizeClasses {
    /// Bytes of the (possibly merged) class at each index.
    size: [u16; ZS_SIZE_CLASSES],
    /// Compressed lengths from here on are stored as huge pages.
    pub huge_class_size: u32,
}

/// `calculate_zspage_chain_size`: the pages per zspage (1..=8) that waste least, the first
/// on ties; 1 for power-of-two sizes.
fn chain_size(class_size: u32) -> u32 {
    if class_size.is_power_of_two() {
        return 1;
    }
    let mut best = (u32::MAX, 1);
    for pages in 1..=ZS_MAX_PAGES_PER_ZSPAGE {
        let waste = (pages * ZS_MAX_ALLOC_SIZE) % class_size;
        if waste < best.0 {
            best = (waste, pages);
        }
    }
    best.1
}

impl SizeClasses {
    pub fn new() -> SizeClasses {
        let mut size = [0u16; ZS_SIZE_CLASSES];
        let mut huge_class_size = 0;
        // (size, pages per zspage, objects per zspage) of the last class created.
        let mut prev: Option<(u32, u32, u32)> = None;
        for i in (0..ZS_SIZE_CLASSES).rev() {
            let s = (ZS_MIN_ALLOC_SIZE + i as u32 * ZS_SIZE_CLASS_DELTA).min(ZS_MAX_ALLOC_SIZE);
            let pages = chain_size(s);
            let objs = pages * ZS_MAX_ALLOC_SIZE / s;
            if pages != 1 && objs != 1 && huge_class_size == 0 {
                huge_class_size = s - (ZS_HANDLE_SIZE - 1);
            }
            match prev {
                Some((ps, pp, po)) if pp == pages && po == objs => size[i] = ps as u16,
                _ => {
                    prev = Some((s, pages, objs));
                    size[i] = s as u16;
                }
            }
        }
        SizeClasses {
            size,
            huge_class_size,
        }
    }

    /// Class size for an allocation of `bytes` (`get_size_class_index`).
    pub fn class_size(&self, bytes: u32) -> u32 {
        let idx = if bytes > ZS_MIN_ALLOC_SIZE {
            (bytes - ZS_MIN_ALLOC_SIZE).div_ceil(ZS_SIZE_CLASS_DELTA) as usize
        } else {
            0
        };
        self.size[idx.min(ZS_SIZE_CLASSES - 1)] as u32
    }

    /// Host RAM taken by one stored object of compressed length `comp_len`: its class
    /// (`zs_malloc` adds the in-object handle first) plus the `zs_handle` slab object.
    pub fn object_bytes(&self, comp_len: u32) -> u64 {
        (self.class_size(comp_len + ZS_HANDLE_SIZE) + ZS_HANDLE_SIZE) as u64
    }
}

impl Default for SizeClasses {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Debug)]
pub struct Zram {
    read_ns: u64,
    write_ns: u64,
    same_ns: u64,
    copy_ns: u64,
    /// Slot state stored by a write of each content class (indexed by `ContentClass as u8`).
    stored_as: [u16; 5],
    /// RAM per compressed length 1..=4096 (`object_bytes`); EMPTY and SAME take none.
    bytes_of: Box<[u32]>,
    classes: SizeClasses,
    max_slots: u64,
    /// State of each slot, grown on demand up to `max_slots`.
    slots: Vec<u16>,
    ram: u64,
    stats: DeviceStats,
}

impl Zram {
    /// `p` must have passed `ZramParams::check` (as `super::build` does).
    pub fn new(p: &ZramParams) -> Zram {
        let classes = SizeClasses::new();
        let comp = |ratio: f64| -> u16 {
            let len = (PAGE_BYTES as f64 / ratio.max(1.0))
                .ceil()
                .clamp(1.0, 4096.0) as u32;
            if len >= classes.huge_class_size {
                HUGE
            } else {
                len as u16
            }
        };
        let mut bytes_of = vec![0u32; HUGE as usize + 1];
        for (len, b) in bytes_of.iter_mut().enumerate().skip(1) {
            *b = classes.object_bytes(len as u32) as u32;
        }
        Zram {
            read_ns: us_to_ns(p.read_us),
            write_ns: us_to_ns(p.write_us),
            same_ns: us_to_ns(p.same_us),
            copy_ns: us_to_ns(p.copy_us),
            stored_as: [
                SAME,
                comp(p.text_ratio),
                comp(p.numeric_ratio),
                HUGE,
                super::SPARSE_COMPRESSED_BYTES as u16,
            ],
            bytes_of: bytes_of.into_boxed_slice(),
            classes,
            max_slots: p.disksize_mib.saturating_mul(1 << 20) / PAGE_BYTES,
            slots: Vec::new(),
            ram: 0,
            stats: DeviceStats::default(),
        }
    }

    pub fn size_classes(&self) -> &SizeClasses {
        &self.classes
    }

    /// Compressed length a write of `class` stores (0 for same-filled pages).
    pub fn compressed_len(&self, class: ContentClass) -> u32 {
        match self.stored_as[class as usize] {
            SAME => 0,
            len => len as u32,
        }
    }

    fn slot_state(&self, slot: u64) -> u16 {
        usize::try_from(slot)
            .ok()
            .and_then(|i| self.slots.get(i))
            .copied()
            .unwrap_or(EMPTY)
    }

    /// `zram_free_page`: release what `slot` holds.
    fn free_slot(&mut self, i: usize) {
        let Some(old) = self.slots.get(i).copied() else {
            return;
        };
        if old == EMPTY {
            return;
        }
        let s = &mut self.stats;
        s.pages_stored -= 1;
        match old {
            SAME => s.same_pages -= 1,
            len => {
                if len == HUGE {
                    s.huge_pages -= 1;
                }
                s.compr_data_bytes -= len as u64;
                self.ram -= self.bytes_of[len as usize] as u64;
            }
        }
        self.slots[i] = EMPTY;
    }

    /// Store state `new` in slot `i` (< `max_slots`), freeing what it held.
    fn store(&mut self, i: usize, new: u16) {
        if i >= self.slots.len() {
            // Amortised growth (Vec::resize reserves geometrically).
            self.slots.resize(i + 1, EMPTY);
        }
        self.free_slot(i);
        let s = &mut self.stats;
        s.pages_stored += 1;
        match new {
            SAME => s.same_pages += 1,
            len => {
                if len == HUGE {
                    s.huge_pages += 1;
                }
                s.compr_data_bytes += len as u64;
                self.ram += self.bytes_of[len as usize] as u64;
            }
        }
        self.slots[i] = new;
    }

    /// Slot index if `slot + off` is inside the disk.
    fn index(&self, slot: u64, off: u64) -> Option<usize> {
        let s = slot.checked_add(off)?;
        if s >= self.max_slots {
            return None;
        }
        usize::try_from(s).ok()
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.slots.len() as u64 > self.max_slots {
            return Err(format!(
                "zram: {} slots beyond disk of {}",
                self.slots.len(),
                self.max_slots
            ));
        }
        let (mut stored, mut same, mut huge, mut compr, mut ram) = (0u64, 0u64, 0u64, 0u64, 0u64);
        for &st in &self.slots {
            match st {
                EMPTY => {}
                SAME => {
                    stored += 1;
                    same += 1;
                }
                len => {
                    if len > HUGE || (len >= self.classes.huge_class_size as u16 && len != HUGE) {
                        return Err(format!("zram: bad stored length {len}"));
                    }
                    stored += 1;
                    huge += (len == HUGE) as u64;
                    compr += len as u64;
                    ram += self.classes.object_bytes(len as u32);
                }
            }
        }
        let s = &self.stats;
        let got = (
            s.pages_stored,
            s.same_pages,
            s.huge_pages,
            s.compr_data_bytes,
            self.ram,
        );
        if got != (stored, same, huge, compr, ram) {
            return Err(format!(
                "zram: counters (stored, same, huge, compr, ram) {got:?} but slots give {:?}",
                (stored, same, huge, compr, ram)
            ));
        }
        if s.bytes_read != s.pages_read * PAGE_BYTES
            || s.bytes_written != s.pages_written * PAGE_BYTES
        {
            return Err(format!("zram: bytes and pages disagree: {s:?}"));
        }
        if s.cpu_ns != s.service_total_ns || s.busy_ns != 0 || s.queue_delay_total_ns != 0 {
            return Err(format!("zram: time counters disagree: {s:?}"));
        }
        Ok(())
    }
}

impl SwapDevice for Zram {
    fn reads_content(&self) -> bool {
        true
    }
    fn name(&self) -> &str {
        "zram"
    }

    fn submit(
        &mut self,
        now: u64,
        kind: IoKind,
        slot: u64,
        classes: &[ContentClass],
    ) -> IoCompletion {
        if classes.is_empty() {
            return IoCompletion {
                done_at: now,
                cpu_ns: 0,
            };
        }
        let mut cpu = 0u64;
        let mut done_pages = 0u64;
        for (off, &class) in classes.iter().enumerate() {
            let Some(i) = self.index(slot, off as u64) else {
                self.stats.out_of_range_pages += 1;
                continue;
            };
            done_pages += 1;
            cpu = cpu.saturating_add(match kind {
                IoKind::Write => {
                    let new = self.stored_as[class as usize];
                    self.store(i, new);
                    if new == SAME {
                        self.same_ns
                    } else {
                        self.write_ns
                    }
                }
                IoKind::Read => match self.slot_state(i as u64) {
                    EMPTY | SAME => self.same_ns,
                    HUGE => self.copy_ns,
                    _ => self.read_ns,
                },
            });
        }
        let s = &mut self.stats;
        match kind {
            IoKind::Read => {
                s.read_requests += 1;
                s.pages_read += done_pages;
                s.bytes_read += done_pages * PAGE_BYTES;
            }
            IoKind::Write => {
                s.write_requests += 1;
                s.pages_written += done_pages;
                s.bytes_written += done_pages * PAGE_BYTES;
            }
        }
        s.cpu_ns = s.cpu_ns.saturating_add(cpu);
        s.service_total_ns = s.service_total_ns.saturating_add(cpu);
        IoCompletion {
            done_at: now.saturating_add(cpu),
            cpu_ns: cpu,
        }
    }

    fn discard(&mut self, slot: u64, pages: u32) {
        for off in 0..pages as u64 {
            match self.index(slot, off) {
                Some(i) if i < self.slots.len() => self.free_slot(i),
                // Beyond the table (never written) or beyond the disk: nothing stored.
                _ => {
                    if slot.saturating_add(off) >= self.slots.len() as u64 {
                        break;
                    }
                }
            }
        }
        self.stats.pages_discarded = self.stats.pages_discarded.saturating_add(pages as u64);
    }

    fn ram_bytes(&self) -> u64 {
        self.ram
    }

    fn stats(&self) -> DeviceStats {
        let mut s = self.stats.clone();
        s.ram_bytes = self.ram;
        s
    }

    fn validate(&self) -> Result<(), String> {
        Zram::validate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ContentClass::*;
    use IoKind::*;

    fn zram() -> Zram {
        Zram::new(&ZramParams::default())
    }

    fn go(z: &mut Zram, now: u64, kind: IoKind, slot: u64, c: &[ContentClass]) -> IoCompletion {
        let r = z.submit(now, kind, slot, c);
        z.validate().unwrap();
        r
    }

    /// Values from an independent re-computation of `zs_create_pool` (x86-64, 4 KiB pages,
    /// chain size 8) done in Python while writing this module: huge_class_size = 3625; an
    /// object of length L takes the class of L + 8, merged upwards.
    #[test]
    fn zsmalloc_size_classes() {
        let c = SizeClasses::new();
        assert_eq!(c.huge_class_size, 3625);
        assert_eq!(ZS_SIZE_CLASSES, 255);
        assert_eq!(c.class_size(1), 32);
        assert_eq!(c.class_size(32), 32);
        assert_eq!(c.class_size(33), 48);
        assert_eq!(c.class_size(108), 112);
        assert_eq!(c.class_size(1374), 1424);
        assert_eq!(c.class_size(2056), 2176);
        assert_eq!(c.class_size(3008), 3072);
        assert_eq!(c.class_size(3632), 3632);
        assert_eq!(c.class_size(3633), 4096);
        assert_eq!(c.class_size(4104), 4096);
        assert_eq!(c.class_size(1032), 1056);
        assert_eq!(c.class_size(2739), 2864);
        // Power-of-two classes are one page per zspage.
        assert_eq!(chain_size(2048), 1);
        // 1376: 8 pages waste 32768 − 23×1376 = 1120, the least of 1..=8.
        assert_eq!(chain_size(1376), 8);
    }

    #[test]
    fn compressed_lengths_per_class() {
        let z = zram();
        assert_eq!(z.compressed_len(Zero), 0);
        assert_eq!(z.compressed_len(Text), 1366); // ceil(4096 / 3)
        assert_eq!(z.compressed_len(Numeric), 2048);
        assert_eq!(z.compressed_len(Random), 4096);
        // Just under and at huge_class_size.
        let p = |r: f64| ZramParams {
            text_ratio: r,
            ..ZramParams::default()
        };
        let z = Zram::new(&p(1.1303)); // 4096 / 1.1303 = 3623.8 → 3624
        assert_eq!(z.compressed_len(Text), 3624);
        let z = Zram::new(&p(1.13)); // 3624.8 → 3625 = huge_class_size → stored whole
        assert_eq!(z.compressed_len(Text), 4096);
        let z = Zram::new(&p(4096.0));
        assert_eq!(z.compressed_len(Text), 1);
    }

    #[test]
    fn write_read_discard_costs_and_memory() {
        let mut z = zram();
        // Text: 35 µs; 1366 + 8 → class 1424, + 8 handle = 1432 bytes.
        let c = go(&mut z, 1_000, Write, 0, &[Text]);
        assert_eq!(
            c,
            IoCompletion {
                done_at: 36_000,
                cpu_ns: 35_000
            }
        );
        assert_eq!(z.ram_bytes(), 1432);
        // Zero 1 µs (no memory), Text 35, Numeric 35 (2048 + 8 → 2176, + 8 = 2184),
        // Random 35 (huge: 4096 + 8 handle = 4104).
        let c = go(&mut z, 0, Write, 10, &[Zero, Text, Numeric, Random]);
        assert_eq!(c.cpu_ns, 1_000 + 3 * 35_000);
        assert_eq!(c.done_at, 106_000);
        assert_eq!(z.ram_bytes(), 1432 + 1432 + 2184 + 4104);
        let s = z.stats();
        assert_eq!((s.pages_stored, s.same_pages, s.huge_pages), (5, 1, 1));
        assert_eq!(s.compr_data_bytes, 1366 * 2 + 2048 + 4096);
        assert_eq!(s.ram_bytes, 9152);
        // Reads follow what the slots hold: fill 1, decompress 20, 20, copy 1; slot 14 was
        // never written: fill 1. The classes passed for a read do not matter.
        let c = go(
            &mut z,
            500,
            Read,
            10,
            &[Random, Random, Random, Random, Random],
        );
        assert_eq!(c.cpu_ns, 1_000 + 20_000 + 20_000 + 1_000 + 1_000);
        assert_eq!(c.done_at, 500 + 43_000);
        assert_eq!(z.ram_bytes(), 9152, "reads keep the data (swap cache)");
        // Overwrite slot 11 (Text → Random) frees the old object first.
        go(&mut z, 0, Write, 11, &[Random]);
        assert_eq!(z.ram_bytes(), 9152 - 1432 + 4104);
        assert_eq!(z.stats().huge_pages, 2);
        // Discard 10..14 (14 never written) and a slot beyond the table.
        z.discard(10, 5);
        z.discard(1_000_000, 3);
        z.validate().unwrap();
        assert_eq!(z.ram_bytes(), 1432);
        let s = z.stats();
        assert_eq!((s.pages_stored, s.same_pages, s.huge_pages), (1, 0, 0));
        assert_eq!(s.compr_data_bytes, 1366);
        assert_eq!(s.pages_discarded, 8);
        assert_eq!((s.write_requests, s.read_requests), (3, 1));
        assert_eq!((s.pages_written, s.pages_read), (6, 5));
        assert_eq!(s.cpu_ns, 35_000 + 106_000 + 43_000 + 35_000);
        // A discarded slot reads as zeros again.
        assert_eq!(go(&mut z, 0, Read, 12, &[Numeric]).cpu_ns, 1_000);
        z.discard(0, 1);
        assert_eq!(z.ram_bytes(), 0);
        z.validate().unwrap();
    }

    #[test]
    fn parameters_change_costs_and_sizes() {
        let p = ZramParams {
            read_us: 7.0,
            write_us: 11.5,
            same_us: 0.25,
            copy_us: 0.5,
            text_ratio: 4.0,
            numeric_ratio: 1.5,
            disksize_mib: 1,
        };
        let mut z = Zram::new(&p);
        let c = go(&mut z, 0, Write, 0, &[Text, Numeric, Zero]);
        assert_eq!(c.cpu_ns, 11_500 * 2 + 250);
        // From the Python table: Text 1024 + 8 = 1032 → index 63 (1040), merged into 1056
        // (both 8 pages / 31 objects), + 8 = 1064; Numeric ceil(4096/1.5) = 2731 + 8 = 2739
        // → class 2864 (7 pages / 10 objects), + 8 = 2872.
        assert_eq!(z.compressed_len(Text), 1024);
        assert_eq!(z.compressed_len(Numeric), 2731);
        assert_eq!(z.ram_bytes(), 1064 + 2872);
        let c = go(&mut z, 0, Read, 0, &[Text, Text, Text, Text]);
        // decompress, decompress, fill (same), fill (never written).
        assert_eq!(c.cpu_ns, 7_000 * 2 + 250 * 2);
    }

    #[test]
    fn out_of_range_and_extreme_inputs_do_not_panic() {
        // 1 MiB disk = 256 slots.
        let mut z = Zram::new(&ZramParams {
            disksize_mib: 1,
            ..ZramParams::default()
        });
        let c = go(&mut z, 0, Write, 255, &[Text, Text]);
        assert_eq!(c.cpu_ns, 35_000);
        assert_eq!(z.stats().out_of_range_pages, 1);
        assert_eq!(z.stats().pages_written, 1);
        let c = go(&mut z, 0, Write, u64::MAX, &[Numeric, Numeric]);
        assert_eq!(
            c,
            IoCompletion {
                done_at: 0,
                cpu_ns: 0
            }
        );
        let c = go(&mut z, u64::MAX, Read, u64::MAX - 1, &[Zero; 3]);
        assert_eq!(
            c,
            IoCompletion {
                done_at: u64::MAX,
                cpu_ns: 0
            }
        );
        assert_eq!(z.stats().out_of_range_pages, 6);
        assert_eq!(
            go(&mut z, 7, Write, 0, &[]),
            IoCompletion {
                done_at: 7,
                cpu_ns: 0
            }
        );
        z.discard(u64::MAX, u32::MAX);
        z.discard(250, u32::MAX);
        z.validate().unwrap();
        assert_eq!(z.ram_bytes(), 0);
        assert!(z.slots.len() <= 256);
        let c = go(&mut z, u64::MAX - 10, Write, 3, &[Text]);
        assert_eq!(c.done_at, u64::MAX);
    }
}

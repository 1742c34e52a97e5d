//! Swap devices with timing: what a swap-out or swap-in costs in simulated time and CPU time,
//! and how much host RAM the device itself takes (zram).
//!
//! Kinds (one file each, built from a [`DeviceSpec`] by [`build`]):
//! - `ssd`, `nvme`, `remote` ([`queued::QueuedDevice`]): a fixed access latency plus the
//!   transfer time of the request's bytes, served by `qd` parallel channels in FIFO order. The
//!   three kinds differ only in their defaults (documented on [`QueuedParams`]).
//! - `zram` ([`zram::Zram`]): synchronous compression in the submitting thread's CPU time, with
//!   the compressed pool's size tracked per slot from each page's [`ContentClass`].
//! - `hdd` ([`hdd::Hdd`]): a rotating disk, one head that seeks (by the distance from the
//!   previous request), waits for the platter and transfers, one request at a time. Swap on
//!   it is rotational swap (the kernel's rotational slot allocator and cluster readahead).
//!
//! Times are u64 nanoseconds of simulated time. A request is `pages` contiguous 4 KiB slots.
//! Left out everywhere: I/O errors, the I/O schedulers' own merging and reordering (the plug's
//! merging of contiguous bios is the caller's: it asks [`SwapDevice::max_request_pages`] how
//! many pages one request may carry), and device-internal effects such as SSD garbage
//! collection or write caches beyond what the configured latencies already contain.

pub mod hdd;
pub mod queued;
pub mod zram;

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// Bytes in one swap slot (one 4 KiB page).
pub const PAGE_BYTES: u64 = 4096;

/// Direction of one swap request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IoKind {
    Read,
    Write,
}

/// How well a page's content compresses (zram): set per page by the workload.
///
/// `Zero` stands for any same-filled page (every 8-byte word equal, zeros being the common
/// case), which zram stores without data; `Random` for incompressible data. `Sparse` is a
/// page of zeros but for its first 8-byte word (a counter written into freshly touched
/// memory: the pages of `vmemsim validate`'s guest program), which LZO-RLE compresses to
/// [`SPARSE_COMPRESSED_BYTES`].
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContentClass {
    Zero,
    Text,
    Numeric,
    Random,
    Sparse,
}

impl ContentClass {
    /// Names as workload specs and the CLI spell them, in discriminant order.
    pub const NAMES: &'static [&'static str] = &["zero", "text", "numeric", "random", "sparse"];
    pub const ALL: [ContentClass; 5] = [
        ContentClass::Zero,
        ContentClass::Text,
        ContentClass::Numeric,
        ContentClass::Random,
        ContentClass::Sparse,
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The class named `s` (one of [`ContentClass::NAMES`]), or an error naming `key`.
    pub fn parse(key: &str, s: &str) -> Result<ContentClass> {
        Self::NAMES
            .iter()
            .position(|&n| n == s)
            .map(|i| Self::ALL[i])
            .ok_or_else(|| {
                Error::config(
                    key,
                    format!(
                        "unknown content class '{s}'; valid: {}",
                        Self::NAMES.join(", ")
                    ),
                )
            })
    }
}

/// Compressed length of a [`ContentClass::Sparse`] page under LZO-RLE (`lzorle1x_1_compress`
/// → `lzogeneric1x_1_compress` in `lib/lzo/lzo1x_compress.c`, the same in 6.1 and 6.8; zram's
/// default `CONFIG_ZRAM_DEF_COMP`): for a 4 KiB page whose first little-endian 8-byte word is
/// below 2^40 and whose other 4,088 bytes are zero, the 2-byte RLE header, a literal run of
/// the word and the zeros before the first match, two zero-run tokens (runs of up to 2,051
/// bytes), the last 20 bytes as literals and the 3-byte end marker: 41 bytes. Worked out by
/// running the kernel's compressor (compiled in user space) on such pages: 36 bytes plus the
/// word's significant bytes, at least 5 (a word of 2^63 gives 44).
pub const SPARSE_COMPRESSED_BYTES: u32 = 41;

/// The outcome of one submitted request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoCompletion {
    /// When the data is there (read) / safely stored (write).
    pub done_at: u64,
    /// CPU time the submitting thread spends (zram compress/decompress; the submission path
    /// for block devices). `done_at >= now + cpu_ns` always.
    pub cpu_ns: u64,
}

/// A swap device with timing. Object-safe; the engine holds a `Box<dyn SwapDevice>`.
pub trait SwapDevice: Send {
    fn name(&self) -> &str;
    /// One request of `classes.len()` contiguous 4 KiB swap slots starting at `slot`, submitted
    /// at `now`; `classes` gives each page's content class. A request of zero pages is a no-op
    /// (`done_at == now`, nothing counted). Requests are expected in non-decreasing `now`.
    fn submit(
        &mut self,
        now: u64,
        kind: IoKind,
        slot: u64,
        classes: &[ContentClass],
    ) -> IoCompletion;
    /// Slots freed (swap entry freed): zram releases their compressed storage
    /// (`zram_slot_free_notify`); block devices only count them.
    fn discard(&mut self, slot: u64, pages: u32);
    /// Whether a request's time depends on the pages' content classes (zram compresses
    /// them); a block device only counts them, so callers may pass any class.
    fn reads_content(&self) -> bool {
        false
    }
    /// The most pages one request may carry: the block layer merges a bio into the last
    /// request of the submitter's plug when it continues it (`blk_attempt_plug_merge`), up to
    /// the queue's `max_segments` (a swapped page is one segment) and `max_sectors`. 1: no
    /// merging (zram is a bio-based driver, which the plug does not hold: each page is
    /// stored synchronously).
    fn max_request_pages(&self) -> u32 {
        1
    }
    /// Bytes of host RAM the device itself occupies now (zram's compressed pool; 0 otherwise).
    fn ram_bytes(&self) -> u64 {
        0
    }
    fn stats(&self) -> DeviceStats;
    /// Recount every invariant of the device's state; for tests.
    fn validate(&self) -> std::result::Result<(), String> {
        Ok(())
    }
}

/// Counters of one device since it was built. Requests and pages are counted at submission;
/// times are counted at submission for the request's whole service (so `busy_ns` may include
/// service that ends after the moment the stats are read).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceStats {
    pub read_requests: u64,
    pub write_requests: u64,
    pub pages_read: u64,
    pub pages_written: u64,
    /// Uncompressed bytes moved (pages × 4096).
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Slots freed through `discard`.
    pub pages_discarded: u64,
    /// Time requests waited for a free channel (start of service − arrival), summed and max.
    pub queue_delay_total_ns: u64,
    pub queue_delay_max_ns: u64,
    /// Sum of the requests' service times (latency + transfer; zram: its CPU time).
    pub service_total_ns: u64,
    /// Time during which at least one request was in service (the block layer's `io_ticks`);
    /// 0 for zram, which has no device of its own.
    pub busy_ns: u64,
    /// CPU time charged to submitters (the sum of `IoCompletion::cpu_ns`).
    pub cpu_ns: u64,
    /// zram: slots holding data now (zram's `pages_stored`), of which same-filled and huge.
    pub pages_stored: u64,
    pub same_pages: u64,
    pub huge_pages: u64,
    /// zram: compressed bytes stored (zram's `compr_data_size`).
    pub compr_data_bytes: u64,
    /// zram: host RAM used by the pool now (see `Zram`), as `ram_bytes()`.
    pub ram_bytes: u64,
    /// zram: pages of requests beyond the device's size (the block layer fails such a bio in
    /// `bio_check_eod`); they are neither stored nor charged.
    pub out_of_range_pages: u64,
}

impl DeviceStats {
    /// Count one block request of `pages` pages that reached the device at `arrival`, was
    /// served from `start` to `done` (`arrival <= start <= done`), and cost its submitter
    /// `cpu_ns` (the device's `busy_ns` is its own to count).
    pub(crate) fn count_request(
        &mut self,
        kind: IoKind,
        pages: u64,
        (arrival, start, done): (u64, u64, u64),
        cpu_ns: u64,
    ) {
        let bytes = pages.saturating_mul(PAGE_BYTES);
        match kind {
            IoKind::Read => {
                self.read_requests += 1;
                self.pages_read = self.pages_read.saturating_add(pages);
                self.bytes_read = self.bytes_read.saturating_add(bytes);
            }
            IoKind::Write => {
                self.write_requests += 1;
                self.pages_written = self.pages_written.saturating_add(pages);
                self.bytes_written = self.bytes_written.saturating_add(bytes);
            }
        }
        let wait = start - arrival;
        self.queue_delay_total_ns = self.queue_delay_total_ns.saturating_add(wait);
        self.queue_delay_max_ns = self.queue_delay_max_ns.max(wait);
        self.service_total_ns = self.service_total_ns.saturating_add(done - start);
        self.cpu_ns = self.cpu_ns.saturating_add(cpu_ns);
    }

    /// Add another device's counters (the longest queue delay is a max).
    pub fn add(&mut self, o: &DeviceStats) {
        crate::util::add_fields!(self, o;
            read_requests, write_requests, pages_read, pages_written, bytes_read,
            bytes_written, pages_discarded, queue_delay_total_ns, service_total_ns, busy_ns,
            cpu_ns, pages_stored, same_pages, huge_pages, compr_data_bytes, ram_bytes,
            out_of_range_pages;
            max: queue_delay_max_ns);
    }

    /// Add what one request (or discard) changed between two readings of a device
    /// (`before`, `after`): a shared device's counters split by who submitted to it. The
    /// longest queue delay is that request's own.
    pub fn add_delta(&mut self, before: &DeviceStats, after: &DeviceStats) {
        macro_rules! delta {
            ($($f:ident),*) => {
                $( self.$f = self.$f.wrapping_add(after.$f.wrapping_sub(before.$f)); )*
            };
        }
        delta!(
            read_requests,
            write_requests,
            pages_read,
            pages_written,
            bytes_read,
            bytes_written,
            pages_discarded,
            queue_delay_total_ns,
            service_total_ns,
            busy_ns,
            cpu_ns,
            pages_stored,
            same_pages,
            huge_pages,
            compr_data_bytes,
            ram_bytes,
            out_of_range_pages
        );
        let delay = after.queue_delay_total_ns - before.queue_delay_total_ns;
        self.queue_delay_max_ns = self.queue_delay_max_ns.max(delay);
    }
}

/// Parameters of a latency + bandwidth + queue-depth device (`ssd`, `nvme`, `remote`).
///
/// A request's service time is `latency + pages × 4096 / bandwidth` (read or write values);
/// `qd` channels serve requests in parallel, a request taking the earliest free channel in
/// arrival order (a deterministic multi-server FIFO queue). Bandwidth is per channel: parallel
/// multi-page requests are not slowed by a shared link (left out; swap requests are mostly a
/// few pages, so latency dominates). Before reaching the device a request spends `submit_us`
/// of CPU in the submitting thread (block layer + driver), charged as `cpu_ns`.
///
/// Defaults and their sources:
/// - `ssd`: `read_latency_us = write_latency_us = 7500`, `qd = 32`, `read_bw_mbps = 550`,
///   `write_bw_mbps = 520`, `submit_us = 2`. The characterization paper (§IV) measured ~7.5 ms
///   per 4 KiB read and write on its SSD swap on the loaded system, naming neither the drive
///   nor the queue depth, so the measurement cannot be split into service time and queueing.
///   We take it whole as the access latency and let `qd = 32` (SATA NCQ's 32 command tags)
///   bound concurrency: with fewer than 32 requests outstanding (the paper runs at most 12
///   application threads plus kswapd) a 1-page request takes 7.5 ms + 4096 B / 550 MB/s ≈
///   7.507 ms, the measured figure; only beyond 32 do requests queue. This reproduces the
///   measured latency at the paper's load and does not predict how it changes with load. The
///   bandwidths are typical SATA III drive ratings (e.g. Samsung 860 EVO: 550/520 MB/s, under
///   the 600 MB/s link); they matter only for multi-page requests.
/// - `nvme`: `read_latency_us = write_latency_us = 90`, `qd = 64`, `read_bw_mbps = 3500`,
///   `write_bw_mbps = 3300`, `submit_us = 2`. 90 µs is inside the 80–200 µs range for NAND
///   NVMe swap under load in the project's KERNEL-FACTS; NVMe latency stays nearly flat with
///   queue depth (AnandTech's Intel SSD DC P3700 review, random 4K read vs QD), so no extra
///   queueing is built in. We have no separate figure for writes and use the same value.
///   `qd = 64` is an estimate: rated random-read IOPS of a PCIe 3.0 ×4 drive (~600 k, e.g.
///   Samsung 970 EVO Plus) × 90 µs ≈ 54, rounded up. Bandwidths: the 970 EVO Plus's rated
///   3,500/3,300 MB/s sequential read/write.
/// - `remote` (RDMA far memory as in Infiniswap, Gu et al., NSDI'17, on 56 Gb/s InfiniBand):
///   `read_latency_us = write_latency_us = 3`, `read_bw_mbps = write_bw_mbps = 7000` (the
///   56 Gb/s line rate; protocol overhead left out), `qd = 32`, `submit_us = 2`. One-sided
///   RDMA reads and writes of a page complete in single-digit µs (Infiniswap's motivation); 3 µs +
///   4096 B at 7 GB/s ≈ 3.6 µs per 4 KiB is our estimate inside that range. `qd = 32` is an
///   estimate (outstanding RDMA operations per connection). Infiniswap is a block device, so
///   the submission path is the block layer's, as for `ssd`.
/// - `submit_us = 2` for all three is an estimate of `submit_bio` → blk-mq → driver doorbell
///   (the Linux block layer costs a few µs per request); not measured here. A bio merged
///   into a request already in the plug costs nothing more here (left out).
/// - `max_pages`: the largest request after the plug's merging of contiguous swap writes
///   (`blk_attempt_plug_merge`; a swapped 4 KiB page is one segment): `ssd` 168, AHCI's
///   `sg_tablesize` (`AHCI_MAX_SG`, drivers/ata/ahci.h; below the 1,280 KiB of
///   `BLK_DEF_MAX_SECTORS_CAP`); `nvme` 128, `NVME_MAX_SEGS` (drivers/nvme/host/pci.c);
///   `remote` 128, the block layer's default `max_segments` (`BLK_MAX_SEGMENTS`). 1: no
///   merging.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueuedParams {
    pub read_latency_us: f64,
    pub write_latency_us: f64,
    pub read_bw_mbps: f64,
    pub write_bw_mbps: f64,
    pub qd: u32,
    pub submit_us: f64,
    /// The most pages one request carries once the plug has merged contiguous bios.
    pub max_pages: u32,
}

impl QueuedParams {
    pub const SSD: QueuedParams = QueuedParams {
        read_latency_us: 7500.0,
        write_latency_us: 7500.0,
        read_bw_mbps: 550.0,
        write_bw_mbps: 520.0,
        qd: 32,
        submit_us: 2.0,
        max_pages: 168,
    };
    pub const NVME: QueuedParams = QueuedParams {
        read_latency_us: 90.0,
        write_latency_us: 90.0,
        read_bw_mbps: 3500.0,
        write_bw_mbps: 3300.0,
        qd: 64,
        submit_us: 2.0,
        max_pages: 128,
    };
    pub const REMOTE: QueuedParams = QueuedParams {
        read_latency_us: 3.0,
        write_latency_us: 3.0,
        read_bw_mbps: 7000.0,
        write_bw_mbps: 7000.0,
        qd: 32,
        submit_us: 2.0,
        max_pages: 128,
    };
    /// Keys of the spec string; `latency_us` and `bw_mbps` set both directions.
    pub const KEYS: &'static [&'static str] = &[
        "read_latency_us",
        "write_latency_us",
        "latency_us",
        "read_bw_mbps",
        "write_bw_mbps",
        "bw_mbps",
        "qd",
        "submit_us",
        "max_pages",
    ];
    /// Largest `qd` accepted: NVMe's maximum queue size (65,536 entries).
    pub const MAX_QD: u32 = 65_536;
    /// Largest `max_pages` accepted (a 256 MiB request).
    pub const MAX_PAGES: u32 = 65_536;

    fn set(&mut self, kind: &str, key: &str, v: &str) -> Result<()> {
        let k = |key: &str| format!("{kind}.{key}");
        match key {
            "read_latency_us" => self.read_latency_us = time_us(&k(key), v)?,
            "write_latency_us" => self.write_latency_us = time_us(&k(key), v)?,
            "latency_us" => {
                let t = time_us(&k(key), v)?;
                self.read_latency_us = t;
                self.write_latency_us = t;
            }
            "read_bw_mbps" => self.read_bw_mbps = bandwidth(&k(key), v)?,
            "write_bw_mbps" => self.write_bw_mbps = bandwidth(&k(key), v)?,
            "bw_mbps" => {
                let b = bandwidth(&k(key), v)?;
                self.read_bw_mbps = b;
                self.write_bw_mbps = b;
            }
            "qd" => self.qd = whole(&k(key), v, 1, Self::MAX_QD as u64)? as u32,
            "submit_us" => self.submit_us = time_us(&k(key), v)?,
            "max_pages" => self.max_pages = whole(&k(key), v, 1, Self::MAX_PAGES as u64)? as u32,
            _ => return Err(unknown_key(kind, key, Self::KEYS)),
        }
        Ok(())
    }

    fn check(&self, kind: &str) -> Result<()> {
        let k = |key: &str| format!("{kind}.{key}");
        check_time(&k("read_latency_us"), self.read_latency_us)?;
        check_time(&k("write_latency_us"), self.write_latency_us)?;
        check_bw(&k("read_bw_mbps"), self.read_bw_mbps)?;
        check_bw(&k("write_bw_mbps"), self.write_bw_mbps)?;
        check_time(&k("submit_us"), self.submit_us)?;
        if !(1..=Self::MAX_QD).contains(&self.qd) {
            return Err(Error::config(
                k("qd"),
                format!("{}: must be 1 to {}", self.qd, Self::MAX_QD),
            ));
        }
        if !(1..=Self::MAX_PAGES).contains(&self.max_pages) {
            return Err(Error::config(
                k("max_pages"),
                format!("{}: must be 1 to {}", self.max_pages, Self::MAX_PAGES),
            ));
        }
        Ok(())
    }

    fn entries(&self) -> Vec<(&'static str, Num)> {
        vec![
            ("read_latency_us", Num::F(self.read_latency_us)),
            ("write_latency_us", Num::F(self.write_latency_us)),
            ("read_bw_mbps", Num::F(self.read_bw_mbps)),
            ("write_bw_mbps", Num::F(self.write_bw_mbps)),
            ("qd", Num::U(self.qd as u64)),
            ("submit_us", Num::F(self.submit_us)),
            ("max_pages", Num::U(self.max_pages as u64)),
        ]
    }
}

/// Parameters of `zram` (see [`zram::Zram`] for the model).
///
/// Defaults and their sources:
/// - `read_us = 20`, `write_us = 35`: the characterization paper's (§IV) measured 4 KiB read
///   (decompression) and write (compression) latencies with LZO-RLE. Used for every
///   compressible page; we have no per-content timing and do not invent one.
/// - `same_us = 1`: a same-filled page (`ContentClass::Zero`) is detected by
///   `page_same_filled` (one pass over 512 words) and stored without data; its read is a fill
///   (`zram_fill_page`). Reads of never-written slots take the same path. Estimate.
/// - `copy_us = 1`: reading a huge (incompressible) page is a 4 KiB `memcpy` with no
///   decompression (`zram_read_from_zspool`). Estimate. Writing one still runs the compressor
///   first (`zram_write_page`), so it costs `write_us`.
/// - `text_ratio = 3`, `numeric_ratio = 2`: LZO-RLE compression ratios per page. Estimates:
///   LZO reaches ~2.1:1 on general file data (the LZ4/LZO comparison quoted in the commit that
///   added zram's zcomp backends, "zram: introduce compressing backend abstraction", and
///   zram benchmarks untarring source trees), and one user report of zram swap on a phone
///   (Jolla) shows compr_data_size/orig_data_size = 0.32, near 3:1, for anonymous memory. Which
///   workload data gets which class is the workload's choice. `Random` pages are
///   incompressible by definition.
/// - `disksize_mib = 32768` (32 GiB): the zram disk size bounds the slot table. The kernel has
///   no default (it must be set); 32 GiB holds the paper's 12–16 GiB footprints twice over.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ZramParams {
    pub read_us: f64,
    pub write_us: f64,
    pub same_us: f64,
    pub copy_us: f64,
    pub text_ratio: f64,
    pub numeric_ratio: f64,
    pub disksize_mib: u64,
}

impl Default for ZramParams {
    fn default() -> Self {
        ZramParams {
            read_us: 20.0,
            write_us: 35.0,
            same_us: 1.0,
            copy_us: 1.0,
            text_ratio: 3.0,
            numeric_ratio: 2.0,
            disksize_mib: 32 * 1024,
        }
    }
}

impl ZramParams {
    pub const KEYS: &'static [&'static str] = &[
        "read_us",
        "write_us",
        "same_us",
        "copy_us",
        "text_ratio",
        "numeric_ratio",
        "disksize_mib",
    ];
    /// Largest disk accepted: 1 TiB (a slot table of at most 512 MiB here).
    pub const MAX_DISKSIZE_MIB: u64 = 1 << 20;

    fn set(&mut self, key: &str, v: &str) -> Result<()> {
        let k = format!("zram.{key}");
        match key {
            "read_us" => self.read_us = time_us(&k, v)?,
            "write_us" => self.write_us = time_us(&k, v)?,
            "same_us" => self.same_us = time_us(&k, v)?,
            "copy_us" => self.copy_us = time_us(&k, v)?,
            "text_ratio" => self.text_ratio = ratio(&k, v)?,
            "numeric_ratio" => self.numeric_ratio = ratio(&k, v)?,
            "disksize_mib" => self.disksize_mib = whole(&k, v, 1, Self::MAX_DISKSIZE_MIB)?,
            _ => return Err(unknown_key("zram", key, Self::KEYS)),
        }
        Ok(())
    }

    pub(crate) fn check(&self) -> Result<()> {
        check_time("zram.read_us", self.read_us)?;
        check_time("zram.write_us", self.write_us)?;
        check_time("zram.same_us", self.same_us)?;
        check_time("zram.copy_us", self.copy_us)?;
        check_ratio("zram.text_ratio", self.text_ratio)?;
        check_ratio("zram.numeric_ratio", self.numeric_ratio)?;
        if !(1..=Self::MAX_DISKSIZE_MIB).contains(&self.disksize_mib) {
            return Err(Error::config(
                "zram.disksize_mib",
                format!(
                    "{}: must be 1 to {}",
                    self.disksize_mib,
                    Self::MAX_DISKSIZE_MIB
                ),
            ));
        }
        Ok(())
    }

    fn entries(&self) -> Vec<(&'static str, Num)> {
        vec![
            ("read_us", Num::F(self.read_us)),
            ("write_us", Num::F(self.write_us)),
            ("same_us", Num::F(self.same_us)),
            ("copy_us", Num::F(self.copy_us)),
            ("text_ratio", Num::F(self.text_ratio)),
            ("numeric_ratio", Num::F(self.numeric_ratio)),
            ("disksize_mib", Num::U(self.disksize_mib)),
        ]
    }
}

/// Parameters of `hdd` (see [`hdd::Hdd`] for the model).
///
/// Defaults and their sources:
/// - `rpm = 7200`: the common speed of 3.5-inch desktop and nearline SATA disks; half a
///   revolution, the average rotational wait, is then 4.17 ms by arithmetic.
///   `rpm = 0` is a disk without a platter: no rotational wait (with `seek_us = 0` and
///   `min_seek_us = 0`, no seek either: a disk image in a host file, as QEMU's virtio-blk
///   serves a guest from one, whose requests cost `submit_us` and the transfer at `bw_mbps`;
///   swap on it is still rotational, as the guest sees it).
/// - `seek_us = 8500`, `min_seek_us = 1000`: average and track-to-track seek. Estimates of the
///   order 7,200 rpm drives' data sheets give (8–9 ms average read seek, about 1 ms
///   track-to-track), not one drive's figures.
/// - `bw_mbps = 150`: sustained media rate, an estimate between such a drive's inner and outer
///   zones (about 100–200 MB/s); reads and writes alike.
/// - `size = 4 GiB`: the swap partition (`hdd:size=SIZE` of `vmemsim replay --swap` too); the
///   seek distances are fractions of it. Written with a unit (`512MiB`, `4GiB`) or in bytes.
///   Swap on it has `size / 4 KiB − 1` slots (mkswap's header page).
/// - `submit_us = 2`: the block layer's submission path, as for `ssd` (estimate).
/// - `max_pages = 168`: the largest request after the plug's merging, a SATA disk's
///   (`AHCI_MAX_SG`, as for `ssd`).
/// - `cache = 64MiB`: the drive's buffer, with its write cache enabled (the ATA/SCSI default
///   for SATA disks, which Linux's sd driver reports as "Write cache: enabled"): a write
///   completes once its data is in the buffer, and the drive writes it to the platter when
///   its head is idle or the buffer is full; after a read the drive reads on (look-ahead)
///   while idle. 64 MB is the buffer of the VSwapper paper's drive, a Seagate Constellation
///   ES 2 TB (its data sheet; 64–256 MB on current 7,200 rpm disks). `cache = 0`: a write
///   completes when on the platter, and no look-ahead.
/// - `interface_mbps = 600`: the link between the host and the buffer (SATA 6 Gb/s after
///   8b/10b coding); a transfer from or to the buffer runs at this rate, at least the media
///   rate.
/// - `overhead_us = 0`: a fixed time each operation of the head takes besides its seek, turn
///   and transfer (a command's processing). Left at 0 for the disk (not modelled by default);
///   `vmemsim validate --timed` sets it for QEMU's virtio disk, whose time per request it
///   measured (docs/validate.md).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HddParams {
    pub size_bytes: u64,
    pub rpm: f64,
    pub seek_us: f64,
    pub min_seek_us: f64,
    pub bw_mbps: f64,
    pub submit_us: f64,
    /// The most pages one request carries once the plug has merged contiguous bios.
    pub max_pages: u32,
    /// The drive's buffer, bytes (0: write-through, no look-ahead).
    pub cache_bytes: u64,
    pub interface_mbps: f64,
    pub overhead_us: f64,
}

impl Default for HddParams {
    fn default() -> Self {
        HddParams {
            size_bytes: 4 << 30,
            rpm: 7200.0,
            seek_us: 8500.0,
            min_seek_us: 1000.0,
            bw_mbps: 150.0,
            submit_us: 2.0,
            max_pages: 168,
            cache_bytes: 64 << 20,
            interface_mbps: 600.0,
            overhead_us: 0.0,
        }
    }
}

impl HddParams {
    pub const KEYS: &'static [&'static str] = &[
        "size",
        "rpm",
        "seek_us",
        "min_seek_us",
        "bw_mbps",
        "submit_us",
        "max_pages",
        "cache",
        "interface_mbps",
        "overhead_us",
    ];
    /// The largest buffer accepted (drives have 8 MiB to 512 MiB).
    pub const MAX_CACHE: u64 = 4 << 30;
    /// Sizes accepted: two pages (a header and one slot) to 1 TiB (2^28 slots, the swap
    /// map's bound here).
    pub const MIN_SIZE: u64 = 2 * PAGE_BYTES;
    pub const MAX_SIZE: u64 = 1 << 40;
    /// Speeds accepted, rpm.
    pub const RPM: (f64, f64) = (60.0, 100_000.0);

    /// Pages the disk holds.
    pub fn pages(&self) -> u64 {
        self.size_bytes / PAGE_BYTES
    }

    /// Swap slots on it: its pages less mkswap's header page (`last_page`).
    pub fn swap_slots(&self) -> u32 {
        self.pages().saturating_sub(1).min(u32::MAX as u64) as u32
    }

    fn set(&mut self, key: &str, v: &str) -> Result<()> {
        let k = format!("hdd.{key}");
        match key {
            "size" => self.size_bytes = size_bytes(&k, v)?,
            "rpm" => self.rpm = number(&k, v)?,
            "seek_us" => self.seek_us = time_us(&k, v)?,
            "min_seek_us" => self.min_seek_us = time_us(&k, v)?,
            "bw_mbps" => self.bw_mbps = bandwidth(&k, v)?,
            "submit_us" => self.submit_us = time_us(&k, v)?,
            "max_pages" => self.max_pages = whole(&k, v, 1, QueuedParams::MAX_PAGES as u64)? as u32,
            "cache" => self.cache_bytes = size_bytes(&k, v)?,
            "interface_mbps" => self.interface_mbps = bandwidth(&k, v)?,
            "overhead_us" => self.overhead_us = time_us(&k, v)?,
            _ => return Err(unknown_key("hdd", key, Self::KEYS)),
        }
        Ok(())
    }

    fn check(&self) -> Result<()> {
        check_time("hdd.seek_us", self.seek_us)?;
        check_time("hdd.min_seek_us", self.min_seek_us)?;
        check_time("hdd.submit_us", self.submit_us)?;
        check_bw("hdd.bw_mbps", self.bw_mbps)?;
        if self.min_seek_us > self.seek_us {
            return Err(Error::config(
                "hdd.min_seek_us",
                format!(
                    "{}: the shortest seek cannot exceed the average (seek_us = {})",
                    self.min_seek_us, self.seek_us
                ),
            ));
        }
        let (lo, hi) = Self::RPM;
        if !(self.rpm == 0.0 || self.rpm.is_finite() && (lo..=hi).contains(&self.rpm)) {
            return Err(Error::config(
                "hdd.rpm",
                format!("{}: must be 0 (no platter) or {lo} to {hi}", self.rpm),
            ));
        }
        if !(1..=QueuedParams::MAX_PAGES).contains(&self.max_pages) {
            return Err(Error::config(
                "hdd.max_pages",
                format!(
                    "{}: must be 1 to {}",
                    self.max_pages,
                    QueuedParams::MAX_PAGES
                ),
            ));
        }
        if !(Self::MIN_SIZE..=Self::MAX_SIZE).contains(&self.size_bytes) {
            return Err(Error::config(
                "hdd.size",
                format!("{} bytes: must be 8 KiB to 1 TiB", self.size_bytes),
            ));
        }
        if self.cache_bytes > Self::MAX_CACHE {
            return Err(Error::config(
                "hdd.cache",
                format!("{} bytes: must be 0 (no cache) to 4 GiB", self.cache_bytes),
            ));
        }
        check_bw("hdd.interface_mbps", self.interface_mbps)?;
        check_time("hdd.overhead_us", self.overhead_us)?;
        Ok(())
    }

    fn entries(&self) -> Vec<(&'static str, Num)> {
        vec![
            ("size", Num::U(self.size_bytes)),
            ("rpm", Num::F(self.rpm)),
            ("seek_us", Num::F(self.seek_us)),
            ("min_seek_us", Num::F(self.min_seek_us)),
            ("bw_mbps", Num::F(self.bw_mbps)),
            ("submit_us", Num::F(self.submit_us)),
            ("max_pages", Num::U(self.max_pages as u64)),
            ("cache", Num::U(self.cache_bytes)),
            ("interface_mbps", Num::F(self.interface_mbps)),
            ("overhead_us", Num::F(self.overhead_us)),
        ]
    }
}

/// A size in bytes: a whole number with an optional unit (B, K/KiB, M/MiB, G/GiB, T/TiB;
/// powers of 1024).
fn size_bytes(key: &str, v: &str) -> Result<u64> {
    let t = v.trim().replace('_', "");
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let (num, unit) = t.split_at(digits);
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        "T" | "TiB" => 1 << 40,
        _ => {
            return Err(Error::config(
                key,
                format!("'{v}': expected a size such as 512MiB or 4GiB"),
            ))
        }
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| {
            Error::config(
                key,
                format!("'{v}': expected a size such as 512MiB or 4GiB"),
            )
        })
}

/// A device kind with its parameters: the config of one swap device.
///
/// Written as a spec string `kind[:key=value,...]` (e.g. `ssd:latency_us=7500,qd=32`; keys not
/// given keep the kind's defaults) or, through serde, as a map `{"kind": "ssd", "qd": 32}`.
/// Both reject unknown keys by name, and both round-trip: `Display` and `Serialize` write
/// every parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DeviceSpec {
    Ssd(QueuedParams),
    Nvme(QueuedParams),
    Remote(QueuedParams),
    Zram(ZramParams),
    Hdd(HddParams),
}

impl DeviceSpec {
    /// Every kind: (name, one-line description).
    pub const KINDS: &'static [(&'static str, &'static str)] = &[
        ("ssd", "SATA SSD: 7.5 ms per 4 KiB as measured by the characterization paper, qd 32"),
        ("nvme", "NVMe SSD: 90 µs per 4 KiB, qd 64, GB/s bandwidth"),
        ("zram", "compressed RAM: LZO-RLE 20 µs read / 35 µs write of CPU time, pool counted against RAM"),
        ("remote", "RDMA far memory (Infiniswap-like): ~3.6 µs per 4 KiB over 56 Gb/s"),
        ("hdd", "7,200 rpm disk: seek by distance (8.5 ms average), half a turn, 150 MB/s, 64 MiB write cache and look-ahead; rotational swap"),
    ];

    /// The defaults of kind `name`.
    pub fn defaults(name: &str) -> Result<DeviceSpec> {
        match name.trim().to_ascii_lowercase().as_str() {
            "ssd" => Ok(DeviceSpec::Ssd(QueuedParams::SSD)),
            "nvme" => Ok(DeviceSpec::Nvme(QueuedParams::NVME)),
            "remote" => Ok(DeviceSpec::Remote(QueuedParams::REMOTE)),
            "zram" => Ok(DeviceSpec::Zram(ZramParams::default())),
            "hdd" => Ok(DeviceSpec::Hdd(HddParams::default())),
            _ => {
                let names: Vec<&str> = Self::KINDS.iter().map(|k| k.0).collect();
                Err(Error::config(
                    "device",
                    format!("unknown device kind '{name}'; valid: {}", names.join(", ")),
                ))
            }
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            DeviceSpec::Ssd(_) => "ssd",
            DeviceSpec::Nvme(_) => "nvme",
            DeviceSpec::Remote(_) => "remote",
            DeviceSpec::Zram(_) => "zram",
            DeviceSpec::Hdd(_) => "hdd",
        }
    }

    /// The swap slots of a rotating disk (`hdd`): swap on it is rotational (no
    /// `SWP_SOLIDSTATE`), which the kernel serves with its rotational slot allocator
    /// (`scan_swap_map_slots` without per-CPU clusters) and cluster readahead
    /// (`swap_use_vma_readahead` is false while `nr_rotate_swap` > 0). `None` for the others.
    pub fn rotational_slots(&self) -> Option<u32> {
        match self {
            DeviceSpec::Hdd(p) => Some(p.swap_slots()),
            _ => None,
        }
    }

    /// The largest request the plug's merging makes on this device (its `max_pages`; zram,
    /// a bio-based driver with no plug, takes one page at a time).
    pub fn max_request_pages(&self) -> u32 {
        match self {
            DeviceSpec::Ssd(p) | DeviceSpec::Nvme(p) | DeviceSpec::Remote(p) => p.max_pages,
            DeviceSpec::Zram(_) => 1,
            DeviceSpec::Hdd(p) => p.max_pages,
        }
    }

    /// Set one parameter from its text; the error names `kind.key`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let kind = self.kind();
        match self {
            DeviceSpec::Ssd(p) | DeviceSpec::Nvme(p) | DeviceSpec::Remote(p) => {
                p.set(kind, key, value)
            }
            DeviceSpec::Zram(p) => p.set(key, value),
            DeviceSpec::Hdd(p) => p.set(key, value),
        }
    }

    /// Check every parameter's range (for specs built in code rather than parsed).
    pub fn check(&self) -> Result<()> {
        match self {
            DeviceSpec::Ssd(p) | DeviceSpec::Nvme(p) | DeviceSpec::Remote(p) => {
                p.check(self.kind())
            }
            DeviceSpec::Zram(p) => p.check(),
            DeviceSpec::Hdd(p) => p.check(),
        }
    }

    fn entries(&self) -> Vec<(&'static str, Num)> {
        match self {
            DeviceSpec::Ssd(p) | DeviceSpec::Nvme(p) | DeviceSpec::Remote(p) => p.entries(),
            DeviceSpec::Zram(p) => p.entries(),
            DeviceSpec::Hdd(p) => p.entries(),
        }
    }

    /// Parse `kind[:key=value,...]`.
    pub fn parse(s: &str) -> Result<DeviceSpec> {
        let s = s.trim();
        let (kind, rest) = match s.split_once(':') {
            Some((k, r)) => (k, Some(r)),
            None => (s, None),
        };
        let mut spec = Self::defaults(kind)?;
        let kind = spec.kind();
        let Some(rest) = rest else {
            return Ok(spec);
        };
        let mut seen: Vec<&str> = Vec::new();
        for item in rest.split(',') {
            let item = item.trim();
            if item.is_empty() {
                return Err(Error::config(
                    kind,
                    format!("empty entry in '{s}' (expected key=value,...)"),
                ));
            }
            let Some((key, value)) = item.split_once('=') else {
                return Err(Error::config(
                    format!("{kind}.{item}"),
                    "expected key=value",
                ));
            };
            let (key, value) = (key.trim(), value.trim());
            if seen.contains(&key) {
                return Err(Error::config(format!("{kind}.{key}"), "given twice"));
            }
            seen.push(key);
            spec.set(key, value)?;
        }
        spec.check()?;
        Ok(spec)
    }
}

impl fmt::Display for DeviceSpec {
    /// The canonical spec string, every parameter written: parses back to an equal spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.kind())?;
        for (i, (k, v)) in self.entries().iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

/// A parameter value as written out.
#[derive(Clone, Copy, Debug)]
enum Num {
    F(f64),
    U(u64),
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Rust prints the shortest text that parses back to the same f64.
            Num::F(x) => write!(f, "{x}"),
            Num::U(x) => write!(f, "{x}"),
        }
    }
}

impl Serialize for DeviceSpec {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let e = self.entries();
        let mut m = s.serialize_map(Some(e.len() + 1))?;
        m.serialize_entry("kind", self.kind())?;
        for (k, v) in e {
            match v {
                Num::F(x) => m.serialize_entry(k, &x)?,
                Num::U(x) => m.serialize_entry(k, &x)?,
            }
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for DeviceSpec {
    /// A map with `kind` and any parameters; missing parameters keep the kind's defaults, and
    /// every value goes through the same checks as the spec string.
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DeviceSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a device map such as {\"kind\": \"ssd\", \"qd\": 32}")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<DeviceSpec, A::Error> {
                let mut kind: Option<String> = None;
                let mut kv: Vec<(String, String)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "kind" {
                        kind = Some(map.next_value::<String>()?);
                        continue;
                    }
                    let v: Scalar = map
                        .next_value()
                        .map_err(|e| de::Error::custom(format_args!("device.{key}: {e}")))?;
                    if kv.iter().any(|(k, _)| *k == key) {
                        return Err(de::Error::custom(format_args!("device.{key}: given twice")));
                    }
                    kv.push((key, v.0));
                }
                let kind = kind.ok_or_else(|| de::Error::custom("device.kind: missing"))?;
                let mut spec = DeviceSpec::defaults(&kind).map_err(de::Error::custom)?;
                for (k, v) in &kv {
                    spec.set(k, v).map_err(de::Error::custom)?;
                }
                spec.check().map_err(de::Error::custom)?;
                Ok(spec)
            }
        }
        d.deserialize_map(V)
    }
}

/// A number (or a string holding one) read from a config, kept as text for `DeviceSpec::set`.
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Scalar, E> {
                Ok(Scalar(format!("{v}")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// Longest time parameter accepted: one hour, in µs (keeps every ns value far from overflow).
const MAX_TIME_US: f64 = 3.6e9;
/// Bandwidth range accepted, MB/s.
const MIN_BW_MBPS: f64 = 1e-3;
const MAX_BW_MBPS: f64 = 1e9;

fn number(key: &str, v: &str) -> Result<f64> {
    let x: f64 = v
        .replace('_', "")
        .parse()
        .map_err(|_| Error::config(key, format!("'{v}': not a number")))?;
    Ok(x)
}

fn check_time(key: &str, x: f64) -> Result<()> {
    if !(x.is_finite() && (0.0..=MAX_TIME_US).contains(&x)) {
        return Err(Error::config(
            key,
            format!("{x}: must be a time in µs from 0 to {MAX_TIME_US}"),
        ));
    }
    Ok(())
}

fn check_bw(key: &str, x: f64) -> Result<()> {
    if !(x.is_finite() && (MIN_BW_MBPS..=MAX_BW_MBPS).contains(&x)) {
        return Err(Error::config(
            key,
            format!("{x}: must be a bandwidth in MB/s from {MIN_BW_MBPS} to {MAX_BW_MBPS}"),
        ));
    }
    Ok(())
}

fn check_ratio(key: &str, x: f64) -> Result<()> {
    if !(x.is_finite() && (1.0..=PAGE_BYTES as f64).contains(&x)) {
        return Err(Error::config(
            key,
            format!("{x}: must be a compression ratio from 1 to 4096"),
        ));
    }
    Ok(())
}

fn time_us(key: &str, v: &str) -> Result<f64> {
    let x = number(key, v)?;
    check_time(key, x)?;
    Ok(x)
}

fn bandwidth(key: &str, v: &str) -> Result<f64> {
    let x = number(key, v)?;
    check_bw(key, x)?;
    Ok(x)
}

fn ratio(key: &str, v: &str) -> Result<f64> {
    let x = number(key, v)?;
    check_ratio(key, x)?;
    Ok(x)
}

fn whole(key: &str, v: &str, lo: u64, hi: u64) -> Result<u64> {
    let x: u64 = v
        .replace('_', "")
        .parse()
        .map_err(|_| Error::config(key, format!("'{v}': not a whole number")))?;
    if !(lo..=hi).contains(&x) {
        return Err(Error::config(key, format!("{x}: must be {lo} to {hi}")));
    }
    Ok(x)
}

fn unknown_key(kind: &str, key: &str, valid: &[&str]) -> Error {
    Error::config(
        format!("{kind}.{key}"),
        format!("unknown key; valid: {}", valid.join(", ")),
    )
}

/// µs (checked to `0..=MAX_TIME_US`) to whole ns.
pub(crate) fn us_to_ns(us: f64) -> u64 {
    (us * 1000.0).round() as u64
}

/// Build the device a spec describes (its parameters checked first).
pub fn build(spec: &DeviceSpec) -> Result<Box<dyn SwapDevice>> {
    spec.check()?;
    Ok(match spec {
        DeviceSpec::Ssd(p) => Box::new(queued::QueuedDevice::new("ssd", p)),
        DeviceSpec::Nvme(p) => Box::new(queued::QueuedDevice::new("nvme", p)),
        DeviceSpec::Remote(p) => Box::new(queued::QueuedDevice::new("remote", p)),
        DeviceSpec::Zram(p) => Box::new(zram::Zram::new(p)),
        DeviceSpec::Hdd(p) => Box::new(hdd::Hdd::new(p)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ContentClass::*;

    fn key_of(e: Error) -> String {
        match e.into_kind() {
            crate::error::ErrorKind::Config { key, .. } => key,
            other => panic!("not a config error: {other:?}"),
        }
    }

    #[test]
    fn defaults_of_each_kind() {
        let ssd = DeviceSpec::parse("ssd").unwrap();
        let DeviceSpec::Ssd(p) = ssd else {
            panic!("{ssd:?}")
        };
        assert_eq!(p.read_latency_us, 7500.0);
        assert_eq!(p.write_latency_us, 7500.0);
        assert_eq!(p.qd, 32);
        assert_eq!(p.read_bw_mbps, 550.0);
        assert_eq!(p.write_bw_mbps, 520.0);
        assert_eq!(p.submit_us, 2.0);
        assert_eq!(
            DeviceSpec::parse(" NVMe ").unwrap(),
            DeviceSpec::Nvme(QueuedParams::NVME)
        );
        assert_eq!(
            DeviceSpec::parse("remote:").unwrap_err(),
            Error::config(
                "remote",
                "empty entry in 'remote:' (expected key=value,...)"
            )
        );
        let DeviceSpec::Zram(z) = DeviceSpec::parse("zram").unwrap() else {
            panic!()
        };
        assert_eq!((z.read_us, z.write_us), (20.0, 35.0));
        assert_eq!((z.text_ratio, z.numeric_ratio), (3.0, 2.0));
        assert_eq!(z.disksize_mib, 32768);
    }

    #[test]
    fn overrides_and_aliases() {
        let s = DeviceSpec::parse("ssd:latency_us=100, qd=4,write_bw_mbps=1_000").unwrap();
        let DeviceSpec::Ssd(p) = s else { panic!() };
        assert_eq!((p.read_latency_us, p.write_latency_us), (100.0, 100.0));
        assert_eq!(p.qd, 4);
        assert_eq!((p.read_bw_mbps, p.write_bw_mbps), (550.0, 1000.0));
        let s = DeviceSpec::parse("nvme:bw_mbps=10.5,read_latency_us=0.5,submit_us=0").unwrap();
        let DeviceSpec::Nvme(p) = s else { panic!() };
        assert_eq!((p.read_bw_mbps, p.write_bw_mbps), (10.5, 10.5));
        assert_eq!((p.read_latency_us, p.write_latency_us), (0.5, 90.0));
        assert_eq!(p.submit_us, 0.0);
        let s = DeviceSpec::parse("zram:text_ratio=2.5,disksize_mib=1,same_us=0").unwrap();
        let DeviceSpec::Zram(z) = s else { panic!() };
        assert_eq!((z.text_ratio, z.disksize_mib, z.same_us), (2.5, 1, 0.0));
        let s = DeviceSpec::parse("hdd:size=512MiB,rpm=5400,seek_us=12000").unwrap();
        let DeviceSpec::Hdd(h) = s else { panic!() };
        assert_eq!(
            (h.size_bytes, h.rpm, h.seek_us),
            (512 << 20, 5400.0, 12000.0)
        );
        // 512 MiB is 131,072 pages, one of them mkswap's header.
        assert_eq!(s.rotational_slots(), Some(131_071));
        assert_eq!(DeviceSpec::parse(&s.to_string()).unwrap(), s);
        assert_eq!(DeviceSpec::parse("ssd").unwrap().rotational_slots(), None);
    }

    #[test]
    fn bad_specs_name_the_key() {
        let cases: &[(&str, &str)] = &[
            ("ssd:foo=1", "ssd.foo"),
            ("zram:qd=4", "zram.qd"),
            ("remote:disksize_mib=4", "remote.disksize_mib"),
            ("ssd:qd=0", "ssd.qd"),
            ("ssd:qd=65537", "ssd.qd"),
            ("ssd:qd=2.5", "ssd.qd"),
            ("ssd:qd=abc", "ssd.qd"),
            ("ssd:qd=-1", "ssd.qd"),
            ("ssd:latency_us=-1", "ssd.latency_us"),
            ("ssd:latency_us=nan", "ssd.latency_us"),
            ("ssd:latency_us=inf", "ssd.latency_us"),
            ("ssd:latency_us=4e9", "ssd.latency_us"),
            ("ssd:latency_us=", "ssd.latency_us"),
            ("nvme:bw_mbps=0", "nvme.bw_mbps"),
            ("nvme:read_bw_mbps=1e10", "nvme.read_bw_mbps"),
            ("zram:text_ratio=0.5", "zram.text_ratio"),
            ("zram:numeric_ratio=5000", "zram.numeric_ratio"),
            ("zram:disksize_mib=0", "zram.disksize_mib"),
            ("zram:disksize_mib=2000000", "zram.disksize_mib"),
            ("ssd:qd", "ssd.qd"),
            ("ssd:qd=4,qd=8", "ssd.qd"),
            ("ssd:qd=4,,submit_us=1", "ssd"),
            ("tape", "device"),
            ("hdd:size=3", "hdd.size"),
            ("hdd:size=4XB", "hdd.size"),
            ("hdd:size=2TiB", "hdd.size"),
            ("hdd:rpm=30", "hdd.rpm"),
            ("hdd:min_seek_us=9000", "hdd.min_seek_us"),
            ("hdd:cache=8GiB", "hdd.cache"),
            ("hdd:cache=lots", "hdd.cache"),
            ("hdd:interface_mbps=0", "hdd.interface_mbps"),
            ("hdd:overhead_us=-1", "hdd.overhead_us"),
            ("hdd:qd=2", "hdd.qd"),
            ("", "device"),
            (":qd=4", "device"),
        ];
        for (s, key) in cases {
            let e = DeviceSpec::parse(s).expect_err(s);
            assert_eq!(key_of(e), *key, "spec {s:?}");
        }
        let e = DeviceSpec::parse("ssd:foo=1").unwrap_err().to_string();
        assert!(e.contains("read_latency_us") && e.contains("qd"), "{e}");
    }

    #[test]
    fn display_round_trips() {
        let specs = [
            "ssd",
            "nvme:qd=7,read_bw_mbps=0.25",
            "remote:latency_us=1.1",
            "zram:text_ratio=2.75,disksize_mib=10",
        ];
        for s in specs {
            let a = DeviceSpec::parse(s).unwrap();
            let text = a.to_string();
            assert_eq!(DeviceSpec::parse(&text).unwrap(), a, "{text}");
        }
        assert_eq!(
            DeviceSpec::parse("ssd").unwrap().to_string(),
            "ssd:read_latency_us=7500,write_latency_us=7500,read_bw_mbps=550,\
             write_bw_mbps=520,qd=32,submit_us=2,max_pages=168"
        );
    }

    #[test]
    fn serde_round_trips_with_defaults_and_named_errors() {
        for s in [
            "ssd:qd=3",
            "nvme",
            "remote:bw_mbps=12.5",
            "zram:copy_us=0.3",
        ] {
            let a = DeviceSpec::parse(s).unwrap();
            let j = serde_json::to_string(&a).unwrap();
            let b: DeviceSpec = serde_json::from_str(&j).unwrap();
            assert_eq!(a, b, "{j}");
        }
        let j = serde_json::to_value(DeviceSpec::parse("ssd").unwrap()).unwrap();
        assert_eq!(j["kind"], "ssd");
        assert_eq!(j["qd"], 32);
        assert_eq!(j["read_latency_us"], 7500.0);
        let b: DeviceSpec = serde_json::from_str(r#"{"qd": 8, "kind": "nvme"}"#).unwrap();
        let mut want = QueuedParams::NVME;
        want.qd = 8;
        assert_eq!(b, DeviceSpec::Nvme(want));
        let b: DeviceSpec = serde_json::from_str(r#"{"kind": "zram", "write_us": "40"}"#).unwrap();
        let DeviceSpec::Zram(z) = b else { panic!() };
        assert_eq!(z.write_us, 40.0);
        for (j, key) in [
            (r#"{"kind": "ssd", "bogus": 1}"#, "ssd.bogus"),
            (r#"{"kind": "ssd", "qd": 0}"#, "ssd.qd"),
            (r#"{"kind": "ssd", "qd": true}"#, "device.qd"),
            (r#"{"kind": "ssd", "qd": -3}"#, "ssd.qd"),
            (r#"{"kind": "tape"}"#, "device"),
            (r#"{"qd": 3}"#, "device.kind"),
        ] {
            let e = serde_json::from_str::<DeviceSpec>(j)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("{key}:")), "{j}: {e}");
        }
    }

    #[test]
    fn build_every_kind() {
        for (name, _) in DeviceSpec::KINDS {
            let spec = DeviceSpec::defaults(name).unwrap();
            let mut d = build(&spec).unwrap();
            assert_eq!(d.name(), *name);
            let w = d.submit(1000, IoKind::Write, 5, &[Text, Zero]);
            let r = d.submit(w.done_at, IoKind::Read, 5, &[Text, Zero]);
            assert!(w.done_at > 1000 && r.done_at > w.done_at, "{name}");
            assert!(w.done_at >= 1000 + w.cpu_ns && r.done_at >= w.done_at + r.cpu_ns);
            d.discard(5, 2);
            let st = d.stats();
            assert_eq!(
                (st.pages_written, st.pages_read, st.pages_discarded),
                (2, 2, 2)
            );
            assert_eq!(d.ram_bytes(), 0, "{name}");
            d.validate().unwrap();
        }
        let bad = DeviceSpec::Ssd(QueuedParams {
            qd: 0,
            ..QueuedParams::SSD
        });
        assert_eq!(key_of(build(&bad).err().unwrap()), "ssd.qd");
        let bad = DeviceSpec::Zram(ZramParams {
            read_us: f64::NAN,
            ..ZramParams::default()
        });
        assert_eq!(key_of(build(&bad).err().unwrap()), "zram.read_us");
    }

    #[test]
    fn content_class_is_one_byte() {
        assert_eq!(std::mem::size_of::<ContentClass>(), 1);
        assert_eq!(Random as u8, 3);
        for (i, c) in ContentClass::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i);
            assert_eq!(ContentClass::parse("class", c.name()).unwrap(), *c);
        }
        assert_eq!(
            ContentClass::parse("class", "dense")
                .unwrap_err()
                .to_string(),
            "class: unknown content class 'dense'; valid: zero, text, numeric, random, sparse"
        );
    }
}

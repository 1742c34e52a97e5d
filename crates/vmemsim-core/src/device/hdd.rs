//! A rotating disk (`hdd`): one head that seeks, waits for the platter and transfers, serving
//! requests one at a time in arrival order.
//!
//! A request of `n` pages at page offset `p` (its first slot) that reaches the disk at `a`
//! (after `submit_us` of the submitter's CPU) starts at `s = max(a, end of the previous
//! request)` and takes
//! - a seek from where the previous request ended (`head`) to `p`: none when `p == head`,
//!   else `min_seek + (full - min_seek) · sqrt(|p − head| / capacity)`, the square-root seek
//!   curve of Ruemmler and Wilkes ("An introduction to disk drive modeling", IEEE Computer
//!   1994, §"Seek time", which fits short seeks by `a + b·sqrt(d)`; one curve for all
//!   distances here). `full` (a full-stroke seek) follows from the drive's average seek
//!   `seek_us`: two uniformly random positions are on average `8/15` of the capacity's
//!   square root apart (E[sqrt|x − y|] = 8/15 for x, y uniform on [0, 1]), so
//!   `full = min_seek + (seek − min_seek) · 15/8`;
//! - the rotational wait: after a seek, half a revolution, the expected wait for a sector at
//!   a random angle (`60 s / rpm / 2`: 4.17 ms at 7,200 rpm); without a seek the sector that
//!   follows the previous transfer passed under the head when that transfer ended, so a
//!   request that starts then waits nothing and one that starts `g` later waits for the rest
//!   of the revolution, `(rev − g mod rev) mod rev`; with `rpm = 0` there is no platter and
//!   no wait (a disk image in a host file, as QEMU's virtio-blk serves a guest from one);
//! - the transfer of its bytes at the media rate `bw_mbps`.
//!
//! Left out: zoned recording (one rate across the platter), track and cylinder switches
//! within a transfer, the drive's cache and its read-ahead, command queueing (NCQ) and the
//! I/O scheduler's reordering (requests are served in arrival order; `mq-deadline` and the
//! drive would sort a deep queue by position), and write caching (a write completes when on
//! the platter). Discards are only counted.

use super::{
    us_to_ns, ContentClass, DeviceStats, HddParams, IoCompletion, IoKind, SwapDevice, PAGE_BYTES,
};

pub struct Hdd {
    /// Pages the disk holds (positions beyond are taken as its last one).
    capacity: u64,
    min_seek_ns: f64,
    full_seek_ns: f64,
    rev_ns: u64,
    /// Bytes per second.
    bps: u64,
    submit_ns: u64,
    max_pages: u32,
    /// Page offset just after the previous request (the head's position).
    head: u64,
    /// When the previous request's transfer ends.
    busy_until: u64,
    stats: DeviceStats,
}

impl Hdd {
    /// `p` must have passed `HddParams::check` (as `super::build` does).
    pub fn new(p: &HddParams) -> Hdd {
        let min_seek = p.min_seek_us * 1e3;
        let avg = p.seek_us.max(p.min_seek_us) * 1e3;
        Hdd {
            capacity: p.pages().max(1),
            min_seek_ns: min_seek,
            full_seek_ns: min_seek + (avg - min_seek) * 15.0 / 8.0,
            // rpm 0: no platter (HddParams::rpm), no rotational wait.
            rev_ns: if p.rpm == 0.0 {
                0
            } else {
                (60e9 / p.rpm).round() as u64
            },
            bps: ((p.bw_mbps * 1e6).round() as u64).max(1),
            submit_ns: us_to_ns(p.submit_us),
            max_pages: p.max_pages.max(1),
            head: 0,
            busy_until: 0,
            stats: DeviceStats::default(),
        }
    }

    /// Seek time in ns from page offset `from` to `to`.
    pub fn seek_ns(&self, from: u64, to: u64) -> u64 {
        if from == to {
            return 0;
        }
        let d = from.abs_diff(to).min(self.capacity) as f64 / self.capacity as f64;
        (self.min_seek_ns + (self.full_seek_ns - self.min_seek_ns) * d.sqrt()).round() as u64
    }

    /// One revolution, ns.
    pub fn revolution_ns(&self) -> u64 {
        self.rev_ns
    }

    fn transfer_ns(&self, pages: u64) -> u64 {
        let bytes = pages.saturating_mul(PAGE_BYTES) as u128;
        (bytes * 1_000_000_000)
            .div_ceil(self.bps as u128)
            .min(u64::MAX as u128) as u64
    }

    pub fn validate(&self) -> Result<(), String> {
        let s = &self.stats;
        if s.bytes_read != s.pages_read.saturating_mul(PAGE_BYTES)
            || s.bytes_written != s.pages_written.saturating_mul(PAGE_BYTES)
        {
            return Err(format!("hdd: bytes and pages disagree: {s:?}"));
        }
        // One head: the time it was busy is the sum of the services.
        if s.busy_ns != s.service_total_ns {
            return Err(format!(
                "hdd: busy {} ns but served {} ns",
                s.busy_ns, s.service_total_ns
            ));
        }
        Ok(())
    }
}

impl SwapDevice for Hdd {
    fn name(&self) -> &str {
        "hdd"
    }

    fn submit(
        &mut self,
        now: u64,
        kind: IoKind,
        slot: u64,
        classes: &[ContentClass],
    ) -> IoCompletion {
        let pages = classes.len() as u64;
        if pages == 0 {
            return IoCompletion {
                done_at: now,
                cpu_ns: 0,
            };
        }
        let arrival = now.saturating_add(self.submit_ns);
        let start = arrival.max(self.busy_until);
        let pos = slot.min(self.capacity - 1);
        let (seek, rotation) = if self.rev_ns == 0 {
            (self.seek_ns(self.head, pos), 0)
        } else if pos == self.head {
            let gap = start - self.busy_until;
            (0, (self.rev_ns - gap % self.rev_ns) % self.rev_ns)
        } else {
            (self.seek_ns(self.head, pos), self.rev_ns / 2)
        };
        let done = start
            .saturating_add(seek + rotation)
            .saturating_add(self.transfer_ns(pages));
        self.head = pos.saturating_add(pages).min(self.capacity);
        self.busy_until = done;

        let s = &mut self.stats;
        s.count_request(kind, pages, (arrival, start, done), self.submit_ns);
        // One head: requests are served one after the other.
        s.busy_ns = s.busy_ns.saturating_add(done - start);
        IoCompletion {
            done_at: done,
            cpu_ns: self.submit_ns,
        }
    }

    fn discard(&mut self, _slot: u64, pages: u32) {
        self.stats.pages_discarded = self.stats.pages_discarded.saturating_add(pages as u64);
    }

    fn max_request_pages(&self) -> u32 {
        self.max_pages
    }

    fn stats(&self) -> DeviceStats {
        self.stats.clone()
    }

    fn validate(&self) -> Result<(), String> {
        Hdd::validate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ContentClass::Random;
    use IoKind::*;

    /// 1 GiB (262,144 pages), 6,000 rpm (10 ms a revolution), average seek 5 ms and shortest
    /// 1 ms (full stroke 1 + 4 · 15/8 = 8.5 ms), 4,096 MB/s (1 µs a page), no submission cost.
    fn disk() -> Hdd {
        Hdd::new(&HddParams {
            size_bytes: 1 << 30,
            rpm: 6000.0,
            seek_us: 5000.0,
            min_seek_us: 1000.0,
            bw_mbps: 4096.0,
            submit_us: 0.0,
            max_pages: 168,
        })
    }

    fn done(d: &mut Hdd, now: u64, kind: IoKind, slot: u64, pages: usize) -> u64 {
        d.submit(now, kind, slot, &vec![Random; pages]).done_at
    }

    #[test]
    fn seeks_follow_the_square_root_of_the_distance() {
        let d = disk();
        assert_eq!(d.revolution_ns(), 10_000_000);
        assert_eq!(d.seek_ns(7, 7), 0);
        // A quarter of the disk: 1 ms + 7.5 ms × sqrt(1/4) = 4.75 ms; all of it: 8.5 ms.
        assert_eq!(d.seek_ns(0, 65_536), 4_750_000);
        assert_eq!(d.seek_ns(262_144, 0), 8_500_000);
        // One page away: 1 ms + 7.5 ms / 512.
        assert_eq!(d.seek_ns(100, 101), 1_014_648);
    }

    #[test]
    fn a_random_request_seeks_and_waits_half_a_turn_a_sequential_one_neither() {
        let mut d = disk();
        // From the head at 0 to a quarter of the disk: seek 4.75 ms + half a turn 5 ms + 8
        // pages at 1 µs (4096 B at 4096 MB/s) = 9.758 ms.
        assert_eq!(done(&mut d, 0, Write, 65_536, 8), 9_758_000);
        // The next 8 pages, submitted while the first is in service: they start when it
        // ends, the head on their first sector: only the transfer.
        assert_eq!(done(&mut d, 1_000, Write, 65_544, 8), 9_766_000);
        // The next 8 again, 2.5 ms after the disk went idle: the sector passed under the
        // head then and comes back 7.5 ms later.
        assert_eq!(
            done(&mut d, 12_266_000, Read, 65_552, 8),
            12_266_000 + 7_500_000 + 8_000
        );
        let s = d.stats();
        assert_eq!(
            (s.write_requests, s.read_requests, s.pages_written),
            (2, 1, 16)
        );
        // The second request waited for the first: 9.758 − 0.001 ms.
        assert_eq!(s.queue_delay_total_ns, 9_757_000);
        assert_eq!(s.busy_ns, 9_766_000 + 7_508_000);
        d.validate().unwrap();
    }

    #[test]
    fn the_average_seek_is_the_mean_over_random_positions() {
        // The curve is scaled so that uniformly random pairs of positions average `seek_us`:
        // a midpoint sum over a 512 x 512 grid of positions comes within 0.5% of 5 ms.
        let d = disk();
        let n = 512u64;
        let step = 262_144 / n;
        let mut sum = 0u128;
        for i in 0..n {
            for j in 0..n {
                let (a, b) = (i * step + step / 2, j * step + step / 2);
                if a != b {
                    sum += d.seek_ns(a, b) as u128;
                }
            }
        }
        let mean = sum as f64 / (n * (n - 1)) as f64;
        assert!((mean - 5e6).abs() < 0.005 * 5e6, "{mean}");
    }

    #[test]
    fn zero_pages_and_the_last_position_do_not_panic() {
        let mut d = disk();
        assert_eq!(d.submit(5, Read, 3, &[]).done_at, 5);
        let t = done(&mut d, 0, Read, u64::MAX, 1);
        assert!(t > 0);
        d.validate().unwrap();
    }

    #[test]
    fn a_disk_without_a_platter_costs_its_submission_and_transfer() {
        // hdd:rpm=0,seek_us=0,min_seek_us=0 (a disk image in a host file): a request waits
        // for no seek and no turn, wherever it lands: 2 µs to submit, then 8 pages at
        // 4,096 MB/s, 8 µs.
        let mut d = Hdd::new(&HddParams {
            rpm: 0.0,
            seek_us: 0.0,
            min_seek_us: 0.0,
            bw_mbps: 4096.0,
            ..HddParams::default()
        });
        assert_eq!(d.revolution_ns(), 0);
        assert_eq!(done(&mut d, 0, Write, 1000, 8), 10_000);
        // Far away, and busy: it starts when the previous one ends, 1 µs transfer.
        assert_eq!(done(&mut d, 0, Read, 900_000, 1), 11_000);
        // Sequential after a gap: no rest of a turn to wait for.
        assert_eq!(done(&mut d, 50_000, Read, 900_001, 1), 53_000);
        d.validate().unwrap();
        assert!(crate::device::DeviceSpec::parse("hdd:rpm=0,seek_us=0,min_seek_us=0").is_ok());
    }
}

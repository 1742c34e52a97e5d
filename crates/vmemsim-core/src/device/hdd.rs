//! A rotating disk (`hdd`): one head that seeks, waits for the platter and transfers, serving
//! requests one at a time in arrival order, behind a buffer that caches writes and reads ahead.
//!
//! A request of `n` pages at page offset `p` (its first slot) that reaches the disk at `a`
//! (after `submit_us` of the submitter's CPU) is served by the head from `s = max(a, end of
//! the previous operation)` and takes
//! - a seek from where the previous operation ended (`head`) to `p`: none when `p == head`,
//!   else `min_seek + (full - min_seek) · sqrt(|p − head| / capacity)`, the square-root seek
//!   curve of Ruemmler and Wilkes ("An introduction to disk drive modeling", IEEE Computer
//!   1994, §"Seek time", which fits short seeks by `a + b·sqrt(d)`; one curve for all
//!   distances here). `full` (a full-stroke seek) follows from the drive's average seek
//!   `seek_us`: two uniformly random positions are on average `8/15` of the capacity's
//!   square root apart (E[sqrt|x − y|] = 8/15 for x, y uniform on [0, 1]), so
//!   `full = min_seek + (seek − min_seek) · 15/8`;
//! - the rotational wait: after a seek, half a revolution, the expected wait for a sector at
//!   a random angle (`60 s / rpm / 2`: 4.17 ms at 7,200 rpm); without a seek the sector that
//!   follows the previous transfer passed under the head when that transfer ended, so an
//!   operation that starts then waits nothing and one that starts `g` later waits for the rest
//!   of the revolution, `(rev − g mod rev) mod rev`; with `rpm = 0` there is no platter and
//!   no wait (a disk image in a host file, as QEMU's virtio-blk serves a guest from one);
//! - the transfer of its bytes at the media rate `bw_mbps`;
//! - and `overhead_us`, a fixed time of every operation (a command's processing; 0 unless
//!   set: `vmemsim validate --timed` sets it for QEMU's virtio disk, measured).
//!
//! The buffer (`cache`, the drive's write cache enabled, as SATA disks ship and Linux's sd
//! driver leaves them; `cache = 0` turns all of it off):
//! - A write completes when its data is in the buffer: at `a`, plus its bytes at the
//!   interface rate (`interface_mbps`), if the writes held then leave room for it; else when
//!   the earliest held writes have gone to the platter and made room (completions stay in
//!   arrival order). A write larger than the whole buffer goes through to the platter.
//! - The head writes the held data to the platter (destage), oldest first, when it would
//!   otherwise be idle, and at once while a write waits for room. A read that arrives while
//!   writes are held is served before them (only the operation in progress finishes first),
//!   as the drive's and mq-deadline's preference for reads would have it; held writes that
//!   continue one another go to the platter back to back, with no turn lost between them.
//! - After a read, while nothing else is to be done, the drive goes on reading the sectors
//!   that follow into the buffer (look-ahead), up to the buffer's size: a read that continues
//!   the previous one takes what was read ahead at the interface rate and waits for no
//!   turn; the rest comes off the platter at the media rate.
//!
//! Left out: zoned recording (one rate across the platter), track and cylinder switches
//! within a transfer, command queueing (NCQ) and the I/O scheduler's sorting by position
//! (besides the preference for reads, requests are served in arrival order; the buffer's
//! writes are destaged in arrival order, not reordered by position), reads served from data
//! still in the write buffer, the buffer's split into segments, and the time to write the
//! buffer out at the end of a run (its writes are complete for the host). Discards are only
//! counted.

use std::collections::VecDeque;

use super::{
    us_to_ns, ContentClass, DeviceStats, HddParams, IoCompletion, IoKind, SwapDevice, PAGE_BYTES,
};

/// A write held in the buffer until the head puts it on the platter.
#[derive(Clone, Copy, Debug)]
struct Held {
    /// When its data began to come into the buffer, and the head could take it.
    ready: u64,
    pos: u64,
    pages: u64,
}

/// `bytes` at `bps` bytes per second, ns, rounded up.
fn bytes_ns(bytes: u64, bps: u64) -> u64 {
    (bytes as u128 * 1_000_000_000)
        .div_ceil(bps.max(1) as u128)
        .min(u64::MAX as u128) as u64
}

pub struct Hdd {
    /// Pages the disk holds (positions beyond are taken as its last one).
    capacity: u64,
    min_seek_ns: f64,
    full_seek_ns: f64,
    rev_ns: u64,
    /// Bytes per second.
    bps: u64,
    submit_ns: u64,
    /// Each operation's fixed time (`overhead_us`).
    overhead_ns: u64,
    max_pages: u32,
    /// Page offset just after the previous operation (the head's position).
    head: u64,
    /// When the previous operation's transfer ends.
    busy_until: u64,
    /// The buffer's bytes (0: no write caching, no look-ahead) and the interface's rate.
    cache_bytes: u64,
    if_bps: u64,
    /// Writes in the buffer not yet on the platter, oldest first, and their bytes.
    held: VecDeque<Held>,
    held_bytes: u64,
    /// When the latest cached write found room (completions keep arrival order).
    room_at: u64,
    /// Whether the head's last operation was a read (so the drive reads ahead from `head`
    /// while idle), and the bytes it had read ahead and not yet handed out when that read
    /// ended.
    after_read: bool,
    ahead: u64,
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
            overhead_ns: us_to_ns(p.overhead_us),
            max_pages: p.max_pages.max(1),
            head: 0,
            busy_until: 0,
            cache_bytes: p.cache_bytes,
            // At least the media rate: the buffer never slows a transfer down.
            if_bps: ((p.interface_mbps * 1e6).round() as u64)
                .max(((p.bw_mbps * 1e6).round() as u64).max(1)),
            held: VecDeque::new(),
            held_bytes: 0,
            room_at: 0,
            after_read: false,
            ahead: 0,
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
        bytes_ns(pages.saturating_mul(PAGE_BYTES), self.bps)
    }

    /// One operation of the head: `pages` at `pos`, begun no earlier than `ready`; returns
    /// its start and end, and leaves the head after it.
    fn operate(&mut self, ready: u64, pos: u64, pages: u64) -> (u64, u64) {
        let start = ready.max(self.busy_until);
        let (seek, rotation) = if self.rev_ns == 0 {
            (self.seek_ns(self.head, pos), 0)
        } else if pos == self.head {
            let gap = start - self.busy_until;
            (0, (self.rev_ns - gap % self.rev_ns) % self.rev_ns)
        } else {
            (self.seek_ns(self.head, pos), self.rev_ns / 2)
        };
        let done = start
            .saturating_add(self.overhead_ns + seek + rotation)
            .saturating_add(self.transfer_ns(pages));
        self.end_op(pos, pages, start, done)
    }

    /// The head ends an operation on `pages` at `pos` that ran from `start` to `done`.
    fn end_op(&mut self, pos: u64, pages: u64, start: u64, done: u64) -> (u64, u64) {
        self.head = pos.saturating_add(pages).min(self.capacity);
        self.busy_until = done;
        // One head: operations are served one after the other.
        self.stats.busy_ns = self.stats.busy_ns.saturating_add(done - start);
        (start, done)
    }

    /// Put the oldest held write on the platter.
    fn destage_one(&mut self) {
        if let Some(w) = self.held.pop_front() {
            self.held_bytes -= w.pages * PAGE_BYTES;
            let (start, done) = self.operate(w.ready, w.pos, w.pages);
            self.stats.service_total_ns = self.stats.service_total_ns.saturating_add(done - start);
            self.after_read = false;
            self.ahead = 0;
        }
    }

    /// What the head does with held writes before `t`: it takes the next whenever it is
    /// idle, and finishes the one it is on.
    fn destage_before(&mut self, t: u64) {
        while !self.held.is_empty() && self.busy_until < t {
            self.destage_one();
        }
    }

    /// A read with the buffer: continuing the previous read, what the drive read ahead since
    /// comes from the buffer and the rest off the platter with no turn lost; else the head
    /// positions as for any operation. Returns (start, done).
    fn read_cached(&mut self, arrival: u64, pos: u64, pages: u64) -> (u64, u64) {
        let start = arrival.max(self.busy_until);
        if !(self.after_read && pos == self.head) {
            let r = self.operate(arrival, pos, pages);
            self.ahead = 0;
            return r;
        }
        let idle = start - self.busy_until;
        let read_ahead =
            (idle as u128 * self.bps as u128 / 1_000_000_000).min(u64::MAX as u128) as u64;
        let buffered = self.ahead.saturating_add(read_ahead).min(self.cache_bytes);
        let bytes = pages.saturating_mul(PAGE_BYTES);
        let start_xfer = start.saturating_add(self.overhead_ns);
        let done = if bytes <= buffered {
            self.ahead = buffered - bytes;
            start_xfer.saturating_add(bytes_ns(bytes, self.if_bps))
        } else {
            self.ahead = 0;
            start_xfer.saturating_add(bytes_ns(bytes - buffered, self.bps))
        };
        self.end_op(pos, pages, start, done)
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
        let pos = slot.min(self.capacity - 1);
        let bytes = pages.saturating_mul(PAGE_BYTES);
        if self.cache_bytes == 0 {
            let (start, done) = self.operate(arrival, pos, pages);
            self.stats
                .count_request(kind, pages, (arrival, start, done), self.submit_ns);
            return IoCompletion {
                done_at: done,
                cpu_ns: self.submit_ns,
            };
        }
        self.destage_before(arrival);
        let done = match kind {
            IoKind::Read => {
                let (start, done) = self.read_cached(arrival, pos, pages);
                self.after_read = true;
                self.stats
                    .count_request(kind, pages, (arrival, start, done), self.submit_ns);
                done
            }
            IoKind::Write => {
                let through = bytes > self.cache_bytes;
                // Room: the oldest held writes go to the platter until this one fits.
                let mut room = arrival;
                while !self.held.is_empty()
                    && (through || self.held_bytes + bytes > self.cache_bytes)
                {
                    self.destage_one();
                    room = self.busy_until;
                }
                let room = room.max(self.room_at);
                self.room_at = room;
                // Counted as waiting until room came; its time on the platter is counted
                // when the head puts it there.
                self.stats
                    .count_request(kind, pages, (arrival, room, room), self.submit_ns);
                if through {
                    let (start, done) = self.operate(arrival, pos, pages);
                    self.stats.service_total_ns =
                        self.stats.service_total_ns.saturating_add(done - start);
                    self.after_read = false;
                    self.ahead = 0;
                    done
                } else {
                    // The head may start on it as its data streams in (the interface is
                    // at least as fast as the platter); the host has it done when all of
                    // it is in the buffer.
                    self.held.push_back(Held {
                        ready: room,
                        pos,
                        pages,
                    });
                    self.held_bytes += bytes;
                    room.saturating_add(bytes_ns(bytes, self.if_bps))
                }
            }
        };
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
    /// 1 ms (full stroke 1 + 4 · 15/8 = 8.5 ms), 4,096 MB/s (1 µs a page), no submission cost,
    /// no buffer (a write is done on the platter; no look-ahead).
    fn disk() -> Hdd {
        buffered(0)
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
        // A file on the host: no platter, no seek, no buffer, `overhead_us` a request.
        let file = |overhead_us: f64| {
            Hdd::new(&HddParams {
                rpm: 0.0,
                seek_us: 0.0,
                min_seek_us: 0.0,
                bw_mbps: 4096.0,
                cache_bytes: 0,
                overhead_us,
                ..HddParams::default()
            })
        };
        let mut d = file(0.0);
        assert_eq!(d.revolution_ns(), 0);
        assert_eq!(done(&mut d, 0, Write, 1000, 8), 10_000);
        // Far away, and busy: it starts when the previous one ends, 1 µs transfer.
        assert_eq!(done(&mut d, 0, Read, 900_000, 1), 11_000);
        // Sequential after a gap: no rest of a turn to wait for.
        assert_eq!(done(&mut d, 50_000, Read, 900_001, 1), 53_000);
        d.validate().unwrap();
        assert!(crate::device::DeviceSpec::parse("hdd:rpm=0,seek_us=0,min_seek_us=0").is_ok());
        // With 60 µs of overhead an operation: 2 µs to submit, 60 µs, then 8 µs; the next,
        // sequential after a gap, 60 + 1 µs from its arrival.
        let mut d = file(60.0);
        assert_eq!(done(&mut d, 0, Write, 1000, 8), 70_000);
        assert_eq!(done(&mut d, 100_000, Read, 1008, 1), 163_000);
        d.validate().unwrap();
    }

    /// The same disk with a buffer of `cache` bytes behind an 8,192 MB/s interface (0.5 µs a
    /// page).
    fn buffered(cache: u64) -> Hdd {
        Hdd::new(&HddParams {
            size_bytes: 1 << 30,
            rpm: 6000.0,
            seek_us: 5000.0,
            min_seek_us: 1000.0,
            bw_mbps: 4096.0,
            submit_us: 0.0,
            max_pages: 512,
            cache_bytes: cache,
            interface_mbps: 8192.0,
            overhead_us: 0.0,
        })
    }

    #[test]
    fn a_buffered_write_is_done_at_the_interface_rate_and_a_read_goes_before_held_writes() {
        let mut d = buffered(1 << 20);
        // 8 pages into the buffer: 8 × 0.5 µs.
        assert_eq!(done(&mut d, 0, Write, 65_536, 8), 4_000);
        // The next write finds the head idle since 0, so the first went to the platter from
        // 0: seek 4.75 ms + half a turn 5 ms + 8 µs, to 9.758 ms. The second is in the
        // buffer 4 µs after it arrived.
        assert_eq!(done(&mut d, 1_000, Write, 65_544, 8), 5_000);
        // A read of page 0 at 2 µs waits for the operation in progress (the first write),
        // then goes before the held second write: a seek from 65,544 to 0 (1 ms + 7.5 ms ×
        // sqrt(65,544 / 262,144) = 4,750,229 ns), half a turn, 1 µs.
        let read = 9_758_000 + 4_750_229 + 5_000_000 + 1_000;
        assert_eq!(done(&mut d, 2_000, Read, 0, 1), read);
        let s = d.stats();
        assert_eq!(
            (s.write_requests, s.read_requests, s.pages_written),
            (2, 1, 16)
        );
        // The writes waited for no room; the read waited for the first write's operation.
        assert_eq!(s.queue_delay_total_ns, 9_758_000 - 2_000);
        // The head: the first write and the read; the second write is still held.
        assert_eq!(s.busy_ns, 9_758_000 + (read - 9_758_000));
        d.validate().unwrap();
    }

    #[test]
    fn a_full_buffer_makes_a_write_wait_and_held_writes_that_follow_one_another_lose_no_turn() {
        // 64 KiB: 16 pages.
        let mut d = buffered(64 << 10);
        assert_eq!(done(&mut d, 0, Write, 1_000, 16), 8_000);
        // 8 more at once do not fit: the first 16 go to the platter first, from 0: a seek of
        // 1 ms + 7.5 ms × sqrt(1,000 / 262,144) = 1,463,224 ns, half a turn, 16 µs.
        let d_a = 1_463_224 + 5_000_000 + 16_000;
        assert_eq!(done(&mut d, 0, Write, 1_016, 8), d_a + 4_000);
        // 8 more fit beside them, but are done no earlier than the write before them found
        // room.
        assert_eq!(done(&mut d, 0, Write, 1_024, 8), d_a + 4_000);
        // A read 100 µs after the head went idle: before it the head wrote the two held
        // writes back to back from where the first ended (no seek, no turn: 8 µs each); the
        // read continues them 84 µs after the head went idle, so it waits for the rest of
        // the turn (10 ms − 84 µs), then 1 µs.
        let t = d_a + 100_000;
        assert_eq!(
            done(&mut d, t, Read, 1_032, 1),
            t + 10_000_000 - 84_000 + 1_000
        );
        let s = d.stats();
        // The second write waited for room until the first was on the platter; the third
        // for the same.
        assert_eq!(s.queue_delay_total_ns, 2 * d_a);
        assert_eq!(s.busy_ns, d_a + 16_000 + 10_000_000 - 84_000 + 1_000);
        d.validate().unwrap();
    }

    #[test]
    fn a_write_larger_than_the_buffer_goes_through_to_the_platter() {
        let mut d = buffered(64 << 10);
        // 32 pages (128 KiB): seek 1,463,224 ns, half a turn, 32 µs, as without a buffer.
        assert_eq!(
            done(&mut d, 0, Write, 1_000, 32),
            1_463_224 + 5_000_000 + 32_000
        );
        d.validate().unwrap();
    }

    #[test]
    fn a_read_that_continues_the_last_takes_what_the_drive_read_ahead() {
        let mut d = buffered(1 << 20);
        // The first read positions as on any disk: 9.758 ms.
        assert_eq!(done(&mut d, 0, Read, 65_536, 8), 9_758_000);
        // 2.5 ms later, the next 8 pages: the drive read 10,240,000 bytes ahead meanwhile,
        // held to its 1 MiB buffer; the 32 KiB come from the buffer at 8,192 MB/s, 4 µs, and
        // no turn is lost (without a buffer: the rest of the turn, 7.5 ms).
        let t = 9_758_000 + 2_500_000;
        assert_eq!(done(&mut d, t, Read, 65_544, 8), t + 4_000);
        // 300 pages (1,228,800 bytes) at once: 1,048,576 − 32,768 = 1,015,808 are in the
        // buffer; the other 212,992 come off the platter at 4,096 MB/s, 52 µs.
        assert_eq!(
            done(&mut d, t + 4_000, Read, 65_552, 300),
            t + 4_000 + 52_000
        );
        // Elsewhere: a seek from 65,852 (1 ms + 7.5 ms × sqrt(65,852 / 262,144) = 4,759,030
        // ns), half a turn, 1 µs.
        let far = t + 56_000;
        assert_eq!(
            done(&mut d, far, Read, 0, 1),
            far + 4_759_030 + 5_000_000 + 1_000
        );
        d.validate().unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Random reads and writes (slots, sizes, gaps) on disks with no buffer, a buffer of
        /// 16 pages and one of 256: the head's busy time is the sum of its operations and
        /// never more than the time elapsed; a request is never done before it arrived plus
        /// its transfer at the interface; the held writes never exceed the buffer; without a
        /// buffer requests end in arrival order (one head, first come first served).
        #[test]
        fn random_requests_keep_the_disks_invariants(
            cache_pages in proptest::sample::select(vec![0u64, 16, 256]),
            ops in proptest::collection::vec((proptest::bool::ANY, 0u64..4_000, 1usize..40, 0u64..12_000_000), 1..200),
        ) {
            let mut d = buffered(cache_pages * PAGE_BYTES);
            let mut now = 0u64;
            let mut last_done = 0u64;
            for (write, slot, pages, gap) in ops {
                now += gap;
                let kind = if write { Write } else { Read };
                let t = done(&mut d, now, kind, slot, pages);
                // 0.5 µs a page at the interface; the media's 1 µs without a buffer.
                proptest::prop_assert!(t >= now + pages as u64 * 500, "{t} < {now}");
                if cache_pages == 0 {
                    proptest::prop_assert!(t >= last_done);
                }
                last_done = last_done.max(t);
                proptest::prop_assert!(d.held_bytes <= d.cache_bytes);
                proptest::prop_assert!(d.stats().busy_ns <= d.busy_until);
                d.validate().map_err(proptest::test_runner::TestCaseError::fail)?;
            }
        }
    }
}

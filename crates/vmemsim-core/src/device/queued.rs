//! A block device (or network memory) as a multi-server FIFO queue: `ssd`, `nvme`, `remote`.
//!
//! Each request is served whole by one of `qd` channels; its service time is the access
//! latency plus its bytes over the bandwidth (read and write values apart). Requests take the
//! earliest free channel in arrival order, so with `qd` requests in service the next one waits.
//! The submitting thread first spends `submit_us` of CPU (`submit_bio` down to the driver),
//! and the request reaches the device when that is done. Parameters and the sources of their
//! defaults: [`super::QueuedParams`].
//!
//! Left out: a bandwidth shared by parallel requests (each channel transfers at the full
//! rate), read/write interference and garbage collection inside an SSD, the I/O scheduler's
//! merging (the plug's is the caller's, up to `max_pages`), and the cost of discards (they are only counted; swap discard is off unless `swapon --discard`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::{
    us_to_ns, ContentClass, DeviceStats, IoCompletion, IoKind, QueuedParams, SwapDevice, PAGE_BYTES,
};

pub struct QueuedDevice {
    name: &'static str,
    read_latency_ns: u64,
    write_latency_ns: u64,
    /// Bytes per second.
    read_bps: u64,
    write_bps: u64,
    submit_ns: u64,
    qd: u32,
    max_pages: u32,
    /// When each channel is next free (a min-heap; exactly `qd` entries).
    channels: BinaryHeap<Reverse<u64>>,
    /// End of the latest service seen, for `busy_ns` (a union of service intervals).
    busy_until: u64,
    stats: DeviceStats,
}

/// MB/s (checked to the accepted range) to bytes per second, at least 1.
fn mbps_to_bps(mbps: f64) -> u64 {
    ((mbps * 1e6).round() as u64).max(1)
}

/// `bytes / bps` seconds in ns, rounded up so that any data takes some time.
fn transfer_ns(bytes: u64, bps: u64) -> u64 {
    let ns = (bytes as u128 * 1_000_000_000).div_ceil(bps.max(1) as u128);
    ns.min(u64::MAX as u128) as u64
}

impl QueuedDevice {
    /// `p` must have passed `QueuedParams::check` (as `super::build` does); a `qd` of 0 is
    /// taken as 1.
    pub fn new(name: &'static str, p: &QueuedParams) -> QueuedDevice {
        let qd = p.qd.clamp(1, QueuedParams::MAX_QD);
        QueuedDevice {
            name,
            read_latency_ns: us_to_ns(p.read_latency_us),
            write_latency_ns: us_to_ns(p.write_latency_us),
            read_bps: mbps_to_bps(p.read_bw_mbps),
            write_bps: mbps_to_bps(p.write_bw_mbps),
            submit_ns: us_to_ns(p.submit_us),
            qd,
            max_pages: p.max_pages.max(1),
            channels: (0..qd).map(|_| Reverse(0)).collect(),
            busy_until: 0,
            stats: DeviceStats::default(),
        }
    }

    /// Service time of a request of `pages` pages: latency + transfer.
    pub fn service_ns(&self, kind: IoKind, pages: u64) -> u64 {
        let (lat, bps) = match kind {
            IoKind::Read => (self.read_latency_ns, self.read_bps),
            IoKind::Write => (self.write_latency_ns, self.write_bps),
        };
        lat.saturating_add(transfer_ns(pages.saturating_mul(PAGE_BYTES), bps))
    }

    pub fn validate(&self) -> Result<(), String> {
        let s = &self.stats;
        if self.channels.len() != self.qd as usize {
            return Err(format!(
                "{}: {} channels for qd {}",
                self.name,
                self.channels.len(),
                self.qd
            ));
        }
        if s.bytes_read != s.pages_read.saturating_mul(PAGE_BYTES)
            || s.bytes_written != s.pages_written.saturating_mul(PAGE_BYTES)
        {
            return Err(format!("{}: bytes and pages disagree: {s:?}", self.name));
        }
        if s.pages_read < s.read_requests || s.pages_written < s.write_requests {
            return Err(format!("{}: a request without pages: {s:?}", self.name));
        }
        if s.queue_delay_max_ns > s.queue_delay_total_ns || s.busy_ns > s.service_total_ns {
            return Err(format!("{}: time totals disagree: {s:?}", self.name));
        }
        let requests = s.read_requests + s.write_requests;
        if s.cpu_ns != requests.saturating_mul(self.submit_ns) {
            return Err(format!(
                "{}: cpu {} for {requests} requests",
                self.name, s.cpu_ns
            ));
        }
        if let Some(latest) = self.channels.iter().map(|c| c.0).max() {
            if latest != self.busy_until {
                return Err(format!(
                    "{}: latest channel end {latest} but busy until {}",
                    self.name, self.busy_until
                ));
            }
        }
        Ok(())
    }
}

impl SwapDevice for QueuedDevice {
    fn name(&self) -> &str {
        self.name
    }

    fn submit(
        &mut self,
        now: u64,
        kind: IoKind,
        _slot: u64,
        classes: &[ContentClass],
    ) -> IoCompletion {
        let pages = classes.len() as u64;
        if pages == 0 {
            return IoCompletion {
                done_at: now,
                cpu_ns: 0,
            };
        }
        let service = self.service_ns(kind, pages);
        let arrival = now.saturating_add(self.submit_ns);
        let Some(mut earliest) = self.channels.peek_mut() else {
            // Unreachable: `new` makes at least one channel.
            return IoCompletion {
                done_at: arrival.saturating_add(service),
                cpu_ns: self.submit_ns,
            };
        };
        let start = arrival.max(earliest.0);
        let done = start.saturating_add(service);
        *earliest = Reverse(done);
        drop(earliest);

        let s = &mut self.stats;
        s.count_request(kind, pages, (arrival, start, done), self.submit_ns);
        // Starts never decrease (arrivals don't, nor does the earliest free channel), so the
        // union of service intervals grows by the part of this one past the latest end.
        let from = start.max(self.busy_until);
        s.busy_ns = s.busy_ns.saturating_add(done.saturating_sub(from));
        self.busy_until = self.busy_until.max(done);
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
        QueuedDevice::validate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ContentClass::*;
    use IoKind::*;

    /// Latency 100 µs both ways, 4096 MB/s (so one page transfers in exactly 1 µs), no
    /// submission cost: a 1-page request takes S = 101,000 ns.
    fn dev(qd: u32) -> QueuedDevice {
        QueuedDevice::new(
            "test",
            &QueuedParams {
                read_latency_us: 100.0,
                write_latency_us: 100.0,
                read_bw_mbps: 4096.0,
                write_bw_mbps: 4096.0,
                qd,
                submit_us: 0.0,
                max_pages: 128,
            },
        )
    }
    const S: u64 = 101_000;

    fn done(d: &mut QueuedDevice, now: u64, kind: IoKind, pages: usize) -> u64 {
        let c = d.submit(now, kind, 0, &vec![Text; pages]);
        d.validate().unwrap();
        c.done_at
    }

    #[test]
    fn qd1_serves_one_at_a_time() {
        let mut d = dev(1);
        let ends: Vec<u64> = (0..3).map(|_| done(&mut d, 0, Read, 1)).collect();
        assert_eq!(ends, vec![S, 2 * S, 3 * S]);
        let st = d.stats();
        assert_eq!(st.queue_delay_total_ns, S + 2 * S);
        assert_eq!(st.queue_delay_max_ns, 2 * S);
        assert_eq!(st.service_total_ns, 3 * S);
        assert_eq!(st.busy_ns, 3 * S);
        assert_eq!(
            (st.read_requests, st.pages_read, st.bytes_read),
            (3, 3, 3 * 4096)
        );
    }

    #[test]
    fn qd2_serves_two_at_a_time() {
        let mut d = dev(2);
        let ends: Vec<u64> = (0..3).map(|_| done(&mut d, 0, Write, 1)).collect();
        assert_eq!(ends, vec![S, S, 2 * S]);
        let st = d.stats();
        assert_eq!((st.queue_delay_total_ns, st.queue_delay_max_ns), (S, S));
        assert_eq!(st.service_total_ns, 3 * S);
        assert_eq!(st.busy_ns, 2 * S);
        assert_eq!((st.write_requests, st.bytes_written), (3, 3 * 4096));
    }

    #[test]
    fn arrival_after_idle_starts_at_arrival() {
        let mut d = dev(1);
        assert_eq!(done(&mut d, 0, Read, 1), S);
        // Arrives while the first is in service: waits S/2.
        assert_eq!(done(&mut d, S / 2, Read, 1), 2 * S);
        // Arrives long after the device went idle: no wait.
        assert_eq!(done(&mut d, 10 * S, Read, 1), 11 * S);
        let st = d.stats();
        assert_eq!(
            (st.queue_delay_total_ns, st.queue_delay_max_ns),
            (S / 2, S / 2)
        );
        // Busy over [0, 2S] and [10S, 11S].
        assert_eq!(st.busy_ns, 3 * S);
    }

    #[test]
    fn multi_page_requests_pay_transfer_per_page() {
        let mut d = dev(2);
        // 8 pages: 100 µs + 8 × 1 µs.
        assert_eq!(done(&mut d, 0, Read, 8), 108_000);
        // 32 pages on the second channel: 100 µs + 32 µs.
        assert_eq!(done(&mut d, 0, Write, 32), 132_000);
        // Third request waits for the first channel to free at 108 µs.
        assert_eq!(done(&mut d, 0, Read, 1), 108_000 + S);
        assert_eq!(d.stats().busy_ns, 209_000);
    }

    #[test]
    fn read_and_write_parameters_apart_and_rounding_up() {
        let p = QueuedParams {
            read_latency_us: 10.0,
            write_latency_us: 30.0,
            read_bw_mbps: 550.0,
            write_bw_mbps: 1000.0,
            qd: 4,
            submit_us: 0.0,
            max_pages: 128,
        };
        let d = QueuedDevice::new("t", &p);
        // 4096 B at 550 MB/s = 7,447.27 ns, rounded up to 7,448.
        assert_eq!(d.service_ns(Read, 1), 10_000 + 7_448);
        // 2 × 4096 B at 1000 MB/s = 8,192 ns exactly.
        assert_eq!(d.service_ns(Write, 2), 30_000 + 8_192);
    }

    #[test]
    fn submission_cost_delays_arrival_and_is_charged() {
        let mut p = QueuedParams::SSD;
        p.read_latency_us = 100.0;
        p.read_bw_mbps = 4096.0;
        p.qd = 1;
        p.submit_us = 2.0;
        let mut d = QueuedDevice::new("ssd", &p);
        let a = d.submit(0, Read, 0, &[Text]);
        assert_eq!(
            a,
            IoCompletion {
                done_at: 2_000 + S,
                cpu_ns: 2_000
            }
        );
        let b = d.submit(0, Read, 1, &[Text]);
        assert_eq!(b.done_at, 2_000 + 2 * S);
        assert_eq!(d.stats().queue_delay_total_ns, S);
        assert_eq!(d.stats().cpu_ns, 4_000);
        d.validate().unwrap();
    }

    #[test]
    fn default_ssd_is_the_papers_7_5_ms() {
        let mut d = QueuedDevice::new("ssd", &QueuedParams::SSD);
        let c = d.submit(0, Read, 0, &[Text]);
        // 2 µs submission + 7.5 ms + 4096 B / 550 MB/s (7,448 ns).
        assert_eq!(c.done_at, 2_000 + 7_500_000 + 7_448);
        let w = d.submit(0, Write, 1, &[Text]);
        // 4096 B / 520 MB/s = 7,876.9 ns → 7,877.
        assert_eq!(w.done_at, 2_000 + 7_500_000 + 7_877);
        // 32 requests in flight at once do not wait; the 33rd does.
        let mut d = QueuedDevice::new("ssd", &QueuedParams::SSD);
        for _ in 0..32 {
            assert_eq!(d.submit(0, Read, 0, &[Text]).done_at, 7_509_448);
        }
        assert_eq!(d.submit(0, Read, 0, &[Text]).done_at, 2 * 7_507_448 + 2_000);
    }

    #[test]
    fn zero_pages_and_extreme_inputs_do_not_panic() {
        let mut d = dev(3);
        let c = d.submit(42, Read, u64::MAX, &[]);
        assert_eq!(
            c,
            IoCompletion {
                done_at: 42,
                cpu_ns: 0
            }
        );
        assert_eq!(d.stats(), DeviceStats::default());
        let c = d.submit(u64::MAX - 5, Write, u64::MAX, &[Random, Zero]);
        assert_eq!(c.done_at, u64::MAX);
        let c = d.submit(u64::MAX, Read, 0, &[Text]);
        assert_eq!(c.done_at, u64::MAX);
        d.discard(u64::MAX, u32::MAX);
        assert_eq!(d.stats().pages_discarded, u32::MAX as u64);
        d.validate().unwrap();
        // The slowest accepted parameters still fit in u64 ns.
        let slow = QueuedParams {
            read_latency_us: 3.6e9,
            write_latency_us: 3.6e9,
            read_bw_mbps: 1e-3,
            write_bw_mbps: 1e-3,
            qd: 1,
            submit_us: 3.6e9,
            max_pages: 128,
        };
        let mut d = QueuedDevice::new("slow", &slow);
        let c = d.submit(0, Read, 0, &[Text; 3]);
        // 1 h submission + 1 h latency + 12,288 B at 1,000 B/s (12.288 s).
        assert_eq!(c.done_at, 3_600_000_000_000 * 2 + 12_288_000_000);
    }
}

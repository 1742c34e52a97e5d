//! Latency histograms with three significant digits, laid out as HdrHistogram does
//! (Gil Tene's HdrHistogram: a linear first bucket, then one bucket per power of two, each split
//! into the same number of sub-buckets): values below 2048 ns are exact, and any larger value
//! is kept to within 1/1024 of itself (0.1%). Memory grows with the largest value recorded
//! (about 8 KiB per power of two), not with the count.

use serde::{Deserialize, Serialize};

/// Sub-buckets per power of two: 2^11 covers 3 significant decimal digits.
const SUB: u64 = 2048;
const HALF: u64 = SUB / 2;
const SUB_BITS: u32 = 11;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    min: u64,
    max: u64,
}

/// Percentiles of a histogram (nanoseconds).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: u64,
    pub mean: f64,
    pub min: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
    pub max: u64,
}

/// The bucket of `v`.
#[inline]
fn index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let top = 63 - v.leading_zeros(); // >= SUB_BITS
    let shift = top + 1 - SUB_BITS; // v >> shift lies in [HALF, SUB)
    (SUB + (shift as u64 - 1) * HALF + ((v >> shift) - HALF)) as usize
}

/// The largest value that falls in bucket `i` (HdrHistogram's "highest equivalent value").
fn highest(i: usize) -> u64 {
    let i = i as u64;
    if i < SUB {
        return i;
    }
    let shift = (i - SUB) / HALF + 1;
    let sub = (i - SUB) % HALF + HALF;
    ((sub + 1) << shift) - 1
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: Vec::new(),
            total: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl Histogram {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
        self.total += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// The value at quantile `q` (0..=1): the highest value equivalent to the smallest
    /// recorded value with at least `q` of the count at or below it (HdrHistogram's
    /// `getValueAtPercentile`), capped at the exact maximum. 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        // (less a hair, so that 0.9999 × 10000 is rank 9999 despite binary rounding)
        let want = ((q.clamp(0.0, 1.0) * self.total as f64 - 1e-9).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= want {
                return highest(i).min(self.max);
            }
        }
        self.max
    }

    pub fn summary(&self) -> Summary {
        Summary {
            count: self.total,
            mean: if self.total == 0 {
                0.0
            } else {
                self.sum as f64 / self.total as f64
            },
            min: if self.total == 0 { 0 } else { self.min },
            p50: self.quantile(0.50),
            p90: self.quantile(0.90),
            p99: self.quantile(0.99),
            p999: self.quantile(0.999),
            p9999: self.quantile(0.9999),
            max: self.max,
        }
    }

    /// `(highest equivalent value, count)` of every non-empty bucket, ascending.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (highest(i), c))
            .collect()
    }

    pub fn merge(&mut self, other: &Histogram) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::new();
        for v in 1..=1000 {
            h.record(v);
        }
        // Nearest rank: the 500th of 1..=1000 is 500; the 999th is 999.
        assert_eq!(h.quantile(0.5), 500);
        assert_eq!(h.quantile(0.999), 999);
        assert_eq!(h.quantile(1.0), 1000);
        let s = h.summary();
        assert_eq!((s.count, s.min, s.max), (1000, 1, 1000));
        assert_eq!(s.mean, 500.5);
    }

    #[test]
    fn large_values_keep_three_digits() {
        // 1,000,000 = 1953 * 512 + 64: its bucket is [1953*512, 1954*512 - 1].
        assert_eq!(index(1_000_000), index(999_936));
        assert_eq!(index(1_000_447), index(999_936));
        assert_ne!(index(1_000_448), index(999_936));
        assert_eq!(highest(index(1_000_000)), 1_000_447);
        // The bucket boundaries at powers of two.
        assert_eq!(index(2047), 2047);
        assert_eq!(index(2048), 2048); // shift 1: 2048 >> 1 = 1024 = HALF
        assert_eq!(index(2049), 2048);
        assert_eq!(index(2050), 2049);
        assert_eq!(highest(2048), 2049);
        assert_eq!(index(4096), 2048 + 1024);
        // Relative error under 1/1024 everywhere.
        for v in [3000u64, 65_537, 7_500_000, 123_456_789_012, u64::MAX / 3] {
            let hi = highest(index(v));
            assert!(
                hi >= v && (hi - v) as f64 <= v as f64 / 1024.0,
                "{v} -> {hi}"
            );
        }
        let mut h = Histogram::new();
        h.record(1_000_000);
        assert_eq!(h.quantile(0.5), 1_000_000); // capped at the exact max
    }

    #[test]
    fn tail_quantiles_by_hand() {
        // 9,999 fast requests at 100 ns and one slow one at 7.5 ms: p99.99 is the slow one
        // (rank ceil(0.9999 * 10000) = 9999 is still fast; 10000 is needed for it).
        let mut h = Histogram::new();
        for _ in 0..9_999 {
            h.record(100);
        }
        h.record(7_500_000);
        assert_eq!(h.quantile(0.9999), 100);
        assert_eq!(h.quantile(0.99995), 7_500_000);
        let b = h.buckets();
        assert_eq!(b[0], (100, 9_999));
        assert_eq!(b.len(), 2);
        let mut g = Histogram::new();
        g.record(50);
        g.merge(&h);
        assert_eq!(
            (g.count(), g.summary().min, g.summary().max),
            (10_001, 50, 7_500_000)
        );
    }

    #[test]
    fn empty_is_zero() {
        let h = Histogram::new();
        assert_eq!(h.summary(), Summary::default());
    }
}

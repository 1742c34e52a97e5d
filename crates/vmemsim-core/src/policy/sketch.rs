//! The frequency sketch of W-TinyLFU as libCacheSim builds it (`minimalIncrementCBF.c`): one
//! array of 32-bit counters indexed by `h` hash functions made by double hashing from two
//! XXH64 values of the page number, halved all at once by [`FrequencySketch::decay`].
//!
//! It is not the paper's count-min sketch (Einziger, Friedman & Manes, TOS 2017, §3.2-3.4:
//! 4-bit counters in `d` rows, conservative update, a doorkeeper Bloom filter in front), and
//! it is reproduced here bit for bit because W-TinyLFU's admissions, hence its miss counts,
//! depend on every collision. What libCacheSim does, and this copies:
//! - sizing as a Bloom filter for `entries` (the main cache's size) at error `error` (0.001):
//!   `bpe = −ln(error) / ln²2` counters per entry, `h = ⌈bpe · ln 2⌉` (10) hash functions,
//!   `⌈bpe · entries⌉` counters (at least `2h`);
//! - index `i` of a page: `(a + i·b) mod counters` in 32-bit arithmetic, where `a` and `b` are
//!   the low 32 bits of XXH64 of the page number's 8 little-endian bytes with seeds
//!   `0x12345678` and `0x12344321` (libCacheSim's `HASH_SEED0`/`HASH_SEED1`);
//! - estimate: the minimum of the `h` counters;
//! - add: despite the file's name, every one of the `h` counters is incremented (the
//!   minimal-increment test only guards a debug print), twice where two indices coincide;
//!   counters do not saturate (the paper's are 4 bits);
//! - no doorkeeper (a TODO in libCacheSim's `WTinyLFU.c`).

/// XXH64 (Yann Collet's xxHash, 64-bit variant) of `data` with `seed`, from the published
/// algorithm description.
pub fn xxh64(data: &[u8], seed: u64) -> u64 {
    const P1: u64 = 0x9E37_79B1_85EB_CA87;
    const P2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    const P3: u64 = 0x1656_67B1_9E37_79F9;
    const P4: u64 = 0x85EB_CA77_C2B2_AE63;
    const P5: u64 = 0x27D4_EB2F_1656_67C5;
    #[inline]
    fn round(acc: u64, lane: u64) -> u64 {
        acc.wrapping_add(lane.wrapping_mul(P2))
            .rotate_left(31)
            .wrapping_mul(P1)
    }
    #[inline]
    fn merge(acc: u64, v: u64) -> u64 {
        (acc ^ round(0, v)).wrapping_mul(P1).wrapping_add(P4)
    }
    let u64_at = |b: &[u8]| u64::from_le_bytes(b[..8].try_into().unwrap());
    let u32_at = |b: &[u8]| u32::from_le_bytes(b[..4].try_into().unwrap()) as u64;

    let mut rest = data;
    let mut h = if data.len() >= 32 {
        let mut v = [
            seed.wrapping_add(P1).wrapping_add(P2),
            seed.wrapping_add(P2),
            seed,
            seed.wrapping_sub(P1),
        ];
        while rest.len() >= 32 {
            for (i, acc) in v.iter_mut().enumerate() {
                *acc = round(*acc, u64_at(&rest[i * 8..]));
            }
            rest = &rest[32..];
        }
        let mut h = v[0]
            .rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18));
        for x in v {
            h = merge(h, x);
        }
        h
    } else {
        seed.wrapping_add(P5)
    };
    h = h.wrapping_add(data.len() as u64);
    while rest.len() >= 8 {
        h ^= round(0, u64_at(rest));
        h = h.rotate_left(27).wrapping_mul(P1).wrapping_add(P4);
        rest = &rest[8..];
    }
    if rest.len() >= 4 {
        h ^= u32_at(rest).wrapping_mul(P1);
        h = h.rotate_left(23).wrapping_mul(P2).wrapping_add(P3);
        rest = &rest[4..];
    }
    for &b in rest {
        h ^= (b as u64).wrapping_mul(P5);
        h = h.rotate_left(11).wrapping_mul(P1);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(P2);
    h ^= h >> 29;
    h = h.wrapping_mul(P3);
    h ^= h >> 32;
    h
}

const SEED_A: u64 = 0x1234_5678;
const SEED_B: u64 = 0x1234_4321;

/// libCacheSim's counting Bloom filter used as W-TinyLFU's frequency estimate.
#[derive(Clone, Debug)]
pub struct FrequencySketch {
    counters: Vec<u32>,
    hashes: u32,
}

impl FrequencySketch {
    /// Sized as libCacheSim's `minimalIncrementCBF_init(entries, error)`.
    pub fn new(entries: u32, error: f64) -> Self {
        // libCacheSim's own truncated literals for ln²2 and ln 2 (not `LN_2`), so that the
        // rounding up gives its sizes for every error rate.
        let bpe = -error.ln() / 0.480453013918201;
        #[allow(clippy::approx_constant)]
        let hashes = (0.693147180559945 * bpe).ceil() as u32;
        let mut n = (bpe * entries as f64).ceil().min(i32::MAX as f64) as u32;
        if n < hashes {
            n = 2 * hashes;
        }
        Self::with_shape(n, hashes)
    }

    /// `counters` counters and `hashes` hash functions (tests use tiny ones).
    pub fn with_shape(counters: u32, hashes: u32) -> Self {
        assert!(counters > 0 && hashes > 0);
        FrequencySketch {
            counters: vec![0; counters as usize],
            hashes,
        }
    }

    pub fn counters(&self) -> u32 {
        self.counters.len() as u32
    }
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    #[inline]
    fn seeds(page: u64) -> (u32, u32) {
        let bytes = page.to_le_bytes();
        (xxh64(&bytes, SEED_A) as u32, xxh64(&bytes, SEED_B) as u32)
    }

    #[inline]
    fn index(&self, a: u32, b: u32, i: u32) -> usize {
        (a.wrapping_add(i.wrapping_mul(b)) % self.counters.len() as u32) as usize
    }

    /// The frequency estimate of `page`: the least of its counters.
    pub fn estimate(&self, page: u64) -> u32 {
        let (a, b) = Self::seeds(page);
        (0..self.hashes)
            .map(|i| self.counters[self.index(a, b, i)])
            .min()
            .unwrap_or(0)
    }

    /// Count one reference to `page` (every one of its counters, see the module comment).
    pub fn add(&mut self, page: u64) {
        let (a, b) = Self::seeds(page);
        let min = (0..self.hashes)
            .map(|i| self.counters[self.index(a, b, i)])
            .min()
            .unwrap_or(0);
        if min == u32::MAX {
            return;
        }
        for i in 0..self.hashes {
            let x = self.index(a, b, i);
            self.counters[x] = self.counters[x].wrapping_add(1);
        }
    }

    /// The paper's reset (§3.3): halve every counter.
    pub fn decay(&mut self) {
        for c in &mut self.counters {
            *c >>= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xxh64_reference_values() {
        // Published test values of XXH64.
        assert_eq!(xxh64(b"", 0), 0xEF46_DB37_51D8_E999);
        assert_eq!(xxh64(b"a", 0), 0xD24E_C4F1_A98C_6E5B);
        assert_eq!(xxh64(b"abc", 0), 0x44BC_2CF5_AD77_0999);
        assert_eq!(
            xxh64(b"Nobody inspects the spammish repetition", 0),
            0xFBCE_A83C_8A37_8BF1
        );
    }

    #[test]
    fn libcachesim_shape() {
        // entries 99 at error 0.001: bpe = 14.3775..., 10 hashes, ceil(1423.4) counters.
        let s = FrequencySketch::new(99, 0.001);
        assert_eq!((s.hashes(), s.counters()), (10, 1424));
        let tiny = FrequencySketch::new(0, 0.001);
        assert_eq!(tiny.counters(), 20);
    }

    #[test]
    fn add_estimate_decay() {
        let mut s = FrequencySketch::new(1000, 0.001);
        for _ in 0..5 {
            s.add(42);
        }
        s.add(7);
        assert!(s.estimate(42) >= 5);
        assert!(s.estimate(7) >= 1);
        assert_eq!(s.estimate(42), 5, "no collision expected in 14k counters");
        s.decay();
        assert_eq!(s.estimate(42), 2);
        assert_eq!(s.estimate(7), 0);
    }

    #[test]
    fn coinciding_indices_count_twice() {
        // One counter, two hash functions: both indices are 0, so an add bumps it twice.
        let mut s = FrequencySketch::with_shape(1, 2);
        s.add(3);
        assert_eq!(s.estimate(3), 2);
        assert_eq!(s.estimate(99), 2);
    }
}

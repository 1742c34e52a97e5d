//! Zone watermarks as Linux derives them from the memory size.
//!
//! Models `calculate_min_free_kbytes` (`min_free_kbytes = int_sqrt(lowmem_kbytes * 16)`,
//! clamped to [128, 262144] KiB) and `__setup_per_zone_wmarks` for one zone:
//! `min = min_free_kbytes / 4` pages, `delta = max(min / 4, managed * watermark_scale_factor / 10000)`
//! with `watermark_scale_factor = 10`, `low = min + delta`, `high = min + 2 * delta`.
//! Left out: lowmem reserves, several zones/nodes, watermark boosting.
//!
//! Departure: machines so small that `high` would exceed half of memory (below ~100 frames)
//! get all three scaled down so that `high` = half of memory; the kernel has no such case.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watermarks {
    pub min: u32,
    pub low: u32,
    pub high: u32,
}

pub fn int_sqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

impl Watermarks {
    /// Watermarks of a zone of `frames` 4 KiB pages.
    pub fn derive(frames: u32) -> Watermarks {
        let kbytes = frames as u64 * 4;
        let min_free_kbytes = int_sqrt(kbytes * 16).clamp(128, 262_144);
        let min = (min_free_kbytes / 4) as u32;
        let delta = (min / 4).max((frames as u64 * 10 / 10_000) as u32);
        let w = Watermarks {
            min,
            low: min + delta,
            high: min + 2 * delta,
        };
        let cap = frames / 2;
        if w.high > cap {
            let scale = |x: u32| (x as u64 * cap as u64 / w.high as u64) as u32;
            return Watermarks {
                min: scale(w.min),
                low: scale(w.low),
                high: cap,
            };
        }
        w
    }

    pub fn validate(&self, frames: u32) -> Result<(), String> {
        if !(self.min <= self.low && self.low <= self.high) {
            return Err(format!(
                "must satisfy min <= low <= high, got min {}, low {}, high {}",
                self.min, self.low, self.high
            ));
        }
        if self.high >= frames {
            return Err(format!(
                "high watermark {} must be below the {frames} frames of memory",
                self.high
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_values() {
        // 4 GiB: lowmem 4194304 KiB → int_sqrt(67108864) = 8192 KiB → min 2048 pages;
        // delta = max(512, 1048576*10/10000 = 1048) = 1048.
        assert_eq!(
            Watermarks::derive(1 << 20),
            Watermarks {
                min: 2048,
                low: 3096,
                high: 4144
            }
        );
        // 16 MiB: int_sqrt(16384*16) = 512 KiB → 128 pages; delta = max(32, 4) = 32.
        assert_eq!(
            Watermarks::derive(4096),
            Watermarks {
                min: 128,
                low: 160,
                high: 192
            }
        );
        // 256 GiB: int_sqrt(2^28 * 16) = 65536 KiB → 16384 pages; delta = 2^26*10/10000 = 67108.
        assert_eq!(
            Watermarks::derive(1 << 26),
            Watermarks {
                min: 16384,
                low: 83492,
                high: 150600
            }
        );
        // 8 TiB: int_sqrt(2^33 * 16) = 2^18.5 KiB, capped at 262144 KiB → 65536 pages;
        // delta = 2^31*10/10000 = 2147483.
        assert_eq!(
            Watermarks::derive((1u32 << 31) - 8),
            Watermarks {
                min: 65536,
                low: 65536 + 2147483,
                high: 65536 + 2 * 2147483
            }
        );
        // 1 MiB: floor 128 KiB → 32 pages; delta 8.
        assert_eq!(
            Watermarks::derive(256),
            Watermarks {
                min: 32,
                low: 40,
                high: 48
            }
        );
    }

    #[test]
    fn tiny_machines_scaled() {
        let w = Watermarks::derive(64);
        assert_eq!(w.high, 32);
        assert!(w.min <= w.low && w.low <= w.high);
    }

    #[test]
    fn isqrt() {
        for x in [0u64, 1, 2, 3, 4, 15, 16, 17, 1 << 40, u32::MAX as u64] {
            let r = int_sqrt(x);
            assert!(r * r <= x && (r + 1) * (r + 1) > x, "{x}");
        }
    }
}

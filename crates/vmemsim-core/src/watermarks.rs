//! Zone watermarks as Linux derives them from the memory size.
//!
//! Models `calculate_min_free_kbytes` (`min_free_kbytes = int_sqrt(lowmem_kbytes * 16)`,
//! clamped to [128, 262144] KiB) and `__setup_per_zone_wmarks` for one zone:
//! `min = min_free_kbytes / 4` pages, `delta = max(min / 4, managed * watermark_scale_factor / 10000)`
//! with `watermark_scale_factor = 10`, `low = min + delta`, `high = min + 2 * delta`.
//! Several zones ([`Watermarks::derive_zones`], [`lowmem_reserves`]): `__setup_per_zone_wmarks`
//! shares `min` among the zones by managed pages, and `setup_per_zone_lowmem_reserve` gives
//! each zone its reserve against allocations that may use a higher zone.
//! Left out: several nodes, watermark boosting, highmem.
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

    /// Watermarks of the zones of a node, `managed` pages each, lowest zone first
    /// (`__setup_per_zone_wmarks`, Linux 6.1 and 6.8): `min_free_kbytes` from the node's
    /// pages as for one zone, each zone's `min` its share by managed pages (`pages_min *
    /// managed / lowmem_pages`), `delta` = max(min / 4, managed × 10 / 10000). One zone gives
    /// [`Watermarks::derive`].
    pub fn derive_zones(managed: &[u32]) -> Vec<Watermarks> {
        if managed.len() == 1 {
            return vec![Watermarks::derive(managed[0])];
        }
        let total: u64 = managed.iter().map(|&m| m as u64).sum();
        let min_free_kbytes = int_sqrt(total * 4 * 16).clamp(128, 262_144);
        let pages_min = min_free_kbytes / 4;
        managed
            .iter()
            .map(|&m| {
                let min = (pages_min * m as u64 / total.max(1)) as u32;
                let delta = (min / 4).max((m as u64 * 10 / 10_000) as u32);
                Watermarks {
                    min,
                    low: min + delta,
                    high: min + 2 * delta,
                }
            })
            .collect()
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

/// `sysctl_lowmem_reserve_ratio` of Linux 6.1 and 6.8 by zone index (ZONE_DMA, ZONE_DMA32,
/// ZONE_NORMAL, ZONE_MOVABLE).
pub const LOWMEM_RESERVE_RATIO: [u32; 4] = [256, 256, 32, 0];

/// Each zone's `lowmem_reserve` against allocations that may use the highest zone
/// (`setup_per_zone_lowmem_reserve`): the managed pages of the zones above it over its
/// ratio ([`LOWMEM_RESERVE_RATIO`], the zones taken as ZONE_DMA, ZONE_DMA32, ... in order);
/// 0 for the highest zone and where the ratio is 0.
pub fn lowmem_reserves(managed: &[u32]) -> Vec<u32> {
    (0..managed.len())
        .map(|i| {
            let ratio = LOWMEM_RESERVE_RATIO.get(i).copied().unwrap_or(0);
            let above: u64 = managed[i + 1..].iter().map(|&m| m as u64).sum();
            if ratio == 0 {
                0
            } else {
                (above / ratio as u64) as u32
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_share_min_by_managed_pages() {
        // __setup_per_zone_wmarks for ZONE_DMA 3,840 + ZONE_DMA32 20,809 managed pages:
        // lowmem 24,649 pages = 98,596 KiB → int_sqrt(98,596 × 16 = 1,577,536) = 1,256 KiB →
        // pages_min 314. DMA: 314 × 3,840 / 24,649 = 48 (48.9), delta max(12, 3) = 12;
        // DMA32: 314 × 20,809 / 24,649 = 265 (265.1), delta max(66, 20) = 66. (The
        // validation guests' kernel printed DMA 48/60/72 and DMA32 266/332/398.)
        assert_eq!(
            Watermarks::derive_zones(&[3_840, 20_809]),
            vec![
                Watermarks {
                    min: 48,
                    low: 60,
                    high: 72
                },
                Watermarks {
                    min: 265,
                    low: 331,
                    high: 397
                },
            ]
        );
        assert_eq!(
            Watermarks::derive_zones(&[5_000]),
            vec![Watermarks::derive(5_000)]
        );
        // setup_per_zone_lowmem_reserve: the managed pages above each zone over its ratio
        // (256, 256, 32): 21,000 / 256 = 82 (the guests' DMA protection against DMA32);
        // DMA 500,000 / 256 = 1,953, DMA32 400,000 / 256 = 1,562, Normal 0.
        assert_eq!(lowmem_reserves(&[3_840, 21_000]), vec![82, 0]);
        assert_eq!(
            lowmem_reserves(&[3_840, 100_000, 400_000]),
            vec![1_953, 1_562, 0]
        );
    }

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

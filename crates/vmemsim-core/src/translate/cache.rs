//! A small cache hierarchy for the lines page walks read, so a walk costs cycles.
//!
//! Each level is set-associative with LRU, inclusive fills (a hit at level k fills the levels
//! above it; a miss in all levels costs the memory latency and fills every level). Only the
//! lines given to it are cached: page-table lines from the walks, and data lines if the caller
//! passes them ([`super::Mmu::data_access`]). Without data traffic it is optimistic (page
//! tables never compete with data), which the sizes partly offset by defaulting to one core's
//! share of each level. Left out: write-backs, prefetchers, coherence, bandwidth and queueing.

use serde::{Deserialize, Serialize};

use super::Geometry;
use crate::error::{Error, Result};

/// One cache level: geometry in 64-byte lines and its load-to-use latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheLevel {
    pub sets: u32,
    pub ways: u32,
    pub hit_cycles: u32,
}

/// The hierarchy the walker reads through (at most 3 levels) and the memory behind it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PtCacheConfig {
    pub levels: Vec<CacheLevel>,
    pub memory_cycles: u32,
}

impl Default for PtCacheConfig {
    /// Skylake-like, per core: L1D 32 KiB 8-way 5 cycles, L2 1 MiB 16-way 14 cycles
    /// (Skylake-SP; Intel 64 and IA-32 Architectures Optimization Reference Manual, "Skylake
    /// server microarchitecture" cache table), a 2 MiB LLC slice 16-way at 50 cycles and
    /// DRAM at 200 cycles (~80 ns at 2.5 GHz): the last two are estimates.
    fn default() -> Self {
        PtCacheConfig {
            levels: vec![
                CacheLevel {
                    sets: 64,
                    ways: 8,
                    hit_cycles: 5,
                },
                CacheLevel {
                    sets: 1024,
                    ways: 16,
                    hit_cycles: 14,
                },
                CacheLevel {
                    sets: 2048,
                    ways: 16,
                    hit_cycles: 50,
                },
            ],
            memory_cycles: 200,
        }
    }
}

pub const MAX_CACHE_LEVELS: usize = 3;
const LINE_SHIFT: u32 = 6;
/// An empty way. Tags are stored as line + 1, so that the arrays start as zeroed memory,
/// which the allocator hands out untouched (calloc): a large cache level costs host memory
/// only where a run uses it, not a fill of every way at each run's start.
const EMPTY: u64 = 0;

/// One level's lines: tags and LRU stamps only (the TLB arrays' values, address-space tags
/// and flags are not needed here, and leaving them out halves the host memory a probe reads).
#[derive(Clone, Debug)]
struct Lines {
    ways: usize,
    mask: u64,
    tags: Vec<u64>,
    stamps: Vec<u64>,
    tick: u64,
}

impl Lines {
    fn new(g: Geometry, key: &str) -> Result<Self> {
        g.check(key)?;
        let n = g.entries() as usize;
        Ok(Lines {
            ways: g.ways as usize,
            mask: g.sets as u64 - 1,
            tags: vec![EMPTY; n],
            stamps: vec![0; n],
            tick: 0,
        })
    }

    #[inline]
    fn probe(&mut self, line: u64) -> bool {
        let base = (line & self.mask) as usize * self.ways;
        for i in base..base + self.ways {
            if self.tags[i] == line + 1 {
                self.tick += 1;
                self.stamps[i] = self.tick;
                return true;
            }
        }
        false
    }

    /// Fills `line` (known absent) into the LRU way of its set.
    #[inline]
    fn fill(&mut self, line: u64) {
        let base = (line & self.mask) as usize * self.ways;
        let mut victim = base;
        let mut best = u64::MAX;
        for i in base..base + self.ways {
            if self.tags[i] == EMPTY {
                victim = i;
                break;
            }
            if self.stamps[i] < best {
                best = self.stamps[i];
                victim = i;
            }
        }
        self.tick += 1;
        self.tags[victim] = line + 1;
        self.stamps[victim] = self.tick;
    }

    fn validate(&self, name: &str) -> std::result::Result<(), String> {
        for (i, &stored) in self.tags.iter().enumerate() {
            if stored == EMPTY {
                continue;
            }
            let t = stored - 1;
            let set = i / self.ways;
            if (t & self.mask) as usize != set {
                return Err(format!("{name}: line {t:#x} in set {set}"));
            }
            if self.stamps[i] > self.tick {
                return Err(format!("{name}: stamp ahead of the counter"));
            }
            let r = set * self.ways..(set + 1) * self.ways;
            if self.tags[r].iter().filter(|&&x| x == stored).count() != 1 {
                return Err(format!("{name}: line {t:#x} twice in set {set}"));
            }
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct PtCache {
    levels: Vec<(Lines, u32)>,
    memory_cycles: u32,
}

impl PtCache {
    pub fn new(cfg: &PtCacheConfig) -> Result<Self> {
        if cfg.levels.len() > MAX_CACHE_LEVELS {
            return Err(Error::config(
                "translate.cache.levels",
                format!(
                    "at most {MAX_CACHE_LEVELS} levels, got {}",
                    cfg.levels.len()
                ),
            ));
        }
        let mut levels = Vec::new();
        for (i, l) in cfg.levels.iter().enumerate() {
            let key = format!("translate.cache.levels[{i}]");
            if l.sets == 0 {
                return Err(Error::config(key, "sets must be > 0"));
            }
            levels.push((
                Lines::new(Geometry::new(l.sets, l.ways), &key)?,
                l.hit_cycles,
            ));
        }
        Ok(PtCache {
            levels,
            memory_cycles: cfg.memory_cycles,
        })
    }

    /// Reads the line holding physical address `pa`: (cycles, level that served it, where
    /// `levels()` means memory).
    #[inline]
    pub fn access(&mut self, pa: u64) -> (u32, usize) {
        let line = pa >> LINE_SHIFT;
        let mut served = self.levels.len();
        let mut cycles = self.memory_cycles;
        for (i, (a, lat)) in self.levels.iter_mut().enumerate() {
            if a.probe(line) {
                served = i;
                cycles = *lat;
                break;
            }
        }
        for (a, _) in self.levels[..served].iter_mut() {
            a.fill(line);
        }
        (cycles, served)
    }

    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    pub fn flush(&mut self) {
        for (a, _) in self.levels.iter_mut() {
            a.tags.fill(EMPTY);
        }
    }

    pub fn validate(&self) -> std::result::Result<(), String> {
        for (i, (a, _)) in self.levels.iter().enumerate() {
            a.validate(&format!("cache L{}", i + 1))?;
        }
        Ok(())
    }
}

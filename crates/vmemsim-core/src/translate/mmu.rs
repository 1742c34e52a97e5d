//! One logical CPU's translation hardware and its page walks (native, shadow, nested/TDP).
//!
//! An access looks up the L1 TLB (iTLB for fetches, dTLB otherwise), then the unified L2
//! TLB, then walks. Every entry a walk reads is looked up in the page-walk cache of its
//! level if it is an upper-level entry (PML5/PML4/PDPT/PD, levels 5..2; leaves' PTEs are not
//! cached there, KERNEL-FACTS "Address translation", nor are large-page leaves); a PWC miss,
//! and every leaf entry, is a memory reference, charged through [`PtCache`]. The PWC is physically tagged like
//! AMD's (seed 002 slide "AMD64 Processor Page Walk Caching"): a hit saves the reference's
//! latency, not its place in the walk.
//!
//! The 2D walk (seed 002 "Two-Dimensional (2D) Page Walk"; SDM §28.3 for EPT): each guest
//! entry's address is guest-physical and is translated by a nested walk of the host table
//! before the guest entry is read, and the final guest-physical address is translated by a
//! last nested walk. With g guest and h host levels walked that is g(h+1) + h =
//! (g+1)(h+1) − 1 references with the caches off. A nested TLB hit (gPA → hPA, seed 002
//! "with the Nested TLB") skips a whole nested walk. The TLB entry filled is the smaller of
//! the guest and host pages (splintering).
//!
//! Walk references are counted per cell of the 2D grid (row: the guest level whose entry is
//! being located, 0 for the final gPA; column: the host level, 0 for the guest entry itself),
//! and [`WalkGrid::classify`] sorts cells into PWC hit / mixed / miss as the talk's "Average
//! 2D walk" slide does.
//!
//! Flushes follow the SDM (vol. 3 §4.10.4, §28.4.3): see [`Mmu::load_cr3`], [`Mmu::invlpg`],
//! [`Mmu::vm_entry`], [`Mmu::vm_exit`]. The PWC keeps guest-dimension entries (1D walks and
//! guest entries of 2D walks) apart from nested-dimension ones: linear-address flushes drop
//! the former, nested (INVEPT-like) flushes both. Left out: EPT A/D's rule that walker
//! accesses to guest paging structures count as writes (SDM §28.3.5) — nested walks for guest
//! entries are reads here; the accessed bits a 2D walk sets in the guest table are all set
//! before its nested walks are charged, so a walk stopped by an EPT violation has already
//! marked the guest entries below (the hardware sets them when the walk is retried).

use serde::{Deserialize, Serialize};

use super::cache::{PtCache, PtCacheConfig, MAX_CACHE_LEVELS};
use super::radix::{WalkEnd, WalkPath, Walkable};
use super::set_assoc::{asid, SetAssoc};
use super::tlb::{Tlb, TlbGeometry, TlbHit};
use super::{Geometry, PageSize};
use crate::error::{Error, Result};

/// Page-walk caches, one per upper level.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PwcConfig {
    pub enabled: bool,
    pub pml5: Geometry,
    pub pml4: Geometry,
    pub pdpt: Geometry,
    pub pd: Geometry,
    pub hit_cycles: u32,
}

impl Default for PwcConfig {
    /// Estimates in the range of published parts (Intel's PDE cache has 32 entries, its
    /// PDPTE and PML4E caches a few; AMD's PWC a few dozen entries): PD 8×4, PDPT 1×16,
    /// PML4 1×8, PML5 1×4, 2 cycles a hit.
    fn default() -> Self {
        PwcConfig {
            enabled: true,
            pml5: Geometry::new(1, 4),
            pml4: Geometry::new(1, 8),
            pdpt: Geometry::new(1, 16),
            pd: Geometry::new(8, 4),
            hit_cycles: 2,
        }
    }
}

/// The nested TLB: guest-physical page → host-physical page, tagged by VPID.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NtlbConfig {
    pub enabled: bool,
    pub geometry: TlbGeometry,
    pub hit_cycles: u32,
}

impl Default for NtlbConfig {
    /// Estimate: 32 4K entries (8×4), 8 2M, 4 1G, 2 cycles a hit.
    fn default() -> Self {
        NtlbConfig {
            enabled: true,
            geometry: TlbGeometry {
                k4: Geometry::new(8, 4),
                m2: Geometry::new(1, 8),
                g1: Geometry::new(1, 4),
            },
            hit_cycles: 2,
        }
    }
}

/// Configuration of an [`Mmu`]. Every value has a documented default.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TranslateConfig {
    pub l1d: TlbGeometry,
    pub l1i: TlbGeometry,
    pub l2: TlbGeometry,
    /// Cycles an L1 TLB hit adds (0: overlapped with the cache access).
    pub l1_hit_cycles: u32,
    /// Cycles an L2 TLB hit adds. Estimate 9 (Skylake's STLB is commonly measured at 7-9).
    pub l2_hit_cycles: u32,
    pub pwc: PwcConfig,
    pub ntlb: NtlbConfig,
    pub cache: PtCacheConfig,
    /// CR4.PCIDE: TLB entries tagged by PCID; CR3 loads may keep them (bit 63).
    pub pcid: bool,
    /// "Enable VPID": guest entries tagged by VPID, kept across VM entry and exit.
    pub vpid: bool,
}

impl Default for TranslateConfig {
    /// TLB sizes of Skylake (Intel Optimization Reference Manual, Skylake TLB table):
    /// dTLB 4K 64 entries 4-way, 2M 32 4-way, 1G 4 4-way; iTLB 4K 128 8-way, 2M 8 fully
    /// associative, no 1G; STLB 1536 12-way for 4K and 2M (one shared array on the part,
    /// one array per size here), 1G 16 4-way.
    fn default() -> Self {
        TranslateConfig {
            l1d: TlbGeometry {
                k4: Geometry::new(16, 4),
                m2: Geometry::new(8, 4),
                g1: Geometry::new(1, 4),
            },
            l1i: TlbGeometry {
                k4: Geometry::new(16, 8),
                m2: Geometry::new(1, 8),
                g1: Geometry::NONE,
            },
            l2: TlbGeometry {
                k4: Geometry::new(128, 12),
                m2: Geometry::new(128, 12),
                g1: Geometry::new(4, 4),
            },
            l1_hit_cycles: 0,
            l2_hit_cycles: 9,
            pwc: PwcConfig::default(),
            ntlb: NtlbConfig::default(),
            cache: PtCacheConfig::default(),
            pcid: true,
            vpid: true,
        }
    }
}

impl TranslateConfig {
    /// The same configuration with the page-walk caches and the nested TLB off (the "caches
    /// off" reference counts of the talk).
    pub fn caches_off(mut self) -> Self {
        self.pwc.enabled = false;
        self.ntlb.enabled = false;
        self
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AccessKind {
    Read,
    Write,
    Fetch,
}

/// The page tables an access is translated through.
pub enum Tables<'a> {
    /// A native process: one table in host-physical memory.
    Native(&'a mut dyn Walkable),
    /// Shadow paging: the shadow table (gVA → hPA, in host memory), walked under the guest's
    /// VPID.
    Shadow(&'a mut dyn Walkable),
    /// Nested paging (EPT/NPT): the guest's table (gVA → gPA, its tables in guest-physical
    /// memory) and the host's (gPA → hPA).
    Tdp {
        guest: &'a mut dyn Walkable,
        host: &'a mut dyn Walkable,
    },
}

/// Where a translation was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TlbLevel {
    L1,
    L2,
    Walk,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Translation {
    /// Host-physical address of the access.
    pub pa: u64,
    /// Size of the TLB entry that now maps it (the smaller of guest and host pages in TDP).
    pub size: PageSize,
    /// Cycles the translation added (TLB hit latency or walk).
    pub cycles: u32,
    pub level: TlbLevel,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The (native, shadow or guest) table has no present entry at `level`: a page fault
    /// (native, TDP guest) or a shadow-paging exit.
    NotPresent { level: u8 },
    /// A write through a read-only leaf of that table.
    Protection,
    /// TDP: the host table has no present entry at `level` for `gpa` (EPT violation / NPF).
    Nested { gpa: u64, level: u8 },
    /// TDP: a write to a `gpa` the host maps read-only.
    NestedProtection { gpa: u64 },
}

/// A failed translation and the cycles the walk spent before it stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    pub cycles: u32,
}

/// Counters of one [`Mmu`]. Arrays indexed by level are indexed by level number (0 unused).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranslateStats {
    pub accesses: u64,
    pub l1d_hits: u64,
    pub l1i_hits: u64,
    pub l2_hits: u64,
    /// TLB misses: page walks started.
    pub walks: u64,
    /// Entries the walks needed (PWC hits included, nested walks skipped by the NTLB not).
    pub walk_entries: u64,
    /// Entries read from the memory hierarchy (PWC misses and level-1 entries).
    pub walk_refs: u64,
    /// Of `walk_refs`: entries of the native/shadow/guest table, and of the host table.
    pub guest_refs: u64,
    pub nested_refs: u64,
    pub walk_cycles: u64,
    pub pwc_hits: [u64; 6],
    pub pwc_misses: [u64; 6],
    pub ntlb_hits: u64,
    pub ntlb_misses: u64,
    /// Walk references served by cache level i (index `MAX_CACHE_LEVELS` = memory).
    pub refs_served: [u64; MAX_CACHE_LEVELS + 1],
    /// Walks whose TLB entry is smaller than the guest page (guest large page on smaller
    /// host pages, or a TLB without that size).
    pub splintered: u64,
    pub faults_not_present: u64,
    pub faults_protection: u64,
    pub faults_nested: u64,
    pub cr3_flushes: u64,
    pub cr3_noflush: u64,
    pub invlpg: u64,
    pub vm_entry_flushes: u64,
    pub vm_exit_flushes: u64,
    pub vpid_flushes: u64,
    pub nested_flushes: u64,
    pub full_flushes: u64,
    /// TLB entries (all levels) invalidated by the flushes.
    pub entries_flushed: u64,
}

impl TranslateStats {
    /// Add another CPU's counters (a VM's vCPUs summed).
    pub fn add(&mut self, o: &TranslateStats) {
        macro_rules! sum {
            ($($f:ident),*) => { $( self.$f += o.$f; )* };
        }
        sum!(
            accesses,
            l1d_hits,
            l1i_hits,
            l2_hits,
            walks,
            walk_entries,
            walk_refs,
            guest_refs,
            nested_refs,
            walk_cycles,
            ntlb_hits,
            ntlb_misses,
            splintered,
            faults_not_present,
            faults_protection,
            faults_nested,
            cr3_flushes,
            cr3_noflush,
            invlpg,
            vm_entry_flushes,
            vm_exit_flushes,
            vpid_flushes,
            nested_flushes,
            full_flushes,
            entries_flushed
        );
        for i in 0..self.pwc_hits.len() {
            self.pwc_hits[i] += o.pwc_hits[i];
            self.pwc_misses[i] += o.pwc_misses[i];
        }
        for i in 0..self.refs_served.len() {
            self.refs_served[i] += o.refs_served[i];
        }
    }

    /// Memory references per TLB miss.
    pub fn refs_per_walk(&self) -> f64 {
        if self.walks == 0 {
            0.0
        } else {
            self.walk_refs as f64 / self.walks as f64
        }
    }
}

/// Lookups and PWC hits of one cell of the 2D walk grid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridCell {
    pub lookups: u64,
    pub pwc_hits: u64,
}

/// Per-cell counts of walk references. `cells[row][col]`: row = level of the guest (or
/// native/shadow) entry being located, 0 for the final gPA; col = level of the host entry,
/// 0 for the guest entry itself. `ntlb_skips[row]`: nested walks of that row the NTLB skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalkGrid {
    pub cells: [[GridCell; 6]; 6],
    pub ntlb_skips: [u64; 6],
}

/// Cells of the walk grid sorted by their PWC hit ratio, with the PWC misses (lookups that
/// went to memory) that each class accounts for: the talk's "14 PWC hits — 5% of PWC misses,
/// 6 mixed — 25%, 4 misses — 70%".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WalkBreakdown {
    pub hit_cells: u32,
    pub mixed_cells: u32,
    pub miss_cells: u32,
    pub hit_cell_misses: u64,
    pub mixed_cell_misses: u64,
    pub miss_cell_misses: u64,
}

impl WalkGrid {
    /// Cells with a PWC hit ratio ≥ `hit_at_least` are "hit", ≤ `miss_at_most` "miss", the
    /// rest "mixed"; cells never looked up are left out.
    pub fn classify(&self, hit_at_least: f64, miss_at_most: f64) -> WalkBreakdown {
        let mut b = WalkBreakdown::default();
        for row in &self.cells {
            for c in row {
                if c.lookups == 0 {
                    continue;
                }
                let r = c.pwc_hits as f64 / c.lookups as f64;
                let m = c.lookups - c.pwc_hits;
                if r >= hit_at_least {
                    b.hit_cells += 1;
                    b.hit_cell_misses += m;
                } else if r <= miss_at_most {
                    b.miss_cells += 1;
                    b.miss_cell_misses += m;
                } else {
                    b.mixed_cells += 1;
                    b.mixed_cell_misses += m;
                }
            }
        }
        b
    }
}

/// PWC tags: guest-dimension entries (native, shadow, guest tables) and nested ones.
const DIM_GUEST: u32 = 1;
const DIM_NESTED: u32 = 2;

struct Leaf {
    pa: u64,
    /// Size of the TLB entry to fill.
    size: PageSize,
    /// Size of the first-dimension page (for the splinter count).
    guest_size: PageSize,
    writable: bool,
    global: bool,
}

/// One logical CPU's TLBs, page-walk caches, nested TLB and page-table line cache.
#[derive(Clone, Debug)]
pub struct Mmu {
    cfg: TranslateConfig,
    l1d: Tlb,
    l1i: Tlb,
    l2: Tlb,
    /// PWC of levels 2..=5 at index level − 2.
    pwc: [SetAssoc; 4],
    ntlb: Tlb,
    cache: PtCache,
    pcid: u16,
    vpid: u16,
    stats: TranslateStats,
    grid: WalkGrid,
}

impl Mmu {
    pub fn new(cfg: &TranslateConfig) -> Result<Self> {
        let p = &cfg.pwc;
        Ok(Mmu {
            l1d: Tlb::new(&cfg.l1d, "translate.l1d")?,
            l1i: Tlb::new(&cfg.l1i, "translate.l1i")?,
            l2: Tlb::new(&cfg.l2, "translate.l2")?,
            pwc: [
                SetAssoc::new(p.pd, "translate.pwc.pd")?,
                SetAssoc::new(p.pdpt, "translate.pwc.pdpt")?,
                SetAssoc::new(p.pml4, "translate.pwc.pml4")?,
                SetAssoc::new(p.pml5, "translate.pwc.pml5")?,
            ],
            ntlb: Tlb::new(&cfg.ntlb.geometry, "translate.ntlb.geometry")?,
            cache: PtCache::new(&cfg.cache)?,
            pcid: 0,
            vpid: 0,
            stats: TranslateStats::default(),
            grid: WalkGrid::default(),
            cfg: cfg.clone(),
        })
    }

    pub fn config(&self) -> &TranslateConfig {
        &self.cfg
    }
    pub fn stats(&self) -> &TranslateStats {
        &self.stats
    }
    pub fn grid(&self) -> &WalkGrid {
        &self.grid
    }
    /// Starts a measured phase: counters and grid to zero, cached state kept.
    pub fn reset_stats(&mut self) {
        self.stats = TranslateStats::default();
        self.grid = WalkGrid::default();
    }
    /// Current (VPID, PCID).
    pub fn context(&self) -> (u16, u16) {
        (self.vpid, self.pcid)
    }
    pub fn l1d(&self) -> &Tlb {
        &self.l1d
    }
    pub fn l1i(&self) -> &Tlb {
        &self.l1i
    }
    pub fn l2(&self) -> &Tlb {
        &self.l2
    }
    pub fn ntlb(&self) -> &Tlb {
        &self.ntlb
    }

    /// Translates `va` for an access of `kind` through `tables` in the current context.
    #[inline]
    pub fn translate(
        &mut self,
        tables: Tables<'_>,
        va: u64,
        kind: AccessKind,
    ) -> std::result::Result<Translation, Fault> {
        self.stats.accesses += 1;
        let a = asid(self.vpid, self.pcid);
        let write = kind == AccessKind::Write;
        let fetch = kind == AccessKind::Fetch;
        let l1 = if fetch { &mut self.l1i } else { &mut self.l1d };
        if let Some(h) = l1.lookup(va, a) {
            if !write || h.writable {
                if fetch {
                    self.stats.l1i_hits += 1;
                } else {
                    self.stats.l1d_hits += 1;
                }
                return Ok(Translation {
                    pa: h.translate(va),
                    size: h.size,
                    cycles: self.cfg.l1_hit_cycles,
                    level: TlbLevel::L1,
                });
            }
        } else if let Some(h) = self.l2.lookup(va, a) {
            if !write || h.writable {
                self.stats.l2_hits += 1;
                self.fill_l1(fetch, va, a, &h);
                return Ok(Translation {
                    pa: h.translate(va),
                    size: h.size,
                    cycles: self.cfg.l1_hit_cycles + self.cfg.l2_hit_cycles,
                    level: TlbLevel::L2,
                });
            }
        }
        self.miss(tables, va, a, write, fetch)
    }

    #[inline]
    fn fill_l1(&mut self, fetch: bool, va: u64, a: u32, h: &TlbHit) {
        let l1 = if fetch { &mut self.l1i } else { &mut self.l1d };
        l1.insert(va, h.translate(va), h.size, a, h.writable, h.global);
    }

    /// A TLB miss (or a write through a read-only TLB entry, which is dropped and re-walked:
    /// the SDM lets the processor fault spuriously instead, §4.10.4.3).
    #[inline(never)]
    fn miss(
        &mut self,
        tables: Tables<'_>,
        va: u64,
        a: u32,
        write: bool,
        fetch: bool,
    ) -> std::result::Result<Translation, Fault> {
        if write {
            self.l1d.flush_va(va, a);
            self.l2.flush_va(va, a);
        }
        self.stats.walks += 1;
        let mut cycles = self.cfg.l1_hit_cycles + self.cfg.l2_hit_cycles;
        let r = match tables {
            Tables::Native(pt) | Tables::Shadow(pt) => self.walk_1d(pt, va, write, &mut cycles),
            Tables::Tdp { guest, host } => self.walk_2d(guest, host, va, write, &mut cycles),
        };
        self.stats.walk_cycles += cycles as u64;
        match r {
            Ok(leaf) => {
                let l1 = if fetch { &mut self.l1i } else { &mut self.l1d };
                let s1 = l1.insert(va, leaf.pa, leaf.size, a, leaf.writable, leaf.global);
                let s2 = self
                    .l2
                    .insert(va, leaf.pa, leaf.size, a, leaf.writable, leaf.global);
                let size = s1.or(s2).unwrap_or(PageSize::K4).min(leaf.size);
                if size < leaf.guest_size {
                    self.stats.splintered += 1;
                }
                Ok(Translation {
                    pa: leaf.pa,
                    size,
                    cycles,
                    level: TlbLevel::Walk,
                })
            }
            Err(kind) => {
                match kind {
                    FaultKind::NotPresent { .. } => self.stats.faults_not_present += 1,
                    FaultKind::Protection => self.stats.faults_protection += 1,
                    FaultKind::Nested { .. } | FaultKind::NestedProtection { .. } => {
                        self.stats.faults_nested += 1
                    }
                }
                Err(Fault { kind, cycles })
            }
        }
    }

    /// Reads one page-table entry at physical address `pa` of `level`, counted in grid cell
    /// (`row`, `col`): a PWC hit for an upper-level entry that references a table, else a
    /// reference through the line cache. `last`: the walk's last entry (a leaf, or not
    /// present), which the PWC does not hold (SDM §4.10.3.1: the PDE cache holds PDEs with
    /// PS = 0 only; non-present entries are not cached).
    #[inline]
    fn read_entry(&mut self, pa: u64, level: u8, dim: u32, row: u8, col: u8, last: bool) -> u32 {
        let cell = &mut self.grid.cells[row as usize][col as usize];
        cell.lookups += 1;
        self.stats.walk_entries += 1;
        if self.cfg.pwc.enabled && level >= 2 && !last {
            let c = &mut self.pwc[level as usize - 2];
            if c.probe(pa >> 3, dim).is_some() {
                cell.pwc_hits += 1;
                self.stats.pwc_hits[level as usize] += 1;
                return self.cfg.pwc.hit_cycles;
            }
            self.stats.pwc_misses[level as usize] += 1;
            c.insert(pa >> 3, dim, 0, 0);
        }
        self.stats.walk_refs += 1;
        if dim == DIM_GUEST {
            self.stats.guest_refs += 1;
        } else {
            self.stats.nested_refs += 1;
        }
        let (cycles, served) = self.cache.access(pa);
        self.stats.refs_served[served.min(MAX_CACHE_LEVELS)] += 1;
        cycles
    }

    /// A 1D walk (native or shadow): g references with the caches off.
    fn walk_1d(
        &mut self,
        pt: &mut dyn Walkable,
        va: u64,
        write: bool,
        cycles: &mut u32,
    ) -> std::result::Result<Leaf, FaultKind> {
        let levels = pt.levels();
        let mut path = WalkPath::default();
        let end = pt.walk(va, write, &mut path);
        for i in 0..path.len {
            let level = levels - i;
            let last = i + 1 == path.len;
            *cycles += self.read_entry(path.entry_pa[i as usize], level, DIM_GUEST, level, 0, last);
        }
        match end {
            WalkEnd::NotPresent { level } => Err(FaultKind::NotPresent { level }),
            WalkEnd::Leaf {
                base,
                size,
                writable,
                global,
            } => {
                if write && !writable {
                    return Err(FaultKind::Protection);
                }
                Ok(Leaf {
                    pa: base | (va & (size.bytes() - 1)),
                    size,
                    guest_size: size,
                    writable,
                    global,
                })
            }
        }
    }

    /// The nested walk of `gpa` for grid row `row`: NTLB, else a walk of the host table.
    /// Returns (hPA, host page size, host writable).
    fn nested(
        &mut self,
        host: &mut dyn Walkable,
        gpa: u64,
        write: bool,
        row: u8,
        cycles: &mut u32,
    ) -> std::result::Result<(u64, PageSize, bool), FaultKind> {
        let tag = asid(self.vpid, 0);
        if self.cfg.ntlb.enabled {
            if let Some(h) = self.ntlb.lookup(gpa, tag) {
                if !write || h.writable {
                    self.stats.ntlb_hits += 1;
                    self.grid.ntlb_skips[row as usize] += 1;
                    *cycles += self.cfg.ntlb.hit_cycles;
                    return Ok((h.translate(gpa), h.size, h.writable));
                }
            }
            self.stats.ntlb_misses += 1;
        }
        let levels = host.levels();
        let mut path = WalkPath::default();
        let end = host.walk(gpa, write, &mut path);
        for j in 0..path.len {
            let level = levels - j;
            let last = j + 1 == path.len;
            *cycles += self.read_entry(
                path.entry_pa[j as usize],
                level,
                DIM_NESTED,
                row,
                level,
                last,
            );
        }
        match end {
            WalkEnd::NotPresent { level } => Err(FaultKind::Nested { gpa, level }),
            WalkEnd::Leaf {
                base,
                size,
                writable,
                ..
            } => {
                if write && !writable {
                    return Err(FaultKind::NestedProtection { gpa });
                }
                let hpa = base | (gpa & (size.bytes() - 1));
                if self.cfg.ntlb.enabled {
                    self.ntlb.insert(gpa, hpa, size, tag, writable, false);
                }
                Ok((hpa, size, writable))
            }
        }
    }

    /// The 2D walk: (g+1)(h+1) − 1 references with the caches off.
    fn walk_2d(
        &mut self,
        guest: &mut dyn Walkable,
        host: &mut dyn Walkable,
        gva: u64,
        write: bool,
        cycles: &mut u32,
    ) -> std::result::Result<Leaf, FaultKind> {
        let glevels = guest.levels();
        let mut path = WalkPath::default();
        let end = guest.walk(gva, write, &mut path);
        for i in 0..path.len {
            let level = glevels - i;
            let (hpa, _, _) = self.nested(host, path.entry_pa[i as usize], false, level, cycles)?;
            *cycles += self.read_entry(hpa, level, DIM_GUEST, level, 0, i + 1 == path.len);
        }
        match end {
            WalkEnd::NotPresent { level } => Err(FaultKind::NotPresent { level }),
            WalkEnd::Leaf {
                base,
                size,
                writable,
                global,
            } => {
                if write && !writable {
                    return Err(FaultKind::Protection);
                }
                let gpa = base | (gva & (size.bytes() - 1));
                let (hpa, hsize, hw) = self.nested(host, gpa, write, 0, cycles)?;
                Ok(Leaf {
                    pa: hpa,
                    size: size.min(hsize),
                    guest_size: size,
                    writable: writable && hw,
                    global,
                })
            }
        }
    }

    /// A data access to host-physical `pa` through the same cache hierarchy (so data lines
    /// compete with page-table lines); returns its cycles.
    pub fn data_access(&mut self, pa: u64) -> u32 {
        self.cache.access(pa).0
    }

    fn flush_pwc(&mut self, dims: &[u32]) {
        for c in self.pwc.iter_mut() {
            c.invalidate(|_, d, _| dims.contains(&d));
        }
    }

    /// MOV to CR3 (SDM §4.10.4.1). Without PCIDs (`pcid` config false) the PCID is 0 and
    /// every non-global entry of the current VPID is flushed. With PCIDs, the new PCID's
    /// non-global entries are flushed unless `noflush` (CR3 bit 63) is set. Paging-structure
    /// caches of the guest dimension are flushed whenever TLB entries are.
    pub fn load_cr3(&mut self, pcid: u16, noflush: bool) {
        if !self.cfg.pcid {
            self.pcid = 0;
        } else {
            self.pcid = pcid & 0xfff;
            if noflush {
                self.stats.cr3_noflush += 1;
                return;
            }
        }
        self.stats.cr3_flushes += 1;
        let a = asid(self.vpid, self.pcid);
        let n = self.l1d.flush_asid_nonglobal(a)
            + self.l1i.flush_asid_nonglobal(a)
            + self.l2.flush_asid_nonglobal(a);
        self.stats.entries_flushed += n;
        self.flush_pwc(&[DIM_GUEST]);
    }

    /// INVLPG `va` (SDM §4.10.4.1): the entries of every page size that map `va` for the
    /// current PCID, global ones included, and the guest-dimension paging-structure caches.
    pub fn invlpg(&mut self, va: u64) {
        self.stats.invlpg += 1;
        let a = asid(self.vpid, self.pcid);
        let n = self.l1d.flush_va(va, a) + self.l1i.flush_va(va, a) + self.l2.flush_va(va, a);
        self.stats.entries_flushed += n;
        self.flush_pwc(&[DIM_GUEST]);
    }

    fn flush_vpid_tlbs(&mut self, vpid: u16) -> u64 {
        self.l1d.flush_vpid(vpid) + self.l1i.flush_vpid(vpid) + self.l2.flush_vpid(vpid)
    }

    /// VM entry into a guest with `vpid` (non-zero) and the guest's current PCID. Without
    /// VPIDs (SDM §28.4.3.3: VPID 0 for host and guest) entry flushes every linear and
    /// combined mapping of VPID 0 and the guest-dimension paging-structure caches.
    pub fn vm_entry(&mut self, vpid: u16, pcid: u16) -> Result<()> {
        if self.cfg.vpid {
            if vpid == 0 {
                return Err(Error::config(
                    "translate.vpid",
                    "a guest's VPID must be non-zero",
                ));
            }
            self.vpid = vpid;
        } else {
            self.vpid = 0;
            self.stats.vm_entry_flushes += 1;
            let n = self.flush_vpid_tlbs(0);
            self.stats.entries_flushed += n;
            self.flush_pwc(&[DIM_GUEST]);
        }
        self.pcid = if self.cfg.pcid { pcid & 0xfff } else { 0 };
        Ok(())
    }

    /// VM exit back to the host (VPID 0) with the host's PCID; flushes as [`Mmu::vm_entry`]
    /// does when VPIDs are off.
    pub fn vm_exit(&mut self, host_pcid: u16) {
        if !self.cfg.vpid {
            self.stats.vm_exit_flushes += 1;
            let n = self.flush_vpid_tlbs(0);
            self.stats.entries_flushed += n;
            self.flush_pwc(&[DIM_GUEST]);
        }
        self.vpid = 0;
        self.pcid = if self.cfg.pcid { host_pcid & 0xfff } else { 0 };
    }

    /// INVVPID single-context: every entry of `vpid`, global ones included, and the
    /// guest-dimension paging-structure caches (KVM's `kvm_vcpu_flush_tlb_guest` path).
    pub fn flush_vpid(&mut self, vpid: u16) {
        self.stats.vpid_flushes += 1;
        let n = self.flush_vpid_tlbs(vpid);
        self.stats.entries_flushed += n;
        self.flush_pwc(&[DIM_GUEST]);
    }

    /// INVEPT single-context for the VM of `vpid` (one VPID stands for its EPTP here):
    /// guest-physical mappings (the nested TLB), combined mappings (that VPID's TLB entries)
    /// and the paging-structure caches of both dimensions.
    pub fn flush_nested(&mut self, vpid: u16) {
        self.stats.nested_flushes += 1;
        let n = self.flush_vpid_tlbs(vpid);
        self.stats.entries_flushed += n;
        self.ntlb.flush_vpid(vpid);
        self.flush_pwc(&[DIM_GUEST, DIM_NESTED]);
    }

    /// Everything: all TLBs, the nested TLB and the paging-structure caches.
    pub fn flush_all(&mut self) {
        self.stats.full_flushes += 1;
        let n = self.l1d.flush_all() + self.l1i.flush_all() + self.l2.flush_all();
        self.stats.entries_flushed += n;
        self.ntlb.flush_all();
        self.flush_pwc(&[DIM_GUEST, DIM_NESTED]);
    }

    /// Recounts every structure's invariants and the counters' identities.
    pub fn validate(&self) -> std::result::Result<(), String> {
        self.l1d.validate("l1d")?;
        self.l1i.validate("l1i")?;
        self.l2.validate("l2")?;
        self.ntlb.validate("ntlb")?;
        for (i, c) in self.pwc.iter().enumerate() {
            c.validate(&format!("pwc level {}", i + 2))?;
        }
        self.cache.validate()?;
        let s = &self.stats;
        if s.l1d_hits + s.l1i_hits + s.l2_hits + s.walks != s.accesses {
            return Err("TLB hits + walks != accesses".into());
        }
        if s.guest_refs + s.nested_refs != s.walk_refs {
            return Err("guest + nested refs != walk refs".into());
        }
        if s.refs_served.iter().sum::<u64>() != s.walk_refs {
            return Err("refs served by the caches != walk refs".into());
        }
        let grid: u64 = self.grid.cells.iter().flatten().map(|c| c.lookups).sum();
        if grid != s.walk_entries {
            return Err("grid lookups != walk entries".into());
        }
        let pwc: u64 = s.pwc_hits.iter().sum();
        if s.walk_entries != pwc + s.walk_refs {
            return Err("walk entries != PWC hits + refs".into());
        }
        Ok(())
    }
}

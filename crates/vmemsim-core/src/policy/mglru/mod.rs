//! `mglru`: Linux 6.8's Multi-Gen LRU (mm/vmscan.c `CONFIG_LRU_GEN`, include/linux/mm_inline.h,
//! mm/workingset.c), and the variants of the characterization paper (seed 001, §V-B):
//! `mglru-gen14` (2^14 generations), `mglru-scan-all`, `mglru-scan-none`, `mglru-scan-rand`.
//!
//! What is modelled, per kernel function:
//! - generations: one `max_seq` shared by anon and file, `min_seq` per type, list of a
//!   generation = `seq % max_gens`; a folio's generation lives in its flags (`folio_lru_gen`)
//!   and may differ from the list it sits on: page-table walks and look-around under kswapd
//!   only rewrite the flag (`folio_update_gen`) and eviction moves the folio when it meets it
//!   (`sort_folio`), exactly as the kernel defers the list move. Sizes (`nr_pages`) follow the
//!   flag.
//! - placement of new folios: `folio_add_lru` + `lru_gen_add_folio` ([`MgLru::on_insert`]).
//! - aging: `should_run_aging`, `get_nr_to_scan`, `try_to_inc_max_seq`, `walk_mm` →
//!   `walk_pmd_range` / `walk_pte_range` with the Bloom filters and the non-leaf PMD accessed
//!   bit, `inc_max_seq` / `inc_min_seq` / `folio_inc_gen` ([`aging`]).
//! - eviction: `try_to_shrink_lruvec`, `evict_folios`, `isolate_folios`, `scan_folios`,
//!   `sort_folio`, `isolate_folio`, `try_to_inc_min_seq`, the MG-LRU parts of
//!   `shrink_folio_list` / `folio_check_references` (rmap) and `lru_gen_look_around`
//!   ([`evict`]).
//! - tiers, refault history and the PI controller: `lru_gen_eviction` / `lru_gen_refault`,
//!   `read_ctrl_pos`, `get_tier_idx`, `get_type_to_scan` ([`pid`]).
//!
//! - page-cache folios (unmapped, `F_PAGECACHE`): the file type, placed by `lru_gen_add_folio`
//!   as added outside a fault (`min_seq[file] + 1`, or `min_seq[file]` with 3 generations),
//!   refs from `folio_mark_accessed` → `folio_inc_refs` ([`MgLru::mark_accessed`]), tiers,
//!   `sort_folio`'s protection and the PID controller's type choice as for any folio; rmap
//!   finds them old, so an isolated one is reclaimed (a dirty one is left to the flusher:
//!   see below); aging walks and look-around never see them.
//!
//! Knobs (PolicyOptions keys; defaults are the kernel's or the preset's):
//! - `max_gens` (4; `mglru-gen14`: 16384): `MAX_NR_GENS`, 4..=65535.
//! - `scan` (`bloom`; presets `all`, `none`, `rand`): which PMDs an aging walk descends into.
//!   `bloom` is the kernel (`test_bloom_filter`); `all` replaces the filter test by "yes";
//!   `rand` by a coin flip of probability `scan_rand_p` drawn from the run's seed; `none` never
//!   walks page tables (aging only increments `max_seq`, as `iterate_mm_list_nowalk`), so
//!   recency comes from rmap and look-around during eviction only. In every mode the first
//!   walk of the address space is forced (`walk->force_scan` for an mm added since the last
//!   iteration) and PMDs whose non-leaf accessed bit is clear are skipped (enabled & 0x4).
//! - `scan_rand_p` (0.5, the paper's "naively chosen 50% probability").
//! - `lookaround` (on): `lru_gen_look_around` on every young PTE found by rmap.
//! - `enabled` (0x7): 0x1 core (required: without it the kernel uses the two-list LRU,
//!   `clock-lru` here), 0x2 page-table walks (off = as `scan=none`), 0x4 clear/test the non-leaf
//!   PMD accessed bit.
//! - `min_ttl_ms` (0): only 0 is accepted. In 6.8 `lru_gen_age_node` uses it solely to
//!   OOM-kill when the oldest file generation is younger than it; this engine has neither a
//!   clock nor an OOM killer, so a non-zero value is an error rather than silently ignored.
//! - swappiness comes from [`ScanControl::swappiness`] (`get_swappiness`: 0 when
//!   `!sc.may_swap`).
//!
//! Left out or simplified (each named where it applies):
//! - one node, one memcg, one mm: no memcg LRU (`shrink_many`). Zones: a machine with several
//!   ([`crate::engine::ZoneConfig`]) gets a list per generation, type and zone
//!   (`lrugen->folios[gen][type][zone]`), scanned from `sc->reclaim_idx` down (the highest
//!   zone, or the boosted zone kswapd balances: the zones above are then ineligible and
//!   `sort_folio` moves their folios to the next generation).
//! - no clock: generation birth times are not kept (`timestamps[]`), `min_ttl_ms` rejected.
//! - dirty page-cache folios are left to the flusher as the kernel leaves them:
//!   `sort_folio` moves one whose `PG_dirty` is set to the next generation with `PG_reclaim`
//!   (`sorted_dirty`), and `shrink_folio_list` activates one found dirty through a file
//!   mapping's PTE (`nr_vmscan_immediate_reclaim`, kept mapped here where the kernel
//!   unmaps it); the flusher's write then rotates it to the oldest generation's tail
//!   (module `engine::pagecache`). Left out: `lru_gen_add_folio`'s `max_seq - 1` for a
//!   `PG_reclaim` folio still dirty when it is added back.
//! - walks run to completion (the kernel yields every `MAX_LRU_BATCH` folios; that only
//!   matters to the timing engine); per-CPU folio batches are applied immediately.
//! - THP / huge PMD leaves are not modelled (the page table has none).
//! - Consequence worth knowing for Gen-14: in 6.8 `should_run_aging` never ages while
//!   `min_seq + MIN_NR_GENS < max_seq` (4+ generations of the swappable type), so with swap
//!   available the number of generations stays ≤ 4 whatever `max_gens` is; `max_gens` only
//!   binds when anon cannot be swapped (swappiness 0), where anon generations pile up.

pub mod aging;
pub mod bloom;
pub mod evict;
#[cfg(test)]
mod file_tests;
pub mod pid;
#[cfg(test)]
mod tests;

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::list::{Links, List};
use super::registry::PolicyOptions;
use super::swap_plug::SwapWrites;
use super::{Family, Insert, KernelVersion, Policy, ScanControl, Touch, WritebackDone};
use crate::error::{Error, Result};
use crate::mm::frames::{F_PAGECACHE, F_SWAPCACHE};
use crate::mm::{FrameId, Mm, VPN_LIMIT};

use bloom::BloomFilters;
use pid::{tier_from_refs, Pid, LRU_REFS_WIDTH, MAX_NR_TIERS};

/// `MIN_NR_GENS`.
pub const MIN_NR_GENS: u64 = 2;
/// `MAX_NR_GENS` of Linux 6.8.
pub const MAX_NR_GENS: u32 = 4;
/// The paper's Gen-14: 2^14 generations.
pub const GEN14_MAX_GENS: u32 = 1 << 14;
/// `MAX_LRU_BATCH` = `MIN_LRU_BATCH` * 64.
pub const MAX_LRU_BATCH: u32 = 4096;
pub use pid::MIN_LRU_BATCH;

pub(crate) const ANON: usize = 0;
pub(crate) const FILE: usize = 1;

// Per-frame flag bits (the folio flags MG-LRU uses).
/// `LRU_REFS_MASK`: 2-bit counter of accesses through file descriptors beyond the second.
pub(crate) const F_REFS: u8 = 0b11;
/// `PG_workingset`.
pub(crate) const F_WORKINGSET: u8 = 1 << 2;
/// `PG_referenced`.
pub(crate) const F_REFERENCED: u8 = 1 << 3;
/// `folio_is_file_lru`.
pub(crate) const F_FILE: u8 = 1 << 4;
/// `LRU_REFS_MASK | LRU_REFS_FLAGS`.
pub(crate) const F_ALL_REFS: u8 = F_REFS | F_WORKINGSET | F_REFERENCED;
/// An anonymous frame of the engine that holds a named page ([`Policy::set_file_lru`]): a
/// file-type folio, as the kernel's page-cache page of a private file mapping is
/// (`folio_is_file_lru`: not swap-backed). Kept across isolations and re-insertions of the
/// frame until `set_file_lru(.., false)` or the frame's removal.
pub(crate) const F_NAMED: u8 = 1 << 5;

/// How an aging walk chooses the PMDs it descends into (the paper's variants).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanMode {
    /// The kernel: `test_bloom_filter(max_seq)`.
    Bloom,
    /// Scan-All: every PMD.
    All,
    /// Scan-None: no page-table walk at all.
    None,
    /// Scan-Rand: every PMD with probability `scan_rand_p`.
    Rand,
}

impl ScanMode {
    fn parse(s: &str) -> Result<ScanMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bloom" => Ok(ScanMode::Bloom),
            "all" => Ok(ScanMode::All),
            "none" => Ok(ScanMode::None),
            "rand" => Ok(ScanMode::Rand),
            _ => Err(Error::config(
                "option scan",
                format!("expected bloom, all, none or rand, got '{s}'"),
            )),
        }
    }
}

/// The registered MG-LRU configurations; each is the same policy with other knob defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Preset {
    /// `mglru`: Linux 6.8 defaults.
    Default,
    /// `mglru-gen14`: max_gens = 2^14.
    Gen14,
    /// `mglru-scan-all`: scan = all.
    ScanAll,
    /// `mglru-scan-none`: scan = none.
    ScanNone,
    /// `mglru-scan-rand`: scan = rand, scan_rand_p = 0.5.
    ScanRand,
}

impl Preset {
    pub fn name(self) -> &'static str {
        match self {
            Preset::Default => "mglru",
            Preset::Gen14 => "mglru-gen14",
            Preset::ScanAll => "mglru-scan-all",
            Preset::ScanNone => "mglru-scan-none",
            Preset::ScanRand => "mglru-scan-rand",
        }
    }
}

/// The knobs in force.
#[derive(Clone, Debug, PartialEq)]
pub struct MgLruConfig {
    pub max_gens: u32,
    pub scan: ScanMode,
    pub scan_rand_p: f64,
    pub lookaround: bool,
    /// `lru_gen_caps` bitmask (`/sys/kernel/mm/lru_gen/enabled`).
    pub enabled: u32,
}

impl MgLruConfig {
    pub fn preset(p: Preset) -> Self {
        let mut c = MgLruConfig {
            max_gens: MAX_NR_GENS,
            scan: ScanMode::Bloom,
            scan_rand_p: 0.5,
            lookaround: true,
            enabled: 0x7,
        };
        match p {
            Preset::Default => {}
            Preset::Gen14 => c.max_gens = GEN14_MAX_GENS,
            Preset::ScanAll => c.scan = ScanMode::All,
            Preset::ScanNone => c.scan = ScanMode::None,
            Preset::ScanRand => c.scan = ScanMode::Rand,
        }
        c
    }

    /// The preset's knobs overridden by `opts`; every key is validated and named on error.
    pub fn from_options(p: Preset, opts: &PolicyOptions) -> Result<Self> {
        let mut c = Self::preset(p);
        c.max_gens = opts.get("max_gens", c.max_gens)?;
        if !(MAX_NR_GENS..=u16::MAX as u32).contains(&c.max_gens) {
            return Err(Error::config(
                "option max_gens",
                format!(
                    "must be {MAX_NR_GENS}..=65535 (the kernel starts with max_seq = 3, min_seq = 0, \
                     i.e. 4 generations), got {}",
                    c.max_gens
                ),
            ));
        }
        if let Some(s) = opts.get_str("scan") {
            c.scan = ScanMode::parse(&s)?;
        }
        c.scan_rand_p = opts.get("scan_rand_p", c.scan_rand_p)?;
        if !(0.0..=1.0).contains(&c.scan_rand_p) {
            return Err(Error::config(
                "option scan_rand_p",
                format!("must be a probability in [0, 1], got {}", c.scan_rand_p),
            ));
        }
        c.lookaround = opts.get_bool("lookaround", c.lookaround)?;
        if let Some(s) = opts.get_str("enabled") {
            let t = s.trim();
            let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                Some(h) => u32::from_str_radix(h, 16),
                None => t.parse(),
            }
            .map_err(|_| {
                Error::config(
                    "option enabled",
                    format!("expected a bitmask like 0x7, got '{s}'"),
                )
            })?;
            if v > 0x7 || v & 0x1 == 0 {
                return Err(Error::config(
                    "option enabled",
                    format!(
                        "must include 0x1 (core) and only 0x2 (walks), 0x4 (non-leaf PMD A-bit); \
                         got {v:#x} (MG-LRU off is the policy clock-lru)"
                    ),
                ));
            }
            c.enabled = v;
        }
        let min_ttl: u64 = opts.get("min_ttl_ms", 0)?;
        if min_ttl != 0 {
            return Err(Error::config(
                "option min_ttl_ms",
                format!(
                    "{min_ttl}: thrashing protection needs a clock and an OOM killer, which this \
                     untimed engine does not have; only 0 (off) is accepted"
                ),
            ));
        }
        Ok(c)
    }

    /// Whether aging walks page tables (`should_walk_mmu` and the scan mode).
    pub fn walks(&self) -> bool {
        self.enabled & 0x2 != 0 && self.scan != ScanMode::None
    }
    /// `should_clear_pmd_young`.
    pub fn nonleaf_young(&self) -> bool {
        self.enabled & 0x4 != 0
    }
}

/// Event counters reported through [`Policy::counters`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MgLruStats {
    /// `inc_max_seq` calls that created a generation.
    pub gens_created: u64,
    /// Aging passes that walked page tables.
    pub aging_walks: u64,
    /// PMD entries visited by walks (`MM_NONLEAF_TOTAL`).
    pub walk_pmds: u64,
    /// PMD entries whose PTE table was scanned (`MM_NONLEAF_FOUND`).
    pub walk_pmds_scanned: u64,
    /// PMD entries added to the next Bloom filter (`MM_NONLEAF_ADDED`).
    pub walk_pmds_added: u64,
    /// PTEs examined by walks (`MM_LEAF_TOTAL`).
    pub walk_ptes: u64,
    /// Young PTEs found and cleared by walks (`MM_LEAF_YOUNG`).
    pub walk_young: u64,
    pub lookarounds: u64,
    pub lookaround_ptes: u64,
    pub lookaround_young: u64,
    /// Folios whose generation a walk changed.
    pub promoted_walk: u64,
    /// Neighbours whose generation look-around changed.
    pub promoted_lookaround: u64,
    /// Isolated folios found young by rmap and put back in the youngest generation.
    pub promoted_rmap: u64,
    /// Isolated mapped folios kept because they got PG_referenced while isolated (a
    /// look-around or a walk found them young): `shrink_folio_list`'s "folio_update_gen()
    /// tried to promote this page?" test. Put back in the youngest generation.
    pub kept_referenced: u64,
    /// Isolated folios kept because their read was in flight (locked).
    pub kept_locked: u64,
    /// Folios `sort_folio` moved to the next generation because their read was in flight
    /// (locked: "waiting for writeback").
    pub sorted_locked: u64,
    /// Folios `sort_folio` moved on because their swap write was in flight ("waiting for
    /// writeback", timed runs).
    pub sorted_writeback: u64,
    /// Of those, dirty page-cache folios (`type == LRU_GEN_FILE && folio_test_dirty`): left
    /// to the flusher, marked `PG_reclaim`.
    pub sorted_dirty: u64,
    /// `NR_VMSCAN_IMMEDIATE` (`nr_vmscan_immediate_reclaim`): dirty page-cache folios
    /// `shrink_folio_list` marked `PG_reclaim` and activated instead of writing them.
    pub nr_vmscan_immediate_reclaim: u64,
    /// Folios `shrink_folio_list` kept because `pageout` left them under writeback
    /// (asynchronous swap device); freed by a later scan.
    pub writeback_keep: u64,
    /// Folios `sort_folio` moved to the list of the generation a walk had given them.
    pub sorted_promoted: u64,
    /// Folios `sort_folio` moved to the next generation for being above the pass's zone
    /// ("ineligible": kswapd balancing a boosted zone).
    pub sorted_ineligible: u64,
    /// Folios `inc_min_seq` moved forward because the generation cap was reached.
    pub forced_inc_gen: u64,
    pub evicted_tier: [u64; MAX_NR_TIERS],
    /// `protected[tier - 1]` summed over the run, tiers 1..=3.
    pub protected_tier: [u64; MAX_NR_TIERS],
    pub refaults: u64,
    /// Refaults whose shadow matched the current `min_seq` (`WORKINGSET_ACTIVATE`).
    pub refaults_recent: u64,
    /// Largest number of generations of either type seen after an aging.
    pub max_nr_gens: u64,
    /// `WORKINGSET_ACTIVATE_BASE + type`, `[anon, file]`: 6.8 counts the recent refaults
    /// (`lru_gen_refault`), 6.1 the folios `sort_folio` protects.
    pub workingset_activate: [u64; 2],
    /// `WORKINGSET_RESTORE_BASE + type`: recent refaults in a fault or of a folio whose tier
    /// was protected (refs ≥ 3), which `lru_gen_refault` gives back `LRU_REFS_MASK` and
    /// `PG_workingset`.
    pub workingset_restore: [u64; 2],
    /// `PGSCAN_ANON + type`: folios `scan_folios` isolated.
    pub pgscan: [u64; 2],
    /// `PGSTEAL_ANON + type`: isolated folios `shrink_folio_list` reclaimed (handed to the
    /// engine to free; a failed swap write later puts an anon one back).
    pub pgsteal: [u64; 2],
}

/// What MG-LRU keeps in a folio (`folio->flags` gen / refs bits, `folio->lru`'s list) plus
/// the shadow computed at reclaim.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FrameState {
    /// Logical generation + 1 from the folio flags; 0 = not on a list (isolated or not held).
    pub(crate) gen1: u16,
    /// Generation whose list the frame sits on (valid while `gen1 != 0`).
    pub(crate) phys: u16,
    /// `F_*` bits.
    pub(crate) fl: u8,
    /// Shadow computed when the frame was reclaimed (`lru_gen_eviction`), read by `shadow()`.
    pub(crate) shadow: u32,
}

/// Linux 6.8's Multi-Gen LRU over one lruvec.
#[derive(Debug)]
pub struct MgLru {
    pub(crate) preset: Preset,
    pub(crate) cfg: MgLruConfig,
    /// Per-frame state, kept in one array so that a folio's flags cost one cache miss.
    pub(crate) fs: Vec<FrameState>,
    pub(crate) links: Links,
    /// `folios[gen][type]`, index `gen * 2 + type`.
    /// `lrugen->folios[gen][type][zone]`, at [`MgLru::lz`].
    pub(crate) lists: Vec<List>,
    /// First frame of each zone, lowest first (`[0]`: one zone).
    pub(crate) zone_start: Vec<FrameId>,
    /// More than one zone (speed: the one-zone machine skips the zone arithmetic).
    pub(crate) multi_zone: bool,
    /// `nr_pages[gen][type]` (by the generation in the flags).
    pub(crate) nr_pages: Vec<u64>,
    pub(crate) max_seq: u64,
    pub(crate) min_seq: [u64; 2],
    pub(crate) pid: Pid,
    pub(crate) bloom: BloomFilters,
    /// `walk->force_scan` for the first walk of the (single) mm.
    pub(crate) mm_walked: bool,
    pub(crate) rng: Xoshiro256PlusPlus,
    pub(crate) stats: MgLruStats,
    /// Scratch: folios isolated by one `scan_folios`.
    pub(crate) isolated: Vec<FrameId>,
    /// Folios reclaimed (freed) so far in the current `shrink_lruvec` (`sc->nr_reclaimed`).
    pub(crate) nr_reclaimed: u64,
    /// `nr_reclaimed` by zone (6.1's `should_abort_scan` tests each zone's free pages).
    pub(crate) nr_reclaimed_zone: [u64; crate::policy::MAX_ZONES],
    /// The type `isolate_folios` last scanned (6.1's `need_swapping`).
    pub(crate) type_scanned: usize,
    /// 6.1's `sc->memcgs_need_aging` for kswapd: clear at the start of each `balance_pgdat`
    /// run (the engine's [`Policy::reclaim_done`]), so its first pass does not age.
    pub(crate) memcgs_need_aging: bool,
    /// The kernel version of the last reclaim pass ([`ScanControl::kernel`]), for the counts
    /// that differ (`WORKINGSET_ACTIVATE`: 6.1's `sort_folio`, 6.8's `lru_gen_refault`). No
    /// refault can come before the first reclaim pass.
    pub(crate) kernel: KernelVersion,
    /// Scratch: walkable [start, end) page ranges of one PTE table.
    pub(crate) segs: Vec<(u64, u64)>,
    /// The pass's swap writes in the block layer's plug ([`ScanControl::swap_plug`]), and
    /// scratch for the folios whose writes complete.
    pub(crate) writes: SwapWrites,
    pub(crate) rotate: Vec<FrameId>,
    /// This pass's `sc->reclaim_idx` when below the highest zone (kswapd balancing a boosted
    /// zone): `sort_folio` moves the folios of the zones above to the next generation.
    pub(crate) reclaim_idx: Option<usize>,
    /// `!sc->may_writepage` for this pass (kswapd reclaiming a watermark boost).
    pub(crate) writepage_off: bool,
    /// Folios `isolate_folio` refused this pass, per zone (`PGSCAN_SKIP`).
    pub(crate) skipped: [u64; crate::policy::MAX_ZONES],
    /// Scratch: the folios one zone's walk of `scan_folios` refused.
    pub(crate) moved: Vec<FrameId>,
    /// Scratch: the dirty page-cache folios `sort_folio` moved on with `PG_reclaim`
    /// (`folio_inc_gen(.., reclaiming = true)`); the flag goes on their frames after the
    /// isolation ([`crate::mm::frames::F_READAHEAD`], the same bit).
    pub(crate) marked_reclaim: Vec<FrameId>,
}

#[inline]
pub(crate) fn lidx(gen: usize, ty: usize) -> usize {
    gen * 2 + ty
}

impl MgLru {
    pub fn new(frames: u32, opts: &PolicyOptions, preset: Preset) -> Result<Self> {
        let cfg = MgLruConfig::from_options(preset, opts)?;
        Ok(Self::with_config(frames, cfg, preset, opts.seed))
    }

    pub fn with_config(frames: u32, cfg: MgLruConfig, preset: Preset, seed: u64) -> Self {
        let n = frames as usize;
        let g = cfg.max_gens as usize;
        MgLru {
            preset,
            fs: crate::hint::huge_vec(n, FrameState::default()),
            links: Links::new(n),
            lists: vec![List::default(); g * 2],
            zone_start: vec![0],
            multi_zone: false,
            nr_pages: vec![0; g * 2],
            // lru_gen_init_lruvec: max_seq = MIN_NR_GENS + 1, min_seq = 0.
            max_seq: MIN_NR_GENS + 1,
            min_seq: [0, 0],
            pid: Pid::default(),
            bloom: BloomFilters::default(),
            mm_walked: false,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x6d67_6c72_755f_7264),
            stats: MgLruStats::default(),
            isolated: Vec::with_capacity(MIN_LRU_BATCH as usize),
            nr_reclaimed: 0,
            nr_reclaimed_zone: [0; crate::policy::MAX_ZONES],
            type_scanned: ANON,
            memcgs_need_aging: false,
            kernel: KernelVersion::V6_8,
            segs: Vec::new(),
            writes: SwapWrites::default(),
            rotate: Vec::new(),
            reclaim_idx: None,
            writepage_off: false,
            marked_reclaim: Vec::new(),
            skipped: [0; crate::policy::MAX_ZONES],
            moved: Vec::new(),
            cfg,
        }
    }

    pub fn config(&self) -> &MgLruConfig {
        &self.cfg
    }

    /// Number of zones.
    #[inline]
    pub(crate) fn nz(&self) -> usize {
        self.zone_start.len()
    }
    /// `folio_zonenum`.
    #[inline]
    pub(crate) fn zone(&self, f: FrameId) -> usize {
        if !self.multi_zone {
            return 0;
        }
        crate::mm::frames::zone_of(&self.zone_start, f)
    }
    /// Index of the list `lrugen->folios[gen][ty][zone]`.
    #[inline]
    pub(crate) fn lz(&self, gen: usize, ty: usize, zone: usize) -> usize {
        if !self.multi_zone {
            return lidx(gen, ty);
        }
        lidx(gen, ty) * self.zone_start.len() + zone
    }
    /// Whether generation `gen` of `ty` has no folio on any zone's list.
    pub(crate) fn gen_empty(&self, gen: usize, ty: usize) -> bool {
        (0..self.nz()).all(|z| self.lists[self.lz(gen, ty, z)].is_empty())
    }
    pub fn stats(&self) -> &MgLruStats {
        &self.stats
    }
    pub fn max_seq(&self) -> u64 {
        self.max_seq
    }
    /// `min_seq[type]`, type 0 = anon, 1 = file.
    pub fn min_seq(&self, ty: usize) -> u64 {
        self.min_seq[ty]
    }
    /// `get_nr_gens`.
    pub fn nr_gens(&self, ty: usize) -> u64 {
        self.max_seq - self.min_seq[ty] + 1
    }

    /// `lru_gen_from_seq`.
    #[inline]
    pub(crate) fn gen_of_seq(&self, seq: u64) -> usize {
        (seq % self.cfg.max_gens as u64) as usize
    }

    /// The sequence number of generation index `gen` for `ty` (within [min_seq, max_seq]).
    pub(crate) fn seq_of_gen(&self, gen: usize, ty: usize) -> Option<u64> {
        let n = self.cfg.max_gens as u64;
        let max_gen = self.gen_of_seq(self.max_seq) as u64;
        let back = (max_gen + n - gen as u64) % n;
        let seq = self.max_seq.checked_sub(back)?;
        (seq >= self.min_seq[ty]).then_some(seq)
    }

    /// The generation (by sequence number) a held frame belongs to, from its flags.
    pub fn seq_of_frame(&self, f: FrameId) -> Option<u64> {
        let g = self.fs[f as usize].gen1;
        if g == 0 {
            return None;
        }
        self.seq_of_gen(g as usize - 1, self.ty(f))
    }

    /// Frames on `seq`'s list of `ty`, head (youngest) to tail (next to evict).
    /// With several zones, the highest zone's list first (`scan_folios`' order read backwards
    /// per zone: each zone's list head to tail).
    pub fn list_of_seq(&self, seq: u64, ty: usize) -> Vec<FrameId> {
        let gen = self.gen_of_seq(seq);
        (0..self.nz())
            .rev()
            .flat_map(|z| self.lists[self.lz(gen, ty, z)].iter(&self.links))
            .collect()
    }

    /// `nr_pages` of generation `seq`, type `ty`.
    pub fn nr_pages_of_seq(&self, seq: u64, ty: usize) -> u64 {
        self.nr_pages[lidx(self.gen_of_seq(seq), ty)]
    }

    /// `lru_gen_add_folio`'s sequence for a folio neither active nor reclaiming: an
    /// anonymous one outside the swap cache (a new one) `max_seq - 1`; else `min_seq + 1`,
    /// or `min_seq` while only `MIN_NR_GENS` + 1 generations exist.
    fn inactive_seq(&self, ty: usize, swapcache: bool) -> u64 {
        if ty == ANON && !swapcache {
            self.max_seq - 1
        } else if self.min_seq[ty] + MIN_NR_GENS >= self.max_seq {
            self.min_seq[ty]
        } else {
            self.min_seq[ty] + 1
        }
    }

    /// Folios of type `ty` on the lists (every generation), `lruvec_page_state`'s LRU sizes.
    pub fn nr_lru(&self, ty: usize) -> u64 {
        self.nr_pages.iter().skip(ty).step_by(2).copied().sum()
    }

    #[inline]
    pub(crate) fn ty(&self, f: FrameId) -> usize {
        (self.fs[f as usize].fl & F_FILE != 0) as usize
    }

    /// `folio_lru_refs`: refs counter + PG_workingset.
    #[inline]
    pub(crate) fn refs(&self, f: FrameId) -> u32 {
        let x = self.fs[f as usize].fl;
        (x & F_REFS) as u32 + (x & F_WORKINGSET != 0) as u32
    }

    /// `lru_gen_add_folio` onto generation `gen` (head, or tail when `tail`).
    #[inline]
    pub(crate) fn add_folio(&mut self, f: FrameId, gen: usize, tail: bool) {
        let ty = self.ty(f);
        let li = self.lz(gen, ty, self.zone(f));
        let l = &mut self.lists[li];
        if tail {
            l.push_tail(&mut self.links, f);
        } else {
            l.push_head(&mut self.links, f);
        }
        self.fs[f as usize].gen1 = gen as u16 + 1;
        self.fs[f as usize].phys = gen as u16;
        self.nr_pages[lidx(gen, ty)] += 1;
    }

    /// `lru_gen_del_folio`: off its list and out of its generation's size.
    #[inline]
    pub(crate) fn del_folio(&mut self, f: FrameId) {
        let ty = self.ty(f);
        let g = self.fs[f as usize].gen1;
        debug_assert!(g != 0, "frame {f} not on a list");
        let p = self.fs[f as usize].phys as usize;
        let li = self.lz(p, ty, self.zone(f));
        self.lists[li].remove(&mut self.links, f);
        self.nr_pages[lidx(g as usize - 1, ty)] -= 1;
        self.fs[f as usize].gen1 = 0;
    }

    /// Move a folio already on a list to the head (or tail) of `gen`'s list, flag included.
    #[inline]
    pub(crate) fn move_folio(&mut self, f: FrameId, gen: usize, tail: bool) {
        self.del_folio(f);
        self.add_folio(f, gen, tail);
    }

    /// `folio_update_gen` (promotion through page tables): rewrite the flag only; an isolated
    /// folio gets PG_referenced instead. Returns whether the generation changed.
    #[inline]
    pub(crate) fn update_gen(&mut self, f: FrameId, new_gen: usize) -> bool {
        let i = f as usize;
        let g = self.fs[i].gen1;
        if g == 0 {
            self.fs[i].fl |= F_REFERENCED;
            return false;
        }
        self.fs[i].fl &= !F_ALL_REFS;
        let old = g as usize - 1;
        if old == new_gen {
            return false;
        }
        let ty = self.ty(f);
        self.nr_pages[lidx(old, ty)] -= 1;
        self.nr_pages[lidx(new_gen, ty)] += 1;
        self.fs[i].gen1 = new_gen as u16 + 1;
        true
    }

    /// The VMA (or the anonymous gap between declared VMAs) around `vpn`:
    /// (start, end, has recency). Pages outside every declared VMA are anonymous.
    pub(crate) fn vma_span(mm: &Mm, vpn: u64) -> (u64, u64, bool) {
        if mm.vmas.is_empty() {
            return (0, VPN_LIMIT, true);
        }
        if let Some(v) = mm.vmas.find(vpn) {
            return (v.start, v.end, !v.seq_or_rand_hint);
        }
        let mut lo = 0;
        let mut hi = VPN_LIMIT;
        for v in mm.vmas.iter() {
            if v.end <= vpn {
                lo = lo.max(v.end);
            } else if v.start > vpn {
                hi = hi.min(v.start);
                break;
            }
        }
        (lo, hi, true)
    }

    /// `vma_has_recency` of the mapping of `vpn`.
    #[inline]
    pub(crate) fn has_recency(mm: &Mm, vpn: u64) -> bool {
        if mm.vmas.is_empty() {
            return true;
        }
        !matches!(mm.vmas.find(vpn), Some(v) if v.seq_or_rand_hint)
    }

    /// `lru_gen_refault` (6.8, mm/workingset.c; `workingset_refault_*` itself is counted by
    /// the engine): a refault is recent when its shadow is from the current `min_seq` of its
    /// type (`lru_gen_test_recent`); then `refaulted[type][tier]` of the shadow's tier grows
    /// and 6.8 counts `WORKINGSET_ACTIVATE` (6.1 counts it in `sort_folio` instead). A recent
    /// refault in a fault, or of a folio whose refs were ≥ 3 (tier ≥ 2: accessed so often
    /// through file descriptors that `sort_folio` would have protected it), gets
    /// `LRU_REFS_MASK | PG_workingset` (refs 4, tier 3) and counts `WORKINGSET_RESTORE`.
    /// A page-cache folio is never added in a fault (`lru_gen_in_fault()` is false in
    /// `filemap_read`).
    fn refault(&mut self, f: FrameId, shadow: u32, in_fault: bool) {
        let ty = self.ty(f);
        self.stats.refaults += 1;
        let (seq, refs_low, ws) = unpack_shadow(shadow);
        if seq != self.min_seq[ty] & SHADOW_SEQ_MASK {
            return;
        }
        let refs = refs_low + ws as u32;
        let tier = tier_from_refs(refs);
        self.pid.refaulted[ty][tier] += 1;
        self.stats.refaults_recent += 1;
        if self.kernel == KernelVersion::V6_8 {
            self.stats.workingset_activate[ty] += 1;
        }
        if in_fault || refs >= (1 << LRU_REFS_WIDTH) - 1 {
            self.fs[f as usize].fl |= F_REFS | F_WORKINGSET;
            self.stats.workingset_restore[ty] += 1;
        }
    }

    /// `lru_gen_eviction`: the shadow of a folio being reclaimed now, and its eviction counted.
    pub(crate) fn eviction(&mut self, f: FrameId) -> u32 {
        let ty = self.ty(f);
        let refs = self.refs(f);
        let tier = tier_from_refs(refs);
        self.pid.evicted[ty][tier] += 1;
        self.stats.evicted_tier[tier] += 1;
        pack_shadow(self.min_seq[ty], refs)
    }
}

/// Shadow layout (32 bits): bit 0 = workingset (refs != 0), bits 1..3 = max(refs - 1, 0),
/// bits 3..32 = min_seq at eviction, truncated like the kernel's `EVICTION_MASK`.
pub(crate) const SHADOW_SEQ_MASK: u64 = (1 << 29) - 1;

pub(crate) fn pack_shadow(min_seq: u64, refs: u32) -> u32 {
    let token = ((min_seq & SHADOW_SEQ_MASK) << LRU_REFS_WIDTH) | refs.saturating_sub(1) as u64;
    ((token << 1) | (refs != 0) as u64) as u32
}

/// (min_seq, refs - 1, workingset) from a shadow.
pub(crate) fn unpack_shadow(s: u32) -> (u64, u32, bool) {
    let ws = s & 1 != 0;
    let token = (s >> 1) as u64;
    (
        token >> LRU_REFS_WIDTH,
        (token & ((1 << LRU_REFS_WIDTH) - 1)) as u32,
        ws,
    )
}

impl Policy for MgLru {
    /// Page-cache folios are file-type folios: their own `min_seq[FILE]`, generations and
    /// tiers, refs from `folio_mark_accessed` (`folio_inc_refs`), `sort_folio`'s protection,
    /// the PID controller's type choice, and file shadows (`lru_gen_eviction` /
    /// `lru_gen_refault`).
    fn set_zones(&mut self, zone_start: &[FrameId]) {
        debug_assert!(self.lists.iter().all(|l| l.is_empty()));
        let g = self.cfg.max_gens as usize;
        self.zone_start = zone_start.to_vec();
        self.multi_zone = zone_start.len() > 1;
        self.lists = vec![List::default(); g * 2 * zone_start.len()];
    }
    fn models_page_cache(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        self.preset.name()
    }
    fn family(&self) -> Family {
        Family::Kernel
    }
    /// Kernel policy: hits are invisible (only the PTE accessed bit records them).
    #[inline]
    fn on_hit(&mut self, _f: FrameId, _touch: Touch) {}

    /// `folio_add_lru` → `lru_gen_add_folio`, after `workingset_refault` for refaults and for
    /// swap readahead (whose shadow is read from its slot). Every insertion here happens inside
    /// a page fault, so `lru_gen_in_fault()` = `vma_has_recency`; in-fault folios are active
    /// and go to the youngest generation. Departure: for readahead the faulting VMA is not
    /// known, so the readahead page's own VMA decides.
    /// `folio_mark_accessed` with MG-LRU on: `folio_inc_refs` (mm/swap.c, the same in 6.1
    /// and 6.8): the first access sets `PG_referenced`, the second `PG_workingset`, later ones
    /// count up the refs bits (saturating). Where the folio sits in the generations does not
    /// change; its tier (`folio_lru_refs`) does, which `sort_folio` reads.
    fn mark_accessed(&mut self, _mm: &Mm, f: FrameId, _t: Touch) {
        let fl = &mut self.fs[f as usize].fl;
        if *fl & F_REFERENCED == 0 {
            *fl |= F_REFERENCED;
        } else if *fl & F_WORKINGSET == 0 {
            *fl |= F_WORKINGSET;
        } else if *fl & F_REFS != F_REFS {
            *fl += 1;
        }
    }

    /// `lru_gen_refault`'s test (6.1) / `lru_gen_test_recent` (6.8): the shadow's
    /// generation is the current `min_seq` of its type.
    fn refault_is_recent(&self, shadow: u32, file: bool) -> bool {
        let (seq, _, _) = unpack_shadow(shadow);
        seq == self.min_seq[file as usize] & SHADOW_SEQ_MASK
    }

    fn on_insert(&mut self, mm: &Mm, f: FrameId, touch: Touch, how: Insert) {
        let i = f as usize;
        debug_assert_eq!(self.fs[i].gen1, 0, "frame {f} inserted twice");
        let ffl = mm.frames.flags(f);
        // (a named frame: `set_file_lru` before a refault's insertion, or kept through an
        // isolation; every other anonymous frame is swap-backed)
        let named = self.fs[i].fl & F_NAMED;
        self.fs[i].fl = if ffl & crate::mm::frames::F_ANON != 0 && named == 0 {
            0
        } else {
            F_FILE | named
        };
        if how == Insert::Rotate {
            // `folio_rotate_reclaimable` → `lru_move_tail_fn` → `lruvec_add_folio_tail` →
            // `lru_gen_add_folio(.., reclaiming = true)`: in the swap cache, `PG_reclaim`
            // cleared, so the oldest generation, at its tail, with the reference flags it was
            // isolated with (kept in `fs[f].shadow` while it was away).
            let kept = std::mem::replace(&mut self.fs[i].shadow, 0) as u8;
            self.fs[i].fl = (kept & !(F_FILE | F_NAMED)) | (self.fs[i].fl & (F_FILE | F_NAMED));
            let ty = self.ty(f);
            let gen = self.gen_of_seq(self.min_seq[ty]);
            self.add_folio(f, gen, true);
            return;
        }
        if how == Insert::Writeback {
            // Still under writeback as the pass ends (Linux 6.1 and 6.8): `evict_folios`
            // leaves a folio with `PG_reclaim` and `PG_writeback` as `isolate_folio` left it,
            // `PG_referenced` restored if `PG_workingset`; `move_folios_to_lru` →
            // `lru_gen_add_folio(.., reclaiming = false)`: not active, in the swap cache,
            // `PG_reclaim` under writeback, so `max_seq - 1`, at its head.
            let mut kept = std::mem::replace(&mut self.fs[i].shadow, 0) as u8;
            if kept & F_WORKINGSET != 0 {
                kept |= F_REFERENCED;
            }
            self.fs[i].fl = (kept & !(F_FILE | F_NAMED)) | (self.fs[i].fl & (F_FILE | F_NAMED));
            let gen = self.gen_of_seq(self.max_seq - 1);
            self.add_folio(f, gen, false);
            return;
        }
        if how == Insert::Putback {
            // A refused swap-out (Linux 6.8): `__end_swap_bio_write` re-dirtied the folio and
            // cleared `PG_reclaim`; `shrink_folio_list` kept it (`PAGE_SUCCESS`, dirty →
            // `keep`); `evict_folios`' putback loop finds it dirty and "doesn't add rejected
            // folios to the oldest generation": `PG_active` set, the refs flags cleared. Then
            // `move_folios_to_lru` → `lruvec_add_folio` → `lru_gen_add_folio(.., reclaiming =
            // false)`: active, so the youngest generation, at its head.
            let gen = self.gen_of_seq(self.max_seq);
            self.add_folio(f, gen, false);
            return;
        }
        // `lru_gen_in_fault()`: set by `handle_mm_fault` for a VMA with recency. A page-cache
        // folio is added by `filemap_read` / `generic_perform_write` outside any fault, so it
        // is not active: `lru_gen_add_folio` puts it (file type, not reclaiming) at
        // `min_seq[FILE] + 1`, or `min_seq[FILE]` while only `MIN_NR_GENS` + 1 generations
        // exist.
        // A page-cache folio added during a fault of a file mapping (`filemap_fault`'s
        // readahead) is in one: `folio_add_lru` sets `PG_active` under `lru_gen_in_fault()`
        // (6.1 and 6.8), so it joins the youngest generation, and a refault of it sets
        // `PG_workingset`.
        let in_fault = if ffl & F_PAGECACHE == 0 {
            Self::has_recency(mm, touch.vpn)
        } else {
            mm.in_lru_fault
        };
        match how {
            Insert::FirstTouch | Insert::Putback | Insert::Rotate | Insert::Writeback => {}
            Insert::Refault { shadow } => self.refault(f, shadow, in_fault),
            Insert::Readahead => {
                let slot = mm.frames.slot(f);
                if slot != crate::mm::NO_SLOT {
                    self.refault(f, mm.swap.shadow(slot), in_fault);
                }
            }
        }
        let ty = self.ty(f);
        let seq = if in_fault {
            self.max_seq
        } else {
            self.inactive_seq(ty, mm.frames.flags(f) & F_SWAPCACHE != 0)
        };
        let gen = self.gen_of_seq(seq);
        self.add_folio(f, gen, false);
    }

    fn evict(&mut self, _mm: &mut Mm) -> Option<FrameId> {
        None
    }

    fn shrink(&mut self, mm: &mut Mm, sc: &mut ScanControl, victims: &mut Vec<FrameId>) {
        debug_assert!(
            self.writes.is_empty(),
            "the engine asked for every write of the last pass"
        );
        self.reclaim_idx = None;
        self.writepage_off = false;
        if let Some(z) = sc.zones.as_ref() {
            self.reclaim_idx = z.reclaim_idx.map(|i| i as usize);
            self.writepage_off = z.writepage_off;
        }
        // 6.8's `lru_gen_shrink_node`: "Unmapped clean folios are already prioritized.
        // Scanning for more of them is likely futile": a pass that may not write reclaims
        // nothing (kswapd reclaiming a watermark boost). 6.1 scans (`lru_gen_shrink_lruvec`).
        if !(self.writepage_off && sc.kernel == KernelVersion::V6_8) {
            self.shrink_lruvec(mm, sc, victims);
        }
        if let Some(z) = sc.zones.as_mut() {
            for (a, b) in z.skipped.iter_mut().zip(self.skipped) {
                *a += b;
            }
        }
        self.skipped = [0; crate::policy::MAX_ZONES];
        // blk_finish_plug: the writes still plugged complete after the pass (`Pending`: the
        // engine rotates them).
        self.writes.end_pass();
    }

    fn writeback_done(&mut self, f: FrameId) -> WritebackDone {
        self.writes.done(f)
    }

    /// `lru_move_tail_fn` → `lruvec_add_folio_tail` → `lru_gen_add_folio(.., reclaiming =
    /// true)`: `PG_active` cleared and the folio in the swap cache, so the oldest generation
    /// of its type, at the tail; its reference flags stay.
    fn rotate_reclaimable(&mut self, _mm: &Mm, f: FrameId) -> bool {
        if self.fs[f as usize].gen1 == 0 {
            return false;
        }
        self.del_folio(f);
        let ty = self.ty(f);
        let gen = self.gen_of_seq(self.min_seq[ty]);
        self.add_folio(f, gen, true);
        true
    }

    fn shadow(&mut self, _mm: &Mm, f: FrameId) -> u32 {
        self.fs[f as usize].shadow
    }

    /// A kswapd run ended: the next one starts a fresh `scan_control` (6.1's
    /// `memcgs_need_aging` clear).
    fn reclaim_done(&mut self, reason: crate::policy::ReclaimReason) {
        if reason == crate::policy::ReclaimReason::Kswapd {
            self.memcgs_need_aging = false;
        }
    }

    fn on_remove(&mut self, f: FrameId) {
        if self.fs[f as usize].gen1 != 0 {
            self.del_folio(f);
        }
        self.fs[f as usize].fl &= !F_NAMED;
    }

    /// A named page (VSwapper's Swap Mapper: guest memory the host maps from the disk
    /// image) is a file-type folio, on the file generations: `lru_gen_add_folio` takes its
    /// type from `folio_is_file_lru`, and a private file mapping's page-cache page is not
    /// swap-backed. Moving types is `lru_gen_del_folio` then `lru_gen_add_folio` of a folio
    /// that is neither active nor reclaiming: the new type's `min_seq + 1` (`min_seq` while
    /// only `MIN_NR_GENS` + 1 generations exist) for a file folio, as the page-cache page
    /// `filemap_fault` added; `max_seq - 1` for an anonymous one (the copy on write,
    /// `folio_add_lru_vma` of a new anonymous folio outside `lru_gen_in_fault`'s recency).
    /// An isolated frame only changes its flag: it goes back as its new type.
    fn set_file_lru(&mut self, mm: &Mm, f: FrameId, file: bool) {
        if !mm.frames.is_anon(f) {
            return;
        }
        let i = f as usize;
        if (self.fs[i].fl & F_NAMED != 0) == file {
            return;
        }
        let on_list = self.fs[i].gen1 != 0;
        if on_list {
            self.del_folio(f);
        }
        let refs = self.fs[i].fl & F_ALL_REFS;
        self.fs[i].fl = refs | if file { F_FILE | F_NAMED } else { 0 };
        if on_list {
            let seq = self.inactive_seq(self.ty(f), mm.frames.flags(f) & F_SWAPCACHE != 0);
            let gen = self.gen_of_seq(seq);
            self.add_folio(f, gen, false);
        }
    }

    fn validate(&self, mm: &Mm) -> std::result::Result<(), String> {
        let name = self.name();
        let n = self.cfg.max_gens as usize;
        for ty in [ANON, FILE] {
            let g = self.nr_gens(ty);
            if g < MIN_NR_GENS || g > n as u64 {
                return Err(format!(
                    "{name}: type {ty} has {g} generations (max_seq {}, min_seq {}), outside [{MIN_NR_GENS}, {n}]",
                    self.max_seq, self.min_seq[ty]
                ));
            }
        }
        // seq_is_valid: nr_gens(file) <= nr_gens(anon).
        if self.min_seq[FILE] < self.min_seq[ANON] {
            return Err(format!(
                "{name}: min_seq file {} < anon {}",
                self.min_seq[FILE], self.min_seq[ANON]
            ));
        }
        let mut count = vec![0u64; n * 2];
        let mut held = 0u64;
        for gen in 0..n {
            for (ty, zone) in [ANON, FILE]
                .into_iter()
                .flat_map(|ty| (0..self.nz()).map(move |z| (ty, z)))
            {
                let l = &self.lists[self.lz(gen, ty, zone)];
                l.validate(&self.links, name)?;
                if l.is_empty() {
                    continue;
                }
                if self.seq_of_gen(gen, ty).is_none() {
                    return Err(format!(
                        "{name}: list of gen {gen} type {ty} holds {} frames but is outside [min_seq, max_seq]",
                        l.len
                    ));
                }
                for f in l.iter(&self.links) {
                    held += 1;
                    let i = f as usize;
                    if self.ty(f) != ty {
                        return Err(format!(
                            "{name}: frame {f} of type {} on a type-{ty} list",
                            self.ty(f)
                        ));
                    }
                    let swap_backed = mm.frames.is_anon(f) && self.fs[i].fl & F_NAMED == 0;
                    if swap_backed == (ty == FILE) {
                        return Err(format!("{name}: frame {f} on the wrong type's list"));
                    }
                    if self.zone(f) != zone {
                        return Err(format!(
                            "{name}: frame {f} of zone {} on a zone-{zone} list",
                            self.zone(f)
                        ));
                    }
                    if self.fs[i].phys as usize != gen || self.fs[i].gen1 == 0 {
                        return Err(format!(
                            "{name}: frame {f} on list {gen} but says list {} / gen+1 {}",
                            self.fs[i].phys, self.fs[i].gen1
                        ));
                    }
                    let lg = self.fs[i].gen1 as usize - 1;
                    if self.seq_of_gen(lg, ty).is_none() {
                        return Err(format!(
                            "{name}: frame {f} in generation index {lg}, outside [min_seq {}, max_seq {}]",
                            self.min_seq[ty], self.max_seq
                        ));
                    }
                    count[lidx(lg, ty)] += 1;
                }
            }
        }
        if count != self.nr_pages {
            let bad = (0..n * 2)
                .find(|&k| count[k] != self.nr_pages[k])
                .unwrap_or(0);
            return Err(format!(
                "{name}: nr_pages[gen {}][type {}] = {} but {} frames carry that generation",
                bad / 2,
                bad % 2,
                self.nr_pages[bad],
                count[bad]
            ));
        }
        let on_flags = self.fs.iter().filter(|s| s.gen1 != 0).count() as u64;
        if on_flags != held {
            return Err(format!(
                "{name}: {on_flags} frames flagged on a list but {held} are on lists"
            ));
        }
        let all = self.lists.iter().flat_map(|l| l.iter(&self.links));
        super::registry::check_holds_exactly(mm, all, name)
    }

    fn scan_work(&self) -> crate::policy::ScanWork {
        crate::policy::ScanWork {
            walk_ptes: self.stats.walk_ptes,
            walk_pmds: self.stats.walk_pmds,
            lookaround_ptes: self.stats.lookaround_ptes,
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.stats;
        vec![
            ("gens_created", s.gens_created),
            ("aging_walks", s.aging_walks),
            ("walk_pmds", s.walk_pmds),
            ("walk_pmds_scanned", s.walk_pmds_scanned),
            ("walk_pmds_added", s.walk_pmds_added),
            ("walk_ptes", s.walk_ptes),
            ("walk_young", s.walk_young),
            ("lookarounds", s.lookarounds),
            ("lookaround_ptes", s.lookaround_ptes),
            ("lookaround_young", s.lookaround_young),
            ("promoted_walk", s.promoted_walk),
            ("promoted_lookaround", s.promoted_lookaround),
            ("promoted_rmap", s.promoted_rmap),
            ("writeback_keep", s.writeback_keep),
            ("kept_referenced", s.kept_referenced),
            ("kept_locked", s.kept_locked),
            ("sorted_locked", s.sorted_locked),
            ("sorted_writeback", s.sorted_writeback),
            ("sorted_dirty", s.sorted_dirty),
            ("nr_vmscan_immediate_reclaim", s.nr_vmscan_immediate_reclaim),
            ("sorted_promoted", s.sorted_promoted),
            ("sorted_ineligible", s.sorted_ineligible),
            ("forced_inc_gen", s.forced_inc_gen),
            ("evicted_tier0", s.evicted_tier[0]),
            ("evicted_tier1", s.evicted_tier[1]),
            ("evicted_tier2", s.evicted_tier[2]),
            ("evicted_tier3", s.evicted_tier[3]),
            ("protected_tier1", s.protected_tier[1]),
            ("protected_tier2", s.protected_tier[2]),
            ("protected_tier3", s.protected_tier[3]),
            ("refaults", s.refaults),
            ("refaults_recent", s.refaults_recent),
            ("max_nr_gens", s.max_nr_gens),
            ("workingset_activate_anon", s.workingset_activate[ANON]),
            ("workingset_activate_file", s.workingset_activate[FILE]),
            ("workingset_restore_anon", s.workingset_restore[ANON]),
            ("workingset_restore_file", s.workingset_restore[FILE]),
            ("pgscan_anon", s.pgscan[ANON]),
            ("pgscan_file", s.pgscan[FILE]),
            ("pgsteal_file", s.pgsteal[FILE]),
            ("max_seq", self.max_seq),
            ("min_seq_anon", self.min_seq[ANON]),
            ("min_seq_file", self.min_seq[FILE]),
            ("nr_lru_anon", self.nr_lru(ANON)),
            ("nr_lru_file", self.nr_lru(FILE)),
        ]
    }
}

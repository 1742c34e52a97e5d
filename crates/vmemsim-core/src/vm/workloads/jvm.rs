//! `jvm-like`: a HotSpot JVM running a Java program over a generational heap (seed 004,
//! VSwapper §5.1, Fig. 13: DaCapo's `eclipse` on OpenJDK with a 128 MB heap in a 1-vCPU
//! guest that believes it has 512 MB; "its garbage collector subsystem causes an
//! LRU-related pathological case of degraded performance when the physical memory
//! allocated to the guest is smaller than the JVM working set").
//!
//! # Which collector
//!
//! The Serial collector (`-XX:+UseSerialGC`: DefNew copying young collection, Serial Old
//! mark-compact of the whole heap). OpenJDK 7 picks it on a machine that is not
//! "server class" (`os::is_server_class_machine`: fewer than 2 CPUs or less than 2 GB), which
//! a 1-vCPU, 512 MB guest is not; the Parallel collector (the server-class default) is left
//! out, so there is one GC thread, on vCPU 0, and `vcpus` > 1 adds idle vCPUs.
//!
//! # Heap layout (as HotSpot 7 lays it out)
//!
//! `heap_bytes` is `-Xmx` and also `-Xms` (the heap is sized at its maximum from the start;
//! HotSpot's growth from a smaller `-Xms` is left out). It must be a multiple of 64 KiB
//! (`Generation::GenGrain`, to which HotSpot rounds it). From
//! `TwoGenerationCollectorPolicy::initialize_size_info` and
//! `DefNewGeneration::compute_space_boundaries`:
//!
//! - young = heap / (`NewRatio` + 1) rounded down to 64 KiB, `NewRatio` = 2;
//! - survivor = young / (`SurvivorRatio` + 2) rounded down to a page, `SurvivorRatio` = 8;
//!   two survivor spaces; eden = young − 2 × survivor;
//! - old (tenured) = heap − young; the permanent generation (`perm_bytes`: class metadata)
//!   follows the old generation in the same reservation.
//!
//! The reservation ends at 4 GiB (`Universe::preferred_heap_base`: a heap that fits between
//! `HeapBaseMinAddress`, 2 GiB on Linux x86, and 4 GiB gets unscaled compressed oops and
//! ends at 4 GiB; a larger one ends at 32 GiB, zero-based), young first:
//! eden, survivor 0, survivor 1, old, perm. The card table (one byte per 512 bytes of heap
//! and perm: `CardTableModRefBS`), `libjvm.so`'s text, the JIT's code cache and the thread
//! stacks are `mmap` regions, top-down from [`MMAP_BASE`]. Nothing is pre-touched
//! (`-XX:-AlwaysPreTouch`): a page is first touched when first used.
//!
//! For 128 MiB: young 42.625 MiB (682 × 64 KiB), survivors 1,091 pages each, eden 8,730
//! pages (34.1 MiB), old 21,856 pages (85.4 MiB). For 3 MiB: young 256 pages, survivors
//! 25, eden 206, old 512.
//!
//! # The mutator
//!
//! At start vCPU 0 reads all of `libjvm.so`'s text (`jvm_text_bytes`), writes the thread
//! stacks (`stack_bytes`, all threads together) and writes the whole permanent generation
//! (class loading). With `jar_bytes` > 0 the classes come from the guest's disk: file 0
//! (the application's jars, `jar_bytes`, existing) is read from its start in `read`s of
//! [`JAR_CHUNK`] ([`Op::File`], through the guest's page cache), each followed by the
//! next slice of the permanent generation written (the classes it defines), so perm is
//! written in as many even slices as there are reads. Then it allocates `alloc_bytes`, a page at a time by bump pointer
//! through eden (TLAB allocation). Per page allocated (a *step*): `alloc_ns_per_kib` × 4 of
//! CPU (the program's work per allocation, split so the total is exact); during the first
//! tenth of the steps the next slice of the code cache written (the JIT compiles early);
//! the eden page written; one read of a page among the last [`RECENT`] allocated (the
//! young objects just made); `old_refs` accesses to the old generation's live set, a
//! [`OLD_WRITE`] share of them writes, each write also dirtying the page's card (the write
//! barrier); one read each of the code cache (of what has been compiled), the permanent
//! generation and `libjvm.so`'s text. The live set, code, perm and text references are
//! hot/cold: with probability `hot_share` uniform over the first `hot` fraction of the
//! region, otherwise uniform over all of it.
//!
//! # Objects and lifetimes
//!
//! At a minor collection `floor(survive × used eden pages)` of eden's pages hold live
//! objects, evenly spread over it (page `floor(i × used / S)` for the `i`-th of `S`).
//! Objects that have survived a collection survive the next ones while young (medium
//! lifetimes: they die later, in the old generation). The first `live_bytes` that reach
//! the old generation are the program's long-lived data (Eclipse's workspace model, built
//! at start and kept to the end), always at the old generation's start; everything that
//! reaches it later is dead by the next full collection. Lifetimes are in whole pages.
//!
//! # Minor collection (DefNew)
//!
//! When a page must be allocated and eden is full. First the promotion check
//! (`DefNewGeneration::collection_attempt_is_safe`): if the old generation's free pages are
//! fewer than this collection would promote, a full collection runs instead (HotSpot
//! compares with the padded average of past promotions; here it is the exact amount, which
//! that average is in the steady state). Otherwise, in order: the roots, every thread
//! stack page read; the card table: for each card-table page covering the old
//! generation's used part, read it, read every old page dirtied since the last collection
//! whose cards are on it (in address order), and write it if any was (cards cleaned). Then
//! the copying (`copy_to_survivor_space`): the from-space's pages in address order, then
//! eden's live pages: a page whose objects' age (collections survived) is below the
//! tenuring threshold is copied to the next free page of to-space with its age plus one,
//! otherwise, or when to-space is full, promoted to the next free page of the old
//! generation (bump allocation at its top); a copy reads the source and writes the
//! destination. Promoted pages then have their cards written (the barrier records the
//! pointers into the young generation that they hold). Eden and from-space are then
//! empty, the survivor spaces swap, and the threshold is recomputed as
//! `ageTable::compute_tenuring_threshold` does: the smallest age at which the pages of
//! that age and younger in to-space exceed `TargetSurvivorRatio` = 50% of a survivor
//! space, at most `MaxTenuringThreshold` = 15 (its value before the first collection).
//!
//! Eden is reused from its start after every collection: its pages are the hottest in the
//! process, rewritten once per cycle, and the whole young generation is touched
//! cyclically.
//!
//! # Full collection (Serial Old mark-compact, `GenMarkSweep`)
//!
//! Collects all generations and the permanent one (JDK 7). Phase 1 (mark): the stacks read,
//! then every live page written (mark bits in object headers): perm, the old live set,
//! eden's live pages, from-space. Phase 2 (compute new addresses, `prepare_for_compaction`)
//! walks every space object by object, dead ones included: every used page of the old
//! generation read in address order, live ones written (forwarding pointers), then eden's
//! used pages and from-space the same way, then perm (all live, written). Phase 3 (adjust
//! pointers): the stacks read, every live page written, in the same space order. Phase 4
//! (compact): perm first, then the old live set, written in place (the live set is at the
//! old generation's start already, so nothing moves), then the young generation's live
//! pages (eden's, then from-space's) copied to the old generation after the live set. The
//! card-table pages covering the old generation's used part (before or after, whichever
//! is larger) are written (cleared). Marking in address order rather than graph order is a
//! simplification. Every page visit by phases 1–4 costs `scan_ns_per_page`, a copy
//! `copy_ns_per_kib` × 4 instead; so does each page visit and copy of a minor collection.
//!
//! Phase 2 reads the whole used old generation in address order, a loop over more memory
//! than an LRU holds when the guest is short of it, on top of eden's cyclic reuse.
//!
//! # Sizes and costs (estimates, keys)
//!
//! `heap_bytes` = 128 MiB (the paper's heap); `live_bytes` = 32 MiB (Eclipse's long-lived
//! data); `alloc_bytes` = 3 GiB (DaCapo's `eclipse` at its default size allocates a few
//! GB); `survive` = 0.1 (of eden, live at a minor collection); `perm_bytes` = 40 MiB
//! (Eclipse loads many classes: tens of MB of metadata); `code_bytes` = 8 MiB (code cache
//! in use); `jvm_text_bytes` = 12 MiB (`libjvm.so`'s text); `stack_bytes` = 1 MiB (16
//! threads × 64 KiB in use); `old_refs` = 4 per page allocated; `hot` = 0.1, `hot_share` =
//! 0.9; `alloc_ns_per_kib` = 4000 (250 MB/s of allocation: 3 GiB in 12.9 s of mutator
//! time); `scan_ns_per_page` = 1000 (~50 objects a page); `copy_ns_per_kib` = 1000.
//!
//! With the defaults: 786,432 pages allocated are 91 fills of eden, so 90 collections,
//! 85 minor and 5 full (collections 27, 42, 57, 72 and 87). Each minor collection copies
//! 873 eden pages to to-space and, from the second on, promotes the 873 of the one before
//! (the threshold falls to 1 after the first: 873 > 1,091 / 2); a full collection walks
//! 21,825 used old pages (the first) or 21,287 (the others: 8,192 live + 1,746 moved young
//! pages + 13 promotions of 873). The footprint is 47,960 pages (187 MiB): more than a
//! 192 MiB guest holds besides its kernel. See [`JvmLike::plan`] for the schedule.
//!
//! # Footprint
//!
//! [`Workload::footprint_pages`] is the number of distinct pages touched (the JVM never
//! frees memory back): text, stacks, perm, code cache, eden's pages used, each survivor
//! space's peak use, the old generation's peak top and the card-table pages covering it,
//! from the collection schedule ([`JvmLike::plan`]), which does not depend on the random
//! draws.
//!
//! # Left out
//!
//! The Parallel and concurrent collectors; heap growth and shrinking (`-Xms` < `-Xmx`);
//! TLABs and object sizes (allocation is in pages); the object graph (marking and copying
//! in address order); reference processing, finalisation, class unloading; the
//! permanent generation's own growth and compaction (it is all live and does not move);
//! by default the reading of the application's jars (`jar_bytes` = 0: their size is the
//! experiment's estimate to make; the page cache they take is not in the footprint), and
//! jar reads after start-up; the C heap (`malloc`) of the JVM; JIT recompilation after
//! warm-up; `OutOfMemoryError` (a live set that cannot fit is a spec error) and the
//! guest's OOM killer; the padded average of the promotion check.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{bad_vcpu, GuestEmitter, MMAP_BASE};
use crate::error::Result;
use crate::trace::recorded::{FileIo, FileOp};
use crate::workload::common::{pages_of, push_file_op, split, stream, CHUNK_OPS, PAGE_BYTES};
use crate::workload::params::{fmt_size, Params};
use crate::workload::{Op, Workload};

const KEYS: &[&str] = &[
    "heap_bytes",
    "live_bytes",
    "alloc_bytes",
    "survive",
    "perm_bytes",
    "code_bytes",
    "jvm_text_bytes",
    "stack_bytes",
    "old_refs",
    "hot",
    "hot_share",
    "alloc_ns_per_kib",
    "scan_ns_per_page",
    "copy_ns_per_kib",
    "jar_bytes",
    "vcpus",
    "seed",
];

/// `NewRatio`: old / young.
pub const NEW_RATIO: u64 = 2;
/// `SurvivorRatio`: eden / one survivor space.
pub const SURVIVOR_RATIO: u64 = 8;
/// `TargetSurvivorRatio` (percent of a survivor space).
pub const TARGET_SURVIVOR_RATIO: u64 = 50;
/// `MaxTenuringThreshold`.
pub const MAX_TENURING_THRESHOLD: u32 = 15;
/// `Generation::GenGrain`: generation alignment, in pages (64 KiB).
const GRAIN_PAGES: u64 = 16;
/// Bytes of heap per card (`CardTableModRefBS::card_size`).
pub const CARD_BYTES: u64 = 512;
/// Heap pages whose cards share one card-table page (4096 cards of 512 bytes: 2 MiB).
const CARDS_PAGE_SPAN: u64 = CARD_BYTES;
/// The mutator re-reads one of the last this many eden pages per page allocated.
pub const RECENT: u64 = 16;
/// Share of the mutator's old-generation references that are writes (an estimate).
pub const OLD_WRITE: f64 = 0.25;
/// The JIT writes the code cache over the first 1/this of the steps.
const WARMUP_DIV: u64 = 10;
/// Bytes of a jar read per `read` at start-up (an estimate: the zip reader's buffer).
pub const JAR_CHUNK: u64 = 64 << 10;
const TAG_MUT: u64 = 0x004A_564D;

#[derive(Clone, Debug)]
struct Config {
    heap_bytes: u64,
    live_bytes: u64,
    alloc_bytes: u64,
    survive: f64,
    perm_bytes: u64,
    code_bytes: u64,
    jvm_text_bytes: u64,
    stack_bytes: u64,
    old_refs: u64,
    hot: f64,
    hot_share: f64,
    alloc_ns_per_kib: u64,
    scan_ns_per_page: u64,
    copy_ns_per_kib: u64,
    jar_bytes: u64,
    vcpus: usize,
    seed: u64,
}

/// Where everything is: sizes in pages, first pages as page numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub young_pages: u64,
    pub eden_pages: u64,
    pub survivor_pages: u64,
    pub old_pages: u64,
    pub perm_pages: u64,
    pub card_pages: u64,
    pub code_pages: u64,
    pub jvm_pages: u64,
    pub stack_pages: u64,
    pub live_pages: u64,
    /// First page of the reservation (= eden).
    pub heap_base: u64,
    pub eden: u64,
    /// The two survivor spaces.
    pub survivor: [u64; 2],
    pub old: u64,
    pub perm: u64,
    pub card: u64,
    pub code: u64,
    pub jvm: u64,
    pub stack: u64,
}

impl Geometry {
    /// The card-table page holding the cards of heap page `page`.
    pub fn card_of(&self, page: u64) -> u64 {
        self.card + (page - self.heap_base) / CARDS_PAGE_SPAN
    }
    /// Card-table pages covering old pages `[0, top)`, as a range of page numbers.
    pub fn cards_of_old(&self, top: u64) -> std::ops::Range<u64> {
        if top == 0 {
            return 0..0;
        }
        self.card_of(self.old)..self.card_of(self.old + top - 1) + 1
    }
}

/// The heap's state between steps.
#[derive(Clone, Debug)]
struct Heap {
    /// Eden pages allocated in this cycle.
    etop: u64,
    /// Index of the from-space.
    from: usize,
    /// The from-space's contents in address order: (age, pages).
    cohorts: Vec<(u32, u64)>,
    /// Old pages in use, and the prefix of them that is the long-lived set.
    otop: u64,
    olive: u64,
    threshold: u32,
}

impl Heap {
    fn new() -> Heap {
        Heap {
            etop: 0,
            from: 0,
            cohorts: Vec::new(),
            otop: 0,
            olive: 0,
            threshold: MAX_TENURING_THRESHOLD,
        }
    }
    fn survivors_used(&self) -> u64 {
        self.cohorts.iter().map(|c| c.1).sum()
    }
}

/// The collection schedule of a run (see [`JvmLike::plan`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub steps: u64,
    pub minor_gcs: u64,
    pub full_gcs: u64,
    /// Kind of each collection in order: `false` minor, `true` full.
    pub gcs: Vec<bool>,
    /// Pages promoted by minor collections, and young pages moved to old by full ones.
    pub promoted_pages: u64,
    pub moved_pages: u64,
    /// Pages copied into a survivor space.
    pub survivor_copies: u64,
    /// Peak of the old generation's top, of each survivor space's use.
    pub old_peak: u64,
    pub survivor_peak: [u64; 2],
    /// Old pages in use at the start of each full collection.
    pub full_old_used: Vec<u64>,
}

/// Where a collection's page visits go: nowhere (planning) or into a vCPU's stream.
trait Sink {
    fn visit(&mut self, page: u64, write: bool, ns: u64);
}

struct NullSink;
impl Sink for NullSink {
    fn visit(&mut self, _page: u64, _write: bool, _ns: u64) {}
}

struct Emit<'a> {
    em: &'a mut GuestEmitter,
    buf: &'a mut Vec<Op>,
}
impl Sink for Emit<'_> {
    fn visit(&mut self, page: u64, write: bool, ns: u64) {
        self.em.compute(ns);
        self.em.access(self.buf, page, write);
    }
}

/// The JVM model (see the module docs).
pub struct JvmLike {
    cfg: Config,
    geo: Geometry,
    plan: Plan,
    /// Pages allocated so far (steps done).
    done: u64,
    started: bool,
    heap: Heap,
    /// Old pages written by the mutator since the last collection (flags and list).
    dirty: Vec<bool>,
    dirty_list: Vec<u64>,
    em: GuestEmitter,
    rng: Xoshiro256PlusPlus,
    /// The file records of the ops last handed out ([`Op::File`]'s slots).
    ios: Vec<FileIo>,
}

impl JvmLike {
    pub(crate) fn parse(text: &str, run_seed: u64) -> Result<JvmLike> {
        let p = Params::parse("jvm-like", text, KEYS)?;
        let size = |k: &str, default: u64, min: u64, max: u64| -> Result<u64> {
            let b = p.size(k)?.unwrap_or(default);
            if b < min || b > max {
                return Err(p.err(
                    k,
                    format!(
                        "{} is outside [{}, {}]",
                        fmt_size(b),
                        fmt_size(min),
                        fmt_size(max)
                    ),
                ));
            }
            Ok(b)
        };
        let cfg = Config {
            heap_bytes: size("heap_bytes", 128 << 20, 4096, 16 << 30)?,
            live_bytes: size("live_bytes", 32 << 20, 0, 16 << 30)?,
            alloc_bytes: size("alloc_bytes", 3 << 30, 4096, 1 << 40)?,
            survive: p.f64_in("survive", 0.1, 0.0, 1.0)?,
            perm_bytes: size("perm_bytes", 40 << 20, 4096, 4 << 30)?,
            code_bytes: size("code_bytes", 8 << 20, 4096, 4 << 30)?,
            jvm_text_bytes: size("jvm_text_bytes", 12 << 20, 4096, 4 << 30)?,
            stack_bytes: size("stack_bytes", 1 << 20, 4096, 4 << 30)?,
            old_refs: p.u64_in("old_refs", 4, 0, 1024)?,
            hot: p.f64_in("hot", 0.1, 0.0, 1.0)?,
            hot_share: p.f64_in("hot_share", 0.9, 0.0, 1.0)?,
            alloc_ns_per_kib: p.u64_in("alloc_ns_per_kib", 4000, 0, 1 << 32)?,
            scan_ns_per_page: p.u64_in("scan_ns_per_page", 1000, 0, 1 << 32)?,
            copy_ns_per_kib: p.u64_in("copy_ns_per_kib", 1000, 0, 1 << 32)?,
            jar_bytes: size("jar_bytes", 0, 0, 64 << 30)?,
            vcpus: p.u64_in("vcpus", 1, 1, 1024)? as usize,
            seed: p.seed(run_seed)?,
        };
        if cfg.hot == 0.0 {
            return Err(p.err("hot", "0 is outside (0, 1]"));
        }
        if !cfg.heap_bytes.is_multiple_of(GRAIN_PAGES * PAGE_BYTES) {
            return Err(p.err(
                "heap_bytes",
                format!(
                    "{} is not a multiple of 64KiB (HotSpot's generation alignment)",
                    fmt_size(cfg.heap_bytes)
                ),
            ));
        }
        let heap_pages = cfg.heap_bytes / PAGE_BYTES;
        let young_pages = heap_pages / (NEW_RATIO + 1) / GRAIN_PAGES * GRAIN_PAGES;
        if young_pages == 0 {
            return Err(p.err(
                "heap_bytes",
                format!(
                    "{} is too small for the generations: the young generation (heap / 3 rounded down to 64KiB) is empty; at least 192KiB",
                    fmt_size(cfg.heap_bytes)
                ),
            ));
        }
        let survivor_pages = young_pages / (SURVIVOR_RATIO + 2);
        let eden_pages = young_pages - 2 * survivor_pages;
        let old_pages = heap_pages - young_pages;
        let live_pages = pages_of(cfg.live_bytes);
        let max_eden_live = (cfg.survive * eden_pages as f64).floor() as u64;
        if live_pages + survivor_pages + max_eden_live > old_pages {
            return Err(p.err(
                "live_bytes",
                format!(
                    "{} does not fit the old generation ({} pages) with a full collection's young survivors ({} + {} pages): java.lang.OutOfMemoryError",
                    fmt_size(cfg.live_bytes),
                    old_pages,
                    survivor_pages,
                    max_eden_live
                ),
            ));
        }
        let perm_pages = pages_of(cfg.perm_bytes);
        let card_pages = pages_of((heap_pages + perm_pages) * PAGE_BYTES / CARD_BYTES);
        let (code_pages, jvm_pages, stack_pages) = (
            pages_of(cfg.code_bytes),
            pages_of(cfg.jvm_text_bytes),
            pages_of(cfg.stack_bytes),
        );
        // The reservation ends at 4 GiB (unscaled compressed oops, above HeapBaseMinAddress
        // = 2 GiB) or 32 GiB (zero-based).
        let reserve = heap_pages + perm_pages.div_ceil(GRAIN_PAGES) * GRAIN_PAGES;
        let end = if reserve * PAGE_BYTES <= 2 << 30 {
            (4u64 << 30) / PAGE_BYTES
        } else {
            (32u64 << 30) / PAGE_BYTES
        };
        let heap_base = end - reserve;
        let jvm = MMAP_BASE - jvm_pages;
        let card = jvm - card_pages;
        let code = card - code_pages;
        let stack = code - stack_pages;
        let geo = Geometry {
            young_pages,
            eden_pages,
            survivor_pages,
            old_pages,
            perm_pages,
            card_pages,
            code_pages,
            jvm_pages,
            stack_pages,
            live_pages,
            heap_base,
            eden: heap_base,
            survivor: [
                heap_base + eden_pages,
                heap_base + eden_pages + survivor_pages,
            ],
            old: heap_base + young_pages,
            perm: heap_base + heap_pages,
            card,
            code,
            jvm,
            stack,
        };
        let mut w = JvmLike {
            rng: stream(cfg.seed, TAG_MUT, 0),
            cfg,
            geo,
            plan: Plan::default(),
            done: 0,
            started: false,
            heap: Heap::new(),
            dirty: vec![false; old_pages as usize],
            dirty_list: Vec::new(),
            em: GuestEmitter::default(),
            ios: Vec::new(),
        };
        w.plan = w.make_plan();
        Ok(w)
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// The collection schedule: which collections run, what they promote and the peaks of
    /// use, from the same rules as the streams (the random draws do not change it).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    fn make_plan(&self) -> Plan {
        let mut plan = Plan {
            steps: pages_of(self.cfg.alloc_bytes),
            ..Plan::default()
        };
        let mut h = Heap::new();
        let mut left = plan.steps;
        while left > 0 {
            if h.etop == self.geo.eden_pages {
                self.collect(&mut h, &mut plan, &mut [], &mut NullSink);
            }
            let take = (self.geo.eden_pages - h.etop).min(left);
            h.etop += take;
            left -= take;
        }
        plan
    }

    /// Pages (distinct) the run touches: see the module docs.
    fn touched(&self) -> u64 {
        let g = &self.geo;
        let p = &self.plan;
        g.jvm_pages
            + g.stack_pages
            + g.perm_pages
            + g.code_pages
            + g.eden_pages.min(p.steps)
            + p.survivor_peak[0]
            + p.survivor_peak[1]
            + p.old_peak
            + g.cards_of_old(p.old_peak).count() as u64
    }

    fn copy_ns(&self) -> u64 {
        self.cfg.copy_ns_per_kib * (PAGE_BYTES / 1024)
    }

    /// Eden's live pages at a collection with `etop` pages used (offsets in eden).
    fn eden_live(&self, etop: u64) -> impl Iterator<Item = u64> {
        let s = (self.cfg.survive * etop as f64).floor() as u64;
        (0..s).map(move |i| (i as u128 * etop as u128 / s as u128) as u64)
    }

    /// A collection when eden is full: minor, or full when the promotion check fails.
    /// `dirty`: old pages (offsets) the mutator wrote since the last one, sorted.
    fn collect(&self, h: &mut Heap, plan: &mut Plan, dirty: &mut [u64], sink: &mut dyn Sink) {
        // What a minor collection would promote.
        let mut to_used = 0u64;
        let mut promote = 0u64;
        let surv = self.geo.survivor_pages;
        for &(age, pages) in &h.cohorts {
            for _ in 0..pages {
                if age >= h.threshold || to_used == surv {
                    promote += 1;
                } else {
                    to_used += 1;
                }
            }
        }
        let s = self.eden_live(h.etop).count() as u64;
        let eden_to = s.min(surv - to_used);
        promote += s - eden_to;
        if self.geo.old_pages - h.otop < promote {
            self.full(h, plan, sink);
        } else {
            self.minor(h, plan, dirty, sink);
        }
        h.olive = h.olive.max(self.geo.live_pages.min(h.otop));
        plan.old_peak = plan.old_peak.max(h.otop);
    }

    fn minor(&self, h: &mut Heap, plan: &mut Plan, dirty: &mut [u64], sink: &mut dyn Sink) {
        let g = &self.geo;
        let scan = self.cfg.scan_ns_per_page;
        let copy = self.copy_ns();
        plan.minor_gcs += 1;
        plan.gcs.push(false);
        for p in 0..g.stack_pages {
            sink.visit(g.stack + p, false, scan);
        }
        dirty.sort_unstable();
        let mut d = 0;
        for c in g.cards_of_old(h.otop) {
            sink.visit(c, false, scan);
            let mut any = false;
            while d < dirty.len() && g.card_of(g.old + dirty[d]) == c {
                sink.visit(g.old + dirty[d], false, scan);
                any = true;
                d += 1;
            }
            if any {
                sink.visit(c, true, 0);
            }
        }
        let (from, to) = (g.survivor[h.from], g.survivor[1 - h.from]);
        let surv = g.survivor_pages;
        let mut to_used = 0u64;
        let mut next: Vec<(u32, u64)> = Vec::new();
        let otop0 = h.otop;
        let mut place = |age: u32, src: u64, h: &mut Heap, sink: &mut dyn Sink| {
            if age >= h.threshold || to_used == surv {
                sink.visit(src, false, 0);
                sink.visit(g.old + h.otop, true, copy);
                h.otop += 1;
            } else {
                sink.visit(src, false, 0);
                sink.visit(to + to_used, true, copy);
                to_used += 1;
                match next.last_mut() {
                    Some(c) if c.0 == age + 1 => c.1 += 1,
                    _ => next.push((age + 1, 1)),
                }
            }
        };
        let mut off = 0;
        for (age, pages) in std::mem::take(&mut h.cohorts) {
            for _ in 0..pages {
                place(age, from + off, h, sink);
                off += 1;
            }
        }
        for e in self.eden_live(h.etop) {
            place(0, g.eden + e, h, sink);
        }
        // Cards of the promoted pages (old-to-young pointers recorded).
        let promoted = h.otop - otop0;
        if promoted > 0 {
            let first = g.card_of(g.old + otop0);
            for c in first..g.card_of(g.old + h.otop - 1) + 1 {
                sink.visit(c, true, 0);
            }
        }
        plan.promoted_pages += promoted;
        plan.survivor_copies += to_used;
        let t = 1 - h.from;
        plan.survivor_peak[t] = plan.survivor_peak[t].max(to_used);
        // ageTable::compute_tenuring_threshold over to-space.
        let mut by_age = [0u64; 16];
        for &(age, pages) in &next {
            by_age[(age as usize).min(15)] += pages;
        }
        let (mut total, mut age) = (0u64, 1usize);
        while age < 16 {
            total += by_age[age];
            // pages × 4096 > survivor bytes × TargetSurvivorRatio / 100
            if total * 100 > surv * TARGET_SURVIVOR_RATIO {
                break;
            }
            age += 1;
        }
        h.threshold = (age as u32).min(MAX_TENURING_THRESHOLD);
        h.cohorts = next;
        h.from = t;
        h.etop = 0;
    }

    fn full(&self, h: &mut Heap, plan: &mut Plan, sink: &mut dyn Sink) {
        let g = &self.geo;
        let scan = self.cfg.scan_ns_per_page;
        let copy = self.copy_ns();
        plan.full_gcs += 1;
        plan.gcs.push(true);
        plan.full_old_used.push(h.otop);
        let from = g.survivor[h.from];
        let f = h.survivors_used();
        let live: Vec<u64> = self.eden_live(h.etop).collect();
        let stacks = |sink: &mut dyn Sink| {
            for p in 0..g.stack_pages {
                sink.visit(g.stack + p, false, scan);
            }
        };
        let perm = |sink: &mut dyn Sink| {
            for p in 0..g.perm_pages {
                sink.visit(g.perm + p, true, scan);
            }
        };
        let live_all = |sink: &mut dyn Sink| {
            for p in 0..h.olive {
                sink.visit(g.old + p, true, scan);
            }
            for &e in &live {
                sink.visit(g.eden + e, true, scan);
            }
            for p in 0..f {
                sink.visit(from + p, true, scan);
            }
        };
        // Phase 1: mark.
        stacks(sink);
        perm(sink);
        live_all(sink);
        // Phase 2: forwarding addresses, every space walked.
        for p in 0..h.otop {
            sink.visit(g.old + p, p < h.olive, scan);
        }
        let mut li = live.iter().peekable();
        for e in 0..h.etop {
            let w = li.peek() == Some(&&e);
            if w {
                li.next();
            }
            sink.visit(g.eden + e, w, scan);
        }
        for p in 0..f {
            sink.visit(from + p, true, scan);
        }
        perm(sink);
        // Phase 3: adjust pointers.
        stacks(sink);
        live_all(sink);
        perm(sink);
        // Phase 4: compact, perm first.
        perm(sink);
        for p in 0..h.olive {
            sink.visit(g.old + p, true, scan);
        }
        let mut dst = h.olive;
        for &e in &live {
            sink.visit(g.eden + e, false, 0);
            sink.visit(g.old + dst, true, copy);
            dst += 1;
        }
        for p in 0..f {
            sink.visit(from + p, false, 0);
            sink.visit(g.old + dst, true, copy);
            dst += 1;
        }
        for c in g.cards_of_old(h.otop.max(dst)) {
            sink.visit(c, true, scan);
        }
        plan.moved_pages += dst - h.olive;
        plan.old_peak = plan.old_peak.max(h.otop).max(dst);
        h.otop = dst;
        h.cohorts.clear();
        h.etop = 0;
    }

    /// Hot/cold draw over `n` pages (`None` if empty).
    fn hotcold(&mut self, n: u64) -> Option<u64> {
        if n == 0 {
            return None;
        }
        let hot_n = ((self.cfg.hot * n as f64).ceil() as u64).clamp(1, n);
        let hot = self.cfg.hot_share >= 1.0 || self.rng.gen::<f64>() < self.cfg.hot_share;
        Some(self.rng.gen_range(0..if hot { hot_n } else { n }))
    }

    fn start(&mut self, buf: &mut Vec<Op>) {
        let g = self.geo;
        for p in 0..g.jvm_pages {
            self.em.access(buf, g.jvm + p, false);
        }
        for p in 0..g.stack_pages {
            self.em.access(buf, g.stack + g.stack_pages - 1 - p, true);
        }
        if self.cfg.jar_bytes == 0 {
            for p in 0..g.perm_pages {
                self.em.access(buf, g.perm + p, true);
            }
            return;
        }
        let n = self.cfg.jar_bytes.div_ceil(JAR_CHUNK);
        for c in 0..n {
            let off = c * JAR_CHUNK;
            let len = JAR_CHUNK.min(self.cfg.jar_bytes - off);
            self.em.flush(buf);
            self.em.split();
            push_file_op(buf, &mut self.ios, FileOp::Read, 0, off, len);
            let (lo, hi) = split(g.perm_pages, n, c);
            for p in lo..hi {
                self.em.access(buf, g.perm + p, true);
            }
        }
    }

    /// One page allocated (step `i`), with a collection first if eden is full.
    fn step(&mut self, i: u64, buf: &mut Vec<Op>) {
        let g = self.geo;
        if self.heap.etop == g.eden_pages {
            let mut h = std::mem::replace(&mut self.heap, Heap::new());
            let mut plan = Plan::default();
            let mut dirty = std::mem::take(&mut self.dirty_list);
            let mut em = std::mem::take(&mut self.em);
            self.collect(
                &mut h,
                &mut plan,
                &mut dirty,
                &mut Emit { em: &mut em, buf },
            );
            for d in dirty.drain(..) {
                self.dirty[d as usize] = false;
            }
            self.dirty_list = dirty;
            self.em = em;
            self.heap = h;
        }
        let steps = self.plan.steps;
        let total_ns = (self.cfg.alloc_bytes as u128 * self.cfg.alloc_ns_per_kib as u128 / 1024)
            .min(u64::MAX as u128) as u64;
        let (lo, hi) = split(total_ns, steps, i);
        self.em.compute(hi - lo);
        let warm = (steps / WARMUP_DIV).max(1);
        if i < warm {
            let (clo, chi) = split(g.code_pages, warm, i);
            for p in clo..chi {
                self.em.access(buf, g.code + p, true);
            }
        }
        let e = self.heap.etop;
        self.em.access(buf, g.eden + e, true);
        self.heap.etop += 1;
        let r = self.rng.gen_range(e.saturating_sub(RECENT - 1)..=e);
        self.em.access(buf, g.eden + r, false);
        for _ in 0..self.cfg.old_refs {
            let Some(o) = self.hotcold(self.heap.olive) else {
                break;
            };
            let write = self.rng.gen::<f64>() < OLD_WRITE;
            self.em.access(buf, g.old + o, write);
            if write {
                self.em.access(buf, g.card_of(g.old + o), true);
                if !std::mem::replace(&mut self.dirty[o as usize], true) {
                    self.dirty_list.push(o);
                }
            }
        }
        let compiled = if i < warm {
            split(g.code_pages, warm, i).1
        } else {
            g.code_pages
        };
        if let Some(c) = self.hotcold(compiled) {
            self.em.access(buf, g.code + c, false);
        }
        if let Some(p) = self.hotcold(g.perm_pages) {
            self.em.access(buf, g.perm + p, false);
        }
        if let Some(t) = self.hotcold(g.jvm_pages) {
            self.em.access(buf, g.jvm + t, false);
        }
    }
}

impl Workload for JvmLike {
    fn name(&self) -> String {
        let c = &self.cfg;
        format!(
            "jvm-like:heap_bytes={},live_bytes={},alloc_bytes={},survive={},perm_bytes={},code_bytes={},jvm_text_bytes={},stack_bytes={},old_refs={},hot={},hot_share={},alloc_ns_per_kib={},scan_ns_per_page={},copy_ns_per_kib={},jar_bytes={},vcpus={},seed={}",
            fmt_size(c.heap_bytes),
            fmt_size(c.live_bytes),
            fmt_size(c.alloc_bytes),
            c.survive,
            fmt_size(c.perm_bytes),
            fmt_size(c.code_bytes),
            fmt_size(c.jvm_text_bytes),
            fmt_size(c.stack_bytes),
            c.old_refs,
            c.hot,
            c.hot_share,
            c.alloc_ns_per_kib,
            c.scan_ns_per_page,
            c.copy_ns_per_kib,
            fmt_size(c.jar_bytes),
            c.vcpus,
            c.seed
        )
    }

    fn threads(&self) -> usize {
        self.cfg.vcpus
    }

    fn footprint_pages(&self) -> u64 {
        self.touched()
    }

    fn files(&self) -> Vec<crate::mm::FileSpec> {
        if self.cfg.jar_bytes == 0 {
            return Vec::new();
        }
        vec![crate::mm::FileSpec {
            id: 0,
            initial_size: self.cfg.jar_bytes,
            extent: self.cfg.jar_bytes,
        }]
    }

    fn file_io(&self, tid: usize, slot: u32) -> Option<&FileIo> {
        if tid != 0 {
            return None;
        }
        self.ios.get(slot as usize)
    }

    fn next_ops(&mut self, v: usize, buf: &mut Vec<Op>) -> Result<()> {
        if v >= self.cfg.vcpus {
            return Err(bad_vcpu("jvm-like", v, self.cfg.vcpus));
        }
        if v != 0 {
            return Ok(());
        }
        self.ios.clear();
        let start = buf.len();
        if !self.started {
            self.started = true;
            self.start(buf);
        }
        while buf.len() - start < CHUNK_OPS && self.done < self.plan.steps {
            let i = self.done;
            self.step(i, buf);
            self.done += 1;
            if self.done == self.plan.steps {
                self.em.flush(buf);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::vm::workloads::parse;

    /// 3 MiB heap: young 256 pages (768 / 3, a multiple of 16), survivors 256 / 10 = 25
    /// pages each, eden 256 − 50 = 206, old 768 − 256 = 512. 64 pages of live set, 20 of
    /// eden live at a collection (floor(0.1 × 206)); 5,768 pages allocated = 28 fills of
    /// eden, so 27 collections.
    const SMALL: &str = "jvm-like:heap_bytes=3MiB,live_bytes=256KiB,alloc_bytes=23072KiB,\
                         perm_bytes=64KiB,code_bytes=16KiB,jvm_text_bytes=32KiB,stack_bytes=8KiB";

    fn small(extra: &str) -> JvmLike {
        let spec = format!("{SMALL}{extra}");
        JvmLike::parse(spec.split_once(':').unwrap().1, 1).unwrap()
    }

    struct Rec(Vec<(u64, bool, u64)>);
    impl Sink for Rec {
        fn visit(&mut self, page: u64, write: bool, ns: u64) {
            self.0.push((page, write, ns));
        }
    }

    /// Each collection's page visits (page, write, ns), replaying the schedule without
    /// dirty cards (the streams' collections when `old_refs=0`).
    fn collections(w: &JvmLike) -> Vec<Vec<(u64, bool, u64)>> {
        let (mut h, mut out) = (Heap::new(), Vec::new());
        let mut plan = Plan {
            steps: w.plan.steps,
            ..Plan::default()
        };
        let mut left = w.plan.steps;
        while left > 0 {
            if h.etop == w.geo.eden_pages {
                let mut r = Rec(Vec::new());
                w.collect(&mut h, &mut plan, &mut [], &mut r);
                out.push(r.0);
            }
            let take = (w.geo.eden_pages - h.etop).min(left);
            h.etop += take;
            left -= take;
        }
        assert_eq!(plan, w.plan);
        out
    }

    #[test]
    fn geometry_by_hand() {
        let w = small("");
        let g = w.geometry();
        assert_eq!(
            (g.young_pages, g.survivor_pages, g.eden_pages, g.old_pages),
            (256, 25, 206, 512)
        );
        // Cards: (768 + 16 perm pages) × 4096 / 512 = 6,272 bytes: 2 pages.
        assert_eq!((g.perm_pages, g.card_pages, g.live_pages), (16, 2, 64));
        // The reservation (768 + 16 pages) ends at 4 GiB = page 1,048,576.
        assert_eq!(g.heap_base, 1_048_576 - 784);
        assert_eq!(g.survivor, [g.heap_base + 206, g.heap_base + 231]);
        assert_eq!((g.old, g.perm), (g.heap_base + 256, g.heap_base + 768));
        // Old offset 255 is heap page 511 (card page 0), 256 is heap page 512 (card page 1).
        assert_eq!(g.cards_of_old(256), g.card..g.card + 1);
        assert_eq!(g.cards_of_old(257), g.card..g.card + 2);
        assert_eq!(g.jvm, MMAP_BASE - 8);
        // The paper's 128 MiB: young 44,739,242 bytes rounded down to 64 KiB = 682 × 16
        // pages; survivors 10,912 / 10 = 1,091; eden 10,912 − 2,182 = 8,730; old 32,768 −
        // 10,912 = 21,856; a minor collection finds floor(873.0) eden pages live.
        let d = JvmLike::parse("", 0).unwrap();
        let g = d.geometry();
        assert_eq!(
            (g.young_pages, g.survivor_pages, g.eden_pages, g.old_pages),
            (10_912, 1_091, 8_730, 21_856)
        );
        assert_eq!(d.eden_live(8_730).count(), 873);
        // 3 GiB = 786,432 pages = 90.08 fills of eden: 90 collections.
        assert_eq!(d.plan().gcs.len(), 90);
    }

    #[test]
    fn collection_schedule_by_hand() {
        // Collection 1: 20 eden pages to to-space (age 1); 20 > 25 / 2, so the threshold
        // falls to 1. Collections 2..: the 20 age-1 pages promoted, 20 eden pages copied:
        // the old generation's top is 20 (k − 1) after collection k. Before collection 27 it
        // is 500, free 12 < 20: a full collection instead, moving 20 eden + 20 from-space
        // pages to old after the 64-page live set (top 104).
        let w = small("");
        let p = w.plan();
        assert_eq!(p.steps, 5_768);
        let mut gcs = vec![false; 26];
        gcs.push(true);
        assert_eq!(p.gcs, gcs);
        assert_eq!((p.minor_gcs, p.full_gcs), (26, 1));
        assert_eq!((p.promoted_pages, p.moved_pages), (25 * 20, 40));
        assert_eq!(p.survivor_copies, 26 * 20);
        assert_eq!((p.old_peak, p.survivor_peak), (500, [20, 20]));
        assert_eq!(p.full_old_used, vec![500]);
        // One page more: collection 28 is minor (from-space was emptied: nothing promoted).
        let w = small("").plan.steps;
        assert_eq!(w, 28 * 206);
        let more = JvmLike::parse(
            SMALL
                .replace("23072KiB", "23076KiB")
                .split_once(':')
                .unwrap()
                .1,
            1,
        )
        .unwrap();
        assert_eq!(more.plan().gcs.len(), 28);
        assert_eq!(more.plan().promoted_pages, 500);
        assert_eq!(more.plan().survivor_copies, 27 * 20);
    }

    #[test]
    fn a_minor_collection_touches_by_hand() {
        let w = small(",old_refs=0");
        let g = *w.geometry();
        let gcs = collections(&w);
        // Collection 3: from-space is survivor 0 (1 → s1, 2 → s0, 3 → s1), 20 pages of age
        // 1 ≥ threshold 1: promoted to old offsets 20..40; eden's live pages floor(i × 206 /
        // 20) copied to survivor 1. Before it: stacks read, the card page of old 0..20 read.
        let (scan, copy) = (1000, 4000);
        let mut want = vec![(g.stack, false, scan), (g.stack + 1, false, scan)];
        want.push((g.card, false, scan));
        for i in 0..20 {
            want.push((g.survivor[0] + i, false, 0));
            want.push((g.old + 20 + i, true, copy));
        }
        let eden = [
            0, 10, 20, 30, 41, 51, 61, 72, 82, 92, 103, 113, 123, 133, 144, 154, 164, 175, 185, 195,
        ];
        for (i, e) in eden.iter().enumerate() {
            want.push((g.eden + e, false, 0));
            want.push((g.survivor[1] + i as u64, true, copy));
        }
        want.push((g.card, true, 0)); // cards of the promoted pages
        assert_eq!(gcs[2], want);
        // Collection 1 copies only (no old pages yet): 2 stack reads + 20 × 2.
        assert_eq!(gcs[0].len(), 42);
        // Collection 15 finds old 0..260 in use: both card pages read.
        assert_eq!(gcs[14].iter().filter(|v| v.0 == g.card + 1).count(), 1 + 1);
    }

    #[test]
    fn a_full_collection_reads_the_whole_old_generation_in_address_order() {
        let w = small(",old_refs=0");
        let g = *w.geometry();
        let gcs = collections(&w);
        let full = &gcs[26];
        // Old pages beyond the live set (64..500) are dead: phase 2 reads each once in
        // address order; phase 4 writes the 40 moved young pages at 64..104.
        let dead: Vec<(u64, bool)> = full
            .iter()
            .filter(|v| (g.old + 64..g.old + 500).contains(&v.0))
            .map(|v| (v.0 - g.old, v.1))
            .collect();
        let mut want: Vec<(u64, bool)> = (64..500).map(|p| (p, false)).collect();
        want.extend((64..104).map(|p| (p, true)));
        assert_eq!(dead, want);
        // Every page of old 0..500 is visited; phase 2's walk is one run in address order.
        let olds: Vec<u64> = full
            .iter()
            .filter(|v| (g.old..g.old + 512).contains(&v.0))
            .map(|v| v.0 - g.old)
            .collect();
        let run = olds.windows(500).any(|w| w.iter().copied().eq(0..500));
        assert!(run);
        // Visits: stacks 2 × 2, perm 16 × 4, the live pages (64 old + 20 eden + 20 from)
        // in phases 1 and 3, phase 2's 500 old + 206 eden + 20 from, phase 4's 64 old and
        // 40 copies (a read and a write), 2 card pages: 1,148, of which 1,068 scans.
        assert_eq!(full.len(), 4 + 64 + 2 * 104 + 726 + 64 + 80 + 2);
        let ns: u64 = full.iter().map(|v| v.2).sum();
        assert_eq!(ns, 1_068 * 1000 + 40 * 4000);
    }

    #[test]
    fn first_touches_footprint_and_cpu_by_hand() {
        // Distinct pages: text 8 + stacks 2 + perm 16 + code 4 + eden 206 + survivors 20 +
        // 20 + old 500 + card pages 2 (old offsets 0..500 are heap pages 256..756) = 778.
        for extra in ["", ",old_refs=0"] {
            let spec = format!("{SMALL}{extra}");
            let (w, s) = run(&spec, 1);
            assert_eq!(w.footprint_pages(), 778);
            let c = census(&s);
            assert_eq!(c.distinct, 778, "{spec}");
            if extra.is_empty() {
                continue;
            }
            // CPU: 5,768 pages × 4 KiB × 4000 ns; minor collections' scans: 2 stack pages
            // each (52), card pages read: collections 3..14 one (12), 15..26 two (24): 88
            // × 1000; copies: 20 + 25 × 40 = 1,020 × 4000; the full one 1,228,000.
            let want = 5_768 * 4 * 4000 + 88 * 1000 + 1_020 * 4000 + 1_228_000;
            assert_eq!(c.compute_ns, want);
        }
    }

    #[test]
    fn dirty_cards_are_scanned_at_the_next_minor_collection() {
        // The live set is old offsets 0..64; from collection 6 on promotions land above it
        // (collection k promotes to offsets 20 (k − 2)..20 (k − 1)), so from collection 5 to
        // the full collection (27) every write to it is the mutator's. Each minor
        // collection k = 7..26 reads, after the card pages and
        // before its first copy, exactly the live pages written since collection k − 1, in
        // address order.
        let mut w = parse(SMALL, 4).unwrap();
        let s = drain(w.as_mut(), Order::RoundRobin);
        let g = *small("").geometry();
        let live = g.old..g.old + 64;
        let young = g.eden..g.old;
        let mut written = std::collections::BTreeSet::new();
        let (ops, mut i, mut gc, mut scanned_total) = (&s[0], 0, 0, 0);
        while i < ops.len() {
            let Op::Access { page, write } = ops[i] else {
                i += 1;
                continue;
            };
            if page == g.stack + g.stack_pages - 1 && !write {
                // A collection's (second) stack read.
                gc += 1;
                let mut scanned = Vec::new();
                i += 1;
                while i < ops.len() {
                    match ops[i] {
                        Op::Access { page, .. } if young.contains(&page) => break,
                        Op::Access { page, write } if live.contains(&page) && !write => {
                            scanned.push(page)
                        }
                        _ => {}
                    }
                    i += 1;
                }
                let want: Vec<u64> = std::mem::take(&mut written).into_iter().collect();
                if (7..=26).contains(&gc) {
                    assert_eq!(scanned, want, "collection {gc}");
                    assert!(!want.is_empty());
                    scanned_total += want.len();
                }
                continue;
            }
            if live.contains(&page) && write {
                written.insert(page);
            }
            i += 1;
        }
        assert!(gc >= 27, "{gc}");
        assert!(scanned_total > 20, "{scanned_total}");
    }

    #[test]
    fn names_determinism_and_vcpus() {
        let (w, a) = run(SMALL, 5);
        assert_eq!(
            w.name(),
            "jvm-like:heap_bytes=3MiB,live_bytes=256KiB,alloc_bytes=23072KiB,survive=0.1,perm_bytes=64KiB,code_bytes=16KiB,jvm_text_bytes=32KiB,stack_bytes=8KiB,old_refs=4,hot=0.1,hot_share=0.9,alloc_ns_per_kib=4000,scan_ns_per_page=1000,copy_ns_per_kib=1000,jar_bytes=0,vcpus=1,seed=5"
        );
        let (_, b) = run(&w.name(), 0);
        assert_eq!(a, b);
        let (_, c) = run(SMALL, 6);
        assert_ne!(a, c);
        let (w, s) = run(&format!("{SMALL},vcpus=2"), 5);
        assert_eq!(w.threads(), 2);
        assert_eq!(s[0], a[0]);
        assert!(s[1].is_empty());
    }

    #[test]
    fn jars_are_read_in_chunks_as_perm_is_written() {
        // 200 KiB of jars: reads of 64, 64, 64 and 8 KiB at 0, 64, 128 and 192 KiB, each
        // followed by 4 of perm's 16 pages written; nothing else changes.
        let mut w = parse(&format!("{SMALL},jar_bytes=200KiB"), 1).unwrap();
        let files = w.files();
        assert_eq!(files.len(), 1);
        assert_eq!(
            (files[0].id, files[0].initial_size, files[0].extent),
            (0, 200 << 10, 200 << 10)
        );
        let g = *small("").geometry();
        let mut buf = Vec::new();
        w.next_ops(0, &mut buf).unwrap();
        let mut reads = Vec::new();
        let mut perm_after = Vec::new();
        for op in &buf {
            match *op {
                Op::File { slot } => {
                    let r = *w.file_io(0, slot).unwrap();
                    reads.push((r.op, r.file, r.offset, r.len));
                    perm_after.push(0);
                }
                Op::Access { page, write: true } if (g.perm..g.perm + 16).contains(&page) => {
                    *perm_after.last_mut().unwrap() += 1;
                }
                _ => {}
            }
        }
        let k = 1 << 10;
        assert_eq!(
            reads,
            vec![
                (FileOp::Read, 0, 0, 64 * k),
                (FileOp::Read, 0, 64 * k, 64 * k),
                (FileOp::Read, 0, 128 * k, 64 * k),
                (FileOp::Read, 0, 192 * k, 8 * k)
            ]
        );
        assert_eq!(perm_after, vec![4, 4, 4, 4]);
        assert!(w.file_io(1, 0).is_none());
        let s = drain(w.as_mut(), Order::RoundRobin);
        let c = census(&s);
        assert_eq!((c.distinct, w.footprint_pages()), (778, 778));
        // ... and it runs in a VM, the jars read through the guest's page cache.
        let mut wl = parse(&format!("{SMALL},jar_bytes=200KiB"), 1).unwrap();
        let c = crate::vm::VmConfig::new(crate::vm::Paging::Tdp, 2048, 8192);
        let r = crate::vm::run(&c, wl.as_mut()).unwrap();
        assert_eq!(r.stats.major_faults, 0);
        assert!(parse(SMALL, 1).unwrap().files().is_empty());
    }

    #[test]
    fn spec_errors_name_the_key() {
        let e = |s: &str| parse(s, 0).err().unwrap().to_string();
        assert_eq!(
            e("jvm-like:heap_bytes=128KiB"),
            "jvm-like.heap_bytes: 128KiB is too small for the generations: the young generation (heap / 3 rounded down to 64KiB) is empty; at least 192KiB"
        );
        assert_eq!(
            e("jvm-like:heap_bytes=100KiB"),
            "jvm-like.heap_bytes: 100KiB is not a multiple of 64KiB (HotSpot's generation alignment)"
        );
        // 3 MiB: 512 old pages < 500 live + 25 + 20.
        assert_eq!(
            e("jvm-like:heap_bytes=3MiB,live_bytes=2000KiB"),
            "jvm-like.live_bytes: 2000KiB does not fit the old generation (512 pages) with a full collection's young survivors (25 + 20 pages): java.lang.OutOfMemoryError"
        );
        assert_eq!(
            e("jvm-like:survive=1.5"),
            "jvm-like.survive: 1.5 is outside [0, 1]"
        );
        assert_eq!(
            e("jvm-like:survive=-0.1"),
            "jvm-like.survive: -0.1 is outside [0, 1]"
        );
        assert_eq!(e("jvm-like:hot=0"), "jvm-like.hot: 0 is outside (0, 1]");
        assert!(e("jvm-like:xmx=1GiB")
            .starts_with("jvm-like.xmx: unknown key for jvm-like (valid: heap_bytes,"));
        assert_eq!(
            e("jvm-like:vcpus=0"),
            "jvm-like.vcpus: 0 is outside [1, 1024]"
        );
    }

    #[test]
    fn short_of_memory_the_cyclic_young_generation_faults_every_cycle() {
        use crate::vm::{run as run_vm, Paging, VmConfig};
        // Windows k = 2..27 (eden fill k and collection k) each touch all 206 eden pages
        // and the 2 stack pages, all touched before; with at most F of them resident when
        // a window starts, at least 208 − F fault in it: with F = 150, 26 × 58 = 1,508.
        let spec = SMALL;
        let go = |guest: u32, host: u32| {
            let mut wl = parse(spec, 1).unwrap();
            let c = VmConfig::new(Paging::Tdp, guest, host);
            run_vm(&c, wl.as_mut()).unwrap()
        };
        // Plenty: nothing is reclaimed; one first touch per distinct page.
        let r = go(2048, 8192);
        assert_eq!((r.stats.major_faults, r.host_stats.major_faults), (0, 0));
        assert_eq!(r.stats.first_touch, 778);
        // The guest short of memory: guest major faults.
        let r = go(150, 8192);
        assert!(r.stats.major_faults >= 26 * 58, "{}", r.stats.major_faults);
        // The host short of memory (the guest believes it has plenty): host major faults.
        let r = go(2048, 150);
        assert!(
            r.host_stats.major_faults >= 26 * 58,
            "{}",
            r.host_stats.major_faults
        );
    }
}

//! W-TinyLFU (Einziger, Friedman & Manes, "TinyLFU: a highly efficient cache admission
//! policy", ACM TOS 13(4), 2017, §4): a small LRU *window* takes every new page; when memory
//! is needed the window's LRU page is a *candidate* for the main cache, an SLRU (§4.1:
//! probation 20%, protected 80%), and enters it only if the frequency sketch rates it above
//! the main cache's own victim (TinyLFU admission, §3.1); otherwise the candidate leaves.
//!
//! This follows libCacheSim's `WTinyLFU.c` (with `SLRU.c` as main cache, `seg-size=1:4`, and
//! `minimalIncrementCBF.c` as the sketch, see [`super::sketch`]) step by step, because the
//! differential test compares miss counts. What libCacheSim does that the paper does not:
//! - Sizes: window `W = ⌊C · window_size⌋` (default 0.01), main `C − W`; probation
//!   `⌊(C−W)/5⌋`, protected `⌊4(C−W)/5⌋` (one frame of the main share is unassigned when
//!   `C − W` is not a multiple of 5). libCacheSim admits nothing when `W` = 0 (C < 100 at the
//!   default), vmemsim always admits the faulting page, so the two are comparable only where
//!   `W` ≥ 1.
//! - Sketch updates: a miss adds the page; a hit adds it only if the page is in the main
//!   cache (window hits are not counted); each window candidate is added once more when it is
//!   considered. The reset (halving, paper §3.3) comes after `sample_factor · (C − W)`
//!   (default 32) hits in the main cache, not after that many accesses.
//! - Admission: strictly more frequent than the main victim (as the paper). While the main
//!   cache has room, candidates move in without a test and the next candidate is taken; the
//!   eviction ends when a candidate is admitted (its main victim leaves) or rejected (it
//!   leaves), or when the window is empty (the main cache evicts its victim).
//!   libCacheSim's source of October 2024 (`aa0fc40`) kept taking candidates after an
//!   admission, freeing several pages on one miss; the `libcachesim` 0.3.5 build the
//!   differential test uses stops after it (measured: with the older loop the first
//!   resident sets differ after ~150 accesses; with this rule every compared case is equal).
//! - SLRU: a new page enters the lowest segment with room (so protected fills up during
//!   warm-up), else probation, which can thus hold one page over its share (the unassigned
//!   frame); a hit in probation moves the page to protected's head, whose overflow moves
//!   protected's LRU page to probation's head; if probation is then over its share, its
//!   LRU page is evicted *during the hit* (`SLRU_cool` on segment 0 calls `SLRU_evict`).
//!
//! That hit-time eviction frees a page without a miss, which vmemsim's engine cannot do (it
//! frees one frame per miss). Such a page is kept as a *zombie*: it counts as gone in every
//! rule above, and the next miss frees its frame instead of running the rules (libCacheSim,
//! having room then, evicts nothing). The only divergence is a zombie referenced before that
//! miss: a miss for libCacheSim, a hit for vmemsim, after which both put the page in the
//! window and the states agree again. The `zombie_hits` counter counts these, so
//! `faults + zombie_hits` equals libCacheSim's miss count exactly.
//!
//! Knobs: `window_size` (0.01, in [0, 1)), `sketch_error` (0.001, the sketch's sizing error
//! rate, in (0, 1)), `sample_factor` (32: hits in the main cache between resets, per frame of
//! the main cache, ≥ 1).

use super::list::{Links, List, NIL};
use super::sketch::FrequencySketch;
use super::{Family, Insert, Policy, PolicyOptions, Touch};
use crate::error::{Error, Result};
use crate::mm::{FrameId, Mm};

const NONE: u8 = 0;
const WINDOW: u8 = 1;
const PROBATION: u8 = 2;
const PROTECTED: u8 = 3;
const ZOMBIE: u8 = 4;

#[derive(Debug)]
pub struct WTinyLfu {
    links: Links,
    /// LRU window, head = most recent.
    window: List,
    /// SLRU segment 0 (probation) and 1 (protected), head = most recent.
    probation: List,
    protected: List,
    /// Frames libCacheSim's cache has dropped but the engine still holds; tail = oldest.
    zombies: List,
    list_of: Vec<u8>,
    /// Page of each held frame (the sketch is keyed by page number).
    page: Vec<u64>,
    window_cap: u32,
    main_cap: u32,
    probation_cap: u32,
    protected_cap: u32,
    sketch: FrequencySketch,
    /// Main-cache hits between resets, and the count since the last one.
    sample: u64,
    since_reset: u64,
    /// Candidates admitted to / rejected from the main cache by the sketch.
    admitted: u64,
    rejected: u64,
    resets: u64,
    zombie_hits: u64,
}

impl WTinyLfu {
    pub fn new(frames: u32, opts: &PolicyOptions) -> Result<Self> {
        let window_size: f64 = opts.get("window_size", 0.01)?;
        let error: f64 = opts.get("sketch_error", 0.001)?;
        let factor: u64 = opts.get("sample_factor", 32)?;
        if !(0.0..1.0).contains(&window_size) {
            return Err(Error::config(
                "option window_size",
                format!("must be in [0, 1), got {window_size}"),
            ));
        }
        if !(error > 0.0 && error < 1.0) {
            return Err(Error::config(
                "option sketch_error",
                format!("must be in (0, 1), got {error}"),
            ));
        }
        if factor == 0 {
            return Err(Error::config("option sample_factor", "must be at least 1"));
        }
        // libCacheSim: `cache_size *= window_size` on an int64 (truncation), SLRU segment
        // `(int64)((double)part / sum * size)`.
        let window_cap = (frames as f64 * window_size) as u32;
        let main_cap = frames - window_cap;
        let probation_cap = (1.0f64 / 5.0 * main_cap as f64) as u32;
        let protected_cap = (4.0f64 / 5.0 * main_cap as f64) as u32;
        let n = frames as usize;
        Ok(WTinyLfu {
            links: Links::new(n),
            window: List::default(),
            probation: List::default(),
            protected: List::default(),
            zombies: List::default(),
            list_of: vec![NONE; n],
            page: vec![u64::MAX; n],
            window_cap,
            main_cap,
            probation_cap,
            protected_cap,
            sketch: FrequencySketch::new(main_cap, error),
            sample: factor * main_cap as u64,
            since_reset: 0,
            admitted: 0,
            rejected: 0,
            resets: 0,
            zombie_hits: 0,
        })
    }

    /// (window, probation, protected) capacities.
    pub fn caps(&self) -> (u32, u32, u32) {
        (self.window_cap, self.probation_cap, self.protected_cap)
    }

    /// (window, probation, protected, zombies) lengths.
    pub fn sizes(&self) -> (u32, u32, u32, u32) {
        (
            self.window.len,
            self.probation.len,
            self.protected.len,
            self.zombies.len,
        )
    }

    /// The sketch (tests).
    pub fn sketch_mut(&mut self) -> &mut FrequencySketch {
        &mut self.sketch
    }

    /// Replace the sketch (tests: a tiny one whose counts can be followed by hand).
    pub fn set_sketch(&mut self, s: FrequencySketch) {
        self.sketch = s;
    }

    fn main_len(&self) -> u32 {
        self.probation.len + self.protected.len
    }

    fn unlink(&mut self, f: FrameId) {
        let l = &mut self.links;
        match std::mem::replace(&mut self.list_of[f as usize], NONE) {
            WINDOW => self.window.remove(l, f),
            PROBATION => self.probation.remove(l, f),
            PROTECTED => self.protected.remove(l, f),
            ZOMBIE => self.zombies.remove(l, f),
            _ => {}
        }
    }

    fn push(&mut self, tag: u8, f: FrameId) {
        let l = &mut self.links;
        match tag {
            WINDOW => self.window.push_head(l, f),
            PROBATION => self.probation.push_head(l, f),
            PROTECTED => self.protected.push_head(l, f),
            _ => self.zombies.push_head(l, f),
        }
        self.list_of[f as usize] = tag;
    }

    /// libCacheSim's page left the cache; the engine still holds its frame.
    fn bury(&mut self, f: FrameId) {
        self.unlink(f);
        self.push(ZOMBIE, f);
    }

    /// SLRU `to_evict`: the LRU page of the lowest non-empty segment.
    fn main_victim(&self) -> FrameId {
        if self.probation.len > 0 {
            self.probation.tail
        } else {
            self.protected.tail
        }
    }

    /// SLRU insert: the lowest segment with room, else (after making room in the main
    /// cache's share) probation.
    fn main_insert(&mut self, f: FrameId) {
        if self.probation.len < self.probation_cap {
            self.push(PROBATION, f);
        } else if self.protected.len < self.protected_cap {
            self.push(PROTECTED, f);
        } else {
            while self.main_len() >= self.main_cap && self.main_len() > 0 {
                let v = self.main_victim();
                self.bury(v);
            }
            self.push(PROBATION, f);
        }
    }

    /// SLRU hit: protected pages go to protected's head; a probation page is promoted, and
    /// protected's overflow cools down into probation, whose overflow is evicted.
    fn main_hit(&mut self, f: FrameId) {
        if self.list_of[f as usize] == PROTECTED {
            self.protected.move_to_head(&mut self.links, f);
            return;
        }
        self.unlink(f);
        self.push(PROTECTED, f);
        while self.protected.len > self.protected_cap {
            let c = self.protected.tail;
            self.unlink(c);
            self.push(PROBATION, c);
            while self.probation.len > self.probation_cap {
                let v = self.main_victim();
                self.bury(v);
            }
        }
    }

    /// libCacheSim's `WTinyLFU_evict`: frees exactly one page (into `zombies`).
    fn evict_rules(&mut self) {
        loop {
            let cand = self.window.tail;
            if cand == NIL {
                if self.main_len() > 0 {
                    let v = self.main_victim();
                    self.bury(v);
                }
                return;
            }
            let cand_page = self.page[cand as usize];
            let mut done = false;
            if self.main_len() < self.main_cap {
                self.unlink(cand);
                self.main_insert(cand);
            } else {
                let victim = self.main_victim();
                if self.sketch.estimate(cand_page)
                    > self.sketch.estimate(self.page[victim as usize])
                {
                    self.bury(victim);
                    self.unlink(cand);
                    self.main_insert(cand);
                    self.admitted += 1;
                    done = true;
                } else {
                    self.bury(cand);
                    self.rejected += 1;
                    done = true;
                }
            }
            self.sketch.add(cand_page);
            if done {
                return;
            }
        }
    }
}

impl Policy for WTinyLfu {
    fn name(&self) -> &'static str {
        "w-tinylfu"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn prefetch(&self, f: FrameId) {
        self.links.prefetch(f);
    }
    fn on_hit(&mut self, f: FrameId, t: Touch) {
        match self.list_of[f as usize] {
            WINDOW => self.window.move_to_head(&mut self.links, f),
            PROBATION | PROTECTED => {
                self.main_hit(f);
                self.sketch.add(t.vpn);
                self.since_reset += 1;
                if self.since_reset >= self.sample {
                    self.since_reset = 0;
                    self.sketch.decay();
                    self.resets += 1;
                }
            }
            ZOMBIE => {
                // A miss for libCacheSim, which has room (this page's slot): it inserts.
                self.zombie_hits += 1;
                self.unlink(f);
                self.push(WINDOW, f);
                self.sketch.add(t.vpn);
            }
            _ => {}
        }
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, t: Touch, _how: Insert) {
        self.page[f as usize] = t.vpn;
        self.push(WINDOW, f);
        self.sketch.add(t.vpn);
    }
    #[inline]
    fn victim_hint(&self, k: usize) -> Option<FrameId> {
        self.zombies.nth_from_tail(&self.links, k)
    }
    fn evict(&mut self, _mm: &mut Mm) -> Option<FrameId> {
        if self.zombies.is_empty() {
            self.evict_rules();
        }
        let f = self.zombies.pop_tail(&mut self.links)?;
        self.list_of[f as usize] = NONE;
        Some(f)
    }
    fn on_remove(&mut self, f: FrameId) {
        if self.list_of[f as usize] != NONE {
            self.unlink(f);
        }
    }
    fn validate(&self, mm: &Mm) -> std::result::Result<(), String> {
        let lists = [
            (&self.window, WINDOW, "w-tinylfu window"),
            (&self.probation, PROBATION, "w-tinylfu probation"),
            (&self.protected, PROTECTED, "w-tinylfu protected"),
            (&self.zombies, ZOMBIE, "w-tinylfu zombies"),
        ];
        for (l, tag, name) in lists {
            l.validate(&self.links, name)?;
            for f in l.iter(&self.links) {
                if self.list_of[f as usize] != tag {
                    return Err(format!(
                        "{name}: frame {f} tagged {}",
                        self.list_of[f as usize]
                    ));
                }
                if mm.owner(f) != self.page[f as usize] {
                    return Err(format!(
                        "{name}: frame {f} page {:#x} vs {:#x}",
                        self.page[f as usize],
                        mm.owner(f)
                    ));
                }
            }
        }
        // The main cache may go one over its share only by the unassigned frame.
        if self.main_len() > self.main_cap.max(1) {
            return Err(format!(
                "w-tinylfu: main holds {} > {}",
                self.main_len(),
                self.main_cap
            ));
        }
        if self.protected.len > self.protected_cap {
            return Err(format!(
                "w-tinylfu: protected holds {} > {}",
                self.protected.len, self.protected_cap
            ));
        }
        crate::policy::registry::check_holds_exactly(
            mm,
            lists.iter().flat_map(|(l, _, _)| l.iter(&self.links)),
            "w-tinylfu",
        )
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("admitted", self.admitted),
            ("rejected", self.rejected),
            ("sketch_resets", self.resets),
            ("zombie_hits", self.zombie_hits),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::lru_k::tests::steps;

    /// 7 frames, `window_size` 0.2: window ⌊1.4⌋ = 1, main 6 = probation ⌊1.2⌋ = 1 +
    /// protected ⌊4.8⌋ = 4, one frame unassigned. The sketch has one hash function over 2^20
    /// counters, so for these eleven pages it counts exactly (the final estimates below would
    /// show a collision): `f(x)` is the number of adds. Lists are written LRU first; `Z` =
    /// zombies (dropped by the rules, frame still held).
    ///
    /// ```text
    ///  t  page  what happens                                          window  prob  prot       f
    ///  0  A     miss, cold: every new page enters the window          A                        A1
    ///  1-6 B..G misses: the window holds all 7 until memory is full   A..G                     B1..G1
    ///  7  H     miss: main has room, candidates move in untested      H       A F   B C D E    A2 B2 C2 D2 E2 F2
    ///           (A fills probation, B..E protected; no segment has
    ///           room for F but main (5 < 6) does: probation, one
    ///           over); candidate G: f1 not > f(A)=2, G leaves (+1)                             G2 H1
    ///  8  F     probation hit: to protected, whose LRU B cools to
    ///           probation, now 2 > 1: its LRU A is evicted during
    ///           the hit and becomes a zombie                          H       B     C D E F    F3  Z[A]
    ///  9  A     zombie: a hit here, a miss in libCacheSim, which
    ///           has room (6 of 7) and puts A in the window            H A     B     C D E F    A3
    /// 10  I     miss: main has room (5), H moves in (probation,
    ///           one over); candidate A f3 > victim B f2: B leaves,
    ///           A to probation (one over again): admission ends it    I       H A   C D E F    H2 A4 I1
    /// 11  C     protected hit: to its MRU end                         I       H A   D E F C    C3
    /// 12  J     miss: candidate I f1 vs victim H f2: I leaves         J       H A   D E F C    I2 J1
    /// 13  H     probation hit: to protected, D cools to probation,
    ///           over again: A is evicted during the hit               J       D     E F C H    H3  Z[A]
    /// 14  K     miss: libCacheSim has room and evicts nothing; the
    ///           engine must free a frame: the zombie A                J K     D     E F C H    K1
    /// ```
    /// vmemsim: 11 faults; libCacheSim would count 12 (t9), `zombie_hits` = 1.
    #[test]
    fn admission_by_hand() {
        let (a, b, c, d, e, f, g, h, i, j, k) = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
        let opts = PolicyOptions::new(0).with("window_size", "0.2");
        let mut p = WTinyLfu::new(7, &opts).unwrap();
        assert_eq!(p.caps(), (1, 1, 4));
        p.set_sketch(FrequencySketch::with_shape(1 << 20, 1));
        let trace = [a, b, c, d, e, f, g, h, f, a, i, c, j, h, k];
        let (got, m) = steps(p, 7, &trace);
        let cold = Some(None);
        let miss = |v: u64| Some(Some(v));
        let expect = vec![
            cold,
            cold,
            cold,
            cold,
            cold,
            cold,
            cold,
            miss(g),
            None,
            None,
            miss(b),
            None,
            miss(i),
            None,
            miss(a),
        ];
        assert_eq!(got, expect);
        assert_eq!(m.stats.faults, 11);
        let p = &m.policy;
        assert_eq!(p.sizes(), (2, 1, 4, 0));
        let pages = |l: &List| {
            l.iter(&p.links)
                .map(|x| p.page[x as usize])
                .collect::<Vec<_>>()
        };
        assert_eq!(pages(&p.window), vec![k, j]);
        assert_eq!(pages(&p.probation), vec![d]);
        assert_eq!(pages(&p.protected), vec![h, c, f, e]);
        let freq: Vec<u32> = (1..=11).map(|x| p.sketch.estimate(x)).collect();
        assert_eq!(freq, vec![4, 2, 3, 2, 2, 3, 2, 3, 2, 1, 1]);
        let counters: std::collections::BTreeMap<_, _> = p.counters().into_iter().collect();
        assert_eq!(counters["zombie_hits"], 1);
        assert_eq!(counters["admitted"], 1);
        assert_eq!(counters["rejected"], 2);
    }

    /// The reset: after `sample_factor × main` main hits every counter is halved.
    #[test]
    fn sketch_resets_after_the_sample() {
        let opts = PolicyOptions::new(0)
            .with("window_size", "0.2")
            .with("sample_factor", "1");
        let mut p = WTinyLfu::new(6, &opts).unwrap();
        p.set_sketch(FrequencySketch::with_shape(1 << 20, 1));
        // Fill (6 misses), push B..E into main with one more miss, then 5 main hits on B.
        let trace = [1, 2, 3, 4, 5, 6, 7, 2, 2, 2, 2, 2];
        let (_, m) = steps(p, 6, &trace);
        let c: std::collections::BTreeMap<_, _> = m.policy.counters().into_iter().collect();
        assert_eq!(c["sketch_resets"], 1);
        // B: insert 1, candidate 1, 5 main hits = 7 adds; halved after the 5th: 3.
        assert_eq!(m.policy.sketch.estimate(2), 3);
    }

    #[test]
    fn options_are_validated() {
        for (k, v) in [
            ("window_size", "1"),
            ("window_size", "-0.1"),
            ("sketch_error", "0"),
            ("sample_factor", "0"),
        ] {
            let e = WTinyLfu::new(100, &PolicyOptions::new(0).with(k, v))
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("option {k}")), "{e}");
        }
    }
}

//! CLOCK-Pro (Jiang, Chen & Zhang, "CLOCK-Pro: An Effective Improvement of the CLOCK
//! Replacement", USENIX ATC'05, §3): LIRS's reuse-distance test carried out with clock hands,
//! so that a hit only sets a reference bit, as in CLOCK.
//!
//! Every page the policy knows is on one list in the order of its accesses (§3.1): hot pages
//! (LIRS's LIR), resident cold pages, and non-resident cold pages still in their *test period*
//! (metadata only). Three hands sweep from the old end towards the list head (§3.2):
//! - `HAND_cold` at the oldest resident cold page. Reference bit clear: the page is evicted;
//!   if it is in its test period it stays on the list as a non-resident cold page, otherwise
//!   it leaves. Bit set: the bit is cleared and the page goes to the list head; if it was in
//!   its test period it becomes hot (an access within the test period means its reuse distance
//!   is below the oldest hot page's recency), else it starts a new test period as a cold page.
//! - `HAND_hot` at the oldest hot page, run whenever there are more hot pages than
//!   `m − m_c`: a hot page with its bit set is spared (bit cleared, to the list head), the first
//!   with the bit clear becomes cold. Every cold page it passes ends its test period (a
//!   non-resident one leaves the list): it is now older than every hot page.
//! - `HAND_test` at the oldest page in its test period, run while more than `m` (knob
//!   `nonresident_ratio` × m) non-resident pages are remembered: it ends that page's test
//!   period, removing it if it is non-resident.
//!
//! A miss on a non-resident page still in its test period makes it hot at the list head; any
//! other miss puts the page at the list head as cold, in its test period, except while memory
//! fills for the first time: then new pages are hot until `m − m_c` are (as LIRS fills its LIR
//! set first, and as the authors' simulator does), so that the first promotion does not end
//! every test period at once. The cold target
//! `m_c` adapts (§3.3): +1 when a cold page is accessed in its test period, −1 when a test
//! period ends without an access, within `[1, m − 1]`.
//!
//! Where the clock is a real circle in the paper, this keeps it as a list in recency order
//! with each hand at the oldest page of its kind, and moves a page the hot or cold hand passes
//! to the list head, as the authors' simulator and Caffeine's `ClockProPolicy` do (a hand
//! moving past a page is that page becoming the newest to that hand).
//!
//! Knobs: `init_cold_ratio` (initial `m_c / m`, default 1.0 as libCacheSim's `init-ratio-cold`
//! default, clamped to `[1, m − 1]`), `nonresident_ratio` (1.0: at most `m` non-resident pages,
//! the paper's bound).
//!
//! libCacheSim 0.3.5's `ClockPro.c` cannot be compared miss for miss: its `ClockPro_can_insert`
//! refuses a new object whenever `mem_cold + size > mem_cold_max` (the cold target), and since
//! its eviction only runs after `can_insert` succeeds (`cache_get_base`), once the first
//! `⌊init_ratio_cold · c⌋` distinct objects are in, nothing is ever admitted or evicted again.
//! The differential test checks that explanation instead (tests/test_libcachesim_diff.py).
//!
//! Cost: a hit sets one bit. Each miss moves the hands; a page is passed by a hand at most a
//! bounded number of times per access to it, so the work is O(1) amortised. Hash lookups
//! happen on misses only.

use super::list::{Links, List, NIL};
use super::{Family, Insert, Policy, PolicyOptions, Touch};
use crate::error::{Error, Result};
use crate::mm::{FrameId, Mm, PTE_PRESENT};
use crate::util::PageMap;

const HOT: u8 = 1;
const COLD: u8 = 2;
const TEST: u8 = 4;
const REF: u8 = 8;

/// A page's status in the paper's terms (tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Hot {
        referenced: bool,
    },
    Cold {
        test: bool,
        referenced: bool,
    },
    /// Non-resident cold page in its test period.
    NonResident,
}

#[derive(Debug)]
pub struct ClockPro {
    m: u32,
    /// Frames are ids `0..m`, non-resident page `g` is id `m + g`.
    links: Links,
    /// Head = list head (most recent), tail = oldest.
    clock: List,
    st: Vec<u8>,
    ghost_vpn: Vec<u64>,
    ghost_free: Vec<u32>,
    ghost_of: PageMap<u32>,
    hand_hot: u32,
    hand_cold: u32,
    hand_test: u32,
    n_hot: u32,
    n_cold: u32,
    /// Pages in their test period, resident or not.
    n_test: u32,
    n_ghost: u32,
    ghost_max: u32,
    cold_target: u32,
    cold_min: u32,
    cold_max: u32,
    promotions: u64,
    demotions: u64,
    test_expired: u64,
    nonresident_hits: u64,
    /// Memory has been full once (eviction ran): the warm-up is over.
    full: bool,
}

impl ClockPro {
    pub fn new(frames: u32, opts: &PolicyOptions) -> Result<Self> {
        let init: f64 = opts.get("init_cold_ratio", 1.0)?;
        let nonres: f64 = opts.get("nonresident_ratio", 1.0)?;
        if !(0.0..=1.0).contains(&init) {
            return Err(Error::config(
                "option init_cold_ratio",
                format!("must be in [0, 1], got {init}"),
            ));
        }
        if !(0.0..=16.0).contains(&nonres) {
            return Err(Error::config(
                "option nonresident_ratio",
                format!("must be in [0, 16], got {nonres}"),
            ));
        }
        let cold_min = 1;
        let cold_max = frames.saturating_sub(1).max(1);
        let cold_target = ((init * frames as f64) as u32).clamp(cold_min, cold_max);
        let ghost_max = (nonres * frames as f64) as u32;
        let cap = ghost_max as usize + 2;
        let mut ghost_of = PageMap::default();
        ghost_of.reserve(cap);
        Ok(ClockPro {
            m: frames,
            links: Links::new(frames as usize + cap),
            clock: List::default(),
            st: vec![0; frames as usize],
            ghost_vpn: vec![u64::MAX; cap],
            ghost_free: (0..cap as u32).rev().collect(),
            ghost_of,
            hand_hot: NIL,
            hand_cold: NIL,
            hand_test: NIL,
            n_hot: 0,
            n_cold: 0,
            n_test: 0,
            n_ghost: 0,
            ghost_max,
            cold_target,
            cold_min,
            cold_max,
            promotions: 0,
            demotions: 0,
            test_expired: 0,
            nonresident_hits: 0,
            full: false,
        })
    }

    /// The cold target `m_c`.
    pub fn cold_target(&self) -> u32 {
        self.cold_target
    }

    /// (hot, resident cold, non-resident) page counts.
    pub fn sizes(&self) -> (u32, u32, u32) {
        (self.n_hot, self.n_cold, self.n_ghost)
    }

    /// The list from the oldest page to the list head, as (page, status) (tests).
    pub fn list(&self, mm: &Mm) -> Vec<(u64, Status)> {
        let mut v: Vec<(u64, Status)> = self
            .clock
            .iter(&self.links)
            .map(|id| {
                if id >= self.m {
                    return (self.ghost_vpn[(id - self.m) as usize], Status::NonResident);
                }
                let s = self.st[id as usize];
                let referenced = s & REF != 0;
                let status = if s & HOT != 0 {
                    Status::Hot { referenced }
                } else {
                    Status::Cold {
                        test: s & TEST != 0,
                        referenced,
                    }
                };
                (mm.owner(id), status)
            })
            .collect();
        v.reverse();
        v
    }

    #[inline]
    fn newer(&self, x: u32) -> u32 {
        self.links.prev(x)
    }
    fn is_hot(&self, x: u32) -> bool {
        x < self.m && self.st[x as usize] & HOT != 0
    }
    fn is_cold(&self, x: u32) -> bool {
        x < self.m && self.st[x as usize] & COLD != 0
    }
    fn in_test(&self, x: u32) -> bool {
        x >= self.m || self.st[x as usize] & TEST != 0
    }

    fn adjust(&mut self, up: bool) {
        self.cold_target = if up {
            (self.cold_target + 1).min(self.cold_max)
        } else {
            self.cold_target.saturating_sub(1).max(self.cold_min)
        };
    }

    /// Take `x` off the list; a hand on it moves to the next newer page.
    fn unlink(&mut self, x: u32) {
        let n = self.newer(x);
        for h in [&mut self.hand_hot, &mut self.hand_cold, &mut self.hand_test] {
            if *h == x {
                *h = n;
            }
        }
        self.clock.remove(&mut self.links, x);
    }

    fn move_to_head(&mut self, x: u32) {
        self.unlink(x);
        self.clock.push_head(&mut self.links, x);
    }

    /// End the test period of `x` (§3.3: −1 on `m_c` unless it was accessed meanwhile); a
    /// non-resident page leaves the list.
    fn end_test(&mut self, x: u32) {
        self.n_test -= 1;
        if x >= self.m {
            self.unlink(x);
            let g = x - self.m;
            let vpn = std::mem::replace(&mut self.ghost_vpn[g as usize], u64::MAX);
            self.ghost_of.remove(&vpn);
            self.ghost_free.push(g);
            self.n_ghost -= 1;
            self.adjust(false);
            self.test_expired += 1;
        } else {
            let s = &mut self.st[x as usize];
            *s &= !TEST;
            let accessed = *s & REF != 0;
            self.adjust(accessed);
            self.test_expired += !accessed as u64;
        }
    }

    /// Walk `hand` from where it is (the list's old end if nowhere) to the next page of its
    /// kind; the hot hand ends the test periods of the pages it passes.
    fn settle(&mut self) {
        // HAND_hot first: it can end test periods, which moves HAND_test.
        if self.n_hot == 0 {
            self.hand_hot = NIL;
        } else {
            let mut x = if self.hand_hot == NIL {
                self.clock.tail
            } else {
                self.hand_hot
            };
            while !self.is_hot(x) {
                let mut nx = self.newer(x);
                if nx == NIL {
                    nx = self.clock.tail;
                }
                if self.in_test(x) {
                    self.end_test(x);
                }
                x = nx;
            }
            self.hand_hot = x;
        }
        self.hand_cold = self.walk(self.hand_cold, self.n_cold, Self::is_cold);
        self.hand_test = self.walk(self.hand_test, self.n_test, Self::in_test);
    }

    fn walk(&self, from: u32, n: u32, kind: fn(&Self, u32) -> bool) -> u32 {
        if n == 0 {
            return NIL;
        }
        if from == NIL {
            // The hand fell off the list head (its page left or moved) or its kind was empty:
            // every page of its kind was put at the head since, so count them from the head
            // (a few steps) instead of walking from the old end.
            let (mut x, mut seen) = (self.clock.head, 0);
            loop {
                if kind(self, x) {
                    seen += 1;
                    if seen == n {
                        return x;
                    }
                }
                x = self.links.next(x);
            }
        }
        let mut x = from;
        while !kind(self, x) {
            x = self.newer(x);
            if x == NIL {
                x = self.clock.tail;
            }
        }
        x
    }

    /// HAND_hot: turn the oldest unreferenced hot page cold, sparing referenced ones.
    fn demote_one(&mut self) {
        while self.n_hot > 0 {
            let x = self.hand_hot;
            let s = self.st[x as usize];
            self.move_to_head(x);
            if s & REF != 0 {
                self.st[x as usize] = HOT;
                self.settle();
            } else {
                self.st[x as usize] = COLD;
                self.n_hot -= 1;
                self.n_cold += 1;
                self.demotions += 1;
                self.settle();
                return;
            }
        }
    }

    fn keep_hot_target(&mut self) {
        while self.n_hot > 0 && self.n_hot > self.m - self.cold_target {
            self.demote_one();
        }
    }

    /// HAND_test: end the oldest test period.
    fn run_test(&mut self) {
        let x = self.hand_test;
        let nx = self.newer(x);
        self.end_test(x);
        if self.hand_test == x {
            self.hand_test = nx;
        }
        self.settle();
    }

    fn ghost_alloc(&mut self, vpn: u64) -> u32 {
        let g = match self.ghost_free.pop() {
            Some(g) => g,
            None => {
                let g = self.ghost_vpn.len() as u32;
                self.ghost_vpn.push(u64::MAX);
                self.links.ensure(self.m as usize + self.ghost_vpn.len());
                g
            }
        };
        self.ghost_vpn[g as usize] = vpn;
        self.ghost_of.insert(vpn, g);
        self.n_ghost += 1;
        self.m + g
    }
}

impl Policy for ClockPro {
    fn name(&self) -> &'static str {
        "clock-pro"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn prefetch(&self, f: FrameId) {
        crate::hint::prefetch(self.st.as_ptr().wrapping_add(f as usize));
    }
    #[inline]
    fn on_hit(&mut self, f: FrameId, _t: Touch) {
        self.st[f as usize] |= REF;
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, t: Touch, how: Insert) {
        match self.ghost_of.get(&t.vpn).copied() {
            Some(g) if how != Insert::Readahead => {
                // A fault on a non-resident page in its test period: its reuse distance is
                // below the oldest hot page's recency, so it becomes hot (§3.2), and `m_c` grows.
                self.nonresident_hits += 1;
                self.promotions += 1;
                self.adjust(true);
                self.unlink(self.m + g);
                self.ghost_of.remove(&t.vpn);
                self.ghost_vpn[g as usize] = u64::MAX;
                self.ghost_free.push(g);
                self.n_ghost -= 1;
                self.n_test -= 1;
                self.st[f as usize] = HOT;
                self.n_hot += 1;
                self.clock.push_head(&mut self.links, f);
                self.settle();
                self.keep_hot_target();
            }
            other => {
                if let Some(g) = other {
                    let x = self.m + g;
                    self.end_test(x);
                    self.settle();
                }
                if !self.full && self.n_hot < self.m - self.cold_target {
                    // Warm-up: the hot set fills first, as LIRS's LIR set does.
                    self.st[f as usize] = HOT;
                    self.n_hot += 1;
                } else {
                    self.st[f as usize] = COLD | TEST;
                    self.n_cold += 1;
                    self.n_test += 1;
                }
                self.clock.push_head(&mut self.links, f);
                self.settle();
            }
        }
    }
    fn evict(&mut self, mm: &mut Mm) -> Option<FrameId> {
        self.full = true;
        loop {
            if self.n_cold == 0 {
                if self.n_hot == 0 {
                    return None;
                }
                self.demote_one();
                continue;
            }
            let c = self.hand_cold;
            let s = self.st[c as usize];
            if s & REF != 0 {
                self.move_to_head(c);
                if s & TEST != 0 {
                    // Accessed in its test period: hot.
                    self.adjust(true);
                    self.st[c as usize] = HOT;
                    self.n_cold -= 1;
                    self.n_test -= 1;
                    self.n_hot += 1;
                    self.promotions += 1;
                    self.settle();
                    self.keep_hot_target();
                } else {
                    // A new test period at the list head.
                    self.st[c as usize] = COLD | TEST;
                    self.n_test += 1;
                    self.settle();
                }
                continue;
            }
            self.n_cold -= 1;
            self.st[c as usize] = 0;
            if s & TEST != 0 {
                // Stays on the list, non-resident, until its test period ends.
                let n = self.newer(c);
                let x = self.ghost_alloc(mm.owner(c));
                self.clock.replace(&mut self.links, c, x);
                self.hand_cold = n;
                if self.hand_test == c {
                    self.hand_test = x;
                }
                while self.n_ghost > self.ghost_max {
                    self.run_test();
                }
            } else {
                self.unlink(c);
            }
            self.settle();
            return Some(c);
        }
    }
    fn on_remove(&mut self, f: FrameId) {
        let s = std::mem::replace(&mut self.st[f as usize], 0);
        if s == 0 {
            return;
        }
        if s & HOT != 0 {
            self.n_hot -= 1;
        } else {
            self.n_cold -= 1;
        }
        if s & TEST != 0 {
            self.n_test -= 1;
        }
        self.unlink(f);
        self.settle();
    }
    fn validate(&self, mm: &Mm) -> std::result::Result<(), String> {
        self.clock.validate(&self.links, "clock-pro")?;
        let (mut hot, mut cold, mut test, mut ghost) = (0u32, 0u32, 0u32, 0u32);
        let (mut seen_hot, mut seen_cold, mut seen_test) = (false, false, false);
        // From the oldest page: each hand is at the first page of its kind, and no page older
        // than HAND_hot is in its test period.
        let mut x = self.clock.tail;
        while x != NIL {
            if x == self.hand_hot {
                seen_hot = true;
            }
            if x == self.hand_cold {
                seen_cold = true;
            }
            if x == self.hand_test {
                seen_test = true;
            }
            if self.is_hot(x) {
                hot += 1;
                if !seen_hot {
                    return Err(format!("clock-pro: hot page {x} older than HAND_hot"));
                }
            } else if self.is_cold(x) {
                cold += 1;
                if !seen_cold {
                    return Err(format!("clock-pro: cold page {x} older than HAND_cold"));
                }
            } else if x >= self.m {
                ghost += 1;
                let vpn = self.ghost_vpn[(x - self.m) as usize];
                if self.ghost_of.get(&vpn) != Some(&(x - self.m)) {
                    return Err(format!("clock-pro: ghost {x} not indexed"));
                }
                if mm.pt.pte(vpn) & PTE_PRESENT != 0 {
                    return Err(format!("clock-pro: non-resident page {vpn:#x} is resident"));
                }
            } else {
                return Err(format!("clock-pro: frame {x} on the list with no status"));
            }
            if self.in_test(x) {
                test += 1;
                if !seen_test || (self.n_hot > 0 && !seen_hot) {
                    return Err(format!("clock-pro: page {x} in test older than its hands"));
                }
            }
            x = self.newer(x);
        }
        if (hot, cold, test, ghost) != (self.n_hot, self.n_cold, self.n_test, self.n_ghost) {
            return Err(format!(
                "clock-pro: counted {:?}, kept {:?}",
                (hot, cold, test, ghost),
                (self.n_hot, self.n_cold, self.n_test, self.n_ghost)
            ));
        }
        if ghost > self.ghost_max || self.ghost_of.len() != ghost as usize {
            return Err(format!("clock-pro: {ghost} non-resident pages"));
        }
        if !(self.cold_min..=self.cold_max).contains(&self.cold_target) {
            return Err(format!("clock-pro: cold target {}", self.cold_target));
        }
        crate::policy::registry::check_holds_exactly(
            mm,
            (0..self.m).filter(|&f| self.st[f as usize] != 0),
            "clock-pro",
        )
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("cold_target", self.cold_target as u64),
            ("promotions", self.promotions),
            ("demotions", self.demotions),
            ("test_expired", self.test_expired),
            ("nonresident_hits", self.nonresident_hits),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::Status::{Cold, Hot, NonResident};
    use super::*;
    use crate::engine::{Machine, MachineConfig};
    use crate::Access;

    fn machine(frames: u32, opts: &PolicyOptions) -> Machine<ClockPro> {
        let cfg = MachineConfig {
            check_invariants: true,
            ..MachineConfig::new(frames)
        };
        Machine::new(&cfg, ClockPro::new(frames, opts).unwrap()).unwrap()
    }

    fn step(m: &mut Machine<ClockPro>, page: u64) -> bool {
        let before = m.stats.faults;
        m.access(Access::read(page), u64::MAX);
        m.stats.faults == before
    }

    const HOT: Status = Hot { referenced: false };
    const HOT_REF: Status = Hot { referenced: true };
    const COLD: Status = Cold {
        test: false,
        referenced: false,
    };
    const TEST: Status = Cold {
        test: true,
        referenced: false,
    };
    const TEST_REF: Status = Cold {
        test: true,
        referenced: true,
    };
    const NR: Status = NonResident;

    /// 20 accesses on 4 frames, worked out by hand from §3's rules. m_c starts at 3 (ratio 1,
    /// clamped to m − 1), so the hot set is 1 page; at most 4 non-resident pages. Lists are
    /// written from the oldest page to the list head; H = hot, c = cold not in test,
    /// t = cold in its test period, * = reference bit, ' = non-resident (in test).
    #[test]
    fn paper_rules_by_hand() {
        let (a, b, c, d, e, f, g, h, i, j) = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
        let mut m = machine(4, &PolicyOptions::new(0));
        assert_eq!(m.policy.cold_target(), 3);
        let mut hits = Vec::new();
        let mut run = |m: &mut Machine<ClockPro>, p: u64| hits.push(step(m, p));
        // 1-4 A B C D: misses. Warm-up: A fills the hot set (m − m_c = 1), B C D are cold in
        // their test period: [A B C D] = [H t t t].
        for p in [a, b, c, d] {
            run(&mut m, p);
        }
        assert_eq!(
            m.policy.list(&m.mm),
            [(a, HOT), (b, TEST), (c, TEST), (d, TEST)]
        );
        // 5 B: hit, sets B's bit.
        run(&mut m, b);
        // 6 E: miss. HAND_cold at B: bit set in its test period -> B hot at the head (m_c + 1,
        // already at its maximum 3). 2 hot > m − m_c = 1: HAND_hot at A, bit clear -> A cold at
        // the head; HAND_hot moves on to B, passing C and D, whose test periods end unused
        // (m_c 3 -> 2 -> 1). HAND_cold at C: bit clear, not in test -> evicted, forgotten.
        // E enters cold in test: [D B A E] = [c H c t].
        run(&mut m, e);
        assert_eq!(
            m.policy.list(&m.mm),
            [(d, COLD), (b, HOT), (a, COLD), (e, TEST)]
        );
        assert_eq!(m.policy.cold_target(), 1);
        // 7 C: miss on a forgotten page: HAND_cold evicts D (clear, not in test); C enters
        // cold in test. 8 E: hit. 9 F: miss: HAND_cold evicts A. [B E C F] = [H t* t t].
        run(&mut m, c);
        run(&mut m, e);
        run(&mut m, f);
        assert_eq!(
            m.policy.list(&m.mm),
            [(b, HOT), (e, TEST_REF), (c, TEST), (f, TEST)]
        );
        // 10 G: miss. HAND_cold at E: bit set in its test period -> E hot at the head (m_c 2;
        // 2 hot = m − m_c, no demotion). HAND_cold at C: clear, in test -> evicted, stays as
        // non-resident C'. G enters: [B C' F E G].
        run(&mut m, g);
        assert_eq!(
            m.policy.list(&m.mm),
            [(b, HOT), (c, NR), (f, TEST), (e, HOT), (g, TEST)]
        );
        // 11 C: miss on non-resident C' in its test period. First a frame: HAND_cold at F,
        // clear, in test -> F'. Then C becomes hot at the head (m_c 3): 3 hot > m − m_c = 1.
        // HAND_hot at B, bit clear -> B cold at the head; the hand moves on past F' (its test
        // ends, F' leaves, m_c 2) to E. Now 2 hot = m − m_c: done. [E G C B] = [H t H c].
        run(&mut m, c);
        assert_eq!(
            m.policy.list(&m.mm),
            [(e, HOT), (g, TEST), (c, HOT), (b, COLD)]
        );
        assert_eq!(m.policy.cold_target(), 2);
        // 12 E: hit. 13 H: miss, HAND_cold at G: clear, in test -> G'. [E* G' C B H].
        run(&mut m, e);
        run(&mut m, h);
        assert_eq!(
            m.policy.list(&m.mm),
            [(e, HOT_REF), (g, NR), (c, HOT), (b, COLD), (h, TEST)]
        );
        // 14 B: hit. 15 I: miss. HAND_cold at B: bit set, not in test -> cleared, B to the
        // head with a new test period; HAND_cold at H: clear, in test -> H'. I enters.
        run(&mut m, b);
        run(&mut m, i);
        assert_eq!(
            m.policy.list(&m.mm),
            [
                (e, HOT_REF),
                (g, NR),
                (c, HOT),
                (h, NR),
                (b, TEST),
                (i, TEST)
            ]
        );
        // 16 G: miss on G'. HAND_cold at B: clear, in test -> B'. G hot at the head (m_c 3):
        // 3 hot > 1. HAND_hot at E: bit set -> spared (cleared, to the head); at C: clear ->
        // C cold at the head; the hand moves on past H' and B' (they leave, m_c 2 -> 1) and
        // I (its test ends, m_c stays at its minimum 1) to G. 2 hot <= m − m_c = 3.
        run(&mut m, g);
        assert_eq!(
            m.policy.list(&m.mm),
            [(i, COLD), (g, HOT), (e, HOT), (c, COLD)]
        );
        assert_eq!(m.policy.sizes(), (2, 2, 0));
        // 17 D: miss, HAND_cold evicts I (clear, not in test). 18 C: hit.
        // 19 J: miss. HAND_cold at C: bit set, not in test -> to the head, new test period;
        // at D: clear, in test -> D'. [G E D' C J].
        run(&mut m, d);
        run(&mut m, c);
        run(&mut m, j);
        assert_eq!(
            m.policy.list(&m.mm),
            [(g, HOT), (e, HOT), (d, NR), (c, TEST), (j, TEST)]
        );
        // 20 D: miss on D'. HAND_cold at C: clear, in test -> C'. D hot at the head (m_c 2):
        // 3 hot > 2. HAND_hot at G: clear -> G cold at the head; the hand stops at E.
        run(&mut m, d);
        assert_eq!(
            m.policy.list(&m.mm),
            [(e, HOT), (c, NR), (j, TEST), (d, HOT), (g, COLD)]
        );
        assert_eq!(m.policy.cold_target(), 2);
        // Hits at 5, 8, 12, 14, 18; 15 misses, 11 evictions.
        let hit_at: Vec<usize> = (1..=20).filter(|&k| hits[k - 1]).collect();
        assert_eq!(hit_at, [5, 8, 12, 14, 18]);
        assert_eq!((m.stats.faults, m.stats.evictions), (15, 11));
        let c: std::collections::BTreeMap<_, _> = m.policy.counters().into_iter().collect();
        assert_eq!(c["promotions"], 5, "B E C G D");
        assert_eq!(c["nonresident_hits"], 3, "C G D");
        assert_eq!(c["demotions"], 4, "A B C G");
        assert_eq!(c["test_expired"], 6, "C D F' H' B' I");
    }

    #[test]
    fn options_are_checked() {
        let err = |k: &str, v: &str| {
            ClockPro::new(10, &PolicyOptions::new(0).with(k, v))
                .unwrap_err()
                .to_string()
        };
        assert!(err("init_cold_ratio", "2").starts_with("option init_cold_ratio:"));
        assert!(err("nonresident_ratio", "-1").starts_with("option nonresident_ratio:"));
        assert!(err("nonresident_ratio", "lots").starts_with("option nonresident_ratio:"));
        let p = ClockPro::new(10, &PolicyOptions::new(0).with("init_cold_ratio", "0.5")).unwrap();
        assert_eq!(p.cold_target(), 5);
    }

    /// Every invariant (hands at the oldest page of their kind, counts, the non-resident
    /// bound) holds after every access of a mixed trace, at several sizes and knobs.
    #[test]
    fn invariants_hold_on_a_mixed_trace() {
        let pages: Vec<u64> = (0..6000u64)
            .map(|i| {
                let r = (i.wrapping_mul(2654435761) >> 7) % 100;
                if r < 60 {
                    r % 13
                } else if r < 80 {
                    100 + i % 37
                } else {
                    1000 + (i * 7919) % 400
                }
            })
            .collect();
        for frames in [1, 2, 3, 5, 16, 40] {
            for opts in [
                PolicyOptions::new(0),
                PolicyOptions::new(0).with("init_cold_ratio", "0.3"),
                PolicyOptions::new(0).with("nonresident_ratio", "0"),
            ] {
                let mut m = machine(frames, &opts);
                for &p in &pages {
                    step(&mut m, p);
                }
                let (hot, cold, ghost) = m.policy.sizes();
                assert_eq!(hot + cold, frames);
                assert!(ghost <= frames);
            }
        }
    }
}

//! LIRS, the Low Inter-reference Recency Set policy (Jiang & Zhang, "LIRS: An Efficient Low
//! Inter-reference Recency Set Replacement Policy to Improve Buffer Cache Performance",
//! SIGMETRICS'02, §3). Resident pages are LIR (low inter-reference recency, `L_lirs` of the
//! frames) or HIR (the other `L_hirs`); only resident HIR pages are evicted.
//!
//! Two structures (§3.3): the stack S holds, most recent on top, the LIR pages and every HIR
//! page (resident or not) accessed more recently than the bottom LIR page; "stack pruning"
//! keeps an LIR page at the bottom of S. The queue Q holds the resident HIR pages in access
//! order; its front is the next victim. The rules (§3.3, the four cases of Figure 3):
//! - hit on an LIR page: move it to the top of S; if it was at the bottom, prune;
//! - hit on a resident HIR page that is in S: it becomes LIR and leaves Q; the LIR page at the
//!   bottom of S becomes HIR, goes to the end of Q, and S is pruned;
//! - hit on a resident HIR page not in S: push it on S, move it to the end of Q (still HIR);
//! - miss: the front of Q is evicted (staying in S, as a non-resident HIR page, if it is
//!   there). A page found in S as non-resident HIR becomes LIR, demoting the bottom LIR page to
//!   Q as above; any other page becomes a resident HIR page on top of S and at the end of Q.
//!   Until `L_lirs` pages are LIR, every new page is made LIR (§3.3, "when the LIR block set is
//!   not full").
//!
//! Parameters as in libCacheSim's `LIRS.c` (the paper suggests `L_hirs` ≈ 1% of the cache):
//! `L_hirs = max(1, ⌊hir_ratio · c⌋)` with `hir_ratio` = 0.01, `L_lirs = c − L_hirs`. S's
//! non-resident HIR pages are bounded as the paper's §4.3 asks ("the number of non-resident
//! HIR blocks in S"); like libCacheSim's `limitStack`, while S holds more than
//! `stack_ratio · c` entries (default 2) the page that became non-resident longest ago leaves
//! S (a FIFO of non-resident pages, libCacheSim's `LRU_nh`). So the policy keeps at most
//! `2c` ghost entries.
//!
//! Where libCacheSim differs from the paper: on a hit to a resident HIR page that is not in S,
//! `hit_RD_HIRinQ` first calls `evictLIR` while the LIR set is full, demoting the bottom LIR
//! page to Q although no page changed status, and that demotion evicts Q's front page (the
//! accessed page itself when `L_hirs` = 1, which then sits in S as a "resident" page outside Q
//! and outside libCacheSim's occupancy count). That frees a frame on a hit, which a demand
//! pager cannot do; vmemsim follows the paper there, so its miss counts equal libCacheSim's
//! exactly as long as that case never occurs (counter `hir_hits_outside_stack`), and differ by
//! under 1% when it does (tests/test_libcachesim_diff.py). Every other rule,
//! and the order of evictions, demotions and pruning, is libCacheSim's.
//!
//! Cost: O(1) amortised per access (pruning removes each entry once); hits never hash, misses
//! do one lookup of the page number among the ghosts. Frames and ghosts share one id space for
//! S (ghost `g` is id `c + g`), so a page keeps its place in S when it stops being resident.

use super::list::{Links, List, NIL};
use super::{Family, Insert, Policy, PolicyOptions, Touch};
use crate::error::{Error, Result};
use crate::mm::{FrameId, Mm, PTE_PRESENT};
use crate::util::PageMap;

/// The frame is on stack S.
const IN_S: u8 = 1;
/// The frame is on queue Q (resident HIR).
const IN_Q: u8 = 2;
/// The frame holds an LIR page.
const LIR: u8 = 4;

/// Status of a page as the paper names it (tests and debugging).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Lir,
    /// Resident HIR; `in_s` says whether it is also on stack S.
    Hir {
        in_s: bool,
    },
    /// Non-resident HIR page remembered in S.
    NonResident,
}

#[derive(Debug)]
pub struct Lirs {
    frames: u32,
    /// Links of S over frame ids and ghost ids (`frames + g`).
    s_links: Links,
    /// Head = top of S (most recent).
    s: List,
    q_links: Links,
    /// Head = end of Q (most recent), tail = front (next victim).
    q: List,
    /// Non-resident HIR pages of S by the time they became non-resident (head = newest).
    nh_links: Links,
    nh: List,
    state: Vec<u8>,
    ghost_vpn: Vec<u64>,
    ghost_free: Vec<u32>,
    ghost_of: PageMap<u32>,
    lir_limit: u32,
    hir_limit: u32,
    stack_limit: u32,
    lir_count: u32,
    hir_resident_hits: u64,
    hir_hits_outside_stack: u64,
    ghost_refaults: u64,
    demotions: u64,
    stack_trimmed: u64,
}

impl Lirs {
    pub fn new(frames: u32, opts: &PolicyOptions) -> Result<Self> {
        let hir_ratio: f64 = opts.get("hir_ratio", 0.01)?;
        let stack_ratio: f64 = opts.get("stack_ratio", 2.0)?;
        if !(0.0..1.0).contains(&hir_ratio) {
            return Err(Error::config(
                "option hir_ratio",
                format!("must be in [0, 1), got {hir_ratio}"),
            ));
        }
        if !(1.0..=64.0).contains(&stack_ratio) {
            return Err(Error::config(
                "option stack_ratio",
                format!("must be in [1, 64], got {stack_ratio}"),
            ));
        }
        // libCacheSim: hirs_limit = MAX(1, ratio · size). One frame stays LIR so that a
        // 1-frame machine still works (then Q is empty and eviction demotes first).
        let hir_limit = ((hir_ratio * frames as f64) as u32)
            .max(1)
            .min(frames.saturating_sub(1));
        let ghost_cap = 2 * frames as usize + 2;
        let mut ghost_of = PageMap::default();
        ghost_of.reserve(ghost_cap);
        Ok(Lirs {
            frames,
            s_links: Links::new(frames as usize + ghost_cap),
            s: List::default(),
            q_links: Links::new(frames as usize),
            q: List::default(),
            nh_links: Links::new(ghost_cap),
            nh: List::default(),
            state: vec![0; frames as usize],
            ghost_vpn: vec![u64::MAX; ghost_cap],
            ghost_free: (0..ghost_cap as u32).rev().collect(),
            ghost_of,
            lir_limit: frames - hir_limit,
            hir_limit,
            stack_limit: (stack_ratio * frames as f64) as u32,
            lir_count: 0,
            hir_resident_hits: 0,
            hir_hits_outside_stack: 0,
            ghost_refaults: 0,
            demotions: 0,
            stack_trimmed: 0,
        })
    }

    /// (`L_lirs`, `L_hirs`).
    pub fn limits(&self) -> (u32, u32) {
        (self.lir_limit, self.hir_limit)
    }

    /// (|S| including non-resident entries, |Q|, non-resident HIR pages in S).
    pub fn sizes(&self) -> (u32, u32, u32) {
        (self.s.len, self.q.len, self.nh.len)
    }

    /// Stack S from top to bottom as (page, status) (tests).
    pub fn stack(&self, mm: &Mm) -> Vec<(u64, Status)> {
        self.s
            .iter(&self.s_links)
            .map(|id| {
                if id < self.frames {
                    (mm.owner(id), self.status(id))
                } else {
                    (
                        self.ghost_vpn[(id - self.frames) as usize],
                        Status::NonResident,
                    )
                }
            })
            .collect()
    }

    /// Queue Q from front (next victim) to end (tests).
    pub fn queue(&self, mm: &Mm) -> Vec<u64> {
        let mut v: Vec<u64> = self.q.iter(&self.q_links).map(|f| mm.owner(f)).collect();
        v.reverse();
        v
    }

    fn status(&self, f: FrameId) -> Status {
        let st = self.state[f as usize];
        if st & LIR != 0 {
            Status::Lir
        } else {
            Status::Hir {
                in_s: st & IN_S != 0,
            }
        }
    }

    fn ghost_alloc(&mut self, vpn: u64) -> u32 {
        let g = match self.ghost_free.pop() {
            Some(g) => g,
            None => {
                // Not reached in a replay (S holds ≤ 2c entries); pages removed behind the
                // policy's back can need more.
                let g = self.ghost_vpn.len() as u32;
                self.ghost_vpn.push(u64::MAX);
                self.s_links
                    .ensure(self.frames as usize + self.ghost_vpn.len());
                self.nh_links.ensure(self.ghost_vpn.len());
                g
            }
        };
        self.ghost_vpn[g as usize] = vpn;
        self.ghost_of.insert(vpn, g);
        g
    }

    /// Forget non-resident page `g` entirely (off S and off the non-resident FIFO).
    fn ghost_drop(&mut self, g: u32) {
        self.s.remove(&mut self.s_links, self.frames + g);
        self.nh.remove(&mut self.nh_links, g);
        let vpn = std::mem::replace(&mut self.ghost_vpn[g as usize], u64::MAX);
        self.ghost_of.remove(&vpn);
        self.ghost_free.push(g);
    }

    /// Stack pruning (§3.3): remove the HIR pages at the bottom of S until an LIR page is
    /// there. A resident one stays on Q; a non-resident one is forgotten. As libCacheSim's
    /// `LIRS_prune`, the top entry is never removed.
    fn prune(&mut self) {
        while self.s.len > 1 {
            let b = self.s.tail;
            if b < self.frames {
                if self.state[b as usize] & LIR != 0 {
                    break;
                }
                self.s.remove(&mut self.s_links, b);
                self.state[b as usize] &= !IN_S;
            } else {
                self.ghost_drop(b - self.frames);
            }
        }
    }

    /// The LIR page at the bottom of S becomes HIR and goes to the end of Q; then prune
    /// (libCacheSim `evictLIR`).
    fn demote(&mut self) {
        let b = self.s.tail;
        if b == NIL || b >= self.frames || self.state[b as usize] & LIR == 0 {
            return;
        }
        self.s.remove(&mut self.s_links, b);
        self.state[b as usize] = IN_Q;
        self.lir_count -= 1;
        self.q.push_head(&mut self.q_links, b);
        self.demotions += 1;
        self.prune();
    }

    /// Keep S within `stack_limit` entries by forgetting the oldest non-resident pages
    /// (libCacheSim `limitStack`, run after every request).
    fn limit_stack(&mut self) {
        while self.s.len > self.stack_limit {
            let g = self.nh.tail;
            if g == NIL {
                break;
            }
            self.ghost_drop(g);
            self.stack_trimmed += 1;
        }
    }
}

impl Policy for Lirs {
    fn name(&self) -> &'static str {
        "lirs"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn prefetch(&self, f: FrameId) {
        crate::hint::prefetch(self.state.as_ptr().wrapping_add(f as usize));
        self.s_links.prefetch(f);
    }
    fn on_hit(&mut self, f: FrameId, _t: Touch) {
        let st = self.state[f as usize];
        if st & LIR != 0 {
            self.s.move_to_head(&mut self.s_links, f);
            self.prune();
        } else if st & IN_S != 0 {
            // The page's new IRR is below the bottom LIR page's recency: it becomes LIR.
            self.hir_resident_hits += 1;
            self.s.move_to_head(&mut self.s_links, f);
            self.q.remove(&mut self.q_links, f);
            if self.lir_count >= self.lir_limit {
                self.demote();
            }
            self.state[f as usize] = IN_S | LIR;
            self.lir_count += 1;
        } else {
            // Its IRR is not known to be small: it stays HIR (here libCacheSim demotes, see
            // the module comment).
            self.hir_hits_outside_stack += 1;
            self.q.move_to_head(&mut self.q_links, f);
            self.s.push_head(&mut self.s_links, f);
            self.state[f as usize] |= IN_S;
            self.limit_stack();
        }
    }
    #[inline]
    fn victim_hint(&self, k: usize) -> Option<FrameId> {
        self.q.nth_from_tail(&self.q_links, k)
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, t: Touch, how: Insert) {
        let ghost = self.ghost_of.get(&t.vpn).copied();
        match ghost {
            Some(g) if how != Insert::Readahead => {
                // A non-resident HIR page in S: its IRR is below the bottom LIR's recency.
                self.ghost_refaults += 1;
                self.ghost_drop(g);
                self.s.push_head(&mut self.s_links, f);
                self.state[f as usize] = IN_S;
                if self.lir_count >= self.lir_limit {
                    self.demote();
                }
                self.state[f as usize] = IN_S | LIR;
                self.lir_count += 1;
            }
            _ => {
                if let Some(g) = ghost {
                    self.ghost_drop(g);
                }
                self.s.push_head(&mut self.s_links, f);
                if self.lir_count < self.lir_limit {
                    self.state[f as usize] = IN_S | LIR;
                    self.lir_count += 1;
                } else {
                    self.state[f as usize] = IN_S | IN_Q;
                    self.q.push_head(&mut self.q_links, f);
                }
            }
        }
        self.limit_stack();
    }
    fn evict(&mut self, mm: &mut Mm) -> Option<FrameId> {
        if self.q.is_empty() {
            // Only with 1 frame (L_hirs = 0) or after removals: make the bottom LIR page HIR.
            self.demote();
        }
        let v = self.q.pop_tail(&mut self.q_links)?;
        if self.state[v as usize] & IN_S != 0 {
            let g = self.ghost_alloc(mm.owner(v));
            self.s.replace(&mut self.s_links, v, self.frames + g);
            self.nh.push_head(&mut self.nh_links, g);
        }
        self.state[v as usize] = 0;
        Some(v)
    }
    fn on_remove(&mut self, f: FrameId) {
        let st = std::mem::replace(&mut self.state[f as usize], 0);
        if st & IN_S != 0 {
            self.s.remove(&mut self.s_links, f);
        }
        if st & IN_Q != 0 {
            self.q.remove(&mut self.q_links, f);
        }
        if st & LIR != 0 {
            self.lir_count -= 1;
            self.prune();
        }
    }
    fn validate(&self, mm: &Mm) -> std::result::Result<(), String> {
        self.s.validate(&self.s_links, "lirs S")?;
        self.q.validate(&self.q_links, "lirs Q")?;
        self.nh.validate(&self.nh_links, "lirs non-resident")?;
        let (mut lir, mut in_s, mut ghosts) = (0u32, 0u32, 0u32);
        for id in self.s.iter(&self.s_links) {
            if id < self.frames {
                let st = self.state[id as usize];
                if st & IN_S == 0 {
                    return Err(format!("lirs: frame {id} on S not tagged IN_S ({st})"));
                }
                lir += (st & LIR != 0) as u32;
                in_s += 1;
            } else {
                let g = id - self.frames;
                let vpn = self.ghost_vpn[g as usize];
                if self.ghost_of.get(&vpn) != Some(&g) {
                    return Err(format!("lirs: ghost {g} (page {vpn:#x}) not indexed"));
                }
                if mm.pt.pte(vpn) & PTE_PRESENT != 0 {
                    return Err(format!("lirs: non-resident page {vpn:#x} is resident"));
                }
                ghosts += 1;
            }
        }
        for f in self.q.iter(&self.q_links) {
            let st = self.state[f as usize];
            if st & IN_Q == 0 || st & LIR != 0 {
                return Err(format!("lirs: frame {f} on Q tagged {st}"));
            }
        }
        let tagged = |m: u8| self.state.iter().filter(|&&s| s & m != 0).count() as u32;
        if tagged(IN_S) != in_s || tagged(IN_Q) != self.q.len || tagged(LIR) != lir {
            return Err("lirs: tags disagree with S / Q".into());
        }
        if lir != self.lir_count || lir > self.lir_limit {
            return Err(format!(
                "lirs: {lir} LIR pages, count {} limit {}",
                self.lir_count, self.lir_limit
            ));
        }
        if ghosts != self.nh.len || self.ghost_of.len() != ghosts as usize {
            return Err(format!(
                "lirs: {ghosts} ghosts in S, {} in the FIFO, {} indexed",
                self.nh.len,
                self.ghost_of.len()
            ));
        }
        if self.s.len > self.stack_limit.max(self.frames) && self.nh.len > 0 {
            return Err(format!("lirs: S holds {} entries", self.s.len));
        }
        // Pruned: the bottom of S is an LIR page.
        let b = self.s.tail;
        if self.s.len > 1 && (b >= self.frames || self.state[b as usize] & LIR == 0) {
            return Err(format!("lirs: bottom of S ({b}) is not LIR"));
        }
        crate::policy::registry::check_holds_exactly(
            mm,
            (0..self.frames).filter(|&f| self.state[f as usize] != 0),
            "lirs",
        )
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("hir_resident_hits", self.hir_resident_hits),
            ("hir_hits_outside_stack", self.hir_hits_outside_stack),
            ("ghost_refaults", self.ghost_refaults),
            ("demotions", self.demotions),
            ("stack_trimmed", self.stack_trimmed),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::Status::{Hir, Lir, NonResident};
    use super::*;
    use crate::engine::{Machine, MachineConfig};
    use crate::Access;

    const A: u64 = 1;
    const B: u64 = 2;
    const C: u64 = 3;
    const D: u64 = 4;
    const E: u64 = 5;
    const F: u64 = 6;
    const R: Status = Hir { in_s: true };

    fn machine(frames: u32, opts: &PolicyOptions) -> Machine<Lirs> {
        let cfg = MachineConfig {
            check_invariants: true,
            ..MachineConfig::new(frames)
        };
        Machine::new(&cfg, Lirs::new(frames, opts).unwrap()).unwrap()
    }

    /// Access `page`; true on a hit.
    fn step(m: &mut Machine<Lirs>, page: u64) -> bool {
        let before = m.stats.faults;
        m.access(Access::read(page), u64::MAX);
        m.stats.faults == before
    }

    /// The paper's setting of Figure 3: L_lirs = 2, L_hirs = 1 (3 frames; libCacheSim's
    /// max(1, ⌊0.01 · 3⌋) = 1). S is written top first, `'` marks a non-resident HIR page,
    /// `h` a resident HIR page; Q is written front (next victim) first.
    #[test]
    fn paper_rules_by_hand() {
        let mut m = machine(3, &PolicyOptions::new(0));
        assert_eq!(m.policy.limits(), (2, 1));
        let expect = |m: &mut Machine<Lirs>, page, hit, s: &[(u64, Status)], q: &[u64]| {
            assert_eq!(step(m, page), hit, "access {page}");
            assert_eq!(m.policy.stack(&m.mm), s, "S after {page}");
            assert_eq!(m.policy.queue(&m.mm), q, "Q after {page}");
        };
        // 1 A, 2 B: misses; the LIR set is not full yet, so both become LIR.
        expect(&mut m, A, false, &[(A, Lir)], &[]);
        expect(&mut m, B, false, &[(B, Lir), (A, Lir)], &[]);
        // 3 C: miss, LIR set full: C is a resident HIR page, top of S and end of Q.
        expect(&mut m, C, false, &[(C, R), (B, Lir), (A, Lir)], &[C]);
        // 4 D: miss, memory full: Q's front C is evicted and stays in S as non-resident.
        // S: D^h C' B A, Q: D.
        expect(
            &mut m,
            D,
            false,
            &[(D, R), (C, NonResident), (B, Lir), (A, Lir)],
            &[D],
        );
        // 5 B: LIR hit, B to the top; A (LIR) is still the bottom: no pruning.
        expect(
            &mut m,
            B,
            true,
            &[(B, Lir), (D, R), (C, NonResident), (A, Lir)],
            &[D],
        );
        // 6 E: miss, evict D (non-resident in S). S: E^h B D' C' A, Q: E.
        expect(
            &mut m,
            E,
            false,
            &[
                (E, R),
                (B, Lir),
                (D, NonResident),
                (C, NonResident),
                (A, Lir),
            ],
            &[E],
        );
        // 7 D: miss on a non-resident HIR page in S (Figure 3d): free a frame by evicting
        // Q's front E (non-resident in S now), D becomes LIR on top, the bottom LIR page A
        // becomes HIR at the end of Q, and pruning removes C' from the bottom (B is LIR).
        expect(
            &mut m,
            D,
            false,
            &[(D, Lir), (E, NonResident), (B, Lir)],
            &[A],
        );
        assert_eq!(m.policy.sizes(), (3, 1, 1));
        // 8 C: miss; C was pruned from S, so it is a new page: evict A (not in S: forgotten),
        // C resident HIR. S: C^h D E' B, Q: C.
        expect(
            &mut m,
            C,
            false,
            &[(C, R), (D, Lir), (E, NonResident), (B, Lir)],
            &[C],
        );
        // 9 A: miss on a forgotten page: evict C (stays in S as C'), A resident HIR.
        expect(
            &mut m,
            A,
            false,
            &[
                (A, R),
                (C, NonResident),
                (D, Lir),
                (E, NonResident),
                (B, Lir),
            ],
            &[A],
        );
        // 10 E: miss on non-resident E' in S: evict A (-> A'), E becomes LIR, bottom LIR B
        // goes to Q, the bottom is now D (LIR): nothing to prune.
        expect(
            &mut m,
            E,
            false,
            &[(E, Lir), (A, NonResident), (C, NonResident), (D, Lir)],
            &[B],
        );
        // 11 D: LIR hit at the bottom: D to the top, then pruning drops C' and A' (Figure
        // 3b's "stack pruning"); E is the bottom LIR page.
        expect(&mut m, D, true, &[(D, Lir), (E, Lir)], &[B]);
        assert_eq!(m.policy.sizes(), (2, 1, 0));
        // 12 B: hit on a resident HIR page not in S: it goes on top of S and to the end of Q,
        // still HIR (here libCacheSim would demote E and evict from Q).
        expect(&mut m, B, true, &[(B, R), (D, Lir), (E, Lir)], &[B]);
        // 13 B: hit on a resident HIR page in S (Figure 3c): B becomes LIR and leaves Q; the
        // bottom LIR page E becomes HIR at the end of Q; the bottom is D (LIR).
        expect(&mut m, B, true, &[(B, Lir), (D, Lir)], &[E]);
        // 14 F: miss: evict E (not in S: forgotten); F resident HIR.
        expect(&mut m, F, false, &[(F, R), (B, Lir), (D, Lir)], &[F]);
        // 10 misses (1-4, 6-10, 14), 4 hits.
        assert_eq!((m.stats.faults, m.stats.evictions), (10, 7));
        let c: std::collections::BTreeMap<_, _> = m.policy.counters().into_iter().collect();
        assert_eq!(c["hir_hits_outside_stack"], 1);
        assert_eq!(c["hir_resident_hits"], 1);
        assert_eq!(c["ghost_refaults"], 2);
        assert_eq!(c["demotions"], 3);
    }

    /// A scan of new pages leaves one non-resident entry per evicted page in S; S is held to
    /// 2c entries by forgetting the oldest non-resident ones, and the LIR pages survive.
    #[test]
    fn scan_keeps_lir_pages_and_bounds_the_stack() {
        let mut m = machine(3, &PolicyOptions::new(0));
        for p in [A, B, A, B] {
            step(&mut m, p);
        }
        for p in 100..200 {
            assert!(!step(&mut m, p));
        }
        assert_eq!(
            m.policy.sizes(),
            (6, 1, 3),
            "|S| = 2c: 2 LIR + 1 resident HIR + 3 ghosts"
        );
        assert!(
            step(&mut m, A) && step(&mut m, B),
            "LIR pages survive the scan"
        );
        let c: std::collections::BTreeMap<_, _> = m.policy.counters().into_iter().collect();
        assert_eq!(c["stack_trimmed"], 100 - 1 - 3);
        // A smaller bound keeps fewer ghosts.
        let mut m = machine(3, &PolicyOptions::new(0).with("stack_ratio", "1"));
        for p in [A, B].into_iter().chain(100..120) {
            step(&mut m, p);
        }
        assert_eq!(m.policy.sizes(), (3, 1, 0));
    }

    #[test]
    fn options_are_checked() {
        let err = |k: &str, v: &str| {
            Lirs::new(10, &PolicyOptions::new(0).with(k, v))
                .unwrap_err()
                .to_string()
        };
        assert!(err("hir_ratio", "1.5").starts_with("option hir_ratio:"));
        assert!(err("hir_ratio", "x").starts_with("option hir_ratio:"));
        assert!(err("stack_ratio", "0.5").starts_with("option stack_ratio:"));
        let l = Lirs::new(700, &PolicyOptions::new(0).with("hir_ratio", "0.1")).unwrap();
        assert_eq!(l.limits(), (630, 70));
        assert_eq!(
            Lirs::new(700, &PolicyOptions::new(0)).unwrap().limits(),
            (693, 7)
        );
        assert_eq!(
            Lirs::new(1, &PolicyOptions::new(0)).unwrap().limits(),
            (1, 0)
        );
    }
}

//! ARC, the Adaptive Replacement Cache (Megiddo & Modha, "ARC: A Self-Tuning, Low Overhead
//! Replacement Cache", FAST'03, Fig. 4). Resident pages are on T1 (seen once recently) or T2
//! (seen at least twice); B1 and B2 remember the pages recently evicted from each. A miss that
//! finds its page in B1 grows the target size `p` of T1, one in B2 shrinks it; REPLACE evicts
//! from T1 while T1 is above target, else from T2.
//!
//! Mapping onto the engine: a hit is Case I; [`Policy::on_miss`] looks the page up in the
//! ghost lists (Cases II/III: adapt `p`, drop the ghost), [`Policy::evict`] runs REPLACE or
//! Case IV's bookkeeping (drop the LRU of B1, or of B2 when the directory holds 2c pages), and
//! [`Policy::on_insert`] puts the page at the MRU end of T2 (ghost hit) or T1.
//!
//! Faithful to the paper, including the real-valued `p` (δ = max(|B2|/|B1|, 1) and its mirror)
//! and REPLACE's tie rule `|T1| = p ∧ x ∈ B2`. As in libCacheSim's `ARC.c`, the ghost
//! bookkeeping of Case IV runs only when memory is full (before that no page was ever evicted,
//! so there are no ghosts and the paper's steps do nothing). The differential test compares
//! with libCacheSim miss for miss. Ghost lookups hash the page number, on misses only.
//!
//! Left out: nothing of the algorithm. Pages that arrive by readahead (not requested) go to
//! T1 without adapting `p`; pages that leave by `on_remove` leave no ghost.

use super::ghost::Ghosts;
use super::list::{Links, List};
use super::{Family, Insert, Policy, Touch};
use crate::mm::{FrameId, Mm, PTE_PRESENT};

const B1: usize = 0;
const B2: usize = 1;
const NOWHERE: u8 = 0;
const IN_T1: u8 = 1;
const IN_T2: u8 = 2;

/// Where the page of the current miss was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    Nowhere,
    B1,
    B2,
}

#[derive(Debug)]
pub struct Arc {
    c: u32,
    links: Links,
    t1: List,
    t2: List,
    list_of: Vec<u8>,
    ghosts: Ghosts<2>,
    /// Target size of T1, 0 ≤ p ≤ c.
    p: f64,
    /// The page of the miss being served and where it was found (set by `on_miss`).
    pending: Option<(u64, Seen)>,
    b1_hits: u64,
    b2_hits: u64,
}

impl Arc {
    pub fn new(frames: u32) -> Self {
        Arc {
            c: frames,
            links: Links::new(frames as usize),
            t1: List::default(),
            t2: List::default(),
            list_of: vec![NOWHERE; frames as usize],
            ghosts: Ghosts::with_capacity(frames as usize + 1),
            p: 0.0,
            pending: None,
            b1_hits: 0,
            b2_hits: 0,
        }
    }

    /// The target size of T1 (tests).
    pub fn target(&self) -> f64 {
        self.p
    }

    /// (|T1|, |T2|, |B1|, |B2|) (tests).
    pub fn sizes(&self) -> (u32, u32, u32, u32) {
        (
            self.t1.len,
            self.t2.len,
            self.ghosts.len(B1),
            self.ghosts.len(B2),
        )
    }

    /// REPLACE(x, p): demote the LRU page of T1 to B1 if T1 exceeds its target (or meets it
    /// and x came from B2), else the LRU page of T2 to B2.
    fn replace(&mut self, mm: &Mm, x_in_b2: bool) -> Option<FrameId> {
        let t1 = self.t1.len as f64;
        let from_t1 =
            (self.t1.len > 0 && (t1 > self.p || (t1 == self.p && x_in_b2))) || self.t2.is_empty();
        let (list, ghost) = if from_t1 {
            (&mut self.t1, B1)
        } else {
            (&mut self.t2, B2)
        };
        let f = list.pop_tail(&mut self.links)?;
        self.list_of[f as usize] = NOWHERE;
        self.ghosts.push_head(ghost, mm.owner(f));
        Some(f)
    }
}

impl Policy for Arc {
    fn name(&self) -> &'static str {
        "arc"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    /// Case I: move to the MRU end of T2.
    #[inline]
    fn on_hit(&mut self, f: FrameId, _t: Touch) {
        if self.list_of[f as usize] == IN_T1 {
            self.t1.remove(&mut self.links, f);
            self.t2.push_head(&mut self.links, f);
            self.list_of[f as usize] = IN_T2;
        } else {
            self.t2.move_to_head(&mut self.links, f);
        }
    }
    /// Cases II and III: adapt `p` and forget the ghost; REPLACE follows in `evict`.
    fn on_miss(&mut self, t: Touch) {
        let (b1, b2) = (self.ghosts.len(B1) as f64, self.ghosts.len(B2) as f64);
        let c = self.c as f64;
        let seen = match self.ghosts.find(t.vpn) {
            Some(B1) => {
                self.p = (self.p + (b2 / b1).max(1.0)).min(c);
                self.b1_hits += 1;
                Seen::B1
            }
            Some(_) => {
                self.p = (self.p - (b1 / b2).max(1.0)).max(0.0);
                self.b2_hits += 1;
                Seen::B2
            }
            None => Seen::Nowhere,
        };
        if seen != Seen::Nowhere {
            self.ghosts.take(t.vpn);
        }
        self.pending = Some((t.vpn, seen));
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, t: Touch, _how: Insert) {
        let seen = match self.pending {
            Some((vpn, seen)) if vpn == t.vpn => {
                self.pending = None;
                seen
            }
            // Readahead (or any insert without a miss): not requested, so no adaptation.
            _ => {
                self.ghosts.take(t.vpn);
                Seen::Nowhere
            }
        };
        if seen == Seen::Nowhere {
            self.t1.push_head(&mut self.links, f);
            self.list_of[f as usize] = IN_T1;
        } else {
            self.t2.push_head(&mut self.links, f);
            self.list_of[f as usize] = IN_T2;
        }
        // Keep the directory bounds (|T1|+|B1| ≤ c, total ≤ 2c) even when pages left through
        // `on_remove` and inserts came without evictions; a plain replay never needs this.
        while self.t1.len + self.ghosts.len(B1) > self.c && self.ghosts.pop_tail(B1).is_some() {}
        while self.t1.len + self.t2.len + self.ghosts.total() > 2 * self.c
            && self.ghosts.pop_tail(B2).is_some()
        {}
    }
    fn evict(&mut self, mm: &mut Mm) -> Option<FrameId> {
        let seen = self.pending.map_or(Seen::Nowhere, |p| p.1);
        if seen != Seen::Nowhere {
            return self.replace(mm, seen == Seen::B2);
        }
        // Case IV.
        let c = self.c;
        if self.t1.len + self.ghosts.len(B1) >= c {
            // A: L1 holds c pages.
            if self.ghosts.len(B1) > 0 {
                self.ghosts.pop_tail(B1);
                self.replace(mm, false)
            } else {
                let f = self.t1.pop_tail(&mut self.links)?;
                self.list_of[f as usize] = NOWHERE;
                Some(f)
            }
        } else {
            // B: L1 has room; trim B2 when the directory is full.
            if self.t1.len + self.t2.len + self.ghosts.total() >= 2 * c && self.ghosts.len(B2) > 0 {
                self.ghosts.pop_tail(B2);
            }
            self.replace(mm, false)
        }
    }
    fn on_remove(&mut self, f: FrameId) {
        match std::mem::replace(&mut self.list_of[f as usize], NOWHERE) {
            IN_T1 => self.t1.remove(&mut self.links, f),
            IN_T2 => self.t2.remove(&mut self.links, f),
            _ => {}
        }
    }
    fn validate(&self, mm: &Mm) -> Result<(), String> {
        self.t1.validate(&self.links, "arc T1")?;
        self.t2.validate(&self.links, "arc T2")?;
        self.ghosts.validate("arc ghosts")?;
        for (list, tag) in [(&self.t1, IN_T1), (&self.t2, IN_T2)] {
            if let Some(f) = list
                .iter(&self.links)
                .find(|&f| self.list_of[f as usize] != tag)
            {
                return Err(format!(
                    "arc: frame {f} on list {tag} tagged {}",
                    self.list_of[f as usize]
                ));
            }
        }
        let (t1, t2, b1, b2) = self.sizes();
        if t1 + b1 > self.c {
            return Err(format!("arc: |T1|+|B1| = {} > c = {}", t1 + b1, self.c));
        }
        if t1 + t2 + b1 + b2 > 2 * self.c {
            return Err(format!("arc: directory holds {} > 2c", t1 + t2 + b1 + b2));
        }
        if !(0.0..=self.c as f64).contains(&self.p) {
            return Err(format!("arc: p = {} outside [0, {}]", self.p, self.c));
        }
        for l in [B1, B2] {
            if let Some(vpn) = self
                .ghosts
                .iter(l)
                .find(|&v| mm.pt.pte(v) & PTE_PRESENT != 0)
            {
                return Err(format!("arc: ghost page {vpn:#x} is resident"));
            }
        }
        crate::policy::registry::check_holds_exactly(
            mm,
            self.t1.iter(&self.links).chain(self.t2.iter(&self.links)),
            "arc",
        )
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("arc_p", self.p as u64),
            ("ghost_hits_b1", self.b1_hits),
            ("ghost_hits_b2", self.b2_hits),
        ]
    }
}

//! Segmented LRU (Karedla, Love & Wherry, "Caching Strategies to Improve Disk System
//! Performance", IEEE Computer 27(3), 1994: a probationary and a protected segment), in
//! libCacheSim's n-segment form (`SLRU.c`, 4 equal segments by default).
//!
//! Segments S0 (probationary) .. S(n−1) (most protected), each an LRU list with a capacity.
//! - A hit in S(n−1) moves the page to its MRU end; a hit in Sk (k < n−1) moves it to the
//!   MRU end of S(k+1). A segment over capacity hands its LRU page to the MRU end of the
//!   segment below ("cooling"), down to S0.
//! - A miss takes the victim from the LRU end of the lowest non-empty segment and inserts the
//!   new page at the MRU end of the lowest segment with room, else of S0. (The paper, with two
//!   segments, always inserts into the probationary segment; libCacheSim's "lowest segment
//!   with room" makes new pages fill S1.. directly while memory fills up.)
//!
//! Sizes as libCacheSim: capacity ⌊c / n⌋ per segment (knob `n_seg`, default 4, 1..=16), or
//! ⌊c · wᵢ / Σw⌋ for weights `seg_size = "w0:w1:..."` (whose count sets n).
//!
//! One libCacheSim rule a demand pager cannot follow: when the capacities sum to less than
//! c (c not a multiple of n), S0 holds the excess, and a hit whose cooling reaches S0 then
//! evicts S0's LRU pages until S0 is within capacity, from inside the hit (`SLRU_cool(.., 0)`
//! calls `SLRU_evict`), leaving frames free. Here the engine frees frames only on a miss, so
//! such pages are set aside ("cooled out") instead: they stay resident but belong to no
//! segment, the next misses take them as victims before any segment page (libCacheSim, with
//! free room, evicts nothing on those misses), and a hit on one counts as the miss libCacheSim
//! saw: the page is inserted again as on a miss. The two then hold the same pages in the same
//! order; only the fault count differs, by the counter `cooled_out_hits`.

use super::list::{Links, List};
use super::{Family, Insert, Policy, PolicyOptions, Touch};
use crate::error::{Error, Result};
use crate::mm::{FrameId, Mm};

const MAX_SEGMENTS: usize = 16;
/// `seg_of` of a page cooled out of S0 (resident, no segment).
const COOLED_OUT: u8 = u8::MAX;

#[derive(Debug)]
pub struct Slru {
    links: Links,
    segs: Vec<List>,
    cap: Vec<u32>,
    seg_of: Vec<u8>,
    /// Pages libCacheSim would already have evicted, oldest at the tail.
    cooled: List,
    cooled_out: u64,
    cooled_out_hits: u64,
}

impl Slru {
    pub fn new(frames: u32, opts: &PolicyOptions) -> Result<Self> {
        let n_seg: Option<usize> = match opts.get_str("n_seg") {
            None => None,
            Some(_) => Some(opts.get("n_seg", 4usize)?),
        };
        let cap: Vec<u32> = match opts.get_str("seg_size") {
            Some(s) => {
                let bad = |why: String| Error::config("option seg_size", why);
                let w: Vec<u64> = s
                    .split(':')
                    .map(|x| x.trim().parse::<u64>())
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|_| bad(format!("expected weights like 1:1:2, got '{s}'")))?;
                if w.is_empty() || w.len() > MAX_SEGMENTS || w.contains(&0) {
                    return Err(bad(format!(
                        "expected 1..={MAX_SEGMENTS} positive weights, got '{s}'"
                    )));
                }
                if n_seg.is_some_and(|n| n != w.len()) {
                    return Err(Error::config(
                        "option n_seg",
                        format!("{} but seg_size gives {} segments", n_seg.unwrap(), w.len()),
                    ));
                }
                let sum: u64 = w.iter().sum();
                w.iter()
                    .map(|&x| (x as f64 / sum as f64 * frames as f64) as u32)
                    .collect()
            }
            None => {
                let n = n_seg.unwrap_or(4);
                if !(1..=MAX_SEGMENTS).contains(&n) {
                    return Err(Error::config(
                        "option n_seg",
                        format!("must be 1..={MAX_SEGMENTS}, got {n}"),
                    ));
                }
                vec![frames / n as u32; n]
            }
        };
        Ok(Slru {
            links: Links::new(frames as usize),
            segs: vec![List::default(); cap.len()],
            cap,
            seg_of: vec![0; frames as usize],
            cooled: List::default(),
            cooled_out: 0,
            cooled_out_hits: 0,
        })
    }

    /// Pages per segment, S0 first, then the cooled-out pages (tests).
    pub fn sizes(&self) -> (Vec<u32>, u32) {
        (self.segs.iter().map(|s| s.len).collect(), self.cooled.len)
    }

    /// The capacity of each segment, S0 first.
    pub fn capacities(&self) -> &[u32] {
        &self.cap
    }

    #[inline]
    fn push(&mut self, f: FrameId, k: usize) {
        self.segs[k].push_head(&mut self.links, f);
        self.seg_of[f as usize] = k as u8;
    }

    /// Insert as a miss does: the lowest segment with room, else S0.
    fn admit(&mut self, f: FrameId) {
        let k = (0..self.segs.len())
            .find(|&k| self.segs[k].len < self.cap[k])
            .unwrap_or(0);
        self.push(f, k);
    }

    /// `SLRU_cool`: Sk is over capacity; its LRU page moves down, and S0's leaves.
    fn cool(&mut self, k: usize) {
        let f = self.segs[k]
            .pop_tail(&mut self.links)
            .expect("over capacity");
        if k == 0 {
            self.cooled.push_head(&mut self.links, f);
            self.seg_of[f as usize] = COOLED_OUT;
            self.cooled_out += 1;
            return;
        }
        self.push(f, k - 1);
        while self.segs[k - 1].len > self.cap[k - 1] {
            self.cool(k - 1);
        }
    }
}

impl Policy for Slru {
    fn name(&self) -> &'static str {
        "slru"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn prefetch(&self, f: FrameId) {
        crate::hint::prefetch(self.seg_of.as_ptr().wrapping_add(f as usize));
        self.links.prefetch(f);
    }
    #[inline]
    fn on_hit(&mut self, f: FrameId, _t: Touch) {
        let k = self.seg_of[f as usize];
        let top = self.segs.len() - 1;
        if k == COOLED_OUT {
            // libCacheSim evicted this page on an earlier hit: to it, this is a miss.
            self.cooled.remove(&mut self.links, f);
            self.cooled_out_hits += 1;
            self.admit(f);
            return;
        }
        let k = k as usize;
        if k == top {
            self.segs[k].move_to_head(&mut self.links, f);
            return;
        }
        self.segs[k].remove(&mut self.links, f);
        self.push(f, k + 1);
        while self.segs[k + 1].len > self.cap[k + 1] {
            self.cool(k + 1);
        }
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, _t: Touch, _how: Insert) {
        self.admit(f);
    }
    #[inline]
    fn victim_hint(&self, k: usize) -> Option<FrameId> {
        if k == 0 && !self.cooled.is_empty() {
            return Some(self.cooled.tail);
        }
        let s = self.segs.iter().find(|s| !s.is_empty())?;
        s.nth_from_tail(&self.links, k)
    }
    fn evict(&mut self, _mm: &mut Mm) -> Option<FrameId> {
        if let Some(f) = self.cooled.pop_tail(&mut self.links) {
            return Some(f);
        }
        let k = self.segs.iter().position(|s| !s.is_empty())?;
        self.segs[k].pop_tail(&mut self.links)
    }
    fn on_remove(&mut self, f: FrameId) {
        match self.seg_of[f as usize] {
            COOLED_OUT => self.cooled.remove(&mut self.links, f),
            k => self.segs[k as usize].remove(&mut self.links, f),
        }
    }
    fn validate(&self, mm: &Mm) -> std::result::Result<(), String> {
        self.cooled.validate(&self.links, "slru cooled-out")?;
        for (k, s) in self.segs.iter().enumerate() {
            s.validate(&self.links, "slru segment")?;
            if let Some(f) = s
                .iter(&self.links)
                .find(|&f| self.seg_of[f as usize] as usize != k)
            {
                return Err(format!(
                    "slru: frame {f} on S{k} tagged {}",
                    self.seg_of[f as usize]
                ));
            }
            // Only S0 may exceed its capacity (it takes the misses when no segment has room).
            if k > 0 && s.len > self.cap[k] {
                return Err(format!("slru: S{k} holds {} > {}", s.len, self.cap[k]));
            }
        }
        if let Some(f) = self
            .cooled
            .iter(&self.links)
            .find(|&f| self.seg_of[f as usize] != COOLED_OUT)
        {
            return Err(format!("slru: cooled-out frame {f} tagged a segment"));
        }
        crate::policy::registry::check_holds_exactly(
            mm,
            self.segs
                .iter()
                .flat_map(|s| s.iter(&self.links))
                .chain(self.cooled.iter(&self.links)),
            "slru",
        )
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("cooled_out", self.cooled_out),
            ("cooled_out_hits", self.cooled_out_hits),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::by_hand::{replay, resident};

    #[test]
    fn by_hand_two_segments() {
        // n_seg = 2, c = 4: S0 (probationary) and S1 (protected) hold 2 each.
        // Segments written MRU → LRU.
        //  1 2    M M  S0 [2 1]
        //  3 4    M M  S0 full: the lowest segment with room is S1. S1 [4 3]
        //  1      H    S0 → S1 [1 4 3]: over 2, cool 3 → S0 [3 2]
        //  5      M    victim: S0's LRU 2. 5 → S0 [5 3]
        //  3      H    → S1 [3 1 4], cool 4 → S0 [4 5]
        //  4      H    → S1 [4 3 1], cool 1 → S0 [1 5]
        //  6      M    victim 5. S0 [6 1]
        //  2      M    victim 1. S0 [2 6]
        //  4      H    S1 [4 3]
        //  1      M    victim 6. S0 [1 2]
        //  7      M    victim 2. S0 [7 1]
        //  1      H    → S1 [1 4 3], cool 3 → S0 [3 7]
        let trace = [1, 2, 3, 4, 1, 5, 3, 4, 6, 2, 4, 1, 7, 1];
        let opts = PolicyOptions::new(0).with("n_seg", "2");
        let (seq, m) = replay(Slru::new(4, &opts).unwrap(), 4, &trace);
        assert_eq!(seq, "MMMMHMHHMMHMMH");
        assert_eq!(resident(&m, &trace), vec![1, 3, 4, 7]);
        assert_eq!(m.policy.sizes(), (vec![2, 2], 0));
        assert_eq!(
            m.policy.counters(),
            vec![("cooled_out", 0), ("cooled_out_hits", 0)]
        );
    }

    #[test]
    fn by_hand_cooling_out_of_an_overfull_probation() {
        // n_seg = 2, c = 5: capacities 2 + 2, so S0 takes the fifth page (libCacheSim's rule).
        //  1 2 3 4 5  M×5  S0 [2 1], S1 [4 3], then no room anywhere: 5 → S0 [5 2 1]
        //  2          H    → S1 [2 4 3], cool 3 → S0 [3 5 1]: S0 over 2, cool 1 out.
        //                  libCacheSim evicts 1 here; vmemsim keeps it aside, resident.
        //  1          H    (libCacheSim: a miss) back in as on a miss: no segment has room
        //                  (S0 [3 5], S1 [2 4]) → S0 [1 3 5]
        //  6          M    nothing cooled out now: victim S0's LRU 5. S0 [6 1 3]
        //  3          H    → S1 [3 2 4], cool 4 → S0 [4 6 1], cool 1 out again
        //  7          M    victim: the cooled-out 1 (libCacheSim has a free frame). S0 [7 4 6]
        let trace = [1, 2, 3, 4, 5, 2, 1, 6, 3, 7];
        let opts = PolicyOptions::new(0).with("n_seg", "2");
        let (seq, m) = replay(Slru::new(5, &opts).unwrap(), 5, &trace);
        assert_eq!(seq, "MMMMMHHMHM");
        assert_eq!(resident(&m, &trace), vec![2, 3, 4, 6, 7]);
        assert_eq!(m.policy.sizes(), (vec![3, 2], 0));
        assert_eq!(
            m.policy.counters(),
            vec![("cooled_out", 2), ("cooled_out_hits", 1)]
        );
    }
}

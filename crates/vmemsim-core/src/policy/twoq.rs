//! 2Q, the full version (Johnson & Shasha, "2Q: A Low Overhead High Performance Buffer
//! Management Replacement Algorithm", VLDB'94: the "full version" of 2Q with its
//! `reclaimfor` routine).
//!
//! Resident pages are on A1in (a FIFO of pages seen once) or Am (an LRU of pages seen again
//! after leaving A1in); A1out is a FIFO of page numbers recently evicted from A1in.
//! - Hit in Am: move to Am's MRU end. Hit in A1in: nothing (correlated references).
//! - Miss on a page in A1out: drop it from A1out, reclaim a frame, insert at Am's MRU end.
//! - Any other miss: reclaim a frame, insert at A1in's head.
//! - Reclaim (`reclaimfor`): if |A1in| > Kin, the oldest A1in page leaves and its number
//!   enters A1out (whose oldest entry is dropped beyond Kout entries); else Am's LRU page
//!   leaves, remembered nowhere.
//!
//! Sizes as the paper recommends and libCacheSim's `TwoQ.c` defaults to: Kin = ⌊c · 0.25⌋
//! frames, Kout = ⌊c · 0.5⌋ page numbers (knobs `ain_size_ratio`, `aout_size_ratio`).
//! libCacheSim builds the three queues from its FIFO and LRU caches and follows the paper
//! rule for rule, so the two agree miss for miss; where it refuses to admit anything
//! (Kin = 0, i.e. c < 4 frames at the default ratio) vmemsim admits every faulting page to
//! A1in, so small sizes are not compared. libCacheSim bounds Am by c − Kin, a bound that never
//! binds with one-frame pages (A1in never drops below Kin once memory is full).
//!
//! Pages that arrive by readahead go to A1in and drop any A1out entry; pages that leave by
//! `on_remove` leave no A1out entry.

use super::ghost::Ghosts;
use super::list::{Links, List};
use super::{Family, Insert, Policy, PolicyOptions, Touch};
use crate::error::{Error, Result};
use crate::mm::{FrameId, Mm, PTE_PRESENT};

const NOWHERE: u8 = 0;
const IN_A1IN: u8 = 1;
const IN_AM: u8 = 2;

#[derive(Debug)]
pub struct TwoQ {
    links: Links,
    /// FIFO, head = newest.
    a1in: List,
    /// LRU, head = most recently used.
    am: List,
    list_of: Vec<u8>,
    /// A1out: page numbers, head = newest.
    a1out: Ghosts<1>,
    kin: u32,
    kout: u32,
    /// The page of the miss being served and whether A1out held it (set by `on_miss`).
    pending: Option<(u64, bool)>,
    a1out_hits: u64,
}

impl TwoQ {
    pub fn new(frames: u32, opts: &PolicyOptions) -> Result<Self> {
        let ain: f64 = opts.get("ain_size_ratio", 0.25)?;
        let aout: f64 = opts.get("aout_size_ratio", 0.5)?;
        if !(0.0..1.0).contains(&ain) {
            return Err(Error::config(
                "option ain_size_ratio",
                format!("must be in [0, 1), got {ain}"),
            ));
        }
        if !(0.0..=16.0).contains(&aout) {
            return Err(Error::config(
                "option aout_size_ratio",
                format!("must be in [0, 16], got {aout}"),
            ));
        }
        let kout = (frames as f64 * aout) as u32;
        Ok(TwoQ {
            links: Links::new(frames as usize),
            a1in: List::default(),
            am: List::default(),
            list_of: vec![NOWHERE; frames as usize],
            a1out: Ghosts::with_capacity(kout as usize + 1),
            kin: (frames as f64 * ain) as u32,
            kout,
            pending: None,
            a1out_hits: 0,
        })
    }

    /// (|A1in|, |Am|, |A1out|) (tests).
    pub fn sizes(&self) -> (u32, u32, u32) {
        (self.a1in.len, self.am.len, self.a1out.len(0))
    }
}

impl Policy for TwoQ {
    fn name(&self) -> &'static str {
        "2q"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn prefetch(&self, f: FrameId) {
        crate::hint::prefetch(self.list_of.as_ptr().wrapping_add(f as usize));
        self.links.prefetch(f);
    }
    #[inline]
    fn on_hit(&mut self, f: FrameId, _t: Touch) {
        if self.list_of[f as usize] == IN_AM {
            self.am.move_to_head(&mut self.links, f);
        }
    }
    fn on_miss(&mut self, t: Touch) {
        let seen = self.a1out.take(t.vpn).is_some();
        self.a1out_hits += seen as u64;
        self.pending = Some((t.vpn, seen));
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, t: Touch, _how: Insert) {
        let to_am = match self.pending {
            Some((vpn, seen)) if vpn == t.vpn => {
                self.pending = None;
                seen
            }
            // Readahead: not requested; it must not stay in A1out while resident.
            _ => {
                self.a1out.take(t.vpn);
                false
            }
        };
        if to_am {
            self.am.push_head(&mut self.links, f);
            self.list_of[f as usize] = IN_AM;
        } else {
            self.a1in.push_head(&mut self.links, f);
            self.list_of[f as usize] = IN_A1IN;
        }
    }
    #[inline]
    fn victim_hint(&self, k: usize) -> Option<FrameId> {
        if self.a1in.len > self.kin {
            self.a1in.nth_from_tail(&self.links, k)
        } else {
            self.am.nth_from_tail(&self.links, k)
        }
    }
    fn evict(&mut self, mm: &mut Mm) -> Option<FrameId> {
        // Am can only be empty here after pages left through `on_remove`.
        if self.a1in.len > self.kin || self.am.is_empty() {
            let f = self.a1in.pop_tail(&mut self.links)?;
            self.list_of[f as usize] = NOWHERE;
            if self.kout > 0 {
                if self.a1out.len(0) >= self.kout {
                    self.a1out.pop_tail(0);
                }
                self.a1out.push_head(0, mm.owner(f));
            }
            Some(f)
        } else {
            let f = self.am.pop_tail(&mut self.links)?;
            self.list_of[f as usize] = NOWHERE;
            Some(f)
        }
    }
    fn on_remove(&mut self, f: FrameId) {
        match std::mem::replace(&mut self.list_of[f as usize], NOWHERE) {
            IN_A1IN => self.a1in.remove(&mut self.links, f),
            IN_AM => self.am.remove(&mut self.links, f),
            _ => {}
        }
    }
    fn validate(&self, mm: &Mm) -> std::result::Result<(), String> {
        self.a1in.validate(&self.links, "2q A1in")?;
        self.am.validate(&self.links, "2q Am")?;
        self.a1out.validate("2q A1out")?;
        for (list, tag) in [(&self.a1in, IN_A1IN), (&self.am, IN_AM)] {
            if let Some(f) = list
                .iter(&self.links)
                .find(|&f| self.list_of[f as usize] != tag)
            {
                return Err(format!(
                    "2q: frame {f} on list {tag} tagged {}",
                    self.list_of[f as usize]
                ));
            }
        }
        if self.a1out.len(0) > self.kout {
            return Err(format!(
                "2q: A1out holds {} > Kout = {}",
                self.a1out.len(0),
                self.kout
            ));
        }
        if let Some(vpn) = self
            .a1out
            .iter(0)
            .find(|&v| mm.pt.pte(v) & PTE_PRESENT != 0)
        {
            return Err(format!("2q: A1out page {vpn:#x} is resident"));
        }
        crate::policy::registry::check_holds_exactly(
            mm,
            self.a1in.iter(&self.links).chain(self.am.iter(&self.links)),
            "2q",
        )
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("a1out_hits", self.a1out_hits)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::by_hand::{replay, resident};

    #[test]
    fn by_hand_four_frames() {
        // c = 4: Kin = 1, Kout = 2. Queues written newest → oldest.
        //  1 2 3 4  M M M M  A1in [4 3 2 1] (free frames: no reclaim)
        //  1        H        hit in A1in: nothing moves
        //  5        M        |A1in| 4 > 1: 1 leaves → A1out [1].        A1in [5 4 3 2]
        //  2        H
        //  6        M        2 leaves → A1out [2 1].                      A1in [6 5 4 3]
        //  1        M        in A1out (→ [2]); 3 leaves → A1out [3 2].    Am [1], A1in [6 5 4]
        //  3        M        in A1out (→ [2]); 4 leaves → A1out [4 2].    Am [3 1], A1in [6 5]
        //  7        M        5 leaves → A1out [5 4] (2 dropped: Kout).   A1in [7 6]
        //  2        M        not in A1out any more; 6 leaves → [6 5].    A1in [2 7]
        //  1        H        Am [1 3]
        //  5        M        in A1out (→ [6]); 7 leaves → [7 6].          Am [5 1 3], A1in [2]
        //  8        M        |A1in| = 1 = Kin: Am's LRU 3 leaves, remembered nowhere. A1in [8 2]
        //  3        M        not a ghost; 2 leaves → A1out [2 7].         A1in [3 8]
        //  2        M        in A1out (→ [7]); 8 leaves → [8 7].          Am [2 5 1], A1in [3]
        //  1        H        Am [1 2 5]
        //  9        M        Am's LRU 5 leaves.                           A1in [9 3]
        //  5        M        not a ghost; 3 leaves → A1out [3 8].         A1in [5 9]
        let trace = [1, 2, 3, 4, 1, 5, 2, 6, 1, 3, 7, 2, 1, 5, 8, 3, 2, 1, 9, 5];
        let (seq, m) = replay(TwoQ::new(4, &PolicyOptions::new(0)).unwrap(), 4, &trace);
        assert_eq!(seq, "MMMMHMHMMMMMHMMMMHMM");
        assert_eq!(resident(&m, &trace), vec![1, 2, 5, 9]);
        assert_eq!(m.policy.sizes(), (2, 2, 2));
        assert_eq!(m.policy.a1out.iter(0).collect::<Vec<_>>(), vec![3, 8]);
        assert_eq!(m.policy.counters(), vec![("a1out_hits", 4)]);
    }
}

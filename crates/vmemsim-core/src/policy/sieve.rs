//! SIEVE (Zhang, Yang, Yue, Vigfusson & Rashmi, "SIEVE is Simpler than LRU: an Efficient
//! Turn-Key Eviction Algorithm for Web Caches", NSDI'24: the algorithm of its design section
//! and its pseudocode).
//!
//! One FIFO queue, newest at the head, and a hand that moves from the tail towards the head.
//! A hit only sets the page's visited bit; nothing moves. To evict, the hand (at the tail
//! when it has none) clears visited bits as it passes, wrapping from the head back to the
//! tail, and evicts the first page it finds unvisited; the hand stays at that page's newer
//! neighbour. New pages enter at the head, unvisited, so the hand reaches them last — unlike
//! CLOCK, SIEVE never moves a retained page, which keeps new pages apart from old survivors
//! ("lazy promotion and quick demotion").
//!
//! libCacheSim's `Sieve.c` is the paper's algorithm exactly (a 1-bit visited flag, the hand
//! kept as a pointer to the next candidate, NULL meaning "start again from the tail"), and
//! this model agrees with it miss for miss (tests/test_libcachesim_diff.py). A page that
//! leaves through [`Policy::on_remove`] while the hand points at it moves the hand to its
//! newer neighbour, as libCacheSim's `Sieve_remove_obj` does. No knobs.

use super::list::{Links, List, NIL};
use super::{Family, Insert, Policy, Touch};
use crate::mm::{FrameId, Mm};

#[derive(Debug)]
pub struct Sieve {
    links: Links,
    /// Head = newest; the hand walks from the tail (oldest) towards the head.
    queue: List,
    visited: Vec<bool>,
    /// The next page the hand examines; `NIL`: start from the tail.
    hand: u32,
    /// Visited bits the hand cleared (pages it kept).
    kept: u64,
}

impl Sieve {
    pub fn new(frames: u32) -> Self {
        Sieve {
            links: Links::new(frames as usize),
            queue: List::default(),
            visited: vec![false; frames as usize],
            hand: NIL,
            kept: 0,
        }
    }

    /// Where the hand is (`None`: it restarts from the tail) (tests).
    pub fn hand(&self) -> Option<FrameId> {
        (self.hand != NIL).then_some(self.hand)
    }
}

impl Policy for Sieve {
    fn name(&self) -> &'static str {
        "sieve"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn prefetch(&self, f: FrameId) {
        crate::hint::prefetch(self.visited.as_ptr().wrapping_add(f as usize));
    }
    #[inline]
    fn on_hit(&mut self, f: FrameId, _t: Touch) {
        self.visited[f as usize] = true;
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, _t: Touch, _how: Insert) {
        self.visited[f as usize] = false;
        self.queue.push_head(&mut self.links, f);
    }
    #[inline]
    fn victim_hint(&self, k: usize) -> Option<FrameId> {
        let f = if self.hand == NIL {
            self.queue.tail
        } else {
            self.hand
        };
        (k == 0 && f != NIL && !self.visited[f as usize]).then_some(f)
    }
    fn evict(&mut self, _mm: &mut Mm) -> Option<FrameId> {
        let mut f = if self.hand == NIL {
            self.queue.tail
        } else {
            self.hand
        };
        if f == NIL {
            return None;
        }
        // Terminates within one lap plus one page: every page passed is left unvisited.
        while self.visited[f as usize] {
            self.visited[f as usize] = false;
            self.kept += 1;
            f = match self.links.prev(f) {
                NIL => self.queue.tail,
                p => p,
            };
        }
        self.hand = self.links.prev(f);
        self.queue.remove(&mut self.links, f);
        Some(f)
    }
    fn on_remove(&mut self, f: FrameId) {
        if self.hand == f {
            self.hand = self.links.prev(f);
        }
        self.queue.remove(&mut self.links, f);
    }
    fn validate(&self, mm: &Mm) -> Result<(), String> {
        self.queue.validate(&self.links, "sieve")?;
        if self.hand != NIL && !self.queue.iter(&self.links).any(|f| f == self.hand) {
            return Err(format!("sieve: hand {} is not on the queue", self.hand));
        }
        crate::policy::registry::check_holds_exactly(mm, self.queue.iter(&self.links), "sieve")
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("visited_cleared", self.kept)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::by_hand::{frame_of, replay, resident};

    #[test]
    fn by_hand_three_frames() {
        // c = 3. Queue written newest → oldest, `*` = visited, `^` = the hand.
        //  1 2 3      M M M   [3 2 1]
        //  1          H       [3 2 1*]
        //  4          M       hand at tail 1*: clear, on to 2: evict 2, hand → 3. [4 3^ 1]
        //  2          M       evict 3 (hand), hand → 4.                            [2 4^ 1]
        //  5          M       evict 4, hand → 2.                                   [5 2^ 1]
        //  3          M       evict 2, hand → 5.                                   [3 5^ 1]
        //  1 5        H H     [3 5*^ 1*]
        //  6          M       5*: clear, on to 3: evict 3, hand → none (3 was newest). [6 5 1*]
        //  1          H       (already visited)
        //  7          M       hand from tail: 1*: clear, on to 5: evict 5, hand → 6. [7 6^ 1]
        //  6          H       [7 6*^ 1]
        //  8          M       6*: clear, on to 7: evict 7, hand → none.            [8 6 1]
        //  1          H       [8 6 1*]
        //  9          M       from tail: 1*: clear, on to 6: evict 6, hand → 8.    [9 8^ 1]
        // Victims 2 3 4 2 3 5 7 6; the hand cleared five visited bits (1, 5, 1, 6, 1).
        let trace = [1, 2, 3, 1, 4, 2, 5, 3, 1, 5, 6, 1, 7, 6, 8, 1, 9];
        let (seq, m) = replay(Sieve::new(3), 3, &trace);
        assert_eq!(seq, "MMMHMMMMHHMHMHMHM");
        assert_eq!(resident(&m, &trace), vec![1, 8, 9]);
        assert_eq!(m.policy.hand(), Some(frame_of(&m, 8)));
        assert_eq!(m.policy.counters(), vec![("visited_cleared", 5)]);
    }
}

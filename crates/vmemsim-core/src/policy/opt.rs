//! Belady's MIN / OPT (Belady 1966; Mattson et al. 1970): evict the resident page whose next
//! use is furthest in the future. Offline: needs [`Touch::next_use`], which the replay fills
//! from the whole trace (`needs_future`).
//!
//! Demand paging: the victim is chosen among the resident pages *before* the faulting page is
//! inserted, so the incoming page is never its own victim (libCacheSim `Belady.c` through
//! `cache_get_base` does the same; the "bypass" variant of MIN that may decline to cache the
//! incoming page is not modelled). Pages never used again tie at `u64::MAX`; any of them is an
//! optimal victim, the highest frame number goes first.
//!
//! An indexed binary max-heap over frames keyed by (next use, frame): O(log n) per hit and per
//! eviction, no allocation after construction.

use super::list::NIL;
use super::{Family, Insert, Policy, Touch};
use crate::mm::{FrameId, Mm};

#[derive(Debug)]
pub struct Opt {
    /// Frames in heap order; `heap[0]` has the furthest next use.
    heap: Vec<u32>,
    /// Position of each frame in `heap`, `NIL` when not held.
    pos: Vec<u32>,
    /// Next use of each held frame's page.
    next: Vec<u64>,
}

impl Opt {
    pub fn new(frames: u32) -> Self {
        Opt {
            heap: Vec::with_capacity(frames as usize),
            pos: vec![NIL; frames as usize],
            next: vec![u64::MAX; frames as usize],
        }
    }

    #[inline]
    fn above(&self, a: u32, b: u32) -> bool {
        (self.next[a as usize], a) > (self.next[b as usize], b)
    }

    #[inline]
    fn place(&mut self, i: usize, f: u32) {
        self.heap[i] = f;
        self.pos[f as usize] = i as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        let f = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if !self.above(f, p) {
                break;
            }
            self.place(i, p);
            i = parent;
        }
        self.place(i, f);
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let f = self.heap[i];
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.above(self.heap[r], self.heap[l]) {
                r
            } else {
                l
            };
            if !self.above(self.heap[c], f) {
                break;
            }
            self.place(i, self.heap[c]);
            i = c;
        }
        self.place(i, f);
    }

    /// Take frame `f` out of the heap.
    fn delete(&mut self, f: FrameId) {
        let i = self.pos[f as usize];
        if i == NIL {
            return;
        }
        let i = i as usize;
        self.pos[f as usize] = NIL;
        let last = self.heap.pop().expect("heap holds f");
        if i < self.heap.len() {
            self.place(i, last);
            self.sift_up(i);
            let j = self.pos[last as usize] as usize;
            self.sift_down(j);
        }
    }

    /// The frame OPT would evict now (read-only).
    pub fn peek_victim(&self) -> Option<FrameId> {
        self.heap.first().copied()
    }
}

impl Policy for Opt {
    fn name(&self) -> &'static str {
        "opt"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    fn needs_future(&self) -> bool {
        true
    }
    /// Its future is that of the trace's page accesses only.
    fn models_page_cache(&self) -> bool {
        false
    }
    #[inline]
    fn on_hit(&mut self, f: FrameId, t: Touch) {
        let i = self.pos[f as usize] as usize;
        self.next[f as usize] = t.next_use;
        // The next use only moves later on a hit (it was this access), but stay general.
        self.sift_up(i);
        let j = self.pos[f as usize] as usize;
        self.sift_down(j);
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, t: Touch, _how: Insert) {
        self.next[f as usize] = t.next_use;
        self.heap.push(f);
        let i = self.heap.len() - 1;
        self.pos[f as usize] = i as u32;
        self.sift_up(i);
    }
    fn evict(&mut self, _mm: &mut Mm) -> Option<FrameId> {
        let f = self.peek_victim()?;
        self.delete(f);
        Some(f)
    }
    fn on_remove(&mut self, f: FrameId) {
        self.delete(f);
    }
    fn validate(&self, mm: &Mm) -> Result<(), String> {
        for (i, &f) in self.heap.iter().enumerate() {
            if self.pos.get(f as usize) != Some(&(i as u32)) {
                return Err(format!(
                    "opt: frame {f} at heap slot {i} but pos says otherwise"
                ));
            }
            if i > 0 && self.above(f, self.heap[(i - 1) / 2]) {
                return Err(format!("opt: heap order broken at slot {i}"));
            }
        }
        let placed = self.pos.iter().filter(|&&p| p != NIL).count();
        if placed != self.heap.len() {
            return Err(format!(
                "opt: {placed} frames have a heap slot, heap holds {}",
                self.heap.len()
            ));
        }
        crate::policy::registry::check_holds_exactly(mm, self.heap.iter().copied(), "opt")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(next_use: u64) -> Touch {
        Touch {
            next_use,
            ..Touch::default()
        }
    }

    #[test]
    fn heap_pops_furthest_and_supports_removal() {
        let mm = Mm::new(6);
        let mut o = Opt::new(6);
        let keys = [7, 3, u64::MAX, 9, 1, u64::MAX];
        for (f, &k) in keys.iter().enumerate() {
            o.on_insert(&mm, f as u32, touch(k), Insert::FirstTouch);
        }
        o.on_remove(3); // key 9
        o.on_hit(1, touch(8)); // frame 1: 3 -> 8
        let mut mm = Mm::new(6);
        let order: Vec<u32> = std::iter::from_fn(|| o.evict(&mut mm)).collect();
        // Ties at "never" go highest frame first; then 8 (frame 1), 7 (frame 0), 1 (frame 4).
        assert_eq!(order, vec![5, 2, 1, 0, 4]);
    }
}

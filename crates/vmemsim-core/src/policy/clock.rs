//! CLOCK / second chance (Corbató 1968), in the FIFO-with-reinsertion form of libCacheSim's
//! `Clock.c`: pages sit in insertion order; a hit sets the page's reference counter; eviction
//! looks at the oldest page: counter set → decrement it and move the page to the newest end
//! (its second chance), counter clear → evict it. A new page starts with its counter clear.
//!
//! This is the textbook algorithm on exact hit information (the policy sees every hit), as a
//! cache simulator does; Linux's two-list reclaim, which only samples PTE accessed bits, is
//! the separate `clock-lru` policy.
//!
//! Knob `n_bit_counter` (default 1, range 1..=8): width of the saturating reference counter
//! (libCacheSim `n-bit-counter`); 1 is the classic reference bit. With the default this equals
//! libCacheSim `Clock` with `n-bit-counter=1, init-freq=0` miss for miss (tested).
//! A moving hand over a circular buffer would give the same victims; the list form keeps the
//! frame → position map implicit.

use super::list::{Links, List};
use super::{Family, Insert, Policy, PolicyOptions, Touch};
use crate::error::{Error, Result};
use crate::mm::{FrameId, Mm};

#[derive(Debug)]
pub struct Clock {
    links: Links,
    /// Head = newest (just inserted or just given a second chance), tail = where the hand is.
    queue: List,
    counter: Vec<u8>,
    max: u8,
    second_chances: u64,
}

impl Clock {
    pub fn new(frames: u32, opts: &PolicyOptions) -> Result<Self> {
        let bits: u32 = opts.get("n_bit_counter", 1)?;
        if !(1..=8).contains(&bits) {
            return Err(Error::config(
                "option n_bit_counter",
                format!("must be 1..=8, got {bits}"),
            ));
        }
        Ok(Clock {
            links: Links::new(frames as usize),
            queue: List::default(),
            counter: vec![0; frames as usize],
            max: ((1u32 << bits) - 1) as u8,
            second_chances: 0,
        })
    }
}

impl Policy for Clock {
    fn name(&self) -> &'static str {
        "clock"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn prefetch(&self, f: FrameId) {
        crate::hint::prefetch(self.counter.as_ptr().wrapping_add(f as usize));
    }
    #[inline]
    fn on_hit(&mut self, f: FrameId, _t: Touch) {
        let c = &mut self.counter[f as usize];
        if *c < self.max {
            *c += 1;
        }
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, _t: Touch, _how: Insert) {
        self.counter[f as usize] = 0;
        self.queue.push_head(&mut self.links, f);
    }
    #[inline]
    fn victim_hint(&self, k: usize) -> Option<FrameId> {
        self.queue.nth_from_tail(&self.links, k)
    }
    fn evict(&mut self, _mm: &mut Mm) -> Option<FrameId> {
        // Terminates: every pass over a page lowers its counter, so within `max` laps one is 0.
        loop {
            let f = self.queue.tail;
            if f == super::list::NIL {
                return None;
            }
            let c = &mut self.counter[f as usize];
            if *c == 0 {
                self.queue.remove(&mut self.links, f);
                return Some(f);
            }
            *c -= 1;
            self.second_chances += 1;
            self.queue.move_to_head(&mut self.links, f);
        }
    }
    fn on_remove(&mut self, f: FrameId) {
        self.queue.remove(&mut self.links, f);
    }
    fn validate(&self, mm: &Mm) -> std::result::Result<(), String> {
        self.queue.validate(&self.links, "clock")?;
        if let Some(f) = self
            .queue
            .iter(&self.links)
            .find(|&f| self.counter[f as usize] > self.max)
        {
            return Err(format!(
                "clock: frame {f} counter {} above {}",
                self.counter[f as usize], self.max
            ));
        }
        crate::policy::registry::check_holds_exactly(mm, self.queue.iter(&self.links), "clock")
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("second_chances", self.second_chances)]
    }
}

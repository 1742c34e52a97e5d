//! Exact LRU: every hit moves the page to the head (libCacheSim `LRU.c`). Linux does not do
//! this (it cannot see hits); see `clock-lru` and `mglru` for what the kernel does.

use super::list::{Links, List};
use super::{Family, Insert, Policy, Touch};
use crate::mm::{FrameId, Mm};

#[derive(Debug)]
pub struct Lru {
    links: Links,
    queue: List,
}

impl Lru {
    pub fn new(frames: u32) -> Self {
        Lru {
            links: Links::new(frames as usize),
            queue: List::default(),
        }
    }
}

impl Policy for Lru {
    fn name(&self) -> &'static str {
        "lru"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn prefetch(&self, f: FrameId) {
        self.links.prefetch(f);
    }
    #[inline]
    fn on_hit(&mut self, f: FrameId, _t: Touch) {
        self.queue.move_to_head(&mut self.links, f);
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, _t: Touch, _how: Insert) {
        self.queue.push_head(&mut self.links, f);
    }
    #[inline]
    fn victim_hint(&self, k: usize) -> Option<FrameId> {
        self.queue.nth_from_tail(&self.links, k)
    }
    fn evict(&mut self, _mm: &mut Mm) -> Option<FrameId> {
        self.queue.pop_tail(&mut self.links)
    }
    fn on_remove(&mut self, f: FrameId) {
        self.queue.remove(&mut self.links, f);
    }
    fn validate(&self, mm: &Mm) -> Result<(), String> {
        self.queue.validate(&self.links, "lru")?;
        crate::policy::registry::check_holds_exactly(mm, self.queue.iter(&self.links), "lru")
    }
}

//! FIFO: evict in insertion order; hits change nothing (libCacheSim `FIFO.c`).

use super::list::{Links, List};
use super::{Family, Insert, Policy, Touch};
use crate::mm::{FrameId, Mm};

#[derive(Debug)]
pub struct Fifo {
    links: Links,
    queue: List,
}

impl Fifo {
    pub fn new(frames: u32) -> Self {
        Fifo {
            links: Links::new(frames as usize),
            queue: List::default(),
        }
    }
}

impl Policy for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn on_hit(&mut self, _f: FrameId, _t: Touch) {}
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, _t: Touch, _how: Insert) {
        self.queue.push_head(&mut self.links, f);
    }
    #[inline]
    fn prefetch_victim(&self, f: FrameId) {
        self.links.prefetch(f);
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
        self.queue.validate(&self.links, "fifo")?;
        crate::policy::registry::check_holds_exactly(mm, self.queue.iter(&self.links), "fifo")
    }
}

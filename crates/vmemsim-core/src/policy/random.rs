//! RANDOM: evict a resident page chosen uniformly at random (Belady 1966's RAND). The
//! generator is xoshiro256++ seeded from the run's seed (`PolicyOptions::seed`), so a run is a
//! pure function of (trace, frames, seed). libCacheSim's `Random.c` draws from its hash table
//! with its own generator, so its victims (not its statistics) differ; no exact comparison is
//! possible or attempted.
//!
//! Resident frames are kept in a dense array with a position index: O(1) insert, removal and
//! draw, no allocation after construction.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::list::NIL;
use super::{Family, Insert, Policy, PolicyOptions, Touch};
use crate::mm::{FrameId, Mm};

#[derive(Debug)]
pub struct Random {
    resident: Vec<u32>,
    pos: Vec<u32>,
    rng: Xoshiro256PlusPlus,
}

impl Random {
    pub fn new(frames: u32, opts: &PolicyOptions) -> Self {
        Random {
            resident: Vec::with_capacity(frames as usize),
            pos: vec![NIL; frames as usize],
            rng: Xoshiro256PlusPlus::seed_from_u64(opts.seed),
        }
    }

    fn take(&mut self, f: FrameId) {
        let i = std::mem::replace(&mut self.pos[f as usize], NIL);
        if i == NIL {
            return;
        }
        self.resident.swap_remove(i as usize);
        if let Some(&moved) = self.resident.get(i as usize) {
            self.pos[moved as usize] = i;
        }
    }
}

impl Policy for Random {
    fn name(&self) -> &'static str {
        "random"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn on_hit(&mut self, _f: FrameId, _t: Touch) {}
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, _t: Touch, _how: Insert) {
        self.pos[f as usize] = self.resident.len() as u32;
        self.resident.push(f);
    }
    fn evict(&mut self, _mm: &mut Mm) -> Option<FrameId> {
        if self.resident.is_empty() {
            return None;
        }
        let f = self.resident[self.rng.gen_range(0..self.resident.len())];
        self.take(f);
        Some(f)
    }
    fn on_remove(&mut self, f: FrameId) {
        self.take(f);
    }
    fn validate(&self, mm: &Mm) -> Result<(), String> {
        for (i, &f) in self.resident.iter().enumerate() {
            if self.pos[f as usize] != i as u32 {
                return Err(format!(
                    "random: frame {f} at {i}, pos says {}",
                    self.pos[f as usize]
                ));
            }
        }
        let placed = self.pos.iter().filter(|&&p| p != NIL).count();
        if placed != self.resident.len() {
            return Err(format!(
                "random: {placed} frames placed, {} resident",
                self.resident.len()
            ));
        }
        crate::policy::registry::check_holds_exactly(mm, self.resident.iter().copied(), "random")
    }
}

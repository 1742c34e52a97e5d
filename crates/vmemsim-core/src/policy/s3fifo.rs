//! S3-FIFO (Yang et al., "FIFO queues are all you need for cache eviction", SOSP'23, §4 and
//! Algorithm 1): a small FIFO S (10% of memory) filters one-hit wonders, a main FIFO M holds
//! the rest, a ghost FIFO G remembers the page numbers evicted from S. Every resident page has
//! a 2-bit saturating access counter (0..=3), set to 0 on insertion, bumped on each hit.
//!
//! - Miss: a page found in G goes to M, any other to S.
//! - Evicting from S: the oldest page of S moves to M if its counter reached
//!   `move_to_main_threshold` (default 2: "freq > 1" in the paper's Algorithm 1), else it is
//!   evicted and its page number enters G; repeat until one page left.
//! - Evicting from M: the oldest page of M with a counter > 0 is reinserted at M's head with
//!   the counter decremented (2-bit CLOCK); the first with counter 0 is evicted.
//!
//! Where the paper's pseudocode and libCacheSim's `S3FIFO.c` differ, this follows libCacheSim
//! (it is the authors' reference and it frees exactly one frame per miss, which is what a
//! demand pager does):
//! - which queue to evict from: M when M is above its share (`|M| > c − |S|cap`) or S is
//!   empty, else S (the paper: S when `|S| ≥ 10%`, else M); pages promoted from S to M do not
//!   trigger an M eviction inside the same call (the paper's EVICTS calls EVICTM when M is full,
//!   which can free several frames at once);
//! - before the first eviction, once S is full new pages go straight to M (warm-up);
//! - a page promoted from S enters M with its counter cleared.
//!
//! Sizes: `|S|cap = ⌊c · small_size_ratio⌋`, M gets the rest, G holds up to
//! `⌊c · ghost_size_ratio⌋` page numbers (default 0.9: "as many entries as M"). libCacheSim
//! refuses to admit any object when `|S|cap ≤ 1` (c < 20 at the default ratio; recent versions
//! abort when it is 0); vmemsim always admits the faulting page, so the two agree only from
//! c ≥ 20 frames at the default ratio (see the differential test).
//!
//! Knobs: `small_size_ratio` (0.1), `ghost_size_ratio` (0.9), `move_to_main_threshold`
//! (2, range 1..=3 since the counter saturates at 3).

use super::ghost::Ghosts;
use super::list::{Links, List, NIL};
use super::{Family, Insert, Policy, PolicyOptions, Touch};
use crate::error::{Error, Result};
use crate::mm::{FrameId, Mm, PTE_PRESENT};

const IN_SMALL: u8 = 1;
const IN_MAIN: u8 = 2;
const FREQ_MAX: u8 = 3;

#[derive(Debug)]
pub struct S3Fifo {
    links: Links,
    small: List,
    main: List,
    list_of: Vec<u8>,
    freq: Vec<u8>,
    ghost: Ghosts<1>,
    small_cap: u32,
    main_cap: u32,
    ghost_cap: u32,
    threshold: u8,
    has_evicted: bool,
    /// The page of the miss being served and whether it was a ghost (set by `on_miss`).
    pending: Option<(u64, bool)>,
    promoted: u64,
    ghost_hits: u64,
}

impl S3Fifo {
    pub fn new(frames: u32, opts: &PolicyOptions) -> Result<Self> {
        let small_ratio: f64 = opts.get("small_size_ratio", 0.1)?;
        let ghost_ratio: f64 = opts.get("ghost_size_ratio", 0.9)?;
        let threshold: u8 = opts.get("move_to_main_threshold", 2)?;
        if !(0.0..1.0).contains(&small_ratio) {
            return Err(Error::config(
                "option small_size_ratio",
                format!("must be in [0, 1), got {small_ratio}"),
            ));
        }
        if !(0.0..=16.0).contains(&ghost_ratio) {
            return Err(Error::config(
                "option ghost_size_ratio",
                format!("must be in [0, 16], got {ghost_ratio}"),
            ));
        }
        if !(1..=FREQ_MAX).contains(&threshold) {
            return Err(Error::config(
                "option move_to_main_threshold",
                format!("must be 1..=3 (2-bit counter), got {threshold}"),
            ));
        }
        let small_cap = (frames as f64 * small_ratio) as u32;
        let ghost_cap = (frames as f64 * ghost_ratio) as u32;
        Ok(S3Fifo {
            links: Links::new(frames as usize),
            small: List::default(),
            main: List::default(),
            list_of: vec![0; frames as usize],
            freq: vec![0; frames as usize],
            ghost: Ghosts::with_capacity(ghost_cap as usize + 1),
            small_cap,
            main_cap: frames - small_cap,
            ghost_cap,
            threshold,
            has_evicted: false,
            pending: None,
            promoted: 0,
            ghost_hits: 0,
        })
    }

    /// (|S|, |M|, |G|) (tests).
    pub fn sizes(&self) -> (u32, u32, u32) {
        (self.small.len, self.main.len, self.ghost.len(0))
    }

    fn remember(&mut self, vpn: u64) {
        if self.ghost_cap == 0 {
            return;
        }
        if self.ghost.len(0) >= self.ghost_cap {
            self.ghost.pop_tail(0);
        }
        self.ghost.push_head(0, vpn);
    }

    /// EVICTS: promote accessed pages to M until one unaccessed page leaves (into G).
    fn evict_small(&mut self, mm: &Mm) -> Option<FrameId> {
        while let Some(f) = self.small.pop_tail(&mut self.links) {
            if self.freq[f as usize] >= self.threshold {
                self.freq[f as usize] = 0;
                self.main.push_head(&mut self.links, f);
                self.list_of[f as usize] = IN_MAIN;
                self.promoted += 1;
            } else {
                self.list_of[f as usize] = 0;
                self.remember(mm.owner(f));
                return Some(f);
            }
        }
        None
    }

    /// EVICTM: 2-bit CLOCK over M.
    fn evict_main(&mut self) -> Option<FrameId> {
        loop {
            let f = self.main.tail;
            if f == NIL {
                return None;
            }
            let c = &mut self.freq[f as usize];
            if *c == 0 {
                self.main.remove(&mut self.links, f);
                self.list_of[f as usize] = 0;
                return Some(f);
            }
            *c -= 1;
            self.main.move_to_head(&mut self.links, f);
        }
    }
}

impl Policy for S3Fifo {
    fn name(&self) -> &'static str {
        "s3fifo"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn on_hit(&mut self, f: FrameId, _t: Touch) {
        let c = &mut self.freq[f as usize];
        if *c < FREQ_MAX {
            *c += 1;
        }
    }
    fn on_miss(&mut self, t: Touch) {
        let was_ghost = self.ghost.take(t.vpn).is_some();
        self.ghost_hits += was_ghost as u64;
        self.pending = Some((t.vpn, was_ghost));
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, t: Touch, _how: Insert) {
        let to_main = match self.pending {
            Some((vpn, g)) if vpn == t.vpn => {
                self.pending = None;
                g
            }
            // Readahead: not requested; it must not stay a ghost while resident.
            _ => {
                self.ghost.take(t.vpn);
                false
            }
        } || (!self.has_evicted && self.small.len >= self.small_cap);
        self.freq[f as usize] = 0;
        if to_main {
            self.main.push_head(&mut self.links, f);
            self.list_of[f as usize] = IN_MAIN;
        } else {
            self.small.push_head(&mut self.links, f);
            self.list_of[f as usize] = IN_SMALL;
        }
    }
    fn evict(&mut self, mm: &mut Mm) -> Option<FrameId> {
        self.has_evicted = true;
        if self.main.len > self.main_cap || self.small.is_empty() {
            return self.evict_main();
        }
        // If S drains into M without an eviction, M pays (libCacheSim's loop calls evict again).
        self.evict_small(mm).or_else(|| self.evict_main())
    }
    fn on_remove(&mut self, f: FrameId) {
        match std::mem::replace(&mut self.list_of[f as usize], 0) {
            IN_SMALL => self.small.remove(&mut self.links, f),
            IN_MAIN => self.main.remove(&mut self.links, f),
            _ => {}
        }
    }
    fn validate(&self, mm: &Mm) -> std::result::Result<(), String> {
        self.small.validate(&self.links, "s3fifo S")?;
        self.main.validate(&self.links, "s3fifo M")?;
        self.ghost.validate("s3fifo G")?;
        for (list, tag) in [(&self.small, IN_SMALL), (&self.main, IN_MAIN)] {
            for f in list.iter(&self.links) {
                if self.list_of[f as usize] != tag {
                    return Err(format!(
                        "s3fifo: frame {f} on list {tag} tagged {}",
                        self.list_of[f as usize]
                    ));
                }
                if self.freq[f as usize] > FREQ_MAX {
                    return Err(format!(
                        "s3fifo: frame {f} counter {}",
                        self.freq[f as usize]
                    ));
                }
            }
        }
        if self.ghost.len(0) > self.ghost_cap {
            return Err(format!(
                "s3fifo: ghost holds {} > {}",
                self.ghost.len(0),
                self.ghost_cap
            ));
        }
        if let Some(vpn) = self
            .ghost
            .iter(0)
            .find(|&v| mm.pt.pte(v) & PTE_PRESENT != 0)
        {
            return Err(format!("s3fifo: ghost page {vpn:#x} is resident"));
        }
        crate::policy::registry::check_holds_exactly(
            mm,
            self.small
                .iter(&self.links)
                .chain(self.main.iter(&self.links)),
            "s3fifo",
        )
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("promoted_to_main", self.promoted),
            ("ghost_hits", self.ghost_hits),
        ]
    }
}

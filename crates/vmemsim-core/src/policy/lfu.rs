//! LFU: evict the resident page with the fewest accesses since it was inserted (its count
//! starts at 1 on the miss and forgets everything when the page leaves; no aging, no history
//! of evicted pages: "in-cache LFU").
//!
//! O(1) per operation with the frequency-bucket structure of Shah, Mitra & Matani, "An O(1)
//! algorithm for implementing the LFU cache eviction scheme" (2010): a list of buckets in
//! increasing frequency, each holding its pages in the order they reached that frequency.
//! Buckets live in a slab of `frames + 1` (there are never more non-empty buckets than pages,
//! plus one being created), so hits do not allocate.
//!
//! Tie-break: among the pages with the lowest count, evict the one that reached that count
//! earliest, i.e. the least recently used of them. This is libCacheSim's `LFU.c` (each
//! frequency node appends at its tail and evicts its `first_obj`), and the differential test
//! shows the two equal miss for miss.

use super::list::{Links, List, NIL};
use super::{Family, Insert, Policy, Touch};
use crate::mm::{FrameId, Mm};

#[derive(Clone, Copy, Debug)]
struct Bucket {
    freq: u64,
    /// Head = most recently arrived at this frequency, tail = first to go.
    pages: List,
    lower: u32,
    higher: u32,
}

#[derive(Debug)]
pub struct Lfu {
    links: Links,
    bucket_of: Vec<u32>,
    buckets: Vec<Bucket>,
    free_buckets: Vec<u32>,
    /// Bucket with the lowest frequency (`NIL` when empty).
    lowest: u32,
}

impl Lfu {
    pub fn new(frames: u32) -> Self {
        let n = frames as usize + 1;
        Lfu {
            links: Links::new(frames as usize),
            bucket_of: vec![NIL; frames as usize],
            buckets: vec![
                Bucket {
                    freq: 0,
                    pages: List::default(),
                    lower: NIL,
                    higher: NIL,
                };
                n
            ],
            free_buckets: (0..n as u32).rev().collect(),
            lowest: NIL,
        }
    }

    /// A new empty bucket of frequency `freq` linked between `lower` and `higher`.
    fn new_bucket(&mut self, freq: u64, lower: u32, higher: u32) -> u32 {
        let b = self
            .free_buckets
            .pop()
            .expect("LFU never needs more buckets than frames + 1");
        self.buckets[b as usize] = Bucket {
            freq,
            pages: List::default(),
            lower,
            higher,
        };
        if lower != NIL {
            self.buckets[lower as usize].higher = b;
        } else {
            self.lowest = b;
        }
        if higher != NIL {
            self.buckets[higher as usize].lower = b;
        }
        b
    }

    fn drop_bucket_if_empty(&mut self, b: u32) {
        let Bucket {
            pages,
            lower,
            higher,
            ..
        } = self.buckets[b as usize];
        if !pages.is_empty() {
            return;
        }
        if lower != NIL {
            self.buckets[lower as usize].higher = higher;
        } else {
            self.lowest = higher;
        }
        if higher != NIL {
            self.buckets[higher as usize].lower = lower;
        }
        self.free_buckets.push(b);
    }

    fn unlink(&mut self, f: FrameId) {
        let b = std::mem::replace(&mut self.bucket_of[f as usize], NIL);
        if b == NIL {
            return;
        }
        self.buckets[b as usize].pages.remove(&mut self.links, f);
        self.drop_bucket_if_empty(b);
    }

    /// Count of accesses of the page in frame `f` since it was inserted (tests).
    pub fn frequency(&self, f: FrameId) -> Option<u64> {
        let b = self.bucket_of[f as usize];
        (b != NIL).then(|| self.buckets[b as usize].freq)
    }
}

impl Policy for Lfu {
    fn name(&self) -> &'static str {
        "lfu"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn on_hit(&mut self, f: FrameId, _t: Touch) {
        let b = self.bucket_of[f as usize];
        let Bucket { freq, higher, .. } = self.buckets[b as usize];
        let to = if higher != NIL && self.buckets[higher as usize].freq == freq + 1 {
            higher
        } else {
            self.new_bucket(freq + 1, b, higher)
        };
        self.buckets[b as usize].pages.remove(&mut self.links, f);
        self.buckets[to as usize]
            .pages
            .push_head(&mut self.links, f);
        self.bucket_of[f as usize] = to;
        self.drop_bucket_if_empty(b);
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, _t: Touch, _how: Insert) {
        let low = self.lowest;
        let b = if low != NIL && self.buckets[low as usize].freq == 1 {
            low
        } else {
            self.new_bucket(1, NIL, low)
        };
        self.buckets[b as usize].pages.push_head(&mut self.links, f);
        self.bucket_of[f as usize] = b;
    }
    fn evict(&mut self, _mm: &mut Mm) -> Option<FrameId> {
        if self.lowest == NIL {
            return None;
        }
        let f = self.buckets[self.lowest as usize].pages.tail;
        self.unlink(f);
        Some(f)
    }
    fn on_remove(&mut self, f: FrameId) {
        self.unlink(f);
    }
    fn validate(&self, mm: &Mm) -> Result<(), String> {
        let mut held = Vec::new();
        let mut b = self.lowest;
        let mut prev = NIL;
        let mut last_freq = 0u64;
        let mut n_buckets = 0usize;
        while b != NIL {
            let bk = &self.buckets[b as usize];
            n_buckets += 1;
            if n_buckets > self.buckets.len() {
                return Err("lfu: bucket list loops".into());
            }
            if bk.lower != prev {
                return Err(format!("lfu: bucket {b} has a bad back link"));
            }
            if bk.freq <= last_freq {
                return Err(format!(
                    "lfu: bucket frequencies not increasing ({last_freq} then {})",
                    bk.freq
                ));
            }
            if bk.pages.is_empty() {
                return Err(format!("lfu: empty bucket of frequency {}", bk.freq));
            }
            bk.pages.validate(&self.links, "lfu bucket")?;
            for f in bk.pages.iter(&self.links) {
                if self.bucket_of[f as usize] != b {
                    return Err(format!("lfu: frame {f} listed in bucket {b}, says another"));
                }
                held.push(f);
            }
            last_freq = bk.freq;
            prev = b;
            b = bk.higher;
        }
        if n_buckets + self.free_buckets.len() != self.buckets.len() {
            return Err(format!(
                "lfu: {n_buckets} buckets in use + {} free != {}",
                self.free_buckets.len(),
                self.buckets.len()
            ));
        }
        let tagged = self.bucket_of.iter().filter(|&&b| b != NIL).count();
        if tagged != held.len() {
            return Err(format!(
                "lfu: {tagged} frames tagged, {} listed",
                held.len()
            ));
        }
        crate::policy::registry::check_holds_exactly(mm, held.into_iter(), "lfu")
    }
}

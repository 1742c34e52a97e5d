//! MQ, the Multi-Queue algorithm (Zhou, Philbin & Li, "The Multi-Queue Replacement Algorithm
//! for Second Level Buffer Caches", USENIX ATC'01: its pseudocode, procedures Access,
//! EvictBlock and Adjust).
//!
//! m LRU queues Q0..Q(m−1); a page with reference count f lives in Q(min(⌊log2 f⌋, m−1)).
//! Each access (hit or insert) sets the page's expiry to `now + lifeTime` and then runs
//! Adjust: the clock ticks, and in each queue Qk (k ≥ 1) the LRU page, if expired, is demoted
//! to the MRU end of Q(k−1) with a new expiry. The victim is the LRU page of the lowest
//! non-empty queue; its page number and count go to Qout, a FIFO history, and a miss on a
//! page still in Qout restores its count (plus one for this access).
//!
//! Follows libCacheSim's `MQ.c`, which implements that pseudocode with two choices the
//! paper leaves open or makes differently:
//! - `lifeTime` is a fixed number of accesses (knob `lifetime`, default 10,000), where the
//!   paper sets it adaptively to the peak temporal distance;
//! - Qout holds ⌊c · 4⌋ entries (knob `qout_size_ratio`; the paper's experiments also use
//!   four times the number of buffer blocks), m = 8 queues (knob `n_queue`, 1..=64).
//!
//! Counts saturate at `i32::MAX` as libCacheSim's do. Pages that arrive by readahead count as
//! first accesses and drop any Qout entry; pages that leave by `on_remove` leave none.

use super::ghost::PageMap;
use super::list::{Links, List};
use super::{Family, Insert, Policy, PolicyOptions, Touch};
use crate::error::{Error, Result};
use crate::mm::{FrameId, Mm, PTE_PRESENT};

const MAX_QUEUES: u32 = 64;
const FREQ_MAX: u32 = i32::MAX as u32;

#[derive(Debug)]
pub struct Mq {
    links: Links,
    queues: Vec<List>,
    /// Bit k set when Qk is not empty (finds the victim's queue in one instruction).
    nonempty: u64,
    queue_of: Vec<u8>,
    freq: Vec<u32>,
    expire: Vec<u64>,
    /// Accesses seen so far (the paper's CurrentTime); Adjust ticks it.
    now: u64,
    lifetime: u64,
    qout: History,
    /// The page of the miss being served and its count from Qout, if it was there.
    pending: Option<(u64, Option<u32>)>,
    qout_hits: u64,
    demotions: u64,
}

impl Mq {
    pub fn new(frames: u32, opts: &PolicyOptions) -> Result<Self> {
        let n: u32 = opts.get("n_queue", 8)?;
        let lifetime: u64 = opts.get("lifetime", 10_000)?;
        let ratio: f64 = opts.get("qout_size_ratio", 4.0)?;
        if !(1..=MAX_QUEUES).contains(&n) {
            return Err(Error::config(
                "option n_queue",
                format!("must be 1..={MAX_QUEUES}, got {n}"),
            ));
        }
        if lifetime == 0 {
            return Err(Error::config(
                "option lifetime",
                "must be at least 1, got 0",
            ));
        }
        if !(ratio > 0.0 && ratio <= 64.0) {
            return Err(Error::config(
                "option qout_size_ratio",
                format!("must be in (0, 64], got {ratio}"),
            ));
        }
        Ok(Mq {
            links: Links::new(frames as usize),
            queues: vec![List::default(); n as usize],
            nonempty: 0,
            queue_of: vec![0; frames as usize],
            freq: vec![0; frames as usize],
            expire: vec![0; frames as usize],
            now: 0,
            lifetime,
            qout: History::new((frames as f64 * ratio) as u32),
            pending: None,
            qout_hits: 0,
            demotions: 0,
        })
    }

    /// Pages per queue, Q0 first (tests).
    pub fn queue_lens(&self) -> Vec<u32> {
        self.queues.iter().map(|q| q.len).collect()
    }

    /// QueueNum(f) = min(⌊log2 f⌋, m − 1).
    #[inline]
    fn queue_num(&self, f: u32) -> usize {
        let top = self.queues.len() - 1;
        if f <= 1 {
            0
        } else {
            (f.ilog2() as usize).min(top)
        }
    }

    #[inline]
    fn link(&mut self, f: FrameId, q: usize) {
        self.queues[q].push_head(&mut self.links, f);
        self.nonempty |= 1 << q;
        self.queue_of[f as usize] = q as u8;
    }

    #[inline]
    fn unlink(&mut self, f: FrameId) {
        let q = self.queue_of[f as usize] as usize;
        self.queues[q].remove(&mut self.links, f);
        if self.queues[q].is_empty() {
            self.nonempty &= !(1 << q);
        }
    }

    /// Adjust: tick, then demote each queue's LRU page (Q1 up) if it has expired.
    #[inline]
    fn adjust(&mut self) {
        self.now += 1;
        let mut above = self.nonempty & !1;
        while above != 0 {
            let k = above.trailing_zeros() as usize;
            above &= above - 1;
            let f = self.queues[k].tail;
            if self.expire[f as usize] < self.now {
                self.unlink(f);
                self.link(f, k - 1);
                self.expire[f as usize] = self.now + self.lifetime;
                self.demotions += 1;
            }
        }
    }

    /// Put `f` with count `freq` at the MRU end of its queue, expiring `lifetime` from now.
    #[inline]
    fn place(&mut self, f: FrameId, freq: u32) {
        self.freq[f as usize] = freq;
        self.link(f, self.queue_num(freq));
        self.expire[f as usize] = self.now + self.lifetime;
        self.adjust();
    }
}

/// Qout: a FIFO of (page, count) that also loses entries from the middle (a page that comes
/// back); the oldest entry goes when it is full. One hash operation per call.
#[derive(Debug)]
struct History {
    links: Links,
    /// Slots, head = newest.
    order: List,
    vpn: Vec<u64>,
    freq: Vec<u32>,
    free: Vec<u32>,
    index: PageMap<u32>,
    cap: u32,
}

impl History {
    fn new(cap: u32) -> Self {
        let mut index = PageMap::default();
        index.reserve(cap as usize);
        History {
            links: Links::new(cap as usize),
            order: List::default(),
            vpn: vec![u64::MAX; cap as usize],
            freq: vec![0; cap as usize],
            free: (0..cap).rev().collect(),
            index,
            cap,
        }
    }

    /// Remove `vpn`; its count if it was there.
    fn take(&mut self, vpn: u64) -> Option<u32> {
        let s = self.index.remove(&vpn)?;
        self.order.remove(&mut self.links, s);
        self.free.push(s);
        Some(self.freq[s as usize])
    }

    /// Add `vpn` (not present: pages in Qout are never resident, victims always are).
    fn push(&mut self, vpn: u64, freq: u32) {
        if self.cap == 0 {
            return;
        }
        debug_assert!(
            !self.index.contains_key(&vpn),
            "page {vpn:#x} already in Qout"
        );
        let s = match self.free.pop() {
            Some(s) => s,
            None => {
                let s = self
                    .order
                    .pop_tail(&mut self.links)
                    .expect("full, not empty");
                self.index.remove(&self.vpn[s as usize]);
                s
            }
        };
        self.vpn[s as usize] = vpn;
        self.freq[s as usize] = freq;
        self.order.push_head(&mut self.links, s);
        self.index.insert(vpn, s);
    }

    /// (page, count) from newest to oldest (validation and tests).
    fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.order
            .iter(&self.links)
            .map(move |s| (self.vpn[s as usize], self.freq[s as usize]))
    }

    fn validate(&self) -> std::result::Result<(), String> {
        self.order.validate(&self.links, "mq Qout")?;
        for s in self.order.iter(&self.links) {
            let vpn = self.vpn[s as usize];
            if self.index.get(&vpn) != Some(&s) {
                return Err(format!("mq: Qout page {vpn:#x} not indexed"));
            }
        }
        if self.index.len() != self.order.len as usize
            || self.order.len as usize + self.free.len() != self.cap as usize
        {
            return Err(format!(
                "mq: Qout lists {}, indexes {}, has {} free of {}",
                self.order.len,
                self.index.len(),
                self.free.len(),
                self.cap
            ));
        }
        Ok(())
    }
}

impl Policy for Mq {
    fn name(&self) -> &'static str {
        "mq"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn prefetch(&self, f: FrameId) {
        crate::hint::prefetch(self.freq.as_ptr().wrapping_add(f as usize));
        crate::hint::prefetch(self.expire.as_ptr().wrapping_add(f as usize));
        self.links.prefetch(f);
    }
    #[inline]
    fn on_hit(&mut self, f: FrameId, _t: Touch) {
        self.unlink(f);
        let freq = (self.freq[f as usize] + 1).min(FREQ_MAX);
        self.place(f, freq);
    }
    fn on_miss(&mut self, t: Touch) {
        let seen = self.qout.take(t.vpn);
        self.qout_hits += seen.is_some() as u64;
        self.pending = Some((t.vpn, seen));
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, t: Touch, _how: Insert) {
        let seen = match self.pending {
            Some((vpn, seen)) if vpn == t.vpn => {
                self.pending = None;
                seen
            }
            // Readahead: not requested; a first access, and no longer in Qout.
            _ => {
                self.qout.take(t.vpn);
                None
            }
        };
        let freq = seen.map_or(1, |g| (g + 1).min(FREQ_MAX));
        self.place(f, freq);
    }
    #[inline]
    fn victim_hint(&self, k: usize) -> Option<FrameId> {
        if self.nonempty == 0 {
            return None;
        }
        let q = self.nonempty.trailing_zeros() as usize;
        self.queues[q].nth_from_tail(&self.links, k)
    }
    fn evict(&mut self, mm: &mut Mm) -> Option<FrameId> {
        if self.nonempty == 0 {
            return None;
        }
        let f = self.queues[self.nonempty.trailing_zeros() as usize].tail;
        self.qout.push(mm.owner(f), self.freq[f as usize]);
        self.unlink(f);
        Some(f)
    }
    fn on_remove(&mut self, f: FrameId) {
        self.unlink(f);
    }
    fn validate(&self, mm: &Mm) -> std::result::Result<(), String> {
        for (k, q) in self.queues.iter().enumerate() {
            q.validate(&self.links, "mq queue")?;
            if (self.nonempty >> k & 1 == 1) == q.is_empty() {
                return Err(format!("mq: non-empty mask wrong for Q{k}"));
            }
            for f in q.iter(&self.links) {
                if self.queue_of[f as usize] as usize != k {
                    return Err(format!(
                        "mq: frame {f} on Q{k} tagged Q{}",
                        self.queue_of[f as usize]
                    ));
                }
                let fq = self.freq[f as usize];
                // Demotion can put a page below its count's queue, never above it.
                if fq == 0 || self.queue_num(fq) < k {
                    return Err(format!("mq: frame {f} with count {fq} on Q{k}"));
                }
                if self.expire[f as usize] > self.now + self.lifetime {
                    return Err(format!("mq: frame {f} expires beyond now + lifetime"));
                }
            }
        }
        self.qout.validate()?;
        if let Some((vpn, _)) = self
            .qout
            .iter()
            .find(|&(v, _)| mm.pt.pte(v) & PTE_PRESENT != 0)
        {
            return Err(format!("mq: Qout page {vpn:#x} is resident"));
        }
        crate::policy::registry::check_holds_exactly(
            mm,
            self.queues.iter().flat_map(|q| q.iter(&self.links)),
            "mq",
        )
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![("qout_hits", self.qout_hits), ("demotions", self.demotions)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::by_hand::{frame_of, replay, resident};

    #[test]
    fn by_hand_three_frames_three_queues() {
        // c = 3, m = 3 (Q0: count 1, Q1: 2..3, Q2: ≥ 4), lifeTime = 3, Qout holds 3.
        // At each access: expiry = now + 3, then Adjust ticks `now` and demotes an expired
        // LRU page of Q1 / Q2 (expiry < now). Queues written MRU → LRU, page(count, expiry).
        //  t1  1 M  Q0 [1(1,3)]                                         now 1
        //  t2  1 H  Q1 [1(2,4)]                                         now 2
        //  t3  2 M  Q0 [2(1,5)]                                         now 3
        //  t4  3 M  Q0 [3 2]                                            now 4 (1: 4 < 4 no)
        //  t5  4 M  evict Q0's LRU 2 → Qout [2:1]; 4 → Q0; now 5: 1 expired (4 < 5) → Q0,
        //           expiry 8.                                 Q0 [1 4 3]
        //  t6  2 M  Qout has 2 (count 1 → 2); evict 3 → Qout [3:1]; 2 → Q1 (2,8). now 6
        //  t7  1 H  count 3 → Q1 [1(3,9) 2(2,8)].                        now 7
        //  t8  5 M  evict 4 → Qout [4 3]; 5 → Q0 (1,10).                 now 8 (2: 8 < 8 no)
        //  t9  1 H  count 4 → Q2 [1(4,11)]; now 9: 2 expired → Q0 [2 5], expiry 12.
        //  t10 3 M  Qout has 3 (1 → 2); evict 5 → Qout [5 4]; 3 → Q1 (2,12). now 10
        //  t11 6 M  evict 2 (count 2) → Qout [2 5 4]; 6 → Q0 (1,13).    now 11 (1: 11 < 11 no)
        //  t12 2 M  Qout has 2 (2 → 3); evict 6 → Qout [6 5 4]; 2 → Q1 [2(3,14) 3(2,12)];
        //           now 12: 1 expired (11 < 12) → Q1 [1(4,15) 2 3].
        //  t13 7 M  Q0 empty: evict Q1's LRU 3 → Qout full, 4 dropped: [3 6 5]; 7 → Q0. now 13
        //  t14 4 M  not in Qout any more; evict 7 → [7 3 6] (5 dropped); 4 → Q0. now 14
        //  t15 3 M  Qout has 3 (2 → 3); evict 4 → [4 7 6]; 3 → Q1 [3(3,17) 1 2(3,14)];
        //           now 15: 2 expired → Q0 [2], expiry 18.
        //  t16 5 M  not in Qout; evict 2 (count 3) → [2 4 7] (6 dropped); 5 → Q0 [5 ...];
        //           now 16: 1 expired (15 < 16) → Q0 [1 5], expiry 19.   Q1 [3]
        let trace = [1, 1, 2, 3, 4, 2, 1, 5, 1, 3, 6, 2, 7, 4, 3, 5];
        let opts = PolicyOptions::new(0)
            .with("n_queue", "3")
            .with("lifetime", "3")
            .with("qout_size_ratio", "1");
        let (seq, m) = replay(Mq::new(3, &opts).unwrap(), 3, &trace);
        assert_eq!(seq, "MHMMMMHMHMMMMMMM");
        assert_eq!(resident(&m, &trace), vec![1, 3, 5]);
        assert_eq!(m.policy.queue_lens(), vec![2, 1, 0]);
        assert_eq!(m.policy.freq[frame_of(&m, 1) as usize], 4);
        assert_eq!(m.policy.freq[frame_of(&m, 3) as usize], 3);
        // Qout, newest first, with the counts remembered.
        assert_eq!(
            m.policy.qout.iter().collect::<Vec<_>>(),
            vec![(2, 3), (4, 1), (7, 1)]
        );
        assert_eq!(
            m.policy.counters(),
            vec![("qout_hits", 4), ("demotions", 5)]
        );
    }
}

//! LRU-K (O'Neil, O'Neil & Weikum, "The LRU-K page replacement algorithm for database disk
//! buffering", SIGMOD'93): evict the page whose K-th most recent reference is oldest, i.e. whose
//! backward K-distance b(p, K) is largest (§2.1, Definitions 2.1-2.2). A page with fewer than K
//! references has b = ∞; the paper breaks ties among those with a subsidiary policy, and
//! libCacheSim (`cpp/LRU_K.cpp`) uses FIFO by insertion time, which this follows.
//!
//! Structure (no allocation per access, everything indexed by frame):
//! - `young`: a FIFO of resident pages with fewer than K references since they came in; a hit
//!   does not move a page in it (libCacheSim's `fifo_queue`), it only adds to its history;
//! - `heap`: an indexed binary min-heap of the other resident pages keyed by HIST(p, K), the
//!   time of their K-th most recent reference; a hit raises the key (sift down, O(log n)), the
//!   victim is the root, so no linear scan per miss;
//! - victims come from `young` first (b = ∞), oldest insertion first, then from the heap root.
//!
//! Where this (with libCacheSim) simplifies the paper:
//! - **Correlated Reference Period** (§2.1.3) is 0: every reference counts as uncorrelated
//!   and a page just referenced may be the victim.
//! - **Retained Information Period** (§2.1.4): by default a page's history is dropped when it
//!   is evicted, as libCacheSim's `LRU_K_evict` erases it, so a refaulted page starts again
//!   with one reference (b = ∞) and the history of non-resident pages is bounded by zero
//!   entries (memory is `K` timestamps per frame, whatever the trace); this is what the
//!   differential test compares. The paper keeps HIST(p) for a while after eviction (its
//!   Example 2.1 uses ~200 s) so that a page re-referenced soon comes back with its past.
//!   Option `retained` (default 0) keeps the histories of the last `retained` evicted pages,
//!   a count standing for the paper's period (vmemsim's time is accesses, not seconds), the
//!   oldest eviction forgotten first; a page that refaults while retained gets HIST(p)
//!   shifted by one and HIST(p, 1) = now, as the paper's miss branch does, and goes straight
//!   to the heap once that makes K references. The table is bounded by `retained` entries,
//!   allocated up front.
//! - Time is the index of the access in the trace (libCacheSim's `n_req`), so keys are unique.
//!
//! With K = 1 every page enters the heap at once and LRU-1 is exactly LRU.
//!
//! Knobs: `k` (default 2, 1..=64), `retained` (default 0: evicted pages' histories kept).

use super::list::{Links, List, NIL};
use super::{Family, Insert, Policy, PolicyOptions, Touch};
use crate::error::{Error, Result};
use crate::mm::{FrameId, Mm};
use crate::util::PageMap;

/// Upper bound on `k`: the history is `k` timestamps per frame.
const K_MAX: u32 = 64;

#[derive(Debug)]
pub struct LruK {
    k: u32,
    links: Links,
    /// Pages with fewer than K references, head = newest insertion.
    young: List,
    /// HIST(p, 1..=K) per frame, newest first: `hist[f*k + i]` is the (i+1)-th most recent
    /// reference time; only the first `nrefs[f]` are meaningful.
    hist: Vec<u64>,
    /// References since the page came in, saturating at K.
    nrefs: Vec<u32>,
    /// HIST(p, K) of each frame in the heap (its key), kept apart for compact comparisons.
    key: Vec<u64>,
    /// Min-heap of frames by `key`.
    heap: Vec<FrameId>,
    /// Index of each frame in `heap`, `NIL` if not there.
    pos: Vec<u32>,
    /// Pages that reached K references while resident.
    graduated: u64,
    /// Histories of evicted pages (the paper's retained information), at most `retained`.
    retained: Retained,
    /// Refaults that found their history retained.
    retained_hits: u64,
}

/// HIST of up to `cap` evicted pages in a slab of slots, found by page number; slots are
/// linked in eviction order (head = latest) so the oldest is forgotten first.
#[derive(Debug)]
struct Retained {
    cap: u32,
    k: usize,
    links: Links,
    order: List,
    free: Vec<u32>,
    page: Vec<u64>,
    hist: Vec<u64>,
    nrefs: Vec<u32>,
    index: PageMap<u32>,
    /// History taken out by `on_miss` for the page about to be inserted: (page, nrefs), and
    /// the timestamps in `pending_hist` (copied out so that the eviction in between can
    /// reuse the slot).
    pending: Option<(u64, u32)>,
    pending_hist: Vec<u64>,
}

impl Retained {
    fn new(cap: u32, k: usize) -> Self {
        let n = cap as usize;
        let mut index = PageMap::default();
        index.reserve(n);
        Retained {
            cap,
            k,
            links: Links::new(n),
            order: List::default(),
            free: (0..cap).rev().collect(),
            page: vec![u64::MAX; n],
            hist: vec![0; n * k],
            nrefs: vec![0; n],
            index,
            pending: None,
            pending_hist: vec![0; k],
        }
    }

    /// Keep `hist[..nrefs]` of evicted `page`, forgetting the oldest retained page if full.
    fn keep(&mut self, page: u64, hist: &[u64], nrefs: u32) {
        if self.cap == 0 {
            return;
        }
        if self.free.is_empty() {
            let old = self.order.pop_tail(&mut self.links).expect("a full table");
            self.index.remove(&self.page[old as usize]);
            self.free.push(old);
        }
        let s = self.free.pop().expect("a free slot");
        self.page[s as usize] = page;
        self.nrefs[s as usize] = nrefs;
        self.hist[s as usize * self.k..(s as usize + 1) * self.k].copy_from_slice(hist);
        self.order.push_head(&mut self.links, s);
        self.index.insert(page, s);
    }

    /// Move `page`'s history, if retained, out of the table into `pending`.
    fn take(&mut self, page: u64) -> bool {
        let Some(s) = self.index.remove(&page) else {
            return false;
        };
        self.order.remove(&mut self.links, s);
        self.page[s as usize] = u64::MAX;
        let k = self.k;
        self.pending_hist
            .copy_from_slice(&self.hist[s as usize * k..(s as usize + 1) * k]);
        self.pending = Some((page, self.nrefs[s as usize]));
        self.free.push(s);
        true
    }
}

impl LruK {
    pub fn new(frames: u32, opts: &PolicyOptions) -> Result<Self> {
        let k: u32 = opts.get("k", 2)?;
        if !(1..=K_MAX).contains(&k) {
            return Err(Error::config(
                "option k",
                format!("must be 1..={K_MAX} (references remembered per page), got {k}"),
            ));
        }
        let retained: u32 = opts.get("retained", 0)?;
        if retained > 1 << 26 {
            return Err(Error::config(
                "option retained",
                format!(
                    "must be at most {} evicted pages, got {retained}",
                    1u32 << 26
                ),
            ));
        }
        let n = frames as usize;
        Ok(LruK {
            k,
            links: Links::new(n),
            young: List::default(),
            hist: vec![0; n * k as usize],
            nrefs: vec![0; n],
            key: vec![0; n],
            heap: Vec::with_capacity(n),
            pos: vec![NIL; n],
            graduated: 0,
            retained: Retained::new(retained, k as usize),
            retained_hits: 0,
        })
    }

    /// The K in LRU-K.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// HIST(p, K) of frame `f`, `None` while it has fewer than K references (b = ∞).
    pub fn kth_reference(&self, f: FrameId) -> Option<u64> {
        (self.nrefs[f as usize] >= self.k).then(|| self.key[f as usize])
    }

    // ---- indexed min-heap on `key` ----

    #[inline]
    fn less(&self, a: FrameId, b: FrameId) -> bool {
        self.key[a as usize] < self.key[b as usize]
    }

    #[inline]
    fn place(&mut self, i: usize, f: FrameId) {
        self.heap[i] = f;
        self.pos[f as usize] = i as u32;
    }

    fn sift_up(&mut self, mut i: usize) {
        let f = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let p = self.heap[parent];
            if !self.less(f, p) {
                break;
            }
            self.place(i, p);
            i = parent;
        }
        self.place(i, f);
    }

    fn sift_down(&mut self, mut i: usize) {
        let f = self.heap[i];
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.less(self.heap[r], self.heap[l]) {
                r
            } else {
                l
            };
            if !self.less(self.heap[c], f) {
                break;
            }
            self.place(i, self.heap[c]);
            i = c;
        }
        self.place(i, f);
    }

    fn heap_push(&mut self, f: FrameId) {
        self.heap.push(f);
        let i = self.heap.len() - 1;
        self.pos[f as usize] = i as u32;
        self.sift_up(i);
    }

    fn heap_remove(&mut self, f: FrameId) {
        let i = self.pos[f as usize] as usize;
        self.pos[f as usize] = NIL;
        let last = self.heap.pop().expect("frame in heap");
        if last != f {
            self.heap[i] = last;
            self.pos[last as usize] = i as u32;
            self.sift_down(i);
            self.sift_up(self.pos[last as usize] as usize);
        }
    }
}

impl Policy for LruK {
    fn name(&self) -> &'static str {
        "lru-k"
    }
    fn family(&self) -> Family {
        Family::Demand
    }
    #[inline]
    fn prefetch(&self, f: FrameId) {
        crate::hint::prefetch(
            self.hist
                .as_ptr()
                .wrapping_add(f as usize * self.k as usize),
        );
    }
    #[inline]
    fn on_hit(&mut self, f: FrameId, t: Touch) {
        // §2.1: HIST(p) shifts by one and HIST(p, 1) becomes now (no correlated period).
        let k = self.k as usize;
        let h = &mut self.hist[f as usize * k..(f as usize + 1) * k];
        h.copy_within(0..k - 1, 1);
        h[0] = t.t;
        let kth = h[k - 1];
        let n = &mut self.nrefs[f as usize];
        if *n < self.k {
            *n += 1;
            if *n == self.k {
                // b(p, K) becomes finite: leave the FIFO of infinite distances.
                self.young.remove(&mut self.links, f);
                self.key[f as usize] = kth;
                self.heap_push(f);
                self.graduated += 1;
            }
        } else {
            // The key only grows: sift down.
            self.key[f as usize] = kth;
            let i = self.pos[f as usize] as usize;
            self.sift_down(i);
        }
    }
    fn on_miss(&mut self, t: Touch) {
        if self.retained.cap > 0 {
            self.retained.pending = None;
            self.retained.take(t.vpn);
        }
    }
    fn on_insert(&mut self, _mm: &Mm, f: FrameId, t: Touch, _how: Insert) {
        let k = self.k as usize;
        let h = &mut self.hist[f as usize * k..(f as usize + 1) * k];
        let mut n = 1;
        if self.retained.cap > 0 {
            let r = &mut self.retained;
            if !matches!(r.pending, Some((vpn, _)) if vpn == t.vpn) {
                // Readahead (no `on_miss`): a resident page must not stay retained.
                r.pending = None;
                r.take(t.vpn);
            }
            if let Some((_, old_n)) = r.pending.take() {
                // §2.1.4, the miss branch: HIST(p, i) := HIST(p, i−1), HIST(p, 1) := now.
                h[1..].copy_from_slice(&r.pending_hist[..k - 1]);
                n = (old_n + 1).min(self.k);
                self.retained_hits += 1;
            }
        }
        h[0] = t.t;
        self.nrefs[f as usize] = n;
        if n == self.k {
            self.key[f as usize] = h[k - 1];
            self.heap_push(f);
        } else {
            self.young.push_head(&mut self.links, f);
        }
    }
    #[inline]
    fn victim_hint(&self, k: usize) -> Option<FrameId> {
        if k == 0 {
            if self.young.tail != NIL {
                return Some(self.young.tail);
            }
            return self.heap.first().copied();
        }
        self.young.nth_from_tail(&self.links, k)
    }
    fn evict(&mut self, mm: &mut Mm) -> Option<FrameId> {
        let f = match self.young.pop_tail(&mut self.links) {
            Some(f) => f,
            None => {
                let f = *self.heap.first()?;
                self.heap_remove(f);
                f
            }
        };
        if self.retained.cap > 0 {
            let k = self.k as usize;
            let h = &self.hist[f as usize * k..(f as usize + 1) * k];
            self.retained.keep(mm.owner(f), h, self.nrefs[f as usize]);
        }
        Some(f)
    }
    fn on_remove(&mut self, f: FrameId) {
        if self.pos[f as usize] != NIL {
            self.heap_remove(f);
        } else {
            self.young.remove(&mut self.links, f);
        }
    }
    fn validate(&self, mm: &Mm) -> std::result::Result<(), String> {
        self.young.validate(&self.links, "lru-k young")?;
        let k = self.k as usize;
        for f in self.young.iter(&self.links) {
            let n = self.nrefs[f as usize];
            if n == 0 || n >= self.k || self.pos[f as usize] != NIL {
                return Err(format!(
                    "lru-k: young frame {f} has {n} refs or is in the heap"
                ));
            }
        }
        for (i, &f) in self.heap.iter().enumerate() {
            if self.pos[f as usize] as usize != i {
                return Err(format!(
                    "lru-k: frame {f} at heap slot {i} says {}",
                    self.pos[f as usize]
                ));
            }
            if self.nrefs[f as usize] != self.k {
                return Err(format!(
                    "lru-k: heap frame {f} has {} refs",
                    self.nrefs[f as usize]
                ));
            }
            let h = &self.hist[f as usize * k..(f as usize + 1) * k];
            if self.key[f as usize] != h[k - 1] || h.windows(2).any(|w| w[0] < w[1]) {
                return Err(format!(
                    "lru-k: frame {f} history {h:?} key {}",
                    self.key[f as usize]
                ));
            }
            if i > 0 && self.less(f, self.heap[(i - 1) / 2]) {
                return Err(format!("lru-k: heap order broken at slot {i}"));
            }
        }
        let r = &self.retained;
        r.order.validate(&r.links, "lru-k retained")?;
        if r.index.len() != r.order.len as usize || r.order.len + r.free.len() as u32 != r.cap {
            return Err(format!(
                "lru-k retained: {} indexed, {} listed, {} free, cap {}",
                r.index.len(),
                r.order.len,
                r.free.len(),
                r.cap
            ));
        }
        for s in r.order.iter(&r.links) {
            let vpn = r.page[s as usize];
            if r.index.get(&vpn) != Some(&s) {
                return Err(format!("lru-k retained: page {vpn:#x} not indexed"));
            }
            if mm.pt.pte(vpn) & crate::mm::PTE_PRESENT != 0 {
                return Err(format!("lru-k retained: page {vpn:#x} is resident"));
            }
        }
        crate::policy::registry::check_holds_exactly(
            mm,
            self.young
                .iter(&self.links)
                .chain(self.heap.iter().copied()),
            "lru-k",
        )
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("graduated", self.graduated),
            ("retained_hits", self.retained_hits),
        ]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::engine::{Machine, MachineConfig};
    use crate::mm::PTE_PRESENT;
    use crate::policy::Policy;
    use crate::Access;

    /// Replays `pages` with every invariant checked after every access; returns, per access,
    /// `None` for a hit, `Some(None)` for a miss that evicted nothing, `Some(Some(v))` for a
    /// miss that evicted page `v`.
    pub(crate) fn steps<P: Policy>(
        p: P,
        frames: u32,
        pages: &[u64],
    ) -> (Vec<Option<Option<u64>>>, Machine<P>) {
        let cfg = MachineConfig {
            check_invariants: true,
            ..MachineConfig::new(frames)
        };
        let mut m = Machine::new(&cfg, p).unwrap();
        let mut all: Vec<u64> = pages.to_vec();
        all.sort_unstable();
        all.dedup();
        let resident = |m: &Machine<P>| -> Vec<u64> {
            all.iter()
                .copied()
                .filter(|&v| m.mm.pt.pte(v) & PTE_PRESENT != 0)
                .collect()
        };
        let mut out = Vec::new();
        for &v in pages {
            let before = resident(&m);
            let faults = m.stats.faults;
            m.access(Access::read(v), u64::MAX);
            let after = resident(&m);
            if m.stats.faults == faults {
                out.push(None);
            } else {
                let gone: Vec<u64> = before.into_iter().filter(|x| !after.contains(x)).collect();
                assert!(gone.len() <= 1, "one victim per miss: {gone:?}");
                out.push(Some(gone.first().copied()));
            }
        }
        (out, m)
    }

    fn lru_k(frames: u32, k: u32) -> super::LruK {
        let opts = crate::policy::PolicyOptions::new(0).with("k", &k.to_string());
        super::LruK::new(frames, &opts).unwrap()
    }

    /// LRU-2 on 3 frames, worked by hand from §2.1 of the paper (b = ∞ pages leave first,
    /// oldest insertion first; then the largest backward 2-distance = smallest HIST(p, 2)).
    /// `young` lists b = ∞ pages oldest first; `heap` lists page:HIST(p,2).
    ///
    /// ```text
    ///  t page          young    heap
    ///  0  A miss       [A]
    ///  1  B miss       [A B]
    ///  2  A hit        [B]      A:0
    ///  3  C miss       [B C]    A:0
    ///  4  D miss, -B   [C D]    A:0          (LRU would also evict B)
    ///  5  C hit        [D]      A:0 C:3
    ///  6  E miss, -D   [E]      A:0 C:3      (LRU would evict A: last refs A2 C5 D4)
    ///  7  E hit        []       A:0 C:3 E:6
    ///  8  F miss, -A   [F]      C:3 E:6
    ///  9  C hit        [F]      C:5 E:6
    /// 10  A miss, -F   [A]      C:5 E:6      (A's history was dropped: it is young again)
    /// 11  E hit        [A]      C:5 E:7
    /// 12  B miss, -A   [B]      C:5 E:7
    /// 13  B hit        []       C:5 E:7 B:12
    /// 14  G miss, -C   [G]      E:7 B:12
    /// 15  C miss, -G   [C]      E:7 B:12
    /// 16  E hit        [C]      E:11 B:12
    /// 17  C hit        []       E:11 B:12 C:15
    /// 18  H miss, -E   [H]      B:12 C:15    (LRU would evict B: last refs B13 E16 C17)
    /// ```
    #[test]
    fn lru2_by_hand() {
        let (a, b, c, d, e, f, g, h) = (1, 2, 3, 4, 5, 6, 7, 8);
        let trace = [a, b, a, c, d, c, e, e, f, c, a, e, b, b, g, c, e, c, h];
        let miss = |v: u64| Some(Some(v));
        let cold = Some(None);
        let expect = vec![
            cold,
            cold,
            None,
            cold,
            miss(b),
            None,
            miss(d),
            None,
            miss(a),
            None,
            miss(f),
            None,
            miss(a),
            None,
            miss(c),
            miss(g),
            None,
            None,
            miss(e),
        ];
        assert_eq!(steps(lru_k(3, 2), 3, &trace).0, expect);
    }

    /// K = 1 is LRU, victim for victim: on the trace above it evicts A at t6 (LRU-2: D).
    #[test]
    fn lru1_is_lru() {
        let trace = [1, 2, 1, 3, 4, 3, 5, 5, 6, 3, 1, 5, 2, 2, 7, 3, 5, 3, 8];
        let ours = steps(lru_k(3, 1), 3, &trace).0;
        let lru = steps(crate::policy::lru::Lru::new(3), 3, &trace).0;
        assert_eq!(ours, lru);
        assert_eq!(ours[6], Some(Some(1)));
    }

    /// LRU-2 on 2 frames keeping the histories of the last 2 evicted pages (`retained` = 2,
    /// the paper's Retained Information Period as a count). `R` is the retained table,
    /// oldest eviction first; a refault with a retained history shifts it (§2.1.4) and, with
    /// 2 references, enters the heap at once.
    ///
    /// ```text
    ///  t page              young  heap        R
    ///  0 A miss            [A]
    ///  1 B miss            [A B]
    ///  2 C miss, -A        [B C]              A{0}
    ///  3 A miss (A{0}), -B [C]    A:0         B{1}          A back with HIST (3, 0)
    ///  4 D miss, -C        [D]    A:0         B{1} C{2}
    ///  5 B miss (B{1}), -D []     A:0 B:1     C{2} D{4}
    ///  6 E miss, -A        [E]    B:1         D{4} A{3,0}   C forgotten (table full)
    ///  7 C miss, -E        [C]    B:1         A{3,0} E{6}   C starts afresh; D forgotten
    ///  8 A miss (A{3,0}),  []     B:1 A:3     E{6} C{7}
    ///    -C
    ///  9 B hit             []     A:3 B:5
    /// 10 F miss, -A        [F]    B:5         C{7} A{8,3}
    /// ```
    /// Without retention (libCacheSim) t3 would put A in `young` and t6 would evict D.
    #[test]
    fn retained_history_by_hand() {
        let (a, b, c, d, e, f) = (1, 2, 3, 4, 5, 6);
        let opts = crate::policy::PolicyOptions::new(0).with("retained", "2");
        let p = super::LruK::new(2, &opts).unwrap();
        let trace = [a, b, c, a, d, b, e, c, a, b, f];
        let miss = |v: u64| Some(Some(v));
        let cold = Some(None);
        let expect = vec![
            cold,
            cold,
            miss(a),
            miss(b),
            miss(c),
            miss(d),
            miss(a),
            miss(e),
            miss(c),
            None,
            miss(a),
        ];
        let (got, m) = steps(p, 2, &trace);
        assert_eq!(got, expect);
        let counters: std::collections::BTreeMap<_, _> = m.policy.counters().into_iter().collect();
        assert_eq!(counters["retained_hits"], 3);
        let r = &m.policy.retained;
        let kept: Vec<u64> = r.order.iter(&r.links).map(|s| r.page[s as usize]).collect();
        assert_eq!(kept, vec![a, c]);
        // The default keeps nothing: the same trace as libCacheSim's LRU_K evicts D at t6.
        let (plain, _) = steps(lru_k(2, 2), 2, &trace);
        assert_eq!(plain[6], miss(d));
    }

    #[test]
    fn k_is_validated() {
        for bad in ["0", "65", "x"] {
            let opts = crate::policy::PolicyOptions::new(0).with("k", bad);
            let e = super::LruK::new(4, &opts).unwrap_err().to_string();
            assert!(e.contains("option k"), "{e}");
        }
    }
}

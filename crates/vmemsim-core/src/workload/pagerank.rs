//! `pagerank`: the GAP Benchmark Suite's pull PageRank (`pr.cc`, `PageRankPull`) on a
//! Kronecker (RMAT) graph, 12 threads (seed 001 §IV; §V-B: "multiple iterations of
//! parallelized sparse matrix multiplication", work per thread varying with vertex degree).
//!
//! # Graph
//!
//! GAP's generator (`generator.h`, `MakeRMatEL`) draws `edge_factor × 2^scale` edges, each
//! by `scale` choices of a quadrant with probabilities A = 0.57, B = 0.19, C = 0.19 (D =
//! 0.05, as Graph500), permutes the vertex ids at random (`PermuteIDs`), and symmetrizes the
//! graph (`-g` implies `-s`): each edge is stored in both endpoints' lists, one CSR serving
//! as in- and out-edges. This model draws the same graph vertex by vertex, so that no edge
//! list is stored: a vertex with `k` one-bits in its RMAT id is an endpoint of each edge with
//! probability p = 0.76^(scale−k) 0.24^k (A + B = A + C = 0.76), so its degree is binomial
//! with 2 × edges trials; given the vertex's bit at a level, the other endpoint's bit is 1
//! with probability B / (A + B) = 0.25 after a 0 and D / (C + D) ≈ 0.208 after a 1. Degrees
//! and neighbour lists come from per-vertex random streams, so any thread can regenerate any
//! vertex's list (8 levels per draw, from alias tables), sorted as GAP's builder sorts it. The binomial is drawn as a Poisson below
//! a mean of 30 and as a rounded normal above (p ≤ 0.76^scale is small). GAP's builder also
//! removes self-loops and duplicate edges (about 2% of the edges of its kron graphs); they
//! are kept here. Every endpoint's list is drawn independently, so the graph is not exactly
//! symmetric, but each list has the distribution of a symmetrized RMAT list.
//!
//! # Layout and streams
//!
//! CSR arrays as GAP allocates them: offsets (`n + 1` × 8 B, `Numeric`), neighbours
//! (degree sum × 4 B, `Numeric`), scores and outgoing contributions (`n` × 4 B floats,
//! `Random`: they do not compress). Footprint: exactly those pages.
//!
//! - Build: each thread writes its static block (equal vertex count) of offsets, its
//!   neighbour lists and its initial scores; barrier. (GAP builds the CSR from an edge list
//!   with scattered writes and frees it; that transient memory is not modelled.)
//! - Each iteration: (1) `outgoing_contrib[n] = scores[n] / out_degree(n)` over each thread's
//!   static block (reads scores and offsets, writes contributions); barrier. (2) the pull:
//!   for each vertex `u`, read its offsets and neighbour list and the contribution of every
//!   neighbour (random reads, ascending), then write `scores[u]`; barrier between iterations.
//!   Vertices are divided among threads in contiguous blocks of equal vertex count (`chunk` =
//!   0, an OpenMP static schedule), so per-thread work follows the degrees in each block; with
//!   `chunk` = c > 0, blocks of c vertices are dealt round-robin (`schedule(static, c)`).
//!   GAP itself uses `schedule(dynamic, 64)` for the pull, whose assignment depends on timing,
//!   which a generator that does not see the clock cannot follow.
//! - Sequential arrays (offsets, neighbours, scores, and contributions in step 1) are
//!   referenced once per page they cross; the stream references them again after a vertex of
//!   256 or more neighbours, whose contribution reads come in between.
//!
//! Costs (estimates, config keys): `edge_ns` = 5 ns per neighbour (load an id, load its
//! contribution, add: a DRAM miss per edge overlapped about tenfold), `vertex_ns` = 10 ns per
//! vertex per loop (the same per vertex and edge for the build).
//!
//! # Memory
//!
//! The edge offset of every 64th vertex (n / 8 bytes); the vertex permutation and its
//! inverse as tables (8 bytes per vertex) up to 2^22 vertices, a Feistel network (no table)
//! above; the alias tables (512 KiB); per thread, the neighbour list of its current vertex.
//! Nothing else: lists are regenerated on every iteration (at the default scale 19, about
//! 25 ns per list entry, which is most of the generation time).

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::common::{derive, split, stream, Emitter, Layout, CHUNK_OPS, PAGE_BYTES};
use super::params::{fmt_size, Params};
use super::{bad_tid, Op, Workload};
use crate::device::ContentClass;
use crate::error::Result;
use crate::util::mix64;

const KEYS: &[&str] = &[
    "scale",
    "footprint",
    "edge_factor",
    "iterations",
    "threads",
    "chunk",
    "edge_ns",
    "vertex_ns",
    "seed",
];

/// Graph500 / GAP RMAT quadrant probabilities.
pub const RMAT_A: f64 = 0.57;
pub const RMAT_B: f64 = 0.19;
pub const RMAT_C: f64 = 0.19;
pub const RMAT_D: f64 = 1.0 - RMAT_A - RMAT_B - RMAT_C;

const TAG_DEG: u64 = 0x6465;
const TAG_NBR: u64 = 0x6E62;
const TAG_PERM: u64 = 0x7065;
/// Vertex ids are permuted with tables up to this many vertices.
const TABLE_MAX: u64 = 1 << 22;
/// After a vertex with this many neighbours, sequential arrays are referenced again.
const LONG_LIST: u64 = 256;

/// A seeded permutation of `0..2^bits` and its inverse.
#[derive(Clone, Debug)]
struct Perm {
    n: u64,
    fwd: Vec<u32>,
    inv: Vec<u32>,
    half: u32,
    keys: [u64; 4],
}

impl Perm {
    fn new(bits: u32, seed: u64) -> Perm {
        let n = 1u64 << bits;
        let half = bits.div_ceil(2);
        let mut keys = [0u64; 4];
        for (i, k) in keys.iter_mut().enumerate() {
            *k = derive(seed, TAG_PERM, i as u64 + 1);
        }
        let (mut fwd, mut inv) = (Vec::new(), Vec::new());
        if n <= TABLE_MAX {
            fwd = (0..n as u32).collect();
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(derive(seed, TAG_PERM, 0));
            for i in (1..fwd.len()).rev() {
                let j = rng.gen_range(0..=i);
                fwd.swap(i, j);
            }
            inv = vec![0; n as usize];
            for (i, &y) in fwd.iter().enumerate() {
                inv[y as usize] = i as u32;
            }
        }
        Perm {
            n,
            fwd,
            inv,
            half,
            keys,
        }
    }
    fn round(&self, r: u64, k: u64) -> u64 {
        mix64(r ^ k) & ((1u64 << self.half) - 1)
    }
    /// Balanced Feistel network on 2 × `half` bits, cycle-walked into `0..n`.
    fn feistel(&self, mut x: u64, forward: bool) -> u64 {
        let mask = (1u64 << self.half) - 1;
        loop {
            let (mut l, mut r) = (x >> self.half, x & mask);
            if forward {
                for &k in &self.keys {
                    (l, r) = (r, l ^ self.round(r, k));
                }
            } else {
                for &k in self.keys.iter().rev() {
                    (l, r) = (r ^ self.round(l, k), l);
                }
            }
            x = (l << self.half) | r;
            if x < self.n {
                return x;
            }
        }
    }
    #[inline]
    fn apply(&self, x: u64) -> u64 {
        match self.fwd.get(x as usize) {
            Some(&y) => y as u64,
            None => self.feistel(x, true),
        }
    }
    #[inline]
    fn invert(&self, y: u64) -> u64 {
        match self.inv.get(y as usize) {
            Some(&x) => x as u64,
            None => self.feistel(y, false),
        }
    }
}

/// For each pattern of 8 bits of a vertex's RMAT id, Walker's alias table (Vose's
/// construction) of the 256 joint outcomes of the other endpoint's 8 bits, each bit 1 with
/// probability `q[0]` where the vertex's bit is 0 and `q[1]` where it is 1 (independent
/// levels). One draw: 8 random bits pick a column, 32 more accept it or take its alias.
#[derive(Clone, Debug)]
struct ByteAlias {
    /// `[pattern × 256 + column]`: acceptance threshold (of 2^32) << 8 | alias.
    table: Vec<u64>,
}

impl ByteAlias {
    fn prob(q: [f64; 2], pattern: usize, x: usize) -> f64 {
        (0..8)
            .map(|i| {
                let qi = q[(pattern >> i) & 1];
                if (x >> i) & 1 == 1 {
                    qi
                } else {
                    1.0 - qi
                }
            })
            .product()
    }

    fn new(q: [f64; 2]) -> ByteAlias {
        let mut table = vec![0u64; 256 * 256];
        for pattern in 0..256 {
            let mut scaled: Vec<f64> = (0..256)
                .map(|x| Self::prob(q, pattern, x) * 256.0)
                .collect();
            let mut small: Vec<usize> = (0..256).filter(|&x| scaled[x] < 1.0).collect();
            let mut large: Vec<usize> = (0..256).filter(|&x| scaled[x] >= 1.0).collect();
            let row = &mut table[pattern * 256..(pattern + 1) * 256];
            while let (Some(&l), Some(&g)) = (small.last(), large.last()) {
                small.pop();
                row[l] = (((scaled[l] * 4_294_967_296.0) as u64) << 8) | g as u64;
                scaled[g] -= 1.0 - scaled[l];
                if scaled[g] < 1.0 {
                    large.pop();
                    small.push(g);
                }
            }
            // Left over (1 up to rounding): always accepted.
            for x in small.into_iter().chain(large) {
                row[x] = (1u64 << 40) | x as u64;
            }
        }
        ByteAlias { table }
    }

    #[inline]
    fn sample(&self, pattern: usize, random: u64) -> u64 {
        let col = (random & 0xff) as usize;
        let e = self.table[pattern * 256 + col];
        if (random >> 32) < (e >> 8) {
            col as u64
        } else {
            e & 0xff
        }
    }
}

#[derive(Clone, Debug)]
struct Config {
    scale: u32,
    edge_factor: u64,
    iterations: u64,
    threads: usize,
    chunk: u64,
    edge_ns: u64,
    vertex_ns: u64,
    seed: u64,
}

#[derive(Clone, Copy, Debug)]
enum Stage {
    Build,
    /// Step 1 of iteration `iter`: contributions of vertex `u` onwards (static block).
    Contrib {
        iter: u64,
        u: u64,
    },
    /// Step 2 (the pull) of iteration `iter`.
    Pull {
        iter: u64,
    },
    Done,
}

#[derive(Clone, Debug)]
struct ThreadState {
    em: Emitter,
    stage: Stage,
    /// Pending sequential page writes `[page, end)` with their cost per page.
    pending: Vec<(u64, u64, u64)>,
    /// Pull: next vertex, end of the current range, next range index.
    u: u64,
    hi: u64,
    range: u64,
    /// Pull: edge offset of `u`, its sorted neighbours, the next one to read.
    off: u64,
    nbrs: Vec<u32>,
    next_nbr: usize,
    in_vertex: bool,
    /// Last page referenced in each sequential array (offsets, neighbours, scores, contrib).
    cursor: [u64; 4],
}

/// The `pagerank` workload (see the module docs).
pub struct PageRank {
    cfg: Config,
    n: u64,
    /// P(endpoint) by number of one-bits, and the mean degree.
    mean_by_ones: Vec<(f64, f64)>,
    /// The other endpoint's id, 8 levels at a time.
    alias: ByteAlias,
    perm: Perm,
    /// Edge offset of vertex 64 i.
    ckpt: Vec<u64>,
    total: u64,
    layout: Layout,
    offsets: u64,
    neighbors: u64,
    scores: u64,
    contrib: u64,
    threads: Vec<ThreadState>,
}

/// Pages of the CSR arrays for a graph of `2^scale` vertices and `entries` list entries.
fn pages_for(scale: u32, entries: u64) -> u64 {
    let n = 1u64 << scale;
    ((n + 1) * 8).div_ceil(PAGE_BYTES)
        + (entries * 4).div_ceil(PAGE_BYTES)
        + 2 * (n * 4).div_ceil(PAGE_BYTES)
}

impl PageRank {
    pub(crate) fn parse(text: &str, run_seed: u64) -> Result<PageRank> {
        let p = Params::parse("pagerank", text, KEYS)?;
        let edge_factor = p.u64_in("edge_factor", 16, 1, 1 << 16)?;
        let scale = match (p.size("footprint")?, p.has("scale")) {
            (Some(_), true) => return Err(p.err("scale", "give footprint or scale, not both")),
            (Some(f), false) => {
                // The scale whose expected footprint is nearest (in ratio) to the target.
                let target = (f / PAGE_BYTES).max(1) as f64;
                (1..=32u32)
                    .min_by(|&a, &b| {
                        let da = (pages_for(a, (2 * edge_factor) << a) as f64 / target)
                            .ln()
                            .abs();
                        let db = (pages_for(b, (2 * edge_factor) << b) as f64 / target)
                            .ln()
                            .abs();
                        da.total_cmp(&db)
                    })
                    .filter(|&s| pages_for(s, (2 * edge_factor) << s) as f64 <= 2.0 * target)
                    .ok_or_else(|| {
                        p.err(
                            "footprint",
                            format!("{} is too small for a graph", fmt_size(f)),
                        )
                    })?
            }
            (None, _) => p.u64_in("scale", 19, 1, 32)? as u32,
        };
        // The graph's tables (the vertex permutation and degree checkpoints, ~12 B per
        // vertex) and the footprint's page table, before anything is built.
        let pages = pages_for(scale, (2 * edge_factor) << scale);
        crate::util::check_memory(
            if p.has("scale") {
                "pagerank.scale"
            } else {
                "pagerank.footprint"
            },
            &format!("a graph of 2^{scale} vertices ({pages} pages)"),
            (1u64 << scale) * 12 + pages * crate::util::BYTES_PER_PAGE,
        )?;
        let cfg = Config {
            scale,
            edge_factor,
            iterations: p.u64_in("iterations", 5, 1, 1 << 20)?,
            threads: p.u64_in("threads", 12, 1, 1024)? as usize,
            chunk: p.u64_in("chunk", 0, 0, 1 << 40)?,
            edge_ns: p.u64_in("edge_ns", 5, 0, 1 << 32)?,
            vertex_ns: p.u64_in("vertex_ns", 10, 0, 1 << 32)?,
            seed: p.seed(run_seed)?,
        };
        Ok(PageRank::build(cfg))
    }

    fn build(cfg: Config) -> PageRank {
        let s = cfg.scale;
        let n = 1u64 << s;
        let edges = cfg.edge_factor * n;
        let mean_by_ones = (0..=s)
            .map(|k| {
                let p = (RMAT_A + RMAT_B).powi((s - k) as i32) * (RMAT_C + RMAT_D).powi(k as i32);
                (p, 2.0 * edges as f64 * p)
            })
            .collect();
        let mut pr = PageRank {
            perm: Perm::new(s, cfg.seed),
            n,
            mean_by_ones,
            alias: ByteAlias::new([RMAT_B / (RMAT_A + RMAT_B), RMAT_D / (RMAT_C + RMAT_D)]),
            ckpt: Vec::new(),
            total: 0,
            layout: Layout::default(),
            offsets: 0,
            neighbors: 0,
            scores: 0,
            contrib: 0,
            threads: Vec::new(),
            cfg,
        };
        let mut ckpt = Vec::with_capacity((n / 64 + 1) as usize);
        let mut total = 0;
        for u in 0..n {
            if u % 64 == 0 {
                ckpt.push(total);
            }
            total += pr.degree(u);
        }
        pr.ckpt = ckpt;
        pr.total = total;
        let mut l = Layout::default();
        pr.offsets = l.alloc("offsets", (n + 1) * 8, ContentClass::Numeric);
        pr.neighbors = l.alloc("neighbors", total * 4, ContentClass::Numeric);
        pr.scores = l.alloc("scores", n * 4, ContentClass::Random);
        pr.contrib = l.alloc("outgoing_contrib", n * 4, ContentClass::Random);
        pr.layout = l;
        pr.threads = (0..pr.cfg.threads)
            .map(|_| ThreadState {
                em: Emitter::default(),
                stage: Stage::Build,
                pending: Vec::new(),
                u: 0,
                hi: 0,
                range: 0,
                off: 0,
                nbrs: Vec::new(),
                next_nbr: 0,
                in_vertex: false,
                cursor: [u64::MAX; 4],
            })
            .collect();
        pr
    }

    /// Vertices (`2^scale`).
    pub fn vertices(&self) -> u64 {
        self.n
    }

    /// Sum of the degrees (list entries of the CSR).
    pub fn entries(&self) -> u64 {
        self.total
    }

    /// Degree of vertex `u` (its final, permuted id).
    pub fn degree(&self, u: u64) -> u64 {
        let r = self.perm.invert(u);
        let (p, mu) = self.mean_by_ones[r.count_ones() as usize];
        let mut rng = stream(self.cfg.seed, TAG_DEG, r);
        if mu < 30.0 {
            // Poisson by multiplying uniforms (Knuth).
            let limit = (-mu).exp();
            let mut k = 0;
            let mut prod: f64 = rng.gen();
            while prod > limit {
                k += 1;
                prod *= rng.gen::<f64>();
            }
            k
        } else {
            let (u1, u2): (f64, f64) = (rng.gen(), rng.gen());
            let z = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            (mu + z * (mu * (1.0 - p)).sqrt()).round().max(0.0) as u64
        }
    }

    /// Edge offset of vertex `u` (sum of the degrees before it).
    pub fn offset(&self, u: u64) -> u64 {
        let base = u & !63;
        let mut off = self
            .ckpt
            .get((u / 64) as usize)
            .copied()
            .unwrap_or(self.total);
        for w in base..u.min(self.n) {
            off += self.degree(w);
        }
        off
    }

    /// Sorted neighbour ids of vertex `u` into `out`.
    pub fn neighbors_of(&self, u: u64, out: &mut Vec<u32>) {
        out.clear();
        let d = self.degree(u);
        let r = self.perm.invert(u);
        let s = self.cfg.scale;
        let mut rng = stream(self.cfg.seed, TAG_NBR, r);
        let groups = s.div_ceil(8);
        for _ in 0..d {
            let mut v = 0u64;
            for g in 0..groups {
                let b = (r >> (8 * g)) & 0xff;
                v |= self.alias.sample(b as usize, rng.gen()) << (8 * g);
            }
            v &= self.n - 1;
            out.push(self.perm.apply(v) as u32);
        }
        out.sort_unstable();
    }

    /// The vertex ranges thread `tid` pulls: its `i`-th range, if any.
    fn pull_range(&self, tid: usize, i: u64) -> Option<(u64, u64)> {
        let t = self.cfg.threads as u64;
        if self.cfg.chunk == 0 {
            return (i == 0).then(|| split(self.n, t, tid as u64));
        }
        let k = i * t + tid as u64;
        let lo = k.checked_mul(self.cfg.chunk)?;
        (lo < self.n).then(|| (lo, (lo + self.cfg.chunk).min(self.n)))
    }

    /// Reference page `page` of sequential array `a` unless it was its last page.
    #[inline]
    fn seq(st: &mut ThreadState, buf: &mut Vec<Op>, a: usize, page: u64, write: bool) {
        if st.cursor[a] != page {
            st.cursor[a] = page;
            st.em.access(buf, page, write);
        }
    }

    fn advance(&self, tid: usize, st: &mut ThreadState, buf: &mut Vec<Op>) {
        if let Some(w) = st.pending.last_mut() {
            st.em.compute(w.2);
            st.em.access(buf, w.0, true);
            w.0 += 1;
            if w.0 == w.1 {
                st.pending.pop();
            }
            return;
        }
        let t = self.cfg.threads as u64;
        let (lo, hi) = split(self.n, t, tid as u64);
        match st.stage {
            Stage::Build => {
                if st.u == 0 && st.hi == 0 {
                    // Queue the three sequential fills (popped from the end: offsets first).
                    let last = tid as u64 == t - 1;
                    let (e0, e1) = (self.offset(lo), self.offset(hi));
                    let mut q = Vec::new();
                    let range = |start: u64, b0: u64, b1: u64| {
                        (start + b0 / PAGE_BYTES, start + b1.div_ceil(PAGE_BYTES))
                    };
                    let (a, b) = range(self.offsets, lo * 8, (hi + last as u64) * 8);
                    if b > a {
                        q.push((a, b, self.cfg.vertex_ns * (hi - lo) / (b - a)));
                    }
                    let (a, b) = range(self.neighbors, e0 * 4, e1 * 4);
                    if e1 > e0 && b > a {
                        q.push((a, b, self.cfg.edge_ns * (e1 - e0) / (b - a)));
                    }
                    let (a, b) = range(self.scores, lo * 4, hi * 4);
                    if b > a {
                        q.push((a, b, 0));
                    }
                    q.reverse();
                    st.pending = q;
                    st.hi = 1;
                } else {
                    st.em.barrier(buf);
                    st.stage = Stage::Contrib { iter: 0, u: lo };
                    st.cursor = [u64::MAX; 4];
                }
            }
            Stage::Contrib { iter, u } => {
                if u >= hi {
                    st.em.barrier(buf);
                    st.stage = Stage::Pull { iter };
                    st.range = 0;
                    st.u = 0;
                    st.hi = 0;
                    st.in_vertex = false;
                    st.cursor = [u64::MAX; 4];
                    return;
                }
                // A page's worth of vertices at a time (bounded work per call).
                let end = hi.min(u + 1024);
                for v in u..end {
                    st.em.compute(self.cfg.vertex_ns);
                    Self::seq(st, buf, 2, self.scores + v * 4 / PAGE_BYTES, false);
                    Self::seq(st, buf, 0, self.offsets + v * 8 / PAGE_BYTES, false);
                    Self::seq(st, buf, 0, self.offsets + (v * 8 + 8) / PAGE_BYTES, false);
                    Self::seq(st, buf, 3, self.contrib + v * 4 / PAGE_BYTES, true);
                }
                st.stage = Stage::Contrib { iter, u: end };
            }
            Stage::Pull { iter } => {
                if !st.in_vertex {
                    if st.u >= st.hi {
                        match self.pull_range(tid, st.range) {
                            Some((a, b)) => {
                                st.range += 1;
                                st.u = a;
                                st.hi = b;
                                st.off = self.offset(a);
                                return;
                            }
                            None => {
                                if iter + 1 == self.cfg.iterations {
                                    st.em.flush(buf);
                                    st.stage = Stage::Done;
                                } else {
                                    st.em.barrier(buf);
                                    st.stage = Stage::Contrib {
                                        iter: iter + 1,
                                        u: lo,
                                    };
                                    st.cursor = [u64::MAX; 4];
                                }
                                return;
                            }
                        }
                    }
                    let u = st.u;
                    self.neighbors_of(u, &mut st.nbrs);
                    if st.nbrs.len() as u64 >= LONG_LIST {
                        st.cursor = [u64::MAX; 4];
                    }
                    st.em.compute(self.cfg.vertex_ns);
                    Self::seq(st, buf, 0, self.offsets + u * 8 / PAGE_BYTES, false);
                    Self::seq(st, buf, 0, self.offsets + (u * 8 + 8) / PAGE_BYTES, false);
                    st.next_nbr = 0;
                    st.in_vertex = true;
                }
                let d = st.nbrs.len();
                let stop = d.min(st.next_nbr + 2048);
                for i in st.next_nbr..stop {
                    let e = st.off + i as u64;
                    Self::seq(st, buf, 1, self.neighbors + e * 4 / PAGE_BYTES, false);
                    st.em.compute(self.cfg.edge_ns);
                    let v = st.nbrs[i] as u64;
                    st.em.access(buf, self.contrib + v * 4 / PAGE_BYTES, false);
                }
                st.next_nbr = stop;
                if stop == d {
                    if d as u64 >= LONG_LIST {
                        st.cursor = [u64::MAX; 4];
                    }
                    Self::seq(st, buf, 2, self.scores + st.u * 4 / PAGE_BYTES, true);
                    st.off += d as u64;
                    st.u += 1;
                    st.in_vertex = false;
                }
            }
            Stage::Done => {}
        }
    }
}

impl Workload for PageRank {
    fn name(&self) -> String {
        let c = &self.cfg;
        format!(
            "pagerank:scale={},edge_factor={},iterations={},threads={},chunk={},edge_ns={},vertex_ns={},seed={}",
            c.scale, c.edge_factor, c.iterations, c.threads, c.chunk, c.edge_ns, c.vertex_ns, c.seed
        )
    }

    fn threads(&self) -> usize {
        self.cfg.threads
    }

    fn footprint_pages(&self) -> u64 {
        self.layout.end()
    }

    fn content_class(&self, _pid: u32, page: u64) -> ContentClass {
        self.layout.class_of(page)
    }

    fn next_ops(&mut self, tid: usize, buf: &mut Vec<Op>) -> Result<()> {
        if tid >= self.cfg.threads {
            return Err(bad_tid("pagerank", tid, self.cfg.threads));
        }
        let mut st = std::mem::replace(
            &mut self.threads[tid],
            ThreadState {
                em: Emitter::default(),
                stage: Stage::Done,
                pending: Vec::new(),
                u: 0,
                hi: 0,
                range: 0,
                off: 0,
                nbrs: Vec::new(),
                next_nbr: 0,
                in_vertex: false,
                cursor: [0; 4],
            },
        );
        let start = buf.len();
        while !matches!(st.stage, Stage::Done) && buf.len() - start < CHUNK_OPS {
            self.advance(tid, &mut st, buf);
        }
        self.threads[tid] = st;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::workload::parse;

    #[test]
    fn permutation_inverts() {
        for bits in [1u32, 4, 7] {
            let p = Perm::new(bits, 3);
            let mut seen = vec![false; 1 << bits];
            for x in 0..1u64 << bits {
                let y = p.apply(x);
                assert!(!seen[y as usize]);
                seen[y as usize] = true;
                assert_eq!(p.invert(y), x);
                // The Feistel network used above the table limit is a bijection too.
                let f = p.feistel(x, true);
                assert!(f < 1 << bits);
                assert_eq!(p.feistel(f, false), x);
            }
        }
    }

    #[test]
    fn alias_tables_reproduce_the_bit_probabilities() {
        let q = [0.25, 0.05 / 0.24];
        let a = ByteAlias::new(q);
        for pattern in [0usize, 0xff, 0b1010_0110] {
            let mut p = [0.0f64; 256];
            for col in 0..256 {
                let e = a.table[pattern * 256 + col];
                let keep = ((e >> 8) as f64 / 4_294_967_296.0).min(1.0);
                p[col] += keep / 256.0;
                p[(e & 0xff) as usize] += (1.0 - keep) / 256.0;
            }
            for (x, got) in p.iter().enumerate() {
                let want = ByteAlias::prob(q, pattern, x);
                assert!(
                    (got - want).abs() < 1e-9,
                    "pattern {pattern:#x} x {x}: {got} vs {want}"
                );
            }
        }
        // All zeros: every bit 1 with probability 1/4, so 0xff has probability 4^-8.
        assert!((ByteAlias::prob(q, 0, 0xff) - 0.25f64.powi(8)).abs() < 1e-15);
    }

    #[test]
    fn degrees_follow_rmat() {
        let w = PageRank::parse("scale=14,edge_factor=8,threads=4", 5).unwrap();
        let n = 1u64 << 14;
        let draws = 2.0 * 8.0 * n as f64;
        // Entries: sum of independent binomials with total mean 2 × edges.
        assert!(
            (w.entries() as f64 - draws).abs() < 5.0 * draws.sqrt(),
            "{}",
            w.entries()
        );
        // The hub (RMAT id 0) is an endpoint of each draw with probability 0.76^14.
        let hub = w.perm.apply(0);
        let mu = draws * 0.76f64.powi(14);
        let sd = (mu * (1.0 - 0.76f64.powi(14))).sqrt();
        assert!(
            (w.degree(hub) as f64 - mu).abs() < 5.0 * sd,
            "{} vs {mu}",
            w.degree(hub)
        );
        // Isolated vertices: sum over one-bit counts k of C(14, k) e^{-mu_k}.
        let mut binom = 1.0;
        let mut expect0 = 0.0;
        for k in 0..=14i32 {
            if k > 0 {
                binom = binom * (15 - k) as f64 / k as f64;
            }
            let mu_k = draws * 0.76f64.powi(14 - k) * 0.24f64.powi(k);
            expect0 += binom * (-mu_k).exp();
        }
        let zeros = (0..n).filter(|&u| w.degree(u) == 0).count() as f64;
        assert!(
            (zeros - expect0).abs() < 5.0 * expect0.sqrt() + 5.0,
            "{zeros} vs {expect0}"
        );
        // Neighbours of the hub: each bit is 1 with probability 0.25 given the hub's 0 bits,
        // so a neighbour has on average 14 × 0.25 = 3.5 one-bits in its RMAT id.
        let mut l = Vec::new();
        w.neighbors_of(hub, &mut l);
        assert_eq!(l.len() as u64, w.degree(hub));
        assert!(l.windows(2).all(|p| p[0] <= p[1]));
        let ones: f64 = l
            .iter()
            .map(|&v| w.perm.invert(v as u64).count_ones() as f64)
            .sum::<f64>()
            / l.len() as f64;
        assert!((ones - 3.5).abs() < 0.1, "{ones}");
        assert_eq!(w.offset(n), w.entries());
    }

    #[test]
    fn footprint_barriers_and_skew() {
        let mut w = PageRank::parse("scale=17,edge_factor=2,iterations=2,threads=6", 3).unwrap();
        let s = drain(&mut w, Order::RoundRobin);
        assert_eq!(distinct_pages(&s), w.footprint_pages());
        assert_eq!(w.footprint_pages(), pages_for(17, w.entries()));
        for st in &s {
            // Build, then (contrib, pull) per iteration: 1 + 2 × 2 − 1 barriers.
            assert_eq!(barriers(st), 4);
        }
        // Pull of iteration 0 is phase 2. Its compute time is exactly vertex_ns per vertex
        // plus edge_ns per neighbour of the thread's block.
        let n = w.vertices();
        let mut edges = Vec::new();
        for (t, st) in s.iter().enumerate() {
            let (lo, hi) = split(n, 6, t as u64);
            let e: u64 = (lo..hi).map(|u| w.degree(u)).sum();
            assert_eq!(
                compute_ns(phase(st, 2)),
                10 * (hi - lo) + 5 * e,
                "thread {t}"
            );
            edges.push(e as f64);
        }
        // Equal vertex counts, unequal degrees: the blocks' edge counts, hence their CPU time
        // in the pull, differ.
        let ratio = edges.iter().cloned().fold(f64::MIN, f64::max)
            / edges.iter().cloned().fold(f64::MAX, f64::min);
        assert!(ratio > 1.05, "edge ratio {ratio}");
        // Accesses of the pull, bounded from the lists: at least one per distinct
        // contribution page of each vertex's sorted list; at most that, plus one per page
        // crossed in the offsets, neighbour and score arrays, plus one contribution run
        // broken by each neighbour-page crossing, plus re-references around long lists.
        let mut l = Vec::new();
        for (t, st) in s.iter().enumerate() {
            let (lo, hi) = split(n, 6, t as u64);
            let (mut distinct, mut long) = (0u64, 0u64);
            for u in lo..hi {
                w.neighbors_of(u, &mut l);
                let mut last = u64::MAX;
                for &v in &l {
                    if v as u64 / 1024 != last {
                        distinct += 1;
                        last = v as u64 / 1024;
                    }
                }
                long += (l.len() as u64 >= LONG_LIST) as u64;
            }
            let e = edges[t] as u64;
            let v = hi - lo;
            let crossings = (v * 8 / 4096 + 2) + 2 * (e * 4 / 4096 + 2) + (v * 4 / 4096 + 2);
            let a = accesses(phase(st, 2)) as u64;
            assert!(a >= distinct, "thread {t}: {a} < {distinct}");
            assert!(
                a <= distinct + crossings + 8 * long,
                "thread {t}: {a} > {distinct} + {crossings} + 8 × {long}"
            );
        }
    }

    #[test]
    fn determinism_and_polling_order() {
        let spec = "pagerank:scale=11,edge_factor=4,iterations=2,threads=4,chunk=64";
        let mut a = parse(spec, 1).unwrap();
        let mut b = parse(spec, 1).unwrap();
        let mut c = parse(spec, 2).unwrap();
        let sa = drain(a.as_mut(), Order::RoundRobin);
        assert_eq!(sa, drain(b.as_mut(), Order::ReverseSerial));
        assert_ne!(sa, drain(c.as_mut(), Order::Shuffled(5)));
        assert_eq!(distinct_pages(&sa), a.footprint_pages());
        assert_eq!(
            a.name(),
            "pagerank:scale=11,edge_factor=4,iterations=2,threads=4,chunk=64,edge_ns=5,vertex_ns=10,seed=1"
        );
        let mut again = parse(&a.name(), 99).unwrap();
        assert_eq!(drain(again.as_mut(), Order::RoundRobin), sa);
    }

    #[test]
    fn footprint_key_picks_scale() {
        // 2^19 vertices, 16.8 M entries: 1,025 + 16,384 + 2 × 512 = 18,433 pages (72 MiB),
        // nearer (in ratio) to 96 MiB than scale 20's 36,865 pages (144 MiB).
        let w = PageRank::parse("footprint=96MiB", 0).unwrap();
        assert_eq!(w.cfg.scale, 19);
        let w = PageRank::parse("", 0).unwrap();
        assert_eq!((w.cfg.scale, w.threads()), (19, 12));
        assert_eq!(w.content_class(0, w.neighbors), ContentClass::Numeric);
        assert_eq!(w.content_class(0, w.contrib), ContentClass::Random);
    }

    #[test]
    fn spec_errors_name_the_key() {
        let e = |s: &str| parse(s, 0).err().unwrap().to_string();
        assert_eq!(
            e("pagerank:scale=40"),
            "pagerank.scale: 40 is outside [1, 32]"
        );
        assert_eq!(
            e("pagerank:scale=10,footprint=1GiB"),
            "pagerank.scale: give footprint or scale, not both"
        );
        assert_eq!(
            e("pagerank:iterations=0"),
            "pagerank.iterations: 0 is outside [1, 1048576]"
        );
        assert_eq!(
            e("pagerank:footprint=1"),
            "pagerank.footprint: 1 is too small for a graph"
        );
        assert!(e("pagerank:edges=3")
            .starts_with("pagerank.edges: unknown key for pagerank (valid: scale,"));
    }
}

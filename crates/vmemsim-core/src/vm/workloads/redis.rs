//! `redis-like`: a Redis server under an open-loop GET/SET load at a given request rate
//! (seed 000 plotted redis-benchmark latency against requests per second under FIFO and
//! clock shadow-page eviction and TDP).
//!
//! # The server (Redis 7's memory layout, jemalloc 5)
//!
//! Redis runs as process 0. `vcpus` server threads (default 1: Redis executes commands on one
//! thread) each own one client connection: a query buffer (`client->querybuf`, big enough for
//! a SET of one value) and a 16 KiB reply buffer (`client->buf`, `PROTO_REPLY_CHUNK_BYTES`).
//! The keyspace is one `dict`: a table of `2^k` 8-byte bucket pointers, the smallest power of
//! two ≥ `keys` (at least 4; `_dictExpandIfNeeded` grows the table when it holds as many
//! entries as buckets; the model allocates the final table up front and leaves incremental
//! rehashing out); per key a `dictEntry` (24 bytes, jemalloc class 32), the key `sds`
//! (`key:` and 12 digits as redis-benchmark's `key:__rand_int__`, 20 bytes with its `sdshdr8`
//! header and terminator: class 32), a `robj` (16 bytes) and the value `sds` (header of 3, 5
//! or 9 bytes by length, the value, a terminator; values up to 44 bytes are embedded in the
//! `robj`, `OBJ_ENCODING_EMBSTR`, one allocation of 16 + 3 + len + 1). jemalloc keeps each
//! size class in its own slabs, so each kind of object is an array in order of allocation
//! (the load inserts keys in order); sizes are rounded up to jemalloc's size classes
//! ([`jemalloc_class`]).
//!
//! # Streams
//!
//! Load phase: key `k` is SET by vCPU `k mod vcpus` (query buffer written, bucket, entry,
//! key, robj and value written), not timed as requests; then a `Barrier`. Run phase: each
//! vCPU serves its share of `requests` (or every arrival before `duration_s`): `Arrive`, then
//! `RequestBegin`, the query buffer's first page written (`read` into it), `parse_ns`, the
//! bucket page, entry, key and robj read, then GET (`REQ_READ`, probability `get`): the
//! value read and copied into the reply buffer (written); SET of an existing key
//! (`REQ_UPDATE`): the query buffer written over the value's length, the robj and value
//! written (in place), the bucket written, one reply page written (`+OK`); `reply_ns`,
//! `RequestEnd`. Keys are `zipfian` (YCSB's scrambled zipfian over the keys: a rank drawn
//! with exponent `zipf`, hashed with FNV-1a, modulo `keys`) or `uniform`.
//!
//! Arrivals: vCPU `v` serves the requests of its own clients at `rps / vcpus` per second,
//! Poisson (exponential gaps from the vCPU's random stream) or `fixed` (the merged stream of
//! all vCPUs evenly spaced `1/rps` apart). `at_ns` is `start_ns` plus the arrival's offset;
//! the VM layer counts it from the vCPU's last barrier (see [`Op::Arrive`]), which here
//! is the end of the load phase, so arrivals do not queue behind the load.
//!
//! Costs (estimates): `parse_ns` = 3,000 ns for the `read` system call and parsing the
//! command, `reply_ns` = 4,000 ns for building the reply and the `write` system call
//! (redis-benchmark without pipelining reaches ~100–150 k requests/s per core, 7–10 µs each).
//!
//! Footprint: image (8 text, 2 data, 2 stack pages), client buffers, the bucket pages that
//! some key hashes to, the object arrays: exact when every client has served a GET (the
//! reply pages beyond the first are counted for every client).
//!
//! # Left out
//!
//! The network stack and client processes, the event loop (`epoll_wait`), incremental
//! rehashing, key expiry, SET's allocation of a new value object (the model writes in
//! place so addresses stay fixed), big replies in the reply list, RDB/AOF persistence,
//! lazy freeing, jemalloc's thread caches and extent layout (each array is one contiguous
//! run), text pages touched per request.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::{bad_vcpu, GuestEmitter, Image};
use crate::device::ContentClass;
use crate::error::Result;
use crate::generate::Zipf;
use crate::workload::common::{derive, pages_of, split, stream, Layout, CHUNK_OPS, PAGE_BYTES};
use crate::workload::params::Params;
use crate::workload::ycsb::fnv64;
use crate::workload::{Op, Workload};
use crate::workload::{REQ_READ, REQ_UPDATE};

const KEYS: &[&str] = &[
    "rps",
    "arrivals",
    "vcpus",
    "keys",
    "value_bytes",
    "get",
    "dist",
    "zipf",
    "requests",
    "duration_s",
    "start_ns",
    "parse_ns",
    "reply_ns",
    "seed",
];
const ARRIVALS: &[&str] = &["poisson", "fixed"];
const DISTS: &[&str] = &["zipfian", "uniform"];

const IMAGE: Image = Image {
    text: 8,
    data: 2,
    stack: 2,
};
/// `sizeof(dictEntry)` 24 → jemalloc class 32.
const ENTRY_BYTES: u64 = 32;
/// `key:` + 12 digits in an `sdshdr8` (3 + 16 + 1 = 20) → class 32.
const KEY_BYTES: u64 = 32;
/// `sizeof(robj)`.
const ROBJ_BYTES: u64 = 16;
/// `OBJ_ENCODING_EMBSTR_SIZE_LIMIT`.
const EMBSTR_MAX: u64 = 44;
/// `PROTO_REPLY_CHUNK_BYTES`.
const REPLY_BYTES: u64 = 16 << 10;
/// Room in the query buffer for the command around a SET's value (`*3 $3 SET $16 key...`).
const COMMAND_BYTES: u64 = 64;

const TAG_HASH: u64 = 0x5248;
const TAG_VCPU: u64 = 0x5276;

/// jemalloc 5's size class for a request of `size` bytes on x86-64 (16-byte quantum, 4 KiB
/// pages): 8, 16, then multiples of 16 up to 128, then four classes per doubling (a size in
/// `(2^k, 2^(k+1)]` is rounded up to a multiple of `2^(k-2)`), which past 14 KiB are the
/// page-multiple large classes.
pub fn jemalloc_class(size: u64) -> u64 {
    match size {
        0..=8 => 8,
        9..=128 => size.div_ceil(16) * 16,
        _ => {
            let k = 63 - (size - 1).leading_zeros() as u64; // 2^k < size <= 2^(k+1)
            let step = 1u64 << (k - 2);
            size.div_ceil(step) * step
        }
    }
}

/// `sdsReqType` header bytes for a string of `len` bytes.
fn sds_header(len: u64) -> u64 {
    if len < 1 << 8 {
        3
    } else if len < 1 << 16 {
        5
    } else {
        9
    }
}

#[derive(Clone, Debug)]
struct Config {
    rps: f64,
    fixed: bool,
    vcpus: usize,
    keys: u64,
    value_bytes: u64,
    get: f64,
    uniform: bool,
    zipf: f64,
    /// `Some(total)` or the duration in ns.
    requests: Option<u64>,
    duration_s: f64,
    start_ns: u64,
    parse_ns: u64,
    reply_ns: u64,
    seed: u64,
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    Start,
    Load { next: u64 },
    Run { served: u64 },
    Done,
}

#[derive(Debug)]
struct Server {
    rng: Xoshiro256PlusPlus,
    phase: Phase,
    em: GuestEmitter,
    /// Requests this vCPU serves (`None`: until `duration_s`).
    quota: Option<u64>,
    /// Poisson clock: the last arrival's offset from `start_ns`, ns.
    at: f64,
}

/// Where one array of objects lives: first page, object size, bytes used per object.
#[derive(Clone, Copy, Debug)]
struct Array {
    start: u64,
    slot: u64,
    len: u64,
}

impl Array {
    fn addr(&self, k: u64) -> u64 {
        self.start * PAGE_BYTES + k * self.slot
    }
    /// Pages touched when objects `0..n` are written in full.
    fn pages(&self, n: u64) -> u64 {
        if n == 0 || self.len == 0 {
            0
        } else {
            ((n - 1) * self.slot + self.len - 1) / PAGE_BYTES + 1
        }
    }
}

/// The Redis model (see the module docs).
pub struct RedisLike {
    cfg: Config,
    query: u64,
    query_pages: u64,
    reply: u64,
    reply_pages: u64,
    table: u64,
    buckets: u64,
    entries: Array,
    keynames: Array,
    robjs: Array,
    /// Separate value strings (`None` when embedded in the robj).
    values: Option<Array>,
    footprint: u64,
    zipf: Zipf,
    servers: Vec<Server>,
}

impl RedisLike {
    pub(crate) fn parse(text: &str, run_seed: u64) -> Result<RedisLike> {
        let p = Params::parse("redis-like", text, KEYS)?;
        let mut cfg = Config {
            rps: p.f64_in("rps", 10_000.0, 1e-3, 1e9)?,
            fixed: p.choice("arrivals", 0, ARRIVALS)? == 1,
            vcpus: p.u64_in("vcpus", 1, 1, 1024)? as usize,
            keys: p.u64_in("keys", 100_000, 1, 1 << 32)?,
            value_bytes: p.u64_in("value_bytes", 1000, 1, 512 << 20)?,
            get: p.f64_in("get", 0.9, 0.0, 1.0)?,
            uniform: p.choice("dist", 0, DISTS)? == 1,
            zipf: p.f64_in("zipf", 0.99, 0.0, 10.0)?,
            requests: None,
            duration_s: 0.0,
            start_ns: p.u64_in("start_ns", 0, 0, 1 << 60)?,
            parse_ns: p.u64_in("parse_ns", 3000, 0, 1 << 32)?,
            reply_ns: p.u64_in("reply_ns", 4000, 0, 1 << 32)?,
            seed: p.seed(run_seed)?,
        };
        if p.has("requests") && p.has("duration_s") {
            return Err(p.err("duration_s", "give requests or duration_s, not both"));
        }
        if p.has("duration_s") {
            cfg.duration_s = p.f64_in("duration_s", 1.0, 1e-9, 1e6)?;
        } else {
            cfg.requests = Some(p.u64_in("requests", 100_000, 0, 1 << 40)?);
        }
        Ok(RedisLike::build(cfg))
    }

    fn build(cfg: Config) -> RedisLike {
        let v = cfg.value_bytes;
        let n = cfg.keys;
        let mut layout = Layout::at(IMAGE.heap_base());
        let query_pages = pages_of(v + COMMAND_BYTES);
        let reply_pages = pages_of(REPLY_BYTES.min(v + 16));
        let query = layout.alloc(
            "query buffers",
            cfg.vcpus as u64 * query_pages * PAGE_BYTES,
            ContentClass::Text,
        );
        let reply = layout.alloc(
            "reply buffers",
            cfg.vcpus as u64 * pages_of(REPLY_BYTES) * PAGE_BYTES,
            ContentClass::Text,
        );
        let buckets = n.next_power_of_two().max(4);
        let table = layout.alloc("dict table", buckets * 8, ContentClass::Numeric);
        let mut array = |name: &str, slot: u64, len: u64| Array {
            start: layout.alloc(name, n * slot, ContentClass::Random),
            slot,
            len,
        };
        let entries = array("dictEntry", ENTRY_BYTES, ENTRY_BYTES);
        let keynames = array("key sds", KEY_BYTES, KEY_BYTES);
        let (robjs, values) = if v <= EMBSTR_MAX {
            let len = ROBJ_BYTES + 3 + v + 1;
            (array("embstr robj", jemalloc_class(len), len), None)
        } else {
            let robjs = array("robj", ROBJ_BYTES, ROBJ_BYTES);
            let len = sds_header(v) + v + 1;
            (robjs, Some(array("value sds", jemalloc_class(len), len)))
        };

        let bucket_pages = pages_of(buckets * 8);
        let mut touched = vec![false; bucket_pages as usize];
        for k in 0..n {
            let b = derive(cfg.seed, TAG_HASH, k) & (buckets - 1);
            touched[(b * 8 / PAGE_BYTES) as usize] = true;
        }
        // Clients that SET a key in the load: their query buffers are touched in full.
        let loaders = (cfg.vcpus as u64).min(n);
        let footprint = IMAGE.pages()
            + loaders * query_pages
            + cfg.vcpus as u64 * reply_pages
            + touched.iter().filter(|&&t| t).count() as u64
            + entries.pages(n)
            + keynames.pages(n)
            + robjs.pages(n)
            + values.map_or(0, |a| a.pages(n));

        let t = cfg.vcpus as u64;
        let servers = (0..cfg.vcpus)
            .map(|i| Server {
                rng: stream(cfg.seed, TAG_VCPU, i as u64),
                phase: Phase::Start,
                em: GuestEmitter::default(),
                quota: cfg.requests.map(|r| {
                    let (lo, hi) = split(r, t, i as u64);
                    hi - lo
                }),
                at: 0.0,
            })
            .collect();
        RedisLike {
            zipf: Zipf::new(n, cfg.zipf),
            cfg,
            query,
            query_pages,
            reply,
            reply_pages,
            table,
            buckets,
            entries,
            keynames,
            robjs,
            values,
            footprint,
            servers,
        }
    }

    fn bucket_page(&self, k: u64) -> u64 {
        let b = derive(self.cfg.seed, TAG_HASH, k) & (self.buckets - 1);
        self.table + b * 8 / PAGE_BYTES
    }

    /// The query buffer of vCPU `v`, first byte.
    fn query_addr(&self, v: usize) -> u64 {
        (self.query + v as u64 * self.query_pages) * PAGE_BYTES
    }

    fn reply_page(&self, v: usize) -> u64 {
        self.reply + v as u64 * pages_of(REPLY_BYTES)
    }

    /// A SET of key `k` (load or update): the command's value lands in the query buffer,
    /// the objects are written.
    fn set(&self, em: &mut GuestEmitter, buf: &mut Vec<Op>, v: usize, k: u64, new: bool) {
        em.range(
            buf,
            self.query_addr(v),
            self.cfg.value_bytes + COMMAND_BYTES,
            true,
        );
        em.compute(self.cfg.parse_ns);
        let bucket = self.bucket_page(k);
        em.access(buf, bucket, false);
        let e = &self.entries;
        em.range(buf, e.addr(k), e.len, new);
        em.range(buf, self.keynames.addr(k), self.keynames.len, new);
        em.range(buf, self.robjs.addr(k), self.robjs.len, true);
        if let Some(a) = &self.values {
            em.range(buf, a.addr(k), a.len, true);
        }
        em.access(buf, bucket, true);
        em.access(buf, self.reply_page(v), true);
        em.compute(self.cfg.reply_ns);
    }

    fn get(&self, em: &mut GuestEmitter, buf: &mut Vec<Op>, v: usize, k: u64) {
        em.access(buf, self.query_addr(v) / PAGE_BYTES, true);
        em.compute(self.cfg.parse_ns);
        em.access(buf, self.bucket_page(k), false);
        em.range(buf, self.entries.addr(k), self.entries.len, false);
        em.range(buf, self.keynames.addr(k), self.keynames.len, false);
        em.range(buf, self.robjs.addr(k), self.robjs.len, false);
        if let Some(a) = &self.values {
            em.range(buf, a.addr(k), a.len, false);
        }
        em.range(
            buf,
            self.reply_page(v) * PAGE_BYTES,
            self.reply_pages * PAGE_BYTES,
            true,
        );
        em.compute(self.cfg.reply_ns);
    }

    fn next_key(&self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        if self.cfg.uniform {
            rng.gen_range(0..self.cfg.keys)
        } else {
            fnv64(self.zipf.sample(rng) - 1) % self.cfg.keys
        }
    }

    /// Arrival time of vCPU `v`'s request `i` (0-based) in the fixed schedule.
    fn fixed_at(&self, v: usize, i: u64) -> u64 {
        let slot = i as f64 * self.cfg.vcpus as f64 + v as f64 + 1.0;
        self.cfg.start_ns + (slot * 1e9 / self.cfg.rps).round() as u64
    }

    fn step(&self, s: &mut Server, v: usize, buf: &mut Vec<Op>) {
        match s.phase {
            Phase::Start => {
                IMAGE.touch(&mut s.em, buf);
                s.phase = Phase::Load { next: v as u64 };
            }
            Phase::Load { next } => {
                if next < self.cfg.keys {
                    self.set(&mut s.em, buf, v, next, true);
                    s.phase = Phase::Load {
                        next: next + self.cfg.vcpus as u64,
                    };
                } else {
                    s.em.barrier(buf);
                    s.phase = Phase::Run { served: 0 };
                }
            }
            Phase::Run { served } => {
                let at_ns = if self.cfg.fixed {
                    self.fixed_at(v, served)
                } else {
                    let rate = self.cfg.rps / self.cfg.vcpus as f64;
                    let u: f64 = s.rng.gen();
                    s.at += -(1.0 - u).ln() / rate * 1e9;
                    self.cfg.start_ns + s.at.round() as u64
                };
                let more = match s.quota {
                    Some(q) => served < q,
                    None => at_ns < self.cfg.start_ns + (self.cfg.duration_s * 1e9) as u64,
                };
                if !more {
                    s.em.flush(buf);
                    s.phase = Phase::Done;
                    return;
                }
                s.em.event(buf, Op::Arrive { at_ns });
                let is_get = self.cfg.get >= 1.0 || s.rng.gen::<f64>() < self.cfg.get;
                let k = self.next_key(&mut s.rng);
                s.em.begin(buf, if is_get { REQ_READ } else { REQ_UPDATE });
                if is_get {
                    self.get(&mut s.em, buf, v, k);
                } else {
                    self.set(&mut s.em, buf, v, k, false);
                }
                s.em.end(buf);
                s.phase = Phase::Run { served: served + 1 };
            }
            Phase::Done => {}
        }
    }
}

impl Workload for RedisLike {
    fn name(&self) -> String {
        let c = &self.cfg;
        let amount = match c.requests {
            Some(r) => format!("requests={r}"),
            None => format!("duration_s={}", c.duration_s),
        };
        format!(
            "redis-like:rps={},arrivals={},vcpus={},keys={},value_bytes={},get={},dist={},zipf={},{amount},start_ns={},parse_ns={},reply_ns={},seed={}",
            c.rps,
            ARRIVALS[c.fixed as usize],
            c.vcpus,
            c.keys,
            c.value_bytes,
            c.get,
            DISTS[c.uniform as usize],
            c.zipf,
            c.start_ns,
            c.parse_ns,
            c.reply_ns,
            c.seed
        )
    }

    fn threads(&self) -> usize {
        self.cfg.vcpus
    }

    fn footprint_pages(&self) -> u64 {
        self.footprint
    }

    fn next_ops(&mut self, v: usize, buf: &mut Vec<Op>) -> Result<()> {
        if v >= self.cfg.vcpus {
            return Err(bad_vcpu("redis-like", v, self.cfg.vcpus));
        }
        let mut s = std::mem::replace(
            &mut self.servers[v],
            Server {
                rng: stream(0, 0, 0),
                phase: Phase::Done,
                em: GuestEmitter::default(),
                quota: None,
                at: 0.0,
            },
        );
        let start = buf.len();
        while buf.len() - start < CHUNK_OPS && !matches!(s.phase, Phase::Done) {
            self.step(&mut s, v, buf);
        }
        self.servers[v] = s;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::vm::workloads::parse;
    use crate::workload::Op;

    #[test]
    fn jemalloc_size_classes() {
        // jemalloc 5 on x86-64: ..., 96, 112, 128, 160, ..., 1024, ..., 4096, 5120, ...,
        // 14336, then 16 KiB, 20 KiB, ...
        for (size, class) in [
            (1, 8),
            (8, 8),
            (9, 16),
            (20, 32),
            (100, 112),
            (128, 128),
            (129, 160),
            (300, 320),
            (1004, 1024),
            (4006, 4096),
            (5000, 5120),
            (14336, 14336),
            (14337, 16384),
            (16385, 20480),
        ] {
            assert_eq!(jemalloc_class(size), class, "{size}");
        }
        assert_eq!(
            (sds_header(255), sds_header(256), sds_header(70000)),
            (3, 5, 9)
        );
    }

    #[test]
    fn footprint_by_hand() {
        // 1000 keys of 4000-byte values: image 12, query 1, reply 1, table 1024 × 8 B = 2
        // pages, dictEntry 32000 B = 8 pages, key sds 8 pages, robj 16000 B = 4 pages,
        // values 4006 B in 4096-byte slots = 1000 pages.
        let spec = "redis-like:keys=1000,value_bytes=4000,requests=2000";
        let (w, s) = run(spec, 1);
        assert_eq!(w.footprint_pages(), 12 + 1 + 1 + 2 + 8 + 8 + 4 + 1000);
        let c = census(&s);
        assert_eq!(c.distinct, w.footprint_pages());
        assert_eq!((c.spawns, c.exits, c.switches, c.unmaps), (0, 0, 0, 0));
        assert_eq!(c.barriers, 1);
        // Every load SET and every request costs parse_ns + reply_ns.
        assert_eq!(c.compute_ns, (1000 + 2000) * 7000);
        // Embedded values: 20 bytes → one 40-byte allocation (class 48) per key.
        let r = RedisLike::parse("keys=1000,value_bytes=20", 0).unwrap();
        assert!(r.values.is_none());
        assert_eq!((r.robjs.slot, r.robjs.len), (48, 40));
        let (w, s) = run("redis-like:keys=1000,value_bytes=20,requests=500", 2);
        assert_eq!(census(&s).distinct, w.footprint_pages());
        // Defaults: 100000 keys of 1000 bytes (1006-byte sds, class 1024): image 12, query
        // 1, reply 1, 131072 buckets = 256 pages, entries and keys 3.2 MB = 782 pages each,
        // robjs 1.6 MB = 391 pages, values (99999 × 1024 + 1006) bytes = 25000 pages.
        let w = RedisLike::parse("", 0).unwrap();
        assert_eq!(
            w.footprint_pages(),
            12 + 1 + 1 + 256 + 782 + 782 + 391 + 25000
        );
    }

    #[test]
    fn get_set_mix_and_load() {
        let (_, s) = run("redis-like:keys=500,value_bytes=100,requests=20000", 3);
        let c = census(&s);
        let (gets, sets) = (
            c.requests[REQ_READ as usize],
            c.requests[REQ_UPDATE as usize],
        );
        assert_eq!(gets + sets, 20000);
        assert_eq!(c.requests[2], 0, "the load is not timed as requests");
        // Binomial sd of the fraction: 0.0021; 0.015 is 7 sd.
        let frac = gets as f64 / 20000.0;
        assert!((frac - 0.9).abs() < 0.015, "{frac}");
        // The load phase: no request boundaries, no arrivals, 500 SETs each writing the
        // entry, key, robj, value, bucket, query and reply pages.
        let load: Vec<&Op> = s[0]
            .iter()
            .take_while(|o| !matches!(o, Op::Barrier))
            .collect();
        assert!(load
            .iter()
            .all(|o| !matches!(o, Op::Arrive { .. } | Op::RequestBegin { .. })));
        assert_eq!(c.arrivals[0].len(), 20000);
    }

    #[test]
    fn open_loop_arrivals() {
        // Poisson: mean rate within 3% of rps (sd 0.7% at 20000 arrivals), exponential
        // gaps (coefficient of variation 1).
        let (_, s) = run(
            "redis-like:keys=100,rps=20000,requests=20000,start_ns=777",
            4,
        );
        let a = &census(&s).arrivals[0];
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        assert!(a[0] >= 777);
        let rate = 20000.0 / ((a[19999] - 777) as f64 / 1e9);
        assert!((rate / 20000.0 - 1.0).abs() < 0.03, "{rate}");
        let gaps: Vec<f64> = a.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        let cv = var.sqrt() / mean;
        assert!((cv - 1.0).abs() < 0.05, "{cv}");
        // Fixed, two vCPUs at 1000/s from 5 ns: the merged arrivals are 1 ms apart.
        let (_, s) = run(
            "redis-like:keys=10,rps=1000,arrivals=fixed,vcpus=2,requests=10,start_ns=5",
            4,
        );
        let c = census(&s);
        let mut all: Vec<u64> = c.arrivals.concat();
        all.sort_unstable();
        assert_eq!(
            all,
            (1..=10).map(|i| 5 + i * 1_000_000).collect::<Vec<u64>>()
        );
        assert_eq!(
            c.arrivals[0],
            vec![1_000_005, 3_000_005, 5_000_005, 7_000_005, 9_000_005]
        );
        // duration_s: fixed arrivals at k × 100 µs strictly before 0.5 s: 4999 of them.
        let (_, s) = run("redis-like:keys=10,arrivals=fixed,duration_s=0.5", 4);
        assert_eq!(census(&s).arrivals[0].len(), 4999);
        let (_, s) = run("redis-like:keys=10,duration_s=0.5", 4);
        let n = census(&s).arrivals[0].len() as f64;
        assert!((n / 5000.0 - 1.0).abs() < 0.05, "{n}"); // Poisson sd 1.4%
    }

    /// Share of run-phase reads that go to the most read value page.
    fn top_share(s: &[Vec<Op>], w: &RedisLike) -> f64 {
        let values = w.values.unwrap();
        let mut counts = vec![0u64; 1000];
        let mut run = false;
        for op in &s[0] {
            match op {
                Op::Barrier => run = true,
                Op::Access { page, write: false }
                    if run && *page >= values.start && *page < values.start + 1000 =>
                {
                    counts[(page - values.start) as usize] += 1
                }
                _ => {}
            }
        }
        let total: u64 = counts.iter().sum();
        *counts.iter().max().unwrap() as f64 / total as f64
    }

    #[test]
    fn key_popularity() {
        // One value page per key (4096-byte slots). Zipf 0.99 over 1000 keys: the hottest
        // key takes 1/H(1000, 0.99) of the requests (plus ~0.1% from other ranks that the
        // FNV scramble maps to the same key).
        let h: f64 = (1..=1000).map(|k| (k as f64).powf(-0.99)).sum();
        let spec = "keys=1000,value_bytes=4000,get=1,requests=20000";
        let w = RedisLike::parse(spec, 5).unwrap();
        let (_, s) = run(&format!("redis-like:{spec}"), 5);
        let share = top_share(&s, &w);
        assert!((share - 1.0 / h).abs() < 0.012, "{share} vs {}", 1.0 / h);
        let w = RedisLike::parse(&format!("{spec},dist=uniform"), 5).unwrap();
        let (_, s) = run(&format!("redis-like:{spec},dist=uniform"), 5);
        // Uniform: 20 expected per key; the maximum of 1000 Poisson(20) is ~36 (0.18%).
        assert!(top_share(&s, &w) < 0.003);
    }

    #[test]
    fn determinism() {
        let spec = "redis-like:keys=300,vcpus=2,requests=3000,value_bytes=2000";
        let (w, a) = run(spec, 6);
        let mut again = parse(spec, 6).unwrap();
        assert_eq!(drain(again.as_mut(), Order::ReverseSerial), a);
        let (_, b) = run(spec, 7);
        assert_ne!(a, b);
        assert_eq!(
            w.name(),
            "redis-like:rps=10000,arrivals=poisson,vcpus=2,keys=300,value_bytes=2000,get=0.9,dist=zipfian,zipf=0.99,requests=3000,start_ns=0,parse_ns=3000,reply_ns=4000,seed=6"
        );
        let (_, c) = run(&w.name(), 0);
        assert_eq!(c, a);
        let w = parse("redis-like:duration_s=2.5", 1).unwrap();
        assert!(w.name().contains(",duration_s=2.5,"), "{}", w.name());
    }

    #[test]
    fn spec_errors_name_the_key() {
        let e = |s: &str| parse(s, 0).err().unwrap().to_string();
        assert_eq!(
            e("redis-like:requests=10,duration_s=1"),
            "redis-like.duration_s: give requests or duration_s, not both"
        );
        assert_eq!(
            e("redis-like:arrivals=bursty"),
            "redis-like.arrivals: 'bursty' is not one of poisson, fixed"
        );
        assert_eq!(
            e("redis-like:get=1.5"),
            "redis-like.get: 1.5 is outside [0, 1]"
        );
        assert_eq!(
            e("redis-like:rps=0"),
            "redis-like.rps: 0 is outside [0.001, 1000000000]"
        );
        assert_eq!(
            e("redis-like:keys=abc"),
            "redis-like.keys: 'abc' is not a whole number"
        );
        assert!(e("redis-like:qps=5").starts_with("redis-like.qps: unknown key for redis-like"));
    }
}

//! `ycsb-a`, `ycsb-b`, `ycsb-c`: YCSB core workloads A, B and C against a memcached-like
//! slab key-value store (seed 001 §IV: memcached with its default four server threads, 11 M
//! items loaded, then 110 M requests; zipfian keys).
//!
//! # The store (memcached 1.6's memory layout)
//!
//! - **Slab classes** (`slabs_init`): chunk sizes from 96 bytes (48-byte item header + 48)
//!   growing by the factor 1.25, rounded up to 8 bytes, up to 512 KiB; an item goes to the
//!   smallest class that holds it. Memory comes in 1 MiB slab pages; a new slab page is
//!   `memset` to zero and split into a free list (`do_slabs_newslab`,
//!   `split_slab_page_into_freelist`), so all of its 256 pages are written when it is
//!   allocated, and since the free list is LIFO, chunks are handed out from the end of the
//!   slab page backwards.
//! - **Item size**: 56-byte header (48 + 8-byte CAS), the key (`user` + up to 19 digits: 24
//!   bytes with its terminator), the value and its `\r\n`. The value is the YCSB record as the
//!   memcached binding stores it, a JSON object of `fieldcount` fields: 12 bytes of name and
//!   quoting per field plus the field's length (`fieldlength`, constant or uniform in
//!   `1..=fieldlength` as YCSB's `fieldlengthdistribution`). With YCSB's defaults (10 × 100 B)
//!   an item is 1,203 bytes and lives in the 1,480-byte class, 708 per slab page.
//! - **Hash table**: `2^hashpower` 8-byte bucket pointers; `hashpower` starts at 16 and the
//!   table doubles while items > 1.5 × buckets (`assoc_expand`). The model allocates the final
//!   size up front (as `-o hashpower=N` does); it is `calloc`ed, so a bucket page is first
//!   touched by the first insert that hashes to it.
//! - **Globals**: one page holding the LRU heads and tails, slab-class and stats structures.
//! - **Connections**: one page per server thread (the connection's read buffer).
//!
//! # Streams
//!
//! Load phase: record `r` (0-based, YCSB's key number; keys are hashed, `insertorder=hashed`)
//! is inserted by server thread `r mod threads`, in record order, so the slab chunks are
//! written in order of insertion. Insert: recv into the connection page, parse, (allocate
//! and zero a slab page when the chunk is the first taken from it), write the item's pages,
//! link it in its bucket, link it at the LRU head (globals), reply. A barrier separates load
//! and run. Run phase: each server thread serves its own client stream of
//! `requests / threads` requests. Keys follow YCSB's scrambled zipfian: a zipfian rank over
//! 10^10 items with constant 0.99 (`ScrambledZipfianGenerator`, ITEM_COUNT = 10^10), hashed
//! with 64-bit FNV-1a (`Utils.fnvhash64`) modulo the record count, so popular keys are spread
//! over the slabs. Read (GET): connection page, parse, bucket page, the item's pages, reply.
//! Update (SET of an existing key): connection page, parse, bucket page, the item's first page
//! (the old item's header), the item's pages written, the bucket written (`assoc_replace`),
//! the LRU relink (globals), reply. Each request is wrapped in `RequestBegin`/`RequestEnd`
//! (kinds read 0, update 1, insert 2).
//!
//! Costs (estimates, config keys): `parse_ns` = 2,000 ns for receiving and parsing a request
//! and hashing its key (one `read` system call on a loopback TCP socket plus parsing is a few
//! µs), `reply_ns` = 3,000 ns for building and sending the reply (`sendmsg`); zeroing a page
//! of a new slab 100 ns.
//!
//! # Left out
//!
//! A SET in memcached allocates a new chunk and frees the old one, so an updated key moves;
//! here it is updated in place, because moving it would make every thread's addresses depend
//! on the interleaving of the others. Hash-chain walks past other items of a bucket, the
//! incremental hash-table expansion, the ITEM_FETCHED/ACTIVE flag writes on reads, the LRU
//! maintainer and crawler threads, and the client's own memory are not modelled. Reads write
//! only the connection page (the receive buffer); the store itself is read-only under
//! `ycsb-c`. YCSB's binding sends only the updated field on an update (`writeallfields`
//! false); the model rewrites the whole item, as a memcached SET replaces it. `Math.abs` of
//! the FNV hash is taken as an unsigned magnitude (differs from Java only for one value in
//! 2^64).
//!
//! # Memory
//!
//! Per thread: a random stream and two counters. Shared: the zipfian sampler's constants; with
//! `fieldlengthdistribution=uniform`, 8 bytes per record for the item's address and size
//! (with constant sizes the address is arithmetic); 4 bytes per slab page for content classes.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::common::{derive, pages_of, stream, Emitter, Layout, CHUNK_OPS, PAGE_BYTES};
use super::params::{fmt_size, Params};
use super::{bad_tid, Op, Workload, REQ_INSERT, REQ_READ, REQ_UPDATE};
use crate::device::ContentClass;
use crate::error::Result;
use crate::generate::Zipf;

const KEYS: &[&str] = &[
    "footprint",
    "records",
    "requests",
    "threads",
    "readproportion",
    "zipfian",
    "fieldcount",
    "fieldlength",
    "fieldlengthdistribution",
    "parse_ns",
    "reply_ns",
    "seed",
];

/// Slab page size (memcached's `item_size_max` / `slab_page_size`, 1 MiB).
const SLAB_BYTES: u64 = 1 << 20;
const SLAB_PAGES: u64 = SLAB_BYTES / PAGE_BYTES;
/// Item header with CAS (`sizeof(item)` 48 + 8).
const ITEM_HEADER: u64 = 56;
/// `user` + 19 digits + NUL.
const KEY_BYTES: u64 = 24;
/// JSON name and quoting per field: `"fieldN":"` … `",`.
const FIELD_OVERHEAD: u64 = 12;
/// memcached's initial `hashpower`.
const MIN_HASHPOWER: u32 = 16;
/// YCSB's ScrambledZipfianGenerator draws ranks among this many items.
const YCSB_ITEM_COUNT: u64 = 10_000_000_000;
/// ns to zero one page of a new slab (memset at ~40 GB/s).
const ZERO_PAGE_NS: u64 = 100;

const TAG_SIZE: u64 = 0x5153;
const TAG_HASH: u64 = 0x4A54;
const TAG_THREAD: u64 = 0x7448;

/// memcached's slab class chunk sizes for the default `-n 48 -f 1.25` (`slabs_init`).
pub fn slab_classes() -> Vec<u64> {
    let max = SLAB_BYTES / 2;
    let mut sizes = Vec::new();
    let mut size = ITEM_HEADER - 8 + 48;
    loop {
        if size as f64 >= max as f64 / 1.25 {
            break;
        }
        size = size.div_ceil(8) * 8;
        sizes.push(size);
        size = (size as f64 * 1.25) as u64;
    }
    sizes.push(max);
    sizes
}

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 bytes of `val`, least significant first.
pub fn fnv64(mut val: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for _ in 0..8 {
        h ^= val & 0xff;
        val >>= 8;
        h = h.wrapping_mul(1_099_511_628_211);
    }
    (h as i64).unsigned_abs()
}

#[derive(Clone, Debug)]
struct Config {
    records: u64,
    requests: u64,
    threads: usize,
    read: f64,
    zipfian: f64,
    fieldcount: u64,
    fieldlength: u64,
    uniform: bool,
    parse_ns: u64,
    reply_ns: u64,
    seed: u64,
}

/// Where each record's item lives.
#[derive(Clone, Debug)]
enum Items {
    /// Every item has the same size: record `r` is the `r`-th allocation of one class.
    Same {
        bytes: u64,
        chunk: u64,
        perslab: u64,
    },
    /// Per record: byte offset in the slab area << 20 | size, plus bit 63 when the record
    /// is the first allocation from its slab page.
    Table(Vec<u64>),
}

#[derive(Clone, Debug)]
enum Phase {
    Load { next: u64 },
    Run { left: u64 },
    Done,
}

#[derive(Clone, Debug)]
struct ThreadState {
    rng: Xoshiro256PlusPlus,
    phase: Phase,
    em: Emitter,
}

/// A YCSB workload on the memcached model (see the module docs).
pub struct Ycsb {
    kind: String,
    cfg: Config,
    layout: Layout,
    globals: u64,
    conn: u64,
    hash: u64,
    buckets: u64,
    slabs: u64,
    /// Per slab page: used byte range `[lo, hi)` (packed lo << 32 | hi).
    slab_used: Vec<u64>,
    items: Items,
    footprint: u64,
    zipf: Zipf,
    threads: Vec<ThreadState>,
}

fn item_bytes(cfg: &Config, r: u64) -> u64 {
    let value = if cfg.uniform {
        let mut rng = stream(cfg.seed, TAG_SIZE, r);
        (0..cfg.fieldcount)
            .map(|_| rng.gen_range(1..=cfg.fieldlength) + FIELD_OVERHEAD)
            .sum::<u64>()
            + 1
    } else {
        cfg.fieldcount * (cfg.fieldlength + FIELD_OVERHEAD) + 1
    };
    ITEM_HEADER + KEY_BYTES + value + 2
}

fn class_of(classes: &[u64], bytes: u64) -> usize {
    classes.partition_point(|&c| c < bytes)
}

fn hashpower(records: u64) -> u32 {
    let mut hp = MIN_HASHPOWER;
    while records as f64 > 1.5 * (1u64 << hp) as f64 {
        hp += 1;
    }
    hp
}

impl Ycsb {
    pub(crate) fn parse(kind: &str, text: &str, run_seed: u64) -> Result<Ycsb> {
        let p = Params::parse(kind, text, KEYS)?;
        let default_read = match kind {
            "ycsb-a" => 0.5,
            "ycsb-b" => 0.95,
            _ => 1.0,
        };
        let fieldcount = p.u64_in("fieldcount", 10, 1, 1024)?;
        let fieldlength = p.u64_in("fieldlength", 100, 1, 1 << 19)?;
        let mut cfg = Config {
            records: 0,
            requests: 0,
            threads: p.u64_in("threads", 4, 1, 1024)? as usize,
            read: p.f64_in("readproportion", default_read, 0.0, 1.0)?,
            zipfian: p.f64_in("zipfian", 0.99, 0.0, 10.0)?,
            fieldcount,
            fieldlength,
            uniform: p.choice("fieldlengthdistribution", 0, &["constant", "uniform"])? == 1,
            parse_ns: p.u64_in("parse_ns", 2000, 0, 1 << 32)?,
            reply_ns: p.u64_in("reply_ns", 3000, 0, 1 << 32)?,
            seed: p.seed(run_seed)?,
        };
        let classes = slab_classes();
        let max_item = ITEM_HEADER + KEY_BYTES + fieldcount * (fieldlength + FIELD_OVERHEAD) + 3;
        if max_item > *classes.last().unwrap() {
            return Err(p.err(
                "fieldlength",
                format!(
                    "items of {max_item} bytes exceed memcached's largest chunk ({} bytes)",
                    classes.last().unwrap()
                ),
            ));
        }
        cfg.records = match (p.size("footprint")?, p.has("records")) {
            (Some(_), true) => {
                return Err(p.err("records", "give footprint or records, not both"));
            }
            (_, true) => p.u64_in("records", 0, 1, 1 << 32)?,
            (f, false) => {
                let f = f.unwrap_or(128 << 20);
                records_for(&cfg, &classes, f).ok_or_else(|| {
                    p.err(
                        "footprint",
                        format!(
                            "{} is too small for one slab page and the hash table",
                            fmt_size(f)
                        ),
                    )
                })?
            }
        };
        cfg.requests = p.u64_in("requests", 10 * cfg.records, 0, u64::MAX / 2)?;
        Ok(Ycsb::build(kind, cfg, &classes))
    }

    fn build(kind: &str, cfg: Config, classes: &[u64]) -> Ycsb {
        let t = cfg.threads as u64;
        let hp = hashpower(cfg.records);
        let buckets = 1u64 << hp;
        let mut layout = Layout::default();
        let globals = layout.alloc("globals", PAGE_BYTES, ContentClass::Numeric);
        let conn = layout.alloc("connections", t * PAGE_BYTES, ContentClass::Text);
        let hash = layout.alloc("hash table", buckets * 8, ContentClass::Numeric);

        // Slab pages in order of allocation; items handed out from each slab's end.
        let mut per_class: Vec<(u64, Vec<u64>)> = vec![(0, Vec::new()); classes.len()];
        let mut slab_used: Vec<u64> = Vec::new();
        let mut table = Vec::new();
        let same = !cfg.uniform;
        for r in 0..cfg.records {
            let bytes = item_bytes(&cfg, r);
            let c = class_of(classes, bytes);
            let chunk = classes[c];
            let perslab = SLAB_BYTES / chunk;
            let (count, slabs) = &mut per_class[c];
            let j = *count % perslab;
            if j == 0 {
                slabs.push(slab_used.len() as u64);
                slab_used.push(0);
            }
            let slab = *slabs.last().unwrap();
            let off = (perslab - 1 - j) * chunk;
            slab_used[slab as usize] = (off << 32) | (perslab * chunk);
            *count += 1;
            if !same {
                let addr = slab * SLAB_BYTES + off;
                table.push((addr << 20) | bytes | (((j == 0) as u64) << 63));
            }
        }
        let nslabs = slab_used.len() as u64;
        let slabs = layout.alloc("slabs", nslabs * SLAB_BYTES, ContentClass::Random);
        let items = if same {
            let bytes = item_bytes(&cfg, 0);
            let chunk = classes[class_of(classes, bytes)];
            Items::Same {
                bytes,
                chunk,
                perslab: SLAB_BYTES / chunk,
            }
        } else {
            Items::Table(table)
        };

        // Bucket pages touched by the load.
        let bucket_pages = pages_of(buckets * 8);
        let mut touched = vec![false; bucket_pages as usize];
        for r in 0..cfg.records {
            let b = derive(cfg.seed, TAG_HASH, r) & (buckets - 1);
            touched[(b * 8 / PAGE_BYTES) as usize] = true;
        }
        // A thread's connection page is touched if it inserts or serves anything.
        let conn_used = (0..t)
            .filter(|&i| {
                i < cfg.records
                    || super::common::split(cfg.requests, t, i).1
                        > super::common::split(cfg.requests, t, i).0
            })
            .count() as u64;
        let footprint = (cfg.records > 0) as u64
            + conn_used
            + touched.iter().filter(|&&x| x).count() as u64
            + nslabs * SLAB_PAGES;

        let threads = (0..cfg.threads)
            .map(|i| ThreadState {
                rng: stream(cfg.seed, TAG_THREAD, i as u64),
                phase: Phase::Load { next: i as u64 },
                em: Emitter::default(),
            })
            .collect();
        Ycsb {
            kind: kind.to_string(),
            zipf: Zipf::new(YCSB_ITEM_COUNT, cfg.zipfian),
            cfg,
            layout,
            globals,
            conn,
            hash,
            buckets,
            slabs,
            slab_used,
            items,
            footprint,
            threads,
        }
    }

    /// Records loaded.
    pub fn records(&self) -> u64 {
        self.cfg.records
    }

    /// Run-phase requests over all threads.
    pub fn requests(&self) -> u64 {
        self.cfg.requests
    }

    /// Byte address of record `r`'s item, its size, and whether it opens a slab page.
    fn item(&self, r: u64) -> (u64, u64, bool) {
        let base = self.slabs * PAGE_BYTES;
        match &self.items {
            Items::Same {
                bytes,
                chunk,
                perslab,
            } => {
                let (slab, j) = (r / perslab, r % perslab);
                (
                    base + slab * SLAB_BYTES + (perslab - 1 - j) * chunk,
                    *bytes,
                    j == 0,
                )
            }
            Items::Table(t) => {
                let v = t[r as usize];
                (
                    base + ((v & !(1 << 63)) >> 20),
                    v & ((1 << 20) - 1),
                    v >> 63 == 1,
                )
            }
        }
    }

    fn bucket_page(&self, r: u64) -> u64 {
        let b = derive(self.cfg.seed, TAG_HASH, r) & (self.buckets - 1);
        self.hash + b * 8 / PAGE_BYTES
    }

    /// YCSB's scrambled zipfian key number.
    fn next_key(zipf: &Zipf, rng: &mut Xoshiro256PlusPlus, records: u64) -> u64 {
        let rank = zipf.sample(rng) - 1;
        fnv64(rank) % records
    }

    fn insert(&self, st: &mut ThreadState, tid: usize, r: u64, buf: &mut Vec<Op>) {
        let em = &mut st.em;
        em.begin(buf, REQ_INSERT);
        em.access(buf, self.conn + tid as u64, true);
        em.compute(self.cfg.parse_ns);
        let (addr, bytes, opens_slab) = self.item(r);
        if opens_slab {
            let first = addr / PAGE_BYTES - (addr / PAGE_BYTES - self.slabs) % SLAB_PAGES;
            for p in first..first + SLAB_PAGES {
                em.compute(ZERO_PAGE_NS);
                em.access(buf, p, true);
            }
        }
        em.range(buf, addr, bytes, true);
        em.access(buf, self.bucket_page(r), true);
        em.access(buf, self.globals, true);
        em.compute(self.cfg.reply_ns);
        em.end(buf);
    }

    fn request(&self, st: &mut ThreadState, tid: usize, buf: &mut Vec<Op>) {
        let read = self.cfg.read >= 1.0 || st.rng.gen::<f64>() < self.cfg.read;
        let r = Self::next_key(&self.zipf, &mut st.rng, self.cfg.records);
        let em = &mut st.em;
        em.begin(buf, if read { REQ_READ } else { REQ_UPDATE });
        em.access(buf, self.conn + tid as u64, true);
        em.compute(self.cfg.parse_ns);
        let bucket = self.bucket_page(r);
        em.access(buf, bucket, false);
        let (addr, bytes, _) = self.item(r);
        if read {
            em.range(buf, addr, bytes, false);
        } else {
            em.access(buf, addr / PAGE_BYTES, false);
            em.range(buf, addr, bytes, true);
            em.access(buf, bucket, true);
            em.access(buf, self.globals, true);
        }
        em.compute(self.cfg.reply_ns);
        em.end(buf);
    }
}

/// Records whose store fills `footprint` bytes (whole slab pages of the first record's
/// class; with uniform sizes, of the mean chunk over a sample): `None` if not even one.
fn records_for(cfg: &Config, classes: &[u64], footprint: u64) -> Option<u64> {
    let sample = 1000;
    let mean_chunk = (0..sample)
        .map(|r| classes[class_of(classes, item_bytes(cfg, r))] as f64)
        .sum::<f64>()
        / sample as f64;
    let per_slab = (SLAB_BYTES as f64 / mean_chunk).floor() as u64;
    let avail_pages = (footprint / PAGE_BYTES).checked_sub(1 + cfg.threads as u64)?;
    let mut records = per_slab.max(1);
    for _ in 0..16 {
        let hash_pages = pages_of((1u64 << hashpower(records)) * 8);
        let slabs = avail_pages.checked_sub(hash_pages)? / SLAB_PAGES;
        let next = slabs * per_slab;
        if next == records {
            break;
        }
        records = next;
    }
    (records > 0).then_some(records)
}

impl Workload for Ycsb {
    fn name(&self) -> String {
        let c = &self.cfg;
        format!(
            "{}:records={},requests={},threads={},readproportion={},zipfian={},fieldcount={},fieldlength={},fieldlengthdistribution={},parse_ns={},reply_ns={},seed={}",
            self.kind,
            c.records,
            c.requests,
            c.threads,
            c.read,
            c.zipfian,
            c.fieldcount,
            c.fieldlength,
            if c.uniform { "uniform" } else { "constant" },
            c.parse_ns,
            c.reply_ns,
            c.seed
        )
    }

    fn threads(&self) -> usize {
        self.cfg.threads
    }

    fn footprint_pages(&self) -> u64 {
        self.footprint
    }

    fn content_class(&self, _pid: u32, page: u64) -> ContentClass {
        let end = self.slabs + self.slab_used.len() as u64 * SLAB_PAGES;
        if page >= self.slabs && page < end {
            // Used chunks hold records (random printable bytes: YCSB's RandomByteIterator);
            // the rest of a slab page is zeroed free space.
            let off = page - self.slabs;
            let v = self.slab_used[(off / SLAB_PAGES) as usize];
            let (lo, hi) = (v >> 32, v & 0xffff_ffff);
            let (a, b) = (
                (off % SLAB_PAGES) * PAGE_BYTES,
                (off % SLAB_PAGES + 1) * PAGE_BYTES,
            );
            return if a < hi && b > lo {
                ContentClass::Random
            } else {
                ContentClass::Zero
            };
        }
        self.layout.class_of(page)
    }

    fn next_ops(&mut self, tid: usize, buf: &mut Vec<Op>) -> Result<()> {
        if tid >= self.cfg.threads {
            return Err(bad_tid(&self.kind, tid, self.cfg.threads));
        }
        let mut st = std::mem::replace(
            &mut self.threads[tid],
            ThreadState {
                rng: stream(0, 0, 0),
                phase: Phase::Done,
                em: Emitter::default(),
            },
        );
        let t = self.cfg.threads as u64;
        let start = buf.len();
        while buf.len() - start < CHUNK_OPS {
            match st.phase {
                Phase::Load { next } => {
                    if next < self.cfg.records {
                        self.insert(&mut st, tid, next, buf);
                        st.phase = Phase::Load { next: next + t };
                    } else {
                        st.em.barrier(buf);
                        let (lo, hi) = super::common::split(self.cfg.requests, t, tid as u64);
                        st.phase = Phase::Run { left: hi - lo };
                    }
                }
                Phase::Run { left } => {
                    if left == 0 {
                        st.em.flush(buf);
                        st.phase = Phase::Done;
                    } else {
                        self.request(&mut st, tid, buf);
                        st.phase = Phase::Run { left: left - 1 };
                    }
                }
                Phase::Done => break,
            }
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
    fn memcached_slab_classes() {
        // memcached -vv with the defaults prints these chunk sizes for the first classes.
        let c = slab_classes();
        assert_eq!(
            &c[..14],
            &[96, 120, 152, 192, 240, 304, 384, 480, 600, 752, 944, 1184, 1480, 1856]
        );
        assert_eq!(*c.last().unwrap(), 512 * 1024);
        // 1,203-byte YCSB items (10 fields of 100 bytes) land in the 1,480-byte class.
        let cfg = Config {
            records: 1,
            requests: 0,
            threads: 1,
            read: 1.0,
            zipfian: 0.99,
            fieldcount: 10,
            fieldlength: 100,
            uniform: false,
            parse_ns: 0,
            reply_ns: 0,
            seed: 0,
        };
        assert_eq!(item_bytes(&cfg, 0), 1203);
        assert_eq!(c[class_of(&c, 1203)], 1480);
        assert_eq!(SLAB_BYTES / 1480, 708);
    }

    #[test]
    fn fnv_matches_ycsb() {
        // FNV-1a 64 of eight zero bytes: offset basis times the prime, eight times.
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        for _ in 0..8 {
            h = h.wrapping_mul(0x100_0000_01B3);
        }
        assert_eq!(fnv64(0), (h as i64).unsigned_abs());
        assert_ne!(fnv64(1), fnv64(0));
    }

    fn run(spec: &str, seed: u64) -> (Box<dyn Workload>, Vec<Vec<Op>>) {
        let mut w = parse(spec, seed).unwrap();
        let s = drain(w.as_mut(), Order::RoundRobin);
        (w, s)
    }

    /// (reads, updates, write accesses to the store) of the run phase.
    fn run_phase_mix(w: &Ycsb, streams: &[Vec<Op>]) -> (u64, u64, u64) {
        let (mut reads, mut updates, mut store_writes) = (0, 0, 0);
        for s in streams {
            for op in phase(s, 1) {
                match *op {
                    Op::RequestBegin { kind: REQ_READ } => reads += 1,
                    Op::RequestBegin { kind: REQ_UPDATE } => updates += 1,
                    Op::RequestBegin { kind } => panic!("kind {kind} in the run phase"),
                    Op::Access { page, write: true } if page >= w.hash => store_writes += 1,
                    _ => {}
                }
            }
        }
        (reads, updates, store_writes)
    }

    #[test]
    fn read_update_mix() {
        for (kind, want) in [("ycsb-a", 0.5), ("ycsb-b", 0.05), ("ycsb-c", 0.0)] {
            let w = Ycsb::parse(kind, "footprint=4MiB", 3).unwrap();
            let mut b: Box<dyn Workload> = Box::new(w);
            let s = drain(b.as_mut(), Order::RoundRobin);
            let w = Ycsb::parse(kind, "footprint=4MiB", 3).unwrap();
            let (r, u, sw) = run_phase_mix(&w, &s);
            assert_eq!(r + u, w.requests());
            assert!(w.requests() >= 20_000, "{}", w.requests());
            let frac = u as f64 / (r + u) as f64;
            // Binomial sd of the fraction is at most 0.0036 here: 2 points is > 5 sd.
            assert!((frac - want).abs() < 0.02, "{kind}: updates {frac}");
            if kind == "ycsb-c" {
                assert_eq!((u, sw), (0, 0), "ycsb-c writes to the store");
            } else {
                // An update writes the item's page(s) and the bucket (and the LRU globals,
                // below the hash table).
                assert!(sw >= 2 * u, "{kind}: {sw} store writes for {u} updates");
            }
        }
    }

    #[test]
    fn requests_balanced_and_loaded() {
        let (w, s) = run("ycsb-a:records=3000,requests=4001,threads=4", 9);
        let mut loaded = 0;
        for (t, st) in s.iter().enumerate() {
            assert_eq!(barriers(st), 1, "thread {t}");
            let mut open = false;
            for op in st {
                match op {
                    Op::RequestBegin { .. } => {
                        assert!(!open, "nested request");
                        open = true;
                    }
                    Op::RequestEnd => {
                        assert!(open, "end without begin");
                        open = false;
                    }
                    Op::Barrier => assert!(!open, "barrier inside a request"),
                    _ => {}
                }
            }
            assert!(!open);
            loaded += phase(st, 0)
                .iter()
                .filter(|o| matches!(o, Op::RequestBegin { kind: REQ_INSERT }))
                .count();
            let runs = phase(st, 1)
                .iter()
                .filter(|o| matches!(o, Op::RequestBegin { .. }))
                .count();
            // 4001 requests over 4 threads: 1000 or 1001 each.
            assert!(runs == 1000 || runs == 1001, "thread {t}: {runs}");
        }
        assert_eq!(loaded, 3000);
        assert_eq!(distinct_pages(&s), w.footprint_pages());
    }

    #[test]
    fn footprint_matches_target_and_run() {
        let (w, s) = run("ycsb-b:footprint=32MiB,requests=5000", 1);
        let target = 32 * 256;
        let fp = w.footprint_pages();
        assert!(fp <= target && fp as f64 > 0.95 * target as f64, "{fp}");
        assert_eq!(distinct_pages(&s), fp);
        // Uniform item sizes: several slab classes, footprint still exact.
        let (w, s) = run(
            "ycsb-c:records=5000,requests=2000,fieldlengthdistribution=uniform",
            2,
        );
        assert_eq!(distinct_pages(&s), w.footprint_pages());
        let w = Ycsb::parse(
            "ycsb-c",
            "records=5000,requests=0,fieldlengthdistribution=uniform",
            2,
        )
        .unwrap();
        let classes: std::collections::HashSet<usize> = (0..5000)
            .map(|r| class_of(&slab_classes(), w.item(r).1))
            .collect();
        // 10 fields uniform in 1..=100: sizes ~ 725 ± 90 bytes, spread over classes
        // 600, 752, 944 (and rarely 480 or 1184).
        assert!(classes.len() >= 3, "{classes:?}");
        // The default spec reaches 128 MiB within 5%.
        let w = Ycsb::parse("ycsb-a", "", 0).unwrap();
        let fp = w.footprint_pages() as f64;
        assert!(fp <= 32768.0 && fp > 0.95 * 32768.0, "{fp}");
        assert_eq!(w.threads(), 4);
    }

    #[test]
    fn determinism_and_polling_order() {
        let spec = "ycsb-b:records=2000,requests=3000,fieldlengthdistribution=uniform";
        let (a, sa) = run(spec, 4);
        let mut b = parse(spec, 4).unwrap();
        assert_eq!(drain(b.as_mut(), Order::Shuffled(7)), sa);
        let mut b = parse(spec, 4).unwrap();
        assert_eq!(drain(b.as_mut(), Order::ReverseSerial), sa);
        let (_, sc) = run(spec, 5);
        assert_ne!(sc, sa);
        assert_eq!(
            a.name(),
            "ycsb-b:records=2000,requests=3000,threads=4,readproportion=0.95,zipfian=0.99,fieldcount=10,fieldlength=100,fieldlengthdistribution=uniform,parse_ns=2000,reply_ns=3000,seed=4"
        );
        let (_, again) = run(&a.name(), 0);
        assert_eq!(again, sa);
        // Costs: each request carries parse_ns + reply_ns of compute, inserts too (plus
        // 100 ns per page of the slab pages they zero).
        let total: u64 = sa.iter().map(|st| compute_ns(st)).sum();
        let y = Ycsb::parse("ycsb-b", spec.split_once(':').unwrap().1, 4).unwrap();
        let slabs = y.slab_used.len() as u64;
        assert!(slabs >= 2);
        assert_eq!(total, 5000 * (2000 + 3000) + slabs * 256 * 100);
    }

    #[test]
    fn scrambled_zipfian_hottest_key() {
        // YCSB's zeta(10^10, 0.99) = 26.46902820178302 (ScrambledZipfianGenerator.ZETAN):
        // rank 0 is drawn with probability 1/ZETAN = 3.778%.
        let w = Ycsb::parse("ycsb-c", "records=100000,requests=0", 5).unwrap();
        let mut rng = stream(1, 2, 3);
        let n = 200_000;
        let hot = fnv64(0) % 100_000;
        let hits = (0..n)
            .filter(|_| Ycsb::next_key(&w.zipf, &mut rng, 100_000) == hot)
            .count() as f64
            / n as f64;
        // Other ranks hashing to the same key add ~1e-5; sd of the estimate is 0.0004.
        assert!((hits - 1.0 / 26.469_028_201_783_02).abs() < 0.002, "{hits}");
    }

    #[test]
    fn content_classes() {
        let w = Ycsb::parse("ycsb-a", "records=1000,requests=0", 0).unwrap();
        assert_eq!(w.content_class(0, w.globals), ContentClass::Numeric);
        assert_eq!(w.content_class(0, w.conn), ContentClass::Text);
        assert_eq!(w.content_class(0, w.hash), ContentClass::Numeric);
        // 1000 records in one 708-chunk slab... two slabs: the second holds 292 items at its
        // end, so its first pages are zeroed free space and its last pages records.
        let second = w.slabs + SLAB_PAGES;
        assert_eq!(w.content_class(0, second), ContentClass::Zero);
        assert_eq!(
            w.content_class(0, second + SLAB_PAGES - 1),
            ContentClass::Random
        );
        assert_eq!(w.content_class(0, w.slabs), ContentClass::Random);
        assert_eq!(w.content_class(0, second + SLAB_PAGES), ContentClass::Zero);
    }

    #[test]
    fn spec_errors_name_the_key() {
        let e = |s: &str| parse(s, 0).err().unwrap().to_string();
        assert_eq!(
            e("ycsb-a:footprint=4MiB,records=10"),
            "ycsb-a.records: give footprint or records, not both"
        );
        assert_eq!(
            e("ycsb-b:footprint=12XB"),
            "ycsb-b.footprint: '12XB' is not a size (bytes, or a number with KiB, MiB, GiB or TiB)"
        );
        assert_eq!(
            e("ycsb-c:footprint=64KiB"),
            "ycsb-c.footprint: 64KiB is too small for one slab page and the hash table"
        );
        assert_eq!(
            e("ycsb-a:readproportion=1.5"),
            "ycsb-a.readproportion: 1.5 is outside [0, 1]"
        );
        assert_eq!(
            e("ycsb-a:fieldlengthdistribution=zipf"),
            "ycsb-a.fieldlengthdistribution: 'zipf' is not one of constant, uniform"
        );
        assert!(e("ycsb-a:thread=4")
            .starts_with("ycsb-a.thread: unknown key for ycsb-a (valid: footprint, records,"));
        assert_eq!(
            e("ycsb-a:fieldlength=100000"),
            "ycsb-a.fieldlength: items of 1000203 bytes exceed memcached's largest chunk (524288 bytes)"
        );
    }
}

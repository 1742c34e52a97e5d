//! `tpch-like`: TPC-H queries as Spark SQL runs them in one executor with `threads` task
//! slots (seed 001 §IV: TPC-H on Spark-SQL, 12 threads, memory limits set so nothing
//! spills; §V-B: "highly parallel stages with little synchronization overhead and mostly
//! balanced work per thread").
//!
//! # Layout
//!
//! The six large TPC-H tables (lineitem, orders, customer, part, partsupp, supplier; rows
//! per scale factor as the TPC-H specification: 6 M, 1.5 M, 150 k, 200 k, 800 k, 10 k) are
//! cached in Spark's in-memory columnar format: each table is split into `threads`
//! partitions of equal row count; a partition is a sequence of batches of `batch` rows
//! (`spark.sql.inMemoryColumnarStorage.batchSize`, 10,000), and a batch holds each column's
//! values one column after the other. Fixed-width columns take their Spark size (8-byte
//! longs and decimals, 4-byte dates and ints); strings take a 4-byte length plus TPC-H's mean
//! length. A scan of some columns therefore reads, batch by batch, the pages of those
//! columns' arrays within the batch. Numeric columns are `Numeric`, strings `Text`.
//!
//! Above the tables, a work area is reused by every query (the JVM heap reclaims one query's
//! garbage before the next): shuffle outputs, hash-join tables (Spark's `BytesToBytesMap`: a
//! bucket array of 16 bytes per slot at load factor ½, zeroed when allocated, plus the rows
//! appended to data pages) and aggregation tables (32 bytes per slot at load factor ½,
//! zeroed). Bucket arrays and aggregation tables are `Random`, rows `Numeric`.
//!
//! # Stages
//!
//! A run loads the tables (each thread writes its partitions: Spark reading the input and
//! building its columnar cache), then runs the queries of `queries` in order, `rounds`
//! times. A query is a list of stages separated by barriers; in a stage every thread runs one
//! task on its own partition, so work is balanced. A task reads a source and pushes each
//! surviving row through operators:
//!
//! - sources: a **column scan** of the thread's partition with a filter of fixed
//!   selectivity, or a **shuffle read** of the thread's partition from every thread's output
//!   of an earlier stage (each map output is split evenly among the reducers);
//! - operators: **hash build** (a random bucket written, the row appended), **hash probe** (a
//!   random bucket read and, for the fraction of rows that match, a random row of the table
//!   read), **aggregation** (a random slot of the thread's table written), **shuffle write**
//!   (the row appended to the thread's output, ordered by reducer as Spark's sort shuffle
//!   writes it).
//!
//! Small dimension tables are broadcast: every thread inserts its rows into one shared
//! table, and probes go anywhere in it. Large joins are shuffled hash joins: both sides
//! shuffled by key, and each thread builds and probes its own table. Filters pass rows
//! evenly (row `k` passes when `floor((k + 1) s)` exceeds `floor(k s)`), so output sizes,
//! and hence the footprint, are exact and known before the run; which bucket, slot or row a
//! row touches is random (per-thread stream).
//!
//! | query | stages (→ barrier)                                                                        |
//! |-------|-------------------------------------------------------------------------------------------|
//! | 1     | scan lineitem (7 cols, 98.5%) → aggregate (4 groups)                                       |
//! | 3     | scan customer (20%) → build shared ‖ scan orders (48.5%) → probe (20%) → shuffle; scan lineitem (54%) → shuffle ‖ read orders → build; read lineitem → probe (5%) → aggregate |
//! | 6     | scan lineitem (4 cols, 1.9%) → aggregate (1 group)                                         |
//! | 9     | scan supplier → build shared; scan part (5.5%) → build shared ‖ scan partsupp → probe part → shuffle; scan lineitem (6 cols) → probe part → probe supplier → shuffle ‖ read partsupp → build; read lineitem → probe → aggregate (175) |
//! | 12    | scan lineitem (3.1%) → shuffle; scan orders → shuffle ‖ read lineitem → build; read orders → probe (12%) → aggregate (2) |
//! | 14    | scan part → build shared ‖ scan lineitem (1.25%) → probe → aggregate (1)                   |
//! | 18    | scan lineitem (orderkey, quantity) → shuffle ‖ read → aggregate by order (1.5 M × sf groups) |
//!
//! Selectivities are those of the TPC-H substitution parameters' validation values; join hit
//! rates are estimates. Costs (estimates, config keys): `scan_ns` = 300 ns per 4 KiB of column
//! or shuffle data read (decoding ~500 values per page at well under a nanosecond each),
//! `row_ns` = 40 ns per row per operator (hashing, comparing, copying a row in generated
//! code), `load_ns` = 5,000 ns per 4 KiB of table cached (parsing input at ~800 MB/s per
//! core); zeroing 100 ns per page.
//!
//! # Left out
//!
//! Query optimisation details (exact plans, sort-merge joins, which Spark prefers for large
//! joins by default; sorts; `HAVING`, `ORDER BY` and `LIMIT`), the driver, garbage collection
//! and the young generation's churn, growth and rehashing of hash tables (they are allocated
//! at their final size), the files shuffle output goes through (the work area holds it as
//! anonymous memory), dynamic task scheduling (each thread runs exactly its partition's task),
//! and value skew (keys are uniform). The size of the work area is the largest query's.
//!
//! # Memory
//!
//! Shared: per query and thread, the row counts and first pages of its regions (a few
//! hundred bytes per query). Per thread: a random stream and append cursors.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::common::{passed, split, stream, Emitter, Layout, CHUNK_OPS, PAGE_BYTES};
use super::params::{fmt_size, Params};
use super::{bad_tid, Op, Workload};
use crate::device::ContentClass;
use crate::error::Result;

const KEYS: &[&str] = &[
    "footprint",
    "sf",
    "threads",
    "queries",
    "rounds",
    "batch",
    "scan_ns",
    "row_ns",
    "load_ns",
    "seed",
];

/// The default query list.
pub const DEFAULT_QUERIES: &[u32] = &[1, 3, 6, 9, 12, 14, 18];
const ZERO_PAGE_NS: u64 = 100;
const BUCKET_BYTES: u64 = 16;
const AGG_SLOT_BYTES: u64 = 32;
const TAG_THREAD: u64 = 0x7470;

use ContentClass::{Numeric as N, Text as T};

struct TableDef {
    name: &'static str,
    rows_sf1: u64,
    cols: &'static [(&'static str, u64, ContentClass)],
}

const LINEITEM: usize = 0;
const ORDERS: usize = 1;
const CUSTOMER: usize = 2;
const PART: usize = 3;
const PARTSUPP: usize = 4;
const SUPPLIER: usize = 5;

static TABLES: [TableDef; 6] = [
    TableDef {
        name: "lineitem",
        rows_sf1: 6_000_000,
        cols: &[
            ("orderkey", 8, N),
            ("partkey", 8, N),
            ("suppkey", 8, N),
            ("linenumber", 4, N),
            ("quantity", 8, N),
            ("extendedprice", 8, N),
            ("discount", 8, N),
            ("tax", 8, N),
            ("returnflag", 1, T),
            ("linestatus", 1, T),
            ("shipdate", 4, N),
            ("commitdate", 4, N),
            ("receiptdate", 4, N),
            ("shipinstruct", 16, T),
            ("shipmode", 12, T),
            ("comment", 31, T),
        ],
    },
    TableDef {
        name: "orders",
        rows_sf1: 1_500_000,
        cols: &[
            ("orderkey", 8, N),
            ("custkey", 8, N),
            ("orderstatus", 1, T),
            ("totalprice", 8, N),
            ("orderdate", 4, N),
            ("orderpriority", 12, T),
            ("clerk", 19, T),
            ("shippriority", 4, N),
            ("comment", 53, T),
        ],
    },
    TableDef {
        name: "customer",
        rows_sf1: 150_000,
        cols: &[
            ("custkey", 8, N),
            ("name", 22, T),
            ("address", 29, T),
            ("nationkey", 8, N),
            ("phone", 19, T),
            ("acctbal", 8, N),
            ("mktsegment", 13, T),
            ("comment", 77, T),
        ],
    },
    TableDef {
        name: "part",
        rows_sf1: 200_000,
        cols: &[
            ("partkey", 8, N),
            ("name", 37, T),
            ("mfgr", 29, T),
            ("brand", 12, T),
            ("type", 25, T),
            ("size", 4, N),
            ("container", 12, T),
            ("retailprice", 8, N),
            ("comment", 18, T),
        ],
    },
    TableDef {
        name: "partsupp",
        rows_sf1: 800_000,
        cols: &[
            ("partkey", 8, N),
            ("suppkey", 8, N),
            ("availqty", 4, N),
            ("supplycost", 8, N),
            ("comment", 128, T),
        ],
    },
    TableDef {
        name: "supplier",
        rows_sf1: 10_000,
        cols: &[
            ("suppkey", 8, N),
            ("name", 22, T),
            ("address", 29, T),
            ("nationkey", 8, N),
            ("phone", 19, T),
            ("acctbal", 8, N),
            ("comment", 67, T),
        ],
    },
];

#[derive(Clone, Debug)]
enum Src {
    Scan {
        table: usize,
        cols: Vec<usize>,
        sel: f64,
    },
    Shuffle {
        slot: usize,
    },
}

#[derive(Clone, Copy, Debug)]
enum Sink {
    Probe { map: usize, hit: f64 },
    Build { map: usize },
    Agg { agg: usize },
    Shuffle { slot: usize },
}

#[derive(Clone, Debug)]
struct Step {
    src: Src,
    sinks: Vec<Sink>,
}

#[derive(Clone, Copy, Debug)]
struct MapDef {
    row_bytes: u64,
    shared: bool,
}

#[derive(Clone, Copy, Debug)]
struct AggDef {
    groups_fixed: u64,
    groups_sf1: u64,
    partitioned: bool,
}

#[derive(Clone, Debug)]
struct QueryDef {
    id: u32,
    maps: Vec<MapDef>,
    aggs: Vec<AggDef>,
    slots: Vec<u64>,
    stages: Vec<Vec<Step>>,
}

fn scan(table: usize, cols: &[usize], sel: f64, sinks: Vec<Sink>) -> Step {
    Step {
        src: Src::Scan {
            table,
            cols: cols.to_vec(),
            sel,
        },
        sinks,
    }
}

fn read(slot: usize, sinks: Vec<Sink>) -> Step {
    Step {
        src: Src::Shuffle { slot },
        sinks,
    }
}

const fn shared(row_bytes: u64) -> MapDef {
    MapDef {
        row_bytes,
        shared: true,
    }
}
const fn private(row_bytes: u64) -> MapDef {
    MapDef {
        row_bytes,
        shared: false,
    }
}
const fn groups(fixed: u64) -> AggDef {
    AggDef {
        groups_fixed: fixed,
        groups_sf1: 0,
        partitioned: false,
    }
}
const fn groups_by_key(sf1: u64) -> AggDef {
    AggDef {
        groups_fixed: 0,
        groups_sf1: sf1,
        partitioned: true,
    }
}

/// The plan of query `id` (see the table in the module docs).
fn query(id: u32) -> Option<QueryDef> {
    use Sink::*;
    let q = |maps, aggs, slots, stages| QueryDef {
        id,
        maps,
        aggs,
        slots,
        stages,
    };
    Some(match id {
        1 => q(
            vec![],
            vec![groups(4)],
            vec![],
            vec![vec![scan(
                LINEITEM,
                &[10, 8, 9, 4, 5, 6, 7],
                0.985,
                vec![Agg { agg: 0 }],
            )]],
        ),
        3 => q(
            vec![shared(16), private(24)],
            vec![groups_by_key(11_620)],
            vec![24, 24],
            vec![
                vec![scan(CUSTOMER, &[6, 0], 0.2, vec![Build { map: 0 }])],
                vec![
                    scan(
                        ORDERS,
                        &[4, 1, 0, 7],
                        0.485,
                        vec![Probe { map: 0, hit: 0.2 }, Shuffle { slot: 0 }],
                    ),
                    scan(LINEITEM, &[10, 0, 5, 6], 0.54, vec![Shuffle { slot: 1 }]),
                ],
                vec![
                    read(0, vec![Build { map: 1 }]),
                    read(1, vec![Probe { map: 1, hit: 0.05 }, Agg { agg: 0 }]),
                ],
            ],
        ),
        6 => q(
            vec![],
            vec![groups(1)],
            vec![],
            vec![vec![scan(
                LINEITEM,
                &[10, 6, 4, 5],
                0.019,
                vec![Agg { agg: 0 }],
            )]],
        ),
        9 => q(
            vec![shared(16), shared(16), private(24)],
            vec![groups(175)],
            vec![24, 32],
            vec![
                vec![
                    scan(SUPPLIER, &[0, 3], 1.0, vec![Build { map: 0 }]),
                    scan(PART, &[0, 1], 0.055, vec![Build { map: 1 }]),
                ],
                vec![
                    scan(
                        PARTSUPP,
                        &[0, 1, 3],
                        1.0,
                        vec![Probe { map: 1, hit: 0.055 }, Shuffle { slot: 0 }],
                    ),
                    scan(
                        LINEITEM,
                        &[1, 2, 0, 4, 5, 6],
                        1.0,
                        vec![
                            Probe { map: 1, hit: 0.055 },
                            Probe { map: 0, hit: 1.0 },
                            Shuffle { slot: 1 },
                        ],
                    ),
                ],
                vec![
                    read(0, vec![Build { map: 2 }]),
                    read(1, vec![Probe { map: 2, hit: 1.0 }, Agg { agg: 0 }]),
                ],
            ],
        ),
        12 => q(
            vec![private(16)],
            vec![groups(2)],
            vec![16, 24],
            vec![
                vec![
                    scan(
                        LINEITEM,
                        &[14, 11, 12, 10, 0],
                        0.031,
                        vec![Shuffle { slot: 0 }],
                    ),
                    scan(ORDERS, &[0, 5], 1.0, vec![Shuffle { slot: 1 }]),
                ],
                vec![
                    read(0, vec![Build { map: 0 }]),
                    read(1, vec![Probe { map: 0, hit: 0.12 }, Agg { agg: 0 }]),
                ],
            ],
        ),
        14 => q(
            vec![shared(32)],
            vec![groups(1)],
            vec![],
            vec![
                vec![scan(PART, &[0, 4], 1.0, vec![Build { map: 0 }])],
                vec![scan(
                    LINEITEM,
                    &[10, 1, 5, 6],
                    0.0125,
                    vec![Probe { map: 0, hit: 1.0 }, Agg { agg: 0 }],
                )],
            ],
        ),
        18 => q(
            vec![],
            vec![groups_by_key(1_500_000)],
            vec![16],
            vec![
                vec![scan(LINEITEM, &[0, 4], 1.0, vec![Shuffle { slot: 0 }])],
                vec![read(0, vec![Agg { agg: 0 }])],
            ],
        ),
        _ => return None,
    })
}

/// Where one table's partitions live.
#[derive(Clone, Debug)]
struct TableLayout {
    rows: Vec<u64>,
    start: Vec<u64>,
    row_bytes: u64,
    /// Byte offset of each column within a row (prefix sums of the widths).
    prefix: Vec<u64>,
}

/// A hash table of one query.
#[derive(Clone, Debug)]
struct MapLayout {
    row_bytes: u64,
    shared: bool,
    /// Bucket arrays: one (shared) or one per thread: (first page, slots).
    buckets: Vec<(u64, u64)>,
    /// Per thread: first page of its rows and their count.
    data: Vec<(u64, u64)>,
    total_rows: u64,
}

/// One query's work area and counts.
#[derive(Clone, Debug)]
struct QueryLayout {
    def: QueryDef,
    layout: Layout,
    /// `[slot][thread]`: (first page, rows).
    slots: Vec<Vec<(u64, u64)>>,
    maps: Vec<MapLayout>,
    /// `[agg][thread]`: (first page, slots).
    aggs: Vec<Vec<(u64, u64)>>,
    /// `[stage][step]`: maps and aggregation tables first used there (zeroed at its start).
    first_use: Vec<Vec<(Vec<usize>, Vec<usize>)>>,
}

#[derive(Clone, Debug)]
struct Config {
    sf: f64,
    threads: usize,
    queries: Vec<u32>,
    rounds: u64,
    batch: u64,
    scan_ns: u64,
    row_ns: u64,
    load_ns: u64,
    seed: u64,
}

/// Where a thread is in its current step.
#[derive(Clone, Copy, Debug)]
enum Pos {
    StepStart,
    /// Next batch `b` of segment `seg`.
    Batch {
        seg: usize,
        b: u64,
    },
    /// `left` selected rows of the batch still to push through the operators.
    Rows {
        seg: usize,
        b: u64,
        left: u64,
    },
    StepEnd,
}

#[derive(Clone, Debug)]
struct ThreadState {
    rng: Xoshiro256PlusPlus,
    em: Emitter,
    /// Flattened stage: 0 = load, then the queries' stages in order.
    stage: usize,
    step: usize,
    pos: Pos,
    /// Pending sequential page writes `[page, end)` with their cost per page.
    pending: Vec<(u64, u64, u64)>,
    /// Rows that reached each operator of the current step.
    arrived: Vec<u64>,
    /// Bytes appended by this thread to each map's rows and each slot of the current query.
    map_cursor: Vec<u64>,
    slot_cursor: Vec<u64>,
    done: bool,
}

/// The `tpch-like` workload (see the module docs).
pub struct TpchLike {
    cfg: Config,
    tables: Vec<TableLayout>,
    table_layout: Layout,
    /// Distinct query plans by id, with their work layouts.
    plans: Vec<QueryLayout>,
    /// Flattened stages after the load: (plan index, stage index).
    stages: Vec<(usize, usize)>,
    work_pages: u64,
    biggest: usize,
    threads: Vec<ThreadState>,
}

fn lay_out_tables(cfg: &Config, layout: &mut Layout) -> Vec<TableLayout> {
    let t = cfg.threads as u64;
    TABLES
        .iter()
        .map(|def| {
            let total = (def.rows_sf1 as f64 * cfg.sf).round() as u64;
            let mut prefix = Vec::with_capacity(def.cols.len());
            let mut row_bytes = 0;
            for c in def.cols {
                prefix.push(row_bytes);
                row_bytes += c.1;
            }
            let mut rows = Vec::new();
            let mut start = Vec::new();
            for i in 0..t {
                let (lo, hi) = split(total, t, i);
                rows.push(hi - lo);
                // A partition's pages are classed by the column of most of its bytes.
                let class = if def
                    .cols
                    .iter()
                    .filter(|c| c.2 == T)
                    .map(|c| c.1)
                    .sum::<u64>()
                    * 2
                    > row_bytes
                {
                    T
                } else {
                    N
                };
                start.push(layout.alloc(
                    format!("{} partition {i}", def.name),
                    (hi - lo) * row_bytes,
                    class,
                ));
            }
            TableLayout {
                rows,
                start,
                row_bytes,
                prefix,
            }
        })
        .collect()
}

/// Rows each thread's step source yields.
fn source_rows(
    cfg: &Config,
    tables: &[TableLayout],
    slot_rows: &[Vec<u64>],
    src: &Src,
) -> Vec<u64> {
    let t = cfg.threads as u64;
    (0..t)
        .map(|i| match src {
            Src::Scan { table, sel, .. } => passed(tables[*table].rows[i as usize], *sel),
            Src::Shuffle { slot } => slot_rows[*slot]
                .iter()
                .map(|&n| {
                    let (lo, hi) = split(n, t, i);
                    hi - lo
                })
                .sum(),
        })
        .collect()
}

fn plan_query(cfg: &Config, tables: &[TableLayout], def: QueryDef, work_base: u64) -> QueryLayout {
    let t = cfg.threads;
    let mut slot_rows = vec![vec![0u64; t]; def.slots.len()];
    let mut map_rows = vec![vec![0u64; t]; def.maps.len()];
    for stage in &def.stages {
        for step in stage {
            let n0 = source_rows(cfg, tables, &slot_rows, &step.src);
            for (i, &n) in n0.iter().enumerate() {
                let mut a = n;
                for sink in &step.sinks {
                    match *sink {
                        Sink::Probe { hit, .. } => a = passed(a, hit),
                        Sink::Build { map } => map_rows[map][i] += a,
                        Sink::Shuffle { slot } => slot_rows[slot][i] += a,
                        Sink::Agg { .. } => {}
                    }
                }
            }
        }
    }
    let mut layout = Layout::at(work_base);
    let slots = def
        .slots
        .iter()
        .enumerate()
        .map(|(s, &rb)| {
            (0..t)
                .map(|i| {
                    let rows = slot_rows[s][i];
                    (
                        layout.alloc(format!("q{} shuffle {s} map {i}", def.id), rows * rb, N),
                        rows,
                    )
                })
                .collect()
        })
        .collect();
    let capacity = |rows: u64| (2 * rows).max(64).next_power_of_two();
    let maps = def
        .maps
        .iter()
        .enumerate()
        .map(|(m, md)| {
            let total: u64 = map_rows[m].iter().sum();
            let mut buckets = Vec::new();
            let mut data = Vec::new();
            if md.shared {
                let cap = capacity(total);
                buckets.push((
                    layout.alloc(
                        format!("q{} hash {m} buckets", def.id),
                        cap * BUCKET_BYTES,
                        ContentClass::Random,
                    ),
                    cap,
                ));
            }
            for (i, &rows) in map_rows[m].iter().enumerate() {
                if !md.shared {
                    let cap = capacity(rows);
                    buckets.push((
                        layout.alloc(
                            format!("q{} hash {m} buckets {i}", def.id),
                            cap * BUCKET_BYTES,
                            ContentClass::Random,
                        ),
                        cap,
                    ));
                }
                data.push((
                    layout.alloc(
                        format!("q{} hash {m} rows {i}", def.id),
                        rows * md.row_bytes,
                        N,
                    ),
                    rows,
                ));
            }
            MapLayout {
                row_bytes: md.row_bytes,
                shared: md.shared,
                buckets,
                data,
                total_rows: total,
            }
        })
        .collect();
    let aggs = def
        .aggs
        .iter()
        .enumerate()
        .map(|(a, ad)| {
            let groups = ad.groups_fixed + (ad.groups_sf1 as f64 * cfg.sf).round() as u64;
            let per_thread = if ad.partitioned {
                groups.div_ceil(t as u64)
            } else {
                groups
            };
            let cap = capacity(per_thread.max(1));
            (0..t)
                .map(|i| {
                    (
                        layout.alloc(
                            format!("q{} aggregate {a} table {i}", def.id),
                            cap * AGG_SLOT_BYTES,
                            ContentClass::Random,
                        ),
                        cap,
                    )
                })
                .collect()
        })
        .collect();
    let mut seen_maps = vec![false; def.maps.len()];
    let mut seen_aggs = vec![false; def.aggs.len()];
    let first_use = def
        .stages
        .iter()
        .map(|stage| {
            stage
                .iter()
                .map(|step| {
                    let (mut ms, mut as_) = (Vec::new(), Vec::new());
                    for sink in &step.sinks {
                        match *sink {
                            Sink::Probe { map, .. } | Sink::Build { map } if !seen_maps[map] => {
                                seen_maps[map] = true;
                                ms.push(map);
                            }
                            Sink::Agg { agg } if !seen_aggs[agg] => {
                                seen_aggs[agg] = true;
                                as_.push(agg);
                            }
                            _ => {}
                        }
                    }
                    (ms, as_)
                })
                .collect()
        })
        .collect();
    QueryLayout {
        def,
        layout,
        slots,
        maps,
        aggs,
        first_use,
    }
}

/// Tables, then each distinct query's work area from the same base.
struct Plan {
    tables: Vec<TableLayout>,
    table_layout: Layout,
    plans: Vec<QueryLayout>,
    work_pages: u64,
    biggest: usize,
}

fn plan(cfg: &Config) -> Plan {
    let mut table_layout = Layout::default();
    let tables = lay_out_tables(cfg, &mut table_layout);
    let base = table_layout.end();
    let mut ids: Vec<u32> = cfg.queries.clone();
    ids.sort_unstable();
    ids.dedup();
    let plans: Vec<QueryLayout> = ids
        .iter()
        .map(|&id| plan_query(cfg, &tables, query(id).expect("query ids checked"), base))
        .collect();
    let (biggest, work_pages) = plans
        .iter()
        .enumerate()
        .map(|(i, p)| (i, p.layout.end() - base))
        .max_by_key(|&(i, pages)| (pages, std::cmp::Reverse(i)))
        .unwrap_or((0, 0));
    Plan {
        tables,
        table_layout,
        plans,
        work_pages,
        biggest,
    }
}

impl TpchLike {
    pub(crate) fn parse(text: &str, run_seed: u64) -> Result<TpchLike> {
        let p = Params::parse("tpch-like", text, KEYS)?;
        let queries = match p.get("queries") {
            None => DEFAULT_QUERIES.to_vec(),
            Some(v) => {
                let mut q = Vec::new();
                for part in v.split('/') {
                    let id: u32 = part.trim().trim_start_matches(['q', 'Q']).parse().ok().filter(|&id| query(id).is_some()).ok_or_else(|| {
                        p.err(
                            "queries",
                            format!(
                                "'{part}' is not a modelled query (valid: {}; separate with '/')",
                                DEFAULT_QUERIES.iter().map(|q| q.to_string()).collect::<Vec<_>>().join(", ")
                            ),
                        )
                    })?;
                    q.push(id);
                }
                q
            }
        };
        let mut cfg = Config {
            sf: 1.0,
            threads: p.u64_in("threads", 12, 1, 1024)? as usize,
            queries,
            rounds: p.u64_in("rounds", 1, 1, 1 << 20)?,
            batch: p.u64_in("batch", 10_000, 1, 1 << 30)?,
            scan_ns: p.u64_in("scan_ns", 300, 0, 1 << 32)?,
            row_ns: p.u64_in("row_ns", 40, 0, 1 << 32)?,
            load_ns: p.u64_in("load_ns", 5000, 0, 1 << 32)?,
            seed: p.seed(run_seed)?,
        };
        match (p.size("footprint")?, p.has("sf")) {
            (Some(_), true) => return Err(p.err("sf", "give footprint or sf, not both")),
            (_, true) => cfg.sf = p.f64_in("sf", 1.0, 1e-6, 1e5)?,
            (f, false) => {
                let target = f.unwrap_or(128 << 20) / PAGE_BYTES;
                // Footprint grows almost linearly with sf; a few secant steps land on it.
                let mut sf = 0.1;
                for _ in 0..8 {
                    cfg.sf = sf;
                    let pl = plan(&cfg);
                    let pages = pl.table_layout.end() + pl.work_pages;
                    sf *= target as f64 / pages.max(1) as f64;
                }
                if sf < 1e-6 {
                    return Err(p.err(
                        "footprint",
                        format!(
                            "{} is too small for {} threads",
                            fmt_size(f.unwrap_or(0)),
                            cfg.threads
                        ),
                    ));
                }
                // Round to 6 significant digits so the canonical spec is short.
                let mag = 10f64.powi(5 - sf.log10().floor() as i32);
                cfg.sf = (sf * mag).round() / mag;
                // The range `sf` itself takes, so that the canonical spec parses.
                if cfg.sf > 1e5 {
                    return Err(p.err(
                        "footprint",
                        format!(
                            "{} is too large: it needs sf={}, and sf is at most 100000",
                            fmt_size(f.unwrap_or(0)),
                            cfg.sf
                        ),
                    ));
                }
            }
        }
        Ok(TpchLike::build(cfg))
    }

    fn build(cfg: Config) -> TpchLike {
        let pl = plan(&cfg);
        let mut stages = Vec::new();
        for _ in 0..cfg.rounds {
            for id in &cfg.queries {
                let pi = pl.plans.iter().position(|p| p.def.id == *id).unwrap();
                for s in 0..pl.plans[pi].def.stages.len() {
                    stages.push((pi, s));
                }
            }
        }
        let threads = (0..cfg.threads)
            .map(|i| ThreadState {
                rng: stream(cfg.seed, TAG_THREAD, i as u64),
                em: Emitter::default(),
                stage: 0,
                step: 0,
                pos: Pos::StepStart,
                pending: Vec::new(),
                arrived: Vec::new(),
                map_cursor: Vec::new(),
                slot_cursor: Vec::new(),
                done: false,
            })
            .collect();
        TpchLike {
            cfg,
            tables: pl.tables,
            table_layout: pl.table_layout,
            plans: pl.plans,
            stages,
            work_pages: pl.work_pages,
            biggest: pl.biggest,
            threads,
        }
    }

    /// Scale factor.
    pub fn sf(&self) -> f64 {
        self.cfg.sf
    }

    /// Barriers each thread passes: after the load and after each query stage but the last.
    pub fn barriers(&self) -> usize {
        self.stages.len()
    }

    fn step_def(&self, stage: usize, step: usize) -> Option<(&QueryLayout, &Step)> {
        let (pi, s) = self.stages[stage - 1];
        let q = &self.plans[pi];
        q.def.stages[s].get(step).map(|st| (q, st))
    }

    /// Rows of segment `seg` of `src` for thread `tid`: (first byte, rows, row bytes).
    fn segment(
        &self,
        q: &QueryLayout,
        src: &Src,
        tid: usize,
        seg: usize,
    ) -> Option<(u64, u64, u64)> {
        let t = self.cfg.threads;
        match src {
            Src::Scan { table, .. } => (seg == 0).then(|| {
                let tl = &self.tables[*table];
                (tl.start[tid] * PAGE_BYTES, tl.rows[tid], tl.row_bytes)
            }),
            Src::Shuffle { slot } => (seg < t).then(|| {
                let s = (tid + seg) % t;
                let (page, rows) = q.slots[*slot][s];
                let (lo, hi) = split(rows, t as u64, tid as u64);
                let rb = q.def.slots[*slot];
                (page * PAGE_BYTES + lo * rb, hi - lo, rb)
            }),
        }
    }

    /// Push one row through the operators of `step`.
    fn row(
        &self,
        q: &QueryLayout,
        step: &Step,
        tid: usize,
        st: &mut ThreadState,
        buf: &mut Vec<Op>,
    ) {
        for (i, sink) in step.sinks.iter().enumerate() {
            st.em.compute(self.cfg.row_ns);
            let k = st.arrived[i];
            st.arrived[i] += 1;
            match *sink {
                Sink::Probe { map, hit } => {
                    let m = &q.maps[map];
                    let (bp, cap) = m.buckets[if m.shared { 0 } else { tid }];
                    let slot = st.rng.gen_range(0..cap);
                    st.em
                        .access(buf, bp + slot * BUCKET_BYTES / PAGE_BYTES, false);
                    if passed(k + 1, hit) == passed(k, hit) {
                        return;
                    }
                    let (page, row) = if m.shared {
                        if m.total_rows == 0 {
                            continue;
                        }
                        let mut g = st.rng.gen_range(0..m.total_rows);
                        let mut owner = 0;
                        while g >= m.data[owner].1 {
                            g -= m.data[owner].1;
                            owner += 1;
                        }
                        (m.data[owner].0, g)
                    } else {
                        let (page, rows) = m.data[tid];
                        if rows == 0 {
                            continue;
                        }
                        (page, st.rng.gen_range(0..rows))
                    };
                    st.em.range(
                        buf,
                        page * PAGE_BYTES + row * m.row_bytes,
                        m.row_bytes,
                        false,
                    );
                }
                Sink::Build { map } => {
                    let m = &q.maps[map];
                    let (bp, cap) = m.buckets[if m.shared { 0 } else { tid }];
                    let slot = st.rng.gen_range(0..cap);
                    st.em
                        .access(buf, bp + slot * BUCKET_BYTES / PAGE_BYTES, true);
                    let at = m.data[tid].0 * PAGE_BYTES + st.map_cursor[map];
                    st.map_cursor[map] += m.row_bytes;
                    st.em.range(buf, at, m.row_bytes, true);
                }
                Sink::Agg { agg } => {
                    let (page, cap) = q.aggs[agg][tid];
                    let slot = st.rng.gen_range(0..cap);
                    st.em
                        .access(buf, page + slot * AGG_SLOT_BYTES / PAGE_BYTES, true);
                }
                Sink::Shuffle { slot } => {
                    let rb = q.def.slots[slot];
                    let at = q.slots[slot][tid].0 * PAGE_BYTES + st.slot_cursor[slot];
                    st.slot_cursor[slot] += rb;
                    st.em.range(buf, at, rb, true);
                }
            }
        }
    }

    /// Advance thread `tid` by one unit of work; false when it has finished.
    fn advance(&self, tid: usize, st: &mut ThreadState, buf: &mut Vec<Op>) -> bool {
        if let Some(w) = st.pending.last_mut() {
            st.em.compute(w.2);
            st.em.access(buf, w.0, true);
            w.0 += 1;
            if w.0 == w.1 {
                st.pending.pop();
            }
            return true;
        }
        if st.stage == 0 {
            // Load: every partition of every table, written in order.
            match st.pos {
                Pos::StepStart => {
                    for tl in self.tables.iter().rev() {
                        let start = tl.start[tid];
                        let pages = (tl.rows[tid] * tl.row_bytes).div_ceil(PAGE_BYTES);
                        if pages > 0 {
                            st.pending.push((start, start + pages, self.cfg.load_ns));
                        }
                    }
                    st.pos = Pos::StepEnd;
                }
                _ => self.next_stage(st, buf),
            }
            return !st.done;
        }
        let Some((q, step)) = self.step_def(st.stage, st.step) else {
            self.next_stage(st, buf);
            return !st.done;
        };
        match st.pos {
            Pos::StepStart => {
                let (_, s) = self.stages[st.stage - 1];
                let (ms, as_) = &q.first_use[s][st.step];
                let t = self.cfg.threads as u64;
                for &m in ms {
                    let ml = &q.maps[m];
                    let (start, pages) = if ml.shared {
                        let (p, cap) = ml.buckets[0];
                        let (lo, hi) =
                            split((cap * BUCKET_BYTES).div_ceil(PAGE_BYTES), t, tid as u64);
                        (p + lo, hi - lo)
                    } else {
                        let (p, cap) = ml.buckets[tid];
                        (p, (cap * BUCKET_BYTES).div_ceil(PAGE_BYTES))
                    };
                    if pages > 0 {
                        st.pending.push((start, start + pages, ZERO_PAGE_NS));
                    }
                }
                for &a in as_ {
                    let (p, cap) = q.aggs[a][tid];
                    st.pending.push((
                        p,
                        p + (cap * AGG_SLOT_BYTES).div_ceil(PAGE_BYTES),
                        ZERO_PAGE_NS,
                    ));
                }
                st.pending.reverse();
                st.arrived = vec![0; step.sinks.len()];
                st.pos = Pos::Batch { seg: 0, b: 0 };
            }
            Pos::Batch { seg, b } => {
                let Some((base, rows, rb)) = self.segment(q, &step.src, tid, seg) else {
                    st.pos = Pos::StepEnd;
                    return true;
                };
                let batch = self.cfg.batch;
                if b * batch >= rows {
                    st.pos = Pos::Batch { seg: seg + 1, b: 0 };
                    return true;
                }
                let nb = batch.min(rows - b * batch);
                let (k0, k1) = (b * batch, b * batch + nb);
                let left = match &step.src {
                    Src::Scan { table, cols, sel } => {
                        let tl = &self.tables[*table];
                        let def = &TABLES[*table];
                        let boff = base + b * batch * tl.row_bytes;
                        for &c in cols {
                            let w = def.cols[c].1;
                            st.em.compute(nb * w * self.cfg.scan_ns / PAGE_BYTES);
                            st.em.range(buf, boff + nb * tl.prefix[c], nb * w, false);
                        }
                        passed(k1, *sel) - passed(k0, *sel)
                    }
                    Src::Shuffle { .. } => {
                        st.em.compute(nb * rb * self.cfg.scan_ns / PAGE_BYTES);
                        st.em.range(buf, base + k0 * rb, nb * rb, false);
                        nb
                    }
                };
                st.pos = Pos::Rows { seg, b, left };
            }
            Pos::Rows { seg, b, left } => {
                if left == 0 {
                    st.pos = Pos::Batch { seg, b: b + 1 };
                } else {
                    self.row(q, step, tid, st, buf);
                    st.pos = Pos::Rows {
                        seg,
                        b,
                        left: left - 1,
                    };
                }
            }
            Pos::StepEnd => {
                st.step += 1;
                st.pos = Pos::StepStart;
            }
        }
        true
    }

    /// The current stage is over: barrier (unless it was the last) and set up the next.
    fn next_stage(&self, st: &mut ThreadState, buf: &mut Vec<Op>) {
        if st.stage == self.stages.len() {
            st.em.flush(buf);
            st.done = true;
            return;
        }
        st.em.barrier(buf);
        st.stage += 1;
        st.step = 0;
        st.pos = Pos::StepStart;
        let (pi, s) = self.stages[st.stage - 1];
        if s == 0 {
            let q = &self.plans[pi];
            st.map_cursor = vec![0; q.maps.len()];
            st.slot_cursor = vec![0; q.slots.len()];
        }
    }
}

impl Workload for TpchLike {
    fn name(&self) -> String {
        let c = &self.cfg;
        format!(
            "tpch-like:sf={},threads={},queries={},rounds={},batch={},scan_ns={},row_ns={},load_ns={},seed={}",
            c.sf,
            c.threads,
            c.queries.iter().map(|q| q.to_string()).collect::<Vec<_>>().join("/"),
            c.rounds,
            c.batch,
            c.scan_ns,
            c.row_ns,
            c.load_ns,
            c.seed
        )
    }

    fn threads(&self) -> usize {
        self.cfg.threads
    }

    fn footprint_pages(&self) -> u64 {
        self.table_layout.end() + self.work_pages
    }

    fn content_class(&self, _pid: u32, page: u64) -> ContentClass {
        if page < self.table_layout.end() {
            return self.table_layout.class_of(page);
        }
        match self.plans.get(self.biggest) {
            Some(q) => q.layout.class_of(page),
            None => ContentClass::Zero,
        }
    }

    fn next_ops(&mut self, tid: usize, buf: &mut Vec<Op>) -> Result<()> {
        if tid >= self.cfg.threads {
            return Err(bad_tid("tpch-like", tid, self.cfg.threads));
        }
        let mut st = std::mem::replace(
            &mut self.threads[tid],
            ThreadState {
                rng: stream(0, 0, 0),
                em: Emitter::default(),
                stage: 0,
                step: 0,
                pos: Pos::StepEnd,
                pending: Vec::new(),
                arrived: Vec::new(),
                map_cursor: Vec::new(),
                slot_cursor: Vec::new(),
                done: true,
            },
        );
        let start = buf.len();
        while !st.done && buf.len() - start < CHUNK_OPS {
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
    fn table_widths() {
        // Row widths from the column lists (Spark sizes; strings 4 + TPC-H mean length).
        let w: Vec<u64> = TABLES
            .iter()
            .map(|t| t.cols.iter().map(|c| c.1).sum())
            .collect();
        assert_eq!(w, vec![133, 117, 184, 153, 156, 161]);
        // Every modelled query refers to existing columns, maps, slots and aggregates.
        for &id in DEFAULT_QUERIES {
            let q = query(id).unwrap();
            for stage in &q.stages {
                for step in stage {
                    if let Src::Scan { table, cols, .. } = &step.src {
                        assert!(cols.iter().all(|&c| c < TABLES[*table].cols.len()));
                    }
                    for s in &step.sinks {
                        match *s {
                            Sink::Probe { map, .. } | Sink::Build { map } => {
                                assert!(map < q.maps.len())
                            }
                            Sink::Agg { agg } => assert!(agg < q.aggs.len()),
                            Sink::Shuffle { slot } => assert!(slot < q.slots.len()),
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn stages_balanced_and_footprint_exact() {
        let mut w = TpchLike::parse("footprint=6MiB,threads=4,batch=2000", 7).unwrap();
        let bar = w.barriers();
        // Load + stages 1 + 3 + 1 + 3 + 2 + 2 + 2.
        assert_eq!(bar, 14);
        let fp = w.footprint_pages();
        assert!(fp <= 1536 && fp as f64 >= 0.95 * 1536.0, "{fp}");
        let s = drain(&mut w, Order::RoundRobin);
        for st in &s {
            assert_eq!(barriers(st), bar);
        }
        assert_eq!(distinct_pages(&s), fp);
        // Balanced: every stage's accesses within 10% across threads (equal partitions;
        // only the random probe hits differ).
        for k in 0..=bar {
            let counts: Vec<usize> = s.iter().map(|st| accesses(phase(st, k))).collect();
            let (mn, mx) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
            assert!(mx as f64 <= 1.1 * mn as f64 + 3.0, "stage {k}: {counts:?}");
        }
    }

    #[test]
    fn q6_scan_counts_by_hand() {
        // One thread, lineitem of 10,000 rows (sf 1/600), batches of 1000 rows; Q6 scans
        // shipdate (4 B), discount, quantity, extendedprice (8 B): per batch 4,000 + 3 × 8,000
        // bytes; 1.9% of 10,000 rows reach the aggregation.
        let mut w =
            TpchLike::parse("sf=0.0016666666666666668,threads=1,queries=6,batch=1000", 1).unwrap();
        assert_eq!(w.tables[LINEITEM].rows[0], 10_000);
        let s = drain(&mut w, Order::RoundRobin);
        let q6 = phase(&s[0], 1);
        // The aggregation table has 64 slots × 32 B = 2 KiB: one page. Zeroing writes it
        // once; then in each of the 10 batches the first of its 19 selected rows writes it
        // after the batch's column pages were read, and the next 18 writes merge with it.
        let agg_page = w.plans[0].aggs[0][0].0;
        let agg_writes: usize = q6
            .iter()
            .filter(|o| matches!(o, Op::Access { page, write: true } if *page == agg_page))
            .count();
        assert_eq!(agg_writes, 11);
        let reads: Vec<u64> = q6
            .iter()
            .filter_map(|o| match o {
                Op::Access { page, write: false } => Some(*page),
                _ => None,
            })
            .collect();
        // Batch 0 (bytes from 0): shipdate at 1000 × 62, 4,000 B: pages 15..=16; discount at
        // 1000 × 44, 8,000 B: 10..=12; quantity at 1000 × 28: 6..=8; extendedprice at
        // 1000 × 36: 8..=10 (its page 8 merges with quantity's last).
        assert_eq!(&reads[..10], &[15, 16, 10, 11, 12, 6, 7, 8, 9, 10]);
        // Batch 1 starts at byte 133,000: shipdate at 195,000 → page 47.
        assert_eq!(reads[10], 47);
        assert_eq!(
            compute_ns(q6),
            // scan: 10 batches × (4000 + 3 × 8000) B × 300 ns / 4096, rounded down per column;
            // rows: 190 × 40 ns; zeroing one page: 100 ns.
            10 * (4000 * 300 / 4096 + 3 * (8000 * 300 / 4096)) + 190 * 40 + 100
        );
    }

    #[test]
    fn determinism_and_polling_order() {
        let spec = "tpch-like:footprint=3MiB,threads=3,queries=3/18,batch=500";
        let mut a = parse(spec, 11).unwrap();
        let mut b = parse(spec, 11).unwrap();
        let mut c = parse(spec, 12).unwrap();
        let sa = drain(a.as_mut(), Order::RoundRobin);
        let sb = drain(b.as_mut(), Order::Shuffled(99));
        let sc = drain(c.as_mut(), Order::ReverseSerial);
        assert_eq!(sa, sb);
        assert_ne!(sa, sc);
        let name = a.name();
        assert!(name.starts_with("tpch-like:sf=0.00"), "{name}");
        assert!(name.ends_with(",threads=3,queries=3/18,rounds=1,batch=500,scan_ns=300,row_ns=40,load_ns=5000,seed=11"), "{name}");
        let mut again = parse(&a.name(), 0).unwrap();
        assert_eq!(drain(again.as_mut(), Order::RoundRobin), sa);
    }

    #[test]
    fn content_classes() {
        let w = TpchLike::parse("footprint=4MiB,threads=2", 0).unwrap();
        let l = &w.tables[LINEITEM];
        // lineitem rows are mostly numbers (73 of 133 bytes); customer rows mostly text.
        assert_eq!(w.content_class(0, l.start[0]), ContentClass::Numeric);
        assert_eq!(
            w.content_class(0, w.tables[CUSTOMER].start[1]),
            ContentClass::Text
        );
        let q = &w.plans[w.biggest];
        assert_eq!(q.def.id, 18);
        assert_eq!(w.content_class(0, q.aggs[0][0].0), ContentClass::Random);
        assert_eq!(w.content_class(0, q.slots[0][0].0), ContentClass::Numeric);
        assert_eq!(w.content_class(0, w.footprint_pages()), ContentClass::Zero);
    }

    #[test]
    fn spec_errors_name_the_key() {
        let e = |s: &str| parse(s, 0).err().unwrap().to_string();
        assert_eq!(
            e("tpch-like:queries=1/4"),
            "tpch-like.queries: '4' is not a modelled query (valid: 1, 3, 6, 9, 12, 14, 18; separate with '/')"
        );
        assert_eq!(
            e("tpch-like:sf=1,footprint=1GiB"),
            "tpch-like.sf: give footprint or sf, not both"
        );
        assert_eq!(
            e("tpch-like:threads=0"),
            "tpch-like.threads: 0 is outside [1, 1024]"
        );
        assert_eq!(
            e("tpch-like:rounds=two"),
            "tpch-like.rounds: 'two' is not a whole number"
        );
        assert!(e("tpch-like:scale=3")
            .starts_with("tpch-like.scale: unknown key for tpch-like (valid: footprint, sf,"));
    }
}

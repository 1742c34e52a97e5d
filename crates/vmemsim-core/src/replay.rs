//! Replaying a trace through one policy on one machine: the smallest useful run.
//! [`ReplayConfig`] is its settings as the front ends give them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::access::Access;
use crate::engine::{Machine, MachineConfig, Stats};
use crate::error::{Error, Result};
use crate::policy::registry::PolicyVisitor;
use crate::policy::{Policy, PolicyKind, PolicyOptions};
use crate::trace::recorded::FileIo;
use crate::trace::{collect, TraceSource, CHUNK};
use crate::watermarks::Watermarks;

pub(crate) mod config;
pub use config::{ReplayConfig, ReplayRun, ZramPoolConfig};

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What to run.
#[derive(Clone, Debug)]
pub struct ReplaySpec {
    pub policy: PolicyKind,
    pub machine: MachineConfig,
    pub options: PolicyOptions,
    /// Record the cumulative [`Stats`] every `sample_every` accesses (and once more at the end
    /// of the trace when it does not end on a boundary) into [`ReplayResult::series`];
    /// 0 = no series. A run may record at most [`MAX_SAMPLES`] samples.
    pub sample_every: u64,
    /// Accesses replayed before counting starts (a warm-up, as libCacheSim's `--warmup-sec`
    /// by count): the first `warmup` accesses run through the machine as usual (filling
    /// memory, training the policy) and then every counter of [`ReplayResult::stats`] is reset
    /// to zero but the peaks (`peak_resident`, `zram_mem_used_max`, which keep their whole-run
    /// values), so `stats` and `series` cover only the accesses after the warm-up. 0 = none;
    /// a warm-up of the whole trace or more, which would leave nothing to count, is an error
    /// naming `warmup`.
    pub warmup: u64,
}

impl ReplaySpec {
    /// A spec without a time series.
    pub fn new(policy: PolicyKind, machine: MachineConfig, options: PolicyOptions) -> Self {
        ReplaySpec {
            policy,
            machine,
            options,
            sample_every: 0,
            warmup: 0,
        }
    }
}

/// Most samples one run may record (each is a full [`Stats`], 192 bytes; a million is 192 MB
/// in memory and several hundred MB of JSON across the binding, far more points than any plot
/// needs). A run that would record more is an error naming `sample_every`, raised before the
/// run when the source knows its length, else when the limit is passed.
pub const MAX_SAMPLES: u64 = 1_000_000;

/// What a run produced, with everything needed to re-run it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayResult {
    pub version: String,
    pub policy: String,
    pub frames: u32,
    pub seed: u64,
    pub trace: String,
    /// Accesses replayed before counting started ([`ReplaySpec::warmup`]); `stats` and
    /// `series` cover the rest, `policy_counters` the whole run.
    #[serde(default)]
    pub warmup: u64,
    pub page_cluster: u8,
    /// The swap device as far as it decides counters, as a spec the replay takes again:
    /// `disk` (asynchronous writes, the swap cache and readahead), `hdd:size=SIZE` (the same
    /// on a rotational disk), either with its `max_pages` when set, or `zram`
    /// (`SWP_SYNCHRONOUS_IO`, [`MachineConfig::swap_sync_io`]).
    #[serde(default = "default_swap")]
    pub swap: String,
    /// zram's pool charged to memory: the trace's content class and the device's parameters
    /// ([`MachineConfig::zram_pool`]); omitted when not modelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zram_pool: Option<crate::engine::ZramPool>,
    /// Whose reclaim rules the kernel policies followed where Linux versions differ.
    #[serde(default)]
    pub kernel: crate::policy::KernelVersion,
    /// Watermarks in force (kernel policies; zeros for demand policies).
    pub watermarks: Watermarks,
    pub options: BTreeMap<String, String>,
    pub stats: Stats,
    pub policy_counters: BTreeMap<String, u64>,
    /// Cumulative counters after every `sample_every` accesses, then at the end of the trace
    /// if it did not end on a boundary (so the last sample equals `stats`); empty without
    /// sampling or for an empty trace. Omitted from JSON when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Stats>,
}

fn default_swap() -> String {
    "disk".to_string()
}

/// Called after each chunk with the number of accesses replayed so far.
pub type Progress<'a> = &'a mut (dyn FnMut(u64) + 'a);

struct Run<'a, 'b> {
    src: &'a mut dyn TraceSource,
    machine: MachineConfig,
    sample_every: u64,
    warmup: u64,
    progress: Option<&'b mut dyn FnMut(u64)>,
}

/// The error of a warm-up that took every access of a trace of `accesses` (at least one).
fn warmup_too_long(warmup: u64, accesses: u64) -> Error {
    Error::config(
        "warmup",
        format!(
            "{warmup} accesses take the whole trace ({accesses} accesses), leaving nothing to \
             count; give a shorter warm-up"
        ),
    )
}

/// The end of a warm-up: every counter back to zero, but the peaks and the gauges
/// (`nr_file_pages`, `nr_dirty`, `nr_writeback`, `nr_mapped`), which keep their values.
fn start_counting(stats: &mut Stats) {
    *stats = Stats {
        peak_resident: stats.peak_resident,
        zram_mem_used_max: stats.zram_mem_used_max,
        nr_file_pages: stats.nr_file_pages,
        nr_dirty: stats.nr_dirty,
        nr_writeback: stats.nr_writeback,
        nr_mapped: stats.nr_mapped,
        ..Stats::default()
    };
}

/// What a run hands back to [`replay`].
struct Outcome {
    stats: Stats,
    page_cluster: u8,
    watermarks: Watermarks,
    counters: Vec<(&'static str, u64)>,
    series: Vec<Stats>,
}

/// The time series of a run: a snapshot of the cumulative counters each time the access
/// count reaches the next multiple of `every`. Callers split their batches of accesses at
/// [`Series::room`], so the per-access loop carries no check.
struct Series {
    every: u64,
    /// Access count of the next sample (`u64::MAX` when not sampling).
    next: u64,
    samples: Vec<Stats>,
}

impl Series {
    fn new(every: u64) -> Self {
        Series {
            every,
            next: if every == 0 { u64::MAX } else { every },
            samples: Vec::new(),
        }
    }

    /// Accesses that can be served before the next sample is due, `done` having been served.
    #[inline]
    fn room(&self, done: u64) -> u64 {
        self.next - done
    }

    /// Record a sample if `stats` is on the boundary.
    #[inline]
    fn on_boundary(&mut self, stats: &Stats) -> Result<()> {
        if stats.accesses == self.next {
            self.push(stats)?;
            self.next = self.next.saturating_add(self.every);
        }
        Ok(())
    }

    /// The end of the trace: a last sample unless the last access was on a boundary.
    fn finish(&mut self, stats: &Stats) -> Result<()> {
        let last = self.samples.last().map_or(0, |s| s.accesses);
        if self.every != 0 && stats.accesses != last {
            self.push(stats)?;
        }
        Ok(())
    }

    fn push(&mut self, stats: &Stats) -> Result<()> {
        if self.samples.len() as u64 >= MAX_SAMPLES {
            return Err(too_many_samples(self.every, None));
        }
        self.samples.push(stats.clone());
        Ok(())
    }
}

fn too_many_samples(every: u64, accesses: Option<u64>) -> Error {
    let n = match accesses {
        Some(n) => format!("{n} accesses"),
        None => "this trace".to_string(),
    };
    Error::config(
        "sample_every",
        format!(
            "{every} gives more than {MAX_SAMPLES} samples on {n}; sample less often (0 = no series)"
        ),
    )
}

impl PolicyVisitor for Run<'_, '_> {
    type Out = Result<Outcome>;
    fn visit<P: Policy>(self, p: P) -> Self::Out {
        let Run {
            src,
            machine,
            sample_every,
            warmup,
            mut progress,
        } = self;
        if sample_every != 0 {
            if let Some(n) = src.len_hint() {
                let counted = n.saturating_sub(warmup);
                if counted.div_ceil(sample_every) > MAX_SAMPLES {
                    return Err(too_many_samples(sample_every, Some(counted)));
                }
            }
        }
        let mut series = Series::new(sample_every);
        let needs_future = p.needs_future();
        if needs_future {
            if let Some(n) = src.len_hint() {
                crate::util::check_memory(
                    "policy",
                    &format!("{} (the whole trace held: {n} accesses)", p.name()),
                    n.saturating_mul(crate::util::BYTES_PER_HELD_ACCESS),
                )?;
            }
        }
        let mut m = Machine::new(&machine, p)?;
        // The files of the trace's file I/O records (a pass of their own over the trace).
        let files = src.files()?.unwrap_or_default();
        for &f in &files {
            m.add_file(f)?;
        }
        let has_io = !files.is_empty();
        if has_io {
            if let Some(ps) = src.page_size() {
                m.set_user_page_size(ps)?;
            }
            // `mmap` records of files map the page cache (`engine::filemap`).
            m.enable_file_mmap();
        }
        let src_name = src.name();
        if needs_future {
            let all = collect(src)?;
            let next = next_use(&all);
            let n = all.len();
            if n > 0 && warmup >= n as u64 {
                return Err(warmup_too_long(warmup, n as u64));
            }
            // The warm-up ends after access `w`.
            let w = warmup as usize;
            let mut i = 0;
            // Runs of accesses that end at a chunk boundary (OOM check, progress), at the end
            // of the warm-up or at a sample boundary, whichever comes first.
            while i < n {
                let to_chunk = (CHUNK - i % CHUNK) as u64;
                let room = if i < w {
                    to_chunk.min((w - i) as u64)
                } else {
                    series.room((i - w) as u64).min(to_chunk)
                } as usize;
                let end = (i + room).min(n);
                for j in i..end {
                    m.access(all[j], next[j]);
                }
                i = end;
                if i == w {
                    start_counting(&mut m.stats);
                }
                if i >= w {
                    series.on_boundary(&m.stats)?;
                }
                if i % CHUNK == 0 {
                    oom_error(&m, &machine)?;
                    if let Some(cb) = progress.as_mut() {
                        cb(i as u64);
                    }
                }
            }
        } else {
            // The trace is read (decoded, generated) on a second thread, a few chunks ahead
            // of the simulation; chunks arrive in order, so results are the same.
            std::thread::scope(|scope| -> Result<()> {
                // Two buffers: one simulated while the other is filled.
                let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Result<Chunk>>(1);
                let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Chunk>();
                for _ in 0..2 {
                    let _ = empty_tx.send((Vec::with_capacity(CHUNK), Vec::new()));
                }
                scope.spawn(move || {
                    while let Ok((mut buf, mut io)) = empty_rx.recv() {
                        let r = if has_io {
                            src.next_chunk_io(&mut buf, &mut io)
                        } else {
                            src.next_chunk(&mut buf)
                        };
                        let last = r.is_err() || buf.is_empty() && io.is_empty();
                        if full_tx.send(r.map(|()| (buf, io))).is_err() || last {
                            break;
                        }
                    }
                });
                // Accesses served so far, warm-up included, and of the warm-up still to come.
                let mut served = 0u64;
                let mut warm_left = warmup;
                for chunk in full_rx.iter() {
                    let (buf, io) = chunk?;
                    if buf.is_empty() && io.is_empty() {
                        break;
                    }
                    if has_io {
                        check_below_files(&src_name, &buf)?;
                    }
                    if io.is_empty() {
                        serve(&mut m, &buf, &mut warm_left, &mut series, sample_every)?;
                    } else {
                        // The accesses before each file I/O record, then the record.
                        let mut at = 0;
                        for (pos, x) in &io {
                            let pos = *pos as usize;
                            serve(
                                &mut m,
                                &buf[at..pos],
                                &mut warm_left,
                                &mut series,
                                sample_every,
                            )?;
                            at = pos;
                            m.file_io(x)?;
                            if m.out_of_memory().is_some() {
                                break;
                            }
                        }
                        serve(
                            &mut m,
                            &buf[at..],
                            &mut warm_left,
                            &mut series,
                            sample_every,
                        )?;
                    }
                    served += buf.len() as u64;
                    oom_error(&m, &machine)?;
                    if let Some(cb) = progress.as_mut() {
                        cb(served);
                    }
                    let _ = empty_tx.send((buf, io));
                }
                // A warm-up of the whole trace (an empty trace is not this error).
                if warmup > 0 && served > 0 && served <= warmup {
                    return Err(warmup_too_long(warmup, served));
                }
                Ok(())
            })?;
        }
        oom_error(&m, &machine)?;
        series.finish(&m.stats)?;
        Ok(Outcome {
            stats: m.stats.clone(),
            page_cluster: m.page_cluster(),
            watermarks: m.watermarks(),
            counters: m.policy.counters(),
            series: series.samples,
        })
    }
}

/// A chunk of accesses with the file I/O records among them
/// ([`TraceSource::next_chunk_io`]).
type Chunk = (Vec<Access>, Vec<(u32, FileIo)>);

/// Serve a run of accesses: the warm-up's part first (its end resets the counters), then
/// the rest, split at each sample boundary.
fn serve<P: Policy>(
    m: &mut Machine<P>,
    mut rest: &[Access],
    warm_left: &mut u64,
    series: &mut Series,
    sample_every: u64,
) -> Result<()> {
    if *warm_left > 0 {
        let k = (*warm_left).min(rest.len() as u64) as usize;
        m.access_all(&rest[..k]);
        rest = &rest[k..];
        *warm_left -= k as u64;
        if *warm_left == 0 {
            start_counting(&mut m.stats);
        }
    }
    if sample_every == 0 {
        m.access_all(rest);
    } else {
        // Split the chunk at each sample boundary.
        while !rest.is_empty() {
            let k = series.room(m.stats.accesses).min(rest.len() as u64) as usize;
            m.access_all(&rest[..k]);
            rest = &rest[k..];
            series.on_boundary(&m.stats)?;
        }
    }
    Ok(())
}

/// The page numbers of a trace with file I/O must stay below the page cache's range
/// ([`crate::mm::pagecache::FILE_BASE`]: above every user address of a 47-bit address
/// space).
fn check_below_files(trace: &str, buf: &[Access]) -> Result<()> {
    use crate::mm::pagecache::{FILE_BASE, FILE_LIMIT};
    match buf
        .iter()
        .find(|a| (FILE_BASE..FILE_LIMIT).contains(&a.page))
    {
        None => Ok(()),
        Some(a) => Err(Error::trace(
            trace,
            "",
            format!(
                "page {:#x} is in the range the page cache's files take ({FILE_BASE:#x}..\
                 {FILE_LIMIT:#x}) in a trace with file I/O: page numbers of user addresses \
                 are below {FILE_BASE:#x}",
                a.page
            ),
        )),
    }
}

/// The error of a run that ran out of reclaimable memory (where Linux would OOM-kill).
fn oom_error<P: Policy>(m: &Machine<P>, machine: &MachineConfig) -> Result<()> {
    match m.out_of_memory() {
        None => Ok(()),
        Some(t) => Err(Error::config(
            "frames",
            format!(
                "out of memory at access {t}: {} could reclaim nothing with {} frames (Linux would OOM-kill here); give more frames or lower watermarks",
                m.policy.name(),
                machine.frames
            ),
        )),
    }
}

/// Index of the next access to the same page for every access (`u64::MAX` = never again).
pub fn next_use(trace: &[Access]) -> Vec<u64> {
    let mut last: crate::util::PageMap<u64> = Default::default();
    last.reserve(trace.len() / 4);
    let mut next = vec![u64::MAX; trace.len()];
    for (i, a) in trace.iter().enumerate().rev() {
        if let Some(j) = last.insert(a.page, i as u64) {
            next[i] = j;
        }
    }
    next
}

/// Replay `src` under `spec`.
pub fn replay(
    src: &mut dyn TraceSource,
    spec: &ReplaySpec,
    progress: Option<&mut dyn FnMut(u64)>,
) -> Result<ReplayResult> {
    let trace = src.name();
    let run = Run {
        src: &mut *src,
        machine: spec.machine.clone(),
        sample_every: spec.sample_every,
        warmup: spec.warmup,
        progress,
    };
    let Outcome {
        stats,
        page_cluster,
        watermarks,
        counters,
        series,
    } = spec
        .policy
        .build(spec.machine.frames, &spec.options, run)??;
    if stats.accesses == 0 && stats.file_io == 0 {
        // Counters of nothing would read as a run that went perfectly; say why instead.
        let why = match src.records() {
            Some(n) if n > 0 => format!(
                "nothing to replay: its {n} records are file-table entries or mmap records of \
                 files, which replay does not model yet"
            ),
            _ => "no page access to replay: the trace is empty".to_string(),
        };
        return Err(Error::trace(&trace, "", why));
    }
    Ok(ReplayResult {
        version: VERSION.to_string(),
        policy: spec.policy.name().to_string(),
        frames: spec.machine.frames,
        seed: spec.options.seed,
        trace,
        warmup: spec.warmup,
        page_cluster,
        zram_pool: spec.machine.zram_pool,
        swap: if spec.machine.swap_sync_io || spec.machine.zram_pool.is_some() {
            "zram".to_string()
        } else {
            // Each kind's own `max_pages` (an `hdd`'s 168, a plain disk's 128) goes unsaid.
            let (dev, default_pages) = match spec.machine.swap_rotational {
                // `(n + 1) * 4` KiB: the usable slots and mkswap's header page.
                Some(n) => {
                    let kib = (n as u64 + 1) * 4;
                    let size = if kib.is_multiple_of(1024) {
                        format!("{}MiB", kib / 1024)
                    } else {
                        format!("{kib}KiB")
                    };
                    (
                        format!("hdd:size={size}"),
                        crate::device::HddParams::default().max_pages,
                    )
                }
                None => (
                    "disk".to_string(),
                    crate::policy::swap_plug::BLK_MAX_SEGMENTS,
                ),
            };
            match spec.machine.swap_max_pages {
                Some(m) if m != default_pages && spec.machine.swap_rotational.is_some() => {
                    format!("{dev},max_pages={m}")
                }
                Some(m) if m != default_pages => format!("{dev}:max_pages={m}"),
                _ => dev,
            }
        },
        kernel: spec.machine.kernel,
        watermarks,
        options: spec
            .options
            .keys()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        stats,
        policy_counters: counters
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        series,
    })
}

/// Number of distinct pages in a source (for `--frames 25%`).
pub fn count_distinct(src: &mut dyn TraceSource) -> Result<u64> {
    let mut seen: std::collections::HashSet<
        u64,
        std::hash::BuildHasherDefault<crate::util::PageHasher>,
    > = Default::default();
    let mut buf = Vec::with_capacity(CHUNK);
    loop {
        src.next_chunk(&mut buf)?;
        if buf.is_empty() {
            return Ok(seen.len() as u64);
        }
        seen.extend(buf.iter().map(|a| a.page));
    }
}

/// `--frames` as given by a user: a count, or a percentage of the trace's distinct pages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FramesSpec {
    Count(u32),
    Percent(f64),
}

impl FramesSpec {
    pub fn parse(s: &str) -> Result<FramesSpec> {
        let s = s.trim();
        let bad = |why: &str| Error::config("frames", format!("'{s}': {why}"));
        if let Some(p) = s.strip_suffix('%') {
            let v: f64 = p.trim().parse().map_err(|_| bad("not a percentage"))?;
            if !(v > 0.0 && v <= 100_000.0 && v.is_finite()) {
                return Err(bad("percentage must be > 0"));
            }
            return Ok(FramesSpec::Percent(v));
        }
        let v: i128 = s
            .parse()
            .map_err(|_| bad("not a whole number of frames or a percentage like 25%"))?;
        if v <= 0 {
            return Err(bad("must be at least 1"));
        }
        if v > crate::engine::MAX_FRAMES as i128 {
            return Err(bad(&format!(
                "too large to simulate (at most {} frames, 1 TiB)",
                crate::engine::MAX_FRAMES
            )));
        }
        Ok(FramesSpec::Count(v as u32))
    }

    /// Frames for a trace of `distinct` pages (a percentage rounds, at least 1).
    pub fn resolve(self, distinct: u64) -> u32 {
        match self {
            FramesSpec::Count(n) => n,
            FramesSpec::Percent(p) => ((distinct as f64 * p / 100.0).round() as u64)
                .clamp(1, crate::engine::MAX_FRAMES as u64)
                as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::VecSource;

    fn run(policy: &str, pages: &[u64], frames: u32) -> ReplayResult {
        let spec = ReplaySpec {
            policy: PolicyKind::from_name(policy).unwrap(),
            machine: MachineConfig {
                check_invariants: true,
                ..MachineConfig::new(frames)
            },
            options: PolicyOptions::new(1),
            sample_every: 0,
            warmup: 0,
        };
        replay(&mut VecSource::from_pages(pages), &spec, None).unwrap()
    }

    const BELADY: [u64; 12] = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5];

    #[test]
    fn fifo_belady_anomaly() {
        assert_eq!(run("fifo", &BELADY, 3).stats.faults, 9);
        assert_eq!(run("fifo", &BELADY, 4).stats.faults, 10);
    }

    #[test]
    fn lru_textbook() {
        // LRU on the Belady string: 10 faults with 3 frames, 8 with 4 (hand-checked).
        assert_eq!(run("lru", &BELADY, 3).stats.faults, 10);
        assert_eq!(run("lru", &BELADY, 4).stats.faults, 8);
    }

    #[test]
    fn major_faults_are_refaults() {
        // 3 frames, 4 distinct pages cycled twice under LRU: every access misses;
        // the first 4 are first touches, the last 4 refault from swap.
        let r = run("lru", &[1, 2, 3, 4, 1, 2, 3, 4], 3);
        assert_eq!(
            (r.stats.faults, r.stats.first_touch, r.stats.major_faults),
            (8, 4, 4)
        );
        // Evictions at accesses 4,1,2,3,4 (5 of them); the last one evicts page 1, which was
        // swapped in by a read and is still clean in the swap cache: no second write.
        assert_eq!(r.stats.evictions, 5);
        assert_eq!(r.stats.pswpout, 4);
        assert_eq!(r.stats.pswpin, 4);
    }

    #[test]
    fn frames_spec() {
        assert_eq!(FramesSpec::parse("25%").unwrap().resolve(1000), 250);
        assert_eq!(FramesSpec::parse("100").unwrap(), FramesSpec::Count(100));
        for bad in ["0", "-3", "abc", "1e99", "99999999999", "0%", "%"] {
            assert!(FramesSpec::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            FramesSpec::parse("-3").unwrap_err().to_string(),
            "frames: '-3': must be at least 1"
        );
    }

    #[test]
    fn unknown_policy_lists_valid() {
        let e = PolicyKind::from_name("nope").unwrap_err().to_string();
        assert!(
            e.starts_with("policy: unknown policy 'nope'; valid: fifo, lru"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod tiny_memory {
    use super::*;
    use crate::trace::VecSource;

    /// Every policy on machines of 1..=12 frames: a result or a clear error, never a panic.
    #[test]
    fn tiny_machines_never_panic() {
        let pages: Vec<u64> = (0..1200u64).map(|i| (i * 7919 + i / 3) % 40).collect();
        for (kind, name, _) in PolicyKind::ALL {
            for frames in 1..=12 {
                let spec = ReplaySpec {
                    policy: *kind,
                    machine: MachineConfig {
                        check_invariants: true,
                        ..MachineConfig::new(frames)
                    },
                    options: PolicyOptions::new(3),
                    sample_every: 0,
                    warmup: 0,
                };
                match replay(&mut VecSource::from_pages(&pages), &spec, None) {
                    Ok(r) => assert!(r.stats.faults >= 40, "{name} at {frames} frames"),
                    Err(e) => {
                        let msg = e.to_string();
                        assert!(
                            msg.starts_with("frames: out of memory at access"),
                            "{name}/{frames}: {msg}"
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod series {
    use super::*;
    use crate::trace::VecSource;

    fn run(policy: &str, pages: &[u64], frames: u32, every: u64) -> Result<ReplayResult> {
        let spec = ReplaySpec {
            policy: PolicyKind::from_name(policy).unwrap(),
            machine: MachineConfig {
                check_invariants: true,
                ..MachineConfig::new(frames)
            },
            options: PolicyOptions::new(1),
            sample_every: every,
            warmup: 0,
        };
        replay(&mut VecSource::from_pages(pages), &spec, None)
    }

    /// `(accesses, faults)` of every sample.
    fn faults(r: &ReplayResult) -> Vec<(u64, u64)> {
        r.series.iter().map(|s| (s.accesses, s.faults)).collect()
    }

    const BELADY: [u64; 12] = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5];

    #[test]
    fn fifo_by_hand() {
        // FIFO, 3 frames, Belady's string: misses at accesses 1-7, 10, 11; hits at 8, 9, 12.
        // Cumulative faults after each access: 1 2 3 4 5 6 7 7 7 8 9 9.
        let r = run("fifo", &BELADY, 3, 5).unwrap();
        // Samples at 5 and 10, and a last one at 12 (not a multiple of 5).
        assert_eq!(faults(&r), [(5, 5), (10, 8), (12, 9)]);
        // Refaults (major) at accesses 5, 6, 10, 11; first touches of pages 1-4 by access 4,
        // of page 5 at access 7.
        let major: Vec<u64> = r.series.iter().map(|s| s.major_faults).collect();
        let cold: Vec<u64> = r.series.iter().map(|s| s.first_touch).collect();
        assert_eq!((major, cold), (vec![1, 3, 4], vec![4, 5, 5]));
        assert_eq!(r.series.last(), Some(&r.stats));
    }

    #[test]
    fn lru_ending_on_a_boundary() {
        // LRU, 3 frames, Belady's string: hits only at accesses 8 and 9; cumulative faults
        // 1 2 3 4 5 6 7 7 7 8 9 10. 12 accesses end on a boundary of 3: no extra sample.
        let r = run("lru", &BELADY, 3, 3).unwrap();
        assert_eq!(faults(&r), [(3, 3), (6, 6), (9, 7), (12, 10)]);
        assert_eq!(r.series.last(), Some(&r.stats));
    }

    #[test]
    fn opt_path_samples_too() {
        // OPT (the path that reads the whole trace first), 3 frames: access 4 evicts 3 (next
        // used last), access 7 evicts 4; hits at 5, 6, 8, 9, 12. Cumulative faults
        // 1 2 3 4 4 4 5 5 5 6 7 7.
        let r = run("opt", &BELADY, 3, 4).unwrap();
        assert_eq!(faults(&r), [(4, 4), (8, 5), (12, 7)]);
        assert_eq!(r.series.last(), Some(&r.stats));
    }

    #[test]
    fn fewer_accesses_than_the_period_give_one_sample() {
        let r = run("fifo", &BELADY, 3, 100).unwrap();
        assert_eq!(faults(&r), [(12, 9)]);
    }

    #[test]
    fn no_sampling_no_series() {
        assert!(run("fifo", &BELADY, 3, 0).unwrap().series.is_empty());
        // An empty trace has nothing to replay: an error, not an empty result.
        let e = run("fifo", &[], 3, 5).unwrap_err().to_string();
        assert!(e.contains("the trace is empty"), "{e}");
        // And the JSON of a result without a series has no "series" key.
        let json = serde_json::to_string(&run("fifo", &BELADY, 3, 0).unwrap()).unwrap();
        assert!(!json.contains("series"), "{json}");
        let back: ReplayResult = serde_json::from_str(&json).unwrap();
        assert!(back.series.is_empty());
    }

    /// Over several chunks, with a period that does not divide the chunk size: each sample
    /// equals the final counters of a separate replay of the trace cut at that access (for
    /// the causal policies; OPT's choices depend on what follows the cut), and sampling
    /// changes nothing else in the result.
    #[test]
    fn samples_equal_replays_of_prefixes() {
        let pages: Vec<u64> = (0..3 * CHUNK as u64 + 1234)
            .map(|i| (i * 2654435761) % 5000 + (i / 7000) * 300)
            .collect();
        let every = 70_001;
        for policy in ["lru", "fifo", "clock-lru", "mglru", "opt"] {
            let spec = |every| ReplaySpec {
                sample_every: every,
                warmup: 0,
                ..ReplaySpec::new(
                    PolicyKind::from_name(policy).unwrap(),
                    MachineConfig::new(1500),
                    PolicyOptions::new(1),
                )
            };
            let go = |pages: &[u64], every| {
                replay(&mut VecSource::from_pages(pages), &spec(every), None).unwrap()
            };
            let full = go(&pages, every);
            let n = pages.len() as u64;
            let expect: Vec<u64> = (1..=n / every)
                .map(|k| k * every)
                .chain(std::iter::once(n))
                .collect();
            let at: Vec<u64> = full.series.iter().map(|s| s.accesses).collect();
            assert_eq!(at, expect, "{policy}");
            assert_eq!(full.series.last(), Some(&full.stats), "{policy}");
            for s in full.series.iter().filter(|_| policy != "opt") {
                let cut = go(&pages[..s.accesses as usize], 0);
                assert_eq!(*s, cut.stats, "{policy} at {}", s.accesses);
            }
            let mut plain = full.clone();
            plain.series.clear();
            assert_eq!(plain, go(&pages, 0), "{policy}");
        }
    }

    #[test]
    fn too_many_samples_is_an_error() {
        // A source that knows its length is refused before the run.
        let pages = vec![0u64; MAX_SAMPLES as usize + 1];
        let e = run("fifo", &pages, 3, 1).unwrap_err().to_string();
        assert_eq!(
            e,
            "sample_every: 1 gives more than 1000000 samples on 1000001 accesses; \
             sample less often (0 = no series)"
        );
        // One that does not is refused when the limit is passed.
        let mut s = Series::new(1);
        s.samples = vec![Stats::default(); MAX_SAMPLES as usize];
        let st = Stats {
            accesses: MAX_SAMPLES + 1,
            ..Stats::default()
        };
        s.next = st.accesses;
        assert!(s
            .on_boundary(&st)
            .unwrap_err()
            .to_string()
            .starts_with("sample_every: 1 gives more than 1000000 samples on this trace"));
    }
}

#[cfg(test)]
mod warmup {
    use super::*;
    use crate::trace::VecSource;

    fn run(policy: &str, pages: &[u64], frames: u32, warmup: u64, every: u64) -> ReplayResult {
        run_checked(policy, pages, frames, warmup, every, true)
    }

    fn run_checked(
        policy: &str,
        pages: &[u64],
        frames: u32,
        warmup: u64,
        every: u64,
        check_invariants: bool,
    ) -> ReplayResult {
        let spec = ReplaySpec {
            sample_every: every,
            warmup,
            ..ReplaySpec::new(
                PolicyKind::from_name(policy).unwrap(),
                MachineConfig {
                    check_invariants,
                    ..MachineConfig::new(frames)
                },
                PolicyOptions::new(1),
            )
        };
        replay(&mut VecSource::from_pages(pages), &spec, None).unwrap()
    }

    const BELADY: [u64; 12] = [1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5];

    #[test]
    fn fifo_by_hand() {
        // FIFO, 3 frames: misses at accesses 1-7, 10, 11. A warm-up of 4 counts accesses
        // 5-12: misses at 5, 6, 7, 10, 11; refaults at 5, 6, 10, 11; page 5's first touch at 7.
        let r = run("fifo", &BELADY, 3, 4, 0);
        let s = &r.stats;
        assert_eq!(
            (s.accesses, s.reads, s.faults, s.major_faults, s.first_touch),
            (8, 8, 5, 4, 1)
        );
        assert_eq!(r.warmup, 4);
        // No warm-up: the whole trace.
        assert_eq!(run("fifo", &BELADY, 3, 0, 0).stats.faults, 9);
    }

    #[test]
    fn lru_and_opt_by_hand() {
        // LRU, 3 frames: hits only at accesses 8 and 9; a warm-up of 6 counts 7-12, of which
        // 7, 10, 11, 12 miss.
        let r = run("lru", &BELADY, 3, 6, 0);
        assert_eq!((r.stats.accesses, r.stats.faults), (6, 4));
        // OPT (the path that reads the whole trace first): misses at 1-4, 7, 10, 11; a
        // warm-up of 4 leaves 7, 10, 11.
        let r = run("opt", &BELADY, 3, 4, 0);
        assert_eq!((r.stats.accesses, r.stats.faults), (8, 3));
    }

    #[test]
    fn series_counts_after_the_warm_up() {
        // Samples every 3 counted accesses: after accesses 7 and 10, and at the end (12).
        // FIFO's cumulative faults there are 7, 8, 9, less the 4 of the warm-up.
        let r = run("fifo", &BELADY, 3, 4, 3);
        let f: Vec<(u64, u64)> = r.series.iter().map(|s| (s.accesses, s.faults)).collect();
        assert_eq!(f, [(3, 3), (6, 4), (8, 5)]);
        assert_eq!(r.series.last(), Some(&r.stats));
        // OPT's cumulative faults after 7, 10, 12 are 5, 6, 7.
        let r = run("opt", &BELADY, 3, 4, 3);
        let f: Vec<(u64, u64)> = r.series.iter().map(|s| (s.accesses, s.faults)).collect();
        assert_eq!(f, [(3, 1), (6, 2), (8, 3)]);
    }

    /// A source that does not know its length, as a text trace.
    struct Unsized(VecSource);

    impl TraceSource for Unsized {
        fn next_chunk(&mut self, buf: &mut Vec<Access>) -> Result<()> {
            self.0.next_chunk(buf)
        }
        fn name(&self) -> String {
            self.0.name()
        }
    }

    #[test]
    fn a_warm_up_of_the_whole_trace_is_an_error() {
        for policy in ["fifo", "opt", "mglru"] {
            for w in [12, 13, 1000] {
                let spec = ReplaySpec {
                    warmup: w,
                    ..ReplaySpec::new(
                        PolicyKind::from_name(policy).unwrap(),
                        MachineConfig::new(3),
                        PolicyOptions::new(1),
                    )
                };
                let e = replay(&mut Unsized(VecSource::from_pages(&BELADY)), &spec, None)
                    .unwrap_err()
                    .to_string();
                assert_eq!(
                    e,
                    format!(
                        "warmup: {w} accesses take the whole trace (12 accesses), leaving \
                         nothing to count; give a shorter warm-up"
                    ),
                    "{policy}"
                );
            }
            // One access short of the whole trace counts the last one.
            assert_eq!(run(policy, &BELADY, 3, 11, 0).stats.accesses, 1, "{policy}");
        }
        // It is to page 5: FIFO and OPT still hold it (loaded at access 7); LRU evicted it at
        // access 10 (5 was least recently used after 1 and 2 hit at 8 and 9).
        let last = |p| run(p, &BELADY, 3, 11, 0).stats.faults;
        assert_eq!((last("fifo"), last("opt"), last("lru")), (0, 0, 1));
    }

    /// Over several chunks, the warm-up ending inside one: every counter equals the whole
    /// run's less its value after the warm-up (a sample of the whole run at that access), the
    /// peaks and the policy's own counters are those of the whole run.
    #[test]
    fn counters_are_the_whole_run_less_the_warm_up() {
        let pages: Vec<u64> = (0..2 * CHUNK as u64 + 999)
            .map(|i| (i * 2654435761) % 4000 + (i / 9000) * 250)
            .collect();
        let w = CHUNK as u64 + 12_345;
        let as_map = |s: &Stats| match serde_json::to_value(s).unwrap() {
            serde_json::Value::Object(m) => m
                .into_iter()
                .map(|(k, v)| (k, v.as_u64().unwrap()))
                .collect::<BTreeMap<String, u64>>(),
            _ => unreachable!(),
        };
        for policy in ["lru", "fifo", "clock-lru", "mglru", "opt"] {
            // Without invariant checks after every access, which would take a minute here.
            let whole = run_checked(policy, &pages, 1200, 0, w, false);
            let warm = run_checked(policy, &pages, 1200, w, 0, false);
            let (end, at_w) = (as_map(&whole.stats), as_map(&whole.series[0]));
            assert_eq!(whole.series[0].accesses, w);
            let got = as_map(&warm.stats);
            for (k, v) in &end {
                let want = match k.as_str() {
                    "peak_resident" | "zram_mem_used_max" => *v,
                    _ => v - at_w[k],
                };
                assert_eq!(got[k], want, "{policy}: {k}");
            }
            assert_eq!(warm.stats.accesses, pages.len() as u64 - w);
            assert!(warm.stats.faults > 0, "{policy}");
            assert_eq!(warm.policy_counters, whole.policy_counters, "{policy}");
        }
    }
}

//! Replaying a trace through one policy on one machine: the smallest useful run.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::access::Access;
use crate::engine::{Machine, MachineConfig, Stats};
use crate::error::{Error, Result};
use crate::policy::registry::PolicyVisitor;
use crate::policy::{Policy, PolicyKind, PolicyOptions};
use crate::trace::{collect, TraceSource, CHUNK};
use crate::watermarks::Watermarks;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What to run.
#[derive(Clone, Debug)]
pub struct ReplaySpec {
    pub policy: PolicyKind,
    pub machine: MachineConfig,
    pub options: PolicyOptions,
}

/// What a run produced, with everything needed to re-run it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReplayResult {
    pub version: String,
    pub policy: String,
    pub frames: u32,
    pub seed: u64,
    pub trace: String,
    pub page_cluster: u8,
    /// Watermarks in force (kernel policies; zeros for demand policies).
    pub watermarks: Watermarks,
    pub options: BTreeMap<String, String>,
    pub stats: Stats,
    pub policy_counters: BTreeMap<String, u64>,
}

/// Called after each chunk with the number of accesses replayed so far.
pub type Progress<'a> = &'a mut (dyn FnMut(u64) + 'a);

struct Run<'a, 'b> {
    src: &'a mut dyn TraceSource,
    machine: MachineConfig,
    progress: Option<&'b mut dyn FnMut(u64)>,
}

impl PolicyVisitor for Run<'_, '_> {
    type Out = Result<(Stats, u8, Watermarks, Vec<(&'static str, u64)>)>;
    fn visit<P: Policy>(self, p: P) -> Self::Out {
        let Run {
            src,
            machine,
            mut progress,
        } = self;
        let needs_future = p.needs_future();
        let mut m = Machine::new(&machine, p)?;
        if needs_future {
            let all = collect(src)?;
            let next = next_use(&all);
            for (i, a) in all.iter().enumerate() {
                m.access(*a, next[i]);
                if i % CHUNK == CHUNK - 1 {
                    oom_error(&m, &machine)?;
                    if let Some(cb) = progress.as_mut() {
                        cb(i as u64 + 1);
                    }
                }
            }
        } else {
            // The trace is read (decoded, generated) on a second thread, a few chunks ahead
            // of the simulation; chunks arrive in order, so results are the same.
            std::thread::scope(|scope| -> Result<()> {
                // Two buffers: one simulated while the other is filled.
                let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<Result<Vec<Access>>>(1);
                let (empty_tx, empty_rx) = std::sync::mpsc::channel::<Vec<Access>>();
                for _ in 0..2 {
                    let _ = empty_tx.send(Vec::with_capacity(CHUNK));
                }
                scope.spawn(move || {
                    while let Ok(mut buf) = empty_rx.recv() {
                        let r = src.next_chunk(&mut buf);
                        let last = r.is_err() || buf.is_empty();
                        if full_tx.send(r.map(|()| buf)).is_err() || last {
                            break;
                        }
                    }
                });
                for chunk in full_rx.iter() {
                    let buf = chunk?;
                    if buf.is_empty() {
                        break;
                    }
                    m.access_all(&buf);
                    oom_error(&m, &machine)?;
                    if let Some(cb) = progress.as_mut() {
                        cb(m.stats.accesses);
                    }
                    let _ = empty_tx.send(buf);
                }
                Ok(())
            })?;
        }
        oom_error(&m, &machine)?;
        Ok((
            m.stats.clone(),
            m.page_cluster(),
            m.watermarks(),
            m.policy.counters(),
        ))
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
        src,
        machine: spec.machine.clone(),
        progress,
    };
    let (stats, page_cluster, watermarks, counters) =
        spec.policy
            .build(spec.machine.frames, &spec.options, run)??;
    Ok(ReplayResult {
        version: VERSION.to_string(),
        policy: spec.policy.name().to_string(),
        frames: spec.machine.frames,
        seed: spec.options.seed,
        trace,
        page_cluster,
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
            if !(v > 0.0 && v <= 100_000.0) || !v.is_finite() {
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

//! `custom`: a workload composed from the generators of [`crate::generate`].
//!
//! ```text
//! custom:(gen)+(gen)+…[,threads=N][,split=partition|shared][,compute_ns=NS][,class=C][,repeat=R][,seed=S]
//! ```
//!
//! Each `(gen)` is a phase: a generator spec (`uniform`, `zipf`, `scan`, `loop`, `hotcold`,
//! `mix`, `seq`; `n` required where the generator needs it) that every thread runs to its end
//! with its own random stream (derived from the seed, the phase and the thread, unless the
//! phase names its own `seed`). Phases are separated by barriers, and the list is run
//! `repeat` times. With `split=partition` (default) thread `t` runs the phase on its own copy
//! of the phase's page range, shifted by `t` times the range's extent (last page + 1 − first
//! page), as threads working on their own partitions; with `split=shared` every thread works
//! on the same pages. Each access is followed by `compute_ns` of CPU time. Every page has the
//! content class `class` (`zero`, `text`, `numeric`, `random`, `sparse`; default `numeric`).
//!
//! A generator's consecutive references to one page are one `Access` (a burst), except that a
//! burst longer than [`MAX_DRAWS_PER_CALL`] references is split into several `Access`es of the
//! page: a call to [`Workload::next_ops`] draws at most that many references, so that a phase
//! stuck on one page (e.g. `scan:pages=1,n=1e15`) still hands out ops in bounded time.
//! [`Workload::footprint_pages`] is the number of pages in the union of the threads' ranges:
//! an upper bound, exact for generators that cover their range (`scan`, `loop` with
//! `n ≥ pages`).
//!
//! Memory: per thread, the running generator and one chunk of its accesses.

use super::common::{derive, Emitter, CHUNK_OPS};
use super::params::{split_top, Params};
use super::{bad_tid, Op, Workload};
use crate::access::Access;
use crate::device::ContentClass;
use crate::error::{Error, Result};
use crate::generate::{GenKind, GenSpec, Generator};
use crate::trace::TraceSource;

const KEYS: &[&str] = &["threads", "split", "compute_ns", "class", "repeat", "seed"];
const TAG_PHASE: u64 = 0x6375;
/// References a call to `next_ops` draws at most (the ops it hands out are fewer when
/// references to one page merge into bursts).
pub const MAX_DRAWS_PER_CALL: usize = 64 * CHUNK_OPS;

/// First page and one past the last page a spec can reference.
fn extent(spec: &GenSpec) -> (u64, u64) {
    match &spec.kind {
        GenKind::Uniform { pages }
        | GenKind::Zipf { pages, .. }
        | GenKind::Scan { pages }
        | GenKind::Loop { pages }
        | GenKind::HotCold { pages, .. } => (spec.start, spec.start + pages),
        GenKind::Mix(parts) => parts
            .iter()
            .map(|p| extent(&p.0))
            .fold((u64::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1))),
        GenKind::Seq(phases) => phases
            .iter()
            .map(extent)
            .fold((u64::MAX, 0), |a, b| (a.0.min(b.0), a.1.max(b.1))),
    }
}

/// Every page range of `spec` (its simple generators' ranges).
fn ranges(spec: &GenSpec, out: &mut Vec<(u64, u64)>) {
    match &spec.kind {
        GenKind::Mix(parts) => parts.iter().for_each(|p| ranges(&p.0, out)),
        GenKind::Seq(phases) => phases.iter().for_each(|p| ranges(p, out)),
        _ => out.push(extent(spec)),
    }
}

/// `spec` with every range moved up by `by` pages (`None` on overflow).
fn shifted(spec: &GenSpec, by: u64) -> Option<GenSpec> {
    let mut s = spec.clone();
    match &mut s.kind {
        GenKind::Mix(parts) => {
            for p in parts.iter_mut() {
                p.0 = shifted(&p.0, by)?;
            }
        }
        GenKind::Seq(phases) => {
            for p in phases.iter_mut() {
                *p = shifted(p, by)?;
            }
        }
        _ => {
            // The generator's own parser checked start + pages.
            let pages = extent(spec).1 - spec.start;
            s.start = s.start.checked_add(by)?;
            s.start.checked_add(pages)?;
        }
    }
    Some(s)
}

struct ThreadState {
    /// Index of the running phase over all repeats; `gen` runs it.
    phase: usize,
    gen: Option<Generator>,
    chunk: Vec<Access>,
    pos: usize,
    em: Emitter,
    done: bool,
}

/// The `custom` workload (see the module docs).
pub struct Custom {
    phases: Vec<GenSpec>,
    threads: usize,
    partition: bool,
    compute_ns: u64,
    class: ContentClass,
    repeat: u64,
    seed: u64,
    footprint: u64,
    state: Vec<ThreadState>,
}

impl Custom {
    pub(crate) fn parse(text: &str, run_seed: u64) -> Result<Custom> {
        let parts = split_top(text, ',');
        let phases_text = parts[0].trim();
        let err = |msg: String| Error::config("custom", msg);
        let mut phases = Vec::new();
        for ph in split_top(phases_text, '+') {
            let ph = ph.trim();
            let inner = ph
                .strip_prefix('(')
                .and_then(|x| x.strip_suffix(')'))
                .ok_or_else(|| err(format!("phase '{ph}' is not a generator spec in parentheses: custom:(spec)+(spec),key=value")))?;
            phases.push(GenSpec::parse(inner)?);
        }
        let p = Params::parse("custom", &parts[1..].join(","), KEYS)?;
        let threads = p.u64_in("threads", 1, 1, 1024)? as usize;
        let partition = p.choice("split", 0, &["partition", "shared"])? == 0;
        let class = ContentClass::ALL[p.choice("class", 2, ContentClass::NAMES)?];
        let mut all = Vec::new();
        for spec in &phases {
            let (lo, hi) = extent(spec);
            for t in 0..threads as u64 {
                let by = if partition {
                    t.checked_mul(hi - lo)
                } else {
                    Some(0)
                };
                let s = by.and_then(|by| shifted(spec, by)).ok_or_else(|| {
                    p.err(
                        "threads",
                        format!("thread {t}'s copy of '{spec}' overflows 64-bit page numbers"),
                    )
                })?;
                ranges(&s, &mut all);
            }
        }
        all.sort_unstable();
        let mut footprint = 0;
        let mut cur: Option<(u64, u64)> = None;
        for (a, b) in all {
            cur = match cur {
                Some((x, y)) if a <= y => Some((x, y.max(b))),
                Some((x, y)) => {
                    footprint += y - x;
                    Some((a, b))
                }
                None => Some((a, b)),
            };
        }
        if let Some((x, y)) = cur {
            footprint += y - x;
        }
        let mut c = Custom {
            phases,
            threads,
            partition,
            compute_ns: p.u64_in("compute_ns", 0, 0, 1 << 32)?,
            class,
            repeat: p.u64_in("repeat", 1, 1, 1 << 20)?,
            seed: p.seed(run_seed)?,
            footprint,
            state: Vec::new(),
        };
        c.state = (0..threads)
            .map(|_| ThreadState {
                phase: usize::MAX,
                gen: None,
                chunk: Vec::new(),
                pos: 0,
                em: Emitter::default(),
                done: false,
            })
            .collect();
        Ok(c)
    }

    fn generator(&self, phase: usize, tid: usize) -> Result<Generator> {
        let spec = &self.phases[phase % self.phases.len()];
        let (lo, hi) = extent(spec);
        let by = if self.partition {
            tid as u64 * (hi - lo)
        } else {
            0
        };
        let s = shifted(spec, by).expect("checked when parsing");
        s.build(derive(
            self.seed,
            TAG_PHASE,
            ((phase as u64) << 20) | tid as u64,
        ))
    }
}

impl Workload for Custom {
    fn name(&self) -> String {
        let phases: Vec<String> = self.phases.iter().map(|p| format!("({p})")).collect();
        format!(
            "custom:{},threads={},split={},compute_ns={},class={},repeat={},seed={}",
            phases.join("+"),
            self.threads,
            if self.partition {
                "partition"
            } else {
                "shared"
            },
            self.compute_ns,
            self.class.name(),
            self.repeat,
            self.seed
        )
    }

    fn threads(&self) -> usize {
        self.threads
    }

    fn footprint_pages(&self) -> u64 {
        self.footprint
    }

    fn content_class(&self, _pid: u32, _page: u64) -> ContentClass {
        self.class
    }

    fn next_ops(&mut self, tid: usize, buf: &mut Vec<Op>) -> Result<()> {
        if tid >= self.threads {
            return Err(bad_tid("custom", tid, self.threads));
        }
        let total = self.phases.len() * self.repeat as usize;
        let start = buf.len();
        let mut drawn = 0;
        while buf.len() - start < CHUNK_OPS && !self.state[tid].done {
            let st = &mut self.state[tid];
            if drawn >= MAX_DRAWS_PER_CALL {
                if buf.len() > start {
                    break;
                }
                // One burst took every draw of this call: end it here, so that the next
                // reference is an op of its own and the call hands out something.
                st.em.split();
            }
            if st.pos < st.chunk.len() {
                let a = st.chunk[st.pos];
                st.pos += 1;
                drawn += 1;
                st.em.access(buf, a.page, a.write);
                st.em.compute(self.compute_ns);
                continue;
            }
            if let Some(g) = st.gen.as_mut() {
                g.next_chunk(&mut st.chunk)?;
                st.pos = 0;
                if !st.chunk.is_empty() {
                    continue;
                }
                st.gen = None;
            }
            let next = st.phase.wrapping_add(1);
            if next == total {
                st.em.flush(buf);
                st.done = true;
                break;
            }
            if next > 0 {
                st.em.barrier(buf);
            }
            let g = self.generator(next, tid)?;
            let st = &mut self.state[tid];
            st.phase = next;
            st.gen = Some(g);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::workload::parse;

    #[test]
    fn module_example_runs() {
        let spec = "custom:(scan:pages=4096,write=1)+(zipf:pages=4096,alpha=0.9,n=20000,write=0.3),threads=4,compute_ns=200";
        let mut w = parse(spec, 3).unwrap();
        assert_eq!(w.footprint_pages(), 4 * 4096);
        let s = drain(w.as_mut(), Order::RoundRobin);
        for (t, st) in s.iter().enumerate() {
            assert_eq!(barriers(st), 1);
            // Phase 0 is exactly a sweep of the thread's own 4096 pages, written.
            let p0: Vec<Op> = phase(st, 0)
                .iter()
                .filter(|o| matches!(o, Op::Access { .. }))
                .copied()
                .collect();
            let want: Vec<Op> = (0..4096)
                .map(|i| Op::Access {
                    page: t as u64 * 4096 + i,
                    write: true,
                })
                .collect();
            assert_eq!(p0, want);
            // 200 ns after each of the 4096 accesses.
            assert_eq!(
                compute_ns(phase(st, 0)) + compute_ns(phase(st, 1)),
                200 * (4096 + 20000)
            );
            assert!(phase(st, 1).iter().all(|o| match o {
                Op::Access { page, .. } => (t as u64 * 4096..(t as u64 + 1) * 4096).contains(page),
                _ => true,
            }));
        }
        assert_eq!(distinct_pages(&s), 4 * 4096);
        // Threads draw from different streams.
        assert_ne!(phase(&s[0], 1).len(), 0);
        let shift = |st: &[Op], by: u64| -> Vec<u64> {
            st.iter()
                .filter_map(|o| match o {
                    Op::Access { page, .. } => Some(page - by),
                    _ => None,
                })
                .collect()
        };
        assert_ne!(shift(phase(&s[0], 1), 0), shift(phase(&s[1], 1), 4096));
    }

    #[test]
    fn shared_split_repeat_and_determinism() {
        let spec = "custom:(uniform:pages=100,start=50,n=300)+(scan:pages=10,start=1000),threads=3,split=shared,repeat=2,class=text";
        let mut a = parse(spec, 1).unwrap();
        assert_eq!(a.footprint_pages(), 110);
        assert_eq!(a.content_class(0, 7), ContentClass::Text);
        let sa = drain(a.as_mut(), Order::RoundRobin);
        for st in &sa {
            assert_eq!(barriers(st), 3);
        }
        let mut b = parse(&a.name(), 77).unwrap();
        assert_eq!(drain(b.as_mut(), Order::Shuffled(3)), sa);
        let mut c = parse(spec, 2).unwrap();
        assert_ne!(drain(c.as_mut(), Order::ReverseSerial), sa);
        assert_eq!(
            a.name(),
            "custom:(uniform:pages=100,start=50,n=300)+(scan:pages=10,start=1000),threads=3,split=shared,compute_ns=0,class=text,repeat=2,seed=1"
        );
    }

    #[test]
    fn spec_errors_name_the_key() {
        let e = |s: &str| parse(s, 0).err().unwrap().to_string();
        assert_eq!(e("custom:(scan:pages=4),thread=2"), "custom.thread: unknown key for custom (valid: threads, split, compute_ns, class, repeat, seed)");
        assert_eq!(e("custom:scan:pages=4"), "custom: phase 'scan:pages=4' is not a generator spec in parentheses: custom:(spec)+(spec),key=value");
        assert_eq!(
            e("custom:(uniform:pages=4)"),
            "uniform.n: required: the number of accesses"
        );
        assert_eq!(
            e("custom:(scan:pages=4),class=blue"),
            "custom.class: 'blue' is not one of zero, text, numeric, random, sparse"
        );
        assert_eq!(
            e("custom:(scan:pages=4),split=x"),
            "custom.split: 'x' is not one of partition, shared"
        );
    }
}

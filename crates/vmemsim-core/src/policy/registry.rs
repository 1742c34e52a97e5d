//! The one place that names every policy. Adding one: a variant here, a match arm in
//! [`PolicyKind::build`], its line in [`PolicyKind::ALL`].

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use super::Policy;
use crate::error::{Error, Result};
use crate::mm::Mm;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    Fifo,
    Lru,
    Opt,
    Clock,
    Arc,
    S3Fifo,
    Lfu,
    LruK,
    WTinyLfu,
    Random,
    Sieve,
    Slru,
    TwoQ,
    Mq,
    Lirs,
    ClockPro,
    ClockLru,
    /// Linux 6.8 Multi-Gen LRU, with the characterization paper's presets.
    MgLru(super::mglru::Preset),
}

impl PolicyKind {
    /// Every policy: (kind, name, one-line description).
    pub const ALL: &'static [(PolicyKind, &'static str, &'static str)] = &[
        (
            PolicyKind::Fifo,
            "fifo",
            "first in, first out; hits change nothing (demand)",
        ),
        (
            PolicyKind::Lru,
            "lru",
            "exact least-recently-used, every hit reorders (demand)",
        ),
        (
            PolicyKind::Opt,
            "opt",
            "Belady's MIN: evict the page used furthest in the future; offline (demand)",
        ),
        (
            PolicyKind::Clock,
            "clock",
            "second chance: FIFO that reinserts pages referenced since their last pass (demand)",
        ),
        (
            PolicyKind::Arc,
            "arc",
            "adaptive replacement cache, Megiddo & Modha FAST'03 (demand)",
        ),
        (
            PolicyKind::S3Fifo,
            "s3fifo",
            "small + main + ghost FIFOs, Yang et al. SOSP'23 (demand)",
        ),
        (
            PolicyKind::Lfu,
            "lfu",
            "least frequently used since insertion, LRU among ties (demand)",
        ),
        (
            PolicyKind::LruK,
            "lru-k",
            "LRU-K, O'Neil, O'Neil & Weikum SIGMOD'93: largest backward K-distance, option k=2 (demand)",
        ),
        (
            PolicyKind::WTinyLfu,
            "w-tinylfu",
            "window LRU + TinyLFU admission to an SLRU, Einziger et al. TOS'17 (demand)",
        ),
        (
            PolicyKind::Random,
            "random",
            "uniformly random victim from the run's seed (demand)",
        ),
        (
            PolicyKind::Sieve,
            "sieve",
            "FIFO with a hand that clears visited bits and never moves kept pages, Zhang et al. NSDI'24 (demand)",
        ),
        (
            PolicyKind::Slru,
            "slru",
            "segmented LRU: hits climb segments, overflow cools down; 4 segments as libCacheSim (demand)",
        ),
        (
            PolicyKind::TwoQ,
            "2q",
            "full 2Q: FIFO A1in, LRU Am, ghost A1out, Johnson & Shasha VLDB'94 (demand)",
        ),
        (
            PolicyKind::Mq,
            "mq",
            "multi-queue: LRU queues by log2 frequency, expiry demotion, ghost Qout, Zhou et al. ATC'01 (demand)",
        ),
        (
            PolicyKind::Lirs,
            "lirs",
            "low inter-reference recency set: stack S + resident-HIR queue Q, Jiang & Zhang SIGMETRICS'02 (demand)",
        ),
        (
            PolicyKind::ClockPro,
            "clock-pro",
            "LIRS's reuse-distance test on a clock: hot/cold pages, test periods, three hands, Jiang, Chen & Zhang ATC'05 (demand)",
        ),
        (
            PolicyKind::ClockLru,
            "clock-lru",
            "Linux 6.8 classic active/inactive LRU, MG-LRU off: A-bit sampling by rmap (kernel)",
        ),
        (
            PolicyKind::MgLru(super::mglru::Preset::Default),
            "mglru",
            "Linux 6.8 Multi-Gen LRU: generations, page-table walks with Bloom filters, look-around, PID tiers (kernel)",
        ),
        (
            PolicyKind::MgLru(super::mglru::Preset::Gen14),
            "mglru-gen14",
            "mglru with max_gens = 2^14 (paper variant Gen-14) (kernel)",
        ),
        (
            PolicyKind::MgLru(super::mglru::Preset::ScanAll),
            "mglru-scan-all",
            "mglru whose aging walks every PMD, no Bloom filter (paper variant Scan-All) (kernel)",
        ),
        (
            PolicyKind::MgLru(super::mglru::Preset::ScanNone),
            "mglru-scan-none",
            "mglru whose aging never walks page tables; recency from rmap + look-around (paper variant Scan-None) (kernel)",
        ),
        (
            PolicyKind::MgLru(super::mglru::Preset::ScanRand),
            "mglru-scan-rand",
            "mglru whose aging walks each PMD with probability scan_rand_p = 0.5 (paper variant Scan-Rand) (kernel)",
        ),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|e| e.0 == self)
            .map(|e| e.1)
            .unwrap_or("?")
    }

    pub fn from_name(name: &str) -> Result<PolicyKind> {
        let lower = name.to_ascii_lowercase();
        Self::ALL
            .iter()
            .find(|e| e.1 == lower)
            .map(|e| e.0)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|e| e.1).collect();
                Error::config(
                    "policy",
                    format!(
                        "unknown policy '{name}'{}; valid: {}",
                        crate::error::did_you_mean(name, &names),
                        names.join(", ")
                    ),
                )
            })
    }

    /// Build the policy for `frames` frames and hand it, with its concrete type, to `v`
    /// (so the engine is monomorphised per policy and hits are direct calls).
    pub fn build<V: PolicyVisitor>(
        self,
        frames: u32,
        opts: &PolicyOptions,
        v: V,
    ) -> Result<V::Out> {
        use super::*;
        // Options are checked once the policy has read its own, before the run starts.
        fn go<V: PolicyVisitor, P: Policy>(v: V, opts: &PolicyOptions, p: P) -> Result<V::Out> {
            opts.check_all_used()?;
            Ok(v.visit(p))
        }
        crate::util::check_memory(
            "frames",
            &format!("{frames} frames"),
            frames as u64 * crate::util::BYTES_PER_FRAME,
        )?;
        match self {
            PolicyKind::ClockLru => go(v, opts, clock_lru::ClockLru::new(frames)),
            PolicyKind::Fifo => go(v, opts, fifo::Fifo::new(frames)),
            PolicyKind::Lru => go(v, opts, lru::Lru::new(frames)),
            PolicyKind::Opt => go(v, opts, opt::Opt::new(frames)),
            PolicyKind::Clock => go(v, opts, clock::Clock::new(frames, opts)?),
            PolicyKind::Arc => go(v, opts, arc::Arc::new(frames)),
            PolicyKind::S3Fifo => go(v, opts, s3fifo::S3Fifo::new(frames, opts)?),
            PolicyKind::Lfu => go(v, opts, lfu::Lfu::new(frames)),
            PolicyKind::LruK => go(v, opts, lru_k::LruK::new(frames, opts)?),
            PolicyKind::WTinyLfu => go(v, opts, w_tinylfu::WTinyLfu::new(frames, opts)?),
            PolicyKind::Random => go(v, opts, random::Random::new(frames, opts)),
            PolicyKind::Sieve => go(v, opts, sieve::Sieve::new(frames)),
            PolicyKind::Slru => go(v, opts, slru::Slru::new(frames, opts)?),
            PolicyKind::TwoQ => go(v, opts, twoq::TwoQ::new(frames, opts)?),
            PolicyKind::Mq => go(v, opts, mq::Mq::new(frames, opts)?),
            PolicyKind::Lirs => go(v, opts, lirs::Lirs::new(frames, opts)?),
            PolicyKind::ClockPro => go(v, opts, clock_pro::ClockPro::new(frames, opts)?),
            PolicyKind::MgLru(p) => go(v, opts, mglru::MgLru::new(frames, opts, p)?),
        }
    }
}

/// Receives a freshly built policy with its concrete type.
pub trait PolicyVisitor {
    type Out;
    fn visit<P: Policy>(self, p: P) -> Self::Out;
}

/// Options of a policy: the run's seed plus `key=value` knobs. Each policy reads the keys it
/// knows; a key nobody read is an error naming it.
#[derive(Debug, Default)]
pub struct PolicyOptions {
    pub seed: u64,
    kv: BTreeMap<String, String>,
    used: RefCell<BTreeSet<String>>,
}

impl Clone for PolicyOptions {
    fn clone(&self) -> Self {
        PolicyOptions {
            seed: self.seed,
            kv: self.kv.clone(),
            used: RefCell::new(BTreeSet::new()),
        }
    }
}

impl PolicyOptions {
    pub fn new(seed: u64) -> Self {
        PolicyOptions {
            seed,
            ..Default::default()
        }
    }
    pub fn with(mut self, key: &str, value: &str) -> Self {
        self.kv.insert(key.to_string(), value.to_string());
        self
    }
    pub fn set(&mut self, key: &str, value: &str) {
        self.kv.insert(key.to_string(), value.to_string());
    }
    pub fn keys(&self) -> impl Iterator<Item = (&String, &String)> {
        self.kv.iter()
    }
    fn raw(&self, key: &str) -> Option<&str> {
        let v = self.kv.get(key)?;
        self.used.borrow_mut().insert(key.to_string());
        Some(v)
    }
    /// A value parsed as `T`, or `default` when absent; a malformed value names the key.
    pub fn get<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T> {
        match self.raw(key) {
            None => Ok(default),
            Some(s) => s
                .trim()
                .parse()
                .map_err(|_| Error::config(format!("option {key}"), format!("cannot parse '{s}'"))),
        }
    }
    pub fn get_bool(&self, key: &str, default: bool) -> Result<bool> {
        match self.raw(key) {
            None => Ok(default),
            Some(s) => match s.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "on" | "yes" => Ok(true),
                "0" | "false" | "off" | "no" => Ok(false),
                _ => Err(Error::config(
                    format!("option {key}"),
                    format!("expected on/off, got '{s}'"),
                )),
            },
        }
    }
    pub fn get_str(&self, key: &str) -> Option<String> {
        self.raw(key).map(str::to_string)
    }
    /// Error on the first key no policy (or engine) read.
    pub fn check_all_used(&self) -> Result<()> {
        let used = self.used.borrow();
        match self.kv.keys().find(|k| !used.contains(*k)) {
            Some(k) => Err(Error::config(
                format!("option {k}"),
                "unknown option for this policy",
            )),
            None => Ok(()),
        }
    }
}

/// Check that a policy's lists hold exactly the frames in use in `mm`, each once.
pub fn check_holds_exactly(
    mm: &Mm,
    held: impl Iterator<Item = u32>,
    name: &str,
) -> std::result::Result<(), String> {
    let mut seen = vec![false; mm.frames.len() as usize];
    let mut n = 0u32;
    for f in held {
        if f >= mm.frames.len() {
            return Err(format!("{name}: frame {f} out of range"));
        }
        if std::mem::replace(&mut seen[f as usize], true) {
            return Err(format!("{name}: frame {f} held twice"));
        }
        if !mm.frames.in_use(f) {
            return Err(format!("{name}: holds free frame {f}"));
        }
        if mm.frames.flags(f) & crate::mm::frames::F_CACOL != 0 {
            return Err(format!("{name}: holds frame {f}, which Cacol manages"));
        }
        n += 1;
    }
    // (frames Cacol manages and frames held off the free list are off the policy's lists)
    let cacol = (0..mm.frames.len())
        .filter(|&f| mm.frames.flags(f) & crate::mm::frames::F_CACOL != 0)
        .count() as u32;
    let in_use = mm.frames.len() - mm.frames.n_unused() - mm.frames.n_held() - cacol;
    if n != in_use {
        return Err(format!("{name}: holds {n} frames but {in_use} are in use"));
    }
    Ok(())
}

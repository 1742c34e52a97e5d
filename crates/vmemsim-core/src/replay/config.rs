//! A trace replay's configuration, declared once: [`ReplayConfig`] is what `vmemsim replay`,
//! `vmemsim.replay`, `vmemsim.mrc` and a sweep's replay keys set, with the defaults a user
//! gets, read from JSON with errors that name the key ([`crate::util::from_json_keyed`]), as
//! [`crate::timed::RunConfig`] is for timed runs. [`ReplayConfig::build`] turns it into the
//! [`ReplaySpec`] of a replay and [`ReplayConfig::curve_spec`] into that of a miss-ratio
//! curve: the domain rules that used to live in the Python binding (`replay` and
//! `miss_ratio_curve` with their `machine_config`, `zram_pool` and `policy_options`) live
//! here: the machine's ranges (swappiness, page_cluster, watermarks, the rotational disk's
//! slots), the kernel version, zram's pool, the policy's options checked before the trace is
//! read. Frames as a percentage of the trace's distinct pages are resolved by
//! [`ReplayRun::resolve`], once the caller has counted them.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use super::{FramesSpec, ReplaySpec};
use crate::device::{ContentClass, DeviceSpec};
use crate::engine::{MachineConfig, ZramPool, MAX_FRAMES};
use crate::error::{Error, Result};
use crate::policy::{KernelVersion, PolicyKind, PolicyOptions};
use crate::timed::run_config::{OptionsProbe, PROBE_FRAMES};
use crate::watermarks::Watermarks;

/// A replay of a trace (or a miss-ratio curve's replays) as the front ends describe it.
/// Every field has the default `vmemsim replay` uses (its options, `vmemsim.replay`'s
/// keyword arguments and the sweep's replay keys are these).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ReplayConfig {
    // Each field's documentation is the help of its setting in `vmemsim replay --help`, in a
    // sweep and in `vmemsim.api.REPLAY_SCHEMA` (through the exported schema): written for
    // users, without links.
    /// The reclaim policy (`vmemsim policies`).
    pub policy: String,
    /// Memory in 4 KiB frames, or a percentage of the trace's distinct pages (rounded to the
    /// nearest frame), e.g. 25%.
    // Required by a replay (`build`); a miss-ratio curve has sizes instead (`curve_spec`).
    #[serde(deserialize_with = "frames_text_or_none")]
    pub frames: Option<String>,
    /// Random seed of the policy (and of a generated trace whose spec gives none).
    pub seed: u64,
    /// The policy's own `key = value` options; a key the policy does not read is an error.
    pub options: BTreeMap<String, String>,
    /// vm.page-cluster, 0 to 10: swap readahead of 2^N pages (unset: 3 for kernel policies,
    /// 0 for demand policies).
    #[schemars(range(max = "MAX_PAGE_CLUSTER"))]
    pub page_cluster: Option<u32>,
    /// [min, low, high] zone watermarks in pages, min <= low <= high (unset: derived from
    /// the memory size as Linux does).
    pub watermarks: Option<[u32; 3]>,
    /// The machine's zones, lowest first (e.g. DMA then DMA32), each with its frames and
    /// optionally its watermarks and lowmem_reserve; their frames sum to frames (unset: one
    /// zone). Replaces watermarks.
    pub zones: Vec<crate::engine::ZoneConfig>,
    /// vm.swappiness, 0 to 200.
    #[schemars(range(max = "MAX_SWAPPINESS"))]
    pub swappiness: u32,
    /// Check every invariant after every access (slow; for debugging).
    pub check_invariants: bool,
    /// The swap device does synchronous I/O, as zram does: a swap-in of a page with one
    /// reference skips the swap cache and readahead and frees its slot at once.
    pub swap_sync_io: bool,
    /// The swap device is a rotational disk (QEMU's virtio-blk is one) with this many usable
    /// slots, 1 to 2^28: slots come from the kernel's rotational allocator (unset: a
    /// non-rotational device).
    pub swap_rotational: Option<u32>,
    /// The swap device's largest request in pages, 1 to 65,536, up to which the plug merges
    /// reclaim's contiguous swap writes: the device's `max_pages` (a virtio-blk disk under
    /// QEMU 254, a SATA disk 168; unset: the block layer's default `max_segments`, 128).
    pub swap_max_pages: Option<u32>,
    /// zram's compressed pool is memory of the machine, taken from the frames (implies
    /// swap_sync_io): the content class of the trace's pages and the zram device's
    /// parameters decide its size (unset: the device's memory is not modelled).
    pub zram_pool: Option<ZramPoolConfig>,
    /// Whose reclaim rules the kernel policies follow where Linux versions differ: 6.8 or
    /// 6.1 (docs/kernel-6.1-vs-6.8.md).
    #[schemars(schema_with = "kernel_schema")]
    pub kernel: String,
    /// vm.watermark_boost_factor: how far an allocation that falls back to another
    /// migratetype's free list raises its zone's watermarks, in 1/10,000 of the zone's high
    /// watermark (at least a pageblock of 512 pages; Linux's default 15000, 0 = off). Only
    /// zones given their pagetypes (zones[i].pagetypes) fall back.
    pub watermark_boost_factor: u32,
    /// read_ahead_kb of the device holding the trace's files: the largest readahead window
    /// of the page cache's reads, in KiB (0: no readahead).
    pub read_ahead_kb: u32,
    /// Record the cumulative counters every this many accesses and at the end of the trace
    /// (0: no time series; at most a million samples).
    pub sample_every: u64,
    /// Replay this many accesses before counting starts: the counters (but the peaks) and
    /// the time series cover only the rest (0: none).
    pub warmup: u64,
}

/// zram's pool charged to the machine's memory ([`ReplayConfig::zram_pool`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ZramPoolConfig {
    /// Content class of the trace's pages, for their compressed sizes: zero, text, numeric,
    /// random or sparse (as custom workloads' class=).
    pub class: String,
    /// The zram device with its parameters, as `vmemsim run --device` takes it (e.g.
    /// 'zram:text_ratio=3').
    pub device: String,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        let machine = MachineConfig::new(0);
        ReplayConfig {
            policy: "lru".into(),
            frames: None,
            seed: 0,
            options: BTreeMap::new(),
            page_cluster: machine.page_cluster.map(u32::from),
            watermarks: machine.watermarks.map(|w| [w.min, w.low, w.high]),
            zones: machine.zones.clone(),
            swappiness: machine.swappiness,
            check_invariants: machine.check_invariants,
            swap_sync_io: machine.swap_sync_io,
            swap_rotational: machine.swap_rotational,
            swap_max_pages: machine.swap_max_pages,
            zram_pool: None,
            kernel: machine.kernel.name().into(),
            watermark_boost_factor: machine.watermark_boost_factor,
            read_ahead_kb: machine.read_ahead_kb,
            sample_every: 0,
            warmup: 0,
        }
    }
}

impl Default for ZramPoolConfig {
    fn default() -> Self {
        ZramPoolConfig {
            class: ContentClass::Numeric.name().into(),
            device: "zram".into(),
        }
    }
}

/// `frames` as text or unset: null, a JSON whole number or a string (as
/// [`crate::timed::RunConfig`]'s `frames`).
fn frames_text_or_none<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    struct Text(#[serde(deserialize_with = "crate::timed::run_config::frames_text")] String);
    Ok(Option::<Text>::deserialize(d)?.map(|t| t.0))
}

crate::util::names_schema_fn!(kernel_schema, KernelVersion::NAMES);

/// The kernel version named by the setting `kernel` (`6.8` or `6.1`), with an error that
/// names it. Timed runs ([`crate::timed::RunConfig::build`]) and replays read it here.
pub(crate) fn kernel_version(name: &str) -> Result<KernelVersion> {
    KernelVersion::from_name(name).ok_or_else(|| {
        Error::config(
            "kernel",
            format!(
                "unknown kernel version '{name}'; valid: {}",
                KernelVersion::NAMES.join(", ")
            ),
        )
    })
}

/// Largest `vm.swappiness` (Linux 5.8 raised it from 100 to 200 for fast swap).
pub const MAX_SWAPPINESS: u32 = 200;
/// Largest `vm.page-cluster` accepted (readahead of 2^10 pages; the kernel takes any value,
/// and 6.8's VMA readahead caps its window at 2^5 anyway).
pub const MAX_PAGE_CLUSTER: u32 = 10;

/// The machine's ranges, as [`crate::engine::Machine::new`] checks them again, with errors
/// that name the setting: `swappiness` 0..=200, `page_cluster` 0..=10, `watermarks`
/// min <= low <= high. Timed runs ([`crate::timed::RunConfig::build`]) and replays check them
/// here.
pub(crate) fn machine_knobs(
    swappiness: u32,
    page_cluster: Option<u32>,
    watermarks: Option<[u32; 3]>,
) -> Result<(Option<u8>, Option<Watermarks>)> {
    if swappiness > MAX_SWAPPINESS {
        return Err(Error::config(
            "swappiness",
            format!("must be 0..={MAX_SWAPPINESS}, got {swappiness}"),
        ));
    }
    let page_cluster = match page_cluster {
        Some(n) if n > MAX_PAGE_CLUSTER => {
            return Err(Error::config(
                "page_cluster",
                format!("must be 0..={MAX_PAGE_CLUSTER}, got {n}"),
            ))
        }
        n => n.map(|n| n as u8),
    };
    let watermarks = watermarks.map(|[min, low, high]| Watermarks { min, low, high });
    if let Some(w) = watermarks {
        if !(w.min <= w.low && w.low <= w.high) {
            return Err(Error::config(
                "watermarks",
                format!(
                    "must satisfy min <= low <= high, got min {}, low {}, high {}",
                    w.min, w.low, w.high
                ),
            ));
        }
    }
    Ok((page_cluster, watermarks))
}

/// What [`ReplayConfig::build`] makes: the replay's specification, whose frames are resolved
/// by [`ReplayRun::resolve`] (a percentage needs the trace's distinct pages).
#[derive(Clone, Debug)]
pub struct ReplayRun {
    /// The specification with `machine.frames` still 0.
    spec: ReplaySpec,
    frames: FramesSpec,
}

impl ReplayRun {
    /// The frames as given: a count, or a percentage of the trace's distinct pages.
    pub fn frames(&self) -> FramesSpec {
        self.frames
    }

    /// The specification, its frames resolved: `distinct` (the trace's distinct pages, a
    /// pass over it) is called only for a percentage.
    pub fn resolve(self, distinct: impl FnOnce() -> Result<u64>) -> Result<ReplaySpec> {
        let mut spec = self.spec;
        spec.machine.frames = match self.frames {
            FramesSpec::Count(n) => n,
            FramesSpec::Percent(_) => {
                let distinct = distinct()?;
                if distinct == 0 {
                    return Err(Error::config(
                        "frames",
                        "a percentage needs a trace with at least one access",
                    ));
                }
                self.frames.resolve(distinct)
            }
        };
        Ok(spec)
    }
}

impl ReplayConfig {
    /// The settings' schema (JSON Schema, draft 7): every key with its type, default and the
    /// documentation written on its field here (`vmemsim.api.REPLAY_SCHEMA`), as
    /// [`crate::timed::RunConfig::schema`] for timed runs.
    pub fn schema() -> serde_json::Value {
        crate::util::schema_of::<ReplayConfig>()
    }

    /// Read from JSON (missing keys keep their defaults; an unknown key or a bad value is an
    /// error naming it, e.g. `zram_pool.clas`).
    pub fn from_json(json: &str) -> Result<ReplayConfig> {
        crate::util::from_json_keyed(json, "replay")
    }

    /// The machine (its `frames` 0, for the caller to set) with every setting checked: the
    /// ranges ([`machine_knobs`]), the rotational disk's slots, the kernel version, zram's
    /// pool (its class and device).
    pub fn machine(&self) -> Result<MachineConfig> {
        let (page_cluster, watermarks) =
            machine_knobs(self.swappiness, self.page_cluster, self.watermarks)?;
        if let Some(n) = self.swap_rotational {
            if n == 0 || n > MAX_FRAMES {
                return Err(Error::config(
                    "swap_rotational",
                    format!("must be 1..=2^28 slots, got {n}"),
                ));
            }
        }
        if let Some(n) = self.swap_max_pages {
            if n == 0 || n > crate::device::QueuedParams::MAX_PAGES {
                return Err(Error::config(
                    "swap_max_pages",
                    format!(
                        "must be 1..={} pages, got {n}",
                        crate::device::QueuedParams::MAX_PAGES
                    ),
                ));
            }
        }
        let kernel = kernel_version(&self.kernel)?;
        let zram_pool = match &self.zram_pool {
            None => None,
            Some(z) => Some(ZramPool {
                class: ContentClass::parse("zram_pool.class", &z.class)?,
                params: match DeviceSpec::parse(&z.device)? {
                    DeviceSpec::Zram(p) => p,
                    other => {
                        return Err(Error::config(
                            "zram_pool.device",
                            format!("expected zram[:key=value,...], got '{}'", other.kind()),
                        ))
                    }
                },
            }),
        };
        Ok(MachineConfig {
            page_cluster,
            watermarks,
            zones: self.zones.clone(),
            swappiness: self.swappiness,
            check_invariants: self.check_invariants,
            swap_sync_io: self.swap_sync_io,
            kernel,
            zram_pool,
            swap_rotational: self.swap_rotational,
            swap_max_pages: self.swap_max_pages,
            read_ahead_kb: self.read_ahead_kb,
            watermark_boost_factor: self.watermark_boost_factor,
            ..MachineConfig::new(0)
        })
    }

    /// The policy's options with the seed.
    pub fn policy_options(&self) -> PolicyOptions {
        let mut options = PolicyOptions::new(self.seed);
        for (k, v) in &self.options {
            options.set(k, v);
        }
        options
    }

    /// The policy, the machine and the options, checked: building the policy (on at most
    /// [`PROBE_FRAMES`] frames) reads its option keys and values, so an unknown key or a
    /// malformed value is reported before the trace is read. `machine.frames` is 0.
    fn checked_spec(&self, probe_frames: u32) -> Result<ReplaySpec> {
        let policy = PolicyKind::from_name(&self.policy)?;
        let machine = self.machine()?;
        let options = self.policy_options();
        policy.build(probe_frames.min(PROBE_FRAMES), &options, OptionsProbe)?;
        Ok(ReplaySpec {
            policy,
            machine,
            options,
            sample_every: self.sample_every,
            warmup: self.warmup,
        })
    }

    /// Check every setting of a replay (`frames` is required); [`ReplayRun::resolve`] then
    /// gives its specification.
    pub fn build(&self) -> Result<ReplayRun> {
        let Some(frames) = &self.frames else {
            return Err(Error::config(
                "frames",
                "required: a number of frames such as 1024, or a percentage of the trace's \
                 distinct pages such as '25%'",
            ));
        };
        let frames = FramesSpec::parse(frames)?;
        let probe = match frames {
            FramesSpec::Count(n) => n,
            FramesSpec::Percent(_) => PROBE_FRAMES,
        };
        Ok(ReplayRun {
            spec: self.checked_spec(probe)?,
            frames,
        })
    }

    /// Check every setting of a miss-ratio curve's replays: the policy, its options and the
    /// machine; `frames`, `sample_every` and `warmup` are the replay's alone (a curve's sizes
    /// are its own) and are errors when given. `machine.frames` is 0 (each size sets it).
    pub fn curve_spec(&self) -> Result<ReplaySpec> {
        let not_a_curves = |key: &str| {
            Error::config(
                key,
                "a setting of a single replay, not of a miss-ratio curve (its sizes are \
                 sizes or points)",
            )
        };
        if self.frames.is_some() {
            return Err(not_a_curves("frames"));
        }
        if self.sample_every != 0 {
            return Err(not_a_curves("sample_every"));
        }
        if self.warmup != 0 {
            return Err(not_a_curves("warmup"));
        }
        self.checked_spec(PROBE_FRAMES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::VecSource;

    #[test]
    fn the_schema_lists_every_key_with_its_default_and_documentation() {
        let schema = crate::util::checked_schema::<ReplayConfig>();
        let props = schema["properties"].as_object().unwrap();
        // vmemsim replay's defaults (`vmemsim replay --help`): lru, 60, kernel 6.8.
        assert_eq!(
            (
                &props["policy"]["default"],
                &props["swappiness"]["default"],
                &props["kernel"]["default"],
                &props["frames"]["default"]
            ),
            (
                &serde_json::json!("lru"),
                &serde_json::json!(60),
                &serde_json::json!("6.8"),
                &serde_json::Value::Null
            )
        );
    }

    #[test]
    fn the_defaults_are_those_of_machine_config_new() {
        let c = ReplayConfig::default();
        let spec = ReplayConfig {
            frames: Some("100".into()),
            ..c.clone()
        }
        .build()
        .unwrap()
        .resolve(|| unreachable!("a count needs no pass"))
        .unwrap();
        // The machine of the defaults is MachineConfig::new's (as the binding's
        // machine_config gave with no machine dict), and so is the rest of the spec.
        assert_eq!(spec.machine, MachineConfig::new(100));
        assert_eq!(spec.policy.name(), "lru");
        assert_eq!((spec.options.seed, spec.options.keys().count()), (0, 0));
        assert_eq!((spec.sample_every, spec.warmup), (0, 0));
        assert_eq!((c.frames.as_deref(), c.kernel.as_str()), (None, "6.8"));
        // Every key has its default: the empty object is the default configuration, and the
        // defaults' JSON reads back as themselves.
        assert_eq!(ReplayConfig::from_json("{}").unwrap(), c);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(ReplayConfig::from_json(&json).unwrap(), c);
    }

    #[test]
    fn every_setting_reads_back_from_its_json() {
        let c = ReplayConfig {
            policy: "mglru".into(),
            frames: Some("25%".into()),
            seed: 7,
            options: [("k".to_string(), "2".to_string())].into(),
            page_cluster: Some(2),
            watermarks: Some([10, 20, 30]),
            zones: vec![crate::engine::ZoneConfig {
                name: "DMA".into(),
                frames: 5,
                watermarks: Some([1, 2, 3]),
                lowmem_reserve: Some(4),
                pagetypes: Some(crate::mm::buddy::PageTypes {
                    blocks: [1, 2, 3],
                    free: [[1; 11], [2; 11], [0; 11]],
                }),
            }],
            swappiness: 150,
            check_invariants: true,
            swap_sync_io: true,
            swap_rotational: Some(1000),
            swap_max_pages: Some(254),
            zram_pool: Some(ZramPoolConfig {
                class: "text".into(),
                device: "zram:text_ratio=3".into(),
            }),
            kernel: "6.1".into(),
            watermark_boost_factor: 0,
            read_ahead_kb: 512,
            sample_every: 100,
            warmup: 50,
        };
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(ReplayConfig::from_json(&json).unwrap(), c);
        // frames as a JSON number is the same count as the string.
        let n = ReplayConfig::from_json(r#"{"frames": 300}"#).unwrap();
        assert_eq!(n.frames.as_deref(), Some("300"));
        // The machine carries each of them.
        let m = ReplayConfig {
            swap_rotational: None,
            ..c
        }
        .machine()
        .unwrap();
        assert_eq!(
            (
                m.page_cluster,
                m.watermarks,
                m.swappiness,
                m.check_invariants,
                m.swap_sync_io,
                m.kernel,
                m.read_ahead_kb,
                m.swap_max_pages
            ),
            (
                Some(2),
                Some(Watermarks {
                    min: 10,
                    low: 20,
                    high: 30
                }),
                150,
                true,
                true,
                KernelVersion::V6_1,
                512,
                Some(254)
            )
        );
        let pool = m.zram_pool.unwrap();
        assert_eq!(pool.class, ContentClass::Text);
        assert_eq!(
            DeviceSpec::Zram(pool.params),
            DeviceSpec::parse("zram:text_ratio=3").unwrap()
        );
    }

    #[test]
    fn a_bad_entry_is_named_by_its_path() {
        let e = |json: &str| ReplayConfig::from_json(json).unwrap_err().to_string();
        assert!(
            e(r#"{"swapiness": 60}"#).starts_with("swapiness: unknown field"),
            "{}",
            e(r#"{"swapiness": 60}"#)
        );
        assert!(
            e(r#"{"zram_pool": {"clas": "text"}}"#).starts_with("zram_pool.clas: unknown field")
        );
        assert!(e(r#"{"swappiness": -1}"#).starts_with("swappiness: -1 is not a valid value"));
        assert!(e(r#"{"frames": true}"#).starts_with("frames: "));
        assert!(e(r#"{"options": {"k": 2}}"#).starts_with("options.k: 2 is not a valid value"));
        assert!(e("[1]").starts_with("replay: "));
    }

    #[test]
    fn each_range_names_its_key() {
        let c = |json: &str| {
            ReplayConfig::from_json(json)
                .unwrap()
                .build()
                .expect_err("refused")
                .to_string()
        };
        // The messages the binding's machine_config gave.
        assert_eq!(
            c(r#"{"frames": 10, "swappiness": 201}"#),
            "swappiness: must be 0..=200, got 201"
        );
        assert_eq!(
            c(r#"{"frames": 10, "page_cluster": 11}"#),
            "page_cluster: must be 0..=10, got 11"
        );
        assert_eq!(
            c(r#"{"frames": 10, "watermarks": [10, 30, 20]}"#),
            "watermarks: must satisfy min <= low <= high, got min 10, low 30, high 20"
        );
        assert_eq!(
            c(r#"{"frames": 10, "swap_rotational": 0}"#),
            "swap_rotational: must be 1..=2^28 slots, got 0"
        );
        assert_eq!(
            c(r#"{"frames": 10, "swap_max_pages": 0}"#),
            "swap_max_pages: must be 1..=65536 pages, got 0"
        );
        assert_eq!(
            c(r#"{"frames": 10, "kernel": "5.0"}"#),
            "kernel: unknown kernel version '5.0'; valid: 6.1, 6.8"
        );
        assert!(c(r#"{"frames": 10, "zram_pool": {"class": "rand"}}"#)
            .starts_with("zram_pool.class: unknown content class 'rand'"));
        assert!(c(r#"{"frames": 10, "zram_pool": {"device": "ssd"}}"#)
            .starts_with("zram_pool.device: expected zram[:key=value,...], got 'ssd'"));
        assert!(
            c(r#"{"frames": 10, "zram_pool": {"device": "zram:bogus=1"}}"#)
                .starts_with("zram.bogus: unknown key")
        );
        assert!(c(r#"{"frames": 10, "policy": "nope"}"#).starts_with("policy: unknown policy"));
        assert!(c(r#"{"frames": 10, "policy": "clock", "options": {"hnd": "1"}}"#).contains("hnd"));
        assert!(c("{}").starts_with("frames: required"));
        assert!(c(r#"{"frames": "0"}"#).starts_with("frames: '0': must be at least 1"));
        // A curve checks the same machine, and refuses a single replay's settings.
        let curve = |json: &str| {
            ReplayConfig::from_json(json)
                .unwrap()
                .curve_spec()
                .expect_err("refused")
                .to_string()
        };
        assert_eq!(
            curve(r#"{"swappiness": 300}"#),
            "swappiness: must be 0..=200, got 300"
        );
        for key in ["frames", "sample_every", "warmup"] {
            assert!(curve(&format!(r#"{{"{key}": 5}}"#)).starts_with(&format!("{key}: ")));
        }
        assert!(ReplayConfig::default().curve_spec().is_ok());
    }

    #[test]
    fn frames_are_a_count_or_a_percentage_of_the_distinct_pages() {
        let pages: Vec<u64> = (0..200).chain(0..200).collect();
        let frames = |f: &str| {
            let run = ReplayConfig::from_json(&format!(r#"{{"frames": {f}}}"#))
                .unwrap()
                .build()
                .unwrap();
            let spec = run
                .resolve(|| super::super::count_distinct(&mut VecSource::from_pages(&pages)))
                .unwrap();
            spec.machine.frames
        };
        assert_eq!(frames(r#""25%""#), 50);
        assert_eq!(frames(r#""33.3%""#), 67);
        assert_eq!(frames("300"), 300);
        let empty = ReplayConfig::from_json(r#"{"frames": "10%"}"#)
            .unwrap()
            .build()
            .unwrap()
            .resolve(|| Ok(0))
            .unwrap_err();
        assert!(empty
            .to_string()
            .starts_with("frames: a percentage needs a trace with at least one access"));
    }
}

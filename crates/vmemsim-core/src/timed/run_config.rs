//! A native timed run's configuration, declared once: [`RunConfig`] is what `vmemsim run`,
//! `vmemsim.run` and a sweep's timed-run keys set, with the defaults a user gets, read from
//! JSON with errors that name the key ([`crate::util::from_json_keyed`]), as
//! [`crate::vm::VmRunConfig`] is for VM runs. [`RunConfig::build`] turns it into the
//! [`TimedSpec`] and the workload: the domain rules that used to live in the Python binding
//! (`run_timed` and its `machine_config`) live here: frames as a percentage of the
//! workload's footprint, the machine's ranges (swappiness, page_cluster, watermarks), the
//! policy's options checked before the run, `cgroup` as the inverse of `charge_device_ram`.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use super::{Costs, RunResult, TimedConfig, TimedSpec};
use crate::device::DeviceSpec;
use crate::engine::MachineConfig;
use crate::error::{Error, Result};
use crate::policy::registry::PolicyVisitor;
use crate::policy::{PolicyKind, PolicyOptions};
use crate::replay::config::{kernel_version, machine_knobs};
use crate::replay::FramesSpec;
use crate::translate::TranslateConfig;
use crate::workload::Workload;

/// A native timed run as the front ends describe it. Every field has the default
/// `vmemsim run` uses (its options, `vmemsim.run`'s keyword arguments and the sweep's
/// timed-run keys are these).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    // Each field's documentation is the help of its setting in `vmemsim run --help`, in a
    // sweep and in `vmemsim.api.RUN_SCHEMA` (through the exported schema): written for
    // users, without links.
    /// Workload model spec: a process model (ycsb-a, 'pagerank:scale=16', tpch-like, custom,
    /// trace:path=...) or a guest model run natively (redis-like, stress-vm, kernbench-like,
    /// lmbench-like, jvm-like: the same run as `vmemsim vm W --paging native`).
    pub workload: String,
    /// Random seed of the workload (unless its spec gives its own) and the policy.
    pub seed: u64,
    /// The reclaim policy (`vmemsim policies`).
    pub policy: String,
    /// Memory in 4 KiB frames, or a percentage of the workload's footprint (rounded to the
    /// nearest frame).
    #[serde(deserialize_with = "frames_text")]
    pub frames: String,
    /// The policy's own `key = value` options; a key the policy does not read is an error.
    pub options: BTreeMap<String, String>,
    /// Swap device: `ssd` (a SATA SSD as the MG-LRU characterization paper measured it: 7.5 ms
    /// per 4 KiB request, queue depth 32), `nvme`, `zram`, `remote` or `hdd` (a 7,200 rpm
    /// disk: seeks, half a turn, 150 MB/s; rotational swap), with `key=value` parameters (e.g.
    /// 'zram:read_us=20,write_us=35', 'hdd:size=8GiB'; docs/models.md gives each one's
    /// defaults).
    pub device: String,
    /// Host CPUs shared by the workload's threads and kswapd.
    #[schemars(range(min = 1, max = "crate::sched::MAX_CPUS"))]
    pub cpus: u32,
    /// Scheduler time slice in ns (unset: EEVDF's base slice for the CPU count).
    #[schemars(range(min = 1))]
    pub slice_ns: Option<u64>,
    /// The one cost table: CPU time of each event in ns (the same as VM runs').
    pub costs: Costs,
    /// Sample the counters every this many ns of simulated time (0: no time series).
    pub sample_every_ns: u64,
    /// Interleaving granularity of threads on different CPUs, in ns of CPU time (not a model
    /// parameter: smaller is finer and slower).
    #[schemars(range(min = 1))]
    pub step_ns: u64,
    /// The swap device's own memory (zram's compressed pool) is taken from the frames, as on
    /// a machine whose RAM they are (false: a memory cgroup limit, as `cgroup`).
    pub charge_device_ram: bool,
    /// The frames are a memory cgroup limit: zram's compressed pool is not charged to it
    /// (zsmalloc memory is not memcg-accounted). The inverse of `charge_device_ram` (unset:
    /// that decides; given with it false, the two must agree).
    pub cgroup: Option<bool>,
    /// Model the CPUs' TLBs and page walks (several times slower): a TLB hit sets no
    /// accessed bit (false: every access sets it and costs access_ns).
    pub tlb: bool,
    /// With `tlb`: the translation hardware (TLB geometries, page-walk caches, the caches
    /// page walks read through).
    pub translate: TranslateConfig,
    /// vm.page-cluster, 0 to 10: swap readahead of 2^N pages (unset: 3 for kernel policies,
    /// 0 for demand policies).
    #[schemars(range(max = "crate::replay::config::MAX_PAGE_CLUSTER"))]
    pub page_cluster: Option<u32>,
    /// [min, low, high] zone watermarks in pages, min <= low <= high (unset: derived from
    /// the memory size as Linux does).
    pub watermarks: Option<[u32; 3]>,
    /// The machine's zones, lowest first (e.g. DMA then DMA32), each with its frames and
    /// optionally its watermarks and lowmem_reserve; their frames sum to frames (unset: one
    /// zone). Replaces watermarks.
    pub zones: Vec<crate::engine::ZoneConfig>,
    /// vm.swappiness, 0 to 200.
    #[schemars(range(max = "crate::replay::config::MAX_SWAPPINESS"))]
    pub swappiness: u32,
    /// Whose reclaim rules the kernel policies follow where Linux versions differ: 6.8 or
    /// 6.1 (docs/kernel-6.1-vs-6.8.md).
    #[schemars(schema_with = "crate::replay::config::kernel_schema")]
    pub kernel: String,
    /// vm.watermark_boost_factor: how far an allocation that falls back to another
    /// migratetype's free list raises its zone's watermarks, in 1/10,000 of the zone's high
    /// watermark (at least a pageblock of 512 pages; Linux's default 15000, 0 = off). Only
    /// zones given their pagetypes (zones[i].pagetypes) fall back.
    pub watermark_boost_factor: u32,
    /// Check every invariant after every access (slow; for debugging).
    pub check_invariants: bool,
    /// The disk the workload's files are on, for workloads with file I/O (dd-like, fileio,
    /// gzip-like, recorded programs' reads and writes, MSR imports): `hdd`, `ssd`, `nvme`,
    /// `remote` with `key=value` parameters (unset: `ssd`).
    pub file_device: Option<String>,
    /// The files' readahead window, the device's read_ahead_kb (/sys/block/DEV/queue): 0
    /// reads only what is asked.
    pub read_ahead_kb: u32,
}

impl Default for RunConfig {
    fn default() -> Self {
        let timed = TimedConfig::default();
        let machine = MachineConfig::new(0);
        RunConfig {
            workload: String::new(),
            seed: 0,
            policy: "mglru".into(),
            frames: "50%".into(),
            options: BTreeMap::new(),
            device: timed.device.kind().into(),
            cpus: timed.cpus,
            slice_ns: timed.slice_ns,
            costs: timed.costs,
            sample_every_ns: timed.sample_every_ns,
            step_ns: timed.step_ns,
            charge_device_ram: timed.charge_device_ram,
            cgroup: None,
            tlb: timed.tlb,
            translate: timed.translate,
            page_cluster: machine.page_cluster.map(u32::from),
            watermarks: None,
            zones: Vec::new(),
            swappiness: machine.swappiness,
            kernel: machine.kernel.name().into(),
            watermark_boost_factor: machine.watermark_boost_factor,
            check_invariants: machine.check_invariants,
            file_device: None,
            read_ahead_kb: machine.read_ahead_kb,
        }
    }
}

/// `frames` as text: a JSON whole number or a string (the form [`FramesSpec::parse`] reads).
pub(crate) fn frames_text<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<String, D::Error> {
    struct Text;
    impl Visitor<'_> for Text {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a frame count or a percentage string such as \"50%\"")
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<String, E> {
            Ok(v.to_string())
        }
    }
    d.deserialize_any(Text)
}

/// What [`RunConfig::build`] makes: the run's specification and its workload.
pub struct TimedRun {
    pub spec: TimedSpec,
    pub workload: Box<dyn Workload>,
}

impl TimedRun {
    /// Run it ([`super::run`]); `progress(now_ns)` is called now and then.
    pub fn run(mut self, progress: Option<&mut dyn FnMut(u64)>) -> Result<RunResult> {
        super::run(&self.spec, &mut *self.workload, progress)
    }
}

/// The policy's options are checked on a policy of at most this many frames, so that a huge
/// machine is not allocated twice (as the binding's `check_options` did).
pub(crate) const PROBE_FRAMES: u32 = 4096;

/// Receives the probe policy and drops it.
pub(crate) struct OptionsProbe;

impl PolicyVisitor for OptionsProbe {
    type Out = ();
    fn visit<P: crate::policy::Policy>(self, _p: P) {}
}

impl RunConfig {
    /// The settings' schema (JSON Schema, draft 7): every key with its type, default and the
    /// documentation written on its field here (`vmemsim.api.RUN_SCHEMA`), as
    /// [`crate::vm::VmRunConfig::schema`] for VM runs.
    pub fn schema() -> serde_json::Value {
        crate::util::schema_of::<RunConfig>()
    }

    /// Read from JSON (missing keys keep their defaults; an unknown key or a bad value is an
    /// error naming it, e.g. `costs.access_ns`).
    pub fn from_json(json: &str) -> Result<RunConfig> {
        crate::util::from_json_keyed(json, "run")
    }

    /// Whether zram's pool is charged to `frames`: `cgroup` when given (the inverse), else
    /// `charge_device_ram`; `cgroup` with `charge_device_ram = false` must agree
    /// (`vmemsim.api._charge`'s rule).
    pub fn charges_device_ram(&self) -> Result<bool> {
        match self.cgroup {
            None => Ok(self.charge_device_ram),
            Some(cgroup) if !self.charge_device_ram && !cgroup => Err(Error::config(
                "cgroup",
                "cgroup and charge_device_ram disagree (cgroup=True is \
                 charge_device_ram=False); give one",
            )),
            Some(cgroup) => Ok(!cgroup),
        }
    }

    /// Check every setting, build the workload and resolve `frames` against its footprint;
    /// the policy's options are checked by building the policy before the run.
    pub fn build(&self) -> Result<TimedRun> {
        let policy = PolicyKind::from_name(&self.policy)?;
        let frames = FramesSpec::parse(&self.frames)?;
        // The machine's ranges (engine::Machine::new checks them again), as a replay's.
        let (page_cluster, watermarks) =
            machine_knobs(self.swappiness, self.page_cluster, self.watermarks)?;
        // The schema's ranges (`#[schemars(range)]` above), which the sweep checks too.
        if !(1..=crate::sched::MAX_CPUS).contains(&self.cpus) {
            return Err(Error::config(
                "cpus",
                format!("must be 1..={}, got {}", crate::sched::MAX_CPUS, self.cpus),
            ));
        }
        if self.slice_ns == Some(0) {
            return Err(Error::config("slice_ns", "must be at least 1"));
        }
        if self.step_ns == 0 {
            return Err(Error::config("step_ns", "must be at least 1"));
        }
        let kernel = kernel_version(&self.kernel)?;
        let mut options = PolicyOptions::new(self.seed);
        for (k, v) in &self.options {
            options.set(k, v);
        }
        let timed = TimedConfig {
            cpus: self.cpus,
            slice_ns: self.slice_ns,
            costs: self.costs.clone(),
            device: DeviceSpec::parse(&self.device)?,
            charge_device_ram: self.charges_device_ram()?,
            sample_every_ns: self.sample_every_ns,
            step_ns: self.step_ns,
            tlb: self.tlb,
            translate: self.translate.clone(),
            file_device: self
                .file_device
                .as_deref()
                .map(|s| {
                    DeviceSpec::parse(s).map_err(|e| Error::config("file_device", e.to_string()))
                })
                .transpose()?,
        };
        let workload = super::parse_workload(&self.workload, self.seed)?;
        let footprint = workload.footprint_pages();
        let frames = match frames {
            FramesSpec::Count(n) => n,
            FramesSpec::Percent(_) => {
                if footprint == 0 {
                    return Err(Error::config(
                        "frames",
                        "a percentage needs a workload with a footprint",
                    ));
                }
                frames.resolve(footprint)
            }
        };
        // Building the policy reads its option keys and values: an unknown key or a
        // malformed value is reported before the run.
        policy.build(frames.min(PROBE_FRAMES), &options, OptionsProbe)?;
        let machine = MachineConfig {
            page_cluster,
            watermarks,
            zones: self.zones.clone(),
            swappiness: self.swappiness,
            kernel,
            check_invariants: self.check_invariants,
            read_ahead_kb: self.read_ahead_kb,
            watermark_boost_factor: self.watermark_boost_factor,
            ..MachineConfig::new(frames)
        };
        Ok(TimedRun {
            spec: TimedSpec {
                policy,
                machine,
                options,
                timed,
            },
            workload,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_lists_every_key_with_its_default_and_documentation() {
        let schema = crate::util::checked_schema::<RunConfig>();
        let props = schema["properties"].as_object().unwrap();
        // vmemsim run's defaults (README, `vmemsim run --help`): mglru at 50% on ssd, 6 CPUs.
        assert_eq!(
            (
                &props["policy"]["default"],
                &props["frames"]["default"],
                &props["device"]["default"],
                &props["cpus"]["default"]
            ),
            (
                &serde_json::json!("mglru"),
                &serde_json::json!("50%"),
                &serde_json::json!("ssd"),
                &serde_json::json!(6)
            )
        );
    }

    const YCSB: &str = "ycsb-c:footprint=4MiB,requests=100";

    #[test]
    fn the_schemas_ranges_are_the_checks_of_build() {
        // Each range the schema declares (which the sweep checks before any run) is the one
        // `build` enforces: its bound is accepted, one beyond it refused, naming the key.
        let schema = crate::util::checked_schema::<RunConfig>();
        let props = &schema["properties"];
        let cases: &[(&str, Option<u64>, Option<u64>)] = &[
            ("swappiness", None, Some(200)),
            ("page_cluster", None, Some(10)),
            ("cpus", Some(1), Some(4096)),
            ("slice_ns", Some(1), None),
            ("step_ns", Some(1), None),
        ];
        for &(key, lo, hi) in cases {
            let p = &props[key];
            assert_eq!(
                p["minimum"].as_f64(),
                Some(lo.unwrap_or(0) as f64),
                "{key}: {p}"
            );
            assert_eq!(p["maximum"].as_f64(), hi.map(|h| h as f64), "{key}: {p}");
            let with = |v: u64| {
                RunConfig::from_json(&format!(r#"{{"workload": "{YCSB}", "{key}": {v}}}"#))
                    .and_then(|c| c.build())
            };
            if let Some(lo) = lo {
                assert!(with(lo).is_ok(), "{key} = {lo}");
                let e = with(lo - 1).err().unwrap().to_string();
                assert!(e.starts_with(&format!("{key}:")), "{e}");
            }
            if let Some(hi) = hi {
                assert!(with(hi).is_ok(), "{key} = {hi}");
                let e = with(hi + 1).err().unwrap().to_string();
                assert!(e.starts_with(&format!("{key}:")), "{e}");
            }
        }
    }

    #[test]
    fn the_schemas_kernel_names_are_what_build_accepts() {
        let schema = crate::util::checked_schema::<RunConfig>();
        let names = schema["properties"]["kernel"]["enum"].as_array().unwrap();
        assert_eq!(names.len(), 2);
        let with = |v: &str| {
            RunConfig::from_json(&format!(r#"{{"workload": "{YCSB}", "kernel": "{v}"}}"#))
                .and_then(|c| c.build())
        };
        for n in names {
            assert!(with(n.as_str().unwrap()).is_ok(), "{n}");
        }
        let e = with("5.15").err().unwrap().to_string();
        assert!(e.starts_with("kernel: "), "{e}");
    }

    #[test]
    fn the_defaults_are_vmemsim_runs() {
        let c = RunConfig::default();
        assert_eq!(
            (c.policy.as_str(), c.frames.as_str(), c.device.as_str()),
            ("mglru", "50%", "ssd")
        );
        assert_eq!((c.cpus, c.step_ns, c.swappiness), (6, 2_000, 60));
        assert_eq!(
            (c.slice_ns, c.page_cluster, c.watermarks),
            (None, None, None)
        );
        assert!(c.charge_device_ram && !c.tlb && !c.check_invariants && c.cgroup.is_none());
        // Every key has its default: the empty object is the default configuration, and the
        // defaults' JSON reads back as themselves.
        assert_eq!(RunConfig::from_json("{}").unwrap(), c);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(RunConfig::from_json(&json).unwrap(), c);
        // The built specification's timed part is TimedConfig's default.
        let run = RunConfig {
            workload: YCSB.into(),
            ..c
        }
        .build()
        .unwrap();
        assert_eq!(run.spec.timed, TimedConfig::default());
        assert_eq!(run.spec.policy.name(), "mglru");
        assert_eq!(run.spec.machine.kernel, crate::policy::KernelVersion::V6_8);
    }

    #[test]
    fn kernel_picks_the_machines_reclaim_rules() {
        // As a replay's `kernel`: the machine the run is built on follows 6.1's rules.
        let run = RunConfig::from_json(&format!(r#"{{"workload": "{YCSB}", "kernel": "6.1"}}"#))
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(run.spec.machine.kernel, crate::policy::KernelVersion::V6_1);
        assert_eq!(
            run.spec.machine_config().guest.kernel,
            run.spec.machine.kernel
        );
    }

    #[test]
    fn a_bad_entry_is_named_by_its_path() {
        let e = RunConfig::from_json(r#"{"costs": {"acess_ns": 5}}"#).unwrap_err();
        assert!(
            e.to_string().contains("costs.acess_ns: unknown field"),
            "{e}"
        );
        let e = RunConfig::from_json(r#"{"swapiness": 60}"#).unwrap_err();
        assert!(e.to_string().starts_with("swapiness: unknown field"), "{e}");
        let e = RunConfig::from_json(r#"{"cpus": -1}"#).unwrap_err();
        assert!(
            e.to_string().starts_with("cpus: -1 is not a valid value"),
            "{e}"
        );
        let e = RunConfig::from_json(r#"{"frames": true}"#).unwrap_err();
        assert!(e.to_string().starts_with("frames: "), "{e}");
        let e = RunConfig::from_json("[1]").unwrap_err();
        assert!(e.to_string().starts_with("run: "), "{e}");
    }

    #[test]
    fn the_machines_ranges_name_their_key() {
        let c = |json: &str| {
            RunConfig::from_json(json)
                .unwrap()
                .build()
                .err()
                .expect("refused")
                .to_string()
        };
        assert_eq!(
            c(r#"{"swappiness": 201}"#),
            "swappiness: must be 0..=200, got 201"
        );
        assert_eq!(
            c(r#"{"page_cluster": 11}"#),
            "page_cluster: must be 0..=10, got 11"
        );
        assert!(c(r#"{"watermarks": [10, 30, 20]}"#)
            .starts_with("watermarks: must satisfy min <= low <= high"),);
        assert!(c(r#"{"frames": "0"}"#).starts_with("frames: "));
        assert_eq!(
            c(r#"{"workload": "ycsb-c", "kernel": "5.0"}"#),
            "kernel: unknown kernel version '5.0'; valid: 6.1, 6.8"
        );
        assert!(c(r#"{"workload": "ycsb-c", "device": "floppy"}"#).contains("floppy"));
        assert!(c(&format!(
            r#"{{"workload": "{YCSB}", "policy": "clock", "options": {{"hnd": "1"}}}}"#
        ))
        .contains("hnd"));
    }

    #[test]
    fn cgroup_is_charge_device_ram_inverted() {
        let c = |charge: bool, cgroup: Option<bool>| {
            RunConfig {
                charge_device_ram: charge,
                cgroup,
                ..RunConfig::default()
            }
            .charges_device_ram()
        };
        assert_eq!(c(true, None), Ok(true));
        assert_eq!(c(false, None), Ok(false));
        assert_eq!(c(true, Some(true)), Ok(false));
        assert_eq!(c(true, Some(false)), Ok(true));
        assert_eq!(c(false, Some(true)), Ok(false));
        let e = c(false, Some(false)).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("cgroup: cgroup and charge_device_ram disagree"));
    }

    #[test]
    fn frames_are_a_count_or_a_percentage_of_the_footprint() {
        // stress-vm of 4 MiB on one vCPU: 1,024 pages and its program image's 6, 1,030 (as
        // VmRunConfig's test). A percentage of it is rounded to the nearest frame: 50% is
        // 515, 25% is 257.5 → 258, 33% is 339.9 → 340; a count is as given (a JSON number or
        // a string).
        let frames = |f: &str| {
            RunConfig::from_json(&format!(
                r#"{{"workload": "stress-vm:vcpus=1,bytes=4MiB,rounds=1", "frames": {f}}}"#
            ))
            .unwrap()
            .build()
            .unwrap()
            .spec
            .machine
            .frames
        };
        assert_eq!(frames(r#""50%""#), 515);
        assert_eq!(frames(r#""25%""#), 258);
        assert_eq!(frames(r#""33%""#), 340);
        assert_eq!(frames("300"), 300);
        assert_eq!(frames(r#""300""#), 300);
    }
}

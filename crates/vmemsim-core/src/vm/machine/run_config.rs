//! The VM front end's configuration, declared once: [`VmRunConfig`] is what `vmemsim vm`,
//! `vmemsim.run_vm` and a sweep's `[vm]` / `[machine]` keys set, with the defaults a user
//! gets, read from JSON with errors that name the key ([`crate::util::from_json_keyed`]).
//! [`VmRunConfig::build`] turns it into the machine's [`VmConfig`]s and workloads: the
//! domain rules that used to live in the Python binding (frames as a percentage of each
//! VM's footprint rounded up to whole pages, the guest page-table pages' default, one seed
//! per VM, the memory estimate before anything is allocated) live here.

use serde::{Deserialize, Serialize};

use super::{Costs, HostCpus, Paging, VmConfig};
use crate::engine::MachineConfig;
use crate::error::{Error, Result};
use crate::policy::{PolicyKind, PolicyOptions};
use crate::replay::FramesSpec;
use crate::translate::{PageSize, TranslateConfig};
use crate::workload::Workload;

/// A VM run as the front ends describe it. Every field has the default `vmemsim vm` uses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct VmRunConfig {
    // Each field's documentation is the help of its option in `vmemsim vm --help`, of its
    // `vm.*` key in a sweep and in `vmemsim.api.VM_SCHEMA` (through the exported schema):
    // written for users, without links.
    /// Guest workload specs: one VM each on one host (one spec: every VM runs it, VM `i`
    /// with seed `seed + i`).
    pub workload: Vec<String>,
    /// Random seed of the workloads and the policies (VM `i` runs with `seed + i`).
    pub seed: u64,
    /// Translation: `native` (no VM), `tdp` (nested paging; also `ept`, `npt`) or `shadow`
    /// (KVM's shadow MMU).
    #[schemars(schema_with = "paging_schema")]
    pub paging: String,
    /// Guest memory in pages, or a percentage of each VM's own footprint (rounded up to whole
    /// guest pages). The default leaves room above the guest's watermarks: no reclaim in the
    /// guest; the kernel's watermarks keep some memory free, so 100% already means pressure.
    pub guest_frames: String,
    /// Host memory for the VMs in pages, or a percentage of all the VMs' memory (guest frames
    /// and page-table pages; rounded up to whole host pages).
    pub host_frames: String,
    /// The guest OS's reclaim policy (`vmemsim policies`; native paging: the machine's).
    pub guest_policy: String,
    /// The host's reclaim policy (tdp and shadow paging).
    pub host_policy: String,
    /// Shadow paging: how KVM recycles shadow pages: `fifo` (upstream KVM's), `clock` (seed
    /// 000's second chance), `clock-leaf`, `clock-parent`.
    #[schemars(schema_with = "eviction_schema")]
    pub eviction: String,
    /// Shadow paging: the pool of shadow pages, `n_max_mmu_pages` (unset: KVM's default, 2% of
    /// guest pages, at least 64).
    #[schemars(range(min = "crate::kvm::MIN_POOL_PAGES", max = "crate::kvm::MAX_POOL_PAGES"))]
    pub mmu_pages: Option<u64>,
    /// Guest page-table levels (native paging: the machine's), 4 or 5.
    #[schemars(range(min = 4, max = 5))]
    pub guest_levels: u8,
    /// EPT/NPT levels, 4 or 5.
    #[schemars(range(min = 4, max = 5))]
    pub host_levels: u8,
    /// Guest page-table pages (0: one per 256 guest frames plus 64).
    pub pt_pages: u32,
    /// The (v)CPUs' translation hardware: TLB geometries, page-walk caches, the nested TLB,
    /// the caches page walks read through.
    pub translate: TranslateConfig,
    /// The one cost table: CPU time of each event in ns (the same as native runs').
    pub costs: Costs,
    /// Page size of the guest's mappings: `4k`, `2m` (as THP) or `1g` (as hugetlbfs).
    #[schemars(schema_with = "page_size_schema")]
    pub guest_page: String,
    /// Page size the host backs guest memory with (tdp, shadow): `4k`, `2m` (as THP) or `1g`
    /// (as hugetlbfs).
    #[schemars(schema_with = "page_size_schema")]
    pub host_page: String,
    /// VMs of the workload (seeds S, S+1, ...) on one host sharing its memory (with several
    /// workload specs: one per spec); host memory as a percentage is of all of them.
    #[schemars(range(min = 1))]
    pub vms: u32,
    /// Timed swap device for the host's swap of guest memory: `ssd`, `nvme`, `zram`, `remote`, `hdd`,
    /// with `key=value` parameters (unset: a flat `host_major_fault_ns` per major fault).
    pub host_swap: Option<String>,
    /// Timed swap device for the guest's own swap, as for the host (unset: a flat
    /// `guest_major_fault_ns` per guest major fault).
    pub guest_swap: Option<String>,
    /// The guests' swap devices are one disk of the host (with the host's swap when it is the
    /// same device): their requests queue together.
    pub shared_disk: bool,
    /// Host CPUs all vCPUs share, in time slices (unset: a CPU per vCPU); waiting for one is
    /// steal time.
    #[schemars(range(min = 1, max = "crate::sched::MAX_CPUS"))]
    pub host_cpus: Option<u32>,
    /// The host's disk holding the VMs' disk images, for workloads with file I/O: `hdd`,
    /// `ssd`, `nvme`, `remote`, with `key=value` parameters (unset: `ssd`).
    pub file_device: Option<String>,
    /// How QEMU opens each VM's disk image: `writeback` (QEMU's default: through the host's
    /// page cache), `none` (O_DIRECT: no host cache), `writethrough`, `directsync`.
    #[schemars(schema_with = "cache_mode_schema")]
    pub cache_mode: String,
    /// read_ahead_kb of the guest's virtual disk and of the host's disk (the largest
    /// readahead window of each page cache; 0 reads only what is asked).
    pub read_ahead_kb: u32,
    /// Sample the counters every this many ns of simulated time (0: no time series): the
    /// first VM's guest counters and, with file I/O, each VM's page caches.
    pub sample_every_ns: u64,
    /// Give each guest a virtio-balloon device (QEMU's `-device virtio-balloon`; tdp or
    /// shadow paging with 4k pages): its driver inflates and deflates in simulated time and
    /// the host drops the backing of ballooned pages.
    pub balloon: bool,
    /// The balloon device's deflate-on-OOM feature (QEMU's `deflate-on-oom`, off by
    /// default): a guest out of memory takes 256 pages back from the balloon instead of
    /// killing the workload. Needs `balloon`.
    pub deflate_on_oom: bool,
    /// Balloon size at boot in MiB (as QEMU's `balloon` command or libvirt's `setMemory`
    /// at time 0, for each VM): memory taken from each guest, at most its memory. Unset: an
    /// empty balloon. Needs `balloon`.
    pub balloon_size_mib: Option<u64>,
    /// CPU time of the balloon driver's rounds and of QEMU's handling of them, in ns.
    pub balloon_costs: crate::vm::balloon::BalloonCosts,
    /// Run MOM, oVirt's Memory Overcommitment Manager, on the host: every 5 s it samples the
    /// host's free memory and each guest's balloon stats, every 10 s it sets each guest's
    /// balloon target by its balloon.rules (shrink the guests while the host's averaged free
    /// memory is under 20%, grow them otherwise). Needs `balloon`.
    pub mom: bool,
    /// MOM's tunables (its intervals, history and balloon.rules constants).
    pub mom_config: crate::vm::balloon::MomConfig,
    /// The guests have no swap space (swapoff): guest reclaim takes only file pages, and a
    /// guest whose anonymous memory fills it runs out of memory (with a balloon: the
    /// workload is OOM-killed, recorded in the result's `balloon.oom_kill_ns`).
    pub guest_swapoff: bool,
    /// QEMU's own code as named pages of the host (VSwapper §3, false page anonymity): this
    /// many pages of `qemu-system-x86_64`'s text, file-backed on the host and resident from
    /// the start, which QEMU runs through for every virtio-blk request of a guest; their
    /// refaults are the VM's `swap_pathologies.hypervisor_code_faults`. 0 (the default):
    /// not modelled. See `vm/machine/pathologies.rs` for the size to give.
    pub qemu_text_pages: u32,
    /// VSwapper (Amit, Tsafrir and Schuster, ASPLOS 2014, §4) on each VM: `off` (the
    /// default: guest memory is anonymous to the host), `mapper` (the Swap Mapper, §4.1:
    /// pages QEMU filled from the disk image are named copies of their blocks, which host
    /// reclaim drops without a swap write and a fault reads back from the image; a write
    /// makes them anonymous; counted in `swap_pathologies.mapper_*`), `preventer` (the False
    /// Reads Preventer, §4.2: a guest write to a page the host swapped out is emulated into
    /// a buffer, and a page the guest overwrites whole is not read — no false swap reads;
    /// counted in `swap_pathologies.preventer_*`) or `vswapper` (both). Needs 4 KiB host
    /// pages.
    #[schemars(schema_with = "vswapper_schema")]
    pub vswapper: String,
}

impl Default for VmRunConfig {
    fn default() -> Self {
        VmRunConfig {
            workload: Vec::new(),
            seed: 0,
            paging: "tdp".into(),
            guest_frames: "200%".into(),
            host_frames: "150%".into(),
            guest_policy: "clock-lru".into(),
            host_policy: "clock-lru".into(),
            eviction: "fifo".into(),
            mmu_pages: None,
            guest_levels: 4,
            host_levels: 4,
            pt_pages: 0,
            translate: TranslateConfig::default(),
            costs: Costs::default(),
            guest_page: "4k".into(),
            host_page: "4k".into(),
            vms: 1,
            host_swap: None,
            guest_swap: None,
            shared_disk: false,
            host_cpus: None,
            file_device: None,
            cache_mode: "writeback".into(),
            read_ahead_kb: crate::engine::DEFAULT_READ_AHEAD_KB,
            sample_every_ns: 0,
            balloon: false,
            deflate_on_oom: false,
            balloon_size_mib: None,
            balloon_costs: Default::default(),
            mom: false,
            mom_config: Default::default(),
            guest_swapoff: false,
            qemu_text_pages: 0,
            vswapper: "off".into(),
        }
    }
}

/// What [`VmRunConfig::build`] makes: one machine configuration and one workload per VM, and
/// the host CPUs they share.
pub struct VmRun {
    pub cfgs: Vec<VmConfig>,
    pub workloads: Vec<Box<dyn Workload>>,
    pub host_cpus: Option<HostCpus>,
    pub sample_every_ns: u64,
}

impl VmRun {
    /// Run it ([`super::run_many_with`]).
    pub fn run(mut self) -> Result<super::RunResult> {
        let opts = super::EngineOpts {
            sample_every_ns: self.sample_every_ns,
            ..Default::default()
        };
        super::run_many_opts(&self.cfgs, &mut self.workloads, self.host_cpus, opts)
    }
}

/// The page sizes [`parse_page_size`] accepts.
pub const PAGE_SIZE_NAMES: &[&str] = &["4k", "2m", "1g", "4kib", "2mib", "1gib", "4096"];

crate::util::names_schema_fn!(page_size_schema, PAGE_SIZE_NAMES);
crate::util::names_schema_fn!(paging_schema, Paging::NAMES);
crate::util::names_schema_fn!(eviction_schema, crate::kvm::Eviction::NAMES);
crate::util::names_schema_fn!(cache_mode_schema, super::CacheMode::NAMES);
crate::util::names_schema_fn!(vswapper_schema, super::VSwapper::NAMES);

/// Parse a page size as the front ends write it (one of [`PAGE_SIZE_NAMES`]).
pub fn parse_page_size(key: &str, s: &str) -> Result<PageSize> {
    match s {
        "4k" | "4kib" | "4096" => Ok(PageSize::K4),
        "2m" | "2mib" => Ok(PageSize::M2),
        "1g" | "1gib" => Ok(PageSize::G1),
        _ => Err(Error::config(
            key,
            format!("unknown page size {s:?} (4k, 2m, 1g)"),
        )),
    }
}

impl VmRunConfig {
    /// The settings' schema (JSON Schema, draft 7): every key with its type, default and
    /// the documentation written on its field here. The front ends take their keys, defaults
    /// and help from it (`vmemsim.api.VM_SCHEMA`).
    pub fn schema() -> serde_json::Value {
        crate::util::schema_of::<VmRunConfig>()
    }

    /// Read from JSON (missing keys keep their defaults; an unknown key or a bad value is an
    /// error naming it, e.g. `costs.exit_ns`).
    pub fn from_json(json: &str) -> Result<VmRunConfig> {
        crate::util::from_json_keyed(json, "vm")
    }

    /// Check every setting and build the VMs' configurations and workloads. The memory the
    /// run will hold is estimated before the second workload is built.
    pub fn build(&self) -> Result<VmRun> {
        // The schema's ranges (`#[schemars(range)]` above), which the sweep checks too.
        if let Some(n) = self.host_cpus {
            if !(1..=crate::sched::MAX_CPUS).contains(&n) {
                return Err(Error::config(
                    "host_cpus",
                    format!("must be 1..={}, got {n}", crate::sched::MAX_CPUS),
                ));
            }
        }
        for (key, levels) in [
            ("guest_levels", self.guest_levels),
            ("host_levels", self.host_levels),
        ] {
            if !(4..=5).contains(&levels) {
                return Err(Error::config(key, format!("must be 4 or 5, got {levels}")));
            }
        }
        let device = |key: &str, s: &Option<String>| {
            s.as_deref()
                .map(|s| {
                    crate::device::DeviceSpec::parse(s)
                        .map_err(|e| Error::config(key, e.to_string()))
                })
                .transpose()
        };
        let host_swap = device("host_swap", &self.host_swap)?;
        let guest_swap = device("guest_swap", &self.guest_swap)?;
        let file_device = device("file_device", &self.file_device)?;
        let cache_mode = super::CacheMode::parse(&self.cache_mode)?;
        let vswapper = super::VSwapper::parse(&self.vswapper)?;
        let guest_page = parse_page_size("guest_page", &self.guest_page)?;
        let host_page = parse_page_size("host_page", &self.host_page)?;
        let paging = Paging::parse(&self.paging)?;
        if self.mmu_pages.is_some() && paging != Paging::Shadow {
            return Err(Error::config(
                "mmu_pages",
                "only with shadow paging (KVM's shadow-page pool, n_max_mmu_pages); tdp and \
                 native paging have no such pool",
            ));
        }
        if let Some(n) = self.mmu_pages {
            use crate::kvm::{MAX_POOL_PAGES, MIN_POOL_PAGES};
            if !(MIN_POOL_PAGES..=MAX_POOL_PAGES).contains(&n) {
                return Err(Error::config(
                    "mmu_pages",
                    format!("must be {MIN_POOL_PAGES}..={MAX_POOL_PAGES}, got {n}"),
                ));
            }
        }
        self.costs.check()?;
        if !self.balloon {
            for (key, set) in [
                ("deflate_on_oom", self.deflate_on_oom),
                ("balloon_size_mib", self.balloon_size_mib.is_some()),
                ("balloon_costs", self.balloon_costs != Default::default()),
                ("mom", self.mom),
            ] {
                if set {
                    return Err(Error::config(
                        key,
                        "needs a balloon device (balloon = true)",
                    ));
                }
            }
        }
        if !self.mom && self.mom_config != Default::default() {
            return Err(Error::config(
                "mom_config",
                "needs the manager (mom = true)",
            ));
        }
        self.mom_config
            .check()
            .map_err(super::ballooning::mom_config_error)?;
        if self.balloon && paging == Paging::Native {
            return Err(Error::config(
                "balloon",
                "a balloon is a device of a VM: use tdp or shadow paging",
            ));
        }
        if self.balloon && (guest_page != PageSize::K4 || host_page != PageSize::K4) {
            return Err(Error::config(
                "balloon",
                "only with guest_page and host_page 4k (the driver balloons 4 KiB pages)",
            ));
        }
        let specs = &self.workload;
        // Several specs and the default count: one VM per spec.
        let vms = if specs.len() > 1 && self.vms == 1 {
            specs.len() as u32
        } else {
            self.vms
        };
        if vms == 0 || specs.is_empty() {
            return Err(Error::config("vms", "at least one VM"));
        }
        if specs.len() > 1 && vms as usize != specs.len() {
            return Err(Error::config(
                "vms",
                format!("{vms} VMs for {} workloads", specs.len()),
            ));
        }
        // VM i runs workload i (or the one workload) with seed + i.
        let mut wls: Vec<Box<dyn Workload>> = Vec::with_capacity(vms.min(1 << 16) as usize);
        for i in 0..vms as usize {
            let spec = &specs[i.min(specs.len() - 1)];
            let w = crate::vm::workloads::parse(spec, self.seed.wrapping_add(i as u64))?;
            if i == 0 {
                // Before building the others: each VM holds its workload's state, its guest's
                // frames (200% of the footprint by default) and their host pages.
                let per_vm = w.footprint_pages()
                    * (crate::util::BYTES_PER_PAGE + 3 * crate::util::BYTES_PER_FRAME);
                crate::util::check_memory(
                    if vms > 1 { "vms" } else { "workload" },
                    &format!("{vms} VM(s) of {} pages each", w.footprint_pages()),
                    per_vm.saturating_mul(vms as u64),
                )?;
            }
            wls.push(w);
        }
        // A percentage is rounded up to whole pages of the side's page size.
        let resolve = |key: &str, spec: &str, base: u64, size: PageSize| -> Result<u32> {
            match FramesSpec::parse(spec).map_err(|e| Error::config(key, e.to_string()))? {
                FramesSpec::Count(n) => Ok(n),
                f @ FramesSpec::Percent(_) => {
                    if base == 0 {
                        return Err(Error::config(
                            key,
                            "a percentage needs a workload with a footprint",
                        ));
                    }
                    let unit = size.bytes() >> 12;
                    let n = (f.resolve(base) as u64).div_ceil(unit) * unit;
                    u32::try_from(n)
                        .map_err(|_| Error::config(key, format!("{n} frames is too many")))
                }
            }
        };
        // Guest memory as a percentage is of each VM's own workload.
        let mut gs = Vec::with_capacity(wls.len());
        for w in &wls {
            let g = resolve(
                "guest_frames",
                &self.guest_frames,
                w.footprint_pages(),
                guest_page,
            )?;
            let pt = if self.pt_pages == 0 {
                g / 256 + 64
            } else {
                self.pt_pages
            };
            if let Some(mib) = self.balloon_size_mib {
                if mib.saturating_mul(256) > g as u64 {
                    return Err(Error::config(
                        "balloon_size_mib",
                        format!(
                            "{mib} MiB is more than the guest's memory ({g} pages, {} MiB)",
                            g / 256
                        ),
                    ));
                }
            }
            gs.push((g, pt));
        }
        // A percentage of host memory is of all the VMs' memory.
        let all: u64 = gs.iter().map(|&(g, pt)| g as u64 + pt as u64).sum();
        let h = resolve("host_frames", &self.host_frames, all, host_page)?;
        let machine = |frames| MachineConfig {
            read_ahead_kb: self.read_ahead_kb,
            ..MachineConfig::new(frames)
        };
        let cfg = VmConfig {
            paging,
            guest: machine(gs[0].0),
            guest_policy: PolicyKind::from_name(&self.guest_policy)?,
            guest_options: PolicyOptions::new(self.seed),
            host: machine(h),
            host_policy: PolicyKind::from_name(&self.host_policy)?,
            host_options: PolicyOptions::new(self.seed),
            translate: self.translate.clone(),
            guest_levels: self.guest_levels,
            host_levels: self.host_levels,
            pt_pages: gs[0].1,
            eviction: crate::kvm::Eviction::parse("eviction", &self.eviction)?,
            mmu_pages: self.mmu_pages,
            guest_page,
            host_page,
            host_swap,
            guest_swap,
            shared_disk: self.shared_disk,
            charge_device_ram: false,
            tlb: true,
            costs: self.costs.clone(),
            file_device,
            cache_mode,
            balloon: self.balloon.then(|| super::BalloonConfig {
                driver: crate::vm::balloon::BalloonDriverConfig {
                    deflate_on_oom: self.deflate_on_oom,
                    costs: self.balloon_costs.clone(),
                },
                size_pages: self.balloon_size_mib.unwrap_or(0) * 256,
                script: Vec::new(),
            }),
            mom: self.mom.then(|| self.mom_config.clone()),
            guest_swapoff: self.guest_swapoff,
            qemu_text_pages: self.qemu_text_pages,
            vswapper,
        };
        let cfgs = gs
            .iter()
            .map(|&(g, pt)| VmConfig {
                guest: machine(g),
                pt_pages: pt,
                ..cfg.clone()
            })
            .collect();
        Ok(VmRun {
            cfgs,
            workloads: wls,
            host_cpus: self.host_cpus.map(|cpus| HostCpus {
                cpus,
                slice_ns: None,
            }),
            sample_every_ns: self.sample_every_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_lists_every_key_with_its_default_and_documentation() {
        let schema = crate::util::checked_schema::<VmRunConfig>();
        let props = schema["properties"].as_object().unwrap();
        assert_eq!(props["paging"]["default"], "tdp");
        assert_eq!(props["pt_pages"]["format"], "uint32");
        // The nested tables are described too: the cost table's keys.
        let costs = &schema["definitions"]["Costs"]["properties"];
        assert!(costs["access_ns"]["description"]
            .as_str()
            .unwrap()
            .contains("100 ns"));
    }

    #[test]
    fn the_schemas_ranges_are_the_checks_of_build() {
        // Each range the schema declares (which the sweep checks before any run) is the one
        // `build` enforces: its bound is accepted, one beyond it refused, naming the key.
        let schema = crate::util::checked_schema::<VmRunConfig>();
        let props = &schema["properties"];
        let cases: &[(&str, u64, Option<u64>)] = &[
            ("guest_levels", 4, Some(5)),
            ("host_levels", 4, Some(5)),
            ("vms", 1, None),
            ("host_cpus", 1, Some(4096)),
            (
                "mmu_pages",
                crate::kvm::MIN_POOL_PAGES,
                Some(crate::kvm::MAX_POOL_PAGES),
            ),
        ];
        for &(key, lo, hi) in cases {
            let p = &props[key];
            assert_eq!(p["minimum"].as_f64(), Some(lo as f64), "{key}: {p}");
            assert_eq!(p["maximum"].as_f64(), hi.map(|h| h as f64), "{key}: {p}");
            let with = |v: u64| {
                VmRunConfig::from_json(&format!(
                    r#"{{"workload": ["stress-vm:bytes=1MiB"], "paging": "shadow", "{key}": {v}}}"#
                ))
                .and_then(|c| c.build())
            };
            assert!(with(lo).is_ok(), "{key} = {lo}");
            let e = with(lo - 1)
                .err()
                .unwrap_or_else(|| panic!("{key} = {}", lo - 1));
            assert!(e.to_string().starts_with(&format!("{key}:")), "{e}");
            if let Some(hi) = hi {
                assert!(with(hi).is_ok(), "{key} = {hi}");
                let e = with(hi + 1).err().unwrap().to_string();
                assert!(e.starts_with(&format!("{key}:")), "{e}");
            }
        }
    }

    #[test]
    fn the_schemas_names_are_what_build_accepts() {
        // Each name the schema lists (the CLI's choices, the sweep's check) builds; a name
        // outside the list is refused, naming the key. An upper-case spelling is outside.
        let schema = crate::util::checked_schema::<VmRunConfig>();
        for key in [
            "paging",
            "eviction",
            "guest_page",
            "host_page",
            "cache_mode",
            "vswapper",
        ] {
            let names = schema["properties"][key]["enum"].as_array().unwrap();
            assert!(names.len() >= 2, "{key}");
            let with = |v: &str| {
                // (shadow paging takes every eviction; tdp every page size)
                let paging = if key == "eviction" { "shadow" } else { "tdp" };
                let paging = if key == "paging" { v } else { paging };
                VmRunConfig::from_json(&format!(
                    r#"{{"workload": ["stress-vm:bytes=1MiB"], "paging": "{paging}", "{key}": "{v}"}}"#
                ))
                .and_then(|c| c.build())
            };
            for n in names {
                let n = n.as_str().unwrap();
                assert!(with(n).is_ok(), "{key} = {n}: {:?}", with(n).err());
            }
            for bad in ["bogus", &names[1].as_str().unwrap().to_uppercase()] {
                let e = with(bad).err().unwrap().to_string();
                assert!(e.contains(&format!("{key}: ")), "{key} = {bad}: {e}");
            }
        }
    }

    #[test]
    fn balloon_settings_are_checked_and_errors_name_their_key() {
        let with = |extra: &str| {
            VmRunConfig::from_json(&format!(
                r#"{{"workload": ["stress-vm:vcpus=1,bytes=4MiB,rounds=1"]{extra}}}"#
            ))
            .and_then(|c| c.build())
        };
        let err = |extra: &str| with(extra).err().unwrap().to_string();
        // 1,030 pages × 200% = 2,060 guest pages: 8 MiB (2,048 pages) fit, 9 MiB do not.
        let run = with(r#", "balloon": true, "balloon_size_mib": 8"#).unwrap();
        let b = run.cfgs[0].balloon.as_ref().unwrap();
        assert_eq!((b.size_pages, b.driver.deflate_on_oom), (2_048, false));
        assert!(run.cfgs[0].mom.is_none());
        assert!(err(r#", "balloon": true, "balloon_size_mib": 9"#)
            .starts_with("balloon_size_mib: 9 MiB is more than the guest's memory (2060 pages"));
        assert!(err(r#", "deflate_on_oom": true"#).starts_with("deflate_on_oom: needs a balloon"));
        assert!(err(r#", "mom": true"#).starts_with("mom: needs a balloon"));
        assert!(err(r#", "balloon": true, "mom_config": {"history": 0}"#)
            .starts_with("mom_config: needs the manager"));
        assert!(
            err(r#", "balloon": true, "mom": true, "mom_config": {"history": 0}"#)
                .starts_with("mom_config.history: at least one sample")
        );
        assert!(
            err(r#", "balloon": true, "balloon_costs": {"kick_nss": 1}"#)
                .contains("balloon_costs.kick_nss: unknown field")
        );
        assert!(err(r#", "balloon": true, "paging": "native""#).starts_with("balloon: "));
        assert!(err(r#", "balloon": true, "host_page": "2m""#).starts_with("balloon: "));
        // Without a balloon the VM configuration has none.
        assert!(with("").unwrap().cfgs[0].balloon.is_none());
    }

    #[test]
    fn a_bad_entry_is_named_by_its_path() {
        let e = VmRunConfig::from_json(r#"{"costs": {"exit_ns": -5}}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("costs.exit_ns: -5 is not a valid value"),
            "{e}"
        );
        let e = VmRunConfig::from_json(r#"{"costs": {"exit_nss": 5}}"#).unwrap_err();
        assert!(
            e.to_string().contains("costs.exit_nss: unknown field"),
            "{e}"
        );
        let e = VmRunConfig::from_json(r#"{"pagin": "tdp"}"#).unwrap_err();
        assert!(e.to_string().starts_with("pagin: unknown field"), "{e}");
        let e = VmRunConfig::from_json("[1]").unwrap_err();
        assert!(e.to_string().starts_with("vm: "), "{e}");
    }

    #[test]
    fn the_default_page_table_pages_and_frames_follow_the_documented_rules() {
        // stress-vm of 4 MiB on one vCPU: 1,024 pages and its program image's 6, 1,030.
        // Guest 200% = 2,060 frames and 2,060/256 + 64 = 72 page-table pages; host 150% of
        // 2,132 = 3,198 frames.
        let c = VmRunConfig {
            workload: vec!["stress-vm:vcpus=1,bytes=4MiB,rounds=1".into()],
            ..VmRunConfig::default()
        };
        let run = c.build().unwrap();
        assert_eq!(run.cfgs.len(), 1);
        assert_eq!(run.cfgs[0].guest.frames, 2_060);
        assert_eq!(run.cfgs[0].pt_pages, 72);
        assert_eq!(run.cfgs[0].host.frames, 3_198);
        // Two VMs: host 150% of 2 × 2,132 = 6,396.
        let two = VmRunConfig {
            vms: 2,
            ..c.clone()
        }
        .build()
        .unwrap();
        assert_eq!(two.cfgs.len(), 2);
        assert_eq!(two.cfgs[1].host.frames, 6_396);
        let three = VmRunConfig {
            vms: 3,
            workload: vec!["a".into(), "b".into()],
            ..c
        };
        let e = three.build().err().expect("3 VMs for 2 specs is refused");
        assert_eq!(e.to_string(), "vms: 3 VMs for 2 workloads");
    }

    #[test]
    fn qemu_text_pages_reach_every_vm_and_default_to_none() {
        let c = VmRunConfig::from_json(
            r#"{"workload": ["stress-vm:bytes=1MiB"], "vms": 2, "qemu_text_pages": 64}"#,
        )
        .unwrap();
        let run = c.build().unwrap();
        assert!(run.cfgs.iter().all(|c| c.qemu_text_pages == 64));
        assert_eq!(VmRunConfig::default().qemu_text_pages, 0);
        // Not with large host pages: QEMU's code is modelled in 4 KiB pages.
        let mut c = VmConfig::new(Paging::Tdp, 512, 2048);
        c.host_page = PageSize::M2;
        c.qemu_text_pages = 8;
        let e = crate::vm::host_for(&[&c])
            .err()
            .expect("2m host pages are refused");
        assert!(e.to_string().starts_with("vm.qemu_text_pages"), "{e}");
    }
}

//! Every spec and option parser (timed workloads, guest workloads, swap devices, paging,
//! shadow-page eviction, content classes, `--frames`, policy options), fed arbitrary or
//! spec-like text, returns Ok or Err and never panics; what parses round-trips through its
//! canonical text. (The cargo-fuzz targets `wlspec` and `vmspec` in `fuzz/` do the same for
//! longer.) Spec-like strings keep their sizes small so that each case builds in microseconds.
use proptest::prelude::*;
use vmemsim_core::device::{ContentClass, DeviceSpec};
use vmemsim_core::kvm::Eviction;
use vmemsim_core::policy::registry::PolicyVisitor;
use vmemsim_core::policy::{Policy, PolicyKind, PolicyOptions};
use vmemsim_core::replay::FramesSpec;
use vmemsim_core::vm::{workloads, Paging};
use vmemsim_core::workload;

/// A timed workload spec that parses names itself canonically, and the name parses to the
/// same workload; thread 0's first ops are drawn.
fn timed(s: &str) -> Result<(), TestCaseError> {
    if let Ok(mut w) = workload::parse(s, 7) {
        let name = w.name();
        let again = workload::parse(&name, 99).unwrap();
        prop_assert_eq!(again.name(), name);
        prop_assert_eq!(again.threads(), w.threads());
        prop_assert_eq!(again.footprint_pages(), w.footprint_pages());
        let mut buf = Vec::new();
        w.next_ops(0, &mut buf).unwrap();
        prop_assert!(!buf.is_empty(), "{}: thread 0 has no ops", s);
    }
    Ok(())
}

/// The same for guest workload specs.
fn guest(s: &str) -> Result<(), TestCaseError> {
    if let Ok(mut w) = workloads::parse(s, 7) {
        let name = w.name();
        let again = workloads::parse(&name, 99).unwrap();
        prop_assert_eq!(again.name(), name);
        prop_assert_eq!(again.threads(), w.threads());
        prop_assert_eq!(again.footprint_pages(), w.footprint_pages());
        let mut buf = Vec::new();
        let _ = w.next_ops(0, &mut buf);
    }
    Ok(())
}

/// Builds a policy and drops it.
struct Build;
impl PolicyVisitor for Build {
    type Out = ();
    fn visit<P: Policy>(self, _: P) {}
}

fn single_value_parsers(s: &str) -> Result<(), TestCaseError> {
    if let Ok(d) = DeviceSpec::parse(s) {
        prop_assert_eq!(DeviceSpec::parse(&d.to_string()).ok(), Some(d));
    }
    let _ = Paging::parse(s);
    let _ = Eviction::parse("k", s);
    let _ = ContentClass::parse("k", s);
    let _ = FramesSpec::parse(s);
    Ok(())
}

const TIMED: &str = concat!(
    "tpch-like:footprint=[1-4]MiB(,threads=[1-4])?(,queries=(1|3|6|12|14|18|q[0-9]{1,2})(/(6|18|x))?)?(,rounds=[1-3])?(,batch=[0-9]{1,3})?",
    "|tpch-like:sf=0\\.00[1-9](,footprint=1MiB)?",
    "|pagerank:scale=[1-9](,edge_factor=[0-9]{1,2})?(,iterations=[0-3])?(,threads=[0-4])?(,chunk=[0-9]{1,3})?",
    "|pagerank:footprint=[0-9]{1,3}KiB",
    "|ycsb-[abcd]:records=[0-9]{1,3}(,requests=[0-9]{1,3})?(,threads=[0-4])?(,readproportion=[0-1]\\.[0-9])?(,zipfian=[0-9]\\.[0-9]{1,2})?(,fieldcount=[0-9]{1,2})?(,fieldlength=[0-9]{1,4})?(,fieldlengthdistribution=(constant|uniform|x))?",
    "|ycsb-[abc]:footprint=[0-9]{1,3}KiB(,records=5)?",
    "|custom:\\((scan|uniform|loop|zipf):pages=[0-9]{1,3}(,n=[0-9]{1,4}|,n=1e1[0-9])?(,alpha=[0-9]{1,2}(\\.[0-9])?)?\\)(\\+\\((scan|hotcold):pages=[0-9]{1,3}\\))?(,threads=[0-4])?(,split=(shared|partition|x))?(,compute_ns=[0-9]{1,3})?(,class=(zero|text|numeric|random|sparse))?(,repeat=[0-3])?",
    "|trace:path=(README\\.md|none|)(,format=(text|csv|native|oracle|x))?(,threads=[0-3])?",
    "|(tpch-like|pagerank|ycsb-a|custom|trace)[:(),=+*a-z0-9._ /-]{0,60}",
);

const GUEST: &str = concat!(
    "stress-vm:bytes=[0-9]{1,3}KiB(,vcpus=[0-4])?(,rounds=[0-3])?(,method=(all|seq|rand|x))?(,read=[0-1])?",
    "|redis-like:keys=[0-9]{1,3}(,rps=[0-9]{1,6})?(,requests=[0-9]{1,3})?(,value_bytes=[0-9]{1,4})?(,arrivals=(poisson|uniform|x))?",
    "|kernbench-like:jobs=[0-9](,parallel=[0-4])?(,text_bytes=[0-9]{1,2}KiB)?(,heap_bytes=[0-9]{1,2}KiB)?",
    "|lmbench-like:bench=(lat_mem_rd|lat_pagefault|lat_ctx|x),size=[0-9]{1,3}KiB(,stride=[0-9]{1,4})?(,order=(random|x))?(,passes=[0-3])?(,procs=[0-5])?(,rounds=[0-9]{1,2})?",
    "|jvm-like:heap_bytes=[0-9]{1,4}KiB(,live_bytes=[0-9]{1,3}KiB)?(,alloc_bytes=[0-9]{1,3}KiB)?(,survive=-?[0-9](\\.[0-9])?)?(,perm_bytes=[0-9]{1,2}KiB)?(,hot=[0-9](\\.[0-9])?)?(,vcpus=[0-3])?",
    "|trace:path=(README\\.md|none)(,vcpus=[0-3])?",
    "|(stress-vm|redis-like|kernbench-like|lmbench-like|jvm-like)[:,=a-z0-9._ -]{0,60}",
);

const DEVICE: &str = concat!(
    "(ssd|nvme|remote|SSD)(:(read_latency_us|write_latency_us|latency_us|read_bw_mbps|write_bw_mbps|bw_mbps|qd|submit_us|x)=(-?[0-9]{1,6}(\\.[0-9]{1,3})?|inf|nan|1e30)){0,3}",
    "|zram(:(read_us|write_us|same_us|copy_us|text_ratio|numeric_ratio|disksize_mib)=(-?[0-9]{1,6}(\\.[0-9]{1,3})?|0\\.[0-9]|inf)){0,3}",
    "|(ssd|zram):[a-z_=,.0-9 ]{0,40}",
);

const POLICIES: &[&str] = &[
    "fifo",
    "lru",
    "opt",
    "clock",
    "arc",
    "s3fifo",
    "lfu",
    "lru-k",
    "w-tinylfu",
    "random",
    "sieve",
    "slru",
    "2q",
    "mq",
    "lirs",
    "clock-pro",
    "clock-lru",
    "mglru",
    "mglru-gen14",
];
const OPTION_KEYS: &[&str] = &[
    "ain_size_ratio",
    "aout_size_ratio",
    "enabled",
    "ghost_size_ratio",
    "hir_ratio",
    "init_cold_ratio",
    "k",
    "lifetime",
    "lookaround",
    "max_gens",
    "min_ttl_ms",
    "move_to_main_threshold",
    "n_bit_counter",
    "n_queue",
    "n_seg",
    "nonresident_ratio",
    "qout_size_ratio",
    "retained",
    "sample_factor",
    "scan",
    "scan_rand_p",
    "seg_size",
    "sketch_error",
    "small_size_ratio",
    "stack_ratio",
    "window_size",
    "nope",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_text(s in "\\PC{0,80}") {
        timed(&s)?;
        guest(&s)?;
        single_value_parsers(&s)?;
    }

    #[test]
    fn timed_spec_like(s in TIMED) {
        timed(&s)?;
    }

    #[test]
    fn guest_spec_like(s in GUEST) {
        guest(&s)?;
    }

    #[test]
    fn device_spec_like(s in DEVICE) {
        single_value_parsers(&s)?;
    }

    #[test]
    fn frames_paging_eviction_like(s in "(-?[0-9]{1,12}(\\.[0-9]{1,3})?%?|[0-9]e[0-9]{1,3}%|nan%|inf%|native|tdp|ept|npt|shadow|fifo|clock(-leaf|-parent)?|zero|text|numeric|random|sparse)") {
        single_value_parsers(&s)?;
    }

    #[test]
    fn policy_options(
        policy in proptest::sample::select(POLICIES),
        frames in 0u32..300,
        opts in proptest::collection::vec((proptest::sample::select(OPTION_KEYS), "(-?[0-9]{1,6}(\\.[0-9]{1,3})?|0x[0-9a-f]{1,3}|true|false|bloom|all|none|rand|nan|inf|)"), 0..4),
    ) {
        let kind = PolicyKind::from_name(policy);
        prop_assume!(kind.is_ok());
        let mut o = PolicyOptions::new(1);
        for (k, v) in &opts {
            o.set(k, v);
        }
        let _ = kind.unwrap().build(frames, &o, Build);
    }
}

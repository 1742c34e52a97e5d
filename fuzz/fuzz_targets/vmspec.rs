//! VM-side specs on arbitrary text: guest workload specs (`stress-vm`, `redis-like`,
//! `kernbench-like`, `lmbench-like`, `jvm-like`, `trace`), swap device specs, paging modes, shadow-page
//! eviction, content classes, `--frames`, watermarks, and policy options.
//!
//! The whole text goes to every single-value parser. Guest workload specs that parse must
//! name themselves canonically (the name parses to the same name, vCPUs and footprint), and
//! device specs must print a spec that parses back to an equal one. For policies, the first
//! line is `POLICY FRAMES` and every further line a `key=value` option; building the policy
//! reads and validates its options.
#![no_main]
use libfuzzer_sys::fuzz_target;
use vmemsim_core::device::{ContentClass, DeviceSpec};
use vmemsim_core::kvm::Eviction;
use vmemsim_core::policy::registry::PolicyVisitor;
use vmemsim_core::policy::{Policy, PolicyKind, PolicyOptions};
use vmemsim_core::replay::FramesSpec;
use vmemsim_core::vm::{workloads, Paging};
use vmemsim_core::watermarks::Watermarks;

#[path = "common/bounds.rs"]
mod bounds;

/// Builds a policy and drops it.
struct Build;
impl PolicyVisitor for Build {
    type Out = ();
    fn visit<P: Policy>(self, _: P) {}
}

fn guest_workload(s: &str) {
    if !bounds::cheap(s) {
        return;
    }
    let Ok(mut w) = workloads::parse(s, 7) else {
        return;
    };
    let name = w.name();
    let again = workloads::parse(&name, 99).expect("a guest workload's canonical name parses");
    assert_eq!(again.name(), name);
    assert_eq!(again.vcpus(), w.vcpus());
    assert_eq!(again.footprint_pages(), w.footprint_pages());
    let mut buf = Vec::new();
    let _ = w.next_ops(0, &mut buf);
}

fn policy(s: &str) {
    let mut lines = s.lines();
    let mut head = lines.next().unwrap_or("").split_whitespace();
    let (Some(name), Some(frames)) = (head.next(), head.next()) else {
        return;
    };
    let Ok(kind) = PolicyKind::from_name(name) else {
        return;
    };
    // A small machine: the options are what is fuzzed, not the policy's table sizes.
    let Some(frames) = frames.parse::<u32>().ok().filter(|f| *f <= 1 << 12) else {
        return;
    };
    let mut opts = PolicyOptions::new(1);
    for line in lines {
        let (k, v) = line.split_once('=').unwrap_or((line, ""));
        opts.set(k.trim(), v.trim());
    }
    let _ = kind.build(frames, &opts, Build);
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    guest_workload(s);
    if let Ok(d) = DeviceSpec::parse(s) {
        let text = d.to_string();
        assert_eq!(DeviceSpec::parse(&text).ok(), Some(d), "{text}");
    }
    let _ = Paging::parse(s);
    let _ = Eviction::parse("fuzz", s);
    let _ = ContentClass::parse("fuzz", s);
    let _ = FramesSpec::parse(s);
    let n: Vec<u32> = s
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect();
    if let [min, low, high, frames, ..] = n[..] {
        let w = Watermarks { min, low, high };
        if w.validate(frames).is_ok() {
            assert!(min <= low && low <= high && high < frames);
        }
    }
    policy(s);
});

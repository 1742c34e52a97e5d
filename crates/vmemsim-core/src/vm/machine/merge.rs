//! Several VMs' results summed into one (typed: counters add, peaks take the max).

use super::*;

/// The sums of several VMs' results (see [`RunResult::per_vm`]): counters and time categories
/// add up (the longest KVM hash chain and device queue delay are maxima), the walk grid adds
/// cell by cell, `runtime_ns` and `device_frames_peak` are the largest VM's, `vcpu_ns` and
/// `threads` list every vCPU; strings and
/// enums are the first VM's, except the workload names, joined with " + ". The caller sets
/// the shared host's counters, frames and the merged latency.
pub(super) fn merge_results(rs: &[RunResult]) -> RunResult {
    let first = &rs[0];
    let mut m = RunResult {
        paging: first.paging,
        workload: rs
            .iter()
            .map(|r| r.workload.as_str())
            .collect::<Vec<_>>()
            .join(" + "),
        policy: first.policy.clone(),
        host_policy: first.host_policy.clone(),
        guest_page: first.guest_page,
        host_page: first.host_page,
        version: first.version.clone(),
        seed: first.seed,
        options: first.options.clone(),
        cpus: first.cpus,
        device: first.device.clone(),
        tlb: first.tlb,
        ..RunResult::default()
    };
    fn add_opt<T: Clone + Default>(a: &mut Option<T>, b: &Option<T>, add: fn(&mut T, &T)) {
        if let Some(b) = b {
            add(a.get_or_insert_with(T::default), b);
        }
    }
    let mut folded = String::new();
    for (i, r) in rs.iter().enumerate() {
        crate::util::add_fields!(m, r;
            frames, host_frames, footprint_pages, ept_violations, ept_violations_pt, exits, exits_pf,
            exits_pt_write, exits_cr3, exits_invlpg, cr3_loads, cr3_flushes, shootdown_pages,
            deferred_flushes, reclaim_flushes, nested_flushes, host_kswapd_ns, guest_kswapd_ns,
            mmu_shrink_scans, mmu_shrink_zapped, processes_created, processes_exited,
            pages_unmapped, pt_pages_peak, double_cached_pages, host_image_pages;
            max: runtime_ns);
        crate::util::add_fields!(m.time, r.time;
            translation_ns, guest_fault_ns, host_fault_ns, exit_ns, kvm_ns, tlb_flush_ns,
            reclaim_ns, compute_ns, idle_ns, steal_ns, file_cpu_ns, file_wait_ns, balloon_ns);
        m.stats.add(&r.stats);
        m.host_stats.add(&r.host_stats);
        m.swap_pathologies.add(&r.swap_pathologies);
        m.translate.add(&r.translate);
        add_opt(
            &mut m.device_stats,
            &r.device_stats,
            crate::device::DeviceStats::add,
        );
        add_opt(
            &mut m.file_device_stats,
            &r.file_device_stats,
            crate::device::DeviceStats::add,
        );
        add_opt(
            &mut m.host_file_device_stats,
            &r.host_file_device_stats,
            crate::device::DeviceStats::add,
        );
        add_opt(
            &mut m.host_device_stats,
            &r.host_device_stats,
            crate::device::DeviceStats::add,
        );
        add_opt(&mut m.kvm, &r.kvm, crate::kvm::KvmStats::add);
        for (row, rrow) in m.walk_grid.cells.iter_mut().zip(r.walk_grid.cells.iter()) {
            for (c, rc) in row.iter_mut().zip(rrow.iter()) {
                c.lookups += rc.lookups;
                c.pwc_hits += rc.pwc_hits;
            }
        }
        for (s, rs) in m
            .walk_grid
            .ntlb_skips
            .iter_mut()
            .zip(r.walk_grid.ntlb_skips)
        {
            *s += rs;
        }
        m.vcpu_ns.extend_from_slice(&r.vcpu_ns);
        crate::util::add_fields!(m.cpu, r.cpu;
            app_ns, direct_reclaim_ns, io_wait_ns, runqueue_wait_ns, barrier_wait_ns,
            kswapd_ns, aging_ns, rmap_scan_ns, device_ns, context_switches, kswapd_runs);
        m.threads.extend_from_slice(&r.threads);
        m.device_frames_peak = m.device_frames_peak.max(r.device_frames_peak);
        for (k, v) in &r.policy_counters {
            *m.policy_counters.entry(k.clone()).or_default() += v;
        }
        for line in r.kvm_folded.lines() {
            folded.push_str(&format!("vm{i};{line}\n"));
        }
    }
    m.walk_breakdown = m.walk_grid.classify(WALK_HIT_AT_LEAST, WALK_MISS_AT_MOST);
    m.vmstat = crate::timed::vmstat(&m.stats);
    m.host_vmstat = crate::timed::vmstat(&m.host_stats);
    m.kvm_folded = folded;
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;
    use serde_json::Value;

    fn set_numbers(v: &mut Value, n: u64) {
        match v {
            Value::Number(_) => *v = Value::from(n),
            Value::Object(m) => m.values_mut().for_each(|x| set_numbers(x, n)),
            Value::Array(a) => a.iter_mut().for_each(|x| set_numbers(x, n)),
            _ => {}
        }
    }

    /// `x` with every number in it (nested structs and arrays included) set to `n`.
    fn filled<T: Serialize + DeserializeOwned>(x: &T, n: u64) -> T {
        let mut v = serde_json::to_value(x).unwrap();
        set_numbers(&mut v, n);
        serde_json::from_value(v).unwrap()
    }

    /// Every number of `v` with its path.
    fn numbers(v: &Value, path: &str, out: &mut Vec<(String, u64)>) {
        match v {
            Value::Number(x) => out.push((path.to_string(), x.as_u64().unwrap())),
            Value::Object(m) => m
                .iter()
                .for_each(|(k, x)| numbers(x, &format!("{path}.{k}"), out)),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| numbers(x, &format!("{path}[{i}]"), out)),
            _ => {}
        }
    }

    /// Every counter of a sum of two results is 1 + 2 = 3 but the maxima (2), whatever
    /// fields the structs grow: a field the typed sums forget shows here.
    fn check_sum<T: Serialize>(sum: &T, maxima: &[&str], skip: &[&str]) {
        let mut got = Vec::new();
        numbers(&serde_json::to_value(sum).unwrap(), "", &mut got);
        assert!(got.len() > 10);
        for (path, n) in got {
            if skip.iter().any(|s| path.starts_with(s)) {
                continue;
            }
            let want = if maxima.contains(&path.as_str()) {
                2
            } else {
                3
            };
            assert_eq!(n, want, "{path}");
        }
    }

    #[test]
    fn counters_structs_add_every_field() {
        let mut s = filled(&Stats::default(), 1);
        s.add(&filled(&Stats::default(), 2));
        check_sum(&s, &[], &[]);
        let mut k = filled(&crate::kvm::KvmStats::default(), 1);
        k.add(&filled(&crate::kvm::KvmStats::default(), 2));
        check_sum(&k, &[".max_mmu_page_hash_collisions"], &[]);
        let mut d = filled(&crate::device::DeviceStats::default(), 1);
        d.add(&filled(&crate::device::DeviceStats::default(), 2));
        check_sum(&d, &[".queue_delay_max_ns"], &[]);
    }

    #[test]
    fn merged_results_sum_every_counter_of_the_vms() {
        let shape = RunResult {
            device_stats: Some(Default::default()),
            host_device_stats: Some(Default::default()),
            file_device_stats: Some(Default::default()),
            host_file_device_stats: Some(Default::default()),
            kvm: Some(Default::default()),
            vcpu_ns: vec![0],
            threads: vec![Default::default()],
            policy_counters: [("c".to_string(), 0)].into(),
            kvm_folded: "a;b 5".into(),
            workload: "w".into(),
            ..RunResult::default()
        };
        let (a, b) = (filled(&shape, 1), filled(&shape, 2));
        let m = merge_results(&[a, b]);
        check_sum(
            &m,
            &[
                ".runtime_ns",
                ".device_frames_peak",
                ".kvm.max_mmu_page_hash_collisions",
                ".device_stats.queue_delay_max_ns",
                ".host_device_stats.queue_delay_max_ns",
                ".file_device_stats.queue_delay_max_ns",
                ".host_file_device_stats.queue_delay_max_ns",
            ],
            // Recomputed from the grid, and the per-vCPU clocks listed, not summed.
            // The engine's slice is set by the caller, as the latency by kind (from the
            // histograms) and the series (of the first VM); the run's settings (seed, CPUs)
            // are the first VM's.
            &[
                ".walk_breakdown",
                ".vcpu_ns",
                ".threads",
                ".slice_ns",
                ".latency",
                ".series",
                ".seed",
                ".cpus",
            ],
        );
        assert_eq!(m.vcpu_ns, [1, 2]);
        assert_eq!(m.threads.len(), 2);
        assert_eq!(m.workload, "w + w");
        assert_eq!(m.kvm_folded, "vm0;a;b 5\nvm1;a;b 5\n");
    }
}

//! What a VM reports: [`Vm::result`] (the managers', MMUs' and KVM's counters, the walk grid,
//! latency per request kind), the out-of-memory error that stands for Linux's OOM kill, the
//! small accessors, and the invariant checks ([`Vm::check_mirror`], [`Vm::validate`]).

use super::*;

type ByKind = BTreeMap<String, crate::timed::hist::Summary>;
type ByKindBuckets = BTreeMap<String, Vec<(u64, u64)>>;

/// Latency summaries and histograms per request kind, with `all` when any.
pub(super) fn by_kind(
    hists: &BTreeMap<u8, crate::timed::hist::Histogram>,
) -> (ByKind, ByKindBuckets) {
    let mut latency = BTreeMap::new();
    let mut buckets = BTreeMap::new();
    let mut all = crate::timed::hist::Histogram::new();
    for (k, h) in hists {
        let name = match *k {
            crate::workload::REQ_READ => "read".to_string(),
            crate::workload::REQ_UPDATE => "update".to_string(),
            crate::workload::REQ_INSERT => "insert".to_string(),
            other => format!("kind{other}"),
        };
        latency.insert(name.clone(), h.summary());
        buckets.insert(name, h.buckets());
        all.merge(h);
    }
    if all.count() > 0 {
        latency.insert("all".into(), all.summary());
        buckets.insert("all".into(), all.buckets());
    }
    (latency, buckets)
}

impl Vm {
    /// The counters so far.
    pub fn result(&self) -> RunResult {
        let mut r = self.r.clone();
        r.stats = self.guest.stats.clone();
        r.vmstat = crate::timed::vmstat(&r.stats);
        if let Some(h) = &self.host {
            r.host_stats = h.shared.borrow().m.stats.clone();
            r.host_vmstat = crate::timed::vmstat(&r.host_stats);
        }
        let mut t = TranslateStats::default();
        for v in &self.vcpus {
            if let Some(m) = &v.mmu {
                t.add(m.stats());
            }
        }
        r.translate = t;
        let mut g = crate::translate::WalkGrid::default();
        for vg in self
            .vcpus
            .iter()
            .filter_map(|v| v.mmu.as_ref())
            .map(|m| m.grid())
        {
            for (row, vrow) in g.cells.iter_mut().zip(vg.cells.iter()) {
                for (c, vc) in row.iter_mut().zip(vrow.iter()) {
                    c.lookups += vc.lookups;
                    c.pwc_hits += vc.pwc_hits;
                }
            }
            for (s, vs) in g.ntlb_skips.iter_mut().zip(vg.ntlb_skips.iter()) {
                *s += vs;
            }
        }
        r.walk_breakdown = g.classify(WALK_HIT_AT_LEAST, WALK_MISS_AT_MOST);
        r.walk_grid = g;
        r.kvm = self.kvm.as_ref().map(|k| k.stats().clone());
        r.device_stats = self.guest_dev.as_ref().map(|d| d.borrow().stats());
        r.host_device_stats = self
            .host
            .as_ref()
            .and_then(|h| h.shared.borrow().dev.as_ref().map(|d| d.borrow().stats()));
        r.file_device_stats = self.guest.file_device_stats();
        if self.has_files {
            r.host_file_device_stats = self
                .host
                .as_ref()
                .and_then(|h| h.shared.borrow().m.file_device_stats());
            (r.double_cached_pages, r.host_image_pages) = self.double_cached();
            r.cacol = self.cacol_counters();
        }
        r.vcpu_ns = self.vcpus.iter().map(|c| c.clock).collect();
        r.runtime_ns = r.vcpu_ns.iter().copied().max().unwrap_or(0);
        (r.latency, r.latency_buckets) = by_kind(&self.hists_by_kind());
        let c = &mut r.cpu;
        c.direct_reclaim_ns = self.cpu.direct_reclaim_ns;
        c.aging_ns = self.cpu.aging_ns;
        c.rmap_scan_ns = self.cpu.rmap_scan_ns;
        c.device_ns = self.cpu.device_ns;
        c.app_ns = self.cpu.app_ns;
        c.io_wait_ns = self.cpu.io_wait_ns;
        c.runqueue_wait_ns = self.cpu.runqueue_wait_ns;
        c.barrier_wait_ns = self.cpu.barrier_wait_ns;
        r.device_frames_peak = self.device_frames_peak;
        r.balloon = self.balloon_result();
        r.swap_pathologies = self.swap_pathologies();
        r.policy_counters = self
            .guest
            .policy
            .counters()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        if let Some(k) = &self.kvm {
            r.kvm_folded = k.profile().folded(&self.costs.kvm_work_ns);
        }
        r
    }

    /// The error Linux's OOM kill stands for: the guest's (native: the machine's) manager
    /// ran out of memory at its access `t`.
    pub(super) fn out_of_memory(&self, t: u64) -> Error {
        let m = &self.guest;
        let failed = m.stats.swap_write_errors;
        if self.paging != Paging::Native {
            return Error::config(
                "vm.guest_frames",
                format!("guest out of memory at its access {t}: give the guest more frames"),
            );
        }
        let msg = if failed > 0 {
            format!(
                "out of memory at access {t}: zram's compressed pool ({} of {} frames) left no memory for the swap-outs that would free more ({failed} failed writes, zram's failed_writes; Linux would OOM-kill here); give more frames, or keep the pool out of the capacity (a memory cgroup limit: machine.cgroup = true, `vmemsim run --cgroup`, vmemsim.run(cgroup=True))",
                m.mm.frames.reserved(),
                m.mm.frames.len()
            )
        } else {
            format!(
                "out of memory at access {t}: {} could reclaim nothing with {} frames (Linux would OOM-kill here); give more frames",
                m.policy.name(),
                m.mm.frames.len()
            )
        };
        Error::config("frames", msg)
    }

    /// Request latencies so far.
    pub fn latency_histogram(&self) -> crate::timed::hist::Histogram {
        let mut all = crate::timed::hist::Histogram::new();
        for h in &self.hists {
            all.merge(h);
        }
        all
    }

    /// Request latencies of each kind that has completed requests.
    pub(super) fn hists_by_kind(&self) -> BTreeMap<u8, crate::timed::hist::Histogram> {
        self.hists
            .iter()
            .enumerate()
            .filter(|(_, h)| h.count() > 0)
            .map(|(k, h)| (k as u8, h.clone()))
            .collect()
    }

    /// The guest policy's page-table scanning so far (MG-LRU aging; zero for others).
    pub fn guest_scan_work(&self) -> crate::policy::ScanWork {
        self.guest.policy.scan_work()
    }

    /// Guest frames holding pages now (mapped or in the guest's swap cache).
    pub fn guest_resident(&self) -> u32 {
        self.guest.mm.frames.len() - self.guest.mm.frames.n_unused() - self.guest.mm.frames.n_held()
    }

    /// Guest page-table pages in use.
    pub fn pt_pages_in_use(&self) -> u64 {
        self.pt_total - self.pt_free.len() as u64
    }

    /// The shadow MMU (shadow paging), for its counters, profile and pool.
    pub fn kvm(&self) -> Option<&ShadowMmu> {
        self.kvm.as_ref()
    }

    /// Every process table maps exactly what the guest manager has mapped (for tests: it
    /// visits every page each process has touched), and the EPT what the host has.
    pub fn check_mirror(&self) -> std::result::Result<(), String> {
        for (pid, t) in self.procs.iter().enumerate() {
            let Some(t) = t else { continue };
            for &vpn in &self.touched[pid] {
                let Some(key) = self.key_if_any(pid as u32, vpn) else {
                    continue;
                };
                let pte = self.guest.mm.pt.pte(key);
                let want = (pte & PTE_PRESENT != 0)
                    .then(|| (crate::mm::pte_frame(pte) as u64) << (12 + self.gshift));
                let got = t.lookup(vpn << 12).map(|(pa, _, _)| pa);
                if want != got {
                    return Err(format!(
                        "process {pid} page {vpn}: the guest maps {want:?}, its table {got:?}"
                    ));
                }
            }
        }
        if let Some(HostSide {
            shared,
            base,
            ept: Some(ept),
            shift,
            ..
        }) = &self.host
        {
            let sh = shared.borrow();
            for gfn in 0..self.guest_frames as u64 + self.pt_total {
                let Some((pa, _, _)) = ept.lookup(gfn << 12) else {
                    continue;
                };
                let pte = sh.m.mm.pt.pte(base + (gfn >> shift));
                let want = (((crate::mm::pte_frame(pte) as u64) << shift)
                    | (gfn & ((1 << shift) - 1)))
                    << 12;
                if pte & PTE_PRESENT == 0 || want != pa {
                    return Err(format!("EPT maps gfn {gfn} to {pa:#x}, the host does not"));
                }
            }
        }
        // Shadow paging: every leaf SPTE (its gfn's rmap) maps a gfn the host backs (the MMU
        // notifier zapped the others).
        if let (Some(k), Some(h)) = (&self.kvm, &self.host) {
            for gfn in 0..self.guest_frames as u64 + self.pt_total {
                if k.rmap_len(gfn) > 0 && !h.present(gfn) {
                    return Err(format!(
                        "a shadow leaf maps gfn {gfn}, which the host does not back"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Every invariant of both memory managers and of the shadow MMU.
    pub fn validate(&self) -> std::result::Result<(), String> {
        self.guest.validate()?;
        if let Some(h) = &self.host {
            h.shared.borrow().m.validate()?;
        }
        if let Some(k) = &self.kvm {
            k.validate()?;
        }
        self.balloon_validate()?;
        self.image_validate()?;
        Ok(())
    }
}

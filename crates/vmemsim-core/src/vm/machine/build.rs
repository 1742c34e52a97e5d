//! Building a VM ([`Vm::new`], [`Vm::on_host`]): the guest's memory manager in its page size
//! (frames and zone watermarks counted in large pages, as THP or hugetlbfs back guest
//! memory), the pool of guest page-table pages and process 0's table, each vCPU's MMU
//! (entered with the VM's VPID and process 0's PCID), and the VM's side of the host: its EPT
//! under TDP, or KVM's shadow MMU and the vCPUs' first CR3 load into it.

use super::*;

/// Frames of a memory manager of `2^shift`-page pages: `frames` must be a whole number of
/// them.
pub(super) fn units(key: &str, frames: u32, shift: u32, what: &str) -> Result<u32> {
    if frames == 0 || !frames.is_multiple_of(1 << shift) {
        return Err(Error::config(
            key,
            format!(
                "{what} of {frames} 4 KiB frames is not a whole number of {:?} pages \
                 ({} frames each)",
                PageSize::ALL[(shift / 9) as usize],
                1u64 << shift
            ),
        ));
    }
    Ok(frames >> shift)
}

/// Zone watermarks are 4 KiB page counts: a manager of large pages reclaims when its free
/// large pages hold fewer 4 KiB pages than the watermark. hugetlbfs pages (1 GiB) are a pool
/// outside the zones' watermarks.
pub(super) fn unit_marks(c: &MachineConfig, shift: u32) -> Option<crate::watermarks::Watermarks> {
    if shift == 0 {
        return c.watermarks;
    }
    let w = c
        .watermarks
        .unwrap_or_else(|| crate::watermarks::Watermarks::derive(c.frames));
    let units = c.frames >> shift;
    let conv = |x: u32| {
        if shift >= 18 {
            0
        } else {
            x.div_ceil(1 << shift).min(units.saturating_sub(1) / 2)
        }
    };
    Some(crate::watermarks::Watermarks {
        min: conv(w.min),
        low: conv(w.low),
        high: conv(w.high),
    })
}

/// Guest page-table pages of a VM (kernel memory beyond its frames).
pub(super) fn pt_pages_of(cfg: &VmConfig) -> u64 {
    if cfg.pt_pages == 0 {
        cfg.guest.frames as u64 / 256 + 64
    } else {
        cfg.pt_pages as u64
    }
}

impl Vm {
    pub fn new(cfg: &VmConfig, vcpus: usize) -> Result<Vm> {
        let host = match cfg.paging {
            Paging::Native => None,
            _ => Some((host_for(&[cfg])?, 0)),
        };
        Vm::on_host(cfg, vcpus, host)
    }

    /// A VM on a host shared with other VMs (`host`: the host and this VM's index in it, as
    /// [`host_for`] built it); `None` for native paging.
    pub fn on_host(
        cfg: &VmConfig,
        vcpus: usize,
        host: Option<(std::rc::Rc<std::cell::RefCell<HostShared>>, usize)>,
    ) -> Result<Vm> {
        if vcpus == 0 {
            return Err(Error::config("vm.vcpus", "must be at least 1"));
        }
        cfg.costs.check()?;
        if !cfg.tlb && cfg.paging != Paging::Native {
            return Err(Error::config(
                "vm.tlb",
                "only native paging can leave address translation out",
            ));
        }
        if (cfg.paging == Paging::Native) != host.is_none() {
            return Err(Error::config(
                "vm.paging",
                "a native run has no host; a VM needs one",
            ));
        }
        let gshift = cfg.guest_page.shift() - 12;
        let hshift = cfg.host_page.shift() - 12;
        let mut guest_cfg = cfg.guest.clone();
        guest_cfg.frames = units("vm.guest_frames", cfg.guest.frames, gshift, "guest memory")?;
        guest_cfg.watermarks = unit_marks(&cfg.guest, gshift);
        guest_cfg.swap_sync_io |= cfg.guest_swap.as_ref().is_some_and(|d| d.kind() == "zram");
        // Swap on a rotating disk is rotational swap (`DeviceSpec::rotational_slots`).
        // The plug merges reclaim's swap writes up to the device's largest request.
        if let Some(d) = cfg.guest_swap.as_ref() {
            guest_cfg
                .swap_max_pages
                .get_or_insert(d.max_request_pages());
        }
        if let Some(n) = cfg.guest_swap.as_ref().and_then(|d| d.rotational_slots()) {
            guest_cfg
                .swap_rotational
                .get_or_insert((n >> gshift).max(1));
        }
        let guest_policy = cfg
            .guest_policy
            .build(guest_cfg.frames, &cfg.guest_options, Boxer)?;
        let mut guest = Machine::new(&guest_cfg, guest_policy)?;
        guest.set_swap_off(cfg.guest_swapoff);
        let balloon = match &cfg.balloon {
            None => None,
            Some(b) => {
                if cfg.paging == Paging::Native {
                    return Err(Error::config(
                        "balloon",
                        "a balloon is a device of a VM: native paging has no host",
                    ));
                }
                if gshift != 0 || hshift != 0 {
                    return Err(Error::config(
                        "balloon",
                        "only with 4 KiB pages on both sides (guest_page and host_page 4k): \
                         the driver balloons 4 KiB pages",
                    ));
                }
                Some(BalloonDev::new(b, cfg.guest.frames, &mut guest)?)
            }
        };
        // Without translation no hardware table maps a page: reclaim's unmaps need no sync.
        guest.unmap_log = cfg.tlb.then(Vec::new);
        guest.mm.swap.device.log_on = cfg.guest_swap.is_some();
        let guest_frames = cfg.guest.frames;
        let pt_pages = pt_pages_of(cfg);
        let pt_base = guest_frames as u64;
        let mut pt_free: Vec<u64> = (pt_base..pt_base + pt_pages).rev().collect();
        let mut pt_owner = vec![FREE_PT; pt_pages as usize];
        let host = match host {
            None => None,
            Some((shared, vm)) => {
                let base = *shared.borrow().bases.get(vm).ok_or_else(|| {
                    Error::config("vm", format!("VM {vm} is not one of its host's"))
                })?;
                // EPT tables live beyond host RAM, each VM's in a range of its own.
                let root = cfg.host.frames as u64 + ((vm as u64) << 24);
                let ept = if cfg.paging == Paging::Tdp {
                    Some(RadixTable::new(cfg.host_levels, root)?)
                } else {
                    None
                };
                Some(HostSide {
                    shared,
                    vm,
                    base,
                    ept,
                    ept_next_frame: root + 1,
                    shift: hshift,
                })
            }
        };
        let host_dev = host
            .as_ref()
            .is_some_and(|h| h.shared.borrow().dev.is_some());
        if cfg.shared_disk && host.is_none() {
            return Err(Error::config(
                "vm.shared_disk",
                "needs a host (tdp or shadow paging): native paging has one swap device",
            ));
        }
        let guest_disk = host.as_ref().and_then(|h| h.shared.borrow().disk.clone());
        let guest_dev = match (&cfg.guest_swap, &guest_disk) {
            (Some(_), Some(disk)) => Some(SwapDev::on_disk(disk, gshift)),
            (Some(spec), None) => Some(SwapDev::new(spec, gshift)?),
            (None, _) => None,
        }
        .map(|d| std::rc::Rc::new(std::cell::RefCell::new(d)));
        if let Some(d) = guest_dev.as_ref().filter(|d| d.borrow().asynchronous()) {
            // Swap writes hold their pages until the device completes them.
            guest.set_write_sink(
                Box::new(super::cost::DevSink(d.clone())),
                cfg.costs.scan_page_ns,
                cfg.costs.reclaim_page_ns,
            );
        }
        let shares_host = host
            .as_ref()
            .is_some_and(|h| h.shared.borrow().bases.len() > 1);
        let kvm = if cfg.paging == Paging::Shadow {
            Some(ShadowMmu::new(ShadowMmuConfig {
                guest_pages: pt_base + pt_pages,
                n_max_mmu_pages: cfg.mmu_pages,
                levels: cfg.guest_levels,
                vcpus,
                eviction: cfg.eviction,
                pcide: cfg.translate.pcid,
                prefetch: true,
            })?)
        } else {
            None
        };
        let root = pt_free
            .pop()
            .ok_or_else(|| Error::config("vm.pt_pages", "no page for process 0's table"))?;
        pt_owner[(root - pt_base) as usize] = 0;
        let mut t0 = RadixTable::new(cfg.guest_levels, root)?;
        if kvm.is_some() {
            t0.log = Some(Vec::new());
        }
        let mut v = Vec::with_capacity(vcpus);
        for _ in 0..vcpus {
            // Natively without the TLB model no CPU translates: no TLB to fill or flush.
            let mmu = if cfg.tlb || cfg.paging != Paging::Native {
                let mut mmu = Mmu::new(&cfg.translate)?;
                if cfg.paging == Paging::Native {
                    mmu.load_cr3(pcid(0), true);
                } else {
                    mmu.vm_entry(VPID, pcid(0))?;
                }
                Some(mmu)
            } else {
                None
            };
            v.push(Vcpu {
                mmu,
                pid: 0,
                clock: 0,
                epoch: 0,
                arrival: None,
                req_start: None,
                seen_gen: vec![0],
                io_wait: 0,
                req_kind: 0,
                accesses: 0,
                writes: 0,
                major_faults: 0,
            });
        }
        let r = RunResult {
            paging: Some(cfg.paging),
            policy: cfg.guest_policy.name().to_string(),
            host_policy: match cfg.paging {
                Paging::Native => String::new(),
                _ => cfg.host_policy.name().to_string(),
            },
            frames: guest_frames,
            host_frames: if cfg.paging == Paging::Native {
                0
            } else {
                cfg.host.frames
            },
            guest_page: Some(cfg.guest_page),
            host_page: (cfg.paging != Paging::Native).then_some(cfg.host_page),
            processes_created: 1,
            ..RunResult::default()
        };
        let mut vm = Vm {
            paging: cfg.paging,
            guest,
            host,
            kvm,
            procs: vec![Some(t0)],
            touched: vec![Vec::new()],
            tlb_gen: vec![0],
            pt_free,
            pt_base,
            pt_total: pt_pages,
            pt_owner,
            vcpus: v,
            r,
            guest_frames,
            gshift,
            levels: cfg.guest_levels,
            host_unmaps: Vec::new(),
            unmapped: Vec::new(),
            log_buf: Vec::new(),
            regions: std::collections::HashMap::new(),
            region_back: Vec::new(),
            region_cache: vec![(u64::MAX, 0); vcpus],
            costs: cfg.costs.clone(),
            shrink_plan: Vec::new(),
            op_c0: 0,
            snap: None,
            shares_host,
            host_dev,
            guest_dev,
            tcycles: 0,
            kvm_charged: 0.0,
            hists: Vec::new(),
            cpu: crate::timed::CpuTimes::default(),
            tlb: cfg.tlb,
            last_work: Work::default(),
            last_valid: false,
            pool_charged: cfg.charge_device_ram
                && cfg.guest_swap.as_ref().is_some_and(|d| d.kind() == "zram"),
            kswapd_hold: 0,
            pool_seen: 0,
            device_frames_peak: 0,
            has_files: false,
            virtio: None,
            file_layout: None,
            image_blocks: None,
            balloon,
            mom: cfg.mom.clone(),
        };
        for c in 0..vcpus {
            vm.kvm_cr3(c, 0, true, false)?;
        }
        Ok(vm)
    }
}

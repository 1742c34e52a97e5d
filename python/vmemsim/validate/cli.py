"""``vmemsim validate``: the real Linux kernel and vmemsim on the same accesses."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Dict, List, Optional

from .._native import VmemsimError
from ..cli import _int, _seed, register
from .compare import Timing, format_case, validate
from .workload import MODES

DESCRIPTION = (
    "Boot a real Linux kernel (Debian's linux-image-amd64, fetched with apt-get download into "
    "the cache) under qemu-system-x86_64 with one vCPU and --mem of RAM, swap on a virtio disk "
    "or zram, MG-LRU on or off; run the workload there REPEATS times and record the "
    "/proc/vmstat deltas of its phase; replay the same accesses through vmemsim with the memory "
    "the kernel had free, its watermarks, page-cluster and swappiness; print each counter: "
    "kernel mean ± half-range over the repeats, vmemsim, error. SPEC is gen:GENERATOR (drawn "
    "by the guest program itself) or a trace file. Kernel runs are cached by kernel version, "
    "workload and settings, so a second call re-runs only the simulator. Without a working "
    "/dev/kvm QEMU emulates the CPU (TCG): a boot with 0.5-2 M generated accesses and tens of "
    "thousands of major faults took 10-35 s on a 2-core machine, a 34 M-access recorded trace "
    "about 15 s. "
    "Needs qemu-system-x86, busybox-static, gcc and libc6-dev (`make deps-kernel`)."
)


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC",
                   help="gen:GENERATOR spec, a trace file, or a file workload on a raw virtio "
                   "block device: fileread:bytes=SIZE[,bs=,passes=,disk=], "
                   "filerand:bytes=SIZE[,bs=,n=,seed=,disk=], "
                   "filewrite:bytes=SIZE[,bs=,passes=,fsync=,disk=], "
                   "filewrand:bytes=SIZE[,bs=,n=,seed=,fsync=,disk=], "
                   "mmapread:bytes=SIZE[,passes=,disk=], "
                   "mmaprand:bytes=SIZE[,n=,seed=,disk=] (docs/validate.md)")
    p.add_argument("--mem", default="160M", metavar="SIZE", help="guest RAM (default 160M)")
    p.add_argument("--swap", default="disk", choices=("disk", "ssd", "zram", "none"),
                   help="swap on a virtio disk image (rotational in the guest: cluster "
                   "readahead), on the same disk declared non-rotational before swapon (ssd: "
                   "SSD slot clusters, VMA readahead), on zram (lzo-rle), or none (for file "
                   "workloads: only the page cache is reclaimed) (default disk)")
    p.add_argument("--lru", default="both", choices=("classic", "mglru", "both"),
                   help="classic LRU (lru_gen off), MG-LRU, or both (default both)")
    p.add_argument("--page-cluster", type=_int, default=3, metavar="N",
                   help="vm.page-cluster in the kernel and the simulator (default 3)")
    p.add_argument("--swappiness", type=_int, default=60, metavar="N",
                   help="vm.swappiness (default 60)")
    p.add_argument("--repeats", type=_int, default=2, metavar="K",
                   help="kernel runs per setting (default 2)")
    p.add_argument("--mode", default="rw", choices=MODES,
                   help="rw: each access reads and writes its page; r: a write pass over the "
                   "footprint, then reads (writes where the access is a write) (default rw)")
    p.add_argument("--seed", type=_seed, default=0, metavar="S",
                   help="generator seed where the spec has none (default 0)")
    p.add_argument("--cache", default=None, metavar="DIR",
                   help="kernel packages and results (default ~/.cache/vmemsim/validate)")
    p.add_argument("--kernel-package", default="linux-image-amd64", metavar="NAME",
                   help="Debian kernel package to fetch (default linux-image-amd64)")
    p.add_argument("--kernel-dir", default=None, metavar="DIR",
                   help="an unpacked kernel (boot/vmlinuz-R, lib/modules/R) instead of fetching")
    p.add_argument("--accel", default="auto", choices=("auto", "kvm", "tcg"),
                   help="QEMU accelerator; auto probes /dev/kvm once (default auto)")
    p.add_argument("--timeout", type=_int, default=1800, metavar="S",
                   help="seconds one kernel run may take (default 1800)")
    p.add_argument("--model-kernel", default="6.8", choices=("6.8", "6.1", "auto"),
                   help="whose reclaim rules vmemsim follows where Linux versions differ: 6.8 "
                   "(default, what the models follow), 6.1 (the 6.1 differences modelled so "
                   "far: MG-LRU's reclaim pass), auto (6.1's for a 6.1 kernel)")
    p.add_argument("--one-zone", action="store_true",
                   help="replay on one zone of the kernel's free pages with its summed "
                   "watermarks, instead of the kernel's zones (ZONE_DMA, ZONE_DMA32) with "
                   "their own watermarks and lowmem_reserve (the default)")
    p.add_argument("--sysctl", action="append", metavar="NAME=N",
                   help="set /proc/sys/vm/NAME in the kernel before the run (repeatable; "
                   "e.g. watermark_boost_factor=0); vmemsim does not read it, so the run "
                   "shows what the setting changes in the kernel")
    p.add_argument("--timed", action="store_true",
                   help="run the sequence on the timed machine instead of the untimed replay: "
                   "one CPU for the program and kswapd, as the guest's one vCPU, and a swap "
                   "device that takes time (the virtio disk as a platterless hdd, its swap "
                   "rotational; zram compressing on the CPU), so kswapd can fall behind and "
                   "the program reclaim directly (rows pgscan_direct, allocstall); a file "
                   "workload's calls wait for the virtio disk as their file device")
    p.add_argument("--tcg-slowdown", type=float, default=Timing.tcg, metavar="X",
                   help="with --timed: how many times slower the guest's CPU runs under TCG "
                   "than the cost table's native CPU; its slices and disk keep wall time "
                   "(default %(default)s)")
    p.add_argument("--disk-us", type=float, default=Timing.disk_us, metavar="US",
                   help="with --timed: wall time per 4 KiB of a request to the disk image (a "
                   "host file), measured (default %(default)s)")
    p.add_argument("--disk-request-us", type=float, default=Timing.disk_request_us,
                   metavar="US",
                   help="with --timed: wall time of each request to the disk image besides "
                   "its pages, measured (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per setting")


def _sysctls(items: Optional[List[str]]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for item in items or []:
        k, sep, v = item.partition("=")
        k = k.strip()
        if k.startswith("vm."):
            k = k[3:]
        if not sep or not k:
            raise VmemsimError(f"validate: --sysctl: expected NAME=N, got {item!r}")
        out[k] = v.strip()
    return out


def _run(args: argparse.Namespace) -> int:
    lrus = ("classic", "mglru") if args.lru == "both" else (args.lru,)

    def progress(msg: str) -> None:
        sys.stderr.write(f"\r\033[K{msg}" if sys.stderr.isatty() else msg + "\n")
        sys.stderr.flush()

    cases = validate(
        args.spec, mem=args.mem, swap=args.swap, lrus=lrus, page_cluster=args.page_cluster,
        swappiness=args.swappiness, repeats=args.repeats, mode=args.mode, seed=args.seed,
        cache=Path(args.cache) if args.cache else None, kernel_package=args.kernel_package,
        kernel_dir=Path(args.kernel_dir) if args.kernel_dir else None, accel=args.accel,
        timeout=float(args.timeout), progress=progress, model_kernel=args.model_kernel,
        sysctl=_sysctls(args.sysctl), zones=not args.one_zone,
        timing=Timing(tcg=args.tcg_slowdown, disk_us=args.disk_us,
                      disk_request_us=args.disk_request_us) if args.timed else None,
    )
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
    if args.json:
        print(json.dumps([c.to_dict() for c in cases]))
    else:
        print("\n\n".join(format_case(c) for c in cases))
    return 0


register(
    "validate",
    "compare vmemsim with a real Linux kernel under QEMU on the same accesses",
    _configure,
    _run,
    description=DESCRIPTION,
)

"""The kernel and vmemsim on the same access sequence, counter by counter.

The simulator replays the sequence the guest program made, each write as the load and store
the program issues (:meth:`Workload.cpu_accesses`), on a machine with the memory the kernel had free just before the phase (``nr_free_pages``), the
kernel's own watermarks (summed over its zones), and the same ``vm.page-cluster`` and
``vm.swappiness``; a zram run replays with a synchronous swap device.

Kernel runs are cached by (kernel package and version, workload, settings): a second call
with the same arguments boots nothing and re-runs only the simulator.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .. import _native
from ..api import ReplayResult, VmemsimError, replay
from .kernel import (
    Kernel,
    KernelRun,
    Settings,
    fetch_kernel,
    kernel_from_dir,
    kvm_works,
    run_kernel,
)
from .workload import Workload, cache_dir, checksum, make_workload

#: Content class of the guest program's pages (``vmwl.c``'s ``touch``: one 8-byte counter
#: per page, the rest zeros), which decides their compressed size in zram's pool.
CONTENT_CLASS = "sparse"

#: Simulator policy per kernel LRU setting.
POLICY = {"classic": "clock-lru", "mglru": "mglru"}

#: (row name, how to read it from a kernel vmstat delta, how to read it from vmemsim's stats).
COUNTERS: List[Tuple[str, Callable[[Dict[str, int]], int], Callable[[Dict[str, int]], int]]] = [
    ("pgmajfault", lambda v: v.get("pgmajfault", 0), lambda s: s["major_faults"]),
    ("pswpin", lambda v: v.get("pswpin", 0), lambda s: s["pswpin"]),
    ("pswpout", lambda v: v.get("pswpout", 0), lambda s: s["pswpout"]),
    (
        "pgscan",
        lambda v: v.get("pgscan_kswapd", 0) + v.get("pgscan_direct", 0),
        lambda s: s["pgscan_kswapd"] + s["pgscan_direct"],
    ),
    (
        "pgsteal",
        lambda v: v.get("pgsteal_kswapd", 0) + v.get("pgsteal_direct", 0),
        lambda s: s["pgsteal_kswapd"] + s["pgsteal_direct"],
    ),
    ("pgscan_kswapd", lambda v: v.get("pgscan_kswapd", 0), lambda s: s["pgscan_kswapd"]),
    ("pgscan_direct", lambda v: v.get("pgscan_direct", 0), lambda s: s["pgscan_direct"]),
    (
        "workingset_refault_anon",
        lambda v: v.get("workingset_refault_anon", 0),
        lambda s: s["workingset_refault_anon"],
    ),
    ("pgfault", lambda v: v.get("pgfault", 0), lambda s: s.get("pgfault", s["faults"])),
]


@dataclass
class Row:
    counter: str
    kernel: List[int]
    vmemsim: int

    @property
    def mean(self) -> float:
        return statistics.fmean(self.kernel) if self.kernel else 0.0

    @property
    def spread(self) -> float:
        """Half the range of the kernel's repeats, relative to their mean."""
        if len(self.kernel) < 2 or self.mean == 0:
            return 0.0
        return (max(self.kernel) - min(self.kernel)) / 2 / self.mean

    @property
    def error(self) -> Optional[float]:
        """(vmemsim - kernel mean) / kernel mean; None when the kernel counted nothing."""
        if self.mean == 0:
            return None if self.vmemsim else 0.0
        return (self.vmemsim - self.mean) / self.mean

    def to_dict(self) -> Dict[str, object]:
        return dict(
            counter=self.counter, kernel=self.kernel, kernel_mean=self.mean,
            kernel_spread=self.spread, vmemsim=self.vmemsim, error=self.error,
        )


@dataclass
class Case:
    """One workload on one kernel setting: the kernel's repeats and vmemsim's prediction."""

    workload: str
    mode: str
    seed: int
    settings: Dict[str, object]
    kernel: str
    runs: List[KernelRun]
    sim: Dict[str, object]
    rows: List[Row] = field(default_factory=list)

    def row(self, name: str) -> Row:
        return next(r for r in self.rows if r.counter == name)

    def to_dict(self) -> Dict[str, object]:
        return dict(
            workload=self.workload, mode=self.mode, seed=self.seed, settings=self.settings,
            kernel=self.kernel, vmemsim_version=_native.version(),
            vmemsim_kernel_rules=self.sim.get("kernel", "6.8"),
            rows=[r.to_dict() for r in self.rows],
            kernel_runs=[r.to_dict() for r in self.runs], vmemsim_result=self.sim,
        )


def parse_mem(text: str) -> int:
    """``160M``, ``1G``, ``512MiB`` or a plain number of MiB -> MiB."""
    t = str(text).strip().upper().replace("IB", "").replace("B", "")
    mult = 1
    if t.endswith("G"):
        mult, t = 1024, t[:-1]
    elif t.endswith("M"):
        t = t[:-1]
    try:
        v = int(float(t) * mult)
    except ValueError:
        raise VmemsimError(f"validate: --mem: '{text}' is not a size such as 160M or 1G") from None
    return v


def _cache_file(cache: Path, kernel: Kernel, w: Workload, s: Settings) -> Path:
    """Where the kernel runs of (kernel, workload, settings) are kept. The accelerator is not
    part of the key (it is resolved only when a boot is needed); each run records its own."""
    settings = asdict(s)
    if not settings.get("sysctl"):
        settings.pop("sysctl", None)  # the key of runs made before the setting existed
    key = json.dumps(
        dict(kernel=kernel.describe(), workload=w.key, settings=settings), sort_keys=True
    )
    return cache / "results" / (hashlib.sha256(key.encode()).hexdigest()[:24] + ".json")


def load_runs(path: Path) -> List[KernelRun]:
    if not path.exists():
        return []
    return [KernelRun.from_dict(d) for d in json.loads(path.read_text())["runs"]]


def save_runs(path: Path, runs: List[KernelRun]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({"runs": [r.to_dict() for r in runs]}, indent=1))
    os.replace(tmp, path)


def simulator_inputs(runs: Sequence[KernelRun]) -> Dict[str, object]:
    """Frames and watermarks for the simulator from the kernel's state before the phase: the
    median free pages over the repeats, and the zones' watermarks summed, without watermark
    boost. The watermarks the kernel prints include ``zone->watermark_boost``
    (``min_wmark_pages``), which ``boost_watermark`` raises on a fragmenting fallback
    allocation and ``balance_pgdat`` takes back once kswapd has reclaimed for it: a passing
    state of one boot, not the zone's. So the boost is taken off where the run recorded it,
    and the smallest sum over the repeats is used (boost only ever raises them): one of
    memcached's boots had 512 pages of boost at the snapshot, 12% of its free memory."""
    frees = sorted(int(r.vmstat_before["nr_free_pages"]) for r in runs)

    def summed(r: KernelRun) -> Tuple[int, ...]:
        return tuple(
            sum(int(z[k]) - int(z.get("boost", 0)) for z in r.zones.values())
            for k in ("min", "low", "high")
        )

    sums = [summed(r) for r in runs]
    wm = tuple(min(s[i] for s in sums) for i in range(3)) if sums else (0, 0, 0)
    return dict(frames=frees[len(frees) // 2], watermarks=wm)


def model_kernel(release: str) -> str:
    """The reclaim rules to simulate a booted kernel with: 6.1's for a 6.1 kernel (the
    differences modelled so far, docs/kernel-6.1-vs-6.8.md), else 6.8's (the closest)."""
    return "6.1" if release.startswith("6.1.") or release == "6.1" else "6.8"


def simulate(
    w: Workload, s: Settings, runs: Sequence[KernelRun], seed: int = 0,
    kernel: Optional[str] = None,
) -> ReplayResult:
    """Replay the sequence through vmemsim with the kernel's free memory and watermarks.
    ``kernel`` picks the reclaim rules where Linux versions differ: ``"6.8"`` (default, what
    the models follow), ``"6.1"`` (the 6.1 differences modelled so far), or ``"auto"`` (6.1's
    for a 6.1 kernel, else 6.8's)."""
    pages, writes, gup = w.cpu_accesses()
    inp = simulator_inputs(runs)
    if kernel is None or kernel == "auto":
        kernel = model_kernel(runs[0].release) if runs and kernel == "auto" else "6.8"
    return replay(
        pages, policy=POLICY[s.lru], frames=int(inp["frames"]), writes=writes, gup=gup, seed=seed,
        page_cluster=s.page_cluster, watermarks=inp["watermarks"], swappiness=s.swappiness,
        swap=swap_device(s, runs), kernel=kernel, content_class=CONTENT_CLASS,
    )


def swap_device(s: Settings, runs: Sequence[KernelRun]) -> str:
    """The replay's swap device for the kernel's: zram; the virtio disk, which the guest
    sees as rotational (virtio_blk never sets QUEUE_FLAG_NONROT), of the size swapon reported
    (``SwapTotal`` is the usable slots; the header page makes one more); or that disk
    declared non-rotational (``ssd``), vmemsim's ``disk``."""
    if s.swap == "ssd":
        return "disk"
    if s.swap != "disk":
        return s.swap
    total_kib = int(runs[0].meminfo_before.get("SwapTotal", 0)) if runs else 0
    return f"hdd:size={total_kib + 4}KiB" if total_kib else "disk"


def compare(
    w: Workload, s: Settings, runs: Sequence[KernelRun], seed: int = 0,
    kernel: Optional[str] = None,
) -> Case:
    sim = simulate(w, s, runs, seed, kernel)
    st = sim.to_dict()["stats"]
    rows = [Row(name, [k(r.vmstat) for r in runs], v(st)) for name, k, v in COUNTERS]
    if s.swap == "zram" and all(r.mm_stat for r in runs):
        # The pool's peak (zram's mm_stat, over the boot; what came before the workload is a
        # few pages): the kernel's counts whole zspages, partly empty ones included.
        rows.append(Row(
            "zram mem_used_max", [int(r.mm_stat.get("mem_used_max", 0)) for r in runs],
            int(st.get("zram_mem_used_max", 0)),
        ))
    return Case(
        workload=w.name if w.kind == "gen" else w.spec, mode=w.mode, seed=w.seed,
        settings=asdict(s), kernel=runs[0].kernel if runs else "", runs=list(runs),
        sim=sim.to_dict(), rows=rows,
    )


def validate(
    spec: str,
    mem: str = "160M",
    swap: str = "disk",
    lrus: Sequence[str] = ("classic",),
    page_cluster: int = 3,
    swappiness: int = 60,
    repeats: int = 2,
    mode: str = "rw",
    seed: int = 0,
    cache: Optional[Path] = None,
    kernel_package: str = "linux-image-amd64",
    kernel_dir: Optional[Path] = None,
    accel: str = "auto",
    timeout: float = 1800.0,
    progress: Optional[Callable[[str], None]] = None,
    model_kernel: str = "6.8",
    sysctl: Optional[Dict[str, str]] = None,
) -> List[Case]:
    """Run ``spec`` (``gen:SPEC`` or a trace file) on the real kernel ``repeats`` times per
    LRU setting (reusing cached runs) and through vmemsim; one :class:`Case` per setting."""
    if repeats < 1:
        raise VmemsimError(f"validate: --repeats must be at least 1, got {repeats}")
    cache = Path(cache) if cache else cache_dir()
    w = make_workload(spec, mode=mode, seed=seed)
    expect = checksum(*w.sequence())
    kernel = kernel_from_dir(kernel_dir) if kernel_dir else fetch_kernel(cache, kernel_package)
    cases = []
    acc: Optional[str] = None
    for lru in lrus:
        s = Settings(
            mem_mib=parse_mem(mem), swap=swap, lru=lru, page_cluster=page_cluster,
            swappiness=swappiness, sysctl={k: str(v) for k, v in (sysctl or {}).items()},
        )
        s.check()
        path = _cache_file(cache, kernel, w, s)
        runs = load_runs(path)
        while len(runs) < repeats:
            if acc is None:
                acc = accel if accel != "auto" else ("kvm" if kvm_works(kernel, cache) else "tcg")
            i = len(runs) + 1
            label = f"kernel {kernel.release} {lru} {swap} run {i}/{repeats} ({acc})"

            def say(msg: str, label: str = label) -> None:
                if progress:
                    progress(f"{label}: {msg}")

            run = run_kernel(kernel, w, s, accel=acc, timeout=timeout, progress=say)
            if run.checksum != expect:
                raise VmemsimError(
                    f"validate: the guest program's accesses differ from vmemsim's sequence "
                    f"(checksum {run.checksum} in the guest, {expect} here): the guest's libm "
                    "may round differently from this machine's"
                )
            runs.append(run)
            save_runs(path, runs)
        cases.append(compare(w, s, runs[:repeats], seed=seed, kernel=model_kernel))
    return cases


def format_case(c: Case) -> str:
    s = c.settings
    head = (
        f"{c.workload} (mode {c.mode}) on {c.kernel}, vmemsim with Linux "
        f"{c.sim.get('kernel', '6.8')} rules: {s['lru']}, swap {s['swap']}, "
        f"mem {s['mem_mib']} MiB, page-cluster {s['page_cluster']}, swappiness {s['swappiness']}; "
        f"{len(c.runs)} kernel run(s), free pages before the phase "
        f"{[r.vmstat_before['nr_free_pages'] for r in c.runs]}"
    )
    if s.get("sysctl"):
        head += "\nkernel only (vmemsim follows the defaults): " + ", ".join(
            f"vm.{k}={v}" for k, v in sorted(s["sysctl"].items()))
    lines = [head, f"{'counter':<26}{'kernel mean':>14}{'± spread':>10}{'vmemsim':>12}{'error':>9}"]
    for r in c.rows:
        err = "-" if r.error is None else f"{r.error * 100:+.1f}%"
        lines.append(
            f"{r.counter:<26}{r.mean:>14,.0f}{r.spread * 100:>9.1f}%{r.vmemsim:>12,}{err:>9}"
        )
    return "\n".join(lines)

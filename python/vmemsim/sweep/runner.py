"""One run of a sweep: a pure function of its configuration and seed.

:func:`run_one` is what executors ship to workers (a local process or a Ray node): it takes
and returns small JSON-able dicts, imports nothing heavy, and never raises for a run that
fails — the error is part of its result, so one bad run never stops a sweep.
"""

from __future__ import annotations

import os
import time
import traceback
from typing import Any, Dict, Mapping, Optional

from .._native import VmemsimError

#: Configuration paths that become keyword arguments of :func:`vmemsim.replay`.
_REPLAY_KEYS = {
    "machine.policy": "policy",
    "machine.frames": "frames",
    "machine.swappiness": "swappiness",
    "machine.page_cluster": "page_cluster",
    "machine.watermarks": "watermarks",
    "machine.check_invariants": "check_invariants",
    "machine.kernel": "kernel",
    "machine.read_ahead_kb": "read_ahead_kb",
    "workload.format": "format",
    "workload.page_size": "page_size",
    "workload.addresses": "addresses",
    "workload.csv": "csv",
    "run.sample_every": "sample_every",
}
#: Paths that only label a run.
_LABEL_KEYS = {"workload.name", "workload.trace", "workload.model", "workload.guest"}
#: Keys only timed runs read, and the :func:`vmemsim.run` argument of each.
_TIMED_KEYS = {
    "machine.cpus": "cpus",
    "machine.swap": "device",
    "machine.slice_ns": "slice_ns",
    "machine.cgroup": "cgroup",
    "machine.tlb": "tlb",
    "run.step_ns": "step_ns",
    "run.sample_every_ns": "sample_every_ns",
    "machine.file_device": "file_device",
}
#: Keys only replays read.
_REPLAY_ONLY = {"workload.format", "workload.page_size", "workload.addresses", "workload.csv",
                "run.sample_every", "machine.kernel"}


def payload(run: Any, base_dir: str) -> Dict[str, Any]:
    """What a worker needs for ``run`` (a :class:`vmemsim.sweep.spec.Run`)."""
    return {"run_id": run.run_id, "config": dict(run.config), "seed": run.seed,
            "base_dir": base_dir}


def _trace(config: Mapping[str, Any], base_dir: str) -> str:
    t = config["workload.trace"]
    if t.startswith("gen:") or os.path.isabs(t):
        return t
    return os.path.join(base_dir, t)


#: Keys only VM runs read, and the :func:`vmemsim.run_vm` argument of each (the guest's
#: policy and memory are machine.policy and machine.frames).
_VM_KEYS = {
    "machine.policy": "guest_policy",
    "machine.frames": "guest_frames",
    "vm.paging": "paging",
    "vm.host_frames": "host_frames",
    "vm.host_policy": "host_policy",
    "vm.eviction": "eviction",
    "vm.mmu_pages": "mmu_pages",
    "vm.guest_levels": "guest_levels",
    "vm.host_levels": "host_levels",
    "vm.pt_pages": "pt_pages",
    "vm.guest_page": "guest_page",
    "vm.count": "vms",
    "vm.host_cpus": "host_cpus",
    "vm.host_swap": "host_swap",
    "vm.guest_swap": "guest_swap",
    "vm.shared_disk": "shared_disk",
    "vm.host_page": "host_page",
    "vm.walk_caches": "walk_caches",
    "vm.cache_mode": "cache_mode",
    "vm.balloon": "balloon",
    "vm.deflate_on_oom": "deflate_on_oom",
    "vm.balloon_size_mib": "balloon_size_mib",
    "vm.mom": "mom",
    "vm.guest_swapoff": "guest_swapoff",
    "vm.qemu_text_pages": "qemu_text_pages",
    "vm.vswapper": "vswapper",
    "machine.file_device": "file_device",
    "machine.read_ahead_kb": "read_ahead_kb",
    "run.sample_every_ns": "sample_every_ns",
}


def is_vm(config: Mapping[str, Any]) -> bool:
    """A run of a guest workload in a VM."""
    return config.get("workload.guest") is not None


def _check_defaults(config: Mapping[str, Any], only: Any, what: str) -> None:
    """Keys that belong to another kind of run must stay at their defaults."""
    from .spec import SCHEMA

    for path, value in config.items():
        if only(path) and (path not in SCHEMA or value != SCHEMA[path].default):
            raise VmemsimError(f"{path}: {what}")


def run_kind(config: Mapping[str, Any]) -> str:
    """``vm`` (workload.guest), ``timed`` (workload.model) or ``replay`` (a trace)."""
    if is_vm(config):
        return "vm"
    return "timed" if is_timed(config) else "replay"


def reads(config: Mapping[str, Any], path: str) -> bool:
    """Whether the kind of run of ``config`` reads key ``path`` (a replay reads no
    ``vm.*`` key nor the timed machine's; a VM run no replay or timed key; the
    workload's keys name every run)."""
    if path in _LABEL_KEYS:
        return True
    kind = run_kind(config)
    if kind == "vm":
        return path.startswith("vm.") or path in _VM_KEYS or path.startswith("machine.costs.")
    if path.startswith("vm."):
        return False
    if kind == "timed":
        return path not in _REPLAY_ONLY
    return path not in _TIMED_KEYS and not path.startswith("machine.costs.")


def vm_kwargs(config: Mapping[str, Any], seed: int) -> Dict[str, Any]:
    """The :func:`vmemsim.run_vm` arguments of a VM run."""
    if config.get("workload.trace") is not None or config.get("workload.model") is not None:
        raise VmemsimError("workload: give one of workload.trace, workload.model, "
                           "workload.guest")
    _check_defaults(
        config,
        lambda p: (p not in _VM_KEYS and p not in _LABEL_KEYS
                   and not p.startswith("machine.costs.")) and (
            p.startswith("machine.") or p.startswith("run.") or p in _REPLAY_ONLY),
        "VM runs do not read this key (the guest's memory is machine.frames and its policy "
        "machine.policy; the rest is vm.*)",
    )
    kw = {arg: config[path] for path, arg in _VM_KEYS.items()
          if config.get(path) is not None}
    costs = {path[len("machine.costs."):]: v for path, v in config.items()
             if path.startswith("machine.costs.")}
    if costs:
        kw["costs"] = costs
    for table in ("balloon_costs", "mom_config"):
        t = {path[len(f"vm.{table}."):]: v for path, v in config.items()
             if path.startswith(f"vm.{table}.")}
        if t:
            kw[table] = t
    kw.update(workload=config["workload.guest"], seed=seed)
    return kw


#: Fields of a :class:`vmemsim.RunResult` that are no metric columns (lists, nested tables,
#: the configuration: the run's configuration is in the sweep's own columns).
_NOT_METRICS = {"seed", "per_vm", "threads", "series", "vcpu_ns", "latency_buckets", "config",
                "options", "walk_grid", "kvm_folded"}
#: How :func:`run_metrics` names a result table's columns: its counters at the top level
#: (``faults``, ``pgmajfault``, as a replay's), the others under a prefix.
_TABLE_PREFIX = {"stats": "", "vmstat": "", "host_stats": "host.", "host_vmstat": "host.",
                 "device_stats": "device.", "host_device_stats": "host_device.",
                 "policy_counters": "policy."}


def run_metrics(r: Any) -> Dict[str, Any]:
    """The flat metric columns of a :class:`vmemsim.RunResult`, native or VM: the numbers
    at its top level (``runtime_ns``, ``frames``, VM events such as ``exits``), the
    counters of the workload's kernel (the machine's, the guest's) at the top level under
    their own and their ``/proc/vmstat`` names (``faults``, ``pgmajfault``), the host's as
    ``host.*``, the swap devices' as ``device.*`` and ``host_device.*``, the policy's as
    ``policy.*``, request latency as ``latency.KIND.pNN_ns`` and ``latency.KIND.count``,
    and every other table's entries as ``table.key`` (``cpu.kswapd_ns``, ``time.kvm_ns``,
    ``translate.walks``, ``kvm.mmu_recycled``)."""
    d = r.to_dict()
    m: Dict[str, Any] = {"workload_spec": d["workload"], "runtime_s": r.runtime_s}
    for k, v in d.items():
        if k in _NOT_METRICS or isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            m[k] = v
        elif k == "latency":
            for kind, summ in v.items():
                for q, x in summ.items():
                    m[f"latency.{kind}.{q}" if q == "count" else f"latency.{kind}.{q}_ns"] = x
        elif isinstance(v, dict):
            prefix = _TABLE_PREFIX.get(k, f"{k}.")
            for kk, vv in v.items():
                if isinstance(vv, (int, float)) and not isinstance(vv, bool):
                    m[f"{prefix}{kk}"] = vv
    st = d["stats"]
    m["miss_ratio"] = st["faults"] / st["accesses"] if st["accesses"] else 0.0
    m["refs_per_walk"] = r.refs_per_walk
    return m


def is_timed(config: Mapping[str, Any]) -> bool:
    """A run of a workload model on the timed machine (else a trace replay)."""
    return config.get("workload.model") is not None


def _collect(config: Mapping[str, Any], keys: Mapping[str, str], ignore: Any) -> Dict[str, Any]:
    """Keyword arguments from a run's configuration: the paths in ``keys`` (unset ones left
    out), ``machine.options.*`` as ``options`` and ``machine.costs.*`` as ``costs``; paths
    for which ``ignore(path)`` holds belong to the other kind of run and are skipped."""
    kw: Dict[str, Any] = {}
    tables: Dict[str, Dict[str, Any]] = {"options": {}, "costs": {}}
    for path, value in config.items():
        if path in _LABEL_KEYS or ignore(path):
            continue
        if path in keys:
            if value is not None:
                kw[keys[path]] = value
        elif path.startswith("machine.options."):
            tables["options"][path[len("machine.options."):]] = value
        elif path.startswith("machine.costs."):
            tables["costs"][path[len("machine.costs."):]] = value
        else:
            raise VmemsimError(f"{path}: no model reads this key (a bug: it is in the schema)")
    kw.update({name: t for name, t in tables.items() if t})
    return kw


def run_kwargs(config: Mapping[str, Any], seed: int) -> Dict[str, Any]:
    """The :func:`vmemsim.run` arguments of a timed run."""
    if config.get("workload.trace") is not None:
        raise VmemsimError("workload: give workload.trace or workload.model, not both")
    keys = {**{k: v for k, v in _REPLAY_KEYS.items() if k not in _REPLAY_ONLY}, **_TIMED_KEYS}
    _check_defaults(config, lambda p: p.startswith("vm."),
                    "only VM runs (workload.guest) read this key")
    kw = _collect(config, keys, lambda path: path in _REPLAY_ONLY or path.startswith("vm."))
    kw.update(workload=config["workload.model"], seed=seed)
    return kw


def replay_kwargs(config: Mapping[str, Any], seed: int, base_dir: str) -> Dict[str, Any]:
    """The :func:`vmemsim.replay` arguments of a run (the timed machine's keys, at their
    defaults, mean nothing to a replay)."""
    from .spec import SCHEMA

    for path, value in config.items():
        timed_only = path in _TIMED_KEYS or path.startswith("machine.costs.")
        if timed_only and (path not in SCHEMA or value != SCHEMA[path].default):
            raise VmemsimError(f"{path}: only timed runs (workload.model) read this key; "
                               "a trace replay has no CPUs, swap device or costs")
    _check_defaults(config, lambda p: p.startswith("vm."),
                    "only VM runs (workload.guest) read this key")
    kw = _collect(config, _REPLAY_KEYS,
                  lambda path: path in _TIMED_KEYS or path.startswith("machine.costs.")
                  or path.startswith("vm."))
    kw.update(trace=_trace(config, base_dir), seed=seed)
    if not kw.get("sample_every"):
        kw.pop("sample_every", None)
    return kw


def metrics(result: Any) -> Dict[str, Any]:
    """The flat metric columns of a :class:`vmemsim.ReplayResult`."""
    m: Dict[str, Any] = {
        "frames": result.frames,
        "miss_ratio": result.miss_ratio,
        "page_cluster": result.page_cluster,
        "wmark_min": result.watermarks[0],
        "wmark_low": result.watermarks[1],
        "wmark_high": result.watermarks[2],
        "trace_name": result.trace,
    }
    m.update(result.stats)
    m.update({f"policy.{k}": v for k, v in result.policy_counters.items()})
    return m


def run_one(p: Dict[str, Any]) -> Dict[str, Any]:
    """Run the payload ``p`` (see :func:`payload`); returns the record of the run:
    ``run_id``, ``status`` (``ok`` or ``error``), ``error``, ``wall_seconds``, ``metrics``
    and ``side`` (``{kind: column table}`` for the side files, e.g. the time series)."""
    from .. import api
    from .._native import version

    started = time.perf_counter()
    rec: Dict[str, Any] = {
        "run_id": p["run_id"],
        "seed": p["seed"],
        "version": version(),
        "status": "ok",
        "error": None,
        "metrics": None,
        "side": None,
        "host": os.uname().nodename if hasattr(os, "uname") else "",
    }
    try:
        side: Dict[str, Any] = {}
        if is_vm(p["config"]) or is_timed(p["config"]):
            if is_vm(p["config"]):
                result = api.run_vm(**vm_kwargs(p["config"], p["seed"]))
            else:
                result = api.run(**run_kwargs(p["config"], p["seed"]))
            rec["metrics"] = run_metrics(result)
            if result.latency_buckets:
                rows = [(k, v, c) for k, b in result.latency_buckets.items() for v, c in b]
                side["latency"] = {"kind": [r[0] for r in rows],
                                   "value_ns": [r[1] for r in rows],
                                   "count": [r[2] for r in rows]}
        else:
            result = api.replay(**replay_kwargs(p["config"], p["seed"], p["base_dir"]))
            rec["metrics"] = metrics(result)
        series = getattr(result, "series", ())
        if series:
            cols = list(series[0])
            side["series"] = {c: [s[c] for s in series] for c in cols}
        rec["side"] = side or None
    except VmemsimError as e:
        rec["status"], rec["error"] = "error", str(e)
    except Exception as e:  # a bug in a model: recorded, the sweep goes on
        tb = traceback.extract_tb(e.__traceback__)
        where = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
        rec["status"], rec["error"] = "error", f"internal error {type(e).__name__}: {e}{where}"
    rec["wall_seconds"] = time.perf_counter() - started
    return rec


def noop(p: Dict[str, Any]) -> Dict[str, Any]:
    """A run that does nothing: measures the orchestration alone (benchmarks)."""
    from .._native import version

    return {"run_id": p["run_id"], "seed": p["seed"], "version": version(), "status": "ok",
            "error": None, "metrics": {"frames": 0}, "side": None, "host": "",
            "wall_seconds": 0.0}


def resolve_function(name: Optional[str]):
    """The run function by name (``None`` = :func:`run_one`)."""
    return {None: run_one, "run": run_one, "noop": noop}[name]

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
    "workload.format": "format",
    "workload.page_size": "page_size",
    "workload.addresses": "addresses",
    "workload.csv": "csv",
    "run.sample_every": "sample_every",
}
#: Paths that only label a run.
_LABEL_KEYS = {"workload.name", "workload.trace"}


def payload(run: Any, base_dir: str) -> Dict[str, Any]:
    """What a worker needs for ``run`` (a :class:`vmemsim.sweep.spec.Run`)."""
    return {"run_id": run.run_id, "config": dict(run.config), "seed": run.seed,
            "base_dir": base_dir}


def _trace(config: Mapping[str, Any], base_dir: str) -> str:
    t = config["workload.trace"]
    if t.startswith("gen:") or os.path.isabs(t):
        return t
    return os.path.join(base_dir, t)


def replay_kwargs(config: Mapping[str, Any], seed: int, base_dir: str) -> Dict[str, Any]:
    """The :func:`vmemsim.replay` arguments of a run."""
    kw: Dict[str, Any] = {"trace": _trace(config, base_dir), "seed": seed}
    options: Dict[str, Any] = {}
    for path, value in config.items():
        if path in _REPLAY_KEYS:
            if value is not None:
                kw[_REPLAY_KEYS[path]] = value
        elif path.startswith("machine.options."):
            options[path[len("machine.options."):]] = value
        elif path not in _LABEL_KEYS:
            raise VmemsimError(f"{path}: no model reads this key (a bug: it is in the schema)")
    if options:
        kw["options"] = options
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
        kw = replay_kwargs(p["config"], p["seed"], p["base_dir"])
        result = api.replay(**kw)
        rec["metrics"] = metrics(result)
        series = getattr(result, "series", ())
        if series:
            cols = list(series[0])
            rec["side"] = {"series": {c: [s[c] for s in series] for c in cols}}
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

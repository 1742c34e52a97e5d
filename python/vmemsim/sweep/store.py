"""The results of a sweep: one directory, one table.

Layout of a results directory::

    experiment.toml        the experiment file the sweep ran (to re-run or report it)
    manifest.json          experiment name, vmemsim version, the ids of the planned runs
    runs/<run_id>.json     one record per finished run (ok or error), written atomically
    series/<run_id>.parquet  the run's counters over time (when run.sample_every > 0)
    <kind>/<run_id>.parquet  other side files of later models (latency histograms, ...)
    results.parquet        the table: one row per run (rebuilt from runs/ when stale)

Every file is written to a temporary name and renamed into place, and a run's side files are
in place before its record; so a sweep killed at any moment leaves only whole records, and
the runs it loses are those that were in flight. ``results.parquet`` is derived data: it is
rewritten during and at the end of a sweep, and rebuilt from ``runs/`` by whoever reads a
directory whose table is older than its records.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import shutil
import sys
import tempfile
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set

from .._files import umask_mode
from .._native import VmemsimError
from . import spec as _spec

RESULTS_FILE = "results.parquet"
RUNS_DIR = "runs"
SERIES_DIR = "series"
MANIFEST = "manifest.json"
#: Where unreadable run records are moved (inside the runs directory): their runs run again.
QUARANTINE_DIR = "quarantine"
EXPERIMENT_FILE = "experiment.toml"

#: Columns every row starts with, in this order.
ID_COLUMNS = ("run_id", "experiment", "status", "error", "seed", "version", "wall_seconds",
              "host", "finished_at")


def _pa() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError as e:  # pragma: no cover - pyarrow is a dependency
        raise VmemsimError("the results store needs pyarrow: pip install pyarrow") from e
    return pyarrow


def _replace_atomically(path: str, write: Any, suffix: str = "") -> None:
    """Call ``write(tmp)`` on a temporary file next to ``path``, then rename it over
    ``path``: readers (and a kill) see the old file or the new one, never a part. The file
    gets the usual mode for a new file (the umask's), not ``mkstemp``'s 0o600."""
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=suffix, dir=d)
    try:
        os.fchmod(fd, umask_mode())
    finally:
        os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`_replace_atomically`)."""

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(data)

    _replace_atomically(path, write)


def _write_table(path: str, table: Any) -> None:
    pq = _pa().parquet
    _replace_atomically(path, lambda tmp: pq.write_table(table, tmp), suffix=".parquet")


def _is_side_dir(d: str) -> bool:
    """A directory of side files: only ``<run_id>.parquet`` files (16 hex digits)."""
    names = os.listdir(d)
    return bool(names) and all(
        n.endswith(".parquet") and len(n) == 24 and all(c in "0123456789abcdef" for c in n[:16])
        for n in names
    )


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------- rows to columns


def _column(values: List[Any]) -> Any:
    """An Arrow array for one column: bool, int64 (uint64 for big non-negative), float64 or
    string; a column mixing kinds (e.g. frames as 1000 and '25%') becomes strings."""
    pa = _pa()
    kinds = {type(v) for v in values if v is not None}
    if not kinds:
        return pa.array(values, type=pa.null())
    if kinds == {bool}:
        return pa.array(values, type=pa.bool_())
    if kinds <= {int}:
        big = any(v is not None and v > 2**63 - 1 for v in values)
        neg = any(v is not None and v < 0 for v in values)
        if not big:
            return pa.array(values, type=pa.int64())
        if not neg:
            return pa.array(values, type=pa.uint64())
    elif kinds <= {int, float}:
        return pa.array([None if v is None else float(v) for v in values], type=pa.float64())
    if kinds == {str}:
        return pa.array(values, type=pa.string())
    return pa.array([None if v is None else (v if isinstance(v, str) else json.dumps(v))
                     for v in values], type=pa.string())


def rows_to_table(rows: Sequence[Mapping[str, Any]], order: Sequence[str] = ()) -> Any:
    """An Arrow table from dict rows: columns in ``order`` first, then as first seen."""
    pa = _pa()
    cols: Dict[str, None] = {c: None for c in order}
    for r in rows:
        for c in r:
            cols.setdefault(c, None)
    names = [c for c in cols if any(c in r for r in rows)] if rows else list(order)
    return pa.table({c: _column([r.get(c) for r in rows]) for c in names})


def record_row(rec: Mapping[str, Any], experiment: str) -> Dict[str, Any]:
    """The table row of a run record: ids, the flattened configuration, the metrics."""
    row: Dict[str, Any] = {
        "run_id": rec["run_id"],
        "experiment": experiment,
        "status": rec["status"],
        "error": rec.get("error"),
        "seed": rec["seed"],
        "version": rec.get("version"),
        "wall_seconds": rec.get("wall_seconds"),
        "host": rec.get("host"),
        "finished_at": rec.get("finished_at"),
    }
    for p in _spec._sorted_paths(list(rec.get("config", {}))):
        row[p] = rec["config"][p]
    if row.get("workload.name") is None:  # the label defaults to the trace or the model
        row["workload.name"] = (row.get("workload.trace") or row.get("workload.model")
                                or row.get("workload.guest"))
    for k, v in (rec.get("metrics") or {}).items():
        if k in row:
            k = f"result.{k}"
        row[k] = None if isinstance(v, float) and math.isnan(v) else v
    return row


# ---------------------------------------------------------------- the store


class ResultsStore:
    """A results directory being written by a sweep (see the module docstring)."""

    def __init__(self, path: "str | os.PathLike[str]") -> None:
        self.path = os.fsdecode(os.fspath(path))
        self.runs_dir = os.path.join(self.path, RUNS_DIR)
        self.series_dir = os.path.join(self.path, SERIES_DIR)

    # -- set-up

    def has_records(self) -> bool:
        return os.path.isdir(self.runs_dir) and any(
            n.endswith(".json") for n in os.listdir(self.runs_dir))

    def prepare(self, exp: "_spec.Experiment", run_ids: Sequence[str], resume: bool,
                force: bool) -> None:
        """Create (or, with ``resume``, reuse) the directory for ``exp``. An existing
        directory with records needs ``resume`` (keep them) or ``force`` (delete them)."""
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise VmemsimError(f"{self.path}: exists and is not a directory")
        if self.has_records() and not resume:
            if not force:
                raise VmemsimError(
                    f"{self.path}: already holds results; pass --resume to continue that "
                    "sweep, or --force to delete them and start again")
            for sub in os.listdir(self.path):  # runs/ and every side-file directory
                d = os.path.join(self.path, sub)
                if sub == RUNS_DIR or (os.path.isdir(d) and _is_side_dir(d)):
                    shutil.rmtree(d, ignore_errors=True)
            for f in (RESULTS_FILE, MANIFEST):
                try:
                    os.unlink(os.path.join(self.path, f))
                except FileNotFoundError:
                    pass
        if resume and os.path.exists(os.path.join(self.path, MANIFEST)):
            old = self.manifest()
            if old.get("experiment") != exp.name:
                raise VmemsimError(
                    f"{self.path}: holds experiment {old.get('experiment')!r}, not "
                    f"{exp.name!r}; give another --out directory")
        os.makedirs(self.runs_dir, exist_ok=True)
        self._clean_tmp()
        atomic_write(os.path.join(self.path, EXPERIMENT_FILE), exp.source.encode())
        from .._native import version

        manifest = {
            "experiment": exp.name,
            "description": exp.description,
            "experiment_file": exp.path,
            "base_dir": exp.base_dir,
            "vmemsim_version": version(),
            "created": _now(),
            "total_runs": len(run_ids),
            "seeds": exp.seeds,
            "run_ids": list(run_ids),
        }
        atomic_write(os.path.join(self.path, MANIFEST),
                     json.dumps(manifest, indent=1).encode())

    def _clean_tmp(self) -> None:
        for d in [self.path] + [os.path.join(self.path, n) for n in os.listdir(self.path)]:
            if os.path.isdir(d):
                for n in os.listdir(d):
                    if n.startswith(".tmp-"):
                        try:
                            os.unlink(os.path.join(d, n))
                        except OSError:
                            pass

    def manifest(self) -> Dict[str, Any]:
        p = os.path.join(self.path, MANIFEST)
        try:
            with open(p, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            raise VmemsimError(f"{self.path}: not a results directory (no {MANIFEST})") from None
        except (OSError, ValueError) as e:
            raise VmemsimError(f"{p}: unreadable: {e}") from None

    # -- records

    def records(self) -> Iterator[Dict[str, Any]]:
        """Every whole record on disk. An unreadable one (truncated by a crash or a full disk,
        not JSON, or without a ``run_id``) is moved aside to ``runs/quarantine/`` with a
        message on stderr, so that run counts as not done and runs again on ``--resume``."""
        if not os.path.isdir(self.runs_dir):
            return
        for n in sorted(os.listdir(self.runs_dir)):
            if not n.endswith(".json") or n.startswith("."):
                continue
            p = os.path.join(self.runs_dir, n)
            try:
                with open(p, encoding="utf-8") as f:
                    rec = json.load(f)
                if not isinstance(rec, dict) or not isinstance(rec.get("run_id"), str):
                    raise ValueError("not a run record (no run_id)")
            except FileNotFoundError:
                continue  # moved or replaced meanwhile
            except (OSError, ValueError) as e:
                self._quarantine(p, e)
                continue
            yield rec

    def _quarantine(self, path: str, why: Exception) -> None:
        qdir = os.path.join(self.runs_dir, QUARANTINE_DIR)
        dest = os.path.join(qdir, os.path.basename(path))
        try:
            os.makedirs(qdir, exist_ok=True)
            os.replace(path, dest)
            where = f"moved to {dest}"
        except OSError as e:  # a read-only directory: leave it, skip it
            where = f"left in place ({e.strerror or e}), skipped"
        sys.stderr.write(
            f"vmemsim: warning: {path}: unreadable run record ({why}); {where}; "
            "that run counts as not done and runs again with --resume\n"
        )

    def finished(self, retry_failed: bool = False) -> Dict[str, str]:
        """``{run_id: status}`` of the records on disk (failed ones left out with
        ``retry_failed``, so they run again)."""
        out = {}
        for r in self.records():
            if retry_failed and r.get("status") != "ok":
                continue
            out[r["run_id"]] = r.get("status", "ok")
        return out

    def write(self, rec: Dict[str, Any]) -> None:
        """Store a finished run: its side files first, then its record.

        ``rec["side"]`` maps a kind (``series``; later ``latency``, ...) to a column table
        ``{name: [values]}``; each becomes ``DIR/<kind>/<run_id>.parquet`` and the record
        keeps only the paths, under ``side_files``."""
        rid = rec["run_id"]
        side = rec.pop("side", None) or {}
        files: Dict[str, str] = {}
        for kind, cols in side.items():
            if not cols:
                continue
            if not kind.isidentifier():
                raise VmemsimError(f"side file kind {kind!r}: must be a plain name")
            d = os.path.join(self.path, kind)
            os.makedirs(d, exist_ok=True)
            pa = _pa()
            table = pa.table({k: _column(list(v)) for k, v in cols.items()})
            _write_table(os.path.join(d, f"{rid}.parquet"), table)
            files[kind] = f"{kind}/{rid}.parquet"
        if files:
            rec["side_files"] = files
        rec.setdefault("finished_at", _now())
        atomic_write(os.path.join(self.runs_dir, f"{rid}.json"),
                     json.dumps(rec, sort_keys=False).encode())

    # -- the table

    def rows(self, run_ids: Optional[Iterable[str]] = None) -> List[Dict[str, Any]]:
        m = self.manifest()
        wanted: Optional[Set[str]] = set(run_ids if run_ids is not None else m.get("run_ids", []))
        order = {rid: i for i, rid in enumerate(m.get("run_ids", []))}
        recs = [r for r in self.records() if not wanted or r["run_id"] in wanted]
        recs.sort(key=lambda r: order.get(r["run_id"], len(order)))
        return [record_row(r, m.get("experiment", "")) for r in recs]

    def compact(self, run_ids: Optional[Iterable[str]] = None) -> str:
        """Rewrite ``results.parquet`` from the records; returns its path."""
        out = os.path.join(self.path, RESULTS_FILE)
        _write_table(out, rows_to_table(self.rows(run_ids), ID_COLUMNS))
        return out


class Results:
    """A results directory opened for reading: ``table()`` (pandas), ``series(run_id)``, and
    the experiment it came from."""

    def __init__(self, path: "str | os.PathLike[str]") -> None:
        self.store = ResultsStore(path)
        self.path = self.store.path
        if not os.path.isdir(self.path):
            raise VmemsimError(f"{self.path}: no such results directory")
        self.manifest = self.store.manifest()

    def table_path(self) -> str:
        """``results.parquet``, rebuilt first if records are newer than it."""
        out = os.path.join(self.path, RESULTS_FILE)
        try:
            stale = os.path.getmtime(out) < os.path.getmtime(self.store.runs_dir)
        except OSError:
            stale = True
        if stale:
            try:
                self.store.compact()
            except OSError:  # a read-only directory: build in memory instead
                return ""
        return out

    def arrow(self) -> Any:
        p = self.table_path()
        if p:
            return _pa().parquet.read_table(p)
        return rows_to_table(self.store.rows(), ID_COLUMNS)

    def table(self) -> Any:
        """The results as a ``pandas.DataFrame`` (one row per run)."""
        return self.arrow().to_pandas()

    def side(self, run_id: str, kind: str) -> Any:
        """A side file of the run (``series``, ...) as a ``pandas.DataFrame``, or ``None``
        if the run has none of that kind."""
        p = os.path.join(self.path, kind, f"{run_id}.parquet")
        if not kind.isidentifier() or not os.path.exists(p):
            return None
        return _pa().parquet.read_table(p).to_pandas()

    def series(self, run_id: str) -> Any:
        """The run's time series (one row per sample: ``accesses`` and the cumulative
        counters), or ``None`` if it has none."""
        return self.side(run_id, SERIES_DIR)

    def experiment(self) -> "_spec.Experiment":
        p = os.path.join(self.path, EXPERIMENT_FILE)
        try:
            with open(p, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise VmemsimError(f"{p}: cannot read: {e.strerror or e}") from None
        return _spec.parse_experiment(text, p, self.manifest.get("base_dir") or self.path)


def open_results(path: "str | os.PathLike[str]") -> Results:
    return Results(path)

"""Experiments at scale: sweep specs, local and Ray execution, a resumable results store.

::

    from vmemsim.sweep import load_experiment, run_sweep, open_results
    exp = load_experiment("experiments/policies/experiment.toml")
    print(exp.total)                         # runs in the grid
    summary = run_sweep(exp, "results/policies", workers=2, resume=True)
    df = open_results("results/policies").table()   # pandas, one row per run

The file format is in :mod:`vmemsim.sweep.spec`, the results layout in
:mod:`vmemsim.sweep.store`, executors in :mod:`vmemsim.sweep.executors`.
"""

from .driver import SweepSummary, check_runs, run_sweep
from .executors import LocalExecutor, WorkerDied, make_executor
from .spec import (
    SCHEMA,
    Experiment,
    Key,
    Run,
    describe_run,
    load_experiment,
    parse_experiment,
    register_key,
    register_open_table,
    run_id,
)
from .store import Results, ResultsStore, open_results

__all__ = [
    "SCHEMA",
    "Experiment",
    "Key",
    "LocalExecutor",
    "Results",
    "ResultsStore",
    "Run",
    "SweepSummary",
    "WorkerDied",
    "check_runs",
    "describe_run",
    "load_experiment",
    "make_executor",
    "open_results",
    "parse_experiment",
    "register_key",
    "register_open_table",
    "run_id",
    "run_sweep",
]

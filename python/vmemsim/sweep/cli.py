"""``vmemsim sweep plan|run|keys|status`` and ``vmemsim report``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict

from ..cli import CliError, EXIT_INTERRUPTED, _positive, register, register_group
from .runner import reads, run_kind
from .spec import SCHEMA, tomllib, axes_summary, describe_run, load_experiment, schema_rows

_KIND_NAMES = {"replay": "a trace replay", "timed": "a timed run", "vm": "a VM run"}


def _default_out(exp_name: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in exp_name)
    return os.path.join("results", safe)


# ---------------------------------------------------------------- sweep plan


def _configure_plan(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="experiment file (TOML)")
    _seeds_argument(p)
    p.add_argument("--samples", type=int, default=3, metavar="N",
                   help="expanded configurations to print (default 3; 0 for none)")
    p.add_argument("--json", action="store_true",
                   help="print the plan as JSON: total, axes, and every run (id, seed, axes)")
    p.add_argument("--estimate", type=int, default=0, metavar="N",
                   help="run N sample runs spread over the grid, one at a time, and "
                   "extrapolate the sweep's wall time from them (default 0: no estimate)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="workers the estimate assumes (default: as `sweep run`, one per CPU)")


def _seeds_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seeds", default=None, metavar="N|S,S,...",
                   help="override experiment.seeds: a count (seeds 0..N-1) or a list "
                   "(e.g. a quick run of a big experiment)")


def _load(args: argparse.Namespace):
    exp = load_experiment(args.file)
    if args.seeds is not None:
        text = args.seeds.strip()
        try:
            seeds = ([int(x) for x in text.split(",")] if "," in text
                     else list(range(int(text))))
        except ValueError:
            raise CliError(f"--seeds: expected a count or a comma-separated list, got {text!r}")
        if not seeds or any(x < 0 for x in seeds) or len(set(seeds)) != len(seeds):
            raise CliError(f"--seeds: need distinct non-negative seeds, got {text!r}")
        exp.seeds = seeds
    return exp


#: Runs `sweep plan --json` lists at most (each is a JSON object in memory).
PLAN_JSON_MAX = 1_000_000


def _run_plan(args: argparse.Namespace) -> int:
    exp = _load(args)
    total = exp.total
    if args.json:
        if total > PLAN_JSON_MAX:
            raise CliError(f"--json lists every run: {total:,} runs is more than "
                           f"{PLAN_JSON_MAX:,}; plan without --json shows the count and samples")
        runs = list(exp.runs())
        json.dump({
            "experiment": exp.name,
            "total": len(runs),
            "axes": [{"name": n, "values": k} for n, k in axes_summary(exp)],
            "runs": [{"index": r.index, "run_id": r.run_id, "seed": r.seed, "axes": r.axes}
                     for r in runs],
        }, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    out = sys.stdout
    out.write(f"experiment {exp.name}: {total:,} runs\n")
    if exp.description:
        out.write(f"  {exp.description}\n")
    grid = " x ".join(f"{n} ({k})" for n, k in axes_summary(exp))
    out.write(f"axes: {grid}\n")
    if args.samples > 0 and total:
        step = max(1, total // args.samples)
        picks = [exp.run_at(i) for i in range(0, total, step)][: args.samples]
        unread = 0
        for r in picks:
            kind = run_kind(r.config)
            out.write(f"\nrun {r.index} id {r.run_id} ({_KIND_NAMES[kind]}): "
                      f"{describe_run(r)}\n")
            for path, value in r.config.items():
                if not reads(r.config, path) and path not in r.axes and (
                        path not in SCHEMA or value == SCHEMA[path].default):
                    unread += 1  # another kind of run's key, at its default
                    continue
                mark = "*" if path in r.axes else " "
                out.write(f"  {mark} {path} = {json.dumps(value)}\n")
        out.write("\n(* = set by a sweep axis; null = the model's default")
        if unread:
            out.write("; keys only other kinds of runs read, at their defaults, are left out")
        out.write(")\n")
    if args.estimate:
        _estimate(exp, args.estimate, args.workers, args.file, out)
    return 0


def _estimate(exp, n: int, workers, file: str, out) -> None:
    """Run ``n`` runs spread evenly over the grid in this process and extrapolate: the median
    wall time of a run, times the runs, divided by the workers. The spread of the samples
    (fastest and slowest) bounds it, since runs of different axes values differ."""
    import statistics

    from .driver import _dur
    from .executors import make_executor
    from .runner import payload, run_one

    if n < 0:
        raise CliError(f"--estimate: expected a count of sample runs, got {n}")
    total = exp.total
    if not total:
        return
    w = make_executor("local", workers=workers).workers
    n = min(n, total)
    base = os.path.dirname(os.path.abspath(file))
    times = []
    for k in range(n):
        r = exp.run_at(k * total // n)
        rec = run_one(payload(r, base))
        if rec["status"] != "ok":
            raise CliError(f"--estimate: sample run {r.index} ({describe_run(r)}) failed: "
                           f"{rec['error']}")
        times.append(rec["wall_seconds"])
    med = statistics.median(times)
    per = total / w
    out.write(f"\nestimate: {n} sample run(s) took {min(times):.3g}-{max(times):.3g} s "
              f"(median {med:.3g} s); {total:,} runs on {w} worker(s): about "
              f"{_dur(med * per)} (between {_dur(min(times) * per)} and "
              f"{_dur(max(times) * per)})\n")


# ---------------------------------------------------------------- sweep run


def _configure_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="experiment file (TOML)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="results directory (default results/<experiment name>)")
    _seeds_argument(p)
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local worker processes (default) or a Ray cluster")
    p.add_argument("--workers", type=_positive, default=None, metavar="N",
                   help="runs in parallel (default: one per core, or the Ray cluster's CPUs)")
    p.add_argument("--address", default=None, metavar="ADDR",
                   help="Ray cluster: HOST:PORT of its head, ray://HOST:10001 for Ray "
                   "Client, or 'auto' (default: start a private local Ray)")
    p.add_argument("--resume", action="store_true",
                   help="keep the runs already in DIR and run only the others")
    p.add_argument("--retry-failed", action="store_true",
                   help="with --resume, run again the runs that ended with an error")
    p.add_argument("--force", action="store_true",
                   help="delete the results already in DIR and start again")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--quiet", "-q", action="store_true",
                   help="no progress, only the summary (for CI)")
    g.add_argument("--progress", choices=("auto", "rich", "plain", "quiet"), default="auto",
                   help="progress display (default: a bar on a terminal, a line every few "
                   "seconds otherwise)")
    p.add_argument("--function", choices=("run", "noop"), default=None,
                   help=argparse.SUPPRESS)


def _run_run(args: argparse.Namespace) -> int:
    from .driver import run_sweep

    if args.retry_failed and not args.resume:
        raise CliError("--retry-failed: only with --resume")
    if args.resume and args.force:
        raise CliError("--resume and --force: choose one")
    exp = _load(args)
    out = args.out or _default_out(exp.name)
    s = run_sweep(
        exp, out, executor=args.executor, workers=args.workers, address=args.address,
        resume=args.resume, force=args.force, retry_failed=args.retry_failed,
        progress="quiet" if args.quiet else args.progress,
        function=None if args.function in (None, "run") else args.function,
    )
    err = sys.stderr
    for desc, msg in s.errors[:10]:
        err.write(f"failed: {desc}: {msg}\n")
    if len(s.errors) > 10:
        err.write(f"... and {len(s.errors) - 10} more failures (see the error column)\n")
    ran = s.ok + s.failed
    rate = f", {s.wall_seconds / ran * 1e3:.1f} ms/run" if ran else ""
    print(
        f"{exp.name}: {s.done}/{s.total} runs done ({s.skipped} already done, {s.ok} ok, "
        f"{s.failed} failed) in {s.wall_seconds:.1f} s on {s.workers} {s.executor} "
        f"worker{'s' if s.workers != 1 else ''}{rate}; results in {s.path}"
    )
    if s.interrupted:
        by = f" by {s.stopped_by}" if s.stopped_by and s.stopped_by != "SIGINT" else ""
        err.write(f"vmemsim: interrupted{by}; continue with: vmemsim sweep run {args.file} "
                  f"--out {out} --resume\n")
        return EXIT_INTERRUPTED
    return 1 if s.failed else 0


# ---------------------------------------------------------------- sweep keys / status


def _configure_keys(p: argparse.ArgumentParser) -> None:
    pass


def _run_keys(args: argparse.Namespace) -> int:
    rows = schema_rows()
    w = max(len(r[0]) for r in rows)
    dw = max(len(r[1]) for r in rows)
    for path, default, doc in rows:
        print(f"{path:<{w}}  {default:<{dw}}  {doc}")
    return 0


def _configure_status(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", metavar="DIR", help="results directory of a sweep")


def _run_status(args: argparse.Namespace) -> int:
    from .store import ResultsStore

    store = ResultsStore(args.results)
    m = store.manifest()
    planned = set(m.get("run_ids", []))
    status: Dict[str, Any] = {}
    for r in store.records():
        if r["run_id"] in planned:
            status[r["run_id"]] = r.get("status")
    ok = sum(1 for v in status.values() if v == "ok")
    print(f"{m.get('experiment')}: {len(status)}/{len(planned)} runs done, {ok} ok, "
          f"{len(status) - ok} failed, {len(planned) - len(status)} to run")
    return 0


# ---------------------------------------------------------------- report


def _configure_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", metavar="RESULTS", help="results directory of a sweep")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="where to write the figures and index.html (default RESULTS/report)")
    p.add_argument("--experiment", metavar="FILE", default=None,
                   help="take the figures from this experiment file instead of the one "
                   "stored with the results")


def _run_report(args: argparse.Namespace) -> int:
    from .. import report
    from .store import open_results

    res = open_results(args.results)
    exp = load_experiment(args.experiment) if args.experiment else res.experiment()
    if not exp.figures:
        raise CliError(f"{exp.path or args.results}: declares no [[report.figures]]")
    out = args.out or os.path.join(res.path, "report")
    paths = report.write_report(
        res.table(), exp.figures, out, title=exp.name, description=exp.description,
        series_loader=res.series, side_loader=res.side, config=tomllib.loads(exp.source),
    )
    print(f"report: {len(paths)} files in {out} (open {os.path.join(out, 'index.html')})")
    return 0


register_group("sweep", "plan and run experiments (grids of runs) and store their results")
register("sweep plan", "expand an experiment file and show its runs", _configure_plan,
         _run_plan, description="Expand an experiment file: the number of runs, its axes, "
         "and a few expanded configurations.")
register("sweep run", "run an experiment, storing each run as it finishes", _configure_run,
         _run_run, description="Run every run of an experiment on local worker processes or "
         "a Ray cluster. Each finished run is stored at once; --resume continues a sweep that "
         "was stopped. Exit status: 0 all runs ok, 1 some runs failed (recorded with their "
         "errors), 2 bad input, 74 an I/O error such as a full disk (the path named; finished "
         "runs are kept), 130 interrupted (Ctrl-C, SIGTERM or SIGHUP: finished runs are kept "
         "and the table written).")
register("sweep keys", "list every configuration key with its default", _configure_keys,
         _run_keys)
register("sweep status", "how far a sweep has got", _configure_status, _run_status)
register("report", "figures and an HTML report from a sweep's results", _configure_report,
         _run_report, description="Write the figures declared in the experiment's "
         "[[report.figures]] as PNG and SVG, and an index.html embedding them with summary "
         "tables.")

"""Experiment files, their expansion, the local executor and the results store."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import vmemsim
from vmemsim import VmemsimError
from vmemsim.sweep import (
    LocalExecutor,
    WorkerDied,
    load_experiment,
    open_results,
    parse_experiment,
    run_sweep,
)

import sweep_fns

TRACE = "gen:zipf:pages=500,alpha=0.9,n=5000"


def exp(body: str, name: str = "t"):
    return parse_experiment(f'[experiment]\nname = "{name}"\n' + textwrap.dedent(body), "e.toml")


def write(tmp_path, body: str, name: str = "t", file: str = "e.toml"):
    p = tmp_path / file
    p.write_text(f'[experiment]\nname = "{name}"\n' + textwrap.dedent(body))
    return p


BASE = f"""
[machine]
frames = "25%"
[workload]
trace = "{TRACE}"
"""

# ---------------------------------------------------------------- expansion


def test_cartesian_count_and_order():
    e = exp("seeds = 3\n" + BASE + """
    [sweep]
    "machine.policy" = ["lru", "fifo", "clock"]
    machine.frames = ["10%", "50%"]
    """)
    assert e.total == 3 * 2 * 3 and len(list(e.runs())) == 18
    e = exp(BASE + """
    [sweep]
    "machine.policy" = ["lru", "fifo", "clock"]
    machine.frames = ["10%", "50%"]
    """)
    runs = list(e.runs())
    assert len(runs) == 6
    # First axis outermost, as written.
    assert [(r.config["machine.policy"], r.config["machine.frames"]) for r in runs] == [
        ("lru", "10%"), ("lru", "50%"), ("fifo", "10%"), ("fifo", "50%"),
        ("clock", "10%"), ("clock", "50%"),
    ]


def test_seeds_are_innermost_and_counted():
    e = parse_experiment('[experiment]\nname="s"\nseeds = 4\n' + BASE
                         + '[sweep]\n"machine.policy" = ["lru", "fifo"]\n', "e.toml")
    runs = list(e.runs())
    assert e.total == 8 and len(runs) == 8
    assert [r.seed for r in runs] == [0, 1, 2, 3, 0, 1, 2, 3]
    e = parse_experiment('[experiment]\nname="s"\nseeds = [7, 42]\n' + BASE, "e.toml")
    assert [r.seed for r in e.runs()] == [7, 42]


def test_zip_moves_together_and_cases_are_one_axis():
    e = exp(BASE + """
    [sweep]
    "machine.policy" = ["lru", "fifo"]
    [[sweep.zip]]
    "workload.name" = ["a", "b", "c"]
    "machine.frames" = [10, 20, 30]
    [[sweep.cases]]
    "machine.swappiness" = 10
    [[sweep.cases]]
    "machine.swappiness" = 100
    "machine.page_cluster" = 0
    """)
    runs = list(e.runs())
    assert len(runs) == 2 * 3 * 2
    pairs = {(r.config["workload.name"], r.config["machine.frames"]) for r in runs}
    assert pairs == {("a", 10), ("b", 20), ("c", 30)}
    cases = {(r.config["machine.swappiness"], r.config["machine.page_cluster"]) for r in runs}
    # The first case leaves page_cluster at the base (unset = model default).
    assert cases == {(10, None), (100, 0)}


def test_dotted_paths_nested_and_quoted_are_the_same():
    a = exp(BASE + '[sweep]\n"machine.options.scan_rand_p" = [0.2, 0.8]\n'
            '"machine.policy" = ["mglru"]\n')
    b = exp(BASE + '[sweep.machine]\npolicy = ["mglru"]\n[sweep.machine.options]\n'
            'scan_rand_p = [0.2, 0.8]\n')
    ra, rb = list(a.runs()), list(b.runs())
    assert [r.run_id for r in sorted(ra, key=lambda r: r.run_id)] == [
        r.run_id for r in sorted(rb, key=lambda r: r.run_id)]
    assert {r.config["machine.options.scan_rand_p"] for r in ra} == {0.2, 0.8}


def test_overrides_and_defaults_fill_every_key():
    e = exp(BASE + "[sweep]\n\"machine.swappiness\" = [0, 200]\n")
    r = next(e.runs())
    assert r.config["machine.swappiness"] == 0
    assert r.config["machine.policy"] == "lru"  # schema default
    assert r.config["workload.page_size"] == 4096
    assert r.config["machine.frames"] == "25%"
    assert r.axes == {"machine.swappiness": 0}


def test_run_id_is_a_hash_of_config_and_seed():
    e = exp(BASE + "[sweep]\n\"machine.policy\" = [\"lru\", \"fifo\"]\n")
    r = next(e.runs())
    canon = json.dumps({"config": r.config, "seed": r.seed}, sort_keys=True,
                       separators=(",", ":"))
    assert r.run_id == hashlib.sha256(canon.encode()).hexdigest()[:16]
    # The same run reached through another layout of axes has the same id.
    e2 = exp(BASE.replace('frames = "25%"', 'frames = "25%"\npolicy = "fifo"'))
    fifo = [x for x in e.runs() if x.config["machine.policy"] == "fifo"][0]
    assert next(e2.runs()).run_id == fifo.run_id
    ids = {x.run_id for x in parse_experiment('[experiment]\nname="s"\nseeds=5\n' + BASE,
                                              "e").runs()}
    assert len(ids) == 5


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "body, needle",
    [
        ('[machine]\npolcy = "lru"\nframes = 10\n[workload]\ntrace = "gen:seq:n=5"\n',
         "unknown key 'machine.polcy' (did you mean 'machine.policy'?)"),
        (BASE + '[sweep]\n"machine.framez" = [1, 2]\n', "sweep.machine.framez"),
        (BASE + "[machin]\nx = 1\n", "unknown section 'machin'"),
        (BASE + '[sweep]\nseed = [1, 2]\n', "seeds are set by experiment.seeds"),
        (BASE + '[[sweep.zip]]\n"machine.policy" = ["lru"]\n"machine.frames" = [1, 2]\n',
         "lists must have the same length"),
        (BASE + '[sweep]\n"machine.policy" = ["lru"]\n[[sweep.zip]]\n'
         '"machine.policy" = ["fifo"]\n', "machine.policy is swept twice"),
        (BASE + '[sweep]\n"machine.swappiness" = [10, "high"]\n',
         "sweep.machine.swappiness: expected an integer"),
        (BASE + '[sweep]\n"machine.swappiness" = 10\n', "a sweep axis is a list of values"),
        (BASE + '[sweep]\n"machine.policy" = ["lru", "lruu"]\n', "unknown policy 'lruu'"),
        ('[workload]\ntrace = "gen:seq:n=5"\n', "machine.frames: required"),
        (BASE.replace('"25%"', '"250x"'), "machine.frames"),
        (BASE + "[report]\nfigure = []\n", "unknown key 'report.figure'"),
    ],
)
def test_bad_files_name_the_key(body, needle):
    with pytest.raises(VmemsimError) as ei:
        exp(body)
    msg = str(ei.value)
    assert needle in msg and "e.toml" in msg and "\n" not in msg


@pytest.mark.parametrize(
    "key, schema, field",
    [
        ("machine.swappiness", "REPLAY_SCHEMA", "swappiness"),
        ("machine.page_cluster", "RUN_SCHEMA", "page_cluster"),
        ("machine.cpus", "RUN_SCHEMA", "cpus"),
        ("machine.slice_ns", "RUN_SCHEMA", "slice_ns"),
        ("run.step_ns", "RUN_SCHEMA", "step_ns"),
        ("vm.guest_levels", "VM_SCHEMA", "guest_levels"),
        ("vm.host_cpus", "VM_SCHEMA", "host_cpus"),
        ("vm.mmu_pages", "VM_SCHEMA", "mmu_pages"),
        ("vm.count", "VM_SCHEMA", "vms"),
    ],
)
def test_a_keys_range_is_the_cores(key, schema, field):
    # The sweep checks a setting's range before any run with the bounds the core declares in
    # its schema (which a core test holds equal to its own checks): 0..200 for swappiness,
    # 1..4096 CPUs, 4..5 levels, a shadow-page pool of 8 and more; no copy of them here.
    prop = getattr(vmemsim.api, schema)["properties"][field]
    lo, hi = int(prop["minimum"]), prop.get("maximum")
    section, name = key.split(".")

    def with_value(v):
        return exp(BASE + f"[{section}]\n{name} = {v}\n" if section != "machine"
                   else BASE.replace('frames = "25%"', f'frames = "25%"\n{name} = {v}'))

    with_value(lo)
    if lo > 0:
        with pytest.raises(VmemsimError, match=f"{key}: must be"):
            with_value(lo - 1)
    if hi is not None:
        with_value(int(hi))
        with pytest.raises(VmemsimError, match=f"{key}: must be {lo}..{int(hi)}, got {int(hi) + 1}"):
            with_value(int(hi) + 1)


@pytest.mark.parametrize("key,field,good,bad", [
    ("vm.paging", "paging", "ept", "nested"),
    ("vm.guest_page", "guest_page", "2mib", "2M"),
    ("vm.eviction", "eviction", "clock-leaf", "lru"),
    ("machine.kernel", "kernel", "6.1", "5.15"),
])
def test_a_keys_names_are_the_cores(key, field, good, bad):
    # Names come from the core's schema, written beside its parser: the sweep takes the
    # aliases the core takes (ept is tdp; 2mib is 2m), which a copy here once refused, and
    # refuses what the core refuses (the core's page sizes are lower case).
    section, name = key.split(".")

    def with_value(v):
        return exp(BASE + f'[{section}]\n{name} = "{v}"\n' if section != "machine"
                   else BASE.replace('frames = "25%"', f'frames = "25%"\n{name} = "{v}"'))

    with_value(good)
    with pytest.raises(VmemsimError, match=f"{key}: '{bad}' is not one of"):
        with_value(bad)


@pytest.mark.parametrize("value,ok", [
    ('"5000%"', True),       # the core takes up to 100,000% (the sweep's copy stopped at 1000%)
    ('"100001%"', False),
    ("1", True),
    ("0", False),
    ('"0%"', False),
    ("268435456", True),     # 1 TiB of frames, the simulator's limit
    ("268435457", False),
    ('"lots"', False),
    ("true", False),
])
def test_frames_are_checked_by_the_cores_parser(value, ok):
    text = BASE.replace('frames = "25%"', f"frames = {value}")
    if ok:
        exp(text)
    else:
        with pytest.raises(VmemsimError, match="machine.frames: "):
            exp(text)


def test_watermarks_shape_is_the_schemas():
    # [min, low, high]: the schema's three whole numbers >= 0 (the core's order check,
    # min <= low <= high, is the run's)
    assert vmemsim.api.REPLAY_SCHEMA["properties"]["watermarks"]["minItems"] == 3
    exp(BASE.replace('frames = "25%"', 'frames = "25%"\nwatermarks = [1, 2, 3]'))
    for bad in ("[1, 2]", "[1, -2, 3]", "[1, 2, 3, 4]", '"1,2,3"'):
        with pytest.raises(VmemsimError, match="machine.watermarks: expected a list of 3 whole"):
            exp(BASE.replace('frames = "25%"', f'frames = "25%"\nwatermarks = {bad}'))


def test_missing_name_and_bad_toml():
    with pytest.raises(VmemsimError, match="experiment.name: required"):
        parse_experiment(BASE, "x.toml")
    with pytest.raises(VmemsimError, match="x.toml: not valid TOML"):
        parse_experiment("[experiment\nname=1", "x.toml")


def test_check_runs_catches_bad_options_and_missing_files(tmp_path):
    p = write(tmp_path, BASE + '[machine.options]\nno_such_knob = 3\n')
    with pytest.raises(VmemsimError, match="no_such_knob"):
        run_sweep(load_experiment(p), tmp_path / "out", progress="quiet")
    p = write(tmp_path, BASE.replace(TRACE, "missing.txt"))
    with pytest.raises(VmemsimError, match="no such trace file"):
        run_sweep(load_experiment(p), tmp_path / "out2", progress="quiet")


# ---------------------------------------------------------------- runs and the store


def test_sweep_results_match_direct_replays(tmp_path):
    p = write(tmp_path, "seeds = 2\n" + BASE + """
    [sweep]
    "machine.policy" = ["lru", "clock-lru"]
    "machine.frames" = ["10%", 120]
    """)
    s = run_sweep(load_experiment(p), tmp_path / "res", workers=2, progress="quiet")
    assert (s.total, s.ok, s.failed, s.skipped) == (8, 8, 0, 0)
    df = open_results(tmp_path / "res").table()
    assert len(df) == 8 and df["run_id"].is_unique
    assert set(df["status"]) == {"ok"}
    assert set(df["version"]) == {vmemsim.__version__}
    # Mixed int/str values of one key share a string column.
    assert set(df["machine.frames"]) == {"10%", "120"}
    for _, row in df.iterrows():
        direct = vmemsim.replay(TRACE, policy=row["machine.policy"],
                                frames=row["machine.frames"], seed=int(row["seed"]))
        assert row["faults"] == direct.faults
        assert row["major_faults"] == direct.major_faults
        assert row["frames"] == direct.frames
        assert row["workload.name"] == TRACE  # the label defaults to the trace


def test_parquet_is_readable_by_polars(tmp_path):
    pl = pytest.importorskip("polars")
    p = write(tmp_path, BASE)
    run_sweep(load_experiment(p), tmp_path / "res", workers=1, progress="quiet")
    t = pl.read_parquet(tmp_path / "res" / "results.parquet")
    assert t.height == 1 and t["faults"][0] == vmemsim.replay(TRACE, frames="25%").faults


def test_a_failing_run_is_recorded_and_the_sweep_goes_on(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("1\n2\nnot-a-page\n")
    p = write(tmp_path, BASE + f'[sweep]\n"workload.trace" = ["{TRACE}", "bad.txt"]\n')
    s = run_sweep(load_experiment(p), tmp_path / "res", workers=2, progress="quiet")
    assert (s.ok, s.failed) == (1, 1)
    df = open_results(tmp_path / "res").table()
    err = df[df["status"] == "error"].iloc[0]
    assert "bad.txt" in err["error"] and "line 3" in err["error"]
    assert df[df["status"] == "ok"].iloc[0]["faults"] > 0


def test_existing_results_need_resume_or_force(tmp_path):
    p = write(tmp_path, BASE)
    e = load_experiment(p)
    run_sweep(e, tmp_path / "res", progress="quiet")
    with pytest.raises(VmemsimError, match="--resume"):
        run_sweep(e, tmp_path / "res", progress="quiet")
    s = run_sweep(e, tmp_path / "res", progress="quiet", resume=True)
    assert (s.skipped, s.ok) == (1, 0)
    s = run_sweep(e, tmp_path / "res", progress="quiet", force=True)
    assert (s.skipped, s.ok) == (0, 1)
    other = write(tmp_path, BASE, name="other", file="o.toml")
    with pytest.raises(VmemsimError, match="holds experiment 't'"):
        run_sweep(load_experiment(other), tmp_path / "res", progress="quiet", resume=True)


def test_time_series_side_files(tmp_path):
    p = write(tmp_path, BASE + "[run]\nsample_every = 1000\n")
    run_sweep(load_experiment(p), tmp_path / "res", progress="quiet")
    res = open_results(tmp_path / "res")
    df = res.table()
    ser = res.series(df["run_id"][0])
    assert list(ser["accesses"]) == [1000, 2000, 3000, 4000, 5000]
    assert ser["faults"].iloc[-1] == df["faults"][0]


# ---------------------------------------------------------------- kill and resume


def test_kill_mid_sweep_then_resume_loses_and_duplicates_nothing(tmp_path):
    p = write(tmp_path, "seeds = 40\n" + """
    [machine]
    frames = "25%"
    [workload]
    trace = "gen:zipf:pages=20000,alpha=0.9,n=200000"
    [sweep]
    "machine.policy" = ["lru", "fifo", "clock"]
    """)
    out = tmp_path / "res"
    runs_dir = out / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "vmemsim", "sweep", "run", str(p), "--out", str(out),
         "--workers", "2", "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if runs_dir.is_dir() and len([n for n in os.listdir(runs_dir) if n.endswith(".json")]) >= 15:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)  # no chance to clean up
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the sweep finished before it was killed"
    before = {n: (runs_dir / n).stat().st_mtime_ns for n in os.listdir(runs_dir)
              if n.endswith(".json")}
    assert 15 <= len(before) < 120
    for n in before:  # every record on disk is whole
        json.loads((runs_dir / n).read_text())
    r = subprocess.run(
        [sys.executable, "-m", "vmemsim", "sweep", "run", str(p), "--out", str(out),
         "--workers", "2", "--quiet", "--resume"],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert f"({len(before)} already done" in r.stdout
    after = {n: (runs_dir / n).stat().st_mtime_ns for n in os.listdir(runs_dir)
             if n.endswith(".json")}
    assert len(after) == 120
    assert all(after[n] == t for n, t in before.items()), "a finished run was recomputed"
    assert not [n for n in os.listdir(runs_dir) if n.startswith(".tmp-")]
    df = open_results(out).table()
    assert len(df) == 120 and df["run_id"].is_unique and set(df["status"]) == {"ok"}
    e = load_experiment(p)
    assert set(df["run_id"]) == {x.run_id for x in e.runs()}


# ---------------------------------------------------------------- the local executor


def _payloads(n):
    return ({"run_id": str(i), "x": i} for i in range(n))


def test_local_executor_runs_everything_once():
    with LocalExecutor(2) as ex:
        got = {p["x"]: r["value"] for p, r in ex.map_unordered(sweep_fns.square, _payloads(30))}
    assert got == {i: i * i for i in range(30)}


def test_local_executor_survives_errors_and_dead_workers():
    with LocalExecutor(2) as ex:
        out = {p["x"]: r for p, r in ex.map_unordered(sweep_fns.maybe_fail, _payloads(10))}
    assert set(out) == set(range(10))
    assert isinstance(out[3], RuntimeError) and "three is not allowed" in str(out[3])
    assert isinstance(out[5], WorkerDied) and "signal 9" in str(out[5])
    assert all(out[i]["value"] == i * i for i in range(10) if i not in (3, 5))


def test_local_executor_pulls_payloads_lazily():
    pulled = []

    def gen():
        for i in range(50):
            pulled.append(i)
            yield {"run_id": str(i), "x": i}

    with LocalExecutor(2) as ex:
        it = ex.map_unordered(sweep_fns.slow, gen())
        next(it)
        # Two workers: two payloads out, then one more after the first result.
        assert len(pulled) <= 3
        it.close()
    assert len(pulled) <= 3


# ---------------------------------------------------------------- the CLI


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "vmemsim", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_cli_plan_prints_count_and_samples(tmp_path):
    p = write(tmp_path, "seeds = 10\n" + BASE + """
    [sweep]
    "machine.policy" = ["lru", "fifo", "clock", "arc"]
    "machine.frames" = ["5%", "10%", "25%", "50%", "75%", "100%"]
    """)
    r = _cli("sweep", "plan", str(p), "--samples", "2")
    assert r.returncode == 0, r.stderr
    assert "240 runs" in r.stdout
    assert "machine.policy (4) x machine.frames (6) x seeds (10)" in r.stdout
    assert r.stdout.count("\nrun ") == 2
    j = json.loads(_cli("sweep", "plan", str(p), "--json").stdout)
    assert j["total"] == 240 and len(j["runs"]) == 240


def _plan_keys(out: str) -> set:
    """The keys of the expanded configurations in `sweep plan`'s text."""
    return {line[4:].split(" = ")[0] for line in out.splitlines()
            if line.startswith("  ") and " = " in line}


def test_cli_plan_lists_only_the_keys_the_run_reads(tmp_path):
    from vmemsim.sweep.spec import SCHEMA

    replay = write(tmp_path, BASE + '[sweep]\n"machine.policy" = ["lru", "fifo"]\n')
    r = _cli("sweep", "plan", str(replay), "--samples", "2")
    assert r.returncode == 0, r.stderr
    keys = _plan_keys(r.stdout)
    # a replay has no VM and no timed machine
    assert not {k for k in keys if k.startswith("vm.")}
    assert not keys & {"machine.cpus", "machine.swap", "machine.cgroup", "machine.slice_ns",
                       "run.step_ns", "run.sample_every_ns"}
    # what it reads is all there
    assert {"machine.policy", "machine.frames", "machine.swappiness", "machine.kernel",
            "machine.read_ahead_kb", "workload.trace", "workload.format",
            "run.sample_every"} <= keys
    assert "left out" in r.stdout and r.stdout.count("(a trace replay)") == 2
    vm = write(tmp_path, """
    [machine]
    frames = "200%"
    [workload]
    guest = "stress-vm:bytes=1MiB"
    [sweep]
    "vm.paging" = ["tdp", "shadow"]
    """, file="vm.toml")
    r = _cli("sweep", "plan", str(vm), "--samples", "1")
    assert r.returncode == 0, r.stderr
    keys = _plan_keys(r.stdout)
    assert {p for p in SCHEMA if p.startswith("vm.")} <= keys
    assert "workload.format" not in keys and "machine.swappiness" not in keys
    # --json is unchanged: every run's axes
    j = json.loads(_cli("sweep", "plan", str(replay), "--json").stdout)
    assert [r["axes"] for r in j["runs"]] == [{"machine.policy": "lru"},
                                              {"machine.policy": "fifo"}]


def test_cli_errors_are_one_line(tmp_path):
    p = write(tmp_path, BASE + "[machine.extra]\nx = 1\n")
    r = _cli("sweep", "plan", str(p))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("vmemsim: error: ")
    assert "machine.extra.x" in r.stderr
    r = _cli("sweep", "run", str(tmp_path / "nope.toml"))
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_cli_run_status_and_exit_codes(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("oops\n")
    p = write(tmp_path, "seeds = 2\n" + BASE + f'[sweep]\n"workload.trace" = ["{TRACE}", "bad.txt"]\n')
    r = _cli("sweep", "run", str(p), "--out", str(tmp_path / "res"), "--progress", "plain")
    assert r.returncode == 1, r.stderr  # some runs failed
    assert "4/4 runs done" in r.stdout and "2 failed" in r.stdout
    assert "t: 4/4 runs, 2 failed" in r.stderr  # the plain progress line
    assert r.stderr.count("failed: workload.trace=bad.txt") == 2
    r = _cli("sweep", "status", str(tmp_path / "res"))
    assert "4/4 runs done, 2 ok, 2 failed, 0 to run" in r.stdout
    # Retrying the failures runs them (and they fail again); the good ones are kept.
    r = _cli("sweep", "run", str(p), "--out", str(tmp_path / "res"), "-q", "--resume",
             "--retry-failed")
    assert "(2 already done, 0 ok, 2 failed)" in r.stdout and r.stderr.count("failed:") == 2


def test_cli_keys_lists_the_schema():
    r = _cli("sweep", "keys")
    assert r.returncode == 0
    assert "machine.policy" in r.stdout and "machine.options.KEY" in r.stdout


def test_cli_report_writes_the_declared_figures(tmp_path):
    p = write(tmp_path, "seeds = 3\n" + BASE + """
    [run]
    sample_every = 1000
    [sweep]
    "machine.policy" = ["lru", "fifo"]
    "machine.frames" = ["10%", "50%"]
    [[report.figures]]
    name = "miss"
    kind = "line"
    metric = "miss_ratio"
    x = "machine.frames"
    group = "machine.policy"
    [[report.figures]]
    name = "over-time"
    kind = "timeseries"
    metric = "faults"
    group = "machine.policy"
    where = { "machine.frames" = "10%" }
    """)
    r = _cli("sweep", "run", str(p), "--out", str(tmp_path / "res"), "-q")
    assert r.returncode == 0, r.stderr
    r = _cli("report", str(tmp_path / "res"), "--out", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stderr
    names = sorted(os.listdir(tmp_path / "rep"))
    assert names == ["index.html", "miss.png", "miss.svg", "over-time.png", "over-time.svg"]
    assert (tmp_path / "rep" / "miss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (tmp_path / "rep" / "index.html").read_text()
    df = open_results(tmp_path / "res").table()
    mean = df[(df["machine.policy"] == "fifo") & (df["machine.frames"] == "50%")][
        "miss_ratio"].mean()
    assert f"{mean:.4g}" in html  # the summary table holds the mean across seeds
    # No figures declared: a clear error.
    q = write(tmp_path, BASE, file="nofig.toml")
    _cli("sweep", "run", str(q), "--out", str(tmp_path / "res2"), "-q")
    r = _cli("report", str(tmp_path / "res2"))
    assert r.returncode == 2 and "declares no [[report.figures]]" in r.stderr


def test_rich_progress_bar_renders(tmp_path):
    p = write(tmp_path, "seeds = 4\n" + BASE)
    r = _cli("sweep", "run", str(p), "--out", str(tmp_path / "res"), "--progress", "rich")
    assert r.returncode == 0, r.stderr
    assert "4/4" in r.stderr and "0 failed" in r.stderr and "ETA" in r.stderr


# ---------------------------------------------------------------- signals, full disk, bad records


def test_sigterm_stops_a_sweep_like_ctrl_c(tmp_path):
    # SIGTERM (and SIGHUP) used to end a sweep with no message and no results table. Now:
    # exit 130, the resume command, the table of what finished, nothing recomputed after.
    p = write(tmp_path, "seeds = 40\n" + """
    [machine]
    frames = "25%"
    [workload]
    trace = "gen:zipf:pages=20000,alpha=0.9,n=200000"
    [sweep]
    "machine.policy" = ["lru", "fifo", "clock"]
    """)
    out = tmp_path / "res"
    runs_dir = out / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "vmemsim", "sweep", "run", str(p), "--out", str(out),
         "--workers", "2", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if runs_dir.is_dir() and len([n for n in os.listdir(runs_dir) if n.endswith(".json")]) >= 10:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted by SIGTERM" in err and "--resume" in err
    done = [n for n in os.listdir(runs_dir) if n.endswith(".json")]
    assert 10 <= len(done) < 120
    df = open_results(out).table()  # the table was written on the way out
    assert len(df) == len(done) and set(df["status"]) == {"ok"}
    r = _cli("sweep", "run", str(p), "--out", str(out), "--workers", "2", "--quiet", "--resume")
    assert r.returncode == 0, r.stderr
    assert open_results(out).table()["run_id"].nunique() == 120


def test_a_truncated_run_record_is_quarantined_and_run_again(tmp_path):
    p = write(tmp_path, "seeds = 3\n" + BASE)
    out = tmp_path / "res"
    assert _cli("sweep", "run", str(p), "--out", str(out), "--quiet").returncode == 0
    recs = sorted((out / "runs").glob("*.json"))
    assert len(recs) == 3
    bad = recs[1]
    bad.write_text(bad.read_text()[:40])  # cut mid-record, as a crash or a full disk leaves it
    r = _cli("sweep", "status", str(out))
    assert r.returncode == 0, r.stderr
    assert "unreadable run record" in r.stderr and "quarantine" in r.stderr
    assert (out / "runs" / "quarantine" / bad.name).exists() and not bad.exists()
    r = _cli("sweep", "run", str(p), "--out", str(out), "--quiet", "--resume")
    assert r.returncode == 0, r.stderr
    assert "(2 already done" in r.stdout
    assert bad.exists()  # run again and stored anew
    assert open_results(out).table()["run_id"].nunique() == 3


def test_a_full_disk_names_the_path_and_keeps_what_was_written(tmp_path, monkeypatch, capsys):
    import errno

    from vmemsim import cli
    from vmemsim.sweep.store import ResultsStore

    p = write(tmp_path, "seeds = 6\n" + BASE)
    out = tmp_path / "res"
    real = ResultsStore.write
    calls = []

    def write_until_full(self, rec):
        calls.append(rec["run_id"])
        if len(calls) > 2:
            path = os.path.join(self.runs_dir, f"{rec['run_id']}.json")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        real(self, rec)

    monkeypatch.setattr(ResultsStore, "write", write_until_full)
    code = cli.main(["sweep", "run", str(p), "--out", str(out), "--workers", "1", "--quiet"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_IO == 74
    assert "No space left on device" in err and str(out / "runs") in err
    assert "internal error" not in err
    assert len(list((out / "runs").glob("*.json"))) == 2  # what was written is kept


def test_run_at_is_the_indexed_run_without_expanding_the_grid(tmp_path):
    e = exp("seeds = 3\n" + BASE + """
    [sweep]
    "machine.policy" = ["lru", "fifo"]
    "machine.frames" = ["10%", "50%", "90%"]
    """)
    every = list(e.runs())
    assert [e.run_at(i) for i in range(e.total)] == every
    # A plan of 80 M runs (it used to expand them all: 6 GB) prints its count and samples at
    # once; --json, which lists every run, refuses it.
    p = write(tmp_path, "seeds = 10\n" + BASE + """
    [sweep]
    "machine.frames" = [""" + ", ".join(str(i) for i in range(1, 2001)) + """]
    "machine.swappiness" = [""" + ", ".join(str(i) for i in range(0, 200)) + """]
    "run.sample_every" = [""" + ", ".join(str(i) for i in range(20)) + """]
    """)
    r = _cli("sweep", "plan", str(p), "--samples", "3")
    assert r.returncode == 0, r.stderr
    assert "80,000,000 runs" in r.stdout and r.stdout.count("\nrun ") == 3
    r = _cli("sweep", "plan", str(p), "--json")
    assert r.returncode == 2 and "80,000,000 runs is more than" in r.stderr


# ---------------------------------------------------------------- expected time


def test_a_large_grid_says_its_expected_time_once_after_its_first_runs(tmp_path, monkeypatch,
                                                                       capsys):
    import vmemsim.sweep.driver as driver

    monkeypatch.setattr(driver, "ANNOUNCE_RUNS", 20)  # "large" for this test
    p = write(tmp_path, "seeds = 30\n" + BASE)
    s = run_sweep(load_experiment(p), tmp_path / "res", workers=1, progress="plain",
                  function="noop")
    assert s.ok == 30
    err = capsys.readouterr().err
    assert "30 runs; the expected time follows" in err
    said = [ln for ln in err.splitlines() if "expected about" in ln]
    # One worker: after max(8, 4 x 1) = 8 runs, 22 are left.
    assert len(said) == 1 and "for 22 runs (the first 8 took" in said[0], err
    # A grid under the threshold says nothing of the kind.
    p2 = write(tmp_path, "seeds = 19\n" + BASE, file="small.toml")
    run_sweep(load_experiment(p2), tmp_path / "res2", workers=1, progress="plain",
              function="noop")
    assert "expected" not in capsys.readouterr().err


def test_plan_estimate_extrapolates_sample_runs(tmp_path):
    p = write(tmp_path, "seeds = 40\n" + BASE)
    r = subprocess.run([sys.executable, "-m", "vmemsim", "sweep", "plan", str(p), "--samples",
                        "0", "--estimate", "3", "--workers", "2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("estimate:")]
    assert len(line) == 1 and "3 sample run(s) took" in line[0] \
        and "40 runs on 2 worker(s)" in line[0], r.stdout
    # The median of 3 samples of ~5,000-access replays, times 40 / 2: well under a minute.
    assert "about " in line[0] and "m" not in line[0].split("about ")[1].split(" ")[0]
    bad = subprocess.run([sys.executable, "-m", "vmemsim", "sweep", "plan", str(p),
                          "--estimate", "-1"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "--estimate" in bad.stderr

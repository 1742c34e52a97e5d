"""A trace replay's settings are declared once, in the core (`replay::ReplayConfig`).

`vmemsim.replay`, `vmemsim.mrc`, `vmemsim replay`, `vmemsim mrc` and a sweep's replay keys
take their defaults and their help from it (`vmemsim.api.REPLAY_DEFAULTS`, `REPLAY_SCHEMA`,
`replay_setting_help`), as timed runs do from `timed::RunConfig`; the binding's `replay` and
`miss_ratio_curve` take its JSON.
"""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest

import vmemsim
from vmemsim import VmemsimError, _native
from vmemsim.api import REPLAY_DEFAULTS, REPLAY_SCHEMA, replay_setting_help, run_setting_help


def _options(command: str) -> dict:
    from vmemsim.cli import build_parser

    sub = build_parser()._subparsers._group_actions[0].choices[command]
    return {o.dest: o for o in sub._actions}


def test_the_schema_documents_every_setting_with_its_default() -> None:
    props = REPLAY_SCHEMA["properties"]
    assert set(props) == set(REPLAY_DEFAULTS)
    for k, p in props.items():
        assert p.get("description"), k
        assert p["default"] == REPLAY_DEFAULTS[k], k
    # The machine of the defaults is the core's MachineConfig::new (the binding's old
    # defaults without a machine dict).
    assert REPLAY_DEFAULTS == {
        "policy": "lru", "frames": None, "seed": 0, "options": {}, "page_cluster": None,
        "watermarks": None, "swappiness": 60, "check_invariants": False, "swap_sync_io": False,
        "swap_rotational": None, "zram_pool": None, "kernel": "6.8", "read_ahead_kb": 128,
        "sample_every": 0, "warmup": 0, "zones": [], "swap_max_pages": None,
        # Linux's vm.watermark_boost_factor (mm/page_alloc.c).
        "watermark_boost_factor": 15000,
    }


def test_the_python_apis_defaults_are_the_cores() -> None:
    for fn in (vmemsim.replay, vmemsim.mrc):
        sig = inspect.signature(fn).parameters
        for k in ("policy", "seed", "page_cluster", "watermarks", "swappiness",
                  "check_invariants", "kernel", "read_ahead_kb", "watermark_boost_factor"):
            if k in sig:
                assert sig[k].default == REPLAY_DEFAULTS[k], (fn.__name__, k)
        assert sig["options"].default is None  # None: the empty table
    sig = inspect.signature(vmemsim.replay).parameters
    # None: 0, none.
    assert sig["sample_every"].default is None and REPLAY_DEFAULTS["sample_every"] == 0
    assert sig["warmup"].default is None and REPLAY_DEFAULTS["warmup"] == 0


def test_the_cli_and_the_sweep_show_the_cores_help() -> None:
    from vmemsim.cli import build_parser
    from vmemsim.sweep import runner
    from vmemsim.sweep.spec import SCHEMA

    # `vmemsim replay --help`: each setting's help starts with the core's documentation.
    replay = _options("replay")
    for dest, key in (("policy", "policy"), ("frames", "frames"), ("seed", "seed"),
                      ("opt", "options"), ("page_cluster", "page_cluster"),
                      ("swappiness", "swappiness"), ("watermarks", "watermarks"),
                      ("check_invariants", "check_invariants"), ("kernel", "kernel"),
                      ("sample_every", "sample_every"), ("content_class", "zram_pool.class")):
        text = replay_setting_help(key)
        assert replay[dest].help.startswith(text.replace("%", "%%")), dest
    assert replay_setting_help("swappiness") == "vm.swappiness, 0 to 200."
    # `vmemsim mrc` has the same machine, with the same help.
    mrc = _options("mrc")
    for dest in ("policy", "seed", "page_cluster", "swappiness", "watermarks"):
        assert mrc[dest].help.startswith(replay_setting_help(dest)), dest
    # The defaults of both commands are the core's.
    args = build_parser().parse_args(["replay", "--trace", "t", "--policy", "lru",
                                      "--frames", "5"])
    for k in ("seed", "page_cluster", "watermarks", "swappiness", "check_invariants",
              "kernel", "sample_every"):
        assert getattr(args, k) == REPLAY_DEFAULTS[k], k
    # The sweep's replay keys: the core's documentation and default.
    for path, arg in runner._REPLAY_KEYS.items():
        if path.startswith("workload."):
            continue  # the trace's reader, not the replay's settings
        assert replay_setting_help(arg) in SCHEMA[path].doc, path
        assert SCHEMA[path].default == REPLAY_DEFAULTS[arg], path
    # The machine's knobs mean the same in a timed run: one text for the shared sweep keys,
    # and `vmemsim run` shows RunConfig's.
    run = _options("run")
    for k in ("policy", "options", "page_cluster", "watermarks", "swappiness",
              "check_invariants"):
        assert replay_setting_help(k) == run_setting_help(k), k
    for k in ("frames", "seed", "page_cluster", "swappiness"):
        assert run[k].help.startswith(run_setting_help(k).replace("%", "%%")), k


def test_the_binding_reads_the_cores_json() -> None:
    pages = {"pages": np.arange(10, dtype=np.uint64)}
    # Unknown keys and bad values are errors naming them, with the ranges the binding's
    # machine dict had.
    for config, needle in [
        ({"frames": 3, "swapiness": 60}, r"^swapiness: unknown field"),
        ({"frames": 3, "swappiness": 201}, r"^swappiness: must be 0\.\.=200, got 201"),
        ({"frames": 3, "page_cluster": 11}, r"^page_cluster: must be 0\.\.=10, got 11"),
        ({"frames": 3, "watermarks": [3, 2, 1]},
         r"^watermarks: must satisfy min <= low <= high, got min 3, low 2, high 1"),
        ({"frames": 3, "kernel": "5.0"}, r"^kernel: unknown kernel version '5\.0'; valid: "),
        ({"frames": 3, "swap_rotational": 0}, r"^swap_rotational: must be 1\.\.=2\^28"),
        ({"frames": 3, "zram_pool": {"clas": "text"}}, r"^zram_pool\.clas: unknown field"),
        ({"frames": 3, "zram_pool": {"device": "ssd"}},
         r"^zram_pool\.device: expected zram\[:key=value,\.\.\.\], got 'ssd'"),
        ({}, r"^frames: required"),
    ]:
        with pytest.raises(VmemsimError, match=needle):
            _native.replay(pages, json.dumps(config))
    # The settings and the policy's options are checked before the trace is opened.
    with pytest.raises(VmemsimError, match="hnd"):
        _native.replay({"path": "/no/such/trace"},
                       json.dumps({"policy": "clock", "frames": 3, "options": {"hnd": "1"}}))
    # A miss-ratio curve takes the same machine, and not a single replay's settings.
    with pytest.raises(VmemsimError, match=r"^swappiness: must be 0\.\.=200, got 300"):
        _native.miss_ratio_curve(pages, json.dumps({"swappiness": 300}), sizes=[2])
    for key in ("frames", "sample_every", "warmup"):
        with pytest.raises(VmemsimError, match=f"^{key}: a setting of a single replay"):
            _native.miss_ratio_curve(pages, json.dumps({key: 2}), sizes=[2])
    out = json.loads(_native.miss_ratio_curve(pages, json.dumps({"policy": "fifo", "seed": 4}),
                                              sizes=[2, 20]))
    assert (out["policy"], out["seed"], [p["misses"] for p in out["points"]]) == ("fifo", 4,
                                                                                 [10, 10])


# The counters of replays with explicit settings, as the implementation before ReplayConfig
# (the binding's machine_config, zram_pool and policy_options, at dcfe6c1) computed them:
# each run's frames, page_cluster, swap, kernel, watermarks, series length and its
# (accesses, faults, major_faults, pswpin, pswpout, zram_mem_used_max).
TRACE = "gen:zipf:pages=3000,alpha=0.8,n=40000,write=0.3"
BEFORE = {
    "zram": (dict(policy="clock-lru", frames=1500, page_cluster=0, swap="zram:text_ratio=3",
                  content_class="text", swappiness=100, seed=3),
             (1500, 0, "zram", "6.8", (77, 96, 115), 0),
             (40000, 16594, 13622, 13622, 16051, 3584000)),
    "mglru61": (dict(policy="mglru", frames="30%", page_cluster=2, watermarks=(20, 40, 60),
                     kernel="6.1", swappiness=150, seed=5, sample_every=10000, warmup=5000),
                (892, 2, "disk", "6.1", (20, 40, 60), 4),
                (35000, 13408, 11883, 11891, 6415, 0)),
    "hdd": (dict(policy="clock-lru", frames=700, swap="hdd:size=64MiB", seed=1,
                 check_invariants=True),
            (700, 3, "hdd:size=64MiB", "6.8", (52, 65, 78), 0),
            (40000, 17915, 14822, 14921, 8508, 0)),
    "cgroup": (dict(policy="mglru", frames=900, swap="zram", cgroup=True, swappiness=10),
               (900, 3, "zram", "6.8", (60, 75, 90), 0),
               (40000, 16065, 13093, 13093, 15345, 0)),
    "options": (dict(policy="clock", frames="40%", options={"n_bit_counter": 2}, seed=7,
                     page_cluster=3),
                (1186, 3, "disk", "6.8", (0, 0, 0), 0),
                (40000, 10981, 8015, 8015, 5369, 0)),
}


@pytest.mark.parametrize("name", list(BEFORE))
def test_explicit_settings_give_the_counters_they_gave_before(name: str) -> None:
    kwargs, config, counters = BEFORE[name]
    r = vmemsim.replay(TRACE, **kwargs)
    assert (r.frames, r.page_cluster, r.swap, r.kernel, tuple(r.watermarks),
            len(r.series)) == config
    assert tuple(r.stats[k] for k in ("accesses", "faults", "major_faults", "pswpin",
                                      "pswpout", "zram_mem_used_max")) == counters


def test_a_curves_replays_give_the_misses_they_gave_before() -> None:
    # As the implementation before ReplayConfig computed them (dcfe6c1).
    c = vmemsim.mrc(TRACE, policy="clock-lru", sizes=[300, 1000, 2000], page_cluster=1,
                    swappiness=30, watermarks=(5, 10, 15), seed=2, workers=1)
    assert (c.method, c.misses) == ("replay", [23413, 13761, 6619])

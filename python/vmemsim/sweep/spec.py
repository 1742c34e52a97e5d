"""Experiment files: a base run configuration, a workload and the axes to sweep (TOML).

An experiment expands into runs. A run is its configuration (``machine``, ``workload`` and
``run`` tables, every key with its value filled in from the defaults) and a seed; its id is
a hash of both, so the same run always gets the same id and a resumed sweep knows what is
done. The layout of a file::

    [experiment]
    name = "policies"            # required
    description = "..."
    seeds = 10                   # seeds 0..9, or a list such as [1, 7, 42]

    [machine]                    # the base configuration: every key can be swept
    policy = "lru"
    frames = "25%"               # frames, or a percentage of the trace's distinct pages
    [machine.options]            # the policy's own key = value knobs

    [workload]
    trace = "gen:zipf:pages=20000,alpha=0.9,n=200000"   # or a path, relative to this file

    [sweep]                      # Cartesian axes, dotted path = list of values
    "machine.policy" = ["lru", "fifo"]
    [[sweep.zip]]                # lists of equal length that move together: one axis
    "workload.name" = ["zipf", "scan"]
    "workload.trace" = ["gen:zipf:...", "gen:scan:..."]
    [[sweep.cases]]              # explicit cases (tables of overrides): together one axis

    [[report.figures]]           # figures for `vmemsim report` (see vmemsim.report)

Every key of the configuration is described once in :data:`SCHEMA` (type, default,
meaning); later models add theirs with :func:`register_key`. A key not in the schema is an
error naming it and the closest known key.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import numbers
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from .. import _native
from .._native import VmemsimError
from .._hints import did_you_mean
from ..api import (COST_KEYS, REPLAY_DEFAULTS, REPLAY_SCHEMA, RUN_DEFAULTS, RUN_SCHEMA,
                   VM_DEFAULTS, VM_SCHEMA, replay_setting_help, run_setting_help, vm_setting_help)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

#: Sections of the run configuration (what a run is a function of, with its seed).
CONFIG_SECTIONS = ("machine", "workload", "run", "vm")
#: Top-level tables of an experiment file.
FILE_SECTIONS = ("experiment",) + CONFIG_SECTIONS + ("sweep", "report")


# ---------------------------------------------------------------- the schema


@dataclass(frozen=True)
class Key:
    """One configuration key: ``check(value, where)`` returns the value to use (normalised)
    or raises ``VmemsimError``; ``default`` is used when a file does not give it (``None`` =
    unset: the model's own default)."""

    check: Callable[[Any, str], Any]
    default: Any
    doc: str
    required: bool = False


#: Dotted path -> :class:`Key`. ``OPEN_TABLES`` are tables whose keys are free (checked by the
#: model that reads them, e.g. a policy's options).
SCHEMA: Dict[str, Key] = {}
OPEN_TABLES: Dict[str, str] = {}


def register_key(path: str, key: Key) -> None:
    """Add a configuration key (models of later layers register theirs here)."""
    if path.split(".")[0] not in CONFIG_SECTIONS:
        raise ValueError(f"{path}: configuration keys live under {', '.join(CONFIG_SECTIONS)}")
    if path in SCHEMA or path in OPEN_TABLES:
        raise ValueError(f"configuration key {path!r} registered twice")
    SCHEMA[path] = key


def register_open_table(path: str, doc: str) -> None:
    """A table whose keys are free-form scalars, checked by the model that reads them."""
    if path in SCHEMA or path in OPEN_TABLES:
        raise ValueError(f"configuration key {path!r} registered twice")
    OPEN_TABLES[path] = doc


def _type_name(v: Any) -> str:
    return {bool: "a boolean", str: "a string", int: "an integer", float: "a number",
            list: "a list", dict: "a table"}.get(type(v), type(v).__name__)


def check_str(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise VmemsimError(f"{where}: expected a string, got {_type_name(v)} ({v!r})")
    return v


def check_bool(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise VmemsimError(f"{where}: expected true or false, got {v!r}")
    return v


def check_int(lo: Optional[int] = None, hi: Optional[int] = None) -> Callable[[Any, str], int]:
    def check(v: Any, where: str) -> int:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise VmemsimError(f"{where}: expected an integer, got {_type_name(v)} ({v!r})")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            rng = f"{lo}..{hi}" if hi is not None else f"at least {lo}"
            raise VmemsimError(f"{where}: must be {rng}, got {v}")
        return int(v)

    return check


def check_choice(*choices: str) -> Callable[[Any, str], str]:
    def check(v: Any, where: str) -> str:
        s = check_str(v, where)
        if s not in choices:
            hint = did_you_mean(s, choices)
            raise VmemsimError(f"{where}: {s!r} is not one of {', '.join(choices)}{hint}")
        return s

    return check


def optional(check: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
    """``check``, or ``None`` meaning "the model's default". TOML has no null, so a file says
    so by leaving the key out; the string ``"default"`` also means it (to sweep over it)."""

    def opt(v: Any, where: str) -> Any:
        return None if v is None or v == "default" else check(v, where)

    return opt


def schema_check(schema: Mapping[str, Any], field: str) -> Callable[[Any, str], Any]:
    """The check of setting ``field`` from the core's schema of its kind of run
    (``RUN_SCHEMA``, ``REPLAY_SCHEMA``, ``VM_SCHEMA``): its type, for a name its choices
    (the schema's ``enum``, written beside the core's parser), and for an integer the range
    the core declares (``#[schemars(range)]``, which a core test holds equal to the checks of
    its ``build``), so that a sweep rejects a bad value before any run, with the core's
    bounds, without a second copy of them here. A setting that may be unset (``null``) also
    takes "default" (``optional``). Types other than integers, booleans and strings have
    checks of their own (frames, policies)."""
    prop = schema["properties"][field]
    types = prop.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    base = [t for t in types if t != "null"]
    if prop.get("enum"):
        # the names the core's parser takes, declared beside it
        check = check_choice(*prop["enum"])
    elif base == ["integer"]:
        lo, hi = prop.get("minimum"), prop.get("maximum")
        check = check_int(None if lo is None else int(lo), None if hi is None else int(hi))
    elif base == ["array"] and prop.get("items", {}).get("type") == "integer":
        check = check_int_list(prop)
    elif base == ["boolean"]:
        check = check_bool
    elif base == ["string"]:
        check = check_str
    else:
        raise ValueError(f"{field}: no check derived from the schema type {types!r}")
    return optional(check) if "null" in types else check


def check_frames(v: Any, where: str) -> Any:
    """Frames: a whole number, or a percentage string of the distinct pages, as the core's
    parser takes them (its bounds, not a copy here)."""
    if isinstance(v, bool) or not isinstance(v, (numbers.Integral, str)):
        raise VmemsimError(f"{where}: expected a frame count or a percentage like '25%', got {v!r}")
    try:
        _native.check_frames(str(v))
    except VmemsimError as e:
        # the core's message names its own key ("frames: ..."): name the sweep's instead
        raise VmemsimError(f"{where}: {str(e).split(': ', 1)[-1]}") from None
    return int(v) if isinstance(v, numbers.Integral) else v.strip()


def check_policy(v: Any, where: str) -> str:
    from ..api import policy_names

    name = check_str(v, where)
    names = policy_names()
    if name not in names:
        hint = did_you_mean(name, names) or f"; known: {', '.join(names)}"
        raise VmemsimError(f"{where}: unknown policy {name!r}{hint}")
    return name


def check_int_list(prop: Mapping[str, Any]) -> Callable[[Any, str], List[int]]:
    """A list of whole numbers as the schema ``prop`` declares it (its length, its items'
    lower bound): e.g. watermarks, [min, low, high] in pages."""
    lo_n, hi_n = prop.get("minItems"), prop.get("maxItems")
    lo = prop["items"].get("minimum")
    n = f"{lo_n}" if lo_n == hi_n else f"{lo_n or 0}..{hi_n if hi_n is not None else ''}"
    what = f"a list of {n} whole numbers" + (f" >= {int(lo)}" if lo is not None else "")

    def check(v: Any, where: str) -> List[int]:
        if (
            not isinstance(v, list)
            or (lo_n is not None and len(v) < lo_n)
            or (hi_n is not None and len(v) > hi_n)
            or any(isinstance(x, bool) or not isinstance(x, numbers.Integral)
                   or (lo is not None and x < lo) for x in v)
        ):
            raise VmemsimError(f"{where}: expected {what}, got {v!r}")
        return [int(x) for x in v]
    return check


def check_trace(v: Any, where: str) -> str:
    s = check_str(v, where)
    if not s.strip():
        raise VmemsimError(f"{where}: empty trace; give a path or gen:SPEC")
    return s


def _builtin_schema() -> None:
    reg = register_key
    # The replay keys and the machine's knobs take the core's defaults and documentation of
    # a replay (ReplayConfig and its schema), declared once there; a timed run's knobs are
    # the same (RunConfig's, which a test checks).
    REPLAY = REPLAY_DEFAULTS

    def replay(path: str, field: str, check: Optional[Callable[[Any, str], Any]] = None,
               note: str = "", required: bool = False) -> None:
        check = check or schema_check(REPLAY_SCHEMA, field)
        reg(path, Key(check, REPLAY[field], f"{note}{replay_setting_help(field)}",
                      required=required))

    replay("machine.policy", "policy", check_policy)
    replay("machine.frames", "frames", check_frames, required=True)
    replay("machine.swappiness", "swappiness")
    replay("machine.page_cluster", "page_cluster")
    replay("machine.watermarks", "watermarks")
    replay("machine.kernel", "kernel", note="replays: ")
    replay("machine.read_ahead_kb", "read_ahead_kb")
    replay("machine.check_invariants", "check_invariants")
    register_open_table("machine.options", "the policy's options, key = value")
    reg("workload.name", Key(optional(check_str), None,
        "label of the workload in tables and figures (unset: the trace)"))
    reg("workload.trace", Key(optional(check_trace), None,
        "trace path (relative to the experiment file) or gen:SPEC: a plain replay "
        "(give this or workload.model)"))
    reg("workload.model", Key(optional(check_str), None,
        "workload model spec for a timed run, e.g. 'ycsb-a:footprint=64MiB' "
        "('vmemsim run --help' lists the kinds; give this or workload.trace)"))
    reg("workload.guest", Key(optional(check_str), None,
        "guest workload spec for a VM run, e.g. 'stress-vm:bytes=64MiB' ('vmemsim vm "
        "--help'); machine.policy and machine.frames are then the guest's"))
    # The VM keys' defaults and documentation are the core's (VmRunConfig and its schema),
    # declared once there.
    VM = VM_DEFAULTS

    def vm(path: str, field: str, check: Optional[Callable[[Any, str], Any]] = None,
           note: str = "") -> None:
        check = check or schema_check(VM_SCHEMA, field)
        reg(path, Key(check, VM[field], f"VM runs{note}: {vm_setting_help(field)}"))

    vm("vm.paging", "paging")
    vm("vm.host_frames", "host_frames", check_frames)
    vm("vm.host_policy", "host_policy", check_policy)
    vm("vm.eviction", "eviction")
    vm("vm.mmu_pages", "mmu_pages")
    reg("vm.walk_caches", Key(check_bool, True,
        "VM runs: page-walk caches and the nested TLB on (false: a walk reads every entry)"))
    vm("vm.guest_levels", "guest_levels")
    vm("vm.host_levels", "host_levels")
    vm("vm.host_swap", "host_swap")
    vm("vm.guest_swap", "guest_swap")
    vm("vm.shared_disk", "shared_disk")
    vm("vm.host_cpus", "host_cpus")
    vm("vm.count", "vms")
    vm("vm.guest_page", "guest_page")
    vm("vm.host_page", "host_page")
    vm("vm.pt_pages", "pt_pages")
    vm("vm.cache_mode", "cache_mode")
    vm("vm.balloon", "balloon")
    vm("vm.deflate_on_oom", "deflate_on_oom")
    vm("vm.balloon_size_mib", "balloon_size_mib")
    vm("vm.mom", "mom")
    vm("vm.guest_swapoff", "guest_swapoff")
    vm("vm.qemu_text_pages", "qemu_text_pages")
    vm("vm.vswapper", "vswapper")
    reg("workload.format", Key(optional(check_str), None, "trace format (unset: detected)"))
    reg("workload.page_size", Key(check_int(1), 4096, "bytes per page of the trace"))
    reg("workload.addresses", Key(check_bool, False, "the trace holds byte addresses"))
    reg("workload.csv", Key(optional(check_str), None, "CSV column mapping"))
    replay("run.sample_every", "sample_every", note="replays: ")
    # The timed-run keys' defaults and documentation are the core's (RunConfig and its
    # schema), declared once there.
    RUN = RUN_DEFAULTS

    def timed(path: str, field: str, default: Any,
              check: Optional[Callable[[Any, str], Any]] = None) -> None:
        check = check or schema_check(RUN_SCHEMA, field)
        reg(path, Key(check, default, f"timed runs: {run_setting_help(field)}"))

    timed("run.sample_every_ns", "sample_every_ns", RUN["sample_every_ns"])
    timed("machine.cpus", "cpus", RUN["cpus"])
    timed("machine.swap", "device", RUN["device"])
    timed("machine.tlb", "tlb", RUN["tlb"])
    # cgroup is RunConfig.charge_device_ram inverted (RunConfig.cgroup); the sweep's key is
    # always set, to a boolean
    timed("machine.cgroup", "cgroup", not RUN["charge_device_ram"], check_bool)
    timed("machine.slice_ns", "slice_ns", RUN["slice_ns"])
    reg("machine.file_device", Key(schema_check(RUN_SCHEMA, "file_device"), RUN["file_device"],
        "timed and VM runs: " + run_setting_help("file_device")
        + " In a VM: the host's disk that holds the VMs' disk images."))
    timed("run.step_ns", "step_ns", RUN["step_ns"])
    register_open_table("vm.balloon_costs", "VM runs: " + vm_setting_help("balloon_costs")
                        + " Keys: " + ", ".join(VM["balloon_costs"]))
    register_open_table("vm.mom_config", "VM runs: " + vm_setting_help("mom_config")
                        + " Keys: " + ", ".join(VM["mom_config"]))
    register_open_table("machine.costs", "timed and VM runs: the one cost table, CPU time "
                        "of each event in ns (cpu_ghz in GHz, kvm_work_ns a list): "
                        + ", ".join(COST_KEYS) + "; vmemsim.COST_DEFAULTS has the defaults")


_builtin_schema()

#: Old key -> (its new key, the new value of an old value). A file that uses an old key
#: works as if it used the new one, with a one-line note on stderr.
DEPRECATED_KEYS: Dict[str, Tuple[str, Callable[[Any], Any]]] = {
    # --cgroup and vmemsim.run(cgroup=...) name it so; swap_charged = false is cgroup = true
    "machine.swap_charged": ("machine.cgroup", lambda v: (not v) if isinstance(v, bool) else v),
}
#: Old table -> its new table: a key under the old one works as the same key under the new
#: one, with a note on stderr.
DEPRECATED_TABLES: Dict[str, str] = {
    # VM runs read the one cost table, machine.costs, as timed runs do
    "vm.costs": "machine.costs",
}


def _renamed(flat: Mapping[str, Any], where: str) -> Dict[str, Any]:
    """``flat`` with deprecated keys under their new names (values converted), a note on
    stderr for each; an old key given with its new one is an error."""
    out: Dict[str, Any] = {}
    for path, value in flat.items():
        table = next((t for t in DEPRECATED_TABLES if path.startswith(t + ".")), None)
        if table is not None:
            moved = DEPRECATED_TABLES[table] + path[len(table):]
            if moved in flat:
                raise VmemsimError(f"{where}: {path} and {moved} are the same setting (the "
                                   f"first is its old name); give {moved}")
            out[moved] = value
            sys.stderr.write(f"vmemsim: note: {where}: [{table}] is deprecated; write "
                             f"{moved} = {json.dumps(value)}\n")
            continue
        if path not in DEPRECATED_KEYS:
            out[path] = value
            continue
        new, convert = DEPRECATED_KEYS[path]
        if new in flat:
            raise VmemsimError(f"{where}: {path} and {new} are the same setting (the first "
                               f"is its old name); give {new}")
        out[new] = [convert(v) for v in value] if isinstance(value, list) else convert(value)
        shown = json.dumps(out[new])
        sys.stderr.write(f"vmemsim: note: {where}: {path} is deprecated; write "
                         f"{new} = {shown}\n")
    return out


def _unknown(path: str, where: str) -> VmemsimError:
    known = list(SCHEMA) + [f"{t}.KEY" for t in OPEN_TABLES]
    hint = did_you_mean(path, known + list(DEPRECATED_KEYS))
    for old, (new, _) in DEPRECATED_KEYS.items():
        hint = hint.replace(f"'{old}'", f"'{new}'")  # near an old name: suggest its new one
    return VmemsimError(f"{where}: unknown key {path!r}{hint}")


def _open_table(path: str) -> Optional[str]:
    for t in OPEN_TABLES:
        if path.startswith(t + "."):
            return t
    return None


def check_value(path: str, value: Any, where: str) -> Any:
    """The checked value of configuration key ``path``; ``where`` prefixes messages."""
    key = SCHEMA.get(path)
    if key is not None:
        return key.check(value, where)
    table = _open_table(path)
    if table is not None:
        if "." in path[len(table) + 1:]:
            raise VmemsimError(f"{where}: {table} takes plain key = value pairs, not tables")
        if isinstance(value, bool) or isinstance(value, (str, numbers.Real)):
            return value
        raise VmemsimError(f"{where}: expected a string, number or boolean, got {value!r}")
    raise _unknown(path, where)


def flatten(table: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """Nested tables to ``{dotted.path: value}``; lists are values. A key containing dots
    (a quoted TOML key) counts as a path."""
    out: Dict[str, Any] = {}
    # Depth first with an explicit stack: a file may nest tables deeper than Python recurses.
    stack = [(prefix, iter(table.items()))]
    while stack:
        pre, items = stack[-1]
        for k, v in items:
            path = f"{pre}{k}"
            if isinstance(v, dict) and path not in SCHEMA:
                stack.append((path + ".", iter(v.items())))
                break
            out[path] = v
        else:
            stack.pop()
    return out


def unflatten(flat: Mapping[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for path, v in flat.items():
        node = out
        parts = path.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v
    return out


# ---------------------------------------------------------------- experiments and runs


@dataclass(frozen=True)
class Run:
    """One run: a full configuration and a seed."""

    #: 0-based position in the expansion order.
    index: int
    #: ``{dotted.path: value}`` for every key of the schema (``None`` = model default) and
    #: every option given.
    config: Dict[str, Any]
    seed: int
    run_id: str
    #: The swept paths and their values in this run (what tells it apart from the base).
    axes: Dict[str, Any] = field(default_factory=dict)

    def nested(self) -> Dict[str, Any]:
        return unflatten(self.config)


def run_id(config: Mapping[str, Any], seed: int) -> str:
    """16 hex digits of SHA-256 over the canonical JSON of the configuration and seed."""
    canon = json.dumps({"config": dict(config), "seed": seed}, sort_keys=True,
                       separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


@dataclass
class Axis:
    """One sweep axis: a list of override tables (one per value)."""

    name: str
    values: List[Dict[str, Any]]


@dataclass
class Experiment:
    name: str
    description: str
    seeds: List[int]
    base: Dict[str, Any]
    axes: List[Axis]
    figures: List[Dict[str, Any]]
    #: Where relative trace paths are resolved (the experiment file's directory).
    base_dir: str
    #: The file's text (stored with the results so a sweep can be re-run).
    source: str
    path: Optional[str] = None

    @property
    def total(self) -> int:
        n = len(self.seeds)
        for a in self.axes:
            n *= len(a.values)
        return n

    def run_at(self, index: int) -> Run:
        """Run number ``index`` of :meth:`runs` without expanding the others (a plan of
        millions of runs shows its samples in constant memory)."""
        if not 0 <= index < self.total:
            raise IndexError(index)
        rest, seed_i = divmod(index, len(self.seeds))
        picks = []
        for a in reversed(self.axes):
            rest, i = divmod(rest, len(a.values))
            picks.append(a.values[i])
        cfg = dict(self.base)
        axes: Dict[str, Any] = {}
        for overrides in reversed(picks):
            cfg.update(overrides)
            axes.update(overrides)
        seed = self.seeds[seed_i]
        return Run(index, cfg, seed, run_id(cfg, seed), axes)

    def runs(self) -> Iterator[Run]:
        """Every run in order: the axes as written (Cartesian axes, then zips, then cases),
        seeds innermost."""
        index = 0
        for combo in itertools.product(*(a.values for a in self.axes)):
            cfg = dict(self.base)
            axes: Dict[str, Any] = {}
            for overrides in combo:
                cfg.update(overrides)
                axes.update(overrides)
            for seed in self.seeds:
                yield Run(index, cfg, seed, run_id(cfg, seed), axes)
                index += 1


def _loc(file: str, path: str) -> str:
    return f"{file}: {path}"


def _check_config(flat: Mapping[str, Any], file: str, prefix: str = "") -> Dict[str, Any]:
    return {p: check_value(p, v, _loc(file, prefix + p)) for p, v in flat.items()}


def _defaults() -> Dict[str, Any]:
    return {p: copy.deepcopy(k.default) for p, k in SCHEMA.items()}


def _axis_values(v: Any, where: str) -> List[Any]:
    if not isinstance(v, list):
        raise VmemsimError(f"{where}: a sweep axis is a list of values, got {v!r}")
    if not v:
        raise VmemsimError(f"{where}: an empty list of values would give no runs")
    return v


def _sweep_paths(table: Mapping[str, Any], where: str) -> Dict[str, Any]:
    """``{path: value}`` of a sweep table, with every path checked to be a configuration key."""
    flat = _renamed(flatten(table), where)
    for p in flat:
        if p.split(".")[0] not in CONFIG_SECTIONS:
            if p == "seed" or p.startswith("experiment."):
                raise VmemsimError(f"{where}.{p}: seeds are set by experiment.seeds, not swept")
            raise _unknown(p, f"{where}.{p}")
        if p not in SCHEMA and _open_table(p) is None:
            raise _unknown(p, f"{where}.{p}")
    return flat


def parse_experiment(text: str, file: str = "<experiment>", base_dir: str = ".") -> Experiment:
    """Parse and check an experiment (TOML text). Errors name ``file`` and the key."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise VmemsimError(f"{file}: not valid TOML: {e}") from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively.
        raise VmemsimError(f"{file}: cannot parse: arrays or inline tables nested too deeply "
                           "(beyond Python's recursion limit)") from None
    for k in raw:
        if k not in FILE_SECTIONS:
            hint = did_you_mean(k, FILE_SECTIONS)
            raise VmemsimError(f"{file}: unknown section {k!r}{hint}; sections are "
                               f"{', '.join(FILE_SECTIONS)}")
        if not isinstance(raw[k], dict):
            raise VmemsimError(f"{file}: {k} must be a table ([{k}])")

    exp = raw.get("experiment", {})
    for k in exp:
        if k not in ("name", "description", "seeds"):
            raise VmemsimError(f"{file}: unknown key 'experiment.{k}' (known: name, "
                               "description, seeds)")
    if "name" not in exp:
        raise VmemsimError(f"{file}: experiment.name: required (the experiment's name)")
    name = check_str(exp["name"], _loc(file, "experiment.name"))
    if not name.strip():
        raise VmemsimError(f"{file}: experiment.name: must not be empty")
    description = check_str(exp.get("description", ""), _loc(file, "experiment.description"))
    seeds_raw = exp.get("seeds", 1)
    if isinstance(seeds_raw, list):
        seeds = [check_int(0, 2**64 - 1)(s, _loc(file, "experiment.seeds")) for s in seeds_raw]
        if not seeds:
            raise VmemsimError(f"{file}: experiment.seeds: an empty list would give no runs")
        if len(set(seeds)) != len(seeds):
            raise VmemsimError(f"{file}: experiment.seeds: a seed is listed twice")
    else:
        seeds = list(range(check_int(1, 100_000)(seeds_raw, _loc(file, "experiment.seeds"))))

    base = _defaults()
    given: Dict[str, Any] = {}
    for section in CONFIG_SECTIONS:
        given.update(flatten(raw.get(section, {}), section + "."))
    base.update(_check_config(_renamed(given, file), file))

    axes: List[Axis] = []
    swept: Dict[str, str] = {}

    def claim(path: str, axis: str) -> None:
        if path in swept:
            raise VmemsimError(f"{file}: {path} is swept twice ({swept[path]} and {axis})")
        swept[path] = axis

    sweep = dict(raw.get("sweep", {}))
    zips = sweep.pop("zip", [])
    cases = sweep.pop("cases", [])
    for path, vals in _sweep_paths(sweep, _loc(file, "sweep")).items():
        where = _loc(file, f"sweep.{path}")
        claim(path, f"sweep.{path}")
        values = [{path: check_value(path, v, where)} for v in _axis_values(vals, where)]
        axes.append(Axis(path, values))
    if not isinstance(zips, list) or not all(isinstance(z, dict) for z in zips):
        raise VmemsimError(f"{file}: sweep.zip: expected [[sweep.zip]] tables")
    for i, z in enumerate(zips):
        zname = f"sweep.zip[{i}]"
        flat = _sweep_paths(z, _loc(file, zname))
        if not flat:
            raise VmemsimError(f"{file}: {zname}: empty")
        lengths = {p: len(_axis_values(v, _loc(file, f"{zname}.{p}"))) for p, v in flat.items()}
        if len(set(lengths.values())) != 1:
            desc = ", ".join(f"{p} has {n}" for p, n in lengths.items())
            raise VmemsimError(f"{file}: {zname}: lists must have the same length ({desc})")
        for p in flat:
            claim(p, zname)
        n = next(iter(lengths.values()))
        values = [
            {p: check_value(p, flat[p][j], _loc(file, f"{zname}.{p}[{j}]")) for p in flat}
            for j in range(n)
        ]
        axes.append(Axis(" + ".join(flat), values))
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        raise VmemsimError(f"{file}: sweep.cases: expected [[sweep.cases]] tables")
    if cases:
        values = []
        paths: set = set()
        for i, c in enumerate(cases):
            cname = f"sweep.cases[{i}]"
            flat = _sweep_paths(c, _loc(file, cname))
            values.append({p: check_value(p, v, _loc(file, f"{cname}.{p}"))
                           for p, v in flat.items()})
            paths.update(flat)
        for p in sorted(paths):
            claim(p, "sweep.cases")
        # A case that leaves a path out uses the base value for it.
        values = [{p: v.get(p, base.get(p)) for p in sorted(paths)} | v for v in values]
        axes.append(Axis("cases", values))

    for path, key in SCHEMA.items():
        if key.required and base.get(path) is None and path not in swept:
            raise VmemsimError(f"{file}: {path}: required ({key.doc})")
    if all(base.get(p) is None and p not in swept
           for p in ("workload.trace", "workload.model", "workload.guest")):
        raise VmemsimError(f"{file}: workload: give workload.trace (a replay), "
                           "workload.model (a timed run) or workload.guest (a VM run)")

    report = raw.get("report", {})
    for k in report:
        if k != "figures":
            raise VmemsimError(f"{file}: unknown key 'report.{k}' (known: figures)")
    figures = report.get("figures", [])
    if not isinstance(figures, list) or not all(isinstance(f, dict) for f in figures):
        raise VmemsimError(f"{file}: report.figures: expected [[report.figures]] tables")
    return Experiment(name=name, description=description, seeds=seeds, base=base, axes=axes,
                      figures=figures, base_dir=base_dir, source=text)


def load_experiment(path: "str | os.PathLike[str]") -> Experiment:
    """Read and check an experiment file."""
    p = os.fsdecode(os.fspath(path))
    try:
        with open(p, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise VmemsimError(f"{p}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise VmemsimError(f"{p}: not UTF-8 text: {e}") from None
    exp = parse_experiment(text, p, os.path.dirname(os.path.abspath(p)))
    exp.path = os.path.abspath(p)
    return exp


def describe_run(run: Run) -> str:
    """``seed=3 machine.policy=lru machine.frames=25%``: what names a run to a person."""
    parts = [f"{p}={_short(v)}" for p, v in run.axes.items()]
    return " ".join(parts + [f"seed={run.seed}"])


def _short(v: Any) -> str:
    s = v if isinstance(v, str) else json.dumps(v)
    return s if len(s) <= 60 else s[:57] + "..."


def axes_summary(exp: Experiment) -> List[Tuple[str, int]]:
    out = [(a.name, len(a.values)) for a in exp.axes]
    return out + [("seeds", len(exp.seeds))]


def schema_rows() -> List[Tuple[str, str, str]]:
    """``(path, default, meaning)`` for every key (for ``vmemsim sweep keys``)."""
    rows = []
    for p, k in SCHEMA.items():
        d = "required" if k.required else ("(model default)" if k.default is None
                                             else json.dumps(k.default))
        rows.append((p, d, k.doc))
    for t, doc in OPEN_TABLES.items():
        rows.append((f"{t}.KEY", "", doc))
    return rows


def _sorted_paths(paths: Sequence[str]) -> List[str]:
    order = {p: i for i, p in enumerate(SCHEMA)}
    return sorted(paths, key=lambda p: (order.get(p, len(order)), p))

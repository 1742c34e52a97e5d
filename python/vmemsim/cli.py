"""The ``vmemsim`` command line.

Contract (scripts and tests rely on it):

- Every command that reads a trace takes TRACE as a path, with ``--format F`` (text, csv,
  oracle-general, native; detected when omitted), ``--page-size N`` (default 4096),
  ``--addresses`` (values are byte addresses) and ``--csv "column=...,op=..."`` (CSV column
  mapping); or as ``gen:SPEC``, a seeded generator (``vmemsim generate --help`` gives the
  grammar), seeded by ``--seed``.
- ``vmemsim replay --trace TRACE --policy NAME --frames N|P% [--seed S] [--json]
  [--opt KEY=VALUE ...] [--page-cluster N] [--swappiness N] [--watermarks MIN,LOW,HIGH]
  [--swap disk|zram] [--kernel 6.8|6.1] [--progress/--no-progress] [--sample-every N [--series-out OUT.csv]]``; ``--json`` prints one
  JSON object whose top level has at least ``accesses``, ``faults`` (every miss, cold
  included), ``major_faults``, ``policy``, ``frames``, ``seed`` and ``version`` (and
  ``series``, a list of counter dicts, with ``--sample-every``); ``--series-out`` writes the
  series as CSV, one row per sample, the header the counter names (``accesses`` first).
- ``vmemsim mrc --trace TRACE [--policy lru] [--sizes 10,100 | --points N] [--shards RATE]
  [--workers N] [--json] [--csv-out OUT]``: misses at each size; JSON with ``policy``,
  ``method``, ``trace``, ``seed``, ``version``, ``accesses`` and ``points`` (a list of
  ``frames``, ``misses``, ``miss_ratio``).
- ``vmemsim trace info TRACE [--json] [--no-reuse]``; JSON with at least ``accesses``,
  ``distinct_pages``, ``reads``, ``writes``, ``footprint_bytes``, ``min_page``, ``max_page``
  and ``reuse_distance`` (``p50``, ``p90``, ``p99``, ``max``, ``mean``; null without reuse).
- ``vmemsim trace convert IN OUT [--from F] [--to F]``: ``--to`` defaults by OUT's ending
  (``.vmt`` native, ``.oracleGeneral`` oracle-general, ``.csv``, anything else text).
  ``--from msr`` (block I/O CSV, MSR Cambridge / SNIA) or ``--from lackey [--ifetch]``
  (valgrind lackey ``--trace-mem=yes`` output) imports into a recorded trace (native v2)
  whatever OUT's ending, and prints the record counts.
- ``vmemsim trace read TRACE [--json]``: reads the whole trace; prints the accesses and
  M accesses/s (the cost of reading alone).
- ``vmemsim trace record [--out F] [--page-size N] [--ifetch] [--json] -- CMD ARGS``: runs
  CMD under the Valgrind recorder (:mod:`vmemsim.recorder`), writes a recorded trace
  (native version 2), prints a summary on stderr (or JSON on stdout) and exits with CMD's
  status.
- ``vmemsim generate SPEC --out PATH [--to F] [--seed S]``: writes a generated trace
  (native unless ``--to`` or OUT's ending says otherwise).
- ``vmemsim policies`` prints one line per registered policy: name, family, description.
- ``vmemsim demo`` runs a small real comparison of every policy.
- Long runs print a progress line on stderr when it is a terminal, or with ``--progress``.
- Any bad input prints exactly one line ``vmemsim: error: <message>`` on stderr and exits
  with status 2; never a traceback.

Adding a subcommand: write ``configure(parser)`` and ``run(args) -> int`` and call
:func:`register` (``"trace info"`` makes a ``trace`` group with an ``info`` command;
:func:`register_group` gives the group its help line). ``configure`` can reuse
:func:`add_trace_arguments`, :func:`add_policy_arguments` and :func:`add_progress_argument`,
and ``run`` can turn them back into :func:`vmemsim.replay` arguments with
:func:`replay_kwargs` (:func:`trace_kwargs` for the trace alone) and a progress line with
:func:`make_progress`. ``run`` raises ``VmemsimError`` or :class:`CliError` for bad input.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, NoReturn, Optional, Sequence, TextIO, TypeVar

from ._hints import did_you_mean
from . import _native
from .api import (
    GEN_PREFIX,
    MissRatioCurve,
    COST_DEFAULTS,
    COST_KEYS,
    VM_DEFAULTS,
    RUN_DEFAULTS,
    REPLAY_DEFAULTS,
    REPLAY_SCHEMA,
    RUN_SCHEMA,
    VM_SCHEMA,
    setting_choices,
    vm_setting_help,
    run_setting_help,
    replay_setting_help,
    ReplayResult,
    RunResult,
    TraceInfo,
    VmemsimError,
    IMPORT_NAMES,
    convert,
    import_trace,
    mrc,
    output_format,
    policies,
    read_trace,
    replay,
    run as vmemsim_run,
    run_vm,
    trace_info,
)

T = TypeVar("T")

PROG = "vmemsim"

#: Exit status for bad input (as argparse uses for usage errors).
EXIT_USAGE = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130
#: Exit status when the machine refused an operation (disk full, no permission, a path that
#: vanished): the environment, not bad input and not a bug (sysexits.h's EX_IOERR).
EXIT_IO = 74


class CliError(Exception):
    """Bad command-line input found by the CLI itself (reported like a VmemsimError)."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``vmemsim: error: <message>`` and status 2."""

    def error(self, message: str) -> NoReturn:
        hint = f" (see '{self.prog} --help')"
        _print_error(message + hint)
        sys.exit(EXIT_USAGE)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        # argparse reports a missing required option before an unknown one, so a typo such
        # as --polcy read "the following arguments are required: --policy". Look for
        # unknown options first, and name the nearest known one.
        if args is not None:
            self._check_options(list(args))
        return super().parse_known_args(args, namespace)

    def _check_options(self, args: List[str]) -> None:
        if any(isinstance(a, argparse._SubParsersAction) for a in self._actions):
            return  # the subcommand's parser checks its own options
        if any(a.nargs == argparse.REMAINDER for a in self._actions):
            return  # a command line to run follows (trace record -- CMD ...)
        known = [o for a in self._actions for o in a.option_strings]
        for tok in args:
            if tok == "--":
                return
            if not tok.startswith("--") or tok == "--":
                continue
            name = tok.split("=", 1)[0]
            if name in known or any(k.startswith(name) for k in known):
                continue  # exact, or an abbreviation argparse resolves (or calls ambiguous)
            self.error(f"unrecognized option {name}{did_you_mean(name, known)}")


def _count(n: int, noun: str) -> str:
    """``1 thread``, ``2 threads``, ``1,024 processes``."""
    if n == 1:
        return f"1 {noun}"
    return f"{n:,} {noun}es" if noun.endswith("ss") else f"{n:,} {noun}s"


def describe_os_error(e: OSError) -> str:
    """``PATH: cause`` for an error of the operating system (``No space left on device``)."""
    cause = e.strerror or str(e)
    paths = [p for p in (e.filename, getattr(e, "filename2", None)) if p]
    where = " -> ".join(os.fsdecode(p) for p in paths)
    return f"{where}: {cause}" if where else cause


def _print_error(message: str, stream: Optional[TextIO] = None) -> None:
    stream = stream or sys.stderr
    one_line = " ".join(str(message).split("\n")).strip()
    stream.write(f"{PROG}: error: {one_line}\n")
    stream.flush()


# ---------------------------------------------------------------- subcommand registry


@dataclass(frozen=True)
class Subcommand:
    """One command: ``name`` may be a path such as ``"trace info"``."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: Optional[str] = None


_COMMANDS: Dict[str, Subcommand] = {}
#: Help lines of command groups (``trace``), set by :func:`register_group`.
_GROUPS: Dict[str, str] = {}


def register(
    name: str,
    help: str,
    configure: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
    description: Optional[str] = None,
) -> None:
    """Add a subcommand. ``run`` returns the exit status; it may raise ``VmemsimError`` or
    :class:`CliError` for bad input (printed as one line, status 2)."""
    if name in _COMMANDS:
        raise ValueError(f"subcommand {name!r} registered twice")
    _COMMANDS[name] = Subcommand(name, help, configure, run, description)


def register_group(name: str, help: str) -> None:
    """Give a command group (the first word of ``"trace info"``) its help line."""
    _GROUPS[name] = help


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="vmemsim: fast, kernel-faithful simulation of memory management.",
        epilog="Exit status: 0 success; 1 some sweep runs failed, or an internal error; "
        "2 bad input; 74 an I/O error (disk full, permission denied: the path is named); "
        "130 interrupted (Ctrl-C, and SIGTERM or SIGHUP during a sweep).",
    )
    parser.add_argument(
        "--version", action="version", version=f"{PROG} {_native.version()}"
    )
    top = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    groups: Dict[str, argparse._SubParsersAction] = {}
    for cmd in _COMMANDS.values():
        words = cmd.name.split()
        subs = top
        prefix = ""
        for w in words[:-1]:
            prefix = f"{prefix} {w}".strip()
            if prefix not in groups:
                g = subs.add_parser(w, help=_GROUPS.get(prefix, f"{prefix} commands"))
                groups[prefix] = g.add_subparsers(
                    dest=f"{prefix.replace(' ', '_')}_command",
                    metavar="COMMAND",
                    parser_class=_Parser,
                )
                g.set_defaults(_group_parser=g)
            subs = groups[prefix]
        p = subs.add_parser(words[-1], help=cmd.help, description=cmd.description or cmd.help)
        cmd.configure(p)
        p.set_defaults(_run=cmd.run)
    return parser


# ---------------------------------------------------------------- shared option parsers


def _seed(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if not 0 <= v < 2**64:
        raise argparse.ArgumentTypeError(f"must be 0..2^64-1, got {v}")
    return v


def _int(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None


def _watermarks(text: str) -> List[int]:
    parts = [t.strip() for t in text.split(",")]
    try:
        vals = [int(t, 0) for t in parts]
    except ValueError:
        vals = []
    if len(vals) != 3 or any(v < 0 for v in vals):
        raise argparse.ArgumentTypeError(
            f"expected MIN,LOW,HIGH as three page counts, got '{text}'"
        )
    return vals


ZONES_HELP = (
    "the machine's zones, lowest first, as NAME:FRAMES[:MIN/LOW/HIGH[:RESERVE]] separated by "
    "commas, e.g. DMA:3808:48/60/72:82,DMA32:16162:266/332/398 (frames sum to --frames; "
    "watermarks and lowmem_reserve derived as Linux does when left out); replaces "
    "--watermarks (default: one zone)"
)


def _zones(text: str) -> List[Dict[str, object]]:
    """``--zones``: NAME:FRAMES[:MIN/LOW/HIGH[:RESERVE]],... (the core checks the values)."""
    out: List[Dict[str, object]] = []
    for i, part in enumerate(t.strip() for t in text.split(",")):
        f = part.split(":")
        try:
            if not 2 <= len(f) <= 4 or not f[0]:
                raise ValueError
            z: Dict[str, object] = {"name": f[0], "frames": int(f[1], 0)}
            if len(f) >= 3:
                w = [int(x, 0) for x in f[2].split("/")]
                if len(w) != 3:
                    raise ValueError
                z["watermarks"] = w
            if len(f) == 4:
                z["lowmem_reserve"] = int(f[3], 0)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"zone {i + 1}: expected NAME:FRAMES[:MIN/LOW/HIGH[:RESERVE]], got '{part}'"
            ) from None
        out.append(z)
    return out


def _key_values(items: Optional[Sequence[str]], flag: str = "--opt") -> Dict[str, str]:
    out: Dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"{flag}: expected KEY=VALUE, got '{item}'")
        out[key.strip()] = value.strip()
    return out


def add_cost_argument(p: argparse.ArgumentParser) -> None:
    """``--cost KEY=NS``: an entry of the one cost table (``vmemsim run`` and ``vmemsim vm``
    alike; ``machine.costs.KEY`` in a sweep, ``costs=`` in Python)."""
    p.add_argument("--cost", action="append", metavar="KEY=NS",
                   help="CPU cost of an event in ns (repeatable; cpu_ghz in GHz, kvm_work_ns "
                   "a comma-separated list); the one table of native and VM runs: "
                   + ", ".join(f"{k} (default {_cost_default(k)})" for k in COST_KEYS))


def _cost_default(key: str) -> str:
    v = COST_DEFAULTS[key]
    if isinstance(v, list):
        return ",".join(f"{x:g}" for x in v)
    return f"{v:g}" if isinstance(v, float) else str(v)


def _cost_values(items: Optional[Sequence[str]]) -> Optional[Dict[str, Any]]:
    """``--cost`` values as :func:`vmemsim.run`'s ``costs`` (checked there)."""
    costs: Dict[str, Any] = {}
    for k, v in _key_values(items, "--cost").items():
        try:
            if k == "cpu_ghz":
                costs[k] = float(v)
            elif k == "kvm_work_ns":
                costs[k] = [float(x) for x in v.split(",")]
            else:
                costs[k] = int(v, 0)
        except ValueError:
            what = {"cpu_ghz": "a number", "kvm_work_ns": "a comma-separated list of numbers"}
            raise CliError(f"--cost {k}: '{v}' is not "
                           f"{what.get(k, 'a whole number of ns')}") from None
    return costs or None


def _number_table(items: Optional[Sequence[str]], flag: str) -> Optional[Dict[str, Any]]:
    """Repeated ``KEY=NUMBER`` as a table of whole numbers or numbers (the core names an
    unknown key or a bad value)."""
    out: Dict[str, Any] = {}
    for k, v in _key_values(items, flag).items():
        try:
            out[k] = int(v, 0)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                raise CliError(f"{flag} {k}: '{v}' is not a number") from None
    return out or None


class Progress:
    """A progress line on stderr, rewritten in place; cleared before anything else prints."""

    def __init__(self, stream: TextIO, label: str) -> None:
        self.stream = stream
        self.label = label
        self.start = time.perf_counter()
        self.shown = False

    def __call__(self, done: int, total: Optional[int]) -> None:
        rate = done / max(time.perf_counter() - self.start, 1e-9)
        pct = f" ({100.0 * done / total:.0f}%)" if total else ""
        line = f"{PROG}: {self.label}: {done:,} accesses{pct}, {rate / 1e6:.1f} M/s"
        if self.stream.isatty():
            self.stream.write(f"\r\x1b[K{line}")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown and self.stream.isatty():
            self.stream.write("\r\x1b[K")
            self.stream.flush()
        self.shown = False


# ---------------------------------------------------------------- trace and policy arguments


def _page_size(text: str) -> int:
    v = _int(text)
    if v < 2 or v & (v - 1):
        raise argparse.ArgumentTypeError(f"{v} is not a power of two of at least 2")
    return v


def _positive(text: str) -> int:
    v = _int(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {v}")
    return v


def _sizes(text: str) -> List[int]:
    parts = [t.strip() for t in text.split(",") if t.strip()]
    try:
        vals = [int(t, 0) for t in parts]
    except ValueError:
        vals = []
    if not vals or any(v < 1 for v in vals):
        raise argparse.ArgumentTypeError(
            f"expected frame counts of at least 1 separated by commas, got '{text}'"
        )
    return vals


def _rate(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not 0.0 < v <= 1.0:
        raise argparse.ArgumentTypeError(f"a sampling rate is in (0, 1], got {text}")
    return v


TRACE_HELP = (
    "trace file, or gen:SPEC for a seeded generator (e.g. gen:zipf:pages=1000,alpha=0.9,"
    "n=10000; grammar: 'vmemsim generate --help')"
)


def add_trace_arguments(
    p: argparse.ArgumentParser,
    positional: bool = False,
    seed: bool = False,
    format_flags: Sequence[str] = ("--format",),
    trace: bool = True,
    imports: bool = False,
) -> None:
    """The trace to read: ``--trace TRACE`` (or a positional ``TRACE``; none when ``trace``
    is false), ``--format F`` (or other spellings given by ``format_flags``), ``--page-size``,
    ``--addresses``, ``--csv``, and ``--seed`` when ``seed`` (for commands without
    :func:`add_policy_arguments`). Read them back with :func:`trace_kwargs`."""
    if trace and positional:
        p.add_argument("trace", metavar="TRACE", help=TRACE_HELP)
    elif trace:
        p.add_argument("--trace", required=True, metavar="TRACE", help=TRACE_HELP)
    p.add_argument(
        *format_flags,
        dest="format",
        metavar="F",
        default=None,
        help="trace format (%s); detected when omitted" % ", ".join(_native.trace_formats())
        + (
            "; or a public format to import into a recorded trace (%s)"
            % ", ".join(n for n, _ in _native.import_formats())
            if imports
            else ""
        ),
    )
    p.add_argument(
        "--page-size",
        type=_page_size,
        default=4096,
        metavar="N",
        help="bytes per page, a power of two (default 4096; a native trace records its own)",
    )
    p.add_argument(
        "--addresses",
        action="store_true",
        help="the trace holds byte addresses, not page numbers (divided by the page size)",
    )
    p.add_argument(
        "--csv",
        metavar="MAP",
        default=None,
        help="CSV column mapping, e.g. 'column=addr,op=type' (keys: column, op, header, "
        "delimiter; columns by header name or 1-based index)",
    )
    if seed:
        p.add_argument(
            "--seed", type=_seed, default=0, metavar="S", help="generator seed (default 0)"
        )


def trace_kwargs(args: argparse.Namespace) -> Dict[str, object]:
    """The reader keyword arguments (``format``, ``page_size``, ``addresses``, ``csv``) given
    by :func:`add_trace_arguments`."""
    return dict(
        format=args.format, page_size=args.page_size, addresses=args.addresses, csv=args.csv
    )


def add_policy_arguments(
    p: argparse.ArgumentParser,
    frames_required: bool = True,
    frames: bool = True,
    policy_default: Optional[str] = None,
    setting_help: Callable[[str], str] = replay_setting_help,
) -> None:
    """``--policy``, ``--frames`` (unless ``frames`` is false), ``--seed``, ``--opt`` and the
    machine knobs; read them back with :func:`replay_kwargs`. Their help is the core's
    documentation of each setting, ``setting_help(key)`` (a replay's, :data:`REPLAY_DEFAULTS`
    giving the defaults; a timed run passes ``run_setting_help``)."""
    REPLAY = REPLAY_DEFAULTS  # the core's defaults of a replay (ReplayConfig), declared once

    def doc(key: str, default: bool = False) -> str:
        # The core's documentation of the setting (its schema), as argparse help.
        h = setting_help(key).replace("%", "%%")
        return h + (" (default %(default)s)" if default else "")

    if policy_default is None:
        p.add_argument(
            "--policy", required=True, metavar="NAME", help=doc("policy")
        )
    else:
        p.add_argument(
            "--policy",
            default=policy_default,
            metavar="NAME",
            help=doc("policy", default=True),
        )
    if frames:
        p.add_argument(
            "--frames",
            required=frames_required,
            metavar="N",
            help=doc("frames"),
        )
    p.add_argument(
        "--seed", type=_seed, default=REPLAY["seed"], metavar="S", help=doc("seed", default=True)
    )
    p.add_argument(
        "--opt",
        action="append",
        metavar="KEY=VALUE",
        help=doc("options") + " (repeatable)",
    )
    p.add_argument(
        "--page-cluster",
        type=_int,
        default=REPLAY["page_cluster"],
        metavar="N",
        help=doc("page_cluster"),
    )
    p.add_argument(
        "--swappiness",
        type=_int,
        default=REPLAY["swappiness"],
        metavar="N",
        help=doc("swappiness", default=True),
    )
    p.add_argument(
        "--watermarks",
        type=_watermarks,
        default=REPLAY["watermarks"],
        metavar="MIN,LOW,HIGH",
        help=doc("watermarks"),
    )
    p.add_argument(
        "--check-invariants",
        action="store_true",
        default=REPLAY["check_invariants"],
        help=doc("check_invariants"),
    )


def add_progress_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress line on stderr (default: when stderr is a terminal)",
    )


def _note_frames_over_100(frames: object) -> None:
    """A percentage over 100% of the distinct pages is accepted (memory larger than what the
    trace touches is a legitimate baseline) but is said, since nothing can be evicted."""
    if isinstance(frames, str) and frames.strip().endswith("%"):
        try:
            pct = float(frames.strip()[:-1])
        except ValueError:
            return  # the core names the bad value
        if pct > 100:
            sys.stderr.write(f"vmemsim: note: --frames {frames.strip()} is more memory than the "
                             "trace's distinct pages: nothing is evicted, every fault is a "
                             "first touch\n")


def replay_kwargs(args: argparse.Namespace) -> Dict[str, object]:
    """The keyword arguments of :func:`vmemsim.replay` given by :func:`add_policy_arguments`
    (and :func:`add_trace_arguments` when present)."""
    kw: Dict[str, object] = dict(
        policy=args.policy,
        seed=args.seed,
        options=_key_values(args.opt),
        page_cluster=args.page_cluster,
        watermarks=args.watermarks,
        swappiness=args.swappiness,
        check_invariants=args.check_invariants,
    )
    if hasattr(args, "frames"):
        kw["frames"] = args.frames
        _note_frames_over_100(args.frames)
    if hasattr(args, "page_size"):
        kw.update(trace_kwargs(args))
    elif hasattr(args, "format"):
        kw["format"] = args.format
    return kw


def _want_progress(flag: Optional[bool]) -> bool:
    if flag is not None:
        return flag
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def make_progress(args: argparse.Namespace, label: str) -> Optional[Progress]:
    """A :class:`Progress` if ``--progress`` asked for one (or stderr is a terminal)."""
    return Progress(sys.stderr, label) if _want_progress(args.progress) else None


def _with_progress(args: argparse.Namespace, label: str, fn: Callable[..., T]) -> T:
    """``fn(progress=...)`` with a progress line that is cleared afterwards."""
    progress = make_progress(args, label)
    try:
        return fn(progress=progress)
    finally:
        if progress is not None:
            progress.clear()


def _fmt_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


# ---------------------------------------------------------------- replay


def _configure_replay(p: argparse.ArgumentParser) -> None:
    add_trace_arguments(p)
    add_policy_arguments(p)
    p.add_argument("--zones", type=_zones, default=None, metavar="SPEC", help=ZONES_HELP)
    p.add_argument(
        "--swap",
        default="disk",
        metavar="disk[:max_pages=N]|hdd[:size=SIZE,...]|zram[:KEY=VALUE,...]",
        help="swap device kind (default disk: asynchronous writes kept under writeback, swap "
        "cache, readahead; hdd: the same on a rotational disk (QEMU's virtio-blk is one) of "
        "SIZE (default 4GiB), slots from the kernel's rotational allocator; a disk's max_pages "
        "is its largest request, up to which reclaim's plug merges swap writes (disk 128, "
        "hdd 168; QEMU's virtio-blk 254); zram: synchronous, swap-ins skip the swap cache and free their slot, "
        "and its compressed pool takes memory from the frames; zram's parameters as in "
        "'vmemsim run --device', e.g. zram:text_ratio=3)",
    )
    p.add_argument(
        "--class",
        dest="content_class",
        default="numeric",
        choices=("zero", "text", "numeric", "random", "sparse"),
        help=replay_setting_help("zram_pool.class").replace("%", "%%")
        + " (with --swap zram; default %(default)s)",
    )
    p.add_argument(
        "--cgroup",
        action="store_true",
        help="frames is a memory cgroup limit: zram's compressed pool is not charged to it",
    )
    p.add_argument(
        "--kernel",
        default=REPLAY_DEFAULTS["kernel"],
        choices=setting_choices(REPLAY_SCHEMA, "kernel"),
        help=replay_setting_help("kernel").replace("%", "%%") + " (default %(default)s)",
    )
    p.add_argument(
        "--read-ahead-kb",
        type=_int,
        default=REPLAY_DEFAULTS["read_ahead_kb"],
        metavar="KB",
        help=replay_setting_help("read_ahead_kb").replace("%", "%%") + " (default %(default)s)",
    )
    p.add_argument(
        "--watermark-boost-factor",
        type=_int,
        default=REPLAY_DEFAULTS["watermark_boost_factor"],
        metavar="N",
        help=replay_setting_help("watermark_boost_factor").replace("%", "%%")
        + " (default %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--sample-every",
        type=_int,
        default=REPLAY_DEFAULTS["sample_every"],
        metavar="N",
        help=replay_setting_help("sample_every").replace("%", "%%"),
    )
    p.add_argument(
        "--series-out",
        metavar="OUT",
        help="write the samples of --sample-every to OUT as CSV (header: counter names)",
    )
    add_progress_argument(p)


def _run_replay(args: argparse.Namespace) -> int:
    kwargs = replay_kwargs(args)
    kwargs["swap"] = args.swap
    kwargs["kernel"] = args.kernel
    kwargs["content_class"] = args.content_class
    kwargs["cgroup"] = args.cgroup
    kwargs["read_ahead_kb"] = args.read_ahead_kb
    kwargs["zones"] = args.zones
    kwargs["watermark_boost_factor"] = args.watermark_boost_factor
    if args.series_out and args.sample_every <= 0:
        raise CliError("--series-out: needs --sample-every N with N at least 1")
    result = _with_progress(
        args,
        "replay",
        lambda progress: replay(
            args.trace, progress=progress, sample_every=args.sample_every, **kwargs
        ),
    )
    if args.series_out:
        write_series_csv(result, args.series_out)
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        print(format_result(result))
    return 0


def write_series_csv(r: ReplayResult, out: str) -> None:
    """The samples of ``r`` as CSV: a header of counter names, then one row per sample."""
    columns = list(r.series[0] if r.series else r.stats)
    try:
        with open(out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(columns)
            for sample in r.series:
                w.writerow([sample[c] for c in columns])
    except OSError as e:
        raise CliError(f"{out}: {e.strerror or e}") from None


def format_result(r: ReplayResult) -> str:
    """The readable table of ``vmemsim replay``."""
    w = r.watermarks
    opts = ", ".join(f"{k}={v}" for k, v in r.options.items()) or "-"
    config = [
        ("trace", r.trace),
        ("policy", r.policy),
        ("frames", f"{r.frames:,}"),
        ("seed", str(r.seed)),
        ("page_cluster", str(r.page_cluster)),
        ("swap", r.swap + (
            f" (pool charged, pages of class {r.zram_pool['class']})" if r.zram_pool else ""
        )),
        ("kernel", r.kernel),
        ("watermarks", f"min {w[0]:,}, low {w[1]:,}, high {w[2]:,}"),
        ("options", opts),
        ("version", r.version),
    ]
    lines = [f"{PROG} replay"]
    lines += [f"  {k:<14} {v}" for k, v in config]
    lines.append("")
    width = max([len(k) for k in r.stats] + [len(k) for k in r.policy_counters] + [12])
    lines.append("counters")
    for k, v in r.stats.items():
        extra = f"   miss ratio {r.miss_ratio:.4f}" if k == "faults" else ""
        lines.append(f"  {k:<{width}} {v:>14,}{extra}")
    if r.policy_counters:
        lines.append("")
        lines.append(f"policy counters ({r.policy})")
        for k, v in r.policy_counters.items():
            lines.append(f"  {k:<{width}} {v:>14,}")
    return "\n".join(lines)


# ---------------------------------------------------------------- run (timed)


def _configure_run(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "workload", metavar="WORKLOAD",
        help="workload model spec, e.g. ycsb-a, 'pagerank:scale=16', 'tpch-like:footprint=64MiB',"
        " or a guest model run natively ('redis-like:rps=20000', stress-vm, kernbench-like,"
        " lmbench-like, jvm-like: the same run as `vmemsim vm W --paging native`)",
    )
    RUN = RUN_DEFAULTS  # the core's defaults of a timed run (RunConfig), declared once there
    add_policy_arguments(p, frames_required=False, policy_default=RUN["policy"],
                         setting_help=run_setting_help)
    p.set_defaults(frames=RUN["frames"], seed=RUN["seed"], swappiness=RUN["swappiness"],
                   page_cluster=RUN["page_cluster"], watermarks=RUN["watermarks"],
                   check_invariants=RUN["check_invariants"])
    def doc(key: str, default: bool = True) -> str:
        # The core's documentation of the setting (its schema), as argparse help.
        h = run_setting_help(key).replace("%", "%%")
        return h + (" (default %(default)s)" if default else "")

    p.add_argument("--device", "--swap", dest="device", default=RUN["device"], metavar="SPEC",
                   help=doc("device"))
    p.add_argument("--zones", type=_zones, default=None, metavar="SPEC", help=ZONES_HELP)
    p.add_argument("--cpus", type=_positive, default=RUN["cpus"], metavar="N", help=doc("cpus"))
    add_cost_argument(p)
    p.add_argument("--slice-ns", type=_positive, default=RUN["slice_ns"], metavar="NS",
                   help=doc("slice_ns", default=False))
    p.add_argument("--sample-every-ns", type=_int, default=RUN["sample_every_ns"], metavar="NS",
                   help=doc("sample_every_ns") + "; with --json")
    p.add_argument("--step-ns", type=_positive, default=RUN["step_ns"], metavar="NS",
                   help=doc("step_ns"))
    # --cgroup sets RunConfig.cgroup; unset, charge_device_ram's default decides
    p.add_argument("--cgroup", action="store_true", default=not RUN["charge_device_ram"],
                   help=doc("cgroup", default=False))
    p.add_argument("--tlb", action="store_true", default=RUN["tlb"],
                   help=doc("tlb", default=False))
    p.add_argument("--kernel", default=RUN["kernel"], choices=setting_choices(RUN_SCHEMA, "kernel"),
                   help=doc("kernel"))
    p.add_argument("--file-device", default=RUN["file_device"], metavar="SPEC",
                   help=doc("file_device", default=False))
    p.add_argument("--read-ahead-kb", type=_int, default=RUN["read_ahead_kb"], metavar="KB",
                   help=doc("read_ahead_kb"))
    p.add_argument("--watermark-boost-factor", type=_int, default=RUN["watermark_boost_factor"],
                   metavar="N", help=doc("watermark_boost_factor"))
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_progress_argument(p)


def _run_run(args: argparse.Namespace) -> int:
    kw = replay_kwargs(args)
    costs = _cost_values(args.cost)
    result = _with_progress(
        args, "run (simulated ns)",
        lambda progress: vmemsim_run(
            args.workload, device=args.device, cpus=args.cpus, costs=costs,
            slice_ns=args.slice_ns, sample_every_ns=args.sample_every_ns, progress=progress,
            step_ns=args.step_ns, cgroup=args.cgroup, tlb=args.tlb, kernel=args.kernel,
            file_device=args.file_device, read_ahead_kb=args.read_ahead_kb,
            zones=args.zones, watermark_boost_factor=args.watermark_boost_factor, **kw,
        ),
    )
    if args.json:
        json.dump(result.to_dict(), sys.stdout)
        sys.stdout.write("\n")
    else:
        print(format_run(result))
    return 0


def _configure_vm(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "workload", metavar="WORKLOAD", nargs="+",
        help="guest workload spec (several: one VM each, on one host), e.g. 'stress-vm:bytes=64MiB', 'redis-like:rps=20000', "
        "'kernbench-like', 'lmbench-like:bench=lat_mem_rd,size=64MiB', 'jvm-like:heap_bytes=128MiB', "
        "or a recorded real "
        "program: 'trace:path=traces/sort-300k.vmt,vcpus=1'",
    )
    VM = VM_DEFAULTS  # the core's defaults of a VM run (VmRunConfig), declared once there

    def doc(key: str, default: bool = True) -> str:
        # The core's documentation of the setting (its schema), as argparse help.
        h = vm_setting_help(key).replace("%", "%%")
        return h + (" (default %(default)s)" if default else "")

    p.add_argument("--paging", default=VM["paging"], choices=setting_choices(VM_SCHEMA, "paging"),
                   help=doc("paging"))
    p.add_argument("--guest-frames", default=VM["guest_frames"], metavar="N",
                   help=doc("guest_frames"))
    p.add_argument("--host-frames", default=VM["host_frames"], metavar="N",
                   help=doc("host_frames"))
    p.add_argument("--guest-policy", default=VM["guest_policy"], metavar="NAME",
                   help=doc("guest_policy"))
    p.add_argument("--host-policy", default=VM["host_policy"], metavar="NAME",
                   help=doc("host_policy"))
    p.add_argument("--eviction", default=VM["eviction"],
                   choices=setting_choices(VM_SCHEMA, "eviction"),
                   help=doc("eviction"))
    p.add_argument("--mmu-pages", type=_positive, default=VM["mmu_pages"], metavar="N",
                   help=doc("mmu_pages", default=False))
    p.add_argument("--guest-page", default=VM["guest_page"],
                   choices=setting_choices(VM_SCHEMA, "guest_page"),
                   help=doc("guest_page"))
    p.add_argument("--host-page", default=VM["host_page"],
                   choices=setting_choices(VM_SCHEMA, "host_page"),
                   help=doc("host_page"))
    p.add_argument("--host-swap", default=VM["host_swap"], metavar="DEVICE",
                   help=doc("host_swap", default=False))
    p.add_argument("--guest-swap", default=VM["guest_swap"], metavar="DEVICE",
                   help=doc("guest_swap", default=False))
    p.add_argument("--shared-disk", action="store_true", default=VM["shared_disk"],
                   help=doc("shared_disk", default=False))
    p.add_argument("--host-cpus", type=_positive, default=VM["host_cpus"], metavar="N",
                   help=doc("host_cpus", default=False))
    p.add_argument("--vms", type=_positive, default=VM["vms"], metavar="N", help=doc("vms"))
    p.add_argument("--cache-mode", default=VM["cache_mode"],
                   choices=setting_choices(VM_SCHEMA, "cache_mode"), help=doc("cache_mode"))
    p.add_argument("--file-device", default=VM["file_device"], metavar="SPEC",
                   help=doc("file_device", default=False))
    p.add_argument("--read-ahead-kb", type=_int, default=VM["read_ahead_kb"], metavar="KB",
                   help=doc("read_ahead_kb"))
    p.add_argument("--sample-every-ns", type=_int, default=VM["sample_every_ns"], metavar="NS",
                   help=doc("sample_every_ns") + "; with --json")
    p.add_argument("--guest-levels", type=int, default=VM["guest_levels"], choices=(4, 5),
                   help=doc("guest_levels"))
    p.add_argument("--host-levels", type=int, default=VM["host_levels"], choices=(4, 5),
                   help=doc("host_levels"))
    p.add_argument("--pt-pages", type=_int, default=VM["pt_pages"], metavar="N",
                   help=doc("pt_pages"))
    p.add_argument("--balloon", action="store_true", default=VM["balloon"],
                   help=doc("balloon", default=False))
    p.add_argument("--deflate-on-oom", action="store_true", default=VM["deflate_on_oom"],
                   help=doc("deflate_on_oom", default=False))
    p.add_argument("--balloon-size-mib", type=_int, default=VM["balloon_size_mib"],
                   metavar="MIB", help=doc("balloon_size_mib", default=False))
    p.add_argument("--mom", action="store_true", default=VM["mom"],
                   help=doc("mom", default=False))
    p.add_argument("--guest-swapoff", action="store_true", default=VM["guest_swapoff"],
                   help=doc("guest_swapoff", default=False))
    p.add_argument("--balloon-cost", dest="balloon_costs", action="append", metavar="KEY=NS",
                   help=doc("balloon_costs", default=False) + " (repeatable KEY=NS: "
                   + ", ".join(f"{k} (default {v})" for k, v in VM["balloon_costs"].items())
                   + ")")
    p.add_argument("--mom-config", dest="mom_config", action="append", metavar="KEY=VALUE",
                   help=doc("mom_config", default=False) + " (repeatable KEY=VALUE: "
                   + ", ".join(f"{k} (default {v})" for k, v in VM["mom_config"].items())
                   + ")")
    p.add_argument("--qemu-text-pages", type=_int, default=VM["qemu_text_pages"],
                   metavar="N", help=doc("qemu_text_pages"))
    p.add_argument("--vswapper", default=VM["vswapper"],
                   choices=setting_choices(VM_SCHEMA, "vswapper"), help=doc("vswapper"))
    p.add_argument("--no-walk-caches", dest="walk_caches", action="store_false",
                   help="page-walk caches and the nested TLB off: a walk reads every entry "
                   "(vm.walk_caches = false)")
    add_cost_argument(p)
    p.add_argument("--folded", metavar="FILE",
                   help="shadow paging: write KVM's handler time as folded stacks")
    p.add_argument("--flamegraph", metavar="FILE.svg",
                   help="shadow paging: write KVM's handler time as an SVG flame graph")
    p.add_argument("--seed", type=_int, default=VM["seed"], metavar="S", help=doc("seed"))
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _run_vm(args: argparse.Namespace) -> int:
    costs = _cost_values(args.cost)
    if len(args.workload) > 1 and args.vms not in (1, len(args.workload)):
        raise CliError(f"--vms {args.vms}: {len(args.workload)} workloads make "
                       f"{len(args.workload)} VMs")
    r = run_vm(
        args.workload if len(args.workload) > 1 else args.workload[0], paging=args.paging, guest_frames=args.guest_frames,
        host_frames=args.host_frames, guest_policy=args.guest_policy,
        host_policy=args.host_policy, eviction=args.eviction, mmu_pages=args.mmu_pages,
        seed=args.seed, costs=costs, guest_page=args.guest_page,
        host_page=args.host_page, vms=args.vms, host_swap=args.host_swap,
        guest_swap=args.guest_swap, host_cpus=args.host_cpus, shared_disk=args.shared_disk,
        guest_levels=args.guest_levels, host_levels=args.host_levels, pt_pages=args.pt_pages,
        walk_caches=args.walk_caches, cache_mode=args.cache_mode,
        file_device=args.file_device, read_ahead_kb=args.read_ahead_kb,
        sample_every_ns=args.sample_every_ns, balloon=args.balloon,
        deflate_on_oom=args.deflate_on_oom, balloon_size_mib=args.balloon_size_mib,
        mom=args.mom, guest_swapoff=args.guest_swapoff,
        balloon_costs=_number_table(args.balloon_costs, "--balloon-cost"),
        mom_config=_number_table(args.mom_config, "--mom-config"),
        qemu_text_pages=args.qemu_text_pages, vswapper=args.vswapper,
    )
    if (args.folded or args.flamegraph) and not r.kvm_folded:
        raise CliError("--folded/--flamegraph: KVM's handler profile exists under "
                       "--paging shadow only")
    if args.folded:
        with open(args.folded, "w", encoding="utf-8") as f:
            f.write(r.kvm_folded)
    if args.flamegraph:
        from .flamegraph import write_svg

        write_svg(r.kvm_folded, args.flamegraph,
                  title=f"KVM handler time (simulated ns): {r.workload}, {r.policy} guest")
    if args.json:
        json.dump(r.to_dict(), sys.stdout)
        sys.stdout.write("\n")
        return 0
    d = r.to_dict()
    lines = [f"{PROG} vm"]
    host_keys = ("host_policy", "host_frames", "host_page")
    # The guest's policy and frames are the result's policy and frames (one result type).
    for k, key in (("workload", "workload"), ("paging", "paging"), ("guest_policy", "policy"),
                   ("host_policy", "host_policy"), ("guest_frames", "frames"),
                   ("host_frames", "host_frames"), ("guest_page", "guest_page"),
                   ("host_page", "host_page"), ("seed", "seed"), ("version", "version")):
        if d.get("paging") == "native" and k in host_keys:
            continue  # no host under native paging: nothing to show
        lines.append(f"  {k:<13} {d.get(key)}")
    lines += ["", f"runtime      {d['runtime_ns'] / 1e9:,.6f} s (simulated)", "", "time (ns)"]
    for k, v in d["time"].items():
        lines.append(f"  {k:<24} {v:>14,}")
    lines += _latency_lines(r.latency)
    t = d["translate"]
    lines += ["", "translation"]
    for k in ("accesses", "l1d_hits", "l2_hits", "walks", "walk_refs", "walk_cycles"):
        lines.append(f"  {k:<24} {t[k]:>14,}")
    lines.append(f"  {'refs per walk':<24} {r.refs_per_walk:>14.2f}")
    lines += ["", "events"]
    for k in ("ept_violations", "ept_violations_pt", "exits", "exits_pf", "exits_pt_write",
              "exits_cr3", "exits_invlpg", "cr3_loads", "cr3_flushes", "shootdown_pages",
              "nested_flushes", "processes_created", "processes_exited", "pages_unmapped",
              "pt_pages_peak"):
        lines.append(f"  {k:<24} {d[k]:>14,}")
    for side, key in (("guest", "stats"), ("host", "host_stats")):
        s = d[key]
        lines += ["", f"{side} memory manager"]
        for k in ("faults", "minor_faults", "major_faults", "pswpin", "pswpout", "evictions"):
            lines.append(f"  {k:<24} {s[k]:>14,}")
        if d.get("file_device_stats"):
            for k in ("file_io", "nr_file_pages", "nr_dirty", "pgpgin", "pgpgout",
                      "workingset_refault_file"):
                lines.append(f"  {k:<24} {s[k]:>14,}")
    if d.get("file_device_stats"):
        lines += ["", "page caches (double caching)"]
        lines.append(f"  {'guest pages cached twice':<24} {d['double_cached_pages']:>14,}")
        lines.append(f"  {'host pages of the image':<24} {d['host_image_pages']:>14,}")
        lines += _file_device_lines("virtual disk", d["file_device_stats"], d["runtime_ns"])
        if d.get("host_file_device_stats"):
            lines += _file_device_lines("host disk", d["host_file_device_stats"],
                                        d["runtime_ns"])
    pathologies = d.get("swap_pathologies") or {}
    if d.get("file_device_stats") or any(pathologies.values()):
        # (with file I/O, or whatever the host's swapping did: false reads need no disk)
        lines += ["", "pathologies of host swapping (VSwapper §3) and VSwapper (§4)"]
        for k in ("silent_swap_writes", "silent_swap_writes_in_sequence", "stale_swap_reads",
                  "false_swap_reads", "hypervisor_code_faults", "mapper_discards",
                  "mapper_refaults", "mapper_cow_breaks", "mapper_write_maps",
                  "qemu_write_swap_reads", "preventer_emulated",
                  "preventer_reads_avoided", "preventer_merges"):
            lines.append(f"  {k:<30} {pathologies.get(k, 0):>8,}")
    if d.get("kvm"):
        lines += ["", "kvm (shadow MMU)"]
        for k, v in d["kvm"].items():
            if isinstance(v, int):
                lines.append(f"  {k:<24} {v:>14,}")
    balloons = [(i, v["balloon"]) for i, v in enumerate(d.get("per_vm") or [d])
                if v.get("balloon")]
    if balloons:
        lines += ["", "balloon (pages)",
                  f"  {'vm':<4}{'target':>9}{'actual':>9}{'inflated':>10}{'deflated':>10}"
                  f"{'oom defl.':>10}{'rounds':>8}{'no puff':>8}{'host freed':>11}"
                  f"{'decisions':>10}  oom kill"]
        for i, b in balloons:
            kill = f"{b['oom_kill_ns'] / 1e9:.6f} s" if b.get("oom_killed") else "—"
            lines.append(
                f"  {i:<4}{b['target_pages']:>9,}{b['actual_pages']:>9,}{b['inflated']:>10,}"
                f"{b['deflated']:>10,}{b['oom_deflated']:>10,}{b['rounds']:>8,}"
                f"{b['out_of_puff']:>8,}{b['host_frames_released']:>11,}"
                f"{len(b.get('decisions', [])):>10,}  {kill}")
        if d.get("mom"):
            m = d["mom"]
            lines.append(f"  MOM: {m['samples']:,} samples, {m['evaluations']:,} evaluations "
                         f"({m['pressure']:,} under pressure), {m['decisions']:,} targets set")
    if d.get("per_vm"):
        lines += ["", "per VM (the counters above are their sums; host memory is shared)",
                  f"  {'vm':<4}{'runtime s':>12}{'guest faults':>14}{'EPT viol.':>12}"
                  f"{'exits':>12}{'host fault ms':>15}{'p99 µs':>10}"]
        for i, v in enumerate(d["per_vm"]):
            p99 = (v.get("latency") or {}).get("all", {}).get("p99")
            lines.append(
                f"  {i:<4}{v['runtime_ns'] / 1e9:>12.6f}{v['stats']['faults']:>14,}"
                f"{v['ept_violations']:>12,}{v['exits']:>12,}"
                f"{v['time']['host_fault_ns'] / 1e6:>15,.3f}"
                + (f"{p99 / 1e3:>10.1f}" if p99 is not None else f"{'—':>10}"))
    print("\n".join(lines))
    return 0


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.3f} ms"


def format_run(r: RunResult) -> str:
    """The readable summary of ``vmemsim run``."""
    lines = [f"{PROG} run"]
    for k, v in (
        ("workload", r.workload), ("policy", r.policy), ("frames", f"{r.frames:,} of "
         f"{r.footprint_pages:,} footprint pages"
         + (" (a memory cgroup limit: --cgroup)" if r.cgroup else "")), ("device", r.device),
        ("cpus", f"{r.cpus} (slice {_ms(r.slice_ns)})"), ("seed", str(r.seed)),
        ("version", r.version),
    ):
        lines.append(f"  {k:<10} {v}")
    lines += ["", f"runtime      {r.runtime_s:,.4f} s", ""]
    lines.append("vmstat")
    for k, v in r.vmstat.items():
        lines.append(f"  {k:<24} {v:>14,}")
    lines += ["", "cpu time"]
    for k, v in r.cpu.items():
        val = f"{v:>14,}" if k in ("context_switches", "kswapd_runs") else f"{_ms(v):>17}"
        lines.append(f"  {k:<24} {val}")
    lines += _latency_lines(r.latency)
    if r.file_device_stats:
        lines += ["", "page cache"]
        for k in ("file_io", "nr_file_pages", "nr_dirty", "pgpgin", "pgpgout",
                  "workingset_refault_file"):
            lines.append(f"  {k:<24} {r.stats[k]:>14,}")
        for k in ("file_cpu_ns", "file_wait_ns"):
            lines.append(f"  {k:<24} {_ms(r.time[k]):>17}")
        lines += _file_device_lines("file disk", r.file_device_stats, r.runtime_ns)
    return "\n".join(lines)


def _file_device_lines(name: str, d: Dict[str, Any], runtime_ns: int) -> List[str]:
    """A file device's requests, pages and throughput over the run."""
    secs = runtime_ns / 1e9 or 1.0
    mb = (d["bytes_read"] + d["bytes_written"]) / 1e6
    reqs = d["read_requests"] + d["write_requests"]
    lat = d["service_total_ns"] + d["queue_delay_total_ns"]
    return [
        f"  {name:<24} {d['read_requests']:,} reads ({d['pages_read']:,} pages), "
        f"{d['write_requests']:,} writes ({d['pages_written']:,} pages), "
        f"{mb / secs:,.1f} MB/s, mean latency {lat / max(reqs, 1) / 1e3:,.1f} µs",
    ]


def _latency_lines(latency: Dict[str, Dict[str, float]]) -> List[str]:
    """The request-latency table of ``vmemsim run`` and ``vmemsim vm``: a row per kind."""
    if not latency:
        return []
    lines = ["", "request latency (µs)   count      mean       p50       p99     p99.9    p99.99"]
    for kind, s in latency.items():
        lines.append(
            f"  {kind:<18} {int(s['count']):>9,} {s['mean'] / 1e3:>9.1f} "
            + " ".join(f"{s[q] / 1e3:>9.1f}" for q in ("p50", "p99", "p999", "p9999"))
        )
    return lines


# ---------------------------------------------------------------- mrc


def _configure_mrc(p: argparse.ArgumentParser) -> None:
    add_trace_arguments(p)
    add_policy_arguments(p, frames=False, policy_default=REPLAY_DEFAULTS["policy"])
    sizes = p.add_mutually_exclusive_group()
    sizes.add_argument(
        "--sizes", type=_sizes, metavar="N,N,..", help="memory sizes in frames, e.g. 10,100,1000"
    )
    sizes.add_argument(
        "--points",
        type=_positive,
        metavar="N",
        help="N sizes log-spaced from 1 frame to the trace's distinct pages (default 20)",
    )
    p.add_argument(
        "--shards",
        type=_rate,
        metavar="RATE",
        help="lru only: approximate by SHARDS spatial sampling at RATE (e.g. 0.01) in "
        "bounded memory",
    )
    p.add_argument(
        "--workers",
        type=_positive,
        metavar="N",
        help="threads for the per-size replays of non-lru policies (default: one per core)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--csv-out", metavar="OUT", help="also write the points to OUT as CSV"
    )
    add_progress_argument(p)


def _run_mrc(args: argparse.Namespace) -> int:
    kw = replay_kwargs(args)
    curve = _with_progress(
        args,
        "mrc",
        lambda progress: mrc(
            args.trace,
            sizes=args.sizes,
            points=args.points,
            shards=args.shards,
            workers=args.workers,
            progress=progress,
            **kw,  # type: ignore[arg-type]
        ),
    )
    if args.csv_out:
        try:
            with open(args.csv_out, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(["policy", "method", "frames", "misses", "miss_ratio"])
                for pt in curve.points:
                    w.writerow([curve.policy, curve.method, pt.frames, pt.misses, pt.miss_ratio])
        except OSError as e:
            raise CliError(f"{args.csv_out}: {e.strerror or e}") from None
    if args.json:
        print(json.dumps(curve.to_dict()))
    else:
        print(format_curve(curve))
    return 0


def format_curve(c: MissRatioCurve) -> str:
    """The readable table of ``vmemsim mrc``."""
    method = c.method
    if c.method == "shards-lru":
        method += f", sampling rate {c.sampling_rate:.4g}"
    elif c.method == "replay":
        method += f" at each size, {c.workers} worker(s)"
    distinct = f"{c.distinct_pages:,}" if c.distinct_pages is not None else "-"
    lines = [
        f"{PROG} mrc",
        f"  {'trace':<14} {c.trace}",
        f"  {'policy':<14} {c.policy} ({method})",
        f"  {'accesses':<14} {c.accesses:,}",
        f"  {'distinct pages':<14} {distinct}",
        f"  {'seed':<14} {c.seed}",
        f"  {'version':<14} {c.version}",
        "",
        f"  {'frames':>12}  {'misses':>14}  {'miss ratio':>10}",
    ]
    for pt in c.points:
        lines.append(f"  {pt.frames:>12,}  {pt.misses:>14,}  {pt.miss_ratio:>10.4f}")
    lines.append("")
    lines.append("misses count every fault, cold (first-touch) misses included")
    return "\n".join(lines)


# ---------------------------------------------------------------- trace info / convert / read


def _configure_trace_info(p: argparse.ArgumentParser) -> None:
    add_trace_arguments(p, positional=True, seed=True)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--no-reuse",
        dest="reuse",
        action="store_false",
        help="skip the reuse-distance percentiles (a faster pass that only counts)",
    )
    add_progress_argument(p)


def _run_trace_info(args: argparse.Namespace) -> int:
    info = _with_progress(
        args,
        "trace info",
        lambda progress: trace_info(
            args.trace, reuse=args.reuse, seed=args.seed, progress=progress, **trace_kwargs(args)
        ),
    )
    if args.json:
        print(json.dumps(info.to_dict()))
    else:
        print(format_info(info, args.reuse))
    return 0


def format_info(i: TraceInfo, reuse: bool = True) -> str:
    """The readable table of ``vmemsim trace info``."""
    pct = lambda x: f"{100.0 * x:.1f}%"  # noqa: E731
    rows = [
        ("trace", i.trace),
        ("accesses", f"{i.accesses:,}"),
        ("reads", f"{i.reads:,}"),
        ("writes", f"{i.writes:,} ({pct(i.write_fraction)})"),
        ("distinct pages", f"{i.distinct_pages:,}"),
        ("footprint", f"{_fmt_bytes(i.footprint_bytes)} (pages of {i.page_size:,} bytes)"),
        (
            "pages",
            "-" if i.min_page is None else f"{i.min_page:,} .. {i.max_page:,}",
        ),
        ("cold fraction", pct(i.cold_fraction)),
    ]
    rd = i.reuse_distance
    if not reuse:
        rows.append(("reuse distance", "not computed (--no-reuse)"))
    elif rd is None:
        rows.append(("reuse distance", "- (no page is accessed twice)"))
    else:
        rows.append(
            (
                "reuse distance",
                f"p50 {rd.p50:,}, p90 {rd.p90:,}, p99 {rd.p99:,}, max {rd.max:,}, "
                f"mean {rd.mean:,.1f} (LRU stack distance in pages)",
            )
        )
    return "\n".join(f"{k:<15} {v}" for k, v in rows)


def _configure_trace_convert(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", metavar="IN", help=TRACE_HELP)
    p.add_argument("output", metavar="OUT", help="trace file to create")
    add_trace_arguments(
        p, trace=False, seed=True, format_flags=("--from", "--format"), imports=True
    )
    p.add_argument(
        "--ifetch",
        action="store_true",
        help="with --from lackey: keep instruction fetches (I lines) as fetch records",
    )
    p.add_argument(
        "--to",
        metavar="F",
        default=None,
        help="format of OUT; by its ending when omitted (.vmt native, .oracleGeneral "
        "oracle-general, .csv csv, anything else text)",
    )
    add_progress_argument(p)


def _run_trace_convert(args: argparse.Namespace) -> int:
    if args.format is not None and args.format.strip().lower() in IMPORT_NAMES:
        for flag, given in (
            ("--seed", args.seed != 0),
            ("--addresses", args.addresses),
            ("--csv", args.csv is not None),
        ):
            if given:
                raise CliError(f"{flag}: not an option of an import from {args.format}")
        if args.to is not None and args.to.strip().lower() not in ("native", "vmt"):
            raise CliError(
                f"--to: an import from {args.format} writes a recorded trace (native); "
                f"convert that to {args.to} afterwards"
            )
        st = import_trace(
            args.input, args.output, args.format, page_size=args.page_size, ifetch=args.ifetch
        )
        print(
            f"wrote {st['accesses']:,} accesses ({st['memory_references']:,} memory "
            f"references) and "
            f"{st['io_records']:,} file I/O records ({st['files']:,} files) from "
            f"{st['lines']:,} lines to {args.output} (native, recorded; {st['format']})"
        )
        return 0
    if args.ifetch:
        raise CliError("--ifetch: only with --from lackey")
    fmt = args.to or output_format(args.output)
    kw = trace_kwargs(args)
    kw["from_format"] = kw.pop("format")
    n = _with_progress(
        args,
        "convert",
        lambda progress: convert(
            args.input, args.output, to_format=fmt, seed=args.seed, progress=progress, **kw
        ),
    )
    print(f"wrote {n:,} accesses to {args.output} ({fmt})")
    return 0


def _configure_trace_read(p: argparse.ArgumentParser) -> None:
    add_trace_arguments(p, positional=True, seed=True)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_progress_argument(p)


def _run_trace_read(args: argparse.Namespace) -> int:
    r = _with_progress(
        args,
        "read",
        lambda progress: read_trace(
            args.trace, seed=args.seed, progress=progress, **trace_kwargs(args)
        ),
    )
    rate = r.accesses_per_second / 1e6
    if args.json:
        print(json.dumps({"trace": args.trace, "accesses": r.accesses, "seconds": r.seconds,
                          "maccesses_per_second": rate}))
    else:
        print(f"{r.accesses:,} accesses in {r.seconds:.3f} s: {rate:.1f} M accesses/s")
    return 0


def _configure_trace_record(p: argparse.ArgumentParser) -> None:
    p.usage = ("%(prog)s [--out PATH | --force] [--page-size N] [--ifetch] [--json] "
               "-- CMD [ARGS ...]")
    p.add_argument(
        "--out",
        default=None,
        metavar="PATH",
        help="trace file to create (default: the program's name + .vmt, here)",
    )
    p.add_argument(
        "--page-size",
        type=int,
        default=4096,
        metavar="N",
        help="bytes per page, a power of two (default 4096)",
    )
    p.add_argument("--ifetch", action="store_true", help="record instruction fetches too")
    p.add_argument(
        "--force",
        action="store_true",
        help="without --out: overwrite an existing trace at the default path",
    )
    p.add_argument(
        "--trace-children",
        action="store_true",
        help="record programs that CMD and its children exec too (forked children are "
        "always recorded)",
    )
    p.add_argument(
        "--json", action="store_true", help="print the summary as one JSON object on stdout"
    )
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="CMD", help="the program to run")


def _run_trace_record(args: argparse.Namespace) -> int:
    from .recorder import Unavailable, record

    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        raise CliError("no command to record: vmemsim trace record [--out F] -- CMD ARGS...")
    if args.page_size < 2 or args.page_size & (args.page_size - 1):
        raise CliError(f"--page-size: {args.page_size} is not a power of two of at least 2")
    out = args.out or os.path.basename(cmd[0]) + ".vmt"
    if args.out is None and os.path.exists(out) and not args.force:
        raise CliError(f"{out} exists (an earlier recording?); give --out PATH, or --force to "
                       "overwrite it")
    try:
        rec = record(cmd, out, page_size=args.page_size, ifetch=args.ifetch,
                     valgrind_args=["--trace-children=yes"] if args.trace_children else [])
    except Unavailable as e:
        raise CliError(f"cannot record: {e}") from None
    st = rec.stats
    size = rec.trace_bytes
    per_m = size / (st["accesses"] / 1e6) if st["accesses"] else 0.0  # access records
    summary = dict(st, trace=out, command=cmd, returncode=rec.returncode,
                   seconds=rec.seconds, trace_bytes=size, bytes_per_million_accesses=per_m)
    if args.json:
        print(json.dumps(summary))
    else:
        sys.stderr.write(
            f"{PROG}: recorded {st['accesses']:,} accesses ({st['memory_references']:,} "
            "memory references; consecutive ones to a page are one access) "
            f"({_count(st['threads'], 'thread')} in {_count(st['processes'], 'process')}, "
            f"{_count(st['io_records'], 'file I/O record')} on "
            f"{_count(st['files'], 'file')}, {_count(st['instructions'], 'instruction')}) "
            f"in {rec.seconds:.2f} s "
            f"-> {out} ({size:,} bytes, {per_m:,.0f} bytes per million accesses)\n"
        )
    if not st["complete"]:
        sys.stderr.write(
            f"{PROG}: warning: the recording is incomplete (the program or the recorder was "
            "killed); the trace holds what was recorded until then\n"
        )
    # A program killed by signal N exits the shell way: 128 + N.
    return rec.returncode if rec.returncode >= 0 else 128 - rec.returncode


# ---------------------------------------------------------------- generate


def _generate_epilog() -> str:
    kinds = "\n".join(f"  {k:<9} {d}" for k, d in _native.generator_kinds())
    return f"""spec grammar:
  kind:key=value,...                      a simple generator
  mix:(spec)*w+(spec)*w,n=N               each access from part i with probability w_i
  seq:(spec)+(spec)                       phases one after the other

kinds:
{kinds}

Every simple kind also takes n (accesses), seed, start (first page, default 0) and write
(probability that an access is a write, default 0). n is required at the top level (not for
scan and seq) and on seq phases, and refused on mix parts. Numbers may use 1e6 or 1_000_000.
Anywhere a trace is accepted (replay, mrc, trace ...), '{GEN_PREFIX}SPEC' uses a generator
directly, seeded by --seed where the spec has no seed=.

examples:
  vmemsim generate zipf:pages=100000,alpha=0.99,n=1e6 --out zipf.vmt --seed 1
  vmemsim replay --trace 'gen:mix:(zipf:pages=1e4,alpha=0.9)*0.8+(scan:pages=2e3,start=1e4)*0.2,n=1e5' --policy lru --frames 25%
"""


def _configure_generate(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = _generate_epilog()
    p.add_argument("spec", metavar="SPEC", help="generator spec (a leading 'gen:' is allowed)")
    p.add_argument("--out", required=True, metavar="PATH", help="trace file to create")
    p.add_argument(
        "--to",
        metavar="F",
        default=None,
        help="format of the file; by its ending when omitted (.oracleGeneral, .csv, .txt), "
        "else native",
    )
    p.add_argument("--seed", type=_seed, default=0, metavar="S", help="seed (default 0)")
    add_progress_argument(p)


def _run_generate(args: argparse.Namespace) -> int:
    from .api import generate

    g = generate(args.spec, seed=args.seed)
    fmt = args.to or output_format(args.out, default="native")
    n = _with_progress(
        args, "generate", lambda progress: convert(g, args.out, to_format=fmt, progress=progress)
    )
    print(f"wrote {n:,} accesses to {args.out} ({fmt}): {g.name}")
    return 0


# ---------------------------------------------------------------- policies


def _configure_policies(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print a JSON list")


def _run_policies(args: argparse.Namespace) -> int:
    ps = policies()
    if args.json:
        rows = [{"name": x.name, "family": x.family, "description": x.description} for x in ps]
        print(json.dumps(rows))
        return 0
    nw = max(len(x.name) for x in ps)
    fw = max(len(x.family) for x in ps)
    for x in ps:
        print(f"{x.name:<{nw}}  {x.family:<{fw}}  {x.description}")
    return 0


# ---------------------------------------------------------------- demo


def _configure_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=_seed, default=0, metavar="S", help="workload seed (default 0)")
    p.add_argument("--json", action="store_true", help="print the results as a JSON list")


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import format_table, run_demo

    trace, rows, seconds = run_demo(seed=args.seed)
    if args.json:
        print(json.dumps([dict(r.result.to_dict(), family=r.family) for r in rows]))
    else:
        print(format_table(trace, rows, seconds))
    return 0


register(
    "replay",
    "replay a trace through one policy",
    _configure_replay,
    _run_replay,
    description="Replay a page trace through one replacement policy and print its counters.",
)
register(
    "mrc",
    "miss-ratio curve: misses at several memory sizes",
    _configure_mrc,
    _run_mrc,
    description="Misses of one policy at several memory sizes. For lru the curve is exact "
    "from one pass of LRU stack distances (Mattson et al. 1970), or approximated with "
    "--shards (SHARDS, Waldspurger et al. FAST'15); other policies (or lru with options or "
    "--page-cluster) are replayed once per size, in parallel.",
)
register_group("trace", "inspect, convert and read trace files")
register(
    "trace info",
    "summarise a trace: accesses, footprint, reads/writes, reuse distances",
    _configure_trace_info,
    _run_trace_info,
)
register(
    "trace convert",
    "convert a trace between formats",
    _configure_trace_convert,
    _run_trace_convert,
    description="Copy the accesses of IN into a new trace file OUT. oracle-general has no "
    "operation field: writes become reads.",
)
register(
    "trace read",
    "read a whole trace and report the reading speed",
    _configure_trace_read,
    _run_trace_read,
    description="Read every access of a trace and drop it: the cost of reading alone "
    "(for benchmarks).",
)
register(
    "trace record",
    "record a program's page accesses (Valgrind): vmemsim trace record -- CMD ARGS",
    _configure_trace_record,
    _run_trace_record,
    description="Run CMD under Valgrind with vmemsim's recorder tool and write its page "
    "accesses as a recorded trace: per thread, consecutive accesses to one page folded into "
    "one record with a count and an instruction stamp, reads/writes, and the file I/O "
    "system calls (read, write, pread64, pwrite64, mmap, fsync, fadvise64, ftruncate of "
    "regular files; O_DIRECT reads and writes with their buffer; a file's unlink once its "
    "last name and descriptor are gone). Every trace "
    "command reads the result. Exits with CMD's status. Needs valgrind and gcc "
    "(apt-get install valgrind gcc); the tool is built on first use.",
)
register(
    "generate",
    "write a synthetic trace from a generator spec",
    _configure_generate,
    _run_generate,
    description="Write the accesses of a seeded generator to a trace file.",
)
register("policies", "list the registered policies", _configure_policies, _run_policies)
register(
    "run",
    "run a workload model on a timed machine (CPUs, kswapd, swap device)",
    _configure_run,
    _run_run,
    description="Run a workload model's threads on a timed machine: they and kswapd compete "
    "for --cpus CPUs, every event costs CPU time, swap goes to --device. Prints runtime, "
    "/proc/vmstat counters, where CPU time went and request latency percentiles.",
)
register(
    "vm",
    "run a guest workload in a VM (native, nested or shadow paging)",
    _configure_vm,
    _run_vm,
    description="Run a guest workload model in a VM on a host: the guest OS's memory "
    "manager, the vCPUs' TLBs and page walks, and the host's memory manager backing guest "
    "memory. Prints translation counts (walks, references per walk), VM exits by reason, "
    "EPT violations, both managers' faults, the simulated runtime and where it went, "
    "request latency percentiles and, under shadow paging, KVM's shadow-MMU statistics "
    "(--flamegraph draws KVM's handler time).",
)
register(
    "demo",
    "compare every policy on a small built-in workload",
    _configure_demo,
    _run_demo,
    description="Generate a seeded workload (Zipf hot set + sequential scans) and replay it "
    "through every registered policy at three memory sizes.",
)


# Commands of other modules register themselves on import.
from .sweep import cli as _sweep_cli  # noqa: E402,F401
from .drivers import cli as _drivers_cli  # noqa: E402,F401
from .validate import cli as _validate_cli  # noqa: E402,F401
from . import compare_cmd as _compare_cmd  # noqa: E402,F401

# ---------------------------------------------------------------- entry point


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI; returns the exit status (the console script exits with it)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run = getattr(args, "_run", None)
    if run is None:
        group = getattr(args, "_group_parser", None)
        (group or parser).print_help(sys.stderr)
        return EXIT_USAGE
    # Ctrl-C: the binding lets Python see it every 200 ms while the core runs, and stops the
    # core at its next chunk; a half-written output file is removed on the way out.
    try:
        return run(args)
    except (VmemsimError, CliError, argparse.ArgumentTypeError) as e:
        _print_error(str(e))
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write(f"\n{PROG}: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # Output piped into a command that stopped reading (e.g. `| head`).
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return 0
    except OSError as e:
        # The machine said no (ENOSPC, EACCES, EROFS, ...): name the path and the cause.
        if os.environ.get("VMEMSIM_DEBUG"):
            raise
        _print_error(describe_os_error(e))
        return EXIT_IO
    except Exception as e:  # a bug: still one line, unless debugging
        if os.environ.get("VMEMSIM_DEBUG"):
            raise
        _print_error(
            "internal error (a bug, please report; VMEMSIM_DEBUG=1 shows where): "
            f"{type(e).__name__}: {e}"
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())

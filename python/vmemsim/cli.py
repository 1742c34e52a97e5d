"""The ``vmemsim`` command line.

Contract (scripts and tests rely on it):

- ``vmemsim replay --trace PATH --policy NAME --frames N|P% [--format F] [--seed S] [--json]
  [--opt KEY=VALUE ...] [--page-cluster N] [--swappiness N] [--watermarks MIN,LOW,HIGH]
  [--progress/--no-progress]``; ``--json`` prints one JSON object whose top level has at least
  ``accesses``, ``faults`` (every miss, cold included), ``major_faults``, ``policy``,
  ``frames``, ``seed`` and ``version``.
- ``vmemsim policies`` prints one line per registered policy: name, family, description.
- ``vmemsim demo`` runs a small real comparison of every policy.
- Any bad input prints exactly one line ``vmemsim: error: <message>`` on stderr and exits
  with status 2; never a traceback.

Adding a subcommand: write ``configure(parser)`` and ``run(args) -> int`` and call
:func:`register` (``"trace info"`` makes a ``trace`` group with an ``info`` command;
:func:`register_group` gives the group its help line). ``configure`` can reuse
:func:`add_trace_arguments`, :func:`add_policy_arguments` and :func:`add_progress_argument`,
and ``run`` can turn them back into :func:`vmemsim.replay` arguments with
:func:`replay_kwargs` and a progress line with :func:`make_progress`. ``run`` raises
``VmemsimError`` or :class:`CliError` for bad input. The ``trace convert``, ``trace info``,
``mrc`` and ``generate`` commands are meant to plug in this way, next to ``replay``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, NoReturn, Optional, Sequence, TextIO

from . import _native
from .api import ReplayResult, VmemsimError, policies, replay

PROG = "vmemsim"

#: Exit status for bad input (as argparse uses for usage errors).
EXIT_USAGE = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """Bad command-line input found by the CLI itself (reported like a VmemsimError)."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``vmemsim: error: <message>`` and status 2."""

    def error(self, message: str) -> NoReturn:
        hint = f" (see '{self.prog} --help')"
        _print_error(message + hint)
        sys.exit(EXIT_USAGE)


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


def _key_values(items: Optional[Sequence[str]]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--opt: expected KEY=VALUE, got '{item}'")
        out[key.strip()] = value.strip()
    return out


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


# ---------------------------------------------------------------- replay


def add_trace_arguments(p: argparse.ArgumentParser) -> None:
    """``--trace PATH`` and ``--format F`` (for every command that reads a trace)."""
    p.add_argument("--trace", required=True, metavar="PATH", help="trace file")
    p.add_argument(
        "--format",
        metavar="F",
        default=None,
        help="trace format (%s); detected when omitted" % ", ".join(_native.trace_formats()),
    )


def add_policy_arguments(p: argparse.ArgumentParser, frames_required: bool = True) -> None:
    """``--policy``, ``--frames``, ``--seed``, ``--opt`` and the machine knobs; read them back
    with :func:`replay_kwargs`."""
    p.add_argument(
        "--policy", required=True, metavar="NAME", help="policy name (see 'vmemsim policies')"
    )
    p.add_argument(
        "--frames",
        required=frames_required,
        metavar="N",
        help="memory size in 4 KiB frames, or a percentage of the trace's distinct pages (25%%)",
    )
    p.add_argument("--seed", type=_seed, default=0, metavar="S", help="random seed (default 0)")
    p.add_argument(
        "--opt",
        action="append",
        metavar="KEY=VALUE",
        help="policy option (repeatable); unknown keys are an error",
    )
    p.add_argument(
        "--page-cluster",
        type=_int,
        default=None,
        metavar="N",
        help="vm.page-cluster: swap readahead of 2^N pages (default 3 for kernel policies, "
        "0 for demand policies)",
    )
    p.add_argument(
        "--swappiness",
        type=_int,
        default=60,
        metavar="N",
        help="vm.swappiness, 0..200 (default 60)",
    )
    p.add_argument(
        "--watermarks",
        type=_watermarks,
        default=None,
        metavar="MIN,LOW,HIGH",
        help="zone watermarks in pages (default: derived from the size as Linux does)",
    )
    p.add_argument(
        "--check-invariants",
        action="store_true",
        help="check every invariant after every access (slow; for debugging)",
    )


def add_progress_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress line on stderr (default: when stderr is a terminal)",
    )


def replay_kwargs(args: argparse.Namespace) -> Dict[str, object]:
    """The keyword arguments of :func:`vmemsim.replay` given by :func:`add_policy_arguments`
    (and :func:`add_trace_arguments` when present)."""
    kw: Dict[str, object] = dict(
        policy=args.policy,
        frames=args.frames,
        seed=args.seed,
        options=_key_values(args.opt),
        page_cluster=args.page_cluster,
        watermarks=args.watermarks,
        swappiness=args.swappiness,
        check_invariants=args.check_invariants,
    )
    if hasattr(args, "format"):
        kw["format"] = args.format
    return kw


def _configure_replay(p: argparse.ArgumentParser) -> None:
    add_trace_arguments(p)
    add_policy_arguments(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_progress_argument(p)


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


def _run_replay(args: argparse.Namespace) -> int:
    kwargs = replay_kwargs(args)
    progress = make_progress(args, "replay")
    try:
        result = replay(args.trace, progress=progress, **kwargs)  # type: ignore[arg-type]
    finally:
        if progress is not None:
            progress.clear()
    if args.json:
        print(json.dumps(result.to_dict()))
    else:
        print(format_result(result))
    return 0


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
register("policies", "list the registered policies", _configure_policies, _run_policies)
register(
    "demo",
    "compare every policy on a small built-in workload",
    _configure_demo,
    _run_demo,
    description="Generate a seeded workload (Zipf hot set + sequential scans) and replay it "
    "through every registered policy at three memory sizes.",
)


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
    # Ctrl-C while the core runs (GIL released) would only be seen when it returns; let the
    # default action end the process at once instead.
    old_sigint = None
    try:
        old_sigint = signal.signal(signal.SIGINT, signal.SIG_DFL)
    except (ValueError, OSError):  # not the main thread
        pass
    try:
        return run(args)
    except (VmemsimError, CliError) as e:
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
    except Exception as e:  # a bug: still one line, unless debugging
        if os.environ.get("VMEMSIM_DEBUG"):
            raise
        _print_error(
            "internal error (a bug, please report; VMEMSIM_DEBUG=1 shows where): "
            f"{type(e).__name__}: {e}"
        )
        return EXIT_INTERNAL
    finally:
        if old_sigint is not None:
            signal.signal(signal.SIGINT, old_sigint)


if __name__ == "__main__":
    sys.exit(main())

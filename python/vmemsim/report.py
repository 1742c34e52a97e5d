"""Figures and a self-contained HTML report from a sweep's results table.

The results table (one row per run; columns described in the sweep documentation) is read
from a results directory's ``results.parquet`` or passed as a DataFrame. Declared figures
(``[[report.figures]]`` of the experiment file, dicts after TOML parsing) are validated by
:func:`check_figures`, drawn by :func:`plot_figure` and written, with summary tables, by
:func:`write_report`.

Figure keys: ``name`` (file stem, required), ``kind`` (required: line, bar, box, violin, cdf,
scatter, timeseries, latency), ``metric`` (required), ``x``, ``group``, ``facet``, ``normalize``,
``error``, ``where``, ``title``, ``xlabel``, ``ylabel``, ``logx``, ``logy``.

What each kind draws (failed runs, ``status != "ok"``, and null metrics are left out):

- line: one point per x value and group at the mean across seeds, with error bars; a
  numeric x is placed on a numeric axis, any other x is categorical.
- bar: grouped bars (one per group side by side at each x) at the mean, with error bars.
- box / violin: the distribution across seeds per x and group, side by side.
- cdf: the empirical CDF of the metric across runs, one curve per group.
- scatter: ``x`` (a metric) against ``metric``, one colour per group, with a least-squares
  line and its r² per group in the legend.
- latency: ``metric`` names a request kind (read, update, insert, all): the complementary
  CDF of its latency, every run of a group merged, from the runs' ``latency`` side files
  (``side_loader``).
- timeseries: ``metric`` against ``accesses`` from each run's time series (the
  ``series_loader``); with more than 3 runs per group, the mean across runs over the union of
  their sample points (a band per ``error``), otherwise one thin line per run.

Error bars (``error``, line/bar/timeseries only; default "stdev" for line and bar, "none"
for timeseries): "stdev" mean ± sample standard deviation, "ci95" mean ± the half-width of
the 95% confidence interval of the mean, "iqr" the **median** with the interquartile range
(the mean may lie outside it), "minmax" mean with the range, "none".

``where = {column = value or [values]}`` keeps the runs whose column equals (one of) the
value(s), before anything else; ``facet`` draws one panel per value, sharing the y axis
(box and violin panels each get their own y range).

Categorical values (x, group, facet) keep their order of first appearance, except that
values which are all numbers, or all percentages such as "10%", are sorted by their number.
``normalize = BASELINE`` divides the metric by the baseline group's at equal x (not for
scatter, whose x is a metric), facet and seed (:func:`vmemsim.stats.normalize`).

Titles, labels, legends and table headings name keys in words (:func:`key_label`:
``workload.name`` is "workload"). Each registered policy has its own colour
(:data:`POLICY_COLOURS`) in every figure grouped by policy; no two groups of a figure share
a colour (:func:`group_colours`). Summary tables round (``_fmt``): counts with thousands
separators, other numbers to 4 significant digits, times to 3.

matplotlib is imported only when drawing; figures are built with ``matplotlib.figure.Figure``
and its Agg canvas, never pyplot, so drawing needs no display and leaves pyplot's global
state (a notebook's backend, open figures) alone.
"""

from __future__ import annotations

import base64
import html
import json
import math
import textwrap
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from . import stats
from ._native import VmemsimError
from ._hints import did_you_mean

if TYPE_CHECKING:
    import matplotlib.figure
    import pandas as pd

__all__ = [
    "ERROR_MODES",
    "FIGURE_KEYS",
    "FIGURE_KINDS",
    "Figure",
    "check_figures",
    "load_results",
    "plot_figure",
    "write_report",
]

FIGURE_KINDS = ("line", "bar", "box", "violin", "cdf", "scatter", "timeseries", "latency")
ERROR_MODES = ("stdev", "ci95", "iqr", "minmax", "none")
FIGURE_KEYS = (
    "name",
    "kind",
    "metric",
    "x",
    "group",
    "facet",
    "normalize",
    "error",
    "where",
    "title",
    "xlabel",
    "ylabel",
    "logx",
    "logy",
)
_REQUIRED = ("name", "kind", "metric")
_NEEDS_X = ("line", "bar", "box", "violin", "scatter")
_ERROR_KINDS = ("line", "bar", "timeseries")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

#: Okabe & Ito's colour-blind-safe palette ("Color Universal Design", 2008), yellow last
#: because it is faint on white.
PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow
)
#: Colours after the palette's 8, for figures with more groups (no group shares a colour
#: with another in one figure; past these, hues are generated).
EXTRA_COLOURS = (
    "#8C564B",  # brown
    "#9467BD",  # purple
    "#BCBD22",  # olive
    "#17BECF",  # cyan
    "#7F7F7F",  # grey
    "#D62728",  # red
    "#393B79",  # indigo
    "#637939",  # dark olive green
    "#7B4173",  # plum
    "#FDAE6B",  # light orange
    "#843C39",  # dark red
    "#74C476",  # light green
    "#8C6D31",  # dark gold
    "#FF9896",  # pink
)
#: One colour per registered policy, the same in every figure (``vmemsim policies``): a
#: policy keeps its colour whichever others are drawn beside it. A name not listed here (a
#: policy added later) gets a colour of the palette picked from its name, one that no other
#: group of the figure has.
POLICY_COLOURS = {
    "lru": "#0072B2",  # blue
    "fifo": "#E69F00",  # orange
    "clock": "#009E73",  # bluish green
    "s3fifo": "#D55E00",  # vermillion
    "arc": "#CC79A7",  # reddish purple
    "lfu": "#56B4E9",  # sky blue
    "opt": "#000000",  # black
    "mq": "#F0E442",  # yellow
    "lru-k": "#8C564B",  # brown
    "w-tinylfu": "#9467BD",  # purple
    "sieve": "#BCBD22",  # olive
    "slru": "#17BECF",  # cyan
    "random": "#7F7F7F",  # grey
    "mglru": "#D62728",  # red
    "clock-lru": "#393B79",  # indigo
    "lirs": "#637939",  # dark olive green
    "2q": "#7B4173",  # plum
    "mglru-scan-rand": "#FDAE6B",  # light orange
    "mglru-scan-none": "#843C39",  # dark red
    "clock-pro": "#74C476",  # light green
    "mglru-scan-all": "#8C6D31",  # dark gold
    "mglru-gen14": "#FF9896",  # pink
}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_LINESTYLES = ("-", "--", ":", "-.")
_HATCHES = ("", "//", "..", "xx", "\\\\", "++")

#: Runs per group up to which a time-series figure draws every run instead of the mean.
TIMESERIES_MAX_RUN_LINES = 3

_FIG_WIDTH_IN = 7.0
_PANEL_HEIGHT_IN = 3.3
_DPI = 110

SeriesLoader = Callable[[str], "pd.DataFrame"]


@dataclass
class Figure:
    """One validated figure declaration (see the module documentation for the keys)."""

    name: str
    kind: str
    metric: str
    x: Optional[str] = None
    group: Optional[str] = None
    facet: Optional[str] = None
    normalize: Any = None
    error: str = "none"
    where: Dict[str, List[Any]] = field(default_factory=dict)
    title: Optional[str] = None
    xlabel: Optional[str] = None
    ylabel: Optional[str] = None
    logx: bool = False
    logy: bool = False
    index: int = 0
    #: latency figures: the request kind (``read``, ``update``, ``insert``, ``all``) whose
    #: histograms are drawn; ``metric`` is then its per-run count column.
    request: Optional[str] = None

    @property
    def value_column(self) -> str:
        """The column plotted as the metric: ``<metric>_norm`` when normalised."""
        return f"{self.metric}_norm" if self.normalize is not None else self.metric


# --------------------------------------------------------------------------------------------
# Validation


def _where_label(i: int, raw: Any) -> str:
    if isinstance(raw, Mapping) and isinstance(raw.get("name"), str) and raw["name"]:
        return f"figure {raw['name']!r}"
    return f"figure #{i + 1}"


def _suggest(word: str, options: Iterable[str]) -> str:
    return did_you_mean(word, options)


def check_figures(figures: Sequence[Mapping[str, Any]], columns: Iterable[str]) -> List[Figure]:
    """Validate declared figures against the results table's ``columns``.

    Raises VmemsimError (a ValueError) naming the figure (by name, else ``#index`` from 1)
    and the key for: a figure that is not a table, an unknown key, a missing required key,
    a value of the wrong type, an unknown kind or error mode, a key that does not apply to
    the kind, a column (metric, x, group, facet, a ``where`` key) not in ``columns``, a
    ``normalize`` without a ``group``, or a repeated name."""
    cols = set(columns)
    out: List[Figure] = []
    seen: Dict[str, int] = {}
    if isinstance(figures, Mapping) or not isinstance(figures, Sequence):
        raise VmemsimError("report figures: expected a list of figure tables")
    for i, raw in enumerate(figures):
        label = _where_label(i, raw)

        def fail(key: str, msg: str) -> "VmemsimError":
            return VmemsimError(f"{label}: key {key!r}: {msg}")

        if not isinstance(raw, Mapping):
            raise VmemsimError(f"{label}: expected a table of keys, got {type(raw).__name__}")
        for key in raw:
            if key not in FIGURE_KEYS:
                raise fail(
                    str(key),
                    f"unknown key{_suggest(str(key), FIGURE_KEYS)}; known: {', '.join(FIGURE_KEYS)}",
                )
        for key in _REQUIRED:
            if key not in raw:
                raise fail(key, "missing (required)")

        def text(key: str, required: bool = False) -> Optional[str]:
            v = raw.get(key)
            if v is None and not required:
                return None
            if not isinstance(v, str) or not v:
                raise fail(key, f"expected a non-empty string, got {v!r}")
            return v

        def flag(key: str) -> bool:
            v = raw.get(key, False)
            if not isinstance(v, bool):
                raise fail(key, f"expected true or false, got {v!r}")
            return v

        name = text("name", True)
        if not _NAME_RE.match(name):
            raise fail("name", f"{name!r} is not a file stem (letters, digits, '.', '_', '-')")
        if name in seen:
            raise fail("name", f"{name!r} is already the name of figure #{seen[name] + 1}")
        seen[name] = i
        kind = text("kind", True)
        if kind not in FIGURE_KINDS:
            raise fail(
                "kind",
                f"unknown kind {kind!r}{_suggest(kind, FIGURE_KINDS)}; known: {', '.join(FIGURE_KINDS)}",
            )
        metric = text("metric", True)
        x = text("x")
        group = text("group")
        facet = text("facet")
        title, xlabel, ylabel = text("title"), text("xlabel"), text("ylabel")
        logx, logy = flag("logx"), flag("logy")

        if kind in _NEEDS_X and x is None:
            raise fail("x", f"missing (required for a {kind} figure)")
        if kind == "cdf" and x is not None:
            raise fail("x", "a cdf figure takes no x: its metric is on the x axis")
        if kind == "timeseries" and x not in (None, "accesses"):
            raise fail("x", f"a timeseries figure's x is always 'accesses', got {x!r}")
        request = None
        if kind == "latency":
            # metric names a request kind; the runs that have it carry its count column.
            if x is not None:
                raise fail("x", "a latency figure takes no x: latency is on the x axis")
            request, metric = metric, f"latency.{metric}.count"
            if metric not in cols:
                kinds = sorted({c.split(".")[1] for c in cols
                                if c.startswith("latency.") and c.endswith(".count")})
                raise fail("metric", f"no run recorded {request!r} request latencies"
                           + (f"; recorded: {', '.join(kinds)}" if kinds else
                              " (latency comes from timed runs of workloads with requests)"))

        error_default = "stdev" if kind in ("line", "bar") else "none"
        error = raw.get("error", error_default)
        if not isinstance(error, str) or error not in ERROR_MODES:
            raise fail("error", f"unknown error mode {error!r}; known: {', '.join(ERROR_MODES)}")
        if logx and kind in ("bar", "box", "violin"):
            raise fail("logx", f"a {kind} figure's x axis is categorical")
        if "error" in raw and kind not in _ERROR_KINDS and error != "none":
            raise fail(
                "error", f"error bars apply to {', '.join(_ERROR_KINDS)} figures, not {kind}"
            )

        normalize = raw.get("normalize")
        if normalize is not None:
            if isinstance(normalize, (list, dict, tuple)):
                raise fail(
                    "normalize",
                    f"expected one baseline value of the group column, got {normalize!r}",
                )
            if group is None:
                raise fail("normalize", "needs a 'group' column whose baseline value it names")
            if kind in ("timeseries", "latency"):
                raise fail("normalize", f"not supported for {kind} figures")

        where_raw = raw.get("where", {})
        if not isinstance(where_raw, Mapping):
            raise fail(
                "where", f"expected a table {{column = value or [values]}}, got {where_raw!r}"
            )
        where: Dict[str, List[Any]] = {}
        for col, val in where_raw.items():
            vals = list(val) if isinstance(val, (list, tuple)) else [val]
            if not vals or any(isinstance(v, (list, tuple, dict)) for v in vals):
                raise fail(
                    "where", f"column {col!r}: expected a value or a list of values, got {val!r}"
                )
            where[str(col)] = vals

        checks = [("metric", metric), ("group", group), ("facet", facet)]
        if kind != "timeseries":
            checks.insert(1, ("x", x))
        for key, col in checks:
            if col is not None and col not in cols:
                raise fail(key, f"no column {col!r} in the results{_suggest(col, cols)}")
        for col in where:
            if col not in cols:
                raise fail("where", f"no column {col!r} in the results{_suggest(col, cols)}")

        out.append(
            Figure(
                name=name,
                kind=kind,
                metric=metric,
                x="accesses" if kind == "timeseries" else x,
                group=group,
                facet=facet,
                normalize=normalize,
                error=error,
                where=where,
                title=title,
                xlabel=xlabel,
                ylabel=ylabel,
                request=request,
                logx=logx,
                logy=logy,
                index=i,
            )
        )
    return out


# --------------------------------------------------------------------------------------------
# Data preparation

_PERCENT_RE = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*%\s*$")
_NUMBER_RE = re.compile(r"^\s*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$")
_UNSET = "(unset)"


def _is_numeric(series: "pd.Series") -> bool:
    import pandas as pd

    return bool(pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series))


def ordered_values(values: Iterable[Any]) -> List[Any]:
    """Distinct values in display order: numbers ascending; strings that are all percentages
    ("10%") or all numbers sorted by their number; anything else in order of first
    appearance."""
    seen: Dict[Any, None] = {}
    for v in values:
        seen.setdefault(v, None)
    distinct = list(seen)
    if distinct and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in distinct):
        return sorted(distinct)
    if distinct and all(isinstance(v, str) for v in distinct):
        for pattern in (_PERCENT_RE, _NUMBER_RE):
            matches = [pattern.match(v) for v in distinct]
            if all(matches):
                number = {
                    v: float(m.group(1) if m.groups() else m.group(0))
                    for v, m in zip(distinct, matches)
                }
                return sorted(distinct, key=lambda v: number[v])
    return distinct


def _py(v: Any) -> Any:
    """numpy scalars to Python scalars (for ordering and display)."""
    return v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v


@dataclass
class _Prepared:
    data: "pd.DataFrame"
    value: str  # the column plotted
    notes: List[str]


def _prepare(fig: Figure, df: "pd.DataFrame") -> _Prepared:
    """Rows of the successful runs that pass ``where``, the metric numeric, categorical keys
    with nulls spelled "(unset)", normalised when asked. Warnings become notes."""
    import pandas as pd

    label = f"figure {fig.name!r}"
    notes: List[str] = []
    data = df
    if "status" in data.columns:
        data = data[data["status"] == "ok"]
    for col, vals in fig.where.items():
        if col not in data.columns:
            raise VmemsimError(f"{label}: key 'where': no column {col!r} in the results")
        data = data[data[col].isin(vals)]
    if data.empty:
        where = f" matching where {fig.where}" if fig.where else ""
        raise VmemsimError(f"{label}: no successful runs{where} to plot")
    data = data.copy()
    numeric_cols = [("metric", fig.metric)] + ([("x", fig.x)] if fig.kind == "scatter" else [])
    for key, col in numeric_cols:
        if col not in data.columns:
            raise VmemsimError(f"{label}: key {key!r}: no column {col!r} in the results")
        converted = pd.to_numeric(data[col], errors="coerce")
        if converted.notna().sum() == 0 or converted.isna().sum() > data[col].isna().sum():
            raise VmemsimError(f"{label}: key {key!r}: column {col!r} is not numeric")
        data[col] = converted.astype(float)
    for col in (fig.group, fig.facet) + (
        (fig.x,) if fig.kind in ("line", "bar", "box", "violin") else ()
    ):
        if col is None or col not in data.columns:
            if col is not None:
                raise VmemsimError(f"{label}: no column {col!r} in the results")
            continue
        if data[col].isna().any() and not (
            col == fig.x and fig.kind == "line" and _is_numeric(data[col])
        ):
            data[col] = data[col].astype(object).where(data[col].notna(), _UNSET)
    if fig.kind == "line" and _is_numeric(data[fig.x]) and data[fig.x].isna().any():
        n = int(data[fig.x].isna().sum())
        notes.append(f"{n} runs with a null {fig.x} left out")
        data = data[data[fig.x].notna()]
    value = fig.metric
    if fig.normalize is not None:
        match = [
            c
            for c in ((fig.x if fig.kind != "scatter" else None), fig.facet, "seed")
            if c and c in data.columns
        ]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            data = stats.normalize(data, fig.metric, fig.group, fig.normalize, match)
        for w in caught:
            msg = str(w.message)
            notes.append(msg)
            warnings.warn(f"{label}: {msg}", stacklevel=3)
        value = fig.value_column
    if fig.kind != "timeseries":
        data = data[data[value].notna()]
    if data.empty:
        raise VmemsimError(f"{label}: no run has a value of {value!r} to plot")
    return _Prepared(data=data.reset_index(drop=True), value=value, notes=notes)


# --------------------------------------------------------------------------------------------
# Drawing


def _style(i: int, colour: Optional[str] = None) -> Dict[str, Any]:
    """The i-th series' look: its colour (default the palette's i-th, repeating after 8), and
    after every 8 series the markers, line styles and hatches change."""
    cycle = i // len(PALETTE)
    return {
        "color": colour if colour is not None else PALETTE[i % len(PALETTE)],
        "marker": _MARKERS[(i + cycle) % len(_MARKERS)],
        "linestyle": _LINESTYLES[cycle % len(_LINESTYLES)],
        "hatch": _HATCHES[cycle % len(_HATCHES)],
    }


def _is_policy_column(column: Optional[str], groups: Sequence[Any]) -> bool:
    """Whether a group column names policies: ``machine.policy``, ``vm.host_policy``,
    ``policy`` ..., or every value is a registered policy's name."""
    if column is None:
        return False
    if column == "policy" or column.endswith((".policy", "_policy")):
        return True
    return bool(groups) and all(isinstance(g, str) and g in POLICY_COLOURS for g in groups)


def _generated_colour(k: int) -> str:
    import colorsys

    r, g, b = colorsys.hsv_to_rgb((k * 0.618033988749895) % 1.0, 0.7, 0.75)
    return "#{:02X}{:02X}{:02X}".format(round(r * 255), round(g * 255), round(b * 255))


def group_colours(column: Optional[str], groups: Sequence[Any]) -> Dict[Any, str]:
    """A colour for each group of one figure, no two alike. Policies (see
    :func:`_is_policy_column`) get their :data:`POLICY_COLOURS`; other groups take the
    palette in order, then :data:`EXTRA_COLOURS`, then generated hues. A policy missing from
    the table gets the first free colour from a place given by its name (stable across
    figures where it is free)."""
    import zlib

    policies = _is_policy_column(column, groups)
    out: Dict[Any, str] = {}
    used: set = set()
    if policies:
        for g in groups:
            c = POLICY_COLOURS.get(str(g))
            if c is not None and c not in used:
                out[g] = c
                used.add(c)
    pool = list(PALETTE) + list(EXTRA_COLOURS)
    for g in groups:
        if g in out:
            continue
        start = zlib.crc32(str(g).encode()) % len(pool) if policies else 0
        pick = next((c for c in pool[start:] + pool[:start] if c not in used), None)
        k = 0
        while pick is None or pick in used:
            pick = _generated_colour(k)
            k += 1
        out[g] = pick
        used.add(pick)
    return out


def _styles(fig: Figure, groups: Sequence[Any]) -> List[Dict[str, Any]]:
    """The look of each group of ``fig`` (:func:`_style` with :func:`group_colours`)."""
    colours = group_colours(fig.group, groups)
    return [_style(i, colours[g]) for i, g in enumerate(groups)]


#: Readable names of configuration keys and result columns, for figure titles, axis labels,
#: legends and table headings (:func:`key_label`).
KEY_LABELS = {
    "machine.policy": "policy",
    "machine.frames": "memory (frames)",
    "machine.cpus": "CPUs",
    "machine.swap": "swap device",
    "machine.cgroup": "cgroup limit",
    "machine.options": "policy options",
    "machine.costs": "event costs",
    "workload.name": "workload",
    "workload.trace": "trace",
    "workload.model": "workload model",
    "workload.guest": "guest workload",
    "vm.paging": "paging",
    "vm.host_frames": "host memory (frames)",
    "vm.host_policy": "host policy",
    "vm.eviction": "shadow-page eviction",
    "vm.mmu_pages": "shadow pages (n_max_mmu_pages)",
    "vm.count": "VMs",
    "vm.host_cpus": "host CPUs",
    "vm.host_swap": "host swap device",
    "vm.guest_swap": "guest swap device",
    "vm.guest_page": "guest page size",
    "vm.host_page": "host page size",
    "vm.pt_pages": "guest page-table pages",
    "wall_seconds": "wall-clock time",
}
_CONFIG_PREFIXES = ("machine.", "workload.", "run.", "vm.")


def key_label(key: Any) -> str:
    """A configuration key or result column as a person reads it: ``workload.name`` is
    "workload", ``machine.policy`` "policy", ``miss_ratio`` "miss ratio"; keys not in
    :data:`KEY_LABELS` lose their section prefix (``machine.``, ``vm.`` ...) and spell dots
    and underscores as spaces. The one place figures and tables name a key."""
    key = str(key)
    if key in KEY_LABELS:
        return KEY_LABELS[key]
    for prefix in _CONFIG_PREFIXES:
        if key.startswith(prefix):
            key = key[len(prefix):]
            break
    return key.replace(".", " ").replace("_", " ")


#: Column suffixes that give a unit, and the unit.
_UNIT_SUFFIXES = (("_seconds", "s"), ("_ns", "ns"), ("_us", "µs"), ("_ms", "ms"),
                  ("_bytes", "bytes"), ("_s", "s"))


def _unit_label(col: str) -> str:
    """:func:`key_label` with the unit of a suffix in brackets: ``runtime_s`` is
    "runtime (s)"."""
    if col in KEY_LABELS:
        label = KEY_LABELS[col]
        return f"{label} (s)" if col == "wall_seconds" else label
    for suffix, unit in _UNIT_SUFFIXES:
        if col.endswith(suffix) and len(col) > len(suffix):
            return f"{key_label(col[: -len(suffix)])} ({unit})"
    return key_label(col)


def _metric_label(fig: Figure) -> str:
    if fig.normalize is not None:
        return f"{key_label(fig.metric)} relative to {fig.normalize} (ratio)"
    return _unit_label(fig.metric)


def _default_title(fig: Figure) -> str:
    metric = key_label(fig.metric)
    what = metric if fig.normalize is None else f"{metric} relative to {fig.normalize}"
    if fig.kind == "cdf":
        return f"distribution of {what}"
    if fig.kind == "scatter":
        return f"{what} vs {key_label(fig.x)}"
    if fig.kind == "timeseries":
        return f"{what} over the run"
    if fig.kind == "latency":
        return f"{fig.request} request latency"
    return f"{what} by {key_label(fig.x)}"


def _si_format(v: float, _pos: Any = None) -> str:
    a = abs(v)
    for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= scale:
            return f"{v / scale:.4g}{suffix}"
    return f"{v:.4g}"


def _use_si(ax: Any, axis: str, values: Any) -> None:
    import numpy as np
    from matplotlib.ticker import FuncFormatter

    if getattr(ax, f"get_{axis}scale")() != "linear":
        return  # log axes keep matplotlib's powers-of-ten labels
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size and np.max(np.abs(arr)) >= 1e4:
        getattr(ax, f"{axis}axis").set_major_formatter(FuncFormatter(_si_format))


def _centre_and_error(s: "pd.DataFrame", mode: str) -> Tuple[Any, Any, Any]:
    """Centre, lower and upper error lengths (non-negative, NaN as 0) from a summary."""
    import numpy as np

    if mode == "iqr":
        centre = s["median"].to_numpy(float)
        lo, hi = centre - s["q1"].to_numpy(float), s["q3"].to_numpy(float) - centre
    else:
        centre = s["mean"].to_numpy(float)
        if mode == "stdev":
            lo = hi = s["stdev"].to_numpy(float)
        elif mode == "ci95":
            lo = hi = s["ci95"].to_numpy(float)
        elif mode == "minmax":
            lo, hi = centre - s["min"].to_numpy(float), s["max"].to_numpy(float) - centre
        else:
            lo = hi = np.zeros_like(centre)
    return centre, np.nan_to_num(np.maximum(lo, 0)), np.nan_to_num(np.maximum(hi, 0))


def _keys(data: "pd.DataFrame", col: Optional[str]) -> List[Any]:
    if col is None:
        return [None]
    return [_py(v) for v in ordered_values(_py(v) for v in data[col])]


def _subset(data: "pd.DataFrame", col: Optional[str], value: Any) -> "pd.DataFrame":
    return data if col is None else data[data[col] == value]


def _layout(fig: Figure, facets: List[Any]):
    """The figure and one axes per facet value: up to 3 panels a row (4 as 2 x 2), sharing
    y (and x where every panel has the same x values)."""
    from matplotlib.figure import Figure as MplFigure

    n = len(facets)
    ncols = 2 if n == 4 else min(n, 3)
    nrows = math.ceil(n / ncols)
    height = _PANEL_HEIGHT_IN * nrows + (0.4 if n > 1 else 0.0)
    mfig = MplFigure(figsize=(_FIG_WIDTH_IN, height), dpi=_DPI, layout="constrained")
    sharex = fig.kind in ("line", "bar", "box", "violin", "timeseries")
    # Distributions of different panels can sit far apart (and a shared axis squashes each
    # to a line): box and violin panels get their own y range.
    sharey = fig.kind not in ("box", "violin")
    axes = mfig.subplots(nrows, ncols, sharey=sharey, sharex=sharex, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    for k in range(max(0, n - ncols), n):
        # a panel with no panel below it keeps its x tick labels
        axes[k].xaxis.set_tick_params(labelbottom=True)
    return mfig, list(axes[:n]), ncols


def _panel_titles(fig: Figure, facets: List[Any], ncols: int) -> Tuple[List[str], bool]:
    """Panel titles "facet = value" where they fit the panel's width, else the value alone
    (wrapped), the facet's name then going to the figure title (the bool)."""
    import textwrap

    width = {1: 70, 2: 34}.get(ncols, 22)
    full = [f"{key_label(fig.facet)} = {v}" for v in facets]
    if all(len(t) <= width for t in full):
        return full, False
    return [textwrap.fill(str(v), width) for v in facets], True


def _categorical_axis(ax: Any, xs: List[Any]) -> None:
    labels = [str(v) for v in xs]
    ax.set_xticks(range(len(xs)))
    longest = max((len(s) for s in labels), default=0)
    try:
        ncols = ax.get_subplotspec().get_gridspec().ncols
    except AttributeError:
        ncols = 1
    rotate = len(labels) * (longest + 2) > {1: 48, 2: 30}.get(ncols, 22)
    ax.set_xticklabels(labels, rotation=30 if rotate else 0, ha="right" if rotate else "center")
    ax.set_xlim(-0.6, len(xs) - 0.4)


def _legend_label(v: Any) -> str:
    return str(v)


def plot_figure(
    fig: Union[Figure, Mapping[str, Any]],
    df: "pd.DataFrame",
    series_loader: Optional[SeriesLoader] = None,
    side_loader: Optional[Callable[[str, str], Any]] = None,
) -> "matplotlib.figure.Figure":
    """Draw one declared figure from the results table ``df`` and return the matplotlib
    Figure. ``fig`` is a :class:`Figure` or a declaration dict (validated first).
    ``series_loader(run_id)`` returns a run's time series (a DataFrame with ``accesses`` and
    the counters); needed by timeseries figures only. ``side_loader(run_id, kind)`` returns
    a run's side file of ``kind`` (latency figures read ``latency``: columns ``kind``,
    ``value_ns``, ``count``)."""
    if not isinstance(fig, Figure):
        fig = check_figures([fig], df.columns)[0]
    return _plot(fig, _prepare(fig, df), series_loader, side_loader)


def _plot(
    fig: Figure,
    prep: _Prepared,
    series_loader: Optional[SeriesLoader],
    side_loader: Optional[Callable[[str, str], Any]] = None,
):
    import matplotlib

    if fig.kind == "latency":
        series_loader = (
            (lambda rid: side_loader(rid, "latency")) if side_loader is not None else None
        )

    data, value = prep.data, prep.value
    if fig.logx and fig.kind == "line" and not _is_numeric(data[fig.x]):
        raise VmemsimError(f"figure {fig.name!r}: key 'logx': x column {fig.x!r} is not numeric")
    groups = _keys(data, fig.group)
    facets = _keys(data, fig.facet)
    with matplotlib.rc_context(
        {
            "font.size": 9,
            "axes.titlesize": 10,
            "axes.labelsize": 9,
            "legend.fontsize": 8,
            "legend.title_fontsize": 8,
            "xtick.labelsize": 8,
            "ytick.labelsize": 8,
            "figure.titlesize": 11,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "grid.linewidth": 0.6,
            "svg.hashsalt": "vmemsim",
        }
    ):
        mfig, axes, ncols = _layout(fig, facets)
        panel_titles, facet_in_title = _panel_titles(fig, facets, ncols)
        handles: Dict[str, Any] = {}
        draw = {
            "line": _draw_line,
            "bar": _draw_bar,
            "box": _draw_dist,
            "violin": _draw_dist,
            "cdf": _draw_cdf,
            "scatter": _draw_scatter,
            "timeseries": _draw_timeseries,
            "latency": _draw_latency,
        }[fig.kind]
        for ax, fv, panel_title in zip(axes, facets, panel_titles):
            part = _subset(data, fig.facet, fv)
            if fig.logy:
                ax.set_yscale("log")
            if fig.logx:
                ax.set_xscale("log")
            draw(fig, ax, part, value, groups, handles, data, series_loader)
            if fig.facet is not None:
                ax.set_title(panel_title)
        xlabel, ylabel = _axis_labels(fig)
        for k, ax in enumerate(axes):
            if k % ncols == 0 or fig.kind in ("box", "violin"):
                ax.set_ylabel(ylabel if k % ncols == 0 else "")
        # One x label, under the middle panel of the bottom row (one per panel would collide
        # when long; a figure-level label collides with the legend below).
        bottom = list(range(max(0, len(axes) - ncols), len(axes)))
        axes[bottom[len(bottom) // 2]].set_xlabel(xlabel)
        title = fig.title or _default_title(fig)
        if fig.facet is None:
            axes[0].set_title(textwrap.fill(title, 80))
        else:
            if facet_in_title:
                title = f"{title} — panels: {key_label(fig.facet)}"
            mfig.suptitle(textwrap.fill(title, 80))
        if handles and (fig.group is not None or fig.kind == "scatter"):
            # Below the panels: it never covers data or the title, and leaves the panels
            # the full width.
            mfig.legend(
                list(handles.values()),
                list(handles.keys()),
                title=key_label(fig.group) if fig.group is not None else None,
                loc="outside lower center",
                ncols=min(len(handles), 4),
                frameon=False,
            )
    return mfig


def _axis_labels(fig: Figure) -> Tuple[str, str]:
    if fig.kind == "latency":
        return (fig.xlabel or f"{fig.request} request latency (ns)",
                fig.ylabel or "fraction of requests slower")
    if fig.kind == "cdf":
        xl, yl = _metric_label(fig), "fraction of runs ≤ x"
    elif fig.kind == "scatter":
        xl, yl = _unit_label(fig.x), _metric_label(fig)
    elif fig.kind == "timeseries":
        xl, yl = "accesses", f"{key_label(fig.metric)} (cumulative)"
    else:
        xl, yl = _unit_label(fig.x), _metric_label(fig)
    return fig.xlabel or xl, fig.ylabel or yl


def _x_positions(fig: Figure, data: "pd.DataFrame") -> Tuple[bool, List[Any]]:
    """Whether x is placed on a numeric axis, and the x values in order (all panels)."""
    numeric = fig.kind == "line" and _is_numeric(data[fig.x])
    return numeric, _keys(data, fig.x)


def _draw_line(fig, ax, part, value, groups, handles, data, _loader) -> None:
    styles = _styles(fig, groups)
    numeric, xs = _x_positions(fig, data)
    pos = {v: (v if numeric else i) for i, v in enumerate(xs)}
    for gi, g in enumerate(groups):
        sub = _subset(part, fig.group, g)
        if sub.empty:
            continue
        s = stats.summarize(sub, [fig.x], value)
        s["__pos"] = [pos[_py(v)] for v in s[fig.x]]
        s = s.sort_values("__pos")
        centre, lo, hi = _centre_and_error(s, fig.error)
        st = styles[gi]
        h = ax.errorbar(
            s["__pos"].to_numpy(float),
            centre,
            yerr=None if fig.error == "none" else [lo, hi],
            color=st["color"],
            marker=st["marker"],
            linestyle=st["linestyle"],
            markersize=5,
            linewidth=1.5,
            capsize=3,
            elinewidth=1,
        )
        handles.setdefault(_legend_label(g), h)
    if numeric:
        _use_si(ax, "x", xs)
    else:
        _categorical_axis(ax, xs)
    _use_si(ax, "y", part[value])


def _dodge(n: int, width: float = 0.8) -> Tuple[float, List[float]]:
    w = width / n
    return w, [(-width / 2) + w * (k + 0.5) for k in range(n)]


def _draw_bar(fig, ax, part, value, groups, handles, data, _loader) -> None:
    styles = _styles(fig, groups)
    from matplotlib.patches import Patch

    _, xs = _x_positions(fig, data)
    w, offsets = _dodge(len(groups))
    for gi, g in enumerate(groups):
        sub = _subset(part, fig.group, g)
        if sub.empty:
            continue
        s = stats.summarize(sub, [fig.x], value)
        idx = {v: i for i, v in enumerate(xs)}
        s["__pos"] = [idx[_py(v)] + offsets[gi] for v in s[fig.x]]
        s = s.sort_values("__pos")
        pos = s["__pos"].to_numpy(float)
        centre, lo, hi = _centre_and_error(s, fig.error)
        st = styles[gi]
        ax.bar(
            pos,
            centre,
            width=w * 0.95,
            yerr=None if fig.error == "none" else [lo, hi],
            color=st["color"],
            hatch=st["hatch"],
            edgecolor="white" if not st["hatch"] else "black",
            linewidth=0.5,
            capsize=2.5,
            error_kw={"elinewidth": 1, "ecolor": "#333333"},
        )
        handles.setdefault(_legend_label(g), Patch(facecolor=st["color"], hatch=st["hatch"]))
    _categorical_axis(ax, xs)
    _use_si(ax, "y", part[value])


def _draw_dist(fig, ax, part, value, groups, handles, data, _loader) -> None:
    styles = _styles(fig, groups)
    import matplotlib.colors
    import numpy as np
    from matplotlib.patches import Patch

    _, xs = _x_positions(fig, data)
    w, offsets = _dodge(len(groups))
    for gi, g in enumerate(groups):
        sub = _subset(part, fig.group, g)
        st = styles[gi]
        positions, datasets, flat = [], [], []
        for xi, xv in enumerate(xs):
            vals = sub.loc[sub[fig.x] == xv, value].to_numpy(float)
            if vals.size == 0:
                continue
            p = xi + offsets[gi]
            if fig.kind == "violin" and np.unique(vals).size < 2:
                # a density needs spread: one value (or one repeated) is drawn as a tick
                flat.append((p, float(vals[0])))
                continue
            positions.append(p)
            datasets.append(vals)
        if fig.kind == "box" and datasets:
            bp = ax.boxplot(
                datasets,
                positions=positions,
                widths=w * 0.8,
                patch_artist=True,
                manage_ticks=False,
                # the median in the group's colour, so a box with no spread still shows it
                medianprops={"color": st["color"], "linewidth": 2},
                flierprops={
                    "marker": "o",
                    "markersize": 3,
                    "markerfacecolor": st["color"],
                    "markeredgecolor": st["color"],
                },
                whiskerprops={"color": st["color"]},
                capprops={"color": st["color"]},
            )
            for box in bp["boxes"]:
                box.set_facecolor(matplotlib.colors.to_rgba(st["color"], 0.3))
                box.set_hatch(st["hatch"])
                box.set_edgecolor(st["color"])
                box.set_linewidth(1)
        elif datasets:
            vp = ax.violinplot(
                datasets, positions=positions, widths=w * 0.9, showmedians=True, showextrema=True
            )
            for body in vp["bodies"]:
                body.set_facecolor(st["color"])
                body.set_edgecolor("black")
                body.set_linewidth(0.5)
                body.set_alpha(0.7)
                body.set_hatch(st["hatch"])
            for key in ("cmedians", "cmins", "cmaxes", "cbars"):
                if key in vp:
                    vp[key].set_color("black" if key == "cmedians" else st["color"])
                    vp[key].set_linewidth(1.2 if key == "cmedians" else 0.8)
        for p, v in flat:
            ax.hlines(v, p - w * 0.35, p + w * 0.35, color=st["color"], linewidth=2)
        if positions or flat:
            handles.setdefault(
                _legend_label(g),
                Patch(
                    facecolor=matplotlib.colors.to_rgba(st["color"], 0.5),
                    edgecolor=st["color"],
                    hatch=st["hatch"],
                ),
            )
    _categorical_axis(ax, xs)
    _use_si(ax, "y", part[value])


def _draw_cdf(fig, ax, part, value, groups, handles, data, _loader) -> None:
    styles = _styles(fig, groups)
    import numpy as np

    for gi, g in enumerate(groups):
        vals = np.sort(_subset(part, fig.group, g)[value].to_numpy(float))
        if vals.size == 0:
            continue
        frac = np.arange(1, vals.size + 1) / vals.size
        st = styles[gi]
        (h,) = ax.step(
            np.concatenate([[vals[0]], vals]),
            np.concatenate([[0.0], frac]),
            where="post",
            color=st["color"],
            linestyle=st["linestyle"],
            linewidth=1.5,
        )
        handles.setdefault(_legend_label(g), h)
    ax.set_ylim(0, 1.04)
    _use_si(ax, "x", part[value])


def _merged_latency(fig: Figure, part: "pd.DataFrame", loader: Any) -> Tuple[Any, Any]:
    """The runs' latency histograms of ``fig.request`` summed: ``(values_ns, counts)``
    ascending."""
    import numpy as np

    acc: Dict[int, int] = {}
    for rid in part["run_id"]:
        h = loader(rid) if loader is not None else None
        if h is None:
            raise VmemsimError(
                f"figure {fig.name!r}: run {rid} has no latency histograms (side file "
                "latency/<run_id>.parquet)")
        h = h[h["kind"] == fig.request]
        for v, c in zip(h["value_ns"].to_numpy(), h["count"].to_numpy()):
            acc[int(v)] = acc.get(int(v), 0) + int(c)
    vals = np.array(sorted(acc), dtype=float)
    return vals, np.array([acc[int(v)] for v in vals], dtype=float)


def _latency_quantile(vals: Any, counts: Any, q: float) -> float:
    """Nearest rank over a merged histogram (each value stands for its bucket's highest
    equivalent value, as the histograms are written)."""
    import numpy as np

    total = counts.sum()
    want = max(1.0, np.ceil(q * total - 1e-9))
    return float(vals[int(np.searchsorted(np.cumsum(counts), want))])


def _draw_latency(fig, ax, part, value, groups, handles, data, loader) -> None:
    """Complementary CDF of request latency (fraction of requests slower than x), every run
    of a group merged, on log-log axes: the tail is where policies differ."""
    styles = _styles(fig, groups)
    import numpy as np

    lo = 1.0
    for gi, g in enumerate(groups):
        sub = _subset(part, fig.group, g)
        if sub.empty:
            continue
        vals, counts = _merged_latency(fig, sub, loader)
        if counts.sum() == 0:
            continue
        total = counts.sum()
        slower = 1.0 - np.cumsum(counts) / total
        keep = slower > 0
        st = styles[gi]
        (h,) = ax.step(np.concatenate([[vals[0]], vals[keep]]),
                       np.concatenate([[1.0], slower[keep]]), where="post",
                       color=st["color"], linestyle=st["linestyle"], linewidth=1.5)
        handles.setdefault(_legend_label(g), h)
        lo = min(lo, 1.0 / total)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(lo / 2, 1.5)
    for q, lab in ((0.99, "p99"), (0.9999, "p99.99")):
        if lo <= 1 - q:
            ax.axhline(1 - q, color="#888888", linewidth=0.6, linestyle=":")
            ax.text(1.0, 1 - q, f" {lab}", transform=ax.get_yaxis_transform(), fontsize=7,
                    va="center", ha="left", color="#555555")


def _draw_scatter(fig, ax, part, value, groups, handles, data, _loader) -> None:
    styles = _styles(fig, groups)
    import numpy as np
    from matplotlib.lines import Line2D

    # With panels, each panel has its own fits: their r² go in the panel, and the legend
    # (shared by the panels) names the groups only.
    notes: List[str] = []
    for gi, g in enumerate(groups):
        sub = _subset(part, fig.group, g)
        sub = sub[sub[fig.x].notna()]
        if sub.empty:
            continue
        xv, yv = sub[fig.x].to_numpy(float), sub[value].to_numpy(float)
        st = styles[gi]
        ax.scatter(xv, yv, s=18, color=st["color"], marker=st["marker"], alpha=0.8, linewidths=0)
        try:
            fit = stats.linregress(xv, yv)
        except ValueError:
            fit = None
        if fit is not None and np.isfinite(fit.r2):
            r2 = f"r² = {fit.r2:.2f}"
            xx = np.array([xv.min(), xv.max()])
            ax.plot(
                xx, fit.slope * xx + fit.intercept, color=st["color"], linewidth=1, linestyle="--"
            )
        else:
            r2 = "r² n/a"
        name = _legend_label(g) if fig.group is not None else "all runs"
        if fig.facet is not None:
            notes.append(f"{name}: {r2}")
            label = name
        else:
            label = f"{name} ({r2})"
        if label not in handles:
            handles[label] = Line2D(
                [], [], color=st["color"], marker=st["marker"], linestyle="--", markersize=5
            )
    if notes:
        ax.text(0.02, 0.98, "\n".join(notes), transform=ax.transAxes, va="top", ha="left",
                fontsize=6.5, bbox=dict(boxstyle="round", facecolor="white", alpha=0.8,
                                        linewidth=0.3))
    _use_si(ax, "x", part[fig.x])
    _use_si(ax, "y", part[value])


def _load_series(fig: Figure, loader: Optional[SeriesLoader], run_id: str) -> Tuple[Any, Any]:
    label = f"figure {fig.name!r}"
    if loader is None:
        raise VmemsimError(
            f"{label}: a timeseries figure needs the runs' time series (no series loader)"
        )
    try:
        s = loader(run_id)
    except FileNotFoundError:
        s = None
    if s is None:
        raise VmemsimError(f"{label}: run {run_id} has no time series (was run.sample_every 0?)")
    for col in ("accesses", fig.metric):
        if col not in s.columns:
            raise VmemsimError(
                f"{label}: key 'metric': run {run_id}'s time series has no column {col!r}"
            )
    s = s.sort_values("accesses")
    return s["accesses"].to_numpy(float), s[fig.metric].to_numpy(float)


def _draw_timeseries(fig, ax, part, value, groups, handles, data, loader) -> None:
    styles = _styles(fig, groups)
    import numpy as np

    if "run_id" not in part.columns:
        raise VmemsimError(
            f"figure {fig.name!r}: a timeseries figure needs the results' run_id column"
        )
    per_group = {g: _subset(part, fig.group, g) for g in groups}
    few = max(len(p) for p in per_group.values()) <= TIMESERIES_MAX_RUN_LINES
    everything = []
    for gi, g in enumerate(groups):
        sub = per_group[g]
        if sub.empty:
            continue
        st = styles[gi]
        runs = [_load_series(fig, loader, str(r)) for r in sub["run_id"]]
        everything.extend(runs)
        if few:
            for k, (xa, ya) in enumerate(runs):
                (h,) = ax.plot(
                    xa, ya, color=st["color"], linestyle=st["linestyle"], linewidth=1, alpha=0.85
                )
                handles.setdefault(_legend_label(g), h)
            continue
        grid = np.unique(np.concatenate([xa for xa, _ in runs]))
        mat = np.vstack([np.interp(grid, xa, ya, left=np.nan, right=np.nan) for xa, ya in runs])
        count = np.sum(~np.isnan(mat), axis=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(mat, axis=0)
            if fig.error == "iqr":
                q1, centre, q3 = np.nanpercentile(mat, [25, 50, 75], axis=0)
                lo, hi = q1, q3
            else:
                centre = mean
                sd = np.nanstd(mat, axis=0, ddof=1)
                if fig.error == "stdev":
                    lo, hi = mean - sd, mean + sd
                elif fig.error == "ci95":
                    half = (
                        np.array([stats.t_ppf(0.975, c - 1) if c >= 2 else np.nan for c in count])
                        * sd
                        / np.sqrt(np.maximum(count, 1))
                    )
                    lo, hi = mean - half, mean + half
                elif fig.error == "minmax":
                    lo, hi = np.nanmin(mat, axis=0), np.nanmax(mat, axis=0)
                else:
                    lo = hi = None
        (h,) = ax.plot(grid, centre, color=st["color"], linestyle=st["linestyle"], linewidth=1.5)
        if lo is not None:
            ax.fill_between(grid, lo, hi, color=st["color"], alpha=0.2, linewidth=0)
        handles.setdefault(_legend_label(g), h)
    if everything:
        _use_si(ax, "x", np.concatenate([xa for xa, _ in everything]))
        _use_si(ax, "y", np.concatenate([ya for _, ya in everything]))


def _caption(fig: Figure, prep: _Prepared) -> str:
    err = {
        "stdev": "± sample standard deviation",
        "ci95": "± 95% confidence interval of the mean",
        "iqr": "interquartile range",
        "minmax": "minimum to maximum",
    }.get(fig.error)
    centre = "median" if fig.error == "iqr" else "mean"
    if fig.kind in ("line", "bar"):
        text = f"{'Points' if fig.kind == 'line' else 'Bars'}: {centre} across seeds"
        text += f"; error bars: {err}." if err else "."
    elif fig.kind in ("box", "violin"):
        text = (
            "Boxes: quartiles, line at the median, whiskers to the furthest value within 1.5 IQR."
            if fig.kind == "box"
            else "Violins: density across seeds, line at the median, ticks at the extremes."
        )
    elif fig.kind == "cdf":
        text = "Empirical CDF across runs."
    elif fig.kind == "scatter":
        text = "One point per run; dashed lines: least-squares fits (r² in the legend)."
    elif fig.kind == "latency":
        text = ("Complementary CDF of request latency: the histograms of every run of a group "
                "merged; dotted lines mark p99 and p99.99.")
    else:
        text = (
            f"One line per run when a group has at most {TIMESERIES_MAX_RUN_LINES} runs, "
            f"otherwise the {centre} across runs"
            + (f" with a band: {err}." if err else ".")
            + " The summary table gives the end-of-run value from the results table."
        )
    if fig.normalize is not None:
        text += f" Values are {fig.metric} divided by that of {fig.group} = {fig.normalize} at the same "
        text += (
            ", ".join(
                c for c in ((fig.x if fig.kind != "scatter" else None), fig.facet, "seed") if c
            )
            + "."
        )
    if fig.where:
        text += " Runs with " + "; ".join(f"{k} in {v}" for k, v in fig.where.items()) + "."
    return text


# --------------------------------------------------------------------------------------------
# The report


def load_results(results_dir_or_file: Union[str, Path]) -> "pd.DataFrame":
    """The results table of a results directory (its ``results.parquet``) or a parquet file."""
    import pandas as pd

    p = Path(results_dir_or_file)
    f = p / "results.parquet" if p.is_dir() else p
    if not f.exists():
        raise VmemsimError(
            f"{f}: no results table (expected a results directory or a .parquet file)"
        )
    try:
        return pd.read_parquet(f)
    except ImportError as e:
        raise VmemsimError(f"{f}: reading parquet needs pyarrow ({e})") from None
    except Exception as e:  # a corrupt or foreign file
        raise VmemsimError(f"{f}: not a readable parquet table ({e})") from None


def _dir_series_loader(results_dir: Path) -> SeriesLoader:
    import pandas as pd

    def load(run_id: str) -> "pd.DataFrame":
        f = results_dir / "series" / f"{run_id}.parquet"
        if not f.exists():
            raise FileNotFoundError(f)
        return pd.read_parquet(f)

    return load


def _dir_side_loader(results_dir: Path) -> Callable[[str, str], Any]:
    import pandas as pd

    def load(run_id: str, kind: str) -> Any:
        f = results_dir / kind / f"{run_id}.parquet"
        return pd.read_parquet(f) if f.exists() else None

    return load


def _not_a_finite_number(v: Any) -> Optional[str]:
    """The cell of a value that is not a finite number (None and NaN as an en dash, text and
    booleans as they are, infinities as signs), or None for a finite number."""
    if v is None:
        return "–"
    v = _py(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, float) and math.isnan(v):
        return "–"
    if isinstance(v, float) and math.isinf(v):
        return "∞" if v > 0 else "−∞"
    return None


def _fmt_key(v: Any) -> str:
    """A key cell (a configuration value, a run id): integers exactly, other numbers to 6
    significant digits, NaN as an en dash; it names the configuration, so nothing is
    grouped or rounded away."""
    special = _not_a_finite_number(v)
    if special is not None:
        return special
    v = _py(v)
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    a = abs(v)
    if 1e-4 <= a < 1e15:
        decimals = max(0, 5 - int(math.floor(math.log10(a))))
        return f"{v:.{decimals}f}".rstrip("0").rstrip(".")
    return f"{v:.5e}"


#: Column suffixes of times (summary cells of these columns get 3 significant digits).
_TIME_SUFFIXES = ("_seconds", "_s", "_ns", "_us", "_ms")


def _is_time(column: Optional[str]) -> bool:
    return column is not None and str(column).endswith(_TIME_SUFFIXES)


def _fmt(v: Any, column: Optional[str] = None) -> str:
    """A number of a summary table: whole numbers (counts) as integers with thousands
    separators; other numbers to 4 significant digits, 3 for times (``column`` ending in
    ``_seconds``, ``_s``, ``_ns``, ...), a number of 1,000 or more as a whole number;
    below 0.0001 in exponent form. NaN is an en dash; text is as it is."""
    special = _not_a_finite_number(v)
    if special is not None:
        return special
    v = _py(v)
    digits = 3 if _is_time(column) else 4
    a = abs(v)
    if a >= 1e15 or (0 < a < 1e-4):
        return f"{v:.{digits - 1}e}"
    if float(v).is_integer():
        return f"{int(v):,}"
    exponent = int(math.floor(math.log10(a)))
    decimals = max(0, digits - 1 - exponent)
    # round first: 0.99996 to 4 digits is 1.000, whose exponent is one more
    r = round(v, decimals)
    if r != 0 and int(math.floor(math.log10(abs(r)))) > exponent:
        decimals = max(0, decimals - 1)
        r = round(v, decimals)
    if decimals == 0:
        return f"{int(r):,}"
    return f"{r:,.{decimals}f}".rstrip("0").rstrip(".")


def _summary_table(fig: Figure, prep: _Prepared, value: str) -> "pd.DataFrame":
    by = [
        c
        for c in (
            fig.facet,
            (fig.x if fig.kind in ("line", "bar", "box", "violin") else None),
            fig.group,
        )
        if c
    ]
    data = prep.data
    if fig.kind == "timeseries":
        data = data[data[value].notna()] if value in data.columns else data.iloc[0:0]
    s = stats.summarize(data, by, value)
    if by:
        orders = {c: {v: i for i, v in enumerate(_keys(prep.data, c))} for c in by}
        for c in by:
            s[f"__o_{c}"] = [orders[c].get(_py(v), len(orders[c])) for v in s[c]]
        s = s.sort_values([f"__o_{c}" for c in by], kind="stable").drop(
            columns=[f"__o_{c}" for c in by]
        )
    return s


_TABLE_COLUMNS = ["n", "mean", "median", "stdev", "q1", "q3", "min", "max", "ci95"]


def _th(column: Any) -> str:
    """A table heading: the column's :func:`key_label`, its key in a tooltip."""
    label, raw = key_label(column), str(column)
    if label == raw or column in _TABLE_COLUMNS:
        return f"<th>{html.escape(raw)}</th>"
    return f'<th title="{html.escape(raw)}">{html.escape(label)}</th>'


def _html_table(s: "pd.DataFrame", caption: str, column: Optional[str] = None) -> str:
    """A summary table; ``column`` is the summarised column (its name tells a time)."""
    cols = [c for c in s.columns if c not in _TABLE_COLUMNS] + _TABLE_COLUMNS
    head = "".join(_th(c) for c in cols)
    rows = []
    for _, r in s.iterrows():
        cells = "".join(
            (
                f'<td class="num">{html.escape(_fmt(r[c], None if c == "n" else column))}</td>'
                if c in _TABLE_COLUMNS
                else f"<td>{html.escape(_fmt_key(r[c]))}</td>"
            )
            for c in cols
        )
        rows.append(f"<tr>{cells}</tr>")
    return (
        f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _seeds_text(seeds: List[int]) -> str:
    if not seeds:
        return "none"
    if len(seeds) > 3 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]} ({len(seeds)} seeds)"
    return ", ".join(map(str, seeds))


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:60rem;margin:2rem auto;
padding:0 1rem;color:#222;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.25rem;margin-top:2.2rem;border-bottom:1px solid #ddd}
.desc{white-space:pre-line}.meta td,.meta th{text-align:left;padding:.1rem .8rem .1rem 0;border:none}
table{border-collapse:collapse;font-size:.85rem;margin:.6rem 0}caption{text-align:left;font-weight:600;
padding:.2rem 0}th,td{border:1px solid #ddd;padding:.2rem .5rem}th{background:#f4f4f4}td.num{text-align:right;
font-variant-numeric:tabular-nums}img{max-width:100%;height:auto}.cap{color:#555;font-size:.9rem}
.note{color:#8a4b00;font-size:.9rem}pre{background:#f7f7f7;padding:.6rem;overflow-x:auto;font-size:.8rem}
td.err{font-family:ui-monospace,monospace;font-size:.8rem;white-space:pre-wrap}
"""


def write_report(
    results_dir_or_df: Union[str, Path, "pd.DataFrame"],
    figures: Optional[Sequence[Mapping[str, Any]]],
    out_dir: Union[str, Path],
    *,
    title: Optional[str] = None,
    description: Optional[str] = None,
    series_loader: Optional[SeriesLoader] = None,
    config: Optional[Mapping[str, Any]] = None,
    side_loader: Optional[Callable[[str, str], Any]] = None,
) -> List[Path]:
    """Write every declared figure as ``OUT/<name>.png`` and ``OUT/<name>.svg`` and a
    self-contained ``OUT/index.html`` (figures embedded as PNG, summary tables, run counts,
    failed runs with their errors, versions and seeds, and ``config`` when given). Returns
    the written paths: each figure's PNG then SVG, in declaration order, then index.html.

    ``results_dir_or_df`` is a results directory (its ``results.parquet``; time series from
    its ``series/`` when ``series_loader`` is None), a parquet file or the table itself.
    ``figures`` None takes ``config["report"]["figures"]``; ``title`` and ``description``
    default to the config's ``[experiment]`` name and description. Every figure is
    validated before anything is drawn."""
    import pandas as pd

    if isinstance(results_dir_or_df, pd.DataFrame):
        df = results_dir_or_df
    else:
        src = Path(results_dir_or_df)
        df = load_results(src)
        if series_loader is None and src.is_dir():
            series_loader = _dir_series_loader(src)
        if side_loader is None and src.is_dir():
            side_loader = _dir_side_loader(src)
    experiment = dict((config or {}).get("experiment", {}) or {})
    if figures is None:
        figures = list(((config or {}).get("report", {}) or {}).get("figures", []) or [])
    specs = check_figures(figures, df.columns)
    if title is None:
        title = (
            experiment.get("name")
            or (
                ", ".join(map(str, pd.unique(df["experiment"].dropna())))
                if "experiment" in df.columns
                else ""
            )
            or "vmemsim report"
        )
    if description is None:
        description = experiment.get("description", "") or ""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    written: List[Path] = []
    sections: List[str] = []
    for spec in specs:
        prep = _prepare(spec, df)
        mfig = _plot(spec, prep, series_loader, side_loader)
        png, svg = out / f"{spec.name}.png", out / f"{spec.name}.svg"
        mfig.savefig(png, dpi=_DPI, metadata={"Software": None})
        mfig.savefig(svg, metadata={"Date": None})
        written += [png, svg]
        lat = (lambda rid: side_loader(rid, "latency")) if side_loader is not None else None
        sections.append(_figure_section(spec, prep, png.read_bytes(), lat))

    page = _page(df, specs, sections, title, description, config)
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    written.append(index)
    return written


def _latency_table(spec: Figure, prep: _Prepared, loader: Any) -> str:
    """Percentiles of each group's merged histogram (ns)."""
    e = html.escape
    by = [c for c in (spec.facet, spec.group) if c]
    qs = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999))
    head = "".join(_th(c) for c in by + ["runs", "requests"] + [q for q, _ in qs] + ["max"])
    rows = []
    keys = [[None]] if not by else None
    facets = _keys(prep.data, spec.facet)
    groups = _keys(prep.data, spec.group)
    for fv in facets:
        for g in groups:
            sub = _subset(_subset(prep.data, spec.facet, fv), spec.group, g)
            if sub.empty:
                continue
            vals, counts = _merged_latency(spec, sub, loader)
            if counts.sum() == 0:
                continue
            cells = [v for v, c in ((fv, spec.facet), (g, spec.group)) if c]
            nums = [len(sub), int(counts.sum())] + [
                _latency_quantile(vals, counts, q) for _, q in qs] + [float(vals[-1])]
            rows.append("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in cells)
                        + "".join(f'<td class="num">{e(_fmt(v, c))}</td>'
                                  for v, c in zip(nums, [None, None] + ["latency_ns"] * 6))
                        + "</tr>")
    del keys
    return (f"<table><caption>{e(spec.request)} request latency (ns), runs merged</caption>"
            f"<tr>{head}</tr>{''.join(rows)}</table>")


def _figure_section(spec: Figure, prep: _Prepared, png: bytes, loader: Any = None) -> str:
    e = html.escape
    heading = spec.title or _default_title(spec)
    parts = [
        f'<section id="fig-{e(spec.name)}"><h2>{e(heading)}</h2>',
        f'<img alt="{e(heading)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">',
        f'<p class="cap">{e(_caption(spec, prep))} '
        f'Files: <a href="{e(spec.name)}.png">{e(spec.name)}.png</a>, '
        f'<a href="{e(spec.name)}.svg">{e(spec.name)}.svg</a>.</p>',
    ]
    for note in prep.notes:
        parts.append(f'<p class="note">Note: {e(note)}</p>')
    if spec.kind == "latency":
        parts.append(_latency_table(spec, prep, loader))
    elif spec.normalize is not None:
        parts.append(
            _html_table(
                _summary_table(spec, prep, prep.value),
                f"{key_label(spec.metric)} relative to {key_label(spec.group)} = "
                f"{spec.normalize}",
                prep.value,
            )
        )
        raw = _html_table(
            _summary_table(spec, prep, spec.metric), f"{_unit_label(spec.metric)} (not normalised)",
            spec.metric,
        )
        parts.append(
            f"<details><summary>{e(key_label(spec.metric))} before normalisation</summary>"
            f"{raw}</details>"
        )
    else:
        what = _unit_label(spec.metric)
        if spec.kind == "timeseries":
            what += " at the end of each run"
        parts.append(_html_table(_summary_table(spec, prep, prep.value), what, prep.value))
        if spec.kind == "scatter":
            parts.append(_html_table(_summary_table(spec, prep, spec.x), _unit_label(spec.x),
                                     spec.x))
    parts.append("</section>")
    return "\n".join(parts)


def _page(
    df, specs: List[Figure], sections: List[str], title: str, description: str, config
) -> str:
    import pandas as pd

    from . import __version__

    e = html.escape
    n = len(df)
    status = df["status"] if "status" in df.columns else pd.Series(["ok"] * n)
    failed = df[status != "ok"]
    seeds = sorted(int(s) for s in pd.unique(df["seed"].dropna())) if "seed" in df.columns else []
    versions = (
        sorted(map(str, pd.unique(df["version"].dropna()))) if "version" in df.columns else []
    )
    meta = [
        ("runs", f"{n} ({int((status == 'ok').sum())} ok, {len(failed)} failed)"),
        ("seeds", _seeds_text(seeds)),
        ("vmemsim version of the runs", ", ".join(versions) or "unknown"),
        ("report written by vmemsim", __version__),
    ]
    if "experiment" in df.columns:
        meta.insert(0, ("experiment", ", ".join(map(str, pd.unique(df["experiment"].dropna())))))
    if "wall_seconds" in df.columns:
        total = pd.to_numeric(df["wall_seconds"], errors="coerce").sum()
        meta.append(("total run time", f"{_fmt(float(total), 'wall_seconds')} s"))
    body = [
        f"<h1>{e(title)}</h1>",
        f'<p class="desc">{e(description)}</p>' if description else "",
        '<table class="meta">'
        + "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in meta)
        + "</table>",
    ]
    if specs:
        body.append(
            "<nav><ul>"
            + "".join(
                f'<li><a href="#fig-{e(s.name)}">{e(s.title or _default_title(s))}</a></li>'
                for s in specs
            )
            + "</ul></nav>"
        )
    body.extend(sections)
    body.append(f'<section id="failed"><h2>Failed runs ({len(failed)})</h2>')
    if len(failed):
        varying = [
            c
            for c in df.columns
            if c.split(".")[0] in ("machine", "workload", "run") and df[c].astype(str).nunique() > 1
        ]
        cols = [c for c in ["run_id", "seed"] if c in df.columns] + varying
        head = "".join(_th(c) for c in cols + ["error"])
        rows = []
        for _, r in failed.iterrows():
            cells = "".join(f"<td>{e(_fmt_key(r[c]))}</td>" for c in cols)
            err = r["error"] if "error" in failed.columns and not pd.isna(r["error"]) else ""
            rows.append(f'<tr>{cells}<td class="err">{e(str(err))}</td></tr>')
        body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")
    else:
        body.append("<p>None.</p>")
    body.append("</section>")
    if config is not None:
        body.append(
            '<section id="config"><h2>Experiment</h2><details><summary>configuration</summary><pre>'
            + e(json.dumps(config, indent=2, default=str, ensure_ascii=False))
            + "</pre></details></section>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>\n"
        + "\n".join(b for b in body if b)
        + "\n</body></html>\n"
    )

"""vmemsim.report: declared figures are validated with errors naming the figure and the key;
every kind draws the numbers computed here by hand; write_report writes valid PNG/SVG files
and an HTML page with the summary numbers, failed runs, versions and seeds."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from vmemsim import VmemsimError  # noqa: E402
from vmemsim import report  # noqa: E402

POLICIES = {"lru": 1000, "fifo": 1200, "clock": 1100}
#: first-appearance order is not the display order: "10%" < "25%" < "50%"
FRAMES = {"25%": 2, "10%": 3, "50%": 1}
SEEDS = range(5)
FAILED = {("fifo", "50%", 4), ("clock", "10%", 0)}


def major_faults(policy: str, frames: str, seed: int) -> int:
    """Made-up but deterministic: a per-policy base, a per-size factor, per-seed spread."""
    return POLICIES[policy] * FRAMES[frames] * 1000 + 7000 * seed + 30000 * (seed * seed % 3)


def results_table() -> pd.DataFrame:
    rows = []
    i = 0
    for pol in POLICIES:
        for fr in FRAMES:
            for seed in SEEDS:
                failed = (pol, fr, seed) in FAILED
                mf = None if failed else major_faults(pol, fr, seed)
                rows.append(
                    {
                        "run_id": f"{i:016x}",
                        "experiment": "policies",
                        "status": "error" if failed else "ok",
                        "error": f"trace.txt: line {i}: bad page <x> & more" if failed else None,
                        "seed": seed,
                        "version": "0.1.0",
                        "wall_seconds": 0.5 + 0.01 * i,
                        "machine.policy": pol,
                        "machine.frames": fr,
                        "workload.name": "zipf" if seed % 2 else "scan",
                        "frames": None if failed else {"10%": 2000, "25%": 5000, "50%": 10000}[fr],
                        "accesses": None if failed else 200_000,
                        "major_faults": mf,
                        "miss_ratio": None if failed else mf / 4_000_000,
                    }
                )
                i += 1
    return pd.DataFrame(rows)


def series(run_id: str) -> pd.DataFrame:
    i = int(run_id, 16)
    acc = np.arange(0, 200_001, 25_000)
    return pd.DataFrame({"accesses": acc, "major_faults": acc // 10 + 100 * i})


FIGURES: List[Dict] = [
    {
        "name": "line",
        "kind": "line",
        "metric": "major_faults",
        "x": "machine.frames",
        "group": "machine.policy",
    },
    {
        "name": "bar",
        "kind": "bar",
        "metric": "major_faults",
        "x": "machine.frames",
        "group": "machine.policy",
        "normalize": "lru",
        "error": "ci95",
        "ylabel": "major faults relative to LRU (ratio)",
    },
    {
        "name": "box",
        "kind": "box",
        "metric": "miss_ratio",
        "x": "machine.frames",
        "group": "machine.policy",
    },
    {
        "name": "violin",
        "kind": "violin",
        "metric": "miss_ratio",
        "x": "machine.policy",
        "facet": "workload.name",
        "title": "Miss ratio <by> policy & workload",
    },
    {
        "name": "cdf",
        "kind": "cdf",
        "metric": "major_faults",
        "group": "machine.policy",
        "logx": True,
    },
    {
        "name": "scatter",
        "kind": "scatter",
        "metric": "major_faults",
        "x": "frames",
        "group": "machine.policy",
    },
    {
        "name": "series",
        "kind": "timeseries",
        "metric": "major_faults",
        "group": "machine.policy",
        "where": {"machine.frames": "25%"},
        "error": "minmax",
    },
]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    paths = report.write_report(
        results_table(),
        FIGURES,
        out,
        title="Policies <on> mixtures",
        description="Three policies & three sizes.",
        series_loader=series,
        config={"experiment": {"name": "policies", "seeds": 5}},
    )
    return out, paths, (out / "index.html").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------- the files


def test_every_declared_file_is_written_and_valid(written) -> None:
    out, paths, _ = written
    expected = [out / f"{f['name']}.{ext}" for f in FIGURES for ext in ("png", "svg")] + [
        out / "index.html"
    ]
    assert paths == expected
    for f in FIGURES:
        png = (out / f"{f['name']}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(png) < 150_000, (f["name"], len(png))
        # PNG header: width and height (big-endian) at bytes 16..24; ~7 in at 110 dpi
        width = int.from_bytes(png[16:20], "big")
        assert 700 <= width <= 840, width
        root = ET.parse(out / f"{f['name']}.svg").getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_html_is_self_contained_and_escaped(written) -> None:
    out, _, page = written
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>Policies &lt;on&gt; mixtures</title>" in page
    assert "Three policies &amp; three sizes." in page
    assert "Miss ratio &lt;by&gt; policy &amp; workload" in page
    for f in FIGURES:
        assert f'id="fig-{f["name"]}"' in page
    assert page.count('src="data:image/png;base64,') == len(FIGURES)
    # no external assets: nothing loaded from elsewhere, only links to the files beside it
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page
    assert "<script" not in page and 'rel="stylesheet"' not in page


def test_html_run_counts_failures_versions_seeds(written) -> None:
    _, _, page = written
    assert "45 (43 ok, 2 failed)" in page
    assert "0–4 (5 seeds)" in page
    assert "<td>0.1.0</td>" in page
    assert "Failed runs (2)" in page
    # the failed runs' errors, escaped, with their run ids
    table = results_table()
    for _, r in table[table["status"] == "error"].iterrows():
        assert r["run_id"] in page
        assert r["error"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in page
    assert "&quot;seeds&quot;: 5" in page  # the config, as JSON


def _cells(page: str, section: str) -> str:
    start = page.index(f'id="fig-{section}"')
    return page[start : page.index("</section>", start)]


def test_html_summary_numbers(written) -> None:
    _, _, page = written
    line = _cells(page, "line")
    # lru at 10%: 3,000,000 + 7000 * seed + 30000 * (seed^2 mod 3) over seeds 0..4
    #   = 3,000,000 + 7000 * 10 / 5 + 30000 * (0 + 1 + 1 + 0 + 1) / 5 = 3,032,000
    assert '<td>10%</td><td>lru</td><td class="num">5</td><td class="num">3,032,000</td>' in line
    # fifo at 50% lost seed 4: seeds 0..3 -> 1,200,000 + 7000 * 6 / 4 + 30000 * 2 / 4
    assert '<td>50%</td><td>fifo</td><td class="num">4</td><td class="num">1,225,500</td>' in line
    # rows in display order: 10% before 25% before 50%
    assert line.index("<td>10%</td>") < line.index("<td>25%</td>") < line.index("<td>50%</td>")
    # normalised: lru is exactly 1 with zero spread
    bar = _cells(page, "bar")
    one = '<td class="num">1</td>'
    assert f'<td>25%</td><td>lru</td><td class="num">5</td>{one}{one}<td class="num">0</td>' in bar
    # clock/lru at 25%, seed by seed
    ratios = [major_faults("clock", "25%", s) / major_faults("lru", "25%", s) for s in SEEDS]
    mean = sum(ratios) / 5
    assert (
        f'<td>25%</td><td>clock</td><td class="num">5</td><td class="num">{report._fmt(mean)}</td>'
        in bar
    )
    assert report._fmt(mean) == f"{mean:.3f}"  # 1.1 and a bit: 4 significant digits


# ---------------------------------------------------------------------------- the drawings


def test_line_draws_the_means_in_size_order() -> None:
    mfig = report.plot_figure(FIGURES[0], results_table())
    ax = mfig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["10%", "25%", "50%"]
    assert len(ax.containers) == 3  # one error-bar series per policy
    lru = ax.containers[0].lines[0]
    assert list(lru.get_xdata()) == [0, 1, 2]
    expected = [sum(major_faults("lru", fr, s) for s in SEEDS) / 5 for fr in ("10%", "25%", "50%")]
    assert list(lru.get_ydata()) == pytest.approx(expected, rel=1e-12)
    legend = mfig.legends[0]
    assert legend.get_title().get_text() == "policy"
    assert [t.get_text() for t in legend.get_texts()] == ["lru", "fifo", "clock"]
    assert ax.get_ylabel() == "major faults" and ax.get_xlabel() == "memory (frames)"


def bar_heights(ax) -> Dict[float, float]:
    """Bar height by the bar's centre; with 3 groups the middle one (fifo) is centred on the
    x index (0 for 10%, 1 for 25%, 2 for 50%), lru 0.8/3 left of it."""
    return {round(p.get_x() + p.get_width() / 2, 9): p.get_height() for p in ax.patches}


def test_bar_heights_are_normalised_means() -> None:
    mfig = report.plot_figure(FIGURES[1], results_table())
    ax = mfig.axes[0]
    heights = bar_heights(ax)
    assert len(heights) == 9
    for i in range(3):  # lru at each size, exactly
        assert heights[round(i - 0.8 / 3, 9)] == 1.0
    fifo_10 = sum(major_faults("fifo", "10%", s) / major_faults("lru", "10%", s) for s in SEEDS) / 5
    assert heights[0.0] == pytest.approx(fifo_10, rel=1e-12)
    assert ax.get_ylabel() == "major faults relative to LRU (ratio)"  # the user's label wins


def test_cdf_scatter_and_facets() -> None:
    df = results_table()
    cdf = report.plot_figure(FIGURES[4], df).axes[0]
    lru = cdf.lines[0]
    assert lru.get_ydata()[-1] == 1.0 and len(lru.get_ydata()) == 15 + 1
    assert cdf.get_xscale() == "log"
    sc = report.plot_figure(FIGURES[5], df)
    texts = [t.get_text() for t in sc.legends[0].get_texts()]
    ok = df[(df["status"] == "ok") & (df["machine.policy"] == "lru")]
    r = np.corrcoef(ok["frames"], ok["major_faults"])[0, 1]
    assert texts[0] == f"lru (r² = {r * r:.2f})"
    violin = report.plot_figure(FIGURES[3], df)
    assert [a.get_title() for a in violin.axes] == ["workload = scan", "workload = zipf"]
    # distributions get their own y range per panel
    assert not violin.axes[0].get_shared_y_axes().joined(violin.axes[0], violin.axes[1])


def test_timeseries_mean_and_thin_lines() -> None:
    df = results_table()
    ax = report.plot_figure(FIGURES[6], df, series).axes[0]
    # 5 runs per policy at 25%: one mean line each
    assert len(ax.lines) == 3
    runs = df[(df["machine.policy"] == "lru") & (df["machine.frames"] == "25%")]["run_id"]
    expected = np.mean([series(r)["major_faults"].to_numpy(float) for r in runs], axis=0)
    assert list(ax.lines[0].get_ydata()) == pytest.approx(list(expected))
    few = dict(FIGURES[6], where={"machine.frames": "25%", "seed": [0, 1]})
    ax = report.plot_figure(few, df, series).axes[0]
    assert len(ax.lines) == 6  # 2 runs x 3 policies, one thin line each
    with pytest.raises(VmemsimError, match="figure 'series'.*series loader"):
        report.plot_figure(FIGURES[6], df, None)


def test_display_order() -> None:
    assert report.ordered_values(["25%", "10%", "5%", "100%"]) == ["5%", "10%", "25%", "100%"]
    assert report.ordered_values(["lru", "fifo", "lru", "clock"]) == ["lru", "fifo", "clock"]
    assert report.ordered_values([30, 4, 100]) == [4, 30, 100]
    assert report.ordered_values(["10", "9", "100"]) == ["9", "10", "100"]
    assert report.ordered_values(["10%", 500]) == ["10%", 500]  # mixed: as they come


def test_many_groups_change_marker_after_eight_colours() -> None:
    styles = [report._style(i) for i in range(10)]
    assert len({s["color"] for s in styles[:8]}) == 8
    assert (styles[8]["color"], styles[8]["linestyle"]) == (styles[0]["color"], "--")


def _policy_results(policies: List[str], facet: Dict[str, str] = None) -> pd.DataFrame:
    """Two runs (seeds) per policy at two sizes; miss ratio made up."""
    rows = []
    for i, pol in enumerate(policies):
        for fr in ("10%", "50%"):
            for seed in (0, 1):
                for wl in (facet or {"": ""}):
                    rows.append({"run_id": f"{len(rows):016x}", "status": "ok", "seed": seed,
                                 "machine.policy": pol, "machine.frames": fr,
                                 "workload.name": wl,
                                 "miss_ratio": 0.01 * (i + 1) + (0.1 if fr == "10%" else 0.0)})
    return pd.DataFrame(rows)


def _line_colours(mfig) -> Dict[str, str]:
    import matplotlib.colors

    ax = mfig.axes[0]
    names = [t.get_text() for t in mfig.legends[0].get_texts()]
    return {n: matplotlib.colors.to_hex(c.lines[0].get_color())
            for n, c in zip(names, ax.containers)}


def test_every_policy_gets_its_own_colour_in_one_figure() -> None:
    import vmemsim

    names = vmemsim.policy_names()
    assert {"lru", "clock", "opt", "s3fifo", "sieve", "mglru-scan-rand"} <= set(names)
    line = {"name": "p", "kind": "line", "metric": "miss_ratio", "x": "machine.frames",
            "group": "machine.policy"}
    # every registered policy in one figure: 22 lines, 22 colours
    colours = _line_colours(report.plot_figure(line, _policy_results(names)))
    assert set(colours) == set(names)
    assert len(set(colours.values())) == len(names)
    # lru and clock 9 groups apart, opt and s3fifo too (the palette has 8 colours)
    order = ["lru", "opt", "fifo", "arc", "lfu", "sieve", "slru", "2q", "clock", "s3fifo"]
    colours2 = _line_colours(report.plot_figure(line, _policy_results(order)))
    assert len(set(colours2.values())) == len(order)
    assert colours2["lru"] != colours2["clock"] and colours2["opt"] != colours2["s3fifo"]
    # a policy keeps its colour whatever is drawn beside it
    assert all(colours2[p] == colours[p] for p in order)
    # bars (patches) too
    import matplotlib.colors

    bar = dict(line, kind="bar")
    ax = report.plot_figure(bar, _policy_results(order)).axes[0]
    fills = {matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches}
    assert len(fills) == len(order)


def test_group_colours_never_repeat_within_a_figure() -> None:
    # not policies: the palette in order, then more colours, never one twice
    groups = [f"w{i}" for i in range(40)]
    c = report.group_colours("workload.name", groups)
    assert [c[g] for g in groups[:8]] == list(report.PALETTE)
    assert len(set(c.values())) == 40
    # policies not in the table (a new one) get free colours, deterministically
    pols = ["lru", "clock", "my-policy", "another-one"]
    c1 = report.group_colours("machine.policy", pols)
    assert len(set(c1.values())) == 4
    assert c1["lru"] == report.POLICY_COLOURS["lru"]
    assert c1["clock"] == report.POLICY_COLOURS["clock"]
    assert c1 == report.group_colours("machine.policy", pols)


def test_titles_and_labels_name_keys_in_words() -> None:
    long = {f"a rather long workload name number {i}": "" for i in range(3)}
    df = _policy_results(["lru", "clock"], facet=long)
    fig = {"name": "f", "kind": "line", "metric": "miss_ratio", "x": "machine.frames",
           "group": "machine.policy", "facet": "workload.name"}
    mfig = report.plot_figure(fig, df)
    title = mfig.get_suptitle()
    # the panel titles hold the long values alone; the facet is named in the title
    assert "panels: workload" in title
    assert "miss ratio by memory (frames)" in title
    texts = [title, mfig.legends[0].get_title().get_text()]
    texts += [t for a in mfig.axes for t in (a.get_title(), a.get_xlabel(), a.get_ylabel())]
    for t in texts:
        for raw in ("workload.name", "machine.policy", "machine.frames", "miss_ratio"):
            assert raw not in t, (raw, t)
    assert mfig.legends[0].get_title().get_text() == "policy"
    # short values: "workload = value" in each panel
    short = _policy_results(["lru"], facet={"zipf": "", "scan": ""})
    panels = report.plot_figure(fig, short)
    assert [a.get_title() for a in panels.axes] == ["workload = zipf", "workload = scan"]
    assert report.key_label("vm.host_policy") == "host policy"
    assert report.key_label("machine.swappiness") == "swappiness"
    assert report._unit_label("latency.read.p99_ns") == "latency read p99 (ns)"


def test_summary_numbers_are_rounded() -> None:
    assert report._fmt(0.123456789) == "0.1235"
    assert report._fmt(0.0123456789) == "0.01235"
    assert report._fmt(1.10234567) == "1.102"
    assert report._fmt(1234567) == "1,234,567"
    assert report._fmt(1234567.0) == "1,234,567"
    assert report._fmt(12345.678) == "12,346"
    assert report._fmt(12.3456, "runtime_s") == "12.3"
    assert report._fmt(0.0123456, "wall_seconds") == "0.0123"
    assert report._fmt(0.99996) == "1"
    assert report._fmt(1.234567e-7) == "1.235e-07"
    assert report._fmt(float("nan")) == "–"


def test_report_tables_show_rounded_values(tmp_path: Path) -> None:
    rows = [{"run_id": f"{i:016x}", "status": "ok", "seed": i, "machine.policy": "lru",
             "machine.frames": "10%", "miss_ratio": 0.123456789, "faults": 1234567,
             "runtime_s": 12.3456, "wall_seconds": 0.987654}
            for i in range(3)]
    figs = [{"name": "m", "kind": "bar", "metric": "miss_ratio", "x": "machine.frames",
             "group": "machine.policy"},
            {"name": "f", "kind": "bar", "metric": "faults", "x": "machine.frames"},
            {"name": "t", "kind": "bar", "metric": "runtime_s", "x": "machine.frames"}]
    paths = report.write_report(pd.DataFrame(rows), figs, tmp_path / "r", title="t",
                                description="")
    page = paths[-1].read_text(encoding="utf-8")
    m, f, t = _cells(page, "m"), _cells(page, "f"), _cells(page, "t")
    # n, mean, median: 3 runs of the same value
    assert '<td class="num">3</td><td class="num">0.1235</td><td class="num">0.1235</td>' in m
    assert "0.123457" not in m and "0.12345679" not in m
    assert '<td class="num">1,234,567</td>' in f
    assert '<td class="num">12.3</td>' in t and "12.346" not in t
    # 3 runs of 0.987654 s: 2.962962 s in all
    assert "<td>2.96 s</td>" in page
    # headings in words, the key in a tooltip
    assert '<th title="machine.policy">policy</th>' in m


# ---------------------------------------------------------------------------- bad figures


COLUMNS = list(results_table().columns)


@pytest.mark.parametrize(
    "fig, message",
    [
        (
            {"name": "a", "kind": "line", "metric": "major_faults", "x": "seed", "colour": "red"},
            "figure 'a': key 'colour': unknown key",
        ),
        (
            {"name": "a", "kind": "pie", "metric": "major_faults"},
            "figure 'a': key 'kind': unknown kind 'pie'",
        ),
        ({"kind": "line", "metric": "major_faults", "x": "seed"}, "figure #1: key 'name': missing"),
        ({"name": "a", "kind": "bar", "x": "seed"}, "figure 'a': key 'metric': missing"),
        ({"name": "a", "kind": "bar", "metric": "major_faults"}, "figure 'a': key 'x': missing"),
        (
            {"name": "a", "kind": "line", "metric": "major_fault", "x": "seed"},
            "figure 'a': key 'metric': no column 'major_fault'.*did you mean 'major_faults'",
        ),
        (
            {"name": "a", "kind": "line", "metric": "major_faults", "x": "size"},
            "figure 'a': key 'x': no column 'size'",
        ),
        (
            {"name": "a", "kind": "line", "metric": "major_faults", "x": "seed", "group": "policy"},
            "figure 'a': key 'group': no column 'policy'",
        ),
        (
            {"name": "a", "kind": "line", "metric": "major_faults", "x": "seed", "facet": "wl"},
            "figure 'a': key 'facet': no column 'wl'",
        ),
        (
            {
                "name": "a",
                "kind": "line",
                "metric": "major_faults",
                "x": "seed",
                "where": {"pol": "lru"},
            },
            "figure 'a': key 'where': no column 'pol'",
        ),
        (
            {"name": "a", "kind": "line", "metric": "major_faults", "x": "seed", "error": "sem"},
            "figure 'a': key 'error': unknown error mode 'sem'",
        ),
        (
            {"name": "a", "kind": "box", "metric": "major_faults", "x": "seed", "error": "stdev"},
            "figure 'a': key 'error': error bars apply to",
        ),
        (
            {"name": "a", "kind": "bar", "metric": "major_faults", "x": "seed", "normalize": "lru"},
            "figure 'a': key 'normalize': needs a 'group'",
        ),
        (
            {"name": "a", "kind": "cdf", "metric": "major_faults", "x": "seed"},
            "figure 'a': key 'x': a cdf figure takes no x",
        ),
        (
            {"name": "a", "kind": "timeseries", "metric": "major_faults", "x": "seed"},
            "figure 'a': key 'x': .*always 'accesses'",
        ),
        (
            {"name": "a/b", "kind": "cdf", "metric": "major_faults"},
            "figure 'a/b': key 'name': .*not a file stem",
        ),
        (
            {"name": "a", "kind": "cdf", "metric": "major_faults", "logy": "yes"},
            "figure 'a': key 'logy': expected true or false",
        ),
        (
            {"name": "a", "kind": "bar", "metric": "major_faults", "x": "seed", "logx": True},
            "figure 'a': key 'logx': .*categorical",
        ),
        (
            {"name": "a", "kind": "cdf", "metric": 3},
            "figure 'a': key 'metric': expected a non-empty string",
        ),
        ("line", "figure #1: expected a table"),
    ],
)
def test_bad_figures_name_the_figure_and_key(fig, message) -> None:
    with pytest.raises(VmemsimError, match=message):
        report.check_figures([fig], COLUMNS)


def test_bad_figure_is_named_by_index_and_duplicate_names() -> None:
    good = {"name": "a", "kind": "cdf", "metric": "major_faults"}
    with pytest.raises(VmemsimError, match="figure #2: key 'name': missing"):
        report.check_figures([good, {"metric": "x"}], COLUMNS)
    with pytest.raises(
        VmemsimError, match="figure 'a': key 'name': 'a' is already the name of figure #1"
    ):
        report.check_figures([good, good], COLUMNS)


def test_errors_found_when_drawing(tmp_path: Path) -> None:
    df = results_table()
    with pytest.raises(
        VmemsimError, match="figure 'a': key 'metric': column 'machine.policy' is not numeric"
    ):
        report.plot_figure({"name": "a", "kind": "cdf", "metric": "machine.policy"}, df)
    with pytest.raises(VmemsimError, match="figure 'a': no successful runs matching where"):
        report.plot_figure(
            {"name": "a", "kind": "cdf", "metric": "major_faults", "where": {"seed": 99}}, df
        )
    with pytest.raises(
        VmemsimError, match="figure 'a': key 'logx': x column 'machine.frames' is not numeric"
    ):
        report.plot_figure(
            {
                "name": "a",
                "kind": "line",
                "metric": "major_faults",
                "x": "machine.frames",
                "logx": True,
            },
            df,
        )
    # validation happens before anything is written
    bad = FIGURES[:1] + [{"name": "b", "kind": "line", "metric": "nope", "x": "seed"}]
    with pytest.raises(VmemsimError, match="figure 'b': key 'metric'"):
        report.write_report(df, bad, tmp_path / "out", title="t", description="")
    assert not (tmp_path / "out").exists()


def test_normalize_warns_about_runs_without_baseline() -> None:
    df = results_table()
    # lru failed at 25%, seed 2: fifo and clock at (25%, 2) lose their baseline
    df.loc[
        (df["machine.policy"] == "lru") & (df["machine.frames"] == "25%") & (df["seed"] == 2),
        "status",
    ] = "error"
    with pytest.warns(UserWarning, match="figure 'bar': normalize: dropped 2 of 42 rows"):
        ax = report.plot_figure(FIGURES[1], df).axes[0]
    fifo_25 = [
        major_faults("fifo", "25%", s) / major_faults("lru", "25%", s) for s in SEEDS if s != 2
    ]
    assert bar_heights(ax)[1.0] == pytest.approx(sum(fifo_25) / 4, rel=1e-12)


# ---------------------------------------------------------------------------- results directory


def test_results_directory_with_series(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    df = results_table()
    (tmp_path / "series").mkdir()
    df.to_parquet(tmp_path / "results.parquet")
    for run_id in df.loc[df["machine.frames"] == "25%", "run_id"]:
        series(run_id).to_parquet(tmp_path / "series" / f"{run_id}.parquet")
    config = {
        "experiment": {"name": "from-config", "description": "d"},
        "report": {"figures": [FIGURES[6]]},
    }
    paths = report.write_report(tmp_path, None, tmp_path / "report", config=config)
    assert [p.name for p in paths] == ["series.png", "series.svg", "index.html"]
    page = paths[-1].read_text(encoding="utf-8")
    assert "<h1>from-config</h1>" in page
    with pytest.raises(VmemsimError, match="no results table"):
        report.write_report(tmp_path / "missing", [], tmp_path / "r2", title="t", description="")
    # a run without a series file is named
    other = dict(FIGURES[6], where={"machine.frames": "10%"})
    with pytest.raises(VmemsimError, match=r"figure 'series': run [0-9a-f]{16} has no time series"):
        report.write_report(tmp_path, [other], tmp_path / "r3", title="t", description="")


def test_importing_vmemsim_does_not_import_matplotlib() -> None:
    code = "import sys, vmemsim, vmemsim.report, vmemsim.stats; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

"""vmemsim.stats: hand-computed summaries and closed forms of Student's t, then agreement with
scipy (1e-9 relative) on random samples: normal, skewed, tiny, unequal sizes."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from vmemsim import VmemsimError, stats

REL = 1e-9


def close(a: float, b: float, rel: float = REL) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.0) or (a == b)


@pytest.fixture(scope="module")
def sps():
    # scipy is in the "test" extra; skip only where someone runs the tests without it
    return pytest.importorskip("scipy.stats")


# ---------------------------------------------------------------------------- by hand


def test_summary_of_one_to_four() -> None:
    s = stats.summarize(pd.DataFrame({"v": [4, 1, 3, 2]}), [], "v")
    assert len(s) == 1
    r = s.iloc[0]
    assert r["n"] == 4
    assert r["mean"] == 2.5 and r["median"] == 2.5
    # sqrt(((1.5^2 + 0.5^2) * 2) / 3) = sqrt(5/3)
    assert r["stdev"] == pytest.approx(1.2909944487358056, rel=1e-15)
    assert (r["min"], r["max"]) == (1.0, 4.0)
    # linear interpolation: position 0.75 between 1 and 2, position 2.25 between 3 and 4
    assert (r["q1"], r["q3"]) == (1.75, 3.25)
    # t_{0.975, 3} = 3.182446305 (Student-t tables) times sqrt(5/3) / 2
    assert r["ci95"] == pytest.approx(3.182446305284263 * math.sqrt(5 / 3) / 2, rel=1e-9)


def test_summary_groups_keep_first_appearance_nulls_and_failed_runs() -> None:
    df = pd.DataFrame(
        {
            "p": ["fifo", "lru", "fifo", "lru", None, "dead", "dead"],
            "v": [10.0, 1.0, 20.0, np.nan, 5.0, np.nan, None],
        }
    )
    s = stats.summarize(df, ["p"], "v")
    keys = s["p"].tolist()
    assert keys[:2] == ["fifo", "lru"] and pd.isna(keys[2]) and keys[3] == "dead"
    by = {(k if isinstance(k, str) else None): r for k, r in zip(s["p"], s.to_dict("records"))}
    assert by["fifo"]["n"] == 2 and by["fifo"]["mean"] == 15.0
    assert by["fifo"]["stdev"] == pytest.approx(math.sqrt(50.0))
    # one value: no spread
    assert by["lru"]["n"] == 1 and by["lru"]["mean"] == 1.0
    assert math.isnan(by["lru"]["stdev"]) and math.isnan(by["lru"]["ci95"])
    assert by[None]["n"] == 1 and by[None]["mean"] == 5.0
    # a configuration whose every run failed still has its row
    assert by["dead"]["n"] == 0 and math.isnan(by["dead"]["mean"])
    assert list(s.columns) == [
        "p",
        "n",
        "mean",
        "median",
        "stdev",
        "min",
        "max",
        "q1",
        "q3",
        "ci95",
    ]


def test_summary_two_keys_and_unknown_column() -> None:
    df = pd.DataFrame({"a": [1, 1, 2, 2], "b": ["x", "x", "x", "y"], "v": [1.0, 3.0, 5.0, 7.0]})
    s = stats.summarize(df, ["a", "b"], "v")
    assert [(r.a, r.b, r.n, r.mean) for r in s.itertuples()] == [
        (1, "x", 2, 2.0),
        (2, "x", 1, 5.0),
        (2, "y", 1, 7.0),
    ]
    with pytest.raises(VmemsimError, match="'nope'"):
        stats.summarize(df, ["nope"], "v")


def test_t_closed_forms() -> None:
    # df = 1 is the Cauchy distribution: F(t) = 1/2 + atan(t)/pi, which is atan(-1/t)/pi
    # for t < 0 (written so to keep the left tail's digits)
    for t in (-1e6, -40.0, -1.0, -1e-8, 0.0, 3e-5, 0.3, 1.0, 12.7, 1e7):
        ref = math.atan(-1 / t) / math.pi if t < 0 else 0.5 + math.atan(t) / math.pi
        assert close(stats.t_cdf(t, 1), ref, 1e-12), t
    # df = 2: F(t) = 1/2 + t / (2 s) with s = sqrt(2 + t^2), i.e. 1 / (s (s - t)) for t < 0;
    # quantile t = (2q - 1) / sqrt(2 q (1 - q))
    for t in (-3000.0, -2.0, -0.01, 0.5, 4.302652729911275, 100.0):
        s = math.sqrt(2 + t * t)
        ref = 1 / (s * (s - t)) if t < 0 else 0.5 + t / (2 * s)
        assert close(stats.t_cdf(t, 2), ref, 1e-12), t
    for q in (1e-9, 0.01, 0.2, 0.6, 0.975, 0.999999):
        assert close(stats.t_ppf(q, 2), (2 * q - 1) / math.sqrt(2 * q * (1 - q)), 1e-11)
    assert stats.t_ppf(0.5, 7) == 0.0
    assert stats.t_ppf(1.0, 3) == math.inf and stats.t_ppf(0.0, 3) == -math.inf
    # a tabulated value: t_{0.995, 10} = 3.169272673
    assert stats.t_ppf(0.995, 10) == pytest.approx(3.169272672616958, rel=1e-9)
    assert close(stats.t_sf(2.0, 5) + stats.t_cdf(2.0, 5), 1.0, 1e-15)
    with pytest.raises(ValueError):
        stats.t_ppf(1.5, 3)
    with pytest.raises(ValueError):
        stats.t_cdf(1.0, 0)


def test_betainc_closed_forms() -> None:
    # I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b = -expm1(b log1p(-x))
    for x in (0.0, 1e-10, 0.3, 0.5, 0.99, 1.0):
        assert close(stats.betainc(1, 1, x), x, 1e-14)
        assert close(stats.betainc(3.5, 1, x), x**3.5, 1e-13)
        ref = 1.0 if x == 1.0 else -math.expm1(2.5 * math.log1p(-x))
        assert close(stats.betainc(1, 2.5, x), ref, 1e-13), x
    with pytest.raises(ValueError):
        stats.betainc(0, 1, 0.5)
    with pytest.raises(ValueError):
        stats.betainc(1, 1, 1.5)


def test_welch_by_hand() -> None:
    # a = [1, 2, 3]: mean 2, var 1; b = [4, 6, 8, 10]: mean 7, var 20/3
    r = stats.welch_t([1, 2, 3], [4, 6, 8, 10])
    se2 = 1 / 3 + (20 / 3) / 4
    assert r.t == pytest.approx(-5 / math.sqrt(se2), rel=1e-14)
    assert r.df == pytest.approx(se2**2 / ((1 / 3) ** 2 / 2 + (5 / 3) ** 2 / 3), rel=1e-14)
    assert r.p == pytest.approx(2 * stats.t_cdf(r.t, r.df), rel=1e-14)


def test_welch_zero_variance_and_errors() -> None:
    assert stats.welch_t([3, 3, 3], [3, 3]) == stats.WelchResult(t=0.0, df=3.0, p=1.0)
    r = stats.welch_t([3, 3, 3], [4, 4])
    assert (r.t, r.df, r.p) == (-math.inf, 3.0, 0.0)
    # zero variance in one group only is an ordinary test with df = n_other - 1
    r = stats.welch_t([5, 5, 5, 5], [1, 2, 3])
    assert r.df == pytest.approx(2.0) and r.t == pytest.approx(3 / math.sqrt(1 / 3))
    with pytest.raises(ValueError, match="at least 2"):
        stats.welch_t([1], [1, 2, 3])
    with pytest.raises(ValueError, match="NaN"):
        stats.welch_t([1, float("nan")], [1, 2, 3])


def test_linregress_by_hand() -> None:
    r = stats.linregress([0, 1, 2, 3], [1, 3, 5, 7])
    assert (r.slope, r.intercept, r.r, r.r2, r.n) == (2.0, 1.0, 1.0, 1.0, 4)
    # y = [1, 0, 1] on x = [0, 1, 2]: slope 0, r 0
    r = stats.linregress([0, 1, 2], [1, 0, 1])
    assert r.slope == 0.0 and r.r == 0.0 and r.intercept == pytest.approx(2 / 3)
    r = stats.linregress([1, 2, 3], [4, 4, 4])
    assert r.slope == 0.0 and r.intercept == 4.0 and math.isnan(r.r) and math.isnan(r.r2)
    with pytest.raises(ValueError, match="differ"):
        stats.linregress([2, 2, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="at least 2"):
        stats.linregress([1], [2])
    with pytest.raises(ValueError, match="length"):
        stats.linregress([1, 2], [1, 2, 3])


def _runs() -> pd.DataFrame:
    rows = []
    for x in ("10%", "25%"):
        for seed in (0, 1):
            for pol, base in (("lru", 100.0), ("fifo", 150.0), ("clock", 120.0)):
                rows.append(
                    {
                        "pol": pol,
                        "x": x,
                        "seed": seed,
                        "faults": base * (2 if x == "10%" else 1) + seed,
                    }
                )
    return pd.DataFrame(rows)


def test_normalize_by_hand() -> None:
    out = stats.normalize(_runs(), "faults", "pol", "lru", ["x", "seed"])
    assert len(out) == 12
    lru = out[out["pol"] == "lru"]
    assert (lru["faults_norm"] == 1.0).all()  # exactly, not approximately
    got = {(r.pol, r.x, r.seed): r.faults_norm for r in out.itertuples()}
    assert got[("fifo", "10%", 1)] == 301 / 201
    assert got[("clock", "25%", 0)] == 120 / 100
    assert got[("fifo", "25%", 1)] == 151 / 101


def test_normalize_drops_runs_without_baseline() -> None:
    df = _runs()
    df = df[~((df["pol"] == "lru") & (df["x"] == "25%") & (df["seed"] == 1))]  # lru failed there
    df.loc[(df["pol"] == "lru") & (df["x"] == "10%") & (df["seed"] == 0), "faults"] = np.nan
    # 2 rows at (25%, 1) lack a baseline row; 3 at (10%, 0) (lru's own included) have a
    # null one
    with pytest.warns(UserWarning, match="dropped 5 of 11 rows"):
        out = stats.normalize(df, "faults", "pol", "lru", ["x", "seed"])
    assert len(out) == 6
    assert not ((out["x"] == "10%") & (out["seed"] == 0)).any()
    assert not ((out["x"] == "25%") & (out["seed"] == 1)).any()


def test_normalize_errors() -> None:
    df = _runs()
    with pytest.raises(VmemsimError, match="no row has pol = 'opt'"):
        stats.normalize(df, "faults", "pol", "opt", ["x", "seed"])
    with pytest.raises(VmemsimError, match="ambiguous"):
        stats.normalize(df, "faults", "pol", "lru", ["seed"])
    with pytest.raises(VmemsimError, match="'nope'"):
        stats.normalize(df, "faults", "pol", "lru", ["nope"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats.normalize(df, "faults", "pol", "lru", ["x", "seed"])  # no warning when all match


# ---------------------------------------------------------------------------- against scipy


def _samples():
    rng = np.random.default_rng(20240611)
    yield rng.normal(10, 2, 8), rng.normal(11, 5, 12)
    yield rng.lognormal(0, 1.5, 30), rng.lognormal(0.5, 1.0, 7)  # skewed
    yield rng.exponential(3, 5), rng.exponential(3, 5) ** 3  # very skewed
    yield np.array([1.0, 2.0]), np.array([1.5, 9.0])  # tiny
    yield np.array([0.1, 0.2]), np.array([5.0, 5.1, 5.2])  # tiny, far apart
    yield rng.normal(0, 1, 200), rng.normal(0.05, 1, 150)
    yield rng.normal(100, 1, 40), rng.normal(80, 1, 40)  # p around 1e-50
    yield rng.pareto(1.5, 25) + 1, rng.pareto(3.0, 9) + 1
    for _ in range(30):
        n1, n2 = rng.integers(2, 40, 2)
        yield rng.gamma(0.5, 2, n1) * rng.uniform(0.1, 10), rng.gamma(2, 1, n2) + rng.uniform(-1, 1)


def test_welch_against_scipy(sps) -> None:
    for a, b in _samples():
        ours = stats.welch_t(a, b)
        ref = sps.ttest_ind(a, b, equal_var=False)
        assert close(ours.t, float(ref.statistic)), (a, b)
        assert close(ours.p, float(ref.pvalue)), (ours.p, float(ref.pvalue))
        se2 = a.var(ddof=1) / a.size + b.var(ddof=1) / b.size
        df = se2**2 / (
            (a.var(ddof=1) / a.size) ** 2 / (a.size - 1)
            + (b.var(ddof=1) / b.size) ** 2 / (b.size - 1)
        )
        assert close(ours.df, df)
        if hasattr(ref, "df"):
            assert close(ours.df, float(ref.df))


def test_t_distribution_against_scipy(sps) -> None:
    for df in (0.7, 1, 1.5, 2, 3, 4.2, 7, 19, 30, 99, 1000):
        for q in (1e-10, 1e-4, 0.025, 0.1, 0.4, 0.5, 0.73, 0.95, 0.975, 0.995, 1 - 1e-8):
            assert close(stats.t_ppf(q, df), float(sps.t.ppf(q, df))), (q, df)
        for t in (-80.0, -4.0, -1.0, -0.2, 0.0, 0.05, 0.9, 2.5, 10.0, 400.0):
            assert close(stats.t_cdf(t, df), float(sps.t.cdf(t, df))), (t, df)
            assert close(stats.t_sf(t, df), float(sps.t.sf(t, df))), (t, df)


def test_betainc_against_scipy() -> None:
    special = pytest.importorskip("scipy.special")
    rng = np.random.default_rng(7)
    for _ in range(300):
        a, b = rng.uniform(0.05, 200, 2)
        x = rng.uniform()
        assert close(stats.betainc(a, b, x), float(special.betainc(a, b, x)), 1e-10), (a, b, x)


def test_summary_ci_against_scipy(sps) -> None:
    rng = np.random.default_rng(3)
    for n in (2, 3, 5, 10, 31):
        v = rng.lognormal(1, 1, n)
        r = stats.summarize(pd.DataFrame({"v": v}), [], "v").iloc[0]
        sem = float(sps.sem(v))
        lo, hi = sps.t.interval(0.95, n - 1, loc=v.mean(), scale=sem)
        assert close(r["ci95"], (hi - lo) / 2)
        assert close(r["stdev"], float(np.std(v, ddof=1)), 1e-12)
        assert close(r["q1"], float(np.percentile(v, 25)), 1e-12)


def test_linregress_against_scipy(sps) -> None:
    rng = np.random.default_rng(11)
    for n in (2, 3, 5, 40, 500):
        x = rng.lognormal(0, 1, n)
        y = 3.0 - 0.5 * x + rng.normal(0, 0.3, n) * x
        ours = stats.linregress(x, y)
        ref = sps.linregress(x, y)
        assert close(ours.slope, float(ref.slope))
        assert close(ours.intercept, float(ref.intercept))
        if n > 2:
            assert close(ours.r, float(ref.rvalue))
            assert close(ours.r2, float(ref.rvalue) ** 2)
        else:
            assert abs(ours.r) == 1.0  # two points lie on their line
        assert ours.n == n

"""Significance tests against scipy (exact permutation test, bootstrap) and Holm's procedure from its definition."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from brightpro.significance import (paired_randomization_test, paired_bootstrap_ci, holm, compare)
from brightpro.core import BrightproError


@pytest.mark.parametrize("seed", range(8))
def test_exact_randomization_test_equals_scipy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 11))
    a, b = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    b[: n // 3] = a[: n // 3] + 0.3
    ref = stats.permutation_test((a, b), lambda x, y: np.mean(y - x), permutation_type="samples",
                                 alternative="two-sided", n_resamples=np.inf).pvalue
    assert paired_randomization_test(a, b, n_resamples=10_000) == pytest.approx(ref, abs=1e-12)


def test_sampled_randomization_test_close_to_exact():
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 1, 16); b = a + rng.normal(0.08, 0.2, 16)
    exact = stats.permutation_test((a, b), lambda x, y: np.mean(y - x), permutation_type="samples",
                                   n_resamples=np.inf).pvalue
    assert paired_randomization_test(a, b, n_resamples=20_000, seed=1) == pytest.approx(exact, abs=0.01)


def test_holm_matches_its_definition():
    p = np.array([0.01, 0.04, 0.03, 0.2, np.nan])
    # by hand: sorted 0.01, 0.03, 0.04, 0.2 (m = 4) -> 0.04, 0.09, 0.08 -> running max 0.09, 0.2 * 1 = 0.2
    np.testing.assert_allclose(holm(p), [0.04, 0.09, 0.09, 0.2, np.nan])
    # brute force: reject H_i at level a iff every j with p_j <= p_i has p_j <= a / (m - rank_j + 1)
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = rng.uniform(0, 0.2, 6)
        adj = holm(q)
        order = np.argsort(q)
        for level in (0.01, 0.05, 0.1):
            rejected = set()
            for r, i in enumerate(order):
                if q[i] <= level / (len(q) - r): rejected.add(i)
                else: break
            assert rejected == set(np.flatnonzero(adj <= level))


def test_bootstrap_interval_close_to_scipy_and_normal_theory():
    rng = np.random.default_rng(5)
    a = rng.uniform(0, 1, 400); b = a + rng.normal(0.05, 0.2, 400)
    lo, hi = paired_bootstrap_ci(a, b, n_resamples=5000, seed=0)
    ref = stats.bootstrap((b - a,), np.mean, n_resamples=5000, method="percentile", random_state=1).confidence_interval
    assert lo == pytest.approx(ref.low, abs=0.004) and hi == pytest.approx(ref.high, abs=0.004)
    se = np.std(b - a, ddof=1) / np.sqrt(400)
    assert (hi - lo) == pytest.approx(2 * 1.96 * se, rel=0.1)


def test_grouped_statistic_is_mean_of_group_means():
    "With domains, every query gets weight 1 / (n_domains * n_domain): the test and the interval follow the overall number."
    a = np.zeros(6); b = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    groups = ["x", "x", "x", "x", "y", "y"]
    lo, hi = paired_bootstrap_ci(a, b, groups=groups, n_resamples=2000)
    assert lo == pytest.approx(0.5) and hi == pytest.approx(0.5)      # domain x always 1, y always 0
    # exact sign flips: statistic = (mean of x-signs) / 2; |.| >= 0.5 only when all four x-signs agree: 2 * 4 / 64
    assert paired_randomization_test(a, b, groups=groups) == pytest.approx(2 * 4 / 64)


def test_compare_table_and_seed():
    rng = np.random.default_rng(0)
    base = rng.uniform(0, 0.7, 60)
    frame = lambda v, d: pd.DataFrame({"domain": np.repeat(["a", "b"], 30), "qid": [str(i % 30) for i in range(60)],
                                       "ndcg@10": v, "recall@10": np.clip(v + d, 0, 1)})
    systems = {"base": frame(base, 0), "up": frame(base + 0.2, 0.1), "noise": frame(base + rng.normal(0, 0.02, 60), 0)}
    c1 = compare(systems, baseline="base", n_resamples=2000, seed=7)
    c2 = compare(systems, baseline="base", n_resamples=2000, seed=7)
    pd.testing.assert_frame_equal(c1.table, c2.table)
    t = c1.table.set_index(["system", "metric"])
    assert t.loc[("up", "ndcg@10"), "significant"] and t.loc[("up", "ndcg@10"), "delta"] == pytest.approx(0.2)
    assert not t.loc[("noise", "ndcg@10"), "significant"]
    assert c1.settings["statistic"] == "mean of domain means"
    md = c1.to_markdown()
    assert md.splitlines()[0].startswith("| system | ndcg@10 | recall@10 |") and "*" in md.splitlines()[3]
    assert "\\toprule" in c1.to_latex()
    with pytest.raises(BrightproError, match="baseline"): compare(systems, baseline="nope")


def test_compare_pairs_on_common_queries():
    a = pd.DataFrame({"qid": ["1", "2", "3"], "ndcg@10": [0.1, 0.2, 0.3]})
    b = pd.DataFrame({"qid": ["3", "2", "4"], "ndcg@10": [0.5, 0.2, 0.9]})
    t = compare({"a": a, "b": b}, n_resamples=100).table.set_index("system")
    assert t.loc["b", "paired_queries"] == 2 and t.loc["b", "delta"] == pytest.approx(0.1)

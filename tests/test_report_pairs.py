"""The pages' all-pairs table (`pairwise_beats`, ranx `compare` style) checked against ranx itself, and the pages' sentence
for samples too small for significance.

ranx's `compare(stat_test="fisher")` runs the same two-sided paired randomization test (each query's pair of scores
swapped at random: a sign flip of the difference) but samples `n_permutations` swaps and corrects for nothing;
`pairwise_beats` uses brightpro's test (exact below 2^n <= 10,000 patterns, else 10,000 sampled) with Holm over every
pair. So the check takes ranx's p-values, applies Holm by hand, and compares who beats whom, on scores whose p-values
lie far from 0.05 on both sides (the two samplers agree there), and the p-values themselves to Monte Carlo error."""
import numpy as np
import pandas as pd
import pytest

from brightpro.report import pairwise_beats, power_note
from brightpro.significance import paired_randomization_test


def holm_by_hand(ps: dict) -> dict:
    "Holm's step-down adjustment, written out: the i-th smallest p times (m - i), running maximum, capped at 1."
    order, m, out, top = sorted(ps, key=ps.get), len(ps), {}, 0.0
    for i, key in enumerate(order):
        top = max(top, min(1.0, (m - i) * ps[key]))
        out[key] = top
    return out


def ranx_inputs(ranks: dict):
    "ranx Qrels and Runs where each query has one relevant document and run r puts it at rank ranks[r][q]: its MRR per query is 1/rank."
    from ranx import Qrels, Run
    qids = [f"q{i}" for i in range(len(next(iter(ranks.values()))))]
    qrels = Qrels({q: {"rel": 1} for q in qids})
    runs = []
    for name, rs in ranks.items():
        docs = {q: {**{f"d{j}": 100.0 - j for j in range(1, int(r))}, "rel": 100.0 - int(r)} for q, r in zip(qids, rs)}
        runs.append(Run(docs, name=name))
    return qrels, runs, qids


def test_pairwise_beats_agrees_with_ranx_compare():
    ranx = pytest.importorskip("ranx")
    rng = np.random.default_rng(7)
    n = 40
    ranks = {"strong": rng.choice([1, 1, 1, 2], n), "weak": rng.choice([2, 3, 4, 5], n)}
    ranks["weak2"] = np.maximum(1, ranks["weak"] + np.where(rng.random(n) < 0.25, rng.choice([-1, 1], n), 0))   # close to weak
    qrels, runs, qids = ranx_inputs(ranks)
    rep = ranx.compare(qrels, runs, metrics=["mrr"], stat_test="fisher", n_permutations=20_000, max_p=0.05, random_seed=42)
    scores = pd.DataFrame({r.name: [r.scores["mrr"][q] for q in qids] for r in runs})
    assert np.allclose(scores.to_numpy(), 1.0 / pd.DataFrame(ranks).to_numpy())   # ranx scored what we meant
    names = list(ranks)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    p_ranx = {(a, b): rep.comparisons[frozenset([a, b])]["mrr"]["p_value"] for a, b in pairs}
    for (a, b), p in p_ranx.items():   # the same test: p-values equal to the sampling error of 20,000 permutations
        assert abs(paired_randomization_test(scores[a], scores[b]) - p) < 0.01, (a, b)
    assert min(p_ranx.values()) < 0.001 and max(p_ranx.values()) > 0.2   # far from alpha on both sides
    adjusted = holm_by_hand(p_ranx)
    want = {r: [] for r in names}
    for (a, b), p in adjusted.items():
        if p < 0.05: want[a if scores[a].mean() > scores[b].mean() else b].append(b if scores[a].mean() > scores[b].mean() else a)
    want = {r: [x for x in names if x in v] for r, v in want.items()}
    assert pairwise_beats(scores) == want == {"strong": ["weak", "weak2"], "weak": [], "weak2": []}


def test_six_queries_and_three_runs_are_too_few():
    "Three runs on a 6-query domain: Holm over 2 comparisons with the baseline (or 3 pairs) cannot get below 0.05."
    assert "Too few queries for significance" in power_note(6, 2) and "2/2^6 = 0.0312" in power_note(6, 2)
    assert "Too few queries for significance" in power_note(6, 3)
    assert "Too few queries" not in power_note(6, 1)   # two runs: 2/64 < 0.05, a difference can show

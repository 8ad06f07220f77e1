"""The pages' all-pairs table (`pairwise_beats`, ranx `compare` style) checked against ranx itself, and the pages' sentence
for samples too small for significance.

ranx's `compare(stat_test="fisher")` runs the same two-sided paired randomization test (each query's pair of scores
swapped at random: a sign flip of the difference) but samples `n_permutations` swaps and corrects for nothing;
`pairwise_beats` uses brightpro's test (exact below 2^n <= 10,000 patterns, else 10,000 sampled) with Holm over every
pair. So the check takes ranx's p-values, applies Holm by hand, and compares who beats whom, on scores whose p-values
lie far from 0.05 on both sides (the two samplers agree there). The p-values themselves are checked against a third,
independent source: the exact p-value over all 2^40 sign patterns, counted by dynamic programming (the scores are
reciprocal ranks 1..5, so 60 times each difference is an integer); each sampler must lie within five of its own
standard errors of it (a failure by chance about once in a million comparisons)."""
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


def exact_sign_flip_p(diffs) -> float:
    "Exact two-sided p of the paired sign-flip test for integer differences: P(|sum of +-d_i| >= |sum of d_i|), all 2^n patterns counted."
    counts = {0: 1}
    for d in diffs:
        nxt = {}
        for total, c in counts.items():
            for t in (total + d, total - d): nxt[t] = nxt.get(t, 0) + c
        counts = nxt
    observed = abs(sum(diffs))
    return sum(c for t, c in counts.items() if abs(t) >= observed) / 2 ** len(diffs)


def test_exact_sign_flip_p_by_enumeration():
    "The counting helper against brute force over every pattern of a small case, and brightpro's exact branch."
    import itertools
    d = [3, -1, 4, 1, -5, 9, 2, -6]
    brute = np.mean([abs(np.dot(s, d)) >= abs(sum(d)) for s in itertools.product([1, -1], repeat=len(d))])
    assert exact_sign_flip_p(d) == brute
    assert paired_randomization_test(np.zeros(len(d)), np.array(d, float)) == pytest.approx(brute)   # 2^8 <= 10,000: exact there


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
    for (a, b), p in p_ranx.items():   # the same test: both samplers within 5 standard errors of the exact p-value
        exact = exact_sign_flip_p([int(round(60 * (y - x))) for x, y in zip(scores[a], scores[b])])
        for got, draws in ((p, 20_000), (paired_randomization_test(scores[a], scores[b]), 10_000)):
            assert abs(got - exact) <= 5 * np.sqrt(exact * (1 - exact) / draws) + 2 / draws, (a, b, got, exact, draws)
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

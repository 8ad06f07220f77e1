"""MAP@k, P@k and RR@k (the measures the authors' `results.json` also reports), checked against pytrec-eval-terrier
(trec_eval's map_cut, P, recip_rank) and ir_measures on random runs with and without ties, with excluded ids, and on the
bundled sample; and the ir_measures-style measure names `evaluate` takes."""
import random

import numpy as np
import pytest
import pytrec_eval
import ir_measures
from ir_measures import AP, P, RR, nDCG, R

from brightpro.core import BrightproError
from brightpro.metrics import TREC_METRICS, evaluate_run, parse_measures
from brightpro.data import load_domains
from brightpro.evaluate import evaluate_runs

HARNESS_KS = [1, 5, 10, 25, 50, 100]   # calculate_retrieval_metrics' k_values in BRIGHT's and Bright-Pro's retrievers.py
ALL = ("ndcg", "recall") + TREC_METRICS


def random_case(seed, n_queries=15, n_docs=150, tie_levels=None, max_gold=12):
    "Random gold lists and a scored run; `tie_levels` rounds scores to few values (many ties); query 1 has no gold."
    rng = random.Random(seed)
    docs = [f"d{rng.randrange(10**6)}/{i}" for i in range(n_docs)] + ["B", "a", "b", "aa"]
    gold, run = {}, {}
    for qn in range(n_queries):
        q = str(qn)
        gold[q] = [] if qn == 1 else rng.sample(docs, rng.randint(1, max_gold))
        ranked = rng.sample(docs, rng.randint(1, len(docs)))
        run[q] = {d: float(rng.randrange(tie_levels)) if tie_levels else rng.random() for d in ranked}
    gold["not ranked"] = ["a"]
    return gold, run


def harness_pytrec(gold, run, ks=HARNESS_KS):
    "The evaluator the harness builds: map_cut, ndcg_cut, recall and P at `ks`, and recip_rank."
    qrels = {q: {d: 1 for d in g} for q, g in gold.items() if g}
    s = ",".join(map(str, ks))
    return pytrec_eval.RelevanceEvaluator(qrels, {f"map_cut.{s}", f"ndcg_cut.{s}", f"recall.{s}", f"P.{s}", "recip_rank"}).evaluate(run)


def assert_equal_pytrec(ours, ref, ks=HARNESS_KS):
    ours = ours.set_index("qid")
    assert set(ours.index[ours[f"map@{ks[0]}"].notna()]) == set(ref), "the evaluated queries must be pytrec_eval's"
    for q, m in ref.items():
        for k in ks:
            for mine, theirs in (("map", "map_cut"), ("precision", "P"), ("ndcg", "ndcg_cut"), ("recall", "recall")):
                assert ours.loc[q, f"{mine}@{k}"] == pytest.approx(m[f"{theirs}_{k}"], abs=1e-12), (q, mine, k)
        assert ours.loc[q, "rr@1000"] == pytest.approx(m["recip_rank"], abs=1e-12), q   # runs here hold < 1000 documents


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("tie_levels", [None, 4, 1])
def test_map_p_rr_match_pytrec_eval(seed, tie_levels):
    gold, run = random_case(seed, tie_levels=tie_levels)
    ours = evaluate_run(run, gold, k=HARNESS_KS + [1000], metrics=ALL)
    assert_equal_pytrec(ours, harness_pytrec(gold, run))


@pytest.mark.parametrize("seed", range(6))
def test_excluded_ids_are_popped_before_the_cut_as_bright_does(seed):
    "BRIGHT's get_scores pops each query's excluded ids from its scores before pytrec_eval ranks them."
    gold, run = random_case(seed, tie_levels=3)
    rng = random.Random(seed)
    excluded = {q: rng.sample(o, min(5, len(o))) + ["N/A"] for q, r in run.items() for o in [[d for d in r if d not in gold[q]]]}
    popped = {q: {d: s for d, s in r.items() if d not in excluded[q]} for q, r in run.items()}
    ours = evaluate_run(run, gold, k=HARNESS_KS + [1000], metrics=ALL, excluded=excluded)
    assert_equal_pytrec(ours, harness_pytrec(gold, popped))
    # and excluding changes something, or the test would prove nothing
    assert not ours.equals(evaluate_run(run, gold, k=HARNESS_KS + [1000], metrics=ALL))


@pytest.mark.parametrize("seed", range(6))
def test_ap_p_rr_at_k_match_ir_measures(seed):
    "ir_measures' AP@k, P@k, RR@k (with a cut-off, which recip_rank lacks), nDCG@k and R@k, on runs without ties."
    gold, run = random_case(seed + 100)
    qrels = {q: {d: 1 for d in g} for q, g in gold.items() if g}
    ks = [1, 3, 10, 50]
    measures = [M @ k for M in (AP, P, RR, nDCG, R) for k in ks]
    ref = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
    ours = evaluate_run(run, gold, k=ks, metrics=ALL, missing="zero").set_index("qid")   # ir_measures scores "not ranked" 0
    names = {"AP": "map", "P": "precision", "RR": "rr", "nDCG": "ndcg", "R": "recall"}
    assert len(ref) == len(measures) * (len(gold) - 1)
    for (q, name), value in ref.items():
        m, k = name.split("@")
        assert ours.loc[q, f"{names[m]}@{k}"] == pytest.approx(value, abs=1e-12), (q, name)


def test_by_hand():
    "gold g1 g2 g3; ranking x g1 y g2: P@4 = 2/4, MAP@4 = (1/2 + 2/4) / 3, RR = 1/2, RR@1 = 0."
    df = evaluate_run({"q": ["x", "g1", "y", "g2"]}, {"q": ["g1", "g2", "g3"]}, k=[1, 4], metrics=TREC_METRICS)
    row = df.iloc[0]
    assert row["precision@4"] == 0.5 and row["map@4"] == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert (row["rr@1"], row["rr@4"], row["precision@1"], row["map@1"]) == (0.0, 0.5, 0.0, 0.0)


def test_sample_bright_with_excluded_ids_matches_the_harness_evaluator():
    "On the bundled BRIGHT sample (excluded ids in every domain): `evaluate_runs(measures=...)` equals pytrec_eval."
    domains = load_domains("all", benchmark="bright")
    rng = random.Random(5)
    runs, popped = {}, {}
    for name, dom in domains.items():
        ids = dom.documents.column("id").to_pylist()
        for q in dom.qids:
            r = {d: float(rng.randrange(5)) for d in rng.sample(ids, 60)}
            r.update({d: 9.0 for d in dom.excluded[q]})          # excluded ids ranked first: they must be removed
            runs[f"{name}-{q}"] = r
            popped[(name, q)] = {d: s for d, s in r.items() if d not in dom.excluded[q]}
    cols = [f"{m}@{k}" for m in ("nDCG", "AP", "R", "P") for k in HARNESS_KS] + ["MRR"]
    ev, = evaluate_runs([runs], domains, measures=" ".join(cols), check_corpus=False)
    assert [c for c in ev.per_query.columns if "@" in c] == parse_measures(cols)
    for name, dom in domains.items():
        gold = {q: list(g) for q, g in dom.gold.items()}
        ref = harness_pytrec(gold, {q: popped[(name, q)] for q in dom.qids})
        assert_equal_pytrec(ev.per_query[ev.per_query.domain == name].drop(columns="domain"), ref)
        assert ev.domain_means[name]["map@10"] == pytest.approx(np.mean([m["map_cut_10"] for m in ref.values()]))


def test_measures_and_k_defaults():
    "Without `measures` the columns stay as they were; with it, exactly the measures asked for, in that order."
    domains = load_domains("biology")
    run = {q: list(domains["biology"].gold[q]) for q in domains["biology"].qids}
    ev, = evaluate_runs([run], domains, check_corpus=False)
    assert list(ev.domain_means["biology"]) == ["alpha_ndcg@25", "aspect_recall@25", "ndcg@25", "recall@25", "ndcg@10"]
    ev, = evaluate_runs([run], domains, check_corpus=False, measures=["RR@10", "AR@5", "P@1"])
    assert list(ev.domain_means["biology"]) == ["rr@10", "aspect_recall@5", "precision@1"]
    assert ev.domain_means["biology"]["rr@10"] == 1.0 and ev.meta["measures"] == ["rr@10", "aspect_recall@5", "precision@1"]
    with pytest.raises(BrightproError, match="not both"): evaluate_runs([run], domains, k=10, measures="P@10")
    bright = load_domains("biology", benchmark="bright")
    with pytest.raises(BrightproError, match="BRIGHT has no aspects"): evaluate_runs([run], bright, measures="AR@10")


@pytest.mark.parametrize("bad", ["ndcg@10", "nDCG@0", "nDCG@", "@10", "Foo@10", "nDCG(judged_only=True)@10", "P@1.5"])
def test_unknown_measure_names_one_line(bad):
    with pytest.raises(BrightproError) as e: parse_measures(["nDCG@10", bad])
    msg = str(e.value)
    assert "\n" not in msg and f"unknown measure {bad!r}" in msg and "AP@k (MAP)" in msg and "AR@k" in msg


def test_aliases_as_ir_measures_spells_them():
    "Every alias brightpro takes is one ir_measures takes, for the same measure (AR, brightpro's own, aside)."
    for ours, theirs in [("NDCG@5", "nDCG@5"), ("Recall@5", "R@5"), ("Precision@5", "P@5"), ("MAP@5", "AP@5"),
                         ("MRR@5", "RR@5"), ("α_nDCG@5", "alpha_nDCG@5")]:
        assert ir_measures.parse_measure(ours) == ir_measures.parse_measure(theirs)
        assert parse_measures(ours) == parse_measures(theirs)
    assert parse_measures("nDCG@10,R@100 MRR") == ["ndcg@10", "recall@100", "rr@1000"]

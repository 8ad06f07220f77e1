"""Cross-checks of brightpro.metrics against independent references: pytrec-eval-terrier (trec_eval) for nDCG and
Recall, ir_measures' alpha_nDCG (pyndeval, NTCIR/TREC ndeval) for unweighted alpha-nDCG, and a per-query Python
restatement of the authors' harness (alpha-ndcg-evaluation.py, weighted_aspect_recall.py: one doc->aspect map per
domain, one normalised weight per aspect id) for the weighted metrics."""
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import pytrec_eval
import ir_measures
from ir_measures import alpha_nDCG

from brightpro.core import BrightproError
from brightpro.metrics import evaluate_run, mean_scores, Judgements, score_judgements
from brightpro.runs import Run

KS = [1, 3, 5, 10, 20]


def random_case(seed, n_queries=12, n_docs=60, tie_levels=None, max_gold=9, max_aspects=4):
    "Random gold, aspects, weights and a scored run; `tie_levels` rounds scores to few distinct values (many ties)."
    rng = random.Random(seed)
    docs = [f"d{rng.randrange(10**6)}/{i}.txt" for i in range(n_docs)] + ["B", "a", "b", "aa", "Z9"]
    gold, doc_aspects, weights, run = {}, {}, {}, {}
    for qn in range(n_queries):
        q = str(qn)
        g = rng.sample(docs, rng.randint(0, max_gold)) if qn else rng.sample(docs, 3)
        gold[q] = g
        na = rng.randint(1, max_aspects)
        doc_aspects[q] = {d: f"{q}-a{rng.randrange(na) + 1}" for d in g}
        weights[q] = {f"{q}-a{i + 1}": rng.choice([1, 2, 3]) for i in range(na)}
        ranked = rng.sample(docs, rng.randint(1, len(docs)))
        if tie_levels: run[q] = {d: float(rng.randrange(tie_levels)) for d in ranked}
        else: run[q] = {d: rng.random() for d in ranked}
    return gold, doc_aspects, weights, run


def pytrec_scores(gold, run, ks):
    qrels = {q: {d: 1 for d in g} for q, g in gold.items() if g}
    ks_s = ",".join(map(str, ks))
    return pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{ks_s}", f"recall.{ks_s}"}).evaluate(run)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("tie_levels", [None, 3, 1])
def test_ndcg_recall_match_pytrec_eval(seed, tie_levels):
    gold, _, _, run = random_case(seed, tie_levels=tie_levels)
    ref = pytrec_scores(gold, run, KS)
    ours = evaluate_run(run, gold, k=KS).set_index("qid")
    evaluated = set(ours.index[ours["ndcg@1"].notna()])
    assert evaluated == set(ref), "the evaluated queries must be pytrec_eval's (run and gold both present)"
    for q, m in ref.items():
        for k in KS:
            assert ours.loc[q, f"ndcg@{k}"] == pytest.approx(m[f"ndcg_cut_{k}"], abs=1e-9), (q, k)
            assert ours.loc[q, f"recall@{k}"] == pytest.approx(m[f"recall_{k}"], abs=1e-9), (q, k)


def test_ties_follow_trec_eval_descending_docid():
    "All scores equal: trec_eval ranks by docid descending, so the gold doc 'b' is first among {'a', 'b', 'B'}."
    gold = {"q": ["b"]}
    for order in (["a", "b", "B"], ["B", "a", "b"], ["b", "B", "a"]):
        run = {"q": {d: 1.0 for d in order}}
        ref = pytrec_scores(gold, run, [1])["q"]["ndcg_cut_1"]
        assert ref == 1.0
        assert evaluate_run(run, gold, k=1)["ndcg@1"][0] == ref
    assert Run.from_dict({"q": {"a": 1.0, "b": 1.0, "B": 1.0, "c": 2.0}})["q"] == ["c", "b", "a", "B"]


def diversity_frames(gold, doc_aspects, run):
    rows = [(q, a.rsplit("-a", 1)[1], d, 1) for q, g in gold.items() for d in g if (a := doc_aspects[q].get(d))]
    qrels = pd.DataFrame(rows, columns=["query_id", "iteration", "doc_id", "relevance"])
    runf = pd.DataFrame([(q, d, s) for q, ds in run.items() for d, s in ds.items()], columns=["query_id", "doc_id", "score"])
    return qrels, runf


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("alpha", [0.5, 0.2, 0.9])
def test_alpha_ndcg_equal_weights_matches_ndeval(seed, alpha):
    "With equal aspect weights our alpha-nDCG is ndeval's (ir_measures' alpha_nDCG): the weights cancel in DCG/IDCG."
    gold, doc_aspects, weights, run = random_case(1000 + seed)
    equal = {q: {a: 1 for a in ws} for q, ws in weights.items()}
    qrels, runf = diversity_frames(gold, doc_aspects, run)
    measures = [alpha_nDCG(alpha=alpha, cutoff=k) for k in KS]
    ref = {}
    for m in ir_measures.iter_calc(measures, qrels, runf): ref[(m.query_id, m.measure.params["cutoff"])] = m.value
    ours = evaluate_run(run, gold, doc_aspects, equal, k=KS, alpha=alpha, metrics=["alpha_ndcg"]).set_index("qid")
    checked = 0
    for (q, k), v in ref.items():
        assert ours.loc[q, f"alpha_ndcg@{k}"] == pytest.approx(v, abs=1e-9), (q, k)
        checked += 1
    assert checked > 20
    # ndeval scores only queries with judged subtopics; ours leaves the others out (NaN) as well.
    no_aspect = [q for q in gold if not any(doc_aspects[q].get(d) for d in gold[q])]
    assert ours.loc[no_aspect, "alpha_ndcg@5"].isna().all()


from harness_reference import harness_alpha_ndcg, harness_aspect_recall


def harness_case(seed):
    "A domain in the harness's own data model: aspects in file order, some documents listed under two queries."
    rng = random.Random(seed)
    pool = [f"shared_{i}.txt" for i in range(15)] + [f"x{i}" for i in range(40)]
    aspects, gold = [], {}
    for qn in range(10):
        q = str(qn)
        own = [f"biology-{q}/extraction_{i}.txt" for i in range(rng.randint(0, 6))] + rng.sample(pool[:15], rng.randint(0, 3))
        gold[q] = own
        na = rng.randint(1, 4)
        for j in range(na):
            aspects.append(dict(id=f"biology-{q}-a{j + 1}", qid=q, content=f"aspect {j + 1}", weight=rng.choice([1, 2, 3]),
                                supporting_docs=[d for t, d in enumerate(own) if t % na == j]))
    rng.shuffle(aspects)   # file order decides which listing wins
    return pd.DataFrame(aspects), gold, pool


@pytest.mark.parametrize("seed", range(30))
def test_weighted_metrics_match_harness_restatement(seed, tmp_path):
    "End to end through the data layer: the case is written as the authors' JSON mirror and loaded as a Domain."
    import json
    from brightpro.data import load_domain
    from brightpro.metrics import evaluate_domain
    aspects, gold, pool = harness_case(seed)
    mirror = dict(examples=[dict(id=q, query=f"query {q}", gold_ids=g, reference_answer="") for q, g in gold.items()],
                  aspects=aspects.drop(columns="qid").to_dict("records"),
                  documents=[dict(id=d, content=d) for d in sorted({d for g in gold.values() for d in g} | set(pool))])
    for config, rows in mirror.items():
        (tmp_path/config).mkdir()
        (tmp_path/config/"biology.json").write_text(json.dumps(rows))
    domain = load_domain("biology", dataset=str(tmp_path))
    rng = random.Random(seed)
    doc_to_aspect = {}
    for a, docs in zip(aspects["id"], aspects["supporting_docs"]):
        for d in docs: doc_to_aspect[d] = a
    total = aspects.groupby("qid")["weight"].transform("sum")
    aspect_weight = dict(zip(aspects["id"], aspects["weight"] / total))
    all_docs = sorted({d for g in gold.values() for d in g} | set(pool))
    run = {q: rng.sample(all_docs, rng.randint(1, len(all_docs))) for q in gold}
    ks = [1, 2, 5, 10, 25]
    ours = evaluate_domain(run, domain, k=ks).set_index("qid")
    for q in gold:
        for k in ks:
            ref = harness_alpha_ndcg(run[q], gold[q], doc_to_aspect, aspect_weight, 0.5, k)
            got = ours.loc[q, f"alpha_ndcg@{k}"]
            if ref is None: assert np.isnan(got)
            else: assert got == pytest.approx(ref, abs=1e-12), (q, k)
            ref_ar = harness_aspect_recall(run[q], gold[q], doc_to_aspect, aspect_weight, k)
            got_ar = ours.loc[q, f"aspect_recall@{k}"]
            if not gold[q]: assert np.isnan(got_ar)
            else: assert got_ar == pytest.approx(ref_ar, abs=1e-12), (q, k)


# --- properties -----------------------------------------------------------------------------------------------------

@st.composite
def cases(draw):
    n_docs = draw(st.integers(2, 25))
    docs = [f"d{i}" for i in range(n_docs)]
    gold_docs = draw(st.lists(st.sampled_from(docs), min_size=1, max_size=n_docs, unique=True))
    n_aspects = draw(st.integers(1, 5))
    doc_aspects = {d: f"a{draw(st.integers(0, n_aspects - 1))}" for d in gold_docs}
    weights = {f"a{i}": draw(st.integers(1, 3)) for i in range(n_aspects)}
    ranked = draw(st.permutations(docs))[: draw(st.integers(1, n_docs))]
    alpha = draw(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]))
    return {"q": gold_docs}, {"q": doc_aspects}, {"q": weights}, {"q": list(ranked)}, alpha


KP = [1, 2, 3, 5, 8, 13, 30]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_values_in_unit_interval_and_recall_monotone(case):
    gold, da, w, run, alpha = case
    df = evaluate_run(run, gold, da, w, k=KP, alpha=alpha)
    vals = df.drop(columns="qid").to_numpy(float)
    assert np.all((vals[~np.isnan(vals)] >= -1e-12) & (vals[~np.isnan(vals)] <= 1 + 1e-12))
    for m in ("recall", "aspect_recall"):
        series = df[[f"{m}@{k}" for k in KP]].to_numpy(float)[0]
        assert np.all(np.diff(series) >= -1e-12)


@settings(max_examples=150, deadline=None)
@given(cases())
def test_perfect_ranking_scores_one(case):
    "Gold docs first, one per aspect in descending weight before any repeat: every metric is 1 at k = |gold|."
    gold, da, w, _, alpha = case
    g = gold["q"]
    wn = w["q"]
    # the greedy ideal order: sort gold docs by their gain w_a (1 - alpha)^j
    by_aspect = {}
    for d in g: by_aspect.setdefault(da["q"][d], []).append(d)
    gains = [(wn[a] * (1 - alpha) ** j, d) for a, ds in by_aspect.items() for j, d in enumerate(ds)]
    perfect = [d for _, d in sorted(gains, key=lambda t: -t[0])]
    k = len(g)
    df = evaluate_run({"q": perfect}, gold, da, w, k=k, alpha=alpha)
    covered = sum(wn[a] for a in by_aspect) / sum(wn.values())
    assert df[f"ndcg@{k}"][0] == pytest.approx(1.0)
    assert df[f"recall@{k}"][0] == pytest.approx(1.0)
    assert df[f"alpha_ndcg@{k}"][0] == pytest.approx(1.0)
    # Aspect-Recall reaches the weight share of the aspects that have gold documents (1 when all do).
    assert df[f"aspect_recall@{k}"][0] == pytest.approx(covered)


@settings(max_examples=100, deadline=None)
@given(cases(), st.floats(0.01, 1000))
def test_scaling_weights_changes_nothing(case, factor):
    gold, da, w, run, alpha = case
    scaled = {"q": {a: x * factor for a, x in w["q"].items()}}
    a = evaluate_run(run, gold, da, w, k=KP, alpha=alpha).drop(columns="qid").to_numpy(float)
    b = evaluate_run(run, gold, da, scaled, k=KP, alpha=alpha).drop(columns="qid").to_numpy(float)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# --- aggregation and bad input --------------------------------------------------------------------------------------

def test_mean_leaves_out_undefined_queries():
    gold = {"q1": ["a"], "q2": [], "q3": ["c"]}
    df = evaluate_run({"q1": ["a"], "q2": ["a"], "q3": ["x"]}, gold, k=1)
    assert mean_scores(df)["ndcg@1"] == pytest.approx((1.0 + 0.0) / 2)


def test_excluded_removed_before_cut_like_bright():
    "BRIGHT pops excluded ids from the scores, then pytrec_eval ranks the rest."
    gold, _, _, run = random_case(7)
    rng = random.Random(7)
    excluded = {q: rng.sample(list(r), min(3, len(r) - 1)) for q, r in run.items()}
    popped = {q: {d: s for d, s in r.items() if d not in excluded[q]} for q, r in run.items()}
    ref = pytrec_scores(gold, popped, [1, 5, 10])
    ours = evaluate_run(run, gold, k=[1, 5, 10], excluded=excluded).set_index("qid")
    for q, m in ref.items():
        for k in (1, 5, 10): assert ours.loc[q, f"ndcg@{k}"] == pytest.approx(m[f"ndcg_cut_{k}"], abs=1e-9)


@pytest.mark.parametrize("bad, msg", [
    ({"q": {"a": float("nan")}}, "finite"),
    ({"q": {"a": float("inf")}}, "finite"),
    ({"q": {"a": "high"}}, "not a number"),
    ({}, "empty"),
])
def test_bad_runs_raise_clear_errors(bad, msg):
    with pytest.raises(BrightproError, match=msg): evaluate_run(bad, {"q": ["a"]}, k=1)


def test_bad_parameters():
    with pytest.raises(BrightproError, match="k must"): evaluate_run({"q": ["a"]}, {"q": ["a"]}, k=0)
    with pytest.raises(BrightproError, match="alpha"): evaluate_run({"q": ["a"]}, {"q": ["a"]}, alpha=2)
    with pytest.raises(BrightproError, match="unknown metric"): evaluate_run({"q": ["a"]}, {"q": ["a"]}, metrics=["map"])


@pytest.mark.parametrize("seed", range(10))
def test_alpha_ndcg_tied_scores_differ_from_ndeval_only_by_tie_order(seed):
    """Where ndeval differs: pyndeval sorts tied scores by docid *ascending* (`sorted(key=(-score, docid))`), trec_eval
    (and brightpro, by the protocol) by docid descending. Given pyndeval's own order as a ranked list, we agree."""
    gold, doc_aspects, weights, run = random_case(2000 + seed, tie_levels=2)
    equal = {q: {a: 1 for a in ws} for q, ws in weights.items()}
    qrels, runf = diversity_frames(gold, doc_aspects, run)
    ref = {(m.query_id, m.measure.params["cutoff"]): m.value
           for m in ir_measures.iter_calc([alpha_nDCG(cutoff=k) for k in KS], qrels, runf)}
    ndeval_order = {q: [d for d, s in sorted(r.items(), key=lambda x: (-x[1], x[0]))] for q, r in run.items()}
    ours = evaluate_run(ndeval_order, gold, doc_aspects, equal, k=KS, metrics=["alpha_ndcg"]).set_index("qid")
    for (q, k), v in ref.items(): assert ours.loc[q, f"alpha_ndcg@{k}"] == pytest.approx(v, abs=1e-9)


@pytest.mark.parametrize("domain", ["biology", "stackoverflow"])
def test_real_bright_ids_match_pytrec_eval_with_its_own_qrels_reader(bright_topics, domain, tmp_path):
    "Real BRIGHT gold ids (slashes, parentheses, unicode); the reference reads the published qrels file itself."
    import gzip, json
    rows = [json.loads(l) for l in gzip.open(bright_topics/f"topics.bright-{domain}-original.jsonl.gz", "rt")]
    gold = {str(r["id"]): r["gold_ids"] for r in rows}
    with open(bright_topics/f"qrels.bright-{domain}.txt") as f: qrels = pytrec_eval.parse_qrel(f)
    pool = sorted({d for g in gold.values() for d in g})
    rng = random.Random(0)
    run = {q: {d: float(rng.randrange(5)) for d in rng.sample(pool, 60)} for q in gold}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.1,10,25", "recall.1,10,25"}).evaluate(run)
    ours = evaluate_run(run, gold, k=[1, 10, 25]).set_index("qid")
    assert len(ref) > 90
    for q, m in ref.items():
        for k in (1, 10, 25):
            assert ours.loc[q, f"ndcg@{k}"] == pytest.approx(m[f"ndcg_cut_{k}"], abs=1e-9)
            assert ours.loc[q, f"recall@{k}"] == pytest.approx(m[f"recall_{k}"], abs=1e-9)


def test_string_join_fallback_gives_the_same_scores():
    "The join compares int64 hashes of doc ids; on a hash collision among judged ids it falls back to strings."
    gold, da, w, run = random_case(77, tie_levels=4)
    J = Judgements.build(gold, da, w)
    fast = score_judgements(run, J, KS)
    vocab, h_sorted, h_order, jkey, jorder = J._lookup()
    J.__dict__["_cache"] = (vocab, None, h_order, jkey, jorder)          # as if two judged ids shared a hash
    slow = score_judgements(run, J, KS)
    pd.testing.assert_frame_equal(fast, slow)

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
    tied = Run.from_dict({"q": {"a": 1.0, "b": 1.0, "B": 1.0, "c": 2.0}})
    assert tied.in_trec_order()["q"] == ["c", "b", "a", "B"]     # trec_eval's order (nDCG, Recall)
    assert tied["q"] == ["c", "a", "b", "B"]                     # the dict's own order (issue 8: the harness's aspect scripts)


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


from harness_reference import harness_alpha_ndcg, harness_aspect_recall, harness_cut, harness_evaluate


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


def harness_domain(aspects, gold, pool, tmp_path):
    "The case written as the authors' JSON mirror and loaded as a Domain; plus the harness's map and weights."
    import json
    from brightpro.data import load_domain
    mirror = dict(examples=[dict(id=q, query=f"query {q}", gold_ids=g, reference_answer="") for q, g in gold.items()],
                  aspects=aspects.drop(columns="qid").to_dict("records"),
                  documents=[dict(id=d, content=d) for d in sorted({d for g in gold.values() for d in g} | set(pool))])
    for config, rows in mirror.items():
        (tmp_path/config).mkdir()
        (tmp_path/config/"biology.json").write_text(json.dumps(rows))
    doc_to_aspect = {}
    for a, docs in zip(aspects["id"], aspects["supporting_docs"]):
        for d in docs: doc_to_aspect[d] = a
    total = aspects.groupby("qid")["weight"].transform("sum")
    return load_domain("biology", dataset=str(tmp_path)), doc_to_aspect, dict(zip(aspects["id"], aspects["weight"] / total))


@pytest.mark.parametrize("seed", range(30))
def test_weighted_metrics_match_harness_restatement(seed, tmp_path):
    "End to end through the data layer: the case is written as the authors' JSON mirror and loaded as a Domain."
    from brightpro.metrics import evaluate_domain
    aspects, gold, pool = harness_case(seed)
    domain, doc_to_aspect, aspect_weight = harness_domain(aspects, gold, pool, tmp_path)
    rng = random.Random(seed)
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
    with pytest.raises(BrightproError, match="unknown metric"): evaluate_run({"q": ["a"]}, {"q": ["a"]}, metrics=["MAP"])


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


# --- issue 8: ties, empty rankings, duplicate gold ids, deep k ------------------------------------------------------

def assert_matches_harness(ours, ref, ks, metrics=("alpha_ndcg", "aspect_recall", "ndcg", "recall")):
    "Every query the harness scores, every metric@k; a query it leaves out is NaN here. Returns the queries compared."
    for q, row in ref.items():
        for m in metrics:
            for k in ks:
                want, got = row.get(f"{m}@{k}"), ours.loc[q, f"{m}@{k}"]
                if want is None: assert np.isnan(got), (q, m, k)
                else: assert got == pytest.approx(want, abs=1e-12), (q, m, k, got, want)
    return len(ref)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("cut", [None, 30, 12])
def test_tied_score_json_matches_the_harness_on_every_query(seed, cut, tmp_path):
    """Item 4: a heavily tied run written as score.json (optionally cut as run.py cuts it), read, evaluated by default,
    equals the harness restatement (stable sort for the aspect metrics, pytrec_eval for nDCG and Recall) everywhere."""
    import json
    from brightpro.metrics import evaluate_domain
    from brightpro.runs import read_run
    aspects, gold, pool = harness_case(seed)
    domain, doc_to_aspect, aspect_weight = harness_domain(aspects, gold, pool, tmp_path)
    rng = random.Random(seed)
    all_docs = sorted({d for g in gold.values() for d in g} | set(pool))
    scores = {q: {d: float(rng.randrange(3)) for d in rng.sample(all_docs, rng.randint(1, len(all_docs)))} for q in gold}
    p = tmp_path/"run.score.json"
    p.write_text(json.dumps(scores))
    ks = [1, 3, 5, 10, 25]
    ours = evaluate_domain(read_run(p, cut=cut), domain, k=ks).set_index("qid")
    ref = harness_evaluate(harness_cut(scores, cut) if cut else scores, gold, doc_to_aspect, aspect_weight, ks)
    assert assert_matches_harness(ours, ref, ks) >= 5


@pytest.mark.parametrize("seed", range(10))
def test_ties_trec_eval_option_ranks_every_metric_by_docid(seed, tmp_path):
    "ties='trec_eval': alpha-nDCG and Aspect-Recall on trec_eval's order (the harness given that order as ranked lists)."
    from brightpro.metrics import evaluate_domain
    aspects, gold, pool = harness_case(100 + seed)
    domain, doc_to_aspect, aspect_weight = harness_domain(aspects, gold, pool, tmp_path)
    rng = random.Random(seed)
    all_docs = sorted({d for g in gold.values() for d in g} | set(pool))
    scores = {q: {d: float(rng.randrange(2)) for d in rng.sample(all_docs, rng.randint(1, len(all_docs)))} for q in gold}
    trec_order = {q: [d for d, _ in sorted(r.items(), key=lambda x: (x[1], x[0]), reverse=True)] for q, r in scores.items()}
    ks = [1, 5, 10, 25]
    ours = evaluate_domain(scores, domain, k=ks, ties="trec_eval").set_index("qid")
    ref = harness_evaluate(trec_order, gold, doc_to_aspect, aspect_weight, ks)
    assert assert_matches_harness(ours, ref, ks, ("alpha_ndcg", "aspect_recall")) >= 5
    ref_trec = harness_evaluate(scores, gold, doc_to_aspect, aspect_weight, ks)
    assert assert_matches_harness(ours, ref_trec, ks, ("ndcg", "recall")) >= 5


def test_empty_ranking_scores_zero_like_pytrec_eval_and_the_harness():
    "Item 6: a query listed with no documents scores 0 on every metric; an absent query is left out."
    gold = {"e": ["a", "b"], "f": ["c"], "absent": ["x"], "g": ["d"]}
    da = {"a": "A", "b": "B", "c": "C", "d": "D", "x": "X"}
    w = {"e": {"A": 1, "B": 2}, "f": {"C": 1}, "absent": {"X": 1}, "g": {"D": 1}}
    norm = {"A": 1 / 3, "B": 2 / 3, "C": 1.0, "D": 1.0, "X": 1.0}
    for run in ({"e": {}, "f": {}, "g": {"d": 1.0}}, {"e": [], "f": [], "g": ["d"]}, {"e": {}, "f": [], "g": ["d"]}):
        ours = evaluate_run(run, gold, da, w, k=[1, 10]).set_index("qid")
        as_scores = {q: r if isinstance(r, dict) else {d: 1.0 for d in r} for q, r in run.items()}
        ref = harness_evaluate(as_scores, gold, da, norm, [1, 10])
        assert set(ref) == {"e", "f", "g"}                       # pytrec_eval and the aspect scripts score e and f
        assert ref["e"]["ndcg@10"] == 0.0 and ref["e"]["alpha_ndcg@10"] == 0.0
        assert_matches_harness(ours, ref, [1, 10])
        assert ours.loc["absent"].isna().all()
    only_empty = evaluate_run({"e": {}}, gold, da, w, k=5)                # a run whose every ranking is empty: zeros
    assert only_empty.set_index("qid").loc["e"].tolist() == [0.0] * 4 and only_empty.attrs["missing_queries"] == 3


def test_duplicate_gold_id_counts_as_the_harness_counts_it(tmp_path):
    """Item 7: a gold id listed twice counts twice in alpha-nDCG's ideal with the harness's map (its script builds the
    ideal from the gold list) and once per query; nDCG and Recall count it once (pytrec_eval's qrels are a dict)."""
    from brightpro.metrics import domain_judgements, evaluate_domain
    gold = {"q": ["a", "a", "b", "c"], "p": ["x"]}
    aspects = pd.DataFrame([dict(id="biology-q-a1", qid="q", content="one", weight=2, supporting_docs=["a", "c"]),
                            dict(id="biology-q-a2", qid="q", content="two", weight=1, supporting_docs=["b"]),
                            dict(id="biology-p-a1", qid="p", content="one", weight=1, supporting_docs=["x"])])
    domain, doc_to_aspect, aspect_weight = harness_domain(aspects, gold, ["y", "z"], tmp_path)
    run = {"q": ["a", "y", "b", "c"], "p": ["x"]}
    ks = [1, 2, 3, 4, 10]
    harness = evaluate_domain(run, domain, k=ks).set_index("qid")
    per_query = evaluate_domain(run, domain, k=ks, aspect_map="per-query").set_index("qid")
    for k in ks:
        twice = harness_alpha_ndcg(run["q"], gold["q"], doc_to_aspect, aspect_weight, 0.5, k)
        once = harness_alpha_ndcg(run["q"], ["a", "b", "c"], doc_to_aspect, aspect_weight, 0.5, k)
        assert harness.loc["q", f"alpha_ndcg@{k}"] == pytest.approx(twice, abs=1e-12)
        assert per_query.loc["q", f"alpha_ndcg@{k}"] == pytest.approx(once, abs=1e-12)
    assert harness.loc["q", "alpha_ndcg@4"] < per_query.loc["q", "alpha_ndcg@4"]      # the ideal is larger
    ref = pytrec_scores(gold, {q: {d: float(-i) for i, d in enumerate(r)} for q, r in run.items()}, ks)
    for frame in (harness, per_query):
        for k in ks:
            assert frame.loc["q", f"ndcg@{k}"] == pytest.approx(ref["q"][f"ndcg_cut_{k}"], abs=1e-12)
            assert frame.loc["q", f"recall@{k}"] == pytest.approx(ref["q"][f"recall_{k}"], abs=1e-12)
    assert domain_judgements(domain).aspect_gold[0].tolist() == [3, 1]
    assert domain_judgements(domain, "per-query").aspect_gold[0].tolist() == [2, 1]
    J = Judgements.build(gold, doc_to_aspect, {"q": {"biology-q-a1": 2, "biology-q-a2": 1}, "p": {"biology-p-a1": 1}},
                         count_duplicate_gold=False)
    assert J.aspect_gold[0].tolist() == [2, 1] and J.n_gold.tolist() == [3, 1]


def test_deep_k_equals_the_bound_worked_out_by_hand():
    """Item 4 (bounded k): a run of depth 10 with 3 gold documents: every metric at k = 100000 is its value at k = 10
    (DCG stops growing; nDCG's ideal holds min(3, k) = 3 documents either way). With 30 gold the nDCG ideal grows to 30:
    nDCG@100000 = DCG@10 / IDCG@30, below nDCG@10, and equal to pytrec_eval's ndcg_cut.100000."""
    import math
    ranked = [f"d{i}" for i in range(10)]
    gold3 = {"q": ["d1", "d4", "d20"]}
    da, w = {"d1": "A", "d4": "B", "d20": "A"}, {"q": {"A": 1, "B": 1}}
    df = evaluate_run({"q": ranked}, gold3, da, w, k=[10, 100000]).iloc[0]
    for m in METRICS_: assert df[f"{m}@100000"] == df[f"{m}@10"], m
    dcg = 1 / math.log2(3) + 1 / math.log2(6)
    assert df["ndcg@100000"] == pytest.approx(dcg / (1 + 1 / math.log2(3) + 1 / math.log2(4)), abs=1e-12)
    gold30 = {"q": [f"d{i}" for i in range(0, 60, 2)]}
    deep = evaluate_run({"q": ranked}, gold30, k=[10, 100000]).iloc[0]
    idcg30 = sum(1 / math.log2(i + 2) for i in range(30))
    dcg30 = sum(1 / math.log2(i + 2) for i in range(0, 10, 2))
    assert deep["ndcg@100000"] == pytest.approx(dcg30 / idcg30, abs=1e-12) and deep["ndcg@100000"] < deep["ndcg@10"]
    assert deep["recall@100000"] == deep["recall@10"] == pytest.approx(5 / 30)
    ref = pytrec_scores(gold30, {"q": {d: float(-i) for i, d in enumerate(ranked)}}, [10, 100000])["q"]
    assert deep["ndcg@100000"] == pytest.approx(ref["ndcg_cut_100000"], abs=1e-12)


METRICS_ = ("alpha_ndcg", "aspect_recall", "ndcg", "recall")


@pytest.mark.parametrize("seed", range(10))
def test_deep_k_matches_pytrec_eval_and_the_harness(seed):
    "k beyond every ranking, on random runs: nDCG and Recall as pytrec_eval, alpha-nDCG as the harness restatement."
    gold, doc_aspects, weights, run = random_case(3000 + seed, tie_levels=3)
    ks = [5, 1000, 10**6]
    ref = pytrec_scores(gold, run, ks)
    ours = evaluate_run(run, gold, doc_aspects, weights, k=ks).set_index("qid")
    for q, m in ref.items():
        for k in ks:
            assert ours.loc[q, f"ndcg@{k}"] == pytest.approx(m[f"ndcg_cut_{k}"], abs=1e-9), (q, k)
            assert ours.loc[q, f"recall@{k}"] == pytest.approx(m[f"recall_{k}"], abs=1e-9), (q, k)
    for q in gold:
        if not gold[q]: continue
        tot = sum(weights[q].values())
        norm = {a: x / tot for a, x in weights[q].items()}
        ranked = [d for d, _ in sorted(run[q].items(), key=lambda x: x[1], reverse=True)]
        for k in (1000, 10**6):
            want = harness_alpha_ndcg(ranked, gold[q], doc_aspects[q], norm, 0.5, 1000)   # the plain loop stops at 1000 here
            got = ours.loc[q, f"alpha_ndcg@{k}"]
            assert np.isnan(got) if want is None else got == pytest.approx(want, abs=1e-12)


def test_huge_k_is_bounded_by_the_run_not_by_k():
    "k = 10**9 on a small run: the same values as k = 1000, and no k-sized allocation (it was a MemoryError)."
    import tracemalloc
    gold, doc_aspects, weights, run = random_case(4000)
    ks = [10, 10**9]
    tracemalloc.start()
    try:
        huge = evaluate_run(run, gold, doc_aspects, weights, k=ks)
        peak = tracemalloc.get_traced_memory()[1]
    finally: tracemalloc.stop()
    assert peak < 50 * 2**20, peak
    ref = evaluate_run(run, gold, doc_aspects, weights, k=[10, 1000])
    np.testing.assert_allclose(huge[[f"{m}@{10**9}" for m in METRICS_]].to_numpy(float),
                               ref[[f"{m}@1000" for m in METRICS_]].to_numpy(float), rtol=0, atol=0)

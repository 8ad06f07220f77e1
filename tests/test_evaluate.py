"""`brightpro evaluate` end to end on the bundled sample: output shapes, agreement with pytrec_eval, run directories,
several-domain files, comparisons, and bad input (exit 2, a message naming the file and line, no traceback)."""
import json
import random

import numpy as np
import pandas as pd
import pytest
import pytrec_eval

from brightpro.data import load_domains
from brightpro.runs import Run, write_trec_run, write_json_run
from conftest import run_cli


@pytest.fixture(scope="module")
def sample():
    return load_domains("all", "sample")


def random_run(domain, seed, depth=40):
    rng = random.Random(seed)
    ids = domain.doc_ids
    return {q: {d: float(rng.randrange(20)) for d in rng.sample(ids, min(depth, len(ids)))} for q in domain.qids}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, sample):
    "A per-domain run directory, one multi-domain TREC file with domain-prefixed ids, and the runs as dicts."
    root = tmp_path_factory.mktemp("runs")
    dicts = {d: random_run(dom, i) for i, (d, dom) in enumerate(sample.items())}
    (root/"rand").mkdir()
    for d, r in dicts.items(): write_trec_run(Run.from_dict(r, name="rand"), root/"rand"/f"{d}.trec")
    write_json_run(Run.from_dict(dicts["biology"]), root/"biology.score.json")
    flat = {f"{d}-{q}": docs for d, r in dicts.items() for q, docs in r.items()}
    write_trec_run(Run.from_dict(flat, name="all"), root/"all.trec")
    return root, dicts


def pytrec(domain, run, ks):
    qrels = {q: {d: 1 for d in g} for q, g in domain.gold.items() if g}
    ks_s = ",".join(map(str, ks))
    res = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{ks_s}", f"recall.{ks_s}"}).evaluate(run)
    return {f"{m}@{k}": float(np.mean([v[f'{n}_{k}'] for v in res.values()])) for m, n in (("ndcg", "ndcg_cut"), ("recall", "recall")) for k in ks}


def test_one_domain_json_matches_pytrec_eval(runs, sample):
    root, dicts = runs
    r = run_cli("evaluate", "--domain", "biology", "--run", root/"rand"/"biology.trec", "--json", "--k", "5,25")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["domain"] == "biology" and out["run"] == "biology" and out["queries"] == len(sample["biology"].qids)
    assert set(out["metrics"]) == {f"{m}@{k}" for m in ("alpha_ndcg", "aspect_recall", "ndcg", "recall") for k in (5, 25)} | {"ndcg@10"}
    ref = pytrec(sample["biology"], dicts["biology"], [5, 10, 25])
    for key, v in ref.items():
        if key in out["metrics"]: assert out["metrics"][key] == pytest.approx(v, abs=1e-9), key
    assert out["alpha"] == 0.5 and out["aspect_map"] == "harness" and out["provenance"]["dataset"] == "sample"


def test_all_domains_directory_and_multi_domain_file_agree(runs, sample, tmp_path):
    root, dicts = runs
    a = run_cli("evaluate", "--run", root/"rand", "--json", "--per-query", tmp_path/"pq.csv")
    b = run_cli("evaluate", "--run", root/"all.trec", "--json")
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    assert [o["domain"] for o in ja] == list(sample) + ["overall"]
    for oa, ob in zip(ja, jb): assert oa["metrics"] == pytest.approx(ob["metrics"], abs=1e-12)
    # overall = plain mean of the domain means
    for key in ja[-1]["metrics"]:
        assert ja[-1]["metrics"][key] == pytest.approx(np.mean([o["metrics"][key] for o in ja[:-1]]), abs=1e-12)
    # the per-query CSV: domain, qid and the same metric@k names; its domain means are the JSON's
    pq = pd.read_csv(tmp_path/"pq.csv", dtype={"qid": str})
    assert list(pq.columns[:2]) == ["domain", "qid"] and set(pq.columns[2:]) == set(ja[0]["metrics"])
    for o in ja[:-1]:
        got = pq[pq["domain"] == o["domain"]]["ndcg@25"].mean()
        assert got == pytest.approx(o["metrics"]["ndcg@25"], abs=1e-12)
        assert got == pytest.approx(pytrec(sample[o["domain"]], dicts[o["domain"]], [25])["ndcg@25"], abs=1e-9)


def test_score_json_and_text_table(runs):
    root, _ = runs
    r = run_cli("evaluate", "--domain", "biology", "--run", root/"biology.score.json")
    assert r.returncode == 0, r.stderr
    assert "alpha_ndcg@25" in r.stdout and "biology" in r.stdout and "{" not in r.stdout


def test_bright_protocol_matches_pytrec_eval(runs, sample):
    from brightpro.data import load_bright
    root, dicts = runs
    bright = load_bright("biology", dataset="sample")
    r = run_cli("evaluate", "--benchmark", "bright", "--domain", "biology", "--run", root/"rand"/"biology.trec", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out["metrics"]) == {"ndcg@10", "recall@10"} and out["benchmark"] == "bright"
    popped = {q: {d: s for d, s in docs.items() if d not in bright.excluded.get(q, set())} for q, docs in dicts["biology"].items()}
    assert out["metrics"]["ndcg@10"] == pytest.approx(pytrec(bright, popped, [10])["ndcg@10"], abs=1e-9)


def test_several_runs_give_a_comparison(runs, tmp_path):
    root, dicts = runs
    worse = {q: dict(list(r.items())[::-1]) for q, r in dicts["biology"].items()}
    write_json_run(Run.from_dict({q: list(r) for q, r in worse.items()}), tmp_path/"worse.json", ranked=True)
    r = run_cli("evaluate", "--domain", "biology", "--run", root/"rand"/"biology.trec", "--run", tmp_path/"worse.json",
                "--json", "--resamples", "500")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert {row["system"] for row in out["comparison"]} == {"biology", "worse"}
    assert all(0 <= row["p_value"] <= 1 for row in out["comparison"] if row["system"] == "worse")
    t = run_cli("evaluate", "--domain", "biology", "--run", root/"rand"/"biology.trec", "--run", tmp_path/"worse.json", "--resamples", "500")
    assert "| system |" in t.stdout


@pytest.mark.parametrize("content, needle", [
    ("0 Q0 a 1 1.0 t\n0 Q0 b 2 t\n", "bad.trec:2"),
    ("0 Q0 a 1 nan t\n", "bad.trec:1"),
    ("", "empty"),
    ("nosuchquery Q0 a 1 1.0 t\n", "ranks none of the"),
])
def test_bad_runs_exit_2_without_traceback(tmp_path, content, needle):
    (tmp_path/"bad.trec").write_text(content)
    r = run_cli("evaluate", "--domain", "biology", "--run", tmp_path/"bad.trec")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "brightpro: error:" in r.stderr and needle in r.stderr and "Traceback" not in r.stderr


def test_bad_options_exit_2(runs):
    root, _ = runs
    for extra in (["--k", "0"], ["--k", "x"], ["--alpha", "2"]):
        r = run_cli("evaluate", "--domain", "biology", "--run", root/"rand"/"biology.trec", *extra)
        assert r.returncode == 2 and "Traceback" not in r.stderr, extra


def test_unknown_queries_and_outside_documents_are_counted_not_fatal(sample, tmp_path):
    bio = sample["biology"]
    q = bio.qids[0]
    (tmp_path/"r.trec").write_text(f"{q} Q0 {bio.gold[q][0]} 1 2.0 t\n{q} Q0 not_a_doc.txt 2 1.0 t\nghost Q0 x 1 1.0 t\n")
    r = run_cli("evaluate", "--domain", "biology", "--run", tmp_path/"r.trec", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["unknown_queries"] == 1 and out["counts"]["docs_outside_corpus"] == 1
    assert out["counts"]["missing_queries"] == len(bio.qids) - 1 and out["queries"] == 1
    assert "not in the dataset" in r.stderr and "not in the corpus" in r.stderr


def test_ambiguous_bare_ids_across_domains_are_refused(runs, tmp_path):
    root, dicts = runs
    write_trec_run(Run.from_dict(dicts["biology"]), tmp_path/"bare.trec")
    r = run_cli("evaluate", "--domain", "biology,economics", "--run", tmp_path/"bare.trec")
    assert r.returncode == 2 and "several domains" in r.stderr


def test_aspect_map_per_query_runs(runs):
    root, _ = runs
    r = run_cli("evaluate", "--domain", "biology", "--run", root/"rand"/"biology.trec", "--aspect-map", "per-query", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["aspect_map"] == "per-query"


def test_exported_qrels_reproduce_ndcg_and_equal_weight_alpha_in_reference_tools(runs, sample, tmp_path):
    "The qrels written by --qrels-out feed pytrec_eval and ir_measures (ndeval) directly."
    import ir_measures
    from brightpro.metrics import evaluate_domain
    root, dicts = runs
    r = run_cli("evaluate", "--domain", "biology", "--run", root/"rand"/"biology.trec", "--qrels-out", tmp_path, "--json")
    assert r.returncode == 0, r.stderr
    qrels = {}
    for q in ir_measures.read_trec_qrels(str(tmp_path/"biology.qrels")): qrels.setdefault(q.query_id, {})[q.doc_id] = q.relevance
    assert qrels == {q: {d: 1 for d in g} for q, g in sample["biology"].gold.items() if g}
    div = list(ir_measures.read_trec_qrels(str(tmp_path/"biology.div.qrels")))
    # distinct scores so that ndeval's tie order (docid ascending) cannot matter
    run = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in dicts["biology"].items()}
    ours_run = Run.from_dict(run)
    ref = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.alpha_nDCG @ 10], div,
                                                             [ir_measures.ScoredDoc(q, d, s) for q, ds in run.items() for d, s in ds.items()])}
    bio = sample["biology"]
    import dataclasses
    equal = bio.aspects.assign(weight=1)
    equal["norm_weight"] = 1 / equal.groupby("qid")["weight"].transform("size")
    flat = dataclasses.replace(bio, aspects=equal)
    ours = evaluate_domain(ours_run, flat, k=10).set_index("qid")
    for q, v in ref.items(): assert ours.loc[q, "alpha_ndcg@10"] == pytest.approx(v, abs=1e-9)


def test_sample_domains_match_the_harness_transcription(sample, runs):
    "On the bundled sample's real annotations, the default (harness) map reproduces the authors' scripts per query."
    from test_metrics import harness_alpha_ndcg, harness_aspect_recall
    from brightpro.metrics import evaluate_domain
    import re
    _, dicts = runs
    for name, dom in sample.items():
        doc_to_aspect = {}
        for a, docs in zip(dom.aspects["id"], dom.aspects["supporting_docs"]):
            for d in docs: doc_to_aspect[str(d)] = str(a)
        stems = [re.sub(r"-(?:a\d+|aspect-\d+)$", "", a) for a in dom.aspects["id"]]
        totals = pd.Series(dom.aspects["weight"].to_numpy(float)).groupby(stems).transform("sum")
        aspect_weight = dict(zip(dom.aspects["id"], dom.aspects["weight"].to_numpy(float) / totals.to_numpy()))
        ranked = Run.from_dict(dicts[name]).to_dict()
        ours = evaluate_domain(Run.from_dict(dicts[name]), dom, k=[10, 25]).set_index("qid")
        for q in dom.qids:
            g = [str(x) for x in dom.gold[q]]
            for k in (10, 25):
                ref = harness_alpha_ndcg(ranked[q], g, doc_to_aspect, aspect_weight, 0.5, k)
                got = ours.loc[q, f"alpha_ndcg@{k}"]
                assert (np.isnan(got) if ref is None else got == pytest.approx(ref, abs=1e-12)), (name, q, k)
                assert ours.loc[q, f"aspect_recall@{k}"] == pytest.approx(
                    harness_aspect_recall(ranked[q], g, doc_to_aspect, aspect_weight, k), abs=1e-12), (name, q, k)

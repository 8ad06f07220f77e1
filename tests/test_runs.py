"""Run files: reading, writing, tie order, duplicates, bad input, and qrels that ir_measures, ranx and pytrec_eval read."""
import random

import numpy as np
import pytest

import ir_measures
import pytrec_eval

from brightpro.core import BrightproError
from brightpro.runs import (Run, RunError, read_run, read_trec_run, write_trec_run, write_json_run, write_qrels,
                            write_diversity_qrels, diversity_qrels)


def random_scores(seed, n_q=5, n_d=50, ties=False):
    rng = random.Random(seed)
    return {str(q): {f"doc{rng.randrange(10**5)}": float(rng.randrange(3)) if ties else rng.uniform(-5, 5)
                     for _ in range(rng.randint(1, n_d))} for q in range(n_q)}


def trec_eval_order(scores):
    "The order trec_eval ranks a query: score descending, then docid descending (strcmp)."
    return {q: [d for d, _ in sorted(r.items(), key=lambda x: (x[1], x[0]), reverse=True)] for q, r in scores.items()}


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("ties", [False, True])
def test_trec_roundtrip_and_order(tmp_path, seed, ties):
    scores = random_scores(seed, ties=ties)
    run = Run.from_dict(scores, name="r")
    assert run.to_dict() == trec_eval_order(scores)
    path = write_trec_run(run, tmp_path/"r.trec")
    back = read_run(path)
    assert back.to_dict() == run.to_dict()
    assert back.to_scores() == scores
    assert read_run(write_json_run(run, tmp_path/"s.score.json")).to_scores() == scores
    assert read_run(write_json_run(run, tmp_path/"l.json", ranked=True)).to_dict() == run.to_dict()


def test_trec_file_order_does_not_matter_and_rank_column_is_ignored(tmp_path):
    p = tmp_path/"r.trec"
    p.write_text("q1 Q0 a 1 1.0 t\nq1 Q0 c 2 3.0 t\nq2 Q0 z 9 0 t\nq1 Q0 b 3 3.0 t\n")
    run = read_trec_run(p)
    assert run.to_dict() == {"q1": ["c", "b", "a"], "q2": ["z"]}
    assert run.name == "r"


def test_duplicates_keep_first_occurrence(tmp_path):
    p = tmp_path/"dup.trec"
    p.write_text("q Q0 a 1 1.0 t\nq Q0 b 2 0.5 t\nq Q0 a 3 9.0 t\n")
    run = read_run(p)
    assert run.to_dict() == {"q": ["a", "b"]} and run.to_scores() == {"q": {"a": 1.0, "b": 0.5}}
    assert run.meta["duplicates"] == 1
    assert Run.from_dict({"q": ["x", "y", "x", "z"]})["q"] == ["x", "y", "z"]


def test_cut():
    run = Run.from_dict({"q": {f"d{i}": float(i) for i in range(1000)}, "p": {"a": 1.0}})
    cut = run.cut(200)
    assert len(cut["q"]) == 200 and cut["q"][0] == "d999" and cut["p"] == ["a"]
    assert cut.cut(1000).to_dict() == cut.to_dict()


@pytest.mark.parametrize("content, where, what", [
    ("q Q0 a 1 1.0 t\nq Q0 b 2 t\n", ":2:", "expected 6 fields"),
    ("q Q0 a 1 1.0 t\nq Q0 b 2 0.5 t extra\n", ":2:", "expected 6 fields"),
    ("q Q0 a 1 high t\n", ":1:", "not a number"),
    ("q Q0 a 1 0.5 t\n\nq Q0 b 2 nan t\n", ":3:", "not a finite number"),
    ("q Q0 a 1 inf t\n", ":1:", "not a finite number"),
    ("q Q0 a 1 -Infinity t\n", ":1:", "not a finite number"),
])
def test_malformed_trec_lines_name_file_and_line(tmp_path, content, where, what):
    p = tmp_path/"bad.trec"
    p.write_text(content)
    with pytest.raises(BrightproError) as e: read_run(p)
    assert f"bad.trec{where}" in str(e.value) and what in str(e.value)


def test_empty_and_missing_files(tmp_path):
    (tmp_path/"empty.trec").write_text("")
    with pytest.raises(RunError, match="empty"): read_run(tmp_path/"empty.trec")
    (tmp_path/"blank.trec").write_text("\n\n")
    with pytest.raises(RunError, match="empty"): read_run(tmp_path/"blank.trec")
    with pytest.raises(RunError, match="no such run file"): read_run(tmp_path/"nope.trec")
    (tmp_path/"e.json").write_text("{}")
    with pytest.raises(RunError, match="empty"): read_run(tmp_path/"e.json")


@pytest.mark.parametrize("content, what", [
    ('{"q": {"a": NaN}}', "finite"),
    ('{"q": {"a": Infinity}}', "finite"),
    ('{"q": {"a": "1.0"}}', "not a number"),
    ('{"q": {"a": true}}', "not a number"),
    ('{"q": 3}', "must map to"),
    ('{"q": {"a": 1.0}', "not valid JSON"),
    ('[1, 2]', "must map query ids"),
])
def test_bad_json_runs(tmp_path, content, what):
    p = tmp_path/"bad.score.json"
    p.write_text(content)
    with pytest.raises(BrightproError, match=what) as e: read_run(p)
    assert "bad.score.json" in str(e.value)


def test_qrels_are_read_by_reference_tools(tmp_path):
    gold = {"q1": ["a", "b", "a"], "q2": ["c"]}
    p = write_qrels(gold, tmp_path/"qrels.txt")
    qrels = {}
    for r in ir_measures.read_trec_qrels(str(p)): qrels.setdefault(r.query_id, {})[r.doc_id] = r.relevance
    assert qrels == {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}}
    from ranx import Qrels
    assert Qrels.from_file(str(p), kind="trec").to_dict() == qrels
    run = {"q1": {"b": 2.0, "x": 1.0}, "q2": {"c": 1.0}}
    assert pytrec_eval.RelevanceEvaluator(qrels, {"recall.1"}).evaluate(run)["q1"]["recall_1"] == 0.5


def test_diversity_qrels_feed_ir_measures_alpha_ndcg(tmp_path):
    gold = {"q": ["a1", "a2", "b1", "b2", "c1"]}
    doc_aspects = {"q": {"a1": "A", "a2": "A", "b1": "B", "b2": "B", "c1": "C"}}
    p = write_diversity_qrels(gold, doc_aspects, tmp_path/"div.qrels")
    rows = list(ir_measures.read_trec_qrels(str(p)))
    assert {(r.doc_id, r.iteration) for r in rows} == {("a1", "1"), ("a2", "1"), ("b1", "2"), ("b2", "2"), ("c1", "3")}
    run = [ir_measures.ScoredDoc("q", d, s) for d, s in [("a1", 4.0), ("a2", 3.0), ("x", 2.0), ("b1", 1.0)]]
    value = ir_measures.calc_aggregate([ir_measures.alpha_nDCG @ 4], rows, run)[ir_measures.alpha_nDCG @ 4]
    from brightpro.metrics import evaluate_run
    ours = evaluate_run({"q": ["a1", "a2", "x", "b1"]}, gold, doc_aspects, {"q": {"A": 1, "B": 1, "C": 1}}, k=4)
    assert ours["alpha_ndcg@4"][0] == pytest.approx(value, abs=1e-12)
    # A single (harness) map works too.
    assert diversity_qrels(gold, doc_aspects["q"])["iteration"].tolist() == ["1", "1", "2", "2", "3"]


def test_duplicate_detection_survives_hash_collisions(monkeypatch):
    "Duplicates are found through hashes; if different ids collide, the exact (string) method is used instead."
    import brightpro.runs as runs
    monkeypatch.setattr(runs, "_hashes", lambda docids: np.zeros(len(docids), np.int64))   # every id collides
    run = Run.from_dict({"q": ["a", "b", "a", "c", "b"], "p": ["a"]})
    assert run.to_dict() == {"q": ["a", "b", "c"], "p": ["a"]} and run.meta["duplicates"] == 2

"""Run files: reading, writing, tie order, duplicates, bad input, and qrels that ir_measures, ranx and pytrec_eval read."""
import bz2, gzip, json, os, random, subprocess, sys

import numpy as np
import pytest

import ir_measures
import pytrec_eval

from brightpro.core import BrightproError
from brightpro.runs import (Run, RunError, read_run, read_json_run, read_trec_run, write_trec_run, write_json_run,
                            write_qrels, write_diversity_qrels, diversity_qrels)
from harness_reference import harness_cut, harness_ranked


def random_scores(seed, n_q=5, n_d=50, ties=False):
    rng = random.Random(seed)
    return {str(q): {f"doc{rng.randrange(10**5)}": float(rng.randrange(3)) if ties else rng.uniform(-5, 5)
                     for _ in range(rng.randint(1, n_d))} for q in range(n_q)}


def trec_eval_order(scores):
    "The order trec_eval ranks a query: score descending, then docid descending (strcmp)."
    return {q: [d for d, _ in sorted(r.items(), key=lambda x: (x[1], x[0]), reverse=True)] for q, r in scores.items()}


def harness_order(scores):
    "The order the harness's aspect scripts rank a score.json: Python's stable sort, ties in the file's key order."
    return {q: harness_ranked(r) for q, r in scores.items()}


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("ties", [False, True])
def test_trec_roundtrip_and_order(tmp_path, seed, ties):
    "Issue 8: a score dict keeps the stable score order (ties in dict order); a TREC file is in trec_eval's order."
    scores = random_scores(seed, ties=ties)
    run = Run.from_dict(scores, name="r")
    assert run.to_dict() == harness_order(scores) and run.meta["tie_order"] == "file"
    assert run.in_trec_order().to_dict() == trec_eval_order(scores)
    path = write_trec_run(run, tmp_path/"r.trec")
    back = read_run(path)
    assert back.to_dict() == trec_eval_order(scores) and back.meta["tie_order"] == "trec_eval"
    assert back.to_scores() == scores
    again = read_run(write_json_run(run, tmp_path/"s.score.json"))
    assert again.to_scores() == scores and again.to_dict() == run.to_dict()      # score.json carries the tie order
    assert read_run(write_json_run(run, tmp_path/"l.json", ranked=True)).to_dict() == run.to_dict()


def tied_scores(seed, n_q=30, levels=3):
    "A heavily tied score.json: few score levels, documents in random file order."
    rng = random.Random(seed)
    return {str(q): {f"doc{rng.randrange(10**4)}": float(rng.randrange(levels)) for _ in range(rng.randint(0, 80))}
            for q in range(n_q)}


@pytest.mark.parametrize("seed", range(8))
def test_score_json_keeps_file_order_and_cuts_like_the_harness(tmp_path, seed):
    "Issue 8 item 4: a score.json is ranked by the harness's stable sort and cut as run.py cuts it (top 1000, top 200)."
    scores = tied_scores(seed)
    p = tmp_path/"r.score.json"
    p.write_text(json.dumps(scores))
    run = read_run(p)
    assert run.to_dict() == harness_order(scores) and run.meta["tie_order"] == "file"
    for cut in (1, 7, 25):
        assert read_run(p, cut=cut).to_dict() == harness_order(harness_cut(scores, cut))
        assert run.cut(cut).to_dict() == harness_order(harness_cut(harness_cut(scores, 60), cut))
        # ties="trec_eval": trec_eval's order before the cut
        assert read_run(p, cut=cut, ties="trec_eval").to_dict() == {q: r[:cut] for q, r in trec_eval_order(scores).items()}
    as_trec = read_run(write_trec_run(run, tmp_path/"r.trec"), ties="trec_eval")     # TREC has no line for an empty ranking
    assert as_trec.to_dict() == {q: r for q, r in trec_eval_order(scores).items() if r}


@pytest.mark.parametrize("seed", range(8))
def test_trec_eval_order_with_need_sorts_what_lies_above_it(seed):
    "Only the tied blocks starting above `need` are re-sorted; the top `need` of every query is trec_eval's."
    scores = tied_scores(100 + seed)
    run = Run.from_dict(scores)
    full = trec_eval_order(scores)
    rng = random.Random(seed)
    for need in (1, 5, 20, 100, [rng.randrange(1, 40) for _ in scores]):
        order = run.trec_eval_order(need=need)
        got = Run(run.qids, run.offsets, run.docids if order is None else run.docids[order]).to_dict()
        needs = need if isinstance(need, list) else [need] * len(scores)
        for (q, ranked), n in zip(full.items(), needs): assert got[q][:n] == ranked[:n], (q, n)
    assert Run.from_dict({"q": ["b", "a"]}).trec_eval_order() is None                 # a ranked list: its own order
    assert Run.from_dict({"q": {"a": 2.0, "b": 1.0}}).trec_eval_order() is None        # no ties


def test_empty_rankings_are_kept():
    "Issue 8 item 6: a query listed with an empty ranking stays in the run, with no rows."
    run = Run.from_dict({"q": {}, "p": {"a": 1.0}, "r": {}})
    assert list(run) == ["q", "p", "r"] and run.offsets.tolist() == [0, 0, 1, 1] and run["q"] == [] and "r" in run
    assert Run.from_dict({"q": [], "p": ["a"]}).to_dict() == {"q": [], "p": ["a"]}
    assert Run.from_dict({"q": [], "p": {"a": 1.0}}).to_scores() == {"q": {}, "p": {"a": 1.0}}   # empty fits either kind
    only_empty = Run.from_dict({"q": {}})                # pytrec_eval and the harness score it (0): not an error
    assert len(only_empty) == 1 and only_empty.n_rows == 0
    assert only_empty.cut(5).to_dict() == {"q": []} and only_empty.subset(["q"]).to_dict() == {"q": []}
    with pytest.raises(RunError, match="empty"): Run.from_dict({})


def test_run_file_formats_are_sniffed_from_content(tmp_path):
    "Issue 8: gzip is read whatever the name, a UTF-8 byte-order mark is skipped, .json.gz and .trec.gz are read."
    trec, js = b"q Q0 b 1 1.0 t\nq Q0 a 2 2.0 t\n", json.dumps({"q": {"b": 1.0, "a": 2.0}}).encode()
    files = {"bom.score.json": b"\xef\xbb\xbf" + js, "bom.trec": b"\xef\xbb\xbf" + trec,
             "packed.trec": gzip.compress(trec), "packed.json": gzip.compress(js), "packed": gzip.compress(trec),
             "r.json.gz": gzip.compress(js), "r.trec.gz": gzip.compress(trec), "r.score.json.gz": gzip.compress(b"\xef\xbb\xbf" + js)}
    for name, data in files.items():
        (tmp_path/name).write_bytes(data)
        run = read_run(tmp_path/name)
        assert run.to_dict() == {"q": ["a", "b"]}, name
        assert run.name == {"bom.score.json": "bom", "bom.trec": "bom", "packed.trec": "packed", "packed.json": "packed",
                            "packed": "packed", "r.json.gz": "r", "r.trec.gz": "r", "r.score.json.gz": "r"}[name]
    assert read_trec_run(tmp_path/"r.trec.gz").meta["tag"] == "t"
    assert read_json_run(tmp_path/"packed.json").to_dict() == {"q": ["a", "b"]}


@pytest.mark.parametrize("name, content, what", [
    ("null.json", b"null", "null.json: the file holds null, not a run"),
    ("null.json.gz", gzip.compress(b" null\n"), "null.json.gz: the file holds null, not a run"),
    ("q.json", b'{"q1": {"a": 1.0}, "q2": null}', "q.json: query q2: the ranking is null"),
    ("s.json", b'{"q1": {"a": 1.0, "b": null}}', "s.json: score of query q1 document b is null, not a number"),
    ("l.json", b'{"q1": ["a", null]}', "l.json: query q1 lists null, not a document id"),
    ("mixed.json", b'{"q1": ["a"], "q2": {"b": 1}}', "use one kind"),
    ("bin.trec", bytes(range(256)), "bin.trec: binary data, not a run"),
    ("r.trec.bz2", bz2.compress(b"q Q0 a 1 1.0 t\n"), "r.trec.bz2: a bzip2 file; only gzip-compressed runs are read"),
    ("u16.json", '{"q": ["a"]}'.encode("utf-16"), "u16.json: UTF-16 text; save the run as UTF-8"),
    ("broken.gz", gzip.compress(b"q Q0 a 1 1.0 t\n" * 100)[:40], "broken.gz: not a readable gzip file"),
    ("latin1.trec", b"q Q0 a 1 1.0 t\nq Q0 caf\xe9 2 0.5 t\n", "latin1.trec:2: not UTF-8 text"),
    ("latin1.json", b'{"q": {"a": 1.0,\n "caf\xe9": 0.5}}', "latin1.json:2: not UTF-8 text"),
])
def test_bad_run_files_get_one_clear_line(tmp_path, name, content, what):
    "Issue 8: null, binary data, other compressions, UTF-16, broken gzip: one line naming the file (and query or line)."
    (tmp_path/name).write_bytes(content)
    with pytest.raises(RunError) as e: read_run(tmp_path/name)
    msg = str(e.value)
    assert what in msg and "\n" not in msg and "\ufffd" not in msg and "\\x" not in msg, msg


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
    monkeypatch.setattr(runs, "id_hashes", lambda docids: np.zeros(len(docids), np.int64))   # every id collides
    run = Run.from_dict({"q": ["a", "b", "a", "c", "b"], "p": ["a"]})
    assert run.to_dict() == {"q": ["a", "b", "c"], "p": ["a"]} and run.meta["duplicates"] == 2


def _hostile_run(seed) -> Run:
    "Arrays given straight to `Run`, as a retriever's may be: a docid twice in one query, non-finite and signed-zero scores,"
    "ids JSON must escape, empty rankings."
    rng = random.Random(seed)
    ids = ["d1", "d\u00e9", 'q"uote', "back\\slash", "line\u2028sep", "\U0001f600", "d/1", "1"]
    values = [0.0, -0.0, 1e-300, 3.0, float("nan"), float("inf"), -float("inf")]
    qids, docids, scores, offsets = [], [], [], [0]
    for q in range(rng.randint(0, 6)):
        n = rng.choice([0, 1, 3, 20])
        docids += [rng.choice(ids) for _ in range(n)]
        scores += [rng.choice(values) if rng.random() < 0.3 else rng.uniform(-1e6, 1e6) for _ in range(n)]
        offsets.append(offsets[-1] + n); qids.append(rng.choice([f"q{q}", f"\u00e9{q}"]))
    return Run(np.array(qids, dtype=object), np.array(offsets), np.array(docids, dtype=object), np.array(scores, np.float64))


@pytest.mark.parametrize("seed", range(40))
def test_writers_print_what_the_standard_library_prints(tmp_path, seed):
    "Issue 22: the score file is `json.dumps` of the score dict byte for byte (escapes, NaN and Infinity, a repeated docid's"
    "first place and last score), and the TREC file one f-string line per row, whether the score texts are given or not."
    from brightpro.runs import score_texts
    run = _hostile_run(seed)
    ranks = [i + 1 for n in run.lengths.tolist() for i in range(n)]
    lines = "".join(f"{q} Q0 {d} {k} {s!r} t\n" for q, d, k, s in
                    zip(np.repeat(run.qids, run.lengths).tolist(), run.docids.tolist(), ranks, run.scores.tolist())) or "\n"
    for given in (None, score_texts(run)):
        assert write_json_run(run, tmp_path/"s.json", scores=given).read_text(encoding="utf-8") == json.dumps(run.to_scores())
        assert write_trec_run(run, tmp_path/"r.trec", tag="t", scores=given).read_text(encoding="utf-8") == lines


@pytest.mark.parametrize("seed", range(40))
def test_repeated_rows_are_what_pandas_marks_duplicated(seed):
    "Issue 22: `Run.repeated_rows` (hashes, no pandas) marks the rows pandas' `duplicated` marks on (query, docid)."
    import pandas as pd
    run = _hostile_run(seed)
    expected = pd.DataFrame({"q": np.repeat(np.arange(len(run)), run.lengths), "d": run.docids}).duplicated().to_numpy()
    assert run.repeated_rows().tolist() == expected.tolist()


SPAWNED = """
import multiprocessing as mp
from brightpro.data import load_domains
from brightpro.evaluate import evaluate_runs
from brightpro.results import aspect_ranks
from brightpro.runs import Run

def scored(run):
    bio = load_domains("biology")["biology"]
    return (aspect_ranks(run, bio).first_rank.astype("float").fillna(0).tolist(),
            evaluate_runs([run], {"biology": bio}, k=[5, 25])[0].per_query.drop(columns="domain").to_numpy().tolist())

if __name__ == "__main__":
    bio = load_domains("biology")["biology"]
    run = Run.from_dict({q: bio.doc_ids[:30] + bio.gold[q] for q in bio.qids})
    run.hashes()   # cached here, with this process's hash seed
    with mp.get_context("spawn").Pool(1) as pool: there = pool.apply(scored, (run,))
    here = scored(run)
    assert there == here, (there, here)
    print(sum(r > 0 for r in here[0]), "aspects ranked in both processes")
"""


def test_a_run_sent_to_a_spawned_process_scores_the_same(tmp_path):
    "A spawned process hashes strings with another seed: the run's cached hashes must not travel with it."
    script = tmp_path/"spawned.py"; script.write_text(SPAWNED)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "BRIGHTPRO_PROGRESS": "0"}
    env.pop("PYTHONHASHSEED", None)   # each process its own seed, as by default
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert int(r.stdout.split()[0]) > 0   # some aspects are found, so a wrong join would show

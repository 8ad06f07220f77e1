"""The course's self-checks (nbs/course/checks.py): every check fails (NotYet, "not yet: ...") on a wrong answer,
says "right" on the right one, and only reminds on None. Right answers are computed here with brightpro, apart from
the checks' own code, as a learner would; the solution notebooks run the same checks in CI (nbval)."""
import json, sys
from pathlib import Path

import numpy as np
import pytest

COURSE = Path(__file__).resolve().parents[1]/"nbs"/"course"
sys.path.insert(0, str(COURSE))
import checks  # noqa: E402


def right(capsys, fn, answer, *args):
    fn(answer, *args)
    assert capsys.readouterr().out.startswith("right"), fn.__name__


def wrong(fn, answer, *args):
    with pytest.raises(checks.NotYet, match="^not yet: "):
        fn(answer, *args)


def test_none_only_reminds(capsys):
    checks.check_critical_aspects(None)
    assert capsys.readouterr().out.startswith("not answered yet")


def test_unit1(capsys):
    bio = checks.domain("biology")
    a = bio.aspects[bio.aspects["qid"] == "0"]
    n = int((a["weight"] == 3).sum())
    right(capsys, checks.check_critical_aspects, n); wrong(checks.check_critical_aspects, n + 1)
    gold, top = set(bio.gold["0"]), checks.bm25_run("biology")["0"][:10]
    hits = [d in gold for d in top]
    right(capsys, checks.check_recall_at_10, sum(hits) / len(gold)); wrong(checks.check_recall_at_10, sum(hits) / 10)
    dcg = sum(1 / np.log2(r + 1) for r, h in enumerate(hits, 1) if h)
    ideal = sum(1 / np.log2(r + 1) for r in range(1, min(10, len(gold)) + 1))
    right(capsys, checks.check_ndcg_at_10, dcg / ideal); wrong(checks.check_ndcg_at_10, dcg / len(gold))


def test_unit2(capsys):
    from brightpro.significance import paired_randomization_test
    a = checks.per_query("bm25-bright", checks.DOMAINS2).set_index(["domain", "qid"])["alpha_ndcg@25"]
    b = checks.per_query("bm25", checks.DOMAINS2).set_index(["domain", "qid"])["alpha_ndcg@25"].loc[a.index]
    best = "bm25" if b.mean() > a.mean() else "bm25-bright"
    right(capsys, checks.check_better_run, best); wrong(checks.check_better_run, ({"bm25", "bm25-bright"} - {best}).pop())
    wins = int((b > a).sum())
    right(capsys, checks.check_wins, wins); wrong(checks.check_wins, int((b >= a).sum()) + 1)
    p = paired_randomization_test(a.to_numpy(), b.to_numpy(), n_resamples=10_000, seed=42)
    right(capsys, checks.check_p_value, p); wrong(checks.check_p_value, p / 2)


def test_unit3(capsys):
    right(capsys, checks.check_tokens, ["onion", "were", "cry", "cook", "attent"])
    wrong(checks.check_tokens, ["the", "onion", "were", "cry", "for", "the", "cook", "attent"])
    wrong(checks.check_tokens, ["onions", "were", "crying", "cooks", "attention"])
    from brightpro.bm25 import BM25Bright
    bio = checks.domain("biology")
    bm25 = BM25Bright()
    bm25.index(bio.documents.column("id"), bio.documents.column("content"))
    run = bm25.search(bio.query_text, k=3)
    right(capsys, checks.check_top_document, run["0"][0]); wrong(checks.check_top_document, run["0"][1])


def test_unit4_check_with_a_stand_in_run(capsys):
    "The dense check compares any per-query table with BM25: a copy of BM25's own table wins on no query."
    pq = checks.per_query("bm25-bright")
    right(capsys, checks.check_dense_vs_bm25, 0, pq); wrong(checks.check_dense_vs_bm25, 1, pq)
    better = pq.assign(**{"ndcg@10": pq["ndcg@10"] + 0.01})
    right(capsys, checks.check_dense_vs_bm25, len(pq), better); wrong(checks.check_dense_vs_bm25, 0, better)


def test_unit5(capsys, tmp_path):
    for d, calls in (("biology", [3, 4]), ("economics", [5])):
        (tmp_path/d).mkdir()
        (tmp_path/d/"traces.jsonl").write_text("".join(json.dumps({"qid": str(i), "calls": c}) + "\n" for i, c in enumerate(calls)))
    right(capsys, checks.check_requests, 12, tmp_path); wrong(checks.check_requests, 3, tmp_path)
    judgements = {"biology": [{"rc": 4}, {"rc": 2}], "economics": [{"rc": 3}]}
    right(capsys, checks.check_mean_rc, 3.0, judgements); wrong(checks.check_mean_rc, 3.5, judgements)


def test_unit6(capsys, tmp_path):
    (tmp_path/"biology"/"tables").mkdir(parents=True)
    (tmp_path/"biology"/"tables"/"metrics.csv").write_text(
        'run,alpha_ndcg@25\nbm25-bright,"0.6383 [0.5767, 0.7006]"\nbm25,"0.7040 [0.6407, 0.7539]*"\n')
    right(capsys, checks.check_report_leader, "bm25", tmp_path); wrong(checks.check_report_leader, "bm25-bright", tmp_path)
    right(capsys, checks.check_significant, True, tmp_path); wrong(checks.check_significant, False, tmp_path)

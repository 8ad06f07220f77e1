"""Judge validity (brightpro.judge.judge_validity, `brightpro judge --validity`): the authors' three answer tiers judged by a
scripted judge on a real local server (LocalChatServer) whose scores per tier and rep are known, so every number of the
table is worked out here from the script; the agreement statistics against scikit-learn and scipy."""
import json, random, re, statistics

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from brightpro.cli import main
from brightpro.core import BrightproError
from brightpro.data import load_domains
from brightpro.judge import OFF_TOPIC_ANSWERS, judge_validity, spearman, truncate_reference, validity_answers, weighted_kappa
from brightpro.llm import LLMClient
from brightpro.scripted_llm import text_reply

# verbatim from yale-nlp/Bright-Pro agentic_retrieval/scripts_evaluation/test_judge_reliability.py @ b31d5f1 (OFF_TOPIC_TEMPLATES)
AUTHORS_OFF_TOPIC = [
    "That's an interesting question. There are many factors involved and people often disagree about the best answer. "
    "It's worth thinking carefully about the topic. [doc_0]",
    "In general, the answer depends on context and specific circumstances. Experts have debated this for a long time. [doc_0]",
    "The correct answer to this question varies. I would recommend checking with a domain specialist. [doc_0]",
]
TIERS = ("reference", "truncated", "off_topic")
# the scripts: OQ of each tier on reps 1, 2, 3; aspect coverage of each tier (all aspects the same score)
SCRIPT_A = {"reference": [5, 5, 4], "truncated": [3, 4, 3], "off_topic": [1, 1, 2]}
SCRIPT_B = {"reference": [5, 4, 4], "truncated": [3, 3, 3], "off_topic": [1, 2, 1]}
INVERTED = {"reference": [1, 1, 1], "truncated": [3, 3, 3], "off_topic": [5, 5, 5]}
COVERAGE = {"reference": 1.0, "truncated": 0.5, "off_topic": 0.0}
RC = {"reference": 5, "truncated": 3, "off_topic": 1}   # round(4 * coverage + 1), every aspect scored alike
Q, REPS = 3, 3


def tier_of(prompt: str) -> str:
    ref = prompt.split("REFERENCE_ANSWER:\n", 1)[1].split("\n\nSYSTEM_ANSWER:", 1)[0].strip()
    ans = prompt.split("SYSTEM_ANSWER:\n", 1)[1].split("\n\nScore every", 1)[0].strip()
    return "reference" if ans == ref else "truncated" if ans.endswith(" ...") else "off_topic"


def scripted(script):
    def respond(request):
        prompt = request["messages"][0]["content"]
        tier, rep = tier_of(prompt), (request.get("seed") or 0) + 1
        n = len(re.findall(r"^a\d+:", prompt, re.M))
        return text_reply(json.dumps({"aspect_scores": {f"a{i}": COVERAGE[tier] for i in range(1, n + 1)},
                                      "overall_quality": script[tier][rep - 1], "justification": tier}))
    return respond


@pytest.fixture(scope="module")
def bio():
    return load_domains("biology", "sample")


def client(srv, model, cache=None):
    return LLMClient(srv.base_url, model, max_retries=0, timeout=10.0, cache=cache)


# --- the statistics against independent implementations ------------------------------------------------------------------
def test_weighted_kappa_matches_sklearn():
    rng = np.random.default_rng(0)
    for labels in ([1, 2, 3, 4, 5], [0.0, 0.5, 1.0]):
        for _ in range(20):
            a = rng.choice(labels, 30).tolist()
            b = [x if rng.random() < 0.6 else rng.choice(labels) for x in a]
            code = {l: i for i, l in enumerate(labels)}   # scikit-learn takes no 0.5 labels: the same order as integers
            ref = cohen_kappa_score([code[x] for x in a], [code[x] for x in b], weights="quadratic", labels=list(code.values()))
            assert weighted_kappa(a, b, labels) == pytest.approx(ref, abs=1e-12)
    # by hand: a = 1 2 3, b = 1 3 3 on 1..3: sum w*O = 1, sum w*E = 5, kappa 0.8
    assert weighted_kappa([1, 2, 3], [1, 3, 3], [1, 2, 3]) == pytest.approx(0.8, abs=1e-12)


def test_spearman_matches_scipy():
    rng = np.random.default_rng(1)
    for _ in range(20):
        a, b = rng.integers(1, 6, 25), rng.integers(1, 6, 25)
        assert spearman(a, b) == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)


# --- the tiers, as the authors build them -----------------------------------------------------------------------------------
def test_tiers_are_the_authors(bio):
    assert list(OFF_TOPIC_ANSWERS) == AUTHORS_OFF_TOPIC
    rows, skipped = validity_answers(bio, queries=Q)
    refs = dict(zip(bio["biology"].queries["id"], bio["biology"].queries["reference_answer"]))
    rng = random.Random(0)
    expected = []
    for qid in list(refs)[:Q]:
        words = refs[qid].strip().split()
        expected += [(qid, "reference", refs[qid].strip()), (qid, "truncated", " ".join(words[:max(20, int(0.4 * len(words)))]) + " ..."),
                     (qid, "off_topic", rng.choice(AUTHORS_OFF_TOPIC))]
    assert [(r["qid"], r["tier"], r["answer"]) for r in rows] == expected and skipped == []
    assert truncate_reference("one two three") == "one two three ..."


# --- the table from the script ---------------------------------------------------------------------------------------------
def test_validity_table_follows_from_the_script(server, bio, tmp_path):
    a, b = server(scripted(SCRIPT_A)), server(scripted(SCRIPT_B))
    with client(a, "judge-a", tmp_path/"a.sqlite") as ca, client(b, "judge-b", tmp_path/"b.sqlite") as cb:
        v = judge_validity(bio, client=ca, second_client=cb, queries=Q, reps=REPS, n_resamples=200)
    assert (a.count, b.count) == (Q * 3 * REPS, Q * 3 * REPS)
    tiers = v.tiers().set_index(["judge", "tier"])
    for judge, script in (("judge-a", SCRIPT_A), ("judge-b", SCRIPT_B)):
        for t in TIERS:
            row = tiers.loc[(judge, t)]
            assert row["judged"] == Q * REPS and row["failed"] == 0
            assert row["oq"] == pytest.approx(statistics.mean(script[t]), abs=1e-12)
            assert row["oq_sd"] == pytest.approx(statistics.pstdev(script[t] * Q), abs=1e-12)      # over all judgings
            assert row["oq_rep_sd"] == pytest.approx(statistics.pstdev(script[t]), abs=1e-12)     # each query's reps alike
            assert (row["rc"], row["rc_sd"]) == (RC[t], 0)
    order = v.ordering().set_index(["judge", "metric"])
    for judge, script in (("judge-a", SCRIPT_A), ("judge-b", SCRIPT_B)):
        r = order.loc[(judge, "OQ")]
        assert r["means_ordered"] and r["ordered_share"] == 1.0 and r["queries"] == Q
        gap = statistics.mean(script["reference"]) - statistics.mean(script["truncated"])
        assert r["reference-truncated"] == pytest.approx(gap, abs=1e-12)
        assert r["reference-truncated_ci"] == pytest.approx((gap, gap), abs=1e-12)   # every query has the same gap
        assert order.loc[(judge, "RC")]["truncated-off_topic"] == RC["truncated"] - RC["off_topic"]
    assert v.ok and v.flags() == []
    # the agreement: pairs (tier, rep) of the two scripts, once per query
    pairs = [(SCRIPT_A[t][r], SCRIPT_B[t][r]) for _ in range(Q) for t in TIERS for r in range(REPS)]
    ag = v.agreement().set_index(["scale", "statistic"])
    x, y = zip(*pairs)
    assert ag.loc[("OQ", "weighted kappa"), "value"] == pytest.approx(cohen_kappa_score(x, y, weights="quadratic", labels=[1, 2, 3, 4, 5]), abs=1e-12)
    assert ag.loc[("OQ", "Spearman"), "value"] == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert ag.loc[("OQ", "weighted kappa"), "pairs"] == Q * 3 * REPS
    assert ag.loc[("RC", "weighted kappa"), "value"] == pytest.approx(1.0) and ag.loc[("aspect scores", "weighted kappa"), "value"] == pytest.approx(1.0)
    lo, hi = ag.loc[("OQ", "weighted kappa"), ["ci_low", "ci_high"]]
    assert lo == pytest.approx(hi, abs=1e-12)   # every query alike: every resample gives the same kappa
    text = v.to_text()
    assert "judge-a, judge-b, 3 queries x 3 tiers x 3 reps" in text and "FLAG" not in text
    assert json.loads(v.to_json())["ok"] is True and "<table" in v._repr_html_()
    # a repeated run is answered from the caches: not one request
    with client(a, "judge-a", tmp_path/"a.sqlite") as ca, client(b, "judge-b", tmp_path/"b.sqlite") as cb:
        again = judge_validity(bio, client=ca, second_client=cb, queries=Q, reps=REPS, n_resamples=200)
    assert (a.count, b.count) == (Q * 3 * REPS, Q * 3 * REPS)
    assert again.tiers().equals(v.tiers())


def test_inverted_judge_is_flagged(server, bio):
    srv = server(scripted(INVERTED))
    with client(srv, "inverted") as c:
        v = judge_validity(bio, client=c, queries=2, reps=1, n_resamples=50)
    assert not v.ok
    assert any("not in order on OQ (reference 1.00, truncated 3.00, off_topic 5.00)" in f for f in v.flags())
    assert v.ordering().set_index("metric").loc["OQ", "ordered_share"] == 0.0


def test_cli_validity_json_and_exit_status(server, tmp_path, capsys):
    good, bad = server(scripted(SCRIPT_A)), server(scripted(INVERTED))
    args = ["judge", "--validity", str(tmp_path/"v"), "--queries", "2", "--reps", "2", "--llm-model", "m", "--json"]
    assert main(args + ["--llm-base-url", good.base_url]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is True and out["queries"] == 2 and out["source"]["commit"].startswith("b31d5f1")
    assert main(["judge", "--validity", str(tmp_path/"w"), "--queries", "2", "--reps", "1", "--llm-model", "m", "--llm-base-url", bad.base_url]) == 1
    assert "FLAG m: the tier means are not in order" in capsys.readouterr().out


@pytest.mark.parametrize("extra, message", [
    (["--qids", "99"], "qids: biology has no query '99'"),
    (["--queries", "0"], "queries must be a positive integer, got 0"),
    (["--reps", "0"], "reps must be a positive integer, got 0"),
])
def test_bad_input_is_one_line(server, tmp_path, capsys, extra, message):
    srv = server(scripted(SCRIPT_A))
    code = main(["judge", "--validity", str(tmp_path/"v"), "--llm-model", "m", "--llm-base-url", srv.base_url] + extra)
    err = capsys.readouterr().err
    assert code != 0 and err.strip().count("\n") == 0 and message in err and srv.count == 0


def test_no_reference_answers_is_one_error(bio):
    dom = bio["biology"]
    copy = type(dom).__new__(type(dom)); copy.__dict__.update(dom.__dict__)
    copy.queries = dom.queries.drop(columns=["reference_answer"])
    with pytest.raises(BrightproError, match="no reference answers"):
        validity_answers({"biology": copy})

"""The judge and the agentic evaluation (brightpro.judge): replies from a real OpenAI-compatible server on 127.0.0.1
(LocalChatServer) through the real client, RC/OQ/AER and the cumulative alpha-nDCG@5R against values worked out by
hand here, agentic nDCG/Recall against pytrec_eval, citations, resume, and that the API key is never written."""
import json, math
from math import exp, log2
from pathlib import Path

import pytest
import pytrec_eval

from brightpro.core import BrightproError, text_digest
from brightpro.llm import LLMClient, LLMError
from brightpro.scripted_llm import error_reply, text_reply
from brightpro.metrics import Judgements
from brightpro.data import load_domains
from brightpro.judge import judge_answer, judge_run, reasoning_completeness, rep_agreement, weighted_coverage
from brightpro.agentic import agentic_eval, aer, cited_ids, citation_stats, cumulative_alpha_ndcg, macro_mean, micro_mean, union_scores
from brightpro.traces import round_union, run_domains, trace_answers

SECRET = "sk-judge-DISTINCTIVE-5d1e9a0c77"


def _domains(run, dataset) -> dict:
    "The loaded domains of a run folder (the command line resolves them once the same way)."
    return load_domains(run_domains(run), dataset)

def _judge_run(run, dataset, client=None, **kwargs): return judge_run(run, _domains(run, dataset), client=client, **kwargs)

def _agentic_eval(run, dataset, **kwargs): return agentic_eval(run, _domains(run, dataset), **kwargs)


# --- a hand-made dataset (JSON mirror layout) and run folder --------------------------------------------------------
DOCS = {"biology": ["q0/g1.txt", "q0/g2.txt", "q0/g3.txt", "q1/h1.txt", "q1/h2.txt"] + [f"other/n{i}.txt" for i in range(1, 10)],
        "economics": ["e0/e1.txt"] + [f"other/m{i}.txt" for i in range(1, 5)]}
QUERIES = {"biology": [("0", "Question zero?", ["q0/g1.txt", "q0/g2.txt", "q0/g3.txt"]), ("1", "Question one?", ["q1/h1.txt", "q1/h2.txt"])],
           "economics": [("0", "Economics zero?", ["e0/e1.txt"])]}
ASPECTS = {"biology": [("biology-0-a1", "Aspect A", 2, ["q0/g1.txt", "q0/g2.txt"]), ("biology-0-a2", "Aspect B", 1, ["q0/g3.txt"]),
                       ("biology-1-a1", "Aspect C", 3, ["q1/h1.txt"]), ("biology-1-a2", "Aspect D", 1, ["q1/h2.txt"])],
           "economics": [("economics-0-a1", "Aspect E", 1, ["e0/e1.txt"])]}
N = [f"other/n{i}.txt" for i in range(1, 10)]


@pytest.fixture
def dataset(tmp_path):
    root = tmp_path/"dataset"
    for c in ("examples", "aspects", "documents"): (root/c).mkdir(parents=True)
    for d in DOCS:
        ex = [{"id": q, "query": text, "gold_ids": gold, "reference_answer": f"Reference for {text}"} for q, text, gold in QUERIES[d]]
        asp = [{"id": a, "content": c, "weight": w, "supporting_docs": s} for a, c, w, s in ASPECTS[d]]
        docs = [{"id": x, "content": f"text of {x}"} for x in DOCS[d]]
        for c, rows in (("examples", ex), ("aspects", asp), ("documents", docs)): (root/c/f"{d}.json").write_text(json.dumps(rows))
    return str(root)


def trace(qid, rounds, answers=None, answer=None, R=None, status="ok", protocol="fixed", policy="llm", tokens=(100, 20), cost=None):
    return {"qid": qid, "domain": "x", "protocol": protocol, "policy": policy,
            "rounds": [{"round": r, "query": f"search {r}", "docids": docs, "searches": [{"query": f"search {r}", "docids": docs, "error": None}]}
                       for r, docs in enumerate(rounds, 1)],
            "answers": [{"round": r, "answer": a, "evidence": []} for r, a in enumerate(answers or [], 1)], "answer": answer,
            "R": len(rounds) if R is None else R, "stopped_early": False, "status": status,
            "tokens": {"prompt": tokens[0], "completion": tokens[1]}, "calls": 1, "latency_s": 0.5, "cost": cost, "parsed_from_text": 0, "errors": []}


# biology q0: three rounds (round 2 repeats g1, round 3 adds nothing); q1: stopped after 2 rounds; economics q0: 1 round.
BIO0 = trace("0", [[N[0], "q0/g1.txt", "q0/g2.txt", N[1], N[2]], ["q0/g1.txt", "q0/g3.txt", N[3], N[4], N[5]], ["q0/g3.txt", "q0/g1.txt", N[0], N[1], N[2]]],
             answers=["One [q0/g1.txt] [made/up_0.txt].", "Two [q0/g1.txt, q0/g3.txt].", "Three [q0/g1.txt; q0/g3.txt] [other/n1.txt] [1]."],
             tokens=(1000, 200), cost=0.01)
BIO1 = trace("1", [N[:5], ["q1/h2.txt", *N[5:9]]], answers=["Nothing [other/n2.txt].", "Some [q1/h2.txt].", "Some [q1/h2.txt]."],
             tokens=(500, 100), cost=0.005)
ECO0 = trace("0", [["e0/e1.txt", "other/m1.txt", "other/m2.txt", "other/m3.txt", "other/m4.txt"]], answers=["E [e0/e1.txt]."] * 3,
             tokens=(300, 60), cost=0.002)


def write_run(folder: Path, traces: dict, meta=None) -> Path:
    for d, ts in traces.items():
        (folder/d).mkdir(parents=True, exist_ok=True)
        (folder/d/"traces.jsonl").write_text("".join(json.dumps({**t, "domain": d}) + "\n" for t in ts))   # a trace sits in its domain's folder
    (folder/"meta.json").write_text(json.dumps(meta or {"protocol": "fixed", "rounds": 3, "policy": "llm", "domains": list(traces)}))
    return folder


def judgement(qid, rnd, oq, rc=3, rep=1, status="ok"):
    return {"qid": qid, "round": rnd, "rep": rep, "status": status, "aspect_scores": {"a1": 1.0} if status == "ok" else None,
            "overall_quality": oq if status == "ok" else None, "justification": "", "rc": rc if status == "ok" else None,
            "weighted_coverage": 0.5, "tries": 1, "error": None}


def client_for(srv, **kwargs):
    return LLMClient(srv.base_url, "judge-model", **{"max_retries": 0, "timeout": 5.0, **kwargs})


def reply(scores, quality=4, justification="fine", **extra):
    return json.dumps({"aspect_scores": scores, "overall_quality": quality, "justification": justification, **extra})


# --- RC, AER, averaging ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("weights, scores, coverage, rc", [
    ([1, 1, 1, 1], {"a1": 1, "a2": 0.5}, 0.375, 2),             # 4 * 0.375 + 1 = 2.5: Python's round gives 2 (half to even)
    ([1, 1, 1, 1], {"a1": 1, "a2": 1, "a3": 0.5}, 0.625, 4),    # 3.5 -> 4
    ([3, 1], {"a1": 0.5, "a2": 1}, 2.5 / 4, 4),                  # raw weights: (3 * 0.5 + 1 * 1) / 4 = 0.625 -> 3.5 -> 4
    ([3, 2, 2, 2], {"a1": 1, "a2": 1}, 5 / 9, 3),                # 4 * 5/9 + 1 = 3.22 -> 3
    ([2, 1], {"a1": 1}, 2 / 3, 4),                               # a2 missing counts 0: 3.67 -> 4
    ([2, 2], {}, 0.0, 1),
    ([1, 2, 3], {"a1": 1, "a2": 1, "a3": 1}, 1.0, 5),
])
def test_reasoning_completeness_by_hand(weights, scores, coverage, rc):
    assert weighted_coverage(scores, weights) == pytest.approx(coverage, abs=1e-15)
    assert reasoning_completeness(weighted_coverage(scores, weights)) == rc


def test_aer_by_hand():
    assert aer(4, 1) == 4.0
    assert aer(4, 2) == pytest.approx(4 * 0.951229424500714, abs=1e-12)   # exp(-0.05)
    assert aer(4, 5) == pytest.approx(4 * 0.818730753077982, abs=1e-12)   # exp(-0.2)
    assert aer(3.5, 2) == pytest.approx(3.329303, abs=1e-6)
    for bad in (0, -1, None):
        with pytest.raises(BrightproError, match="R >= 1"): aer(4, bad)


def test_micro_and_macro_means():
    by_domain = {"biology": [5, 5, 5, 1], "economics": [2]}
    assert micro_mean(by_domain) == 18 / 5 and macro_mean(by_domain) == 3.0
    assert math.isnan(micro_mean({"a": [None, float("nan")]})) and math.isnan(macro_mean({"a": []}))


def test_rep_agreement_by_hand():
    # pairs (4,4) (4,3) (4,3) | (5,5) (5,5) (5,5): 4 of 6 agree; |diff| 0,1,1,0,0,0
    assert rep_agreement([[4, 4, 3], [5, 5, 5]]) == {"pairs": 6, "exact_agreement": 4 / 6, "mean_abs_diff": 2 / 6}
    assert rep_agreement([[4], [3]]) == {"pairs": 0, "exact_agreement": None, "mean_abs_diff": None}


# --- retrieval of the rounds -----------------------------------------------------------------------------------------
def test_cumulative_alpha_ndcg_by_hand():
    """Aspects A (weight 2: g1, g2) and B (weight 1: g3), alpha 0.5. Union after round 1: n1 g1 g2 n2 n3; after round 2
    the new docs g3 n4 n5 n6 follow; round 3 adds nothing. Gains: g1 at rank 2: (2/3)/log2(3); g2 at rank 3, A's second:
    (2/3)(0.5)/log2(4); g3 at rank 6: (1/3)/log2(7). Ideal: A, then A's second or B (equal gains 1/3): 2/3 + (1/3)/log2(3)
    + (1/3)/log2(4)."""
    J = Judgements.build({"0": ["q0/g1.txt", "q0/g2.txt", "q0/g3.txt"]}, {"q0/g1.txt": "A", "q0/g2.txt": "A", "q0/g3.txt": "B"},
                         {"0": {"A": 2, "B": 1}})
    idcg = 2/3 + (1/3) / log2(3) + (1/3) / log2(4)
    dcg1 = (2/3) / log2(3) + (2/3) * 0.5 / log2(4)
    dcg2 = dcg1 + (1/3) / log2(7)
    got = cumulative_alpha_ndcg([BIO0], J).iloc[0]
    assert got["alpha_ndcg@5"] == pytest.approx(dcg1 / idcg, abs=1e-12)      # 0.5627
    assert got["alpha_ndcg@10"] == pytest.approx(dcg2 / idcg, abs=1e-12)     # 0.6765
    assert got["alpha_ndcg@15"] == pytest.approx(dcg2 / idcg, abs=1e-12)
    assert round(got["alpha_ndcg@5"], 4) == 0.5627 and round(got["alpha_ndcg@10"], 4) == 0.6765


def test_ideal_is_computed_at_5R():
    "One gold doc per aspect, three aspects of equal weight, all found in round 1 at ranks 3-5: the ideal grows with k."
    J = Judgements.build({"q": ["a", "b", "c", "d", "e", "f"]}, dict(zip("abcdef", "ABCDEF")), {"q": {x: 1 for x in "ABCDEF"}})
    t = trace("q", [["n1", "n2", "a", "b", "c"], ["n3", "n4", "n5", "n6", "d"]])
    got = cumulative_alpha_ndcg([t], J).iloc[0]
    w = 1 / 6
    ideal5 = sum(w / log2(i + 1) for i in range(1, 6))                       # five of the six aspects fit in k = 5
    ideal10 = ideal5 + w / log2(7)                                            # the sixth at rank 6
    assert got["alpha_ndcg@5"] == pytest.approx(sum(w / log2(i + 1) for i in (3, 4, 5)) / ideal5, abs=1e-12)
    assert got["alpha_ndcg@10"] == pytest.approx((sum(w / log2(i + 1) for i in (3, 4, 5)) + w / log2(11)) / ideal10, abs=1e-12)
    assert got["alpha_ndcg@15"] == pytest.approx(got["alpha_ndcg@10"], abs=1e-12)   # no new docs, same ideal beyond 6


def test_agentic_ndcg_and_recall_match_pytrec_eval():
    gold = {"0": ["q0/g1.txt", "q0/g2.txt", "q0/g3.txt"], "1": ["q1/h1.txt", "q1/h2.txt"]}
    J = Judgements.build(gold)
    traces = [BIO0, BIO1]
    ours = union_scores(traces, J, k=[5, 10, 25])
    run = {t["qid"]: {d: float(100 - i) for i, d in enumerate(round_union(t))} for t in traces}   # decreasing, union order
    qrels = {q: {d: 1 for d in g} for q, g in gold.items()}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5,10,25", "recall.5,10,25"}).evaluate(run)
    for _, row in ours.iterrows():
        for k in (5, 10, 25):
            assert row[f"ndcg@{k}"] == pytest.approx(ref[row["qid"]][f"ndcg_cut_{k}"], abs=1e-12)
            assert row[f"recall@{k}"] == pytest.approx(ref[row["qid"]][f"recall_{k}"], abs=1e-12)


# --- judge replies, through the real client and a real server ---------------------------------------------------------
ASP = [("First aspect", 2), ("Second aspect", 1)]


def judge_with(server, script, aspects=ASP, **kwargs):
    srv = server(script)
    with client_for(srv) as client:
        return judge_answer(client, "Why?", aspects=aspects, reference="The reference.", answer="The answer [q0/g1.txt].", **kwargs), srv


def test_valid_reply_and_what_the_request_carries(server):
    j, srv = judge_with(server, [text_reply(reply({"a1": 1.0, "a2": 0.5}, 4, "covers a1"))])
    assert j == {"status": "ok", "aspect_scores": {"a1": 1.0, "a2": 0.5}, "overall_quality": 4, "justification": "covers a1",
                 "rc": 4, "weighted_coverage": 2.5 / 3, "tries": 1, "error": None}    # round(4 * 0.833 + 1) = round(4.33)
    (req,) = srv.requests
    prompt = req["messages"][0]["content"]
    assert req["messages"][0]["role"] == "user" and len(req["messages"]) == 1
    assert "QUESTION:\nWhy?" in prompt and "a1: First aspect\na2: Second aspect" in prompt
    assert "REFERENCE_ANSWER:\nThe reference." in prompt and "SYSTEM_ANSWER:\nThe answer [q0/g1.txt]." in prompt
    rf = req["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["strict"] is True
    assert rf["json_schema"]["schema"]["properties"]["aspect_scores"]["required"] == ["a1", "a2"]


def test_fenced_reply_is_accepted(server):
    j, _ = judge_with(server, [text_reply("```json\n" + reply({"a1": 0, "a2": 1}, 2) + "\n```")])
    assert (j["status"], j["aspect_scores"], j["overall_quality"], j["rc"]) == ("ok", {"a1": 0.0, "a2": 1.0}, 2, 2)   # 1/3 -> 2.33 -> 2


def test_invalid_then_valid_takes_two_tries(server):
    j, srv = judge_with(server, [text_reply("Overall I would say 4/5."), text_reply(reply({"a1": 1, "a2": 1}, 5))])
    assert (j["status"], j["tries"], j["overall_quality"], j["rc"]) == ("ok", 2, 5, 5)
    second = srv.requests[1]["messages"]
    assert second[1] == {"role": "assistant", "content": "Overall I would say 4/5."}
    assert second[2]["role"] == "user" and "not valid JSON" in second[2]["content"]


def test_always_invalid_fails_without_a_score(server):
    j, srv = judge_with(server, [text_reply("{broken")] * 3)
    assert srv.count == 3
    assert j["status"] == "failed" and j["tries"] == 3 and "not valid JSON" in j["error"]
    assert all(j[k] is None for k in ("aspect_scores", "overall_quality", "justification", "rc", "weighted_coverage"))


def test_missing_aspect_counts_zero(server):
    j, _ = judge_with(server, [text_reply(reply({"a1": 1.0}, 3))])
    assert j["status"] == "ok" and j["aspect_scores"] == {"a1": 1.0}
    assert j["weighted_coverage"] == pytest.approx(2 / 3) and j["rc"] == 4            # (2 * 1 + 1 * 0) / 3 -> 3.67 -> 4


@pytest.mark.parametrize("bad, why", [
    (reply({"a1": 1, "a3": 1}), "unknown aspect key(s) 'a3'"),
    (reply({"A1": 1}), "unknown aspect key(s) 'A1'"),
    (reply({"a1": 0.7}), "is not 0, 0.5 or 1"),
    (reply({"a1": "1.0"}), "is not 0, 0.5 or 1"),
    (reply({"a1": 1}, 6), "overall_quality 6 is not an integer from 1 to 5"),
    (reply({"a1": 1}, 0), "overall_quality 0 is not an integer from 1 to 5"),
    (reply({"a1": 1}, 3.5), "overall_quality 3.5 is not"),
    (reply({"a1": 1}, "4"), 'overall_quality "4" is not'),
    (reply({"a1": 1}, 4, confidence=0.9), "unknown key(s) confidence"),
    (json.dumps({"aspect_scores": {"a1": 1}, "overall_quality": 4}), "missing key(s) justification"),
    ("[1, 2]", "not a JSON object"),
    ("", "empty"),
])
def test_invalid_replies_are_refused_and_retried(server, bad, why):
    j, srv = judge_with(server, [text_reply(bad)] * 2 + [text_reply(reply({"a1": 1, "a2": 0}, 3))])
    assert (j["status"], j["tries"], srv.count) == ("ok", 3, 3)
    assert why in srv.requests[1]["messages"][-1]["content"]       # the judge is told what was wrong
    j, _ = judge_with(server, [text_reply(bad)] * 3)
    assert j["status"] == "failed" and why in j["error"] and j["overall_quality"] is None


def test_quality_4_0_is_the_integer_4(server):
    j, _ = judge_with(server, [text_reply(reply({"a1": 1, "a2": 1}, 4.0))])
    assert j["overall_quality"] == 4 and type(j["overall_quality"]) is int


def test_response_format_refused_then_plain(server):
    refusal = error_reply(400, {"error": {"message": "Unrecognized request argument supplied: response_format", "type": "invalid_request_error"}})
    srv = server([refusal, text_reply(reply({"a1": 1, "a2": 1}, 5)), text_reply(reply({"a1": 0, "a2": 0}, 1))])
    with client_for(srv) as client:
        first = judge_answer(client, "Q", aspects=ASP, reference="R", answer="A")
        second = judge_answer(client, "Q", aspects=ASP, reference="R", answer="A2")
    assert (first["status"], first["overall_quality"], second["overall_quality"]) == ("ok", 5, 1)
    assert ["response_format" in r for r in srv.requests] == [True, False, False]      # remembered for that client


def test_other_400_fails_the_judging_and_an_unusable_endpoint_raises(server):
    j, srv = judge_with(server, [error_reply(400, {"error": {"message": "maximum context length exceeded"}})])
    assert j["status"] == "failed" and "maximum context length" in j["error"] and j["rc"] is None and srv.count == 1
    srv = server([error_reply(500)])
    with client_for(srv) as client, pytest.raises(LLMError, match="HTTP 500"):
        judge_answer(client, "Q", aspects=ASP, reference="R", answer="A")


def test_reps_are_distinct_requests(server):
    srv = server(lambda req: text_reply(reply({"a1": 1, "a2": 1}, 5 - (req.get("seed") or 0))))
    with client_for(srv) as client:
        got = [judge_answer(client, "Q", aspects=ASP, reference="R", answer="A", rep=r)["overall_quality"] for r in (1, 2, 3)]
    assert got == [5, 4, 3] and [r.get("seed") for r in srv.requests] == [None, 1, 2]


# --- citations ------------------------------------------------------------------------------------------------------
def test_cited_ids_rules():
    text = ("A [q0/g1.txt] B [q0/g2.txt, q0/g3.txt; other/n1.txt] C [1] [2, 3] [a1] [see above] [https://x.org/a.txt] "
            "[doc: made/up_0.txt] [`quoted/id_1.txt`] [q0/g1.txt] [plain.txt] [Dijkstra's/algo_(x)_1.txt] [not an id.txt]")
    assert cited_ids(text) == ["q0/g1.txt", "q0/g2.txt", "q0/g3.txt", "other/n1.txt", "made/up_0.txt", "quoted/id_1.txt",
                               "plain.txt", "Dijkstra's/algo_(x)_1.txt"]
    assert cited_ids("[id, with, commas] [7]", known={"id, with, commas", "7"}) == ["id, with, commas", "7"]


def test_citation_stats_on_a_hand_made_answer():
    """Query with aspects A (weight 2/3: g1, g2) and B (1/3: g3). The answer cites g1 (gold, retrieved), g2 (gold, NOT
    retrieved), n1 (retrieved, not gold), made/up (neither) and g1 again. Covered aspects: A (g1, g2) -> 2/3; B not cited."""
    answer = "x [q0/g1.txt] y [q0/g2.txt] z [other/n1.txt] w [made/up_0.txt] again [q0/g1.txt] [1]"
    aspect_of = {"q0/g1.txt": "A", "q0/g2.txt": "A", "q0/g3.txt": "B"}
    s = citation_stats(answer, ["q0/g1.txt", "q0/g2.txt", "q0/g3.txt"], aspect_of, {"A": 2/3, "B": 1/3}, ["q0/g1.txt", "other/n1.txt", "q0/g3.txt"])
    assert s["citations"] == 4
    assert s["cited_coverage"] == pytest.approx(2 / 3)
    assert s["cited_gold_share"] == 2 / 4 and s["cited_retrieved_share"] == 2 / 4 and s["hallucinated"] == 2
    none = citation_stats("no citations [1]", ["q0/g1.txt"], aspect_of, {"A": 2/3, "B": 1/3}, [])
    assert none["citations"] == 0 and none["cited_coverage"] == 0.0 and math.isnan(none["cited_gold_share"]) and none["hallucinated"] == 0


# --- judge_run: lines, resume, failures, the key ----------------------------------------------------------------------
def scripted(req):
    "OQ by question (zero: 5, one: 3, economics: 1), every aspect 1.0."
    prompt = req["messages"][0]["content"]
    n = len([l for l in prompt.split("REASONING_ASPECTS:\n")[1].split("\n\n")[0].splitlines() if l.startswith("a")])
    oq = 5 if "Question zero?" in prompt else 3 if "Question one?" in prompt else 1
    return text_reply(reply({f"a{i}": 1.0 for i in range(1, n + 1)}, oq))


def test_judge_run_writes_lines_and_resume_makes_no_request(server, dataset, tmp_path):
    run = write_run(tmp_path/"run", {"biology": [BIO0, BIO1], "economics": [ECO0]})
    srv = server(scripted)
    with client_for(srv) as client:
        judging = _judge_run(run, dataset, client, concurrency=4)
        assert srv.count == 9                                                  # 3 queries x 3 rounds
        lines = [json.loads(l) for l in (run/"biology"/"judgements.jsonl").read_text().splitlines()]
        assert [(j["qid"], j["round"], j["rep"]) for j in lines] == [("0", 1, 1), ("0", 2, 1), ("0", 3, 1), ("1", 1, 1), ("1", 2, 1), ("1", 3, 1)]
        assert list(lines[0]) == ["qid", "round", "rep", "status", "aspect_scores", "overall_quality", "justification", "rc",
                                  "weighted_coverage", "tries", "error", "answer_digest", "prompt_digest"]
        assert lines[0]["overall_quality"] == 5 and lines[0]["rc"] == 5 and lines[0]["aspect_scores"] == {"a1": 1.0, "a2": 1.0}
        before = (run/"biology"/"judgements.jsonl").read_bytes()
        again = _judge_run(run, dataset, client)
        assert srv.count == 9                                                  # the second run makes zero requests
        assert again.counts["biology"]["resumed"] == 6 and again.counts["biology"]["judged"] == 0
        assert (run/"biology"/"judgements.jsonl").read_bytes() == before
    assert judging.counts["economics"]["judged"] == 3
    summary = json.loads(judging.to_json())["domains"]
    assert summary["biology"]["oq"] == pytest.approx(4.0) and summary["overall"]["answers"] == 9
    assert "judge model: judge-model" in judging.to_text()


def test_resume_after_the_endpoint_fails_and_after_a_half_written_line(server, dataset, tmp_path):
    run = write_run(tmp_path/"run", {"biology": [BIO0, BIO1]})
    srv = server([text_reply(reply({"a1": 1, "a2": 1}, 4))] * 2 + [error_reply(500)])
    with client_for(srv) as client, pytest.raises(LLMError, match="HTTP 500"):
        _judge_run(run, dataset, client, concurrency=1)
    path = run/"biology"/"judgements.jsonl"
    assert len(path.read_text().splitlines()) == 2                             # what was judged before the failure is kept
    with open(path, "a") as f: f.write('{"qid": "1", "round": 1, "rep": 1, "sta')   # a kill in the middle of a line
    srv = server(lambda req: text_reply(reply({"a1": 1, "a2": 1}, 4)))
    with client_for(srv) as client: judging = _judge_run(run, dataset, client, concurrency=2)
    assert srv.count == 4 and judging.counts["biology"]["resumed"] == 2
    lines = [json.loads(l) for l in path.read_text().splitlines()]              # every line readable again
    assert len(lines) == 6 and all(j["status"] == "ok" for j in lines)


def test_failed_judgings_are_reported_and_retried(server, dataset, tmp_path):
    run = write_run(tmp_path/"run", {"economics": [ECO0]})
    srv = server([text_reply("nonsense")] * 3 + [text_reply(reply({"a1": 1}, 2))] * 2)
    with client_for(srv) as client:
        judging = _judge_run(run, dataset, client, concurrency=1, tries=3)
        c = judging.counts["economics"]
        assert (c["judged"], c["failed"]) == (2, 1) and "1 judging(s) failed" in judging.to_text()
        failed = [j for j in judging.judgements["economics"] if j["status"] == "failed"]
        assert len(failed) == 1 and failed[0]["overall_quality"] is None and failed[0]["rc"] is None
        srv2 = server(lambda req: text_reply(reply({"a1": 0.5}, 3)))
    with client_for(srv2) as client:
        again = _judge_run(run, dataset, client)
    assert srv2.count == 1 and again.counts["economics"]["resumed"] == 2
    assert all(j["status"] == "ok" for j in again.judgements["economics"])


def test_prf_failed_and_adaptive_traces(server, dataset, tmp_path):
    prf = trace("0", [["q0/g1.txt"]], policy="prf")
    failed = trace("1", [], status="failed")
    run = write_run(tmp_path/"run", {"biology": [prf, failed]})
    srv = server(scripted)
    with client_for(srv) as client:
        judging = _judge_run(run, dataset, client)
    assert srv.count == 0 and judging.counts["biology"]["no_answer"] == 1 and judging.counts["biology"]["failed_traces"] == 1
    assert "prf" in judging.to_text()
    adaptive = trace("0", [["q0/g1.txt"], ["q0/g3.txt"]], answer="Final [q0/g1.txt].", protocol="adaptive")
    run2 = write_run(tmp_path/"run2", {"biology": [adaptive]}, {"protocol": "adaptive", "policy": "llm", "domains": ["biology"]})
    with client_for(srv) as client:
        _judge_run(run2, dataset, client, reps=2)
    lines = [json.loads(l) for l in (run2/"biology"/"judgements.jsonl").read_text().splitlines()]
    assert [(j["round"], j["rep"]) for j in lines] == [(None, 1), (None, 2)]


def test_reps_summary_and_agreement(server, dataset, tmp_path):
    run = write_run(tmp_path/"run", {"economics": [ECO0]})
    # OQ 5 - seed: rep 1 -> 5, rep 2 -> 4, rep 3 -> 3 for every answer.
    srv = server(lambda req: text_reply(reply({"a1": 1}, 5 - (req.get("seed") or 0))))
    with client_for(srv) as client:
        judging = _judge_run(run, dataset, client, reps=3)
    assert srv.count == 9
    pa = judging.per_answer()
    assert list(pa["reps"]) == [3, 3, 3] and list(pa["oq"]) == [4.0, 4.0, 4.0]
    assert pa["oq_std"][0] == pytest.approx((2 / 3) ** 0.5) and (pa["oq_min"][0], pa["oq_max"][0]) == (3.0, 5.0)
    s = judging.summary()["economics"]
    # per answer the pairs (5,4) (5,3) (4,3): none agree, |diff| 1, 2, 1; RC is 5 in every rep
    assert (s["oq_pairs"], s["oq_exact_agreement"], s["oq_mean_abs_diff"]) == (9, 0.0, 4 / 3)
    assert (s["rc_exact_agreement"], s["rc_mean_abs_diff"]) == (1.0, 0.0)
    assert "agreement between reps, economics: OQ exact 0.00, mean |diff| 1.33" in judging.to_text()
    ev = _agentic_eval(run, dataset)
    assert ev.per_query["oq"][0] == 4.0 and ev.per_query["aer"][0] == 4.0      # the mean over reps; R = 1


def test_the_api_key_is_never_on_disk(server, dataset, tmp_path):
    run = write_run(tmp_path/"run", {"biology": [BIO0], "economics": [ECO0]})
    srv = server(scripted, api_key=SECRET)
    with LLMClient(srv.base_url, "judge-model", api_key=SECRET, max_retries=0, cache=tmp_path/"cache.sqlite") as client:
        judging = _judge_run(run, dataset, client, reps=2)
    # every request carried the key (identical answers may be served from the cache, so fewer than 12 reach the server)
    assert srv.auth_count == srv.count and 0 < srv.count <= 12
    ev = _agentic_eval(run, dataset)
    for f in tmp_path.rglob("*"):
        if f.is_file(): assert SECRET.encode() not in f.read_bytes(), f
    for text in (judging.to_text(), judging.to_json(), ev.to_text(), ev.to_json(), repr(judging)): assert SECRET not in text


def test_bad_settings_are_refused(dataset, tmp_path):
    run = write_run(tmp_path/"run", {"economics": [ECO0]})
    with pytest.raises(BrightproError, match="reps must be a positive integer"): _judge_run(run, dataset, client=object(), reps=0)
    with pytest.raises(BrightproError, match="no such run folder"): _judge_run(tmp_path/"absent", dataset, client=object())
    (tmp_path/"p").mkdir(); (tmp_path/"p"/"judge.md").write_text("no fields here")
    with pytest.raises(BrightproError, match="lacks the placeholder"): _judge_run(run, dataset, client=object(), prompt_dir=tmp_path/"p")


# --- agentic_eval ---------------------------------------------------------------------------------------------------
def write_judgements(run: Path, domain: str, lines: list[dict]):
    "Judgement lines as the judge writes them: each with the digest of the answer it judged (the run's trace holds it)."
    answers = {(t["qid"], rnd): text for t in map(json.loads, (run/domain/"traces.jsonl").read_text().splitlines()) for rnd, text in trace_answers(t)}
    lines = [{**j, "answer_digest": text_digest(answers[j["qid"], j["round"]])} if (j["qid"], j["round"]) in answers else j for j in lines]
    (run/domain/"judgements.jsonl").write_text("".join(json.dumps(j) + "\n" for j in lines))


@pytest.fixture
def judged_run(dataset, tmp_path):
    failed = trace("2", [], status="failed")
    run = write_run(tmp_path/"run", {"biology": [BIO0, BIO1, failed], "economics": [ECO0]})
    write_judgements(run, "biology", [judgement("0", 1, 2, rc=2), judgement("0", 2, 4, rc=3), judgement("0", 3, 5, rc=4),
                                      judgement("1", 1, 1, rc=1), judgement("1", 2, 2, rc=2), judgement("1", 3, 3, rc=5)])
    write_judgements(run, "economics", [judgement("0", 1, 1, rc=1), judgement("0", 2, 1, rc=1), judgement("0", 3, 1, rc=2)])
    return run


def test_agentic_eval_micro_aer_and_macro_retrieval(judged_run, dataset):
    ev = _agentic_eval(judged_run, dataset)
    pq = ev.per_query.set_index(["domain", "qid"])
    # the last round's OQ and each trace's R: 5 with R = 3, 3 with R = 2, 1 with R = 1
    assert pq.loc[("biology", "0"), "aer"] == pytest.approx(5 * exp(-0.10), abs=1e-12)
    assert pq.loc[("biology", "1"), "aer"] == pytest.approx(3 * exp(-0.05), abs=1e-12)
    assert pq.loc[("economics", "0"), "aer"] == 1.0
    micro = (5 * exp(-0.10) + 3 * exp(-0.05) + 1) / 3                              # 2.7926
    macro = ((5 * exp(-0.10) + 3 * exp(-0.05)) / 2 + 1) / 2                       # 2.3445
    assert ev.overall["aer"] == pytest.approx(micro, abs=1e-12) and abs(ev.overall["aer"] - macro) > 0.4
    assert ev.domain_means["biology"]["aer"] == pytest.approx((5 * exp(-0.10) + 3 * exp(-0.05)) / 2, abs=1e-12)
    assert ev.overall["oq"] == pytest.approx((5 + 3 + 1) / 3) and ev.overall["rc"] == pytest.approx((4 + 5 + 2) / 3)
    # alpha-nDCG@5: biology q0 0.5627 (worked out above), q1 0 (nothing in round 1); economics 1 (e1 at rank 1)
    a5 = ((2/3) / log2(3) + (2/3) * 0.5 / log2(4)) / (2/3 + (1/3) / log2(3) + (1/3) / log2(4))
    assert pq.loc[("biology", "1"), "alpha_ndcg@5"] == 0.0 and pq.loc[("economics", "0"), "alpha_ndcg@5"] == 1.0
    assert ev.overall["alpha_ndcg@5"] == pytest.approx(((a5 + 0) / 2 + 1) / 2, abs=1e-12)   # mean of the domain means
    # q1 after round 2: h2 (aspect D, weight 1/4) at rank 6; ideal C (3/4) then D
    a10 = (0.25 / log2(7)) / (0.75 + 0.25 / log2(3))
    assert pq.loc[("biology", "1"), "alpha_ndcg@10"] == pytest.approx(a10, abs=1e-12)
    assert pq.loc[("biology", "1"), "alpha_ndcg@15"] == pytest.approx(a10, abs=1e-12)        # stopped early: what it has
    # per round (micro over the 3 queries)
    assert ev.overall["oq_r1"] == pytest.approx((2 + 1 + 1) / 3) and ev.overall["rc_r3"] == pytest.approx((4 + 5 + 2) / 3)
    assert ev.domain_means["biology"]["oq_r2"] == 3.0


def test_agentic_eval_counts_failed_tokens_cost_and_citations(judged_run, dataset):
    ev = _agentic_eval(judged_run, dataset)
    assert ev.counts["biology"]["failed"] == 1 and ev.counts["biology"]["queries"] == 2 and len(ev.per_query) == 3
    assert ev.counts["biology"]["R_distribution"] == {2: 1, 3: 1} and ev.counts["economics"]["R_distribution"] == {1: 1}
    assert any("1 failed trace(s) counted and left out" in n for n in ev.notes)
    pq = ev.per_query.set_index(["domain", "qid"])
    assert pq.loc[("biology", "0"), "tokens"] == 1200 and ev.overall["tokens"] == pytest.approx((1200 + 600 + 360) / 3)
    assert ev.overall["cost"] == pytest.approx((0.01 + 0.005 + 0.002) / 3)
    # final answer of q0 (round 3): cites g1, g3 (gold, aspects A and B) and n1 (retrieved, not gold); [1] is no citation
    row = pq.loc[("biology", "0")]
    assert (row["citations"], row["cited_coverage"], row["cited_gold_share"], row["hallucinated"]) == (3, pytest.approx(1.0), 2 / 3, 0)
    first = ev.per_answer.query("domain == 'biology' and qid == '0' and round == 1").iloc[0]
    assert (first["citations"], first["hallucinated"], first["cited_retrieved_share"]) == (2, 1, 0.5)   # made/up_0.txt never retrieved
    text = ev.to_text()
    for part in ("alpha_ndcg@5", "alpha_ndcg@10", "alpha_ndcg@15", "ndcg@25", "recall@25", "R distribution: biology R=2: 1, R=3: 1",
                 "mean of the domain means", "micro-average", "AER", "RC r1"):
        assert part in text
    obj = json.loads(ev.to_json())
    assert set(obj["domains"]) == {"biology", "economics"} and obj["overall"]["aer"] == pytest.approx(ev.overall["aer"])
    assert obj["domains"]["biology"]["counts"]["failed"] == 1


def test_agentic_eval_union_metrics_match_pytrec_eval(judged_run, dataset):
    ev = _agentic_eval(judged_run, dataset, k=[10, 25])
    traces = {"biology": [BIO0, BIO1], "economics": [ECO0]}
    gold = {d: {q: {x: 1 for x in g} for q, _, g in QUERIES[d]} for d in QUERIES}
    for d, ts in traces.items():
        run = {t["qid"]: {x: float(100 - i) for i, x in enumerate(round_union(t))} for t in ts}
        ref = pytrec_eval.RelevanceEvaluator(gold[d], {"ndcg_cut.10,25", "recall.10,25"}).evaluate(run)
        for _, row in ev.per_query[ev.per_query["domain"] == d].iterrows():
            for k in (10, 25):
                assert row[f"ndcg@{k}"] == pytest.approx(ref[row["qid"]][f"ndcg_cut_{k}"], abs=1e-12)
                assert row[f"recall@{k}"] == pytest.approx(ref[row["qid"]][f"recall_{k}"], abs=1e-12)


def test_citations_use_the_query_own_aspects(dataset, tmp_path):
    "The cited coverage maps citations with the per-query map: another query's gold document covers nothing here."
    t = trace("1", [["q0/g1.txt", "q1/h1.txt"]], answers=["[q0/g1.txt] [q1/h1.txt]"])
    ev = _agentic_eval(write_run(tmp_path/"run", {"biology": [t]}), dataset)
    row = ev.per_query.iloc[0]
    assert row["cited_coverage"] == pytest.approx(0.75) and row["cited_gold_share"] == 0.5 and row["hallucinated"] == 0


def test_r_below_one_is_flagged_and_prf_has_no_answers(dataset, tmp_path):
    no_search = trace("0", [], answer="Straight from memory.", protocol="adaptive", R=0)
    run = write_run(tmp_path/"run", {"biology": [no_search]}, {"protocol": "adaptive", "domains": ["biology"]})
    write_judgements(run, "biology", [judgement("0", None, 4)])
    ev = _agentic_eval(run, dataset)
    assert ev.per_query["oq"][0] == 4.0 and math.isnan(ev.per_query["aer"][0])
    assert any("R < 1" in n and "AER is undefined" in n for n in ev.notes)
    prf = trace("0", [["q0/g1.txt", "q0/g3.txt"], ["q0/g2.txt"]], policy="prf")
    ev = _agentic_eval(write_run(tmp_path/"prf", {"biology": [prf]}, {"protocol": "fixed", "policy": "prf", "domains": ["biology"]}), dataset)
    assert ev.overall["alpha_ndcg@5"] > 0 and math.isnan(ev.overall["oq"]) and ev.counts["biology"]["answers"] == 0
    assert any("no answers in the traces (prf policy)" in n for n in ev.notes) and "final answers" not in ev.to_text()


def test_unjudged_run_says_so(dataset, tmp_path):
    ev = _agentic_eval(write_run(tmp_path/"run", {"economics": [ECO0]}), dataset)
    assert math.isnan(ev.overall["rc"]) and any("not judged" in n for n in ev.notes)
    assert ev.per_query["cited_coverage"][0] == 1.0

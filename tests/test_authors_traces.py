"""The authors' released agent traces (yale-nlp/Bright-Pro, agentic_eval_outputs/README.md at commit
5df9e9baf5a0525a2b962d73f213c9dee63c5f3e): the line reader, cumulative alpha-nDCG@5R against an independent
re-implementation of their agentic_retrieval/scripts_evaluation/alpha_ndcg.py (same commit; MIT licence), the same
table as brightpro's own traces, and the rounds' diagnostics and power table on hand-computed cases."""
import json, math, random, re
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from brightpro.core import DOMAINS, BrightproError, package_path
from brightpro.data import load_domains
from brightpro.traces import read_authors_file, authors_trace, run_meta
from brightpro.agentic import (agentic_eval, agentic_eval_authors, round_diagnostics, resolvable_difference, power_table)
from conftest import run_cli

SAMPLE = package_path("sample", "bright_pro")


# --- the authors' alpha_ndcg.py, re-implemented from its code (not from brightpro), reading the sample's parquet files ---

def authors_tables(task):
    "qid -> gold ids (examples' gold_ids); doc -> aspect (aspects' supporting_docs, the last listed wins, as build_doc_to_aspect_id);"
    "aspect -> weight normalised per query stem (the id less '-aN', as build_aspect_weights)."
    ex = pd.read_parquet(SAMPLE/"examples"/f"{task}.parquet")
    asp = pd.read_parquet(SAMPLE/"aspects"/f"{task}.parquet")
    gold = {str(q): [str(d) for d in g] for q, g in zip(ex["id"], ex["gold_ids"])}
    doc_aspect = {}
    for a, docs in zip(asp["id"], asp["supporting_docs"]):
        for d in docs: doc_aspect[str(d)] = str(a)
    stem = lambda a: re.sub(r"-(?:a\d+|aspect-\d+)$", "", a)
    total = {}
    for a, w in zip(asp["id"], asp["weight"]): total[stem(str(a))] = total.get(stem(str(a)), 0.0) + float(w)
    weights = {str(a): float(w) / total[stem(str(a))] if total[stem(str(a))] > 0 else 0.0 for a, w in zip(asp["id"], asp["weight"])}
    return gold, doc_aspect, weights


def their_dcg(ranked, gold, doc_aspect, weights, alpha, k):
    gold, seen, dcg = set(gold), {}, 0.0
    for i, d in enumerate(ranked[:k], start=1):
        if d not in gold or doc_aspect.get(d) is None: continue
        a = doc_aspect[d]
        dcg += weights[a] * (1 - alpha) ** seen.get(a, 0) / math.log2(i + 1)
        seen[a] = seen.get(a, 0) + 1
    return dcg


def their_idcg(gold, doc_aspect, weights, alpha, k):
    remaining = {}
    for d in gold:
        if doc_aspect.get(d) is not None: remaining[doc_aspect[d]] = remaining.get(doc_aspect[d], 0) + 1
    seen, idcg = {a: 0 for a in remaining}, 0.0
    for i in range(1, k + 1):
        best, gain = None, 0.0
        for a, rem in remaining.items():
            if rem <= 0: continue
            g = weights[a] * (1 - alpha) ** seen[a] / math.log2(i + 1)
            if g > gain: best, gain = a, g
        if best is None: break
        idcg += gain; remaining[best] -= 1; seen[best] += 1
    return idcg


def their_scores(line, tables, alpha=0.5):
    "evaluate_run: rounds from tool_result items with an int round and a docids list (the latest of a round wins)."
    gold, doc_aspect, weights = tables
    qid = str(line["query_id"])
    if qid not in gold or not gold[qid]: return [None] * 3
    rounds = {}
    for it in line["result"]:
        if it.get("type") == "tool_result" and isinstance(it.get("round"), int) and isinstance(it.get("docids"), list):
            rounds[it["round"]] = [str(d) for d in it["docids"]]
    out = []
    for R, k in ((1, 5), (2, 10), (3, 15)):
        lists = [rounds.get(r, []) for r in range(1, R + 1)]
        if not any(lists): out.append(None); continue
        ranked = list(dict.fromkeys(d for l in lists for d in l))
        idcg = their_idcg(gold[qid], doc_aspect, weights, alpha, k)
        out.append(their_dcg(ranked, gold[qid], doc_aspect, weights, alpha, k) / idcg if idcg > 0 else None)
    return out


# --- synthetic files in the authors' layout over the sample's queries ---

def synthetic_line(task, qid, rounds, rng, extra_results=True):
    "A line as agentic_eval_outputs/README.md documents it; some rounds hold a second, earlier tool_result that the latest replaces."
    result = [{"type": "output_reasoning", "output": ["thinking"]}]
    for r, docs in enumerate(rounds, 1):
        if extra_results and rng.random() < 0.3:   # an earlier search of the same round: the latest one wins
            result.append({"type": "tool_call", "tool_name": "search", "arguments": json.dumps({"query": f"first try {r}"}), "call_id": f"x{r}", "round": r})
            result.append({"type": "tool_result", "tool_name": "search", "output": "[]", "call_id": f"x{r}", "round": r, "docids": list(reversed(docs))[:2]})
        result.append({"type": "tool_call", "tool_name": "search", "arguments": json.dumps({"query": f"{task} {qid} search {r}"}), "call_id": f"c{r}", "round": r})
        hits = json.dumps([{"docid": d, "snippet": "...", "score": 1.0} for d in docs])
        result.append({"type": "tool_result", "tool_name": "search", "output": hits, "call_id": f"c{r}", "round": r, "docids": docs})
        result.append({"type": f"final_answer_round_{r}", "output": f"Answer after round {r} [{docs[0] if docs else 'none'}]"})
    return {"task": task, "metadata": {"model": "gpt-5-mini", "reasoning": {"effort": "medium"}, "output_dir": f"bm25/{task}", "max_tokens": 30000},
            "query_id": qid, "usage": {"input_tokens": 1000 + len(result), "output_tokens": 200, "total_tokens": 1200 + len(result)},
            "retrieved_round_count": sum(bool(d) for d in rounds), "retrieved_documents_id": list(dict.fromkeys(d for r in rounds for d in r)),
            "status": "completed", "result": result}


def synthetic_file(path, seed):
    "Every query of the sample's seven domains, three rounds of five ids drawn from its gold ids and other documents (repeats included)."
    rng, lines = random.Random(seed), []
    for task in DOMAINS:
        gold, _, _ = authors_tables(task)
        docs = [str(d) for d in pd.read_parquet(SAMPLE/"documents"/f"{task}.parquet")["id"]]
        for qid in sorted(gold, key=lambda q: (len(q), q)):
            pool = gold[qid] + rng.sample(docs, 10)
            rounds = [rng.sample(pool, 5) for _ in range(3)]
            if rng.random() < 0.1: rounds[0] = []          # a first round that returned nothing
            lines.append(synthetic_line(task, qid, rounds, rng))
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))
    return lines


@pytest.fixture(scope="module")
def sample_domains():
    return load_domains("all", "sample")


def test_alpha_ndcg_equals_authors_script(tmp_path, sample_domains):
    folder = tmp_path/"fix_round"; folder.mkdir()
    files = {f"r{s}": synthetic_file(folder/f"r{s}.jsonl", s) for s in range(3)}
    ev = agentic_eval_authors(folder, "sample", domains=sample_domains)
    tables = {t: authors_tables(t) for t in DOMAINS}
    compared, none_zero, worst = 0, 0, 0.0
    for name, lines in files.items():
        pq = ev.runs[name].per_query.set_index(["domain", "qid"])
        for line in lines:
            theirs = their_scores(line, tables[line["task"]])
            ours = pq.loc[(line["task"], str(line["query_id"])), ["alpha_ndcg@5", "alpha_ndcg@10", "alpha_ndcg@15"]].to_numpy(float)
            for t, o, R in zip(theirs, ours, (1, 2, 3)):
                if t is None:   # their script leaves a query without results by round R out; brightpro scores it 0
                    assert o == 0.0 or np.isnan(o); none_zero += 1
                    continue
                worst = max(worst, abs(t - o)); compared += 1
    assert compared > 300 and none_zero > 0
    assert worst < 1e-12, worst
    print(f"compared {compared} (query, round) pairs, max |difference| {worst:.2e}; {none_zero} left out by their script scored 0")


def test_reader_every_documented_field(tmp_path):
    rng = random.Random(0)
    line = synthetic_line("biology", "3", [["a.txt", "b.txt"], ["b.txt", "c.txt"], ["d.txt"]], rng, extra_results=False)
    (tmp_path/"bm25.jsonl").write_text(json.dumps(line) + "\n")
    t = read_authors_file(tmp_path/"bm25.jsonl")["biology"][0]
    assert (t["qid"], t["domain"], t["status"], t["protocol"], t["R"]) == ("3", "biology", "ok", "fixed", 3)
    assert [r["docids"] for r in t["rounds"]] == [["a.txt", "b.txt"], ["b.txt", "c.txt"], ["d.txt"]]
    assert [r["query"] for r in t["rounds"]] == ["biology 3 search 1", "biology 3 search 2", "biology 3 search 3"]
    assert [a["round"] for a in t["answers"]] == [1, 2, 3] and t["answer"] == "Answer after round 3 [d.txt]"
    assert t["tokens"] == {"prompt": line["usage"]["input_tokens"], "completion": 200}
    assert t["source"] == {"format": "authors", "status": "completed", "model": "gpt-5-mini", "retrieved_documents": 4}


def test_reader_missing_round_and_docids(tmp_path):
    "No `round` nor `docids` on the results: rounds from the tool_calls (by call_id), doc ids from the output; nothing at all: one search a round."
    res = [{"type": "tool_call", "tool_name": "search", "arguments": '{"query": "q one"}', "call_id": "a", "round": 1},
           {"type": "tool_call", "tool_name": "search", "arguments": '{"query": "q two"}', "call_id": "b", "round": 2},
           {"type": "tool_result", "tool_name": "search", "call_id": "b", "output": json.dumps([{"docid": "y.txt"}])},
           {"type": "tool_result", "tool_name": "search", "call_id": "a", "output": json.dumps([{"docid": "x.txt"}])},
           {"type": "output_text", "output": "final"}]
    t = authors_trace({"task": "biology", "query_id": 1, "status": "incomplete", "result": res})
    assert [(r["round"], r["query"], r["docids"]) for r in t["rounds"]] == [(1, "q one", ["x.txt"]), (2, "q two", ["y.txt"])]
    assert (t["protocol"], t["answer"], t["answers"], t["R"], t["status"]) == ("adaptive", "final", None, 2, "ok")
    bare = [{"type": "tool_result", "output": '[{"docid": "x.txt"}]'}, {"type": "tool_result", "output": 'cut [{"docid": "z.txt", "sn'}]
    t = authors_trace({"task": "biology", "query_id": "2", "status": "failed", "result": bare})
    assert [(r["round"], r["docids"]) for r in t["rounds"]] == [(1, ["x.txt"]), (2, ["z.txt"])] and t["status"] == "failed"


@pytest.mark.parametrize("text,expected", [
    ('{"task": "biology", "query_id": "1", "result": []}\n{broken\n', "f.jsonl: line 2: not JSON"),
    ('\n{"task": "biology", "result": []}\n', "f.jsonl: line 2: field 'query_id' is missing"),
    ('{"task": "biology", "query_id": "1", "result": [3]}\n', "f.jsonl: line 1: field 'result' item 1: not a JSON object"),
    ('{"task": "biology", "query_id": "1", "result": [], "usage": 5}\n', "f.jsonl: line 1: field 'usage' must be object or null"),
    ('[1, 2]\n', "f.jsonl: line 1: not a JSON object"),
])
def test_reader_malformed_lines(tmp_path, text, expected):
    (tmp_path/"f.jsonl").write_text(text)
    with pytest.raises(BrightproError) as e: read_authors_file(tmp_path/"f.jsonl")
    assert expected in str(e.value) and "\n" not in str(e.value)


def test_cli_malformed_line_one_line(tmp_path):
    (tmp_path/"f.jsonl").write_text('{"task": "biology", "query_id": "0", "result": []}\nnot json\n')
    r = run_cli("agentic-eval", tmp_path/"f.jsonl", "--format", "authors", "--dataset", "sample")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "f.jsonl: line 2: not JSON" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_same_table_as_own_traces(tmp_path, sample_domains):
    "The same rankings as an authors' file and as a brightpro run folder: the same per-query retrieval, R and tokens, the same table."
    lines = synthetic_file(tmp_path/"bm25.jsonl", 7)
    own = tmp_path/"own"
    for task in DOMAINS:
        mine = [l for l in lines if l["task"] == task]
        traces = []
        for l in mine:
            rounds = {}
            for it in l["result"]:
                if it["type"] == "tool_result": rounds[it["round"]] = it["docids"]   # the latest of a round, as written
            traces.append({"qid": l["query_id"], "domain": task, "status": "ok", "protocol": "fixed", "policy": "llm", "R": l["retrieved_round_count"],
                           "rounds": [{"round": r, "docids": d, "query": f"{task} {l['query_id']} search {r}"} for r, d in sorted(rounds.items())],
                           "answers": [{"round": r, "answer": f"Answer after round {r} [{d[0] if d else 'none'}]"} for r, d in sorted(rounds.items())],
                           "tokens": {"prompt": l["usage"]["input_tokens"], "completion": 200}})
        (own/task).mkdir(parents=True)
        (own/task/"traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    theirs = agentic_eval_authors(tmp_path/"bm25.jsonl", "sample", domains=sample_domains).runs["bm25"]
    ours = agentic_eval(own, sample_domains, diagnostics=True)
    cols = ["domain", "qid", "R", "alpha_ndcg@5", "alpha_ndcg@10", "alpha_ndcg@15", "ndcg@25", "recall@25", "tokens", "citations", "cited_coverage"]
    pd.testing.assert_frame_equal(theirs.per_query[cols], ours.per_query[cols])
    strip = lambda text: text.split("\n", 1)[1].split("\n\nper round (diagnostics")[0]   # the first line names the run and retriever
    assert strip(theirs.to_text()) == strip(ours.to_text())
    same = ["round", "queries", "docs", "new_share", "coverage", "coverage_gain"]   # the searches differ: the authors' files hold more
    pd.testing.assert_frame_equal(theirs.diagnostics[same], ours.diagnostics[same])


def test_diagnostics_hand_computed():
    # aspects A (weight .5: d1, d2), B (.3: d3), C (.2: d4); question "how do cats purr"
    trace = {"qid": "q", "rounds": [
        {"round": 1, "docids": ["d1", "n1", "n2", "n3"], "searches": [{"query": "how cats purr"}]},             # drift 1 - 3/4
        {"round": 2, "docids": ["d1", "d2", "d3", "n4"], "searches": [{"query": "cat larynx"}, {"query": "How cats PURR"}]},
        {"round": 3, "docids": [], "searches": [{"query": "how do cats purr"}]}]}
    rows = round_diagnostics(trace, "how do cats purr", {"d1": "A", "d2": "A", "d3": "B", "d4": "C"}, {"A": 0.5, "B": 0.3, "C": 0.2})
    assert [r["new_share"] for r in rows[:2]] == [1.0, 0.75]   # round 2: d2, d3, n4 new of four and math.isnan(rows[2]["new_share"])
    assert [round(r["coverage"], 12) for r in rows] == [0.5, 0.8, 0.8]
    assert [round(r["coverage_gain"], 12) for r in rows] == [0.5, 0.3, 0.0]
    assert [r["repeated"] for r in rows] == [0, 1, 0] and [r["searches"] for r in rows] == [1, 2, 1]
    # round 2: "cat larynx" shares nothing with the question (drift 1), "how cats purr" 3 of 4 words (drift 1/4)
    assert [round(r["drift"], 12) for r in rows] == [0.25, 0.625, 0.0]


def test_power_table_hand_cases():
    assert resolvable_difference(np.full(175, 0.03)) == 0.0
    # a continuous spread (normal quantiles, from the standard library): the half-width of a 95% interval of a mean
    # of n differences is about 1.96 sd / sqrt(n)
    d = np.array([NormalDist().inv_cdf((i + 0.5) / 200) for i in range(200)])
    for n in (25, 100, 175):
        assert abs(resolvable_difference(d, n, resamples=20000) / (1.96 * d.std() / math.sqrt(n)) - 1) < 0.05
    t = power_table({"x": d, "y": d + 1.0})
    assert list(t["resolved"]) == [False, True] and list(t["queries"]) == [200, 200]


def test_cli_authors_folder_out(tmp_path):
    "agentic-eval --format authors on a folder, with --out: the run folders `judge` reads, and JSON with the power table."
    folder = tmp_path/"fix"; folder.mkdir()
    for s in (0, 1): synthetic_file(folder/f"r{s}.jsonl", s)
    r = run_cli("agentic-eval", folder, "--format", "authors", "--dataset", "sample", "--domain", "biology", "--out", tmp_path/"runs", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [s["retriever"] for s in out["summary"]] == ["r0", "r1"] and out["power"][0]["comparison"] == "alpha_ndcg@15: r1 - r0"
    assert run_meta(tmp_path/"runs"/"r1")["retriever"]["name"] == "r1" and (tmp_path/"runs"/"r1"/"biology"/"traces.jsonl").is_file()

"""The course's self-checks (not part of the library). Each `check_*` takes your answer and says `right: ...`, or
raises `NotYet` ("not yet: <why>") on a wrong one, so a wrong answer fails the cell, the notebook run and the tests.
`None` means "not answered yet": the check says so without failing, so the unit runs top to bottom
before you have written anything. Every expected value is computed here from the bundled sample, never typed in."""
import json, math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd


class NotYet(AssertionError):
    "A wrong answer: the message says why."


def _verdict(answer, ok: bool, why: str, right: str = ""):
    "Print `right`, or raise `NotYet` with why; `None` (not answered yet) only prints a reminder."
    if answer is None:
        print("not answered yet: replace None with your answer and run the cell again")
        return
    if not ok: raise NotYet(f"not yet: {why}")
    print(f"right{': ' + right if right else ''}")


def _close(a, b, tol=1e-4) -> bool:
    try: return math.isclose(float(a), float(b), abs_tol=tol)
    except (TypeError, ValueError): return False


@lru_cache(None)
def domain(name: str = "biology"):
    from brightpro.data import load_domain
    return load_domain(name, dataset="sample")


@lru_cache(None)
def bm25_run(name: str = "biology", kind: str = "bm25-bright"):
    from brightpro.retrievers import get_retriever
    d = domain(name)
    r = get_retriever(kind, analyzer_thread=False)
    r.index(d.documents.column("id"), d.documents.column("content"))
    return r.search(d.query_text, k=1000)


def per_query(kind: str, names=("biology",)) -> pd.DataFrame:
    from brightpro.evaluate import evaluate_runs
    frames = []
    for n in names:
        ev, = evaluate_runs([bm25_run(n, kind)], {n: domain(n)}, k=[10, 25])
        frames.append(ev.per_query)
    return pd.concat(frames, ignore_index=True)


# Unit 1: the data and one metric by hand
def check_critical_aspects(answer, qid="0"):
    "How many aspects of biology query `qid` have weight 3 (critical)?"
    a = domain().aspects
    want = int(((a["qid"] == qid) & (a["weight"] == 3)).sum())
    return _verdict(answer, answer == want, f"count the rows of biology.aspects with qid == {qid!r} and weight == 3 "
                    f"(you said {answer!r})", f"{want} critical aspects")


def check_recall_at_10(answer, qid="0"):
    "Recall@10 of the harness BM25 run for biology query `qid`: gold documents in the top 10 over all gold documents."
    want = per_query("bm25-bright").set_index("qid").loc[qid, "recall@10"]
    why = f"{answer!r} is not {want:.4f}"
    if _close(answer, 10 / len(domain().gold[qid])): why = "divide by the number of gold documents, not by 10 ... and count only gold ones"
    elif not isinstance(answer, (int, float, np.floating)): why = "give a number between 0 and 1"
    return _verdict(answer, _close(answer, want), why, f"recall@10 = {want:.4f}")


def check_ndcg_at_10(answer, qid="0"):
    "nDCG@10 with binary gains for biology query `qid`, as brightpro computes it."
    want = per_query("bm25-bright").set_index("qid").loc[qid, "ndcg@10"]
    return _verdict(answer, _close(answer, want), f"{answer!r} is not {want:.4f}: DCG sums 1/log2(rank + 1) over the gold "
                    "documents in the top 10; the ideal DCG puts min(10, number of gold) of them first", f"ndcg@10 = {want:.4f}")


# Unit 2: evaluating and comparing runs
DOMAINS2 = ("biology", "economics", "psychology")


def _paired(metric="alpha_ndcg@25"):
    a = per_query("bm25-bright", DOMAINS2).set_index(["domain", "qid"])[metric]
    b = per_query("bm25", DOMAINS2).set_index(["domain", "qid"])[metric]
    return a, b.loc[a.index]


def check_better_run(answer, metric="alpha_ndcg@25"):
    "Which run, 'bm25-bright' or 'bm25', has the higher mean `metric` over the unit's three domains?"
    a, b = _paired(metric)
    want = "bm25-bright" if a.mean() > b.mean() else "bm25"
    return _verdict(answer, answer == want, f"compare the means: bm25-bright {a.mean():.4f}, bm25 {b.mean():.4f}"
                    if answer in ("bm25", "bm25-bright") else "answer 'bm25-bright' or 'bm25'", f"{want}")


def check_wins(answer, metric="alpha_ndcg@25"):
    "On how many queries does bm25 score strictly higher than bm25-bright on `metric`?"
    a, b = _paired(metric)
    want = int((b > a).sum())
    return _verdict(answer, answer == want, f"{answer!r} is not it; count queries where bm25 > bm25-bright (ties do not count)",
                    f"{want} of {len(a)} queries")


def check_p_value(answer, metric="alpha_ndcg@25"):
    "The paired randomization test's p-value (10,000 resamples, seed 42) for bm25 against bm25-bright on `metric`."
    from brightpro.significance import paired_randomization_test
    a, b = _paired(metric)
    want = paired_randomization_test(a.to_numpy(), b.to_numpy(), n_resamples=10_000, seed=42)
    return _verdict(answer, _close(answer, want, 1e-9), f"{answer!r} is not the test's p-value; pass the two per-query "
                    "arrays in the same query order", f"p = {want:.4f}")


# Unit 3: BM25 as the harness runs it
SENTENCE = "The onions were crying for the cooks' attention"


def check_tokens(answer, text=SENTENCE):
    "The harness analyzer's terms for `text`, in order."
    from brightpro.lucene import LuceneEnglishAnalyzer
    want = LuceneEnglishAnalyzer().analyze(text)
    why = "the analyzer lower-cases, drops Lucene's English stop words, removes a possessive 's and Porter-stems"
    if isinstance(answer, list) and len(answer) != len(want): why = f"you have {len(answer)} terms; there are {len(want)}. " + why
    return _verdict(answer, answer == want, why, f"{want}")


def check_top_document(answer, qid="0"):
    "The document the harness BM25 ranks first for biology query `qid`."
    want = bm25_run()[qid][0]
    gold = answer in domain().gold[qid]
    return _verdict(answer, answer == want, f"{answer!r} is not ranked first" + (" (it is a gold document, though)" if gold else ""),
                    f"{want}")


# Unit 4: dense retrieval
def check_dense_vs_bm25(answer, per_query_dense: pd.DataFrame):
    "How many biology queries get a strictly higher ndcg@10 from the dense run than from the harness BM25?"
    if answer is None: return _verdict(None, False, "")
    d = per_query_dense.set_index("qid")["ndcg@10"]
    b = per_query("bm25-bright").set_index("qid")["ndcg@10"].loc[d.index]
    want = int((d > b).sum())
    return _verdict(answer, answer == want, f"{answer!r} is not it; compare the two ndcg@10 columns query by query",
                    f"{want} of {len(d)} queries")


# Unit 5: agentic retrieval and the judge (files the learner's run wrote)
def check_requests(answer, agent_dir):
    "How many chat requests did the agent send for all its queries (the sum of the traces' `calls`)?"
    if answer is None: return _verdict(None, False, "")
    traces = [json.loads(line) for p in Path(agent_dir).glob("*/traces.jsonl") for line in p.read_text().splitlines()]
    want = sum(t["calls"] for t in traces)
    return _verdict(answer, answer == want, f"{answer!r} is not it: add up the `calls` of every trace", f"{want} requests")


def check_mean_rc(answer, judgements):
    "The mean reasoning-completeness (rc) over every judged answer."
    if answer is None: return _verdict(None, False, "")
    rows = [j for js in judgements.values() for j in js]
    want = float(np.mean([j["rc"] for j in rows]))
    return _verdict(answer, _close(answer, want), f"{answer!r} is not the mean of the {len(rows)} judgements' rc", f"{want:.4f}")


# Unit 6: writing and reading a report
def check_report_leader(answer, report_dir, metric="alpha_ndcg@25"):
    "Which run leads biology's metrics table on `metric` in the report at `report_dir`?"
    if answer is None: return _verdict(None, False, "")
    table = pd.read_csv(Path(report_dir)/"biology"/"tables"/"metrics.csv")
    means = table.set_index("run")[metric].map(lambda s: float(str(s).split()[0]))
    want = means.idxmax()
    return _verdict(answer, answer == want, f"{answer!r} does not lead: read the first number of each row's {metric} cell",
                    f"{want} ({means.max():.4f})")


def check_significant(answer, report_dir, metric="alpha_ndcg@25"):
    "Is the second run's `metric` significantly different from the baseline's in the report (True/False)?"
    if answer is None: return _verdict(None, False, "")
    table = pd.read_csv(Path(report_dir)/"biology"/"tables"/"metrics.csv").set_index("run")
    want = str(table[metric].iloc[1]).rstrip().endswith("*")
    return _verdict(answer, answer is want, "a mark (*) after the interval means the Holm-corrected paired test is below 0.05",
                    "significant" if want else "not significant")

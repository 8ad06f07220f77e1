"""The authors' Bright-Pro harness restated in plain Python, one query and one k at a time with dict lookups.

It is the independent reference the weighted metrics are tested against (tests/test_metrics.py) and the plain
research-script baseline the metrics benchmark times (benchmarks/bench_metrics.py). Its inputs are the harness's own
structures: ONE `{docid: aspect}` map for the domain, one normalised weight per aspect id, gold ids as the examples
list them (duplicates kept), and the run as the `score.json` dict (`{qid: {docid: score}}`, or a ranked list per query).

It follows the harness (yale-nlp/Bright-Pro, `retrieval/evaluation/alpha-ndcg-evaluation.py`,
`weighted_aspect_recall.py`, `retrieval/run.py`, `retrieval/metrics.py`) step by step:

- `harness_ranked`: `parse_score_entry`, Python's stable `sorted(d.items(), key=lambda x: x[1], reverse=True)`, so
  equal scores keep the file's key order; a ranked list is used as it is.
- `harness_cut`: `run.py`'s `dict(sorted(d.items(), key=lambda kv: -kv[1])[:topk])`, the top-1000 and top-200 cuts.
- `harness_alpha_ndcg`: the DCG over the ranked list; the ideal built greedily from the gold LIST, so a gold id listed
  twice is placed twice.
- `harness_aspect_recall`: the weight of the query's aspects covered in the top k.
- `harness_trec_metrics`: nDCG and Recall as `metrics.py` gets them, from pytrec_eval over the score dict and qrels
  `{gid: 1 for gid in gold_ids}` (a duplicate gold id once; equal scores by docid, descending).
- `harness_evaluate`: all four per query, skipping what each script skips.

The benchmark imports it as a sibling module; the tests find it through `pythonpath = ["benchmarks"]` in pyproject.toml."""
import math


def harness_ranked(entry) -> list:
    "`parse_score_entry`: a `{docid: score}` mapping by score, stable (ties keep the file's order); a list as given."
    if isinstance(entry, dict): return [d for d, _ in sorted(entry.items(), key=lambda x: x[1], reverse=True)]
    if isinstance(entry, list): return entry
    raise ValueError(f"Unsupported score entry type: {type(entry)}")


def harness_cut(scores: dict, topk: int) -> dict:
    "`run.py`'s truncation of every query's `{docid: score}` to its top `topk`, in the same stable order."
    return {str(q): dict(sorted(d.items(), key=lambda kv: -kv[1])[:topk]) for q, d in scores.items()}


def harness_alpha_ndcg(ranked, gold, doc_to_aspect, aspect_weight, alpha, k):
    gold_set = set(gold)
    seen, dcg = {}, 0.0
    for i, d in enumerate(ranked[:k], start=1):
        if d not in gold_set: continue
        a = doc_to_aspect.get(d)
        if a is None: continue
        n = seen.get(a, 0)
        dcg += aspect_weight[a] * (1 - alpha) ** n / math.log2(i + 1)
        seen[a] = n + 1
    remaining, placed = {}, {}
    for d in gold:                                  # the gold LIST: a duplicate id counts twice, as in the harness
        a = doc_to_aspect.get(d)
        if a is not None: remaining[a] = remaining.get(a, 0) + 1; placed[a] = 0
    idcg = 0.0
    for i in range(1, k + 1):
        best, best_gain = None, 0.0
        for a, r in remaining.items():
            if r <= 0: continue
            g = aspect_weight[a] * (1 - alpha) ** placed[a] / math.log2(i + 1)
            if g > best_gain: best, best_gain = a, g
        if best is None: break
        idcg += best_gain; remaining[best] -= 1; placed[best] += 1
    return dcg / idcg if idcg > 0 else None


def harness_aspect_recall(ranked, gold, doc_to_aspect, aspect_weight, k):
    A = {doc_to_aspect[d] for d in gold if doc_to_aspect.get(d) is not None}
    if not A: return 0.0
    covered = {doc_to_aspect.get(d) for d in ranked[:k]} & A
    return sum(aspect_weight[a] for a in covered)


def harness_trec_metrics(scores: dict, gold: dict, ks) -> dict:
    "`metrics.py`: pytrec_eval `ndcg_cut` and `recall` over the score dict; {qid: {'ndcg@k': v, 'recall@k': v}}."
    import pytrec_eval
    qrels = {str(q): {str(d): 1 for d in g} for q, g in gold.items()}
    results = {str(q): {str(d): float(s) for d, s in r.items()} for q, r in scores.items()}
    ks_s = ",".join(map(str, ks))
    out = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{ks_s}", f"recall.{ks_s}"}).evaluate(results)
    return {q: {f"{m}@{k}": v[f"{n}_{k}"] for k in ks for m, n in (("ndcg", "ndcg_cut"), ("recall", "recall"))}
            for q, v in out.items()}


def harness_evaluate(scores: dict, gold: dict, doc_to_aspect, aspect_weight, ks, alpha=0.5) -> dict:
    """{qid: {metric@k: value}} as the harness's three scripts give them for one `score.json` (`scores`). A query absent
    from `scores` is skipped by all; a query without gold ids by the aspect scripts, and by pytrec_eval (no qrels);
    alpha-nDCG leaves out a query whose ideal is 0 (value None here)."""
    out = {}
    for q, g in gold.items():
        if q not in scores or not g: continue
        ranked = harness_ranked(scores[q])
        row = out.setdefault(q, {})
        for k in ks:
            row[f"alpha_ndcg@{k}"] = harness_alpha_ndcg(ranked, g, doc_to_aspect, aspect_weight, alpha, k)
            row[f"aspect_recall@{k}"] = harness_aspect_recall(ranked, g, doc_to_aspect, aspect_weight, k)
    as_dicts = {q: r if isinstance(r, dict) else {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in scores.items()}
    for q, v in harness_trec_metrics(as_dicts, {q: g for q, g in gold.items() if g}, ks).items(): out.setdefault(q, {}).update(v)
    return out

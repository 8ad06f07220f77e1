"""The authors' Bright-Pro harness restated in plain Python, one query and one k at a time with dict lookups.

It is the independent reference the weighted metrics are tested against (tests/test_metrics.py) and the plain
research-script baseline the metrics benchmark times (benchmarks/bench_metrics.py). Its inputs are the harness's own
structures: ONE `{docid: aspect}` map for the domain and one normalised weight per aspect id.

The benchmark imports it as a sibling module; the tests find it through `pythonpath = ["benchmarks"]` in pyproject.toml."""
import math

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
    for d in gold:
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

"""bm25-bright against the harness's gensim path and rank_bm25 on the same tokens, and plain bm25 (bm25s) against bm25-bright.

Full-size synthetic earth_science (123,575 documents, 115 queries; the real BRIGHT earth-science query texts when
../shared/data is present). Run: .venv/bin/python benchmarks/bench_bm25.py [--domain earth_science] [--scale 1.0]
"""
from __future__ import annotations
import argparse, math, sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, synth_dataset, table, timer


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--domain", default="earth_science")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--data", default=None, help="a dataset folder in hub layout (default: generate a synthetic one)")
    ap.add_argument("--rank-bm25-queries", type=int, default=3, help="queries timed with rank_bm25 (it is slow); per-query times are compared")
    ap.add_argument("--top", type=int, default=100, help="depth of the ranking comparison with gensim")
    args = ap.parse_args(argv)
    from brightpro.bm25 import BM25Bright, BM25S
    from brightpro.lucene import LuceneEnglishAnalyzer
    from brightpro.retriever import top_k

    root = synth_dataset([args.domain], scale=args.scale) if args.data is None else args.data
    docs = pq.read_table(f"{root}/documents/{args.domain}.parquet")
    ex = pq.read_table(f"{root}/examples/{args.domain}.parquet").to_pydict()
    queries = dict(zip(map(str, ex["id"]), ex["query"]))
    ids, texts = docs.column("id"), docs.column("content")
    n = docs.num_rows
    print(f"{args.domain}: {n} documents, {len(queries)} queries", flush=True)

    # --- ours, end to end (tokenize + index, then search) -----------------------------------------------------
    ours = BM25Bright()
    with timer() as t_tok: d_idx, t_idx = ours.analyzer.analyze_ids(texts)
    ours.doc_ids = np.asarray(ids.to_numpy(zero_copy_only=False), dtype=object)
    with timer() as t_build: ours.index_terms(d_idx, t_idx, n)
    with timer() as t_search: run = ours.search(queries, 1000)
    print(f"bm25-bright: tokenize {t_tok.s:.1f} s, index {t_build.s:.2f} s, search {t_search.s:.2f} s", flush=True)

    # --- the same tokens for the references -----------------------------------------------------------------
    vocab = np.array(list(ours.analyzer.vocab), dtype=object)
    order = np.argsort(d_idx, kind="stable")
    bounds = np.searchsorted(d_idx[order], np.arange(n + 1))
    words = vocab[t_idx[order]]
    corpus = [words[bounds[i]:bounds[i + 1]].tolist() for i in range(n)]
    an = LuceneEnglishAnalyzer()
    q_tokens = {q: an.analyze(t) for q, t in queries.items()}
    del words, order

    # --- gensim: the harness's code path ----------------------------------------------------------------------
    from gensim.corpora import Dictionary
    from gensim.models import LuceneBM25Model
    from gensim.similarities import SparseMatrixSimilarity
    with timer() as g_idx:
        dictionary = Dictionary(corpus)
        model = LuceneBM25Model(dictionary=dictionary, k1=0.9, b=0.4)
        index = SparseMatrixSimilarity(model[list(map(dictionary.doc2bow, corpus))], num_docs=n, num_terms=len(dictionary),
                                       normalize_queries=False, normalize_documents=False)
    g_scores = {}
    with timer() as g_search:
        for q, toks in q_tokens.items():
            s = np.asarray(index[model[dictionary.doc2bow(toks)]])
            g_scores[q] = (s, top_k(s, 1000))
    print(f"gensim: index {g_idx.s:.1f} s, search {g_search.s:.2f} s", flush=True)

    # identical top-k up to float32 ties
    same, tie_only, worst, pos = 0, 0, 0.0, None
    run_scores = run.to_scores()
    for q in run:
        s, top = g_scores[q]
        ref = ours.doc_ids[top[:args.top]].tolist()
        got = run[q][:args.top]
        mine = np.array(list(run_scores[q].values())[:args.top])
        worst = max(worst, float(np.max(np.abs(mine - s[top[:args.top]]) / np.maximum(np.abs(s[top[:args.top]]), 1e-30))))
        if got == ref: same += 1
        else:
            pos = pos or {d: i for i, d in enumerate(ours.doc_ids.tolist())}
            diffs = [(a, b) for a, b in zip(got, ref) if a != b]
            if all(math.isclose(s[pos[a]], s[pos[b]], rel_tol=1e-5) for a, b in diffs): tie_only += 1
    print(f"top-{args.top}: {same} identical, {tie_only} differ only by float32 ties, of {len(run)}; max rel score diff {worst:.2e}", flush=True)
    del index, model, dictionary

    # --- rank_bm25 (BM25Okapi) ---------------------------------------------------------------------------------
    from rank_bm25 import BM25Okapi
    with timer() as r_idx: rb = BM25Okapi(corpus)
    sample = list(q_tokens.items())[:args.rank_bm25_queries]
    with timer() as r_search:
        for q, toks in sample: np.argsort(-rb.get_scores(toks))[:1000]
    r_per_query = r_search.s / max(1, len(sample))
    del rb
    print(f"rank_bm25: index {r_idx.s:.1f} s, {r_per_query:.2f} s per query", flush=True)

    # --- plain bm25 (bm25s) ------------------------------------------------------------------------------------
    plain = BM25S()
    with timer() as b_idx: plain.index(ids, texts)
    with timer() as b_search: plain.search(queries, 1000)
    print(f"bm25 (bm25s): index {b_idx.s:.1f} s, search {b_search.s:.2f} s", flush=True)

    # --- analyzer throughput on real text (the synthetic corpus is plain words) ------------------------------------
    real = None
    topics = sorted((Path(__file__).resolve().parents[2]/"shared"/"data"/"bright-topics").glob("*original.jsonl.gz"))
    if topics:
        import gzip, json
        rows_ = [json.loads(l) for f in topics for l in gzip.open(f, "rt", encoding="utf-8")]
        real_texts = [str(r.get(k) or "") for r in rows_ for k in ("query", "gold_answer", "reasoning")]
        mb = sum(map(len, real_texts)) / 1e6
        fresh = LuceneEnglishAnalyzer(); fresh.analyze_ids(real_texts[:10])
        fresh = LuceneEnglishAnalyzer()
        with timer() as cold: fresh.analyze_ids(real_texts)
        with timer() as warm: fresh.analyze_ids(real_texts)
        real = {"texts": len(real_texts), "mb": mb, "cold_mb_s": mb / cold.s, "warm_mb_s": mb / warm.s}
        print(f"analyzer on real BRIGHT texts ({len(real_texts)} texts, {mb:.1f} MB): {mb / cold.s:.1f} MB/s with new words, "
              f"{mb / warm.s:.1f} MB/s once seen (synthetic corpus: {sum(len(t) for t in texts.to_pylist()) / 1e6 / t_tok.s:.1f} MB/s)", flush=True)

    nq = len(queries)
    ours_total = t_tok.s + t_build.s
    rows = [
        ["index, same tokens", "bm25-bright", t_build.s, "gensim (harness)", g_idx.s, g_idx.s / t_build.s],
        ["search, all queries", "bm25-bright", t_search.s, "gensim (harness)", g_search.s, g_search.s / t_search.s],
        ["index+search", "bm25-bright", t_build.s + t_search.s, "gensim (harness)", g_idx.s + g_search.s, (g_idx.s + g_search.s) / (t_build.s + t_search.s)],
        ["index, same tokens", "bm25-bright", t_build.s, "rank_bm25", r_idx.s, r_idx.s / t_build.s],
        ["search, per query", "bm25-bright", t_search.s / nq, "rank_bm25", r_per_query, r_per_query / (t_search.s / nq)],
        ["index+search (all q)", "bm25-bright", t_build.s + t_search.s, "rank_bm25 (extrapolated)", r_idx.s + r_per_query * nq,
         (r_idx.s + r_per_query * nq) / (t_build.s + t_search.s)],
        ["tokenize+index", "bm25 (bm25s)", b_idx.s, "bm25-bright", ours_total, ours_total / b_idx.s],
        ["search, all queries", "bm25 (bm25s)", b_search.s, "bm25-bright", t_search.s, t_search.s / b_search.s],
    ]
    print()
    table(rows, ["step", "ours", "s", "reference", "ref s", "ratio (ref/ours)"])
    print(f"\nbm25-bright tokenization (Lucene English analysis): {t_tok.s:.1f} s for {n} documents; "
          f"top-{args.top} identical to gensim for {same}/{nq} queries, tie-only differences {tie_only}")
    path = save("bench_bm25", {"domain": args.domain, "documents": n, "queries": nq, "rows": rows,
                               "tokenize_s": t_tok.s, "real_text_analyzer": real, "identical_top": same, "tie_only": tie_only, "max_rel_diff": worst})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

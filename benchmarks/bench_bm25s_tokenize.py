"""bm25s's tokenizer vs brightpro's fast path, side by side: `bm25s.tokenize(texts, lower=True, stopwords="en",
stemmer=Stemmer.Stemmer("english"))` (what `bm25` called before) and `brightpro.bm25s_tokens.bm25s_tokenize` (what `bm25`
indexes with), on full-size synthetic domains (earth_science: prose; stackoverflow: numbers and code-like text).
MB/s of UTF-8 text, best of --reps, the ratio, and whether ids and vocabulary (with its order) are identical.

Run: .venv/bin/python benchmarks/bench_bm25s_tokenize.py [--domains earth_science,stackoverflow] [--scale 1.0] [--reps 2]
"""
from __future__ import annotations
import argparse, gc, sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, synth_dataset, table, timer


def best(fn, reps: int):
    "The shortest of `reps` timed calls of `fn`, and its last result."
    out, times = None, []
    for _ in range(reps):
        out = None; gc.collect()   # the previous result freed before timing the next call
        with timer() as t: out = fn()
        times.append(t.s)
    return min(times), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--domains", default="earth_science,stackoverflow")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args(argv)
    import bm25s, Stemmer
    from brightpro.bm25s_tokens import bm25s_tokenize

    domains = args.domains.split(",")
    root = synth_dataset(domains, scale=args.scale)
    rows, results = [], []
    for dom in domains:
        col = pq.read_table(f"{root}/documents/{dom}.parquet", columns=["content"]).column("content")
        mb = pc.sum(pc.binary_length(col)).as_py() / 1e6
        texts = col.to_pylist()
        t_ref, ref = best(lambda: bm25s.tokenize(texts, lower=True, stopwords="en", stemmer=Stemmer.Stemmer("english"),
                                                 show_progress=False), args.reps)
        same = lambda got: got.ids == ref.ids and list(got.vocab.items()) == list(ref.vocab.items())
        t_arrow, got = best(lambda: bm25s_tokenize(col), args.reps)
        identical = same(got); got = None
        t_list, got = best(lambda: bm25s_tokenize(texts), args.reps)
        identical = identical and same(got); got = None
        tokens, vocab = sum(map(len, ref.ids)), len(ref.vocab)
        ref = None
        print(f"{dom}: {len(texts)} documents, {mb:.1f} MB, {tokens} tokens, vocabulary {vocab}: bm25s {t_ref:.2f} s, "
              f"fast path {t_arrow:.2f} s (Arrow column) / {t_list:.2f} s (list), identical {identical}", flush=True)
        rows += [[dom, "bm25s.tokenize (list)", t_ref, mb / t_ref, 1.0, identical],
                 [dom, "bm25s_tokenize (Arrow column)", t_arrow, mb / t_arrow, t_ref / t_arrow, identical],
                 [dom, "bm25s_tokenize (list)", t_list, mb / t_list, t_ref / t_list, identical]]
        results.append({"domain": dom, "documents": len(texts), "mb": mb, "tokens": tokens, "vocabulary": vocab,
                        "bm25s_s": t_ref, "fast_arrow_s": t_arrow, "fast_list_s": t_list, "identical": identical})
        texts = col = None
    print()
    table(rows, ["domain", "tokenizer", "s (best)", "MB/s", "ratio (bm25s / this)", "identical ids + vocab"])
    path = save("bench_bm25s_tokenize", {"scale": args.scale, "reps": args.reps, "rows": rows, "domains": results})
    print(f"wrote {path}")
    if not all(r["identical"] for r in results): sys.exit("the fast path differs from bm25s.tokenize")


if __name__ == "__main__":
    main()

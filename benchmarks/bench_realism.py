"""Is the synthetic corpus like real text? The real BRIGHT queries against the real answer texts, beside the same
queries against the synthetic corpus, through brightpro's own analyzer and BM25 postings.

The real document corpus cannot be had here, so the real side is the BRIGHT gold answers (`../shared/data/bright-topics`),
cut into passages of the domain's mean document length (protocol.ipynb §1: 520 characters, stackoverflow 1,775), since a
document's length sets how many of a query's terms it holds. Both sides are searched with all the domain's real
queries. Figures:

  (a) posting entries a query touches: the sum of the document frequencies of its distinct terms, per 100,000
      documents (so collections of any size compare), on the whole synthetic collection;
  (b) query-term match rate: the share of a query's distinct terms found in the collection's vocabulary;
  (c) analyzer MB/s: a fresh `LuceneEnglishAnalyzer` over the documents, new words included (checked on all
      domains pooled, best of 3 a side: on a domain's ~0.2 MB a single timing is noise);
  (d) Heaps: distinct terms after as many tokens as the real side has, and the exponent beta of distinct ~ tokens^beta.

(b), (c) and (d) depend on how much text is read, so for them the synthetic side is cut to the real side's size (its
documents are shuffled, so the first ones are a sample). The synthetic figures at full collection size are printed
too. Goal: every checked figure within 2x of the real one; the exit status is 1 otherwise.

The real side is small (about 100 answers a domain) and answers its own queries, so it is more on-topic than a corpus
of 50,000-120,000 passages would be: read (a) and (b) as "the same order", not as the corpus's exact figures.

Run: .venv/bin/python benchmarks/bench_realism.py [--scale 0.1] [--domains all] [--style realistic] [--data DIR]
"""
from __future__ import annotations
import argparse, gzip, json, sys, tempfile, time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save
from brightpro.core import parse_domains
from brightpro.lucene import LuceneEnglishAnalyzer
from brightpro.bm25 import BM25Bright
from brightpro.synth import MEAN_DOC_CHARS, synth_dataset

TOPICS = Path(__file__).resolve().parents[2]/"shared"/"data"/"bright-topics"
COMPARED = ("entries/100k", "match rate", "MB/s", "distinct terms", "beta")


def passages(text: str, size: int) -> list[str]:
    "`text` cut at spaces into passages of about `size` characters."
    out, cur, n = [], [], 0
    for w in text.split(" "):
        cur.append(w); n += len(w) + 1
        if n >= size: out.append(" ".join(cur)); cur, n = [], 0
    if cur: out.append(" ".join(cur))
    return out


def real_side(domain: str, topics_dir=TOPICS) -> tuple[list[str], list[str]]:
    "The domain's real BRIGHT queries, and its gold answers as passages of the corpus's mean document length."
    with gzip.open(Path(topics_dir)/f"topics.bright-{domain.replace('_', '-')}-original.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r["query"] for r in rows], [p for r in rows for p in passages(r["gold_answer"], MEAN_DOC_CHARS[domain])]


def synth_docs(folder, domain: str) -> list[str]:
    "The document texts of a dataset in hub layout."
    return pq.read_table(Path(folder)/"documents"/f"{domain}.parquet", columns=["content"]).column("content").to_pylist()


def analyse(docs: list[str], repeat: int = 1) -> tuple[BM25Bright, np.ndarray, float]:
    "A BM25Bright index of `docs`, the term id of every token in order, and a fresh analyzer's MB/s (best of `repeat`)."
    mb, best = sum(len(d.encode("utf-8")) for d in docs) / 1e6, float("inf")
    for _ in range(repeat):
        bm = BM25Bright()
        t = time.perf_counter()
        doc_idx, terms = bm.analyzer.analyze_ids(docs)
        best = min(best, time.perf_counter() - t)
    bm.index_terms(doc_idx, terms, len(docs))
    bm.n_docs = len(docs)
    return bm, terms, mb / best


def query_figures(bm: BM25Bright, queries: list[str]) -> tuple[float, float]:
    "(a) mean posting entries touched per 100,000 documents and (b) mean query-term match rate."
    df, vocab = np.diff(bm.indptr), bm.analyzer.vocab
    qa = LuceneEnglishAnalyzer()   # the collection's vocabulary must not grow with the queries
    entries, match = [], []
    for q in queries:
        terms = set(qa.analyze(q))
        ids = [vocab[t] for t in terms if t in vocab]
        entries.append(df[ids].sum() / bm.n_docs * 1e5); match.append(len(ids) / max(1, len(terms)))
    return float(np.mean(entries)), float(np.mean(match))


def heaps(terms: np.ndarray, at: int | None = None) -> tuple[int, float]:
    "Distinct terms after `at` tokens (default all), and beta fitted on the distinct counts at 1/16 .. 1 of them."
    terms = terms[:at] if at else terms
    new = np.zeros(len(terms), np.int64)
    new[np.unique(terms, return_index=True)[1]] = 1
    seen = np.cumsum(new)
    points = np.unique((len(terms) * 2.0 ** -np.arange(5)).astype(np.int64))
    beta = np.polyfit(np.log(points), np.log(seen[points - 1]), 1)[0] if len(terms) > 32 else float("nan")
    return int(seen[-1]) if len(seen) else 0, float(beta)


def cut_to(docs: list[str], chars: int) -> list[str]:
    "The first documents of `docs` that hold about `chars` characters."
    return docs[:int(np.searchsorted(np.cumsum([len(d) for d in docs]), chars)) + 1]


def compare(queries: list[str], real: list[str], synth: list[str]) -> dict:
    "{figure: (real, synthetic)} for the real `queries` against the `real` documents and against the `synth` ones."
    real_bm, real_terms, real_mbs = analyse(real)
    small = cut_to(synth, sum(map(len, real)))
    small_bm, small_terms, small_mbs = analyse(small)
    full_bm, full_terms, full_mbs = analyse(synth) if len(small) < len(synth) else (small_bm, small_terms, small_mbs)
    (ra, rb), (sa, _), (_, sb) = query_figures(real_bm, queries), query_figures(full_bm, queries), query_figures(small_bm, queries)
    (rv, rbeta), (sv, sbeta) = heaps(real_terms), heaps(small_terms, len(real_terms))
    fv, fbeta = heaps(full_terms)
    return {"entries/100k": (ra, sa), "match rate": (rb, sb), "MB/s": (real_mbs, small_mbs), "distinct terms": (rv, sv),
            "beta": (rbeta, sbeta), "tokens": len(real_terms),
            "full": {"documents": len(synth), "tokens": len(full_terms), "distinct terms": fv, "beta": fbeta,
                     "match rate": query_figures(full_bm, queries)[1], "MB/s": full_mbs}}


def pooled(real: list[str], synth: list[str], repeat: int = 3) -> dict:
    "Analyzer MB/s (best of `repeat` fresh analyzers a side, the sides taken in turn) and Heaps, all domains together."
    synth = cut_to(synth, sum(map(len, real)))
    runs = [(analyse(real), analyse(synth)) for _ in range(repeat)]   # in turn, so a busy machine slows both alike
    (_, rt, _), (_, st, _) = runs[0]
    (rv, rbeta), (sv, sbeta) = heaps(rt), heaps(st, len(rt))
    return {"MB/s": (max(r[0][2] for r in runs), max(r[1][2] for r in runs)), "distinct terms": (rv, sv), "beta": (rbeta, sbeta),
            "tokens": len(rt)}


def realism(folder, domains, topics_dir=TOPICS) -> dict:
    "Per domain and pooled: both sides' figures, the real queries against the real answers and the synthetic corpus."
    rows, all_real, all_synth = {}, [], []
    analyse(["Warm the analyzer up: its first call pays one-off costs."])
    for d in domains:
        queries, real = real_side(d, topics_dir)
        synth = synth_docs(folder, d)
        rows[d] = compare(queries, real, synth)
        all_real += real; all_synth += cut_to(synth, sum(map(len, real)))
    rows["all (pooled)"] = pooled(all_real, all_synth)
    return rows


# per domain the analyzer's speed on ~0.2 MB is noise; it is compared on all domains pooled
CHECKED = {"domain": ("entries/100k", "match rate", "distinct terms", "beta"), "pooled": ("MB/s", "distinct terms", "beta")}


def ratio(real, synth) -> float: return synth / real if real else float("nan")


def not_within_2x(rows: dict) -> dict:
    "{row: [figures]} of the checked figures whose synthetic value is not within 2x of the real one."
    out = {}
    for name, figs in rows.items():
        bad = [k for k in CHECKED["pooled" if name.startswith("all") else "domain"] if not 0.5 <= ratio(*figs[k]) <= 2.0]
        if bad: out[name] = bad
    return out


def print_table(rows: dict):
    "One line per domain and figure: real, synthetic, ratio (* marks a figure that is checked)."
    print(f"{'':20s} {'figure':16s} {'real':>10s} {'synthetic':>10s} {'ratio':>6s}")
    for name, figs in rows.items():
        checked = CHECKED["pooled" if name.startswith("all") else "domain"]
        for k in COMPARED:
            if k in figs:
                r, s = figs[k]
                print(f"{name:20s} {k:16s} {r:10.4g} {s:10.4g} {ratio(r, s):6.2f}{' *' if k in checked else ''}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domains", default="all")
    ap.add_argument("--scale", type=float, default=0.1, help="synthetic corpus size as a fraction of the real sizes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--style", default="realistic", help="realistic or legacy")
    ap.add_argument("--data", default=None, help="a synthetic dataset in hub layout (default: generate one in a temp folder)")
    ap.add_argument("--topics", default=str(TOPICS))
    args = ap.parse_args(argv)
    if not Path(args.topics).is_dir(): sys.exit(f"real BRIGHT topics not found at {args.topics}")
    domains = parse_domains(args.domains)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.data or tmp
        if args.data is None:
            t = time.perf_counter()
            synth_dataset(domains, folder, args.scale, args.seed, args.topics, style=args.style)
            print(f"generated {', '.join(domains)} at scale {args.scale} ({args.style}) in {time.perf_counter() - t:.1f} s", flush=True)
        t = time.perf_counter()
        rows = realism(folder, domains, args.topics)
        print(f"measured in {time.perf_counter() - t:.1f} s\n", flush=True)
    print_table(rows)
    print("\nsynthetic at full collection size:")
    for d in domains:
        f = rows[d]["full"]
        print(f"  {d:20s} {f['documents']:7d} docs {f['tokens']:9d} tokens {f['distinct terms']:8d} distinct terms "
              f"beta {f['beta']:.2f} match rate {f['match rate']:.3f} analyzer {f['MB/s']:.1f} MB/s")
    bad = not_within_2x(rows)
    save(f"bench_realism-{args.style}", {"scale": args.scale, "seed": args.seed, "domains": domains, "rows": rows, "not_within_2x": bad})
    print("\nevery checked figure (*) is within 2x of the real one" if not bad else f"\nnot within 2x: {bad}")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())

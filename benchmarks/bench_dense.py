"""Dense encoding: `Dense.index` (chunked, checksummed cache) against a bare `SentenceTransformer.encode` on the same texts,
and a second run served from the cache. Goals: throughput ratio >= 0.95; cached run >= 50x faster than the first.

Texts: the first --docs (default 300; CPU encoding runs at ~10 docs/s here) documents of the synthetic earth_science (real document lengths). Model: the packaged
all-MiniLM-L6-v2 unless --model. Run: .venv/bin/python benchmarks/bench_dense.py [--docs 2000] [--device cpu]
"""
from __future__ import annotations
import argparse, os, sys, tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, synth_dataset, table, timer


def main(argv=None):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--model", default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--data", default=None)
    args = ap.parse_args(argv)
    from brightpro.dense import Dense, default_dense_model, load_sentence_transformer

    root = synth_dataset(["earth_science"]) if args.data is None else args.data
    table_ = pq.read_table(f"{root}/documents/earth_science.parquet").slice(0, args.docs)
    ids, texts = table_.column("id"), table_.column("content")
    texts_list = texts.to_pylist()
    model_name = args.model or default_dense_model()
    model = load_sentence_transformer(model_name, args.device)
    model.encode(texts_list[:64], batch_size=args.batch_size)  # warm-up

    def bare_encode():
        with timer() as t:
            out = model.encode(texts_list, batch_size=args.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return t, out
    bares, ours_runs = [], []
    with tempfile.TemporaryDirectory(prefix="bench-dense-") as tmp:
        for rep in range(args.repeats):  # interleaved, the fastest of each kept: the machine is shared
            t, ref = bare_encode(); bares.append(t)
            first = Dense(args.model, cache_dir=f"{tmp}/{rep}", device=args.device, batch_size=args.batch_size)
            with timer() as t: first.index(ids, texts)
            ours_runs.append(t)
        second = Dense(args.model, cache_dir=f"{tmp}/0", device=args.device, batch_size=args.batch_size)
        with timer() as cached: second.index(ids, texts)
        assert second.encoded_chunks == 0
        diff = float(np.abs(np.asarray(second.embeddings) - ref).max())
    bare, ours = min(bares, key=lambda t: t.s), min(ours_runs, key=lambda t: t.s)
    n = len(texts_list)
    rows = [["encode, first run", "Dense.index (cache write)", ours.s, n / ours.s, "bare SentenceTransformer.encode", bare.s, n / bare.s, bare.s / ours.s],
            ["second run", "Dense.index (from cache)", cached.s, n / cached.s, "first run", ours.s, n / ours.s, ours.s / cached.s]]
    table(rows, ["step", "ours", "s", "docs/s", "reference", "ref s", "ref docs/s", "ratio (ref s / ours s)"])
    print(f"\n{n} documents, device {args.device}; max |embedding difference| vs bare encode: {diff:.2e}")
    path = save("bench_dense", {"docs": n, "device": args.device, "model": str(model_name), "rows": rows, "max_abs_diff": diff})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

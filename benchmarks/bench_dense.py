"""Dense encoding at size: brightpro's `Dense.index` (length order, chunked checksummed cache) against a bare
sentence-transformers loop on the same texts with the same batch size, on a CPU or GPUs; a second run served from the
cache; exact search memory at the paper's size (124k documents x 4,096 dimensions, a memory-mapped cache).

Reports documents/s and tokens/s (real tokens, no padding), the ratio to the bare loop (goal >= 0.95), and the share of
the device's peak FLOP/s reached (2 x parameters x tokens per second; peak from a small table of GPUs, or --peak-tflops).
With --base-url, the same texts through an OpenAI-compatible embedding endpoint (`api:<model>`) where brightpro has it.

Texts: the bundled sample's documents (all domains, real lengths), cycled to --docs (default 300 on a CPU, 20,000 on a
GPU: MiniLM then takes well under a minute; an 8B model in bf16 a few minutes on an H100/H200), or the first --docs of
--data DIR's documents/earth_science.parquet. Model: the packaged all-MiniLM-L6-v2 unless --model (any model in the
Hugging Face cache; its recipe's precision and batch size apply). Run:
  .venv/bin/python benchmarks/bench_dense.py [--device cpu|cuda|cuda:0,cuda:1] [--model NAME] [--docs N] [--base-url URL]

--batch-sizes 8,16,32,64: instead, documents/s of `Dense.encode` (length-ordered batches, no cache) at each batch size,
interleaved over --repeats, the fastest of each kept (how brightpro.dense.CPU_BATCH was chosen), and the largest
embedding difference to the first batch size. The start-up of a run served from the cache: bench_dense_start.py.
"""
from __future__ import annotations
import argparse, os, sys, tempfile, time, tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table, timer

# Dense tensor-core peaks in TFLOP/s (no sparsity), by GPU name fragment: (bf16/fp16, fp32 without TF32).
PEAK_TFLOPS = {"H200": (989.0, 67.0), "H100 SXM": (989.0, 67.0), "H100 PCIe": (756.0, 51.0), "H100": (989.0, 67.0),
               "A100": (312.0, 19.5), "L40S": (362.0, 91.6), "L40": (181.0, 90.5), "L4": (121.0, 30.3), "A10G": (70.0, 31.2),
               "A10": (125.0, 31.2), "RTX 4090": (165.2, 82.6), "RTX 3090": (71.0, 35.6), "V100": (125.0, 15.7), "T4": (65.0, 8.1)}


def peak_tflops(device: str, dtype, given: float | None) -> tuple[float | None, str]:
    "The device's peak TFLOP/s for `dtype` and where it comes from."
    if given: return given, "--peak-tflops"
    if not device.startswith("cuda"): return None, "no table for CPUs: give --peak-tflops"
    import torch
    name = torch.cuda.get_device_name(int(device.split(",")[0].partition(":")[2] or 0))
    half = str(dtype) in ("torch.bfloat16", "torch.float16")
    for key, (low, full) in PEAK_TFLOPS.items():
        if key in name:
            n = len(device.split(","))
            return (low if half else full) * n, f"{name} x {n}, {'bf16/fp16' if half else 'fp32'} table"
    return None, f"{name} not in the table: give --peak-tflops"


def sample_texts(n: int, data: str | None) -> list[str]:
    "`n` documents: the bundled sample's, cycled, or the first `n` of a dataset folder's earth_science."
    if data:
        import pyarrow.parquet as pq
        return pq.read_table(f"{data}/documents/earth_science.parquet").slice(0, n).column("content").to_pylist()
    from brightpro.data import load_domains
    texts = [t for d in load_domains("all", "sample").values() for t in d.documents.column("content").to_pylist()]
    return [texts[i % len(texts)] for i in range(n)]


def search_memory(rows: int, dim: int, queries: int = 64, k: int = 1000) -> dict:
    "Time and peak Python/numpy memory of the exact blocked search over a memory-mapped rows x dim float32 cache (a sparse file)."
    from brightpro.dense import _best_k
    with tempfile.TemporaryDirectory(prefix="bench-dense-search-") as tmp:
        path = Path(tmp)/"embeddings.f32"
        with open(path, "wb") as f: f.truncate(rows * dim * 4)   # sparse: no disk space; reads see zeros
        emb = np.memmap(path, dtype=np.float32, mode="r", shape=(rows, dim))
        q = np.random.default_rng(0).standard_normal((queries, dim)).astype(np.float32)
        tracemalloc.start()
        t0 = time.perf_counter()
        _best_k(q, emb, k, 65_536, True)
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]; tracemalloc.stop()
        del emb
    return {"rows": rows, "dim": dim, "queries": queries, "k": k, "seconds": seconds, "peak_bytes": peak, "cache_bytes": rows * dim * 4}


def batch_sizes(args):
    "Documents/s of `Dense.encode` (length order, no cache) at each batch size, interleaved, the fastest of --repeats kept."
    from brightpro.core import quiet_progress
    from brightpro.dense import Dense
    sizes = [int(x) for x in args.batch_sizes.split(",")]
    texts = sample_texts(args.docs or 300, args.data)
    runs = {b: Dense(args.model, device=args.device, batch_size=b) for b in sizes}
    runs[sizes[0]].encode(texts[:16])   # warm-up: the model loaded once (shared by all)
    best, out = {b: float("inf") for b in sizes}, {}
    with quiet_progress():
        for _ in range(args.repeats):
            for b, r in runs.items():
                with timer() as t: out[b] = r.encode(texts)
                best[b] = min(best[b], t.s)
    fastest = min(best.values())
    rows = [[b, best[b], len(texts) / best[b], best[b] / fastest, float(np.abs(out[b] - out[sizes[0]]).max())] for b in sizes]
    table(rows, ["batch", "s", "docs/s", "x the fastest", f"max |diff| vs batch {sizes[0]}"])
    print(f"\n{len(texts)} documents, device {args.device}, fastest of {args.repeats} interleaved repeats")
    path = save("bench_dense_batch", {"docs": len(texts), "device": args.device, "model": str(args.model or "packaged MiniLM"), "rows": rows})
    print(f"wrote {path}")


def main(argv=None):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", help="cpu, cuda, cuda:0, or a comma list (cuda:0,cuda:1) for the process pool")
    ap.add_argument("--docs", type=int, default=None, help="documents encoded (default 300 on a CPU, 20000 on a GPU)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--model", default=None, help="a model name (in the Hugging Face cache) or folder; default the packaged MiniLM")
    ap.add_argument("--batch-size", type=int, default=None, help="default the recipe's, else the device's (brightpro.dense.default_batch_size)")
    ap.add_argument("--data", default=None, help="a dataset folder: its earth_science documents instead of the sample's")
    ap.add_argument("--peak-tflops", type=float, default=None, help="the device's peak TFLOP/s, where the table has none")
    ap.add_argument("--base-url", default=None, help="an OpenAI-compatible embedding endpoint, measured through api:<model>")
    ap.add_argument("--api-model", default=None, help="the endpoint's model name (default --model)")
    ap.add_argument("--search-rows", type=int, default=124_000)
    ap.add_argument("--search-dim", type=int, default=4096)
    ap.add_argument("--no-search", action="store_true", help="skip the search memory check")
    ap.add_argument("--batch-sizes", default=None, help="e.g. 8,16,32,64: documents/s of length-ordered batches at each size, then stop")
    args = ap.parse_args(argv)
    if args.batch_sizes: return batch_sizes(args)
    from brightpro.core import quiet_progress
    from brightpro.dense import Dense, device_list

    gpu = args.device.startswith("cuda")
    texts = sample_texts(args.docs or (20_000 if gpu else 300), args.data)
    ids, n = [f"d{i}" for i in range(len(texts))], len(texts)
    probe = Dense(args.model, device=args.device, batch_size=args.batch_size)
    from brightpro.dense import default_batch_size
    model, devices = probe.model, device_list(args.device)
    bs = probe.batch_size or default_batch_size(probe.encoding_device)
    window = probe.doc_max_length or model.max_seq_length
    tokens = sum(min(len(x), window - 2) + 2 for x in model.tokenizer(texts, add_special_tokens=False, truncation=True, max_length=window)["input_ids"])
    params = sum(p.numel() for p in model.parameters())
    dtype = next(model.parameters()).dtype
    bare_kw = dict(batch_size=bs, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False,
                   **({"device": devices} if devices else {}))
    model.encode(texts[:bs], **bare_kw)   # warm-up (and a pool's start, when several devices)

    bares, ours_runs = [], []
    with tempfile.TemporaryDirectory(prefix="bench-dense-") as tmp, quiet_progress():
        for rep in range(args.repeats):  # interleaved, the fastest of each kept: the machine may be shared
            with timer() as t: ref = model.encode(texts, **bare_kw)
            bares.append(t)
            first = Dense(args.model, cache_dir=f"{tmp}/{rep}", device=args.device, batch_size=bs)
            with timer() as t: first.index(ids, texts)
            ours_runs.append(t)
        second = Dense(args.model, cache_dir=f"{tmp}/0", device=args.device, batch_size=bs)
        with timer() as cached: second.index(ids, texts)
        assert second.encoded_chunks == 0
        diff = float(np.abs(np.asarray(second.embeddings) - ref).max())
        endpoint = None
        if args.base_url:
            from brightpro.core import BrightproError
            from brightpro.retrievers import get_retriever
            try:
                api = get_retriever(f"api:{args.api_model or args.model or 'all-MiniLM-L6-v2'}", base_url=args.base_url, cache_dir=f"{tmp}/api")
                with timer() as endpoint: api.index(ids, texts)
            except BrightproError as e: print(f"endpoint: not measured: {e}")
    bare, ours = min(bares, key=lambda t: t.s), min(ours_runs, key=lambda t: t.s)
    peak, peak_from = peak_tflops(args.device, dtype, args.peak_tflops)
    share = lambda s: "n/a" if not peak else f"{2 * params * tokens / s / (peak * 1e12):.1%}"
    row = lambda what, s, ref_s: [what, s, n / s, tokens / s, share(s), ref_s / s]
    rows = [row("Dense.index (length order, cache write)", ours.s, bare.s),
            row("bare SentenceTransformer.encode", bare.s, bare.s)]
    if endpoint is not None: rows.append(row(f"api:{args.api_model or args.model} at --base-url", endpoint.s, bare.s))
    rows.append(["second run, from the cache", cached.s, n / cached.s, tokens / cached.s, "-", ours.s / cached.s])
    table(rows, ["encoder", "s", "docs/s", "tokens/s", "of peak FLOP/s", "ratio (bare s / s)"])
    print(f"\n{n} documents, {tokens} tokens ({tokens / n:.0f} per document, window {window}), batch {bs}, device {args.device}, "
          f"{dtype}, {params / 1e6:.1f}M parameters; peak: {peak_from}")
    print(f"max |embedding difference| vs the bare loop: {diff:.2e}")
    search = None
    if not args.no_search:
        search = search_memory(args.search_rows, args.search_dim)
        print(f"exact search, {search['rows']} x {search['dim']} float32 cache ({search['cache_bytes'] / 2**30:.2f} GiB, memory-mapped), "
              f"{search['queries']} queries, top {search['k']}: {search['seconds']:.1f} s, peak numpy memory "
              f"{search['peak_bytes'] / 2**20:.0f} MiB (blocks of at most 256 MiB of rows)")
    path = save("bench_dense", {"docs": n, "tokens": tokens, "device": args.device, "model": str(args.model or "packaged MiniLM"),
                                "dtype": str(dtype), "parameters": params, "batch_size": bs, "peak_tflops": peak, "rows": rows,
                                "max_abs_diff": diff, "search": search})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Dense documents per second, this code against another checkout's (--before DIR), on the same texts and device:
`Dense(...).index(ids, texts)` with each version's defaults (order of batches, batch size, device), cold (an empty
cache), in a fresh process per run, the versions alternated --repeats times after a warm-up run each, the fastest and the median run of each kept. Also the
largest difference between the two versions' embeddings (goal, issue 22: at least 1.15x the documents per second of
the code before it, with the same embeddings). With --loaded, the clock starts after the model is loaded (importing
sentence-transformers and loading the model excluded): the encoding's own documents per second. Texts: the bundled sample's documents, all domains, the first --docs.
Run:
  git worktree add ../before a12ab28      # the code issue 22 was measured on
  .venv/bin/python benchmarks/bench_dense_versions.py --before ../before [--docs 320] [--repeats 3]
"""
from __future__ import annotations
import argparse, os, statistics, subprocess, sys, tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table

HERE = Path(__file__).resolve().parent.parent
CODE = """
import sys, time
import numpy as np
from brightpro.data import load_domains
from brightpro.dense import Dense
docs = [d for dom in load_domains("all", "sample").values() for d in zip(dom.doc_ids, dom.documents.column("content").to_pylist())][:int(sys.argv[1])]
r = Dense(cache_dir=sys.argv[2])
if sys.argv[4] == "loaded": r.model   # sentence-transformers imported and the model loaded before the clock starts
t = time.perf_counter(); r.index([i for i, _ in docs], [t for _, t in docs]); seconds = time.perf_counter() - t
np.save(sys.argv[3], np.asarray(r.embeddings, dtype=np.float32))
print(seconds)
"""


def one_run(root: Path, docs: int, tmp: Path, tag: str, loaded: bool = False) -> tuple[float, np.ndarray]:
    "Seconds of one cold index with `root`'s code in a fresh process (`loaded`: the model loaded before timing), and its embeddings."
    cache, out = tmp/f"cache-{tag}", tmp/f"emb-{tag}.npy"
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1", "BRIGHTPRO_PROGRESS": "0"}
    p = subprocess.run([sys.executable, "-c", CODE, str(docs), str(cache), str(out), "loaded" if loaded else "cold"], capture_output=True, text=True, env=env, cwd=root)
    if p.returncode: raise SystemExit(f"{root}: failed:\n{p.stderr[-3000:]}")
    return float(p.stdout.strip().splitlines()[-1]), np.load(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="a checkout of the earlier code")
    ap.add_argument("--docs", type=int, default=320)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--loaded", action="store_true", help="start the clock after the model is loaded: encoding (and caching) only")
    args = ap.parse_args(argv)
    roots = {"before": Path(args.before).resolve(), "this code": HERE}
    load = os.getloadavg()[0]
    seconds, emb = {k: [] for k in roots}, {}
    with tempfile.TemporaryDirectory(prefix="bench-dense-versions-") as tmp:
        for name, root in roots.items(): one_run(root, 16, Path(tmp), f"warm-up-{name.replace(' ', '-')}")   # bytecode, model files in the page cache
        for i in range(args.repeats):
            for name, root in roots.items():
                s, e = one_run(root, args.docs, Path(tmp), f"{name.replace(' ', '-')}-{i}", args.loaded)
                seconds[name].append(s); emb[name] = e
                print(f"{name} #{i + 1}: {s:.1f} s ({args.docs / s:.1f} documents/s)", flush=True)
    rate = {k: args.docs / min(v) for k, v in seconds.items()}
    diff = float(np.abs(emb["before"] - emb["this code"]).max())
    median = {k: statistics.median(v) for k, v in seconds.items()}
    table([[k, min(seconds[k]), median[k], max(seconds[k]), rate[k]] for k in roots], ["code", "fastest s", "median s", "slowest s", "documents/s (fastest)"])
    print(f"\nthis code / before: {rate['this code'] / rate['before']:.2f}x documents/s by the fastest runs, "
          f"{median['before'] / median['this code']:.2f}x by the medians (goal >= 1.15x); "
          f"largest embedding difference {diff:.2e}; load average {load:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"wrote {save('bench_dense_versions', {'docs': args.docs, 'loaded': args.loaded, 'seconds': seconds, 'ratio': rate['this code'] / rate['before'], 'max_diff': diff})}")


if __name__ == "__main__":
    main()

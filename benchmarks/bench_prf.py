"""The prf agent (`run_agent(policy="prf")`: 3 rounds over every query, as `brightpro agent --policy prf` runs it; the
report runs the same over the agentic subset) and the searches it
makes (`BM25Bright.search`, k = 5), this code against another checkout's (--before DIR), on the same data: each run a
fresh process, the two codes alternated --repeats times; wall and CPU seconds of the agent alone (the domains loaded
and the bm25-bright index built before the clock starts, from one warm cache both codes share), the fastest and the
median run of each kept. Every run's traces are compared by digest with the first's: the same bytes.

Also the ranking of one search in isolation (`top_k` of a score vector for k = 5 and k = 1000), this code's against
NumPy's plain `partition` of the whole vector (what `top_k` did before): the part of a search that narrowing by a floor
speeds up. Its score vectors are the largest domain's, for the first 50 questions and for the agent's own searches of
rounds 2 and 3 (its feedback queries: a few salient words, so many documents score zero).
Run:
  git worktree add ../before 8e19ba5
  .venv/bin/python benchmarks/bench_prf.py --before ../before --dataset <a full-size synthetic dataset> [--repeats 3]
"""
from __future__ import annotations
import argparse, hashlib, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table

HERE = Path(__file__).resolve().parent.parent
CODE = """
import json, resource, sys, time
from brightpro.data import load_domains
from brightpro.agent import run_agent
from brightpro.retrievers import get_retriever
domains = load_domains(sys.argv[1], dataset=sys.argv[2])
for name, d in domains.items():   # the index built (or read from the warm cache) before the clock starts
    get_retriever("bm25-bright", domain=name, cache_dir=sys.argv[3]).index(d.documents.column("id"), d.documents.column("content"))
t, c = time.perf_counter(), time.process_time()
run_agent(domains, retriever="bm25-bright", protocol="fixed", rounds=3, policy="prf", out=sys.argv[4], cache_dir=sys.argv[3])
print(json.dumps({"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c}))
"""


def one_run(root: Path, args, cache: Path, out: Path) -> dict:
    "Seconds of the prf agent with `root`'s code in a fresh process, and the digest of its traces."
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "BRIGHTPRO_PROGRESS": "0"}
    p = subprocess.run([sys.executable, "-c", CODE, args.domains, args.dataset, str(cache), str(out)], capture_output=True, text=True, env=env, cwd=root)
    if p.returncode: raise SystemExit(f"{root}: failed:\n{p.stderr[-3000:]}")
    h = hashlib.blake2b(digest_size=16)
    for f in sorted(out.rglob("traces.jsonl")): h.update(f.relative_to(out).as_posix().encode()); h.update(f.read_bytes())
    return {**json.loads(p.stdout.strip().splitlines()[-1]), "traces": h.hexdigest()}


def ranking(args, cache: Path, traces: Path) -> dict:
    "Milliseconds per `top_k` (this code's) and per plain `partition` of the whole vector, on the largest domain's score vectors: of its questions, and of the agent's feedback searches in `traces` (a run folder)."
    import numpy as np
    from brightpro.data import largest_first, load_domains
    from brightpro.retriever import top_k
    from brightpro.retrievers import get_retriever
    domains = load_domains(args.domains, dataset=args.dataset)
    name = largest_first(domains)[0]
    d = domains[name]
    r = get_retriever("bm25-bright", domain=name, cache_dir=cache); r.index(d.documents.column("id"), d.documents.column("content"))
    feedback = [s["query"] for line in (traces/name/"traces.jsonl").read_text(encoding="utf-8").splitlines()
                for rnd in json.loads(line)["rounds"][1:] for s in rnd["searches"]]
    out = {"domain": name, "documents": len(d.doc_ids)}
    for kind, queries in (("questions", d.queries["query"].tolist()[:50]), ("feedback searches", feedback[:50])):
        vectors = [r.scores(q) for q in queries]
        def per_call(f) -> float:
            best = float("inf")
            for _ in range(3):
                t = time.perf_counter()
                for s in vectors: f(s)
                best = min(best, time.perf_counter() - t)
            return best / len(vectors) * 1e3
        out[kind] = {"zero_share": float(np.mean([np.mean(s == 0) for s in vectors]))}
        for k in (5, 1000):
            out[kind][f"k={k}"] = {"top_k_ms": per_call(lambda s: top_k(s, k)), "partition_ms": per_call(lambda s: np.partition(s, len(s) - k))}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="a checkout of the previous code")
    ap.add_argument("--dataset", required=True, help="a dataset folder (absolute), e.g. a full-size synthetic one")
    ap.add_argument("--domains", default="all")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    codes = {"this code": HERE, "before": Path(args.before).resolve()}
    runs = {c: [] for c in codes}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for i in range(args.repeats):
            for c, root in codes.items():
                runs[c].append(one_run(root, args, tmp/"cache", tmp/f"out-{c.replace(' ', '-')}-{i}"))
                print(f"{c} #{i + 1}: {runs[c][-1]['wall_s']:.2f} s, {runs[c][-1]['cpu_s']:.2f} CPU s", flush=True)
        rank = ranking(args, tmp/"cache", tmp/"out-this-code-0")
    first = runs["this code"][0]["traces"]
    same = all(r["traces"] == first for rs in runs.values() for r in rs)
    fastest = {c: min(r["wall_s"] for r in rs) for c, rs in runs.items()}
    median = {c: statistics.median(r["wall_s"] for r in rs) for c, rs in runs.items()}
    table([[c, f"{fastest[c]:.2f}", f"{median[c]:.2f}", f"{min(r['cpu_s'] for r in rs):.2f}"] for c, rs in runs.items()],
          ["prf agent", "fastest s", "median s", "least CPU s"])
    print(f"before/this code: {fastest['before'] / fastest['this code']:.2f}x (fastest), {median['before'] / median['this code']:.2f}x (median); "
          f"traces identical in every run: {same}")
    for kind in ("questions", "feedback searches"):
        r = rank[kind]
        print(f"one search's ranking, {rank['domain']} ({rank['documents']} documents), {kind} ({r['zero_share']:.0%} of scores zero): " +
              "; ".join(f"{k}: top_k {v['top_k_ms']:.3f} ms against partition {v['partition_ms']:.3f} ms ({v['partition_ms'] / v['top_k_ms']:.0f}x)"
                        for k, v in r.items() if k.startswith("k=")))
    save("bench_prf", {"dataset": args.dataset, "domains": args.domains, "before": str(codes["before"]), "runs": runs,
                       "fastest": fastest, "median": median, "identical": same, "ranking": rank})


if __name__ == "__main__":
    main()

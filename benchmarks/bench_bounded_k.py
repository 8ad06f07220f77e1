"""Benchmark: the cost of a deep cut-off k. Work and memory must follow the run's depth (1000 here), not k.

    .venv/bin/python benchmarks/bench_bounded_k.py [--ks 25,1000,100000,1000000] [--repeats 3] [--no-cli]

Data: the synthetic full-size Bright-Pro of bench_metrics.py (739 queries in 7 domains, 1000 ranked documents per
query, ~7 gold documents and ~3.7 aspects per query). For every k, each measurement runs in a fresh process, capped
at --memory-cap GiB of address space so that a k-sized allocation ends in a MemoryError instead of exhausting the
machine:

- score: `score_judgements(run, J, k)` (all four metrics, the Run and Judgements built beforehand, as for a second run on
  the same dataset), best wall time of --repeats calls, and the peak of memory allocated during one call (tracemalloc,
  which sees numpy's arrays);
- evaluate: the whole `brightpro evaluate --k K` command on per-domain TREC files (new Python process, dataset read
  from parquet, JSON out), wall time and peak resident memory (VmHWM, the process's own high-water mark).

Ratios are against k = 25 (the default) and against k = 1000 (the run's depth); the goal is ~1x for every k >= 1000.
Writes benchmarks/results/bench_bounded_k.json.
"""
from __future__ import annotations
import argparse, json, os, subprocess, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _common import save, table

# VmHWM belongs to this process alone (ru_maxrss would carry the parent's peak across fork and exec).
PEAK = """
def peak_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"): return int(line.split()[1]) / 1024
"""

CAP = """
import resource, sys
cap = int(float(sys.argv[1]) * 2**30)
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
"""

SCORE = PEAK + CAP + """
import gc, json, time, tracemalloc
sys.path.insert(0, sys.argv[4])
from bench_metrics import synthesize, pooled
from brightpro.runs import Run
from brightpro.metrics import Judgements, score_judgements
k, repeats = int(sys.argv[2]), int(sys.argv[3])
gold, doc_aspect, weights, qids, docids, scores = pooled(synthesize())
run = Run.from_arrays(qids, docids, scores, name="bench")
J = Judgements.build(gold, doc_aspect, weights)
del qids, docids, scores
try:
    best = float("inf")
    for _ in range(repeats):
        gc.collect(); gc.disable(); t = time.perf_counter()
        score_judgements(run, J, k)
        best = min(best, time.perf_counter() - t); gc.enable()
    tracemalloc.start()
    score_judgements(run, J, k)
    traced = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(json.dumps(dict(seconds=best, alloc_peak_mib=traced, vmhwm_mib=peak_mib())))
except MemoryError as e:
    print(json.dumps(dict(error=f"MemoryError: {e}"[:120], vmhwm_mib=peak_mib())))
"""

CLI = PEAK + CAP + """
import atexit, runpy
atexit.register(lambda: print(f"VMHWM_MIB {peak_mib()}", file=sys.stderr))
sys.argv = ["brightpro"] + sys.argv[2:]
runpy.run_module("brightpro.cli", run_name="__main__")
"""


def child(code, *args):
    "Run `code` in a fresh Python process (cwd: the repository); returns (wall seconds, stdout, stderr, exit code)."
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "BRIGHTPRO_PROGRESS": "0"})
    return time.perf_counter() - t, r.stdout, r.stderr, r.returncode


def measure_score(k, args) -> dict:
    _, out, err, code = child(SCORE, args.memory_cap, k, args.repeats, HERE)
    if code or not out.strip(): return dict(error=(err.strip().splitlines() or ["failed"])[-1][:120])
    return json.loads(out.strip().splitlines()[-1])


def measure_cli(k, data: Path, args) -> dict:
    cmd = ["evaluate", "--dataset", data/"data", "--domain", "all", "--run", data/"runs"/"bench", "--k", k, "--json"]
    best = None
    for _ in range(args.cli_repeats):
        wall, out, err, code = child(CLI, args.memory_cap, *cmd)
        peak = next((float(l.split()[1]) for l in err.splitlines() if l.startswith("VMHWM_MIB")), float("nan"))
        if code:
            lines = [l for l in err.strip().splitlines() if not l.startswith("VMHWM_MIB")] or [f"exit {code}"]
            return dict(error=lines[-1][:120], vmhwm_mib=peak)
        json.loads(out)                                    # the command printed its result
        if best is None or wall < best["seconds"]: best = dict(seconds=wall, vmhwm_mib=peak)
    return best


def ratio(a, b): return a / b if a is not None and b else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ks", default="25,1000,100000,1000000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cli-repeats", type=int, default=2)
    ap.add_argument("--memory-cap", type=float, default=8.0, help="GiB of address space per measured process")
    ap.add_argument("--no-cli", action="store_true")
    args = ap.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-bounded-k-") as tmp:
        if not args.no_cli:
            from bench_metrics import synthesize, write_dataset
            write_dataset(synthesize(), Path(tmp))
        for k in ks:
            results[k] = {"score": measure_score(k, args)}
            if not args.no_cli: results[k]["evaluate"] = measure_cli(k, Path(tmp), args)
            print(f"k={k}: {json.dumps(results[k])}", flush=True)
    base, depth = results.get(25), results.get(1000)
    rows = []
    for k, r in results.items():
        for side, key in (("score", "alloc_peak_mib"), ("evaluate", "vmhwm_mib")):
            m = r.get(side)
            if m is None: continue
            if "error" in m: rows.append([k, side, m["error"][:40], "", "", "", "", ""]); continue
            b = (base or {}).get(side, {}); d = (depth or {}).get(side, {})
            fmt = lambda x: "-" if x is None else f"{x:.2f}x"
            rows.append([k, side, m["seconds"], m[key], fmt(ratio(m["seconds"], b.get("seconds"))), fmt(ratio(m[key], b.get(key))),
                         fmt(ratio(m["seconds"], d.get("seconds"))), fmt(ratio(m[key], d.get(key)))])
    print()
    table(rows, ["k", "measured", "seconds", "peak MiB", "time vs k=25", "memory vs k=25", "time vs k=1000", "memory vs k=1000"])
    print("\nscore: peak MiB = memory allocated during score_judgements (tracemalloc); evaluate: the process's peak RSS")
    path = save("bench_bounded_k", {"ks": ks, "repeats": args.repeats, "memory_cap_gib": args.memory_cap,
                                    "results": {str(k): v for k, v in results.items()}})
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

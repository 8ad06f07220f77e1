"""`build_report` (what `brightpro report` runs) on the whole bundled sample: jobs=2 against jobs=1, and a second run
with everything up to date as a share of the first (goal: under 5%).

Each run is a fresh process (`python -c "... build_report(...)"`, as the command would be), into a fresh output
folder, with the same warm cache folder (BM25 indexes, dense embeddings, documents), which a warm-up run fills first:
so the runs measured differ only in the report's own stages (retrieval from cached indexes, the prf agent,
evaluation, one notebook per domain, the summary, the index). Wall time includes Python's start and imports; the
stage seconds `build_report` itself measures are printed too.
Run: .venv/bin/python benchmarks/bench_report.py [--retrievers bm25-bright,bm25,dense,fusion:bm25-bright+dense] [--cache-dir DIR]
"""
from __future__ import annotations
import argparse, json, os, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table

CODE = """
import json, sys
from brightpro.report import build_report
rep = build_report("sample", "all", retrievers=sys.argv[1].split(","), agent=sys.argv[2] or None, out=sys.argv[3], jobs=int(sys.argv[4]), cache_dir=sys.argv[5])
print(json.dumps({"statuses": [p.status for p in rep.pages] + [rep.summary.status], "seconds": rep.seconds}))
"""


def run(retrievers, agent, out, jobs, cache) -> tuple[float, dict]:
    "Wall seconds of one build_report in a fresh process, and what it reported."
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CODE, retrievers, agent, str(out), str(jobs), str(cache)], capture_output=True, text=True,
                       env={**os.environ, "BRIGHTPRO_PROGRESS": "0", "HF_HUB_OFFLINE": "1", "MPLBACKEND": "Agg"})
    wall = time.perf_counter() - t
    if p.returncode: raise SystemExit(f"build_report failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return wall, json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--retrievers", default="bm25-bright,bm25,dense,fusion:bm25-bright+dense")
    ap.add_argument("--agent", default="prf", help="prf, or '' for none")
    ap.add_argument("--cache-dir", default=None, help="a cache folder to reuse (default: a fresh one, filled by the warm-up)")
    args = ap.parse_args(argv)
    rows, results = [], {}
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        cache = Path(args.cache_dir or Path(tmp)/"cache")
        warm, _ = run(args.retrievers, args.agent, Path(tmp)/"warm-up", 2, cache)
        print(f"warm-up (fills the cache): {warm:.1f} s", flush=True)
        for jobs in (1, 2):
            out = Path(tmp)/f"jobs{jobs}"
            first, rep1 = run(args.retrievers, args.agent, out, jobs, cache)
            again, rep2 = run(args.retrievers, args.agent, out, jobs, cache)
            assert set(rep1["statuses"]) == {"built"} and set(rep2["statuses"]) == {"up to date"}, (rep1, rep2)
            results[jobs] = {"first_s": first, "again_s": again, "first_stages": rep1["seconds"], "again_stages": rep2["seconds"]}
            rows.append([f"jobs={jobs}, first run", first, ", ".join(f"{k} {v:.1f}" for k, v in rep1["seconds"].items()), ""])
            rows.append([f"jobs={jobs}, again (up to date)", again, ", ".join(f"{k} {v:.2f}" for k, v in rep2["seconds"].items()),
                         f"{100 * again / first:.1f}% of the first"])
            print(f"jobs={jobs}: first {first:.1f} s, again {again:.1f} s", flush=True)
    ratio = results[2]["first_s"] / results[1]["first_s"]
    pages = results[2]["first_stages"]["pages"] / results[1]["first_stages"]["pages"]
    rows.append(["jobs=2 / jobs=1, first runs", ratio, "", ""])
    rows.append(["jobs=2 / jobs=1, pages stage", pages, "", "the only stage jobs changes"])
    table(rows, ["run", "wall s (ratio)", "stages (s, inside build_report)", "note"])
    print(f"\nwhole sample: {args.retrievers} + agent {args.agent or 'none'}; {os.cpu_count()} CPUs; jobs=2 takes {ratio:.2f}x the time of jobs=1 "
          f"({pages:.2f}x for the pages)")
    save("bench_report", {"retrievers": args.retrievers, "agent": args.agent, "warm_up_s": warm, "runs": results, "jobs2_over_jobs1": ratio, "pages_jobs2_over_jobs1": pages})


if __name__ == "__main__":
    main()

"""The whole static BM25 pipeline over all seven domains at full synthetic scale (526,319 documents, 739 queries).

Runs `brightpro retrieve --domain all` (tokenization included) in a fresh process per retriever, cold (empty cache),
and reports wall time and peak memory; then `brightpro evaluate` on the runs when that command exists.
Goal for bm25-bright: under 4 minutes and under 6 GiB on the 2-core machine. Plain bm25 (bm25s) is run the same way
as the reference. Run: .venv/bin/python benchmarks/bench_static_pipeline.py [--scale 1.0] [--retrievers bm25-bright,bm25]
"""
from __future__ import annotations
import argparse, os, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, synth_dataset, table

DOMAINS = ("biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living")


def timed(cmd, env=None):
    "Wall seconds and peak RSS (GiB) of a child process, measured with wait4."
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    out, err = p.stdout.read(), p.stderr.read()
    code = os.waitstatus_to_exitcode(status)
    if code: raise SystemExit(f"{' '.join(map(str, cmd))} failed ({code}):\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 2**20, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--data", default=None, help="a dataset folder in hub layout (default: generate a synthetic one)")
    ap.add_argument("--retrievers", default="bm25-bright,bm25")
    args = ap.parse_args(argv)
    root = synth_dataset(DOMAINS, scale=args.scale) if args.data is None else Path(args.data)
    py = sys.executable
    rows, results = [], {}
    with tempfile.TemporaryDirectory(prefix="bench-static-") as tmp:
        for name in args.retrievers.split(","):
            cache = Path(tmp)/f"cache-{name}"
            base = [py, "-m", "brightpro.cli", "retrieve", "--dataset", str(root), "--domain", "all", "--retriever", name,
                    "--out", f"{tmp}/runs", "--cache-dir", str(cache)]
            wall, rss, out = timed(base + ["--force"], env={"BRIGHTPRO_PROGRESS": "0"})
            warm, warm_rss, _ = timed(base + ["--force"], env={"BRIGHTPRO_PROGRESS": "0"})  # indexes reloaded memory-mapped
            rows.append([name, "retrieve, cold", wall, rss]); rows.append([name, "retrieve, cached index", warm, warm_rss])
            results[name] = {"cold_s": wall, "cold_peak_gib": rss, "warm_s": warm, "warm_peak_gib": warm_rss}
            print(out, flush=True)
        # evaluation of the runs, when the evaluate command is available
        help_ = subprocess.run([py, "-m", "brightpro.cli", "evaluate", "--help"], capture_output=True, text=True)
        if help_.returncode == 0:
            for name in args.retrievers.split(","):
                slug = name.replace(":", "-")
                try:
                    wall, rss, out = timed([py, "-m", "brightpro.cli", "evaluate", "--dataset", str(root), "--domain", "all",
                                            "--run", f"{tmp}/runs/{slug}"])
                    rows.append([name, "evaluate", wall, rss]); results[name]["evaluate_s"] = wall
                    print(out[-3000:])
                except SystemExit as e: print(f"evaluate failed: {e}")
        else: print("`brightpro evaluate` is not available; timing retrieval only")
    print()
    table(rows, ["retriever", "step", "wall s", "peak GiB"])
    if "bm25-bright" in results and "bm25" in results:
        r = results
        print(f"\nbm25-bright cold vs bm25 (bm25s) cold: {r['bm25-bright']['cold_s']:.0f} s vs {r['bm25']['cold_s']:.0f} s "
              f"(ratio {r['bm25']['cold_s'] / r['bm25-bright']['cold_s']:.2f}); goal for bm25-bright: < 240 s and < 6 GiB")
    path = save("bench_static_pipeline", {"scale": args.scale, "rows": rows, "results": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Loading a full-size domain: brightpro against `datasets.load_dataset('parquet', ...)` converted to pandas.

    .venv/bin/python benchmarks/bench_load.py [--domain earth_science] [--scale 1.0] [--repeat 3]

Generates the synthetic domain at the real size (earth_science: 123,575 documents) unless it is already in
benchmarks/results/data, then times each way of loading it in a fresh process (so peak memory is that load's alone)
and prints a table with the ratios. Results go to benchmarks/results/bench_load.json.

What each side does, from Parquet files on disk to the whole domain in memory:
- brightpro (cold): `load_domain(domain, dataset=DIR)` and its `.documents` (one Arrow table, no Python object per
  doc) with an empty cache: it decodes the Parquet file and writes its memory-mappable Arrow cache.
- brightpro (warm): the same with its cache built: the documents are memory-mapped.
- datasets (cold): `load_dataset('parquet', data_files=...)` for examples, aspects and documents into a new, empty
  cache folder (it converts to its Arrow cache first), then `.to_pandas()` on each, as research scripts do.
- datasets (warm): the same with the cache already built.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# ru_maxrss survives exec on Linux (it would report the parent's peak); VmHWM belongs to this process alone.
PEAK = """
def peak_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"): return int(line.split()[1]) / 1024
"""

BRIGHTPRO = PEAK + """
import time, json, sys
from brightpro.data import load_domain
t = time.perf_counter()
d = load_domain(sys.argv[1], dataset=sys.argv[2])
n = d.documents.num_rows + len(d.queries) + len(d.aspects)
elapsed = time.perf_counter() - t
print(json.dumps(dict(seconds=elapsed, peak_mib=peak_mib(), rows=n)))
"""

DATASETS = PEAK + """
import time, json, sys, os
from datasets import load_dataset
from datasets.utils.logging import disable_progress_bar
disable_progress_bar()
domain, root, cache = sys.argv[1], sys.argv[2], sys.argv[3]
t = time.perf_counter()
frames = {c: load_dataset("parquet", data_files={"train": f"{root}/{c}/{domain}.parquet"}, split="train", cache_dir=cache).to_pandas()
          for c in ("examples", "aspects", "documents")}
n = sum(len(f) for f in frames.values())
elapsed = time.perf_counter() - t
print(json.dumps(dict(seconds=elapsed, peak_mib=peak_mib(), rows=n)))
"""

BASELINE = PEAK + """
import json
import brightpro.data, datasets, pandas
print(json.dumps(dict(seconds=0.0, peak_mib=peak_mib(), rows=0)))
"""


def run(code, *args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domain", default="earth_science")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    data = HERE/"results"/"data"/f"scale{a.scale}"
    if not (data/"documents"/f"{a.domain}.parquet").exists():
        from brightpro.synth import synth_domain
        print(f"generating {a.domain} at scale {a.scale} into {data} ...", file=sys.stderr)
        synth_domain(a.domain, data, a.scale, seed=0, topics_dir=ROOT.parent/"shared"/"data"/"bright-topics")
    cache = tempfile.mkdtemp(prefix="bench-load-bp-")
    os.environ["BRIGHTPRO_CACHE"] = cache
    base = run(BASELINE)
    rows = {}
    for name in ("brightpro (cold cache)", "brightpro (warm cache)", "datasets (cold cache)", "datasets (warm cache)"):
        results = []
        for _ in range(a.repeat):
            if name.startswith("brightpro"):
                shutil.rmtree(cache, ignore_errors=True)
                if "warm" in name: run(BRIGHTPRO, a.domain, data)
                results.append(run(BRIGHTPRO, a.domain, data))
            else:
                cache = tempfile.mkdtemp(prefix="bench-load-hf-")
                try:
                    if "warm" in name: run(DATASETS, a.domain, data, cache)
                    results.append(run(DATASETS, a.domain, data, cache))
                finally: shutil.rmtree(cache, ignore_errors=True)
        rows[name] = dict(seconds=statistics.median(r["seconds"] for r in results),
                          peak_mib=statistics.median(r["peak_mib"] for r in results), rows=results[0]["rows"])
    shutil.rmtree(cache, ignore_errors=True)
    bp = rows["brightpro (cold cache)"]
    print(f"\nLoading {a.domain} at scale {a.scale} ({bp['rows']:,} rows in all; median of {a.repeat} fresh processes; "
          f"imports alone peak at {base['peak_mib']:.0f} MiB)\n")
    print(f"{'loader':24s} {'wall s':>8s} {'peak MiB':>9s} {'time ratio':>11s} {'memory ratio':>13s}")
    for name, r in rows.items():
        print(f"{name:24s} {r['seconds']:8.2f} {r['peak_mib']:9.0f} {r['seconds'] / bp['seconds']:10.1f}x {r['peak_mib'] / bp['peak_mib']:12.2f}x")
    out = HERE/"results"/"bench_load.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(domain=a.domain, scale=a.scale, baseline_peak_mib=base["peak_mib"], results=rows), indent=1))
    print(f"\n(ratios are each loader over brightpro with a cold cache; written to {out.relative_to(ROOT)})")


if __name__ == "__main__": main()

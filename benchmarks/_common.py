"""Helpers shared by the benchmarks: a full-size synthetic dataset (generated once), timing, peak memory, result files."""
from __future__ import annotations
import json, os, resource, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE/"results"


def synth_version() -> str:
    "A digest of the generator's source: data made by another version of `brightpro data synth` is not reused."
    import hashlib
    return hashlib.sha256((HERE.parent/"brightpro"/"synth.py").read_bytes()).hexdigest()[:8]


def synth_dataset(domains, root=None, scale=1.0, seed=0) -> Path:
    "A synthetic dataset in hub layout with the real sizes (real BRIGHT query texts when ../shared/data is present), made once per generator version."
    import subprocess, sys
    root = Path(root or RESULTS/f"synth-scale{scale:g}-seed{seed}-{synth_version()}")
    for d in domains:
        if not (root/"documents"/f"{d}.parquet").exists():
            print(f"generating synthetic {d} (scale {scale}) in {root} ...", flush=True)
            # In a child process: Linux keeps a process's peak RSS across fork and exec, so generating here would
            # inflate the peak memory measured for every command this benchmark starts afterwards.
            subprocess.run([sys.executable, "-m", "brightpro.cli", "data", "synth", "--domain", d, "--scale", str(scale),
                            "--seed", str(seed), "--out", str(root), "--topics", str(HERE.parent.parent/"shared"/"data"/"bright-topics")],
                           check=True, stdout=subprocess.DEVNULL)
    return root


class timer:
    def __enter__(self): self.t = time.perf_counter(); return self
    def __exit__(self, *a): self.s = time.perf_counter() - self.t


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def save(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS/f"{name}.json"
    path.write_text(json.dumps({"benchmark": name, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                "cpus": os.cpu_count(), **payload}, indent=1, default=str))
    return path


def table(rows, headers):
    "Print a small aligned table."
    rows = [[f"{c:.3g}" if isinstance(c, float) else str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    for r in rows: print("  ".join(c.ljust(w) for c, w in zip(r, widths)))

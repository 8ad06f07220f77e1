"""Dense start-up: `brightpro retrieve --retriever dense` on the bundled sample, a cold run (documents encoded), then
--repeats runs with --force into the same cache (documents and, with this code, queries served from it), the fastest kept;
with --before DIR, the same commands with the brightpro of another checkout (e.g. a worktree of the previous commit) on
the path, and the ratio of the second runs. Also: whether the second run imported sentence_transformers, the import time
of `brightpro.dense`, and whether both checkouts wrote the same run files (.trec and .score.json, byte for byte). Run:
  .venv/bin/python benchmarks/bench_dense_start.py [--domain all] [--repeats 2] [--before ../main]
"""
from __future__ import annotations
import argparse, os, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table

HERE = Path(__file__).resolve().parent.parent
PROBE = ("import runpy, sys; sys.argv = ['brightpro'] + sys.argv[1:]\n"
         "try: runpy.run_module('brightpro.cli', run_name='__main__')\n"
         "except SystemExit as e: code = e.code\n"
         "else: code = 0\n"
         "print('sentence_transformers imported:', 'sentence_transformers' in sys.modules, file=sys.stderr); sys.exit(code)")


def run(root: Path, args: list[str]) -> tuple[float, str]:
    "Wall seconds of one `brightpro ...` with `root`'s package first on the path, and its stderr."
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1", "BRIGHTPRO_PROGRESS": "0"}
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, cwd=root)   # `-c` puts cwd first on the path
    seconds = time.perf_counter() - t0
    if res.returncode: raise SystemExit(f"{root}: brightpro {' '.join(args)} failed:\n{res.stderr[-2000:]}")
    return seconds, res.stderr


def import_seconds(root: Path, repeats: int = 3) -> float:
    "The fastest of `repeats` fresh imports of brightpro.dense."
    code = "import time; t = time.perf_counter(); import brightpro.dense; print(time.perf_counter() - t)"
    env = {**os.environ, "PYTHONPATH": str(root)}
    return min(float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, cwd=root).stdout) for _ in range(repeats))


def measure(root: Path, tmp: Path, domain: str, repeats: int) -> dict:
    "Cold and second-run seconds of the dense retrieve with `root`'s code, in `tmp`."
    base = ["retrieve", "--retriever", "dense", "--domain", domain, "--cache-dir", str(tmp/"cache")]
    cold, _ = run(root, [*base, "--out", str(tmp/"cold")])
    warm = [run(root, [*base, "--out", str(tmp/"warm"), "--force"]) for _ in range(repeats)]
    same = all((tmp/"cold"/"dense"/p.name).read_bytes() == p.read_bytes() for p in (tmp/"warm"/"dense").iterdir()
               if p.suffix in (".trec", ".json") and not p.name.endswith(".meta.json"))
    return {"cold": cold, "second": min(s for s, _ in warm), "imports_st": "sentence_transformers imported: True" in warm[-1][1],
            "import_dense": import_seconds(root), "same_files": same, "out": tmp/"warm"/"dense"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--domain", default="all")
    ap.add_argument("--repeats", type=int, default=2, help="second runs (the fastest kept)")
    ap.add_argument("--before", default=None, help="a checkout of the previous code, measured the same way")
    args = ap.parse_args(argv)
    roots = {"this code": HERE, **({"before": Path(args.before).resolve()} if args.before else {})}
    with tempfile.TemporaryDirectory(prefix="bench-dense-start-") as tmp:
        got = {name: measure(root, Path(tmp)/name.replace(" ", "-"), args.domain, args.repeats) for name, root in roots.items()}
        same_as_before = None
        if args.before:
            a, b = got["this code"]["out"], got["before"]["out"]
            same_as_before = all((b/p.name).read_bytes() == p.read_bytes() for p in a.iterdir()
                                 if p.suffix in (".trec", ".json") and not p.name.endswith(".meta.json"))
    ref = got.get("before", got["this code"])["second"]
    rows = [[name, g["cold"], g["second"], ref / g["second"], g["imports_st"], g["import_dense"], g["same_files"]] for name, g in got.items()]
    table(rows, ["code", "cold s", "second run s", "before / this", "2nd imports sentence_transformers", "import brightpro.dense s",
                 "2nd = cold files"])
    if same_as_before is not None: print(f"\nrun files (.trec, .score.json) identical to the previous code's: {same_as_before}")
    path = save("bench_dense_start", {"domain": args.domain, "rows": rows, "same_as_before": same_as_before})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

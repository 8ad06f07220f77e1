"""Start-up of the command line: the import of `brightpro.cli` (timed inside the process), the import of every module
`brightpro evaluate` loads (found by running it once, then imported in a fresh process and timed), `brightpro --help`
and `brightpro evaluate` of a bm25-bright run on the bundled sample (wall, process start included), each the median of
--repeats runs after one warm-up run (so bytecode is compiled, as in an installed package: PYTHONDONTWRITEBYTECODE is
unset for the children). With --before DIR, the same with the brightpro of another checkout on the path (e.g. a
worktree of the previous commit), side by side, and whether both printed the same evaluation. Goal (issue 22): the
import behind `--help` and `evaluate` under 0.3 s. Run:
  .venv/bin/python benchmarks/bench_startup.py [--repeats 7] [--before ../main-before]
"""
from __future__ import annotations
import argparse, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import save, table

HERE = Path(__file__).resolve().parent.parent
IMPORT = "import time; t = time.perf_counter(); import brightpro.cli; print(time.perf_counter() - t)"
# The modules evaluate loads, in the order it loads them: its parser, then (lazily or not) what its handler calls.
LOADED_BY = ("import contextlib, io, json, runpy, sys; before = set(sys.modules); sys.argv = ['brightpro', *sys.argv[1:]]\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    try: runpy.run_module('brightpro.cli', run_name='__main__')\n"
             "    except SystemExit: pass\n"
             "print(json.dumps([m for m in sys.modules if m not in before]))")
# ... imported again, the command line first, in a fresh process: the import time evaluate pays before and during its work.
IMPORT_ALL = ("import importlib, json, sys, time; names = json.loads(sys.argv[1]); t = time.perf_counter(); import brightpro.cli\n"
              "for n in names:\n"
              "    try: importlib.import_module(n)\n"
              "    except Exception: pass   # a name that is not importable on its own (a module's alias)\n"
              "print(time.perf_counter() - t)")


def env_for(root: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1", "BRIGHTPRO_PROGRESS": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def wall(root: Path, argv: list[str]) -> tuple[float, str]:
    "Wall seconds of one `python argv...` with `root` first on the path, and its stdout."
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, *argv], env=env_for(root), capture_output=True, text=True, cwd=root)   # cwd: `-c` and `-m` put it first on the path
    seconds = time.perf_counter() - t0
    if res.returncode: raise SystemExit(f"{root}: {' '.join(argv)} failed:\n{res.stderr[-2000:]}")
    return seconds, res.stdout


def median_of(repeats: int, f) -> float:
    f()   # warm-up: bytecode written, files in the page cache
    return statistics.median(f() for _ in range(repeats))


def measure(root: Path, run_dir: Path, repeats: int) -> dict:
    cli = ["-m", "brightpro.cli"]
    evaluate = [*cli, "evaluate", "--domain", "all", "--run", str(run_dir), "--json"]
    loaded = wall(root, ["-c", LOADED_BY, *evaluate[2:]])[1]
    return {"import brightpro.cli": median_of(repeats, lambda: float(wall(root, ["-c", IMPORT])[1])),
            "import of what evaluate loads": median_of(repeats, lambda: float(wall(root, ["-c", IMPORT_ALL, loaded])[1])),
            "brightpro --help (wall)": median_of(repeats, lambda: wall(root, [*cli, "--help"])[0]),
            "brightpro evaluate, sample (wall)": median_of(repeats, lambda: wall(root, evaluate)[0]),
            "evaluation": wall(root, evaluate)[1].replace(str(root), "<code>"),   # the sample's path names the code's folder
            "_loads": {m: m in json.loads(loaded) for m in ("pandas", "pyarrow")}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=7, help="runs per figure after a warm-up (the median kept)")
    ap.add_argument("--before", default=None, help="a checkout of the previous code, measured the same way")
    args = ap.parse_args(argv)
    roots = {"this code": HERE, **({"before": Path(args.before).resolve()} if args.before else {})}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        wall(HERE, ["-m", "brightpro.cli", "retrieve", "--domain", "all", "--out", f"{tmp}/runs", "--cache-dir", f"{tmp}/cache"])
        got = {name: measure(root, Path(tmp)/"runs"/"bm25-bright", args.repeats) for name, root in roots.items()}
    figures = [k for k in got["this code"] if k != "evaluation" and not k.startswith("_")]
    rows = [[f, *(got[name][f] for name in roots), *([got["before"][f] / got["this code"][f]] if args.before else [])] for f in figures]
    table(rows, ["seconds (median)", *roots, *(["before / this"] if args.before else [])])
    same = got["this code"]["evaluation"] == got["before"]["evaluation"] if args.before else None
    if args.before: print(f"\nevaluate printed the same JSON with both: {same}")
    for name in roots: print(f"evaluate loads, with {name}: {got[name]['_loads']}")
    print(f"load average before the run: {load:.2f}, after: {os.getloadavg()[0]:.2f}")
    print(f"wrote {save('bench_startup', {'rows': rows, 'same_evaluation': same, 'load': load})}")


if __name__ == "__main__":
    main()

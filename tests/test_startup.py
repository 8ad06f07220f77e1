"""Start-up: the command line imports only what the command uses. `brightpro --help`, every subcommand's `--help` and
`models` load none of the heavy libraries (pandas, pyarrow, torch, matplotlib, openai, ...); `evaluate` loads the data
libraries it needs and no model, plotting or LLM library. Which modules a run imported is read from `sys.modules` in the
child process, so the checks do not depend on the machine's speed (the times are in benchmarks/bench_startup.py)."""
import json, os, subprocess, sys

import pytest

from conftest import ROOT

HEAVY = ("pandas", "pyarrow", "scipy", "matplotlib", "seaborn", "torch", "transformers", "sentence_transformers", "openai",
         "numba", "gensim", "papermill", "nbclient", "nbformat", "jupyter_client", "PIL", "pyarrow.dataset")
PROBE = ("import json, runpy, sys; sys.argv = ['brightpro'] + sys.argv[1:]\n"
         "try: runpy.run_module('brightpro.cli', run_name='__main__')\n"
         "finally: print('IMPORTED', json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)").format(heavy=HEAVY)


def probe(*args, env=None):
    "Run `brightpro ARGS` in a child process; (exit code, stdout, the heavy modules it imported)."
    res = subprocess.run([sys.executable, "-c", PROBE, *map(str, args)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    line = next(l for l in res.stderr.splitlines() if l.startswith("IMPORTED "))
    return res.returncode, res.stdout, json.loads(line.split(" ", 1)[1])


@pytest.mark.parametrize("args", [["--help"], ["evaluate", "--help"], ["retrieve", "--help"], ["report", "--help"],
                                  ["agent", "--help"], ["data", "synth", "--help"], ["rerank", "--help"]])
def test_help_imports_no_heavy_library(args):
    code, out, imported = probe(*args)
    assert code == 0 and "usage: brightpro" in out
    assert imported == [], f"brightpro {' '.join(args)} imported {imported}"


def test_a_bad_argument_is_refused_before_any_heavy_import():
    code, _, imported = probe("retrieve", "--retriever", "no-such-retriever")
    assert code == 2 and imported == []


def test_evaluate_imports_the_data_libraries_and_nothing_else_heavy(tmp_path):
    code, _, imported = probe("retrieve", "--domain", "biology", "--out", tmp_path/"runs", "--cache-dir", tmp_path/"cache")
    assert code == 0 and "pyarrow" in imported
    assert "pyarrow.dataset" not in imported   # a parquet file is read as one file: pyarrow.dataset's import is 0.2-0.3 s
    for fmt in (["--json"], []):   # the JSON and the table: scores and means need no DataFrame, so no pandas (0.3 s)
        code, out, imported = probe("evaluate", "--domain", "biology", "--run", tmp_path/"runs"/"bm25-bright", *fmt)
        assert code == 0 and "alpha_ndcg@25" in out
        assert "pyarrow" in imported and "pandas" not in imported, imported
        assert not set(imported) & {"torch", "transformers", "sentence_transformers", "matplotlib", "seaborn", "openai", "papermill", "pyarrow.dataset"}, imported


def test_evaluate_of_a_score_json_run_imports_no_pandas(tmp_path):
    "A score.json run (the harness's format) is read into arrays and scored without pandas too."
    import brightpro.data as data
    qids = data.load_domain("economics").qids
    run = tmp_path/"economics.score.json"
    run.write_text(json.dumps({q: {"economics-doc-1": 2.0, "economics-doc-2": 1.0} for q in qids}))
    code, out, imported = probe("evaluate", "--domain", "economics", "--run", run)
    assert code == 0 and "economics" in out and "pandas" not in imported, imported


def test_a_warm_bm25_retrieve_imports_no_pandas(tmp_path):
    "Issue 22: with the index cached, retrieving reads queries, searches and writes the run without pandas (0.3 s to import)."
    args = ("retrieve", "--domain", "all", "--out", tmp_path/"runs", "--cache-dir", tmp_path/"cache", "--jobs", "1")
    code, _, imported = probe(*args, env={"BRIGHTPRO_CACHE": str(tmp_path/"home")})   # cold: builds the caches
    assert code == 0
    code, out, imported = probe(*args, "--force", env={"BRIGHTPRO_CACHE": str(tmp_path/"home")})
    assert code == 0 and out.count("written") == 7
    assert "pyarrow" in imported and "scipy" in imported and "pandas" not in imported, imported


def test_an_up_to_date_report_imports_no_pandas(tmp_path):
    "Issue 22: a report whose pages are all up to date checks them and writes its index without pandas (0.3 s to import)."
    args = ("report", "--domain", "biology", "--retrievers", "bm25-bright", "--agent", "none", "--out", tmp_path/"reports",
            "--cache-dir", tmp_path/"cache")
    code, out, imported = probe(*args)   # cold: builds the page and the summary, whose table the index reads
    assert code == 0 and "summary: built" in out and (tmp_path/"reports"/"summary"/"tables"/"domain_means.csv").is_file(), out
    code, out, imported = probe(*args)
    assert code == 0 and "biology: up to date" in out and "summary: up to date" in out, out
    assert "pyarrow" in imported and "pandas" not in imported, imported

"""Faults of the report path (issue 16): hostile query texts, saved results or pages edited by hand, a full disk, two
reports on one folder, a script without a main guard, workers whose parent is killed, a domain that cannot be read."""
import os, shutil, signal, subprocess, sys, textwrap, time
from itertools import cycle
from pathlib import Path

import pandas as pd
import pytest

from brightpro.core import LOCK_FILE, BrightproError
from brightpro.data import load_domains
from brightpro.evaluate import evaluate_runs
from brightpro.report import build_report
from brightpro.results import RESULT_FILES, read_results

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT/"brightpro"/"sample"
ONE = dict(retrievers=["bm25-bright"], agent=None)


@pytest.fixture
def dataset(tmp_path):
    "A local dataset folder: a copy of the sample's Bright-Pro data."
    root = tmp_path/"data"
    shutil.copytree(SAMPLE/"bright_pro", root)
    return root


def page_means(page: Path) -> dict:
    df = pd.read_csv(page/"tables"/"metrics_long.csv")
    return {(r.system, r.metric): r.mean for r in df.itertuples()}


def true_means(out: Path, dataset, domain: str) -> dict:
    "The means evaluate computes from the report's own run files, independently of the saved results."
    doms = load_domains([domain], dataset)
    ev = evaluate_runs([out/"runs"/"bm25-bright"], doms, k=[5, 10, 25, 50])[0]
    pq = ev.per_query
    return {c: pq[c].mean() for c in pq.columns if "@" in c}


def check_numbers(out: Path, dataset, domain: str):
    shown, truth = page_means(out/domain), true_means(out, dataset, domain)
    for metric, value in truth.items():
        if ("bm25-bright", metric) in shown: assert shown["bm25-bright", metric] == pytest.approx(value, abs=1e-12), metric


# case 5: query texts with carriage returns and other control characters
def test_query_texts_with_control_characters_round_trip(dataset, tmp_path):
    path = dataset/"examples"/"biology.parquet"
    ex = pd.read_parquet(path)
    seps = cycle(["\r", "\r\n", "\t\x0b", "\x0c", "\x1c\x1d\x1e", "\x85", "\u2028", "\r\r\n\n"])
    ex["query"] = [q.replace(" ", next(seps), 3) + "\r" for q in ex["query"]]
    ex.to_parquet(path)
    out = tmp_path/"out"
    rep = build_report(dataset, "biology", **ONE, out=out, cache_dir=tmp_path/"cache")
    assert rep.pages[0].status == "built", rep.pages[0].error
    res = read_results(out/"results", "biology")
    assert res.queries["qid"].tolist() == ex["id"].tolist()
    assert res.queries["query"].tolist() == ex["query"].tolist()
    check_numbers(out, dataset, "biology")


def test_duplicated_query_ids_in_saved_results_are_refused(dataset, tmp_path):
    out = tmp_path/"out"
    build_report(dataset, "biology", **ONE, out=out, cache_dir=tmp_path/"cache")
    path = out/"results"/"biology"/RESULT_FILES["queries"]
    df = pd.read_csv(path, dtype=str)
    pd.concat([df, df.iloc[:1]]).to_csv(path, index=False)
    with pytest.raises(BrightproError, match=r"queries.csv.*query id .* more than once"):
        read_results(out/"results", "biology")


# case 13: saved results and pages edited or truncated after they were written
@pytest.fixture
def built(dataset, tmp_path):
    out = tmp_path/"out"
    rep = build_report(dataset, "biology", **ONE, out=out, cache_dir=tmp_path/"cache")
    assert rep.pages[0].status == "built"
    return out


def again(dataset, out):
    return build_report(dataset, "biology", **ONE, out=out, cache_dir=out.parent/"cache")


def test_edited_saved_results_are_rebuilt(dataset, built):
    path = built/"results"/"biology"/RESULT_FILES["per_query"]
    good = path.read_bytes()
    df = pd.read_csv(path, dtype={"qid": str})
    df = df.iloc[1:].copy()                       # a row deleted
    df["ndcg@10"] = 0.123                         # and a value edited
    df.to_csv(path, index=False)
    rep = again(dataset, built)
    assert path.read_bytes() == good              # written again as it was: the page, built from those bytes, is up to date
    assert rep.pages[0].status == "up to date"
    assert "static_per_query.csv changed since it was written" in rep.to_text()
    check_numbers(built, dataset, "biology")


def test_a_truncated_page_is_rebuilt(dataset, built):
    html = built/"biology"/"report.html"
    good = html.read_bytes()
    html.write_bytes(good[:len(good)//3])
    table = built/"biology"/"tables"/"metrics_long.csv"
    table.write_text(table.read_text().replace("0.", "9.", 1))
    rep = again(dataset, built)
    assert rep.pages[0].status == "built"
    assert "rebuilt: report.html, tables/metrics_long.csv changed since they were built" in rep.to_text()
    assert html.stat().st_size == len(good)
    check_numbers(built, dataset, "biology")
    assert [p.status for p in again(dataset, built).pages] == ["up to date"]


# low: a page whose results lost a run
def test_results_that_lost_a_run_are_refused_with_one_line(dataset, tmp_path):
    out = tmp_path/"out"
    build_report(dataset, "biology", retrievers=["bm25-bright", "bm25"], agent=None, out=out, cache_dir=tmp_path/"cache")
    path = out/"results"/"biology"/RESULT_FILES["per_query"]
    df = pd.read_csv(path, dtype={"qid": str})
    df[df.run != "bm25"].to_csv(path, index=False)
    with pytest.raises(BrightproError, match=r"static_per_query.csv: no row of run bm25"):
        read_results(out/"results", "biology")


def report_args(dataset, out, *more):
    return ["report", "--dataset", dataset, "--domain", "biology", "--retrievers", "bm25-bright", "--agent", "none",
            "--out", out, "--cache-dir", Path(out).parent/"cache", *more]


def popen_cli(*args):
    return subprocess.Popen([sys.executable, "-m", "brightpro.cli", *map(str, args)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(check, timeout=120, every=0.1):
    end = time.time() + timeout
    while time.time() < end:
        if (got := check()): return got
        time.sleep(every)
    raise AssertionError("timed out waiting")


# case 3: two reports on one folder
def test_a_second_report_on_the_same_folder_stops_at_once(dataset, tmp_path, cli):
    out = tmp_path/"out"
    first = popen_cli(*report_args(dataset, out))
    try:
        wait_for(lambda: (out/LOCK_FILE).is_file() and (out/LOCK_FILE).read_text().startswith("report"))
        second = cli(*report_args(dataset, out))
        still_running = first.poll() is None
    finally:
        stdout, stderr = first.communicate(timeout=600)
    assert second.returncode == 2 and still_running
    assert second.stderr.strip().splitlines() == [f"brightpro: error: {out} is in use by another brightpro report (pid {first.pid}); "
                                                  "wait for it to finish or choose another folder"]
    assert first.returncode == 0, stderr
    assert "biology: built -> biology/report.html" in stdout and (out/"biology"/"report.html").is_file()
    assert (out/"summary"/"report.html").is_file() and (out/"index.html").is_file()


# case 12: a full disk
def digests(folder: Path) -> dict:
    from brightpro.core import file_digest
    return {p.relative_to(folder).as_posix(): file_digest(p) for p in folder.rglob("*") if p.is_file() and p.name != LOCK_FILE}


def fill(disk: Path, leave: int) -> Path:
    "Fill `disk` but `leave` bytes."
    filler = disk/"filler"
    with open(filler, "wb") as f:
        try:
            while True: f.write(b"\0" * 65536); f.flush()
        except OSError: pass
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def test_a_full_disk_stops_the_report_with_one_line_and_loses_nothing(dataset, tmp_path, tmpfs, cli):
    disk = tmpfs("disk", "size=40m")
    out = disk/"out"
    r = cli(*report_args(dataset, out)[:-2], "--cache-dir", tmp_path/"cache")
    assert r.returncode == 0, r.stderr
    before = digests(out)
    shutil.rmtree(out/"summary")                        # one page to build again, on a disk with no room for it
    before = {k: v for k, v in before.items() if not k.startswith("summary/")}
    filler = fill(disk, 64 * 1024)
    for more in ([], ["--force"]):
        r = cli(*report_args(dataset, out)[:-2], "--cache-dir", tmp_path/"cache", *more)
        assert r.returncode == 2, (more, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"brightpro: error: {out}") and "the disk is full" in lines[0], (more, r.stderr)
        assert "Traceback" not in r.stderr + r.stdout and "JSON" not in r.stderr + r.stdout
        now = digests(out)
        assert set(before) <= set(now), more                      # nothing already written lost: the results and pages
        assert {k: now[k] for k in before if not k.startswith("runs/")} == {k: v for k, v in before.items() if not k.startswith("runs/")}
        assert not (out/".staging").exists() or not any((out/".staging").iterdir())
    filler.unlink()
    r = cli(*report_args(dataset, out)[:-2], "--cache-dir", tmp_path/"cache")
    assert r.returncode == 0 and "summary: built ->" in r.stdout, r.stdout + r.stderr   # with room again, it goes on


# case 14: build_report(jobs=2) from a script without a main guard
def test_a_script_without_a_main_guard_is_told_what_to_do(dataset, tmp_path):
    script = tmp_path/"make_report.py"
    script.write_text(textwrap.dedent(f"""
        from brightpro.report import build_report
        print("script starts", flush=True)
        build_report({str(dataset)!r}, "biology,economics", retrievers=["bm25-bright"], agent=None, out={str(tmp_path/'out')!r},
                     jobs=2, cache_dir={str(tmp_path/'cache')!r}, echo=lambda line: print(line, flush=True))
    """))
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("brightpro.core.BrightproError: a page worker process stopped") and 'if __name__ == "__main__":' in last
    assert "jobs=1" in last
    assert r.stdout.count("results:") == 1        # the workers did not build the report again


# case 15: workers whose parent is killed
def children() -> dict:
    "{pid: ppid} of every process, from /proc."
    out = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit(): continue
        try: stat = (p/"stat").read_text()
        except OSError: continue
        out[int(p.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def descendants(pid: int) -> set:
    table, found, todo = children(), set(), [pid]
    while todo:
        p = todo.pop()
        for c, pp in table.items():
            if pp == p and c not in found: found.add(c); todo.append(c)
    return found


def alive(pid: int) -> bool:
    try: state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError: return False
    return state not in ("Z", "X")


def kill_parent_and_check_children(proc, want_workers: int):
    try:
        kids = wait_for(lambda: (k := descendants(proc.pid)) and len(k) >= want_workers and k, timeout=300, every=0.05)
        time.sleep(1.0)
        kids = descendants(proc.pid) | kids
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        end = time.time() + 10
        while time.time() < end and any(alive(k) for k in kids): time.sleep(0.2)
        left = [k for k in kids if alive(k)]
    finally:
        for k in descendants(proc.pid) | kids:
            try: os.kill(k, signal.SIGKILL)
            except OSError: pass
    assert left == [], [Path(f"/proc/{k}/cmdline").read_text().replace("\0", " ")[:200] for k in left if alive(k)]


def test_report_workers_exit_when_the_parent_is_killed(dataset, tmp_path):
    proc = popen_cli("report", "--dataset", dataset, "--domain", "biology,economics", "--retrievers", "bm25-bright", "--agent", "none",
                     "--out", tmp_path/"out", "--cache-dir", tmp_path/"cache", "--jobs", "2")
    # the page workers and their kernels: wait until both workers run a kernel
    kill_parent_and_check_children(proc, want_workers=4)


def test_retrieve_workers_exit_when_the_parent_is_killed(dataset, tmp_path):
    "Each worker blocks reading its documents (a named pipe nobody writes): a retrieval that never ends, until the kill."
    for d in ("biology", "economics"):
        (dataset/"documents"/f"{d}.parquet").unlink(); os.mkfifo(dataset/"documents"/f"{d}.parquet")
    proc = popen_cli("retrieve", "--dataset", dataset, "--domain", "biology,economics", "--jobs", "2", "--out", tmp_path/"runs",
                     "--cache-dir", tmp_path/"cache")
    kill_parent_and_check_children(proc, want_workers=2)


# low: one domain that cannot be read fails alone
def test_a_domain_that_cannot_be_read_fails_alone(dataset, tmp_path, cli):
    docs = dataset/"documents"/"economics.parquet"
    pd.read_parquet(docs).rename(columns={"content": "text"}).to_parquet(docs)
    r = cli("report", "--dataset", dataset, "--domain", "biology,economics", "--retrievers", "bm25-bright", "--agent", "none",
            "--out", tmp_path/"out", "--cache-dir", tmp_path/"cache")
    assert r.returncode == 1, r.stderr
    assert "biology: built -> biology/report.html" in r.stdout and "summary: built -> summary/report.html" in r.stdout
    assert "economics: failed" in r.stdout
    assert f"  error: retrieval with bm25-bright failed: {docs}: documents of economics have no field content" in r.stdout
    assert "1 domain failed" in (tmp_path/"out"/"index.html").read_text(encoding="utf-8")

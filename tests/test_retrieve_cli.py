"""`brightpro retrieve` end to end on the bundled sample: files, up-to-date skipping, BRIGHT configs, bad input,
ties written in corpus order, whole-run checks, an out folder checked before computing."""
import contextlib, json, shutil, subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from brightpro.data import load_bright, load_domain, load_domains
from brightpro.retrieve import retrieve
from brightpro.bm25 import BM25Bright
from brightpro.runs import read_trec_run

SAMPLE = Path(__file__).resolve().parents[1]/"brightpro"/"sample"


def test_writes_trec_score_json_and_meta(cli, tmp_path):
    res = cli("retrieve", "--domain", "biology,economics", "--retriever", "bm25-bright", "--top", "20",
              "--out", tmp_path/"runs", "--cache-dir", tmp_path/"cache")
    assert res.returncode == 0, res.stderr
    folder = tmp_path/"runs"/"bm25-bright"
    d = load_domain("biology")
    run = read_trec_run(folder/"biology.trec")
    assert sorted(run.qids.tolist()) == sorted(d.qids)
    assert all(n == 20 for n in run.lengths)
    lines = (folder/"biology.trec").read_text().splitlines()
    parts = [l.split() for l in lines]
    assert all(len(p) == 6 and p[1] == "Q0" and p[5] == "bm25-bright" for p in parts)
    for q in d.qids:  # ranks 1..20, scores descending
        rows = [p for p in parts if p[0] == q]
        assert [int(p[3]) for p in rows] == list(range(1, 21))
        assert all(float(a[4]) >= float(b[4]) for a, b in zip(rows, rows[1:]))
    scores = json.loads((folder/"biology.score.json").read_text())
    assert set(scores) == set(d.qids) and all(len(v) == 20 for v in scores.values())
    meta = json.loads((folder/"biology.meta.json").read_text())
    assert meta["retriever"]["k1"] == 0.9 and meta["retriever"]["b"] == 0.4
    assert meta["fingerprint"]["corpus_hash"] and meta["dataset"]["dataset"] == "sample"
    # the scores are the harness's: recompute one query directly
    r = BM25Bright(); r.index(d.documents.column("id"), d.documents.column("content"))
    q = d.qids[0]
    direct = r.search({q: d.query_text[q]}, 20)[q]
    assert direct[:5] == [p[2] for p in parts if p[0] == q][:5]


def test_up_to_date_domains_are_skipped_unless_forced(cli, tmp_path):
    args = ["retrieve", "--domain", "biology", "--retriever", "bm25", "--top", "10", "--out", tmp_path, "--cache-dir", tmp_path/"c"]
    assert "written" in cli(*args).stdout
    again = cli(*args)
    assert again.returncode == 0 and "up to date" in again.stdout
    assert "written" in cli(*args, "--force").stdout
    assert "written" in cli(*args[:-4], "--top", "11", "--out", tmp_path, "--cache-dir", tmp_path/"c").stdout  # a changed setting


def test_bright_reasoning_queries_and_excluded_ids(tmp_path):
    # a local BRIGHT copy of the sample's biology with one excluded id
    root = tmp_path/"bright"
    shutil.copytree(SAMPLE/"bright", root)
    ex = pq.read_table(root/"examples"/"biology.parquet").to_pylist()
    base = load_bright("biology", dataset=root)
    first = retrieve(load_domains("biology", root, benchmark="bright"), "bm25-bright", top=5, out=tmp_path/"runs", cache_dir=tmp_path/"c")
    top = read_trec_run(first[0]["paths"]["trec"])
    q0 = str(ex[0]["id"]); banned = top[q0][0]
    ex[0]["excluded_ids"] = [x for x in ex[0]["excluded_ids"] if x != "N/A"] + [banned]
    pq.write_table(pa.Table.from_pylist(ex), root/"examples"/"biology.parquet")
    res = retrieve(load_domains("biology", root, benchmark="bright"), "bm25-bright", top=5, out=tmp_path/"runs", cache_dir=tmp_path/"c")
    run = read_trec_run(res[0]["paths"]["trec"])
    assert banned not in run[q0] and len(run[q0]) == 5 and run[q0][:4] == top[q0][1:5]
    # reasoning-augmented queries: a separate run folder, and the texts of the gpt4_reason config
    res = retrieve(load_domains("biology", root, benchmark="bright", queries="gpt4_reason"), "bm25-bright", top=5, out=tmp_path/"runs", cache_dir=tmp_path/"c")
    assert res[0]["paths"]["trec"].parent.name == "bright-bm25-bright-gpt4_reason"
    reason = load_bright("biology", dataset=root, queries="gpt4_reason")
    meta = json.loads(res[0]["paths"]["meta"].read_text())
    from brightpro.retrieve import queries_hash
    assert meta["fingerprint"]["queries_hash"] == queries_hash(reason.query_text) != queries_hash(base.query_text)


@pytest.mark.parametrize("args,message", [
    (["--retriever", "bm99"], "unknown retriever 'bm99'"),
    (["--retriever", "dense:/no/such/model"], "cannot load dense model"),
    (["--option", "k1"], "expected KEY=VALUE"),
    (["--top", "0"], "top must be a positive integer"),
    (["--long"], "pass benchmark='bright'"),
    (["--queries", "gpt5"], "unknown query source 'gpt5'"),
    (["--queries", "no/such/file.jsonl"], "no/such/file.jsonl: no such query file"),
    (["--option", "k1=abc"], "option k1='abc' for bm25-bright: must be a number > 0"),
    (["--retriever", "dense", "--option", "batch_size=0"], "option batch_size=0 for dense: must be a positive integer"),
    (["--retriever", "dense", "--option", "batchsize=4"], "unknown option 'batchsize' for dense; valid options: batch_size"),
])
def test_bad_input_exits_2(cli, tmp_path, args, message):
    res = cli("retrieve", "--domain", "biology", "--out", tmp_path, "--cache-dir", tmp_path/"c", *args)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("brightpro: error:") and message in res.stderr and "Traceback" not in res.stderr


def test_empty_corpus_and_bad_cache_dir_exit_2(cli, tmp_path):
    root = tmp_path/"data"
    shutil.copytree(SAMPLE/"bright_pro", root)
    pq.write_table(pa.table({"id": pa.array([], pa.string()), "content": pa.array([], pa.string())}), root/"documents"/"biology.parquet")
    res = cli("retrieve", "--dataset", root, "--domain", "biology", "--out", tmp_path/"runs", "--cache-dir", tmp_path/"c")
    assert res.returncode == 2 and "empty" in res.stderr and "Traceback" not in res.stderr
    (tmp_path/"afile").write_text("x")
    res = cli("retrieve", "--domain", "biology", "--out", tmp_path/"runs", "--cache-dir", tmp_path/"afile")
    assert res.returncode == 2 and "is a file" in res.stderr


def test_corrupt_cached_index_is_rebuilt_by_the_command(cli, tmp_path):
    args = ["retrieve", "--domain", "biology", "--top", "10", "--out", tmp_path/"runs", "--cache-dir", tmp_path/"c"]
    assert cli(*args).returncode == 0
    first = (tmp_path/"runs"/"bm25-bright"/"biology.trec").read_text()
    for f in (tmp_path/"c").glob("bm25-bright/*/*.npy"): f.write_bytes(b"\x00corrupt")
    res = cli(*args, "--force")
    assert res.returncode == 0, res.stderr
    assert (tmp_path/"runs"/"bm25-bright"/"biology.trec").read_text() == first


def test_runs_are_what_evaluate_reads(cli, tmp_path):
    "brightpro retrieve, then brightpro evaluate on the run folder, as a user chains them."
    assert cli("retrieve", "--domain", "biology,economics", "--out", tmp_path/"runs", "--cache-dir", tmp_path/"c").returncode == 0
    res = cli("evaluate", "--domain", "biology,economics", "--run", tmp_path/"runs"/"bm25-bright", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    text = json.dumps(out)
    assert "ndcg@10" in text and "alpha_ndcg@25" in text


# --- runs written like the harness's; whole-run checks; the out folder -------------------------------------------
def tied_dataset(root: Path):
    "The sample in the hub layout, its biology corpus replaced by blocks of equal BM25 scores, ids in neither ascending nor descending order."
    shutil.copytree(SAMPLE/"bright_pro", root)
    ids = [f"d{(i * 17) % 40:02d}" for i in range(40)]
    texts = ["apple banana cherry" if i % 2 == 0 else "dog cat mouse" for i in range(40)]
    pq.write_table(pa.table({"id": ids, "content": texts}), root/"documents"/"biology.parquet")
    pq.write_table(pa.Table.from_pylist([
        {"id": "0", "query": "apple", "gold_ids": [ids[0], ids[2]], "reference_answer": f"x [{ids[0]}]"},
        {"id": "1", "query": "mouse", "gold_ids": [ids[1]], "reference_answer": f"y [{ids[1]}]"}]), root/"examples"/"biology.parquet")
    pq.write_table(pa.Table.from_pylist([
        {"id": "biology-0-a1", "content": "a", "weight": 2, "supporting_docs": [ids[0], ids[2]]},
        {"id": "biology-1-a1", "content": "b", "weight": 1, "supporting_docs": [ids[1]]}]), root/"aspects"/"biology.parquet")
    return ids, texts


@pytest.mark.parametrize("top", [5, 25])  # a cut inside the block of 20 equal scores, and across the block of zeros
def test_tied_documents_are_written_in_corpus_order(tmp_path, top):
    ids, texts = tied_dataset(tmp_path/"data")
    res = retrieve(load_domains("biology", tmp_path/"data"), "bm25-bright", top=top, out=tmp_path/"runs", cache_dir=tmp_path/"c")
    trec = [line.split() for line in res[0]["paths"]["trec"].read_text().splitlines()]
    scores = json.loads(res[0]["paths"]["score"].read_text())
    r = BM25Bright(); r.index(ids, texts)
    for qid, text in (("0", "apple"), ("1", "mouse")):
        harness = [d for d, _ in sorted(zip(ids, r.scores(text).tolist()), key=lambda x: x[1], reverse=True)[:top]]
        rows = [p for p in trec if p[0] == qid]
        assert [p[2] for p in rows] == harness and [int(p[3]) for p in rows] == list(range(1, top + 1))
        assert list(scores[qid]) == harness


def test_a_run_cut_short_or_edited_is_written_again(tmp_path):
    kw = dict(top=10, out=tmp_path/"runs", cache_dir=tmp_path/"c")
    first = retrieve(load_domains("biology"), "bm25-bright", **kw)[0]
    trec, score = first["paths"]["trec"], first["paths"]["score"]
    whole_trec, whole_score = trec.read_text(), score.read_text()
    meta = json.loads(first["paths"]["meta"].read_text())
    assert meta["files"]["trec"]["bytes"] == trec.stat().st_size and len(meta["files"]["score"]["blake2b"]) == 32
    trec.write_text(whole_trec[: len(whole_trec) // 2])  # a kill during a rewrite or a copy
    assert retrieve(load_domains("biology"), "bm25-bright", **kw)[0]["status"] == "written"
    assert trec.read_text() == whole_trec
    score.write_text(whole_score.replace("1", "2", 1))  # same size, edited
    assert retrieve(load_domains("biology"), "bm25-bright", **kw)[0]["status"] == "written"
    assert score.read_text() == whole_score
    assert retrieve(load_domains("biology"), "bm25-bright", **kw)[0]["status"] == "up to date"


def test_out_in_the_way_of_a_file_fails_before_computing(cli, tmp_path):
    (tmp_path/"afile").write_text("x")
    res = cli("retrieve", "--domain", "biology", "--out", tmp_path/"afile", "--cache-dir", tmp_path/"c")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-800:]
    assert "is a file, not a folder" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path/"c"/"bm25-bright").exists()  # nothing was indexed
    assert (tmp_path/"afile").read_text() == "x"


@contextlib.contextmanager
def read_only_tmpfs(path):
    "A read-only tmpfs at `path` (root can write through chmod 0555, not through a read-only mount); skips where not permitted."
    path.mkdir(parents=True, exist_ok=True)
    if not shutil.which("mount"): pytest.skip("no mount command here")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(path)], capture_output=True, text=True)
    if res.returncode: pytest.skip(f"cannot mount a tmpfs here (needs root): {res.stderr.strip()}")
    try: yield path
    finally: subprocess.run(["umount", "-l", str(path)], capture_output=True)


def test_read_only_out_fails_before_computing(cli, tmp_path):
    with read_only_tmpfs(tmp_path/"ro") as ro:
        res = cli("retrieve", "--domain", "biology", "--out", ro, "--cache-dir", tmp_path/"c")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-800:]
    assert "cannot write this folder" in res.stderr and "Read-only file system" in res.stderr
    assert not (tmp_path/"c"/"bm25-bright").exists()


# --- several domains at once (--jobs): worker processes write what one process writes ------------------------------
def test_jobs_write_the_files_of_one_process(cli, tmp_path):
    domains = "biology,economics,stackoverflow"
    for jobs in ("1", "2"):
        res = cli("retrieve", "--domain", domains, "--top", "50", "--out", tmp_path/jobs, "--cache-dir", tmp_path/f"cache{jobs}",
                  "--jobs", jobs)
        assert res.returncode == 0, res.stderr
        assert [l.split(":")[0] for l in res.stdout.splitlines()] != [] and "Traceback" not in res.stderr
    for d in domains.split(","):
        for suffix in (".trec", ".score.json"):
            one, two = (tmp_path/j/"bm25-bright"/f"{d}{suffix}" for j in ("1", "2"))
            assert two.read_bytes() == one.read_bytes(), (d, suffix)


@pytest.mark.parametrize("jobs", ["0", "-2", "x"])
def test_bad_jobs_exit_2(cli, tmp_path, jobs):
    res = cli("retrieve", "--domain", "biology", "--out", tmp_path, "--cache-dir", tmp_path/"c", "--jobs", jobs)
    assert res.returncode == 2 and "jobs" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path/"bm25-bright").exists() or not any((tmp_path/"bm25-bright").iterdir())


def test_a_failing_domain_in_a_worker_is_reported_and_finished_runs_stay(cli, tmp_path):
    root = tmp_path/"data"
    shutil.copytree(SAMPLE/"bright_pro", root)
    bad = root/"documents"/"economics.parquet"
    bad.write_bytes(b"PAR1 not a parquet file")
    res = cli("retrieve", "--dataset", root, "--domain", "biology,economics", "--top", "10", "--out", tmp_path/"runs",
              "--cache-dir", tmp_path/"c", "--jobs", "2")
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "economics.parquet" in res.stderr, res.stderr
    # biology, the larger corpus, went first: its run is written and complete
    assert "biology" in res.stdout and (tmp_path/"runs"/"bm25-bright"/"biology.trec").exists()

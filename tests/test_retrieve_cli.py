"""`brightpro retrieve` end to end on the bundled sample: files, up-to-date skipping, BRIGHT configs, bad input."""
import json, shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from brightpro.data import load_bright, load_domain
from brightpro.retrieve import retrieve
from brightpro.retrievers import BM25Bright
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
    first = retrieve(root, "biology", "bm25-bright", top=5, out=tmp_path/"runs", benchmark="bright", cache_dir=tmp_path/"c")
    top = read_trec_run(first[0]["paths"]["trec"])
    q0 = str(ex[0]["id"]); banned = top[q0][0]
    ex[0]["excluded_ids"] = [x for x in ex[0]["excluded_ids"] if x != "N/A"] + [banned]
    pq.write_table(pa.Table.from_pylist(ex), root/"examples"/"biology.parquet")
    res = retrieve(root, "biology", "bm25-bright", top=5, out=tmp_path/"runs", benchmark="bright", cache_dir=tmp_path/"c")
    run = read_trec_run(res[0]["paths"]["trec"])
    assert banned not in run[q0] and len(run[q0]) == 5 and run[q0][:4] == top[q0][1:5]
    # reasoning-augmented queries: a separate run folder, and the texts of the gpt4_reason config
    res = retrieve(root, "biology", "bm25-bright", top=5, out=tmp_path/"runs", benchmark="bright", queries="gpt4_reason", cache_dir=tmp_path/"c")
    assert res[0]["paths"]["trec"].parent.name == "bright-bm25-bright-gpt4_reason"
    reason = load_bright("biology", dataset=root, queries="gpt4_reason")
    meta = json.loads(res[0]["paths"]["meta"].read_text())
    from brightpro.retrieve import queries_hash
    assert meta["fingerprint"]["queries_hash"] == queries_hash(reason.query_text) != queries_hash(base.query_text)


@pytest.mark.parametrize("args,message", [
    (["--retriever", "bm99"], "unknown retriever 'bm99'"),
    (["--retriever", "dense:/no/such/model"], "cannot load dense model"),
    (["--option", "k1"], "expected KEY=VALUE"),
    (["--top", "0"], "--top must be"),
    (["--queries", "gpt4_reason"], "--benchmark bright"),
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

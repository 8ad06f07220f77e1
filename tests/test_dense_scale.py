"""dense at size: length-ordered encoding (against an unsorted bare sentence-transformers loop), several devices through
sentence-transformers' process pool, shards in separate processes (byte for byte one unsharded run), concurrent writers
of one embedding cache, bad --shard values."""
import multiprocessing, subprocess, sys

import numpy as np
import pytest

from brightpro.core import BrightproError
from brightpro.data import load_domains
from brightpro.dense import Dense, EmbeddingCache, _pools, _stop_pools, check_shard, default_dense_model
from brightpro.retrieve import retrieve

from conftest import ROOT


@pytest.fixture(scope="module")
def bio():
    return load_domains("biology", "sample")


@pytest.fixture(scope="module")
def sample(bio):
    "40 documents of the bundled biology sample (real lengths: short and long) and three of its queries."
    d = bio["biology"]
    texts = d.documents.column("content").to_pylist()[:40]
    return texts, [f"d{i}" for i in range(len(texts))], dict(list(d.query_text.items())[:3])


@pytest.fixture(scope="module")
def bare():
    from sentence_transformers import SentenceTransformer
    return SentenceTransformer(default_dense_model(), device="cpu")


def test_length_order_batches_and_equals_an_unsorted_bare_loop(sample, bare, monkeypatch):
    texts, _, _ = sample
    ref = np.concatenate([bare.encode(texts[i:i + 8], normalize_embeddings=True) for i in range(0, len(texts), 8)])  # corpus order
    r = Dense(batch_size=8)
    m, batches, real = r.model, [], type(r.model).encode
    monkeypatch.setattr(m, "encode", lambda xs, **kw: (batches.append(list(xs)), real(m, xs, **kw))[1], raising=False)
    e = r.encode(texts)
    np.testing.assert_allclose(e, ref, rtol=1e-4, atol=2e-6)   # written back in corpus order; float noise only
    count = lambda xs: [len(x) for x in bare.tokenizer(xs, add_special_tokens=False, truncation=True, max_length=256)["input_ids"]]
    assert [len(b) for b in batches] == [8] * 5
    for a, b in zip(batches, batches[1:]):
        assert min(count(a)) >= max(count(b))   # longest first: each batch's shortest at least the next one's longest
    assert sorted(sum(batches, [])) == sorted(texts)


def test_two_cpu_devices_through_the_pool_equal_one_device(sample):
    texts, ids, queries = sample
    one, two = Dense(batch_size=8), Dense(device="cpu,cpu", batch_size=8)
    one.index(ids, texts); two.index(ids, texts)
    try:
        assert len(_pools[id(two.model)][1]["processes"]) == 2   # two worker processes did the encoding
        np.testing.assert_allclose(two.embeddings, one.embeddings, rtol=1e-4, atol=2e-6)
        a, b = one.search(queries, 10), two.search(queries, 10)
        for q in queries: assert a[q] == b[q]
    finally: _stop_pools()


def _doc_caches(folder):
    "The document embedding caches in `folder` (not the query caches, not models.json)."
    return [p for p in folder.iterdir() if p.is_dir() and "-queries-" not in p.name]


def test_a_shard_reports_what_remains_and_writes_no_run(bio, tmp_path):
    res = retrieve(bio, "dense", top=10, out=tmp_path/"runs", cache_dir=tmp_path/"c", options={"chunk": 16}, shard="2/3")
    assert res[0]["status"] == "shard 2/3 encoded; shards 1, 3 are missing: run them, then run without --shard to search"
    assert not (tmp_path/"runs").exists()
    (cache_folder,) = _doc_caches(tmp_path/"c"/"dense")
    assert EmbeddingCache(cache_folder, 92, 384).missing() == [(0, 32), (64, 92)]   # only rows 32..63 (chunk grid of 16)


def _run(*args):
    return [sys.executable, "-m", "brightpro.cli", "retrieve", "--domain", "biology", "--retriever", "dense", "--option", "chunk=16",
            "--top", "20", *map(str, args)]


def test_concurrent_shards_then_one_search_equal_one_unsharded_run_byte_for_byte(cli, tmp_path):
    plain = subprocess.run(_run("--out", tmp_path/"plain", "--cache-dir", tmp_path/"c1"), capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert plain.returncode == 0, plain.stderr[-800:]
    shards = [subprocess.Popen(_run("--out", tmp_path/"sharded", "--cache-dir", tmp_path/"c2", "--shard", f"{i}/3"), cwd=ROOT, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in (1, 2, 3)]   # three writers of one cache at once
    outs = [p.communicate(timeout=600) for p in shards]
    assert [p.returncode for p in shards] == [0, 0, 0], [e[-800:] for _, e in outs]
    lines = [o.strip() for o, _ in outs]
    assert all(line.startswith(f"biology: shard {i}/3 encoded; ") for i, line in zip((1, 2, 3), lines)), lines
    assert any("every shard is present: run without --shard to search" in line for line in lines), lines   # the last to finish
    assert not (tmp_path/"sharded").exists()   # no run written by a shard
    (c1,), (c2,) = _doc_caches(tmp_path/"c1"/"dense"), _doc_caches(tmp_path/"c2"/"dense")
    assert c1.name == c2.name
    manifest = (c2/"manifest.json").read_text()
    assert [c[:2] for c in EmbeddingCache(c2, 92, 384).chunks] == [[0, 16], [16, 32], [32, 48], [48, 64], [64, 80], [80, 92]]
    assert (c2/"embeddings.f32").read_bytes() == (c1/"embeddings.f32").read_bytes()   # the same chunks, the same bytes
    final = subprocess.run(_run("--out", tmp_path/"sharded", "--cache-dir", tmp_path/"c2"), capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert final.returncode == 0 and "biology: written" in final.stdout, final.stderr[-800:]
    assert (c2/"manifest.json").read_text() == manifest   # searched without encoding
    for f in ("biology.trec", "biology.score.json"):
        assert (tmp_path/"sharded"/"dense"/f).read_bytes() == (tmp_path/"plain"/"dense"/f).read_bytes(), f


def _writer(path, part, parts, n, dim):
    cache = EmbeddingCache(path, n, dim); cache.prepare()
    for row in range(part, n, parts):   # interleaved rows: every manifest update races the others
        cache.write(row, np.full((1, dim), row, np.float32))


def test_concurrent_writers_of_one_cache_lose_no_chunk(tmp_path):
    n, dim, parts = 120, 4, 4
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(tmp_path/"c", i, parts, n, dim)) for i in range(parts)]
    for p in procs: p.start()
    for p in procs: p.join(120)
    assert [p.exitcode for p in procs] == [0] * parts
    cache = EmbeddingCache(tmp_path/"c", n, dim)
    assert cache.missing() == [] and len(cache.chunks) == n
    np.testing.assert_array_equal(np.asarray(cache.read())[:, 0], np.arange(n, dtype=np.float32))


def test_bad_shard_values_are_one_line(cli, bio, tmp_path):
    for bad in ("0/3", "4/3", "2", "a/b", "1/0", (True, 2)):
        with pytest.raises(BrightproError, match=r"shard must be I/N, shard I of N shards with 1 <= I <= N \(e.g. 2/3\)"): check_shard(bad)
    with pytest.raises(BrightproError, match="shards are for dense retrievers"):
        retrieve(bio, "bm25-bright", out=tmp_path, cache_dir=tmp_path, shard="1/2")
    res = cli("retrieve", "--domain", "biology", "--retriever", "dense", "--shard", "4/3", "--out", tmp_path, "--cache-dir", tmp_path/"c")
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-800:]
    assert res.stderr.strip() == "brightpro: error: shard must be I/N, shard I of N shards with 1 <= I <= N (e.g. 2/3), got '4/3'"

"""dense: equal to a bare SentenceTransformer, its embedding cache (resume, corruption, stale keys, full and read-only
disks, timed chunks), hub models that cannot be fetched, ties at the cut, fusion against ranx."""
import contextlib, json, shutil, subprocess

import numpy as np
import pytest

from brightpro.core import BrightproError
from brightpro.dense import Dense, EmbeddingCache, default_dense_model
from brightpro.retrievers import Fusion, get_retriever, rrf
from brightpro.runs import Run

TEXTS = [f"{w} number {i} about {w}s and other things" for i, w in
         enumerate(["volcano", "earthquake", "glacier", "river", "desert", "ocean current", "cloud", "rainforest"] * 3)]
IDS = [f"doc{i}" for i in range(len(TEXTS))]
QUERIES = {"q1": "why do volcanoes erupt", "q2": "how are glaciers formed", "q3": "deserts and rain"}


@pytest.fixture(scope="module")
def bare():
    from sentence_transformers import SentenceTransformer
    return SentenceTransformer(default_dense_model(), device="cpu")


def test_dense_equals_bare_sentence_transformer(bare, tmp_path):
    r = Dense(cache_dir=tmp_path, chunk=5)
    r.index(IDS, TEXTS)
    run = r.search(QUERIES, k=7)
    d = bare.encode(TEXTS, normalize_embeddings=True)
    q = bare.encode(list(QUERIES.values()), normalize_embeddings=True)
    s = q @ d.T
    for i, qid in enumerate(QUERIES):
        order = np.argsort(-s[i], kind="stable")[:7]
        assert run[qid] == [IDS[j] for j in order]
        np.testing.assert_allclose(list(run.to_scores()[qid].values()), s[i][order], rtol=1e-4, atol=1e-5)


def test_small_doc_blocks_give_the_same_top_k(tmp_path):
    a = Dense(cache_dir=tmp_path); a.index(IDS, TEXTS)
    b = Dense(cache_dir=tmp_path, doc_block=4); b.index(IDS, TEXTS)
    assert b.encoded_chunks == 0  # served from the cache
    ra, rb = a.search(QUERIES, 10), b.search(QUERIES, 10)
    for q in QUERIES:
        assert ra[q] == rb[q]


def test_interrupted_encoding_resumes(tmp_path, monkeypatch):
    calls = {"n": 0}
    real = Dense.encode
    def flaky(self, texts, prefix=""):
        calls["n"] += 1
        if calls["n"] == 3: raise KeyboardInterrupt
        return real(self, texts, prefix)
    monkeypatch.setattr(Dense, "encode", flaky)
    with pytest.raises(KeyboardInterrupt):
        Dense(cache_dir=tmp_path, chunk=5).index(IDS, TEXTS)  # 5 chunks; dies in the third
    monkeypatch.setattr(Dense, "encode", real)
    r = Dense(cache_dir=tmp_path, chunk=5); r.index(IDS, TEXTS)
    assert r.encoded_chunks == 3  # chunks 3, 4, 5 only
    fresh = Dense(chunk=5); fresh.index(IDS, TEXTS)  # no cache at all
    np.testing.assert_allclose(np.asarray(r.embeddings), fresh.embeddings, rtol=1e-5, atol=1e-6)


def test_corrupt_chunk_is_reencoded_never_used(tmp_path):
    r = Dense(cache_dir=tmp_path, chunk=5); r.index(IDS, TEXTS)
    good = np.array(r.embeddings)
    (f,) = list(tmp_path.glob("dense/*/embeddings.f32"))
    raw = bytearray(f.read_bytes()); raw[5 * 384 * 4 + 10] ^= 0xFF; f.write_bytes(bytes(raw))  # a byte of chunk 2
    again = Dense(cache_dir=tmp_path, chunk=5); again.index(IDS, TEXTS)
    assert again.encoded_chunks == 1
    np.testing.assert_array_equal(np.asarray(again.embeddings), good)
    (m,) = list(tmp_path.glob("dense/*/manifest.json"))
    m.write_text("{not json")
    third = Dense(cache_dir=tmp_path, chunk=5); third.index(IDS, TEXTS)
    assert third.encoded_chunks == 5
    f.write_bytes(b"short")  # truncated file: rebuilt
    fourth = Dense(cache_dir=tmp_path, chunk=5); fourth.index(IDS, TEXTS)
    assert fourth.encoded_chunks == 5


def test_changed_corpus_or_setting_never_reuses_vectors(tmp_path):
    Dense(cache_dir=tmp_path).index(IDS, TEXTS)
    changed = TEXTS[:-1] + ["a different last document"]
    r = Dense(cache_dir=tmp_path); r.index(IDS, changed)
    assert r.encoded_chunks == 1
    s = Dense(cache_dir=tmp_path, max_length=64); s.index(IDS, TEXTS)
    assert s.encoded_chunks == 1
    t = Dense(cache_dir=tmp_path, doc_instruction="passage: "); t.index(IDS, TEXTS)
    assert t.encoded_chunks == 1
    assert len([p for p in tmp_path.glob("dense/*") if p.is_dir()]) == 4   # beside models.json, the model facts


def test_instructions_are_filled_with_the_domain():
    # recipes are keyed by exact id (issue 17): Qwen3-Embedding-0.6B is in neither paper, so the 8B's recipe is used here
    r = Dense("Qwen/Qwen3-Embedding-8B", domain="earth_science")
    assert r.query_instruction == "Instruct: Given a earth_science post, retrieve relevant passages that help answer the post\nQuery:"
    assert r.doc_instruction == ""
    r = Dense("reasonir/ReasonIR-8B", domain="biology")   # the authors' config has a newline before <|embed|>
    assert r.query_instruction == "<|user|>\nGiven a biology post, retrieve relevant passages that help answer the post\n<|embed|>\n"
    assert Dense("Qwen/Qwen3-Embedding-0.6B", domain="biology").query_instruction == ""   # no recipe: no instruction


def test_unknown_model_is_a_clear_error(tmp_path):
    r = get_retriever(f"dense:{tmp_path}/no-such-model")
    with pytest.raises(BrightproError, match="cannot load dense model"):
        r.index(IDS, TEXTS)


def test_rrf_equals_ranx():
    from ranx import Run as RanxRun
    from ranx.fusion import rrf as ranx_rrf
    a = {"q": [("d1", 3.0), ("d2", 2.0), ("d3", 1.0)], "r": [("d9", 1.0), ("d8", 0.5)]}
    b = {"q": [("d3", 9.0), ("d4", 8.0), ("d1", 7.0)], "r": [("d8", 2.0), ("d7", 1.0)]}
    a, b = (Run.from_dict({q: dict(v) for q, v in x.items()}) for x in (a, b))
    ours = rrf([a, b], k=10)
    ref = ranx_rrf([RanxRun(a.to_scores()), RanxRun(b.to_scores())], k=60).to_dict()
    for q in ours:
        assert ours.to_scores()[q] == pytest.approx(ref[q])
        assert ours[q] == sorted(ref[q], key=lambda d: (-ref[q][d], d))


def test_fusion_of_two_retrievers():
    f = get_retriever("fusion:bm25+bm25-bright")
    assert isinstance(f, Fusion) and f.name == "fusion:bm25+bm25-bright"
    f.index(IDS, TEXTS)
    run = f.search(QUERIES, 5)
    assert all(len(run[q]) == 5 for q in run)
    assert [m["name"] for m in f.metadata()["components"]] == ["bm25", "bm25-bright"]


# --- faults: a full disk, a read-only cache, a hub model that cannot be fetched -----------------------------------
@contextlib.contextmanager
def tmpfs(path, size, ro=False):
    "A small tmpfs mounted at `path` for the test (needs root); the test is skipped where mounting is not permitted."
    path.mkdir(parents=True, exist_ok=True)
    if not shutil.which("mount"): pytest.skip("no mount command here")
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}" + (",ro" if ro else ""), "tmpfs", str(path)], capture_output=True, text=True)
    if res.returncode: pytest.skip(f"cannot mount a tmpfs here (needs root): {res.stderr.strip()}")
    try: yield path
    finally: subprocess.run(["umount", "-l", str(path)], capture_output=True)


def remount(path, options):
    subprocess.run(["mount", "-o", f"remount,{options}", str(path)], check=True, capture_output=True)


def test_full_disk_is_one_clear_line_not_sigbus(cli, tmp_path):
    "The sample's biology needs 141 kB of embeddings; a 16 kB disk is refused before any encoding (it died with SIGBUS)."
    with tmpfs(tmp_path/"small", "16k") as small:
        res = cli("retrieve", "--domain", "biology", "--retriever", "dense", "--top", "5", "--out", tmp_path/"runs", "--cache-dir", small)
    assert res.returncode == 2, (res.returncode, res.stderr[-800:])
    assert res.stderr.startswith("brightpro: error: not enough free space") and len(res.stderr.strip().splitlines()) == 1
    assert str(small) in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path/"runs"/"dense"/"biology.trec").exists()


def test_disk_full_while_writing_keeps_the_chunks_and_resumes(tmp_path, monkeypatch):
    with tmpfs(tmp_path/"small", "16k") as small:
        real = shutil.disk_usage
        monkeypatch.setattr(shutil, "disk_usage", lambda p: real(p)._replace(free=1 << 40))  # space taken by another writer meanwhile
        with pytest.raises(BrightproError, match="the disk is full") as e:
            Dense(cache_dir=small, chunk=5).index(IDS, TEXTS)
        assert str(small) in str(e.value)
        (m,) = small.glob("dense/*/manifest.json")
        kept = json.loads(m.read_text())["chunks"]
        assert kept and [c[:2] for c in kept] == [[0, 5]]
        monkeypatch.undo()
        remount(small, "size=1m")  # space freed
        r = Dense(cache_dir=small, chunk=5); r.index(IDS, TEXTS)
        assert r.encoded_chunks == 4  # the chunk written before the disk filled is reused
        fresh = Dense(); fresh.index(IDS, TEXTS)
        np.testing.assert_allclose(np.asarray(r.embeddings), fresh.embeddings, rtol=1e-5, atol=1e-6)


def test_read_only_cache_serves_what_it_has_and_refuses_new_writes_clearly(cli, tmp_path):
    with tmpfs(tmp_path/"ro", "1m") as ro:
        Dense(cache_dir=ro).index(IDS, TEXTS)
        remount(ro, "ro")
        r = Dense(cache_dir=ro); r.index(IDS, TEXTS)
        assert r.encoded_chunks == 0
        with pytest.raises(BrightproError, match="read-only file system") as e:
            Dense(cache_dir=ro, max_length=64).index(IDS, TEXTS)  # other settings: new embeddings to write
        assert str(ro) in str(e.value)
        res = cli("retrieve", "--domain", "biology", "--retriever", "dense", "--top", "5", "--out", tmp_path/"runs", "--cache-dir", ro)
    assert res.returncode == 2 and "read-only file system" in res.stderr and "Traceback" not in res.stderr, res.stderr[-800:]
    assert len(res.stderr.strip().splitlines()) == 1


def test_chunk_size_follows_the_measured_speed():
    from brightpro.dense import next_chunk_size
    assert next_chunk_size(256, 256, 25.6) == 300   # 10 docs/s: 30 s of encoding
    assert next_chunk_size(256, 256, 0.1) == 1024   # fast: at most 4x per chunk
    assert next_chunk_size(256, 256, 512.0) == 15   # 0.5 docs/s: smaller at once
    assert next_chunk_size(4, 1, 100.0) == 1        # never below one document


def test_default_chunks_are_timed_and_recorded_as_spans(tmp_path, monkeypatch):
    from brightpro import dense
    assert Dense().chunk is None  # not a fixed 4096 documents (minutes of CPU encoding lost on a kill)
    clock, real = {"t": 0.0}, Dense.encode
    def timed(self, texts, prefix=""):
        clock["t"] += len(texts) / 10.0  # a CPU encoding 10 documents a second
        return real(self, texts, prefix)
    monkeypatch.setattr(dense, "perf_counter", lambda: clock["t"])
    monkeypatch.setattr(dense, "FIRST_CHUNK", 4)
    monkeypatch.setattr(dense, "CHUNK_SECONDS", 1.0)
    monkeypatch.setattr(Dense, "encode", timed)
    r = Dense(cache_dir=tmp_path); r.index(IDS, TEXTS)
    (m,) = tmp_path.glob("dense/*/manifest.json")
    assert [c[:2] for c in json.loads(m.read_text())["chunks"]] == [[0, 4], [4, 14], [14, 24]]  # 0.4 s, then 1 s each
    (f,) = tmp_path.glob("dense/*/embeddings.f32")
    raw = bytearray(f.read_bytes()); raw[6 * 384 * 4] ^= 0xFF; f.write_bytes(bytes(raw))  # a byte of row 6
    assert EmbeddingCache(f.parent, len(TEXTS), 384).missing() == [(4, 14)]  # found by its span
    again = Dense(cache_dir=tmp_path); again.index(IDS, TEXTS)
    assert again.encoded_chunks == 2  # rows 4..13 only, in a 4 then a 6 document chunk
    fresh = Dense(); fresh.index(IDS, TEXTS)
    np.testing.assert_allclose(np.asarray(again.embeddings), fresh.embeddings, rtol=1e-5, atol=1e-6)


def test_unknown_hub_model_fails_at_once_offline(cli, tmp_path):
    res = cli("retrieve", "--domain", "biology", "--retriever", "dense:no-such-org/no-such-model", "--out", tmp_path,
              "--cache-dir", tmp_path/"c", env={"HF_HUB_OFFLINE": "1"}, timeout=30)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-800:]
    assert "HF_HUB_OFFLINE is set" in res.stderr and "hf download no-such-org/no-such-model" in res.stderr


def test_unreachable_hub_fails_at_once(cli, tmp_path):
    "With the hub allowed but unreachable, one request with a short timeout, not 80 s of retries."
    res = cli("retrieve", "--domain", "biology", "--retriever", "dense:no-such-org/no-such-model", "--out", tmp_path,
              "--cache-dir", tmp_path/"c", env={"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": "http://127.0.0.1:9"}, timeout=30)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-800:]
    assert "the hub cannot be reached" in res.stderr and "hf download" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_tied_documents_across_the_cut_are_kept_in_corpus_order():
    from brightpro.dense import _best_k
    emb = np.eye(4, dtype=np.float32)[np.random.default_rng(0).integers(0, 2, 3000)]  # two kinds of document: many ties
    first = np.flatnonzero(emb[:, 0] == 1)[:50].tolist()
    for block in (100, 1000, 65_536):
        _, i = _best_k(np.array([[1, 0, 0, 0]], np.float32), emb, 50, block, True)
        assert sorted(i[0].tolist()) == first, block


def test_a_cache_written_with_fixed_chunks_is_reused(tmp_path):
    "Caches written before chunks were spans (manifest {'chunk': 5, 'chunks': {index: checksum}}) keep serving."
    Dense(cache_dir=tmp_path, chunk=5).index(IDS, TEXTS)
    (m,) = tmp_path.glob("dense/*/manifest.json")
    new = json.loads(m.read_text())
    m.write_text(json.dumps({"n": new["n"], "dim": new["dim"], "chunk": 5, "chunks": {str(s // 5): d for s, _, d in new["chunks"]}}))
    r = Dense(cache_dir=tmp_path); r.index(IDS, TEXTS)
    assert r.encoded_chunks == 0

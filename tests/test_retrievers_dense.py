"""dense: equal to a bare SentenceTransformer, its embedding cache (resume, corruption, stale keys), fusion against ranx."""

import numpy as np
import pytest

from brightpro.core import BrightproError
from brightpro.retrievers import Dense, Fusion, default_dense_model, get_retriever, rrf
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
    assert len(list(tmp_path.glob("dense/*"))) == 4


def test_instructions_are_filled_with_the_domain():
    r = Dense("Qwen/Qwen3-Embedding-0.6B", domain="earth_science")
    assert r.query_instruction == "Instruct: Given a earth_science post, retrieve relevant passages that help answer the post\nQuery:"
    assert r.doc_instruction == ""
    r = Dense("reasonir/ReasonIR-8B", domain="biology")
    assert r.query_instruction.startswith("<|user|>\nGiven a biology post")


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

"""Dense that uses the hardware it has (issue 22): the device found automatically, the batch by device, cache verdicts
kept by stat instead of hashing every open, and a run served from the cache that imports no sentence-transformers."""
import json, os, subprocess, sys
from pathlib import Path

import numpy as np
import pytest
import torch

import brightpro.core
import brightpro.dense as dense_mod
from brightpro.core import bytes_digest
from brightpro.dense import CPU_BATCH, GPU_BATCH, Dense, EmbeddingCache, auto_device, default_batch_size, default_dense_model

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bare():
    from sentence_transformers import SentenceTransformer
    return SentenceTransformer(default_dense_model(), device="cpu")


def test_auto_device_cuda_then_mps_then_cpu_said_once(monkeypatch, capsys):
    monkeypatch.setattr(dense_mod, "_said", set())
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert auto_device() == "cuda" and auto_device() == "cuda"
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "cuda" in err[0]   # said once per process
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert auto_device() == "mps" and "mps" in capsys.readouterr().err
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert auto_device() == "cpu"
    assert capsys.readouterr().err == ""   # the CPU, as before, says nothing


def test_dense_loads_on_the_found_device_and_device_cpu_forces_it(monkeypatch):
    seen = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(dense_mod, "_said", set())
    monkeypatch.setattr(dense_mod, "load_sentence_transformer", lambda model, device, *a, **kw: seen.append(device) or object())
    auto, forced = Dense(), Dense(device="cpu")
    auto.model; forced.model
    assert seen == ["cuda", "cpu"] and (auto.encoding_device, forced.encoding_device) == ("cuda", "cpu")


def test_batch_by_device_unless_the_user_or_recipe_sets_one():
    assert (CPU_BATCH, GPU_BATCH) == (32, 128)
    assert [default_batch_size(d) for d in ("cpu", "cpu,cpu", "cuda", "cuda:0,cuda:1", "mps")] == [32, 32, 128, 128, 128]
    assert Dense().batch_size is None and Dense(batch_size=5).batch_size == 5
    assert Dense("Qwen/Qwen3-Embedding-8B").batch_size == 8   # the recipe's


def test_batches_follow_the_device_and_embeddings_stay_the_same(bare, monkeypatch, tmp_path):
    texts = [f"text {i} " + "word " * (i % 13) for i in range(40)]
    r = Dense(device="cpu")
    calls = []
    real = r.model.encode
    monkeypatch.setattr(r.model, "encode", lambda t, **kw: calls.append(len(t)) or real(t, **kw))
    cpu = r.encode(texts)
    assert calls == [32, 8]
    m = r.model
    monkeypatch.setattr(dense_mod, "load_sentence_transformer", lambda *a, **k: m)
    calls.clear(); r.encoding_device = "cuda"   # as if on a GPU (the model stays on the CPU): one batch of up to 128
    gpu = r.encode(texts)
    assert calls == [40]
    ref = bare.encode(texts, normalize_embeddings=True, batch_size=1)   # an independent loop, one text per batch
    assert np.abs(cpu - ref).max() < 1e-5 and np.abs(gpu - ref).max() < 1e-5
    # the batch is not in the cache key
    a, b = Dense(cache_dir=tmp_path, batch_size=4), Dense(cache_dir=tmp_path, batch_size=64)
    a.corpus_hash = b.corpus_hash = "h"
    assert a._cache(3).path == b._cache(3).path


def _count_hashes(monkeypatch):
    n = [0]
    def counted(b): n[0] += 1; return bytes_digest(b)
    monkeypatch.setattr(dense_mod, "bytes_digest", counted)
    return n


def test_unchanged_cache_is_not_hashed_again_a_changed_one_is(tmp_path, monkeypatch):
    v = np.arange(24, dtype=np.float32).reshape(4, 6)
    c = EmbeddingCache(tmp_path/"c", 4, 6); c.prepare(); c.write(0, v[:2]); c.write(2, v[2:])
    n = _count_hashes(monkeypatch)
    EmbeddingCache(tmp_path/"c", 4, 6); EmbeddingCache(tmp_path/"c", 4, 6)
    assert n[0] == 4 and not (tmp_path/"c"/"verified.json").exists()   # just written: always hashed (racy)
    monkeypatch.setattr(brightpro.core, "RACY_NS", 0)                       # as if the file were old
    assert EmbeddingCache(tmp_path/"c", 4, 6).missing() == [] and n[0] == 6   # hashed once, verdict recorded
    assert EmbeddingCache(tmp_path/"c", 4, 6).missing() == [] and n[0] == 6   # the verdict holds: no hashing
    raw = bytearray(c.file.read_bytes()); raw[2 * 24 + 3] ^= 0xFF; c.file.write_bytes(bytes(raw))   # a byte of row 2
    assert EmbeddingCache(tmp_path/"c", 4, 6).missing() == [(2, 4)] and n[0] == 8   # changed: every chunk hashed again
    st = c.file.stat(); raw[2 * 24 + 3] ^= 0xFF; raw[5] ^= 0xFF; c.file.write_bytes(bytes(raw))   # row 2 repaired, row 0 damaged
    os.utime(c.file, ns=(st.st_atime_ns, st.st_mtime_ns))   # the mtime restored: the change time still moved
    assert EmbeddingCache(tmp_path/"c", 4, 6).missing() == [(0, 2)] and n[0] == 10


def test_corrupt_chunk_of_an_old_cache_is_reencoded(tmp_path, monkeypatch):
    monkeypatch.setattr(brightpro.core, "RACY_NS", 0)
    texts, ids = ["a volcano erupts", "glaciers carve valleys", "deserts are dry", "an ocean current"], list("abcd")
    r = Dense(cache_dir=tmp_path, chunk=2); r.index(ids, texts)
    good = np.array(r.embeddings)
    folder = next(p for p in (tmp_path/"dense").iterdir() if p.is_dir() and "queries" not in p.name)
    Dense(cache_dir=tmp_path, chunk=2).index(ids, texts)     # verdict recorded
    assert (folder/"verified.json").exists()
    raw = bytearray((folder/"embeddings.f32").read_bytes()); raw[3 * 384 * 4 + 7] ^= 0x55
    (folder/"embeddings.f32").write_bytes(bytes(raw))
    again = Dense(cache_dir=tmp_path, chunk=2); again.index(ids, texts)
    assert again.encoded_chunks == 1 and np.abs(np.asarray(again.embeddings) - good).max() < 1e-6


PROBE = ("import runpy, sys; sys.argv = ['brightpro'] + sys.argv[1:]\n"
         "try: runpy.run_module('brightpro.cli', run_name='__main__')\n"
         "finally: print('imported:', sorted(m for m in ('sentence_transformers', 'torch', 'transformers') if m in sys.modules), file=sys.stderr)")


def test_second_cli_run_loads_no_model_and_writes_the_same_files(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "BRIGHTPRO_PROGRESS": "0"}
    base = [sys.executable, "-c", PROBE, "retrieve", "--retriever", "dense", "--domain", "biology", "--cache-dir", str(tmp_path/"cache")]
    first = subprocess.run([*base, "--out", str(tmp_path/"a")], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "'sentence_transformers'" in first.stderr
    second = subprocess.run([*base, "--out", str(tmp_path/"b")], env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "imported: []" in second.stderr, second.stderr[-2000:]   # neither torch nor sentence-transformers
    a, b = tmp_path/"a"/"dense", tmp_path/"b"/"dense"
    for name in ("biology.trec", "biology.score.json"):
        assert (a/name).read_bytes() == (b/name).read_bytes()
    meta = lambda p: {k: v for k, v in json.loads(p.read_text()).items() if k != "written"}
    assert meta(a/"biology.meta.json") == meta(b/"biology.meta.json")
    assert meta(b/"biology.meta.json")["retriever"]["device"] == "cpu"   # where the embeddings were encoded, read from the cache


DEFERRED = """
import sys, numpy as np, torch
from brightpro.dense import Dense
r = Dense(); r.index(["a", "b", "c"], ["the similarity of sparse embeddings", "dense ones", "and a third text"])
print("sklearn after encoding:", "sklearn" in sys.modules)
print("scipy.optimize after encoding:", "scipy.optimize" in sys.modules)
e = np.asarray(r.embeddings, dtype=np.float32)
from sentence_transformers.util import manhattan_sim
got = manhattan_sim(torch.tensor(e).to_sparse(), torch.tensor(e).to_sparse()).numpy()   # sparse: through scikit-learn
print("difference from numpy:", float(np.abs(got + np.abs(e[:, None] - e[None]).sum(-1)).max()))
print("sklearn after the sparse similarity:", "sklearn.metrics" in sys.modules)
from transformers.loss.loss_for_object_detection import linear_sum_assignment   # a name transformers took from scipy.optimize
print("matching:", linear_sum_assignment([[4, 1], [2, 3]])[1].tolist())
print("scipy.optimize after the matching:", "scipy.optimize" in sys.modules)
"""


def test_dense_encodes_without_scikit_learn_or_scipy_optimize_which_come_when_called():
    r = subprocess.run([sys.executable, "-c", DEFERRED], capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = dict(line.split(": ") for line in r.stdout.strip().splitlines())
    assert lines["sklearn after encoding"] == "False"
    assert float(lines["difference from numpy"]) < 1e-5
    assert lines["sklearn after the sparse similarity"] == "True"
    assert lines["scipy.optimize after encoding"] == "False"
    assert lines["matching"] == "[1, 0]"   # the cheaper assignment, 1 + 2 against 4 + 3
    assert lines["scipy.optimize after the matching"] == "True"


def test_dense_on_the_cpu_packs_its_linear_layers_and_a_pool_does_not():
    "One process on the CPU multiplies through packed oneDNN layers; a pool's copy moves to its devices, so it keeps torch's own."
    one, pool = ({type(m).__name__ for m in Dense(device=d).model.modules()} for d in ("cpu", "cpu,cpu"))
    assert "PackedLinear" in one and "Linear" not in one
    assert "Linear" in pool and "PackedLinear" not in pool

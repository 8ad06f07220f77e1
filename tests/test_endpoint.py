"""`api:<model>` against a real HTTP server on 127.0.0.1 serving the packaged MiniLM: rankings equal local `dense`,
faults retried or named in one line, no request on a repeated run, kill -9 then resume gives the same bytes, the key
in no file, bad input refused with one line."""
import json, os, signal, subprocess, sys, textwrap, time
from pathlib import Path

import numpy as np
import pytest

from brightpro.core import BrightproError
from brightpro.data import load_domain
from brightpro.dense import Dense
from brightpro.endpoint import Endpoint, LocalEmbeddingServer, minilm_encoder
from brightpro.runs import read_trec_run

from conftest import run_cli

KEY = "sk-brightpro-test-9f3c1e77"   # must appear in no file written


@pytest.fixture(scope="module")
def minilm():
    "A real embeddings server on 127.0.0.1 serving the packaged all-MiniLM-L6-v2 through sentence-transformers."
    with LocalEmbeddingServer(minilm_encoder()) as s: yield s


@pytest.fixture(scope="module")
def biology():
    d = load_domain("biology")
    return d, d.documents.column("id").to_pylist(), d.documents.column("content").to_pylist()


def _files_text(*folders) -> bytes:
    return b"".join(p.read_bytes() for f in folders for p in Path(f).rglob("*") if p.is_file())


def test_cli_rankings_equal_local_dense_and_a_repeated_run_asks_nothing(minilm, tmp_path, biology):
    env = {"BRIGHTPRO_EMBED_API_KEY": KEY, "OPENAI_API_KEY": "", "BRIGHTPRO_EMBED_BASE_URL": ""}
    common = ["--domain", "biology", "--top", "92", "--cache-dir", tmp_path/"cache"]
    before = minilm.count
    api = run_cli("retrieve", "--retriever", "api:all-MiniLM-L6-v2", "--option", f"base_url={minilm.base_url}", "--option", "concurrency=3",
                  "--option", "batch_size=16", "--option", "price_per_million=0.02", "--out", tmp_path/"out", *common, env=env)
    assert api.returncode == 0, api.stderr
    d, ids, texts = biology
    local = Dense()   # the same model, local (itself checked against bare sentence-transformers in test_retrievers_dense)
    local.index(ids, texts)
    a = read_trec_run(tmp_path/"out"/"api-all-MiniLM-L6-v2"/"biology.trec").to_dict()
    b = local.search(dict(d.query_text), 92).to_dict()
    assert set(a) == set(b) and len(a) == 6
    top10 = np.mean([len(set(a[q][:10]) & set(b[q][:10])) / 10 for q in b])
    same = np.mean([a[q] == b[q] for q in b])
    print(f"\nendpoint vs local dense on the sample's biology: top-10 overlap {top10:.3f}, identical full rankings {same:.3f}")
    assert top10 >= 0.99 and same >= 5 / 6
    meta = json.loads((tmp_path/"out"/"api-all-MiniLM-L6-v2"/"biology.meta.json").read_text())["retriever"]
    served = minilm.count
    assert meta["calls"] == served - before and meta["tokens"]["prompt"] > 0 and meta["endpoint"] == minilm.base_url
    assert meta["cost"] == pytest.approx(meta["tokens"]["prompt"] * 0.02 / 1e6)
    # a repeated run, forced, into another folder: documents and queries come from the cache
    again = run_cli("retrieve", "--retriever", "api:all-MiniLM-L6-v2", "--option", f"base_url={minilm.base_url}", "--out", tmp_path/"again",
                    "--force", *common, env=env)
    assert again.returncode == 0, again.stderr
    assert minilm.count == served
    assert json.loads((tmp_path/"again"/"api-all-MiniLM-L6-v2"/"biology.meta.json").read_text())["retriever"]["calls"] == 0
    assert read_trec_run(tmp_path/"again"/"api-all-MiniLM-L6-v2"/"biology.trec").to_dict() == a
    assert KEY.encode() not in _files_text(tmp_path/"out", tmp_path/"again", tmp_path/"cache")


def test_vectors_through_the_endpoint_equal_a_bare_sentence_transformers_loop(minilm):
    from sentence_transformers import SentenceTransformer
    from brightpro.dense import default_dense_model
    texts = ["why do volcanoes erupt", "glaciers are made of compacted snow", "a desert gets little rain"]
    bare = SentenceTransformer(default_dense_model(), device="cpu").encode(texts, normalize_embeddings=True)
    got = Endpoint("all-MiniLM-L6-v2", base_url=minilm.base_url, batch_size=2).encode(texts)
    np.testing.assert_allclose(got, bare, atol=1e-5)


@pytest.mark.parametrize("faults", [["429"], ["500", "500"], ["drop"], ["nan"], ["empty"], ["dim"]])
def test_a_passing_fault_is_retried(faults):
    with LocalEmbeddingServer(faults=faults) as s:
        t0 = time.perf_counter()
        v = Endpoint("toy", base_url=s.base_url, max_retries=2, dimensions=None).encode(["a b", "c d e", "f"])
        assert v.shape == (3, 16) and np.isfinite(v).all()
        assert s.count == len(faults) + 1
        if faults == ["429"]: assert time.perf_counter() - t0 >= 0.9   # the server's Retry-After: 1 was honoured


@pytest.mark.parametrize("fault, words", [("500", "kept answering HTTP 500"), ("dim", "vectors of different lengths"),
                                          ("nan", "non-finite values"), ("empty", "an empty reply"),
                                          ("drop", "cannot be reached")])
def test_a_lasting_fault_is_named_in_one_line_with_its_rows(fault, words):
    with LocalEmbeddingServer(faults=[None] + [fault] * 10) as s:
        r = Endpoint("toy", base_url=s.base_url, max_retries=1, batch_size=2, concurrency=1)
        with pytest.raises(BrightproError) as e: r.encode(["a", "b", "c", "d"])
    msg = str(e.value)
    assert "\n" not in msg and words in msg and "document rows 2-3" in msg and "model toy" in msg and "2 tries" in msg, msg


def test_a_vector_of_another_dimension_than_before_is_refused():
    with LocalEmbeddingServer() as s:
        r = Endpoint("toy", base_url=s.base_url, dimensions=8, max_retries=0)
        assert r.encode(["a"]).shape == (1, 8) and s.requests[-1]["texts"] == 1
        r.dimensions = None   # the endpoint now sends its full 16
        with pytest.raises(BrightproError, match="vectors of dimension 16, not 8"): r.encode(["a"])


def test_the_key_is_sent_but_never_shown(monkeypatch):
    monkeypatch.setenv("BRIGHTPRO_EMBED_API_KEY", KEY)
    with LocalEmbeddingServer(faults=["500"] * 5) as s:
        r = Endpoint("toy", base_url=s.base_url.replace("http://", f"http://user:{KEY}@"), max_retries=0)
        with pytest.raises(BrightproError) as e: r.encode(["a"])
        assert r.client.api_key == KEY
    assert KEY not in str(e.value) and KEY not in json.dumps(r.metadata()) and KEY not in repr(r.settings())


KILLED = textwrap.dedent("""
    import sys
    from brightpro.data import load_domain
    from brightpro.endpoint import Endpoint
    d = load_domain("biology")
    Endpoint("all-MiniLM-L6-v2", base_url=sys.argv[1], cache_dir=sys.argv[2], chunk=8, batch_size=4, concurrency=2).index(
        d.documents.column("id"), d.documents.column("content"))
""")


def test_kill_9_during_encoding_then_resume_gives_the_same_bytes(tmp_path, biology):
    _, ids, texts = biology
    with LocalEmbeddingServer(minilm_encoder(), delay=0.15) as s:
        p = subprocess.Popen([sys.executable, "-c", KILLED, s.base_url, str(tmp_path/"killed")], env={**os.environ, "BRIGHTPRO_EMBED_API_KEY": KEY})
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:
            m = list((tmp_path/"killed").glob("dense/*/manifest.json"))
            if m and len(json.loads(m[0].read_text())["chunks"]) >= 3: break
            time.sleep(0.05)
        assert p.poll() is None, "the encoding ended before it could be killed"
        os.kill(p.pid, signal.SIGKILL); p.wait()
        done = len(json.loads(m[0].read_text())["chunks"])
        assert done < 12
        s.delay = 0
        resumed = Endpoint("all-MiniLM-L6-v2", base_url=s.base_url, cache_dir=tmp_path/"killed", chunk=8, batch_size=4, concurrency=2)
        resumed.index(ids, texts)
        assert resumed.encoded_chunks == 12 - done   # 92 documents in chunks of 8: only the missing ones
        fresh = Endpoint("all-MiniLM-L6-v2", base_url=s.base_url, cache_dir=tmp_path/"fresh", chunk=8, batch_size=4, concurrency=2)
        fresh.index(ids, texts)
    (a,), (b,) = (tmp_path/"killed").glob("dense/*/embeddings.f32"), (tmp_path/"fresh").glob("dense/*/embeddings.f32")
    assert a.read_bytes() == b.read_bytes() and a.parent.name == b.parent.name
    assert KEY.encode() not in _files_text(tmp_path)


def test_cli_bad_input_is_one_line(tmp_path):
    env = {"BRIGHTPRO_EMBED_BASE_URL": "", "OPENAI_BASE_URL": ""}
    args = ["retrieve", "--domain", "biology", "--retriever", "api:some-model", "--out", tmp_path, "--cache-dir", tmp_path/"c"]
    for extra, words in [([], "no embedding endpoint: give --option base_url=URL"),
                         (["--option", "base_url=http://127.0.0.1:9/v1", "--option", "concurrency=0"], "concurrency=0 for api:some-model: must be a positive integer"),
                         (["--option", "base_url=localhost:8000"], "must be an http:// or https:// URL")]:
        r = run_cli(*args, *extra, env=env)
        assert r.returncode != 0 and words in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr


def test_an_api_model_asked_of_dense_points_to_api():
    with pytest.raises(BrightproError, match=r"served by an API.*'api:text-embedding-3-large'"):
        Dense("text-embedding-3-large").model


# BRIGHT's retrievers.py (xlang-ai/BRIGHT@d99e839): the fields its API embedders send per role
BRIGHT_API_ROLES = {"embed-english-v3.0": ("input_type", "search_query", "search_document"),
                    "voyage-large-2-instruct": ("input_type", "query", "document"),
                    "text-embedding-preview-0409": ("task_type", "RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT")}


@pytest.mark.parametrize("model", sorted(BRIGHT_API_ROLES))
def test_brights_api_embedders_send_their_role_fields(model, tmp_path):
    field, query, document = BRIGHT_API_ROLES[model]
    with LocalEmbeddingServer() as s:
        r = Endpoint(model, base_url=s.base_url, benchmark="bright", domain="biology", cache_dir=tmp_path)
        r.index(["a", "b"], ["volcanoes erupt", "glaciers melt"])
        sent_doc = s.requests[-1]
        r.search({"q": "why do volcanoes erupt"}, 2)
        sent_query = s.requests[-1]
    assert (sent_doc[field], sent_query[field]) == (document, query) and sent_doc["model"] == model
    assert r.query_instruction == r.doc_instruction == ""                      # BRIGHT's configs have no instruction
    if model == "text-embedding-preview-0409": assert sent_doc["dimensions"] == sent_query["dimensions"] == 768
    assert r.metadata()["recipe"]["benchmark"] == "bright"


def test_an_endpoint_without_role_fields_sends_none(tmp_path):
    with LocalEmbeddingServer() as s:
        Endpoint("toy", base_url=s.base_url, cache_dir=tmp_path).index(["a"], ["volcanoes erupt"])
    assert set(s.requests[-1]) == {"model", "texts"}

"""bm25-bright against gensim (the harness's scorer) and bm25s's formula, the persisted indexes, bad input."""
import gzip, json, math
from pathlib import Path

import numpy as np
import pytest

from brightpro.core import BrightproError
from brightpro.bm25 import BM25Bright, BM25S
from brightpro.lucene import LuceneEnglishAnalyzer
from brightpro.retriever import top_k
from brightpro.retrievers import get_retriever

TOPICS = Path(__file__).resolve().parents[1].parent/"shared"/"data"/"bright-topics"


def real_texts(limit=400):
    "Real BRIGHT query and answer texts (code, URLs, numbers, possessives) when ../shared/data is present."
    files = sorted(TOPICS.glob("*original.jsonl.gz"))
    if not files: pytest.skip("../shared/data/bright-topics is absent")
    out = []
    for f in files:
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                out += [r["query"], str(r.get("gold_answer") or ""), str(r.get("reasoning") or "")]
    return [t for t in out if t][:limit]


def synthetic_texts(n=300, seed=0):
    rng = np.random.default_rng(seed)
    words = np.array("the cat's dogs running ran e.g. 3.14 1,000 example.com state-of-the-art don't it's possibly psychology "
                     "analyses snake_case_name C++ x86_64 naïve Zürich 2024 U.S.A. foo.bar() http://a.b/c?d=1 and of stars".split())
    return [" ".join(rng.choice(words, rng.integers(0, 40))) for _ in range(n)]


def ranked(run):
    "A run as {qid: [(docid, score), ...]} in rank order, so comparisons see order and scores."
    return {q: list(d.items()) for q, d in run.to_scores().items()}


def gensim_scores(token_lists, query_tokens, k1=0.9, b=0.4):
    "The harness's code path (BRIGHT retrievers.py retrieval_bm25) on given tokens."
    from gensim.corpora import Dictionary
    from gensim.models import LuceneBM25Model
    from gensim.similarities import SparseMatrixSimilarity
    dictionary = Dictionary(token_lists)
    model = LuceneBM25Model(dictionary=dictionary, k1=k1, b=b)
    index = SparseMatrixSimilarity(model[list(map(dictionary.doc2bow, token_lists))], num_docs=len(token_lists),
                                   num_terms=len(dictionary), normalize_queries=False, normalize_documents=False)
    return [np.asarray(index[model[dictionary.doc2bow(q)]]) for q in query_tokens]


@pytest.mark.parametrize("source", ["synthetic", "real"])
def test_scores_equal_gensim(source):
    texts = synthetic_texts() if source == "synthetic" else real_texts()
    queries = texts[:12] + ["psychology of cats", "nothing-known zzzqqq", ""]
    r = BM25Bright()
    r.index([f"d{i}" for i in range(len(texts))], texts)
    an = LuceneEnglishAnalyzer()
    tokens = [an.analyze(t) for t in texts]
    # the batched indexing path and the one-text path produce the same terms
    assert sorted(r.analyzer.vocab) == sorted({t for ts in tokens for t in ts})
    expected = gensim_scores(tokens, [an.analyze(q) for q in queries])
    for q, exp in zip(queries, expected):
        got = r.scores(q)
        np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(exp).max(initial=0))))


def test_search_ranks_like_the_harness():
    texts = synthetic_texts(500, seed=3)
    queries = {str(i): t for i, t in enumerate(texts[:20])}
    r = BM25Bright(); r.index([f"d{i}" for i in range(len(texts))], texts)
    an = LuceneEnglishAnalyzer()
    exp = gensim_scores([an.analyze(t) for t in texts], [an.analyze(q) for q in queries.values()])
    run = r.search(queries, k=100)
    for qid, s in zip(run, exp):
        # the harness: Python's stable sort of (doc, score) pairs by score, descending
        harness = sorted(zip([f"d{i}" for i in range(len(texts))], s.tolist()), key=lambda x: x[1], reverse=True)[:100]
        got = run[qid]
        ref = [d for d, _ in harness]
        if got != ref:  # only float32 near-ties may swap
            got_s = run.to_scores()[qid]
            for a, b_ in zip(got, ref):
                if a != b_: assert math.isclose(got_s[a], dict(harness)[b_], rel_tol=1e-5)


# --- persistence -------------------------------------------------------------------------------------------
def test_index_persists_and_reloads_memory_mapped(tmp_path):
    texts = synthetic_texts(200)
    ids = [f"d{i}" for i in range(len(texts))]
    first = BM25Bright(cache_dir=tmp_path); first.index(ids, texts)
    assert not first.loaded_from_cache
    second = BM25Bright(cache_dir=tmp_path); second.index(ids, texts)
    assert second.loaded_from_cache
    assert isinstance(second.data, np.memmap) and isinstance(second.indices, np.memmap)
    q = {"a": "cats running", "b": texts[5]}
    assert ranked(first.search(q, 20)) == ranked(second.search(q, 20))
    # a changed corpus never reuses the index
    third = BM25Bright(cache_dir=tmp_path); third.index(ids, texts[:-1] + ["a new text"])
    assert not third.loaded_from_cache


def test_unreadable_index_is_rebuilt(tmp_path):
    texts = synthetic_texts(100); ids = [f"d{i}" for i in range(len(texts))]
    BM25Bright(cache_dir=tmp_path).index(ids, texts)
    (npy,) = list(tmp_path.glob("bm25-bright/*/data.npy"))
    npy.write_bytes(b"garbage")
    r = BM25Bright(cache_dir=tmp_path); r.index(ids, texts)
    assert not r.loaded_from_cache
    assert len(r.search({"q": "cats"}, 5)["q"]) == 5


def test_bad_input():
    with pytest.raises(BrightproError, match="empty corpus"): BM25Bright().index([], [])
    with pytest.raises(BrightproError, match="empty corpus"): BM25S().index([], [])
    with pytest.raises(BrightproError, match="valid forms"): get_retriever("bm42")


def test_bm25s_scores_follow_its_lucene_formula():
    "bm25 (bm25s) scores equal bm25s' own Lucene formula computed by hand on its tokens."
    import bm25s, Stemmer
    texts = synthetic_texts(100)
    r = BM25S(); r.index([f"d{i}" for i in range(len(texts))], texts)
    toks = bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), return_ids=False, show_progress=False)
    q = bm25s.tokenize(["cats running stars"], stopwords="en", stemmer=Stemmer.Stemmer("english"), return_ids=False, show_progress=False)[0]
    n, avgdl = len(toks), sum(map(len, toks)) / len(toks)
    exp = np.zeros(n)
    for t in set(q):
        df = sum(t in d for d in toks)
        if not df: continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, d in enumerate(toks):
            tf = d.count(t)
            exp[i] += idf * tf / (tf + 0.9 * (1 - 0.4 + 0.4 * len(d) / avgdl)) if tf else 0
    hits = r.search({"q": "cats running stars"}, 10).to_scores()["q"]
    for doc, s in hits.items(): assert math.isclose(s, exp[int(doc[1:])], rel_tol=1e-5)


def test_top_k_ties_keep_corpus_order():
    s = np.array([0.5, 1.0, 0.5, 0.5, 2.0], np.float32)
    assert top_k(s, 3).tolist() == [4, 1, 0]
    assert top_k(s, 4).tolist() == [4, 1, 0, 2]


@pytest.mark.parametrize("cls,sub", [(BM25Bright, "bm25-bright"), (BM25S, "bm25s")])
def test_silently_corrupted_index_is_detected_and_rebuilt(tmp_path, cls, sub):
    "A flipped byte inside an array (header intact, so numpy would load it) is caught by the checksums."
    texts = synthetic_texts(150); ids = [f"d{i}" for i in range(len(texts))]
    ref = cls(cache_dir=tmp_path); ref.index(ids, texts)
    expected = ranked(ref.search({"q": "cats running"}, 10))
    (folder,) = [p for p in (tmp_path/sub).iterdir() if p.is_dir()]
    target = max((p for p in folder.glob("*.npy")), key=lambda p: p.stat().st_size)
    raw = bytearray(target.read_bytes()); raw[-3] ^= 0x55; target.write_bytes(bytes(raw))
    again = cls(cache_dir=tmp_path); again.index(ids, texts)
    assert not again.loaded_from_cache
    assert ranked(again.search({"q": "cats running"}, 10)) == expected
    third = cls(cache_dir=tmp_path); third.index(ids, texts)
    assert third.loaded_from_cache


# --- options: checked against each retriever's constructor ----------------------------------------------------------
@pytest.mark.parametrize("name,opts,message", [
    ("bm25-bright", {"k1": "abc"}, "option k1='abc' for bm25-bright: must be a number > 0"),
    ("bm25-bright", {"k1": 0}, "option k1=0 for bm25-bright: must be a number > 0"),
    ("bm25", {"b": 1.5}, "must be a number in [0, 1]"),
    ("bm25", {"method": "okapi"}, "must be one of robertson"),
    ("bm25", {"stemmer": "klingon"}, "must be a PyStemmer algorithm"),
    ("dense", {"batch_size": 0}, "option batch_size=0 for dense: must be a positive integer"),
    ("dense", {"chunk": 0}, "option chunk=0 for dense"),
    ("dense", {"normalize": "maybe"}, "must be true or false"),
    ("dense", {"batchsize": 4}, "unknown option 'batchsize' for dense; valid options: batch_size, chunk,"),
    ("bm25-bright", {"method": "lucene"}, "unknown option 'method' for bm25-bright; valid options: b, k1"),
    ("fusion:bm25+dense", {"x": 1}, "valid options (those of any of its retrievers): b, batch_size, c,"),
])
def test_bad_options_are_one_clear_error(name, opts, message):
    with pytest.raises(BrightproError) as e: get_retriever(name, **opts)
    assert message in str(e.value)


def test_options_reach_the_retrievers_that_take_them():
    f = get_retriever("fusion:bm25+bm25-bright", domain="biology", k1="1.2", b="0", c="10", method="atire")
    assert (f.c, [r.k1 for r in f.retrievers], [r.b for r in f.retrievers], f.retrievers[0].method) == (10, [1.2, 1.2], [0.0, 0.0], "atire")
    d = get_retriever("dense", domain="biology", batch_size="8", chunk="auto", normalize="false")
    assert (d.batch_size, d.chunk, d.normalize, d.domain) == (8, None, False, "biology")


def test_bm25_cut_keeps_tied_documents_in_corpus_order():
    "Identical documents tie; the top k is a stable sort over corpus order, as the harness's sorted(..., reverse=True)."
    ids = [f"d{(i * 17) % 40:02d}" for i in range(40)]  # neither ascending nor descending
    texts = ["apple banana cherry" if i % 3 else "dog cat mouse" for i in range(40)]
    for cls in (BM25Bright, BM25S):
        r = cls(); r.index(ids, texts)
        for k in (5, 30):  # inside the tied block, and across the block of zeros
            run = r.search({"q": "apple"}, k)
            scores = run.to_scores()["q"]
            full = r.scores("apple") if cls is BM25Bright else np.asarray(r.model.get_scores(["appl"]))
            harness = [d for d, _ in sorted(zip(ids, full.tolist()), key=lambda x: x[1], reverse=True)[:k]]
            assert run["q"] == harness and len(set(scores.values())) <= 2


@pytest.mark.parametrize("source", ["synthetic", "real"])
def test_scores_are_float32_sums_term_by_term(source):
    "Each document's score is its float32 weights times the query's, added in term-id order (the harness's float32 product)."
    texts = synthetic_texts(800, seed=3) if source == "synthetic" else real_texts(800)
    r = BM25Bright()
    r.index([f"d{i}" for i in range(len(texts))], texts)
    for q in texts[:40] + ["psychology of cats", ""]:
        terms, w = r.query_vector(q)
        by_hand = np.zeros(len(texts), np.float32)
        for t, wt in zip(terms.tolist(), w.tolist()):  # ascending term ids, float32 throughout
            a, b = r.indptr[t], r.indptr[t + 1]
            by_hand[r.indices[a:b]] = by_hand[r.indices[a:b]] + r.data[a:b] * np.float32(wt)
        got = r.scores(q)
        assert got.dtype == np.float32 and np.array_equal(got, by_hand), q[:40]


@pytest.mark.parametrize("seed", range(5))
def test_top_k_equals_a_stable_sort(seed):
    "The k best by score, ties in corpus order: a stable sort of the negated scores, cut at k, is the reference."
    rng = np.random.default_rng(seed)
    s = np.round(rng.random(5000).astype(np.float32), 2)  # many ties, the k-th score among them
    s[rng.random(5000) < 0.3] = 0
    for k in (1, 7, 100, 1000, 4999, 5000, 6000):
        assert top_k(s, k).tolist() == np.argsort(-s, kind="stable")[:k].tolist(), k


# --- index_jobs: a corpus analysed in parts, in worker processes, gives the same index byte for byte ----------------
SAMPLE = Path(__file__).resolve().parents[1]/"brightpro"/"sample"/"bright_pro"


def saved_index(cache, texts, jobs):
    "Every file of the index BM25Bright(index_jobs=jobs) saves, as bytes; digests.json as its digests (its stats are times)."
    ids = [f"d{i}" for i in range(len(texts))]
    BM25Bright(cache_dir=cache, index_jobs=jobs).index(ids, texts)
    (folder,) = [p for p in (cache/"bm25-bright").iterdir() if p.is_dir()]
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "digests.json"}
    return files, {n: r["digest"] for n, r in json.loads((folder/"digests.json").read_text()).items()}


def corpus(source, tmp_path):
    import pyarrow as pa, pyarrow.parquet as pq
    from brightpro.synth import synth_domain
    if source == "sample":  # the seven sample domains as one corpus
        return pa.concat_tables([pq.read_table(p, columns=["content"]) for p in sorted((SAMPLE/"documents").glob("*.parquet"))]).column("content")
    synth_domain("stackoverflow", tmp_path/"synth", scale=0.003)
    return pq.read_table(tmp_path/"synth"/"documents"/"stackoverflow.parquet", columns=["content"]).column("content")


@pytest.mark.parametrize("source", ["sample", "synth"])
def test_index_jobs_give_the_same_index_byte_for_byte(tmp_path, monkeypatch, source):
    import brightpro.lucene
    texts = corpus(source, tmp_path)
    one = saved_index(tmp_path/"one", texts, 1)
    monkeypatch.setattr(brightpro.lucene, "PART_MIN_BYTES", 1)   # small corpora are analysed in parts too
    calls, parts = [], LuceneEnglishAnalyzer._analyze_in_parts
    monkeypatch.setattr(LuceneEnglishAnalyzer, "_analyze_in_parts", lambda self, texts, bounds, *a: calls.append(bounds) or parts(self, texts, bounds, *a))
    for jobs in (2, 3):
        assert saved_index(tmp_path/f"jobs{jobs}", texts, jobs) == one
    assert [len(b) - 1 for b in calls] == [2, 3] and one[0]["vocab.txt"].count(b"\n") > 1000


@pytest.mark.parametrize("jobs", [2, 3, 4, 6])
def test_retrieve_splits_a_corpus_only_as_far_as_its_workers_share_needs(tmp_path, monkeypatch, jobs):
    "`retrieve --jobs N` gives each domain the fewest parts (at most N) whose size is within a worker's share of all the bytes."
    import contextlib
    from concurrent.futures import Executor, Future
    import brightpro.retrieve as retrieve_module
    from brightpro.data import load_domains

    class InOrder(Executor):   # runs each task here as it is submitted, noting the parts its domain was given
        def __init__(self, *a, **kw): self.seen = seen
        def submit(self, fn, domain, settings):
            seen[domain.name] = settings["index_jobs"]
            f = Future(); f.set_result({"domain": domain.name, "status": "written", "paths": {}, "seconds": 0.0}); return f
    seen = {}
    monkeypatch.setattr(retrieve_module, "worker_processes", lambda workers: contextlib.nullcontext(InOrder()))   # the pool retrieve starts
    names = ["economics", "stackoverflow", "biology", "robotics"]
    retrieve_module.retrieve(load_domains(names), "bm25-bright", out=tmp_path/"runs", cache_dir=tmp_path/"cache", jobs=jobs)
    size = {n: (SAMPLE/"documents"/f"{n}.parquet").stat().st_size for n in names}
    share = sum(size.values()) / jobs
    assert set(seen) == set(names)
    for n, parts in seen.items():
        assert 1 <= parts <= jobs and size[n] / parts <= share * (1 + 1e-12)   # each part within a worker's share ...
        assert parts == 1 or size[n] / (parts - 1) > share                      # ... with no part more than needed
    assert (max(seen.values()) > 1) == any(s > share for s in size.values())   # with 4 or more, some sample domain is split


def test_index_jobs_is_context_not_an_option():
    assert "index_jobs" not in get_retriever("bm25-bright").metadata() and get_retriever("bm25-bright", index_jobs=2).index_jobs == 2
    from brightpro.retrievers import check_options
    with pytest.raises(BrightproError, match="unknown option .index_jobs."): check_options("bm25-bright", {"index_jobs": 2})
    with pytest.raises(BrightproError, match="index_jobs must be a positive integer, got 0"): BM25Bright(index_jobs=0)


def test_warm_load_hashes_only_files_whose_stat_changed(tmp_path, monkeypatch):
    "A second load of an unchanged index reads no file to hash it; a touched file is hashed once, then trusted again."
    import brightpro.retriever as retriever
    texts = synthetic_texts(150); ids = [f"d{i}" for i in range(len(texts))]
    BM25Bright(cache_dir=tmp_path).index(ids, texts)
    hashed = []
    digest = retriever.file_digest
    monkeypatch.setattr(retriever, "file_digest", lambda p: hashed.append(Path(p).name) or digest(p))
    warm = BM25Bright(cache_dir=tmp_path); warm.index(ids, texts)
    assert warm.loaded_from_cache and hashed == []
    (folder,) = [p for p in (tmp_path/"bm25-bright").iterdir() if p.is_dir()]
    (folder/"idf.npy").touch()
    for expected in (["idf.npy"], []):
        again = BM25Bright(cache_dir=tmp_path); again.index(ids, texts)
        assert again.loaded_from_cache and hashed == expected
        hashed.clear()


@pytest.mark.parametrize("domains", ["stackoverflow", "biology,economics,stackoverflow"])
def test_retrieve_jobs_analyse_parts_and_write_the_runs_of_one_process(tmp_path, monkeypatch, domains):
    "`retrieve(jobs=2)` hands its jobs to bm25-bright (in its domain workers too, which then start their own): the same runs."
    import brightpro.lucene
    from brightpro.data import load_domains
    from brightpro.retrieve import retrieve
    loaded = load_domains(domains)
    retrieve(loaded, top=50, out=tmp_path/"1", cache_dir=tmp_path/"c1")
    monkeypatch.setattr(brightpro.lucene, "PART_MIN_BYTES", 1)   # forked workers inherit it
    calls, parts = [], LuceneEnglishAnalyzer._analyze_in_parts
    monkeypatch.setattr(LuceneEnglishAnalyzer, "_analyze_in_parts", lambda self, *a: calls.append(1) or parts(self, *a))
    retrieve(loaded, top=50, out=tmp_path/"2", cache_dir=tmp_path/"c2", jobs=2)
    assert calls or "," in domains   # in this process for one domain; in the workers for several
    for d in domains.split(","):
        for suffix in (".trec", ".score.json"):
            one, two = (tmp_path/j/"bm25-bright"/f"{d}{suffix}" for j in ("1", "2"))
            assert two.read_bytes() == one.read_bytes(), (d, suffix)
    saved = lambda c: {p.relative_to(c): p.read_bytes() for p in (c/"bm25-bright").rglob("*") if p.is_file() and p.name != "digests.json"}
    assert saved(tmp_path/"c2") == saved(tmp_path/"c1")   # every index, byte for byte

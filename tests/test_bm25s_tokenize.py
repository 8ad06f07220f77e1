"""The `bm25` retriever's tokenizer (`bm25s_tokenize`) against bm25s.tokenize, the reference: the same ids, the same
vocabulary in the same order, the same strings; on edge cases, every code point, real BRIGHT texts and synthetic
corpora; and `BM25S` search against plain bm25s end to end."""
import gzip, random

import bm25s
import numpy as np
import pyarrow as pa
import pytest
import Stemmer

from brightpro import bm25s_tokens
from brightpro.data import load_domain
from brightpro.bm25 import BM25S
from brightpro.bm25s_tokens import bm25s_tokenize, bm25s_tokenize_strings
from brightpro.retriever import top_k
from brightpro.synth import synth_dataset
from test_retrievers_bm25 import TOPICS, real_texts


def ref_tokenize(texts, stopwords="en", stemmer_name="english", return_ids=True):
    "bm25s.tokenize as `BM25S` called it."
    stemmer = Stemmer.Stemmer(stemmer_name) if stemmer_name else None
    return bm25s.tokenize(texts, lower=True, stopwords=stopwords, stemmer=stemmer, show_progress=False, return_ids=return_ids)


def same(got, ref):
    return got.ids == ref.ids and list(got.vocab.items()) == list(ref.vocab.items())


def check(texts, stopwords="en", stemmer_name="english", batch_sizes=(20_000, 7), arrow=True, strings=True):
    "Every input form (list, string / large_string arrays, a ChunkedArray) and batch size gives bm25s's result."
    ref = ref_tokenize(texts, stopwords, stemmer_name)
    inputs = [texts]
    if arrow and not isinstance(texts, str):
        inputs += [pa.array(texts, pa.string()), pa.array(texts, pa.large_string())]
        if len(texts) > 2:
            k = len(texts) // 3
            inputs.append(pa.chunked_array([pa.array(texts[:k], pa.string()), pa.array(texts[k:], pa.string())]))
    for inp in inputs:
        for bs in batch_sizes:
            assert same(bm25s_tokenize(inp, stopwords, stemmer_name, batch_size=bs), ref), (type(inp), bs)
    if strings:
        want = ref_tokenize(texts, stopwords, stemmer_name, return_ids=False)
        assert bm25s_tokenize_strings(texts, stopwords, stemmer_name, batch_size=7) == want
    return ref


EDGE = [
    "", " ", "   ", "\t\n\r\x0b\x0c", "!!!", "...", "a", "I", "a b c", "ab", "A", "AB",
    "The", "THE the ThE", "the and of to in", "The quick brown fox", "_", "__", "a_", "_a",
    "foo_bar __init__ snake_case_Name", "x1 2 23 456 7e5 0x1F 3.14 1,000", "don't it's O'Neil",
    "don’t it’s l’été", "İstanbul İİ ıi", "ß STRASSE straße Maße", "ǅemal ǆ ǈ Ǉ ǋ",
    "ΟΔΥΣΣΕΥΣ", "ΣΑ'Σ. ΑΣ:Α ΑΣ^Α ΑΣ`Α ΑΣ.Α ΑΣ Α", "ΑΣ'Α", "Σ", "ΣΣ", "aΣ'b", "AΣ.", "ΑΣ",
    "x ΑΣ_ΑΣ1 Σ_ σ ς", "ὈΔΥΣΣΕΎΣ", "e\u0301cole cafe\u0301 re\u0301sume\u0301",
    "مرحبا بالعالم", "שלום עולם", "中文字符 测试", "日本語のテキスト", "한국어 텍스트",
    "สวัสดีครับ", "हिन्दी पाठ", "emoji😀word 😀😀 👨‍👩‍👧 a\u200db a\u200cb",
    "a\u00a0b word\u00a0word", "foo—bar baz–qux a—b", "x" * 10_000, "Ab" * 3000 + " end",
    "tab\there\nnew\r\nline\x0bvt\x0cff", "K Å ﬁne ﬀ Ⅻ ⅻ", "𝐀𝐁𝐂 ①② ²³ ½", "\x00ab\x00cd\x1f",
    "\u2028line\u2029para\x85next", "ÀÉÎÕÜ àéîõü", "Ωmega ΩΩ", "١٢٣ ٤٥", "x²y³", "‿⁀ a‿b",
    "_a_ __ab__", "ALL CAPS WORDS HERE", "Mixed CASE The AND", "   leading and trailing   ",
    "naïve coöperate", "Straße\u0301", "ﬃ ﬄ", "ǰ ŉ ΐ", "ᾼ ᾳ ῼ", "Ⓐ ⓐ", "Ꭰ ꭰ", "𐐀 𐐨",
    "a.b.c.d", "e-mail co-op", "#hashtag @user http://example.com/a_b?c=d&e=f",
    "<tag attr='v'>text</tag>", "$\\begingroup$ \\frac{a}{b}", "C++ C# F# .NET",
]


def test_edge_cases_each():
    for t in EDGE: check([t], batch_sizes=(20_000,))


def test_edge_cases_together():
    check(EDGE)
    check(EDGE[::-1])
    check(EDGE * 3, batch_sizes=(20_000, 1, 5))


def test_single_string_and_empty_list():
    assert same(bm25s_tokenize("The cats are running"), ref_tokenize("The cats are running"))
    got, ref = bm25s_tokenize([]), ref_tokenize([])
    assert got.ids == ref.ids and got.vocab == ref.vocab
    assert bm25s_tokenize(["", "", "a"]).ids == [[], [], []]


def test_only_stopwords_and_empties():
    check(["the", "", "and of", "THE", "", "a an the"])


def test_stopword_and_stemmer_options():
    texts = EDGE + ["running runs ran runner", "Les chats sont là", "und der die das"]
    check(texts, stopwords=None)
    check(texts, stopwords="fr", stemmer_name="french")
    check(texts, stopwords=["running", "là", "chats", "The"], stemmer_name="english")
    check(texts, stopwords="en", stemmer_name=None)


def test_64_bit_offsets(monkeypatch):
    monkeypatch.setattr(bm25s_tokens, "_INT32_BYTES", 0)   # every batch split with 64-bit offsets
    check(EDGE * 2, batch_sizes=(20_000, 11))


def test_lone_surrogates():
    check(["ab\ud800cd ef", "\udfff", "x\ud83dy zz"], arrow=False)


def test_every_code_point():
    "Every code point (no surrogates) between ASCII letters, doubled, before ASCII punctuation; then the Greek block."
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    texts = [" ".join(f"a{chr(c)}b{chr(c)}{chr(c)}.X{chr(c)}'" for c in cps[i:i + 48]) for i in range(0, len(cps), 48)]
    texts.append("".join(chr(c) for c in range(0x370, 0x400)))
    check(texts, arrow=False, strings=False, batch_sizes=(5000,))


def test_random_fuzz():
    rng = random.Random(1234)
    pool = (list("aAbBzZ019_ '.:^`-—\t\n") + ["Σ", "σ", "ς", "İ", "ß", "é", "e\u0301", "\u00a0", "😀", "\u200d", "中", "ǅ",
                                              "The", "the ", " and ", "K", "ﬁ", "’", "\u0301", "Ω"])
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    check(texts, batch_sizes=(20_000, 97))


def test_real_bright_texts():
    texts = real_texts(limit=None)   # skips when ../shared/data/bright-topics is absent
    for f in sorted(TOPICS.glob("*.tsv.gz")):   # the topics' tab-separated query texts too
        with gzip.open(f, "rt", encoding="utf-8") as fh: texts += [p for line in fh for p in line.rstrip("\n").split("\t")]
    assert len(texts) > 3000 and any(not t.isascii() for t in texts)
    check(texts, batch_sizes=(20_000, 333))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    "Small synthetic corpora (2% scale) of a science domain and stackoverflow (numbers, code-like text)."
    root = tmp_path_factory.mktemp("synth")
    synth_dataset(["earth_science", "stackoverflow"], root, scale=0.02)
    return root


@pytest.mark.parametrize("domain", ["earth_science", "stackoverflow"])
def test_synthetic_corpora(synthetic, domain):
    col = load_domain(domain, dataset=str(synthetic)).documents.column("content")
    n = len(col)
    for piece in (col.slice(0, n // 2), col.slice(n // 4, n // 2)):
        texts = piece.to_pylist()
        ref = ref_tokenize(texts)
        for inp, bs in ((piece, 20_000), (piece, 700), (texts, 300)):
            assert same(bm25s_tokenize(inp, batch_size=bs), ref), (type(inp), bs)
        assert bm25s_tokenize_strings(piece) == ref_tokenize(texts, return_ids=False)


@pytest.mark.parametrize("source", ["sample", "synthetic"])
def test_bm25s_search_equals_plain_bm25s(source, request):
    "BM25S's run is what plain bm25s.tokenize + bm25s.BM25 rank, score for score: the bundled biology sample, a synthetic corpus."
    d = load_domain("biology") if source == "sample" else load_domain("stackoverflow", dataset=str(request.getfixturevalue("synthetic")))
    ids, texts = d.documents.column("id").to_pylist(), d.documents.column("content").to_pylist()
    queries = {**d.query_text, **{f"doc{i}": texts[i][:500] for i in range(0, len(texts), max(1, len(texts) // 20))}}
    r = BM25S()
    r.index(d.documents.column("id"), d.documents.column("content"))
    run = r.search(queries, k=100)
    model = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    model.index(ref_tokenize(texts), show_progress=False)
    assert model.vocab_dict == r.model.vocab_dict
    q_tokens, scores = ref_tokenize(list(queries.values()), return_ids=False), run.to_scores()
    for qid, toks in zip(queries, q_tokens):
        toks = [t for t in toks if t in model.vocab_dict]
        s = np.asarray(model.get_scores(toks)) if toks else np.zeros(len(ids), np.float32)
        top = top_k(s, 100)
        assert run[qid] == [ids[i] for i in top]
        assert list(scores[qid].values()) == s[top].astype(float).tolist()

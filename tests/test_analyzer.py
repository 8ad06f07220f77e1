"""The Lucene English analyzer in Python: tokenizer cases from StandardTokenizer's UAX#29 rules, the chain, the Porter stemmer,
Lucene's 255-unit buffer, and an independent reference for punctuation-dense text."""
import re

import pytest

from brightpro.lucene import LuceneEnglishAnalyzer, lucene_stem_words, porter_stem, standard_tokens
from test_retrievers_bm25 import real_texts, synthetic_texts


# --- the analyzer ------------------------------------------------------------------------------------------
# Expected tokens follow Lucene's StandardTokenizer grammar (UAX#29): mid-letter characters (' . :) join letters,
# mid-number characters (. , ;) join digits, underscores join anything, other punctuation breaks.
TOKENIZER_CASES = [
    ("John's car", ["john's", "car"]),
    ("state-of-the-art", ["state", "of", "the", "art"]),
    ("pi is 3.14159, about 1,000.5", ["pi", "is", "3.14159", "about", "1,000.5"]),
    ("see https://www.example.com/path?q=1", ["see", "https", "www.example.com", "path", "q", "1"]),
    ("call foo.bar_baz(x) and __init__", ["call", "foo.bar_baz", "x", "and", "__init__"]),
    ("C++ and C# and x86_64", ["c", "and", "c", "and", "x86_64"]),
    ("naïve café Zürich", ["naïve", "café", "zürich"]),
    ("e.g. U.S.A. i.e.", ["e.g", "u.s.a", "i.e"]),
    ("email me@host.org", ["email", "me", "host.org"]),
    ("'quoted' word", ["quoted", "word"]),
    ("abc.123 v1.2 1.2.3", ["abc", "123", "v1.2", "1.2.3"]),
    ("日本語 text", ["日", "本", "語", "text"]),
    ("tab\tnew\nline", ["tab", "new", "line"]),
    # Lucene's emoji rule: pictographs (also (c), (r), tm and dingbats), with presentation selector, skin tone, ZWJ joins; flags
    ("(c) © 2024 Acme™ ok ✔", ["c", "©", "2024", "acme", "™", "ok", "✔"]),
    ("i ❤️ it 👍🏽 👨\u200d👩\u200d👧 🇫🇷", ["i", "❤️", "it", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷"]),
]


@pytest.mark.parametrize("text,expected", TOKENIZER_CASES)
def test_standard_tokenizer(text, expected):
    assert standard_tokens(text.lower()) == expected


def test_long_tokens_are_chopped_at_255():
    assert [len(t) for t in standard_tokens("a" * 600)] == [255, 255, 90]


def test_analyzer_chain():
    an = LuceneEnglishAnalyzer()
    # possessive removed before the stop list: "it's" -> "it" (a stop word); Porter stems; "The" is a stop word
    assert an.analyze("The dog's bones. It's John’s") == ["dog", "bone", "john"]
    assert an.analyze("THE AND OF") == []
    assert an.analyze("Running runners ran") == ["run", "runner", "ran"]


def test_porter_agrees_with_snowball_porter_except_for_the_reference_departures():
    "PyStemmer's Snowball `porter` follows the 1980 paper; Lucene's port differs only by the bli/logi rules and short words."
    import Stemmer
    words = sorted({w for t in synthetic_texts(50) + _vocab_texts() for w in re.findall(r"[a-z]+", t.lower())})
    snow = Stemmer.Stemmer("porter").stemWords(words)
    for w, s in zip(words, snow):
        if len(w) > 2 and "bl" not in w and "log" not in w:
            assert porter_stem(w) == s, w
    # the departures, by hand from the reference rules (bli -> ble, logi -> log, then -ible / -able removal)
    # (biology keeps its i: the stem "bio" before "logi" has measure 0, so the logi -> log rule does not apply)
    assert [porter_stem(w) for w in ("possibly", "psychology", "biology", "assembly", "is", "as")] == \
        ["possibl", "psycholog", "biologi", "assembl", "is", "as"]


def _vocab_texts():
    try: return real_texts(3000)
    except pytest.skip.Exception: return ["relational conditional rational valenci hesitanci digitizer conformabli radicalli "
                                          "differentli vileli analogousli vietnamization predication operator feudalism"]


def test_fast_stemming_equals_the_port():
    words = sorted({w for t in _vocab_texts() for w in re.findall(r"[^\W\d_]+", t.lower())})
    assert lucene_stem_words(words) == [porter_stem(w) for w in words]


from hypothesis import given, settings, strategies as st

TRICKY = list("aZé9_.,;:'’-/ \n\"#*") + ["\u05d0", "\u20e3", "\u0301", "\u00ad", "\u200d", "©", "™", "👍", "\U0001f3fd", "\ufe0f", "中", "ひ", "ก", "²", "@", "İ", "ß", "ǅ"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(TRICKY), max_size=40), min_size=1, max_size=5))
def test_batched_analysis_equals_one_text_analysis(texts):
    "The fast path (Arrow split into pieces, cached per piece) gives exactly the terms of running the regex on each whole text."
    an = LuceneEnglishAnalyzer()
    docs, terms = an.analyze_ids(texts)
    vocab = list(an.vocab)
    batched = [[vocab[t] for d, t in zip(docs.tolist(), terms.tolist()) if d == i] for i in range(len(texts))]
    assert batched == [LuceneEnglishAnalyzer().analyze(t) for t in texts]


# --- stemming: Lucene's PorterStemmer undoubles every doubled consonant but l, s, z (issue 8, item 1) ----------------
def _doubled_stem_by_hand(c: str) -> str:
    """The Lucene stem of `tre{c}{c}ed` / `tre{c}{c}ing`, worked from the Porter algorithm (Lucene's PorterStemmer).

    Step 1b: `-ed`/`-ing` go (the stem `tre..` has a vowel); a double consonant then loses its last letter unless it is
    l, s or z. `y` after the consonant `y` is a vowel (Porter's rule: y is a consonant after a vowel only), so `yy` is no
    double consonant: `treyy` keeps both, and step 1c turns its final y into i (the stem `trey` has a vowel). Steps 2-5
    find no suffix in `tre?`/`tre??` (`trer` ends in -er, but `tr` has measure 0); step 5 keeps -ll (measure 1)."""
    if c in "lsz": return f"tre{c}{c}"
    if c == "y": return "treyi"
    return f"tre{c}"


CONSONANTS = "bcdfghjklmnpqrstvwxyz"


@pytest.mark.parametrize("suffix", ["ed", "ing"])
def test_every_doubled_consonant_stems_as_lucene(suffix):
    words = [f"tre{c}{c}{suffix}" for c in CONSONANTS]
    expected = [_doubled_stem_by_hand(c) for c in CONSONANTS]
    assert [porter_stem(w) for w in words] == expected
    assert lucene_stem_words(words) == expected


def test_real_doubled_consonant_words():
    # by hand: trekk/revv/yakk lose their double (k, v are not l, s, z), fizz/hiss/call keep it; hopp -> hop as before
    words = ["trekking", "trekked", "revving", "revved", "yakked", "fizzed", "hissing", "called", "hopped", "bivvies"]
    assert lucene_stem_words(words) == ["trek", "trek", "rev", "rev", "yak", "fizz", "hiss", "call", "hop", "bivvi"]
    assert lucene_stem_words(words) == [porter_stem(w) for w in words]


def test_astral_letters_are_two_utf16_units():
    # Java stems UTF-16 units: 𝑡 (U+1D461) is a surrogate pair, two consonants; 𝑡𝑡 is not a double consonant
    assert porter_stem("a𝑡𝑡ed") == "a𝑡𝑡"
    assert porter_stem("𝑡𝑡") == "𝑡𝑡" and porter_stem("𝑡s") == "𝑡"  # 𝑡s is three units: stemmed, -s goes


def _bright_words():
    texts = real_texts(100_000)  # every BRIGHT query, gold answer and reasoning text; skips without ../shared/data
    an = LuceneEnglishAnalyzer()
    return sorted({t for x in texts for t in an._filter(standard_tokens(x.lower()))})


def test_fast_stemming_equals_the_port_on_the_bright_vocabulary():
    words = _bright_words()
    # and each word's doubled -ed/-ing/-ings forms, where PyStemmer's porter and Lucene's stemmer part ways
    doubled = [w + w[-1] + s for w in words if w.isalpha() and w[-1] not in "aeiou" for s in ("ed", "ing", "ings")]
    for vocab in (words, doubled):
        assert lucene_stem_words(vocab) == [porter_stem(w) for w in vocab]


# --- word breaks (issue 8, item 2): expected tokens worked out from Lucene 9.9.1's StandardTokenizerImpl.jflex --------
WORD_BREAK_CASES = [
    # ⁰ ₂ ₀ ½ ① are General_Category No: not Alphabetic (so not ALetter), not Line_Break=Numeric (so not Numeric):
    # no rule contains them, the catch-all rule skips them, and the words around them end there
    ("462⁰C", ["462", "c"]),
    ("p₀ h₂o", ["p", "h", "o"]),
    ("½ ① x²", ["x"]),
    # keycaps: KeyCapBaseChar [0-9#*], optional FE0F, then U+20E3 is one emoji token; # and * alone start nothing
    ("#️⃣ *️⃣ #⃣", ["#️⃣", "*️⃣", "#⃣"]),
    ("# * #1", ["1"]),
    # WB13: Katakana × Katakana only, so Katakana next to a Latin letter breaks; WB13a/b join both through _
    ("アイスcream", ["アイス", "cream"]),
    ("アイス_cream", ["アイス_cream"]),
    # WB7b/c: Hebrew_Letter × " Hebrew_Letter; WB7a: Hebrew_Letter × ' (the quote stays on the token);
    # neither applies to Latin letters
    ('צה"ל', ['צה"ל']),
    ("ש' ג'ירפה", ["ש'", "ג'ירפה"]),
    ('a"b a\'', ["a", "b", "a"]),
    # WB4: Extend/Format/ZWJ characters stay on the character before them (a Devanagari stress mark, U+2066 LRI,
    # an emoji skin tone, which is Extend in Lucene's tables); after a break they start nothing
    ("a\u0951b x\u2066y", ["a\u0951b", "x\u2066y"]),
    ("a🏽", ["a🏽"]),
    (" \u0301a", ["a"]),
]


@pytest.mark.parametrize("text,expected", WORD_BREAK_CASES)
def test_word_breaks(text, expected):
    assert standard_tokens(text.lower()) == expected


def test_tokens_are_cut_by_lucenes_255_unit_buffer():
    "StandardTokenizer's scanner buffer is 255 UTF-16 units; a token is the longest match inside it."
    # an astral letter is two units: 127 of them fill 254 units, a 128th does not fit
    assert [len(t) for t in standard_tokens("𝑡" * 200)] == [127, 73]
    # the buffer holds 254 x's and ".": "." cannot end a token, so the token is the 254 x's; "." starts nothing; "b"
    assert [len(t) for t in standard_tokens("x" * 254 + ".b")] == [254, 1]
    # no token fits in the buffers of the first 46 underscores (no letter in them); the 47th's ends with "a"
    assert standard_tokens("_" * 300 + "a") == ["_" * 254 + "a"]
    assert standard_tokens("_" * 20_000 + "a") == ["_" * 254 + "a"]


# --- exactness on punctuation-dense text (issue 8, item 3), against an independent reference --------------------------
# For ASCII text, UAX#29's pairwise rules as Lucene's grammar applies them: letters (WB5), digits (WB8), letters and
# digits (WB9/10), letters across one of : . ' (WB6/7), digits across one of , ; . ' (WB11/12), "_" next to letters,
# digits and "_" (WB13a/b); a segment without a letter or digit is no token. Lucene's scanner takes at each position the
# longest valid prefix within 255 characters and skips one character where there is none.
def _kind(ch: str) -> str: return "L" if ch.isalpha() else "N" if ch.isdigit() else "E" if ch == "_" else ch


def _joins(t: str, i: int, start: int) -> bool:
    "Do characters i-1 and i of the lower-case ASCII text t stay together, t read from `start` on?"
    kind = lambda j: _kind(t[j]) if start <= j < len(t) else ""
    a, b, before, after = kind(i - 1), kind(i), kind(i - 2), kind(i + 1)
    if a and b and a in "LNE" and b in "LNE": return True  # WB5, WB8-10, WB13a-b
    if b in ":.'" and a == "L" and after == "L": return True  # WB6
    if a in ":.'" and before == "L" and b == "L": return True  # WB7
    if b in ",;.'" and a == "N" and after == "N": return True  # WB12
    if a in ",;.'" and before == "N" and b == "N": return True  # WB11
    return False


def reference_tokens(text: str) -> list[str]:
    out, p = [], 0
    while p < len(text):
        q = p + 1
        while q < len(text) and q - p <= 255 and _joins(text, q, p): q += 1  # the segment from p (nothing before p counts)
        seg = text[p:q]
        first = next((i for i, ch in enumerate(seg) if ch.isalnum()), len(seg))  # a token needs a letter or digit
        k = next((k for k in range(min(len(seg), 255), first, -1) if seg[k - 1] not in ":.',;"), 0)  # and ends in none of these
        if k: out.append(seg[:k]); p += k
        else: p += 1
    return out


def test_reference_tokens_examples():
    assert reference_tokens("don't e.g. 1,000.5 a_b x86 1.a a.1 __") == ["don't", "e.g", "1,000.5", "a_b", "x86", "1", "a", "a", "1"]


PUNCT = list(".,;:'\"_-/()[]{}*&^%$#@! ") + ["a", "b", "x", "1", "2"]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(PUNCT), max_size=60))
def test_punctuation_dense_text_matches_the_reference(text):
    assert standard_tokens(text) == reference_tokens(text)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", "1", "_", ".", "'", ","]), min_size=200, max_size=700))
def test_long_tokens_match_the_reference(text):
    assert standard_tokens(text) == reference_tokens(text)


def test_hostile_documents_tokenize():
    "Strings that made the old regex backtrack (runs of _ made it quadratic): the same tokens as the reference."
    for text in ["a.b_1,2'c:" * 2000, "_" * 3000 + "x", "a_" * 3000, "1,2,3," * 2000, "'_" * 5000]:
        assert standard_tokens(text) == reference_tokens(text)


# --- optional: against Lucene itself -----------------------------------------------------------------------------
# Set BRIGHTPRO_LUCENE_JAR to a jar holding Lucene 9.9.1 and Anserini (pyserini 0.24.0's
# pyserini/resources/jars/anserini-0.24.0-fatjar.jar) on a machine with a JDK to compare with the real analyzer.
_ORACLE_JAVA = r"""
import java.io.*; import java.nio.charset.StandardCharsets; import java.util.*;
import org.apache.lucene.analysis.*; import org.apache.lucene.analysis.standard.StandardTokenizer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute; import io.anserini.analysis.DefaultEnglishAnalyzer;
public class Oracle {
  static List<String> run(TokenStream ts) throws IOException {
    List<String> out = new ArrayList<>(); CharTermAttribute t = ts.addAttribute(CharTermAttribute.class);
    ts.reset(); while (ts.incrementToken()) out.add(t.toString()); ts.end(); ts.close(); return out; }
  public static void main(String[] a) throws Exception {
    String[] texts = new String(System.in.readAllBytes(), StandardCharsets.UTF_8).split("\u0000", -1);
    Analyzer en = DefaultEnglishAnalyzer.newStemmingInstance("porter");
    Writer w = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
    for (int i = 0; i < texts.length; i++) {
      StandardTokenizer st = new StandardTokenizer(); st.setReader(new StringReader(texts[i]));
      if (i > 0) w.write('\u0000');
      w.write(String.join("\u0001", run(st)) + "\u0002" + String.join("\u0001", run(en.tokenStream("contents", texts[i]))));
    }
    w.flush(); } }
"""


def test_against_lucene(tmp_path):
    import os, shutil, subprocess
    jar = os.environ.get("BRIGHTPRO_LUCENE_JAR")
    if not jar or not shutil.which("javac"): pytest.skip("set BRIGHTPRO_LUCENE_JAR (and have a JDK) to compare with Lucene")
    (tmp_path/"Oracle.java").write_text(_ORACLE_JAVA)
    subprocess.run(["javac", "-cp", jar, "-d", str(tmp_path), str(tmp_path/"Oracle.java")], check=True)
    rng = __import__("random").Random(0)
    alphabet = PUNCT + TRICKY + ["ア", "א", '"', "#", "\u20e3", "⁰", "₀", "𝑡", "trekking ", "The "]
    try: texts = real_texts(100_000)
    except pytest.skip.Exception: texts = []
    texts = [t.replace("\x00", " ") for t in texts] + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(20_000)]
    res = subprocess.run(["java", "-cp", f"{jar}{os.pathsep}{tmp_path}", "Oracle"], input="\x00".join(texts).encode(),
                         capture_output=True, check=True).stdout.decode().split("\x00")
    an = LuceneEnglishAnalyzer()
    for text, r in zip(texts, res):
        tokens, terms = ([x for x in part.split("\x01") if x] for part in r.split("\x02"))
        assert standard_tokens(text) == tokens, text
        assert an.analyze(text) == terms, text


# --- jobs: parts analysed in worker processes, merged into the ids and vocabulary of one process ------------------
@pytest.mark.parametrize("jobs", [2, 4])
def test_analyze_ids_in_parts_matches_one_process(jobs):
    texts = synthetic_texts(400, seed=3) + ["Ünïcödé naïve Zürich's", "", "x" * 300] + synthetic_texts(200, seed=4)
    one, parts = LuceneEnglishAnalyzer(), LuceneEnglishAnalyzer()
    for an in (one, parts): an.analyze_ids(["zebras graze", "the new cats"])  # a vocabulary grown before
    expected = one.analyze_ids(texts)
    got = parts.analyze_ids(texts, jobs=jobs, min_part_bytes=1)
    assert got[0].tolist() == expected[0].tolist() and got[1].tolist() == expected[1].tolist()
    assert list(parts.vocab.items()) == list(one.vocab.items())
    assert got[0].dtype == expected[0].dtype and got[1].dtype == expected[1].dtype


# --- batches: at most batch_size texts and batch_bytes bytes of text; the ids never depend on them --------------------
@pytest.mark.parametrize("batch_bytes", [1, 60, 900, 10**9])
def test_batches_cut_by_bytes_give_ids_in_order_of_first_occurrence(batch_bytes):
    texts = synthetic_texts(150, seed=5) + ["Ünïcödé naïve Zürich's", "", "x" * 300] + synthetic_texts(50, seed=6)
    an = LuceneEnglishAnalyzer()
    docs, terms = an.analyze_ids(texts, batch_size=7, batch_bytes=batch_bytes)
    vocab, want_docs, want_terms = {}, [], []   # the reference: each text alone, ids given in order of first occurrence
    for i, text in enumerate(texts):
        for term in LuceneEnglishAnalyzer().analyze(text): want_docs.append(i); want_terms.append(vocab.setdefault(term, len(vocab)))
    assert docs.tolist() == want_docs and terms.tolist() == want_terms and list(an.vocab) == list(vocab)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(["a", "é", "中", "👍"]), max_size=12), max_size=30),
       st.integers(1, 8), st.integers(1, 40))
def test_batch_bounds_are_the_longest_batches_within_both_limits(texts, batch_size, batch_bytes):
    from brightpro.lucene import as_arrow, batch_bounds
    bounds, size = batch_bounds(as_arrow(texts), batch_size, batch_bytes), [len(t.encode()) for t in texts]
    assert bounds[0] == 0 and bounds[-1] == len(texts) and all(a < b for a, b in zip(bounds, bounds[1:]))
    for a, b in zip(bounds, bounds[1:]):
        assert b - a <= batch_size and (b - a == 1 or sum(size[a:b]) <= batch_bytes)   # a text too long alone is its own batch
        if b < len(texts): assert b - a == batch_size or sum(size[a:b + 1]) > batch_bytes   # one more text would not fit


def test_analyze_ids_jobs_are_checked():
    with pytest.raises(Exception, match="jobs must be a positive integer, got 0"): LuceneEnglishAnalyzer().analyze_ids(["a"], jobs=0)

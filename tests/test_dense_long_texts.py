"""dense on long texts (issue 16, case 19): texts are cut before tokenizing to a bound derived from the model's window,
which leaves every embedding as it was (the tokenizer truncates at the window anyway) and bounds time and memory."""
import subprocess, sys, textwrap

import numpy as np
import pytest

from brightpro.dense import Dense, default_dense_model

WORDS = "the glacier moved slowly across the valley carving deep grooves into granite while meltwater pooled".split()


@pytest.fixture(scope="module")
def bare():
    from sentence_transformers import SentenceTransformer
    return SentenceTransformer(default_dense_model(), device="cpu")


def _long_texts():
    rng = np.random.default_rng(0)
    prose = " ".join(rng.choice(WORDS, 30_000))                       # about 200,000 characters
    return [prose, "x" * 5000 + " " + prose,                          # a first 'word' longer than the cut
            " " * 20_000 + prose,                                      # a window's tokens far past the first cut
            "\n\n".join(prose[i:i + 300] for i in range(0, 60_000, 300)), # paragraphs
            "研究" * 10_000, "short text", prose[:4100]]


def test_long_texts_embed_as_the_whole_text_does(bare):
    "Dense (which cuts) against a bare SentenceTransformer (which tokenizes everything): the same vectors."
    texts = _long_texts()
    whole = bare.encode(texts, normalize_embeddings=True)
    dense = Dense()
    np.testing.assert_allclose(dense.encode(texts), whole, rtol=1e-4, atol=1e-5)
    cuts = dense._cut(texts)
    assert max(map(len, cuts)) < len(texts[2]) and len(cuts[0]) <= 256 * 16, "the cut is bounded by the window"
    np.testing.assert_allclose(bare.encode(cuts, normalize_embeddings=True), whole, rtol=1e-4, atol=1e-5)


MEASURE = textwrap.dedent("""
    import time, numpy as np
    from brightpro.dense import Dense
    rng = np.random.default_rng(0)
    text = " ".join(rng.choice("the glacier moved slowly across the valley".split(), 8_000_000))[:50_000_000]
    dense = Dense(); dense.encode(["warm up"])
    t0 = time.perf_counter(); dense.encode([text]); seconds = time.perf_counter() - t0
    peak = next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]
    print(f"{seconds:.2f} {int(peak) / 2**20:.2f}")
""")


def test_a_50_mb_document_takes_bounded_time_and_memory():
    "Before: 63-90 s and a 7.1 GB peak (the whole text was tokenized though the model reads 256 tokens)."
    r = subprocess.run([sys.executable, "-c", MEASURE], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    seconds, peak_gb = map(float, r.stdout.split())
    print(f"50 MB document: {seconds:.1f} s, peak RSS {peak_gb:.2f} GB")
    assert seconds < 20 and peak_gb < 3, (seconds, peak_gb)

"""Benchmark: the Lucene analyzer on punctuation-dense text against prose, today's code against the last commit's.

Data: prose is the real BRIGHT query, gold-answer and reasoning texts of ../shared/data/bright-topics (about 1 MB of
them), or generated sentences when that folder is absent. Symbol sets, cut into documents of about 1,000 characters:
random mixes of `.,;:'_-/()[]{}*&^%$#@!` with letters and digits; `a.b.c.d.e...`; `1,2,3,4,...`; `a_b_c_...`; and
long runs of underscores (what made the old regex quadratic; a smaller set, so the old code still ends in seconds).

Measured, in one run, for the code in the working tree ("now") and the last commit's `brightpro/lucene.py` ("HEAD",
loaded from `git show` into a temporary module): MB/s (UTF-8 bytes) of `LuceneEnglishAnalyzer().analyze_ids` on the
whole set (a fresh analyzer, so every piece is analysed once, as when indexing) and of `standard_tokens` on each
document; the cost of a byte of each set relative to a byte of prose (goal: at most 3x); and the stemmer's words/s
(`lucene_stem_words` on the distinct words of the prose, and on their doubled -ed/-ing forms). Best of --repeats runs,
garbage collector off while timing.

Usage: .venv/bin/python benchmarks/bench_analyzer.py [--repeats 3]
Writes benchmarks/results/bench_analyzer.json.
"""
from __future__ import annotations
import argparse, gc, gzip, importlib.util, json, random, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import brightpro.lucene as now
from _common import save, table

TOPICS = ROOT.parent/"shared"/"data"/"bright-topics"


def head_module(rev="HEAD"):
    "brightpro/lucene.py of commit `rev` (default the last one) as a module (its relative import made absolute)."
    src = subprocess.run(["git", "show", f"{rev}:brightpro/lucene.py"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp())/"lucene_head.py"
    path.write_text(src.replace("from .core import", "from brightpro.core import"))
    spec = importlib.util.spec_from_file_location("lucene_head", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def prose(limit=1_000_000) -> list[str]:
    "Real BRIGHT texts (about `limit` characters), or generated sentences without ../shared/data."
    out, n = [], 0
    for f in sorted(TOPICS.glob("*original.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                for t in (r["query"], str(r.get("gold_answer") or ""), str(r.get("reasoning") or "")):
                    if t and n < limit: out.append(t); n += len(t)
    if out: return out
    rng = random.Random(0)
    words = "the cell membrane regulates transport of ions and water across its lipid bilayer while proteins act as channels".split()
    return [" ".join(rng.choice(words) for _ in range(170)).capitalize() + "." for _ in range(1000)]


def symbol_sets(seed=0) -> dict:
    "Punctuation-dense documents of about 1,000 characters, each different (so no piece is analysed from the cache)."
    rng = random.Random(seed)
    mix, letters, digits = ".,;:'_-/()[]{}*&^%$#@!" + "abcxyz0123456789", "abcdefghijklmnopqrstuvwxyz", "0123456789"
    joined = lambda chars, sep, n: [sep.join(rng.choice(chars) for _ in range(500)) for _ in range(n)]
    return {"random symbols, letters, digits": ["".join(rng.choice(mix) for _ in range(1000)) for _ in range(300)],
            "a.b.c.d.e...": joined(letters, ".", 300), "1,2,3,4,...": joined(digits, ",", 300), "a_b_c_...": joined(letters, "_", 300),
            "underscore runs (____ x)": ["_" * 1000 + f" {rng.choice(letters)}" for _ in range(20)]}


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        gc.disable()
        try: t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
        finally: gc.enable()
    return min(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--against", default="HEAD", help="the commit whose analyzer is the 'HEAD' columns (default the last one)")
    args = ap.parse_args(argv)
    head = head_module(args.against)
    sets = {"prose (BRIGHT texts)" if TOPICS.exists() else "prose (generated)": prose(), **symbol_sets()}
    rows, results = [], {}
    for name, texts in sets.items():
        mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        r = {}
        for side, mod in (("head", head), ("now", now)):
            r[f"analyze_ids_{side}"] = mb / best(lambda: mod.LuceneEnglishAnalyzer().analyze_ids(texts), args.repeats)
            r[f"standard_tokens_{side}"] = mb / best(lambda: [mod.standard_tokens(t.lower()) for t in texts], args.repeats)
        results[name] = {"mb": mb, **r}
    base = results[next(iter(sets))]
    for name, r in results.items():
        cost = {k: base[k] / r[k] for k in r if k != "mb"}  # seconds per byte relative to prose
        r.update({f"cost_{k}": v for k, v in cost.items()})
        rows.append([name, f"{r['mb']:.2f}", r["analyze_ids_head"], r["analyze_ids_now"], f"{cost['analyze_ids_head']:.1f}x",
                     f"{cost['analyze_ids_now']:.1f}x", r["standard_tokens_head"], r["standard_tokens_now"],
                     f"{cost['standard_tokens_head']:.1f}x", f"{cost['standard_tokens_now']:.1f}x"])
    print("MB/s (UTF-8) and the cost of a byte relative to prose (goal: at most 3x)")
    table(rows, ["text", "MB", "analyze_ids HEAD", "now", "cost HEAD", "cost now", "standard_tokens HEAD", "now", "cost HEAD", "cost now"])

    words = sorted({t for x in sets[next(iter(sets))] for t in now.standard_tokens(x.lower())})
    doubled = [w + w[-1] + s for w in words if w.isalpha() and w[-1] not in "aeiou" for s in ("ed", "ing")]
    stem_rows = []
    for name, ws in (("distinct prose words", words), ("their doubled -ed/-ing forms", doubled)):
        h, n = (len(ws) / best(lambda: mod.lucene_stem_words(ws), args.repeats) for mod in (head, now))
        results[f"stem {name}"] = {"words": len(ws), "head_words_per_s": h, "now_words_per_s": n}
        stem_rows.append([name, len(ws), f"{h / 1e6:.2f}M", f"{n / 1e6:.2f}M", f"{n / h:.2f}"])
    print("\nlucene_stem_words, words/s")
    table(stem_rows, ["words", "count", "HEAD", "now", "now/HEAD"])
    print(f"\nwrote {save('bench_analyzer', {'repeats': args.repeats, 'results': results})}")


if __name__ == "__main__":
    main()

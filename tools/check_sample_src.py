"""Check one hand-written sample domain file (`sample/src/<domain>.json`) against the rules the
bundled sample must meet. Usage: python tools/check_sample_src.py sample/src/biology.json [...]

Exit 0 when every file passes; otherwise each problem is printed and the exit is 1."""
import json, re, sys
from collections import Counter
from pathlib import Path

DOMAINS = ["biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living"]
WORD = re.compile(r"[a-z0-9]+")
STOP = set("a an and are as at be but by for from has have how i if in into is it its of on or so such that the their then there these this to was what when where which while who why will with do does can my me we you your not no yes they them than also about".split())


def words(text): return {w for w in WORD.findall(text.lower()) if w not in STOP and len(w) > 2}


def check(path):
    problems = []
    bad = problems.append
    src = json.loads(Path(path).read_text())
    domain = src.get("domain")
    if domain not in DOMAINS: bad(f"domain {domain!r} is not one of {DOMAINS}")
    queries, docs = src.get("queries", []), src.get("documents", [])
    doc_ids = [d["id"] for d in docs]
    dup = [i for i, n in Counter(doc_ids).items() if n > 1]
    if dup: bad(f"duplicate document ids: {dup}")
    doc_text = {d["id"]: d["content"] for d in docs}
    if len(docs) < 80: bad(f"{len(docs)} documents; at least 80 are needed")
    extraction = [i for i in doc_ids if re.fullmatch(rf"{domain}-[^/]+/extraction_\d+\.txt", i)]
    slug = [i for i in doc_ids if re.fullmatch(r"[a-z0-9_]+/[A-Za-z0-9_()\-,.']+_\d+\.txt", i) and i not in extraction]
    if len(extraction) < 10: bad(f"only {len(extraction)} documents use the id style {domain}-<qid>/extraction_<k>.txt")
    if len(slug) < 10: bad(f"only {len(slug)} documents use the BRIGHT id style topic_slug/Title_N.txt")
    other = set(doc_ids) - set(extraction) - set(slug)
    if other: bad(f"document ids in neither style: {sorted(other)[:5]}")
    for d in docs:
        n = len(d["content"].split())
        if not 25 <= n <= 400: bad(f"document {d['id']} has {n} words (keep 25-400)")
    if len(queries) < 5: bad(f"{len(queries)} queries; at least 5 are needed")
    qids = [q["id"] for q in queries]
    if len(set(qids)) != len(qids): bad("duplicate query ids")
    weights_used, supporting_all = Counter(), Counter()
    for q in queries:
        qid = q["id"]
        if not isinstance(qid, str) or not qid: bad(f"query id {qid!r} must be a non-empty string")
        if len(q.get("query", "").split()) < 30: bad(f"query {qid}: the post is shorter than 30 words")
        aspects = q.get("aspects", [])
        if not 2 <= len(aspects) <= 6: bad(f"query {qid}: {len(aspects)} aspects (need 2-6)")
        gold = []
        for k, a in enumerate(aspects, 1):
            if a.get("weight") not in (1, 2, 3): bad(f"query {qid} aspect {k}: weight {a.get('weight')!r} not in 1-3")
            weights_used[a.get("weight")] += 1
            if not a.get("content"): bad(f"query {qid} aspect {k}: empty content")
            sup = a.get("supporting_docs", [])
            if not sup: bad(f"query {qid} aspect {k}: no supporting doc")
            for d in sup:
                if d not in doc_text: bad(f"query {qid} aspect {k}: supporting doc {d} is not in documents")
                supporting_all[d] += 1
            gold += sup
        ref = q.get("reference_answer", "")
        cited = set(re.findall(r"\[([^\]]+)\]", ref))
        if not cited: bad(f"query {qid}: reference answer cites no doc id in [brackets]")
        for c in cited - set(gold): bad(f"query {qid}: reference answer cites {c}, which is no supporting doc of it")
        qwords = words(q.get("query", ""))
        low_overlap = [d for d in gold if d in doc_text and len(words(doc_text[d]) & qwords) <= 3]
        if not low_overlap: bad(f"query {qid}: every gold doc shares many words with the post; at least one should need reasoning")
        distractors = [d for d in doc_ids if d not in gold and len(words(doc_text[d]) & qwords) >= 5]
        if len(distractors) < 3:
            bad(f"query {qid}: only {len(distractors)} non-gold documents share >= 5 content words with the post (need 3 distractors)")
    for w in (1, 2, 3):
        if not weights_used[w]: bad(f"weight {w} is used by no aspect")
    shared = [d for d, n in supporting_all.items() if n > 1]
    if shared: bad(f"documents supporting more than one aspect: {shared}")
    return problems


if __name__ == "__main__":
    failed = False
    for p in sys.argv[1:]:
        probs = check(p)
        print(f"{p}: {'ok' if not probs else f'{len(probs)} problem(s)'}")
        for m in probs: print("  -", m)
        failed |= bool(probs)
    sys.exit(1 if failed else 0)

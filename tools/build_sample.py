"""Build the bundled sample (brightpro/sample/) from the hand-written sources in sample/src/.

    python tools/build_sample.py          # (re)write the Parquet files
    python tools/build_sample.py --check  # exit 1 if the shipped files differ from what the sources give

sample/src/<domain>.json is the text a person edits (queries with their aspects, documents). From it this script
writes a mini Bright-Pro in the hub layout (bright_pro/{examples,aspects,documents}/<domain>.parquet) and a mini
original-BRIGHT in the same layout (bright/{examples,documents,long_documents,gpt4_reason}/<domain>.parquet),
whose examples carry reasoning, excluded_ids (in use for two queries per domain) and gold_ids_long."""
import json, re, sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
SRC, OUT = ROOT/"sample"/"src", ROOT/"brightpro"/"sample"
DOMAINS = ["biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living"]
# One domain writes aspect ids in the harness's other accepted form, so both forms ship and are exercised.
ASPECT_FORM = {"sustainable_living": "{domain}-{qid}-aspect-{k}"}
WORD = re.compile(r"[a-z]{4,}")


def long_id(doc_id):
    "BRIGHT long-document id of a passage: the passage id without its chunk number."
    folder, name = doc_id.split("/", 1)
    stem = re.sub(r"_\d+\.txt$", ".txt", name)
    return f"{folder}/{stem}"


def tables(src):
    domain = src["domain"]
    form = ASPECT_FORM.get(domain, "{domain}-{qid}-a{k}")
    examples, aspects = [], []
    for q in src["queries"]:
        gold = list(dict.fromkeys(d for a in q["aspects"] for d in a["supporting_docs"]))
        examples.append(dict(id=q["id"], query=q["query"], gold_ids=gold, reference_answer=q["reference_answer"]))
        for k, a in enumerate(q["aspects"], 1):
            aspects.append(dict(id=form.format(domain=domain, qid=q["id"], k=k), content=a["content"],
                                weight=a["weight"], supporting_docs=a["supporting_docs"]))
    documents = [dict(id=d["id"], content=d["content"]) for d in src["documents"]]
    return examples, aspects, documents


def bright_tables(src, examples, documents):
    "Original-BRIGHT-format rows derived from the same text."
    text = {d["id"]: d["content"] for d in documents}
    rows, reason = [], []
    for i, (q, ex) in enumerate(zip(src["queries"], examples)):
        reasoning = " ".join(a["content"] for a in q["aspects"])
        gold = set(ex["gold_ids"])
        excluded = ["N/A"]
        if i < 2:  # exclude the non-gold document sharing most words with the query, as BRIGHT does for near-duplicates
            qw = set(WORD.findall(q["query"].lower()))
            best = max((d for d in text if d not in gold), key=lambda d: (len(qw & set(WORD.findall(text[d].lower()))), d))
            excluded = [best]
        rows.append(dict(query=q["query"], reasoning=reasoning, id=q["id"], excluded_ids=excluded, gold_ids=ex["gold_ids"],
                         gold_ids_long=list(dict.fromkeys(long_id(g) for g in ex["gold_ids"])), gold_answer=ex["reference_answer"]))
        reason.append(dict(id=q["id"], query=f"{reasoning}\n\n{q['query']}"))
    longs = {}
    for d in documents: longs.setdefault(long_id(d["id"]), []).append(d["content"])
    long_docs = [dict(id=i, content="\n\n".join(parts)) for i, parts in longs.items()]
    return dict(examples=rows, documents=documents, long_documents=long_docs, gpt4_reason=reason)


def build():
    "{relative path: Arrow table} for every shipped file."
    files = {}
    for domain in DOMAINS:
        src = json.loads((SRC/f"{domain}.json").read_text(encoding="utf-8"))
        assert src["domain"] == domain, f"{domain}.json says domain {src['domain']}"
        examples, aspects, documents = tables(src)
        for config, rows in (("examples", examples), ("aspects", aspects), ("documents", documents)):
            files[f"bright_pro/{config}/{domain}.parquet"] = pa.Table.from_pylist(rows)
        for config, rows in bright_tables(src, examples, documents).items():
            files[f"bright/{config}/{domain}.parquet"] = pa.Table.from_pylist(rows)
    return files


if __name__ == "__main__":
    files = build()
    if "--check" in sys.argv:
        stale = [p for p, t in files.items() if not (OUT/p).exists() or not pq.read_table(OUT/p).equals(t)]
        extra = [str(p.relative_to(OUT)) for p in OUT.rglob("*.parquet") if str(p.relative_to(OUT)) not in files]
        for p in stale + extra: print(f"out of date: brightpro/sample/{p}")
        sys.exit(1 if stale or extra else 0)
    for p, t in files.items():
        (OUT/p).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(t, OUT/p)
    print(f"wrote {len(files)} files under {OUT}")

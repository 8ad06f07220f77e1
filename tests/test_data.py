"""The data layer from the outside: layouts, validation of broken data, the offline hub, real BRIGHT rows."""
import json, os, re, shutil, time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from brightpro.core import DOMAINS
from brightpro.data import (DataError, SAMPLE_ROOT, describe_dataset, load_bright, load_domain, load_domains, resolve_source,
                            validation_report)

SAMPLE = SAMPLE_ROOT/"bright_pro"


# ---------------------------------------------------------------- the bundled sample, read with plain pyarrow
@pytest.mark.parametrize("domain", DOMAINS)
def test_sample_meets_the_published_shape(domain):
    ex = pq.read_table(SAMPLE/"examples"/f"{domain}.parquet").to_pylist()
    asp = pq.read_table(SAMPLE/"aspects"/f"{domain}.parquet").to_pylist()
    docs = pq.read_table(SAMPLE/"documents"/f"{domain}.parquet").to_pylist()
    doc_ids = {d["id"] for d in docs}
    assert len(ex) >= 5 and len(docs) >= 80
    assert {a["weight"] for a in asp} == {1, 2, 3}, "every weight is used in every domain"
    for q in ex:
        mine = [a for a in asp if re.fullmatch(rf"{domain}-{q['id']}-(a|aspect-)\d+", a["id"])]
        assert 2 <= len(mine) <= 6, (q["id"], len(mine))
        assert all(a["supporting_docs"] for a in mine)
        assert set(q["gold_ids"]) <= doc_ids
        cited = set(re.findall(r"\[([^\]]+)\]", q["reference_answer"]))
        assert cited and cited <= set(q["gold_ids"])
    assert any(re.fullmatch(rf"{domain}-[^/]+/extraction_\d+\.txt", i) for i in doc_ids)
    assert any(not i.startswith(f"{domain}-") and re.fullmatch(r"[a-z0-9_]+/.+_\d+\.txt", i) for i in doc_ids)


def test_sample_validates_and_counts(cli):
    r = cli("data", "validate", "--dataset", "sample", "--strict")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 error(s), 0 warning(s)" in r.stdout
    r = cli("data", "stats", "--dataset", "sample", "--json")
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)["domains"]
    assert list(stats) == list(DOMAINS)
    for d, s in stats.items():
        rows = pq.read_table(SAMPLE/"examples"/f"{d}.parquet")
        assert s["queries"] == rows.num_rows
        assert s["documents"] == pq.ParquetFile(SAMPLE/"documents"/f"{d}.parquet").metadata.num_rows
        assert s["gold_docs"] == sum(len(g) for g in rows.column("gold_ids").to_pylist())
        assert s["aspects"] == pq.ParquetFile(SAMPLE/"aspects"/f"{d}.parquet").metadata.num_rows


def test_bright_sample_validates_and_uses_excluded_ids(cli):
    r = cli("data", "validate", "--dataset", "sample", "--benchmark", "bright")
    assert r.returncode == 0, r.stdout + r.stderr
    d = load_bright("biology")
    assert any(d.excluded.values())
    long = load_bright("biology", long=True)
    assert set().union(*map(set, long.gold.values())) <= set(long.doc_ids)


# ---------------------------------------------------------------- a dataset with every kind of problem
def _mirror(root: Path, examples, aspects, documents, domain="biology"):
    "Write the authors' JSON mirror layout: <root>/{examples,aspects,documents}/<domain>.json"
    for config, rows in (("examples", examples), ("aspects", aspects), ("documents", documents)):
        (root/config).mkdir(parents=True, exist_ok=True)
        (root/config/f"{domain}.json").write_text(json.dumps(rows))
    return root


def _clean_rows():
    examples = [dict(id="1", query="why is the sky blue", gold_ids=["d1", "d2"], reference_answer="[d1]"),
                dict(id="2", query="why do leaves fall", gold_ids=["d3"], reference_answer="[d3]")]
    aspects = [dict(id="biology-1-a1", content="scattering", weight=2, supporting_docs=["d1"]),
               dict(id="biology-1-a2", content="wavelength", weight=1, supporting_docs=["d2"]),
               dict(id="biology-2-a1", content="abscission", weight=3, supporting_docs=["d3"])]
    documents = [dict(id=f"d{i}", content=f"text {i}") for i in range(1, 6)]
    return examples, aspects, documents


def test_clean_mirror_loads_like_parquet(tmp_path):
    ex, asp, docs = _clean_rows()
    d = load_domain("biology", dataset=str(_mirror(tmp_path, ex, asp, docs)))
    assert d.qids == ["1", "2"]
    assert d.aspect_weights["1"] == {"biology-1-a1": 2 / 3, "biology-1-a2": 1 / 3}
    assert d.doc_ids == [f"d{i}" for i in range(1, 6)]


ERRORS = {"missing_field": "biology-1-a3", "aspect_id_format": "biology-1-b9", "bad_weight": "biology-1-a2",
          "duplicate_id": "2", "empty_query": "3"}
WARNINGS = {"gold_without_aspect": "gold doc d4", "gold_in_two_aspects": "d1 is under", "doc_in_two_queries": "d3",
            "supporting_not_gold": "d5 is not in gold_ids", "missing_from_corpus": "d9 is not in the documents",
            "query_without_aspects": "4", "empty_document": "d6", "aspect_without_query": "biology-77-a1"}


def _broken_rows():
    examples = [dict(id="1", query="why is the sky blue", gold_ids=["d1", "d2", "d4"], reference_answer="[d1]"),
                dict(id="2", query="why do leaves fall", gold_ids=["d3"], reference_answer="[d3]"),
                dict(id="2", query="duplicate id", gold_ids=["d3"], reference_answer="[d3]"),
                dict(id="3", query="   ", gold_ids=["d3"], reference_answer=""),
                dict(id="4", query="a query nobody annotated", gold_ids=["d9"], reference_answer="")]
    aspects = [dict(id="biology-1-a1", content="scattering", weight=2, supporting_docs=["d1", "d3", "d5"]),
               dict(id="biology-1-a2", content="wavelength", weight=7, supporting_docs=["d2", "d1"]),
               dict(id="biology-1-a3", content=None, weight=1, supporting_docs=["d2"]),
               dict(id="biology-1-b9", content="bad id", weight=1, supporting_docs=["d2"]),
               dict(id="biology-2-a1", content="abscission", weight=3, supporting_docs=["d3"]),
               dict(id="biology-77-a1", content="orphan", weight=1, supporting_docs=["d1"])]
    documents = [dict(id=f"d{i}", content=f"text {i}") for i in range(1, 6)] + [dict(id="d6", content="  ")]
    return examples, aspects, documents


def test_validate_names_every_problem(tmp_path, cli):
    root = _mirror(tmp_path, *_broken_rows())
    r = cli("data", "validate", "--dataset", root)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out
    assert "Traceback" not in out
    lines = r.stdout.splitlines()
    for level, expected in (("error", ERRORS), ("warning", WARNINGS)):
        for kind, where in expected.items():
            assert any(l.startswith(f"{level}: biology") and kind in l and where in l for l in lines), (kind, out)
            assert re.search(rf"^\s+\d+ {level} {kind}:", r.stdout, re.M), f"no count line for {kind}"
    r = cli("data", "validate", "--dataset", root, "--json")
    counts = json.loads(r.stdout)["counts"]
    assert set(counts["error"]) == set(ERRORS) and set(counts["warning"]) == set(WARNINGS)


def test_loading_refuses_errors_with_the_same_message(tmp_path, cli):
    root = _mirror(tmp_path, *_broken_rows())
    with pytest.raises(DataError, match="error"): load_domain("biology", dataset=str(root))
    r = cli("data", "stats", "--dataset", root)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "brightpro data validate" in r.stderr


def test_warnings_load_and_strict_fails(tmp_path, cli):
    ex, asp, docs = _clean_rows()
    ex[0]["gold_ids"].append("d4")                      # gold doc under no aspect
    asp.append(dict(id="biology-2-a2", content="shared", weight=1, supporting_docs=["d1"]))  # doc under two queries
    ex[1]["gold_ids"].append("d1")
    root = _mirror(tmp_path, ex, asp, docs)
    d = load_domain("biology", dataset=str(root))       # warnings never refuse
    # the harness keeps the last listing of d1 (query 2's aspect) for every query; per-query keeps both
    assert d.doc_aspects("harness")["d1"] == "biology-2-a2"
    assert d.doc_aspects("per-query")["1"]["d1"] == "biology-1-a1" and d.doc_aspects("per-query")["2"]["d1"] == "biology-2-a2"
    assert cli("data", "validate", "--dataset", root).returncode == 0
    r = cli("data", "validate", "--dataset", root, "--strict")
    assert r.returncode == 2 and "doc_in_two_queries" in r.stdout


def test_report_objects_render_what_the_command_line_prints(tmp_path, cli):
    "validation_report and describe_dataset give the exact text, JSON and exit status of `data validate` and `data stats`."
    broken = _mirror(tmp_path/"broken", *_broken_rows())
    ex, asp, docs = _clean_rows()
    ex[0]["gold_ids"].append("d4")                      # a warning only
    warned = _mirror(tmp_path/"warned", ex, asp, docs)
    for root in (broken, warned, "sample"):
        report = validation_report(str(root))
        for flags, strict in (((), False), (("--strict",), True)):
            r = cli("data", "validate", "--dataset", root, *flags)
            assert (r.stdout, r.returncode) == (report.to_text(strict) + "\n", report.exit_code(strict)), r.stdout
        assert cli("data", "validate", "--dataset", root, "--json").stdout == report.to_json() + "\n"
    assert (validation_report(str(warned)).n_errors, validation_report(str(warned)).n_warnings) == (0, 1)
    for args in ((), ("--benchmark", "bright", "--domain", "biology,economics")):
        stats = describe_dataset("sample", *(("biology,economics", None, "bright") if args else ()))
        assert cli("data", "stats", *args).stdout == stats.to_text() + "\n"
        assert cli("data", "stats", *args, "--json").stdout == stats.to_json() + "\n"


def test_source_files_and_load_domains_long(tmp_path):
    "Source.files lists one file or the shards in order ([] when absent and not required); long=True reads long documents."
    (tmp_path/"examples").mkdir()
    rows = pq.read_table(SAMPLE_ROOT/"bright"/"examples"/"economics.parquet")
    for i, part in enumerate((rows.slice(0, 2), rows.slice(2))):
        pq.write_table(part, tmp_path/"examples"/f"economics-0000{i}-of-00002.parquet")
    src = resolve_source(str(tmp_path), "bright")
    assert [p.name for p in src.files("examples", "economics")] == ["economics-00000-of-00002.parquet", "economics-00001-of-00002.parquet"]
    assert src.files("documents", "economics", required=False) == [] and src.table("documents", "economics", required=False) is None
    with pytest.raises(DataError, match="no documents file"): src.files("documents", "economics")
    assert src.table("examples", "economics").equals(rows) and src.num_rows("examples", "economics") == rows.num_rows
    long = load_domains("biology,economics", benchmark="bright", long=True)
    assert list(long) == ["biology", "economics"]
    for d in long.values():
        assert d.documents_config == "long_documents" and set().union(*map(set, d.gold.values())) <= set(d.doc_ids)


def test_documents_are_read_only_when_asked(tmp_path):
    ex, asp, docs = _clean_rows()
    root = _mirror(tmp_path, ex, asp, docs)
    (root/"documents"/"biology.json").write_text("{ this is not json")
    d = load_domain("biology", dataset=str(root))      # queries and aspects load without the corpus
    assert d.gold["1"] == ["d1", "d2"]
    with pytest.raises(DataError, match=r"documents/biology.json: cannot be read"): d.documents


def test_not_a_dataset_folder(tmp_path, cli):
    r = cli("data", "stats", "--dataset", tmp_path)
    assert r.returncode == 2 and "expected a folder examples/" in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------- the hub, offline
def test_hub_offline_fails_fast_with_one_line(cli):
    start = time.monotonic()
    r = cli("data", "stats", "--dataset", "hub", "--domain", "biology", env={"HF_HUB_OFFLINE": "1", "HF_HOME": "/tmp/brightpro-empty-hf-home"})
    elapsed = time.monotonic() - start
    assert r.returncode == 2
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "cannot reach the Hugging Face hub" in lines[0] and "dataset='DIR'" in lines[0], r.stderr
    assert elapsed < 20, f"took {elapsed:.1f}s"  # generous: interpreter start-up on a loaded CI machine


def test_hub_snapshot_layout_with_shards(tmp_path):
    "BRIGHT's hub files are named {config}/{domain}-00000-of-00001.parquet; a snapshot of them loads."
    src = SAMPLE_ROOT/"bright"
    for config in ("examples", "documents"):
        (tmp_path/config).mkdir()
        shutil.copy(src/config/"economics.parquet", tmp_path/config/"economics-00000-of-00001.parquet")
    d = load_bright("economics", dataset=str(tmp_path))
    assert d.qids == pq.read_table(src/"examples"/"economics.parquet").column("id").to_pylist()
    assert len(d.doc_ids) == pq.ParquetFile(src/"documents"/"economics.parquet").metadata.num_rows


# ---------------------------------------------------------------- real BRIGHT rows
@pytest.mark.parametrize("domain", DOMAINS)
def test_real_bright_examples_load(domain, bright_topics, tmp_path):
    hyphen = domain.replace("_", "-")
    (tmp_path/"examples").mkdir()
    shutil.copy(bright_topics/f"topics.bright-{hyphen}-original.jsonl.gz", tmp_path/"examples"/f"{domain}.jsonl.gz")
    d = load_bright(domain, dataset=str(tmp_path))
    qrels = {}
    for line in (bright_topics/f"qrels.bright-{hyphen}.txt").read_text().splitlines():
        qid, _, doc, rel = line.split()
        if int(rel) > 0: qrels.setdefault(qid, set()).add(doc)
    assert {q: set(g) for q, g in d.gold.items() if g} == qrels
    assert all(not x for x in d.excluded.values()), "['N/A'] means no excluded ids"
    assert "reasoning" in d.queries and "gold_ids_long" in d.queries


def _fake_hub_cache(home: Path, commit: str, repo="datasets--yale-nlp--Bright-Pro", files=SAMPLE):
    "The Hugging Face cache layout a real download leaves: refs/main names the commit, snapshots/<commit>/ the files."
    cache = home/"hub"/repo
    (cache/"refs").mkdir(parents=True)
    (cache/"refs"/"main").write_text(commit)
    shutil.copytree(files, cache/"snapshots"/commit)
    return home


def test_hub_reads_a_cached_snapshot_offline_and_records_its_commit(tmp_path, cli):
    commit = "dbdc22b" + "0" * 33
    home = _fake_hub_cache(tmp_path, commit)
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(home)}
    r = cli("data", "stats", "--dataset", "hub", "--domain", "biology", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["domains"]["biology"]["queries"] == pq.read_table(SAMPLE/"examples"/"biology.parquet").num_rows
    assert "note" not in r.stderr, "the harness's own revision needs no note"
    r = cli("data", "stats", "--dataset", "hub", "--revision", commit, "--domain", "biology", "--json", env=env)
    assert r.returncode == 0, r.stderr


def test_hub_names_a_commit_other_than_the_harness(tmp_path, cli):
    home = _fake_hub_cache(tmp_path, "a" * 40)
    r = cli("data", "validate", "--dataset", "hub", "--domain", "economics", env={"HF_HUB_OFFLINE": "1", "HF_HOME": str(home)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "resolved to commit aaaaaaaaaaaa" in r.stderr and "dbdc22b" in r.stderr


# ---------------------------------------------------------------- issue 8: faults named in one line
def _lines(r):
    return [l for l in r.stderr.splitlines() if l.strip()]


def test_a_gold_id_listed_twice_warns(tmp_path, cli):
    ex, asp, docs = _clean_rows()
    ex[0]["gold_ids"] = ["d1", "d2", "d1"]
    root = _mirror(tmp_path, ex, asp, docs)
    r = cli("data", "validate", "--dataset", root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning: biology 1 [examples.gold_ids] duplicate_gold_id: gold doc d1 is listed 2 times" in r.stdout
    assert re.search(r"^\s+1 warning duplicate_gold_id: \S", r.stdout, re.M)
    assert cli("data", "validate", "--dataset", root, "--strict").returncode == 2
    assert load_domain("biology", dataset=str(root)).gold["1"] == ["d1", "d2", "d1"]   # a warning never refuses


def test_the_document_cache_sees_a_same_size_edit_with_the_old_mtime(tmp_path):
    ex, asp, docs = _clean_rows()
    root = _mirror(tmp_path, ex, asp, docs)
    f = root/"documents"/"biology.json"
    assert load_domain("biology", dataset=str(root)).documents["content"][0].as_py() == "text 1"   # builds the entry
    st = f.stat()
    docs[0]["content"] = "TEXT 1"
    f.write_text(json.dumps(docs))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (f.stat().st_size, f.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert load_domain("biology", dataset=str(root)).documents["content"][0].as_py() == "TEXT 1"


def _parquet_mirror(root: Path, examples, aspects, documents, domain="biology"):
    "The hub layout, each table given as an Arrow table or as rows."
    for config, rows in (("examples", examples), ("aspects", aspects), ("documents", documents)):
        (root/config).mkdir(parents=True, exist_ok=True)
        pq.write_table(rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows), root/config/f"{domain}.parquet")
    return root


def _no_queries(ex, asp, docs): return pa.Table.from_pylist(ex).slice(0, 0), asp, docs
def _no_documents(ex, asp, docs): return ex, asp, pa.Table.from_pylist(docs).slice(0, 0)
def _joined_gold(ex, asp, docs): return [dict(r, gold_ids=";".join(r["gold_ids"])) for r in ex], asp, docs
def _string_support(ex, asp, docs): return ex, [dict(a, supporting_docs=";".join(a["supporting_docs"])) for a in asp], docs
def _string_weight(ex, asp, docs): return ex, [dict(a, weight=str(a["weight"])) for a in asp], docs
def _float_weight(ex, asp, docs): return ex, [dict(a, weight=float(a["weight"])) for a in asp], docs
def _number_query(ex, asp, docs): return [dict(r, query=7) for r in ex], asp, docs
def _list_content(ex, asp, docs): return ex, asp, [dict(d, content=[d["content"]]) for d in docs]


@pytest.mark.parametrize("make, line, refused_on_load", [
    (_no_queries, "error: biology * [examples] empty_domain: biology has no queries", True),
    (_no_documents, "error: biology * [documents] empty_domain: biology has no documents", False),
    (_joined_gold, "error: biology 1 [examples.gold_ids] bad_type: gold_ids is a string 'd1;d2', expected a list of strings", True),
    (_string_support, "error: biology biology-1-a1 [aspects.supporting_docs] bad_type: supporting_docs is a string", True),
    (_string_weight, "error: biology biology-1-a1 [aspects.weight] bad_type: weight is a string '2', expected an integer", True),
    (_float_weight, "error: biology biology-1-a1 [aspects.weight] bad_type: weight is a number 2.0, expected an integer", True),
    (_number_query, "error: biology 1 [examples.query] bad_type: query is an integer 7, expected text", True),
    (_list_content, "error: biology * [documents.content] bad_type: documents content is list<", False),
])
def test_validate_checks_emptiness_and_types(tmp_path, cli, make, line, refused_on_load):
    root = _parquet_mirror(tmp_path, *make(*_clean_rows()))
    r = cli("data", "validate", "--dataset", root)
    assert r.returncode == 2 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert any(l.startswith(line) for l in r.stdout.splitlines()), r.stdout
    kind = line.split("] ")[1].split(":")[0]
    assert re.search(rf"^\s+\d+ error {kind}: \S", r.stdout, re.M)
    if refused_on_load:
        with pytest.raises(DataError, match=kind): load_domain("biology", dataset=str(root))
    else:   # the documents are read on first use; bad ones are refused then, empty ones by `retrieve`
        d = load_domain("biology", dataset=str(root))
        if make is _list_content:
            with pytest.raises(DataError, match="field content is list<.*expected text"): d.documents
        else: assert d.documents.num_rows == 0


def test_a_json_field_of_mixed_types_is_named(tmp_path, cli):
    ex, asp, docs = _clean_rows()
    ex[1]["gold_ids"] = "d3"
    root = _mirror(tmp_path, ex, asp, docs)
    r = cli("data", "validate", "--dataset", root)
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert _lines(r) == [f"brightpro: error: {root}/examples/biology.json: field gold_ids mixes value types "
                         "(a list in row 1, a string in row 2)"], r.stderr


@pytest.mark.parametrize("fields, missing", [(dict(id="id", text="content"), "content"), (dict(doc="id", content="content"), "id")])
def test_a_documents_file_without_id_or_content_is_named(tmp_path, cli, fields, missing):
    ex, asp, docs = _clean_rows()
    table = pa.table({name: [d[f] for d in docs] for name, f in fields.items()})
    root = _parquet_mirror(tmp_path, ex, asp, table)
    where = root/"documents"/"biology.parquet"
    expected = f"{where}: documents of biology have no field {missing} (fields: {', '.join(fields)})"
    with pytest.raises(DataError) as e: load_domain("biology", dataset=str(root)).documents
    assert str(e.value) == expected
    r = cli("data", "validate", "--dataset", root)
    assert r.returncode == 2 and "FieldRef" not in r.stdout + r.stderr
    assert f"error: biology * [documents.{missing}] missing_field: documents has no column {missing} (fields: {', '.join(fields)})" in r.stdout
    r = cli("retrieve", "--dataset", root, "--domain", "biology", "--out", tmp_path/"runs", "--cache-dir", tmp_path/"c")
    assert r.returncode == 2 and _lines(r) == [f"brightpro: error: {expected}"], r.stderr


def test_reasoning_configs_and_shards_without_a_field_are_named(tmp_path):
    root = tmp_path/"bright"
    shutil.copytree(SAMPLE_ROOT/"bright", root)
    reason = root/"gpt4_reason"/"biology.parquet"
    pq.write_table(pq.read_table(reason).rename_columns({"query": "text"}), reason)
    with pytest.raises(DataError) as e: load_bright("biology", dataset=str(root), queries="gpt4_reason")
    assert str(e.value).startswith(f"{reason}: gpt4_reason of biology have no field query (fields: id, text")
    docs = pq.read_table(root/"documents"/"biology.parquet")
    (root/"documents"/"biology.parquet").unlink()
    pq.write_table(docs.slice(0, 10), root/"documents"/"biology-00000-of-00002.parquet")
    pq.write_table(docs.slice(10).select(["id"]), root/"documents"/"biology-00001-of-00002.parquet")
    with pytest.raises(DataError) as e: load_bright("biology", dataset=str(root)).documents
    assert str(e.value).startswith(f"{root}/documents/biology-00001-of-00002.parquet: its fields [id (string)] differ from those of "
                                   "biology-00000-of-00002.parquet") and "Arrow" not in str(e.value)


def _big_mirror(root):
    "A clean domain whose documents (about 0.9 MiB as an Arrow file) do not fit a 256 KiB disk."
    ex, asp, docs = _clean_rows()
    docs += [dict(id=f"x{i}", content=f"filler text number {i} " * 20) for i in range(2000)]
    return _parquet_mirror(root, ex, asp, docs)


def test_a_full_disk_for_the_document_cache_is_one_line_and_leaves_nothing(tmp_path, tmpfs, monkeypatch, cli):
    root, full = _big_mirror(tmp_path/"data"), tmpfs("full", "size=256k")
    monkeypatch.setenv("BRIGHTPRO_CACHE", str(full))
    with pytest.raises(DataError) as e: load_domain("biology", dataset=str(root)).documents
    assert str(e.value).startswith(f"{full}/documents: no space left for the document cache (")
    assert "free space there or set BRIGHTPRO_CACHE" in str(e.value)
    assert [p for p in full.rglob("*") if p.is_file()] == [], "no temporary or partial file"
    r = cli("retrieve", "--dataset", root, "--domain", "biology", "--out", tmp_path/"runs", "--cache-dir", tmp_path/"c")
    assert r.returncode == 2 and len(_lines(r)) == 1 and "no space left for the document cache" in r.stderr, r.stderr
    assert [p for p in full.rglob("*") if p.is_file()] == []


def test_a_read_only_document_cache_reads_without_it_and_says_so(tmp_path, tmpfs, monkeypatch, capsys):
    root, ro = _big_mirror(tmp_path/"data"), tmpfs("ro", "ro,size=256k")
    monkeypatch.setenv("BRIGHTPRO_CACHE", str(ro))
    docs = load_domain("biology", dataset=str(root)).documents
    assert docs.num_rows == 2005 and docs["content"][0].as_py() == "text 1"
    err = capsys.readouterr().err
    assert err.startswith(f"brightpro: note: cannot write the document cache in {ro}/documents (Read-only file system)"), err
    assert len(err.splitlines()) == 1


def test_a_cached_corpus_is_fingerprinted_without_hashing_its_texts(tmp_path, monkeypatch):
    "Issue 22: the document cache entry stores the corpus fingerprint; a mapped entry gives it without hashing, the same as"
    "hashing the documents as plain lists does. An entry written before it was stored is hashed, to the same fingerprint."
    import brightpro.data as data
    from brightpro.retriever import corpus_hash
    monkeypatch.setenv("BRIGHTPRO_CACHE", str(tmp_path))
    monkeypatch.setattr(data, "_STORED", {}); monkeypatch.setattr(data, "_HASHED", {})
    hashed, update = [], data._update_hash
    monkeypatch.setattr(data, "_update_hash", lambda h, arr: hashed.append(len(arr)) or update(h, arr))
    source = load_domain("biology").source
    data.read_documents(source, "documents", "biology")           # builds the entry: its fingerprint hashed once
    assert len(hashed) == 2
    docs = data.read_documents(source, "documents", "biology")    # maps it
    fingerprint = corpus_hash(docs.column("id"), docs.column("content"))
    assert len(hashed) == 2
    assert fingerprint == corpus_hash(docs.column("id").to_pylist(), docs.column("content").to_pylist()) and len(hashed) == 4
    [entry] = (tmp_path/"documents").glob("biology-*.arrow")
    plain = pa.ipc.open_file(str(entry)).read_all().replace_schema_metadata(None)
    with pa.OSFile(str(entry), "wb") as f, pa.ipc.new_file(f, plain.schema) as w: w.write_table(plain)   # as older code wrote it
    data._STORED.clear(); data._HASHED.clear()
    docs = data.read_documents(source, "documents", "biology")
    assert corpus_hash(docs.column("id"), docs.column("content")) == fingerprint and len(hashed) == 6


def test_a_settled_source_is_keyed_without_reading_it_again_and_an_edit_is_seen(tmp_path, monkeypatch):
    "Issue 22: the document cache's key (a hash of the source files' bytes) is remembered with the files' stamps; a warm"
    "read of settled files hashes nothing, an edit that keeps the size and puts the old mtime back is read afresh."
    import brightpro.core, brightpro.data as data
    monkeypatch.setenv("BRIGHTPRO_CACHE", str(tmp_path/"cache"))
    root = tmp_path/"mine"; (root/"documents").mkdir(parents=True)
    f = root/"documents"/"biology.json"
    f.write_text('[{"id": "d1", "content": "old text"}]')
    read, key = [], data._content_key
    monkeypatch.setattr(data, "_content_key", lambda files: read.append(len(files)) or key(files))
    source = data.Source(root, "mine")
    content = lambda: data.read_documents(source, "documents", "biology")["content"][0].as_py()
    assert content() == "old text" and content() == "old text" and len(read) == 2   # just written: hashed each time
    monkeypatch.setattr(brightpro.core, "RACY_NS", 0)                                # as if written long ago
    assert content() == "old text" and len(read) == 3                                 # hashed once more, remembered
    assert content() == "old text" and content() == "old text" and len(read) == 3    # nothing read
    st = f.stat()
    f.write_text('[{"id": "d1", "content": "new text"}]'); os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (f.stat().st_size, f.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert content() == "new text" and len(read) == 4


@pytest.mark.parametrize("benchmark, long, queries", [("brightpro", False, "examples"), ("bright", False, "examples"),
                                                      ("bright", True, "examples"), ("bright", False, "gpt4_reason")])
def test_a_domain_reads_its_views_from_arrow_as_from_the_dataframe(benchmark, long, queries):
    "Issue 22: query ids and texts, gold and excluded ids read from the Arrow examples (no pandas) equal the DataFrame's."
    from brightpro.data import Domain
    kwargs = {"long": long, "queries": queries} if benchmark == "bright" else {}
    for name, dom in load_domains("all", "sample", benchmark=benchmark, **kwargs).items():
        from_arrow = (dom.qids, dom.query_text, dom.gold, dom.excluded)
        assert isinstance(dom.__dict__["queries"], pa.Table) == (queries == "examples")   # reasoning texts are put in a DataFrame
        framed = Domain(dom.name, dom.queries, dom.aspects, dom.source, dom.documents_config, dom.queries_config, dom.query_source)
        assert from_arrow == (framed.qids, framed.query_text, framed.gold, framed.excluded), name

"""Hostile data (issue 16, cases 16-18 and the low ones): ids that no TREC file can hold, invalid UTF-8, domain names
from file names that climb out of a folder, fractional weights, and a dataset given as a file."""
import json, shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from brightpro.core import BrightproError
from brightpro.data import DataError, SAMPLE_ROOT, load_domain, resolve_source
from test_data import _clean_rows

SAMPLE = SAMPLE_ROOT/"bright_pro"


_rows = _clean_rows   # the clean domain of test_data, which each test here spoils in one way


def _write(root: Path, examples, aspects, documents, suffix="json", domain="biology"):
    "A local copy: JSON mirror rows, or parquet (each table given as rows or as an Arrow table)."
    for config, rows in (("examples", examples), ("aspects", aspects), ("documents", documents)):
        (root/config).mkdir(parents=True, exist_ok=True)
        if suffix == "json": (root/config/f"{domain}.json").write_text(json.dumps(rows))
        else: pq.write_table(rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows), root/config/f"{domain}.parquet")
    return root


def _lines(r): return [l for l in r.stderr.splitlines() if l.strip()]


# ---------------------------------------------------------------- case 16: ids with white space
def _doc_id(bad):
    def make(ex, asp, docs): docs[3]["id"] = bad; return ex, asp, docs
    return make

def _query_id(bad):
    def make(ex, asp, docs):
        ex[1]["id"] = bad
        asp[2]["id"] = f"biology-{bad}-a1"
        return ex, asp, docs
    return make


@pytest.mark.parametrize("make, bad, field", [
    (_doc_id("d4 x"), "d4 x", "documents.id"), (_doc_id("d4\tx"), "d4\tx", "documents.id"),
    (_doc_id("d4\nx"), "d4\nx", "documents.id"), (_doc_id(""), "", "documents.id"),
    (_doc_id("d4\u00a0x"), "d4\u00a0x", "documents.id"), (_query_id("2 b"), "2 b", "examples.id")])
def test_ids_that_a_trec_file_cannot_hold_are_errors(tmp_path, cli, make, bad, field):
    "Before: `validate` passed them (exit 0) and `retrieve` wrote a run its own `evaluate` could not read."
    root = _write(tmp_path/"data", *make(*_rows()))
    r = cli("data", "validate", "--dataset", root)
    assert r.returncode == 2 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    line = f"error: biology {bad!r} [{field}] bad_id: "
    assert any(l.startswith(line) for l in r.stdout.splitlines()), r.stdout
    assert "bad_id" in json.loads(cli("data", "validate", "--dataset", root, "--json").stdout)["counts"]["error"]
    out = tmp_path/"runs"
    r = cli("retrieve", "--dataset", root, "--domain", "biology", "--out", out, "--cache-dir", tmp_path/"c")
    assert r.returncode == 2 and len(_lines(r)) == 1 and "Traceback" not in r.stderr, r.stderr
    assert repr(bad) in r.stderr and any(w in r.stderr for w in ("white space", "is empty", "] bad_id")), r.stderr
    assert not list(out.rglob("*.trec")) if out.exists() else True


def test_the_document_id_check_refuses_on_load_with_the_file_and_row(tmp_path):
    root = _write(tmp_path, *_doc_id("d4\tx")(*_rows()))
    d = load_domain("biology", dataset=str(root))          # queries are fine: documents are read on first use
    with pytest.raises(DataError) as e: d.documents
    assert str(e.value).startswith(f"{root}/documents/biology.json: documents of biology: id 'd4\\tx' (row 4) ")
    assert "\n" not in str(e.value)


# ---------------------------------------------------------------- case 17: invalid UTF-8 in a parquet text column
def _bad_text(texts, row):
    "`texts` as an Arrow string column whose `row` holds bytes that are not UTF-8 (Parquet stores them without a check)."
    raw = [t.encode() for t in texts]
    raw[row] = b"caf\xe9 au lait \xff\xfe"
    return pa.array(raw, pa.binary()).view(pa.string())


@pytest.mark.parametrize("config, column, row", [("documents", "content", 2), ("documents", "content", 0), ("examples", "query", 1)])
def test_invalid_utf8_is_named_with_file_column_and_row(tmp_path, cli, config, column, row):
    "Before: `validate` passed (mid-text) or crashed (at the start); `retrieve` and `agent` crashed with tracebacks."
    ex, asp, docs = _rows()
    tables = dict(examples=pa.Table.from_pylist(ex), aspects=pa.Table.from_pylist(asp), documents=pa.Table.from_pylist(docs))
    t = tables[config]
    tables[config] = t.set_column(t.column_names.index(column), column, _bad_text(t.column(column).to_pylist(), row))
    root = _write(tmp_path/"data", *tables.values(), suffix="parquet")
    expected = [f"brightpro: error: {root}/{config}/biology.parquet: column {column}, row {row + 1} is not valid UTF-8; "
                "re-encode the file as UTF-8 (or fix that row)"]
    for args in (("data", "validate", "--dataset", root),
                 ("retrieve", "--dataset", root, "--domain", "biology", "--out", tmp_path/"runs", "--cache-dir", tmp_path/"c"),
                 ("agent", "--policy", "prf", "--dataset", root, "--domain", "biology", "--out", tmp_path/"agent",
                  "--cache-dir", tmp_path/"c", "--snippet-tokenizer", "approx")):
        r = cli(*args)
        assert (r.returncode, _lines(r)) == (2, expected), (args[0], r.stdout, r.stderr)
    assert not list((tmp_path/"runs").rglob("*.trec")) if (tmp_path/"runs").exists() else True


# ---------------------------------------------------------------- case 18: domain names from file names
@pytest.mark.parametrize("name, domain", [("...parquet", ".."), ("..json", "."), (".hidden.parquet", "")])
def test_a_file_name_that_gives_an_unsafe_domain_is_refused(tmp_path, cli, name, domain):
    "Before: `...parquet` gave a domain `..`, so `agent` wrote its traces outside --out and `report` failed with a traceback."
    root = tmp_path/"data"
    for config in ("examples", "aspects", "documents"):
        shutil.copytree(SAMPLE/config, root/config, dirs_exist_ok=True)
        src = SAMPLE/config/"biology.parquet"
        if name.endswith(".json"): (root/config/name).write_text(json.dumps(pq.read_table(src).to_pylist()))
        else: shutil.copy(src, root/config/name)
    expected = [f"brightpro: error: {root}/examples/{name}: this file name gives the domain {domain!r}, which is not a safe name "
                "(letters, digits, _ and -, not starting with a dot or -); rename the file {domain}.parquet (or .json, .jsonl)"]
    out = tmp_path/"runs"/"agent"
    for args in (("data", "validate", "--dataset", root), ("data", "stats", "--dataset", root),
                 ("agent", "--policy", "prf", "--dataset", root, "--out", out, "--qids", "0", "--snippet-tokenizer", "approx")):
        r = cli(*args)
        assert (r.returncode, _lines(r)) == (2, expected), (args[:2], r.stdout, r.stderr)
    assert not (tmp_path/"runs"/"traces.jsonl").exists() and not list(tmp_path.glob("**/traces.jsonl"))
    assert (root/"examples"/".DS_Store").touch() is None and resolve_source(str(SAMPLE)).domains()  # no data file: ignored


def test_the_agent_keeps_every_domain_folder_inside_out(tmp_path):
    "A Domain built by hand with a name that climbs out of `out` is refused before anything is written."
    from brightpro.agent import run_agent
    d = load_domain("biology")
    d.name = ".."
    with pytest.raises(BrightproError, match=r"domain .\.\.. does not name a folder inside"):
        run_agent({"..": d}, out=tmp_path/"out", policy="prf", qids="0", snippet_tokenizer="approx")
    assert not (tmp_path/"traces.jsonl").exists() and not (tmp_path/"out").exists()


# ---------------------------------------------------------------- low: fractional weights, a file given as a folder
def test_a_fractional_weight_in_a_json_mirror_names_only_its_row(tmp_path, cli):
    "Before: JSON's 2, 1.5, 3 become one float column, and every row was reported as 'a number 2.0'."
    ex, asp, docs = _rows()
    asp[1]["weight"] = 1.5
    r = cli("data", "validate", "--dataset", _write(tmp_path, ex, asp, docs))
    errors = [l for l in r.stdout.splitlines() if l.startswith("error:")]
    assert r.returncode == 2 and errors == ["error: biology biology-1-a2 [aspects.weight] bad_type: weight is a number 1.5, "
                                            "expected an integer 1, 2 or 3"], r.stdout


def test_a_file_given_as_the_dataset_says_so(tmp_path, cli):
    root = _write(tmp_path, *_rows())
    r = cli("data", "stats", "--dataset", root/"examples"/"biology.json")
    assert r.returncode == 2 and _lines(r) == [f"brightpro: error: {root}/examples/biology.json: a file, not a dataset folder; "
                                               f"pass the folder that holds examples/ (here {root}), 'sample' or 'hub'"], r.stderr


@pytest.mark.parametrize("make, why", [(lambda p: p.write_text("{}"), "is a file, not a model folder"),
                                       (lambda p: p.mkdir(), "holds no model (no modules.json or config.json)")])
def test_a_dense_model_path_that_is_no_model_says_what_is_wrong(tmp_path, cli, make, why):
    "Before: 'NotADirectoryError: ... `model_name_or_path` must be ...' and 'Unrecognized model ... model_type key'."
    make(tmp_path/"model")
    r = cli("retrieve", "--retriever", f"dense:{tmp_path/'model'}", "--domain", "biology", "--out", tmp_path/"runs", "--cache-dir", tmp_path/"c")
    assert r.returncode == 2 and len(_lines(r)) == 1 and why in r.stderr, r.stderr
    assert f"cannot load dense model '{tmp_path/'model'}': " in r.stderr

"""Query sources: query files (formats, bad input named by file:line), BRIGHT's reasoning configs mapped onto Bright-Pro by
id (mapped, missing, text differs, dropped), generation against the scripted local server (the prompt that reaches it,
resume after a failure, zero requests on repeat), and retrieval from a query file into a run folder of its own."""
import gzip, json, shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from brightpro.core import BrightproError, file_digest
from brightpro.data import DataError, bright_query_mapping, load_domain, load_domains, read_query_file
from brightpro.llm import LLMClient
from brightpro.queries import generate_queries
from brightpro.retrieve import retrieve
from brightpro.runs import read_trec_run
from brightpro.scripted_llm import error_reply, text_reply
from conftest import ROOT

SAMPLE = ROOT/"brightpro"/"sample"
# BRIGHT's reason.py (xlang-ai/BRIGHT@84af2f2), typed here from the source, not taken from brightpro
BRIGHT_INSTRUCTIONS = ("\n\nInstructions:\n1. Identify the essential problem.\n2. Think step by step to reason and describe what "
                       "information could be relevant and helpful to address the questions in detail.\n3. Draft an answer with as many thoughts as you have.\n")


def _qids(domain="biology"): return pq.read_table(SAMPLE/"bright_pro"/"examples"/f"{domain}.parquet")["id"].to_pylist()


@pytest.mark.parametrize("name,body", [
    ("q.json", lambda ids: json.dumps({q: f"t {q}" for q in ids})),
    ("q.json", lambda ids: json.dumps({"biology": {q: f"t {q}" for q in ids}})),
    ("q.json", lambda ids: json.dumps([{"id": q, "query": f"t {q}", "reasoning": "x"} for q in ids])),   # reason.py's output
    ("q.jsonl", lambda ids: "".join(json.dumps({"domain": "biology", "id": q, "query": f"t {q}"}) + "\n" for q in ids)),
    ("q.tsv", lambda ids: "".join(f"{q}\tt {q}\n" for q in ids)),
    ("q.tsv", lambda ids: "domain\tqid\tquery\n" + "".join(f"biology\t{q}\tt {q}\n" for q in ids)),
])
def test_file_formats_give_the_same_texts(tmp_path, name, body):
    path = tmp_path/name
    path.write_text(body(_qids()))
    dom = load_domains("biology", queries=path)["biology"]
    assert dom.query_text == {q: f"t {q}" for q in _qids()}
    assert dom.provenance["queries"]["source"] == name and dom.provenance["queries"]["digest"] == file_digest(path)


def test_gzipped_tsv(tmp_path):
    path = tmp_path/"q.tsv.gz"
    with gzip.open(path, "wt") as f: f.write("".join(f"{q}\tgz {q}\n" for q in _qids()))
    assert load_domains("biology", queries=path)["biology"].query_text["0"] == "gz 0"


@pytest.mark.parametrize("name,text,message", [
    ("a.jsonl", '{"id": "0", "query": "a"}\nnot json\n', "a.jsonl:2: not a JSON object"),
    ("a.jsonl", '{"id": "0", "query": "a"}\n{"id": "0", "query": "b"}\n', "a.jsonl:2: query 0 again (first at "),
    ("a.jsonl", '{"id": "0"}\n', "a.jsonl:1: expected fields id and query"),
    ("a.jsonl", '{"id": "0", "query": ""}\n', "a.jsonl:1: query 0 has an empty text"),
    ("a.jsonl", '{"id": "0 1", "query": "x"}\n', "a.jsonl:1: query id '0 1' is not a non-empty id"),
    ("a.tsv", "0\tfine\n1 no tab\n", "a.tsv:2: expected qid<TAB>text, found no tab"),
    ("a.json", '{"0": "a", "0": "b"}', "key '0' appears twice"),
    ("a.json", '{"0": "a"', "a.json: cannot be read (JSONDecodeError"),
    ("a.txt", "0\ta\n", "a query file must end in .json, .jsonl or .tsv"),
    ("a.jsonl", "", "holds no queries"),
])
def test_bad_files_are_named_by_line(tmp_path, name, text, message):
    (tmp_path/name).write_text(text)
    with pytest.raises(DataError) as e: read_query_file(tmp_path/name)
    assert message in str(e.value) and str(tmp_path/name) in str(e.value) and "\n" not in str(e.value)


def test_unknown_missing_and_ambiguous_qids(tmp_path):
    ids = _qids()
    (tmp_path/"extra.tsv").write_text("".join(f"{q}\tx\n" for q in ids) + "q77\tx\n")
    with pytest.raises(DataError, match=rf"extra.tsv:{len(ids) + 1}: query q77 is not a query of biology"): load_domains("biology", queries=tmp_path/"extra.tsv")
    (tmp_path/"few.tsv").write_text(f"{ids[0]}\tx\n")
    with pytest.raises(DataError, match=f"lacks {len(ids) - 1} of the {len(ids)} queries of biology"): load_domains("biology", queries=tmp_path/"few.tsv")
    (tmp_path/"flat.tsv").write_text("".join(f"{q}\tx\n" for q in ids))
    with pytest.raises(DataError, match="name no domain and 2 domains are loaded"): load_domains("biology,economics", queries=tmp_path/"flat.tsv")
    (tmp_path/"mixed.jsonl").write_text('{"id": "0", "query": "x"}\n{"domain": "biology", "id": "1", "query": "y"}\n')
    with pytest.raises(DataError, match="some entries name a domain and some do not"): read_query_file(tmp_path/"mixed.jsonl")


def test_cli_bad_query_file_one_line(cli, tmp_path):
    (tmp_path/"q.jsonl").write_text('{"id": "0", "query": "a"}\n{oops\n')
    res = cli("retrieve", "--domain", "biology", "--queries", tmp_path/"q.jsonl", "--out", tmp_path/"runs", "--cache-dir", tmp_path/"c")
    assert res.returncode == 2 and f"{tmp_path/'q.jsonl'}:2: not a JSON object" in res.stderr and "Traceback" not in res.stderr


def _bright_copy(tmp_path):
    "A local BRIGHT copy of the sample in which Bright-Pro's query 1 is gone, query 2's text changed and an extra id 99 exists."
    root = tmp_path/"bright"
    shutil.copytree(SAMPLE/"bright", root)
    for config in ("examples", "gpt4_reason"):
        rows = pq.read_table(root/config/"biology.parquet").to_pylist()
        rows = [r for r in rows if r["id"] != "1"] + [{**rows[0], "id": "99"}]
        if config == "examples": rows = [{**r, "query": "another question"} if r["id"] == "2" else r for r in rows]
        pq.write_table(pa.Table.from_pylist(rows), root/config/"biology.parquet")
    return root


def test_mapping_reports_missing_changed_and_dropped(tmp_path):
    root = _bright_copy(tmp_path)
    reason = {r["id"]: r["query"] for r in pq.read_table(root/"gpt4_reason"/"biology.parquet").to_pylist()}
    mapping = bright_query_mapping({"biology": load_domain("biology")}, "gpt4_reason", bright_dataset=root)
    ids = mapping.ids["biology"]
    assert ids["missing"] == ["1"] and ids["differs"] == ["2"] and ids["dropped"] == ["99"]
    assert ids["mapped"] == [q for q in _qids() if q not in ("1", "2")]
    table = mapping.table().iloc[0]
    assert (table["mapped"], table["missing in BRIGHT"], table["text differs"], table["dropped by Bright-Pro"]) == (len(_qids()) - 2, 1, 1, 1)
    dom = load_domains("biology", queries="gpt4_reason", bright_dataset=root)["biology"]
    own = pq.read_table(SAMPLE/"bright_pro"/"examples"/"biology.parquet").to_pylist()
    for r in own:   # mapped ids take BRIGHT's reasoning text, the others keep Bright-Pro's own
        assert dom.query_text[r["id"]] == (r["query"] if r["id"] in ("1", "2") else reason[r["id"]])
    assert dom.provenance["queries"]["kept"] == ["1", "2"] and dom.queries_tag == "gpt4_reason"


def test_mapping_on_the_sample_and_hub_offline():
    dom = load_domains("biology", queries="gpt4_reason")["biology"]
    reason = {r["id"]: r["query"] for r in pq.read_table(SAMPLE/"bright"/"gpt4_reason"/"biology.parquet").to_pylist()}
    assert dom.query_text == {q: reason[q] for q in _qids()} and dom.benchmark == "brightpro"
    with pytest.raises(DataError, match="cannot reach the Hugging Face hub for xlangai/BRIGHT"):
        load_domains("biology", queries="gpt4_reason", bright_dataset="hub")
    with pytest.raises(BrightproError, match="unknown query source 'gpt5'"): load_domains("biology", queries="gpt5")


def test_mapping_with_real_bright_ids(bright_topics, tmp_path):
    "Real BRIGHT rows (../shared/data): a Bright-Pro-like copy that drops two queries and edits one maps all the rest."
    rows = [json.loads(l) for l in gzip.open(bright_topics/"topics.bright-biology-original.jsonl.gz", "rt")]
    bright = tmp_path/"bright"
    for config, rs in (("examples", rows), ("gpt4_reason", [{**r, "query": "R " + r["id"]} for r in rows])):
        (bright/config).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist([{k: r[k] for k in ("id", "query", "gold_ids", "excluded_ids", "gold_ids_long")} for r in rs]), bright/config/"biology.parquet")
    pro_rows = [{**r, "query": r["query"] + " edited" if r["id"] == rows[5]["id"] else "  " + r["query"] + "\n"} for r in rows[2:]]
    class Fake:   # only what the mapping reads of a Domain
        benchmark, qids, source = "brightpro", [r["id"] for r in pro_rows], type("S", (), {"dataset": "local"})()
        query_text = {r["id"]: r["query"] for r in pro_rows}
    ids = bright_query_mapping({"biology": Fake()}, "gpt4_reason", bright_dataset=bright).ids["biology"]
    assert ids["dropped"] == [rows[0]["id"], rows[1]["id"]] and ids["differs"] == [rows[5]["id"]] and ids["missing"] == []
    assert len(ids["mapped"]) == len(rows) - 3 == 100


def test_generate_prompt_resume_and_repeat(server, tmp_path):
    doms = load_domains("biology,economics")
    n = sum(len(d.qids) for d in doms.values())
    calls = {"n": 0}
    def flaky(request):   # the first run: the endpoint fails for good after 5 answers
        calls["n"] += 1
        return text_reply(f"R{calls['n']}") if calls["n"] <= 5 else error_reply(400)
    srv = server(flaky)
    cache = tmp_path/"cache.sqlite"
    with LLMClient(srv.base_url, "local-model", cache=cache, max_retries=0) as c, pytest.raises(BrightproError, match=f"{n - 5} of {n} queries got no text"):
        generate_queries(doms, c, out=tmp_path/"r.jsonl", concurrency=1)
    assert not (tmp_path/"r.jsonl").exists()
    first = srv.requests[0]["messages"]
    q0 = doms["biology"].query_text["0"]
    assert first == [{"role": "system", "content": "You are a helpful assistant"}, {"role": "user", "content": q0.replace("\n", " ") + BRIGHT_INSTRUCTIONS}]
    ok = server(lambda request: "again " + request["messages"][-1]["content"][:10])
    with LLMClient(ok.base_url, "local-model", cache=cache) as c: res = generate_queries(doms, c, out=tmp_path/"r.jsonl")
    assert (res.sent, res.cached, ok.count) == (n - 5, 5, n - 5)   # resumed: only the unanswered were sent
    with LLMClient(ok.base_url, "local-model", cache=cache) as c: again = generate_queries(doms, c, out=tmp_path/"r.jsonl")
    assert (again.sent, ok.count) == (0, n - 5)   # a repeated run sends nothing
    rows = [json.loads(l) for l in (tmp_path/"r.jsonl").read_text().splitlines()]
    assert [(r["domain"], r["id"]) for r in rows] == [(d, q) for d, x in doms.items() for q in x.qids]
    meta = json.loads((tmp_path/"r.meta.json").read_text())
    assert meta["prompt"]["source"]["file"] == "reason.py" and meta["model"] == "local-model" and meta["queries"] == n


def test_generate_with_a_user_prompt(server, tmp_path):
    (tmp_path/"p.md").write_text("Expand: {query}\nKeep it short.")
    srv = server(lambda request: "expanded")
    doms = load_domains("biology")
    with LLMClient(srv.base_url, "local-model") as c: generate_queries(doms, c, out=tmp_path/"u.jsonl", prompt=tmp_path/"p.md")
    q0 = doms["biology"].query_text["0"]
    assert {"role": "user", "content": f"Expand: {q0}\nKeep it short."} in [m for r in srv.requests for m in r["messages"]]
    assert all(len(r["messages"]) == 1 for r in srv.requests)   # no system message with a user's prompt
    (tmp_path/"bad.md").write_text("no placeholder")
    with LLMClient(srv.base_url, "local-model") as c, pytest.raises(BrightproError, match="lacks the placeholder"):
        generate_queries(doms, c, out=tmp_path/"v.jsonl", prompt=tmp_path/"bad.md")


def test_cli_generate_then_retrieve_in_its_own_folder(cli, server, tmp_path):
    srv = server(lambda request: "onion sulfur enzyme alliinase " + request["messages"][-1]["content"][:30])
    out = tmp_path/"q"/"reason.jsonl"
    args = ["queries", "generate", "--domain", "biology", "--out", out, "--llm-base-url", srv.base_url, "--llm-model", "local-model"]
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    assert "6 requests sent" in res.stdout and (tmp_path/"q"/"llm-cache.sqlite").exists()
    assert "0 requests sent" in cli(*args).stdout and srv.count == 6
    common = ["retrieve", "--domain", "biology", "--top", "5", "--out", tmp_path/"runs", "--cache-dir", tmp_path/"c"]
    assert cli(*common).returncode == 0
    res = cli(*common, "--queries", out)
    assert res.returncode == 0, res.stderr
    folders = sorted(p.name for p in (tmp_path/"runs").iterdir())
    tag = f"q-reason-{file_digest(out)[:8]}"
    assert folders == sorted(["bm25-bright", f"bm25-bright-{tag}"])
    meta = json.loads((tmp_path/"runs"/f"bm25-bright-{tag}"/"biology.meta.json").read_text())
    assert meta["dataset"]["queries"]["source"] == "reason.jsonl" and meta["dataset"]["queries"]["digest"] == file_digest(out)
    assert "queries" not in json.loads((tmp_path/"runs"/"bm25-bright"/"biology.meta.json").read_text())["dataset"]
    plain, mine = (read_trec_run(tmp_path/"runs"/f/"biology.trec") for f in ("bm25-bright", f"bm25-bright-{tag}"))
    assert any(plain[q] != mine[q] for q in _qids())


def test_retrieve_reasoning_config_on_bright_pro(tmp_path):
    res = retrieve(load_domains("biology", queries="gpt4_reason"), "bm25-bright", top=5, out=tmp_path, cache_dir=tmp_path/"c")
    assert res[0]["paths"]["trec"].parent.name == "bm25-bright-gpt4_reason"
    meta = json.loads(res[0]["paths"]["meta"].read_text())
    assert meta["dataset"]["queries"]["source"] == "gpt4_reason" and meta["dataset"]["queries"]["kind"] == "bright"

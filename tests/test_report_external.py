"""Issue 19's done-when: a run written by a few lines of plain Python (a word-overlap scorer, none of brightpro's
retrievers) and an LLM agent run judged against the scripted local server go into `brightpro report --run
--agent-dir`, and appear by those names in the paper table and in the domain pages' inputs. Bad input: one line,
non-zero exit."""
import json, re

import pandas as pd
import pytest

from brightpro.data import load_domain
from brightpro.scripted_llm import LocalChatServer
from conftest import run_cli, scripted_agent_and_judge

KEY = "sk-test-NEVER-ON-DISK-4242"


scripted = scripted_agent_and_judge   # the agent and judge of tests/conftest.py


def overlap_run(path, skip_first=True):
    "TREC lines of a bag-of-words overlap scorer over the sample's biology, written with plain Python; the first query left out."
    dom = load_domain("biology")
    docs = {d: set(t.lower().split()) for d, t in zip(dom.documents.column("id").to_pylist(), dom.documents.column("content").to_pylist())}
    lines = []
    for q, text in list(dom.query_text.items())[1 if skip_first else 0:]:
        words = set(text.lower().split())
        ranked = sorted(docs, key=lambda d: (-len(words & docs[d]), d))[:100]
        lines += [f"{q} Q0 {d} {i} {100 - i} overlap" for i, d in enumerate(ranked, 1)]
    path.write_text("\n".join(lines) + "\n")
    return path, len(dom.qids)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("external")
    run, n = overlap_run(root/"mine.trec")
    agent = root/"llm"
    env = {"BRIGHTPRO_LLM_API_KEY": KEY}
    with LocalChatServer(scripted) as srv:
        llm = ["--llm-base-url", srv.base_url, "--llm-model", "scripted-model", "--llm-retries", "0"]
        a = run_cli("agent", "--domain", "biology", "--qids", "0", "--protocol", "adaptive", "--out", agent, *llm, env=env)
        assert a.returncode == 0, a.stderr
        j = run_cli("judge", agent, *llm, env=env)
        assert j.returncode == 0, j.stderr
    out = root/"reports"
    r = run_cli("report", "--domain", "biology", "--retrievers", "bm25-bright", "--agent", "none", "--run", f"mine={run}",
                "--agent-dir", f"llm={agent}", "--out", out, "--cache-dir", root/"cache", timeout=900)
    return r, out, run, n


def test_report_shows_the_run_and_the_agent_by_name(built):
    r, out, run, n = built
    assert r.returncode == 0, r.stdout + r.stderr
    assert "runs bm25-bright (baseline), mine" in r.stdout and "agent llm" in r.stdout
    md = (out/"summary"/"tables"/"paper_table.md").read_text()
    mine = next(line for line in md.splitlines() if line.startswith("| mine |"))
    assert f"({n - 1}/{n})" in mine and f"biology {n - 1}/{n} queries" in mine     # partial: shown with what it lacks
    assert mine.split("|")[3].strip() == "-"                                       # and no mean
    assert "not comparable: sample" in md
    csv = pd.read_csv(out/"summary"/"tables"/"paper_table.csv")
    assert list(csv.system[:2]) == ["bm25-bright", "mine"] and set(csv.kind) == {"ours", "published"}
    tex = (out/"summary"/"tables"/"paper_table.tex").read_text()
    assert "\\toprule" in tex and "\\textcolor{gray}" in tex and (out/"summary"/"tables"/"paper_intervals.tex").is_file()
    agent_md = (out/"summary"/"tables"/"paper_agent_table.md").read_text()
    row = next(line for line in agent_md.splitlines() if line.startswith("| llm |"))
    cells = [c.strip().strip("*") for c in row.split("|")[1:-1]]
    assert cells[4:8] == ["3.0", "4.0", "1.0", "4.0"]   # RC 3, OQ 4, R 1, AER 4 (test_cli_agentic works them out by hand)
    assert "The paper's table" in (out/"summary"/"report.html").read_text()


def test_index_names_the_run_and_the_agent(built):
    "The index's header and its runs-by-domains table list the external run and the agent folder, as the summary does."
    r, out, run, n = built
    page = (out/"index.html").read_text()
    header = re.search(r"<p>Runs (.*?)</p>", page, re.S).group(1)
    assert "<b>bm25-bright</b> (baseline)" in header and "<b>mine</b>" in header and "agent llm" in header
    overview = page[page.index("Runs by domains"):]
    assert re.search(r"<t[dh][^>]*>\s*mine\s*</t[dh]>", overview), overview[:2000]


def test_domain_inputs_name_the_run_and_agent(built):
    r, out, run, n = built
    man = json.loads((out/"results"/"biology"/"manifest.json").read_text())
    assert list(man["runs"]) == ["bm25-bright", "mine"] and list(man["agents"]) == ["llm"]
    from brightpro.core import file_digest
    assert man["external"]["mine"]["digest"] == file_digest(run) and man["external"]["mine"]["kind"] == "run"
    pq = pd.read_csv(out/"results"/"biology"/"static_per_query.csv", dtype={"qid": str})
    assert pq[pq.run == "mine"]["alpha_ndcg@25"].notna().sum() == n - 1   # the query it leaves out has no score
    ag = pd.read_csv(out/"results"/"biology"/"agent_per_query.csv", dtype={"qid": str})
    assert ag.agent.tolist() == ["llm"]
    meta = json.loads((out/"runs"/"mine"/"biology.meta.json").read_text())
    assert meta["external"]["file"] == str(run.resolve())
    assert "mine" in (out/"biology"/"report.html").read_text()


@pytest.mark.parametrize("args, says", [
    (["--run", "mine"], "expected NAME=PATH"),
    (["--run", "=x.trec"], "expected NAME=PATH"),
    (["--run", "mine=/no/such/run.trec"], "no such file or folder"),
    (["--run", "a=README.md", "--run", "a=README.md"], "given twice"),
    (["--agent-dir", "llm=README.md"], "not a folder"),
    (["--retriever", "no_such_module_xyz:Scorer"], "cannot import"),
])
def test_bad_input_is_one_line(tmp_path, args, says):
    r = run_cli("report", "--domain", "biology", "--agent", "none", *args, "--out", tmp_path/"out")
    assert r.returncode != 0 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_unreadable_run_is_one_line(tmp_path):
    bad = tmp_path/"bad.trec"
    bad.write_text("this is not a run\n")
    r = run_cli("report", "--domain", "biology", "--agent", "none", "--retrievers", "bm25-bright", "--run", f"bad={bad}",
                "--out", tmp_path/"out", "--cache-dir", tmp_path/"cache")
    assert r.returncode != 0 and "run bad:" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_retrieve_with_a_class_of_ones_own(tmp_path):
    "`retrieve --retriever module:Class` with a plain class (index and search, no brightpro base class) in the current folder."
    (tmp_path/"overlapmod.py").write_text(
        "class Overlap:\n"
        "    def index(self, doc_ids, texts): self.docs = {d: set(t.lower().split()) for d, t in zip(doc_ids, texts)}\n"
        "    def search(self, queries, k=1000):\n"
        "        return {q: dict(sorted(((d, float(len(set(t.lower().split()) & w))) for d, w in self.docs.items()), key=lambda x: -x[1])[:k])\n"
        "                for q, t in queries.items()}\n")
    r = run_cli("retrieve", "--domain", "biology", "--retriever", "overlapmod:Overlap", "--out", tmp_path/"runs", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    meta = json.loads((tmp_path/"runs"/"overlapmod-Overlap"/"biology.meta.json").read_text())
    assert meta["retriever"]["class"] == "overlapmod:Overlap"

"""brightpro.report end to end on the bundled sample: every promised file, links that resolve, a second run that
changes nothing, a failing domain that does not lose the others, judged agent runs, and a bad output folder."""
import json, os, shutil
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

import brightpro.data as data
import brightpro.report as report
import brightpro.results as results
from brightpro.core import DOMAINS as ALL_DOMAINS, LOCK_FILE, BrightproError, file_digest, replace_folder, text_digest
from brightpro.data import load_domain
from brightpro.report import build_page, build_report
from brightpro.results import RESULT_FILES, Layout, domain_runs, read_results, write_results
from brightpro.tables import FULL_QUERIES
from conftest import screen

DOMAINS = ["biology", "economics"]
RETRIEVERS = ["bm25-bright", "bm25"]
DOMAIN_FIGURES = ["differences", "by_k", "aspect_weight", "aspect_heatmap", "ndcg_vs_alpha", "agent_rounds", "agent_R"]
DOMAIN_TABLES = ["metrics", "by_k", "aspect_weight", "telling_queries", "agent_rounds", "agent_answers"]
SUMMARY_FIGURES = ["differences", "domain_heatmap", "agent_rounds"]
SUMMARY_TABLES = ["leaderboard", "domain_means", "agent_rounds"]


@pytest.fixture(scope="module", autouse=True)
def quiet():
    old = os.environ.get("BRIGHTPRO_PROGRESS")
    os.environ["BRIGHTPRO_PROGRESS"] = "0"
    yield
    if old is None: os.environ.pop("BRIGHTPRO_PROGRESS", None)
    else: os.environ["BRIGHTPRO_PROGRESS"] = old


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    "The sample's report on two domains, two retrievers and the prf agent, two pages at a time."
    root = tmp_path_factory.mktemp("report")
    cache, out = root/"cache", root/"reports"
    rep = build_report("sample", DOMAINS, retrievers=RETRIEVERS, agent="prf", out=out, jobs=2, cache_dir=cache)
    return rep, out, cache


class Links(HTMLParser):
    def __init__(self):
        super().__init__(); self.links = []
    def handle_starttag(self, tag, attrs):
        self.links += [v for k, v in attrs if k in ("href", "src") and v and not v.startswith(("data:", "#"))]


def index_links(out: Path) -> list[str]:
    p = Links(); p.feed((out/"index.html").read_text(encoding="utf-8"))
    return p.links


def files_of(out: Path) -> dict:
    "{file: mtime} of the report folder but its lock file (each run takes the lock, writing its pid there)."
    return {p.relative_to(out).as_posix(): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file() and p.name != LOCK_FILE}


def check_page(folder: Path, figures, tables):
    assert (folder/"report.html").stat().st_size > 1000 and (folder/"report.ipynb").is_file()
    for f in figures:
        for ext in ("png", "svg"):
            assert (folder/"figures"/f"{f}.{ext}").stat().st_size > 0, f"{folder.name}: {f}.{ext}"
    for t in tables:
        for ext in ("csv", "md", "tex"):
            assert (folder/"tables"/f"{t}.{ext}").stat().st_size > 0, f"{folder.name}: {t}.{ext}"


def test_first_run_builds_every_page_figure_and_table(built):
    rep, out, _ = built
    assert [(p.name, p.status) for p in rep.pages] == [(d, "built") for d in DOMAINS], [(p.name, p.error) for p in rep.pages]
    assert rep.summary.status == "built"
    for d in DOMAINS: check_page(out/d, DOMAIN_FIGURES, DOMAIN_TABLES)
    check_page(out/"summary", SUMMARY_FIGURES, SUMMARY_TABLES)
    assert "not the full Bright-Pro" in (out/"summary"/"report.html").read_text(encoding="utf-8").replace("Not", "not")
    text = rep.to_text()
    assert "biology: built -> biology/report.html" in text and "summary: built -> summary/report.html" in text
    assert json.loads(rep.to_json())["pages"][0]["page"] == "biology/report.html"


def test_index_links_every_page_figure_and_table_and_each_resolves(built):
    _, out, _ = built
    links = index_links(out)
    assert [l for l in links if not (out/l).is_file()] == []
    for name, figures, tables in [(d, DOMAIN_FIGURES, DOMAIN_TABLES) for d in DOMAINS] + [("summary", SUMMARY_FIGURES, SUMMARY_TABLES)]:
        assert f"{name}/report.html" in links
        assert {f"{name}/figures/{f}.{e}" for f in figures for e in ("png", "svg")} <= set(links)
        assert {f"{name}/tables/{t}.{e}" for t in tables for e in ("csv", "md", "tex")} <= set(links)


def test_the_saved_results_agree_with_the_evaluation(built):
    "Aspect recall recomputed from the saved first ranks equals the per-query aspect_recall@k of evaluate."
    _, out, _ = built
    res = read_results(out/"results", "biology")
    pq = res.per_query.set_index(["run", "qid"])
    for k in (5, 10, 25):
        got = res.aspects.assign(w=res.aspects.norm_weight.where(res.aspects.first_rank.le(k).fillna(False), 0.0)).groupby(["run", "qid"]).w.sum()
        pd.testing.assert_series_equal(got, pq[f"aspect_recall@{k}"].loc[got.index], check_names=False, atol=1e-12)
    assert set(res.agent.agent) == set(RETRIEVERS) and (res.agent.R == 3).all()


def test_second_run_is_up_to_date_and_touches_no_file(built):
    rep, out, cache = built
    before = files_of(out)
    again = build_report("sample", DOMAINS, retrievers=RETRIEVERS, agent="prf", out=out, jobs=2, cache_dir=cache)
    assert [p.status for p in again.pages] + [again.summary.status] == ["up to date"] * 3
    assert files_of(out) == before
    assert sum(again.seconds.values()) < 0.25 * sum(rep.seconds.values())


def test_a_failing_domain_is_reported_and_the_others_are_built(built, tmp_path):
    _, out, cache = built
    copy = tmp_path/"reports"
    shutil.copytree(out, copy)
    bad = copy/"results"/"economics"/RESULT_FILES["per_query"]
    bad.write_text("not,a\nresults,file\n")
    manifest = json.loads((bad.parent/results.MANIFEST).read_text())    # a damaged file the manifest vouches for:
    manifest["files"][bad.name] = file_digest(bad)                       # only the page can find out
    (bad.parent/results.MANIFEST).write_text(json.dumps(manifest))
    rep = build_report("sample", DOMAINS, retrievers=RETRIEVERS, agent="prf", out=copy, jobs=2, cache_dir=cache)
    pages = {p.name: p for p in rep.pages}
    assert pages["biology"].status == "up to date"
    assert pages["economics"].status == "failed"
    err = pages["economics"].error
    assert err.startswith("cell ") and "read_results" in err and "static_per_query.csv" in err and "BrightproError" in err
    assert rep.summary.status == "built"            # over biology alone: economics has no page
    assert "economics: failed" in rep.to_text() and err in rep.to_text()
    html = (copy/"index.html").read_text(encoding="utf-8")
    assert "1 domain failed" in html and "static_per_query.csv" in html
    assert (copy/"economics"/"report.html").is_file() and not (copy/"economics"/".stamp.json").exists()
    assert [l for l in index_links(copy) if not (copy/l).is_file()] == []


def test_an_unwritable_output_folder_fails_before_any_compute(tmp_path, monkeypatch):
    def no_compute(*a, **k): raise AssertionError("computed before checking the output folder")
    monkeypatch.setattr(report, "prepare_results", no_compute)
    (tmp_path/"a-file").write_text("")
    with pytest.raises(BrightproError, match="cannot write"):
        build_report("sample", "biology", retrievers=["bm25-bright"], out=tmp_path/"a-file"/"reports")
    with pytest.raises(BrightproError, match="exists and is not a folder"):
        build_report("sample", "biology", retrievers=["bm25-bright"], out=tmp_path/"a-file")
    with pytest.raises(BrightproError, match="unknown agent"):
        build_report("sample", "biology", retrievers=["bm25-bright"], agent="gpt", out=tmp_path/"ok")
    with pytest.raises(BrightproError, match="baseline"):
        build_report("sample", "biology", retrievers=["bm25-bright"], baseline="bm25", out=tmp_path/"ok")


def llm_run(folder: Path, dom):
    "A hand-written LLM agent run in the traces/judgements format of the agentic spec: answers citing gold documents, judged."
    (folder/dom.name).mkdir(parents=True)
    meta = {"protocol": "fixed", "rounds": 3, "policy": "llm", "retriever": {"name": "bm25-bright", "metadata": {}},
            "domains": [dom.name], "qids": {dom.name: dom.qids}, "model": {"name": "toy-model"},
            "search": {"k": 5, "snippet_tokens": 2048}, "snippet_tokenizer": {"name": "approximation"}}
    (folder/"meta.json").write_text(json.dumps(meta))
    traces, judgements = [], []
    for i, q in enumerate(dom.qids):
        gold = dom.gold[q]
        rounds = [{"round": r, "query": f"q{q} r{r}", "docids": gold[r - 1:r + 4], "searches": []} for r in (1, 2, 3)]
        answers = [{"round": r, "answer": f"Because [{gold[0]}] and [{gold[r]}]. Answer: x Confidence: 80%", "evidence": gold[:r]} for r in (1, 2, 3)]
        traces.append({"qid": q, "domain": dom.name, "protocol": "fixed", "policy": "llm", "rounds": rounds, "answers": answers,
                       "answer": None, "R": 3, "stopped_early": False, "status": "ok", "tokens": {"prompt": 100, "completion": 20},
                       "calls": 6, "latency_s": 0.1, "cost": 0.001, "parsed_from_text": 0, "errors": []})
        for r in (1, 2, 3):
            judgements.append({"qid": q, "round": r, "rep": 1, "status": "ok", "aspect_scores": {"a1": 1.0, "a2": 0.5},
                               "answer_digest": text_digest(answers[r - 1]["answer"]),   # the answer judged: a judgement is tied to it
                               "overall_quality": 2 + (i + r) % 3, "justification": "toy", "rc": 3, "weighted_coverage": 0.5,
                               "tries": 1, "error": None})
    (folder/dom.name/"traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    (folder/dom.name/"judgements.jsonl").write_text("".join(json.dumps(j) + "\n" for j in judgements))


def test_judged_llm_agent_runs_fill_the_answer_tables(built, tmp_path):
    "RC, OQ, AER and cited coverage reach the domain page when an agent run has answers and judgements."
    _, out, _ = built
    lay = Layout(tmp_path/"reports")
    shutil.copytree(out/"runs", lay.runs)
    dom = load_domain("biology")
    llm_run(lay.agent/"llm-toy", dom)
    runs = domain_runs(lay, RETRIEVERS, "biology")
    assert write_results(dom, runs, {"llm-toy": lay.agent/"llm-toy"}, lay.results/"biology", ks=[5, 10, 15, 25, 50]) == "written"
    agent = read_results(lay.results, "biology").agent
    assert agent[["rc", "oq", "aer", "cited_coverage"]].notna().all().all()
    params = {"domain": "biology", "dataset": "sample", "runs_dir": "runs", "agent_dir": "agent", "results_dir": "results",
              "k_values": [5, 10, 25, 50], "alpha": 0.5, "baseline": None}
    page = build_page("biology", report.analysis_notebook("domain_report"), params, {}, lay.out)
    assert page.status == "built", page.error
    answers = pd.read_csv(lay.out/"biology"/"tables"/"agent_answers.csv")
    assert answers.loc[0, "judged"] == len(dom.qids) and answers.loc[0, "RC"] == 3
    assert (lay.out/"biology"/"figures"/"agent_cited.png").stat().st_size > 0


def test_replace_folder_swaps_whole_folders(tmp_path):
    (tmp_path/"final").mkdir(); (tmp_path/"final"/"old.txt").write_text("old")
    (tmp_path/"new").mkdir(); (tmp_path/"new"/"new.txt").write_text("new")
    replace_folder(tmp_path/"new", tmp_path/"final")
    assert [p.name for p in (tmp_path/"final").iterdir()] == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final"]


def test_the_analysis_notebooks_and_templates_ship_with_the_package():
    "One copy: brightpro/analysis links to nbs/analysis in a checkout; pyproject ships both folders as package data."
    root = Path(__file__).resolve().parents[1]
    for name in ("domain_report", "summary"): assert report.analysis_notebook(name).is_file()
    assert (report.TEMPLATES/"index.html.j2").is_file() and (report.TEMPLATES/"page.html.j2").is_file()
    link = root/"brightpro"/"analysis"
    assert link.is_symlink() and link.resolve() == (root/"nbs"/"analysis").resolve()
    data = (root/"pyproject.toml").read_text(encoding="utf-8")
    assert "analysis/*.ipynb" in data and "templates/*" in data


def test_the_summary_sets_the_published_points_beside_ours_on_the_full_dataset(built, tmp_path):
    "With the query counts of the full Bright-Pro (protocol.ipynb §1) the summary adds the §6 reference points, ours x 100 beside them."
    _, _, cache = built
    sample = results.sample_results(cache)
    out = tmp_path/"reports"
    shutil.copytree(sample.results, out/"results")
    for d, n in FULL_QUERIES.items():          # pretend: the sample's seven domains with the full counts
        path = out/"results"/d/results.MANIFEST
        path.write_text(json.dumps({**json.loads(path.read_text()), "queries": n}))
    params = {"dataset": "hub", "results_dir": "results", "domains": list(FULL_QUERIES), "k_values": [5, 10, 25, 50],
              "alpha": 0.5, "baseline": None}
    page = build_page("summary", report.analysis_notebook("summary"), params, {}, out)
    assert page.status == "built", page.error
    refs = pd.read_csv(out/"summary"/"tables"/"reference_points.csv")
    board = pd.read_csv(out/"summary"/"tables"/"leaderboard_long.csv")
    ours = board[(board.system == "bm25-bright") & (board.metric == "alpha_ndcg@25")]["mean"].item()
    bm25 = refs[(refs.system == "BM25") & (refs.metric == "alpha_ndcg@25")].iloc[0]
    # 40.3: the final paper (quoted second-hand, issue 17); 41.1 was the pre-final (2025 submission) number
    assert bm25.published == 40.3 and bm25.ours == round(100 * ours, 1) and bm25["our run"] == "bm25-bright"
    assert refs[refs.setting.str.startswith("agentic")]["ours"].notna().all()
    assert refs[refs.benchmark == "BRIGHT"]["ours"].isna().all()
    per = pd.read_csv(out/"summary"/"tables"/"reference_per_domain.csv").set_index("domain")
    assert per.loc["biology", "Qwen/Qwen3-Embedding-4B"] == 42.407            # MTEB's nDCG@10 (binary gold)
    pq = read_results(out/"results", "biology").per_query
    assert per["bm25-bright"].notna().all() and abs(per.loc["biology", "bm25-bright"] - 100 * pq[pq.run == "bm25-bright"]["ndcg@10"].mean()) < 1e-9


def same_bytes(out: Path) -> dict:
    "{file: digest} of what jobs must not change: runs, prf traces, results, page tables and figures (PNG; SVGs carry a date)."
    keep = lambda rel, p: (rel.startswith("runs/") and (p.suffix == ".trec" or p.name.endswith(".score.json"))
                           or rel.startswith("agent/") and p.name in ("traces.jsonl", "meta.json")
                           or rel.startswith("results/") and p.suffix == ".csv" or "/tables/" in rel or p.suffix == ".png")
    return {rel: file_digest(p) for p in sorted(out.rglob("*")) if p.is_file() and keep(rel := p.relative_to(out).as_posix(), p)}


def test_jobs_2_writes_the_bytes_of_jobs_1(built, tmp_path):
    "Retrievals, prf agents, evaluations and pages run in two workers (warm kernels) write what one at a time writes, in another folder and cache."
    rep, out, _ = built
    one = build_report("sample", DOMAINS, retrievers=RETRIEVERS, agent="prf", out=tmp_path/"reports", jobs=1, cache_dir=tmp_path/"cache")
    assert [p.status for p in one.pages + [one.summary]] == ["built"] * 3
    a, b = same_bytes(out), same_bytes(tmp_path/"reports")
    kinds = {k.split("/")[0] if k.startswith(("runs/", "agent/", "results/")) else k.split("/")[1] for k in a}
    assert kinds == {"runs", "agent", "results", "tables", "figures"} and len(a) > 100
    assert a == b, sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


@pytest.mark.parametrize("domains, retrievers", [(DOMAINS, ["bm25-bright", "bm25"]), (["psychology"], ["bm25-bright"])])
def test_one_report_loads_each_domain_once(tmp_path, monkeypatch, domains, retrievers):
    "build_report (prf agent included) loads and validates the data once (check_tables runs once per domain load) and hands the Domains to every stage."
    loads = []
    check = data.check_tables
    monkeypatch.setattr(data, "check_tables", lambda domain, *a, **k: loads.append(domain) or check(domain, *a, **k))
    rep = build_report("sample", domains, retrievers=retrievers, agent="prf", out=tmp_path/"reports", cache_dir=tmp_path/"cache")
    assert [p.status for p in rep.pages] == ["built"] * len(domains)
    assert sorted(loads) == sorted(ALL_DOMAINS)   # every domain once (the agentic subset is drawn over all); before: 5 per domain
                                              # with one retriever and 8 with two, plus the seven of each subset draw


# Source values (fractions) as read from github.com/embeddings-benchmark/results, with the commit each was read at:
# results/Qwen__Qwen3-Embedding-4B/636cd9bf47d976946cdbb2b0c3ca0cb2f8eea5ff/BrightPro<Domain>Retrieval.json,
# scores.standard[0].ndcg_at_10 (MTEB's evaluation on binary gold, not the paper's).
MTEB_QWEN3_4B = {
    "biology": (0.42407, "50857bc14252201c1a8bb3184b221ee3cc603203", "BrightProBiologyRetrieval.json"),
    "earth_science": (0.52638, "50857bc14252201c1a8bb3184b221ee3cc603203", "BrightProEarthScienceRetrieval.json"),
    "economics": (0.38598, "31b72345842423a9297f680f65444b97f7fceca9", "BrightProEconomicsRetrieval.json"),
    "psychology": (0.35398, "df8d00c4d394c2e44656a4fa5f0c94a68291f896", "BrightProPsychologyRetrieval.json"),
    "robotics": (0.33579, "83c000acbe9b8b55896f34d80e37e0e9814d442a", "BrightProRoboticsRetrieval.json"),
    "stackoverflow": (0.46978, "df8d00c4d394c2e44656a4fa5f0c94a68291f896", "BrightProStackoverflowRetrieval.json"),
    "sustainable_living": (0.3629, "50857bc14252201c1a8bb3184b221ee3cc603203", "BrightProSustainableLivingRetrieval.json"),
}


def test_published_per_domain_equals_mteb_results_files():
    "Each per-domain number is the source file's ndcg_at_10 x 100, and its source names MTEB, the commit and the file."
    from brightpro.tables import MTEB_NOTE, published_per_domain
    pub = published_per_domain("ndcg@10")
    q = pub[pub.model == "Qwen/Qwen3-Embedding-4B"].set_index("domain")
    assert sorted(q.index) == sorted(MTEB_QWEN3_4B) == sorted(ALL_DOMAINS)
    for d, (v, commit, name) in MTEB_QWEN3_4B.items():
        assert q.loc[d, "value"] == round(100 * v, 3)
        src = q.loc[d, "source"]
        assert MTEB_NOTE in src and commit[:10] in src and src.endswith(name) and "Qwen__Qwen3-Embedding-4B" in src
    # the second-hand quote, one decimal
    assert [round(100 * MTEB_QWEN3_4B[d][0], 1) for d in ALL_DOMAINS] == [42.4, 52.6, 38.6, 35.4, 33.6, 47.0, 36.3]


def test_page_kernel_clients_are_ready_for_every_output(tmp_path):
    "A new client per request on one kept kernel, as each page makes: once `wait_for_ready` returns, its iopub carries the request's output and idle status (a client that declared itself ready too soon would miss them and time out)."
    from jupyter_core.utils import run_sync
    kernel = report.PageKernel(tmp_path)
    try:
        km = kernel.fresh()
        for i in range(12):
            kc = km.client()
            assert type(kc).__name__ == "ReadyAsyncKernelClient"
            kc.start_channels()
            run_sync(kc.wait_for_ready)(timeout=30)
            said = []
            hook = lambda msg: said.append(msg["content"]["text"]) if msg["msg_type"] == "stream" else None
            reply = run_sync(kc.execute_interactive)(f"print({i} * 7)", timeout=30, output_hook=hook)
            assert reply["content"]["status"] == "ok"
            assert "".join(said) == f"{i * 7}\n"
        kernel.run("x = 1", "run a line")   # the blocking client on the same kernel
    finally: kernel.shutdown()


def test_the_stages_give_out_the_largest_domain_first_and_keep_the_domains_order(tmp_path):
    "Retrievals, prf agents and evaluations are handed to the workers most document bytes first (so the largest does not run alone at the end); what they return and the agent's meta.json keep the order of the domains given."
    from concurrent.futures import Executor, Future
    from brightpro.data import Domain

    class InOrder(Executor):   # runs each task here as it is submitted, noting its domain
        def __init__(self): self.seen = []
        def submit(self, fn, /, *args, **kw):
            self.seen.append(next(a if isinstance(a, str) else a.name for a in args
                                  if isinstance(a, Domain) or isinstance(a, str) and a in ALL_DOMAINS))
            f = Future()
            try: f.set_result(fn(*args, **kw))
            except BaseException as e: f.set_exception(e)
            return f

    given = ["stackoverflow", "economics", "biology"]
    loaded = data.load_domains(given)
    domains = {n: loaded[n] for n in given}
    files = Path(data.__file__).parent/"sample"/"bright_pro"/"documents"
    biggest = sorted(given, key=lambda n: (files/f"{n}.parquet").stat().st_size, reverse=True)
    assert biggest != given
    pool, layout = InOrder(), Layout(tmp_path/"out")
    done = results.prepare_results(domains, retrievers=["bm25-bright"], layout=layout, agent="prf", cache_dir=tmp_path/"cache", pool=pool)
    assert list(done) == given and set(done.values()) == {"written"}
    assert pool.seen == biggest * 3   # retrieval, prf agent, evaluation
    meta = json.loads((layout.agent/"bm25-bright"/"meta.json").read_text())
    assert list(meta["retriever"]["metadata"]) == given


WAITS = """
import os, time
from pathlib import Path
class Waits:
    "Scores every document 1; in the domain WAIT_IN, first waits (at most 60 s) for the file WAIT_FOR and notes whether it came."
    def __init__(self, domain=""): self.domain = domain
    def index(self, doc_ids, texts): self.ids = list(doc_ids)
    def search(self, queries, k=1000):
        if self.domain == os.environ["WAIT_IN"]:
            flag, t0 = Path(os.environ["WAIT_FOR"]), time.time()
            while not flag.exists() and time.time() - t0 < 60: time.sleep(0.05)
            (flag.parent/"seen").write_text(str(flag.exists()))
        return {q: {d: 1.0 for d in self.ids[:k]} for q in queries}
"""


def test_the_page_workers_start_as_soon_as_a_worker_has_no_run_left(tmp_path, monkeypatch):
    "Under two workers, `on_work` (which starts the report's page workers) is called once a worker has no run left to start, while the last runs still run: the largest domain's run, handed out first, waits for that call and sees it. Before, it came after the stage, and the run waited in vain."
    from brightpro.report import stage_workers
    (tmp_path/"waitmod.py").write_text(WAITS)
    monkeypatch.syspath_prepend(str(tmp_path))
    given = ["biology", "economics", "robotics"]
    domains = data.load_domains(given)
    largest = data.largest_first(domains)[0]
    monkeypatch.setenv("WAIT_IN", largest)
    monkeypatch.setenv("WAIT_FOR", str(tmp_path/"pages started"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))   # a spawned worker imports waitmod too
    with stage_workers(2) as pool:
        done = results.prepare_results(domains, retrievers=["waitmod:Waits"], layout=Layout(tmp_path/"out"), cache_dir=tmp_path/"cache",
                                       pool=pool, on_work=lambda: (tmp_path/"pages started").touch())
    assert set(done.values()) == {"written"}, done
    assert (tmp_path/"seen").read_text() == "True"


def test_a_report_in_workers_shows_each_stage_move_and_what_each_worker_does(tmp_path):
    "`brightpro report --jobs 2`: the command's own bars count the runs, the prf agent's domains, the evaluations and the pages as they finish; what a task draws in its worker (a corpus tokenized, a search, an agent's queries) is drawn below them under the domain's name, and cleared when it ends (before, the workers drew nothing)."
    import re, subprocess, sys
    cmd = [sys.executable, "-m", "brightpro.cli", "report", "--dataset", "sample", "--domain", "biology,economics,robotics", "--retrievers",
           "bm25-bright,bm25", "--jobs", "2", "--out", str(tmp_path/"reports"), "--cache-dir", str(tmp_path/"cache")]
    r = subprocess.run(cmd, capture_output=True, env={**os.environ, "BRIGHTPRO_PROGRESS": "1"}, timeout=600)   # bytes: the bars' \r kept
    err, out = r.stderr.decode("utf-8", "replace"), r.stdout.decode("utf-8", "replace")
    assert r.returncode == 0, err
    bars = {}
    for line in screen(err):   # what stays on the screen: one bar per stage, each at its end
        name, sep, rest = line.partition(": ")
        if sep and "|" in rest: bars[name.strip()] = rest.split("|")[2].split()[0]
    assert bars == {"runs": "6/6", "agent bm25-bright": "3/3", "agent bm25": "3/3", "evaluate": "3/3", "pages": "4/4"}, bars
    drawn = set(re.findall(r"([a-z_]+): (bm25-bright tokenizing|bm25-bright search):", err))
    domains = {"biology", "economics", "robotics"}
    assert {(d, w) for d in domains for w in ("bm25-bright tokenizing", "bm25-bright search")} <= drawn, sorted(drawn)
    assert domains <= set(re.findall(r"agent ([a-z_]+): ", err)) - {"bm25-bright", "bm25"}   # each domain's queries, as the agent runs them
    assert "results: biology written" in out


def test_one_at_a_time_the_screen_keeps_a_line_per_stage_and_each_output_line_whole(tmp_path):
    "`brightpro report` with one job on a terminal: the bars of each retrieval, search and agent domain are cleared as they end, inside the stage's bar; the stages' bars stay; every line the command prints stands alone, not run into a bar."
    import subprocess, sys
    cmd = [sys.executable, "-m", "brightpro.cli", "report", "--dataset", "sample", "--domain", "biology,economics,robotics",
           "--retrievers", "bm25-bright,bm25", "--out", str(tmp_path/"reports"), "--cache-dir", str(tmp_path/"cache")]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "BRIGHTPRO_PROGRESS": "1"},
                       timeout=600)   # one stream, as a terminal shows both
    out = r.stdout.decode("utf-8", "replace")
    assert r.returncode == 0, out
    shown = screen(out)
    bars = [line.split(":")[0] for line in shown if "|" in line and "%" in line]
    assert bars == ["runs", "prf agents", "evaluate", "pages"], shown   # the domain pages and the summary under one bar
    assert [line for line in shown if line.startswith("pages:")][0].split("|")[2].split()[0] == "4/4", shown
    for d in ("biology", "economics", "robotics"):
        assert f"{d}: built" in shown and f"{d}: built -> {d}/report.html" in shown, shown
    assert "summary: built" in shown and shown[-1] == "index: index.html", shown

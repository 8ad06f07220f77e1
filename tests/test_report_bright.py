"""`brightpro report --benchmark bright` on the sample's BRIGHT part: nDCG@10 with excluded ids, no aspects; three runs
(two retrievers and a run written by plain Python, given with --run) on two 6-query domains; `--measures`; and a
report whose every domain page fails, whose pages must not link a summary that is never built."""
import json, shutil

import pandas as pd
import pytest

from brightpro.core import file_digest
from brightpro.data import load_domains
from brightpro.report import build_report
from brightpro.results import MANIFEST, RESULT_FILES
from conftest import run_cli

DOMAINS = ["biology", "economics"]


def overlap_run(folder, domain="biology"):
    "A per-domain run folder with a bag-of-words overlap run of the BRIGHT sample's `domain`, written with plain Python."
    dom = load_domains([domain], benchmark="bright")[domain]
    docs = {d: set(t.lower().split()) for d, t in zip(dom.documents.column("id").to_pylist(), dom.documents.column("content").to_pylist())}
    lines = []
    for q, text in dom.query_text.items():
        words = set(text.lower().split())
        lines += [f"{q} Q0 {d} {i} {100 - i} overlap" for i, d in enumerate(sorted(docs, key=lambda d: (-len(words & docs[d]), d))[:100], 1)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder/f"{domain}.trec").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("bright")
    mine = overlap_run(root/"mine")
    out = root/"reports"
    r = run_cli("report", "--benchmark", "bright", "--domain", ",".join(DOMAINS), "--retrievers", "bm25-bright,bm25", "--run", f"mine={mine}",
                "--measures", "nDCG@10 R@25 P@5", "--out", out, "--cache-dir", root/"cache", timeout=900)
    return r, out, mine, root


def test_the_bright_report_is_built_without_aspects(built):
    r, out, _, _ = built
    assert r.returncode == 0, r.stdout + r.stderr
    assert "benchmark bright" in r.stdout and "agent none" in r.stdout
    pq = pd.read_csv(out/"results"/"biology"/RESULT_FILES["per_query"], dtype={"qid": str})
    assert not [c for c in pq.columns if c.startswith(("alpha_ndcg", "aspect_recall"))]
    assert {"ndcg@10", "recall@25", "precision@5"} <= set(pq.columns)
    assert sorted(p.stem for p in (out/"biology"/"figures").glob("*.png")) == ["differences"]   # no aspect figure
    page = (out/"biology"/"report.html").read_text(encoding="utf-8")
    assert "BRIGHT has no aspects" in page and "Aspect-Recall" not in page and "alpha-nDCG@k" not in page


def test_ndcg10_uses_the_excluded_ids(built):
    "The saved nDCG@10 of bm25-bright equals pytrec_eval's ndcg_cut_10 on the run file with each query's excluded ids taken out first (BRIGHT's protocol)."
    pytrec_eval = pytest.importorskip("pytrec_eval")
    _, out, _, _ = built
    dom = load_domains(["biology"], benchmark="bright")["biology"]
    assert sum(map(len, dom.excluded.values())) > 0
    run = {}
    for line in (out/"runs"/"bright-bm25-bright"/"biology.trec").read_text().splitlines():
        q, _, d, _, score, _ = line.split()
        if d not in dom.excluded.get(q, ()): run.setdefault(q, {})[d] = float(score)
    qrels = {q: {d: 1 for d in dom.gold[q]} for q in dom.qids}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    pq = pd.read_csv(out/"results"/"biology"/RESULT_FILES["per_query"], dtype={"qid": str})
    ours = pq[pq.run == "bm25-bright"].set_index("qid")["ndcg@10"]
    assert sorted(ours.index) == sorted(ref)
    for q, v in ours.items(): assert abs(v - ref[q]["ndcg_cut_10"]) < 1e-9, q


def test_the_paper_table_has_brights_domains_and_published_rows(built):
    _, out, _, _ = built
    md = (out/"summary"/"tables"/"paper_table.md").read_text()
    csv = pd.read_csv(out/"summary"/"tables"/"paper_table.csv")
    assert list(csv.columns[:5]) == ["system", "kind", "biology", "economics", "Mean"]
    assert list(csv.system[csv.kind == "ours"]) == ["bm25-bright", "bm25", "mine"]
    pub = csv[csv.kind == "published"]
    assert list(pub.Mean) == [17.2, 22.8, 34.8] and pub.biology.isna().all()          # BRIGHT's StackExchange means only
    assert all("not comparable: sample" in n and "BRIGHT paper" in n for n in pub.note)
    assert "Qwen3" not in md                                                          # Bright-Pro's (MTEB) rows are not BRIGHT's
    means = {d: 100 * pd.read_csv(out/"results"/d/RESULT_FILES["per_query"]).query("run == 'bm25'")["ndcg@10"].mean() for d in DOMAINS}
    row = csv.set_index("system").loc["bm25"]
    assert all(abs(row[d] - round(means[d], 1)) < 1e-9 for d in DOMAINS) and abs(row.Mean - round(sum(means.values()) / 2, 1)) < 1e-9
    assert "nDCG@10" in (out/"index.html").read_text(encoding="utf-8")


def test_measures_choose_the_main_table(built):
    _, out, _, _ = built
    main = pd.read_csv(out/"biology"/"tables"/"metrics_main.csv")
    assert list(main.columns) == ["run", "ndcg@10", "recall@25", "precision@5"]
    board = pd.read_csv(out/"summary"/"tables"/"leaderboard.csv")
    assert list(board.columns) == ["run", "ndcg@10", "recall@25", "precision@5"]


def test_three_runs_on_six_queries_are_too_few_for_significance(built):
    _, out, _, _ = built
    page = (out/"biology"/"report.html").read_text(encoding="utf-8")
    assert "Too few queries for significance" in page and "2/2^6" in page


def test_the_external_run_shows_its_path_and_digest_and_the_command_names_it(built):
    _, out, mine, _ = built
    prov = pd.read_csv(out/"biology"/"tables"/"provenance.csv").set_index("run")
    assert str(mine/"biology.trec") in prov.loc["mine", "settings"] and prov.loc["mine", "digest"] == file_digest(mine/"biology.trec")
    assert prov.loc["bm25", "digest"] != "-"
    page = (out/"biology"/"report.html").read_text(encoding="utf-8")
    assert f"--run mine={mine}" in page and "--benchmark bright" in page and "--measures 'nDCG@10 R@25 P@5'" in page
    index = (out/"index.html").read_text(encoding="utf-8")
    assert f"--run mine={mine}" in index and "--retrievers bm25-bright,bm25" in index


def test_agents_and_aspect_measures_are_refused_on_bright(tmp_path):
    for args, says in [(["--agent", "prf"], "BRIGHT has no aspects"), (["--measures", "alpha_nDCG@25"], "alpha_nDCG@25 cannot be computed"),
                       (["--measures", "nDCG@ten"], "unknown measure")]:
        r = run_cli("report", "--benchmark", "bright", "--domain", "biology", *args, "--out", tmp_path/"out")
        assert r.returncode != 0 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_when_every_page_fails_the_nav_links_no_summary(built, tmp_path):
    _, out, mine, root = built
    copy = tmp_path/"reports"
    shutil.copytree(out, copy)
    for d in DOMAINS:   # damaged files the manifests vouch for: only the pages find out
        bad = copy/"results"/d/RESULT_FILES["per_query"]
        bad.write_text("not,a\nresults,file\n")
        manifest = json.loads((bad.parent/MANIFEST).read_text())
        manifest["files"][bad.name] = file_digest(bad)
        (bad.parent/MANIFEST).write_text(json.dumps(manifest))
    rep = build_report("sample", DOMAINS, retrievers=["bm25-bright", "bm25"], runs={"mine": str(mine)}, agent=None, benchmark="bright",
                       measures="nDCG@10 R@25 P@5", out=copy, cache_dir=root/"cache")
    assert [p.status for p in rep.pages] == ["failed", "failed"] and rep.summary.status == "skipped"
    for d in DOMAINS:
        page = (copy/d/"report.html").read_text(encoding="utf-8")
        assert 'href="../summary/report.html"' not in page and 'class="bp-off"' in page and "every domain page failed" in page
        assert ('href="../economics/report.html"' in page) == (d == "biology")   # the other domain's link stays

"""`brightpro evaluate` refuses what would mislead or crash: an 'overall' over part of the domains, settings numpy
or the harness cannot take, and output paths that cannot be written (checked before any scoring)."""
import json

import pytest

from brightpro.data import load_domains
from brightpro.runs import Run, write_trec_run
from conftest import run_cli


@pytest.fixture(scope="module")
def biology_only(tmp_path_factory):
    "One TREC file whose queries are all biology's (domain-prefixed ids): each query's gold docs, in order."
    bio = load_domains("biology", "sample")["biology"]
    root = tmp_path_factory.mktemp("partial")
    write_trec_run(Run.from_dict({f"biology-{q}": list(g) for q, g in bio.gold.items()}, name="bio"), root/"bio.trec")
    return root/"bio.trec"


def assert_clean_failure(r, needle):
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith("brightpro: error:") and needle in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_overall_over_part_of_the_domains_is_refused(biology_only):
    r = run_cli("evaluate", "--domain", "all", "--run", biology_only)
    assert_clean_failure(r, "ranks no query of earth_science, economics, psychology, robotics, stackoverflow, sustainable_living")
    assert "domains='biology'" in r.stderr and "partial=True" in r.stderr


def test_partial_says_over_which_domains(biology_only):
    r = run_cli("evaluate", "--domain", "biology,economics", "--run", biology_only, "--partial")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines()[2:] if line.strip()}
    assert "overall (biology)" in r.stdout
    # the overall of one covered domain is that domain's mean: the biology row's numbers, not an average with NaN
    assert rows["biology"].split()[1:] == r.stdout.split("overall (biology)")[1].split()[:len(rows["biology"].split()) - 1]
    j = json.loads(run_cli("evaluate", "--domain", "biology,economics", "--run", biology_only, "--partial", "--json").stdout)
    assert j[-1]["domain"] == "overall" and j[-1]["statistic"] == "mean of the domain means over biology"


@pytest.mark.parametrize("extra, needle", [
    (["--resamples", "0"], "resamples must be a positive integer"),
    (["--resamples", "-1"], "resamples must be a positive integer"),
    (["--seed", "-1"], "seed must be a non-negative integer"),
    (["--cut", "0"], "cut must be a positive integer"),
    (["--cut", "-1"], "cut must be a positive integer"),
    (["--k", ""], "k must be positive integers"),
])
def test_bad_settings_exit_2(biology_only, extra, needle):
    # two runs, so that the comparison (where resamples and seed are used) would run
    assert_clean_failure(run_cli("evaluate", "--domain", "biology", "--run", biology_only, "--run", biology_only, *extra), needle)


def test_empty_domain_spec_is_refused(biology_only, tmp_path):
    "`--domain ''` named no domain; `retrieve` used to do nothing and exit 0."
    assert_clean_failure(run_cli("retrieve", "--domain", "", "--out", tmp_path), "no domain given")
    assert_clean_failure(run_cli("evaluate", "--domain", " , ", "--run", biology_only), "no domain given")


@pytest.mark.parametrize("option", ["--per-query", "--qrels-out"])
def test_unwritable_outputs_fail_before_scoring(biology_only, tmp_path, option):
    blocker = tmp_path/"a-file"
    blocker.write_text("keep me")
    target = blocker/"out.csv" if option == "--per-query" else blocker
    r = run_cli("evaluate", "--domain", "biology", "--run", biology_only, option, target)
    assert_clean_failure(r, str(blocker))
    assert blocker.read_text() == "keep me" and sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_ties_option_through_the_command_line(tmp_path):
    "A score.json of equal scores: by default alpha-nDCG reads the file's order (the harness), --ties trec_eval docid order."
    from brightpro.metrics import evaluate_domain
    bio = load_domains("biology", "sample")["biology"]
    q = bio.qids[0]
    order = list(bio.gold[q]) + [d for d in bio.doc_ids if d not in bio.gold[q]][:20]
    (tmp_path/"tied.json").write_text(json.dumps({q: {d: 1.0 for d in order}}))
    got = {t: json.loads(run_cli("evaluate", "--domain", "biology", "--run", tmp_path/"tied.json", "--json", "--ties", t).stdout)
           for t in ("harness", "trec_eval")}
    # references: the same documents as ranked lists, which every metric reads in their own order
    file_order = evaluate_domain({q: order}, bio).iloc[0]
    docid_desc = evaluate_domain({q: sorted(order, reverse=True)}, bio).iloc[0]
    assert got["harness"]["metrics"]["alpha_ndcg@25"] == pytest.approx(file_order["alpha_ndcg@25"])
    assert got["harness"]["metrics"]["ndcg@25"] == pytest.approx(docid_desc["ndcg@25"])      # pytrec_eval's order
    assert got["trec_eval"]["metrics"]["alpha_ndcg@25"] == pytest.approx(docid_desc["alpha_ndcg@25"])
    assert file_order["alpha_ndcg@25"] != pytest.approx(docid_desc["alpha_ndcg@25"])          # the case tells them apart

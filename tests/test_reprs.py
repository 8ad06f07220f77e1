"""The result objects in Jupyter: `_repr_html_` parses as HTML, holds the numbers, escapes `<`; `_repr_markdown_` is a
markdown table with the same numbers. The HTML is read back with the standard library's parser, not brightpro's code."""
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from brightpro.render import html_table
from brightpro.runs import Run
from brightpro.data import load_domain
from brightpro.significance import compare
from brightpro.compare import evaluate_and_compare
from brightpro.report import Page, Report


class Cells(HTMLParser):
    "The text of every <th>/<td>, row by row; fails on a closing tag that does not close the open one."
    def __init__(self):
        super().__init__(); self.rows, self.stack, self.cell = [], [], None
    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)
        if tag == "tr": self.rows.append([])
        if tag in ("td", "th"): self.cell = ""
    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()
        if tag in ("td", "th"): self.rows[-1].append(self.cell); self.cell = None
    def handle_data(self, data):
        if self.cell is not None: self.cell += data


def parse(html: str) -> list[list[str]]:
    p = Cells(); p.feed(html); p.close()
    assert p.stack == [], f"unclosed tags {p.stack}"
    return p.rows


def test_html_table_escapes_aligns_and_dashes():
    df = pd.DataFrame({"run": ["<script>", "a&b"], "ndcg@10": [0.123456, np.nan], "queries": [6, 7]})
    html = html_table(df)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert parse(html) == [["run", "ndcg@10", "queries"], ["<script>", "0.1235", "6"], ["a&b", "-", "7"]]
    assert '<td style="text-align: right">0.1235</td>' in html and '<td style="text-align: left">a&amp;b</td>' in html


def check(obj, numbers, title_part):
    "HTML parses and holds `numbers` as cells; markdown holds them as table cells; both carry the title."
    html, md = obj._repr_html_(), obj._repr_markdown_()
    cells = {c for row in parse(html) for c in row}
    for n in numbers: assert n in cells, (n, sorted(cells)[:30])
    for n in numbers: assert f"| {n} |" in md
    assert title_part in html and title_part in md and "|" not in html
    return html, md


def test_run_repr_escapes_document_ids():
    run = Run.from_dict({"q1": {"<d1>": 2.5, "d2": 1.0}, "q2": {"d3": 0.25}}, name="my<run>")
    html, md = check(run, ["2.5000", "0.2500", "q1"], "2 queries, 3 ranked rows")
    assert "my&lt;run&gt;" in html and "&lt;d1&gt;" in html and "<d1>" not in html


def test_domain_repr_counts():
    bio = load_domain("biology")
    n_gold = sum(len(g) for g in bio.gold.values())
    check(bio, [str(len(bio.qids)), str(n_gold), str(len(bio.aspects))], "Domain biology")
    bright = load_domain("biology", benchmark="bright")
    check(bright, [str(sum(len(x) for x in bright.excluded.values()))], "bright")


@pytest.fixture(scope="module")
def two_runs():
    bio = load_domain("biology")
    oracle = {q: list(g) for q, g in bio.gold.items()}
    worse = {q: ["nothing"] + list(g)[::-1] for q, g in bio.gold.items()}
    return evaluate_and_compare([oracle, worse], domains="biology", n_resamples=200, measures="nDCG@10 MAP@100 P@5 RR@10")


def test_evaluation_repr_shows_the_domain_means(two_runs):
    ev = two_runs.evaluations[1]
    means = ev.domain_means["biology"]
    numbers = [f"{means[c]:.4f}" for c in ("ndcg@10", "map@100", "precision@5", "rr@10")]
    assert numbers[3] == "0.5000"    # the first gold document at rank 2 in every query
    check(ev, numbers, "Evaluation of")


def test_comparison_and_report_reprs(two_runs):
    cmp = two_runs.comparison
    base = cmp.table[cmp.table.system == cmp.baseline].set_index("metric")["mean"]
    check(cmp, [f"{base['ndcg@10']:.4f}"], f"Comparison against {cmp.baseline}")
    html, md = check(two_runs, [f"{base['map@100']:.4f}", "biology"], "Evaluation of 2 runs")
    assert "Marks: *" in md and html.count("<table") == 3


def test_comparison_repr_escapes_system_names():
    pq = pd.DataFrame({"qid": list("abcd"), "ndcg@10": [0.1, 0.2, 0.3, 0.4]})
    cmp = compare({"<a>": pq, "b&c": pq.assign(**{"ndcg@10": pq["ndcg@10"] + 0.5})}, n_resamples=100)
    html = cmp._repr_html_()
    assert "&lt;a&gt;" in html and "<a>" not in html and "b&amp;c" in html
    assert ["b&c", "0.7500"] == parse(html)[2][:2]


def test_report_repr():
    rep = Report(Path("reports"), {"dataset": "sample", "retrievers": ["bm25", "<x>"], "baseline": "bm25"},
                 [Page("biology", "built", seconds=12.34), Page("economics", "failed", "cell 3: <oops>")], Page("summary", "built"))
    html, md = check(rep, ["biology", "12.3", "failed"], "Report in reports")
    assert "&lt;oops&gt;" in html and "&lt;x&gt;" in html

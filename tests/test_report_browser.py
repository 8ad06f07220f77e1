"""A report in a real browser: Debian's headless chromium through selenium opens index.html and every page, figure
and table it links (file:// URLs). No page may log a console error or link a missing file, every image must have a
natural size, no page may show `NaN` or prose meant for the notebook, and every page has its navigation bar.
Skipped, with the reason, where chromium or chromedriver is not installed. Set BRIGHTPRO_SCREENSHOT_DIR to keep
full-page screenshots of the index, the summary and one domain page (and, with BRIGHTPRO_BIG_REPORT=1, of a
synthetic domain of 103 queries)."""
import json, os, re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pandas as pd
import pytest

from brightpro.core import file_digest
from brightpro.report import build_report
from brightpro.results import MANIFEST, RESULT_FILES
from conftest import needs_browser

pytestmark = needs_browser   # the `driver` fixture: conftest
VISIT = (".html", ".svg", ".png")        # what a browser shows; CSV, markdown, LaTeX and .ipynb are checked as files
NOTEBOOK_ONLY = ("runs on its own", "runs this notebook", "this notebook", "papermill", "standalone")   # prose for the notebook's reader


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    "The sample's report on two domains, then again with economics' saved results corrupted: one built, one failed."
    os.environ["BRIGHTPRO_PROGRESS"] = "0"
    root = tmp_path_factory.mktemp("browser")
    out, cache = root/"reports", root/"cache"
    build_report("sample", ["biology", "economics"], retrievers=["bm25-bright", "bm25"], agent="prf", out=out, jobs=2, cache_dir=cache)
    bad = out/"results"/"economics"/RESULT_FILES["per_query"]
    bad.write_text("broken\n")
    manifest = json.loads((bad.parent/MANIFEST).read_text())    # a damaged file the manifest vouches for: only the page finds out
    (bad.parent/MANIFEST).write_text(json.dumps({**manifest, "files": {**manifest["files"], bad.name: file_digest(bad)}}))
    rep = build_report("sample", ["biology", "economics"], retrievers=["bm25-bright", "bm25"], agent="prf", out=out, jobs=2, cache_dir=cache)
    assert [p.status for p in rep.pages] == ["up to date", "failed"]
    return out


def load(driver, url: str) -> dict:
    "Open `url`; its SEVERE console messages, its images (src, natural width) and its links."
    from selenium.webdriver.support.ui import WebDriverWait
    driver.get_log("browser")                                  # drop what earlier pages logged
    driver.get(url)
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "return document.readyState === 'complete' && Array.from(document.images).every(i => i.complete)"))
    images = driver.execute_script("return Array.from(document.images).map(i => [i.getAttribute('src').slice(0, 80), i.naturalWidth])")
    links = driver.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    errors = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    text = driver.execute_script("return document.body ? document.body.innerText : ''") if url.endswith(".html") else ""
    nav = driver.execute_script("return document.querySelectorAll('nav').length") if url.endswith(".html") else 0
    return {"errors": errors, "images": images, "links": links, "text": text, "nav": nav}


def check_page(page: dict, url: str):
    "What every HTML page of a report must be: no NaN, no prose for the notebook, a navigation bar, links that resolve."
    assert re.search(r"\bNaN\b", page["text"]) is None, (url, "NaN shown")
    assert [p for p in NOTEBOOK_ONLY if p in page["text"].lower()] == [], url
    assert page["nav"] >= 1, (url, "no navigation bar")
    assert [u for u in page["links"] if u.startswith("file://") and not local(u.split("#")[0]).exists()] == [], url


def local(url: str) -> Path:
    return Path(unquote(urlparse(url).path))


def screenshot(driver, name: str, folder: Path):
    "A full-page screenshot of the current page."
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(height, 600), 12000))
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder/name))
    driver.set_window_size(1400, 1000)
    assert (folder/name).stat().st_size > 10_000


def test_index_and_every_linked_page_load_cleanly(report_dir, driver, tmp_path):
    index = load(driver, (report_dir/"index.html").as_uri())
    assert index["errors"] == [] and index["images"] == []            # a table and links, not thumbnails
    check_page(index, "index.html")
    shots = Path(os.environ.get("BRIGHTPRO_SCREENSHOT_DIR") or tmp_path/"shots")
    screenshot(driver, "index.png", shots)
    counts = {"pages": 1, "images": len(index["images"]), "links": len(index["links"])}
    targets = sorted({u.split("#")[0] for u in index["links"] if u.startswith("file://")})
    assert any(t.endswith("biology/report.html") for t in targets) and any(t.endswith("economics/report.html") for t in targets)
    for url in targets:
        path = local(url)
        assert path.is_file() and path.stat().st_size > 0, url
        if not url.endswith(VISIT): continue
        page = load(driver, url)
        assert page["errors"] == [], (url, page["errors"])
        assert [src for src, w in page["images"] if w <= 0] == [], url
        counts["pages"] += 1; counts["images"] += len(page["images"]); counts["links"] += len(page["links"])
        if url.endswith("biology/report.html"):
            assert len(page["images"]) >= 7                   # the figures, inline in the executed notebook
            screenshot(driver, "biology.png", shots)
        if url.endswith("summary/report.html"): screenshot(driver, "summary.png", shots)
        if url.endswith("/report.html"):                      # a page: its own links resolve too
            check_page(page, url)
    print(f"browser: {counts['pages']} files opened, {counts['images']} images drawn, {counts['links']} links checked")


def test_the_failed_domain_shows_its_error(report_dir, driver):
    from selenium.webdriver.common.by import By
    load(driver, (report_dir/"index.html").as_uri())
    text = driver.find_element(By.TAG_NAME, "body").text
    assert "1 domain failed: economics" in text and "static_per_query.csv" in text
    page = load(driver, (report_dir/"economics"/"report.html").as_uri())
    assert page["errors"] == [] and page["nav"] >= 1                   # the failed page still leads back
    assert "BrightproError" in driver.find_element(By.TAG_NAME, "body").text


def test_a_domain_page_reads_as_a_report(report_dir, driver):
    "The domain as the title, the navigation, provenance with its command, tables without an index column, the sample's size said."
    from selenium.webdriver.common.by import By
    page = load(driver, (report_dir/"biology"/"report.html").as_uri())
    check_page(page, "biology")
    assert driver.find_element(By.TAG_NAME, "h1").text.strip().startswith("biology")
    assert "Domain report" not in page["text"]
    nav = driver.find_element(By.CSS_SELECTOR, "nav.bp-nav").text
    assert "index" in nav and "summary" in nav and "economics" in nav
    assert "brightpro retrieve --dataset sample --domain biology --retriever bm25-bright" in page["text"]
    assert "smallest p a randomization test can give is 2/2^6 = 0.0312" in page["text"]        # 2 runs: one comparison
    assert "Too few" not in page["text"]
    heads = driver.execute_script("return Array.from(document.querySelectorAll('table.bp-table')).map(t => t.rows[0].cells[0].innerText)")
    assert heads and "" not in heads                                   # no unnamed index column first
    assert "." not in driver.find_element(By.CSS_SELECTOR, "h1").text


@pytest.mark.skipif(not os.environ.get("BRIGHTPRO_BIG_REPORT"), reason="set BRIGHTPRO_BIG_REPORT=1: a synthetic biology of 103 queries (about a minute)")
def test_a_domain_of_103_queries(tmp_path_factory, driver):
    "A synthetic domain at the published size: its page loads cleanly, and the heatmap labels every query by its id."
    from brightpro.synth import synth_domain
    root = tmp_path_factory.mktemp("big")
    assert synth_domain("biology", root/"data", scale=1.0, seed=3)["queries"] == 103
    build_report(root/"data", ["biology"], retrievers=["bm25-bright", "bm25"], agent=None, out=root/"reports", cache_dir=root/"cache")
    page = load(driver, (root/"reports"/"biology"/"report.html").as_uri())
    assert page["errors"] == [] and [s for s, w in page["images"] if w <= 0] == []
    check_page(page, "big biology")
    shots = Path(os.environ.get("BRIGHTPRO_SCREENSHOT_DIR") or root/"shots")
    screenshot(driver, "biology_103.png", shots)
    svg = (root/"reports"/"biology"/"figures"/"aspect_heatmap.svg").read_text()
    qids = pd.read_csv(root/"reports"/"results"/"biology"/"queries.csv", dtype={"qid": str}).qid
    assert len(qids) == 103 and [q for q in qids if f"<!-- {q} -->" not in svg] == []   # each row labelled (SVG text comments)

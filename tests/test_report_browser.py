"""A report in a real browser: Debian's headless chromium through selenium opens index.html and every page, figure
and table it links (file:// URLs). No page may log a console error, and every image must have a natural size.
Skipped, with the reason, where chromium or chromedriver is not installed. Set BRIGHTPRO_SCREENSHOT_DIR to keep
full-page screenshots of the index and of one domain page."""
import json, os
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from brightpro.core import file_digest
from brightpro.report import build_report
from brightpro.results import MANIFEST, RESULT_FILES
from conftest import needs_browser

pytestmark = needs_browser   # the `driver` fixture: conftest
VISIT = (".html", ".svg", ".png")        # what a browser shows; CSV, markdown, LaTeX and .ipynb are checked as files


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
    return {"errors": errors, "images": images, "links": links}


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
    assert index["errors"] == [] and index["images"]
    assert [src for src, w in index["images"] if w <= 0] == []
    shots = Path(os.environ.get("BRIGHTPRO_SCREENSHOT_DIR") or tmp_path/"shots")
    screenshot(driver, "index.png", shots)
    targets = sorted({u.split("#")[0] for u in index["links"] if u.startswith("file://")})
    assert any(t.endswith("biology/report.html") for t in targets) and any(t.endswith("economics/report.html") for t in targets)
    for url in targets:
        path = local(url)
        assert path.is_file() and path.stat().st_size > 0, url
        if not url.endswith(VISIT): continue
        page = load(driver, url)
        assert page["errors"] == [], (url, page["errors"])
        assert [src for src, w in page["images"] if w <= 0] == [], url
        if url.endswith("biology/report.html"):
            assert len(page["images"]) >= 7                   # the figures, inline in the executed notebook
            screenshot(driver, "biology.png", shots)
        if url.endswith(".html"):                             # a page's own links resolve too
            assert [u for u in page["links"] if u.startswith("file://") and not local(u.split("#")[0]).exists()] == [], url


def test_the_failed_domain_shows_its_error(report_dir, driver):
    from selenium.webdriver.common.by import By
    load(driver, (report_dir/"index.html").as_uri())
    text = driver.find_element(By.TAG_NAME, "body").text
    assert "1 domain failed: economics" in text and "static_per_query.csv" in text
    page = load(driver, (report_dir/"economics"/"report.html").as_uri())
    assert page["errors"] == []
    assert "BrightproError" in driver.find_element(By.TAG_NAME, "body").text

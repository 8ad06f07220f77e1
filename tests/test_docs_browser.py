"""The docs site in a real browser: Debian's headless chromium through selenium opens every page MkDocs wrote to
_site/ (file:// URLs, offline). No page may log a console error, link a local file that is missing, link a `.ipynb`
file, or show an nbdev directive (`#|`); images must load. The site is the one `bash scripts/docs.sh` built; set
BRIGHTPRO_DOCS_SITE to test another folder. Skipped, with the reason, where chromium, chromedriver or the built site
is missing. The sample report in the gallery (gallery/report/) has its own browser test and links its executed
notebooks on purpose, so only its pages' existence is checked here."""
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from conftest import needs_browser

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("BRIGHTPRO_DOCS_SITE", ROOT/"_site"))
pytestmark = [
    needs_browser,   # the `driver` fixture: conftest
    pytest.mark.skipif(not (SITE/"index.html").exists(), reason=f"no docs site at {SITE}: run `bash scripts/docs.sh` first"),
]


def site_pages() -> list:
    "Every page MkDocs wrote (the gallery's copied report aside)."
    return sorted(p for p in SITE.rglob("*.html") if "gallery/report" not in p.as_posix() and p.name != "404.html")


def visit(driver, page: Path) -> dict:
    "Open a page: its SEVERE console messages, images that did not load, links, and visible text."
    from selenium.webdriver.support.ui import WebDriverWait
    driver.get_log("browser")
    driver.get(page.as_uri())
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "return document.readyState === 'complete' && Array.from(document.images).every(i => i.complete)"))
    return {"errors": [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"],
            "broken_images": driver.execute_script(
                "return Array.from(document.images).filter(i => i.naturalWidth === 0).map(i => i.getAttribute('src'))"),
            "links": driver.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"),
            "text": driver.execute_script("return document.body.innerText")}


def test_site_has_the_expected_pages():
    names = {p.relative_to(SITE).as_posix() for p in site_pages()}
    for want in ("index.html", "protocol.html", "03_metrics.html", "api/index.html", "api/metrics.html", "gallery.html",
                 "tutorials/01_quickstart.html", "course/index.html", "search/search_index.js"):
        assert want in names or (SITE/want).exists(), want


def test_every_page_loads_cleanly(driver):
    problems = []
    for page in site_pages():
        got = visit(driver, page)
        name = page.relative_to(SITE).as_posix()
        problems += [f"{name}: console: {e}" for e in got["errors"]]
        problems += [f"{name}: image did not load: {s}" for s in got["broken_images"]]
        if "#|" in got["text"]: problems.append(f"{name}: shows an nbdev directive")
        for url in got["links"]:
            u = urlparse(url)
            if u.scheme != "file": continue
            target = Path(unquote(u.path))
            if target.suffix == ".ipynb": problems.append(f"{name}: links a notebook file {target.name}")
            elif not target.exists(): problems.append(f"{name}: broken link {url}")
    assert problems == [], "\n".join(problems[:40])


def test_math_is_rendered_and_search_is_there(driver):
    got = visit(driver, SITE/"protocol.html")
    assert driver.execute_script("return document.querySelectorAll('math').length") > 10
    assert "\\alpha" not in got["text"]
    assert driver.execute_script("return !!document.querySelector('input.md-search__input')")

"""Shared test setup: no test may reach the Hugging Face hub, and the real BRIGHT query data is optional."""
import atexit, json, os, shutil, subprocess, sys, tempfile
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("BRIGHTPRO_PROGRESS", "0")
# Caches (memory-mapped corpora, indexes, embeddings) go to a fresh folder, never the user's.
os.environ["BRIGHTPRO_CACHE"] = tempfile.mkdtemp(prefix="brightpro-test-cache-")
atexit.register(shutil.rmtree, os.environ["BRIGHTPRO_CACHE"], ignore_errors=True)   # one run's cache, gone after it

from brightpro.scripted_llm import LocalChatServer, text_reply, tool_reply   # after the environment above: nothing may reach the hub

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent/"shared"/"data"


@pytest.fixture
def bright_topics():
    "The real BRIGHT topic files, or a skip when ../shared/data is absent (a user's fresh clone)."
    path = SHARED_DATA/"bright-topics"
    if not path.is_dir(): pytest.skip(f"real BRIGHT query data not found at {path}")
    return path


def run_cli(*args, cwd=None, timeout=300, env=None):
    "Run the installed command line as a user would; returns the CompletedProcess."
    cmd = [sys.executable, "-m", "brightpro.cli", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd or ROOT, timeout=timeout, env={**os.environ, **(env or {})})


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def tmpfs(tmp_path):
    "mount(name, options): a tiny tmpfs under tmp_path (needs root), unmounted after the test; skips where mount is refused."
    mounted = []
    def mount(name, options):
        d = tmp_path/name
        d.mkdir()
        try: r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(d)], capture_output=True, text=True)
        except FileNotFoundError: pytest.skip("no mount command here")
        if r.returncode: pytest.skip(f"mounting a tmpfs is not permitted here ({r.stderr.strip() or r.returncode})")
        mounted.append(d)
        return d
    yield mount
    for d in reversed(mounted): subprocess.run(["umount", str(d)], check=False)


@pytest.fixture
def server():
    "A factory of LocalChatServer instances (a real OpenAI-compatible HTTP server on 127.0.0.1), all closed at the end of the test."
    made = []
    def make(*args, **kwargs):
        made.append(LocalChatServer(*args, **kwargs)); return made[-1]
    yield make
    for s in made: s.close()


# --- a real browser, for the report's and the docs site's browser tests ---------------------------------------------
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
needs_browser = pytest.mark.skipif(not (Path(CHROMIUM).exists() and Path(DRIVER).exists()),
                                   reason=f"the browser check needs Debian's chromium and chromium-driver ({CHROMIUM}, {DRIVER}): "
                                          "apt-get install chromium chromium-driver")


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--no-first-run", "--window-size=1400,1000", f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(DRIVER), options=opts)
    d.set_page_load_timeout(60)
    yield d
    d.quit()


def scripted_agent_and_judge(request: dict, cited: str = "") -> dict:
    "Agent: one search, then an answer citing the first hit (and `cited`, e.g. a made-up id); judge: fixed scores; answer prompt (no tools): a short answer."
    msgs = request["messages"]
    if request.get("response_format") or "REASONING_ASPECTS" in msgs[0]["content"] + msgs[-1]["content"]:
        return text_reply(json.dumps({"aspect_scores": {"a1": 1.0, "a2": 0.5, "a3": 0.0, "a4": 1.0},
                                      "overall_quality": 4, "justification": "scripted"}))
    if request.get("tools") and not any(m["role"] == "tool" for m in msgs):
        return tool_reply("search", {"query": "why do onions make you cry"})
    if request.get("tools"):
        first = json.loads(next(m for m in msgs if m["role"] == "tool")["content"])[0]["docid"]
        return text_reply(f"Cutting releases a gas [{first}]{cited}. Answer: a gas. Confidence: 80%")
    return text_reply("Answer: a gas. Confidence: 70%")


def screen(raw: str) -> list[str]:
    "The lines a terminal shows after `raw`: \\r returns to the line's start, \\n goes down, ESC[A up; text overwrites."
    import re
    lines, row, col = [""], 0, 0
    for tok in re.findall(r"\x1b\[[0-9;]*[A-Za-z]|\r|\n|[^\x1b\r\n]+", raw):
        if tok == "\r": col = 0
        elif tok == "\n":
            row, col = row + 1, 0
            if row == len(lines): lines.append("")
        elif tok.startswith("\x1b["):
            if tok.endswith("A"): row = max(0, row - int(tok[2:-1] or 1))
            elif tok.endswith("K"): lines[row] = lines[row][:col]
        else: lines[row] = lines[row][:col] + tok + lines[row][col + len(tok):]; col += len(tok)
    return [line.rstrip() for line in lines if line.strip()]

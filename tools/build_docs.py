"""Build the documentation site from the notebooks with MkDocs (Material theme): `python tools/build_docs.py`.

Each notebook under nbs/ becomes a markdown page in `_build/docs/` with nbdev's directives honoured (`#| hide` and
`#| default_exp` cells dropped, `#| export` and other `#|` lines removed from the code shown, `#| echo: false` hides
the code, `#| output: false` the outputs), links between notebooks rewritten to the pages, images written beside the
page. An API reference (one page per module: signatures, docstrings and every parameter's docment) is generated from
the installed modules, and the sample report is copied in as a gallery. Math is rendered to MathML at build time by
tools/docs_hooks.py, so the site needs no script from another host. MkDocs writes the site to `_site/`.
Options: --site DIR (default _site), --report DIR (a built report to show in the gallery), --no-strict."""
import argparse, base64, html, inspect, json, os, re, shutil, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT/"nbs"
REPO_URL = "https://github.com/brightpro/brightpro"
_DIRECTIVE = re.compile(r"^\s*#\|\s*([\w-]+)\s*:?\s*(.*?)\s*$")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_LINK = re.compile(r"(\]\()([^)\s]+?)(\))")


def nb_order(path: Path):
    "Library notebooks sort as (int, letter): 05 < 05a < 05b < 06; the rest by name."
    m = re.match(r"(\d+)([a-z]?)_", path.name)
    return (0, int(m.group(1)), m.group(2), path.name) if m else (1, 0, "", path.name)


def directives(source: str):
    "The cell's `#|` directives ({name: value}) and its source without them."
    found, kept = {}, []
    for line in source.splitlines():
        m = _DIRECTIVE.match(line)
        if m: found[m.group(1)] = m.group(2)
        else: kept.append(line)
    return found, "\n".join(kept).strip("\n")


def rewrite_links(text: str, page: Path) -> str:
    "`x.ipynb#a` -> `x.md#a` (MkDocs turns it into the page's URL); a local target outside the docs -> the repository."
    def fix(m):
        target = m.group(2)
        if re.match(r"^[a-z]+:|^#|^mailto:", target): return m.group(0)
        path, _, anchor = target.partition("#")
        if not path: return m.group(0)
        src = (NBS/page.parent/path).resolve()
        if path.endswith(".ipynb"):
            if src.exists() and NBS in src.parents: return f"{m.group(1)}{path[:-6]}.md{'#'+anchor if anchor else ''}{m.group(3)}"
        if NBS in src.parents and src.exists(): return m.group(0)
        try: rel = src.relative_to(ROOT).as_posix()
        except ValueError: return m.group(0)
        return f"{m.group(1)}{REPO_URL}/blob/main/{rel}{'#'+anchor if anchor else ''}{m.group(3)}"
    return _LINK.sub(fix, text)


def fence(text: str, lang: str = "text") -> str:
    ticks = "```"
    while ticks in text: ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def output_md(out: dict, page: Path, assets: Path, n: list) -> str:
    "One output as markdown: a stream or text in a block, HTML as is, an image written beside the page."
    kind = out.get("output_type")
    if kind == "stream":
        return fence(_ANSI.sub("", "".join(out.get("text", ""))))
    if kind == "error":
        return fence(_ANSI.sub("", "\n".join(out.get("traceback", [])) or f"{out.get('ename')}: {out.get('evalue')}"))
    data = out.get("data", {})
    for mime, ext in (("image/png", "png"), ("image/jpeg", "jpg")):
        if mime in data:
            n[0] += 1
            name = f"{page.stem}_files/out{n[0]}.{ext}"
            (assets/page.parent/name).parent.mkdir(parents=True, exist_ok=True)
            (assets/page.parent/name).write_bytes(base64.b64decode("".join(data[mime])))
            return f'<p class="nb-image"><img alt="output" src="{name}"></p>'
    if "image/svg+xml" in data:
        return '<div class="nb-output">' + "".join(data["image/svg+xml"]) + "</div>"
    if "text/html" in data:
        body = "".join(data["text/html"]).strip()
        return '<div class="nb-output">\n' + re.sub(r"\n\s*\n", "\n", body) + "\n</div>"
    if "text/markdown" in data:
        return rewrite_links("".join(data["text/markdown"]), page)
    if "text/plain" in data:
        return fence(_ANSI.sub("", "".join(data["text/plain"])))
    return ""


def notebook_md(path: Path, out_dir: Path) -> str:
    "A notebook as a MkDocs page (written to out_dir, mirroring nbs/); returns its title."
    page = path.relative_to(NBS).with_suffix(".md")
    nb = json.loads(path.read_text())
    parts, n, title = [], [0], None
    for cell in nb["cells"]:
        source = "".join(cell.get("source", ""))
        if cell["cell_type"] == "markdown":
            if title is None and source.startswith("# "): title = source.splitlines()[0][2:].strip()
            parts.append(rewrite_links(source, page))
        elif cell["cell_type"] == "code":
            found, code = directives(source)
            if "hide" in found or "default_exp" in found or found.get("include") == "false": continue
            if code and found.get("echo") != "false": parts.append(fence(code, "python"))
            if found.get("output") != "false":
                for out in cell.get("outputs", []):
                    text = output_md(out, page, out_dir, n)
                    if text: parts.append(text)
    (out_dir/page).parent.mkdir(parents=True, exist_ok=True)
    (out_dir/page).write_text("\n\n".join(parts) + "\n")
    return title or path.stem


def api_pages(out_dir: Path, nb_of: dict) -> list:
    "One markdown page per module: every public name with its signature, docstring and documented parameters."
    from fastcore.docments import docments
    import importlib
    nav = []
    for module in sorted(nb_of, key=lambda m: nb_order(nb_of[m])):
        mod = importlib.import_module(f"brightpro.{module}")
        notebook = nb_of[module].relative_to(NBS).with_suffix(".md").as_posix()
        lines = [f"# brightpro.{module}", "", api_links((inspect.getdoc(mod) or "").split("\n")[0]), "",
                 f"Source and worked examples: [the notebook](../{notebook}).", ""]
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name, None)
            if obj is None: continue
            lines += api_entry(name, obj, docments, level=2)
            if inspect.isclass(obj):
                for meth, f in sorted(vars(obj).items()):
                    if meth.startswith("_") or not callable(f) or getattr(f, "__module__", "").split(".")[0] != "brightpro": continue
                    lines += api_entry(f"{name}.{meth}", f, docments, level=3)
        (out_dir/"api"/f"{module}.md").write_text("\n".join(lines) + "\n")
        nav.append({f"brightpro.{module}": f"api/{module}.md"})
    return nav


def api_links(text: str) -> str:
    "Links in docstrings are relative to nbs/; the reference pages live in api/."
    return re.sub(r"\]\((?![a-z]+:|#)([^)\s]+?)\.ipynb", r"](../\1.md", text)


def api_entry(name: str, obj, docments, level: int) -> list:
    "The reference entry of one function, class or constant."
    head = "#"*level + f" `{name}`"
    if not callable(obj):
        return [head, "", fence(f"{name} = {html.unescape(repr(obj))[:300]}", "python"), ""]
    try: sig = str(inspect.signature(obj))
    except (TypeError, ValueError): sig = "(...)"
    kind = "class " if inspect.isclass(obj) else "def "
    lines = [head, "", fence(f"{kind}{name.split('.')[-1]}{sig}", "python"), "", api_links(inspect.getdoc(obj) or ""), ""]
    try: docs = docments(obj, full=True, returns=False)
    except Exception: docs = {}
    rows = [(p, d) for p, d in docs.items() if p not in ("self", "cls", "return")]
    if rows:
        lines += ["| parameter | type | default | what it is |", "|---|---|---|---|"]
        for p, d in rows:
            anno = d.get("anno")
            anno = "" if anno is inspect._empty else getattr(anno, "__name__", str(anno))
            default = d.get("default")
            default = "" if default is inspect._empty else f"`{default!r}`"
            doc = api_links(d.get("docment") or "").replace("|", "\\|").replace("\n", " ")
            lines.append(f"| `{p}` | {anno.replace('|', '&#124;')} | {default.replace('|', '&#124;')} | {doc} |")
        lines.append("")
    return lines


def module_notebooks() -> dict:
    "{module: notebook} from each library notebook's `#| default_exp`."
    found = {}
    for path in sorted(NBS.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            m = re.search(r"^#\|\s*default_exp\s+(\S+)", "".join(cell.get("source", "")), re.M)
            if m: found[m.group(1)] = path; break
    return found


def gallery(out_dir: Path, report: Path | None) -> str:
    "The gallery page; the report (built by scripts/demo.sh or docs.sh) is copied under gallery/."
    lines = ["# Gallery", "", "What `brightpro report` writes: one analysis page per domain (every run against every metric "
             "with intervals and significance marks, alpha-nDCG@k and Aspect-Recall@k against k, recall of aspects by weight, "
             "which aspects each query's top k covers), a summary across domains, and every figure and table as files.", ""]
    if report and (report/"index.html").exists():
        shutil.copytree(report, out_dir/"gallery"/"report", dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.sqlite", "cache", "runs", "*.npy"))
        domains = sorted(p.parent.name for p in report.glob("*/report.html") if p.parent.name != "summary")
        lines += ["[Open the sample report](gallery/report/index.html){ .md-button }", "",
                  f"It was built from the bundled sample ({', '.join(domains)}) with no network and no LLM (the agent "
                  "rounds use the `prf` policy): by `scripts/demo.sh` (`brightpro report --dataset sample --out "
                  "reports/sample`, every domain and retriever) or, where that report is absent, by `scripts/docs.sh` "
                  "(biology, the two BM25 retrievers)."]
    else:
        lines += ["No report was built with this site: run `bash scripts/demo.sh`, then `bash scripts/docs.sh`."]
    (out_dir/"gallery.md").write_text("\n".join(lines) + "\n")
    return "gallery.md"


def first_line(module: str) -> str:
    import importlib
    return ((inspect.getdoc(importlib.import_module(f"brightpro.{module}")) or "").splitlines() or [""])[0]


def build(site: Path, report: Path | None, strict: bool = True) -> Path:
    out_dir = ROOT/"_build"/"docs"
    shutil.rmtree(out_dir, ignore_errors=True)
    (out_dir/"api").mkdir(parents=True)
    def pages(pattern):
        return [{notebook_md(p, out_dir): p.relative_to(NBS).with_suffix(".md").as_posix()}
                for p in sorted(NBS.glob(pattern), key=nb_order)]
    home = notebook_md(NBS/"index.ipynb", out_dir)
    nb_of = module_notebooks()
    course = sorted(NBS.glob("course/[0-9]*.ipynb"))
    notebook_md(NBS/"protocol.ipynb", out_dir)
    nav = [{home: "index.md"}, {"Protocol": "protocol.md"},
           {"Tutorials": pages("tutorials/*.ipynb")}]
    if (NBS/"course"/"index.ipynb").exists():
        notebook_md(NBS/"course"/"index.ipynb", out_dir)
        nav.append({"Course": [{"The path": "course/index.md"}]
                    + [{notebook_md(p, out_dir): p.relative_to(NBS).with_suffix(".md").as_posix()} for p in course]
                    + [{"Solutions": pages("course/solutions/*.ipynb")}]})
    nav += [{"Library notebooks": [{f"{p.stem}: {notebook_md(p, out_dir)}": p.relative_to(NBS).with_suffix(".md").as_posix()}
                                   for p in sorted(nb_of.values(), key=nb_order)]},
            {"API reference": [{"Overview": "api/index.md"}] + api_pages(out_dir, nb_of)},
            {"Report notebooks": pages("analysis/*.ipynb")},
            {"Gallery": gallery(out_dir, report)}]
    (out_dir/"api"/"index.md").write_text(
        "# API reference\n\nEvery public name of every module, with its signature, its docstring and each parameter "
        "documented (generated from the modules' docstrings and the notebooks' nbdev docments). Each module's "
        "notebook has the worked examples.\n\n" + "\n".join(
            f"- [`brightpro.{m}`]({m}.md): {api_links(first_line(m))}"
            for m in sorted(nb_of, key=lambda m: nb_order(nb_of[m]))) + "\n")
    (out_dir/"javascripts").mkdir()
    shutil.copy(ROOT/"tools"/"docs_assets"/"iframe-worker-shim.js", out_dir/"javascripts")   # search from file://, no CDN
    (out_dir/"stylesheets").mkdir()
    (out_dir/"stylesheets"/"extra.css").write_text(
        ".nb-output{overflow-x:auto;font-size:.75rem;margin:0 0 1em}\n.nb-output table{font-size:.7rem}\n"
        ".nb-image img{max-width:100%}\nmath[display=block]{margin:.8em 0;overflow-x:auto}\n")
    config = {
        "site_name": "brightpro", "site_url": "https://brightpro.github.io/brightpro/",
        "docs_dir": str(out_dir), "site_dir": str(site), "use_directory_urls": False, "strict": strict,
        "theme": {"name": "material", "font": False, "features": ["navigation.sections", "navigation.top", "search.highlight"],
                  "palette": {"primary": "indigo"}},
        "plugins": ["search", "offline"],
        "hooks": [str(ROOT/"tools"/"docs_hooks.py")],
        "extra_css": ["stylesheets/extra.css"],
        # the repository as a plain link: Material's repo_url would ask GitHub's API for stars from every reader's browser
        "extra": {"polyfills": ["javascripts/iframe-worker-shim.js"],
                  "social": [{"icon": "fontawesome/brands/github", "link": REPO_URL, "name": "the repository"}]},
        "markdown_extensions": ["attr_list", "md_in_html", "tables", "admonition", "toc",
                                {"pymdownx.arithmatex": {"generic": True}}, "pymdownx.superfences",
                                {"pymdownx.highlight": {"use_pygments": True}}],
        "validation": {"links": {"not_found": "warn", "anchors": "warn", "absolute_links": "warn", "unrecognized_links": "warn"}},
        "nav": nav,
    }
    (out_dir.parent/"mkdocs.yml").write_text(json.dumps(config, indent=1))   # JSON is YAML
    shutil.rmtree(site, ignore_errors=True)
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--quiet", "-f", str(out_dir.parent/"mkdocs.yml")], check=True, env=env)
    return site


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--site", default=str(ROOT/"_site"))
    ap.add_argument("--report", default=None)
    ap.add_argument("--no-strict", action="store_true")
    a = ap.parse_args()
    site = build(Path(a.site).resolve(), Path(a.report).resolve() if a.report else None, strict=not a.no_strict)
    print(f"docs: {len(list(site.rglob('*.html')))} pages in {site}")

"""MkDocs hooks of the docs site (tools/build_docs.py): math rendered to MathML at build time (latex2mathml; browsers
show MathML without a script), a name written `brightpro.module.name` links to its API reference entry, and a page that
still links a notebook file fails the build."""
import html, re
from pathlib import Path

from latex2mathml.converter import convert

_MATH = re.compile(r'<(span|div) class="arithmatex">\\[(\[](.*?)\\[)\]]</\1>', re.S)


def _mathml(m) -> str:
    tex, block = html.unescape(m.group(2)), m.group(1) == "div"
    try: return convert(tex, display="block" if block else "inline")
    except Exception: return f"<code>{html.escape(tex)}</code>"   # what latex2mathml cannot parse stays readable


_NAME = re.compile(r"<code>brightpro\.(\w+)\.([\w.]+)</code>")


def _api_links(content: str, page, files) -> str:
    "Each <code>brightpro.module.name</code> as a link to that name's entry on the module's API page."
    up = "../" * page.url.count("/")
    def link(m):
        module, name = m.group(1), m.group(2)
        before = m.string[:m.start()]
        if before.rfind("<a ") > before.rfind("</a>"): return m.group(0)   # already inside a link
        api = files.get_file_from_path(f"api/{module}.md")
        if api is None: return m.group(0)
        entries = set(re.findall(r"^#+ `([\w.]+)`", Path(api.abs_src_path).read_text(encoding="utf-8"), re.M))
        while name not in entries and "." in name: name = name.rsplit(".", 1)[0]   # a method without an entry: its class
        anchor = f"#{name.lower().replace('.', '')}" if name in entries else ""
        return f'<a href="{up}api/{module}.html{anchor}">{m.group(0)}</a>'
    return _NAME.sub(link, content)


def on_page_content(content, page, config, files):
    content = _api_links(_MATH.sub(_mathml, content), page, files)
    bad = re.findall(r'href="([^"]*\.ipynb(?:#[^"]*)?)"', content)
    if bad: raise ValueError(f"{page.file.src_path} links a notebook file: {bad[:3]}")
    return content

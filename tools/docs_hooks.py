"""MkDocs hooks of the docs site (tools/build_docs.py): math rendered to MathML at build time (latex2mathml; browsers
show MathML without a script), and a page that still links a notebook file fails the build."""
import html, re

from latex2mathml.converter import convert

_MATH = re.compile(r'<(span|div) class="arithmatex">\\[(\[](.*?)\\[)\]]</\1>', re.S)


def _mathml(m) -> str:
    tex, block = html.unescape(m.group(2)), m.group(1) == "div"
    try: return convert(tex, display="block" if block else "inline")
    except Exception: return f"<code>{html.escape(tex)}</code>"   # what latex2mathml cannot parse stays readable


def on_page_content(content, page, config, files):
    content = _MATH.sub(_mathml, content)
    bad = re.findall(r'href="([^"]*\.ipynb(?:#[^"]*)?)"', content)
    if bad: raise ValueError(f"{page.file.src_path} links a notebook file: {bad[:3]}")
    return content

"""Server-side syntax highlighting (Pygments): C for CPU kernels, CUDA for GPU kernels."""
from __future__ import annotations

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CLexer, CudaLexer

LEXERS = {"cpu": CLexer, "cuda": CudaLexer}
CSS_CLASS = "hl"


def source_html(source: str, target: str) -> str:
    """HTML (escaped by Pygments) with line numbers; styles in static/css/pygments.css."""
    lexer = LEXERS.get(target, CLexer)(stripnl=False)
    return highlight(source, lexer, HtmlFormatter(linenos="table", cssclass=CSS_CLASS, lineanchors="L"))


def stylesheet() -> str:
    """Regenerates static/css/pygments.css: ``python -c 'from int21web.library.highlight import stylesheet; print(stylesheet())'``"""
    return HtmlFormatter(style="default").get_style_defs(f".{CSS_CLASS}")

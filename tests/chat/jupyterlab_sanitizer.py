"""What JupyterLab's HTML sanitizer keeps, as data, to check HTML meant for notebooks that are not trusted.

Source: ``@jupyterlab/apputils`` ``Sanitizer`` (``packages/apputils/src/sanitizer.ts``) as shipped in JupyterLab
4.6.6, read from the installed ``share/jupyter/lab/static/jlab_core.*.js``: the options it passes to
``sanitize-html`` (``allowedTags``, ``allowedAttributes``, ``allowedStyles``) and the ``CssProp`` value patterns
those styles use (each anchored ``^...$``, case-insensitive). ``sanitize-html`` drops a tag not allowed (and, for
``<style>`` and ``<script>``, its text), an attribute not allowed for the tag or for ``*``, and each ``style``
declaration whose property is not listed or whose value matches none of its patterns.

Only the patterns of the properties listed in ``STYLES`` are transcribed (a property not listed counts as dropped,
which errs on the safe side); the tag list is complete. ``<svg>`` and ``<style>`` are not among the tags, and no
colour pattern accepts ``var(...)``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

TAGS = frozenset(
    "a abbr acronym address area article aside audio b bdi bdo big blockquote br button canvas caption center "
    "cite code col colgroup colspan command data datalist dd del details dfn dir div dl dt em fieldset figcaption "
    "figure font footer form h1 h2 h3 h4 h5 h6 header hgroup hr i img input ins kbd label legend li map mark menu "
    "meter nav nobr ol optgroup option output p pre progress q rowspan s samp section select small source span "
    "strike strong sub summary sup table tbody td textarea tfoot th thead time tr track tt u ul var video wbr".split()
)
ATTRIBUTES = {
    "*": frozenset(
        "class data-jupyter-id dir draggable hidden id inert itemprop itemref itemscope lang spellcheck style "
        "title translate".split()
    ),
    "div": frozenset({"align"}),
    "table": frozenset("align bgcolor border cellpadding cellspacing frame rules summary width".split()),
    "tr": frozenset("align bgcolor char charoff valign".split()),
    "td": frozenset(
        "abbr align axis bgcolor char charoff colspan headers height nowrap rowspan scope valign width".split()
    ),
    "th": frozenset(
        "abbr align axis bgcolor char charoff colspan headers height nowrap rowspan scope valign width".split()
    ),
}

_NUMBER = r"[+-]?([0-9]*[.])?[0-9]+(e-?[0-9]*)?"
_NUMBER_POS = r"[+]?([0-9]*[.])?[0-9]+(e-?[0-9]*)?"
_NUMBER_ZERO_ONE = r"[+]?(1([.][0]+)?|0?([.][0-9]+)?)"
_UNITS = "(px|em|rem|ex|in|cm|mm|pt|pc)"
_LENGTH = rf"({_NUMBER}{_UNITS}|0)"
_LENGTH_POS = rf"({_NUMBER_POS}{_UNITS}|0)"
_LEN_OR_PERC = rf"(0|{_NUMBER}(px|em|rem|ex|in|cm|mm|pt|pc|%))"
_PERCENTAGE = rf"{_NUMBER}%"
_PERCENTAGE_POS = rf"{_NUMBER_POS}%"
_INTEGER_ZERO_FF = "([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])"
_PERCENTAGE_ZERO_HUNDRED = r"[+]?(([0-9]|[1-9][0-9])([.][0-9]+)?|100)%"
_COLOUR_NAMES = (
    "black|blue|gray|green|grey|orange|red|silver|teal|transparent|white"  # the names used in aiforge's HTML
)
_COLOUR = (
    r"\#(0x)?[0-9a-f]+"
    r"|rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)"
    rf"|rgba\(\s*(\d{{1,3}})\s*,\s*(\d{{1,3}})\s*,\s*(\d{{1,3}})\s*,\s*({_INTEGER_ZERO_FF}|{_NUMBER_ZERO_ONE}"
    rf"|{_PERCENTAGE_ZERO_HUNDRED})\s*\)"
    f"|{_COLOUR_NAMES}"
)
_BORDER_STYLE = "none|hidden|dotted|dashed|solid|double|groove|ridge|inset|outset"
_BORDER_WIDTH = f"thin|medium|thick|{_LENGTH}"
_PADDING_WIDTH = f"{_LENGTH_POS}|{_PERCENTAGE_POS}"
_MARGIN_WIDTH = f"{_LEN_OR_PERC}|auto"
_FAMILY = r"(\"[^\"]*\"|'[^']*'|(-?[_a-z][_a-z0-9-]*\s*)+)|serif|sans-serif|cursive|fantasy|monospace"
_BG_POSITION = rf"(({_LEN_OR_PERC}|left|center|right|top|bottom)\s*){{1,4}}"
_BG_SIZE = rf"({_LENGTH_POS}|{_PERCENTAGE}|auto){{1,2}}|cover|contain"
_REPEAT = r"repeat-x|repeat-y|((?:repeat|space|round|no-repeat)(?:\s*(?:repeat|space|round|no-repeat))?)"

STYLES: dict[str, str] = {
    "background": (
        rf"((({_BG_POSITION}\s*(\/\s*{_BG_SIZE})?)|({_REPEAT})|(scroll|fixed|local)"
        rf"|(border-box|padding-box|content-box)|(none)|({_COLOUR}))\s*)+"
    ),
    "background-color": _COLOUR,
    "border-bottom": rf"(({_BORDER_WIDTH}|{_BORDER_STYLE}|{_COLOUR})\s*){{1,3}}",
    "border-collapse": "collapse|separate",
    "color": _COLOUR,
    "display": (
        "inline|block|list-item|run-in|inline-list-item|inline-block|table|inline-table|table-cell|table-caption"
        "|flex|inline-flex|grid|inline-grid|auto|block|table|flex|grid|block-level|inline-level|none"
        "|table-row-group|table-header-group|table-footer-group|table-row|table-cell|table-column-group"
        "|table-column|table-caption|inherit|inline-box|inline-stack"
    ),
    "flex": rf"({_NUMBER}|{_LEN_OR_PERC}|none|auto)\s*(({_NUMBER}|{_LEN_OR_PERC}|auto)\s*){{0,2}}",
    "font-family": rf"({_FAMILY})(,\s*({_FAMILY}))*",
    "font-size": rf"xx-small|x-small|small|medium|large|x-large|xx-large|smaller|larger|{_LENGTH_POS}"
    rf"|{_PERCENTAGE_POS}",
    "font-weight": "normal|bold|bolder|lighter|100|200|300|400|500|600|700|800|900",
    "height": f"{_LENGTH}|{_PERCENTAGE}|auto",
    "margin-bottom": _MARGIN_WIDTH,
    "margin-right": _MARGIN_WIDTH,
    "margin-top": _MARGIN_WIDTH,
    "max-width": f"{_LENGTH_POS}|{_PERCENTAGE_POS}|none|auto",
    "min-width": f"{_LENGTH_POS}|{_PERCENTAGE_POS}|auto",
    "opacity": _NUMBER_ZERO_ONE,
    "overflow-x": "visible|hidden|scroll|auto|no-display|no-content",
    "padding": rf"(({_PADDING_WIDTH})\s*){{1,4}}",
    "text-align": "left|right|center|justify",
    "white-space": "normal|pre|nowrap|pre-wrap|pre-line",
    "width": f"{_LENGTH_POS}|{_PERCENTAGE_POS}|auto",
}
_PATTERNS = {prop: re.compile(f"^({pattern})$", re.IGNORECASE) for prop, pattern in STYLES.items()}


def dropped(page: str) -> list[str]:
    """What the sanitizer would drop from ``page``: tags, attributes and style declarations, one line each."""
    parser = _Collector()
    parser.feed(page)
    parser.close()
    return parser.dropped


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.dropped: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TAGS:
            self.dropped.append(f"tag <{tag}>")
        allowed = ATTRIBUTES["*"] | ATTRIBUTES.get(tag, frozenset())
        for name, value in attrs:
            if name not in allowed:
                self.dropped.append(f"attribute {name} on <{tag}>")
            elif name == "style":
                self.dropped += [f"style {d!r} on <{tag}>" for d in _dropped_declarations(value or "")]


def _dropped_declarations(style: str) -> list[str]:
    out = []
    for declaration in filter(None, (d.strip() for d in style.split(";"))):
        prop, _, value = declaration.partition(":")
        pattern = _PATTERNS.get(prop.strip().lower())
        if pattern is None or not pattern.match(value.strip()):
            out.append(declaration)
    return out

"""Safe rendering of model text, throttling and error descriptions."""

from __future__ import annotations

import re

import pytest

from aiforge.core.render import Throttle, describe_error, markdown_to_html, safe_markdown
from aiforge.core.types import ProviderError

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<a href='javascript:alert(1)'>x</a>",
    "<!-- comment --><iframe src=//evil>",
    '" onmouseover="alert(1)',
    "[click](javascript:alert(1))",
    "**<b onclick=alert(1)>bold</b>**",
    "`code` <style>body{display:none}</style>",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_to_html_creates_no_tag_or_attribute_from_the_text(text: str) -> None:
    rendered = markdown_to_html(text)
    tags = re.findall(r"<\s*([a-zA-Z]+)", rendered)
    assert set(tags) <= {"p", "strong", "em", "code", "pre", "br", "ul", "ol", "li", "h3", "h4", "h5", "h6", "a"}
    assert "javascript:" not in "".join(re.findall(r'href="[^"]*"', rendered))
    assert not re.search(r"<[^>]*\son\w+=", rendered)


def test_markdown_to_html_renders_the_subset() -> None:
    text = (
        "# Title\n\nSome **bold**, *italic*, `a<b`, [docs](https://example.com/a_b?x=1&y=2).\n\n"
        "- one\n- two\n\n1. first\n2. second\n\n```python\nif a < b:\n    pass\n```"
    )
    rendered = markdown_to_html(text)
    assert "<h3>Title</h3>" in rendered
    assert "<strong>bold</strong>" in rendered and "<em>italic</em>" in rendered
    assert "<code>a&lt;b</code>" in rendered
    assert (
        '<a href="https://example.com/a_b?x=1&amp;y=2" target="_blank" rel="noopener noreferrer">docs</a>' in rendered
    )
    assert "<ul><li>one</li><li>two</li></ul>" in rendered
    assert "<ol><li>first</li><li>second</li></ol>" in rendered
    assert '<pre><code class="language-python">if a &lt; b:\n    pass</code></pre>' in rendered


def test_markdown_to_html_keeps_snake_case_and_line_breaks() -> None:
    assert markdown_to_html("use snake_case_names\nnext line") == "<p>use snake_case_names<br>next line</p>"


def test_an_unclosed_code_fence_runs_to_the_end_while_streaming() -> None:
    rendered = markdown_to_html("Here:\n```js\nconsole.log('<b>')")
    assert rendered.endswith('<pre><code class="language-js">console.log(&#x27;&lt;b&gt;&#x27;)</code></pre>')


def test_safe_markdown_neutralises_html_but_not_code() -> None:
    text = "Hi <script>x</script> and `<b>` [x](javascript:alert(1))\n```html\n<b>code</b>\n```\n<i>after</i>"
    safe = safe_markdown(text)
    assert "<script" not in safe and "<i>" not in safe
    assert "&lt;script>x&lt;/script>" in safe
    assert "`<b>`" in safe and "```html\n<b>code</b>\n```" in safe
    assert "](javascript:" not in safe


def test_throttle_accepts_at_most_one_update_per_interval() -> None:
    now = [0.0]
    throttle = Throttle(0.5, clock=lambda: now[0])
    accepted = []
    for _ in range(100):
        accepted.append(throttle.ready())
        now[0] += 0.125  # exact in binary floating point
    assert accepted[0] is True
    assert sum(accepted) == 25


def test_describe_error_masks_keys() -> None:
    class Settings:
        def secrets(self) -> list[str]:
            return ["my-gateway-secret"]

    class Agent:
        settings = Settings()

    exc = ProviderError("denied for my-gateway-secret and sk-proj-abcdefghijklmnop, Bearer abc.def", status_code=401)
    text = describe_error(exc, Agent())
    assert text.startswith("ProviderError: denied for *** and sk-proj***")
    assert "abcdefghijklmnop" not in text and "abc.def" not in text
    assert "status=401" in text

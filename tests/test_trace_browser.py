"""The HTML trace in a real headless Chromium (Debian's, started by the test): loads cleanly,
filters, shows a question, runs no script from page text, and renders to a screenshot."""

from __future__ import annotations

import pytest

from agentic_rag.cli import app
from tests.cdp import Browser, chromium_path
from tests.test_trace import HOSTILE, make_run, runner

pytestmark = pytest.mark.skipif(chromium_path() is None, reason="Debian's chromium is not installed (README: apt-get install chromium)")


@pytest.fixture
def browser(tmp_path):
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


def choose(browser: Browser, select_id: str, value: str) -> None:
    """Pick an option as a user would: set the value, then the change event the page listens to."""
    browser.eval(f"(() => {{ const s = document.getElementById('{select_id}'); s.value = '{value}';"
                 " s.dispatchEvent(new Event('change')); })()")


def test_html_trace_loads_filters_and_renders(tmp_path, browser):
    run = make_run(tmp_path / "run")
    page = tmp_path / "trace.html"
    res = runner.invoke(app, ["trace", str(run), "--html", str(page)])
    assert res.exit_code == 0, res.output
    browser.open(page)
    count = "document.querySelectorAll('#qlist li').length"
    assert browser.eval(count) == 3
    assert browser.errors() == []

    # filter on status: only the refusal is left
    choose(browser, "f-status", "refuse")
    assert browser.eval(count) == 1
    assert browser.eval("document.querySelector('#qlist li').dataset.id") == "toy-none"
    assert browser.eval("document.getElementById('count').textContent") == "showing 1 of 3 questions"
    choose(browser, "f-status", "")
    assert browser.eval(count) == 3

    # a click on the hostile page's question shows its text as text: no script from it ran
    browser.click("#qlist li[data-id='toy-hostile']")
    assert browser.eval("document.querySelector('#detail h2').textContent").startswith("which movie won")
    shown = browser.eval("document.getElementById('detail').textContent")
    assert HOSTILE.split(" ")[0] in shown and "<script>window.__pwned=1</script>" in shown
    assert browser.eval("typeof window.__pwned") == "undefined"
    assert browser.eval("document.querySelectorAll('#detail mark').length") >= 1  # the quoted span
    assert browser.eval("document.querySelectorAll('#detail svg rect').length") >= 1  # the signals chart
    browser.click("#detail .tl-row")  # a timeline node opens its details
    assert browser.eval("document.querySelector('#detail .tl-detail').hidden") is False
    assert browser.errors() == []

    shot = browser.screenshot(tmp_path / "trace.png")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000

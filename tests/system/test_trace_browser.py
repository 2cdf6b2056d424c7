"""The HTML trace in a real headless Chromium (Debian's, started by the test): loads cleanly,
filters, shows a question, runs no script from page text, shows each LLM call, the waterfall and the
path through the graph, opens at a deep link, compares two runs, and renders to a screenshot."""

from __future__ import annotations

import pytest

from agentic_rag.cli import app
from testkit.cdp import Browser, chromium_path
from testkit.records import QUOTE_2004
from testkit.scripted_runs import HOSTILE, make_run, runner

pytestmark = pytest.mark.skipif(chromium_path() is None, reason="Debian's chromium is not installed (README: apt-get install chromium)")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two small real runs of the same questions: the second refuses on retrieval what the first answered."""
    root = tmp_path_factory.mktemp("browser")
    return make_run(root / "run"), make_run(root / "strict", RETRIEVAL_MIN_SCORE=0.99)


@pytest.fixture
def browser(tmp_path):
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


def choose(browser: Browser, select_id: str, value: str) -> None:
    """Pick an option as a user would: set the value, then the change event the page listens to."""
    browser.eval(f"(() => {{ const s = document.getElementById('{select_id}'); s.value = '{value}';"
                 " s.dispatchEvent(new Event('change')); })()")


def test_html_trace_loads_filters_and_renders(tmp_path, browser, runs):
    run = runs[0]
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


def test_html_trace_shows_llm_calls_waterfall_and_path_from_a_deep_link(tmp_path, browser, runs):
    page = tmp_path / "trace.html"
    assert runner.invoke(app, ["trace", str(runs[0]), "--html", str(page)]).exit_code == 0
    browser.call("Page.navigate", url=page.resolve().as_uri() + "#id=toy-hostile")
    browser.wait_for("Page.loadEventFired")
    assert browser.errors() == []
    # the deep link opened its question; choosing another moves the link with it
    assert browser.eval("document.querySelector('#qlist li.sel').dataset.id") == "toy-hostile"
    assert browser.eval("document.querySelector('#detail h2').textContent").startswith("which movie won best animated feature at the 2005")
    browser.click("#qlist li[data-id='toy-ok']")
    assert browser.eval("location.hash") == "#id=toy-ok"

    # each LLM call: the prompt as sent (its start and end, with a button for all of it) and the raw completion
    assert browser.eval("document.querySelectorAll('#llm-calls .llm-call').length") == 1
    prompt = "document.querySelector('#llm-calls .llm-prompt').textContent"
    assert "Question: which movie won best animated feature at the 2004 oscars?" in browser.eval(prompt)
    assert "The Incredibles won the Oscar" not in browser.eval(prompt)  # the middle is cut
    browser.click("#llm-calls .llm-prompt button.expand")
    assert "The Incredibles won the Oscar" in browser.eval(prompt)
    completion = browser.eval("document.querySelector('#llm-calls .llm-completion').textContent")
    assert f'Finding Nemo won. [1] "{QUOTE_2004}"' in completion

    # the waterfall: a bar per node run, each on its own row at its own time; the workers fanned out
    # together all start before the supervisor that merges them (how far they overlap depends on the
    # machine: a cached retrieval takes under a millisecond)
    bars = browser.eval("[...document.querySelectorAll('#waterfall rect.wf-bar')].map((r) => "
                        "[r.dataset.node, +r.dataset.start, +r.dataset.end, +r.getAttribute('x'), +r.getAttribute('y')])")
    workers = [b for b in bars if b[0] == "worker"]
    assert len(workers) >= 2 and [b[0] for b in bars][0] == "anchors" and bars[-1][0] == "finalize"
    supervise = min(b[1] for b in bars if b[0] == "supervise")
    assert max(b[1] for b in workers) <= supervise and len({b[4] for b in bars}) == len(bars)

    # the graph: the nodes this question ran through are highlighted, the others are not
    visited = browser.eval("[...document.querySelectorAll('#graph-path g.node.visited')].map((g) => g.dataset.node)")
    assert {"anchors", "worker", "generate", "decide", "finalize"} <= set(visited)
    assert "reflect" not in visited and "final_check" not in visited
    taken = browser.eval("[...document.querySelectorAll('#graph-path path.edge.taken')].map((p) => p.dataset.edge)")
    assert "decide>finalize" in taken and "decide>reflect" not in taken
    assert "STOP / ABSTAIN" in browser.eval("document.getElementById('graph-path').textContent")

    browser.click("#qlist li[data-id='toy-none']")
    assert browser.eval("document.getElementById('llm-calls')") is None  # refused with no LLM call
    assert browser.errors() == []


def test_compare_page_lists_the_flipped_questions_side_by_side(tmp_path, browser, runs):
    page = tmp_path / "compare.html"
    res = runner.invoke(app, ["compare", str(runs[0]), str(runs[1]), "--html", str(page)])
    assert res.exit_code == 0, res.output
    browser.open(page)
    assert browser.errors() == []
    listed = browser.eval("[...document.querySelectorAll('#qlist li')].map((li) => li.dataset.id)")
    assert sorted(listed) == ["toy-hostile", "toy-ok"]  # answered in the first run, refused in the second
    assert "2 of 3 questions flipped" in browser.eval("document.getElementById('title').textContent")
    browser.click("#qlist li[data-id='toy-ok']")
    assert "judgement accurate -> missing" in browser.eval("document.querySelector('#detail .flips').textContent")
    sides = browser.eval("[...document.querySelectorAll('#detail .cmp > div')].map((d) => "
                         "[d.querySelector('h3').textContent, d.querySelectorAll('.tl-row').length, "
                         "d.querySelector('.why p').textContent])")
    assert len(sides) == 2 and sides[0][1] > 0 and sides[1][1] > 0
    assert "Finding Nemo" in sides[0][2] and "know" in sides[1][2]
    # each side's path on its run's graph: the first generated, the second was refused before any LLM call
    paths = browser.eval("[...document.querySelectorAll('#detail .cmp > div')].map((d) => "
                         "[...d.querySelectorAll('#graph-path g.node.visited')].map((g) => g.dataset.node))")
    assert "generate" in paths[0] and "generate" not in paths[1] and "confidence_gate" in paths[1]
    assert browser.eval("location.hash") == "#id=toy-ok"
    assert browser.errors() == []

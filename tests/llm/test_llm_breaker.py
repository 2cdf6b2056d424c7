"""The model server's circuit breaker (llm/breaker.py) through the openai backend's retry loop: what
opens it (a call that got no word within the whole LLM_TIMEOUT_S), what does not (a slow reply, a
timeout the question's deadline cut short), and how it closes (one try after the cool-down)."""

from __future__ import annotations

import itertools
import threading
import time

import httpx
import openai
import pytest

from agentic_rag.llm.remote import call_with_retries
from agentic_rag.llm.usage import LLMUnavailableError, llm_deadline

TIMEOUT_S = 5.0
_URLS = itertools.count()


def fresh_url() -> str:
    """A server of its own per test: breakers are process-wide, one per base URL."""
    return f"http://breaker-{next(_URLS)}.invalid/v1"


def silent(timeout: float) -> str:
    raise openai.APITimeoutError(request=httpx.Request("POST", "http://x"))


def refused(timeout: float) -> str:
    raise openai.APIConnectionError(request=httpx.Request("POST", "http://x"))


def call(url: str, attempt=lambda timeout: "reply", cooldown_s: float = 60.0, retries: int = 1) -> str:
    return call_with_retries(attempt, url=url, timeout_s=TIMEOUT_S, retries=retries, backoff_s=0.0,
                             cooldown_s=cooldown_s)


def outcome(url: str, **kw) -> str | LLMUnavailableError:
    try:
        return call(url, **kw)
    except LLMUnavailableError as exc:
        return exc


def never(timeout: float) -> str:
    raise AssertionError("the server was asked while its breaker was open")


def test_a_call_that_got_no_word_refuses_the_next_calls_in_every_thread_and_only_for_its_server():
    url = fresh_url()
    first = outcome(url, attempt=silent)
    assert isinstance(first, LLMUnavailableError) and first.attempts == 2 and first.down_since is None
    seen: list = []
    worker = threading.Thread(target=lambda: seen.append(outcome(url, attempt=never)))
    worker.start()
    worker.join()
    refusal = seen[0]
    assert isinstance(refusal, LLMUnavailableError) and refusal.tried and refusal.down_since is not None
    assert "stopped answering at" in str(refusal) and f"no reply within {TIMEOUT_S:.1f} s" in refusal.last_error
    assert refusal.to_dict()["down_since"] == pytest.approx(refusal.down_since, abs=0.01)
    assert call(fresh_url()) == "reply"  # another server is asked as before


def test_after_the_cooldown_one_call_tries_the_server_and_its_reply_closes_the_breaker():
    url, cooldown = fresh_url(), 0.3
    outcome(url, attempt=silent, cooldown_s=cooldown)
    assert isinstance(outcome(url, attempt=never, cooldown_s=cooldown), LLMUnavailableError)
    time.sleep(cooldown + 0.05)
    asked, release, result = threading.Event(), threading.Event(), []

    def slow_reply(timeout: float) -> str:
        asked.set()
        release.wait(10)
        return "reply"

    trial = threading.Thread(target=lambda: result.append(call(url, attempt=slow_reply, cooldown_s=cooldown)))
    trial.start()
    assert asked.wait(10)
    assert isinstance(outcome(url, attempt=never, cooldown_s=cooldown), LLMUnavailableError)  # one try at a time
    release.set()
    trial.join()
    assert result == ["reply"] and call(url, cooldown_s=cooldown) == "reply"


def test_a_failed_try_after_the_cooldown_opens_the_breaker_again():
    url, cooldown = fresh_url(), 0.2
    outcome(url, attempt=silent, cooldown_s=cooldown)
    time.sleep(cooldown + 0.05)
    tried = outcome(url, attempt=refused, cooldown_s=cooldown, retries=0)
    assert isinstance(tried, LLMUnavailableError) and tried.attempts == 1
    again = outcome(url, attempt=never, cooldown_s=cooldown)
    assert isinstance(again, LLMUnavailableError) and "connection failed" in again.last_error


def test_a_slow_reply_a_refused_connection_or_a_timeout_the_deadline_cut_does_not_open_it():
    url = fresh_url()
    attempts = iter([silent, lambda timeout: "late reply"])
    assert call(url, attempt=lambda timeout: next(attempts)(timeout)) == "late reply"  # answered on its retry
    assert isinstance(outcome(url, attempt=refused), LLMUnavailableError)  # fails at once: nothing to save
    with llm_deadline(time.time() + 0.5):  # the attempt had 0.5 s of its 5 s: no evidence of a hang
        cut = outcome(url, attempt=silent, retries=0)
    assert isinstance(cut, LLMUnavailableError) and "no reply within 0." in cut.last_error
    assert call(url) == "reply"


def test_a_cooldown_of_zero_turns_the_breaker_off():
    url = fresh_url()
    outcome(url, attempt=silent, cooldown_s=0.0)
    assert call(url, cooldown_s=0.0) == "reply"

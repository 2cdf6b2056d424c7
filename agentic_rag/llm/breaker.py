"""A circuit breaker per model server: once a server has held a call for a whole ``LLM_TIMEOUT_S``
without a word, on every attempt the call made, the next calls to it are refused at once.

A server that accepts connections and never answers would otherwise hold every question for its own
timeouts, one after the other: an eval of N questions waits about N x ``WALL_TIME_S`` for nothing. The
state is per base URL and process-wide, because eval's worker threads share the server (and so its
outage). After ``LLM_BREAKER_COOLDOWN_S`` one call tries the server again (half-open) while the others
are still refused; a reply to any call closes the breaker, a failed try opens it again.

Only a hang opens it: a refused connection or an HTTP error already fails in a moment, and a slow
server that answers within the timeout, or on a retry, closes it. An attempt whose timeout the
question's deadline cut short says nothing about the server, so it does not count.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from agentic_rag.llm.usage import LLMUnavailableError


@dataclass
class Call:
    """What one guarded call tells its server's breaker: the fault of an attempt that was given the
    whole ``LLM_TIMEOUT_S`` and got no reply ("" when none was)."""

    hung: str = ""


class Breaker:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.down_since: float | None = None  # time.time() the server was first found not answering
        self.cause = ""  # the fault that opened the breaker, as the refusal quotes it
        self._opened = 0.0  # time.monotonic() it last opened: the cool-down runs from here
        self._trying = False  # a half-open call is under way

    def admit(self, cooldown_s: float) -> bool:
        with self._lock:
            if self.down_since is None:
                return True
            if self._trying or time.monotonic() - self._opened < cooldown_s:
                return False
            self._trying = True
            return True

    def answered(self) -> None:
        with self._lock:
            self.down_since, self.cause, self._trying = None, "", False

    def failed(self, call: Call, error: LLMUnavailableError) -> None:
        with self._lock:
            tried_again, self._trying = self._trying, False
            if call.hung or (tried_again and error.attempts):
                self.cause = call.hung or error.last_error
                self.down_since = self.down_since or time.time()
                self._opened = time.monotonic()

    def released(self) -> None:
        """A call that ended in neither a reply nor an outage (a bug on this side): nothing learnt."""
        with self._lock:
            self._trying = False

    def refusal(self, url: str, cooldown_s: float) -> LLMUnavailableError:
        since = time.strftime("%H:%M:%S", time.localtime(self.down_since or time.time()))
        note = (f"stopped answering at {since} ({self.cause}); calls to it are refused until one, tried every "
                f"{cooldown_s:g} s (LLM_BREAKER_COOLDOWN_S), is answered again")
        return LLMUnavailableError(url, note, 0, 0.0, down_since=self.down_since)


_BREAKERS: dict[str, Breaker] = {}
_LOCK = threading.Lock()


def breaker_for(url: str) -> Breaker:
    with _LOCK:
        return _BREAKERS.setdefault(url, Breaker())


@contextmanager
def guarded(url: str, cooldown_s: float) -> Iterator[Call]:
    """The call inside, unless ``url``'s breaker is open: then ``LLMUnavailableError`` before any
    request. ``cooldown_s`` 0 turns the breaker off."""
    call = Call()
    if cooldown_s <= 0:
        yield call
        return
    breaker = breaker_for(url)
    if not breaker.admit(cooldown_s):
        raise breaker.refusal(url, cooldown_s)
    try:
        yield call
    except LLMUnavailableError as exc:
        breaker.failed(call, exc)
        raise
    except BaseException:
        breaker.released()
        raise
    breaker.answered()

"""The model server is untrusted: whatever it sends (a reply trickled a byte at a time, a body that inflates a
thousandfold, a redirect, a usage that is not a count, content in parts, a key echoed back escaped), the question
ends by its deadline, within the reply's bounds, as an answer or as ABSTAIN_LLM_UNAVAILABLE naming why, and no
key is shown or stored. A setting that could not reach a server (a key or URL holding a line break, the mask a
printed command shows) is a settings error before anything runs.

Each case runs the real command, `agentic-rag ask` or `eval` (in this process through the CLI runner, or as a
process where a signal is the subject), against testkit/fault_server.py on 127.0.0.1."""

from __future__ import annotations

import json
import re
import shlex
import signal
import sys
import time
import tracemalloc
import zlib
from pathlib import Path
from urllib.parse import quote

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from testkit.fault_server import FaultServer
from testkit.processes import SUITE_SETTINGS, lines, start, wait_for
from testkit.records import QUOTE_2004, toy_dataset

REPLY = f'Finding Nemo won {{cite:76th academy}} "{QUOTE_2004}".'
KEY = "sk-fake-5e4f3a2b1c0d"  # distinctive: grepped for in every output
TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def server():
    with FaultServer(reply=REPLY, hang_s=6, trickle_s=0.2) as srv:
        yield srv


def backend(url: str, tmp_path: Path, **settings: object) -> list[str]:
    """The openai backend on ``url``: one attempt per call (a retry would only repeat the case), no breaker."""
    values = {"LLM_BACKEND": "openai", "OPENAI_BASE_URL": url, "LLM_MODEL": "m", "LLM_TIMEOUT_S": TIMEOUT_S,
              "LLM_RETRIES": 0, "LLM_BREAKER_COOLDOWN_S": 0, "ARTIFACTS_DIR": tmp_path / "artifacts", **settings}
    return [x for k, v in values.items() for x in ("-o", f"{k}={v}")]


def ask(server: FaultServer, tmp_path: Path, plan: list[str], *options: str, env: dict[str, str] | None = None,
        **settings: object):
    """`ask --system baseline --json` on the toy record (one model call): (the CLI's result, the answer record
    or None when the command failed)."""
    server.set_plan(plan)
    data = toy_dataset(tmp_path, n=1)
    res = CliRunner().invoke(app, ["ask", "--dataset", str(data), "--id", "toy-0", "--system", "baseline", "--json",
                                   *backend(server.url, tmp_path, **settings), *options],
                             env={"OPENAI_API_KEY": KEY, **(env or {})})
    return res, (json.loads(res.stdout) if res.exit_code == 0 else None)


def one_line_settings_error(res) -> str:
    said = res.stderr.strip().splitlines()
    assert res.exit_code == 2 and len(said) == 1 and said[0].startswith("settings error:"), res.output[-2000:]
    assert "Traceback" not in res.output and (res.exception is None or isinstance(res.exception, SystemExit))
    return said[0]


def written_text(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file() and p.suffix != ".sqlite")


# --- one deadline around every call ---------------------------------------------------------------------


@pytest.mark.parametrize("bound", ["LLM_TIMEOUT_S", "WALL_TIME_S"])
def test_a_reply_trickled_a_byte_at_a_time_ends_by_the_calls_deadline(server, tmp_path, bound):
    """A byte every 0.2 s never lets a read time out; before, the call waited out the whole trickle (6 s) and
    answered, whatever LLM_TIMEOUT_S or the question's WALL_TIME_S said."""
    settings = {"LLM_TIMEOUT_S": TIMEOUT_S} if bound == "LLM_TIMEOUT_S" else {"LLM_TIMEOUT_S": 60, "WALL_TIME_S": 3}
    trickled = len(server.unsent)
    res, reply = ask(server, tmp_path, ["trickle"], **settings)
    assert res.exit_code == 0, res.output[-2000:]
    assert reply["reason"] == "ABSTAIN_LLM_UNAVAILABLE" and reply["status"] == "refuse"
    took_s = reply["llm_ms"] / 1000  # the time inside the model call
    assert took_s < (TIMEOUT_S if bound == "LLM_TIMEOUT_S" else 3.0) + 0.5, took_s
    until = time.monotonic() + 5  # the server finds the client gone at its next write but one
    while len(server.unsent) == trickled and time.monotonic() < until:
        time.sleep(0.05)
    assert server.unsent[trickled] > 0  # the client gave up before the whole body came
    if bound == "LLM_TIMEOUT_S":
        assert f"no reply within {TIMEOUT_S:.1f} s" in reply["explanation"]


def test_an_eval_with_a_trickling_reply_saves_every_row(server, tmp_path):
    server.set_plan(["ok", "trickle", "ok"])
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["eval", "--dataset", str(toy_dataset(tmp_path, n=3)), "--system", "baseline",
                                   "--out", str(out), *backend(server.url, tmp_path)], env={"OPENAI_API_KEY": KEY})
    assert res.exit_code == 0, res.output[-2000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in rows] == ["STOP_SINGLE_PASS", "ABSTAIN_LLM_UNAVAILABLE", "STOP_SINGLE_PASS"]
    assert rows[1]["llm_ms"] < (TIMEOUT_S + 0.5) * 1000


# --- keys: one line of printable text, masked in every escaped form -------------------------------------


@pytest.mark.parametrize("given", ["-o OPENAI_API_KEY", "$OPENAI_API_KEY", "-o EVAL_JUDGE_API_KEY"])
def test_a_key_holding_a_line_break_is_a_settings_error_that_does_not_show_it(server, tmp_path, given):
    """Before: the key was sent, the HTTP client's error quoted it escaped (``sk-SECRET\\norg-x``), and that
    form, which the redaction did not know, was printed and stored."""
    key = "sk-SECRET\norg-x"  # a key read from a file of two lines
    options = ["-o", f"{given.split()[1]}={key}"] if given.startswith("-o") else []
    res, _ = ask(server, tmp_path, ["500"], *options, env={"OPENAI_API_KEY": key} if given.startswith("$") else None)
    line = one_line_settings_error(res)
    assert given.split()[-1].lstrip("$") in line and "SECRET" not in res.output
    assert not (tmp_path / "artifacts").exists() or "SECRET" not in written_text(tmp_path / "artifacts")


def test_a_key_the_server_echoes_escaped_is_masked_in_every_form_shown_and_stored(server, tmp_path):
    """The server's 500 quotes the Authorization header as Python's repr, in JSON with escaped slashes and
    URL-encoded; before, only the key as typed was masked."""
    key = 'sk-fake/5e4f+3a2b\\1c0d"x'  # printable, but written differently by each escaping
    res, reply = ask(server, tmp_path, ["500_escaped"], env={"OPENAI_API_KEY": key})
    assert res.exit_code == 0, res.output[-2000:]
    assert reply["reason"] == "ABSTAIN_LLM_UNAVAILABLE" and "HTTP 500" in reply["explanation"]
    shown_and_stored = res.output + written_text(tmp_path / "artifacts")
    for form in ("5e4f+3a2b", "5e4f%2B3a2b", "3a2b\\\\1c0d", "sk-fake\\/5e4f"):
        assert form not in shown_and_stored, form
    assert "***" in reply["explanation"]


def test_one_redaction_masks_every_escaped_form_of_a_secret():
    from agentic_rag.redact import redact_text

    secret = "sk-SECRET\norg-x"
    forms = [secret, repr(secret)[1:-1], repr(secret.encode())[2:-1], json.dumps(secret)[1:-1],
             json.dumps(repr(secret))[1:-1], quote(secret, safe=""), quote(secret), f"Bearer%20{quote(secret)}",
             json.dumps(json.dumps(secret))[1:-1]]
    for form in forms:
        masked = redact_text(f"error: Illegal header value b'Bearer {form}' (sent)", (secret,))
        assert "SECRET" not in masked and "***" in masked, (form, masked)


# --- one bounded reader for reply bodies ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["gzip_bomb", "many_choices"])
def test_a_reply_past_the_decoded_byte_bound_is_refused_unread(server, tmp_path, mode):
    """64 MB of spaces gzipped into 62 KB, and 30 MB of 200,000 choices: before, both were read whole (the
    first answered from its first 20,000 characters; 4.5 GB of memory for a 0.97 MB bomb)."""
    res, reply = ask(server, tmp_path, [mode])
    assert res.exit_code == 0, res.output[-2000:]
    assert reply["reason"] == "ABSTAIN_LLM_UNAVAILABLE"
    assert "larger than 4,000,000 bytes (decoded; MAX_REPLY_BYTES" in reply["explanation"]


def test_the_body_reader_inflates_no_more_than_its_bound():
    from agentic_rag.llm.transport import BadReply, read_body

    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    wire = b"".join([*(packer.compress(b"\0" * 1_000_000) for _ in range(1000)), packer.flush()])  # 1 GB inflated
    chunks = [wire[i:i + 65536] for i in range(0, len(wire), 65536)]
    consumed = []

    def sent():
        for chunk in chunks:
            consumed.append(len(chunk))
            yield chunk

    tracemalloc.start()
    with pytest.raises(BadReply, match="larger than 1,000,000 bytes"):
        read_body(sent(), "gzip", None, 1_000_000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8_000_000 and sum(consumed) <= 65536
    assert read_body([zlib.compress(b"x" * 10, wbits=31)], "gzip", None, 10) == b"x" * 10
    with pytest.raises(BadReply, match="did not ask for"):
        read_body([b"x"], "br", None, 10)


def test_the_bounded_client_still_goes_through_the_proxy_the_environment_names(monkeypatch):
    """A client given its own transport reads no proxy variable: the SDK's default one did, so this one must."""
    from agentic_rag.llm.transport import env_proxy

    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert env_proxy("https://api.openai.com/v1") == "http://proxy.example:3128"
    assert env_proxy("http://127.0.0.1:8000/v1") is None and env_proxy("http://model.lan/v1") is None


def test_a_reply_of_many_choices_within_the_bound_is_answered_from_its_first_in_the_calls_time(server, tmp_path):
    """10,000 choices in 2.5 MB: before, the SDK made a model of each and langchain a message of each (seconds of
    CPU after the last byte, outside any timeout)."""
    server.n_choices = 10_000
    try:
        res, reply = ask(server, tmp_path, ["many_choices"])
    finally:
        server.n_choices = 200_000
    assert res.exit_code == 0, res.output[-2000:]
    assert reply["reason"] == "STOP_SINGLE_PASS" and reply["answer"].startswith("Finding Nemo won")
    assert reply["llm_ms"] < 1000 * TIMEOUT_S, reply["llm_ms"]


# --- usage that is not a count ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode, said", [("bad_usage", "usage.total_tokens is 'many'"),
                                        ("negative_usage", "usage.prompt_tokens is -")])
def test_a_usage_that_is_not_a_count_is_a_malformed_reply_and_every_row_is_saved(server, tmp_path, mode, said):
    """Before: ``"many"`` stopped the eval with a ValueError traceback after one row; negative counts were booked."""
    server.set_plan(["ok", mode, "ok"])
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["eval", "--dataset", str(toy_dataset(tmp_path, n=3)), "--system", "baseline",
                                   "--out", str(out), *backend(server.url, tmp_path)], env={"OPENAI_API_KEY": KEY})
    assert res.exit_code == 0 and res.exception is None, res.output[-2000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in rows] == ["STOP_SINGLE_PASS", "ABSTAIN_LLM_UNAVAILABLE", "STOP_SINGLE_PASS"]
    assert said in rows[1]["explanation"] and "malformed reply" in rows[1]["explanation"]
    assert all(r["tokens"]["total"] >= 0 for r in rows)


# --- a base URL the client cannot use ----------------------------------------------------------------------


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/v1\nx", "http://127.0.0.1:9/v1 x", "http://127.0.0.1:9/\tv1"])
def test_a_base_url_holding_a_line_break_or_a_space_is_a_settings_error(server, tmp_path, url):
    """Before: it passed the settings check and ended in an httpx InvalidURL traceback mid-question."""
    res, _ = ask(server, tmp_path, [], "-o", f"OPENAI_BASE_URL={url}")
    assert "OPENAI_BASE_URL" in one_line_settings_error(res)


# --- redirects ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["301", "302", "307"])
def test_a_redirect_is_refused_not_followed(server, tmp_path, status):
    """Before: a 301 or 302 became a GET with no prompt whose body was the answer; a 307 re-sent the pages and the
    question to the other origin."""
    with FaultServer(reply="stolen") as elsewhere:
        server.redirect_to = f"{elsewhere.url}/chat/completions?token=abc"
        res, reply = ask(server, tmp_path, [status])
        assert elsewhere.requests == []
    assert res.exit_code == 0, res.output[-2000:]
    assert reply["reason"] == "ABSTAIN_LLM_UNAVAILABLE" and "stolen" not in reply["answer"]
    assert f"HTTP {status}: a redirect, not followed (a chat completion is never redirected); to " \
           f"{elsewhere.url}/chat/completions?token=***" in reply["explanation"]


# --- the printed resume command -------------------------------------------------------------------------------


def test_the_printed_resume_command_carries_no_key_and_a_masked_key_is_refused(server, tmp_path):
    """Before: the command carried ``-o 'OPENAI_API_KEY=***'``; run as printed, it sent *** as the key and saved
    every remaining question as ABSTAIN_LLM_UNAVAILABLE, the run counted complete."""
    data, out = toy_dataset(tmp_path, n=3), tmp_path / "run"
    server.set_plan(["ok"], default="hang")
    proc = start([sys.executable, "-m", "agentic_rag.cli", "eval", "--dataset", str(data), "--system", "baseline",
                  "--out", str(out), *backend(server.url, tmp_path, LLM_TIMEOUT_S=60), "-o", f"OPENAI_API_KEY={KEY}"],
                 keep=SUITE_SETTINGS)
    wait_for(lambda: lines(out / "results.jsonl") == 1, proc, timeout=120)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    server.set_plan([], default="ok")
    assert proc.returncode == 143 and KEY not in stderr, stderr[-2000:]
    line = re.search(r"resume with:\n\s+(.+)", stderr).group(1)
    argv = shlex.split(line, comments=True)[3:]  # as a shell runs the line: its note is a comment
    assert argv[-1] == "--resume" and not any("OPENAI_API_KEY" in a or "***" in a for a in argv)
    assert "# first set OPENAI_API_KEY in the environment" in line

    masked = CliRunner().invoke(app, [*argv, "-o", "OPENAI_API_KEY=***"])
    assert "OPENAI_API_KEY" in one_line_settings_error(masked) and lines(out / "results.jsonl") == 1

    before = len(server.requests)
    resumed = CliRunner().invoke(app, argv, env={"OPENAI_API_KEY": KEY})
    assert resumed.exit_code == 0, resumed.output[-2000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in rows] == ["STOP_SINGLE_PASS"] * 3
    assert {r["authorization"] for r in server.requests[before:]} == {f"Bearer {KEY}"}


# --- content in parts ---------------------------------------------------------------------------------------


def test_content_sent_as_a_list_of_parts_is_read_as_its_text(server, tmp_path):
    """Before: the answer was the list's Python repr (``[{'type': 'text', ...``)."""
    res, reply = ask(server, tmp_path, ["content_parts"])
    assert res.exit_code == 0, res.output[-2000:]
    assert reply["reason"] == "STOP_SINGLE_PASS" and reply["answer"].startswith("Finding Nemo won")
    assert "'type'" not in reply["answer"] and "image_url" not in reply["answer"]

"""Artefacts that try to run code, take a key or inject markup: a run folder's checkpoints holding a call,
a dataset whose labels carry table breaks and HTML, a pickled .npz, the per-request settings a served
graph's client must not choose. The tests feed them to the library, the reliability benchmark to real
processes."""

from __future__ import annotations

import re
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import numpy as np

# EXT_CONSTRUCTOR_POS_ARGS of LangGraph's msgpack: (module, name, args) is built as module.name(*args)
_CALL_EXT = 1


def poison_checkpoints(path: Path, command: str, channel: str = "question") -> int:
    """Replace every stored value of ``channel`` in a checkpoints.sqlite by a call of ``os.system(command)``
    as LangGraph's msgpack encodes a constructor; the number of values replaced."""
    import ormsgpack

    call = ormsgpack.packb(ormsgpack.Ext(_CALL_EXT, ormsgpack.packb(("os", "system", [command]))))
    with sqlite3.connect(path) as conn:
        return conn.execute("UPDATE blobs SET type = 'msgpack+zlib', value = ? WHERE channel = ?",
                            (zlib.compress(call), channel)).rowcount


# A label that breaks a markdown table, adds a heading and loads remote images when the report is rendered
MARKUP = ("pwn | x |\n# Injected heading\n<img src=http://attacker.example/t.png onerror=alert(1)>"
          " ![t](http://attacker.example/i.png)")


def markup_labels(record: dict) -> dict:
    """The record with its domain, question type and static_or_dynamic set to ``MARKUP``."""
    return {**record, "domain": MARKUP, "question_type": MARKUP, "static_or_dynamic": MARKUP}


def unescaped_markup(text: str) -> list[str]:
    """The pieces of ``MARKUP`` a markdown text carries as markup rather than as text: the tag (its onerror
    with it), the heading, the image link."""
    return ([p for p in ("<img", "onerror=alert(1)>") if p in text] + re.findall(r"(?m)^# Injected.*$", text)
            + re.findall(r"(?<!\\)\]\(http", text))


class _Call:
    """Unpickled, it runs ``os.system(command)``."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        import os

        return os.system, (self.command,)


def pickled_npz(path: Path, command: str) -> Path:
    """A probe-training .npz whose ids are an object array holding a call of ``os.system(command)``: reading it
    with ``allow_pickle=True`` runs the command."""
    np.savez(path, ids=np.array(["q1", _Call(command)], dtype=object), X=np.zeros((2, 2)))
    return path


# Per-request settings a client of the served graph must not choose (an endpoint, a credential, a model, a
# path of each kind, code to import), each with the value a client would send: (setting, value or None for
# a path under the client's folder)
FORBIDDEN_REQUEST_SETTINGS = (("OPENAI_BASE_URL", None), ("OPENAI_API_KEY", "sk-client"), ("LLM_MODEL", "client-model"),
                              ("TELEMETRY_PATH", None), ("LLM_CACHE_PATH", None), ("CHECKPOINT_PATH", None),
                              ("PROBE_PATH", None), ("MODEL_CACHE_DIR", None), ("VECTOR_STORE", "os:system"),
                              ("EXTENSIONS", ["os:system"]))


def served_attacks(langgraph: list[str], folder: Path, env: dict[str, str], key: str, reply: str) -> dict[str, Any]:
    """`langgraph dev` serving the agent on an openai model server (answering ``reply``) with ``key``, and the
    requests of a client that wants the key, the server's files or a crash: each forbidden setting in
    ``config.configurable`` (the URL one pointing at the client's own server, the paths under
    ``folder/client``), a path in ``context``, an assistant made with the client's URL, a ``context``
    section named ``llm``, flat ``context`` keys. What came back, what reached the client's server, what
    was written under ``folder/client``, and the server's log."""
    from testkit.fault_server import FaultServer
    from testkit.records import record
    from testkit.servers import graph_server, post

    client = folder / "client"
    question = {"question": record().query, "question_id": "srv-sec", "record": record().model_dump(mode="json")}
    with FaultServer(reply=reply) as model, FaultServer(reply="stolen") as attacker:
        served = {**env, "AGENTIC_RAG_LLM_BACKEND": "openai", "AGENTIC_RAG_OPENAI_BASE_URL": model.url,
                  "AGENTIC_RAG_LLM_MODEL": "m", "AGENTIC_RAG_LLM_TIMEOUT_S": "5", "OPENAI_API_KEY": key}
        with graph_server(langgraph, folder, served) as (port, log):
            def run(**settings: Any) -> tuple[int, dict]:
                return post(port, {"assistant_id": "agent", "input": question, **settings}, timeout=300)

            replies = {f"config.configurable.{name}": run(config={"configurable": {
                name: value if value is not None else attacker.url if name.endswith("URL") else str(client / name)}})
                for name, value in FORBIDDEN_REQUEST_SETTINGS}
            replies["context paths.TELEMETRY_PATH"] = run(context={"paths": {"TELEMETRY_PATH": str(client / "t.jsonl")}})
            replies["assistant with OPENAI_BASE_URL"] = post(port, {"graph_id": "agent", "config": {"configurable": {
                "OPENAI_BASE_URL": attacker.url}}}, path="/assistants")
            replies["context flat MAX_ROUNDS"] = run(context={"MAX_ROUNDS": 1})
            before = len(model.requests)
            replies["context section llm"] = run(context={"llm": {"MAX_OUTPUT_TOKENS": 120}})
            return {"replies": replies, "attacker_requests": list(attacker.requests),
                    "model_requests_of_llm_section": len(model.requests) - before,
                    "written": sorted(str(p) for p in client.rglob("*")) + ([str(client)] if client.exists() else []),
                    "log": log.read_text(errors="replace")}

"""A real OTLP/HTTP trace collector on 127.0.0.1, for tests and scripts/bench_reliability.py: it decodes
each export request (protobuf, as the SDK's exporter sends it) and counts the spans it accepted, which is
what a sender must match. ``first_reply_s`` holds the first request that long before answering, as a
busy or distant collector does: a sender that queues spans meanwhile and drops what does not fit is
caught. After ``refuse_after`` requests it answers 400 (not retried: a payload the collector will not
take). Needs the ``otel`` extra (the protobuf classes come with the exporter).

``repeated_run`` makes a run folder of many questions from a small one, for a re-send larger than the
SDK's span queue without answering hundreds of questions.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agentic_rag.eval.results import read_results

SDK_SPAN_QUEUE = 2048  # spans the OpenTelemetry SDK's batch processor queues by default (max_queue_size)
SDK_BATCH = 512  # spans it takes off the queue for one request (max_export_batch_size)


class OtlpCollector:
    def __init__(self, first_reply_s: float = 0.0, refuse_after: int | None = None) -> None:
        self.first_reply_s, self.refuse_after = first_reply_s, refuse_after
        self.spans = self.requests = 0
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                accepted = collector._accept(body)
                reply = collector._response()
                self.send_response(200 if accepted else 400)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def _accept(self, body: bytes) -> bool:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        request = ExportTraceServiceRequest.FromString(body)
        with self._lock:
            self.requests += 1
            number = self.requests
        if number == 1:
            time.sleep(self.first_reply_s)
        if self.refuse_after is not None and number > self.refuse_after:
            return False
        spans = sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)
        with self._lock:
            self.spans += spans
        return True

    @staticmethod
    def _response() -> bytes:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        return ExportTraceServiceResponse().SerializeToString()

    def __enter__(self) -> "OtlpCollector":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def repeated_run(run: Path, out: Path, copies: int) -> Path:
    """A run folder whose results are ``run``'s rows ``copies`` times over, each copy under new ids."""
    out.mkdir(parents=True)
    rows = read_results(run / "results.jsonl")
    with open(out / "results.jsonl", "w", encoding="utf-8") as fh:
        for i in range(copies):
            fh.writelines(json.dumps({**row, "id": f"{row['id']}-{i}"}, ensure_ascii=False) + "\n" for row in rows)
    for name in ("config.json", "summary.json"):
        if (run / name).is_file():
            (out / name).write_bytes((run / name).read_bytes())
    return out

"""Drive Debian's headless Chromium over the DevTools protocol (no browser download, no driver).

Enough for page tests: open a file, collect console errors and uncaught exceptions, evaluate
script, click at an element, take a screenshot.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-port=0", "--window-size=1400,900", "--hide-scrollbars"]
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    return next((p for p in map(shutil.which, CHROMIUM) if p), None)


class Browser:
    def __init__(self, profile: Path, timeout: float = 60.0) -> None:
        from websockets.sync.client import connect

        exe = chromium_path()
        if exe is None:
            raise RuntimeError("no chromium on PATH (Debian: apt-get install chromium)")
        self.proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.time() + timeout
        while not (port_file.is_file() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.time() > deadline:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as resp:
            page = next(t for t in json.load(resp) if t["type"] == "page")
        self._conn = connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=timeout)
        self.ws = self._conn.__enter__()
        self.timeout = timeout
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        deadline = time.time() + self.timeout
        while True:
            msg = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.time())))
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, method: str) -> dict[str, Any]:
        deadline = time.time() + self.timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method:
                    return self.events.pop(i)
            self.events.append(json.loads(self.ws.recv(timeout=max(0.1, deadline - time.time()))))

    def open(self, path: Path) -> None:
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_for("Page.loadEventFired")

    def eval(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"script failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click at the element's centre (not a synthetic DOM event), scrolled into view first."""
        box = self.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}});"
                        " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and browser log errors seen so far."""
        out = []
        for ev in self.events:
            method, params = ev.get("method"), ev.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(str(params["exceptionDetails"].get("exception", {}).get("description")
                               or params["exceptionDetails"].get("text")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                out.append(params["entry"].get("text", ""))
        return out

    def screenshot(self, out: Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
            params["captureBeyondViewport"] = True
        out.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", **params)["data"]))
        return out

    def close(self) -> None:
        if getattr(self, "_conn", None) is not None:
            self._conn.__exit__(None, None, None)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

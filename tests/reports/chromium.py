"""Drive a real headless Chromium over the DevTools protocol (``--remote-debugging-pipe``).

The pipe mode talks JSON over file descriptors 3 and 4 of the browser, so no port is opened and no
websocket client is needed. ``load(url)`` returns what the browser saw: console errors, uncaught
exceptions and failed loads, a summary of every plotly figure container, and a full-page PNG.
Install on Debian: ``apt-get install -y chromium``.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
    "--host-resolver-rules=MAP * ~NOTFOUND",
]  # no name resolves: a page that needs the network fails

# per figure container: its size, how many plotly SVG layers and drawn marks it holds, and its traces
_FIGURES_JS = """
Array.from(document.querySelectorAll('.plotly-graph-div')).map(d => {
  const r = d.getBoundingClientRect();
  return {id: d.id, width: r.width, height: r.height,
          svgs: d.querySelectorAll('svg.main-svg').length,
          marks: d.querySelectorAll(
            'svg.main-svg path, svg.main-svg image, svg.main-svg text, svg.main-svg rect').length,
          traces: (d.data || []).length, rendered: !!d._fullLayout,
          title: ((d.layout || {}).title || {}).text || ''};
})
"""


def find() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class PageResult:
    errors: list[str] = field(default_factory=list)  # console.error, uncaught exceptions, failed loads
    warnings: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    screenshot: bytes = b""
    seconds: float = 0.0


class Chromium:
    """One headless browser process; use as a context manager."""

    def __init__(self, binary: str, timeout: float = 90.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="seqbench-chromium-")  # empty --user-data-dir
        self.log = tempfile.TemporaryFile()
        to_child_r, self._w = os.pipe()
        self._r, from_child_w = os.pipe()
        hi_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)  # above 3/4 so the dup2s below cannot clobber
        hi_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)

        def on_fds_3_and_4() -> None:  # the browser reads commands on fd 3 and answers on fd 4
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            close_fds=False,
            preexec_fn=on_fds_3_and_4,
        )
        for fd in (to_child_r, from_child_w, hi_r, hi_w):
            os.close(fd)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def stderr_tail(self, n: int = 2000) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-n:]

    # -- protocol ------------------------------------------------------------------------------
    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise TimeoutError(f"chromium did not answer in time; its log:\n{self.stderr_tail()}")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium exited; its log:\n{self.stderr_tail()}")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            m = self._message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, session: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for m in self.events[seen:]:
                if m.get("method") == method and m.get("sessionId") == session:
                    return m
            seen = len(self.events)
            self.events.append(self._message(deadline))

    def evaluate(self, expr: str, session: str) -> Any:
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True}, session)
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    # -- one page --------------------------------------------------------------------------------
    def load(self, url: str, width: int = 1280, height: int = 900, settle_s: float = 20.0) -> PageResult:
        """Open ``url``, wait for load and for every plotly figure to render, collect what went wrong."""
        t0 = time.monotonic()
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.send(m, session=s)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            s,
        )
        nav = self.send("Page.navigate", {"url": url}, s)
        if nav.get("errorText"):
            raise RuntimeError(f"navigation to {url} failed: {nav['errorText']}")
        self.wait_event("Page.loadEventFired", s, self.timeout)
        deadline = time.monotonic() + settle_s
        figures = self.evaluate(_FIGURES_JS, s)
        while time.monotonic() < deadline and not all(f["rendered"] and f["svgs"] for f in figures):
            time.sleep(0.2)
            figures = self.evaluate(_FIGURES_JS, s)
        metrics = self.send("Page.getLayoutMetrics", session=s)["cssContentSize"]
        shot = self.send(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": metrics["width"], "height": metrics["height"], "scale": 1},
            },
            s,
        )
        out = PageResult(figures=figures, screenshot=base64.b64decode(shot["data"]))
        for m in self.events:
            if m.get("sessionId") != s:
                continue
            p = m.get("params", {})
            if m["method"] == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
                if p.get("type") in ("error", "assert"):
                    out.errors.append(f"console.{p['type']}: {text}")
                elif p.get("type") == "warning":
                    out.warnings.append(text)
            elif m["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.errors.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
            elif m["method"] == "Log.entryAdded":
                e = p.get("entry", {})
                if e.get("level") == "error":
                    out.errors.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}".strip())
                elif e.get("level") == "warning":
                    out.warnings.append(e.get("text", ""))
        self.send("Target.closeTarget", {"targetId": target})
        out.seconds = time.monotonic() - t0
        return out


def file_url(path: Path) -> str:
    return Path(path).resolve().as_uri()

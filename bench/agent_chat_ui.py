"""agent-chat-ui (langchain-ai/agent-chat-ui, a Next.js app on the JS SDK's ``useStream``) built outside the
repository and measured from outside its code, on the deployment section 7 measures (``bench/deployed.py``).

The bench treats it as a third-party program it installs, like the browser: nothing of it is in this
repository. ``prepare`` exports its source at ``COMMIT`` into a cache folder (``~/.cache/hitl-bench``, or
``$XDG_CACHE_HOME``), from ``$HITL_BENCH_ACU_SOURCE`` (a clone or a bare git folder of the repository) or
else by cloning ``REPO`` (GitHub; not reachable on every machine), installs its npm dependencies with
its own lock file (pnpm, from the npm registry) and runs ``next build``. One change is made to its
source before the build, for an offline machine: its root layout's Google font (``next/font/google``
fetches fonts.googleapis.com at build time) is dropped, so the page uses the system font. A failure at
any step is returned as text (``Unavailable``), which the report prints instead of figures.

Measured in Chromium with the bench's clock (``performance.timeOrigin + performance.now()`` in the page,
``time.time()`` in the deployment's model trace; one machine): a MutationObserver stamps the first time
the last AI message's text (``div.group.mr-auto div.py-1``) reaches k words (per-token lag = that - the
model's emission of token k), the first time its interrupt view (the Agent Inbox panel, ``div.rounded-2xl
.bg-gray-50``) appears (interrupt -> its UI = that - the model's last chunk, the tool call), and after a
click on its Approve button the first new AI text (submit -> first resumed token). These are DOM times
seen from outside: they include its React renders, not anything inside its code.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import read_traces

REPO = "https://github.com/langchain-ai/agent-chat-ui"
COMMIT = "fdc87e65307581b02898d33c62b3f285e56bd85b"
"""The version measured (its main branch on 2026-12-05)."""
PNPM = "pnpm@10.5.1"
"""Its ``packageManager``, run through ``npx`` from the npm registry."""
ONE_HOUR = 3600


@dataclass(frozen=True)
class Unavailable:
    """Why agent-chat-ui could not be built or started here: ``step`` and the error's last lines."""

    step: str
    error: str


def cache_dir() -> Path:
    """Where its build is kept between bench runs."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "hitl-bench" / f"agent-chat-ui-{COMMIT[:7]}"


def _run(cmd: list[str], cwd: Path, step: str, timeout: float = ONE_HOUR, env: dict[str, str] | None = None) -> None:
    """Run ``cmd``; raises ``_Failed`` with its output's tail."""
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
    if done.returncode != 0:
        raise _Failed(Unavailable(step, (done.stdout + done.stderr)[-1500:].strip()))


class _Failed(Exception):
    def __init__(self, why: Unavailable) -> None:
        super().__init__(why.step)
        self.why = why


def _export(dest: Path) -> None:
    """Its source at ``COMMIT`` into ``dest`` (from ``$HITL_BENCH_ACU_SOURCE`` or a clone of ``REPO``)."""
    source = os.environ.get("HITL_BENCH_ACU_SOURCE", "")
    if not source:
        source = str(dest.parent / "agent-chat-ui.git")
        if not Path(source).exists():
            _run(["git", "clone", "--bare", "--quiet", REPO, source], dest.parent, "git clone " + REPO, timeout=600)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", f"--git-dir={_git_dir(Path(source))}", "archive", COMMIT], capture_output=True)
    if archive.returncode != 0:
        raise _Failed(Unavailable(f"git archive {COMMIT[:7]} from {source}", archive.stderr.decode(errors="replace")[-800:]))
    subprocess.run(["tar", "x", "-C", str(dest)], input=archive.stdout, check=True)


def _git_dir(source: Path) -> Path:
    return source / ".git" if (source / ".git").exists() else source


def _offline_font(dest: Path) -> None:
    """Drop the root layout's Google font (fetched at build time): the one change to its source."""
    layout = dest / "src" / "app" / "layout.tsx"
    text = layout.read_text().replace('import { Inter } from "next/font/google";\n', "")
    start = text.find("const inter = Inter(")
    end = text.find("});", start)
    if start < 0 or end < 0:
        return
    layout.write_text(text[:start] + 'const inter = { className: "" }; // hitl bench: no Google font (offline)' + text[end + 3 :])


def prepare() -> Path | Unavailable:
    """A built agent-chat-ui (its folder), built now unless the cache has it; ``Unavailable`` on a failure."""
    dest = cache_dir()
    if (dest / ".next" / "BUILD_ID").exists():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        _export(dest)
        _offline_font(dest)
        _run(["npx", "--yes", PNPM, "install", "--frozen-lockfile", "--reporter=silent"], dest, "pnpm install")
        _run(["./node_modules/.bin/next", "build"], dest, "next build", env={"NEXT_TELEMETRY_DISABLED": "1"})
    except _Failed as exc:
        return exc.why
    except (OSError, subprocess.SubprocessError) as exc:
        return Unavailable("build", f"{type(exc).__name__}: {exc}")
    return dest


class Served:
    """``next start`` of a built agent-chat-ui on 127.0.0.1:``port`` (``with`` stops it)."""

    def __init__(self, folder: Path, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "NEXT_TELEMETRY_DISABLED": "1"}
        self.proc = subprocess.Popen(
            ["./node_modules/.bin/next", "start", "-H", "127.0.0.1", "-p", str(port)], cwd=folder, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.close()
        raise RuntimeError(f"agent-chat-ui did not start on port {port}")

    def close(self) -> None:
        """Stop its process group."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


OBSERVER_JS = r"""
(() => {
  const now = () => performance.timeOrigin + performance.now();
  const B = (window.__acu = {words: [], uiAt: null, newAi: null, aiCount0: 0, clicks: {}});
  const ai = () => document.querySelectorAll("div.group.mr-auto div.py-1");
  const words = (el) => (el ? (el.textContent || "").split(/\s+/).filter(Boolean).length : 0);
  B.reset = () => { B.words = []; B.uiAt = null; B.newAi = null; B.aiCount0 = ai().length; };
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest && ev.target.closest("button");
    if (b) B.clicks[(b.textContent || "").trim()] = now();
  }, true);
  new MutationObserver(() => {
    const t = now(), all = ai(), last = all[all.length - 1];
    if (all.length > B.aiCount0 && last) {
      const n = words(last);
      while (B.words.length < n) B.words.push(t);
      if (B.newAi === null && n > 0) B.newAi = t;
    }
    if (B.uiAt === null && document.querySelector("div.rounded-2xl.bg-gray-50")) B.uiAt = t;
  }).observe(document, {subtree: true, childList: true, characterData: true});
})();
"""


class AcuBench:
    """Chromium on a served agent-chat-ui pointed at the deployment ``api_url`` (assistant ``agent``)."""

    def __init__(self, app_url: str, api_url: str, trace_dir: Path) -> None:
        from playwright.sync_api import sync_playwright

        from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS

        self.start_url = f"{app_url}/?apiUrl={api_url}&assistantId=agent"
        self.trace_dir = trace_dir
        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        self.errors: list[str] = []

    def close(self) -> None:
        """Close the browser."""
        self.browser.close()
        self._pw.stop()

    def _page(self) -> tuple[Any, Any]:
        context = self.browser.new_context(viewport={"width": 1280, "height": 900})
        context.add_init_script(OBSERVER_JS)
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        page.goto(self.start_url)
        page.wait_for_selector("textarea")
        return context, page

    @staticmethod
    def _send(page: Any, text: str) -> float:
        page.evaluate("() => window.__acu.reset()")
        page.fill("textarea", text)
        page.keyboard.press("Enter")
        return time.time() * 1000

    @staticmethod
    def _thread_id(page: Any) -> str:
        page.wait_for_url("**threadId=*")
        return str(page.url.split("threadId=", 1)[1].split("&", 1)[0])

    def stream_reply(self, n_words: int) -> dict[str, Any]:
        """``stream N words``: per-token lag (ms) = its DOM time - the model's emission of that token."""
        context, page = self._page()
        try:
            sent = self._send(page, f"stream {n_words} words")
            page.wait_for_function(f"() => window.__acu.words.length >= {n_words}", timeout=n_words * 200 + 60_000)
            words = page.evaluate("() => window.__acu.words")
            tid = self._thread_id(page)
        finally:
            context.close()
        traces = read_traces(self.trace_dir, tid)
        emitted = [t * 1000 for t in traces[-1]["t"]] if traces else []
        return {
            "thread_id": tid, "lags_ms": [w - e for w, e in zip(words, emitted, strict=False)],
            "send_to_complete_ms": words[n_words - 1] - sent, "tokens": len(words),
        }

    def review_flow(self) -> dict[str, Any]:
        """The email request: the model's tool call -> its interrupt view; Approve -> first resumed AI text (ms)."""
        context, page = self._page()
        try:
            self._send(page, "email alice@example.com about the report: it is ready")
            page.wait_for_function("() => window.__acu.uiAt !== null", timeout=60_000)
            tid = self._thread_id(page)
            ui_at = page.evaluate("() => window.__acu.uiAt")
            page.wait_for_timeout(300)
            page.evaluate("() => window.__acu.reset()")
            page.get_by_role("button", name="Approve", exact=True).first.click()
            page.wait_for_function("() => window.__acu.newAi !== null", timeout=60_000)
            b = page.evaluate("() => ({newAi: window.__acu.newAi, clicks: window.__acu.clicks})")
        finally:
            context.close()
        traces = read_traces(self.trace_dir, tid)
        tool_call_at = traces[0]["t_end"] * 1000 if traces else None
        return {
            "thread_id": tid,
            "interrupt_to_ui_ms": (ui_at - tool_call_at) if tool_call_at else None,
            "submit_to_first_resumed_token_ms": b["newAi"] - b["clicks"]["Approve"],
        }

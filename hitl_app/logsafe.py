"""Keep secrets and client-controlled text from spoiling the server log.

* ``safe_url``: a connection URL with its password hidden (user-info and ``?password=`` alike);
* ``one_log_line``: any text as one short line (newlines and control characters escaped), so a
  client cannot forge log lines or fill the disk;
* ``ReportLimiter`` / ``log_frontend_report``: the handler for error reports sent by browsers;
* ``quiet_noisy_loggers``: HTTP client loggers at WARNING (their INFO lines print full request
  URLs, credentials included);
* ``configure_logging`` / ``OneLineRecords``: the server's log set-up, every record one line.

Pure standard library; no app or Reflex imports.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from urllib.parse import urlsplit, urlunsplit

SECRET_QUERY_KEYS = frozenset({"password", "pass", "passwd", "pwd", "secret", "token", "api_key", "apikey", "access_token"})
"""Query parameter names (case-insensitive) whose values ``safe_url`` hides."""

_USERINFO_SECRET = re.compile(r"(?<=:)[^:@/\s]+(?=@)")
"""A password between ``:`` and ``@`` in text that ``urlsplit`` does not take for a URL."""

NOISY_LOGGERS = ("httpx", "httpcore", "openai", "anthropic", "urllib3")
"""Loggers that print request URLs (and so any ``user:pass@``) at INFO/DEBUG."""

MAX_REPORT_BYTES = 2048
"""The most of one browser error report that reaches the log (UTF-8 bytes, before the suffix)."""


def safe_url(url: str) -> str:
    """``url`` with the password of its user-info and of secret query parameters replaced by
    ``***``, e.g. ``postgresql://hitl:***@db/hitl?password=***``; other URLs are returned as is."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    netloc = parts.netloc
    if "@" in netloc:
        cred, host = netloc.rsplit("@", 1)
        if ":" in cred:
            netloc = f"{cred.split(':', 1)[0]}:***@{host}"
    query = parts.query
    if query:
        pairs = []
        for pair in query.split("&"):
            key, sep, _ = pair.partition("=")
            pairs.append(f"{key}=***" if sep and key.lower() in SECRET_QUERY_KEYS else pair)
        query = "&".join(pairs)
    if netloc == parts.netloc and query == parts.query:
        # Not a URL this parser splits (no scheme, say): still hide anything shaped ":secret@".
        return _USERINFO_SECRET.sub("***", url)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def one_log_line(text: str, *, limit: int = MAX_REPORT_BYTES) -> str:
    r"""``text`` as one line of at most ``limit`` UTF-8 bytes plus a ``[truncated N chars]`` note.

    Backslash, CR, LF, tab and every other control character (C0, DEL, C1, line/paragraph
    separators) are written as escapes (``\n``, ``\x1b``, ``\u2028``), so the result never
    starts a new log line nor carries terminal escape sequences.
    """
    head = text[: limit + 1]
    out: list[str] = []
    size = 0
    for ch in head:
        code = ord(ch)
        if ch == "\\":
            piece = "\\\\"
        elif ch in "\n\r\t":
            piece = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch]
        elif code < 0x20 or 0x7F <= code < 0xA0:
            piece = f"\\x{code:02x}"
        elif code in (0x2028, 0x2029, 0x85):
            piece = f"\\u{code:04x}"
        else:
            piece = ch
        size += len(piece.encode("utf-8"))
        if size > limit:
            break
        out.append(piece)
    line = "".join(out)
    dropped = len(text) - len(out)
    return f"{line} [truncated {dropped:,} chars]" if dropped > 0 else line


class ReportLimiter:
    """At most ``burst`` reports per ``window`` seconds for the whole process (thread-safe).

    ``allow()`` returns ``(allowed, suppressed)``: ``suppressed`` is how many reports were dropped
    since the last allowed one (so the log can say so once).
    """

    def __init__(self, burst: int = 20, window: float = 60.0, clock=time.monotonic):
        self.burst, self.window, self.clock = burst, window, clock
        self._start = clock()
        self._count = 0
        self._dropped = 0
        self._lock = threading.Lock()

    def allow(self) -> tuple[bool, int]:
        """Count one report; see the class docstring."""
        with self._lock:
            now = self.clock()
            if now - self._start >= self.window:
                self._start, self._count = now, 0
            if self._count >= self.burst:
                self._dropped += 1
                return False, self._dropped
            self._count += 1
            dropped, self._dropped = self._dropped, 0
            return True, dropped


FRONTEND_LOG = logging.getLogger("hitl_app.frontend")
_limiter = ReportLimiter()


def log_frontend_report(text: str, *, limiter: ReportLimiter | None = None) -> bool:
    """Log one browser error report as one escaped, truncated WARNING line, if the rate limit
    allows; returns whether it was logged."""
    allowed, dropped = (limiter or _limiter).allow()
    if not allowed:
        return False
    note = f" ({dropped} earlier reports suppressed)" if dropped else ""
    FRONTEND_LOG.warning("browser error report%s: %s", note, one_log_line(text))
    return True


def quiet_noisy_loggers() -> None:
    """Set ``NOISY_LOGGERS`` to WARNING (unless configured higher already)."""
    for name in NOISY_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


MAX_LOG_LINE_BYTES = 8192
"""The most of one record's message that reaches the log (UTF-8 bytes, before the suffix)."""


_BREAKS_A_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""A character that could start a log line of its own or drive a terminal (what ``one_log_line`` escapes, but the backslash)."""


class OneLineRecords(logging.Filter):
    """A handler filter that writes every record's message that has a line break or control
    character, or is over ``MAX_LOG_LINE_BYTES``, as ``one_log_line`` (escaped and cut), whoever
    logged it and whatever text its arguments carry; a message already on one line (text its
    caller escaped with ``one_log_line`` included) is left as it is, so it is never escaped twice.
    A traceback (``exc_info``) is left as it is: the formatter appends
    it after the message, from the server's own frames."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite ``record.msg``/``args`` when the message needs escaping; always keeps the record."""
        if getattr(record, "one_line", False):  # another handler's filter did it already
            return True
        message = record.getMessage()
        if not _BREAKS_A_LINE.search(message) and len(message.encode("utf-8")) <= MAX_LOG_LINE_BYTES:
            record.one_line = True  # already one line (text a caller escaped itself stays as it is)
            return True
        escaped = one_log_line(message, limit=MAX_LOG_LINE_BYTES)
        if escaped != message:
            record.msg, record.args = escaped, ()
        record.one_line = True
        return True


def configure_logging() -> None:
    """The server's logging: INFO lines in ``LOG_FORMAT`` on stderr, ``NOISY_LOGGERS`` quieted,
    and ``OneLineRecords`` on every handler of the root logger (so no text a client or a provider
    sends can start a log line of its own)."""
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    quiet_noisy_loggers()
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, OneLineRecords) for f in handler.filters):
            handler.addFilter(OneLineRecords())

"""The files sandbox: which relative paths the file tools accept, and how much one owner may store.

``resolve_in_sandbox`` maps a path the model gave to a location inside the sandbox or raises
``SandboxError`` with a plain reason. ``check_quota`` refuses a write that would take an owner's
sandbox over its file-count or byte limit.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path, PurePosixPath

MAX_PATH_BYTES = 1024
MAX_NAME_BYTES = 255

_FORBIDDEN_CHARS = re.compile("[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
"""Control characters, zero-width characters and bidirectional overrides: they make a path look
different from what it is (a name that displays as ``invoice.pdf`` but is not)."""


class SandboxError(ValueError):
    """A path the files tools refuse, or a write over the owner's quota."""


def _check_text(path: str) -> str:
    """Return ``path`` NFC-normalised, or raise SandboxError for empty/invisible/over-long text."""
    if not isinstance(path, str) or not path.strip():
        raise SandboxError("The path is empty.")
    if "\x00" in path:
        raise SandboxError("The path contains a NUL byte.")
    if (bad := _FORBIDDEN_CHARS.search(path)) is not None:
        raise SandboxError(
            f"The path contains an invisible or control character (U+{ord(bad.group()):04X}); "
            "use plain visible characters."
        )
    path = unicodedata.normalize("NFC", path)
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise SandboxError(f"The path is longer than {MAX_PATH_BYTES} bytes.")
    if "\\" in path:
        raise SandboxError("Backslashes are not allowed in paths; use '/'.")
    return path


def resolve_in_sandbox(root: Path, path: str) -> Path:
    """Map a relative ``path`` to a location inside ``root``, refusing anything unsafe.

    Args:
        root: the sandbox folder (need not exist yet).
        path: a relative POSIX-style path, e.g. ``"notes/x.txt"``; NFC-normalised before use.

    Returns:
        ``root / path`` (absolute; ``root`` resolved). The target itself may not exist.

    Raises:
        SandboxError: empty path, NUL byte, a control character (U+0000-U+001F, U+007F), a
            zero-width or bidirectional-control character (U+200B-U+200F, U+202A-U+202E,
            U+2066-U+2069), absolute path, ``..`` component, backslash, a name over 255 bytes, a
            path over 1024 bytes, or a symlink anywhere along the path (the target included).
    """
    path = _check_text(path)
    pure = PurePosixPath(path)
    if pure.is_absolute() or re.match(r"^[A-Za-z]:", path):
        raise SandboxError(f"Absolute paths are not allowed: {path!r}. Use a path inside the workspace.")
    parts = [p for p in pure.parts if p != "."]
    if ".." in parts:
        raise SandboxError(f"'..' is not allowed in paths: {path!r}.")
    if not parts:
        raise SandboxError(f"The path {path!r} names the workspace itself, not a file.")
    for part in parts:
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise SandboxError(f"A name in the path is longer than {MAX_NAME_BYTES} bytes.")
    base = Path(root).resolve()
    current = base
    for part in parts:
        current = current / part
        if current.is_symlink():
            raise SandboxError(f"Symlinks are not allowed in paths: {path!r}.")
    if not current.resolve().is_relative_to(base):  # belt and braces
        raise SandboxError(f"The path {path!r} leaves the workspace.")
    return current


def usage(root: Path, *, stop_after: int) -> tuple[int, int]:
    """``(files, bytes)`` of the regular files under ``root`` (links not followed).

    Counting stops once ``stop_after`` files were seen (the quota is already exceeded by then),
    so the cost of one call is bounded.
    """
    count = total = 0
    stack = [Path(root)]
    while stack and count < stop_after:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                try:
                    size = entry.stat(follow_symlinks=False).st_size
                except FileNotFoundError:  # another write's temp file, renamed or removed meanwhile
                    continue
                count += 1
                total += size
    return count, total


def check_quota(root: Path, target: Path, new_size: int, *, max_files: int, max_bytes: int) -> None:
    """Refuse writing ``new_size`` bytes to ``target`` if the sandbox would exceed its quota.

    Args:
        root: the owner's sandbox folder.
        target: the file about to be written (replacing it frees its current size).
        new_size: bytes of the new content.
        max_files: most regular files the sandbox may hold.
        max_bytes: most bytes all its files may hold together.

    Raises:
        SandboxError: the write would go over either limit (the message names the limit).
    """
    count, total = usage(root, stop_after=max_files + 1)
    old = target.stat().st_size if target.is_file() else None
    if old is None and count + 1 > max_files:
        raise SandboxError(f"The workspace already holds {max_files} files, the most allowed. Delete some first.")
    if total - (old or 0) + new_size > max_bytes:
        raise SandboxError(
            f"Writing {new_size} bytes would take the workspace over its {max_bytes}-byte limit."
        )

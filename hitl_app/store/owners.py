"""Where one owner's demo workspace lives: the files sandbox and the demo records database.

An owner is the string a thread belongs to (a browser id; ``""`` or ``None`` when unknown). Each
owner gets its own folder and its own SQLite file, so one browser can neither read nor change what
another browser's tools did. The folder name is a hash of the owner, never the owner itself, so a
directory listing does not reveal browser ids.

Layout (``files_root`` and ``demo_db_path`` come from the settings)::

    <files_root>/<key>/...               the owner's files sandbox
    <demo_db_path without suffix>/<key>.sqlite   the owner's demo ``records`` database

with ``key = owner_key(owner)``: ``"anonymous"`` for ``""``/``None``, else ``"o-"`` + 24 hex
characters of SHA-256.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

ANONYMOUS = "anonymous"
"""The key of the shared space used when the owner is unknown (``""``)."""


def owner_key(owner: str | None) -> str:
    """A short, filesystem-safe key for ``owner`` (``"anonymous"`` for ``""`` / ``None``)."""
    if not owner:
        return ANONYMOUS
    return "o-" + hashlib.sha256(owner.encode("utf-8", "surrogatepass")).hexdigest()[:24]


@dataclass(frozen=True)
class OwnerSpace:
    """One owner's places.

    Attributes:
        key: ``owner_key(owner)``, also stored in the ``owner`` column of the outbox and tool effects.
        files_dir: root of the owner's files sandbox (may not exist yet).
        demo_db: the owner's demo ``records`` SQLite file (may not exist yet).
    """

    key: str
    files_dir: Path
    demo_db: Path


def owner_space(*, files_root: Path, demo_db_path: Path, owner: str | None) -> OwnerSpace:
    """The paths of ``owner``'s workspace (nothing is created)."""
    key = owner_key(owner)
    demo_root = Path(demo_db_path).with_suffix("")
    return OwnerSpace(key=key, files_dir=Path(files_root) / key, demo_db=demo_root / f"{key}.sqlite")

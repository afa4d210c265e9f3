"""The repository's root folder, for tests wherever they sit under tests/."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository root (the folder holding ``hitl_app/`` and ``tests/``)."""

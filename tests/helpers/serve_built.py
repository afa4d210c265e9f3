"""``reflex run`` on a front end that is already built: the same prod server, without the compile and build.

Run as a script from an app folder whose ``.web`` holds a finished prod build for this port
(``AppServer`` copies one it built earlier and points it at the new port)::

    python tests/helpers/serve_built.py run --env prod --frontend-port P --backend-port P

Everything else is Reflex's own ``reflex run --env prod``: the config, the port checks, gunicorn and
uvicorn workers, and the compiled pages mounted on the back end's port. Only the two steps that turn
the Python pages into ``.web/build`` (compile, then bun + vite) are skipped.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main() -> int:
    """Patch out the compile and build steps, then hand the command line to Reflex's CLI."""
    import reflex.reflex as reflex_cli
    from reflex.utils import build

    if not (Path.cwd() / ".web" / "build" / "client").is_dir():
        print("serve_built: no .web/build/client here; build it first", file=sys.stderr)
        return 2
    reflex_cli._compile_app = lambda **_: None  # type: ignore[assignment]
    build.setup_frontend_prod = lambda *_: None  # type: ignore[assignment]
    reflex_cli.cli(args=sys.argv[1:], prog_name="reflex")
    return 0


if __name__ == "__main__":
    sys.exit(main())

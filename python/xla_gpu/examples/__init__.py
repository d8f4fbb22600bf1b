"""IR examples shipped with the package: the spec's (seed 000) emitter
output and a small GPU kernel. `path(name)` gives the file of an example."""

from pathlib import Path

_DIR = Path(__file__).resolve().parent


def path(name: str) -> Path:
    """The file of example `name` (e.g. "seed_gelu.mlir")."""
    p = _DIR / name
    if not p.exists():
        raise FileNotFoundError(f"no example named {name!r} in {_DIR}")
    return p

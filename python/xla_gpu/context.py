"""The MLIR context the project's code creates: `new_context()`.

`ir.Context()` loads every dialect the bindings register (some fifty)
into each new context. That costs 3-7 ms a context, and it makes every
`canonicalize` slower, since the canonicalizer gathers the patterns of
every loaded op when a pipeline starts: over the benchmarks' kernels the
CPU pipeline took 0.43 s in such contexts, 0.28 s with the dialects below.

`new_context()` loads only what the emitters build with the bindings'
builders (those need their dialect loaded), with the dialects those
depend on; the parser loads any other registered dialect it meets, and a
pass the dialects it declares.
"""

from __future__ import annotations

from mlir import ir

__all__ = ["BUILDER_DIALECTS", "new_context"]

# The dialects of the ops our emitters create (mlir.dialects.* builders,
# and the xla_gpu dialect's).
BUILDER_DIALECTS = ("builtin", "func", "arith", "math", "complex", "scf", "tensor", "vector",
                    "gpu", "xla_gpu")


def new_context() -> ir.Context:
    """A context with BUILDER_DIALECTS loaded (and the xla_gpu dialect
    registered, as in every context once `xla_gpu` is imported)."""
    return ir.Context(load_on_create_dialects=list(BUILDER_DIALECTS))

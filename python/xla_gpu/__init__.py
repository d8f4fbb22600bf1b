"""xla_gpu: the XLA:GPU fusion emitters on the upstream MLIR Python bindings.

Importing the package makes the `xla_gpu` dialect available in every
`mlir.ir.Context` created afterwards and registers the project's passes
with the pass registry, so `PassManager.parse("builtin.module(xla-...)")`
finds them.
"""

from mlir import ir  # noqa: F401  (the bindings must be loaded first)

from . import _capi
from .indexing_map import IndexingMap, IndexingMapError, Var, compose_indexing_maps

_capi.register_everything()

__all__ = ["IndexingMap", "IndexingMapError", "Var", "compose_indexing_maps"]

"""xla_gpu: the XLA:GPU fusion emitters on the upstream MLIR Python bindings.

Importing the package makes the `xla_gpu` dialect available in every
`mlir.ir.Context` created afterwards and registers the project's passes
with the pass registry, so `PassManager.parse("builtin.module(xla-...)")`
finds them.
"""

from mlir import ir  # noqa: F401  (the bindings must be loaded first)
from mlir._mlir_libs import _mlir as _native

from . import _capi
from .indexing_map import IndexingMap, IndexingMapError, Var, compose_indexing_maps

_capi.register_everything()

# Where the bindings look for a dialect's Python module when they meet one
# of its attributes or ops: `mlir.dialects.<name>`, then here. Without it
# each `#xla_gpu.indexing_map` read off an op tried (and failed) to import
# mlir.dialects.xla_gpu again (a failed import is not remembered): 4-5
# failed imports a small fusion's emission; found, the module is loaded
# once.
if "xla_gpu.dialects" not in _native.globals.dialect_search_modules:
    _native.globals.append_dialect_search_prefix("xla_gpu.dialects")

__all__ = ["IndexingMap", "IndexingMapError", "Var", "compose_indexing_maps"]

"""Shim for the mlir-tblgen generated module, which imports `._ods_common`
from its own package: re-export the upstream one (and its `_cext`), so that
the generated classes register with the one `mlir` package in the process."""

from mlir.dialects._ods_common import *  # noqa: F401,F403
from mlir.dialects._ods_common import _cext  # noqa: F401

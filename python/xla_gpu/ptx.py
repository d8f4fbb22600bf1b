"""GPU modules to PTX with the NVPTX backend inside the MLIR wheel, and a
ptxas check of the result.

This is the upstream tail of the GPU path (NVVM -> PTX), the one PTX path:
the emitters' lowering pipeline (pipelines.compile_to_ptx) feeds it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import gpu
from mlir.passmanager import PassManager

from . import _capi

__all__ = ["PtxError", "find_ptxas", "gpu_module_to_ptx", "ptxas_check"]

# Where CUDA puts ptxas when it is not on PATH.
_PTXAS_FALLBACKS = ("/usr/local/cuda/bin/ptxas", "/usr/local/cuda-13.0/bin/ptxas")


class PtxError(RuntimeError):
    """Lowering to PTX failed, or ptxas rejected the PTX."""


def _pipeline(chip: str, opt_level: int, libdevice: str | None) -> str:
    link = f" l={libdevice}" if libdevice else ""
    return (f"builtin.module(nvvm-attach-target{{chip={chip} O={opt_level}{link}}},"
            "gpu.module(convert-gpu-to-nvvm,canonicalize,cse,reconcile-unrealized-casts),"
            "gpu-module-to-binary{format=isa})")


def gpu_module_to_ptx(module: ir.Module, chip: str = "sm_90",
                      opt_level: int = 3, libdevice: str | None = None) -> dict[str, str]:
    """Lowers every gpu.module of `module` (in place) to PTX for `chip`,
    linking `libdevice` (libdevice.10.bc) when given.

    Returns {gpu.module name: PTX text}. Raises PtxError with the MLIR
    diagnostics when a pass fails."""
    if not chip.startswith("sm_"):
        raise ValueError(f"chip must look like 'sm_90', got {chip!r}")
    pipeline = PassManager.parse(_pipeline(chip, opt_level, libdevice), module.context)
    # LLVM's code generation flags are the process's: the host JIT's
    # (host_code.py) wait while the NVPTX backend runs with LLVM's defaults.
    _capi.lib.xlaGpuBeginDeviceCodegen()
    try:
        pipeline.run(module.operation)
    except ir.MLIRError as e:
        raise PtxError(f"lowering to PTX for {chip} failed: {e}") from None
    finally:
        _capi.lib.xlaGpuEndDeviceCodegen()
    ptx = binary_objects(module)
    if not ptx:
        raise PtxError("the module holds no gpu.module to lower")
    return ptx


def binary_objects(module: ir.Module) -> dict[str, str]:
    """{gpu.binary name: its (text) object} after gpu-module-to-binary."""
    out = {}
    for op in module.body.operations:
        if isinstance(op.opview, gpu.BinaryOp):
            name = ir.StringAttr(op.attributes["sym_name"]).value
            for obj in op.attributes["objects"]:
                out[name] = gpu.ObjectAttr(obj).object.decode()
    return out


def find_ptxas() -> str | None:
    """The ptxas binary, or None where CUDA is not installed."""
    found = shutil.which("ptxas")
    if found:
        return found
    return next((p for p in _PTXAS_FALLBACKS if os.access(p, os.X_OK)), None)


@dataclass(frozen=True)
class PtxasResult:
    arch: str
    ok: bool
    log: str


def ptxas_check(ptx: str, arch: str, ptxas: str | None = None) -> PtxasResult:
    """Assembles `ptx` with `ptxas -arch=<arch>`; `ok` tells whether it was
    accepted, `log` holds what ptxas said."""
    ptxas = ptxas or find_ptxas()
    if ptxas is None:
        raise PtxError("ptxas not found (CUDA is not installed here)")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "kernel.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        proc = subprocess.run(
            [ptxas, f"-arch={arch}", "-o", os.path.join(tmp, "kernel.cubin"), src],
            capture_output=True, text=True)
    return PtxasResult(arch, proc.returncode == 0, (proc.stdout + proc.stderr).strip())

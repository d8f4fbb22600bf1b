"""NVVM -> PTX through the NVPTX backend of the MLIR wheel, checked by ptxas."""

import pytest
from mlir import ir

from xla_gpu import examples, ptx

requires_ptxas = pytest.mark.skipif(
    ptx.find_ptxas() is None, reason="ptxas (CUDA) is not installed on this machine")


@pytest.mark.parametrize("chip", ["sm_80", "sm_90"])
def test_small_kernel_to_ptx(ctx, chip):
    module = ir.Module.parse(examples.path("small_kernel.mlir").read_text())
    code = ptx.gpu_module_to_ptx(module, chip)["kernels"]
    assert f".target {chip}" in code
    assert ".visible .entry square_plus_one(" in code
    # The kernel reads the thread and block ids and computes x * x + 1.
    assert "%tid.x" in code and "%ctaid.x" in code
    assert "mul.rn.f32" in code and "0f3F800000" in code  # 1.0f


@requires_ptxas
@pytest.mark.parametrize("chip", ["sm_80", "sm_90"])
def test_ptxas_accepts_the_ptx(ctx, chip):
    module = ir.Module.parse(examples.path("small_kernel.mlir").read_text())
    code = ptx.gpu_module_to_ptx(module, chip)["kernels"]
    result = ptx.ptxas_check(code, chip)
    assert result.ok, result.log


@requires_ptxas
def test_ptxas_rejects_broken_ptx(ctx):
    """The check can fail: PTX for sm_90 is not valid for sm_80."""
    module = ir.Module.parse(examples.path("small_kernel.mlir").read_text())
    code = ptx.gpu_module_to_ptx(module, "sm_90")["kernels"]
    result = ptx.ptxas_check(code.replace("ld.global.b32", "ld.global.bogus"), "sm_90")
    assert not result.ok
    assert "bogus" in result.log or "error" in result.log.lower()


def test_no_gpu_module_is_an_error(ctx):
    module = ir.Module.parse("func.func @f() { return }")
    with pytest.raises(ptx.PtxError, match="no gpu.module"):
        ptx.gpu_module_to_ptx(module)


def test_unlowerable_kernel_names_the_op(ctx):
    """An xla_gpu op left in a kernel cannot be lowered by the upstream tail:
    the error carries the diagnostic naming it."""
    module = ir.Module.parse("""
      module attributes {gpu.container_module} {
        gpu.module @k {
          gpu.func @f() kernel {
            %0 = xla_gpu.allocate_shared : tensor<4xf32>
            gpu.return
          }
        }
      }""")
    with pytest.raises(ptx.PtxError, match="xla_gpu.allocate_shared"):
        ptx.gpu_module_to_ptx(module)


def test_chip_is_validated(ctx):
    with pytest.raises(ValueError, match="sm_90"):
        ptx.gpu_module_to_ptx(ir.Module.parse("module {}"), "volta")

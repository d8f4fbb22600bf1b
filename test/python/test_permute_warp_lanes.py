"""-xla-gpu-permute-warp-lanes on the CPU target: a row reduction's
vectors dealt out across a warp's lanes give the same bits (the combiners
it takes are exact in any order), and it leaves the others alone."""

import dataclasses

import numpy as np
import pytest

from xla_gpu import pipelines
from xla_gpu.context import new_context
from xla_gpu.emitters import DEFAULT_DEVICE, emit_kernel
from xla_gpu.hlo import parse_hlo
from xla_gpu.runtime.cpu import CPU_DEFAULT_OPTIONS, CpuKernel


def _row_reduction(ty: str, op: str, rows: int, cols: int) -> str:
    return (f"HloModule m\n\nred {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n"
            f"  ROOT r = {ty}[] {op}(a, b)\n}}\n\nfused {{\n  p = {ty}[{rows},{cols}] parameter(0)\n"
            f"  z = {ty}[] constant(0)\n  ROOT r = {ty}[{rows}] reduce(p, z), dimensions={{1}}, "
            f"to_apply=red\n}}\n\nENTRY e {{\n  p0 = {ty}[{rows},{cols}] parameter(0)\n"
            f"  ROOT f = {ty}[{rows}] fusion(p0), kind=kInput, calls=fused\n}}\n")


def _kernel_text(hlo: str) -> tuple[str, str]:
    with new_context():
        kernel = emit_kernel(parse_hlo(hlo).entry.root, DEFAULT_DEVICE)
        return kernel.text, kernel.entry


def _permuted(text: str) -> bool:
    """Whether the pass changes the kernel (after the stage's first passes)."""
    with pipelines.compile_context():
        module = pipelines.parse_module(text)
        pipelines.run_pipeline(module, stages=[])  # verified
        before = str(module)
        from mlir.passmanager import PassManager
        PassManager.parse("builtin.module(xla-gpu-permute-warp-lanes)").run(module.operation)
        return str(module) != before


def _inputs(ty: str, shape) -> np.ndarray:
    r = np.random.default_rng(72)
    if ty in ("f16", "f32"):
        x = r.standard_normal(shape).astype(np.float16 if ty == "f16" else np.float32)
        flat = x.reshape(-1)
        # NaNs of both signs and payloads, zeros of both signs, infinities.
        bits = flat.view(np.uint16 if ty == "f16" else np.uint32)
        nan = [0x7E00, 0xFE01, 0x7C01] if ty == "f16" else [0x7FC00000, 0xFF800001, 0x7F800001]
        for k, b in zip(r.choice(flat.size, 3, replace=False), nan):
            bits[k] = b
        flat[r.choice(flat.size, 40, replace=False)] = 0.0
        flat[r.choice(flat.size, 40, replace=False)] = -0.0
        flat[r.choice(flat.size, 5, replace=False)] = np.inf
        flat[r.choice(flat.size, 5, replace=False)] = -np.inf
        return x
    return r.integers(-1000, 1000, shape).astype(np.int32)


@pytest.mark.parametrize("ty, op", [("f16", "maximum"), ("f16", "minimum"), ("f32", "maximum"),
                                    ("s32", "maximum"), ("s32", "add"), ("s32", "and")])
def test_dealt_out_lanes_give_the_same_bits(ty, op):
    # Rows of 2048: XLA's vector of 4 (f16) or 2 (f32, s32) a thread.
    text, entry = _kernel_text(_row_reduction(ty, op, 64, 2048))
    assert _permuted(text)
    x = _inputs(ty, (64, 2048))
    dealt = CpuKernel(text, entry=entry)
    kept = CpuKernel(text, opts=dataclasses.replace(CPU_DEFAULT_OPTIONS, permute_warp_lanes=False),
                     entry=entry)
    a, b = np.empty(64, x.dtype), np.empty(64, x.dtype)
    dealt(x, a)
    kept(x, b)
    assert a.tobytes() == b.tobytes()


def test_a_sum_of_floats_is_left_alone():
    text, _ = _kernel_text(_row_reduction("f32", "add", 64, 2048))
    assert not _permuted(text)

"""The CPU target's f32 exp (a polynomial in IR, which LLVM vectorizes, not
a libm call) against the exact value: within 1 ulp over a sweep of 2^20
points from -110 to 90 (overflow, normal, subnormal and flushed results),
and the special values as expf gives them."""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir

from xla_gpu.emitters import emit_kernel, find_fusion
from xla_gpu.hlo import parse_hlo
from xla_gpu.runtime import CpuKernel

N = 1 << 20


@pytest.fixture(scope="module")
def exp_kernel():
    text = f"fusion {{\n  p = f32[{N}] parameter(0)\n  ROOT e = f32[{N}] exponential(p)\n}}\n"
    with ir.Context():
        kernel = CpuKernel(emit_kernel(find_fusion(parse_hlo(text))))
    assert "expf" not in kernel.llvm_ir and "llvm.intr.exp" not in kernel.llvm_ir
    return kernel


def _run(kernel, x: np.ndarray) -> np.ndarray:
    padded = np.zeros(N, np.float32)
    padded[:x.size] = x
    out = np.zeros(N, np.float32)
    kernel(padded, out)
    return out[:x.size]


def test_exp_is_within_one_ulp(exp_kernel):
    x = np.linspace(-110, 90, N).astype(np.float32)
    got = _run(exp_kernel, x).astype(np.float64)
    exact = np.exp(x.astype(np.float64))
    with np.errstate(over="ignore"):
        rounded = exact.astype(np.float32)
    finite = np.isfinite(rounded)
    ulp = np.spacing(rounded[finite]).astype(np.float64)
    assert np.max(np.abs(got[finite] - exact[finite]) / ulp) < 1.0
    # Past ln(FLT_MAX): inf, as the rounding gives.
    assert np.all(np.isinf(got[~finite]))


def test_exp_special_values(exp_kernel):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, 88.72283, 88.7229, -103.97,
                  -104.0, -200.0, 1.0], np.float32)
    got = _run(exp_kernel, x)
    assert np.isnan(got[0])
    np.testing.assert_array_equal(
        got[1:], np.array([np.inf, 0.0, 1.0, 1.0, 1.0, 3.4027985e38, np.inf, 1.4e-45, 0.0, 0.0,
                           np.float32(np.e)], np.float32))

"""The CPU target's f32 exp and log (polynomials in IR, which LLVM
vectorizes, not libm calls) against the exact values: within 1 ulp over
sweeps of 2^20 points (exp: -110 to 90, overflow, normal, subnormal and
flushed results; log: every binade of positive floats, subnormals too),
and the special values as expf and logf give them. The host's f32 expm1
and log1p (the same polynomials, reduced so that nothing cancels near 0):
within 1.5 ulp (measured 1.44 each; XLA:CPU's own are 5.3 and 1.5) over
sweeps of 2^20 points -- expm1 from -20 to past overflow and around 0,
log1p over every binade of positive floats, tiny negatives and (-1, 1) --
and their special values. The host's f32 sin, cos and tan (f64
arithmetic; the argument reduced by Cody-Waite below 2^24 in magnitude,
exactly from there on): within 0.51 ulp (measured 0.502; every float in
[2^-12, 2^24) of both signs, checked once: 0.5019, 0.5019, 0.5025;
XLA:CPU's are within 0.56) over [-10, 10], every binade of both signs up
to FLT_MAX and huge lanes among small ones, and their special values. The host's
f32 pow (f64 arithmetic too): within 0.51 ulp (measured 0.500) over
random x and y, x near 1 with large y, negative x with integer y and
every binade of x, and C99's special cases on a grid of special pairs;
atan2 the same way (measured 0.500). f32 cbrt: correctly rounded over
every binade of both signs and [-10, 10], and its special values.
The host's f32 and f64 remainder (C's fmod, in f64 arithmetic): C's bits
over operands of every magnitude against each other, near multiples of
the divisor and special values, its loop vectorized.
The host's f32 tanh is XLA:CPU's bit for bit (Eigen's ratio with FMA,
clamped where it is 1). The host's f32 erf is
XLA:CPU's own rational form: its bits are XLA:CPU's on every normal float
(2^20 points over all binades; XLA:CPU flushes subnormal inputs to zero,
the host does not), within 6 ulp of the exact values (measured 5.4 near
|x| = 3.77, 3.4 below |x| = 1).

And XLA:GPU's f32 tanh and erf (-xla-gpu-expand-float-ops' rational
approximations), run on the host: within 5 ulp of the exact values over
sweeps of 2^16 points (measured: tanh 4.1, erf 4.7 near the clamp, 3 below
|x| = 1), and the special values (saturation, tiny arguments, signed zeros,
NaN) as XLA:GPU gives them."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from mlir import ir
from mlir.passmanager import PassManager

from xla_gpu import pipelines
from xla_gpu.emitters import emit_kernel, find_fusion
from xla_gpu.hlo import parse_hlo
from xla_gpu.runtime import CpuKernel

N = 1 << 20


def _kernel(opcode: str, call: str, operands: int = 1,
            opts: pipelines.PipelineOptions | None = None) -> CpuKernel:
    """The loop kernel of `opcode` on f32[N] operands, checked to call
    neither libm's `call`f nor LLVM's intrinsic of it."""
    params = "".join(f"  p{i} = f32[{N}] parameter({i})\n" for i in range(operands))
    args = ", ".join(f"p{i}" for i in range(operands))
    text = f"fusion {{\n{params}  ROOT e = f32[{N}] {opcode}({args})\n}}\n"
    with ir.Context():
        kernel = CpuKernel(emit_kernel(find_fusion(parse_hlo(text))), opts)
    assert f"{call}f" not in kernel.llvm_ir and f"llvm.intr.{call}" not in kernel.llvm_ir
    return kernel


def _exp_kernel(ldexp: bool) -> CpuKernel:
    """exp with its scaling by 2^n as llvm.ldexp (the hosts with AVX-512)
    or as two exponent-field multiplies (the others)."""
    import dataclasses
    from xla_gpu.runtime import CPU_DEFAULT_OPTIONS
    kernel = _kernel("exponential", "exp",
                     opts=dataclasses.replace(CPU_DEFAULT_OPTIONS, ldexp_scaling=ldexp))
    assert ("llvm.intr.ldexp" in kernel.llvm_ir) == ldexp
    return kernel


@pytest.fixture(scope="module", params=[True, False], ids=["ldexp", "two-scalings"])
def exp_kernel(request):
    """Each of _exp_kernel's two scalings is checked."""
    return _exp_kernel(request.param)


@pytest.fixture(scope="module")
def log_kernel():
    return _kernel("log", "log")


@pytest.fixture(scope="module")
def expm1_kernel():
    return _kernel("exponential-minus-one", "expm1")


@pytest.fixture(scope="module")
def log1p_kernel():
    return _kernel("log-plus-one", "log1p")


@pytest.fixture(scope="module", params=[("sine", np.sin), ("cosine", np.cos), ("tan", np.tan)],
                ids=["sin", "cos", "tan"])
def trig_kernel(request):
    opcode, exact = request.param
    return _kernel(opcode, {"sine": "sin", "cosine": "cos", "tan": "tan"}[opcode]), exact


@pytest.fixture(scope="module")
def host_erf_kernel():
    return _kernel("erf", "erf")


@pytest.fixture(scope="module")
def host_tanh_kernel():
    return _kernel("tanh", "tanh")


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


def test_exp_scaled_by_ldexp_is_the_two_scalings_bit_for_bit():
    """llvm.ldexp (one rounding) gives what the two exponent-field
    multiplies give (exact, then one rounding) at every point of the
    sweep, subnormal results and overflow included."""
    x = np.concatenate([np.linspace(-110, 90, N // 2).astype(np.float32),
                        np.linspace(-104, -87, N // 2).astype(np.float32)])
    got = [_run(_exp_kernel(on), x) for on in (True, False)]
    assert np.count_nonzero((got[1] > 0) & (got[1] < np.finfo(np.float32).tiny)) > 1000
    np.testing.assert_array_equal(got[0].view(np.uint32), got[1].view(np.uint32))


def test_log_is_within_one_ulp(log_kernel):
    # Evenly spaced bit patterns: every binade from the smallest subnormal
    # to the largest float.
    x = np.linspace(1, 0x7F7FFFFF, N).astype(np.uint32).view(np.float32)
    got = _run(log_kernel, x).astype(np.float64)
    exact = np.log(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - exact) / ulp) < 1.0


def test_log_special_values(log_kernel):
    x = np.array([np.nan, -1.0, -np.inf, np.inf, 0.0, -0.0, 1.0, 1e-45, 2.0], np.float32)
    got = _run(log_kernel, x)
    assert np.isnan(got[:3]).all()
    np.testing.assert_array_equal(
        got[3:], np.array([np.inf, -np.inf, -np.inf, 0.0, -103.27893, 0.6931472], np.float32))


@pytest.mark.parametrize("lo, hi", [(-20.0, 90.0), (-1.0, 1.0), (-1e-3, 1e-3)])
def test_expm1_is_within_one_and_a_half_ulp(expm1_kernel, lo, hi):
    x = np.linspace(lo, hi, N).astype(np.float32)
    exact = np.expm1(x.astype(np.float64))
    with np.errstate(over="ignore"):
        finite = np.isfinite(exact.astype(np.float32))
    got = _run(expm1_kernel, x)
    assert _max_ulp_error(got[finite], exact[finite]) < 1.5
    assert np.all(np.isinf(got[~finite]))


def test_expm1_special_values(expm1_kernel):
    # Tiny arguments (-0 and subnormals) are themselves; from -17.5 down the
    # result rounds to -1; past ln(FLT_MAX) it is +inf.
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-30, -17.5, -100.0,
                  88.72283, 88.7229, 1.0, -1.0], np.float32)
    got = _run(expm1_kernel, x)
    assert np.isnan(got[0])
    np.testing.assert_array_equal(
        got[1:], np.array([np.inf, -1.0, 0.0, -0.0, 1e-45, -1e-45, 1e-30, -1.0, -1.0,
                           3.4027985e38, np.inf, 1.7182817, -0.63212055], np.float32))
    assert np.signbit(got[4]) and not np.signbit(got[3])


def test_log1p_is_within_one_and_a_half_ulp(log1p_kernel):
    binades = np.linspace(1, 0x7F7FFFFF, N).astype(np.uint32).view(np.float32)
    for x in (binades, -binades[binades < 1], np.linspace(-0.9999999, 1, N).astype(np.float32)):
        exact = np.log1p(x.astype(np.float64))
        assert _max_ulp_error(_run(log1p_kernel, x), exact) < 1.5


def test_log1p_special_values(log1p_kernel):
    # -1 is -inf, below it NaN; tiny arguments (-0, subnormals) are
    # themselves; the largest float's log1p is its log.
    x = np.array([np.nan, -1.5, -np.inf, np.inf, -1.0, 0.0, -0.0, 1e-45, -1e-45, 1.0, 3.4e38,
                  -0.99999994], np.float32)
    got = _run(log1p_kernel, x)
    assert np.isnan(got[:3]).all()
    np.testing.assert_array_equal(
        got[3:], np.array([np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 0.6931472, 88.722008,
                           -16.635532], np.float32))
    assert np.signbit(got[6]) and not np.signbit(got[5])


def test_trig_is_within_half_an_ulp(trig_kernel):
    # Huge arguments too: each binade's reduction uses other chunks of 2/pi.
    kernel, exact = trig_kernel
    binades = np.linspace(1, 0x7F7FFFFF, N).astype(np.uint32).view(np.float32)
    for x in (np.linspace(-10, 10, N).astype(np.float32), binades, -binades):
        assert _max_ulp_error(_run(kernel, x), exact(x.astype(np.float64))) < 0.51


def test_trig_huge_lanes_among_small_ones(trig_kernel):
    # A lane from 2^24 on takes the exact reduction (a vector variant's call
    # for its vector only), the others Cody-Waite's; the floats on both
    # sides of 2^24 too.
    kernel, exact = trig_kernel
    rng = np.random.default_rng(1)
    x = rng.uniform(-100, 100, N).astype(np.float32)
    huge = rng.random(N) < 0.03
    x[huge] = rng.uniform(-2.0**100, 2.0**100, int(huge.sum())).astype(np.float32)
    x[:4] = [np.nextafter(np.float32(2.0**24), np.float32(0)), 2.0**24, -2.0**24, 2.0**24 + 2]
    assert _max_ulp_error(_run(kernel, x), exact(x.astype(np.float64))) < 0.51


def test_trig_special_values(trig_kernel):
    # inf and NaN give NaN; sin and tan of tiny arguments (-0, subnormals)
    # are themselves, cos of them 1; FLT_MAX and the floats nearest pi/2
    # and pi as the exact values round.
    kernel, exact = trig_kernel
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3.4028235e38, 1.5707964,
                  3.1415927, -1e-30], np.float32)
    got = _run(kernel, x)
    assert np.isnan(got[:3]).all()
    np.testing.assert_array_equal(got[3:], exact(x[3:].astype(np.float64)).astype(np.float32))
    if exact is not np.cos:
        assert np.signbit(got[4]) and not np.signbit(got[3])


@pytest.fixture(scope="module")
def pow_kernel():
    return _kernel("power", "pow", operands=2)


@pytest.fixture(scope="module")
def atan2_kernel():
    return _kernel("atan2", "atan2", operands=2)


def _run_binary(kernel, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    operands = [np.zeros(N, np.float32) for _ in range(3)]
    operands[0][:x.size], operands[1][:y.size] = x, y
    kernel(*operands)
    return operands[2][:x.size]


def test_pow_is_within_half_an_ulp(pow_kernel):
    rng = np.random.default_rng(0)
    binades = np.linspace(1, 0x7F7FFFFF, N).astype(np.uint32).view(np.float32)
    for x, y in [(rng.uniform(0, 10, N), rng.uniform(-10, 10, N)),
                 (binades, rng.uniform(-3, 3, N)),
                 (1 + rng.uniform(-1e-3, 1e-3, N), rng.uniform(-5e4, 5e4, N)),
                 (-rng.uniform(0, 10, N), np.round(rng.uniform(-30, 30, N)))]:
        x, y = x.astype(np.float32), y.astype(np.float32)
        exact = np.power(x.astype(np.float64), y.astype(np.float64))
        with np.errstate(over="ignore"):
            rounded = exact.astype(np.float32)
        normal = np.isfinite(rounded) & (np.abs(rounded) >= np.finfo(np.float32).tiny)
        got = _run_binary(pow_kernel, x, y)
        assert _max_ulp_error(got[normal], exact[normal]) < 0.51
        # Overflow, underflow and subnormal results: the exact value rounded.
        np.testing.assert_array_equal(got[~normal], rounded[~normal])


def test_pow_special_values(pow_kernel):
    # Every pair of these, against C99's pow in f64 rounded to f32: zeros
    # and infinities of both signs, +-1, NaN, odd and even integers, a
    # fraction, subnormals, huge values, an integer beyond 2^24.
    values = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, np.inf, -np.inf, np.nan, 3.0,
                       -3.0, 1e-45, -1e-45, 2.5, -2.5, 1e30, -1e30, 16777218.0], np.float32)
    x, y = (a.reshape(-1) for a in np.meshgrid(values, values, indexing="ij"))
    got = _run_binary(pow_kernel, x, y)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(want)],
                                  want.view(np.uint32)[~np.isnan(want)])
    assert np.isnan(got[np.isnan(want)]).all()


def test_atan2_is_within_half_an_ulp(atan2_kernel):
    rng = np.random.default_rng(0)
    binades = np.linspace(1, 0x7F7FFFFF, N).astype(np.uint32).view(np.float32)
    signs = rng.choice([-1.0, 1.0], (2, N))
    for y, x in [(rng.uniform(-2, 2, N), rng.uniform(-2, 2, N)),
                 (binades * signs[0], rng.permutation(binades) * signs[1]),
                 (rng.uniform(-1e-6, 1e-6, N), rng.uniform(-2, 2, N))]:
        y, x = y.astype(np.float32), x.astype(np.float32)
        exact = np.arctan2(y.astype(np.float64), x.astype(np.float64))
        rounded = exact.astype(np.float32)
        normal = np.abs(rounded) >= np.finfo(np.float32).tiny
        got = _run_binary(atan2_kernel, y, x)
        assert _max_ulp_error(got[normal], exact[normal]) < 0.51
        np.testing.assert_array_equal(got[~normal], rounded[~normal])


def test_atan2_special_values(atan2_kernel):
    # Every pair of signed zeros, +-1, infinities, NaN, subnormals and huge
    # values against C99's atan2 in f64 rounded to f32.
    values = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3e38, -3e38],
                      np.float32)
    y, x = (a.reshape(-1) for a in np.meshgrid(values, values, indexing="ij"))
    got = _run_binary(atan2_kernel, y, x)
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(want)],
                                  want.view(np.uint32)[~np.isnan(want)])
    assert np.isnan(got[np.isnan(want)]).all()


def test_cbrt_is_correctly_rounded():
    kernel = _kernel("cbrt", "cbrt")
    binades = np.linspace(1, 0x7F7FFFFF, N).astype(np.uint32).view(np.float32)
    for x in (binades, -binades, np.linspace(-10, 10, N).astype(np.float32)):
        assert _max_ulp_error(_run(kernel, x), np.cbrt(x.astype(np.float64))) <= 0.5
    # Zeros, infinities and NaN are themselves; subnormals and FLT_MAX.
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, -27.0, 3.4028235e38],
                 np.float32)
    got = _run(kernel, x)
    assert np.isnan(got[4]) and np.signbit(got[1]) and not np.signbit(got[0])
    np.testing.assert_array_equal(got, np.cbrt(x.astype(np.float64)).astype(np.float32))


@pytest.fixture(scope="module", params=[np.float32, np.float64], ids=["f32", "f64"])
def fmod_kernel(request):
    """XLA's f32 and f64 remainder (C's fmod): f64 arithmetic in a
    vectorized loop, libm's fmodf or fmod called only through the masked
    variant of its vectors that hold a lane past the short way (a quotient
    from 2^51 on, y = 0 or inf, x inf or NaN)."""
    ty = {np.float32: "f32", np.float64: "f64"}[request.param]
    text = (f"fusion {{\n  p0 = {ty}[{N}] parameter(0)\n  p1 = {ty}[{N}] parameter(1)\n"
            f"  ROOT e = {ty}[{N}] remainder(p0, p1)\n}}\n")
    with ir.Context():
        return request.param, CpuKernel(emit_kernel(find_fusion(parse_hlo(text))))


@pytest.mark.parametrize("ty, divisor", [
    ("f32", "q = f32[1048568] parameter(1)"),
    ("f64", "q = f64[1048568] parameter(1)"),
    # A constant (jnp.mod(x, 2 pi)): it stays an argument of the libm
    # function, whose signature is its variants' (IPSCCP would drop it from
    # an internal one).
    ("f32", "c = f32[] constant(6.28318548)\n  q = f32[1048568] broadcast(c), dimensions={}")])
def test_fmod_loop_is_vectorized(tmp_path, monkeypatch, ty, divisor):
    """The optimized remainder kernel divides vectors of doubles and calls
    libm only through the masked variant of its vectors (and in its
    function: one frem)."""
    from conftest import kernel_llvm_ir
    _, optimized = kernel_llvm_ir(
        f"fusion {{\n  p = {ty}[1048568] parameter(0)\n  {divisor}\n"
        f"  ROOT e = {ty}[1048568] remainder(p, q)\n}}\n", tmp_path, monkeypatch)
    assert re.search(r"fdiv <(4|8|16) x double>", optimized)
    element = {"f32": "float", "f64": "double"}[ty]
    assert re.search(rf"call <(4|8|16) x {element}> @xla_gpu_host_fmod_{ty}_v(4|8|16)\(",
                     optimized)
    assert optimized.count("frem") == 1


def _run_fmod(fmod_kernel, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    dtype, kernel = fmod_kernel
    operands = [np.zeros(N, dtype) for _ in range(3)]
    operands[0][:x.size], operands[1][:y.size] = x, y
    kernel(*operands)
    return operands[2][:x.size]


def _assert_fmod(got: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    """`got` is C's fmod(x, y) bit for bit (fmod is exact: every correct
    one gives these bits), NaN where it is NaN."""
    with np.errstate(invalid="ignore"):
        want = np.fmod(x, y)
    nan = np.isnan(want)
    assert np.isnan(got[nan]).all()
    bits = np.uint32 if got.dtype == np.float32 else np.uint64
    np.testing.assert_array_equal(got.view(bits)[~nan], want.view(bits)[~nan])


def test_fmod_is_exact(fmod_kernel):
    # Random operands of every magnitude against each other (quotients
    # from 0 to past 2^51: libm's lanes among short ones), operands near
    # multiples of the divisor (the f64 quotient rounding up to the next
    # integer), angles mod 2 pi, small integers.
    dtype = fmod_kernel[0]
    rng = np.random.default_rng(0)
    bits = np.uint32 if dtype == np.float32 else np.uint64
    binades = np.linspace(1, np.finfo(dtype).max.view(bits), N).astype(bits).view(dtype)
    signs = rng.choice([-1.0, 1.0], (2, N)).astype(dtype)
    y = rng.uniform(0.01, 100, N).astype(dtype) * signs[1]
    multiple = np.round(rng.uniform(-2e6, 2e6, N)).astype(dtype) * y
    for x, y in [(binades * signs[0], rng.permutation(binades) * signs[1]),
                 (np.nextafter(multiple, dtype(0)), y),
                 (np.nextafter(multiple, multiple * 2), y),
                 (rng.uniform(-1e6, 1e6, N).astype(dtype), np.full(N, 2 * np.pi, dtype)),
                 (np.round(rng.uniform(-1e3, 1e3, (2, N))).astype(dtype))]:
        _assert_fmod(_run_fmod(fmod_kernel, x, y), x, y)


def test_fmod_special_values(fmod_kernel):
    # Every pair of signed zeros, +-1, 1.5, infinities, NaN, the smallest
    # subnormals, the largest floats, 2 pi and 0.1: x's sign on a zero
    # result (fmod(-3, 1.5) is -0), x for y = inf, NaN for y = 0 or x = inf.
    dtype = fmod_kernel[0]
    info = np.finfo(dtype)
    values = np.array([0.0, -0.0, 1.0, -1.0, 1.5, -3.0, np.inf, -np.inf, np.nan,
                       info.smallest_subnormal, -info.smallest_subnormal, info.max, -info.max,
                       2 * np.pi, 0.1], dtype)
    x, y = (a.reshape(-1) for a in np.meshgrid(values, values, indexing="ij"))
    _assert_fmod(_run_fmod(fmod_kernel, x, y), x, y)


def test_host_erf_is_xla_cpus(host_erf_kernel):
    import jax
    normal = np.linspace(0x00800000, 0x7F7FFFFF, N).astype(np.uint32).view(np.float32)
    for x in (np.linspace(-5, 5, N).astype(np.float32), normal, -normal):
        got = _run(host_erf_kernel, x)
        want = np.asarray(jax.jit(jax.lax.erf, backend="cpu")(x))
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_host_tanh_is_xla_cpus(host_tanh_kernel):
    """XLA:CPU's tanh (its intrinsic: Eigen's ratio with FMA, clamped at
    7.99881, exactly 1 there) bit for bit over [-10, 10] and every binade of
    normal floats; and the special values. With the clamp of Eigen's ratio
    without FMA (7.90531) 60 % of [-20, 20] differed: from 7.9053 on the
    ratio was 0.99999976, where XLA:CPU gives 1."""
    import jax
    normal = np.linspace(0x00800000, 0x7F7FFFFF, N).astype(np.uint32).view(np.float32)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3e-4, 7.9, 7.99881172, 7.9988,
                        8.0, 20.0, -25.0], np.float32)
    for x in (np.linspace(-10, 10, N).astype(np.float32), normal, -normal, special):
        got = _run(host_tanh_kernel, x)
        want = np.asarray(jax.jit(jax.numpy.tanh, backend="cpu")(x))
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    exact = np.tanh(np.linspace(-10, 10, N).astype(np.float32).astype(np.float64))
    assert _max_ulp_error(_run(host_tanh_kernel, np.linspace(-10, 10, N).astype(np.float32)),
                          exact) < 5.0


def test_host_erf_is_within_a_few_ulp(host_erf_kernel):
    x = np.linspace(-4.5, 4.5, 1 << 16).astype(np.float32)
    exact = np.array([math.erf(v) for v in x.astype(np.float64)])
    assert _max_ulp_error(_run(host_erf_kernel, x), exact) < 6.0


def test_host_erf_special_values(host_erf_kernel):
    # From 3.8325069 on erf is copysign(1, x); below it the ratio (0.99999988
    # at 3.8325); NaN stays NaN, zeros keep their sign, erf(x) ~ 2x/sqrt(pi).
    x = np.array([np.nan, np.inf, -np.inf, 3.8325, 3.8326, -3.8326, 0.0, -0.0, 1e-30],
                 np.float32)
    got = _run(host_erf_kernel, x)
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:8], np.array([1.0, -1.0, 0.99999988, 1.0, -1.0,
                                                      0.0, -0.0], np.float32))
    assert np.signbit(got[7]) and not np.signbit(got[6])
    assert got[8] == np.float32(1.1283791e-30)


def _gpu_kernel(opcode: str) -> CpuKernel:
    """The loop kernel of `opcode` on f32[N], with XLA:GPU's approximation
    in place of the math op before the host pipeline sees it."""
    text = f"fusion {{\n  p = f32[{N}] parameter(0)\n  ROOT e = f32[{N}] {opcode}(p)\n}}\n"
    with ir.Context():
        emitted = emit_kernel(find_fusion(parse_hlo(text)))
        module = pipelines.parse_module(emitted.text)
        PassManager.parse("builtin.module(func.func(xla-gpu-expand-float-ops))").run(
            module.operation)
        expanded = str(module)
    assert f"math.{opcode}" not in expanded
    return CpuKernel(expanded, entry=emitted.entry)


@pytest.fixture(scope="module")
def tanh_kernel():
    return _gpu_kernel("tanh")


@pytest.fixture(scope="module")
def erf_kernel():
    return _gpu_kernel("erf")


def _max_ulp_error(got: np.ndarray, exact: np.ndarray) -> float:
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return float(np.max(np.abs(got.astype(np.float64) - exact) / ulp))


def test_tanh_is_within_a_few_ulp(tanh_kernel):
    x = np.linspace(-9, 9, 1 << 16).astype(np.float32)
    exact = np.tanh(x.astype(np.float64))
    assert _max_ulp_error(_run(tanh_kernel, x), exact) < 5.0


def test_erf_is_within_a_few_ulp(erf_kernel):
    x = np.linspace(-4.5, 4.5, 1 << 16).astype(np.float32)
    exact = np.array([math.erf(v) for v in x.astype(np.float64)])
    assert _max_ulp_error(_run(erf_kernel, x), exact) < 5.0


def test_tanh_special_values(tanh_kernel):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3e-4, -1e-30, 7.999, 20.0],
                 np.float32)
    got = _run(tanh_kernel, x)
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:3], [1.0, -1.0])
    # Below 4e-4 tanh(x) is x itself, the sign of a zero included.
    np.testing.assert_array_equal(got[3:7], x[3:7])
    assert np.signbit(got[4])
    # The clamp at 7.99881172 is where the ratio reaches 1.
    np.testing.assert_array_equal(got[7:], [1.0, 1.0])


def test_erf_special_values(erf_kernel):
    x = np.array([np.nan, 0.0, -0.0, 3.7439213, np.inf, 10.0, -np.inf, -3.75], np.float32)
    got = _run(erf_kernel, x)
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:3], [0.0, 0.0])
    assert np.signbit(got[2]) and not np.signbit(got[1])
    # Past the clamp at 3.7439 erf stays at its value there: 1 - 3 * 2^-24
    # in XLA:GPU's rational form (not quite 1), the same for every larger x.
    assert 0 < 1.0 - got[3] <= 2.0 ** -22
    np.testing.assert_array_equal(got[4:6], [got[3], got[3]])
    np.testing.assert_array_equal(got[6:], [-got[3], -got[3]])

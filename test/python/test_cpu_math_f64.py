"""The CPU target's f64 exp, expm1, log, log1p, tanh, sin, cos, tan,
atan2, cbrt, pow and erf: arithmetic in IR that LLVM vectorizes (they were
libm calls, which kept their loops scalar: f64 tanh of 1M elements took
7.6 ms where XLA:CPU's vectorized one takes 0.26), each but tanh within 1
ulp of the exact values over sweeps of 2^20 points (measured: exp 0.79,
expm1 0.88, log 0.80, log1p 0.80, sin 0.78, cos 0.76, tan 0.77, atan2
0.74, cbrt 0.67, pow 0.82, erf 0.85; XLA:CPU's own exp, expm1 and log1p
miss by up to 1.5, 4.1 and 128 ulp; its sin, cos, tan, atan2, cbrt, pow
and erf are libm's), and their special values as C99 gives them. tanh is
XLA:CPU's own rational, its bits, within 7.5 ulp (since stop 81: ours,
within 0.71 ulp, ran 2.6x its time). sin, cos and tan call libm past 2^19
in magnitude. pow of a constant 1/2, 2, -1 or 1 (f32 too) is what LLVM
folds XLA:CPU's pow of one to, bit for bit. Except sin, cos, tan and
tanh, each is a call of libm's in a scalar loop and the approximation only where the loop vectorizer calls
the function's vector variant (inlined after it). The exact values are
long double's (x86's 64-bit significand: 11 bits past f64's; erf's from a
series of positive terms in it)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from mlir import ir

from xla_gpu.emitters import emit_kernel, find_fusion
from xla_gpu.hlo import parse_hlo
from xla_gpu.runtime import CpuKernel, host_code

N = 1 << 20
# The lanes of the f64 functions' vector variants: the host's vector of f64
# (8 with AVX-512, else 4: -xla-gpu-lower-to-llvm's f64-vector-lanes).
LANES = 8 if host_code.has_512_bit_vectors() else 4
LONG = np.longdouble

pytestmark = pytest.mark.skipif(np.finfo(LONG).nmant < 63,
                                reason="the exact values need x86's 80-bit long double")

_LIBM = {"exponential": "exp", "exponential-minus-one": "expm1", "log": "log",
         "log-plus-one": "log1p", "sine": "sin", "cosine": "cos",
         "cbrt": "cbrt", "tan": "tan"}
# sin, cos and tan call libm past 2^19 in magnitude (its exact reduction),
# in a function of their own: the kernel's lane loop does not.
_CALLED_PAST_BOUND = {"sine", "cosine", "tan"}


def _kernel(opcode: str) -> CpuKernel:
    """The loop kernel of `opcode` on f64[N], checked to call neither libm
    nor LLVM's intrinsic of it."""
    text = f"fusion {{\n  p = f64[{N}] parameter(0)\n  ROOT e = f64[{N}] {opcode}(p)\n}}\n"
    with ir.Context():
        kernel = CpuKernel(emit_kernel(find_fusion(parse_hlo(text))))
    call = _LIBM.get(opcode, opcode)
    # libm's op appears once: in the function of huge arguments (sin, cos,
    # tan) or in the scalar function whose vector variants the loop
    # vectorizer calls (the others).
    assert (kernel.llvm_ir.count(f"llvm.intr.{call}(")
            + kernel.llvm_ir.count(f"llvm.call @{call}(")) == 1
    if opcode in _CALLED_PAST_BOUND:
        assert f"@xla_gpu_host_{call}_f64" in kernel.llvm_ir
    else:
        assert f"@xla_gpu_f64_{call}_v{LANES}" in kernel.llvm_ir
    return kernel


@pytest.fixture(scope="module", params=list(_LIBM))
def kernel(request):
    return request.param, _kernel(request.param)


def _run(kernel: CpuKernel, x: np.ndarray) -> np.ndarray:
    padded = np.zeros(N)
    padded[:x.size] = x
    out = np.zeros(N)
    kernel(padded, out)
    return out[:x.size]


def _max_ulp_error(got: np.ndarray, exact: np.ndarray) -> float:
    """Over the exact values whose f64 rounding is a finite normal."""
    with np.errstate(over="ignore"):
        rounded = exact.astype(np.float64)
    normal = np.isfinite(rounded) & (np.abs(rounded) >= np.finfo(np.float64).tiny)
    ulp = np.spacing(np.abs(rounded[normal])).astype(LONG)
    return float(np.max(np.abs((got[normal].astype(LONG) - exact[normal]) / ulp)))


# (The last bit pattern is the largest float's 4096th below: the float64 of a
# larger one rounds past it, to inf's.)
_BINADES = np.linspace(1, 0x7FEFFFFFFFFFF000, N).astype(np.uint64).view(np.float64)
_RNG = np.random.default_rng(7)
# Each function's sweeps: its whole range (overflow and underflow included),
# its reduction's boundaries and around 0.
_SWEEPS = {
    "exponential": (np.exp, [np.linspace(-750, 712, N), _RNG.uniform(-1, 1, N),
                             _RNG.uniform(-1e-3, 1e-3, N)]),
    "exponential-minus-one": (np.expm1, [np.linspace(-45, 712, N), _RNG.uniform(-1, 1, N),
                                         _RNG.uniform(-1e-3, 1e-3, N),
                                         np.linspace(-1e-15, 1e-15, N)]),
    "log": (np.log, [_BINADES, _RNG.uniform(0.5, 2, N), np.linspace(5e-324, 1e-300, N)]),
    "log-plus-one": (np.log1p, [_BINADES, -_BINADES[_BINADES < 1],
                                np.linspace(-0.9999999, 1, N), _RNG.uniform(-1e-3, 1e-3, N)]),
    # Every binade of both signs (libm's past 2^19), around pi/4 (the
    # kernels' edge) and the reduction's whole range.
    "sine": (np.sin, [np.linspace(-10, 10, N), _RNG.uniform(-6e5, 6e5, N), _BINADES, -_BINADES,
                      np.linspace(0.7, 0.9, N)]),
    "cosine": (np.cos, [np.linspace(-10, 10, N), _RNG.uniform(-6e5, 6e5, N), _BINADES,
                        -_BINADES, np.linspace(0.7, 0.9, N)]),
    # tan also near pi/2 (its odd quadrants' -1/tan) and 0.6744 (its
    # kernel's second form).
    "tan": (np.tan, [np.linspace(-10, 10, N), _RNG.uniform(-6e5, 6e5, N), _BINADES, -_BINADES,
                     np.linspace(0.6, 0.9, N), np.linspace(1.5, 1.65, N)]),
    "cbrt": (np.cbrt, [_BINADES, -_BINADES, np.linspace(-10, 10, N),
                       np.linspace(5e-324, 2.3e-308, N)]),
}


def test_within_one_ulp(kernel):
    opcode, k = kernel
    exact_fn, sweeps = _SWEEPS[opcode]
    for x in sweeps:
        got = _run(k, x)
        exact = exact_fn(x.astype(LONG))
        assert _max_ulp_error(got, exact) < 1.0, (opcode, x[0], x[-1])
        # Where the rounding is not a finite normal (overflow, underflow,
        # subnormal results): what it rounds to, within one subnormal step.
        with np.errstate(over="ignore"):
            rounded = exact.astype(np.float64)
        edge = ~(np.isfinite(rounded) & (np.abs(rounded) >= np.finfo(np.float64).tiny))
        np.testing.assert_allclose(got[edge], rounded[edge], rtol=0, atol=5e-324)


_SPECIAL = {
    "exponential": ([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, 709.782712893384,
                     709.7827128933841, -745.1332191019411, -745.14, -1000.0, 1.0],
                    [np.nan, np.inf, 0.0, 1.0, 1.0, 1.0, 1.7976931348622732e308, np.inf,
                     5e-324, 0.0, 0.0, np.e]),
    "exponential-minus-one": ([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, 1e-300,
                               -38.0, -1000.0, 709.7827128933841, 1.0],
                              [np.nan, np.inf, -1.0, 0.0, -0.0, 5e-324, -5e-324, 1e-300,
                               -1.0, -1.0, np.inf, np.expm1(1.0)]),
    "log": ([np.nan, -1.0, -np.inf, np.inf, 0.0, -0.0, 1.0, 5e-324, 2.0,
             1.7976931348623157e308],
            [np.nan, np.nan, np.nan, np.inf, -np.inf, -np.inf, 0.0, -744.4400719213812,
             np.log(2.0), 709.782712893384]),
    "log-plus-one": ([np.nan, -1.5, -np.inf, np.inf, -1.0, 0.0, -0.0, 5e-324, -5e-324, 1.0,
                      1.7976931348623157e308],
                     [np.nan, np.nan, np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324,
                      np.log(2.0), 709.782712893384]),
    # inf gives NaN (libm's); sin of tiny arguments (-0, subnormals) is
    # the argument, cos 1; the floats on both sides of the bound 2^19.
    "sine": ([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -1e-300, np.nextafter(2.0**19, 0),
              2.0**19, -2.0**19],
             [np.nan, np.nan, np.nan, 0.0, -0.0, 5e-324, -1e-300,
              np.sin(np.nextafter(2.0**19, 0)), np.sin(2.0**19), np.sin(-2.0**19)]),
    "cosine": ([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, np.nextafter(2.0**19, 0), 2.0**19],
               [np.nan, np.nan, np.nan, 1.0, 1.0, 1.0, np.cos(np.nextafter(2.0**19, 0)),
                np.cos(2.0**19)]),
    "tan": ([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -1e-300, np.nextafter(2.0**19, 0),
             2.0**19],
            [np.nan, np.nan, np.nan, 0.0, -0.0, 5e-324, -1e-300, np.tan(np.nextafter(2.0**19, 0)),
             np.tan(2.0**19)]),
    "cbrt": ([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -5e-324, -27.0, 1e300,
              1.7976931348623157e308],
             [np.nan, np.inf, -np.inf, 0.0, -0.0, np.cbrt(5e-324), -np.cbrt(5e-324), -3.0,
              np.cbrt(1e300), np.cbrt(1.7976931348623157e308)]),
}


def test_special_values(kernel):
    """NaN stays NaN; infinities, zeros (their signs), subnormals and the
    edges of overflow and underflow as C99 rounds them; a normal result
    (of a subnormal's cbrt, expm1(1)) within the functions' 1 ulp (libm's
    exact rounding on the AVX-512 host, 1 ulp off on an AVX2 one)."""
    opcode, k = kernel
    x, want = (np.array(v) for v in _SPECIAL[opcode])
    got = _run(k, x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    number = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))
    normal = number & np.isfinite(want) & (np.abs(want) >= np.finfo(np.float64).tiny)
    np.testing.assert_array_equal(got[number & ~normal], want[number & ~normal])
    np.testing.assert_array_max_ulp(got[normal], want[normal], maxulp=1)


@pytest.mark.parametrize("op", ["power", "atan2"])
def test_a_constant_operand_keeps_the_variant(tmp_path, monkeypatch, op):
    """pow(x, 2.5) and atan2(x, 2.5): the constant stays an argument of the
    scalar function (weak_odr, which IPSCCP does not specialize), whose
    signature is then its variant's, so the loop is vectorized (its FMAs
    on vectors of doubles) and libm is called for the remainder alone."""
    from conftest import kernel_llvm_ir
    _, optimized = kernel_llvm_ir(
        "fusion {\n  p = f64[1048567] parameter(0)\n  c = f64[] constant(2.5)\n"
        "  b = f64[1048567] broadcast(c), dimensions={}\n"
        f"  ROOT e = f64[1048567] {op}(p, b)\n}}\n", tmp_path, monkeypatch)
    assert re.search(r"@llvm\.fma\.v(4|8)f64", optimized)
    name = {"power": "pow", "atan2": "atan2"}[op]
    assert re.search(rf"define weak_odr hidden double @xla_gpu_f64_{name}\(double %\d+, double",
                     optimized)


def test_a_loop_of_large_variants_is_not_interleaved(tmp_path, monkeypatch):
    """HostJit's cap of a lane loop's interleave count weighs a call of an
    f64 function by its vector variant's instructions (inlined after the
    vectorizer, a copy an interleaved iteration): pow + erf's loop runs
    once where its few calls asked for 4 (their code generation 21 -> 15
    ms); an exp's loop keeps 2 or more."""
    from conftest import kernel_llvm_ir
    counts = {}
    for name, body in [("pow_erf", "  a = f64[1048565] abs(p)\n"
                                   "  w = f64[1048565] power(a, q)\n  e = f64[1048565] erf(q)\n"
                                   "  ROOT r = f64[1048565] add(w, e)\n"),
                       ("exp", "  ROOT r = f64[1048565] exponential(p)\n")]:
        dump = tmp_path / name
        dump.mkdir()
        translated, _ = kernel_llvm_ir(
            "fusion {\n  p = f64[1048565] parameter(0)\n  q = f64[1048565] parameter(1)\n"
            + body + "}\n", dump, monkeypatch)
        counts[name] = [int(c) for c in re.findall(r'"llvm.loop.interleave.count", i32 (\d+)',
                                                    translated)]
    assert counts["pow_erf"] == [1]
    assert counts["exp"] and min(counts["exp"]) >= 2


def test_vectorized_loops_inline_the_variants(tmp_path, monkeypatch):
    """Where the loop vectorizer vectorizes a lane loop, it calls the f64
    function's vector variant, which HostJit.cpp inlines after it (and
    drops): the optimized kernel computes the approximation on vectors of
    the host's doubles (8, or 4 without AVX-512: its FMAs) and calls no
    variant; the scalar function (libm's) is left for the loop's
    remainder."""
    from conftest import kernel_llvm_ir
    _, optimized = kernel_llvm_ir("fusion {\n  p = f64[1048568] parameter(0)\n"
                                  "  ROOT e = f64[1048568] exponential(p)\n}\n",
                                  tmp_path, monkeypatch)
    assert f"@llvm.fma.v{LANES}f64" in optimized
    # No call, no definition.
    assert f"@xla_gpu_f64_exp_v{LANES}(<{LANES} x double>" not in optimized
    assert "call double @xla_gpu_f64_exp(" in optimized


@pytest.mark.parametrize("opcode, exact", [("sine", np.sin), ("cosine", np.cos),
                                           ("tan", np.tan)])
def test_trig_huge_lanes_among_small_ones(opcode, exact):
    """A lane from 2^19 on calls libm (the vector's masked variant, for its
    vector only), the others are reduced in line; every element within 1
    ulp."""
    x = _RNG.uniform(-100, 100, N)
    huge = _RNG.random(N) < 0.03
    x[huge] = _RNG.uniform(-1e300, 1e300, int(huge.sum()))
    got = _run(_kernel(opcode), x)
    assert _max_ulp_error(got, exact(x.astype(LONG))) < 1.0


def _binary_kernel(opcode: str, call: str) -> CpuKernel:
    """The loop kernel of `opcode` on two f64[N] operands, whose loop calls
    `call`'s function with vector variants (libm's `call` in it)."""
    text = (f"fusion {{\n  y = f64[{N}] parameter(0)\n  x = f64[{N}] parameter(1)\n"
            f"  ROOT e = f64[{N}] {opcode}(y, x)\n}}\n")
    with ir.Context():
        kernel = CpuKernel(emit_kernel(find_fusion(parse_hlo(text))))
    assert f"@xla_gpu_f64_{call}_v{LANES}" in kernel.llvm_ir
    return kernel


@pytest.fixture(scope="module")
def atan2_kernel():
    return _binary_kernel("atan2", "atan2")


def _run2(kernel: CpuKernel, y: np.ndarray, x: np.ndarray) -> np.ndarray:
    operands = [np.zeros(N), np.zeros(N)]
    operands[0][:y.size] = y
    operands[1][:x.size] = x
    out = np.zeros(N)
    kernel(*operands, out)
    return out[:y.size]


def test_atan2_within_one_ulp(atan2_kernel):
    """Both signs of each operand (every quadrant and octant), every
    binade of each (their ratio from underflow to overflow), and ratios
    near 1 and 7/16 (the reduction's intervals) with x negative too."""
    signs = np.where(_RNG.random(N) < 0.5, -1.0, 1.0)
    sweeps = [(_RNG.standard_normal(N), _RNG.standard_normal(N)),
              (_BINADES * signs, _RNG.permutation(_BINADES) * signs[::-1]),
              (np.ones(N), _RNG.uniform(0.3, 3, N) * signs),
              (_RNG.uniform(-5, 5, N), np.ones(N))]
    for y, x in sweeps:
        got = _run2(atan2_kernel, y, x)
        assert _max_ulp_error(got, np.arctan2(y.astype(LONG), x.astype(LONG))) < 1.0


def test_atan2_special_values(atan2_kernel):
    """C99's: every pair of zeros, infinities, NaN and finite values of
    both signs as libm gives it."""
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 5e-324, -1e308]
    y = np.array([a for a in special for _ in special])
    x = np.array([b for _ in special for b in special])
    got = _run2(atan2_kernel, y, x)
    want = np.arctan2(y, x)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    number = ~np.isnan(want)
    np.testing.assert_array_equal(got[number], want[number])
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))


@pytest.fixture(scope="module")
def pow_kernel():
    return _binary_kernel("power", "pow")


def test_pow_within_one_ulp(pow_kernel):
    """Random pairs, x near 1 to large y, every binade of x, y log x near
    the ends of exp's range (where t = y log x must be known to 2^-62),
    negative x to integer y, subnormal x; against long double's powl."""
    sweeps = [(_RNG.uniform(0, 10, N), _RNG.uniform(-10, 10, N)),
              (1 + _RNG.uniform(-1e-3, 1e-3, N), _RNG.uniform(-5e5, 5e5, N)),
              (np.exp(_RNG.uniform(-700, 700, N)), _RNG.uniform(-1, 1, N)),
              (_RNG.uniform(0.5, 2, N), _RNG.uniform(-1000, 1000, N)),
              (-_RNG.uniform(0, 10, N), np.floor(_RNG.uniform(-30, 30, N))),
              (_RNG.uniform(5e-324, 2e-308, N), _RNG.uniform(-1, 0.01, N))]
    for x, y in sweeps:
        got = _run2(pow_kernel, x, y)
        with np.errstate(all="ignore"):
            exact = np.power(x.astype(LONG), y.astype(LONG))
        assert _max_ulp_error(got, exact) < 1.0


def test_pow_special_values(pow_kernel):
    """C99's special cases over every pair of zeros, infinities, NaN, +-1
    and finite values (odd and even integers, fractions, the extremes) as
    libm gives them; finite nonzero results within 1 ulp of libm's."""
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0,
               -3.0, 2.5, 5e-324, 1e308, -1e308]
    x = np.array([a for a in special for _ in special])
    y = np.array([b for _ in special for b in special])
    got = _run2(pow_kernel, x, y)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    exact = ~np.isfinite(want) | (want == 0) | (np.abs(want) == 1)
    exact &= ~np.isnan(want)
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]))
    rest = np.isfinite(want) & ~exact
    assert np.all(np.abs(got[rest] - want[rest]) <= np.spacing(np.abs(want[rest])))


def test_pow_past_exps_range(pow_kernel):
    """pow where y log|x| is finite but far past exp's range (|y| up to
    1e300): +inf, 0 or, for a negative x to an odd integer y, their
    negatives, as libm gives them. The low part of y log|x| had joined
    exp's reduction unclamped (up to |y| 2^-53 of it): pow(65520, 1e38)
    was -inf, pow(0.1075, 4e17) -0, pow(4.5e-12, 8e26) -1.2e-174."""
    n = N // 4
    x = np.concatenate([np.exp(_RNG.uniform(-700, 700, n)), -np.exp(_RNG.uniform(-700, 700, n)),
                        1 + _RNG.uniform(-1e-3, 1e-3, n)])
    y = np.concatenate([10 ** _RNG.uniform(3, 300, n) * _RNG.choice([-1, 1], n),
                        np.floor(10 ** _RNG.uniform(3, 15, n)) * _RNG.choice([-1, 1], n),
                        10 ** _RNG.uniform(5, 300, n) * _RNG.choice([-1, 1], n)])
    got = _run2(pow_kernel, x, y)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    saturated = ~np.isfinite(want) | (want == 0)
    assert saturated.sum() > len(want) // 2
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[saturated], want[saturated])
    np.testing.assert_array_equal(np.signbit(got[saturated]), np.signbit(want[saturated]))
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(LONG), y.astype(LONG))
    rest = np.isfinite(want) & ~saturated
    assert _max_ulp_error(got[rest], exact[rest]) < 1.0


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("c", [0.5, 2.0, -1.0, 1.0])
def test_pow_by_constant_is_llvms_fold(dtype, c):
    """x ** c of a constant c of 1/2, 2, -1 or 1 is what LLVM folds
    XLA:CPU's pow intrinsic to: sqrt (|sqrt(x)|, +inf at -inf), x * x,
    1 / x, x -- bit for bit, special values included -- and no pow."""
    text = (f"fusion {{\n  x = {dtype}[{N}] parameter(0)\n  c = {dtype}[] constant({c})\n"
            f"  b = {dtype}[{N}] broadcast(c), dimensions={{}}\n"
            f"  ROOT e = {dtype}[{N}] power(x, b)\n}}\n")
    with ir.Context():
        kernel = CpuKernel(emit_kernel(find_fusion(parse_hlo(text))))
    np_type = np.float32 if dtype == "f32" else np.float64
    x = _RNG.standard_normal(N).astype(np_type) * 100
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45 if dtype == "f32" else 5e-324, -1.0, 4.0]
    out = np.zeros(N, np_type)
    kernel(x, out)
    with np.errstate(all="ignore"):
        want = {0.5: np.where(x == -np.inf, np.inf, np.abs(np.sqrt(x))), 2.0: x * x,
                -1.0: np_type(1) / x, 1.0: x}[c].astype(np_type)
    np.testing.assert_array_equal(out.view(np.uint32 if dtype == "f32" else np.uint64)[8:],
                                  want.view(np.uint32 if dtype == "f32" else np.uint64)[8:])
    np.testing.assert_array_equal(np.isnan(out[:8]), np.isnan(want[:8]))
    number = ~np.isnan(want[:8])
    np.testing.assert_array_equal(out[:8][number], want[:8][number])
    np.testing.assert_array_equal(np.signbit(out[:8][number]), np.signbit(want[:8][number]))


def erf_long_double(x: np.ndarray) -> np.ndarray:
    """erf in long double: 2/sqrt(pi) e^(-x^2) sum 2^n x^(2n+1) / (2n+1)!!,
    a series of positive terms (nothing cancels), to 200 terms (the last
    below 2^-70 of the sum; past |x| = 6.5, where erf rounds to 1, x is
    clamped there)."""
    a = np.minimum(np.abs(x.astype(LONG)), LONG(6.5))
    term = a.copy()
    total = a.copy()
    for n in range(200):
        term = term * 2 * a * a / (2 * n + 3)
        total = total + term
    return np.sign(x) * (2 / np.sqrt(LONG("3.14159265358979323846264338327950288"))) * (
        np.exp(-a * a) * total)


def test_erf_within_one_ulp():
    """Each of fdlibm's intervals and their edges (0.84375, 1.25, 1/0.35,
    6), tiny arguments, both signs; erf of long double's series."""
    kernel = _kernel("erf")
    m = N // 4
    sweeps = [np.linspace(-7, 7, m), np.linspace(-1.5, 1.5, m), _BINADES[:N // 4:4],
              -_BINADES[:N // 4:4], np.linspace(0.8, 0.9, m), np.linspace(1.2, 1.3, m),
              np.linspace(2.8, 2.9, m), np.linspace(5.9, 6.1, m)]
    for x in sweeps:
        assert _max_ulp_error(_run(kernel, x), erf_long_double(x)) < 1.0


def test_erf_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 5e-324, -1e-300, 6.0, -30.0])
    got = _run(_kernel("erf"), x)
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:], [1.0, -1.0, 0.0, -0.0, 5e-324, -1.1283791670955126e-300,
                                            1.0, -1.0])
    np.testing.assert_array_equal(np.signbit(got[1:]), np.signbit(
        np.array([1.0, -1.0, 0.0, -0.0, 1.0, -1.0, 1.0, -1.0])))


def test_tanh_is_xla_cpus():
    """f64 tanh as XLA:CPU computes it (Eigen's 19/18 rational of x clamped
    to +-17.714, +-1 from 20 on): its bits wherever neither the argument
    nor the result is subnormal (XLA:CPU flushes those to zero), within
    7.5 ulp of the exact values, and the same bits in a loop's scalar
    remainder (N + 5 elements: the vector loop's last 5 lanes) as in its
    vectors -- no libm call. XLA:CPU's values from jax.jit with x64 on."""
    jax = pytest.importorskip("jax")
    text = (f"fusion {{\n  p = f64[{N + 5}] parameter(0)\n"
            f"  ROOT e = f64[{N + 5}] tanh(p)\n}}\n")
    with ir.Context():
        k = CpuKernel(emit_kernel(find_fusion(parse_hlo(text))))
    assert "@tanh" not in k.llvm_ir and "llvm.intr.tanh" not in k.llvm_ir
    x = np.concatenate([np.linspace(-25, 25, N // 2), _RNG.uniform(-1, 1, N // 2 - 10),
                        [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-20, 17.714196154005176, 17.72,
                         np.nextafter(20.0, 0), 20.0, -20.0, 0.5, -0.75, 3.0, 1e-300]])
    got = np.zeros(x.size)
    k(x, got)
    with jax.enable_x64(True):
        want = np.asarray(jax.jit(jax.numpy.tanh)(x))
    tiny = np.finfo(np.float64).tiny
    normal = (np.abs(x) >= tiny) | (x == 0) | np.isnan(x)
    normal &= (np.abs(want) >= tiny) | (want == 0) | np.isnan(want)
    np.testing.assert_array_equal(got[normal].view(np.uint64), want[normal].view(np.uint64))
    assert normal[-15:].sum() == 15  # the remainder's lanes compared
    finite = np.isfinite(x)
    # 7.02 ulp at most here, below 1 near the clamp.
    assert _max_ulp_error(got[finite], np.tanh(x[finite].astype(LONG))) < 7.5

"""xla_gpu.jax.from_jaxpr: the HLO the JAX backend writes from a jaxpr must
make the kernel jax's own lowering makes -- the same bits on the same
inputs, special values included -- and must decline what it cannot write
(the backend then lowers with jax). Groups of functions by primitive, and
random functions (`XLA_GPU_RANDOM_SEEDS=N` runs N/2 of floats and N/4 of
integers, default 32 and 16, from `XLA_GPU_RANDOM_SEED_BASE` on)."""

from __future__ import annotations


import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from xla_gpu.emitters import emit_kernel, find_fusion
from xla_gpu.hlo import parse_hlo
from xla_gpu.jax import kernel
from xla_gpu.jax.from_jaxpr import hlo_from_jaxpr
from xla_gpu.jax.kernel_call import prepare
from xla_gpu.pipelines import compile_context

from conftest import random_seeds

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-30, -1e30, np.inf, -np.inf, np.nan]


def _floats(shape, dtype=jnp.float32, seed=0):
    """Normal values with the special ones (signed zeros, infinities, NaN)
    at the front."""
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 3
    flat = values.reshape(-1)
    flat[:len(SPECIAL)] = SPECIAL[:flat.size]
    return jnp.asarray(values, dtype)


def _ints(shape, dtype=jnp.int32, seed=0):
    info = np.iinfo(dtype)
    values = np.random.default_rng(seed).integers(max(info.min, -1000), min(info.max, 1000),
                                                  shape)
    flat = values.reshape(-1)
    flat[:4] = [0, 1, info.max, info.min][:flat.size]
    return jnp.asarray(values, dtype)


def _kernel(text: str):
    with compile_context():
        return prepare(emit_kernel(find_fusion(parse_hlo(text))), "cpu")


def _bits(a) -> np.ndarray:
    """The bytes of `a`, every NaN made one NaN first: signed zeros and
    infinities must match, a NaN's sign and payload need not (LLVM takes
    them as unspecified: with a constant array in one kernel and the same
    values computed in the other, a NaN's sign came out different)."""
    a = np.array(a)
    if a.dtype.kind in "fV":  # numpy's floats, ml_dtypes' (bfloat16, ...)
        a[np.isnan(a.astype(np.float32))] = np.nan
    return a.view(np.uint8) if a.dtype != np.bool_ else a


small_array = np.array([0.5, -1.0, 2.0], np.float32)
zeros_array = np.zeros((4, 8), np.float32)


@jax.custom_vjp
def _clipped(v):
    return jnp.clip(v, -1.0, 1.0)


_clipped.defvjp(lambda v: (_clipped(v), None), lambda _, g: (g,))

# name -> (function, arguments): each takes the jaxpr path.
CASES = {
    "transcendentals": (lambda x: (jnp.exp(x) - jnp.log1p(jnp.abs(x)),
                                   jnp.tanh(x) * jnp.sin(x) + jnp.cos(x) / jnp.expm1(x),
                                   jnp.log(x) + jnp.sqrt(x) - lax.rsqrt(x) * jnp.cbrt(x),
                                   lax.tan(x) + lax.erf(x) - jnp.arctan2(x, 2.0),
                                   x ** x),
                        [_floats((16, 24))]),
    "jax's expansions": (lambda x: (jax.nn.sigmoid(x), jnp.exp2(x), lax.logistic(-x)),
                         [_floats((16, 24))]),
    "jax's expansions bf16": (lambda x: (jax.nn.sigmoid(x), jnp.exp2(x)),
                              [_floats((16, 24), jnp.bfloat16)]),
    "rounding": (lambda x: (jnp.floor(x), jnp.ceil(x), jnp.sign(x), jnp.round(x),
                            lax.round(x), jnp.isfinite(x),
                            lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10)),
                 [_floats((8, 40))]),
    "seed gelu bf16": (lambda x: 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3))),
                       [_floats((4, 64, 32), jnp.bfloat16)]),
    "integer_pow": (lambda x: (x ** 2, x ** 3, x ** 5, x ** -3, lax.integer_pow(x, 0),
                               lax.integer_pow(x, 1) + 1, lax.square(x)),
                    [_floats((8, 40))]),
    "constants on the left": (lambda x: (jnp.maximum(0.0, x), jnp.minimum(-0.0, x),
                                         0.0 < x, 1.0 >= x, 2.0 - x, 3.0 / x,
                                         jnp.maximum(x, 0.0)),
                              [_floats((8, 40))]),
    # StableHLO folds x + 0 and the like to x: -0.0 + 0.0 would be +0.0.
    "identity folds": (lambda x, h: ((x + 0.0) * 2, (0.0 + x) * 3, (x - (-0.0)) * 4,
                                     jnp.abs(x * 1.0), -(1.0 * x), (x + jnp.zeros_like(x)) * 5,
                                     (x + zeros_array) * 6, -x + 0.0 * 1.0,
                                     (h + 0.0).astype(jnp.float32), (h * 1.0).astype(jnp.float32),
                                     (x + jnp.zeros((), jnp.bfloat16).astype(jnp.float32)) * 7,
                                     (x + jnp.zeros((8, 4)).T) * 8,
                                     (x - jax.jit(lambda: jnp.zeros(()))()) * 9),
                       [_floats((4, 8)), _floats((4, 8), jnp.bfloat16)]),
    # StableHLO folds the sign of a constant, sign(-0.0) to +0.0 (found at
    # seed 5333 of the random functions); not a NaN's.
    "constant signs": (lambda x: (x * jnp.sign(jnp.full((4, 8), -0.0)), x * jnp.sign(-0.0),
                                  x * jnp.sign(jnp.bfloat16(-0.0)).astype(jnp.float32),
                                  x - jnp.sign(-3.0), x * jnp.sign(jnp.float32(jnp.nan)),
                                  x * jnp.sign(jnp.int32(-5)).astype(jnp.float32)),
                       [_floats((4, 8))]),
    "integers": (lambda a, b: (a // b, a % b, a >> 3, lax.shift_right_logical(a, 2),
                               a << 1, ~a, a & b | (a ^ b), lax.clz(a),
                               lax.population_count(a), jnp.abs(a), jnp.sign(b),
                               jnp.maximum(a, b), a < b),
                 [_ints((8, 32)), _ints((8, 32), seed=1) | 1]),
    "unsigned and pred": (lambda a, b: (a < 200, a // b, jnp.logical_and(a > 9, a < 99),
                                        (a > 5).astype(jnp.float32), a.astype(jnp.int16)),
                          [_ints((64,), jnp.uint8), _ints((64,), jnp.uint8, seed=2) | 1]),
    "select and clamp": (lambda x, y: (jnp.where(x > y, x, 2.0), jnp.where(True, x, y),
                                       lax.clamp(-1.0, x, 1.0), jnp.clip(y, 0.0)),
                         [_floats((8, 40)), _floats((8, 40), seed=3)]),
    "reductions": (lambda x: (jnp.sum(x, 1), jnp.max(x, 1), jnp.min(x, 1), jnp.prod(x, 1)),
                   [_floats((16, 64))]),
    "softmax": (jax.nn.softmax, [_floats((32, 48))]),
    "cumulative reductions": (lambda x: (lax.cumsum(x, 0), lax.cumsum(x, 1, reverse=True),
                                         lax.cumprod(x, 1), lax.cummax(x, 0, reverse=True),
                                         lax.cummin(x, 1), jnp.cumsum(x)),
                              [_floats((8, 16))]),
    "integer cumulative reductions": (lambda a: (jnp.cumsum(a, 0), lax.cummax(a, 1)),
                                      [_ints((8, 16))]),
    # NaN wins; of equal values, the first.
    "arg reductions": (lambda x, t: (jnp.argmax(x, 1), jnp.argmin(x, 1), jnp.argmax(t, 1),
                                     jnp.argmin(-t, 1)),
                       [_floats((16, 24)), jnp.round(_floats((16, 24), seed=7))]),
    "integer arg reductions": (lambda a: (jnp.argmax(a, 0), jnp.argmin(a, 0)),
                               [_ints((8, 16)) % 5]),
    "boolean reductions": (lambda x: (jnp.any(x > 1, 0), jnp.all(x < 1, 0)),
                           [_floats((24, 40))]),
    "column sum s32": (lambda a: jnp.sum(a, 0), [_ints((64, 32))]),
    "broadcasts": (lambda x, r: (x + lax.iota(jnp.float32, 8)[:, None],
                                 x * r[None, :] + jnp.broadcast_to(x[:, :1], x.shape)),
                   [_floats((8, 40)), _floats((40,), seed=4)]),
    "layout ops": (lambda x: (x.T * 2, jnp.flip(x, 1) + 1, x.reshape(4, 80) - 1,
                              jnp.squeeze(x[None]) * 3),
                   [_floats((8, 40))]),
    "slices, pads, concatenates": (lambda x: jnp.concatenate(
        [x[1:7:2, ::3], lax.pad(x[:3, :14], 0.5, ((0, 0, 0), (-1, -1, 0))),
         lax.pad(x[:3, :7], -1.0, ((0, 0, 0), (0, 0, 1)))], 1),
        [_floats((8, 40))]),
    # (Each group's outputs have one element count: a loop fusion's must.)
    "dynamic slices": (lambda x, i: (lax.dynamic_slice(x, (i, 0), (2, 40)),
                                     lax.dynamic_slice(x, (7, 0), (2, 40)) * 2,
                                     lax.dynamic_slice(x, (i, -1), (2, 40)) - 1),
                       [_floats((8, 40)), jnp.int32(5)]),
    "indexed rows": (lambda x, i: (x[i], x[-1] + 1, x[i - 9] * 3),
                     [_floats((8, 40)), jnp.int32(3)]),
    "dynamic update slices": (lambda x, u, i: (lax.dynamic_update_slice(x, u, (i, 0)),
                                               lax.dynamic_update_slice(x, u * 2, (9, 0))),
                              [_floats((8, 40)), _floats((2, 40), seed=5), jnp.int32(-3)]),
    "an update in place": (lambda cache, new, pos:
                           lax.dynamic_update_slice(cache, new, (0, pos, 0)),
                           [_floats((4, 64, 16), jnp.bfloat16),
                            _floats((4, 1, 16), jnp.bfloat16, seed=6), jnp.int32(17)]),
    "converts": (lambda x: (x.astype(jnp.bfloat16), x.astype(jnp.int32), x.astype(jnp.uint8),
                            x.astype(jnp.float16).astype(jnp.float32) - x, x.astype(bool),
                            x.astype(jnp.int8).astype(bool)),
                 [_floats((8, 40))]),
    "calls": (lambda x: (jax.nn.relu(x), jax.jit(lambda v: v * v + 1)(x), _clipped(x),
                         jax.nn.gelu(x)),
              [_floats((8, 40))]),
    "closed-over constants": (lambda x: x * small_array + jnp.float32(2.5),
                              [_floats((8, 3))]),
}


def _assert_same_kernels(fn, args, name: str) -> None:
    """`fn`'s kernel from its jaxpr and from jax's lowering give the same
    bits on `args`."""
    traced = jax.jit(fn, keep_unused=True).trace(*args)
    text = hlo_from_jaxpr(traced.jaxpr, name)
    assert text is not None, f"{name} should take the jaxpr path"
    ours = _kernel(text)(*args)
    jaxs = _kernel(traced.lower().as_text(dialect="hlo"))(*args)
    assert len(ours) == len(jaxs)
    for k, (a, b) in enumerate(zip(ours, jaxs)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(_bits(a), _bits(b),
                                      err_msg=f"{name}: output {k}\n{traced.jaxpr}\n{text}")


@pytest.mark.parametrize("name", list(CASES))
def test_the_kernel_from_the_jaxpr_is_the_kernel_from_jax_lowering(name):
    fn, args = CASES[name]
    _assert_same_kernels(fn, args, name)


def test_a_constant_operand_goes_to_the_right_as_in_jax_hlo():
    # StableHLO's canonicalization, which jax's HLO carries: a commutative
    # op's constant operand on the right, a comparison mirrored.
    x = jax.ShapeDtypeStruct((4,), jnp.float32)
    for fn, opcode, direction in [(lambda v: jnp.maximum(0.0, v), "maximum", None),
                                  (lambda v: 0.0 < v, "compare", "GT"),
                                  (lambda v: 1.0 >= v, "compare", "LE"),
                                  (lambda v: 2.0 - v, "subtract", None)]:
        root = parse_hlo(hlo_from_jaxpr(jax.jit(fn).trace(x).jaxpr)).entry.root
        assert root.opcode == opcode
        first, second = root.operands
        swapped = opcode != "subtract"
        assert (first.opcode == "parameter") == swapped
        assert (second.opcode == "parameter") != swapped
        if direction:
            assert root.attr("direction") == direction


@pytest.mark.parametrize("fn, args", [
    (lambda x: lax.exp(x, accuracy=lax.AccuracyMode.HIGHEST), [_floats((8,))]),
    (lambda x, y: x @ y, [_floats((4, 4)), _floats((4, 4))]),       # a dot
    (lambda x: lax.cumlogsumexp(x, 0), [_floats((8, 4))]),
    (lambda x: jnp.sort(x, 0), [_floats((8, 4))]),
    (lambda x: x, [_floats((8,))]),                                 # an input as output
    (lambda x: (x + 1, jnp.float32(2.0)), [_floats((8,))]),         # a constant output
    (lambda x: x * np.arange(2048, dtype=np.float32), [_floats((2048,))]),  # a large constant
    (lambda x: x * (1 + 2j), [_floats((8,))]),                      # complex
])
def test_what_only_jax_lowering_writes_is_declined(fn, args):
    assert hlo_from_jaxpr(jax.jit(fn).trace(*args).jaxpr) is None


def test_jax_lowers_cumsum_its_own_way_on_gpus():
    # A reduce-window on the CPU (written here), _cumred_gpu_lowering on
    # GPUs (left to jax); cummax is a reduce-window on both.
    x = jax.ShapeDtypeStruct((8, 4), jnp.float32)
    cumsum = jax.jit(lambda v: lax.cumsum(v, 1)).trace(x).jaxpr
    cummax = jax.jit(lambda v: lax.cummax(v, 1)).trace(x).jaxpr
    assert "reduce-window" in hlo_from_jaxpr(cumsum, platform="cpu")
    assert hlo_from_jaxpr(cumsum, platform="cuda") is None
    assert "reduce-window" in hlo_from_jaxpr(cummax, platform="cuda")


def test_a_declined_function_still_runs_through_jax_lowering():
    x = _floats((16,))

    def cumlogsumexp(v):
        return lax.cumlogsumexp(v) * 2.0

    np.testing.assert_allclose(kernel(cumlogsumexp)(x), cumlogsumexp(x), rtol=2e-6)


def test_a_refused_kernel_from_the_jaxpr_still_names_the_line():
    # The jaxpr path writes it; the emitters refuse it (two reductions of
    # different output sizes); the error comes from jax's HLO, with the
    # user's line.
    from xla_gpu.jax import KernelError

    def sums(v):
        return jnp.sum(v, 1), jnp.sum(v, 0)

    x = _floats((4, 6))
    assert hlo_from_jaxpr(jax.jit(sums).trace(x).jaxpr) is not None
    with pytest.raises(KernelError, match=r"sums: .*reduce.*\(at .*test_jax_from_jaxpr\.py:\d+"):
        kernel(sums)(x)


def test_a_jaxpr_hlo_that_does_not_parse_is_said_and_lowered_by_jax(monkeypatch, caplog):
    # A fault of from_jaxpr's costs the user the fast path, not the kernel.
    import logging

    from xla_gpu.jax import decorator

    monkeypatch.setattr(decorator, "hlo_from_jaxpr",
                        lambda closed, name, platform:
                        "HloModule broken\nENTRY main {\n  x = f32[4 oops\n}\n")
    x = _floats((4,))

    def twice(v):
        return v * 2.0 + 0.25

    with caplog.at_level(logging.WARNING, logger="xla_gpu.jax"):
        np.testing.assert_array_equal(kernel(twice)(x), twice(x))
    assert any("does not parse" in r.getMessage() and "twice" in r.getMessage()
               for r in caplog.records)


# --- random functions ----------------------------------------------------------

_FLOAT_LITERALS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, np.inf, -np.inf]
_INT_LITERALS = [0, 1, -1, 3, 7]


def _random_expr(rng: np.random.Generator, leaves: int, literals, unary, binary, other):
    """A random expression of depth 4 over env[0:leaves]: leaves, a binary
    op with a literal on either side, unary and binary ops, and
    `other(rng, expr, depth)`'s (reductions, layout ops)."""
    def expr(depth):
        kind = rng.integers(0, 5) if depth > 0 else rng.integers(0, 2)
        if kind == 0:
            leaf = int(rng.integers(0, leaves + 1))
            if leaf == leaves:  # a constant array (jax stages it; StableHLO folds with it)
                value = rng.choice(literals).item()
                return lambda env: jnp.full((4, 8), value, env[0].dtype)
            return lambda env: env[leaf]
        if kind == 1:
            value = rng.choice(literals).item()
            sub = expr(depth - 1) if depth > 0 else (lambda env: env[0])
            op = binary[int(rng.integers(0, len(binary)))]
            left = bool(rng.integers(0, 2))
            return (lambda env: op(value, sub(env))) if left else (lambda env: op(sub(env), value))
        if kind == 2:
            op = unary[int(rng.integers(0, len(unary)))]
            sub = expr(depth - 1)
            return lambda env: op(sub(env))
        if kind == 3:
            op = binary[int(rng.integers(0, len(binary)))]
            a, b = expr(depth - 1), expr(depth - 1)
            return lambda env: op(a(env), b(env))
        return other(rng, expr, depth)

    return expr(4)


def _float_reduction_or_layout(rng, expr, depth):
    """A row reduction kept to [4, 1], or a layout op of two [4, 8] values."""
    if rng.integers(0, 2):
        sub = expr(depth - 1)
        reduce = [jnp.sum, jnp.max, jnp.min,
                  lambda v, **kw: jnp.argmax(v, **kw).astype(v.dtype),
                  lambda v, **kw: jnp.argmin(v, **kw).astype(v.dtype)][int(rng.integers(0, 5))]
        return lambda env: reduce(jnp.broadcast_to(sub(env), (4, 8)), axis=1, keepdims=True)
    a, b = expr(depth - 1), expr(depth - 1)
    fill = float(rng.choice(_FLOAT_LITERALS))
    layout = [lambda u, v: (u.T * 2 + v.T).T, lambda u, v: jnp.flip(u, 1) - v,
              lambda u, v: u.reshape(8, 4).reshape(4, 8) * v,
              lambda u, v: jnp.concatenate([u[:, :3], v[:, 3:]], 1),
              lambda u, v: lax.pad(u[:, 1:7], u.dtype.type(fill), ((0, 0, 0), (1, 1, 0))) + v,
              lambda u, v: jnp.concatenate([u[:, ::2], v[:, 1::2]], 1),
              lambda u, v: lax.pad(u[:, :4], u.dtype.type(fill), ((0, 0, 0), (0, 1, 1))) / v,
              lambda u, v: lax.cumsum(u, 1) + v,
              lambda u, v: lax.cummax(u, 0, reverse=True) - v][int(rng.integers(0, 9))]
    return lambda env: layout(jnp.broadcast_to(a(env), (4, 8)), jnp.broadcast_to(b(env), (4, 8)))


def _random_float_fn(rng: np.random.Generator):
    """A random jax function of x: [4, 8], y: [8], z: [4, 1] (one dtype):
    elementwise ops, literals on either side, broadcasts, row reductions
    kept to [4, 1], transposes, reshapes, slices, pads, concatenates."""
    unary = [lambda a: -a, jnp.abs, jnp.exp, jnp.tanh, jnp.sin, jnp.floor, jnp.sign,
             lambda a: jnp.sqrt(jnp.abs(a)), lambda a: jnp.log1p(jnp.abs(a)), jax.nn.sigmoid,
             jnp.exp2, jnp.square, lambda a: a ** 3, jnp.round]
    binary = [jnp.add, jnp.subtract, jnp.multiply, jnp.divide, jnp.maximum, jnp.minimum,
              lambda a, b: jnp.where(a > b, a, b), lambda a, b: jnp.where(a <= b, b * 2, a)]
    body = _random_expr(rng, 4, np.array(_FLOAT_LITERALS), unary, binary,
                        _float_reduction_or_layout)

    def fn(x, y, z):
        return jnp.broadcast_to(body([x, y[None, :], z, x * 0.5]), (4, 8)) * 1.5

    return fn


@pytest.mark.parametrize("seed", random_seeds(64, share=2))
def test_random_function_from_the_jaxpr_is_the_kernel_from_jax_lowering(seed):
    rng = np.random.default_rng(seed)
    dtype = [jnp.float32, jnp.bfloat16][seed % 2]
    args = [_floats((4, 8), dtype, seed), _floats((8,), dtype, seed + 1),
            _floats((4, 1), dtype, seed + 2)]
    _assert_same_kernels(_random_float_fn(rng), args, f"random_{seed}")


def _truncating_divide(a, b):
    """lax.div (XLA's divide: toward zero), of an odd divisor."""
    t = jnp.result_type(a, b)
    return lax.div(lax.convert_element_type(a, t), lax.convert_element_type(b, t) | 1)


def _int_reduction(rng, expr, depth):
    """A column reduction kept to [1, 8]."""
    sub = expr(depth - 1)
    reduce = [jnp.sum, jnp.max][int(rng.integers(0, 2))]
    return lambda env: reduce(jnp.broadcast_to(sub(env), (4, 8)), axis=0, keepdims=True)


def _random_int_fn(rng: np.random.Generator):
    """As _random_float_fn, of integers: arithmetic (XLA's division and
    remainder by zero included), shifts, bitwise ops, comparisons."""
    unary = [lambda a: -a, jnp.abs, jnp.sign, jnp.invert, lambda a: a * a,
             lambda a: a >> 2, lambda a: a << 3]
    binary = [jnp.add, jnp.subtract, jnp.multiply, jnp.floor_divide, jnp.remainder,
              jnp.maximum, jnp.minimum, jnp.bitwise_and, jnp.bitwise_or, jnp.bitwise_xor,
              lambda a, b: jnp.where(a > b, a, b), _truncating_divide]
    body = _random_expr(rng, 3, np.array(_INT_LITERALS), unary, binary, _int_reduction)

    def fn(x, y, z):
        return jnp.broadcast_to(body([x, y[None, :], z]), (4, 8)) + 1

    return fn


@pytest.mark.parametrize("seed", random_seeds(64, share=4))
def test_random_integer_function_from_the_jaxpr_is_the_kernel_from_jax_lowering(seed):
    rng = np.random.default_rng(seed)
    dtype = [jnp.int32, jnp.uint8, jnp.int8, jnp.int16][seed % 4]
    args = [_ints((4, 8), dtype, seed), _ints((8,), dtype, seed + 1),
            _ints((4, 1), dtype, seed + 2)]
    _assert_same_kernels(_random_int_fn(rng), args, f"random_int_{seed}")

"""Random loop fusions against XLA: chains of elementwise ops, converts,
compares, selects and indexing ops (reverse, transpose, slice+pad,
slice+concatenate, reshape, broadcast) over every integer and float type
the emitters have, each run on the CPU target and by XLA:CPU on the same
random inputs. Seeded: a failure names its seed, and `fusion_text(seed)`
gives the HLO to reproduce it with test-correctness. And fusions over rows
of more than 1024 elements run as the CPU target's own kernels
(`long_row_fusion_text`: its row launches, since stop 83).

The ops are those whose results are exact in both (no transcendentals),
so every type must match bit for bit -- but f32, where XLA:CPU contracts a
multiply and an add into an FMA (1e-5). Left out where XLA:CPU differs
from the HLO semantics we implement: popcnt/count-leading-zeros of s4
(XLA:CPU counts the bits of the sign-extended byte) and sign/abs of
unsigned types (StableHLO rejects them), and an integer converted to
f8e4m3fn and that straight to u16 or u32: where the integer is past
f8e4m3fn's range (a NaN), XLA:CPU gives the unsigned maximum for the
positive ones, where every other path of its (a float source, a signed or
u8 result, an op between the converts) gives 0 for the NaN as HLO's
semantics say, as ours does. Two rewrites of XLA's algebraic simplifier
are right for reals but not for integers: `a / power(b, c)` made
`a * power(b, -c)` (power(3, -2) is 0: 9 / 9 gave 0) and `abs(a * a)`
made `a * a` (a square that wraps is negative); and for floats
`a / broadcast(b)` becomes `a * broadcast(1 / b)`, two roundings where
the HLO has one (f16 quotients 1 ulp off, where ours are the correctly
rounded ones; seed 12187), and `a / (b / c)` becomes `(a * c) / b`
(f16 quotients 1 ulp off, where ours round as the HLO's ops do; seed
15416). And an integer division
of values that fold to constants (`x ^ x` is 0) is left out: compiling it
(the StableHLO the reference goes through; with every HLO pass off too)
XLA divides 0 by 0 itself, and the process dies of SIGFPE. All were found
past the seeds CI runs (5483, 5571, 6025, 12187, 15416).

`XLA_GPU_RANDOM_SEEDS=N` runs N seeds (default 64; `make fuzz` runs more),
from `XLA_GPU_RANDOM_SEED_BASE` on (default 0).
"""

import random

import numpy as np
import pytest
from mlir import ir

from xla_gpu.emitters import emit_fusion, emit_kernel, find_fusion, shareable_operands
from xla_gpu.hlo import parse_hlo
from xla_gpu.reference import run_with_xla
from xla_gpu.runtime import CpuKernel
from xla_gpu.tools.test_correctness import errors, random_input, reference_text

from conftest import random_seeds

FLOATS = ["f32", "bf16", "f16", "f8e4m3fn", "f8e5m2"]
INTEGERS = ["s32", "u8", "s8", "u32", "s16", "s4", "u16"]
FLOAT_UNARY = ["negate", "abs", "floor", "ceil", "sign", "sqrt", "round-nearest-even",
               "round-nearest-afz"]
FLOAT_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum"]
INT_UNARY = ["negate", "abs", "not", "popcnt", "count-leading-zeros", "sign"]
INT_BINARY = ["add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum",
              "and", "or", "xor", "shift-left", "shift-right-logical",
              "shift-right-arithmetic", "power"]
SHAPE = "[3,11]"


def _indexing(r: random.Random, name: str, a: str, t: str) -> list[str]:
    """`name`, of the fusion's shape, made of `a` through indexing ops."""
    pattern = r.randrange(6)
    if pattern == 0:
        dims = r.choice(["0", "1", "0,1"])
        return [f"{name} = {t}{SHAPE} reverse({a}), dimensions={{{dims}}}"]
    if pattern == 1:
        return [f"{name}t = {t}[11,3] transpose({a}), dimensions={{1,0}}",
                f"{name}r = {t}[11,3] reverse({name}t), dimensions={{0}}",
                f"{name} = {t}{SHAPE} transpose({name}r), dimensions={{1,0}}"]
    if pattern == 2:
        return [f"{name}s = {t}[3,5] slice({a}), slice={{[0:3], [2:7]}}",
                f"{name}z = {t}[] constant(1)",
                f"{name} = {t}{SHAPE} pad({name}s, {name}z), padding=0_0x3_3"]
    if pattern == 3:
        return [f"{name}a = {t}[3,4] slice({a}), slice={{[0:3], [0:4]}}",
                f"{name}b = {t}[3,7] slice({a}), slice={{[0:3], [4:11]}}",
                f"{name} = {t}{SHAPE} concatenate({name}b, {name}a), dimensions={{1}}"]
    if pattern == 4:
        return [f"{name}f = {t}[33] reshape({a})",
                f"{name}v = {t}[33] reverse({name}f), dimensions={{0}}",
                f"{name} = {t}{SHAPE} reshape({name}v)"]
    return [f"{name}c = {t}[3,1] slice({a}), slice={{[0:3], [5:6]}}",
            f"{name}d = {t}[3] reshape({name}c)",
            f"{name} = {t}{SHAPE} broadcast({name}d), dimensions={{0}}"]


def _unary_ops(t: str) -> list[str]:
    if t in FLOATS:
        return FLOAT_UNARY
    return [op for op in INT_UNARY
            if not (t.startswith("u") and op in ("sign", "abs"))
            and not (t == "s4" and op in ("popcnt", "count-leading-zeros"))]


def fusion_text(seed: int) -> tuple[str, str]:
    """A random one-output loop fusion (HLO text) and its element type."""
    r = random.Random(seed)
    params = [(f"p{i}", r.choice(FLOATS + INTEGERS)) for i in range(3)]
    lines = [f"{n} = {t}{SHAPE} parameter({i})" for i, (n, t) in enumerate(params)]
    values = list(params)
    # What XLA:CPU's quirks and bugs (the docstring) are steered around by:
    narrowed_to_f8 = set()  # f8e4m3fn values converted from integers
    powers, squares = set(), set()  # integer power(a, b) and a * a results
    constants = set()  # values that fold to constants (a ^ a)
    broadcasts = set()  # float broadcasts (a divisor XLA:CPU inverts)
    quotients = set()  # float quotients (a divisor XLA:CPU takes apart)
    for k in range(8):
        name = f"v{k}"
        a, t = r.choice(values)
        same = [v for v, vt in values if vt == t]
        kind = r.random()
        preds = [v for v, vt in values if vt == "pred"]
        operands = [a]
        if kind < 0.2:
            source, t = t, r.choice(FLOATS + INTEGERS + ["pred"])
            if a in narrowed_to_f8 and t in ("u16", "u32"):
                t = "s" + t[1:]
            if source in INTEGERS and t == "f8e4m3fn":
                narrowed_to_f8.add(name)
            lines.append(f"{name} = {t}{SHAPE} convert({a})")
        elif kind < 0.3:
            direction = r.choice(["LT", "EQ", "GE", "NE"])
            operands.append(r.choice(same))
            lines.append(f"{name} = pred{SHAPE} compare({a}, {operands[1]}), "
                         f"direction={direction}")
            t = "pred"
        elif kind < 0.4 and preds:
            operands += [r.choice(preds), r.choice(same)]
            lines.append(f"{name} = {t}{SHAPE} select({operands[1]}, {a}, {operands[2]})")
        elif kind < 0.55:
            lines += _indexing(r, name, a, t)
            if t in FLOATS and " broadcast(" in lines[-1]:
                broadcasts.add(name)
        elif t == "pred":
            lines.append(f"{name} = pred{SHAPE} not({a})")
        elif r.random() < 0.5:
            op = r.choice(_unary_ops(t))
            if op == "abs" and a in squares:
                op = "negate"
            lines.append(f"{name} = {t}{SHAPE} {op}({a})")
        else:
            op = r.choice(FLOAT_BINARY if t in FLOATS else INT_BINARY)
            b = r.choice(same)
            operands.append(b)
            if (op == "divide" and (b in powers or b in broadcasts or b in quotients) or
                    op in ("divide", "remainder") and {a, b} <= constants):
                op = "multiply"
            if t in FLOATS and op == "divide":
                quotients.add(name)
            if t in INTEGERS and op == "power":
                powers.add(name)
            if t in INTEGERS and op == "multiply" and a == b:
                squares.add(name)
            if t in INTEGERS and op in ("xor", "subtract") and a == b:
                constants.add(name)
            lines.append(f"{name} = {t}{SHAPE} {op}({a}, {b})")
        if set(operands) <= constants:
            constants.add(name)
        values.append((name, t))
    root, root_type = values[-1]
    lines[-1] = "ROOT " + lines[-1]
    body = "\n".join(f"  {line}" for line in lines)
    entry = "\n".join(f"  {line}" for line in lines[:len(params)])
    operands = ", ".join(n for n, _ in params)
    text = (f"HloModule random_{seed}\n\nfused {{\n{body}\n}}\n\nENTRY main {{\n{entry}\n"
            f"  ROOT f = {root_type}{SHAPE} fusion({operands}), kind=kLoop, calls=fused\n}}\n")
    return text, root_type


def _matches_xla(seed: int, text: str, root_type: str, make_kernel):
    """Runs `make_kernel(fusion)` (in a context) on fusion `text` over
    seeded random inputs and asserts XLA:CPU's results (f32 within its FMA
    contraction); the fusion, the inputs, the output and the random state."""
    fusion = find_fusion(parse_hlo(text))
    comp = fusion.fused_computation
    rng = np.random.RandomState(seed)
    inputs = [random_input(p.shape, rng) for p in comp.parameters]
    out = np.zeros(comp.root.shape.dims, comp.root.shape.element_type.dtype)
    with ir.Context():
        kernel = make_kernel(fusion)
    kernel(*inputs, out)
    (want,) = run_with_xla(reference_text(comp), inputs)
    diff, rel = errors(out, want)
    bound = 1e-5 if root_type == "f32" else 0
    ok = (diff <= bound) | (rel <= bound)
    assert ok.all(), f"seed {seed}: {int((~ok).sum())} elements differ\n{text}"
    return fusion, inputs, out, rng


@pytest.mark.parametrize("seed", random_seeds(64))
def test_random_fusion_matches_xla(seed):
    text, root_type = fusion_text(seed)
    fusion, inputs, out, rng = _matches_xla(seed, text, root_type,
                                            lambda f: CpuKernel(str(emit_fusion(f))))
    # Written over an operand's buffer (xla_gpu.jax.jit's buffer sharing),
    # the kernel reads and writes one buffer: the same bits.
    shareable = shareable_operands(fusion)
    if shareable:
        k = shareable[rng.randint(len(shareable))]
        with ir.Context():
            in_place = CpuKernel(emit_kernel(fusion, shared_operand=k).text)
        again = np.zeros_like(out)
        in_place(*inputs, again)
        np.testing.assert_array_equal(again.view(np.uint8), out.view(np.uint8),
                                      err_msg=f"seed {seed}, over operand {k}")


# The element types of the long-row fusions (long_row_fusion_text).
LONG_ROW_TYPES = ["f32", "bf16", "f16", "f64", "s8", "u8", "s16", "s32"]


def long_row_fusion_text(seed: int) -> tuple[str, str]:
    """A random loop fusion over rows of more than 1024 elements, the CPU
    target's own launches (loop.host_row_launch: a block a row, a thread's
    2-5 elements next to each other and folded into up to 4096 threads,
    those past an odd row idle, or apart past 4096): a reverse, a pad of a
    slice, a concatenate, a row's broadcast value, shifted slices or a pad
    of a reversed strided slice along the rows, then an op with the input;
    and its element type."""
    r = random.Random(seed)
    t = r.choice(LONG_ROW_TYPES)
    rows = r.choice([3, 4, 5, 7, 8])
    c = r.choice([1025, 1026, 1100, 1536, 2048, 2049, 2999, 3000, 4096, 4097, 5001])
    s = f"[{rows},{c}]"
    half = (c + 1) // 2
    lines = {
        0: [f"a = {t}{s} reverse(p0), dimensions={{1}}"],
        1: [f"x = {t}[{rows},{c - 3}] slice(p0), slice={{[0:{rows}], [1:{c - 2}]}}",
            f"z = {t}[] constant(1)", f"a = {t}{s} pad(x, z), padding=0_0x2_1"],
        2: [f"x = {t}[{rows},{(k := r.randrange(1, c))}] slice(p0), slice={{[0:{rows}], [0:{k}]}}",
            f"y = {t}[{rows},{c - k}] slice(p0), slice={{[0:{rows}], [{k}:{c}]}}",
            f"a = {t}{s} concatenate(y, x), dimensions={{1}}"],
        3: [f"b = {t}{s} broadcast(p1), dimensions={{0}}", f"a = {t}{s} subtract(p0, b)"],
        4: [f"x = {t}[{rows},{c - 2}] slice(p0), slice={{[0:{rows}], [0:{c - 2}]}}",
            f"y = {t}[{rows},{c - 2}] slice(p0), slice={{[0:{rows}], [2:{c}]}}",
            f"d = {t}[{rows},{c - 2}] add(x, y)", f"z = {t}[] constant(0)",
            f"a = {t}{s} pad(d, z), padding=0_0x0_2"],
        5: [f"x = {t}[{rows},{half}] slice(p0), slice={{[0:{rows}], [0:{c}:2]}}",
            f"v = {t}[{rows},{half}] reverse(x), dimensions={{0}}", f"z = {t}[] constant(0)",
            f"a = {t}{s} pad(v, z), padding=0_0x{c - half}_0"],
    }[r.randrange(6)]
    op = r.choice(["maximum", "add", "multiply"])
    body = "\n  ".join([f"p0 = {t}{s} parameter(0)", f"p1 = {t}[{rows}] parameter(1)", *lines,
                        f"ROOT o = {t}{s} {op}(a, p0)"])
    return (f"HloModule long_rows\n\nfused {{\n  {body}\n}}\n\nENTRY e {{\n"
            f"  p0 = {t}{s} parameter(0)\n  p1 = {t}[{rows}] parameter(1)\n"
            f"  ROOT f = {t}{s} fusion(p0, p1), kind=kLoop, calls=fused\n}}\n"), t


@pytest.mark.parametrize("seed", random_seeds(24))
def test_random_long_row_fusion_matches_xla(seed):
    """The CPU target's own kernel (emit_kernel(host=True)) of a random
    fusion over rows of more than 1024 elements gives XLA:CPU's bits (f32
    within its FMA contraction)."""
    from xla_gpu.emitters.fusion_analysis import host_short_rows

    def host_kernel(fusion):
        with host_short_rows():
            return CpuKernel(emit_kernel(fusion, host=True))

    text, t = long_row_fusion_text(seed)
    _matches_xla(seed, text, t, host_kernel)

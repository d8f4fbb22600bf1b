"""Random hero fusions against XLA: reductions (row, multi-row, column,
small column, to a scalar, argmax, several reductions, side outputs,
epilogues), transposes (021, 210, 102, 10, side outputs, epilogues),
scatters, concatenates and in-place dynamic-update-slices, each behind a
random elementwise prologue, emitted by our emitters, run on the CPU
target and compared with XLA:CPU on the same random inputs (its own code:
its library fusions off, see the test). Seeded: a
failure names its seed, and `hero_fusion_text(seed)` gives the HLO to
reproduce it with test-correctness.

Every result is exact, so every output must match bit for bit (f32
elementwise prologues excepted: XLA:CPU contracts multiply + add into an
FMA, 1e-5): reductions use reducers whose result does not depend on the
order (integer add/multiply/and/or/xor/max/min wrap exactly; float
max/min; f32 add over integer-valued inputs whose sums stay below 2^24;
argmax with ties broken to the smaller index), scatters combine with
integer add or max/min, reduce inits are the reducer's identity.

`XLA_GPU_RANDOM_SEEDS=N` runs N seeds (default 40; `make fuzz` runs more),
from `XLA_GPU_RANDOM_SEED_BASE` on (default 0).
"""

import dataclasses
import os
import random
import re
from collections import Counter

import numpy as np
import pytest
from mlir import ir

from xla_gpu.emitters import emit_fusion, find_fusion
from xla_gpu.emitters.elemental import EmitterError
from xla_gpu.emitters.fusion_analysis import EmitterKind, analyze_fusion
from xla_gpu.hlo import parse_hlo
from xla_gpu.reference import XlaCpuExecutable
from xla_gpu.runtime import CPU_DEFAULT_OPTIONS, CpuKernel
from xla_gpu.tools.test_correctness import errors, random_input, reference_text

from conftest import random_seeds

SEEDS = int(os.environ.get("XLA_GPU_RANDOM_SEEDS", "40"))

# Every lowering of the CPU target, whatever the host: its transposing
# writes too (the default only where the host has 512-bit vectors), with
# the CPU's unroll budget (a write phase of 8 steps stays their loop).
OPTIONS = dataclasses.replace(CPU_DEFAULT_OPTIONS, transposing_writes=True)

FLOATS = ["f32", "bf16", "f16"]
INTEGERS = ["s32", "u32", "s16", "u16", "s8", "u8"]
INT_UNARY = ["negate", "not", "popcnt", "count-leading-zeros"]
INT_BINARY = ["add", "subtract", "multiply", "and", "or", "xor", "maximum", "minimum",
              "divide", "remainder", "shift-left", "shift-right-logical"]
FLOAT_UNARY = ["negate", "abs", "floor", "ceil", "sqrt", "round-nearest-even"]
# No divide: XLA's algebraic simplifier rewrites a / (b / c) as (a * c) / b,
# which rounds differently from the HLO as written (what we emit).
FLOAT_BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]
# Float ops that keep small integers small integers (exact sums).
SMALL_INT_FLOAT_UNARY = ["negate", "abs", "floor"]
SMALL_INT_FLOAT_BINARY = ["add", "subtract", "maximum", "minimum"]

REDUCERS_INT = ["add", "multiply", "and", "or", "xor", "maximum", "minimum"]
REDUCERS_FLOAT = ["maximum", "minimum"]

IDENTITY = {"add": "0", "or": "0", "xor": "0", "multiply": "1",
            "maximum": "lowest", "minimum": "highest", "and": "-1"}


def _identity(op: str, t: str) -> str:
    v = IDENTITY[op]
    if v == "lowest":
        return "-inf" if t in FLOATS else str(-(1 << (int(t[1:]) - 1)) if t[0] == "s" else 0)
    if v == "highest":
        if t in FLOATS:
            return "inf"
        bits = int(t[1:])
        return str((1 << (bits - 1)) - 1 if t[0] == "s" else (1 << bits) - 1)
    if v == "-1" and t[0] == "u":
        return str((1 << int(t[1:])) - 1)
    return v


def _dims(shape: tuple[int, ...]) -> str:
    return "[" + ",".join(map(str, shape)) + "]"


class _Builder:
    """Lines of one fused computation and its parameters."""

    def __init__(self, r: random.Random):
        self.r = r
        self.lines: list[str] = []
        self.params: list[tuple[str, str, tuple[int, ...]]] = []
        self.count = 0

    def name(self, prefix: str = "v") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def param(self, t: str, shape: tuple[int, ...]) -> str:
        n = f"p{len(self.params)}"
        self.lines.append(f"{n} = {t}{_dims(shape)} parameter({len(self.params)})")
        self.params.append((n, t, shape))
        return n

    def add(self, t: str, shape: tuple[int, ...] | None, rhs: str, prefix: str = "v") -> str:
        """A new instruction `rhs` of type `t` + `shape` (`shape` None: `t`
        is the whole type, e.g. a tuple)."""
        n = self.name(prefix)
        self.lines.append(f"{n} = {t}{'' if shape is None else _dims(shape)} {rhs}")
        return n

    def chain(self, value: str, t: str, shape: tuple[int, ...], steps: int,
              nan_free: bool = False) -> str:
        """`steps` random elementwise ops from `value`, the second operand
        now and then a fresh parameter; the last value. `nan_free`: no op
        that makes NaNs of the inputs (sqrt)."""
        r = self.r
        unary, binary = (FLOAT_UNARY, FLOAT_BINARY) if t in FLOATS else (INT_UNARY, INT_BINARY)
        if nan_free:
            unary = [op for op in unary if op != "sqrt"]
        values = [value]
        for _ in range(steps):
            a = r.choice(values)
            if r.random() < 0.4:
                values.append(self.add(t, shape, f"{r.choice(unary)}({a})"))
            else:
                op = r.choice(binary)
                # A divisor is a parameter: XLA:CPU (jaxlib 0.10.2) folds
                # s16 divide(x - x, x - x) to 0 / 0 and dies of SIGFPE.
                fresh = r.random() < 0.3 or op in ("divide", "remainder")
                other = self.param(t, shape) if fresh else r.choice(values)
                # No float square: XLA's algebraic simplifier makes
                # sqrt(x * x) |x| (through abs and transposes between),
                # right for reals, not where x * x overflows (f16 past
                # |x| = 256: ours inf, as the HLO says, XLA:CPU's 17.3;
                # seed 3217, past the seeds CI runs).
                if t in FLOATS and op == "multiply" and other == a:
                    op = "add"
                values.append(self.add(t, shape, f"{op}({a}, {other})"))
        return values[-1]

    def text(self, root: str, root_type: str, kind: str, reducers: list[str]) -> str:
        for i, line in enumerate(self.lines):
            if line.startswith(root + " "):
                self.lines[i] = "ROOT " + line
        body = "\n".join(f"  {line}" for line in self.lines)
        entry = "\n".join(f"  {n} = {t}{_dims(s)} parameter({i})"
                          for i, (n, t, s) in enumerate(self.params))
        operands = ", ".join(n for n, _, _ in self.params)
        return ("HloModule random_hero\n\n" + "".join(f"{c}\n\n" for c in reducers) +
                f"fused {{\n{body}\n}}\n\nENTRY main {{\n{entry}\n"
                f"  ROOT f = {root_type} fusion({operands}), kind={kind}, calls=fused\n}}\n")


def _reducer(op: str, t: str, name: str) -> str:
    return (f"{name} {{\n  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n"
            f"  ROOT r = {t}[] {op}(a, b)\n}}")


ARGMAX = """argmax {
  a = f32[] parameter(0)
  ai = s32[] parameter(1)
  b = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(a, b), direction=GT
  eq = pred[] compare(a, b), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  take = pred[] or(gt, tie)
  v = f32[] select(take, a, b)
  i = s32[] select(take, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}"""

# (input shape, reduced dimensions): row, multi-row, column, small column,
# to a scalar, batched rows, several dimensions.
REDUCTION_SHAPES = [
    ((8, 300), (1,)), ((4, 1024), (1,)), ((2, 4100), (1,)), ((16, 64), (1,)),
    ((256, 8), (1,)), ((128, 16), (1,)), ((512, 4), (1,)), ((100, 32), (1,)),
    ((300, 64), (0,)), ((64, 100), (0,)), ((1000, 8), (0,)), ((33, 256), (0,)),
    ((13, 100, 2), (1,)), ((11, 72, 8), (1,)), ((4, 256, 4), (1,)),
    ((1000,), (0,)), ((40, 50), (0, 1)), ((4, 16, 300), (2,)), ((6, 30, 40), (0, 2)),
]


def _exact_float_input(b: _Builder, shape) -> str:
    """A float value made of small integers: a converted s8 parameter and
    integer-valued ops (|v| <= 512: sums of 4100 of them are exact in f32)."""
    x = b.add("f32", shape, f"convert({b.param('s8', shape)})")
    for _ in range(b.r.randrange(3)):
        if b.r.random() < 0.5:
            x = b.add("f32", shape, f"{b.r.choice(SMALL_INT_FLOAT_UNARY)}({x})")
        else:
            y = b.add("f32", shape, f"convert({b.param('s8', shape)})")
            x = b.add("f32", shape, f"{b.r.choice(SMALL_INT_FLOAT_BINARY)}({x}, {y})")
    return x


def _reduction(r: random.Random) -> str:
    b = _Builder(r)
    shape, dims = r.choice(REDUCTION_SHAPES)
    kept = tuple(n for i, n in enumerate(shape) if i not in dims)
    dims_text = "{" + ",".join(map(str, dims)) + "}"
    choice = r.random()
    reducers, outputs = [], []
    if choice < 0.15:
        # argmax over the minor reduced dimension's positions.
        x = _exact_float_input(b, shape)
        io = b.add("s32", shape, f"iota(), iota_dimension={dims[-1]}")
        ninf = b.add("f32", (), "constant(-inf)")
        zero = b.add("s32", (), "constant(0)")
        red = b.add(f"(f32{_dims(kept)}, s32{_dims(kept)})", None,
                    f"reduce({x}, {io}, {ninf}, {zero}), dimensions={dims_text}, "
                    "to_apply=argmax", "r")
        v = b.add("f32", kept, f"get-tuple-element({red}), index=0")
        i = b.add("s32", kept, f"get-tuple-element({red}), index=1")
        reducers.append(ARGMAX)
        outputs = [(v, "f32", kept), (i, "s32", kept)]
    else:
        if r.random() < 0.6:
            t = r.choice(INTEGERS)
            x = b.chain(b.param(t, shape), t, shape, r.randrange(4))
            ops = REDUCERS_INT
        elif r.random() < 0.5:
            t = "f32"
            x = _exact_float_input(b, shape)
            ops = ["add", "maximum", "minimum"]
        else:
            # NaN-free: XLA:CPU's f32 max/min reductions drop NaNs (jaxlib
            # 0.10.2; its f16 ones and XLA:GPU propagate them, as the HLO
            # semantics and we do).
            t = r.choice(FLOATS)
            x = b.chain(b.param(t, shape), t, shape, r.randrange(4), nan_free=True)
            ops = REDUCERS_FLOAT
        # One or two reductions of the same input (a multi-output fusion).
        for k in range(1 + (r.random() < 0.25)):
            op = r.choice(ops)
            name = f"{op}_{t}_{k}"
            reducers.append(_reducer(op, t, name))
            init = b.add(t, (), f"constant({_identity(op, t)})")
            red = b.add(t, kept, f"reduce({x}, {init}), dimensions={dims_text}, "
                        f"to_apply={name}", "r")
            if r.random() < 0.4:
                # An elementwise epilogue.
                op2 = "negate" if t in FLOATS or t[0] == "s" else "not"
                red = b.add(t, kept, f"{op2}({red})", "e")
            outputs.append((red, t, kept))
        if r.random() < 0.3:
            # A side output: the reduction's input, written by the same threads.
            outputs.append((x, t, shape))
    return _outputs(b, outputs, "kInput", reducers)


def _outputs(b: _Builder, outputs, kind: str, reducers: list[str]) -> str:
    if len(outputs) == 1:
        (root, t, shape), = outputs
        return b.text(root, f"{t}{_dims(shape)}", kind, reducers)
    tuple_type = "(" + ", ".join(f"{t}{_dims(s)}" for _, t, s in outputs) + ")"
    n = b.add(tuple_type, None, f"tuple({', '.join(o for o, _, _ in outputs)})", "out")
    return b.text(n, tuple_type, kind, reducers)


# Partial tiles and whole ones: of 32-bit elements (WHOLE_TILES), and of
# the packed 16-bit transpose's 64 x 64 (WHOLE_16_BIT_TILES).
TRANSPOSES = [((64, 48, 100), (0, 2, 1)), ((40, 33, 64), (2, 1, 0)), ((64, 48, 2), (1, 0, 2)),
              ((100, 200), (1, 0)), ((8, 200, 96), (0, 2, 1)), ((2, 64, 32, 40), (0, 3, 2, 1)),
              ((4, 64, 96), (0, 2, 1)), ((128, 96), (1, 0)), ((2, 128, 64), (0, 2, 1)),
              ((64, 128), (1, 0))]
WHOLE_TILES = TRANSPOSES[-4:-2]
WHOLE_16_BIT_TILES = TRANSPOSES[-2:]


def _transpose(r: random.Random) -> str:
    b = _Builder(r)
    shape, perm = r.choice(TRANSPOSES)
    out_shape = tuple(shape[p] for p in perm)
    if (shape, perm) in WHOLE_TILES and r.random() < 0.5:
        # A 32-bit parameter transposed as it is: the CPU target copies its
        # tiles transposed through registers (lower-kernel-to-cpu's
        # transposing copy).
        t = r.choice(["f32", "s32", "u32"])
        x = b.param(t, shape)
    elif (shape, perm) in WHOLE_16_BIT_TILES and r.random() < 0.5:
        # A 16-bit parameter transposed as it is: the CPU target writes its
        # tiles' columns to the output's rows through registers
        # (lower-kernel-to-cpu's transposing write).
        t = r.choice(["bf16", "f16", "s16", "u16"])
        x = b.param(t, shape)
    else:
        t = r.choice(FLOATS + INTEGERS + ["f16", "s8"])
        x = b.chain(b.param(t, shape), t, shape, r.randrange(4))
    y = b.add(t, out_shape, f"transpose({x}), dimensions={{{','.join(map(str, perm))}}}", "t")
    if r.random() < 0.5:
        # An epilogue with a parameter of the output's shape.
        y = b.chain(y, t, out_shape, 1 + r.randrange(2))
    outputs = [(y, t, out_shape)]
    if r.random() < 0.3:
        outputs.append((x, t, shape))
    return _outputs(b, outputs, "kInput", [])


def _scatter(r: random.Random) -> str:
    b = _Builder(r)
    n, k, m = r.choice([(100, 16), (20, 8), (200, 3)]) + (r.choice([50, 500]),)
    if r.random() < 0.7:
        t, op = r.choice(INTEGERS), r.choice(["add", "maximum", "minimum", "xor"])
    else:
        t, op = r.choice(FLOATS), r.choice(["maximum", "minimum"])
    operand = b.param(t, (n, k))
    idx = b.param("s32", (m, 1))
    upd = b.chain(b.param(t, (m, k)), t, (m, k), r.randrange(3))
    name = f"{op}_{t}"
    sc = b.add(t, (n, k), f"scatter({operand}, {idx}, {upd}), update_window_dims={{1}}, "
               "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
               f"index_vector_dim=1, to_apply={name}", "sc")
    return b.text(sc, f"{t}[{n},{k}]", "kInput", [_reducer(op, t, name)])


def _concatenate(r: random.Random) -> str:
    b = _Builder(r)
    t = r.choice(FLOATS + INTEGERS)
    rows = r.choice([64, 17, 300])
    widths = [r.choice([1, 7, 32, 100, 128]) for _ in range(r.choice([2, 3, 4]))]
    parts = []
    for w in widths:
        v = b.chain(b.param(t, (rows, w)), t, (rows, w), r.randrange(3))
        parts.append(v)
    shape = (rows, sum(widths))
    c = b.add(t, shape, f"concatenate({', '.join(parts)}), dimensions={{1}}", "c")
    if r.random() < 0.5:
        c = b.chain(c, t, shape, 1)
    return b.text(c, f"{t}{_dims(shape)}", "kLoop", [])


def _dynamic_update_slice(r: random.Random) -> str:
    b = _Builder(r)
    t = r.choice(FLOATS + INTEGERS)
    shape, update = r.choice([((64, 1024, 16), (64, 1, 16)), ((100, 200), (10, 30)),
                              ((8, 8), (8, 8)), ((300,), (7,))])
    operand = b.param(t, shape)
    upd = b.chain(b.param(t, update), t, update, r.randrange(3))
    starts = [b.param("s32", ()) for _ in shape]
    d = b.add(t, shape, f"dynamic-update-slice({operand}, {upd}, {', '.join(starts)})", "d")
    return b.text(d, f"{t}{_dims(shape)}", "kLoop", [])


GENERATORS = [(EmitterKind.REDUCTION, _reduction, 0.4), (EmitterKind.TRANSPOSE, _transpose, 0.2),
              (EmitterKind.SCATTER, _scatter, 0.15), (EmitterKind.CONCATENATE, _concatenate, 0.1),
              (EmitterKind.IN_PLACE_DYNAMIC_UPDATE_SLICE, _dynamic_update_slice, 0.15)]


def hero_fusion_text(seed: int) -> tuple[str, EmitterKind]:
    """A random hero fusion (HLO text) and the hero kind it was made for."""
    r = random.Random(seed)
    kinds, generators, weights = zip(*GENERATORS)
    i = r.choices(range(len(kinds)), weights)[0]
    return generators[i](r), kinds[i]


def _bound(text: str) -> float:
    return 1e-5 if "f32" in text else 0.0


def _not_formed_by_xla(fusion) -> bool:
    analysis = analyze_fusion(fusion)
    sizes = {r.shape.num_elements for r in analysis.roots}
    return analysis.kind == EmitterKind.LOOP and len(sizes) > 1


@pytest.mark.parametrize("seed", random_seeds(SEEDS))
def test_random_hero_fusion_matches_xla(seed):
    text, _ = hero_fusion_text(seed)
    fusion = find_fusion(parse_hlo(text))
    comp = fusion.fused_computation
    rng = np.random.RandomState(seed)
    inputs = [random_input(p.shape, rng) for p in comp.parameters]
    shapes = comp.root.shape.leaves() if comp.root.shape.is_tuple else [comp.root.shape]
    outs = [np.zeros(s.dims, s.element_type.dtype) for s in shapes]
    if _not_formed_by_xla(fusion):
        # A reduction XLA leaves to the loop emitter (IsUnnestedReduction-
        # FasterThanElemental) beside an output of another size: XLA's
        # fusion passes never form it, the loop emitter refuses it.
        with ir.Context(), pytest.raises(EmitterError, match="outputs have one element count"):
            emit_fusion(fusion)
        return
    with ir.Context():
        kernel = CpuKernel(str(emit_fusion(fusion)), OPTIONS)
    kernel(*inputs, *outs)
    # XLA's own code, its library fusions off: YNNPACK's reductions do not
    # wrap s8 as HLO does (-min(-x) over a row of 4100 with a -128 gave 5).
    wants = XlaCpuExecutable(reference_text(comp), library_fusions=False).run(inputs)
    bound = _bound(text)
    for k, (out, want) in enumerate(zip(outs, wants)):
        diff, rel = errors(out, want)
        ok = (diff <= bound) | (rel <= bound)
        assert ok.all(), f"seed {seed}, output {k}: {int((~ok).sum())} elements differ\n{text}"


def test_random_heroes_reach_their_emitters():
    """The generators make what they are meant to: over the default seeds,
    most fusions of each generator get the hero kind it was made for (a few
    go to the loop emitter by XLA's heuristics, e.g. rows of 8)."""
    made, taken = Counter(), Counter()
    for seed in range(200):
        text, kind = hero_fusion_text(seed)
        made[kind] += 1
        taken[kind] += analyze_fusion(find_fusion(parse_hlo(text))).kind == kind
    for kind in made:
        assert taken[kind] >= 0.6 * made[kind], (kind, taken[kind], made[kind])


def test_random_heroes_reach_the_transposing_copy():
    """Among the default seeds, a transpose of whole 32-bit tiles copies
    them transposed through registers on the CPU target (8x8 squares: its
    LLVM IR shuffles vectors of 8), so the fuzzing compares that lowering
    with XLA too."""
    reached = []
    for seed in range(40):
        text, kind = hero_fusion_text(seed)
        whole = any(f"{t}{_dims(shape)} parameter(0)" in text for shape, _ in WHOLE_TILES
                    for t in ("f32", "s32", "u32"))
        if kind != EmitterKind.TRANSPOSE or not whole or "transpose(p0)" not in text:
            continue
        with ir.Context():
            kernel = CpuKernel(str(emit_fusion(find_fusion(parse_hlo(text)))), OPTIONS)
        if "llvm.shufflevector" in kernel.llvm_ir and "vector<8x" in kernel.llvm_ir:
            reached.append(seed)
    assert reached


def test_random_heroes_reach_the_register_copies_of_16_bit_tiles():
    """Among the default seeds, transposes of whole 16-bit tiles move their
    tiles through registers on the CPU target (OPTIONS: on any host), in
    each of three ways, so the fuzzing compares each with XLA:
      - transposed as they are: one transposing write straight from the
        input (lower-kernel-to-cpu's matchDirectWrite), a loop over 4
        squares of 32 vectors of 32 16-bit integers, no tile rotation;
      - with an epilogue: the first phase's permuting copy (its rotating
        loops: 64 rows of two vectors of 16 words) into the tile;
      - with a prologue or a side output: the second phase's transposing
        write from the tile (4 squares, unrolled: 128 vector stores)."""
    reached = Counter()
    for seed in range(130):
        text, kind = hero_fusion_text(seed)
        whole = any(f"{t}{_dims(shape)} parameter(0)" in text for shape, _ in WHOLE_16_BIT_TILES
                    for t in ("bf16", "f16", "s16", "u16"))
        if kind != EmitterKind.TRANSPOSE or not whole:
            continue
        with ir.Context():
            kernel = CpuKernel(str(emit_fusion(find_fusion(parse_hlo(text)))), OPTIONS)
        written = re.findall(r"llvm.store %\S+, %\S+ \{alignment = 2 : i64\} : vector<32xi16>",
                             kernel.llvm_ir)
        rotated = "_rotations" in kernel.llvm_ir and re.findall(
            r"llvm.store %\S+, %\S+ \{alignment = 2 : i64\} : vector<16xi32>", kernel.llvm_ir)
        if rotated:
            reached["permuting copy"] += 1
        elif len(written) == 128:
            reached["transposing write"] += 1
        elif len(written) == 32:
            reached["direct write"] += 1
    assert set(reached) == {"permuting copy", "transposing write", "direct write"}, reached

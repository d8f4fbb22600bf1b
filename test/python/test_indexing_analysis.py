"""The indexing maps of HLO instructions, checked against numpy: for every
element of a small output, the map must name exactly the operand elements
numpy's version of the op reads."""

import itertools

import numpy as np
import pytest
from mlir import ir

from xla_gpu.hlo import parse_hlo
from xla_gpu.indexing import IndexingError, input_to_output_indexing, output_to_input_indexing


def _module(body: str):
    return parse_hlo(f"HloModule m\nENTRY e {{\n{body}\n}}\n")


def _reads(maps, out_shape):
    """{output index: set of operand indices} over the maps' domains."""
    reads = {}
    for m in maps:
        ranges = [range(v.lower, v.upper + 1) for v in m.range_vars]
        for out in itertools.product(*[range(d) for d in out_shape]):
            for syms in itertools.product(*ranges):
                if m.contains(list(out), list(syms)):
                    reads.setdefault(out, set()).add(tuple(m.evaluate(list(out), list(syms))))
    return reads


def _check_against_numpy(root, operand_shape, numpy_fn, operand=0):
    """numpy_fn maps an operand array to the output array. Operand element
    values are their flat positions, so the output tells which one it holds."""
    ids = np.arange(int(np.prod(operand_shape))).reshape(operand_shape)
    expected = numpy_fn(ids)
    maps = output_to_input_indexing(root)[operand]
    reads = _reads(maps, expected.shape)
    for out in itertools.product(*[range(d) for d in expected.shape]):
        want = expected[out]
        got = reads.get(out, set())
        if want < 0:  # padding: the operand is not read
            assert not got, (out, got)
        else:
            assert got == {tuple(int(i) for i in np.unravel_index(want, operand_shape))}, \
                (out, got, [str(m) for m in maps])


@pytest.mark.parametrize("src, dst", [((2, 3, 4), (6, 4)), ((6, 4), (2, 3, 4)), ((4, 6), (3, 8)),
                                      ((12,), (2, 2, 3)), ((3, 1, 4), (4, 3)), ((5, 7), (35,))])
def test_reshape(ctx, src, dst):
    s = ",".join(map(str, src))
    d = ",".join(map(str, dst))
    root = _module(f"p = f32[{s}] parameter(0)\nROOT r = f32[{d}] reshape(p)").entry.root
    _check_against_numpy(root, src, lambda a: a.reshape(dst))


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
def test_transpose(ctx, perm):
    root = _module("p = f32[2,3,4] parameter(0)\n"
                   f"ROOT t = f32[{','.join(str((2, 3, 4)[i]) for i in perm)}] "
                   f"transpose(p), dimensions={{{','.join(map(str, perm))}}}").entry.root
    _check_against_numpy(root, (2, 3, 4), lambda a: np.transpose(a, perm))


@pytest.mark.parametrize("layout", ["{0,1,2}", "{1,0,2}", "{2,0,1}", "{2,1,0}"])
def test_bitcast_follows_layouts(ctx, layout):
    """A bitcast reinterprets the physical buffer: numpy's view of the
    operand in its layout, reshaped, then read back in the output layout."""
    root = _module("p = f32[4,6]{0,1} parameter(0)\n"
                   f"ROOT b = f32[2,3,4]{layout} bitcast(p)").entry.root
    out_mtm = [int(c) for c in layout.strip("{}").split(",")]

    def bitcast(a):
        physical = np.transpose(a, (1, 0)).reshape(-1)  # {0,1}: dim 0 is minor
        major_to_minor = list(reversed(out_mtm))
        phys_shape = [(2, 3, 4)[i] for i in major_to_minor]
        out = np.empty((2, 3, 4), dtype=a.dtype)
        out.transpose(major_to_minor)[...] = physical.reshape(phys_shape)
        return out

    _check_against_numpy(root, (4, 6), bitcast)


def test_slice_reverse_broadcast(ctx):
    m = _module("p = f32[7,5] parameter(0)\n"
                "s = f32[3,2] slice(p), slice={[1:7:2], [0:5:3]}\n"
                "r = f32[7,5] reverse(p), dimensions={0,1}\n"
                "ROOT b = f32[3,7,5] broadcast(p), dimensions={1,2}")
    _check_against_numpy(m.entry.instruction("s"), (7, 5), lambda a: a[1:7:2, 0:5:3])
    _check_against_numpy(m.entry.instruction("r"), (7, 5), lambda a: a[::-1, ::-1])
    _check_against_numpy(m.entry.instruction("b"), (7, 5),
                         lambda a: np.broadcast_to(a, (3, 7, 5)))


@pytest.mark.parametrize("padding", ["1_2_1x0_1_0", "0_0_2x2_0_0", "-1_1_0x1_-2_1"])
def test_pad(ctx, padding):
    cfg = [tuple(int(v) for v in dim.split("_")) for dim in padding.split("x")]
    src = (4, 5)
    out = [lo + hi + n + max(0, n - 1) * i for (lo, hi, i), n in zip(cfg, src)]
    root = _module(f"p = f32[4,5] parameter(0)\nz = f32[] constant(0)\n"
                   f"ROOT pd = f32[{out[0]},{out[1]}] pad(p, z), padding={padding}").entry.root

    def pad(a):
        res = np.full(out, -1)
        for idx in itertools.product(*[range(n) for n in src]):
            pos = tuple(lo + k * (i + 1) for k, (lo, _, i) in zip(idx, cfg))
            if all(0 <= p < o for p, o in zip(pos, out)):
                res[pos] = a[idx]
        return res

    _check_against_numpy(root, src, pad)


def test_concatenate(ctx):
    m = _module("a = f32[2,3] parameter(0)\nb = f32[2,4] parameter(1)\n"
                "ROOT c = f32[2,10] concatenate(a, b, a), dimensions={1}")
    root = m.entry.root
    ids = np.arange(6).reshape(2, 3)
    _check_against_numpy(root, (2, 3),
                         lambda a: np.concatenate([a, np.full((2, 4), -1), np.full((2, 3), -1)], 1))
    # Operand 2 is the same tensor read at offset 7.
    reads = _reads(output_to_input_indexing(root)[2], (2, 10))
    assert reads == {(i, 7 + j): {(i, j)} for i in range(2) for j in range(3)}
    del ids


def test_reduce_reads_every_reduced_element(ctx):
    m = _module("p = f32[3,4,5] parameter(0)\nz = f32[] constant(0)\n"
                "ROOT r = f32[4] reduce(p, z), dimensions={0,2}, to_apply=e")
    maps = output_to_input_indexing(m.entry.root)
    reads = _reads(maps[0], (4,))
    assert reads == {(j,): {(i, j, k) for i in range(3) for k in range(5)} for j in range(4)}


def test_input_to_output_inverts_output_to_input(ctx):
    m = _module("p = f32[4,6] parameter(0)\n"
                "t = f32[6,4] transpose(p), dimensions={1,0}\n"
                "ROOT r = f32[3,8] reshape(t)")
    for inst in (m.entry.instruction("t"), m.entry.root):
        forward = output_to_input_indexing(inst)[0][0]
        backward = input_to_output_indexing(inst, 0)[0]
        composed = forward.then(backward)
        for out in itertools.product(*[range(d) for d in inst.shape.dims]):
            assert composed.evaluate(list(out)) == list(out)


def test_unsupported_opcode(ctx):
    m = _module("p = f32[4] parameter(0)\nROOT s = f32[4] sort(p), dimensions={0}, to_apply=e")
    with pytest.raises(IndexingError, match="no output-to-input indexing for opcode 'sort'"):
        output_to_input_indexing(m.entry.root)


def test_shared_maps_are_made_once_a_context_and_stay_in_it():
    """identity_map (and the scalar and broadcast reads) are made once a
    context and handed out again there; another context gets its own (an
    attribute of a dead context would crash whatever used it)."""
    from xla_gpu.indexing.analysis import identity_map
    first, second = ir.Context(), ir.Context()
    with first:
        a, again = identity_map((4, 8)), identity_map((4, 8))
        other_shape = identity_map((8, 4))
    with second:
        b = identity_map((4, 8))
    assert a is again and a is not other_shape
    assert a.context is first and b.context is second
    assert str(a) == str(b) == "(d0, d1) -> (d0, d1), domain: d0 in [0, 3], d1 in [0, 7]"

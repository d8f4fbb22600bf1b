"""The IndexingMap algebra: simplification, composition, evaluation and the
bijection check. Property tests evaluate maps before and after on every point
of small domains."""

import itertools
import random

import pytest
from mlir import ir

from xla_gpu import IndexingMap, IndexingMapError, compose_indexing_maps


def simplified(text):
    return str(IndexingMap.parse(text).simplify())


@pytest.mark.parametrize("text, expected", [
    # floordiv by more than the range is 0.
    ("(d0) -> (d0 floordiv 4096), domain: d0 in [0, 4095]",
     "(d0) -> (0), domain: d0 in [0, 4095]"),
    # mod drops the terms the divisor divides, then the range decides.
    ("(d0)[s0] -> ((d0 * 4 + s0) mod 4), domain: d0 in [0, 100], s0 in [0, 3]",
     "(d0)[s0] -> (s0), domain: d0 in [0, 100], s0 in [0, 3]"),
    # (x mod c) * k + (x floordiv c) * c * k is x * k.
    ("(d0) -> ((d0 mod 8) * 512 + (d0 floordiv 8) * 4096), domain: d0 in [0, 100]",
     "(d0) -> (d0 * 512), domain: d0 in [0, 100]"),
    # floordiv splits off what the divisor divides.
    ("(d0)[s0] -> ((d0 * 4096 + s0) floordiv 4096), domain: d0 in [0, 5], s0 in [0, 4095]",
     "(d0)[s0] -> (d0), domain: d0 in [0, 5], s0 in [0, 4095]"),
    ("(d0)[s0] -> ((d0 * 4 + s0) floordiv 8), domain: d0 in [0, 100], s0 in [0, 3]",
     "(d0)[s0] -> (d0 floordiv 2), domain: d0 in [0, 100], s0 in [0, 3]"),
    # gcd rules and nested divisions.
    ("(d0) -> ((d0 * 4) mod 8, (d0 floordiv 2) floordiv 3), domain: d0 in [0, 100]",
     "(d0) -> ((d0 mod 2) * 4, d0 floordiv 6), domain: d0 in [0, 100]"),
    # A variable with a one-value range is that value.
    ("(d0, d1) -> (d0 + d1), domain: d0 in [0, 7], d1 in [3, 3]",
     "(d0, d1) -> (d0 + 3), domain: d0 in [0, 7], d1 in [3, 3]"),
    # Constraints: implied ones go, one-variable ones tighten the range.
    ("(d0, d1) -> (d0), domain: d0 in [0, 100], d1 in [0, 9], d0 in [5, 50], "
     "d1 mod 2 in [0, 1], d0 * 2 + 1 in [0, 41]",
     "(d0, d1) -> (d0), domain: d0 in [5, 20], d1 in [0, 9]"),
    # mod splits by a factor of the divisor the big terms share.
    ("(d0, d1) -> ((d0 * 20 + d1) mod 40), domain: d0 in [0, 39], d1 in [0, 19]",
     "(d0, d1) -> ((d0 mod 2) * 20 + d1), domain: d0 in [0, 39], d1 in [0, 19]"),
    # Small constants stay where they were written.
    ("(d0) -> ((d0 - 1) floordiv 2, (d0 - 1) mod 2), domain: d0 in [1, 7]",
     "(d0) -> ((d0 - 1) floordiv 2, (d0 - 1) mod 2), domain: d0 in [1, 7]"),
    ("(d0) -> ((d0 * 4 + 5) floordiv 4), domain: d0 in [0, 7]",
     "(d0) -> (d0 + 1), domain: d0 in [0, 7]"),
    # A constraint the ranges cannot decide stays.
    ("(d0) -> (d0), domain: d0 in [0, 99], d0 mod 4 in [0, 0]",
     "(d0) -> (d0), domain: d0 in [0, 99], d0 mod 4 in [0, 0]"),
    # a * 4 + s in [0, 4n - 1] with s in [0, 3] is a in [0, n - 1].
    ("(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 127], s0 in [0, 3], d0 * 4 + s0 in [0, 99]",
     "(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 24], s0 in [0, 3]"),
    ("(d0, d1)[s0] -> (d1 * 512 + d0 * 4 + s0), domain: d0 in [0, 127], d1 in [0, 9], "
     "s0 in [0, 3], d1 * 512 + d0 * 4 + s0 in [1024, 4095]",
     "(d0, d1)[s0] -> (d1 * 512 + d0 * 4 + s0), domain: d0 in [0, 127], d1 in [2, 7], "
     "s0 in [0, 3]"),
    # ... not when the rest can reach past k - 1, or the bounds are not whole steps.
    ("(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 127], s0 in [0, 4], d0 * 4 + s0 in [0, 99]",
     "(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 127], s0 in [0, 4], d0 * 4 + s0 in [0, 99]"),
    ("(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 127], s0 in [0, 3], d0 * 4 + s0 in [0, 98]",
     "(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 127], s0 in [0, 3], d0 * 4 + s0 in [0, 98]"),
    # (S + z floordiv a) floordiv c is one division of S * a + z.
    ("(d0, d1) -> ((d0 * 128 + d1 floordiv 4) floordiv 168), domain: d0 in [0, 99], "
     "d1 in [0, 511]",
     "(d0, d1) -> ((d0 * 512 + d1) floordiv 672), domain: d0 in [0, 99], d1 in [0, 511]"),
    # The digits of a mixed-radix number merge: q mod 3 + ((q floordiv 3) mod 5) * 3
    # is q mod 15, and with (q floordiv 15) * 15 it is q.
    ("(d0) -> (d0 mod 3 + ((d0 floordiv 3) mod 5) * 3), domain: d0 in [0, 1000]",
     "(d0) -> (d0 mod 15), domain: d0 in [0, 1000]"),
    ("(d0) -> (d0 mod 3 + ((d0 floordiv 3) mod 5) * 3 + (d0 floordiv 15) * 15), "
     "domain: d0 in [0, 1000]",
     "(d0) -> (d0), domain: d0 in [0, 1000]"),
    # The loop emitter's index into u8[8,224,224,3], flattened (4 elements a
    # thread, the unroll folded into the thread id).
    ("(d0, d1) -> ((d0 floordiv 294) * 150528 + (((d0 * 128 + d1 floordiv 4) floordiv 168) "
     "mod 224) * 672 + (((d0 * 512 + d1) floordiv 3) mod 224) * 3 + (d0 * 512 + d1) mod 3), "
     "domain: d0 in [0, 2351], d1 in [0, 511]",
     "(d0, d1) -> (d0 * 512 + d1), domain: d0 in [0, 2351], d1 in [0, 511]"),
    # The loop emitter's column over rows of 2008 (4 elements a thread, the
    # unroll folded into the thread id d0): the digits merge with the
    # block's own term, (d1 * 128 + d0 floordiv 4) being (d1 * 512 + d0)
    # floordiv 4.
    ("(d0, d1) -> (((d1 * 128 + d0 floordiv 4) mod 502) * 4 + d0 mod 4), "
     "domain: d0 in [0, 511], d1 in [0, 7875]",
     "(d0, d1) -> ((d1 * 512 + d0) mod 2008), domain: d0 in [0, 511], d1 in [0, 7875]"),
    ("(d0, d1) -> (((d1 * 3 + d0 floordiv 4 + 5) mod 7) * 8 + (d0 mod 4) * 2), "
     "domain: d0 in [0, 63], d1 in [0, 99]",
     "(d0, d1) -> (((d1 * 12 + d0 + 20) mod 28) * 2), domain: d0 in [0, 63], d1 in [0, 99]"),
    # One constraint per expression: the intersection.
    ("(d0) -> (d0), domain: d0 in [0, 99], d0 mod 4 in [0, 2], d0 mod 4 in [1, 3]",
     "(d0) -> (d0), domain: d0 in [0, 99], d0 mod 4 in [1, 2]"),
])
def test_simplify(ctx, text, expected):
    assert simplified(text) == expected


def test_seed_map_is_already_simple(ctx):
    seed = ("(th_x, bl_x)[vector_index] -> (bl_x floordiv 4096, (bl_x floordiv 8) mod 512, "
            "(bl_x mod 8) * 512 + th_x * 4 + vector_index), domain: th_x in [0, 127], "
            "bl_x in [0, 24575], vector_index in [0, 3]")
    assert simplified(seed) == seed


def test_known_empty(ctx):
    assert IndexingMap.parse(
        "(d0) -> (d0), domain: d0 in [0, 10], d0 mod 4 in [5, 6]").is_known_empty
    assert IndexingMap.parse(
        "(d0) -> (d0), domain: d0 in [0, 10], d0 in [20, 30]").simplify().is_known_empty
    assert not IndexingMap.parse(
        "(d0) -> (d0), domain: d0 in [0, 10], d0 mod 4 in [1, 2]").is_known_empty


def test_remove_unused_variables(ctx):
    m = IndexingMap.parse("(d0, d1, d2)[s0, s1]{rt0, rt1} -> (d1 + s1 + rt1), domain: "
                          "d0 in [0, 1], d1 in [0, 2], d2 in [0, 3], s0 in [0, 4], "
                          "s1 in [0, 5], rt0 in [0, 6], rt1 in [0, 7]")
    # The variables left get the default names of their new positions (s1
    # becomes s0), as in XLA.
    assert str(m.remove_unused_symbols()) == (
        "(d0, d1, d2)[s0]{rt0} -> (d1 + s0 + rt0), domain: d0 in [0, 1], d1 in [0, 2], "
        "d2 in [0, 3], s0 in [0, 5], rt0 in [0, 7]")
    assert str(m.remove_unused_dimensions()) == (
        "(d0)[s0, s1]{rt0, rt1} -> (d0 + s1 + rt1), domain: d0 in [0, 2], s0 in [0, 4], "
        "s1 in [0, 5], rt0 in [0, 6], rt1 in [0, 7]")
    # Names of their own stay.
    named = IndexingMap.parse("(th_x, bl_x)[s0, vec] -> (bl_x + vec), domain: th_x in [0, 1], "
                              "bl_x in [0, 2], s0 in [0, 3], vec in [0, 4]")
    assert str(named.remove_unused_dimensions().remove_unused_symbols()) == (
        "(bl_x)[vec] -> (bl_x + vec), domain: bl_x in [0, 2], vec in [0, 4]")
    # A variable used only by a constraint stays.
    c = IndexingMap.parse("(d0)[s0] -> (d0), domain: d0 in [0, 9], s0 in [0, 9], "
                          "d0 + s0 in [0, 9]")
    assert c.remove_unused_symbols() == c


def test_compose_transpose_then_broadcast(ctx):
    transpose = IndexingMap.parse("(d0, d1) -> (d1, d0), domain: d0 in [0, 39], d1 in [0, 19]")
    pick = IndexingMap.parse("(d0, d1)[s0] -> (d0 * 2 + s0, d1), "
                             "domain: d0 in [0, 19], d1 in [0, 39], s0 in [0, 1]")
    composed = compose_indexing_maps(transpose, pick)
    assert str(composed) == ("(d0, d1)[s0] -> (d1 * 2 + s0, d0), domain: d0 in [0, 39], "
                             "d1 in [0, 19], s0 in [0, 1]")
    assert transpose.then(pick) == composed


def test_compose_propagates_ranges_to_constraints(ctx):
    # The second map reads only [2, 5] of its input: first's result must lie there.
    first = IndexingMap.parse("(d0) -> (d0 + 1), domain: d0 in [0, 9]")
    second = IndexingMap.parse("(d0) -> (d0 - 2), domain: d0 in [2, 5]")
    composed = first.then(second)
    assert str(composed) == "(d0) -> (d0 - 1), domain: d0 in [1, 4]"


def test_compose_rejects_mismatched_maps(ctx):
    a = IndexingMap.parse("(d0) -> (d0), domain: d0 in [0, 9]")
    b = IndexingMap.parse("(d0, d1) -> (d0), domain: d0 in [0, 9], d1 in [0, 9]")
    with pytest.raises(IndexingMapError, match="1 results, the second 2 dimensions"):
        compose_indexing_maps(a, b)


def test_evaluate_and_contains(ctx):
    m = IndexingMap.parse("(d0)[s0] -> (d0 floordiv 3, d0 mod 3 - s0), "
                          "domain: d0 in [0, 9], s0 in [0, 1], d0 + s0 in [0, 9]")
    assert m.evaluate([7], [1]) == [2, 0]
    assert m.contains([7], [1])
    assert not m.contains([9], [1])   # violates the constraint
    assert not m.contains([10], [0])  # outside the range
    with pytest.raises(ValueError, match="expected 1 dims and 1 symbols"):
        m.evaluate([1])


@pytest.mark.parametrize("text, shape, expected", [
    ("(d0, d1) -> (d1, d0), domain: d0 in [0, 39], d1 in [0, 19]", [20, 40], (True, "")),
    ("(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 127], s0 in [0, 3]", [512], (True, "")),
    ("(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 127], s0 in [0, 3]", [500],
     (False, "a point of the domain maps outside the shape")),
    ("(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 127], s0 in [0, 3], "
     "d0 * 4 + s0 in [0, 499]", [500], (True, "")),
    ("(d0)[s0] -> (d0 * 2 + s0), domain: d0 in [0, 127], s0 in [0, 3]", [512],
     (False, "two points of the domain map to the same element")),
    ("(d0) -> (d0 * 2), domain: d0 in [0, 127]", [256],
     (False, "some element of the shape is not reached")),
])
def test_is_bijection(ctx, text, shape, expected):
    assert IndexingMap.parse(text).is_bijection(shape) == expected


def test_is_bijection_refuses_huge_domains(ctx):
    m = IndexingMap.parse("(d0, d1) -> (d0, d1), domain: d0 in [0, 99999], d1 in [0, 99999]")
    with pytest.raises(IndexingMapError, match="too large"):
        m.is_bijection([100000, 100000])


# -- property tests ------------------------------------------------------------


def _random_expr(rng, leaves, depth):
    if depth == 0 or rng.random() < 0.25:
        if rng.random() < 0.2:
            return str(rng.randint(-3, 9))
        return rng.choice(leaves)
    kind = rng.choice(["+", "-", "*", "floordiv", "mod", "*", "+"])
    lhs = _random_expr(rng, leaves, depth - 1)
    if kind in ("+", "-"):
        return f"({lhs} {kind} {_random_expr(rng, leaves, depth - 1)})"
    return f"({lhs} {kind} {rng.choice([1, 2, 3, 4, 6, 8, 16])})"


def _random_map(rng):
    n_dims, n_syms = rng.randint(1, 2), rng.randint(0, 2)
    dims = [f"d{i}" for i in range(n_dims)]
    syms = [f"s{i}" for i in range(n_syms)]
    leaves = dims + syms
    results = ", ".join(_random_expr(rng, leaves, 3) for _ in range(rng.randint(1, 2)))
    domain = [f"{v} in [{lo}, {lo + rng.randint(0, 9)}]"
              for v in leaves for lo in [rng.randint(-2, 5)]]
    for _ in range(rng.randint(0, 2)):
        lo = rng.randint(-5, 10)
        domain.append(f"{_random_expr(rng, leaves, 2)} in [{lo}, {lo + rng.randint(0, 15)}]")
    head = f"({', '.join(dims)})" + (f"[{', '.join(syms)}]" if syms else "")
    return IndexingMap.parse(f"{head} -> ({results}), domain: {', '.join(domain)}")


def _points(m):
    ranges = [range(v.lower, v.upper + 1) for v in m.dim_vars + m.range_vars]
    for p in itertools.product(*ranges):
        yield list(p[: m.num_dims]), list(p[m.num_dims:])


def _original_bounds_contain(m, dims, syms):
    return all(v.lower <= x <= v.upper for v, x in zip(m.dim_vars + m.range_vars, dims + syms))


@pytest.mark.parametrize("seed", range(200))
def test_simplify_preserves_meaning(ctx, seed):
    rng = random.Random(seed)
    m = _random_map(rng)
    s = m.simplify()
    for dims, syms in _points(m):
        inside = m.contains(dims, syms)
        assert s.contains(dims, syms) == inside, (str(m), str(s), dims, syms)
        if inside:
            assert s.evaluate(dims, syms) == m.evaluate(dims, syms), (str(m), str(s), dims, syms)
    # The simplified map's domain is no larger than the original one.
    for dims, syms in _points(s):
        if s.contains(dims, syms):
            assert _original_bounds_contain(m, dims, syms) and m.contains(dims, syms)
    # Idempotent.
    assert str(s.simplify()) == str(s)


@pytest.mark.parametrize("seed", range(40))
def test_linearized_delinearization_is_the_linear_index(ctx, seed):
    """An index delinearized into a shape's digits, as the loop emitter's
    thread maps do, and linearized again (flatten-tensors) is the linear index
    the threads count: no division is left."""
    rng = random.Random(seed)
    shape = [rng.choice([1, 2, 3, 5, 7, 8, 12, 64, 224]) for _ in range(rng.randint(2, 4))]
    unroll = rng.choice([1, 2, 4, 8])
    threads = rng.choice([32, 128, 512]) // unroll
    total = 1
    for n in shape:
        total *= n
    blocks = -(-total // (threads * unroll))
    # bl_x * threads * unroll + th_x * unroll + s0, written as the emitter does:
    # the higher digits with the unroll divided out where it divides.
    linear = f"d1 * {threads * unroll} + d0 * {unroll} + s0"
    strides, stride = [], 1
    for n in reversed(shape):
        strides.append(stride)
        stride *= n
    strides.reverse()
    digits = []
    for i, (n, st) in enumerate(zip(shape, strides)):
        digit = f"({linear}) floordiv {st}" if st > 1 else f"({linear})"
        if st % unroll == 0 and st > 1:
            digit = f"(d1 * {threads} + d0) floordiv {st // unroll}"
        if i > 0:
            digit = f"({digit}) mod {n}"
        digits.append(f"({digit}) * {st}")
    m = IndexingMap.parse(
        f"(d0, d1)[s0] -> ({' + '.join(digits)}), domain: d0 in [0, {threads - 1}], "
        f"d1 in [0, {blocks - 1}], s0 in [0, {unroll - 1}], {linear} in [0, {total - 1}]")
    s = m.simplify()
    assert "floordiv" not in str(s) and "mod" not in str(s), (str(m), str(s))
    for dims, syms in itertools.islice(_points(m), 0, None, 7):
        if m.contains(dims, syms):
            assert s.evaluate(dims, syms) == m.evaluate(dims, syms), (str(m), str(s))


@pytest.mark.parametrize("seed", range(60))
def test_compose_is_function_composition(ctx, seed):
    rng = random.Random(1000 + seed)
    first = _random_map(rng)
    # A second map with as many dims as first has results.
    n = first.num_results
    dims = [f"d{i}" for i in range(n)]
    results = ", ".join(_random_expr(rng, dims + ["s0"], 2) for _ in range(rng.randint(1, 2)))
    domain = ", ".join([f"d{i} in [{rng.randint(-3, 2)}, {rng.randint(3, 20)}]" for i in range(n)]
                       + ["s0 in [0, 2]"])
    second = IndexingMap.parse(f"({', '.join(dims)})[s0] -> ({results}), domain: {domain}")
    composed = first.then(second)
    nf = first.num_symbols
    for d, s in _points(first):
        for t in range(3):
            inside = first.contains(d, s) and second.contains(first.evaluate(d, s), [t])
            assert composed.contains(d, s + [t]) == inside, (str(first), str(second), str(composed))
            if inside:
                assert composed.evaluate(d, s + [t]) == second.evaluate(first.evaluate(d, s), [t])
    assert composed.num_symbols == nf + 1


def test_derived_maps_for_emitters(ctx):
    """The IndexingMap API the hero emitters build their maps with."""
    m = IndexingMap.parse("(d0, d1)[s0] -> (d0 * 4 + s0, d1), "
                          "domain: d0 in [0, 31], d1 in [0, 7], s0 in [0, 3]")
    d0, s0 = ir.AffineDimExpr.get(0), ir.AffineSymbolExpr.get(0)
    c = m.with_constraint(d0 * 4 + s0, (0, 99))
    assert str(c).endswith("d0 * 4 + s0 in [0, 99]")
    # The same expression again: one constraint, the intersection.
    assert str(c.with_constraint(d0 * 4 + s0, (10, 200))).endswith("d0 * 4 + s0 in [10, 99]")
    # ... which simplify turns into d0's range (a whole number of steps).
    assert str(m.with_constraint(d0 * 4 + s0, (0, 99)).simplify()) == (
        "(d0, d1)[s0] -> (d0 * 4 + s0, d1), domain: d0 in [0, 24], d1 in [0, 7], s0 in [0, 3]")
    assert [(v.lower, v.upper) for v in m.with_dim_bounds(1, (2, 5)).dim_vars] == [(0, 31), (2, 5)]
    assert str(m.submap(1)) == ("(d0, d1)[s0] -> (d1), domain: d0 in [0, 31], d1 in [0, 7], "
                                "s0 in [0, 3]")
    flat = m.convert_symbols_to_dims()
    # The symbol with its default name becomes a dimension with its own (XLA).
    assert str(flat) == ("(d0, d1, d2) -> (d0 * 4 + d2, d1), domain: d0 in [0, 31], "
                         "d1 in [0, 7], d2 in [0, 3]")
    assert flat.evaluate([3, 2, 1]) == m.evaluate([3, 2], [1]) == [13, 2]
    for bad in (lambda: m.with_constraint(ir.AffineDimExpr.get(5), (0, 1)),
                lambda: m.with_constraint(d0, (3, 2)),
                lambda: m.with_dim_bounds(2, (0, 1)),
                lambda: m.submap(2)):
        with pytest.raises(IndexingMapError, match="is not valid for"):
            bad()


def test_is_bijection_refuses_negative_shapes(ctx):
    m = IndexingMap.parse("(d0) -> (d0), domain: d0 in [0, 3]")
    with pytest.raises(IndexingMapError, match=r"negative dimension \(-4\)"):
        m.is_bijection([-4])

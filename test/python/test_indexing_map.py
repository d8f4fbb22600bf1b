"""The IndexingMap class: parse, print, verify, equality, every field back."""

import pytest
from mlir import ir

from xla_gpu import IndexingMap, IndexingMapError, Var

SEED = ("(th_x, bl_x)[vector_index] -> (bl_x floordiv 4096, (bl_x floordiv 8) mod 512, "
        "(bl_x mod 8) * 512 + th_x * 4 + vector_index), domain: th_x in [0, 127], "
        "bl_x in [0, 24575], vector_index in [0, 3]")


def test_parse_reads_every_field(ctx):
    m = IndexingMap.parse(SEED)
    assert m.dim_vars == [Var("th_x", 0, 127), Var("bl_x", 0, 24575)]
    assert m.range_vars == [Var("vector_index", 0, 3)]
    assert m.runtime_vars == []
    assert m.constraints == []
    assert m.num_dims == 2 and m.num_symbols == 1 and m.num_results == 3
    assert str(m.affine_map) == (
        "(d0, d1)[s0] -> (d1 floordiv 4096, (d1 floordiv 8) mod 512, "
        "(d1 mod 8) * 512 + d0 * 4 + s0)")


def test_print_round_trips(ctx):
    m = IndexingMap.parse(SEED)
    assert str(m) == SEED
    again = IndexingMap.parse(str(m))
    assert str(again) == str(m)
    assert again == m


def test_runtime_variables_and_constraints(ctx):
    text = ("(d0)[s0]{rt0} -> (d0 + s0 + rt0), domain: d0 in [0, 15], s0 in [0, 1], "
            "rt0 in [-4, 4], d0 mod 4 in [0, 0], d0 + s0 in [0, 10]")
    m = IndexingMap.parse(text)
    assert m.runtime_vars == [Var("rt0", -4, 4)]
    assert m.num_symbols == 2  # range symbols first, then runtime
    got = [(str(e), bounds) for e, bounds in m.constraints]
    assert got == [("d0 + s0", (0, 10)), ("d0 mod 4", (0, 0))]
    assert str(m.affine_map) == "(d0)[s0, s1] -> (d0 + s0 + s1)"


def test_build_from_affine_map(ctx):
    d0, d1 = ir.AffineDimExpr.get(0), ir.AffineDimExpr.get(1)
    s0 = ir.AffineSymbolExpr.get(0)
    amap = ir.AffineMap.get(2, 1, [d1, d0 + s0])
    m = IndexingMap.get(amap, [(0, 19), (0, 39)], [(0, 3)],
                        constraints=[(d0 + s0, (0, 20))])
    assert str(m) == ("(d0, d1)[s0] -> (d1, d0 + s0), domain: d0 in [0, 19], "
                      "d1 in [0, 39], s0 in [0, 3], d0 + s0 in [0, 20]")
    assert m.affine_map == amap
    named = IndexingMap.get(amap, [(0, 19), (0, 39)], [(0, 3)],
                            constraints=[(d0 + s0, (0, 20))],
                            names=["i", "j", "v"])
    assert str(named).startswith("(i, j)[v] -> (j, i + v)")
    # Names do not change what the map computes.
    assert named == m
    assert hash(named) == hash(m)


def test_equality_sees_ranges_and_constraints(ctx):
    base = IndexingMap.parse("(d0) -> (d0), domain: d0 in [0, 7]")
    assert base == IndexingMap.parse("(x) -> (x), domain: x in [0, 7]")
    assert base != IndexingMap.parse("(d0) -> (d0), domain: d0 in [0, 8]")
    assert base != IndexingMap.parse("(d0) -> (d0 * 2), domain: d0 in [0, 7]")
    assert base != IndexingMap.parse(
        "(d0) -> (d0), domain: d0 in [0, 7], d0 mod 2 in [0, 0]")


def test_constraint_order_does_not_matter(ctx):
    a = IndexingMap.parse("(d0, d1) -> (d0), domain: d0 in [0, 9], d1 in [0, 9], "
                          "d1 - d0 in [0, 3], d0 + d1 in [0, 12]")
    b = IndexingMap.parse("(d0, d1) -> (d0), domain: d0 in [0, 9], d1 in [0, 9], "
                          "d0 + d1 in [0, 12], d1 - d0 in [0, 3]")
    assert a == b
    assert str(a) == str(b)


@pytest.mark.parametrize("text, message, offset", [
    ("(d0) -> (d1), domain: d0 in [0, 3]", "unknown variable 'd1'", 9),
    ("(d0) -> (d0), domain: d0 in [5, 3]",
     "lower bound 5 of 'd0' is greater than its upper bound 3", 22),
    ("(d0, d1) -> (d0), domain: d0 in [0, 3]", "missing the domain entry of 'd1'", 38),
    ("(d0) -> (d0), domain: d0 in [0, 3] junk", "unexpected 'junk'", 35),
    ("(d0) -> ((d0), domain: d0 in [0, 3]", "unbalanced parentheses", 15),
    ("(d0, d1) -> (d0 * d1), domain: d0 in [0, 3], d1 in [0, 3]", "non-affine", 16),
])
def test_parse_errors(ctx, text, message, offset):
    with pytest.raises(IndexingMapError) as info:
        IndexingMap.parse(text)
    assert message in info.value.message
    assert info.value.offset == offset
    assert info.value.text == text


def test_build_errors(ctx):
    amap = ir.AffineMap.get(1, 1, [ir.AffineDimExpr.get(0)])
    with pytest.raises(IndexingMapError, match="1 dimensions but 2 dimension ranges"):
        IndexingMap.get(amap, [(0, 1), (0, 1)], [(0, 1)])
    with pytest.raises(IndexingMapError, match="1 symbols but 0 symbol ranges"):
        IndexingMap.get(amap, [(0, 1)])
    with pytest.raises(IndexingMapError, match="lower bound 3 of 'd0' is greater"):
        IndexingMap.get(amap, [(3, 1)], [(0, 1)])
    with pytest.raises(IndexingMapError, match="constraint 'd0' has lower bound 2"):
        IndexingMap.get(amap, [(0, 1)], [(0, 1)],
                        constraints=[(ir.AffineDimExpr.get(0), (2, 1))])
    with pytest.raises(IndexingMapError, match="constraint 'd1' uses an unknown variable"):
        IndexingMap.get(amap, [(0, 1)], [(0, 1)],
                        constraints=[(ir.AffineDimExpr.get(1), (0, 1))])
    with pytest.raises(IndexingMapError, match="expected 2 names"):
        IndexingMap.get(amap, [(0, 1)], [(0, 1)], names=["a"])


def test_attribute_view(ctx):
    m = IndexingMap.parse("(d0) -> (d0 floordiv 2), domain: d0 in [0, 7]")
    attr = ir.Attribute.parse(str(m.attr))
    assert IndexingMap(attr) == m
    with pytest.raises(TypeError):
        IndexingMap(ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 1))


def test_needs_a_context():
    with pytest.raises(ValueError, match="no MLIR context"):
        IndexingMap.parse("(d0) -> (d0), domain: d0 in [0, 7]")


def test_an_emptied_domain_is_the_known_empty_map(ctx):
    """Composition and simplification may empty a range (here d0 + 2 must
    land in [0, 1], so d0 in [-2, -1] against [0, 1]): the result is XLA's
    known-empty form -- every variable in [0, -1], results 0 -- which the
    attribute's verifier accepts and which prints and parses back. (It was
    an attribute that broke its own invariants: an assertion with
    assertions on.) A hand-written empty range stays an error."""
    shift = IndexingMap.parse("(d0) -> (d0 + 2), domain: d0 in [0, 1]")
    window = IndexingMap.parse("(d0) -> (d0), domain: d0 in [0, 1]")
    empty = shift.then(window)
    assert empty.is_known_empty
    assert str(empty) == "(d0) -> (0), domain: d0 in [0, -1]"
    assert IndexingMap.parse(str(empty)) == empty
    with pytest.raises(IndexingMapError, match="lower bound 2 of 'd0' is greater"):
        IndexingMap.parse("(d0) -> (d0), domain: d0 in [2, 1]")

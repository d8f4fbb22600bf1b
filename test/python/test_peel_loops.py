"""-xla-gpu-peel-loops keeps every loop's iteration space: on each map
below, the loops it makes partition the original domain point by point
(each point in exactly one of them, with the same results), and the main
loop has no constraint left on the variables it peeled."""

import itertools
import re
import subprocess

import pytest

from xla_gpu import IndexingMap, _capi

from conftest import ctx  # noqa: F401  (fixture)

MAPS = [
    "(d0)[s0, s1] -> (s0, s1), domain: d0 in [0, 3], s0 in [0, 7], s1 in [0, 10], "
    "d0 + s0 in [0, 9], d0 + s1 in [0, 12]",
    "(d0, d1)[s0] -> (d0 * 4 + s0, d1), domain: d0 in [0, 4], d1 in [0, 2], s0 in [0, 3], "
    "d0 * 4 + s0 in [0, 18]",
    "(d0)[s0, s1] -> (d0 * 8 + s0 * 2 + s1), domain: d0 in [0, 2], s0 in [0, 3], s1 in [0, 1], "
    "d0 * 8 + s0 * 2 + s1 in [0, 22]",
    "(d0)[s0] -> (d0 + s0), domain: d0 in [0, 2], s0 in [0, 5], d0 + s0 in [0, 6]",
]

# Constrained beyond the last value: peeling would not free the main loop.
NOT_PEELED = [
    "(d0)[s0] -> (d0 + s0), domain: d0 in [0, 5], s0 in [0, 5], d0 + s0 in [0, 7]",
    "(d0)[s0] -> (d0 * 8 + s0), domain: d0 in [0, 12], s0 in [0, 7], d0 * 8 + s0 in [0, 99]",
]


def _peel(text: str) -> list[str]:
    """The maps of the loops -xla-gpu-peel-loops makes of one loop over
    `text`, in order."""
    m = IndexingMap.parse(text)
    dims = ", ".join(f"%d{i}" for i in range(m.num_dims))
    syms = ", ".join(f"%s{i}" for i in range(m.num_symbols))
    results = ", ".join(f"%r{i}" for i in range(m.num_results))
    args = ", ".join(f"%d{i}: index" for i in range(m.num_dims))
    module = f"""
#map = #xla_gpu.indexing_map<"{text}">
func.func @f({args}, %init: index) -> index {{
  %r = xla_gpu.loop ({dims})[{syms}] -> ({results}) in #map iter_args(%acc = %init) -> (index) {{
    xla_gpu.yield %acc : index
  }}
  func.return %r : index
}}
"""
    out = subprocess.run([str(_capi.OPT_PATH), "-", "-xla-gpu-peel-loops"], input=module,
                         capture_output=True, text=True, check=True).stdout
    by_name = dict(re.findall(r'^#(\w+) = #xla_gpu.indexing_map<"(.*)">$', out, re.M))
    return [by_name[name] for name in re.findall(r" in #(\w+) iter_args", out)]


def _box(m: IndexingMap):
    return itertools.product(*[range(v.lower, v.upper + 1) for v in m.dim_vars + m.range_vars])


@pytest.mark.parametrize("text", MAPS)
def test_peeled_loops_partition_the_domain(ctx, text):  # noqa: F811
    original = IndexingMap.parse(text)
    peeled = [IndexingMap.parse(t) for t in _peel(text)]
    assert len(peeled) > 1, "nothing was peeled"
    assert not peeled[0].constraints, f"the main loop keeps {peeled[0]}"
    nd = original.num_dims
    for point in _box(original):
        dims, syms = point[:nd], point[nd:]
        inside = original.contains(dims, syms)
        owners = [m for m in peeled if m.contains(dims, syms)]
        assert len(owners) == (1 if inside else 0), (point, [str(m) for m in owners])
        if inside:
            assert owners[0].evaluate(dims, syms) == original.evaluate(dims, syms)



@pytest.mark.parametrize("text", NOT_PEELED)
def test_loops_peeling_would_not_help_stay(ctx, text):  # noqa: F811
    (kept,) = _peel(text)
    assert IndexingMap.parse(kept) == IndexingMap.parse(text).simplify()

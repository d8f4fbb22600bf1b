"""Planted mutations: is the test suite strong enough to notice a one-line
bug? Each mutation below is applied alone, the tests it names are run, and
it must make them fail ("caught"); the file is restored afterwards (and C++
rebuilt), whatever happens.

    python fuzz/mutate.py            # every mutation
    python fuzz/mutate.py --list
    python fuzz/mutate.py 3 5        # some of them, by number

Exit status 1 when a mutation survives (the suite missed it).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv" / "bin"


@dataclass(frozen=True)
class Mutation:
    what: str
    path: str
    old: str
    new: str
    # lit paths (under test/) or pytest node ids (test/python/...).
    tests: tuple[str, ...]

    @property
    def cpp(self) -> bool:
        return self.path.endswith(".cpp")


MUTATIONS = [
    Mutation("unsigned atomic max lowered as a signed one", "passes/lower_tensors.cpp",
             "if (llvm::isa<mlir::arith::MaxUIOp>(op)) return K::umax;",
             "if (llvm::isa<mlir::arith::MaxUIOp>(op)) return K::max;",
             ("passes/lower_tensors.mlir",)),
    Mutation("prefetch guard next <= ub (reads one past the end)", "passes/optimize_loops.cpp",
             "mlir::arith::CmpIPredicate::slt, iv,", "mlir::arith::CmpIPredicate::sle, iv,",
             ("passes/optimize_loops.mlir",)),
    Mutation("the partitioner's one-map rule weakened", "python/xla_gpu/emitters/partitioner.py",
             "if len(groups) == 1 and len(maps) == 1 and not several",
             "if len(groups) == 1 and len(maps) >= 1 and not several",
             ("test/python/test_emitters.py::test_one_user_reading_at_two_indices_splits",)),
    Mutation("f64 -> f16 rounded twice (no round-to-odd step)",
             "passes/lower_kernel_to_cpu.cpp",
             "Value fix = rewriter.create<mlir::arith::AndIOp>(loc, inexact, even);",
             "Value fix = rewriter.create<mlir::arith::AndIOp>(loc, inexact, "
             "rewriter.create<mlir::arith::XOrIOp>(loc, inexact, inexact));",
             ("test/python/test_cpu_runtime.py::"
              "test_f64_narrowing_is_correctly_rounded_without_helpers",)),
    Mutation("block y ignored in the loop emitter's linear index", "python/xla_gpu/emitters/loop.py",
             "((d[4] * blocks_x + d[3]) * threads + d[0])", "((d[3]) * threads + d[0])",
             ("test/python/test_emitter_framework.py::test_block_y_grid_runs_on_the_cpu_target",)),
    Mutation("bitcast outputs written at the first output's index",
             "python/xla_gpu/emitters/loop.py",
             "if root.shape.dims == first.dims:", "if True:",
             ("emitters/loop/bitcast_side_output.hlo",)),
    Mutation("constraint folding without the rest's range check",
             "dialects/xla_gpu/IndexingMapAlgebra.cpp",
             "if (r.lower < 0 || r.upper > k - 1) continue;", "if (r.lower < 0) continue;",
             ("test/python/test_indexing_map_algebra.py::test_simplify",)),
    Mutation("a variadic reduce's accumulators swapped", "python/xla_gpu/emitters/elemental.py",
             "return self.call_computation(reducer, [*accumulators, *xs])",
             "return self.call_computation(reducer, [*reversed(accumulators), *xs])",
             ("emitters/loop/variadic_reduce.hlo",)),
    Mutation("vectorization without the alignment check", "passes/vectorize_loads_stores.cpp",
             "if (!c || c.getValue() != 0) {", "if (!c) {",
             ("passes/vectorize_loads_stores.mlir",)),
    Mutation("loop lowering drops the last value of a range", "passes/lower_xla_gpu_loops_to_scf.cpp",
             "(loc, var.bounds.upper + 1);", "(loc, var.bounds.upper);",
             ("passes/lower_xla_gpu_loops_to_scf.mlir",)),
    Mutation("lower-tensors lowers transfers that may run past the end",
             "passes/lower_tensors.cpp", "        if (inBounds) continue;", "        continue;",
             ("passes/lower_tensors.mlir",)),
    Mutation("a transpose read through its permutation instead of the inverse",
             "python/xla_gpu/indexing/analysis.py",
             "inverse = [perm.index(j) for j in range(len(perm))]", "inverse = list(perm)",
             ("test/python/test_indexing_analysis.py",)),
    Mutation("layouts read major-to-minor", "python/xla_gpu/hlo/shape.py",
             "            return self.layout.minor_to_major",
             "            return tuple(reversed(self.layout.minor_to_major))",
             ("test/python/test_hlo_parser.py", "emitters/loop/layout_bitcast.hlo")),
    Mutation("the CPU runtime takes arrays of the wrong shape", "python/xla_gpu/runtime/cpu.py",
             "if a.shape != p.shape or (a.dtype", "if (a.dtype",
             ("test/python/test_cpu_runtime.py",)),
    Mutation("the loop emitter's grid one block short", "python/xla_gpu/emitters/loop.py",
             "blocks = max(1, -(-per_thread // threads))", "blocks = max(1, per_thread // threads)",
             ("emitters/loop/launch.hlo",)),
    Mutation("the CPU target shuffles a constant from no lane", "passes/lower_kernel_to_cpu.cpp",
             "bool recomputed = def && recomputed_.contains(def);", "bool recomputed = false;",
             ("emitters/reduce_row/folded_input.hlo",)),
]


def _run(cmd: list[str]) -> bool:
    """True when the command succeeds."""
    return subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def _build() -> bool:
    return _run([str(VENV / "ninja"), "-C", "build"])


def _tests_pass(tests: tuple[str, ...]) -> bool:
    lit = [t for t in tests if not t.startswith("test/python")]
    py = [t for t in tests if t.startswith("test/python")]
    ok = True
    if lit:
        ok &= _run([str(VENV / "lit"), "-q", *[f"test/{t}" for t in lit]])
    if py:
        ok &= _run([sys.executable, "-m", "pytest", "-q", "-x", *py])
    return ok


def try_mutation(m: Mutation) -> str:
    """'caught', 'SURVIVED', or why it could not be applied."""
    path = ROOT / m.path
    original = path.read_text()
    if original.count(m.old) != 1:
        return f"not applied: the line to change occurs {original.count(m.old)} times"
    # The named tests must pass without the mutation, or "caught" means
    # nothing.
    if not _tests_pass(m.tests):
        return "not applied: its tests fail without the mutation"
    try:
        path.write_text(original.replace(m.old, m.new))
        if m.cpp and not _build():
            return "caught (does not build)"
        return "SURVIVED" if _tests_pass(m.tests) else "caught"
    finally:
        path.write_text(original)
        if m.cpp:
            _build()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("numbers", nargs="*", type=int, help="which mutations (default: all)")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    chosen = args.numbers or list(range(1, len(MUTATIONS) + 1))
    if args.list:
        for i, m in enumerate(MUTATIONS, 1):
            print(f"{i}. {m.what} ({m.path})")
        return 0
    survived = 0
    for i in chosen:
        m = MUTATIONS[i - 1]
        start = time.monotonic()
        outcome = try_mutation(m)
        survived += not outcome.startswith("caught")
        print(f"{i}. {m.what}: {outcome} ({time.monotonic() - start:.0f} s)", flush=True)
    print(f"{len(chosen) - survived} of {len(chosen)} mutations caught")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())

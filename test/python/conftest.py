"""Shared fixtures and inputs of the Python tests."""

import os

import pytest

import xla_gpu  # noqa: F401  (registers the dialect before any Context exists)
from mlir import ir

# Every pipeline a test runs verifies the IR after each pass (kernel
# compiles otherwise verify only what goes in and what comes out), so a pass
# that breaks the IR fails the test that reaches it, named.
os.environ.setdefault("XLA_GPU_VERIFY_EACH", "1")


def random_seeds(default: int, share: int = 1) -> range:
    """The seeds of a random (differential) test: $XLA_GPU_RANDOM_SEEDS of
    them (else `default`), over `share` (a test that takes a part of
    them), from $XLA_GPU_RANDOM_SEED_BASE on (else 0): `make fuzz
    RANDOM_SEED_BASE=5000` looks past the seeds CI runs."""
    first = int(os.environ.get("XLA_GPU_RANDOM_SEED_BASE", "0"))
    return range(first, first + int(os.environ.get("XLA_GPU_RANDOM_SEEDS", default)) // share)


@pytest.fixture
def ctx():
    """A fresh context with an unknown location as the default."""
    with ir.Context() as context, ir.Location.unknown():
        yield context


def kernel_llvm_ir(text: str, dump, monkeypatch) -> tuple[str, str]:
    """The LLVM IR of the host kernel of HLO fusion `text`, compiled afresh
    (no disk cache; a size of the caller's own keeps the process's kernels
    apart) and dumped to folder `dump` ($XLA_GPU_DUMP_LLVM_IR): as
    translated (with the lane loops' interleave counts capped) and
    optimized."""
    from xla_gpu.emitters import emit_kernel, find_fusion
    from xla_gpu.hlo import parse_hlo
    from xla_gpu.runtime import CpuKernel
    monkeypatch.setenv("XLA_GPU_DUMP_LLVM_IR", str(dump))
    monkeypatch.setenv("XLA_GPU_CACHE_DIR", "")
    with ir.Context():
        CpuKernel(emit_kernel(find_fusion(parse_hlo(text))))
    read = lambda files: "\n".join(f.read_text() for f in sorted(files))  # noqa: E731
    return (read(f for f in dump.glob("*.ll") if not f.name.endswith(".opt.ll")),
            read(dump.glob("*.opt.ll")))


# A kernel that parses, verifies and lowers but does not link: it calls a
# function nothing defines (the CPU JIT must refuse it, not jump to null).
UNRESOLVED_HELPER_KERNEL = """
func.func private @xla_gpu_no_such_helper(f32) -> f32
func.func @main(%in: tensor<128xf32>, %out: tensor<128xf32>) -> tensor<128xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %v = tensor.extract %in[%tid] : tensor<128xf32>
  %r = func.call @xla_gpu_no_such_helper(%v) : (f32) -> f32
  %w = tensor.insert %r into %out[%tid] : tensor<128xf32>
  return %w : tensor<128xf32>
}
"""


def row_exp_sum(s: str, r: str) -> str:
    """A fused computation's first lines over x of shape `s`: each row's
    max m, e = exp(x - max) and each row's sum t of e (of shape `r`)."""
    return f"""  x = f32{s} parameter(0)
  ninf = f32[] constant(-inf)
  m = f32{r} reduce(x, ninf), dimensions={{1}}, to_apply=mx
  mb = f32{s} broadcast(m), dimensions={{0}}
  d = f32{s} subtract(x, mb)
  e = f32{s} exponential(d)
  z = f32[] constant(0)
  t = f32{r} reduce(e, z), dimensions={{1}}, to_apply=add"""


def top_probability_fusion(rows: int, cols: int):
    """softmax(x).max(-1) over f32[rows, cols] as XLA:CPU fuses it (for
    YNNPACK): one reduction fusion whose hero, the max of each row's
    probabilities, reads the row's max and sum -- reduces XLA:GPU never
    fuses into a reduction's inputs (test_tree_reduction,
    test_merged_kernel)."""
    from xla_gpu.hlo import parse_hlo
    s, r = f"[{rows},{cols}]", f"[{rows}]"
    return parse_hlo(f"""HloModule m

mx {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}}

add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}}

fused {{
{row_exp_sum(s, r)}
  c1 = f32[] constant(1)
  one = f32{r} broadcast(c1), dimensions={{}}
  i = f32{r} divide(one, t)
  ib = f32{s} broadcast(i), dimensions={{0}}
  p = f32{s} multiply(e, ib)
  ROOT top = f32{r} reduce(p, ninf), dimensions={{1}}, to_apply=mx
}}

ENTRY main {{
  p0 = f32{s} parameter(0)
  ROOT f = f32{r} fusion(p0), kind=kCustom, calls=fused
}}
""").fusions()[0]

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

"""The functions the GPU check runs (bench/gpu_check.py), jax only, so that
the GPU machine -- which has jax but not the MLIR wheels -- can import
them: each case is a function, its inputs' shapes and dtypes, and the
tolerance its comparison with XLA:GPU uses (why, beside it)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def gelu(x):
    # The seed's GELU (tanh form): the loop emitter.
    return 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def row_sum(x):
    # A row reduction: shuffles + shared memory.
    return jnp.sum(x, axis=1)


def transpose_add(x, y):
    # The transpose emitter: a padded shared tile, two loops around a barrier.
    return x.T + y


def kv_update(cache, token, pos):
    # The in-place dynamic-update-slice emitter: the output aliases `cache`.
    return jax.lax.dynamic_update_slice(cache, token * 2.0, (0, pos, 0))


# name -> (function, [(shape, dtype)], tolerance relative to the largest |value|)
GPU_CASES = {
    # bf16 in, bf16 out, tanh approximations differ in the last bit.
    "gelu bf16[6,512,4096]": (gelu, [((6, 512, 4096), "bfloat16")], 1e-2),
    # f32 sums of 4096 terms in another order: a few ulps of the row sum.
    "row sum f32[1024,4096]": (row_sum, [((1024, 4096), "float32")], 1e-3),
    "transpose + add f32[2048,4096]": (transpose_add, [((4096, 2048), "float32"),
                                                       ((2048, 4096), "float32")], 0.0),
    "kv update f32[64,1024,128]": (kv_update, [((64, 1024, 128), "float32"),
                                               ((64, 1, 128), "float32"), ((), "int32")], 0.0),
}


def inputs(specs, seed: int = 0) -> list[np.ndarray]:
    """Deterministic inputs: normal floats, small integers (a valid
    position for the update)."""
    import ml_dtypes  # noqa: F401  (bfloat16 for numpy)
    rng = np.random.default_rng(seed)
    out = []
    for shape, dtype in specs:
        if dtype.startswith("int"):
            out.append(np.asarray(rng.integers(0, 8, shape), dtype))
        else:
            out.append(rng.standard_normal(shape, np.float32).astype(
                jnp.dtype(dtype)))
    return out

"""Sub-byte integers as XLA's buffers (and our kernels) hold them: 8 / bits
elements a byte, the first in the low bits; ml_dtypes holds them one a
byte. numpy only, so that the CUDA runtime can use it without MLIR."""

from __future__ import annotations

import numpy as np

__all__ = ["pack", "unpack"]


def pack(a: np.ndarray, bits: int) -> np.ndarray:
    """Sub-byte integers as XLA (and the kernels) hold them: 8 / bits a
    byte, the first in the low bits."""
    per = 8 // bits
    values = a.reshape(-1).view(np.uint8) & ((1 << bits) - 1)
    padded = np.zeros(-(-values.size // per) * per, np.uint8)
    padded[:values.size] = values
    padded = padded.reshape(-1, per)
    out = np.zeros(padded.shape[0], np.uint8)
    for k in range(per):
        out |= padded[:, k] << (k * bits)
    return out


def unpack(packed: np.ndarray, bits: int, out: np.ndarray) -> None:
    """Writes packed elements back one a byte (ml_dtypes reads the low bits)."""
    per, mask = 8 // bits, (1 << bits) - 1
    values = np.stack([(packed >> (k * bits)) & mask for k in range(per)], axis=1)
    out.reshape(-1).view(np.uint8)[:] = values.reshape(-1)[:out.size]

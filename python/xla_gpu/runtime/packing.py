"""Sub-byte integers as XLA's buffers (and our kernels) hold them: 8 / bits
elements a byte, the first in the low bits; ml_dtypes holds them one a
byte. numpy only, so that the CUDA runtime can use it without MLIR."""

from __future__ import annotations

import numpy as np

__all__ = ["pack", "unpack"]


# The elements of one packed byte, one a byte, as one wider integer.
_WIDE = {2: np.uint16, 4: np.uint32}


def pack(a: np.ndarray, bits: int) -> np.ndarray:
    """Sub-byte integers as XLA (and the kernels) hold them: 8 / bits a
    byte, the first in the low bits. The `8 / bits` bytes of one packed
    byte are read as one wider integer (little-endian: the first element in
    the low byte), so every step is a contiguous numpy loop."""
    per, mask = 8 // bits, (1 << bits) - 1
    values = a.reshape(-1).view(np.uint8)
    if values.size % per:
        values = np.concatenate([values, np.zeros(per - values.size % per, np.uint8)])
    wide = values.view(_WIDE[per])
    out = np.bitwise_and(wide, mask)
    part = np.empty_like(wide)
    for k in range(1, per):
        # Element k's bits sit at 8k; they go to k * bits.
        np.right_shift(wide, k * (8 - bits), out=part)
        np.bitwise_and(part, mask << (k * bits), out=part)
        np.bitwise_or(out, part, out=out)
    return out.astype(np.uint8)


def unpack(packed: np.ndarray, bits: int, out: np.ndarray) -> None:
    """Writes packed elements back one a byte (ml_dtypes reads the low bits)."""
    per, mask = 8 // bits, (1 << bits) - 1
    wide = packed.astype(_WIDE[per])
    spread = np.bitwise_and(wide, mask)
    part = np.empty_like(wide)
    for k in range(1, per):
        np.left_shift(wide, k * (8 - bits), out=part)
        np.bitwise_and(part, mask << (8 * k), out=part)
        np.bitwise_or(spread, part, out=spread)
    flat = out.reshape(-1).view(np.uint8)
    flat[:] = spread.view(np.uint8)[:flat.size]

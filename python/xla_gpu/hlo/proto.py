"""What we read of XLA's serialized protobufs, without their schemas
(jaxlib ships no Python bindings for them): a field reader, and the values
of an HLO module's constants (HloModuleProto), which its text prints only
at great cost (an embedding table of 8M floats is ~100 MB of text)."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from .types import ElementType

__all__ = ["constant_values", "proto_field", "proto_fields"]


def proto_fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of each field of a serialized protobuf
    message: an int for a varint, the bytes of any other wire type."""
    at = 0

    def varint() -> int:
        nonlocal at
        value = shift = 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while at < len(data):
        key = varint()
        wire = key & 7
        if wire == 0:
            yield key >> 3, varint()
            continue
        size = {1: 8, 5: 4}.get(wire) or varint()
        yield key >> 3, data[at:at + size]
        at += size


def proto_field(data: bytes, number: int):
    """The first value of field `number` of a serialized message, or None."""
    return next((v for f, v in proto_fields(data) if f == number), None)


def _varints(data: bytes) -> np.ndarray:
    """A packed repeated varint field's values as uint64 (two's complement
    for negative int32 and int64 values, which protobuf writes in 10 bytes)."""
    raw = np.frombuffer(data, np.uint8)
    if raw.size == 0:
        return np.zeros(0, np.uint64)
    last = np.flatnonzero(raw < 0x80)
    if last.size == 0 or last[-1] != raw.size - 1:
        raise ValueError("a packed varint runs past its field")
    first = np.concatenate(([0], last[:-1] + 1))
    position = np.arange(raw.size) - np.repeat(first, last - first + 1)
    if position.max() > 9:
        raise ValueError("a varint longer than 10 bytes")
    digits = (raw & 0x7F).astype(np.uint64) << (7 * position).astype(np.uint64)
    return np.add.reduceat(digits, first)


# LiteralProto's field for each element type, and how its bytes read:
# "raw" little-endian values of the type, "varint" packed varints, "bool"
# packed one-byte varints. (Checked against the text XLA prints for each
# type: test_hlo_proto.py.)
_LITERAL_FIELDS: dict[str, tuple[int, str]] = {
    "pred": (2, "bool"), "s8": (15, "raw"), "s16": (17, "raw"), "s32": (4, "varint"),
    "s64": (5, "varint"), "u8": (3, "raw"), "u16": (16, "raw"), "u32": (6, "varint"),
    "u64": (7, "varint"), "f16": (11, "raw"), "bf16": (13, "raw"), "f32": (8, "raw"),
    "f64": (9, "raw"),
}


def _literal_value(literal: bytes, etype: ElementType, dims: tuple[int, ...]) -> np.ndarray | None:
    """A LiteralProto's values as a row-major array of `dims`, or None
    where its shape is not `dims` in the default (row-major) layout, its
    type is not one _LITERAL_FIELDS reads, or its data is not that many
    values."""
    if etype.name not in _LITERAL_FIELDS:
        return None
    number, encoding = _LITERAL_FIELDS[etype.name]
    fields = dict(proto_fields(literal))
    shape = fields.get(1)
    if not isinstance(shape, bytes):
        return None
    shape_fields = list(proto_fields(shape))
    proto_dims = [d for f, v in shape_fields if f == 3
                  for d in (_varints(v).tolist() if isinstance(v, bytes) else [v])]
    if tuple(proto_dims) != tuple(dims):
        return None
    layout = next((v for f, v in shape_fields if f == 5), None)
    minor_to_major = [d for f, v in (proto_fields(layout) if isinstance(layout, bytes) else ())
                      if f == 1 for d in (_varints(v).tolist() if isinstance(v, bytes) else [v])]
    if minor_to_major and minor_to_major != list(range(len(dims) - 1, -1, -1)):
        return None
    data = fields.get(number, b"")
    if not isinstance(data, bytes):
        return None
    count = int(np.prod(dims, dtype=np.int64))
    if encoding == "raw":
        if len(data) != count * etype.dtype.itemsize:
            return None
        values = np.frombuffer(data, etype.dtype).copy()
    elif encoding == "bool":
        values = np.frombuffer(data, np.uint8)
        if values.size != count or values.max(initial=0) > 1:
            return None
        values = values.astype(np.bool_)
    else:
        values = _varints(data)
        if values.size != count:
            return None
        values = values.view(np.int64).astype(etype.dtype) if etype.is_signed \
            else values.astype(etype.dtype)
    return values.reshape(dims)


def constant_values(module_proto: bytes,
                    wanted: dict[tuple[str, str], tuple[ElementType, tuple[int, ...]]]
                    ) -> dict[tuple[str, str], np.ndarray]:
    """The values of the constants `wanted` -- (computation name,
    instruction name) -> (element type, dimensions) -- of a serialized
    HloModuleProto: those it holds in a form _literal_value reads."""
    found: dict[tuple[str, str], np.ndarray] = {}
    computations = {computation for computation, _ in wanted}
    # HloModuleProto.computations (3) -> HloComputationProto: name (1),
    # instructions (2) -> HloInstructionProto: name (1), literal (8). Only
    # the instructions of the computations wanted are read further than
    # their name (a training step's module: 3000 instructions).
    for number, computation in proto_fields(module_proto):
        if number != 3 or not isinstance(computation, bytes):
            continue
        fields = list(proto_fields(computation))
        name = next((v.decode() for f, v in fields if f == 1 and isinstance(v, bytes)), None)
        if name not in computations:
            continue
        for field, value in fields:
            if field != 2 or not isinstance(value, bytes):
                continue
            inst = proto_fields(value)
            first = next(inst, None)
            if first is None or first[0] != 1 or not isinstance(first[1], bytes) or \
                    (name, first[1].decode()) not in wanted:
                continue
            key = (name, first[1].decode())
            literal = next((v for f, v in inst if f == 8), None)
            if isinstance(literal, bytes):
                array = _literal_value(literal, *wanted[key])
                if array is not None:
                    found[key] = array
    return found

"""HLO indexing analysis: for an instruction, the indexing maps from an
element of its output to the elements of its operands it reads
(output-to-input), and from an operand element to the output elements it
contributes to (input-to-output), as XLA's indexing_analysis computes them.

    with ir.Context():
        maps = output_to_input_indexing(transpose)   # [{(d0, d1) -> (d1, d0)}]
"""

from .analysis import (
    IndexingError,
    MalformedInstructionError,
    delinearize,
    identity_map,
    indexing_from,
    input_to_output_indexing,
    output_to_input_indexing,
)

__all__ = [
    "IndexingError",
    "MalformedInstructionError",
    "delinearize",
    "identity_map",
    "indexing_from",
    "input_to_output_indexing",
    "output_to_input_indexing",
]

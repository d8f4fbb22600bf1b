"""fusion-to-mlir FILE.hlo: prints the emitter's MLIR for the file's fusion.

A file whose entry has one fusion emits that fusion; a computation without
fusions is wrapped into one, as XLA's tool does."""

from __future__ import annotations

import argparse
import sys

from mlir import ir

from ..emitters import EmitterError, emit_fusion, find_fusion
from ._cli import ToolError, read_hlo, run_tool


def emit_file(path: str) -> str:
    module = read_hlo(path)
    try:
        fusion = find_fusion(module)
    except ValueError as e:
        raise ToolError(str(e)) from None
    with ir.Context():
        try:
            return str(emit_fusion(fusion))
        except EmitterError as e:
            raise ToolError(str(e)) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fusion-to-mlir", description=__doc__.splitlines()[0])
    parser.add_argument("file", help="an HLO text file ('-' for stdin)")
    args = parser.parse_args(argv)

    def body() -> int:
        sys.stdout.write(emit_file(args.file))
        return 0

    return run_tool("fusion-to-mlir", body)


if __name__ == "__main__":
    sys.exit(main())

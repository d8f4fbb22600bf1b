"""hlo-indexing FILE.hlo: prints, for every instruction of the entry
computation (or of --computation), its output-to-input indexing maps in the
`#xla_gpu.indexing_map` syntax, one block per operand, so that lit tests can
FileCheck them.

    %t = transpose:
      operand 0 (%p):
        #xla_gpu.indexing_map<"(d0, d1) -> (d1, d0), domain: ...">
"""

from __future__ import annotations

import sys

import xla_gpu  # noqa: F401  (registers the dialect)

from ..context import new_context
from ..emitters.elemental import EmitterNotBuiltError
from ..emitters.verifier import verify_instruction
from ..indexing import IndexingError, input_to_output_indexing, output_to_input_indexing
from ._cli import ArgumentParser, ToolError, read_hlo, run_tool


def _print_instruction(instr, input_to_output: bool, out) -> None:
    if not instr.operands:
        return
    print(f"%{instr.name} = {instr.opcode}:", file=out)
    try:
        if input_to_output:
            per_operand = [input_to_output_indexing(instr, k)
                           for k in range(len(instr.operands))]
        else:
            per_operand = output_to_input_indexing(instr)
    except IndexingError as e:
        reason = str(e).split(": ", 1)[1]
        print(f"  unsupported: {reason}", file=out)
        return
    for k, (operand, maps) in enumerate(zip(instr.operands, per_operand)):
        print(f"  operand {k} (%{operand.name}):", file=out)
        if not maps:
            print("    (not read)", file=out)
        for m in maps:
            print(f"    {m.attr}", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(
        prog="hlo-indexing",
        description="Print the output-to-input indexing maps of HLO instructions.")
    parser.add_argument("file", help="an HLO text file ('-' for stdin)")
    parser.add_argument("--computation", help="the computation to print (default: the entry)")
    parser.add_argument("--input-to-output", action="store_true",
                        help="print input-to-output maps instead")
    args = parser.parse_args(argv)

    def body() -> int:
        module = read_hlo(args.file)
        if args.computation:
            try:
                comp = module.computation(args.computation)
            except KeyError:
                names = ", ".join(c.name for c in module.computations)
                raise ToolError(f"no computation named '{args.computation}' "
                                f"(the module has: {names})") from None
        else:
            comp = module.entry
        with new_context():
            # The tools' one verifier: a malformed instruction is an error
            # at its file:line:col, not a map printed for it.
            for instr in comp.instructions:
                if instr.opcode not in ("tuple", "get-tuple-element"):
                    try:
                        verify_instruction(instr)
                    except EmitterNotBuiltError:
                        pass  # well formed; printed as "unsupported" below
            for instr in comp.instructions:
                _print_instruction(instr, args.input_to_output, sys.stdout)
        return 0

    return run_tool("hlo-indexing", body)


if __name__ == "__main__":
    sys.exit(main())

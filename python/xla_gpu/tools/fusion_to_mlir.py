"""fusion-to-mlir FILE.hlo: prints the emitter's MLIR for the file's fusion.

A file whose entry has one fusion emits that fusion; a computation without
fusions is wrapped into one, as XLA's tool does. With `--bundle DIR`, every
fusion of the module is compiled to PTX and written as a kernel bundle
(DIR/<fusion>/kernel.ptx, kernel.json, reference.hlo) that
xla_gpu.runtime.cuda launches without MLIR."""

from __future__ import annotations

import shutil
import subprocess
import sys

from ..context import new_context
from ..emitters import (DEFAULT_DEVICE, DEVICES, EmitterError, device_named, find_fusion,
                        make_emitter)
from ..emitters.partitioner import partition_to_dot
from ._cli import (ArgumentParser, ToolError, add_verbose_flag, enable_remarks, read_hlo,
                   run_tool)


def emit_file(path: str, dump_partition: str | None = None,
              device: str = DEFAULT_DEVICE.name) -> str:
    module = read_hlo(path)
    try:
        fusion = find_fusion(module)
    except EmitterError:
        raise  # located at the instruction
    except ValueError as e:
        raise ToolError(str(e)) from None
    with new_context():
        emitter = make_emitter(fusion, device_named(device))
        text = str(emitter.emit_module())
        if dump_partition:
            dot = partition_to_dot(fusion.fused_computation, emitter.subgraphs)
            with open(dump_partition, "w") as f:
                f.write(dot)
            if dump_partition.endswith(".dot") and shutil.which("dot"):
                subprocess.run(["dot", "-Tsvg", dump_partition, "-o",
                                dump_partition[:-4] + ".svg"], check=False)
        return text


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="fusion-to-mlir", description=__doc__.splitlines()[0])
    parser.add_argument("file", help="an HLO text file ('-' for stdin)")
    parser.add_argument("--dump-partition", metavar="FILE.dot",
                        help="write the partition as Graphviz (and FILE.svg where `dot` "
                             "is installed)")
    parser.add_argument("--device", choices=sorted(DEVICES), default=DEFAULT_DEVICE.name,
                        help="the GPU to choose launch dimensions for (default: %(default)s)")
    parser.add_argument("--bundle", metavar="DIR", default=None,
                        help="write a kernel bundle (PTX + launch JSON) for every fusion of "
                             "the module under DIR instead of printing MLIR")
    add_verbose_flag(parser)
    args = parser.parse_args(argv)
    enable_remarks(args.verbose)

    def body() -> int:
        if args.bundle is not None:
            from ..runtime.bundle import write_bundles
            written, skipped = write_bundles(read_hlo(args.file), args.bundle,
                                             device_named(args.device))
            for path in written:
                print(f"wrote {path}")
            for reason in skipped:
                print(f"skipped {reason}")
            return 0
        sys.stdout.write(emit_file(args.file, args.dump_partition, args.device))
        return 0

    return run_tool("fusion-to-mlir", body)


if __name__ == "__main__":
    sys.exit(main())

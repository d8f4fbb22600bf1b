"""What every command-line tool of the package shares: reading an HLO file
and turning the project's errors into one clean line and exit status 1."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Callable

from ..emitters.elemental import EmitterError
from ..hlo import HloModule, HloParseError, parse_hlo
from ..reference import division_xla_cannot_fold


class ArgumentParser(argparse.ArgumentParser):
    """argparse, exiting with status 1 on a bad command line (2 is
    argparse's default) like every other bad input."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(1)


def add_verbose_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="print the emitters' remarks (which emitter took a fusion, "
                             "and why one declined) on stderr")


def enable_remarks(verbose: bool) -> None:
    """With --verbose, the emitters' remarks go to stderr as `remark: ...`."""
    if not verbose:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("remark: %(message)s"))
    logger = logging.getLogger("xla_gpu.emitters")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


class ToolError(Exception):
    """A user-facing failure of a tool: printed as `tool: error: message`."""


# The host arrays a tool allocates for a run (inputs and outputs): past this
# it refuses before allocating (the machines have 24 GiB; XLA's reference
# needs as much again).
MAX_HOST_BYTES = 4 << 30


def check_host_memory(shapes, what: str) -> None:
    """Raises ToolError when arrays of `shapes` would take more than
    MAX_HOST_BYTES (a huge shape is refused, not allocated)."""
    total = 0
    for shape in shapes:
        for leaf in (shape.leaves() if shape.is_tuple else [shape]):
            bits = leaf.element_type.bits if leaf.element_type is not None else 0
            total += leaf.num_elements * max(bits, 8) // 8
    if total > MAX_HOST_BYTES:
        raise ToolError(f"{what} need {total / 2**30:.1f} GiB of host memory, more than the "
                        f"{MAX_HOST_BYTES >> 30} GiB a run may allocate")


def refuse_divisions_xla_cannot_fold(path: str, computations, consequence: str) -> None:
    """A ToolError at an integer division that XLA:CPU, about to compile
    `computations`, would fold and crash on (see
    reference.division_xla_cannot_fold); `consequence` says what cannot run."""
    inst = division_xla_cannot_fold(computations)
    if inst is not None:
        raise ToolError(f"{path}:{inst.line}:{inst.column}: {inst.name}: an integer "
                        f"{inst.opcode} of constants by zero, which XLA:CPU folds as it compiles "
                        f"and dies of SIGFPE on (XLA's x / 0 = -1, x % 0 = x): {consequence}")


def read_hlo(path: str) -> HloModule:
    """Parses the HLO file at `path` (`-` reads stdin)."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
    except OSError as e:
        raise ToolError(f"cannot read {path}: {e.strerror}") from None
    return parse_hlo(text, "<stdin>" if path == "-" else path)


def run_tool(name: str, body: Callable[[], int]) -> int:
    """Runs `body`; project errors become one line on stderr and status 1."""
    try:
        return body()
    except HloParseError as e:
        print(e, file=sys.stderr)
    except ToolError as e:
        print(f"{name}: error: {e}", file=sys.stderr)
    except BrokenPipeError:
        pass
    except EmitterError as e:
        where = e.location
        print(f"{where}: error: {e}" if where else f"{name}: error: {e}", file=sys.stderr)
    except (ValueError, RuntimeError) as e:
        # The project's other error types (IndexingError, PipelineError,
        # KernelArgumentError, ...) derive from these.
        print(f"{name}: error: {e}", file=sys.stderr)
    except Exception as e:  # noqa: BLE001 - a tool never shows a traceback
        print(f"{name}: internal error ({type(e).__name__}: {e}); please report it with "
              "the input file", file=sys.stderr)
    return 1


_PLATFORMS = {"cpu": "cpu", "host": "cpu", "cuda": "cuda", "gpu": "cuda"}


def platform_arg(text: str) -> str:
    """A `--platform` value: XLA's platform names, any case."""
    name = _PLATFORMS.get(text.lower())
    if name is None:
        raise argparse.ArgumentTypeError(f"unknown platform '{text}' (cpu, host, cuda, gpu)")
    return name


def require_platform(platform: str) -> None:
    """A ToolError (one line, exit 1) when `--platform` asks for CUDA and
    there is no driver or device here."""
    if platform != "cuda":
        return
    from ..runtime.cuda import CudaUnavailable, driver
    try:
        driver()
    except CudaUnavailable as e:
        raise ToolError(f"--platform=CUDA: {e}; use --platform=cpu") from None

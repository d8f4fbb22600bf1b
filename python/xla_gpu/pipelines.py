"""The compile pipeline of the emitters, in XLA's order:

    optimization         inline subgraphs, lower xla_gpu ops and loops to scf,
                         fold bounds checks the ranges decide
    loop-transformation  flatten tensors, vectorize loads/stores, unroll
    lowering             pure calls, narrow floats, index maps, tensors ->
                         pointers, everything -> LLVM/NVVM

Each stage is a plain function that appends pass names; `pipeline_string`
joins them into a textual pipeline usable anywhere (PassManager.parse,
`xla-gpu-opt --pass-pipeline=...`). `compile_to_ptx` runs all stages and
the NVPTX backend.

    python -m xla_gpu.pipelines kernel.mlir --sm 90 --ptx -o kernel.ptx
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import glob
import os
import re
import sys
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from mlir import ir
from mlir.dialects import gpu as _gpu

import xla_gpu  # noqa: F401  (registers the dialect and the passes)

from . import _capi
from . import ptx as _ptx
from .context import new_context

__all__ = ["PipelineOptions", "STAGES", "compile_context", "compile_kernel_to_ptx",
           "compile_to_ptx", "give_back_compile_context", "lend_compile_context",
           "lowered_to_ptx", "parse_module", "parsed_pipeline", "pipeline_passes",
           "pipeline_string", "run_pipeline", "verify"]


# xla-gpu-optimize-loops' max-unrolled-ops by default: XLA's budget.
XLA_MAX_UNROLLED_OPS = 400


@dataclass(frozen=True)
class PipelineOptions:
    """What the pipeline is compiled for."""

    compute_capability: tuple[int, int] = (9, 0)
    warp_size: int = 32
    vectorize: bool = True
    unroll: bool = True
    # Software pipelining of a loop's first load (optimize-loops): a GPU
    # hides the load's latency behind the loop body; the CPU target, whose
    # thread loops LLVM vectorizes, gets a branch in every iteration.
    pipeline_loads: bool = True
    # Unroll a thread's accumulation loop at the top level of the kernel;
    # the CPU target keeps it a loop and runs it interchanged with the
    # threads (each step a vectorized loop over them).
    unroll_accumulations: bool = True
    # Unroll a thread's top-level loop that writes transcendentals (a
    # transpose's rows of exp); the CPU target keeps it a loop too, run
    # interchanged: one copy of the math for LLVM to vectorize.
    unroll_math_loops: bool = True
    # Unroll a loop of at most 4 iterations below the top level whatever
    # its size (a thread's vector of 2 inside its steps): on the CPU target
    # it runs inside the loop over a block's threads, and left a loop it is
    # the innermost, which LLVM vectorizes instead of the threads.
    unroll_nested_short_loops: bool = False
    # XLA's partial unrolling of long loops (by the largest factor that
    # divides the trip count and keeps the body small); the CPU target
    # leaves that to LLVM's unroller.
    partial_unroll: bool = True
    # The most ops a loop's fully unrolled body may have (optimize-loops'
    # max-unrolled-ops; XLA's 400). The CPU target's thread loops become
    # lane loops that LLVM vectorizes into a main body, an epilogue and a
    # remainder, each op of an unrolled body three vector instructions or
    # more to select (~30 us each on an AVX2 host): it unrolls up to 128
    # on every host (a transposing write takes a phase's loop of steps
    # since stop 53). The bf16 021 transpose's write phase, 8 steps
    # of 29 ops, unrolled took 55 of its 201 ms of compile; it ran the same
    # in stop 49's three A/Bs, 1.00-1.15x faster in stop 50's seven and
    # 1.01-1.04x in stop 51's two (in one process each), for 45 ms more
    # compile where its compile is over XLA's already: the loop is kept.
    # Every other bench loop is 96 ops or fewer.
    max_unrolled_ops: int = XLA_MAX_UNROLLED_OPS
    # XLA's peeling of a loop's last, bounds-checked iteration
    # (xla-gpu-peel-loops): on a GPU the main loop loses the check.
    peel_loops: bool = True
    # The CPU target's: the last range variable is not peeled where it is
    # a thread's vector (or the loop emitter's unroll: a variable added as
    # it is) (peel-innermost=false), which peeled split the thread's walk
    # into one walk an element (a column reduction with a partial tile read
    # its input twice, 3.5x slower); the lane loops are cut where its
    # bounds check flips instead (-xla-gpu-lower-kernel-to-cpu). A last
    # variable that only steps (a warp's along a row, 32 elements apart,
    # with vectors of 1) is peeled as XLA peels it.
    peel_innermost: bool = True
    # The CPU target's: only loops that carry a value besides tensors (an
    # accumulation) are peeled (accumulations-only=true); see runtime/cpu.py.
    peel_accumulations_only: bool = False
    # The CPU target's: a loop that carries scalars only (a reduce-window's
    # window, an inline reduce) takes a constraint on its innermost range
    # variable as that loop's bounds, not as a check of every iteration
    # (xla-gpu-lower-xla-gpu-loops-to-scf's bound-innermost); see
    # runtime/cpu.py.
    bound_innermost: bool = False
    # The CPU target's: a thread's top-level loop over its elements (the
    # loop emitter's unroll) becomes K times as many threads
    # (xla-gpu-fold-loops-into-threads), one copy of the body for LLVM to
    # vectorize instead of K strided ones. No GPU kernel wants it.
    fold_loops_into_threads: bool = False
    # The CPU target's: a transpose's tile written from shared memory in
    # squares of 512-bit vectors (-xla-gpu-lower-kernel-to-cpu's
    # transposing-writes). Where the host's vectors are narrower each is
    # split by the code generator: on an AVX2 host the bf16 021 transpose
    # ran 0.81x the time without it (A/B in one process, bits the same) and
    # compiled in 233 ms instead of 320 (its code generation 161 -> 71).
    transposing_writes: bool = True
    # The CPU target's: f32 exp's scaling by 2^n as one llvm.ldexp
    # (-xla-gpu-lower-to-llvm's ldexp-scaling), where the host has AVX-512
    # (VSCALEF); elsewhere LLVM would expand it lane by lane.
    ldexp_scaling: bool = False
    # The CPU target's: the lanes of the f64 functions' vector variants
    # (-xla-gpu-lower-to-llvm's f64-vector-lanes): the host's vector of f64.
    f64_vector_lanes: int = 8
    # None: 32 when every tensor of the module is small enough that index
    # arithmetic cannot overflow it (cheaper on GPUs), else 64.
    index_bitwidth: int | None = None

    def __post_init__(self):
        major, minor = self.compute_capability
        if major < 5 or not 0 <= minor <= 9:
            raise ValueError(f"compute_capability {self.compute_capability} is not a CUDA "
                             "compute capability; use e.g. (8, 0) or (9, 0)")
        if self.warp_size <= 0 or self.warp_size & (self.warp_size - 1):
            raise ValueError(f"warp_size must be a power of two, got {self.warp_size}")
        if self.max_unrolled_ops < 0:
            raise ValueError(f"max_unrolled_ops must be 0 or more, got {self.max_unrolled_ops}")
        if self.index_bitwidth not in (None, 32, 64):
            raise ValueError(f"index_bitwidth must be 32 or 64, got {self.index_bitwidth}")

    @property
    def has_f8_conversions(self) -> bool:
        """Whether the GPU converts f8E4M3FN and f8E5M2 with one `cvt`: sm_90
        with the PTX 7.8 the NVPTX backend emits for it (sm_89 has the
        instructions only from PTX 8.1), XLA's condition."""
        return self.compute_capability >= (9, 0)

    @property
    def chip(self) -> str:
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    @classmethod
    def for_device(cls, device, **overrides) -> "PipelineOptions":
        """The options for a device description (its compute capability
        and warp size), as XLA derives them."""
        return cls(compute_capability=device.compute_capability,
                   warp_size=device.threads_per_warp, **overrides)


# The inliner simplifies what it inlined with CSE (XLA's choice), not with
# its default, a canonicalize of every function: the canonicalize after it
# does that once. Over the bench kernels the two inliners took 43 of the
# CPU pipeline's ~390 ms, now 12; the IR out of the pipeline differs only
# in the order of the constants hoisted to the top.
_INLINE = "inline{default-pipeline=cse}"

# Canonicalization without region simplification (merging identical blocks,
# dropping block arguments): our IR is structured until lower-to-llvm, and
# LLVM's SimplifyCFG does the same after it. Every bench kernel's IR out of
# both pipelines stayed the same, in 4-5 % less time (CPU 602 -> 576 ms,
# GPU 610 -> 580 over the bench's fusions).
_CANONICALIZE = "canonicalize{region-simplify=disabled}"


def _with_options(pattern: str, values: dict[str, bool], defaults: dict[str, bool]) -> str:
    """`pattern` with `{}` replaced by the options that differ from their
    defaults (`{a=true b=false}`), or by nothing: XLA's pipeline prints
    its passes bare."""
    changed = [f"{k}={str(v).lower()}" for k, v in values.items() if v != defaults[k]]
    return pattern.format("{" + " ".join(changed) + "}" if changed else "")


def add_optimization_stage(passes: list[str], opts: PipelineOptions) -> None:
    passes += [
        _INLINE,
        "xla-erase-dead-functions",
        "cse",
        _CANONICALIZE,
        f"func.func(xla-gpu-lower-xla-gpu-to-scf{{warp_size={opts.warp_size}}})",
        # A vector a loop builds and the next one reads back (XLA's place),
        # then the combiners the shuffles call are inlined.
        "func.func(xla-gpu-fuse-loops)",
        _INLINE,
        # XLA's place for it: before the loops become scf, so that a loop
        # whose last iteration alone needs a bounds check is split.
        *([_with_options("func.func(xla-gpu-peel-loops{})",
                         {"peel-innermost": opts.peel_innermost,
                          "accumulations-only": opts.peel_accumulations_only},
                         {"peel-innermost": True, "accumulations-only": False})]
          if opts.peel_loops else []),
        _with_options("func.func(xla-gpu-lower-xla-gpu-loops-to-scf{})",
                      {"bound-innermost": opts.bound_innermost}, {"bound-innermost": False}),
        "func.func(xla-gpu-lower-tile-copies)",
        "func.func(xla-gpu-simplify-arith)",
        _CANONICALIZE,
        "cse",
    ]


def add_loop_transformation_stage(passes: list[str], opts: PipelineOptions) -> None:
    if opts.fold_loops_into_threads:
        passes += ["func.func(xla-gpu-fold-loops-into-threads)"]
    passes += ["xla-gpu-flatten-tensors", _CANONICALIZE, "cse",
               # XLA's order: the unswitcher takes loops whose body is one
               # if, so invariant code moves out first, and again after.
               "loop-invariant-code-motion", "func.func(xla-gpu-unswitch-loops)",
               "loop-invariant-code-motion"]
    if opts.vectorize:
        passes += ["func.func(xla-gpu-vectorize-loads-stores)", _CANONICALIZE]
    if opts.unroll:
        options = [] if opts.pipeline_loads else ["pipeline-loads=false"]
        if not opts.unroll_accumulations:
            options.append("unroll-top-level-accumulations=false")
        if not opts.unroll_math_loops:
            options.append("unroll-top-level-math-loops=false")
        if opts.unroll_nested_short_loops:
            options.append("unroll-nested-short-loops=true")
        if not opts.partial_unroll:
            options.append("partial-unroll=false")
        if opts.max_unrolled_ops != XLA_MAX_UNROLLED_OPS:
            options.append(f"max-unrolled-ops={opts.max_unrolled_ops}")
        suffix = "{" + " ".join(options) + "}" if options else ""
        passes += [f"func.func(xla-gpu-optimize-loops{suffix})"]
    passes += [_CANONICALIZE, "cse"]


# Index expressions stay below the number of elements of the tensors they
# index, up to a small factor in intermediate terms: half of i32's range.
_I32_SAFE_ELEMENTS = 1 << 30


def choose_index_bitwidth(module: ir.Module) -> int:
    """32 if every statically shaped tensor in the module has fewer than 2^30
    elements (and none is dynamically shaped), else 64."""
    sizes = re.findall(r"tensor<([0-9x?]+)x[a-z]", str(module))
    for dims in sizes:
        if "?" in dims:
            return 64
        n = 1
        for d in dims.split("x"):
            n *= int(d)
        if n >= _I32_SAFE_ELEMENTS:
            return 64
    return 32


def _add_tensor_lowering(passes: list[str], f8_conversions: bool = False,
                         device_info: str = "", inline_calls: bool = False) -> None:
    """What both targets share: calls, narrow floats, index maps, tensors.
    With `f8_conversions`, f8 conversions go to the GPU's cvt instructions
    first (what is left of narrow floats is expanded as on the host). f32
    tanh and erf are left to lower-to-llvm: libdevice on the GPU (the
    spec's walk-through calls __nv_tanhf), XLA:CPU's forms on the host.
    `device_info` (XLA's gpu_device_info text) picks the GPU's atomics.
    With `inline_calls` the subgraph functions are inlined into the
    kernel while their indices are still index maps (see
    add_cpu_lowering_stage); XLA leaves them to LLVM's inliner."""
    lower_tensors = (f'xla-gpu-lower-tensors{{gpu_device_info="{device_info}"}}'
                     if device_info else "xla-gpu-lower-tensors")
    passes += [
        "xla-gpu-propagate-slice-indices",
        "func.func(xla-gpu-convert-pure-call-ops)",
        *(["xla-gpu-inline-calls"] if inline_calls else []),
        *(["func.func(xla-gpu-convert-float-nvidia)"] if f8_conversions else []),
        "func.func(xla-gpu-expand-float-ops{gpu-approximations=false})",
        "xla-gpu-simplify-affine",
        _CANONICALIZE,
        lower_tensors,
        "xla-gpu-merge-pointers",
        _CANONICALIZE,
        "cse",
    ]


def _add_llvm_lowering(passes: list[str], opts: PipelineOptions, target: str) -> None:
    passes += [
        f"xla-gpu-lower-to-llvm{{index-bitwidth={opts.index_bitwidth or 64} target={target}"
        + (" ldexp-scaling=true" if opts.ldexp_scaling and target == "cpu" else "")
        + (f" f64-vector-lanes={opts.f64_vector_lanes}" if target == "cpu" else "") + "}",
        "reconcile-unrealized-casts",
        _CANONICALIZE,
        "cse",
    ]


def add_lowering_stage(passes: list[str], opts: PipelineOptions) -> None:
    major, minor = opts.compute_capability
    _add_tensor_lowering(passes, f8_conversions=opts.has_f8_conversions,
                         device_info=f"cuda_compute_capability {{ major: {major} minor: {minor} }}")
    _add_llvm_lowering(passes, opts, "gpu")


def add_cpu_lowering_stage(passes: list[str], opts: PipelineOptions) -> None:
    """The lowering stage for the host: the same kernel IR, with the grid
    turned into loops (GPU semantics kept, see -xla-gpu-lower-kernel-to-cpu).
    The subgraph functions (a fused instruction read by several others,
    called once for each read) are inlined before the index maps become
    arithmetic: a call's index map composes with its arguments' and
    simplifies, which LLVM's inliner, after the maps are divisions and
    remainders, cannot do. A 5x5 blur over NHWC f32[8,128,128,3] reads
    the horizontal pass at 5 rows, its pixel (w, c) = ((e / 3) mod 128,
    e mod 3) of the thread's element e: 3 w + c composed is e mod 384, a
    contiguous row; split over the call, every tap was an interleave
    group of 3 (a kernel call 0.66 -> 0.10-0.20 ms, its compile 120 ->
    36 ms). Each function is simplified before it is inlined in turn, so
    that the copies of a subgraph read at equal indices merge (12 nested
    shifted-slice sums, 2^12 calls unmerged: compile 48 -> 31 ms); a
    module without calls skips the inliner (-xla-gpu-inline-calls), which
    would canonicalize every function once more (0.2-0.5 ms a kernel)."""
    _add_tensor_lowering(passes, inline_calls=True)
    passes += [
        "xla-gpu-lower-kernel-to-cpu" + ("" if opts.transposing_writes
                                         else "{transposing-writes=false}"),
        # Its output (each phase's and lane's copies of constants and index
        # arithmetic) canonicalizes faster bottom-up, to the same IR but the
        # order of constants: the column sum's pipeline 17.3 -> 15.4 ms, all
        # cases' 187 -> 180 ms, every bench kernel's object the same.
        "canonicalize{top-down=false region-simplify=disabled}",
        "cse",
        # bf16 conversions in integer ops: no compiler-rt helpers needed
        # (arith-expand's max and min expansions not: see the pass).
        "func.func(xla-gpu-expand-bf16-conversions)",
    ]
    _add_llvm_lowering(passes, opts, "cpu")


StageFn = Callable[[list[str], PipelineOptions], None]
STAGES: dict[str, StageFn] = {
    "optimization": add_optimization_stage,
    "loop-transformation": add_loop_transformation_stage,
    "lowering": add_lowering_stage,
}
# Not one of the default stages: the CPU target replaces "lowering" with it.
EXTRA_STAGES: dict[str, StageFn] = {"cpu-lowering": add_cpu_lowering_stage}
CPU_STAGES = ("optimization", "loop-transformation", "cpu-lowering")


def pipeline_passes(opts: PipelineOptions = PipelineOptions(),
                    stages: Iterable[str] = tuple(STAGES)) -> list[str]:
    """The passes of the named stages, in order."""
    passes: list[str] = []
    known = {**STAGES, **EXTRA_STAGES}
    for name in stages:
        if name not in known:
            raise ValueError(f"unknown stage {name!r}; the stages are {', '.join(known)}")
        known[name](passes, opts)
    return passes


def pipeline_string(opts: PipelineOptions = PipelineOptions(),
                    stages: Iterable[str] = tuple(STAGES)) -> str:
    """`builtin.module(...)` for the named stages."""
    return "builtin.module(" + ",".join(pipeline_passes(opts, stages)) + ")"


class PipelineError(RuntimeError):
    """A pass failed; the message holds MLIR's diagnostics (op and location)."""


# MLIR 22's parser aborts on a use of result N of a value when N is huge
# (`%r#2147483647`: it grows a vector to N first); xla-gpu-opt refuses the
# same inputs. No operation has a million results.
_HUGE_RESULT_NUMBER = re.compile(r"%[\w.$-]+#(\d{7,})")


# The upstream parser recurses once per nested region or attribute
# dictionary and overflows the stack between 2000 and 4000 levels (fewer on
# a thread's smaller stack); xla-gpu-opt has the same limit.
_MAX_NESTING = 1000
_BRACE_OR_SKIPPED = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|[{}]')


def _located(text: str, source: str, pos: int, message: str) -> ValueError:
    line = text.count("\n", 0, pos) + 1
    column = pos - text.rfind("\n", 0, pos)
    return ValueError(f"{source}:{line}:{column}: error: {message}")


@contextlib.contextmanager
def _serial_verification():
    """MLIR verifies the functions of a module on worker threads when the
    context allows threads, and a verifier error raised on one reaches the
    bindings' Python diagnostic capture without the GIL: the process
    aborts (found by fuzzing: a module of several functions, one invalid).
    Parsing (which verifies) and verifying run on this thread; pass
    pipelines gather their threads' diagnostics themselves."""
    context = ir.Context.current
    context.enable_multithreading(False)
    try:
        yield
    finally:
        context.enable_multithreading(True)


def verify(module: ir.Module) -> None:
    """`module.operation.verify()`, raising ir.MLIRError, on one thread."""
    with _serial_verification():
        module.operation.verify()


def parse_module(text: str, source: str = "<input>") -> ir.Module:
    """`ir.Module.parse` (in the current context), refusing first what the
    upstream parser would abort or overflow its stack on; raises ValueError
    with line:column."""
    for m in _HUGE_RESULT_NUMBER.finditer(text):
        if int(m.group(1)) >= 1 << 20:
            raise _located(text, source, m.start(1) - 1,
                           f"result number {m.group(1)} is larger than any operation has")
    depth = 0
    for m in _BRACE_OR_SKIPPED.finditer(text):
        if m.group(0) == "{":
            depth += 1
            if depth > _MAX_NESTING:
                raise _located(text, source, m.start(), "regions and attribute dictionaries "
                               f"are nested deeper than {_MAX_NESTING} levels")
        elif m.group(0) == "}":
            depth -= 1
    with _serial_verification():
        return ir.Module.parse(text)


def verify_each_default() -> bool:
    """Whether pipelines verify the module after every pass: on with
    `XLA_GPU_VERIFY_EACH=1` (the tests set it), else off."""
    return os.environ.get("XLA_GPU_VERIFY_EACH", "0") not in ("", "0")


def run_pipeline(module: ir.Module, opts: PipelineOptions = PipelineOptions(),
                 stages: Iterable[str] = tuple(STAGES), dump_to: str | os.PathLike | None = None,
                 verify_each: bool | None = None) -> ir.Module:
    """Runs the stages on `module` in place. With `dump_to`, the IR after every
    pass goes to numbered files there (`000.input.mlir`, `001.inline.mlir`,
    ...), like XLA's --xla_dump_hlo_pass_re=fusion-emitter.

    The input is verified first and the output last. With `verify_each`
    (None: verify_each_default()) the module is verified after every pass as
    well, as mlir-opt's --verify-each does: a pass that breaks the IR is
    named, and what follows it never sees broken IR. That is a quarter of
    a kernel's pipeline time in this MLIR (built with assertions), so
    kernel compiles leave it off, as XLA's Triton pipeline does in release
    builds. (With `dump_to` each pass runs alone: its output is verified.)"""
    passes, verify_each = _checked_input(module, opts, stages, verify_each)
    if dump_to is None:
        lent = _lent.get(id(module.context))
        (lent.run if lent is not None else _run)(module, ",".join(passes), verify_each)
        return module
    out = Path(dump_to)
    out.mkdir(parents=True, exist_ok=True)
    (out / "000.input.mlir").write_text(str(module))
    for i, p in enumerate(passes, start=1):
        _run(module, p, verify_each)
        name = p.split("(")[-1].split("{")[0].rstrip(")")
        (out / f"{i:03d}.{name}.mlir").write_text(str(module))
    return module


def _checked_input(module: ir.Module, opts: PipelineOptions, stages: Iterable[str],
                   verify_each: bool | None) -> tuple[list[str], bool]:
    """run_pipeline's passes for `module` and its verify_each, the module
    verified (PipelineError if it does not verify)."""
    if verify_each is None:
        verify_each = verify_each_default()
    if opts.index_bitwidth is None:
        opts = dataclasses.replace(opts, index_bitwidth=choose_index_bitwidth(module))
    passes = pipeline_passes(opts, stages)
    try:
        verify(module)
    except ir.MLIRError as e:
        raise PipelineError(f"the input does not verify: {e}") from None
    return passes, verify_each


def parsed_pipeline(module: ir.Module, opts: PipelineOptions = PipelineOptions(),
                    stages: Iterable[str] = tuple(STAGES),
                    verify_each: bool | None = None) -> tuple[int, bool]:
    """What run_pipeline would run on `module`, for a run elsewhere (the C
    API's xlaGpuStartHostCompile, on a thread of its own): the parsed pass
    manager of the lent compile context `module` is in, and verify_each.
    The module is verified here."""
    lent = _lent.get(id(module.context))
    if lent is None:
        raise ValueError("parsed_pipeline takes a module in a lent compile context "
                         "(lend_compile_context, compile_context)")
    passes, verify_each = _checked_input(module, opts, stages, verify_each)
    return lent.parsed(",".join(passes)), verify_each


def _run(module: ir.Module, passes: str, verify_each: bool) -> None:
    """Runs `passes` (comma separated, on the module) through the plugin's
    C API: ctypes releases the GIL, so other threads' kernels go through
    their pipelines meanwhile (the bindings' PassManager.run holds it)."""
    _raise_message(_capi.lib.xlaGpuRunPassPipeline(_capi.unwrap(module, "Module"),
                                                   passes.encode(), int(verify_each)))


def _raise_message(message: int | None) -> None:
    """Raises PipelineError with a message of the C API (and frees it)."""
    if message:
        try:
            raise PipelineError(ctypes.string_at(message).decode(errors="replace"))
        finally:
            _capi.lib.xlaGpuFreeBuffer(message)


class _CompileContext:
    """A context that compiles one kernel after another, with the pass
    pipelines it has run kept parsed: a pipeline's passes initialize on
    its first run (the canonicalizer gathers its patterns) and not again.
    A kernel's CPU pipeline in a new context cost ~2.3 ms more over the
    bench kernels (a new context ~1.2 ms, parsing and initializing the
    pipeline the rest)."""

    def __init__(self):
        self.context = new_context()
        self.uses = 0
        self._parsed: dict[str, int] = {}
        # The pass managers go before the context (which self holds), and
        # at exit while the library is still there.
        weakref.finalize(self, _destroy_pipelines, self._parsed)

    def parsed(self, passes: str) -> int:
        """The pass manager of `passes` in this context, parsed once."""
        handle = self._parsed.get(passes)
        if handle is None:
            error = ctypes.c_void_p()
            handle = _capi.lib.xlaGpuParsePassPipeline(
                _capi.unwrap(self.context, "Context"), passes.encode(), ctypes.byref(error))
            if not handle:
                _raise_message(error.value)
            self._parsed[passes] = handle
        return handle

    def run(self, module: ir.Module, passes: str, verify_each: bool) -> None:
        _raise_message(_capi.lib.xlaGpuRunParsedPassPipeline(
            self.parsed(passes), _capi.unwrap(module, "Module"), int(verify_each)))


def _destroy_pipelines(parsed: dict[str, int]) -> None:
    for handle in parsed.values():
        _capi.lib.xlaGpuDestroyPassPipeline(handle)
    parsed.clear()


# Compile contexts not lent, and those lent (by id(context)). A context is
# replaced after _COMPILES_A_CONTEXT compiles: what each kernel leaves
# uniqued in it (attributes, types) stays for the context's life. At most
# _MOST_IDLE are kept idle (the JAX backend lends one to each kernel it
# compiles in the background, however many at once).
_idle: list[_CompileContext] = []
_lent: dict[int, _CompileContext] = {}
_contexts_lock = threading.Lock()
_COMPILES_A_CONTEXT = 256
_MOST_IDLE = max(2, os.cpu_count() or 1)


@contextlib.contextmanager
def compile_context():
    """`with compile_context():` an MLIR context (current in the block) for
    one compile at a time on this thread: one of a pool reused from compile
    to compile, whose pass pipelines (run_pipeline) stay parsed. What the
    block makes in it is not to be used after the block: the next compile,
    perhaps on another thread, gets the context (which lives as long as
    anything made in it)."""
    context = lend_compile_context()
    try:
        with context:
            yield context
    finally:
        give_back_compile_context(context)


def lend_compile_context() -> ir.Context:
    """compile_context()'s context, lent until give_back_compile_context:
    for a compile that ends on another thread (or later on this one)."""
    with _contexts_lock:
        lent = _idle.pop() if _idle else None
    if lent is None:
        lent = _CompileContext()
    with _contexts_lock:
        _lent[id(lent.context)] = lent
    return lent.context


def give_back_compile_context(context: ir.Context) -> None:
    """Ends the loan of lend_compile_context (or compile_context)."""
    with _contexts_lock:
        lent = _lent.pop(id(context))
        lent.uses += 1
        if lent.uses < _COMPILES_A_CONTEXT and len(_idle) < _MOST_IDLE:
            _idle.append(lent)


_LIBDEVICE_GLOBS = ("/usr/local/cuda/nvvm/libdevice/libdevice.10.bc",
                    "/usr/local/cuda-*/nvvm/libdevice/libdevice.10.bc")


def find_libdevice() -> str | None:
    """libdevice.10.bc ($XLA_GPU_LIBDEVICE, else the CUDA installation)."""
    env = os.environ.get("XLA_GPU_LIBDEVICE")
    if env:
        return env if os.path.exists(env) else None
    for pattern in _LIBDEVICE_GLOBS:
        found = sorted(glob.glob(pattern))
        if found:
            return found[-1]
    return None


def compile_to_ptx(module: ir.Module, opts: PipelineOptions = PipelineOptions(),
                   dump_to: str | os.PathLike | None = None) -> str:
    """Runs every stage, then the NVPTX backend: the PTX of the module's
    kernels (its public functions). `module` may be an EmittedKernel's."""
    run_pipeline(module, opts, dump_to=dump_to)
    return lowered_to_ptx(module, opts, dump_to)


def lowered_to_ptx(module: ir.Module, opts: PipelineOptions = PipelineOptions(),
                   dump_to: str | os.PathLike | None = None) -> str:
    """The NVPTX backend alone, on a module the stages have lowered (in
    place): convert-gpu-to-nvvm, translation, LLVM's O3, PTX."""
    needs_libdevice = any(
        op.operation.name == "llvm.func" and
        ir.StringAttr(op.attributes["sym_name"]).value.startswith("__nv_")
        for op in module.body.operations)
    libdevice = find_libdevice()
    if needs_libdevice and libdevice is None:
        raise PipelineError("the kernel calls libdevice (__nv_*) but libdevice.10.bc was not "
                            "found; set XLA_GPU_LIBDEVICE")
    # The lowered functions move into a gpu.module of a new container
    # module, which the one PTX path (ptx.gpu_module_to_ptx) lowers.
    with module.context, ir.Location.unknown():
        wrapped = ir.Module.create()
        wrapped.operation.attributes["gpu.container_module"] = ir.UnitAttr.get()
        with ir.InsertionPoint(wrapped.body):
            kernels = _gpu.GPUModuleOp("kernels")
        body = kernels.bodyRegion.blocks.append()
        for op in list(module.body.operations):
            op.detach_from_parent()
            body.append(op)
    try:
        code = _ptx.gpu_module_to_ptx(wrapped, opts.chip,
                                      libdevice=libdevice if needs_libdevice else None)["kernels"]
    except _ptx.PtxError as e:
        raise PipelineError(f"NVPTX code generation failed: {e}") from None
    if dump_to is not None:
        (Path(dump_to) / f"kernel.{opts.chip}.ptx").write_text(code)
    return code


def compile_kernel_to_ptx(kernel, device, dump_to: str | os.PathLike | None = None) -> str:
    """An EmittedKernel's PTX for a device description (options from the
    device: its compute capability and warp size)."""
    return compile_to_ptx(kernel.module, PipelineOptions.for_device(device), dump_to)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m xla_gpu.pipelines",
        description="Run the emitters' compile pipeline on an MLIR file.")
    parser.add_argument("file", nargs="?", help="input .mlir ('-' for stdin)")
    parser.add_argument("--stage", action="append", choices=list(STAGES),
                        help="run only these stages (repeatable; default: all)")
    parser.add_argument("--sm", type=int, default=90, help="compute capability, e.g. 80, 90")
    parser.add_argument("--index-bitwidth", type=int, default=None,
                        help="32 or 64 (default: chosen from the tensor sizes)")
    parser.add_argument("--no-vectorize", action="store_true")
    parser.add_argument("--no-unroll", action="store_true")
    parser.add_argument("--ptx", action="store_true", help="compile to PTX")
    parser.add_argument("--print-pipeline", action="store_true",
                        help="print the textual pipeline and exit")
    parser.add_argument("--dump-to", help="write the IR after every pass into this folder")
    parser.add_argument("-o", dest="output", default="-")
    args = parser.parse_args(argv)
    try:
        opts = PipelineOptions((args.sm // 10, args.sm % 10), vectorize=not args.no_vectorize,
                               unroll=not args.no_unroll, index_bitwidth=args.index_bitwidth)
    except ValueError as e:
        parser.error(str(e))
    stages = args.stage or list(STAGES)
    if args.print_pipeline:
        print(pipeline_string(opts, stages))
        return 0
    if not args.file:
        parser.error("an input file is needed")
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
    except OSError as e:
        print(f"xla_gpu.pipelines: error: cannot read {args.file}: {e.strerror}", file=sys.stderr)
        return 1
    with new_context():
        try:
            module = parse_module(text, args.file)
            if args.ptx:
                result = compile_to_ptx(module, opts, args.dump_to)
            else:
                result = str(run_pipeline(module, opts, stages, args.dump_to))
        except (ir.MLIRError, PipelineError, _ptx.PtxError) as e:
            print(f"{args.file}: error: {e}", file=sys.stderr)
            return 1
        except ValueError as e:
            print(e, file=sys.stderr)
            return 1
    if args.output == "-":
        sys.stdout.write(result)
    else:
        Path(args.output).write_text(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

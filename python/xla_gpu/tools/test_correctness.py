"""test-correctness FILE.hlo: emits the file's fusion, runs it on the CPU
target with GPU semantics on random inputs, runs the same computation on
XLA:CPU, and compares. Flags as XLA's tool:

    --abs_error_bound=1e-4 --rel_error_bound=1e-4 --bijection_outputs=ROOT
    --bijection_inputs=HERO[:OPERAND_INDICES]

`--bijection_outputs=ROOT` checks that the emitter's thread -> output
indexing of that output covers each of its elements exactly once;
`--bijection_inputs=HERO:0,1` that the thread -> input indexing of the
hero's operands (by number; all of them without `:`) covers each of their
elements exactly once (HERO is any instruction of the fusion that each
element of the first output reads once). Both are repeatable. An element
fails when it is off by more than both bounds (XLA's defaults: 1e-4)."""

from __future__ import annotations

import sys

import numpy as np

from ..context import new_context
from ..emitters import DEFAULT_DEVICE, DEVICES, device_named, find_fusion, make_emitter
from ..indexing import indexing_from, output_to_input_indexing
from ..reference import as_xla_takes_it, run_with_xla
from ..runtime import CpuKernel
from ..runtime.cuda import random_array
from ._cli import (ArgumentParser, ToolError, add_verbose_flag, check_host_memory,
                   enable_remarks, platform_arg, refuse_divisions_xla_cannot_fold,
                   require_platform, read_hlo, run_tool)


def random_input(shape, rng: np.random.RandomState) -> np.ndarray:
    """An input of `shape` (runtime/cuda.py's random_array, which the GPU
    check uses without MLIR: one generator for both)."""
    return random_array(tuple(shape.dims), shape.element_type.name, rng)


def unwritten(dims, dtype) -> np.ndarray:
    """An output array as device memory starts: not zeros but whatever was
    there -- here every byte 0xA5 (pred: true) -- so an element the kernel
    does not write fails the comparison with XLA."""
    out = np.empty(tuple(dims), dtype)
    out.reshape(-1).view(np.uint8).fill(1 if out.dtype == np.bool_ else 0xA5)
    return out


# The identity of a reducer whose root is one of these ops on its two
# parameters: what XLA's MakeFakeArguments gives a parameter used as a
# reduction's init value (XLA may fold the init into every partial result,
# so only an identity gives one answer).
def _identity(opcode: str, etype) -> object | None:
    dtype = etype.dtype
    if opcode == "add" or (opcode == "or" and etype.is_pred):
        return np.zeros((), dtype)
    if opcode == "multiply" or (opcode == "and" and etype.is_pred):
        return np.ones((), dtype)
    if opcode in ("maximum", "minimum"):
        lowest = opcode == "maximum"
        if etype.is_pred:
            return np.array(not lowest, dtype)
        if etype.is_integer:
            info = np.iinfo(dtype)
            return np.array(info.min if lowest else info.max, dtype)
        if etype.is_float:
            return np.array(-np.inf if lowest else np.inf, dtype)
    return None


def reduction_init_values(comp) -> dict[int, np.ndarray]:
    """Parameter number -> the identity of the reducer the parameter is the
    init value of (reduce and reduce-window), where it has a known one."""
    out: dict[int, np.ndarray] = {}
    for inst in comp.instructions:
        if inst.opcode not in ("reduce", "reduce-window") or not inst.called_computations:
            continue
        reducer = inst.called_computations[0]
        n = len(inst.operands) // 2
        root = reducer.root
        parts = root.operands if root.opcode == "tuple" else [root]
        for k, init in enumerate(inst.operands[n:]):
            if init.opcode != "parameter" or k >= len(parts) or init.shape.rank != 0:
                continue
            identity = _identity(parts[k].opcode, init.shape.element_type)
            if identity is not None:
                out[init.parameter_number] = identity
    return out


def errors(got: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Element-wise absolute and relative errors; equal values (infinities
    of the same sign too) and NaN where both are NaN count as equal."""
    as_type = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64
    g, w = got.astype(as_type), want.astype(as_type)
    with np.errstate(invalid="ignore"):
        # Complex numbers: the distance in the plane.
        diff = np.where((g == w) | (np.isnan(g) & np.isnan(w)), 0.0, np.abs(g - w))
    rel = diff / np.maximum(np.abs(np.nan_to_num(w)), np.finfo(np.float32).tiny)
    return diff, rel


def reference_text(comp) -> str:
    """The fused computation as a module of its own, as XLA takes it."""
    called = comp.callees()
    was_entry = comp.is_entry
    comp.is_entry = True
    try:
        with as_xla_takes_it([*called, comp]):
            parts = [c.to_text() for c in called] + [comp.to_text()]
    finally:
        comp.is_entry = was_entry
    return "HloModule reference\n\n" + "\n\n".join(parts) + "\n"


def report(label: str, got: np.ndarray, want: np.ndarray, abs_bound: float,
           rel_bound: float) -> bool:
    """Prints `PASS|FAIL label: ...` (largest errors, elements off both
    bounds); returns whether it failed."""
    diff, rel = errors(got, want)
    abs_err = float(np.max(diff)) if diff.size else 0.0
    rel_err = float(np.max(rel)) if diff.size else 0.0
    bad = ~((diff <= abs_bound) | (rel <= rel_bound))
    print(f"{'FAIL' if bad.any() else 'PASS'} {label}: max abs error {abs_err:.3g}, max rel "
          f"error {rel_err:.3g}, {int(bad.sum())} of {diff.size} elements out of bounds")
    return bool(bad.any())


def _check_input_bijection(emitter, comp, roots, spec: str) -> str | None:
    """`HERO[:IDS]`: the thread -> input indexing of operands IDS (all
    without `:`) of HERO must cover each operand element exactly once. When
    HERO is an output's hero, the emitter's own thread -> input map says
    it (XLA's ComputeThreadIdToInputIndexing); any other instruction
    reached from the first output is read through the output's map.
    Returns the failure, if any."""
    hero_name, colon, ids = spec.partition(":")
    hero = next((i for i in comp.instructions if i.name == hero_name), None)
    if hero is None or (colon and not ids):
        raise ToolError(f"--bijection_inputs needs HERO[:OPERAND_INDICES] with an instruction "
                        f"of the fusion, got '{spec}'")
    heroes = emitter.analysis.heroes
    root_index = next((k for k, h in enumerate(heroes) if h is hero), None)
    to_hero = None
    if root_index is None:
        to_hero = indexing_from(comp, roots[0], roots[0].shape.dims).get(id(hero), [])
        if len(to_hero) != 1:
            raise ToolError(f"{hero_name} is read at {len(to_hero)} indices per output "
                            "element; the bijection needs exactly one")
    per_operand = output_to_input_indexing(hero) if root_index is None else None
    tokens = ids.split(",") if colon else [str(k) for k in range(len(hero.operands))]
    for token in tokens:
        k = int(token) if token.strip().isdigit() else -1
        if not 0 <= k < len(hero.operands):
            raise ToolError(f"{hero_name} has no operand {token.strip()} read through "
                            "a single map")
        if root_index is not None:
            m = emitter.thread_to_input_map(root_index, k)
        elif len(per_operand[k]) == 1:
            m = _thread_map(emitter, 0).then(to_hero[0]).then(per_operand[k][0])
        else:
            m = None
        if m is None:
            raise ToolError(f"the {emitter.kind.value} emitter has no thread -> input map "
                            f"of operand {k} of {hero_name}")
        ok, why = m.is_bijection(list(hero.operands[k].shape.dims))
        if not ok:
            return (f"FAIL: the thread -> input {k} indexing of {hero_name} is not a "
                    f"bijection: {why}")
    return None


def _thread_map(emitter, root_index: int):
    threads = emitter.thread_to_output_map(root_index)
    if threads is None:
        raise ToolError(f"the {emitter.kind.value} emitter's thread -> output indexing is "
                        "not an affine map; there is no bijection to check")
    return threads


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="test-correctness", description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--abs_error_bound", type=float, default=1e-4)
    parser.add_argument("--rel_error_bound", type=float, default=1e-4)
    parser.add_argument("--bijection_outputs", action="append", default=[], metavar="ROOT")
    parser.add_argument("--bijection_inputs", action="append", default=[],
                        metavar="HERO[:OPERAND_INDICES]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=sorted(DEVICES), default=DEFAULT_DEVICE.name,
                        help="the GPU whose launch dimensions the kernel uses")
    parser.add_argument("--platform", type=platform_arg, default="cpu",
                        help="where the kernel runs: cpu (the CPU target, default) or cuda")
    add_verbose_flag(parser)
    args = parser.parse_args(argv)
    enable_remarks(args.verbose)

    def body() -> int:
        require_platform(args.platform)
        module = read_hlo(args.file)
        fusion = find_fusion(module)
        comp = fusion.fused_computation
        refuse_divisions_xla_cannot_fold(args.file, [comp], "test-correctness has no "
                                         "reference to compare with")
        check_host_memory([p.shape for p in comp.parameters] + [comp.root.shape],
                          f"the arrays of {fusion.name}")
        rng = np.random.RandomState(args.seed)
        inputs = [random_input(p.shape, rng) for p in comp.parameters]
        for number, identity in reduction_init_values(comp).items():
            inputs[number] = identity
        roots = comp.outputs
        outputs = [unwritten(r.shape.dims, r.shape.element_type.dtype) for r in roots]
        with new_context():
            emitter = make_emitter(fusion, device_named(args.device))
            kernel = emitter.emit()
            names = [r.name for r in roots]
            for root_name in args.bijection_outputs:
                if root_name not in names:
                    raise ToolError(f"no output named '{root_name}' (the outputs: "
                                    f"{', '.join(names)})")
                k = names.index(root_name)
                threads = _thread_map(emitter, k)
                ok, why = threads.is_bijection(list(roots[k].shape.dims))
                if not ok:
                    print(f"FAIL: the thread -> output indexing of {root_name} is not a "
                          f"bijection: {why}")
                    return 1
            for spec in args.bijection_inputs:
                failure = _check_input_bijection(emitter, comp, roots, spec)
                if failure:
                    print(failure)
                    return 1
            if args.platform == "cuda":
                from ..runtime.bundle import make_bundle
                from ..runtime.cuda import CudaKernel
                gpu_kernel = CudaKernel(make_bundle(kernel, device_named(args.device)))
        if args.platform == "cuda":
            outputs = gpu_kernel(*inputs)
        else:
            CpuKernel(kernel)(*inputs, *outputs)
        expected = run_with_xla(reference_text(comp), inputs)
        failed = False
        for root, got, want in zip(roots, outputs, expected):
            failed |= report(root.name, got, want, args.abs_error_bound, args.rel_error_bound)
        return 1 if failed else 0

    return run_tool("test-correctness", body)


if __name__ == "__main__":
    sys.exit(main())

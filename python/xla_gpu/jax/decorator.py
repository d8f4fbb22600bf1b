"""`xla_gpu.jax.kernel`: a jax function of arrays as one of our kernels.

    @xla_gpu.jax.kernel
    def gelu(x):
        return 0.5 * x * (1 + jnp.tanh(0.797885 * (x + 0.044715 * x ** 3)))

    gelu(x)                      # eager, or inside jax.jit / vmap / grad / shard_map

For the shapes of a call, the function is traced to HLO (jax's module
before XLA's optimizations; written straight from the jaxpr where every
operation maps onto HLO one to one, see from_jaxpr), the whole entry is
taken as one fusion -- as XLA's emitter tools take a bare computation --
and our emitters build its
kernel (loop, reduction, transpose, concatenate, scatter, ... whichever the
fusion analysis picks), compiled for the backend in use and dispatched
through the FFI handlers. An operation the emitters cannot take is a
KernelError naming it and the Python line that made it.

Transformations:
  - jit: the kernel is built when the function is traced;
  - vmap: a batching rule (jax.custom_batching.custom_vmap) that builds the
    kernel of the batched function, `jax.vmap(fn)`, so a batch is one
    launch; should that not be one kernel, the batch runs the function's
    kernel once an element (lax.map);
  - grad: a custom_vjp whose backward pass -- jax's vjp of the function --
    goes through this decorator too, as its own kernel (where it is not one
    fusion, e.g. a reduction beside an elementwise gradient, it stays jax's,
    said on the "xla_gpu.jax" logger);
  - shard_map: each shard's call is built for the shard's shape.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import math
import os
import re
import threading
from pathlib import Path

import jax
import jax.numpy as jnp

from ..emitters import EmitterError, EmitterKind, analyze_fusion, emit_kernel, find_fusion
from ..emitters.device import DEFAULT_DEVICE, DeviceDescription
from ..emitters.tree_reduction import recomputed_reduce, split_reduction
from ..hlo import parse_hlo
from ..hlo.parser import HloParseError
from ..pipelines import compile_context
from .from_jaxpr import hlo_from_jaxpr
from .kernel_call import KernelCall, KernelChain, call_from_json, prepare

__all__ = ["KernelError", "kernel"]


_log = logging.getLogger("xla_gpu.jax")


class KernelError(ValueError):
    """A function our emitters cannot turn into one kernel (the operation,
    and where in the user's code it came from)."""


_lock = threading.Lock()
# The compiled call of each traced module, by a hash of its HLO text and
# the target: the same function at the same shapes compiles once a process
# (and, with $XLA_GPU_CACHE_DIR, is emitted once a machine).
_calls: dict[str, KernelCall | KernelChain] = {}


def _platform() -> str:
    return "cuda" if jax.default_backend() == "gpu" else "cpu"


def _stack_frames(text: str) -> dict[int, str]:
    """stack_frame_id -> `file:line` from the tables jax writes ahead of the
    module with debug info (FileNames, FileLocations, StackFrames)."""
    def table(name: str) -> dict[int, str]:
        m = re.search(rf"^{name}\n((?:\d+ .*\n)*)", text, re.M)
        rows = re.findall(r"^(\d+) (.*)$", m.group(1), re.M) if m else []
        return {int(k): v for k, v in rows}

    files = {k: v.strip('"') for k, v in table("FileNames").items()}
    locations = {}
    for k, v in table("FileLocations").items():
        f, line = re.search(r"file_name_id=(\d+)", v), re.search(r"\bline=(\d+)", v)
        if f and line:
            locations[k] = f"{files.get(int(f.group(1)), '?')}:{line.group(1)}"
    frames = {}
    for k, v in table("StackFrames").items():
        loc = re.search(r"file_location_id=(\d+)", v)
        if loc and int(loc.group(1)) in locations:
            frames[k] = locations[int(loc.group(1))]
    return frames


def _where(error: EmitterError, text: str) -> str:
    """Where in the user's code the instruction that failed came from, from
    the metadata jax writes (op_name, stack_frame_id)."""
    inst = getattr(error, "instruction", None)
    attr = inst.attributes.get("metadata") if inst is not None else None
    meta = attr.value if attr is not None and isinstance(attr.value, dict) else {}
    op = str(meta.get("op_name", "")).strip('"')
    frame = meta.get("stack_frame_id")
    place = _stack_frames(text).get(int(frame)) if frame is not None else None
    parts = [p for p in (place and f"at {place}", op) if p]
    return f" ({', '.join(parts)})" if parts else ""


def _cache_file(key: str) -> Path | None:
    folder = os.environ.get("XLA_GPU_CACHE_DIR")
    return Path(folder) / f"{key}.json" if folder else None


def _build(fn, name: str, avals: tuple, platform: str,
           device: DeviceDescription) -> tuple[KernelCall | KernelChain, object]:
    """The kernel of `fn` at `avals`, compiled for `platform`, and the tree
    of its outputs: from the in-memory cache, else the disk cache
    ($XLA_GPU_CACHE_DIR), else emitted now (and written to both)."""
    traced = jax.jit(fn, keep_unused=True).trace(*avals)
    # The HLO straight from the jaxpr (0.1-0.5 ms); else jax's lowering,
    # keyed by its StableHLO text without locations (source lines move,
    # kernels do not): 4 ms, and the conversion to HLO text 4 more, made
    # only when the kernel is not cached.
    text = hlo_from_jaxpr(traced.jaxpr, name, platform)
    lowered = None
    if text is None:
        lowered = traced.lower()
    source = text if text is not None else lowered.as_text()
    key = hashlib.sha256(f"{source}\0{platform}\0{device.name}".encode()).hexdigest()
    with _lock:
        cached = _calls.get(key)
    if cached is not None:
        return cached, traced.out_tree
    disk = _cache_file(key)
    if disk is not None and disk.exists():
        built = call_from_json(disk.read_text())
        with _lock:
            _calls[key] = built
        return built, traced.out_tree
    if text is None:
        text = lowered.as_text(dialect="hlo", debug_info=True)
    try:
        built = _emit(text, name, platform, device)
    except (EmitterError, HloParseError) as e:
        if lowered is not None:
            raise _refused(name, e, text) from None
        if isinstance(e, HloParseError):  # from_jaxpr's fault: said, and jax's lowering takes over
            _log.warning("%s: the HLO written from its jaxpr does not parse (%s); "
                         "lowering it with jax", name, e)
        # Again from jax's HLO, whose metadata says where in the user's
        # code an operation the emitters refuse came from.
        text = traced.lower().as_text(dialect="hlo", debug_info=True)
        try:
            built = _emit(text, name, platform, device)
        except (EmitterError, HloParseError) as located:
            raise _refused(name, located, text) from None
    with _lock:
        _calls[key] = built
    if disk is not None:
        disk.parent.mkdir(parents=True, exist_ok=True)
        partial = disk.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(built.to_json())
        partial.replace(disk)  # atomic: readers see a whole file or none
    return built, traced.out_tree


def _refused(name: str, error: EmitterError | HloParseError, text: str) -> KernelError:
    if isinstance(error, HloParseError):
        return KernelError(f"{name}: {error}")
    return KernelError(f"{name}: our emitters cannot take this function as one kernel: "
                       f"{error}{_where(error, text)}")


# A loop kernel of fewer threads than this, each reducing more elements
# than this, is said to be slow (a sum and a max of f32[1024,1024] as one
# kernel: one thread each, ~7x jax.jit).
_FEW_THREADS, _LONG_REDUCTION = 64, 1 << 16
# How many times over a kernel's reduce-windows may read its inputs before
# it is said to be slow (a cumulative op).
_MOST_WINDOW_READS = 64


def _warn_of_slow_reductions(fusion, name: str) -> None:
    """Says (on the "xla_gpu.jax" logger) where the function, as one loop
    kernel that _split could not take apart, recomputes a reduction for
    every element that reads it (tree_reduction.recomputed_reduce: a
    softmax over rows of 1024 as one kernel ran 150x slower than jax.jit),
    reduces long windows (a cumulative op), or reduces a long reduction on
    a few threads."""
    found = recomputed_reduce(fusion)
    if found is not None:
        reduce, times = found
        results = max(1, max(s.num_elements for s in reduce.shape.leaves()))
        outputs = max(o.shape.num_elements for o in fusion.fused_computation.outputs)
        _log.warning("%s: as one kernel, each of its %d output elements recomputes "
                     "reduce %s over %d elements (%.0fx its inputs read); xla_gpu.jax.jit "
                     "runs it as XLA's fusions", name, outputs, reduce.name,
                     reduce.operands[0].shape.num_elements // results, times)
        return
    if analyze_fusion(fusion).kind != EmitterKind.LOOP:
        return
    comp = fusion.fused_computation
    outputs = max(o.shape.num_elements for o in comp.outputs)
    inputs = max(1, sum(p.shape.num_elements for p in comp.parameters))
    for inst in comp.instructions:
        # A cumulative op as jax writes it: a reduce-window over the whole
        # axis, each element reducing its prefix (cummax over rows of 512 as
        # one kernel: 2.3-3.3x jax.jit, whose XLA:CPU module scans in log
        # steps).
        size = math.prod((inst.attr("window") or {}).get("size", [])) \
            if inst.opcode == "reduce-window" else 0
        if outputs * size > _MOST_WINDOW_READS * inputs:
            _log.warning("%s: as one kernel, each of its %d output elements reduces a window "
                         "of up to %d elements in reduce-window %s (%.0fx its inputs read); "
                         "xla_gpu.jax.jit runs it as XLA's fusions", name, outputs, size,
                         inst.name, outputs * size / inputs)
            return
    for o in comp.outputs:
        if o.opcode != "reduce":
            continue
        window = o.operands[0].shape.num_elements // max(1, o.shape.leaves()[0].num_elements)
        if outputs < _FEW_THREADS and window > _LONG_REDUCTION:
            # Not race-free, and not split (_split takes one reduce, and
            # what follows it one to one): a thread an output.
            _log.warning("%s: as one kernel, each of its %d threads reduces %d elements "
                         "in order (a reduction no block can do alone); xla_gpu.jax.jit "
                         "splits it", name, outputs, window)
            return


def _split(fusion, platform: str, device: DeviceDescription) -> KernelChain | None:
    """The fusion as the kernels of its parts (emitters/tree_reduction.py)
    where it is a reduction no block can do alone (split as XLA:GPU's
    tree-reduction-rewriter splits it) or a loop kernel that would
    recompute a reduction for every element (the reduction taken out),
    compiled; None where it is neither, or a part is not ours."""
    params = fusion.fused_computation.parameters
    if not fusion.operands:  # find_fusion's wrapper of the whole entry
        fusion = dataclasses.replace(fusion, operands=list(params))
    parts = split_reduction(fusion, device.threads_per_warp, host=platform == "cpu")
    if not parts:
        return None
    try:
        kernels = [emit_kernel(part, device, host=platform == "cpu") for part in parts]
    except EmitterError:
        return None
    position = {id(o): k for k, o in enumerate(fusion.operands)}
    position.update((id(part), -1 - j) for j, part in enumerate(parts))
    return KernelChain(tuple(prepare(k, platform, device, background=True) for k in kernels),
                       tuple(tuple(position[id(o)] for o in part.operands) for part in parts))


def _emit(text: str, name: str, platform: str,
          device: DeviceDescription) -> KernelCall | KernelChain:
    """The kernel of an HLO module's entry as one fusion (or the kernels of
    its parts, see _split), compiled; raises EmitterError or HloParseError
    as they come, KernelError for the rest."""
    try:
        module = parse_hlo(text, source=f"<{name}>")
        with compile_context():
            fusion = find_fusion(module)
            chain = _split(fusion, platform, device)
            if chain is not None:
                return chain
            emitted = emit_kernel(fusion, device, host=platform == "cpu")
            _warn_of_slow_reductions(fusion, name)
            return prepare(emitted, platform, device, background=True)
    except (EmitterError, HloParseError):
        raise
    except ValueError as e:
        raise KernelError(f"{name}: {e}") from None


def _aval(x) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x))


def _runner(fn, name: str, device: DeviceDescription):
    """`fn` as a kernel call, whose batching rule makes a kernel of the
    batched function (one launch for the whole batch, not one an element)."""

    @jax.custom_batching.custom_vmap
    def run(*args):
        args = [jnp.asarray(a) for a in args]
        avals = tuple(_aval(a) for a in args)
        built, out_tree = _build(fn, name, avals, _platform(), device)
        return jax.tree_util.tree_unflatten(out_tree, built(*args))

    @run.def_vmap
    def run_batched(axis_size, in_batched, *args):
        batched_fn = jax.vmap(fn, in_axes=tuple(0 if b else None for b in in_batched))
        try:
            out = _runner(batched_fn, f"vmap({name})", device)(*args)
        except KernelError:
            # The batched function is not one kernel: the batch runs the
            # kernel once an element.
            full = [a if b else jnp.broadcast_to(a, (axis_size, *jnp.shape(a)))
                    for a, b in zip(args, in_batched)]
            out = jax.lax.map(lambda xs: run(*xs), tuple(full))
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return run


def _flat_kernel(fn, name: str, device: DeviceDescription):
    """`fn` of arrays as a kernel call differentiable through a custom_vjp
    whose backward pass (jax's vjp of `fn`) is a kernel of its own."""
    run = _runner(fn, name, device)

    @jax.custom_vjp
    def call(*args):
        return run(*args)

    def forward(*args):
        return run(*args), args

    def backward(args, cotangents):
        differentiable = [i for i, a in enumerate(args)
                          if jnp.issubdtype(jnp.result_type(a), jnp.inexact)]
        flat_ct, ct_tree = jax.tree_util.tree_flatten(cotangents)
        n = len(args)

        def vjp_of(*primals_and_cts):
            primals, cts = primals_and_cts[:n], primals_and_cts[n:]
            _, pullback = jax.vjp(fn, *primals)
            grads = pullback(jax.tree_util.tree_unflatten(ct_tree, list(cts)))
            return tuple(grads[i] for i in differentiable)

        vjp_of.__name__ = f"{name}_vjp"
        if not differentiable:
            grads = ()
        else:
            try:
                grads = kernel(vjp_of, device=device)(*args, *flat_ct)
            except KernelError as e:
                # A backward pass is often more than one fusion (a reduction
                # beside an elementwise result): it is then jax's (XLA's).
                _log.info("the backward pass of %s stays XLA's: %s", name, e)
                grads = vjp_of(*args, *flat_ct)
        out = [None] * n
        for i, g in zip(differentiable, grads):
            out[i] = g
        return tuple(out)

    call.defvjp(forward, backward)
    return call


def kernel(fn=None, *, device: DeviceDescription = DEFAULT_DEVICE):
    """Decorates a jax function of positional arguments -- arrays or pytrees
    of arrays (dicts of parameters, tuples) -- returning an array or a
    pytree of arrays, so that it runs as one of our kernels."""
    if fn is None:
        return functools.partial(kernel, device=device)
    name = getattr(fn, "__name__", "function")
    # One differentiable kernel call a structure of the arguments (the
    # kernels themselves are cached by their HLO).
    by_structure: dict = {}

    @functools.wraps(fn)
    def wrapper(*args):
        leaves, structure = jax.tree_util.tree_flatten(args)
        call = by_structure.get(structure)
        if call is None:
            if structure == jax.tree_util.tree_structure(tuple(leaves)):
                flat_fn = fn   # positional arrays already
            else:
                def flat_fn(*flat):
                    return fn(*jax.tree_util.tree_unflatten(structure, list(flat)))
                flat_fn.__name__ = name
            call = by_structure[structure] = _flat_kernel(flat_fn, name, device)
        return call(*leaves)

    return wrapper

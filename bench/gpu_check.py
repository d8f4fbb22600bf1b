"""The GPU check, run on the GPU machine (jax with its CUDA plugin, no MLIR):
our PTX launched by the CUDA FFI handler inside jax.jit, against XLA:GPU
running the same functions.

    # here (no GPU): the kernels
    .venv/bin/python bench/gpu_check_prepare.py
    # there: build the handler from ffi/ (seconds), launch, compare, time
    python3 bench/gpu_check.py --kernels bench/out/gpu_check/kernels.json --out $OUT

For each case of bench/gpu_cases.py: the max error against jax.jit of the
same function (XLA:GPU) and both times (medians of --runs, after warm-up),
then a bad call (a wrong dtype) that must come back as an error naming the
argument with the process still working. Writes results.json; exits 1 if a
case is wrong.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import gpu_cases  # noqa: E402

TARGET = "xla_gpu_cuda_kernel"


def build_handler(build_dir: Path) -> Path:
    """libxla_gpu_ffi.so from ffi/ against this jax's FFI headers."""
    build_dir.mkdir(parents=True, exist_ok=True)
    lib = build_dir / "libxla_gpu_ffi.so"
    sources = [str(ROOT / "ffi" / f) for f in ("kernel_call.cc", "cpu_handler.cc",
                                               "cuda_handler.cc")]
    subprocess.run(["c++", "-std=c++17", "-O2", "-shared", "-fPIC", "-I", str(ROOT),
                    "-isystem", jax.ffi.include_dir(), *sources, "-o", str(lib), "-ldl"],
                   check=True)
    return lib


def _decode(v):
    from jax._src.hashable_array import HashableArray
    if isinstance(v, dict) and "array" in v:
        return HashableArray(np.array(v["array"], v["dtype"]))
    if isinstance(v, dict) and "scalar" in v:
        return np.dtype(v["dtype"]).type(v["scalar"])
    if isinstance(v, dict) and "dict" in v:
        return {k: _decode(x) for k, x in v["dict"].items()}
    return v


def ffi_function(call: dict):
    """A jax function launching one prepared kernel (KernelCall.to_json's
    fields)."""
    import ml_dtypes
    attributes = _decode(call["attributes"])
    shapes = tuple(jax.ShapeDtypeStruct(tuple(d), np.dtype(getattr(ml_dtypes, t, t)))
                   for d, t in call["result_shapes"])
    aliases = {i: o for i, o in call["input_output_aliases"]} or None

    def run(*arrays):
        out = jax.ffi.ffi_call(TARGET, shapes, input_output_aliases=aliases)(
            *arrays, **attributes)
        return out[0] if len(out) == 1 else tuple(out)

    return run


def _median_ms(fn, args, runs: int) -> float:
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return float(np.median(times) * 1e3)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=Path, default=HERE / "out" / "gpu_check" / "kernels.json")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "gpu_check")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    if jax.default_backend() != "gpu":
        print(f"no GPU backend (jax's default backend is {jax.default_backend()}): "
              "this check runs on the GPU machine", file=sys.stderr)
        return 1
    lib = ctypes.CDLL(str(build_handler(args.out / "build")))
    jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(lib.XlaGpuCudaKernel),
                                platform="CUDA")
    prepared = json.loads(args.kernels.read_text())["calls"]
    results, failed = [], False
    for name, (fn, specs, tol) in gpu_cases.GPU_CASES.items():
        inputs = [jnp.asarray(a) for a in gpu_cases.inputs(specs)]
        ours = jax.jit(ffi_function(prepared[name]))
        xla = jax.jit(fn)
        got, want = np.asarray(ours(*inputs), np.float64), np.asarray(xla(*inputs), np.float64)
        err = float(np.max(np.abs(got - want))) if got.size else 0.0
        scale = float(np.max(np.abs(want))) or 1.0
        ok = got.shape == want.shape and err <= tol * scale
        failed |= not ok
        r = {"name": name, "max_abs_error": err, "ok": ok,
             "ours_ms": _median_ms(ours, inputs, args.runs),
             "xla_gpu_ms": _median_ms(xla, inputs, args.runs)}
        r["ratio"] = r["ours_ms"] / r["xla_gpu_ms"]
        results.append(r)
        print(f"{name:34s} {'ok ' if ok else 'BAD'} error {err:.3g}  ours {r['ours_ms']:.3f} ms"
              f"  XLA:GPU {r['xla_gpu_ms']:.3f} ms  ratio {r['ratio']:.2f}", flush=True)
    # A bad call: the error names the argument, the process goes on.
    name = "gelu bf16[6,512,4096]"
    wrong = jnp.zeros((6, 512, 4096), jnp.float32)
    try:
        jax.block_until_ready(jax.jit(ffi_function(prepared[name]))(wrong))
        bad_call = "no error"
    except Exception as e:  # jax raises its runtime error type
        bad_call = str(e).splitlines()[0]
    bad_ok = "argument 0: expected dtype BF16 but got F32" in bad_call
    again = gpu_cases.inputs(gpu_cases.GPU_CASES[name][1])
    still_works = bool(np.all(np.isfinite(np.asarray(
        jax.jit(ffi_function(prepared[name]))(jnp.asarray(again[0])), np.float32))))
    print(f"bad call: {bad_call!r} -> {'ok' if bad_ok else 'BAD'}; later call works: {still_works}")
    failed |= not (bad_ok and still_works)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(
        {"device": str(jax.devices()[0]), "jax": jax.__version__, "cases": results,
         "bad_call": bad_call, "bad_call_ok": bad_ok, "later_call_works": still_works},
        indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

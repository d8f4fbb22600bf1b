"""The GPU check, run on the GPU machine (jax with its CUDA plugin, numpy,
compute-sanitizer; no MLIR): our PTX on the GPU against XLA:GPU.

    # here (no GPU): kernels.json and the bundles
    .venv/bin/python bench/gpu_check_prepare.py
    # there: one command, under 8 minutes
    python3 bench/gpu_check.py --prepared bench/out/gpu_check --out $OUT

1. Bundles (runtime/cuda.py, ctypes on the driver): every fusion of the
   emitter tests and of bench/'s HLO cases launched on the same inputs as
   XLA:GPU running its reference.hlo; max error against a tolerance by
   element type, both times (CUDA events for ours, wall clock around
   XLA's executable), achieved GB/s and its fraction of the copy bandwidth
   measured in the same run; compute-sanitizer memcheck on a sample.
2. The JAX backend: bench/gpu_cases.py's kernels launched by the CUDA FFI
   handler (built here from ffi/, seconds) inside jax.jit, against jax.jit
   of the same functions, then a bad call (a wrong dtype) that must come
   back as an error naming the argument, the process still working.

Writes results.json; exits 1 if a case is wrong.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
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
RUNTIME = ROOT / "python" / "xla_gpu" / "runtime"

# Tolerances by the results' element type: |ours - XLA| <= tol * (1 + |XLA|)
# (libdevice's and XLA's transcendentals, and sums in another order, differ
# by ulps; integers, predicates and data movement are exact).
TOLERANCE = {"f64": 1e-9, "f32": 1e-4, "c64": 1e-4, "c128": 1e-9, "f16": 1e-2, "bf16": 2e-2}
NARROW_FLOAT_TOLERANCE = 0.25   # 8-bit floats: one step of a 3-bit mantissa


def _runtime():
    sys.path.insert(0, str(RUNTIME))
    import cuda
    return cuda


class XlaGpu:
    """An HLO module compiled by XLA:GPU (this jax's CUDA backend)."""

    def __init__(self, hlo_text: str):
        from jax._src import xla_bridge
        from jax._src.lib import xla_client as xc
        module = xc.hlo.hlo_module_from_text(hlo_text)
        stablehlo = xc._xla.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
        client = xla_bridge.get_backend("cuda")
        self.device = client.devices()[0]
        self.executable = client.compile_and_load(stablehlo, xc.DeviceList((self.device,)),
                                                  xc.CompileOptions())

    def run(self, buffers) -> list:
        results = self.executable.execute_sharded(buffers)
        outs = [r[0] for r in results.disassemble_into_single_device_arrays()]
        for o in outs:
            o.block_until_ready()
        return outs

    def put(self, arrays):
        with jax.enable_x64(True):
            return [jax.device_put(a, self.device) for a in arrays]


def copy_bandwidth_gbs(cuda, num_bytes: int = 1 << 29) -> float:
    """Device-to-device copy bandwidth (read + write bytes a second)."""
    d = cuda.driver()
    src, dst = d.alloc(num_bytes), d.alloc(num_bytes)
    start, stop = ctypes.c_void_p(), ctypes.c_void_p()
    d.check(d.lib.cuEventCreate(ctypes.byref(start), 0), "cuEventCreate")
    d.check(d.lib.cuEventCreate(ctypes.byref(stop), 0), "cuEventCreate")
    times = []
    for _ in range(6):
        d.check(d.lib.cuEventRecord(start, None), "cuEventRecord")
        d.check(d.lib.cuMemcpyDtoD_v2(dst, src, ctypes.c_size_t(num_bytes)), "cuMemcpyDtoD")
        d.check(d.lib.cuEventRecord(stop, None), "cuEventRecord")
        d.check(d.lib.cuEventSynchronize(stop), "cuEventSynchronize")
        ms = ctypes.c_float()
        d.check(d.lib.cuEventElapsedTime(ctypes.byref(ms), start, stop), "cuEventElapsedTime")
        times.append(ms.value)
    d.free(src)
    d.free(dst)
    return 2 * num_bytes / (float(np.median(times[1:])) * 1e-3) / 1e9


def _tolerance(dtype: str, narrowest: str | None = None) -> float | None:
    """The tolerance of a result of type `dtype` computed through floats as
    narrow as `narrowest` (a bf16 exp summed in f32 is a bf16 result)."""
    def of(t):
        return NARROW_FLOAT_TOLERANCE if t.startswith("f8") else TOLERANCE.get(t)

    own = of(dtype)
    if own is None or narrowest is None or of(narrowest) is None:
        return own
    return max(own, of(narrowest))


def _max_error(got: np.ndarray, want: np.ndarray, dtype: str,
               narrowest: str | None = None) -> tuple[float, bool]:
    tol = _tolerance(dtype, narrowest)
    if tol is None:  # integers, predicates: exact
        same = np.array_equal(got.astype(np.int64), want.astype(np.int64))
        return (0.0 if same else float("inf")), same
    g, w = got.astype(np.complex128 if dtype.startswith("c") else np.float64), \
        want.astype(np.complex128 if dtype.startswith("c") else np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    with np.errstate(invalid="ignore"):
        diff = np.where(both_nan | (g == w), 0, np.abs(g - w))
    diff = np.where(np.isnan(diff), np.inf, diff)
    err = float(np.max(diff)) if diff.size else 0.0
    return err, bool(np.all(diff <= tol * (1 + np.abs(np.where(both_nan, 0, w)))))


def check_bundles(prepared: Path, runs: int, only: str | None, copy_gbs: float) -> list[dict]:
    cuda = _runtime()
    results = []
    for meta in sorted((prepared / "bundles").rglob("kernel.json")):
        folder = meta.parent
        name = str(folder.relative_to(prepared / "bundles"))
        if only and only not in name:
            continue
        r = {"case": name}
        try:
            bundle = cuda.KernelBundle.load(folder)
            inputs = cuda.random_inputs(bundle)
            kernel = cuda.CudaKernel(bundle)
            ours = kernel(*inputs)
            xla = XlaGpu((folder / "reference.hlo").read_text())
            buffers = xla.put(inputs)
            want = [np.asarray(o) for o in xla.run(buffers)]
            narrowest = bundle.info.get("narrowest_float")
            errors = [_max_error(g, w.reshape(g.shape), spec.dtype, narrowest)
                      for g, w, spec in zip(ours, want, bundle.results)]
            r["max_error"] = max(e for e, _ in errors) if errors else 0.0
            r["ok"] = all(ok for _, ok in errors) and len(ours) == len(want)
            r["ours_us"] = kernel.time(*inputs, iterations=runs) * 1e3
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                xla.run(buffers)
                times.append(time.perf_counter() - start)
            r["xla_us"] = float(np.median(times)) * 1e6
            r["ratio"] = r["ours_us"] / r["xla_us"]
            moved = sum(s.num_bytes for s in bundle.parameters + bundle.results)
            r["achieved_gbs"] = moved / (r["ours_us"] * 1e-6) / 1e9
            r["fraction_of_copy_bandwidth"] = r["achieved_gbs"] / copy_gbs
        except Exception as e:  # reported, and the check fails
            r["ok"] = False
            r["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        results.append(r)
        print(f"{name:60s} {'ok ' if r['ok'] else 'BAD'} "
              + (f"err {r['max_error']:.2g} ours {r['ours_us']:.1f} us XLA {r['xla_us']:.1f} us "
                 f"{r['fraction_of_copy_bandwidth']:.0%} of copy bw" if "ours_us" in r
                 else r.get("error", "")), flush=True)
    return results


def memcheck(prepared: Path, cases: list[str]) -> list[dict]:
    """compute-sanitizer --tool memcheck on a sample of bundles (one
    process each, this script with --bundles-only --only CASE)."""
    tool = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    out = []
    for case in cases:
        cmd = [tool, "--tool", "memcheck", "--error-exitcode", "3", sys.executable, __file__,
               "--prepared", str(prepared), "--bundles-only", "--only", case, "--runs", "1",
               "--out", str(Path(os.environ.get("TMPDIR", "/tmp")) / "memcheck")]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            summary = [l for l in p.stdout.splitlines() if "ERROR SUMMARY" in l]
            out.append({"case": case, "exit": p.returncode,
                        "summary": summary[-1] if summary else p.stderr[-300:]})
        except (OSError, subprocess.TimeoutExpired) as e:
            out.append({"case": case, "exit": -1, "summary": str(e)})
        print(f"memcheck {case}: {out[-1]['summary']}", flush=True)
    return out


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


def check_ffi(prepared: Path, out: Path, runs: int) -> dict:
    lib = ctypes.CDLL(str(build_handler(out / "build")))
    jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(lib.XlaGpuCudaKernel),
                                platform="CUDA")
    calls = json.loads((prepared / "kernels.json").read_text())["calls"]
    results, failed = [], False
    for name, (fn, specs, tol) in gpu_cases.GPU_CASES.items():
        inputs = [jnp.asarray(a) for a in gpu_cases.inputs(specs)]
        ours = jax.jit(ffi_function(calls[name]))
        xla = jax.jit(fn)
        got, want = np.asarray(ours(*inputs), np.float64), np.asarray(xla(*inputs), np.float64)
        err = float(np.max(np.abs(got - want))) if got.size else 0.0
        scale = float(np.max(np.abs(want))) or 1.0
        ok = got.shape == want.shape and err <= tol * scale
        failed |= not ok
        r = {"name": name, "max_abs_error": err, "ok": ok,
             "ours_ms": _median_ms(ours, inputs, runs),
             "xla_gpu_ms": _median_ms(xla, inputs, runs)}
        r["ratio"] = r["ours_ms"] / r["xla_gpu_ms"]
        results.append(r)
        print(f"ffi {name:34s} {'ok ' if ok else 'BAD'} error {err:.3g}  ours "
              f"{r['ours_ms']:.3f} ms  XLA:GPU {r['xla_gpu_ms']:.3f} ms  ratio {r['ratio']:.2f}",
              flush=True)
    # A bad call: the error names the argument, the process goes on.
    name = "gelu bf16[6,512,4096]"
    wrong = jnp.zeros((6, 512, 4096), jnp.float32)
    try:
        jax.block_until_ready(jax.jit(ffi_function(calls[name]))(wrong))
        bad_call = "no error"
    except Exception as e:  # jax raises its runtime error type
        bad_call = str(e).splitlines()[0]
    bad_ok = "argument 0: expected dtype BF16 but got F32" in bad_call
    again = gpu_cases.inputs(gpu_cases.GPU_CASES[name][1])
    still_works = bool(np.all(np.isfinite(np.asarray(
        jax.jit(ffi_function(calls[name]))(jnp.asarray(again[0])), np.float32))))
    print(f"ffi bad call: {bad_call!r} -> {'ok' if bad_ok else 'BAD'}; later call works: "
          f"{still_works}", flush=True)
    return {"cases": results, "bad_call": bad_call, "bad_call_ok": bad_ok,
            "later_call_works": still_works,
            "ok": not failed and bad_ok and still_works}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prepared", type=Path, default=HERE / "out" / "gpu_check",
                        help="what gpu_check_prepare.py wrote (kernels.json, bundles/)")
    parser.add_argument("--out", type=Path, default=HERE / "out" / "gpu_check")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", default=None, help="the bundles whose name has this")
    parser.add_argument("--bundles-only", action="store_true")
    parser.add_argument("--memcheck", type=int, default=3, metavar="N",
                        help="bundles to run under compute-sanitizer (0: none)")
    args = parser.parse_args(argv)
    if jax.default_backend() != "gpu":
        print(f"no GPU backend (jax's default backend is {jax.default_backend()}): "
              "this check runs on the GPU machine", file=sys.stderr)
        return 1
    start = time.perf_counter()
    cuda = _runtime()
    copy_gbs = copy_bandwidth_gbs(cuda)
    print(f"device-to-device copy bandwidth: {copy_gbs:.0f} GB/s", flush=True)
    report = {"device": str(jax.devices()[0]), "jax": jax.__version__,
              "copy_bandwidth_gbs": copy_gbs}
    report["bundles"] = check_bundles(args.prepared, args.runs, args.only, copy_gbs)
    ok = all(r["ok"] for r in report["bundles"])
    if not args.bundles_only:
        report["ffi"] = check_ffi(args.prepared, args.out, args.runs)
        ok &= report["ffi"]["ok"]
        sample = [r["case"] for r in report["bundles"] if r["ok"]][::max(
            1, len(report["bundles"]) // max(1, args.memcheck))][:args.memcheck]
        report["memcheck"] = memcheck(args.prepared, sample)
        ok &= all(m["exit"] == 0 for m in report["memcheck"])
    report["seconds"] = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"{'all ok' if ok else 'FAILURES'} in {report['seconds']:.0f} s; wrote "
          f"{args.out / 'results.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

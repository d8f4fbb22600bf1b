"""The CUDA runtime (python/xla_gpu/runtime/cuda.py) and kernel bundles,
everything short of a launch: bundles written from emitted kernels and read
back, malformed bundles refused, the runtime importable without MLIR, and
a clear error where there is no driver (the launch itself is the GPU
check's, bench/gpu_check.py)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from mlir import ir

from xla_gpu.emitters import DEFAULT_DEVICE, emit_kernel, find_fusion
from xla_gpu.hlo import parse_hlo
from xla_gpu.runtime import cuda
from xla_gpu.runtime.bundle import make_bundle, write_bundles

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNTIME = os.path.join(ROOT, "python", "xla_gpu", "runtime")

DUS = """
HloModule dus
fused {
  c = bf16[16,128] parameter(0)
  u = bf16[1,128] parameter(1)
  i = s32[] parameter(2)
  z = s32[] constant(0)
  ROOT d = bf16[16,128] dynamic-update-slice(c, u, i, z)
}
ENTRY main {
  p0 = bf16[16,128] parameter(0)
  p1 = bf16[1,128] parameter(1)
  p2 = s32[] parameter(2)
  ROOT f = bf16[16,128] fusion(p0, p1, p2), kind=kLoop, calls=fused
}
"""


def _bundle(text):
    with ir.Context():
        kernel = emit_kernel(find_fusion(parse_hlo(text)), DEFAULT_DEVICE)
        return make_bundle(kernel, DEFAULT_DEVICE, name="f"), kernel


def test_bundle_round_trip_keeps_what_a_launch_needs(tmp_path):
    bundle, kernel = _bundle(DUS)
    assert f".visible .entry {kernel.entry}(" in bundle.ptx
    assert bundle.aliases == {0: 0}          # in place into the cache
    assert bundle.block_counts == kernel.launch.block_counts
    back = cuda.KernelBundle.load(bundle.save(tmp_path / "f"))
    assert back == bundle
    assert [p.dtype for p in back.parameters] == ["bf16", "bf16", "s32"]
    assert back.parameters[0].num_bytes == 16 * 128 * 2
    inputs = cuda.random_inputs(back)
    assert [a.dtype.name for a in inputs] == ["bfloat16", "bfloat16", "int32"]
    assert [a.shape for a in inputs] == [(16, 128), (1, 128), ()]


def test_sub_byte_sizes_are_packed():
    spec = cuda.BufferSpec((3, 5), "s4")
    assert spec.num_bytes == 8                # 15 nibbles
    assert cuda.BufferSpec((7,), "pred").num_bytes == 7


@pytest.mark.parametrize("change, message", [
    (lambda m: m.pop("entry"), "'entry'"),
    (lambda m: m.update(version=7), "version 7"),
    (lambda m: m["launch"].update(block_counts=[1, 0, 1]), "block_counts must be three counts"),
    (lambda m: m["parameters"][1].update(dtype="f12"), "unknown element type 'f12'"),
    (lambda m: m.update(aliases={"0": 5}), "alias 0 -> 5 is not a result and a parameter"),
    (lambda m: m.update(aliases={"0": 1}), "share a buffer but differ in size"),
])
def test_malformed_bundles_are_refused_naming_the_file(tmp_path, change, message):
    bundle, _ = _bundle(DUS)
    folder = bundle.save(tmp_path / "f")
    meta = json.loads((folder / "kernel.json").read_text())
    change(meta)
    (folder / "kernel.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="kernel.json: not a kernel bundle: .*" + message):
        cuda.KernelBundle.load(folder)


def test_write_bundles_for_every_fusion_with_its_reference(tmp_path):
    written, skipped = write_bundles(parse_hlo(DUS), tmp_path, DEFAULT_DEVICE)
    assert [p.name for p in written] == ["f"] and not skipped
    reference = (tmp_path / "f" / "reference.hlo").read_text()
    # The fusion alone, as XLA takes it: runnable by XLA:CPU here.
    from xla_gpu.reference import run_with_xla
    x = np.ones((16, 128), np.float32).astype(cuda.numpy_dtype("bf16"))
    u = np.full((1, 128), 3, np.float32).astype(cuda.numpy_dtype("bf16"))
    (out,) = run_with_xla(reference, [x, u, np.int32(5)])
    assert float(out[5, 0]) == 3.0 and float(out[4, 0]) == 1.0


def test_no_driver_is_one_clear_error():
    try:
        import ctypes
        ctypes.CDLL("libcuda.so.1")
        pytest.skip("this machine has a CUDA driver")
    except OSError:
        pass
    with pytest.raises(cuda.CudaUnavailable, match=r"^there is no CUDA driver \(libcuda.so.1\)"):
        cuda.driver()
    bundle, _ = _bundle(DUS)
    with pytest.raises(cuda.CudaUnavailable):
        cuda.CudaKernel(bundle)


def test_the_runtime_needs_no_mlir():
    """What the GPU machine does: the runtime folder on the path, a bundle
    read, inputs made -- and no `mlir` (nor xla_gpu) module loaded."""
    code = (f"import sys; sys.path.insert(0, {RUNTIME!r}); import cuda\n"
            "spec = cuda.BufferSpec((2, 3), 'bf16')\n"
            "assert spec.numpy_dtype.name == 'bfloat16'\n"
            "assert not any(m == 'mlir' or m.startswith(('mlir.', 'xla_gpu')) for m in sys.modules)\n"
            "print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_gpu_check_bundles_compare_right_on_the_cpu(tmp_path):
    """The bundles' side of the GPU check, run here with our CPU target and
    XLA:CPU standing in for the GPU: inputs (reduction identities included),
    reference.hlo and tolerances agree for the reduction and transpose tests."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import gpu_check_prepare

    count, skipped = gpu_check_prepare.prepare_bundles(tmp_path, only="reduce_row")
    count2, _ = gpu_check_prepare.prepare_bundles(tmp_path, only="transpose/")
    assert count >= 5 and count2 >= 5, skipped
    assert gpu_check_prepare.cpu_check(tmp_path, only="reduce_row") == []
    assert gpu_check_prepare.cpu_check(tmp_path, only="transpose/") == []

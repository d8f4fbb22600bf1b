"""`import xla_gpu` makes the dialect and the passes available, sharing the
one MLIR of the bindings."""

import ast
import os
import subprocess
import sys
import textwrap

import pytest
from mlir import ir
from mlir.passmanager import PassManager

import xla_gpu
from xla_gpu import _capi


def test_every_new_context_knows_the_dialect():
    for _ in range(2):
        with ir.Context():
            module = ir.Module.parse(
                "func.func @f() { %0 = xla_gpu.allocate_shared : tensor<4xf32> return }")
            assert module.operation.verify()
            assert "xla_gpu.allocate_shared" in str(module)


def test_passes_are_registered_with_the_pass_registry(ctx):
    module = ir.Module.parse(
        "func.func private @dead() { return }\nfunc.func @live() { return }")
    pm = PassManager.parse("builtin.module(xla-erase-dead-functions,canonicalize)")
    pm.run(module.operation)
    assert "@dead" not in str(module)
    assert "@live" in str(module)


def test_unknown_pass_is_an_error(ctx):
    with pytest.raises(ValueError, match="no-such-pass"):
        PassManager.parse("builtin.module(no-such-pass)")


def _loaded_libraries():
    with open("/proc/self/maps") as maps:
        return {line.split()[-1] for line in maps if line.rstrip().endswith(".so")
                or ".so." in line}


def test_one_mlir_in_the_process():
    libs = _loaded_libraries()
    capi = {p for p in libs if os.path.basename(p) == "libMLIRPythonCAPI.so"}
    assert len(capi) == 1, capi
    # The plugin is loaded and no second MLIR came with it.
    assert str(_capi.LIB_PATH) in libs
    assert not any(os.path.basename(p).startswith("libMLIR.so") for p in libs)
    # The `mlir` package is the bindings' own, not a copy inside ours.
    site = os.path.dirname(os.path.dirname(os.path.realpath(ir.__file__)))
    assert site == \
        os.path.dirname(os.path.dirname(os.path.dirname(next(iter(capi)))))


def test_plugin_links_the_bindings_libraries_only():
    """The ELF dependencies of the plugin: libMLIRPythonCAPI.so and
    libLLVM.so, never libMLIR.so."""
    out = subprocess.run(["ldd", str(_capi.LIB_PATH)], capture_output=True,
                         text=True, check=True).stdout
    assert "libMLIRPythonCAPI.so" in out
    assert "libLLVM.so" in out
    assert "libMLIR.so" not in out
    assert "not found" not in out


def test_context_created_before_import_does_not_see_the_dialect():
    """Registration is through the registry appended to *new* contexts: the
    documented upstream behaviour, checked in a fresh interpreter."""
    code = textwrap.dedent("""
        from mlir import ir
        early = ir.Context()
        import xla_gpu
        late = ir.Context()
        text = 'func.func @f() { %0 = xla_gpu.allocate_shared : tensor<4xf32> return }'
        ir.Module.parse(text, context=late)
        early.allow_unregistered_dialects = False
        try:
            ir.Module.parse(text, context=early)
        except ir.MLIRError:
            print('early context: unknown dialect')
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True)
    assert "early context: unknown dialect" in out.stdout


_READ_ATTRIBUTES = textwrap.dedent("""
    import importlib.abc, sys
    import xla_gpu
    from mlir import ir

    tries = []

    class Watch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.endswith("dialects.xla_gpu"):
                tries.append(name)
            return None

    sys.meta_path.insert(0, Watch())
    with ir.Context():
        module = ir.Module.parse('''
          #m = #xla_gpu.indexing_map<"(d0) -> (d0 * 2), domain: d0 in [0, 63]">
          func.func @f(%i: index) -> index {
            %r = xla_gpu.apply_indexing #m(%i)
            return %r : index
          }''')
        op = module.body.operations[0].regions[0].blocks[0].operations[0]
        for _ in range(10):
            assert "d0 * 2" in str(op.attributes["indexing_map_attr"])
    print(repr(tries))
""")


def test_the_dialect_module_is_imported_once():
    """The bindings find the xla_gpu dialect's Python module (under
    xla_gpu.dialects, a search prefix the package adds) and remember it:
    reading an `#xla_gpu.indexing_map` ten times imports nothing again
    (without the prefix each read tried mlir.dialects.xla_gpu anew)."""
    done = subprocess.run([sys.executable, "-c", _READ_ATTRIBUTES], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    tries = ast.literal_eval(done.stdout)
    assert tries.count("mlir.dialects.xla_gpu") <= 1, tries

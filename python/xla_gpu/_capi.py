"""ctypes binding of the plugin's small C API (dialects/xla_gpu/CAPI.h).

The plugin library links the bindings' own libMLIRPythonCAPI.so, so handles
cross the boundary as raw pointers taken from (and wrapped back into) the
`_CAPIPtr` capsules of `mlir.ir` objects. This module is the only place that
knows about capsules and ctypes.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from mlir import ir  # noqa: F401  (loads libMLIRPythonCAPI.so before the plugin)

LIB_DIR = Path(__file__).resolve().parent / "_mlir_libs"
LIB_PATH = LIB_DIR / "libXlaGpuCAPI.so"
OPT_PATH = LIB_DIR / "xla-gpu-opt"


class _Handle(ctypes.Structure):
    """Every MLIR C API handle is `struct { void *ptr; }`."""

    _fields_ = [("ptr", ctypes.c_void_p)]


class MlirStringRef(ctypes.Structure):
    _fields_ = [("data", ctypes.c_char_p), ("length", ctypes.c_size_t)]


# Prototypes of our own: `ctypes.pythonapi.PyCapsule_New` is one object
# shared by the process, and other libraries (jax.ffi.pycapsule) set its
# argtypes to theirs.
_PyCapsule_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_PyCapsule_New = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                   ctypes.c_void_p)(("PyCapsule_New", ctypes.pythonapi))

# Capsule names must outlive the capsules: keep them as module constants.
_CAPSULE_NAMES = {
    "Context": b"mlir.ir.Context._CAPIPtr",
    "Module": b"mlir.ir.Module._CAPIPtr",
    "Attribute": b"mlir.ir.Attribute._CAPIPtr",
    "AffineMap": b"mlir.ir.AffineMap._CAPIPtr",
    "AffineExpr": b"mlir.ir.AffineExpr._CAPIPtr",
    "DialectRegistry": b"mlir.ir.DialectRegistry._CAPIPtr",
}


def unwrap(obj, kind: str) -> _Handle:
    """The C handle of an `mlir.ir` object of the given kind."""
    return _Handle(_PyCapsule_GetPointer(obj._CAPIPtr, _CAPSULE_NAMES[kind]))


def wrap(handle: _Handle, cls):
    """An `mlir.ir` object of class `cls` for a C handle."""
    kind = "AffineExpr" if issubclass(cls, ir.AffineExpr) else cls.__name__
    capsule = _PyCapsule_New(handle.ptr, _CAPSULE_NAMES[kind], None)
    return cls._CAPICreate(capsule)


def _load() -> ctypes.CDLL:
    if not LIB_PATH.exists():
        raise ImportError(
            f"{LIB_PATH} is missing: build the project first (`make build`)"
        )
    lib = ctypes.CDLL(os.fspath(LIB_PATH))
    H, P = _Handle, ctypes.POINTER
    i64p = P(ctypes.c_int64)
    signatures = {
        "xlaGpuRegisterDialects": ([H], None),
        "xlaGpuRegisterPasses": ([], None),
        "xlaGpuIndexingMapAttrParse": (
            [H, MlirStringRef, ctypes.c_char_p, ctypes.c_size_t, P(ctypes.c_size_t)],
            H,
        ),
        "xlaGpuIndexingMapAttrGet": (
            [H, ctypes.c_ssize_t, i64p, P(MlirStringRef), ctypes.c_ssize_t, P(H),
             i64p, ctypes.c_char_p, ctypes.c_size_t],
            H,
        ),
        "xlaGpuAttributeIsAIndexingMap": ([H], ctypes.c_bool),
        "xlaGpuIndexingMapAttrGetAffineMap": ([H], H),
        "xlaGpuIndexingMapAttrGetNumVars": ([H, ctypes.c_int], ctypes.c_ssize_t),
        "xlaGpuIndexingMapAttrGetVar": (
            [H, ctypes.c_int, ctypes.c_ssize_t, i64p, i64p], MlirStringRef),
        "xlaGpuIndexingMapAttrGetNumConstraints": ([H], ctypes.c_ssize_t),
        "xlaGpuIndexingMapAttrGetConstraint": ([H, ctypes.c_ssize_t, i64p, i64p], H),
        "xlaGpuIndexingMapAttrEqual": ([H, H], ctypes.c_bool),
        "xlaGpuIndexingMapAttrSimplify": ([H], H),
        "xlaGpuIndexingMapAttrCompose": ([H, H], H),
        "xlaGpuIndexingMapAttrWithConstraint": ([H, H, ctypes.c_int64, ctypes.c_int64], H),
        "xlaGpuIndexingMapAttrWithDimBounds": (
            [H, ctypes.c_ssize_t, ctypes.c_int64, ctypes.c_int64], H),
        "xlaGpuIndexingMapAttrGetSubMap": ([H, ctypes.c_ssize_t], H),
        "xlaGpuIndexingMapAttrConvertSymbolsToDims": ([H], H),
        "xlaGpuIndexingMapAttrRemoveUnusedSymbols": ([H], H),
        "xlaGpuIndexingMapAttrRemoveUnusedDimensions": ([H], H),
        "xlaGpuIndexingMapAttrIsKnownEmpty": ([H], ctypes.c_bool),
        "xlaGpuIndexingMapAttrGetRange": ([H, H, i64p, i64p], None),
        "xlaGpuIndexingMapAttrEvaluate": ([H, i64p, i64p, i64p], None),
        "xlaGpuIndexingMapAttrContains": ([H, i64p, i64p], ctypes.c_bool),
        "xlaGpuIndexingMapAttrIsBijection": (
            [H, i64p, ctypes.c_ssize_t, ctypes.c_char_p, ctypes.c_size_t], ctypes.c_int),
        # HostJit.cpp (ctypes releases the GIL for these calls).
        "xlaGpuCompileToHostObject": (
            [H, ctypes.c_int, P(ctypes.c_size_t), P(ctypes.c_double), ctypes.c_char_p,
             ctypes.c_size_t],
            ctypes.c_void_p),
        "xlaGpuFreeBuffer": ([ctypes.c_void_p], None),
        "xlaGpuBeginDeviceCodegen": ([], None),
        "xlaGpuEndDeviceCodegen": ([], None),
        "xlaGpuHostTarget": ([ctypes.c_char_p, ctypes.c_size_t], ctypes.c_size_t),
        "xlaGpuHostJitLoad": (
            [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t],
            ctypes.c_void_p),
        "xlaGpuHostJitLookup": (
            [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t],
            ctypes.c_uint64),
        "xlaGpuHostJitDestroy": ([ctypes.c_void_p], None),
        # PassPipeline.cpp (without the GIL: a module's kernels go through
        # the pipeline on several threads).
        "xlaGpuRunPassPipeline": ([H, ctypes.c_char_p, ctypes.c_int], ctypes.c_void_p),
        "xlaGpuParsePassPipeline": ([H, ctypes.c_char_p, P(ctypes.c_void_p)], ctypes.c_void_p),
        "xlaGpuRunParsedPassPipeline": ([ctypes.c_void_p, H, ctypes.c_int], ctypes.c_void_p),
        "xlaGpuDestroyPassPipeline": ([ctypes.c_void_p], None),
        # HostCompile.cpp.
        "xlaGpuStartHostCompile": ([ctypes.c_void_p, H, ctypes.c_int, ctypes.c_int],
                                   ctypes.c_void_p),
        "xlaGpuHostCompileDone": ([ctypes.c_void_p], ctypes.c_int),
        "xlaGpuFinishHostCompile": (
            [ctypes.c_void_p, P(ctypes.c_size_t), P(ctypes.c_double), P(ctypes.c_void_p),
             ctypes.c_char_p, ctypes.c_size_t],
            ctypes.c_void_p),
        # HostCopy.cpp, HostLaunch.cpp (without the GIL too).
        "xlaGpuHostCopy": ([ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                            ctypes.c_int64], None),
        "xlaGpuHostLaunch": ([ctypes.c_void_p, i64p, ctypes.c_int64, ctypes.c_int64,
                              ctypes.c_int64, ctypes.c_int64], None),
    }
    for name, (argtypes, restype) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = restype
    return lib


lib = _load()


class PythonApi(ctypes.Structure):
    """HostCall.cpp's XlaGpuPythonApi: the interpreter's functions it calls."""

    NAMES = ("PyObject_GetBuffer", "PyBuffer_Release", "PyErr_Clear", "PyEval_SaveThread",
             "PyEval_RestoreThread", "PyTuple_Size", "PyTuple_GetItem")
    _fields_ = [(name, ctypes.c_void_p) for name in NAMES]


class HostCallSpec(ctypes.Structure):
    """HostCall.cpp's XlaGpuHostCallSpec: what a CPU kernel's call needs."""

    _i64p = ctypes.POINTER(ctypes.c_int64)
    _fields_ = [("fn", ctypes.c_void_p), ("num_params", ctypes.c_int64),
                ("num_results", ctypes.c_int64), ("ranks", _i64p), ("dims", _i64p),
                ("formats", ctypes.POINTER(ctypes.c_char_p)), ("num_passed", ctypes.c_int64),
                ("passed", _i64p), ("num_in_place", ctypes.c_int64), ("in_place", _i64p),
                ("num_blocks", ctypes.c_int64), ("min_bytes_for_workers", ctypes.c_int64),
                ("min_bytes_for_streaming", ctypes.c_int64), ("ndarray", ctypes.c_void_p)]


def _load_host_call():
    """xlaGpuHostCall, through a PyDLL handle on the plugin library (its
    calls keep the GIL: it reads Python objects), after handing it the
    interpreter's functions."""
    api = PythonApi(*(ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p)
                      for name in PythonApi.NAMES))
    lib.xlaGpuHostCallInit.argtypes = [ctypes.POINTER(PythonApi)]
    lib.xlaGpuHostCallInit.restype = None
    lib.xlaGpuHostCallInit(ctypes.byref(api))
    call = ctypes.PyDLL(os.fspath(LIB_PATH)).xlaGpuHostCall
    call.argtypes = [ctypes.POINTER(HostCallSpec), ctypes.py_object, ctypes.c_int64,
                     ctypes.c_int64]
    call.restype = ctypes.c_int
    return call


host_call = _load_host_call()


def register_everything() -> None:
    """Makes the dialect available in every Context created from now on, and
    the project's passes available to `PassManager.parse`."""
    from mlir._mlir_libs import get_dialect_registry

    lib.xlaGpuRegisterDialects(unwrap(get_dialect_registry(), "DialectRegistry"))
    lib.xlaGpuRegisterPasses()

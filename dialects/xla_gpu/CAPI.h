/*===- CAPI.h - the C API of the xla_gpu plugin ---------------------*- C -*-===
 *
 * What the Python package (through ctypes) needs: registering the dialect
 * and the passes, and reading/building #xla_gpu.indexing_map attributes.
 * Everything else goes through the upstream MLIR C API of the bindings.
 *
 *===----------------------------------------------------------------------===*/

#ifndef XLA_GPU_DIALECTS_XLA_GPU_CAPI_H
#define XLA_GPU_DIALECTS_XLA_GPU_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include "mlir-c/AffineExpr.h"
#include "mlir-c/AffineMap.h"
#include "mlir-c/IR.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(XlaGpu, xla_gpu);

/// Inserts the dialect and the extensions it relies on into `registry`.
MLIR_CAPI_EXPORTED void xlaGpuRegisterDialects(MlirDialectRegistry registry);

/// Registers the project's passes with the global pass registry (idempotent).
MLIR_CAPI_EXPORTED void xlaGpuRegisterPasses(void);

/// Variable kinds, as in xla::gpu::VarKind.
enum XlaGpuVarKind {
  XlaGpuVarKindDimension = 0,
  XlaGpuVarKindRange = 1,
  XlaGpuVarKindRuntime = 2
};

/// Parses the text of an indexing map (without `#xla_gpu.indexing_map<"">`).
/// On failure returns a null attribute and writes the message (at most
/// `errorCapacity` bytes, NUL-terminated) and its byte offset.
MLIR_CAPI_EXPORTED MlirAttribute xlaGpuIndexingMapAttrParse(
    MlirContext context, MlirStringRef text, char* error, size_t errorCapacity,
    size_t* errorOffset);

/// Builds an indexing map from an affine map, the bounds of every variable
/// ([lo, hi] pairs; dims, then range symbols, then runtime symbols; the
/// counts of range/runtime symbols split the map's symbols) and
/// constraints. Names may be NULL (defaults d0/s0/rt0). Returns a null
/// attribute and writes the message into `error` if the result is invalid.
MLIR_CAPI_EXPORTED MlirAttribute xlaGpuIndexingMapAttrGet(
    MlirAffineMap map, intptr_t numRangeVars, const int64_t* bounds,
    const MlirStringRef* names, intptr_t numConstraints,
    const MlirAffineExpr* constraintExprs, const int64_t* constraintBounds,
    char* error, size_t errorCapacity);

MLIR_CAPI_EXPORTED bool xlaGpuAttributeIsAIndexingMap(MlirAttribute attr);
MLIR_CAPI_EXPORTED MlirAffineMap xlaGpuIndexingMapAttrGetAffineMap(MlirAttribute attr);
MLIR_CAPI_EXPORTED intptr_t xlaGpuIndexingMapAttrGetNumVars(MlirAttribute attr,
                                                            int kind);
/// The name and [lo, hi] of variable `index` of kind `kind`.
MLIR_CAPI_EXPORTED MlirStringRef xlaGpuIndexingMapAttrGetVar(
    MlirAttribute attr, int kind, intptr_t index, int64_t* lower,
    int64_t* upper);
MLIR_CAPI_EXPORTED intptr_t xlaGpuIndexingMapAttrGetNumConstraints(MlirAttribute attr);
MLIR_CAPI_EXPORTED MlirAffineExpr xlaGpuIndexingMapAttrGetConstraint(
    MlirAttribute attr, intptr_t index, int64_t* lower, int64_t* upper);
/// Semantic equality (variable names ignored).
MLIR_CAPI_EXPORTED bool xlaGpuIndexingMapAttrEqual(MlirAttribute a, MlirAttribute b);

//===----------------------------------------------------------------------===//
// Indexing map algebra (see IndexingMap.h for the semantics).
//===----------------------------------------------------------------------===//

MLIR_CAPI_EXPORTED MlirAttribute xlaGpuIndexingMapAttrSimplify(MlirAttribute attr);
/// `first` then `second`.
MLIR_CAPI_EXPORTED MlirAttribute xlaGpuIndexingMapAttrCompose(MlirAttribute first,
                                                              MlirAttribute second);
/// The map with `expr in [lower, upper]` added; null when `expr` uses a
/// variable the map lacks or the interval is empty.
MLIR_CAPI_EXPORTED MlirAttribute xlaGpuIndexingMapAttrWithConstraint(MlirAttribute attr,
                                                                     MlirAffineExpr expr,
                                                                     int64_t lower,
                                                                     int64_t upper);
/// The map with dimension `dim` in [lower, upper]; null when out of range.
MLIR_CAPI_EXPORTED MlirAttribute xlaGpuIndexingMapAttrWithDimBounds(MlirAttribute attr,
                                                                    intptr_t dim,
                                                                    int64_t lower,
                                                                    int64_t upper);
/// The map of result `result` alone; null when there is no such result.
MLIR_CAPI_EXPORTED MlirAttribute xlaGpuIndexingMapAttrGetSubMap(MlirAttribute attr,
                                                                intptr_t result);
/// Range and runtime variables become dimensions (after the dimensions).
MLIR_CAPI_EXPORTED MlirAttribute xlaGpuIndexingMapAttrConvertSymbolsToDims(MlirAttribute attr);
MLIR_CAPI_EXPORTED MlirAttribute xlaGpuIndexingMapAttrRemoveUnusedSymbols(MlirAttribute attr);
MLIR_CAPI_EXPORTED MlirAttribute xlaGpuIndexingMapAttrRemoveUnusedDimensions(MlirAttribute attr);
MLIR_CAPI_EXPORTED bool xlaGpuIndexingMapAttrIsKnownEmpty(MlirAttribute attr);
/// The range of `expr` (in the map's variables) over the map's domain.
MLIR_CAPI_EXPORTED void xlaGpuIndexingMapAttrGetRange(MlirAttribute attr,
                                                      MlirAffineExpr expr,
                                                      int64_t* lower, int64_t* upper);
/// Writes the map's results at (dims, symbols) into `results`.
MLIR_CAPI_EXPORTED void xlaGpuIndexingMapAttrEvaluate(MlirAttribute attr,
                                                      const int64_t* dims,
                                                      const int64_t* symbols,
                                                      int64_t* results);
MLIR_CAPI_EXPORTED bool xlaGpuIndexingMapAttrContains(MlirAttribute attr,
                                                      const int64_t* dims,
                                                      const int64_t* symbols);
/// 1: a bijection onto `shape`; 0: not (reason written); -1: cannot tell
/// (reason written).
MLIR_CAPI_EXPORTED int xlaGpuIndexingMapAttrIsBijection(
    MlirAttribute attr, const int64_t* shape, intptr_t rank, char* reason,
    size_t reasonCapacity);

/// Host code for CPU-target kernels (HostJit.cpp). Each call may run on any
/// thread; the Python GIL is not needed.
///
/// Translates `module` (LLVM dialect only) to LLVM IR, adds the packed
/// wrapper `_mlir_<f>` of every public function f (ExecutionEngine's
/// `lookupPacked` interface), optimizes at `optLevel` (0-3) and compiles it
/// for this host. Returns the ELF object (free it with xlaGpuFreeBuffer) and
/// writes its size, or returns null and writes the message. `seconds`, when
/// not null, receives the time of the three steps: translation, the O<n>
/// pipeline, code generation.
MLIR_CAPI_EXPORTED void* xlaGpuCompileToHostObject(MlirModule module, int optLevel,
                                                   size_t* size, double* seconds,
                                                   char* error, size_t capacity);
MLIR_CAPI_EXPORTED void xlaGpuFreeBuffer(void* buffer);
/// Host code is generated without LLVM's loop strength reduction, a
/// process-wide flag: code generation for the device (the NVPTX backend)
/// goes between these two calls, which wait for host compiles to finish
/// and keep new ones waiting (the flag is the LLVM default meanwhile).
MLIR_CAPI_EXPORTED void xlaGpuBeginDeviceCodegen(void);
MLIR_CAPI_EXPORTED void xlaGpuEndDeviceCodegen(void);
/// What the objects are compiled for: "<triple> <cpu> <features>" (written
/// truncated to `capacity`; returns the whole length).
MLIR_CAPI_EXPORTED size_t xlaGpuHostTarget(char* description, size_t capacity);
/// Loads an object from xlaGpuCompileToHostObject into a new JIT whose
/// undefined symbols resolve to the process's. Null (and the message) if
/// it does not load.
MLIR_CAPI_EXPORTED void* xlaGpuHostJitLoad(const void* object, size_t size, char* error,
                                           size_t capacity);
/// The address of `name` in the JIT (compiled on first lookup), or 0 and the
/// message (which names any symbol the process does not define).
MLIR_CAPI_EXPORTED uint64_t xlaGpuHostJitLookup(void* jit, const char* name, char* error,
                                                size_t capacity);
MLIR_CAPI_EXPORTED void xlaGpuHostJitDestroy(void* jit);

/// Runs a pass pipeline (the passes of `builtin.module(...)`, comma
/// separated) on `module`, like the bindings' PassManager.parse + run but
/// callable without the GIL. With `verifyEach` the module is verified after
/// every pass (MLIR's default, mlir-opt's --verify-each); without it, once
/// after the last. Null on success; otherwise the message (the pipeline's
/// parse error, or "Failure while executing pass pipeline:" and an
/// `error: <loc>: <message>` line a diagnostic), to free with
/// xlaGpuFreeBuffer.
MLIR_CAPI_EXPORTED char* xlaGpuRunPassPipeline(MlirModule module, const char* pipeline,
                                               int verifyEach);

/// The same in two steps, for many modules of one context: the pipeline
/// parsed once (its passes then initialize once, on the first run -- the
/// canonicalizer's patterns -- and again only when the context loads more
/// dialects), null and `*error` (the parse error, to free with
/// xlaGpuFreeBuffer) if it does not parse; each run as xlaGpuRunPassPipeline's
/// (a run at a time); destroyed before its context.
MLIR_CAPI_EXPORTED void* xlaGpuParsePassPipeline(MlirContext context, const char* pipeline,
                                                 char** error);
MLIR_CAPI_EXPORTED char* xlaGpuRunParsedPassPipeline(void* pipeline, MlirModule module,
                                                     int verifyEach);
MLIR_CAPI_EXPORTED void xlaGpuDestroyPassPipeline(void* pipeline);

/// A kernel's compile (HostCompile.cpp): xlaGpuRunParsedPassPipeline on
/// `module`, then xlaGpuCompileToHostObject at `optLevel`, on a thread of
/// the library's. Returns at once a job, to end with
/// xlaGpuFinishHostCompile: until then the pipeline, the module and their
/// context are the job's.
MLIR_CAPI_EXPORTED void* xlaGpuStartHostCompile(void* pipeline, MlirModule module,
                                                int verifyEach, int optLevel);
/// 1 when the job has run (xlaGpuFinishHostCompile would not wait), else 0.
MLIR_CAPI_EXPORTED int xlaGpuHostCompileDone(void* job);
/// Waits for the job and frees it. Returns the object and writes its size
/// and `seconds` as xlaGpuCompileToHostObject does; or returns null with
/// `*pipelineError` the pipeline's message (to free with xlaGpuFreeBuffer)
/// or, that null, the compile's message written to `error`.
MLIR_CAPI_EXPORTED void* xlaGpuFinishHostCompile(void* job, size_t* size, double* seconds,
                                                 char** pipelineError, char* error,
                                                 size_t capacity);

#ifdef __cplusplus
}
#endif

#endif  // XLA_GPU_DIALECTS_XLA_GPU_CAPI_H

//===- XlaGpuOps.td - ops of xla_gpu ------------------------*- tablegen -*-===//
//
// The textual syntax of every op is XLA's, so IR written for XLA's emitters
// parses here.
//
//===----------------------------------------------------------------------===//

#ifndef XLA_GPU_OPS_TD
#define XLA_GPU_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "dialects/xla_gpu/XlaGpuDialect.td"
include "dialects/xla_gpu/XlaGpuAttrs.td"
include "dialects/xla_gpu/XlaGpuTypes.td"

class XlaGpu_Op<string mnemonic, list<Trait> traits = []>
    : Op<XlaGpuDialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Shared memory and barriers
//===----------------------------------------------------------------------===//

def XlaGpu_AllocateSharedOp : XlaGpu_Op<"allocate_shared", [
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Allocates a tile of shared memory, one per block.";
  let description = [{
    The result is a tensor with value semantics; writes to it are
    `tensor.insert`s, and `xla_gpu.sync_threads` makes them visible to the
    other threads of the block.

    ```mlir
    %shmem = xla_gpu.allocate_shared : tensor<32x1x33xf32>
    ```
  }];
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def XlaGpu_SyncThreadsOp : XlaGpu_Op<"sync_threads", [
    AllTypesMatch<["operands", "results"]>]> {
  let summary = "Barrier over the threads of a block.";
  let description = [{
    Every thread of the block waits until all have reached the barrier. The
    operands are the shared-memory tensors written before the barrier; the
    results are the same tensors, to be read after it.

    ```mlir
    %synced = xla_gpu.sync_threads %shmem : tensor<32x1x33xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyStaticShapeTensor>:$operands);
  let results = (outs Variadic<AnyStaticShapeTensor>:$results);
  let assemblyFormat = "operands attr-dict `:` type($operands)";
}

def XlaGpu_CopyTileOp : XlaGpu_Op<"copy_tile", [
    AttrSizedOperandSegments, AllTypesMatch<["dest", "result"]>]> {
  let summary = "The threads of a block copy a tile between two tensors.";
  let description = [{
    The `num_threads` threads with ids `thread` = 0 ... num_threads - 1
    together copy the box `source[source_offsets + [0, source_sizes)]` to
    `dest[dest_offsets + [0, dest_sizes)]` (the same elements in row-major
    order: both boxes have one element type and the same non-unit
    extents). One side is a kernel argument (global memory), the other an
    `xla_gpu.allocate_shared` tile (shared memory); `swizzle = array<i64:
    B, M, S>` says the shared tile is stored XOR-swizzled (CuTe's
    Swizzle<B, M, S>: element offset o is stored at o ^ ((o >> S) & (2^B -
    1) << M)). `-xla-gpu-lower-tile-copies` lowers it (seed 004): a loop
    of the widest aligned vector copies.

    ```mlir
    %filled = xla_gpu.copy_tile %in[%r, %c0] [32, 32] to %shmem[%c0, %c0] [32, 32]
        thread %tid of 32 : tensor<256x32xf32> to tensor<32x32xf32>
    ```
  }];
  // (The single operands come first: the result type is inferred from
  // `dest` by its position.)
  let arguments = (ins AnyStaticShapeTensor:$dest, AnyStaticShapeTensor:$source, Index:$thread,
                       Variadic<Index>:$source_offsets, Variadic<Index>:$dest_offsets,
                       DenseI64ArrayAttr:$source_sizes, DenseI64ArrayAttr:$dest_sizes,
                       I64Attr:$num_threads, OptionalAttr<DenseI64ArrayAttr>:$swizzle);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $source `[` $source_offsets `]` $source_sizes `to` $dest `[` $dest_offsets `]` $dest_sizes
    `thread` $thread `of` $num_threads attr-dict `:` type($source) `to` type($dest)
  }];
  let hasVerifier = 1;
}

def XlaGpu_AtomicRMWOp : XlaGpu_Op<"atomic_rmw", [
    Pure,
    TypesMatchWith<"result type matches type of dest", "input", "result", "$_self">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Atomically updates one element of a tensor.";
  let description = [{
    The region computes the new value from the current one (its only block
    argument) and yields it; the update is atomic with respect to every other
    thread.

    ```mlir
    %ret = xla_gpu.atomic_rmw %in[%i, %j] : tensor<2x3xf32> {
    ^bb0(%current : f32):
      %sum = arith.addf %current, %c42 : f32
      xla_gpu.yield %sum : f32
    }
    ```
    When the region yields its argument unchanged the op does nothing and
    folds to `%in`.
  }];
  let arguments = (ins AnyRankedTensor:$input, Variadic<Index>:$indices);
  let results = (outs AnyRankedTensor:$result);
  let regions = (region SizedRegion<1>:$computation);
  let assemblyFormat = [{
    $input `[` $indices `]` `:` type($input) $computation attr-dict
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
  let extraClassDeclaration = [{
    ::mlir::Block* getBody() { return &getComputation().front(); }
  }];
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

def XlaGpu_PureCallOp : XlaGpu_Op<"pure_call", [
    Pure, CallOpInterface,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Calls a function that has no side effects.";
  let description = [{
    A call to one subgraph function of a partitioned fusion. It is pure, so
    CSE merges identical calls. The inliner inlines a callee with one caller;
    a callee called twice or more stays a function (unless it is tiny),
    which is the point of partitioning.

    ```mlir
    %v = xla_gpu.pure_call @gelu(%input, %i, %j, %k)
      : (tensor<6x512x4096xbf16>, index, index, index) -> bf16
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee,
                       Variadic<AnyType>:$operands,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let results = (outs Variadic<AnyType>);
  let builders = [
    OpBuilder<(ins "::mlir::func::FuncOp":$callee, CArg<"::mlir::ValueRange", "{}">:$operands), [{
      $_state.addOperands(operands);
      $_state.addAttribute("callee", ::mlir::SymbolRefAttr::get(callee));
      $_state.addTypes(callee.getFunctionType().getResults());
    }]>];
  let assemblyFormat = [{
    $callee `(` $operands `)` attr-dict `:` functional-type($operands, results)
  }];
  let extraClassDeclaration = [{
    operand_range getArgOperands() { return getOperands(); }
    ::mlir::MutableOperandRange getArgOperandsMutable() {
      return getOperandsMutable();
    }
    ::mlir::CallInterfaceCallable getCallableForCallee() {
      return (*this)->getAttrOfType<::mlir::SymbolRefAttr>("callee");
    }
    void setCalleeFromCallable(::mlir::CallInterfaceCallable callee) {
      (*this)->setAttr("callee", ::llvm::cast<::mlir::SymbolRefAttr>(callee));
    }
  }];
}

def XlaGpu_ShuffleReduceOp : XlaGpu_Op<"shuffle_reduce", [
    Pure, AllTypesMatch<["operands", "results"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Reduces values across the lanes of a warp with shuffles.";
  let description = [{
    Combines each lane's values with those of the lanes `max_distance`,
    `max_distance / 2`, ..., 1 away (butterfly `shfl.down`), using the
    combiner function `(acc..., other...) -> (acc...)`. Lane 0 ends with the
    reduction of lanes [0, 2 * max_distance).

    ```mlir
    %r:2 = xla_gpu.shuffle_reduce(%a, %b) to 16 combiner=@reducer : f32, i32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$operands,
                       ConfinedAttr<I64Attr, [IntMinValue<1>]>:$max_distance,
                       FlatSymbolRefAttr:$combiner);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    `(` $operands `)` `to` $max_distance `combiner` `` `=` `` $combiner attr-dict `:` type($operands)
  }];
  let hasVerifier = 1;
}

def XlaGpu_ReduceOp : XlaGpu_Op<"reduce", [
    Pure, SameVariadicOperandSize,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Reduces tensors along some dimensions with a combiner function.";
  let description = [{
    A variadic reduction: every input tensor is reduced along `dimensions`,
    starting from its init value, with `combiner : (acc..., in...) -> (acc...)`.

    ```mlir
    %sum:2 = xla_gpu.reduce (%in0, %in1) inits(%init0, %init1) dimensions=[0, 2]
      combiner=@add : tensor<16x8x4xf32>, tensor<16x8x4xi32> to tensor<8xf32>, tensor<8xi32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       Variadic<AnyType>:$inits,
                       DenseI64ArrayAttr:$dimensions,
                       FlatSymbolRefAttr:$combiner);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Indexing and loops
//===----------------------------------------------------------------------===//

def XlaGpu_ApplyIndexingOp : XlaGpu_Op<"apply_indexing", [Pure]> {
  let summary = "Evaluates an indexing map at the given dimensions and symbols.";
  let description = [{
    The results are the map's results; the domain is not checked (that is
    `xla_gpu.loop`'s job).

    ```mlir
    %dim0 = xla_gpu.apply_indexing #map(%thread_id_x, %block_id_x)[%vector_index]
    ```
    With constant operands it folds to constants.
  }];
  let arguments = (ins Variadic<Index>:$operands,
                       XlaGpu_IndexingMapAttr:$indexing_map_attr);
  let results = (outs Variadic<Index>);
  let builders = [
    OpBuilder<(ins "::mlir::ValueRange":$dims, "::mlir::ValueRange":$symbols,
                   "IndexingMapAttr":$indexing_map)>];
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    IndexingMap getIndexingMap() { return getIndexingMapAttr().getIndexingMap(); }
  }];
}

def XlaGpu_LoopOp : XlaGpu_Op<"loop", [
    AttrSizedOperandSegments, RecursiveMemoryEffects, SingleBlock]> {
  let summary = "Loop over the domain of an indexing map.";
  let description = [{
    Iterates over every value of the map's range symbols for which the
    dimensions (thread and block ids) and symbols satisfy the domain and the
    constraints. The body's block arguments are the range symbols, the map's
    results and the iteration arguments.

    ```mlir
    %r = xla_gpu.loop (%thread_id_x, %block_id_x)[%vector_index] -> (%dim0, %dim1, %dim2)
        in #map iter_args(%iter = %output) -> (tensor<6x512x4096xbf16>) {
      %v = xla_gpu.pure_call @gelu(%input, %dim0, %dim1, %dim2)
        : (tensor<6x512x4096xbf16>, index, index, index) -> bf16
      %inserted = tensor.insert %v into %iter[%dim0, %dim1, %dim2] : tensor<6x512x4096xbf16>
      xla_gpu.yield %inserted : tensor<6x512x4096xbf16>
    }
    ```
  }];
  let arguments = (ins Variadic<Index>:$dims,
                       XlaGpu_IndexingMapAttr:$indexing_map_attr,
                       Variadic<AnyType>:$inits);
  let results = (outs Variadic<AnyType>);
  let regions = (region SizedRegion<1>:$region);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "IndexingMapAttr":$indexing_map, "::mlir::ValueRange":$dims,
                   "::mlir::ValueRange":$inits)>];
  let extraClassDeclaration = [{
    IndexingMap getIndexingMap() { return getIndexingMapAttr().getIndexingMap(); }
    ::mlir::Block* getBody() { return &getRegion().front(); }
    int64_t getNumInductionVars() { return getIndexingMap().getNumSymbols(); }
    ::mlir::Block::BlockArgListType getInductionVars();
    ::mlir::Block::BlockArgListType getIndexingMapResults();
    ::mlir::Block::BlockArgListType getRegionIterArgs();
  }];
}

def XlaGpu_YieldOp : XlaGpu_Op<"yield", [
    Pure, ReturnLike, Terminator,
    ParentOneOf<["AtomicRMWOp", "LoopOp"]>]> {
  let summary = "Terminates the body of xla_gpu.loop or xla_gpu.atomic_rmw.";
  let description = [{
    ```mlir
    xla_gpu.yield %inserted : tensor<6x512x4096xbf16>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$result);
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
  let assemblyFormat = "attr-dict ($result^ `:` type($result))?";
}

//===----------------------------------------------------------------------===//
// Predicated tensor access
//===----------------------------------------------------------------------===//

def XlaGpu_PredicatedInsertOp : XlaGpu_Op<"predicated_insert", [
    Pure,
    TypesMatchWith<"result type matches type of dest", "dest", "result", "$_self">,
    TypesMatchWith<"value type matches element type of dest", "dest", "value",
                   "::llvm::cast<::mlir::TensorType>($_self).getElementType()">]> {
  let summary = "Inserts a value into a tensor if a condition holds.";
  let description = [{
    ```mlir
    %r = xla_gpu.predicated_insert %v into %t[%i, %j] if %cond : tensor<2x3xf32>
    ```
    Equivalent to `scf.if %cond { tensor.insert } else { %t }`.
  }];
  let arguments = (ins I1:$condition, AnyType:$value,
                       AnyStaticShapeTensor:$dest, Variadic<Index>:$indices);
  let results = (outs AnyStaticShapeTensor:$result);
  let assemblyFormat = [{
    $value `into` $dest `[` $indices `]` `if` $condition attr-dict `:` type($dest)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def XlaGpu_PredicatedExtractOp : XlaGpu_Op<"predicated_extract", [
    Pure,
    TypesMatchWith<"fallback type matches element type of src", "src", "fallback",
                   "::llvm::cast<::mlir::TensorType>($_self).getElementType()">,
    TypesMatchWith<"result type matches element type of src", "src", "result",
                   "::llvm::cast<::mlir::TensorType>($_self).getElementType()">]> {
  let summary = "Extracts an element of a tensor if a condition holds, else a fallback.";
  let description = [{
    ```mlir
    %v = xla_gpu.predicated_extract %t[%i, %j] if %cond else %fallback : tensor<2x3xf32>
    ```
  }];
  let arguments = (ins I1:$condition, AnyType:$fallback,
                       AnyStaticShapeTensor:$src, Variadic<Index>:$indices);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $src `[` $indices `]` `if` $condition `else` $fallback attr-dict `:` type($src)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Indexed vectors
//===----------------------------------------------------------------------===//

def XlaGpu_MaterializeOp : XlaGpu_Op<"materialize", [
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Computes the elements of a subgraph a thread holds.";
  let description = [{
    Calls `callee` for every element of the result's indexed vector: the
    element's tensor index comes from `map` applied to `indices`.

    ```mlir
    %v = xla_gpu.materialize @exp(%input) at #map(%tid, %bid)
      : (tensor<32x64xf32>) -> !xla_gpu.indexed_vector<32x2x2xf32, #map1>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$input, Variadic<Index>:$indices,
                       FlatSymbolRefAttr:$callee, XlaGpu_IndexingMapAttr:$map);
  let results = (outs XlaGpu_IndexedVectorType:$result);
  let assemblyFormat = [{
    $callee `(` $input `)` `at` custom<IndexingMapRef>($map) `(` $indices `)` attr-dict
    `:` functional-type($input, results)
  }];
  let hasVerifier = 1;
}

def XlaGpu_InsertOp : XlaGpu_Op<"insert", [
    TypesMatchWith<"result type matches type of dest", "dest", "result", "$_self">]> {
  let summary = "Writes the elements of an indexed vector into a tensor.";
  let description = [{
    ```mlir
    %r = xla_gpu.insert %v(%tid, %bid) into %output at #map
      : !xla_gpu.indexed_vector<32x2x2xf32, #map1> -> tensor<32x64xf32>
    ```
    As with any dialect attribute, a map written inline right before the
    `:` would take the type as its own; write it through an alias (which is
    how the printer writes it).
  }];
  // `dest` precedes the variadic `indices` so that the result type can be
  // inferred from it.
  let arguments = (ins XlaGpu_IndexedVectorType:$source, AnyRankedTensor:$dest,
                       Variadic<Index>:$indices, XlaGpu_IndexingMapAttr:$map);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $source `(` $indices `)` `into` $dest `at` custom<IndexingMapRef>($map) attr-dict
    `:` qualified(type($source)) `->` type($dest)
  }];
  let hasVerifier = 1;
}

#endif  // XLA_GPU_OPS_TD

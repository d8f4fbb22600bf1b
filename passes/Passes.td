//===- Passes.td - the passes of xla_gpu --------------------*- tablegen -*-===//
//
// One pass per file, the file named after the flag
// (`xla-erase-dead-functions` <-> erase_dead_functions.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef XLA_GPU_PASSES_TD
#define XLA_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def EraseDeadFunctionsPass : Pass<"xla-erase-dead-functions", "mlir::ModuleOp"> {
  let summary = "Deletes private functions that nothing calls.";
  let description = [{
    After inlining, the subgraph functions of a fusion whose calls were all
    inlined are dead. A function is dead when it is private and no op of the
    module refers to it (a `func.call`, an `xla_gpu.pure_call`, a combiner
    reference, ...). Public functions, such as the entry function, stay.
  }];
}

def LowerXlaGpuLoopsToScfPass
    : Pass<"xla-gpu-lower-xla-gpu-loops-to-scf", "mlir::func::FuncOp"> {
  let summary = "Lowers xla_gpu.loop to nested scf.for with a bounds check.";
  let description = [{
    One `scf.for` per range variable of the loop's indexing map; inside the
    innermost one, an `scf.if` checks the dimensions against their ranges and
    every constraint, and computes each map result with an
    `xla_gpu.apply_indexing` (one single-result map per result), as in the
    spec's walk-through. Out-of-domain iterations yield the iteration
    arguments unchanged.
  }];
  let options = [
    Option<"boundInnermost", "bound-innermost", "bool", /*default=*/"false",
           "In a loop that carries scalars only (a reduce-window's window, an "
           "inline reduce), make each constraint `rest + s` on the innermost "
           "range variable s the bounds of its scf.for instead of a check of "
           "every iteration (the CPU target's)">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

def LowerTileCopiesPass : Pass<"xla-gpu-lower-tile-copies", "mlir::func::FuncOp"> {
  let summary = "Lowers xla_gpu.copy_tile to a loop of the widest aligned vector copies.";
  let description = [{
    Seed 004's global<->shared tile copy. For a copy between a kernel
    argument (global memory) and an `xla_gpu.allocate_shared` tile:

    1. Check that every thread takes part (no enclosing condition, the
       thread id spans `num_threads`), that both boxes hold elements of one
       type with the same non-unit extents, that one side is global and the
       other shared, and that the element count divides by the thread count.
    2. Partition the box, in the global side's (row-major) order, into
       `[outer, threads, vec]`: round f, thread t copies the `vec` elements
       from linear position (f * threads + t) * vec.
    3. Choose `vec` for the widest of 128, 64, 32, 16, 8 bits such that the
       minor extent divides by it, every other stride of both sides and
       both base offsets are multiples of it (each vector naturally
       aligned); a swizzled shared tile caps it at one swizzle chunk.
    4. Emit `scf.for` over the rounds of one `vector.transfer_read` and one
       `vector.transfer_write` each, the shared offset through the swizzle.

    A copy that is not global<->shared, or whose element count the threads
    do not divide, is copied element by element instead (each thread every
    `num_threads`-th element); one whose threads are narrowed or whose boxes
    differ is an error. With `remarks`, every declined vectorization says why.
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark for every copy: its vector width and rounds, or why it "
           "is not a vectorized global-shared copy">,
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect", "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect", "::xla::gpu::XlaGpuDialect"];
}

def FoldLoopsIntoThreadsPass
    : Pass<"xla-gpu-fold-loops-into-threads", "mlir::func::FuncOp"> {
  let summary = "Folds a thread's loop over its elements into K times as many threads (CPU).";
  let description = [{
    For the CPU target. A kernel whose threads each run one top-level
    `scf.for` from 0 to K by 1 over their elements (the loop emitter's
    unrolled elements, `unroll_id`) becomes a kernel of K times as many
    threads, thread t running iteration t mod K of old thread t floordiv K:

      %t = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
      %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%o = %out) { ... }

    becomes, with xla.launch_dims' threads a block 512,

      %t2 = gpu.thread_id x {xla.range = [0 : index, 511 : index]}
      %t = xla_gpu.apply_indexing #map<"(d0) -> (d0 floordiv 4) ...">(%t2)
      %k = xla_gpu.apply_indexing #map<"(d0) -> (d0 mod 4) ...">(%t2)
      ... the body once ...

    and canonicalization folds the maps into the ones that index with them
    (`th_x * 4 + unroll_id` becomes the new thread id). On the CPU the
    threads of a block are a loop: LLVM then vectorizes one copy of the body
    across neighbouring elements, where it had K copies to vectorize across
    the threads, each a strided access (4x the code for the loop fusions'
    O3 and x86 code generation). The elements each thread writes are the
    same, so the kernel computes the same bits.

    Only where no thread can tell: no barrier, shuffle, shared memory,
    block or grid size, no thread id but x's, the loop's carried values
    tensors the kernel's arguments start (and it returns), written only by
    tensor.insert and never read, no packed sub-byte tensor, and K times
    the threads at most 4096 (kMaxFoldedThreadsPerBlock: a GPU's 1024
    threads of the loop emitter's 4 elements; -xla-gpu-lower-kernel-to-cpu
    takes such a block of 1024 times xla.elements_per_thread threads).
  }];
  let dependentDialects = ["::xla::gpu::XlaGpuDialect"];
}

def UnswitchLoopsPass : Pass<"xla-gpu-unswitch-loops", "mlir::func::FuncOp"> {
  let summary = "Hoists a loop-invariant scf.if out of the scf.for it is the body of.";
  let description = [{
    XLA's loop unswitcher: an `scf.for` whose body is one `scf.if` (and the
    yield) on a condition defined outside the loop becomes an `scf.if` on
    that condition of two copies of the loop, the condition replaced by
    true in one and false in the other (canonicalization then drops the
    inner ifs). Run after loop-invariant code motion, which moves the
    condition out; a constant condition is left to canonicalization.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

def PeelLoopsPass : Pass<"xla-gpu-peel-loops", "mlir::func::FuncOp"> {
  let summary = "Peels the last iteration of a range variable that only it constrains.";
  let description = [{
    XLA's loop peeler: an `xla_gpu.loop` whose map constrains a range
    variable in a way that can fail only on the variable's last value
    becomes two loops chained through their iteration arguments -- the main
    one without that value, whose map no longer has the constraint, and a
    tail over the last value, which keeps it. Range variables are tried from
    the last to the first while the peeled nest stays under 64 iterations.
  }];
  let options = [
    Option<"peelInnermost", "peel-innermost", "bool", /*default=*/"true",
           "Peel the last range variable too (XLA's); the CPU target does not where "
           "it steps through a thread's contiguous elements (a vector, an unroll: "
           "added as it is), which its lane loops take whole">,
    Option<"accumulationsOnly", "accumulations-only", "bool", /*default=*/"false",
           "Peel only loops that carry a value besides tensors (a reduction's "
           "accumulators); the CPU target's">,
  ];
}

def FuseLoopsPass : Pass<"xla-gpu-fuse-loops", "mlir::func::FuncOp"> {
  let summary = "Fuses a loop that builds a vector with the loop that reads it back.";
  let description = [{
    XLA's loop fuser: an `xla_gpu.loop` that inserts into a vector
    (`vector.insert %v, %iter[%s0, %s1]`, yielded) and a later
    `xla_gpu.loop` over the same dimensions and domain that extracts from
    its result at the same position (`vector.extract %vec[%s0, %s1]`)
    become one loop: the first body, then the second, each extract reading
    the vector the same iteration inserted into. The fused loop's map has
    both maps' results; its iteration arguments are both loops'. Loops
    whose domains, dimensions or positions differ, or whose vector is read
    otherwise, stay as they are.
  }];
  let dependentDialects = ["::mlir::vector::VectorDialect"];
}

def ConvertFloatNvidiaPass : Pass<"xla-gpu-convert-float-nvidia", "mlir::func::FuncOp"> {
  let summary = "Converts to and from f8E4M3FN and f8E5M2 with NVIDIA's cvt instructions.";
  let description = [{
    `arith.truncf` to and `arith.extf` from f8E4M3FN and f8E5M2 become
    `nvvm.convert.f32x2.to.f8x2` (`nvvm.convert.f16x2.to.f8x2` from f16) and
    `nvvm.convert.f8x2.to.f16x2`: one instruction instead of the bit code
    -xla-gpu-expand-float-ops emits. Other sources go through f32 (f64
    truncated to f32 first, as XLA does), bf16 results through f32. The
    hardware saturates; overflowing inputs are fixed up to XLA's result (the
    signed infinity, or f8E4M3FN's NaN). The instructions exist from sm_89
    with PTX 8.1 and sm_90 with PTX 7.8: the GPU pipeline adds the pass for
    compute capability 9.0 and above (its PTX is 7.8).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::vector::VectorDialect", "::mlir::LLVM::LLVMDialect"];
}

def FlattenTensorsPass : Pass<"xla-gpu-flatten-tensors", "mlir::ModuleOp"> {
  let summary = "Flattens statically shaped tensors and vectors to one dimension.";
  let description = [{
    Every N-d tensor (function arguments and results, loop-carried values,
    shared memory, constants) becomes 1-d in the order of its layout: the
    encoding `dense<[minor-to-major]> : tensor<Nxi64>` when it has one,
    row-major otherwise. `tensor.extract`, `tensor.insert`,
    `xla_gpu.atomic_rmw` and 1-d vector transfers take one index, the
    linearization of the old ones through an `xla_gpu.apply_indexing` (which
    folds into the apply_indexing that computed the indices, if any).

    N-d vectors become 1-d the same way (row-major): function arguments and
    results, loop-carried values, constants, and `vector.extract` /
    `vector.insert` of a scalar. Any other op on an N-d vector keeps its
    type and gets a `vector.shape_cast` of its operands and results.

    Fails ("failed to converge") when the folding does not settle or an
    `unrealized_conversion_cast` is left.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect", "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect", "::xla::gpu::XlaGpuDialect"];
}

def VectorizeLoadsStoresPass
    : Pass<"xla-gpu-vectorize-loads-stores", "mlir::func::FuncOp"> {
  let summary = "Turns element accesses contiguous in a loop into vector transfers.";
  let description = [{
    A `tensor.extract` (`tensor.insert`) in an `scf.for` from 0 to N step 1
    whose index is `base + iv` -- contiguous in the induction variable, with
    every term of `base` a multiple of N (aligned) -- becomes one
    `vector.transfer_read` before the loop (a `vector.transfer_write` after
    it) and a `vector.extract` (`vector.insert` into a new iteration
    argument) inside. As XLA, `(X + iv) mod m` with X and m multiples of
    N counts as `(X mod m) + iv` (it cannot wrap inside a vector), so
    `(d0 * 4 + iv) mod 64` vectorizes. The vector is N elements; following
    the rule of the global-shared copy (seed 004), it must be 8, 16, 32, 64
    or 128 bits wide. When the pass declines it says why in a remark (with `remarks`).
  }];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark for every access that is not vectorized, saying why">,
  ];
  let dependentDialects = ["::mlir::vector::VectorDialect", "::xla::gpu::XlaGpuDialect"];
}

def OptimizeLoopsPass : Pass<"xla-gpu-optimize-loops", "mlir::func::FuncOp"> {
  let summary = "Fully unrolls short loops; pipelines the loads of long ones.";
  let description = [{
    An `scf.for` with constant bounds and at most `max-unroll-trip-count`
    iterations, whose body is small enough that the unrolled loop stays under
    `max-unrolled-ops` operations, is unrolled completely (the spec's loop
    over the vector elements disappears). A longer loop from 0 by 1 is
    unrolled by the largest factor that divides its trip count and keeps the
    body under `max-unrolled-ops` (256 iterations of a 50-op body: by 8).

    A loop that stays a loop and starts its body with a `tensor.extract`
    whose index depends only on the induction variable and loop-invariant
    values is software-pipelined: the first element is loaded before the
    loop, and each iteration loads the next one (guarded by the loop bound)
    while it computes with the current one, so the load's latency overlaps
    the work.
  }];
  let options = [
    Option<"pipelineLoads", "pipeline-loads", "bool", /*default=*/"true",
           "Software-pipeline the first load of loops that are not unrolled">,
    Option<"maxTripCount", "max-unroll-trip-count", "int64_t", /*default=*/"8",
           "Loops with more iterations are not unrolled completely">,
    Option<"partialUnroll", "partial-unroll", "bool", /*default=*/"true",
           "Unroll a loop from 0 by 1 that is not unrolled completely by the largest "
           "factor that divides its trip count and keeps the body within "
           "max-unrolled-ops (XLA's); false for the CPU target, whose loops LLVM unrolls">,
    Option<"maxUnrolledOps", "max-unrolled-ops", "int64_t", /*default=*/"400",
           "Loops whose unrolled body would exceed this many ops stay loops">,
    Option<"unrollTopLevelAccumulations", "unroll-top-level-accumulations", "bool",
           /*default=*/"true",
           "Unroll loops at the top level of a function that carry a value other "
           "than a tensor (a thread's accumulator); false for the CPU target, "
           "which runs such a loop interchanged with the threads "
           "(-xla-gpu-lower-kernel-to-cpu) so that its steps vectorize">,
    Option<"unrollTopLevelMathLoops", "unroll-top-level-math-loops", "bool",
           /*default=*/"true",
           "Unroll loops that carry only tensors and compute a transcendental "
           "(exp, log, tanh, ...) at the top level of a function or as the whole "
           "of a top-level scf.if's then-branch; false for the CPU target, which "
           "runs such a loop interchanged with the threads: LLVM vectorizes one "
           "copy of the math a step instead of one a step unrolled">,
    Option<"unrollNestedShortLoops", "unroll-nested-short-loops", "bool",
           /*default=*/"false",
           "Unroll loops of at most 4 iterations below the top level of a "
           "function whatever their size (a thread's vector of 2 inside its "
           "steps); true for the CPU target, where such a loop runs inside the "
           "loop over a block's threads and, left a loop, is the innermost one, "
           "which LLVM vectorizes instead of the threads">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

def SimplifyArithPass : Pass<"xla-gpu-simplify-arith", "mlir::func::FuncOp"> {
  let summary = "Folds comparisons the value ranges decide.";
  let description = [{
    Value ranges come from `xla.range` on thread and block ids, constant loop
    bounds, constants, and indexing maps. An `arith.cmpi` that is always true
    or always false becomes a constant; bounds checks of in-range thread
    and block ids disappear after canonicalization.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def SimplifyAffinePass : Pass<"xla-gpu-simplify-affine", "mlir::ModuleOp"> {
  let summary = "Lowers xla_gpu.apply_indexing to arith, simplified by ranges.";
  let description = [{
    Each map is first narrowed to the ranges of its operands and simplified
    with the indexing-map algebra; then it is expanded into arith ops, using
    unsigned division and remainder where the dividend cannot be negative.
    `affine.apply` is lowered the same way (simplified only when the ranges
    of all its operands are known; otherwise expanded with signed ops).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::xla::gpu::XlaGpuDialect"];
}

def LowerXlaGpuToScfPass : Pass<"xla-gpu-lower-xla-gpu-to-scf", "mlir::func::FuncOp"> {
  let summary = "Lowers predicated accesses and warp shuffles to scf/gpu.";
  let description = [{
    `xla_gpu.predicated_insert` and `predicated_extract` become `scf.if`;
    `xla_gpu.shuffle_reduce` becomes a butterfly of `gpu.shuffle down` and
    `xla_gpu.pure_call`s of the combiner, for a warp of `warp_size` lanes; an
    `xla_gpu.materialize` becomes an `xla_gpu.loop` over its map that calls
    the callee for every element and builds a vector (positions: the range
    variables), and the `xla_gpu.insert` consuming it a loop over the
    indexed vector's map that writes each element to the destination at the
    insert's map of the element's indices (XLA's forms; -xla-gpu-fuse-loops
    makes the two one loop); `xla_gpu.reduce` becomes a loop nest over the
    output with an inner one over the reduced dimensions.
  }];
  let options = [
    Option<"warpSize", "warp_size", "int64_t", /*default=*/"32", "Lanes per warp">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::gpu::GPUDialect",
                           "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect",
                           "::mlir::complex::ComplexDialect", "::mlir::vector::VectorDialect"];
}

def ConvertPureCallOpsPass
    : Pass<"xla-gpu-convert-pure-call-ops", "mlir::func::FuncOp"> {
  let summary = "Turns xla_gpu.pure_call into func.call.";
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def InlineCallsPass : Pass<"xla-gpu-inline-calls", "mlir::ModuleOp"> {
  let summary = "Inlines the calls left in a module, each function simplified first.";
  let description = [{
    The CPU target's inliner, after `-xla-gpu-convert-pure-call-ops`: where
    the module still calls functions (the subgraph functions the
    optimization stage kept, a fused instruction read by several others),
    upstream's `inline` runs with canonicalize and CSE as its pipeline, so
    that each function is simplified before it is inlined and its caller
    after (a callee's `xla_gpu.apply_indexing` composes with the ones that
    compute its arguments, and copies read at equal indices merge). A
    module without calls is left as it is, at no cost (the inliner would
    still canonicalize every function once).
  }];
}

def ExpandBf16ConversionsPass
    : Pass<"xla-gpu-expand-bf16-conversions", "mlir::func::FuncOp"> {
  let summary = "Expands bf16 extf and truncf into integer code (for the host).";
  let description = [{
    `arith.extf` from bf16 becomes a shift of its bits into an f32's,
    `arith.truncf` to bf16 rounds to nearest even on the f32's bits (NaN
    kept quiet): x86 has no bf16 conversion without AVX512-BF16, and LLVM's
    own lowering calls compiler-rt's helpers. Upstream's patterns, as
    `arith-expand{include-bf16=true}` applies them, but alone: that pass
    also expands `arith.maximumf` and `arith.minimumf` into compares and
    selects, a chain LLVM's loop vectorizer does not take for a max
    reduction, where `llvm.maximum` (what -xla-gpu-lower-to-llvm makes of
    them, on the GPU too) is one. First, `extf(truncf(x))` becomes `x`
    where `x` is a bf16 (or f16) value at every element (a constant it
    holds, a max, min, select, negation or absolute value of such values
    widened, a load from a stack slot only such values are stored into: a
    lane's own value for its warp's shuffle tree): a bf16 or f16 reducer's
    max chain and tree then run in f32 without rounding each step. A
    `truncf` to bf16 of such a value left (the chain's result, a bf16 ReLU)
    keeps the high half of its bits, with no rounding.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ExpandFloatOpsPass : Pass<"xla-gpu-expand-float-ops", "mlir::func::FuncOp"> {
  let summary = "Computes bf16, f16 and f8 arithmetic in f32; f8 conversions as integer code; f32 tanh and erf as polynomials.";
  let description = [{
    Every arith and math op on bf16, f16 or an f8 type is computed in f32:
    the operands are extended, the op runs in f32, and the result is rounded
    back to the narrow type after every op, as XLA does. Then `arith.extf`
    from and `arith.truncf` to the signed 8-bit float types (which LLVM
    does not have) become integer code on their bits: exact to f32, and
    from f32 rounded to nearest even with XLA's overflow (infinity, or NaN
    where the format has no infinity); other types go through f32.

    f32 `math.tanh` and `math.erf` (including those of narrow floats, now
    in f32) become XLA:GPU's rational approximations: tanh as upstream
    MLIR's (Eigen's with FMA: x P(x^2) / Q(x^2) on x clamped to +-7.9988,
    x itself below 4e-4), erf as XLA's (x P(x^2) / Q(x^2) on x clamped to
    +-3.7439). `gpu-approximations=false` leaves them to
    -xla-gpu-lower-to-llvm, as the pipelines do: libdevice on the GPU (the
    spec's walk-through calls `__nv_tanhf`), XLA:CPU's forms on the host.
  }];
  let options = [
    Option<"gpuApproximations", "gpu-approximations", "bool", /*default=*/"true",
           "f32 tanh and erf as XLA:GPU's rational approximations">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

def LowerTensorsPass : Pass<"xla-gpu-lower-tensors", "mlir::ModuleOp"> {
  let summary = "Lowers tensors to pointers with the XLA ABI.";
  let description = [{
    Tensor arguments become `!llvm.ptr`; the entry function returns nothing
    (results are written in place). `tensor.extract`/`insert` and vector
    transfers become `llvm.getelementptr` + `llvm.load`/`llvm.store` (loads
    from arguments that are never written are `invariant`);
    `xla_gpu.allocate_shared` becomes a shared-memory global,
    `xla_gpu.sync_threads` a barrier, `xla_gpu.atomic_rmw` an
    `llvm.atomicrmw` where one exists and a compare-and-swap loop otherwise
    (for an 8- or 16-bit value or a packed sub-byte one, on the 32-bit word
    that holds it; native integer atomics are 32- and 64-bit).

    `gpu_device_info` (a text proto, as XLA's: `cuda_compute_capability
    { major: 8 minor: 0 }` or `rocm_compute_capability { gcn_arch_name:
    "gfx90a" }`) selects the atomics the device has: f16 `fadd` from sm_70,
    bf16 `fadd` from sm_90, f64 `fadd` from sm_60 (f32 everywhere); on
    ROCm f32 `fadd` everywhere and f16 from gfx90a, through the global
    address space at agent scope. The others are compare-and-swap loops.
    Without it every atomic LLVM has is used (the host target). Index arithmetic is cast (`index_castui`) to
    the data layout's index width (`dlti.dl_spec`, 64 without one), i64
    for a tensor too large for it. Complex values are loaded and stored as
    `!llvm.struct<(fN, fN)>`. Tensor iteration arguments and results of
    `scf.for`, `scf.if` and `scf.index_switch` are removed (the pointer is
    the same on every path); unused `scf.index_switch` results are dropped
    first.
  }];
  let options = [
    Option<"gpuDeviceInfo", "gpu_device_info", "std::string", /*default=*/"\"\"",
           "The device, as a text proto (XLA's GpuDeviceInfoProto subset)">,
  ];
  let dependentDialects = ["::mlir::complex::ComplexDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect"];
}

def LowerToLlvmPass : Pass<"xla-gpu-lower-to-llvm", "mlir::ModuleOp"> {
  let summary = "Lowers what is left (func, scf, arith, math, vector, gpu) to LLVM/NVVM.";
  let description = [{
    With `target=gpu`: math functions become libdevice calls (`__nv_tanhf`,
    ...), thread and block ids `nvvm.read.ptx.sreg.*`, and entry (public)
    functions are marked as kernels. With `target=cpu` (after
    `-xla-gpu-lower-kernel-to-cpu`): entry functions get a C interface and
    `noalias` buffers, and `math.tanh` becomes XLA:CPU's rational
    approximation so that thread loops vectorize (f32 sin, cos and tan: a
    short reduction below 2^24, and a call of the exact one past it, which
    the loop vectorizer calls through masked vector variants; HostJit.cpp
    runs those only where a lane needs them); the other f32 math functions
    and f64 exp, expm1, log, log1p, tanh, sin, cos, tan (libm's past 2^19,
    as the f32 ones), atan2, cbrt, pow and erf become arithmetic too, and
    pow of a constant 1/2, 2, -1 or 1 what LLVM folds it to; bf16 memory is read
    and written as i16 (LLVM's x86 backend asserts on a reversed vector of
    bf16). Index arithmetic is i64,
    or i32 with `index-bitwidth=32`.
  }];
  let options = [
    Option<"indexBitwidth", "index-bitwidth", "unsigned", /*default=*/"64",
           "Bit width of the index type">,
    Option<"target", "target", "std::string", /*default=*/"\"gpu\"",
           "gpu (NVVM, libdevice) or cpu (host LLVM, C interface, noalias pointers)">,
    Option<"ldexpScaling", "ldexp-scaling", "bool", /*default=*/"false",
           "cpu: f32 exp scales by 2^n with llvm.ldexp (a host with AVX-512: VSCALEF) "
           "instead of two exponent-field multiplies">,
    Option<"f64VectorLanes", "f64-vector-lanes", "unsigned", /*default=*/"8",
           "cpu: the lanes of the f64 functions' vector variants (the host's vector "
           "of f64: 8 with AVX-512, else 4)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::cf::ControlFlowDialect", "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"];
}

def PropagateSliceIndicesPass
    : Pass<"xla-gpu-propagate-slice-indices", "mlir::ModuleOp"> {
  let summary = "Copies the xla.slice_index of entry arguments to the callees.";
  let description = [{
    The buffer assignment tells which buffer slice each argument of the
    entry function lives in (`xla.slice_index`). A function called with an
    entry argument receives the same annotation on its parameter (and
    `xla.invariant`), so that every function knows which of its pointers
    alias. What no call shows is copied by position, XLA's rule: a
    function's leading tensor parameters, of the entry's types, get the
    attributes of the entry's arguments at the same positions.
  }];
}

def MergePointersPass : Pass<"xla-gpu-merge-pointers", "mlir::ModuleOp"> {
  let summary = "Passes an argument once when several share one buffer slice.";
  let description = [{
    Arguments with the same `xla.slice_index` are the same buffer: the
    later ones are replaced by the first and removed from the signature, as
    XLA's ABI passes each slice once -- in entry functions, and in private
    functions whose every use is a call (the calls drop the same operands).
    The pointer arguments left with a slice index are distinct buffers and
    get `llvm.noalias`, as in XLA.
  }];
}

def LowerKernelToCpuPass : Pass<"xla-gpu-lower-kernel-to-cpu", "mlir::ModuleOp"> {
  let summary = "Turns a GPU kernel into a host function over a range of blocks.";
  let description = [{
    For the CPU target, after `xla-gpu-lower-tensors`. An entry function
    `@f(ptrs...)` that reads `gpu.thread_id`/`gpu.block_id` (with `xla.range`
    giving the grid) becomes `@f(ptrs..., %first_block, %last_block)` that runs
    every thread of every block in [first, last), with GPU semantics:

    1. The top-level ops are cut into phases at `gpu.barrier` and
       `gpu.shuffle`; each phase is a loop over the threads of the block, so
       every thread finishes a phase before any starts the next.
    2. Values that live across a cut are kept per thread (an array indexed by
       the thread id; a small vector one array per element, so that thread
       loops are scalar code LLVM widens across the threads); constants, ids, shared-memory addresses and the
       integer and pointer arithmetic on them (index maps) are recomputed
       instead -- cheaper than a store and a load per thread.
    3. A `gpu.shuffle` is a cut too: the phase using its result reads the
       shuffled value's slots, lane `l` the value of lane `l + offset` of its
       segment of `width` lanes, or its own when that lane is outside the
       segment -- exactly `shfl.down` (two contiguous loads and a select;
       the slots are padded by the offset).
    4. Shared memory (address-space-3 globals) becomes one buffer per call
       and block of a batch, reused by the batches the call runs. So does
       a result argument marked `xla.block_local_bytes = N`: each block
       writes and reads back only its N bytes at `block * N` and nothing
       else reads them (a row program's side value); its address is moved
       by the batch's first block onto the buffer (GEPs on it lose
       `inbounds`), and the argument's memory is not touched.
    5. Each phase runs only the threads that matter, computed backwards from
       the last phase: those for which it writes memory (a top-level
       `scf.if` whose condition is a function of the thread ids is
       evaluated per thread) and those whose values a later phase reads (a
       shuffle reads its source lanes), as an interval or as warps x lanes.
       After a warp's shuffle tree only lane 0's result is stored, so each
       round runs half the lanes of the one before.
    6. A top-level `scf.for` with constant bounds that carries values (a
       thread's accumulation) runs interchanged with the threads: each
       iteration is a loop over the threads, the carried values in their
       slots. Threads do not communicate within a phase, so any interleaving
       of their steps is one a GPU may run.
    7. Divisions of the thread id by a constant the phase's period divides
       (a warp) split into the warp loop's base and the lane, so that
       addresses are affine in the innermost loop; a division of an
       invariant plus the thread id by a constant no lane reaches (the loop
       emitter's row and column of a linear index) cuts the thread loop in
       two where the quotient steps, each half affine in the lane.
    8. Kernels with barriers but no shuffles run their blocks in batches
       (up to 16 blocks, slots and shared memory within 512 KiB), phase by
       phase: neighbouring tiles of a transpose read whole rows. So do
       kernels with shuffles whose accumulation reads nearer the
       neighbouring block's elements than its own next step's (a column
       reduction's strips; a row reduction's blocks run one by one).

    9. i8 and i16 division and remainder go through f32 (x86 has no vector
       integer division; in f32 the quotient of such integers truncates
       exactly), so that thread loops dividing them vectorize.
    10. `arith.truncf` from f64 to f16 or bf16 (compiler-rt calls on the
        host, which the JIT may not find) becomes a truncation to f32 rounded
        to odd followed by one to the narrow type: correctly rounded, and no
        helper is needed.

    Barriers and shuffles inside control flow are not supported (the
    emitters place them at the top level) and are reported. Threads and
    blocks may be three-dimensional: the loops run over linear ids (x
    fastest, as CUDA forms warps) and each `gpu.thread_id`/`gpu.block_id`
    is recovered from them. The grid is the larger of the `xla.range`s found
    and the function's `xla.launch_dims` (`{block_counts = array<i64: x, y,
    z>, thread_counts_per_block = array<i64: x, y, z>}`, which the emitters
    write and which survives optimization removing an unused id).
  }];
  let options = [
    Option<"transposingWrites", "transposing-writes", "bool", /*default=*/"true",
           "Write a tile read transposed from shared memory in squares of 512-bit "
           "vectors (lane shuffles); false: element by element, which LLVM "
           "vectorizes as it can (hosts without 512-bit vectors: as fast, and "
           "half the code to generate)">,
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::complex::ComplexDialect", "::mlir::vector::VectorDialect"];
}

#endif  // XLA_GPU_PASSES_TD

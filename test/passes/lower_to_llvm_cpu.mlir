// The host target: noalias buffers (no C-interface copy), tanh as a vectorizable
// rational approximation, f32 exp as a polynomial with exponent-field
// scalings (or, with ldexp-scaling, llvm.ldexp) and f32 log as one on the mantissa, instead of libm calls. A
// scalar f64 exp is a call of a function of libm's exp whose vector
// variants compute the approximation (checked at the end of the file).
// RUN: xla-gpu-opt %s -xla-gpu-lower-to-llvm=target=cpu | FileCheck %s --check-prefix=CPU
// RUN: xla-gpu-opt %s -xla-gpu-lower-to-llvm="target=cpu ldexp-scaling=true" \
// RUN:   | FileCheck %s --check-prefix=LDEXP
// RUN: xla-gpu-opt %s -xla-gpu-lower-to-llvm="target=cpu f64-vector-lanes=4" \
// RUN:   | FileCheck %s --check-prefix=LANES4
// RUN: not xla-gpu-opt %s -xla-gpu-lower-to-llvm=target=tpu 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: target must be gpu or cpu, got tpu
// CPU-LABEL: llvm.func @host(%{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: f32) -> f32
// CPU-NOT: llvm.emit_c_interface
// CPU-NOT: nvvm
// CPU-NOT: llvm.call
// CPU: llvm.intr.fma
// CPU: llvm.fdiv
// CPU: llvm.select
// CPU: llvm.intr.roundeven
// CPU: llvm.fptosi
// CPU: llvm.shl
// CPU: llvm.bitcast %{{.*}} : i32 to f32
// CPU-NOT: llvm.intr.ldexp
// CPU: llvm.call @xla_gpu_f64_exp(%{{.*}}) : (f64) -> f64
// CPU: llvm.and %{{.*}} : i32
// CPU: llvm.or %{{.*}} : i32
// CPU-NOT: llvm.intr.log
// CPU-NOT: @_mlir_ciface_host
// CPU-NOT: llvm.intr.exp
// With ldexp-scaling (a host with AVX-512: VSCALEF) the f32 exp's 2^n is
// one llvm.ldexp of the polynomial's value by n.
// LDEXP-LABEL: llvm.func @host
// LDEXP: %[[N:.*]] = llvm.intr.roundeven
// LDEXP: %[[I:.*]] = llvm.fptosi %[[N]] : f32 to i32
// LDEXP: llvm.intr.ldexp(%{{.*}}, %[[I]]) : (f32, i32) -> f32
// LDEXP: llvm.call @xla_gpu_f64_exp
func.func @host(%p: !llvm.ptr, %x: f32) -> f32 {
  %t = math.tanh %x : f32
  %e = math.exp %t : f32
  %d = arith.extf %e : f32 to f64
  %e64 = math.exp %d : f64
  %r = arith.truncf %e64 : f64 to f32
  %l = math.log %r : f32
  return %l : f32
}

// bf16 memory is i16 on the host: LLVM's x86 backend asserts on a reversed
// vector of bf16 (what the loop vectorizer makes of a thread loop reading
// bf16 backwards), and a bitcast costs nothing.
// CPU-LABEL: llvm.func @bf16_memory
// CPU:       %[[X:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr -> i16
// CPU:       llvm.bitcast %[[X]] : i16 to bf16
// CPU:       %[[V:.*]] = llvm.load %{{.*}} : !llvm.ptr -> vector<8xi16>
// CPU:       llvm.bitcast %[[V]] : vector<8xi16> to vector<8xbf16>
// CPU:       llvm.store %{{.*}}, %{{.*}} : i16, !llvm.ptr
// CPU:       llvm.store %{{.*}}, %{{.*}} : vector<8xi16>, !llvm.ptr
// CPU-NOT:   bf16, !llvm.ptr
func.func @bf16_memory(%p: !llvm.ptr, %q: !llvm.ptr) {
  %x = llvm.load %p invariant : !llvm.ptr -> bf16
  %v = llvm.load %p : !llvm.ptr -> vector<8xbf16>
  llvm.store %x, %q : bf16, !llvm.ptr
  llvm.store %v, %q : vector<8xbf16>, !llvm.ptr
  return
}

// f32 exp's input clamp on the host: compares and selects (one MINPS and
// one MAXPS on x86; a NaN stays a NaN), not llvm.intr.minimum/maximum,
// which x86 has no instruction for. Overflow needs no select of its own:
// from the clamp at 89 the scaling by 2^128 overflows to +inf.
// CPU-LABEL: llvm.func @exp_clamp
// CPU-DAG:   %[[HI:.*]] = llvm.mlir.constant(8.900000e+01 : f32) : f32
// CPU-DAG:   %[[LO:.*]] = llvm.mlir.constant(-1.040000e+02 : f32) : f32
// CPU:       %[[OVER:.*]] = llvm.fcmp "olt" %[[HI]], %[[X:.*]] : f32
// CPU:       %[[BELOW:.*]] = llvm.select %[[OVER]], %[[HI]], %[[X]] : i1, f32
// CPU:       %[[UNDER:.*]] = llvm.fcmp "olt" %[[BELOW]], %[[LO]] : f32
// CPU:       %[[CLAMPED:.*]] = llvm.select %[[UNDER]], %[[LO]], %[[BELOW]] : i1, f32
// CPU:       llvm.fmul %[[CLAMPED]]
// CPU-NOT:   llvm.intr.minimum
// CPU-NOT:   llvm.intr.maximum
// CPU-NOT:   llvm.select
// CPU:       llvm.return
func.func @exp_clamp(%x: f32) -> f32 {
  %e = math.exp %x : f32
  return %e : f32
}

// f32 expm1 and log1p on the host: arithmetic that vectorizes, no libm
// call. expm1 is 2 (t e + (t - 1/2)) with t = 2^(n-1) built in the
// exponent field (n + 126); log1p adds u = 1 + x's rounding error over u
// (a division) to log(u). f64's are calls of their functions with vector
// variants.
// CPU-LABEL: llvm.func @expm1_log1p
// CPU-NOT:   llvm.call @expm1f
// CPU:       %[[N:.*]] = llvm.fptosi %{{.*}} : f32 to i32
// CPU:       %[[BIAS:.*]] = llvm.mlir.constant(126 : i32) : i32
// CPU:       %[[B:.*]] = llvm.add %[[N]], %[[BIAS]] : i32
// CPU:       %[[T:.*]] = llvm.bitcast %{{.*}} : i32 to f32
// CPU:       %[[HALF:.*]] = llvm.mlir.constant(5.000000e-01 : f32) : f32
// CPU:       %[[TM:.*]] = llvm.fsub %[[T]], %[[HALF]] : f32
// CPU:       llvm.intr.fma(%[[T]], %{{.*}}, %[[TM]])
// CPU-NOT:   llvm.call @log1pf
// CPU:       llvm.fdiv
// CPU:       %[[E64:.*]] = llvm.call @xla_gpu_f64_expm1(%arg1) : (f64) -> f64
// CPU:       llvm.call @xla_gpu_f64_log1p(%[[E64]]) : (f64) -> f64
// CPU:       llvm.return
func.func @expm1_log1p(%x: f32, %d: f64) -> (f32, f64) {
  %e = math.expm1 %x : f32
  %l = math.log1p %e : f32
  %e64 = math.expm1 %d : f64
  %l64 = math.log1p %e64 : f64
  return %l, %l64 : f32, f64
}

// f32 sin, cos and tan on the host: f64 arithmetic that vectorizes. A
// scalar below 2^24 in magnitude is reduced by Cody-Waite (x 2/pi rounded,
// pi/2 in three parts), the result rounded once to f32; from 2^24 on (inf
// too) a call of the function with the exact reduction (2/pi's bits in
// seven 29-bit chunks, the first and last shown): internal, never inlined
// nor optimized, touching no memory, marked for HostJit.cpp's vector
// variants. A vector of f32 is reduced exactly inline. A scalar f64 below
// 2^19 by fdlibm's medium reduction (pi/2's first 33 bits shown), from
// there (inf too) a call of libm's through a function of the same kind.
// CPU-LABEL: llvm.func @trig
// CPU-NOT:   llvm.intr.sin({{.*}}) : (f32)
// CPU:       %[[X:.*]] = llvm.fpext %arg0 : f32 to f64
// CPU:       llvm.mlir.constant(0.63661977236758138 : f64)
// CPU:       llvm.mlir.constant(-1.570796325802803 : f64)
// CPU:       llvm.mlir.constant(-9.9209357968054043E-10 : f64)
// CPU:       llvm.mlir.constant(-1.6446256936324258E-26 : f64)
// CPU:       %[[SHORT:.*]] = llvm.select %{{.*}}, %arg0, %{{.*}} : i1, f32
// CPU:       %[[BOUND:.*]] = llvm.mlir.constant(0x4B800000 : f32)
// CPU:       %[[ABS:.*]] = llvm.intr.fabs(%arg0)
// CPU:       %[[HUGE:.*]] = llvm.fcmp "oge" %[[ABS]], %[[BOUND]] : f32
// CPU:       llvm.cond_br %[[HUGE]], ^[[EXACT:.*]], ^[[JOIN:.*]](%[[SHORT]] : f32)
// CPU:     ^[[EXACT]]:
// CPU:       %[[CALL:.*]] = llvm.call @xla_gpu_host_sin_f32(%arg0) : (f32) -> f32
// CPU:       llvm.br ^[[JOIN]](%[[CALL]] : f32)
// CPU:     ^[[JOIN]](%[[SIN:.*]]: f32):
// CPU:       llvm.cond_br
// CPU:       llvm.call @xla_gpu_host_cos_f32(%[[SIN]])
// CPU-NOT:   llvm.call @tanf
// CPU:       llvm.call @xla_gpu_host_tan_f32
// CPU:       llvm.mlir.constant(1.5707963267341256 : f64)
// CPU:       %[[BOUND64:.*]] = llvm.mlir.constant(5.242880e+05 : f64)
// CPU:       %[[ABS64:.*]] = llvm.intr.fabs(%arg1)
// CPU:       %[[HUGE64:.*]] = llvm.fcmp "oge" %[[ABS64]], %[[BOUND64]] : f64
// CPU:       llvm.cond_br %[[HUGE64]]
// CPU:       llvm.call @xla_gpu_host_sin_f64(%arg1) : (f64) -> f64
// CPU:       llvm.return
// CPU-LABEL: llvm.func @trig_vector
// CPU-NOT:   llvm.call
// CPU:       llvm.mlir.constant(dense<3.720474878517739E-53> : vector<4xf64>)
// CPU-NOT:   llvm.call
// CPU:       llvm.return
func.func @trig(%x: f32, %d: f64) -> (f32, f64) {
  %s = math.sin %x : f32
  %c = math.cos %s : f32
  %t = math.tan %c : f32
  %s64 = math.sin %d : f64
  return %t, %s64 : f32, f64
}

func.func @trig_vector(%x: vector<4xf32>) -> vector<4xf32> {
  %s = math.sin %x : vector<4xf32>
  return %s : vector<4xf32>
}

// f32 pow on the host: 2^(y log2|x|) in f64 (log2 through s = (m - 1) /
// (m + 1), 2^n as an f64 exponent field), rounded once to f32; f64 pow is
// a call of its function with vector variants. A constant exponent of 1/2
// is |sqrt(x)| (+inf at -inf), as LLVM folds a pow intrinsic.
// CPU-LABEL: llvm.func @pow
// CPU-NOT:   llvm.intr.pow({{.*}}) : (f32, f32)
// CPU:       llvm.bitcast %{{.*}} : f64 to i64
// CPU:       llvm.fdiv %{{.*}} : f64
// CPU:       llvm.shl %{{.*}} : i64
// CPU:       llvm.fptrunc %{{.*}} : f64 to f32
// CPU:       llvm.call @xla_gpu_f64_pow(%arg2, %arg2) : (f64, f64) -> f64
// CPU:       llvm.return
// CPU-LABEL: llvm.func @pow_half
// CPU:       %[[ROOT:.*]] = llvm.intr.sqrt(%arg0) : (f64) -> f64
// CPU:       %[[ABS:.*]] = llvm.intr.fabs(%[[ROOT]])
// CPU:       %[[NINF:.*]] = llvm.fcmp "oeq" %arg0, %{{.*}} : f64
// CPU:       llvm.select %[[NINF]], %{{.*}}, %[[ABS]]
// CPU-NOT:   llvm.intr.pow
// CPU:       llvm.return
func.func @pow(%x: f32, %y: f32, %d: f64) -> (f32, f64) {
  %p = math.powf %x, %y : f32
  %p64 = math.powf %d, %d : f64
  return %p, %p64 : f32, f64
}

func.func @pow_half(%d: f64) -> f64 {
  %half = arith.constant 0.5 : f64
  %p = math.powf %d, %half : f64
  return %p : f64
}

// f32 atan2 on the host: f64 arithmetic (the ratio halved twice through
// sqrt, a Taylor series), rounded once to f32, NaN operands kept; f64
// atan2 is a call of its function with vector variants.
// CPU-LABEL: llvm.func @atan2_f32
// CPU-NOT:   llvm.call @atan2f
// CPU:       llvm.intr.sqrt(%{{.*}}) : (f64) -> f64
// CPU:       llvm.intr.sqrt(%{{.*}}) : (f64) -> f64
// CPU:       llvm.fptrunc %{{.*}} : f64 to f32
// CPU:       llvm.fcmp "uno"
// CPU:       llvm.call @xla_gpu_f64_atan2(%arg2, %arg2) : (f64, f64) -> f64
// CPU:       llvm.return
func.func @atan2_f32(%y: f32, %x: f32, %d: f64) -> (f32, f64) {
  %a = math.atan2 %y, %x : f32
  %a64 = math.atan2 %d, %d : f64
  return %a, %a64 : f32, f64
}

// f32 cbrt on the host: f64 arithmetic (three Newton steps, each a
// division), x's sign, rounded once to f32; f64 cbrt is a call of its
// function with vector variants.
// CPU-LABEL: llvm.func @cbrt_f32
// CPU-NOT:   llvm.call @cbrtf
// CPU-COUNT-3: llvm.fdiv %{{.*}} : f64
// CPU:       llvm.fptrunc %{{.*}} : f64 to f32
// CPU:       llvm.intr.copysign
// CPU:       llvm.call @xla_gpu_f64_cbrt(%arg1) : (f64) -> f64
// CPU:       llvm.return
func.func @cbrt_f32(%x: f32, %d: f64) -> (f32, f64) {
  %c = math.cbrt %x : f32
  %c64 = math.cbrt %d : f64
  return %c, %c64 : f32, f64
}

// f32 fmod (arith.remf) in f64: trunc(|x| / |y|), the remainder by an FMA,
// |y| added where it is negative, x's sign; where |x| >= 2^51 |y| or |y| is
// inf (or either is NaN: unordered), a call of libm's through a function
// of the trig functions' kind. An f64 remainder the same without the
// conversions, through libm's fmod.
// CPU-LABEL: llvm.func @fmod_f32
// CPU:       %[[X:.*]] = llvm.fpext %arg0 : f32 to f64
// CPU:       %[[AX:.*]] = llvm.intr.fabs(%[[X]])
// CPU:       %[[Y:.*]] = llvm.fpext %arg1 : f32 to f64
// CPU:       %[[AY:.*]] = llvm.intr.fabs(%[[Y]])
// CPU:       %[[Q:.*]] = llvm.fdiv %[[AX]], %[[AY]]
// CPU:       %[[T:.*]] = llvm.intr.trunc(%[[Q]])
// CPU:       %[[NT:.*]] = llvm.fneg %[[T]]
// CPU:       %[[R:.*]] = llvm.intr.fma(%[[NT]], %[[AY]], %[[AX]])
// CPU:       %[[NEG:.*]] = llvm.fcmp "olt" %[[R]]
// CPU:       %[[RY:.*]] = llvm.fadd %[[R]], %[[AY]]
// CPU:       %[[M:.*]] = llvm.select %[[NEG]], %[[RY]], %[[R]]
// CPU:       %[[F:.*]] = llvm.fptrunc %[[M]] : f64 to f32
// CPU:       %[[S:.*]] = llvm.intr.copysign(%[[F]], %arg0)
// CPU:       %[[BOUND:.*]] = llvm.mlir.constant(0x4320000000000000 : f64)
// CPU:       %[[LIMIT:.*]] = llvm.fmul %[[AY]], %[[BOUND]]
// CPU:       llvm.fcmp "uge" %[[AX]], %[[LIMIT]]
// CPU:       llvm.fcmp "uge" %[[AY]]
// CPU:       llvm.cond_br %{{.*}}, ^[[LIBM:.*]], ^[[JOIN:.*]](%[[S]] : f32)
// CPU:     ^[[LIBM]]:
// CPU:       llvm.call @xla_gpu_host_fmod_f32(%arg0, %arg1) : (f32, f32) -> f32
// CPU:       %[[AA:.*]] = llvm.intr.fabs(%arg2)
// CPU:       %[[AB:.*]] = llvm.intr.fabs(%arg3)
// CPU:       llvm.fdiv %[[AA]], %[[AB]]
// CPU-NOT:   llvm.fptrunc
// CPU:       llvm.intr.copysign(%{{.*}}, %arg2) : (f64, f64) -> f64
// CPU:       llvm.call @xla_gpu_host_fmod_f64(%arg2, %arg3) : (f64, f64) -> f64
// CPU:       llvm.return
func.func @fmod_f32(%x: f32, %y: f32, %a: f64, %b: f64) -> (f32, f64) {
  %r = arith.remf %x, %y : f32
  %r64 = arith.remf %a, %b : f64
  return %r, %r64 : f32, f64
}

// f64 tanh as XLA:CPU computes it, in place, a scalar as a vector (no
// function of libm's): x clamped to +-17.714196154005176, Eigen's 19/18
// rational of it (numerator's last coefficient 1, times x), +-1 from
// |x| = 20 on.
// CPU-LABEL: llvm.func @tanh_f64(%arg0: f64, %arg1: vector<8xf64>) -> !llvm.struct<(f64, vector<8xf64>)>
// CPU-NOT:   llvm.call
// CPU:       llvm.mlir.constant(17.714196154005176 : f64)
// CPU:       llvm.mlir.constant(2.6158007860482231E-23 : f64)
// CPU:       llvm.intr.fma
// CPU:       llvm.fdiv
// CPU:       %[[ABS:.*]] = llvm.intr.fabs(%arg0) : (f64) -> f64
// CPU:       llvm.fcmp "oge" %[[ABS]], %{{.*}} : f64
// CPU:       llvm.select
// CPU-NOT:   llvm.call
// CPU:       llvm.mlir.constant(dense<17.714196154005176> : vector<8xf64>)
// CPU:       llvm.return
func.func @tanh_f64(%x: f64, %v: vector<8xf64>) -> (f64, vector<8xf64>) {
  %t = math.tanh %x : f64
  %u = math.tanh %v : vector<8xf64>
  return %t, %u : f64, vector<8xf64>
}

// The exact trig functions @trig calls, after every function of the file.
// CPU-LABEL: llvm.func internal @xla_gpu_host_sin_f32(%arg0: f32) -> f32
// CPU-SAME:    memory_effects = #llvm.memory_effects<other = none, argMem = none
// CPU-SAME:    no_inline, no_unwind, optimize_none, passthrough = ["xla-gpu-vector-variants"]
// CPU-SAME:    will_return
// CPU:       llvm.mlir.constant(0.63661977089941502 : f64)
// CPU:       llvm.mlir.constant(3.720474878517739E-53 : f64)
// CPU:       llvm.fptrunc %{{.*}} : f64 to f32
// The f64 sin's past 2^19: libm's, of the same kind (each f64 function
// after its f32 one).
// CPU-LABEL: llvm.func internal @xla_gpu_host_sin_f64(%arg0: f64) -> f64
// CPU-SAME:    no_inline, no_unwind, optimize_none, passthrough = ["xla-gpu-vector-variants"]
// CPU:       llvm.intr.sin(%arg0) : (f64) -> f64
// CPU-LABEL: llvm.func internal @xla_gpu_host_cos_f32
// CPU-LABEL: llvm.func internal @xla_gpu_host_tan_f32
// fmod's libm functions: weak_odr (see hostFunctionAttributes), each a frem.
// CPU-LABEL: llvm.func weak_odr hidden @xla_gpu_host_fmod_f32(%arg0: f32, %arg1: f32) -> f32
// CPU-SAME:    no_inline, no_unwind, optimize_none, passthrough = ["xla-gpu-vector-variants"]
// CPU:         llvm.frem %arg0, %arg1 : f32
// CPU-LABEL: llvm.func weak_odr hidden @xla_gpu_host_fmod_f64(%arg0: f64, %arg1: f64) -> f64
// CPU:         llvm.frem %arg0, %arg1 : f64
// The f64 functions with vector variants, after the trig ones: libm's,
// never inlined, touching no memory, naming their variant of the host's
// lanes (f64-vector-lanes: 8 by default, 4 for AVX2), which computes the
// approximation (exp's x / ln2 shown) and is weak_odr, marked for
// HostJit.cpp to inline after the loop vectorizer. A function of two
// arguments is weak_odr too: no constant argument leaves its signature.
// CPU-LABEL: llvm.func internal @xla_gpu_f64_exp(%arg0: f64) -> f64
// CPU-SAME:    no_inline
// CPU-SAME:    "vector-function-abi-variant", "_ZGV_LLVM_N8v_xla_gpu_f64_exp(xla_gpu_f64_exp_v8)"
// CPU:         llvm.intr.exp(%arg0) : (f64) -> f64
// CPU-LABEL: llvm.func weak_odr hidden @xla_gpu_f64_exp_v8(%arg0: vector<8xf64>) -> vector<8xf64>
// CPU-SAME:    passthrough = ["xla-gpu-f64-variant"]
// CPU:         llvm.mlir.constant(dense<1.4426950408889634> : vector<8xf64>)
// CPU-LABEL: llvm.func weak_odr hidden @xla_gpu_f64_pow(%arg0: f64, %arg1: f64) -> f64
// CPU-SAME:    "_ZGV_LLVM_N8vv_xla_gpu_f64_pow(xla_gpu_f64_pow_v8)"
// CPU:         llvm.intr.pow(%arg0, %arg1) : (f64, f64) -> f64
// LANES4-LABEL: llvm.func internal @xla_gpu_f64_exp(%arg0: f64) -> f64
// LANES4-SAME:    "_ZGV_LLVM_N4v_xla_gpu_f64_exp(xla_gpu_f64_exp_v4)"
// LANES4-LABEL: llvm.func weak_odr hidden @xla_gpu_f64_exp_v4(%arg0: vector<4xf64>) -> vector<4xf64>
// LANES4-NOT:   xla_gpu_f64_exp_v8

// The host target: C interface, noalias buffers, tanh as a vectorizable
// rational approximation, f32 exp as a polynomial with an exponent-field
// scaling and f32 log as one on the mantissa, instead of libm calls (f64
// exp stays the intrinsic).
// RUN: xla-gpu-opt %s -xla-gpu-lower-to-llvm=target=cpu | FileCheck %s --check-prefix=CPU
// RUN: not xla-gpu-opt %s -xla-gpu-lower-to-llvm=target=tpu 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: target must be gpu or cpu, got tpu
// CPU-LABEL: llvm.func @host(%{{.*}}: !llvm.ptr {llvm.noalias}, %{{.*}}: f32) -> f32
// CPU-SAME: llvm.emit_c_interface
// CPU-NOT: nvvm
// CPU-NOT: llvm.call
// CPU: llvm.intr.fma
// CPU: llvm.fdiv
// CPU: llvm.select
// CPU: llvm.intr.roundeven
// CPU: llvm.fptosi
// CPU: llvm.shl
// CPU: llvm.bitcast %{{.*}} : i32 to f32
// CPU: llvm.intr.exp(%{{.*}}) : (f64) -> f64
// CPU: llvm.and %{{.*}} : i32
// CPU: llvm.or %{{.*}} : i32
// CPU-NOT: llvm.intr.log
// CPU-LABEL: llvm.func @_mlir_ciface_host
func.func @host(%p: !llvm.ptr, %x: f32) -> f32 {
  %t = math.tanh %x : f32
  %e = math.exp %t : f32
  %d = arith.extf %e : f32 to f64
  %e64 = math.exp %d : f64
  %r = arith.truncf %e64 : f64 to f32
  %l = math.log %r : f32
  return %l : f32
}

// The host target: C interface, noalias buffers, tanh as a vectorizable
// rational approximation instead of a libm call.
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
// CPU-LABEL: llvm.func @_mlir_ciface_host
func.func @host(%p: !llvm.ptr, %x: f32) -> f32 {
  %t = math.tanh %x : f32
  return %t : f32
}

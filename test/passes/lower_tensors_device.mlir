// The atomics -xla-gpu-lower-tensors picks per device (gpu_device_info, a
// text proto as XLA's), the data layout's index width, complex values as
// LLVM structs, and tensors no longer carried by loops, ifs and switches.
// RUN: xla-gpu-opt %s -split-input-file -allow-unregistered-dialect -xla-gpu-lower-tensors | FileCheck %s --check-prefix=HOST
// RUN: xla-gpu-opt %s -split-input-file -allow-unregistered-dialect -xla-gpu-lower-tensors="gpu_device_info='cuda_compute_capability { major: 6 }'" | FileCheck %s --check-prefix=PASCAL
// RUN: xla-gpu-opt %s -split-input-file -allow-unregistered-dialect -xla-gpu-lower-tensors="gpu_device_info='cuda_compute_capability { major: 7 minor: 0 }'" | FileCheck %s --check-prefix=VOLTA
// RUN: xla-gpu-opt %s -split-input-file -allow-unregistered-dialect -xla-gpu-lower-tensors="gpu_device_info='cuda_compute_capability { major: 9 }'" | FileCheck %s --check-prefix=HOPPER
// RUN: xla-gpu-opt %s -split-input-file -allow-unregistered-dialect -xla-gpu-lower-tensors="gpu_device_info='rocm_compute_capability { gcn_arch_name: \"gfx908:sramecc+:xnack\" }'" | FileCheck %s --check-prefix=MI100
// RUN: xla-gpu-opt %s -split-input-file -allow-unregistered-dialect -xla-gpu-lower-tensors="gpu_device_info='rocm_compute_capability { gcn_arch_name: \"gfx90a:sramecc+:xnack\" }'" | FileCheck %s --check-prefix=MI200
// RUN: not xla-gpu-opt %s -split-input-file -allow-unregistered-dialect -xla-gpu-lower-tensors="gpu_device_info='tpu { }'" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: gpu_device_info: expected 'cuda_compute_capability { major: N }' or 'rocm_compute_capability { gcn_arch_name: "gfx..." }', got 'tpu { }'

// f32 adds are native everywhere (ROCm: on the global address space, at
// agent scope); f16 from sm_70 and gfx90a; bf16 from sm_90; f64 from sm_60
// on CUDA and never on ROCm. The others are compare-and-swap loops.
func.func @fadd(%f32: tensor<8xf32>, %f16: tensor<8xf16>, %bf16: tensor<8xbf16>,
                %f64: tensor<8xf64>, %i: index, %a: f32, %b: f16, %c: bf16, %d: f64)
    -> (tensor<8xf32>, tensor<8xf16>, tensor<8xbf16>, tensor<8xf64>) {
  %r0 = xla_gpu.atomic_rmw %f32[%i] : tensor<8xf32> {
  ^bb0(%cur: f32):
    %s = arith.addf %cur, %a : f32
    xla_gpu.yield %s : f32
  }
  %r1 = xla_gpu.atomic_rmw %f16[%i] : tensor<8xf16> {
  ^bb0(%cur: f16):
    %s = arith.addf %cur, %b : f16
    xla_gpu.yield %s : f16
  }
  %r2 = xla_gpu.atomic_rmw %bf16[%i] : tensor<8xbf16> {
  ^bb0(%cur: bf16):
    %s = arith.addf %cur, %c : bf16
    xla_gpu.yield %s : bf16
  }
  %r3 = xla_gpu.atomic_rmw %f64[%i] : tensor<8xf64> {
  ^bb0(%cur: f64):
    %s = arith.addf %cur, %d : f64
    xla_gpu.yield %s : f64
  }
  return %r0, %r1, %r2, %r3 : tensor<8xf32>, tensor<8xf16>, tensor<8xbf16>, tensor<8xf64>
}
// HOST-LABEL: func.func @fadd
// HOST: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, f32
// HOST: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, f16
// HOST: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, bf16
// HOST: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, f64
// HOST-NOT: llvm.cmpxchg

// PASCAL-LABEL: func.func @fadd
// PASCAL: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, f32
// PASCAL: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i32
// PASCAL: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i32
// PASCAL: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, f64

// VOLTA-LABEL: func.func @fadd
// VOLTA: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, f32
// VOLTA: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, f16
// VOLTA: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i32
// VOLTA: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, f64

// HOPPER-LABEL: func.func @fadd
// HOPPER: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, f32
// HOPPER: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, f16
// HOPPER: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, bf16
// HOPPER: llvm.atomicrmw fadd %{{.*}}, %{{.*}} monotonic : !llvm.ptr, f64
// HOPPER-NOT: llvm.cmpxchg

// MI100-LABEL: func.func @fadd
// MI100: %[[G:.*]] = llvm.addrspacecast %{{.*}} : !llvm.ptr to !llvm.ptr<1>
// MI100: llvm.atomicrmw fadd %[[G]], %{{.*}} syncscope("agent") monotonic : !llvm.ptr<1>, f32
// MI100: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i32
// MI100: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i32
// MI100: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i64

// MI200-LABEL: func.func @fadd
// MI200: llvm.atomicrmw fadd %{{.*}}, %{{.*}} syncscope("agent") monotonic : !llvm.ptr<1>, f32
// MI200: llvm.atomicrmw fadd %{{.*}}, %{{.*}} syncscope("agent") monotonic : !llvm.ptr<1>, f16
// MI200: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i32
// MI200: llvm.cmpxchg %{{.*}}, %{{.*}}, %{{.*}} monotonic monotonic : !llvm.ptr, i64

// -----

// A bf16/f16 add as -xla-gpu-expand-float-ops leaves it (extended, added in
// f32, rounded once) is the narrow type's own add: a native atomic where the
// GPU has one (f16 from sm_70, bf16 from sm_90). The host keeps the
// compare-and-swap loop (and the f32 add in it).
func.func @narrow_add(%t: tensor<8xf16>, %u: tensor<8xbf16>, %i: index, %x: f16, %y: bf16)
    -> (tensor<8xf16>, tensor<8xbf16>) {
  %a = xla_gpu.atomic_rmw %t[%i] : tensor<8xf16> {
  ^bb0(%cur: f16):
    %c = arith.extf %cur : f16 to f32
    %e = arith.extf %x : f16 to f32
    %s = arith.addf %c, %e : f32
    %r = arith.truncf %s : f32 to f16
    xla_gpu.yield %r : f16
  }
  %b = xla_gpu.atomic_rmw %u[%i] : tensor<8xbf16> {
  ^bb0(%cur: bf16):
    %c = arith.extf %cur : bf16 to f32
    %e = arith.extf %y : bf16 to f32
    %s = arith.addf %e, %c : f32
    %r = arith.truncf %s : f32 to bf16
    xla_gpu.yield %r : bf16
  }
  return %a, %b : tensor<8xf16>, tensor<8xbf16>
}
// HOST-LABEL: func.func @narrow_add
// HOST: scf.while
// HOST: arith.addf %{{.*}} : f32
// HOST: llvm.cmpxchg %{{.*}} : !llvm.ptr, i32
// HOST: scf.while
// HOST-NOT: llvm.atomicrmw

// PASCAL-LABEL: func.func @narrow_add
// PASCAL-NOT: llvm.atomicrmw

// VOLTA-LABEL: func.func @narrow_add
// VOLTA-SAME: %[[X:[a-z0-9]+]]: f16, %[[Y:[a-z0-9]+]]: bf16)
// VOLTA: llvm.atomicrmw fadd %{{.*}}, %[[X]] monotonic : !llvm.ptr, f16
// VOLTA: llvm.cmpxchg %{{.*}} : !llvm.ptr, i32

// HOPPER-LABEL: func.func @narrow_add
// HOPPER-SAME: %[[X:[a-z0-9]+]]: f16, %[[Y:[a-z0-9]+]]: bf16)
// HOPPER: llvm.atomicrmw fadd %{{.*}}, %[[X]] monotonic : !llvm.ptr, f16
// HOPPER: llvm.atomicrmw fadd %{{.*}}, %[[Y]] monotonic : !llvm.ptr, bf16
// HOPPER-NOT: llvm.cmpxchg

// -----

// A 32-bit index in the data layout: indices are cast to i32 (unsigned, a
// valid index is not negative), except into a tensor with 2^31 elements or
// more; constant indices go into the GEP.
module attributes {dlti.dl_spec = #dlti.dl_spec<#dlti.dl_entry<index, 32 : i32>>} {
  func.func @index_width(%small: tensor<43xf32>, %large: tensor<8000000000xf32>, %i: index)
      -> (f32, f32, f32) {
    %c17 = arith.constant 17 : index
    %a = tensor.extract %small[%i] : tensor<43xf32>
    %b = tensor.extract %large[%i] : tensor<8000000000xf32>
    %c = tensor.extract %small[%c17] : tensor<43xf32>
    return %a, %b, %c : f32, f32, f32
  }
}
// HOST-LABEL: func.func @index_width
// HOST-SAME: (%[[S:.*]]: !llvm.ptr, %[[L:.*]]: !llvm.ptr, %[[I:.*]]: index)
// HOST: %[[I32:.*]] = arith.index_castui %[[I]] : index to i32
// HOST: llvm.getelementptr inbounds %[[S]][%[[I32]]] : (!llvm.ptr, i32) -> !llvm.ptr, f32
// HOST: %[[I64:.*]] = arith.index_castui %[[I]] : index to i64
// HOST: llvm.getelementptr inbounds %[[L]][%[[I64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// HOST: llvm.getelementptr inbounds %[[S]][17] : (!llvm.ptr) -> !llvm.ptr, f32

// -----

// Complex values are loaded and stored as the LLVM struct of their parts
// (one access, not two), shared memory holds such structs.
func.func @complex(%in: tensor<10xcomplex<f32>>, %out: tensor<10xcomplex<f64>>, %i: index)
    -> (complex<f32>, tensor<10xcomplex<f64>>, tensor<4xcomplex<f32>>) {
  %v = tensor.extract %in[%i] : tensor<10xcomplex<f32>>
  %re = arith.constant 3.0 : f64
  %c = complex.create %re, %re : complex<f64>
  %w = tensor.insert %c into %out[%i] : tensor<10xcomplex<f64>>
  %shared = xla_gpu.allocate_shared : tensor<4xcomplex<f32>>
  return %v, %w, %shared : complex<f32>, tensor<10xcomplex<f64>>, tensor<4xcomplex<f32>>
}
// HOST: llvm.mlir.global private @shared_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4 x struct<(f32, f32)>>
// HOST-LABEL: func.func @complex
// HOST: %[[P:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.struct<(f32, f32)>
// HOST: %[[L:.*]] = llvm.load %[[P]] invariant : !llvm.ptr -> !llvm.struct<(f32, f32)>
// HOST: %[[V:.*]] = builtin.unrealized_conversion_cast %[[L]] : !llvm.struct<(f32, f32)> to complex<f32>
// HOST: %[[C:.*]] = complex.create
// HOST: %[[S:.*]] = builtin.unrealized_conversion_cast %[[C]] : complex<f64> to !llvm.struct<(f64, f64)>
// HOST: %[[Q:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.struct<(f64, f64)>
// HOST: llvm.store %[[S]], %[[Q]] : !llvm.struct<(f64, f64)>, !llvm.ptr
// HOST: return %[[V]] : complex<f32>

// -----

// A tensor is its buffer's pointer: loops no longer carry it (only the
// vector is left), an if or a switch no longer returns it.
func.func @carried(%t: tensor<500xf32>, %c: i1, %k: index) -> (tensor<500xf32>, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %init = arith.constant dense<1.0> : vector<4xf32>
  %for:2 = scf.for %i = %c0 to %c2 step %c1 iter_args(%v = %init, %a = %t)
      -> (vector<4xf32>, tensor<500xf32>) {
    %inner:2 = scf.for %j = %c0 to %c2 step %c1 iter_args(%w = %v, %b = %a)
        -> (vector<4xf32>, tensor<500xf32>) {
      %x = tensor.extract %b[%j] : tensor<500xf32>
      %y = vector.insert %x, %w [%j] : f32 into vector<4xf32>
      %u = tensor.insert %x into %b[%i] : tensor<500xf32>
      scf.yield %y, %u : vector<4xf32>, tensor<500xf32>
    }
    scf.yield %inner#0, %inner#1 : vector<4xf32>, tensor<500xf32>
  }
  %if = scf.if %c -> tensor<500xf32> {
    %u = tensor.insert %zero into %for#1[%c0] : tensor<500xf32>
    scf.yield %u : tensor<500xf32>
  } else {
    scf.yield %for#1 : tensor<500xf32>
  }
  %sw = scf.index_switch %k -> tensor<500xf32>
  case 0 {
    %u = tensor.insert %zero into %if[%c1] : tensor<500xf32>
    scf.yield %u : tensor<500xf32>
  }
  default {
    scf.yield %if : tensor<500xf32>
  }
  %r = vector.extract %for#0[0] : f32 from vector<4xf32>
  return %sw, %r : tensor<500xf32>, f32
}
// HOST-LABEL: func.func @carried
// HOST-SAME: (%[[T:.*]]: !llvm.ptr, %{{.*}}: i1, %{{.*}}: index) -> f32
// HOST: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<4xf32>) {
// HOST: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<4xf32>) {
// HOST: llvm.load
// HOST: llvm.store
// HOST: scf.yield %{{.*}} : vector<4xf32>
// HOST: scf.if %{{.*}} {
// HOST-NEXT: llvm.getelementptr inbounds %[[T]][0]
// HOST-NEXT: llvm.store
// HOST-NEXT: }
// HOST: scf.index_switch %{{.*}}
// HOST-NEXT: case 0 {
// HOST-NEXT: llvm.getelementptr inbounds %[[T]][1]
// HOST-NEXT: llvm.store
// HOST-NEXT: scf.yield
// HOST-NEXT: }
// HOST-NEXT: default {
// HOST-NEXT: }
// HOST-NOT: -> !llvm.ptr

// -----

// Unused results of a switch go first (XLA's form): ops of no registered
// dialect that produce them are left as they are.
func.func @unused_switch_results(%i: index) -> index {
  %a, %b = scf.index_switch %i -> tensor<8xi32>, tensor<3xf32>
  case 0 {
    %x, %y = "dummy.op1"() : () -> (tensor<8xi32>, tensor<3xf32>)
    scf.yield %x, %y : tensor<8xi32>, tensor<3xf32>
  }
  default {
    %x, %y = "dummy.op2"() : () -> (tensor<8xi32>, tensor<3xf32>)
    scf.yield %x, %y : tensor<8xi32>, tensor<3xf32>
  }
  return %i : index
}
// HOST-LABEL: func.func @unused_switch_results
// HOST-SAME: (%[[I:.*]]: index) -> index
// HOST-NEXT: scf.index_switch %[[I]]
// HOST-NEXT: case 0 {
// HOST-NEXT: "dummy.op1"
// HOST-NEXT: scf.yield
// HOST-NEXT: }
// HOST-NEXT: default {
// HOST-NEXT: "dummy.op2"
// HOST-NEXT: }
// HOST-NEXT: return %[[I]] : index

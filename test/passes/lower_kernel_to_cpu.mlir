// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-kernel-to-cpu -verify-diagnostics | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-kernel-to-cpu="transposing-writes=false" -verify-diagnostics | FileCheck %s --check-prefix=ELEMENTS

// A barrier cuts the kernel into two loops over the threads, inside the loop
// over the blocks of [first, last); a value used across it lives in a
// per-thread array -- but integer and pointer arithmetic on the ids (the
// index %i) is computed again after the barrier, not stored. Blocks run in
// batches (here all 4 of the grid): each phase loops over the batch's
// blocks, and each block of a batch has its own slots and shared memory.
// A loop over the threads' lanes is not to be unrolled by LLVM (it is the
// loop LLVM's vectorizer widens), nor the loops over a batch's blocks and
// over the batches around it (LLVM unrolled them 4 or 8 times, vectorized
// code and all).
// CHECK: #[[$NO_UNROLL:.*]] = #llvm.loop_unroll<disable = true>
// CHECK: #[[$LANES:.*]] = #llvm.loop_annotation<unroll = #[[$NO_UNROLL]]>
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[IN:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr, %[[FIRST:.*]]: index, %[[LAST:.*]]: index)
// CHECK-DAG: %[[SPILL:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 16 : i64} : (i64) -> !llvm.ptr
// CHECK-DAG: %[[SHMEM:.*]] = llvm.alloca %{{.*}} x !llvm.array<64 x f32> {alignment = 16 : i64} : (i64) -> !llvm.ptr
// CHECK-NOT: llvm.alloca
// CHECK: scf.for %[[B0:.*]] = %[[FIRST]] to %[[LAST]] step %c4{{(_[0-9]+)?}}
// CHECK:   %[[END:.*]] = arith.minsi %{{.*}}, %[[LAST]]
// CHECK:   scf.for %[[BID:.*]] = %[[B0]] to %[[END]]
// CHECK:     %[[NTH:.*]] = arith.subi %[[BID]], %[[B0]]
// CHECK:     llvm.getelementptr %[[SHMEM]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<64 x f32>
// CHECK:     arith.muli %[[NTH]], %c64{{(_[0-9]+)?}}
// CHECK:   scf.for %[[T1:.*]] = %c0{{.*}} to %c64{{.*}} step
// CHECK:     %[[V:.*]] = llvm.load
// CHECK:     llvm.store %[[V]], %{{.*}}
// CHECK:     llvm.store %[[V]], %{{.*}}
// CHECK:   } {loop_annotation = #[[$LANES]]}
// CHECK-NEXT: } {loop_annotation = #[[$LANES]]}
// CHECK:   scf.for %[[T2:.*]] = %c0{{.*}} to %c64{{.*}} step
// CHECK:     %[[I:.*]] = arith.index_cast %[[T2]] : index to i64
// CHECK:     %[[O:.*]] = llvm.getelementptr %[[OUT]][%[[I]]]
// CHECK:     %[[W:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:     llvm.store %[[W]], %[[O]]
// CHECK:   } {loop_annotation = #[[$LANES]]}
// CHECK-NEXT: } {loop_annotation = #[[$LANES]]}
// CHECK-NEXT: } {loop_annotation = #[[$LANES]]}
// CHECK-NEXT: return
// CHECK-NOT: gpu.
llvm.mlir.global private @shared_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x f32>
func.func @main(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %sh = llvm.mlir.addressof @shared_0 : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %q = llvm.getelementptr %shp[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %q : f32, !llvm.ptr
  gpu.barrier
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// -----

// A shuffle of a value its phase can compute at any lane (here from the
// thread id) is no cut: the phase computes the value at the lane read as
// well, lane l + 16 of the lane's 32-lane segment, or the lane itself past
// the segment or past the block's last thread. No slots.
// CHECK-LABEL: func.func @shuffle
// CHECK-NOT: llvm.alloca
// CHECK:     scf.for %[[T:.*]] = %c0{{.*}} to %c64{{(_[0-9]+)?}}
// CHECK:       %[[OWN:.*]] = arith.sitofp
// CHECK:       %[[LANE:.*]] = arith.remui %[[T]], %c32{{.*}}
// CHECK:       %[[TARGET:.*]] = arith.addi %[[LANE]], %c16{{.*}}
// CHECK:       %[[OTHER:.*]] = arith.addi %[[T]], %c16{{.*}}
// CHECK:       %[[IN_BLOCK:.*]] = arith.cmpi ult, %[[OTHER]], %c64{{.*}}
// CHECK:       %[[IN_SEGMENT:.*]] = arith.cmpi ult, %[[TARGET]], %c32{{.*}}
// CHECK:       %[[VALID:.*]] = arith.andi %[[IN_SEGMENT]], %[[IN_BLOCK]]
// CHECK:       %[[SOURCE:.*]] = arith.select %[[VALID]], %[[OTHER]], %[[T]] : index
// CHECK:       %[[X:.*]] = arith.index_cast %[[SOURCE]] : index to i32
// CHECK:       %[[READ:.*]] = arith.sitofp %[[X]]
// CHECK:       %[[S:.*]] = arith.select %[[VALID]], %[[READ]], %[[OWN]] : f32
// CHECK:       llvm.store %[[S]]
// CHECK:     } {loop_annotation = #[[$LANES]]}
// CHECK-NOT: scf.for
// CHECK:     return
func.func @shuffle(%out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c16 = arith.constant 16 : i32
  %c32 = arith.constant 32 : i32
  %x = arith.index_cast %tid : index to i32
  %f = arith.sitofp %x : i32 to f32
  %s, %valid = gpu.shuffle down %f, %c16, %c32 : f32
  %i = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %s, %o : f32, !llvm.ptr
  return
}

// -----

// A shuffle of a value its phase cannot compute at another lane -- a load
// after a store of the phase: the other lane's store may not have run yet
// -- is a cut, and the phase after it reads the shuffled value's slots:
// lane l reads lane l + 4 of its 32-lane segment, or itself past the
// segment or past the block's last thread. Both loads are contiguous across
// the threads (the slots are 4 longer than the block), a select keeps the
// one the lane reads. The phase before runs every thread (each stores) and
// keeps the value of lanes [4, 32) of each warp, the lanes read.
// CHECK-LABEL: func.func @shuffle_slots
// CHECK:     %[[SLOTS:.*]] = llvm.alloca %{{.*}} x f32
// CHECK:     scf.for %[[T0:.*]] = %c0{{.*}} to %c64{{(_[0-9]+)?}}
// CHECK:       llvm.store
// CHECK:       %[[G:.*]] = llvm.load
// CHECK:       %[[I0:.*]] = arith.index_cast %[[T0]] : index to i64
// CHECK:       %[[SLOT:.*]] = llvm.getelementptr %[[SLOTS]][%[[I0]]]
// CHECK:       llvm.store %[[G]], %[[SLOT]]
// CHECK:     } {loop_annotation = #[[$LANES]]}
// CHECK:     scf.for %[[T:.*]] = %c0{{.*}} to %c64{{(_[0-9]+)?}}
// CHECK:       %[[LANE:.*]] = arith.remui %[[T]], %c32{{.*}}
// CHECK:       %[[TARGET:.*]] = arith.addi %[[LANE]], %c4{{.*}}
// CHECK:       %[[OTHER:.*]] = arith.addi %[[T]], %c4{{.*}}
// CHECK:       %[[IN_BLOCK:.*]] = arith.cmpi ult, %[[OTHER]], %c64{{.*}}
// CHECK:       %[[IN_SEGMENT:.*]] = arith.cmpi ult, %[[TARGET]], %c32{{.*}}
// CHECK:       %[[VALID:.*]] = arith.andi %[[IN_SEGMENT]], %[[IN_BLOCK]]
// CHECK:       %[[OWN:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:       %[[I:.*]] = arith.index_cast %[[OTHER]] : index to i64
// CHECK:       %[[AT:.*]] = llvm.getelementptr %[[SLOTS]][%[[I]]]
// CHECK:       %[[READ:.*]] = llvm.load %[[AT]] : !llvm.ptr -> f32
// CHECK:       arith.select %[[VALID]], %[[READ]], %[[OWN]] : f32
func.func @shuffle_slots(%buffer: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c4 = arith.constant 4 : i32
  %c32 = arith.constant 32 : i32
  %x = arith.index_cast %tid : index to i32
  %f = arith.sitofp %x : i32 to f32
  %i = arith.index_cast %tid : index to i64
  %b = llvm.getelementptr %buffer[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %f, %b : f32, !llvm.ptr
  %g = llvm.load %b : !llvm.ptr -> f32
  %s, %valid = gpu.shuffle down %g, %c4, %c32 : f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %s, %o : f32, !llvm.ptr
  return
}

// -----

func.func @barrier_in_control_flow(%c: i1) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  scf.if %c {
    // expected-error@+1 {{'gpu.barrier' op inside control flow is not supported by the CPU target}}
    gpu.barrier
  }
  return
}

// -----

// A GPU's block: at most 1024 threads.
// expected-error@+1 {{has 2048 threads per block; at most 1024 (as on a GPU)}}
func.func @too_many_threads(%out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 2047 : index]}
  %i = arith.index_cast %tid : index to i64
  %v = arith.trunci %i : i64 to i32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  llvm.store %v, %o : i32, !llvm.ptr
  return
}

// -----

// -xla-gpu-fold-loops-into-threads made each of a GPU block's threads 4
// (xla.elements_per_thread): up to 4 x 1024 (kMaxFoldedThreadsPerBlock).
// CHECK-LABEL: func.func @folded_threads
// CHECK:         scf.for %{{.*}} = %c0 to %c4096
func.func @folded_threads(%out: !llvm.ptr) attributes {xla.elements_per_thread = 4 : i64} {
  %tid = gpu.thread_id x {xla.range = [0 : index, 4095 : index]}
  %i = arith.index_cast %tid : index to i64
  %v = arith.trunci %i : i64 to i32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  llvm.store %v, %o : i32, !llvm.ptr
  return
}

// -----

// expected-error@+1 {{has 8192 threads per block; at most 4096 (as on a GPU, its threads folded)}}
func.func @too_many_folded_threads(%out: !llvm.ptr) attributes {
    xla.elements_per_thread = 8 : i64} {
  %tid = gpu.thread_id x {xla.range = [0 : index, 8191 : index]}
  %i = arith.index_cast %tid : index to i64
  %v = arith.trunci %i : i64 to i32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  llvm.store %v, %o : i32, !llvm.ptr
  return
}

// -----

func.func @no_range(%out: !llvm.ptr) {
  // expected-error@+1 {{needs an xla.range attribute for the CPU target to know the size of the grid}}
  %tid = gpu.thread_id x
  return
}

// -----

// xla.block_order: the block run v-th is the one at (v mod 4, v / 4) of a
// row-major 4x6 grid of tiles (its dimensions taken in order 1, 0): the
// block id is (v mod 4) * 6 + v / 4.
// CHECK-LABEL: func.func @block_order
// CHECK-SAME: (%[[OUT:.*]]: !llvm.ptr, %[[FIRST:.*]]: index, %[[LAST:.*]]: index)
// CHECK:      scf.for %[[V:.*]] = %[[FIRST]] to %[[LAST]]
// CHECK:        %[[ROW:.*]] = arith.remui %[[V]], %c4
// CHECK:        %[[AT:.*]] = arith.muli %[[ROW]], %c6
// CHECK:        %[[COL:.*]] = arith.divui %[[V]], %c4
// CHECK:        %[[ID:.*]] = arith.addi %[[AT]], %[[COL]]
// CHECK:        %[[I:.*]] = arith.index_cast %[[ID]] : index to i64
// CHECK:        llvm.getelementptr %[[OUT]][%[[I]]]
func.func @block_order(%out: !llvm.ptr) attributes {
    xla.block_order = {tiles = array<i64: 4, 6>, order = array<i64: 1, 0>}} {
  %bid = gpu.block_id x {xla.range = [0 : index, 23 : index]}
  %i = arith.index_cast %bid : index to i64
  %v = arith.trunci %i : i64 to i32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  llvm.store %v, %o : i32, !llvm.ptr
  return
}

// -----

// expected-error@+1 {{has a malformed xla.block_order (expected tiles, counts whose product is the 24 x blocks of a grid with one y and z block, and order, a permutation of their dimensions)}}
func.func @block_order_of_another_grid(%out: !llvm.ptr) attributes {
    xla.block_order = {tiles = array<i64: 4, 5>, order = array<i64: 1, 0>}} {
  %bid = gpu.block_id x {xla.range = [0 : index, 23 : index]}
  %i = arith.index_cast %bid : index to i64
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %o : i64, !llvm.ptr
  return
}

// -----

// expected-error@+1 {{has a malformed xla.block_order}}
func.func @block_order_not_a_permutation(%out: !llvm.ptr) attributes {
    xla.block_order = {tiles = array<i64: 4, 6>, order = array<i64: 0, 0>}} {
  %bid = gpu.block_id x {xla.range = [0 : index, 23 : index]}
  %i = arith.index_cast %bid : index to i64
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %o : i64, !llvm.ptr
  return
}

// -----

// expected-error@+1 {{has a malformed xla.block_order}}
func.func @block_order_overflowing(%out: !llvm.ptr) attributes {
    xla.block_order = {tiles = array<i64: 24, 4294967296, 4294967296, 4294967296>,
                       order = array<i64: 0, 1, 2, 3>}} {
  %bid = gpu.block_id x {xla.range = [0 : index, 23 : index]}
  %i = arith.index_cast %bid : index to i64
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i64
  llvm.store %i, %o : i64, !llvm.ptr
  return
}

// -----

// f64 -> f16/bf16 would be compiler-rt calls on the host: f64 -> f32 rounded
// to odd (an inexact result with an even pattern steps one ulp towards x),
// then one rounding to the narrow type. f32 -> f16 is left as it is.
// CHECK-LABEL: func.func private @narrow_f64
// CHECK-SAME: (%[[X:.*]]: f64, %[[Y:.*]]: vector<4xf64>, %[[Z:.*]]: f32)
// CHECK:      %[[NEAR:.*]] = arith.truncf %[[X]] : f64 to f32
// CHECK:      %[[BACK:.*]] = arith.extf %[[NEAR]] : f32 to f64
// CHECK:      %[[INEXACT:.*]] = arith.cmpf one, %[[BACK]], %[[X]] : f64
// CHECK:      %[[BITS:.*]] = arith.bitcast %[[NEAR]] : f32 to i32
// CHECK:      %[[AWAY:.*]] = arith.cmpf ogt
// CHECK:      %[[STEP:.*]] = arith.select %[[AWAY]], %{{.*}}, %{{.*}} : i32
// CHECK:      %[[FIX:.*]] = arith.andi %[[INEXACT]], %{{.*}} : i1
// CHECK:      %[[ODD:.*]] = arith.select %[[FIX]]
// CHECK:      %[[F:.*]] = arith.bitcast %[[ODD]] : i32 to f32
// CHECK:      arith.truncf %[[F]] : f32 to f16
// CHECK:      arith.truncf %[[Y]] : vector<4xf64> to vector<4xf32>
// CHECK:      arith.bitcast %{{.*}} : vector<4xi32> to vector<4xf32>
// CHECK-NEXT: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// CHECK-NOT:  arith.truncf %{{.*}} : f64
// CHECK:      arith.truncf %[[Z]] : f32 to f16
func.func private @narrow_f64(%x: f64, %y: vector<4xf64>, %z: f32) -> (f16, vector<4xbf16>, f16) {
  %h = arith.truncf %x : f64 to f16
  %b = arith.truncf %y : vector<4xf64> to vector<4xbf16>
  %g = arith.truncf %z : f32 to f16
  return %h, %b, %g : f16, vector<4xbf16>, f16
}

// -----

// Integer -> bf16 would call compiler-rt's __truncsfbf2 on a host without
// AVX512-BF16: through f32, rounded to nearest even in integer code (bits
// + 0x7fff + bit 16, the high half). Integer -> f32 and f16 are left as
// they are.
// CHECK-LABEL: func.func private @int_to_bf16
// CHECK-SAME: (%[[A:.*]]: i32, %[[B:.*]]: vector<8xi16>)
// CHECK:      %[[FA:.*]] = arith.sitofp %[[A]] : i32 to f32
// CHECK-NEXT: %[[BITS:.*]] = arith.bitcast %[[FA]] : f32 to i32
// CHECK:      %[[BIT16:.*]] = arith.shrui %[[BITS]], %[[C16:.*]] : i32
// CHECK:      %[[KEPT:.*]] = arith.andi %[[BIT16]], %{{.*}} : i32
// CHECK:      %[[BIAS:.*]] = arith.addi %[[KEPT]], %{{.*}} : i32
// CHECK-NEXT: %[[SUM:.*]] = arith.addi %[[BITS]], %[[BIAS]] : i32
// CHECK-NEXT: %[[HIGH:.*]] = arith.shrui %[[SUM]], %[[C16]] : i32
// CHECK-NEXT: %[[HALF:.*]] = arith.trunci %[[HIGH]] : i32 to i16
// CHECK-NEXT: arith.bitcast %[[HALF]] : i16 to bf16
// CHECK:      %[[FB:.*]] = arith.uitofp %[[B]] : vector<8xi16> to vector<8xf32>
// CHECK:      arith.trunci %{{.*}} : vector<8xi32> to vector<8xi16>
// CHECK-NEXT: arith.bitcast %{{.*}} : vector<8xi16> to vector<8xbf16>
// CHECK:      arith.sitofp %[[A]] : i32 to f16
// CHECK:      arith.uitofp %[[A]] : i32 to f32
// CHECK-NOT:  to bf16
// CHECK:      return
func.func private @int_to_bf16(%a: i32, %b: vector<8xi16>) -> (bf16, vector<8xbf16>, f16, f32) {
  %s = arith.sitofp %a : i32 to bf16
  %u = arith.uitofp %b : vector<8xi16> to vector<8xbf16>
  %h = arith.sitofp %a : i32 to f16
  %f = arith.uitofp %a : i32 to f32
  return %s, %u, %h, %f : bf16, vector<8xbf16>, f16, f32
}

// -----

// Storage past 1 MiB a call (here 2 MiB of shared memory) is not put on the
// thread's stack: one malloc'd block, checked for null, freed at the end.
llvm.mlir.global private @big() {addr_space = 3 : i32} : !llvm.array<524288 x f32>
// CHECK-LABEL: func.func @big_shared
// CHECK:       %[[SIZE:.*]] = llvm.mlir.constant(2097280 : i64)
// CHECK:       %[[HEAP:.*]] = llvm.call @malloc(%[[SIZE]])
// CHECK:       llvm.icmp "eq" %[[HEAP]]
// CHECK:       llvm.intr.trap
// CHECK-NOT:   llvm.alloca
// CHECK:       llvm.call @free(%[[HEAP]])
// CHECK-NEXT:  return
func.func @big_shared(%out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %a = llvm.mlir.addressof @big : !llvm.ptr<3>
  %p = llvm.addrspacecast %a : !llvm.ptr<3> to !llvm.ptr
  %i = arith.index_cast %tid : index to i64
  %q = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %q : !llvm.ptr -> f32
  gpu.barrier
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x, %o : f32, !llvm.ptr
  return
}

// -----

llvm.mlir.global private @huge() {addr_space = 3 : i32} : !llvm.array<2147483648 x f32>
// expected-error@+1 {{needs 8589934720 bytes of per-thread and shared storage on the CPU target, more than 1073741824}}
func.func @huge_shared(%out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %a = llvm.mlir.addressof @huge : !llvm.ptr<3>
  %p = llvm.addrspacecast %a : !llvm.ptr<3> to !llvm.ptr
  %x = llvm.load %p : !llvm.ptr -> f32
  gpu.barrier
  llvm.store %x, %out : f32, !llvm.ptr
  return
}

// -----

// A shuffle tree over a warp whose result only lane 0 stores, on a loaded
// value (no store of the phase before the load): one phase, which runs the
// lane the store's guard (lane == 0, a function of the thread id) lets
// through, lane 0 of each warp, and computes the tree there whole: the
// loads of lanes 0, 16, 8 and 24 and the adds, no slots, no select (the
// lanes each level reads are known for lane 0). The lane is a constant: a division of the thread id
// by the warp is the warp loop's base divided by it, the guard folds. LLVM
// is not to vectorize that loop over the warps (strided loads).
// CHECK: #[[$SCALAR:.*]] = #llvm.loop_vectorize<disable = true>
// CHECK: #[[$WARPS:.*]] = #llvm.loop_annotation<vectorize = #[[$SCALAR]], unroll = #{{.*}}>
// CHECK-LABEL: func.func @shuffle_tree
// CHECK-NOT: llvm.alloca
// CHECK:     scf.for %[[W:.*]] = %c0{{(_[0-9]+)?}} to %c64{{(_[0-9]+)?}} step %c32{{(_[0-9]+)?}}
// CHECK-NOT:   arith.select
// CHECK:       %[[LANE0:.*]] = arith.addi %[[W]], %c0{{(_[0-9]+)?}}
// CHECK:       %[[I0:.*]] = arith.index_cast %[[LANE0]]
// CHECK:       %[[P0:.*]] = llvm.getelementptr %{{.*}}[%[[I0]]]
// CHECK:       %[[LANE2:.*]] = arith.addi %[[LANE0]], %c16{{(_[0-9]+)?}}
// CHECK:       %[[I2:.*]] = arith.index_cast %[[LANE2]]
// CHECK:       %[[P2:.*]] = llvm.getelementptr %{{.*}}[%[[I2]]]
// CHECK:       %[[LANE1:.*]] = arith.addi %[[LANE0]], %c8{{(_[0-9]+)?}}
// CHECK:       %[[I1:.*]] = arith.index_cast %[[LANE1]]
// CHECK:       %[[P1:.*]] = llvm.getelementptr %{{.*}}[%[[I1]]]
// CHECK:       %[[LANE3:.*]] = arith.addi %[[LANE0]], %c24{{(_[0-9]+)?}}
// CHECK:       %[[I3:.*]] = arith.index_cast %[[LANE3]]
// CHECK:       %[[P3:.*]] = llvm.getelementptr %{{.*}}[%[[I3]]]
// CHECK:       %[[WARP:.*]] = arith.divui %[[W]], %c32{{(_[0-9]+)?}}
// CHECK:       %[[W64:.*]] = arith.index_cast %[[WARP]]
// CHECK:       %[[AT:.*]] = llvm.getelementptr %{{.*}}[%[[W64]]]
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c1{{(_[0-9]+)?}}
// CHECK:         %[[V0:.*]] = llvm.load %[[P0]]
// CHECK:         %[[V2:.*]] = llvm.load %[[P2]]
// CHECK:         %[[A0:.*]] = arith.addf %[[V0]], %[[V2]]
// CHECK:         %[[V1:.*]] = llvm.load %[[P1]]
// CHECK:         %[[V3:.*]] = llvm.load %[[P3]]
// CHECK:         %[[A1:.*]] = arith.addf %[[V1]], %[[V3]]
// CHECK:         %[[SUM:.*]] = arith.addf %[[A0]], %[[A1]]
// CHECK:         scf.if
// CHECK:           llvm.store %[[SUM]], %[[AT]]
// CHECK:       } {loop_annotation = #[[$LANES]]}
// CHECK:     } {loop_annotation = #[[$WARPS]]}
// CHECK-NOT: scf.for
// CHECK:     return
func.func @shuffle_tree(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c8_i32 = arith.constant 8 : i32
  %c16_i32 = arith.constant 16 : i32
  %c32_i32 = arith.constant 32 : i32
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %s1, %valid1 = gpu.shuffle down %v, %c16_i32, %c32_i32 : f32
  %a = arith.addf %v, %s1 : f32
  %s2, %valid2 = gpu.shuffle down %a, %c8_i32, %c32_i32 : f32
  %b = arith.addf %a, %s2 : f32
  %lane = arith.remui %tid, %c32 : index
  %first = arith.cmpi eq, %lane, %c0 : index
  scf.if %first {
    %warp = arith.divui %tid, %c32 : index
    %w = arith.index_cast %warp : index to i64
    %o = llvm.getelementptr %out[%w] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %b, %o : f32, !llvm.ptr
  }
  return
}

// -----

// The same tree on a value that reads more than two loads a lane (a bf16
// row max's thread reads 8 elements): every lane computes it first, in a
// lane loop of its own that stores it to its slot, and the tree's phase
// reads the slots (lane 0 loading each lane's elements itself ran scalar,
// 7x slower). The input is loaded once a lane, not again in the tree.
// CHECK-LABEL: func.func @shuffle_tree_of_loads
// CHECK:     %[[SLOTS:.*]] = llvm.alloca
// CHECK:     scf.for
// CHECK:       scf.for
// CHECK-COUNT-4: llvm.load %{{.*}} invariant : !llvm.ptr -> f32
// CHECK:           llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK:       scf.for
// CHECK-NOT:     invariant
// CHECK:         llvm.getelementptr %[[SLOTS]]
// CHECK-NOT:     invariant
// CHECK:     return
func.func @shuffle_tree_of_loads(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c8_i32 = arith.constant 8 : i32
  %c16_i32 = arith.constant 16 : i32
  %c32_i32 = arith.constant 32 : i32
  %base = arith.muli %tid, %c4 : index
  %i0 = arith.index_cast %base : index to i64
  %p0 = llvm.getelementptr %in[%i0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v0 = llvm.load %p0 invariant : !llvm.ptr -> f32
  %b1 = arith.addi %base, %c1 : index
  %i1 = arith.index_cast %b1 : index to i64
  %p1 = llvm.getelementptr %in[%i1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v1 = llvm.load %p1 invariant : !llvm.ptr -> f32
  %b2 = arith.addi %base, %c2 : index
  %i2 = arith.index_cast %b2 : index to i64
  %p2 = llvm.getelementptr %in[%i2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v2 = llvm.load %p2 invariant : !llvm.ptr -> f32
  %b3 = arith.addi %base, %c3 : index
  %i3 = arith.index_cast %b3 : index to i64
  %p3 = llvm.getelementptr %in[%i3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v3 = llvm.load %p3 invariant : !llvm.ptr -> f32
  %m0 = arith.maximumf %v0, %v1 : f32
  %m1 = arith.maximumf %m0, %v2 : f32
  %v = arith.maximumf %m1, %v3 : f32
  %s1, %valid1 = gpu.shuffle down %v, %c16_i32, %c32_i32 : f32
  %a = arith.maximumf %v, %s1 : f32
  %s2, %valid2 = gpu.shuffle down %a, %c8_i32, %c32_i32 : f32
  %b = arith.maximumf %a, %s2 : f32
  %lane = arith.remui %tid, %c32 : index
  %first = arith.cmpi eq, %lane, %c0 : index
  scf.if %first {
    %warp = arith.divui %tid, %c32 : index
    %w = arith.index_cast %warp : index to i64
    %o = llvm.getelementptr %out[%w] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %b, %o : f32, !llvm.ptr
  }
  return
}

// -----

// A warp a row, the rows no multiple of a block's: the store's guard is
// lane 0 of a warp whose row is in bounds, and the row bound depends on the
// block id. The tree's phase still runs lane 0 of each warp alone (the
// lane term of the guard rules the other lanes out), its levels reading
// known lanes of the slots -- no select of whether a source lane is past
// the block, which is what running all 32 lanes had (LLVM vectorized none
// of it: f32[21845,48]'s row sum 2.4x the time of f32[21848,48]'s). The
// phase before it runs the lanes the tree reads, 0, 8, 16 and 24.
// CHECK-LABEL: func.func @shuffle_tree_of_rows
// CHECK:     scf.for %{{.*}} = %c0{{(_[0-9]+)?}} to %c64{{(_[0-9]+)?}} step %c8
// CHECK:       scf.for %{{.*}} = %c0{{(_[0-9]+)?}} to %c1{{(_[0-9]+)?}}
// CHECK:         llvm.load %{{.*}} invariant
// CHECK:     scf.for %{{.*}} = %c0{{(_[0-9]+)?}} to %c64{{(_[0-9]+)?}} step %c32
// CHECK-NOT:   arith.select
// CHECK:       scf.for %{{.*}} = %c0{{(_[0-9]+)?}} to %c1{{(_[0-9]+)?}}
// CHECK-NOT:     arith.select
// CHECK-COUNT-3: arith.addf
// CHECK:         scf.if
// CHECK-NEXT:      llvm.store
func.func @shuffle_tree_of_rows(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 2 : index]}
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c8_i32 = arith.constant 8 : i32
  %c16_i32 = arith.constant 16 : i32
  %c32_i32 = arith.constant 32 : i32
  %warp = arith.divui %tid, %c32 : index
  %first_row = arith.muli %bid, %c2 : index
  %row = arith.addi %first_row, %warp : index
  %in_bounds = arith.cmpi ult, %row, %c4 : index
  %v = scf.if %in_bounds -> (f32) {
    %i = arith.index_cast %tid : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p invariant : !llvm.ptr -> f32
    scf.yield %x : f32
  } else {
    %zero = arith.constant 0.0 : f32
    scf.yield %zero : f32
  }
  %s1, %valid1 = gpu.shuffle down %v, %c16_i32, %c32_i32 : f32
  %a = arith.addf %v, %s1 : f32
  %s2, %valid2 = gpu.shuffle down %a, %c8_i32, %c32_i32 : f32
  %b = arith.addf %a, %s2 : f32
  %lane = arith.remui %tid, %c32 : index
  %first = arith.cmpi eq, %lane, %c0 : index
  %stores = arith.andi %in_bounds, %first : i1
  scf.if %stores {
    %w = arith.index_cast %row : index to i64
    %o = llvm.getelementptr %out[%w] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %b, %o : f32, !llvm.ptr
  }
  return
}

// -----

// Trees of 8 lanes (several rows a warp) keep a phase per level, each
// running the lanes the next reads: lanes 0-3 of each 8 load (into slots),
// lanes 0-1 take the first level, lane 0 the second and stores. That last
// loop, one lane a row, LLVM is to vectorize 4 rows at a time (its
// default width made the strided loads' shuffles cost more to compile
// than they gained). The loops of 4 and 2 lanes a row LLVM is to unroll
// completely, in a scalar loop over the rows (run as short loops, the
// multi-row max's levels took 2.3 times as long; the rows' loop vectorized
// 4 at a time ran as fast as scalar and compiled longer).
// CHECK: #[[$FULL:.*]] = #llvm.loop_unroll<full = true>
// CHECK: #[[$NO_VEC:.*]] = #llvm.loop_vectorize<disable = true>
// CHECK: #[[$FOUR:.*]] = #llvm.loop_vectorize<width = 4 : i32>
// CHECK: #[[$UNROLLED:.*]] = #llvm.loop_annotation<unroll = #[[$FULL]]>
// CHECK: #[[$SCALAR:.*]] = #llvm.loop_annotation<vectorize = #[[$NO_VEC]], unroll = #{{.*}}>
// CHECK: #[[$ROWS:.*]] = #llvm.loop_annotation<vectorize = #[[$FOUR]], unroll = #{{.*}}>
// CHECK-LABEL: func.func @segment_trees
// CHECK:     scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c8
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c4{{.*}}
// CHECK:         llvm.load
// CHECK:       } {loop_annotation = #[[$UNROLLED]]}
// CHECK-NEXT: } {loop_annotation = #[[$SCALAR]]}
// CHECK:     scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c8
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c2{{.*}}
// CHECK:         arith.maximumf
// CHECK:       } {loop_annotation = #[[$UNROLLED]]}
// CHECK-NEXT: } {loop_annotation = #[[$SCALAR]]}
// CHECK:     scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c8
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c1{{.*}}
// CHECK:         arith.maximumf
// CHECK:         llvm.store
// CHECK:     } {loop_annotation = #[[$ROWS]]}
func.func @segment_trees(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c1_i32 = arith.constant 1 : i32
  %c2_i32 = arith.constant 2 : i32
  %c32_i32 = arith.constant 32 : i32
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %s1, %valid1 = gpu.shuffle down %v, %c2_i32, %c32_i32 : f32
  %a = arith.maximumf %v, %s1 : f32
  %s2, %valid2 = gpu.shuffle down %a, %c1_i32, %c32_i32 : f32
  %b = arith.maximumf %a, %s2 : f32
  %lane = arith.remui %tid, %c8 : index
  %first = arith.cmpi eq, %lane, %c0 : index
  scf.if %first {
    %row = arith.divui %tid, %c8 : index
    %r = arith.index_cast %row : index to i64
    %o = llvm.getelementptr %out[%r] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %b, %o : f32, !llvm.ptr
  }
  return
}

// -----

// Two trees, the second on a load after the first's store: that load cannot
// be computed at another lane, so its shuffle is a cut -- and the load goes
// to a phase of its own before it, so that the first tree's phase still
// runs lane 0 of each warp alone, not every lane the second tree reads.
// The load's phase runs lanes 0 and 16 of each warp (the lanes the second tree
// reads), into slots; the second tree's phase reads them.
// CHECK-LABEL: func.func @two_trees
// CHECK:     %[[SLOTS:.*]] = llvm.alloca %{{.*}} x f32
// CHECK:     scf.for %[[W0:.*]] = %c0{{(_[0-9]+)?}} to %c64{{(_[0-9]+)?}} step %c32{{(_[0-9]+)?}}
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c1{{.*}}
// CHECK:         llvm.load
// CHECK:         llvm.load
// CHECK:         arith.addf
// CHECK:         llvm.store
// CHECK:     scf.for %[[W1:.*]] = %c0{{.*}} to %c64{{.*}} step %c16{{(_[0-9]+)?}}
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c1{{.*}}
// CHECK:         %[[X:.*]] = llvm.load
// CHECK:         llvm.store %[[X]]
// CHECK:     scf.for %[[W2:.*]] = %c0{{.*}} to %c64{{.*}} step %c32{{(_[0-9]+)?}}
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c1{{.*}}
// CHECK:         llvm.load
// CHECK:         llvm.load
// CHECK:         arith.addf
// CHECK:         llvm.store
// CHECK-NOT: scf.for
// CHECK:     return
func.func @two_trees(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c16_i32 = arith.constant 16 : i32
  %c32_i32 = arith.constant 32 : i32
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %s, %valid = gpu.shuffle down %v, %c16_i32, %c32_i32 : f32
  %a = arith.addf %v, %s : f32
  %lane = arith.remui %tid, %c32 : index
  %first = arith.cmpi eq, %lane, %c0 : index
  %warp = arith.divui %tid, %c32 : index
  scf.if %first {
    %w = arith.index_cast %warp : index to i64
    %o = llvm.getelementptr %out[%w] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %a, %o : f32, !llvm.ptr
  }
  %j = arith.addi %tid, %c64 : index
  %j64 = arith.index_cast %j : index to i64
  %q = llvm.getelementptr %in[%j64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %q : !llvm.ptr -> f32
  %t, %valid2 = gpu.shuffle down %x, %c16_i32, %c32_i32 : f32
  %b = arith.addf %x, %t : f32
  scf.if %first {
    %k = arith.addi %warp, %c2 : index
    %w = arith.index_cast %k : index to i64
    %o = llvm.getelementptr %out[%w] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %b, %o : f32, !llvm.ptr
  }
  return
}

// -----

// A store whose guard is not a function of the thread id (a loaded flag)
// runs for every thread; the phase before the barrier runs every lane the
// shuffle reads, [1, 32) of each warp (lane 31 reads its own value).
// CHECK-LABEL: func.func @data_guard
// CHECK:     scf.for %{{.*}} = %c0{{(_[0-9]+)?}} to %c64{{(_[0-9]+)?}} step %c32{{(_[0-9]+)?}}
// CHECK:       scf.for %{{.*}} = %c1{{.*}} to %c32{{(_[0-9]+)?}}
// CHECK:     scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:       scf.if
func.func @data_guard(%in: !llvm.ptr, %flag: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c1_i32 = arith.constant 1 : i32
  %c32_i32 = arith.constant 32 : i32
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  gpu.barrier
  %s, %valid = gpu.shuffle down %v, %c1_i32, %c32_i32 : f32
  %f = llvm.load %flag : !llvm.ptr -> i1
  scf.if %f {
    %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %s, %o : f32, !llvm.ptr
  }
  return
}

// -----

// A per-thread accumulation (an scf.for with constant bounds carrying a
// value) runs interchanged: each of its 16 steps is a loop over the threads,
// which reads and writes the carried value in its result's slots; the
// threads' loads at one step are neighbours, as LLVM's vectorizer wants.
// The steps are not to be unrolled (each copy would be a lane loop to
// vectorize).
// CHECK-LABEL: func.func @accumulate
// CHECK:     %[[ACC:.*]] = llvm.alloca %{{.*}} x f32
// CHECK:     scf.for %[[T0:.*]] = %c0{{.*}} to %c64{{(_[0-9]+)?}}
// CHECK:       llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK:     scf.for %[[K:.*]] = %c0{{.*}} to %c16{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:       %[[ROW:.*]] = arith.muli %[[K]], %c64{{(_[0-9]+)?}}
// CHECK:       scf.for %[[T:.*]] = %c0{{.*}} to %c64{{(_[0-9]+)?}}
// CHECK:         %[[AT:.*]] = llvm.getelementptr %[[ACC]][%{{.*}}]
// CHECK:         %[[OLD:.*]] = llvm.load %[[AT]] : !llvm.ptr -> f32
// CHECK:         %[[E:.*]] = arith.addi %[[ROW]], %[[T]]
// CHECK:         %[[X:.*]] = llvm.load
// CHECK:         %[[NEW:.*]] = arith.addf %[[OLD]], %[[X]]
// CHECK:         llvm.store %[[NEW]]
// CHECK:       } {loop_annotation = #[[$LANES]]}
// CHECK:     } {loop_annotation = #[[$LANES]]}
// CHECK:     scf.for %{{.*}} = %c0{{.*}} to %c64{{(_[0-9]+)?}}
// CHECK:       llvm.getelementptr %[[ACC]]
func.func @accumulate(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
    %row = arith.muli %k, %c64 : index
    %e = arith.addi %row, %tid : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  %j = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// -----

// An accumulation that reads at each thread a run of its own, the threads'
// runs back to back (a thread's row of 12), stays whole in its lane loop:
// interchanged, each step's lane loop would read one element a run, 12
// apart, an element a load.
// CHECK-LABEL: func.func @accumulate_own_runs
// CHECK-NOT:   llvm.alloca
// CHECK:       scf.for %[[T:.*]] = %c0{{.*}} to %c64
// CHECK:         %[[SUM:.*]] = scf.for %{{.*}} = %c0{{.*}} to %c12{{.*}} iter_args
// CHECK:           arith.addf
// CHECK:         llvm.store %[[SUM]]
func.func @accumulate_own_runs(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %zero = arith.constant 0.0 : f32
  %run = arith.muli %tid, %c12 : index
  %sum = scf.for %k = %c0 to %c12 step %c1 iter_args(%acc = %zero) -> (f32) {
    %e = arith.addi %run, %k : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  %j = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// -----

// A run of its own whose sum rounds to bf16 each step (add, truncf, extf:
// a chain of 3 ops from one step to the next) is interchanged: whole, each
// thread's steps were one chain of their latency.
// CHECK-LABEL: func.func @accumulate_own_runs_through_a_long_chain
// CHECK:     llvm.alloca %{{.*}} x f32
// CHECK:     scf.for %{{.*}} = %c0{{.*}} to %c12{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c64
// CHECK:         arith.truncf
func.func @accumulate_own_runs_through_a_long_chain(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %zero = arith.constant 0.0 : f32
  %run = arith.muli %tid, %c12 : index
  %sum = scf.for %k = %c0 to %c12 step %c1 iter_args(%acc = %zero) -> (f32) {
    %e = arith.addi %run, %k : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %add = arith.addf %acc, %x : f32
    %bf = arith.truncf %add : f32 to bf16
    %next = arith.extf %bf : bf16 to f32
    scf.yield %next : f32
  }
  %j = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// -----

// Runs 16 apart, 12 of each read: interchanged as any accumulation.
// CHECK-LABEL: func.func @accumulate_runs_apart
// CHECK:     llvm.alloca %{{.*}} x f32
// CHECK:     scf.for %{{.*}} = %c0{{.*}} to %c12{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c64
func.func @accumulate_runs_apart(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c12 = arith.constant 12 : index
  %zero = arith.constant 0.0 : f32
  %c16 = arith.constant 16 : index
  %run = arith.muli %tid, %c16 : index
  %sum = scf.for %k = %c0 to %c12 step %c1 iter_args(%acc = %zero) -> (f32) {
    %e = arith.addi %run, %k : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  %j = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// -----

// An accumulation of long-latency arithmetic (a softmax's exp + sum): each
// step's lane loop interleaves 4 vector iterations (the other lane loops of
// such a kernel 2), so that more chains of the exp's polynomial overlap.
// CHECK:       // -----
// CHECK-DAG:   #[[$FOUR:.*]] = #llvm.loop_interleave<count = 4 : i32>
// CHECK-DAG:   #[[$FOUR_CHAINS:.*]] = #llvm.loop_annotation<interleave = #[[$FOUR]], unroll = #{{.*}}>
// CHECK-LABEL: func.func @accumulate_exp
// CHECK:     scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c64{{(_[0-9]+)?}}
// CHECK:         math.exp
// CHECK:       } {loop_annotation = #[[$FOUR_CHAINS]]}
func.func @accumulate_exp(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
    %row = arith.muli %k, %c64 : index
    %e = arith.addi %row, %tid : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %y = math.exp %x : f32
    %next = arith.addf %acc, %y : f32
    scf.yield %next : f32
  }
  %j = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// -----

// An accumulation every thread of a row computes alike (a softmax step's
// max over its row of 16, which the loop emitter inlines in each element):
// it reads the thread id only through tid / 16, so it runs once a row, by
// the row's first thread (a loop over the 4 rows of a block, step 16), whole
// and in registers (the scf.for with its iter_arg), its result stored in
// that thread's slot. The threads that use it run in rows of 16 lanes and
// read their row's slot, the same for every lane of the loop (a broadcast).
// Their own element, an input's (an invariant load), is loaded again there,
// not kept in slots by a phase of its own before: one allocation, the max's.
// CHECK-LABEL: func.func @uniform_accumulate
// CHECK:     llvm.alloca %{{.*}} x f32
// CHECK-NOT: llvm.alloca
// CHECK:     scf.for %[[ROW:.*]] = %c0{{.*}} to %c64{{.*}} step %c16
// CHECK:       %[[SLOT:.*]] = llvm.getelementptr %[[MAX:.*]][%{{.*}}]
// CHECK:       %[[M:.*]] = scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step %c1{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK:         %[[XK:.*]] = llvm.load %{{.*}} invariant
// CHECK:         arith.maximumf %[[ACC]], %[[XK]] : f32
// CHECK:       llvm.store %[[M]], %[[SLOT]]
// CHECK:     scf.for %[[W:.*]] = %c0{{.*}} to %c64{{.*}} step %c16
// CHECK:       %[[Q:.*]] = arith.divui %[[W]], %c16
// CHECK:       %[[FIRST:.*]] = arith.muli %[[Q]], %c16
// CHECK:       %[[READ:.*]] = llvm.getelementptr %[[MAX]][%{{.*}}]
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step %c1
// CHECK-NOT:     arith.divui
// CHECK:         %[[X:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr -> f32
// CHECK:         %[[ROWMAX:.*]] = llvm.load %[[READ]] : !llvm.ptr -> f32
// CHECK:         arith.subf %[[X]], %[[ROWMAX]] : f32
func.func @uniform_accumulate(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %ninf = arith.constant 0xFF800000 : f32
  %base = arith.muli %bid, %c64 : index
  %e = arith.addi %base, %tid : index
  %i = arith.index_cast %e : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %p invariant : !llvm.ptr -> f32
  %max = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %ninf) -> (f32) {
    %row = arith.divui %tid, %c16 : index
    %first = arith.muli %row, %c16 : index
    %at = arith.addi %base, %first : index
    %ek = arith.addi %at, %k : index
    %ik = arith.index_cast %ek : index to i64
    %pk = llvm.getelementptr %in[%ik] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %xk = llvm.load %pk invariant : !llvm.ptr -> f32
    %next = arith.maximumf %acc, %xk : f32
    scf.yield %next : f32
  }
  %d = arith.subf %x, %max : f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %d, %o : f32, !llvm.ptr
  return
}

// -----

// An accumulation no thread id reaches (a whole small input's sum, inlined
// in every element) is the same for the whole block: it runs once a block,
// by thread 0 alone (a thread loop of one trip), into its slot, which every
// thread then reads at the same address.
// CHECK-LABEL: func.func @block_uniform_accumulate
// CHECK:     %[[SLOTS:.*]] = llvm.alloca %{{.*}} x f32
// CHECK:     scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK:       %[[AT:.*]] = llvm.getelementptr %[[SLOTS]][%{{.*}}]
// CHECK-NEXT:  scf.for %{{.*}} = %[[ZERO:c0[_0-9]*]] to %c1{{[_0-9]*}} step %c1
// CHECK-NEXT:    %[[SUM:.*]] = scf.for %{{.*}} iter_args(%{{.*}}) -> (f32)
// CHECK:         }
// CHECK-NEXT:    llvm.store %[[SUM]], %[[AT]]
// CHECK:       %[[ROW:.*]] = arith.index_cast %[[ZERO]] : index to i64
// CHECK-NEXT:  %[[READ:.*]] = llvm.getelementptr %[[SLOTS]][%[[ROW]]]
// CHECK-NEXT:  scf.for %{{.*}} = %{{.*}} to %c64
// CHECK:         llvm.load %[[READ]] : !llvm.ptr -> f32
func.func @block_uniform_accumulate(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %p invariant : !llvm.ptr -> f32
  %sum = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
    %ik = arith.index_cast %k : index to i64
    %pk = llvm.getelementptr %in[%ik] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %xk = llvm.load %pk invariant : !llvm.ptr -> f32
    %next = arith.addf %acc, %xk : f32
    scf.yield %next : f32
  }
  %d = arith.subf %x, %sum : f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %d, %o : f32, !llvm.ptr
  return
}

// -----

// An accumulation behind its thread's bounds check (a partial tile: the
// threads whose columns 2 * tid and 2 * tid + 1 pass 99 skip their walk)
// runs interchanged like an unguarded one: the check moves into each step,
// and each step's lane loop is cut where it flips. 2 * tid is even, so
// both comparisons flip below 100 (2 * tid + 1 <= 99 is 2 * tid < 100):
// one cut, at ceil(100 / 2) = 50, and neither piece keeps a branch.
// CHECK-LABEL: func.func @guarded_accumulate
// CHECK:     scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:       %[[CUT:.*]] = arith.ceildivsi %c100{{.*}}, %c2{{.*}} : index
// CHECK:       %[[LO:.*]] = arith.minsi %c64{{.*}}, %[[CUT]] : index
// CHECK:       %[[AT:.*]] = arith.maxsi %c0{{.*}}, %[[LO]] : index
// CHECK-NOT:   arith.ceildivsi
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %[[AT]]
// CHECK:         scf.if %{{.*}}
// CHECK:           arith.addf
// CHECK:       scf.for %{{.*}} = %[[AT]] to %c64{{(_[0-9]+)?}}
// CHECK:         scf.if %{{.*}}
// CHECK-NOT:   scf.for %{{.*}} = %[[AT]]
// CHECK:     scf.for %{{.*}} = %c0{{.*}} to %c64{{(_[0-9]+)?}}
// CHECK:       llvm.store
func.func @guarded_accumulate(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c99 = arith.constant 99 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %col = arith.muli %tid, %c2 : index
  %last = arith.addi %col, %c1 : index
  %first_in = arith.cmpi sle, %col, %c99 : index
  %last_in = arith.cmpi sle, %last, %c99 : index
  %inside = arith.andi %first_in, %last_in : i1
  %sum = scf.if %inside -> (f32) {
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
      %row = arith.muli %k, %c128 : index
      %e = arith.addi %row, %last : index
      %i = arith.index_cast %e : index to i64
      %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %x = llvm.load %p : !llvm.ptr -> f32
      %next = arith.addf %acc, %x : f32
      scf.yield %next : f32
    }
    scf.yield %s : f32
  } else {
    scf.yield %zero : f32
  }
  %j = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// -----

// The loop emitter's thread a column (the last block partial): its bounds
// check guards what it reads before the walk (the column's mean), the walk
// and the store of its result. The guard splits: the walk's runs
// interchanged as @guarded_accumulate's, the mean read again at each step
// (a lane loop's vector), the reduction's starting value read before it;
// the store behind the same check after it. Each thread's walk had stayed
// whole, scalar, in a loop over the threads.
// CHECK-LABEL: func.func @guarded_column_walk
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step
// CHECK:         scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step
// CHECK:           scf.if %true
// CHECK:             llvm.getelementptr inbounds %arg2[
// CHECK:             arith.subf
// CHECK:       } {loop_annotation
// CHECK:       scf.for
// CHECK:         scf.if %true
// CHECK:           llvm.getelementptr inbounds %arg3[
// CHECK:           llvm.store
func.func @guarded_column_walk(%in: !llvm.ptr, %init: !llvm.ptr, %mean: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c50 = arith.constant 50 : index
  %c49 = arith.constant 49 : index
  %inside = arith.cmpi sle, %tid, %c49 : index
  scf.if %inside {
    %start = llvm.load %init invariant : !llvm.ptr -> f32
    %t = arith.index_castui %tid : index to i64
    %mp = llvm.getelementptr inbounds %mean[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %m = llvm.load %mp invariant : !llvm.ptr -> f32
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %start) -> (f32) {
      %row = arith.muli %k, %c50 : index
      %e = arith.addi %row, %tid : index
      %i = arith.index_castui %e : index to i64
      %p = llvm.getelementptr inbounds %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %x = llvm.load %p invariant : !llvm.ptr -> f32
      %d = arith.subf %x, %m : f32
      %sq = arith.mulf %d, %d : f32
      %next = arith.addf %acc, %sq : f32
      scf.yield %next : f32
    }
    %o = llvm.getelementptr inbounds %out[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %s, %o : f32, !llvm.ptr
  }
  return
}

// -----

// A starting value of the thread's own (its element of a buffer, behind
// the check) cannot be read before the guard: the walk stays whole in the
// loop over the threads.
// CHECK-LABEL: func.func @guarded_walk_from_its_own_start
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %{{.*}} step
// CHECK-NEXT:    arith.index_castui
// CHECK:         scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step
func.func @guarded_walk_from_its_own_start(%in: !llvm.ptr, %init: !llvm.ptr, %mean: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c50 = arith.constant 50 : index
  %c49 = arith.constant 49 : index
  %inside = arith.cmpi sle, %tid, %c49 : index
  scf.if %inside {
    %t = arith.index_castui %tid : index to i64
    %sp = llvm.getelementptr inbounds %init[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %start = llvm.load %sp invariant : !llvm.ptr -> f32
    %mp = llvm.getelementptr inbounds %mean[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %m = llvm.load %mp invariant : !llvm.ptr -> f32
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %start) -> (f32) {
      %row = arith.muli %k, %c50 : index
      %e = arith.addi %row, %tid : index
      %i = arith.index_castui %e : index to i64
      %p = llvm.getelementptr inbounds %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %x = llvm.load %p invariant : !llvm.ptr -> f32
      %d = arith.subf %x, %m : f32
      %sq = arith.mulf %d, %d : f32
      %next = arith.addf %acc, %sq : f32
      scf.yield %next : f32
    }
    %o = llvm.getelementptr inbounds %out[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %s, %o : f32, !llvm.ptr
  }
  return
}

// -----

// A thread's walk of two nested loops, the inner one all the outer does (the
// loop emitter's thread a column over two reduced dimensions), is one loop
// of 4 x 32 steps, the outer step the quotient of the step by 32, the inner
// its remainder: then interchanged as one loop, each step a lane loop. The
// inner loop had stayed inside each lane, a scalar walk down its column.
// CHECK-LABEL: func.func @walk_of_two_loops
// CHECK:       scf.for %[[K:.*]] = %c0{{.*}} to %c128{{.*}} step
// CHECK-DAG:     arith.divui %[[K]], %c32
// CHECK-DAG:     arith.remui %[[K]], %c32
// CHECK:         scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step
// CHECK-NOT:       scf.for
// CHECK:           arith.addf
func.func @walk_of_two_loops(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c2048 = arith.constant 2048 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %h = %c0 to %c4 step %c1 iter_args(%a = %zero) -> (f32) {
    %t = scf.for %w = %c0 to %c32 step %c1 iter_args(%b = %a) -> (f32) {
      %row = arith.muli %h, %c2048 : index
      %col = arith.muli %w, %c64 : index
      %rc = arith.addi %row, %col : index
      %e = arith.addi %rc, %tid : index
      %i = arith.index_castui %e : index to i64
      %p = llvm.getelementptr inbounds %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %x = llvm.load %p invariant : !llvm.ptr -> f32
      %next = arith.addf %b, %x : f32
      scf.yield %next : f32
    }
    scf.yield %t : f32
  }
  %j = arith.index_castui %tid : index to i64
  %o = llvm.getelementptr inbounds %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %s, %o : f32, !llvm.ptr
  return
}

// -----

// A walk of two nested loops whose inner loop reads along each thread's own
// row (a step the next element; from thread to thread a row apart: the
// loop emitter's thread an output of a reduction over dimensions 1 and 3 of
// [16, 64, 32, 64]) stays two loops: the outer one interchanged with the
// threads, the inner one inside each lane, where LLVM vectorizes it along
// the row. As one loop, each step a lane loop, every lane read an element a
// row apart (gathers): that reduction took 0.92 ms instead of 0.16.
// CHECK-LABEL: func.func @walk_along_its_own_row
// CHECK-NOT:   arith.divui
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c4{{.*}} step
// CHECK:         scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step
// CHECK:           scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step
// CHECK:             arith.maximumf
// CHECK-NOT:   arith.remui
// CHECK:       return
func.func @walk_along_its_own_row(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %h = %c0 to %c4 step %c1 iter_args(%a = %zero) -> (f32) {
    %t = scf.for %w = %c0 to %c32 step %c1 iter_args(%b = %a) -> (f32) {
      %row = arith.muli %h, %c4096 : index
      %col = arith.muli %tid, %c128 : index
      %rc = arith.addi %row, %col : index
      %e = arith.addi %rc, %w : index
      %i = arith.index_castui %e : index to i64
      %p = llvm.getelementptr inbounds %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %x = llvm.load %p invariant : !llvm.ptr -> f32
      %next = arith.maximumf %b, %x : f32
      scf.yield %next : f32
    }
    scf.yield %t : f32
  }
  %j = arith.index_castui %tid : index to i64
  %o = llvm.getelementptr inbounds %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %s, %o : f32, !llvm.ptr
  return
}

// -----

// Carried values whose slots pass half an L1 (4 x 1024 threads x 4 bytes
// = 16 KiB) are loaded once every 8 steps: the steps loop goes by 8, and
// in each lane an inner loop of 8 steps, for LLVM to unroll whole, carries
// them in registers; the slots are stored after it.
// CHECK-LABEL: func.func @accumulate_visits
// CHECK:     scf.for %[[K:.*]] = %c0{{.*}} to %c16{{.*}} step %c8{{(_[0-9]+)?}}
// CHECK:       scf.for %[[T:.*]] = %c0{{.*}} to %c1024{{(_[0-9]+)?}}
// CHECK-COUNT-4: llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:         %[[R:.*]]:4 = scf.for %[[J:.*]] = %c0{{.*}} to %c8{{.*}} step %c1{{.*}} iter_args
// CHECK:           %[[STEP:.*]] = arith.addi %[[K]], %{{.*}} : index
// CHECK:           arith.muli %[[STEP]], %c1024{{(_[0-9]+)?}}
// CHECK:           arith.addf
// CHECK:         } {loop_annotation = #{{.*}}}
// CHECK:         llvm.store %[[R]]#0
// CHECK:       } {loop_annotation = #[[$LANES]]}
func.func @accumulate_visits(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 1023 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  %s:4 = scf.for %k = %c0 to %c16 step %c1 iter_args(%a = %zero, %b = %zero, %c = %zero, %d = %zero) -> (f32, f32, f32, f32) {
    %row = arith.muli %k, %c1024 : index
    %e = arith.addi %row, %tid : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %a2 = arith.addf %a, %x : f32
    %b2 = arith.maximumf %b, %x : f32
    %c2 = arith.minimumf %c, %x : f32
    %d2 = arith.mulf %d, %x : f32
    scf.yield %a2, %b2, %c2, %d2 : f32, f32, f32, f32
  }
  %t = arith.addf %s#0, %s#1 : f32
  %u = arith.addf %s#2, %s#3 : f32
  %v = arith.addf %t, %u : f32
  %j = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// -----

// A packed transpose's swizzle, (lane + tid / 64) mod 32, under a guard:
// the lanes run in warps of 32 (the divisors 32 and 64 are multiples of
// it), so tid / 64 is the warp loop's base / 64; the rotation's invariant
// part leaves the guard and the lane loop, and the lane loop is cut where
// the rotation wraps, 32 - (base / 64) mod 32: no division is left in it.
// CHECK-LABEL: func.func @rotated_store
// CHECK:     scf.for %[[BASE:.*]] = %c0{{.*}} to %c128{{(_[0-9]+)?}} step %c32{{(_[0-9]+)?}}
// CHECK:       %[[HALF:.*]] = arith.divui %[[BASE]], %c64{{(_[0-9]+)?}}
// CHECK:       %[[R0:.*]] = arith.remui %[[HALF]], %c32{{(_[0-9]+)?}}
// CHECK:       %[[WRAP:.*]] = arith.subi %c32{{.*}}, %[[R0]]
// CHECK:       %[[LO:.*]] = arith.minsi %c32{{.*}}, %[[WRAP]]
// CHECK:       %[[CUT:.*]] = arith.maxsi %c0{{.*}}, %[[LO]]
// CHECK:       scf.for %[[L:.*]] = %c0{{.*}} to %[[CUT]]
// CHECK-NOT:     arith.remui
// CHECK:         scf.if
// CHECK:           arith.addi %[[R0]], %[[L]]
// CHECK:           llvm.store
// CHECK:       scf.for %[[L2:.*]] = %[[CUT]] to %c32{{(_[0-9]+)?}}
// CHECK-NOT:     arith.remui
// CHECK:         scf.if
// CHECK:           %[[AT:.*]] = arith.addi %[[R0]], %[[L2]]
// CHECK:           arith.subi %[[AT]], %c32{{(_[0-9]+)?}}
// CHECK:           llvm.store
func.func @rotated_store(%in: !llvm.ptr, %out: !llvm.ptr, %flag: i1) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %lane = arith.remui %tid, %c32 : index
  %warp = arith.divui %tid, %c32 : index
  %half = arith.divui %tid, %c64 : index
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  scf.if %flag {
    %shifted = arith.addi %lane, %half : index
    %rotated = arith.remui %shifted, %c32 : index
    %row = arith.muli %warp, %c32 : index
    %e = arith.addi %row, %rotated : index
    %j = arith.index_cast %e : index to i64
    %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %v, %o : f32, !llvm.ptr
  }
  return
}

// -----

// A thread's loop that only writes memory runs interchanged with the
// threads as an accumulation does: a loop over the steps, each a loop over
// the lanes. In a step's lane loop the step's part of the swizzle,
// (lane + tid / 64 + 2 * k) mod 32, is invariant, so the loop is cut where
// the rotation wraps, for both stores though their sums associate
// differently (a vector's two elements): no division is left in either
// piece. (Around all the steps, one lane loop kept them all rotated.)
// CHECK-LABEL: func.func @rotated_steps
// CHECK:     scf.for %[[K:.*]] = %c0{{.*}} to %c4{{.*}} step %c1
// CHECK:       scf.for %[[BASE:.*]] = %c0{{.*}} to %c128{{(_[0-9]+)?}} step %c32
// CHECK:         %[[R0:.*]] = arith.remui %{{.*}}, %c32
// CHECK:         %[[WRAP:.*]] = arith.subi %c32{{.*}}, %[[R0]]
// CHECK:         %[[LO:.*]] = arith.minsi %c32{{.*}}, %[[WRAP]]
// CHECK:         %[[CUT:.*]] = arith.maxsi %c0{{.*}}, %[[LO]]
// CHECK:         scf.for %[[L:.*]] = %c0{{.*}} to %[[CUT]]
// CHECK-NOT:       arith.remui
// CHECK:           arith.addi %[[R0]], %[[L]]
// CHECK:           llvm.store
// CHECK-NOT:       arith.remui
// CHECK:           arith.addi %[[R0]], %[[L]]
// CHECK:           llvm.store
// CHECK:         } {loop_annotation
// CHECK:         scf.for %[[L2:.*]] = %[[CUT]] to %c32
// CHECK-NOT:       arith.remui
// CHECK:           llvm.store
// CHECK-NOT:       arith.remui
// CHECK:           llvm.store
// CHECK:         } {loop_annotation
// CHECK:       } {loop_annotation
// CHECK:     } {loop_annotation
func.func @rotated_steps(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  scf.for %k = %c0 to %c4 step %c1 {
    %lane = arith.remui %tid, %c32 : index
    %warp = arith.divui %tid, %c32 : index
    %row = arith.muli %warp, %c64 : index
    %i = arith.index_cast %tid : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %k2 = arith.muli %k, %c2 : index
    %half = arith.divui %tid, %c64 : index
    %s0 = arith.addi %lane, %half : index
    %s1 = arith.addi %s0, %k2 : index
    %r0 = arith.remui %s1, %c32 : index
    %e0 = arith.muli %r0, %c2 : index
    %a0 = arith.addi %row, %e0 : index
    %j0 = arith.index_cast %a0 : index to i64
    %o0 = llvm.getelementptr %out[%j0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %v, %o0 : f32, !llvm.ptr
    %half2 = arith.divui %tid, %c64 : index
    %t0 = arith.addi %half2, %k2 : index
    %t1 = arith.addi %lane, %t0 : index
    %r1 = arith.remui %t1, %c32 : index
    %e1 = arith.muli %r1, %c2 : index
    %a1 = arith.addi %row, %e1 : index
    %b1 = arith.addi %a1, %c1 : index
    %j1 = arith.index_cast %b1 : index to i64
    %o1 = llvm.getelementptr %out[%j1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %v, %o1 : f32, !llvm.ptr
  }
  return
}

// -----

// A reduction (shuffles) runs its blocks in batches only when its
// accumulation reads across them: here a column strip a block, each step
// 8 rows of 128 further on, and the neighbouring block the next 32 columns
// of the same rows. A batch of 4 blocks reads whole rows; the steps loop
// around the batch's blocks, and each block keeps its own slots.
// CHECK-LABEL: func.func @column_accumulate
// CHECK-SAME: %[[FIRST:[^:]*]]: index, %[[LAST:[^:]*]]: index)
// CHECK:     scf.for %[[B0:.*]] = %[[FIRST]] to %[[LAST]] step %c4{{(_[0-9]+)?}}
// CHECK:       scf.for %[[K:.*]] = %c0{{.*}} to %c8{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:         scf.for %[[BID:.*]] = %[[B0]] to %{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:           arith.subi %[[BID]], %[[B0]]
// CHECK:           scf.for %{{.*}} = %c0{{.*}} to %c32{{(_[0-9]+)?}}
func.func @column_accumulate(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %row = arith.muli %k, %c128 : index
    %col = arith.muli %bid, %c32 : index
    %at = arith.addi %row, %col : index
    %e = arith.addi %at, %tid : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  %c16 = arith.constant 16 : i32
  %w = arith.constant 32 : i32
  %s, %valid = gpu.shuffle down %sum, %c16, %w : f32
  %t = arith.addf %sum, %s : f32
  %j = arith.index_cast %bid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %t, %o : f32, !llvm.ptr
  return
}

// -----

// A row reduction's block reads its own row, each step on along it: its
// blocks run one by one (batched, their slots crowded the L1: the row sum
// f32[1024,4096] ran 1.8x slower).
// CHECK-LABEL: func.func @row_accumulate
// CHECK-SAME: %[[FIRST:[^:]*]]: index, %[[LAST:[^:]*]]: index)
// CHECK:     scf.for %[[BID:.*]] = %[[FIRST]] to %[[LAST]] step %c1{{(_[0-9]+)?}} {
// CHECK:       scf.for %[[K:.*]] = %c0{{.*}} to %c8{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK-NOT:     scf.for
// CHECK:         arith.muli %[[BID]], %c256{{(_[0-9]+)?}}
// CHECK-NEXT:    arith.addi
// CHECK-NEXT:    scf.for %{{.*}} = %c0{{.*}} to %c32{{(_[0-9]+)?}}
func.func @row_accumulate(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %step = arith.muli %k, %c32 : index
    %row = arith.muli %bid, %c256 : index
    %at = arith.addi %row, %step : index
    %e = arith.addi %at, %tid : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  %c16 = arith.constant 16 : i32
  %w = arith.constant 32 : i32
  %s, %valid = gpu.shuffle down %sum, %c16, %w : f32
  %t = arith.addf %sum, %s : f32
  %j = arith.index_cast %bid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %t, %o : f32, !llvm.ptr
  return
}

// -----

// An accumulation without shuffles whose block reads a slab of its own,
// 4 KiB (kFarBlockBytes) or more from its neighbour's (a loop's sum over
// a middle dimension): its blocks run one by one, each slab read whole
// (batched, a step of each of 16 slabs at a time: 1.3x slower).
// CHECK-LABEL: func.func @slab_accumulate
// CHECK-SAME: %[[FIRST:[^:]*]]: index, %[[LAST:[^:]*]]: index)
// CHECK:     scf.for %[[BID:.*]] = %[[FIRST]] to %[[LAST]] step %c1{{(_[0-9]+)?}} {
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c64{{(_[0-9]+)?}}
// CHECK:       scf.for %[[K:.*]] = %c0{{.*}} to %c8{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK-NOT:     scf.for
// CHECK:         arith.muli %[[BID]], %c1024{{(_[0-9]+)?}}
// CHECK-NEXT:    arith.addi
// CHECK-NEXT:    scf.for %{{.*}} = %c0{{.*}} to %c64{{(_[0-9]+)?}}
func.func @slab_accumulate(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %step = arith.muli %k, %c64 : index
    %slab = arith.muli %bid, %c1024 : index
    %at = arith.addi %slab, %step : index
    %e = arith.addi %at, %tid : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  %o0 = arith.muli %bid, %c64 : index
  %o1 = arith.addi %o0, %tid : index
  %j = arith.index_cast %o1 : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// -----

// Slabs of 2 KiB: the blocks run in batches (here all 4 of the grid), the
// steps around the batch's blocks.
// CHECK-LABEL: func.func @near_slab_accumulate
// CHECK-SAME: %[[FIRST:[^:]*]]: index, %[[LAST:[^:]*]]: index)
// CHECK:     scf.for %[[B0:.*]] = %[[FIRST]] to %[[LAST]] step %c4{{(_[0-9]+)?}}
// CHECK:       scf.for %[[K:.*]] = %c0{{.*}} to %c8{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:         scf.for %[[BID:.*]] = %[[B0]] to %{{.*}} step %c1{{(_[0-9]+)?}}
func.func @near_slab_accumulate(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %step = arith.muli %k, %c64 : index
    %slab = arith.muli %bid, %c1024 : index
    %at = arith.addi %slab, %step : index
    %e = arith.addi %at, %tid : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  %o0 = arith.muli %bid, %c64 : index
  %o1 = arith.addi %o0, %tid : index
  %j = arith.index_cast %o1 : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// -----

// A loop's accumulation (no shuffles) read across its blocks, two blocks
// a row of 64 columns and the next two 16 KiB on: its batches hold the
// blocks of two such streams (blocksAlongStream), 4 of the grid's 8.
// CHECK-LABEL: func.func @two_streams_accumulate
// CHECK-SAME: %[[FIRST:[^:]*]]: index, %[[LAST:[^:]*]]: index)
// CHECK:     scf.for %[[B0:.*]] = %[[FIRST]] to %[[LAST]] step %c4{{(_[0-9]+)?}}
// CHECK:       scf.for %[[K:.*]] = %c0{{.*}} to %c8{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:         scf.for %[[BID:.*]] = %[[B0]] to %{{.*}} step %c1{{(_[0-9]+)?}}
func.func @two_streams_accumulate(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  %slab = arith.divui %bid, %c2 : index
  %half = arith.remui %bid, %c2 : index
  %base = arith.muli %slab, %c4096 : index
  %col = arith.muli %half, %c32 : index
  %start = arith.addi %base, %col : index
  %sum = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %row = arith.muli %k, %c64 : index
    %at = arith.addi %start, %row : index
    %e = arith.addi %at, %tid : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  %o0 = arith.muli %bid, %c32 : index
  %o1 = arith.addi %o0, %tid : index
  %j = arith.index_cast %o1 : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// -----

// A column reduction with two warps a block: a warp reads every other row
// of the block's 32 columns (row 2 * k + warp), the neighbouring block the
// next 32 columns of the same rows. Each step runs the warps outside the
// batch's blocks, so that a warp's step reads its row whole (4 blocks x 32
// columns) before the next warp's row.
// CHECK-LABEL: func.func @column_accumulate_warps
// CHECK-SAME: %[[FIRST:[^:]*]]: index, %[[LAST:[^:]*]]: index)
// CHECK:     scf.for %[[B0:.*]] = %[[FIRST]] to %[[LAST]] step %c4{{(_[0-9]+)?}}
// CHECK:       scf.for %[[K:.*]] = %c0{{.*}} to %c8{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK-NEXT:    scf.for %[[W:.*]] = %c0{{.*}} to %c64{{.*}} step %c32{{(_[0-9]+)?}}
// CHECK:           scf.for %[[BID:.*]] = %[[B0]] to %{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:             arith.subi %[[BID]], %[[B0]]
// CHECK:             scf.for %{{.*}} = %c0{{.*}} to %c32{{(_[0-9]+)?}}
func.func @column_accumulate_warps(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %warp = arith.divui %tid, %c32 : index
  %lane = arith.remui %tid, %c32 : index
  %sum = scf.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %k2 = arith.muli %k, %c2 : index
    %r = arith.addi %k2, %warp : index
    %row = arith.muli %r, %c128 : index
    %col = arith.muli %bid, %c32 : index
    %at = arith.addi %row, %col : index
    %e = arith.addi %at, %lane : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %next = arith.addf %acc, %x : f32
    scf.yield %next : f32
  }
  %c16 = arith.constant 16 : i32
  %w = arith.constant 32 : i32
  %s, %valid = gpu.shuffle down %sum, %c16, %w : f32
  %t = arith.addf %sum, %s : f32
  %c64 = arith.constant 64 : index
  %base = arith.muli %bid, %c64 : index
  %at = arith.addi %base, %tid : index
  %j = arith.index_cast %at : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %t, %o : f32, !llvm.ptr
  return
}

// -----

// The same reads across the blocks, written into a transpose's shared tile
// (a column a thread, rows 33 apart): the blocks of a batch stay outside
// the warps, each block's tile written whole before the next's (warps
// outside, each step's stores spread over the batch's tiles: the seed
// transpose ran 1.03-1.04x slower).
// CHECK-LABEL: func.func @tile_rows_to_shared
// CHECK-SAME: %[[FIRST:[^:]*]]: index, %[[LAST:[^:]*]]: index)
// CHECK:     scf.for %[[B0:.*]] = %[[FIRST]] to %[[LAST]] step %c4{{(_[0-9]+)?}}
// CHECK:       scf.for %[[K:.*]] = %c0{{.*}} to %c4{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:         scf.for %[[BID:.*]] = %[[B0]] to %{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:           scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c32{{(_[0-9]+)?}}
// CHECK:             scf.for %{{.*}} = %c0{{.*}} to %c32{{(_[0-9]+)?}}
llvm.mlir.global private @shared_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<264 x f32>
func.func @tile_rows_to_shared(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %sh = llvm.mlir.addressof @shared_0 : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c33 = arith.constant 33 : index
  %c128 = arith.constant 128 : index
  %warp = arith.divui %tid, %c32 : index
  %lane = arith.remui %tid, %c32 : index
  scf.for %k = %c0 to %c4 step %c1 {
    %k2 = arith.muli %k, %c2 : index
    %r = arith.addi %k2, %warp : index
    %row = arith.muli %r, %c128 : index
    %col = arith.muli %bid, %c32 : index
    %at = arith.addi %row, %col : index
    %e = arith.addi %at, %lane : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p : !llvm.ptr -> f32
    %l33 = arith.muli %lane, %c33 : index
    %te = arith.addi %l33, %r : index
    %ti = arith.index_cast %te : index to i64
    %q = llvm.getelementptr %shp[%ti] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %x, %q : f32, !llvm.ptr
  }
  gpu.barrier
  %c64 = arith.constant 64 : index
  %ti = arith.index_cast %tid : index to i64
  %q = llvm.getelementptr %shp[%ti] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %q : !llvm.ptr -> f32
  %base = arith.muli %bid, %c64 : index
  %at = arith.addi %base, %tid : index
  %j = arith.index_cast %at : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// -----

// A transpose's first phase: each thread copies 4 elements of a row of the
// tile (row warp + 2 * k, column lane) from global memory into shared
// memory transposed (column-major, 9 apart: the padding). The phase is
// copied in squares of 8 x 8: 8 vector loads of rows, 24 shuffles, 8
// vector stores of columns; the loop over the squares' rows runs outside
// the batch's blocks, each block's addresses those of its thread 0.
// CHECK-LABEL: func.func @transposing_copy
// CHECK-SAME: %[[IN:[^:]*]]: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %[[FIRST:[^:]*]]: index, %[[LAST:[^:]*]]: index)
// CHECK:     scf.for %[[B0:.*]] = %[[FIRST]] to %[[LAST]] step %c4{{(_[0-9]+)?}}
// CHECK:       scf.for %[[R0:.*]] = %c0{{.*}} to %c8{{.*}} step %c8{{(_[0-9]+)?}}
// CHECK:         scf.for %[[BID:.*]] = %[[B0]] to %{{.*}} step %c1{{(_[0-9]+)?}}
// CHECK:           %[[BASE:.*]] = llvm.getelementptr inbounds %[[IN]][%{{.*}}]
// CHECK:           scf.for %[[C0:.*]] = %c0{{.*}} to %c32{{.*}} step %c8{{(_[0-9]+)?}}
// CHECK:             %[[ROW0:.*]] = arith.muli %[[R0]], %c128
// CHECK:             %[[AT0:.*]] = arith.addi %[[ROW0]], %[[C0]]
// CHECK:             %[[I0:.*]] = arith.index_cast %[[AT0]]
// CHECK:             %[[P0:.*]] = llvm.getelementptr %{{.*}}[%[[I0]]]
// CHECK:             llvm.load %[[P0]] {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK-COUNT-7:     llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK-COUNT-24:    llvm.shufflevector
// CHECK:             %[[COL0:.*]] = arith.muli %[[C0]], %c9
// CHECK:             arith.addi %[[COL0]], %[[R0]]
// CHECK-COUNT-8:     llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<8xf32>, !llvm.ptr
// CHECK-NOT:         llvm.store
// CHECK:           } {loop_annotation
llvm.mlir.global private @shared_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<288 x f32>
func.func @transposing_copy(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %sh = llvm.mlir.addressof @shared_0 : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %c9 = arith.constant 9 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %warp = arith.divui %tid, %c32 : index
  %lane = arith.remui %tid, %c32 : index
  %col = arith.muli %bid, %c32 : index
  %row = arith.muli %warp, %c128 : index
  %at = arith.addi %row, %col : index
  %e = arith.addi %at, %lane : index
  %l9 = arith.muli %lane, %c9 : index
  %te = arith.addi %l9, %warp : index
  %i0 = arith.index_castui %e : index to i64
  %p0 = llvm.getelementptr inbounds %in[%i0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x0 = llvm.load %p0 invariant : !llvm.ptr -> f32
  %t0 = arith.index_castui %te : index to i64
  %q0 = llvm.getelementptr inbounds %shp[%t0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x0, %q0 : f32, !llvm.ptr
  %c256 = arith.constant 256 : index
  %c2 = arith.constant 2 : index
  %e1 = arith.addi %e, %c256 : index
  %te1 = arith.addi %te, %c2 : index
  %i1 = arith.index_castui %e1 : index to i64
  %p1 = llvm.getelementptr inbounds %in[%i1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x1 = llvm.load %p1 invariant : !llvm.ptr -> f32
  %t1 = arith.index_castui %te1 : index to i64
  %q1 = llvm.getelementptr inbounds %shp[%t1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x1, %q1 : f32, !llvm.ptr
  %c512 = arith.constant 512 : index
  %c4 = arith.constant 4 : index
  %e2 = arith.addi %e, %c512 : index
  %te2 = arith.addi %te, %c4 : index
  %i2 = arith.index_castui %e2 : index to i64
  %p2 = llvm.getelementptr inbounds %in[%i2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x2 = llvm.load %p2 invariant : !llvm.ptr -> f32
  %t2 = arith.index_castui %te2 : index to i64
  %q2 = llvm.getelementptr inbounds %shp[%t2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x2, %q2 : f32, !llvm.ptr
  %c768 = arith.constant 768 : index
  %c6 = arith.constant 6 : index
  %e3 = arith.addi %e, %c768 : index
  %te3 = arith.addi %te, %c6 : index
  %i3 = arith.index_castui %e3 : index to i64
  %p3 = llvm.getelementptr inbounds %in[%i3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x3 = llvm.load %p3 invariant : !llvm.ptr -> f32
  %t3 = arith.index_castui %te3 : index to i64
  %q3 = llvm.getelementptr inbounds %shp[%t3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x3, %q3 : f32, !llvm.ptr
  gpu.barrier
  %ti = arith.index_cast %tid : index to i64
  %q = llvm.getelementptr %shp[%ti] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %q : !llvm.ptr -> f32
  %c64 = arith.constant 64 : index
  %obase = arith.muli %bid, %c64 : index
  %oat = arith.addi %obase, %tid : index
  %j = arith.index_cast %oat : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// -----

// The same copy with the thread's column and the block's index
// multiplied together (a wrap of the column at the block's width, here
// column lane * (block + 1)): the copy differs from block to block, so it
// stays element by element.
// CHECK-LABEL: func.func @transposing_copy_not_separable
// CHECK-NOT:   vector<8xf32>
// CHECK:       return
llvm.mlir.global private @shared_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<288 x f32>
func.func @transposing_copy_not_separable(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %sh = llvm.mlir.addressof @shared_0 : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %warp = arith.divui %tid, %c32 : index
  %lane = arith.remui %tid, %c32 : index
  %b1 = arith.addi %bid, %c1 : index
  %col = arith.muli %lane, %b1 : index
  %row = arith.muli %warp, %c128 : index
  %e = arith.addi %row, %col : index
  %l9 = arith.muli %lane, %c9 : index
  %te = arith.addi %l9, %warp : index
  %i0 = arith.index_castui %e : index to i64
  %p0 = llvm.getelementptr inbounds %in[%i0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x0 = llvm.load %p0 invariant : !llvm.ptr -> f32
  %t0 = arith.index_castui %te : index to i64
  %q0 = llvm.getelementptr inbounds %shp[%t0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x0, %q0 : f32, !llvm.ptr
  %c256 = arith.constant 256 : index
  %c2 = arith.constant 2 : index
  %e1 = arith.addi %e, %c256 : index
  %te1 = arith.addi %te, %c2 : index
  %i1 = arith.index_castui %e1 : index to i64
  %p1 = llvm.getelementptr inbounds %in[%i1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x1 = llvm.load %p1 invariant : !llvm.ptr -> f32
  %t1 = arith.index_castui %te1 : index to i64
  %q1 = llvm.getelementptr inbounds %shp[%t1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x1, %q1 : f32, !llvm.ptr
  %c512 = arith.constant 512 : index
  %c4 = arith.constant 4 : index
  %e2 = arith.addi %e, %c512 : index
  %te2 = arith.addi %te, %c4 : index
  %i2 = arith.index_castui %e2 : index to i64
  %p2 = llvm.getelementptr inbounds %in[%i2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x2 = llvm.load %p2 invariant : !llvm.ptr -> f32
  %t2 = arith.index_castui %te2 : index to i64
  %q2 = llvm.getelementptr inbounds %shp[%t2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x2, %q2 : f32, !llvm.ptr
  %c768 = arith.constant 768 : index
  %c6 = arith.constant 6 : index
  %e3 = arith.addi %e, %c768 : index
  %te3 = arith.addi %te, %c6 : index
  %i3 = arith.index_castui %e3 : index to i64
  %p3 = llvm.getelementptr inbounds %in[%i3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x3 = llvm.load %p3 invariant : !llvm.ptr -> f32
  %t3 = arith.index_castui %te3 : index to i64
  %q3 = llvm.getelementptr inbounds %shp[%t3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x3, %q3 : f32, !llvm.ptr
  gpu.barrier
  %ti = arith.index_cast %tid : index to i64
  %q = llvm.getelementptr %shp[%ti] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %q : !llvm.ptr -> f32
  %c64 = arith.constant 64 : index
  %obase = arith.muli %bid, %c64 : index
  %oat = arith.addi %obase, %tid : index
  %j = arith.index_cast %oat : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// -----

func.func @shuffle_offset_unknown(%out: !llvm.ptr, %offset: i32) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c32 = arith.constant 32 : i32
  %x = arith.index_cast %tid : index to i32
  // expected-error@+1 {{'gpu.shuffle' op needs constant offset and width (in [0, 1024]) on the CPU target}}
  %s, %valid = gpu.shuffle down %x, %offset, %c32 : i32
  llvm.store %s, %out : i32, !llvm.ptr
  return
}

// -----

// A vector<2xf32> kept across a barrier is two arrays of f32, one per
// element (structure of arrays): the thread loops read and write scalars,
// which LLVM vectorizes across the threads.
// CHECK-LABEL: func.func @vector_spill
// CHECK:     %[[SLOTS:.*]] = llvm.alloca %{{.*}} x f32
// CHECK:     scf.for
// CHECK:       %[[E0:.*]] = vector.extract %{{.*}}[0] : f32 from vector<2xf32>
// CHECK:       llvm.store %[[E0]]
// CHECK:       %[[E1:.*]] = vector.extract %{{.*}}[1] : f32 from vector<2xf32>
// CHECK:       %[[SECOND:.*]] = arith.addi %{{.*}}, %c32{{(_[0-9]+)?}}
// CHECK:       llvm.store %[[E1]]
// CHECK:     scf.for
// CHECK:       %[[L0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:       %[[L1:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:       vector.from_elements %[[L0]], %[[L1]] : vector<2xf32>
func.func @vector_spill(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, vector<2xf32>
  %v = llvm.load %p : !llvm.ptr -> vector<2xf32>
  gpu.barrier
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, vector<2xf32>
  llvm.store %v, %o : vector<2xf32>, !llvm.ptr
  return
}

// -----

// Integer division (x86 has no vector integer division: LLVM would divide
// element by element) goes through floats, exact at these widths: i8 and
// i16 through f32, i32 through f64; the remainder is a - b * q. An i32
// division by a constant stays (LLVM multiplies and shifts), as does i64.
// CHECK-LABEL: func.func private @integer_division
// CHECK-SAME: (%[[A:.*]]: i8, %[[B:.*]]: i8, %[[C:.*]]: vector<4xi16>, %[[D:.*]]: vector<4xi16>, %[[E:.*]]: i32, %[[F:.*]]: i32, %[[G:.*]]: i64, %[[H:.*]]: i64)
// CHECK:      %[[FA:.*]] = arith.sitofp %[[A]] : i8 to f32
// CHECK:      %[[FB:.*]] = arith.sitofp %[[B]] : i8 to f32
// CHECK:      %[[Q:.*]] = arith.divf %[[FA]], %[[FB]] : f32
// CHECK:      arith.fptosi %[[Q]] : f32 to i8
// CHECK:      %[[FC:.*]] = arith.uitofp %[[C]] : vector<4xi16> to vector<4xf32>
// CHECK:      %[[FD:.*]] = arith.uitofp %[[D]] : vector<4xi16> to vector<4xf32>
// CHECK:      %[[QV:.*]] = arith.divf %[[FC]], %[[FD]] : vector<4xf32>
// CHECK:      %[[QI:.*]] = arith.fptoui %[[QV]] : vector<4xf32> to vector<4xi16>
// CHECK:      %[[BQ:.*]] = arith.muli %[[D]], %[[QI]] : vector<4xi16>
// CHECK:      arith.subi %[[C]], %[[BQ]] : vector<4xi16>
// CHECK:      %[[FE:.*]] = arith.sitofp %[[E]] : i32 to f64
// CHECK:      %[[FF:.*]] = arith.sitofp %[[F]] : i32 to f64
// CHECK:      %[[Q32:.*]] = arith.divf %[[FE]], %[[FF]] : f64
// CHECK:      %[[QE:.*]] = arith.fptosi %[[Q32]] : f64 to i32
// CHECK:      %[[FQ:.*]] = arith.muli %[[F]], %[[QE]] : i32
// CHECK:      arith.subi %[[E]], %[[FQ]] : i32
// CHECK:      arith.divui %[[E]], %c7_i32 : i32
// CHECK:      arith.divsi %[[G]], %[[H]] : i64
func.func private @integer_division(%a: i8, %b: i8, %c: vector<4xi16>, %d: vector<4xi16>,
                                    %e: i32, %f: i32, %g: i64, %h: i64)
    -> (i8, vector<4xi16>, i32, i32, i64) {
  %q = arith.divsi %a, %b : i8
  %r = arith.remui %c, %d : vector<4xi16>
  %s = arith.remsi %e, %f : i32
  %c7 = arith.constant 7 : i32
  %t = arith.divui %e, %c7 : i32
  %u = arith.divsi %g, %h : i64
  return %q, %r, %s, %t, %u : i8, vector<4xi16>, i32, i32, i64
}

// -----

// Atomics: when the launch's block range is the whole grid ([0, 8) here),
// no other host thread runs its blocks, and an update is a plain load,
// update and store; otherwise it stays atomic. An atomicrmw of a plain
// operation (fadd) and a cmpxchg (a plain load, a compare, the new value
// or the old one stored back) take that form; a max stays atomic.
// CHECK-LABEL: func.func @atomics
// CHECK-SAME: (%[[P:.*]]: !llvm.ptr, %[[FIRST:.*]]: index, %[[LAST:.*]]: index)
// CHECK-DAG:  %[[FROM0:.*]] = arith.cmpi eq, %[[FIRST]], %c0{{(_[0-9]+)?}}
// CHECK-DAG:  %[[TOEND:.*]] = arith.cmpi sge, %[[LAST]], %c8{{(_[0-9]+)?}}
// CHECK:      %[[EXCL:.*]] = arith.andi %[[FROM0]], %[[TOEND]]
// CHECK:      scf.if %[[EXCL]] -> (f32) {
// CHECK:        %[[OLD:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:        %[[NEW:.*]] = llvm.fadd %[[OLD]], %{{.*}} : f32
// CHECK:        llvm.store %[[NEW]], %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK:        scf.yield %[[OLD]] : f32
// CHECK:      } else {
// CHECK:        llvm.atomicrmw fadd
// CHECK:      scf.if %[[EXCL]] -> (!llvm.struct<(i32, i1)>) {
// CHECK:        %[[W:.*]] = llvm.load
// CHECK:        %[[EQ:.*]] = llvm.icmp "eq" %[[W]]
// CHECK:        %[[SEL:.*]] = llvm.select %[[EQ]], %{{.*}}, %[[W]] : i1, i32
// CHECK:        llvm.store %[[SEL]]
// CHECK:      } else {
// CHECK:        llvm.cmpxchg
// CHECK-NOT:  scf.if
// CHECK:      llvm.atomicrmw max
func.func @atomics(%p: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %one = arith.constant 1.0 : f32
  %a = llvm.atomicrmw fadd %p, %one monotonic {alignment = 4 : i64} : !llvm.ptr, f32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %b = llvm.cmpxchg %p, %c0, %c1 monotonic monotonic {alignment = 4 : i64} : !llvm.ptr, i32
  %m = llvm.atomicrmw max %p, %c1 monotonic : !llvm.ptr, i32
  return
}

// -----

// A grid of one block is exclusive however it is launched: the branch's
// condition is the constant true (canonicalize then drops the atomic
// side), and no block range is compared.
// CHECK-LABEL: func.func @atomics_of_one_block
// CHECK-NOT:  arith.andi
// CHECK:      %[[TRUE:.*]] = arith.constant true
// CHECK:      scf.if %[[TRUE]] -> (f32) {
// CHECK:        llvm.load
// CHECK:        llvm.fadd
// CHECK:        llvm.store
// CHECK:      } else {
// CHECK:        llvm.atomicrmw fadd
func.func @atomics_of_one_block(%p: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 0 : index]}
  %one = arith.constant 1.0 : f32
  %a = llvm.atomicrmw fadd %p, %one monotonic {alignment = 4 : i64} : !llvm.ptr, f32
  return
}

// -----

// A kernel whose threads each ran 4 elements (-xla-gpu-fold-loops-into-
// threads made them 4 threads) interleaves 4 vector iterations of its lane
// loop where the body has long-latency arithmetic (math, a division): the
// 4 independent chains a thread had.
// CHECK: #[[$CHAINS:.*]] = #llvm.loop_interleave<count = 4 : i32>
// CHECK: #[[$INTERLEAVED:.*]] = #llvm.loop_annotation<interleave = #[[$CHAINS]], unroll = #{{.*}}>
// CHECK-LABEL: func.func @folded_elements
// CHECK:         scf.for
// CHECK:           math.exp
// CHECK:         } {loop_annotation = #[[$INTERLEAVED]]}
func.func @folded_elements(%in: !llvm.ptr, %out: !llvm.ptr)
    attributes {xla.elements_per_thread = 4 : i64} {
  %tid = gpu.thread_id x {xla.range = [0 : index, 511 : index]}
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %e = math.exp %v : f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %e, %o : f32, !llvm.ptr
  return
}

// -----

// A kernel not folded (one element a thread) with such arithmetic
// interleaves 2 vector iterations: LLVM's cost model runs one chain of a
// compute-bound lane loop at a time (power, atan2 0.76-0.79x with 2).
// CHECK:       // -----
// CHECK:       #[[$TWO_CHAINS:.*]] = #llvm.loop_interleave<count = 2 : i32>
// CHECK:       #[[$PAIRED:.*]] = #llvm.loop_annotation<interleave = #[[$TWO_CHAINS]], unroll = #{{.*}}>
// CHECK-LABEL: func.func @unfolded_exp
// CHECK:         scf.for
// CHECK:           math.exp
// CHECK:         } {loop_annotation = #[[$PAIRED]]}
func.func @unfolded_exp(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 511 : index]}
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %e = math.exp %v : f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %e, %o : f32, !llvm.ptr
  return
}

// -----

// Without such arithmetic (a copy, a conversion: memory-bound), LLVM
// chooses.
// CHECK:       // -----
// CHECK-NOT:   loop_interleave
// CHECK:       #[[$PLAIN:.*]] = #llvm.loop_annotation<unroll = #{{.*}}>
// CHECK-NOT:   loop_interleave
// CHECK-LABEL: func.func @folded_copy
// CHECK:         } {loop_annotation = #[[$PLAIN]]}
func.func @folded_copy(%in: !llvm.ptr, %out: !llvm.ptr)
    attributes {xla.elements_per_thread = 4 : i64} {
  %tid = gpu.thread_id x {xla.range = [0 : index, 511 : index]}
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// -----

// A lane loop cut at a guard (the block's elements end at 300: a piece of
// unknown length) whose loads and stores all move by one element a lane
// asks LLVM to fold its tail into the vector loop: its last iteration
// masked, no vectorized epilogue and scalar remainder after it.
// CHECK:       // -----
// CHECK:       #[[$TAIL_VEC:.*]] = #llvm.loop_vectorize<predicateEnable = true>
// CHECK:       #[[$TAIL:.*]] = #llvm.loop_annotation<vectorize = #[[$TAIL_VEC]], unroll = #{{.*}}>
// CHECK-LABEL: func.func @contiguous_lanes
// CHECK:         %[[CUT:.*]] = arith.maxsi
// CHECK:         scf.for %{{.*}} = %c0{{.*}} to %[[CUT]]
// CHECK:           llvm.load
// CHECK:           llvm.store
// CHECK:         } {loop_annotation = #[[$TAIL]]}
// CHECK:         scf.for %{{.*}} = %[[CUT]] to %c128
// CHECK:         } {loop_annotation = #[[$TAIL]]}
func.func @contiguous_lanes(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %c128 = arith.constant 128 : index
  %c300 = arith.constant 300 : index
  %base = arith.muli %bid, %c128 : index
  %e = arith.addi %base, %tid : index
  %ok = arith.cmpi slt, %e, %c300 : index
  scf.if %ok {
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %v, %o : f32, !llvm.ptr
  }
  return
}

// -----

// The same in blocks of 512 threads (the loop emitter's, four elements a
// thread): pieces of up to 512 lanes, where a mask every iteration costs
// more than LLVM's epilogue (kMaxFoldedTailLanes). The tail stays LLVM's.
// CHECK:       // -----
// CHECK-NOT:   predicateEnable
// CHECK-LABEL: func.func @contiguous_lanes_of_a_large_block
// CHECK:         %[[CUT:.*]] = arith.maxsi
// CHECK:         scf.for %{{.*}} = %c0{{.*}} to %[[CUT]]
// CHECK-NOT:   predicateEnable
func.func @contiguous_lanes_of_a_large_block(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 511 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %c512 = arith.constant 512 : index
  %c1200 = arith.constant 1200 : index
  %base = arith.muli %bid, %c512 : index
  %e = arith.addi %base, %tid : index
  %ok = arith.cmpi slt, %e, %c1200 : index
  scf.if %ok {
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %v, %o : f32, !llvm.ptr
  }
  return
}

// -----

// The same with a strided store (a transpose tile's column): masked, it
// would be a scatter, so the tail stays LLVM's.
// CHECK:       // -----
// CHECK-NOT:   predicateEnable
// CHECK-LABEL: func.func @strided_lanes
// CHECK-NOT:   predicateEnable
func.func @strided_lanes(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %c33 = arith.constant 33 : index
  %c128 = arith.constant 128 : index
  %c300 = arith.constant 300 : index
  %base = arith.muli %bid, %c128 : index
  %e = arith.addi %base, %tid : index
  %ok = arith.cmpi slt, %e, %c300 : index
  scf.if %ok {
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %s = arith.muli %e, %c33 : index
    %j = arith.index_cast %s : index to i64
    %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %v, %o : f32, !llvm.ptr
  }
  return
}

// -----

// An interchanged accumulation behind a guard: each step's lane loop is cut
// where the guard flips, and its pieces fold their tails...
// CHECK:       // -----
// CHECK:       #[[$SUM_VEC:.*]] = #llvm.loop_vectorize<predicateEnable = true>
// CHECK:       #[[$SUM_TAIL:.*]] = #llvm.loop_annotation<vectorize = #[[$SUM_VEC]], unroll = #{{.*}}>
// CHECK-LABEL: func.func @accumulate_cut
// CHECK:         scf.for %{{.*}} = %c0{{.*}} to %c16
// CHECK:           scf.for
// CHECK:             arith.addf
// CHECK:           } {loop_annotation = #[[$SUM_TAIL]]}
// CHECK:           scf.for
// CHECK:           } {loop_annotation = #[[$SUM_TAIL]]}
func.func @accumulate_cut(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c49 = arith.constant 49 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %inside = arith.cmpi sle, %tid, %c49 : index
  %sum = scf.if %inside -> (f32) {
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
      %row = arith.muli %k, %c128 : index
      %e = arith.addi %row, %tid : index
      %i = arith.index_cast %e : index to i64
      %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %x = llvm.load %p : !llvm.ptr -> f32
      %next = arith.addf %acc, %x : f32
      scf.yield %next : f32
    }
    scf.yield %s : f32
  } else {
    scf.yield %zero : f32
  }
  %j = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// -----

// ...but not with a transcendental: masked every step, the exp ran slower.
// CHECK:       // -----
// CHECK-NOT:   predicateEnable
// CHECK-LABEL: func.func @accumulate_exp_cut
// CHECK:         scf.for %{{.*}} = %c0{{.*}} to %c16
// CHECK:           math.exp
// CHECK-NOT:   predicateEnable
func.func @accumulate_exp_cut(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c49 = arith.constant 49 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %inside = arith.cmpi sle, %tid, %c49 : index
  %sum = scf.if %inside -> (f32) {
    %s = scf.for %k = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f32) {
      %row = arith.muli %k, %c128 : index
      %e = arith.addi %row, %tid : index
      %i = arith.index_cast %e : index to i64
      %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %x = llvm.load %p : !llvm.ptr -> f32
      %ex = math.exp %x : f32
      %next = arith.addf %acc, %ex : f32
      scf.yield %next : f32
    }
    scf.yield %s : f32
  } else {
    scf.yield %zero : f32
  }
  %j = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// -----

// A thread's loop that writes exp behind a guard of the thread (a partial
// tile's columns, a transpose's first phase that -xla-gpu-optimize-loops
// kept a loop): the guard goes into the loop, which then runs interchanged
// with the threads -- a loop over the steps, each a lane loop with one exp,
// cut where the guard flips -- and the lane loop interleaves 2 vector
// iterations, the independent chains the unrolled steps had.
// CHECK:       // -----
// CHECK:       #[[$TWO:.*]] = #llvm.loop_interleave<count = 2 : i32>
// CHECK:       #[[$STEP_LANES:.*]] = #llvm.loop_annotation<interleave = #[[$TWO]], unroll = #{{.*}}>
// CHECK-LABEL: func.func @guarded_math_rows
// CHECK:         scf.for %[[K:.*]] = %c0{{.*}} to %c5{{.*}} step %c1
// CHECK:           %[[CUT:.*]] = arith.maxsi
// CHECK:           scf.for %{{.*}} = %c0{{.*}} to %[[CUT]]
// CHECK:             math.exp
// CHECK:             llvm.store
// CHECK:           } {loop_annotation = #[[$STEP_LANES]]}
// CHECK:           scf.for %{{.*}} = %[[CUT]] to %c32
// CHECK:             scf.if %false
// CHECK:           } {loop_annotation = #[[$STEP_LANES]]}
func.func @guarded_math_rows(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c20 = arith.constant 20 : index
  %c32 = arith.constant 32 : index
  %inside = arith.cmpi slt, %tid, %c20 : index
  scf.if %inside {
    scf.for %k = %c0 to %c5 step %c1 {
      %row = arith.muli %k, %c32 : index
      %e = arith.addi %row, %tid : index
      %i = arith.index_cast %e : index to i64
      %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %v = llvm.load %p : !llvm.ptr -> f32
      %x = math.exp %v : f32
      %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      llvm.store %x, %o : f32, !llvm.ptr
    }
  }
  return
}

// -----

// A lane loop that only copies, reading a slice's column (stride 16, one
// load): LLVM is to leave it scalar (vectorized without gathers, it is a
// scalar load and a lane insert each, for ~2 ms of compile a loop).
// CHECK:       // -----
// CHECK:       #[[$NO_VEC:.*]] = #llvm.loop_vectorize<disable = true>
// CHECK:       #[[$SCALAR_COPY:.*]] = #llvm.loop_annotation<vectorize = #[[$NO_VEC]], unroll = #{{.*}}>
// CHECK-LABEL: func.func @strided_copy
// CHECK:         scf.for
// CHECK:           llvm.load
// CHECK:           llvm.store
// CHECK:         } {loop_annotation = #[[$SCALAR_COPY]]}
func.func @strided_copy(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %c15 = arith.constant 15 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %base = arith.muli %bid, %c128 : index
  %e = arith.addi %base, %tid : index
  %s = arith.muli %e, %c16 : index
  %r = arith.addi %s, %c15 : index
  %i = arith.index_cast %r : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %j = arith.index_cast %e : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// -----

// One load of stride 2 (every other element) is a group half of gaps:
// scalar too.
// CHECK:       // -----
// CHECK:       #[[$NO_VEC:.*]] = #llvm.loop_vectorize<disable = true>
// CHECK:       #[[$SCALAR_COPY:.*]] = #llvm.loop_annotation<vectorize = #[[$NO_VEC]], unroll = #{{.*}}>
// CHECK-LABEL: func.func @every_other
// CHECK:         } {loop_annotation = #[[$SCALAR_COPY]]}
func.func @every_other(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %c2 = arith.constant 2 : index
  %s = arith.muli %tid, %c2 : index
  %i = arith.index_cast %s : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %j = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// -----

// Stride 2 with two loads (a thread's vector of two) is an interleave group
// LLVM loads whole, and so are 3 loads of stride 4 (an RGBA pixel's RGB,
// one gap); a strided read that is added to is no copy: all stay LLVM's to
// vectorize.
// CHECK:       // -----
// CHECK-NOT:   loop_vectorize<disable
// CHECK-LABEL: func.func @pair_copy
// CHECK-NOT:   loop_vectorize<disable
// CHECK-LABEL: func.func @three_of_four
// CHECK-NOT:   loop_vectorize<disable
// CHECK-LABEL: func.func @strided_sum
// CHECK-NOT:   loop_vectorize<disable
func.func @pair_copy(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %e = arith.muli %tid, %c2 : index
  %f = arith.addi %e, %c1 : index
  %i = arith.index_cast %e : index to i64
  %k = arith.index_cast %f : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %q = llvm.getelementptr %in[%k] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %w = llvm.load %q : !llvm.ptr -> f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %u = llvm.getelementptr %out[%k] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  llvm.store %w, %u : f32, !llvm.ptr
  return
}

func.func @three_of_four(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %s = arith.muli %tid, %c4 : index
  %s1 = arith.addi %s, %c1 : index
  %s2 = arith.addi %s, %c2 : index
  %t = arith.muli %tid, %c3 : index
  %t1 = arith.addi %t, %c1 : index
  %t2 = arith.addi %t, %c2 : index
  %i0 = arith.index_cast %s : index to i64
  %i1 = arith.index_cast %s1 : index to i64
  %i2 = arith.index_cast %s2 : index to i64
  %j0 = arith.index_cast %t : index to i64
  %j1 = arith.index_cast %t1 : index to i64
  %j2 = arith.index_cast %t2 : index to i64
  %p0 = llvm.getelementptr %in[%i0] : (!llvm.ptr, i64) -> !llvm.ptr, i8
  %p1 = llvm.getelementptr %in[%i1] : (!llvm.ptr, i64) -> !llvm.ptr, i8
  %p2 = llvm.getelementptr %in[%i2] : (!llvm.ptr, i64) -> !llvm.ptr, i8
  %v0 = llvm.load %p0 : !llvm.ptr -> i8
  %v1 = llvm.load %p1 : !llvm.ptr -> i8
  %v2 = llvm.load %p2 : !llvm.ptr -> i8
  %o0 = llvm.getelementptr %out[%j0] : (!llvm.ptr, i64) -> !llvm.ptr, i8
  %o1 = llvm.getelementptr %out[%j1] : (!llvm.ptr, i64) -> !llvm.ptr, i8
  %o2 = llvm.getelementptr %out[%j2] : (!llvm.ptr, i64) -> !llvm.ptr, i8
  llvm.store %v0, %o0 : i8, !llvm.ptr
  llvm.store %v1, %o1 : i8, !llvm.ptr
  llvm.store %v2, %o2 : i8, !llvm.ptr
  return
}

func.func @strided_sum(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %c16 = arith.constant 16 : index
  %s = arith.muli %tid, %c16 : index
  %i = arith.index_cast %s : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %d = arith.addf %v, %v : f32
  %j = arith.index_cast %tid : index to i64
  %o = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %d, %o : f32, !llvm.ptr
  return
}

// -----

// A batch of a kernel that accumulates nothing keeps its shared memory and
// slots within 16 KiB (half a core's L1) between the phase that writes them
// and the one that reads them back: a 4224-byte tile and 256 bytes of
// slots a block, 3 blocks a batch (of a grid of 64).
// CHECK-LABEL: func.func @tile_batch
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %[[FIRST:.*]]: index, %[[LAST:.*]]: index)
// CHECK: scf.for %{{.*}} = %[[FIRST]] to %[[LAST]] step %c3{{(_[0-9]+)?}}
llvm.mlir.global private @tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<1056 x f32>
func.func @tile_batch(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 63 : index]}
  %sh = llvm.mlir.addressof @tile : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %q = llvm.getelementptr %shp[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %q : f32, !llvm.ptr
  gpu.barrier
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// -----

// Past the 16 KiB, two blocks a batch still.
// CHECK-LABEL: func.func @big_tile_batch
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %[[FIRST:.*]]: index, %[[LAST:.*]]: index)
// CHECK: scf.for %{{.*}} = %[[FIRST]] to %[[LAST]] step %c2{{(_[0-9]+)?}}
llvm.mlir.global private @big_tile() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<4096 x f32>
func.func @big_tile_batch(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 63 : index]}
  %sh = llvm.mlir.addressof @big_tile : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %q = llvm.getelementptr %shp[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %q : f32, !llvm.ptr
  gpu.barrier
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// -----

// A second phase that writes a shared tile's rows to the output's columns
// (a transpose's), each tile row rotated by its index (as a swizzle does):
// each block's 16 x 16 f32 tile (rows 17 apart) moves as one square of 16
// vectors of 16 -- a vector load where a row's part runs on in order (row
// 0), else the row's load shuffled by its rotation; the square transposed
// in log2(16) = 4 rounds of interleaves, a loop of its own (LLVM's x86
// instruction selection combined the rounds emitted whole, ~0.2 ms a
// shuffle); 16 vector stores of the output's rows, 16 elements apart.
// CHECK-LABEL: func.func @transposing_write
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr, %{{.*}}: index, %{{.*}}: index)
// CHECK:       llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK:       %[[TILE:.*]] = llvm.getelementptr %{{.*}} -> !llvm.ptr, !llvm.array<272 x f32>
// CHECK:       %[[BASE:.*]] = llvm.getelementptr %[[OUT]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:       %[[DST:.*]] = llvm.getelementptr %[[BASE]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:       %[[ROW0:.*]] = llvm.load %[[TILE]] {alignment = 4 : i64} : !llvm.ptr -> vector<16xi32>
// CHECK:       %[[AT1:.*]] = llvm.getelementptr %[[TILE]][17] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK:       %[[ROW1:.*]] = llvm.load %[[AT1]] {alignment = 4 : i64} : !llvm.ptr -> vector<16xi32>
// CHECK:       llvm.shufflevector %[[ROW1]], %[[ROW1]] [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0]
// CHECK:       %[[AT15:.*]] = llvm.getelementptr %[[TILE]][255] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK:       %[[ROW15:.*]] = llvm.load %[[AT15]] {alignment = 4 : i64} : !llvm.ptr -> vector<16xi32>
// CHECK:       %[[LAST:.*]] = llvm.shufflevector %[[ROW15]], %[[ROW15]] [15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
// CHECK:       %[[T:.*]]:16 = scf.for %{{.*}} = %c0{{.*}} to %c4{{.*}} step %c1{{.*}} iter_args(%[[A0:.*]] = %[[ROW0]], {{.*}}, %{{.*}} = %[[LAST]])
// CHECK:         llvm.shufflevector %[[A0]], %{{.*}} [0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23]
// CHECK-NEXT:    llvm.shufflevector %[[A0]], %{{.*}} [8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31]
// CHECK-COUNT-14: llvm.shufflevector
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } {loop_annotation = #{{.*}}}
// CHECK:       %[[AT:.*]] = llvm.getelementptr %[[DST]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:  llvm.store %[[T]]#0, %[[AT]] {alignment = 4 : i64} : vector<16xi32>, !llvm.ptr
// CHECK-COUNT-15: llvm.store %[[T]]#{{[0-9]+}}, %{{.*}} {alignment = 4 : i64} : vector<16xi32>, !llvm.ptr
// CHECK-NOT:   -> f32
// CHECK:       return
// With transposing-writes=false (hosts without 512-bit vectors), the tile's
// elements are copied one by one, in lane loops LLVM vectorizes as it can.
// ELEMENTS-LABEL: func.func @transposing_write(
// ELEMENTS-SAME:  %[[OUT:[^:]*]]: !llvm.ptr, %{{[^:]*}}: index, %{{[^:]*}}: index)
// ELEMENTS-NOT:   vector<16xi32>
// ELEMENTS:       %[[AT:.*]] = llvm.getelementptr %[[OUT]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// ELEMENTS:       llvm.store %{{.*}}, %[[AT]] : f32, !llvm.ptr
// ELEMENTS-NOT:   vector<16xi32>
// ELEMENTS:       return
llvm.mlir.global private @tile16() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<272 x f32>
func.func @transposing_write(%in: !llvm.ptr, %out: !llvm.ptr) {
  %c16 = arith.constant 16 : index
  %c17 = arith.constant 17 : index
  %c256 = arith.constant 256 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %sh = llvm.mlir.addressof @tile16 : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %v2 = arith.addf %v, %v : f32
  %q = llvm.getelementptr %shp[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v2, %q : f32, !llvm.ptr
  gpu.barrier
  %c = arith.remui %tid, %c16 : index
  %w = arith.divui %tid, %c16 : index
  %base = arith.muli %bid, %c256 : index
  %row = arith.muli %c, %c17 : index
  %k0 = arith.constant 0 : index
  %r0 = arith.addi %w, %k0 : index
  %rot0 = arith.addi %r0, %c : index
  %m0 = arith.remui %rot0, %c16 : index
  %s0 = arith.addi %row, %m0 : index
  %si0 = arith.index_cast %s0 : index to i64
  %sp0 = llvm.getelementptr %shp[%si0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x0 = llvm.load %sp0 : !llvm.ptr -> f32
  %ro0 = arith.muli %r0, %c16 : index
  %dr0 = arith.addi %base, %ro0 : index
  %d0 = arith.addi %dr0, %c : index
  %di0 = arith.index_cast %d0 : index to i64
  %dp0 = llvm.getelementptr %out[%di0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x0, %dp0 : f32, !llvm.ptr
  %k1 = arith.constant 4 : index
  %r1 = arith.addi %w, %k1 : index
  %rot1 = arith.addi %r1, %c : index
  %m1 = arith.remui %rot1, %c16 : index
  %s1 = arith.addi %row, %m1 : index
  %si1 = arith.index_cast %s1 : index to i64
  %sp1 = llvm.getelementptr %shp[%si1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x1 = llvm.load %sp1 : !llvm.ptr -> f32
  %ro1 = arith.muli %r1, %c16 : index
  %dr1 = arith.addi %base, %ro1 : index
  %d1 = arith.addi %dr1, %c : index
  %di1 = arith.index_cast %d1 : index to i64
  %dp1 = llvm.getelementptr %out[%di1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x1, %dp1 : f32, !llvm.ptr
  %k2 = arith.constant 8 : index
  %r2 = arith.addi %w, %k2 : index
  %rot2 = arith.addi %r2, %c : index
  %m2 = arith.remui %rot2, %c16 : index
  %s2 = arith.addi %row, %m2 : index
  %si2 = arith.index_cast %s2 : index to i64
  %sp2 = llvm.getelementptr %shp[%si2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x2 = llvm.load %sp2 : !llvm.ptr -> f32
  %ro2 = arith.muli %r2, %c16 : index
  %dr2 = arith.addi %base, %ro2 : index
  %d2 = arith.addi %dr2, %c : index
  %di2 = arith.index_cast %d2 : index to i64
  %dp2 = llvm.getelementptr %out[%di2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x2, %dp2 : f32, !llvm.ptr
  %k3 = arith.constant 12 : index
  %r3 = arith.addi %w, %k3 : index
  %rot3 = arith.addi %r3, %c : index
  %m3 = arith.remui %rot3, %c16 : index
  %s3 = arith.addi %row, %m3 : index
  %si3 = arith.index_cast %s3 : index to i64
  %sp3 = llvm.getelementptr %shp[%si3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x3 = llvm.load %sp3 : !llvm.ptr -> f32
  %ro3 = arith.muli %r3, %c16 : index
  %dr3 = arith.addi %base, %ro3 : index
  %d3 = arith.addi %dr3, %c : index
  %di3 = arith.index_cast %d3 : index to i64
  %dp3 = llvm.getelementptr %out[%di3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x3, %dp3 : f32, !llvm.ptr
  return
}

// -----

// The same second phase as a loop of 4 steps (the CPU's unroll budget
// keeps an 8-step write phase a loop): its copies evaluated step by step,
// the same transposing write, its addresses from the loop body's index
// arithmetic at the first step.
// CHECK-LABEL: func.func @transposing_write_steps
// CHECK:       llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK:       %[[ROW1:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xi32>
// CHECK:       llvm.shufflevector %{{.*}}, %{{.*}} [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0]
// CHECK:       %[[T:.*]]:16 = scf.for %{{.*}} = %c0{{.*}} to %c4{{.*}} step %c1{{.*}} iter_args(
// CHECK-COUNT-16: llvm.store %[[T]]#{{[0-9]+}}, %{{.*}} {alignment = 4 : i64} : vector<16xi32>, !llvm.ptr
// CHECK-NOT:   -> f32
// CHECK:       return
// ELEMENTS-LABEL: func.func @transposing_write_steps(
// ELEMENTS-NOT:   vector<16xi32>
// ELEMENTS:       llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// ELEMENTS-NOT:   vector<16xi32>
// ELEMENTS:       return
llvm.mlir.global private @tile_steps() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<272 x f32>
func.func @transposing_write_steps(%in: !llvm.ptr, %out: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c17 = arith.constant 17 : index
  %c256 = arith.constant 256 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %sh = llvm.mlir.addressof @tile_steps : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %v2 = arith.addf %v, %v : f32
  %q = llvm.getelementptr %shp[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v2, %q : f32, !llvm.ptr
  gpu.barrier
  scf.for %step = %c0 to %c4 step %c1 {
    %c = arith.remui %tid, %c16 : index
    %w = arith.divui %tid, %c16 : index
    %base = arith.muli %bid, %c256 : index
    %row = arith.muli %c, %c17 : index
    %k = arith.muli %step, %c4 : index
    %r = arith.addi %w, %k : index
    %rot = arith.addi %r, %c : index
    %m = arith.remui %rot, %c16 : index
    %s = arith.addi %row, %m : index
    %si = arith.index_cast %s : index to i64
    %sp = llvm.getelementptr %shp[%si] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %sp : !llvm.ptr -> f32
    %ro = arith.muli %r, %c16 : index
    %dr = arith.addi %base, %ro : index
    %d = arith.addi %dr, %c : index
    %di = arith.index_cast %d : index to i64
    %dp = llvm.getelementptr %out[%di] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %x, %dp : f32, !llvm.ptr
  }
  return
}

// -----

// Half the tile's rows (8 of 16: not a square's multiple) keep the copies
// element by element.
// CHECK-LABEL: func.func @transposing_write_of_8_rows
// CHECK-NOT:   vector<
// CHECK:       llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:       return
llvm.mlir.global private @tile8() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<272 x f32>
func.func @transposing_write_of_8_rows(%in: !llvm.ptr, %out: !llvm.ptr) {
  %c16 = arith.constant 16 : index
  %c17 = arith.constant 17 : index
  %c256 = arith.constant 256 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %sh = llvm.mlir.addressof @tile8 : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %v2 = arith.addf %v, %v : f32
  %q = llvm.getelementptr %shp[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v2, %q : f32, !llvm.ptr
  gpu.barrier
  %c = arith.remui %tid, %c16 : index
  %w = arith.divui %tid, %c16 : index
  %base = arith.muli %bid, %c256 : index
  %row = arith.muli %c, %c17 : index
  %k0 = arith.constant 0 : index
  %r0 = arith.addi %w, %k0 : index
  %rot0 = arith.addi %r0, %c : index
  %m0 = arith.remui %rot0, %c16 : index
  %s0 = arith.addi %row, %m0 : index
  %si0 = arith.index_cast %s0 : index to i64
  %sp0 = llvm.getelementptr %shp[%si0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x0 = llvm.load %sp0 : !llvm.ptr -> f32
  %ro0 = arith.muli %r0, %c16 : index
  %dr0 = arith.addi %base, %ro0 : index
  %d0 = arith.addi %dr0, %c : index
  %di0 = arith.index_cast %d0 : index to i64
  %dp0 = llvm.getelementptr %out[%di0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x0, %dp0 : f32, !llvm.ptr
  %k1 = arith.constant 4 : index
  %r1 = arith.addi %w, %k1 : index
  %rot1 = arith.addi %r1, %c : index
  %m1 = arith.remui %rot1, %c16 : index
  %s1 = arith.addi %row, %m1 : index
  %si1 = arith.index_cast %s1 : index to i64
  %sp1 = llvm.getelementptr %shp[%si1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x1 = llvm.load %sp1 : !llvm.ptr -> f32
  %ro1 = arith.muli %r1, %c16 : index
  %dr1 = arith.addi %base, %ro1 : index
  %d1 = arith.addi %dr1, %c : index
  %di1 = arith.index_cast %d1 : index to i64
  %dp1 = llvm.getelementptr %out[%di1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x1, %dp1 : f32, !llvm.ptr
  return
}

// -----

// A transpose's two phases, a tile copied from the input into shared
// memory with its rows rotated (row r's element j to (j + r) mod 16; as
// a swizzle does; here a loop of 4 steps), then written to the output's
// rows from the tile's columns, rotated back: with nothing else reading
// the tile and the input only read, one transposing write straight from
// the input (matchDirectWrite): each square's rows are whole input rows
// (16 apart), loaded as they are -- no rotation shuffles, no tile -- in
// a loop over squares (one here: 16 x 16 f32), the rounds as in
// @transposing_write, 16 vector stores of the output's rows.
// CHECK-LABEL: func.func @direct_write
// CHECK-SAME: (%[[IN:[^:]*]]: !llvm.ptr, %[[OUT:[^:]*]]: !llvm.ptr,
// CHECK-NOT:   llvm.store
// CHECK:       %[[INB:.*]] = llvm.getelementptr %[[IN]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:       %[[OUTB:.*]] = llvm.getelementptr %[[OUT]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:       %[[SRC:.*]] = llvm.getelementptr %[[INB]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:       %[[DST:.*]] = llvm.getelementptr %[[OUTB]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:       scf.for %[[S:.*]] = %c0{{.*}} to %c1{{.*}} step %c1{{.*}} {
// CHECK:         %[[FROM:.*]] = llvm.getelementptr %[[SRC]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[TO:.*]] = llvm.getelementptr %[[DST]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK:         %[[AT0:.*]] = llvm.getelementptr %[[FROM]][%{{.*}}]
// CHECK-NEXT:    %[[ROW0:.*]] = llvm.load %[[AT0]] {alignment = 4 : i64} : !llvm.ptr -> vector<16xi32>
// CHECK-NEXT:    %[[C16:.*]] = llvm.mlir.constant(16 : i64) : i64
// CHECK-NEXT:    %[[AT1:.*]] = llvm.getelementptr %[[FROM]][%[[C16]]]
// CHECK-NEXT:    llvm.load %[[AT1]] {alignment = 4 : i64} : !llvm.ptr -> vector<16xi32>
// CHECK-COUNT-14: llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xi32>
// CHECK-NOT:     llvm.shufflevector
// CHECK:         %[[T:.*]]:16 = scf.for %{{.*}} = %c0{{.*}} to %c4{{.*}} step %c1{{.*}} iter_args(%[[A0:.*]] = %[[ROW0]],
// CHECK-COUNT-16: llvm.shufflevector
// CHECK-NEXT:      scf.yield
// CHECK:         %[[AT:.*]] = llvm.getelementptr %[[TO]][%{{.*}}]
// CHECK-NEXT:    llvm.store %[[T]]#0, %[[AT]] {alignment = 4 : i64} : vector<16xi32>, !llvm.ptr
// CHECK-COUNT-15: llvm.store %[[T]]#{{[0-9]+}}, %{{.*}} {alignment = 4 : i64} : vector<16xi32>, !llvm.ptr
// CHECK-NEXT:  } {loop_annotation = #{{.*}}}
// CHECK-NOT:   llvm.store
// CHECK:       return
// Without transposing writes the tile is written (the permuting copy's
// vectors) and read back element by element.
// ELEMENTS-LABEL: func.func @direct_write(
// ELEMENTS:       llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<16xi32>, !llvm.ptr
// ELEMENTS:       llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// ELEMENTS:       return
llvm.mlir.global private @tile_in() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<272 x f32>
func.func @direct_write(%in: !llvm.ptr, %out: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c17 = arith.constant 17 : index
  %c256 = arith.constant 256 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %sh = llvm.mlir.addressof @tile_in : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %base = arith.muli %bid, %c256 : index
  scf.for %step = %c0 to %c4 step %c1 {
    %j = arith.remui %tid, %c16 : index
    %w = arith.divui %tid, %c16 : index
    %s4 = arith.muli %step, %c4 : index
    %r = arith.addi %w, %s4 : index
    %rowin = arith.muli %r, %c16 : index
    %a = arith.addi %base, %rowin : index
    %src = arith.addi %a, %j : index
    %si = arith.index_cast %src : index to i64
    %sp = llvm.getelementptr %in[%si] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %sp : !llvm.ptr -> f32
    %jr = arith.addi %j, %r : index
    %rot = arith.remui %jr, %c16 : index
    %rowt = arith.muli %r, %c17 : index
    %dst = arith.addi %rowt, %rot : index
    %di = arith.index_cast %dst : index to i64
    %dp = llvm.getelementptr %shp[%di] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %x, %dp : f32, !llvm.ptr
  }
  gpu.barrier
  %c = arith.remui %tid, %c16 : index
  %w = arith.divui %tid, %c16 : index
  %row = arith.muli %c, %c17 : index
  %k0 = arith.constant 0 : index
  %r0 = arith.addi %w, %k0 : index
  %rot0 = arith.addi %r0, %c : index
  %m0 = arith.remui %rot0, %c16 : index
  %s0 = arith.addi %row, %m0 : index
  %si0 = arith.index_cast %s0 : index to i64
  %sp0 = llvm.getelementptr %shp[%si0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x0 = llvm.load %sp0 : !llvm.ptr -> f32
  %ro0 = arith.muli %r0, %c16 : index
  %dr0 = arith.addi %base, %ro0 : index
  %d0 = arith.addi %dr0, %c : index
  %di0 = arith.index_cast %d0 : index to i64
  %dp0 = llvm.getelementptr %out[%di0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x0, %dp0 : f32, !llvm.ptr
  %k1 = arith.constant 4 : index
  %r1 = arith.addi %w, %k1 : index
  %rot1 = arith.addi %r1, %c : index
  %m1 = arith.remui %rot1, %c16 : index
  %s1 = arith.addi %row, %m1 : index
  %si1 = arith.index_cast %s1 : index to i64
  %sp1 = llvm.getelementptr %shp[%si1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x1 = llvm.load %sp1 : !llvm.ptr -> f32
  %ro1 = arith.muli %r1, %c16 : index
  %dr1 = arith.addi %base, %ro1 : index
  %d1 = arith.addi %dr1, %c : index
  %di1 = arith.index_cast %d1 : index to i64
  %dp1 = llvm.getelementptr %out[%di1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x1, %dp1 : f32, !llvm.ptr
  %k2 = arith.constant 8 : index
  %r2 = arith.addi %w, %k2 : index
  %rot2 = arith.addi %r2, %c : index
  %m2 = arith.remui %rot2, %c16 : index
  %s2 = arith.addi %row, %m2 : index
  %si2 = arith.index_cast %s2 : index to i64
  %sp2 = llvm.getelementptr %shp[%si2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x2 = llvm.load %sp2 : !llvm.ptr -> f32
  %ro2 = arith.muli %r2, %c16 : index
  %dr2 = arith.addi %base, %ro2 : index
  %d2 = arith.addi %dr2, %c : index
  %di2 = arith.index_cast %d2 : index to i64
  %dp2 = llvm.getelementptr %out[%di2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x2, %dp2 : f32, !llvm.ptr
  %k3 = arith.constant 12 : index
  %r3 = arith.addi %w, %k3 : index
  %rot3 = arith.addi %r3, %c : index
  %m3 = arith.remui %rot3, %c16 : index
  %s3 = arith.addi %row, %m3 : index
  %si3 = arith.index_cast %s3 : index to i64
  %sp3 = llvm.getelementptr %shp[%si3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x3 = llvm.load %sp3 : !llvm.ptr -> f32
  %ro3 = arith.muli %r3, %c16 : index
  %dr3 = arith.addi %base, %ro3 : index
  %d3 = arith.addi %dr3, %c : index
  %di3 = arith.index_cast %d3 : index to i64
  %dp3 = llvm.getelementptr %out[%di3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x3, %dp3 : f32, !llvm.ptr
  return
}

// -----

// The same with the tile read again by a third phase: it is written (a
// permuting copy's vector stores), then transposed from there.
// CHECK-LABEL: func.func @direct_write_tile_read_again
// CHECK:       @direct_write_tile_read_again_rotations0
// CHECK:       llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<16xi32>, !llvm.ptr
// CHECK:       llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK:       return
llvm.mlir.global private @tile_again() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<272 x f32>
func.func @direct_write_tile_read_again(%in: !llvm.ptr, %out: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c17 = arith.constant 17 : index
  %c256 = arith.constant 256 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %sh = llvm.mlir.addressof @tile_again : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %base = arith.muli %bid, %c256 : index
  scf.for %step = %c0 to %c4 step %c1 {
    %j = arith.remui %tid, %c16 : index
    %w = arith.divui %tid, %c16 : index
    %s4 = arith.muli %step, %c4 : index
    %r = arith.addi %w, %s4 : index
    %rowin = arith.muli %r, %c16 : index
    %a = arith.addi %base, %rowin : index
    %src = arith.addi %a, %j : index
    %si = arith.index_cast %src : index to i64
    %sp = llvm.getelementptr %in[%si] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %sp : !llvm.ptr -> f32
    %jr = arith.addi %j, %r : index
    %rot = arith.remui %jr, %c16 : index
    %rowt = arith.muli %r, %c17 : index
    %dst = arith.addi %rowt, %rot : index
    %di = arith.index_cast %dst : index to i64
    %dp = llvm.getelementptr %shp[%di] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %x, %dp : f32, !llvm.ptr
  }
  gpu.barrier
  %c = arith.remui %tid, %c16 : index
  %w = arith.divui %tid, %c16 : index
  %row = arith.muli %c, %c17 : index
  %k0 = arith.constant 0 : index
  %r0 = arith.addi %w, %k0 : index
  %rot0 = arith.addi %r0, %c : index
  %m0 = arith.remui %rot0, %c16 : index
  %s0 = arith.addi %row, %m0 : index
  %si0 = arith.index_cast %s0 : index to i64
  %sp0 = llvm.getelementptr %shp[%si0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x0 = llvm.load %sp0 : !llvm.ptr -> f32
  %ro0 = arith.muli %r0, %c16 : index
  %dr0 = arith.addi %base, %ro0 : index
  %d0 = arith.addi %dr0, %c : index
  %di0 = arith.index_cast %d0 : index to i64
  %dp0 = llvm.getelementptr %out[%di0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x0, %dp0 : f32, !llvm.ptr
  %k1 = arith.constant 4 : index
  %r1 = arith.addi %w, %k1 : index
  %rot1 = arith.addi %r1, %c : index
  %m1 = arith.remui %rot1, %c16 : index
  %s1 = arith.addi %row, %m1 : index
  %si1 = arith.index_cast %s1 : index to i64
  %sp1 = llvm.getelementptr %shp[%si1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x1 = llvm.load %sp1 : !llvm.ptr -> f32
  %ro1 = arith.muli %r1, %c16 : index
  %dr1 = arith.addi %base, %ro1 : index
  %d1 = arith.addi %dr1, %c : index
  %di1 = arith.index_cast %d1 : index to i64
  %dp1 = llvm.getelementptr %out[%di1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x1, %dp1 : f32, !llvm.ptr
  %k2 = arith.constant 8 : index
  %r2 = arith.addi %w, %k2 : index
  %rot2 = arith.addi %r2, %c : index
  %m2 = arith.remui %rot2, %c16 : index
  %s2 = arith.addi %row, %m2 : index
  %si2 = arith.index_cast %s2 : index to i64
  %sp2 = llvm.getelementptr %shp[%si2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x2 = llvm.load %sp2 : !llvm.ptr -> f32
  %ro2 = arith.muli %r2, %c16 : index
  %dr2 = arith.addi %base, %ro2 : index
  %d2 = arith.addi %dr2, %c : index
  %di2 = arith.index_cast %d2 : index to i64
  %dp2 = llvm.getelementptr %out[%di2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x2, %dp2 : f32, !llvm.ptr
  %k3 = arith.constant 12 : index
  %r3 = arith.addi %w, %k3 : index
  %rot3 = arith.addi %r3, %c : index
  %m3 = arith.remui %rot3, %c16 : index
  %s3 = arith.addi %row, %m3 : index
  %si3 = arith.index_cast %s3 : index to i64
  %sp3 = llvm.getelementptr %shp[%si3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x3 = llvm.load %sp3 : !llvm.ptr -> f32
  %ro3 = arith.muli %r3, %c16 : index
  %dr3 = arith.addi %base, %ro3 : index
  %d3 = arith.addi %dr3, %c : index
  %di3 = arith.index_cast %d3 : index to i64
  %dp3 = llvm.getelementptr %out[%di3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x3, %dp3 : f32, !llvm.ptr
  gpu.barrier
  %t = arith.index_cast %tid : index to i64
  %q = llvm.getelementptr %shp[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %y = llvm.load %q : !llvm.ptr -> f32
  %o = llvm.getelementptr %out[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %y, %o : f32, !llvm.ptr
  return
}

// -----

// The same with the input written too (an in-place buffer XLA would not
// give a transpose; a later phase's store here): the tile keeps the copy.
// CHECK-LABEL: func.func @direct_write_of_a_written_input
// CHECK:       @direct_write_of_a_written_input_rotations0
// CHECK:       llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<16xi32>, !llvm.ptr
// CHECK:       return
llvm.mlir.global private @tile_inplace() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<272 x f32>
func.func @direct_write_of_a_written_input(%in: !llvm.ptr, %out: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c17 = arith.constant 17 : index
  %c256 = arith.constant 256 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %sh = llvm.mlir.addressof @tile_inplace : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %base = arith.muli %bid, %c256 : index
  scf.for %step = %c0 to %c4 step %c1 {
    %j = arith.remui %tid, %c16 : index
    %w = arith.divui %tid, %c16 : index
    %s4 = arith.muli %step, %c4 : index
    %r = arith.addi %w, %s4 : index
    %rowin = arith.muli %r, %c16 : index
    %a = arith.addi %base, %rowin : index
    %src = arith.addi %a, %j : index
    %si = arith.index_cast %src : index to i64
    %sp = llvm.getelementptr %in[%si] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %sp : !llvm.ptr -> f32
    %jr = arith.addi %j, %r : index
    %rot = arith.remui %jr, %c16 : index
    %rowt = arith.muli %r, %c17 : index
    %dst = arith.addi %rowt, %rot : index
    %di = arith.index_cast %dst : index to i64
    %dp = llvm.getelementptr %shp[%di] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %x, %dp : f32, !llvm.ptr
  }
  gpu.barrier
  %c = arith.remui %tid, %c16 : index
  %w = arith.divui %tid, %c16 : index
  %row = arith.muli %c, %c17 : index
  %k0 = arith.constant 0 : index
  %r0 = arith.addi %w, %k0 : index
  %rot0 = arith.addi %r0, %c : index
  %m0 = arith.remui %rot0, %c16 : index
  %s0 = arith.addi %row, %m0 : index
  %si0 = arith.index_cast %s0 : index to i64
  %sp0 = llvm.getelementptr %shp[%si0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x0 = llvm.load %sp0 : !llvm.ptr -> f32
  %ro0 = arith.muli %r0, %c16 : index
  %dr0 = arith.addi %base, %ro0 : index
  %d0 = arith.addi %dr0, %c : index
  %di0 = arith.index_cast %d0 : index to i64
  %dp0 = llvm.getelementptr %out[%di0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x0, %dp0 : f32, !llvm.ptr
  %k1 = arith.constant 4 : index
  %r1 = arith.addi %w, %k1 : index
  %rot1 = arith.addi %r1, %c : index
  %m1 = arith.remui %rot1, %c16 : index
  %s1 = arith.addi %row, %m1 : index
  %si1 = arith.index_cast %s1 : index to i64
  %sp1 = llvm.getelementptr %shp[%si1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x1 = llvm.load %sp1 : !llvm.ptr -> f32
  %ro1 = arith.muli %r1, %c16 : index
  %dr1 = arith.addi %base, %ro1 : index
  %d1 = arith.addi %dr1, %c : index
  %di1 = arith.index_cast %d1 : index to i64
  %dp1 = llvm.getelementptr %out[%di1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x1, %dp1 : f32, !llvm.ptr
  %k2 = arith.constant 8 : index
  %r2 = arith.addi %w, %k2 : index
  %rot2 = arith.addi %r2, %c : index
  %m2 = arith.remui %rot2, %c16 : index
  %s2 = arith.addi %row, %m2 : index
  %si2 = arith.index_cast %s2 : index to i64
  %sp2 = llvm.getelementptr %shp[%si2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x2 = llvm.load %sp2 : !llvm.ptr -> f32
  %ro2 = arith.muli %r2, %c16 : index
  %dr2 = arith.addi %base, %ro2 : index
  %d2 = arith.addi %dr2, %c : index
  %di2 = arith.index_cast %d2 : index to i64
  %dp2 = llvm.getelementptr %out[%di2] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x2, %dp2 : f32, !llvm.ptr
  %k3 = arith.constant 12 : index
  %r3 = arith.addi %w, %k3 : index
  %rot3 = arith.addi %r3, %c : index
  %m3 = arith.remui %rot3, %c16 : index
  %s3 = arith.addi %row, %m3 : index
  %si3 = arith.index_cast %s3 : index to i64
  %sp3 = llvm.getelementptr %shp[%si3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x3 = llvm.load %sp3 : !llvm.ptr -> f32
  %ro3 = arith.muli %r3, %c16 : index
  %dr3 = arith.addi %base, %ro3 : index
  %d3 = arith.addi %dr3, %c : index
  %di3 = arith.index_cast %d3 : index to i64
  %dp3 = llvm.getelementptr %out[%di3] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x3, %dp3 : f32, !llvm.ptr
  gpu.barrier
  %t = arith.index_cast %tid : index to i64
  %z = arith.constant 0.0 : f32
  %ip = llvm.getelementptr %in[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %z, %ip : f32, !llvm.ptr
  return
}

// -----

// A first phase (a loop of steps, run interchanged) that copies rows from
// global memory into shared memory, each row rotated (row r's element j
// to (j + r) mod 32, as a swizzle does): tile element p of row r from
// source element (p + s) mod 32, s = (32 - r) mod 32, whole 32-bit words.
// The rows run in loops by s mod 16 (c), each row's index and s div 16
// (a) from a constant table (row 0: c = 0; row 15: c = 1; ... row 1:
// c = 15): a loop's rows load their source row's two vectors of 16 in
// the order a decides and store, for c = 0, them as they are, else two
// shuffles by the same mask [c, ..., c + 15].
// CHECK:       llvm.mlir.global private constant @permuting_copy_rotations0(dense<[0, 0, 15, 1, 14, 1, 13, 1, 12, 1, 11, 1, 10, 1, 9, 1, 8, 1, 7, 1, 6, 1, 5, 1, 4, 1, 3, 1, 2, 1, 1, 1]> : tensor<32xi32>)
// CHECK-LABEL: func.func @permuting_copy
// CHECK-NOT:   llvm.load %{{.*}} -> f32
// CHECK:       %[[T:.*]] = llvm.mlir.addressof @permuting_copy_rotations0
// CHECK:       scf.for %[[I:.*]] = %c0{{.*}} to %c1{{.*}} step %c1{{.*}} {
// CHECK:         llvm.getelementptr %[[T]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK:         %[[A0:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xi32>
// CHECK:         %[[B0:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xi32>
// CHECK-NOT:     llvm.shufflevector
// CHECK:         llvm.store %[[A0]], %{{.*}} {alignment = 4 : i64} : vector<16xi32>, !llvm.ptr
// CHECK-NOT:     llvm.shufflevector
// CHECK:         llvm.store %[[B0]], %{{.*}} {alignment = 4 : i64} : vector<16xi32>, !llvm.ptr
// CHECK-NEXT:  } {loop_annotation = #{{.*}}}
// CHECK:       scf.for %{{.*}} = %c1{{.*}} to %c2{{.*}} step %c1{{.*}} {
// CHECK:         %[[A1:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xi32>
// CHECK:         %[[B1:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<16xi32>
// CHECK:         %[[S0:.*]] = llvm.shufflevector %[[A1]], %[[B1]] [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
// CHECK:         llvm.store %[[S0]]
// CHECK:         %[[S1:.*]] = llvm.shufflevector %[[B1]], %[[A1]] [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
// CHECK:         llvm.store %[[S1]]
// CHECK-NEXT:  } {loop_annotation = #{{.*}}}
// CHECK-COUNT-28: llvm.shufflevector %{{.*}}, %{{.*}} [{{.*}}] : vector<16xi32>
// CHECK-NOT:   llvm.shufflevector
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step
// CHECK:       llvm.load %{{.*}} : !llvm.ptr -> f32
llvm.mlir.global private @rotated() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<512 x f32>
func.func @permuting_copy(%in: !llvm.ptr, %out: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c512 = arith.constant 512 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %sh = llvm.mlir.addressof @rotated : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  scf.for %step = %c0 to %c8 step %c1 {
    %j = arith.remui %tid, %c32 : index
    %w = arith.divui %tid, %c32 : index
    %s2 = arith.muli %step, %c2 : index
    %r = arith.addi %w, %s2 : index
    %rowin = arith.muli %r, %c32 : index
    %base = arith.muli %bid, %c512 : index
    %a = arith.addi %base, %rowin : index
    %src = arith.addi %a, %j : index
    %si = arith.index_cast %src : index to i64
    %sp = llvm.getelementptr %in[%si] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %sp : !llvm.ptr -> f32
    %jr = arith.addi %j, %r : index
    %rot = arith.remui %jr, %c32 : index
    %dst = arith.addi %rowin, %rot : index
    %di = arith.index_cast %dst : index to i64
    %dp = llvm.getelementptr %shp[%di] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %x, %dp : f32, !llvm.ptr
  }
  gpu.barrier
  %t = arith.index_cast %tid : index to i64
  %q = llvm.getelementptr %shp[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %y = llvm.load %q : !llvm.ptr -> f32
  %y2 = arith.addf %y, %y : f32
  %o = llvm.getelementptr %out[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %y2, %o : f32, !llvm.ptr
  return
}

// -----

// The same rotation of rows of 32 16-bit elements: odd rows rotate by
// halves of words, so each row is copied unrolled, one 512-bit vector a
// row -- a load where it runs in order (row 0), else a shuffle of it (row
// 1: [31, 0, ..., 30]) -- and no table.
// CHECK-NOT:   @permuting_copy_halves_rotations
// CHECK-LABEL: func.func @permuting_copy_halves
// CHECK-NOT:   llvm.load %{{.*}} -> i16
// CHECK:       %[[R0:.*]] = llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr -> vector<32xi16>
// CHECK-NEXT:  llvm.mlir.constant
// CHECK-NEXT:  llvm.getelementptr
// CHECK-NEXT:  llvm.store %[[R0]], %{{.*}} {alignment = 2 : i64} : vector<32xi16>, !llvm.ptr
// CHECK:       %[[R1:.*]] = llvm.load %{{.*}} {alignment = 2 : i64} : !llvm.ptr -> vector<32xi16>
// CHECK-NEXT:  %[[V1:.*]] = llvm.shufflevector %[[R1]], %[[R1]] [31, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30]
// CHECK:       llvm.store %[[V1]], %{{.*}} {alignment = 2 : i64} : vector<32xi16>, !llvm.ptr
// CHECK-COUNT-14: llvm.shufflevector %{{.*}}, %{{.*}} [{{.*}}] : vector<32xi16>
// CHECK-NOT:   llvm.shufflevector
// CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step
// CHECK:       llvm.load %{{.*}} : !llvm.ptr -> i16
llvm.mlir.global private @rotated_halves() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<512 x i16>
func.func @permuting_copy_halves(%in: !llvm.ptr, %out: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c512 = arith.constant 512 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %sh = llvm.mlir.addressof @rotated_halves : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  scf.for %step = %c0 to %c8 step %c1 {
    %j = arith.remui %tid, %c32 : index
    %w = arith.divui %tid, %c32 : index
    %s2 = arith.muli %step, %c2 : index
    %r = arith.addi %w, %s2 : index
    %rowin = arith.muli %r, %c32 : index
    %base = arith.muli %bid, %c512 : index
    %a = arith.addi %base, %rowin : index
    %src = arith.addi %a, %j : index
    %si = arith.index_cast %src : index to i64
    %sp = llvm.getelementptr %in[%si] : (!llvm.ptr, i64) -> !llvm.ptr, i16
    %x = llvm.load %sp : !llvm.ptr -> i16
    %jr = arith.addi %j, %r : index
    %rot = arith.remui %jr, %c32 : index
    %dst = arith.addi %rowin, %rot : index
    %di = arith.index_cast %dst : index to i64
    %dp = llvm.getelementptr %shp[%di] : (!llvm.ptr, i64) -> !llvm.ptr, i16
    llvm.store %x, %dp : i16, !llvm.ptr
  }
  gpu.barrier
  %t = arith.index_cast %tid : index to i64
  %q = llvm.getelementptr %shp[%t] : (!llvm.ptr, i64) -> !llvm.ptr, i16
  %y = llvm.load %q : !llvm.ptr -> i16
  %y2 = arith.addi %y, %y : i16
  %o = llvm.getelementptr %out[%t] : (!llvm.ptr, i64) -> !llvm.ptr, i16
  llvm.store %y2, %o : i16, !llvm.ptr
  return
}

// -----

// The stores to the kernel's buffers sink to the end of the lane loop's
// body, past the loads of inputs (invariant) and the arithmetic after them:
// a load 4096 elements on must not wait on a store whose address matches
// it in the low 12 bits ("4K aliasing").
// CHECK-LABEL: func.func @sink_stores
// CHECK:       scf.for
// CHECK:       scf.for
// CHECK:         %[[V:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr -> f32
// CHECK:         %[[W:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr -> f32
// CHECK:         %[[X:.*]] = llvm.fadd %[[W]], %[[V]] : f32
// CHECK:         %[[O2:.*]] = llvm.getelementptr %{{.*}}[%{{.*}}]
// CHECK-NEXT:    llvm.store %[[V]], %{{.*}} : f32, !llvm.ptr
// CHECK-NEXT:    llvm.store %[[X]], %[[O2]] : f32, !llvm.ptr
// CHECK-NEXT:  } {loop_annotation
func.func @sink_stores(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c4096 = llvm.mlir.constant(4096 : i64) : i64
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p invariant : !llvm.ptr -> f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  %j = llvm.add %i, %c4096 : i64
  %p2 = llvm.getelementptr %in[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %w = llvm.load %p2 invariant : !llvm.ptr -> f32
  %x = llvm.fadd %w, %v : f32
  %o2 = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x, %o2 : f32, !llvm.ptr
  return
}

// -----

// A body that reads back a kernel buffer keeps its order (sub-byte
// elements store a byte, load it and store it again).
// CHECK-LABEL: func.func @read_back
// CHECK:         %[[V:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr -> f32
// CHECK:         %[[O:.*]] = llvm.getelementptr
// CHECK-NEXT:    llvm.store %[[V]], %[[O]] : f32, !llvm.ptr
// CHECK:         llvm.load %{{.*}} invariant : !llvm.ptr -> f32
// CHECK-NEXT:    llvm.load %[[O]] : !llvm.ptr -> f32
func.func @read_back(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c4096 = llvm.mlir.constant(4096 : i64) : i64
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p invariant : !llvm.ptr -> f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  %j = llvm.add %i, %c4096 : i64
  %p2 = llvm.getelementptr %in[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %w = llvm.load %p2 invariant : !llvm.ptr -> f32
  %b = llvm.load %o : !llvm.ptr -> f32
  %x = llvm.fadd %w, %b : f32
  %o2 = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x, %o2 : f32, !llvm.ptr
  return
}

// -----

// A lane loop whose steps each sit behind a guard the same for every lane
// (a tile's row bound) runs in two versions: where every guard holds, a
// copy without them (LLVM vectorizes it plainly); else the loop as it was,
// scalar (the edge tiles). The guards' conditions, computed in the loop,
// go before it.
// CHECK:       // -----
// CHECK-DAG:   #[[$NO_VEC:.*]] = #llvm.loop_vectorize<disable = true>
// CHECK-DAG:   #[[$SCALAR:.*]] = #llvm.loop_annotation<vectorize = #[[$NO_VEC]], unroll = #{{.*}}>
// CHECK-LABEL: func.func @row_guards
// CHECK:         %[[OK0:.*]] = arith.andi %{{.*}}, %true
// CHECK:         %[[OK1:.*]] = arith.andi %{{.*}}, %true
// CHECK:         %[[ALL:.*]] = arith.andi %[[OK0]], %[[OK1]] : i1
// CHECK:         scf.if %[[ALL]] {
// CHECK:           scf.for
// CHECK-NOT:         scf.if
// CHECK:             llvm.store
// CHECK-NEXT:        llvm.store
// CHECK-NEXT:      } {loop_annotation = #[[$LANES:.*]]}
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.for
// CHECK-NEXT:        scf.if %[[OK0]] {
// CHECK:             scf.if %[[OK1]] {
// CHECK:           } {loop_annotation = #[[$SCALAR]]}
func.func @row_guards(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %c32 = arith.constant 32 : index
  %c100 = arith.constant 100 : index
  %true = arith.constant true
  %row = arith.muli %bid, %c32 : index
  %row2 = arith.addi %row, %c32 : index
  %ok0 = arith.cmpi slt, %row, %c100 : index
  %ok1 = arith.cmpi slt, %row2, %c100 : index
  %g0 = arith.andi %ok0, %true : i1
  scf.if %g0 {
    %e = arith.addi %row, %tid : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p invariant : !llvm.ptr -> f32
    %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %v, %o : f32, !llvm.ptr
  }
  %g1 = arith.andi %ok1, %true : i1
  scf.if %g1 {
    %e = arith.addi %row2, %tid : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p invariant : !llvm.ptr -> f32
    %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %v, %o : f32, !llvm.ptr
  }
  return
}

// -----

// A step outside every guard: no versions (the slow one would run it
// scalar where the guards fail).
// CHECK-LABEL: func.func @unguarded_step
// CHECK-NOT:     arith.andi %{{.*}}, %{{.*}} : i1
// CHECK:         scf.for
// CHECK:           llvm.store
// CHECK:           scf.if
// CHECK-NOT:     } else {
func.func @unguarded_step(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %c32 = arith.constant 32 : index
  %c100 = arith.constant 100 : index
  %row = arith.muli %bid, %c32 : index
  %row2 = arith.addi %row, %c32 : index
  %ok1 = arith.cmpi slt, %row2, %c100 : index
  %e0 = arith.addi %row, %tid : index
  %i0 = arith.index_cast %e0 : index to i64
  %p0 = llvm.getelementptr %in[%i0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v0 = llvm.load %p0 invariant : !llvm.ptr -> f32
  %o0 = llvm.getelementptr %out[%i0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v0, %o0 : f32, !llvm.ptr
  scf.if %ok1 {
    %e = arith.addi %row2, %tid : index
    %i = arith.index_cast %e : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p invariant : !llvm.ptr -> f32
    %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %v, %o : f32, !llvm.ptr
  }
  return
}

// -----

// A pred value used across a barrier lives in its slots a byte a thread
// (LLVM's vectorizer leaves a lane loop of i1 loads and stores scalar):
// extended to i8 where stored, truncated where read back.
// CHECK-LABEL: func.func @pred_slots
// CHECK-DAG: %[[SPILL:.*]] = llvm.alloca %{{.*}} x i8 {alignment = 16 : i64} : (i64) -> !llvm.ptr
// CHECK-NOT: x i1
// CHECK: %[[C:.*]] = arith.cmpf ogt
// CHECK: %[[BYTE:.*]] = arith.extui %[[C]] : i1 to i8
// CHECK: llvm.store %[[BYTE]], %{{.*}} : i8, !llvm.ptr
// CHECK: %[[LOADED:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i8
// CHECK: %[[BACK:.*]] = arith.trunci %[[LOADED]] : i8 to i1
// CHECK: arith.select %[[BACK]]
llvm.mlir.global private @shared_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<64 x f32>
func.func @pred_slots(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3 : index]}
  %sh = llvm.mlir.addressof @shared_0 : !llvm.ptr<3>
  %shp = llvm.addrspacecast %sh : !llvm.ptr<3> to !llvm.ptr
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %zero = arith.constant 0.0 : f32
  %c = arith.cmpf ogt, %v, %zero : f32
  %q = llvm.getelementptr %shp[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %q : f32, !llvm.ptr
  gpu.barrier
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %w = llvm.load %q : !llvm.ptr -> f32
  %r = arith.select %c, %w, %zero : f32
  llvm.store %r, %o : f32, !llvm.ptr
  return
}

// -----

// A scatter's update of sorted indices (xla.indices_are_sorted): in an
// exclusive launch the loops carry the address last updated and its value
// (from a slot of the function's own, so that the first run's end stores
// there), an update of another address stores the value and loads the new
// address's, the add is the plain update's; after the loops the last value
// is stored. Not exclusive, the update stays atomic, the carried pair as
// it was.
// CHECK-LABEL: func.func @sorted_runs
// CHECK-SAME: (%[[OUT:[^:]*]]: !llvm.ptr,
// CHECK:      %[[SLOT:.*]] = llvm.alloca %{{.*}} x f32 {alignment = 4 : i64}
// CHECK:      %[[EXCL:.*]] = arith.andi
// CHECK:      %[[ZERO:.*]] = llvm.mlir.zero : f32
// CHECK:      %[[LAST:.*]]:2 = scf.for %{{.*}} iter_args(%[[BAT:.*]] = %[[SLOT]], %[[BV:.*]] = %[[ZERO]]) -> (!llvm.ptr, f32) {
// CHECK:        scf.for %{{.*}} iter_args(%[[AT:.*]] = %[[BAT]], %[[V:.*]] = %[[BV]]) -> (!llvm.ptr, f32) {
// CHECK:          %[[X:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr -> f32
// CHECK:          %[[P:.*]] = llvm.getelementptr inbounds %[[OUT]]
// CHECK:          %[[U:.*]]:2 = scf.if %[[EXCL]] -> (!llvm.ptr, f32) {
// CHECK:            %[[NEW:.*]] = llvm.icmp "ne" %[[P]], %[[AT]] : !llvm.ptr
// CHECK:            %[[RUNS:.*]]:2 = scf.if %[[NEW]] -> (!llvm.ptr, f32) {
// CHECK:              llvm.store %[[V]], %[[AT]] {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK:              %[[OLD:.*]] = llvm.load %[[P]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:              scf.yield %[[P]], %[[OLD]] : !llvm.ptr, f32
// CHECK:            } else {
// CHECK:              scf.yield %[[AT]], %[[V]] : !llvm.ptr, f32
// CHECK:            %[[SUM:.*]] = llvm.fadd %[[RUNS]]#1, %[[X]] : f32
// CHECK:            scf.yield %[[RUNS]]#0, %[[SUM]] : !llvm.ptr, f32
// CHECK:          } else {
// CHECK:            llvm.atomicrmw fadd %[[P]], %[[X]]
// CHECK:            scf.yield %[[AT]], %[[V]] : !llvm.ptr, f32
// CHECK:          scf.yield %[[U]]#0, %[[U]]#1 : !llvm.ptr, f32
// CHECK:      llvm.store %[[LAST]]#1, %[[LAST]]#0 {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK-NEXT: return
func.func @sorted_runs(%out: !llvm.ptr, %ids: !llvm.ptr, %vals: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %c32 = arith.constant 32 : index
  %i0 = arith.muli %bid, %c32 : index
  %i = arith.addi %i0, %tid : index
  %i64 = arith.index_castui %i : index to i64
  %vp = llvm.getelementptr inbounds %vals[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %vp invariant : !llvm.ptr -> f32
  %ip = llvm.getelementptr inbounds %ids[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  %id = llvm.load %ip invariant : !llvm.ptr -> i32
  %id64 = llvm.zext %id : i32 to i64
  %op = llvm.getelementptr inbounds %out[%id64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %r = llvm.atomicrmw fadd %op, %v monotonic {alignment = 4 : i64, xla.indices_are_sorted} : !llvm.ptr, f32
  return
}

// -----

// A run is not carried where the nest reads the updated buffer elsewhere
// (the read would miss the carried value): the plain update.
// CHECK-LABEL: func.func @sorted_runs_read_back
// CHECK-NOT:  iter_args
// CHECK:      scf.if %{{.*}} -> (i32) {
// CHECK:        %[[OLD:.*]] = llvm.load
// CHECK:        llvm.add %[[OLD]]
// CHECK:        llvm.store
// CHECK:      } else {
// CHECK:        llvm.atomicrmw add
func.func @sorted_runs_read_back(%out: !llvm.ptr, %ids: !llvm.ptr, %seen: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %c32 = arith.constant 32 : index
  %i0 = arith.muli %bid, %c32 : index
  %i = arith.addi %i0, %tid : index
  %i64 = arith.index_castui %i : index to i64
  %ip = llvm.getelementptr inbounds %ids[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  %id = llvm.load %ip invariant : !llvm.ptr -> i32
  %id64 = llvm.zext %id : i32 to i64
  %op = llvm.getelementptr inbounds %out[%id64] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  %one = arith.constant 1 : i32
  %r = llvm.atomicrmw add %op, %one monotonic {alignment = 4 : i64, xla.indices_are_sorted} : !llvm.ptr, i32
  %first = llvm.getelementptr inbounds %out[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  %now = llvm.load %first : !llvm.ptr -> i32
  %sp = llvm.getelementptr inbounds %seen[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  llvm.store %now, %sp : i32, !llvm.ptr
  return
}

// -----

// The same for lower-tensors' compare-and-swap loop of a marked update (a
// max): the loop's first load and the loop go; an update of another
// address stores the carried bits and loads the new address's, and the
// loop's computation of its new bits runs on them; not exclusive, the load
// and the loop as they were.
// CHECK-LABEL: func.func @sorted_max_runs
// CHECK-SAME: (%[[OUT:[^:]*]]: !llvm.ptr,
// CHECK:      %[[SLOT:.*]] = llvm.alloca %{{.*}} x i32
// CHECK:      scf.for %{{.*}} iter_args(%{{.*}} = %[[SLOT]], %{{.*}} = %{{.*}}) -> (!llvm.ptr, i32) {
// CHECK:        scf.for %{{.*}} iter_args(%[[AT:.*]] = %{{.*}}, %[[V:.*]] = %{{.*}}) -> (!llvm.ptr, i32) {
// CHECK:          %[[P:.*]] = llvm.getelementptr inbounds %[[OUT]]
// CHECK:          scf.if %{{.*}} -> (!llvm.ptr, i32) {
// CHECK:            %[[NEW:.*]] = llvm.icmp "ne" %[[P]], %[[AT]] : !llvm.ptr
// CHECK:            %[[RUNS:.*]]:2 = scf.if %[[NEW]] -> (!llvm.ptr, i32) {
// CHECK:              llvm.store %[[V]], %[[AT]]
// CHECK:              %[[OLD:.*]] = llvm.load %[[P]] {{.*}} -> i32
// CHECK:              scf.yield %[[P]], %[[OLD]] : !llvm.ptr, i32
// CHECK:            } else {
// CHECK:              scf.yield %[[AT]], %[[V]] : !llvm.ptr, i32
// CHECK:            %[[F:.*]] = arith.bitcast %[[RUNS]]#1 : i32 to f32
// CHECK:            %[[M:.*]] = arith.maximumf %[[F]], %{{.*}} : f32
// CHECK:            %[[B:.*]] = arith.bitcast %[[M]] : f32 to i32
// CHECK:            scf.yield %[[RUNS]]#0, %[[B]] : !llvm.ptr, i32
// CHECK:          } else {
// CHECK:            llvm.load %[[P]]
// CHECK:            scf.while
// CHECK:              llvm.cmpxchg %[[P]]
// CHECK:      llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr
// CHECK-NEXT: return
func.func @sorted_max_runs(%out: !llvm.ptr, %ids: !llvm.ptr, %vals: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %c32 = arith.constant 32 : index
  %i0 = arith.muli %bid, %c32 : index
  %i = arith.addi %i0, %tid : index
  %i64 = arith.index_castui %i : index to i64
  %vp = llvm.getelementptr inbounds %vals[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %vp invariant : !llvm.ptr -> f32
  %ip = llvm.getelementptr inbounds %ids[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  %id = llvm.load %ip invariant : !llvm.ptr -> i32
  %id64 = llvm.zext %id : i32 to i64
  %op = llvm.getelementptr inbounds %out[%id64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %first = llvm.load %op : !llvm.ptr -> i32
  %true = arith.constant true
  %r = scf.while (%old = %first) : (i32) -> i32 {
    %f = arith.bitcast %old : i32 to f32
    %m = arith.maximumf %f, %v : f32
    %bits = arith.bitcast %m : f32 to i32
    %pair = llvm.cmpxchg %op, %old, %bits monotonic monotonic : !llvm.ptr, i32
    %seen = llvm.extractvalue %pair[0] : !llvm.struct<(i32, i1)>
    %ok = llvm.extractvalue %pair[1] : !llvm.struct<(i32, i1)>
    %retry = arith.xori %ok, %true : i1
    scf.condition(%retry) %seen : i32
  } do {
  ^bb0(%seen: i32):
    scf.yield %seen : i32
  } attributes {xla.indices_are_sorted}
  return
}

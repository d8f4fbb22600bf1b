// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-fold-loops-into-threads | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-fold-loops-into-threads -canonicalize \
// RUN:   | FileCheck %s --check-prefix=CANON

// The loop emitter's kernel (4 elements a thread, `th_x * 4 + unroll_id`)
// becomes 512 threads running the body once: thread t runs element t mod 4
// of old thread t floordiv 4, and canonicalization folds the two maps into
// the one that indexes with them.
#map = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d1 * 512 + d0 * 4 + s0), domain: d0 in [0, 127], d1 in [0, 15], s0 in [0, 3]">
func.func @loop(%in: tensor<8192xf32>, %out: tensor<8192xf32>) -> tensor<8192xf32>
    attributes {xla.launch_dims = {block_counts = array<i64: 16, 1, 1>,
                                   thread_counts_per_block = array<i64: 128, 1, 1>}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 15 : index]}
  %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%o = %out) -> (tensor<8192xf32>) {
    %i = xla_gpu.apply_indexing #map(%tid, %bid)[%k]
    %x = tensor.extract %in[%i] : tensor<8192xf32>
    %e = math.exp %x : f32
    %w = tensor.insert %e into %o[%i] : tensor<8192xf32>
    scf.yield %w : tensor<8192xf32>
  }
  return %r : tensor<8192xf32>
}
// CHECK-LABEL: func.func @loop
// CHECK-SAME:    xla.elements_per_thread = 4 : i64
// CHECK-SAME:    thread_counts_per_block = array<i64: 512, 1, 1>
// CHECK:         %[[T:.*]] = gpu.thread_id x {xla.range = [0 : index, 511 : index]}
// CHECK:         %[[OLD:.*]] = xla_gpu.apply_indexing #{{.*}}(%[[T]])
// CHECK:         %[[K:.*]] = xla_gpu.apply_indexing #{{.*}}(%[[T]])
// CHECK-NOT:     scf.for
// CHECK:         %[[I:.*]] = xla_gpu.apply_indexing #{{.*}}(%[[OLD]], %{{.*}})[%[[K]]]
// CHECK:         %[[X:.*]] = tensor.extract %{{.*}}[%[[I]]]
// CHECK:         %[[E:.*]] = math.exp %[[X]]
// CHECK:         %[[W:.*]] = tensor.insert %[[E]] into %{{.*}}[%[[I]]]
// CHECK:         return %[[W]]
// CANON:       #[[$LINEAR:.*]] = #xla_gpu.indexing_map<"(d0, d1) -> (d1 * 512 + d0), domain: d0 in [0, 511], d1 in [0, 15]">
// CANON-LABEL: func.func @loop
// CANON:         %[[T:.*]] = gpu.thread_id x
// CANON:         %[[B:.*]] = gpu.block_id x
// CANON:         xla_gpu.apply_indexing #[[$LINEAR]](%[[T]], %[[B]])

// -----

// A thread that reads what it wrote keeps its loop: its elements are not
// independent.
func.func @reads_its_output(%out: tensor<512xf32>) -> tensor<512xf32>
    attributes {xla.launch_dims = {block_counts = array<i64: 1, 1, 1>,
                                   thread_counts_per_block = array<i64: 128, 1, 1>}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%o = %out) -> (tensor<512xf32>) {
    %x = tensor.extract %o[%k] : tensor<512xf32>
    %w = tensor.insert %x into %o[%tid] : tensor<512xf32>
    scf.yield %w : tensor<512xf32>
  }
  return %r : tensor<512xf32>
}
// CHECK-LABEL: func.func @reads_its_output
// CHECK-SAME:    thread_counts_per_block = array<i64: 128, 1, 1>
// CHECK:         scf.for

// -----

// A barrier: threads see each other.
func.func @barrier(%in: tensor<512xf32>, %out: tensor<512xf32>) -> tensor<512xf32>
    attributes {xla.launch_dims = {block_counts = array<i64: 1, 1, 1>,
                                   thread_counts_per_block = array<i64: 128, 1, 1>}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%o = %out) -> (tensor<512xf32>) {
    %x = tensor.extract %in[%tid] : tensor<512xf32>
    gpu.barrier
    %w = tensor.insert %x into %o[%tid] : tensor<512xf32>
    scf.yield %w : tensor<512xf32>
  }
  return %r : tensor<512xf32>
}
// CHECK-LABEL: func.func @barrier
// CHECK-SAME:    thread_counts_per_block = array<i64: 128, 1, 1>
// CHECK:         scf.for

// -----

// Packed 4-bit elements: a thread writes whole bytes.
func.func @sub_byte(%in: tensor<512xi4>, %out: tensor<512xi4>) -> tensor<512xi4>
    attributes {xla.launch_dims = {block_counts = array<i64: 1, 1, 1>,
                                   thread_counts_per_block = array<i64: 256, 1, 1>}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 255 : index]}
  %r = scf.for %k = %c0 to %c2 step %c1 iter_args(%o = %out) -> (tensor<512xi4>) {
    %i = arith.addi %tid, %k : index
    %x = tensor.extract %in[%i] : tensor<512xi4>
    %w = tensor.insert %x into %o[%i] : tensor<512xi4>
    scf.yield %w : tensor<512xi4>
  }
  return %r : tensor<512xi4>
}
// CHECK-LABEL: func.func @sub_byte
// CHECK-SAME:    thread_counts_per_block = array<i64: 256, 1, 1>
// CHECK:         scf.for

// -----

// More than a GPU's 1024 threads a block once folded, up to 4096
// (kMaxFoldedThreadsPerBlock: the loop emitter's 4 a thread of 1024).
func.func @past_a_gpu_block(%in: tensor<8192xf32>, %out: tensor<8192xf32>) -> tensor<8192xf32>
    attributes {xla.launch_dims = {block_counts = array<i64: 1, 1, 1>,
                                   thread_counts_per_block = array<i64: 512, 1, 1>}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 511 : index]}
  %r = scf.for %k = %c0 to %c4 step %c1 iter_args(%o = %out) -> (tensor<8192xf32>) {
    %i = arith.addi %tid, %k : index
    %x = tensor.extract %in[%i] : tensor<8192xf32>
    %w = tensor.insert %x into %o[%i] : tensor<8192xf32>
    scf.yield %w : tensor<8192xf32>
  }
  return %r : tensor<8192xf32>
}
// CHECK-LABEL: func.func @past_a_gpu_block
// CHECK-SAME:    xla.elements_per_thread = 4
// CHECK-SAME:    thread_counts_per_block = array<i64: 2048, 1, 1>
// CHECK:         gpu.thread_id x {xla.range = [0 : index, 2047 : index]}
// CHECK-NOT:     scf.for
// CHECK:         return

// -----

// More than 4096 threads a block once folded.
func.func @too_many_threads(%in: tensor<8192xf32>, %out: tensor<8192xf32>) -> tensor<8192xf32>
    attributes {xla.launch_dims = {block_counts = array<i64: 1, 1, 1>,
                                   thread_counts_per_block = array<i64: 1024, 1, 1>}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %tid = gpu.thread_id x {xla.range = [0 : index, 1023 : index]}
  %r = scf.for %k = %c0 to %c5 step %c1 iter_args(%o = %out) -> (tensor<8192xf32>) {
    %i = arith.addi %tid, %k : index
    %x = tensor.extract %in[%i] : tensor<8192xf32>
    %w = tensor.insert %x into %o[%i] : tensor<8192xf32>
    scf.yield %w : tensor<8192xf32>
  }
  return %r : tensor<8192xf32>
}
// CHECK-LABEL: func.func @too_many_threads
// CHECK-SAME:    thread_counts_per_block = array<i64: 1024, 1, 1>
// CHECK:         scf.for

// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-tile-copies=remarks=true -verify-diagnostics | FileCheck %s

// Seed 004's round trip: a warp copies a 32x32 f32 tile global -> shared
// and back. vec 4 (16 bytes: 128-bit transfers), 1024 / (32 * 4) = 8
// rounds; round f, thread t moves elements [(f * 32 + t) * 4, + 4).
// CHECK-DAG: #[[$LINEAR:.*]] = #xla_gpu.indexing_map<"(d0, d1) -> ((d0 * 32 + d1) * 4), domain: d0 in [0, 7], d1 in [0, 31]">
// CHECK-LABEL: func.func @f32_round_trip(
// CHECK-SAME: %[[IN:[^:]*]]: tensor<32x32xf32>, %[[OUT:[^:]*]]: tensor<32x32xf32>
// CHECK:      %[[TID:.*]] = gpu.thread_id x
// CHECK:      %[[SHMEM:.*]] = xla_gpu.allocate_shared : tensor<32x32xf32>
// CHECK:      %[[C8:.*]] = arith.constant 8 : index
// CHECK:      %[[FILLED:.*]] = scf.for %[[F:.*]] = %{{.*}} to %[[C8]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[SHMEM]])
// CHECK:        %[[L:.*]] = xla_gpu.apply_indexing #[[$LINEAR]](%[[F]], %[[TID]])
// CHECK:        %[[S:.*]]:2 = xla_gpu.apply_indexing #{{.*}}(%[[L]],
// CHECK:        %[[D:.*]]:2 = xla_gpu.apply_indexing #{{.*}}(%[[L]],
// CHECK:        %[[V:.*]] = vector.transfer_read %[[IN]][%[[S]]#0, %[[S]]#1], %{{.*}} {in_bounds = [true]} : tensor<32x32xf32>, vector<4xf32>
// CHECK:        vector.transfer_write %[[V]], %[[ACC]][%[[D]]#0, %[[D]]#1] {in_bounds = [true]} : vector<4xf32>, tensor<32x32xf32>
// CHECK:      %[[SYNCED:.*]] = xla_gpu.sync_threads %[[FILLED]]
// CHECK:      scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[OUT]])
// CHECK:        vector.transfer_read %[[SYNCED]]{{.*}} vector<4xf32>
// CHECK:        vector.transfer_write {{.*}}, %[[ACC]]
// CHECK-NOT:  xla_gpu.copy_tile
func.func @f32_round_trip(%in: tensor<32x32xf32>, %out: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c0 = arith.constant 0 : index
  %shmem = xla_gpu.allocate_shared : tensor<32x32xf32>
  // expected-remark @below {{vectorized global -> shared copy: vec 4 (16 bytes), 8 rounds of 32 threads}}
  %filled = xla_gpu.copy_tile %in[%c0, %c0] [32, 32] to %shmem[%c0, %c0] [32, 32] thread %tid of 32 : tensor<32x32xf32> to tensor<32x32xf32>
  %synced = xla_gpu.sync_threads %filled : tensor<32x32xf32>
  // expected-remark @below {{vectorized shared -> global copy: vec 4 (16 bytes), 8 rounds of 32 threads}}
  %r = xla_gpu.copy_tile %synced[%c0, %c0] [32, 32] to %out[%c0, %c0] [32, 32] thread %tid of 32 : tensor<32x32xf32> to tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}

// -----

// The seed's table, f16: vec 8 (16 bytes), 4 rounds.
// CHECK-LABEL: func.func @f16_tile(
// CHECK: vector.transfer_read {{.*}} vector<8xf16>
func.func @f16_tile(%in: tensor<32x32xf16>) -> tensor<32x32xf16> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c0 = arith.constant 0 : index
  %shmem = xla_gpu.allocate_shared : tensor<32x32xf16>
  // expected-remark @below {{vectorized global -> shared copy: vec 8 (16 bytes), 4 rounds of 32 threads}}
  %filled = xla_gpu.copy_tile %in[%c0, %c0] [32, 32] to %shmem[%c0, %c0] [32, 32] thread %tid of 32 : tensor<32x32xf16> to tensor<32x32xf16>
  return %filled : tensor<32x32xf16>
}

// -----

// The seed's table, u8 (a signless i8, as XLA's emitters type it): vec 16
// (16 bytes), 2 rounds.
// CHECK-LABEL: func.func @u8_tile(
// CHECK: vector.transfer_read {{.*}} vector<16xi8>
func.func @u8_tile(%in: tensor<32x32xi8>) -> tensor<32x32xi8> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c0 = arith.constant 0 : index
  %shmem = xla_gpu.allocate_shared : tensor<32x32xi8>
  // expected-remark @below {{vectorized global -> shared copy: vec 16 (16 bytes), 2 rounds of 32 threads}}
  %filled = xla_gpu.copy_tile %in[%c0, %c0] [32, 32] to %shmem[%c0, %c0] [32, 32] thread %tid of 32 : tensor<32x32xi8> to tensor<32x32xi8>
  return %filled : tensor<32x32xi8>
}

// -----

// A block's tile of a larger tensor at an offset the block id decides
// (bl_x * 32 rows: aligned), 128 threads: vec 4, 2 rounds. A padded shared
// tile (rows of 33) aligns no vector: one element a transfer.
// CHECK-LABEL: func.func @offset_tile(
// CHECK: vector<4xf32>
// CHECK: vector<1xf32>
func.func @offset_tile(%in: tensor<256x32xf32>) -> (tensor<32x32xf32>, tensor<32x33xf32>) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 7 : index]}
  %c0 = arith.constant 0 : index
  %row = xla_gpu.apply_indexing #xla_gpu.indexing_map<"(d0) -> (d0 * 32), domain: d0 in [0, 7]">(%bid)
  %shmem = xla_gpu.allocate_shared : tensor<32x32xf32>
  // expected-remark @below {{vectorized global -> shared copy: vec 4 (16 bytes), 2 rounds of 128 threads}}
  %a = xla_gpu.copy_tile %in[%row, %c0] [32, 32] to %shmem[%c0, %c0] [32, 32] thread %tid of 128 : tensor<256x32xf32> to tensor<32x32xf32>
  %padded = xla_gpu.allocate_shared : tensor<32x33xf32>
  // expected-remark @below {{vectorized global -> shared copy: vec 1 (4 bytes), 8 rounds of 128 threads}}
  %b = xla_gpu.copy_tile %in[%row, %c0] [32, 32] to %padded[%c0, %c0] [32, 32] thread %tid of 128 : tensor<256x32xf32> to tensor<32x33xf32>
  return %a, %b : tensor<32x32xf32>, tensor<32x33xf32>
}

// -----

// An offset of unknown alignment (a function argument) aligns no vector.
// CHECK-LABEL: func.func @unaligned_offset(
// CHECK: vector<1xf32>
func.func @unaligned_offset(%in: tensor<64x32xf32>, %row: index) -> tensor<32x32xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c0 = arith.constant 0 : index
  %shmem = xla_gpu.allocate_shared : tensor<32x32xf32>
  // expected-remark @below {{vec 1 (4 bytes), 32 rounds of 32 threads}}
  %a = xla_gpu.copy_tile %in[%c0, %row] [32, 32] to %shmem[%c0, %c0] [32, 32] thread %tid of 32 : tensor<64x32xf32> to tensor<32x32xf32>
  return %a : tensor<32x32xf32>
}

// -----

// A swizzled shared tile (Swizzle<3, 2, 3>: chunks of 4 elements) caps the
// vector at one chunk (f16: vec 4, 8 bytes, not 8) and routes the shared
// offset through the swizzle: o ^ ((o >> 3) & 0b11100).
// CHECK-LABEL: func.func @swizzled(
// CHECK:      scf.for
// CHECK:        arith.shrui %{{.*}}, %c3
// CHECK:        arith.andi %{{.*}}, %c28
// CHECK:        arith.xori
// CHECK:        vector.transfer_write {{.*}} : vector<4xf16>, tensor<32x32xf16>
func.func @swizzled(%in: tensor<32x32xf16>) -> tensor<32x32xf16> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c0 = arith.constant 0 : index
  %shmem = xla_gpu.allocate_shared : tensor<32x32xf16>
  // expected-remark @below {{vectorized global -> shared copy: vec 4 (8 bytes), 8 rounds of 32 threads}}
  %filled = xla_gpu.copy_tile %in[%c0, %c0] [32, 32] to %shmem[%c0, %c0] [32, 32] thread %tid of 32 {swizzle = array<i64: 3, 2, 3>} : tensor<32x32xf16> to tensor<32x32xf16>
  return %filled : tensor<32x32xf16>
}

// -----

// Declined: shared -> shared is not a global<->shared pair, and 25
// elements do not divide among 32 threads; both are copied element by
// element (the second with a bounds check).
// CHECK-LABEL: func.func @declined(
// CHECK-NOT:  vector.transfer
// CHECK:      tensor.extract
// CHECK:      scf.if
// CHECK:        tensor.extract
func.func @declined(%in: tensor<5x5xf32>) -> (tensor<32x32xf32>, tensor<5x5xf32>) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c0 = arith.constant 0 : index
  %a = xla_gpu.allocate_shared : tensor<32x32xf32>
  %b = xla_gpu.allocate_shared : tensor<32x32xf32>
  // expected-remark @below {{not a vectorized global-shared copy: the memory pair is shared -> shared, not global <-> shared}}
  %c = xla_gpu.copy_tile %a[%c0, %c0] [32, 32] to %b[%c0, %c0] [32, 32] thread %tid of 32 : tensor<32x32xf32> to tensor<32x32xf32>
  %s = xla_gpu.allocate_shared : tensor<5x5xf32>
  // expected-remark @below {{not a vectorized global-shared copy: 25 elements do not divide among 32 threads}}
  %d = xla_gpu.copy_tile %in[%c0, %c0] [5, 5] to %s[%c0, %c0] [5, 5] thread %tid of 32 : tensor<5x5xf32> to tensor<5x5xf32>
  return %c, %d : tensor<32x32xf32>, tensor<5x5xf32>
}

// -----

func.func @narrowed(%in: tensor<32x32xf32>, %cond: i1) -> tensor<32x32xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c0 = arith.constant 0 : index
  %shmem = xla_gpu.allocate_shared : tensor<32x32xf32>
  %r = scf.if %cond -> tensor<32x32xf32> {
    // expected-error @below {{cannot be lowered: its threads are narrowed by an enclosing scf.if}}
    %c = xla_gpu.copy_tile %in[%c0, %c0] [32, 32] to %shmem[%c0, %c0] [32, 32] thread %tid of 32 : tensor<32x32xf32> to tensor<32x32xf32>
    scf.yield %c : tensor<32x32xf32>
  } else {
    scf.yield %shmem : tensor<32x32xf32>
  }
  return %r : tensor<32x32xf32>
}

// -----

func.func @few_threads(%in: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 15 : index]}
  %c0 = arith.constant 0 : index
  %shmem = xla_gpu.allocate_shared : tensor<32x32xf32>
  // expected-error @below {{cannot be lowered: the thread id spans 16 threads, not the copy's 32}}
  %c = xla_gpu.copy_tile %in[%c0, %c0] [32, 32] to %shmem[%c0, %c0] [32, 32] thread %tid of 32 : tensor<32x32xf32> to tensor<32x32xf32>
  return %c : tensor<32x32xf32>
}

// -----

func.func @dtypes_differ(%in: tensor<32x32xf32>) -> tensor<32x32xf16> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c0 = arith.constant 0 : index
  %shmem = xla_gpu.allocate_shared : tensor<32x32xf16>
  // expected-error @below {{cannot be lowered: the sides' element types differ ('f32' and 'f16')}}
  %c = xla_gpu.copy_tile %in[%c0, %c0] [32, 32] to %shmem[%c0, %c0] [32, 32] thread %tid of 32 : tensor<32x32xf32> to tensor<32x32xf16>
  return %c : tensor<32x32xf16>
}

// -----

func.func @extents_differ(%in: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c0 = arith.constant 0 : index
  %shmem = xla_gpu.allocate_shared : tensor<32x32xf32>
  // expected-error @below {{cannot be lowered: the boxes' non-unit extents differ (32, 16 and 16, 32)}}
  %c = xla_gpu.copy_tile %in[%c0, %c0] [32, 16] to %shmem[%c0, %c0] [16, 32] thread %tid of 32 : tensor<32x32xf32> to tensor<32x32xf32>
  return %c : tensor<32x32xf32>
}

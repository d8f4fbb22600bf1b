// RUN: xla-gpu-opt %s -xla-gpu-lower-kernel-to-cpu -canonicalize -cse | FileCheck %s

// unrollAtLanePeriod's steps are vectorized 8 steps a vector
// (kPeriodStepsWidth; see @upsample_pixels).
// CHECK:       #[[$VEC8:.*]] = #llvm.loop_vectorize<width = 8 : i32>
// CHECK:       #[[$STEPS:.*]] = #llvm.loop_annotation<vectorize = #[[$VEC8]], unroll = #{{.*}}>

// A division of the block's first element plus the thread id by a constant
// no lane reaches (the loop emitter's row and column of a linear index):
// the quotient steps up once while the lanes run, at a lane known before
// the loop. The loop is cut there; in each half the row is a constant and
// the column the lane plus one, so the accesses are contiguous.
// CHECK-LABEL: func.func @row_col
// CHECK:     scf.for %[[BID:.*]] = %{{.*}} to %{{.*}} step %c1
// CHECK:       %[[FIRST:.*]] = arith.muli %[[BID]], %c128
// CHECK:       %[[Q0:.*]] = arith.divui %[[FIRST]], %c200
// CHECK:       %[[R0:.*]] = arith.remui %[[FIRST]], %c200
// CHECK:       %[[Q1:.*]] = arith.addi %[[Q0]], %c1
// CHECK:       %[[LEFT:.*]] = arith.subi %c200, %[[R0]]
// CHECK:       %[[LOW:.*]] = arith.minsi %[[LEFT]], %c128
// CHECK:       %[[CUT:.*]] = arith.maxsi %[[LOW]], %c0
// CHECK:       scf.for %[[L:.*]] = %c0 to %[[CUT]] step %c1
// CHECK-NOT:     arith.divui
// CHECK-NOT:     arith.remui
// CHECK:         %[[COL:.*]] = arith.addi %[[R0]], %[[L]]
// CHECK:         %[[ROW:.*]] = arith.muli %[[Q0]], %c328
// CHECK:         arith.addi %[[ROW]], %[[COL]]
// CHECK:       scf.for %[[L2:.*]] = %[[CUT]] to %c128 step %c1
// CHECK-NOT:     arith.divui
// CHECK-NOT:     arith.remui
// CHECK:         %[[COL2:.*]] = arith.addi %[[R0]], %[[L2]]
// CHECK:         %[[NEXT:.*]] = arith.subi %[[COL2]], %c200
// CHECK:         %[[ROW2:.*]] = arith.muli %[[Q1]], %c328
// CHECK:         arith.addi %[[ROW2]], %[[NEXT]]
func.func @row_col(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 99 : index]}
  %c128 = arith.constant 128 : index
  %c200 = arith.constant 200 : index
  %c328 = arith.constant 328 : index
  %first = arith.muli %bid, %c128 : index
  %e = arith.addi %first, %tid : index
  %row = arith.divui %e, %c200 : index
  %col = arith.remui %e, %c200 : index
  %i = arith.index_cast %e : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %r = arith.muli %row, %c328 : index
  %o = arith.addi %r, %col : index
  %j = arith.index_cast %o : index to i64
  %q = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %q : f32, !llvm.ptr
  return
}

// Rows of 127 over blocks of 128 threads: 128 lanes reach one step of the
// quotient at most (r0 + lane < 2 * 127 for r0 < 127, lane < 128), so the
// loop is cut as @row_col's. It had stayed a loop of a division a lane.
// CHECK-LABEL: func.func @row_col_127
// CHECK:       %[[FIRST:.*]] = arith.muli %{{.*}}, %c128
// CHECK:       arith.divui %[[FIRST]], %c127
// CHECK:       %[[CUT:.*]] = arith.maxsi
// CHECK:       scf.for %{{.*}} = %c0 to %[[CUT]] step %c1
// CHECK-NOT:     arith.divui
// CHECK:       scf.for %{{.*}} = %[[CUT]] to %c128 step %c1
// CHECK-NOT:     arith.divui
// CHECK:       return
func.func @row_col_127(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 99 : index]}
  %c128 = arith.constant 128 : index
  %cd = arith.constant 127 : index
  %first = arith.muli %bid, %c128 : index
  %e = arith.addi %first, %tid : index
  %row = arith.divui %e, %cd : index
  %col = arith.remui %e, %cd : index
  %i = arith.index_cast %e : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %r = arith.muli %row, %c128 : index
  %o = arith.addi %r, %col : index
  %j = arith.index_cast %o : index to i64
  %q = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %q : f32, !llvm.ptr
  return
}

// A batch of 5 rows of 200 (the loop emitter's index of a higher
// dimension): its division by 1000, a multiple of the rows' 200, steps
// only where the row's does, so in each piece it is the row quotient's
// floordiv 5, its remainder by 1000 (q mod 5) * 200 plus the row's
// remainder: no division a lane is left. It had stayed one, the
// piece's lanes each dividing by 1000 (a pad's batch over its rows).
// CHECK-LABEL: func.func @row_col_batch
// CHECK:       %[[Q0:.*]] = arith.divui %{{.*}}, %c200
// CHECK:       %[[Q1:.*]] = arith.addi %[[Q0]], %c1
// CHECK:       scf.for
// CHECK-DAG:     arith.divui %[[Q0]], %c5
// CHECK-DAG:     arith.remui %[[Q0]], %c5
// CHECK:       scf.for
// CHECK-DAG:     arith.divui %[[Q1]], %c5
// CHECK-DAG:     arith.remui %[[Q1]], %c5
// CHECK-NOT:   arith.{{div|rem}}ui %{{.*}}, %c1000
// CHECK:       return
func.func @row_col_batch(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 99 : index]}
  %c128 = arith.constant 128 : index
  %c200 = arith.constant 200 : index
  %c1000 = arith.constant 1000 : index
  %c5 = arith.constant 5 : index
  %c208 = arith.constant 208 : index
  %c1248 = arith.constant 1248 : index
  %first = arith.muli %bid, %c128 : index
  %e = arith.addi %first, %tid : index
  %batch = arith.divui %e, %c1000 : index
  %rows = arith.divui %e, %c200 : index
  %row = arith.remui %rows, %c5 : index
  %col = arith.remui %e, %c200 : index
  %inb = arith.remui %e, %c1000 : index
  %i = arith.index_cast %inb : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %b = arith.muli %batch, %c1248 : index
  %r = arith.muli %row, %c208 : index
  %br = arith.addi %b, %r : index
  %o = arith.addi %br, %col : index
  %j = arith.index_cast %o : index to i64
  %q = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %q : f32, !llvm.ptr
  return
}

// Rows of 100 over 128 lanes: two steps of the quotient may fall among
// them. The lanes run in a loop over their rows' segments (from the first
// lane's step to the last's), each a loop over the lanes of one row, its
// quotient and remainder affine in the lane. It had stayed a loop of a
// division a lane (a pad of rows of 258 over blocks of 512: 1.10 -> 0.36
// ms).
// CHECK-LABEL: func.func @row_col_100
// CHECK:       %[[FIRST:.*]] = arith.muli %{{.*}}, %c128
// CHECK:       %[[Q0:.*]] = arith.divui %[[FIRST]], %c100
// CHECK:       scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c1
// CHECK:         arith.muli %[[K]], %c100
// CHECK:         arith.addi %[[Q0]], %[[K]]
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
// CHECK-NOT:       arith.divui
// CHECK:         } {loop_annotation
func.func @row_col_100(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 99 : index]}
  %c128 = arith.constant 128 : index
  %cd = arith.constant 100 : index
  %first = arith.muli %bid, %c128 : index
  %e = arith.addi %first, %tid : index
  %row = arith.divui %e, %cd : index
  %col = arith.remui %e, %cd : index
  %i = arith.index_cast %e : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %r = arith.muli %row, %c128 : index
  %o = arith.addi %r, %col : index
  %j = arith.index_cast %o : index to i64
  %q = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %q : f32, !llvm.ptr
  return
}

// Rows of 20: segments of fewer lanes than kMinSegmentLanes; the divisions
// stay.
// CHECK-LABEL: func.func @row_col_20
// CHECK:       scf.for %{{.*}} = %c0 to %c128 step %c1
// CHECK:         arith.divui %{{.*}}, %c20
func.func @row_col_20(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 99 : index]}
  %c128 = arith.constant 128 : index
  %cd = arith.constant 20 : index
  %first = arith.muli %bid, %c128 : index
  %e = arith.addi %first, %tid : index
  %row = arith.divui %e, %cd : index
  %col = arith.remui %e, %cd : index
  %i = arith.index_cast %e : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %r = arith.muli %row, %c128 : index
  %o = arith.addi %r, %col : index
  %j = arith.index_cast %o : index to i64
  %q = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %q : f32, !llvm.ptr
  return
}

// The same with long-latency arithmetic (an exp) in the body: the two
// pieces are the iterations of one loop over k in [0, 2), lanes from
// k ? cut : 0 to k ? 128 : cut, the row q0 + k and the column
// r0 - 200 k + lane, so that the exp is emitted (and vectorized by LLVM)
// once, not in a copy of the loop a piece.
// CHECK-LABEL: func.func @row_col_exp
// CHECK:     scf.for %[[BID:.*]] = %{{.*}} to %{{.*}} step %c1
// CHECK:       %[[FIRST:.*]] = arith.muli %[[BID]], %c128
// CHECK:       %[[Q0:.*]] = arith.divui %[[FIRST]], %c200
// CHECK:       %[[R0:.*]] = arith.remui %[[FIRST]], %c200
// CHECK:       %[[LEFT:.*]] = arith.subi %c200, %[[R0]]
// CHECK:       %[[LOW:.*]] = arith.minsi %[[LEFT]], %c128
// CHECK:       %[[CUT:.*]] = arith.maxsi %[[LOW]], %c0
// CHECK:       scf.for %[[K:.*]] = %c0 to %c2 step %c1
// CHECK:         %[[REST:.*]] = arith.subi %c128, %[[CUT]]
// CHECK:         %[[FROM:.*]] = arith.muli %[[K]], %[[CUT]]
// CHECK:         %[[MORE:.*]] = arith.muli %[[K]], %[[REST]]
// CHECK:         %[[TO:.*]] = arith.addi %[[CUT]], %[[MORE]]
// CHECK:         %[[Q:.*]] = arith.addi %[[Q0]], %[[K]]
// CHECK:         %[[BACK:.*]] = arith.muli %[[K]], %c200
// CHECK:         %[[R:.*]] = arith.subi %[[R0]], %[[BACK]]
// CHECK:         scf.for %[[L:.*]] = %[[FROM]] to %[[TO]] step %c1
// CHECK-NOT:       arith.divui
// CHECK-NOT:       arith.remui
// CHECK:           %[[COL:.*]] = arith.addi %[[R]], %[[L]]
// CHECK:           math.exp
// CHECK:           %[[ROW:.*]] = arith.muli %[[Q]], %c328
// CHECK:           arith.addi %[[ROW]], %[[COL]]
// CHECK:           llvm.store
// CHECK-NEXT:    } {loop_annotation
// CHECK-NEXT:  } {loop_annotation
// CHECK-NOT:   math.exp
func.func @row_col_exp(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 99 : index]}
  %c128 = arith.constant 128 : index
  %c200 = arith.constant 200 : index
  %c328 = arith.constant 328 : index
  %first = arith.muli %bid, %c128 : index
  %e = arith.addi %first, %tid : index
  %row = arith.divui %e, %c200 : index
  %col = arith.remui %e, %c200 : index
  %i = arith.index_cast %e : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p : !llvm.ptr -> f32
  %x = math.exp %v : f32
  %r = arith.muli %row, %c328 : index
  %o = arith.addi %r, %col : index
  %j = arith.index_cast %o : index to i64
  %q = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x, %q : f32, !llvm.ptr
  return
}

// A row's last step ends at lane 58 of 64 (a row of 1000 bf16 elements, 4
// a load): the lanes before and after it are loops of 58 and 6 lanes,
// which LLVM's vector loop would leave 8 lanes of to a scalar loop. They
// become loops of a multiple of 16 lanes: the 6 start at lane 48, ahead of
// the 58, whose first 48 then run, and whose last 16 run again (42-57),
// writing lanes 48-57 over. Each writes only its lanes' slots, which none
// of them reads.
// CHECK-LABEL: func.func @partial_last_step
// CHECK:     %[[SLOTS:.*]] = llvm.alloca
// CHECK:     scf.for %[[L:.*]] = %c0 to %c48 step %c1
// CHECK:       math.exp
// CHECK:       llvm.getelementptr %[[SLOTS]]
// CHECK:     scf.for %{{.*}} = %c48 to %c64 step %c1
// CHECK-NOT:   math.exp
// CHECK:       llvm.store %cst
// CHECK:     scf.for %{{.*}} = %c42 to %c58 step %c1
// CHECK:       math.exp
// CHECK:     scf.for %{{.*}} = %c0 to %c64 step %c1
// CHECK:       arith.remui
func.func @partial_last_step(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c58 = arith.constant 58 : index
  %in_row = arith.cmpi slt, %tid, %c58 : index
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %zero = arith.constant 0.0 : f32
  %x = scf.if %in_row -> (f32) {
    %v = llvm.load %p : !llvm.ptr -> f32
    %e = math.exp %v : f32
    scf.yield %e : f32
  } else {
    scf.yield %zero : f32
  }
  %c1 = arith.constant 1 : i32
  %c32 = arith.constant 32 : i32
  %s, %valid = gpu.shuffle down %x, %c1, %c32 : f32
  %sum = arith.addf %x, %s : f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// The same lanes writing the kernel's buffer: not run twice.
// CHECK-LABEL: func.func @partial_last_step_to_memory
// CHECK:     scf.for %{{.*}} = %c0 to %c58 step %c1
// CHECK-NOT: scf.for
// CHECK:     return
func.func @partial_last_step_to_memory(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c58 = arith.constant 58 : index
  %in_row = arith.cmpi slt, %tid, %c58 : index
  %i = arith.index_cast %tid : index to i64
  scf.if %in_row {
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %e = math.exp %v : f32
    %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %e, %o : f32, !llvm.ptr
  }
  return
}

// The lanes from 58 on load and the lanes before do not: the loop of 6
// does not start early (it would load at lanes 48-57, past what they
// read); the loop of 58 still runs its last 16 again.
// CHECK-LABEL: func.func @lanes_past_58_read
// CHECK:     scf.for %{{.*}} = %c0 to %c48 step %c1
// CHECK-NOT:   llvm.load
// CHECK:     scf.for %{{.*}} = %c42 to %c58 step %c1
// CHECK-NOT:   llvm.load
// CHECK:     scf.for %{{.*}} = %c58 to %c64 step %c1
// CHECK:       llvm.load
// CHECK:       math.exp
func.func @lanes_past_58_read(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c58 = arith.constant 58 : index
  %in_row = arith.cmpi sge, %tid, %c58 : index
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %zero = arith.constant 0.0 : f32
  %x = scf.if %in_row -> (f32) {
    %v = llvm.load %p : !llvm.ptr -> f32
    %e = math.exp %v : f32
    scf.yield %e : f32
  } else {
    scf.yield %zero : f32
  }
  %c1 = arith.constant 1 : i32
  %c32 = arith.constant 32 : i32
  %s, %valid = gpu.shuffle down %x, %c1, %c32 : f32
  %sum = arith.addf %x, %s : f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %sum, %o : f32, !llvm.ptr
  return
}

// A row's last step, taken by the lanes below the row's end (a row of
// 40, a warp's two steps): every lane runs its first step in one loop of
// 32 lanes, and the 8 lanes that take the last step run it in a loop of
// their own, from the sum the first loop stored -- where cutting the loop
// at lane 8 would run the first step in a loop of 8 lanes and one of 24.
// CHECK-LABEL: func.func @last_step_apart
// CHECK:     %[[SLOTS:.*]] = llvm.alloca
// CHECK:     scf.for %{{.*}} = %c0 to %c32 step %c1
// CHECK-NOT:   scf.if
// CHECK:       math.exp
// CHECK-NOT:   math.exp
// CHECK:       llvm.store %{{.*}}, %[[SLOT:.*]] :
// CHECK:     scf.for %[[L:.*]] = %c0 to %c8 step %c1
// CHECK:       %[[AT:.*]] = llvm.getelementptr %[[SLOTS]]
// CHECK:       %[[SUM:.*]] = llvm.load %[[AT]]
// CHECK:       math.exp
// CHECK:       %[[NEXT:.*]] = arith.addf %[[SUM]]
// CHECK:       llvm.store %[[NEXT]], %[[AT]]
// CHECK:     scf.for %{{.*}} = %c0 to %c32 step %c1
// CHECK-NOT:   math.exp
// CHECK:     return
func.func @last_step_apart(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p invariant : !llvm.ptr -> f32
  %e = math.exp %v : f32
  %acc = arith.addf %e, %zero : f32
  %in_row = arith.cmpi slt, %tid, %c8 : index
  %sum = scf.if %in_row -> (f32) {
    %t = arith.addi %tid, %c32 : index
    %j = arith.index_cast %t : index to i64
    %q = llvm.getelementptr %in[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %w = llvm.load %q invariant : !llvm.ptr -> f32
    %f = math.exp %w : f32
    %next = arith.addf %acc, %f : f32
    scf.yield %next : f32
  } else {
    scf.yield %acc : f32
  }
  %c1 = arith.constant 1 : i32
  %c32i = arith.constant 32 : i32
  %s, %valid = gpu.shuffle down %sum, %c1, %c32i : f32
  %total = arith.addf %sum, %s : f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %total, %o : f32, !llvm.ptr
  return
}

// The same where the last step reads what the lanes write (%out, which
// the first step's exp goes to): run apart, it would read the other
// lanes' writes of this phase, so the loop is cut at lane 8 instead, each
// piece running the first step.
// CHECK-LABEL: func.func @last_step_reads_what_the_lanes_write
// CHECK:     scf.for %{{.*}} = %c0 to %c8 step %c1
// CHECK:       math.exp
// CHECK:       math.exp
// CHECK:     scf.for %{{.*}} = %c8 to %c32 step %c1
// CHECK:       math.exp
// CHECK-NOT:   math.exp
// CHECK:     }
func.func @last_step_reads_what_the_lanes_write(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 31 : index]}
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p invariant : !llvm.ptr -> f32
  %e = math.exp %v : f32
  %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %e, %o : f32, !llvm.ptr
  %acc = arith.addf %e, %zero : f32
  %in_row = arith.cmpi slt, %tid, %c8 : index
  %sum = scf.if %in_row -> (f32) {
    %t = arith.addi %tid, %c32 : index
    %j = arith.index_cast %t : index to i64
    %q = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %w = llvm.load %q : !llvm.ptr -> f32
    %f = math.exp %w : f32
    %next = arith.addf %acc, %f : f32
    scf.yield %next : f32
  } else {
    scf.yield %acc : f32
  }
  %c1 = arith.constant 1 : i32
  %c32i = arith.constant 32 : i32
  %s, %valid = gpu.shuffle down %sum, %c1, %c32i : f32
  %total = arith.addf %sum, %s : f32
  %r = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %total, %r : f32, !llvm.ptr
  return
}

// A pad with interior padding (XLA:CPU's interleave of a RoPE gradient's
// halves): every other lane takes the operand, the others the padding, by
// the lane's parity ((lane - 1) mod 2 as an index map writes it). The lane
// loop runs two lanes a step, each parity a constant: one lane computes
// the sin, the other stores the padding, no branch left; the last lane of
// the odd count after. One lane a step, the vectorized loop ran the sin on
// every lane (masked).
// CHECK-LABEL: func.func @interior_pad
// CHECK:       scf.for %{{.*}} = %c1 to %c63 step %c2
// CHECK-NOT:     scf.if
// CHECK:         math.sin
// CHECK:         llvm.store
// CHECK:         llvm.store %cst
// CHECK:       } {loop_annotation
func.func @interior_pad(%a: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %c-1 = arith.constant -1 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %pad = arith.constant 0.0 : f32
  %x = arith.addi %tid, %c-1 : index
  %q = arith.floordivsi %x, %c2 : index
  %m = arith.muli %q, %c2 : index
  %r = arith.subi %x, %m : index
  %on = arith.cmpi sle, %r, %c0 : index
  %in = arith.cmpi sge, %tid, %c1 : index
  %take = arith.andi %in, %on : i1
  %v = scf.if %take -> (f32) {
    %h = arith.index_castui %q : index to i64
    %p = llvm.getelementptr inbounds %a[%h] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %y = llvm.load %p invariant : !llvm.ptr -> f32
    %s = math.sin %y : f32
    scf.yield %s : f32
  } else {
    scf.yield %pad : f32
  }
  %t = arith.index_castui %tid : index to i64
  %o = llvm.getelementptr inbounds %out[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// The same pad where the row's first element (the low padding) is in the
// first block only: the lanes past that guard start at a bound of the
// block, not a constant. Their pairs start at the first even lane, an odd
// first lane running alone before them (a loop of its own, the guard
// kept); each pair's parities are constants again. The loop of one lane a
// step ran the sin on every lane (masked): an associative_scan's
// interleaving pad over f32[128,256] took 18 us instead of 6.
// CHECK-LABEL: func.func @interior_pad_from_a_block_bound
// CHECK:       %[[HALF:.*]] = arith.floordivsi
// CHECK-NEXT:  %[[EVEN:.*]] = arith.muli %[[HALF]], %c2
// CHECK:       scf.for {{.*}} to %{{.*}} step %c1 {
// CHECK:         scf.if
// CHECK:       scf.for %{{.*}} = %[[EVEN]] to %{{.*}} step %c2 {
// CHECK-NOT:     scf.if
// CHECK:         math.sin
// CHECK:       } {loop_annotation
func.func @interior_pad_from_a_block_bound(%a: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 63 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 1 : index]}
  %c-1 = arith.constant -1 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  %x = arith.addi %tid, %c-1 : index
  %q = arith.floordivsi %x, %c2 : index
  %m = arith.muli %q, %c2 : index
  %r = arith.subi %x, %m : index
  %on = arith.cmpi sle, %r, %c0 : index
  %row = arith.muli %bid, %c64 : index
  %col = arith.addi %row, %tid : index
  %in = arith.cmpi sge, %col, %c1 : index
  %take = arith.andi %in, %on : i1
  %v = scf.if %take -> (f32) {
    %qa = arith.addi %q, %row : index
    %h = arith.index_castui %qa : index to i64
    %p = llvm.getelementptr inbounds %a[%h] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %y = llvm.load %p invariant : !llvm.ptr -> f32
    %s = math.sin %y : f32
    scf.yield %s : f32
  } else {
    scf.yield %pad : f32
  }
  %t = arith.index_castui %col : index to i64
  %o = llvm.getelementptr inbounds %out[%t] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %o : f32, !llvm.ptr
  return
}

// An image's normalization per channel over NHWC (u8[16,224,224,3] as
// jax.jit's (x / 255 - mean) / std): the channel is the element mod 3, the
// element the block's first (512 b, which 3 does not divide) plus the
// lane. The lane loop runs 3 lanes a step k from the first lane whose
// element 3 divides, each lane's channel a constant (its scale and shift
// loaded once, before the loop, by LLVM); the lanes before it and after
// the whole steps in loops of their own. One lane a step, the loop divided
// every lane and gathered its channel's scale, scalar (0.87 ms a kernel
// call, jax.jit 0.12).
// CHECK-LABEL: func.func @channel_scale
// CHECK:       %[[FIRST:.*]] = arith.muli %{{.*}}, %c3
// CHECK:       scf.for
// CHECK:         arith.remui
// CHECK:       scf.for %[[K:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK-NOT:     arith.remui
// CHECK-NOT:     arith.divui
// CHECK:         llvm.load %arg1 invariant
// CHECK:         llvm.getelementptr inbounds %arg1[1]
// CHECK:         llvm.getelementptr inbounds %arg1[2]
// CHECK:       } {loop_annotation
// CHECK:       scf.for
// CHECK:         arith.remui
func.func @channel_scale(%in: !llvm.ptr, %scale: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 511 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 4703 : index]}
  %c3 = arith.constant 3 : index
  %c512 = arith.constant 512 : index
  %row = arith.muli %bid, %c512 : index
  %e = arith.addi %row, %tid : index
  %ch = arith.remui %e, %c3 : index
  %i = arith.index_castui %e : index to i64
  %p = llvm.getelementptr inbounds %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i8
  %x = llvm.load %p invariant : !llvm.ptr -> i8
  %xf = arith.uitofp %x : i8 to f32
  %c = arith.index_castui %ch : index to i64
  %sp = llvm.getelementptr inbounds %scale[%c] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %s = llvm.load %sp invariant : !llvm.ptr -> f32
  %y = arith.mulf %xf, %s : f32
  %o = llvm.getelementptr inbounds %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %y, %o : f32, !llvm.ptr
  return
}

// A reverse of the channels (x[..., ::-1] over NHWC, C = 3): element e
// reads 3 (e / 3) + 2 - e mod 3. With 3 lanes a step k from an element 3
// divides, the quotient is the first step's plus k and the remainder a
// constant: each lane's address is affine in k, 3 k past its first, the
// three first addresses 1 apart (splitStridedAddresses; LLVM loads the
// steps' elements as whole vectors and shuffles them), where one lane a
// step divided every lane and loaded each element on its own (0.47 ->
// 0.12 ms a kernel call over f32[16,224,224,3]).
// CHECK-LABEL: func.func @reverse_channels
// CHECK:       %[[START:.*]] = arith.muli %{{.*}}, %c3
// CHECK:       arith.divsi %[[START]], %c3
// CHECK:       %[[FIRST:.*]] = llvm.getelementptr %arg0[%{{.*}}]
// CHECK:       scf.for %[[K:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK-NOT:     arith.remui
// CHECK-NOT:     arith.divui
// CHECK:         %[[OFFSET:.*]] = arith.muli %[[K]], %c3
// CHECK:         %[[AT:.*]] = arith.index_castui %[[OFFSET]]
// CHECK:         llvm.getelementptr nusw|nuw %[[FIRST]][%[[AT]]]
// CHECK:         %[[SECOND:.*]] = llvm.getelementptr %[[FIRST]][-1]
// CHECK:         llvm.getelementptr nusw|nuw %[[SECOND]][%[[AT]]]
// CHECK:         %[[THIRD:.*]] = llvm.getelementptr %[[FIRST]][-2]
// CHECK:         llvm.getelementptr nusw|nuw %[[THIRD]][%[[AT]]]
// CHECK:       } {loop_annotation
func.func @reverse_channels(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 511 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 4703 : index]}
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c512 = arith.constant 512 : index
  %row = arith.muli %bid, %c512 : index
  %e = arith.addi %row, %tid : index
  %r = arith.remui %e, %c3 : index
  %q = arith.divui %e, %c3 : index
  %q3 = arith.muli %q, %c3 : index
  %a = arith.subi %q3, %r : index
  %at = arith.addi %a, %c2 : index
  %i = arith.index_castui %at : index to i64
  %p = llvm.getelementptr inbounds %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %p invariant : !llvm.ptr -> f32
  %j = arith.index_castui %e : index to i64
  %o = llvm.getelementptr inbounds %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x, %o : f32, !llvm.ptr
  return
}

// A flip along W of NHWC images (x[:, :, ::-1] over f32[16,224,224,3]):
// element e reads 672 (e / 672) + 669 - 3 ((e / 3) mod 224) + e mod 3.
// (e / 3) mod 224 is read as (e mod 672) / 3, so that the cut at the row's
// end makes e mod 672 an offset plus the lane; its quotient by 3 is then
// congruent to e mod 3's x (the offset is the block's first element mod
// 672, which 3 divides) and steps with the loop of 3 lanes a step. The 3
// lanes' loads step backwards, 3 elements a step, from one first address
// (splitStridedAddresses: the other two at 1 and 2 past it), which LLVM
// loads as one interleave group: 0.47 -> 0.16 ms a kernel call.
// CHECK-LABEL: func.func @flip_width
// CHECK:       arith.remui %{{.*}}, %c672
// CHECK:       %[[FIRST:.*]] = llvm.getelementptr %arg0[%{{.*}}]
// CHECK:       scf.for %[[K:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK-NOT:     arith.remui
// CHECK-NOT:     arith.divui
// CHECK:         %[[BACK:.*]] = arith.muli %[[K]], %c-3 overflow<nsw>
// CHECK:         %[[AT:.*]] = arith.index_cast %[[BACK]]
// CHECK:         llvm.getelementptr nusw %[[FIRST]][%[[AT]]]
// CHECK:         %[[SECOND:.*]] = llvm.getelementptr %[[FIRST]][1]
// CHECK:         llvm.getelementptr nusw %[[SECOND]][%[[AT]]]
// CHECK:         %[[THIRD:.*]] = llvm.getelementptr %[[FIRST]][2]
// CHECK:         llvm.getelementptr nusw %[[THIRD]][%[[AT]]]
// CHECK:       } {loop_annotation
func.func @flip_width(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 511 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 4703 : index]}
  %c669 = arith.constant 669 : index
  %c672 = arith.constant 672 : index
  %c-3 = arith.constant -3 : index
  %c224 = arith.constant 224 : index
  %c3 = arith.constant 3 : index
  %c512 = arith.constant 512 : index
  %row = arith.muli %bid, %c512 : index
  %e = arith.addi %row, %tid : index
  %q = arith.divui %e, %c3 : index
  %w = arith.remui %q, %c224 : index
  %back = arith.muli %w, %c-3 : index
  %ch = arith.remui %e, %c3 : index
  %a = arith.addi %back, %ch : index
  %img = arith.divui %e, %c672 : index
  %base = arith.muli %img, %c672 : index
  %b = arith.addi %a, %base : index
  %at = arith.addi %b, %c669 : index
  %i = arith.index_castui %at : index to i64
  %p = llvm.getelementptr inbounds %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %p invariant : !llvm.ptr -> f32
  %j = arith.index_castui %e : index to i64
  %o = llvm.getelementptr inbounds %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x, %o : f32, !llvm.ptr
  return
}

// A row's sum of 3 read by each of its elements (x / |x| over f32[N,3]):
// 3 (e / 3) + i and no remainder by 3. The quotient alone makes the lane
// loop run 3 lanes a step from an element 3 divides, e / 3 the first
// step's plus k: each lane's row loads are affine in k (2.71 -> 0.23 ms a
// kernel call over f32[1048576,3], where each lane divided and gathered
// its row).
// CHECK-LABEL: func.func @row_of_3
// CHECK:       %[[START:.*]] = arith.muli %{{.*}}, %c3
// CHECK:       %[[Q:.*]] = arith.divsi %[[START]], %c3
// CHECK:       scf.for %[[K:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK-NOT:     arith.divui
// CHECK:         arith.addi %[[Q]], %[[K]]
// CHECK:       } {loop_annotation
func.func @row_of_3(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 511 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 6143 : index]}
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c512 = arith.constant 512 : index
  %base = arith.muli %bid, %c512 : index
  %e = arith.addi %base, %tid : index
  %q = arith.divui %e, %c3 : index
  %row = arith.muli %q, %c3 : index
  %i0 = arith.index_castui %row : index to i64
  %p0 = llvm.getelementptr inbounds %in[%i0] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x0 = llvm.load %p0 invariant : !llvm.ptr -> f32
  %r1 = arith.addi %row, %c1 : index
  %i1 = arith.index_castui %r1 : index to i64
  %p1 = llvm.getelementptr inbounds %in[%i1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x1 = llvm.load %p1 invariant : !llvm.ptr -> f32
  %s = arith.addf %x0, %x1 : f32
  %ie = arith.index_castui %e : index to i64
  %o = llvm.getelementptr inbounds %out[%ie] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %s, %o : f32, !llvm.ptr
  return
}

// -----

// A sum over dimensions 0 and 2 of f32[8,16,32,24] (the loop emitter's
// thread an output): the lanes' division by 24 (rows of 24 over blocks of
// 128) is in the loop of the 256 steps, which would divide every lane
// again each step. Rows of 16 lanes or more run as segments there (where
// each lane divides once, from 32 on, as @row_col_20): in each step, a
// loop over the rows' segments, each a loop over its lanes, no division
// in it. (Its blocks, 128 outputs of 24-element rows, read 15 KiB apart:
// they run one by one, see lower_kernel_to_cpu.mlir's @slab_accumulate.)
// CHECK-LABEL: func.func @rows_of_24_in_steps
// CHECK:       scf.for %{{.*}} = %c0 to %c256 step %c1 {
// CHECK-NOT:     scf.for
// CHECK:           scf.for %[[SEG:.*]] = %{{.*}} to %{{.*}} step %c1 {
// CHECK:             arith.muli %[[SEG]], %c24
// CHECK:             scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1 {
// CHECK-NOT:           arith.divui
// CHECK-NOT:           arith.remui
// CHECK:               arith.addf
// CHECK:             }
func.func @rows_of_24_in_steps(%arg0: !llvm.ptr {llvm.noalias, xla.slice_index = 0 : i32}, %arg1: !llvm.ptr {llvm.noalias, xla.slice_index = 1 : i32}, %arg2: !llvm.ptr {llvm.noalias, xla.slice_index = 2 : i32}) attributes {xla.launch_dims = {block_counts = array<i64: 3, 1, 1>, thread_counts_per_block = array<i64: 128, 1, 1>}} {
  %c768 = arith.constant 768 : index
  %c24 = arith.constant 24 : index
  %c128 = arith.constant 128 : index
  %c12288 = arith.constant 12288 : index
  %c32 = arith.constant 32 : index
  %c8 = arith.constant 8 : index
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %thread_id_x = gpu.thread_id  x {xla.range = [0 : index, 127 : index]}
  %block_id_x = gpu.block_id  x {xla.range = [0 : index, 2 : index]}
  %0 = llvm.load %arg1 invariant : !llvm.ptr -> f32
  %1 = scf.for %arg3 = %c0 to %c8 step %c1 iter_args(%arg4 = %0) -> (f32) {
    %6 = scf.for %arg5 = %c0 to %c32 step %c1 iter_args(%arg6 = %arg4) -> (f32) {
      %7 = arith.muli %arg3, %c12288 : index
      %8 = arith.muli %block_id_x, %c128 : index
      %9 = arith.addi %8, %thread_id_x : index
      %10 = arith.divui %9, %c24 : index
      %11 = arith.muli %10, %c768 : index
      %12 = arith.addi %7, %11 : index
      %13 = arith.muli %arg5, %c24 : index
      %14 = arith.addi %12, %13 : index
      %15 = arith.remui %9, %c24 : index
      %16 = arith.addi %14, %15 : index
      %17 = arith.index_castui %16 : index to i64
      %18 = llvm.getelementptr inbounds %arg0[%17] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %19 = llvm.load %18 invariant : !llvm.ptr -> f32
      %20 = arith.addf %arg6, %19 : f32
      scf.yield %20 : f32
    }
    scf.yield %6 : f32
  }
  %2 = arith.muli %block_id_x, %c128 : index
  %3 = arith.addi %2, %thread_id_x : index
  %4 = arith.index_castui %3 : index to i64
  %5 = llvm.getelementptr inbounds %arg2[%4] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %1, %5 : f32, !llvm.ptr
  return
}

// A concatenate's operand at the start of its block's row (a block a row
// of 224 pixels of 3 channels, xla_gpu.jax.jit's reflect pad along W):
// the thread's pixel tid / 3 and channel tid mod 3, the operand's pixels 0
// and 1 alone. With no period of 3 lanes (warps of 3 unrolled, in a loop
// over the warps LLVM left scalar), the lane loop runs 3 lanes a step
// (unrollAtLanePeriod), whose pixel is the step: the guard cuts the steps
// at 2, each channel a constant, no division left (0.25 -> 0.12 ms a
// kernel call over f32[16,228,224,3]).
// CHECK-LABEL: func.func @pixel_row_edge
// CHECK:       scf.for %{{.*}} = %arg2 to %arg3 step %c1 {
// CHECK:         scf.for %{{.*}} = %c0 to %c2 step %c1 {
// CHECK-NOT:       scf.if
// CHECK-NOT:       arith.divui
// CHECK-NOT:       arith.remui
// CHECK-COUNT-3:   llvm.store
// CHECK:         } {loop_annotation
// CHECK-NOT:     scf.for
// CHECK:       return
func.func @pixel_row_edge(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 671 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 99 : index]}
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c-3 = arith.constant -3 : index
  %c672 = arith.constant 672 : index
  %c684 = arith.constant 684 : index
  %w = arith.divui %tid, %c3 : index
  %c = arith.remui %tid, %c3 : index
  %edge = arith.cmpi sle, %w, %c1 : index
  scf.if %edge {
    %row = arith.muli %bid, %c672 : index
    %back = arith.muli %w, %c-3 : index
    %a = arith.addi %row, %back : index
    %b = arith.addi %a, %c : index
    %at = arith.addi %b, %c3 : index
    %i = arith.index_castui %at : index to i64
    %p = llvm.getelementptr inbounds %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %x = llvm.load %p invariant : !llvm.ptr -> f32
    %orow = arith.muli %bid, %c684 : index
    %o = arith.addi %orow, %tid : index
    %j = arith.index_castui %o : index to i64
    %q = llvm.getelementptr inbounds %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %x, %q : f32, !llvm.ptr
  }
  return
}

// A nearest upsampling of NHWC pixels of 3 channels by 2 along W: element
// e reads channel e mod 3 of pixel (e / 3) / 2. The quotient of the
// quotient is e / 6 (foldNestedQuotients), so the lane loop runs 6 lanes a
// step, each pixel loaded once and stored twice; with (e / 3) / 2 left, its
// steps of 3 lanes divided the step by 2 (0.24 -> 0.08 ms a kernel call
// over f32[16,224,224,3]).
// CHECK-LABEL: func.func @upsample_pixels
// CHECK:       scf.for %[[K:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK:         arith.muli %[[K]], %c6
// CHECK-NOT:     arith.divui
// CHECK-NOT:     arith.remui
// CHECK-COUNT-6: llvm.store
// CHECK:       } {loop_annotation = #[[$STEPS]]}
func.func @upsample_pixels(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 511 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 4703 : index]}
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c512 = arith.constant 512 : index
  %row = arith.muli %bid, %c512 : index
  %e = arith.addi %row, %tid : index
  %ch = arith.remui %e, %c3 : index
  %px = arith.divui %e, %c3 : index
  %src = arith.divui %px, %c2 : index
  %s3 = arith.muli %src, %c3 : index
  %at = arith.addi %s3, %ch : index
  %i = arith.index_castui %at : index to i64
  %p = llvm.getelementptr inbounds %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %p invariant : !llvm.ptr -> f32
  %j = arith.index_castui %e : index to i64
  %o = llvm.getelementptr inbounds %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x, %o : f32, !llvm.ptr
  return
}

// The same upsampling a block a row (loop._host_pixel_row_launch: the 224
// pixels of 3 channels of an output row, 672 threads): the thread's pixel
// is tid / 6. Warps of 6 lanes (periodOf's largest divisor, as it was for
// divisors up to 31) made lane loops of two steps of 3 lanes, in a loop
// over the warps LLVM left scalar; a divisor of kMaxLanePeriod or less
// leaves one lane loop, 6 lanes a step (0.107 -> 0.067 ms a kernel call
// over f32[16,224,224,3]).
// CHECK-LABEL: func.func @upsample_pixel_row
// CHECK:       scf.for %{{.*}} = %arg2 to %arg3 step %c1 {
// CHECK-NEXT:    arith.muli
// CHECK:         scf.for %[[K:.*]] = %c0 to %c112 step %c1 {
// CHECK-NOT:       scf.for
// CHECK-NOT:       arith.divui
// CHECK-NOT:       arith.remui
// CHECK-COUNT-6:   llvm.store
// CHECK:         } {loop_annotation = #[[$STEPS]]}
// CHECK-NEXT:  } {loop_annotation
func.func @upsample_pixel_row(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 671 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 3583 : index]}
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  %c336 = arith.constant 336 : index
  %c672 = arith.constant 672 : index
  %px = arith.divui %tid, %c6 : index
  %s3 = arith.muli %px, %c3 : index
  %ch = arith.remui %tid, %c3 : index
  %irow = arith.muli %bid, %c336 : index
  %a = arith.addi %irow, %s3 : index
  %at = arith.addi %a, %ch : index
  %i = arith.index_castui %at : index to i64
  %p = llvm.getelementptr inbounds %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %p invariant : !llvm.ptr -> f32
  %orow = arith.muli %bid, %c672 : index
  %e = arith.addi %orow, %tid : index
  %j = arith.index_castui %e : index to i64
  %o = llvm.getelementptr inbounds %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %x, %o : f32, !llvm.ptr
  return
}

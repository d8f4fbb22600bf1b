// RUN: xla-gpu-opt %s -split-input-file -xla-gpu-lower-kernel-to-cpu -canonicalize -cse | FileCheck %s

// A concatenate's operand ranges: the lane plus the block's offset compared
// with constant bounds. The lane loop is split into its parts (each
// operand's store, in order), and each part is cut where its comparison
// flips, below a lane known before the loop (100 - offset, 28 - offset):
// in each piece the comparison is a constant, no branch is left in a loop,
// and the pieces past a part's range store nothing (gone). The `28 > x`
// form (constant first) is the same bound.
// CHECK-LABEL: func.func @concat_like
// CHECK:     %[[OFF:.*]] = arith.muli %{{.*}}, %c3
// CHECK:     %[[T100:.*]] = arith.subi %c100, %[[OFF]]
// CHECK:     %[[C1:.*]] = arith.maxsi
// CHECK:     scf.for %{{.*}} = %c0 to %[[C1]] step %c1 {
// CHECK-NOT:   scf.if
// CHECK:       llvm.store %cst_0
// CHECK-NEXT: }
// CHECK:     %[[T28:.*]] = arith.subi %c28, %[[OFF]]
// CHECK:     %[[C2:.*]] = arith.maxsi
// CHECK:     scf.for %{{.*}} = %c0 to %[[C2]] step %c1 {
// CHECK-NOT:   scf.if
// CHECK:       llvm.store %cst,
// CHECK-NEXT: }
// CHECK-NOT: scf.if
// CHECK-NOT: scf.for
// CHECK:     return
func.func @concat_like(%out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 9 : index]}
  %c3 = arith.constant 3 : index
  %c99 = arith.constant 99 : index
  %c28 = arith.constant 28 : index
  %c200 = arith.constant 200 : index
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %off = arith.muli %bid, %c3 : index
  %x = arith.addi %off, %tid : index
  %first = arith.cmpi sle, %x, %c99 : index
  scf.if %first {
    %i = arith.index_cast %x : index to i64
    %p = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %one, %p : f32, !llvm.ptr
  }
  %second = arith.cmpi sgt, %c28, %x : index
  scf.if %second {
    %y = arith.addi %x, %c200 : index
    %i = arith.index_cast %y : index to i64
    %p = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %two, %p : f32, !llvm.ptr
  }
  return
}

// -----

// A pad's two edges (x - 3 >= 0 and x - 3 < 100, combined with andi): the
// lower edge is a bound from which the comparison holds. Three pieces:
// below the pad (nothing stored), inside (stored), above (nothing).
// CHECK-LABEL: func.func @pad_edges
// CHECK-COUNT-1: llvm.store
// CHECK-NOT: scf.if
// CHECK-NOT: llvm.store
func.func @pad_edges(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c100 = arith.constant 100 : index
  %s = arith.subi %tid, %c3 : index
  %lo = arith.cmpi sge, %s, %c0 : index
  %hi = arith.cmpi slt, %s, %c100 : index
  %in_pad = arith.andi %lo, %hi : i1
  scf.if %in_pad {
    %i = arith.index_cast %s : index to i64
    %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %j = arith.index_cast %tid : index to i64
    %q = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %v, %q : f32, !llvm.ptr
  }
  return
}

// -----

// Bounds of four different constants in one part (the stores nested)
// would copy it five times: the loop is left whole, its branches in place.
// CHECK-LABEL: func.func @too_many_bounds
// CHECK-COUNT-4: scf.if
func.func @too_many_bounds(%out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %one = arith.constant 1.0 : f32
  %c10 = arith.constant 10 : index
  %c20 = arith.constant 20 : index
  %c30 = arith.constant 30 : index
  %c40 = arith.constant 40 : index
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %a = arith.cmpi slt, %tid, %c40 : index
  scf.if %a {
    llvm.store %one, %p : f32, !llvm.ptr
    %b = arith.cmpi slt, %tid, %c30 : index
    scf.if %b {
      llvm.store %one, %p : f32, !llvm.ptr
      %c = arith.cmpi slt, %tid, %c20 : index
      scf.if %c {
        llvm.store %one, %p : f32, !llvm.ptr
        %d = arith.cmpi slt, %tid, %c10 : index
        scf.if %d { llvm.store %one, %p : f32, !llvm.ptr }
      }
    }
  }
  return
}

// -----

// Parts that store under guards of the lane are split only when each reads
// the kernel's inputs alone (invariant loads): here the second part reads
// what the first writes (another lane's element), and the loop stays one,
// cut at both guards together (three pieces).
// CHECK-LABEL: func.func @parts_that_read_memory
// CHECK:       scf.for
// CHECK:         scf.for %{{.*}} = %c0 to %c30 step %c1 {
// CHECK:           llvm.store %cst
// CHECK:           llvm.load
// CHECK:           llvm.store
// CHECK-NEXT:    }
// CHECK:         scf.for %{{.*}} = %c30 to %c60 step %c1 {
// CHECK:           llvm.store %cst
// CHECK-NEXT:    }
// CHECK-NOT:     scf.for
// CHECK:       return
func.func @parts_that_read_memory(%buf: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %one = arith.constant 1.0 : f32
  %c1 = arith.constant 1 : index
  %c30 = arith.constant 30 : index
  %c60 = arith.constant 60 : index
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %buf[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %a = arith.cmpi slt, %tid, %c60 : index
  scf.if %a { llvm.store %one, %p : f32, !llvm.ptr }
  %b = arith.cmpi slt, %tid, %c30 : index
  scf.if %b {
    %next = arith.addi %tid, %c1 : index
    %j = arith.index_cast %next : index to i64
    %q = llvm.getelementptr %buf[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %q : !llvm.ptr -> f32
    %w = arith.addf %v, %one : f32
    llvm.store %w, %q : f32, !llvm.ptr
  }
  return
}

// -----

// A bound near the end of the index range is left alone (the cut lane would
// overflow): the branch stays.
// CHECK-LABEL: func.func @huge_bound
// CHECK: scf.if
func.func @huge_bound(%out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %one = arith.constant 1.0 : f32
  %big = arith.constant 9223372036854775807 : index
  %x = arith.addi %tid, %big : index
  %c5 = arith.constant 5 : index
  %a = arith.cmpi sle, %x, %c5 : index
  scf.if %a {
    %i = arith.index_cast %tid : index to i64
    %p = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %one, %p : f32, !llvm.ptr
  }
  return
}

// -----

// A partial last block's guard, block * 128 + tid <= 7999, where the lanes
// run in steps of 16 (tid / 16 a row, tid mod 16 its column: a scatter's
// update rows): in the lane loop the guard is lane + (block * 128 + step)
// <= 7999, a bound with two invariant terms, cut at 8000 - block * 128 -
// step. The row's index is then read in every lane the loop runs, no
// longer behind the guard (LLVM hoists it and vectorizes the row).
// CHECK-LABEL: func.func @partial_block_of_rows
// CHECK:       scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1
// CHECK:         scf.for %{{.*}} = %c0 to %c128 step %c16
// CHECK:           %[[T:.*]] = arith.subi %c8000, %{{.*}} : index
// CHECK:           %[[T2:.*]] = arith.subi %[[T]], %{{.*}} : index
// CHECK:           %[[LO:.*]] = arith.minsi %[[T2]], %c16
// CHECK:           %[[CUT:.*]] = arith.maxsi %[[LO]], %c0
// CHECK:           scf.for %{{.*}} = %c0 to %[[CUT]] step %c1 {
// CHECK-NOT:         scf.if
// CHECK:             llvm.load
// CHECK:             llvm.store
// CHECK-NEXT:      }
// CHECK-NOT:       llvm.store
// CHECK:     return
func.func @partial_block_of_rows(%rows: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id x {xla.range = [0 : index, 62 : index]}
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  %c7999 = arith.constant 7999 : index
  %one = arith.constant 1.0 : f32
  %first = arith.muli %bid, %c128 : index
  %linear = arith.addi %first, %tid : index
  %in = arith.cmpi sle, %linear, %c7999 : index
  scf.if %in {
    %b8 = arith.muli %bid, %c8 : index
    %r = arith.divui %tid, %c16 : index
    %row = arith.addi %b8, %r : index
    %ri = arith.index_cast %row : index to i64
    %rp = llvm.getelementptr %rows[%ri] : (!llvm.ptr, i64) -> !llvm.ptr, i32
    %target = llvm.load %rp invariant : !llvm.ptr -> i32
    %t = arith.index_cast %target : i32 to index
    %t16 = arith.muli %t, %c16 : index
    %col = arith.remui %tid, %c16 : index
    %at = arith.addi %t16, %col : index
    %i = arith.index_cast %at : index to i64
    %p = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %one, %p : f32, !llvm.ptr
  }
  return
}

// -----

// Split into parts, a kernel with exp keeps 2 interleaved vector
// iterations for its exp's loop only: the copy's loop is LLVM's to choose.
// CHECK:       // -----
// CHECK:       #[[$TWO:.*]] = #llvm.loop_interleave<count = 2 : i32>
// CHECK-DAG:   #[[$PLAIN:.*]] = #llvm.loop_annotation<unroll = #{{.*}}>
// CHECK-DAG:   #[[$PAIRED:.*]] = #llvm.loop_annotation<vectorize = #{{.*}}, interleave = #[[$TWO]], unroll = #{{.*}}>
// CHECK-LABEL: func.func @exp_beside_a_copy
// CHECK:         scf.for
// CHECK:           math.exp
// CHECK:         } {loop_annotation = #[[$PAIRED]]}
// CHECK:         scf.for
// CHECK-NOT:       math.exp
// CHECK:         } {loop_annotation = #[[$PLAIN]]}
func.func @exp_beside_a_copy(%in: !llvm.ptr, %out: !llvm.ptr) {
  %tid = gpu.thread_id x {xla.range = [0 : index, 127 : index]}
  %c100 = arith.constant 100 : index
  %c128 = arith.constant 128 : index
  %i = arith.index_cast %tid : index to i64
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %v = llvm.load %p invariant : !llvm.ptr -> f32
  %a = arith.cmpi slt, %tid, %c100 : index
  scf.if %a {
    %e = math.exp %v : f32
    %o = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %e, %o : f32, !llvm.ptr
  }
  %t = arith.addi %tid, %c128 : index
  %j = arith.index_cast %t : index to i64
  %q = llvm.getelementptr %out[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %v, %q : f32, !llvm.ptr
  return
}

// -----

// A pad of a reversed strided slice (jnp.pad(x[::-1, ::2], ...)[:, 1:-1],
// f32[515,257] over blocks of 128): two guards of different offsets, the
// kernel's last element (block * 128 + lane <= 132354) and the pad's
// column (r0 + lane + 1 >= 3, r0 the block's first column). The first
// cut folds the first; each piece is cut again at the second (a second
// round), so that no guard of the lane is left in a loop: each row's
// segment stores the pad's zeros in a loop of its own, then loads in a
// loop whose only branch is the row's (invariant: LLVM unswitches it).
// Cut once, the conditional load kept the loop scalar (3x XLA:CPU's time).
// The strided load (2 * lane + b, b subtracting the row's -512 * row) is
// addressed from the piece's first element, before the loop, plus
// 2 * (lane - lower bound), `nusw nuw` (splitStridedAddresses): LLVM then
// loads the lanes as vectors and a shuffle.
// CHECK-LABEL: func.func @pad_of_a_strided_slice
// CHECK:     %[[R0:.*]] = arith.remui %{{.*}}, %c257
// CHECK:     %[[CUT:.*]] = arith.subi %c2, %[[R0]]
// CHECK:     %[[ZEROS:.*]] = arith.maxsi %{{.*}}, %c0
// CHECK:     scf.for %{{.*}} = %c0 to %[[ZEROS]] step %c1 {
// CHECK-NOT:   llvm.load
// CHECK:       llvm.store %cst,
// CHECK-NEXT: }
// CHECK:     %[[FIRST:.*]] = llvm.getelementptr %arg0[%{{.*}}]
// CHECK:     scf.for %[[LANE:.*]] = %[[ZEROS]] to
// CHECK-NOT:   arith.cmpi sge, %{{.*}}, %c3
// CHECK:       %[[REL:.*]] = arith.subi %[[LANE]], %[[ZEROS]] overflow<nsw, nuw>
// CHECK:       %[[OFF:.*]] = arith.muli %[[REL]], %c2{{.*}} overflow<nsw, nuw>
// CHECK:       %[[OFF64:.*]] = arith.index_castui %[[OFF]]
// CHECK:       %[[P:.*]] = llvm.getelementptr nusw|nuw %[[FIRST]][%[[OFF64]]]
// CHECK:       llvm.load %[[P]]
// CHECK:     }
// CHECK:     %[[CUT2:.*]] = arith.subi %c259, %[[R0]]
// CHECK:     scf.for
// CHECK-NOT:   llvm.load
// CHECK:       llvm.store %cst,
// CHECK-NEXT: }
// CHECK:     scf.for
// CHECK-NOT:   arith.cmpi sge, %{{.*}}, %c3
// CHECK:       llvm.load
// CHECK:     }
// CHECK-NOT: scf.for
// CHECK:     return
func.func @pad_of_a_strided_slice(%in: !llvm.ptr, %out: !llvm.ptr) attributes {xla.launch_dims = {block_counts = array<i64: 1035, 1, 1>, thread_counts_per_block = array<i64: 128, 1, 1>}} {
  %c262140 = arith.constant 262140 : index
  %c2 = arith.constant 2 : index
  %c-512 = arith.constant -512 : index
  %c257 = arith.constant 257 : index
  %c128 = arith.constant 128 : index
  %c132354 = arith.constant 132354 : index
  %cst = arith.constant 0.000000e+00 : f32
  %c3 = arith.constant 3 : index
  %c512 = arith.constant 512 : index
  %c1 = arith.constant 1 : index
  %tid = gpu.thread_id  x {xla.range = [0 : index, 127 : index]}
  %bid = gpu.block_id  x {xla.range = [0 : index, 1034 : index]}
  %0 = arith.muli %bid, %c128 : index
  %1 = arith.addi %0, %tid : index
  %2 = arith.cmpi sle, %1, %c132354 : index
  scf.if %2 {
    %3 = arith.divui %1, %c257 : index
    %4 = arith.remui %1, %c257 : index
    %5 = arith.addi %4, %c1 : index
    %6 = arith.cmpi sge, %3, %c1 : index
    %7 = arith.cmpi sle, %3, %c512 : index
    %8 = arith.andi %6, %7 : i1
    %9 = arith.cmpi sge, %5, %c3 : index
    %10 = arith.andi %8, %9 : i1
    %11 = scf.if %10 -> (f32) {
      %14 = arith.muli %3, %c-512 : index
      %15 = arith.muli %4, %c2 : index
      %16 = arith.addi %14, %15 : index
      %17 = arith.addi %16, %c262140 : index
      %18 = arith.index_castui %17 : index to i64
      %19 = llvm.getelementptr inbounds %in[%18] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %20 = llvm.load %19 invariant : !llvm.ptr -> f32
      scf.yield %20 : f32
    } else {
      scf.yield %cst : f32
    }
    %12 = arith.index_castui %1 : index to i64
    %13 = llvm.getelementptr inbounds %out[%12] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %11, %13 : f32, !llvm.ptr
  }
  return
}

// -----

// The same pad with a block a row (the host's launch, loop.host_row_launch):
// the term that subtracts, -512 times the row, is the block's, computed
// before the lane loop; the load is split all the same (from the row's
// first element, plus 2 * (lane - lower bound), `nusw nuw`). Not split,
// the whole kernel's lanes were loaded one by one, and only a kernel
// compiled in parts (the row's loop a function, the row an argument) got
// vectors and a shuffle.
// CHECK-LABEL: func.func @pad_of_a_strided_slice_a_row_a_block
// CHECK:     %[[FIRST:.*]] = llvm.getelementptr %arg0[%{{.*}}]
// CHECK:     scf.for %[[LANE:.*]] = %[[LB:.*]] to
// CHECK:       %[[REL:.*]] = arith.subi %[[LANE]], %[[LB]] overflow<nsw, nuw>
// CHECK:       %[[OFF:.*]] = arith.muli %[[REL]], %c2{{.*}} overflow<nsw, nuw>
// CHECK:       %[[OFF64:.*]] = arith.index_castui %[[OFF]]
// CHECK:       %[[P:.*]] = llvm.getelementptr nusw|nuw %[[FIRST]][%[[OFF64]]]
// CHECK:       llvm.load %[[P]]
func.func @pad_of_a_strided_slice_a_row_a_block(%in: !llvm.ptr, %out: !llvm.ptr) attributes {xla.launch_dims = {block_counts = array<i64: 515, 1, 1>, thread_counts_per_block = array<i64: 257, 1, 1>}} {
  %c262140 = arith.constant 262140 : index
  %c2 = arith.constant 2 : index
  %c-512 = arith.constant -512 : index
  %c257 = arith.constant 257 : index
  %cst = arith.constant 0.000000e+00 : f32
  %c3 = arith.constant 3 : index
  %c512 = arith.constant 512 : index
  %c1 = arith.constant 1 : index
  %tid = gpu.thread_id  x {xla.range = [0 : index, 256 : index]}
  %bid = gpu.block_id  x {xla.range = [0 : index, 514 : index]}
  %row = arith.muli %bid, %c-512 : index
  %5 = arith.addi %tid, %c1 : index
  %6 = arith.cmpi sge, %bid, %c1 : index
  %7 = arith.cmpi sle, %bid, %c512 : index
  %8 = arith.andi %6, %7 : i1
  %9 = arith.cmpi sge, %5, %c3 : index
  %10 = arith.andi %8, %9 : i1
  %11 = scf.if %10 -> (f32) {
    %15 = arith.muli %tid, %c2 : index
    %16 = arith.addi %row, %15 : index
    %17 = arith.addi %16, %c262140 : index
    %18 = arith.index_castui %17 : index to i64
    %19 = llvm.getelementptr inbounds %in[%18] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %20 = llvm.load %19 invariant : !llvm.ptr -> f32
    scf.yield %20 : f32
  } else {
    scf.yield %cst : f32
  }
  %o0 = arith.muli %bid, %c257 : index
  %o1 = arith.addi %o0, %tid : index
  %o = arith.index_cast %o1 : index to i64
  %q = llvm.getelementptr %out[%o] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %11, %q : f32, !llvm.ptr
  return
}

// RUN: xla-gpu-opt %s -split-input-file \
// RUN:   -pass-pipeline='builtin.module(func.func(xla-gpu-expand-bf16-conversions))' \
// RUN:   | FileCheck %s

// bf16 -> f32: the bits shifted into the high half of an f32's.
// CHECK-LABEL: func.func @extend
// CHECK: %[[BITS:.*]] = arith.bitcast %{{.*}} : bf16 to i16
// CHECK: %[[WIDE:.*]] = arith.extui %[[BITS]] : i16 to i32
// CHECK: %[[HIGH:.*]] = arith.shli %[[WIDE]], %{{.*}} : i32
// CHECK: %[[F:.*]] = arith.bitcast %[[HIGH]] : i32 to f32
// CHECK-NOT: arith.extf
// CHECK: return %[[F]]
func.func @extend(%a: bf16) -> f32 {
  %e = arith.extf %a : bf16 to f32
  return %e : f32
}

// -----

// f32 -> bf16: rounded to nearest even on the bits (0x7fff plus the kept
// half's lowest bit), a NaN made the quiet NaN 0x7fc0.
// CHECK-LABEL: func.func @truncate
// CHECK: %[[NAN:.*]] = arith.cmpf une, %[[X:.*]], %[[X]] : f32
// CHECK-DAG: %[[QNAN:.*]] = arith.constant 32704 : i16
// CHECK-DAG: %[[HALF:.*]] = arith.constant 32767 : i32
// CHECK: arith.addi %{{.*}}, %[[HALF]] : i32
// CHECK: %[[R:.*]] = arith.trunci %{{.*}} : i32 to i16
// CHECK: %[[S:.*]] = arith.select %[[NAN]], %[[QNAN]], %[[R]] : i16
// CHECK: arith.bitcast %[[S]] : i16 to bf16
// CHECK-NOT: arith.truncf
func.func @truncate(%x: f32) -> bf16 {
  %t = arith.truncf %x : f32 to bf16
  return %t : bf16
}

// -----

// Everything else stays as it is: max and min (arith-expand would make
// compares and selects of them), f16 conversions, f32 arithmetic.
// CHECK-LABEL: func.func @others
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.addf
// CHECK-NOT: arith.cmpf
// CHECK-NOT: arith.select
func.func @others(%a: f32, %b: f32, %h: f16) -> (f32, f32, f32, f32) {
  %max = arith.maximumf %a, %b : f32
  %min = arith.minimumf %a, %b : f32
  %e = arith.extf %h : f16 to f32
  %zero = arith.constant -0.0 : f32
  %same = arith.addf %a, %zero : f32
  return %max, %min, %e, %same : f32, f32, f32, f32
}

// -----

// A bf16 max chain as the emitters write a bf16 reducer (each step in f32,
// rounded back to bf16, widened again): the max of bf16 values is one of
// them, so the round trip goes and the chain stays in f32 -- the one
// truncf left rounds the result. An add is not exact: its round trip stays.
// CHECK-LABEL: func.func @exact_round_trips
// CHECK-SAME: (%[[A:.*]]: bf16, %[[B:.*]]: bf16, %[[C:.*]]: bf16, %[[P:.*]]: i1)
// CHECK: %[[M:.*]] = arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: %[[N:.*]] = arith.minimumf %[[M]], %{{.*}} : f32
// CHECK: %[[S:.*]] = arith.select %[[P]], %[[N]], %{{.*}} : f32
// CHECK: %[[Q:.*]] = arith.negf %[[S]] : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[Q]], %{{.*}} : f32
// CHECK: arith.addi
// CHECK: %[[BACK:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: %[[AGAIN:.*]] = arith.maximumf %[[BACK]], %[[Q]] : f32
// CHECK: return %[[AGAIN]]
func.func @exact_round_trips(%a: bf16, %b: bf16, %c: bf16, %p: i1) -> f32 {
  %ea = arith.extf %a : bf16 to f32
  %eb = arith.extf %b : bf16 to f32
  %ec = arith.extf %c : bf16 to f32
  %m = arith.maximumf %ea, %eb : f32
  %tm = arith.truncf %m : f32 to bf16
  %em = arith.extf %tm : bf16 to f32
  %n = arith.minimumf %em, %ec : f32
  %tn = arith.truncf %n : f32 to bf16
  %en = arith.extf %tn : bf16 to f32
  %s = arith.select %p, %en, %ea : f32
  %ts = arith.truncf %s : f32 to bf16
  %es = arith.extf %ts : bf16 to f32
  %q = arith.negf %es : f32
  %tq = arith.truncf %q : f32 to bf16
  %eq = arith.extf %tq : bf16 to f32
  %sum = arith.addf %eq, %ec : f32
  %tsum = arith.truncf %sum : f32 to bf16
  %esum = arith.extf %tsum : bf16 to f32
  %again = arith.maximumf %esum, %eq : f32
  return %again : f32
}

// -----

// The truncf left of an exact value (a bf16 ReLU: the max of a widened
// bf16 and a 0 bf16 holds; a vector of them too) keeps its bits' high half
// with no rounding, a NaN still the quiet NaN 0x7fc0. 0.1 is no bf16
// value: a max with it is rounded.
// CHECK-LABEL: func.func @exact_truncations
// CHECK-SAME: (%[[A:.*]]: bf16, %[[V:.*]]: vector<4xbf16>)
// CHECK: %[[M:.*]] = arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: arith.addi
// CHECK: %[[BITS:.*]] = arith.bitcast %[[M]] : f32 to i32
// CHECK: %[[HIGH:.*]] = arith.shrui %[[BITS]], %{{.*}} : i32
// CHECK: %[[KEPT:.*]] = arith.trunci %[[HIGH]] : i32 to i16
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[M]], %[[M]] : f32
// CHECK: %[[S:.*]] = arith.select %[[NAN]], %{{.*}}, %[[KEPT]] : i16
// CHECK: %[[RELU:.*]] = arith.bitcast %[[S]] : i16 to bf16
// CHECK: %[[VM:.*]] = arith.maximumf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NOT: arith.addi
// CHECK: arith.shrui %{{.*}}, %{{.*}} : vector<4xi32>
// CHECK: %[[VS:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<4xi1>, vector<4xi16>
// CHECK: %[[VRELU:.*]] = arith.bitcast %[[VS]] : vector<4xi16> to vector<4xbf16>
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: arith.addi
// CHECK: return %[[RELU]], %[[VRELU]]
func.func @exact_truncations(%a: bf16, %v: vector<4xbf16>) -> (bf16, vector<4xbf16>, bf16) {
  %ea = arith.extf %a : bf16 to f32
  %zero = arith.constant 0.0 : f32
  %m = arith.maximumf %ea, %zero : f32
  %relu = arith.truncf %m : f32 to bf16
  %ev = arith.extf %v : vector<4xbf16> to vector<4xf32>
  %zeros = arith.constant dense<0.0> : vector<4xf32>
  %vm = arith.maximumf %ev, %zeros : vector<4xf32>
  %vrelu = arith.truncf %vm : vector<4xf32> to vector<4xbf16>
  %tenth = arith.constant 0.1 : f32
  %t = arith.maximumf %ea, %tenth : f32
  %rounded = arith.truncf %t : f32 to bf16
  return %relu, %vrelu, %rounded : bf16, vector<4xbf16>, bf16
}

// -----

// A lane's own value read back from its stack slot (as
// -xla-gpu-lower-kernel-to-cpu keeps it for the warp's shuffle tree) is
// exact where every value stored into the slot is: the tree's round trip
// goes, in f16 as in bf16. A slot that also holds a sum is not exact.
// CHECK-LABEL: func.func @exact_slots
// CHECK-SAME: (%[[A:.*]]: f16, %[[B:.*]]: f16, %[[C:.*]]: f16)
// CHECK: %[[OWN:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: %[[M:.*]] = arith.maximumf %[[OWN]], %{{.*}} : f32
// CHECK-NOT: arith.extf %{{.*}} : f16 to f32
// CHECK: %[[N:.*]] = arith.maximumf %[[M]], %{{.*}} : f32
// CHECK: %[[SUMMED:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: %[[P:.*]] = arith.maximumf %[[SUMMED]], %{{.*}} : f32
// CHECK: %[[T:.*]] = arith.truncf %[[P]] : f32 to f16
// CHECK: %[[BACK:.*]] = arith.extf %[[T]] : f16 to f32
// CHECK: arith.maximumf %[[BACK]], %{{.*}} : f32
func.func @exact_slots(%a: f16, %b: f16, %c: f16) -> (f32, f32) {
  %one = llvm.mlir.constant(1 : i64) : i64
  %slot = llvm.alloca %one x f32 : (i64) -> !llvm.ptr
  %other = llvm.alloca %one x f32 : (i64) -> !llvm.ptr
  %ea = arith.extf %a : f16 to f32
  %eb = arith.extf %b : f16 to f32
  %ec = arith.extf %c : f16 to f32
  %m0 = arith.maximumf %ea, %eb : f32
  llvm.store %m0, %slot : f32, !llvm.ptr
  %own = llvm.load %slot : !llvm.ptr -> f32
  %m = arith.maximumf %own, %ec : f32
  %tm = arith.truncf %m : f32 to f16
  %em = arith.extf %tm : f16 to f32
  %n = arith.maximumf %em, %ea : f32
  %s = arith.addf %ea, %eb : f32
  llvm.store %s, %other : f32, !llvm.ptr
  %summed = llvm.load %other : !llvm.ptr -> f32
  %p = arith.maximumf %summed, %ec : f32
  %tp = arith.truncf %p : f32 to f16
  %ep = arith.extf %tp : f16 to f32
  %q = arith.maximumf %ep, %ea : f32
  return %n, %q : f32, f32
}

// -----

// A slot of f16 (or bf16) values that are all exact (a constant, a max's
// truncf) and are only widened where loaded is kept in f32: the stores
// take the f32 values, the loads are f32 and the round trips go: an
// accumulator's slot (its max with its last value stored again, or its
// value stored back as it is), and a slot its values go on to (a warp's
// result in the shared tile). Slots stay that also hold a sum, that hold
// a value not known exact (an argument), or whose value is used as f16.
// CHECK-LABEL: func.func @exact_narrow_slots
// CHECK: %[[ACC:.*]] = llvm.alloca %{{.*}} x !llvm.array<8 x f32>
// CHECK: %[[SHARED:.*]] = llvm.alloca %{{.*}} x f32
// CHECK: %[[SUMS:.*]] = llvm.alloca %{{.*}} x f16
// CHECK: %[[COPIES:.*]] = llvm.alloca %{{.*}} x bf16
// CHECK: %[[USED:.*]] = llvm.alloca %{{.*}} x f16
// CHECK: %[[AT:.*]] = llvm.getelementptr %[[ACC]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: llvm.store %{{.*}}, %[[AT]] : f32, !llvm.ptr
// CHECK: %[[OWN:.*]] = llvm.load %[[AT]] : !llvm.ptr -> f32
// CHECK: %[[M:.*]] = arith.maximumf %[[OWN]], %{{.*}} : f32
// CHECK: llvm.store %[[M]], %[[AT]] : f32, !llvm.ptr
// CHECK: %[[KEEP:.*]] = llvm.load %[[AT]] : !llvm.ptr -> f32
// CHECK: llvm.store %[[KEEP]], %[[AT]] : f32, !llvm.ptr
// CHECK: %[[LAST:.*]] = llvm.load %[[AT]] : !llvm.ptr -> f32
// CHECK: %[[WARP:.*]] = arith.maximumf %[[LAST]], %{{.*}} : f32
// CHECK: llvm.store %[[WARP]], %[[SHARED]] : f32, !llvm.ptr
// CHECK: %[[RESULT:.*]] = llvm.load %[[SHARED]] : !llvm.ptr -> f32
// CHECK: llvm.store %{{.*}}, %[[SUMS]] : f16, !llvm.ptr
// CHECK: llvm.load %[[SUMS]] : !llvm.ptr -> f16
// CHECK: llvm.store %{{.*}}, %[[COPIES]] : bf16, !llvm.ptr
// CHECK: llvm.load %[[COPIES]] : !llvm.ptr -> bf16
// CHECK: llvm.store %{{.*}}, %[[USED]] : f16, !llvm.ptr
// CHECK: %[[KEPT:.*]] = llvm.load %[[USED]] : !llvm.ptr -> f16
// CHECK: return %[[RESULT]], %{{.*}}, %{{.*}}, %[[KEPT]]
func.func @exact_narrow_slots(%a: f16, %b: f16, %c: bf16, %i: i64) -> (f32, f32, f32, f16) {
  %one = llvm.mlir.constant(1 : i64) : i64
  %acc = llvm.alloca %one x !llvm.array<8 x f16> : (i64) -> !llvm.ptr
  %shared = llvm.alloca %one x f16 : (i64) -> !llvm.ptr
  %sums = llvm.alloca %one x f16 : (i64) -> !llvm.ptr
  %copies = llvm.alloca %one x bf16 : (i64) -> !llvm.ptr
  %used = llvm.alloca %one x f16 : (i64) -> !llvm.ptr
  %at = llvm.getelementptr %acc[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f16
  %init = arith.constant 0xFC00 : f16
  llvm.store %init, %at : f16, !llvm.ptr
  %own = llvm.load %at : !llvm.ptr -> f16
  %eown = arith.extf %own : f16 to f32
  %ea = arith.extf %a : f16 to f32
  %m = arith.maximumf %eown, %ea : f32
  %tm = arith.truncf %m : f32 to f16
  llvm.store %tm, %at : f16, !llvm.ptr
  %keep = llvm.load %at : !llvm.ptr -> f16
  llvm.store %keep, %at : f16, !llvm.ptr
  %last = llvm.load %at : !llvm.ptr -> f16
  %elast = arith.extf %last : f16 to f32
  %warp = arith.maximumf %elast, %ea : f32
  %twarp = arith.truncf %warp : f32 to f16
  llvm.store %twarp, %shared : f16, !llvm.ptr
  %result = llvm.load %shared : !llvm.ptr -> f16
  %eresult = arith.extf %result : f16 to f32
  %eb = arith.extf %b : f16 to f32
  %s = arith.addf %ea, %eb : f32
  %ts = arith.truncf %s : f32 to f16
  llvm.store %ts, %sums : f16, !llvm.ptr
  %sum = llvm.load %sums : !llvm.ptr -> f16
  %esum = arith.extf %sum : f16 to f32
  llvm.store %c, %copies : bf16, !llvm.ptr
  %copy = llvm.load %copies : !llvm.ptr -> bf16
  %ecopy = arith.extf %copy : bf16 to f32
  llvm.store %tm, %used : f16, !llvm.ptr
  %kept = llvm.load %used : !llvm.ptr -> f16
  return %eresult, %esum, %ecopy, %kept : f32, f32, f32, f16
}

// -----

// A warp's shuffle buffer (i32 slots holding f16 or bf16 bits, as
// -xla-gpu-lower-kernel-to-cpu makes it) of exact values is kept in f32:
// no conversion to f16 where a lane stores its value, none back where
// another reads it. A buffer of sums stays, and so does one whose bits
// are read as an integer.
// CHECK-LABEL: func.func @exact_shuffle_buffers
// CHECK: %[[MAXIMA:.*]] = llvm.alloca %{{.*}} x !llvm.array<4 x f32>
// CHECK: %[[SUMS:.*]] = llvm.alloca %{{.*}} x i32
// CHECK: %[[BITS:.*]] = llvm.alloca %{{.*}} x i32
// CHECK: %[[M:.*]] = arith.maximumf %{{.*}}, %{{.*}} : f32
// CHECK: %[[AT:.*]] = llvm.getelementptr %[[MAXIMA]][%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: llvm.store %[[M]], %[[AT]] : f32, !llvm.ptr
// CHECK: %[[OTHER:.*]] = llvm.load %[[AT]] : !llvm.ptr -> f32
// CHECK: %[[TREE:.*]] = arith.maximumf %[[OTHER]], %[[M]] : f32
// CHECK: llvm.store %{{.*}}, %[[SUMS]] : i32, !llvm.ptr
// CHECK: llvm.load %[[SUMS]] : !llvm.ptr -> i32
// CHECK: llvm.store %{{.*}}, %[[BITS]] : i32, !llvm.ptr
// CHECK: %[[RAW:.*]] = llvm.load %[[BITS]] : !llvm.ptr -> i32
// CHECK: return %[[TREE]], %{{.*}}, %[[RAW]]
func.func @exact_shuffle_buffers(%a: f16, %b: f16, %c: bf16, %i: i64) -> (f32, f32, i32) {
  %one = llvm.mlir.constant(1 : i64) : i64
  %maxima = llvm.alloca %one x !llvm.array<4 x i32> : (i64) -> !llvm.ptr
  %sums = llvm.alloca %one x i32 : (i64) -> !llvm.ptr
  %bits = llvm.alloca %one x i32 : (i64) -> !llvm.ptr
  %ea = arith.extf %a : f16 to f32
  %eb = arith.extf %b : f16 to f32
  %m = arith.maximumf %ea, %eb : f32
  %tm = arith.truncf %m : f32 to f16
  %im = arith.bitcast %tm : f16 to i16
  %wm = arith.extui %im : i16 to i32
  %at = llvm.getelementptr %maxima[%i] : (!llvm.ptr, i64) -> !llvm.ptr, i32
  llvm.store %wm, %at : i32, !llvm.ptr
  %other = llvm.load %at : !llvm.ptr -> i32
  %no = arith.trunci %other : i32 to i16
  %ho = arith.bitcast %no : i16 to f16
  %eo = arith.extf %ho : f16 to f32
  %tree = arith.maximumf %eo, %m : f32
  %s = arith.addf %ea, %eb : f32
  %ts = arith.truncf %s : f32 to f16
  %is = arith.bitcast %ts : f16 to i16
  %ws = arith.extui %is : i16 to i32
  llvm.store %ws, %sums : i32, !llvm.ptr
  %sum = llvm.load %sums : !llvm.ptr -> i32
  %ns = arith.trunci %sum : i32 to i16
  %hs = arith.bitcast %ns : i16 to f16
  %es = arith.extf %hs : f16 to f32
  %ec = arith.extf %c : bf16 to f32
  %mc = arith.maximumf %ec, %ec : f32
  %tc = arith.truncf %mc : f32 to bf16
  %ic = arith.bitcast %tc : bf16 to i16
  %wc = arith.extui %ic : i16 to i32
  llvm.store %wc, %bits : i32, !llvm.ptr
  %raw = llvm.load %bits : !llvm.ptr -> i32
  return %tree, %es, %raw : f32, f32, i32
}

// Every verifier message of the xla_gpu ops, and malformed op syntax.
// RUN: xla-gpu-opt %s -split-input-file -verify-diagnostics

#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 + s0), domain: d0 in [0, 3], s0 in [0, 1]">
func.func @apply_indexing_operand_count(%a: index) -> index {
  // expected-error@+1 {{the indexing map takes 1 dimensions and 1 symbols (2 operands), got 1}}
  %0 = xla_gpu.apply_indexing #map(%a)
  return %0 : index
}

// -----

func.func @apply_indexing_not_a_map(%a: index) -> index {
  // expected-error@+1 {{invalid kind of attribute specified}}
  %0 = xla_gpu.apply_indexing affine_map<(d0) -> (d0)>(%a)
  return %0 : index
}

// -----

func.func @apply_indexing_generic_results(%a: index) {
  // expected-error@+1 {{the indexing map has 1 results, the op 2}}
  %0:2 = "xla_gpu.apply_indexing"(%a) <{indexing_map_attr = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 3]">}> : (index) -> (index, index)
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d0 + s0), domain: d0 in [0, 3], d1 in [0, 3], s0 in [0, 1]">
func.func @loop_dim_count(%a: index, %t: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{the indexing map has 2 dimensions, got 1 operands}}
  %r = xla_gpu.loop (%a)[%i] -> (%x) in #map iter_args(%it = %t) -> (tensor<8xf32>) {
    xla_gpu.yield %it : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 + s0), domain: d0 in [0, 3], s0 in [0, 1]">
func.func @loop_induction_var_count(%a: index, %t: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{the indexing map has 1 range variables, got 2 induction variables}}
  %r = xla_gpu.loop (%a)[%i, %j] -> (%x) in #map iter_args(%it = %t) -> (tensor<8xf32>) {
    xla_gpu.yield %it : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0 + s0, d0), domain: d0 in [0, 3], s0 in [0, 1]">
func.func @loop_result_names(%a: index, %t: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{the indexing map has 2 results, got 1 names for them}}
  %r = xla_gpu.loop (%a)[%i] -> (%x) in #map iter_args(%it = %t) -> (tensor<8xf32>) {
    xla_gpu.yield %it : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

#map = #xla_gpu.indexing_map<"(d0){rt0} -> (d0 + rt0), domain: d0 in [0, 3], rt0 in [0, 1]">
func.func @loop_runtime_vars(%a: index, %t: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{the indexing map of a loop cannot have runtime variables}}
  %r = xla_gpu.loop (%a) -> (%x) in #map iter_args(%it = %t) -> (tensor<8xf32>) {
    xla_gpu.yield %it : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

#map = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 3]">
func.func @loop_yield_type(%a: index, %t: tensor<8xf32>, %f: f32) -> tensor<8xf32> {
  %r = xla_gpu.loop (%a) -> (%x) in #map iter_args(%it = %t) -> (tensor<8xf32>) {
    // expected-error@+1 {{yields 'f32' but the loop returns 'tensor<8xf32>'}}
    xla_gpu.yield %f : f32
  }
  return %r : tensor<8xf32>
}

// -----

#map = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 3]">
func.func @loop_result_type_count(%a: index, %t: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error@+1 {{expected 1 result types, got 2}}
  %r = xla_gpu.loop (%a) -> (%x) in #map iter_args(%it = %t) -> (tensor<8xf32>, f32) {
    xla_gpu.yield %it : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

func.func @atomic_rmw_index_count(%in: tensor<2x3xf32>, %i: index) -> tensor<2x3xf32> {
  // expected-error@+1 {{expected 2 indices for a tensor of rank 2, got 1}}
  %ret = xla_gpu.atomic_rmw %in[%i] : tensor<2x3xf32> {
  ^bb0(%current : f32):
    xla_gpu.yield %current : f32
  }
  return %ret : tensor<2x3xf32>
}

// -----

func.func @atomic_rmw_argument_type(%in: tensor<2x3xf32>, %i: index) -> tensor<2x3xf32> {
  // expected-error@+1 {{expected the region to take one argument of the element type 'f32'}}
  %ret = xla_gpu.atomic_rmw %in[%i, %i] : tensor<2x3xf32> {
  ^bb0(%current : i32):
    xla_gpu.yield %current : i32
  }
  return %ret : tensor<2x3xf32>
}

// -----

func.func @atomic_rmw_yield_type(%in: tensor<2x3xf32>, %i: index, %x: i32) -> tensor<2x3xf32> {
  // expected-error@+1 {{expected the region to yield one value of the element type 'f32'}}
  %ret = xla_gpu.atomic_rmw %in[%i, %i] : tensor<2x3xf32> {
  ^bb0(%current : f32):
    xla_gpu.yield %x : i32
  }
  return %ret : tensor<2x3xf32>
}

// -----

func.func @pure_call_unknown_callee(%a: f32) -> f32 {
  // expected-error@+1 {{'missing' does not reference a valid function}}
  %r = xla_gpu.pure_call @missing(%a) : (f32) -> f32
  return %r : f32
}

// -----

func.func private @callee(%a: f32) -> f32 {
  return %a : f32
}
func.func @pure_call_type_mismatch(%a: i32) -> i32 {
  // expected-error@+1 {{callee 'callee' has type '(f32) -> f32', expected '(i32) -> i32'}}
  %r = xla_gpu.pure_call @callee(%a) : (i32) -> i32
  return %r : i32
}

// -----

func.func private @reducer(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  return %0 : f32
}
func.func @shuffle_reduce_distance(%a: f32) -> f32 {
  // expected-error@+1 {{max_distance must be a power of two no larger than 16 (half a warp), got 12}}
  %r = xla_gpu.shuffle_reduce(%a) to 12 combiner=@reducer : f32
  return %r : f32
}

// -----

func.func private @reducer(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  return %0 : f32
}
func.func @shuffle_reduce_combiner_type(%a: f32, %b: i32) -> (f32, i32) {
  // expected-error@+1 {{combiner 'reducer' has type '(f32, f32) -> f32', expected '(f32, i32, f32, i32) -> (f32, i32)'}}
  %r:2 = xla_gpu.shuffle_reduce(%a, %b) to 8 combiner=@reducer : f32, i32
  return %r#0, %r#1 : f32, i32
}

// -----

func.func private @add(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  return %0 : f32
}
func.func @reduce_dimension_range(%in: tensor<16x8xf32>, %init: f32) -> tensor<16xf32> {
  // expected-error@+1 {{reduction dimension 2 is out of range for rank 2}}
  %r = xla_gpu.reduce (%in) inits(%init) dimensions=[2] combiner=@add : tensor<16x8xf32> to tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

func.func private @add(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  return %0 : f32
}
func.func @reduce_dimension_order(%in: tensor<16x8x4xf32>, %init: f32) -> tensor<8xf32> {
  // expected-error@+1 {{dimensions must be strictly increasing}}
  %r = xla_gpu.reduce (%in) inits(%init) dimensions=[2, 0] combiner=@add : tensor<16x8x4xf32> to tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func private @add(%a: f32, %b: f32) -> f32 {
  %0 = arith.addf %a, %b : f32
  return %0 : f32
}
func.func @reduce_result_type(%in: tensor<16x8xf32>, %init: f32) -> tensor<8xf32> {
  // expected-error@+1 {{result type 'tensor<8xf32>' does not match input 'tensor<16x8xf32>' reduced along [1]}}
  %r = xla_gpu.reduce (%in) inits(%init) dimensions=[1] combiner=@add : tensor<16x8xf32> to tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @reduce_missing_combiner(%in: tensor<16x8xf32>, %init: f32) -> tensor<16xf32> {
  // expected-error@+1 {{'nope' does not reference a valid function}}
  %r = xla_gpu.reduce (%in) inits(%init) dimensions=[1] combiner=@nope : tensor<16x8xf32> to tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

func.func @predicated_insert_index_count(%v: f32, %t: tensor<2x3xf32>, %i: index, %c: i1) -> tensor<2x3xf32> {
  // expected-error@+1 {{expected 2 indices for a tensor of rank 2, got 1}}
  %r = xla_gpu.predicated_insert %v into %t[%i] if %c : tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

func.func @predicated_extract_index_count(%f: f32, %t: tensor<2x3xf32>, %i: index, %c: i1) -> f32 {
  // expected-error@+1 {{expected 2 indices for a tensor of rank 2, got 3}}
  %r = xla_gpu.predicated_extract %t[%i, %i, %i] if %c else %f : tensor<2x3xf32>
  return %r : f32
}

// -----

func.func @predicated_insert_generic_value_type(%v: i32, %t: tensor<2x3xf32>, %i: index, %c: i1) -> tensor<2x3xf32> {
  // expected-error@+1 {{value type matches element type of dest}}
  %r = "xla_gpu.predicated_insert"(%c, %v, %t, %i, %i) : (i1, i32, tensor<2x3xf32>, index, index) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

func.func @allocate_shared_dynamic() {
  // expected-error@+1 {{must be statically shaped tensor}}
  %0 = xla_gpu.allocate_shared : tensor<?x4xf32>
  return
}

// -----

func.func @sync_threads_types(%a: tensor<4xf32>) {
  // expected-error@+1 {{all of {operands, results} have same type}}
  %0 = "xla_gpu.sync_threads"(%a) : (tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @yield_outside_loop(%a: f32) {
  // expected-error@+1 {{expects parent op to be one of 'xla_gpu.atomic_rmw, xla_gpu.loop'}}
  xla_gpu.yield %a : f32
}

// -----

#map = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d0 * 2 + s0, d1), domain: d0 in [0, 15], d1 in [0, 31], s0 in [0, 1]">
#vmap = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (s0), domain: d0 in [0, 15], d1 in [0, 31], s0 in [0, 1]">
func.func private @exp(%t: tensor<32x32xf32>, %i: index, %j: index) -> f32 {
  %v = tensor.extract %t[%i, %j] : tensor<32x32xf32>
  return %v : f32
}
func.func @materialize_index_count(%in: tensor<32x32xf32>, %tid: index) {
  // expected-error@+1 {{the indexing map takes 2 dimensions, got 1 indices}}
  %v = xla_gpu.materialize @exp(%in) at #map(%tid) : (tensor<32x32xf32>) -> !xla_gpu.indexed_vector<2xf32, #vmap>
  return
}

// -----

#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#imap = #xla_gpu.indexing_map<"(d0, d1) -> (d0, d1), domain: d0 in [0, 15], d1 in [0, 1]">
func.func @insert_element_type(%v: !xla_gpu.indexed_vector<2xf32, #vmap>, %out: tensor<16x2xi32>, %tid: index) -> tensor<16x2xi32> {
  // expected-error@+1 {{element types differ: 'f32' vs 'i32'}}
  %r = xla_gpu.insert %v(%tid) into %out at #imap : !xla_gpu.indexed_vector<2xf32, #vmap> -> tensor<16x2xi32>
  return %r : tensor<16x2xi32>
}

// -----

#vmap = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 15]">
// expected-error@+1 {{indexed_vector dimensions must be positive, got 0}}
func.func @indexed_vector_zero_dim(%v: !xla_gpu.indexed_vector<0xf32, #vmap>)

// -----

#map = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 31]">
// expected-error@+1 {{expected the memory space 'registers' or 'shmem', got 'global'}}
func.func @layout_memory_space() attributes {l = #xla_gpu.layout<global, #map>}

// -----

// expected-error@+1 {{expected the memory space 'registers' or 'shmem', got 'global'}}
func.func @layout_memory_space_string() attributes {l = #xla_gpu.layout<"global", "(d0) -> (d0), domain: d0 in [0, 31]">}

// -----

// expected-error@+1 {{unregistered operation 'xla_gpu.frobnicate' found in dialect ('xla_gpu') that does not allow unknown operations}}
"xla_gpu.frobnicate"() : () -> ()

// -----

func.func @unknown_op() {
  // expected-error@+1 {{custom op 'xla_gpu.no_such_op' is unknown}}
  xla_gpu.no_such_op
  return
}

// -----

func.func private @reducer(%a: f32, %b: f32) -> f32 {
  return %a : f32
}
func.func @shuffle_reduce_no_operands() {
  // expected-error@+1 {{expected operands}}
  "xla_gpu.shuffle_reduce"() <{max_distance = 4 : i64, combiner = @reducer}> : () -> ()
  return
}

// -----

func.func private @add(%a: f32, %b: f32) -> f32 {
  return %a : f32
}
func.func @reduce_input_type_count(%in: tensor<16x8xf32>, %init: f32) {
  // expected-error@+1 {{expected 1 input types, got 2}}
  %r = xla_gpu.reduce (%in) inits(%init) dimensions=[1] combiner=@add : tensor<16x8xf32>, tensor<16x8xf32> to tensor<16xf32>
  return
}

// -----

func.func private @add(%a: f32, %b: f32) -> f32 {
  return %a : f32
}
func.func @reduce_scalar_input(%in: f32, %init: f32) {
  // expected-error@+1 {{expected tensor inputs, got 'f32'}}
  %r = xla_gpu.reduce (%in) inits(%init) dimensions=[0] combiner=@add : f32 to tensor<16xf32>
  return
}

// -----

func.func private @add(%a: f32, %b: f32) -> f32 {
  return %a : f32
}
func.func @reduce_init_count(%in: tensor<16x8xf32>, %init: f32) {
  // expected-error@+1 {{expected one init per input}}
  %r = xla_gpu.reduce (%in) inits(%init, %init) dimensions=[1] combiner=@add : tensor<16x8xf32> to tensor<16xf32>
  return
}

// -----

func.func private @add() {
  return
}
func.func @reduce_no_inputs() {
  // expected-error@+1 {{expected at least one input}}
  "xla_gpu.reduce"() <{dimensions = array<i64>, combiner = @add}> : () -> ()
  return
}

// -----

func.func private @add(%a: f32, %b: f32) -> f32 {
  return %a : f32
}
func.func @reduce_result_count(%in: tensor<16x8xf32>, %init: f32) {
  // expected-error@+1 {{expected 1 results, got 0}}
  "xla_gpu.reduce"(%in, %init) <{dimensions = array<i64: 1>, combiner = @add}> : (tensor<16x8xf32>, f32) -> ()
  return
}

// -----

func.func private @add(%a: f32, %b: f32, %c: f32, %d: f32) -> (f32, f32) {
  return %a, %b : f32, f32
}
func.func @reduce_input_shapes(%a: tensor<16x8xf32>, %b: tensor<8x16xf32>, %init: f32) {
  // expected-error@+1 {{all inputs must have the same shape}}
  %r:2 = xla_gpu.reduce (%a, %b) inits(%init, %init) dimensions=[1] combiner=@add : tensor<16x8xf32>, tensor<8x16xf32> to tensor<16xf32>, tensor<8xf32>
  return
}

// -----

func.func private @add(%a: f32, %b: f32) -> f32 {
  return %a : f32
}
func.func @reduce_init_type(%in: tensor<16x8xf32>, %init: i32) {
  // expected-error@+1 {{init type 'i32' does not match element type 'f32'}}
  %r = "xla_gpu.reduce"(%in, %init) <{dimensions = array<i64: 1>, combiner = @add}> : (tensor<16x8xf32>, i32) -> tensor<16xf32>
  return
}

// -----

func.func @apply_indexing_generic_operands(%a: index) {
  // expected-error@+1 {{the indexing map takes 2 operands, got 1}}
  %0 = "xla_gpu.apply_indexing"(%a) <{indexing_map_attr = #xla_gpu.indexing_map<"(d0)[s0] -> (d0), domain: d0 in [0, 3], s0 in [0, 3]">}> : (index) -> index
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 3]">
func.func @loop_generic_dims(%a: index) {
  // expected-error@+1 {{the indexing map has 1 dimensions, got 2 operands}}
  "xla_gpu.loop"(%a, %a) <{indexing_map_attr = #map, operandSegmentSizes = array<i32: 2, 0>}> ({
  ^bb0(%x: index):
    xla_gpu.yield
  }) : (index, index) -> ()
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0){rt0} -> (d0), domain: d0 in [0, 3], rt0 in [0, 3]">
func.func @loop_generic_runtime_vars(%a: index) {
  // expected-error@+1 {{the indexing map of a loop cannot have runtime variables}}
  "xla_gpu.loop"(%a) <{indexing_map_attr = #map, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%x: index):
    xla_gpu.yield
  }) : (index) -> ()
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0), domain: d0 in [0, 3], s0 in [0, 3]">
func.func @loop_block_args(%a: index) {
  // expected-error@+1 {{expected 2 block arguments (range variables, map results, iter_args), got 1}}
  "xla_gpu.loop"(%a) <{indexing_map_attr = #map, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%x: index):
    xla_gpu.yield
  }) : (index) -> ()
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 3]">
func.func @loop_index_args(%a: index) {
  // expected-error@+1 {{induction variables and map results must be index, got 'i32'}}
  "xla_gpu.loop"(%a) <{indexing_map_attr = #map, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%x: i32):
    xla_gpu.yield
  }) : (index) -> ()
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 3]">
func.func @loop_iter_arg_type(%a: index, %f: f32) {
  // expected-error@+1 {{iter_arg, init and result types must match, got 'i32', 'f32', 'f32'}}
  %r = "xla_gpu.loop"(%a, %f) <{indexing_map_attr = #map, operandSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%x: index, %it: i32):
    xla_gpu.yield %f : f32
  }) : (index, f32) -> f32
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 3]">
func.func @loop_result_per_init(%a: index, %f: f32) {
  // expected-error@+1 {{expected one result per init}}
  "xla_gpu.loop"(%a, %f) <{indexing_map_attr = #map, operandSegmentSizes = array<i32: 1, 1>}> ({
  ^bb0(%x: index, %it: f32):
    xla_gpu.yield %it : f32
  }) : (index, f32) -> ()
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 3]">
func.func @loop_terminator(%a: index) {
  // expected-error@+1 {{expected the body to end with xla_gpu.yield}}
  "xla_gpu.loop"(%a) <{indexing_map_attr = #map, operandSegmentSizes = array<i32: 1, 0>}> ({
  ^bb0(%x: index):
    llvm.unreachable
  }) : (index) -> ()
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
func.func @materialize_missing_callee(%in: tensor<16x2xf32>, %tid: index) {
  // expected-error@+1 {{'nope' does not reference a valid function}}
  %v = xla_gpu.materialize @nope(%in) at #map(%tid) : (tensor<16x2xf32>) -> !xla_gpu.indexed_vector<2xf32, #vmap>
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
func.func private @as_int(%t: tensor<16x2xf32>, %i: index, %j: index) -> i32 {
  %c = arith.constant 0 : i32
  return %c : i32
}
func.func @materialize_callee_type(%in: tensor<16x2xf32>, %tid: index) {
  // expected-error@+1 {{callee 'as_int' has type '(tensor<16x2xf32>, index, index) -> i32', expected '(tensor<16x2xf32>, index, index) -> f32'}}
  %v = xla_gpu.materialize @as_int(%in) at #map(%tid) : (tensor<16x2xf32>) -> !xla_gpu.indexed_vector<2xf32, #vmap>
  return
}

// -----

// The callee takes the inputs and one index per result of the map.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
func.func private @one_index(%t: tensor<16x2xf32>, %i: index) -> f32 {
  %c = arith.constant 0.0 : f32
  return %c : f32
}
func.func @materialize_callee_arguments(%in: tensor<16x2xf32>, %tid: index) {
  // expected-error@+1 {{callee 'one_index' has type '(tensor<16x2xf32>, index) -> f32', expected '(tensor<16x2xf32>, index, index) -> f32'}}
  %v = xla_gpu.materialize @one_index(%in) at #map(%tid) : (tensor<16x2xf32>) -> !xla_gpu.indexed_vector<2xf32, #vmap>
  return
}

// -----

// XLA's checks that the materialize's map and the indexed vector's run
// over the same elements.
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 31], s0 in [0, 1]">
func.func private @f(%t: tensor<16x2xf32>, %i: index, %j: index) -> f32 {
  %v = tensor.extract %t[%i, %j] : tensor<16x2xf32>
  return %v : f32
}
func.func @materialize_thread_bounds(%in: tensor<16x2xf32>, %tid: index) {
  // expected-error@+1 {{the thread id dimension (d0) must have the same bounds in both indexing maps}}
  %v = xla_gpu.materialize @f(%in) at #map(%tid) : (tensor<16x2xf32>) -> !xla_gpu.indexed_vector<2xf32, #vmap>
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1], d0 + s0 in [0, 15]">
#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
func.func private @f(%t: tensor<16x2xf32>, %i: index, %j: index) -> f32 {
  %v = tensor.extract %t[%i, %j] : tensor<16x2xf32>
  return %v : f32
}
func.func @materialize_thread_constraints(%in: tensor<16x2xf32>, %tid: index) {
  // expected-error@+1 {{the constraints on the thread id dimension (d0) must be the same in both indexing maps}}
  %v = xla_gpu.materialize @f(%in) at #map(%tid) : (tensor<16x2xf32>) -> !xla_gpu.indexed_vector<2xf32, #vmap>
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#vmap = #xla_gpu.indexing_map<"(d0)[s0, s1] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1], s1 in [0, 1]">
func.func private @f(%t: tensor<16x2xf32>, %i: index, %j: index) -> f32 {
  %v = tensor.extract %t[%i, %j] : tensor<16x2xf32>
  return %v : f32
}
func.func @materialize_symbol_count(%in: tensor<16x2xf32>, %tid: index) {
  // expected-error@+1 {{the indexing maps must have the same number of range variables, got 1 and 2}}
  %v = xla_gpu.materialize @f(%in) at #map(%tid) : (tensor<16x2xf32>) -> !xla_gpu.indexed_vector<2x2xf32, #vmap>
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 3]">
func.func private @f(%t: tensor<16x2xf32>, %i: index, %j: index) -> f32 {
  %v = tensor.extract %t[%i, %j] : tensor<16x2xf32>
  return %v : f32
}
func.func @materialize_symbol_bounds(%in: tensor<16x2xf32>, %tid: index) {
  // expected-error@+1 {{range variable s0 must have the same bounds in both indexing maps}}
  %v = xla_gpu.materialize @f(%in) at #map(%tid) : (tensor<16x2xf32>) -> !xla_gpu.indexed_vector<4xf32, #vmap>
  return
}

// -----

#map = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d0, s0), domain: d0 in [0, 15], d1 in [0, 3], s0 in [0, 1]">
#vmap = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d1, s0), domain: d0 in [0, 15], d1 in [0, 3], s0 in [0, 1]">
func.func private @f(%t: tensor<16x2xf32>, %i: index, %j: index) -> f32 {
  %v = tensor.extract %t[%i, %j] : tensor<16x2xf32>
  return %v : f32
}
func.func @materialize_vector_map_uses_block(%in: tensor<16x2xf32>, %tid: index, %bid: index) {
  // expected-error@+1 {{the indexed vector's map must not depend on the block id dimension (d1)}}
  %v = xla_gpu.materialize @f(%in) at #map(%tid, %bid) : (tensor<16x2xf32>) -> !xla_gpu.indexed_vector<2xf32, #vmap>
  return
}

// -----

#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#imap = #xla_gpu.indexing_map<"(d0, d1) -> (d0, d1), domain: d0 in [0, 15], d1 in [0, 1]">
func.func @insert_index_count(%v: !xla_gpu.indexed_vector<2xf32, #vmap>, %out: tensor<16x2xf32>, %tid: index) {
  // expected-error@+1 {{the source's indexing map takes 1 dimensions, got 2 indices}}
  %r = xla_gpu.insert %v(%tid, %tid) into %out at #imap : !xla_gpu.indexed_vector<2xf32, #vmap> -> tensor<16x2xf32>
  return
}

// -----

// XLA's form: the insert's map takes the element's indices (the source
// map's results), it has no symbols of its own.
#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#map = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
func.func @insert_map_symbols(%v: !xla_gpu.indexed_vector<2xf32, #vmap>, %out: tensor<16x2xf32>, %tid: index) {
  // expected-error@+1 {{the indexing map must not have symbols, got 1}}
  %r = xla_gpu.insert %v(%tid) into %out at #map : !xla_gpu.indexed_vector<2xf32, #vmap> -> tensor<16x2xf32>
  return
}

// -----

#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#imap1 = #xla_gpu.indexing_map<"(d0) -> (d0, 0), domain: d0 in [0, 15]">
func.func @insert_map_dimensions(%v: !xla_gpu.indexed_vector<2xf32, #vmap>, %out: tensor<16x2xf32>, %tid: index) {
  // expected-error@+1 {{the indexing map takes 1 dimensions, but the source's map has 2 results}}
  %r = xla_gpu.insert %v(%tid) into %out at #imap1 : !xla_gpu.indexed_vector<2xf32, #vmap> -> tensor<16x2xf32>
  return
}

// -----

#vmap = #xla_gpu.indexing_map<"(d0)[s0] -> (d0, s0), domain: d0 in [0, 15], s0 in [0, 1]">
#imap = #xla_gpu.indexing_map<"(d0, d1) -> (d0, d1), domain: d0 in [0, 15], d1 in [0, 1]">
func.func @insert_rank(%v: !xla_gpu.indexed_vector<2xf32, #vmap>, %out: tensor<32xf32>, %tid: index) {
  // expected-error@+1 {{the indexing map has 2 results but the destination has rank 1}}
  %r = xla_gpu.insert %v(%tid) into %out at #imap : !xla_gpu.indexed_vector<2xf32, #vmap> -> tensor<32xf32>
  return
}

// -----

#vmap = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 15]">
// expected-error@+1 {{indexed_vector elements must be integers, floats or complex numbers, got 'tensor<2xf32>'}}
func.func @indexed_vector_element(%v: !xla_gpu.indexed_vector<2xtensor<2xf32>, #vmap>)

// -----

// Found by fuzz/fuzz.py: a region that does not end with a yield made the
// verifier call getTerminator(), which asserts (an abort).
func.func @atomic_rmw_without_yield(%t: tensor<8xi32>, %i: index) -> tensor<8xi32> {
  // expected-error@+1 {{expected the region to yield one value of the element type 'i32'}}
  %r = xla_gpu.atomic_rmw %t[%i] : tensor<8xi32> {
  ^bb0(%cur: i32):
    %c = arith.addi %cur, %cur : i32
  }
  return %r : tensor<8xi32>
}

// -----

func.func @copy_tile_offsets(%in: tensor<32x32xf32>, %t: index) -> tensor<32x32xf32> {
  %c0 = arith.constant 0 : index
  %s = xla_gpu.allocate_shared : tensor<32x32xf32>
  // expected-error@+1 {{needs one source offset and size per dimension of 'tensor<32x32xf32>', got 1 and 2}}
  %a = xla_gpu.copy_tile %in[%c0] [32, 32] to %s[%c0, %c0] [32, 32] thread %t of 32 : tensor<32x32xf32> to tensor<32x32xf32>
  return %a : tensor<32x32xf32>
}

// -----

func.func @copy_tile_size(%in: tensor<32x32xf32>, %t: index) -> tensor<32x32xf32> {
  %c0 = arith.constant 0 : index
  %s = xla_gpu.allocate_shared : tensor<32x32xf32>
  // expected-error@+1 {{dest size 33 of dimension 1 is not in [1, 32]}}
  %a = xla_gpu.copy_tile %in[%c0, %c0] [32, 32] to %s[%c0, %c0] [32, 33] thread %t of 32 : tensor<32x32xf32> to tensor<32x32xf32>
  return %a : tensor<32x32xf32>
}

// -----

func.func @copy_tile_box(%in: tensor<64x32xf32>, %t: index) -> tensor<32x32xf32> {
  %c0 = arith.constant 0 : index
  %c40 = arith.constant 40 : index
  %s = xla_gpu.allocate_shared : tensor<32x32xf32>
  // expected-error@+1 {{source box [40, 72) of dimension 0 is outside [0, 64)}}
  %a = xla_gpu.copy_tile %in[%c40, %c0] [32, 32] to %s[%c0, %c0] [32, 32] thread %t of 32 : tensor<64x32xf32> to tensor<32x32xf32>
  return %a : tensor<32x32xf32>
}

// -----

func.func @copy_tile_swizzle(%in: tensor<32x32xf32>, %t: index) -> tensor<32x32xf32> {
  %c0 = arith.constant 0 : index
  %s = xla_gpu.allocate_shared : tensor<32x32xf32>
  // expected-error@+1 {{swizzle is [B, M, S], three counts of bits}}
  %a = xla_gpu.copy_tile %in[%c0, %c0] [32, 32] to %s[%c0, %c0] [32, 32] thread %t of 32 {swizzle = array<i64: 3, 2>} : tensor<32x32xf32> to tensor<32x32xf32>
  return %a : tensor<32x32xf32>
}

// -----

func.func @copy_tile_threads(%in: tensor<32x32xf32>, %t: index) -> tensor<32x32xf32> {
  %c0 = arith.constant 0 : index
  %s = xla_gpu.allocate_shared : tensor<32x32xf32>
  // expected-error@+1 {{needs at least one thread}}
  %a = xla_gpu.copy_tile %in[%c0, %c0] [32, 32] to %s[%c0, %c0] [32, 32] thread %t of 0 : tensor<32x32xf32> to tensor<32x32xf32>
  return %a : tensor<32x32xf32>
}

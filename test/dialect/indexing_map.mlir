// The #xla_gpu.indexing_map attribute: XLA's syntax, adjacent strings,
// names kept, runtime variables, constraints in a stable sorted order.
// RUN: xla-gpu-opt %s -split-input-file | FileCheck %s
// RUN: xla-gpu-opt %s -split-input-file > %t.1
// RUN: xla-gpu-opt %t.1 -split-input-file > %t.2
// RUN: diff %t.1 %t.2

// The seed's map: three strings, named variables.
// CHECK: #[[$SEED:.*]] = #xla_gpu.indexing_map<"(th_x, bl_x)[vector_index] -> (bl_x floordiv 4096, (bl_x floordiv 8) mod 512, (bl_x mod 8) * 512 + th_x * 4 + vector_index), domain: th_x in [0, 127], bl_x in [0, 24575], vector_index in [0, 3]">
// CHECK-LABEL: func.func @seed_map
// CHECK-SAME: map = #[[$SEED]]
func.func @seed_map() attributes {map = #xla_gpu.indexing_map<"(th_x, bl_x)[vector_index] -> ("
 "bl_x floordiv 4096, (bl_x floordiv 8) mod 512, (bl_x mod 8) * 512 + th_x * 4 + vector_index),"
 "domain: th_x in [0, 127], bl_x in [0, 24575], vector_index in [0, 3]">} {
  return
}

// -----

// Constraints print sorted by their text, whatever the input order.
// CHECK: #[[$MAP:.*]] = #xla_gpu.indexing_map<"(d0, d1) -> (d0, d1), domain: d0 in [0, 9], d1 in [0, 9], d0 + d1 in [0, 12], d0 mod 2 in [0, 0], d1 - d0 in [-3, 3]">
// CHECK-LABEL: func.func @sorted_constraints
func.func @sorted_constraints() attributes {map = #xla_gpu.indexing_map<"(d0, d1) -> (d0, d1), domain: d0 in [0, 9], d1 in [0, 9], d1 - d0 in [-3, 3], d0 mod 2 in [0, 0], d0 + d1 in [0, 12]">} {
  return
}

// -----

// Runtime variables follow the range variables among the symbols.
// CHECK: #[[$MAP:.*]] = #xla_gpu.indexing_map<"(d0)[s0]{rt0, rt1} -> (d0 + rt0, s0 * 2 + rt1 + 4), domain: d0 in [0, 15], s0 in [0, 1], rt0 in [0, 100], rt1 in [-5, 5]">
// CHECK-LABEL: func.func @runtime_vars
func.func @runtime_vars() attributes {map = #xla_gpu.indexing_map<"(d0)[s0]{rt0, rt1} -> (d0 + rt0, s0 * 2 + rt1 + 4), domain: d0 in [0, 15], s0 in [0, 1], rt0 in [0, 100], rt1 in [-5, 5]">} {
  return
}

// -----

// Expressions: subtraction, negation, ceildiv, nested parentheses; the
// printer writes MLIR's canonical form.
// CHECK: #[[$MAP:.*]] = #xla_gpu.indexing_map<"(d0, d1) -> (d0 - d1, -d0, d0 ceildiv 3, (d0 + d1) floordiv 4, d0 - 2), domain: d0 in [0, 9], d1 in [0, 9]">
// CHECK-LABEL: func.func @expressions
func.func @expressions() attributes {map = #xla_gpu.indexing_map<"(d0, d1) -> (d0 - d1, -d0, d0 ceildiv 3, ((d0 + d1)) floordiv 4, d0 + -2), domain: d0 in [0, 9], d1 in [0, 9]">} {
  return
}

// -----

// No variables, no results; older XLA's `is_simplified` flag is accepted.
// CHECK-DAG: #xla_gpu.indexing_map<"() -> ()">
// CHECK-DAG: #xla_gpu.indexing_map<"(d0) -> (d0 mod 4), domain: d0 in [0, 7]">
// CHECK-LABEL: func.func @edge_cases
func.func @edge_cases() attributes {
    a = #xla_gpu.indexing_map<"() -> ()">,
    b = #xla_gpu.indexing_map<"(d0) -> (d0 mod 4), domain: d0 in [0, 7], is_simplified: false">} {
  return
}

// -----

// Layout and memory space attributes.
// CHECK-LABEL: func.func @layout
// CHECK-SAME: layout = #xla_gpu.layout<shmem, #indexing_map>
// CHECK-SAME: regs = #xla_gpu.layout<registers, #indexing_map>
// CHECK-SAME: space = #xla_gpu.memory_space<shmem>
func.func @layout() attributes {
    layout = #xla_gpu.layout<shmem, #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 31]">>,
    regs = #xla_gpu.layout<registers, #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 31]">>,
    space = #xla_gpu.memory_space<shmem>} {
  return
}

// -----

// The xla.range attribute on thread and block ids (an upstream op with a
// discardable attribute) round-trips.
// CHECK-LABEL: func.func @xla_range
// CHECK: gpu.thread_id x {xla.range = [0 : index, 127 : index]}
// CHECK: gpu.block_id x {xla.range = [0 : index, 24575 : index]}
func.func @xla_range() -> (index, index) {
  %thread_id_x = gpu.thread_id  x {xla.range = [0 : index, 127 : index]}
  %block_id_x = gpu.block_id  x {xla.range = [0 : index, 24575 : index]}
  return %thread_id_x, %block_id_x : index, index
}

// -----

// The indexed_vector type.
// CHECK-LABEL: func.func @indexed_vector
// CHECK-SAME: !xla_gpu.indexed_vector<4x2xf32, #{{.*}}>
func.func @indexed_vector(%v: !xla_gpu.indexed_vector<4x2xf32, #xla_gpu.indexing_map<"(d0)[s0, s1] -> (d0 * 4 + s0, s1), domain: d0 in [0, 31], s0 in [0, 3], s1 in [0, 1]">>) {
  return
}

// -----

// XLA's spellings: a trailing comma after the last domain entry, a
// dimension times a symbol (MLIR's affine rule: one side symbolic), and a
// layout with the memory space and the map as strings.
// CHECK-DAG: #[[$PRODUCT:.*]] = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d0 * s0 + d1), domain: d0 in [0, 3], d1 in [0, 4], s0 in [0, 2]">
// CHECK-DAG: #[[$THREADS:.*]] = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 31]">
// CHECK-LABEL: func.func @xla_spellings
// CHECK-SAME: layout = #xla_gpu.layout<shmem, #[[$THREADS]]>
// CHECK-SAME: map = #[[$PRODUCT]]
func.func @xla_spellings() attributes {
    layout = #xla_gpu.layout<"shmem", "(d0) -> (d0), domain: d0 in [0, 31]">,
    map = #xla_gpu.indexing_map<"(d0, d1)[s0] -> (d0 * s0 + d1), domain: d0 in [0, 3], d1 in [0, 4], s0 in [0, 2],">} {
  return
}

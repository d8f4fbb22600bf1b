// Malformed indexing maps: each is a diagnostic at the offending line, never
// a crash. Column checks below pin the exact position inside the string.
// RUN: xla-gpu-opt %s -split-input-file -verify-diagnostics
// RUN: not xla-gpu-opt %s -split-input-file 2>&1 | FileCheck %s

// CHECK: invalid_indexing_map.mlir:[[# @LINE + 2]]:83: error: invalid indexing map: unbalanced parentheses: the result list is not closed before 'domain'
// expected-error@+1 {{unbalanced parentheses: the result list is not closed before 'domain'}}
func.func @unbalanced() attributes {m = #xla_gpu.indexing_map<"(d0) -> ((d0 + 1), domain: d0 in [0, 3]">}

// -----

// CHECK: invalid_indexing_map.mlir:[[# @LINE + 2]]:79: error: invalid indexing map: unknown variable 'd1'
// expected-error@+1 {{unknown variable 'd1'}}
func.func @unknown_variable() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d1), domain: d0 in [0, 3]">}

// -----

// expected-error@+1 {{lower bound 5 of 'd0' is greater than its upper bound 3}}
func.func @empty_range() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [5, 3]">}

// -----

// expected-error@+1 {{expected ')' to close the '(' at offset 9, found ']'}}
func.func @unbalanced_inner() attributes {m = #xla_gpu.indexing_map<"(d0) -> ((d0 + 1], domain: d0 in [0, 3]">}

// -----

// expected-error@+1 {{missing the domain entry of 'd1'}}
func.func @missing_domain_entry() attributes {m = #xla_gpu.indexing_map<"(d0, d1) -> (d0), domain: d0 in [0, 3]">}

// -----

// expected-error@+1 {{missing the domain entry of 'd0'}}
func.func @missing_domain() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d0)">}

// -----

// CHECK: invalid_indexing_map.mlir:[[# @LINE + 2]]:102: error: invalid indexing map: unexpected 'garbage' after the indexing map
// expected-error@+1 {{unexpected 'garbage' after the indexing map}}
func.func @garbage_after() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 3] garbage">}

// -----

// expected-error@+1 {{expected '->' after the variable lists, found '('}}
func.func @missing_arrow() attributes {m = #xla_gpu.indexing_map<"(d0) (d0), domain: d0 in [0, 3]">}

// -----

// expected-error@+1 {{variable 'd0' is declared twice}}
func.func @duplicate_variable() attributes {m = #xla_gpu.indexing_map<"(d0)[d0] -> (d0), domain: d0 in [0, 3], d0 in [0, 3]">}

// -----

// expected-error@+1 {{non-affine expression: one side of '*' must be a constant or a symbolic expression}}
func.func @non_affine_mul() attributes {m = #xla_gpu.indexing_map<"(d0, d1) -> (d0 * d1), domain: d0 in [0, 3], d1 in [0, 3]">}

// -----

// expected-error@+1 {{expected a positive integer constant on the right of 'mod'}}
func.func @mod_by_zero() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d0 mod 0), domain: d0 in [0, 3]">}

// -----

// expected-error@+1 {{expected a positive integer constant on the right of 'floordiv'}}
func.func @floordiv_by_variable() attributes {m = #xla_gpu.indexing_map<"(d0, d1) -> (d0 floordiv d1), domain: d0 in [0, 3], d1 in [1, 3]">}

// -----

// expected-error@+1 {{expected the domain entry of 'd0', found 'd1'}}
func.func @domain_out_of_order() attributes {m = #xla_gpu.indexing_map<"(d0, d1) -> (d0), domain: d1 in [0, 3], d0 in [0, 3]">}

// -----

// expected-error@+1 {{integer 99999999999999999999 is out of the range of int64}}
func.func @integer_overflow() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 99999999999999999999]">}

// -----

// expected-error@+1 {{expected the indexing map as a quoted string}}
func.func @no_string() attributes {m = #xla_gpu.indexing_map<>}

// -----

// expected-error@+1 {{expected an affine expression, found '$'}}
func.func @bad_character() attributes {m = #xla_gpu.indexing_map<"(d0) -> ($), domain: d0 in [0, 3]">}

// -----

// expected-error@+1 {{'mod' is a keyword and cannot name a variable}}
func.func @keyword_variable() attributes {m = #xla_gpu.indexing_map<"(mod) -> (mod), domain: mod in [0, 3]">}

// -----

// expected-error@+1 {{constraint has lower bound 4 greater than its upper bound 2}}
func.func @empty_constraint() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 3], d0 mod 2 in [4, 2]">}

// -----

// expected-error@+1 {{expected ',' or ')' in the result list, found end of indexing map}}
func.func @unterminated_results() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d0">}

// -----

// expected-error@+1 {{expected 'in' after the variable name, found '['}}
func.func @missing_in() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 [0, 3]">}

// -----

// expected-error@+1 {{expected 'domain' after the result list, found 'dom'}}
func.func @misspelled_domain() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d0), dom: d0 in [0, 3]">}

// -----

// CHECK: invalid_indexing_map.mlir:[[# @LINE + 4]]:23: error: invalid indexing map: unknown variable 'bl_y'
// An error in the second of several strings points into that string.
// expected-error@+2 {{unknown variable 'bl_y'}}
func.func @second_string() attributes {m = #xla_gpu.indexing_map<"(th_x, bl_x) -> ("
 "bl_x floordiv 4096, bl_y),"
 "domain: th_x in [0, 127], bl_x in [0, 24575]">}

// -----

// expected-error@+1 {{expected an integer, found ']'}}
func.func @missing_bound() attributes {m = #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, ]">}

// -----

// Nesting is bounded (a few levels in real maps): 300 parentheses are an
// error at the 257th, not a stack overflow.
// expected-error@+1 {{the expression is nested deeper than 256 levels}}
func.func @deep_nesting() attributes {m = #xla_gpu.indexing_map<"(d0) -> (((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((d0))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))), domain: d0 in [0, 3]">}

//===- XlaGpuDialect.td - the xla_gpu dialect ---------------*- tablegen -*-===//
//
// The dialect the XLA:GPU fusion emitters produce: loops over thread/block
// ids described by indexing maps, value-semantics shared memory, pure calls
// between the subgraph functions of a partitioned fusion.
//
//===----------------------------------------------------------------------===//

#ifndef XLA_GPU_DIALECT_TD
#define XLA_GPU_DIALECT_TD

include "mlir/IR/OpBase.td"

def XlaGpuDialect : Dialect {
  let name = "xla_gpu";
  let summary = "Ops and attributes of the XLA:GPU fusion emitters.";
  let description = [{
    The emitters turn an HLO fusion into func/scf/tensor/arith IR plus the
    ops of this dialect. Index arithmetic is described by
    `#xla_gpu.indexing_map` attributes: an affine map with a range for every
    variable and optional constraints.
  }];
  let cppNamespace = "::xla::gpu";
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  // Folded apply_indexing results become arith.constant.
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
                           "::mlir::tensor::TensorDialect"];
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();
  }];
}

#endif  // XLA_GPU_DIALECT_TD

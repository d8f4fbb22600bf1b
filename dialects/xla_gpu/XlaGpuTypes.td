//===- XlaGpuTypes.td - types of xla_gpu --------------------*- tablegen -*-===//

#ifndef XLA_GPU_TYPES_TD
#define XLA_GPU_TYPES_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"
include "mlir/IR/BuiltinTypes.td"
include "dialects/xla_gpu/XlaGpuAttrs.td"

def XlaGpu_IndexedVectorType : TypeDef<XlaGpuDialect, "IndexedVector",
    [ShapedTypeInterface, ValueSemantics]> {
  let mnemonic = "indexed_vector";
  let summary = "A vector of values paired with the indexing map that places them.";
  let description = [{
    The value `xla_gpu.materialize` produces and `xla_gpu.insert` consumes:
    each thread holds `shape` elements; the indexing map takes the thread id
    and the element's position to the element's index in the tensor.

    ```mlir
    !xla_gpu.indexed_vector<4x2xf32, #xla_gpu.indexing_map<"(d0)[s0, s1] -> (d0 * 4 + s0, s1), domain: d0 in [0, 31], s0 in [0, 3], s1 in [0, 1]">>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$shape,
    "::mlir::Type":$elementType,
    "IndexingMapAttr":$indexing_map_attr
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    IndexedVectorType cloneWith(std::optional<llvm::ArrayRef<int64_t>> shape,
                                ::mlir::Type elementType) const {
      return IndexedVectorType::get(getContext(), shape.value_or(getShape()),
                                    elementType, getIndexingMapAttr());
    }
    bool hasRank() const { return true; }
  }];
}

#endif  // XLA_GPU_TYPES_TD

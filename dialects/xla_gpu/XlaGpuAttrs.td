//===- XlaGpuAttrs.td - attributes of xla_gpu ---------------*- tablegen -*-===//

#ifndef XLA_GPU_ATTRS_TD
#define XLA_GPU_ATTRS_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "dialects/xla_gpu/XlaGpuDialect.td"

class XlaGpu_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<XlaGpuDialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def XlaGpu_IndexingMapParameter
    : AttrParameter<"::xla::gpu::IndexingMap", "an indexing map",
                    "const ::xla::gpu::IndexingMap&"> {
  // Attributes are uniqued on the exact text, variable names included, so
  // that printing gives back what was parsed. IndexingMap::operator== is the
  // semantic equality (names ignored).
  let comparator = "$_lhs.isIdenticalTo($_rhs)";
}

def XlaGpu_IndexingMapAttr : XlaGpu_Attr<"IndexingMap", "indexing_map"> {
  let summary = "An affine map with a range for every variable, and constraints.";
  let description = [{
    The map from (dimensions)[range symbols]{runtime variables} to results,
    and the domain: an inclusive interval for every variable, then any number
    of constraints `expr in [lo, hi]`. The map may be written as one quoted
    string or as adjacent quoted strings, which are concatenated:

    ```mlir
    #map = #xla_gpu.indexing_map<"(th_x, bl_x)[vector_index] -> ("
      "bl_x floordiv 4096, (bl_x floordiv 8) mod 512, (bl_x mod 8) * 512 + th_x * 4 + vector_index),"
      "domain: th_x in [0, 127], bl_x in [0, 24575], vector_index in [0, 3]">
    ```

    Expressions use `+ - * floordiv ceildiv mod`, integer literals and
    parentheses. Constraints are printed sorted by their text, so equal maps
    print identically.
  }];
  let parameters = (ins XlaGpu_IndexingMapParameter:$indexing_map);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The affine map without the domain.
    ::mlir::AffineMap getMap() const { return getIndexingMap().getAffineMap(); }
  }];
}

def XlaGpu_MemorySpace : I32EnumAttr<"MemorySpace", "memory space of a layout", [
  I32EnumAttrCase<"kRegisters", 0, "registers">,
  I32EnumAttrCase<"kSharedMemory", 1, "shmem">
]> {
  let cppNamespace = "::xla::gpu";
  let genSpecializedAttr = 0;
}

def XlaGpu_MemorySpaceAttr
    : EnumAttr<XlaGpuDialect, XlaGpu_MemorySpace, "memory_space"> {
  let summary = "Where the elements of a value live: registers or shared memory.";
  let assemblyFormat = "`<` $value `>`";
}

def XlaGpu_LayoutAttr : XlaGpu_Attr<"Layout", "layout"> {
  let summary = "Memory space and thread layout of a distributed value.";
  let description = [{
    ```mlir
    #xla_gpu.layout<shmem, #xla_gpu.indexing_map<"(d0) -> (d0), domain: d0 in [0, 31]">>
    ```
    The indexing map says which thread holds which element. XLA's spelling,
    with the memory space and the map as strings, is accepted too:
    `#xla_gpu.layout<"shmem", "(d0) -> (d0), domain: d0 in [0, 31]">`.
  }];
  let parameters = (ins
    EnumParameter<XlaGpu_MemorySpace>:$memory_space,
    "IndexingMapAttr":$thread_layout
  );
  let hasCustomAssemblyFormat = 1;
}

#endif  // XLA_GPU_ATTRS_TD

"""new_context(): the MLIR context the project creates loads the dialects
the emitters build with, and not every dialect the bindings register."""

from mlir import ir

from xla_gpu.context import BUILDER_DIALECTS, new_context
from xla_gpu.emitters import DEFAULT_DEVICE, emit_kernel
from xla_gpu.hlo import parse_hlo

# One op of each builder dialect.
BUILDER_OPS = {"builtin": "builtin.module", "func": "func.func", "arith": "arith.addf",
               "math": "math.exp", "complex": "complex.add", "scf": "scf.for",
               "tensor": "tensor.extract", "vector": "vector.extract",
               "gpu": "gpu.thread_id", "xla_gpu": "xla_gpu.apply_indexing"}


def test_the_builder_dialects_are_loaded_and_no_other():
    assert set(BUILDER_OPS) == set(BUILDER_DIALECTS)
    ctx = new_context()
    for op in BUILDER_OPS.values():
        assert ctx.is_registered_operation(op), op
    # (Loading one dialect may load those it depends on: tensor loads
    # affine, linalg and memref.) ir.Context() loads these too.
    everything = ir.Context()
    for op in ("sparse_tensor.convert", "llvm.func", "nvvm.barrier0", "tosa.add", "spirv.module",
               "async.execute", "transform.yield"):
        assert everything.is_registered_operation(op), op
        assert not ctx.is_registered_operation(op), op


def test_a_dialect_the_parser_meets_is_loaded_then():
    with new_context() as ctx:
        ir.Module.parse("llvm.func @f() { llvm.return }")
        assert ctx.is_registered_operation("llvm.func")


def test_a_fusion_emits_in_it():
    module = parse_hlo("""HloModule m
f {
  a = c64[16] parameter(0)
  b = c64[16] exponential(a)
  ROOT r = f32[16] real(b)
}
ENTRY e {
  p = c64[16] parameter(0)
  ROOT o = f32[16] fusion(p), kind=kLoop, calls=f
}
""")
    with new_context():
        kernel = emit_kernel(module.entry.root, DEFAULT_DEVICE)
        assert "complex.exp" in kernel.text
        kernel.module.operation.verify()

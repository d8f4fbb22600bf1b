"""Build every xla_gpu op from Python: through the generated classes and
through the hand-written builders; the module verifies and prints in XLA's
syntax."""

import pytest
from mlir import ir
from mlir.dialects import arith, func, gpu, math, tensor
from mlir.passmanager import PassManager

from xla_gpu import IndexingMap
from xla_gpu.dialects import xla_gpu

GELU_MAP = ("(th_x, bl_x)[vector_index] -> (bl_x floordiv 4096, (bl_x floordiv 8) mod 512, "
            "(bl_x mod 8) * 512 + th_x * 4 + vector_index), domain: th_x in [0, 127], "
            "bl_x in [0, 24575], vector_index in [0, 3]")


def f32():
    return ir.F32Type.get()


def index():
    return ir.IndexType.get()


def tensor_of(*shape, elt=None):
    return ir.RankedTensorType.get(list(shape), elt or f32())


def _const_index(v):
    return arith.ConstantOp(index(), v).result


def _range_attr(lo, hi):
    return ir.ArrayAttr.get([ir.IntegerAttr.get(index(), lo), ir.IntegerAttr.get(index(), hi)])


def build_gelu_like_module():
    """The seed's @main/@gelu, built from Python."""
    big = tensor_of(6, 512, 4096, elt=ir.BF16Type.get())
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        callee = func.FuncOp("gelu", ir.FunctionType.get([big, index(), index(), index()],
                                                        [ir.BF16Type.get()]))
        callee.sym_visibility = ir.StringAttr.get("private")
        with ir.InsertionPoint(callee.add_entry_block()):
            t, i, j, k = callee.arguments
            x = tensor.ExtractOp(t, [i, j, k]).result
            y = math.TanhOp(x).result
            func.ReturnOp([arith.MulFOp(x, y).result])

        main = func.FuncOp("main", ir.FunctionType.get([big, big], [big]))
        with ir.InsertionPoint(main.add_entry_block()):
            inp, out = main.arguments
            tid = gpu.ThreadIdOp(gpu.Dimension.x)
            tid.attributes["xla.range"] = _range_attr(0, 127)
            bid = gpu.BlockIdOp(gpu.Dimension.x)
            bid.attributes["xla.range"] = _range_attr(0, 24575)

            def body(ivs, dims, iters):
                v = xla_gpu.pure_call(callee, [inp, *dims])
                return [tensor.InsertOp(v, iters[0], dims).result]

            results = xla_gpu.loop(GELU_MAP, [tid.result, bid.result], [out], body)
            func.ReturnOp(results)
    return module


def test_loop_builder_builds_the_seed_kernel(ctx):
    module = build_gelu_like_module()
    assert module.operation.verify()
    text = str(module)
    assert "xla_gpu.loop (%thread_id_x, %block_id_x)[%arg2] -> (%arg3, %arg4, %arg5) " \
           "in #indexing_map iter_args(%arg6 = %arg1) -> (tensor<6x512x4096xbf16>)" in text
    assert "xla_gpu.pure_call @gelu(%arg0, %arg3, %arg4, %arg5)" in text
    assert "{xla.range = [0 : index, 24575 : index]}" in text
    # Parsing the printed text gives the same text back.
    assert str(ir.Module.parse(text)) == text


def test_loop_op_accessors(ctx):
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        fn = func.FuncOp("f", ir.FunctionType.get([index(), tensor_of(128, 8)], []))
        with ir.InsertionPoint(fn.add_entry_block()):
            tid, out = fn.arguments
            op = xla_gpu.LoopOp(
                "(d0)[s0, s1] -> (d0 * 4 + s0, s1), domain: d0 in [0, 31], s0 in [0, 3], "
                "s1 in [0, 7]", [tid], [out])
            assert len(op.induction_vars) == 2
            assert len(op.indexing_map_results) == 2
            assert len(op.inner_iter_args) == 1
            assert op.inner_iter_args[0].type == out.type
            assert op.indexing_map.range_vars[1].upper == 7
            with ir.InsertionPoint(op.body):
                xla_gpu.YieldOp([op.inner_iter_args[0]])
            func.ReturnOp([])
    assert module.operation.verify()


def test_loop_builder_checks_its_arguments(ctx):
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        fn = func.FuncOp("f", ir.FunctionType.get([index()], []))
        with ir.InsertionPoint(fn.add_entry_block()):
            with pytest.raises(ValueError, match="has 2 dimensions, got 1 dims"):
                xla_gpu.LoopOp("(d0, d1) -> (d0), domain: d0 in [0, 3], d1 in [0, 3]",
                               [fn.arguments[0]])
            with pytest.raises(ValueError, match="runtime variables"):
                xla_gpu.LoopOp("(d0){rt0} -> (d0), domain: d0 in [0, 3], rt0 in [0, 3]",
                               [fn.arguments[0]])
            func.ReturnOp([])


def test_apply_indexing_builder_and_fold(ctx):
    m = IndexingMap.parse("(d0)[s0] -> (d0 * 4 + s0, d0), domain: d0 in [0, 31], s0 in [0, 3]")
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        fn = func.FuncOp("f", ir.FunctionType.get([], [index(), index()]))
        with ir.InsertionPoint(fn.add_entry_block()):
            a, b = xla_gpu.apply_indexing(m, [_const_index(5)], [_const_index(2)])
            func.ReturnOp([a, b])
    assert module.operation.verify()
    assert "xla_gpu.apply_indexing #indexing_map(%c5)[%c2]" in str(module)
    PassManager.parse("builtin.module(canonicalize)").run(module.operation)
    text = str(module)
    assert "arith.constant 22 : index" in text and "arith.constant 5 : index" in text
    assert "apply_indexing" not in text


def test_generated_classes_build_every_op(ctx):
    """The ODS-generated classes (no hand-written builder) for each op."""
    t23 = tensor_of(2, 3)
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        reducer = func.FuncOp("reducer", ir.FunctionType.get([f32(), f32()], [f32()]))
        reducer.sym_visibility = ir.StringAttr.get("private")
        with ir.InsertionPoint(reducer.add_entry_block()):
            func.ReturnOp([arith.AddFOp(*reducer.arguments).result])
        exp = func.FuncOp("exp", ir.FunctionType.get([t23, index(), index()], [f32()]))
        exp.sym_visibility = ir.StringAttr.get("private")
        with ir.InsertionPoint(exp.add_entry_block()):
            t, i, j = exp.arguments
            func.ReturnOp([math.ExpOp(tensor.ExtractOp(t, [i, j]).result).result])

        fn = func.FuncOp("all_ops", ir.FunctionType.get(
            [t23, index(), f32(), ir.IntegerType.get_signless(1)], []))
        with ir.InsertionPoint(fn.add_entry_block()):
            t, i, x, c = fn.arguments
            shmem = xla_gpu.AllocateSharedOp(t23).result
            synced = xla_gpu.SyncThreadsOp([shmem]).results[0]
            ins = xla_gpu.PredicatedInsertOp(c, x, synced, [i, i]).result
            ext = xla_gpu.PredicatedExtractOp(c, x, ins, [i, i]).result
            called = xla_gpu.PureCallOp(exp, [t, i, i]).results[0]
            shuffled = xla_gpu.ShuffleReduceOp([called], 16, "reducer").results[0]
            red = xla_gpu.ReduceOp([t], [ext], [1], "reducer").results[0]
            assert red.type == tensor_of(2)
            rmw = xla_gpu.atomic_rmw(t, [i, i], lambda cur: arith.AddFOp(cur, shuffled).result)
            m = IndexingMap.parse("(d0)[s0] -> (d0, s0), domain: d0 in [0, 1], s0 in [0, 2]")
            vec_type = ir.Type.parse(f'!xla_gpu.indexed_vector<3xf32, {m.attr}>')
            vec = xla_gpu.MaterializeOp(vec_type, [t], [i], "exp", m.attr).result
            identity = IndexingMap.parse("(d0, d1) -> (d0, d1), domain: d0 in [0, 1], d1 in [0, 2]")
            xla_gpu.InsertOp(vec, rmw, [i], identity.attr)
            func.ReturnOp([])
    assert module.operation.verify(), str(module)
    text = str(module)
    for expected in [
        "xla_gpu.allocate_shared : tensor<2x3xf32>",
        "xla_gpu.sync_threads %shmem : tensor<2x3xf32>",
        "xla_gpu.predicated_insert %arg2 into %0[%arg1, %arg1] if %arg3 : tensor<2x3xf32>",
        "xla_gpu.predicated_extract %1[%arg1, %arg1] if %arg3 else %arg2 : tensor<2x3xf32>",
        "xla_gpu.pure_call @exp(%arg0, %arg1, %arg1) : (tensor<2x3xf32>, index, index) -> f32",
        "xla_gpu.shuffle_reduce(%pure_call) to 16 combiner=@reducer : f32",
        "xla_gpu.reduce(%arg0) inits(%2) dimensions=[1] combiner=@reducer : tensor<2x3xf32> to tensor<2xf32>",
        "xla_gpu.atomic_rmw %arg0[%arg1, %arg1] : tensor<2x3xf32> {",
        "xla_gpu.materialize @exp(%arg0) at #indexing_map(%arg1) : (tensor<2x3xf32>) -> "
        "!xla_gpu.indexed_vector<3xf32, #indexing_map>",
        "xla_gpu.insert %5(%arg1) into %atomic_rmw at #indexing_map1 : "
        "!xla_gpu.indexed_vector<3xf32, #indexing_map> -> tensor<2x3xf32>",
    ]:
        assert expected in text, (expected, text)
    assert str(ir.Module.parse(text)) == text


def test_verifier_errors_surface_in_python(ctx):
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        fn = func.FuncOp("f", ir.FunctionType.get([f32()], [f32()]))
        with ir.InsertionPoint(fn.add_entry_block()):
            r = xla_gpu.PureCallOp("missing", [fn.arguments[0]], [f32()]).results[0]
            func.ReturnOp([r])
    with pytest.raises(ir.MLIRError, match="'missing' does not reference a valid function"):
        module.operation.verify()


def test_inline_and_erase_from_python(ctx):
    module = build_gelu_like_module()
    PassManager.parse("builtin.module(inline,xla-erase-dead-functions)").run(module.operation)
    text = str(module)
    assert "pure_call" not in text and "@gelu" not in text
    assert "math.tanh" in text

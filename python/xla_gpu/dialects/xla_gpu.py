"""The xla_gpu ops for Python: classes generated from the ODS
(`_xla_gpu_ops_gen.py`, built by CMake) plus builders where ODS can't say
enough -- ops whose regions need block arguments (`loop`, `atomic_rmw`) and
ops whose result types follow from their operands.

    with ir.InsertionPoint(block):
        results = xla_gpu.loop(
            "(d0)[s0] -> (d0 * 4 + s0), domain: d0 in [0, 127], s0 in [0, 3]",
            dims=[tid], inits=[out],
            body=lambda ivs, idx, iters: [tensor.insert(v, iters[0], idx)])
"""

from __future__ import annotations

from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import func

from ._xla_gpu_ops_gen import *  # noqa: F401,F403
from ._xla_gpu_ops_gen import _Dialect
from ._xla_gpu_ops_gen import (
    ApplyIndexingOp as _ApplyIndexingOp,
    AtomicRMWOp as _AtomicRMWOp,
    LoopOp as _LoopOp,
    PureCallOp as _PureCallOp,
    ReduceOp as _ReduceOp,
    ShuffleReduceOp as _ShuffleReduceOp,
    SyncThreadsOp as _SyncThreadsOp,
    YieldOp,
)
from ._ods_common import _cext, get_op_result_or_op_results
from ..indexing_map import IndexingMap


def indexing_map_attr(value, context: ir.Context | None = None) -> ir.Attribute:
    """An `#xla_gpu.indexing_map` from an IndexingMap, its text or the attribute."""
    if isinstance(value, IndexingMap):
        return value.attr
    if isinstance(value, ir.Attribute):
        return IndexingMap(value).attr
    if isinstance(value, str):
        return IndexingMap.parse(value, context).attr
    raise TypeError(f"expected an indexing map, got {type(value).__name__}")


@ir.register_attribute_builder("XlaGpu_IndexingMapAttr", replace=True)
def _build_indexing_map_attr(value, context=None):
    return indexing_map_attr(value, context)


def _as_map(value) -> IndexingMap:
    return IndexingMap(indexing_map_attr(value))


def _index_type() -> ir.Type:
    return ir.IndexType.get()


@_cext.register_operation(_Dialect, replace=True)
class ApplyIndexingOp(_ApplyIndexingOp):
    """`xla_gpu.apply_indexing #map(dims)[symbols]`; one index result per
    map result. The map's constraints are dropped, as XLA's ApplyIndexing
    does (the op takes none; whoever needs them checks them)."""

    def __init__(self, indexing_map, dims: Sequence[ir.Value] = (),
                 symbols: Sequence[ir.Value] = (), *, loc=None, ip=None):
        m = _as_map(indexing_map).without_constraints()
        super().__init__([_index_type()] * m.num_results, [*dims, *symbols],
                         m.attr, loc=loc, ip=ip)


def apply_indexing(indexing_map, dims: Sequence[ir.Value] = (),
                   symbols: Sequence[ir.Value] = (), *, loc=None, ip=None):
    """The results of `apply_indexing`: one Value, or a list for several."""
    return get_op_result_or_op_results(
        ApplyIndexingOp(indexing_map, dims, symbols, loc=loc, ip=ip))


@_cext.register_operation(_Dialect, replace=True)
class LoopOp(_LoopOp):
    """`xla_gpu.loop` with its body block (range symbols, map results,
    iter_args) already created; fill it under `ir.InsertionPoint(op.body)`."""

    def __init__(self, indexing_map, dims: Sequence[ir.Value],
                 inits: Sequence[ir.Value] = (), *, loc=None, ip=None):
        m = _as_map(indexing_map)
        if m.runtime_vars:
            raise ValueError("the indexing map of a loop cannot have runtime variables")
        if len(dims) != m.num_dims:
            raise ValueError(
                f"the indexing map has {m.num_dims} dimensions, got {len(dims)} dims")
        init_types = [v.type for v in inits]
        super().__init__(init_types, dims, m.attr, inits, loc=loc, ip=ip)
        arg_types = [_index_type()] * (len(m.range_vars) + m.num_results) + init_types
        self.regions[0].blocks.append(*arg_types)

    @property
    def body(self) -> ir.Block:
        return self.regions[0].blocks[0]

    @property
    def indexing_map(self) -> IndexingMap:
        return IndexingMap(self.indexing_map_attr)

    @property
    def induction_vars(self) -> list[ir.Value]:
        return list(self.body.arguments)[: len(self.indexing_map.range_vars)]

    @property
    def indexing_map_results(self) -> list[ir.Value]:
        m = self.indexing_map
        start = len(m.range_vars)
        return list(self.body.arguments)[start: start + m.num_results]

    @property
    def inner_iter_args(self) -> list[ir.Value]:
        m = self.indexing_map
        return list(self.body.arguments)[len(m.range_vars) + m.num_results:]


LoopBody = Callable[[list, list, list], Sequence[ir.Value]]


def loop(indexing_map, dims: Sequence[ir.Value], inits: Sequence[ir.Value] = (),
         body: LoopBody | None = None, *, loc=None, ip=None):
    """Builds `xla_gpu.loop`. `body(induction_vars, map_results, iter_args)`
    emits the body and returns the values to yield (one per init); the
    terminator is added here. Returns the loop's results (a list)."""
    op = LoopOp(indexing_map, dims, inits, loc=loc, ip=ip)
    if body is not None:
        with ir.InsertionPoint(op.body):
            yielded = body(op.induction_vars, op.indexing_map_results,
                           op.inner_iter_args)
            YieldOp(list(yielded or []), loc=loc)
    return list(op.results)


@_cext.register_operation(_Dialect, replace=True)
class AtomicRMWOp(_AtomicRMWOp):
    """`xla_gpu.atomic_rmw` with its block (the current value) created."""

    def __init__(self, input: ir.Value, indices: Sequence[ir.Value], *,
                 loc=None, ip=None):
        super().__init__(input.type, input, indices, loc=loc, ip=ip)
        self.regions[0].blocks.append(ir.RankedTensorType(input.type).element_type)

    @property
    def body(self) -> ir.Block:
        return self.regions[0].blocks[0]

    @property
    def current(self) -> ir.Value:
        return self.body.arguments[0]


def atomic_rmw(input: ir.Value, indices: Sequence[ir.Value],
               update: Callable[[ir.Value], ir.Value], *, loc=None, ip=None):
    """`update(current)` emits the new value; returns the updated tensor."""
    op = AtomicRMWOp(input, indices, loc=loc, ip=ip)
    with ir.InsertionPoint(op.body):
        YieldOp([update(op.current)], loc=loc)
    return op.result


def _symbol(callee) -> ir.FlatSymbolRefAttr:
    if isinstance(callee, func.FuncOp):
        return ir.FlatSymbolRefAttr.get(ir.StringAttr(callee.sym_name).value)
    if isinstance(callee, str):
        return ir.FlatSymbolRefAttr.get(callee)
    return callee


@_cext.register_operation(_Dialect, replace=True)
class PureCallOp(_PureCallOp):
    """`xla_gpu.pure_call`; result types come from the callee when it is a
    func.FuncOp."""

    def __init__(self, callee, operands: Sequence[ir.Value],
                 results: Sequence[ir.Type] | None = None, *, loc=None, ip=None):
        if results is None:
            if not isinstance(callee, func.FuncOp):
                raise ValueError("pass `results` when the callee is given by name")
            results = callee.type.results
        super().__init__(list(results), _symbol(callee), list(operands),
                         loc=loc, ip=ip)


def pure_call(callee, operands: Sequence[ir.Value],
              results: Sequence[ir.Type] | None = None, *, loc=None, ip=None):
    return get_op_result_or_op_results(
        PureCallOp(callee, operands, results, loc=loc, ip=ip))


@_cext.register_operation(_Dialect, replace=True)
class ShuffleReduceOp(_ShuffleReduceOp):
    """`xla_gpu.shuffle_reduce`; results have the operands' types."""

    def __init__(self, operands: Sequence[ir.Value], max_distance: int,
                 combiner, *, loc=None, ip=None):
        super().__init__([v.type for v in operands], list(operands),
                         ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                            max_distance),
                         _symbol(combiner), loc=loc, ip=ip)


def shuffle_reduce(operands: Sequence[ir.Value], max_distance: int, combiner,
                   *, loc=None, ip=None):
    return get_op_result_or_op_results(
        ShuffleReduceOp(operands, max_distance, combiner, loc=loc, ip=ip))


@_cext.register_operation(_Dialect, replace=True)
class ReduceOp(_ReduceOp):
    """`xla_gpu.reduce`; result types are the inputs' minus `dimensions`."""

    def __init__(self, inputs: Sequence[ir.Value], inits: Sequence[ir.Value],
                 dimensions: Sequence[int], combiner, *, loc=None, ip=None):
        results = []
        for v in inputs:
            t = ir.RankedTensorType(v.type)
            shape = [d for i, d in enumerate(t.shape) if i not in set(dimensions)]
            results.append(ir.RankedTensorType.get(shape, t.element_type))
        super().__init__(results, list(inputs), list(inits),
                         ir.DenseI64ArrayAttr.get(list(dimensions)),
                         _symbol(combiner), loc=loc, ip=ip)


def reduce(inputs: Sequence[ir.Value], inits: Sequence[ir.Value],
           dimensions: Sequence[int], combiner, *, loc=None, ip=None):
    return get_op_result_or_op_results(
        ReduceOp(inputs, inits, dimensions, combiner, loc=loc, ip=ip))


@_cext.register_operation(_Dialect, replace=True)
class SyncThreadsOp(_SyncThreadsOp):
    """`xla_gpu.sync_threads`; results have the operands' types."""

    def __init__(self, operands: Sequence[ir.Value], *, loc=None, ip=None):
        super().__init__([v.type for v in operands], list(operands), loc=loc, ip=ip)


def sync_threads(operands: Sequence[ir.Value], *, loc=None, ip=None):
    return get_op_result_or_op_results(SyncThreadsOp(operands, loc=loc, ip=ip))


def copy_tile(source: ir.Value, source_offsets: Sequence[ir.Value], source_sizes: Sequence[int],
              dest: ir.Value, dest_offsets: Sequence[ir.Value], dest_sizes: Sequence[int],
              thread: ir.Value, num_threads: int, *, swizzle: Sequence[int] | None = None,
              loc=None, ip=None) -> ir.Value:
    """`xla_gpu.copy_tile`, arguments in the order its syntax writes them:
    the `num_threads` threads copy source's box to dest's (seed 004)."""
    i64 = ir.IntegerType.get_signless(64)
    return CopyTileOp(dest, source, thread, list(source_offsets), list(dest_offsets),
                      ir.DenseI64ArrayAttr.get(list(source_sizes)),
                      ir.DenseI64ArrayAttr.get(list(dest_sizes)),
                      ir.IntegerAttr.get(i64, num_threads),
                      swizzle=None if swizzle is None else ir.DenseI64ArrayAttr.get(list(swizzle)),
                      loc=loc, ip=ip).result

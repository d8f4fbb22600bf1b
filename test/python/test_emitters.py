"""The partitioner and the loop emitter from Python."""

from pathlib import Path

import numpy as np
import pytest
from mlir import ir

from xla_gpu.emitters import EmitterError, emit_fusion, find_fusion, loop_launch_dims
from xla_gpu.emitters.partitioner import partition
from xla_gpu.hlo import parse_hlo, parse_shape
from xla_gpu.runtime import CpuKernel

HLO = Path(__file__).resolve().parents[1] / "hlo"


def _fused(body: str, params: str):
    text = f"HloModule m\nfused {{\n{body}\n}}\nENTRY e {{\n{params}\n}}\n"
    return find_fusion(parse_hlo(text))


def test_gelu_is_one_subgraph(ctx):
    fusion = find_fusion(parse_hlo((HLO / "gelu.hlo").read_text()))
    subgraphs = partition(fusion.fused_computation)
    assert [s.name for s in subgraphs] == ["gelu_multiply_0"]
    # Everything but the parameter is emitted in it.
    assert len(subgraphs[0].instructions) == len(fusion.fused_computation.instructions) - 1


def test_reads_at_different_indices_split(ctx):
    fusion = _fused("p0 = f32[20,20] parameter(0)\nlog = f32[20,20] log(p0)\n"
                    "t = f32[20,20] transpose(log), dimensions={1,0}\n"
                    "ROOT add = f32[20,20] add(log, t)",
                    "a = f32[20,20] parameter(0)\n"
                    "ROOT f = f32[20,20] fusion(a), kind=kLoop, calls=fused")
    names = [[i.name for i in s.instructions] for s in partition(fusion.fused_computation)]
    # The spec's picture: three functions of one instruction each.
    assert names == [["add"], ["t"], ["log"]]


def test_users_reading_a_split_instruction_differently_are_split(ctx):
    # Both slices read `e` at other indices: each is its own function, so no
    # function evaluates `e` at two indices.
    fusion = _fused("p0 = f32[8] parameter(0)\ne = f32[8] exponential(p0)\n"
                    "lo = f32[4] slice(e), slice={[0:4]}\nhi = f32[4] slice(e), slice={[4:8]}\n"
                    "n = f32[4] negate(hi)\nROOT m = f32[4] multiply(lo, n)",
                    "a = f32[8] parameter(0)\n"
                    "ROOT f = f32[4] fusion(a), kind=kLoop, calls=fused")
    names = [[i.name for i in s.instructions] for s in partition(fusion.fused_computation)]
    assert names == [["m", "n"], ["hi"], ["lo"], ["e"]]


def test_reads_at_the_same_index_stay_together(ctx):
    fusion = _fused("p0 = f32[8] parameter(0)\ne = f32[8] exponential(p0)\n"
                    "n = f32[8] negate(e)\nROOT m = f32[8] multiply(e, n)",
                    "a = f32[8] parameter(0)\n"
                    "ROOT f = f32[8] fusion(a), kind=kLoop, calls=fused")
    assert len(partition(fusion.fused_computation)) == 1


@pytest.mark.parametrize("shape, expected", [
    ("bf16[6,512,4096]", (128, 24576, 4)),   # the spec's launch
    ("f32[7,9]", (63, 1, 1)),
    ("f32[1000]", (128, 2, 4)),    # a ragged second block
    ("f32[2]", (1, 1, 2)),
])
def test_launch_dims(shape, expected):
    d = loop_launch_dims(parse_shape(shape))
    assert (d.threads, d.blocks, d.vector) == expected


def test_multi_output_fusion(ctx):
    fusion = _fused("p0 = f32[6] parameter(0)\ne = f32[6] exponential(p0)\n"
                    "n = f32[6] negate(p0)\nROOT t = (f32[6], f32[6]) tuple(e, n)",
                    "a = f32[6] parameter(0)\n"
                    "ROOT f = (f32[6], f32[6]) fusion(a), kind=kLoop, calls=fused")
    module = emit_fusion(fusion)
    x = np.linspace(-1, 1, 6).astype(np.float32)
    e, n = np.zeros(6, np.float32), np.zeros(6, np.float32)
    CpuKernel(str(module))(x, e, n)
    np.testing.assert_allclose(e, np.exp(x), rtol=1e-6)
    np.testing.assert_array_equal(n, -x)


def test_unsupported_opcode_names_the_instruction(ctx):
    fusion = _fused("p0 = f32[8] parameter(0)\nROOT s = f32[8] sort(p0), dimensions={0}, "
                    "to_apply=fused",
                    "a = f32[8] parameter(0)\n"
                    "ROOT f = f32[8] fusion(a), kind=kLoop, calls=fused")
    with pytest.raises(EmitterError, match=r"cannot emit s \(sort\)"):
        emit_fusion(fusion)


EMITTER_TESTS = sorted((HLO.parent / "emitters" / "loop").glob("*.hlo"))


@pytest.mark.parametrize("path", [p for p in EMITTER_TESTS if p.name != "unsupported.hlo"],
                         ids=lambda p: p.name)
@pytest.mark.parametrize("sm", [80, 90])
def test_every_loop_test_kernel_assembles(ctx, path, sm):
    """Every loop emitter test's kernel compiles to PTX that ptxas accepts."""
    from xla_gpu import pipelines, ptx
    if ptx.find_ptxas() is None or pipelines.find_libdevice() is None:
        pytest.skip("ptxas/libdevice (CUDA) is not installed on this machine")
    text = path.read_text()
    source = (HLO / "gelu.hlo").read_text() if "HloModule" not in text else text
    module = emit_fusion(find_fusion(parse_hlo(source)))
    opts = pipelines.PipelineOptions(compute_capability=(sm // 10, sm % 10))
    code = pipelines.compile_to_ptx(ir.Module.parse(str(module)), opts)
    result = ptx.ptxas_check(code, opts.chip)
    assert result.ok, result.log

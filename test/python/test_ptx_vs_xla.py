"""bench/ptx_vs_xla.py's and bench/xla_gpu_anchor.py's parsing (the
comparison itself needs XLA:GPU's wheels, `make anchor`): the target
config written from the device descriptions, the thunk sequence XLA:GPU
dumps, PTX access widths and shared memory, ptxas -v's report."""

import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "bench")
sys.path.insert(0, BENCH)

import ptx_vs_xla  # noqa: E402
import xla_gpu_anchor  # noqa: E402
from xla_gpu.emitters.device import DEVICES  # noqa: E402
from xla_gpu.ptx import find_ptxas  # noqa: E402


def test_target_config_comes_from_the_device_descriptions():
    text = xla_gpu_anchor.target_config("a100")
    d = DEVICES["a100"]
    assert f"core_count: {d.core_count}\n" in text
    assert f"threads_per_core_limit: {d.threads_per_core_limit}\n" in text
    assert "cuda_compute_capability { major: 8 }" in text
    assert 'platform_name: "CUDA"' in text
    assert "cuda_compute_capability { major: 9 }" in xla_gpu_anchor.target_config("h100")


def test_thunk_sequence_is_parsed():
    # As XLA:GPU 0.10.2 dumps it (module_*.thunk_sequence.txt).
    line = ("001: kCustomKernel [source | sink] input_transpose_fusion grid: [960, 1, 1] "
            "threads: [128, 1, 1]  shared_memory: 0 bytes\n")
    (k,) = xla_gpu_anchor._kernels(line)
    assert k == {"thunk": "kCustomKernel", "name": "input_transpose_fusion",
                 "grid": [960, 1, 1], "threads": [128, 1, 1], "dynamic_shared_bytes": 0}


PTX = """
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{
	.shared .align 4 .b8 shared_0[4224];
	ld.global.nc.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd1];
	ld.global.b16 	%rs1, [%rd2];
	st.global.v2.b32 	[%rd3], {%r1, %r2};
	st.global.f32 	[%rd3], %f1;
	ret;
}
"""


def test_access_widths_and_shared_memory():
    assert ptx_vs_xla.access_widths(PTX) == {"ld": {16: 1, 128: 1}, "st": {32: 1, 64: 1}}
    assert ptx_vs_xla.shared_bytes(PTX) == 4224


@pytest.mark.skipif(find_ptxas() is None, reason="no ptxas")
def test_ptxas_usage_reads_registers():
    ptx = ".version 8.0\n.target sm_80\n.address_size 64\n" + PTX.replace(
        "shared_0[4224];", "shared_0[4224];\n\t.reg .f32 %f<5>;\n\t.reg .b16 %rs<2>;\n"
        "\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<4>;\n\tld.param.u64 %rd1, [k_param_0];\n"
        "\tld.param.u64 %rd3, [k_param_1];\n\tmov.u64 %rd2, %rd1;")
    usage = xla_gpu_anchor.ptxas_usage(ptx, "sm_80")
    assert set(usage) == {"k"}
    assert usage["k"]["registers"] > 0 and usage["k"]["spill_stores"] == 0


def test_table_rows():
    row = {"case": "t/f", "device": "h100",
           "ours": {"grid": [960, 1, 1], "threads": [128, 1, 1], "registers": 32, "spills": 0,
                    "shared_bytes": 4224, "widths": {"ld": {32: 2}, "st": {32: 2}},
                    "ptx_lines": 219},
           "xla": {"kernels": [{"grid": [960, 1, 1], "threads": [128, 1, 1], "registers": 32}],
                   "shared_bytes": 4224, "widths": {"ld": {32: 1}, "st": {32: 1}},
                   "ptx_lines": 211, "error": None}}
    text = ptx_vs_xla.table([row])
    assert "| t/f | h100 | 960 x 128, 32 regs, 4224, ld 32 st 32, 219 | 1: 960 x 128, 32 regs, " \
           "4224, ld 32 st 32, 211 |" in text

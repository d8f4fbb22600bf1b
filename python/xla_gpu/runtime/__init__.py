"""Running emitted kernels: on the CPU with GPU semantics (`cpu`)."""

from .cpu import (CPU_DEFAULT_OPTIONS, CpuKernel, JitError, KernelArgumentError, compile_kernels,
                  run_on_cpu)

__all__ = ["CPU_DEFAULT_OPTIONS", "CpuKernel", "JitError", "KernelArgumentError", "compile_kernels",
           "run_on_cpu"]

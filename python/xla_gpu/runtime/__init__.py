"""Running emitted kernels: on the CPU with GPU semantics (`cpu`)."""

from .cpu import CpuKernel, KernelArgumentError, run_on_cpu

__all__ = ["CpuKernel", "KernelArgumentError", "run_on_cpu"]

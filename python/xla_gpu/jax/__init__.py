"""The JAX backend: our kernels inside jax programs, through the XLA FFI.

    import xla_gpu.jax as xj

    @xj.kernel
    def gelu(x):                         # traced to HLO, emitted as one fusion
        return jax.nn.gelu(x)

    xj.call(emitted_kernel, x, y)        # a kernel emitted by hand

    f = xj.jit(program)                  # XLA compiles it; its fusions run as
    f(x); print(f.fusion_report())       # our kernels where our emitters take them

Importing this package registers the FFI handlers (`xla_gpu_cpu_kernel`,
`xla_gpu_cuda_kernel`) with jax and the compiler the CPU handler uses for a
kernel it has not seen, so a serialized program that calls our kernels runs
in a fresh process after `import xla_gpu.jax`.
"""

from . import _ffi
from .decorator import KernelError, kernel
from .kernel_call import KernelCall, call, prepare
from .whole_program import FusionDecision, jit

_ffi.library()

__all__ = ["FusionDecision", "KernelCall", "KernelError", "call", "jit", "kernel", "prepare"]

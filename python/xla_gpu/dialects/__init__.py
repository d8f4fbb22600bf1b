"""Python op classes of the xla_gpu dialect (`from xla_gpu.dialects import xla_gpu`)."""

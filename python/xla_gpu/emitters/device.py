"""The GPU the emitters choose launch dimensions for (XLA's
se::DeviceDescription, the fields the emitters read)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_DEVICE", "DEVICES", "DeviceDescription", "device_named"]


@dataclass(frozen=True)
class DeviceDescription:
    name: str
    # sm_XY: what PTX is generated for.
    compute_capability: tuple[int, int]
    core_count: int              # streaming multiprocessors
    threads_per_core_limit: int  # resident threads per SM
    threads_per_warp: int = 32
    threads_per_block_limit: int = 1024
    block_dim_limit_x: int = 2**31 - 1
    # Static shared memory a block may use (bytes).
    shared_memory_per_block: int = 48 * 1024

    @property
    def chip(self) -> str:
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"

    @property
    def max_resident_threads(self) -> int:
        return self.core_count * self.threads_per_core_limit


DEVICES = {d.name: d for d in [
    DeviceDescription("h100", (9, 0), core_count=132, threads_per_core_limit=2048),
    DeviceDescription("h200", (9, 0), core_count=132, threads_per_core_limit=2048),
    DeviceDescription("a100", (8, 0), core_count=108, threads_per_core_limit=2048),
    DeviceDescription("l4", (8, 9), core_count=58, threads_per_core_limit=1536),
    # XLA's test tools (fusion_to_mlir, test_correctness) default to it.
    DeviceDescription("a6000", (8, 6), core_count=84, threads_per_core_limit=1536),
]}
# A recent NVIDIA GPU.
DEFAULT_DEVICE = DEVICES["h100"]


def device_named(name: str) -> DeviceDescription:
    if name not in DEVICES:
        raise ValueError(f"unknown device '{name}'; known: {', '.join(sorted(DEVICES))}")
    return DEVICES[name]

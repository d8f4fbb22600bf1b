"""Prepares the GPU check (bench/gpu_check.py) on a machine without a GPU:
the kernels of bench/gpu_cases.py compiled to PTX for sm_90 (the H200) by
our emitters, each written as the xla_gpu.jax call that launches it (PTX,
entry, launch dimensions, signature) into one JSON file -- what travels to
the GPU machine with the handler's sources.

    .venv/bin/python bench/gpu_check_prepare.py [--out bench/out/gpu_check]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import jax

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gpu_cases  # noqa: E402
from xla_gpu.emitters.device import device_named  # noqa: E402
from xla_gpu.jax.decorator import _build  # noqa: E402


def prepare(out: Path, device_name: str = "h100") -> Path:
    device = device_named(device_name)
    calls = {}
    for name, (fn, specs, _) in gpu_cases.GPU_CASES.items():
        avals = tuple(jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in specs)
        calls[name] = json.loads(_build(fn, name, avals, "cuda", device).to_json())
    out.mkdir(parents=True, exist_ok=True)
    path = out / "kernels.json"
    path.write_text(json.dumps({"device": device_name, "calls": calls}, indent=1))
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "out" / "gpu_check")
    args = parser.parse_args(argv)
    path = prepare(args.out)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

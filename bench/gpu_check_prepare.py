"""Prepares the GPU check (bench/gpu_check.py) on a machine without a GPU,
everything compiled to PTX for sm_90 (the H200) by our emitters:
  - kernels.json: the kernels of bench/gpu_cases.py, each as the
    xla_gpu.jax call that launches it (PTX, entry, launch dimensions,
    signature), for the CUDA FFI handler;
  - bundles/<case>/<fusion>/: a kernel bundle (runtime/cuda.py) for every
    fusion of every .hlo under test/emitters/ and of bench/'s HLO cases,
    each with the fusion as XLA takes it (reference.hlo) for XLA:GPU.
That folder is what travels to the GPU machine, with the sources.

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


def hlo_sources() -> dict[str, str]:
    """case name -> HLO text: the emitter tests and bench/'s HLO cases."""
    import suite
    sources = {}
    for path in sorted((HERE.parent / "test" / "emitters").rglob("*.hlo")):
        sources[f"{path.parent.name}/{path.stem}"] = path.read_text()
    for file, case, text in suite.hlo_cases():
        sources[f"bench/{file}/{case}"] = text
    return sources


def _folder_name(case: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in case)


def prepare_bundles(out: Path, device_name: str = "h100", only: str | None = None
                    ) -> tuple[int, list[str]]:
    """Bundles under out/bundles; returns how many and what was skipped."""
    from xla_gpu.hlo import parse_hlo
    from xla_gpu.runtime.bundle import write_bundles
    device = device_named(device_name)
    count, skipped = 0, []
    for case, text in hlo_sources().items():
        if only and only not in case:
            continue
        try:
            written, why = write_bundles(parse_hlo(text, source=case),
                                         out / "bundles" / _folder_name(case), device)
        except Exception as e:  # an error test, or a fusion we refuse
            skipped.append(f"{case}: {type(e).__name__}: {str(e).splitlines()[0]}")
            continue
        count += len(written)
        skipped += [f"{case}: {w}" for w in why]
    return count, skipped


def cpu_check(out: Path, only: str | None = None) -> list[str]:
    """Runs every prepared bundle here the way gpu_check.py will there --
    its inputs, its reference.hlo on XLA (XLA:CPU here), its tolerance --
    with our CPU-target kernel of the same fusion in place of the PTX:
    what travels is checked before it travels. Returns the mismatches."""
    import numpy as np
    from mlir import ir
    from xla_gpu.emitters import emit_kernel, find_fusion
    from xla_gpu.hlo import parse_hlo
    from xla_gpu.reference import XlaCpuExecutable
    from xla_gpu.runtime import CpuKernel
    from xla_gpu.runtime.cuda import KernelBundle, random_inputs
    import gpu_check

    device = device_named("h100")
    mismatches = []
    for case, text in hlo_sources().items():
        folder = out / "bundles" / _folder_name(case)
        if (only and only not in case) or not folder.exists():
            continue
        module = parse_hlo(text, source=case)
        fusions = {f.name: f for f in module.fusions()}
        for meta in sorted(folder.rglob("kernel.json")):
            bundle = KernelBundle.load(meta.parent)
            inputs = random_inputs(bundle)
            outs = [np.zeros(r.shape, r.numpy_dtype) for r in bundle.results]
            with ir.Context():
                fusion = fusions.get(meta.parent.name) or find_fusion(module)
                CpuKernel(emit_kernel(fusion, device))(*inputs, *outs)
            want = XlaCpuExecutable((meta.parent / "reference.hlo").read_text()).run(inputs)
            for k, (got, w, spec) in enumerate(zip(outs, want, bundle.results)):
                err, ok = gpu_check._max_error(got, w.reshape(got.shape), spec.dtype,
                                               bundle.info.get("narrowest_float"))
                if not ok:
                    mismatches.append(f"{case}/{meta.parent.name} result {k}: error {err:.3g}")
    return mismatches


def prepare(out: Path, device_name: str = "h100") -> Path:
    device = device_named(device_name)
    calls = {}
    for name, (fn, specs, _) in gpu_cases.GPU_CASES.items():
        avals = tuple(jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in specs)
        calls[name] = json.loads(_build(fn, name, avals, "cuda", device)[0].to_json())
    out.mkdir(parents=True, exist_ok=True)
    path = out / "kernels.json"
    path.write_text(json.dumps({"device": device_name, "calls": calls}, indent=1))
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "out" / "gpu_check")
    parser.add_argument("--only", default=None, help="bundles of the cases whose name has this")
    parser.add_argument("--cpu-check", action="store_true",
                        help="then run each bundle's comparison here, our CPU target in "
                             "place of the PTX and XLA:CPU in place of XLA:GPU")
    args = parser.parse_args(argv)
    path = prepare(args.out)
    print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    count, skipped = prepare_bundles(args.out, only=args.only)
    size = sum(f.stat().st_size for f in (args.out / "bundles").rglob("*") if f.is_file())
    print(f"wrote {count} bundles under {args.out / 'bundles'} ({size // 1024} KiB); "
          f"skipped {len(skipped)}:")
    for line in skipped:
        print(f"  {line}")
    if args.cpu_check:
        mismatches = cpu_check(args.out, args.only)
        print(f"CPU check of the bundles: {len(mismatches)} mismatches")
        for line in mismatches:
            print(f"  {line}")
        return 1 if mismatches else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

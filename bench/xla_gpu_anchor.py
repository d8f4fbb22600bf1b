"""XLA:GPU's side of bench/ptx_vs_xla.py: HLO modules compiled by XLA:GPU
without a GPU (deviceless, through a compile-only client for a target
config), and what it made of each -- its kernels' launch dimensions and
shared memory (the thunk sequence), their PTX, and ptxas's registers and
spills for it.

Runs in the anchor venv (`make anchor`: jax 0.10.2 with its CUDA 13
plugin, requirements-anchor.txt), which has no MLIR and no xla_gpu:

    .venv-anchor/bin/python bench/xla_gpu_anchor.py CASES.json --device h100 --out XLA.json

CASES.json: [{"name": ..., "hlo": path}, ...]. The target configs are ours,
written from the device descriptions (the GpuTargetConfigProto fields XLA
reads): the emitters' device descriptions (python/xla_gpu/emitters/
device.py) and the public figures of each part.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

def _device_descriptions():
    """python/xla_gpu/emitters/device.py, loaded by path (it needs nothing
    but the standard library; this venv has no xla_gpu)."""
    import importlib.util
    path = Path(__file__).resolve().parent.parent / "python/xla_gpu/emitters/device.py"
    spec = importlib.util.spec_from_file_location("xla_gpu_device", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module.DEVICES


# What XLA's target config needs beyond the emitters' device descriptions:
# the public figures of each part (NVIDIA's datasheets, SXM 80 GB parts).
EXTRA = {
    "h100": dict(shared_memory_per_core=233472, fpus_per_core=128,
                 memory_bandwidth=3352320000000, l2_cache_size=52428800, clock_rate_ghz=1.98,
                 device_memory_size=84942979072, shared_memory_per_block_optin=232448,
                 description="NVIDIA H100 80GB HBM3"),
    "a100": dict(shared_memory_per_core=167936, fpus_per_core=64,
                 memory_bandwidth=2039000000000, l2_cache_size=41943040, clock_rate_ghz=1.41,
                 device_memory_size=85031714816, shared_memory_per_block_optin=166912,
                 description="NVIDIA A100-SXM4-80GB"),
}
DEVICES = sorted(EXTRA)


def compute_capability(device: str) -> tuple[int, int]:
    return _device_descriptions()[device].compute_capability


def target_config(device: str) -> str:
    """The GpuTargetConfigProto text of `device`."""
    d = _device_descriptions()[device]
    extra = dict(EXTRA[device])
    name = extra.pop("description")
    info = dict(threads_per_block_limit=d.threads_per_block_limit,
                threads_per_warp=d.threads_per_warp,
                shared_memory_per_block=d.shared_memory_per_block,
                threads_per_core_limit=d.threads_per_core_limit, core_count=d.core_count,
                block_dim_limit_x=d.block_dim_limit_x, block_dim_limit_y=65535,
                block_dim_limit_z=65535, registers_per_core_limit=65536,
                registers_per_block_limit=65536, **extra)
    fields = "\n".join(f"  {k}: {v}" for k, v in info.items())
    major, minor = d.compute_capability
    cc = f"  cuda_compute_capability {{ major: {major}{f' minor: {minor}' if minor else ''} }}"
    return (f"gpu_device_info {{\n{fields}\n{cc}\n}}\nplatform_name: \"CUDA\"\n"
            f"dnn_version_info {{ major: 9 minor: 8 }}\ndevice_description_str: \"{name}\"\n")


def ptxas_usage(ptx: str, arch: str) -> dict[str, dict]:
    """entry -> {registers, spill_stores, spill_loads, shared_bytes} from
    `ptxas -v` (empty if there is no ptxas)."""
    ptxas = shutil.which("ptxas") or next(
        (p for p in ("/usr/local/cuda/bin/ptxas", "/usr/local/cuda-13.0/bin/ptxas")
         if os.path.exists(p)), None)
    if ptxas is None:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        p = subprocess.run([ptxas, f"-arch={arch}", "-v", "-o", str(Path(tmp) / "k.cubin"),
                            str(src)], capture_output=True, text=True)
    out, entry = {}, None
    for line in (p.stdout + p.stderr).splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            entry = m.group(1)
            out[entry] = {"registers": 0, "spill_stores": 0, "spill_loads": 0, "shared_bytes": 0}
            continue
        if entry is None:
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            out[entry]["spill_stores"], out[entry]["spill_loads"] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            out[entry]["registers"] = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            out[entry]["shared_bytes"] = int(m.group(1))
    return out


def _kernels(thunks: str) -> list[dict]:
    out = []
    for m in re.finditer(r"(\w+)\s+\[[^\]]*\]\s+(\S+)\s+grid: \[(\d+), (\d+), (\d+)\] "
                         r"threads: \[(\d+), (\d+), (\d+)\]\s+shared_memory: (\d+)", thunks):
        out.append({"thunk": m.group(1), "name": m.group(2),
                    "grid": [int(m.group(i)) for i in (3, 4, 5)],
                    "threads": [int(m.group(i)) for i in (6, 7, 8)],
                    "dynamic_shared_bytes": int(m.group(9))})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", type=Path)
    parser.add_argument("--device", choices=DEVICES, default="h100")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    dump = Path(tempfile.mkdtemp(prefix="xla_gpu_anchor_"))
    # Read when the backend starts: before jax is imported.
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={dump}".strip()
    from jax._src import compiler
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib import xla_client as xc
    from jax._src.lib.mlir import ir
    from jax.experimental import topologies

    topo = topologies.get_topology_desc(platform="cuda", target_config=target_config(args.device),
                                        topology="1x1x1")
    device = topo.devices[0]
    major, minor = compute_capability(args.device)
    arch = f"sm_{major}{minor}" + ("a" if major >= 9 else "")
    results = []
    for i, case in enumerate(json.loads(args.cases.read_text())):
        text = Path(case["hlo"]).read_text()
        name = f"anchor_{i}"
        text = re.sub(r"^HloModule \S+", f"HloModule {name}", text, count=1, flags=re.M)
        r = {"name": case["name"]}
        try:
            module = xc.hlo.hlo_module_from_text(text)
            stablehlo = xc._xla.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())
            with jax_mlir.make_ir_context():
                executable = device.client.compile(
                    ir.Module.parse(stablehlo), executable_devices=xc.DeviceList((device,)),
                    compile_options=compiler.get_compile_options(num_replicas=1, num_partitions=1))
            r["optimized_hlo"] = executable.hlo_modules()[0].to_string()
            files = glob.glob(str(dump / f"module_*.{name}.*"))
            thunks = next((f for f in files if f.endswith(".thunk_sequence.txt")), None)
            r["kernels"] = _kernels(Path(thunks).read_text()) if thunks else []
            ptx = "\n".join(Path(f).read_text() for f in sorted(files) if f.endswith(".ptx"))
            usage = ptxas_usage(ptx, arch) if ptx.strip() else {}
            for k in r["kernels"]:
                k.update(usage.get(k["name"], {}))
            r["ptx_lines"] = len(ptx.splitlines())
            r["ptx"] = ptx
        except Exception as e:  # recorded for the report
            r["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        results.append(r)
    args.out.write_text(json.dumps({"device": args.device, "arch": arch, "cases": results},
                                   indent=1) + "\n")
    shutil.rmtree(dump, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

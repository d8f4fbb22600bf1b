"""Our PTX beside XLA:GPU's for the same fusions, without a GPU: for every
fusion of test/emitters/ and of bench/'s HLO cases (the bundles of
gpu_check_prepare.py), on sm_90 (H100) and sm_80 (A100): launch
dimensions, registers and spills (ptxas -v), shared memory, the widths of
global loads and stores, PTX lines -- ours from our bundle, XLA's from
XLA:GPU compiling the fusion's reference.hlo deviceless (bench/
xla_gpu_anchor.py, in the anchor venv: `make anchor`).

    .venv/bin/python bench/ptx_vs_xla.py [--devices h100,a100] [--only NAME]

Writes bench/out/ptx_vs_xla/results.json and table.md, and prints the
table. XLA may make a fusion into another number of kernels (its own
fusion decisions on the reference): each of its kernels is listed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gpu_check_prepare  # noqa: E402
from xla_gpu_anchor import ptxas_usage  # noqa: E402

ANCHOR_PYTHON = HERE.parent / ".venv-anchor" / "bin" / "python"
ARCH = {"h100": ("sm_90", "sm_90a"), "a100": ("sm_80", "sm_80")}


def access_widths(ptx: str) -> dict[str, dict[int, int]]:
    """Global loads and stores by width in bits: {"ld": {128: n, ...}, "st": ...}."""
    out = {"ld": Counter(), "st": Counter()}
    for m in re.finditer(r"\b(ld|st)\.global(?:\.[a-z]+)*?(?:\.v(\d))?\.[bfsu](\d+)\b", ptx):
        out[m.group(1)][int(m.group(2) or 1) * int(m.group(3))] += 1
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def shared_bytes(ptx: str) -> int:
    return sum(int(m.group(1)) for m in re.finditer(r"\.shared\s.*?\[(\d+)\]", ptx))


def ours(bundle_dir: Path, arch: str) -> dict:
    meta = json.loads((bundle_dir / "kernel.json").read_text())
    ptx = (bundle_dir / "kernel.ptx").read_text()
    usage = ptxas_usage(ptx, arch).get(meta["entry"], {})
    return {"grid": meta["launch"]["block_counts"],
            "threads": meta["launch"]["thread_counts_per_block"],
            "registers": usage.get("registers"), "spills": usage.get("spill_stores", 0)
            + usage.get("spill_loads", 0), "shared_bytes": shared_bytes(ptx),
            "widths": access_widths(ptx), "ptx_lines": len(ptx.splitlines())}


def _fmt_widths(w: dict) -> str:
    return "ld " + "/".join(str(b) for b in w["ld"]) + " st " + "/".join(str(b) for b in w["st"])


def _dims(g) -> str:
    return "x".join(str(c) for c in g if c != 1) or "1"


def run(device: str, out: Path, only: str | None, anchor_python: Path) -> list[dict]:
    ours_arch, xla_arch = ARCH[device]
    folder = out / device
    count, skipped = gpu_check_prepare.prepare_bundles(folder, device, only)
    bundles = sorted((folder / "bundles").rglob("kernel.json"))
    cases = [{"name": str(p.parent.relative_to(folder / "bundles")),
              "hlo": str(p.parent / "reference.hlo")} for p in bundles]
    (folder / "cases.json").write_text(json.dumps(cases))
    xla_json = folder / "xla.json"
    subprocess.run([str(anchor_python), str(HERE / "xla_gpu_anchor.py"), str(folder / "cases.json"),
                    "--device", device, "--out", str(xla_json)], check=True)
    xla = {c["name"]: c for c in json.loads(xla_json.read_text())["cases"]}
    rows = []
    for p, case in zip(bundles, cases):
        x = xla.get(case["name"], {})
        xk = x.get("kernels", [])
        xptx = x.get("ptx", "")
        rows.append({"case": case["name"], "device": device, "ours": ours(p.parent, ours_arch),
                     "xla": {"kernels": [{k: v for k, v in kk.items()} for kk in xk],
                             "shared_bytes": shared_bytes(xptx), "widths": access_widths(xptx),
                             "ptx_lines": x.get("ptx_lines"), "error": x.get("error")}})
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| case | device | ours: grid x threads, regs, smem B, global ld/st bits, PTX lines "
             "| XLA:GPU: kernels (grid x threads, regs), smem B, ld/st bits, PTX lines |",
             "| --- | --- | --- | --- |"]
    for r in rows:
        o, x = r["ours"], r["xla"]
        ours_cell = (f"{_dims(o['grid'])} x {_dims(o['threads'])}, {o['registers']} regs"
                     f"{' (spills ' + str(o['spills']) + ' B)' if o['spills'] else ''}, "
                     f"{o['shared_bytes']}, {_fmt_widths(o['widths'])}, {o['ptx_lines']}")
        if x.get("error"):
            xla_cell = x["error"]
        else:
            ks = "; ".join(f"{_dims(k['grid'])} x {_dims(k['threads'])}, {k.get('registers')} regs"
                           for k in x["kernels"]) or "no kernel"
            xla_cell = (f"{len(x['kernels'])}: {ks}, {x['shared_bytes']}, "
                        f"{_fmt_widths(x['widths'])}, {x['ptx_lines']}")
        lines.append(f"| {r['case']} | {r['device']} | {ours_cell} | {xla_cell} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default="h100,a100")
    parser.add_argument("--only", default=None)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "ptx_vs_xla")
    parser.add_argument("--anchor-python", type=Path, default=ANCHOR_PYTHON,
                        help="a Python with jax + its CUDA plugin (make anchor)")
    args = parser.parse_args(argv)
    if not args.anchor_python.exists():
        print(f"{args.anchor_python} is missing: run `make anchor` (XLA:GPU's wheels)",
              file=sys.stderr)
        return 1
    rows = []
    for device in args.devices.split(","):
        rows += run(device, args.out, args.only, args.anchor_python)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    text = table(rows)
    (args.out / "table.md").write_text(text)
    print(text)
    same = sum(1 for r in rows if len(r["xla"]["kernels"]) == 1 and
               r["xla"]["kernels"][0]["grid"] == r["ours"]["grid"] and
               r["xla"]["kernels"][0]["threads"] == r["ours"]["threads"])
    print(f"{same} of {len(rows)} fusions launch as XLA:GPU launches them (one kernel, the same "
          "grid and block)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

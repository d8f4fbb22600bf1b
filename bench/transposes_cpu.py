"""Benchmark: transpose and concatenate fusions on the CPU target against
XLA:CPU running the same HLO (the cases of the transpose issue: the seed's
f32[20,160,170] -> [170,160,20] with exp and abs, a 021 transpose of
f16[8,200,96], a transpose + add, and a concatenate of three operands),
and a 021 transpose of whole bf16 tiles, bf16[16,256,512]: XLA's packed
16-bit transpose, whose second phase reads the shared tile's columns two
bytes at a time -- element by element on the CPU target.

Both sides are compiled once and run on the same inputs in the same
process; medians of --runs timed runs a side, in blocks
(loop_fusions_cpu.bench). Read the ratio
ours / XLA (machines are noisy).

    .venv/bin/python bench/transposes_cpu.py [--runs 10] [--only NAME]
"""

from __future__ import annotations

from loop_fusions_cpu import run_cases


def _module(body: str, params: list[str], out: str, kind: str = "kInput") -> str:
    decls = "\n".join(f"  a{i} = {p} parameter({i})" for i, p in enumerate(params))
    args = "\n".join(f"  p{i} = {p} parameter({i})" for i, p in enumerate(params))
    names = ", ".join(f"p{i}" for i in range(len(params)))
    return (f"HloModule bench\n\nfused {{\n{decls}\n{body}\n}}\n\n"
            f"ENTRY main {{\n{args}\n"
            f"  ROOT f = {out} fusion({names}), kind={kind}, calls=fused\n}}\n")


CASES = {
    "seed transpose exp/abs f32[20,160,170]": _module(
        "  e = f32[20,160,170] exponential(a0)\n"
        "  t = f32[170,160,20] transpose(e), dimensions={2,1,0}\n"
        "  ROOT r = f32[170,160,20] abs(t)", ["f32[20,160,170]"], "f32[170,160,20]"),
    "021 transpose f16[8,200,96]": _module(
        "  ROOT t = f16[8,96,200] transpose(a0), dimensions={0,2,1}",
        ["f16[8,200,96]"], "f16[8,96,200]"),
    "transpose+add f32[1024,1024]": _module(
        "  t = f32[1024,1024] transpose(a0), dimensions={1,0}\n"
        "  ROOT r = f32[1024,1024] add(t, a1)", ["f32[1024,1024]", "f32[1024,1024]"],
        "f32[1024,1024]"),
    "021 transpose bf16[16,256,512]": _module(
        "  ROOT t = bf16[16,512,256] transpose(a0), dimensions={0,2,1}",
        ["bf16[16,256,512]"], "bf16[16,512,256]"),
    # 8 channels: the loop emitter's on the CPU target (emitters.
    # HOST_LOOP_TRANSPOSE_MAX_SIDE; XLA's 32 x 32 tiles, a quarter full,
    # ran 4.6x slower).
    "NHWC -> NCHW u8[16,112,112,8]": _module(
        "  ROOT t = u8[16,8,112,112] transpose(a0), dimensions={0,3,1,2}",
        ["u8[16,112,112,8]"], "u8[16,8,112,112]"),
    # Partial tiles along both swapped dimensions (stop 84): whole tiles'
    # loops without bounds checks (TransposeEmitter._versioned_kernel_loop;
    # 0.275 -> 0.178 ms a kernel call).
    "021 transpose f32[16,300,500] + 1": _module(
        "  t = f32[16,500,300] transpose(a0), dimensions={0,2,1}\n"
        "  c = f32[] constant(1)\n  b = f32[16,500,300] broadcast(c), dimensions={}\n"
        "  ROOT r = f32[16,500,300] add(t, b)", ["f32[16,300,500]"], "f32[16,500,300]"),
    "concatenate f32[1024,{100,200,28}]": _module(
        "  e = f32[1024,100] exponential(a0)\n  m = f32[1024,28] multiply(a2, a2)\n"
        "  ROOT c = f32[1024,328] concatenate(e, a1, m), dimensions={1}",
        ["f32[1024,100]", "f32[1024,200]", "f32[1024,28]"], "f32[1024,328]"),
}


def main(argv=None) -> int:
    return run_cases(CASES, "transposes and concatenates on the CPU target vs XLA:CPU", argv)


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: fusions of real jax programs, as XLA:CPU's optimized modules
hold them, through our emitters on the CPU target against XLA:CPU running
the same module (the performance issue's cases):

- the softmax step `exp(x - max(x))` with the max reduced inline over 32
  elements, one loop fusion, at f32[2,4,32,32] and f32[256,32] (once a
  compile of minutes: LLVM unrolled the inline reduction inside the
  unrolled element loop -- a compile-time regression case);
- jnp.cumsum over f32[64,512]: XLA:CPU's module (reduce-window, slices,
  pad and adds in six fusions), every fusion ours;
- jax.nn.gelu(approximate=False) over f32[1024,1024]: erf in a loop fusion.

The jax modules are made here with jax (XLA:CPU's optimized HLO of the
jitted function); fusions XLA:CPU hands to a library (kCustom) would stay
XLA's, so the cases use the functions whose fusions are all kLoop/kInput.

    .venv/bin/python bench/programs_cpu.py [--runs 10] [--only NAME]
"""

from __future__ import annotations

from loop_fusions_cpu import run_cases


def _softmax_step(shape: list[int]) -> str:
    full = f"f32[{','.join(map(str, shape))}]"
    kept = f"f32[{','.join(map(str, shape[:-1]))}]"
    last = len(shape) - 1
    return (f"HloModule softmax_step\n\nmax_f32 {{\n  a = f32[] parameter(0)\n"
            f"  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}}\n\n"
            f"fused {{\n  x = {full} parameter(0)\n  ninf = f32[] constant(-inf)\n"
            f"  m = {kept} reduce(x, ninf), dimensions={{{last}}}, to_apply=max_f32\n"
            f"  b = {full} broadcast(m), dimensions={{{','.join(map(str, range(last)))}}}\n"
            f"  s = {full} subtract(x, b)\n  ROOT e = {full} exponential(s)\n}}\n\n"
            f"ENTRY main {{\n  p0 = {full} parameter(0)\n"
            f"  ROOT f = {full} fusion(p0), kind=kLoop, calls=fused\n}}\n")


def _xla_cpu_module(fn, shape: tuple[int, ...]) -> str:
    """XLA:CPU's optimized module of jax.jit(fn) at f32[shape]."""
    import jax
    import jax.numpy as jnp
    with jax.default_device(jax.devices("cpu")[0]):
        compiled = jax.jit(fn).lower(jax.ShapeDtypeStruct(shape, jnp.float32)).compile()
    return compiled.as_text()


def _cumsum(x):
    import jax.numpy as jnp
    return jnp.cumsum(x, axis=-1)


def _gelu_erf(x):
    import jax
    return jax.nn.gelu(x, approximate=False)


CASES = {
    "softmax step exp(x - max(x)) f32[2,4,32,32]": _softmax_step([2, 4, 32, 32]),
    "softmax step exp(x - max(x)) f32[256,32]": _softmax_step([256, 32]),
    "cumsum f32[64,512] (jax, 6 fusions)": _xla_cpu_module(_cumsum, (64, 512)),
    "erf GELU f32[1024,1024] (jax)": _xla_cpu_module(_gelu_erf, (1024, 1024)),
}


def main(argv=None) -> int:
    return run_cases(CASES, "jax programs' fusions on the CPU target vs XLA:CPU", argv)


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: the in-place emitters on the CPU target against XLA:CPU
running the same HLO (the cases of the scatter issue): a scatter-add of
500 x 16 updates into f32[100,16] (duplicate rows: atomics), a
one-token KV-cache update bf16[64,1,128] into bf16[64,1024,128], and a
segment sum of sorted segment ids.

Both sides get separate input and output buffers, as XLA:CPU without
buffer donation has them: each copies the operand into the output and
updates it in place (our CPU runtime copies an aliased output's operand,
see runtime/cpu.py); the kernels themselves write only the updated
elements (test_emitters.py::test_in_place_update_writes_only_the_update).

    .venv/bin/python bench/scatter_cpu.py [--runs 10] [--only NAME]
"""

from __future__ import annotations

from loop_fusions_cpu import run_cases

SCATTER_ADD = """HloModule bench

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

fused {
  x = f32[100,16] parameter(0)
  i = s32[500,1] parameter(1)
  u = f32[500,16] parameter(2)
  ROOT sc = f32[100,16] scatter(x, i, u), update_window_dims={1}, inserted_window_dims={0},
    scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add
}

ENTRY main {
  x = f32[100,16] parameter(0)
  i = s32[500,1] parameter(1)
  u = f32[500,16] parameter(2)
  ROOT f = f32[100,16] fusion(x, i, u), kind=kInput, calls=fused
}
"""

# jax.ops.segment_sum(u, ids, 1000, indices_are_sorted=True) of 1M floats
# (stop 79), the segment ids computed in the fusion (runs of 1049 updates a
# segment, sorted): XLA:CPU adds them one after the other through memory
# (a store, then the next add's load of the same element), as our CPU
# target did before it carried a run's sum in registers (3.0 -> 0.8 ms).
SEGMENT_SUM = """HloModule bench

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

fused {
  x = f32[1000] parameter(0)
  u = f32[1048576] parameter(1)
  n = s32[1048576] iota(), iota_dimension=0
  k = s32[] constant(1049)
  kb = s32[1048576] broadcast(k), dimensions={}
  d = s32[1048576] divide(n, kb)
  i = s32[1048576,1] reshape(d)
  ROOT sc = f32[1000] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0},
    scatter_dims_to_operand_dims={0}, index_vector_dim=1, indices_are_sorted=true, to_apply=add
}

ENTRY main {
  x = f32[1000] parameter(0)
  u = f32[1048576] parameter(1)
  ROOT f = f32[1000] fusion(x, u), kind=kInput, calls=fused
}
"""

KV_CACHE = """HloModule bench

fused {
  cache = bf16[64,1024,128] parameter(0)
  tok = bf16[64,1,128] parameter(1)
  pos = s32[] parameter(2)
  z = s32[] constant(0)
  ROOT d = bf16[64,1024,128] dynamic-update-slice(cache, tok, z, pos, z)
}

ENTRY main {
  cache = bf16[64,1024,128] parameter(0)
  tok = bf16[64,1,128] parameter(1)
  pos = s32[] parameter(2)
  ROOT f = bf16[64,1024,128] fusion(cache, tok, pos), kind=kLoop, calls=fused
}
"""

CASES = {
    "scatter-add 500x16 -> f32[100,16]": SCATTER_ADD,
    "KV-cache update bf16[64,1,128] -> [64,1024,128]": KV_CACHE,
    "segment sum of sorted ids f32[1048576] -> [1000]": SEGMENT_SUM,
}


def main(argv=None) -> int:
    return run_cases(CASES, "scatter and in-place dynamic-update-slice on the CPU target vs "
                            "XLA:CPU", argv)


if __name__ == "__main__":
    raise SystemExit(main())

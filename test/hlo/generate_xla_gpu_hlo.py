"""Regenerates the xla_gpu_*.hlo test inputs: XLA:GPU's optimized modules
(its real fusion decisions for an H100: kInput reductions and transposes,
not XLA:CPU's) of small jax programs, compiled without a GPU. Runs in the
anchor venv (`make anchor`):

    .venv-anchor/bin/python test/hlo/generate_xla_gpu_hlo.py
"""

import os
import sys
from pathlib import Path

os.environ["JAX_PLATFORMS"] = "cpu"
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "bench"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.experimental import topologies  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec as P  # noqa: E402

import xla_gpu_anchor  # noqa: E402


def layernorm(x, g, b):
    m = jnp.mean(x, -1, keepdims=True)
    v = jnp.mean((x - m) ** 2, -1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b


def column_stats(x):
    return jnp.sum(x, axis=0), jnp.max(x, axis=0)


def attention_layout(q, k):
    heads_first = jnp.transpose(q.reshape(8, 64, 4, 32), (0, 2, 1, 3))
    return jnp.exp(heads_first) * 2.0, jnp.transpose(k.reshape(8, 64, 4, 32), (0, 2, 3, 1)) + 1.0


def scatter_argmax(x, idx, u):
    return x.at[idx].add(u * 2.0), jnp.argmax(x, -1)


PROGRAMS = {
    "layernorm": (layernorm, [((64, 256), jnp.float32), ((256,), jnp.float32),
                              ((256,), jnp.float32)]),
    "column_stats": (column_stats, [((512, 96), jnp.float32)]),
    "attention_layout": (attention_layout, [((8, 64, 128), jnp.float32),
                                            ((8, 64, 128), jnp.float32)]),
    "scatter_argmax": (scatter_argmax, [((100, 16), jnp.float32), ((500,), jnp.int32),
                                        ((500, 16), jnp.float32)]),
}


def main() -> None:
    topo = topologies.get_topology_desc(platform="cuda",
                                        target_config=xla_gpu_anchor.target_config("h100"),
                                        topology="1x1x1")
    sharding = NamedSharding(topologies.make_mesh(topo, (1,), ("x",)), P())
    for name, (fn, specs) in PROGRAMS.items():
        args = [jax.ShapeDtypeStruct(s, t, sharding=sharding) for s, t in specs]
        text = jax.jit(fn).lower(*args).compile().as_text()
        (HERE / f"xla_gpu_{name}.hlo").write_text(text)
        print(f"wrote xla_gpu_{name}.hlo")


if __name__ == "__main__":
    main()

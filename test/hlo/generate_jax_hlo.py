"""Regenerates the jax_*.hlo test inputs: the HLO jax 0.10.2 prints for a
function that uses most HLO ops, before (`as_text(dialect="hlo")`) and after
XLA:CPU's optimisation (`compile().as_text()`); and XLA:CPU's optimized
modules of three programs with reductions (softmax, layer norm, a loss with
argmax) and three with the other heroes (a scatter-add, a KV-cache update,
attention's transposes and a concatenate), made without XLA:CPU's YNNPACK
fusions so that they stay HLO fusions.

    .venv/bin/python test/hlo/generate_jax_hlo.py
"""

import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
from jax import lax


def many_ops(x, y, idx, ints):
    a = jnp.tanh(x) * 2.0 + y.T
    b = jnp.sum(a, axis=1)
    c = jnp.concatenate([x, y.T], axis=0)[1:5:2]
    d = jnp.pad(x, ((1, 2), (0, 1)))
    e = lax.dynamic_slice(x, (idx, 1), (2, 3))
    f = lax.dynamic_update_slice(x, e * 0, (idx, 2))
    g = jnp.take(x, ints, axis=0)
    h = lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "VALID")
    i = x @ y
    j = jnp.where(x > 0.5, jnp.exp(x), jnp.log1p(jnp.abs(x)))
    k = jnp.reshape(x, (2, 16)).astype(jnp.bfloat16)
    l = jnp.flip(x, axis=1) + jnp.arange(8, dtype=jnp.float32)
    m = lax.bitcast_convert_type(x, jnp.int32) >> 3
    n = jnp.clip(ints, 0, 2) % 3
    o = jnp.broadcast_to(x[:, None, :], (4, 3, 8))
    return b, c, d, e, f, g, h, i, j, k, l, m, n, o


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def layernorm(x, g, b):
    m = jnp.mean(x, -1, keepdims=True)
    v = jnp.mean((x - m) ** 2, -1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


def loss(logits, labels):
    lp = jax.nn.log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(lp, labels[:, None], 1)), jnp.argmax(logits, -1)


def scatter_add(x, idx, u):
    return x.at[idx].add(u * 2.0)


def kv_update(cache, tok, pos):
    return lax.dynamic_update_slice(cache, tok, (0, pos, 0))


def attention_layout(q, k):
    heads_first = jnp.transpose(q.reshape(8, 64, 4, 32), (0, 2, 1, 3))
    keys_transposed = jnp.transpose(k.reshape(8, 64, 4, 32), (0, 2, 3, 1))
    return (jnp.exp(heads_first) * 2.0, keys_transposed + 1.0,
            jnp.concatenate([q, jnp.tanh(k)], axis=-1))


def heroes(here: Path) -> None:
    # f32 (XLA:CPU computes a bf16 update in f32: not in place).
    for name, f, f_args in [
            ("scatter", scatter_add, (jnp.ones((100, 16)), jnp.zeros(500, jnp.int32),
                                      jnp.ones((500, 16)))),
            ("kv_cache", kv_update, (jnp.ones((4, 256, 64)), jnp.ones((4, 1, 64)),
                                     jnp.int32(3))),
            ("attention_layout", attention_layout, (jnp.ones((8, 64, 128)),
                                                    jnp.ones((8, 64, 128))))]:
        (here / f"jax_{name}.hlo").write_text(jax.jit(f).lower(*f_args).compile().as_text())


def reductions(here: Path) -> None:
    x = jnp.ones((64, 256), jnp.float32)
    for name, f, f_args in [("softmax", softmax, (x,)),
                            ("layernorm", layernorm, (x, jnp.ones(256), jnp.zeros(256))),
                            ("loss", loss, (x, jnp.zeros(64, jnp.int32)))]:
        (here / f"jax_{name}.hlo").write_text(jax.jit(f).lower(*f_args).compile().as_text())


def main() -> None:
    here = Path(__file__).resolve().parent
    if sys.argv[1:] == ["--reductions"]:
        reductions(here)
        heroes(here)
        return
    args = (jnp.ones((4, 8), jnp.float32), jnp.ones((8, 4), jnp.float32),
            jnp.int32(1), jnp.array([0, 3, 1], jnp.int32))
    lowered = jax.jit(many_ops).lower(*args)
    (here / "jax_preopt.hlo").write_text(lowered.as_text(dialect="hlo"))
    (here / "jax_optimized.hlo").write_text(lowered.compile().as_text())
    # XLA_FLAGS is read when the CPU backend starts: another process.
    flags = os.environ.get("XLA_FLAGS", "") + " --xla_cpu_experimental_ynn_fusion_type="
    subprocess.run([sys.executable, __file__, "--reductions"], check=True,
                   env={**os.environ, "XLA_FLAGS": flags.strip()})


if __name__ == "__main__":
    main()

"""An unmodified JAX script (no trainprof in it): a jitted init called once,
a jitted train step called per batch, a jitted eval step called twice, a jitted
scale (static argument) called once.
Prints `train_steps N` at the end."""
import functools

import jax
import jax.numpy as jnp


@jax.jit
def init(key):
    return {"w": jax.random.normal(key, (8, 1)), "b": jnp.zeros((1,))}


@jax.jit
def train_step(params, x, y):
    def loss(p):
        return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)
    grads = jax.grad(loss)(params)
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss(params)


@jax.jit
def eval_step(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


@functools.partial(jax.jit, static_argnums=(1,))
def scale(x, factor):  # the decorator form with options
    return x * factor


def main():
    key = jax.random.PRNGKey(0)
    params = init(key)
    x = jax.random.normal(key, (32, 8))
    y = scale(x.sum(axis=1, keepdims=True), 1.0)
    steps = 0
    for _ in range(15):
        params, loss = train_step(params, x, y)
        steps += 1
    print(f"eval {float(eval_step(params, x, y)):.4f} {float(eval_step(params, x, y)):.4f}")
    print(f"train_steps {steps} loss {float(loss):.4f}", flush=True)


if __name__ == "__main__":
    main()

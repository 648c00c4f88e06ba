"""A small JAX MLP trained with optax on synthetic data, profiled by trainprof.

    python examples/python/train_jax.py --steps 200 --log_dir runs

Uses the foundational-SSM wrappers (profile_jax_loss_fn, profile_make_step:
timed until the outputs are ready) and Artifex's callbacks (JAXProfiler: a
trainprof run directory plus JAX's own trace of batches start..end;
MemoryProfiler: memory_profile.json in Artifex's row shape), driven by a
plain loop through their hooks.
"""
import argparse
import os

import jax
import jax.numpy as jnp
import optax

from trainprof.jax import (JAXProfiler, MemoryProfileConfig, MemoryProfiler, ProfilingConfig,
                           profile_jax_loss_fn, profile_make_step)


def init_mlp(key, sizes):
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        key, sub = jax.random.split(key)
        params.append({"w": jax.random.normal(sub, (fan_in, fan_out)) * jnp.sqrt(2.0 / fan_in),
                       "b": jnp.zeros(fan_out)})
    return params


def mlp(params, x):
    for layer in params[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
    return jnp.mean((mlp(params, x) - y) ** 2)


def synthetic_batches(key, steps, batch_size, dim):
    """y = sin(x . a) + noise: a smooth target the MLP can learn."""
    key, sub = jax.random.split(key)
    direction = jax.random.normal(sub, (dim,)) / jnp.sqrt(dim)
    for _ in range(steps):
        key, kx, kn = jax.random.split(key, 3)
        x = jax.random.normal(kx, (batch_size, dim))
        y = jnp.sin(3.0 * x @ direction)[:, None] + 0.05 * jax.random.normal(kn, (batch_size, 1))
        yield x, y


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch_size", type=int, default=128)
    parser.add_argument("--log_dir", default="runs")
    parser.add_argument("--start_step", type=int, default=10, help="first batch JAX traces")
    parser.add_argument("--end_step", type=int, default=14, help="last batch JAX traces")
    parser.add_argument("--memory_every", type=int, default=50)
    args = parser.parse_args(argv)

    dim = 16
    params = init_mlp(jax.random.PRNGKey(0), [dim, 64, 64, 1])
    optimizer = optax.adam(1e-2)
    opt_state = optimizer.init(params)

    @jax.jit
    def make_step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    jax_profiler = JAXProfiler(ProfilingConfig(log_dir=args.log_dir, start_step=args.start_step,
                                               end_step=args.end_step))
    jax_profiler.on_train_begin(None)
    prof = jax_profiler.profiler  # the trainprof session: the wrappers record into it
    memory = MemoryProfiler(MemoryProfileConfig(log_dir=os.path.join(args.log_dir, "memory"),
                                                profile_every_n_steps=args.memory_every),
                            profiler=prof)
    callbacks = [jax_profiler, memory]
    for cb in callbacks[1:]:
        cb.on_train_begin(None)
    step_fn = profile_make_step(make_step, profiler=prof)
    eval_loss = profile_jax_loss_fn(jax.jit(loss_fn), "eval_loss", profiler=prof)

    losses = []
    for step, batch in enumerate(synthetic_batches(jax.random.PRNGKey(1), args.steps,
                                                   args.batch_size, dim)):
        for cb in callbacks:
            cb.on_batch_begin(None, batch)
        params, opt_state, loss = step_fn(params, opt_state, *batch)
        losses.append(float(loss))
        logs = {"loss": losses[-1]}
        if step % 100 == 0:
            logs["eval_loss"] = float(eval_loss(params, *batch))
        for cb in callbacks:
            cb.on_batch_end(None, batch, logs)
        prof.counter("loss", losses[-1])
    for cb in reversed(callbacks):
        cb.on_train_end(None)

    head, tail = losses[:10], losses[-10:]
    print(f"loss {sum(head) / len(head):.4f} -> {sum(tail) / len(tail):.4f} "
          f"(mean of the first and last 10 steps)")
    if prof.run_dir:
        print(f"trainprof run directory: {prof.run_dir}")
        print(f"JAX trace (batches {args.start_step}..{args.end_step}): {jax_profiler.trace_dir}")
        print(f"memory rows: {memory.path}")
    return losses


if __name__ == "__main__":
    main()

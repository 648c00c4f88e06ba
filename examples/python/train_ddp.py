"""train_ddp.py - the CNN of train_cnn.py under DistributedDataParallel
(gloo), every rank profiled by trainprof.

    torchrun --nproc_per_node 4 examples/python/train_ddp.py [--max_steps 30]
        [--batch_size 32] [--slow_rank R --slow_ms M] [--plain_ddp] [--quiet] [trainprof flags]

Each rank trains on its own shard of every global batch; DDP averages the
gradients with all-reduce, recorded by trainprof.distributed as zones with
their byte counts, so the replicas stay identical and the evaluation loss
printed by every rank (on one fixed batch) is the same number. The ranks
write one job directory (rank<r>/ each) and align their clocks over the
process group's barrier (trainprof.distributed.sync). --slow_rank R --slow_ms M gives
rank R M ms of extra compute in every forward pass: a straggler for
`trainprof analyze JOB_DIR` to find. --plain_ddp leaves DDP's built-in
all-reduce alone (no hook), to check that the hook changes no result.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import trainprof
import trainprof.distributed as tpd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_cnn import SmallCNN, SyntheticImages  # noqa: E402  (the same model and data)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max_steps", type=int, default=30)
    parser.add_argument("--batch_size", type=int, default=32, help="samples per rank per step")
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log_every", type=int, default=10)
    parser.add_argument("--slow_rank", type=int, default=-1)
    parser.add_argument("--slow_ms", type=float, default=0.0)
    parser.add_argument("--plain_ddp", action="store_true", help="no trainprof comm hook")
    parser.add_argument("--quiet", action="store_true")
    trainprof.add_argparse_arguments(parser)
    args, rest = parser.parse_known_args(argv)
    try:
        prof, rest = trainprof.profiler_from_argparse(args, rest)
    except trainprof.ConfigError as e:
        parser.error(str(e))
    if rest:
        prof.close()
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args, prof


def busy(ms):
    """Extra compute for the straggler: small matrix products for ms milliseconds."""
    a = torch.randn(64, 64)
    end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < end:
        a = torch.tanh(a @ a)


def main(argv):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    args, prof = parse_args(argv)
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    torch.set_num_threads(1)
    data = SyntheticImages(args.max_steps * args.batch_size * world + 256, args.seed)
    model = DistributedDataParallel(SmallCNN())
    if not args.plain_ddp:
        tpd.profile_ddp(model, prof)
    tpd.sync(prof)  # clocks aligned to rank 0 (every rank, profiled or not)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    fwd, bwd, opt_zone = prof.zone("forward"), prof.zone("backward"), prof.zone("optimizer_step")
    eval_x, eval_y = data.images[-256:], data.labels[-256:]
    for step in range(args.max_steps):
        first = (step * world + rank) * args.batch_size  # this rank's shard of the global batch
        x, y = data.images[first:first + args.batch_size], data.labels[first:first + args.batch_size]
        with fwd:
            if rank == args.slow_rank:
                busy(args.slow_ms)
            loss = F.cross_entropy(model(x), y)
        with bwd:
            opt.zero_grad(set_to_none=True)
            loss.backward()  # DDP all-reduces the gradient buckets here
        with opt_zone:
            opt.step()
        prof.step(len(y))
        if step % args.log_every == 0 or step == args.max_steps - 1:
            with torch.no_grad():
                ev = F.cross_entropy(model.module(eval_x), eval_y).item()
            prof.counter("eval_loss", ev)
            if not args.quiet:
                print(f"rank {rank} step {step:4d} eval_loss {ev:.6f}", flush=True)
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    print(f"rank {rank} gradient_bytes {grad_bytes}", flush=True)
    prof.close()
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

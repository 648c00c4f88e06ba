"""An unmodified 2-rank gloo script (no trainprof in it) where rank 1
stalls before its all_reduce at step 3 (argv[1] seconds, default 12), so
rank 0 waits inside the collective: the hang trainprof's flight recorder
dumps on every rank and `trainprof ranks` names rank 1 for. The stall ends
and the job finishes normally. Ranks from RANK/WORLD_SIZE (torchrun) or
SLURM_PROCID/SLURM_NTASKS (srun)."""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn


def stall_before_all_reduce(seconds):
    time.sleep(seconds)


def main():
    rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
    world = int(os.environ.get("WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    stall = float(sys.argv[1]) if len(sys.argv) > 1 else 12.0
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    for step in range(8):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        if rank == 1 and step == 3:
            stall_before_all_reduce(stall)
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
    dist.barrier()
    print(f"rank {rank} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""An unmodified 2-rank DDP script (gloo, CPU; no trainprof in it), for
torchrun. Each rank prints `rank R optimizer_steps N`."""
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data))
    model = DistributedDataParallel(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    steps = 0
    for x, y in loader:
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        steps += 1
    dist.barrier()
    print(f"rank {rank} optimizer_steps {steps} local_rank {os.environ['LOCAL_RANK']}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

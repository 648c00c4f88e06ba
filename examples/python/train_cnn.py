"""train_cnn.py - a real PyTorch CNN training loop profiled with trainprof.

A small convolutional network learns to classify synthetic 16x16 images
made here: each of 10 classes is a random smooth pattern, each image one
pattern, randomly shifted, under noise. The loss falls from ~2.3 to well
under 1 in a few hundred steps. A DataLoader (--num_workers) feeds Adam.

Zones: data_batch_production (the wait for each batch), forward, backward,
optimizer_step, evaluate; counters: loss, lr. The run directory is the C
example's: timing_profile.json, memory_profile.json, training_summary.json,
operations.json, profiler_traces/.

    python examples/python/train_cnn.py [--max_steps 300] [--batch_size 64]
        [--num_workers 2] [--lr 0.003] [--seed 0] [--threads 1] [--quiet]
        [trainprof flags in any spelling: --enable_profiling True,
         --enable_timing_profiling True, --enable_memory_profiling True,
         --profile_steps 3, --profiling.wait 1, profiling.active=3,
         --profiling.torch_ops true, TRAINPROF_* variables ...]
"""
import argparse
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import trainprof
import trainprof.torch  # noqa: F401  (GPU memory rows, torch_ops windows)

SIDE, CLASSES = 16, 10


class SyntheticImages(Dataset):
    """n images of 1xSIDExSIDE, made once; label y shows pattern y, shifted
    by up to 2 pixels, under noise of 0.8 times the pattern's scale."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        coarse = torch.randn(CLASSES, 1, SIDE // 4, SIDE // 4, generator=g)
        patterns = F.interpolate(coarse, size=(SIDE, SIDE), mode="bilinear", align_corners=False)
        self.labels = torch.randint(0, CLASSES, (n,), generator=g)
        shifts = torch.randint(-2, 3, (n, 2), generator=g)
        self.images = torch.empty(n, 1, SIDE, SIDE)
        for i in range(n):
            dx, dy = (int(v) for v in shifts[i])
            self.images[i] = torch.roll(patterns[self.labels[i]], shifts=(dx, dy), dims=(1, 2))
        self.images += 0.8 * torch.randn(self.images.shape, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], int(self.labels[i])


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc1 = nn.Linear(32 * (SIDE // 4) ** 2, 64)
        self.fc2 = nn.Linear(64, CLASSES)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max_steps", type=int, default=300)
    parser.add_argument("--batch_size", "--batch", type=int, default=64)
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads (1: small kernels, a shared CPU)")
    parser.add_argument("--quiet", action="store_true", help="no per-step loss lines")
    trainprof.add_argparse_arguments(parser)  # --enable_profiling, --profile_steps, ...
    args, rest = parser.parse_known_args(argv)
    # --profiling.KEY V, profiling.KEY=V and the flags above, through the C parser
    try:
        prof, rest = trainprof.profiler_from_argparse(args, rest)
    except trainprof.ConfigError as e:  # names the flag, the key and the nearest key
        parser.error(str(e))
    if rest:
        prof.close()
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args, prof


def main(argv):
    args, prof = parse_args(argv)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    data = SyntheticImages(args.max_steps * args.batch_size // 4 + args.batch_size, args.seed)
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True, drop_last=True,
                        num_workers=args.num_workers, persistent_workers=args.num_workers > 0)
    model = SmallCNN()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.max_steps)
    fwd, bwd, opt_zone = prof.zone("forward"), prof.zone("backward"), prof.zone("optimizer_step")

    @prof.zone("evaluate")
    def evaluate(x, y):
        with torch.no_grad():
            return (model(x).argmax(1) == y).float().mean().item()

    start, step, first_loss, smoothed = time.perf_counter(), 0, None, None
    prof.step_begin()  # step 0 starts here, not at open (data and model set-up are no step)
    while step < args.max_steps:
        for x, y in trainprof.profile_data_loader(loader, profiler=prof):
            with fwd:
                loss = F.cross_entropy(model(x), y)
            with bwd:
                opt.zero_grad(set_to_none=True)
                loss.backward()
            with opt_zone:
                opt.step()
                sched.step()
            value = loss.item()
            first_loss = value if first_loss is None else first_loss
            smoothed = value if smoothed is None else 0.9 * smoothed + 0.1 * value
            prof.counter("loss", value)
            prof.counter("lr", sched.get_last_lr()[0])
            if not args.quiet and step % 50 == 0:
                print(f"step {step:5d}  loss {value:.4f}  (smoothed {smoothed:.4f})  "
                      f"lr {sched.get_last_lr()[0]:.5f}", flush=True)
            prof.step(len(y))
            step += 1
            if step == args.max_steps:
                break
    print(f"trained {step} steps in {time.perf_counter() - start:.2f} s: loss {first_loss:.4f} -> "
          f"{smoothed:.4f} (smoothed); accuracy on a batch {evaluate(x, y):.2f}", flush=True)
    prof.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

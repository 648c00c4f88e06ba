"""An unmodified PyTorch training script (no trainprof in it): an MLP on
random data through a DataLoader with 2 workers, gc.collect() after each
epoch, a checkpoint at the end.
Prints one line per epoch and `optimizer_steps N` at the end; argv:
[epochs] [exit status]."""
import gc
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(96, 16), torch.randint(0, 4, (96,)))
    loader = DataLoader(data, batch_size=8, num_workers=2)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = 0
    for epoch in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            steps += 1
        print(f"epoch {epoch} loss {loss.item():.3f}", flush=True)
        gc.collect()  # a full collection between epochs: a GC pause
    with torch.no_grad():
        model(torch.randn(4, 16))  # an evaluation call: forward, no step
    torch.save(model.state_dict(), "model.pt")
    print(f"optimizer_steps {steps}", flush=True)
    if len(sys.argv) > 2:
        sys.exit(int(sys.argv[2]))


if __name__ == "__main__":
    main()

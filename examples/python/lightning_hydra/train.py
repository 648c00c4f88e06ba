"""A Lightning project configured with Hydra, profiled by trainprof.

    python train.py                                            # no profiling
    python train.py profiling.enabled=true profiling.active_steps=5
    python train.py profiling.enabled=true profiling.output_dir=/scratch/prof

A small CNN learns to tell apart four synthetic image patterns (made here,
no download). With profiling.enabled=true, Trainer(profiler=TrainprofProfiler(...))
records every action Lightning times, prints Lightning's action table with
P50/P99, and writes trainprof's run directory under Hydra's output
directory (or profiling.output_dir).
"""
import os

import hydra
import lightning.pytorch as L
import torch
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from trainprof.lightning import TrainprofProfiler


def synthetic_images(num_samples, size, num_classes, seed):
    """Noisy images; class k has a bright horizontal band at rows k*size/num_classes."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, num_classes, (num_samples,), generator=gen)
    images = 0.5 * torch.randn(num_samples, 1, size, size, generator=gen)
    band = size // num_classes
    for k in range(num_classes):
        images[labels == k, :, k * band:(k + 1) * band, :] += 1.0
    return TensorDataset(images, labels)


class SmallCNN(L.LightningModule):
    def __init__(self, channels, num_classes, lr):
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * channels, num_classes))
        self.losses = []

    def training_step(self, batch, batch_idx):
        images, labels = batch
        loss = nn.functional.cross_entropy(self.net(images), labels)
        self.losses.append(loss.item())
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr)


def make_profiler(profiling):
    """TrainprofProfiler from the profiling: section (a DictConfig, read by
    trainprof's config layer as it is); None when profiling is off."""
    if not profiling.enabled:
        return None
    output_dir = profiling.output_dir or HydraConfig.get().runtime.output_dir
    return TrainprofProfiler(config=profiling, log_dir=output_dir)


@hydra.main(version_base=None, config_path="configs", config_name="config")
def main(cfg: DictConfig):
    L.seed_everything(cfg.seed, verbose=False)
    data = synthetic_images(cfg.data.num_samples, cfg.data.image_size, cfg.data.num_classes,
                            cfg.seed)
    loader = DataLoader(data, batch_size=cfg.data.batch_size, shuffle=True)
    model = SmallCNN(cfg.model.channels, cfg.data.num_classes, cfg.model.lr)
    profiler = make_profiler(cfg.profiling)
    trainer = L.Trainer(max_epochs=cfg.trainer.max_epochs, accelerator=cfg.trainer.accelerator,
                        devices=cfg.trainer.devices, profiler=profiler, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False,
                        default_root_dir=HydraConfig.get().runtime.output_dir)
    trainer.fit(model, loader)
    head, tail = model.losses[:10], model.losses[-10:]
    print(f"loss {sum(head) / len(head):.4f} -> {sum(tail) / len(tail):.4f} "
          f"(mean of the first and last 10 steps)")
    if profiler is not None:
        print(f"trainprof run directory: {os.path.relpath(profiler.run_dir)}")


if __name__ == "__main__":
    main()

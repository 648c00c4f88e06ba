"""An unmodified Lightning script (no trainprof in it): 2 epochs of 6
batches. Prints `batches N epochs E` at the end."""
import lightning.pytorch as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        self.batches = 0

    def training_step(self, batch, batch_idx):
        x, y = batch
        self.batches += 1
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(48, 8), torch.randn(48, 1))
    model = Model()
    trainer = pl.Trainer(max_epochs=2, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         accelerator="cpu", devices=1)
    trainer.fit(model, DataLoader(data, batch_size=8))
    print(f"batches {model.batches} epochs {trainer.current_epoch}", flush=True)


if __name__ == "__main__":
    main()

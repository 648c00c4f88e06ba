"""Helpers for tests/python/test_fw_*.py: a tiny Lightning model on synthetic
data, built over either Lightning namespace."""
import importlib


def tiny_module(namespace="lightning.pytorch", manual=False):
    """A LightningModule class (one Linear layer, SGD) over namespace."""
    import torch
    pl = importlib.import_module(namespace)

    class Tiny(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(8, 1)
            self.automatic_optimization = not manual

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.net(x), y)
            if manual:
                opt = self.optimizers()
                opt.zero_grad()
                self.manual_backward(loss)
                opt.step()
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    return Tiny


def tiny_loader(n=64, batch_size=8):
    import torch
    from torch.utils.data import DataLoader, TensorDataset
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(n, 8, generator=gen)
    y = x.sum(dim=1, keepdim=True)
    return DataLoader(TensorDataset(x, y), batch_size=batch_size)


def quiet_trainer(namespace, root, **kw):
    pl = importlib.import_module(namespace)
    opts = dict(default_root_dir=str(root), max_epochs=2, logger=False,
                enable_checkpointing=False, enable_progress_bar=False,
                enable_model_summary=False, accelerator="cpu", devices=1)
    opts.update(kw)
    return pl.Trainer(**opts)


def loss_first_last(stdout):
    """The (first, last) means of the examples' `loss A -> B (mean ...` line."""
    import re
    match = re.search(r"^loss (\S+) -> (\S+) \(mean", stdout, re.M)
    assert match, stdout
    return float(match.group(1)), float(match.group(2))

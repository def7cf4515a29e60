"""Fine-tune a ViT-style classifier with fp16 AMP, launched the old way.

    python -m torch.distributed.launch --nproc_per_node=4 --use_env=False \
        legacy_launcher_local_rank.py --data /data/cifar100 --epochs 30

The launcher passes --local_rank to every process; RANK and WORLD_SIZE come from env.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms

os.environ["NCCL_DEBUG"] = "INFO"  # expect: DDP306
os.environ.setdefault("NCCL_IB_DISABLE", "0")


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=0)  # expect: DDP206
    parser.add_argument("--data", default="/data/cifar100")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=96, help="per GPU")
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--lr", type=float, default=3e-4, help="for a global batch of 512")
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--init-from", default="")
    parser.add_argument("--out", default="checkpoints")
    return parser.parse_args()


class PatchEmbed(nn.Module):
    def __init__(self, patch=4, dim=384):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class TinyViT(nn.Module):
    def __init__(self, num_classes=100, dim=384, depth=6, heads=6):
        super().__init__()
        self.embed = PatchEmbed(dim=dim)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, 65, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, dim * 4, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, depth)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        x = self.embed(x)
        x = torch.cat([self.cls.expand(x.size(0), -1, -1), x], dim=1) + self.pos
        x = self.norm(self.blocks(x))
        return self.head(x[:, 0])


def main():
    args = get_args()
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    torch.cuda.set_device(args.local_rank)
    device = torch.device("cuda", args.local_rank)

    tfm = transforms.Compose([
        transforms.RandomCrop(32, padding=4),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
    ])
    train_set = datasets.CIFAR100(args.data, train=True, transform=tfm, download=False)
    sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank, shuffle=True)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers, pin_memory=True, persistent_workers=True,
                        drop_last=True)

    model = TinyViT().to(device)
    if args.init_from:
        state = torch.load(args.init_from)  # expect: DDP211
        model.load_state_dict(state["model"], strict=False)
    model = DistributedDataParallel(model, device_ids=[args.local_rank],
                                    output_device=args.local_rank)

    lr = args.lr * args.batch_size * world_size / 512
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.05)
    steps_per_epoch = len(loader)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=lr, total_steps=args.epochs * steps_per_epoch, pct_start=0.1)
    scaler = torch.cuda.amp.GradScaler()  # expect: DDP502

    history = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        t0 = time.time()
        loss_sum = torch.zeros((), device=device)
        for step, (images, labels) in enumerate(loader):
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)

            with torch.cuda.amp.autocast():  # expect: DDP502
                logits = model(images)
                loss = F.cross_entropy(logits, labels, label_smoothing=0.1)

            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            loss_sum += loss.detach()

            if step % args.log_every == 0:
                reduced = loss.detach().clone()
                dist.all_reduce(reduced)
                if rank == 0:
                    print(f"epoch {epoch} step {step}/{steps_per_epoch} "
                          f"loss {reduced.item() / world_size:.4f} "
                          f"lr {scheduler.get_last_lr()[0]:.2e}")

        dist.all_reduce(loss_sum)
        epoch_loss = loss_sum.item() / (world_size * steps_per_epoch)
        history.append({"epoch": epoch, "loss": epoch_loss, "time": time.time() - t0})

        if rank == 0:
            os.makedirs(args.out, exist_ok=True)
            torch.save({"model": model.module.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "scaler": scaler.state_dict(),
                        "epoch": epoch}, os.path.join(args.out, "last.pt"))
            with open(os.path.join(args.out, "history.json"), "w") as f:
                json.dump(history, f, indent=2)
            # make sure the file is on disk before anyone reads it back
            dist.barrier()  # expect: DDP308

    dist.destroy_process_group()


if __name__ == "__main__":
    main()

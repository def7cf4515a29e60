"""Train a small ResNet on an ImageFolder dataset with DistributedDataParallel.

Launch with torchrun, one process per GPU:

    torchrun --nproc_per_node=8 image_classifier_ddp.py --data /datasets/imagenette \
        --epochs 40 --batch-size 128 --out runs/resnet18

--batch-size is the per-GPU batch; the learning rate is scaled by the global batch.
"""
import argparse
import logging
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
from torchvision import datasets, transforms

log = logging.getLogger("classifier")


def parse_args():
    p = argparse.ArgumentParser(description="ResNet image classification with DDP")
    p.add_argument("--data", required=True, help="folder with train/ and val/ subfolders")
    p.add_argument("--out", default="runs/classifier")
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=128, help="per-GPU batch size")
    p.add_argument("--workers", type=int, default=8, help="loader workers per process")
    p.add_argument("--base-lr", type=float, default=0.1, help="LR for a global batch of 256")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=5e-5)
    p.add_argument("--warmup-epochs", type=int, default=3)
    p.add_argument("--image-size", type=int, default=160)
    p.add_argument("--log-interval", type=int, default=50)
    p.add_argument("--eval-every", type=int, default=2)
    p.add_argument("--resume", default="", help="checkpoint to resume from")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


# --------------------------------------------------------------------------- model
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_ch, out_ch, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.shortcut = nn.Identity()
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_ch),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x), inplace=True)


class ResNet(nn.Module):
    def __init__(self, layers=(2, 2, 2, 2), widths=(64, 128, 256, 512), num_classes=1000):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(widths[0]),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        stages, in_ch = [], widths[0]
        for i, (n_blocks, width) in enumerate(zip(layers, widths)):
            stride = 1 if i == 0 else 2
            blocks = [BasicBlock(in_ch, width, stride)]
            blocks += [BasicBlock(width, width) for _ in range(n_blocks - 1)]
            stages.append(nn.Sequential(*blocks))
            in_ch = width
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(in_ch, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.stages(self.stem(x))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.head(x)


# ---------------------------------------------------------------------------- data
def build_datasets(root, image_size):
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    train_tf = transforms.Compose([
        transforms.RandomResizedCrop(image_size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean, std),
    ])
    val_tf = transforms.Compose([
        transforms.Resize(int(image_size * 1.14)),
        transforms.CenterCrop(image_size),
        transforms.ToTensor(),
        transforms.Normalize(mean, std),
    ])
    train_set = datasets.ImageFolder(os.path.join(root, "train"), train_tf)
    val_set = datasets.ImageFolder(os.path.join(root, "val"), val_tf)
    return train_set, val_set


def lr_at(epoch_float, args, peak_lr):
    if epoch_float < args.warmup_epochs:
        return peak_lr * epoch_float / args.warmup_epochs
    progress = (epoch_float - args.warmup_epochs) / max(1, args.epochs - args.warmup_epochs)
    return 0.5 * peak_lr * (1.0 + math.cos(math.pi * progress))


# ------------------------------------------------------------------- train / eval
def train_one_epoch(model, loader, optimizer, criterion, epoch, args, peak_lr, rank, device):
    model.train()
    running_loss, seen = 0.0, 0
    steps_per_epoch = len(loader)
    t0 = time.time()
    for step, (images, targets) in enumerate(loader):
        lr = lr_at(epoch + step / steps_per_epoch, args, peak_lr)
        for group in optimizer.param_groups:
            group["lr"] = lr

        images = images.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(images)
            loss = criterion(logits, targets)

        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        optimizer.step()

        running_loss += loss.item() * images.size(0)  # expect: DDP401
        seen += images.size(0)

        if rank == 0 and step % args.log_interval == 0:
            elapsed = time.time() - t0
            log.info(
                "epoch %d step %d/%d  loss %.4f  grad_norm %.3f  lr %.4f  %.0f img/s",
                epoch, step, steps_per_epoch, running_loss / seen,
                grad_norm.item(), lr, seen * dist.get_world_size() / elapsed,
            )
    return running_loss / max(seen, 1)


@torch.no_grad()
def evaluate(model, loader, criterion, device):
    model.eval()
    # loss sum, top-1 correct, top-5 correct, count: kept on the GPU until the end
    stats = torch.zeros(4, device=device)
    for images, targets in loader:
        images = images.to(device, non_blocking=True)
        targets = targets.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(images)
        stats[0] += F.cross_entropy(logits.float(), targets, reduction="sum")
        top5 = logits.topk(5, dim=1).indices
        stats[1] += (top5[:, 0] == targets).sum()
        stats[2] += (top5 == targets[:, None]).any(dim=1).sum()
        stats[3] += targets.numel()
    dist.all_reduce(stats)
    loss_sum, top1, top5_hits, count = stats.tolist()
    return loss_sum / count, top1 / count, top5_hits / count


def save_checkpoint(path, model, optimizer, epoch, best_acc, args):
    tmp = path + ".tmp"
    torch.save({
        "model": model.module.state_dict(),
        "optimizer": optimizer.state_dict(),
        "epoch": epoch,
        "best_acc": best_acc,
        "args": vars(args),
    }, tmp)
    os.replace(tmp, path)


# ------------------------------------------------------------------------------ main
def main():
    args = parse_args()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", local_rank)

    logging.basicConfig(
        level=logging.INFO if rank == 0 else logging.WARNING,
        format="%(asctime)s %(levelname)s %(message)s",
    )
    torch.manual_seed(args.seed + rank)
    torch.backends.cudnn.benchmark = True

    train_set, val_set = build_datasets(args.data, args.image_size)
    train_sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed)
    val_sampler = DistributedSampler(val_set, shuffle=False)  # expect: DDP108
    train_loader = DataLoader(
        train_set,
        batch_size=args.batch_size,
        sampler=train_sampler,
        num_workers=args.workers,
        pin_memory=True,
        drop_last=True,
        persistent_workers=True,
    )
    val_loader = DataLoader(  # expect: DDP103
        val_set,
        batch_size=args.batch_size * 2,
        sampler=val_sampler,
        num_workers=args.workers,
    )

    model = ResNet(num_classes=len(train_set.classes))
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model).to(device)
    model = DDP(model, device_ids=[local_rank], output_device=local_rank)

    peak_lr = args.base_lr * args.batch_size * world_size / 256
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        (no_decay if param.ndim <= 1 else decay).append(param)
    optimizer = torch.optim.SGD(
        [{"params": decay, "weight_decay": args.weight_decay},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=peak_lr, momentum=args.momentum, nesterov=True,
    )
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

    start_epoch, best_acc = 0, 0.0
    if args.resume:
        ckpt = torch.load(args.resume, map_location=device)
        model.module.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        start_epoch, best_acc = ckpt["epoch"] + 1, ckpt["best_acc"]
        log.info("resumed from %s at epoch %d", args.resume, start_epoch)

    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        n_params = sum(p.numel() for p in model.parameters())
        log.info("%d ranks, %.1fM parameters, %d train images", world_size, n_params / 1e6, len(train_set))

    for epoch in range(start_epoch, args.epochs):
        train_sampler.set_epoch(epoch)
        t_epoch = time.time()
        train_loss = train_one_epoch(
            model, train_loader, optimizer, criterion, epoch, args, peak_lr, rank, device
        )

        if (epoch + 1) % args.eval_every == 0 or epoch == args.epochs - 1:
            val_loss, top1, top5 = evaluate(model, val_loader, criterion, device)
            if rank == 0:
                log.info(
                    "epoch %d done in %.0fs  train_loss %.4f  val_loss %.4f  top1 %.2f%%  top5 %.2f%%",
                    epoch, time.time() - t_epoch, train_loss, val_loss, 100 * top1, 100 * top5,
                )
                if top1 > best_acc:
                    best_acc = top1
                    save_checkpoint(os.path.join(args.out, "best.pt"), model, optimizer, epoch, best_acc, args)

        if rank == 0:
            save_checkpoint(os.path.join(args.out, "last.pt"), model, optimizer, epoch, best_acc, args)

    if rank == 0:
        log.info("finished: best top-1 %.2f%%", 100 * best_acc)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/env python
# CIFAR-10 baseline, multi-GPU version of the single-GPU notebook.
#
#   torchrun --nproc_per_node=4 mixed_practice.py --batch-size 512 --epochs 30
#
# --batch-size is the TOTAL batch across all GPUs (kept equal to the notebook
# run so the numbers are comparable); each rank gets its share of it.
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torchvision
import torchvision.transforms as T
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler

CIFAR_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR_STD = (0.2470, 0.2435, 0.2616)


def get_parser():
    parser = argparse.ArgumentParser("cifar10-ddp")
    parser.add_argument("--data-dir", type=str, default="./data")
    parser.add_argument("--ckpt-dir", type=str, default="./checkpoints")
    parser.add_argument("--batch-size", type=int, default=512, help="total batch over all GPUs")
    parser.add_argument("--eval-batch-size", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--wd", type=float, default=5e-4)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--label-smoothing", type=float, default=0.0)
    parser.add_argument("--save-every", type=int, default=5)
    return parser


class ConvBNReLU(nn.Sequential):
    def __init__(self, c_in, c_out, pool=False):
        layers = [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True)]
        if pool:
            layers.append(nn.MaxPool2d(2))
        super().__init__(*layers)


class Residual(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.body = nn.Sequential(ConvBNReLU(channels, channels), ConvBNReLU(channels, channels))

    def forward(self, x):
        return x + self.body(x)


class CifarNet(nn.Module):
    """A ResNet-9 style network: about 6.5M parameters, ~94% after 30 epochs."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            ConvBNReLU(3, 64),
            ConvBNReLU(64, 128, pool=True),
            Residual(128),
            ConvBNReLU(128, 256, pool=True),
            ConvBNReLU(256, 512, pool=True),
            Residual(512),
            nn.AdaptiveMaxPool2d(1),
            nn.Flatten(),
        )
        self.classifier = nn.Linear(512, num_classes)

    def forward(self, x):
        return self.classifier(self.features(x))


def make_datasets(data_dir, download):
    train_tf = T.Compose([
        T.RandomCrop(32, padding=4, padding_mode="reflect"),
        T.RandomHorizontalFlip(),
        T.ToTensor(),
        T.Normalize(CIFAR_MEAN, CIFAR_STD),
    ])
    test_tf = T.Compose([T.ToTensor(), T.Normalize(CIFAR_MEAN, CIFAR_STD)])
    train = torchvision.datasets.CIFAR10(data_dir, train=True, transform=train_tf, download=download)
    test = torchvision.datasets.CIFAR10(data_dir, train=False, transform=test_tf, download=download)
    return train, test


def train_step(model, images, labels, optimizer, criterion, world_size):
    images = images.cuda(non_blocking=True)  # expect: DDP203
    labels = labels.cuda(non_blocking=True)

    optimizer.zero_grad()
    logits = model(images)
    loss = criterion(logits, labels)
    loss.backward()

    # make sure every worker applies the same update
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)  # expect: DDP301
            p.grad /= world_size

    optimizer.step()
    n_correct = (logits.argmax(dim=1) == labels).sum()
    return loss.item(), n_correct  # expect: DDP401


@torch.no_grad()
def evaluate(net, loader, criterion):
    net.eval()
    total_loss, total_correct, total = 0.0, 0, 0
    for images, labels in loader:
        images = images.cuda(non_blocking=True)
        labels = labels.cuda(non_blocking=True)
        logits = net(images)
        total_loss += criterion(logits, labels).item() * labels.size(0)
        total_correct += (logits.argmax(dim=1) == labels).sum().item()
        total += labels.size(0)
    net.train()
    return total_loss / total, total_correct / total


def main():
    args = get_parser().parse_args()

    dist.init_process_group("nccl")
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    is_main = rank == 0

    # only rank 0 downloads; the others wait for it
    if is_main:
        make_datasets(args.data_dir, download=True)
    dist.barrier()
    train_set, test_set = make_datasets(args.data_dir, download=False)

    train_sampler = DistributedSampler(train_set, num_replicas=world_size, rank=rank, shuffle=True)
    train_loader = DataLoader(
        train_set,
        batch_size=args.batch_size // world_size,  # expect: DDP601
        sampler=train_sampler,
        num_workers=args.workers,  # expect: DDP101@info
        pin_memory=True,
        drop_last=True,
    )
    # evaluation runs on rank 0 only, over the whole test set
    test_loader = DataLoader(  # expect: DDP103
        test_set,
        batch_size=args.eval_batch_size,
        shuffle=False,
        num_workers=4,
        pin_memory=torch.cuda.is_available(),
    )

    model = CifarNet(num_classes=10).cuda()
    model = DDP(model)

    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=args.wd, nesterov=True)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=len(train_loader)
    )
    criterion = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)

    if is_main:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        print(f"world size {world_size}, per-GPU batch {args.batch_size // world_size}, "
              f"{len(train_loader)} steps per epoch")

    history = []
    for epoch in range(args.epochs):
        train_sampler.set_epoch(epoch)
        model.train()
        t0 = time.time()
        running_loss, seen = 0.0, 0
        correct = torch.zeros((), device="cuda")

        for step, (images, labels) in enumerate(train_loader):  # expect: DDP501
            loss_value, n_correct = train_step(model, images, labels, optimizer, criterion, world_size)
            scheduler.step()
            running_loss += loss_value * labels.size(0)
            correct += n_correct
            seen += labels.size(0)

            if step % 50 == 0:
                acc_so_far = correct.item() / seen
                if is_main:
                    print(f"[epoch {epoch} step {step:4d}] loss {running_loss / seen:.4f} "
                          f"acc {acc_so_far:.3f} lr {scheduler.get_last_lr()[0]:.4f}")

        train_acc = correct.item() / seen
        epoch_time = time.time() - t0

        if is_main:
            test_loss, test_acc = evaluate(model.module, test_loader, criterion)
            record = {
                "epoch": epoch,
                "train_loss": running_loss / seen,
                "train_acc": train_acc,
                "test_loss": test_loss,
                "test_acc": test_acc,
                "time": epoch_time,
            }
            history.append(record)
            print(json.dumps(record))

            if (epoch + 1) % args.save_every == 0 or epoch + 1 == args.epochs:
                torch.save(
                    {"epoch": epoch, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()},
                    os.path.join(args.ckpt_dir, f"cifarnet_epoch{epoch + 1}.pt"),
                )

    if is_main:
        with open(os.path.join(args.ckpt_dir, "history.json"), "w") as f:
            json.dump(history, f, indent=2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Train an EfficientNet-style classifier on all local GPUs with nn.DataParallel.

Single process; no launcher needed:

    CUDA_VISIBLE_DEVICES=0,1,2,3 python data_parallel_classifier.py --data /data/flowers
"""
import argparse
import os
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision import datasets, models, transforms


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/data/flowers")
    p.add_argument("--epochs", type=int, default=25)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--eval-batch-size", type=int, default=64, help="per GPU")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--log-interval", type=int, default=25)
    p.add_argument("--checkpoint", default="dp_classifier.pt")
    return p.parse_args()


def build_loaders(args, num_gpus):
    train_tf = transforms.Compose([
        transforms.RandomResizedCrop(224, scale=(0.25, 1.0)),
        transforms.RandomHorizontalFlip(),
        transforms.ColorJitter(0.3, 0.3, 0.3),
        transforms.ToTensor(),
        transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    ])
    eval_tf = transforms.Compose([
        transforms.Resize(256),
        transforms.CenterCrop(224),
        transforms.ToTensor(),
        transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    ])
    train_set = datasets.ImageFolder(os.path.join(args.data, "train"), train_tf)
    val_set = datasets.ImageFolder(os.path.join(args.data, "val"), eval_tf)

    # DataParallel scatters each batch over the GPUs
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,  # expect: DDP601
                              num_workers=args.workers, pin_memory=True,
                              persistent_workers=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=args.eval_batch_size * num_gpus, shuffle=False,
                            num_workers=4, persistent_workers=True)
    return train_loader, val_loader, len(train_set.classes)


def train_one_epoch(model, loader, criterion, optimizer, scaler, epoch, args):
    model.train()
    seen, correct = 0, torch.zeros((), device="cuda")
    start = time.time()
    for it, (images, targets) in enumerate(loader):
        images = images.cuda(non_blocking=True)
        targets = targets.cuda()  # expect: DDP107

        with torch.autocast("cuda", dtype=torch.float16):
            outputs = model(images)
            loss = criterion(outputs, targets)

        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

        correct += (outputs.argmax(1) == targets).sum()
        seen += images.size(0)
        if it % args.log_interval == 0:
            print(f"epoch {epoch} iter {it}/{len(loader)} loss {loss.item():.4f} "
                  f"acc {100.0 * correct.item() / seen:.2f}% "
                  f"{seen / (time.time() - start):.0f} img/s")
            torch.cuda.empty_cache()
        if torch.isnan(loss):  # expect: DDP405
            print("loss is NaN, skipping the rest of the epoch")
            break
    return correct.item() / max(seen, 1)


@torch.no_grad()
def evaluate(model, loader, criterion):
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    for images, targets in loader:
        images, targets = images.cuda(), targets.cuda()
        with torch.autocast("cuda", dtype=torch.float16):
            outputs = model(images)
            total_loss += criterion(outputs, targets).item() * images.size(0)
        correct += (outputs.argmax(1) == targets).sum().item()
        count += images.size(0)
    return total_loss / count, correct / count


def main():
    args = parse_args()
    torch.backends.cudnn.benchmark = True
    num_gpus = torch.cuda.device_count()
    train_loader, val_loader, num_classes = build_loaders(args, num_gpus)

    model = models.efficientnet_b0(num_classes=num_classes)
    model = nn.DataParallel(model).cuda()  # expect: DDP204
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9,
                                weight_decay=4e-5, nesterov=True)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    scaler = torch.amp.GradScaler("cuda")

    best = 0.0
    for epoch in range(args.epochs):
        train_acc = train_one_epoch(model, train_loader, criterion, optimizer, scaler, epoch, args)
        val_loss, val_acc = evaluate(model, val_loader, criterion)
        scheduler.step()
        print(f"epoch {epoch}: train acc {train_acc:.3f} val loss {val_loss:.4f} val acc {val_acc:.3f}")
        if val_acc > best:
            best = val_acc
            # unwrap DataParallel so the weights load without the "module." prefix
            torch.save({"model": model.module.state_dict(), "epoch": epoch,
                        "val_acc": val_acc}, args.checkpoint)
    print(f"best val acc {best:.3f}")


if __name__ == "__main__":
    main()

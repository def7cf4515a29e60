"""ImageNet-style training, one process per GPU started with torch.multiprocessing.spawn.

    python imagenet_mp_spawn.py /datasets/imagenet --arch resnet50 --epochs 90 \
        --dist-url tcp://10.0.0.1:23456 --world-size 2 --rank 0

--world-size counts nodes and --rank is this node's index; both are turned into
per-process values in main_worker. --batch-size is the total over all GPUs of a node.
"""
import argparse
import os
import shutil
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.utils.data
import torch.utils.data.distributed
import torchvision.datasets as datasets
import torchvision.models as models
import torchvision.transforms as transforms

parser = argparse.ArgumentParser(description="ImageNet training with mp.spawn")
parser.add_argument("data", metavar="DIR", help="path to dataset")
parser.add_argument("--arch", default="resnet50")
parser.add_argument("--workers", type=int, default=8, help="data loading workers per process")
parser.add_argument("--epochs", type=int, default=90)
parser.add_argument("--start-epoch", type=int, default=0)
parser.add_argument("--batch-size", type=int, default=256, help="total batch size of a node")
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--momentum", type=float, default=0.9)
parser.add_argument("--wd", type=float, default=1e-4)
parser.add_argument("--print-freq", type=int, default=100)
parser.add_argument("--resume", default="", help="path to latest checkpoint")
parser.add_argument("--world-size", type=int, default=1, help="number of nodes")
parser.add_argument("--rank", type=int, default=0, help="node rank")
parser.add_argument("--dist-url", default="tcp://127.0.0.1:23456")
parser.add_argument("--dist-backend", default="nccl")
parser.add_argument("--sync-bn", action="store_true")


def main():
    args = parser.parse_args()
    ngpus_per_node = torch.cuda.device_count()
    args.world_size = ngpus_per_node * args.world_size
    mp.spawn(main_worker, nprocs=ngpus_per_node, args=(ngpus_per_node, args))


def main_worker(gpu, ngpus_per_node, args):
    args.gpu = gpu
    args.rank = args.rank * ngpus_per_node + gpu
    dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url,
                            world_size=args.world_size, rank=args.rank)
    torch.cuda.set_device(args.gpu)

    model = models.__dict__[args.arch]()
    if args.sync_bn:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model.cuda(args.gpu)
    # the node's batch is split across its GPUs, as in the reference recipe
    args.batch_size = int(args.batch_size / ngpus_per_node)
    args.workers = int((args.workers + ngpus_per_node - 1) / ngpus_per_node)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])

    criterion = nn.CrossEntropyLoss().cuda(args.gpu)
    optimizer = torch.optim.SGD(model.parameters(), args.lr,
                                momentum=args.momentum, weight_decay=args.wd)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)

    best_acc1 = 0.0
    if args.resume and os.path.isfile(args.resume):
        loc = "cuda:{}".format(args.gpu)
        checkpoint = torch.load(args.resume, map_location=loc)
        args.start_epoch = checkpoint["epoch"]
        best_acc1 = checkpoint["best_acc1"]
        model.module.load_state_dict(checkpoint["state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])

    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dataset = datasets.ImageFolder(
        os.path.join(args.data, "train"),
        transforms.Compose([
            transforms.RandomResizedCrop(224),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            normalize,
        ]))
    val_dataset = datasets.ImageFolder(
        os.path.join(args.data, "val"),
        transforms.Compose([
            transforms.Resize(256),
            transforms.CenterCrop(224),
            transforms.ToTensor(),
            normalize,
        ]))

    train_sampler = torch.utils.data.distributed.DistributedSampler(train_dataset)
    val_sampler = torch.utils.data.distributed.DistributedSampler(val_dataset, shuffle=False)  # expect: DDP108

    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=False, sampler=train_sampler,  # expect: DDP601
        num_workers=args.workers, pin_memory=True, persistent_workers=True, drop_last=True)
    val_loader = torch.utils.data.DataLoader(
        val_dataset, batch_size=args.batch_size, shuffle=False, sampler=val_sampler,
        num_workers=args.workers, pin_memory=True, persistent_workers=True)

    for epoch in range(args.start_epoch, args.epochs):
        train_sampler.set_epoch(epoch)
        train(train_loader, model, criterion, optimizer, epoch, args)
        acc1 = validate(val_loader, model, criterion, args)
        scheduler.step()

        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)
        state = {
            "epoch": epoch + 1,
            "arch": args.arch,
            "state_dict": model.module.state_dict(),
            "best_acc1": best_acc1,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
        }
        # every process of every node writes here; the shared filesystem sees 8N writers
        save_checkpoint(state, is_best)

    dist.destroy_process_group()


def train(train_loader, model, criterion, optimizer, epoch, args):
    model.train()
    end = time.time()
    running = torch.zeros(2, device=args.gpu)
    for i, (images, target) in enumerate(train_loader):
        images = images.cuda(args.gpu, non_blocking=True)
        target = target.cuda(args.gpu, non_blocking=True)

        with torch.autocast("cuda", dtype=torch.bfloat16):
            output = model(images)
            loss = criterion(output, target)

        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

        running[0] += loss.detach() * images.size(0)
        running[1] += images.size(0)
        batch_loss = loss.item()  # expect: DDP401
        if i % args.print_freq == 0 and args.rank == 0:
            elapsed = time.time() - end
            print(f"epoch {epoch} [{i}/{len(train_loader)}] loss {batch_loss:.4f} "
                  f"avg {(running[0] / running[1]).item():.4f} {elapsed:.1f}s")
            end = time.time()


def validate(val_loader, model, criterion, args):
    model.eval()
    totals = torch.zeros(3, device=args.gpu)
    with torch.no_grad():
        for images, target in val_loader:
            images = images.cuda(args.gpu, non_blocking=True)
            target = target.cuda(args.gpu, non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                output = model(images)
                loss = criterion(output, target)
            correct = (output.argmax(dim=1) == target).sum()
            totals += torch.stack([loss.float() * images.size(0), correct.float(),
                                   torch.tensor(float(images.size(0)), device=args.gpu)])
    dist.all_reduce(totals, op=dist.ReduceOp.SUM)
    val_loss, correct, count = totals.tolist()
    acc1 = 100.0 * correct / count
    if args.rank == 0:
        print(f" * Acc@1 {acc1:.3f} loss {val_loss / count:.4f}")
    return acc1


def save_checkpoint(state, is_best, filename="checkpoint.pth.tar"):
    torch.save(state, filename)  # expect: DDP210
    if is_best:
        shutil.copyfile(filename, "model_best.pth.tar")


if __name__ == "__main__":
    main()

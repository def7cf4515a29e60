"""Causal language model pre-training with DDP, bf16 autocast and gradient accumulation.

    torchrun --nnodes=2 --nproc_per_node=8 torchrun_lm_bf16_accum.py \
        --data /data/tokens --global-batch 512 --micro-batch 16

The global batch (in sequences) is fixed; the number of accumulation steps is
derived from it, so the learning rate does not depend on the number of GPUs.
"""
import argparse
import math
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class TokenChunks(Dataset):
    """Fixed-length windows over a flat uint16 token file."""

    def __init__(self, path, seq_len):
        self.tokens = np.memmap(path, dtype=np.uint16, mode="r")
        self.seq_len = seq_len

    def __len__(self):
        return (len(self.tokens) - 1) // self.seq_len

    def __getitem__(self, i):
        start = i * self.seq_len
        chunk = torch.from_numpy(self.tokens[start:start + self.seq_len + 1].astype(np.int64))
        return chunk[:-1], chunk[1:]


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=50304, dim=768, depth=12, heads=12, seq_len=1024):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx):
        t = idx.size(1)
        mask = torch.triu(torch.ones(t, t, device=idx.device, dtype=torch.bool), diagonal=1)
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(self.ln_f(x))


def get_lr(it, args):
    if it < args.warmup:
        return args.lr * (it + 1) / args.warmup
    progress = min(1.0, (it - args.warmup) / max(1, args.max_iters - args.warmup))
    return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * progress))


@torch.no_grad()
def evaluate(raw_model, loader, device, max_batches=50):
    raw_model.eval()
    losses = []
    for i, (x, y) in enumerate(loader):
        if i >= max_batches:
            break
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = raw_model(x)
        losses.append(F.cross_entropy(logits.flatten(0, 1), y.flatten()).item())
    raw_model.train()
    return sum(losses) / len(losses)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/data/tokens")
    p.add_argument("--seq-len", type=int, default=1024)
    p.add_argument("--global-batch", type=int, default=512)
    p.add_argument("--micro-batch", type=int, default=16)
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--min-lr", type=float, default=6e-5)
    p.add_argument("--warmup", type=int, default=2000)
    p.add_argument("--max-iters", type=int, default=60000)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--log-interval", type=int, default=10)
    p.add_argument("--eval-interval", type=int, default=1000)
    p.add_argument("--ckpt", default="out/lm.pt")
    args = p.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(local_rank)
    device = torch.device(f"cuda:{local_rank}")
    torch.manual_seed(1337 + rank)

    grad_accum = args.global_batch // (args.micro_batch * world_size)
    assert grad_accum >= 1, "global batch too small for this many GPUs"

    train_set = TokenChunks(os.path.join(args.data, "train.bin"), args.seq_len)
    val_set = TokenChunks(os.path.join(args.data, "val.bin"), args.seq_len)
    sampler = DistributedSampler(train_set, shuffle=True, drop_last=True)
    train_loader = DataLoader(train_set, batch_size=args.micro_batch, sampler=sampler,
                              num_workers=4, pin_memory=True, persistent_workers=True)
    val_loader = DataLoader(val_set, batch_size=args.micro_batch, shuffle=False,
                            num_workers=2, pin_memory=True, persistent_workers=True)

    model = GPT(seq_len=args.seq_len).to(device)
    start_iter = 0
    if os.path.exists(args.ckpt):
        ckpt = torch.load(args.ckpt, map_location="cpu")
        model.load_state_dict(ckpt["model"])
        start_iter = ckpt["iter"]
    # weight tying confused an earlier version into "unused parameter" errors
    model = DDP(model, device_ids=[local_rank], find_unused_parameters=True)  # expect: DDP209
    raw_model = model.module

    optimizer = torch.optim.AdamW(raw_model.parameters(), lr=args.lr, betas=(0.9, 0.95),
                                  weight_decay=0.1, fused=True)
    scaler = torch.amp.GradScaler("cuda")  # expect: DDP504

    it = start_iter
    t0 = time.time()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        batches = iter(train_loader)
        for _ in range(len(train_loader) // grad_accum):
            for g in optimizer.param_groups:
                g["lr"] = get_lr(it, args)
            loss_acc = torch.zeros((), device=device)
            for micro in range(grad_accum):
                x, y = next(batches)
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                # only the last micro-step all-reduces; the others keep gradients local
                model.require_backward_grad_sync = micro == grad_accum - 1
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    logits = model(x)
                    loss = F.cross_entropy(logits.flatten(0, 1), y.flatten()) / grad_accum
                scaler.scale(loss).backward()
                loss_acc += loss.detach()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            dist.all_reduce(loss_acc, op=dist.ReduceOp.AVG)  # expect: DDP302
            it += 1

            if it % args.log_interval == 0 and rank == 0:
                torch.cuda.synchronize()
                dt = (time.time() - t0) / args.log_interval
                print(f"iter {it} loss {loss_acc.item():.4f} lr {get_lr(it, args):.2e} {dt * 1000:.0f}ms/it")
                t0 = time.time()
            if it % args.eval_interval == 0:
                if rank == 0:
                    val_loss = evaluate(raw_model, val_loader, device)
                    print(f"iter {it} val loss {val_loss:.4f}")
                    os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
                    torch.save({"model": raw_model.state_dict(), "iter": it}, args.ckpt)
                dist.barrier()
            if it >= args.max_iters:
                break

    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Pre-train a small decoder-only transformer on pre-tokenised text.

The data folder holds train.bin and val.bin: flat uint16 arrays of token ids.
Run on one node with torchrun:

    torchrun --standalone --nproc_per_node=8 gpt_grad_accum.py --data data/owt --out runs/gpt

--tokens-per-step is the global batch in tokens; each rank runs micro-batches of
--micro-batch sequences and accumulates gradients until the global batch is reached.
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


def get_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data/owt")
    ap.add_argument("--out", default="runs/gpt")
    ap.add_argument("--n-layer", type=int, default=12)
    ap.add_argument("--n-head", type=int, default=12)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--vocab-size", type=int, default=50304)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--micro-batch", type=int, default=12, help="sequences per rank per micro-step")
    ap.add_argument("--tokens-per-step", type=int, default=491520)
    ap.add_argument("--max-iters", type=int, default=60000)
    ap.add_argument("--peak-lr", type=float, default=6e-4)
    ap.add_argument("--min-lr", type=float, default=6e-5)
    ap.add_argument("--warmup-iters", type=int, default=2000)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--eval-interval", type=int, default=1000)
    ap.add_argument("--eval-batches", type=int, default=100)
    ap.add_argument("--log-interval", type=int, default=10)
    ap.add_argument("--num-workers", type=int, default=4)
    ap.add_argument("--compile", action="store_true")
    return ap.parse_args()


class TokenWindows(Dataset):
    """Non-overlapping windows of context+1 tokens over a memory-mapped token file."""

    def __init__(self, path, context):
        self.path, self.context = path, context
        self.n = (len(np.memmap(path, dtype=np.uint16, mode="r")) - 1) // context

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        tokens = np.memmap(self.path, dtype=np.uint16, mode="r")
        start = i * self.context
        chunk = torch.from_numpy(tokens[start:start + self.context + 1].astype(np.int64))
        return chunk[:-1], chunk[1:]


class SelfAttention(nn.Module):
    def __init__(self, d_model, n_head, dropout):
        super().__init__()
        self.n_head, self.dropout = n_head, dropout
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, d_model, n_head, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_head, dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model, bias=False),
            nn.GELU(approximate="tanh"),
            nn.Linear(4 * d_model, d_model, bias=False),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.tok_emb = nn.Embedding(args.vocab_size, args.d_model)
        self.pos_emb = nn.Embedding(args.context, args.d_model)
        self.blocks = nn.ModuleList(
            Block(args.d_model, args.n_head, args.dropout) for _ in range(args.n_layer)
        )
        self.ln_f = nn.LayerNorm(args.d_model)
        self.lm_head = nn.Linear(args.d_model, args.vocab_size, bias=False)
        self.lm_head.weight = self.tok_emb.weight  # weight tying
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1), device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def cosine_lr(it, args):
    if it < args.warmup_iters:
        return args.peak_lr * (it + 1) / args.warmup_iters
    if it >= args.max_iters:
        return args.min_lr
    ratio = (it - args.warmup_iters) / (args.max_iters - args.warmup_iters)
    return args.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (args.peak_lr - args.min_lr)


def endless(loader, sampler):
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        for x, y in loader:
            yield x, y
        epoch += 1


@torch.no_grad()
def estimate_loss(model, batches, n_batches, device, amp):
    model.eval()
    total = torch.zeros((), device=device)
    for _ in range(n_batches):
        x, y = next(batches)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with amp:
            _, loss = model(x, y)
        total += loss
    dist.all_reduce(total, op=dist.ReduceOp.AVG)
    model.train()
    return total.item() / n_batches


def main():
    args = get_args()
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()
    local_rank = int(os.environ["LOCAL_RANK"])
    world_size = dist.get_world_size()
    master_process = rank == 0
    device = torch.device(f"cuda:{local_rank}")
    torch.cuda.set_device(device)
    torch.manual_seed(1337 + rank)
    torch.backends.cuda.matmul.allow_tf32 = True

    tokens_per_micro = args.micro_batch * args.context * world_size
    assert args.tokens_per_step % tokens_per_micro == 0, "tokens-per-step must divide evenly"
    grad_accum_steps = args.tokens_per_step // tokens_per_micro
    if master_process:
        os.makedirs(args.out, exist_ok=True)
        print(f"{world_size} ranks, {grad_accum_steps} micro-steps of {tokens_per_micro} tokens")

    train_set = TokenWindows(os.path.join(args.data, "train.bin"), args.context)
    val_set = TokenWindows(os.path.join(args.data, "val.bin"), args.context)
    train_sampler = DistributedSampler(train_set, shuffle=True)
    val_sampler = DistributedSampler(val_set, shuffle=True)  # expect: DDP108
    train_loader = DataLoader(train_set, batch_size=args.micro_batch, sampler=train_sampler,
                              num_workers=args.num_workers, pin_memory=True, drop_last=True)
    val_loader = DataLoader(val_set, batch_size=args.micro_batch, sampler=val_sampler,
                            num_workers=args.num_workers, pin_memory=True, drop_last=True)
    train_batches = endless(train_loader, train_sampler)
    val_batches = endless(val_loader, val_sampler)

    model = TinyGPT(args).to(device)
    if args.compile:
        model = torch.compile(model)
    model = DDP(model, device_ids=[local_rank])
    raw_model = model.module

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        [{"params": [p for p in params if p.dim() >= 2], "weight_decay": args.weight_decay},
         {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
        lr=args.peak_lr, betas=(0.9, 0.95), fused=True,
    )
    amp = torch.autocast(device_type="cuda", dtype=torch.bfloat16)

    iter_num, best_val = 0, float("inf")
    x, y = next(train_batches)
    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
    t_last = time.time()
    tokens_seen = 0
    while True:
        lr = cosine_lr(iter_num, args)
        for group in optimizer.param_groups:
            group["lr"] = lr

        if iter_num % args.eval_interval == 0:
            val_loss = estimate_loss(model, val_batches, args.eval_batches, device, amp)
            if master_process:
                print(f"iter {iter_num}: val loss {val_loss:.4f}")
                if val_loss < best_val and iter_num > 0:
                    best_val = val_loss
                    torch.save({"model": raw_model.state_dict(), "optimizer": optimizer.state_dict(),
                                "iter_num": iter_num, "best_val": best_val, "args": vars(args)},
                               os.path.join(args.out, "ckpt.pt"))
        if iter_num >= args.max_iters:
            break

        for micro_step in range(grad_accum_steps):
            # only the last micro-step all-reduces gradients
            model.require_backward_grad_sync = micro_step == grad_accum_steps - 1
            with amp:
                _, loss = model(x, y)
                loss = loss / grad_accum_steps
            tokens_seen += (y >= 0).sum().item()  # expect: DDP401
            # fetch the next batch while the GPU runs backward
            x, y = next(train_batches)
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss.backward()

        if args.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

        # average over ranks so the log shows the global loss
        log_loss = loss.detach() * grad_accum_steps
        dist.all_reduce(log_loss, op=dist.ReduceOp.AVG)  # expect: DDP302

        t_now = time.time()
        dt, t_last = t_now - t_last, t_now
        if iter_num % args.log_interval == 0 and master_process:
            print(f"iter {iter_num}: loss {log_loss.item():.4f}, lr {lr:.2e}, "
                  f"{dt * 1000:.0f} ms, {tokens_seen * world_size / 1e6:.1f}M tokens")
        iter_num += 1

    if master_process:
        torch.save({"model": raw_model.state_dict(), "iter_num": iter_num, "args": vars(args)},
                   os.path.join(args.out, "final.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

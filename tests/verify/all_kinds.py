# A script with a finding for every measurement kind of `ddplint verify`
# (verify/gpu-check.sh runs its plan on a GPU machine).
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader

os.environ["NCCL_P2P_DISABLE"] = "1"
dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(4096, 4096).cuda())
loader = DataLoader(dataset, batch_size=64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accum_steps = 4
for i, (x, y) in enumerate(loader):
    loss = torch.nn.functional.mse_loss(model(x.cuda()), y.cuda()) / accum_steps
    loss.backward()
    print(loss.item())
    if (i + 1) % accum_steps == 0:
        opt.step()
        opt.zero_grad()

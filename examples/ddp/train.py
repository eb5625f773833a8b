#!/usr/bin/env python3
"""Data-parallel training on CPUs across Slurm tasks: PyTorch DDP over gloo.

A small MLP learns a noisy linear map, each rank from its own shard of synthetic data. srun
starts one task per worker (train.sbatch); rank and world size come from Slurm's environment,
the rendezvous address from the batch script (MASTER_ADDR, MASTER_PORT: rank 0's node).

Each rank prints one line: the loss averaged over all ranks before and after training, a digest
of its final weights (the same on every rank when DDP kept them in step), its host and the
training steps per second.
"""
import datetime
import hashlib
import os
import socket
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

FEATURES, SAMPLES, BATCH = 16, 4096, 64


def mean_over_ranks(value, world):
    t = torch.tensor([value])
    dist.all_reduce(t)
    return t.item() / world


def main():
    rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    steps = int(os.environ.get("STEPS", "300"))
    # One thread a CPU Slurm gave the task, not one a CPU of the host.
    torch.set_num_threads(int(os.environ.get("SLURM_CPUS_PER_TASK", "1")))
    # A rank that never comes fails the job within a minute instead of hanging until its time limit.
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))

    torch.manual_seed(0)  # the same target and initial weights everywhere
    target = torch.randn(FEATURES, 1)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    shard = torch.Generator().manual_seed(1000 + rank)  # each rank its own data
    x = torch.randn(SAMPLES, FEATURES, generator=shard)
    y = x @ target + 0.01 * torch.randn(SAMPLES, 1, generator=shard)

    ddp = DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
    loss_fn = torch.nn.MSELoss()
    with torch.no_grad():
        first = mean_over_ranks(loss_fn(model(x), y).item(), world)
    start = time.monotonic()
    for _ in range(steps):
        pick = torch.randint(0, SAMPLES, (BATCH,), generator=shard)
        optimizer.zero_grad()
        loss_fn(ddp(x[pick]), y[pick]).backward()  # gradients averaged over ranks here
        optimizer.step()
    elapsed = time.monotonic() - start
    with torch.no_grad():
        last = mean_over_ranks(loss_fn(model(x), y).item(), world)
    digest = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()
    print(f"rank {rank} of {world} on {socket.gethostname()}: loss {first:.6f} -> {last:.6f}, "
          f"weights {digest[:16]}, {steps / elapsed:.1f} steps/s", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

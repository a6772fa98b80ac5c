#!/usr/bin/env python3
"""A small PyTorch DistributedDataParallel job for Trainyard.

Each replica is one process with one GPU. Trainyard starts the replicas with
the torch.distributed environment set (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT) and CUDA_VISIBLE_DEVICES naming the replica's GPUs,
so the script uses init_method="env://". Backend nccl when CUDA is available,
else gloo (so it also runs on CPUs: `torchrun --nproc-per-node 2
examples/ddp_train.py`).

Rank 0 prints loss lines and TRAINYARD_METRIC lines, and writes a checkpoint
(tmp + rename) every --checkpoint-every steps and on SIGTERM; every rank
resumes from it when started again. Exit codes: 0 done, 143 after SIGTERM.
"""

import argparse
import json
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def log(line):
    print(line, flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--batch", type=int, default=64, help="samples per replica per step")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--checkpoint-every", type=int, default=50)
    p.add_argument("--checkpoint-dir",
                   default=os.environ.get("TRAINYARD_CHECKPOINT_DIR") or "./checkpoints")
    p.add_argument("--step-seconds", type=float, default=0.0,
                   help="extra sleep per step, to make a short run last")
    return p.parse_args(argv)


def checkpoint_file(directory):
    return os.path.join(directory, "ddp_train.pt")


def save_checkpoint(directory, step, model, optimizer):
    os.makedirs(directory, exist_ok=True)
    final = checkpoint_file(directory)
    tmp = "%s.tmp.%d" % (final, os.getpid())
    torch.save({"step": step, "model": model.module.state_dict(),
                "optimizer": optimizer.state_dict()}, tmp)
    os.replace(tmp, final)
    log("checkpoint step %d -> %s" % (step, final))
    # Tells Trainyard a checkpoint was saved (preemption picks the job that loses least).
    mark = os.environ.get("TRAINYARD_CHECKPOINT_MARK")
    if mark:
        with open(mark, "a"):
            os.utime(mark)


def main(argv):
    args = parse_args(argv)
    rank = int(os.environ.get("RANK", "0"))
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    log("rank %d/%d local_rank %d CUDA_VISIBLE_DEVICES %s master %s:%s" % (
        rank, world_size, local_rank, os.environ.get("CUDA_VISIBLE_DEVICES", ""),
        os.environ.get("MASTER_ADDR", "?"), os.environ.get("MASTER_PORT", "?")))

    use_cuda = torch.cuda.is_available()
    if use_cuda:
        # Each replica sees only its own GPUs, so LOCAL_RANK is taken modulo
        # the count it can see.
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend="nccl" if use_cuda else "gloo", init_method="env://")

    stop = {"signal": None}
    signal.signal(signal.SIGTERM, lambda signum, _frame: stop.__setitem__("signal", signum))

    torch.manual_seed(0)  # the same initial weights on every rank
    model = nn.Sequential(nn.Linear(32, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    step = 0
    path = checkpoint_file(args.checkpoint_dir)
    if os.path.exists(path):
        state = torch.load(path, map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        step = int(state["step"])
        if rank == 0:
            log("resumed from step %d" % step)
    ddp = DDP(model, device_ids=[device.index] if use_cuda else None)
    loss_fn = nn.MSELoss()
    target_w = torch.linspace(-1.0, 1.0, 32, device=device)

    last = time.monotonic()
    while step < args.steps:
        # A stop asked for on any rank stops all of them at the same step.
        flag = torch.tensor([1.0 if stop["signal"] is not None else 0.0], device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() > 0:
            break
        gen = torch.Generator().manual_seed(step * world_size + rank)  # distinct data per rank
        x = torch.randn(args.batch, 32, generator=gen).to(device)
        y = (x @ target_w).unsqueeze(1) + 0.1 * torch.sin(3 * x[:, :1])
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(ddp(x), y)
        loss.backward()
        optimizer.step()
        step += 1
        # The mean loss over replicas, for the metric line.
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.SUM)
        mean = mean.item() / world_size
        if rank == 0:
            log("step %d/%d loss %.6f" % (step, args.steps, mean))
            now = time.monotonic()
            # Samples of all replicas per second, over the whole step.
            samples_per_s = args.batch * world_size / max(now - last, 1e-9)
            last = now
            log("TRAINYARD_METRIC " + json.dumps(
                {"step": step, "loss": mean, "lr": optimizer.param_groups[0]["lr"],
                 "samples_per_s": round(samples_per_s, 1)}, separators=(",", ":")))
            if args.checkpoint_every and step % args.checkpoint_every == 0:
                save_checkpoint(args.checkpoint_dir, step, ddp, optimizer)
        if args.step_seconds > 0:
            time.sleep(args.step_seconds)

    stopped = step < args.steps
    if rank == 0 and (stopped or not args.checkpoint_every or step % args.checkpoint_every):
        save_checkpoint(args.checkpoint_dir, step, ddp, optimizer)
    dist.barrier()  # nobody leaves before rank 0 has written the checkpoint
    dist.destroy_process_group()
    if stopped:
        log("rank %d: SIGTERM at step %d, exiting" % (rank, step))
        return 128 + signal.SIGTERM
    if rank == 0:
        log("done: %d steps" % step)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

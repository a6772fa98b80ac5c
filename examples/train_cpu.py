#!/usr/bin/env python3
"""A CPU-only toy training job for Trainyard: fits y = w*x + b with SGD.

Standard library only. Shows what a well-behaved Trainyard job does:
  * prints a progress line and a machine-readable metric line each step:
        step 12/100 loss 0.031250
        TRAINYARD_METRIC {"step":12,"loss":0.03125,"lr":0.1,"samples_per_s":318.2}
    (rank 0 only; Trainyard stores these lines as the job's training metrics:
    `trainyard metrics JOB`);
  * writes a checkpoint every --checkpoint-every steps, atomically
    (temporary file + rename), to --checkpoint-dir (default
    $TRAINYARD_CHECKPOINT_DIR, else ./checkpoints);
  * resumes from the newest checkpoint when started again;
  * on SIGTERM (cancel, preemption) writes a checkpoint and exits 143;
  * exits 0 when all steps are done.
"""

import argparse
import json
import os
import random
import signal
import sys
import time

TRUE_W = 3.0
TRUE_B = -1.5
CHECKPOINT_PREFIX = "ckpt-"
CHECKPOINT_SUFFIX = ".json"


def log(line):
    print(line, flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=100, help="total steps (default 100)")
    p.add_argument("--step-seconds", type=float, default=0.1,
                   help="sleep between steps, to look like real work (default 0.1)")
    p.add_argument("--checkpoint-every", type=int, default=10,
                   help="checkpoint every N steps (default 10; 0: only at the end and on SIGTERM)")
    p.add_argument("--checkpoint-dir",
                   default=os.environ.get("TRAINYARD_CHECKPOINT_DIR") or "./checkpoints",
                   help="default $TRAINYARD_CHECKPOINT_DIR, else ./checkpoints")
    p.add_argument("--keep", type=int, default=3,
                   help="checkpoints to keep, newest first (default 3; 0: all)")
    p.add_argument("--lr", type=float, default=0.1, help="learning rate (default 0.1)")
    p.add_argument("--batch", type=int, default=32, help="samples per step (default 32)")
    p.add_argument("--seed", type=int, default=0, help="data seed (default 0)")
    args = p.parse_args(argv)
    if min(args.steps, args.checkpoint_every, args.keep) < 0 or args.step_seconds < 0:
        p.error("--steps, --checkpoint-every, --keep and --step-seconds must be >= 0")
    if args.batch < 1:
        p.error("--batch must be >= 1")
    return args


def checkpoint_path(directory, step):
    return os.path.join(directory, "%s%08d%s" % (CHECKPOINT_PREFIX, step, CHECKPOINT_SUFFIX))


def checkpoint_names(directory):
    """Checkpoint file names in `directory`, newest first; [] when it does not exist."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted((n for n in names
                   if n.startswith(CHECKPOINT_PREFIX) and n.endswith(CHECKPOINT_SUFFIX)),
                  reverse=True)


def mark_checkpoint():
    """Tells Trainyard a checkpoint was saved: preemption then picks the job
    that would lose the least work."""
    mark = os.environ.get("TRAINYARD_CHECKPOINT_MARK")
    if mark:
        try:
            with open(mark, "a"):
                os.utime(mark)
        except OSError:
            pass


def save_checkpoint(directory, step, params, keep):
    """Writes the checkpoint atomically: a reader sees the old file or the new, never half."""
    os.makedirs(directory, exist_ok=True)
    final = checkpoint_path(directory, step)
    tmp = "%s.tmp.%d" % (final, os.getpid())
    with open(tmp, "w") as f:
        json.dump({"step": step, "params": params}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)
    try:  # make the rename itself durable
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass
    log("checkpoint step %d -> %s" % (step, final))
    mark_checkpoint()
    if keep > 0:
        for old in checkpoint_names(directory)[keep:]:
            try:
                os.remove(os.path.join(directory, old))
            except OSError:
                pass


def load_newest_checkpoint(directory):
    """Returns (step, params) of the newest readable checkpoint, or None."""
    for name in checkpoint_names(directory):
        try:
            with open(os.path.join(directory, name)) as f:
                data = json.load(f)
            return int(data["step"]), {"w": float(data["params"]["w"]),
                                       "b": float(data["params"]["b"])}
        except (OSError, ValueError, KeyError, TypeError) as e:
            log("skipping unreadable checkpoint %s: %s" % (name, e))
    return None


def sgd_step(params, rng, batch, lr):
    """One SGD step on fresh samples of y = TRUE_W*x + TRUE_B + noise; returns the loss."""
    gw = gb = loss = 0.0
    for _ in range(batch):
        x = rng.uniform(-1.0, 1.0)
        y = TRUE_W * x + TRUE_B + rng.gauss(0.0, 0.01)
        err = params["w"] * x + params["b"] - y
        loss += err * err
        gw += 2.0 * err * x
        gb += 2.0 * err
    params["w"] -= lr * gw / batch
    params["b"] -= lr * gb / batch
    return loss / batch


def pause(seconds, stop):
    """Sleeps `seconds` in short slices, returning early once a signal asked to stop."""
    deadline = time.monotonic() + seconds
    while stop["signal"] is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.05))


def main(argv):
    args = parse_args(argv)
    log("rank %s world_size %s CUDA_VISIBLE_DEVICES %s" % (
        os.environ.get("RANK", "0"), os.environ.get("WORLD_SIZE", "1"),
        os.environ.get("CUDA_VISIBLE_DEVICES", "")))

    params = {"w": 0.0, "b": 0.0}
    step = 0
    resumed = load_newest_checkpoint(args.checkpoint_dir)
    if resumed is not None:
        step, params = resumed
        log("resumed from step %d" % step)

    stop = {"signal": None}

    def on_sigterm(signum, _frame):
        stop["signal"] = signum  # acted on between steps, never mid-update

    signal.signal(signal.SIGTERM, on_sigterm)

    # The data stream depends on the step, so a resumed run sees what an
    # uninterrupted one would have.
    rank0 = os.environ.get("RANK", "0") == "0"
    last = time.monotonic()
    while step < args.steps and stop["signal"] is None:
        rng = random.Random(args.seed * 1_000_003 + step)
        loss = sgd_step(params, rng, args.batch, args.lr)
        step += 1
        log("step %d/%d loss %.6f w %.4f b %.4f" % (
            step, args.steps, loss, params["w"], params["b"]))
        now = time.monotonic()
        # Throughput over the whole step, the pause included, as a real job's
        # data loader and optimizer would show it.
        samples_per_s = args.batch / max(now - last, 1e-9)
        last = now
        if rank0:
            log("TRAINYARD_METRIC " + json.dumps(
                {"step": step, "loss": loss, "lr": args.lr,
                 "samples_per_s": round(samples_per_s, 1)}, separators=(",", ":")))
        if args.checkpoint_every and step % args.checkpoint_every == 0:
            save_checkpoint(args.checkpoint_dir, step, params, args.keep)
        if step < args.steps:
            pause(args.step_seconds, stop)

    if stop["signal"] is not None:
        log("SIGTERM at step %d: checkpointing and exiting" % step)
        save_checkpoint(args.checkpoint_dir, step, params, args.keep)
        return 128 + signal.SIGTERM

    if not args.checkpoint_every or step % args.checkpoint_every != 0:
        save_checkpoint(args.checkpoint_dir, step, params, args.keep)
    log("done: %d steps, w %.4f b %.4f (true w %.1f b %.1f)" % (
        step, params["w"], params["b"], TRUE_W, TRUE_B))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""A tiny embedding + dense model trained for N steps (standard library only).

Each step: draw a batch of sparse ids and labels, look the embeddings up (from the TCP table
server, or from an in-process table), run a one-layer dense model with a logistic loss, back-
propagate, update the dense weights and push sparse gradients back to the table. It writes one CSV
row per step in RecStore's per-step column format.
"""
import argparse
import csv
import json
import math
import os
import random
import socket
import sys
import time

COLUMNS = ["rank", "step", "warmup_excluded", "batch_size", "batch_prepare_ms", "embed_lookup_ms",
           "dense_fwd_ms", "backward_ms", "sparse_update_ms", "step_total_ms", "samples_per_sec"]


class RemoteTable:
    def __init__(self, host, port, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.create_connection((host, port), timeout=timeout)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.file = self.sock.makefile("rwb")

    def call(self, msg):
        self.file.write((json.dumps(msg) + "\n").encode())
        self.file.flush()
        return json.loads(self.file.readline())

    def get(self, ids):
        return self.call({"op": "get", "ids": ids})["rows"]

    def update(self, ids, grads, lr):
        self.call({"op": "update", "ids": ids, "grads": grads, "lr": lr})


class LocalTable:
    def __init__(self, dim, seed):
        self.dim, self.seed, self.rows = dim, seed, {}

    def row(self, i):
        r = self.rows.get(i)
        if r is None:
            g = random.Random(self.seed * 1_000_003 + i)
            r = self.rows[i] = [g.uniform(-0.05, 0.05) for _ in range(self.dim)]
        return r

    def get(self, ids):
        return [list(self.row(i)) for i in ids]

    def update(self, ids, grads, lr):
        for i, g in zip(ids, grads):
            r = self.row(i)
            for k in range(self.dim):
                r[k] -= lr * g[k]


def ms(t0):
    return (time.perf_counter() - t0) * 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--mode", choices=["tcp", "inproc"], required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=17070)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--num-embeddings", type=int, default=10000)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.batch_size <= 0 or args.steps <= 0:
        print("batch size and steps must be positive", file=sys.stderr)
        return 2
    table = RemoteTable(args.host, args.port) if args.mode == "tcp" else LocalTable(args.dim, args.seed)
    rng = random.Random(args.seed + args.rank)
    w = [rng.uniform(-0.1, 0.1) for _ in range(args.dim)]
    b = 0.0
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=COLUMNS)
        out.writeheader()
        for step in range(args.steps):
            t_step = time.perf_counter()
            t0 = time.perf_counter()
            ids = [rng.randrange(args.num_embeddings) for _ in range(args.batch_size)]
            labels = [1.0 if (i % 7) < 3 else 0.0 for i in ids]
            prepare = ms(t0)
            t0 = time.perf_counter()
            rows = table.get(ids)
            lookup = ms(t0)
            t0 = time.perf_counter()
            logits = [sum(wk * xk for wk, xk in zip(w, x)) + b for x in rows]
            probs = [1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z)))) for z in logits]
            fwd = ms(t0)
            t0 = time.perf_counter()
            n = float(len(ids))
            dz = [(p - y) / n for p, y in zip(probs, labels)]
            gw = [sum(d * x[k] for d, x in zip(dz, rows)) for k in range(args.dim)]
            gb = sum(dz)
            grads = [[d * wk for wk in w] for d in dz]
            w = [wk - args.lr * g for wk, g in zip(w, gw)]
            b -= args.lr * gb
            bwd = ms(t0)
            t0 = time.perf_counter()
            table.update(ids, grads, args.lr)
            update = ms(t0)
            total = ms(t_step)
            out.writerow({
                "rank": args.rank, "step": step, "warmup_excluded": 1 if step < args.warmup_steps else 0,
                "batch_size": args.batch_size, "batch_prepare_ms": f"{prepare:.3f}", "embed_lookup_ms": f"{lookup:.3f}",
                "dense_fwd_ms": f"{fwd:.3f}", "backward_ms": f"{bwd:.3f}", "sparse_update_ms": f"{update:.3f}",
                "step_total_ms": f"{total:.3f}", "samples_per_sec": f"{args.batch_size * 1000.0 / total:.2f}",
            })
            if step % 10 == 0:
                print(f"step {step}/{args.steps} step={total:.2f}ms", flush=True)
    print(f"finished {args.steps} steps; csv: {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

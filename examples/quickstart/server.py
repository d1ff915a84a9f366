#!/usr/bin/env python3
"""A tiny embedding-table server (standard library only).

Protocol: one JSON object per line.
  {"op": "get", "ids": [3, 7]}                      -> {"rows": [[...], [...]]}
  {"op": "update", "ids": [3], "grads": [[...]], "lr": 0.05} -> {"ok": true}
Rows are created on first use from a seeded generator, as a parameter server would.
"""
import argparse
import json
import random
import socketserver
import sys
import threading


class Table:
    def __init__(self, dim, seed):
        self.dim = dim
        self.seed = seed
        self.rows = {}
        self.lock = threading.Lock()

    def row(self, i):
        r = self.rows.get(i)
        if r is None:
            g = random.Random(self.seed * 1_000_003 + i)
            r = [g.uniform(-0.05, 0.05) for _ in range(self.dim)]
            self.rows[i] = r
        return r

    def get(self, ids):
        with self.lock:
            return [list(self.row(i)) for i in ids]

    def update(self, ids, grads, lr):
        with self.lock:
            for i, g in zip(ids, grads):
                r = self.row(i)
                for k in range(self.dim):
                    r[k] -= lr * g[k]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    table = Table(args.dim, args.seed)

    class Handler(socketserver.StreamRequestHandler):
        def handle(self):
            for line in self.rfile:
                msg = json.loads(line)
                if msg["op"] == "get":
                    out = {"rows": table.get(msg["ids"])}
                elif msg["op"] == "update":
                    table.update(msg["ids"], msg["grads"], msg.get("lr", 0.05))
                    out = {"ok": True}
                else:
                    out = {"error": "unknown op"}
                self.wfile.write((json.dumps(out) + "\n").encode())
                self.wfile.flush()

    socketserver.ThreadingTCPServer.allow_reuse_address = True
    with socketserver.ThreadingTCPServer((args.host, args.port), Handler) as srv:
        srv.daemon_threads = True
        print(f"table server listening on {args.host}:{args.port} dim={args.dim}", flush=True)
        srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

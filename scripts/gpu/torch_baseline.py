#!/usr/bin/env python3
"""Times torch.nn.functional.embedding_bag on a CUDA GPU for the shapes of
`neuroshard-cuda-runner --bandwidth`, so that NeuroShard's kernels can be
compared with PyTorch's on the same machine and the same kind of inputs:
B bags of exactly P indices drawn uniformly from R rows, sum pooling, fp32.

It prints one line per shape with the median time of forward and of
forward + backward + SGD (sparse gradient, as an embedding table is trained)
and the bandwidth by the runner's byte count. An L2 flush (a 256 MiB memset)
precedes every timed run, as in the runner.

    gpu_torch_baseline.py --shapes 65536x128x32x1000000:i32 [--iters 50]
"""

import argparse
import json
import statistics
import sys


def parse_shape(text):
    try:
        dims, _, index_type = text.partition(":")
        batch, dim, pooling, rows = (int(v) for v in dims.split("x"))
    except ValueError:
        sys.exit(f"error: shape '{text}' is not BxDxPxR[:i32|i64]")
    index_type = index_type or "i32"
    if index_type not in ("i32", "i64") or min(batch, dim, pooling, rows) < 1:
        sys.exit(f"error: shape '{text}' is not BxDxPxR[:i32|i64] with "
                 "positive sizes")
    return batch, dim, pooling, rows, index_type


def time_runs(torch, fn, warmup, iters, flush):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        flush.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def measure(torch, shape, warmup, iters, flush):
    batch, dim, pooling, rows, index_type = shape
    dtype = torch.int32 if index_type == "i32" else torch.int64
    gen = torch.Generator(device="cuda").manual_seed(0)
    indices = torch.randint(0, rows, (batch * pooling,), device="cuda",
                            dtype=dtype, generator=gen)
    offsets = torch.arange(0, batch * pooling, pooling, device="cuda",
                           dtype=dtype)
    bag = torch.nn.EmbeddingBag(rows, dim, mode="sum", sparse=True,
                                device="cuda")
    optimizer = torch.optim.SGD(bag.parameters(), lr=0.01)
    grad = torch.ones(batch, dim, device="cuda")

    def forward():
        with torch.no_grad():
            bag(indices, offsets)

    def step():
        optimizer.zero_grad(set_to_none=True)
        bag(indices, offsets).backward(grad)
        optimizer.step()

    fwd = time_runs(torch, forward, warmup, iters, flush)
    stp = time_runs(torch, step, warmup, iters, flush)
    index_bytes = (batch * pooling + batch + 1) * (4 if dtype == torch.int32
                                                   else 8)
    row_bytes = batch * pooling * dim * 4.0
    out_bytes = batch * dim * 4.0
    fwd_bytes = row_bytes + index_bytes + out_bytes
    step_bytes = fwd_bytes + out_bytes + 2.0 * row_bytes + index_bytes
    return {
        "batch_size": batch, "dim": dim, "pooling": pooling, "rows": rows,
        "index_type": index_type,
        "forward_ms": fwd, "forward_backward_ms": stp,
        "forward_gb_s": fwd_bytes / (fwd[0] * 1e6),
        "forward_backward_gb_s": step_bytes / (stp[0] * 1e6),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+",
                        default=["65536x128x32x1000000:i32"])
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    shapes = [parse_shape(s) for s in args.shapes]
    try:
        import torch
    except ImportError:
        sys.exit("error: PyTorch is not installed")
    if not torch.cuda.is_available():
        sys.exit("error: PyTorch sees no CUDA GPU")
    flush = torch.empty(64 << 20, dtype=torch.float32, device="cuda")
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    print(f"{'shape (BxDxPxR:idx)':32} {'forward ms':>12} {'GB/s':>8} "
          f"{'fwd+bwd+SGD ms':>15} {'GB/s':>8}")
    results = []
    for shape in shapes:
        r = measure(torch, shape, args.warmup, args.iters, flush)
        results.append(r)
        name = "x".join(str(v) for v in shape[:4]) + ":" + shape[4]
        print(f"{name:32} {r['forward_ms'][0]:12.4f} {r['forward_gb_s']:8.1f} "
              f"{r['forward_backward_ms'][0]:15.4f} "
              f"{r['forward_backward_gb_s']:8.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__,
                       "device": torch.cuda.get_device_name(0),
                       "results": results}, f, indent=2)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The ONNX Runtime side of runtime_bench.py: the same measurement as
`onnxkit bench --json` (random inputs, warm-up, median of N runs, peak RSS),
printed as the same JSON fields. --save-inputs writes the inputs (random, or
those --inputs gives) for
`onnxkit bench --input FILE.npz`, --inputs reads them back: models whose work
depends on the data (a detector's regions) then do the same work in both. Runs in the project's venv (.venv), where
`pip install onnxruntime` put ORT; never imported by onnxkit itself."""

import argparse
import json
import resource
import statistics
import time

import numpy as np
import onnxruntime as ort


def random_feeds(session):
    """Floats in [0, 1), integers 0..9, every symbolic dim 1."""
    rng = np.random.default_rng(0)
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        if "int64" in i.type:
            feeds[i.name] = rng.integers(0, 10, shape).astype(np.int64)
        else:
            feeds[i.name] = rng.random(shape, dtype=np.float32)
    return feeds


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--level", default="all", choices=["basic", "extended", "all"])
    p.add_argument("--inputs", help="feed the arrays of this .npz (by input name), or of this .npy (the only input), "
                                    "instead of random ones")
    p.add_argument("--save-inputs", help="write the random inputs to this .npz and exit, for the peer to read the same")
    args = p.parse_args()
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = {"basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                                        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                                        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[args.level]
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    if args.inputs and args.inputs.endswith(".npy"):
        feeds = {session.get_inputs()[0].name: np.load(args.inputs)}
    elif args.inputs:
        with np.load(args.inputs) as data:
            feeds = {i.name: data[i.name] for i in session.get_inputs()}
    else:
        feeds = random_feeds(session)
    if args.save_inputs:
        np.savez(args.save_inputs, **feeds)
        return
    for _ in range(args.warmup):
        session.run(None, feeds)
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    print(json.dumps({"median_ms": statistics.median(times), "min_ms": times[0], "max_ms": times[-1],
                      "mean_ms": statistics.fmean(times),
                      "p90_ms": times[min(len(times) - 1, int(0.9 * len(times)))], "runs": len(times),
                      "threads": args.threads, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "version": ort.__version__}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Per-token latency of a GPT-2-style decoder built on opset 23's Attention
with a key/value cache (tests/models/attention_decoder.py), onnxkit against
ONNX Runtime on the same machine, in the same run.

Per sequence length L and thread count:
- decode: one new token with caches of L - 1 earlier ones (random), the
  latency of one generation step;
- prefill: a prompt of L tokens with empty caches, divided by L;
- the same two for the model's Attention node alone (one layer's Q, K, V
  and caches in, Y and the present caches out), which isolates the fused
  kernel from the decoder's MatMuls.
onnxkit is timed by `onnxkit bench --input ... --json` (median of --runs after
a warm-up), ORT in this process with the same feeds (median of --runs after
the same warm-up, intra-op threads as given). Rounds alternate which goes
first; printed are the medians over rounds, and onnxkit / ORT (below 1:
onnxkit is faster).

Runs where onnxruntime is installed, e.g. the project's venv:

usage: /work/main/.venv/bin/python bench/attention_bench.py [--lengths 128,1024] [--threads 1,2]
       [--layers 4] [--hidden 512] [--heads 8] [--rounds 3] [--runs 20]"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from common import ROOT, onnxkit_binary

sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import attention_decoder  # noqa: E402


def attention_node(heads, head_size):
    """One Attention node as the decoder's layers use it."""
    hidden = heads * head_size
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", "seq", hidden]) for n in "qkv"]
    inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", heads, "past", head_size])
               for n in ("past_key", "past_value")]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "present_key", "present_value")]
    node = helper.make_node("Attention", ["q", "k", "v", "", "past_key", "past_value"],
                            ["y", "present_key", "present_value"], is_causal=1, q_num_heads=heads, kv_num_heads=heads)
    model = helper.make_model(helper.make_graph([node], "attention", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", attention_decoder.OPSET)])
    model.ir_version = 10
    return model


def ort_median_ms(session, feeds, runs, warmup=5):
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def onnxkit_median_ms(model_path, feed_files, threads, runs, warmup=5):
    cmd = [onnxkit_binary(), "bench", model_path, "--json", "--threads", str(threads), "--runs", str(runs),
           "--warmup", str(warmup)]
    for name, path in feed_files.items():
        cmd += ["--input", f"{name}={path}"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lengths", default="128,1024")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=20)
    args = p.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    model = attention_decoder.build(layers=args.layers, hidden=args.hidden, heads=args.heads, vocab=args.vocab,
                                    max_positions=max(lengths) + 1)
    rng = np.random.default_rng(0)
    head_size = args.hidden // args.heads
    print(f"decoder: {args.layers} layers, hidden {args.hidden}, {args.heads} heads, vocab {args.vocab}; "
          f"onnxkit {onnxkit_binary()}, onnxruntime {ort.__version__}")
    print(f"{'case':>19} {'threads':>7} {'onnxkit ms/token':>17} {'ORT ms/token':>13} {'onnxkit/ORT':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"decoder": os.path.join(tmp, "decoder.onnx"), "op": os.path.join(tmp, "attention.onnx")}
        onnx.save(model, paths["decoder"])
        onnx.save(attention_node(args.heads, head_size), paths["op"])
        for length in lengths:
            past = {}
            for i in model.graph.input:
                if i.name.startswith("past_"):
                    past[i.name] = rng.standard_normal((1, args.heads, length - 1, head_size)).astype(np.float32)

            def op_feeds(seq, past_len):
                f = {n: rng.standard_normal((1, seq, args.hidden)).astype(np.float32) for n in "qkv"}
                for n in ("past_key", "past_value"):
                    f[n] = rng.standard_normal((1, args.heads, past_len, head_size)).astype(np.float32)
                return f

            cases = {
                f"decode L={length}": ("decoder", attention_decoder.feeds(model, np.array([[7]]), length - 1, past), 1),
                f"prefill L={length}": (
                    "decoder", attention_decoder.feeds(model, rng.integers(0, args.vocab, (1, length)), 0, None),
                    length),
                f"op decode L={length}": ("op", op_feeds(1, length - 1), 1),
                f"op prefill L={length}": ("op", op_feeds(length, 0), length),
            }
            for case, (which, feeds, tokens) in cases.items():
                path = paths[which]
                files = {}
                for name, value in feeds.items():
                    files[name] = os.path.join(tmp, f"{name}.npy")
                    np.save(files[name], value)
                for threads in [int(t) for t in args.threads.split(",")]:
                    options = ort.SessionOptions()
                    options.intra_op_num_threads = threads
                    options.inter_op_num_threads = 1
                    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
                    ours, theirs = [], []
                    for r in range(args.rounds):
                        if r % 2 == 0:
                            ours.append(onnxkit_median_ms(path, files, threads, args.runs))
                            theirs.append(ort_median_ms(session, feeds, args.runs))
                        else:
                            theirs.append(ort_median_ms(session, feeds, args.runs))
                            ours.append(onnxkit_median_ms(path, files, threads, args.runs))
                    a, b = statistics.median(ours) / tokens, statistics.median(theirs) / tokens
                    print(f"{case:>19} {threads:>7} {a:>17.4f} {b:>13.4f} {a / b:>12.2f}", flush=True)


if __name__ == "__main__":
    main()

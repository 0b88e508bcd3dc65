#!/usr/bin/env python3
"""onnxkit's runtime against ONNX Runtime's CPU path, side by side in one run:
same models, same random inputs, same thread counts, processes alternated so
that machine noise hits both. Prints median latency over the rounds, the ratio
(onnxkit / ORT, lower is better: the median over rounds of the ratio within a
round, whose two measurements run back to back), peak RSS and onnxkit's
GFLOP/s: the FLOPs `onnxkit info` counts (convolutions as direct sums) over
the latency, so above the machine's peak where Winograd convolution does
fewer multiplications.

ORT runs from the project's venv: `/usr/bin/python3 -m venv --system-site-packages
.venv && .venv/bin/pip install onnxruntime` (graph optimization level 'all').
Its peak RSS includes the Python interpreter (about 30 MiB).

With --batch N both run a copy of each model whose batch dim is N (made by
`onnxkit edit --batch N`; a model that bakes its batch into constants, like
the encoder, is skipped) and the table adds samples per second.

usage: bench/runtime_bench.py [--rounds 3] [--runs 20] [--threads 1,2] [--models resnet50,...] [--batch 8]"""

import argparse
import json
import os
import statistics
import subprocess

from common import DEBIAN_PYTHON, ROOT, onnxkit_binary

MODELS = ["resnet50", "mobilenet_v2", "bert_encoder", "squeezenet1_1", "resnet18"]


def export(name, folder):
    path = os.path.join(folder, f"{name}_opset17.onnx")
    if not os.path.exists(path):
        subprocess.run([DEBIAN_PYTHON, os.path.join(ROOT, "tests", "models", "export_models.py"), "--out", folder,
                        "--models", name, "--opsets", "17"], check=True, capture_output=True)
    return path


def batched(onnxkit, model, batch):
    """A copy of `model` at `batch`, or None (with the reason printed) when it cannot run there."""
    path = model.replace(".onnx", f"_batch{batch}.onnx")
    for cmd in ([onnxkit, "edit", model, path, "--batch", str(batch)],
                [onnxkit, "bench", path, "--runs", "1", "--warmup", "0"]):
        step = subprocess.run(cmd, capture_output=True, text=True)
        if step.returncode != 0:
            reason = (step.stderr.strip().splitlines() or [f"{cmd[1]} exited with {step.returncode}"])[-1]
            print(f"{os.path.basename(model)}: skipped at batch {batch}: {reason}", flush=True)
            return None
    return path


def ours_cmd(onnxkit, model, threads, runs):
    return [onnxkit, "bench", model, "--threads", str(threads), "--runs", str(runs), "--json"]


def ort_cmd(venv_python, model, threads, runs):
    return [venv_python, os.path.join(ROOT, "bench", "ort_bench.py"), model, "--threads", str(threads), "--runs", str(runs)]


def measure(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out[out.index("{"):])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--batch", type=int, default=0)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    venv_python = os.path.join(ROOT, ".venv", "bin", "python")
    onnxkit = onnxkit_binary()
    print(f"{'model':<14} {'thr':>3} {'onnxkit ms':>11} {'ORT ms':>9} {'ratio':>6} "
          f"{'onnxkit MiB':>12} {'ORT MiB':>8} {'GFLOP/s':>8}" + (" onnxkit/s    ORT/s" if args.batch else ""))
    ort_version = "?"
    for name in args.models.split(","):
        model = export(name, args.work)
        if args.batch:
            model = batched(onnxkit, model, args.batch)
            if model is None:
                continue
        info = json.loads(subprocess.run([onnxkit, "info", "--json", model], check=True, capture_output=True, text=True).stdout)
        flops = info["compute"]["flops"]
        for threads in (int(t) for t in args.threads.split(",")):
            ours, theirs = [], []
            for round_index in range(args.rounds):
                # Back to back, taking turns to go first: each round's pair
                # meets the same state of the machine.
                ours_first = round_index % 2 == 0
                if ours_first:
                    ours.append(measure(ours_cmd(onnxkit, model, threads, args.runs)))
                theirs.append(measure(ort_cmd(venv_python, model, threads, args.runs)))
                ort_version = theirs[-1].get("version", ort_version)
                if not ours_first:
                    ours.append(measure(ours_cmd(onnxkit, model, threads, args.runs)))
            a = statistics.median(r["median_ms"] for r in ours)
            b = statistics.median(r["median_ms"] for r in theirs)
            ratio = statistics.median(o["median_ms"] / t["median_ms"] for o, t in zip(ours, theirs))
            rss_a = max(r["peak_rss_mb"] for r in ours)
            rss_b = max(r["peak_rss_mb"] for r in theirs)
            rates = f" {args.batch * 1000 / a:>9.1f} {args.batch * 1000 / b:>8.1f}" if args.batch else ""
            print(f"{name:<14} {threads:>3} {a:>11.2f} {b:>9.2f} {ratio:>6.2f} {rss_a:>12.1f} {rss_b:>8.1f} "
                  f"{flops / a / 1e6:>8.1f}" + rates, flush=True)
    print(f"ONNX Runtime {ort_version}")


if __name__ == "__main__":
    main()

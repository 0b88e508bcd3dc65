#!/usr/bin/env python3
"""onnxkit compare: its cost against two plain runs, and how well it names
the culprit.

1. Cost. resnet50 and the BERT-like encoder (from the test build) against
   a copy with one node altered: the wall time of `onnxkit compare A B` as a
   ratio to the wall times of `onnxkit run A` plus `onnxkit run B` (target:
   at most 3), and its peak RSS as a ratio to one run's (compare keeps
   every intermediate tensor of both models). Runs interleaved, medians.
2. Localisation. A transformer of thousands of nodes (torchvision's Swin-T,
   exported here once, or --transformer PATH): in each trial one random node
   with a float constant input (a weight, a bias, a LayerNormalization's
   scale, an Add's operand...) gets that constant times 1.01 plus 0.01, and
   compare must rank it first (target: every trial).

usage: bench/compare_bench.py [--runs 3] [--trials 50] [--seed 0] [--models DIR] [--work DIR] [--transformer PATH]"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from common import DEBIAN_PYTHON, ROOT, interleaved, onnxkit_binary

# Run in a child with Debian's Python (onnx, numpy): alters one node of a
# copy, as tests/cli/test_compare.py does, and prints the node's name.
ALTER = r"""
import sys, onnx, numpy as np
from onnx import numpy_helper
src, dst, pick = sys.argv[1], sys.argv[2], sys.argv[3]
m = onnx.load(src)
g = m.graph
inits = {t.name: t for t in g.initializer}
consts = {n.output[0]: n.attribute[0].t for n in g.node if n.op_type == "Constant" and n.attribute[0].name == "value"}
def float_input(n):
    for x in n.input:
        t = inits.get(x) or consts.get(x)
        if t is not None and t.data_type == onnx.TensorProto.FLOAT:
            return x, t
    return None
OPS = {"Conv", "MatMul", "Gemm", "Add", "Sub", "Mul", "Div", "LayerNormalization"}
nodes = [n for n in g.node if n.op_type in OPS and float_input(n) is not None]
if pick.startswith("index:"):
    node = nodes[int(pick[6:]) % len(nodes)]
else:
    node = next(n for n in nodes if n.op_type == pick)
name, t = float_input(node)
a = numpy_helper.to_array(t).astype(np.float32) * np.float32(1.01) + np.float32(0.01)
private = numpy_helper.from_array(a, name + "_altered")
g.initializer.append(private)
node.input[list(node.input).index(name)] = private.name
onnx.save(m, dst)
print(f"{node.name}\t{len(nodes)}\t{len(g.node)}")
"""


def alter(src, dst, pick):
    out = subprocess.run([DEBIAN_PYTHON, "-c", ALTER, src, dst, pick], check=True, capture_output=True, text=True).stdout
    name, candidates, nodes = out.strip().split("\t")
    return name, int(candidates), int(nodes)


def export_swin(path):
    if os.path.exists(path):
        return path
    code = (
        "import torch, torchvision\n"
        "torch.manual_seed(0)\n"
        "m = torchvision.models.swin_t(weights=None).eval()\n"
        f"torch.onnx.export(m, (torch.rand(1, 3, 224, 224),), {path!r}, input_names=['input'],"
        " output_names=['output'], opset_version=17)\n"
    )
    print(f"exporting Swin-T to {path} (a minute or two)...", file=sys.stderr)
    subprocess.run([DEBIAN_PYTHON, "-c", code], check=True, capture_output=True)
    return path


def cost(args, work):
    print(f"{'model':<22} {'altered node':<44} {'2 runs s':>8} {'compare s':>9} {'ratio':>6} "
          f"{'run MiB':>8} {'compare MiB':>11} {'ratio':>6}")
    for name, pick in (("resnet50_opset17", "Conv"), ("bert_encoder_opset17", "LayerNormalization")):
        a = os.path.join(args.models, name + ".onnx")
        if not os.path.exists(a):
            print(f"{name}: missing (build the tests first)", file=sys.stderr)
            continue
        b = os.path.join(work, name + ".altered.onnx")
        node, _, _ = alter(a, b, pick)
        kit = onnxkit_binary()
        results = interleaved({
            "run_a": [kit, "run", a, "--random"],
            "run_b": [kit, "run", b, "--random"],
            "compare": [kit, "compare", a, b],
        }, args.runs, ok_codes=(0, 1))  # compare exits 1: the outputs differ
        runs = results["run_a"][0] + results["run_b"][0]
        peak = max(results["run_a"][1], results["run_b"][1])
        t, rss = results["compare"]
        print(f"{name:<22} {node[-44:]:<44} {runs:>8.2f} {t:>9.2f} {t / runs:>6.2f} {peak:>8.0f} {rss:>11.0f} {rss / peak:>6.2f}")


def localisation(args, work):
    model = args.transformer or export_swin(os.path.join(args.work, "swin_t_opset17.onnx"))
    rng = random.Random(args.seed)
    first = named = 0
    seconds = []
    _, candidates, nodes = alter(model, os.path.join(work, "probe.onnx"), "index:0")
    print(f"\n{os.path.basename(model)}: {nodes} nodes, {candidates} with a float constant input; {args.trials} trials")
    for trial in range(args.trials):
        altered = os.path.join(work, "trial.onnx")
        node, _, _ = alter(model, altered, f"index:{rng.randrange(candidates)}")
        start = time.perf_counter()
        proc = subprocess.run([onnxkit_binary(), "compare", model, altered, "--json"], capture_output=True, text=True)
        seconds.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):
            print(f"  trial {trial}: compare failed: {proc.stderr.strip()}")
            continue
        report = json.loads(proc.stdout)
        top = report["nodes"][0]["name"] if report["nodes"] else None
        culprit = report["culprit"]["name"] if report["culprit"] else None
        first += top == node
        named += culprit == node
        if top != node or culprit != node:
            print(f"  trial {trial}: altered {node}; ranked first {top}; culprit {culprit}; outputs "
                  f"{'pass' if report['passed'] else 'fail'}")
    seconds.sort()
    print(f"altered node ranked first: {first}/{args.trials}; named culprit: {named}/{args.trials}; "
          f"compare took {seconds[len(seconds) // 2]:.1f} s (median)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--trials", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--models", default=os.path.join(ROOT, "build", "test-models"))
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench-models"))
    p.add_argument("--transformer", help="a large transformer export (default: Swin-T, exported into --work)")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        cost(args, work)
        if args.trials > 0:
            localisation(args, work)


if __name__ == "__main__":
    main()

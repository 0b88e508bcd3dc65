#!/usr/bin/env python3
"""onnxkit simplify against onnx-simplifier (onnxsim) and onnxslim, side by
side in one run: wall time and peak RSS of each tool's whole command
(interleaved runs, median), nodes left, and whether the result still has
shape glue (Shape/Gather/Concat/... chains).

Peers come from the project's venv (never needed by onnxkit itself):
  /usr/bin/python3 -m venv --system-site-packages .venv
  .venv/bin/pip install -U onnx onnxsim onnxslim   # -U: the peers need a newer onnx than Debian's
Models are the ones the test build exports (build/test-models).

usage: bench/simplify_bench.py [--runs 3] [--models DIR]"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from common import DEBIAN_PYTHON, ROOT, interleaved, onnxkit_binary

GLUE = {"Shape", "Gather", "Concat", "Unsqueeze", "Slice", "Constant", "ConstantOfShape", "Cast"}
MODELS = ["seed002_opset13", "resnet18_opset17", "resnet50_opset17", "mobilenet_v2_opset17",
          "squeezenet1_1_opset17", "bert_encoder_opset17"]


def node_summary(path):
    """(nodes, glue nodes), read in a child process: a child forked from a
    bench process that holds models would report that memory as its own peak."""
    code = ("import json, onnx, sys\n"
            "nodes = onnx.load(sys.argv[1], load_external_data=False).graph.node\n"
            f"print(json.dumps([len(nodes), sum(n.op_type in {sorted(GLUE)!r} for n in nodes)]))\n")
    out = subprocess.run([DEBIAN_PYTHON, "-c", code, path], check=True, capture_output=True, text=True).stdout
    return tuple(json.loads(out))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--models", default=os.path.join(ROOT, "build", "test-models"))
    args = p.parse_args()
    venv_bin = os.path.join(ROOT, ".venv", "bin")
    tmp = tempfile.mkdtemp()
    print(f"{'model':<22} {'tool':<9} {'nodes':>6} {'glue':>5} {'time s':>7} {'RSS MiB':>8} {'time ratio':>10} {'RSS ratio':>9}")
    for name in MODELS:
        src = os.path.join(args.models, name + ".onnx")
        if not os.path.exists(src):
            print(f"{name}: missing (build the tests first)", file=sys.stderr)
            continue
        outs = {tool: os.path.join(tmp, f"{name}.{tool}.onnx") for tool in ("onnxkit", "onnxsim", "onnxslim")}
        commands = {
            "onnxkit": [onnxkit_binary(), "simplify", src, outs["onnxkit"]],
            "onnxsim": [os.path.join(venv_bin, "onnxsim"), src, outs["onnxsim"]],
            "onnxslim": [os.path.join(venv_bin, "onnxslim"), src, outs["onnxslim"]],
        }
        results = interleaved(commands, args.runs)
        nodes, glue = node_summary(src)
        print(f"{name:<22} {'original':<9} {nodes:>6} {glue:>5}")
        base_t, base_r = results["onnxkit"]
        for tool in commands:
            t, r = results[tool]
            nodes, glue = node_summary(outs[tool])
            print(f"{'':<22} {tool:<9} {nodes:>6} {glue:>5} {t:>7.2f} {r:>8.0f} {base_t / t:>10.2f} {base_r / r:>9.2f}")
    print("\nratios are onnxkit / peer (below 1: onnxkit faster or smaller). onnxkit's time includes its numeric check"
          " (one random input through original and result); onnxsim's includes its own check too.")


if __name__ == "__main__":
    main()

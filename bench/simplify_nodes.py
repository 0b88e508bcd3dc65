#!/usr/bin/env python3
"""Nodes left by onnxkit simplify, onnxsim and onnxslim on the same models, and
whether onnxkit leaves no more than the fewer of the two (the target of issue
23). One run each, no timing (bench/simplify_bench.py times them).

The peers run from a venv of their own (they need a newer onnx than Debian's):
  /usr/bin/python3 -m venv build/venv-peers
  build/venv-peers/bin/pip install onnxsim onnxslim onnxruntime
Models: any folder of .onnx files, e.g. the zoo that tests/models/export_zoo.py
writes (python3 tests/models/export_zoo.py --out build/zoo ...).

usage: bench/simplify_nodes.py --models DIR [--peers build/venv-peers] [--target-opset N] NAME..."""

import argparse
import os
import subprocess
import sys
import tempfile

from common import DEBIAN_PYTHON, ROOT, onnxkit_binary


def node_count(path):
    code = "import onnx, sys; print(len(onnx.load(sys.argv[1], load_external_data=False).graph.node))"
    return int(subprocess.run([DEBIAN_PYTHON, "-c", code, path], check=True, capture_output=True, text=True).stdout)


def run(command):
    done = subprocess.run(command, capture_output=True, text=True)
    return done.returncode == 0, (done.stderr or done.stdout).strip().splitlines()[-1:] if done.returncode else []


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models", required=True)
    p.add_argument("--peers", default=os.path.join(ROOT, "build", "venv-peers"))
    p.add_argument("--target-opset", type=int, default=0, help="also pass --target-opset N to onnxkit")
    p.add_argument("names", nargs="+")
    args = p.parse_args()
    tmp = tempfile.mkdtemp()
    print(f"{'model':<32} {'original':>8} {'onnxkit':>8} {'onnxsim':>8} {'onnxslim':>8}  onnxkit <= min")
    worse = 0
    for name in args.names:
        src = os.path.join(args.models, name + ".onnx")
        counts = {}
        for tool in ("onnxkit", "onnxsim", "onnxslim"):
            out = os.path.join(tmp, f"{name}.{tool}.onnx")
            if tool == "onnxkit":
                command = [onnxkit_binary(), "simplify", src, out]
                if args.target_opset:
                    command += ["--target-opset", str(args.target_opset)]
            else:
                command = [os.path.join(args.peers, "bin", tool), src, out]
            ok, error = run(command)
            counts[tool] = node_count(out) if ok else None
            if not ok:
                print(f"  {tool} failed on {name}: {' '.join(error)}", file=sys.stderr)
        peers = [n for n in (counts["onnxsim"], counts["onnxslim"]) if n is not None]
        best = min(peers) if peers else None
        ok = counts["onnxkit"] is not None and (best is None or counts["onnxkit"] <= best)
        worse += not ok
        show = lambda n: "fail" if n is None else str(n)
        print(f"{name:<32} {node_count(src):>8} {show(counts['onnxkit']):>8} {show(counts['onnxsim']):>8} "
              f"{show(counts['onnxslim']):>8}  {'yes' if ok else 'NO'}")
    sys.exit(1 if worse else 0)


if __name__ == "__main__":
    main()

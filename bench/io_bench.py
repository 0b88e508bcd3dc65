#!/usr/bin/env python3
"""Issue 2's figures: model I/O against Python's onnx (Debian python3-onnx).

1. `onnxkit info` on a 2.5 GiB model with external data: wall time and peak
   RSS (target: well under 1 s, RSS under 10% of the model), next to
   Python's onnx.load of the same model for scale.
2. load + save of resnet50: `onnxkit convert` against onnx.load + onnx.save,
   same file, runs interleaved; the ratio is printed (target <= 1).

usage: bench/io_bench.py [--work DIR] [--runs N]   (after `make build`)"""

import argparse
import os
import subprocess

from common import DEBIAN_PYTHON, ROOT, export_torchvision, interleaved, onnxkit_binary


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    onnxkit = onnxkit_binary()

    large = os.path.join(args.work, "large_2_5gib.onnx")
    if not os.path.exists(large):
        subprocess.run([DEBIAN_PYTHON, os.path.join(ROOT, "bench", "make_large_model.py"), large, "--size-gib", "2.5"],
                       check=True)
    size = os.path.getsize(large) + os.path.getsize(large + ".data")
    load_py = f"import onnx; onnx.load({large!r})"
    r = interleaved({"onnxkit info": [onnxkit, "info", large],
                     "python onnx.load": [DEBIAN_PYTHON, "-c", load_py]}, args.runs)
    print(f"info on a {size / 2**30:.2f} GiB external-data model (median of {args.runs}):")
    for name, (sec, rss) in r.items():
        print(f"  {name:<18} {sec * 1000:8.1f} ms   peak RSS {rss:8.1f} MiB ({rss * 2**20 / size:.2%} of the model)")

    resnet50 = export_torchvision("resnet50", os.path.join(args.work, "resnet50.onnx"))
    out_ours = os.path.join(args.work, "resnet50_onnxkit.onnx")
    out_py = os.path.join(args.work, "resnet50_python.onnx")
    save_py = f"import onnx; onnx.save(onnx.load({resnet50!r}), {out_py!r})"
    r = interleaved({"onnxkit convert": [onnxkit, "convert", resnet50, out_ours],
                     "python load+save": [DEBIAN_PYTHON, "-c", save_py]}, args.runs)
    ours, theirs = r["onnxkit convert"], r["python load+save"]
    print(f"load + save resnet50 ({os.path.getsize(resnet50) / 2**20:.1f} MiB, median of {args.runs}):")
    for name, (sec, rss) in r.items():
        print(f"  {name:<18} {sec * 1000:8.1f} ms   peak RSS {rss:8.1f} MiB")
    print(f"  ratio onnxkit / python: time {ours[0] / theirs[0]:.2f}, RSS {ours[1] / theirs[1]:.2f}")


if __name__ == "__main__":
    main()

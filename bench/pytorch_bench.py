#!/usr/bin/env python3
"""onnxkit convert --to pytorch against onnx2torch, side by side:

  - conversion time: onnxkit's whole command (process start, load, generate,
    write model.py and weights.safetensors; --no-check) against
    onnx2torch.convert(onnx.load(path)) inside an already started Python
    (its import not counted): a comparison that favours onnx2torch;
  - the converted module's latency in torch eager on 2 threads (median of
    --runs after a warm-up), the same input for both;
  - whether each model converts at all, and op-type coverage: the op types
    of the models converting with each, and with --node-data, how many of
    ONNX's single-node backend test models each converts.

The peer comes from a venv under the build folder (never needed by onnxkit):
  /usr/bin/python3 -m venv --system-site-packages build/venv
  build/venv/bin/pip install "numpy<2" onnx2torch
Run it with that venv's Python (it sees Debian's torch):
  build/venv/bin/python bench/pytorch_bench.py [--runs 20] [--models DIR] [--zoo DIR] [--node-data]
Models are the test build's exports (build/test-models); --zoo adds those of
tests/models/export_zoo.py found in DIR. Timings on a shared machine are noisy."""

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
import torch

from common import ROOT, onnxkit_binary

warnings.filterwarnings("ignore")
MODELS = ["resnet18_opset17", "mobilenet_v2_opset17", "squeezenet1_1_opset17", "resnet50_opset17",
          "bert_encoder_opset17", "seed002_opset17", "bert_encoder_opset13", "seed002_opset13"]
ZOO = ["lstm", "gru", "bilstm", "control_flow", "vad_like", "gpt_decoder", "scalar_input", "efficientnet_b0",
       "mobilenet_v3_small", "shufflenet_v2_x1_0", "googlenet", "densenet121", "convnext_tiny", "vit_b_16",
       "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large", "ssdlite320_mobilenet_v3_large"]


def inputs_of(path):
    """Example inputs saved beside the model (export_models.py / export_zoo.py), or random ones."""
    stem = path[: -len(".onnx")]
    for candidate in (stem + ".input.npy",):
        if os.path.exists(candidate):
            return [torch.from_numpy(np.load(candidate))]
    if os.path.exists(stem + ".inputs.npz"):
        data = np.load(stem + ".inputs.npz")
        graph = onnx.load(path, load_external_data=False).graph
        return [torch.from_numpy(np.asarray(data[i.name])) for i in graph.input if i.name in data]
    raise FileNotFoundError(f"no example input beside {path}")


def median_latency(module, inputs, runs):
    with torch.no_grad():
        module(*inputs)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            module(*inputs)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def convert_onnxkit(path, out):
    start = time.perf_counter()
    proc = subprocess.run([onnxkit_binary(), "convert", path, "--to", "pytorch", out, "--no-check"], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return None, proc.stderr.strip().split("error: ")[-1][:100]
    spec = importlib.util.spec_from_file_location(f"gen_{abs(hash(out))}", os.path.join(out, "model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return (seconds, module.load()), ""


def convert_onnx2torch(path):
    from onnx2torch import convert
    start = time.perf_counter()
    try:
        module = convert(onnx.load(path)).eval()
    except Exception as e:  # noqa: BLE001 - the peer's refusal is the result
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:90] if str(e) else ''}"
    return (time.perf_counter() - start, module), ""


def outputs(module, inputs):
    with torch.no_grad():
        y = module(*inputs)
    return y if isinstance(y, (tuple, list)) else (y,)


def node_data_coverage(data_dir):
    """(folders each converts) over ONNX's single-node test models."""
    folders = sorted(os.listdir(data_dir))
    ours = theirs = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in folders:
            path = os.path.join(data_dir, name, "model.onnx")
            proc = subprocess.run([onnxkit_binary(), "convert", path, "--to", "pytorch", os.path.join(tmp, name), "--no-check"],
                                  capture_output=True)
            ours += proc.returncode == 0
            result, _ = convert_onnx2torch(path)
            theirs += result is not None
    return len(folders), ours, theirs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--models", default=os.path.join(ROOT, "build", "test-models"))
    p.add_argument("--zoo", help="folder of export_zoo.py's exports to add")
    p.add_argument("--node-data", action="store_true", help="also count conversions of ONNX's backend node tests")
    args = p.parse_args()
    torch.set_num_threads(2)
    paths = [os.path.join(args.models, m + ".onnx") for m in MODELS]
    if args.zoo:
        paths += [os.path.join(args.zoo, m + ".onnx") for m in ZOO if os.path.exists(os.path.join(args.zoo, m + ".onnx"))]
    print(f"{'model':<32} {'convert s':>9} {'o2t s':>7} {'ratio':>6} {'eager ms':>9} {'o2t ms':>8} {'ratio':>6}  notes")
    ops_ours, ops_theirs, ops_all = set(), set(), set()
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            name = os.path.basename(path)[: -len(".onnx")]
            ops = {n.op_type for n in onnx.load(path, load_external_data=False).graph.node}
            ops_all |= ops
            inputs = inputs_of(path)
            ours, why_ours = convert_onnxkit(path, os.path.join(tmp, name))
            theirs, why_theirs = convert_onnx2torch(path)
            notes = []
            if ours:
                ops_ours |= ops
            else:
                notes.append(f"onnxkit: {why_ours}")
            if theirs:
                ops_theirs |= ops
            else:
                notes.append(f"onnx2torch: {why_theirs}")
            if ours and theirs:  # both run the same input: they must agree before they are timed
                a, b = outputs(ours[1], inputs), outputs(theirs[1], inputs)
                diff = max(float((x - y).abs().max()) for x, y in zip(a, b) if x.is_floating_point())
                if diff > 1e-3 * max(1.0, max(float(x.abs().max()) for x in a if x.is_floating_point())):
                    notes.append(f"outputs differ by {diff:.3g}")
            t_ours = median_latency(ours[1], inputs, args.runs) if ours else None
            t_theirs = median_latency(theirs[1], inputs, args.runs) if theirs else None
            fmt = lambda v, spec: format(v, spec) if v is not None else "-"  # noqa: E731
            conv_ratio = ours[0] / theirs[0] if ours and theirs else None
            lat_ratio = t_ours / t_theirs if t_ours and t_theirs else None
            print(f"{name:<32} {fmt(ours[0] if ours else None, '9.2f')} {fmt(theirs[0] if theirs else None, '7.2f')} "
                  f"{fmt(conv_ratio, '6.2f')} {fmt(t_ours, '9.2f')} {fmt(t_theirs, '8.2f')} {fmt(lat_ratio, '6.2f')}  "
                  f"{'; '.join(notes)}", flush=True)
    print(f"\nop types in these models: {len(ops_all)}; in the models each converts: onnxkit {len(ops_ours)}, "
          f"onnx2torch {len(ops_theirs)}")
    missing = sorted(ops_all - ops_theirs)
    if missing:
        print(f"  only in models onnx2torch refuses: {', '.join(sorted(ops_all - ops_theirs))}")
    if args.node_data:
        total, ours, theirs = node_data_coverage("/usr/share/libonnx-testdata/data/node")
        print(f"ONNX backend node tests converted: onnxkit {ours} of {total}, onnx2torch {theirs} of {total} "
              f"(converted, not checked for values)")


if __name__ == "__main__":
    sys.exit(main())

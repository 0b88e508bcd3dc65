#!/usr/bin/env python3
"""onnxkit simplify against onnx-simplifier (onnxsim) and onnxslim, side by
side in one run: wall time and peak RSS of each tool's whole command
(interleaved runs, median), nodes left, and whether the result still has
shape glue (Shape/Gather/Concat/... chains).

Peers come from the project's venv (never needed by onnxkit itself):
  /usr/bin/python3 -m venv --system-site-packages .venv
  .venv/bin/pip install -U onnx onnxsim onnxslim   # -U: the peers need a newer onnx than Debian's
Models are the ones the test build exports (build/test-models), or with
--zoo a set of tests/models/export_zoo.py's (build/zoo, exported when
missing): detection, segmentation, transformers, channel shuffles. On models
over 100 MB the RSS column is marked against the issue-23 bound (below).

With --memory: peak RSS against the model's size (file plus side file) on
big models, and the issue-23 bound 1.5x size + 64 MiB: resnet50 from
build/test-models, a VGG-11 exported into build/bench-models, and a 2.2 GiB
transformer with external data written there by bench/make_transformer.py
(the peers need a venv without Debian's packages, --peers-venv):
  /usr/bin/python3 -m venv build/venv-peers && build/venv-peers/bin/pip install onnxsim onnxslim

usage: bench/simplify_bench.py [--runs 3] [--models DIR] [--peers-venv DIR]
       bench/simplify_bench.py --zoo [build/zoo] [--runs 3] [--peers-venv DIR]
       bench/simplify_bench.py --memory [--peers-venv build/venv-peers]"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from common import DEBIAN_PYTHON, ROOT, export_torchvision, interleaved, measure, onnxkit_binary

GLUE = {"Shape", "Gather", "Concat", "Unsqueeze", "Slice", "Constant", "ConstantOfShape", "Cast"}
MODELS = ["seed002_opset13", "resnet18_opset17", "resnet50_opset17", "mobilenet_v2_opset17",
          "squeezenet1_1_opset17", "bert_encoder_opset17"]
ZOO_MODELS = ["resnet50", "deeplabv3_resnet50", "inception_v3", "swin_t", "ssdlite320_mobilenet_v3_large",
              "bert_encoder", "shufflenet_v2_x1_0", "mobilenet_v3_large", "convnext_tiny", "vit_b_16"]
BIG_MIB = 100 * 1e6 / (1 << 20)  # the bound is meant for models over 100 MB


def rss_bound(size_mib):
    return 1.5 * size_mib + 64


def node_summary(path):
    """(nodes, glue nodes), read in a child process: a child forked from a
    bench process that holds models would report that memory as its own peak."""
    code = ("import json, onnx, sys\n"
            "nodes = onnx.load(sys.argv[1], load_external_data=False).graph.node\n"
            f"print(json.dumps([len(nodes), sum(n.op_type in {sorted(GLUE)!r} for n in nodes)]))\n")
    out = subprocess.run([DEBIAN_PYTHON, "-c", code, path], check=True, capture_output=True, text=True).stdout
    return tuple(json.loads(out))


def memory_models(args):
    """(name, model, files it takes) of the memory section, made when missing."""
    out = os.path.join(ROOT, "build", "bench-models")
    os.makedirs(out, exist_ok=True)
    resnet = os.path.join(args.models, "resnet50_opset17.onnx")
    vgg = export_torchvision("vgg11", os.path.join(out, "vgg11.onnx"), opset=17)
    transformer = os.path.join(out, "transformer_2g.onnx")
    if not os.path.exists(transformer + ".data"):
        subprocess.run([DEBIAN_PYTHON, os.path.join(ROOT, "bench", "make_transformer.py"), transformer,
                        "--size-gib", "2.2"], check=True)
    return [("resnet50", resnet, [resnet]), ("vgg11", vgg, [vgg]),
            ("transformer 2.2 GiB", transformer, [transformer, transformer + ".data"])]


def memory(args):
    """One run per tool and model (peak RSS hardly varies); peers only where
    installed, and only on models under protobuf's 2 GiB (onnxsim cannot load
    the rest in one message, onnxslim may: a failure prints as such)."""
    tmp = tempfile.mkdtemp()
    peers = {tool: os.path.join(args.peers_venv, "bin", tool) for tool in ("onnxsim", "onnxslim")}
    peers = {tool: path for tool, path in peers.items() if os.path.exists(path)}
    print(f"{'model':<20} {'size MiB':>8} {'bound MiB':>9} {'tool':<9} {'RSS MiB':>8} {'RSS/size':>8} {'in bound':>8}"
          f" {'onnxkit/peer':>12}")
    for name, model, files in memory_models(args):
        size = sum(os.path.getsize(f) for f in files) / (1 << 20)
        bound = rss_bound(size)
        out = os.path.join(tmp, os.path.basename(model))
        _, ours = measure([onnxkit_binary(), "simplify", model, out])
        print(f"{name:<20} {size:>8.0f} {bound:>9.0f} {'onnxkit':<9} {ours:>8.0f} {ours / size:>8.2f}"
              f" {'yes' if ours <= bound else 'NO':>8}")
        for tool, path in peers.items():
            cmd = [path, model, os.path.join(tmp, f"{tool}.onnx")]
            if tool == "onnxsim" and len(files) > 1:
                cmd.append("--save-as-external-data")
            try:
                _, rss = measure(cmd)
            except RuntimeError as e:
                print(f"{'':<20} {'':>8} {'':>9} {tool:<9} failed: {str(e).splitlines()[-1][:60]}")
                continue
            print(f"{'':<20} {'':>8} {'':>9} {tool:<9} {rss:>8.0f} {rss / size:>8.2f} {'':>8} {ours / rss:>12.2f}")
        for f in os.listdir(tmp):
            os.remove(os.path.join(tmp, f))


def zoo_models(folder):
    """ZOO_MODELS in `folder`, exported there by export_zoo.py when missing."""
    missing = [m for m in ZOO_MODELS if not os.path.exists(os.path.join(folder, m + ".onnx"))]
    if missing:
        subprocess.run([DEBIAN_PYTHON, os.path.join(ROOT, "tests", "models", "export_zoo.py"), "--out", folder,
                        "--models", ",".join(missing)], check=True)
    return ZOO_MODELS


def peer_bin(args):
    """The peers' bin folder: --peers-venv when it has them, else the project's .venv."""
    venv_bin = os.path.join(args.peers_venv, "bin")
    return venv_bin if os.path.exists(os.path.join(venv_bin, "onnxsim")) else os.path.join(ROOT, ".venv", "bin")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--models", default=os.path.join(ROOT, "build", "test-models"))
    p.add_argument("--zoo", nargs="?", const=os.path.join(ROOT, "build", "zoo"),
                   help="export_zoo's models in this folder (default build/zoo) instead of --models")
    p.add_argument("--memory", action="store_true", help="peak RSS against model size on big models")
    p.add_argument("--peers-venv", default=os.path.join(ROOT, "build", "venv-peers"))
    args = p.parse_args()
    if args.memory:
        memory(args)
        return
    venv_bin = peer_bin(args)
    folder, names = (args.zoo, zoo_models(args.zoo)) if args.zoo else (args.models, MODELS)
    tmp = tempfile.mkdtemp()
    print(f"{'model':<22} {'tool':<9} {'nodes':>6} {'glue':>5} {'time s':>7} {'RSS MiB':>8} {'time ratio':>10} {'RSS ratio':>9}")
    totals = {tool: [0.0, 0] for tool in ("onnxkit", "onnxsim", "onnxslim")}
    for name in names:
        src = os.path.join(folder, name + ".onnx")
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
        size = os.path.getsize(src) / (1 << 20)
        bound = f"  size {size:.0f} MiB, RSS bound {rss_bound(size):.0f} MiB" if size > BIG_MIB else ""
        print(f"{name:<22} {'original':<9} {nodes:>6} {glue:>5}{bound}")
        base_t, base_r = results["onnxkit"]
        for tool in commands:
            t, r = results[tool]
            nodes, glue = node_summary(outs[tool])
            totals[tool][0] += t
            totals[tool][1] += nodes
            over = "  over the bound" if tool == "onnxkit" and size > BIG_MIB and r > rss_bound(size) else ""
            print(f"{'':<22} {tool:<9} {nodes:>6} {glue:>5} {t:>7.2f} {r:>8.0f} {base_t / t:>10.2f} {base_r / r:>9.2f}{over}")
    base_t = totals["onnxkit"][0]
    for tool, (t, nodes) in totals.items():
        print(f"{'total' if tool == 'onnxkit' else '':<22} {tool:<9} {nodes:>6} {'':>5} {t:>7.2f} {'':>8} {base_t / t:>10.2f}")
    print("\nratios are onnxkit / peer (below 1: onnxkit faster or smaller). onnxkit's time includes its numeric check"
          " (one random input through original and result); onnxsim's includes its own check too.")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Wall time and peak RSS of `onnxkit draw` (SVG and HTML) on resnet50, a
Swin-T export (about 6,500 nodes before simplification), a generated graph
of 50,000 nodes and a model with over 2 GiB of external data, against the
issue's targets (Swin-T under 2 s, 50,000 nodes under 30 s, the external
model under 5 s). The peer is Graphviz's `dot` (Debian's graphviz, when
installed) on the same graph: one box per node, edges as drawn by onnxkit;
Netron cannot be run from a command line at all.

usage: bench/draw_bench.py [--onnxkit build/onnxkit] [--work build/bench-draw] [--runs 3]
                           [--dot-timeout 300] [--skip-dot]

Models are made once in --work: resnet50 and Swin-T by Debian's torch
(tests/models/export_zoo.py), the 50,000-node graph by this script, the
external-data model by bench/make_large_model.py --sparse (holes: no disk
writes; `draw` does not read weights unless --weight-stats)."""

import argparse
import os
import shutil
import subprocess
import sys
import time

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np

from common import DEBIAN_PYTHON, ROOT, onnxkit_binary

sys.path.insert(0, os.path.join(ROOT, "tests", "models"))


# A child's peak RSS as wait4 reports it starts from its parent's at fork
# time, and this script holds models in memory: a small interpreter starts
# each measured run instead.
MEASURE = """
import os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
_, status, usage = os.wait4(proc.pid, 0)
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(proc.stderr.read().decode()[-2000:])
print(time.perf_counter() - start, usage.ru_maxrss / 1024)
"""


def measure(cmd):
    """(seconds, peak RSS in MiB) of one run of cmd."""
    out = subprocess.run([DEBIAN_PYTHON, "-c", MEASURE, *cmd], check=True, capture_output=True, text=True).stdout
    seconds, rss = out.split()
    return float(seconds), float(rss)


def node_count(model):
    code = f"import onnx; print(len(onnx.load({model!r}, load_external_data=False).graph.node))"
    return int(subprocess.run([DEBIAN_PYTHON, "-c", code], check=True, capture_output=True, text=True).stdout)


def zoo_model(name, work):
    path = os.path.join(work, name + ".onnx")
    if not os.path.exists(path):
        code = f"import sys; sys.path.insert(0, {os.path.join(ROOT, 'tests', 'models')!r}); import export_zoo; export_zoo.export({name!r}, {work!r})"
        subprocess.run([DEBIAN_PYTHON, "-c", code], check=True, capture_output=True)
    return path


def generated_model(work, nodes=50_000):
    """A transformer-like stack: blocks of 25 nodes (LayerNorm as
    ReduceMean/Sub/Pow/..., attention-like MatMuls, Shape glue feeding a
    Reshape, a residual Add), named by scope like torch exports."""
    path = os.path.join(work, f"generated_{nodes}.onnx")
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(0)
    d = 16
    inits = [numpy_helper.from_array(rng.standard_normal((d, d)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array([1, -1, d], np.int64), "shape3"),
             numpy_helper.from_array(np.array([-1], np.int64), "axes"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(1e-5, np.float32), "eps")]
    body = []
    x = "x"
    block = 0
    while len(body) + 25 <= nodes:
        s = f"/layers.{block}"

        def node(op, inputs, name, **attrs):
            out = f"{s}/{name}_output_0"
            body.append(helper.make_node(op, inputs, [out], name=f"{s}/{name}", **attrs))
            return out

        mean = node("ReduceMean", [x], "norm/ReduceMean", axes=[-1])
        centred = node("Sub", [x, mean], "norm/Sub")
        sq = node("Pow", [centred, "two"], "norm/Pow")
        var = node("ReduceMean", [sq], "norm/ReduceMean_1", axes=[-1])
        var = node("Add", [var, "eps"], "norm/Add")
        std = node("Sqrt", [var], "norm/Sqrt")
        h = node("Div", [centred, std], "norm/Div")
        q = node("MatMul", [h, "w"], "attn/q/MatMul")
        k = node("MatMul", [h, "w"], "attn/k/MatMul")
        v = node("MatMul", [h, "w"], "attn/v/MatMul")
        kt = node("Transpose", [k], "attn/Transpose", perm=[0, 2, 1])
        scores = node("MatMul", [q, kt], "attn/MatMul")
        probs = node("Softmax", [scores], "attn/Softmax", axis=-1)
        ctx = node("MatMul", [probs, v], "attn/MatMul_1")
        shp = node("Shape", [x], "attn/Shape")
        dim = node("Gather", [shp, "axes"], "attn/Gather", axis=0)
        tgt = node("Concat", [dim, "axes", dim], "attn/Concat", axis=0)
        ctx = node("Reshape", [ctx, "shape3"], "attn/Reshape")
        ctx = node("Expand", [ctx, tgt], "attn/Expand")
        o = node("MatMul", [ctx, "w"], "attn/out/MatMul")
        x1 = node("Add", [x, o], "Add")
        f = node("MatMul", [x1, "w"], "mlp/fc1/MatMul")
        f = node("Relu", [f], "mlp/Relu")
        f = node("MatMul", [f, "w"], "mlp/fc2/MatMul")
        x = node("Add", [x1, f], "Add_1")
        block += 1
    graph = helper.make_graph(body, "generated", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, d])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 8, d])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def large_model(work):
    path = os.path.join(work, "large_external.onnx")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_large_model.py"), path, "--size-gib", "2.5",
                        "--sparse"], check=True, capture_output=True)
    return path


def dot_file(model, out):
    """The graph as Graphviz sees it: a box per node (op type and name) and
    graph inputs/outputs, an edge per tensor read; Constants folded as onnxkit does."""
    graph = onnx.load(model, load_external_data=False).graph
    lines = ["digraph g {", "node [shape=box fontname=monospace fontsize=11];"]
    constants = {t.name for t in graph.initializer}
    folded = {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    producer = {i.name: f"i{k}" for k, i in enumerate(graph.input) if i.name not in constants}
    for k, i in enumerate(graph.input):
        if i.name not in constants:
            lines.append(f'i{k} [label="{i.name}" shape=oval];')
    for k, n in enumerate(graph.node):
        if n.op_type == "Constant":
            continue
        lines.append(f'n{k} [label="{n.op_type}\\n{n.name}"];')
        for o in n.output:
            producer[o] = f"n{k}"
    for k, n in enumerate(graph.node):
        if n.op_type == "Constant":
            continue
        for i in n.input:
            if i in producer and i not in folded:
                lines.append(f"{producer[i]} -> n{k};")
    for k, o in enumerate(graph.output):
        lines.append(f'o{k} [label="{o.name}" shape=oval];')
        if o.name in producer:
            lines.append(f"{producer[o.name]} -> o{k};")
    lines.append("}")
    with open(out, "w") as f:
        f.write("\n".join(lines))
    return out


def time_dot(dot, work, name, timeout):
    if dot is None:
        return None
    source = dot_file(os.path.join(work, name), os.path.join(work, name + ".dot"))
    start = time.perf_counter()
    try:
        subprocess.run([dot, "-Tsvg", "-o", os.devnull, source], check=True, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return float("inf")
    return time.perf_counter() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--onnxkit", default=onnxkit_binary())
    p.add_argument("--work", default=os.path.join(ROOT, "build", "bench-draw"))
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--dot-timeout", type=float, default=300)
    p.add_argument("--skip-dot", action="store_true")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    dot = None if args.skip_dot else shutil.which("dot")

    cases = [
        ("resnet50", zoo_model("resnet50", args.work), [], 2.0),
        ("swin_t", zoo_model("swin_t", args.work), [], 2.0),
        ("generated 50k nodes", generated_model(args.work), [], 30.0),
        ("generated 50k, --collapse 1", generated_model(args.work), ["--collapse", "1"], 30.0),
        ("2.5 GiB external data", large_model(args.work), [], 5.0),
        ("2.5 GiB external, --weight-stats", large_model(args.work), ["--weight-stats"], None),
    ]
    print(f"{'model':<34}{'nodes':>8}{'format':>7}{'seconds':>9}{'MiB':>8}{'target s':>10}{'dot s':>9}{'dot/ours':>9}")
    for label, model, flags, target in cases:
        nodes = node_count(model)
        dot_seconds = time_dot(dot, args.work, os.path.basename(model), args.dot_timeout) if not flags else None
        for ext in ("svg", "html"):
            out = os.path.join(args.work, f"out.{ext}")
            runs = [measure([args.onnxkit, "draw", model, "-o", out, *flags]) for _ in range(args.runs)]
            seconds = sorted(s for s, _ in runs)[len(runs) // 2]
            rss = max(r for _, r in runs)
            ok = "" if target is None else (f"{target:.0f} ok" if seconds < target else f"{target:.0f} MISSED")
            dot_text = "" if dot_seconds is None else (f">{args.dot_timeout:.0f}" if dot_seconds == float("inf") else f"{dot_seconds:.1f}")
            ratio = "" if dot_seconds is None or ext == "html" else (
                f">{args.dot_timeout / seconds:.0f}" if dot_seconds == float("inf") else f"{dot_seconds / seconds:.1f}")
            print(f"{label:<34}{nodes:>8}{ext:>7}{seconds:>9.2f}{rss:>8.0f}{ok:>10}{dot_text if ext == 'svg' else '':>9}{ratio:>9}",
                  flush=True)


if __name__ == "__main__":
    main()

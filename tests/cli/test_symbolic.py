#!/usr/bin/env python3
"""End-to-end tests of symbolic shape inference (`shapes`, `simplify`,
`info`) on real exports with a symbolic batch, made at test time by
tests/models/export_zoo.py. The truth is the shapes and values the model
produces when run at batch 2 and 3, and PyTorch's outputs.

usage: test_symbolic.py --onnxkit PATH [unittest args]"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import export_zoo  # noqa: E402
from shape_files import evaluate, node_output_shapes  # noqa: E402

ARGS = None
ZOO = None  # a temp dir holding the exports


def onnxkit(*args):
    return subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=900)


def model_path(name):
    export_zoo.export(name, ZOO.name, 17)
    return os.path.join(ZOO.name, name + ".onnx")


def run_outputs(model, feeds, out_dir):
    args = ["run", model, "--output-dir", out_dir]
    for name, array in feeds.items():
        path = os.path.join(out_dir, name + ".in.npy")
        np.save(path, array)
        args += ["--input", f"{name}={path}"]
    proc = onnxkit(*args)
    assert proc.returncode == 0, proc.stderr
    outputs = onnx.load(model, load_external_data=False).graph.output
    return {o.name: np.load(os.path.join(out_dir, f"output_{i}.npy")) for i, o in enumerate(outputs)}


class GptDecoderShapes(unittest.TestCase):
    """Attention head splits (a Reshape to a computed shape) lose their shapes
    in ONNX's inference; with the symbolic rules every value has one, and each
    one is the shape the value has when the model runs at batch 2."""

    def test_every_value_gets_its_true_shape(self):
        model = model_path("gpt_decoder")
        with tempfile.TemporaryDirectory() as tmp:
            shaped = os.path.join(tmp, "shaped.onnx")
            proc = onnxkit("shapes", model, shaped)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            shapes = node_output_shapes(onnx.load(shaped, load_external_data=False), with_graph_outputs=False)
            missing = [name for name, dims in shapes.items() if dims is None]
            self.assertEqual(missing, [], f"{len(missing)} of {len(shapes)} values without a shape")
            # The truth: every value made an output, the model run at batch 2.
            every = os.path.join(tmp, "every.onnx")
            proc = onnxkit("edit", model, every, "--outputs-all")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            ids = np.random.default_rng(0).integers(0, 1000, size=(2, 64)).astype(np.int64)
            actual = run_outputs(every, {"input_ids": ids}, tmp)
            checked = 0
            for name, dims in shapes.items():
                if name not in actual or None in dims:
                    continue
                self.assertEqual([evaluate(d, 2) for d in dims], list(actual[name].shape), name)
                checked += 1
            self.assertGreater(checked, 0.9 * len(shapes))


class ShuffleNetDynamicBatch(unittest.TestCase):
    """The channel shuffle computes view(batch, 2, C/2, H, W) from Shape(x):
    with the arithmetic over the batch folded, no Shape node remains and the
    model still matches PyTorch at batch 1 and 3."""

    def test_glue_folds_and_outputs_match_torch(self):
        model = model_path("shufflenet_v2_x1_0")
        before = len(onnx.load(model, load_external_data=False).graph.node)
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "sim.onnx")
            proc = onnxkit("simplify", model, out)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            nodes = onnx.load(out).graph.node
            ops = [n.op_type for n in nodes]
            self.assertNotIn("Shape", ops)
            # OnnxSlim 0.1.98 leaves 186 nodes on this export (issue 23).
            self.assertLessEqual(len(nodes), 186, f"{before} -> {len(nodes)}")
            torch_model, _ = export_zoo.build("shufflenet_v2_x1_0")
            for batch in (1, 3):
                x = export_zoo.smooth_images(batch)
                with torch.no_grad():
                    ref = torch_model(x).numpy()
                ours = run_outputs(out, {"input": x.numpy()}, tmp)["output"]
                self.assertEqual(ours.shape, ref.shape)
                self.assertLessEqual(float(np.abs(ours - ref).max()), 1e-3 * max(1.0, float(np.abs(ref).max())))


class InfoCountsEveryNode(unittest.TestCase):
    """`info` counts the cost of every node of a dynamic-batch decoder: the
    attention MatMuls behind computed Reshapes are no longer left out."""

    def test_no_node_uncounted(self):
        proc = onnxkit("info", model_path("gpt_decoder"), "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        info = json.loads(proc.stdout)
        self.assertEqual(info["compute"]["nodes_without_shapes"], 0)


def main():
    global ARGS, ZOO
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    ARGS, rest = parser.parse_known_args()
    ZOO = tempfile.TemporaryDirectory()
    try:
        unittest.main(argv=[sys.argv[0]] + rest)
    finally:
        ZOO.cleanup()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""End-to-end tests of `onnxkit shapes` against ONNX Runtime's symbolic shape
inference (onnxruntime.tools.symbolic_shape_infer) on a small Swin
Transformer exported at test time: torchvision's own SwinTransformer class
with fewer and narrower blocks, on 100x100 images, so the window padding
(F.pad by (7 - W % 7) % 7) and the shifted-window Roll are exported as in
swin_t, in seconds instead of minutes.

Two truths: ORT's count of tensors with a full shape (onnxkit must shape at
least those) and the shapes the tensors really have when ORT runs the model
at batch 2 (every dim onnxkit writes must evaluate to it).

usage: test_shapes.py --onnxkit PATH (run by the test venv's Python, which has
onnxruntime; exit 77, skipped, without it)"""

import argparse
import os
import subprocess
import sys
import tempfile
import unittest

SKIP = 77
ARGS = None
TMP = None

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    import torchvision
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
except ImportError as e:  # not the test venv
    print(f"skipped: {e}")
    sys.exit(SKIP)

from shape_files import evaluate, node_output_shapes  # noqa: E402


def onnxkit(*args):
    return subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=600)


def small_swin():
    """Swin-T's structure (patch 4, window 7, shifted windows, patch merging)
    at embed 24, depths [2, 2]: 100x100 images give 25x25 then 13x13 tokens,
    so both stages pad their windows."""
    torch.manual_seed(0)
    return torchvision.models.swin_transformer.SwinTransformer(
        patch_size=[4, 4], embed_dim=24, depths=[2, 2], num_heads=[2, 4], window_size=[7, 7],
        stochastic_depth_prob=0.0, num_classes=10).eval()


def export_small_swin():
    path = os.path.join(TMP.name, "small_swin.onnx")
    if not os.path.exists(path):
        x = torch.randn(1, 3, 100, 100)
        torch.onnx.export(small_swin(), (x,), path, input_names=["input"], output_names=["logits"],
                          opset_version=17, dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    return path


def full(dims):
    return dims is not None and None not in dims


def actual_shapes(path, batch):
    """Every node output's shape when ORT runs the model (all of them made outputs)."""
    model = onnx.load(path)
    names = [o for n in model.graph.node for o in n.output if o]
    known = {o.name for o in model.graph.output}
    for name in names:
        if name not in known:
            model.graph.output.append(onnx.ValueInfoProto(name=name))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).standard_normal((batch, 3, 100, 100)).astype(np.float32)
    outs = session.run(names, {"input": x})
    return {name: list(np.asarray(v).shape) for name, v in zip(names, outs)}


class SmallSwinShapes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = export_small_swin()
        cls.actual = actual_shapes(cls.model, 2)
        ort_model = SymbolicShapeInference.infer_shapes(onnx.load(cls.model, load_external_data=False),
                                                        auto_merge=True)
        cls.ort = node_output_shapes(ort_model)

    def shapes(self, *flags):
        out = os.path.join(TMP.name, "shaped.onnx")
        proc = onnxkit("shapes", self.model, out, *flags)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return node_output_shapes(onnx.load(out, load_external_data=False))

    def test_shapes_every_tensor_ort_shapes(self):
        ours = self.shapes()
        ort_full = [n for n, d in self.ort.items() if full(d)]
        self.assertGreater(len(ort_full), 500)  # the export is Swin-like, not trivial
        missing = [n for n in ort_full if not full(ours.get(n))]
        self.assertEqual(len(missing), 0,
                         f"{len(missing)} of the {len(ort_full)} tensors ORT shapes have no full shape: {missing[:5]}")
        print(f"\nsmall swin: onnxkit {sum(map(full, ours.values()))}, ORT {len(ort_full)} of {len(ours)} tensors",
              file=sys.stderr)

    def test_every_dim_is_the_true_one(self):
        ours = self.shapes()
        checked = 0
        for name, dims in ours.items():
            if not full(dims) or name not in self.actual:
                continue
            self.assertEqual([evaluate(d, 2) for d in dims], self.actual[name], name)
            checked += 1
        self.assertEqual(checked, len(ours))
        # Where ORT knows a number, it is the same number.
        for name, dims in self.ort.items():
            if dims is None or ours.get(name) is None or len(dims) != len(ours[name]):
                continue
            for a, b in zip(dims, ours[name]):
                if isinstance(a, int):
                    self.assertEqual(a, b, name)

    def test_input_shape_binds_the_batch(self):
        ours = self.shapes("--input-shape", "input:2,3,100,100")
        for name, dims in ours.items():
            self.assertTrue(full(dims) and all(isinstance(d, int) for d in dims), f"{name}: {dims}")
            self.assertEqual(dims, self.actual[name], name)
        # A symbol renames the batch everywhere it flows.
        named = self.shapes("--input-shape", "input:N,3,100,100")
        self.assertTrue(any(isinstance(d, str) and "N" in d for dims in named.values() if dims for d in dims))
        self.assertFalse(any(isinstance(d, str) and "batch" in d for dims in named.values() if dims for d in dims))

    def test_input_shape_errors(self):
        out = os.path.join(TMP.name, "never.onnx")
        proc = onnxkit("shapes", self.model, out, "--input-shape", "input")
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertIn("NAME:D0,D1", proc.stderr)
        proc = onnxkit("shapes", self.model, out, "--input-shape", "image:1,3,100,100")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("'image' is not an input", proc.stderr)
        proc = onnxkit("shapes", self.model, out, "--input-shape", "input:1,3,100")
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("3 dims given, the model declares 4", proc.stderr)
        self.assertFalse(os.path.exists(out))


def main():
    global ARGS, TMP
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    ARGS, rest = parser.parse_known_args()
    TMP = tempfile.TemporaryDirectory()
    try:
        unittest.main(argv=[sys.argv[0]] + rest)
    finally:
        TMP.cleanup()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""End-to-end tests of `onnxkit simplify` on models exported by Debian's torch
(tests/models/export_models.py, and two of tests/models/export_zoo.py's,
exported into --zoo when missing). The truth is PyTorch's output for the
same input, Python onnx's checker for validity, and the seeds' expectations
for what the glue must become.

usage: test_simplify.py --onnxkit PATH --models DIR [--zoo DIR] [--onnx-python PYTHON] [unittest args]"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import export_zoo  # noqa: E402

ARGS = None
GLUE_OPS = {"Shape", "Gather", "Slice", "Concat", "Unsqueeze", "Squeeze", "Constant", "Cast"}


def onnxkit(*args):
    return subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=900)


def run_model(model, input_file, out_dir):
    name = onnx.load(model, load_external_data=False).graph.input[0].name
    proc = onnxkit("run", model, "--input", f"{name}={input_file}", "--output-dir", out_dir)
    assert proc.returncode == 0, proc.stderr
    return np.load(os.path.join(out_dir, "output_0.npy"))


def initializer(graph, name):
    for t in graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    return None


def close_to(test, ours, ref):
    test.assertEqual(ours.shape, ref.shape)
    bound = 1e-4 * max(1.0, float(np.abs(ref).max()))
    test.assertLessEqual(float(np.abs(ours - ref).max()), bound)


class Seed002DynamicBatch(unittest.TestCase):
    """Upsample((8, 8)) and x.view(x.size(0), -1) with a symbolic batch: the
    glue must become a Resize with constant scales and one Reshape with a
    constant shape, and the model must still take any batch."""

    def test_glue_becomes_constants_and_any_batch_still_runs(self):
        for opset in (13, 17):
            stem = os.path.join(ARGS.models, f"seed002_opset{opset}")
            with self.subTest(opset=opset), tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "sim.onnx")
                proc = onnxkit("simplify", stem + ".onnx", out)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                model = onnx.load(out)
                onnx.checker.check_model(model)
                ops = [n.op_type for n in model.graph.node]
                self.assertFalse(GLUE_OPS & set(ops), ops)
                self.assertEqual(ops.count("Reshape"), 1)
                reshape = next(n for n in model.graph.node if n.op_type == "Reshape")
                target = initializer(model.graph, reshape.input[1])
                self.assertIsNotNone(target, "the Reshape's shape is not a constant")
                self.assertIn(target.tolist(), ([0, 4096], [-1, 4096]))
                resize = next(n for n in model.graph.node if n.op_type == "Resize")
                self.assertEqual(len(resize.input), 3, "Resize still has sizes")
                scales = initializer(model.graph, resize.input[2])
                self.assertEqual(scales.tolist(), [1.0, 1.0, 2.0, 2.0])  # 4x4 after two pools, to 8x8
                batch = model.graph.input[0].type.tensor_type.shape.dim[0]
                self.assertEqual(batch.dim_param, "batch")
                close_to(self, run_model(out, stem + ".input.npy", os.path.join(tmp, "b1")), np.load(stem + ".torch.npy"))
                close_to(self, run_model(out, stem + ".input3.npy", os.path.join(tmp, "b3")), np.load(stem + ".torch3.npy"))

    def test_input_shape_fixes_the_batch(self):
        stem = os.path.join(ARGS.models, "seed002_opset13")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "sim.onnx")
            proc = onnxkit("simplify", stem + ".onnx", out, "--input-shape", "input:1,3,32,32")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            model = onnx.load(out)
            dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
            self.assertEqual(dims, [1, 3, 32, 32])
            reshape = next(n for n in model.graph.node if n.op_type == "Reshape")
            self.assertIn(initializer(model.graph, reshape.input[1]).tolist(), ([0, 4096], [-1, 4096], [1, 4096]))
            close_to(self, run_model(out, stem + ".input.npy", os.path.join(tmp, "o")), np.load(stem + ".torch.npy"))


class RealModels(unittest.TestCase):
    def test_every_exported_model_simplifies_and_still_matches_pytorch(self):
        models = sorted(glob.glob(os.path.join(ARGS.models, "*.onnx")))
        self.assertTrue(models)
        for model in models:
            stem = model[: -len(".onnx")]
            with self.subTest(model=os.path.basename(model)), tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "sim.onnx")
                proc = onnxkit("simplify", model, out)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn("max abs diff", proc.stdout)
                before, after = onnx.load(model), onnx.load(out)
                onnx.checker.check_model(after)
                self.assertLessEqual(len(after.graph.node), len(before.graph.node))
                self.assertEqual([i.name for i in after.graph.input], [i.name for i in before.graph.input])
                self.assertEqual([o.name for o in after.graph.output], [o.name for o in before.graph.output])
                close_to(self, run_model(out, stem + ".input.npy", os.path.join(tmp, "o")), np.load(stem + ".torch.npy"))

    def test_weights_listed_as_inputs_fold_only_once_frozen(self):
        """An old-style export (every weight also a graph input, BatchNormalization
        unfolded): its weights are inputs a caller may feed, so simplify keeps
        the BatchNormalization and says why; with --freeze-initializers they are
        constants and it fuses into the Conv. PyTorch's output both times."""
        stem = os.path.join(ARGS.models, "legacy_inputs_opset17")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "sim.onnx")
            proc = onnxkit("simplify", stem + ".onnx", out)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("--freeze-initializers", proc.stdout)
            self.assertIn("BatchNormalization", [n.op_type for n in onnx.load(out).graph.node])
            proc = onnxkit("simplify", stem + ".onnx", out, "--freeze-initializers")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            after = onnx.load(out)
            onnx.checker.check_model(after, full_check=True)
            self.assertNotIn("BatchNormalization", [n.op_type for n in after.graph.node])
            self.assertEqual([i.name for i in after.graph.input], ["input"])
            close_to(self, run_model(out, stem + ".input.npy", os.path.join(tmp, "o")), np.load(stem + ".torch.npy"))

    def test_output_is_byte_identical_from_run_to_run(self):
        model = os.path.join(ARGS.models, "bert_encoder_opset17.onnx")
        with tempfile.TemporaryDirectory() as tmp:
            outs = [os.path.join(tmp, f"{k}.onnx") for k in range(2)]
            for out in outs:
                proc = onnxkit("simplify", model, out, "--check", "0")
                self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(outs[0], "rb") as a, open(outs[1], "rb") as b:
                self.assertEqual(a.read(), b.read())


class Shapes(unittest.TestCase):
    def test_value_info_agrees_with_python_onnx_inference(self):
        for name in ("resnet18_opset13", "bert_encoder_opset17", "seed002_opset13"):
            model = os.path.join(ARGS.models, name + ".onnx")
            with self.subTest(model=name), tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "shapes.onnx")
                proc = onnxkit("shapes", model, out)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                ours = {vi.name: vi.type for vi in onnx.load(out).graph.value_info}
                theirs = {vi.name: vi.type for vi in onnx.shape_inference.infer_shapes(onnx.load(model)).graph.value_info}
                outputs = {o.name for o in onnx.load(model).graph.output}
                produced = {v for n in onnx.load(model).graph.node for v in n.output if v} - outputs
                self.assertEqual(set(ours), set(theirs) & produced)
                # Ours may know more (symbolic rules: a shape where theirs has
                # none, "batch" where theirs made up unk__0), never differ.
                for value, type_ in theirs.items():
                    if value not in ours:
                        continue
                    mine = ours[value].tensor_type
                    self.assertEqual(mine.elem_type, type_.tensor_type.elem_type, value)
                    if not type_.tensor_type.HasField("shape"):
                        continue
                    self.assertEqual(len(mine.shape.dim), len(type_.tensor_type.shape.dim), value)
                    for a, b in zip(mine.shape.dim, type_.tensor_type.shape.dim):
                        if b.HasField("dim_value"):
                            self.assertEqual(a.dim_value, b.dim_value, value)
                        elif b.dim_param and not b.dim_param.startswith("unk__"):
                            self.assertEqual(a.dim_param, b.dim_param, value)


def conv_bn_model(path):
    """Conv then BatchNormalization with random weights: fusing them changes
    the rounding, so a check with zero tolerance must catch it."""
    rng = np.random.default_rng(0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 16])
    weights = [
        numpy_helper.from_array(rng.standard_normal((16, 8, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 16).astype(np.float32), "scale"),
        numpy_helper.from_array(rng.uniform(-0.2, 0.2, 16).astype(np.float32), "bias"),
        numpy_helper.from_array(rng.uniform(-0.1, 0.1, 16).astype(np.float32), "mean"),
        numpy_helper.from_array(rng.uniform(0.5, 2.0, 16).astype(np.float32), "var"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["y"], name="bn"),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=weights)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def zoo_model(name):
    """The export of export_zoo's NAME in --zoo (exported first if missing)."""
    os.makedirs(ARGS.zoo, exist_ok=True)
    export_zoo.export(name, ARGS.zoo)
    return os.path.join(ARGS.zoo, name + ".onnx")


def run_inputs(model, arrays, out_dir):
    """onnxkit run on NAME -> array inputs; output 0."""
    os.makedirs(out_dir, exist_ok=True)
    flags = []
    for name, array in arrays.items():
        path = os.path.join(out_dir, name + ".npy")
        np.save(path, array)
        flags += ["--input", f"{name}={path}"]
    proc = onnxkit("run", model, *flags, "--output-dir", out_dir)
    assert proc.returncode == 0, proc.stderr
    return np.load(os.path.join(out_dir, "output_0.npy"))


class NoFlags(unittest.TestCase):
    """Exports the check's random inputs cannot run as they used to (symbolic
    dims as 2, integers below 10) simplify with no flags: the check picks
    sizes and values the original runs on. PyTorch's outputs are the truth."""

    def test_dynamic_height_and_width_under_pooling_windows(self):
        # At 2 x 2 the first 3x3 stride-2 Conv has no room; at 224 and 64 the model runs.
        src = zoo_model("squeezenet1_1_dynamic_hw")
        torch_model, _ = export_zoo.build("squeezenet1_1_dynamic_hw")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "sim.onnx")
            proc = onnxkit("simplify", src, out)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("check inputs: height, width = ", proc.stdout)
            after = onnx.load(out)
            onnx.checker.check_model(after)
            self.assertLess(len(after.graph.node), len(onnx.load(src).graph.node))  # the Identity nodes go
            dims = [d.dim_param or d.dim_value for d in after.graph.input[0].type.tensor_type.shape.dim]
            self.assertEqual(dims, ["batch", 3, "height", "width"])
            for shape in ((1, 3, 224, 224), (2, 3, 64, 96)):
                with self.subTest(shape=shape):
                    x = np.random.default_rng(len(shape)).random(shape, dtype=np.float32)
                    with torch.no_grad():
                        expected = torch_model(torch.from_numpy(x)).numpy()
                    close_to(self, run_inputs(out, {"input": x}, os.path.join(tmp, "x".join(map(str, shape)))), expected)

    def test_sample_rate_scalar_choosing_an_if_branch(self):
        # A random sample rate (below 10) takes the 8 kHz branch, whose frames
        # of 256 do not divide 2 samples; 16000 is what the graph compares the
        # rate with, and audio of 512 samples runs in both branches.
        src = zoo_model("vad_sample_rate")
        torch_model, _ = export_zoo.build("vad_sample_rate")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "sim.onnx")
            proc = onnxkit("simplify", src, out)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("sample_rate = 16000", proc.stdout)
            self.assertIn("checked on 2 input sets", proc.stdout)  # one per branch
            after = onnx.load(out)
            onnx.checker.check_model(after, full_check=True)
            self.assertEqual([n.op_type for n in after.graph.node].count("If"), 1)  # the rate is an input: both stay
            audio = export_zoo.audio(2, samples=1024).numpy()
            for rate in (16000, 8000):
                with self.subTest(rate=rate):
                    with torch.no_grad():
                        expected = torch_model(torch.from_numpy(audio), torch.tensor(rate)).numpy()
                    actual = run_inputs(out, {"audio": audio, "sample_rate": np.array(rate, np.int64)},
                                        os.path.join(tmp, str(rate)))
                    close_to(self, actual, expected)

    def test_no_input_that_runs_says_what_was_tried(self):
        # A reshape to [-1, 7, 11] runs on no size tried (2 x 2 ... 2 x 1024, 1 x 2 ... 1 x 1024).
        vi = helper.make_tensor_value_info
        graph = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"], name="frames")], "g",
                                  [vi("x", TensorProto.FLOAT, ["batch", "n"])], [vi("y", TensorProto.FLOAT, None)],
                                  [numpy_helper.from_array(np.array([-1, 7, 11], np.int64), "shape")])
        with tempfile.TemporaryDirectory() as tmp:
            src, out = os.path.join(tmp, "frames.onnx"), os.path.join(tmp, "out.onnx")
            onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), src)
            proc = onnxkit("simplify", src, out)
            self.assertEqual(proc.returncode, 1, proc.stdout)
            self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
            for expected in ("none of 20 input sets tried runs", "n as 2, 16, 32", "batch as 2, 1",
                             "Reshape node 'frames'", "--input NAME=FILE", "--input-shape NAME:D0,D1"):
                self.assertIn(expected, proc.stderr)
            self.assertEqual(os.listdir(tmp), ["frames.onnx"])
            proc = onnxkit("simplify", src, out, "--input-shape", "x:1,77")
            self.assertEqual(proc.returncode, 0, proc.stderr)


class Rewrites(unittest.TestCase):
    def test_inception_pad_before_average_pool_folds_into_it(self):
        # torchvision's InceptionA block (Inception-v3's first): avg_pool2d(x, 3, 1, padding=1)
        # exports as a zero Pad and an AveragePool without pads; folded, the pool counts padding.
        import torchvision
        torch.manual_seed(0)
        block = torchvision.models.inception.InceptionA(32, pool_features=8).eval()
        x = torch.rand(1, 32, 17, 17)
        with torch.no_grad():
            expected = block(x).numpy()
        for opset in (13, 17):
            with self.subTest(opset=opset), tempfile.TemporaryDirectory() as tmp:
                src, out = os.path.join(tmp, "block.onnx"), os.path.join(tmp, "sim.onnx")
                torch.onnx.export(block, (x,), src, input_names=["x"], opset_version=opset)
                before = [n.op_type for n in onnx.load(src).graph.node]
                self.assertEqual(before.count("Pad"), 1)
                proc = onnxkit("simplify", src, out)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                after = onnx.load(out)
                ops = [n.op_type for n in after.graph.node]
                self.assertNotIn("Pad", ops)
                # Seven BasicConv2d (Conv, Relu), the pool, the Concat: nothing else is left.
                self.assertEqual({op: ops.count(op) for op in ops}, {"Conv": 7, "Relu": 7, "AveragePool": 1, "Concat": 1})
                pool = next(n for n in after.graph.node if n.op_type == "AveragePool")
                attrs = {a.name: helper.get_attribute_value(a) for a in pool.attribute}
                self.assertEqual(attrs.get("count_include_pad"), 1)
                self.assertEqual(list(attrs.get("pads")), [1, 1, 1, 1])
                close_to(self, run_inputs(out, {"x": x.numpy()}, os.path.join(tmp, "o")), expected)

    def test_peer_rewrites_on_a_torch_export(self):
        # One module with a pattern of each rewrite ported from onnxoptimizer's
        # and OnnxSlim's lists; each must go, and torch's numbers stay.
        class Patterns(torch.nn.Module):
            def forward(self, x, a, b):
                r = torch.relu(torch.relu(x))                                  # eliminate-repeated-unary
                s = r[:, 1:][..., :3]                                          # merge-consecutive-slices
                c = torch.cat([torch.cat([s, s], 1), s], 1)                    # flatten-nested-concats
                m = c.mean(dim=2).unsqueeze(2)                                 # fuse-reduce-unsqueeze
                p = torch.nn.functional.pad(x, (1, 1, 1, 1), value=float("-inf"))
                q = torch.nn.functional.max_pool2d(p, 3, 1)                     # fuse-pad-into-maxpool
                e = torch.einsum("bij,bjk->bik", a, b)                         # einsum-as-matmul
                w = a.reshape(3, 1, 4, 6).transpose(1, 2).reshape(3, 24)        # transpose-as-reshape + merge
                return m, q, e, w
        torch.manual_seed(0)
        inputs = (torch.rand(2, 4, 5, 5) - 0.5, torch.rand(3, 4, 6), torch.rand(3, 6, 2))
        with torch.no_grad():
            expected = [t.numpy() for t in Patterns()(*inputs)]
        for opset in (13, 17):
            with self.subTest(opset=opset), tempfile.TemporaryDirectory() as tmp:
                src, out = os.path.join(tmp, "p.onnx"), os.path.join(tmp, "sim.onnx")
                torch.onnx.export(Patterns(), inputs, src, input_names=["x", "a", "b"], opset_version=opset)
                proc = onnxkit("simplify", src, out)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                ops = [n.op_type for n in onnx.load(out).graph.node]
                counts = {op: ops.count(op) for op in ops}
                for gone in ("Pad", "Einsum", "Unsqueeze", "Transpose"):
                    self.assertNotIn(gone, counts)
                self.assertEqual((counts.get("Relu"), counts.get("Slice"), counts.get("Concat")), (1, 1, 1))
                self.assertEqual(counts.get("Reshape"), 1)
                os.makedirs(os.path.join(tmp, "o"))
                flags = []
                for name, t in zip(("x", "a", "b"), inputs):
                    np.save(os.path.join(tmp, name + ".npy"), t.numpy())
                    flags += ["--input", f"{name}={os.path.join(tmp, name + '.npy')}"]
                proc = onnxkit("run", out, *flags, "--output-dir", os.path.join(tmp, "o"))
                self.assertEqual(proc.returncode, 0, proc.stderr)
                for i, ref in enumerate(expected):
                    close_to(self, np.load(os.path.join(tmp, "o", f"output_{i}.npy")), ref)


def check_with_current_onnx(test, path):
    """Python onnx's full checker on PATH, run by --onnx-python: Debian's onnx
    1.12 knows opsets up to 17 only. Skips when that interpreter is missing."""
    if not ARGS.onnx_python or not os.path.exists(ARGS.onnx_python):
        test.skipTest("no --onnx-python with a current onnx")
    code = "import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)"
    proc = subprocess.run([ARGS.onnx_python, "-c", code, path], capture_output=True, text=True, timeout=300)
    test.assertEqual(proc.returncode, 0, proc.stderr)


class TargetOpset(unittest.TestCase):
    """--target-opset: simplify, convert, check. Opsets above 17 (the newest
    Debian's libonnx converts to) go through onnxkit's own steps; the truth is
    Python onnx's checker on the result and PyTorch's output."""

    def test_resnet18_and_bert_encoder_to_opset_18(self):
        for name in ("resnet18_opset13", "bert_encoder_opset13", "resnet18_opset17"):
            with self.subTest(model=name), tempfile.TemporaryDirectory() as tmp:
                src, out = os.path.join(ARGS.models, name + ".onnx"), os.path.join(tmp, "out.onnx")
                proc = onnxkit("simplify", src, out, "--target-opset", 18)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertIn("converted from opset", proc.stdout)
                model = onnx.load(out)
                self.assertEqual([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")], [18])
                self.assertGreaterEqual(model.ir_version, 8)
                check_with_current_onnx(self, out)
                for node in model.graph.node:
                    if node.op_type.startswith("Reduce") and node.op_type != "ReduceSum":
                        # opset 18 takes the axes as an input, not an attribute
                        self.assertNotIn("axes", [a.name for a in node.attribute], node.name)
                ours = run_model(out, os.path.join(ARGS.models, name + ".input.npy"), os.path.join(tmp, "o"))
                close_to(self, ours, np.load(os.path.join(ARGS.models, name + ".torch.npy")))

    def test_down_to_opset_14_and_refusals(self):
        with tempfile.TemporaryDirectory() as tmp:
            src, out = os.path.join(ARGS.models, "resnet18_opset17.onnx"), os.path.join(tmp, "out.onnx")
            proc = onnxkit("simplify", src, out, "--target-opset", 14)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(onnx.load(out).opset_import[0].version, 14)
            onnx.checker.check_model(onnx.load(out), full_check=True)
            missing = os.path.join(tmp, "never.onnx")
            proc = onnxkit("simplify", src, missing, "--target-opset", 22)
            self.assertEqual(proc.returncode, 1)
            self.assertIn("--target-opset 22", proc.stderr)
            self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
            self.assertFalse(os.path.exists(missing))

class Errors(unittest.TestCase):
    def test_a_failed_check_writes_nothing_and_names_the_output(self):
        with tempfile.TemporaryDirectory() as tmp:
            src, out = os.path.join(tmp, "convbn.onnx"), os.path.join(tmp, "out.onnx")
            conv_bn_model(src)
            exact = ["--rtol", "0", "--atol", "0"]
            proc = onnxkit("simplify", src, out, *exact)
            self.assertEqual(proc.returncode, 1, proc.stdout)
            self.assertIn("output 'y' differs", proc.stderr)
            self.assertIn("nothing written", proc.stderr)
            self.assertFalse(os.path.exists(out))
            self.assertEqual(os.listdir(tmp), ["convbn.onnx"])  # no temporary file left either
            # Checking after each pass names the pass that changed the numbers.
            proc = onnxkit("simplify", src, out, *exact, "--verify-each-pass")
            self.assertEqual(proc.returncode, 1, proc.stdout)
            self.assertIn("after pass fuse-bn-into-conv", proc.stderr)
            # Without that pass the numbers are the same; without the check, anything goes through.
            proc = onnxkit("simplify", src, out, *exact, "--skip", "fuse-bn-into-conv")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            proc = onnxkit("simplify", src, out, *exact, "--check", "0")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("not checked", proc.stdout)
            self.assertEqual(onnx.load(out).graph.output[0].name, "y")

    def test_bad_arguments_name_what_is_wrong(self):
        model = os.path.join(ARGS.models, "seed002_opset13.onnx")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.onnx")
            cases = [
                (["--skip", "fuse-everything"], "fuse-everything"),
                (["--input-shape", "inptu:1,3,32,32"], "did you mean 'input'"),
                (["--input-shape", "input:1,3,32"], "3 dims given"),
                (["--input-shape", "input"], "NAME:D0,D1"),
                (["--keep-dynamic", "--input-shape", "input:1,3,32,32"], "--keep-dynamic: --input-shape would fix dim 0"),
            ]
            for extra, expected in cases:
                with self.subTest(extra=extra):
                    proc = onnxkit("simplify", model, out, *extra)
                    self.assertEqual(proc.returncode, 1, proc.stdout)
                    self.assertIn(expected, proc.stderr)
                    self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
                    self.assertFalse(os.path.exists(out))
            # Symbols are kept: renaming the batch symbol is not fixing it.
            proc = onnxkit("simplify", model, out, "--keep-dynamic", "--input-shape", "input:N,3,32,32")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(onnx.load(out).graph.input[0].type.tensor_type.shape.dim[0].dim_param, "N")
            os.remove(out)
            proc = onnxkit("simplify", os.path.join(tmp, "missing.onnx"), out)
            self.assertEqual(proc.returncode, 1)
            self.assertIn("missing.onnx", proc.stderr)

    def test_a_loop_that_would_not_end_stops_the_check_not_the_command(self):
        # A trip count of 2^62: the check's run of the original hung. Folding
        # leaves the Loop; the check stops at its budget and says so.
        vi = helper.make_tensor_value_info
        body = helper.make_graph(
            [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Add", ["v", "one"], ["v_out"])],
            "body", [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []), vi("v", TensorProto.FLOAT, [1])],
            [vi("c_out", TensorProto.BOOL, []), vi("v_out", TensorProto.FLOAT, [1])],
            [numpy_helper.from_array(np.ones(1, np.float32), "one")])
        graph = helper.make_graph([helper.make_node("Loop", ["n", "", "x"], ["y"], body=body, name="the_loop")], "g",
                                  [vi("x", TensorProto.FLOAT, [1])], [vi("y", TensorProto.FLOAT, [1])],
                                  [numpy_helper.from_array(np.array(2**62, np.int64), "n")])
        with tempfile.TemporaryDirectory() as tmp:
            src, out = os.path.join(tmp, "loop.onnx"), os.path.join(tmp, "out.onnx")
            onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), src)
            proc = onnxkit("simplify", src, out)
            self.assertEqual(proc.returncode, 1, proc.stdout)
            self.assertIn("Loop node 'the_loop'", proc.stderr)
            self.assertIn("sub-graph runs", proc.stderr)
            self.assertIn("--check 0", proc.stderr)
            self.assertFalse(os.path.exists(out))
            proc = onnxkit("simplify", src, out, "--check", "0")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual([n.op_type for n in onnx.load(out).graph.node], ["Loop"])

    def test_a_branch_the_check_did_not_take_must_still_pass_strict_inference(self):
        # Silero VAD's shape: a branch per sample rate. Fixing x to [2, 512]
        # breaks the 8 kHz branch (Add of [2, 512] and a [3, 512] constant
        # cannot broadcast), which the check, fed 16 kHz, never runs. ONNX
        # Runtime 1.32 refuses that result ("Graph attribute inferencing
        # failed: Node (add_8k) Op (Add) [ShapeInferenceError] Incompatible
        # dimensions"); Python onnx 1.13's strict check lets it through.
        vi = helper.make_tensor_value_info
        then_branch = helper.make_graph([helper.make_node("Identity", ["x"], ["t_out"])], "then", [],
                                        [vi("t_out", TensorProto.FLOAT, ["N", 512])])
        else_branch = helper.make_graph([helper.make_node("Add", ["x", "c"], ["e_out"], name="add_8k")], "else", [],
                                        [vi("e_out", TensorProto.FLOAT, ["N", 512])])
        graph = helper.make_graph(
            [helper.make_node("Equal", ["sr", "rate"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["y"], then_branch=then_branch, else_branch=else_branch, name="by_rate")],
            "g", [vi("x", TensorProto.FLOAT, ["N", 512]), vi("sr", TensorProto.INT64, [])],
            [vi("y", TensorProto.FLOAT, ["N", 512])],
            [numpy_helper.from_array(np.array(16000, np.int64), "rate"),
             numpy_helper.from_array(np.ones((3, 512), np.float32), "c")])
        with tempfile.TemporaryDirectory() as tmp:
            src, out = os.path.join(tmp, "vad.onnx"), os.path.join(tmp, "out.onnx")
            onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), src)
            sr = os.path.join(tmp, "sr.npy")
            np.save(sr, np.array(16000, np.int64))
            proc = onnxkit("simplify", src, out, "--input", f"sr={sr}")
            self.assertEqual(proc.returncode, 0, proc.stderr)  # symbolic N: every branch is sound
            onnx.checker.check_model(onnx.load(out), full_check=True)
            os.remove(out)
            proc = onnxkit("simplify", src, out, "--input", f"sr={sr}", "--input-shape", "x:2,512")
            self.assertEqual(proc.returncode, 1, proc.stdout)
            self.assertIn("strict shape inference", proc.stderr)
            self.assertIn("add_8k", proc.stderr)
            self.assertIn("the input shapes given may not suit a branch", proc.stderr)
            self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
            self.assertEqual(sorted(os.listdir(tmp)), ["sr.npy", "vad.onnx"])  # nothing written

    def test_list_passes_and_report(self):
        proc = onnxkit("simplify", "--list-passes")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("resolve-shape-inputs", proc.stdout)
        self.assertIn("fold-constants", proc.stdout)
        model = os.path.join(ARGS.models, "seed002_opset13.onnx")
        with tempfile.TemporaryDirectory() as tmp:
            proc = onnxkit("simplify", model, os.path.join(tmp, "o.onnx"), "--report")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("changes per pass", proc.stdout)
            self.assertIn("Reshape node '/Reshape'", proc.stdout)


# A ~200 MB conv net with inline weights, written by a child process (this
# one stays small): 3x3 convolutions over 512 channels, then a MatMul whose
# weight the runtime would store transposed (N a multiple of 1024).
CONV_NET = """
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
rng = np.random.default_rng(0)
nodes, inits, h = [], [], "x"
for i in range(20):
    w = (rng.standard_normal((512, 512, 3, 3), dtype=np.float32) * 0.02).astype(np.float32)
    inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(np.full(512, 0.01, np.float32), f"b{i}")]
    nodes += [helper.make_node("Conv", [h, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
              helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
    h = f"r{i}"
inits.append(numpy_helper.from_array((rng.standard_normal((512, 4096), dtype=np.float32) * 0.02), "fc"))
nodes += [helper.make_node("GlobalAveragePool", [h], ["pooled"]), helper.make_node("Flatten", ["pooled"], ["flat"]),
          helper.make_node("MatMul", ["flat", "fc"], ["y"])]
graph = helper.make_graph(nodes, "convnet",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 512, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4096])], inits)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
"""

WIDE_MATMUL = """
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
w = np.random.default_rng(0).standard_normal((2500, 21000), dtype=np.float32) * 0.02
graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "wide",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2500])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 21000])],
                          [numpy_helper.from_array(w, "w")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
"""

# One 180 MiB Conv weight read by a Conv whose output goes to a Relu, not a
# BatchNormalization: a fusion pass that reads every Conv's weights before
# looking at the consumer copies it (and a table of int64 per element made it
# three times the weight), 969 MiB peak for the bound's 334.
WIDE_CONV = """
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
w = np.random.default_rng(0).standard_normal((2560, 2048, 3, 3), dtype=np.float32) * 0.01
graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                           helper.make_node("Relu", ["c"], ["y"])], "wide_conv",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2048, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2560, 4, 4])],
                          [numpy_helper.from_array(w, "w")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
"""

# A 176 MiB embedding table read by a Gather of the input ids: constant
# folding that reads a node's inputs in order copies the table before it
# finds the ids are not constant (376 MiB peak for the bound's 328).
EMBEDDING = """
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
table = np.random.default_rng(0).standard_normal((180000, 256), dtype=np.float32)
graph = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["y"])], "embedding",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8, 256])],
                          [numpy_helper.from_array(table, "table")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
"""


def peak_rss_mib(cmd):
    """(exit code, stderr, peak RSS in MiB) of the command, measured by
    /usr/bin/time: a child forked straight from this process (which holds
    other tests' models) would count this process's size in its peak."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, *map(str, cmd)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        return proc.returncode, proc.stderr, int(rss.read().split()[-1]) / 1024


class SimplifyMemory(unittest.TestCase):
    """Peak RSS of simplify, check included, stays within 1.5x the model's
    files + 64 MiB: one load, weights shared with the check's runs, never
    copied (issue 23). A bound on memory, not on time."""

    def assert_within_bound(self, model, files):
        size_mib = sum(os.path.getsize(f) for f in files) / (1 << 20)
        self.assertGreater(size_mib, 150)  # the bound is meant for big models
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "simple.onnx")
            code, err, rss = peak_rss_mib([ARGS.onnxkit, "simplify", model, out])
            self.assertEqual(code, 0, err)
            self.assertTrue(os.path.exists(out))
        bound = 1.5 * size_mib + 64
        self.assertLessEqual(rss, bound, f"{os.path.basename(model)}: peak RSS {rss:.0f} MiB for {size_mib:.0f} MiB "
                                         f"of model, over the bound {bound:.0f} MiB")

    def test_inline_weights(self):
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "convnet.onnx")
            subprocess.run([sys.executable, "-c", CONV_NET, model], check=True)
            self.assert_within_bound(model, [model])

    def test_one_large_inline_weight(self):
        # 210 MB of raw_data in one tensor: read by appending, as protobuf
        # does past its 50 MB reservation, it doubles to 400 MB and is copied.
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "wide.onnx")
            subprocess.run([sys.executable, "-c", WIDE_MATMUL, model], check=True)
            self.assert_within_bound(model, [model])

    def test_one_large_conv_weight(self):
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "wide_conv.onnx")
            subprocess.run([sys.executable, "-c", WIDE_CONV, model], check=True)
            self.assert_within_bound(model, [model])

    def test_large_embedding_table(self):
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "embedding.onnx")
            subprocess.run([sys.executable, "-c", EMBEDDING, model], check=True)
            self.assert_within_bound(model, [model])

    def test_external_data(self):
        make = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "make_transformer.py")
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "transformer.onnx")
            subprocess.run([sys.executable, make, model, "--size-gib", "0.19", "--hidden", "1024", "--heads", "8"],
                           check=True, capture_output=True)
            self.assert_within_bound(model, [model, model + ".data"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--zoo", help="export_zoo's folder (default: zoo beside --models)")
    parser.add_argument("--onnx-python", help="a Python with a current onnx, whose checker knows opsets above 17")
    ARGS, rest = parser.parse_known_args()
    ARGS.zoo = ARGS.zoo or os.path.join(os.path.dirname(os.path.abspath(ARGS.models)), "zoo")
    unittest.main(argv=[sys.argv[0], *rest])

#!/usr/bin/env python3
"""End-to-end tests of `onnxkit convert --to pytorch` with Debian's torch.

Real exports (tests/models/export_models.py: resnet18, mobilenet_v2,
squeezenet1_1, the BERT-like encoder, seed002) and models this file exports
itself (a 2-layer LSTM with a Linear head, an If on a tensor's value, a
data-dependent Loop, a model with asymmetric and SAME padding) are
converted at opsets 13 and 17; the generated module, loaded and run by
torch, must match onnxkit's runtime within max abs 1e-4 * max(1, max |ref|)
and MSE 1e-7, at batch 1 and 3 where the batch is dynamic. Where PyTorch
made the model, its own output is a second, independent truth. The
generated module is exported again with torch.onnx.export and run by
onnxkit; resnet18's state_dict must hold every torchvision Conv2d's weight
under its torchvision name.

usage: test_pytorch.py --onnxkit PATH --models DIR [unittest args]"""

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np
import onnx
import torch
import torchvision
from onnx import TensorProto, helper, numpy_helper
from torch import nn

warnings.filterwarnings("ignore")
ARGS = None
PYTHON = "/usr/bin/python3"  # Debian's, with torch
OPSETS = (13, 17)


def onnxkit(*args):
    return subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=900)


def convert(test, model, out, *extra):
    proc = onnxkit("convert", model, "--to", "pytorch", out, "--python", PYTHON, *extra)
    test.assertEqual(proc.returncode, 0, proc.stderr)
    return proc.stdout


def load_generated(folder):
    spec = importlib.util.spec_from_file_location(f"generated_{abs(hash(folder))}", os.path.join(folder, "model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_generated(folder, *inputs):
    net = load_generated(folder).load()
    with torch.no_grad():
        out = net(*[torch.from_numpy(np.asarray(x)) for x in inputs])
    return [y.numpy() for y in (out if isinstance(out, tuple) else (out,))]


def run_onnxkit(test, model, inputs, tmp):
    """onnxkit's runtime on the same inputs: the truth the check uses."""
    graph = onnx.load(model, load_external_data=False).graph
    names = [i.name for i in graph.input if i.name not in {t.name for t in graph.initializer}]
    args = []
    for k, (name, x) in enumerate(zip(names, inputs)):
        path = os.path.join(tmp, f"in_{k}.npy")
        np.save(path, np.asarray(x))
        args += ["--input", f"{name}={path}"]
    out_dir = os.path.join(tmp, "runtime_out")
    proc = onnxkit("run", model, *args, "--output-dir", out_dir)
    test.assertEqual(proc.returncode, 0, proc.stderr)
    return [np.load(os.path.join(out_dir, f"output_{k}.npy")) for k in range(len(graph.output))]


def assert_close(test, ours, ref, what=""):
    test.assertEqual(ours.shape, ref.shape, what)
    test.assertEqual(ours.dtype, ref.dtype, what)
    if ref.dtype.kind not in "fc":
        np.testing.assert_array_equal(ours, ref, what)
        return
    diff = ours.astype(np.float64) - ref.astype(np.float64)
    bound = 1e-4 * max(1.0, float(np.abs(ref).max()))
    test.assertLessEqual(float(np.abs(diff).max()), bound, what)
    test.assertLess(float(np.mean(diff * diff)), 1e-7, what)


# --- models this file exports ---------------------------------------------------------

class LstmTagger(nn.Module):
    """Two LSTM layers (batch first) and a Linear head on every step."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, 5)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y)


class IfOnValue(nn.Module):
    """A branch on the sign of a sum of the data (an ONNX If)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        if bool(h.sum() > 0):
            y = torch.relu(h) * 2.0
        else:
            y = torch.tanh(h) - 1.0
        return y


class LoopWhile(nn.Module):
    """Residual steps while the mean stays below a bound, at most 6 (an ONNX Loop)."""

    def __init__(self):
        super().__init__()
        self.step = nn.Linear(8, 8)

    def forward(self, x):
        h = x
        i = 0
        while i < 6 and bool(h.mean() < 1.5):
            h = h + torch.sigmoid(self.step(h))
            i += 1
        return h


def padding_model(opset):
    """Convolution and pooling with pads PyTorch cannot apply itself: Conv
    pads [0,1,1,2] (asymmetric), a SAME_UPPER Conv over a symbolic size,
    MaxPool pads [1,0,0,1] (the pad must never win: input below 0),
    AveragePool pads [0,0,1,1] not counting them (count_include_pad=0),
    AveragePool ceil_mode with symmetric pads counting them."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((4, 4, 2, 2)).astype(np.float32), "w2")
    b2 = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b2")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="asym_conv", pads=[0, 1, 1, 2], strides=[1, 2]),
        helper.make_node("Conv", ["c1", "w2", "b2"], ["c2"], name="same_conv", auto_pad="SAME_UPPER", strides=[2, 2]),
        helper.make_node("Sub", ["c2", "ten"], ["low"], name="shift_down"),
        helper.make_node("MaxPool", ["low"], ["m"], name="asym_max", kernel_shape=[3, 2], pads=[1, 0, 0, 1]),
        helper.make_node("AveragePool", ["m"], ["a"], name="asym_avg", kernel_shape=[2, 3], pads=[0, 0, 1, 1]),
        helper.make_node("AveragePool", ["a"], ["y"], name="ceil_avg", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                         ceil_mode=1, count_include_pad=1),
    ]
    ten = numpy_helper.from_array(np.array(10.0, dtype=np.float32), "ten")
    graph = helper.make_graph(nodes, "padding", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w1, w2, b2, ten])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def export_torch(module, inputs, path, opset, dynamic_batch, script=False):
    torch.manual_seed(0)
    module = module.eval()
    if script:
        module = torch.jit.script(module)
    dynamic = {"x": {0: "batch"}, "y": {0: "batch"}} if dynamic_batch else None
    torch.onnx.export(module, inputs, path, input_names=["x"], output_names=["y"], opset_version=opset, dynamic_axes=dynamic)


# --- the tests ------------------------------------------------------------------------

class RealModels(unittest.TestCase):
    """The exports of tests/models/export_models.py, against onnxkit's runtime and against PyTorch."""

    def check_model(self, name, opset):
        stem = os.path.join(ARGS.models, f"{name}_opset{opset}")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "torch_model")
            report = convert(self, stem + ".onnx", out)
            self.assertIn("max abs", report)  # the check ran
            batches = [".input.npy"] + ([".input3.npy"] if os.path.exists(stem + ".input3.npy") else [])
            for suffix in batches:
                x = np.load(stem + suffix)
                ours = run_generated(out, x)
                assert_close(self, ours[0], run_onnxkit(self, stem + ".onnx", [x], tmp)[0], f"{name} {suffix} vs runtime")
                truth = stem + suffix.replace("input", "torch")
                assert_close(self, ours[0], np.load(truth), f"{name} {suffix} vs PyTorch")

    def test_classifiers_encoder_and_seed002(self):
        for name in ("resnet18", "mobilenet_v2", "squeezenet1_1", "bert_encoder", "seed002"):
            for opset in OPSETS:
                with self.subTest(model=name, opset=opset):
                    self.check_model(name, opset)

    def test_resnet18_state_dict_has_torchvision_conv_names(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "r18")
            convert(self, os.path.join(ARGS.models, "resnet18_opset17.onnx"), out, "--no-check")
            state = load_generated(out).load().state_dict()
            convs = [n for n, m in torchvision.models.resnet18().named_modules() if isinstance(m, nn.Conv2d)]
            self.assertEqual(len(convs), 20)
            for conv in convs:  # "layer2.0.downsample.0" -> "layer2_0_downsample_0.weight"
                self.assertIn(conv.replace(".", "_") + ".weight", state)
            conv_weights = [k for k, v in state.items() if k.endswith(".weight") and v.dim() == 4]
            self.assertEqual(len(conv_weights), 20)
            self.assertIn("fc.weight", state)

    def test_generated_file_runs_as_a_script_without_safetensors(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "seed")
            convert(self, os.path.join(ARGS.models, "seed002_opset17.onnx"), out, "--no-check", "--shape", "input:2,3,32,32")
            proc = subprocess.run([PYTHON, os.path.join(out, "model.py")], capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("output torch.float32 (2, 10)", proc.stdout)
            source = open(os.path.join(out, "model.py")).read()
            self.assertNotIn("import onnx", source)
            self.assertIn(".reshape(", source)
            self.assertIn("F.interpolate(", source)
            with open(os.path.join(out, "weights.safetensors"), "rb") as f:
                header = f.read(8)
            self.assertEqual(int.from_bytes(header, "little") % 8, 0)

    def test_reexported_module_runs_in_onnxkit_with_the_same_outputs(self):
        for name in ("resnet18", "bert_encoder", "seed002"):
            with self.subTest(model=name), tempfile.TemporaryDirectory() as tmp:
                stem = os.path.join(ARGS.models, f"{name}_opset17")
                out = os.path.join(tmp, "m")
                convert(self, stem + ".onnx", out, "--no-check")
                x = np.load(stem + ".input.npy")
                net = load_generated(out).load()
                with torch.no_grad():
                    ours = net(torch.from_numpy(x)).numpy()
                again = os.path.join(tmp, "again.onnx")
                dynamic = {"x": {0: "batch"}} if name == "seed002" else None
                torch.onnx.export(net, (torch.from_numpy(x),), again, input_names=["x"], opset_version=17, dynamic_axes=dynamic)
                assert_close(self, run_onnxkit(self, again, [x], tmp)[0], ours, f"{name} re-exported")


class OwnModels(unittest.TestCase):
    """Recurrent, control-flow and padding models exported here, at both opsets."""

    def check(self, make_model, inputs_by_batch, tmp, *extra):
        out = os.path.join(tmp, "converted")
        report = convert(self, make_model, out, *extra)
        self.assertIn("max abs", report)
        for inputs in inputs_by_batch:
            ours = run_generated(out, *inputs)
            ref = run_onnxkit(self, make_model, inputs, tmp)
            for o, r in zip(ours, ref):
                assert_close(self, o, r, f"{os.path.basename(make_model)} batch {inputs[0].shape[0]}")
        return out

    def test_lstm_with_linear_head(self):
        torch.manual_seed(0)
        module = LstmTagger().eval()
        for opset in OPSETS:
            with self.subTest(opset=opset), tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "lstm.onnx")
                export_torch(module, (torch.randn(1, 7, 16),), path, opset, dynamic_batch=True)
                batches = [(torch.randn(n, 7, 16).numpy(),) for n in (1, 3)]
                out = self.check(path, batches, tmp)
                source = open(os.path.join(out, "model.py")).read()
                self.assertEqual(source.count("nn.LSTM("), 2)
                with torch.no_grad():  # and PyTorch's own module
                    assert_close(self, run_generated(out, batches[1][0])[0], module(torch.from_numpy(batches[1][0])).numpy())

    def test_if_on_a_tensor_value(self):
        torch.manual_seed(1)
        module = IfOnValue()
        for opset in OPSETS:
            with self.subTest(opset=opset), tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "if.onnx")
                export_torch(module, (torch.randn(2, 8),), path, opset, dynamic_batch=False, script=True)
                self.assertIn("If", [n.op_type for n in onnx.load(path).graph.node])
                # Inputs that take each branch.
                x = torch.randn(2, 8).numpy()
                with torch.no_grad():
                    h = module.lin(torch.from_numpy(x))
                pos, neg = (x, -x - 10) if float(h.sum()) > 0 else (-x - 10, x)
                out = self.check(path, [(pos.astype(np.float32),), (neg.astype(np.float32),)], tmp)
                self.assertIn("if bool(", open(os.path.join(out, "model.py")).read())
                with torch.no_grad():
                    for v in (pos, neg):
                        assert_close(self, run_generated(out, v.astype(np.float32))[0], module(torch.from_numpy(v.astype(np.float32))).numpy())

    def test_data_dependent_loop(self):
        torch.manual_seed(2)
        module = LoopWhile()
        for opset in OPSETS:
            with self.subTest(opset=opset), tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "loop.onnx")
                export_torch(module, (torch.randn(2, 8),), path, opset, dynamic_batch=False, script=True)
                self.assertIn("Loop", [n.op_type for n in onnx.load(path).graph.node])
                inputs = [(np.full((2, 8), v, dtype=np.float32),) for v in (-3.0, 0.0, 2.0)]  # several, one and no steps
                out = self.check(path, inputs, tmp)
                self.assertRegex(open(os.path.join(out, "model.py")).read(), r"\n\s+(while|for) ")
                with torch.no_grad():
                    for (v,) in inputs:
                        assert_close(self, run_generated(out, v)[0], module(torch.from_numpy(v)).numpy())

    def test_asymmetric_and_same_padding(self):
        for opset in OPSETS:
            with self.subTest(opset=opset), tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "pads.onnx")
                onnx.save(padding_model(opset), path)
                rng = np.random.default_rng(opset)
                batches = [(rng.standard_normal((n, 3, 13, 17)).astype(np.float32),) for n in (1, 3)]
                # The check's inputs take these dims (symbolic ones would take 2: too small a picture).
                out = self.check(path, batches, tmp, "--shape", "x:2,3,13,17")
                source = open(os.path.join(out, "model.py")).read()
                self.assertIn("F.pad(", source)
                self.assertIn("-math.inf", source)  # MaxPool's padding never wins

    def test_check_catches_a_wrong_module(self):
        """The check (and its rounding referee) must fail a module that is
        wrong: a --python that edits model.py before running it pads MaxPool
        with 0 instead of -inf, or shifts the data by 0.1; nothing is written."""
        for mutation in ("s/value=-math.inf/value=0.0/", "s/ - 10.0 / - 10.1 /"):
            with self.subTest(mutation=mutation), tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "pads.onnx")
                onnx.save(padding_model(17), path)
                wrapper = os.path.join(tmp, "python")
                with open(wrapper, "w") as f:
                    f.write(f'#!/bin/sh\nfor a in "$@"; do case "$a" in *model.py) sed -i "{mutation}" "$a";; esac; done\n'
                            f'exec {PYTHON} "$@"\n')
                os.chmod(wrapper, 0o755)
                out = os.path.join(tmp, "out")
                proc = onnxkit("convert", path, "--to", "pytorch", out, "--shape", "x:2,3,13,17", "--python", wrapper)
                self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
                self.assertIn("differs from onnxkit's runtime", proc.stderr)
                self.assertFalse(os.path.exists(out))


class BadInputs(unittest.TestCase):
    def assert_refused(self, model, *needles):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            onnx.save(model, path)
            out = os.path.join(tmp, "out")
            proc = onnxkit("convert", path, "--to", "pytorch", out, "--python", PYTHON)
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
            for needle in needles:
                self.assertIn(needle, proc.stderr)
            self.assertFalse(os.path.exists(out), "a refused conversion wrote its folder")
            self.assertEqual(sorted(os.listdir(tmp)), ["m.onnx"], "temporary files left behind")

    def test_unsupported_op_names_op_node_and_why(self):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
        z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])
        nodes = [helper.make_node("Relu", ["x"], ["r"], name="fine"),
                 helper.make_node("Dropout", ["r", "ratio", "train"], ["y"], name="train_drop"),
                 helper.make_node("Identity", ["x"], ["z"])]
        inits = [numpy_helper.from_array(np.array(0.5, np.float32), "ratio"), numpy_helper.from_array(np.array(True), "train")]
        model = helper.make_model(helper.make_graph(nodes, "g", [x], [y, z], inits), opset_imports=[helper.make_opsetid("", 13)])
        self.assert_refused(model, "Dropout", "train_drop", "random")

    def test_custom_domain_op(self):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
        node = helper.make_node("FastGelu", ["x"], ["y"], name="fused", domain="com.example")
        model = helper.make_model(helper.make_graph([node], "g", [x], [y]),
                                  opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
        self.assert_refused(model, "FastGelu", "fused", "com.example")

    def test_external_data_weights_convert(self):
        with tempfile.TemporaryDirectory() as tmp:
            stem = os.path.join(ARGS.models, "squeezenet1_1_opset13")
            external = os.path.join(tmp, "ext.onnx")
            proc = onnxkit("convert", stem + ".onnx", external, "--external-data")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertTrue(os.path.exists(external + ".data"))
            out = os.path.join(tmp, "torch_ext")
            convert(self, external, out)
            x = np.load(stem + ".input.npy")
            assert_close(self, run_generated(out, x)[0], np.load(stem + ".torch.npy"), "external data")

    def test_usage_errors(self):
        model = os.path.join(ARGS.models, "seed002_opset13.onnx")
        with tempfile.TemporaryDirectory() as tmp:
            proc = onnxkit("convert", model, "--to", "pytorch", os.path.join(tmp, "o"), "--external-data")
            self.assertEqual(proc.returncode, 2, proc.stderr)
            proc = onnxkit("convert", model, os.path.join(tmp, "o.onnx"), "--class-name", "Net")
            self.assertEqual(proc.returncode, 2, proc.stderr)
            proc = onnxkit("convert", model, "--to", "pytorch", os.path.join(tmp, "o"), "--check", "--python", "/nonexistent/python3")
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertIn("cannot import torch", proc.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "o")))
            open(os.path.join(tmp, "file"), "w").close()
            proc = onnxkit("convert", model, "--to", "pytorch", os.path.join(tmp, "file"), "--no-check")
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertIn("not a folder", proc.stderr)

    def test_existing_folder_keeps_other_files_and_gets_both_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            os.mkdir(out)
            open(os.path.join(out, "notes.txt"), "w").write("mine")
            convert(self, os.path.join(ARGS.models, "seed002_opset13.onnx"), out, "--no-check", "--class-name", "Seed")
            self.assertEqual(sorted(os.listdir(out)), ["model.py", "notes.txt", "weights.safetensors"])
            self.assertIn("class Seed(nn.Module)", open(os.path.join(out, "model.py")).read())
            self.assertEqual(sorted(os.listdir(tmp)), ["out"])


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    parser.add_argument("--models", required=True)
    ARGS, rest = parser.parse_known_args()
    torch.set_num_threads(2)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()

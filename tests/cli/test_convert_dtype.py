#!/usr/bin/env python3
"""End-to-end tests of `onnxkit convert --dtype fp16|bf16` on real exports.

The truth: PyTorch's float32 outputs saved beside each export (the converted
model, run by onnxkit, must stay within a relative error of them), ONNX's
checker with strict shape inference (the types of the rewritten graph must
agree everywhere), and ONNX Runtime, which must load every converted model
and, where it has float16 kernels for its ops, give the same outputs.

usage: test_convert_dtype.py --onnxkit PATH --models DIR --zoo DIR [unittest args]
Runs under the test venv (onnxruntime); exit 77 when it is missing."""

import argparse
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper

try:
    import onnxruntime as ort
except ImportError:
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import export_zoo  # noqa: E402

ARGS = None


def onnxkit(*args):
    return subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True)


def relative_error(actual, expected):
    expected = np.asarray(expected, dtype=np.float64)
    return float(np.max(np.abs(np.asarray(actual, dtype=np.float64) - expected)) / max(np.max(np.abs(expected)), 1e-12))


FLOATS = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16}


def elem_types(model, names):
    """Element types of the graph's floating-point inputs or outputs."""
    return [v.type.tensor_type.elem_type for v in names(model.graph) if v.type.tensor_type.elem_type in FLOATS]


class ConvertDtype(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def out(self, name):
        return os.path.join(self.tmp.name, name)

    def convert(self, model, *flags):
        out = self.out("converted.onnx")
        r = onnxkit("convert", model, out, *flags)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("checked against the float32 model", r.stdout)
        onnx.checker.check_model(onnx.load(out), full_check=True)
        return out, r.stdout

    def run_onnxkit(self, model, feeds):
        folder = self.out("io")
        os.makedirs(folder, exist_ok=True)
        args = []
        for name, array in feeds.items():
            path = os.path.join(folder, name.replace("/", "_") + ".npy")
            np.save(path, array)
            args += ["--input", f"{name}={path}"]
        r = onnxkit("run", model, *args, "--output-dir", folder)
        self.assertEqual(r.returncode, 0, r.stderr)
        outputs = onnx.load(model, load_external_data=False).graph.output
        return [np.load(os.path.join(folder, f"output_{k}.npy")) for k in range(len(outputs))]

    def check_against_torch(self, model, stem, flags, tolerance, half_io, mean_tolerance=None):
        out, _ = self.convert(model, *flags)
        converted = onnx.load(out)
        want_io = TensorProto.FLOAT16 if half_io else TensorProto.FLOAT
        if flags[1] == "bf16" and half_io:
            want_io = TensorProto.BFLOAT16
        self.assertLessEqual(set(elem_types(converted, lambda g: g.input)), {want_io})  # token ids stay int64
        self.assertEqual(set(elem_types(converted, lambda g: g.output)), {want_io})
        x = np.load(stem + ".input.npy")
        feed_x = x
        if x.dtype == np.float32 and want_io == TensorProto.FLOAT16:
            feed_x = x.astype(np.float16)
        if x.dtype == np.float32 and want_io == TensorProto.BFLOAT16:  # numpy has no bfloat16: its bits as uint16
            feed_x = (x.view(np.uint32) >> 16).astype(np.uint16)
        name = converted.graph.input[0].name
        (y,) = self.run_onnxkit(out, {name: feed_x})
        if want_io == TensorProto.BFLOAT16:  # written as its bits
            y = (y.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        expected = np.load(stem + ".torch.npy")
        if mean_tolerance is not None:
            mean = float(np.mean(np.abs(y.astype(np.float64) - expected)) / np.mean(np.abs(expected)))
            self.assertLess(mean, mean_tolerance)
        self.assertLess(relative_error(y, expected), tolerance)
        return out, feed_x, expected

    def test_classifiers_and_encoder_in_fp16(self):
        # MobileNetV2's depthwise layers, their weights folded with BatchNorm
        # and every output rounded to float16, lose more: 3e-2 of its logits'
        # largest on this input, as float16 does anywhere (each op computes
        # in float32 and rounds once).
        for model, tolerance in [("resnet18_opset17", 1e-2), ("bert_encoder_opset17", 1e-2),
                                 ("squeezenet1_1_opset13", 1e-2), ("mobilenet_v2_opset13", 4e-2)]:
            with self.subTest(model=model):
                stem = os.path.join(ARGS.models, model)
                out, feed, expected = self.check_against_torch(stem + ".onnx", stem, ["--dtype", "fp16"], tolerance, True)
                sess = ort.InferenceSession(out, providers=["CPUExecutionProvider"])
                try:
                    (got,) = sess.run(None, {sess.get_inputs()[0].name: feed})
                except Exception as e:  # ORT's CPU provider lacks float16 kernels for some ops
                    self.assertIn("NOT_IMPLEMENTED", str(e))
                    continue
                self.assertLess(relative_error(got, expected), tolerance)

    def test_keep_io_types(self):
        stem = os.path.join(ARGS.models, "resnet18_opset13")
        out, _, _ = self.check_against_torch(stem + ".onnx", stem, ["--dtype", "fp16", "--keep-io-types"], 1e-2, False)
        converted = onnx.load(out)
        weights = [t for t in converted.graph.initializer if len(t.dims) == 4]
        self.assertTrue(weights)
        self.assertTrue(all(t.data_type == TensorProto.FLOAT16 for t in weights))
        self.assertEqual(converted.graph.output[0].name, onnx.load(stem + ".onnx").graph.output[0].name)

    def test_bf16_encoder(self):
        stem = os.path.join(ARGS.models, "bert_encoder_opset17")
        self.check_against_torch(stem + ".onnx", stem, ["--dtype", "bf16", "--keep-io-types"], 5e-2, False)

    def test_inputs_that_must_stay_float32(self):
        # seed002 upsamples with Resize, whose scales are float32 in every opset.
        stem = os.path.join(ARGS.models, "seed002_opset13")
        out, _, _ = self.check_against_torch(stem + ".onnx", stem, ["--dtype", "fp16"], 1e-2, True)
        converted = onnx.load(out)
        resize = [n for n in converted.graph.node if n.op_type in ("Resize", "Upsample")]
        self.assertTrue(resize)
        scales = {n.input[2] if n.op_type == "Resize" else n.input[1] for n in resize}
        types = {t.name: t.data_type for t in converted.graph.initializer}
        inferred = onnx.shape_inference.infer_shapes(converted)
        types.update({v.name: v.type.tensor_type.elem_type for v in inferred.graph.value_info})
        for n in converted.graph.node:
            if n.op_type == "Constant":
                types[n.output[0]] = n.attribute[0].t.data_type
        for s in scales - {""}:
            self.assertEqual(types.get(s), TensorProto.FLOAT, s)

    def test_zoo_models(self):
        # An LSTM, a scripted If/Loop, a segmenter with Resize: float16 through
        # recurrences, sub-graphs and float32-only inputs. LR-ASPP's MobileNetV3
        # loses most (its errors grow layer by layer, hardswish and SE gates
        # included): 0.11 of its largest logit at worst, a mean error of 1e-2.
        for name, worst, mean in [("lstm", 2e-2, None), ("control_flow", 2e-2, None),
                                  ("lraspp_mobilenet_v3_large", 0.2, 2e-2)]:
            with self.subTest(model=name):
                model = os.path.join(ARGS.zoo, name + ".onnx")
                if not os.path.exists(model):
                    export_zoo.export(name, ARGS.zoo)
                stem = os.path.join(ARGS.zoo, name)
                if not os.path.exists(stem + ".input.npy") or not os.path.exists(stem + ".torch.npy"):
                    continue  # several inputs or outputs: the check inside convert covers it
                self.check_against_torch(model, stem, ["--dtype", "fp16", "--keep-io-types"], worst, False, mean)

    def test_overflow_and_loss_are_errors_and_nothing_is_written(self):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])

        def save(name, nodes, weights):
            graph = helper.make_graph(nodes, "g", [x], [y], weights)
            path = self.out(name)
            onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
            return path

        # x * 1000 * 1000: each weight fits float16, the product (up to 1e6) does not.
        thousand = helper.make_tensor("a", TensorProto.FLOAT, [1], [1000.0])
        overflow = save("overflow.onnx", [helper.make_node("Mul", ["x", "a"], ["t"]), helper.make_node("Mul", ["t", "a"], ["y"])],
                        [thousand])
        out = self.out("never.onnx")
        r = onnxkit("convert", overflow, out, "--dtype", "fp16")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("overflows", r.stderr)
        self.assertFalse(os.path.exists(out))
        # Kept in float32, the Muls no longer overflow (the float32 output saturates into float16 only at the Cast).
        r = onnxkit("convert", overflow, out, "--dtype", "fp16", "--keep-op", "Mul", "--keep-io-types")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("kept in float32: 2 Mul nodes (asked with --keep-op)", r.stdout)
        self.assertNotIn("warning", r.stdout)
        os.remove(out)

        # x * 1e5 + x: the weight saturates to 65504, a loss of a third:
        # a warning, or an error under --max-rel-diff.
        big = helper.make_tensor("big", TensorProto.FLOAT, [1], [1e5])
        lossy = save("lossy.onnx", [helper.make_node("Mul", ["x", "big"], ["t"]), helper.make_node("Add", ["t", "x"], ["y"])],
                     [big])
        r = onnxkit("convert", lossy, out, "--dtype", "fp16", "--max-rel-diff", "0.1")
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("off by 0.3", r.stderr)
        self.assertFalse(os.path.exists(out))
        r = onnxkit("convert", lossy, out, "--dtype", "fp16")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1 weight beyond float16's range set to +-65504", r.stdout)
        self.assertIn("warning: that is more than 0.05", r.stdout)

    def test_usage_errors(self):
        model = os.path.join(ARGS.models, "resnet18_opset13.onnx")
        for flags in (["--dtype", "fp8"], ["--keep-io-types"], ["--keep-op", "Conv"], ["--max-rel-diff", "0.1"],
                      ["--dtype", "fp16", "--to", "pytorch"]):
            with self.subTest(flags=flags):
                r = onnxkit("convert", model, self.out("x.onnx"), *flags)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertTrue(r.stderr.startswith("onnxkit convert: error:"), r.stderr)
                self.assertFalse(os.path.exists(self.out("x.onnx")))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--onnxkit", required=True)
    p.add_argument("--models", required=True)
    p.add_argument("--zoo", required=True)
    ARGS, rest = p.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)

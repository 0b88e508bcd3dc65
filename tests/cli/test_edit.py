#!/usr/bin/env python3
"""End-to-end tests of `onnxkit edit` on models exported by Debian's torch
(tests/models/export_models.py). The truth is PyTorch's output for the same
input, Python onnx's checker and shape inference, and the original model's
own outputs where an edit must not change the numbers.

usage: test_edit.py --onnxkit PATH --example PATH --models DIR [unittest args]"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import helper, numpy_helper

ARGS = None


def onnxkit(*args):
    return subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=600)


def stem(name, opset=13):
    return os.path.join(ARGS.models, f"{name}_opset{opset}")


def run_model(model, input_file, out_dir, extra=()):
    name = onnx.load(model, load_external_data=False).graph.input[0].name
    proc = onnxkit("run", model, "--input", f"{name}={input_file}", "--output-dir", out_dir, *extra)
    assert proc.returncode == 0, proc.stderr
    return np.load(os.path.join(out_dir, "output_0.npy"))


def close_to(test, ours, ref, rtol=1e-4):
    test.assertEqual(ours.shape, ref.shape)
    bound = rtol * max(1.0, float(np.abs(ref).max()))
    test.assertLessEqual(float(np.abs(ours - ref).max()), bound)


def np_dtype(elem_type):
    if hasattr(helper, "tensor_dtype_to_np_dtype"):  # onnx >= 1.13
        return helper.tensor_dtype_to_np_dtype(elem_type)
    return onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type]


def node_of(model, op_type):
    return next(n for n in model.graph.node if n.op_type == op_type)


def initializer(graph, name):
    for t in graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    return None


class Edit(unittest.TestCase):
    def edit(self, model, *operations, tmp):
        out = os.path.join(tmp, "edited.onnx")
        proc = onnxkit("edit", model, out, *operations)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        edited = onnx.load(out)
        onnx.checker.check_model(edited, full_check=True)
        return out, edited

    def test_seed002_resize_scales_and_constant_reshape(self):
        """Seed 002's hand fix: Resize by constant scales (sizes unset), the
        Reshape's shape a constant [-1, 4096]; the Shape glue goes."""
        for opset in (13, 17):
            path = stem("seed002", opset) + ".onnx"
            original = onnx.load(path)
            resize, reshape = node_of(original, "Resize"), node_of(original, "Reshape")
            with self.subTest(opset=opset), tempfile.TemporaryDirectory() as tmp:
                out, edited = self.edit(path, "--set-input", f"{resize.name}:2=float:[1,1,2,2]",
                                        "--set-input", f"{resize.name}:3=", "--set-input",
                                        f"{reshape.name}:1=int64:[-1,4096]", "--cleanup", tmp=tmp)
                ops = [n.op_type for n in edited.graph.node]
                self.assertNotIn("Shape", ops)
                resize = node_of(edited, "Resize")
                self.assertEqual(len(resize.input), 3, "the sizes input was not unset")
                self.assertEqual(initializer(edited.graph, resize.input[2]).tolist(), [1, 1, 2, 2])
                self.assertEqual(initializer(edited.graph, node_of(edited, "Reshape").input[1]).tolist(), [-1, 4096])
                s = stem("seed002", opset)
                close_to(self, run_model(out, s + ".input.npy", os.path.join(tmp, "b1")), np.load(s + ".torch.npy"))
                close_to(self, run_model(out, s + ".input3.npy", os.path.join(tmp, "b3")), np.load(s + ".torch3.npy"))

    def test_replace_prelu_is_exact(self):
        path = stem("prelu") + ".onnx"
        with tempfile.TemporaryDirectory() as tmp:
            out, edited = self.edit(path, "--replace-prelu", tmp=tmp)
            self.assertNotIn("PRelu", [n.op_type for n in edited.graph.node])
            x = os.path.join(tmp, "x.npy")
            np.save(x, np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32))
            ours = run_model(out, x, os.path.join(tmp, "edited"))
            before = run_model(path, x, os.path.join(tmp, "original"))
            self.assertLessEqual(float(np.abs(ours - before).max()), 1e-6)
            close_to(self, run_model(out, stem("prelu") + ".input.npy", os.path.join(tmp, "t")),
                     np.load(stem("prelu") + ".torch.npy"))

    def test_instance_norm_epsilon_is_set_and_reads_back(self):
        path = stem("instance_norm") + ".onnx"
        with tempfile.TemporaryDirectory() as tmp:
            for value in ("1e-3", "1e-5"):
                out, edited = self.edit(path, "--set-attr-op", f"InstanceNormalization:epsilon={value}", tmp=tmp)
                norm = node_of(edited, "InstanceNormalization")
                epsilon = next(a for a in norm.attribute if a.name == "epsilon")
                self.assertEqual(epsilon.type, onnx.AttributeProto.FLOAT)
                self.assertAlmostEqual(epsilon.f, float(value), delta=float(value) * 1e-6)

    def test_fixed_batch_made_dynamic_runs_at_batch_4(self):
        s = stem("fixed_batch")
        with tempfile.TemporaryDirectory() as tmp:
            out, edited = self.edit(s + ".onnx", "--batch", "batch", tmp=tmp)
            for value in list(edited.graph.input) + list(edited.graph.output):
                self.assertEqual(value.type.tensor_type.shape.dim[0].dim_param, "batch", value.name)
            close_to(self, run_model(out, s + ".input4.npy", os.path.join(tmp, "b4")), np.load(s + ".torch4.npy"))

    def test_extract_cuts_the_preprocessing_head_and_softmax_tail(self):
        s = stem("prepost")
        original = onnx.load(s + ".onnx")
        start = node_of(original, "Div").output[0]
        end = node_of(original, "Softmax").input[0]
        with tempfile.TemporaryDirectory() as tmp:
            out, edited = self.edit(s + ".onnx", "--extract", f"{start}:{end}", tmp=tmp)
            ops = {n.op_type for n in edited.graph.node}
            self.assertFalse(ops & {"Sub", "Div", "Softmax"}, ops)
            self.assertEqual([i.name for i in edited.graph.input], [start])
            self.assertEqual([o.name for o in edited.graph.output], [end])
            close_to(self, run_model(out, s + ".middle_input.npy", os.path.join(tmp, "mid")),
                     np.load(s + ".middle_output.npy"))

    def test_outputs_all_exposes_every_tensor_with_its_type(self):
        s = stem("prepost")
        inferred = onnx.shape_inference.infer_shapes(onnx.load(s + ".onnx"), strict_mode=True)
        truth = {v.name: v.type.tensor_type for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
        with tempfile.TemporaryDirectory() as tmp:
            out, edited = self.edit(s + ".onnx", "--outputs-all", tmp=tmp)
            produced = [o for n in edited.graph.node for o in n.output if o]
            self.assertEqual(sorted(o.name for o in edited.graph.output), sorted(produced))
            out_dir = os.path.join(tmp, "all")
            run_model(out, s + ".input.npy", out_dir)
            with open(os.path.join(out_dir, "outputs.json")) as f:
                listed = json.load(f)
            entries = listed["outputs"] if isinstance(listed, dict) else listed
            self.assertEqual(len(entries), len(produced))
            for k, output in enumerate(edited.graph.output):
                array = np.load(os.path.join(out_dir, f"output_{k}.npy"))
                expected = truth[output.name]
                self.assertEqual(array.dtype, np_dtype(expected.elem_type), output.name)
                self.assertEqual(list(array.shape), [d.dim_value for d in expected.shape.dim], output.name)
            softmax = [k for k, o in enumerate(edited.graph.output) if o.name == node_of(edited, "Softmax").output[0]]
            close_to(self, np.load(os.path.join(out_dir, f"output_{softmax[0]}.npy")), np.load(s + ".torch.npy"))

    def test_outputs_all_declares_tensors_inference_cannot_shape_by_type(self):
        """A Reshape to a shape fed at run time has no rank any inference can
        tell: its output and the Relu's are declared by element type alone,
        said so, and run; the rest passes the checker."""
        graph = helper.make_graph(
            [helper.make_node("Reshape", ["x", "shape"], ["y"]), helper.make_node("Relu", ["y"], ["z"]),
             helper.make_node("Size", ["z"], ["n"])], "g",
            [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3]),
             helper.make_tensor_value_info("shape", onnx.TensorProto.INT64, ["rank"])],
            [helper.make_tensor_value_info("n", onnx.TensorProto.INT64, [])])
        x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
        with tempfile.TemporaryDirectory() as tmp:
            path, out = os.path.join(tmp, "m.onnx"), os.path.join(tmp, "edited.onnx")
            onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
            proc = onnxkit("edit", path, out, "--outputs-all")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            edited = onnx.load(out)
            shapeless = sorted(o.name for o in edited.graph.output if not o.type.tensor_type.HasField("shape"))
            self.assertEqual(shapeless, ["y", "z"])
            self.assertIn("note: 2 outputs declared by element type only", proc.stdout)
            self.assertTrue(all(o.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
                                for o in edited.graph.output if o.name in shapeless))
            np.save(os.path.join(tmp, "x.npy"), x)
            np.save(os.path.join(tmp, "s.npy"), np.array([3, 2], dtype=np.int64))
            out_dir = os.path.join(tmp, "r")
            run = onnxkit("run", out, "--input", f"x={tmp}/x.npy", "--input", f"shape={tmp}/s.npy", "--output-dir", out_dir)
            self.assertEqual(run.returncode, 0, run.stderr)
            names = [o.name for o in edited.graph.output]
            np.testing.assert_array_equal(np.load(os.path.join(out_dir, f"output_{names.index('z')}.npy")),
                                          np.maximum(x.reshape(3, 2), 0))

    @staticmethod
    def sample_rate_model(path):
        """y = x * 2 when sr == 16000, else x * 3 (an If on an int64 scalar
        input, as voice-activity exports branch on their sample rate)."""
        def branch(name, factor):
            return helper.make_graph(
                [helper.make_node("Mul", ["x", f"k{factor}"], [f"y{factor}"])], name, [],
                [helper.make_tensor_value_info(f"y{factor}", onnx.TensorProto.FLOAT, [2, 3])],
                [numpy_helper.from_array(np.array(factor, dtype=np.float32), f"k{factor}")])
        graph = helper.make_graph(
            [helper.make_node("Equal", ["sr", "rate"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["y"], name="by_rate",
                              then_branch=branch("then", 2), else_branch=branch("else", 3))], "g",
            [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3]),
             helper.make_tensor_value_info("sr", onnx.TensorProto.INT64, [])],
            [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])],
            [numpy_helper.from_array(np.array(16000, dtype=np.int64), "rate")])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)

    def run_x(self, model, x, tmp, extra=()):
        np.save(os.path.join(tmp, "x.npy"), x)
        out_dir = os.path.join(tmp, "out")
        proc = onnxkit("run", model, "--input", f"x={os.path.join(tmp, 'x.npy')}", "--output-dir", out_dir, *extra)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return np.load(os.path.join(out_dir, "output_0.npy"))

    def test_freeze_input_folds_the_comparison_and_keeps_the_branch_taken(self):
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            self.sample_rate_model(path)
            for rate, factor in (("16000", 2), ("8000", 3), ("int64:44100", 3)):
                out, edited = self.edit(path, "--freeze-input", f"sr={rate}", tmp=tmp)
                self.assertEqual([i.name for i in edited.graph.input], ["x"])
                self.assertEqual([n.op_type for n in edited.graph.node], ["Mul"], rate)
                np.testing.assert_array_equal(self.run_x(out, x, tmp), x * factor)

    def test_if_branch_keeps_the_branch_named(self):
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            self.sample_rate_model(path)
            for branch, factor in (("then", 2), ("else", 3)):
                out, edited = self.edit(path, "--if-branch", f"by_rate={branch}", "--cleanup", tmp=tmp)
                self.assertNotIn("If", [n.op_type for n in edited.graph.node])
                np.testing.assert_array_equal(self.run_x(out, x, tmp, ["--random"]), x * factor)

    def test_opset_down_where_the_converter_needs_constant_scales(self):
        # An opset-9 Upsample whose scales come from a Constant node: ONNX's
        # converter wants them as an initializer for the step to opset 8.
        graph = helper.make_graph(
            [helper.make_node("Constant", [], ["scales"], value=numpy_helper.from_array(
                np.array([1, 1, 2, 3], dtype=np.float32))),
             helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")], "g",
            [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 2, 2])],
            [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 1, 4, 6])])
        x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)]), path)
            out, edited = self.edit(path, "--opset", "8", tmp=tmp)
            self.assertEqual(edited.opset_import[0].version, 8)
            np.testing.assert_array_equal(self.run_x(out, x, tmp), x.repeat(2, axis=2).repeat(3, axis=3))

    def test_freeze_initializers_makes_an_old_style_exports_weights_constants(self):
        """torch's keep_initializers_as_inputs export lists every weight as a
        graph input too: a runtime must then obey a fed weight, so it neither
        prepacks nor fuses them, and bench says so. Frozen, only the image is
        an input, and the outputs are still PyTorch's."""
        s = stem("legacy_inputs")
        original = onnx.load(s + ".onnx")
        weights = {t.name for t in original.graph.initializer}
        self.assertTrue(weights & {i.name for i in original.graph.input}, "the export lists no weight as an input")
        bench = onnxkit("bench", s + ".onnx", "--runs", "1", "--warmup", "0")
        self.assertEqual(bench.returncode, 0, bench.stderr)
        self.assertIn("--freeze-initializers", bench.stdout)
        with tempfile.TemporaryDirectory() as tmp:
            out, edited = self.edit(s + ".onnx", "--freeze-initializers", tmp=tmp)
            self.assertEqual([i.name for i in edited.graph.input], ["input"])
            self.assertEqual({t.name for t in edited.graph.initializer}, weights)
            close_to(self, run_model(out, s + ".input.npy", os.path.join(tmp, "o")), np.load(s + ".torch.npy"))
            bench = onnxkit("bench", out, "--runs", "1", "--warmup", "0")
            self.assertEqual(bench.returncode, 0, bench.stderr)
            self.assertNotIn("initializer", bench.stdout)

    def test_a_model_with_external_data_is_written_with_its_side_file_said(self):
        s = stem("resnet18")
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "m.onnx")
            self.assertEqual(onnxkit("convert", s + ".onnx", source, "--external-data").returncode, 0)
            out = os.path.join(tmp, "e.onnx")
            proc = onnxkit("edit", source, out, "--cleanup")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertTrue(os.path.exists(out + ".data"))
            self.assertIn(f"wrote {out} + e.onnx.data (", proc.stdout)
            close_to(self, run_model(out, s + ".input.npy", os.path.join(tmp, "r")), np.load(s + ".torch.npy"))

    def test_a_script_applies_the_same_operations(self):
        path = stem("instance_norm") + ".onnx"
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "fixes.txt")
            with open(script, "w") as f:
                f.write("# TensorRT wants epsilon >= 1e-5\nset-attr-op InstanceNormalization:epsilon=0.002\n--batch N\n")
            out, edited = self.edit(path, "--script", script, tmp=tmp)
            epsilon = next(a for a in node_of(edited, "InstanceNormalization").attribute if a.name == "epsilon")
            self.assertAlmostEqual(epsilon.f, 0.002, places=7)
            self.assertEqual(edited.graph.input[0].type.tensor_type.shape.dim[0].dim_param, "N")

    def test_library_example_program(self):
        path = stem("instance_norm") + ".onnx"
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "example.onnx")
            proc = subprocess.run([ARGS.example, path, out], capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            edited = onnx.load(out)
            onnx.checker.check_model(edited, full_check=True)
            conv = node_of(edited, "Conv")
            self.assertIn(conv.output[0], [o.name for o in edited.graph.output])
            self.assertEqual(edited.graph.input[0].type.tensor_type.shape.dim[0].dim_param, "batch")
            epsilon = next(a for a in node_of(edited, "InstanceNormalization").attribute if a.name == "epsilon")
            self.assertAlmostEqual(epsilon.f, 1e-5, delta=1e-11)


class BadEdits(unittest.TestCase):
    """Each gives one line naming what is wrong, exit 1, and no output file."""

    def refused(self, model, *operations, mentions):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.onnx")
            proc = onnxkit("edit", model, out, *operations)
            self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
            self.assertEqual(os.listdir(tmp), [], "no output file may be written")
            lines = proc.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, proc.stderr)
            for word in mentions:
                self.assertIn(word, lines[0])
            return lines[0]

    def test_unknown_node_name_suggests_the_closest(self):
        path = stem("instance_norm") + ".onnx"
        norm = node_of(onnx.load(path), "InstanceNormalization").name
        self.refused(path, "--set-attr", f"{norm}x:epsilon=1e-5", mentions=[f"{norm}x", f"'{norm}'"])

    def test_wrong_attribute_type(self):
        path = stem("instance_norm") + ".onnx"
        self.refused(path, "--set-attr-op", "InstanceNormalization:epsilon=[1,2]", mentions=["epsilon"])

    def test_an_edit_that_leaves_a_dangling_input(self):
        # Pointing the Div at a tensor that does not exist, or extracting a
        # tensor that needs more than the inputs given: each names the tensor.
        s = stem("prepost")
        original = onnx.load(s + ".onnx")
        div, sub = node_of(original, "Div"), node_of(original, "Sub")
        self.refused(s + ".onnx", "--set-input", f"{div.name}:0=no_such_tensor", mentions=["no_such_tensor"])
        self.refused(s + ".onnx", "--extract", f"{div.output[0]}:{sub.output[0]}",
                     mentions=[original.graph.input[0].name])

    def test_a_batch_baked_into_constants_is_not_called_free(self):
        # The encoder's attention reshapes to [128, 4, 64]: batch 1 times 4
        # heads. --batch must not claim success; the message names the node.
        s = stem("bert_encoder", 17)
        reshape = next(n.name for n in onnx.load(s + ".onnx").graph.node if n.op_type == "Reshape")
        for batch in ("2", "batch"):
            self.refused(s + ".onnx", "--batch", batch, mentions=["batch is not free", reshape, "--set-input"])

    def test_an_output_left_at_the_old_batch_is_named(self):
        # Reshape to [1, -1] (assembled by a Concat, which shape inference
        # does not look through) runs at any batch, but its output keeps
        # batch 1: the dry run's output shape gives it away.
        graph = helper.make_graph(
            [helper.make_node("Concat", ["one", "rest"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"], name="flatten")], "g",
            [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 4])],
            [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 12])],
            [numpy_helper.from_array(np.array([1], dtype=np.int64), "one"),
             numpy_helper.from_array(np.array([-1], dtype=np.int64), "rest")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            onnx.save(model, path)
            self.refused(path, "--batch", "3", mentions=["batch is not free", "'y'", "float32[1,36]"])
            fixed = os.path.join(tmp, "fixed.onnx")
            proc = onnxkit("edit", path, fixed, "--batch", "3", "--set-input", "flatten:1=int64:[0,-1]")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("runs at the new batch", proc.stdout)
            proc = onnxkit("run", fixed, "--random", "--output-dir", os.path.join(tmp, "r"))
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertEqual(np.load(os.path.join(tmp, "r", "output_0.npy")).shape, (3, 12))

    def test_freeze_input_if_branch_and_remove_op_say_what_is_wrong(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            Edit.sample_rate_model(path)
            cases = [(("--freeze-input", "rate_sr=16000"), ["'rate_sr'"]),
                     (("--freeze-input", "sr=[16000,8000]"), ["'sr'", "int64[]", "[2]"]),
                     (("--freeze-input", "sr=16k"), ["16k"]),
                     (("--freeze-input", "sr=float:1"), ["int64", "float32"]),
                     (("--if-branch", "by_rate=maybe"), ["'then' or 'else'"]),
                     (("--remove-op", "If"), ["'by_rate'", "--if-branch by_rate=then|else"])]
            for operation, mentions in cases:
                with self.subTest(operation=operation):
                    self.refused(path, *operation, mentions=mentions)

    def test_an_opset_step_the_converter_lacks_is_one_line_naming_the_op(self):
        self.refused(stem("resnet18", 17) + ".onnx", "--opset", "12",
                     mentions=["Relu cannot be converted below opset 14 here"])
        line = self.refused(stem("bert_encoder", 17) + ".onnx", "--opset", "12",
                            mentions=["LayerNormalization does not exist before opset 17"])
        self.assertNotIn("Assertion", line)

    def test_no_operation_is_a_usage_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            proc = onnxkit("edit", stem("prelu") + ".onnx", os.path.join(tmp, "out.onnx"))
            self.assertEqual(proc.returncode, 2, proc.stderr)
            self.assertEqual(os.listdir(tmp), [])


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    parser.add_argument("--example", required=True)
    parser.add_argument("--models", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()

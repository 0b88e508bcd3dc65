#!/usr/bin/env python3
"""Hostile sizes: negative dims and dims whose element count overflows int64,
in declared inputs, in --shape and in the values of shape-computing nodes.
`run`, `simplify` and `check` must each end with one clear line naming the
node (or input) and the shape, and a non-zero exit: never a crash, a hang, or
a "success" with missing data. The models are made here, a few nodes each.

usage: test_sizes.py --onnxkit PATH [unittest args]"""

import argparse
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ARGS = None
I64_MAX = 2**63 - 1
I64_MIN = -(2**63)
BIG = 2**32  # two of them make 2^64: an int64 product wraps to 0


def run(*args):
    return subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=300)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, np.int64), name)


def model(nodes, inputs, initializers=(), opset=17, output_type=TensorProto.FLOAT):
    """A graph of `nodes` whose last node's first output is the graph's output."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
        [helper.make_tensor_value_info(nodes[-1].output[0], output_type, None)], list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def one_node(op, inputs, initializers, x_dims=(2,), opset=17, output_type=TensorProto.FLOAT, **attrs):
    """x (float, x_dims) and the initializers feed one node named 'the_node'."""
    node = helper.make_node(op, inputs, ["y"], name="the_node", **attrs)
    return model([node], [("x", TensorProto.FLOAT, list(x_dims))], initializers, opset, output_type)


# name -> (model, extra run arguments, text the error must hold)
def cases():
    c = {}
    relu = lambda dims: model([helper.make_node("Relu", ["x"], ["y"], name="the_node")],
                              [("x", TensorProto.FLOAT, dims)])
    c["declared [-5,3]"] = (relu([-5, 3]), [], ["'x'", "-5"])
    c["declared [INT64_MAX]"] = (relu([I64_MAX]), [], ["'x'", str(I64_MAX)])
    c["declared [2^32,2^32]"] = (relu([BIG, BIG]), [], ["'x'", str(BIG)])
    c["--shape INT64_MAX,1"] = (relu(["n", 1]), ["--shape", f"x:{I64_MAX},1"], ["'x'", str(I64_MAX)])
    c["--shape 2^32,2^32"] = (relu(["n", "m"]), ["--shape", f"x:{BIG},{BIG}"], ["'x'", str(BIG)])
    c["--shape -5,1"] = (relu(["n", 1]), ["--shape", "x:-5,1"], ["x", "-5"])
    for label, shape in (("-5", [-5]), ("INT64_MAX", [I64_MAX]), ("[2^32,2^32]", [BIG, BIG]), ("[-2,-3]", [-2, -3])):
        c[f"Expand {label}"] = (one_node("Expand", ["x", "s"], [ints("s", shape)], x_dims=(1,)), [],
                                ["the_node", "Expand"])
        c[f"ConstantOfShape {label}"] = (
            model([helper.make_node("ConstantOfShape", ["s"], ["y"], name="the_node")], [], [ints("s", shape)]), [],
            ["the_node", "ConstantOfShape"])
    for label, reps in (("-2", [-2]), ("INT64_MAX", [I64_MAX]), ("[2^32,2^32]", [BIG, BIG])):
        dims = (2,) * len(reps)
        c[f"Tile {label}"] = (one_node("Tile", ["x", "r"], [ints("r", reps)], x_dims=dims), [], ["the_node", "Tile"])
    # Reshape: the wrapped count equals the input's, or -1 is divided by a count that wrapped to 0.
    c["Reshape [2^62,8] of 0 elements"] = (one_node("Reshape", ["x", "s"], [ints("s", [2**62, 8])], x_dims=(0,)), [],
                                          ["the_node", "Reshape"])
    c["Reshape [2^62,4,-1]"] = (one_node("Reshape", ["x", "s"], [ints("s", [2**62, 4, -1])], x_dims=(4,)), [],
                               ["the_node", "Reshape"])
    c["Reshape [2^32,2^32,4]"] = (one_node("Reshape", ["x", "s"], [ints("s", [BIG, BIG, 4])], x_dims=(4,)), [],
                                 ["the_node", "Reshape"])
    c["Reshape [-5,-1]"] = (one_node("Reshape", ["x", "s"], [ints("s", [-5, -1])], x_dims=(4,)), [],
                           ["the_node", "Reshape"])
    for label, (start, limit, delta) in (("0..INT64_MAX", (0, I64_MAX, 1)), ("INT64_MIN..INT64_MAX", (I64_MIN, I64_MAX, 1)),
                                         ("INT64_MAX..INT64_MIN", (I64_MAX, I64_MIN, -1))):
        c[f"Range {label}"] = (
            model([helper.make_node("Range", ["a", "b", "d"], ["y"], name="the_node")], [],
                  [ints("a", start), ints("b", limit), ints("d", delta)], output_type=TensorProto.INT64), [],
            ["the_node", "Range", f"from {start} to {limit} by {delta}"])  # the bounds as integers
    c["Range float 0..1e30"] = (
        model([helper.make_node("Range", ["a", "b", "d"], ["y"], name="the_node")], [],
              [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("a", 0), ("b", 1e30), ("d", 1))]), [],
        ["the_node", "Range"])
    # Beyond the list: every kernel whose output shape comes from values.
    c["Resize sizes [2^32,2^32]"] = (
        one_node("Resize", ["x", "", "", "s"], [ints("s", [BIG, BIG])], x_dims=(1, 1)), [], ["the_node", "Resize"])
    c["Resize scales 1e30"] = (
        one_node("Resize", ["x", "", "sc"], [numpy_helper.from_array(np.array([1e30, 1e30], np.float32), "sc")],
                 x_dims=(1, 1)), [], ["the_node", "Resize"])
    c["Upsample scales 1e30"] = (
        one_node("Upsample", ["x", "sc"], [numpy_helper.from_array(np.array([1e30, 1e30], np.float32), "sc")],
                 x_dims=(1, 1), opset=9), [], ["the_node", "Upsample"])
    c["Pad pads INT64_MAX"] = (one_node("Pad", ["x", "p"], [ints("p", [0, I64_MAX])]), [], ["the_node", "Pad"])
    c["Pad pads [2^32..]"] = (one_node("Pad", ["x", "p"], [ints("p", [0, 0, BIG, BIG])], x_dims=(1, 1)), [],
                              ["the_node", "Pad"])
    c["Pad pads -5"] = (one_node("Pad", ["x", "p"], [ints("p", [0, -5])]), [], ["the_node", "Pad"])
    c["OneHot depth INT64_MAX"] = (
        model([helper.make_node("OneHot", ["i", "d", "v"], ["y"], name="the_node")], [],
              [ints("i", [0, 1]), ints("d", I64_MAX), numpy_helper.from_array(np.array([0, 1], np.float32), "v")]),
        [], ["the_node", "OneHot"])
    c["OneHot depth -3"] = (
        model([helper.make_node("OneHot", ["i", "d", "v"], ["y"], name="the_node")], [],
              [ints("i", [0, 1]), ints("d", -3), numpy_helper.from_array(np.array([0, 1], np.float32), "v")]),
        [], ["the_node", "OneHot"])
    for label, k in (("INT64_MAX", I64_MAX), ("-1", -1)):
        c[f"TopK k {label}"] = (
            model([helper.make_node("TopK", ["x", "k"], ["y", "i"], name="the_node")], [("x", TensorProto.FLOAT, [2])],
                  [ints("k", [k])]), [], ["the_node", "TopK", "k"])
    c["Col2Im image_shape [2^32,2^32]"] = (
        one_node("Col2Im", ["x", "i", "b"], [ints("i", [BIG, BIG]), ints("b", [1, 1])], x_dims=(1, 1, 1), opset=18),
        [], ["the_node", "Col2Im"])
    c["ConvTranspose output_shape [2^32,2^32]"] = (
        one_node("ConvTranspose", ["x", "w"], [numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "w")],
                 x_dims=(1, 1, 1, 1), output_shape=[BIG, BIG]), [], ["the_node", "ConvTranspose"])
    c["MaxUnpool output_shape [2^32,2^32]"] = (
        one_node("MaxUnpool", ["x", "i", "s"], [ints("i", [[[[0]]]]), ints("s", [1, 1, BIG, BIG])],
                 x_dims=(1, 1, 1, 1), kernel_shape=[1, 1]), [], ["the_node", "MaxUnpool"])
    c["Slice steps INT64_MIN"] = (
        one_node("Slice", ["x", "s", "e", "a", "st"],
                 [ints("s", [I64_MAX]), ints("e", [I64_MIN]), ints("a", [0]), ints("st", [I64_MIN])], x_dims=(4,)),
        None, None)  # a legal empty or short slice: must simply not crash
    c["Gather indices INT64_MIN"] = (
        one_node("Gather", ["x", "i"], [ints("i", [I64_MIN])], x_dims=(4,)), [], ["the_node", "Gather"])
    c["Split split [-1,5]"] = (
        model([helper.make_node("Split", ["x", "s"], ["y", "z"], name="the_node")], [("x", TensorProto.FLOAT, [4])],
              [ints("s", [-1, 5])], opset=13), [], ["the_node", "Split"])
    c["Unsqueeze axes INT64_MAX"] = (
        one_node("Unsqueeze", ["x", "a"], [ints("a", [I64_MAX])]), [], ["the_node", "Unsqueeze"])
    c["CenterCropPad shape [2^32,2^32]"] = (
        one_node("CenterCropPad", ["x", "s"], [ints("s", [BIG, BIG])], x_dims=(1, 1), opset=18), [],
        ["the_node", "CenterCropPad"])
    c["EyeLike via ConstantOfShape [2^32,2^32]"] = (
        model([helper.make_node("ConstantOfShape", ["s"], ["c"], name="fill"),
               helper.make_node("EyeLike", ["c"], ["y"], name="the_node")], [], [ints("s", [BIG, BIG])]), [], ["fill"])
    c["RandomNormal shape [2^32,2^32]"] = (
        model([helper.make_node("RandomNormal", [], ["y"], name="the_node", shape=[BIG, BIG])], []), [],
        ["the_node", "RandomNormal"])
    c["RandomUniform shape [-3]"] = (
        model([helper.make_node("RandomUniform", [], ["y"], name="the_node", shape=[-3])], []), [],
        ["the_node", "RandomUniform"])
    c["Expand to a shape computed from x's"] = (
        # the shape is known only when x is: no folding sees it first
        model([helper.make_node("Shape", ["x"], ["sh"], name="shape"),
               helper.make_node("Mul", ["sh", "big"], ["s"], name="scale"),
               helper.make_node("Expand", ["x", "s"], ["y"], name="the_node")],
              [("x", TensorProto.FLOAT, ["n"])], [ints("big", [2**40])]),
        ["--shape", "x:4"], ["the_node", "Expand"])
    return c


class HostileSizes(unittest.TestCase):
    def assert_clean(self, proc, parts, what):
        out = proc.stdout + proc.stderr
        self.assertGreater(proc.returncode, 0, f"{what}: exit {proc.returncode}: {out}")
        self.assertLess(proc.returncode, 3, f"{what}: exit {proc.returncode} (a crash?): {out}")
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, f"{what}: one line expected: {proc.stderr}")
        self.assertNotIn("internal error", lines[0], what)
        for p in parts:
            self.assertIn(p, lines[0], what)

    def test_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            for k, (name, (m, extra, parts)) in enumerate(cases().items()):
                with self.subTest(case=name):
                    path = os.path.join(tmp, "m.onnx")
                    onnx.save(m, path)
                    out = os.path.join(tmp, f"out{k}")
                    proc = run("run", path, "--random", *(extra or []), "--output-dir", out)
                    if parts is None:
                        self.assertIn(proc.returncode, (0, 1), proc.stderr)
                        continue
                    self.assert_clean(proc, parts, f"run {name}")
                    self.assertFalse(os.path.exists(out), "nothing may be written")

    def test_simplify_and_check(self):
        with tempfile.TemporaryDirectory() as tmp:
            for k, (name, (m, extra, parts)) in enumerate(cases().items()):
                with self.subTest(case=name):
                    path = os.path.join(tmp, "m.onnx")
                    onnx.save(m, path)
                    out = os.path.join(tmp, f"out{k}.onnx")
                    shape = ["--input-shape", extra[1]] if extra else []
                    proc = run("simplify", path, out, *shape)
                    self.assertIn(proc.returncode, (0, 1), f"simplify {name}: a crash? {proc.stdout}{proc.stderr}")
                    if parts is not None and proc.returncode == 0:
                        # simplify may leave the node unfolded, but it must not have written it a result
                        self.fail(f"simplify {name} succeeded: {proc.stdout}{proc.stderr}")
                    if proc.returncode == 1:
                        self.assertNotIn("internal error", proc.stderr, name)
                        self.assertFalse(os.path.exists(out), "nothing may be written")
                    proc = run("check", "--full", path)
                    self.assertIn(proc.returncode, (0, 1), f"check {name}: a crash? {proc.stdout}{proc.stderr}")
                    self.assertNotIn("internal error", proc.stdout + proc.stderr, name)

    def test_check_names_declared_dims_no_tensor_can_have(self):
        for dims, problem in (([-5, 3], "dim 0 is negative (-5)"), ([BIG, BIG], "the product of its dims overflows")):
            with self.subTest(dims=dims), tempfile.TemporaryDirectory() as tmp:
                graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
                path = os.path.join(tmp, "m.onnx")
                onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
                proc = run("check", path)
                self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
                self.assertIn(f"graph input 'x': {problem}", proc.stdout)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest])

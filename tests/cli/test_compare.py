#!/usr/bin/env python3
"""End-to-end tests of `onnxkit compare` and `onnxkit debug reduce` on models
exported by Debian's torch (tests/models/export_models.py). The truth comes
from outside onnxkit: Python's onnx alters one node of a copy (so the test
knows the culprit), renames tensors (so it knows every pair), finds
producers; numpy recomputes the statistics from tensors dumped by `run`; the
Polygraphy-style JSON is written here with numpy and base64 as Polygraphy
writes it; onnx's checker judges the reduced models.

usage: test_compare.py --onnxkit PATH --models DIR [unittest args]"""

import argparse
import base64
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import numpy as np
import onnx
from onnx import helper, numpy_helper

ARGS = None


def onnxkit(*args):
    return subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=900)


def model_path(name):
    return os.path.join(ARGS.models, name + ".onnx")


def compare_json(*args):
    proc = onnxkit("compare", *args, "--json")
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise AssertionError(f"compare {args} exited {proc.returncode}: {proc.stderr}")
    return proc.returncode, json.loads(proc.stdout)


def float_constant(graph, name):
    """The initializer or Constant node holding `name`, if it is a float tensor."""
    for t in graph.initializer:
        if t.name == name and t.data_type == onnx.TensorProto.FLOAT:
            return t
    for n in graph.node:
        if n.op_type == "Constant" and n.output[0] == name and n.attribute[0].t.data_type == onnx.TensorProto.FLOAT:
            return n.attribute[0].t
    return None


def alter(src, kind, where, dst):
    """Changes one node of a copy of `src`; returns the node's name.
    conv: its weights times 1.01; ln: LayerNormalization's epsilon to 1e-2;
    add: an Add's float constant plus 0.05."""
    m = onnx.load(src)
    g = m.graph
    if kind == "conv":
        nodes = [n for n in g.node if n.op_type == "Conv"]
    elif kind == "ln":
        nodes = [n for n in g.node if n.op_type == "LayerNormalization"]
    else:
        nodes = [n for n in g.node if n.op_type == "Add" and any(float_constant(g, x) is not None for x in n.input)]
    node = nodes[{"first": 0, "middle": len(nodes) // 2, "last": len(nodes) - 1}[where]]
    if kind == "conv":
        w = float_constant(g, node.input[1])
        w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w) * np.float32(1.01), w.name))
    elif kind == "ln":
        for a in node.attribute:
            if a.name == "epsilon":
                a.f = 1e-2
        if not any(a.name == "epsilon" for a in node.attribute):
            node.attribute.append(helper.make_attribute("epsilon", 1e-2))
    else:
        name = next(x for x in node.input if float_constant(g, x) is not None)
        if sum(name in n.input for n in g.node) > 1:  # shared: give this Add its own copy
            t = numpy_helper.from_array(numpy_helper.to_array(float_constant(g, name)), name + "_altered")
            g.initializer.append(t)
            node.input[list(node.input).index(name)] = t.name
            name = t.name
        t = float_constant(g, name)
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) + np.float32(0.05), t.name))
    onnx.save(m, dst)
    return node.name


def rename_tensors(src, dst):
    """Every tensor a node computes gets a new name, as another exporter
    might write the model; returns {old name: new name}."""
    m = onnx.load(src)
    g = m.graph
    keep = {v.name for v in g.input} | {v.name for v in g.output} | {t.name for t in g.initializer}
    mapping = {}
    for n in g.node:
        for o in n.output:
            if o and o not in keep:
                mapping[o] = f"t{len(mapping)}"
        n.name = "renamed_" + n.name
    for n in g.node:
        n.input[:] = [mapping.get(x, x) for x in n.input]
        n.output[:] = [mapping.get(x, x) for x in n.output]
    for v in g.value_info:
        v.name = mapping.get(v.name, v.name)
    onnx.save(m, dst)
    return mapping


def dump_run(model, out_dir, *extra):
    """`run --outputs all` of `model` into out_dir; returns {tensor name: array}."""
    proc = onnxkit("run", model, "--random", "--outputs", "all", "--output-dir", out_dir, *extra)
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(out_dir, "outputs.json")) as f:
        return {e["name"]: np.load(os.path.join(out_dir, e["file"])) for e in json.load(f)}


def npy_b64(array):
    f = io.BytesIO()
    np.save(f, array, allow_pickle=False)
    return base64.b64encode(f.getvalue()).decode()


def polygraphy_outputs(arrays, path, lazy=True):
    """Polygraphy's RunResults JSON (polygraphy run --save-outputs), two runners."""
    def encode(a):
        nd = {"array": npy_b64(a), "polygraphy_class": "ndarray"}
        return {"values": nd, "polygraphy_class": "LazyArray"} if lazy else nd
    iteration = {"outputs": {k: encode(v) for k, v in arrays.items()}, "runtime": 0.01,
                 "runner_name": "onnxrt-runner-N0-01/01/25-12:00:00", "polygraphy_class": "IterationResult"}
    other = dict(iteration, runner_name="trt-runner-N0-01/01/25-12:00:00")
    with open(path, "w") as f:
        json.dump({"lst": [[iteration["runner_name"], [iteration]], [other["runner_name"], [other]]],
                   "polygraphy_class": "RunResults"}, f, indent=4)


def polygraphy_inputs(arrays, path):
    """Polygraphy's --save-inputs JSON: a list of feed dicts."""
    with open(path, "w") as f:
        json.dump([{k: {"array": npy_b64(v), "polygraphy_class": "ndarray"} for k, v in arrays.items()}], f)


def producer(model_file, tensor):
    return next(n.name for n in onnx.load(model_file).graph.node if tensor in n.output)


class Culprit(unittest.TestCase):
    """One node altered near the input, in the middle, near the output: it is ranked first."""

    def check_culprit(self, name, kind, where):
        with tempfile.TemporaryDirectory() as tmp:
            altered = os.path.join(tmp, "altered.onnx")
            node = alter(model_path(name), kind, where, altered)
            code, report = compare_json(model_path(name), altered)
            self.assertEqual(code, 1, f"{node}: the outputs should differ")
            self.assertFalse(report["passed"])
            self.assertIsNotNone(report["culprit"], node)
            self.assertEqual(report["culprit"]["name"], node)
            self.assertEqual(report["nodes"][0]["name"], node)
            self.assertTrue(report["nodes"][0]["suspect"])
            self.assertFalse(report["nodes"][0]["local"]["passed"])
            # Nodes after it only inherit the error: re-run on A's inputs they agree.
            for n in report["nodes"][1:]:
                self.assertFalse(n["suspect"], n["name"])
            first = report["tensors"][report["first_divergent"]]
            self.assertEqual(first["producer"]["name"], node)
            return report

    def test_resnet18_conv_weights(self):
        for where in ("first", "middle", "last"):
            with self.subTest(where=where):
                self.check_culprit("resnet18_opset13", "conv", where)

    def test_bert_encoder_layernorm_epsilon(self):
        for where in ("first", "middle", "last"):
            with self.subTest(where=where):
                report = self.check_culprit("bert_encoder_opset17", "ln", where)
                self.assertIn("epsilon", report["culprit"]["attributes"])

    def test_bert_encoder_add_constant(self):
        # Opset 13 writes LayerNormalization as ReduceMean, Sub, Pow, ... Add: the Adds of
        # the embeddings (first), of a norm's epsilon (middle) and of the last norm's bias (last).
        name = "bert_encoder_opset13"
        with tempfile.TemporaryDirectory() as tmp:
            a = dump_run(model_path(name), tmp)  # --random, seed 0, as compare's default
            for where in ("first", "middle", "last"):
                with self.subTest(where=where):
                    culprit = self.check_culprit(name, "add", where)["culprit"]
                    # Re-run on A's inputs the altered Add is A's plus 0.05 in every
                    # element: its "error" (for draw --overlay) is 0.05 sqrt(n) / |A's output|.
                    out = a[culprit["outputs"][0].split(" ")[0]].astype(np.float64)
                    self.assertAlmostEqual(culprit["error"], 0.05 * math.sqrt(out.size) / np.linalg.norm(out),
                                           delta=1e-4 * culprit["error"])

    def test_draw_overlay_reddens_the_culprit(self):
        with tempfile.TemporaryDirectory() as tmp:
            altered = os.path.join(tmp, "altered.onnx")
            node = alter(model_path("resnet18_opset13"), "conv", "middle", altered)
            report = os.path.join(tmp, "report.json")
            with open(report, "w") as f:
                f.write(onnxkit("compare", model_path("resnet18_opset13"), altered, "--json").stdout)
            svg = os.path.join(tmp, "a.svg")
            proc = onnxkit("draw", altered, "-o", svg, "--overlay", report)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            hues = {}
            for box in ET.parse(svg).getroot().iter("{http://www.w3.org/2000/svg}g"):
                rect = box.find("{http://www.w3.org/2000/svg}rect")
                fill = rect.get("fill", "") if rect is not None else ""
                if box.get("data-name") and fill.startswith("hsl("):
                    hues[box.get("data-name")] = int(fill[4:].split(",")[0])
            self.assertGreater(len(hues), 10)  # every re-run node has a colour
            self.assertEqual(min(hues, key=hues.get), node)  # red is the lowest hue

    def test_statistics_match_numpy(self):
        name = "resnet18_opset13"
        with tempfile.TemporaryDirectory() as tmp:
            altered = os.path.join(tmp, "altered.onnx")
            alter(model_path(name), "conv", "middle", altered)
            a = dump_run(model_path(name), os.path.join(tmp, "a"))
            b = dump_run(altered, os.path.join(tmp, "b"))
            code, report = compare_json(model_path(name), altered, "--quantile", "0.9", "--rtol", "1e-3", "--atol", "1e-4")
            checked = 0
            for t in report["tensors"]:
                if not (t["is_output"] or report["tensors"].index(t) == report["first_divergent"]):
                    continue
                e, x = a[t["name"]].astype(np.float64), b[t["name_b"]].astype(np.float64)
                err = np.abs(x - e)
                s = t["stats"]
                self.assertAlmostEqual(s["max_abs"], err.max(), delta=1e-6 * err.max())
                self.assertAlmostEqual(s["mean_abs"], err.mean(), delta=1e-6 * err.mean())
                self.assertAlmostEqual(s["median_abs"], np.median(err), delta=1e-6 * err.max())
                self.assertAlmostEqual(s["quantile_abs"], np.quantile(err, 0.9), delta=1e-6 * err.max())
                cosine = (e * x).sum() / math.sqrt((e * e).sum() * (x * x).sum())
                self.assertAlmostEqual(s["cosine"], cosine, delta=1e-9)
                self.assertAlmostEqual(s["snr_db"], 10 * math.log10((e * e).sum() / (err * err).sum()), delta=1e-6)
                self.assertEqual(s["mismatches"], int((err > 1e-4 + 1e-3 * np.abs(e)).sum()))
                self.assertAlmostEqual(s["required_atol"], (err - 1e-3 * np.abs(e)).max(), delta=1e-6 * err.max())
                checked += 1
            self.assertEqual(checked, 2)

    def test_iterations_and_text_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            altered = os.path.join(tmp, "altered.onnx")
            node = alter(model_path("resnet18_opset13"), "conv", "first", altered)
            proc = onnxkit("compare", model_path("resnet18_opset13"), altered, "--iterations", "2", "--top", "3")
            self.assertEqual(proc.returncode, 1, proc.stderr)
            self.assertIn("2 samples", proc.stdout)
            self.assertIn(f"culprit: Conv node '{node}'", proc.stdout)
            self.assertIn("FAILED: 0 of 1 outputs within tolerance", proc.stdout)
            # --fail-fast stops at the first divergent tensor and still names its node.
            code, report = compare_json(model_path("resnet18_opset13"), altered, "--fail-fast")
            self.assertEqual(code, 1)
            self.assertEqual(report["culprit"]["name"], node)
            self.assertEqual(report["first_divergent"], len(report["tensors"]) - 1)


class Simplified(unittest.TestCase):
    def test_fused_batchnorm_pairs_with_the_conv_that_absorbed_it(self):
        # legacy_inputs keeps its BatchNormalization; simplify folds it into the Conv,
        # whose output keeps the Conv's name but holds the BatchNormalization's numbers.
        original = model_path("legacy_inputs_opset13")
        with tempfile.TemporaryDirectory() as tmp:
            simplified = os.path.join(tmp, "sim.onnx")
            self.assertEqual(onnxkit("simplify", original, simplified, "--freeze-initializers").returncode, 0)
            for b in (simplified, os.path.join(tmp, "renamed.onnx")):
                if b.endswith("renamed.onnx"):
                    rename_tensors(simplified, b)
                code, report = compare_json(original, b)
                self.assertEqual(code, 0, report["notes"])
                self.assertIsNone(report["culprit"])
                self.assertGreaterEqual(report["pairing"]["by_structure"], 1)
                g_a, g_b = onnx.load(original).graph, onnx.load(b).graph
                bn_out = next(n.output[0] for n in g_a.node if n.op_type == "BatchNormalization")
                conv_out = next(n.output[0] for n in g_b.node if n.op_type == "Conv")
                pairs = {t["name"]: t["name_b"] for t in report["tensors"]}
                self.assertEqual(pairs[bn_out], conv_out)

    def test_renamed_simplified_models_pair_by_structure(self):
        for name in ("resnet18_opset13", "bert_encoder_opset17", "mobilenet_v2_opset13"):
            with self.subTest(model=name), tempfile.TemporaryDirectory() as tmp:
                simplified, renamed = os.path.join(tmp, "sim.onnx"), os.path.join(tmp, "renamed.onnx")
                self.assertEqual(onnxkit("simplify", model_path(name), simplified).returncode, 0)
                mapping = rename_tensors(simplified, renamed)
                code, report = compare_json(model_path(name), renamed)
                self.assertEqual(code, 0)
                self.assertIsNone(report["culprit"])
                structural = [t for t in report["tensors"] if t["paired_by"] == "structure"]
                self.assertGreater(len(structural), 0.9 * len(mapping))
                for t in structural:
                    # A tensor simplify removed (an Add of zeros) pairs with the
                    # one that replaced it; the rest keep their names.
                    if t["name"] in mapping:
                        self.assertEqual(mapping[t["name"]], t["name_b"])
                for n in report["nodes"]:
                    self.assertTrue(n["local"] is None or n["local"]["passed"], n["name"])


class Reference(unittest.TestCase):
    model = "bert_encoder_opset17"

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.ref = os.path.join(self.tmp, "ref")
        self.arrays = dump_run(model_path(self.model), self.ref, "--save-inputs", os.path.join(self.ref, "inputs.npz"))
        self.inputs = dict(np.load(os.path.join(self.ref, "inputs.npz")))  # numpy reads our .npz

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_run_dump_is_a_reference(self):
        self.assertEqual(list(self.inputs), ["input_ids"])
        self.assertEqual(self.inputs["input_ids"].shape, (1, 128))
        np.save(os.path.join(self.ref, "not_in_model.npy"), np.zeros(3, np.float32))
        code, report = compare_json(model_path(self.model), "--reference", self.ref)
        self.assertEqual(code, 0, report["notes"])
        self.assertIsNone(report["culprit"])
        self.assertIn("not_in_model", report["pairing"]["unpaired_a"])
        computed = [o for n in onnx.load(model_path(self.model)).graph.node if n.op_type != "Constant" for o in n.output]
        self.assertEqual(sorted(t["name"] for t in report["tensors"]), sorted(computed))
        # The inputs replay: run --input FILE.npz gives the dumped output again.
        with tempfile.TemporaryDirectory() as out:
            proc = onnxkit("run", model_path(self.model), "--input", os.path.join(self.ref, "inputs.npz"), "--output-dir", out,
                           "--outputs", "all")  # the same plan as the dump: the same bits
            self.assertEqual(proc.returncode, 0, proc.stderr)
            np.testing.assert_array_equal(np.load(os.path.join(out, "output_0.npy")), self.arrays["output"])

    def test_polygraphy_json(self):
        for lazy in (True, False):
            with self.subTest(lazy=lazy):
                outputs, inputs = os.path.join(self.tmp, "outputs.json"), os.path.join(self.tmp, "inputs.json")
                polygraphy_outputs(self.arrays, outputs, lazy)
                polygraphy_inputs(self.inputs, inputs)
                code, report = compare_json(model_path(self.model), "--reference", inputs, "--reference", outputs)
                self.assertEqual(code, 0)
                self.assertEqual(len(report["tensors"]), len(self.arrays) - self.constants())
                self.assertTrue(any("trt-runner" in n and "the first of 2" in n for n in report["notes"]), report["notes"])

    def constants(self):
        return sum(n.op_type == "Constant" for n in onnx.load(model_path(self.model)).graph.node)

    def test_a_perturbed_tensor_names_its_producer(self):
        g = onnx.load(model_path(self.model)).graph
        middle = [n for n in g.node if n.op_type == "MatMul"][len([n for n in g.node if n.op_type == "MatMul"]) // 2]
        tensor = middle.output[0]
        perturbed = dict(self.arrays)
        perturbed[tensor] = self.arrays[tensor].copy()
        perturbed[tensor].flat[:16] *= 1.05
        with open(os.path.join(self.ref, "outputs.json")) as f:
            listing = json.load(f)
        np.save(os.path.join(self.ref, next(e["file"] for e in listing if e["name"] == tensor)), perturbed[tensor])
        outputs = os.path.join(self.tmp, "outputs.json")
        polygraphy_outputs(perturbed, outputs)
        for reference in ([self.ref], [os.path.join(self.ref, "inputs.npz"), outputs]):
            with self.subTest(reference=reference):
                args = [x for r in reference for x in ("--reference", r)]
                code, report = compare_json(model_path(self.model), *args)
                self.assertEqual(report["culprit"]["name"], producer(model_path(self.model), tensor))
                self.assertEqual(report["tensors"][report["first_divergent"]]["name"], tensor)


def check_runs(stdout):
    return int(re.search(r"after (\d+) check runs", stdout).group(1))


class Reduce(unittest.TestCase):
    """bert_encoder: 234 nodes, 170 of them not Constant, one LayerNormalization altered."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.original = model_path("bert_encoder_opset17")
        cls.altered = os.path.join(cls.tmp, "altered.onnx")
        cls.node = alter(cls.original, "ln", "middle", cls.altered)
        cls.ref = os.path.join(cls.tmp, "ref")
        dump_run(cls.original, cls.ref, "--save-inputs", os.path.join(cls.ref, "inputs.npz"))
        n = sum(x.op_type != "Constant" for x in onnx.load(cls.altered).graph.node)
        cls.bound = 2 * math.ceil(math.log2(n)) + 2

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def check_result(self, proc, out):
        self.assertEqual(proc.returncode, 0, proc.stdout[-3000:] + proc.stderr)
        model = onnx.load(out)
        onnx.checker.check_model(model, full_check=True)
        self.assertEqual(onnxkit("check", "--full", out).returncode, 0)
        names = [n.name for n in model.graph.node]
        self.assertIn(self.node, names)
        self.assertLessEqual(len(names), 3, names)
        self.assertLessEqual(check_runs(proc.stdout), self.bound)
        self.assertIn("(whole model): 170 nodes", proc.stdout)

    def test_onnxkit_judges_against_a_reference_folder_and_a_good_model(self):
        out = os.path.join(self.tmp, "min_ref.onnx")
        good = os.path.join(self.tmp, "good.onnx")
        proc = onnxkit("debug", "reduce", self.altered, "--reference", self.ref, "-o", out, "--min-good", good)
        self.check_result(proc, out)
        onnx.checker.check_model(onnx.load(good), full_check=True)
        out = os.path.join(self.tmp, "min_model.onnx")
        proc = onnxkit("debug", "reduce", self.altered, "--reference", self.original, "--iterations", "2", "-o", out)
        self.check_result(proc, out)

    def test_an_external_check_command(self):
        for extra in ([], ["--fail-regex", "^FAILED"]):
            with self.subTest(extra=extra):
                out = os.path.join(self.tmp, "min_check.onnx")
                proc = onnxkit("debug", "reduce", self.altered, "--reference", self.ref, "-o", out, *extra,
                               "--check", ARGS.onnxkit, "compare", "{model}", "--reference", self.ref)
                self.check_result(proc, out)
                self.assertIn("exit 1", proc.stdout)

    def test_the_branch_an_if_takes_is_entered(self):
        # y = If(sum(x @ W) > 0, then: Relu(h), else: Tanh(h) * 2) with h = x @ W, followed by a Sigmoid;
        # the altered copy multiplies by 2.2 in the else branch, which x = 1 takes.
        def model(factor):
            h = helper.make_node("MatMul", ["x", "W"], ["h"], name="matmul")
            s = helper.make_node("ReduceSum", ["h"], ["s"], name="sum", keepdims=0)
            c = helper.make_node("Greater", ["s", "zero"], ["c"], name="greater")
            then = helper.make_graph([helper.make_node("Relu", ["h"], ["t"], name="relu")], "then", [],
                                     [helper.make_tensor_value_info("t", onnx.TensorProto.FLOAT, None)])
            other = helper.make_graph(
                [helper.make_node("Tanh", ["h"], ["e0"], name="tanh"),
                 helper.make_node("Mul", ["e0", "factor"], ["e"], name="scale")], "else", [],
                [helper.make_tensor_value_info("e", onnx.TensorProto.FLOAT, None)])
            branch = helper.make_node("If", ["c"], ["b"], name="branch", then_branch=then, else_branch=other)
            y = helper.make_node("Sigmoid", ["b"], ["y"], name="sigmoid")
            w = (np.arange(64, dtype=np.float32).reshape(8, 8) - 40) / 64
            graph = helper.make_graph(
                [h, s, c, branch, y], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8])],
                [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 8])],
                [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.array(0, np.float32), "zero"),
                 numpy_helper.from_array(np.array(factor, np.float32), "factor")])
            return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        good, bad, x = (os.path.join(self.tmp, f) for f in ("if_good.onnx", "if_bad.onnx", "x.npy"))
        onnx.save(model(2.0), good)
        onnx.save(model(2.2), bad)
        np.save(x, np.ones((1, 8), np.float32))  # sum(x @ W) < 0: the else branch
        out = os.path.join(self.tmp, "if_min.onnx")
        proc = onnxkit("debug", "reduce", bad, "--reference", good, "--input", f"x={x}", "-o", out)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("If node 'branch' became its else branch", proc.stdout)
        reduced = onnx.load(out)
        onnx.checker.check_model(reduced, full_check=True)
        self.assertEqual([n.name for n in reduced.graph.node], ["scale"])

    def test_a_model_that_passes_is_one_line(self):
        proc = onnxkit("debug", "reduce", self.original, "--reference", self.ref, "-o", os.path.join(self.tmp, "x.onnx"))
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
        self.assertIn("passes", proc.stderr)


class BadInput(unittest.TestCase):
    def assert_one_line(self, proc, code, *parts):
        self.assertEqual(proc.returncode, code, proc.stdout + proc.stderr)
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        for p in parts:
            self.assertIn(p, lines[0])

    def test_models_with_different_inputs(self):
        self.assert_one_line(onnxkit("compare", model_path("resnet18_opset13"), model_path("bert_encoder_opset17")), 1,
                             "different inputs", "'input'", "'input_ids'")

    def test_reference_of_the_wrong_shape_or_type(self):
        model = model_path("bert_encoder_opset17")
        with tempfile.TemporaryDirectory() as tmp:
            np.save(os.path.join(tmp, "input_ids.npy"), np.zeros((1, 64), np.int64))
            self.assert_one_line(onnxkit("compare", model, "--reference", tmp), 1, "input 'input_ids'", "dim 1 should be 128")
            np.save(os.path.join(tmp, "input_ids.npy"), np.zeros((1, 128), np.float32))
            self.assert_one_line(onnxkit("compare", model, "--reference", tmp), 1, "input 'input_ids'", "element type")

    def test_unreadable_references(self):
        model = model_path("bert_encoder_opset17")
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.json")
            with open(bad, "w") as f:
                f.write('{"lst": [["onnxrt", [{"outputs": {"x": {"array": ')
            self.assert_one_line(onnxkit("compare", model, "--reference", bad), 1, "bad.json", "not valid JSON")
            with open(bad, "w") as f:
                f.write('{"x": {"array": "not base64 at all!"}}')
            self.assert_one_line(onnxkit("compare", model, "--reference", bad), 1, "bad.json:x", "not a .npy file")
            self.assert_one_line(onnxkit("compare", model, "--reference", os.path.join(tmp, "missing")), 1, "no such file")
            self.assert_one_line(onnxkit("compare", model, "--reference", tmp), 1, "no .npy, .npz or .pb files")

    def test_usage_errors(self):
        model = model_path("resnet18_opset13")
        self.assertEqual(onnxkit("compare", model).returncode, 2)
        self.assertEqual(onnxkit("compare", model, model, model).returncode, 2)
        self.assertEqual(onnxkit("compare", model, model, "--stat", "bogus").returncode, 2)
        self.assertEqual(onnxkit("compare", model, model, "--reference", "x").returncode, 2)
        self.assertEqual(onnxkit("debug", "reduce", model).returncode, 2)
        self.assertEqual(onnxkit("debug", "reduce", model, "-o", "x.onnx", "--check").returncode, 2)
        self.assertEqual(onnxkit("debug", "reduce", model, "-o", "x.onnx", "stray").returncode, 2)
        # A bad --input names the command as typed and where its options are.
        for name, args in (("compare", [model, model]), ("debug reduce", [model, "-o", "x.onnx"])):
            self.assert_one_line(onnxkit(*name.split(), *args, "--input", "x.npy"), 2,
                                 f"onnxkit {name}: error: --input 'x.npy'", f"(onnxkit {name} --help shows its options)")


def scale_weight(src, dst, node_name=None, op=None, where="middle", weight=None):
    """A copy of `src` with one float initializer times 1.01: `weight` by name, or the first
    float weight of node `node_name`, or of the first, middle or last `op` node holding one.
    Returns the node's name (or the weight's)."""
    m = onnx.load(src)
    g = m.graph
    inits = {t.name: t for t in g.initializer if t.data_type == onnx.TensorProto.FLOAT}
    if weight is None:
        nodes = [n for n in g.node if (n.name == node_name or n.op_type == op) and any(x in inits for x in n.input)]
        node = nodes[{"first": 0, "middle": len(nodes) // 2, "last": len(nodes) - 1}[where]]
        weight = next(x for x in node.input if x in inits)
        assert sum(weight in n.input for n in g.node) == 1, weight
        node_name = node.name
    t = inits[weight]
    t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t) * np.float32(1.01), t.name))
    onnx.save(m, dst)
    return node_name or weight


class Zoo(unittest.TestCase):
    """tests/models/export_zoo.py's wider set, exported here: a detector, a segmenter, a GPT-style
    decoder, an LSTM, DenseNet, and a scripted model whose If and Loop hold the altered weight."""

    MODELS = ["lstm", "control_flow", "gpt_decoder", "lraspp_mobilenet_v3_large", "ssdlite320_mobilenet_v3_large",
              "densenet121"]

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
        import export_zoo
        for name in cls.MODELS:
            export_zoo.export(name, cls.tmp)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def path(self, name):
        return os.path.join(self.tmp, name + ".onnx")

    def test_the_altered_node_is_the_culprit(self):
        cases = [("lstm", dict(op="LSTM", where="first"), None),
                 ("gpt_decoder", dict(op="MatMul"), None),
                 ("lraspp_mobilenet_v3_large", dict(op="Conv"), None),
                 ("ssdlite320_mobilenet_v3_large", dict(op="Conv"), None),
                 # The Loop's body reads the weight: the Loop, re-run as a model of its own, is the culprit.
                 ("control_flow", dict(weight="step.weight"), "/Loop")]
        for name, how, expected in cases:
            with self.subTest(model=name):
                altered = os.path.join(self.tmp, name + ".altered.onnx")
                node = scale_weight(self.path(name), altered, **how)
                node = expected or node
                code, report = compare_json(self.path(name), altered)
                self.assertEqual(code, 1)
                self.assertEqual(report["culprit"]["name"], node)
                self.assertEqual(report["nodes"][0]["name"], node)
                self.assertEqual([n["name"] for n in report["nodes"] if n["suspect"]], [node])
                self.assertEqual(report["pairing"]["unpaired_a"], [])

    def test_simplified_models_pass(self):
        for name in ("lstm", "control_flow", "gpt_decoder", "lraspp_mobilenet_v3_large"):
            with self.subTest(model=name):
                simplified = os.path.join(self.tmp, name + ".sim.onnx")
                proc = onnxkit("simplify", self.path(name), simplified)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                code, report = compare_json(self.path(name), simplified)
                self.assertEqual(code, 0)
                self.assertIsNone(report["culprit"])
                self.assertFalse(any(n["suspect"] for n in report["nodes"]))

    def test_simplified_densenet_pairs_every_tensor(self):
        # simplify folds DenseNet's BatchNormalizations into Convs; the Concats of every dense
        # block read each earlier feature map, and their consumers' votes on which A tensor a
        # renamed B value stands for once went back and forth without end.
        name = "densenet121"
        simplified = os.path.join(self.tmp, name + ".sim.onnx")
        self.assertEqual(onnxkit("simplify", self.path(name), simplified).returncode, 0)
        proc = subprocess.run([ARGS.onnxkit, "compare", self.path(name), simplified, "--json"],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        report = json.loads(proc.stdout)
        self.assertIsNone(report["culprit"])
        self.assertEqual(report["pairing"]["unpaired_b"], [])
        self.assertFalse([n["name"] for n in report["nodes"] if n["local"] is not None and not n["local"]["passed"]])

    def test_reduce_a_detector(self):
        # 2506 nodes besides Constants; the Conv's bias reaches it through an Identity of a
        # weight, which the reduced model keeps as a weight, not as an input to feed.
        name = "ssdlite320_mobilenet_v3_large"
        altered = os.path.join(self.tmp, name + ".reduce.onnx")
        node = scale_weight(self.path(name), altered, op="Conv", where="middle")
        out = os.path.join(self.tmp, "min.onnx")
        proc = onnxkit("debug", "reduce", altered, "--reference", self.path(name), "-o", out)
        self.assertEqual(proc.returncode, 0, proc.stdout[-3000:] + proc.stderr)
        model = onnx.load(out)
        onnx.checker.check_model(model, full_check=True)
        self.assertEqual([n.name for n in model.graph.node], [node])
        self.assertEqual(len(model.graph.input), 1)
        n = sum(x.op_type != "Constant" for x in onnx.load(altered).graph.node)
        self.assertLessEqual(check_runs(proc.stdout), 2 * math.ceil(math.log2(n)) + 2)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    parser.add_argument("--models", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()

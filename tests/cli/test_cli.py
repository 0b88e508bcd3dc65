#!/usr/bin/env python3
"""End-to-end tests of the onnxkit command line on real torch exports and on
the committed corpus of broken files. Expected figures come from outside
onnxkit: Python's onnx (parameter counts, model equality) and torch forward
hooks (MACs), written by tests/models/export_models.py.

usage: test_cli.py --onnxkit PATH --models DIR --corpus DIR [unittest args]"""

import argparse
import glob
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import numpy_helper

ARGS = None
COMMANDS = ("info", "check", "convert", "run", "bench", "simplify", "shapes", "edit", "draw")


def run(*args, check=None, timeout=600):
    proc = subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if check is not None and proc.returncode != check:
        raise AssertionError(f"onnxkit {' '.join(map(str, args))} exited {proc.returncode}, expected {check}\n"
                             f"stdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}")
    return proc


def restore_dev_null():
    """Should a regression replace /dev/null (as root), puts the device back:
    the rest of the machine reads and writes it."""
    if not stat.S_ISCHR(os.lstat("/dev/null").st_mode) and os.geteuid() == 0:
        os.unlink("/dev/null")
        os.mknod("/dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        os.chmod("/dev/null", 0o666)
        for name in os.listdir("/dev"):
            if name.startswith(".null"):
                os.unlink(os.path.join("/dev", name))


def info_json(path):
    return json.loads(run("info", "--json", path, check=0).stdout)


def exported_models():
    # The format tests need not pay for every opset and for resnet50.
    models = sorted(m for m in glob.glob(os.path.join(ARGS.models, "*_opset13.onnx")) if "resnet50" not in m)
    assert models, f"no exported models in {ARGS.models}"
    return models


def load_expected(model):
    with open(model.replace(".onnx", ".expected.json")) as f:
        return json.load(f)


def assert_same_model(test, a_path, b_path):
    """Python's onnx as the referee: same graph, same initializer values."""
    a, b = onnx.load(a_path), onnx.load(b_path)
    a_weights = {t.name: numpy_helper.to_array(t) for t in a.graph.initializer}
    b_weights = {t.name: numpy_helper.to_array(t) for t in b.graph.initializer}
    test.assertEqual(a_weights.keys(), b_weights.keys())
    for name in a_weights:
        np.testing.assert_array_equal(a_weights[name], b_weights[name], err_msg=name)
    for g in (a.graph, b.graph):
        del g.initializer[:]
    test.assertEqual(a, b)


class Info(unittest.TestCase):
    def test_parameters_match_python_onnx(self):
        for model in exported_models():
            expected = load_expected(model)
            with self.subTest(model=os.path.basename(model)):
                info = info_json(model)
                self.assertEqual(info["initializers"]["parameters"], expected["parameters"])
                self.assertEqual(info["initializers"]["count"], len(onnx.load(model).graph.initializer))

    def test_macs_match_torch_hooks(self):
        checked = 0
        for model in exported_models():
            expected = load_expected(model)
            if expected["macs"] is None:
                continue
            with self.subTest(model=os.path.basename(model)):
                info = info_json(model)
                self.assertEqual(info["compute"]["macs"], expected["macs"])
                self.assertEqual(info["compute"]["nodes_without_shapes"], 0)
                checked += 1
        self.assertGreater(checked, 0)

    def test_models_side_by_side(self):
        a = os.path.join(ARGS.models, "resnet18_opset13.onnx")
        b = os.path.join(ARGS.models, "squeezenet1_1_opset13.onnx")
        text = run("info", a, b, check=0).stdout
        rows = {line[2:].split()[0]: line for line in text.splitlines() if line[2:].strip() and not line.startswith("  " * 2)}
        ops = {}
        for line in text.splitlines():
            if line[2:].startswith("  "):
                name, *counts = line[2:].split()
                ops[name] = (line.startswith("*"), counts)
        truth = [onnx.load(m).graph for m in (a, b)]
        # Node counts and operator counts as Python's onnx counts them; '*' where they differ.
        self.assertTrue(rows["nodes"].startswith("* "), rows["nodes"])
        self.assertEqual(rows["nodes"].split()[-2:], [str(len(g.node)) for g in truth])
        every_op = {n.op_type for g in truth for n in g.node}
        self.assertEqual(set(ops), every_op)
        for op in every_op:
            counts = [str(sum(n.op_type == op for n in g.node)) for g in truth]
            counts = ["-" if c == "0" else c for c in counts]
            self.assertEqual(ops[op], (counts[0] != counts[1], counts), op)
        self.assertTrue(rows["opsets"].startswith("  "), "the same opsets: not marked")
        both = json.loads(run("info", "--json", a, b, check=0).stdout)
        self.assertEqual([r["graph"]["nodes"] for r in both], [len(g.node) for g in truth])
        self.assertEqual(run("info", "--nodes", a, b).returncode, 2)

    def test_a_dynamic_batch_is_counted_per_sample_unless_set(self):
        model = os.path.join(ARGS.models, "resnet18_opset17.onnx")
        expected = load_expected(model)["macs"]  # torch's hooks, batch 1
        proto = onnx.load(model)
        for value in (proto.graph.input[0], proto.graph.output[0]):
            value.type.tensor_type.shape.dim[0].dim_param = "batch"
        with tempfile.TemporaryDirectory() as tmp:
            dynamic = os.path.join(tmp, "dynamic.onnx")
            onnx.save(proto, dynamic)
            info = info_json(dynamic)
            self.assertEqual(info["compute"]["macs"], expected)
            self.assertEqual(info["compute"]["assumed_dims"], ["batch"])
            self.assertEqual(info["inputs"][0]["type"]["shape"][0], "batch", "shapes are reported as declared")
            text = run("info", dynamic, check=0).stdout
            self.assertIn("with batch=1 (symbolic dims taken as 1; --dim batch=N sets them)", text)
            four = json.loads(run("info", dynamic, "--dim", "batch=4", "--json", check=0).stdout)
            self.assertEqual(four["compute"]["macs"], 4 * expected)
            self.assertEqual(four["compute"]["assumed_dims"], [])
            two = json.loads(run("info", dynamic, "--shape", "input:2,3,224,224", "--json", check=0).stdout)
            self.assertEqual(two["compute"]["macs"], 2 * expected)
            symbolic = json.loads(run("info", dynamic, "--symbolic", "--json", check=0).stdout)["compute"]["symbolic"]
            self.assertEqual(symbolic["macs"], [{"coefficient": expected, "powers": {"batch": 1}}])
            self.assertIsInstance(symbolic["macs"][0]["coefficient"], int)
            self.assertIn("symbolic     1.81G*batch MACs", run("info", dynamic, "--symbolic", check=0).stdout)
            # Strided convolutions round a symbolic size: no polynomial in h and w fits.
            for d, name in ((2, "h"), (3, "w")):
                proto.graph.input[0].type.tensor_type.shape.dim[d].dim_param = name
            onnx.save(proto, dynamic)
            sizes = json.loads(run("info", dynamic, "--symbolic", "--dim", "batch=1", "--json", check=0).stdout)
            self.assertEqual(sizes["compute"]["symbolic"], {"symbols": ["h", "w"], "macs": None, "flops": None})
            self.assertIn("not fitted: the cost is no polynomial", run("info", dynamic, "--symbolic", "--dim", "batch=1", check=0).stdout)
            self.assertIn("did you mean 'batch'", run("info", dynamic, "--dim", "batchh=2", check=1).stderr)
            self.assertIn("expected SYMBOL=N", run("info", dynamic, "--dim", "batch", check=2).stderr)
            self.assertIn("'inptu' is not an input", run("info", dynamic, "--shape", "inptu:1,3,8,8", check=1).stderr)

    def test_a_partial_count_says_at_least_and_what_is_missing(self):
        # The MatMul after a Reshape to a shape fed at run time has no shape
        # to count; the MatMul before it does: 4*8*16 MACs.
        from onnx import TensorProto, helper
        w1 = numpy_helper.from_array(np.ones((8, 16), np.float32), "w1")
        w2 = numpy_helper.from_array(np.ones((16, 2), np.float32), "w2")
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w1"], ["h"], name="first"),
             helper.make_node("Reshape", ["h", "shape"], ["r"], name="reshape"),
             helper.make_node("MatMul", ["r", "w2"], ["y"], name="second")],
            "partial",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8]),
             helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])], [w1, w2])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "partial.onnx")
            onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
            info = info_json(path)
            self.assertEqual(info["compute"]["macs"], 4 * 8 * 16)
            self.assertEqual(info["compute"]["nodes_without_shapes"], 1)
            text = run("info", path, check=0).stdout
            self.assertIn("compute      at least 512 MACs", text)
            self.assertIn("(not counted: 1 node whose shapes are unknown: 1 MatMul)", text)

    def test_resnet18_is_about_1_8_gmacs(self):
        model = next(m for m in exported_models() if "resnet18" in m)
        self.assertAlmostEqual(info_json(model)["compute"]["macs"] / 1e9, 1.814, places=3)

    def test_json_shape(self):
        model = exported_models()[0]
        info = info_json(model)
        for key in ("schema", "file", "ir_version", "producer", "opsets", "inputs", "outputs", "operators",
                    "initializers", "compute", "graph"):
            self.assertIn(key, info)
        self.assertEqual(info["schema"], "onnxkit.info/1")
        self.assertEqual(info["producer"]["name"], "pytorch")
        proto = onnx.load(model)
        self.assertEqual(info["graph"]["nodes"], len(proto.graph.node))
        self.assertEqual(sum(op["count"] for op in info["operators"]), len(proto.graph.node))
        self.assertEqual([i["name"] for i in info["inputs"]], [i.name for i in proto.graph.input])
        dims = [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
        self.assertEqual(info["inputs"][0]["type"]["shape"], dims)

    def test_nodes_lists_every_node_with_attributes(self):
        model = next(m for m in exported_models() if "resnet18" in m)
        info = json.loads(run("info", "--json", "--nodes", model, check=0).stdout)
        proto = onnx.load(model)
        self.assertEqual(len(info["nodes"]), len(proto.graph.node))
        first_conv = next(i for i, n in enumerate(proto.graph.node) if n.op_type == "Conv")
        node = info["nodes"][first_conv]
        expected = {a.name: list(a.ints) for a in proto.graph.node[first_conv].attribute if a.ints}
        for name, value in expected.items():
            self.assertEqual(node["attributes"][name], value)
        self.assertEqual([v["name"] for v in node["inputs"]], list(proto.graph.node[first_conv].input))
        text = run("info", "--nodes", model, check=0).stdout
        self.assertIn("kernel_shape=[7,7]", text)

    def test_symbolic_dims_are_kept(self):
        with tempfile.TemporaryDirectory() as tmp:
            model = onnx.load(exported_models()[0])
            model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
            path = os.path.join(tmp, "dynamic.onnx")
            onnx.save(model, path)
            info = info_json(path)
            self.assertEqual(info["inputs"][0]["type"]["shape"][0], "batch")
            self.assertIn("[batch,", run("info", path, check=0).stdout)


def export_zoo_models(names, out_dir):
    """Exports tests/models/export_zoo.py's NAMES into out_dir; returns the modules' builders."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
    import export_zoo  # noqa: E402  (torch: imported only by the tests that export)
    for name in names:
        export_zoo.export(name, out_dir)
    return export_zoo


class InfoCounts(unittest.TestCase):
    """Costs of recurrent layers and control flow on torch exports, against
    counts from the torch modules' shapes; what the report prints."""

    def test_recurrent_layers_match_the_modules_weights(self):
        # Per time step and sample, an LSTM/GRU layer does one multiply-add per
        # element of its weight_ih and weight_hh, each direction; the Linear
        # head in_features x out_features. Batch 1 (the symbolic batch).
        with tempfile.TemporaryDirectory() as tmp:
            names = ("lstm", "gru", "bilstm")
            zoo = export_zoo_models(names, tmp)
            for name in names:
                with self.subTest(model=name):
                    module, (x,) = zoo.build(name)
                    steps = x.shape[1]  # batch first
                    rnn_weights = sum(p.numel() for n, p in module.rnn.named_parameters() if n.startswith("weight_"))
                    head = module.head.in_features * module.head.out_features
                    info = info_json(os.path.join(tmp, name + ".onnx"))
                    self.assertEqual(info["compute"]["macs"], steps * (rnn_weights + head))
                    self.assertEqual(info["compute"]["nodes_without_shapes"], 0)
                    self.assertEqual(info["compute"]["nodes_without_cost_model"], 0)

    def test_control_flow_bodies_are_counted_and_the_choices_said(self):
        # Linear(64, 64) before the loop, and one in its body: a while loop
        # (no trip count) is counted once, and the report says so.
        with tempfile.TemporaryDirectory() as tmp:
            zoo = export_zoo_models(["control_flow"], tmp)
            module, _ = zoo.build("control_flow")
            path = os.path.join(tmp, "control_flow.onnx")
            info = info_json(path)
            self.assertEqual(info["compute"]["macs"], module.inp.weight.numel() + module.step.weight.numel())
            self.assertEqual(info["compute"]["nodes_without_shapes"], 0)
            notes = info["compute"]["notes"]
            self.assertTrue(any("trip count unbounded (a while loop); one iteration counted" in n for n in notes), notes)
            self.assertIn("one iteration counted", run("info", path, check=0).stdout)

    def test_weights_in_constant_nodes_and_subgraphs_are_parameters(self):
        # PaddleOCR- and Silero-style: the weights are Constant nodes, one more
        # sits in an If branch; an int64 shape constant is not a weight.
        h = onnx.helper
        weight = numpy_helper.from_array(np.ones((8, 16), np.float32), "w")
        branch_bias = numpy_helper.from_array(np.ones(16, np.float32), "bias")
        then = h.make_graph([h.make_node("Add", ["y", "bias"], ["a"])], "then", [],
                            [h.make_tensor_value_info("a", onnx.TensorProto.FLOAT, [4, 16])], [branch_bias])
        other = h.make_graph([h.make_node("Relu", ["y"], ["b"])], "else", [],
                             [h.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [4, 16])])
        graph = h.make_graph(
            [h.make_node("Constant", [], ["w"], value=weight),
             h.make_node("Constant", [], ["shape"], value=numpy_helper.from_array(np.array([4, 16], np.int64))),
             h.make_node("MatMul", ["x", "w"], ["m"]),
             h.make_node("Reshape", ["m", "shape"], ["y"]),
             h.make_node("If", ["c"], ["z"], then_branch=then, else_branch=other)],
            "constants", [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 8]),
                          h.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])],
            [h.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [4, 16])])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "constants.onnx")
            onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), path)
            info = info_json(path)
            self.assertEqual(info["initializers"]["parameters"], 0)
            self.assertEqual(info["parameters"]["elements"], 8 * 16 + 16)
            self.assertEqual(info["parameters"]["bytes"], 4 * (8 * 16 + 16))
            self.assertEqual(info["parameters"]["constant_nodes"]["count"], 1)
            self.assertEqual(info["parameters"]["subgraph_initializers"]["elements"], 16)
            # The If's costlier branch: the Add (64 FLOPs) over the Relu (64): equal, then taken.
            self.assertEqual(info["compute"]["macs"], 4 * 8 * 16)
            text = run("info", path, check=0).stdout
            self.assertIn("parameters   144 (144) in 0 initializers and 1 Constant node and 1 sub-graph initializer", text)

    def test_ops_without_a_cost_model_make_the_total_a_lower_bound(self):
        h = onnx.helper
        graph = h.make_graph([h.make_node("NonMaxSuppression", ["boxes", "scores"], ["kept"])], "nms",
                             [h.make_tensor_value_info("boxes", onnx.TensorProto.FLOAT, [1, 10, 4]),
                              h.make_tensor_value_info("scores", onnx.TensorProto.FLOAT, [1, 1, 10])],
                             [h.make_tensor_value_info("kept", onnx.TensorProto.INT64, [None, 3])])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "nms.onnx")
            onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), path)
            self.assertEqual(info_json(path)["compute"]["ops_without_cost_model"], "1 NonMaxSuppression")
            text = run("info", path, check=0).stdout
            self.assertIn("compute      at least 0 MACs, 0 FLOPs (not counted, no cost model: 1 NonMaxSuppression)", text)

    def test_symbolic_total_of_an_attention_like_product(self):
        # x [b, s, 8] times its transpose: b*s*s*8 MACs; the Relu b*s*s FLOPs.
        h = onnx.helper
        graph = h.make_graph([h.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
                              h.make_node("MatMul", ["x", "xt"], ["m"]),
                              h.make_node("Relu", ["m"], ["y"])], "scores",
                             [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["b", "s", 8])],
                             [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["b", "s", "s"])])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "scores.onnx")
            onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), path)
            symbolic = json.loads(run("info", path, "--symbolic", "--json", check=0).stdout)["compute"]["symbolic"]
            self.assertEqual(symbolic["macs"], [{"coefficient": 8, "powers": {"b": 1, "s": 2}}])
            self.assertEqual(symbolic["flops"], [{"coefficient": 17, "powers": {"b": 1, "s": 2}}])
            self.assertIn("symbolic     8*b*s^2 MACs, 17*b*s^2 FLOPs", run("info", path, "--symbolic", check=0).stdout)

    def test_printing_dims_floats_and_counts(self):
        # An unnamed dim stays "?" (inference would call it unk__0); epsilon
        # prints as written; one node is "1 node".
        h = onnx.helper
        scale = numpy_helper.from_array(np.ones(4, np.float32), "scale")
        graph = h.make_graph([h.make_node("LayerNormalization", ["x", "scale"], ["y"], epsilon=1e-5)], "one",
                             [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [None, 4])],
                             [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [None, 4])], [scale])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "one.onnx")
            onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), path)
            info = json.loads(run("info", "--json", "--nodes", path, check=0).stdout)
            self.assertEqual(info["outputs"][0]["type"]["shape"], [None, 4])
            self.assertEqual(info["nodes"][0]["outputs"][0]["type"]["shape"], [None, 4])
            self.assertEqual(info["nodes"][0]["attributes"]["epsilon"], 1e-05)
            text = run("info", "--nodes", path, check=0).stdout
            self.assertIn("y float32[?,4]", text)
            self.assertNotIn("unk__", text)
            self.assertIn("epsilon=1e-05", text)
            self.assertIn("graph        'one', 1 node\n", text)
            self.assertIn("in 1 initializer,", text)


class InfoValues(unittest.TestCase):
    def test_float16_constants_show_numpys_values(self):
        h = onnx.helper
        values = np.array([1.0, -2.5, 65504, 6e-8, 1e-5, np.inf, 0.1], np.float16)
        node = h.make_node("Constant", [], ["c"], name="halves", value=numpy_helper.from_array(values, "v"))
        graph = h.make_graph([node, h.make_node("Identity", ["c"], ["y"])], "g", [],
                             [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT16, [7])])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "halves.onnx")
            onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), path)
            info = json.loads(run("info", "--json", "--nodes", path, check=0).stdout)
            shown = next(n for n in info["nodes"] if n["name"] == "halves")["attributes"]["value"]["values"]
            expected = [float(str(v)) for v in values]  # numpy's shortest form of each half: 6e-08
            self.assertEqual(shown[:5] + shown[6:], expected[:5] + expected[6:])
            self.assertIn(shown[5], (None, "inf", float("inf")))  # JSON has no infinity


class Check(unittest.TestCase):
    def test_exported_models_are_valid(self):
        for model in exported_models():
            with self.subTest(model=os.path.basename(model)):
                self.assertIn("valid", run("check", "--full", model, check=0).stdout)

    def test_every_problem_names_its_node(self):
        with tempfile.TemporaryDirectory() as tmp:
            model = onnx.load(next(m for m in exported_models() if "resnet18" in m))
            convs = [n for n in model.graph.node if n.op_type == "Conv"]
            convs[1].attribute.add().CopyFrom(onnx.helper.make_attribute("no_such_attr", 3))
            convs[4].op_type = "NoSuchOp"
            path = os.path.join(tmp, "broken.onnx")
            onnx.save(model, path)
            proc = run("check", path, check=1)
            index1 = list(model.graph.node).index(convs[1])
            index4 = list(model.graph.node).index(convs[4])
            self.assertIn(f"node #{index1} '{convs[1].name}' (Conv)", proc.stdout)
            self.assertIn("no_such_attr", proc.stdout)
            self.assertIn(f"node #{index4} '{convs[4].name}' (NoSuchOp)", proc.stdout)
            self.assertIn("2 problems", proc.stdout)

    def test_full_reports_shape_errors(self):
        with tempfile.TemporaryDirectory() as tmp:
            model = onnx.load(next(m for m in exported_models() if "resnet18" in m))
            # Declare an output shape that contradicts the graph.
            model.graph.output[0].type.tensor_type.shape.dim[1].dim_value = 999
            path = os.path.join(tmp, "wrong_shape.onnx")
            onnx.save(model, path)
            run("check", path, check=0)
            proc = run("check", "--full", path, check=1)
            self.assertIn("shape inference", proc.stdout)


def recursive_function_model():
    """The graph calls local:F, which calls itself."""
    h = onnx.helper
    f = h.make_function("local", "F", ["a"], ["b"], [h.make_node("F", ["a"], ["b"], domain="local")],
                        [h.make_opsetid("", 17), h.make_opsetid("local", 1)])
    graph = h.make_graph([h.make_node("F", ["x"], ["y"], domain="local", name="call")], "g",
                         [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("local", 1)], functions=[f])


class Hostile(unittest.TestCase):
    """Models made to crash the ONNX library underneath: reported, never a crash."""

    def test_a_function_calling_itself(self):
        # ONNX's shape inference recursed without end: info, check --full and edit crashed.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "recursive.onnx")
            onnx.save(recursive_function_model(), path)
            for args in (["check"], ["check", "--full"]):
                proc = run(*args, path, check=1)
                self.assertIn("model-local function 'local:F': calls itself ('local:F' -> 'local:F')", proc.stdout)
            proc = run("info", path, check=0)
            self.assertIn("shapes were not inferred", proc.stderr + proc.stdout)
            proc = run("edit", path, os.path.join(tmp, "out.onnx"), "--rename", "x=z", check=1)
            self.assertIn("calls itself", proc.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "out.onnx")))

    def test_a_32_kb_node_name_in_a_shape_error(self):
        # std::regex overflowed the stack reading the node's name from the error.
        h = onnx.helper
        name = "n" * 32768
        graph = h.make_graph([h.make_node("MatMul", ["x", "w"], ["y"], name=name)], "g",
                             [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3]),
                              h.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [4, 5])],
                             [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 5])])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "long.onnx")
            onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)]), path)
            proc = run("check", "--full", path, check=1)
            self.assertIn(f"node #0 '{name}' (MatMul): shape inference", proc.stdout)

    def test_what_the_onnx_checker_lets_through(self):
        h = onnx.helper
        x = h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
        graph = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g", [x, x],
                             [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
        model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            onnx.save(model, path)
            self.assertIn("graph input 'x': is listed twice", run("check", path, check=1).stdout)
            del model.graph.input[1]
            model.ir_version = -1
            onnx.save(model, path)
            self.assertIn("ir_version -1 is negative", run("check", path, check=1).stdout)


class Convert(unittest.TestCase):
    def test_external_data_and_back(self):
        with tempfile.TemporaryDirectory() as tmp:
            for model in exported_models():
                if os.path.getsize(model) < 64 * 1024:
                    continue  # edit's tiny test models: no tensor reaches the threshold
                with self.subTest(model=os.path.basename(model)):
                    ext = os.path.join(tmp, "ext.onnx")
                    out = run("convert", model, ext, "--external-data", "--external-threshold", "4KB", check=0)
                    self.assertIn("ext.onnx.data", out.stdout)
                    self.assertLess(os.path.getsize(ext), os.path.getsize(model) / 10)
                    proto = onnx.load(ext, load_external_data=False)
                    external = [t for t in proto.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
                    self.assertTrue(external)
                    assert_same_model(self, model, ext)
                    back = os.path.join(tmp, "back.onnx")
                    run("convert", ext, back, check=0)
                    assert_same_model(self, model, back)
                    self.assertEqual(onnx.load(model), onnx.load(back), "inline again: the very same message")

    def test_threshold_decides_what_goes_external(self):
        with tempfile.TemporaryDirectory() as tmp:
            model = next(m for m in exported_models() if "resnet18" in m)
            ext = os.path.join(tmp, "ext.onnx")
            run("convert", model, ext, "--external-data", "--external-threshold", "100000", check=0)
            for t in onnx.load(ext, load_external_data=False).graph.initializer:
                size = int(np.prod(t.dims)) * 4
                self.assertEqual(t.data_location == onnx.TensorProto.EXTERNAL, size >= 100000, t.name)


class BadInput(unittest.TestCase):
    def assert_clean_failure(self, args, path, expected_code=1):
        proc = run(*args)
        self.assertEqual(proc.returncode, expected_code, f"{args}: {proc.stderr}")
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, f"{args} should print one line, got: {proc.stderr}")
        self.assertIn(str(path), lines[0])

    def test_corpus_of_broken_files(self):
        files = sorted(glob.glob(os.path.join(ARGS.corpus, "*.onnx")))
        self.assertGreaterEqual(len(files), 15)
        for path in files:
            with self.subTest(file=os.path.basename(path)):
                self.assert_clean_failure(["info", path], path)
                # check reports a model it can read on stdout, one line per problem.
                proc = run("check", path)
                self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
                self.assertIn(path, proc.stdout + proc.stderr)
                with tempfile.TemporaryDirectory() as tmp:
                    self.assert_clean_failure(["convert", path, os.path.join(tmp, "out.onnx")], path)
                    self.assertEqual(os.listdir(tmp), [], "no output file may be written")

    def test_directory_and_missing_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assert_clean_failure(["info", tmp], tmp)
            self.assertIn("directory", run("info", tmp).stderr)
            missing = os.path.join(tmp, "missing.onnx")
            self.assert_clean_failure(["info", missing], missing)

    def model_with_external_w(self, folder, location):
        """The seed model with its weight 'w' stored externally at `location`."""
        model = onnx.load(os.path.join(ARGS.corpus, "..", "seeds", "load_model", "valid_mul.onnx"))
        w = model.graph.initializer[0]
        w.ClearField("float_data")
        w.data_location = onnx.TensorProto.EXTERNAL
        entry = w.external_data.add()
        entry.key, entry.value = "location", location
        path = os.path.join(folder, "m.onnx")
        onnx.save(model, path)
        return path

    def test_symlink_out_of_the_model_folder(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.mkdir(os.path.join(tmp, "model"))
            with open(os.path.join(tmp, "secret.bin"), "wb") as f:
                f.write(b"\0" * 16)
            os.symlink(os.path.join(tmp, "secret.bin"), os.path.join(tmp, "model", "w.bin"))
            path = self.model_with_external_w(os.path.join(tmp, "model"), "w.bin")
            self.assert_clean_failure(["info", path], path)
            self.assertIn("leads out of the model's folder", run("info", path).stderr)

    def test_fifo_as_external_data_is_refused_at_once(self):
        # Opening a FIFO waits for a writer: before, every command hung here
        # (the timeout turns a regression into a failure).
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "w.bin")
            os.mkfifo(fifo)
            path = self.model_with_external_w(tmp, "w.bin")
            out = os.path.join(tmp, "out.onnx")
            for args in (["info", path], ["check", path], ["convert", path, out], ["run", path, "--random"]):
                with self.subTest(command=args[0]):
                    proc = run(*args, timeout=30)
                    self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
                    lines = proc.stderr.strip().splitlines()
                    self.assertEqual(len(lines), 1, proc.stderr)
                    self.assertIn(path, lines[0])
                    self.assertIn(f"{fifo}: is a FIFO, not a regular file", lines[0])
            self.assertFalse(os.path.exists(out))

    def test_output_that_is_not_a_regular_file_is_refused(self):
        # As root, `convert m.onnx /dev/null` used to replace /dev/null with the
        # model, and a FIFO named as the output was replaced the same way.
        model = os.path.join(ARGS.corpus, "..", "seeds", "load_model", "valid_mul.onnx")
        with tempfile.TemporaryDirectory() as tmp:
            fifo = os.path.join(tmp, "out.onnx")
            os.mkfifo(fifo)
            try:
                for target in (fifo, "/dev/null"):
                    before = os.lstat(target)
                    for extra in ([], ["--external-data", "--external-threshold", "0"]):
                        with self.subTest(target=target, flags=extra):
                            proc = run("convert", model, target, *extra, timeout=30)
                            self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
                            lines = proc.stderr.strip().splitlines()
                            self.assertEqual(len(lines), 1, proc.stderr)
                            self.assertIn(f"{target}: is a ", lines[0])
                            self.assertIn("not a regular file", lines[0])
                    after = os.lstat(target)
                    self.assertEqual((after.st_ino, after.st_mode, after.st_rdev),
                                     (before.st_ino, before.st_mode, before.st_rdev), f"{target} was replaced")
                self.assertEqual(os.listdir(tmp), ["out.onnx"], "no temporary file may be left behind")
                self.assertEqual([n for n in os.listdir("/dev") if n.startswith(".null")], [])
            finally:
                restore_dev_null()

    def usage_error(self, *args):
        """Runs a command that must fail as a usage error: exit 2 and one
        line on stderr that starts with the command's prefix."""
        proc = run(*args, check=2)
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        command = args[0] if args and args[0] in COMMANDS else ""
        self.assertTrue(lines[0].startswith(f"onnxkit {command}: error: " if command else "onnxkit: error: "), lines[0])
        return lines[0]

    def test_usage_errors_exit_2_on_one_line(self):
        model = os.path.join(ARGS.models, "resnet18_opset17.onnx")
        self.assertIn("MODEL is required", self.usage_error("info"))
        self.assertIn("give a command", self.usage_error())
        self.assertIn("unknown command 'frobnicate'", self.usage_error("frobnicate"))
        self.assertIn("did you mean 'simplify'", self.usage_error("simplfy", model, "out.onnx"))
        self.assertIn("did you mean 'info'", self.usage_error("ifno", model))
        line = self.usage_error("info", model, "--jsn")
        self.assertIn("'--jsn'; did you mean '--json'", line)
        line = self.usage_error("run", model, "--thread=2", "--no-such-flag")
        self.assertIn("'--thread'; did you mean '--threads'", line)
        self.assertIn("'--no-such-flag'", line)
        self.assertIn("--threads", self.usage_error("run", model, "--threads", "abc"))

    def test_bad_values_are_refused(self):
        model = os.path.join(ARGS.models, "resnet18_opset17.onnx")
        self.assertIn("not in range", self.usage_error("run", model, "--threads", "-1"))
        self.assertIn("not in range", self.usage_error("bench", model, "--batch", "my batch"))
        self.assertIn("--top requires --profile", self.usage_error("bench", model, "--top", "3"))
        self.assertIn("LO is above HI", self.usage_error("run", model, "--random", "--val-range", "input:1,0"))
        self.assertIn("expected SYMBOL=N", self.usage_error("bench", model, "--dim", "batch"))
        self.assertIn("not in range", self.usage_error("run", model, "--random", "--warm-runs", "-1"))
        self.assertIn("expected NAME=FILE or NAME=VALUE", self.usage_error("run", model, "--input", "image.npy"))
        for command in ("convert", "simplify", "edit"):
            self.assertIn("cannot be negative", self.usage_error(command, model, "out.onnx", "--external-threshold", "-5"))
        # Refusals that need the model read: exit 1, the flag and the value named.
        with tempfile.TemporaryDirectory() as tmp:
            proc = run("simplify", model, os.path.join(tmp, "out.onnx"), "--exclude-node", "/layer1/layer1.0/conv1/Con",
                       check=1)
            self.assertIn("--exclude-node: no node is named '/layer1/layer1.0/conv1/Con'; did you mean "
                          "'/layer1/layer1.0/conv1/Conv'?", proc.stderr)
            self.assertEqual(os.listdir(tmp), [])
            data = os.path.join(tmp, "x.npy")
            np.save(data, np.zeros((1, 3, 224, 224), np.float32))
            proc = run("bench", model, "--input", f"input={data}", "--shape", "input:1,3,64,64", "--runs", "1", check=1)
            self.assertIn("--shape input:1,3,64,64 contradicts --input input, whose data has shape [1,3,224,224]",
                          proc.stderr)

    def test_an_unwritable_output_is_reported_before_the_work(self):
        model = os.path.join(ARGS.models, "resnet50_opset17.onnx")
        with tempfile.TemporaryDirectory() as tmp:
            missing = os.path.join(tmp, "no-such-folder", "out.onnx")
            for args in (("simplify", model, missing), ("convert", model, missing), ("shapes", model, missing),
                         ("edit", model, missing, "--batch", "2"), ("draw", model, "-o", missing[:-4] + "svg")):
                proc = run(*args, check=1)
                self.assertIn(f"folder '{os.path.dirname(missing)}' does not exist", proc.stderr)
                self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
                # Reported before the model is even read: a missing model would be the error otherwise.
                proc = run(args[0], os.path.join(tmp, "absent.onnx"), *args[2:], check=1)
                self.assertIn(f"folder '{os.path.dirname(missing)}' does not exist", proc.stderr)

    def test_help_command(self):
        self.assertEqual(run("help", "info", check=0).stdout, run("info", "--help", check=0).stdout)
        self.assertEqual(run("help", check=0).stdout, run("--help", check=0).stdout)
        for command in COMMANDS:
            self.assertIn(command, run("help", check=0).stdout)
        self.assertIn("unknown command 'infp'; did you mean 'info'", run("help", "infp", check=2).stderr)

    def test_help_teaches(self):
        for command in ("info", "check", "convert"):
            proc = run(command, "--help", check=0)
            self.assertIn("Examples:", proc.stdout)


def run_on_terminal(*args):
    """Runs onnxkit with stderr on a pseudo-terminal; returns (exit code, stdout, what the terminal got)."""
    import pty
    master, slave = pty.openpty()
    proc = subprocess.Popen([ARGS.onnxkit, *map(str, args)], stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL)
    os.close(slave)
    terminal = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO once the child has gone
            break
        if not chunk:
            break
        terminal += chunk
    os.close(master)
    stdout = proc.stdout.read().decode()
    proc.stdout.close()
    return proc.wait(timeout=600), stdout, terminal.decode(errors="replace")


class ProgressLine(unittest.TestCase):
    """Long work on a big model (resnet50: 102 MB) shows its steps on a
    terminal, on one line wiped at the end; never in a pipe or with --quiet."""

    def test_shown_on_a_terminal_only(self):
        model = os.path.join(ARGS.models, "resnet50_opset17.onnx")
        small = os.path.join(ARGS.models, "resnet18_opset17.onnx")
        with tempfile.TemporaryDirectory() as tmp:
            svg = os.path.join(tmp, "g.svg")
            for command in (("draw", model, "-o", svg), ("convert", model, os.path.join(tmp, "c.onnx"))):
                code, stdout, terminal = run_on_terminal(*command)
                self.assertEqual(code, 0, terminal)
                self.assertIn(f"\ronnxkit {command[0]}: reading the model...", terminal.replace("\x1b[K", ""))
                self.assertTrue(terminal.endswith("\r\x1b[K"), repr(terminal[-40:]))  # wiped before the results
                self.assertIn("wrote", stdout)
                code, _, terminal = run_on_terminal(*command, "--quiet")
                self.assertEqual((code, terminal), (0, ""))
                proc = run(*command, check=0)
                self.assertEqual(proc.stderr, "")
            code, _, terminal = run_on_terminal("draw", small, "-o", svg)
            self.assertEqual((code, terminal), (0, ""), "a small model's work is over before a line could be read")
            code, _, terminal = run_on_terminal("simplify", model, os.path.join(tmp, "s.onnx"))
            self.assertEqual(code, 0, terminal)
            for step in ("reading the model", "finding inputs the original runs on", "checking the result", "writing"):
                self.assertIn(f"onnxkit simplify: {step}...", terminal)
            code, _, terminal = run_on_terminal("compare", model, model, "--no-local")
            self.assertEqual(code, 0, terminal)
            self.assertIn("onnxkit compare: running B...", terminal)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--corpus", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()

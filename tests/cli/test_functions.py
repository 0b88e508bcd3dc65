#!/usr/bin/env python3
"""End-to-end tests of model-local functions (ModelProto.functions): `run`
expands them at session build, `info` and `check` list them, `simplify` and
`edit` keep them working.

The truth: PyTorch's own output for a torch export with
`export_modules_as_functions`, and for hand-made models ONNX Runtime running
the same model inlined by `onnx.inliner` (a current onnx from PyPI: Debian's
1.12 has no inliner). Two interpreters, so: this script runs under the test
venv (torch, onnxruntime) and calls itself with `--make DIR` under the onnx
venv to build and inline the hand-made models.

usage: test_functions.py --onnxkit PATH --onnx-python PYTHON [unittest args]
Exit 77 (skipped) when an interpreter lacks what it needs."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

SKIP = 77
ARGS = None


# --- hand-made models (run under the onnx venv: onnx >= 1.16) ---------------

def make_models(out):
    import numpy as np
    import onnx
    import onnx.inliner
    from onnx import TensorProto as T
    from onnx import helper as h

    F = T.FLOAT
    CUSTOM = h.make_opsetid("custom", 1)

    def function(domain, name, inputs, outputs, nodes, attributes=(), defaults=(), imports=None):
        f = h.make_function(domain, name, inputs, outputs, nodes, imports or [h.make_opsetid("", 17), CUSTOM],
                            attributes=list(attributes))
        f.attribute_proto.extend(defaults)
        return f

    def ref(name, ref_name, kind):
        a = h.make_attribute(name, 0.0 if kind == "f" else 0)
        a.ClearField("f")
        a.ClearField("i")
        a.ref_attr_name = ref_name
        a.type = onnx.AttributeProto.FLOAT if kind == "f" else onnx.AttributeProto.INT
        return a

    def node_with_refs(op, inputs, outputs, refs, domain="", **kwargs):
        n = h.make_node(op, inputs, outputs, domain=domain, **kwargs)
        n.attribute.extend(refs)
        return n

    # custom:ScaledAct(x) -> y: LeakyRelu(alpha=@alpha, default 0.5) then
    # Elu(alpha=@beta, no default: Elu's own 1.0 when the call gives none).
    scaled_act = function("custom", "ScaledAct", ["x"], ["y"], [
        node_with_refs("LeakyRelu", ["x"], ["t"], [ref("alpha", "alpha", "f")]),
        node_with_refs("Elu", ["t"], ["y"], [ref("alpha", "beta", "f")]),
    ], attributes=["beta"], defaults=[h.make_attribute("alpha", 0.5)])
    # custom:Block(x, w) -> y: nested call forwarding @alpha; its
    # intermediates "m" and "t" are also names of the main graph.
    block = function("custom", "Block", ["x", "w"], ["y"], [
        h.make_node("MatMul", ["x", "w"], ["m"]),
        node_with_refs("ScaledAct", ["m"], ["t"], [ref("alpha", "alpha", "f")], domain="custom"),
        h.make_node("Add", ["t", "x"], ["y"]),
    ], attributes=["alpha"])
    # A standard op's name in a custom domain: custom:Relu is the model's own op (Abs here).
    custom_relu = function("custom", "Relu", ["x"], ["y"], [h.make_node("Abs", ["x"], ["y"])])
    # A function whose body holds an If reading the function's own values.
    gated = function("custom", "Gated", ["x", "c"], ["y"], [
        h.make_node("Neg", ["x"], ["n"]),
        h.make_node("If", ["c"], ["y"],
                    then_branch=h.make_graph([h.make_node("Mul", ["n", "x"], ["p"])], "then", [],
                                             [h.make_tensor_value_info("p", F, None)]),
                    else_branch=h.make_graph([h.make_node("Sub", ["n", "x"], ["q"])], "else", [],
                                             [h.make_tensor_value_info("q", F, None)])),
    ])
    functions = [scaled_act, block, custom_relu, gated]

    x = h.make_tensor_value_info("x", F, [3, 4])
    w = h.make_tensor_value_info("w", F, [4, 4])
    c = h.make_tensor_value_info("c", T.BOOL, [])
    y = h.make_tensor_value_info("y", F, [3, 4])
    models = {}
    # Nested calls, attribute given / defaulted, custom-domain op named Relu,
    # intermediate names that clash with the graph's ("m", "t", "blk/m").
    models["nested"] = h.make_graph([
        h.make_node("Block", ["x", "w"], ["h1"], domain="custom", name="blk", alpha=0.2),
        h.make_node("Block", ["h1", "w"], ["h2"], domain="custom", name="blk2", alpha=0.4, beta=0.7),
        h.make_node("ScaledAct", ["h2"], ["h3"], domain="custom", beta=0.3),
        h.make_node("Relu", ["h3"], ["blk/m"], domain="custom", name="r"),
        h.make_node("Sigmoid", ["blk/m"], ["m"]),
        h.make_node("Tanh", ["h1"], ["t"]),
        h.make_node("Add", ["m", "t"], ["y"]),
    ], "nested", [x, w], [y])
    # Block's @alpha not given, and Block has no default: ScaledAct gets no
    # alpha and its own default 0.5 applies, as ONNX Runtime runs it.
    models["forwarded_default"] = h.make_graph([
        h.make_node("Block", ["x", "w"], ["y"], domain="custom"),
    ], "forwarded_default", [x, w], [y])
    # Calls inside If branches, and a function holding an If.
    models["if_branches"] = h.make_graph([
        h.make_node("If", ["c"], ["b"],
                    then_branch=h.make_graph([h.make_node("Block", ["x", "w"], ["tb"], domain="custom", alpha=0.1)],
                                             "then", [], [h.make_tensor_value_info("tb", F, [3, 4])]),
                    else_branch=h.make_graph([h.make_node("Relu", ["x"], ["eb"], domain="custom")],
                                             "else", [], [h.make_tensor_value_info("eb", F, [3, 4])])),
        h.make_node("Gated", ["b", "c"], ["y"], domain="custom"),
    ], "if_branches", [x, w, c], [y])
    # A call inside a Loop body, reading an outer value.
    i64 = h.make_tensor_value_info
    body = h.make_graph([
        h.make_node("Block", ["acc", "w"], ["acc_out"], domain="custom", name="loop_blk", alpha=0.3),
        h.make_node("Identity", ["cond"], ["cond_out"]),
    ], "body", [i64("i", T.INT64, []), i64("cond", T.BOOL, []), i64("acc", F, [3, 4])],
        [i64("cond_out", T.BOOL, []), i64("acc_out", F, [3, 4])])
    models["loop"] = h.make_graph([
        h.make_node("Constant", [], ["trips"], value=h.make_tensor("trips", T.INT64, [], [3])),
        h.make_node("Constant", [], ["yes"], value=h.make_tensor("yes", T.BOOL, [], [True])),
        h.make_node("Loop", ["trips", "yes", "x"], ["y"], body=body),
    ], "loop", [x, w], [y])

    # A function with a standard op's name in the default domain: the op's
    # fallback implementation (IR spec), so the runtime's Relu kernel runs,
    # as in ONNX Runtime (onnx.inliner would expand it into Abs).
    models["shadow"] = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "shadow", [x], [y])
    shadow = function("", "Relu", ["x"], ["y"], [h.make_node("Abs", ["x"], ["y"])], imports=[h.make_opsetid("", 17)])

    rng = np.random.default_rng(7)
    feeds = {"x": rng.standard_normal((3, 4)).astype(np.float32),
             "w": (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)}
    for name, graph in models.items():
        model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17), CUSTOM],
                             functions=functions + ([shadow] if name == "shadow" else []), ir_version=10)
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out, f"{name}.onnx"))
        onnx.save(onnx.inliner.inline_local_functions(model), os.path.join(out, f"{name}.inlined.onnx"))
    np.save(os.path.join(out, "x.npy"), feeds["x"])
    np.save(os.path.join(out, "w.npy"), feeds["w"])

    # Refused: a recursion through two functions, and a function importing
    # another opset version than the model.
    ping = function("custom", "Ping", ["a"], ["b"], [h.make_node("Pong", ["a"], ["b"], domain="custom")])
    pong = function("custom", "Pong", ["a"], ["b"], [h.make_node("Ping", ["a"], ["b"], domain="custom")])
    graph = h.make_graph([h.make_node("Ping", ["x"], ["y"], domain="custom", name="call")], "g", [x], [y])
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17), CUSTOM], functions=[ping, pong],
                           ir_version=10), os.path.join(out, "recursive.onnx"))
    old = function("custom", "Old", ["a"], ["b"], [h.make_node("Relu", ["a"], ["b"])],
                   imports=[h.make_opsetid("", 13)])
    graph = h.make_graph([h.make_node("Old", ["x"], ["y"], domain="custom")], "g", [x], [y])
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17), CUSTOM], functions=[old], ir_version=10),
              os.path.join(out, "old_opset.onnx"))


# --- the tests (run under the test venv: torch, onnxruntime) -----------------

def run(*args, check=None):
    proc = subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=300)
    if check is not None and proc.returncode != check:
        raise AssertionError(f"onnxkit {' '.join(map(str, args))}: exit {proc.returncode}, wanted {check}\n"
                             f"{proc.stdout}{proc.stderr}")
    return proc


def onnxkit_outputs(model, feeds, out):
    """Runs `onnxkit run` with .npy feeds; its outputs in order."""
    import numpy as np
    args = ["run", model, "--output-dir", out]
    for name, path in feeds.items():
        args += ["--input", f"{name}={path}"]
    run(*args, check=0)
    outputs, k = [], 0
    while os.path.exists(os.path.join(out, f"output_{k}.npy")):
        outputs.append(np.load(os.path.join(out, f"output_{k}.npy")))
        k += 1
    return outputs


class HandMade(unittest.TestCase):
    """Hand-made models against onnx.inliner's expansion run by ONNX Runtime."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        subprocess.run([ARGS.onnx_python, os.path.abspath(__file__), "--make", cls.dir], check=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def feeds(self, model):
        import numpy as np
        import onnx
        names = [i.name for i in onnx.load(model).graph.input]
        files = {n: os.path.join(self.dir, f"{n}.npy") for n in names if n in ("x", "w")}
        values = {n: np.load(p) for n, p in files.items()}
        return names, files, values

    def check_against_ort(self, name, extra=None, inliner=True):
        """Our run of NAME against ONNX Runtime's run of NAME with its
        functions and, `inliner`, of NAME inlined by onnx.inliner."""
        import numpy as np
        import onnxruntime as ort
        model = os.path.join(self.dir, f"{name}.onnx")
        names, files, values = self.feeds(model)
        for key, value in (extra or {}).items():
            path = os.path.join(self.dir, f"{name}_{key}.npy")
            np.save(path, value)
            files[key] = path
            values[key] = value
        with tempfile.TemporaryDirectory() as out:
            ours = onnxkit_outputs(model, files, out)
        references = [model] + ([os.path.join(self.dir, f"{name}.inlined.onnx")] if inliner else [])
        for reference in references:
            expected = ort.InferenceSession(reference, providers=["CPUExecutionProvider"]).run(None, values)
            self.assertEqual(len(ours), len(expected))
            for a, b in zip(ours, expected):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=reference)
        return expected

    def test_nested_attribute_references_defaults_custom_domain(self):
        # onnx.inliner (1.23) leaves FunctionProto.attribute_proto's defaults
        # out (ScaledAct's LeakyRelu gets no alpha, so 0.01, not 0.5): ONNX
        # Runtime's own run of the functions is the reference here.
        expected = self.check_against_ort("nested", inliner=False)
        # The reference itself must depend on what is tested: the default
        # alpha (0.5) and the call's (0.2) give other numbers.
        self.assertGreater(float(abs(expected[0]).sum()), 0)

    def test_default_behind_an_unset_reference(self):
        self.check_against_ort("forwarded_default", inliner=False)

    def test_a_standard_op_name_runs_the_kernel(self):
        import numpy as np
        expected = self.check_against_ort("shadow", inliner=False)
        self.assertGreater(float(np.abs(expected[0] - np.abs(np.load(os.path.join(self.dir, "x.npy")))).max()), 0.1)

    def test_functions_in_if_branches(self):
        import numpy as np
        for c in (True, False):
            self.check_against_ort("if_branches", {"c": np.array(c)})

    def test_function_in_loop_body(self):
        self.check_against_ort("loop")

    def test_recursion_refused(self):
        model = os.path.join(self.dir, "recursive.onnx")
        proc = run("run", model, "--random", check=1)
        self.assertIn("model-local function 'custom:Ping' calls itself ('custom:Ping' -> 'custom:Pong' -> "
                      "'custom:Ping')", proc.stderr)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)

    def test_other_opset_refused(self):
        proc = run("run", os.path.join(self.dir, "old_opset.onnx"), "--random", check=1)
        self.assertIn("imports ai.onnx opset 13 but the model imports opset 17", proc.stderr)

    def test_info_and_check_list_them(self):
        model = os.path.join(self.dir, "nested.onnx")
        info = json.loads(run("info", model, "--json", check=0).stdout)
        self.assertEqual(info["functions"], 4)
        by_name = {f["name"]: f for f in info["local_functions"]}
        self.assertEqual(by_name["Block"]["call_sites"], 2)
        self.assertEqual(by_name["ScaledAct"]["call_sites"], 2)  # one from Block's body
        self.assertEqual(by_name["Relu"]["call_sites"], 1)
        self.assertEqual(by_name["Gated"]["call_sites"], 0)
        self.assertEqual(by_name["Block"]["inputs"], ["x", "w"])
        self.assertEqual(by_name["Block"]["nodes"], 3)
        self.assertEqual(by_name["ScaledAct"]["attributes"], {"beta": None, "alpha": 0.5})
        text = run("info", model, check=0).stdout
        self.assertIn("custom:Block(x, w) -> (y), attributes [alpha], 3 nodes, 2 call sites", text)
        text = run("check", model, check=0).stdout
        self.assertIn("function: custom:ScaledAct(x) -> (y), attributes [beta, alpha], 2 nodes, 2 call sites", text)

    def test_simplify_and_edit_keep_them_working(self):
        import numpy as np
        model = os.path.join(self.dir, "nested.onnx")
        _, files, _ = self.feeds(model)
        with tempfile.TemporaryDirectory() as out:
            want = onnxkit_outputs(model, files, os.path.join(out, "a"))
            simplified = os.path.join(out, "s.onnx")
            run("simplify", model, simplified, check=0)
            edited = os.path.join(out, "e.onnx")
            run("edit", model, edited, "--rename", "h1=hidden", check=0)
            inlined = os.path.join(out, "i.onnx")
            proc = run("simplify", model, inlined, "--inline-functions", check=0)
            self.assertIn("6 calls of model-local functions expanded", proc.stdout)
            for path, sub in ((simplified, "b"), (edited, "c"), (inlined, "d")):
                got = onnxkit_outputs(path, files, os.path.join(out, sub))
                np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
            import onnx
            self.assertEqual(len(onnx.load(simplified).functions), 4)  # kept, each call one opaque node
            result = onnx.load(inlined)
            self.assertEqual(len(result.functions), 0)
            self.assertFalse([n.op_type for n in result.graph.node if n.domain == "custom"])


class TorchExport(unittest.TestCase):
    """A torch export with export_modules_as_functions against torch itself."""

    def test_modules_as_functions(self):
        import numpy as np
        import onnx
        import torch

        class Block(torch.nn.Module):
            def __init__(self, c):
                super().__init__()
                self.fc = torch.nn.Linear(c, c)
                self.act = torch.nn.GELU()
                self.norm = torch.nn.LayerNorm(c)

            def forward(self, x):
                return self.norm(x + self.act(self.fc(x)))

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = torch.nn.ModuleList([Block(16) for _ in range(3)])
                self.head = torch.nn.Linear(16, 5)

            def forward(self, x):
                for b in self.blocks:
                    x = b(x)
                return torch.softmax(self.head(x), -1)

        torch.manual_seed(0)
        net = Net().eval()
        x = torch.randn(2, 7, 16)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "net.onnx")
            torch.onnx.export(net, x, path, opset_version=15, input_names=["x"], output_names=["y"],
                              export_modules_as_functions={Block, torch.nn.GELU, torch.nn.LayerNorm})
            model = onnx.load(path)
            self.assertEqual({f.name for f in model.functions}, {"Block", "GELU", "LayerNorm"})
            np.save(os.path.join(tmp, "x.npy"), x.numpy())
            with torch.no_grad():
                expected = net(x).numpy()
            ours = onnxkit_outputs(path, {"x": os.path.join(tmp, "x.npy")}, os.path.join(tmp, "out"))
            np.testing.assert_allclose(ours[0], expected, rtol=1e-4, atol=1e-5)
            info = json.loads(run("info", path, "--json", check=0).stdout)
            calls = {f["name"]: f["call_sites"] for f in info["local_functions"]}
            self.assertEqual(calls, {"Block": 3, "GELU": 1, "LayerNorm": 1})


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--make", help="build the hand-made models into this folder (under the onnx venv)")
    parser.add_argument("--onnxkit")
    parser.add_argument("--onnx-python")
    ARGS, rest = parser.parse_known_args()
    if ARGS.make:
        make_models(ARGS.make)
        return 0
    try:
        import onnxruntime  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        print(f"skipped: {e}")
        return SKIP
    if not ARGS.onnx_python or subprocess.run([ARGS.onnx_python, "-c", "import onnx.inliner"]).returncode != 0:
        print(f"skipped: {ARGS.onnx_python} has no onnx.inliner")
        return SKIP
    program = unittest.main(argv=[sys.argv[0], *rest], exit=False)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())

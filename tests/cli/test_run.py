#!/usr/bin/env python3
"""End-to-end tests of `onnxkit run` and `onnxkit bench` on models exported by
Debian's torch. The truth is PyTorch's own output for the same input
(tests/models/export_models.py saves both), Python onnx's shape inference for
intermediate shapes, and hand-made models for the error cases.

usage: test_run.py --onnxkit PATH --models DIR [unittest args]"""

import argparse
import glob
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ARGS = None


def run(*args):
    return subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=900)


def models():
    found = sorted(glob.glob(os.path.join(ARGS.models, "*.onnx")))
    assert found, f"no exported models in {ARGS.models}"
    return found


def input_name(model):
    return onnx.load(model, load_external_data=False).graph.input[0].name


class MatchesPyTorch(unittest.TestCase):
    def test_every_model_at_every_opset(self):
        names = set()
        for model in models():
            stem = model[: -len(".onnx")]
            names.add(os.path.basename(stem))
            with self.subTest(model=os.path.basename(model)), tempfile.TemporaryDirectory() as out:
                proc = run("run", model, "--input", f"{input_name(model)}={stem}.input.npy", "--output-dir", out)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                ours = np.load(os.path.join(out, "output_0.npy"))
                ref = np.load(stem + ".torch.npy")
                self.assertEqual(ours.shape, ref.shape)
                bound = 1e-4 * max(1.0, float(np.abs(ref).max()))
                self.assertLessEqual(float(np.abs(ours - ref).max()), bound)
        for name in ("resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "bert_encoder"):
            for opset in (13, 17):
                self.assertIn(f"{name}_opset{opset}", names)


class Outputs(unittest.TestCase):
    def test_outputs_all_exposes_every_intermediate_with_its_shape(self):
        model = os.path.join(ARGS.models, "resnet18_opset13.onnx")
        with open(model, "rb") as f:
            before = f.read()
        proto = onnx.shape_inference.infer_shapes(onnx.load(model))
        declared = {v.name: v.type.tensor_type for v in list(proto.graph.value_info) + list(proto.graph.output)}
        node_outputs = [o for n in proto.graph.node for o in n.output if o]
        with tempfile.TemporaryDirectory() as out:
            proc = run("run", model, "--random", "--outputs", "all", "--output-dir", out, "--format", "pb")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(os.path.join(out, "outputs.json")) as f:
                listing = json.load(f)
            self.assertEqual(listing[0]["name"], proto.graph.output[0].name)
            self.assertEqual(sorted(e["name"] for e in listing), sorted(node_outputs))
            for entry in listing:
                t = declared[entry["name"]]
                self.assertEqual(entry["shape"], [d.dim_value for d in t.shape.dim], entry["name"])
                self.assertEqual(entry["dtype"], "float32" if t.elem_type == TensorProto.FLOAT else entry["dtype"])
                tensor = onnx.load_tensor(os.path.join(out, entry["file"]))
                self.assertEqual(list(tensor.dims), entry["shape"])
        with open(model, "rb") as f:
            self.assertEqual(f.read(), before, "the model file must not change")

    def test_named_outputs_and_npy_equal_pb(self):
        model = os.path.join(ARGS.models, "mobilenet_v2_opset13.onnx")
        stem = model[:-5]
        feed = f"{input_name(model)}={stem}.input.npy"
        middle = onnx.load(model).graph.node[5].output[0]
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            self.assertEqual(run("run", model, "--input", feed, "--outputs", f"{middle},output", "--output-dir", a).returncode, 0)
            self.assertEqual(run("run", model, "--input", feed, "--outputs", f"{middle},output", "--output-dir", b,
                                 "--format", "pb").returncode, 0)
            for k in (0, 1):
                npy = np.load(os.path.join(a, f"output_{k}.npy"))
                pb = numpy_helper.to_array(onnx.load_tensor(os.path.join(b, f"output_{k}.pb")))
                np.testing.assert_array_equal(npy, pb)
            np.testing.assert_allclose(np.load(os.path.join(a, "output_1.npy")), np.load(stem + ".torch.npy"), atol=1e-4)


def save(model, folder, name="m.onnx"):
    path = os.path.join(folder, name)
    onnx.save(model, path)
    return path


def tiny_model(op="Relu", domain="", input_dims=(2, 3)):
    node = helper.make_node(op, ["x"], ["y"], name="the_node", domain=domain)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(input_dims))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 3)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets)


class BadInput(unittest.TestCase):
    def assert_one_line_error(self, proc, *parts):
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        for p in parts:
            self.assertIn(p, lines[0])

    def test_unknown_missing_and_mistyped_inputs(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = save(tiny_model(input_dims=("batch", 3)), tmp)
            np.save(os.path.join(tmp, "ok.npy"), np.ones((4, 3), np.float32))
            np.save(os.path.join(tmp, "int.npy"), np.ones((4, 3), np.int64))
            np.save(os.path.join(tmp, "rank.npy"), np.ones((4, 3, 1), np.float32))
            np.save(os.path.join(tmp, "dim.npy"), np.ones((4, 5), np.float32))
            self.assertEqual(run("run", path, "--input", f"x={tmp}/ok.npy").returncode, 0)
            self.assert_one_line_error(run("run", path, "--input", f"xx={tmp}/ok.npy"), "'xx'", "did you mean 'x'")
            self.assert_one_line_error(run("run", path), "missing input 'x'", "float32[batch,3]")
            self.assert_one_line_error(run("run", path, "--input", f"x={tmp}/int.npy"), "input 'x'", "element type", "int64")
            self.assert_one_line_error(run("run", path, "--input", f"x={tmp}/rank.npy"), "input 'x'", "rank")
            self.assert_one_line_error(run("run", path, "--input", f"x={tmp}/dim.npy"), "input 'x'", "dim 1 should be 3")
            self.assert_one_line_error(run("run", path, "--random"), "'x'", "symbolic dim 'batch'", "--shape")
            self.assertEqual(run("run", path, "--random", "--shape", "x:5,3").returncode, 0)

    def test_unsupported_op_names_op_domain_opset_and_node(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = save(tiny_model("FancyOp", "com.example"), tmp)
            self.assert_one_line_error(run("run", path, "--random"), "FancyOp", "com.example", "opset 3", "the_node")

    def test_no_output_folder_left_half_written_on_failure(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = save(tiny_model(), tmp)
            out = os.path.join(tmp, "out")
            self.assertEqual(run("run", path, "--input", "nope=x.npy", "--output-dir", out).returncode, 1)
            self.assertFalse(os.path.exists(out))


def endless_loop_model():
    """y = x + 1, 2^62 times: a Loop no run lives to finish."""
    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Add", ["v", "one"], ["v_out"])], "body",
        [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []), vi("v", TensorProto.FLOAT, [1])],
        [vi("c_out", TensorProto.BOOL, []), vi("v_out", TensorProto.FLOAT, [1])],
        [numpy_helper.from_array(np.ones(1, np.float32), "one")])
    graph = helper.make_graph([helper.make_node("Loop", ["n", "", "x"], ["y"], body=body, name="the_loop")], "g",
                              [vi("x", TensorProto.FLOAT, [1])], [vi("y", TensorProto.FLOAT, [1])],
                              [numpy_helper.from_array(np.array(2**62, np.int64), "n")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


class HostileInput(unittest.TestCase):
    """Models and input files made to crash or exhaust a run: each ends in one
    line naming what is wrong (or numpy's answer), quickly, and never a crash."""

    assert_one_line_error = BadInput.assert_one_line_error

    def test_npz_inputs_read_as_numpy_wrote_them(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = save(tiny_model("Neg", input_dims=(2, 3)), tmp)
            x = np.arange(6, dtype=np.float32).reshape(2, 3)
            np.savez(os.path.join(tmp, "stored.npz"), x=x)
            np.savez_compressed(os.path.join(tmp, "deflated.npz"), x=x)
            for name in ("stored.npz", "deflated.npz"):
                with self.subTest(name=name):
                    out = os.path.join(tmp, name + ".out")
                    proc = run("run", path, "--input", os.path.join(tmp, name), "--output-dir", out)
                    self.assertEqual(proc.returncode, 0, proc.stderr)
                    np.testing.assert_array_equal(np.load(os.path.join(out, "output_0.npy")), -x)

    def test_npz_declaring_more_than_its_bytes_inflate_to_is_refused_at_once(self):
        # 4 GiB declared by a few bytes of deflate (a zip written by hand, so
        # that its headers can lie): the old reader allocated it all first.
        with tempfile.TemporaryDirectory() as tmp:
            path = save(tiny_model(input_dims=(2, 3)), tmp)
            buffer = io.BytesIO()
            np.save(buffer, np.zeros((2, 3), np.float32))
            npy = buffer.getvalue()
            deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
            packed = deflate.compress(npy) + deflate.flush()
            crc, name, declared = zlib.crc32(npy), b"x.npy", 0xFFFFFFFE
            local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(packed), declared, len(name), 0)
            central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(packed), declared,
                                  len(name), 0, 0, 0, 0, 0, 0)
            offset = len(local) + len(name) + len(packed)
            end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central) + len(name), offset, 0)
            bomb = os.path.join(tmp, "bomb.npz")
            with open(bomb, "wb") as f:
                f.write(local + name + packed + central + name + end)
            proc = run("run", path, "--input", bomb)
            self.assert_one_line_error(proc, "bomb.npz", "'x.npy' declares 4294967294 bytes")

    def test_npy_with_a_30_kb_shape_text(self):
        # std::regex overflowed the stack on it. numpy stops at 32 dims, so
        # the file is written by hand (format version 2: a 4-byte header length).
        with tempfile.TemporaryDirectory() as tmp:
            path = save(tiny_model(input_dims=[1] * 10000), tmp)
            header = ("{'descr': '<f4', 'fortran_order': False, 'shape': (" + "1, " * 10000 + "), }\n").encode()
            x = os.path.join(tmp, "x.npy")
            with open(x, "wb") as f:
                f.write(b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header + struct.pack("<f", -3))
            proc = run("run", path, "--input", f"x={x}")
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("float32[" + ",".join(["1"] * 10000) + "]  min 0  max 0", proc.stdout)  # Relu(-3)

    def test_most_negative_integer_over_minus_one_gives_numpys_answer(self):
        # SIGFPE before; numpy wraps the quotient and gives a remainder of 0.
        with tempfile.TemporaryDirectory() as tmp:
            a = np.array([np.iinfo(np.int64).min, 7], np.int64)
            b = np.array([-1, -1], np.int64)
            np.save(os.path.join(tmp, "a.npy"), a)
            for op, expected in (("Div", np.array([np.iinfo(np.int64).min, -7])), ("Mod", np.mod(a, b))):
                with self.subTest(op=op):
                    node = helper.make_node(op, ["a", "b"], ["y"])
                    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.INT64, [2])],
                                              [helper.make_tensor_value_info("y", TensorProto.INT64, [2])],
                                              [numpy_helper.from_array(b, "b")])
                    path = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp, op + ".onnx")
                    out = os.path.join(tmp, op)
                    proc = run("run", path, "--input", f"a={tmp}/a.npy", "--output-dir", out)
                    self.assertEqual(proc.returncode, 0, proc.stderr)
                    np.testing.assert_array_equal(np.load(os.path.join(out, "output_0.npy")), expected)

    def test_nodes_off_their_schema_are_refused(self):
        # A node with no outputs crashed; a Relu with two inputs ran.
        with tempfile.TemporaryDirectory() as tmp:
            no_outputs = tiny_model()
            no_outputs.graph.node.append(helper.make_node("Relu", ["y"], [], name="dangling"))
            two_inputs = tiny_model()
            two_inputs.graph.node[0].input.append("x")
            for model, parts in ((no_outputs, ["Relu node 'dangling'", "Relu has 1 output, got 0"]),
                                 (two_inputs, ["Relu node 'the_node'", "Relu takes 1 input, got 2"])):
                path = save(model, tmp)
                with self.subTest(parts=parts):
                    self.assert_one_line_error(run("run", path, "--random"), *parts)

    def test_names_that_are_not_utf8_in_the_json_listing(self):
        # JSON holds text only: nlohmann's dump threw ("internal error").
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            with open(path, "wb") as f:
                # y renamed to the byte 0xFF, as node output and as graph output (same lengths).
                data = tiny_model().SerializeToString()
                f.write(data.replace(b"\x12\x01y", b"\x12\x01\xff").replace(b"\n\x01y\x12", b"\n\x01\xff\x12"))
            proc = subprocess.run([ARGS.onnxkit, "run", path, "--random", "--output-dir", os.path.join(tmp, "out")],
                                  capture_output=True, timeout=60)  # bytes: the summary prints the name as it is
            self.assertEqual(proc.returncode, 0, proc.stderr)
            with open(os.path.join(tmp, "out", "outputs.json"), encoding="utf-8") as f:
                self.assertEqual(json.load(f)[0]["name"], "\ufffd")

    def test_timeout_stops_a_loop_that_would_not_end(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = save(endless_loop_model(), tmp)
            proc = run("run", path, "--random", "--timeout", "0.5")
            self.assert_one_line_error(proc, "Loop node 'the_loop'", "time limit (0.5 s)")
            self.assertEqual(run("run", path, "--random", "--timeout", "-1").returncode, 2)


class Bench(unittest.TestCase):
    def test_json_report(self):
        model = os.path.join(ARGS.models, "squeezenet1_1_opset13.onnx")
        proc = run("bench", model, "--runs", "3", "--warmup", "1", "--threads", "1", "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        report = json.loads(proc.stdout)
        for key in ("median_ms", "min_ms", "p90_ms", "runs", "threads", "peak_rss_mb"):
            self.assertIn(key, report)
        self.assertEqual(report["runs"], 3)
        self.assertEqual(report["threads"], 1)
        self.assertLessEqual(report["min_ms"], report["median_ms"])
        self.assertLessEqual(report["median_ms"], report["p90_ms"])
        self.assertGreater(report["peak_rss_mb"], 1)

    def test_a_symbolic_batch_needs_no_flag(self):
        # seed002 declares its batch 'batch': bench runs one sample and says so.
        model = os.path.join(ARGS.models, "seed002_opset17.onnx")
        proc = run("bench", model, "--runs", "1", "--warmup", "0", "--threads", "1", "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(json.loads(proc.stdout)["notes"],
                         ["symbolic dim 'batch' taken as 1 (--dim batch=N sets it)"])
        proc = run("bench", model, "--runs", "1", "--warmup", "0", "--shape", "input:2,3,32,32", "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotIn("notes", json.loads(proc.stdout))

    def test_profile_lists_operators(self):
        model = os.path.join(ARGS.models, "squeezenet1_1_opset13.onnx")
        proc = run("bench", model, "--runs", "2", "--warmup", "1", "--profile")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("Conv", proc.stdout)
        self.assertIn("slowest 15 nodes of", proc.stdout)
        every = run("bench", model, "--runs", "1", "--warmup", "0", "--profile", "--top", "0")
        listed = every.stdout.split("nodes:\n", 1)[1].strip().splitlines()
        self.assertNotIn(" of ", every.stdout.split("slowest", 1)[1].splitlines()[0])
        self.assertGreater(len(listed), 15)

    def test_profile_in_json_has_every_node_and_the_operator_totals(self):
        model = os.path.join(ARGS.models, "squeezenet1_1_opset13.onnx")
        proc = run("bench", model, "--runs", "2", "--warmup", "1", "--threads", "1", "--profile", "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        report = json.loads(proc.stdout)
        nodes, operators = report["nodes"], report["operators"]
        self.assertEqual(sum(op["nodes"] for op in operators), len(nodes))
        for op in operators:  # each total is the sum over its nodes
            total = sum(n["ms"] for n in nodes if n["op_type"] == op["op_type"])
            self.assertAlmostEqual(op["ms"], total, places=6)
        self.assertEqual(operators, sorted(operators, key=lambda op: -op["ms"]))
        # Every Conv of the model ran, alone or with the activation it absorbed.
        conv_names = {n.name for n in onnx.load(model).graph.node if n.op_type == "Conv"}
        step_names = {n["name"] for n in nodes}
        self.assertTrue(conv_names <= step_names, conv_names - step_names)
        self.assertNotIn("nodes", json.loads(run("bench", model, "--runs", "1", "--warmup", "0", "--json").stdout))

    def test_reports_waiting_for_a_core_taken_by_other_work(self):
        # Pinned to one CPU beside a busy loop, the runs must wait for it.
        model = os.path.join(ARGS.models, "squeezenet1_1_opset13.onnx")
        cpu = str(min(os.sched_getaffinity(0)))
        spinner = subprocess.Popen(["taskset", "-c", cpu, sys.executable, "-c", "while True: pass"])
        try:
            proc = subprocess.run(["taskset", "-c", cpu, ARGS.onnxkit, "bench", model, "--runs", "5", "--warmup", "1",
                                   "--threads", "2", "--json"], capture_output=True, text=True, timeout=600)
        finally:
            spinner.kill()
            spinner.wait()
        self.assertEqual(proc.returncode, 0, proc.stderr)
        report = json.loads(proc.stdout)
        self.assertGreater(report["cpu_wait_ms"], 0.05 * report["mean_ms"])
        self.assertTrue(any("waited" in w and "for a core" in w for w in report["warnings"]), report["warnings"])
        # Two threads on one shared CPU wait for each other: runs fall back to one.
        self.assertGreater(report["single_thread_runs"], 0)
        self.assertEqual(report["threads"], 2)

    def test_batch_reports_throughput(self):
        # squeezenet was exported with batch 1 fixed; --batch rewrites it.
        model = os.path.join(ARGS.models, "squeezenet1_1_opset13.onnx")
        proc = run("bench", model, "--batch", "8", "--runs", "2", "--warmup", "1", "--json")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        report = json.loads(proc.stdout)
        self.assertEqual(report["batch"], 8)
        self.assertAlmostEqual(report["throughput_per_s"], 8 * 1000 / report["median_ms"], places=3)
        text = run("bench", model, "--batch", "2", "--runs", "1", "--warmup", "0")
        self.assertIn("batch 2  throughput", text.stdout)

    def test_batch_baked_into_constants_is_one_line_error(self):
        # The encoder's attention reshapes to constants holding batch x heads,
        # so only batch 1 runs: the batch really reached the inputs.
        model = os.path.join(ARGS.models, "bert_encoder_opset17.onnx")
        proc = run("bench", model, "--batch", "8", "--runs", "1", "--warmup", "0")
        self.assertEqual(proc.returncode, 1)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)
        self.assertIn("at batch 8", proc.stderr)
        self.assertIn("Reshape node", proc.stderr)
        self.assertEqual(run("bench", model, "--batch", "0").returncode, 2)  # a usage error


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    parser.add_argument("--models", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()

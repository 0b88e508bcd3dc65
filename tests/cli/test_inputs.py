#!/usr/bin/env python3
"""End-to-end tests of the inputs `onnxkit run` and `onnxkit bench` take
(literal values, --val-range, --dim, symbolic dims bench sets itself), of
run's warm latency and of bench's microseconds, on models of
tests/models/export_zoo.py (exported into --zoo when missing). The truth is
PyTorch's output for the same input, and the saved inputs read by numpy.

usage: test_inputs.py --onnxkit PATH --zoo DIR [unittest args]"""

import argparse
import json
import os
import re
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


def onnxkit(*args, check=0):
    proc = subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=600)
    if check is not None:
        assert proc.returncode == check, f"exit {proc.returncode}, wanted {check}: {proc.stderr}"
    return proc


def zoo_model(name):
    os.makedirs(ARGS.zoo, exist_ok=True)
    export_zoo.export(name, ARGS.zoo)
    return os.path.join(ARGS.zoo, name + ".onnx")


def literal(array):
    """An int64 array as run's --input literal: int64:[[1,2],[3,4]]."""
    return "int64:" + json.dumps(array.tolist()).replace(" ", "")


def run_outputs(model, *args):
    """Runs MODEL; returns (outputs by index, inputs used, stdout)."""
    with tempfile.TemporaryDirectory() as out:
        inputs = os.path.join(out, "inputs.npz")
        proc = onnxkit("run", model, *args, "--output-dir", out, "--save-inputs", inputs)
        with open(os.path.join(out, "outputs.json")) as f:
            listing = json.load(f)
        outputs = [np.load(os.path.join(out, e["file"])) for e in listing]
        used = dict(np.load(inputs))
        return outputs, used, proc.stdout


def close_to(test, ours, ref):
    test.assertEqual(ours.shape, ref.shape)
    bound = 1e-4 * max(1.0, float(np.abs(ref).max()))
    test.assertLessEqual(float(np.abs(ours - ref).max()), bound)


class LiteralInputs(unittest.TestCase):
    def test_token_ids_typed_on_the_command_line(self):
        # GPT-style decoder: its example ids as a literal give PyTorch's logits.
        model = zoo_model("gpt_decoder")
        ids = np.load(os.path.join(ARGS.zoo, "gpt_decoder.input.npy"))
        outputs, used, _ = run_outputs(model, "--input", f"input_ids={literal(ids)}")
        np.testing.assert_array_equal(used["input_ids"], ids)
        close_to(self, outputs[0], np.load(os.path.join(ARGS.zoo, "gpt_decoder.torch.npy")))
        # bench takes the same literal; the data binds 'batch', so there is nothing to note.
        proc = onnxkit("bench", model, "--input", f"input_ids={literal(ids)}", "--runs", "1", "--warmup", "0", "--json")
        self.assertNotIn("notes", json.loads(proc.stdout))

    def test_a_sample_rate_as_a_number(self):
        # An int64 scalar typed as a bare number takes the declared type;
        # both branches of the model's rate test against PyTorch.
        torch_model, _ = export_zoo.build("vad_sample_rate")
        model = zoo_model("vad_sample_rate")
        for rate in (16000, 8000):
            outputs, used, _ = run_outputs(model, "--random", "--seed", "3", "--input", f"sample_rate={rate}",
                                           "--dim", "batch=2", "--dim", "samples=1024")
            self.assertEqual(used["sample_rate"].dtype, np.int64)
            self.assertEqual(used["sample_rate"].shape, ())
            self.assertEqual(used["audio"].shape, (2, 1024))
            with torch.no_grad():
                expected = torch_model(torch.from_numpy(used["audio"]), torch.tensor(rate)).numpy()
            close_to(self, outputs[0], expected)
        proc = onnxkit("run", model, "--random", "--input", "sample_rate=16k", check=1)
        self.assertIn("--input sample_rate", proc.stderr)

    def test_bench_with_an_npz_on_symbolic_dims(self):
        # The .npz's arrays bind 'batch' and 'samples': no --shape is made up
        # to contradict them.
        model = zoo_model("vad_sample_rate")
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "inputs.npz")
            np.savez(data, audio=np.zeros((2, 1024), np.float32), sample_rate=np.array(16000, np.int64))
            proc = onnxkit("bench", model, "--input", data, "--runs", "1", "--warmup", "0", "--json")
            self.assertNotIn("notes", json.loads(proc.stdout))


class ValueRanges(unittest.TestCase):
    def test_token_ids_in_a_range_and_below_the_table(self):
        model = zoo_model("bert_encoder")
        _, used, _ = run_outputs(model, "--random", "--val-range", "input_ids:7,9")
        self.assertEqual(set(np.unique(used["input_ids"])), {7, 8, 9})
        # Without a range, ids stay below the rows of the table they index.
        proto = onnx.load(model)
        gather = next(n for n in proto.graph.node if n.op_type == "Gather" and "input_ids" in n.input)
        table = next(t for t in proto.graph.initializer if t.name == gather.input[0])
        _, used, _ = run_outputs(model, "--random")
        self.assertGreaterEqual(int(used["input_ids"].min()), 0)
        self.assertLess(int(used["input_ids"].max()), min(10, table.dims[0]))

    def test_float_ranges_and_bad_ones(self):
        model = zoo_model("lstm")
        _, used, _ = run_outputs(model, "--random", "--dim", "batch=2", "--val-range", "-3,-2")
        self.assertGreaterEqual(float(used["input"].min()), -3)
        self.assertLess(float(used["input"].max()), -2)
        self.assertLess(float(used["input"].min()), -2.9)  # the whole range is drawn
        self.assertIn("LO is above HI", onnxkit("run", model, "--random", "--val-range", "input:2,1", check=2).stderr)
        proc = onnxkit("run", model, "--random", "--dim", "batch=1", "--val-range", "inptu:0,1", check=1)
        self.assertIn("did you mean 'input'", proc.stderr)


class SymbolicDims(unittest.TestCase):
    def test_dim_binds_the_batch(self):
        model = zoo_model("lstm")
        torch_model, _ = export_zoo.build("lstm")
        outputs, used, _ = run_outputs(model, "--random", "--dim", "batch=3")
        self.assertEqual(used["input"].shape, (3, 32, 64))
        with torch.no_grad():
            expected = torch_model(torch.from_numpy(used["input"]))
        close_to(self, outputs[0], (expected[0] if isinstance(expected, tuple) else expected).numpy())
        self.assertIn("--dim batch=N", onnxkit("run", model, "--random", check=1).stderr)
        self.assertIn("did you mean 'batch'", onnxkit("run", model, "--random", "--dim", "bacth=3", check=1).stderr)
        self.assertIn("expected SYMBOL=N", onnxkit("run", model, "--random", "--dim", "batch", check=2).stderr)

    def test_bench_takes_an_unbound_batch_as_one(self):
        model = zoo_model("lstm")
        proc = onnxkit("bench", model, "--runs", "1", "--warmup", "0", "--json")
        self.assertEqual(json.loads(proc.stdout)["notes"], ["symbolic dim 'batch' taken as 1 (--dim batch=N sets it)"])
        proc = onnxkit("bench", model, "--runs", "1", "--warmup", "0", "--dim", "batch=2", "--json")
        self.assertNotIn("notes", json.loads(proc.stdout))


class Timing(unittest.TestCase):
    LINE = re.compile(r"first run ([\d.]+) (ms|µs)(, warm ([\d.]+) (ms|µs)( \(median of (\d+)\))?)?.*, (\d+) threads?$")

    def test_run_reports_warm_latency_and_bench_threads(self):
        model = zoo_model("lstm")
        _, _, text = run_outputs(model, "--random", "--dim", "batch=1")
        line = self.LINE.search(text.strip().splitlines()[-1])
        self.assertIsNotNone(line, text)
        self.assertIsNotNone(line.group(3), "one warm run by default")
        threads = int(line.group(8))
        proc = onnxkit("bench", model, "--runs", "1", "--warmup", "0", "--json")
        self.assertEqual(json.loads(proc.stdout)["threads"], threads, "run and bench default to the same threads")
        _, _, text = run_outputs(model, "--random", "--dim", "batch=1", "--warm-runs", "3")
        self.assertEqual(self.LINE.search(text.strip().splitlines()[-1]).group(7), "3")
        _, _, text = run_outputs(model, "--random", "--dim", "batch=1", "--warm-runs", "0")
        self.assertNotIn("warm", text.strip().splitlines()[-1])

    def test_bench_shows_microseconds_for_a_tiny_model(self):
        graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "tiny",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tiny.onnx")
            onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
            text = onnxkit("bench", path, "--runs", "20", "--threads", "1").stdout
            latency = next(l for l in text.splitlines() if l.startswith("latency"))
            self.assertRegex(latency, r"median \d+\.\d µs")


class OutputFolders(unittest.TestCase):
    def test_an_unwritable_output_folder_is_reported_before_the_work(self):
        with tempfile.TemporaryDirectory() as tmp:
            blocker = os.path.join(tmp, "file")
            open(blocker, "w").close()
            absent = os.path.join(tmp, "absent.onnx")  # the model is not even read
            proc = onnxkit("run", absent, "--random", "--output-dir", os.path.join(blocker, "out"), check=1)
            self.assertIn(f"'{blocker}' is not a folder", proc.stderr)
            proc = onnxkit("run", absent, "--random", "--save-inputs", os.path.join(blocker, "in.npz"), check=1)
            self.assertIn(f"'{blocker}' is not a folder", proc.stderr)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    parser.add_argument("--zoo", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest])


if __name__ == "__main__":
    main()

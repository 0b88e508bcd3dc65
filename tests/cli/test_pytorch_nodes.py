#!/usr/bin/env python3
"""Every single-node model of ONNX's backend test data converted by
`onnxkit convert --to pytorch` and run by Debian's torch against the
outputs the data expects (an independent truth: ONNX's reference results).

Each folder ends one of three ways: it converts and matches; it is refused
with one line naming the op, the node and why (nothing written); or it is
listed in tests/cli/pytorch_expected_failures.txt with the reason it cannot
match. The list is enforced both ways: a listed folder that now passes
fails the test too, so the list never goes stale; but for folders listed
as "random draws", which match by chance now and then (test_bernoulli_seed's
ten draws: about 1 run in 160).

usage: test_pytorch_nodes.py --onnxkit PATH [--data DIR] [--expected FILE] [--only SUBSTRING] [--report]"""

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch
from onnx import numpy_helper

warnings.filterwarnings("ignore")


def read_value(path, value_type):
    """A .pb file of the test data as a numpy array, a list of them (a
    sequence) or None (an empty optional), as the graph declares it."""
    data = open(path, "rb").read()
    if value_type.HasField("optional_type"):
        optional = onnx.OptionalProto()
        optional.ParseFromString(data)
        if optional.elem_type == onnx.OptionalProto.TENSOR:
            return numpy_helper.to_array(optional.tensor_value)
        if optional.elem_type == onnx.OptionalProto.SEQUENCE:
            return [numpy_helper.to_array(t) for t in optional.sequence_value.tensor_values]
        return None
    if value_type.HasField("sequence_type"):
        sequence = onnx.SequenceProto()
        sequence.ParseFromString(data)
        return [numpy_helper.to_array(t) for t in sequence.tensor_values]
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    array = numpy_helper.to_array(tensor)
    declared = value_type.tensor_type.elem_type
    if onnx.TensorProto.BFLOAT16 in (tensor.data_type, declared):  # numpy has none: the bits come as uint16
        return Bfloat16(array)
    return array


class Bfloat16:
    """bfloat16 values read as their uint16 bits."""

    def __init__(self, bits):
        self.bits = bits

    def tensor(self):
        return torch.from_numpy(self.bits.astype(np.int16)).view(torch.bfloat16)

    def floats(self):
        return (self.bits.astype(np.uint32) << 16).view(np.float32)


def as_torch(value):
    if value is None:
        return None
    if isinstance(value, list):
        return [as_torch(v) for v in value]
    if isinstance(value, Bfloat16):
        return value.tensor()
    if value.dtype == np.uint16 or value.dtype == np.uint32 or value.dtype == np.uint64:
        raise TypeError(f"torch has no {value.dtype}")
    return torch.from_numpy(np.array(value))


def matches(expected, actual):
    """(ok, why not)."""
    if expected is None:
        return actual is None, "expected an empty optional"
    if isinstance(expected, list):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return False, "sequence length differs"
        for e, a in zip(expected, actual):
            ok, why = matches(e, a)
            if not ok:
                return ok, why
        return True, ""
    if not torch.is_tensor(actual):
        return False, f"returned {type(actual).__name__}, not a tensor"
    if isinstance(expected, Bfloat16):
        if actual.dtype != torch.bfloat16:
            return False, f"dtype {actual.dtype}, expected bfloat16"
        expected = expected.floats()
    got = actual.detach().cpu()
    if got.dtype == torch.bfloat16:
        got = got.float()
    got = got.numpy()
    if tuple(got.shape) != tuple(expected.shape):
        return False, f"shape {list(got.shape)}, expected {list(expected.shape)}"
    if expected.dtype == object or expected.dtype.kind in "US":
        return bool(np.array_equal(got, expected)), "strings differ"
    if got.dtype != expected.dtype and not (expected.dtype == np.float16 and got.dtype == np.float32):
        return False, f"dtype {got.dtype}, expected {expected.dtype}"
    if expected.dtype.kind in "fc":
        ok = np.allclose(got.astype(expected.dtype), expected, rtol=1e-3, atol=1e-5, equal_nan=True)
        return ok, "" if ok else f"max abs diff {np.nanmax(np.abs(got - expected)):.3g}"
    ok = np.array_equal(got, expected)
    return ok, "" if ok else "values differ"


def run_case(onnxkit, folder, scratch):
    """('pass' | 'refused' | 'fail', detail)."""
    model = os.path.join(folder, "model.onnx")
    out = os.path.join(scratch, os.path.basename(folder))
    proc = subprocess.run([onnxkit, "convert", model, "--to", "pytorch", out, "--no-check"], capture_output=True, text=True)
    if proc.returncode != 0:
        message = proc.stderr.strip()
        lines = message.splitlines()
        if len(lines) != 1 or "cannot convert" not in message and "torch has no" not in message:
            return "fail", "conversion error: " + message.replace("\n", " | ")
        if os.path.exists(out):
            return "fail", "refused, yet wrote " + out
        return "refused", message.split("error: ", 1)[-1]
    try:
        graph = onnx.load(model).graph
        spec = importlib.util.spec_from_file_location("generated_" + os.path.basename(folder), os.path.join(out, "model.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        net = module.load()
    except Exception as e:  # noqa: BLE001 - any failure is the verdict
        return "fail", f"loading model.py: {type(e).__name__}: {e}"
    initializers = {t.name for t in graph.initializer}
    input_types = [i.type for i in graph.input if i.name not in initializers]
    sets = sorted(d for d in os.listdir(folder) if d.startswith("test_data_set"))
    for data_set in sets:
        path = os.path.join(folder, data_set)
        inputs = [read_value(os.path.join(path, f"input_{k}.pb"), t) for k, t in enumerate(input_types)
                  if os.path.exists(os.path.join(path, f"input_{k}.pb"))]
        outputs = [read_value(os.path.join(path, f"output_{k}.pb"), o.type) for k, o in enumerate(graph.output)]
        try:
            with torch.no_grad():
                result = net(*[as_torch(v) for v in inputs])
        except Exception as e:  # noqa: BLE001
            return "fail", f"{data_set}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        result = result if isinstance(result, tuple) else (result,)
        if len(result) != len(outputs):
            return "fail", f"{len(result)} outputs, expected {len(outputs)}"
        for k, (expected, actual) in enumerate(zip(outputs, result)):
            ok, why = matches(expected, actual)
            if not ok:
                return "fail", f"{data_set} output {k}: {why}"
    return "pass", ""


def read_expected(path):
    expected = {}
    if not path or not os.path.exists(path):
        return expected
    for line in open(path):
        line = line.split("#", 1)
        name = line[0].strip()
        if name:
            expected[name] = line[1].strip() if len(line) > 1 else ""
    return expected


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--onnxkit", required=True)
    parser.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    parser.add_argument("--expected", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch_expected_failures.txt"))
    parser.add_argument("--only", default="", help="run the folders whose name contains this")
    parser.add_argument("--report", action="store_true", help="print every folder's verdict and the op coverage")
    args = parser.parse_args()
    torch.set_num_threads(1)
    expected = read_expected(args.expected)
    folders = sorted(d for d in os.listdir(args.data) if args.only in d)
    verdicts = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in folders:
            verdicts[name] = run_case(args.onnxkit, os.path.join(args.data, name), scratch)
            if args.report:
                print(f"{verdicts[name][0]:<8} {name:<60} {verdicts[name][1]}", flush=True)
    problems = []
    for name, (verdict, detail) in verdicts.items():
        if verdict == "fail" and name not in expected:
            problems.append(f"FAIL {name}: {detail}")
        by_chance = expected.get(name, "").startswith("random draws")
        if verdict != "fail" and name in expected and not by_chance and not args.only:
            problems.append(f"NOW {verdict.upper()}: {name} is listed in {os.path.basename(args.expected)}; remove it")
    if not args.only:
        for name in expected:
            if name not in verdicts:
                problems.append(f"listed but not in the data: {name}")
    counts = {v: sum(1 for r in verdicts.values() if r[0] == v) for v in ("pass", "refused", "fail")}
    ops = {}
    for name, (verdict, _) in verdicts.items():
        graph = onnx.load(os.path.join(args.data, name, "model.onnx"), load_external_data=False).graph
        for node in graph.node:
            ops.setdefault(node.op_type, set()).add(verdict)
    converted_ops = sorted(op for op, v in ops.items() if "pass" in v)
    print(f"{len(verdicts)} folders: {counts['pass']} match, {counts['refused']} refused with a reason, "
          f"{counts['fail']} fail ({len(expected)} listed as expected); "
          f"op types matching in at least one folder: {len(converted_ops)} of {len(ops)}")
    if args.report:
        print("op types never matching:", ", ".join(sorted(op for op, v in ops.items() if "pass" not in v)))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

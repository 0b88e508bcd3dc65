"""onnxkit.compare against truths made outside it: a copy of an export with
one Conv's weights altered here with onnx and numpy (that Conv is the
culprit by construction), ONNX Runtime's outputs of both models (the size
of the error), and `onnxkit compare --json` (the dict must be its object)."""

import json
import threading
import time

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

import onnxkit


def altered_copy(path, where):
    """`path` loaded, with the weights of its first, middle or last Conv times
    1.01; returns (model, that Conv's name)."""
    model = onnx.load(str(path))
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    conv = convs[{"first": 0, "middle": len(convs) // 2, "last": len(convs) - 1}[where]]
    weight = next(t for t in model.graph.initializer if t.name == conv.input[1])
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * np.float32(1.01), weight.name))
    return model, conv.name


def ort_outputs(model, feed):
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, feed)))


@pytest.mark.parametrize("case,where", [("resnet18_opset17", "middle"), ("mobilenet_v2_opset13", "first"),
                                        ("resnet18_opset13", "last")])
def test_the_altered_conv_is_the_culprit(models, case, where):
    path = models / f"{case}.onnx"
    altered, conv = altered_copy(path, where)
    x = np.load(models / f"{case}.input.npy")
    report = onnxkit.compare(path, altered, inputs={"input": x})
    assert report["schema"] == "onnxkit.compare/1"
    assert report["passed"] is False
    assert report["culprit"] is not None and report["culprit"]["name"] == conv, report["culprit"]
    assert report["culprit"]["op_type"] == "Conv"
    assert report["nodes"][0]["name"] == conv
    assert report["a"] == str(path) and report["b"] == "<model>"
    assert report["inputs"] == [f"input float32[{','.join(map(str, x.shape))}] (file)"]
    # The size of the error at the output, as ONNX Runtime sees it on both models.
    expected, actual = ort_outputs(path, {"input": x}), ort_outputs(altered, {"input": x})
    for name in expected:
        truth = float(np.abs(actual[name].astype(np.float64) - expected[name]).max())
        tensor = next(t for t in report["tensors"] if t["name_b"] == name)
        assert tensor["is_output"] and not tensor["stats"]["passed"]
        assert tensor["stats"]["max_abs"] == pytest.approx(truth, rel=0.05, abs=1e-4)


def test_identical_models_have_no_suspect(models):
    path = models / "resnet18_opset17.onnx"
    model = onnx.load(str(path))
    for b, local in ((model, True), (model.SerializeToString(), False)):
        report = onnxkit.compare(str(path), b, seed=1, local=local)
        assert report["passed"] is True
        assert report["culprit"] is None and report["first_divergent"] is None
        assert not any(n["suspect"] for n in report["nodes"])
        assert all(t["stats"]["max_abs"] == 0 for t in report["tensors"])
        assert report["pairing"]["by_name"] > len(model.graph.node)


def cli_json(cli, *args):
    proc = cli("compare", *args, "--json")
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_the_dict_is_what_the_cli_prints(cli, models, tmp_path):
    a = models / "mobilenet_v2_opset17.onnx"
    altered, _ = altered_copy(a, "middle")
    b = tmp_path / "altered.onnx"
    onnx.save(altered, str(b))
    # Random inputs, several samples, another statistic.
    got = onnxkit.compare(a, str(b), seed=3, iterations=2, rtol=1e-3, atol=1e-4, stat="quantile", quantile=0.9)
    assert got == cli_json(cli, a, b, "--seed", 3, "--iterations", 2, "--rtol", 1e-3, "--atol", 1e-4, "--stat",
                           "quantile", "--quantile", 0.9)
    assert got["samples"] == 2 and got["tolerance"]["stat"] == "quantile"
    # Inputs given: the CLI reads the same array from a file.
    x = np.load(models / "mobilenet_v2_opset17.input.npy")
    got = onnxkit.compare(str(a), str(b), inputs={"input": x}, fail_fast=True)
    assert got == cli_json(cli, a, b, "--input", f"input={models / 'mobilenet_v2_opset17.input.npy'}", "--fail-fast")
    got = onnxkit.compare(str(a), str(b), local=False, top=3)
    expected = cli_json(cli, a, b, "--no-local")
    assert len(got["nodes"]) == 3 and got["nodes"] == expected["nodes"][:3]
    got["nodes"] = expected["nodes"]
    assert got == expected and got["culprit"] is None


def test_errors_carry_the_clis_message(cli, models, tmp_path):
    a = models / "resnet18_opset17.onnx"
    other = models / "bert_encoder_opset17.onnx"  # other inputs
    with pytest.raises(onnxkit.Error) as e:
        onnxkit.compare(a, other)
    assert str(e.value) == cli.error("compare", a, other)
    with pytest.raises(onnxkit.Error) as e:
        onnxkit.compare(a, b"not a model")
    assert "<bytes>" in str(e.value)
    with pytest.raises(onnxkit.InvalidArgument, match="stat"):
        onnxkit.compare(a, a, stat="worst")
    with pytest.raises(onnxkit.InvalidArgument, match="iterations"):
        onnxkit.compare(a, a, iterations=0)
    with pytest.raises(onnxkit.InvalidArgument):
        onnxkit.compare(a, 42)
    # A wrongly shaped input: the message names the array given, not a temporary file.
    with pytest.raises(onnxkit.Error) as e:
        onnxkit.compare(a, a, inputs={"input": np.zeros((1, 3, 8), np.float32)})
    assert "input" in str(e.value) and "onnxkit-" not in str(e.value)


def test_the_gil_is_released_while_it_compares(models):
    path = models / "resnet18_opset17.onnx"
    done, ticks = threading.Event(), []
    thread = threading.Thread(target=lambda: (onnxkit.compare(path, path, threads=1), done.set()))
    start = time.perf_counter()
    thread.start()
    while not done.is_set():  # runs only while compare lets go of the GIL
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    thread.join()
    elapsed = time.perf_counter() - start
    assert elapsed > 0.1, elapsed
    # Python ran throughout: no gap in the ticks of more than a fifth of the call.
    gaps = np.diff([start, *ticks])
    assert len(ticks) > 20 and gaps.max() < 0.2 * elapsed, (len(ticks), gaps.max(), elapsed)


def test_dims_and_value_ranges_as_the_flags_take_them(models):
    # seed002 declares its batch 'batch': dims binds it (the report's input
    # line shows the shape); val_ranges reaches the inputs (a misspelled
    # name is refused there, as --val-range's is) and bad bounds are refused.
    path = models / "seed002_opset17.onnx"
    report = onnxkit.compare(path, path, dims={"batch": 3}, val_ranges={"input": (5.0, 6.0)})
    assert report["passed"] is True
    assert report["inputs"] == ["input float32[3,3,32,32] (random, seed 0)"], report["inputs"]
    with pytest.raises(onnxkit.Error, match="did you mean 'input'"):
        onnxkit.compare(path, path, val_ranges={"inptu": (0.0, 1.0)})
    with pytest.raises(onnxkit.InvalidArgument, match="LO is above HI"):
        onnxkit.compare(path, path, val_ranges={None: (1.0, 0.0)})
    with pytest.raises(onnxkit.Error, match="did you mean 'batch'"):
        onnxkit.compare(path, path, dims={"bacth": 3})

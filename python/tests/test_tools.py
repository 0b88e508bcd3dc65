"""onnxkit.simplify, edit, info, check and infer_shapes against the commands
they stand for (whose own tests hold them to PyTorch and ONNX), ONNX's
checker, and ONNX Runtime running the results next to PyTorch's outputs."""

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import assert_close
from onnx import TensorProto, helper

import onnxkit

# The seeds' examples (seed002: glue over a dynamic batch; prepost: seed
# 000's pre- and post-processing; the example the demo simplifies) and two
# of the zoo's shapes of graph.
SIMPLIFY_CASES = ["seed002_opset13", "seed002_opset17", "prepost_opset17", "mobilenet_v2_opset17", "bert_encoder_opset17"]


def ort_output(model, feed):
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    return ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feed)[0]


def cli_result(cli, tmp_path, *args):
    out = tmp_path / "cli.onnx"
    proc = cli(*args[:2], out, *args[2:])
    assert proc.returncode == 0, proc.stderr
    return onnx.load(str(out))


@pytest.mark.parametrize("case", SIMPLIFY_CASES)
def test_simplify_gives_the_clis_model(cli, models, tmp_path, case):
    path = models / f"{case}.onnx"
    expected = cli_result(cli, tmp_path, "simplify", path)
    original = onnx.load(str(path))
    for given in (str(path), original, original.SerializeToString()):
        model, ok = onnxkit.simplify(given)
        assert ok is True
        assert isinstance(model, onnx.ModelProto)
        assert len(model.graph.node) == len(expected.graph.node)
        assert [n.op_type for n in model.graph.node] == [n.op_type for n in expected.graph.node]
    assert len(model.graph.node) < len(original.graph.node) or case.startswith("prepost")
    onnx.checker.check_model(model)
    x = np.load(models / f"{case}.input.npy")
    assert_close(ort_output(model, {original.graph.input[0].name: x}), np.load(models / f"{case}.torch.npy"))


def test_simplify_the_repositorys_example(cli, examples, tmp_path):
    path = examples / "sample_reshape.onnx"
    expected = cli_result(cli, tmp_path, "simplify", path)
    model, ok = onnxkit.simplify(onnx.load(str(path)))
    assert ok and len(model.graph.node) == len(expected.graph.node) < 15
    onnx.checker.check_model(model)


def test_onnxsim_call_sites(models):
    # The lines of deployment scripts, with onnxkit's simplify in onnxsim's place.
    from onnxkit import simplify

    stem = models / "seed002_opset17"
    onnx_model = onnx.load(str(stem.with_suffix(".onnx")))
    model_simp, check = simplify(onnx_model)
    assert check, "Simplified ONNX model could not be validated"
    assert model_simp.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"

    model_simp, check = simplify(onnx_model, overwrite_input_shapes={"input": [1, 3, 32, 32]})
    assert check
    dims = [d.dim_value for d in model_simp.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 3, 32, 32]
    x = np.load(f"{stem}.input.npy")
    assert_close(ort_output(model_simp, {"input": x}), np.load(f"{stem}.torch.npy"))

    model_simp, check = simplify(onnx_model, 3)  # check_n, positionally as onnxsim's second parameter
    assert check
    model_simp, check = simplify(str(stem.with_suffix(".onnx")), check_n=2, input_data={"input": x},
                                 test_input_shapes={"input": [4, 3, 32, 32]}, dynamic_input_shape=True)
    assert check
    with pytest.raises(onnxkit.InvalidArgument, match="custom_lib"):
        simplify(onnx_model, custom_lib="libcustom_op.so")


def test_simplify_skips_passes_by_onnxsims_names(models):
    # legacy_inputs lists its weights as inputs (old exports): frozen, its
    # BatchNormalization fuses into the Conv unless that pass is skipped.
    model = onnx.load(str(models / "legacy_inputs_opset17.onnx"))

    def ops(**kwargs):
        simplified, _ = onnxkit.simplify(model, freeze_initializers=True, **kwargs)
        return [n.op_type for n in simplified.graph.node]

    assert "BatchNormalization" not in ops()
    assert "BatchNormalization" in ops(skip_fuse_bn=True)
    assert "BatchNormalization" in ops(skipped_optimizers=["fuse_bn_into_conv"])
    assert "BatchNormalization" in ops(perform_optimization=False)
    with pytest.warns(UserWarning, match="freeze-initializers"):
        onnxkit.simplify(model)  # not frozen: the command's warning
    with pytest.raises(onnxkit.Error, match="no pass named 'fuse-bn-into-kernel'"):
        onnxkit.simplify(model, skipped_optimizers=["fuse_bn_into_kernel"])


def test_simplify_to_a_path_keeps_external_data(models, tmp_path):
    source = onnx.load(str(models / "resnet18_opset17.onnx"))
    external = tmp_path / "external.onnx"
    onnx.save(source, str(external), save_as_external_data=True, location="external.data")
    out = tmp_path / "out" / "simplified.onnx"
    out.parent.mkdir()
    model, ok = onnxkit.simplify(external, output=out)
    assert ok and out.exists() and (out.parent / "simplified.onnx.data").exists()
    assert any(t.data_location == TensorProto.EXTERNAL for t in model.graph.initializer)
    x = np.load(models / "resnet18_opset17.input.npy")
    assert_close(ort_output(out, {"input": x}), np.load(models / "resnet18_opset17.torch.npy"))


def test_info_is_the_json_the_cli_prints(cli, models):
    path = models / "bert_encoder_opset17.onnx"
    proc = cli("info", path, "--json")
    assert proc.returncode == 0, proc.stderr
    assert onnxkit.info(path) == json.loads(proc.stdout)
    proc = cli("info", path, "--json", "--nodes")
    assert onnxkit.info(str(path), nodes=True) == json.loads(proc.stdout)
    # In memory: the same but for the file it came from.
    in_memory = onnxkit.info(onnx.load(str(path)))
    from_file = json.loads(proc.stdout)
    del in_memory["file"], from_file["file"], from_file["nodes"]
    assert in_memory == from_file
    assert in_memory["compute"]["macs"] > 0


def broken_model():
    # A Relu reading a tensor nothing produces, and a Conv with a string kernel_shape.
    graph = helper.make_graph(
        [helper.make_node("Relu", ["ghost"], ["r"], name="relu1"),
         helper.make_node("Conv", ["x", "w"], ["y"], name="conv1", kernel_shape="3")],
        "broken",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [1, 1, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None), helper.make_tensor_value_info("r", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_check_lists_the_clis_problems(cli, models, tmp_path):
    assert onnxkit.check(models / "resnet18_opset17.onnx") == []
    assert onnxkit.check(onnx.load(str(models / "mobilenet_v2_opset17.onnx")), full=True) == []
    path = tmp_path / "broken.onnx"
    onnx.save(broken_model(), str(path))
    proc = cli("check", path)
    assert proc.returncode == 1
    lines = [line[len(f"{path}: "):] for line in proc.stdout.splitlines() if line.startswith(f"{path}: ")][:-1]
    problems = onnxkit.check(path)
    assert [str(p) for p in problems] == lines
    assert len(problems) >= 2
    assert {p.node_name for p in problems} >= {"relu1", "conv1"}
    assert [str(p) for p in onnxkit.check(broken_model())] == lines


def test_infer_shapes_gives_the_clis_value_info(cli, models, tmp_path):
    path = models / "seed002_opset17.onnx"
    expected = cli_result(cli, tmp_path, "shapes", path)
    model = onnxkit.infer_shapes(onnx.load(str(path)))
    assert len(model.graph.value_info) == len(expected.graph.value_info) > 10
    assert model.graph.value_info == expected.graph.value_info
    batch = model.graph.value_info[0].type.tensor_type.shape.dim[0]
    assert batch.dim_param == "batch"


# (model, operations as scripts give them, the same as the command's flags)
EDITS = [
    ("prelu_opset17", ["--fix-prelu-slope", "--replace-prelu"], ["--fix-prelu-slope", "--replace-prelu"]),
    ("instance_norm_opset17", [("set-attr-op", "InstanceNormalization:epsilon=1e-4")],
     ["--set-attr-op", "InstanceNormalization:epsilon=1e-4"]),
    ("seed002_opset17", ["batch 4", ("cleanup",)], ["--batch", "4", "--cleanup"]),
    ("fixed_batch_opset17", ["--batch=batch"], ["--batch", "batch"]),
    ("legacy_inputs_opset17", ["freeze-initializers"], ["--freeze-initializers"]),
]


@pytest.mark.parametrize("case,operations,flags", EDITS)
def test_edit_gives_the_clis_model(cli, models, tmp_path, case, operations, flags):
    path = models / f"{case}.onnx"
    expected = cli_result(cli, tmp_path, "edit", path, *flags)
    original = onnx.load(str(path))
    model = onnxkit.edit(original, operations)
    assert model == expected
    assert model != original
    onnx.checker.check_model(model, full_check=True)


def test_edit_errors_carry_the_clis_message(cli, models, tmp_path):
    path = models / "prepost_opset17.onnx"
    with pytest.raises(onnxkit.Error) as raised:
        onnxkit.edit(path, ["--rename inptu=image"])
    message = cli.error("edit", path, tmp_path / "out.onnx", "--rename", "inptu=image")
    assert str(raised.value) == message
    assert not (tmp_path / "out.onnx").exists()
    # A model in memory is named <model> where the command names the file.
    with pytest.raises(onnxkit.Error) as raised:
        onnxkit.edit(onnx.load(str(path)), [("rename", "inptu=image")])
    assert str(raised.value) == message.replace(str(path), "<model>")
    with pytest.raises(onnxkit.Error, match="unknown operation 'renmae'; did you mean 'rename'"):
        onnxkit.edit(path, ["renmae a=b"])
    with pytest.raises(onnxkit.InvalidArgument):
        onnxkit.edit(path, [42])

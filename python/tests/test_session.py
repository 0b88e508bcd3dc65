"""onnxkit.InferenceSession against PyTorch's outputs and ONNX Runtime's
InferenceSession on the build's exported models and on small models made
here, the ways scripts call ONNX Runtime."""

import threading
import time

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import assert_close
from onnx import TensorProto, helper

import onnxkit

OPSETS = (13, 17)


def both(path, **kwargs):
    ours = onnxkit.InferenceSession(str(path), **kwargs)
    theirs = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return ours, theirs


def described(args):
    return [(a.name, a.type, a.shape) for a in args]


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "bert_encoder"])
def test_outputs_match_pytorch_and_onnxruntime(models, name, opset):
    stem = models / f"{name}_opset{opset}"
    ours, theirs = both(stem.with_suffix(".onnx"))
    feed = {ours.get_inputs()[0].name: np.load(f"{stem}.input.npy")}
    got = ours.run(None, feed)
    expected = theirs.run(None, feed)
    assert [o.name for o in ours.get_outputs()] == [o.name for o in theirs.get_outputs()]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_close(g, e)
    assert_close(got[0], np.load(f"{stem}.torch.npy"))
    # An output asked for by name, ORT's other way of calling run.
    name0 = ours.get_outputs()[0].name
    (by_name,) = ours.run([name0], feed)
    np.testing.assert_array_equal(by_name, got[0])


@pytest.mark.parametrize(
    "name", ["resnet18", "mobilenet_v2", "bert_encoder", "seed002", "prepost", "legacy_inputs", "fixed_batch"]
)
def test_inputs_and_outputs_are_described_as_onnxruntime_does(models, name):
    ours, theirs = both(models / f"{name}_opset17.onnx")
    assert described(ours.get_inputs()) == described(theirs.get_inputs())
    assert described(ours.get_outputs()) == described(theirs.get_outputs())
    assert described(ours.get_overridable_initializers()) == described(theirs.get_overridable_initializers())
    assert ours.get_modelmeta().producer_name == theirs.get_modelmeta().producer_name
    assert ours.get_modelmeta().graph_name == theirs.get_modelmeta().graph_name


@pytest.mark.parametrize("opset", OPSETS)
def test_symbolic_batch_runs_at_any_batch(models, opset):
    stem = models / f"seed002_opset{opset}"
    sess = onnxkit.InferenceSession(str(stem.with_suffix(".onnx")))
    assert sess.get_inputs()[0].shape[0] == "batch"
    for suffix in ("", "3"):
        (y,) = sess.run(None, {"input": np.load(f"{stem}.input{suffix}.npy")})
        assert_close(y, np.load(f"{stem}.torch{suffix}.npy"))


def small_model(nodes, inputs, outputs, opset=17, initializers=()):
    graph = helper.make_graph(nodes, "small", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def scalar_input_model():
    """y = x * float(k): x [batch, 4] float, k an int64 scalar, as a sample
    rate or a step count comes into exported audio and decoding models."""
    return small_model(
        [helper.make_node("Cast", ["k"], ["kf"], to=TensorProto.FLOAT), helper.make_node("Mul", ["x", "kf"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("k", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
    )


def test_outputs_are_described_after_shape_inference_as_onnxruntime_does():
    # Exporters leave symbols on outputs that inference resolves (a decoder's
    # sequence length): ORT gives the numbers.
    data = small_model(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Shape", ["x"], ["s"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "MatMul_dim_1"]),
         helper.make_tensor_value_info("s", TensorProto.INT64, ["rank"])],
    )
    ours = onnxkit.InferenceSession(data)
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    assert described(ours.get_outputs()) == described(theirs.get_outputs())
    assert described(ours.get_outputs()) == [("y", "tensor(float)", ["batch", 3]), ("s", "tensor(int64)", [2])]


def test_integer_scalar_input_and_dynamic_batch():
    data = scalar_input_model()
    ours = onnxkit.InferenceSession(data)
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    assert described(ours.get_inputs()) == described(theirs.get_inputs())
    assert described(ours.get_inputs()) == [("x", "tensor(float)", ["batch", 4]), ("k", "tensor(int64)", [])]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    # A numpy scalar, a 0-d array and a Python int (numpy.asarray with the declared int64, as ORT converts).
    for k in (np.int64(3), np.array(3, dtype=np.int64), 3):
        (y,) = ours.run(None, {"x": x, "k": k})
        np.testing.assert_array_equal(y, x * 3)
    (y_ort,) = theirs.run(None, {"x": x, "k": np.array(3, dtype=np.int64)})  # ORT takes only the 0-d array
    np.testing.assert_array_equal(y, y_ort)


def test_sequences_come_back_as_lists_and_go_in_as_lists():
    # SplitToSequence gives a sequence output; SequenceLength and SequenceAt read a sequence input.
    data = small_model(
        [helper.make_node("SplitToSequence", ["x"], ["parts"], axis=0),
         helper.make_node("SequenceLength", ["s"], ["n"]),
         helper.make_node("SequenceAt", ["s", "i"], ["item"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 2]),
         helper.make_tensor_sequence_value_info("s", TensorProto.INT32, None),
         helper.make_tensor_value_info("i", TensorProto.INT64, [])],
        [helper.make_tensor_sequence_value_info("parts", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("item", TensorProto.INT32, ["m"])],
    )
    ours = onnxkit.InferenceSession(data)
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    assert described(ours.get_inputs()) == described(theirs.get_inputs())
    assert described(ours.get_outputs()) == described(theirs.get_outputs())
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    s = [np.array([1, 2], np.int32), np.array([7, 8, 9], np.int32)]
    parts, n, item = ours.run(None, {"x": x, "s": s, "i": np.int64(1)})
    assert isinstance(parts, list) and len(parts) == 3
    for k in range(3):
        np.testing.assert_array_equal(parts[k], x[k : k + 1])  # keepdims defaults to 1
    assert n.dtype == np.int64 and int(n) == 2
    np.testing.assert_array_equal(item, s[1])
    expected = theirs.run(None, {"x": x, "s": s, "i": np.array(1, np.int64)})
    assert isinstance(expected[0], list)
    for ours_part, their_part in zip(parts, expected[0]):
        np.testing.assert_array_equal(ours_part, their_part)


def test_empty_optional_comes_back_as_none():
    # Optional(x) when the flag is set, an empty optional otherwise, through If.
    some = helper.make_graph([helper.make_node("Optional", ["x"], ["o"])], "some", [],
                             [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)])
    some.output[0].type.CopyFrom(helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    none = helper.make_graph([helper.make_node("Optional", [], ["o"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, None))],
                             "none", [], [helper.make_tensor_value_info("o", TensorProto.FLOAT, None)])
    none.output[0].type.CopyFrom(some.output[0].type)
    out = helper.make_value_info("y", helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None)))
    data = small_model(
        [helper.make_node("If", ["flag"], ["y"], then_branch=some, else_branch=none)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]), helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
        [out],
        opset=18,
    )
    sess = onnxkit.InferenceSession(data)
    assert sess.get_outputs()[0].type == "optional(tensor(float))"
    x = np.array([1.5, -2], np.float32)
    (y,) = sess.run(None, {"x": x, "flag": np.bool_(True)})
    np.testing.assert_array_equal(y, x)
    (y,) = sess.run(None, {"x": x, "flag": np.array(False)})
    assert y is None


def test_inputs_in_any_numpy_layout_give_the_same_outputs(models):
    stem = models / "resnet18_opset17"
    sess = onnxkit.InferenceSession(str(stem.with_suffix(".onnx")))
    x = np.load(f"{stem}.input.npy")
    (expected,) = sess.run(None, {"input": x})
    flipped = x[:, :, ::-1, :]  # a strided view
    (ref_flipped,) = sess.run(None, {"input": np.ascontiguousarray(flipped)})
    unaligned_buffer = np.empty(x.nbytes + 1, np.uint8)[1:]
    unaligned = unaligned_buffer.view(np.float32).reshape(x.shape)
    unaligned[...] = x
    readonly = x.copy()
    readonly.setflags(write=False)
    cases = {
        "fortran order": (np.asfortranarray(x), expected),
        "big-endian": (x.astype(">f4"), expected),
        "unaligned": (unaligned, expected),
        "read-only": (readonly, expected),
        "nested lists": (x.tolist(), expected),
        "strided view": (flipped, ref_flipped),
    }
    for label, (feed, want) in cases.items():
        before = np.array(feed, copy=True)
        (got,) = sess.run(None, {"input": feed})
        np.testing.assert_array_equal(got, want, err_msg=label)
        # The caller's array is read, never written (it may be read in place).
        np.testing.assert_array_equal(np.asarray(feed), before, err_msg=label)


def test_one_session_run_from_eight_threads_gives_the_serial_results(models):
    for name in ("mobilenet_v2", "bert_encoder"):
        stem = models / f"{name}_opset17"
        sess = onnxkit.InferenceSession(str(stem.with_suffix(".onnx")))
        x = np.load(f"{stem}.input.npy")
        rng = np.random.default_rng(0)
        if x.dtype == np.int64:  # token ids: other ids, same shape
            feeds = [np.roll(x, k, axis=1) for k in range(8)]
        else:
            feeds = [x + 0.1 * k * rng.standard_normal(x.shape).astype(np.float32) for k in range(8)]
        serial = [sess.run(None, {sess.get_inputs()[0].name: f})[0] for f in feeds]
        assert not np.array_equal(serial[0], serial[1])  # the threads' results are told apart
        results = [[] for _ in feeds]
        errors = []
        start = threading.Barrier(len(feeds))

        def work(k):
            try:
                start.wait()
                for _ in range(3):
                    results[k].append(sess.run(None, {sess.get_inputs()[0].name: feeds[k]})[0])
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(len(feeds))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        for k, runs in enumerate(results):
            assert len(runs) == 3
            for got in runs:
                bound = 1e-6 * max(1.0, float(np.abs(serial[k]).max()))
                np.testing.assert_allclose(got, serial[k], rtol=0, atol=bound, err_msg=f"{name} thread {k}")


def test_run_releases_the_gil(models):
    """This thread executes Python while another one is inside run: were the
    GIL held through the run, it could only go on once the run returned."""
    stem = models / "resnet50_opset17"
    sess = onnxkit.InferenceSession(str(stem.with_suffix(".onnx")), threads=1)
    feed = {"input": np.load(f"{stem}.input.npy")}
    sess.run(None, feed)
    for _ in range(3):  # a busy machine may keep this thread off the CPU for half a run
        started = threading.Event()
        times = {}

        def work():
            started.set()
            times["start"] = time.perf_counter()
            sess.run(None, feed)
            times["end"] = time.perf_counter()

        t = threading.Thread(target=work)
        t.start()
        started.wait()
        seen = []
        while t.is_alive():
            seen.append(time.perf_counter())
            time.sleep(0.0005)
        t.join()
        # With the GIL held, this thread's first turn comes as the run returns.
        halfway = (times["start"] + times["end"]) / 2
        if any(times["start"] < s < halfway for s in seen):
            return
    pytest.fail(f"no turn for this thread in the first half of a run ({times['end'] - times['start']:.3f} s)")


def test_threads_and_session_options():
    data = scalar_input_model()
    assert onnxkit.InferenceSession(data, threads=1).get_session_options().intra_op_num_threads == 1
    options = onnxkit.SessionOptions()
    options.intra_op_num_threads = 2
    options.graph_optimization_level = onnxkit.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = onnxkit.InferenceSession(data, sess_options=options, providers=["CPUExecutionProvider"])
    assert sess.get_session_options().intra_op_num_threads == 2
    assert sess.get_providers() == ["CPUExecutionProvider"] == onnxkit.get_available_providers()
    with pytest.warns(UserWarning, match="CUDAExecutionProvider"):
        onnxkit.InferenceSession(data, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])


def test_unoptimized_session_gives_the_same_numbers(models):
    stem = models / "mobilenet_v2_opset17"
    options = onnxkit.SessionOptions()
    options.graph_optimization_level = onnxkit.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = onnxkit.InferenceSession(str(stem.with_suffix(".onnx")), options)
    (y,) = sess.run(None, {"input": np.load(f"{stem}.input.npy")})
    assert_close(y, np.load(f"{stem}.torch.npy"))


# --- errors: the command line's messages --------------------------------------


def test_bad_model_raises_the_clis_message(cli, tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage that is no protobuf")
    with pytest.raises(onnxkit.ModelError) as raised:
        onnxkit.InferenceSession(str(bad))
    assert str(raised.value) == cli.error("run", bad, "--random")
    with pytest.raises(onnxkit.Error):
        onnxkit.InferenceSession(bad.read_bytes())
    with pytest.raises(onnxkit.ModelError) as raised:
        onnxkit.InferenceSession(str(tmp_path / "missing.onnx"))
    assert str(raised.value) == cli.error("run", tmp_path / "missing.onnx", "--random")


def test_wrong_input_name_raises_the_clis_message(cli, models, tmp_path):
    stem = models / "resnet18_opset17"
    sess = onnxkit.InferenceSession(str(stem.with_suffix(".onnx")))
    x = np.load(f"{stem}.input.npy")
    with pytest.raises(onnxkit.RunError) as raised:
        sess.run(None, {"inptu": x})
    # The command names the flag the name came from.
    assert "--input: " + str(raised.value) == cli.error("run", stem.with_suffix(".onnx"), "--input", f"inptu={stem}.input.npy")
    assert "did you mean 'input'" in str(raised.value)


def test_wrong_dtype_raises_the_clis_message(cli, models, tmp_path):
    stem = models / "resnet18_opset17"
    sess = onnxkit.InferenceSession(str(stem.with_suffix(".onnx")))
    x64 = np.load(f"{stem}.input.npy").astype(np.float64)
    np.save(tmp_path / "x64.npy", x64)
    with pytest.raises(onnxkit.RunError) as raised:
        sess.run(None, {"input": x64})
    assert str(raised.value) == cli.error("run", stem.with_suffix(".onnx"), "--input", f"input={tmp_path / 'x64.npy'}")
    assert "wrong element type" in str(raised.value)


def test_missing_input_and_wrong_shape_raise_the_clis_message(cli, models, tmp_path):
    stem = models / "resnet18_opset17"
    path = stem.with_suffix(".onnx")
    sess = onnxkit.InferenceSession(str(path))
    with pytest.raises(onnxkit.RunError) as raised:
        sess.run(None, {})
    assert str(raised.value) == cli.error("run", path)
    small = np.zeros((1, 3, 112, 112), np.float32)
    np.save(tmp_path / "small.npy", small)
    with pytest.raises(onnxkit.RunError) as raised:
        sess.run(None, {"input": small})
    assert str(raised.value) == cli.error("run", path, "--input", f"input={tmp_path / 'small.npy'}")


def test_unknown_output_and_unusable_feeds_are_invalid_arguments(models):
    sess = onnxkit.InferenceSession(str(models / "resnet18_opset17.onnx"))
    x = np.load(models / "resnet18_opset17.input.npy")
    with pytest.raises(onnxkit.InvalidArgument, match="'outptu' is not an output of the model; did you mean 'output'"):
        sess.run(["outptu"], {"input": x})
    with pytest.raises(ValueError):  # InvalidArgument is a ValueError too, as ORT's errors are for such calls
        sess.run(["outptu"], {"input": x})
    with pytest.raises(onnxkit.InvalidArgument, match="has no ONNX element type"):
        sess.run(None, {"input": x.astype(np.float128)})
    with pytest.raises(onnxkit.InvalidArgument, match="None is an empty optional"):
        sess.run(None, {"input": None})
    with pytest.raises(onnxkit.InvalidArgument):
        onnxkit.InferenceSession(12)

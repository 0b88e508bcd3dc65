#!/usr/bin/env python3
"""Writes the committed corpus of broken model files (fuzz/corpus) and the
seeds of each fuzz target (fuzz/seeds/TARGET). Every file in corpus/ must
make `onnxkit info` and `onnxkit check` exit with 1 and one line naming the
file; tests enforce it. Run with Debian's /usr/bin/python3 (python3-onnx,
python3-numpy); outputs are committed, each at most a few KB."""

import io
import os
import random
import struct
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
SEEDS = os.path.join(HERE, "seeds", "load_model")
TENSOR_FILE_SEEDS = os.path.join(HERE, "seeds", "tensor_file")
RUN_MODEL_SEEDS = os.path.join(HERE, "seeds", "run_model")
EXTERNAL_DATA_SEEDS = os.path.join(HERE, "seeds", "external_data")


def small_model(weight=None):
    w = weight or helper.make_tensor("w", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])
    node = helper.make_node("Mul", ["x", "w"], ["y"], name="mul")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])


def external_weight(location, offset=None, length=None):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add()
            e.key, e.value = k, v
    return t


def write(folder, name, data):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def npy(array):
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def npz(arrays, compression):
    # Written with a fixed date, so that the committed bytes stay the same.
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = compression
            z.writestr(info, npy(array))
    return out.getvalue()


def tensor_file_seeds():
    """The first byte picks the reader (tensor_file_fuzzer.cpp)."""
    f32 = np.arange(6, dtype=np.float32).reshape(2, 3)
    seeds = {
        "npy_float.bin": b"\x00" + npy(f32),
        "npy_int64_scalar.bin": b"\x00" + npy(np.array(7, np.int64)),
        "npy_unicode.bin": b"\x00" + npy(np.array(["a", "bc", "d\u00e9f"])),
        "npy_bytes.bin": b"\x00" + npy(np.array([b"ab", b"c"])),
        "npy_bool.bin": b"\x00" + npy(np.array([True, False])),
        "npz_stored.bin": b"\x01" + npz({"x": f32, "ids": np.array([1, 2], np.int64)}, zipfile.ZIP_STORED),
        "npz_deflated.bin": b"\x01" + npz({"x": np.zeros((16, 16), np.float32)}, zipfile.ZIP_DEFLATED),
        "pb_tensor.bin": b"\x02" + numpy_helper.from_array(f32, "t").SerializeToString(),
        "pb_sequence.bin": b"\x03" + numpy_helper.from_list([f32, f32[:1]], "s").SerializeToString(),
        "pb_optional.bin": b"\x04" + numpy_helper.from_optional(f32, "o").SerializeToString(),
        "literal_matrix.bin": b"\x05int64:[[1, 2], [3, 4]]",
        "literal_floats.bin": b"\x05float:[nan, -inf, 1e-3, 2]",
        "literal_bools.bin": b"\x05bool:[true, 0, False]",
        "literal_scalar.bin": b"\x05float16:0.5",
    }
    for name, data in seeds.items():
        write(TENSOR_FILE_SEEDS, name, data)


def run_model_seeds():
    vi = helper.make_tensor_value_info
    f, i64 = TensorProto.FLOAT, TensorProto.INT64

    def model(name, nodes, inputs, outputs, inits=(), opset=17):
        graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        write(RUN_MODEL_SEEDS, name + ".onnx", m.SerializeToString())

    def const(name, array):
        return numpy_helper.from_array(np.asarray(array), name)

    model("broadcast", [helper.make_node("Mul", ["x", "s"], ["m"]), helper.make_node("Add", ["m", "x"], ["y"])],
          [vi("x", f, ["n", 3])], [vi("y", f, ["n", 3])], [const("s", np.ones(3, np.float32))])
    model("conv_relu", [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                        helper.make_node("Relu", ["c"], ["y"])],
          [vi("x", f, [1, 2, 4, 4])], [vi("y", f, [1, 3, 4, 4])],
          [const("w", np.full((3, 2, 3, 3), 0.1, np.float32))])
    model("reshape_glue", [helper.make_node("Shape", ["x"], ["s"]),
                           helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
                           helper.make_node("Unsqueeze", ["n", "zeros"], ["n1"]),
                           helper.make_node("Concat", ["n1", "minus"], ["t"], axis=0),
                           helper.make_node("Reshape", ["x", "t"], ["y"])],
          [vi("x", f, ["n", 2, 3])], [vi("y", f, ["n", 6])],
          [const("zero", np.array(0, np.int64)), const("zeros", np.array([0], np.int64)),
           const("minus", np.array([-1], np.int64))])
    model("matmul_softmax", [helper.make_node("MatMul", ["x", "w"], ["m"]),
                             helper.make_node("Softmax", ["m"], ["y"], axis=-1)],
          [vi("x", f, [2, 4])], [vi("y", f, [2, 3])], [const("w", np.full((4, 3), 0.5, np.float32))])
    model("integer_math", [helper.make_node("Div", ["a", "b"], ["d"]), helper.make_node("Mod", ["a", "b"], ["y"]),
                           helper.make_node("Add", ["d", "y"], ["z"])],
          [vi("a", i64, [4])], [vi("z", i64, [4])], [const("b", np.array([1, -1, 3, -3], np.int64))])
    model("generators", [helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
                         helper.make_node("ConstantOfShape", ["shape"], ["c"],
                                          value=numpy_helper.from_array(np.array([2], np.int64))),
                         helper.make_node("Add", ["r", "c"], ["y"])],
          [], [vi("y", i64, [4])],
          [const("start", np.array(0, np.int64)), const("limit", np.array(4, np.int64)),
           const("delta", np.array(1, np.int64)), const("shape", np.array([4], np.int64))])
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Add", ["v", "one"], ["v_out"])], "body",
        [vi("i", i64, []), vi("c", TensorProto.BOOL, []), vi("v", f, [1])],
        [vi("c_out", TensorProto.BOOL, []), vi("v_out", f, [1])], [const("one", np.ones(1, np.float32))])
    model("loop", [helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)],
          [vi("x", f, [1])], [vi("y", f, [1])], [const("n", np.array(3, np.int64))])
    branch = lambda name, op: helper.make_graph([helper.make_node(op, ["x"], [name + "_y"])], name, [],
                                                [vi(name + "_y", f, [2])])
    model("if", [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
                 helper.make_node("Greater", ["s", "zero"], ["c"]),
                 helper.make_node("If", ["c"], ["y"], then_branch=branch("then", "Relu"),
                                  else_branch=branch("else", "Neg"))],
          [vi("x", f, [2])], [vi("y", f, [2])], [const("zero", np.array(0, np.float32))])
    model("split_concat", [helper.make_node("Split", ["x"], ["a", "b"], axis=1),
                           helper.make_node("Concat", ["b", "a"], ["y"], axis=1)],
          [vi("x", f, [2, 4])], [vi("y", f, [2, 4])])
    model("reduce_cast_where", [helper.make_node("ReduceMean", ["x"], ["m"], axes=[1]),
                                helper.make_node("Cast", ["m"], ["i"], to=TensorProto.INT32),
                                helper.make_node("Cast", ["i"], ["b"], to=TensorProto.BOOL),
                                helper.make_node("Where", ["b", "m", "x"], ["y"])],
          [vi("x", f, [2, 3])], [vi("y", f, [2, 3])], opset=13)


def external_data_seeds():
    """Lines: location, offset, length, then dims (external_data_fuzzer.cpp)."""
    seeds = {
        "whole.txt": "w.bin\n0\n64\n64",
        "part.txt": "w.bin\n16\n16\n16",
        "no_length.txt": "w.bin\n-\n-\n64",
        "subfolder.txt": "sub/x.bin\n0\n16\n4\n4",
        "link_inside.txt": "in_link\n0\n64\n64",
        "link_to_folder.txt": "sub_link/x.bin\n-\n-\n16",
        "link_out.txt": "out_link\n0\n64\n64",
        "link_absolute.txt": "abs_link\n0\n64\n64",
        "link_device.txt": "dev_link\n0\n64\n64",
        "dotdot.txt": "sub/../../secret.bin\n0\n64\n64",
        "fifo.txt": "fifo\n0\n4\n4",
        "directory.txt": "dir\n0\n4\n4",
        "past_end.txt": "w.bin\n60\n8\n8",
        "float_dims.txt": "w.bin\n0\n64\n4\n4\n-\n-\n-\n1",
    }
    for name, text in seeds.items():
        write(EXTERNAL_DATA_SEEDS, name, text.encode())


def main():
    for folder in (CORPUS, SEEDS, TENSOR_FILE_SEEDS, RUN_MODEL_SEEDS, EXTERNAL_DATA_SEEDS):
        os.makedirs(folder, exist_ok=True)
        for f in os.listdir(folder):
            os.remove(os.path.join(folder, f))
    valid = small_model().SerializeToString()
    write(SEEDS, "valid_mul.onnx", valid)

    rng = random.Random(0)
    write(CORPUS, "empty.onnx", b"")
    write(CORPUS, "truncated.onnx", valid[: len(valid) // 2])
    write(CORPUS, "random_bytes.onnx", bytes(rng.randrange(256) for _ in range(512)))
    write(CORPUS, "text_file.onnx", b"this is not a model\n")
    write(CORPUS, "no_graph.onnx", onnx.ModelProto(ir_version=8).SerializeToString())
    write(CORPUS, "tensor_not_model.onnx", helper.make_tensor("t", TensorProto.INT64, [3], [1, 2, 3]).SerializeToString())

    negative = small_model(helper.make_tensor("w", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0]))
    negative.graph.initializer[0].dims[0] = -4
    write(CORPUS, "negative_dim.onnx", negative.SerializeToString())

    overflow = small_model(TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 40, 1 << 40]))
    write(CORPUS, "dims_overflow.onnx", overflow.SerializeToString())

    short_raw = small_model(TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], raw_data=b"abc"))
    write(CORPUS, "raw_data_too_short.onnx", short_raw.SerializeToString())

    weights = struct.pack("<4f", 1, 2, 3, 4)
    write(CORPUS, "ext_short.bin", weights[:8])
    write(CORPUS, "ext_ok.bin", weights)
    cases = {
        "ext_missing_file.onnx": external_weight("no_such_file.bin"),
        "ext_too_short.onnx": external_weight("ext_short.bin"),
        "ext_range_past_end.onnx": external_weight("ext_ok.bin", "8", "16"),
        "ext_negative_offset.onnx": external_weight("ext_ok.bin", "-8"),
        "ext_absolute_path.onnx": external_weight("/etc/passwd"),
        "ext_escapes_folder.onnx": external_weight("../corpus/ext_ok.bin"),
        "ext_no_location.onnx": external_weight(""),
    }
    for name, tensor in cases.items():
        write(CORPUS, name, small_model(tensor).SerializeToString())

    twice = small_model()
    twice.graph.node.append(helper.make_node("Relu", ["x"], ["y"], name="again"))
    write(CORPUS, "value_defined_twice.onnx", twice.SerializeToString())

    # Sub-graphs nested past protobuf's recursion limit.
    leaf = helper.make_graph([], "leaf", [], [])
    depth_graph = leaf
    for i in range(120):
        node = helper.make_node("If", ["c"], [], then_branch=depth_graph, else_branch=leaf)
        depth_graph = helper.make_graph([node], f"level{i}", [], [])
    deep = helper.make_model(depth_graph, opset_imports=[helper.make_opsetid("", 15)])
    write(CORPUS, "nesting_too_deep.onnx", deep.SerializeToString())

    tensor_file_seeds()
    run_model_seeds()
    external_data_seeds()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the committed corpus of broken model files (fuzz/corpus) and valid
seeds (fuzz/seeds). Every file in corpus/ must make `onnxkit info` and
`onnxkit check` exit with 1 and one line naming the file; tests enforce it.
Run with Debian's /usr/bin/python3 (python3-onnx); outputs are committed."""

import os
import random
import struct

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
SEEDS = os.path.join(HERE, "seeds")


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


def main():
    for folder in (CORPUS, SEEDS):
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


if __name__ == "__main__":
    main()

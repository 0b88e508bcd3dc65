#!/usr/bin/env python3
"""Writes a BERT-like transformer encoder (LayerNormalization, multi-head
attention with its Shape/Reshape/Transpose glue, Erf GELU feed-forward) whose
float32 weights, random and non-zero, total about SIZE bytes in one
external-data file next to the model: the benchmark's model over protobuf's
2 GiB limit. Inputs: x [batch, seq, hidden] with symbolic batch and seq.

usage: make_transformer.py OUT.onnx [--size-gib 2.2] [--hidden 2048] [--heads 16]"""

import argparse
import math
import os

import numpy as np
import onnx
from onnx import TensorProto, helper


class Weights:
    """Appends tensors to the side file as they are made: the script never
    holds more than one weight in memory."""

    def __init__(self, data_path, rng):
        self.location = os.path.basename(data_path)
        self.file = open(data_path, "wb")
        self.rng = rng
        self.tensors = []

    def add(self, name, shape, scale=0.02, fill=None):
        if fill is None:
            data = (self.rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)
        else:
            data = np.full(shape, fill, dtype=np.float32)
        offset = self.file.tell()
        self.file.write(data.tobytes())
        t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(shape))
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", self.location), ("offset", str(offset)), ("length", str(data.nbytes))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        self.tensors.append(t)
        return name


def layer_bytes(hidden):
    ffn = 4 * hidden
    return 4 * (4 * hidden * hidden + 2 * hidden * ffn + 9 * hidden + ffn)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--size-gib", type=float, default=2.2)
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--heads", type=int, default=16)
    args = p.parse_args()
    hidden, heads = args.hidden, args.heads
    head_dim, ffn = hidden // heads, 4 * hidden
    layers = max(1, math.ceil(args.size_gib * (1 << 30) / layer_bytes(hidden)))
    data_path = os.path.join(os.path.dirname(os.path.abspath(args.out)), os.path.basename(args.out) + ".data")
    w = Weights(data_path, np.random.default_rng(0))
    nodes, consts = [], []

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def const(name, values):
        consts.append(helper.make_tensor(name, TensorProto.INT64, [len(values)], values))
        return name

    def linear(x, prefix, n_in, n_out):
        y = node("MatMul", [x, w.add(prefix + ".weight", (n_in, n_out))], prefix + ".matmul")
        return node("Add", [y, w.add(prefix + ".bias", (n_out,), fill=0.01)], prefix + ".out")

    def layer_norm(x, prefix):
        return node("LayerNormalization", [x, w.add(prefix + ".gamma", (hidden,), fill=1.0),
                                           w.add(prefix + ".beta", (hidden,), fill=0.0)], prefix + ".out", axis=-1)

    consts.append(helper.make_tensor("scale", TensorProto.FLOAT, [], [1.0 / math.sqrt(head_dim)]))
    consts.append(helper.make_tensor("half", TensorProto.FLOAT, [], [0.5]))
    consts.append(helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]))
    consts.append(helper.make_tensor("sqrt2", TensorProto.FLOAT, [], [math.sqrt(2.0)]))
    const("zero", [0])
    const("one_i", [1])
    const("heads_dims", [heads, head_dim])
    const("hidden_dim", [hidden])
    h = "x"
    for i in range(layers):
        l = f"layer{i}"
        # torch's export glue: the batch and sequence dims, read from the input's shape.
        shape = node("Shape", [h], l + ".shape")
        batch = node("Gather", [shape, "zero"], l + ".batch", axis=0)
        seq = node("Gather", [shape, "one_i"], l + ".seq", axis=0)
        split_shape = node("Concat", [batch, seq, "heads_dims"], l + ".split_shape", axis=0)
        merge_shape = node("Concat", [batch, seq, "hidden_dim"], l + ".merge_shape", axis=0)
        n1 = layer_norm(h, l + ".ln1")
        q, k, v = (node("Transpose", [node("Reshape", [linear(n1, f"{l}.{t}", hidden, hidden), split_shape],
                                            f"{l}.{t}.split")], f"{l}.{t}.heads", perm=perm)
                   for t, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])))
        scores = node("Mul", [node("MatMul", [q, k], l + ".qk"), "scale"], l + ".scores")
        probs = node("Softmax", [scores], l + ".probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], l + ".context")], l + ".context.t", perm=[0, 2, 1, 3])
        merged = node("Reshape", [context, merge_shape], l + ".merged")
        h = node("Add", [h, linear(merged, l + ".o", hidden, hidden)], l + ".attn.res")
        n2 = layer_norm(h, l + ".ln2")
        up = linear(n2, l + ".up", hidden, ffn)
        erf = node("Erf", [node("Div", [up, "sqrt2"], l + ".gelu.div")], l + ".gelu.erf")
        gelu = node("Mul", [node("Mul", [up, "half"], l + ".gelu.half"), node("Add", [erf, "one"], l + ".gelu.add")],
                    l + ".gelu")
        h = node("Add", [h, linear(gelu, l + ".down", ffn, hidden)], l + ".ffn.res")
    nodes.append(helper.make_node("Identity", [h], ["y"], name="output"))
    size = w.file.tell()
    w.file.close()
    graph = helper.make_graph(nodes, "transformer",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", hidden])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", hidden])],
                              consts + w.tensors)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with open(args.out, "wb") as f:
        f.write(model.SerializeToString())
    print(f"{args.out}: {layers} layers of hidden {hidden}, {size / (1 << 30):.2f} GiB of weights in "
          f"{os.path.basename(data_path)}")


if __name__ == "__main__":
    main()

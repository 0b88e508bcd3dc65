#!/usr/bin/env python3
"""Writes a model whose weights, in one external-data file, total SIZE bytes
(default 2.5 GiB): a chain of MatMuls over square float32 weights. The side
file is filled with real (non-zero) data unless --sparse, which leaves holes
and costs no disk writes (enough for commands that never touch weights).

usage: make_large_model.py OUT.onnx [--size-gib 2.5] [--sparse]"""

import argparse
import os

import onnx
from onnx import TensorProto, helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--size-gib", type=float, default=2.5)
    p.add_argument("--sparse", action="store_true")
    args = p.parse_args()

    dim = 8192  # each weight: 8192 x 8192 float32 = 256 MiB
    tensor_bytes = dim * dim * 4
    count = max(1, round(args.size_gib * (1 << 30) / tensor_bytes))
    data_name = os.path.basename(args.out) + ".data"
    data_path = os.path.join(os.path.dirname(os.path.abspath(args.out)), data_name)

    nodes, inits = [], []
    prev = "x"
    chunk = os.urandom(1 << 20)
    with open(data_path, "wb") as f:
        for i in range(count):
            name = f"w{i}"
            t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[dim, dim])
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", data_name), ("offset", str(i * tensor_bytes)), ("length", str(tensor_bytes))):
                e = t.external_data.add()
                e.key, e.value = k, v
            inits.append(t)
            out = f"h{i}" if i + 1 < count else "y"
            nodes.append(helper.make_node("MatMul", [prev, name], [out], name=f"matmul{i}"))
            prev = out
            if args.sparse:
                f.truncate((i + 1) * tensor_bytes)
            else:
                for _ in range(tensor_bytes // len(chunk)):
                    f.write(chunk)
    graph = helper.make_graph(nodes, "large",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", dim])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", dim])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with open(args.out, "wb") as f:
        f.write(model.SerializeToString())
    print(f"{args.out}: {count} weights of {tensor_bytes >> 20} MiB in {data_name}")


if __name__ == "__main__":
    main()

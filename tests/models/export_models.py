#!/usr/bin/env python3
"""Exports the real models the tests run on, with Debian's torch (run with
/usr/bin/python3), and writes beside each one the figures the tests compare
against, computed independently of onnxkit:

  <name>.onnx           the model, exported by torch.onnx.export
  <name>.expected.json  {"parameters": sum of initializer element counts by
                         Python's onnx, "macs": multiply-accumulates of every
                         Conv2d/Linear counted by torch forward hooks (null
                         where other ops do matrix products too)}

Weights are random (seeded): the tests compare numbers, not accuracy."""

import argparse
import json
import os

import numpy as np
import onnx
import torch
import torchvision
from torch import nn


class BertLikeEncoder(nn.Module):
    """Token embedding of int64 ids + torch.nn.TransformerEncoder."""

    def __init__(self, vocab=1000, d=256, heads=4, layers=4, ff=1024, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, max_len, d))
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(d)

    def forward(self, ids):
        x = self.tok(ids) + self.pos[:, : ids.shape[1]]
        return self.norm(self.encoder(x))


def build(name):
    """(module, example inputs, input names, whether hook-counted MACs are complete)."""
    if name == "bert_encoder":
        return BertLikeEncoder(), (torch.randint(0, 1000, (1, 128)),), ["input_ids"], False
    model = getattr(torchvision.models, name)(weights=None)
    return model, (torch.rand(1, 3, 224, 224),), ["input"], True


def hook_macs(model, inputs):
    total = 0

    def conv_hook(module, args, out):
        nonlocal total
        kh, kw = module.kernel_size
        total += out.numel() * (module.in_channels // module.groups) * kh * kw

    def linear_hook(module, args, out):
        nonlocal total
        total += out.numel() * module.in_features

    handles = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            handles.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, nn.Linear):
            handles.append(m.register_forward_hook(linear_hook))
    with torch.no_grad():
        model(*inputs)
    for h in handles:
        h.remove()
    return total


def export(name, opset, out_dir):
    torch.manual_seed(0)
    model, inputs, input_names, macs_complete = build(name)
    model.eval()
    with torch.no_grad():
        # Fresh random weights everywhere: cloned layers (TransformerEncoder)
        # would otherwise be identical, and torch would merge them on export.
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.05)
    stem = f"{name}_opset{opset}"
    path = os.path.join(out_dir, stem + ".onnx")
    torch.onnx.export(model, inputs, path, input_names=input_names, output_names=["output"], opset_version=opset)
    proto = onnx.load(path)
    expected = {
        "parameters": int(sum(int(np.prod(t.dims)) for t in proto.graph.initializer)),
        "macs": hook_macs(model, inputs) if macs_complete else None,
    }
    with open(os.path.join(out_dir, stem + ".expected.json"), "w") as f:
        json.dump(expected, f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default="resnet18,mobilenet_v2,bert_encoder")
    parser.add_argument("--opsets", default="13")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.models.split(","):
        for opset in (int(o) for o in args.opsets.split(",")):
            export(name, opset, args.out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Exports the real models the tests run on, with Debian's torch (run with
/usr/bin/python3), and writes beside each one the figures the tests compare
against, computed independently of onnxkit:

  <name>.onnx           the model, exported by torch.onnx.export
  <name>.expected.json  {"parameters": sum of initializer element counts by
                         Python's onnx, "macs": multiply-accumulates of every
                         Conv2d/Linear counted by torch forward hooks (null
                         where other ops do matrix products too)}
  <name>.input.npy      the example input the model was exported with
  <name>.torch.npy      PyTorch's output for that input (eval mode)
  <name>.input3.npy, <name>.torch3.npy
                        the same at batch 3, for models exported with a
                        symbolic batch dim (seed002)
  <name>.input4.npy, <name>.torch4.npy
                        the same at batch 4, for models exported with a fixed
                        batch of 1 that a test makes dynamic (fixed_batch)
  <name>.middle_input.npy, <name>.middle_output.npy
                        what the network between its preprocessing head and
                        its Softmax tail takes and gives (prepost)

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


class Seed002(nn.Module):
    """Seed 002's network: Upsample to a fixed size and x.view(x.size(0), -1),
    the shape glue that engines choke on when the batch is dynamic."""

    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(
            nn.Conv2d(3, 64, 3, 2, 1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
            nn.MaxPool2d(3, 2, 1), nn.MaxPool2d(3, 2, 1), nn.Upsample((8, 8)))
        self.fc = nn.Linear(4096, 10)
        self.logit = nn.Softmax(-1)

    def forward(self, x):
        x = self.layer1(x)
        x = x.view(x.size(0), -1)
        return self.logit(self.fc(x))


class PReLUNet(nn.Module):
    """PReLU per channel and with one shared slope (MXNet's face models)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1)
        self.act1 = nn.PReLU(8)
        self.conv2 = nn.Conv2d(8, 8, 3, 2, 1)
        self.act2 = nn.PReLU()

    def forward(self, x):
        return self.act2(self.conv2(self.act1(self.conv1(x))))


class InstanceNormNet(nn.Module):
    """Style-transfer style block: Conv, InstanceNorm (epsilon 1e-5 by default), ReLU."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, 1, 1)
        self.norm = nn.InstanceNorm2d(8, affine=True)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.norm(self.conv(x)))


class PrePostNet(nn.Module):
    """Mean/std normalization as Sub/Div in front, Softmax behind: what users
    cut off before putting the network on an NPU (seed 000)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(16, 10)

    def middle(self, x):
        return self.fc(torch.flatten(self.body(x), 1))

    def forward(self, x):
        return torch.softmax(self.middle((x - self.mean) / self.std), dim=1)


class FixedBatchNet(nn.Module):
    """A network exported with batch 1 fixed everywhere (as tf2onnx leaves
    it, or torch without dynamic_axes); flatten exports as Flatten."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.AdaptiveAvgPool2d(2))
        self.fc = nn.Linear(32, 5)

    def forward(self, x):
        return self.fc(torch.flatten(self.body(x), 1))


SMALL_MODELS = {"prelu": PReLUNet, "instance_norm": InstanceNormNet, "prepost": PrePostNet, "fixed_batch": FixedBatchNet,
                "legacy_inputs": FixedBatchNet}
DYNAMIC_BATCH = {"seed002"}
# Exported the way old exporters wrote models: every weight also listed as a
# graph input, and BatchNormalization left unfolded.
LEGACY_EXPORT = {"legacy_inputs"}


def build(name):
    """(module, example inputs, input names, whether hook-counted MACs are complete)."""
    if name == "bert_encoder":
        return BertLikeEncoder(), (torch.randint(0, 1000, (1, 128)),), ["input_ids"], False
    if name == "seed002":  # MACs of a symbolic batch are unknown to a static count
        return Seed002(), (torch.rand(1, 3, 32, 32),), ["input"], False
    if name in SMALL_MODELS:  # the edit tests' models; their MACs are not what they test
        return SMALL_MODELS[name](), (torch.rand(1, 3, 16, 16),), ["input"], False
    model = getattr(torchvision.models, name)(weights=None)
    return model, (example_images(1),), ["input"], True


def example_images(n):
    """Smooth random images: their averages differ from image to image, so
    that a network's output depends on its input (white noise averages out)."""
    low = torch.rand(n, 3, 7, 7) * 2 - 1
    return nn.functional.interpolate(low, size=224, mode="bilinear", align_corners=False) + 0.1 * torch.rand(n, 3, 224, 224)


def randomize(model):
    """Weights that make a realistic network: torch's own initialization, drawn
    afresh for every layer (cloned TransformerEncoder layers would otherwise
    be identical, and torch would merge them on export), batch-norm affine
    parameters away from the identity, and batch-norm statistics measured on
    example images as training would (so no layer dies or explodes)."""
    with torch.no_grad():
        if isinstance(model, BertLikeEncoder):
            for m in model.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    m.reset_parameters()
                elif isinstance(m, nn.MultiheadAttention):
                    m._reset_parameters()
                elif isinstance(m, nn.LayerNorm):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.2, 0.2)
            model.pos.normal_(0, 0.02)
            return
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
            elif isinstance(m, nn.PReLU):  # not torch's 0.25 everywhere: a slope per channel must show
                m.weight.uniform_(0.05, 0.5)
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.reset_running_stats()
                m.momentum = None  # a plain average over the calibration batches
        model.train()
        for _ in range(4):
            model(example_images(8))
        model.eval()


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
    randomize(model)
    stem = f"{name}_opset{opset}"
    path = os.path.join(out_dir, stem + ".onnx")
    dynamic = {input_names[0]: {0: "batch"}, "output": {0: "batch"}} if name in DYNAMIC_BATCH else None
    legacy = name in LEGACY_EXPORT
    torch.onnx.export(model, inputs, path, input_names=input_names, output_names=["output"], opset_version=opset,
                      dynamic_axes=dynamic, keep_initializers_as_inputs=legacy, do_constant_folding=not legacy,
                      training=torch.onnx.TrainingMode.PRESERVE if legacy else torch.onnx.TrainingMode.EVAL)
    np.save(os.path.join(out_dir, stem + ".input.npy"), inputs[0].numpy())
    with torch.no_grad():
        np.save(os.path.join(out_dir, stem + ".torch.npy"), model(*inputs).numpy())
        if name in DYNAMIC_BATCH:
            batch3 = torch.rand(3, *inputs[0].shape[1:])
            np.save(os.path.join(out_dir, stem + ".input3.npy"), batch3.numpy())
            np.save(os.path.join(out_dir, stem + ".torch3.npy"), model(batch3).numpy())
        if name == "fixed_batch":
            batch4 = torch.rand(4, *inputs[0].shape[1:])
            np.save(os.path.join(out_dir, stem + ".input4.npy"), batch4.numpy())
            np.save(os.path.join(out_dir, stem + ".torch4.npy"), model(batch4).numpy())
        if name == "prepost":
            middle_input = (inputs[0] - model.mean) / model.std
            np.save(os.path.join(out_dir, stem + ".middle_input.npy"), middle_input.numpy())
            np.save(os.path.join(out_dir, stem + ".middle_output.npy"), model.middle(middle_input).numpy())
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

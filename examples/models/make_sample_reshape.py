#!/usr/bin/env python3
"""Exports the small model that `make demo` runs on: seed 001's Conv/BN/ReLU
network whose torch.flatten(x, 2, 3) exports as Shape -> Slice -> Concat ->
Reshape glue. Run with Debian's /usr/bin/python3 (torch 1.13)."""

import sys

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.act1 = nn.ReLU()
        self.conv2 = nn.Conv2d(16, 64, kernel_size=5, padding=2)
        self.bn2 = nn.BatchNorm2d(64)
        self.act2 = nn.ReLU()
        self.avgpool = nn.AdaptiveAvgPool1d(1)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        x = self.act1(self.bn1(self.conv1(x)))
        x = self.act2(self.bn2(self.conv2(x)))
        x = torch.flatten(x, 2, 3)  # B, C, H, W -> B, C, L: the glue the seeds complain about
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.head(x)


def main(path):
    torch.manual_seed(0)
    model = Model().eval()
    torch.onnx.export(model, (torch.rand(1, 3, 64, 64),), path, input_names=["input0"],
                      output_names=["output0"], opset_version=15)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "sample_reshape.onnx")

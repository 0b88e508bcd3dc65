#!/usr/bin/env python3
"""Exports a zoo of real architectures to ONNX with Debian's torch 1.13 and
torchvision 0.14 (run with /usr/bin/python3; no downloads: weights are
torch's own initialization, seeded, made realistic as below). For each model
NAME the output folder gets:

  NAME.onnx                   the model, exported by torch.onnx.export
  NAME.input.npy              its example input, or, for several inputs,
  NAME.inputs.npz             all of them keyed by input name
  NAME.torch.npy / .torch.npz PyTorch's output(s) for that input in eval mode,
                              keyed by output name: a truth independent of
                              onnxkit and of ONNX Runtime

A model whose .onnx already exists is skipped. The test suite and the
benchmarks import this module: MODELS (name -> Spec), build(name) and
export(name, out_dir, opset).

usage: tests/models/export_zoo.py --out build/zoo [--models resnet18,gpt_decoder] [--opset 17] [--list]

Models exported with a symbolic batch dim "batch" on the first input and on
every output are those whose Spec says dynamic_batch=True: the torchvision
classifiers and segmenters, the GPT-style decoder, the recurrent and audio
models and the scalar-input model (each checked against torch at batch 2
with ONNX Runtime). The
others keep batch 1: the detectors (their pre- and post-processing handle a
list of images one by one), the BERT-like encoder (its export bakes
batch 1 into Reshape constants) and the control-flow model (a scripted
module, whose shapes torch does not track). Some have more symbolic dims
(Spec.dynamic_dims): squeezenet1_1_dynamic_hw and ocr_det ("height",
"width"), ocr_rec ("width") and vad_sample_rate ("samples"), models no
fixed input size describes.

Weights are random: the tests compare numbers, not accuracy."""

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

import numpy as np
import torch
import torchvision
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import BertLikeEncoder, randomize  # noqa: E402


# ---------------------------------------------------------------------------
# Example inputs. Each takes the batch size n; models are exported at n = 1
# and their batch-norm statistics measured on a few batches of n = 4.

def smooth_images(n, size=224):
    """Random images whose averages differ from image to image (upsampled low
    resolution noise plus a little fine noise), so that a classifier's output
    depends on its input: white noise averages out."""
    low = torch.rand(n, 3, 7, 7) * 2 - 1
    return F.interpolate(low, size=size, mode="bilinear", align_corners=False) + 0.1 * torch.rand(n, 3, size, size)


def audio(n, samples=16000, rate=16000):
    """A second of a few random tones with noise, amplitude below 1."""
    t = torch.arange(samples) / rate
    freqs = torch.rand(n, 3, 1) * 2000 + 100
    tones = torch.sin(2 * math.pi * freqs * t).sum(1) / 3
    return 0.5 * tones + 0.05 * torch.randn(n, samples)


def token_ids(n, seq, vocab=1000):
    return torch.randint(0, vocab, (n, seq))


# ---------------------------------------------------------------------------
# Models written here.

class CausalSelfAttention(nn.Module):
    """GPT-2's attention: one Linear for q, k, v; a lower-triangular mask."""

    def __init__(self, d, heads, max_len):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        scores = scores.masked_fill(~self.mask[:t, :t], float("-inf"))
        y = torch.softmax(scores, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, d))


class DecoderBlock(nn.Module):
    """Pre-LN: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, d, heads, max_len):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, max_len)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPTStyleDecoder(nn.Module):
    """Token and position embeddings, pre-LN causal blocks, final LayerNorm,
    a language-model head: int64 ids [b, t] -> logits [b, t, vocab]."""

    def __init__(self, vocab=1000, d=256, heads=4, layers=4, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.blocks = nn.Sequential(*[DecoderBlock(d, heads, max_len) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        with torch.no_grad():  # GPT-2's embedding scale
            self.tok.weight.normal_(0, 0.02)
            self.pos.weight.normal_(0, 0.01)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(positions)
        return self.head(self.ln(self.blocks(x)))


class RecurrentTagger(nn.Module):
    """A recurrent layer stack (batch first) and a Linear head on every step."""

    def __init__(self, cell, inputs=64, hidden=128, layers=2, bidirectional=False, classes=10):
        super().__init__()
        self.rnn = cell(inputs, hidden, num_layers=layers, batch_first=True, bidirectional=bidirectional)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), classes)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.head(y)


def stft_filters(n_fft):
    """Real and imaginary DFT rows of a Hann-windowed frame, as Conv1d
    filters [2 * (n_fft / 2 + 1), 1, n_fft]: made in double precision and
    rounded once, as Silero's np.fft.fft(np.eye(n_fft)) basis is."""
    bins = n_fft // 2 + 1
    k = torch.arange(bins, dtype=torch.float64).unsqueeze(1)
    n = torch.arange(n_fft, dtype=torch.float64).unsqueeze(0)
    window = torch.hann_window(n_fft, periodic=True, dtype=torch.float64)
    angle = 2 * math.pi * k * n / n_fft
    return torch.cat([torch.cos(angle) * window, -torch.sin(angle) * window]).float().unsqueeze(1)


class VadLike(nn.Module):
    """In the style of Silero VAD: audio [b, samples] -> reflection pad, an
    STFT as a strided Conv1d with fixed filters, magnitude as sqrt(re^2 + im^2),
    two Conv1d + ReLU, an LSTM over frames, Linear + Sigmoid: a speech
    probability per frame [b, frames, 1]."""

    def __init__(self, n_fft=256, hop=128, channels=64, hidden=64):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("filters", stft_filters(n_fft))  # a buffer: not trained
        bins = n_fft // 2 + 1
        self.encoder = nn.Sequential(nn.Conv1d(bins, channels, 3, padding=1), nn.ReLU(),
                                     nn.Conv1d(channels, channels, 3, stride=2, padding=1), nn.ReLU())
        self.lstm = nn.LSTM(channels, hidden, batch_first=True)
        self.head = nn.Sequential(nn.Linear(hidden, 1), nn.Sigmoid())

    def forward(self, samples):
        x = F.pad(samples.unsqueeze(1), (self.n_fft // 2, self.n_fft // 2), mode="reflect")
        spec = F.conv1d(x, self.filters, stride=self.hop)
        re, im = spec.chunk(2, dim=1)
        magnitude = torch.sqrt(re * re + im * im + 1e-9)
        features, _ = self.lstm(self.encoder(magnitude).transpose(1, 2))
        return self.head(features)


class ControlFlow(nn.Module):
    """Scripted, so that torch exports its control flow as ONNX If and Loop:
    the branch depends on the input's values (the sign of a sum); the loop
    adds residual steps while the activations' mean stays below a bound, at
    most `steps` times (a loop of constant trip count would be unrolled)."""

    def __init__(self, width=64, steps: int = 8):
        super().__init__()
        self.inp = nn.Linear(width, width)
        self.step = nn.Linear(width, width)
        self.steps = steps

    def forward(self, x):
        h = self.inp(x)
        if bool(h.sum() > 0):
            h = torch.relu(h)
        else:
            h = torch.tanh(h) * 2.0
        i = 0
        while i < self.steps and bool(h.mean() < 2.0):
            h = h + torch.sigmoid(self.step(h))
            i += 1
        return h


class ScalarInput(nn.Module):
    """Audio and its sample rate as an int64 scalar input, used in arithmetic
    (a gain of rate / 16000) and in a comparison (Where rate == 16000)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 16, 64, stride=32)
        self.head = nn.Linear(16, 4)

    def forward(self, samples, sample_rate):
        features = torch.relu(self.conv(samples.unsqueeze(1))).mean(dim=2)
        gain = sample_rate.to(torch.float32) / 16000.0
        y = self.head(features) * gain
        return torch.where(sample_rate == 16000, y, -y)


class SampleRateVad(nn.Module):
    """Silero VAD's interface: audio [batch, samples] of any length and its
    sample rate as an int64 scalar that picks a branch (an ONNX If, as the
    module is scripted): at 16 kHz frames of 512 samples, at any other rate
    frames of 256, each through its own projection. Audio whose length is
    no multiple of the frame fails in either branch, as Silero's does."""

    def __init__(self, channels=16):
        super().__init__()
        self.frame16 = nn.Linear(512, channels)
        self.frame8 = nn.Linear(256, channels)
        self.head = nn.Linear(channels, 1)

    def forward(self, samples, sample_rate):
        if bool(sample_rate == 16000):
            features = self.frame16(samples.reshape(samples.shape[0], -1, 512))
        else:
            features = self.frame8(samples.reshape(samples.shape[0], -1, 256))
        return torch.sigmoid(self.head(torch.relu(features)))


class TextDetector(nn.Module):
    """In the style of PaddleOCR's mobile text detector (DBNet): torchvision's
    MobileNetV3-Large at width 0.5 (PaddleOCR's det backbone, same taps: 16,
    24, 56 and 480 channels at strides 4 to 32), an FPN to 96 channels with
    nearest upsampling, its four levels upsampled to stride 4 and
    concatenated, and the DB head: 3x3 conv, two stride-2 ConvTranspose,
    Sigmoid: a text probability map [b, 1, H, W] of any H, W divisible by 32."""

    def __init__(self, inner=96):
        super().__init__()
        self.features = torchvision.models.mobilenet_v3_large(weights=None, width_mult=0.5).features
        self.taps = (3, 6, 12, 16)
        self.lateral = nn.ModuleList(nn.Conv2d(c, inner, 1, bias=False) for c in (16, 24, 56, 480))
        self.smooth = nn.ModuleList(nn.Conv2d(inner, inner // 4, 3, padding=1, bias=False) for _ in range(4))
        quarter = inner // 4
        self.head = nn.Sequential(
            nn.Conv2d(inner, quarter, 3, padding=1, bias=False), nn.BatchNorm2d(quarter), nn.ReLU(),
            nn.ConvTranspose2d(quarter, quarter, 2, stride=2), nn.BatchNorm2d(quarter), nn.ReLU(),
            nn.ConvTranspose2d(quarter, 1, 2, stride=2), nn.Sigmoid())

    def forward(self, x):
        levels = []
        for i, layer in enumerate(self.features):
            x = layer(x)
            if i in self.taps:
                levels.append(x)
        c2, c3, c4, c5 = (conv(level) for conv, level in zip(self.lateral, levels))
        p4 = c4 + F.interpolate(c5, scale_factor=2.0, mode="nearest")
        p3 = c3 + F.interpolate(p4, scale_factor=2.0, mode="nearest")
        p2 = c2 + F.interpolate(p3, scale_factor=2.0, mode="nearest")
        fused = torch.cat([F.interpolate(conv(p), scale_factor=float(2 ** (3 - i)), mode="nearest") if i < 3 else conv(p)
                           for i, (conv, p) in enumerate(zip(self.smooth, (c5, p4, p3, p2)))], dim=1)
        return self.head(fused)


class ConvUnit(nn.Sequential):
    """Conv2d + BatchNorm + activation; groups = channels for a depthwise one."""

    def __init__(self, cin, cout, kernel, stride, groups=1, act=nn.Hardswish):
        super().__init__(nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), act())


class SqueezeExcite(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.reduce, self.expand = nn.Conv2d(c, c // 4, 1), nn.Conv2d(c // 4, c, 1)

    def forward(self, x):
        gate = F.hardsigmoid(self.expand(F.relu(self.reduce(F.adaptive_avg_pool2d(x, 1)))))
        return x * gate


class SeparableBlock(nn.Sequential):
    """PP-LCNet's block: depthwise conv (stride 2 or (2, 1) to shrink),
    optional squeeze-excitation, pointwise conv, HardSwish after each conv."""

    def __init__(self, cin, cout, kernel, stride, se=False):
        layers = [ConvUnit(cin, cin, kernel, stride, groups=cin)]
        if se:
            layers.append(SqueezeExcite(cin))
        layers.append(ConvUnit(cin, cout, 1, 1))
        super().__init__(*layers)


def lcnet(config, cin=3, stem=16):
    """A PP-LCNet-style stack: a stride-2 stem, then SeparableBlocks of
    (out channels, kernel, stride, se)."""
    layers, c = [ConvUnit(cin, stem, 3, 2)], stem
    for cout, kernel, stride, se in config:
        layers.append(SeparableBlock(c, cout, kernel, stride, se))
        c = cout
    return nn.Sequential(*layers), c


class TextRecognizer(nn.Module):
    """In the style of PaddleOCR's mobile text recognizer (CRNN with CTC): a
    PP-LCNet-style backbone whose later strides halve only the height, a
    2x2 max pool to height 1, the width as a sequence, a 2-layer BiLSTM of
    48, a Linear to 6625 classes (the Chinese dictionary plus blank) and
    Softmax: [b, 3, 32, W] -> [b, W / 4, 6625] for any W divisible by 4."""

    def __init__(self, classes=6625, hidden=48):
        super().__init__()
        self.backbone, c = lcnet([(32, 3, 1, False), (64, 3, (2, 1), False), (64, 3, 1, False), (128, 3, (2, 1), False),
                                  (128, 5, 1, False), (128, 5, 1, False), (256, 5, (2, 1), True), (256, 5, 1, True)])
        self.pool = nn.MaxPool2d(2, 2)
        self.rnn = nn.LSTM(c, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        features = self.pool(self.backbone(x)).squeeze(2).transpose(1, 2)
        sequence, _ = self.rnn(features)
        return torch.softmax(self.fc(sequence), dim=2)


class TextAngleClassifier(nn.Module):
    """In the style of PaddleOCR's text direction classifier: a small
    PP-LCNet-style backbone on a 48 x 192 crop, global average pool, Linear
    to two classes (0 or 180 degrees), Softmax."""

    def __init__(self):
        super().__init__()
        self.backbone, c = lcnet([(24, 3, 1, False), (32, 3, 2, False), (32, 3, 1, False), (64, 3, 2, False),
                                  (64, 5, 1, False), (128, 5, 2, True), (128, 5, 1, True)], stem=16)
        self.fc = nn.Linear(c, 2)

    def forward(self, x):
        return torch.softmax(self.fc(F.adaptive_avg_pool2d(self.backbone(x), 1).flatten(1)), dim=1)


class ConvSiLU(nn.Sequential):
    """YOLOv8's Conv: Conv2d (no bias), BatchNorm, SiLU."""

    def __init__(self, cin, cout, kernel=1, stride=1):
        super().__init__(nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1, self.cv2 = ConvSiLU(c, c, 3), ConvSiLU(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class C2f(nn.Module):
    """YOLOv8's C2f: a 1x1 conv split in two halves (chunk), n bottlenecks
    chained on the second, every output concatenated, a 1x1 conv."""

    def __init__(self, cin, cout, n=1, shortcut=False):
        super().__init__()
        self.c = cout // 2
        self.cv1 = ConvSiLU(cin, 2 * self.c)
        self.cv2 = ConvSiLU((2 + n) * self.c, cout)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.cv1, self.cv2 = ConvSiLU(cin, cin // 2), ConvSiLU(cin * 2, cout)
        self.pool = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))


class YoloDetector(nn.Module):
    """In the style of Ultralytics YOLOv8n, as its ONNX export looks: the
    CSP backbone (C2f blocks, SPPF), the PAN neck (nearest 2x upsampling,
    Concat), and the decoupled head with DFL box decoding (Softmax over 16
    bins, a fixed 1x1 conv) against anchor points and strides: [b, 3, 640,
    640] -> [b, 84, 8400] (4 box coordinates and 80 class scores per
    anchor), as `yolo export format=onnx` gives."""

    def __init__(self, classes=80, reg_max=16):
        super().__init__()
        w = [16, 32, 64, 128, 256]
        self.stem = nn.Sequential(ConvSiLU(3, w[0], 3, 2), ConvSiLU(w[0], w[1], 3, 2), C2f(w[1], w[1], 1, True))
        self.p3 = nn.Sequential(ConvSiLU(w[1], w[2], 3, 2), C2f(w[2], w[2], 2, True))
        self.p4 = nn.Sequential(ConvSiLU(w[2], w[3], 3, 2), C2f(w[3], w[3], 2, True))
        self.p5 = nn.Sequential(ConvSiLU(w[3], w[4], 3, 2), C2f(w[4], w[4], 1, True), SPPF(w[4], w[4]))
        self.up = nn.Upsample(scale_factor=2.0, mode="nearest")
        self.n4 = C2f(w[4] + w[3], w[3])
        self.n3 = C2f(w[3] + w[2], w[2])
        self.d3, self.m4 = ConvSiLU(w[2], w[2], 3, 2), C2f(w[2] + w[3], w[3])
        self.d4, self.m5 = ConvSiLU(w[3], w[3], 3, 2), C2f(w[3] + w[4], w[4])
        self.reg_max, self.classes = reg_max, classes
        c2, c3 = max(16, w[2] // 4, 4 * reg_max), max(w[2], min(classes, 100))
        self.box = nn.ModuleList(nn.Sequential(ConvSiLU(c, c2, 3), ConvSiLU(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1))
                                 for c in (w[2], w[3], w[4]))
        self.cls = nn.ModuleList(nn.Sequential(ConvSiLU(c, c3, 3), ConvSiLU(c3, c3, 3), nn.Conv2d(c3, classes, 1))
                                 for c in (w[2], w[3], w[4]))
        self.dfl = nn.Conv2d(reg_max, 1, 1, bias=False).requires_grad_(False)
        self.dfl.weight.data[:] = torch.arange(reg_max, dtype=torch.float).view(1, reg_max, 1, 1)
        self.strides = (8, 16, 32)

    def forward(self, x):
        p3 = self.p3(self.stem(x))
        p4 = self.p4(p3)
        p5 = self.p5(p4)
        n4 = self.n4(torch.cat([self.up(p5), p4], 1))
        n3 = self.n3(torch.cat([self.up(n4), p3], 1))
        m4 = self.m4(torch.cat([self.d3(n3), n4], 1))
        m5 = self.m5(torch.cat([self.d4(m4), p5], 1))
        levels, anchors, strides = [], [], []
        for i, f in enumerate((n3, m4, m5)):
            levels.append(torch.cat([self.box[i](f), self.cls[i](f)], 1).flatten(2))
            h, w = f.shape[2], f.shape[3]
            sy, sx = torch.meshgrid(torch.arange(h, dtype=torch.float) + 0.5, torch.arange(w, dtype=torch.float) + 0.5,
                                    indexing="ij")
            anchors.append(torch.stack((sx, sy), -1).view(-1, 2))
            strides.append(torch.full((h * w, 1), float(self.strides[i])))
        y = torch.cat(levels, 2)
        box, cls = y.split((4 * self.reg_max, self.classes), 1)
        b, _, a = box.shape
        dist = self.dfl(box.view(b, 4, self.reg_max, a).transpose(2, 1).softmax(1)).view(b, 4, a)
        anchor = torch.cat(anchors).transpose(0, 1).unsqueeze(0)
        stride = torch.cat(strides).transpose(0, 1)
        lt, rb = dist.chunk(2, 1)
        x1y1, x2y2 = anchor - lt, anchor + rb
        boxes = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * stride
        return torch.cat((boxes, cls.sigmoid()), 1)


def text_images(n, height, width):
    """Dark strokes on a light background: rows of random bars."""
    bars = (torch.rand(n, 1, height // 4, width // 4) > 0.6).float()
    ink = F.interpolate(bars, size=(height, width), mode="nearest")
    return (0.9 - 0.7 * ink + 0.05 * torch.rand(n, 3, height, width)).clamp(0, 1)


# ---------------------------------------------------------------------------
# Wrappers that give torchvision's dict and list outputs plain tensors.

class SegmentationOut(nn.Module):
    """torchvision's segmenters return {"out": ...} (no "aux": aux_loss off)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class DetectionOut(nn.Module):
    """torchvision's detectors take a list of [3, H, W] images and return a
    list of dicts; this takes [1, 3, H, W] and returns boxes, scores, labels."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        result = self.model(list(x))[0]
        return result["boxes"], result["scores"], result["labels"]


# ---------------------------------------------------------------------------
# The table.

@dataclass
class Spec:
    make: Callable[[], nn.Module]          # a fresh model (torch's initialization)
    inputs: Callable[[int], Tuple]          # example inputs at batch n
    input_names: List[str]
    output_names: List[str] = field(default_factory=lambda: ["output"])
    dynamic_batch: bool = False             # dim 0 of the first input and of the outputs is "batch"
    script: bool = False                    # torch.jit.script before export (control flow)
    max_opset: Optional[int] = None         # exported at min(opset asked for, this)
    # Symbolic dims beyond the batch: input or output name -> {axis: symbol}.
    dynamic_dims: dict = field(default_factory=dict)


def classifier(name, size=224, **kwargs):
    return Spec(lambda: getattr(torchvision.models, name)(weights=None, **kwargs),
                lambda n: (smooth_images(n, size),), ["input"], dynamic_batch=True)


def segmenter(name):
    # 224 x 224 rather than torchvision's 520 x 520: five times faster to export and to run.
    make = getattr(torchvision.models.segmentation, name)
    return Spec(lambda: SegmentationOut(make(weights=None, weights_backbone=None, aux_loss=False)),
                lambda n: (smooth_images(n, 224),), ["input"], dynamic_batch=True)


def detector(name, size, max_opset=None, **kwargs):
    make = getattr(torchvision.models.detection, name)
    return Spec(lambda: DetectionOut(make(weights=None, weights_backbone=None, **kwargs)),
                lambda n: (smooth_images(n, size),), ["input"], ["boxes", "scores", "labels"], max_opset=max_opset)


def recurrent(cell, bidirectional=False):
    return Spec(lambda: RecurrentTagger(cell, bidirectional=bidirectional),
                lambda n: (torch.randn(n, 32, 64),), ["input"], dynamic_batch=True)


MODELS = {
    "resnet18": classifier("resnet18"),
    "resnet50": classifier("resnet50"),
    "mobilenet_v2": classifier("mobilenet_v2"),
    "mobilenet_v3_small": classifier("mobilenet_v3_small"),
    "mobilenet_v3_large": classifier("mobilenet_v3_large"),
    "efficientnet_b0": classifier("efficientnet_b0"),
    "regnet_x_1_6gf": classifier("regnet_x_1_6gf"),
    "shufflenet_v2_x1_0": classifier("shufflenet_v2_x1_0"),
    "squeezenet1_1": classifier("squeezenet1_1"),
    "googlenet": classifier("googlenet", aux_logits=False),
    "inception_v3": classifier("inception_v3", size=299, aux_logits=False),
    "densenet121": classifier("densenet121"),
    "convnext_tiny": classifier("convnext_tiny"),
    "vit_b_16": classifier("vit_b_16"),
    # torchvision's window attention calls F.dropout(p=0.0) without
    # training=False: the export holds 24 Dropout nodes with training_mode
    # true and ratio 0 (an identity), as the real swin_t export does.
    "swin_t": classifier("swin_t"),
    "deeplabv3_mobilenet_v3_large": segmenter("deeplabv3_mobilenet_v3_large"),
    "deeplabv3_resnet50": segmenter("deeplabv3_resnet50"),
    "lraspp_mobilenet_v3_large": segmenter("lraspp_mobilenet_v3_large"),
    "ssdlite320_mobilenet_v3_large": detector("ssdlite320_mobilenet_v3_large", 320),
    # Opset 15 at most: torchvision 0.14 exports RoiAlign with its opset 11
    # symbolic, which writes no coordinate_transformation_mode; from opset 16
    # that attribute defaults to half_pixel, torch's aligned=True, and the
    # model's boxes (aligned=False) then differ entirely from torch's.
    # Random weights spread a box's score over 91 classes (about 0.01 each):
    # at torchvision's threshold of 0.05 no box would be left.
    "fasterrcnn_mobilenet_v3_large_320_fpn": detector("fasterrcnn_mobilenet_v3_large_320_fpn", 320, max_opset=15,
                                                      box_score_thresh=0.001),
    "bert_encoder": Spec(BertLikeEncoder, lambda n: (token_ids(n, 128),), ["input_ids"]),
    "gpt_decoder": Spec(GPTStyleDecoder, lambda n: (token_ids(n, 64),), ["input_ids"], ["logits"],
                        dynamic_batch=True),
    "lstm": recurrent(nn.LSTM),
    "gru": recurrent(nn.GRU),
    "bilstm": recurrent(nn.LSTM, bidirectional=True),
    "vad_like": Spec(VadLike, lambda n: (audio(n),), ["audio"], ["speech_prob"], dynamic_batch=True),
    "control_flow": Spec(ControlFlow, lambda n: (torch.randn(n, 64),), ["input"], script=True),
    # Dynamic height and width as well as batch: no fixed size to run pooling windows on.
    "squeezenet1_1_dynamic_hw": Spec(lambda: torchvision.models.squeezenet1_1(weights=None),
                                     lambda n: (smooth_images(n, 224),), ["input"], dynamic_batch=True,
                                     dynamic_dims={"input": {2: "height", 3: "width"}}),
    "vad_sample_rate": Spec(SampleRateVad, lambda n: (audio(n, samples=8192), torch.tensor(16000)),
                            ["audio", "sample_rate"], ["speech_prob"], dynamic_batch=True, script=True,
                            dynamic_dims={"audio": {1: "samples"}, "speech_prob": {1: "frames"}}),
    "scalar_input": Spec(ScalarInput, lambda n: (audio(n), torch.tensor(16000)), ["audio", "sample_rate"],
                         dynamic_batch=True),
    "yolo_detector": Spec(YoloDetector, lambda n: (smooth_images(n, 640),), ["images"], ["output0"], dynamic_batch=True),
    # PaddleOCR's three stages, their inputs of any size, as its exports are.
    "ocr_det": Spec(TextDetector, lambda n: (text_images(n, 640, 640),), ["input"], ["probability"], dynamic_batch=True,
                    dynamic_dims={"input": {2: "height", 3: "width"}, "probability": {2: "height", 3: "width"}}),
    "ocr_rec": Spec(TextRecognizer, lambda n: (text_images(n, 32, 320),), ["input"], ["probabilities"],
                    dynamic_batch=True, dynamic_dims={"input": {3: "width"}, "probabilities": {1: "steps"}}),
    "ocr_cls": Spec(TextAngleClassifier, lambda n: (text_images(n, 48, 192),), ["input"], ["probabilities"],
                    dynamic_batch=True),
}


# ---------------------------------------------------------------------------
# Building and exporting.

def calibrate(model, inputs, batches=2, batch_size=4):
    """What export_models.randomize does for image classifiers, for any input:
    batch-norm affine parameters away from the identity and running
    statistics measured on example batches, as training would leave them (so
    no layer dies or explodes). Only the batch-norm layers run in training
    mode: dropout stays off and detectors keep their inference path."""
    norms = [m for m in model.modules() if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d))]
    if not norms:
        return
    with torch.no_grad():
        for m in norms:
            m.weight.uniform_(0.5, 1.5)
            m.bias.uniform_(-0.2, 0.2)
            m.reset_running_stats()
            m.momentum = None  # a plain average over the calibration batches
            m.train()
        for _ in range(batches):
            model(*inputs(batch_size))
    model.eval()


def revive_zero_layers(model):
    """torchvision starts some layers at zero (ViT's classifier head), which
    would make every output 0: those get nn.Linear's default draw instead."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear) and not m.weight.any():
                m.reset_parameters()


def build(name):
    """(model in eval mode with realistic weights, example inputs at batch 1).
    Seeded: the same name gives the same model and inputs in any order."""
    spec = MODELS[name]
    torch.manual_seed(0)
    model = spec.make().eval()
    revive_zero_layers(model)
    if isinstance(model, BertLikeEncoder):
        randomize(model)
    else:
        calibrate(model, spec.inputs)
    if spec.script:
        model = torch.jit.script(model)
    return model, spec.inputs(1)


def save_arrays(out_dir, stem, names, tensors):
    """One array as STEM.npy, several as STEM.npz keyed by name."""
    arrays = [t.detach().numpy() for t in tensors]
    if len(arrays) == 1:
        np.save(os.path.join(out_dir, stem + ".npy"), arrays[0])
    else:
        np.savez(os.path.join(out_dir, stem + ".npz"), **dict(zip(names, arrays)))


def export(name, out_dir, opset=17):
    """Writes NAME.onnx and its example input(s) and torch output(s) into
    out_dir, unless NAME.onnx is there. Returns the opset used (None when
    skipped): `opset`, or the model's max_opset when that is lower."""
    spec = MODELS[name]
    path = os.path.join(out_dir, name + ".onnx")
    if os.path.exists(path):
        return None
    if spec.max_opset is not None:
        opset = min(opset, spec.max_opset)
    model, inputs = build(name)
    dynamic = None
    if spec.dynamic_batch:
        dynamic = {n: {0: "batch"} for n in [spec.input_names[0]] + spec.output_names}
    for value, axes in spec.dynamic_dims.items():
        dynamic = dynamic or {}
        dynamic[value] = {**dynamic.get(value, {}), **axes}
    with torch.no_grad():
        outputs = model(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    tmp = path + ".tmp"
    torch.onnx.export(model, inputs, tmp, input_names=spec.input_names, output_names=spec.output_names,
                      opset_version=opset, dynamic_axes=dynamic)
    save_arrays(out_dir, name + (".input" if len(inputs) == 1 else ".inputs"), spec.input_names, inputs)
    save_arrays(out_dir, name + ".torch", spec.output_names, outputs)
    os.replace(tmp, path)  # last: a present .onnx means a complete set of files
    return opset


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="output folder")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated names (all by default)")
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    args = parser.parse_args()
    if args.list:
        for name, spec in MODELS.items():
            shapes = ", ".join(f"{n} {list(t.shape)}" for n, t in zip(spec.input_names, spec.inputs(1)))
            print(f"{name:<40} {shapes}{'  (dynamic batch)' if spec.dynamic_batch else ''}")
        return
    if not args.out:
        parser.error("--out is required")
    names = args.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown models: {', '.join(unknown)} (--list shows them)")
    os.makedirs(args.out, exist_ok=True)
    start = time.perf_counter()
    for name in names:
        t0 = time.perf_counter()
        opset = export(name, args.out, args.opset)
        status = "exists, skipped" if opset is None else f"opset {opset}, {time.perf_counter() - t0:.1f} s"
        print(f"{name:<40} {status}", flush=True)
    print(f"total {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()

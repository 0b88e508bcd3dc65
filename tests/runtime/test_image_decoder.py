#!/usr/bin/env python3
"""ImageDecoder (opset 20) on every format the spec lists, through `onnxkit
run`. The images are encoded here by Pillow (Debian's python3-pil, the
encoder the spec's reference implementation and ONNX's backend data use),
in several of each format's modes (gray, palette, alpha, 1-bit,
compressions, lossy and lossless), and the truth is Pillow's own decoding
of the same bytes, as the reference implementation takes it:
convert("RGB") (reversed for BGR) and convert("L") for Grayscale. Pillow
decodes JPEG, TIFF, WebP and JPEG 2000 with the Debian libraries onnxkit
uses, so lossy formats are compared exactly too, as ONNX's backend test
compares them. Then the bytes are damaged (truncated, bits flipped, sizes
in headers made huge): each run must end in one clear error naming the
node, never a crash and never a half-built image.

usage: test_image_decoder.py --onnxkit PATH [unittest args]"""

import argparse
import io
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper
from PIL import Image

ARGS = None
NODE = "decode_photo"
PIXEL_FORMATS = ("RGB", "BGR", "Grayscale")


def picture(mode, height=19, width=23, seed=0):
    """Noise, so that every pixel and channel is checked (odd sizes, so
    that row padding and strides show)."""
    rng = np.random.default_rng(seed)
    rgba = rng.integers(0, 256, (height, width, 4), dtype=np.uint8)
    image = Image.fromarray(rgba, "RGBA")
    if mode == "P":
        return image.convert("RGB").quantize(colors=37)
    return image.convert(mode)


def encode(image, fmt, **options):
    with io.BytesIO() as f:
        image.save(f, format=fmt, **options)
        return f.getvalue()


def pillow_decode(data, pixel_format):
    image = Image.open(io.BytesIO(data))
    if pixel_format == "Grayscale":
        return np.array(image.convert("L"))[:, :, np.newaxis]
    rgb = np.array(image.convert("RGB"))
    return rgb[:, :, ::-1] if pixel_format == "BGR" else rgb


# Each format in the modes Pillow writes it, with the options that pick
# its variants: (label, format, mode, save options).
CASES = [
    ("png_rgb", "PNG", "RGB", {}),
    ("png_rgba", "PNG", "RGBA", {}),
    ("png_gray", "PNG", "L", {}),
    ("png_gray_alpha", "PNG", "LA", {}),
    ("png_palette", "PNG", "P", {}),
    ("png_1bit", "PNG", "1", {}),
    ("png_interlaced", "PNG", "RGB", {"interlace": 1}),
    ("jpeg_rgb_420", "JPEG", "RGB", {"quality": 90}),
    ("jpeg_rgb_444", "JPEG", "RGB", {"quality": 90, "subsampling": 0}),
    ("jpeg_progressive", "JPEG", "RGB", {"quality": 75, "progressive": True}),
    ("jpeg_gray", "JPEG", "L", {"quality": 90}),
    ("bmp_rgb", "BMP", "RGB", {}),
    ("bmp_gray", "BMP", "L", {}),
    ("bmp_palette", "BMP", "P", {}),
    ("bmp_1bit", "BMP", "1", {}),
    ("ppm", "PPM", "RGB", {}),
    ("pgm", "PPM", "L", {}),
    ("pbm", "PPM", "1", {}),
    ("tiff_rgb", "TIFF", "RGB", {}),
    ("tiff_rgb_lzw", "TIFF", "RGB", {"compression": "tiff_lzw"}),
    ("tiff_rgb_deflate", "TIFF", "RGB", {"compression": "tiff_adobe_deflate"}),
    ("tiff_rgb_packbits", "TIFF", "RGB", {"compression": "packbits"}),
    ("tiff_rgb_jpeg", "TIFF", "RGB", {"compression": "jpeg", "quality": 90}),
    ("tiff_rgba", "TIFF", "RGBA", {}),
    ("tiff_gray", "TIFF", "L", {}),
    ("tiff_gray_alpha", "TIFF", "LA", {}),
    ("tiff_palette", "TIFF", "P", {}),
    ("tiff_1bit", "TIFF", "1", {}),
    ("tiff_1bit_g4", "TIFF", "1", {"compression": "group4"}),
    ("tiff_rgb_strips", "TIFF", "RGB", {"compression": "tiff_lzw", "strip_size": 256}),
    ("webp_lossless", "WEBP", "RGB", {"lossless": True}),
    ("webp_lossless_alpha", "WEBP", "RGBA", {"lossless": True}),
    ("webp_lossy", "WEBP", "RGB", {"quality": 80}),
    ("webp_lossy_alpha", "WEBP", "RGBA", {"quality": 80}),
    ("jp2_rgb", "JPEG2000", "RGB", {}),
    ("jp2_rgba", "JPEG2000", "RGBA", {}),
    ("jp2_gray", "JPEG2000", "L", {}),
    ("jp2_lossy", "JPEG2000", "RGB", {"irreversible": True, "quality_mode": "rates", "quality_layers": [20]}),
    ("j2k_codestream", "JPEG2000", "RGB", {"no_jp2": True}),
    ("j2k_tiles", "JPEG2000", "RGB", {"no_jp2": True, "tile_size": (8, 8)}),
]


def handmade_tiff(pixels, photometric, planar=1, tile=None):
    """An uncompressed little-endian TIFF of `pixels` (height, width,
    samples) uint8, written here to reach layouts Pillow does not write:
    tiles, separate planes, MinIsWhite."""
    height, width, samples = pixels.shape
    if planar == 2:
        planes = [pixels[:, :, s:s + 1] for s in range(samples)]
    else:
        planes = [pixels]
    chunks = []
    for plane in planes:
        if tile is None:
            chunks.append(plane.tobytes())
        else:
            th, tw = tile
            for y in range(0, height, th):
                for x in range(0, width, tw):
                    block = np.zeros((th, tw, plane.shape[2]), np.uint8)
                    part = plane[y:y + th, x:x + tw]
                    block[:part.shape[0], :part.shape[1]] = part
                    chunks.append(block.tobytes())
    entries = [(256, 4, [width]), (257, 4, [height]), (258, 3, [8] * samples), (259, 3, [1]),
               (262, 3, [photometric]), (277, 3, [samples]), (284, 3, [planar])]
    if samples == 4:
        entries.append((338, 3, [2]))
    offsets_tag, counts_tag = (273, 279) if tile is None else (324, 325)
    if tile is None:
        entries.append((278, 4, [height]))
    else:
        entries += [(322, 4, [tile[1]]), (323, 4, [tile[0]])]
    entries += [(offsets_tag, 4, [0] * len(chunks)), (counts_tag, 4, [len(c) for c in chunks])]
    entries.sort()
    ifd_size = 2 + 12 * len(entries) + 4
    extra_at = 8 + ifd_size
    extra = b""
    layout = []
    for tag, kind, values in entries:
        fmt = "<" + ("H" if kind == 3 else "I") * len(values)
        layout.append([tag, kind, values, fmt, struct.calcsize(fmt)])
    for item in layout:
        if item[4] > 4:
            item.append(extra_at + len(extra))
            extra += struct.pack(item[3], *item[2]) if item[0] != offsets_tag else b"\0" * item[4]
    data_at = extra_at + len(extra)
    offsets, at = [], data_at
    for c in chunks:
        offsets.append(at)
        at += len(c)
    out = bytearray(b"II*\0" + struct.pack("<I", 8) + struct.pack("<H", len(entries)))
    extra = bytearray(extra)
    for item in layout:
        tag, kind, values, fmt, size = item[:5]
        if tag == offsets_tag:
            values = offsets
        packed = struct.pack(fmt, *values)
        if size > 4:
            extra[item[5] - extra_at:item[5] - extra_at + size] = packed
            out += struct.pack("<HHII", tag, kind, len(values), item[5])
        else:
            out += struct.pack("<HHI", tag, kind, len(values)) + packed.ljust(4, b"\0")
    out += struct.pack("<I", 0) + extra + b"".join(chunks)
    return bytes(out)


def run(*args):
    return subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=120)


class ImageDecoder(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.models = {}
        for pixel_format in PIXEL_FORMATS:
            node = helper.make_node("ImageDecoder", ["data"], ["pixels"], name=NODE, pixel_format=pixel_format)
            graph = helper.make_graph([node], "image_decoder",
                                      [helper.make_tensor_value_info("data", TensorProto.UINT8, ["bytes"])],
                                      [helper.make_tensor_value_info("pixels", TensorProto.UINT8, None)])
            model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)
            path = os.path.join(cls.dir.name, f"{pixel_format}.onnx")
            onnx.save(model, path)
            cls.models[pixel_format] = path

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def decode(self, data, pixel_format="RGB"):
        """onnxkit's pixels, or the failed process."""
        with tempfile.TemporaryDirectory(dir=self.dir.name) as out:
            stream = os.path.join(out, "data.npy")
            np.save(stream, np.frombuffer(data, dtype=np.uint8))
            proc = run("run", self.models[pixel_format], "--input", f"data={stream}", "--output-dir", out)
            if proc.returncode != 0:
                return proc
            return np.load(os.path.join(out, "output_0.npy"))

    def test_every_format_and_mode_matches_pillow(self):
        formats = set()
        for label, fmt, mode, options in CASES:
            data = encode(picture(mode), fmt, **options)
            formats.add(fmt)
            for pixel_format in PIXEL_FORMATS:
                with self.subTest(case=label, pixel_format=pixel_format):
                    ours = self.decode(data, pixel_format)
                    self.assertIsInstance(ours, np.ndarray, getattr(ours, "stderr", ""))
                    truth = pillow_decode(data, pixel_format)
                    self.assertEqual(ours.dtype, np.uint8)
                    self.assertEqual(ours.shape, truth.shape)
                    diff = np.abs(ours.astype(int) - truth.astype(int))
                    self.assertEqual(int(diff.max()), 0, f"{int((diff > 0).sum())} of {diff.size} values differ")
        self.assertEqual(formats, {"PNG", "JPEG", "BMP", "PPM", "TIFF", "WEBP", "JPEG2000"})

    def test_tiff_layouts_pillow_does_not_write(self):
        # Tiles and separate planes go through libtiff's RGBA interface,
        # MinIsWhite strips through the scanline reader.
        rng = np.random.default_rng(2)
        layouts = [  # (label, samples, photometric, planar, tile)
            ("tiled_rgb", 3, 2, 1, (16, 16)),
            ("tiled_rgba", 4, 2, 1, (16, 16)),
            ("separate_rgb", 3, 2, 2, None),
            ("separate_tiled_rgba", 4, 2, 2, (16, 16)),
            ("min_is_white", 1, 0, 1, None),
            ("min_is_white_tiled", 1, 0, 1, (16, 16)),
            ("tiled_gray", 1, 1, 1, (16, 16)),
        ]
        for label, samples, photometric, planar, tile in layouts:
            data = handmade_tiff(rng.integers(0, 256, (19, 23, samples), dtype=np.uint8), photometric, planar, tile)
            for pixel_format in PIXEL_FORMATS:
                with self.subTest(case=label, pixel_format=pixel_format):
                    ours = self.decode(data, pixel_format)
                    self.assertIsInstance(ours, np.ndarray, getattr(ours, "stderr", ""))
                    np.testing.assert_array_equal(ours, pillow_decode(data, pixel_format))

    def expect_clean_error(self, data, label):
        proc = self.decode(data)
        self.assertNotIsInstance(proc, np.ndarray, f"{label}: damaged bytes decoded")
        self.assertEqual(proc.returncode, 1, f"{label}: {proc.stderr}")
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, f"{label}: {proc.stderr}")
        self.assertIn(NODE, lines[0])
        self.assertIn("ImageDecoder", lines[0])
        return lines[0]

    def test_truncated_streams_are_errors(self):
        for label, fmt, mode, options in CASES:
            if fmt in ("BMP", "PPM"):
                continue  # hand-written decoders, tested in image_test.cpp
            data = encode(picture(mode, 40, 40), fmt, **options)
            for keep in (len(data) // 2, len(data) - 16, 30):
                with self.subTest(case=label, keep=keep):
                    self.expect_clean_error(data[:keep], f"{label} cut to {keep} bytes")

    def test_flipped_bits_never_crash(self):
        # Damage can leave a valid image (bits of uncompressed pixels, or
        # of a BMP's width): then an image comes out; otherwise one error.
        rng = np.random.default_rng(1)
        for label, fmt, mode, options in CASES:
            data = encode(picture(mode, 24, 24), fmt, **options)
            for trial in range(4):
                damaged = bytearray(data)
                for at in rng.integers(12, len(data), 3):
                    damaged[at] ^= 1 << int(rng.integers(0, 8))
                with self.subTest(case=label, trial=trial):
                    proc = self.decode(bytes(damaged))
                    if isinstance(proc, np.ndarray):
                        self.assertEqual(proc.ndim, 3)
                    else:
                        self.expect_clean_error(bytes(damaged), f"{label} with flipped bits")

    def test_huge_sizes_in_headers_are_refused_without_allocating(self):
        # A TIFF whose width and height say 200000: the rows are not there.
        data = bytearray(encode(picture("RGB"), "TIFF"))
        ifd = struct.unpack_from("<I", data, 4)[0]
        for i in range(struct.unpack_from("<H", data, ifd)[0]):
            tag, kind = struct.unpack_from("<HH", data, ifd + 2 + 12 * i)
            if tag in (256, 257):  # ImageWidth, ImageLength
                self.assertIn(kind, (3, 4))
                struct.pack_into("<HHII", data, ifd + 2 + 12 * i, tag, 4, 1, 200000)
        self.expect_clean_error(bytes(data), "a 200000 x 200000 TIFF")
        # A J2K codestream whose SIZ marker says 2^31 - 1 by 2^31 - 1.
        data = bytearray(encode(picture("RGB"), "JPEG2000", no_jp2=True))
        self.assertEqual(bytes(data[:4]), b"\xff\x4f\xff\x51")
        struct.pack_into(">II", data, 8, 0x7FFFFFFF, 0x7FFFFFFF)
        self.expect_clean_error(bytes(data), "a huge JPEG 2000 codestream")
        # A WebP whose RIFF size promises more bytes than are present.
        data = bytearray(encode(picture("RGB"), "WEBP", lossless=True))
        struct.pack_into("<I", data, 4, 1 << 30)
        self.assertIn("RIFF container declares", self.expect_clean_error(bytes(data), "a WebP of 1 GiB"))

    def test_animated_webp_is_refused_by_name(self):
        frames = [picture("RGB", seed=s) for s in range(2)]
        data = encode(frames[0], "WEBP", save_all=True, append_images=frames[1:], lossless=True)
        self.assertIn("animated WebP", self.expect_clean_error(data, "an animated WebP"))


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest])


if __name__ == "__main__":
    main()

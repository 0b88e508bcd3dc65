"""A GPT-2-style decoder at opset 23 whose attention is the standard
`Attention` op with its key/value cache (tests/models/attention_decoder.py),
run as a generation loop: a prompt, then one token per step, each step
feeding the caches the previous one returned. onnxkit and ONNX Runtime each
follow their own caches; every step's logits and caches must match ORT's."""

import pathlib
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conftest import assert_close

import onnxkit

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "models"))
import attention_decoder  # noqa: E402


@pytest.mark.parametrize("threads", [1, 2])
def test_decoder_steps_with_kv_cache_match_onnxruntime(tmp_path, threads):
    model = attention_decoder.build(layers=2, hidden=64, heads=4, vocab=100)
    path = tmp_path / "decoder.onnx"
    onnx.save(model, str(path))
    ours = onnxkit.InferenceSession(str(path), threads=threads)
    theirs = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ids = np.array([[5, 17, 3, 42, 8, 9, 1], [60, 2, 33, 71, 4, 4, 99]], np.int64)
    start, past_ours, past_theirs = 0, None, None
    for step in range(6):
        expected = theirs.run(None, attention_decoder.feeds(model, ids, start, past_theirs))
        got = ours.run(None, attention_decoder.feeds(model, ids, start, past_ours))
        assert len(got) == len(expected) == 5
        for name, g, e in zip([o.name for o in model.graph.output], got, expected):
            assert g.shape == e.shape, (step, name)
            assert_close(g, e)
        total = start + ids.shape[1]
        assert got[1].shape == (2, 4, total, 16)
        past_ours = attention_decoder.next_past(model, got)
        past_theirs = attention_decoder.next_past(model, expected)
        start = total
        ids = expected[0][:, -1:].argmax(axis=-1).astype(np.int64)

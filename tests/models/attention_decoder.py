"""A GPT-2-style decoder built by hand at opset 23 around the standard
`Attention` op with its key/value cache, for the decoder test
(python/tests/test_attention_decoder.py) and bench/attention_bench.py.

Per layer: LayerNormalization -> MatMul + Add to Q, K and V (3-D, heads in
the hidden dim) -> Attention(is_causal, past_key/past_value in, present_key/
present_value out) -> output projection and residual -> LayerNormalization
-> MLP with Gelu and residual; then a last LayerNormalization and the
vocabulary projection. Token and position embeddings come in by Gather.

Inputs: input_ids and position_ids (int64, [batch, seq]), past_key_L and
past_value_L ([batch, heads, past, head_size]); outputs: logits and
present_key_L / present_value_L. Only onnx.helper and numpy: runs with the
onnx of Debian (1.13) as well as newer ones."""

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 23


def build(layers=2, hidden=64, heads=4, vocab=100, max_positions=1100, seed=0):
    rng = np.random.default_rng(seed)
    head_size = hidden // heads
    inits = []

    def weight(name, shape, std=0.1):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * std).astype(np.float32), name))
        return name

    def ones_ish(name, n):
        inits.append(numpy_helper.from_array((1 + 0.1 * rng.standard_normal(n)).astype(np.float32), name))
        return name

    nodes = []

    def node(op, inputs, outputs, **attrs):
        nodes.append(helper.make_node(op, inputs, outputs, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def layer_norm(x, name):
        return node("LayerNormalization", [x, ones_ish(name + ".g", hidden), weight(name + ".b", [hidden])],
                    [name + ".out"], axis=-1, epsilon=1e-5)

    def linear(x, name, n_in, n_out):
        y = node("MatMul", [x, weight(name + ".w", [n_in, n_out])], [name + ".mm"])
        return node("Add", [y, weight(name + ".bias", [n_out])], [name + ".out"])

    tok = node("Gather", [weight("wte", [vocab, hidden], 0.5), "input_ids"], ["tok"])
    pos = node("Gather", [weight("wpe", [max_positions, hidden], 0.5), "position_ids"], ["pos"])
    x = node("Add", [tok, pos], ["embed"])
    inits.append(numpy_helper.from_array(np.array([hidden] * 3, np.int64), "qkv_split"))
    graph_inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
                    helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["batch", "seq"])]
    graph_outputs = []
    cache_outputs = []
    for l in range(layers):
        p = f"h{l}"
        h = layer_norm(x, p + ".ln1")
        qkv = linear(h, p + ".qkv", hidden, 3 * hidden)
        q, k, v = node("Split", [qkv, "qkv_split"], [p + ".q", p + ".k", p + ".v"], axis=2)
        for kind in ("key", "value"):
            graph_inputs.append(helper.make_tensor_value_info(f"past_{kind}_{l}", TensorProto.FLOAT,
                                                              ["batch", heads, "past", head_size]))
            cache_outputs.append(helper.make_tensor_value_info(f"present_{kind}_{l}", TensorProto.FLOAT,
                                                               ["batch", heads, "total", head_size]))
        a = node("Attention", [q, k, v, "", f"past_key_{l}", f"past_value_{l}"],
                 [p + ".attn", f"present_key_{l}", f"present_value_{l}"], is_causal=1, q_num_heads=heads,
                 kv_num_heads=heads)[0]
        x = node("Add", [x, linear(a, p + ".proj", hidden, hidden)], [p + ".res1"])
        h = layer_norm(x, p + ".ln2")
        f = node("Gelu", [linear(h, p + ".fc", hidden, 4 * hidden)], [p + ".gelu"])
        x = node("Add", [x, linear(f, p + ".fc_out", 4 * hidden, hidden)], [p + ".res2"])
    h = layer_norm(x, "ln_f")
    node("MatMul", [h, weight("lm_head", [hidden, vocab])], ["logits"])
    graph_outputs.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", vocab]))
    graph = helper.make_graph(nodes, "attention_decoder", graph_inputs, graph_outputs + cache_outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="onnxkit-tests")
    model.ir_version = 10
    return model


def feeds(model, ids, start, past):
    """The inputs of one step: tokens `ids` ([batch, seq]) at positions
    start.., and the caches `past` (name -> array; empty ones when None)."""
    batch, seq = ids.shape
    out = {"input_ids": ids.astype(np.int64),
           "position_ids": np.tile(np.arange(start, start + seq, dtype=np.int64), (batch, 1))}
    for i in model.graph.input:
        if i.name.startswith("past_"):
            dims = i.type.tensor_type.shape.dim
            empty = np.zeros((batch, dims[1].dim_value, 0, dims[3].dim_value), np.float32)
            out[i.name] = empty if past is None else past[i.name]
    return out


def next_past(model, outputs):
    """The caches of the next step from a run's outputs (in graph order)."""
    names = [o.name for o in model.graph.output]
    return {n.replace("present_", "past_"): v for n, v in zip(names, outputs) if n.startswith("present_")}

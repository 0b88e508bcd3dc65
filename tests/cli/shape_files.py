"""Reading the shapes `onnxkit shapes` writes, for the tests of symbolic shapes
(test_symbolic.py, test_shapes.py)."""

import re


def node_output_shapes(model, with_graph_outputs=True):
    """{node output: [dim, ...] or None} from value_info (and the graph outputs'
    declarations); a dim is an int, a dim_param string, or None when unknown."""
    outputs = {o.name for o in model.graph.output}
    declared = {v.name: v for v in list(model.graph.value_info) + list(model.graph.output)}
    shapes = {}
    for node in model.graph.node:
        for o in node.output:
            if not o or (o in outputs and not with_graph_outputs):
                continue
            v = declared.get(o)
            if v is None or not v.type.tensor_type.HasField("shape"):
                shapes[o] = None
                continue
            shapes[o] = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                         for d in v.type.tensor_type.shape.dim]
    return shapes


def evaluate(dim, batch):
    """A dim as onnxkit writes it (a number, or a polynomial in batch) at that batch."""
    if isinstance(dim, int):
        return dim
    assert re.fullmatch(r"[0-9batch*^+\- ]+", dim), dim
    return eval(dim.replace("^", "**"), {"__builtins__": {}}, {"batch": batch})

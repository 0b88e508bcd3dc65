#!/usr/bin/env python3
"""End-to-end tests of `onnxkit draw` on models exported by Debian's torch
(resnet18, the BERT-like encoder, seed002 from tests/models/export_models.py;
the If/Loop model of tests/models/export_zoo.py, exported here). What the
drawing must contain is worked out from the ONNX file by Python's onnx, not
by onnxkit: which nodes are drawn (every node but Constants, which are folded
into their readers), which edges, the declared types of inputs and outputs.
The SVG is parsed by Python's XML parser; the HTML page is opened in
headless Chromium (Debian's `chromium`), driven over the DevTools protocol
through a pipe with the standard library only.

usage: test_draw.py --onnxkit PATH --models DIR [--chromium PATH] [unittest args]"""

import argparse
import base64
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import export_zoo  # noqa: E402

ARGS = None
SVG = "{http://www.w3.org/2000/svg}"
MARGIN = 16  # the layout's margin around the drawing


def onnxkit(*args):
    return subprocess.run([ARGS.onnxkit, *map(str, args)], capture_output=True, text=True, timeout=600)


def draw(model, out, *flags):
    proc = onnxkit("draw", model, "-o", out, *flags)
    assert proc.returncode == 0, f"draw {model} {flags}: {proc.stderr}"
    return out


def model_path(name, opset=13):
    return os.path.join(ARGS.models, f"{name}_opset{opset}.onnx")


_control_flow = None


def control_flow_model():
    """The zoo's scripted model with an If, and a Loop holding another If."""
    global _control_flow
    if _control_flow is None:
        out_dir = os.path.join(ARGS.tmp, "zoo")
        os.makedirs(out_dir, exist_ok=True)
        export_zoo.export("control_flow", out_dir)
        _control_flow = os.path.join(out_dir, "control_flow.onnx")
    return _control_flow


# --- what the ONNX file says should be drawn ----------------------------------

def graph_outputs_anywhere(graph, acc=None):
    acc = set() if acc is None else acc
    acc.update(o.name for o in graph.output)
    for n in graph.node:
        for a in n.attribute:
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                graph_outputs_anywhere(g, acc)
    return acc


def drawn_nodes(graph, returned):
    """Every node but Constants folded into their readers."""
    return [n for n in graph.node if not (n.op_type == "Constant" and not (set(n.output) & returned))]


def subgraphs(node):
    for a in node.attribute:
        if a.type == onnx.AttributeProto.GRAPH:
            yield a.name, a.g
        for g in a.graphs:
            yield a.name, g


def type_text(value_info):
    t = value_info.type.tensor_type
    dtype = np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.elem_type]).name
    dims = ["?" if not (d.HasField("dim_value") or d.dim_param) else (str(d.dim_value) if d.HasField("dim_value") else d.dim_param)
            for d in t.shape.dim]
    return f"{dtype}[{','.join(dims)}]"


def expected_edges(graph, returned, outer_constants=frozenset()):
    """(source name, source kind, consumer name, tensor) for every edge of
    one graph's drawing: tensor producers (nodes, graph inputs, outer values)
    to their readers, and producers to the graph's outputs."""
    constants = {t.name for t in graph.initializer} | outer_constants
    produced = {}
    for n in graph.node:
        for o in n.output:
            produced[o] = n
    folded = {o for n in graph.node if n.op_type == "Constant" and not (set(n.output) & returned) for o in n.output}
    inputs = {i.name for i in graph.input}
    edges = set()

    def source(name):
        if name in produced:
            return (produced[name].name, "node")
        if name in inputs:
            return (name, "input")
        return (name, "capture")

    for n in drawn_nodes(graph, returned):
        for i in n.input:
            if i and i not in constants and i not in folded:
                edges.add((*source(i), n.name, i))
    for o in graph.output:
        edges.add((*source(o.name), o.name, o.name))
    return edges


# --- reading the SVG ------------------------------------------------------------

def classes(el):
    return el.get("class", "").split()


def is_box(el):
    return el.tag == SVG + "g" and "box" in classes(el)


def rect_of(box):
    r = box.find(SVG + "rect")
    return tuple(float(r.get(k)) for k in ("x", "y", "width", "height"))


def overlap(a, b):
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def texts(box):
    return [t.text or "" for t in box.findall(SVG + "text")]


class Level:
    """One graph's drawing: the boxes and edges directly in a container
    (the document's layers, or a cluster inside a node's box)."""

    def __init__(self, boxes, edges):
        self.boxes, self.edges = boxes, edges
        self.by_id = {b.get("id"): b for b in boxes}

    def clusters(self, box):
        return {c.get("data-title"): Level([e for e in c if is_box(e)], [e for e in c if "edge" in classes(e)])
                for c in box.findall(SVG + "g") if "cluster" in classes(c)}


def parse_svg(path):
    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg"
    layers = {g.get("class"): g for g in root.findall(SVG + "g")}
    return root, Level(list(layers["boxes"]), list(layers["edges"]))


class SvgChecks(unittest.TestCase):
    """The structural checks every drawing must pass."""

    def check_level(self, level, graph, returned, outer_constants=frozenset()):
        nodes = drawn_nodes(graph, returned)
        node_boxes = [b for b in level.boxes if "node" in classes(b)]
        self.assertEqual(len(node_boxes), len(nodes), graph.name)
        self.assertEqual(sorted(b.get("data-op") for b in node_boxes), sorted(n.op_type for n in nodes))
        # No two boxes overlap, and nested boxes stay inside their cluster.
        rects = [rect_of(b) for b in level.boxes]
        order = sorted(range(len(rects)), key=lambda i: rects[i][0])
        for k, i in enumerate(order):
            for j in order[k + 1:]:
                if rects[j][0] >= rects[i][0] + rects[i][2]:
                    break
                self.assertFalse(overlap(rects[i], rects[j]),
                                 f"{level.boxes[i].get('data-name')} overlaps {level.boxes[j].get('data-name')}")
        # Every edge, between the right boxes.
        drawn = set()
        for e in level.edges:
            a, b = level.by_id[e.get("data-from")], level.by_id[e.get("data-to")]
            kind = "node" if "node" in classes(a) else "input" if "input" in classes(a) else "capture"
            drawn.add((a.get("data-name"), kind, b.get("data-name"), e.get("data-tensor")))
            self.assertTrue(e.find(SVG + "path").get("d").startswith("M"))
        missing = expected_edges(graph, returned, outer_constants) - drawn
        self.assertFalse(missing, f"edges not drawn in {graph.name}: {sorted(missing)[:5]}")
        # Inputs and outputs are boxes labelled with their declared types.
        for kind, values in (("input", graph.input), ("output", graph.output)):
            initializers = {t.name for t in graph.initializer}
            for v in values:
                if v.name in initializers or not v.type.tensor_type.HasField("shape"):
                    continue
                box = next((b for b in level.boxes if kind in classes(b) and b.get("data-name") == v.name), None)
                self.assertIsNotNone(box, f"{kind} {v.name}")
                self.assertIn(type_text(v), texts(box))
        for n in nodes:
            inner = list(subgraphs(n))
            if not inner:
                continue
            box = next(b for b in node_boxes if b.get("data-name") == n.name)
            clusters = level.clusters(box)
            self.assertEqual(sorted(clusters), sorted(name for name, _ in inner))
            outer = rect_of(box)
            for name, g in inner:
                constants = outer_constants | {t.name for t in graph.initializer}
                constants |= {o for m in graph.node if m.op_type == "Constant" for o in m.output}
                self.check_level(clusters[name], g, returned, constants)
                for b in clusters[name].boxes:
                    r = rect_of(b)
                    self.assertTrue(outer[0] < r[0] and r[0] + r[2] < outer[0] + outer[2], b.get("data-name"))
                    self.assertTrue(outer[1] < r[1] and r[1] + r[3] < outer[1] + outer[3], b.get("data-name"))

    def check_drawing(self, model, path):
        root, level = parse_svg(path)
        graph = onnx.load(model, load_external_data=False).graph
        returned = graph_outputs_anywhere(graph)
        self.check_level(level, graph, returned)
        # The drawing fills its canvas: no empty strip beside it.
        rects = [rect_of(b) for b in level.boxes]
        width, height = float(root.get("width")), float(root.get("height"))
        self.assertLessEqual(min(r[0] for r in rects), MARGIN + 1)
        self.assertLessEqual(min(r[1] for r in rects), MARGIN + 1)
        self.assertGreaterEqual(max(r[0] + r[2] for r in rects), width - MARGIN - 300)  # edge labels may stick out
        self.assertGreaterEqual(max(r[1] + r[3] for r in rects), height - MARGIN - 1)
        return level


class Drawings(SvgChecks):
    def test_models_as_svg(self):
        cases = [(model_path("resnet18"), ["--shapes"]), (model_path("bert_encoder"), ["--shapes"]),
                 (model_path("seed002", 17), []), (control_flow_model(), ["--shapes"]),
                 (model_path("resnet18", 17), ["--rankdir", "LR"])]
        for model, flags in cases:
            with self.subTest(model=os.path.basename(model), flags=flags):
                self.check_drawing(model, draw(model, os.path.join(ARGS.tmp, "out.svg"), *flags))

    def test_weights_are_folded_into_their_readers(self):
        model = model_path("resnet18")
        level = self.check_drawing(model, draw(model, os.path.join(ARGS.tmp, "w.svg")))
        graph = onnx.load(model).graph
        conv = graph.node[0]
        weight = next(t for t in graph.initializer if t.name == conv.input[1])
        box = next(b for b in level.boxes if b.get("data-name") == conv.name)
        self.assertIn(f"W float32[{','.join(map(str, weight.dims))}]", texts(box))
        self.assertIn("kernel_shape [7,7]", texts(box))
        self.assertFalse(any(b.get("data-name") == weight.name for b in level.boxes))
        _, bare = parse_svg(draw(model, os.path.join(ARGS.tmp, "nw.svg"), "--no-weights"))
        box = next(b for b in bare.boxes if b.get("data-name") == conv.name)
        self.assertFalse(any(t.startswith("W ") for t in texts(box)), texts(box))

    def test_subgraphs_collapsed(self):
        model = control_flow_model()
        _, level = parse_svg(draw(model, os.path.join(ARGS.tmp, "c.svg"), "--subgraphs", "collapse"))
        graph = onnx.load(model).graph
        self.assertEqual(len([b for b in level.boxes if "node" in classes(b)]), len(drawn_nodes(graph, set())))
        loop = next(b for b in level.boxes if b.get("data-op") == "Loop")
        self.assertEqual(level.clusters(loop), {})
        body = next(g for _, g in subgraphs(next(n for n in graph.node if n.op_type == "Loop")))
        self.assertIn(f"body: {len(body.node)} nodes", texts(loop))

    def test_collapse_by_scope(self):
        for name, depth in (("resnet18", 1), ("bert_encoder", 2)):
            with self.subTest(model=name, depth=depth):
                model = model_path(name)
                graph = onnx.load(model).graph
                _, level = parse_svg(draw(model, os.path.join(ARGS.tmp, "s.svg"), "--collapse", depth))

                def group(node):  # the scope rule, stated independently
                    parts = [p for p in node.name.split("/") if p]
                    return "/" + "/".join(parts[:min(depth, len(parts) - 1)]) if len(parts) > 1 else None

                nodes = drawn_nodes(graph, set())
                scopes = {}
                for n in nodes:
                    if group(n):
                        scopes[group(n)] = scopes.get(group(n), 0) + 1
                scope_boxes = {b.get("data-name"): int(b.get("data-count")) for b in level.boxes if "scope" in classes(b)}
                self.assertEqual(scope_boxes, scopes)
                self.assertLess(len(level.boxes), len(nodes))
                self.assertEqual(len([b for b in level.boxes if "node" in classes(b)]), sum(1 for n in nodes if not group(n)))
                key = {n.name: group(n) or n.name for n in nodes}
                produced = {o: n for n in nodes for o in n.output}
                constants = {t.name for t in graph.initializer}
                constants |= {o for n in graph.node if n.op_type == "Constant" for o in n.output}
                expected = set()
                for n in nodes:
                    for i in n.input:
                        if i in produced and key[produced[i].name] != key[n.name]:
                            expected.add((key[produced[i].name], key[n.name]))
                        elif i and i not in produced and i not in constants:
                            expected.add((i, key[n.name]))
                drawn = {(level.by_id[e.get("data-from")].get("data-name"), level.by_id[e.get("data-to")].get("data-name"))
                         for e in level.edges}
                self.assertFalse(expected - drawn)

    def test_diff_of_seed002_against_its_simplified_form(self):
        for opset in (13, 17):
            with self.subTest(opset=opset):
                model = model_path("seed002", opset)
                simplified = os.path.join(ARGS.tmp, "sim.onnx")
                proc = onnxkit("simplify", model, simplified)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                _, level = parse_svg(draw(model, os.path.join(ARGS.tmp, "d.svg"), "--diff", simplified))
                kept = {n.name for n in onnx.load(simplified).graph.node}
                original = onnx.load(model).graph
                glue = [n for n in original.node if n.op_type in ("Shape", "Gather", "Concat")]
                self.assertTrue(glue)
                by_name = {b.get("data-name"): b for b in level.boxes}
                for n in glue:
                    self.assertNotIn(n.name, kept)
                    self.assertIn("removed", classes(by_name[n.name]), n.name)
                reshape = next(n for n in original.node if n.op_type == "Reshape")
                self.assertIn("changed", classes(by_name[reshape.name]))
                for n in original.node:  # untouched nodes stay plain
                    if n.op_type in ("Conv", "Relu", "Softmax"):
                        self.assertFalse({"removed", "changed", "added"} & set(classes(by_name[n.name])), n.name)
                # The edge from the glue into the Reshape is gone in the result.
                concat_to_reshape = [e for e in level.edges
                                     if level.by_id[e.get("data-to")].get("data-name") == reshape.name
                                     and level.by_id[e.get("data-from")].get("data-op") == "Concat"]
                self.assertTrue(concat_to_reshape)
                self.assertTrue(all("removed" in classes(e) for e in concat_to_reshape))

    def test_overlay_colours_by_error(self):
        model = model_path("resnet18")
        graph = onnx.load(model).graph
        convs = [n for n in graph.node if n.op_type == "Conv"][:3]
        report = {"nodes": [{"name": convs[0].name, "error": 1e-6}, {"name": convs[1].name, "error": 1e-3},
                            {"name": convs[2].output[0], "error": 1.0}, {"name": "nowhere", "error": 5.0}]}
        path = os.path.join(ARGS.tmp, "report.json")
        with open(path, "w") as f:
            json.dump(report, f)
        _, level = parse_svg(draw(model, os.path.join(ARGS.tmp, "o.svg"), "--overlay", path))
        by_name = {b.get("data-name"): b for b in level.boxes}

        def hue(node):
            fill = by_name[node.name].find(SVG + "rect").get("fill")
            self.assertTrue(fill.startswith("hsl("), fill)
            return int(fill[4:].split(",")[0])

        self.assertGreater(hue(convs[0]), hue(convs[1]))  # green above red
        self.assertGreater(hue(convs[1]), hue(convs[2]))
        relu = next(n for n in graph.node if n.op_type == "Relu")
        self.assertFalse(by_name[relu.name].find(SVG + "rect").get("fill").startswith("hsl("))

    def test_same_bytes_twice(self):
        for ext, flags in (("svg", ["--shapes"]), ("html", ["--shapes", "--weight-stats"])):
            a = draw(model_path("bert_encoder"), os.path.join(ARGS.tmp, f"a.{ext}"), *flags)
            b = draw(model_path("bert_encoder"), os.path.join(ARGS.tmp, f"b.{ext}"), *flags)
            with open(a, "rb") as fa, open(b, "rb") as fb:
                self.assertEqual(fa.read(), fb.read(), ext)

    def test_bad_input_is_one_line(self):
        out = os.path.join(ARGS.tmp, "bad.svg")
        broken = os.path.join(ARGS.tmp, "broken.onnx")
        with open(broken, "wb") as f:
            f.write(b"\x08\x07\x12\x03not a model")
        report = os.path.join(ARGS.tmp, "bad.json")
        with open(report, "w") as f:
            f.write("{not json")
        cases = [
            (["draw", os.path.join(ARGS.tmp, "missing.onnx"), "-o", out], 1, "missing.onnx"),
            (["draw", broken, "-o", out], 1, "broken.onnx"),
            (["draw", model_path("seed002"), "-o", os.path.join(ARGS.tmp, "x.png")], 2, ".svg or .html"),
            (["draw", model_path("seed002"), "-o", out, "--rankdir", "XY"], 2, "rankdir"),
            (["draw", model_path("seed002"), "-o", out, "--subgraphs", "maybe"], 2, "subgraphs"),
            (["draw", model_path("seed002"), "-o", out, "--collapse", "0"], 2, "collapse"),
            (["draw", model_path("seed002"), "-o", out, "--overlay", report], 1, "bad.json"),
            (["draw", model_path("seed002"), "-o", out, "--diff", broken], 1, "broken.onnx"),
        ]
        for args, code, needle in cases:
            with self.subTest(args=args[3:]):
                proc = onnxkit(*args)
                self.assertEqual(proc.returncode, code, proc.stderr)
                lines = proc.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, proc.stderr)
                self.assertIn(needle, lines[0])
                self.assertFalse(os.path.exists(out))


# --- the HTML page in headless Chromium ------------------------------------------

class Chromium:
    """Debian's chromium, headless, driven over --remote-debugging-pipe: the
    DevTools protocol as NUL-separated JSON on file descriptors 3 and 4."""

    def __init__(self, binary):
        self.profile = tempfile.mkdtemp(prefix="draw-chromium-")
        to_browser, self.write_fd = os.pipe()
        self.read_fd, from_browser = os.pipe()
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={self.profile}", "--remote-debugging-pipe", "--window-size=1280,900",
                 "--hide-scrollbars", "about:blank"]
        # The shell puts the pipe ends on 3 and 4, where chromium looks.
        self.proc = subprocess.Popen(["/bin/sh", "-c", f'exec "$0" "$@" 3<&{to_browser} 4>&{from_browser}', binary, *flags],
                                     pass_fds=(to_browser, from_browser), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self.buffer, self.next_id, self.events = b"", 0, []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable", session=True)

    def receive(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=False):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.receive()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method):
        while True:
            for k, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(k)
            self.events.append(self.receive())

    def open(self, path):
        self.call("Page.navigate", {"url": "file://" + os.path.abspath(path)}, session=True)
        self.wait_for("Page.loadEventFired")

    def eval(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                           session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def click(self, x, y):
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
                      session=True)

    def errors(self):
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e.get("method") == "Runtime.exceptionThrown":
                out.append(p["exceptionDetails"].get("text"))
            elif e.get("method") == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append(str(p.get("args")))
            elif e.get("method") == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(p["entry"].get("text"))
        return out

    def screenshot(self):
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"}, session=True)["data"])

    def close(self):
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.read_fd)
        os.close(self.write_fd)
        shutil.rmtree(self.profile, ignore_errors=True)


class HtmlPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        binary = ARGS.chromium or shutil.which("chromium")
        if binary is None:
            raise AssertionError("chromium is not installed (scripts/install-deps.sh installs it)")
        cls.browser = Chromium(binary)

    @classmethod
    def tearDownClass(cls):
        cls.browser.close()

    def test_page(self):
        from PIL import Image

        b = self.browser
        for name, node_count_flags in (("resnet18", []), ("bert_encoder", ["--weight-stats"])):
            with self.subTest(model=name):
                model = model_path(name)
                graph = onnx.load(model).graph
                page = draw(model, os.path.join(ARGS.tmp, f"{name}.html"), "--shapes", *node_count_flags)
                with open(page, encoding="utf-8") as f:
                    text = f.read()
                self.assertNotIn("http://", text.replace("http://www.w3.org/2000/svg", ""))
                self.assertNotIn("https://", text)
                b.events.clear()
                b.open(page)
                nodes = drawn_nodes(graph, set())
                self.assertEqual(b.eval("document.querySelectorAll('#boxes g.box.node').length"), len(nodes))

                # Search by a tensor name finds its producer; Enter selects it.
                target = [n for n in nodes if n.op_type in ("Conv", "MatMul")][2]
                b.eval(f"""(() => {{ const s = document.getElementById('search');
                    s.value = {json.dumps(target.output[0])}; s.dispatchEvent(new Event('input'));
                    s.dispatchEvent(new KeyboardEvent('keydown', {{key: 'Enter'}})); }})()""")
                self.assertRegex(b.eval("document.getElementById('hits').textContent"), r"^1 of \d+$")
                self.assertIn(target.name, b.eval("document.getElementById('panel').textContent"))

                # A real click on another node's box shows its attributes
                # (found by search first, which centres it, then the panel emptied).
                other = [n for n in nodes if n.op_type == target.op_type and n.name != target.name][0]
                rect = b.eval(f"""(() => {{ const s = document.getElementById('search'); s.value = {json.dumps(other.name)};
                    s.dispatchEvent(new Event('input')); s.dispatchEvent(new KeyboardEvent('keydown', {{key: 'Enter'}}));
                    const p = document.getElementById('panel'); p.hidden = true; p.replaceChildren();
                    const g = document.querySelector('#boxes g.box.node[data-name="' + CSS.escape({json.dumps(other.name)}) + '"]');
                    const r = g.querySelector('rect').getBoundingClientRect(); return [r.x + r.width / 2, r.y + 6]; }})()""")
                b.click(rect[0], rect[1])
                self.assertFalse(b.eval("document.getElementById('panel').hidden"))
                panel = b.eval("document.getElementById('panel').textContent")
                self.assertIn(other.name, panel)
                for attribute in other.attribute:
                    self.assertIn(attribute.name, panel)
                if node_count_flags:  # weight statistics against numpy's
                    weight = next(i for i in other.input if i in {t.name for t in graph.initializer})
                    array = numpy_helper.to_array(next(t for t in graph.initializer if t.name == weight))
                    stats = b.eval(f"""(() => {{ const d = JSON.parse(document.getElementById('data').textContent).details;
                        for (const k in d) for (const v of (d[k].inputs || [])) if (v.name === {json.dumps(weight)}) return v.stats;
                        }})()""")
                    self.assertAlmostEqual(stats["min"], float(array.min()), places=5)
                    self.assertAlmostEqual(stats["max"], float(array.max()), places=5)
                    self.assertAlmostEqual(stats["mean"], float(array.astype(np.float64).mean()), places=5)

                # Keyboard zoom and pan change the view.
                before = b.eval("document.getElementById('scene').getAttribute('transform')")
                b.eval("document.body.dispatchEvent(new KeyboardEvent('keydown', {key: '+', bubbles: true}))")
                b.eval("new Promise(r => requestAnimationFrame(() => r(0)))")
                self.assertNotEqual(b.eval("document.getElementById('scene').getAttribute('transform')"), before)

                png = b.screenshot()
                shot = os.path.join(ARGS.tmp, f"{name}.png")
                with open(shot, "wb") as f:
                    f.write(png)
                image = Image.open(io.BytesIO(png)).convert("RGB")
                self.assertEqual(image.size[0], 1280)
                colours = image.getcolors(maxcolors=1 << 20)
                self.assertGreater(len(colours), 20, "the screenshot is blank")
                self.assertEqual(b.errors(), [])

    def test_large_graph_opens_as_a_sketch(self):
        """A graph with more boxes in view than the page puts in the DOM:
        drawn on the canvas at first, as SVG once zoomed in."""
        nodes, prev = [], "x"
        for i in range(4000):
            nodes.append(onnx.helper.make_node("Relu" if i % 2 else "Neg", [prev], [f"t{i}"], name=f"/block{i // 100}/n{i}"))
            prev = f"t{i}"
        graph = onnx.helper.make_graph(nodes, "long", [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])],
                                       [onnx.helper.make_tensor_value_info(prev, onnx.TensorProto.FLOAT, [4])])
        model = os.path.join(ARGS.tmp, "long.onnx")
        onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]), model)
        page = draw(model, os.path.join(ARGS.tmp, "long.html"))
        b = self.browser
        b.events.clear()
        b.open(page)
        self.assertEqual(b.eval("getComputedStyle(document.getElementById('sketch')).display"), "block")
        self.assertLess(b.eval("document.querySelectorAll('#boxes g.box').length"), 4000)
        b.eval("""(() => { const s = document.getElementById('search'); s.value = 'n3999';
            s.dispatchEvent(new Event('input')); s.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter'})); })()""")
        self.assertEqual(b.eval("getComputedStyle(document.getElementById('sketch')).display"), "none")
        self.assertIsNotNone(b.eval("document.querySelector('#boxes g.box[data-name=\"/block39/n3999\"]') && 1"))
        self.assertIn("/block39/n3999", b.eval("document.getElementById('panel').textContent"))
        self.assertEqual(b.errors(), [])


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--chromium", default=None)
    ARGS, rest = parser.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="draw-test-") as tmp:
        ARGS.tmp = tmp
        result = unittest.main(argv=[sys.argv[0]] + rest, exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()

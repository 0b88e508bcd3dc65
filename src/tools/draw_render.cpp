// The scene as SVG, and as an HTML page that carries the same SVG fragments
// and puts on screen only those in view (draw_viewer.js's job).

#include <fmt/format.h>

#include <cmath>

#include "tools/draw_scene.h"
#include "util/text.h"

namespace onnxkit::tools::draw {
namespace {

using nlohmann::json;

// What both documents share: arrowheads and the look of boxes and edges.
constexpr std::string_view kSvgStyle = R"(<style>
.box>rect{stroke:#555;stroke-width:1}
.box.input>rect,.box.output>rect{stroke:#345}
.box.capture>rect{stroke-dasharray:4 3}
.box.scope>rect{stroke-width:2}
.box.removed>rect{stroke:#c00;stroke-width:2;stroke-dasharray:6 3}
.box.added>rect{stroke:#080;stroke-width:2}
.box.changed>rect{stroke:#d80;stroke-width:2}
.box.selected>rect{stroke:#e00;stroke-width:3}
.box.hit>rect{stroke:#06f;stroke-width:3}
.cluster>rect{fill:#fafafa;stroke:#999;stroke-dasharray:5 3}
text{fill:#222;white-space:pre}
text.t{font-weight:bold}
text.d{fill:#555}
.edge path{fill:none;stroke:#777;stroke-width:1.2;marker-end:url(#arrow)}
.edge.removed path{stroke:#c00;stroke-dasharray:6 3}
.edge.added path{stroke:#080;stroke-width:2}
.edge text{fill:#666;font-size:9px}
.legend{font-size:12px}
</style><defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0L8,4L0,8z" fill="#666"/></marker></defs>)";

// Appends text escaped for XML, with malformed UTF-8 and the control
// characters XML forbids replaced by U+FFFD (model names are untrusted).
void append_escaped(std::string& out, std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c < 0x20 && c != '\t' ? "\uFFFD" : std::string(1, static_cast<char>(c));
      }
      ++i;
      continue;
    }
    char32_t cp;
    size_t len = decode_utf8(s, i, cp);
    if (len == 0 || cp == 0xFFFE || cp == 0xFFFF) {
      out += "\uFFFD";
      i += std::max<size_t>(len, 1);
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
}

// Coordinates to a tenth of a pixel, without trailing zeros.
std::string num(double v) {
  long long tenths = std::llround(v * 10);
  if (tenths % 10 == 0) return std::to_string(tenths / 10);
  return fmt::format("{}{}.{}", tenths < 0 ? "-" : "", std::llabs(tenths) / 10, std::llabs(tenths) % 10);
}

const char* mark_class(Mark mark) {
  switch (mark) {
    case Mark::removed: return " removed";
    case Mark::added: return " added";
    case Mark::changed: return " changed";
    default: return "";
  }
}

void append_scene(std::string& out, const Scene& scene, bool left_right);

void append_edge(std::string& out, const Scene& scene, const Edge& e, bool left_right) {
  if (e.route.empty()) return;
  fmt::format_to(std::back_inserter(out), R"(<g class="edge{}" data-from="{}" data-to="{}" data-tensor=")", mark_class(e.mark),
                 scene.boxes[e.from].id, scene.boxes[e.to].id);
  append_escaped(out, e.tensor);
  out += "\"><path d=\"M";
  const auto& r = e.route;
  out += num(r[0].x) + "," + num(r[0].y);
  for (size_t i = 1; i < r.size(); ++i) {
    const Point& p = r[i - 1];
    const Point& q = r[i];
    if (i % 2 == 1) {  // straight, across a band
      if (p.x != q.x || p.y != q.y) out += "L" + num(q.x) + "," + num(q.y);
    } else if (left_right) {
      double mid = (p.x + q.x) / 2;
      out += "C" + num(mid) + "," + num(p.y) + " " + num(mid) + "," + num(q.y) + " " + num(q.x) + "," + num(q.y);
    } else {
      double mid = (p.y + q.y) / 2;
      out += "C" + num(p.x) + "," + num(mid) + " " + num(q.x) + "," + num(mid) + " " + num(q.x) + "," + num(q.y);
    }
  }
  out += "\"/>";
  if (e.labelled && !e.label.empty() && r.size() >= 2) {
    // In the gap after the source's band, beside the edge.
    double x = r[1].x + 4, y = left_right ? r[1].y - 4 : r[1].y + 11;
    out += "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\">";
    append_escaped(out, e.label);
    out += "</text>";
  }
  out += "</g>\n";
}

void append_box(std::string& out, const Box& b, bool left_right) {
  fmt::format_to(std::back_inserter(out), R"(<g class="box {}{}" id="{}" data-name=")", box_kind_name(b.kind), mark_class(b.mark),
                 b.id);
  append_escaped(out, b.name);
  out += "\"";
  if (!b.op.empty()) {
    out += " data-op=\"";
    append_escaped(out, b.op);
    out += "\"";
  }
  if (b.kind == BoxKind::scope) out += fmt::format(" data-count=\"{}\"", b.count);
  out += "><title>";
  append_escaped(out, b.name.empty() ? b.op : b.name);
  out += "</title>";
  const bool round = b.kind == BoxKind::input || b.kind == BoxKind::output || b.kind == BoxKind::capture;
  out += "<rect x=\"" + num(b.at.x) + "\" y=\"" + num(b.at.y) + "\" width=\"" + num(b.width) + "\" height=\"" + num(b.height) +
         "\" rx=\"" + (round ? "10" : "3") + "\" fill=\"" + b.fill + "\"/>";
  for (size_t i = 0; i < b.lines.size(); ++i) {
    const TextLine& line = b.lines[i];
    const char* cls = line.style == TextLine::title ? " class=\"t\"" : line.style == TextLine::dim ? " class=\"d\"" : "";
    out += "<text x=\"" + num(b.at.x + kPadX) + "\" y=\"" + num(b.at.y + kPadY + (i + 1) * kLineHeight - 3.5) + "\"" + cls + ">";
    append_escaped(out, line.text);
    out += "</text>";
  }
  for (const Cluster& c : b.clusters) {
    out += "<g class=\"cluster\" data-title=\"";
    append_escaped(out, c.title);
    out += "\"><rect x=\"" + num(c.at.x) + "\" y=\"" + num(c.at.y) + "\" width=\"" + num(c.width) + "\" height=\"" +
           num(c.height) + "\"/><text class=\"d\" x=\"" + num(c.at.x + 4) + "\" y=\"" + num(c.at.y + kLineHeight - 3.5) + "\">";
    append_escaped(out, c.title);
    out += "</text>\n";
    append_scene(out, *c.scene, left_right);
    out += "</g>";
  }
  out += "</g>\n";
}

void append_scene(std::string& out, const Scene& scene, bool left_right) {
  for (const Edge& e : scene.edges) append_edge(out, scene, e, left_right);
  for (const Box& b : scene.boxes) append_box(out, b, left_right);
}

std::string legend_svg(const SceneResult& result) {
  std::string out;
  for (size_t i = 0; i < result.legend.size(); ++i) {
    out += "<text class=\"legend\" x=\"" + num(kPadX) + "\" y=\"" + num((i + 1) * kLineHeight) + "\">";
    append_escaped(out, result.legend[i]);
    out += "</text>\n";
  }
  return out;
}

// The page's script: pan, zoom, search, the side panel, and drawing only
// what is in view (a canvas sketch when too much is).
constexpr std::string_view kViewerScript = R"JS(
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  const view = document.getElementById("view"), svg = document.getElementById("graph");
  const scene = document.getElementById("scene"), edgeLayer = document.getElementById("edges");
  const boxLayer = document.getElementById("boxes"), canvas = document.getElementById("sketch");
  const panel = document.getElementById("panel"), search = document.getElementById("search");
  const hits = document.getElementById("hits"), results = document.getElementById("results");
  const NS = "http://www.w3.org/2000/svg";
  const MAX_IN_DOM = 3000;   // boxes drawn as SVG at once; more in view: the canvas sketch
  const CELL = 512;          // world units per cell of the spatial index
  const boxes = data.boxes, edges = data.edges, details = data.details;
  let scale = 1, tx = 0, ty = 0, queued = false, selected = null, found = [], foundAt = -1;
  const boxIndex = new Map();
  boxes.forEach((b, i) => boxIndex.set(b[4], i));

  // Spatial index: cell -> items (boxes as i, edges as -1 - i).
  const grid = new Map();
  function cover(x0, y0, x1, y1, item) {
    for (let cx = Math.floor(x0 / CELL); cx <= Math.floor(x1 / CELL); cx++)
      for (let cy = Math.floor(y0 / CELL); cy <= Math.floor(y1 / CELL); cy++) {
        const key = cx * 1048576 + cy;
        let list = grid.get(key);
        if (!list) grid.set(key, list = []);
        list.push(item);
      }
  }
  boxes.forEach((b, i) => cover(b[0], b[1], b[0] + b[2], b[1] + b[3], i));
  edges.forEach((e, i) => {
    const p = e[0];
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (let k = 0; k < p.length; k += 2) {
      x0 = Math.min(x0, p[k]); x1 = Math.max(x1, p[k]);
      y0 = Math.min(y0, p[k + 1]); y1 = Math.max(y1, p[k + 1]);
    }
    cover(x0, y0, x1, y1, -1 - i);
  });

  function inView() {
    const w = view.clientWidth, h = view.clientHeight;
    const x0 = -tx / scale, y0 = -ty / scale, x1 = x0 + w / scale, y1 = y0 + h / scale;
    const seen = new Set(), vb = [], ve = [];
    for (let cx = Math.floor(x0 / CELL); cx <= Math.floor(x1 / CELL); cx++)
      for (let cy = Math.floor(y0 / CELL); cy <= Math.floor(y1 / CELL); cy++) {
        const list = grid.get(cx * 1048576 + cy);
        if (!list) continue;
        for (const item of list) {
          if (seen.has(item)) continue;
          seen.add(item);
          if (item >= 0) {
            const b = boxes[item];
            if (b[0] <= x1 && b[0] + b[2] >= x0 && b[1] <= y1 && b[1] + b[3] >= y0) vb.push(item);
          } else ve.push(-1 - item);
        }
      }
    return [vb, ve];
  }

  const shownBoxes = new Map(), shownEdges = new Map();
  function show(list, shown, layer, fragment) {
    const missing = list.filter(i => !shown.has(i));
    if (!missing.length) return;
    const holder = document.createElementNS(NS, "g");
    holder.innerHTML = missing.map(fragment).join("");
    const made = Array.from(holder.children);
    made.forEach((el, k) => { shown.set(missing[k], el); layer.appendChild(el); });
  }
  function prune(keep, shown) {
    if (shown.size <= 2 * MAX_IN_DOM) return;
    const wanted = new Set(keep);
    for (const [i, el] of shown) if (!wanted.has(i)) { el.remove(); shown.delete(i); }
  }

  function render() {
    queued = false;
    scene.setAttribute("transform", "translate(" + tx + "," + ty + ") scale(" + scale + ")");
    const [vb, ve] = inView();
    const sketch = vb.length > MAX_IN_DOM;
    edgeLayer.style.display = boxLayer.style.display = sketch ? "none" : "";
    canvas.style.display = sketch ? "" : "none";
    if (sketch) { drawSketch(vb, ve); return; }
    show(ve, shownEdges, edgeLayer, i => edges[i][1]);
    show(vb, shownBoxes, boxLayer, i => boxes[i][6]);
    prune(ve, shownEdges);
    prune(vb, shownBoxes);
    if (selected) mark(selected, "selected", true);
  }
  function later() { if (!queued) { queued = true; requestAnimationFrame(render); } }

  function drawSketch(vb, ve) {
    const dpr = window.devicePixelRatio || 1, w = view.clientWidth, h = view.clientHeight;
    canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr);
    canvas.style.width = w + "px"; canvas.style.height = h + "px";
    const ctx = canvas.getContext("2d");
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.setTransform(dpr * scale, 0, 0, dpr * scale, dpr * tx, dpr * ty);
    ctx.lineWidth = 1 / scale; ctx.strokeStyle = "#999";
    ctx.beginPath();
    for (const i of ve) {
      const p = edges[i][0];
      ctx.moveTo(p[0], p[1]);
      for (let k = 2; k < p.length; k += 2) ctx.lineTo(p[k], p[k + 1]);
    }
    ctx.stroke();
    ctx.strokeStyle = "#555";
    for (const i of vb) {
      const b = boxes[i];
      ctx.fillStyle = b[5]; ctx.fillRect(b[0], b[1], b[2], b[3]);
      ctx.strokeRect(b[0], b[1], b[2], b[3]);
    }
    const top = selected && topOf(selected);
    if (top !== undefined && top !== null) {
      const b = boxes[top];
      ctx.lineWidth = 3 / scale; ctx.strokeStyle = "#e00"; ctx.strokeRect(b[0], b[1], b[2], b[3]);
    }
  }

  function fit() {
    const w = view.clientWidth, h = view.clientHeight;
    scale = Math.min(1.5, 0.95 * Math.min(w / data.width, h / data.height));
    tx = (w - data.width * scale) / 2; ty = Math.max(0, (h - data.height * scale) / 2);
    later();
  }
  function zoomAt(factor, sx, sy) {
    const next = Math.min(8, Math.max(1e-4, scale * factor));
    tx = sx - (sx - tx) * next / scale; ty = sy - (sy - ty) * next / scale; scale = next;
    later();
  }
  function topOf(id) {
    const d = details[id];
    return boxIndex.get(d && d.top ? d.top : id);
  }
  function centerOn(id) {
    const i = topOf(id);
    if (i === undefined) return;
    const b = boxes[i], w = view.clientWidth, h = view.clientHeight;
    scale = Math.max(scale, Math.min(1, 0.8 * w / b[2], 0.8 * h / b[3]));
    tx = w / 2 - (b[0] + b[2] / 2) * scale; ty = h / 2 - (b[1] + b[3] / 2) * scale;
    render();
  }
  function mark(id, cls, on) {
    const el = document.getElementById(id);
    if (el) el.classList.toggle(cls, on);
  }

  // --- the side panel -----------------------------------------------------
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function section(title, rows) {
    if (!rows.length) return;
    panel.appendChild(el("h3", title));
    const table = el("table");
    for (const row of rows) {
      const tr = el("tr");
      row.forEach((cell, k) => tr.appendChild(el("td", cell, k === 0 ? "k" : "")));
      table.appendChild(tr);
    }
    panel.appendChild(table);
  }
  function valueRows(list) {
    return list.map(v => {
      let text = v.type || "";
      if (v.values) text += " = " + v.values;
      if (v.stats) text += "  min " + fmt(v.stats.min) + " max " + fmt(v.stats.max) + " mean " + fmt(v.stats.mean);
      if (v.constant) text += v.external ? "  (weight, external data)" : "  (weight)";
      return [v.name || "(none)", text];
    });
  }
  function fmt(x) { return x === null || x === undefined ? "?" : Number(x).toPrecision(4); }
  function select(id) {
    if (selected) mark(selected, "selected", false);
    selected = id;
    mark(id, "selected", true);
    const d = details[id];
    panel.replaceChildren();
    panel.hidden = false;
    const close = el("button", "\u00d7", "close");
    close.onclick = () => { panel.hidden = true; };
    panel.appendChild(close);
    panel.appendChild(el("h2", d.op || d.kind));
    panel.appendChild(el("div", d.name || "(unnamed)", "name"));
    const facts = [["kind", d.kind]];
    if (d.domain) facts.push(["domain", d.domain]);
    if (d.type) facts.push(["type", d.type]);
    if (d.mark) facts.push(["diff", d.mark + (d.difference ? ": " + d.difference : "")]);
    if (d.error !== undefined) facts.push(["error", String(d.error)]);
    if (d.count !== undefined) facts.push(["nodes", String(d.count)]);
    section("", facts);
    section("Attributes", (d.attributes || []).map(a => [a[0], a[1]]));
    section("Inputs", valueRows(d.inputs || []));
    section("Outputs", valueRows(d.outputs || []));
    if (d.ops) section("Operators", Object.entries(d.ops).map(([k, v]) => [k, String(v)]));
    if (d.members) section("Nodes", d.members.map(m => [m, ""]));
  }

  // --- search ---------------------------------------------------------------
  // Per box: its own name, the tensors it makes, the tensors it reads.
  const haystack = Object.keys(details).map(id => {
    const d = details[id], names = v => (v || []).map(x => (x.name || "").toLowerCase()).join("\n");
    return [id, (d.name || "").toLowerCase(), names(d.outputs), names(d.inputs)];
  });
  // Best first: the exact name, then names, then tensors made, then read.
  function rank(h, q) {
    if (h[1] === q) return 0;
    for (let k = 1; k < 4; k++) if (h[k].includes(q)) return k;
    return -1;
  }
  function find() {
    const q = search.value.trim().toLowerCase();
    if (foundAt >= 0 && found[foundAt]) mark(found[foundAt], "hit", false);
    const ranked = [];
    if (q) for (const h of haystack) { const r = rank(h, q); if (r >= 0) ranked.push([r, ranked.length, h[0]]); }
    ranked.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    found = ranked.map(r => r[2]);
    foundAt = -1;
    hits.textContent = q ? found.length + " found" : "";
    results.replaceChildren();
    for (const id of found.slice(0, 30)) {
      const d = details[id], item = el("li", (d.op ? d.op + "  " : "") + (d.name || id));
      item.onclick = () => goTo(found.indexOf(id));
      results.appendChild(item);
    }
    results.hidden = !found.length;
  }
  function goTo(k) {
    if (!found.length) return;
    if (foundAt >= 0 && found[foundAt]) mark(found[foundAt], "hit", false);
    foundAt = (k + found.length) % found.length;
    const id = found[foundAt];
    centerOn(id);
    mark(id, "hit", true);
    select(id);
    hits.textContent = (foundAt + 1) + " of " + found.length;
  }
  search.addEventListener("input", find);
  search.addEventListener("keydown", e => {
    if (e.key === "Enter") { goTo(e.shiftKey ? foundAt - 1 : foundAt + 1); e.preventDefault(); }
    if (e.key === "Escape") { search.value = ""; find(); search.blur(); }
  });

  // --- pan, zoom, click -------------------------------------------------------
  let drag = null;
  view.addEventListener("pointerdown", e => {
    drag = { x: e.clientX, y: e.clientY, tx, ty, moved: false };
    view.setPointerCapture(e.pointerId);
  });
  view.addEventListener("pointermove", e => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    if (drag.moved) { tx = drag.tx + dx; ty = drag.ty + dy; later(); }
  });
  view.addEventListener("pointerup", e => {
    const wasDrag = drag && drag.moved;
    drag = null;
    if (wasDrag) return;
    const hit = document.elementFromPoint(e.clientX, e.clientY);
    const g = hit && hit.closest ? hit.closest("g.box") : null;
    if (g) { select(g.id); return; }
    if (canvas.style.display !== "none") {  // the sketch: find the box under the pointer
      const r = view.getBoundingClientRect();
      const x = (e.clientX - r.left - tx) / scale, y = (e.clientY - r.top - ty) / scale;
      const i = boxes.findIndex(b => x >= b[0] && x <= b[0] + b[2] && y >= b[1] && y <= b[1] + b[3]);
      if (i >= 0) select(boxes[i][4]);
    }
  });
  view.addEventListener("wheel", e => {
    e.preventDefault();
    const r = view.getBoundingClientRect();
    zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  document.addEventListener("keydown", e => {
    if (e.target === search) return;
    const w = view.clientWidth, h = view.clientHeight, step = 80;
    switch (e.key) {
      case "ArrowLeft": tx += step; break;
      case "ArrowRight": tx -= step; break;
      case "ArrowUp": ty += step; break;
      case "ArrowDown": ty -= step; break;
      case "+": case "=": zoomAt(1.25, w / 2, h / 2); return;
      case "-": case "_": zoomAt(0.8, w / 2, h / 2); return;
      case "0": fit(); return;
      case "/": search.focus(); e.preventDefault(); return;
      case "Escape": panel.hidden = true; return;
      default: return;
    }
    e.preventDefault();
    later();
  });
  window.addEventListener("resize", later);
  fit();
  render();
})();
)JS";

constexpr std::string_view kPageStyle = R"(<style>
html,body{margin:0;height:100%;font:13px system-ui,sans-serif;color:#222}
body{display:flex;flex-direction:column}
#bar{display:flex;gap:12px;align-items:center;padding:6px 10px;border-bottom:1px solid #ccc;background:#f7f7f7}
#search{width:320px;padding:4px 6px}
#help{color:#666;font-size:12px}
#results{position:absolute;top:36px;left:10px;z-index:3;background:#fff;border:1px solid #ccc;margin:0;padding:0;list-style:none;max-height:60%;overflow:auto;font-family:monospace}
#results li{padding:2px 8px;cursor:pointer}
#results li:hover{background:#eef}
#view{position:relative;flex:1;overflow:hidden;cursor:grab;background:#fff}
#view svg,#view canvas{position:absolute;left:0;top:0}
#graph{width:100%;height:100%}
#panel{position:absolute;right:0;top:37px;bottom:0;width:380px;overflow:auto;background:#fff;border-left:1px solid #ccc;padding:8px 12px;box-shadow:-2px 0 6px rgba(0,0,0,.1)}
#panel h2{margin:4px 0;font-size:16px}
#panel h3{margin:10px 0 4px;font-size:13px;color:#444}
#panel .name{font-family:monospace;word-break:break-all;color:#333}
#panel table{border-collapse:collapse;width:100%;font-family:monospace;font-size:12px}
#panel td{border-top:1px solid #eee;padding:2px 4px;vertical-align:top;word-break:break-all}
#panel td.k{color:#555;white-space:nowrap}
#panel .close{float:right;border:none;background:none;font-size:18px;cursor:pointer}
</style>)";

// JSON made safe inside <script>: "</" and "<!" cannot end or confuse it.
std::string script_json(const json& j) {
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  for (size_t i = 0; i < text.size(); ++i) {
    // Only strings hold '<', and "\u003c" is the same string.
    bool risky = text[i] == '<' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '!');
    if (risky) out += "\\u003c";
    else out += text[i];
  }
  return out;
}

}  // namespace

std::string render_svg(const SceneResult& result, const DrawOptions& options) {
  const Scene& scene = *result.scene;
  std::string out;
  out.reserve(1024 + scene.boxes.size() * 512 + scene.edges.size() * 256);
  fmt::format_to(std::back_inserter(out),
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                 "font-family=\"monospace\" font-size=\"{2}\">\n",
                 num(scene.width), num(scene.height), num(kFontSize));
  out += kSvgStyle;
  out += "\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  out += legend_svg(result);
  out += "<g class=\"edges\">\n";
  for (const Edge& e : scene.edges) append_edge(out, scene, e, options.left_right);
  out += "</g>\n<g class=\"boxes\">\n";
  for (const Box& b : scene.boxes) append_box(out, b, options.left_right);
  out += "</g>\n</svg>\n";
  return out;
}

std::string render_html(const SceneResult& result, const DrawOptions& options) {
  const Scene& scene = *result.scene;
  json boxes = json::array(), edges = json::array();
  for (const Box& b : scene.boxes) {
    std::string fragment;
    append_box(fragment, b, options.left_right);
    boxes.push_back({std::round(b.at.x * 10) / 10, std::round(b.at.y * 10) / 10, std::round(b.width * 10) / 10,
                     std::round(b.height * 10) / 10, b.id, b.fill, std::move(fragment)});
  }
  for (const Edge& e : scene.edges) {
    if (e.route.empty()) continue;
    json points = json::array();
    for (const Point& p : e.route) {
      points.push_back(std::round(p.x * 10) / 10);
      points.push_back(std::round(p.y * 10) / 10);
    }
    std::string fragment;
    append_edge(fragment, scene, e, options.left_right);
    edges.push_back({std::move(points), std::move(fragment)});
  }
  json data = {{"width", std::round(scene.width)},
               {"height", std::round(scene.height)},
               {"boxes", std::move(boxes)},
               {"edges", std::move(edges)},
               {"details", result.details}};

  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>";
  append_escaped(out, options.title.empty() ? "onnxkit draw" : options.title);
  out += "</title>\n";
  out += kPageStyle;
  out +=
      "\n</head><body>\n<div id=\"bar\"><input id=\"search\" type=\"search\" placeholder=\"Search a node or tensor name (/)\" "
      "autocomplete=\"off\"><span id=\"hits\"></span><span id=\"help\">drag or arrows: pan · wheel or +/-: zoom · 0: fit · "
      "click a box: details · Enter: next match</span></div>\n<ul id=\"results\" hidden></ul>\n";
  fmt::format_to(std::back_inserter(out),
                 "<div id=\"view\"><canvas id=\"sketch\" style=\"display:none\"></canvas>"
                 "<svg id=\"graph\" xmlns=\"http://www.w3.org/2000/svg\" font-family=\"monospace\" font-size=\"{}\">",
                 num(kFontSize));
  out += kSvgStyle;
  out += "<g id=\"scene\">";
  out += legend_svg(result);
  out += "<g id=\"edges\"></g><g id=\"boxes\"></g></g></svg></div>\n<div id=\"panel\" hidden></div>\n";
  out += "<script type=\"application/json\" id=\"data\">";
  out += script_json(data);
  out += "</script>\n<script>";
  out += kViewerScript;
  out += "</script>\n</body></html>\n";
  return out;
}

}  // namespace onnxkit::tools::draw

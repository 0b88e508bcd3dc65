// The Python helper functions a generated file may need: ONNX semantics that
// take more than one readable expression. Only those a model uses are
// written, after its class. Each is plain torch.

#include "tools/pytorch/writer.h"

namespace onnxkit::tools::pytorch {

const std::map<std::string, Helper, std::less<>>& python_helpers() {
  static const std::map<std::string, Helper, std::less<>> helpers = {
      {"onnx_div", {R"(def _onnx_div(a, b):
    """ONNX Div: true division for floats, C's truncating division for integers."""
    t = a if torch.is_tensor(a) else b
    return a / b if t.is_floating_point() else torch.div(a, b, rounding_mode="trunc")
)", {}}},
      {"onnx_same_pads", {R"(def _onnx_same_pads(x, kernel, strides, dilations, upper):
    """F.pad's list for auto_pad SAME_UPPER (upper) or SAME_LOWER over x's spatial dims."""
    pads = []
    for i in reversed(range(len(kernel))):
        size = x.shape[2 + i]
        out = -(-size // strides[i])
        total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - size, 0)
        small = total // 2
        pads += [small, total - small] if upper else [total - small, small]
    return pads
)", {}}},
      {"onnx_pool_indices", {R"(def _onnx_pool_indices(indices, x, storage_order):
    """torch's max-pool indices count within each (n, c) plane, ONNX's over the whole tensor."""
    plane = math.prod(x.shape[2:])
    if storage_order:  # column-major within the plane
        h, w = x.shape[2], x.shape[3]
        indices = (indices % w) * h + indices // w
    first = torch.arange(x.shape[0] * x.shape[1], device=indices.device) * plane
    return indices + first.reshape(x.shape[0], x.shape[1], *([1] * (indices.dim() - 2)))
)", {}}},
      {"onnx_lrn", {R"(def _onnx_lrn(x, size, alpha, beta, bias):
    """LRN over channels [c - (size - 1) // 2, c + size // 2], as ONNX centres an even window."""
    front = (size - 1) // 2
    squares = F.pad(x.square().movedim(1, -1), (front, size - 1 - front)).movedim(-1, 1)
    return x / (bias + alpha / size * squares.unfold(1, size, 1).sum(-1)) ** beta
)", {}}},
      {"onnx_reshape", {R"(def _onnx_reshape(x, shape, allowzero):
    """ONNX Reshape: unless allowzero, a 0 keeps the input's dim."""
    shape = [int(d) for d in shape]
    if not allowzero:
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)
)", {}}},
      {"onnx_squeeze", {R"(def _onnx_squeeze(x, axes):
    for axis in sorted((a % x.dim() for a in axes), reverse=True):
        x = x.squeeze(axis)
    return x
)", {}}},
      {"onnx_unsqueeze", {R"(def _onnx_unsqueeze(x, axes):
    rank = x.dim() + len(axes)
    for axis in sorted(a % rank for a in axes):
        x = x.unsqueeze(axis)
    return x
)", {}}},
      {"onnx_slice", {R"(def _onnx_slice(x, starts, ends, axes=None, steps=None):
    """ONNX Slice: negative steps walk the flipped axis."""
    starts, ends = [int(v) for v in starts], [int(v) for v in ends]
    axes = range(len(starts)) if axes is None else [int(a) % x.dim() for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    index = [slice(None)] * x.dim()
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step > 0:
            index[axis] = slice(start, end, step)  # Python clamps as ONNX does
            continue
        dim = x.shape[axis]
        start = min(max(start + dim if start < 0 else start, 0), dim - 1)
        end = min(max(end + dim if end < 0 else end, -1), dim - 1)
        x = x.flip(axis)
        index[axis] = slice(dim - 1 - start, max(dim - 1 - end, dim - 1 - start), -step)
    return x[tuple(index)]
)", {}}},
      {"onnx_gather", {R"(def _onnx_gather(x, indices, axis):
    return x[(slice(None),) * (axis % x.dim()) + (indices.long(),)]
)", {}}},
      {"onnx_gather_nd", {R"(def _onnx_gather_nd(x, indices, batch_dims):
    indices = indices.long()
    k = indices.shape[-1]
    batch = math.prod(x.shape[:batch_dims])
    data = x.reshape(batch, *x.shape[batch_dims:])
    ids = indices.reshape(batch, -1, k)
    sizes = torch.tensor(data.shape[1:1 + k], device=ids.device)
    ids = torch.where(ids < 0, ids + sizes, ids)
    out = torch.stack([data[b][tuple(ids[b].t())] for b in range(batch)])
    return out.reshape(*indices.shape[:-1], *x.shape[batch_dims + k:])
)", {}}},
      {"onnx_scatter_nd", {R"(def _onnx_scatter_nd(x, indices, updates, reduction):
    out = x.clone()
    k = indices.shape[-1]
    ids = tuple(indices.long().reshape(-1, k).t())
    updates = updates.reshape(-1, *x.shape[k:])
    if reduction == "none":
        out[ids] = updates
    elif reduction == "add":
        out.index_put_(ids, updates, accumulate=True)
    else:
        combine = {"mul": torch.mul, "max": torch.maximum, "min": torch.minimum}[reduction]
        for j in range(updates.shape[0]):
            key = tuple(i[j] for i in ids)
            out[key] = combine(out[key], updates[j])
    return out
)", {}}},
      {"onnx_pad", {R"(def _onnx_pad(x, pads, mode, value, axes=None):
    """ONNX Pad with pads [begin per axis..., end per axis...] known only at run time."""
    pads = [int(p) for p in pads]
    n = len(pads) // 2
    axes = range(n) if axes is None else [a % x.dim() for a in axes]
    begins, ends = [0] * x.dim(), [0] * x.dim()
    for k, axis in enumerate(axes):
        begins[axis], ends[axis] = pads[k], pads[k + n]
    order = []
    for d in reversed(range(x.dim())):
        order += [begins[d], ends[d]]
    while len(order) > 2 and order[-1] == 0 and order[-2] == 0:
        order = order[:-2]
    if mode == "constant":
        return F.pad(x, order, value=value)
    return F.pad(x, order, mode=mode)
)", {}}},
      {"onnx_one_hot", {R"(def _onnx_one_hot(indices, depth, values, axis):
    """ONNX OneHot: negative indices count from depth; out-of-range ones are all off."""
    indices = indices.long()
    indices = torch.where(indices < 0, indices + depth, indices)
    valid = (indices >= 0) & (indices < depth)
    hot = F.one_hot(torch.where(valid, indices, 0), depth).bool() & valid.unsqueeze(-1)
    out = torch.where(hot, values[1], values[0])
    return out.movedim(-1, axis % out.dim())
)", {}}},
      {"onnx_depth_to_space", {R"(def _onnx_depth_to_space(x, b):
    """DepthToSpace in DCR order (F.pixel_shuffle is CRD)."""
    n, c, h, w = x.shape
    return x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2).reshape(n, c // (b * b), h * b, w * b)
)", {}}},
      {"onnx_space_to_depth", {R"(def _onnx_space_to_depth(x, b):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)
)", {}}},
      {"onnx_compress", {R"(def _onnx_compress(x, condition, axis):
    if axis is None:
        x, axis = x.flatten(), 0
    keep = torch.nonzero(condition.bool()[: x.shape[axis]]).flatten()
    return x.index_select(axis, keep)
)", {}}},
      {"onnx_reverse_sequence", {R"(def _onnx_reverse_sequence(x, lengths, batch_axis, time_axis):
    out = x.clone()
    t = time_axis - (1 if time_axis > batch_axis else 0)
    for b in range(x.shape[batch_axis]):
        n = int(lengths[b])
        out.select(batch_axis, b).narrow(t, 0, n).copy_(x.select(batch_axis, b).narrow(t, 0, n).flip(t))
    return out
)", {}}},
      {"onnx_unique", {R"(def _onnx_unique(x, sorted_, axis):
    """ONNX Unique: values, first occurrences, inverse indices, counts; unsorted keeps first-seen order."""
    flat, dim = (x.flatten(), 0) if axis is None else (x, axis % x.dim())
    values, inverse, counts = torch.unique(flat, sorted=True, return_inverse=True, return_counts=True, dim=dim)
    n = flat.shape[dim]
    positions = torch.arange(n, device=x.device)
    first = torch.full((values.shape[dim],), n, dtype=torch.long, device=x.device).scatter_reduce(0, inverse, positions, "amin")
    if not sorted_:
        order = torch.argsort(first)
        values, counts, first = values.index_select(dim, order), counts[order], first[order]
        remap = torch.empty_like(order)
        remap[order] = torch.arange(len(order), device=x.device)
        inverse = remap[inverse]
    return values, first, inverse, counts
)", {}}},
      {"onnx_resize", {R"(def _onnx_resize(x, sizes, scales, roi, mode, coordinate_mode, nearest_mode, cubic_a, exclude_outside,
                 extrapolation_value, antialias, aspect_policy, axes):
    """ONNX Resize as ONNX defines it, axis by axis (its interpolations are separable):
    each output position maps to an input coordinate, read by nearest, linear or cubic taps."""
    rank = x.dim()
    axes = list(range(rank)) if axes is None else [a % rank for a in axes]
    n = len(axes)
    ins = [x.shape[d] for d in axes]
    crop = coordinate_mode == "tf_crop_and_resize"
    roi = [0.0] * n + [1.0] * n if roi is None else [float(r) for r in roi]
    if sizes is not None:
        outs = [int(s) for s in sizes]
        if aspect_policy == "stretch":
            scales = [o / i if i else 1.0 for o, i in zip(outs, ins)]
            widths = [float(o) for o in outs]
        else:
            pick = min if aspect_policy == "not_larger" else max
            s = pick(o / i for o, i in zip(outs, ins) if i)
            scales, widths = [s] * n, [s * i for i in ins]
            outs = [int(math.floor(w + 0.5)) for w in widths]
    else:
        scales = [float(s) for s in scales]
        spans = [roi[k + n] - roi[k] if crop else 1.0 for k in range(n)]
        outs = [int(math.floor(i * sp * s)) for i, sp, s in zip(ins, spans, scales)]
        widths = [s * i for s, i in zip(scales, ins)]
    for k, d in enumerate(axes):
        size_in, out, scale = ins[k], outs[k], scales[k]
        if out == size_in and scale == 1 and not crop:
            continue
        i = torch.arange(out, dtype=torch.float64, device=x.device)
        if coordinate_mode == "half_pixel":
            src = (i + 0.5) / scale - 0.5
        elif coordinate_mode == "half_pixel_symmetric":
            src = size_in / 2 * (1 - out / widths[k]) + (i + 0.5) / scale - 0.5
        elif coordinate_mode == "pytorch_half_pixel":
            src = (i + 0.5) / scale - 0.5 if out > 1 else torch.zeros_like(i)
        elif coordinate_mode == "align_corners":
            src = torch.zeros_like(i) if widths[k] == 1 else i * (size_in - 1) / (widths[k] - 1)
        elif coordinate_mode == "asymmetric":
            src = i / scale
        elif coordinate_mode == "tf_half_pixel_for_nn":
            src = (i + 0.5) / scale
        else:  # tf_crop_and_resize
            start, end = roi[k], roi[k + n]
            if out > 1:
                src = start * (size_in - 1) + i * (end - start) * (size_in - 1) / (out - 1)
            else:
                src = torch.full_like(i, 0.5 * (start + end) * (size_in - 1))
        outside = (src < 0) | (src > size_in - 1) if crop else None
        last = max(size_in - 1, 0)
        if mode == "nearest":
            down = torch.floor(src)
            tie = src - down == 0.5
            if nearest_mode == "round_prefer_floor":
                pos = torch.where(tie, down, torch.round(src))
            elif nearest_mode == "round_prefer_ceil":
                pos = torch.where(tie, down + 1, torch.round(src))
            elif nearest_mode == "floor":
                pos = down
            elif nearest_mode == "ceil":
                pos = torch.ceil(src)
            else:  # Upsample and Resize-10: down when upsampling, up when downsampling
                pos = torch.ceil(src) if scale < 1 else down
            y = x.index_select(d, pos.clamp(0, last).long())
        else:
            support = 1.0 if mode == "linear" else 2.0
            stretch = scale if antialias and scale < 1 else 1.0
            reach = int(math.ceil(support / stretch))
            taps = torch.floor(src).unsqueeze(1) - reach + 1 + torch.arange(2 * reach, dtype=torch.float64, device=x.device)
            distance = ((taps - src.unsqueeze(1)) * stretch).abs()
            if mode == "linear":
                weight = (1 - distance).clamp(min=0)
            else:
                a = cubic_a
                near = ((a + 2) * distance - (a + 3)) * distance * distance + 1
                far = ((a * distance - 5 * a) * distance + 8 * a) * distance - 4 * a
                weight = torch.where(distance <= 1, near, torch.where(distance < 2, far, torch.zeros_like(distance)))
            if exclude_outside:
                weight = torch.where((taps < 0) | (taps > size_in - 1), torch.zeros_like(weight), weight)
            if antialias or exclude_outside:
                total = weight.sum(1, keepdim=True)
                weight = torch.where(total != 0, weight / total, weight)
            index = taps.clamp(0, last).long()
            gathered = x.index_select(d, index.flatten()).movedim(d, -1)
            gathered = gathered.reshape(*gathered.shape[:-1], out, index.shape[1]).double()
            y = (gathered * weight).sum(-1).movedim(-1, d)
            y = y if x.is_floating_point() else y.round()
            y = y.to(x.dtype)
        if outside is not None:
            mask = outside.reshape([-1 if j == d else 1 for j in range(rank)])
            y = y.masked_fill(mask, extrapolation_value)
        x = y
    return x
)", {}}},
      {"onnx_prod", {R"(def _onnx_prod(x, dims, keepdim):
    for d in sorted((d % x.dim() for d in dims), reverse=True):
        x = x.prod(dim=d, keepdim=keepdim)
    return x
)", {}}},
      {"onnx_reduce", {R"(def _onnx_reduce(x, op, axes, keepdim, noop_with_empty_axes):
    """An ONNX reduction whose axes are known only at run time."""
    axes = [int(a) for a in axes]
    if not axes:
        if noop_with_empty_axes:
            return x
        axes = list(range(x.dim()))
    dims = tuple(a % x.dim() for a in axes) if x.dim() else ()
    if op == "prod":
        return _onnx_prod(x, dims, keepdim)
    if op == "max":
        return x.amax(dim=dims, keepdim=keepdim)
    if op == "min":
        return x.amin(dim=dims, keepdim=keepdim)
    if op == "mean":
        return x.mean(dim=dims, keepdim=keepdim)
    if op == "log_sum_exp":
        return torch.logsumexp(x, dim=dims, keepdim=keepdim)
    source = {"l1": x.abs(), "l2": x.square(), "sum_square": x.square()}.get(op, x)
    y = source.sum(dim=dims, keepdim=keepdim)
    return y.sqrt() if op == "l2" else y.log() if op == "log_sum" else y
)", {"onnx_prod"}}},
  };
  return helpers;
}

}  // namespace onnxkit::tools::pytorch

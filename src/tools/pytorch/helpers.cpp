// The Python helper functions a generated file may need: ONNX semantics that
// take more than one readable expression. Only those a model uses are
// written, after its class. Each is plain torch.

#include "tools/pytorch/writer.h"

namespace onnxkit::tools::pytorch {

const std::map<std::string, Helper, std::less<>>& python_helpers() {
  static const std::map<std::string, Helper, std::less<>> helpers = {
      {"onnx_div",
       {R"(def _onnx_div(a, b):
    """ONNX Div: true division for floats, C's truncating division for integers."""
    t = a if torch.is_tensor(a) else b
    return a / b if t.is_floating_point() else torch.div(a, b, rounding_mode="trunc")
)",
        {}}},
      {"onnx_same_pads",
       {R"(def _onnx_same_pads(x, kernel, strides, dilations, upper):
    """F.pad's list for auto_pad SAME_UPPER (upper) or SAME_LOWER over x's spatial dims."""
    pads = []
    for i in reversed(range(len(kernel))):
        size = x.shape[2 + i]
        out = -(-size // strides[i])
        total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - size, 0)
        small = total // 2
        pads += [small, total - small] if upper else [total - small, small]
    return pads
)",
        {}}},
      {"onnx_pool_indices",
       {R"(def _onnx_pool_indices(indices, x, storage_order):
    """torch's max-pool indices count within each (n, c) plane, ONNX's over the whole tensor."""
    plane = math.prod(x.shape[2:])
    if storage_order:  # column-major within the plane
        h, w = x.shape[2], x.shape[3]
        indices = (indices % w) * h + indices // w
    first = torch.arange(x.shape[0] * x.shape[1], device=indices.device) * plane
    return indices + first.reshape(x.shape[0], x.shape[1], *([1] * (indices.dim() - 2)))
)",
        {}}},
      {"onnx_lrn",
       {R"(def _onnx_lrn(x, size, alpha, beta, bias):
    """LRN over channels [c - (size - 1) // 2, c + size // 2], as ONNX centres an even window."""
    front = (size - 1) // 2
    squares = F.pad(x.square().movedim(1, -1), (front, size - 1 - front)).movedim(-1, 1)
    return x / (bias + alpha / size * squares.unfold(1, size, 1).sum(-1)) ** beta
)",
        {}}},
      {"onnx_reshape",
       {R"(def _onnx_reshape(x, shape, allowzero):
    """ONNX Reshape: unless allowzero, a 0 keeps the input's dim."""
    shape = [int(d) for d in shape]
    if not allowzero:
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return x.reshape(shape)
)",
        {}}},
      {"onnx_squeeze",
       {R"(def _onnx_squeeze(x, axes):
    for axis in sorted((a % x.dim() for a in axes), reverse=True):
        x = x.squeeze(axis)
    return x
)",
        {}}},
      {"onnx_unsqueeze",
       {R"(def _onnx_unsqueeze(x, axes):
    rank = x.dim() + len(axes)
    for axis in sorted(a % rank for a in axes):
        x = x.unsqueeze(axis)
    return x
)",
        {}}},
      {"onnx_slice",
       {R"(def _onnx_slice(x, starts, ends, axes=None, steps=None):
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
)",
        {}}},
      {"onnx_gather",
       {R"(def _onnx_gather(x, indices, axis):
    return x[(slice(None),) * (axis % x.dim()) + (indices.long(),)]
)",
        {}}},
      {"onnx_gather_nd",
       {R"(def _onnx_gather_nd(x, indices, batch_dims):
    indices = indices.long()
    k = indices.shape[-1]
    batch = math.prod(x.shape[:batch_dims])
    data = x.reshape(batch, *x.shape[batch_dims:])
    ids = indices.reshape(batch, -1, k)
    sizes = torch.tensor(data.shape[1:1 + k], device=ids.device)
    ids = torch.where(ids < 0, ids + sizes, ids)
    out = torch.stack([data[b][tuple(ids[b].t())] for b in range(batch)])
    return out.reshape(*indices.shape[:-1], *x.shape[batch_dims + k:])
)",
        {}}},
      {"onnx_scatter_nd",
       {R"(def _onnx_scatter_nd(x, indices, updates, reduction):
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
)",
        {}}},
      {"onnx_pad",
       {R"(def _onnx_pad(x, pads, mode, value, axes=None):
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
    if not x.is_floating_point():  # torch reflects and replicates floats only
        return F.pad(x.double(), order, mode=mode).to(x.dtype)
    return F.pad(x, order, mode=mode)
)",
        {}}},
      {"onnx_one_hot",
       {R"(def _onnx_one_hot(indices, depth, values, axis):
    """ONNX OneHot: negative indices count from depth; out-of-range ones are all off."""
    indices = indices.long()
    indices = torch.where(indices < 0, indices + depth, indices)
    valid = (indices >= 0) & (indices < depth)
    hot = F.one_hot(torch.where(valid, indices, 0), depth).bool() & valid.unsqueeze(-1)
    out = torch.where(hot, values[1], values[0])
    return out.movedim(-1, axis % out.dim())
)",
        {}}},
      {"onnx_depth_to_space",
       {R"(def _onnx_depth_to_space(x, b):
    """DepthToSpace in DCR order (F.pixel_shuffle is CRD)."""
    n, c, h, w = x.shape
    return x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2).reshape(n, c // (b * b), h * b, w * b)
)",
        {}}},
      {"onnx_space_to_depth",
       {R"(def _onnx_space_to_depth(x, b):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)
)",
        {}}},
      {"onnx_compress",
       {R"(def _onnx_compress(x, condition, axis):
    if axis is None:
        x, axis = x.flatten(), 0
    keep = torch.nonzero(condition.bool()[: x.shape[axis]]).flatten()
    return x.index_select(axis, keep)
)",
        {}}},
      {"onnx_reverse_sequence",
       {R"(def _onnx_reverse_sequence(x, lengths, batch_axis, time_axis):
    out = x.clone()
    t = time_axis - (1 if time_axis > batch_axis else 0)
    for b in range(x.shape[batch_axis]):
        n = int(lengths[b])
        out.select(batch_axis, b).narrow(t, 0, n).copy_(x.select(batch_axis, b).narrow(t, 0, n).flip(t))
    return out
)",
        {}}},
      {"onnx_unique",
       {R"(def _onnx_unique(x, sorted_, axis):
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
)",
        {}}},
      {"onnx_resize",
       {R"(def _onnx_resize(x, sizes, scales, roi, mode, coordinate_mode, nearest_mode, cubic_a, exclude_outside,
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
)",
        {}}},
      {"onnx_dft",
       {R"(def _onnx_dft(x, length, axis, inverse, onesided):
    """ONNX DFT: the last dim holds (real) or (real, imaginary)."""
    signal = torch.view_as_complex(x.contiguous()) if x.shape[-1] == 2 else x[..., 0].to(torch.complex64 if x.dtype != torch.float64 else torch.complex128)
    axis = axis % (x.dim() - 1) if axis < 0 else axis
    n = signal.shape[axis] if length is None else int(length)
    y = torch.fft.ifft(signal, n=n, dim=axis) if inverse else torch.fft.fft(signal, n=n, dim=axis)
    if onesided:
        y = y.narrow(axis, 0, n // 2 + 1)
    return torch.view_as_real(y).to(x.dtype)
)",
        {}}},
      {"onnx_broadcast_on_axis",
       {R"(def _onnx_broadcast_on_axis(t, x, axis):
    """A per-axis scale or zero point ([C]) shaped to broadcast over x at axis."""
    if t is None or t.dim() == 0 or t.numel() == 1 and x.dim() == 0:
        return t
    shape = [1] * x.dim()
    shape[axis % x.dim()] = -1
    return t.reshape(shape)
)",
        {}}},
      {"onnx_quantize",
       {R"(def _onnx_quantize(x, scale, zero_point, axis, dtype):
    scale = _onnx_broadcast_on_axis(scale, x, axis)
    zero = 0 if zero_point is None else _onnx_broadcast_on_axis(zero_point, x, axis).to(torch.float32)
    info = torch.iinfo(dtype)
    return torch.clamp(torch.round(x.to(torch.float32) / scale) + zero, info.min, info.max).to(dtype)
)",
        {"onnx_broadcast_on_axis"}}},
      {"onnx_dequantize",
       {R"(def _onnx_dequantize(x, scale, zero_point, axis):
    scale = _onnx_broadcast_on_axis(scale, x, axis)
    zero = 0 if zero_point is None else _onnx_broadcast_on_axis(zero_point, x, axis).to(torch.float32)
    return ((x.to(torch.float32) - zero) * scale).to(scale.dtype)
)",
        {"onnx_broadcast_on_axis"}}},
      {"onnx_dynamic_quantize",
       {R"(def _onnx_dynamic_quantize(x):
    """DynamicQuantizeLinear: uint8 over [min(0, x), max(0, x)]."""
    low, high = torch.clamp(x.min(), max=0), torch.clamp(x.max(), min=0)
    scale = (high - low) / 255
    zero = torch.clamp(torch.round(-low / scale), 0, 255)
    y = torch.clamp(torch.round(x / scale) + zero, 0, 255).to(torch.uint8)
    return y, scale.to(torch.float32), zero.to(torch.uint8)
)",
        {}}},
      {"onnx_conv_padding",
       {R"(def _onnx_conv_padding(x, kernel, strides, pads, dilations, auto_pad):
    """x padded as a Conv's pads or auto_pad say (for convolutions torch cannot pad itself)."""
    n = len(kernel)
    strides = strides or [1] * n
    dilations = dilations or [1] * n
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return F.pad(x, _onnx_same_pads(x, kernel, strides, dilations, auto_pad == "SAME_UPPER"))
    pads = pads or [0] * (2 * n)
    order = []
    for i in reversed(range(n)):
        order += [pads[i], pads[i + n]]
    return F.pad(x, order)
)",
        {"onnx_same_pads"}}},
      {"onnx_conv_integer",
       {R"(def _onnx_conv_integer(x, w, x_zero, w_zero, strides, pads, dilations, group, auto_pad):
    """ConvInteger in float64, which holds the int32 sums exactly."""
    x = x.double() - (x_zero.double() if torch.is_tensor(x_zero) else x_zero)
    if torch.is_tensor(w_zero) and w_zero.numel() > 1:
        w_zero = w_zero.reshape(-1, *([1] * (w.dim() - 1)))
    w = w.double() - (w_zero.double() if torch.is_tensor(w_zero) else w_zero)
    x = _onnx_conv_padding(x, w.shape[2:], strides, pads, dilations, auto_pad)
    conv = (F.conv1d, F.conv2d, F.conv3d)[w.dim() - 3]
    return conv(x, w, None, strides or 1, 0, dilations or 1, group).round().to(torch.int32)
)",
        {"onnx_conv_padding"}}},
      {"onnx_requantize",
       {R"(def _onnx_requantize(acc, scale, y_zero):
    """An exact integer accumulation, scaled and rounded into y_zero's type."""
    info = torch.iinfo(y_zero.dtype)
    return torch.clamp(torch.round(acc.double() * scale) + y_zero.double(), info.min, info.max).to(y_zero.dtype)
)",
        {}}},
      {"onnx_qlinear_matmul",
       {R"(def _onnx_qlinear_matmul(a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero):
    if a_zero.numel() > 1:
        a_zero = a_zero.reshape(-1, 1)
    acc = (a.long() - a_zero.long()) @ (b.long() - b_zero.long())
    scale = (a_scale.double() * (b_scale.double() / y_scale.double())).to(torch.float32).double()
    return _onnx_requantize(acc, scale, y_zero)
)",
        {"onnx_requantize"}}},
      {"onnx_qlinear_conv",
       {R"(def _onnx_qlinear_conv(x, x_scale, x_zero, w, w_scale, w_zero, y_scale, y_zero, bias, strides, pads, dilations, group, auto_pad):
    acc = _onnx_conv_integer(x, w, x_zero, w_zero, strides, pads, dilations, group, auto_pad).double()
    if bias is not None:
        acc = acc + bias.double().reshape(1, -1, *([1] * (acc.dim() - 2)))
    scale = x_scale.double() * w_scale.double() / y_scale.double()
    if scale.numel() > 1:
        scale = scale.reshape(1, -1, *([1] * (acc.dim() - 2)))
    return _onnx_requantize(acc, scale.to(torch.float32).double(), y_zero)
)",
        {"onnx_conv_integer", "onnx_requantize"}}},
      {"onnx_nms",
       {R"(def _onnx_nms(boxes, scores, max_per_class, iou_threshold, score_threshold, center_point_box):
    """NonMaxSuppression: greedy, per batch and class; [selected, 3] of (batch, class, box).
    torchvision's nms when importable (the same rule: an IoU above the threshold
    suppresses; fast on the thousands of boxes of a detector), else a loop."""
    try:
        from torchvision.ops import nms
    except ImportError:
        nms = None
    selected = []
    if center_point_box:
        c, half = boxes[..., :2], boxes[..., 2:] / 2
        corners = torch.cat([c - half, c + half], dim=-1)
    else:  # [y1, x1, y2, x2], either corner first
        corners = torch.cat([torch.minimum(boxes[..., :2], boxes[..., 2:]), torch.maximum(boxes[..., :2], boxes[..., 2:])], dim=-1)
    area = (corners[..., 2] - corners[..., 0]) * (corners[..., 3] - corners[..., 1])
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c]
            if nms is not None:
                candidates = torch.arange(s.shape[0]) if score_threshold is None else torch.nonzero(s > score_threshold).flatten()
                kept = candidates[nms(corners[b, candidates].float(), s[candidates].float(), float(iou_threshold))]
                selected += [[b, c, i] for i in kept[:max(int(max_per_class), 0)].tolist()]
                continue
            order = torch.argsort(s, descending=True, stable=True)
            kept = []
            for i in order.tolist():
                if len(kept) >= max_per_class:
                    break
                if score_threshold is not None and s[i] <= score_threshold:
                    break
                box = corners[b, i]
                suppressed = False
                for j in kept:
                    other = corners[b, j]
                    h = torch.clamp(torch.minimum(box[2], other[2]) - torch.maximum(box[0], other[0]), min=0)
                    w = torch.clamp(torch.minimum(box[3], other[3]) - torch.maximum(box[1], other[1]), min=0)
                    inter = h * w
                    union = area[b, i] + area[b, j] - inter
                    if union > 0 and inter / union > iou_threshold:
                        suppressed = True
                        break
                if not suppressed:
                    kept.append(i)
            selected += [[b, c, i] for i in kept]
    return torch.tensor(selected, dtype=torch.int64).reshape(-1, 3)
)",
        {}}},
      {"onnx_roi_align",
       {R"(def _onnx_roi_align(x, rois, batch_indices, size, spatial_scale, sampling_ratio, aligned):
    """RoiAlign (average) through torchvision, which must be installed for this model."""
    from torchvision.ops import roi_align
    boxes = torch.cat([batch_indices.to(rois.dtype).reshape(-1, 1), rois], dim=1)
    return roi_align(x, boxes, size, spatial_scale, sampling_ratio, aligned)
)",
        {}}},
      {"onnx_max_unpool",
       {R"(def _onnx_max_unpool(x, indices, kernel, strides, pads, output_shape):
    """MaxUnpool: ONNX's indices count over the whole tensor of the default
    output shape (torch's within each (n, c) plane); a larger output_shape
    pads that result at the end."""
    n = len(kernel)
    spatial = [(x.shape[2 + i] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + n] for i in range(n)]
    plane = math.prod(spatial)
    first = torch.arange(x.shape[0] * x.shape[1], device=x.device).reshape(x.shape[0], x.shape[1], *([1] * n)) * plane
    out = torch.zeros(x.shape[0] * x.shape[1], plane, dtype=x.dtype, device=x.device)
    out.scatter_(1, (indices - first).reshape(x.shape[0] * x.shape[1], -1), x.reshape(x.shape[0] * x.shape[1], -1))
    out = out.reshape(x.shape[0], x.shape[1], *spatial)
    if output_shape is not None:
        grow = []
        for i in reversed(range(n)):
            grow += [0, int(output_shape[2 + i]) - spatial[i]]
        out = F.pad(out, grow)
    return out
)",
        {}}},
      {"onnx_layer_norm",
       {R"(def _onnx_layer_norm(x, scale, bias, axis, epsilon):
    """LayerNormalization with its Mean and InvStdDev outputs."""
    dims = tuple(range(axis % x.dim(), x.dim()))
    mean = x.mean(dim=dims, keepdim=True)
    inv_std = torch.rsqrt((x - mean).square().mean(dim=dims, keepdim=True) + epsilon)
    y = (x - mean) * inv_std * scale
    return (y if bias is None else y + bias), mean, inv_std
)",
        {}}},
      {"onnx_rnn",
       {R"(def _onnx_rnn(kind, x, w, r, b, lengths, h0, c0, p, hidden, direction, layout, activations, alphas, betas, clip,
              input_forget, linear_before_reset):
    """ONNX's RNN, GRU and LSTM as the spec writes them, step by step: what
    torch's layers cannot express (clip, peepholes, other activations,
    sequence lengths, linear_before_reset=0, weights computed in the graph)."""
    functions = {
        "Relu": lambda v, a, b: torch.relu(v), "Tanh": lambda v, a, b: torch.tanh(v),
        "Sigmoid": lambda v, a, b: torch.sigmoid(v), "Affine": lambda v, a, b: a * v + b,
        "LeakyRelu": lambda v, a, b: F.leaky_relu(v, a), "ThresholdedRelu": lambda v, a, b: torch.where(v > a, v, 0 * v),
        "ScaledTanh": lambda v, a, b: a * torch.tanh(b * v), "HardSigmoid": lambda v, a, b: torch.clamp(a * v + b, 0, 1),
        "Elu": lambda v, a, b: F.elu(v, a), "Softsign": lambda v, a, b: F.softsign(v), "Softplus": lambda v, a, b: F.softplus(v),
    }
    defaults = {"LeakyRelu": (0.01, 0.0), "ThresholdedRelu": (1.0, 0.0), "ScaledTanh": (1.0, 1.0), "HardSigmoid": (0.2, 0.5),
                "Elu": (1.0, 0.0), "Affine": (1.0, 0.0)}
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    per_direction = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}[kind]
    directions = 2 if direction == "bidirectional" else 1
    names = activations or per_direction * directions
    alphas, betas = list(alphas or []), list(betas or [])
    acts = []
    for name in names:  # alphas and betas go, in order, to the functions that take them
        a, b_ = defaults.get(name, (0.0, 0.0))
        if name in defaults:
            a = alphas.pop(0) if alphas else a
            b_ = betas.pop(0) if betas and name in ("ScaledTanh", "HardSigmoid", "Affine") else b_
        acts.append(lambda v, f=functions[name], a=a, b_=b_: f(v, a, b_))
    if layout:
        x = x.transpose(0, 1)
    steps, batch = x.shape[0], x.shape[1]
    if b is None:
        b = torch.zeros(directions, 2 * gates * hidden, dtype=x.dtype)
    if h0 is None:
        h0 = torch.zeros(directions, batch, hidden, dtype=x.dtype)
    elif layout:
        h0 = h0.transpose(0, 1)
    if c0 is None:
        c0 = torch.zeros(directions, batch, hidden, dtype=x.dtype)
    elif layout:
        c0 = c0.transpose(0, 1)
    lengths = [steps] * batch if lengths is None else [int(n) for n in lengths]
    clip_ = (lambda v: v) if clip is None else (lambda v: torch.clamp(v, -clip, clip))
    ys, hs, cs = [], [], []
    for d in range(directions):
        f = acts[d * len(per_direction):(d + 1) * len(per_direction)]
        wb, rb = b[d, :gates * hidden], b[d, gates * hidden:]
        h, c = h0[d], c0[d]
        y = torch.zeros(steps, batch, hidden, dtype=x.dtype)
        backwards = direction == "reverse" or d == 1
        for t in range(steps):
            active = torch.tensor([t < n for n in lengths]).unsqueeze(1)
            at = torch.tensor([(n - 1 - t) if backwards else t for n in lengths]).clamp(min=0)
            xt = x[at, torch.arange(batch)]
            gx = xt @ w[d].t() + wb
            gh = h @ r[d].t() + rb
            if kind == "RNN":
                h_new = f[0](clip_(gx + gh))
                c_new = c
            elif kind == "GRU":
                xz, xr, xh = gx.chunk(3, dim=1)
                hz, hr, hh = gh.chunk(3, dim=1)
                z = f[0](clip_(xz + hz))
                rt = f[0](clip_(xr + hr))
                if linear_before_reset:
                    candidate = f[1](clip_(xh + rt * hh))
                else:
                    candidate = f[1](clip_(xh + (rt * h) @ r[d][2 * hidden:].t() + rb[2 * hidden:]))
                h_new = (1 - z) * candidate + z * h
                c_new = c
            else:
                xi, xo, xf, xc = gx.chunk(4, dim=1)
                hi, ho, hf, hc = gh.chunk(4, dim=1)
                pi, po, pf = (torch.zeros(3, hidden, dtype=x.dtype) if p is None else p[d].reshape(3, hidden))
                i = f[0](clip_(xi + hi + pi * c))
                fg = 1 - i if input_forget else f[0](clip_(xf + hf + pf * c))
                c_new = fg * c + i * f[1](clip_(xc + hc))
                o = f[0](clip_(xo + ho + po * c_new))
                h_new = o * f[2](c_new)
            h = torch.where(active, h_new, h)
            c = torch.where(active, c_new, c)
            y[at, torch.arange(batch)] = torch.where(active, h_new, y[at, torch.arange(batch)])
        ys.append(y)
        hs.append(h)
        cs.append(c)
    y, h, c = torch.stack(ys, 1), torch.stack(hs), torch.stack(cs)
    if layout:
        return y.permute(2, 0, 1, 3), h.transpose(0, 1), c.transpose(0, 1)
    return y, h, c
)",
        {}}},
      {"onnx_deform_conv",
       {R"(def _onnx_deform_conv(x, weight, offset, bias, mask, stride, padding, dilation, _):
    """DeformConv through torchvision, which must be installed for this model."""
    from torchvision.ops import deform_conv2d
    return deform_conv2d(x, offset, weight, bias, stride, padding, dilation, mask)
)",
        {}}},
      {"onnx_center_crop_pad",
       {R"(def _onnx_center_crop_pad(x, shape, axes):
    """CenterCropPad: crop or zero-pad each axis to its size, about the centre."""
    axes = range(x.dim()) if axes is None else [a % x.dim() for a in axes]
    for axis, size in zip(axes, [int(s) for s in shape]):
        dim = x.shape[axis]
        if size < dim:
            x = x.narrow(axis, (dim - size) // 2, size)
        elif size > dim:
            before = (size - dim) // 2
            grow = [0, 0] * (x.dim() - 1 - axis) + [before, size - dim - before]
            x = F.pad(x, grow)
    return x
)",
        {}}},
      {"onnx_max_roi_pool",
       {R"(def _onnx_max_roi_pool(x, rois, size, spatial_scale):
    """MaxRoiPool through torchvision, which must be installed for this model."""
    from torchvision.ops import roi_pool
    return roi_pool(x, rois, size, spatial_scale)
)",
        {}}},
      {"onnx_stft",
       {R"(def _onnx_stft(signal, step, window, length, onesided):
    """STFT: frames of `length` every `step` samples, no centring: [batch, frames, bins, 2]."""
    length = window.shape[0] if length is None else int(length)
    s = torch.view_as_complex(signal.contiguous()) if signal.shape[-1] == 2 else signal[..., 0]
    frames = s.unfold(-1, length, int(step))
    if window is not None:
        frames = frames * window
    y = torch.fft.rfft(frames, dim=-1) if onesided and not s.is_complex() else torch.fft.fft(frames, dim=-1)
    return torch.view_as_real(y).to(signal.dtype)
)",
        {}}},
      {"onnx_mel_weight_matrix",
       {R"(def _onnx_mel_weight_matrix(bins, dft_length, sample_rate, low_hz, high_hz, dtype):
    """MelWeightMatrix as ONNX's definition computes it: triangles on the mel scale."""
    bins, dft_length, sample_rate = int(bins), int(dft_length), int(sample_rate)
    low_mel = 2595 * math.log10(1 + low_hz / 700)
    high_mel = 2595 * math.log10(1 + high_hz / 700)
    step = (high_mel - low_mel) / (bins + 2)  # ONNX divides by the edge count
    points = [int(((dft_length + 1) * (700 * (10 ** ((k * step + low_mel) / 2595) - 1))) // sample_rate) for k in range(bins + 2)]
    out = torch.zeros(dft_length // 2 + 1, bins, dtype=torch.float64)
    for i in range(bins):
        low, center, high = points[i], points[i + 1], points[i + 2]
        if center == low:
            out[center, i] = 1
        else:
            for j in range(low, center + 1):
                out[j, i] = (j - low) / (center - low)
        for j in range(center, high):
            out[j, i] = (high - j) / (high - center)
    return out.to(dtype)
)",
        {}}},
      {"onnx_prod",
       {R"(def _onnx_prod(x, dims, keepdim):
    for d in sorted((d % x.dim() for d in dims), reverse=True):
        x = x.prod(dim=d, keepdim=keepdim)
    return x
)",
        {}}},
      {"onnx_reduce",
       {R"(def _onnx_reduce(x, op, axes, keepdim, noop_with_empty_axes):
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
)",
        {"onnx_prod"}}},
  };
  return helpers;
}

}  // namespace onnxkit::tools::pytorch

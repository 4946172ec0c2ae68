"""How PyTorch layers become GEMMs: im2col, groups, batches, transposed convolutions and einsum.

Plain PyTorch, no model: every function takes tensors and returns tensors built with ordinary,
differentiable PyTorch operations (pad, unfold, permute, reshape, fold), so that autograd
differentiates the lowering itself (col2im is the gradient of im2col) and only the GEMMs need a
custom backward. The GEMM itself is passed in as ``gemm(a, b) -> c`` (a: M x K, b: K x P).

The rules are systolic-run's ([topology.cpp](../../tools/run/topology.cpp), docs/networks.md):

- convolution: M = images x output positions (a batch is more rows of one GEMM), K = channels per
  group x filter size, in (channel, filter position) order as ``weight.reshape(filters, -1)``,
  P = filters per group; one GEMM per group (a depthwise convolution: one per channel, K = the
  filter size, P = 1);
- transposed convolution: one GEMM per group of M = images x input positions, K = input channels
  per group, P = output channels per group x filter size, then col2im (``F.fold``);
- linear: M = the product of the input's leading dimensions, K = in_features, P = out_features;
- recurrent layers (RNN, LSTM, GRU and their cells): per layer and direction, one GEMM of the whole
  sequence's input by W_ih^T (M = steps x batch), then per step one GEMM of the state by W_hh^T
  (M = batch) and, for an LSTM with proj_size, one by W_hr^T; the gates in PyTorch.
"""


import torch
import torch.nn.functional as F


def ntuple(v, n):
    """v as a tuple of n ints (PyTorch accepts an int or a sequence for stride, padding, ...)."""
    if isinstance(v, (list, tuple)):
        if len(v) == 1 and n > 1:
            return tuple(int(v[0]) for _ in range(n))
        return tuple(int(x) for x in v)
    return (int(v),) * n


def conv_pads(padding, kernel, dilation):
    """(before, after) per spatial dimension. 'same' puts the odd pixel after (bottom, right), as
    PyTorch does; 'valid' is no padding."""
    nd = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nd
        if padding == "same":
            total = [d * (k - 1) for k, d in zip(kernel, dilation)]
            return [(t // 2, t - t // 2) for t in total]
        raise ValueError("padding must be 'same', 'valid' or ints, got %r" % padding)
    return [(p, p) for p in ntuple(padding, nd)]


def pad_zeros(x, pads):
    """x (N, C, *spatial) padded with zeros by pads [(before, after)] per spatial dimension."""
    if not any(b or a for b, a in pads):
        return x
    flat = []
    for b, a in reversed(pads):  # F.pad takes the last dimension first
        flat += [b, a]
    return F.pad(x, flat)


def im2col(x, kernel, stride, dilation):
    """x (N, C, *spatial), already padded: (N, *out, C, prod(kernel)) windows, the last two in
    (channel, filter position) order, so that a group's rows are a contiguous channel slice."""
    nd = len(kernel)
    cols = x
    for d in range(nd):  # each unfold appends a window dimension after the spatial ones
        span = dilation[d] * (kernel[d] - 1) + 1
        cols = cols.unfold(2 + d, span, stride[d])
    if any(dl > 1 for dl in dilation):
        index = (slice(None),) * (2 + nd) + tuple(slice(None, None, dl) for dl in dilation)
        cols = cols[index]
    # (N, C, *out, *kernel) -> (N, *out, C, *kernel)
    perm = [0] + list(range(2, 2 + nd)) + [1] + list(range(2 + nd, 2 + 2 * nd))
    out = cols.shape[2:2 + nd]
    return cols.permute(perm).reshape(x.shape[0], *out, x.shape[1], -1)


def conv(gemm, x, weight, bias, stride, padding, dilation, groups):
    """F.conv1d/2d/3d as one GEMM per group. x (N, C, *spatial) or unbatched (C, *spatial);
    weight (F, C / groups, *kernel). Returns (y, shapes): y as PyTorch's conv, shapes the
    [M, K, P] of each GEMM."""
    nd = weight.dim() - 2
    unbatched = x.dim() == nd + 1
    if unbatched:
        x = x.unsqueeze(0)
    kernel = tuple(weight.shape[2:])
    stride, dilation = ntuple(stride, nd), ntuple(dilation, nd)
    x = pad_zeros(x, conv_pads(padding, kernel, dilation))
    cols = im2col(x, kernel, stride, dilation)
    n, out = cols.shape[0], tuple(cols.shape[1:1 + nd])
    m = n * int(torch.tensor(out).prod()) if out else n
    cols = cols.reshape(m, x.shape[1], -1)
    cg, fg = x.shape[1] // groups, weight.shape[0] // groups
    w2 = weight.reshape(weight.shape[0], -1)
    outs, shapes = [], []
    for g in range(groups):
        a = cols[:, g * cg:(g + 1) * cg, :].reshape(m, -1)
        b = w2[g * fg:(g + 1) * fg].t()
        outs.append(gemm(a, b))
        shapes.append([m, a.shape[1], fg])
    y = (torch.cat(outs, dim=1) if groups > 1 else outs[0]).reshape(n, *out, -1)
    y = y.permute(0, nd + 1, *range(1, nd + 1))
    if bias is not None:
        y = y + bias.reshape(1, -1, *([1] * nd))
    return (y.squeeze(0) if unbatched else y), shapes


def conv_transpose(gemm, x, weight, bias, stride, padding, output_padding, groups, dilation):
    """F.conv_transpose1d/2d: per group, X (images x positions, C_in / groups) times W
    (C_in / groups, C_out / groups x filter), then col2im (F.fold) onto the output. weight
    (C_in, C_out / groups, *kernel). Returns (y, shapes)."""
    nd = weight.dim() - 2
    unbatched = x.dim() == nd + 1
    if unbatched:
        x = x.unsqueeze(0)
    stride, padding = ntuple(stride, nd), ntuple(padding, nd)
    output_padding, dilation = ntuple(output_padding, nd), ntuple(dilation, nd)
    if nd == 1:  # F.fold is 2-D: a 1-D transposed convolution is a 2-D one of height 1
        x, weight = x.unsqueeze(-1), weight.unsqueeze(-1)
        stride, padding = stride + (1,), padding + (0,)
        output_padding, dilation = output_padding + (0,), dilation + (1,)
    kernel = tuple(weight.shape[2:])
    n, cin, h, w = x.shape
    cig, cog = cin // groups, weight.shape[1]
    a_all = x.permute(0, 2, 3, 1).reshape(n * h * w, cin)
    outs, shapes = [], []
    for g in range(groups):
        a = a_all[:, g * cig:(g + 1) * cig]
        b = weight[g * cig:(g + 1) * cig].reshape(cig, -1)
        outs.append(gemm(a, b).reshape(n, h * w, cog, -1))
        shapes.append([n * h * w, cig, b.shape[1]])
    cols = torch.cat(outs, dim=2) if groups > 1 else outs[0]
    cols = cols.permute(0, 2, 3, 1).reshape(n, -1, h * w)
    # Fold onto the unpadded canvas of exactly h x w windows, then cut the padding and add the
    # output padding (zeros: no window reaches there), so every output_padding PyTorch accepts fits.
    canvas = [(i - 1) * s + d * (k - 1) + 1 for i, s, d, k in zip((h, w), stride, dilation, kernel)]
    y = F.fold(cols, canvas, kernel, dilation=dilation, stride=stride)
    size = [(i - 1) * s - 2 * p + d * (k - 1) + op + 1
            for i, s, p, d, k, op in zip((h, w), stride, padding, dilation, kernel, output_padding)]
    extra = [max(0, p + sz - c) for p, sz, c in zip(padding, size, canvas)]
    if any(extra):
        y = F.pad(y, [0, extra[1], 0, extra[0]])
    y = y[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]]
    if nd == 1:
        y = y.squeeze(-1)
    if bias is not None:
        y = y + bias.reshape(1, -1, *([1] * nd))
    return (y.squeeze(0) if unbatched else y), shapes


def linear(gemm, x, weight, bias):
    """F.linear as one GEMM: M = the product of x's leading dimensions."""
    a = x.reshape(-1, x.shape[-1])
    y = gemm(a, weight.t())
    if bias is not None:
        y = y + bias
    return y.reshape(*x.shape[:-1], weight.shape[0]), [[a.shape[0], a.shape[1], weight.shape[0]]]


def batched(gemm, a, b):
    """a (..., M, K) @ b (..., K, P) with equal batch dimensions: one GEMM per batch entry."""
    batch = a.shape[:-2]
    a3 = a.reshape(-1, a.shape[-2], a.shape[-1])
    b3 = b.reshape(-1, b.shape[-2], b.shape[-1])
    outs = [gemm(a3[i], b3[i]) for i in range(a3.shape[0])]
    y = torch.stack(outs).reshape(*batch, a.shape[-2], b.shape[-1])
    return y, [[a.shape[-2], a.shape[-1], b.shape[-1]]] * a3.shape[0]


def matmul(gemm, a, b):
    """torch.matmul's rules (1-D operands, broadcasting). A batch that only `a` has (b is a
    matrix, or broadcasts) is more rows of one GEMM, as PyTorch folds it; otherwise one GEMM per
    broadcast batch entry."""
    a2 = a.unsqueeze(0) if a.dim() == 1 else a
    b2 = b.unsqueeze(-1) if b.dim() == 1 else b
    batch = torch.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    if all(s == 1 for s in b2.shape[:-2]):
        m = a2.reshape(-1, a2.shape[-1])
        y = gemm(m, b2.reshape(b2.shape[-2], b2.shape[-1]))
        shapes = [[m.shape[0], m.shape[1], b2.shape[-1]]]
        y = y.reshape(*a2.shape[:-1], b2.shape[-1])
        y = y.expand(*batch, *y.shape[-2:]) if tuple(y.shape[:-2]) != tuple(batch) else y
    else:
        y, shapes = batched(gemm, a2.expand(*batch, *a2.shape[-2:]),
                            b2.expand(*batch, *b2.shape[-2:]))
    if a.dim() == 1:
        y = y.squeeze(-2)
    if b.dim() == 1:
        y = y.squeeze(-1)
    return y, shapes


def addbmm(gemm, a, b):
    """sum_i a[i] @ b[i] as one GEMM: the batch is more of K (M x (B*K) times (B*K) x P)."""
    m = a.permute(1, 0, 2).reshape(a.shape[1], -1)
    k = b.reshape(-1, b.shape[-1])
    return gemm(m, k), [[m.shape[0], m.shape[1], k.shape[1]]]


def bilinear(gemm, x1, x2, weight, bias):
    """F.bilinear: y[n, o] = x1[n] . W[o] . x2[n] + b[o], as T = x1 @ W (in1 x (out*in2)), one
    GEMM, then per sample T[n] (out x in2) @ x2[n] (in2 x 1)."""
    lead = x1.shape[:-1]
    a = x1.reshape(-1, x1.shape[-1])
    v = x2.reshape(-1, x2.shape[-1])
    out, in1, in2 = weight.shape
    t = gemm(a, weight.permute(1, 0, 2).reshape(in1, out * in2))
    shapes = [[a.shape[0], in1, out * in2]]
    t = t.reshape(-1, out, in2)
    y, more = batched(gemm, t, v.unsqueeze(-1))
    y = y.squeeze(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, out), shapes + more


class NotLowered(Exception):
    """An einsum this lowering does not take (the reason is the message)."""


def _einsum_terms(equation, shapes):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise NotLowered("%d subscripts for %d operands" % (len(terms), len(shapes)))
    used = set(c for c in eq if c.isalpha())
    pool = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    ell = max((len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell_letters = "".join(pool[:ell])
    out = []
    for t, s in zip(terms, shapes):
        if "..." in t:
            k = len(s) - (len(t) - 3)
            t = t.replace("...", ell_letters[ell - k:])
        if len(t) != len(s) or not all(c.isalpha() for c in t):
            raise NotLowered("subscripts %r do not fit a %d-D operand" % (t, len(s)))
        out.append(t)
    if arrow:
        rhs = rhs.replace("...", ell_letters)
    else:  # implicit output: the ellipsis, then the letters seen once, in alphabetical order
        counts = {}
        for t in out:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell_letters + "".join(sorted(c for c, n in counts.items()
                                           if n == 1 and c not in ell_letters))
    return out, rhs


def einsum_check(equation, shapes):
    """Raises NotLowered if einsum() does not take this equation on operands of these shapes."""
    terms, _ = _einsum_terms(equation, shapes)
    for t in terms:
        if len(set(t)) != len(t):
            raise NotLowered("a repeated index within an operand (%s) takes a diagonal" % t)
    if len(shapes) < 2:
        raise NotLowered("one operand: no product")


def einsum(gemm, equation, operands):
    """A contraction of operands, two at a time from the left, each pairwise step that contracts
    an index as one GEMM per batch entry (batch = indices in both operands that are kept,
    M = the first's own kept indices, K = the contracted ones, P = the second's own). A step
    that contracts nothing (an outer or elementwise product) is no GEMM and runs in PyTorch.
    Raises NotLowered for what it does not take (a repeated index within an operand)."""
    einsum_check(equation, [tuple(o.shape) for o in operands])
    terms, rhs = _einsum_terms(equation, [tuple(o.shape) for o in operands])
    shapes = []
    cur_t, cur = terms[0], operands[0]
    for i in range(1, len(operands)):
        nxt_t, nxt = terms[i], operands[i]
        needed = set(rhs).union(*[set(t) for t in terms[i + 1:]])
        # An index only in one operand and not needed later is summed before the product.
        for side in (0, 1):
            t, x = (cur_t, cur) if side == 0 else (nxt_t, nxt)
            other = nxt_t if side == 0 else cur_t
            drop = [j for j, c in enumerate(t) if c not in other and c not in needed]
            if drop:
                x = x.sum(dim=drop)
                t = "".join(c for c in t if c not in [t[j] for j in drop])
            if side == 0:
                cur_t, cur = t, x
            else:
                nxt_t, nxt = t, x
        batch = [c for c in cur_t if c in nxt_t and c in needed]
        contract = [c for c in cur_t if c in nxt_t and c not in needed]
        left = [c for c in cur_t if c not in nxt_t]
        right = [c for c in nxt_t if c not in cur_t]
        size = {}
        for t, x in ((cur_t, cur), (nxt_t, nxt)):
            for c, s in zip(t, x.shape):
                size[c] = max(size.get(c, 1), s)
        if not contract:
            res_t = "".join(batch + left + right)
            cur = torch.einsum("%s,%s->%s" % (cur_t, nxt_t, res_t), cur, nxt)
            cur_t = res_t
            continue

        def arrange(t, x, order):
            x = x.permute([t.index(c) for c in order])
            return x.expand(*[size[c] for c in order])

        bsz = [size[c] for c in batch]
        ms, ks, ps = [size[c] for c in left], [size[c] for c in contract], [size[c] for c in right]
        prod = lambda v: int(torch.tensor(v, dtype=torch.int64).prod()) if v else 1
        a = arrange(cur_t, cur, batch + left + contract).reshape(prod(bsz), prod(ms), prod(ks))
        b = arrange(nxt_t, nxt, batch + contract + right).reshape(prod(bsz), prod(ks), prod(ps))
        y, more = batched(gemm, a, b)
        shapes += more
        cur = y.reshape(tuple(bsz + ms + ps))
        cur_t = "".join(batch + left + right)
    extra = [j for j, c in enumerate(cur_t) if c not in rhs]
    if extra:
        cur = cur.sum(dim=extra)
        cur_t = "".join(c for c in cur_t if c in rhs)
    return cur.permute([cur_t.index(c) for c in rhs]), shapes


def _cell(gemm, mode, gi, h, c, w_hh, b_hh, w_hr):
    """One step of a recurrent cell, given the input's part of the gates (gi: batch x gates, its
    bias added): the state's GEMM on the model, the gates as PyTorch defines them. Returns
    (h, c) (c None but for an LSTM) and the step's GEMM shapes."""
    gh = gemm(h, w_hh.t())
    shapes = [[h.shape[0], h.shape[1], w_hh.shape[0]]]
    if b_hh is not None:
        gh = gh + b_hh
    if mode == "lstm":
        i, f, g, o = (gi + gh).chunk(4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        if w_hr is not None:
            shapes.append([h.shape[0], h.shape[1], w_hr.shape[0]])
            h = gemm(h, w_hr.t())
        return h, c, shapes
    if mode == "gru":
        ir, iz, i_n = gi.chunk(3, dim=1)
        hr, hz, h_n = gh.chunk(3, dim=1)
        r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * h, None, shapes
    act = torch.tanh if mode == "rnn_tanh" else torch.relu
    return act(gi + gh), None, shapes


def recurrent(gemm, mode, x, hx, params, has_biases, num_layers, bidirectional, batch_first):
    """torch.lstm, torch.gru, torch.rnn_tanh and torch.rnn_relu (what nn.LSTM, nn.GRU and nn.RNN
    call) on padded input x (steps, batch, features), or (batch, steps, features) with
    batch_first; hx the initial state, (h0, c0) for an LSTM; params the module's flat weights,
    per layer and direction w_ih, w_hh[, b_ih, b_hh][, w_hr]. Dropout between layers is the
    caller's to refuse. Returns ((output, h_n[, c_n]), shapes)."""
    if batch_first:
        x = x.transpose(0, 1)
    h0, c0 = hx if mode == "lstm" else (hx, None)
    dirs = 2 if bidirectional else 1
    per = len(params) // (num_layers * dirs)
    shapes, h_n, c_n = [], [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            ws = params[(layer * dirs + d) * per:(layer * dirs + d + 1) * per]
            w_ih, w_hh = ws[0], ws[1]
            b_ih, b_hh = (ws[2], ws[3]) if has_biases else (None, None)
            w_hr = ws[-1] if per == 2 + 2 * bool(has_biases) + 1 else None
            steps, batch = x.shape[0], x.shape[1]
            gi = gemm(x.reshape(steps * batch, -1), w_ih.t())
            shapes.append([steps * batch, x.shape[2], w_ih.shape[0]])
            if b_ih is not None:
                gi = gi + b_ih
            gi = gi.reshape(steps, batch, -1)
            k = layer * dirs + d
            h, c = h0[k], (c0[k] if c0 is not None else None)
            ys = [None] * steps
            for t in (range(steps - 1, -1, -1) if d else range(steps)):
                h, c, step = _cell(gemm, mode, gi[t], h, c, w_hh, b_hh, w_hr)
                shapes += step
                ys[t] = h
            outs.append(torch.stack(ys))
            h_n.append(h)
            c_n.append(c)
        x = torch.cat(outs, dim=2) if dirs > 1 else outs[0]
    y = x.transpose(0, 1) if batch_first else x
    out = (y, torch.stack(h_n)) + ((torch.stack(c_n),) if mode == "lstm" else ())
    return out, shapes


def cell(gemm, mode, x, hx, w_ih, w_hh, b_ih, b_hh):
    """torch.lstm_cell, gru_cell, rnn_tanh_cell and rnn_relu_cell (what the *Cell modules call):
    x (batch, features), hx the state ((h, c) for an LSTM). Returns (h or (h, c), shapes)."""
    h, c = hx if mode == "lstm" else (hx, None)
    gi = gemm(x, w_ih.t())
    shapes = [[x.shape[0], x.shape[1], w_ih.shape[0]]]
    if b_ih is not None:
        gi = gi + b_ih
    h, c, step = _cell(gemm, mode, gi, h, c, w_hh, b_hh, None)
    return ((h, c) if mode == "lstm" else h), shapes + step

"""The LSTM time loop on PyTorch: a Python loop of torch ops, with
autograd.

The same step as `tensorflow_recurrence.py`, in torch ops: `keras.ops`
costs a conversion and a dispatch per op, and a step is a dozen small
ops. Autograd records every step.
"""

from keras import ops

from keras_elmo.layers.backends.cell import forget_bias


def torch_recurrence(products, time_mask, c0, h0, cell):
    """The loop over input products `(T, B, 4H)` (bias included; the
    forget bias is added here), `time_mask` `(T, B, 1)`, `c0` float32
    `(B, H)`, `h0` `(B, P)` and the `Cell` (its recurrent kernel,
    projection and clips): `(outputs (T, B, P), c_final, h_final)`."""
    import torch

    recurrent_kernel, projection = cell.recurrent_kernel, cell.projection
    cell_clip, proj_clip = cell.clips
    units = c0.shape[1]
    products = products + forget_bias(units, products.dtype)
    c, h = c0, h0
    outputs = []
    for t in range(products.shape[0]):
        z = torch.addmm(products[t], h, recurrent_kernel).float()
        i = torch.sigmoid(z[:, :units])
        candidate = torch.tanh(z[:, units : 2 * units])
        f = torch.sigmoid(z[:, 2 * units : 3 * units])
        o = torch.sigmoid(z[:, 3 * units :])
        new_c = f * c + i * candidate
        if cell_clip is not None:
            new_c = new_c.clamp(-cell_clip, cell_clip)
        new_h = (o * torch.tanh(new_c)).to(h.dtype)
        if projection is not None:
            new_h = new_h @ projection
        if proj_clip is not None:
            new_h = new_h.clamp(-proj_clip, proj_clip)
        valid = time_mask[t]
        c = torch.where(valid, new_c, c)
        h = torch.where(valid, new_h, h)
        outputs.append(new_h * valid.to(new_h.dtype))
    if not outputs:
        return ops.zeros((0, *h0.shape), h0.dtype), c, h
    return torch.stack(outputs), c, h

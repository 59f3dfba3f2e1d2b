"""`x @ weight` for a weight that one call multiplies at every time step.

The LSTM loop on PyTorch multiplies a few rows (the batch) by the same
weight at every step: `(B, P) @ (P, 4H)` and `(B, H) @ (H, P)`, and their
transposes in the backward pass. `torch.mm` hands each product to the
BLAS afresh, which re-packs the weight every time; with a few rows that
packing is most of the work. oneDNN, which x86 PyTorch builds carry, can
pack a weight once (`torch.ops.mkldnn._reorder_linear_weight`) and
multiply by it many times (`_linear_pointwise`, the ops Inductor uses for
frozen linears): a `RepeatedMatmul` packs once per call and uses it at
every step.

Measured on 2 idle AMD EPYC cores (AVX-512), 2 threads, milliseconds a
product, `torch.mm` -> packed, for 1 / 4 / 32 rows:

    512 x 16384 (original size, recurrent)   1.42->1.05  6.87->1.37  9.91->3.99
    16384 x 512 (its transpose, backward)    3.09->0.90  4.13->0.87  5.90->2.98
    4096 x 512 (original size, projection)   0.19->0.09  0.49->0.11  1.04->0.77
    128 x 4096 (small size, recurrent)       0.07->0.07  0.17->0.08  0.33->0.24
    1024 x 128 (small size, projection)      0.02->0.05  0.03->0.04  0.07->0.10

so weights of `MIN_PACKED_ELEMENTS` and more are packed, smaller ones
are not (`benchmarks/packed_matmul.py` measures it on another machine).

Plain float32 arithmetic either way (only the order of the sums
differs, as between two BLAS builds). Where the ops are missing or fail
their check (another build), or for another device or dtype, it is
`torch.mm`.
"""

import contextlib
import functools

import torch

# Weights with fewer elements are multiplied unpacked (the table above).
MIN_PACKED_ELEMENTS = 1 << 18


@contextlib.contextmanager
def packing_from(min_elements):
    """Within the block, weights of `min_elements` and more are packed
    (0: every weight, `float("inf")`: none); for comparisons and tests."""
    global MIN_PACKED_ELEMENTS
    saved, MIN_PACKED_ELEMENTS = MIN_PACKED_ELEMENTS, min_elements
    try:
        yield
    finally:
        MIN_PACKED_ELEMENTS = saved


class RepeatedMatmul:
    """`x @ weight` for many `x` and one `weight` `(K, N)` (no gradient
    flows through it: the loops that use it write their own)."""

    def __init__(self, weight):
        self.weight = weight
        self.packed = None
        if _packs(weight):
            self.packed = _pack(weight)

    def __call__(self, x, out, add=None):
        """Writes `add + x @ weight` (or `x @ weight`) into `out`."""
        if self.packed is None:
            if add is None:
                return torch.mm(x, self.weight, out=out)
            return torch.addmm(add, x, self.weight, out=out)
        product = _linear(x, self.packed)
        if add is None:
            return out.copy_(product)
        return torch.add(add, product, out=out)


def _packs(weight):
    return (
        weight.device.type == "cpu"
        and weight.dtype == torch.float32
        and weight.dim() == 2
        and weight.numel() >= MIN_PACKED_ELEMENTS
        and onednn_available()
    )


def _pack(weight):
    """`weight` `(K, N)` packed for `x @ weight` by oneDNN."""
    with torch.no_grad():
        return _reorder(weight.detach().t().contiguous())


def _reorder(linear_weight):
    return torch.ops.mkldnn._reorder_linear_weight(linear_weight, 32)


def _linear(x, packed):
    return torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")


@functools.cache
def onednn_available():
    """True where this torch has the ops and they compute a small product
    as `torch.mm` does."""
    mkldnn = getattr(torch.backends, "mkldnn", None)
    if mkldnn is None or not mkldnn.is_available():
        return False
    try:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(8, 16, generator=generator)
        weight = torch.randn(16, 24, generator=generator)
        product = _linear(x, _reorder(weight.t().contiguous()))
    except (RuntimeError, AttributeError, NotImplementedError):
        return False
    expected = x.double() @ weight.double()
    error = (product.double() - expected).abs().max().item()
    return product.shape == expected.shape and error < 1e-4

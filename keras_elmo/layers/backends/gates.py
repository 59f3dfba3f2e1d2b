"""The gate layout of the ELMo LSTM, shared by every backend's loop.

Gates are ordered (i, j, f, o) in the kernels, j being the candidate, and
a forget bias of 1.0 is added at run time: the official weights do not
store it in the bias (SPEC §7).
"""

from keras import ops

FORGET_BIAS = 1.0


def forget_bias(units, dtype):
    """The `(4 * units,)` row added to the input products: FORGET_BIAS on
    the forget gate, zero elsewhere."""
    gate = ops.arange(4 * units) // units
    return ops.cast(ops.where(gate == 2, FORGET_BIAS, 0.0), dtype)

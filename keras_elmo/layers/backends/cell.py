"""The projected, clipped LSTM cell as every backend's loop reads it.

Gates are ordered (i, j, f, o) in the kernels, j being the candidate, and
a forget bias of 1.0 is added at run time: the official weights do not
store it in the bias (SPEC §7).
"""

import collections

from keras import ops

FORGET_BIAS = 1.0


def forget_bias(units, dtype):
    """The `(4 * units,)` row added to the input products: FORGET_BIAS on
    the forget gate, zero elsewhere."""
    gate = ops.arange(4 * units) // units
    return ops.cast(ops.where(gate == 2, FORGET_BIAS, 0.0), dtype)


class Cell(
    collections.namedtuple(
        "Cell",
        (
            "kernel",
            "bias",
            "recurrent_kernel",
            "projection",
            "cell_clip",
            "proj_clip",
        ),
    )
):
    """The weights and clips of one LSTM, as one record.

    Fields: `kernel` `(D, 4H)`, `bias` `(4H,)`, `recurrent_kernel`
    `(P, 4H)`, `projection` `(H, P)` or None, and `cell_clip`,
    `proj_clip`: float or None (no clipping).

    Example:

    >>> cell = Cell(np.ones((3, 8)), np.zeros(8), np.ones((2, 8)),
    ...             np.ones((2, 2)), 3.0, None)
    >>> cell.units, cell.clips
    (2, (3.0, None))
    """

    __slots__ = ()

    @property
    def units(self):
        """The number of cells `H`."""
        return self.recurrent_kernel.shape[-1] // 4

    @property
    def clips(self):
        """`(cell_clip, proj_clip)`."""
        return self.cell_clip, self.proj_clip

    def converted(self, convert):
        """The record with `convert` applied to each weight (None stays)."""
        return self._replace(
            **{
                name: None if value is None else convert(value)
                for name, value in zip(self._fields[:4], self[:4])
            }
        )

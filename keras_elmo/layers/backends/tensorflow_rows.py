"""Which rows the TensorFlow LSTM loop runs at each step.

A batch of sentences is padded to its longest, and the rows of a batch
end at different steps (at the held-out Gutenberg sentences in batches of
32, four positions in ten are padding). The loop takes the rows longest
first, so the rows still running at step `t` are the first `sizes[t]`
ones, and runs only those: a sentence that ended costs no recurrent
products, no cell updates, and no steps at all past the longest one.

The positions the loop reads and writes are "packed" (as PyTorch's
`PackedSequence`): step 0's running rows, then step 1's, ..., one row a
real token, `offsets[t]` the first of step `t`. The input products, the
saved activations of the hand-written gradient and the weight gradients
are computed on the packed rows only, so padding costs nothing there
either.
"""

import tensorflow as tf


class Rows:
    """The row order and packed positions of a time mask.

    Args:
        time_mask: bool `(T, B, 1)`, a prefix of each row (right padding).

    Attributes (int32 tensors):
        order: `(B,)`, the rows longest first (ties in batch order);
            `inverse`, the permutation back.
        steps: scalar, the loop's steps: the longest row's length, at
            least 1 (a step of no rows changes nothing, and a loop of no
            steps would leave TensorArrays that cannot be stacked).
        sizes: `(steps,)`, the rows running at each step; `offsets`:
            `(steps,)`, the packed position of each step's first row.
        index: `(N, 2)`, `(t, b)` of each packed position in the caller's
            `(T, B)` layout, for `tf.gather_nd` and `tf.scatter_nd`.
        previous: `(N,)`, where the state before each packed position is
            in `concat([initial (B, ...), packed (N, ...)])`: the initial
            state at step 0, the same row's previous step after it.

    Example:

    >>> mask = np.array([[1, 1, 0], [1, 0, 0]], bool)[:, :, None]
    >>> rows = Rows(tf.constant(mask))
    >>> rows.order.numpy().tolist(), rows.sizes.numpy().tolist()
    ([0, 1, 2], [2, 1])
    >>> rows.index.numpy().tolist(), rows.previous.numpy().tolist()
    ([[0, 0], [0, 1], [1, 0]], [0, 1, 3])
    """

    def __init__(self, time_mask):
        lengths = tf.reduce_sum(tf.cast(time_mask[:, :, 0], tf.int32), 0)
        batch = tf.shape(lengths)[0]
        self.order = tf.argsort(lengths, direction="DESCENDING", stable=True)
        self.inverse = tf.scatter_nd(
            self.order[:, None], tf.range(batch), tf.shape(self.order)
        )
        sorted_lengths = tf.gather(lengths, self.order)
        self.steps = tf.reduce_max(tf.concat([[1], lengths], 0))
        running = tf.range(self.steps)[:, None] < sorted_lengths[None, :]
        self.sizes = tf.reduce_sum(tf.cast(running, tf.int32), 1)
        self.offsets = tf.cumsum(self.sizes, exclusive=True)
        positions = tf.cast(tf.where(running), tf.int32)
        t, row = positions[:, 0], positions[:, 1]
        self.index = tf.stack([t, tf.gather(self.order, row)], axis=1)
        before = tf.gather(self.offsets, tf.maximum(t - 1, 0))
        self.previous = tf.where(t > 0, batch + before + row, row)

    def step(self, t):
        """`(offset, size)`: step `t`'s packed rows."""
        return self.offsets[t], self.sizes[t]

    def pack(self, x):
        """`x` `(T, B, ...)` at the packed positions: `(N, ...)`."""
        return tf.gather_nd(x, self.index)

    def unpack(self, packed, time, batch):
        """`(time, batch, ...)` with `packed` `(N, ...)` at its positions,
        zeros elsewhere."""
        shape = tf.concat([[time, batch], tf.shape(packed)[1:]], 0)
        return tf.scatter_nd(self.index, packed, shape)

    def sort(self, x):
        """Rows of `x` `(B, ...)` longest first."""
        return tf.gather(x, self.order)

    def unsort(self, x, axis=0):
        """Rows of `x` back in the caller's order."""
        unsorted = tf.gather(x, self.inverse, axis=axis)
        unsorted.set_shape(x.shape)
        return unsorted

"""Distinct tokens inside `jax.jit`, encoded in chunks of similar length.

A compiled JAX program has static shapes, so it cannot hold "the distinct
rows" of a batch, whose number depends on the values. It can still skip
their work: the rows are sorted by (tail start, ids), equal rows end up
next to each other, and the first of each run is written to a buffer as
large as the batch. The buffer is encoded `CHUNK_ROWS` rows at a time by
`lax.map`, and each chunk picks, with `lax.switch`, one of a few compiled
encodings at run time:

- a chunk past the distinct rows is skipped (zeros, never read);
- a chunk of short tokens reads only the first character positions.

The second is exact. Every row's ids are constant from its *tail start*
on (the padding character after the end-of-word mark, or the padding id 0
of a missing token). A convolution window made only of tail ids has the
same value wherever it starts, so with `slack` the widest window, a row
cut to `tail start + slack` positions still holds every distinct window
value, and the max-pooled features are the same numbers.

Both together took the jitted small-size biLM from 1,205 to 3,837 tokens/s
on 96 held-out Gutenberg sentences (AMD EPYC [avx2,avx512_vnni,
avx512f], 2 cores), the char CNN having
been three quarters of its time.

Gradients flow through `lax.map` and `lax.switch` as usual; each branch is
rematerialised (`jax.checkpoint`) so that the backward pass keeps only the
chunk's ids, not every branch's convolution outputs.
"""

from keras_elmo.layers.backends.jax_rows import valid_rows

CHUNK_ROWS = 64
# Extra positions past the tail start (after `slack`) that each compiled
# width allows; the last is the whole row.
WIDTH_STEPS = (4, 8, 16, 24)


def encode_distinct(x, encode, slack, finish=None):
    """`finish(encode(rows, width))` of every row of `x`, once per
    distinct row.

    Args:
        x: int `(N, K)`, one token a row.
        encode: `encode(rows, width)` -> `(M, D)`: the embeddings of `rows`
            `(M, K)` reading only their first `width` positions (None: all).
        slack: int or None. The widest convolution window; None never
            cuts rows.
        finish: None or a row-wise function of `encode`'s results, run
            after the chunks on the distinct rows (`jax_rows.valid_rows`):
            its weights then stay out of the loop, whose backward pass
            would otherwise add up their gradients chunk by chunk.

    Returns:
        `(N, D)`, row `n` the embedding of `x[n]`.
    """
    import jax
    import jax.numpy as jnp

    if x.shape[0] == 0:
        encoded = encode(x, None)
        return encoded if finish is None else finish(encoded)
    rows, starts, index, count = _distinct_sorted(x)
    widths = _widths(x.shape[1], slack)
    size = -(-rows.shape[0] // CHUNK_ROWS) * CHUNK_ROWS
    rows = jnp.pad(rows, [(0, size - rows.shape[0]), (0, 0)])
    starts = jnp.pad(starts, [(0, size - starts.shape[0])])
    chunks = rows.reshape(-1, CHUNK_ROWS, rows.shape[1])
    latest = jnp.max(starts.reshape(-1, CHUNK_ROWS), axis=1)
    needed = jnp.minimum(latest + (slack or 0), x.shape[1])
    choice = 1 + jnp.searchsorted(jnp.asarray(widths), needed)
    first_row = jnp.arange(chunks.shape[0]) * CHUNK_ROWS
    choice = jnp.where(first_row < count, choice, 0)
    out = jax.eval_shape(lambda r: encode(r, None), chunks[0])

    def skip(_):
        return jnp.zeros(out.shape, out.dtype)

    def branch(width):
        cut = None if width == x.shape[1] else width
        return jax.checkpoint(lambda r: encode(r, cut))

    branches = [skip, *(branch(w) for w in widths)]
    encoded = jax.lax.map(
        lambda pair: jax.lax.switch(pair[1], branches, pair[0]),
        (chunks, choice),
    )
    encoded = encoded.reshape(-1, out.shape[-1])
    if finish is not None:
        used = jnp.arange(encoded.shape[0]) < count
        encoded = valid_rows(encoded, used, finish)
    return jnp.take(encoded, index, axis=0)


def _widths(length, slack):
    """The compiled widths, ascending, the last the whole row."""
    if slack is None:
        return (length,)
    return tuple(
        sorted({min(length, slack + step) for step in WIDTH_STEPS} | {length})
    )


def _distinct_sorted(x):
    """`(rows, starts, index, count)`: the distinct rows of `x` sorted by
    tail start then ids, padded with zero rows to `len(x)`; their tail
    starts; for each row of `x` its distinct row; how many there are."""
    import jax
    import jax.numpy as jnp

    n, k = x.shape
    x = x.astype("int32")
    positions = jnp.arange(1, k + 1, dtype="int32")
    starts = jnp.max(jnp.where(x != x[:, -1:], positions, 0), axis=1)
    keys = [starts, *(x[:, j] for j in range(k))]
    order = jnp.arange(n, dtype="int32")
    *keys, order = jax.lax.sort([*keys, order], num_keys=len(keys))
    starts, rows = keys[0], jnp.stack(keys[1:], axis=1)
    new = jnp.concatenate(
        [jnp.ones((1,), bool), jnp.any(rows[1:] != rows[:-1], axis=1)]
    )
    distinct = jnp.cumsum(new, dtype="int32") - 1
    index = jnp.zeros((n,), "int32").at[order].set(distinct)
    target = jnp.where(new, distinct, n)
    rows = jnp.zeros_like(rows).at[target].set(rows, mode="drop")
    starts = jnp.zeros_like(starts).at[target].set(starts, mode="drop")
    return rows, starts, index, distinct[-1] + 1

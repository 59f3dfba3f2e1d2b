"""Embedding dumps in the bilm-tf hdf5 layouts (SPEC §12).

Both functions stream: memory stays flat whatever the size of the input, and
the output is written to a temporary file that replaces `output_file` only
when complete.
"""

import itertools
import os

import h5py
import keras
import tensorflow as tf

from keras_elmo.data.character_ids import batch_to_ids
from keras_elmo.data.text import count_lines
from keras_elmo.data.text import iter_sentences

# Sentences read at a time; sorted by length inside a chunk so that batches
# carry little padding.
_BATCHES_PER_CHUNK = 16


def _check_batch_size(batch_size):
    if int(batch_size) < 1:
        raise ValueError(
            f"batch_size must be a positive integer; received {batch_size}."
        )
    return int(batch_size)


def _compiled_layers(bilm):
    @tf.function(
        input_signature=[tf.TensorSpec((None, None, 50), tf.int32)],
        reduce_retracing=True,
    )
    def layers(ids):
        # (batch, num_layers + 1, time, 2P), the dump's per-sentence layout.
        layers = bilm(ids, training=False)["layer_outputs"]
        return tf.cast(tf.stack(layers, axis=1), tf.float32)

    return layers


def _progress(target, verbose):
    return keras.utils.Progbar(target, unit_name="sentence", verbose=verbose)


def embed_file(bilm, input_file, output_file, batch_size=64, verbose=1):
    """Writes the biLM layers of every sentence of a text file to hdf5.

    Args:
        bilm: a stateless `keras_elmo.layers.BiLM`.
        input_file: str. One whitespace-tokenised sentence per line, UTF-8.
        output_file: str. hdf5 file with one float32 dataset `str(i)` of
            shape `(num_layers + 1, n_i, 2 * projection_dim)` for line `i`
            (from 0); an empty line gives `n_i = 0`.
        batch_size: int. Sentences per biLM call. Defaults to `64`.
        verbose: 0 (silent) or 1 (progress bar). Defaults to `1`.

    Returns:
        The number of sentences written.
    """
    batch_size = _check_batch_size(batch_size)
    if bilm.stateful:
        raise ValueError(
            "embed_file needs a stateless BiLM (outputs must not depend on "
            "the order of lines); load it without stateful=True."
        )
    total = count_lines(input_file)  # fails on bad UTF-8 before any work
    layers = _compiled_layers(bilm)
    width = 2 * bilm.projection_dim
    progress = _progress(total, verbose)
    sentences = enumerate(iter_sentences(input_file))
    temporary = f"{output_file}.partial"
    with h5py.File(temporary, "w") as out:
        done = 0
        while chunk := list(
            itertools.islice(sentences, batch_size * _BATCHES_PER_CHUNK)
        ):
            chunk.sort(key=lambda item: len(item[1]))
            for start in range(0, len(chunk), batch_size):
                batch = chunk[start : start + batch_size]
                ids = batch_to_ids([tokens for _, tokens in batch])
                values = layers(ids).numpy()
                for row, (index, tokens) in enumerate(batch):
                    out.create_dataset(
                        str(index),
                        data=values[row, :, : len(tokens)].reshape(
                            bilm.num_layers + 1, len(tokens), width
                        ),
                    )
            done += len(chunk)
            progress.update(done)
    os.replace(temporary, output_file)
    return total


def encode_tokens_in_batches(bilm, tokens, batch_size=1024):
    """Yields the token embeddings `e` of an iterable of token strings, as
    float32 arrays of up to `batch_size` rows, in order."""
    batch_size = _check_batch_size(batch_size)

    @tf.function(
        input_signature=[tf.TensorSpec((None, 1, 50), tf.int32)],
        reduce_retracing=True,
    )
    def encode(ids):
        return tf.cast(bilm.encode_tokens(ids)[:, 0], tf.float32)

    tokens = iter(tokens)
    while chunk := list(itertools.islice(tokens, batch_size)):
        yield encode(batch_to_ids([[token] for token in chunk])).numpy()


def dump_token_embeddings(
    bilm, vocab_file, output_file, batch_size=1024, verbose=1
):
    """Writes the context-insensitive embedding of every vocabulary token.

    Args:
        bilm: a `keras_elmo.layers.BiLM`.
        vocab_file: str. One token per line, UTF-8 (`<S>`/`</S>` give the
            sentence-boundary embeddings).
        output_file: str. hdf5 file with dataset `embedding`,
            `(num_tokens, projection_dim)`, row k for line k.
        batch_size: int. Tokens per call. Defaults to `1024`.
        verbose: 0 or 1. Defaults to `1`.

    Returns:
        The number of tokens written.
    """
    batch_size = _check_batch_size(batch_size)
    total = count_lines(vocab_file)
    progress = _progress(total, verbose)
    # A vocabulary line is one token; an empty line an empty token.
    words = (" ".join(line) for line in iter_sentences(vocab_file))
    temporary = f"{output_file}.partial"
    with h5py.File(temporary, "w") as out:
        embedding = out.create_dataset(
            "embedding", shape=(total, bilm.projection_dim), dtype="float32"
        )
        start = 0
        for values in encode_tokens_in_batches(bilm, words, batch_size):
            embedding[start : start + len(values)] = values
            start += len(values)
            progress.update(start)
    os.replace(temporary, output_file)
    return total

"""Embedding dumps in the bilm-tf hdf5 layouts (SPEC §12).

Both functions stream: memory stays flat whatever the size of the input, and
the output is written to a temporary file that replaces `output_file` only
when complete. They run on every Keras backend: on TensorFlow each call is
one `tf.function` of a fixed signature, elsewhere the layer's own compiled
eager call.
"""

import itertools

import keras
import numpy as np
from keras import ops

from elmo_core.embedding_files.hdf5_layout import DEFAULT_OUTPUT_LAYERS
from elmo_core.embedding_files.hdf5_layout import DEFAULT_SENTENCE_BATCH
from elmo_core.embedding_files.hdf5_layout import DEFAULT_TOKEN_BATCH
from elmo_core.embedding_files.hdf5_layout import check_embed_settings
from elmo_core.embedding_files.hdf5_layout import write_embeddings
from elmo_core.embedding_files.hdf5_layout import write_token_embeddings
from elmo_core.embedding_files.token_batches import DEFAULT_MAX_BATCH_TOKENS
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_integer
from elmo_core.files import check_output_file
from elmo_core.ids.vocabulary import check_vocabulary
from elmo_core.text.tokenizers import DEFAULT_LANGUAGE
from elmo_core.text.tokenizers import DEFAULT_TOKENIZATION


def _check_batch_size(batch_size):
    return check_integer(batch_size, "batch_size", minimum=1)


def _word_vocabulary(bilm, vocabulary):
    """The checked vocabulary of a biLM that reads word ids, else None."""
    if not bilm.encoder.needs_vocabulary:
        return None
    return check_vocabulary(vocabulary, bilm.encoder)


def compiled_layers(bilm):
    """A callable: int32 biLM inputs `(batch, time, ...)` -> float32
    `(batch, num_layers + 1, time, 2 * projection_dim)`."""
    if not isinstance(bilm, keras.layers.Layer):
        # A runtime model (elmo_core.runtime): NumPy in, the BiLM dict out.
        return lambda ids: np.stack(bilm(ids)["layer_outputs"], axis=1)
    if keras.backend.backend() != "tensorflow":
        return lambda ids: _stacked(bilm(ids, training=False))
    import tensorflow as tf

    inputs = (None, None, *bilm.encoder.input_shape)

    @tf.function(
        input_signature=[tf.TensorSpec(inputs, tf.int32)],
        autograph=False,  # as the layer's own eager function: half the trace
    )
    def layers(ids):
        # (batch, num_layers + 1, time, 2P), the dump's per-sentence layout.
        layers = bilm(ids, training=False)["layer_outputs"]
        return tf.cast(tf.stack(layers, axis=1), tf.float32)

    return layers


def _stacked(outputs):
    """(batch, num_layers + 1, time, 2P) float32 NumPy of a BiLM's outputs."""
    layers = ops.stack(outputs["layer_outputs"], axis=1)
    return ops.convert_to_numpy(ops.cast(layers, "float32"))


def embed_file(
    bilm,
    input_file,
    output_file,
    batch_size=DEFAULT_SENTENCE_BATCH,
    verbose=1,
    on_bad_line="error",
    vocabulary=None,
    output_layers=DEFAULT_OUTPUT_LAYERS,
    sentence_index=True,
    max_batch_tokens=DEFAULT_MAX_BATCH_TOKENS,
    input_format=None,
    max_residues=None,
    protein_vectors=None,
    tokenize=DEFAULT_TOKENIZATION,
    language=DEFAULT_LANGUAGE,
):
    """Writes the biLM layers of every sentence of a text file to hdf5, in
    the layout of `allennlp elmo` (`elmo_core.embedding_files.hdf5_layout`).

    Sentences are read in chunks of 16 batches, sorted by length within a
    chunk and cut into batches of at most `batch_size` sentences and
    `max_batch_tokens` padded positions; outputs are stateless, so neither
    the order nor the batching changes them.

    Args:
        bilm: a stateless `keras_elmo.layers.BiLM`, or a runtime model
            (`elmo_core.runtime.ONNXBiLM`, `LiteRTBiLM`).
        input_file: str. One whitespace-tokenised sentence per line, UTF-8.
        output_file: str. hdf5 file with one float32 dataset `str(i)` for
            line `i` (from 0), of shape `(num_layers + 1, n_i,
            2 * projection_dim)` (an empty line gives `n_i = 0`), and the
            `sentence_to_index` dataset.
        batch_size: int. Most sentences per biLM call. Defaults to `256`.
        verbose: 0 (silent) or 1 (progress). Defaults to `1`.
        on_bad_line: `"error"` (default) stops, before any work, at the
            first line that is not UTF-8, naming it; `"skip"` leaves such
            lines out (no dataset for them).
        vocabulary: the vocabulary of a word-input biLM (path, list or
            `elmo_core.ids.Vocabulary`); required for one, unused
            otherwise. Defaults to `None`.
        output_layers: `"all"` (default), `"top"` (the top layer,
            `(n_i, 2 * projection_dim)`) or `"average"` (the mean of the
            layers, same shape): AllenNLP's `--all` / `--top` / `--average`.
        sentence_index: bool. Write `sentence_to_index` (it holds the text
            of every sentence, in memory until the end); False is
            AllenNLP's `--forget-sentences`. Defaults to `True`.
        max_batch_tokens: int. Most padded token positions per biLM call
            (sentences x the longest of them; a longer sentence goes
            alone): it bounds the memory of a batch. Defaults to `16384`.
        input_format: `"lines"` (sentences) or `"fasta"` (proteins, one
            residue a token: `hdf5_layout.write_protein_embeddings`,
            keyed by record id); by the suffix of `input_file` when
            `None` (`.fasta`, `.fa`, `.faa`, `.fas`, also `.gz`).
            Defaults to `None`.
        max_residues: int. With FASTA, a longer record is bad. Defaults
            to `10000` (`elmo_core.proteins.fasta.DEFAULT_MAX_RESIDUES`).
        protein_vectors: with FASTA, `"both"` (the default, for None),
            `"per-residue"` or `"per-protein"`.
        tokenize: how a line is split into tokens: `"whitespace"`
            (default: as written), `"spacy"` or `"moses"` (raw sentences;
            `elmo_core.text.tokenizer`).
        language: str. The language code of `tokenize`'s rules. Defaults
            to `"en"`.

    Returns:
        The number of sentences (FASTA: ids) written.
    """
    batch_size, max_batch_tokens = _check_embed_arguments(
        bilm, input_file, output_file, batch_size, max_batch_tokens,
        output_layers,
    )  # fmt: skip
    vocabulary = _word_vocabulary(bilm, vocabulary)
    layers = compiled_layers(bilm)

    def layers_of(sentences):
        return np.asarray(
            layers(bilm.encoder.batch_to_inputs(sentences, vocabulary))
        )

    return write_embeddings(
        layers_of,
        input_file,
        output_file,
        batch_size,
        verbose=verbose,
        on_bad_line=on_bad_line,
        output_layers=output_layers,
        sentence_index=sentence_index,
        max_batch_tokens=max_batch_tokens,
        input_format=input_format,
        max_residues=max_residues,
        protein_vectors=protein_vectors,
        tokenize=tokenize,
        language=language,
    )


def _check_embed_arguments(
    bilm, input_file, output_file, batch_size, max_batch_tokens, output_layers
):
    """`(batch_size, max_batch_tokens)` of `embed_file`, checked with its
    other arguments."""
    batch_size, max_batch_tokens, _ = check_embed_settings(
        batch_size, max_batch_tokens, output_layers
    )
    check_output_file(output_file, [input_file], "output_file")
    if bilm.stateful:
        raise KerasElmoError(
            "embed_file needs a stateless BiLM (outputs must not depend on "
            "the order of lines); load it without stateful=True."
        )
    return batch_size, max_batch_tokens


def encode_tokens_in_batches(bilm, tokens, batch_size=1024, vocabulary=None):
    """Yields the token embeddings `e` of an iterable of token strings, as
    float32 arrays of up to `batch_size` rows, in order (a word-input biLM
    reads them through its `vocabulary`)."""
    batch_size = _check_batch_size(batch_size)
    vocabulary = _word_vocabulary(bilm, vocabulary)
    encode = _token_encoder(bilm)
    tokens = iter(tokens)
    while chunk := list(itertools.islice(tokens, batch_size)):
        ids = bilm.encoder.batch_to_inputs([[t] for t in chunk], vocabulary)
        yield ops.convert_to_numpy(encode(ids))


def _token_encoder(bilm):
    """A callable: inputs `(tokens, 1, ...)` -> float32 token embeddings
    `(tokens, projection_dim)`."""

    def encode(ids):
        return ops.cast(bilm.encode_tokens(ids)[:, 0], "float32")

    if keras.backend.backend() != "tensorflow":
        return encode
    import tensorflow as tf

    inputs = (None, 1, *bilm.encoder.input_shape)
    return tf.function(
        encode,
        input_signature=[tf.TensorSpec(inputs, tf.int32)],
        autograph=False,  # as the layer's own eager function: half the trace
    )


def dump_token_embeddings(
    bilm,
    vocab_file,
    output_file,
    batch_size=DEFAULT_TOKEN_BATCH,
    verbose=1,
    vocabulary=None,
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
        vocabulary: the vocabulary of a word-input biLM (required for one;
            tokens it lacks get the `<UNK>` row). Defaults to `None`.

    Returns:
        The number of tokens written.
    """
    batch_size = _check_batch_size(batch_size)
    vocabulary = _word_vocabulary(bilm, vocabulary)
    check_output_file(output_file, [vocab_file], "output_file")

    def embed_tokens(words):
        return encode_tokens_in_batches(bilm, words, batch_size, vocabulary)

    return write_token_embeddings(
        embed_tokens, vocab_file, output_file, bilm.projection_dim, verbose
    )

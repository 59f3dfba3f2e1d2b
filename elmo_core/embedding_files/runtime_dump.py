"""An exported biLM file (`.onnx`, `.tflite`) run over text files, in the
hdf5 layouts of `bilm_dump`, without Keras or TensorFlow: `embed` and
`dump_token_embeddings`, the twins of `keras_elmo.embed` and
`keras_elmo.dump_token_embeddings` for such a file (what `keras-elmo
embed` and `dump-token-embeddings` run for `--model FILE.onnx|.tflite`).

The layouts are those of `bilm_dump.embed_file` (dataset `str(i)`,
float32 `(num_layers + 1, n_i, 2 * projection_dim)` for line i) and
`dump_token_embeddings` (dataset `embedding`, `(num_tokens,
projection_dim)`); the token embedding of an exported model is the first
half of its layer 0 for a one-token sentence (layer 0 is `[e, e]`).
"""

import itertools
import os

import numpy as np

from elmo_core.embedding_files.hdf5_layout import DEFAULT_OUTPUT_LAYERS
from elmo_core.embedding_files.hdf5_layout import DEFAULT_SENTENCE_BATCH
from elmo_core.embedding_files.hdf5_layout import DEFAULT_TOKEN_BATCH
from elmo_core.embedding_files.hdf5_layout import check_embed_settings
from elmo_core.embedding_files.hdf5_layout import write_embeddings
from elmo_core.embedding_files.hdf5_layout import write_token_embeddings
from elmo_core.embedding_files.token_batches import DEFAULT_MAX_BATCH_TOKENS
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_integer
from elmo_core.errors import check_verbose
from elmo_core.errors.blame import renamed
from elmo_core.files import check_output_file
from elmo_core.files.paths import check_input_file
from elmo_core.formats.exported_file import KINDS
from elmo_core.text.tokenization_record import note_reading
from elmo_core.text.tokenizers import DEFAULT_LANGUAGE
from elmo_core.text.tokenizers import DEFAULT_TOKENIZATION

# File suffix -> the runtime that runs it.
RUNTIMES = {kind.suffix: kind.name for kind in KINDS.values()}
# What runs a biLM that `embed` is given: TensorFlow (the Keras layers),
# or an export of it run by its runtime.
EMBED_RUNTIMES = ("tensorflow", *KINDS)


def runtime_of(path):
    """`"onnx"` or `"litert"` when `path` names an exported model file
    (by its suffix), else None."""
    if not isinstance(path, (str, os.PathLike)):
        return None
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    return RUNTIMES.get(suffix)


def check_vocab_file(vocab_file):
    """`vocab_file` is a readable file, else an error naming it."""
    check_input_file(
        vocab_file, "`vocab_file`", "a text file of one token a line",
        argument="vocab_file",
    )  # fmt: skip


def check_embed_paths(input_file, output_file):
    """`embed`'s paths before a model is loaded: `input_file` a readable
    file, `output_file` a file path that is not the input (the writer
    checks it again against the model's own files)."""
    check_input_file(
        input_file, "`input_file`", "a text or FASTA file",
        argument="input_file",
    )  # fmt: skip
    check_output_file(output_file, [input_file], "output_file")


def check_not_given(source, **arguments):
    """An exported file holds its options, weights and character rules:
    `arguments` given with it (not None) are refused, naming the first."""
    for name, value in arguments.items():
        if value is not None:
            raise KerasElmoError(
                f"`source` {source} is an exported model file; `{name}` does "
                "not apply to it (it holds its options and weights, and "
                f"reads characters). Leave `{name}` out.",
                name,
                received=value,
            )


def open_model(
    model_file, runtime=None, precision=None, num_threads=None,
    argument="model_file",
):  # fmt: skip
    """The exported model `model_file`, loaded by its runtime, after
    checking it against `runtime` / `precision` when they were given;
    `argument` is the caller's name of `model_file`.

    Raises:
        KerasElmoError: the file is missing, of another runtime than
            `runtime`, or of another precision than `precision`.
    """
    from elmo_core import runtime as runtimes

    kind = runtime_of(model_file)
    if kind is None:
        raise KerasElmoError(
            f"`{argument}` is not an exported model file; expected a .onnx "
            "(keras-elmo export-onnx) or .tflite (export-litert) file.",
            argument,
            received=model_file,
        )
    if runtime not in (None, kind):
        raise KerasElmoError(
            f"`{argument}` is a {kind} model but `runtime` is another; "
            f"leave `runtime` out, or give {kind!r}.",
            "runtime",
            received=runtime,
        )
    load = {"onnx": runtimes.ONNXBiLM, "litert": runtimes.LiteRTBiLM}[kind]
    try:
        model = load(model_file, num_threads=num_threads)
    except KerasElmoError as error:  # the runtime's `path` is `argument`
        raise renamed(error, {"path": argument}) from None
    if precision not in (None, model.precision):
        raise KerasElmoError(
            f"`{argument}` was exported in {model.precision} but "
            "`precision` is another; leave `precision` out (a file has one "
            "precision), or export the biLM again in the one you want.",
            "precision",
            received=precision,
        )
    return model


def embed(
    source,
    input_file,
    output_file,
    weights=None,
    vocabulary=None,
    batch_size=DEFAULT_SENTENCE_BATCH,
    max_batch_tokens=DEFAULT_MAX_BATCH_TOKENS,
    on_bad_line="error",
    output_layers=DEFAULT_OUTPUT_LAYERS,
    sentence_index=True,
    tokenize=DEFAULT_TOKENIZATION,
    language=DEFAULT_LANGUAGE,
    input_format=None,
    max_residues=None,
    protein_vectors=None,
    runtime=None,
    precision=None,
    num_threads=None,
    verbose=1,
):
    """`keras_elmo.embed` for an exported biLM file, without Keras or
    TensorFlow: the layers of every sentence of a text file (or of every
    protein of a FASTA file) written to hdf5, by ONNX Runtime or LiteRT.

    Args:
        source: str. A `.onnx` (`keras-elmo export-onnx`) or `.tflite`
            (`export-litert`) biLM file.
        weights, vocabulary: refused (they are `keras_elmo.embed`'s for
            other sources: the file holds its weights and reads
            characters).
        input_file, output_file, batch_size, max_batch_tokens: as
            `keras_elmo.embed`.
        on_bad_line, output_layers, sentence_index, tokenize: the same.
        language, input_format, max_residues, protein_vectors: the same.
        verbose: the same.
        runtime: `"onnx"`, `"litert"` or None: the file's runtime (by
            its suffix), checked when given.
        precision: str or None. The file's precision, checked when
            given (a file has one).
        num_threads: int or None. Threads of a biLM call (None: the
            runtime chooses).

    Returns:
        The number of sentences (FASTA: ids) written.

    Example (`onnx_file` is a biLM exported by `keras-elmo export-onnx`;
    here the test fixture biLM):

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> elmo_core.embedding_files.embed(
    ...     onnx_file, "tests/fixtures/bilm-tf/train/data.txt",
    ...     os.path.join(folder, "out.hdf5"), verbose=0)
    5
    >>> elmo_core.embedding_files.dump_token_embeddings(
    ...     onnx_file, "tests/fixtures/bilm-tf/train/vocab.txt",
    ...     os.path.join(folder, "tokens.hdf5"), verbose=0)
    32
    """
    check_not_given(source, weights=weights, vocabulary=vocabulary)
    batch_size, max_batch_tokens, output_layers = check_embed_settings(
        batch_size, max_batch_tokens, output_layers
    )
    check_embed_paths(input_file, output_file)
    verbose = check_verbose(verbose)
    model = open_model(source, runtime, precision, num_threads, "source")
    note_reading(source, tokenize, language, "embed", verbose)
    return embed_file(
        model,
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


def embed_file(model, input_file, output_file, batch_size, **options):
    """`keras_elmo.corpus.bilm_dump.embed_file` for an exported
    model; `options` (`verbose`, `on_bad_line`, `output_layers`,
    `sentence_index`, `max_batch_tokens`, `input_format`,
    `max_residues`, `protein_vectors`, `tokenize`, `language`) as there.

    Returns:
        The number of sentences written.
    """
    check_output_file(output_file, [input_file, model.path], "output_file")

    def layers_of(sentences):
        return np.stack(model(sentences)["layer_outputs"], axis=1)

    return write_embeddings(
        layers_of, input_file, output_file, batch_size, **options
    )


def dump_token_embeddings(
    source,
    vocab_file,
    output_file,
    weights=None,
    vocabulary=None,
    batch_size=DEFAULT_TOKEN_BATCH,
    runtime=None,
    precision=None,
    num_threads=None,
    verbose=1,
):
    """`keras_elmo.dump_token_embeddings` for an exported biLM file,
    without Keras or TensorFlow: the context-insensitive embedding of
    every vocabulary token (its layer 0 alone), written to hdf5.

    Args:
        source, weights, vocabulary, runtime, precision, num_threads: as
            `embed`.
        vocab_file, output_file, batch_size, verbose: as
            `keras_elmo.dump_token_embeddings`.

    Returns:
        The number of tokens written.

    Example:

    A file holds its own weights and reads characters (`embed`'s example
    runs both functions on one):

    >>> try:
    ...     elmo_core.embedding_files.dump_token_embeddings(
    ...         "elmo.onnx", "vocab.txt", "tokens.hdf5", weights="w.hdf5")
    ... except elmo_core.KerasElmoError as error:
    ...     print(error.argument)
    weights
    """
    check_not_given(source, weights=weights, vocabulary=vocabulary)
    check_vocab_file(vocab_file)
    check_output_file(output_file, [vocab_file], "output_file")
    batch_size = check_integer(batch_size, "batch_size", minimum=1)
    verbose = check_verbose(verbose)
    model = open_model(source, runtime, precision, num_threads, "source")
    return dump_tokens(model, vocab_file, output_file, batch_size, verbose)


def dump_tokens(model, vocab_file, output_file, batch_size, verbose=1):
    """`dump_token_embeddings` with the exported `model` open.

    Returns:
        The number of tokens written.
    """
    check_output_file(output_file, [vocab_file, model.path], "output_file")

    def embed_tokens(words):
        while chunk := list(itertools.islice(words, batch_size)):
            outputs = model([[word] for word in chunk])
            yield outputs["token_embeddings"][:, 0]

    return write_token_embeddings(
        embed_tokens, vocab_file, output_file, model.projection_dim, verbose
    )

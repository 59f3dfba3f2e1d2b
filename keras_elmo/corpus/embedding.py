"""`keras_elmo.embed` and `keras_elmo.dump_token_embeddings`: a biLM
source (anything `load_bilm` takes) run over a text or FASTA file into
the hdf5 layouts of `keras-elmo embed` and `dump-token-embeddings`.

What the commands of those names run. An exported `.onnx` / `.tflite`
file goes to its twin in `elmo_core.embedding_files`, which runs it
without Keras; any other source is resolved by `keras_elmo.loading`, its
output checked against every file it reads (the local ones before a
download), and run by `bilm_dump`, in TensorFlow or, with `runtime`,
exported first and run by ONNX Runtime or LiteRT.
"""

import os
import sys
import tempfile
import time

from elmo_core.embedding_files import runtime_dump
from elmo_core.embedding_files.hdf5_layout import DEFAULT_OUTPUT_LAYERS
from elmo_core.embedding_files.hdf5_layout import DEFAULT_SENTENCE_BATCH
from elmo_core.embedding_files.hdf5_layout import DEFAULT_TOKEN_BATCH
from elmo_core.embedding_files.hdf5_layout import check_embed_settings
from elmo_core.embedding_files.runtime_dump import EMBED_RUNTIMES
from elmo_core.embedding_files.token_batches import DEFAULT_MAX_BATCH_TOKENS
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_choice
from elmo_core.errors import check_integer
from elmo_core.errors import check_verbose
from elmo_core.files import check_output_file
from elmo_core.formats.exported_file import KINDS
from elmo_core.formats.exported_file import PRECISIONS
from elmo_core.text.tokenization_record import note_reading
from elmo_core.text.tokenizers import DEFAULT_LANGUAGE
from elmo_core.text.tokenizers import DEFAULT_TOKENIZATION


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
    verbose=1,
):
    """Writes the biLM layers of every sentence of a text file (or of
    every protein of a FASTA file) to hdf5: what `keras-elmo embed` runs.

    A line is read as `keras_elmo.prepare` reads raw text (its normal
    form, split by `tokenize`); every line is checked before any work;
    the layout is `allennlp elmo`'s (`elmo_core.embedding_files.
    hdf5_layout`: dataset `str(i)` for line `i`), written whole, then
    renamed. A note says when `tokenize` reads otherwise than the biLM's
    corpus was read (as its folder records it), `whitespace` too.

    Args:
        source: str. Anything `keras_elmo.load_bilm` takes (with
            `weights` for an options file), or an exported `.onnx` /
            `.tflite` file (run without Keras:
            `elmo_core.embedding_files.embed`).
        input_file: str. One sentence a line (UTF-8, `.gz` allowed), or
            a protein FASTA file.
        output_file: str. The hdf5 file to write (never an input).
        weights: str or None. The hdf5 weights of an options file.
        vocabulary: a word-input biLM's vocabulary (path or list);
            default: its own. Refused for a biLM that reads characters.
        batch_size, max_batch_tokens: int. Sentences, and padded token
            positions, a biLM call at most (256, 16384).
        on_bad_line: `"error"` (default): a line that is not UTF-8 (a
            bad FASTA record) stops the run before any work; `"skip"`
            leaves it out (FASTA: listed in `bad_records`).
        output_layers: `"all"` (default), `"top"` or `"average"`.
        sentence_index: bool. Write `sentence_to_index`. Defaults to
            `True`.
        tokenize, language: `"whitespace"` (default: a line is one
            sentence, its tokens as written), `"spacy"` or `"moses"` (raw
            sentences; the `prepare` extra), for `language` ("en").
        input_format: `"lines"` or `"fasta"`; by the suffix when None.
        max_residues, protein_vectors: FASTA only: the longest record
            (10000) and `"both"` (default), `"per-residue"` or
            `"per-protein"`.
        runtime, precision: `"tensorflow"` (default), or `"onnx"` /
            `"litert"`: the biLM exported first in `precision` (default
            `"float32"`) and run there.
        verbose: 0 (silent) or 1 (progress lines, notes).

    Returns:
        The number of sentences (FASTA: ids) written.

    Example:

    >>> import os, tempfile
    >>> output = os.path.join(tempfile.mkdtemp(), "out.hdf5")
    >>> keras_elmo.embed(
    ...     "tests/fixtures/bilm-tf/model",
    ...     "tests/fixtures/bilm-tf/train/data.txt", output, verbose=0)
    5
    """
    # Every argument, by name: both runners take them all.
    arguments = dict(locals(), verbose=check_verbose(verbose))
    if runtime_dump.runtime_of(source) is not None:
        _check_exported_runtime(runtime)
        return runtime_dump.embed(**arguments)
    return _embed_with_keras(**arguments)


def _embed_with_keras(
    source,
    input_file,
    output_file,
    weights,
    vocabulary,
    runtime,
    precision,
    **reading,
):
    """`embed` of a biLM source that Keras runs (in TensorFlow, or
    exported to `runtime`); `reading`: `embed`'s other arguments."""
    from keras_elmo.corpus.bilm_dump import embed_file

    runtime_dump.check_embed_paths(input_file, output_file)
    check_embed_settings(
        reading["batch_size"], reading["max_batch_tokens"],
        reading["output_layers"], input_file,
    )  # fmt: skip
    runtime, precision = _check_runtime(runtime, precision)
    verbose = reading["verbose"]
    note_reading(
        source, reading["tokenize"], reading["language"], "embed", verbose
    )
    source = _resolved(source, weights, output_file, input_file, vocabulary)
    vocabulary = source_vocabulary(source, vocabulary)
    bilm = runtime_bilm(source.read().bilm, runtime, precision, verbose)
    return embed_file(
        bilm, input_file, output_file, vocabulary=vocabulary, **reading
    )


def dump_token_embeddings(
    source,
    vocab_file,
    output_file,
    weights=None,
    vocabulary=None,
    batch_size=DEFAULT_TOKEN_BATCH,
    verbose=1,
):
    """Writes the context-insensitive embedding of every token of a
    vocabulary file to hdf5: what `keras-elmo dump-token-embeddings`
    runs (bilm-tf's `dump_token_embeddings`).

    Args:
        source, weights, vocabulary: the biLM, as `keras_elmo.embed`
            takes it (an exported file runs without Keras:
            `elmo_core.embedding_files.dump_token_embeddings`).
        vocab_file: str. One token a line, UTF-8 (`<S>` and `</S>` give
            the sentence-boundary embeddings).
        output_file: str. The hdf5 file: dataset `embedding`,
            `(num_tokens, projection_dim)`, row k for line k.
        batch_size: int. Tokens a biLM call. Defaults to `1024`.
        verbose: 0 or 1. Defaults to `1`.

    Returns:
        The number of tokens written.

    Example:

    >>> import os, tempfile
    >>> output = os.path.join(tempfile.mkdtemp(), "tokens.hdf5")
    >>> keras_elmo.dump_token_embeddings(
    ...     "tests/fixtures/bilm-tf/model",
    ...     "tests/fixtures/bilm-tf/train/vocab.txt", output, verbose=0)
    32
    """
    verbose = check_verbose(verbose)
    if runtime_dump.runtime_of(source) is not None:
        return runtime_dump.dump_token_embeddings(
            source, vocab_file, output_file, weights, vocabulary, batch_size,
            verbose=verbose,
        )  # fmt: skip
    from keras_elmo.corpus import bilm_dump

    runtime_dump.check_vocab_file(vocab_file)
    batch_size = check_integer(batch_size, "batch_size", minimum=1)
    source = _resolved(source, weights, output_file, vocab_file, vocabulary)
    return bilm_dump.dump_token_embeddings(
        source.read().bilm,
        vocab_file,
        output_file,
        batch_size,
        verbose,
        source_vocabulary(source, vocabulary),
    )


def _check_exported_runtime(runtime):
    """Refuses `"tensorflow"` as the `runtime` of an exported file: None,
    or its own kind (checked by `runtime_dump.open_model`), runs it."""
    if runtime == "tensorflow":
        raise KerasElmoError(
            "`source` is an exported model file, which its own runtime "
            "runs (ONNX Runtime or LiteRT), not TensorFlow. Leave "
            "`runtime` out.",
            "runtime",
            received=runtime,
        )


def _check_runtime(runtime, precision):
    """`(runtime, precision)` checked, their defaults filled in."""
    runtime = check_choice(
        runtime or "tensorflow", "runtime", choices=EMBED_RUNTIMES
    )
    precision = check_choice(
        precision or "float32", "precision", choices=PRECISIONS
    )
    if runtime == "tensorflow" and precision != "float32":
        raise KerasElmoError(
            f"`precision` {precision} needs `runtime` onnx or litert; "
            "TensorFlow runs the biLM in float32.",
            "precision",
            received=precision,
        )
    return runtime, precision


def _resolved(source, weights, output_file, input_file, vocabulary):
    """The biLM source, once `output_file` was checked against every
    input: the local ones first (before a download), then every file the
    source reads."""
    from keras_elmo.loading import classify

    # The files named here (an options file, not a folder: the source
    # names the files it reads below, the output checked against each).
    given = [input_file, weights, vocabulary]
    if isinstance(source, (str, os.PathLike)) and os.path.isfile(source):
        given.append(source)
    local = [path for path in given if isinstance(path, (str, os.PathLike))]
    check_output_file(output_file, local, "output_file")
    resolved = classify(source, weights)
    check_output_file(output_file, local + resolved.inputs(), "output_file")
    return resolved


def source_vocabulary(source, vocabulary):
    """The vocabulary a word-input biLM reads (`vocabulary`, else the
    source's own); None for a biLM that reads characters, which is
    refused a `vocabulary`."""
    data = source.read()
    if not data.bilm.encoder.needs_vocabulary:
        if vocabulary is not None:
            raise KerasElmoError(
                f"`vocabulary` is for word-input biLMs; {source.description}"
                f" reads {data.bilm.token_encoder} and takes any token. "
                "Leave `vocabulary` out.",
                "vocabulary",
            )
        return None
    vocabulary = vocabulary if vocabulary is not None else data.vocabulary
    if vocabulary is None:
        raise KerasElmoError(
            f"{source.description} is a word-input biLM and no vocabulary "
            "was found for it (no vocab.txt beside its options.json); give "
            "the one it was trained with as `vocabulary`.",
            "vocabulary",
        )
    return vocabulary


def runtime_bilm(bilm, runtime, precision, verbose=1):
    """`bilm` itself (`runtime` "tensorflow"), or its export run by ONNX
    Runtime or LiteRT (the export takes a while: it says so with
    `verbose`)."""
    if runtime == "tensorflow":
        return bilm
    from elmo_core import runtime as runtimes
    from keras_elmo import export

    write = {"onnx": export.to_onnx, "litert": export.to_litert}[runtime]
    load = {"onnx": runtimes.ONNXBiLM, "litert": runtimes.LiteRTBiLM}
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, f"bilm{KINDS[runtime].suffix}")
        if verbose:
            print(
                f"embed: exporting the biLM to {runtime} ({precision}) to "
                "run it there; this can take a minute ...",
                file=sys.stderr,
                flush=True,
            )
        started = time.monotonic()
        write(bilm, path, precision=precision)
        if verbose:
            print(
                f"embed: exported in {time.monotonic() - started:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        # Both runtimes hold the model once loaded; the file can go.
        return load[runtime](path)

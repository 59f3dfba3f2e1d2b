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

    Lines are read by the one text path of the package (their normal
    form split by `tokenize`, as `keras_elmo.prepare` reads raw text);
    every line is checked (UTF-8, gzip) before any work, the output is
    written to `OUTPUT.partial` and renamed when complete. The layout is
    AllenNLP's `allennlp elmo` (`elmo_core.embedding_files.hdf5_layout`):
    dataset `str(i)` for line `i`, float32 `(num_layers + 1, n_i,
    2 * projection_dim)` (`"top"`, `"average"`: one layer), and
    `sentence_to_index`; for FASTA, the groups `per_residue` and
    `per_protein` keyed by record id, and `id_to_hash`. When the biLM's
    folder records the tokenisation of its corpus and `tokenize` reads
    the input another way (`whitespace` included), a note says so (on
    standard error, with `verbose`).

    Args:
        source: str. The biLM: anything `keras_elmo.load_bilm` takes (a
            pretrained name, a URL, a run or export folder, options with
            `weights`, ...), or an exported `.onnx` / `.tflite` file (run
            by `elmo_core.embedding_files.embed`, without Keras).
        input_file: str. One sentence a line (UTF-8, `.gz` allowed), or
            a protein FASTA file.
        output_file: str. The hdf5 file to write (never an input).
        weights: str or None. The hdf5 weights, with an options file as
            `source`.
        vocabulary: the vocabulary of a word-input biLM (path or list);
            default: the source's own. Refused for a biLM that reads
            characters.
        batch_size: int. Sentences a batch at most. Defaults to `256`.
        max_batch_tokens: int. Padded token positions a biLM call at
            most (a longer sentence goes alone). Defaults to `16384`.
        on_bad_line: `"error"` (default): a line that is not UTF-8 (a bad
            FASTA record) stops the run before any work, naming it;
            `"skip"` leaves it out (FASTA: listed in `bad_records`).
        output_layers: `"all"` (default), `"top"` or `"average"`.
        sentence_index: bool. Write `sentence_to_index` (the text of
            every sentence). Defaults to `True`.
        tokenize: `"whitespace"` (default: a line is one sentence, its
            tokens as written), `"spacy"` or `"moses"` (raw sentences;
            the `prepare` extra).
        language: str. The language code of `tokenize`'s rules. Defaults
            to `"en"`.
        input_format: `"lines"` or `"fasta"`; by the suffix of
            `input_file` when None (`.fasta`, `.fa`, `.faa`, `.fas`, also
            `.gz`).
        max_residues: int. FASTA: a longer record is bad. Defaults to
            `10000`.
        protein_vectors: FASTA: `"both"` (default), `"per-residue"` or
            `"per-protein"`.
        runtime: `"tensorflow"` (default), `"onnx"` or `"litert"`: the
            biLM exported first (a while at the original size) and run
            by that runtime.
        precision: with `runtime` onnx or litert, the precision of the
            export (default `"float32"`).
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
    reading = dict(
        batch_size=batch_size,
        max_batch_tokens=max_batch_tokens,
        on_bad_line=on_bad_line,
        output_layers=output_layers,
        sentence_index=sentence_index,
        tokenize=tokenize,
        language=language,
        input_format=input_format,
        max_residues=max_residues,
        protein_vectors=protein_vectors,
        verbose=check_verbose(verbose),
    )
    if runtime_dump.runtime_of(source) is not None:
        return runtime_dump.embed(
            source,
            input_file,
            output_file,
            weights,
            vocabulary,
            runtime=_exported_runtime(runtime),
            precision=precision,
            **reading,
        )
    from keras_elmo.corpus.bilm_dump import embed_file

    check_embed_settings(
        batch_size, max_batch_tokens, output_layers, input_file
    )
    runtime, precision = _check_runtime(runtime, precision)
    note_reading(source, tokenize, language, "embed", reading["verbose"])
    source = _resolved(source, weights, output_file, input_file, vocabulary)
    vocabulary = source_vocabulary(source, vocabulary)
    bilm = runtime_bilm(
        source.read().bilm, runtime, precision, reading["verbose"]
    )
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
    29
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


def _exported_runtime(runtime):
    """The `runtime` of an exported file: None, or its own kind (checked
    by `runtime_dump.open_model`); `"tensorflow"` is refused."""
    if runtime == "tensorflow":
        raise KerasElmoError(
            "`source` is an exported model file, which its own runtime "
            "runs (ONNX Runtime or LiteRT), not TensorFlow. Leave "
            "`runtime` out.",
            "runtime",
            received=runtime,
        )
    return runtime


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
            f"`precision` {precision} needs `runtime` 'onnx' or 'litert'; "
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

    given = [input_file, source, weights]
    if isinstance(vocabulary, (str, os.PathLike)):
        given.append(vocabulary)
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

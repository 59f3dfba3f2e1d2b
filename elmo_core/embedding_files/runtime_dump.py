"""An exported biLM file (`.onnx`, `.tflite`) run over text files, in the
hdf5 layouts of `bilm_dump`, without TensorFlow: what `keras-elmo embed`
and `dump-token-embeddings` run for a model file FILE.onnx|.tflite.

The layouts are those of `bilm_dump.embed_file` (dataset `str(i)`,
float32 `(num_layers + 1, n_i, 2 * projection_dim)` for line i) and
`dump_token_embeddings` (dataset `embedding`, `(num_tokens,
projection_dim)`); the token embedding of an exported model is the first
half of its layer 0 for a one-token sentence (layer 0 is `[e, e]`).
"""

import itertools
import os

import numpy as np

from elmo_core.embedding_files.hdf5_layout import write_embeddings
from elmo_core.embedding_files.hdf5_layout import write_token_embeddings
from elmo_core.errors import KerasElmoError
from elmo_core.formats.exported_file import KINDS

# File suffix -> the runtime that runs it.
RUNTIMES = {kind.suffix: kind.name for kind in KINDS.values()}


def runtime_of(path):
    """`"onnx"` or `"litert"` when `path` names an exported model file
    (by its suffix), else None."""
    if not isinstance(path, (str, os.PathLike)):
        return None
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    return RUNTIMES.get(suffix)


def open_model(model_file, runtime=None, precision=None, num_threads=None):
    """The exported model `model_file`, loaded by its runtime, after
    checking it against `runtime` / `precision` when they were given.

    Raises:
        KerasElmoError: the file is missing, of another runtime than
            `runtime`, or of another precision than `precision`.
    """
    from elmo_core import runtime as runtimes

    kind = runtime_of(model_file)
    if kind is None:
        raise KerasElmoError(
            "`model_file` is not an exported model file; expected a .onnx "
            "(keras-elmo export-onnx) or .tflite (export-litert) file.",
            "model_file",
            received=model_file,
        )
    if runtime not in (None, kind):
        raise KerasElmoError(
            f"`model_file` is a {kind} model but `runtime` is another; "
            f"leave `runtime` out, or give {kind!r}.",
            "runtime",
            received=runtime,
        )
    load = {"onnx": runtimes.ONNXBiLM, "litert": runtimes.LiteRTBiLM}[kind]
    model = load(model_file, num_threads=num_threads)
    if precision not in (None, model.precision):
        raise KerasElmoError(
            f"`model_file` was exported in {model.precision} but "
            "`precision` is another; leave `precision` out (a file has one "
            "precision), or export the biLM again in the one you want.",
            "precision",
            received=precision,
        )
    return model


def embed_file(model, input_file, output_file, batch_size, **options):
    """`keras_elmo.corpus.bilm_dump.embed_file` for an exported
    model; `options` (`verbose`, `on_bad_line`, `output_layers`,
    `sentence_index`, `max_batch_tokens`, `input_format`,
    `max_residues`, `protein_vectors`, `tokenize`, `language`) as there.

    Returns:
        The number of sentences written.
    """
    from elmo_core.files import check_output_file

    check_output_file(output_file, [input_file, model.path], "output_file")

    def layers_of(sentences):
        return np.stack(model(sentences)["layer_outputs"], axis=1)

    return write_embeddings(
        layers_of, input_file, output_file, batch_size, **options
    )


def dump_token_embeddings(
    model, vocab_file, output_file, batch_size, verbose=1
):
    """`bilm_dump.dump_token_embeddings` for an exported model.

    Returns:
        The number of tokens written.
    """
    from elmo_core.files import check_output_file

    check_output_file(output_file, [vocab_file, model.path], "output_file")

    def embed_tokens(words):
        while chunk := list(itertools.islice(words, batch_size)):
            outputs = model([[word] for word in chunk])
            yield outputs["token_embeddings"][:, 0]

    return write_token_embeddings(
        embed_tokens, vocab_file, output_file, model.projection_dim, verbose
    )

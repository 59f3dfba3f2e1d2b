"""What an export reads: the biLM, or the whole Keras model, that its
`model` argument names (any source `keras_elmo.load_bilm` takes, or the
object itself), its output checked against every file it reads before
any work."""

import os

from elmo_core.errors import KerasElmoError
from keras_elmo.loading import classify

# What `model` may be, in words, for messages.
MODEL_KINDS = (
    "a biLM source (a pretrained model name, a URL, a training run or "
    "export directory, an ELMoForManyLangs folder, a .keras file, or an "
    "options.json with `weights`)"
)


def is_source(model):
    """Whether `model` names a source (a path, a name or a URL; parsed
    options with their `weights`) rather than being the object."""
    return isinstance(model, (str, os.PathLike, dict))


def open_source(model, weights, output, check_output):
    """The `BiLMSource` of `model` (with `weights`, an options file's).

    `output` is checked by `check_output` (`elmo_core.files.
    check_output_file` or `check_output_directory`) against the files
    named here before anything is read or downloaded, then against
    every file the source reads."""
    named = [model, weights] if weights is not None else []
    check_output(
        output, [p for p in named if not isinstance(p, dict)], "output"
    )
    source = classify(model, weights, argument="model")
    check_output(output, source.inputs(), "output")
    return source


def exported_model(model, weights, output, check_output, whole=True):
    """`(value, source)`: what an export of `model` writes, a biLM or (a
    `.keras` file's, with `whole`) the whole Keras model, and its
    `BiLMSource` (None for an object, which is returned as it is)."""
    if not is_source(model):
        if weights is not None:
            raise KerasElmoError(
                "`weights` goes with an options file given as `model`; "
                "`model` is an object here. Drop `weights`.",
                "weights",
                received=weights,
            )
        check_output(output, (), "output")
        return model, None
    source = open_source(model, weights, output, check_output)
    if whole and source.kind == "keras":
        return source.load_model(), source
    return source.read().bilm, source

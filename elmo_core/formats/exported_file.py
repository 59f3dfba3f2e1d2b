"""The exported-file format: what `keras_elmo.export` writes into an ONNX
or LiteRT file and `elmo_core.runtime` reads back. NumPy only (no
TensorFlow), so that the runtime imports it.

An exported biLM is one function over character ids:

- input `INPUT_NAME`: int32 `(batch, time, 50)` (`batch_to_ids`), dynamic
  batch and time;
- outputs `layer_name(0)` ... `layer_name(L)`: float32 `(batch, time, 2 *
  projection_dim)`, the biLM layers (layer 0 is `[e, e]`, the token
  embedding twice); `MASK_NAME`: bool `(batch, time)`; and, only with a
  scalar mix, `MIX_NAME`: float32 `(batch, time, 2 * projection_dim)`.

Every file carries `metadata(...)` as JSON under the key `METADATA_KEY`:
the format, `FORMAT_VERSION`, the package version, the precision, the
input name, the biLM's sizes, the options of the export (its output names
among them) and the biLM's official options. `parse_metadata` is its
reader's check.
"""

import collections
import json

from elmo_core.characters import MAX_CHARACTERS_PER_TOKEN
from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_integer
from elmo_core.errors import check_strings
from elmo_core.version import __version__

METADATA_KEY = "keras_elmo"
# Bumped when the inputs, outputs or metadata of the exports change.
FORMAT_VERSION = 1
INPUT_NAME = "character_ids"
MASK_NAME = "mask"
MIX_NAME = "elmo"
# What a file holds (metadata `CONTENTS_KEY`; a biLM's files, written
# before whole models were, have no such entry): a biLM, or a whole Keras
# model (`elmo_core.formats.exported_model`). The runtime class of each
# is the format's title and this name (`ONNXBiLM`, `LiteRTModel`).
CONTENTS_KEY = "contents"
BILM = "bilm"
MODEL = "model"
RUNTIME_CLASSES = {BILM: "BiLM", MODEL: "Model"}

# One kind of exported file: `name` is the metadata's "format" and the
# runtime's name, `title` names it in messages, `command` writes it.
FileKind = collections.namedtuple(
    "FileKind", ["name", "title", "suffix", "command", "precisions"]
)
# float16 did not load in ONNX Runtime, so ONNX offers none.
ONNX = FileKind("onnx", "ONNX", ".onnx", "export-onnx", ("float32", "int8"))
LITERT = FileKind(
    "litert",
    "LiteRT",
    ".tflite",
    "export-litert",
    ("float32", "float16", "int8"),
)
KINDS = {kind.name: kind for kind in (ONNX, LITERT)}
# Every precision of some kind, in the order of the widest.
PRECISIONS = tuple(dict.fromkeys(LITERT.precisions + ONNX.precisions))


def layer_name(index):
    """The output name of biLM layer `index` (0 is the token layer)."""
    return f"layer_{index}"


def output_names(num_layers, has_mix):
    """The output names of a biLM with `num_layers` LSTM layers."""
    names = [layer_name(i) for i in range(num_layers + 1)]
    names.append(MASK_NAME)
    if has_mix:
        names.append(MIX_NAME)
    return names


def common_metadata(kind, precision):
    """The metadata entries every exported file has, whatever it holds."""
    return {
        "format": kind.name,
        "format_version": FORMAT_VERSION,
        "keras_elmo_version": __version__,
        "precision": precision,
    }


def metadata(
    kind, precision, num_layers, projection_dim, bilm_options, **options
):
    """The metadata dict of a biLM export (stored as `metadata_json`)."""
    return {
        **common_metadata(kind, precision),
        "input": INPUT_NAME,
        # LSTM layers per direction, as `BiLM.num_layers`; the outputs are
        # layer_0 ... layer_{num_layers}.
        "num_layers": num_layers,
        "projection_dim": projection_dim,
        "export_options": options,
        "bilm_options": bilm_options,
    }


def metadata_json(value):
    return json.dumps(value, sort_keys=True)


def parse_metadata(text, path, kind, contents=BILM):
    """The metadata dict of an exported file of `kind` holding `contents`
    (`BILM` or `MODEL`), checked (for a whole model, its own entries are
    checked by `elmo_core.formats.exported_model`)."""
    if text is None:
        raise KerasElmoError(
            f"{path} is a {kind.title} model without keras_elmo metadata; "
            f"it was not written by keras-elmo {kind.command} (nor "
            f"keras_elmo.export.to_{kind.name}). Export the biLM or the "
            f"model with keras-elmo {kind.command}."
        )
    try:
        info = json.loads(text)
    except (TypeError, ValueError):
        info = None
    if not isinstance(info, dict) or info.get("format") != kind.name:
        raise KerasElmoError(
            f"{path}: its keras_elmo metadata is damaged or of another "
            f"format (expected {kind.name!r}); export it again with "
            f"keras-elmo {kind.command}."
        )
    if info.get("format_version") != FORMAT_VERSION:
        raise KerasElmoError(
            f"{path} is in export format version "
            f"{info.get('format_version')} (keras-elmo "
            f"{info.get('keras_elmo_version')}); this keras-elmo reads "
            f"version {FORMAT_VERSION}. Export it again with this version, "
            "or install the version that wrote it."
        )
    _check_contents(info.get(CONTENTS_KEY, BILM), contents, path, kind)
    if contents == BILM:
        _check_metadata_values(info, path, kind.command)
    return info


def _check_contents(found, expected, path, kind):
    """Refuses a file that holds a biLM where a whole model is expected,
    or the reverse, naming the runtime class that opens it."""
    if found == expected:
        return
    if found not in RUNTIME_CLASSES:
        raise KerasElmoError(
            f"{path}: its keras_elmo metadata is damaged: its `{CONTENTS_KEY}`"
            " is neither a biLM nor a model. Export it again.",
            received=found,
        )
    what = "a biLM" if found == BILM else "a whole Keras model"
    raise KerasElmoError(
        f"{path} holds {what}; open it with elmo_core.runtime."
        f"{kind.title}{RUNTIME_CLASSES[found]}."
    )


def _check_metadata_values(info, path, command):
    """The values the runtime reads from the metadata, each of its kind."""
    try:
        for key in ("num_layers", "projection_dim"):
            check_integer(
                info.get(key), where=f"`{key}`", minimum=1, maximum=2**20
            )
        for key in ("precision", "input"):
            if not isinstance(info.get(key), str):
                raise KerasElmoError(
                    f"`{key}` must be a string.", received=info.get(key)
                )
        options = info.get("export_options")
        if not isinstance(options, dict):
            raise KerasElmoError(
                "`export_options` must be an object.", received=options
            )
        outputs = options.get("outputs", [])
        check_strings(outputs, where="`export_options.outputs`")
    except KerasElmoError as error:
        raise KerasElmoError(
            f"{path}: its keras_elmo metadata is damaged "
            f"({error.message.rstrip('.')}); export it again with "
            f"keras-elmo {command}.",
            received=error.received,
        ) from None


def fixed_batch(info, path):
    """The batch size a file takes (`export_options.batch_size`: 1 for a
    LiteRT file whose LSTMs run fused, which the runtime feeds a row at
    a time), or None for any; checked, as the file is untrusted."""
    size = info["export_options"].get("batch_size")
    if size is None:
        return None
    try:
        return check_integer(
            size, where="`export_options.batch_size`", minimum=1, maximum=1
        )
    except KerasElmoError as error:
        raise KerasElmoError(
            f"{path}: its keras_elmo metadata is damaged "
            f"({error.message.rstrip('.')}); export it again.",
            received=error.received,
        ) from None


def expected_signature(info):
    """`(inputs, outputs)` of the file that metadata `info` describes:
    each `{name: (dtype name, shape)}`, None for a dynamic size."""
    width = 2 * int(info["projection_dim"])
    layers = ("float32", (None, None, width))
    names = output_names(
        int(info["num_layers"]),
        MIX_NAME in info["export_options"].get("outputs", []),
    )
    outputs = {name: layers for name in names}
    outputs[MASK_NAME] = ("bool", (None, None))
    inputs = {info["input"]: ("int32", (None, None, MAX_CHARACTERS_PER_TOKEN))}
    return inputs, outputs


def _signature_problem(role, found, expected):
    """What differs between the `found` and `expected` tensors, or None."""
    if set(found) != set(expected):
        return (
            f"its {role}s are {sorted(found)[:10]}, expected {sorted(expected)}"
        )
    for name, (dtype, shape) in expected.items():
        found_dtype, found_shape = found[name]
        if found_dtype != dtype:
            return f"{role} {name!r} is {found_dtype}, expected {dtype}"
        if len(found_shape) != len(shape) or any(
            want is not None and have is not None and have != want
            for have, want in zip(found_shape, shape)
        ):
            shown = tuple("?" if n is None else n for n in shape)
            return (
                f"{role} {name!r} has shape {tuple(found_shape)}, expected "
                f"{shown}"
            )
    return None


def check_signature(path, info, inputs, outputs, kind, expected=None):
    """Checks the inputs and outputs a runtime found in a file of `kind`
    against those its metadata `info` declares (names, dtypes, ranks,
    fixed sizes), so that a graph carrying borrowed metadata is refused
    when it is opened, not at its first call.

    Args:
        inputs, outputs: `{name: (dtype name, shape)}` as the runtime
            reports them, None for a dynamic size.
        expected: `(inputs, outputs)` in that form, as the metadata
            declares them; defaults to a biLM's (`expected_signature`).
    """
    want_inputs, want_outputs = expected or expected_signature(info)
    problem = _signature_problem(
        "input", inputs, want_inputs
    ) or _signature_problem("output", outputs, want_outputs)
    if problem is not None:
        raise KerasElmoError(
            f"{path}: its {kind.title} graph does not match its keras_elmo "
            f"metadata ({problem}); it was not written by keras-elmo "
            f"{kind.command}, or was changed since. Export it again with "
            f"keras-elmo {kind.command}."
        )


def check_precision(precision, kind):
    """`precision`, once checked to be one that `kind` offers."""
    if not isinstance(precision, str) or precision not in kind.precisions:
        raise KerasElmoError(
            f"{kind.title} export: `precision` must be one of "
            f"{', '.join(kind.precisions)}.",
            "precision",
            received=precision,
        )
    return precision

"""A whole Keras model holding ELMo as one plain function, for the ONNX
and LiteRT converters: `ModelFunction`, the counterpart of
`portable.CharacterIdModel` (a biLM alone).

`model_graph.portable_model` rewrites the model (ids in place of string
tokens, frozen float32 biLMs); this module traces it as one `tf.function`
over named, flat inputs with a dict of named outputs, and writes the
metadata every exported whole model carries (`keras_elmo.formats.
exported_model`, which the runtime reads).
"""

import json

import keras
import tensorflow as tf

from elmo_core.errors import KerasElmoError
from elmo_core.formats import exported_model
from elmo_core.formats.exported_model import NAME_PATTERN
from keras_elmo.export.model_graph import named_inputs
from keras_elmo.export.model_graph import portable_model


def _check_names(inputs, outputs, fmt):
    """The model's input and output names, each plain and used once."""
    for role, names in (("input", inputs), ("output", outputs)):
        for name in names:
            if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
                raise KerasElmoError(
                    f"{fmt} export: the model's {role} name {name!r} is not "
                    "a plain name (a letter, then letters, digits or _; at "
                    "most 64); rename that keras.Input or output layer."
                )
    names = list(inputs) + list(outputs)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise KerasElmoError(
            f"{fmt} export: the model's inputs and outputs use the name "
            f"{repeated[0]!r} more than once; give each its own name."
        )


def _output_names(clone):
    """The names of the model's outputs, in `keras.tree.flatten` order of
    its output structure: a dict's keys (joined with `_` to the positions
    of nested lists: `layer_outputs_0`), else the output layers' names
    (numbered where one layer gives several)."""
    structure = clone.output
    if _structure(structure) == "dict":
        return [
            "_".join(str(key) for key in path)
            for path, _ in keras.tree.flatten_with_path(structure)
        ]
    names = list(clone.output_names)
    if len(set(names)) != len(names):
        names = [f"{n}_{i}" for i, n in enumerate(names)]
    return names


def _spec(x):
    shape = [None if d is None else int(d) for d in x.shape]
    return {"dtype": keras.backend.standardize_dtype(x.dtype), "shape": shape}


class _Untracked:
    """Holds a value out of sight of `tf.Module`'s tracking."""

    def __init__(self, value):
        self.value = value


class ModelFunction(tf.Module):
    """The rewritten model as `serve(*inputs)` -> `{output name: tensor}`.

    Args:
        model: a functional or Sequential `keras.Model` holding ELMo.
        fmt: str. The export's name, for messages.
        deduplicate_tokens: bool. Encode each distinct token of a batch
            once (ONNX `Unique`; LiteRT has no builtin for it).
        batch_size: int or None. A fixed batch size of every input
            (LiteRT's fused LSTM kernels need one), or None for the
            model's own.

    Attributes:
        input_names: list of str. `serve`'s arguments, in order.
        output_names: list of str. The keys of `serve`'s result.
        summary: dict. What the metadata says of the model (`metadata`
            takes it): `"inputs"`, a list of the input dicts of
            `exported_model` (name, kind, dtype, shape and, for word
            tokens, vocabulary) in the order of `serve`'s arguments;
            `"outputs"` (name, dtype, shape); `"structure"` and
            `"bilm_options"`. Plain values, held as JSON text (a
            `tf.Module` would wrap dicts and lists for tracking).
    """

    def __init__(self, model, fmt, deduplicate_tokens, batch_size=None):
        super().__init__()
        clone, hosts = portable_model(model, fmt, deduplicate_tokens)
        # Not tracked: the SavedModel that the LiteRT converter reads
        # then holds `serve` and the weights only, instead of also tracing
        # every layer's call for itself (a third of the export's time).
        self._model = _Untracked(clone)
        named = named_inputs(clone)
        self.input_names = [name for name, _ in named]
        self.output_names = _output_names(clone)
        _check_names(self.input_names, self.output_names, fmt)
        self._summary = json.dumps(_summary(model, clone, hosts, self))
        # Tracked as plain variables so that the converters see them.
        self.weights = [w.value for w in clone.weights]
        signature = [
            tf.TensorSpec(_batch_of(x.shape, batch_size), x.dtype, name=name)
            for name, x in named
        ]
        self.serve = tf.function(self._serve, input_signature=signature)

    @property
    def model(self):
        """The rewritten Keras model."""
        return self._model.value

    @property
    def summary(self):
        return json.loads(self._summary)

    def _serve(self, *tensors):
        named = dict(zip(self.input_names, tensors))
        structure = self.model.input
        if isinstance(structure, dict):
            inputs = {name: named[name] for name in structure}
        else:
            inputs = keras.tree.pack_sequence_as(
                structure, [named[n] for n in self.input_names]
            )
        outputs = keras.tree.flatten(self.model(inputs, training=False))
        return dict(zip(self.output_names, outputs))


def _batch_of(shape, batch_size):
    """`shape` with its first axis `batch_size`, if that is given."""
    if batch_size is None:
        return shape
    return (batch_size, *shape[1:])


def _summary(model, clone, hosts, function):
    from keras_elmo.formats.bilm_tf import config_to_options

    outputs = keras.tree.flatten(clone.output)
    bilms = {id(b): b for b in bilms_of(model)}.values()
    inputs = [
        _input(name, x, hosts.get(name)) for name, x in named_inputs(clone)
    ]
    # One input is taken as it is, even from a list of one (token lists
    # are lists too).
    taken = "single" if len(inputs) == 1 else _structure(clone.input)
    return {
        "inputs": inputs,
        "outputs": [
            dict(name=name, **_spec(x))
            for name, x in zip(function.output_names, outputs)
        ],
        "structure": {
            "inputs": taken,
            "outputs": _structure(clone.output),
        },
        "bilm_options": [config_to_options(b) for b in bilms],
    }


def _input(name, x, host):
    """The input dict of `exported_model` for input `name` (`x` its
    KerasTensor in the rewritten model; `host` its `HostInput`)."""
    spec = dict(name=name, **_spec(x))
    if host is None:
        return dict(spec, kind=exported_model.ARRAY)
    spec["kind"] = host.encoder
    if host.vocabulary is not None:
        spec["vocabulary"] = list(host.vocabulary)
    return spec


def _structure(structure):
    """How the runtime hands back a structure of tensors: `"single"`, a
    flat `"list"`, or a `"dict"` by name (any other nesting too)."""
    if not keras.tree.is_nested(structure):
        return "single"
    if isinstance(structure, (list, tuple)) and not any(
        keras.tree.is_nested(x) for x in structure
    ):
        return "list"
    return "dict"


def bilms_of(layer):
    """Every `BiLM` `layer` holds, an ELMoEmbedding's included."""
    from keras_elmo.layers.bilm import BiLM

    if isinstance(layer, BiLM):
        yield layer
        return
    inner = getattr(layer, "bilm", None)
    if inner is not None:
        yield inner
    for child in getattr(layer, "layers", None) or []:
        yield from bilms_of(child)


def metadata(summary, kind, precision, **options):
    """The metadata dict of an export (`ModelFunction.summary()`)."""
    return exported_model.metadata(kind, precision, **summary, **options)


def axis_names(summary):
    """`{input or output name: axis names}`: `batch` on the first axis of
    each, `time` on the second of the token inputs; the other dynamic
    axes stay unnamed (nothing says which of them is the time)."""
    names = {}
    for spec in summary["inputs"] + summary["outputs"]:
        axes = [None] * len(spec["shape"])
        axes[0] = "batch"
        if spec.get("kind", exported_model.ARRAY) != exported_model.ARRAY:
            axes[1] = "time"
        names[spec["name"]] = tuple(axes)
    return names


def is_whole_model(value, scalar_mix, fmt):
    """True for a `keras.Model` (exported whole), False for a biLM
    (checked with `portable.check_bilm`); refuses anything else."""
    from keras_elmo.export import portable

    if not isinstance(value, keras.Model):
        portable.check_bilm(value, fmt)
        return False
    if scalar_mix is not None:
        raise KerasElmoError(
            f"{fmt} export: `scalar_mix` adds a mix to a biLM's export; a "
            "whole model's ELMoEmbedding holds its own mixes. Drop it.",
            "scalar_mix",
        )
    return True

"""A whole Keras model that holds ELMo, rewritten for the ONNX and LiteRT
converters (`keras_elmo.export.model_function` traces the result).

Neither converter can take the model as it is: string tokens need
`tf.strings` ops (no ONNX or builtin LiteRT equivalent), and the biLM
inside must be traced as the biLM export traces it (a frozen float32
copy, stateless, with or without distinct-token deduplication). So the
model is cloned (`keras.models.clone_model`, its own layers reused, so
the trained weights are the ones exported) with two changes:

- every string input that an `ELMoEmbedding` (or a `BiLM`) reads becomes
  an integer input of the ids that layer computes from strings: character
  ids `(batch, time, 50)` for a character biLM, word ids `(batch, time)`
  for a word-input biLM (its vocabulary travels in the file). The
  runtime (`elmo_core.runtime.ONNXModel`, `LiteRTModel`) computes them
  from token lists with NumPy, as `ELMoEmbedding` does in the graph;
- every `ELMoEmbedding` and `BiLM` is replaced by a copy around a frozen
  float32 copy of its biLM (`frozen_bilm`), its mixes' weights copied.

Keras records the padding mask of string tokens (`ELMoEmbedding.
compute_mask`: token != "") as an operation of the model's graph; on ids
it becomes the biLM's token mask rule. Any other layer or operation that
reads a string input is refused by name: the export could not compute it.

Supported: functional models and `keras.Sequential` models with ELMo at
their top level. A subclassed model (its graph is Python code) or ELMo
inside a nested model is refused with what to do instead.
"""

import keras

from elmo_core.errors import KerasElmoError
from keras_elmo.export.frozen_bilm import frozen_bilm
from keras_elmo.layers.bilm import BiLM
from keras_elmo.layers.elmo_embedding import ELMoEmbedding

# The token encoders whose string -> id rules the runtime has (NumPy):
# `elmo_core.characters` and a word vocabulary.
HOST_ENCODERS = ("characters", "words")
_ELMO_LAYERS = (ELMoEmbedding, BiLM)


class HostInput:
    """A string input of the model as the exported file takes it: the ids
    `encoder` (of `bilm`, a biLM that reads it) computes from tokens, with
    the `vocabulary` of a word-input biLM."""

    def __init__(self, name, bilm, vocabulary):
        self.name = name
        self.bilm = bilm
        self.encoder = bilm.encoder.name
        self.vocabulary = vocabulary

    def same_as(self, other):
        return (
            self.encoder == other.encoder
            and self.vocabulary == other.vocabulary
        )


def _functional(model, fmt):
    """`model` as a functional model, or a clear refusal."""
    if isinstance(model, keras.Sequential):
        if not model.built or not model.inputs:
            raise KerasElmoError(
                f"{fmt} export: this Sequential model has no input yet; "
                "start it with keras.Input(shape, dtype) (or build it) "
                "before exporting."
            )
        inputs, outputs = model.inputs, model.outputs
        return keras.Model(
            inputs[0] if len(inputs) == 1 else inputs,
            outputs[0] if len(outputs) == 1 else outputs,
            name=model.name,
        )
    if not _is_functional(model):
        raise KerasElmoError(
            f"{fmt} export of a whole model needs a functional model "
            "(keras.Model(inputs, outputs)) or a keras.Sequential; this "
            f"is a subclassed {type(model).__name__}, whose graph is Python "
            "code the export cannot rewrite. Build the same layers as a "
            "functional model (inputs = keras.Input(...)), or export its "
            "biLM alone."
        )
    return model


def _is_functional(model):
    try:
        # A subclassed model has no graph input or output.
        model.input  # noqa: B018
        model.output  # noqa: B018
    except (AttributeError, ValueError):
        return False
    return hasattr(model, "operations")


def _holds_elmo(layer):
    if isinstance(layer, _ELMO_LAYERS):
        return True
    return any(_holds_elmo(x) for x in getattr(layer, "layers", None) or [])


def named_inputs(model):
    """`[(name, KerasTensor)]` of the model's inputs, in order: a dict
    input's keys, else the inputs' names."""
    structure = model.input
    if isinstance(structure, dict):
        return list(structure.items())
    return [(x.name, x) for x in keras.tree.flatten(structure)]


def _check_input_structure(model, fmt):
    """One input, a flat list or a flat dict of them (the exported file
    takes its inputs by name)."""
    structure = model.input
    values = structure.values() if isinstance(structure, dict) else structure
    if keras.tree.is_nested(structure) and any(
        keras.tree.is_nested(x) for x in values
    ):
        raise KerasElmoError(
            f"{fmt} export: the model takes nested inputs; the exported "
            "file takes one input, a list or a dict of them. Flatten the "
            "model's inputs."
        )


def _structured(model, tensors):
    """`tensors` (`{name: tensor}`) in the structure of `model.input`."""
    structure = model.input
    if isinstance(structure, dict):
        return {name: tensors[name] for name in structure}
    flat = [tensors[x.name] for x in keras.tree.flatten(structure)]
    return keras.tree.pack_sequence_as(structure, flat)


def _is_string(x):
    return isinstance(x, keras.KerasTensor) and "string" in str(x.dtype)


def _is_string_mask(operation, args):
    """Whether `operation(*args)` is the padding mask of string tokens
    (`token != ""`), as `ELMoEmbedding.compute_mask` records it."""
    return type(operation).__name__ == "NotEqual" and any(
        isinstance(a, str) and a == "" for a in args
    )


def _tensors(args, kwargs):
    return [
        x
        for x in keras.tree.flatten((list(args), dict(kwargs)))
        if isinstance(x, keras.KerasTensor)
    ]


def _refuse_reader(operation, name, fmt):
    kind = type(operation).__name__
    raise KerasElmoError(
        f"{fmt} export: {kind} {getattr(operation, 'name', '')!r} reads the "
        f"string input {name!r}, and only ELMoEmbedding (or a BiLM) may: "
        "the exported file takes the ids ELMo computes from the tokens "
        "(the runtime computes them without TensorFlow), not the strings. "
        "Give that layer its own numeric input (e.g. word ids computed "
        "beside the model)."
    )


def _check_not_nested(model, fmt):
    """ELMo at the top level of the model, not inside a model in it."""
    for layer in model.layers:
        if isinstance(layer, keras.Model) and _holds_elmo(layer):
            raise KerasElmoError(
                f"{fmt} export: the model {layer.name!r} inside the exported "
                "model holds ELMo; the export rewrites ELMo only at the top "
                "level of the model. Call its layers on the outer model's "
                "inputs instead of nesting the model."
            )


def _host_inputs(model, fmt):
    """`{name: HostInput}` of the string inputs, found by running the
    model's graph once on copies of its inputs (`clone_model` with its
    own layers) and seeing which layer reads each."""
    inputs = named_inputs(model)
    copies = {
        name: keras.Input(batch_shape=x.shape, dtype=x.dtype, name=x.name)
        for name, x in inputs
    }
    strings = {id(x): name for name, x in copies.items() if _is_string(x)}
    found = {}

    def call(operation, *args, **kwargs):
        for x in _tensors(args, kwargs):
            name = strings.get(id(x))
            if name is None:
                if _is_string(x) and isinstance(operation, _ELMO_LAYERS):
                    raise KerasElmoError(
                        f"{fmt} export: {operation.name!r} reads strings "
                        "computed inside the model; the export takes "
                        "ELMo's string tokens only straight from a model "
                        "input (keras.Input(shape=(None,), dtype='string'))."
                    )
                continue
            if _is_string_mask(operation, args):
                continue
            if not isinstance(operation, _ELMO_LAYERS):
                _refuse_reader(operation, name, fmt)
            _add_reader(found, name, operation, fmt)
        return operation(*args, **kwargs)

    keras.models.clone_model(
        model,
        input_tensors=_structured(model, copies),
        clone_function=lambda layer: layer,
        call_function=call,
    )
    unread = [n for n in strings.values() if n not in found]
    if unread:
        raise KerasElmoError(
            f"{fmt} export: the string input {unread[0]!r} is read by no "
            "ELMoEmbedding; the exported file takes numbers only. Remove it "
            "from the model's inputs."
        )
    return found


def _add_reader(found, name, layer, fmt):
    """Records that ELMo `layer` reads string input `name`, checked."""
    bilm = layer.bilm if isinstance(layer, ELMoEmbedding) else layer
    if bilm.encoder.name not in HOST_ENCODERS:
        raise KerasElmoError(
            f"{fmt} export: {layer.name!r} reads string tokens with a "
            f"{bilm.encoder.name!r} biLM, whose ids the runtime cannot "
            f"compute; it can for {' and '.join(HOST_ENCODERS)} biLMs. "
            "Feed that layer ids instead (an integer keras.Input)."
        )
    vocabulary = getattr(layer, "vocabulary", None)
    if bilm.encoder.needs_vocabulary and vocabulary is None:
        raise KerasElmoError(
            f"{fmt} export: {layer.name!r} reads string tokens with a "
            "word-input biLM but holds no vocabulary; build it with "
            "ELMoEmbedding(bilm, vocabulary=...)."
        )
    host = HostInput(name, bilm, vocabulary)
    if name in found and not found[name].same_as(host):
        raise KerasElmoError(
            f"{fmt} export: the string input {name!r} is read by biLMs that "
            "compute different ids from it (characters and words, or two "
            "vocabularies); give each its own string input."
        )
    found.setdefault(name, host)


def _frozen_copies(deduplicate_tokens):
    """The `clone_function`: ELMo layers -> copies around frozen float32
    biLMs (one copy per distinct biLM), other layers as they are."""
    bilms = {}

    def frozen(bilm):
        if id(bilm) not in bilms:
            # An argument of the token encoders that read characters.
            options = {}
            if "deduplicate_tokens" in bilm.get_config():
                options["deduplicate_tokens"] = deduplicate_tokens
            bilms[id(bilm)] = frozen_bilm(bilm, **options)
        return bilms[id(bilm)]

    def copy(layer):
        if isinstance(layer, BiLM):
            return frozen(layer)
        if isinstance(layer, ELMoEmbedding):
            return _frozen_embedding(layer, frozen(layer.bilm))
        return layer

    return copy


def _frozen_embedding(layer, bilm):
    """A built float32 `ELMoEmbedding` around `bilm`, with `layer`'s
    mixes (no vocabulary: the copy reads ids)."""
    config = layer.get_config()
    for key in ("bilm", "vocabulary", "name", "dtype", "trainable"):
        config.pop(key, None)
    config["fine_tune"] = False
    copy = ELMoEmbedding(bilm, name=layer.name, dtype="float32", **config)
    copy.build((None, None, *bilm.encoder.input_shape))
    for mine, theirs in zip(copy.scalar_mixes, layer.scalar_mixes):
        mine.set_weights([w.numpy() for w in theirs.weights])
    return copy


def _check_model(model, fmt):
    """What the rewrite needs of a functional model: ELMo in it, at its
    top level, and flat inputs."""
    if not _holds_elmo(model):
        raise KerasElmoError(
            f"{fmt} export of a whole model: {model.name!r} holds no "
            "ELMoEmbedding or BiLM; export it with Keras itself "
            "(model.export)."
        )
    _check_input_structure(model, fmt)
    _check_not_nested(model, fmt)


def _new_input(x, host):
    """The input of the clone in place of `x`: the integer ids of a host
    input, else a copy of `x`."""
    if host is None:
        return keras.Input(batch_shape=x.shape, dtype=x.dtype, name=x.name)
    shape = (*x.shape, *host.bilm.encoder.input_shape)
    return keras.Input(batch_shape=shape, dtype="int32", name=x.name)


def _clone_on_ids(model, hosts, deduplicate_tokens, fmt):
    """The functional clone of `model` over the ids of its `hosts`, with
    frozen copies of its ELMo layers and the string mask on ids."""
    inputs = {
        name: _new_input(x, hosts.get(name)) for name, x in named_inputs(model)
    }
    masks = {id(inputs[name]): host for name, host in hosts.items()}

    def call(operation, *args, **kwargs):
        ids = [x for x in _tensors(args, kwargs) if id(x) in masks]
        if not ids or isinstance(operation, _ELMO_LAYERS):
            return operation(*args, **kwargs)
        if _is_string_mask(operation, args):
            return masks[id(ids[0])].bilm.encoder.mask(ids[0])
        _refuse_reader(operation, masks[id(ids[0])].name, fmt)

    return keras.models.clone_model(
        model,
        input_tensors=_structured(model, inputs),
        clone_function=_frozen_copies(bool(deduplicate_tokens)),
        call_function=call,
    )


def portable_model(model, fmt, deduplicate_tokens):
    """The model as the converters can trace it, and its host inputs.

    Args:
        model: a functional or Sequential `keras.Model` holding ELMo.
        fmt: str. The export's name, for messages.
        deduplicate_tokens: bool. The frozen biLMs' deduplication.

    Returns:
        `(clone, hosts)`: a functional model over integer ids in place of
        the string inputs (same names and structure), and `{name:
        HostInput}` of those inputs.
    """
    model = _functional(model, fmt)
    _check_model(model, fmt)
    hosts = _host_inputs(model, fmt)
    return _clone_on_ids(model, hosts, deduplicate_tokens, fmt), hosts

"""`ExportedModel`, what `ONNXModel` and `LiteRTModel` share: a whole
Keras model holding ELMo (a tagger, a classifier), exported with
`keras_elmo.export.export_onnx(model, ...)` or `export_litert(model,
...)`, run on words without TensorFlow.

The file takes ids where the Keras model took string tokens (see
`elmo_core.formats.exported_model`); here each input is turned back into
what the file takes, with NumPy, by the same rules as `ELMoEmbedding` in
the graph: token lists (or a NumPy string array, `""` for padding) become
character ids (`elmo_core.characters.batch_to_ids`) or a word-input
biLM's word ids (its vocabulary, from the file); the ids themselves are
taken too; other inputs are checked against the file's dtype and shape.
"""

import numpy as np

from elmo_core.errors import KerasElmoError
from elmo_core.formats.exported_model import ARRAY
from elmo_core.formats.exported_model import CHARACTERS
from elmo_core.formats.exported_model import expected_signature
from elmo_core.ids.host_ids import host_inputs
from elmo_core.ids.vocabulary import check_vocabulary
from elmo_core.runtime.exported_bilm import CharacterInputs
from elmo_core.runtime.exported_bilm import character_ids
from elmo_core.runtime.runtime_file import RuntimeFile


class WordInputs:
    """The input side of a word-input biLM, as `host_inputs` asks a
    biLM's token encoder for it."""

    name = "words"
    input_shape = ()
    needs_vocabulary = True

    def batch_to_inputs(self, sentences, vocabulary):
        return vocabulary.batch_to_ids(sentences)


class ModelInput:
    """One input of an exported model: turns what the caller gives into
    the array the file takes (`spec`: the input's metadata entry)."""

    def __init__(self, spec, path):
        self.name = spec["name"]
        self.kind = spec["kind"]
        self.dtype = np.dtype(spec["dtype"])
        self.shape = tuple(spec["shape"])
        self.vocabulary = None
        if "vocabulary" in spec:
            self.vocabulary = check_vocabulary(
                spec["vocabulary"],
                None,
                source=f"{path}: the vocabulary of input {self.name!r}",
            )

    def __call__(self, value):
        if self.kind == ARRAY:
            return self._array(value)
        if not _is_ids(value):
            encoder = CharacterInputs() if self.kind == CHARACTERS else None
            ids = host_inputs(encoder or WordInputs(), value, self.vocabulary)
            return ids.astype(np.int32, copy=False)
        if self.kind == CHARACTERS:
            return character_ids(value)
        return self._word_ids(value)

    def _word_ids(self, value):
        ids = self._array(value)
        if ids.size and (ids.min() < 0 or ids.max() > len(self.vocabulary)):
            raise KerasElmoError(
                f"input {self.name!r}: word ids must lie in 0.."
                f"{len(self.vocabulary)} (vocabulary line + 1, 0 for "
                f"padding); these go from {ids.min()} to {ids.max()}. Pass "
                "the token lists instead: the model looks them up."
            )
        return ids

    def _array(self, value):
        array = np.asarray(value)
        if not _castable(array.dtype, self.dtype):
            raise KerasElmoError(
                f"input {self.name!r} takes {self.dtype.name} of shape "
                f"{_shown(self.shape)}{_tokens_hint(self.kind)}, not "
                f"{array.dtype}."
            )
        if array.ndim != len(self.shape) or any(
            want is not None and have != want
            for have, want in zip(array.shape, self.shape)
        ):
            raise KerasElmoError(
                f"input {self.name!r} takes shape {_shown(self.shape)}, "
                f"not {array.shape}."
            )
        return array.astype(self.dtype, copy=False)


def _is_ids(value):
    """Ids (an integer array) rather than tokens (anything else, which
    `host_inputs` reads or refuses clearly)."""
    return isinstance(value, np.ndarray) and value.dtype.kind in "iu"


def _castable(have, want):
    """Whether values of dtype `have` are taken as `want` (integers as
    any integer or float, floats as floats, booleans as booleans)."""
    if want.kind == "b":
        return have.kind == "b"
    if want.kind in "iu":
        return have.kind in "iu"
    return have.kind in "iuf"


def _tokens_hint(kind):
    return "" if kind == ARRAY else " (or token lists, which it converts)"


def _shown(shape):
    return "(" + ", ".join("?" if n is None else str(n) for n in shape) + ")"


class ExportedModel(RuntimeFile):
    """What `ONNXModel` and `LiteRTModel` share: the file (`RuntimeFile`),
    the inputs and outputs read from the metadata, the call and the repr.

    An exported model takes what the Keras model takes, by input name,
    with token lists (or NumPy string arrays, `""` for padding) where the
    model took string tokens: it computes their ids with NumPy as
    `ELMoEmbedding` does in the graph. It returns the model's outputs as
    NumPy arrays, in the model's structure (one array, a list or a dict).

    Call arguments:
        inputs: a dict `{input name: value}`; for a model of one input,
            the value itself; for a model of a list of inputs, a list.

    Returns:
        The model's outputs.

    Attributes:
        metadata: dict. The file's metadata (inputs, outputs, options).
        input_names, output_names: lists of str.
        precision: str.

    A subclass opens the file with its runtime (`RuntimeFile._open`) and
    runs one batch in `_run`.
    """

    def _expected(self):
        return (
            f"a {self.kind.suffix} file written by keras_elmo.export."
            f"export_{self.kind.name}(model, ...)"
        )

    def _signature(self, metadata):
        return expected_signature(metadata)

    def _read_metadata(self, path, metadata):
        self.path = path
        self.metadata = metadata
        self.precision = metadata["precision"]
        self.inputs = [ModelInput(spec, path) for spec in metadata["inputs"]]
        self.outputs = metadata["outputs"]
        self.input_names = [x.name for x in self.inputs]
        self.output_names = [spec["name"] for spec in self.outputs]
        self.structure = metadata["structure"]

    def _run(self, feeds):
        """`{output name: array}` for `{input name: array}`."""
        raise NotImplementedError

    def __call__(self, inputs):
        values = self._by_input(inputs)
        feeds = {x.name: x(value) for x, value in zip(self.inputs, values)}
        batch = self._batch_size(feeds)
        empty = self._empty_outputs(feeds, batch)
        named = empty if empty is not None else self._call(feeds)
        values = [named[name] for name in self.output_names]
        if self.structure["outputs"] == "dict":
            return dict(zip(self.output_names, values))
        if self.structure["outputs"] == "list":
            return values
        return values[0]

    def _by_input(self, inputs):
        """The value of each input, in order, from what the caller gave:
        a dict by input name, a list for a model of a list of inputs, or
        the value itself for a model of one input."""
        names = self.input_names
        if isinstance(inputs, dict):
            missing = [n for n in names if n not in inputs]
            extra = sorted(str(k) for k in inputs if k not in names)
            if missing or extra:
                raise KerasElmoError(
                    f"The model takes the inputs {names}; missing "
                    f"{missing}, unknown {extra}.",
                    received=sorted(map(str, inputs)),
                )
            return [inputs[n] for n in names]
        if self.structure["inputs"] == "single":
            return [inputs]
        if (
            self.structure["inputs"] == "list"
            and isinstance(inputs, (list, tuple))
            and len(inputs) == len(names)
        ):
            return list(inputs)
        raise KerasElmoError(
            f"The model takes {len(names)} inputs, {names}: pass a dict "
            "{name: value}.",
            received=inputs,
        )

    def _batch_size(self, feeds):
        sizes = {name: x.shape[0] for name, x in feeds.items()}
        if len(set(sizes.values())) > 1:
            raise KerasElmoError(
                "The inputs must have the same batch size (rows); these "
                f"have {sizes}."
            )
        return next(iter(sizes.values()))

    def _time(self, feeds):
        """The number of positions of a batch: the token inputs', else
        the second axis of the first input that has one (0 without)."""
        ranked = sorted(self.inputs, key=lambda x: x.kind == ARRAY)
        times = [
            feeds[x.name].shape[1] for x in ranked if feeds[x.name].ndim > 1
        ]
        return times[0] if times else 0

    def _empty_outputs(self, feeds, batch):
        """The outputs of a batch with an empty input (no rows, no token
        positions), without calling the model: the runtimes fail on such
        batches (the LiteRT interpreter may crash). Empty arrays of each
        output's shape, its first axis the batch and a dynamic second
        axis the time. None for a batch without an empty input."""
        if all(x.size for x in feeds.values()):
            return None
        time = self._time(feeds)
        named = {}
        for spec in self.outputs:
            shape = [batch, *spec["shape"][1:]]
            if len(shape) > 1 and shape[1] is None:
                shape[1] = time
            if 0 not in shape or None in shape:
                raise KerasElmoError(
                    f"The batch has no tokens, and the model's output "
                    f"{spec['name']!r} (shape {_shown(spec['shape'])}) is "
                    "not one per token; give at least one token."
                )
            named[spec["name"]] = np.zeros(shape, spec["dtype"])
        return named

    def _call(self, feeds):
        try:
            return self._run(feeds)
        except Exception as error:  # each runtime raises its own types
            shapes = {name: x.shape for name, x in feeds.items()}
            raise KerasElmoError(
                f"{self.path}: the model failed on inputs of shapes "
                f"{shapes} ({str(error).strip()[:300]}). Check that the "
                "inputs belong together (the same sentences, padded to "
                "the same length)."
            ) from None

    def __repr__(self):
        return (
            f"{type(self).__name__}({self.path!r}, "
            f"precision={self.precision!r}, inputs={self.input_names}, "
            f"outputs={self.output_names})"
        )

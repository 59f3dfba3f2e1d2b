"""`ExportedBiLM`, what the runtime wrappers share: the file and input
checks, the attributes read from the metadata and the output dict (NumPy
only). The file format itself is `elmo_core.formats.exported_file`."""

import numpy as np

from elmo_core.characters import MAX_CHARACTER_ID
from elmo_core.characters import MAX_CHARACTERS_PER_TOKEN
from elmo_core.characters import batch_to_ids
from elmo_core.errors import Described
from elmo_core.errors import KerasElmoError
from elmo_core.errors import tensor
from elmo_core.formats.exported_file import MASK_NAME
from elmo_core.formats.exported_file import MIX_NAME
from elmo_core.formats.exported_file import layer_name
from elmo_core.runtime.runtime_file import RuntimeFile


class CharacterInputs:
    """The input side of a character biLM, as `embed_file` asks a BiLM's
    token encoder for it (`bilm.encoder`)."""

    name = "characters"
    input_shape = (MAX_CHARACTERS_PER_TOKEN,)
    needs_vocabulary = False

    def batch_to_inputs(self, sentences, vocabulary=None):
        return batch_to_ids(sentences)


def character_ids(inputs):
    """int32 character ids `(batch, time, 50)` from token lists or ids."""
    if isinstance(inputs, np.ndarray) and inputs.dtype.kind in "iu":
        ids = inputs
        if ids.ndim != 3 or ids.shape[-1] != MAX_CHARACTERS_PER_TOKEN:
            raise KerasElmoError(
                "Character ids must have shape (batch, time, "
                f"{MAX_CHARACTERS_PER_TOKEN}). "
                "elmo_core.runtime.batch_to_ids(list_of_token_lists) "
                "builds them, or pass the token lists themselves.",
                received=tensor(ids.dtype, ids.shape),
            )
        if ids.size and (ids.min() < 0 or ids.max() > MAX_CHARACTER_ID):
            found = f"values from {ids.min()} to {ids.max()}"
            raise KerasElmoError(
                f"Character ids must lie in 0..{MAX_CHARACTER_ID}. Build them "
                "with elmo_core.runtime.batch_to_ids.",
                received=Described(found),
            )
        return ids.astype(np.int32, copy=False)
    if hasattr(inputs, "dtype") and hasattr(inputs, "shape"):
        raise KerasElmoError(
            "Character ids must be an integer array (int32) of shape "
            f"(batch, time, {MAX_CHARACTERS_PER_TOKEN}). Build them with "
            "elmo_core.runtime.batch_to_ids, or pass the token lists.",
            received=tensor(inputs.dtype, inputs.shape),
        )
    return batch_to_ids(inputs)


def empty_outputs(ids, metadata):
    """The named outputs for a batch without tokens (no model call: LiteRT
    cannot return empty outputs; ONNX files answer such batches in the
    graph since this release, earlier ones failed on them)."""
    batch, time = ids.shape[:2]
    width = 2 * int(metadata["projection_dim"])
    named = {
        name: np.zeros((batch, time, width), np.float32)
        for name in metadata["export_options"]["outputs"]
    }
    named[MASK_NAME] = np.zeros((batch, time), bool)
    return named


def bilm_outputs(named, num_layers, projection_dim):
    """The `BiLM` output dict from the named outputs of an exported model
    (layer 0 is `[e, e]`, so the token embeddings are its first half)."""
    layers = [named[layer_name(i)] for i in range(num_layers + 1)]
    outputs = {
        "layer_outputs": layers,
        "token_embeddings": layers[0][..., :projection_dim],
        "mask": named[MASK_NAME].astype(bool, copy=False),
    }
    if MIX_NAME in named:
        outputs["elmo"] = named[MIX_NAME]
    return outputs


class ExportedBiLM(RuntimeFile):
    """What `ONNXBiLM` and `LiteRTBiLM` share: the file (`RuntimeFile`),
    the attributes read from the metadata, the call and the repr.

    An exported biLM takes what `keras_elmo.layers.BiLM` takes (character
    ids, or token lists, which it converts with
    `elmo_core.runtime.batch_to_ids`) and returns the same dict, as NumPy
    arrays. Stateless: every sentence starts from a zero state.

    Call arguments:
        inputs: list of token lists, or int array `(batch, time, 50)`.

    Returns:
        A dict with `"layer_outputs"` (`num_layers + 1` float32 arrays
        `(batch, time, 2 * projection_dim)`), `"token_embeddings"`
        `(batch, time, projection_dim)`, `"mask"` bool `(batch, time)`,
        and `"elmo"` when the export has a scalar mix.

    Attributes:
        metadata: dict. The options the file was exported with.
        num_layers, projection_dim, precision: from the metadata.

    A subclass opens the file with its runtime (`RuntimeFile._open`) and
    runs one batch of ids in `_run`.
    """

    stateful = False
    encoder = CharacterInputs()

    def _expected(self):
        return (
            f"a {self.kind.suffix} file written by keras-elmo "
            f"{self.kind.command}"
        )

    def _read_metadata(self, path, metadata):
        self.path = path
        self.metadata = metadata
        self.num_layers = int(metadata["num_layers"])
        self.projection_dim = int(metadata["projection_dim"])
        self.precision = metadata["precision"]
        self._input = metadata["input"]

    def _run(self, ids):
        """`{output name: array}` for a batch with tokens."""
        raise NotImplementedError

    def __call__(self, inputs):
        ids = character_ids(inputs)
        if ids.size == 0:
            named = empty_outputs(ids, self.metadata)
        else:
            named = self._run(ids)
        return bilm_outputs(named, self.num_layers, self.projection_dim)

    def __repr__(self):
        return (
            f"{type(self).__name__}({self.path!r}, "
            f"precision={self.precision!r}, num_layers={self.num_layers}, "
            f"projection_dim={self.projection_dim})"
        )

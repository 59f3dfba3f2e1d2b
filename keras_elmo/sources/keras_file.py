"""`KerasFile`: a `.keras` file holding one `BiLM`."""

import os

from keras_elmo.errors import BiLMSourceError
from keras_elmo.errors import WeightFileError
from keras_elmo.sources.bilm_data import BiLMData
from keras_elmo.sources.bilm_source import BiLMSource
from keras_elmo.sources.bilm_source import real_files


class KerasFile(BiLMSource):
    """A `.keras` file (`keras.Model.save`) whose model holds exactly one
    `BiLM` (at any depth, an `ELMoEmbedding`'s included).

    Args:
        path: str. The file.
    """

    kind = "keras"
    summary = "a .keras file holding one BiLM"

    def __init__(self, path):
        super().__init__(f"the Keras file {path}")
        self.path = path

    @classmethod
    def matches(cls, source):
        # A regular file: a pipe or device so named is refused by kind.
        return source.endswith(".keras") and os.path.isfile(source)

    def inputs(self):
        return real_files(self.path)

    def _read(self):
        import keras

        from keras_elmo.layers.bilm import BiLM

        try:
            model = keras.saving.load_model(self.path)
        except (OSError, ValueError, TypeError) as error:
            raise WeightFileError(
                f"Could not load {self.path} as a Keras model file: {error}"
            ) from None
        found = [x for x in _layers_of(model) if isinstance(x, BiLM)]
        if len(found) != 1:
            raise BiLMSourceError(
                f"{self.description}: the model holds {len(found)} BiLM "
                "layers; a .keras source must hold exactly one."
            )
        return BiLMData(found[0], description=self.description)


def _layers_of(layer):
    """`layer` and every layer it holds (a BiLM as an `ELMoEmbedding`'s
    `bilm` too), depth first."""
    yield layer
    children = list(getattr(layer, "layers", None) or [])
    inner = getattr(layer, "bilm", None)
    if inner is not None:
        children.append(inner)
    for child in children:
        yield from _layers_of(child)

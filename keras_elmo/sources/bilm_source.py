"""`BiLMSource`: the contract every kind of biLM source follows."""

import os

from keras_elmo.errors import KerasElmoError


class BiLMSource:
    """Base class of the biLM source kinds (like keras-hub's
    `PresetLoader`): where a biLM's weights are, and how to read them.

    `keras_elmo.loading.classify` picks the kind (trying their `matches`
    in its order) and builds it; each kind is one small subclass in one
    file of `keras_elmo.sources`.

    Class attributes every kind sets:
        kind: str. The format its files are read as, in the one vocabulary
            of kinds shared with `keras_elmo.pretrained.Preset.kind`:
            `"bilm-tf"` (options.json + hdf5 weights),
            `"elmo_for_many_langs"`, `"run"` (a training run directory) or
            `"keras"` (a `.keras` file).
        summary: str. What the kind accepts, in words, for the "nothing
            matches" error.

    Methods a kind implements:
        matches(source): classmethod. Whether the str `source` (a path, or
            what the user typed) is of this kind, by its format's one rule.
        _read(): the `BiLMData` of the source (called once, by `read`).
        inputs(): every file the source reads, and every folder it reads
            whole or looks into, as real paths (for output checks: no
            command writes over, or into, one of them).

    Instance attribute: `description`, the source in words for messages.
    """

    kind = None
    summary = None

    def __init__(self, description):
        self.description = description
        self._data = None

    @classmethod
    def matches(cls, source):
        raise NotImplementedError

    def _read(self):
        raise NotImplementedError

    def inputs(self):
        raise NotImplementedError

    def read(self):
        """The source's `BiLMData` (the biLM, softmax, vocabulary); read
        once, then kept."""
        if self._data is None:
            self._data = self._read()
        return self._data

    def load_bilm(self, vocabulary=None, **kwargs):
        """A `BiLM` of the source built with extra `BiLM` arguments
        (`stateful=True`, `dtype`, ...); `vocabulary` is checked against a
        word-input biLM's table."""
        bilm = with_arguments(self.read().bilm, kwargs)
        if vocabulary is not None:
            from keras_elmo.layers.token_encoders.word_encoder import (
                check_bilm_vocabulary,
            )

            check_bilm_vocabulary(bilm.encoder, vocabulary, self.description)
        return bilm

    def bilm_size(self):
        """The biLM's size, as the `BiLM` arguments a run is built with
        (`keras_elmo.training.sizes.size_of`)."""
        from keras_elmo.training.sizes import size_of

        return size_of(self.read().bilm.get_config())


def real_files(*paths):
    """The real paths of the files among `paths`, and of the folders among
    them with every file in them (walked whole), each once; paths that do
    not exist are left out. (A folder counts too: no output may go into
    one a source reads.)"""
    found = []
    for path in paths:
        if path is None:
            continue
        if os.path.isdir(path):
            for directory, _, names in sorted(os.walk(path)):
                found.append(directory)
                found += [os.path.join(directory, n) for n in sorted(names)]
        elif os.path.lexists(path):
            found.append(path)
    return list(dict.fromkeys(os.path.realpath(path) for path in found))


def with_arguments(bilm, kwargs):
    """`bilm`, or a copy built with other `BiLM` arguments and its
    weights."""
    if not kwargs:
        return bilm
    from keras_elmo.layers.bilm import BiLM

    try:
        copy = BiLM.from_config({**bilm.get_config(), **kwargs})
    except KerasElmoError:
        raise  # it names the argument
    except (TypeError, ValueError) as error:
        raise KerasElmoError(f"Invalid BiLM arguments {kwargs}: {error}")
    copy.build()
    values = {_below(w.path, bilm.name): w for w in bilm.weights}
    for weight in copy.weights:
        value = values.get(_below(weight.path, copy.name))
        if value is not None and tuple(value.shape) == tuple(weight.shape):
            weight.assign(value.numpy())
    return copy


def _below(path, name):
    """A weight path below the layer `name` (`.../bi_lm/char_cnn/...` ->
    `char_cnn/...`), so that copies of a layer match."""
    return path.split(f"{name}/", 1)[-1]

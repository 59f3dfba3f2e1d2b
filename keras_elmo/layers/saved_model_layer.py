"""An exported ELMo SavedModel as a Keras 3 layer that trains its mix (on
the TensorFlow backend: a SavedModel is TensorFlow's; TensorFlow is
imported when one is loaded)."""

import keras

from elmo_core.errors import KerasElmoError
from elmo_core.errors import check_flag
from elmo_core.errors.backends import require_tensorflow
from elmo_core.files.paths import check_input_directory


def _variable_name(variable):
    """A name Keras optimizers accept: `elmo_scalar_mix/gamma:0` ->
    `elmo_scalar_mix_gamma` (a ':' in it breaks their slot names)."""
    return variable.name.split(":")[0].replace("/", "_")


@keras.saving.register_keras_serializable(package="keras_elmo")
def load_savedmodel(directory, argument):
    """The SavedModel in `directory`, or `KerasElmoError` naming
    `argument` for a folder that holds none (or a damaged one)."""
    # Before TensorFlow's import: another backend may not have it at all.
    require_tensorflow(
        "A SavedModel layer (keras_elmo.export.keras_layer)",
        keras.backend.backend(),
    )
    import tensorflow as tf

    try:
        return tf.saved_model.load(directory)
    except (OSError, ValueError, tf.errors.OpError) as error:
        raise KerasElmoError(
            f"{directory} holds no SavedModel that loads "
            f"({str(error).strip()[:200]}); expected a directory written "
            "by keras_elmo.export.export_savedmodel.",
            argument,
        ) from None


@keras.saving.register_keras_serializable(package="keras_elmo")
class SavedModelLayer(keras.layers.Layer):
    """A SavedModel of `keras_elmo.export.export_savedmodel` as a layer.

    `keras.layers.TFSMLayer(path, trainable=True)` trains the mix with SGD
    only: Keras 3 names each optimizer slot after the variable's TensorFlow
    name, whose ':0' is not a valid scope name, so Adam, Adagrad and the
    rest fail at `fit`. This layer wraps the same TensorFlow variables under
    names without it, so every optimizer works; the biLM stays frozen.

    Args:
        directory: str. The SavedModel directory.
        trainable: bool. Whether the scalar-mix weights and `gamma` train.
            Defaults to `True`.

    Call arguments:
        inputs: tf.string `[batch]` sentences, or a dict of `tokens`
            (tf.string `[batch, max_len]`) and `sequence_len` (int32 or
            int64 `[batch]`).

    Returns:
        The SavedModel's output dict (`elmo`, `default`, `word_emb`,
        `lstm_outputs1` ..., `sequence_len`).

    Example (`savedmodel_folder` is a biLM exported by `keras-elmo
    export-savedmodel`; here the test fixture biLM):

    >>> sentences = keras.Input(shape=(), dtype="string")
    >>> layer = keras_elmo.export.SavedModelLayer(savedmodel_folder)
    >>> elmo = layer(sentences)["default"]
    >>> model = keras.Model(sentences, keras.layers.Dense(2)(elmo))
    >>> model(tf.constant(["Hello world", "Hi"])).shape
    TensorShape([2, 2])
    """

    def __init__(self, directory, trainable=True, **kwargs):
        trainable = check_flag(trainable, "trainable")
        directory = check_input_directory(
            directory,
            "`directory`",
            "a SavedModel directory written by export_savedmodel",
            argument="directory",
        )
        super().__init__(trainable=trainable, **kwargs)
        self.directory = directory
        self.module = load_savedmodel(directory, "directory")
        trainable_ids = {id(v) for v in self.module.trainable_variables}
        self.mix = [
            keras.Variable(v, trainable=True, name=_variable_name(v))
            for v in self.module.trainable_variables
        ]
        self.frozen = [
            keras.Variable(v, trainable=False, name=_variable_name(v))
            for v in self.module.variables
            if id(v) not in trainable_ids
        ]

    def call(self, inputs, training=False):
        return self.module(inputs, training=bool(training))

    def get_config(self):
        config = super().get_config()
        config.update(directory=self.directory)
        return config

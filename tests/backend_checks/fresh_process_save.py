"""Saves, on the backend of `KERAS_BACKEND`, a `.keras` file of every
public layer of keras_elmo (and on TensorFlow of its model, optimizers and
SavedModel layer), with the inputs and the outputs it gave, for
`tests/test_fresh_process_load.py` to load in fresh processes.

Usage: python fresh_process_save.py MODEL_DIR SAVED_MODEL_DIR OUT_DIR
(SAVED_MODEL_DIR: "" off TensorFlow).
"""

import json
import os
import sys

import keras
import numpy as np

import keras_elmo
from keras_elmo.layers import BiLM
from keras_elmo.layers import CharCNN
from keras_elmo.layers import ELMoEmbedding
from keras_elmo.layers import Highway
from keras_elmo.layers import ProjectedLSTM
from keras_elmo.layers import ScalarMix
from tests.backend_checks.held_classes import held_classes
from tests.helpers import tiny_bilm_kwargs

SENTENCES = [["The", "cat", "sat", "."], ["Hi", "!"], ["ünïcode"]]


def layers_model(model_dir):
    """Every public layer in one functional model over character ids."""
    bilm = keras_elmo.load_bilm(model_dir)
    ids = keras.Input(shape=(None, 50), dtype="int32")
    layer_outputs = bilm(ids)["layer_outputs"]
    mixed = ScalarMix(initial_scalar_weights=[0.1, 0.5, -0.3])(layer_outputs)
    embedded = ELMoEmbedding(bilm, dropout=0.0, do_layer_norm=True)(ids)
    chars = CharCNN(filters=[[1, 4], [2, 8]], char_embedding_dim=4)(ids)
    highway = Highway()(chars)
    lstm = ProjectedLSTM(units=8, projection_dim=4, cell_clip=3.0)(highway)
    outputs = [mixed, embedded, chars, highway, lstm]
    return keras.Model(ids, outputs), keras_elmo.batch_to_ids(SENTENCES)


def language_model():
    """`ELMoLanguageModel` compiled with the package's optimizers and
    learning-rate schedule (TensorFlow only), built, with its inputs."""
    from keras_elmo.models import ELMoLanguageModel
    from keras_elmo.optimizers import SparseAdagrad
    from keras_elmo.optimizers.loss_scale_optimizer import LossScaleOptimizer
    from keras_elmo.optimizers.warmup_decay import WarmupDecay

    bilm = BiLM(**tiny_bilm_kwargs())
    model = ELMoLanguageModel(bilm, vocabulary_size=12, num_sampled=12)
    schedule = WarmupDecay(0.2, warmup_steps=2, total_steps=10)
    model.compile(optimizer=LossScaleOptimizer(SparseAdagrad(schedule)))
    inputs = {"character_ids": keras_elmo.batch_to_ids(SENTENCES)}
    model(inputs)
    model.optimizer.build(model.trainable_variables)
    return model, inputs


def distilled_model():
    """`DistilledLanguageModel` (a student and its layer maps; the teacher
    is never saved), compiled and built, with its inputs."""
    from keras_elmo.models import DistilledLanguageModel
    from keras_elmo.optimizers import SparseAdam

    student = BiLM(**tiny_bilm_kwargs())
    model = DistilledLanguageModel(
        student, vocabulary_size=12, teacher_layers=3, teacher_width=32
    )
    model.compile(optimizer=SparseAdam(0.01))
    inputs = {"character_ids": keras_elmo.batch_to_ids(SENTENCES)}
    model(inputs)
    model.optimizer.build(model.trainable_variables)
    return model, inputs


def save(model, inputs, folder, name):
    """Saves `model` as NAME.keras and its inputs and outputs as NAME.npz;
    returns the names of the classes it holds."""
    model.save(os.path.join(folder, f"{name}.keras"))
    outputs = keras.tree.flatten(model(inputs))
    arrays = {
        f"out{i}": keras.ops.convert_to_numpy(x) for i, x in enumerate(outputs)
    }
    inputs = np.asarray(keras.tree.flatten(inputs)[0])
    arrays["inputs"] = (
        inputs.astype(bytes) if inputs.dtype == object else inputs
    )
    np.savez(os.path.join(folder, f"{name}.npz"), **arrays)
    return held_classes(model)


def main(model_dir, saved_model_dir, folder):
    model, ids = layers_model(model_dir)
    names = save(model, ids, folder, "layers")
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        from keras_elmo.export import SavedModelLayer
        from keras_elmo.optimizers import SparseAdam

        sentences = keras.Input(shape=(), dtype="string")
        vector = SavedModelLayer(saved_model_dir)(sentences)["default"]
        hub = keras.Model(sentences, keras.layers.Dense(2)(vector))
        hub.compile(optimizer=SparseAdam(0.01), loss="mse")
        hub.optimizer.build(hub.trainable_variables)
        names += save(hub, tf.constant(["the cat sat", "hi"]), folder, "hub")
        names += save(*language_model(), folder, "language_model")
        names += save(*distilled_model(), folder, "distilled_model")
    with open(os.path.join(folder, "classes.json"), "w") as f:
        json.dump(sorted(set(names)), f)


if __name__ == "__main__":
    main(*sys.argv[1:4])
